//! Gemma 4: `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`, bare keys and strings
//! between `<|"|>` tokens (JSON quotes too); FunctionGemma the same between
//! `<start_function_call>` and `<end_function_call>`, strings between `<escape>` tokens.

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, any_literal};
use super::tools::Call;
use super::value::{GEMMA_QUOTES, value};
use super::{Ctx, Format, Open, Parsed};

const OPENS: &[&str] = &["<|tool_call>", "<start_function_call>"];
const CLOSES: &[&str] = &["<tool_call|>", "<end_function_call>"];

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    any_literal(text, OPENS)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    let mut format = Format::Gemma;
    loop {
        match cur.eat_any(OPENS)? {
            Some(1) => format = Format::FunctionGemma,
            Some(_) => {}
            None => {
                if calls.is_empty() {
                    return Err(Stop::Bad);
                }
                break;
            }
        }
        // Several calls may share one block.
        loop {
            cur.ws();
            cur.lit("call:")?;
            let name = clean_name(cur.name()?).ok_or(Stop::Bad)?.to_string();
            cur.ws();
            let args = value(&mut cur, GEMMA_QUOTES)?;
            let args = args.as_object().ok_or(Stop::Bad)?.clone();
            calls.push(Call::new(&name, args));
            cur.ws();
            if !cur.rest().starts_with("call:") {
                break;
            }
        }
        cur.eat_any(CLOSES)?;
        if !cur.followed_by(OPENS) {
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, format))
}
