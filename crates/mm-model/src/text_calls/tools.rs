//! The tools a session offers, as text-call recovery needs them: their names (only an offered
//! name makes a call of text without a marker) and their parameters' types, to read values the
//! model typed as strings (`"5"` for an integer, `"true"`, a JSON array in a string) as the
//! schema says, where that is unambiguous.

use serde_json::{Map, Value};

use super::value::whole_value;
use crate::RawToolCall;

/// A parameter's type, as far as coercion cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
    /// No type, or several: values are left as they came.
    Any,
}

#[derive(Debug, Clone, PartialEq)]
struct Tool {
    name: String,
    /// In the schema's order.
    params: Vec<(String, Kind)>,
    required: Vec<String>,
}

/// The tools offered. `Any` (a filter built without names) accepts every name, so that text is
/// held back; the names decide when the answer is parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tools {
    listed: bool,
    tools: Vec<Tool>,
}

/// A call as read from text, before its arguments are checked against the schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub name: String,
    pub args: Args,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Args {
    Object(Map<String, Value>),
    /// Arguments that are not an object (an unparsable string): given to the tool as they
    /// are, so that the dispatcher's answer tells the model what was wrong.
    Raw(String),
}

impl Call {
    pub fn new(name: &str, args: Map<String, Value>) -> Self {
        Self {
            name: name.to_string(),
            args: Args::Object(args),
        }
    }
}

impl Args {
    /// The arguments a value gives: an object, or a JSON string holding one (models encode
    /// them twice), else the value as it is.
    pub fn of(value: Value) -> Self {
        match value {
            Value::Object(map) => Args::Object(map),
            Value::String(text) => match whole_value(&text) {
                Some(Value::Object(map)) => Args::Object(map),
                _ => Args::Raw(Value::String(text).to_string()),
            },
            other => Args::Raw(other.to_string()),
        }
    }
}

fn kind_of(schema: &Value) -> Kind {
    let kind = |t: &str| match t {
        "string" => Kind::String,
        "integer" => Kind::Integer,
        "number" => Kind::Number,
        "boolean" => Kind::Boolean,
        "array" => Kind::Array,
        "object" => Kind::Object,
        _ => Kind::Any,
    };
    match schema.get("type") {
        Some(Value::String(t)) => kind(t),
        // `["integer", "null"]`: an optional integer.
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match named.as_slice() {
                [one] => kind(one),
                _ => Kind::Any,
            }
        }
        _ => {
            // `anyOf: [X, {"type": "null"}]`
            let any = schema.get("anyOf").and_then(Value::as_array);
            let named: Vec<Kind> = any
                .into_iter()
                .flatten()
                .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
                .map(kind_of)
                .collect();
            match named.as_slice() {
                [one] => *one,
                _ => Kind::Any,
            }
        }
    }
}

impl Tools {
    /// Every name is accepted.
    pub fn any() -> Self {
        Self::default()
    }

    /// These names, without schemas.
    pub fn names(names: &[String]) -> Self {
        Self {
            listed: true,
            tools: names
                .iter()
                .map(|name| Tool {
                    name: name.clone(),
                    params: Vec::new(),
                    required: Vec::new(),
                })
                .collect(),
        }
    }

    /// The tools named in `names`, with the parameters their wire definitions
    /// (`{"type": "function", "function": {"name", "parameters"}}`) give.
    pub fn from_wire(definitions: &[Value], names: &[String]) -> Self {
        let mut tools = Self::names(names);
        for definition in definitions {
            let function = definition.get("function").unwrap_or(definition);
            let Some(name) = function.get("name").and_then(Value::as_str) else {
                continue;
            };
            let Some(tool) = tools.tools.iter_mut().find(|t| t.name == name) else {
                continue;
            };
            let parameters = function.get("parameters");
            if let Some(properties) = parameters
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object)
            {
                tool.params = properties
                    .iter()
                    .map(|(k, schema)| (k.clone(), kind_of(schema)))
                    .collect();
            }
            tool.required = parameters
                .and_then(|p| p.get("required"))
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
        }
        tools
    }

    /// Whether names are known (not [`Tools::any`]).
    pub fn is_listed(&self) -> bool {
        self.listed
    }

    pub(crate) fn listed_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The offered tool a name means: itself, or the one tool it names but for case and `-`
    /// for `_` (`Bash`, `read-file`). `None` when no tool is meant (with [`Tools::any`],
    /// every name is itself).
    pub(crate) fn offered<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if !self.listed {
            return Some(name);
        }
        if let Some(tool) = self.tool(name) {
            return Some(&tool.name);
        }
        let loose = |s: &str| s.to_lowercase().replace('-', "_");
        let wanted = loose(name);
        let mut matches = self.tools.iter().filter(|t| loose(&t.name) == wanted);
        match (matches.next(), matches.next()) {
            (Some(one), None) => Some(&one.name),
            _ => None,
        }
    }

    /// Whether `key` is one of the tool's parameters (false when its schema is not known).
    pub(crate) fn has_param(&self, tool: &str, key: &str) -> bool {
        self.tool(tool)
            .is_some_and(|t| t.params.iter().any(|(k, _)| k == key))
    }

    /// The parameter that one positional value, or a string given as the whole arguments,
    /// stands for: the tool's only parameter, or its only required one.
    pub(crate) fn sole_param(&self, tool: &str) -> Option<&str> {
        let tool = self.tool(tool)?;
        match (tool.params.as_slice(), tool.required.as_slice()) {
            ([(only, _)], _) => Some(only),
            (_, [only]) => Some(only),
            _ => None,
        }
    }

    /// Whether the tool's parameters are known (it has a schema with properties).
    pub(crate) fn has_params(&self, tool: &str) -> bool {
        self.tool(tool).is_some_and(|t| !t.params.is_empty())
    }

    /// Whether the tool takes exactly these arguments: each a parameter of its schema, every
    /// required one among them (false when the schema is not known).
    pub(crate) fn fits(&self, tool: &str, keys: &[&str]) -> bool {
        self.tool(tool).is_some_and(|t| {
            !t.params.is_empty()
                && keys.iter().all(|k| t.params.iter().any(|(p, _)| p == k))
                && t.required.iter().all(|r| keys.contains(&r.as_str()))
        })
    }

    /// The one offered tool that takes exactly these arguments ([`Tools::fits`]); `None` when
    /// none does, or several.
    pub(crate) fn fitting(&self, keys: &[&str]) -> Option<&str> {
        let mut fit = self.tools.iter().filter(|t| self.fits(&t.name, keys));
        match (fit.next(), fit.next()) {
            (Some(one), None) => Some(&one.name),
            _ => None,
        }
    }

    /// The names of the tool's parameters in the schema's order (for positional arguments).
    pub(crate) fn param_names(&self, tool: &str) -> Vec<&str> {
        self.tool(tool)
            .map(|t| t.params.iter().map(|(k, _)| k.as_str()).collect())
            .unwrap_or_default()
    }

    fn kind(&self, tool: &str, key: &str) -> Kind {
        self.tool(tool)
            .and_then(|t| t.params.iter().find(|(k, _)| k == key))
            .map_or(Kind::Any, |(_, kind)| *kind)
    }

    /// The call for the dispatcher: the offered name it means (else as written), and its
    /// arguments with each value of the wrong type but an unambiguous reading made the
    /// schema's type.
    pub(crate) fn finish(&self, call: Call) -> RawToolCall {
        let name = self.offered(&call.name).unwrap_or(&call.name).to_string();
        let arguments = match call.args {
            Args::Raw(raw) => raw,
            Args::Object(map) => {
                let map: Map<String, Value> = map
                    .into_iter()
                    .map(|(k, v)| {
                        let v = coerce(v, self.kind(&name, &k));
                        (k, v)
                    })
                    .collect();
                Value::Object(map).to_string()
            }
        };
        RawToolCall {
            id: String::new(),
            name,
            arguments,
        }
    }
}

