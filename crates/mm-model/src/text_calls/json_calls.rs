//! A JSON value as one or more calls, in the shapes models give them: `{name, arguments}` and
//! its synonyms (`parameters`, `args`, `tool`, `tool_name`, `function`, LangChain's `action` and
//! `action_input`), an OpenAI-style `function` wrapper, `tool_calls` lists, `function_call`,
//! arguments as a JSON string, arguments spread over the object beside the name, and Apertus's
//! `{NAME: {…}}`.

use serde_json::{Map, Value};

use super::scan::{Cur, Step, Stop};
use super::tools::{Args, Call, Tools};
use super::value::{value, whole_value};

const NAME_KEYS: &[&str] = &[
    "name",
    "tool_name",
    "tool",
    "function_name",
    "function",
    "recipient_name",
    "action",
];
const ARGS_KEYS: &[&str] = &[
    "arguments",
    "parameters",
    "args",
    "input",
    "tool_input",
    "action_input",
    "params",
];
/// Keys of a call object that are neither its name nor its arguments.
const OTHER_KEYS: &[&str] = &["id", "type", "index", "call_id", "tool_call_id"];

/// How strictly a value is read. Without a marker around it (`strict`), JSON is a call only
/// when it names an offered tool with object arguments: a model showing JSON must not run a
/// tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    Strict,
    Lenient,
}

/// A name as models write it: trimmed, without an OpenAI-style `functions.` prefix or Gemini's
/// `default_api.`; `None` when it cannot be a tool's name.
pub(crate) fn clean_name(name: &str) -> Option<&str> {
    let name = name.trim();
    let name = ["functions.", "function.", "default_api."]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .unwrap_or(name);
    let bad = |c: char| c.is_whitespace() || "<>{}[]()\"'`,;=".contains(c);
    (!name.is_empty() && !name.contains(bad)).then_some(name)
}

/// The calls a value holds: one call object, a list of them, or a `tool_calls` list.
pub(crate) fn calls_of(value: &Value, tools: &Tools, reading: Reading) -> Option<Vec<Call>> {
    match value {
        Value::Array(items) if !items.is_empty() => {
            let mut calls = Vec::new();
            for item in items {
                calls.extend(calls_of(item, tools, reading)?);
            }
            Some(calls)
        }
        Value::Object(map) => {
            if let Some(list) = map.get("tool_calls") {
                return calls_of(list, tools, reading);
            }
            for wrapper in ["tool_call", "function_call"] {
                if let Some(one) = map.get(wrapper).filter(|v| v.is_object()) {
                    return calls_of(one, tools, reading);
                }
            }
            call_of(map, tools, reading).map(|call| vec![call])
        }
        _ => None,
    }
}

fn call_of(map: &Map<String, Value>, tools: &Tools, reading: Reading) -> Option<Call> {
    let strict = reading == Reading::Strict;
    if !map.contains_key("name")
        && let Some(inner) = map.get("function").and_then(Value::as_object)
    {
        return call_of(inner, tools, reading);
    }
    if let Some(kind) = map.get("type").and_then(Value::as_str)
        && !matches!(kind, "function" | "tool_call" | "tool_use")
    {
        return None;
    }
    let Some((name_key, name)) = NAME_KEYS
        .iter()
        .find_map(|k| map.get(*k).and_then(Value::as_str).map(|n| (*k, n)))
    else {
        return if strict { None } else { keyed_call(map, tools) };
    };
    let name = clean_name(name)?;
    let offered = tools.offered(name);
    if strict && offered.is_none() {
        return None;
    }
    let tool = offered.unwrap_or(name);
    let args = match ARGS_KEYS.iter().find_map(|k| map.get(*k)) {
        Some(Value::Object(args)) => Args::Object(args.clone()),
        Some(Value::Null) if !strict => Args::Object(Map::new()),
        Some(Value::String(text)) => match whole_value(text) {
            Some(Value::Object(args)) => Args::Object(args),
            _ if strict => return None,
            _ => sole_argument(tools, tool, Value::String(text.clone())),
        },
        Some(other) if !strict => sole_argument(tools, tool, other.clone()),
        Some(_) => return None,
        None => {
            let spread: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| k.as_str() != name_key && !OTHER_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if strict && (spread.is_empty() || !spread.keys().all(|k| tools.has_param(tool, k))) {
                return None;
            }
            Args::Object(spread)
        }
    };
    Some(Call {
        name: name.to_string(),
        args,
    })
}

/// Arguments that are one value, not an object: the tool's only (or only required)
/// parameter, when there is one; else given as they are.
pub(crate) fn sole_argument(tools: &Tools, tool: &str, value: Value) -> Args {
    match tools.sole_param(tool) {
        Some(param) => {
            let mut map = Map::new();
            map.insert(param.to_string(), value);
            Args::Object(map)
        }
        None => match value {
            Value::String(s) => Args::Raw(s),
            other => Args::Raw(other.to_string()),
        },
    }
}

