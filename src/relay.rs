//! Questions another agent asks through us (agents.md, "The exchange", step 5): its permission
//! requests and its forms, put to our user by our front end and answered back unchanged.
//!
//! The asked agent's form is a JSON schema (`elicitation/create`'s `requestedSchema`): a front
//! end that forwards schemas (ACP with form support) sends it as it came; one that draws its own
//! forms (the terminal, ACP's permission fallback) reads it as [`Question`]s with
//! [`questions_of`] and writes the answers back with [`content_of`].

use serde_json::{Map, Value, json};

use crate::event::{AnswerValue, Question, QuestionKind};

/// The kind of a permission option, as ACP names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl OptionKind {
    /// From ACP's name; `None` for a kind mm does not know.
    pub fn from_name(name: &str) -> Option<OptionKind> {
        match name {
            "allow_once" => Some(OptionKind::AllowOnce),
            "allow_always" => Some(OptionKind::AllowAlways),
            "reject_once" => Some(OptionKind::RejectOnce),
            "reject_always" => Some(OptionKind::RejectAlways),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
        }
    }
}

/// One option of a relayed permission request, as the asked agent wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedOption {
    pub id: String,
    pub name: String,
    pub kind: OptionKind,
}

/// The asked agent asks whether one of its tool calls may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedPermission {
    /// Our own tool call that asked the agent (`ask_agent`'s `call_N`).
    pub tool_call_id: String,
    /// `<agent>: <its title>`.
    pub title: String,
    /// Its options, unchanged and in its order.
    pub options: Vec<RelayedOption>,
}

impl RelayedPermission {
    /// The answer of a front end that cannot ask: the agent's own `reject_once` option, else
    /// `None` (cancelled).
    pub fn refusal(&self) -> Option<String> {
        refusal_of(&self.options)
    }
}

/// The asked agent's own refusal among its options: its `reject_once`, else `None` (cancelled).
pub fn refusal_of(options: &[RelayedOption]) -> Option<String> {
    options
        .iter()
        .find(|o| o.kind == OptionKind::RejectOnce)
        .map(|o| o.id.clone())
}

/// The asked agent's form (`elicitation/create` in form mode).
#[derive(Debug, Clone, PartialEq)]
pub struct RelayedForm {
    /// Our own tool call that asked the agent.
    pub tool_call_id: String,
    /// The agent's name, for front ends that show who asks.
    pub agent: String,
    pub message: String,
    /// `requestedSchema`, unchanged.
    pub schema: Value,
}

/// What our user did with a relayed form.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayedAnswer {
    /// The `content` of an `accept`, by property name.
    Accepted(Value),
    Declined,
    Cancelled,
    /// Nobody can answer it: the reason (sent back as an error).
    Unavailable(String),
}

/// Why a front end that cannot forward schemas cannot ask a form.
pub const FIELD_NOT_DRAWABLE: &str = "the form has a field that cannot be asked here";
/// Why a front end that cannot ask (`mm --ask`, `mm -p` without a terminal) answers a form with
/// an error.
pub const CANNOT_ASK: &str = "the asking agent cannot ask its user";

/// How a relayed form's property reads back from an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Text,
    Integer,
    Number,
    Other,
}

/// The questions of a form schema, with each property's name; `None` when a property is of a
/// kind our forms cannot draw.
pub fn questions_of(schema: &Value) -> Option<Vec<(String, Question)>> {
    Some(
        fields_of(schema)?
            .into_iter()
            .map(|(name, q, _)| (name, q))
            .collect(),
    )
}

