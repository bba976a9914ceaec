//! `<invoke name="NAME"><parameter name="KEY">value</parameter></invoke>`: MiniMax M2 inside
//! `<minimax:tool_call>`, the same inside `<function_calls>`, and DeepSeek V3.2's DSML, whose
//! tags carry a `｜DSML｜` prefix and say whether a value is a string (`string="false"`: JSON).
//! Olmo 3 puts Python calls inside `<function_calls>`, one per line.

use serde_json::{Map, Value};

use super::json_calls::{Reading, clean_name};
use super::pythonic;
use super::scan::{Cur, Marker, Step, Stop, any_literal};
use super::tools::Call;
use super::value::whole_value;
use super::{Ctx, Format, Open, Parsed};

pub(crate) const INVOKE: &str = "<invoke";
const DSML: &str = "｜DSML｜";
/// The wrappers, each with its closing tag and tag prefix.
const WRAPPERS: &[(&str, &str, &str)] = &[
    ("<minimax:tool_call>", "</minimax:tool_call>", ""),
    ("<function_calls>", "</function_calls>", ""),
    (
        "<｜DSML｜function_calls>",
        "</｜DSML｜function_calls>",
        DSML,
    ),
];

pub(crate) fn open(text: &str, _: &Open) -> Marker {
    any_literal(
        text,
        &[WRAPPERS[0].0, WRAPPERS[1].0, WRAPPERS[2].0, "<invoke name="],
    )
}

pub(crate) fn parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let mut cur = Cur::new(text, ctx.end);
    let opens: Vec<&str> = WRAPPERS.iter().map(|w| w.0).collect();
    let mut calls = Vec::new();
    let mut format = Format::MiniMax;
    loop {
        let wrapper = cur.eat_any(&opens)?;
        let prefix = wrapper.map_or("", |i| WRAPPERS[i].2);
        cur.ws();
        if wrapper == Some(1) && !cur.rest().starts_with('<') {
            calls.extend(python_lines(&mut cur, ctx)?);
            format = Format::Pythonic;
        } else {
            calls.extend(invokes(&mut cur, ctx, prefix, true)?);
        }
        let Some(i) = wrapper else { break };
        cur.ws();
        cur.eat(WRAPPERS[i].1)?;
        if !cur.followed_by(&opens) {
            break;
        }
    }
    Ok(Parsed::calls(calls, cur.pos, format))
}

/// Olmo 3: Python calls, one per line (or separated by commas), up to `</function_calls>`.
fn python_lines(cur: &mut Cur, ctx: &Ctx) -> Step<Vec<super::tools::Call>> {
    let mut calls = Vec::new();
    loop {
        cur.ws();
        if cur.rest().starts_with('<') || (cur.is_empty() && cur.end) {
            return if calls.is_empty() {
                Err(Stop::Bad)
            } else {
                Ok(calls)
            };
        }
        calls.push(pythonic::call(cur, ctx.tools, Reading::Lenient)?);
        cur.ws();
        cur.eat(",")?;
    }
}

/// An attribute's value: quoted with `"` or `'`, or bare up to blank space or `>`.
fn attribute(cur: &mut Cur) -> Step<String> {
    cur.ws();
    match cur.peek() {
        None => Err(cur.out()),
        Some(q @ ('"' | '\'')) => {
            cur.bump(1);
            let mut quote = [0u8; 4];
            cur.until(q.encode_utf8(&mut quote)).map(str::to_string)
        }
        Some(_) => {
            let rest = cur.rest();
            let len = rest
                .find(|c: char| c.is_whitespace() || c == '>')
                .ok_or_else(|| cur.out())?;
            cur.bump(len);
            Ok(rest[..len].to_string())
        }
    }
}

/// One or more `<invoke …>…</invoke>` at the cursor; `prefix` goes before each tag's name;
/// `trim`: the one newline after a value's opening tag and before its closing one is layout
/// (MiniMax writes them; Step3 writes values inline, where blank space is data).
pub(crate) fn invokes(cur: &mut Cur, _ctx: &Ctx, prefix: &str, trim: bool) -> Step<Vec<Call>> {
    let invoke = format!("<{prefix}invoke");
    let invoke_end = format!("</{prefix}invoke>");
    let parameter = format!("<{prefix}parameter");
    let parameter_end = format!("</{prefix}parameter>");
    let mut calls = Vec::new();
    loop {
        cur.ws();
        if !cur.eat(&invoke)? {
            return if calls.is_empty() {
                Err(Stop::Bad)
            } else {
                Ok(calls)
            };
        }
        cur.ws();
        cur.lit("name=")?;
        let name = attribute(cur)?;
        let name = clean_name(&name).ok_or(Stop::Bad)?.to_string();
        cur.until(">")?;
        let mut args = Map::new();
        loop {
            cur.ws();
            if !cur.eat(&parameter)? {
                break;
            }
            cur.ws();
            cur.lit("name=")?;
            let key = attribute(cur)?;
            // DSML says `string="false"` for a JSON value.
            let attrs = cur.until(">")?;
            let json = attrs.contains("string=\"false\"");
            let mut text = cur.until(&parameter_end)?;
            if trim {
                text = text.strip_prefix('\n').unwrap_or(text);
                text = text.strip_suffix('\n').unwrap_or(text);
            }
            let value = match json.then(|| whole_value(text)).flatten() {
                Some(v) => v,
                None => Value::String(text.to_string()),
            };
            args.insert(key, value);
        }
        cur.ws();
        cur.eat(&invoke_end)?;
        calls.push(Call::new(&name, args));
    }
}
