//! Llama 3.1 and later: `<|python_tag|>` followed by a JSON call (`{"name": …, "parameters":
//! …}`) or a Python one (`brave_search.call(query="…")`, `bash(command="ls")`), several
//! separated by `;`, ended by `<|eom_id|>` or `<|eot_id|>` when the server leaves them. The JSON
//! form without the tag is the bare object of bare.rs.

use super::json_calls::{Reading, json_calls};
use super::pythonic;
use super::scan::{Cur, Marker, Step, is_name_start, literal};
use super::{Ctx, Format, Open, Parsed};

const TAG: &str = "<|python_tag|>";

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    literal(text, TAG)
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    cur.lit(TAG)?;
    let mut calls = Vec::new();
    loop {
        cur.ws();
        match cur.peek() {
            Some('[') if cur.rest()[1..].trim_start().starts_with(is_name_start) => {
                calls.extend(pythonic::list(&mut cur, ctx.tools, Reading::Lenient)?);
            }
            Some(c) if is_name_start(c) => {
                calls.push(pythonic::call(&mut cur, ctx.tools, Reading::Lenient)?);
            }
            _ => calls.extend(json_calls(&mut cur, ctx.tools, Reading::Lenient)?),
        }
        let after = cur.pos;
        cur.ws();
        if !cur.eat(";")? {
            cur.pos = after;
            break;
        }
        cur.ws();
        if cur.is_empty() || cur.rest().starts_with('<') {
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, Format::Llama))
}
