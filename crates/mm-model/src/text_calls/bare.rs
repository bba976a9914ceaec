//! Calls without a marker of their own: a JSON object `{"name": …, "arguments": …}` (Llama 3.x
//! writes `parameters`), a JSON list of them (xLAM), a pythonic list `[bash(command="ls")]`
//! (Llama 3.2), JSON in a code fence (```` ```json ````) and a Python call in Gemma 3's
//! ```` ```tool_code ```` (`print(default_api.NAME(…))` as Gemini writes it; an ordinary
//! ```` ```python ```` fence is code, not a call). Text any model might write for another
//! reason, so read strictly (docs/engine.md): at the start of a line (anywhere for a family
//! that writes the format), naming an offered tool with object or keyword arguments, and
//! nothing but more calls after it to the end of the answer (pythonic lists may be joined by
//! `and`, `then` or a comma). Only the first key is needed to hold the text back, and a name
//! that is not offered releases it at once.

use super::json_calls::{Reading, calls_of, clean_name};
use super::pythonic;
use super::scan::{Cur, Marker, Step, Stop, is_name_char, is_name_start, literal};
use super::tools::{Call, Tools};
use super::value::{string, value};
use super::{Ctx, Format, Open, Parsed};

/// The keys a call object may start with.
const CALL_KEYS: &[&str] = &[
    "name",
    "tool",
    "tool_name",
    "function",
    "function_name",
    "type",
    "tool_calls",
    "tool_call",
    "function_call",
    "action",
    "arguments",
    "parameters",
];
/// Keys whose string value is the tool's name.
const NAME_KEYS: &[&str] = &[
    "name",
    "tool",
    "tool_name",
    "function",
    "function_name",
    "action",
];
const FENCE: &str = "```";
const FENCE_JSON: &[&str] = &["", "json", "json5", "tool_call", "tool_calls", "tool"];
const FENCE_PYTHON: &[&str] = &["tool_code"];
/// What may join two pythonic lists: `[f(a=1)] and [g(b=2)]`.
const JOINS: &[&str] = &["and then", "and", "then", "&", ",", ";"];
/// Blank space an opener may hold before its first key (a newline and indentation).
pub(crate) const MAX_GAP: usize = 12;
/// A longer name opens nothing (and so holds nothing back).
pub(crate) const MAX_NAME: usize = 64;
/// `[`, blank space, `{`, blank space, `"function_name"`.
pub(crate) const LONGEST_JSON_OPENER: usize = 1 + MAX_GAP + 1 + MAX_GAP + 15;

fn allowed(open: &Open, format: Format) -> bool {
    open.line_start || open.writes(format)
}

pub(crate) fn open(text: &str, open: &Open) -> Marker {
    match text.as_bytes().first() {
        Some(b'{') if allowed(open, Format::BareJson) => json_open(text),
        Some(b'[') => {
            let json = if allowed(open, Format::Xlam) {
                json_open(text)
            } else {
                Marker::No
            };
            let python = if allowed(open, Format::Pythonic) {
                list_open(text, open.tools)
            } else {
                Marker::No
            };
            match (json, python) {
                (Marker::Full(n), _) | (_, Marker::Full(n)) => Marker::Full(n),
                (Marker::Partial, _) | (_, Marker::Partial) => Marker::Partial,
                (Marker::No, Marker::No) => Marker::No,
            }
        }
        Some(b'`') if open.line_start => fence_open(text),
        Some(_) if open.line_start && open.writes(Format::Pythonic) && open.tools.is_listed() => {
            named_open(text, open.tools, "(")
        }
        _ => Marker::No,
    }
}

/// Blank space at `at`, at most [`MAX_GAP`] bytes: where it ends, or `None` when too long.
fn gap(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at..];
    let blank = rest.len() - rest.trim_start().len();
    (blank <= MAX_GAP).then_some(at + blank)
}

