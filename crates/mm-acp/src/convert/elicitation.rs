//! `ask_user` on the wire: one `elicitation/create` form when the client supports forms, else
//! one `session/request_permission` per question when every question is a choice; the answers
//! back.

use serde_json::{Map, Value, json};

use super::permission::selected_option;
use crate::event::{
    AnswerValue, Form, FormAnswer, NetworkAnswer, NetworkQuestion, Question, QuestionKind,
};

/// The reason given when the client can neither show a form nor ask choice by choice.
pub const NO_FORM_SUPPORT: &str = "the client has no form support";

/// The reason given when the client answered the question with an error.
pub fn client_error(e: &str) -> String {
    format!("the client answered with an error: {e}")
}

fn form_message(form: &Form) -> String {
    match form.questions.as_slice() {
        [only] => only.question.clone(),
        many => format!("The agent has {} questions for you.", many.len()),
    }
}

fn property_schema(q: &Question) -> Value {
    let mut m = Map::new();
    match &q.kind {
        QuestionKind::Choice { options, default } => {
            m.insert("type".into(), json!("string"));
            m.insert("title".into(), json!(q.question));
            m.insert("enum".into(), json!(options));
            if let Some(d) = default {
                m.insert("default".into(), json!(d));
            }
        }
        QuestionKind::Multi { options, default } => {
            m.insert("type".into(), json!("array"));
            m.insert("title".into(), json!(q.question));
            m.insert("items".into(), json!({"type": "string", "enum": options}));
            if let Some(d) = default {
                m.insert("default".into(), json!(d));
            }
        }
        QuestionKind::Text { default } => {
            m.insert("type".into(), json!("string"));
            m.insert("title".into(), json!(q.question));
            if let Some(d) = default {
                m.insert("default".into(), json!(d));
            }
        }
        QuestionKind::Confirm { default } => {
            m.insert("type".into(), json!("boolean"));
            m.insert("title".into(), json!(q.question));
            if let Some(d) = default {
                m.insert("default".into(), json!(d));
            }
        }
    }
    Value::Object(m)
}

/// `elicitation/create` params, in form mode, properties `q1`, `q2`… in order.
pub fn elicitation_request(session_id: &str, form: &Form) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (i, q) in form.questions.iter().enumerate() {
        let name = format!("q{}", i + 1);
        properties.insert(name.clone(), property_schema(q));
        required.push(name);
    }
    json!({
        "sessionId": session_id,
        "toolCallId": form.tool_call_id,
        "mode": "form",
        "message": form_message(form),
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
        "_meta": {"mm.elicitationScope": {"sessionId": session_id, "toolCallId": form.tool_call_id}},
    })
}

fn answer_value(v: Option<&Value>) -> AnswerValue {
    match v {
        Some(Value::String(s)) => AnswerValue::Text(s.clone()),
        Some(Value::Bool(b)) => AnswerValue::Bool(*b),
        Some(Value::Array(items)) => AnswerValue::List(
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
        ),
        Some(Value::Number(n)) => AnswerValue::Text(n.to_string()),
        Some(Value::Null | Value::Object(_)) | None => AnswerValue::None,
    }
}

/// The answer to an `elicitation/create`; `Err` is the error response's explanation.
pub fn form_answer(form: &Form, response: Result<&Value, &str>) -> FormAnswer {
    let response = match response {
        Ok(r) => r,
        Err(e) => return FormAnswer::Unavailable(client_error(e)),
    };
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = response.get("content");
            let answers = (1..=form.questions.len())
                .map(|i| answer_value(content.and_then(|c| c.get(format!("q{i}")))))
                .collect();
            FormAnswer::Accepted(answers)
        }
        Some("decline") => FormAnswer::Declined,
        _ => FormAnswer::Cancelled,
    }
}

/// The fence's network question as a form of one choice (docs/acp.md: a mid-call question is
/// not what `session/request_permission` means, so only a client with forms is asked): allow
/// once, allow the host for the session, or no; no "never".
pub fn network_form(q: &NetworkQuestion) -> Form {
    Form {
        tool_call_id: q.tool_call_id.clone(),
        questions: vec![Question {
            question: format!(
                "{} connects to {}, which tools.networkAllow does not name. Allow it?",
                q.asker,
                q.target()
            ),
            kind: QuestionKind::Choice {
                options: network_options(q).to_vec(),
                default: None,
            },
        }],
    }
}

/// The choices of [`network_form`], in the order of [`NetworkAnswer`]'s `Once`, `Session`, `No`.
fn network_options(q: &NetworkQuestion) -> [String; 3] {
    [
        "Allow once".to_string(),
        format!("Allow {} for this session", q.host),
        "No".to_string(),
    ]
}

