//! `session/request_permission` for a gated tool call, and the client's answer.

use serde_json::{Value, json};

use super::updates::{call_fields, diff_content};
use crate::event::{PermissionDecision, PermissionRequest};

/// The four options of a permission dialog.
const PERMISSION_OPTIONS: [(&str, &str, &str); 4] = [
    ("allow", "Allow", "allow_once"),
    ("allow_always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
    ("never", "Never", "reject_always"),
];

/// `session/request_permission` params for a gated call. The change the call would make, when
/// its tool can say (`write_file`, `edit_file`), goes as `diff` content of `toolCall`, so the
/// editor shows it before the user answers (docs/acp.md, beyond the reference).
pub fn permission_request(session_id: &str, request: &PermissionRequest) -> Value {
    let options: Vec<Value> = PERMISSION_OPTIONS
        .iter()
        .map(|(id, name, kind)| json!({"optionId": id, "name": name, "kind": kind}))
        .collect();
    let mut call = call_fields(&request.call);
    if !request.preview.is_empty() {
        let content: Vec<Value> = request.preview.iter().map(diff_content).collect();
        call.insert("content".into(), Value::Array(content));
    }
    json!({
        "sessionId": session_id,
        "toolCall": Value::Object(call),
        "options": options,
    })
}

/// The option the client selected; `None` for a cancelled outcome or a malformed answer.
pub(super) fn selected_option(response: &Value) -> Option<&str> {
    let outcome = response.get("outcome")?;
    match outcome.get("outcome")?.as_str()? {
        "selected" => outcome.get("optionId")?.as_str(),
        _ => None,
    }
}

/// The client's answer; a transport error, a cancelled outcome or an unknown option is a
/// rejection.
pub fn permission_decision(response: Result<&Value, &str>) -> PermissionDecision {
    match response.ok().and_then(selected_option) {
        Some("allow") => PermissionDecision::AllowOnce,
        Some("allow_always") => PermissionDecision::AllowAlways,
        Some("never") => PermissionDecision::Never,
        _ => PermissionDecision::RejectOnce,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{FileDiff, ToolCallStart, ToolKind};
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    fn request(preview: Vec<FileDiff>) -> PermissionRequest {
        PermissionRequest {
            call: start(),
            preview,
            rule: crate::event::AlwaysRule::Tool,
        }
    }

    fn start() -> ToolCallStart {
        ToolCallStart {
            id: "call_3".into(),
            name: "write_file".into(),
            title: "write_file: /w/a.txt".into(),
            kind: ToolKind::Edit,
            raw_input: json!({"path": "a.txt", "content": "x"}),
            locations: vec![PathBuf::from("/w/a.txt")],
        }
    }

    #[test]
    fn permission_request_and_answers() {
        assert_eq!(
            permission_request("S", &request(vec![])),
            json!({"sessionId": "S",
            "toolCall": {"toolCallId": "call_3", "title": "write_file: /w/a.txt", "kind": "edit",
                "rawInput": {"path": "a.txt", "content": "x"}, "locations": [{"path": "/w/a.txt"}]},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                {"optionId": "never", "name": "Never", "kind": "reject_always"},
            ]})
        );
        // The proposed change goes with the question.
        let with_diff = permission_request(
            "S",
            &request(vec![FileDiff {
                path: PathBuf::from("/w/a.txt"),
                old_text: None,
                new_text: "x".into(),
            }]),
        );
        assert_eq!(
            with_diff["toolCall"]["content"],
            json!([{"type": "diff", "path": "/w/a.txt", "oldText": null, "newText": "x"}])
        );
        let sel = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(
            permission_decision(Ok(&sel("allow"))),
            PermissionDecision::AllowOnce
        );
        assert_eq!(
            permission_decision(Ok(&sel("allow_always"))),
            PermissionDecision::AllowAlways
        );
        assert_eq!(
            permission_decision(Ok(&sel("reject"))),
            PermissionDecision::RejectOnce
        );
        assert_eq!(
            permission_decision(Ok(&sel("never"))),
            PermissionDecision::Never
        );
        assert_eq!(
            permission_decision(Ok(&sel("bogus"))),
            PermissionDecision::RejectOnce
        );
        assert_eq!(
            permission_decision(Ok(&json!({"outcome": {"outcome": "cancelled"}}))),
            PermissionDecision::RejectOnce
        );
        assert_eq!(
            permission_decision(Err("broken pipe")),
            PermissionDecision::RejectOnce
        );
    }
}
