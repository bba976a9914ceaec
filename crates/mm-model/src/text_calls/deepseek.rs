//! DeepSeek R1 and V3: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`,
//! a newline and the arguments in a ```` ```json ```` fence, `<｜tool▁call▁end｜>`, …,
//! `<｜tool▁calls▁end｜>`; V3.1 writes `NAME<｜tool▁sep｜>{…}` instead. The tokens are spelled
//! with full-width bars and `▁`; distilled models drift to `|`, `_` or spaces, and may leave out
//! the outer pair. Step3 writes the same tokens (with `_`) around
//! `<steptml:invoke name=…><steptml:parameter name=…>…</steptml:parameter></steptml:invoke>`,
//! and may put `<｜tool_sep｜>` between calls.

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop};
use super::tools::{Args, Call};
use super::value::value;
use super::{Ctx, Format, Open, Parsed, minimax};

/// Step3's invoke, with its tag prefix.
const STEP_INVOKE: &str = "<steptml:invoke";
const STEP_PREFIX: &str = "steptml:";

const CALLS_BEGIN: &[&str] = &["tool", "calls", "begin"];
const CALLS_END: &[&str] = &["tool", "calls", "end"];
const CALL_BEGIN: &[&str] = &["tool", "call", "begin"];
const CALL_END: &[&str] = &["tool", "call", "end"];
const SEP: &[&str] = &["tool", "sep"];

const BARS: &[&str] = &["｜", "|"];
const SEPARATORS: &[&str] = &["▁", "_", " ", "\\_"];

/// One step of a token: the first alternative that `text` has at `at` (moving past it), else
/// whether the text is cut inside one (`Partial`) or has something else (`No`).
fn step(text: &str, at: &mut usize, alternatives: &[&str]) -> Option<Marker> {
    let rest = &text[*at..];
    if rest.is_empty() {
        return Some(Marker::Partial);
    }
    let mut partial = false;
    for alt in alternatives {
        if rest.starts_with(alt) {
            *at += alt.len();
            return None;
        }
        partial |= alt.starts_with(rest);
    }
    Some(if partial { Marker::Partial } else { Marker::No })
}

/// `text` against one DeepSeek token (`<`, a bar, the words joined by a separator, a bar, `>`).
fn token(text: &str, words: &[&str]) -> Marker {
    let mut at = 0;
    for alternatives in [&["<"][..], BARS] {
        if let Some(m) = step(text, &mut at, alternatives) {
            return m;
        }
    }
    for (i, word) in words.iter().enumerate() {
        if i > 0
            && let Some(m) = step(text, &mut at, SEPARATORS)
        {
            return m;
        }
        if let Some(m) = step(text, &mut at, std::slice::from_ref(word)) {
            return m;
        }
    }
    for alternatives in [BARS, &[">"][..]] {
        if let Some(m) = step(text, &mut at, alternatives) {
            return m;
        }
    }
    Marker::Full(at)
}

fn eat(cur: &mut Cur, words: &[&str]) -> Step<bool> {
    match token(cur.rest(), words) {
        Marker::Full(n) => {
            cur.bump(n);
            Ok(true)
        }
        Marker::Partial if !cur.end => Err(Stop::More),
        Marker::Partial | Marker::No => Ok(false),
    }
}