/// `{"NAME": {…}}`: an object with one key, an offered tool, whose value is the arguments
/// (Apertus's form, and a drift of others).
pub(crate) fn keyed_call(map: &Map<String, Value>, tools: &Tools) -> Option<Call> {
    let mut entries = map.iter();
    let (key, args) = entries.next()?;
    if entries.next().is_some() {
        return None;
    }
    let name = clean_name(key)?;
    tools.offered(name)?;
    let args = args.as_object()?;
    Some(Call::new(name, args.clone()))
}

/// One JSON value of calls at the cursor, optionally in a ```` ```json ```` fence.
fn one_value(cur: &mut Cur, tools: &Tools, reading: Reading) -> Step<Vec<Call>> {
    let fenced = cur.eat("```")?;
    if fenced {
        let rest = cur.rest();
        let lang = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        if lang == rest.len() {
            return Err(cur.out());
        }
        cur.bump(lang);
    }
    let value = value(cur, &[])?;
    let calls = calls_of(&value, tools, reading).ok_or(Stop::Bad)?;
    if fenced {
        cur.ws();
        cur.eat("```")?;
    }
    Ok(calls)
}

/// One or more JSON calls at the cursor: values separated by blank space, `,` or `;`, each
/// optionally in a ```` ```json ```` fence. Stops before whatever is not a next call (a closing
/// marker such as `[END_TOOL_REQUEST]`).
pub(crate) fn json_calls(cur: &mut Cur, tools: &Tools, reading: Reading) -> Step<Vec<Call>> {
    cur.ws();
    let mut calls = one_value(cur, tools, reading)?;
    loop {
        let after = cur.pos;
        cur.ws();
        if cur.eat_any(&[",", ";"])?.is_some() {
            cur.ws();
        }
        match cur.peek() {
            Some('{' | '[' | '`') => {}
            None if !cur.end => return Err(Stop::More),
            _ => {
                cur.pos = after;
                return Ok(calls);
            }
        }
        match one_value(cur, tools, reading) {
            Ok(more) => calls.extend(more),
            Err(Stop::More) => return Err(Stop::More),
            Err(Stop::Bad) => {
                cur.pos = after;
                return Ok(calls);
            }
        }
    }
}

/// [`json_calls`] inside a pair of markers: stray closing brackets after the value are skipped.
/// A value whose brackets do not close is no call (repair fixes quoting and commas, and
/// invents no structure).
pub(crate) fn json_calls_until(cur: &mut Cur, tools: &Tools, reading: Reading) -> Step<Vec<Call>> {
    let calls = json_calls(cur, tools, reading)?;
    loop {
        cur.ws();
        match cur.peek() {
            Some('}' | ']') => cur.bump(1),
            _ => return Ok(calls),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn names() -> Tools {
        Tools::names(&["bash".into(), "read_file".into()])
    }

    fn read(v: Value, reading: Reading) -> Option<Vec<(String, Value)>> {
        calls_of(&v, &names(), reading).map(|calls| {
            calls
                .into_iter()
                .map(|c| match c.args {
                    Args::Object(m) => (c.name, Value::Object(m)),
                    Args::Raw(r) => (c.name, Value::String(r)),
                })
                .collect()
        })
    }

    #[test]
    fn every_common_shape_is_a_call() {
        let want = Some(vec![("bash".to_string(), json!({"command": "ls"}))]);
        for shape in [
            json!({"name": "bash", "arguments": {"command": "ls"}}),
            json!({"name": "bash", "parameters": {"command": "ls"}}),
            json!({"type": "function", "name": "bash", "parameters": {"command": "ls"}}),
            json!({"tool": "bash", "args": {"command": "ls"}}),
            json!({"tool_name": "bash", "parameters": {"command": "ls"}}),
            json!({"function": "bash", "arguments": "{\"command\": \"ls\"}"}),
            json!({"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}),
            json!({"tool_calls": [{"id": "1", "function": {"name": "functions.bash", "arguments": {"command": "ls"}}}]}),
            json!([{"name": "bash", "arguments": {"command": "ls"}}]),
        ] {
            assert_eq!(read(shape.clone(), Reading::Strict), want, "{shape}");
        }
    }

    #[test]
    fn strict_reading_wants_an_offered_name_and_object_arguments() {
        for not in [
            json!({"name": "my-app", "version": "1.0"}),
            json!({"name": "bash"}),
            json!({"name": "bash", "arguments": "ls"}),
            json!({"type": "object", "name": "bash", "arguments": {}}),
            json!({"name": "bash", "command": "ls"}),
        ] {
            assert_eq!(read(not.clone(), Reading::Strict), None, "{not}");
        }
        assert_eq!(
            read(json!({"name": "bash", "command": "ls"}), Reading::Lenient),
            Some(vec![("bash".to_string(), json!({"command": "ls"}))])
        );
        assert_eq!(
            read(json!({"bash": {"command": "ls"}}), Reading::Lenient),
            Some(vec![("bash".to_string(), json!({"command": "ls"}))])
        );
    }
}