/// What the answer to [`network_form`] allows: anything but one of the two allowing choices,
/// accepted, is `No`.
pub fn network_answer(q: &NetworkQuestion, answer: &FormAnswer) -> NetworkAnswer {
    let [once, session, _] = network_options(q);
    match answer {
        FormAnswer::Accepted(values) => match values.first() {
            Some(AnswerValue::Text(t)) if *t == once => NetworkAnswer::Once,
            Some(AnswerValue::Text(t)) if *t == session => NetworkAnswer::Session,
            Some(AnswerValue::Text(_) | AnswerValue::List(_) | AnswerValue::Bool(_))
            | Some(AnswerValue::None)
            | None => NetworkAnswer::No,
        },
        FormAnswer::Declined | FormAnswer::Cancelled | FormAnswer::Unavailable(_) => {
            NetworkAnswer::No
        }
    }
}

/// Whether a form can go as one permission request per question (only `choice` and `confirm`).
pub fn askable_by_permission(form: &Form) -> bool {
    form.questions.iter().all(|q| match q.kind {
        QuestionKind::Choice { .. } | QuestionKind::Confirm { .. } => true,
        QuestionKind::Multi { .. } | QuestionKind::Text { .. } => false,
    })
}

/// One question as a `session/request_permission`: options `0`, `1`… named after the choices
/// (`Yes`/`No` for a confirm), then `decline`.
pub fn question_request(session_id: &str, tool_call_id: &str, q: &Question) -> Value {
    let names: Vec<String> = match &q.kind {
        QuestionKind::Choice { options, .. } => options.clone(),
        QuestionKind::Confirm { .. } => vec!["Yes".into(), "No".into()],
        QuestionKind::Multi { options, .. } => options.clone(),
        QuestionKind::Text { .. } => Vec::new(),
    };
    let mut options: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"optionId": i.to_string(), "name": n, "kind": "allow_once"}))
        .collect();
    options.push(json!({"optionId": "decline", "name": "Decline", "kind": "reject_once"}));
    json!({
        "sessionId": session_id,
        "toolCall": {"toolCallId": tool_call_id, "title": format!("? {}", q.question), "kind": "other"},
        "options": options,
    })
}

/// What a question put as a permission request came back as.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionOutcome {
    Answer(AnswerValue),
    /// `decline` (or an option that does not exist).
    Declined,
    Cancelled,
    Unavailable(String),
}

