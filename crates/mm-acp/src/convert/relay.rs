//! Another agent's questions relayed to our client (agents.md, step 5): its permission request
//! as our own `session/request_permission` for our `ask_agent` call (title `<agent>: <its
//! title>`, its options unchanged), its form as our own `elicitation/create` (its schema
//! unchanged); and the answers back.

use serde_json::{Value, json};

use super::elicitation::client_error;
use super::permission::selected_option;
use crate::relay::{RelayedAnswer, RelayedForm, RelayedPermission};

/// `session/request_permission` params for a relayed permission request.
pub fn relayed_permission_request(session_id: &str, request: &RelayedPermission) -> Value {
    let options: Vec<Value> = request
        .options
        .iter()
        .map(|o| json!({"optionId": o.id, "name": o.name, "kind": o.kind.name()}))
        .collect();
    json!({
        "sessionId": session_id,
        "toolCall": {"toolCallId": request.tool_call_id, "title": request.title},
        "options": options,
    })
}

/// The option our client chose, `None` for cancelled (or a failed request).
pub fn relayed_choice(response: Result<&Value, &str>) -> Option<String> {
    response.ok().and_then(selected_option).map(str::to_string)
}

/// `elicitation/create` params for a relayed form: its message and schema as they came, scoped
/// to our `ask_agent` call like our own forms.
pub fn relayed_elicitation_request(session_id: &str, form: &RelayedForm) -> Value {
    json!({
        "sessionId": session_id,
        "toolCallId": form.tool_call_id,
        "mode": "form",
        "message": form.message,
        "requestedSchema": form.schema,
        "_meta": {"mm.elicitationScope": {"sessionId": session_id, "toolCallId": form.tool_call_id}},
    })
}

/// Our client's answer to a relayed form; `Err` is an error response's explanation.
pub fn relayed_answer(response: Result<&Value, &str>) -> RelayedAnswer {
    let response = match response {
        Ok(r) => r,
        Err(e) => return RelayedAnswer::Unavailable(client_error(e)),
    };
    match response.get("action").and_then(Value::as_str) {
        Some("accept") => RelayedAnswer::Accepted(
            response
                .get("content")
                .cloned()
                .unwrap_or_else(|| json!({})),
        ),
        Some("decline") => RelayedAnswer::Declined,
        _ => RelayedAnswer::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::relay::{OptionKind, RelayedOption};
    use pretty_assertions::assert_eq;

    #[test]
    fn a_relayed_permission_keeps_the_agents_options() {
        let request = RelayedPermission {
            tool_call_id: "call_4".into(),
            title: "reviewer: bash: rm x".into(),
            options: vec![
                RelayedOption {
                    id: "proceed_once".into(),
                    name: "Yes".into(),
                    kind: OptionKind::AllowOnce,
                },
                RelayedOption {
                    id: "cancel".into(),
                    name: "No".into(),
                    kind: OptionKind::RejectOnce,
                },
            ],
        };
        assert_eq!(
            relayed_permission_request("S", &request),
            json!({"sessionId": "S",
            "toolCall": {"toolCallId": "call_4", "title": "reviewer: bash: rm x"},
            "options": [
                {"optionId": "proceed_once", "name": "Yes", "kind": "allow_once"},
                {"optionId": "cancel", "name": "No", "kind": "reject_once"},
            ]})
        );
        let sel = json!({"outcome": {"outcome": "selected", "optionId": "cancel"}});
        assert_eq!(relayed_choice(Ok(&sel)), Some("cancel".into()));
        let cancelled = json!({"outcome": {"outcome": "cancelled"}});
        assert_eq!(relayed_choice(Ok(&cancelled)), None);
        assert_eq!(relayed_choice(Err("closed")), None);
    }

    #[test]
    fn a_relayed_form_goes_unchanged_and_comes_back() {
        let schema = json!({"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "boolean"}}});
        let form = RelayedForm {
            tool_call_id: "call_4".into(),
            agent: "reviewer".into(),
            message: "Details?".into(),
            schema: schema.clone(),
        };
        let v = relayed_elicitation_request("S", &form);
        assert_eq!(v["requestedSchema"], schema);
        assert!(v.to_string().contains(r#""properties":{"z":"#), "{v}");
        assert_eq!(v["toolCallId"], "call_4");
        assert_eq!(v["mode"], "form");
        assert_eq!(
            relayed_answer(Ok(&json!({"action": "accept", "content": {"z": "x"}}))),
            RelayedAnswer::Accepted(json!({"z": "x"}))
        );
        assert_eq!(
            relayed_answer(Ok(&json!({"action": "decline"}))),
            RelayedAnswer::Declined
        );
        assert_eq!(
            relayed_answer(Ok(&json!({"action": "cancel"}))),
            RelayedAnswer::Cancelled
        );
        assert_eq!(
            relayed_answer(Err("no")),
            RelayedAnswer::Unavailable("the client answered with an error: no".into())
        );
    }
}
