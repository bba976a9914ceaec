//! The `ask_user` tool (tools.md): the model puts questions to the user, through whatever front
//! end runs the session (acp.md, `elicitation/create`; the terminal's forms).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::{AnswerValue, FormAnswer, Question, QuestionKind, ToolKind};

/// What the model receives when the user declined the form.
pub const DECLINED: &str = "[the user declined to answer]";
/// What the model receives when the question was cancelled (Ctrl-C on it, the client's
/// `cancel`, the turn cancelled).
pub const CANCELLED: &str = "[the question was cancelled]";

pub struct AskUser;

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(_setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(AskUser))
}

/// Its derived schema is not what the model sees (`parameters` is written by hand).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    questions: Vec<QuestionArg>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct QuestionArg {
    question: String,
    #[serde(rename = "type")]
    kind: Type,
    #[serde(default)]
    options: Option<Vec<String>>,
    #[serde(default)]
    default: Option<Value>,
}

#[derive(Deserialize, schemars::JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Type {
    Choice,
    Multi,
    Text,
    Confirm,
}

impl Describe for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }
    fn description(&self) -> &str {
        "Ask the user questions when you cannot decide alone."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Other
    }
    fn title(&self, _args: &Value) -> String {
        "ask_user".into()
    }
}

#[async_trait]
impl TypedTool for AskUser {
    type Args = Args;

    /// Written by hand: the derived schema (nested `$defs`, nullable options, `default: null`)
    /// is more than twice as long, and it is paid on every request.
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"questions": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "type": {"enum": ["choice", "multi", "text", "confirm"]},
                    "options": {"type": "array", "items": {"type": "string"}},
                    "default": {},
                },
                "required": ["question", "type"],
            }}},
            "required": ["questions"],
        })
    }
    fn gated(&self, _args: &Args) -> bool {
        false
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let questions = match questions(args) {
            Ok(q) => q,
            Err(why) => {
                return ToolOutput::not_run(format!("[bad arguments for ask_user: {why}]"));
            }
        };
        let answer = call.ask_user(questions.clone()).await;
        result(&questions, answer)
    }
}

/// The questions the arguments describe, or the mistake.
fn questions(args: Args) -> Result<Vec<Question>, String> {
    if args.questions.is_empty() {
        return Err("questions is empty: ask at least one".into());
    }
    args.questions
        .into_iter()
        .enumerate()
        .map(|(i, q)| question(q).map_err(|e| format!("question {}: {e}", i + 1)))
        .collect()
}

fn question(q: QuestionArg) -> Result<Question, String> {
    let options = || match &q.options {
        Some(o) if !o.is_empty() => Ok(o.clone()),
        _ => Err("a choice or multi question needs options".to_string()),
    };
    let not_an_option = |d: &str| format!("the default {d:?} is not among the options");
    let kind = match (q.kind, &q.default) {
        (Type::Choice, default) => {
            let options = options()?;
            let default = match default {
                None => None,
                Some(Value::String(d)) if options.contains(d) => Some(d.clone()),
                Some(Value::String(d)) => return Err(not_an_option(d)),
                Some(_) => return Err("the default of a choice is a string".into()),
            };
            QuestionKind::Choice { options, default }
        }
        (Type::Multi, default) => {
            let options = options()?;
            let default = match default {
                None => None,
                Some(Value::Array(items)) => {
                    let mut list = Vec::new();
                    for item in items {
                        match item.as_str() {
                            Some(d) if options.iter().any(|o| o == d) => list.push(d.to_string()),
                            Some(d) => return Err(not_an_option(d)),
                            None => {
                                return Err("the default of a multi is a list of strings".into());
                            }
                        }
                    }
                    Some(list)
                }
                Some(_) => return Err("the default of a multi is a list of strings".into()),
            };
            QuestionKind::Multi { options, default }
        }
        (Type::Text, None) => QuestionKind::Text { default: None },
        (Type::Text, Some(Value::String(d))) => QuestionKind::Text {
            default: Some(d.clone()),
        },
        (Type::Text, Some(_)) => return Err("the default of a text question is a string".into()),
        (Type::Confirm, None) => QuestionKind::Confirm { default: None },
        (Type::Confirm, Some(Value::Bool(b))) => QuestionKind::Confirm { default: Some(*b) },
        (Type::Confirm, Some(_)) => return Err("the default of a confirm is a boolean".into()),
    };
    Ok(Question {
        question: q.question,
        kind,
    })
}

