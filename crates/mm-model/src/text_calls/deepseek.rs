//! DeepSeek R1 and V3: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`,
//! a newline and the arguments in a ```` ```json ```` fence, `<｜tool▁call▁end｜>`, …,
//! `<｜tool▁calls▁end｜>`; V3.1 writes `NAME<｜tool▁sep｜>{…}` instead. The tokens are spelled
//! with full-width bars and `▁`; distilled models drift to `|`, `_` or spaces, and may leave out
//! the outer pair.

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop};
use super::tools::{Args, Call};
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

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
    loop {
        cur.ws();
        if !eat(&mut cur, CALL_BEGIN)? {
            if calls.is_empty() {
                return Err(if cur.is_empty() { cur.out() } else { Stop::Bad });
            }
            break;
        }
        cur.ws();
        let head = until(&mut cur, SEP)?.trim();
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
        let args = match value(&mut cur, &[])? {
            serde_json::Value::Object(map) => Args::Object(map),
            other => Args::Raw(other.to_string()),
        };
        cur.ws();
        if fenced {
            cur.eat("```")?;
            cur.ws();
        }
        eat(&mut cur, CALL_END)?;
        calls.push(Call { name, args });
    }
    eat(&mut cur, CALLS_END)?;
    Ok(Parsed::calls(calls, cur.pos, Format::DeepSeek))
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
