//! Reading what the asked agent sends: its updates (the answer's text, its tool calls), its
//! permission requests, its error answers; and refusing what mm does not serve.

use agent_client_protocol::UntypedMessage;
use agent_client_protocol::v1::Responder;
use serde_json::Value;

use mm_core::relay::{OptionKind, RelayedOption};

/// Bytes of an answer kept; the rest is dropped, and [`CUT`] says so.
const MAX_ANSWER: usize = 8 << 20;
const CUT: &str = "\n[… the rest of the answer was dropped: over 8 MB …]";

/// The explanation an error response carries: mm's own `data.error`, a string `data`, else the
/// message.
pub(super) fn error_text(e: &agent_client_protocol::Error) -> String {
    match &e.data {
        Some(Value::Object(d)) if d.get("error").is_some_and(Value::is_string) => d
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Some(Value::String(s)) => format!("{}: {s}", e.message),
        Some(_) | None => e.message.clone(),
    }
}

pub(super) fn refuse(req: &UntypedMessage, responder: Responder<Value>) {
    let _ = responder.respond_with_error(
        agent_client_protocol::Error::method_not_found().data(req.method().to_string()),
    );
}

fn update_of(n: &UntypedMessage) -> Option<&Value> {
    (n.method() == "session/update")
        .then(|| n.params().get("update"))
        .flatten()
}

/// An `agent_message_chunk`'s text.
pub(super) fn chunk_text(n: &UntypedMessage) -> Option<&str> {
    let update = update_of(n)?;
    (update.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk"))
        .then(|| update.pointer("/content/text").and_then(Value::as_str))
        .flatten()
}

/// Adds an `agent_message_chunk`'s text to the answer.
pub(super) fn update_text(n: &UntypedMessage, collect: &mut Option<&mut String>) {
    let Some(text) = collect.as_deref_mut() else {
        return;
    };
    if let Some(t) = chunk_text(n) {
        // An agent that never stops talking must not exhaust our memory.
        if text.len() + t.len() <= MAX_ANSWER {
            text.push_str(t);
        } else if !text.ends_with(CUT) {
            text.push_str(CUT);
        }
    }
}

/// The title of a tool call the agent announced.
pub(super) fn started_tool_call(n: &UntypedMessage) -> Option<String> {
    let update = update_of(n)?;
    if update.get("sessionUpdate").and_then(Value::as_str) != Some("tool_call") {
        return None;
    }
    ["title", "toolCallId"]
        .iter()
        .find_map(|k| update.get(*k).and_then(Value::as_str))
        .map(|t| t.lines().next().unwrap_or_default().to_string())
}

/// A permission request's title and options (options of unknown kinds are left out).
pub(super) fn permission_of(params: &Value) -> (String, Vec<RelayedOption>) {
    let call = params.get("toolCall");
    let title = ["title", "toolCallId"]
        .iter()
        .find_map(|k| call.and_then(|c| c.get(*k)).and_then(Value::as_str))
        .unwrap_or("a tool call")
        .to_string();
    let options = params
        .get("options")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|o| {
                    Some(RelayedOption {
                        id: o.get("optionId")?.as_str()?.to_string(),
                        name: o.get("name")?.as_str()?.to_string(),
                        kind: OptionKind::from_name(o.get("kind")?.as_str()?)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    (title, options)
}

/// The ids of the modes a `session/new` result offers (`modes.availableModes[].id`).
pub(super) fn mode_ids(result: &Value) -> Vec<String> {
    result
        .pointer("/modes/availableModes")
        .and_then(Value::as_array)
        .map(|modes| {
            modes
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn note(update: Value) -> UntypedMessage {
        UntypedMessage::new(
            "session/update",
            json!({"sessionId": "S", "update": update}),
        )
        .unwrap()
    }

    #[test]
    fn updates_give_the_answer_and_the_tool_calls() {
        let mut text = String::new();
        update_text(
            &note(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi "}}),
            ),
            &mut Some(&mut text),
        );
        update_text(
            &note(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "no"}}),
            ),
            &mut Some(&mut text),
        );
        assert_eq!(text, "hi ");
        assert_eq!(
            started_tool_call(&note(
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash: ls\nmore"})
            )),
            Some("bash: ls".into())
        );
        assert_eq!(
            started_tool_call(&note(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1"})
            )),
            None
        );
    }

    #[test]
    fn permission_requests_keep_their_options() {
        let (title, options) = permission_of(&json!({"sessionId": "S",
        "toolCall": {"toolCallId": "c1", "title": "bash: rm x"},
        "options": [
            {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
            {"optionId": "odd", "name": "Odd", "kind": "sometimes"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ]}));
        assert_eq!(title, "bash: rm x");
        assert_eq!(
            options,
            vec![
                RelayedOption {
                    id: "ok".into(),
                    name: "Allow".into(),
                    kind: OptionKind::AllowOnce
                },
                RelayedOption {
                    id: "no".into(),
                    name: "Reject".into(),
                    kind: OptionKind::RejectOnce
                },
            ]
        );
    }

    #[test]
    fn the_offered_modes_are_read_as_written() {
        let r = json!({"sessionId": "S", "modes": {"currentModeId": "default", "availableModes": [
            {"id": "default", "name": "Default"}, {"id": "read-only", "name": "Read only"},
            {"name": "no id"}]}});
        assert_eq!(mode_ids(&r), ["default", "read-only"]);
        assert_eq!(mode_ids(&json!({"sessionId": "S"})), Vec::<String>::new());
    }

    #[test]
    fn error_answers_are_explained_by_their_data() {
        let e = agent_client_protocol::Error::internal_error().data(json!({"error": "model down"}));
        assert_eq!(error_text(&e), "model down");
        let e = agent_client_protocol::Error::method_not_found().data(json!("session/x"));
        assert_eq!(error_text(&e), "Method not found: session/x");
    }
}