/// What the model receives (tools.md).
fn result(questions: &[Question], answer: FormAnswer) -> ToolOutput {
    match answer {
        FormAnswer::Accepted(values) => {
            let lines: Vec<String> = questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let value = values.get(i).unwrap_or(&AnswerValue::None);
                    format!("{} → {}", q.question, answer_text(value))
                })
                .collect();
            ToolOutput::completed(lines.join("\n"))
        }
        FormAnswer::Declined => ToolOutput::completed(DECLINED),
        FormAnswer::Cancelled => ToolOutput::interrupted(CANCELLED),
        FormAnswer::Unavailable(why) => {
            ToolOutput::not_run(format!("[nobody can be asked: {why}]"))
        }
    }
}

fn answer_text(value: &AnswerValue) -> String {
    match value {
        AnswerValue::Text(t) if !t.is_empty() => t.clone(),
        AnswerValue::List(items) if !items.is_empty() => items.join(", "),
        AnswerValue::Bool(true) => "yes".into(),
        AnswerValue::Bool(false) => "no".into(),
        AnswerValue::Text(_) | AnswerValue::List(_) | AnswerValue::None => "(no answer)".into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(v: Value) -> Result<Vec<Question>, String> {
        questions(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn the_four_kinds_with_their_defaults() {
        let q = parse(json!({"questions": [
            {"question": "Colour?", "type": "choice", "options": ["red", "blue"], "default": "blue"},
            {"question": "Which?", "type": "multi", "options": ["a", "b"], "default": ["a"]},
            {"question": "Name?", "type": "text", "default": "Bob"},
            {"question": "Sure?", "type": "confirm", "default": false},
        ]}))
        .unwrap();
        assert_eq!(
            q.iter().map(|q| q.kind.clone()).collect::<Vec<_>>(),
            vec![
                QuestionKind::Choice {
                    options: vec!["red".into(), "blue".into()],
                    default: Some("blue".into())
                },
                QuestionKind::Multi {
                    options: vec!["a".into(), "b".into()],
                    default: Some(vec!["a".into()])
                },
                QuestionKind::Text {
                    default: Some("Bob".into())
                },
                QuestionKind::Confirm {
                    default: Some(false)
                },
            ]
        );
    }

    #[test]
    fn bad_arguments_are_explained() {
        let cases = [
            (
                json!({"questions": []}),
                "questions is empty: ask at least one",
            ),
            (
                json!({"questions": [{"question": "?", "type": "choice"}]}),
                "question 1: a choice or multi question needs options",
            ),
            (
                json!({"questions": [{"question": "?", "type": "text"}, {"question": "?", "type": "multi", "options": []}]}),
                "question 2: a choice or multi question needs options",
            ),
            (
                json!({"questions": [{"question": "?", "type": "choice", "options": ["a"], "default": "b"}]}),
                "question 1: the default \"b\" is not among the options",
            ),
            (
                json!({"questions": [{"question": "?", "type": "multi", "options": ["a"], "default": ["a", "c"]}]}),
                "question 1: the default \"c\" is not among the options",
            ),
            (
                json!({"questions": [{"question": "?", "type": "confirm", "default": "yes"}]}),
                "question 1: the default of a confirm is a boolean",
            ),
            (
                json!({"questions": [{"question": "?", "type": "text", "default": 3}]}),
                "question 1: the default of a text question is a string",
            ),
        ];
        for (args, why) in cases {
            assert_eq!(parse(args.clone()), Err(why.to_string()), "{args}");
        }
    }

    #[test]
    fn the_result_lines() {
        let q = parse(json!({"questions": [
            {"question": "Colour?", "type": "choice", "options": ["red", "blue"]},
            {"question": "Which?", "type": "multi", "options": ["a", "b"]},
            {"question": "Name?", "type": "text"},
            {"question": "Sure?", "type": "confirm"},
        ]}))
        .unwrap();
        let out = result(
            &q,
            FormAnswer::Accepted(vec![
                AnswerValue::Text("blue".into()),
                AnswerValue::List(vec!["a".into(), "b".into()]),
                AnswerValue::None,
                AnswerValue::Bool(false),
            ]),
        );
        assert_eq!(
            out,
            ToolOutput::completed("Colour? → blue\nWhich? → a, b\nName? → (no answer)\nSure? → no")
        );
        assert_eq!(
            result(&q, FormAnswer::Declined),
            ToolOutput::completed(DECLINED)
        );
        assert_eq!(
            result(&q, FormAnswer::Cancelled),
            ToolOutput::interrupted(CANCELLED)
        );
        assert_eq!(
            result(&q, FormAnswer::Unavailable("no terminal to ask".into())),
            ToolOutput::not_run("[nobody can be asked: no terminal to ask]")
        );
    }
}
