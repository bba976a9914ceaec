//! Calls written as Python: `[bash(command="ls"), read_file(path='a.txt')]` (Llama 3.2 and 4,
//! LFM2 between `<|tool_call_start|>` and `<|tool_call_end|>`, Llama 4 between
//! `<|python_start|>` and `<|python_end|>`), values as Python literals (`True`, `None`, lists,
//! dicts), `name.call(…)` for Llama's built-in tools.

use serde_json::Map;

use super::json_calls::{Reading, clean_name, json_calls, sole_argument};
use super::scan::{Cur, Marker, Step, Stop, any_literal};
use super::tools::{Call, Tools};
use super::value::value;
use super::{Ctx, Format, Open, Parsed};

/// The pairs of markers around a list, and the format each is.
const MARKERS: &[(&str, &str, Format)] = &[
    ("<|tool_call_start|>", "<|tool_call_end|>", Format::Lfm2),
    ("<|python_start|>", "<|python_end|>", Format::Pythonic),
];

pub(crate) fn lfm2_open(text: &str, _: &Open) -> Marker {
    any_literal(text, &[MARKERS[0].0, MARKERS[1].0])
}

/// `<|tool_call_start|>[…]<|tool_call_end|>` (or Llama 4's pair), repeated; LFM2 may also put
/// JSON inside.
pub(crate) fn lfm2_parse(text: &str, ctx: &Ctx) -> Step<Parsed> {
    let Some(&(open, close, format)) = MARKERS.iter().find(|m| text.starts_with(m.0)) else {
        return Err(Stop::Bad);
    };
    let mut cur = Cur::new(text, ctx.end);
    let mut calls = Vec::new();
    while cur.eat(open)? {
        cur.ws();
        let found = match cur.peek() {
            Some('[') if !cur.rest()[1..].trim_start().starts_with(['{', '[']) => {
                list(&mut cur, ctx.tools, Reading::Lenient)?
            }
            Some(_) => json_calls(&mut cur, ctx.tools, Reading::Lenient)?,
            None => return Err(cur.out()),
        };
        calls.extend(found);
        cur.ws();
        cur.eat(close)?;
        if !cur.followed_by(&[open]) {
            break;
        }
    }
    if calls.is_empty() {
        return Err(Stop::Bad);
    }
    Ok(Parsed::calls(calls, cur.pos, format))
}

/// `[call, call, …]` at the cursor.
pub(crate) fn list(cur: &mut Cur, tools: &Tools, reading: Reading) -> Step<Vec<Call>> {
    cur.lit("[")?;
    let mut calls = Vec::new();
    loop {
        cur.ws();
        if !calls.is_empty() && cur.eat("]")? {
            return Ok(calls);
        }
        calls.push(call(cur, tools, reading)?);
        cur.ws();
        if cur.eat(",")? {
            continue;
        }
        cur.lit("]")?;
        return Ok(calls);
    }
}

/// A Python identifier (a keyword argument's name).
fn identifier<'a>(cur: &mut Cur<'a>) -> Step<&'a str> {
    let rest = cur.rest();
    let len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    if len == rest.len() {
        return Err(cur.out());
    }
    cur.bump(len);
    Ok(&rest[..len])
}

/// `name(key=value, …)` at the cursor. Read strictly (no marker around it), the name must be
/// an offered tool's and every argument a keyword one; leniently, positional values fill the
/// schema's parameters in order.
pub(crate) fn call(cur: &mut Cur, tools: &Tools, reading: Reading) -> Step<Call> {
    let strict = reading == Reading::Strict;
    let written = cur.name()?;
    let written = written.strip_suffix(".call").unwrap_or(written);
    let name = clean_name(written).ok_or(Stop::Bad)?.to_string();
    if strict && tools.offered(&name).is_none() {
        return Err(Stop::Bad);
    }
    cur.ws();
    cur.lit("(")?;
    let mut args = Map::new();
    let mut positional = Vec::new();
    loop {
        cur.ws();
        if cur.eat(")")? {
            break;
        }
        let save = cur.pos;
        let key = match cur.peek() {
            Some(c) if c.is_alphabetic() || c == '_' => {
                let key = identifier(cur)?;
                cur.ws();
                if cur.eat("=")? && !cur.rest().starts_with('=') {
                    Some(key.to_string())
                } else {
                    cur.pos = save;
                    None
                }
            }
            _ => None,
        };
        let v = value(cur, &[])?;
        match key {
            Some(key) => {
                args.insert(key, v);
            }
            None if strict => return Err(Stop::Bad),
            None => positional.push(v),
        }
        cur.ws();
        if cur.eat(",")? {
            continue;
        }
        cur.lit(")")?;
        break;
    }
    if positional.is_empty() {
        return Ok(Call::new(&name, args));
    }
    let tool = tools.offered(&name).unwrap_or(&name).to_string();
    let free: Vec<String> = tools
        .param_names(&tool)
        .into_iter()
        .filter(|p| !args.contains_key(*p))
        .map(str::to_string)
        .collect();
    if positional.len() <= free.len() {
        for (param, v) in free.into_iter().zip(positional) {
            args.insert(param, v);
        }
        return Ok(Call::new(&name, args));
    }
    match (positional.len(), args.is_empty()) {
        (1, true) => {
            let Some(v) = positional.pop() else {
                return Err(Stop::Bad);
            };
            Ok(Call {
                name,
                args: sole_argument(tools, &tool, v),
            })
        }
        _ => Err(Stop::Bad),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::text_calls::tools::Args;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn args_value(call: &Call) -> Value {
        match &call.args {
            Args::Object(map) => Value::Object(map.clone()),
            Args::Raw(raw) => Value::String(raw.clone()),
        }
    }

    #[test]
    fn keyword_and_positional_arguments() {
        let tools = Tools::names(&["bash".into(), "get_weather".into()]);
        let mut cur = Cur::new(
            "[bash(command=\"ls -la\", timeout=30), get_weather(city='Paris', metric=True)]",
            true,
        );
        let calls = list(&mut cur, &tools, Reading::Strict).unwrap();
        assert_eq!(
            calls.iter().map(args_value).collect::<Vec<_>>(),
            vec![
                json!({"command": "ls -la", "timeout": 30}),
                json!({"city": "Paris", "metric": true})
            ]
        );
        let mut cur = Cur::new("bash(\"ls\")", true);
        assert_eq!(
            call(&mut cur, &tools, Reading::Lenient).map(|c| args_value(&c)),
            Ok(json!("ls"))
        );
        let mut cur = Cur::new("bash(\"ls\")", true);
        assert_eq!(call(&mut cur, &tools, Reading::Strict), Err(Stop::Bad));
        let mut cur = Cur::new("deploy(now=True)", true);
        assert_eq!(call(&mut cur, &tools, Reading::Strict), Err(Stop::Bad));
    }
}