/// `{` (or `[{`) then a quoted key of a call.
fn json_open(text: &str) -> Marker {
    let mut at = 1;
    if text.starts_with('[') {
        let Some(next) = gap(text, at) else {
            return Marker::No;
        };
        match text[next..].chars().next() {
            None => return Marker::Partial,
            Some('{') => at = next + 1,
            Some(_) => return Marker::No,
        }
    }
    let Some(at) = gap(text, at) else {
        return Marker::No;
    };
    let rest = &text[at..];
    let Some(quote) = rest.chars().next() else {
        return Marker::Partial;
    };
    if quote != '"' && quote != '\'' {
        return Marker::No;
    }
    let key_text = &rest[1..];
    match key_text.find(quote) {
        Some(end) if CALL_KEYS.contains(&&key_text[..end]) => Marker::Full(at + end + 2),
        Some(_) => Marker::No,
        None if CALL_KEYS.iter().any(|k| k.starts_with(key_text)) => Marker::Partial,
        None => Marker::No,
    }
}

/// `NAME` then `after`, NAME an offered tool when names are known.
pub(crate) fn named_open(text: &str, tools: &Tools, after: &str) -> Marker {
    let len = text.find(|c: char| !is_name_char(c)).unwrap_or(text.len());
    let name = &text[..len];
    if len > MAX_NAME || !name.chars().next().is_some_and(is_name_start) {
        return Marker::No;
    }
    let known = |partial: bool| {
        !tools.is_listed()
            || tools.listed_names().any(|n| {
                if partial {
                    n.starts_with(name)
                } else {
                    n == name
                }
            })
    };
    if len == text.len() {
        return if known(true) {
            Marker::Partial
        } else {
            Marker::No
        };
    }
    let name = name.strip_suffix(".call").unwrap_or(name);
    if tools.offered(name).is_none() && tools.is_listed() {
        return Marker::No;
    }
    match literal(&text[len..], after) {
        Marker::Full(n) => Marker::Full(len + n),
        other => other,
    }
}

/// `[NAME(`.
fn list_open(text: &str, tools: &Tools) -> Marker {
    let Some(at) = gap(text, 1) else {
        return Marker::No;
    };
    if at == text.len() {
        return Marker::Partial;
    }
    match named_open(&text[at..], tools, "(") {
        Marker::Full(n) => Marker::Full(at + n),
        other => other,
    }
}

/// A fence at the start of a line whose language and first character fit a call.
fn fence_open(text: &str) -> Marker {
    let rest = match literal(text, FENCE) {
        Marker::Full(n) => &text[n..],
        other => return other,
    };
    let lang_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let lang = rest[..lang_len].to_ascii_lowercase();
    if lang_len == rest.len() {
        let fits = FENCE_JSON
            .iter()
            .chain(FENCE_PYTHON)
            .any(|l| l.starts_with(&lang));
        return if fits { Marker::Partial } else { Marker::No };
    }
    let python = FENCE_PYTHON.contains(&lang.as_str());
    if !python && !FENCE_JSON.contains(&lang.as_str()) {
        return Marker::No;
    }
    let Some(at) = gap(text, FENCE.len() + lang_len) else {
        return Marker::No;
    };
    match text[at..].chars().next() {
        None => Marker::Partial,
        Some('{' | '[') => Marker::Full(at + 1),
        Some(c) if python && is_name_start(c) => Marker::Full(at + 1),
        Some(_) => Marker::No,
    }
}

/// Whether the first key says this is not a call: a name that is not offered, a `type` that
/// is not a function's. Undecided (the head is not there yet) is not a refusal.
fn head_refuses(text: &str, tools: &Tools) -> bool {
    let mut cur = Cur::new(text, false);
    let head = (|| -> Step<bool> {
        if cur.eat("[")? {
            cur.ws();
        }
        cur.lit("{")?;
        cur.ws();
        let key = string(&mut cur)?;
        cur.ws();
        cur.lit(":")?;
        cur.ws();
        if !matches!(cur.peek(), Some('"' | '\'')) {
            return Ok(false);
        }
        let value = string(&mut cur)?;
        if NAME_KEYS.contains(&key.as_str()) {
            let name = clean_name(&value);
            return Ok(tools.is_listed() && name.and_then(|n| tools.offered(n)).is_none());
        }
        Ok(key == "type" && !matches!(value.as_str(), "function" | "tool_call" | "tool_use"))
    })();
    head.unwrap_or(false)
}