fn fields_of(schema: &Value) -> Option<Vec<(String, Question, Shape)>> {
    let properties = match schema.get("properties") {
        Some(Value::Object(p)) => p,
        None => return Some(Vec::new()),
        Some(_) => return None,
    };
    properties
        .iter()
        .map(|(name, p)| {
            let (kind, shape) = kind_of(p)?;
            let question = ["title", "description"]
                .iter()
                .find_map(|k| p.get(*k).and_then(Value::as_str))
                .unwrap_or(name)
                .to_string();
            Some((name.clone(), Question { question, kind }, shape))
        })
        .collect()
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// `enum: [..]`, or `oneOf`/`anyOf` of `{const}` (titled choices): the values.
fn choices(p: &Value) -> Option<Vec<String>> {
    if let Some(e) = strings(p.get("enum")) {
        return Some(e);
    }
    let list = p.get("oneOf").or_else(|| p.get("anyOf"))?.as_array()?;
    list.iter()
        .map(|c| c.get("const").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn kind_of(p: &Value) -> Option<(QuestionKind, Shape)> {
    let text_default = || p.get("default").and_then(Value::as_str).map(str::to_string);
    match p.get("type").and_then(Value::as_str)? {
        "string" => Some(match choices(p) {
            Some(options) => (
                QuestionKind::Choice {
                    options,
                    default: text_default(),
                },
                Shape::Text,
            ),
            None => (
                QuestionKind::Text {
                    default: text_default(),
                },
                Shape::Text,
            ),
        }),
        "boolean" => Some((
            QuestionKind::Confirm {
                default: p.get("default").and_then(Value::as_bool),
            },
            Shape::Other,
        )),
        "array" => Some((
            QuestionKind::Multi {
                options: choices(p.get("items")?)?,
                default: strings(p.get("default")),
            },
            Shape::Other,
        )),
        t @ ("integer" | "number") => Some((
            QuestionKind::Text {
                default: p.get("default").map(|d| d.to_string()),
            },
            if t == "integer" {
                Shape::Integer
            } else {
                Shape::Number
            },
        )),
        _ => None,
    }
}

/// An accepted form's `content`: each answered property by name (a string, a list, a boolean,
/// a number for numeric properties); unanswered ones are left out.
pub fn content_of(schema: &Value, answers: &[AnswerValue]) -> Value {
    let mut content = Map::new();
    let fields = fields_of(schema).unwrap_or_default();
    for ((name, _, shape), answer) in fields.iter().zip(answers) {
        let value = match (answer, shape) {
            (AnswerValue::None, _) => continue,
            (AnswerValue::Text(t), Shape::Integer) => match t.trim().parse::<i64>() {
                Ok(n) => json!(n),
                Err(_) => continue,
            },
            (AnswerValue::Text(t), Shape::Number) => match t.trim().parse::<f64>() {
                Ok(n) => json!(n),
                Err(_) => continue,
            },
            (AnswerValue::Text(t), Shape::Text | Shape::Other) => json!(t),
            (AnswerValue::List(l), _) => json!(l),
            (AnswerValue::Bool(b), _) => json!(b),
        };
        content.insert(name.clone(), value);
    }
    Value::Object(content)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "colour": {"type": "string", "title": "Colour?", "enum": ["red", "blue"], "default": "red"},
            "name": {"type": "string", "description": "Your name"},
            "sure": {"type": "boolean", "title": "Sure?", "default": true},
            "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b"]}},
            "size": {"type": "string", "title": "Size", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "count": {"type": "integer", "title": "How many?"},
        }, "required": ["colour"]})
    }

    #[test]
    fn a_schema_reads_as_questions_in_order() {
        let q = questions_of(&schema()).unwrap();
        let names: Vec<&str> = q.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["colour", "name", "sure", "tags", "size", "count"]);
        assert_eq!(
            q[0].1,
            Question {
                question: "Colour?".into(),
                kind: QuestionKind::Choice {
                    options: vec!["red".into(), "blue".into()],
                    default: Some("red".into())
                }
            }
        );
        assert_eq!(q[1].1.question, "Your name");
        assert_eq!(
            q[2].1.kind,
            QuestionKind::Confirm {
                default: Some(true)
            }
        );
        assert_eq!(
            q[3].1.kind,
            QuestionKind::Multi {
                options: vec!["a".into(), "b".into()],
                default: None
            }
        );
        assert_eq!(
            q[4].1.kind,
            QuestionKind::Choice {
                options: vec!["s".into(), "l".into()],
                default: None
            }
        );
        assert_eq!(q[5].1.kind, QuestionKind::Text { default: None });
    }

    #[test]
    fn a_field_the_forms_cannot_draw_refuses_the_whole_form() {
        let s = json!({"type": "object", "properties": {"x": {"type": "object"}}});
        assert_eq!(questions_of(&s), None);
        let s = json!({"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string"}}}});
        assert_eq!(questions_of(&s), None);
        assert_eq!(questions_of(&json!({"type": "object"})), Some(vec![]));
    }

    #[test]
    fn answers_go_back_by_property_name() {
        let answers = [
            AnswerValue::Text("blue".into()),
            AnswerValue::None,
            AnswerValue::Bool(false),
            AnswerValue::List(vec!["b".into()]),
            AnswerValue::Text("l".into()),
            AnswerValue::Text(" 3 ".into()),
        ];
        assert_eq!(
            content_of(&schema(), &answers),
            json!({"colour": "blue", "sure": false, "tags": ["b"], "size": "l", "count": 3})
        );
    }

    #[test]
    fn a_front_end_that_cannot_ask_rejects_once_or_cancels() {
        let option = |id: &str, kind| RelayedOption {
            id: id.into(),
            name: id.into(),
            kind,
        };
        let mut p = RelayedPermission {
            tool_call_id: "call_1".into(),
            title: "a: bash".into(),
            options: vec![
                option("yes", OptionKind::AllowOnce),
                option("no", OptionKind::RejectOnce),
            ],
        };
        assert_eq!(p.refusal(), Some("no".into()));
        p.options.pop();
        assert_eq!(p.refusal(), None);
        assert_eq!(
            OptionKind::from_name("reject_always"),
            Some(OptionKind::RejectAlways)
        );
        assert_eq!(OptionKind::from_name("maybe"), None);
    }
}
