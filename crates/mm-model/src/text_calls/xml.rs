//! `<function=NAME>`: Qwen3-Coder (and Nemotron 3, Seed-OSS inside `<seed:tool_call>`) follow
//! it with `<parameter=KEY>value</parameter>` lines, values as text typed by the schema (one
//! newline after `>` and one before `</parameter>` are layout); Functionary v3.1 with a JSON
//! object. Either closes with `</function>`, which may be missing, as may a `</parameter>`; a
//! `</tool_call>` whose opening tag was dropped is taken with the call.

use serde_json::{Map, Value};

use super::json_calls::clean_name;
use super::scan::{Cur, Marker, Step, Stop, any_literal, literal};
use super::tools::Call;
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

pub(crate) const FUNCTION: &str = "<function=";
const FUNCTION_END: &str = "</function>";
const PARAMETER: &str = "<parameter=";
const PARAMETER_END: &str = "</parameter>";
const SEED_OPEN: &str = "<seed:tool_call>";
const SEED_CLOSE: &str = "</seed:tool_call>";

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    any_literal(text, &[FUNCTION, SEED_OPEN])
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    let mut format;
    loop {
        let seed = cur.eat(SEED_OPEN)?;
        cur.ws();
        let (found, kind) = functions(&mut cur, ctx)?;
        format = kind;
        calls.extend(found);
        if seed {
            cur.ws();
            cur.eat(SEED_CLOSE)?;
        } else {
            // Qwen3-Coder may drop the opening `<tool_call>` and keep the closing one.
            let after = cur.pos;
            cur.ws();
            if !cur.eat("</tool_call>")? {
                cur.pos = after;
            }
        }
        if !seed || !cur.followed_by(&[SEED_OPEN]) {
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, format))
}

/// Strips the one newline models put after `>` and before `</parameter>`.
fn trim_value(text: &str) -> &str {
    let text = text
        .strip_prefix("\r\n")
        .or_else(|| text.strip_prefix('\n'))
        .unwrap_or(text);
    text.strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text)
}

/// One or more `<function=…>…</function>` at the cursor.
pub(crate) fn functions(cur: &mut Cur, ctx: &Ctx) -> Step<(Vec<Call>, Format)> {
    let _ = ctx;
    let mut calls = Vec::new();
    let mut format = Format::QwenXml;
    loop {
        cur.lit(FUNCTION)?;
        let name = clean_name(cur.name()?).ok_or(Stop::Bad)?.to_string();
        cur.lit(">")?;
        cur.ws();
        if cur.peek() == Some('{') {
            format = Format::Functionary;
            let args = value(cur, &[])?;
            let args = args.as_object().ok_or(Stop::Bad)?.clone();
            calls.push(Call::new(&name, args));
            cur.ws();
            cur.eat(FUNCTION_END)?;
        } else {
            calls.push(Call::new(&name, parameters(cur)?));
            cur.ws();
            cur.eat(FUNCTION_END)?;
        }
        let after = cur.pos;
        cur.ws();
        match literal(cur.rest(), FUNCTION) {
            Marker::Full(_) => {}
            Marker::Partial if !cur.end => return Err(Stop::More),
            Marker::Partial | Marker::No => {
                cur.pos = after;
                return Ok((calls, format));
            }
        }
    }
}

fn parameters(cur: &mut Cur) -> Step<Map<String, Value>> {
    let mut args = Map::new();
    loop {
        cur.ws();
        if !cur.eat(PARAMETER)? {
            // Only the function's end (or the end of the answer) may follow.
            return match any_literal(cur.rest(), &[FUNCTION_END, "</tool_call>", FUNCTION]) {
                Marker::Full(_) => Ok(args),
                Marker::Partial => Err(cur.out()),
                Marker::No if cur.is_empty() => {
                    if cur.end {
                        Ok(args)
                    } else {
                        Err(Stop::More)
                    }
                }
                Marker::No => Err(Stop::Bad),
            };
        }
        let key = cur.name()?.to_string();
        cur.lit(">")?;
        let (text, which) = cur.until_any(&[PARAMETER_END, PARAMETER, FUNCTION_END])?;
        if which != 0 {
            // `</parameter>` missing: the next tag starts again.
            let len = [PARAMETER_END, PARAMETER, FUNCTION_END][which].len();
            cur.pos -= len;
        }
        args.insert(key, Value::String(trim_value(text).to_string()));
    }
}