fn json(cur: &mut Cur, tools: &Tools) -> Step<Vec<Call>> {
    if head_refuses(cur.rest(), tools) {
        return Err(Stop::Bad);
    }
    let v = value(cur, &[])?;
    calls_of(&v, tools, Reading::Strict).ok_or(Stop::Bad)
}

fn pythonic_shaped(rest: &str) -> bool {
    rest.strip_prefix('[')
        .map(str::trim_start)
        .and_then(|r| r.chars().next())
        .is_some_and(is_name_start)
}

fn fenced(cur: &mut Cur, tools: &Tools) -> Step<Vec<Call>> {
    cur.lit(FENCE)?;
    let rest = cur.rest();
    let lang_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .ok_or_else(|| cur.out())?;
    let python = FENCE_PYTHON.contains(&rest[..lang_len].to_ascii_lowercase().as_str());
    cur.bump(lang_len);
    cur.ws();
    let calls = if !python {
        json(cur, tools)?
    } else if pythonic_shaped(cur.rest()) {
        pythonic::list(cur, tools, Reading::Strict)?
    } else {
        // Gemma 3's examples wrap the call in `print(…)`.
        let printed = cur.rest().starts_with("print(");
        if printed {
            cur.bump("print(".len());
        }
        let call = pythonic::call(cur, tools, Reading::Strict)?;
        if printed {
            cur.ws();
            cur.lit(")")?;
        }
        vec![call]
    };
    cur.ws();
    if !cur.eat(FENCE)? && !cur.is_empty() {
        return Err(Stop::Bad);
    }
    Ok(calls)
}

/// One call, list or fence at the cursor.
fn one(cur: &mut Cur, tools: &Tools) -> Step<(Vec<Call>, Format)> {
    match cur.peek() {
        None => Err(cur.out()),
        Some('`') => fenced(cur, tools).map(|c| (c, Format::Fenced)),
        Some('{') => json(cur, tools).map(|c| (c, Format::BareJson)),
        Some('[') if pythonic_shaped(cur.rest()) => {
            pythonic::list(cur, tools, Reading::Strict).map(|c| (c, Format::Pythonic))
        }
        Some('[') => json(cur, tools).map(|c| (c, Format::Xlam)),
        Some(c) if is_name_start(c) => {
            pythonic::call(cur, tools, Reading::Strict).map(|c| (vec![c], Format::Pythonic))
        }
        Some(_) => Err(Stop::Bad),
    }
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    let mut format = None;
    loop {
        cur.ws();
        let (found, kind) = one(&mut cur, ctx.tools)?;
        format.get_or_insert(kind);
        calls.extend(found);
        cur.ws_and_ends();
        if matches!(kind, Format::BareJson | Format::Xlam) {
            // One closing bracket too many after the last call.
            let rest = cur.rest();
            if rest.starts_with([']', '}']) && rest[1..].trim().is_empty() {
                cur.bump(1);
            }
        }
        if cur.answer_ends()? {
            break;
        }
        if kind == Format::Pythonic && joined_list(&mut cur)? {
            continue;
        }
        if cur.eat_any(&[",", ";"])?.is_some() {
            continue;
        }
        // Only more calls may follow: text after it makes it an example.
        match cur.peek() {
            Some('{' | '[' | '`') => {}
            _ => return Err(Stop::Bad),
        }
    }
    Ok(Parsed::calls(
        calls,
        cur.pos,
        format.unwrap_or(Format::BareJson),
    ))
}

/// A word joining two pythonic lists on a line, then the next list's `[`: the cursor stands on
/// it. Otherwise the cursor does not move.
fn joined_list(cur: &mut Cur) -> Step<bool> {
    let rest = cur.rest();
    if !cur.end
        && JOINS
            .iter()
            .any(|j| j.len() > rest.len() && j.starts_with(rest))
    {
        return Err(Stop::More);
    }
    for join in JOINS {
        let Some(after) = rest.strip_prefix(join) else {
            continue;
        };
        let blank = after.len() - after.trim_start_matches([' ', '\t']).len();
        let next = &after[blank..];
        if next.is_empty() && !cur.end {
            return Err(Stop::More);
        }
        let word = join.chars().all(char::is_alphabetic);
        if next.starts_with('[') && (!word || blank > 0) {
            cur.bump(rest.len() - next.len());
            return Ok(true);
        }
    }
    Ok(false)
}