pub fn question_answer(q: &Question, response: Result<&Value, &str>) -> QuestionOutcome {
    let response = match response {
        Ok(r) => r,
        Err(e) => return QuestionOutcome::Unavailable(client_error(e)),
    };
    let Some(option) = selected_option(response) else {
        return QuestionOutcome::Cancelled;
    };
    let Ok(index) = option.parse::<usize>() else {
        return QuestionOutcome::Declined;
    };
    match &q.kind {
        QuestionKind::Choice { options, .. } => {
            options.get(index).map_or(QuestionOutcome::Declined, |o| {
                QuestionOutcome::Answer(AnswerValue::Text(o.clone()))
            })
        }
        QuestionKind::Confirm { .. } => match index {
            0 => QuestionOutcome::Answer(AnswerValue::Bool(true)),
            1 => QuestionOutcome::Answer(AnswerValue::Bool(false)),
            _ => QuestionOutcome::Declined,
        },
        QuestionKind::Multi { .. } | QuestionKind::Text { .. } => QuestionOutcome::Declined,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn only_an_allowing_choice_accepted_allows_the_host() {
        let q = NetworkQuestion {
            tool_call_id: "call_1".into(),
            host: "example.com".into(),
            port: 443,
            asker: "curl https://example.com".into(),
        };
        let text = |t: &str| FormAnswer::Accepted(vec![AnswerValue::Text(t.into())]);
        assert_eq!(network_answer(&q, &text("Allow once")), NetworkAnswer::Once);
        assert_eq!(
            network_answer(&q, &text("Allow example.com for this session")),
            NetworkAnswer::Session
        );
        for refused in [
            text("No"),
            text("Allow other.com for this session"),
            FormAnswer::Accepted(vec![AnswerValue::None]),
            FormAnswer::Declined,
            FormAnswer::Cancelled,
            FormAnswer::Unavailable("gone".into()),
        ] {
            assert_eq!(network_answer(&q, &refused), NetworkAnswer::No);
        }
    }

    fn form() -> Form {
        let q = |question: &str, kind| Question {
            question: question.into(),
            kind,
        };
        Form {
            tool_call_id: "call_7".into(),
            questions: vec![
                q(
                    "Colour?",
                    QuestionKind::Choice {
                        options: vec!["red".into(), "blue".into()],
                        default: Some("red".into()),
                    },
                ),
                q(
                    "Which?",
                    QuestionKind::Multi {
                        options: vec!["a".into(), "b".into()],
                        default: None,
                    },
                ),
                q("Name?", QuestionKind::Text { default: None }),
                q(
                    "Sure?",
                    QuestionKind::Confirm {
                        default: Some(false),
                    },
                ),
                q(
                    "q5",
                    QuestionKind::Text {
                        default: Some("d".into()),
                    },
                ),
                q("q6", QuestionKind::Text { default: None }),
                q("q7", QuestionKind::Text { default: None }),
                q("q8", QuestionKind::Text { default: None }),
                q("q9", QuestionKind::Text { default: None }),
                q("q10", QuestionKind::Text { default: None }),
            ],
        }
    }

    #[test]
    fn elicitation_request_keeps_question_order() {
        let v = elicitation_request("S", &form());
        let text = serde_json::to_string(&v).unwrap();
        assert!(
            text.find("\"q9\"").unwrap() < text.find("\"q10\"").unwrap(),
            "{text}"
        );
        assert_eq!(v["message"], "The agent has 10 questions for you.");
        assert_eq!(v["sessionId"], "S");
        assert_eq!(v["toolCallId"], "call_7");
        assert_eq!(v["mode"], "form");
        assert_eq!(
            v["_meta"],
            json!({"mm.elicitationScope": {"sessionId": "S", "toolCallId": "call_7"}})
        );
        let p = &v["requestedSchema"]["properties"];
        assert_eq!(
            p["q1"],
            json!({"type": "string", "title": "Colour?", "enum": ["red", "blue"], "default": "red"})
        );
        assert_eq!(
            p["q2"],
            json!({"type": "array", "title": "Which?", "items": {"type": "string", "enum": ["a", "b"]}})
        );
        assert_eq!(p["q3"], json!({"type": "string", "title": "Name?"}));
        assert_eq!(
            p["q4"],
            json!({"type": "boolean", "title": "Sure?", "default": false})
        );
        assert_eq!(v["requestedSchema"]["required"][9], "q10");
        let mut one = form();
        one.questions.truncate(1);
        assert_eq!(elicitation_request("S", &one)["message"], "Colour?");
    }

    #[test]
    fn elicitation_answers() {
        let mut f = form();
        f.questions.truncate(4);
        let ok = json!({"action": "accept", "content": {"q1": "blue", "q2": ["a"], "q4": true}});
        assert_eq!(
            form_answer(&f, Ok(&ok)),
            FormAnswer::Accepted(vec![
                AnswerValue::Text("blue".into()),
                AnswerValue::List(vec!["a".into()]),
                AnswerValue::None,
                AnswerValue::Bool(true),
            ])
        );
        assert_eq!(
            form_answer(&f, Ok(&json!({"action": "decline"}))),
            FormAnswer::Declined
        );
        assert_eq!(
            form_answer(&f, Ok(&json!({"action": "cancel"}))),
            FormAnswer::Cancelled
        );
        assert_eq!(
            form_answer(&f, Err("Internal error")),
            FormAnswer::Unavailable("the client answered with an error: Internal error".into())
        );
    }

    #[test]
    fn questions_as_permission_requests() {
        let f = form();
        assert!(!askable_by_permission(&f));
        let mut g = form();
        g.questions = vec![g.questions[0].clone(), g.questions[3].clone()];
        assert!(askable_by_permission(&g));
        assert_eq!(
            question_request("S", "call_7", &g.questions[0]),
            json!({"sessionId": "S", "toolCall": {"toolCallId": "call_7", "title": "? Colour?", "kind": "other"},
            "options": [
                {"optionId": "0", "name": "red", "kind": "allow_once"},
                {"optionId": "1", "name": "blue", "kind": "allow_once"},
                {"optionId": "decline", "name": "Decline", "kind": "reject_once"},
            ]})
        );
        assert_eq!(
            question_request("S", "call_7", &g.questions[1])["options"],
            json!([
                {"optionId": "0", "name": "Yes", "kind": "allow_once"},
                {"optionId": "1", "name": "No", "kind": "allow_once"},
                {"optionId": "decline", "name": "Decline", "kind": "reject_once"},
            ])
        );
        let sel = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(
            question_answer(&g.questions[0], Ok(&sel("1"))),
            QuestionOutcome::Answer(AnswerValue::Text("blue".into()))
        );
        assert_eq!(
            question_answer(&g.questions[1], Ok(&sel("1"))),
            QuestionOutcome::Answer(AnswerValue::Bool(false))
        );
        assert_eq!(
            question_answer(&g.questions[1], Ok(&sel("decline"))),
            QuestionOutcome::Declined
        );
        assert_eq!(
            question_answer(
                &g.questions[1],
                Ok(&json!({"outcome": {"outcome": "cancelled"}}))
            ),
            QuestionOutcome::Cancelled
        );
    }
}
