//! Command-R: `Action: ```json [{"tool_name": …, "parameters": {…}}] ```` at the start of a
//! line (Command-R+), and `<|START_ACTION|>[…]<|END_ACTION|>` (Command R7B). Its
//! `directly_answer` is no call: the model means to answer in text. The same `Action:` starts
//! the ReAct form many small models learnt (`Action: NAME` then `Action Input: {…}` on the next
//! line), read for an offered tool's name only.

use super::json_calls::{Reading, json_calls, sole_argument};
use super::scan::{Cur, Marker, Step, Stop, literal};
use super::tools::{Args, Call};
use super::value::value;
use super::{Ctx, Format, Open, Parsed, bare};

const ACTION: &str = "Action:";
const START: &str = "<|START_ACTION|>";
const END: &str = "<|END_ACTION|>";
const INPUT: &str = "Action Input:";

pub(crate) fn open(text: &str, open: &Open) -> Marker {
    if text.starts_with('<') {
        return literal(text, START);
    }
    if !(open.line_start || open.writes(Format::CommandR)) {
        return Marker::No;
    }
    match literal(text, ACTION) {
        Marker::Full(n) => {
            let rest = &text[n..];
            let blank = rest.len() - rest.trim_start_matches([' ', '\t']).len();
            if blank > 4 {
                return Marker::No;
            }
            let after = &rest[blank..];
            match (
                literal(after, "```"),
                bare::named_open(after, open.tools, "\n"),
            ) {
                (Marker::Full(f), _) | (_, Marker::Full(f)) => Marker::Full(n + blank + f),
                (Marker::Partial, _) | (_, Marker::Partial) => Marker::Partial,
                (Marker::No, Marker::No) if after.is_empty() => Marker::Partial,
                (Marker::No, Marker::No) => Marker::No,
            }
        }
        other => other,
    }
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let tagged = match cur.eat_any(&[START, ACTION])? {
        Some(0) => true,
        Some(_) => false,
        None => return Err(Stop::Bad),
    };
    cur.ws();
    if !tagged && !cur.rest().starts_with('`') {
        return react(&mut cur, ctx);
    }
    let calls = json_calls(&mut cur, ctx.tools, Reading::Lenient)?;
    if tagged {
        cur.ws();
        cur.eat(END)?;
    }
    let calls: Vec<_> = calls
        .into_iter()
        .filter(|c| !matches!(c.name.as_str(), "directly_answer" | "directly-answer"))
        .collect();
    if calls.is_empty() {
        return Err(Stop::Bad);
    }
    Ok(Parsed::calls(calls, cur.pos, Format::CommandR))
}

/// `NAME` then, on the next line, `Action Input:` and the arguments (an object, or one value
/// for the tool's only parameter).
fn react(cur: &mut Cur, ctx: &Ctx) -> Step<Parsed> {
    let name = cur.name()?.to_string();
    if ctx.tools.offered(&name).is_none() {
        return Err(Stop::Bad);
    }
    cur.ws();
    cur.lit(INPUT)?;
    let args = match value(cur, &[])? {
        serde_json::Value::Object(map) => Args::Object(map),
        other => {
            let tool = ctx.tools.offered(&name).unwrap_or(&name).to_string();
            sole_argument(ctx.tools, &tool, other)
        }
    };
    Ok(Parsed::calls(
        vec![Call { name, args }],
        cur.pos,
        Format::React,
    ))
}
