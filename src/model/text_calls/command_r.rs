//! Command-R: `Action: ```json [{"tool_name": …, "parameters": {…}}] ```` at the start of a
//! line (Command-R+), and `<|START_ACTION|>[…]<|END_ACTION|>` (Command R7B). Its
//! `directly_answer` is no call: the model means to answer in text.

use super::json_calls::{Reading, json_calls};
use super::scan::{Cur, Marker, Step, Stop, literal};
use super::{Ctx, Format, Open, Parsed};

const ACTION: &str = "Action:";
const START: &str = "<|START_ACTION|>";
const END: &str = "<|END_ACTION|>";

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
            match literal(&rest[blank..], "```") {
                Marker::Full(f) => Marker::Full(n + blank + f),
                Marker::Partial => Marker::Partial,
                Marker::No if rest[blank..].is_empty() => Marker::Partial,
                Marker::No => Marker::No,
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