/// The text up to a token, which is taken too.
fn until<'a>(cur: &mut Cur<'a>, words: &[&str]) -> Step<&'a str> {
    let rest = cur.rest();
    for (at, _) in rest.match_indices('<') {
        match token(&rest[at..], words) {
            Marker::Full(n) => {
                cur.bump(at + n);
                return Ok(&rest[..at]);
            }
            Marker::Partial | Marker::No => {}
        }
    }
    Err(cur.out())
}

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    match (token(text, CALLS_BEGIN), token(text, CALL_BEGIN)) {
        (Marker::Full(n), _) | (_, Marker::Full(n)) => Marker::Full(n),
        (Marker::Partial, _) | (_, Marker::Partial) => Marker::Partial,
        (Marker::No, Marker::No) => Marker::No,
    }
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    eat(&mut cur, CALLS_BEGIN)?;
    let mut calls = Vec::new();
    let mut format = Format::DeepSeek;
    loop {
        cur.ws();
        if !eat(&mut cur, CALL_BEGIN)? {
            if calls.is_empty() {
                return Err(if cur.is_empty() { cur.out() } else { Stop::Bad });
            }
            break;
        }
        cur.ws();
        if let Some(step) = step_call(&mut cur, ctx)? {
            format = Format::Step3;
            calls.extend(step);
        } else {
            calls.push(call(&mut cur)?);
        }
        // Step3 separates calls with the separator token.
        let before_sep = cur.pos;
        cur.ws();
        if !eat(&mut cur, SEP)? {
            cur.pos = before_sep;
        }
    }
    eat(&mut cur, CALLS_END)?;
    Ok(Parsed::calls(calls, cur.pos, format))
}

/// Step3's call at the cursor (after the call's begin token): the invokes, optionally after a
/// `function<｜tool_sep｜>NAME` header; `None` when the body is DeepSeek's.
fn step_call(cur: &mut Cur, ctx: &Ctx) -> Step<Option<Vec<Call>>> {
    let start = cur.pos;
    let rest = cur.rest();
    let header = rest.find('<').map_or(rest, |at| &rest[..at]);
    if header.trim() == "function" {
        // `function<｜tool_sep｜>NAME` then a newline: Step3 when an invoke follows.
        until(cur, SEP)?;
        match cur.rest().find(['\n', '<', '`', '{']) {
            Some(name) => cur.bump(name),
            None if cur.end => {
                cur.pos = start;
                return Ok(None);
            }
            None => return Err(Stop::More),
        }
        cur.ws();
    }
    let rest = cur.rest();
    if !rest.starts_with(STEP_INVOKE) {
        if !cur.end && STEP_INVOKE.starts_with(rest) {
            return Err(Stop::More);
        }
        cur.pos = start;
        return Ok(None);
    }
    let calls = minimax::invokes(cur, ctx, STEP_PREFIX, false)?;
    cur.ws();
    eat(cur, CALL_END)?;
    Ok(Some(calls))
}

/// DeepSeek's call at the cursor (after the call's begin token).
fn call(cur: &mut Cur) -> Step<Call> {
    let head = until(cur, SEP)?.trim();
    let name = if head == "function" {
        // R1/V3: the name is the rest of the line.
        let rest = cur.rest();
        let line = rest.find(['\n', '`', '{']).ok_or_else(|| cur.out())?;
        cur.bump(line);
        rest[..line].trim()
    } else {
        head
    };
    let name = clean_name(name).ok_or(Stop::Bad)?.to_string();
    cur.ws();
    let fenced = cur.eat("```")?;
    if fenced {
        let rest = cur.rest();
        let lang = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .ok_or_else(|| cur.out())?;
        cur.bump(lang);
    }
    let args = Args::of(value(cur, &[])?);
    cur.ws();
    if fenced {
        cur.eat("```")?;
        cur.ws();
    }
    eat(cur, CALL_END)?;
    Ok(Call { name, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokens_are_read_in_their_drifted_spellings() {
        for spelled in [
            "<｜tool▁calls▁begin｜>",
            "<|tool_calls_begin|>",
            "<｜tool calls begin｜>",
            "<｜tool\\_calls\\_begin｜>",
        ] {
            assert_eq!(
                token(spelled, CALLS_BEGIN),
                Marker::Full(spelled.len()),
                "{spelled}"
            );
        }
        assert_eq!(token("<｜tool▁ca", CALLS_BEGIN), Marker::Partial);
        assert_eq!(token("<｜tool▁cat", CALLS_BEGIN), Marker::No);
    }
}
