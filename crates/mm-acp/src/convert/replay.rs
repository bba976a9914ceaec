//! A stored history as its `session/load` replay.

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::SessionUpdate;
use serde_json::{Value, json};

use super::updates::{
    announced, notification, subagent_ended, subagent_started, text_content, wire,
};
use crate::event::ToolCallStart;
use crate::history::{Message, Role, ToolCall};
use crate::session::ChildSession;

/// A whole JSON-RPC notification as one line of the transport, newline included.
pub fn notification_line(method: &str, params: Value) -> String {
    let mut line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
    line.push('\n');
    line
}

/// The replay of a stored history as transport lines, one `session/update` notification each
/// (the system prompt is not sent). `describe` gives a stored call's title, kind and `rawInput`
/// as the live tool would. `children` are the `task` calls' children to show (a client that
/// advertised `subagents`; none otherwise): each is replayed before its call as it was live,
/// announced on the parent, its own history on its id, idle. Text chunks are written without
/// building JSON maps: a long session replays thousands of them.
pub fn replay_lines(
    session_id: &str,
    history: &[Message],
    children: &[ChildSession],
    describe: &dyn Fn(&ToolCall) -> ToolCallStart,
) -> String {
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let head = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":{},\"update\":",
        quoted(session_id)
    );
    let mut out = String::new();
    let text_line = |kind: &str, text: &str, out: &mut String| {
        out.push_str(&head);
        out.push_str("{\"sessionUpdate\":\"");
        out.push_str(kind);
        out.push_str("\",\"content\":{\"type\":\"text\",\"text\":");
        out.push_str(&quoted(text));
        out.push_str("}}}}\n");
    };
    for (i, m) in history.iter().enumerate() {
        match m.role {
            Role::System | Role::Tool => {}
            Role::User if m.compact => text_line(
                "agent_message_chunk",
                &format!("🗜️ {}", m.content),
                &mut out,
            ),
            Role::User => {
                // mm's note (what /undo did) is shown as the agent's, before the user's words.
                if let Some(note) = &m.note {
                    text_line("agent_message_chunk", note, &mut out);
                }
                text_line("user_message_chunk", &m.content, &mut out)
            }
            Role::Assistant => {
                if !m.content.is_empty() {
                    text_line("agent_message_chunk", &m.content, &mut out);
                }
                for call in &m.tool_calls {
                    if let Some(child) = children.iter().find(|c| c.call == call.ref_) {
                        out.push_str(&replayed_child(session_id, child, describe));
                    }
                    let response = history[i + 1..]
                        .iter()
                        .take_while(|t| t.role == Role::Tool)
                        .find(|t| t.tool_call_id.as_deref() == Some(call.id.as_str()));
                    out.push_str(&notification_line(
                        "session/update",
                        notification(session_id, replayed_call(call, response, describe)),
                    ));
                }
            }
        }
    }
    out
}

/// A `task` call's child as a client that is shown subagents saw it live: announced on the
/// parent, its history on its own id, then idle with why it stopped.
fn replayed_child(
    parent: &str,
    child: &ChildSession,
    describe: &dyn Fn(&ToolCall) -> ToolCallStart,
) -> String {
    let on_parent = |update| notification_line("session/update", notification(parent, update));
    let mut out = on_parent(subagent_started(&child.id, &child.description, false));
    out.push_str(&replay_lines(&child.id, &child.messages, &[], describe));
    out.push_str(&on_parent(subagent_ended(&child.id, child.end)));
    out
}