/// A value made the schema's type when it reads unambiguously as one.
fn coerce(value: Value, kind: Kind) -> Value {
    match (kind, value) {
        (Kind::Integer, Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => Value::String(s),
        },
        (Kind::Integer, Value::Number(n))
            if n.as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                && !n.is_i64()
                && !n.is_u64() =>
        {
            Value::from(n.as_f64().map_or(0, |f| f as i64))
        }
        (Kind::Number, Value::String(s)) => match s.trim().parse::<f64>() {
            Ok(f) if f.is_finite() => {
                serde_json::Number::from_f64(f).map_or(Value::String(s), Value::Number)
            }
            _ => Value::String(s),
        },
        (Kind::Boolean, Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(s),
        },
        (Kind::Array, Value::String(s)) => match whole_value(&s) {
            Some(v @ Value::Array(_)) => v,
            _ => Value::String(s),
        },
        (Kind::Object, Value::String(s)) => match whole_value(&s) {
            Some(v @ Value::Object(_)) => v,
            _ => Value::String(s),
        },
        (Kind::String, Value::Number(n)) => Value::String(n.to_string()),
        (Kind::String, Value::Bool(b)) => Value::String(b.to_string()),
        (_, other) => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn tools() -> Tools {
        let defs = vec![
            json!({"type": "function", "function": {"name": "bash", "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": ["integer", "null"]}},
            "required": ["command"]}}}),
            json!({"type": "function", "function": {"name": "read_file", "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "lines": {"type": "array"}, "all": {"type": "boolean"}}}}}),
        ];
        Tools::from_wire(&defs, &["bash".into(), "read_file".into()])
    }

    #[test]
    fn values_typed_as_strings_follow_the_schema_when_unambiguous() {
        let call = |args: Value| Call {
            name: "bash".into(),
            args: Args::Object(args.as_object().unwrap().clone()),
        };
        let raw = tools().finish(call(json!({"command": 5, "timeout": "30"})));
        assert_eq!(raw.arguments, r#"{"command":"5","timeout":30}"#);
        let raw = tools().finish(call(json!({"command": "ls", "timeout": "soon"})));
        assert_eq!(raw.arguments, r#"{"command":"ls","timeout":"soon"}"#);
        let read = Call {
            name: "read-file".into(),
            args: Args::Object(
                json!({"lines": "[1, 2]", "all": "True", "extra": "7"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        };
        let raw = tools().finish(read);
        assert_eq!(raw.name, "read_file");
        assert_eq!(raw.arguments, r#"{"lines":[1,2],"all":true,"extra":"7"}"#);
    }

    #[test]
    fn only_offered_names_are_offered() {
        let tools = tools();
        assert_eq!(tools.offered("BASH"), Some("bash"));
        assert_eq!(tools.offered("deploy"), None);
        assert_eq!(Tools::any().offered("deploy"), Some("deploy"));
        assert_eq!(tools.sole_param("bash"), Some("command"));
        assert_eq!(tools.sole_param("read_file"), None);
        assert_eq!(tools.fitting(&["command", "timeout"]), Some("bash"));
        assert_eq!(tools.fitting(&["timeout"]), None);
        assert_eq!(tools.fitting(&["path", "nope"]), None);
    }
}
