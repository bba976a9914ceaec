//! Mistral's `[TOOL_CALLS]`: v0.3 follows it with a JSON list of calls; the v11 tokenizer with
//! `NAME[ARGS]{…}` (a `[CALL_ID]…` may come between), later ones with `NAME{…}`. Several calls
//! repeat the marker, or follow one another after it. Words between the marker and a list on
//! the same line are passed over.

use super::json_calls::{Reading, clean_name, json_calls};
use super::scan::{Cur, Marker, Step, Stop, is_name_start, literal};
use super::tools::{Args, Call};
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

const MARKER: &str = "[TOOL_CALLS]";
const ARGS: &str = "[ARGS]";
const CALL_ID: &str = "[CALL_ID]";

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    literal(text, MARKER)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    cur.lit(MARKER)?;
    let mut calls = Vec::new();
    loop {
        cur.ws();
        match cur.peek() {
            None => return Err(cur.out()),
            Some('[' | '{') => calls.extend(json_calls(&mut cur, ctx.tools, Reading::Lenient)?),
            Some(c) if is_name_start(c) => {
                let start = cur.pos;
                match named(&mut cur) {
                    Ok(call) => calls.push(call),
                    Err(Stop::More) => return Err(Stop::More),
                    // A word that is no name: the list may follow on the same line.
                    Err(Stop::Bad) => {
                        cur.pos = start;
                        let rest = cur.rest();
                        let line = rest.find('\n').unwrap_or(rest.len());
                        let at = rest[..line].find(['[', '{']).ok_or(Stop::Bad)?;
                        cur.bump(at);
                        calls.extend(json_calls(&mut cur, ctx.tools, Reading::Lenient)?);
                    }
                }
            }
            Some(_) => return Err(Stop::Bad),
        }
        let after = cur.pos;
        cur.ws();
        if cur.eat(MARKER)? {
            continue;
        }
        // `a[ARGS]{…}b[ARGS]{…}`: the next name without the marker.
        let rest = cur.rest();
        let next_named = rest.chars().next().is_some_and(is_name_start)
            && rest
                .find(|c: char| !super::scan::is_name_char(c))
                .is_some_and(|at| rest[at..].starts_with(ARGS) || rest[at..].starts_with(CALL_ID));
        if !next_named {
            cur.pos = after;
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, Format::Mistral))
}

/// `NAME[ARGS]{…}`, `NAME[CALL_ID]id[ARGS]{…}` or `NAME{…}`.
fn named(cur: &mut Cur) -> Step<Call> {
    let rest = cur.rest();
    // The name ends at `[` or `{` (names may hold `-` and `.`).
    let len = rest
        .find(|c: char| !super::scan::is_name_char(c))
        .ok_or_else(|| cur.out())?;
    let name = clean_name(&rest[..len]).ok_or(Stop::Bad)?.to_string();
    cur.bump(len);
    if cur.eat(CALL_ID)? {
        cur.until(ARGS)?;
    } else {
        cur.eat(ARGS)?;
    }
    cur.ws();
    if cur.peek().is_some_and(|c| c != '{') {
        return Err(Stop::Bad);
    }
    let args = match value(cur, &[])? {
        serde_json::Value::Object(map) => Args::Object(map),
        _ => return Err(Stop::Bad),
    };
    Ok(Call { name, args })
}