fn replayed_call(
    call: &ToolCall,
    response: Option<&Message>,
    describe: &dyn Fn(&ToolCall) -> ToolCallStart,
) -> Value {
    let mut start = describe(call);
    start.id = call.ref_.clone();
    let announced = announced(&start);
    // The `tool` message fills its call's output and content, whether the call completed or
    // failed live (docs/acp-reference.md); a call without one is `failed` with no content.
    let replayed = match response {
        Some(t) => announced
            .status(match t.failed {
                true => acp::ToolCallStatus::Failed,
                false => acp::ToolCallStatus::Completed,
            })
            .content(vec![text_content(t.content.clone())])
            .raw_output(json!({"output": t.content})),
        None => announced.status(acp::ToolCallStatus::Failed),
    };
    wire(SessionUpdate::ToolCall(replayed))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::ToolKind;
    use pretty_assertions::assert_eq;

    /// The `update` of every line, each line checked to be a whole `session/update` notification
    /// for `session` and nothing more.
    fn updates_of(session: &str, lines: &str) -> Vec<Value> {
        assert!(lines.is_empty() || lines.ends_with('\n'), "{lines:?}");
        lines
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let update = v["params"]["update"].clone();
                assert_eq!(
                    v,
                    json!({"jsonrpc": "2.0", "method": "session/update",
                        "params": {"sessionId": session, "update": update}})
                );
                update
            })
            .collect()
    }

    #[test]
    fn replay_lines_are_notifications_with_escaped_text() {
        let call = ToolCall {
            id: "x1".into(),
            ref_: "call_7".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        };
        let history = vec![
            Message::system("s"),
            Message::summary("sum \"q\"\n"),
            Message::user("hi\tthere é"),
            Message::assistant("let me look", vec![call]),
            Message::tool("x1", "a\nb", false),
            Message::assistant("done", Vec::new()),
        ];
        let describe = |c: &ToolCall| ToolCallStart {
            id: String::new(),
            name: c.name.clone(),
            title: "bash: ls".to_string(),
            kind: ToolKind::Execute,
            raw_input: json!({"command": "ls"}),
            locations: Vec::new(),
        };
        let lines = replay_lines("S", &history, &[], &describe);
        assert_eq!(
            updates_of("S", &lines),
            vec![
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "🗜️ sum \"q\"\n"}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi\tthere é"}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "let me look"}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_7", "title": "bash: ls", "kind": "execute",
                    "rawInput": {"command": "ls"}, "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}],
                    "rawOutput": {"output": "a\nb"}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
            ]
        );
    }

    #[test]
    fn an_undo_note_replays_as_the_agent_s_before_the_user_s_words() {
        let mut prompt = Message::user("go on");
        prompt.note = Some("[/undo] turn 1 undone".into());
        let describe = |_: &ToolCall| unreachable!("no call");
        let lines = replay_lines("S", &[Message::system("s"), prompt], &[], &describe);
        assert_eq!(
            updates_of("S", &lines),
            vec![
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "[/undo] turn 1 undone"}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "go on"}}),
            ]
        );
    }

    #[test]
    fn replay_of_a_stored_history() {
        let call = |id: &str, r: &str, args: &str| ToolCall {
            id: id.into(),
            ref_: r.into(),
            name: "bash".into(),
            arguments: args.into(),
        };
        let history = vec![
            Message::system("sys"),
            Message::summary("earlier work"),
            Message::user("list files"),
            Message::assistant(
                "Sure.",
                vec![
                    call("m1", "call_4", r#"{"command":"ls"}"#),
                    call("m2", "call_5", "{}"),
                    call("m3", "call_6", "x"),
                ],
            ),
            Message::tool("m1", "a\nb", false),
            Message::tool("m2", "[command rejected by the user]", true),
            Message::assistant("", vec![]),
            Message::assistant("done", vec![]),
        ];
        let describe = |c: &ToolCall| ToolCallStart {
            id: String::new(),
            name: c.name.clone(),
            title: format!("bash: {}", c.arguments),
            kind: ToolKind::Execute,
            raw_input: serde_json::from_str(&c.arguments)
                .unwrap_or(Value::String(c.arguments.clone())),
            locations: vec![],
        };
        assert_eq!(
            updates_of("S", &replay_lines("S", &history, &[], &describe)),
            vec![
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "🗜️ earlier work"}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "list files"}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Sure."}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_4", "title": "bash: {\"command\":\"ls\"}", "kind": "execute",
                    "rawInput": {"command": "ls"}, "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}],
                    "rawOutput": {"output": "a\nb"}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_5", "title": "bash: {}", "kind": "execute",
                    "rawInput": {}, "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "[command rejected by the user]"}}],
                    "rawOutput": {"output": "[command rejected by the user]"}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_6", "title": "bash: x", "kind": "execute",
                    "rawInput": "x", "status": "failed"}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
            ]
        );
    }
}
