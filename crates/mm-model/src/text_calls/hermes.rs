//! `<tool_call>…</tool_call>`: Hermes and Qwen put JSON inside (`{"name": …, "arguments": …}`,
//! drifting to single quotes, trailing commas, several objects, a list); Qwen3-Coder puts its
//! XML (`<function=…>`), GLM its `NAME<arg_key>…`. Several blocks in a row; the last closing tag
//! may be missing.

use super::json_calls::{Reading, json_calls_until};
use super::scan::{Cur, Marker, Step, Stop, any_literal, is_name_start, literal};
use super::tools::Call;
use super::{Ctx, Format, Open, Parsed, glm, minimax, xml};

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    literal(text, OPEN)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    let mut format = None;
    loop {
        cur.lit(OPEN)?;
        cur.ws();
        let (found, kind) = body(&mut cur, ctx)?;
        format.get_or_insert(kind);
        calls.extend(found);
        cur.ws();
        cur.eat(CLOSE)?;
        if !cur.followed_by(&[OPEN]) {
            break;
        }
    }
    Ok(Parsed::calls(
        calls,
        cur.pos,
        format.unwrap_or(Format::Hermes),
    ))
}

fn body(cur: &mut Cur, ctx: &Ctx) -> Step<(Vec<Call>, Format)> {
    match cur.peek() {
        None => Err(cur.out()),
        Some('{' | '[' | '`') => {
            json_calls_until(cur, ctx.tools, Reading::Lenient).map(|calls| (calls, Format::Hermes))
        }
        Some('<') => match any_literal(cur.rest(), &[xml::FUNCTION, minimax::INVOKE]) {
            Marker::Full(_) if cur.rest().starts_with(xml::FUNCTION) => xml::functions(cur, ctx),
            Marker::Full(_) => minimax::invokes(cur, ctx, "", true).map(|c| (c, Format::MiniMax)),
            Marker::Partial => Err(cur.out()),
            Marker::No => Err(Stop::Bad),
        },
        Some(c) if is_name_start(c) => {
            let call = glm::call(cur, ctx, CLOSE)?;
            Ok((vec![call], Format::Glm))
        }
        Some(_) => Err(Stop::Bad),
    }
}
