//! GigaChat 3: a call is a message of its own, `<|message_sep|>` and the header
//! `function call<|role_sep|>`, then a JSON object `{"name": …, "arguments": {…}}`; GigaChat 3.1
//! puts `<|function_call|>` before the object instead. `</s>` may end the turn.

use super::json_calls::{Reading, json_calls};
use super::scan::{Cur, Marker, Step, any_literal};
use super::{Ctx, Format, Open, Parsed};

const FUNCTION_CALL: &str = "<|function_call|>";
const MESSAGE_SEP: &str = "<|message_sep|>";
const HEADER: &str = "function call";
const ROLE_SEP: &str = "<|role_sep|>";

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    any_literal(text, &[FUNCTION_CALL, MESSAGE_SEP])
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    loop {
        if !cur.eat(FUNCTION_CALL)? {
            // A message of another kind after the separator is not a call.
            cur.lit(MESSAGE_SEP)?;
            cur.ws();
            cur.lit(HEADER)?;
            cur.ws();
            cur.lit(ROLE_SEP)?;
        }
        calls.extend(json_calls(&mut cur, ctx.tools, Reading::Lenient)?);
        if !cur.followed_by(&[FUNCTION_CALL, MESSAGE_SEP]) {
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, Format::GigaChat))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::text_calls::scan::Stop;
    use crate::text_calls::tools::Tools;

    #[test]
    fn a_message_separator_before_anything_else_is_no_call() {
        let tools = Tools::any();
        let ctx = Ctx {
            tools: &tools,
            end: true,
        };
        let text = "<|message_sep|>\n\nassistant<|role_sep|>\nHello";
        assert_eq!(parse(text, &ctx).err(), Some(Stop::Bad));
        let call =
            "<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"f\", \"arguments\": {}}";
        assert_eq!(parse(call, &ctx).unwrap().calls.len(), 1);
    }
}
