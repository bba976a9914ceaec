//! A session's messages, in the shape of the session file, and their translation to the
//! OpenAI wire shape.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call the model made, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the model gave (what the `tool` message answers); the ref when it gave none.
    pub id: String,
    /// mm's own `call_N` ref (ACP `toolCallId`).
    #[serde(rename = "ref")]
    pub ref_: String,
    pub name: String,
    /// The arguments as the model wrote them (normally a JSON object as a string).
    pub arguments: String,
}

/// One message of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A user-role summary written by compression.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compact: bool,
    /// On a `tool` message: the call did not run or failed (replayed as `failed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// On a user message: mm's note of what happened since the last turn (what `/undo` put
    /// back), which the model reads before the user's words. Kept apart from `content` so that
    /// a replay shows it as mm's, not as the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content.into())
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content.into())
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls,
            ..Self::new(Role::Assistant, content.into())
        }
    }

    pub fn tool(call_id: impl Into<String>, content: impl Into<String>, failed: bool) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            failed,
            ..Self::new(Role::Tool, content.into())
        }
    }

    pub fn summary(content: impl Into<String>) -> Self {
        Message {
            compact: true,
            ..Self::new(Role::User, content.into())
        }
    }

    fn new(role: Role, content: String) -> Self {
        Message {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            compact: false,
            failed: false,
            note: None,
        }
    }

    /// A user message's text as the model reads it: mm's note, then the user's words.
    pub fn user_text(&self) -> std::borrow::Cow<'_, str> {
        match &self.note {
            Some(note) => format!("{note}\n\n{}", self.content).into(),
            None => self.content.as_str().into(),
        }
    }

    /// A user message that starts a turn (not a summary).
    pub fn starts_turn(&self) -> bool {
        self.role == Role::User && !self.compact
    }
}

/// What the next request supplies for a call left without a response.
pub const INTERRUPTED_RESULT: &str = "[no result: the call was interrupted]";

/// Translates the stored history into the messages of a Chat Completions request.
///
/// Two repairs happen here, never in the history itself: a tool call left without a response
/// gets [`INTERRUPTED_RESULT`] (servers reject a call without its response), and a summary is
/// merged into the next user message (strict chat templates reject two user messages in a row).
pub fn to_wire(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut pending_summary: Option<&str> = None;
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            Role::System => out.push(json!({"role": "system", "content": m.content})),
            Role::User if m.compact => {
                if let Some(prev) = pending_summary {
                    // Two summaries in a row: keep both.
                    out.push(json!({"role": "user", "content": prev}));
                }
                pending_summary = Some(&m.content);
            }
            Role::User => {
                let content = match pending_summary.take() {
                    Some(s) => format!("{s}\n\n{}", m.user_text()),
                    None => m.user_text().into_owned(),
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Role::Assistant => {
                if let Some(s) = pending_summary.take() {
                    out.push(json!({"role": "user", "content": s}));
                }
                let mut msg = json!({"role": "assistant", "content": m.content});
                if !m.tool_calls.is_empty() {
                    let calls: Vec<Value> = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
                // The responses that follow, in the calls' order; missing ones supplied.
                let mut j = i + 1;
                let mut answered: Vec<&Message> = Vec::new();
                while j < messages.len() && messages[j].role == Role::Tool {
                    answered.push(&messages[j]);
                    j += 1;
                }
                for c in &m.tool_calls {
                    let content = answered
                        .iter()
                        .find(|t| t.tool_call_id.as_deref() == Some(c.id.as_str()))
                        .map(|t| t.content.as_str())
                        .unwrap_or(INTERRUPTED_RESULT);
                    out.push(json!({"role": "tool", "tool_call_id": c.id, "content": content}));
                }
                i = j;
                continue;
            }
            // A tool message not following its call: an orphan, dropped from the request.
            Role::Tool => {}
        }
        i += 1;
    }
    if let Some(s) = pending_summary {
        out.push(json!({"role": "user", "content": s}));
    }
    out
}

/// The length of `to_wire(messages)` serialised message by message, computed without building
/// the JSON: the estimate runs on every turn and on `session/load`, where histories are long.
pub fn wire_chars(messages: &[Message]) -> usize {
    let text = |s: &str| json_str_len(s);
    // `{"role":"R","content":C}` with C's length given.
    let role_content = |role: &str, content_len: usize| 2 + 7 + text(role) + 1 + 10 + content_len;
    let mut total = 0;
    let mut pending_summary: Option<&str> = None;
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            Role::System => total += role_content("system", text(&m.content)),
            Role::User if m.compact => {
                if let Some(prev) = pending_summary {
                    total += role_content("user", text(prev));
                }
                pending_summary = Some(&m.content);
            }
            Role::User => {
                let said = m.user_text();
                let len = match pending_summary.take() {
                    // "s\n\nu": both strings' bodies plus the escaped blank line.
                    Some(s) => text(s) + text(&said) - 2 + 4,
                    None => text(&said),
                };
                total += role_content("user", len);
            }
            Role::Assistant => {
                if let Some(s) = pending_summary.take() {
                    total += role_content("user", text(s));
                }
                total += role_content("assistant", text(&m.content));
                if !m.tool_calls.is_empty() {
                    // ,"tool_calls":[…]
                    total += 1 + 12 + 1 + 2 + m.tool_calls.len() - 1;
                    for c in &m.tool_calls {
                        // {"id":I,"type":"function","function":{"name":N,"arguments":A}}
                        total += 2
                            + 5
                            + text(&c.id)
                            + 1
                            + 17
                            + 1
                            + 11
                            + 2
                            + 7
                            + text(&c.name)
                            + 1
                            + 12
                            + text(&c.arguments);
                    }
                }
                let mut j = i + 1;
                while j < messages.len() && messages[j].role == Role::Tool {
                    j += 1;
                }
                let answered = &messages[i + 1..j];
                for c in &m.tool_calls {
                    let content = answered
                        .iter()
                        .find(|t| t.tool_call_id.as_deref() == Some(c.id.as_str()))
                        .map(|t| t.content.as_str())
                        .unwrap_or(INTERRUPTED_RESULT);
                    // {"role":"tool","tool_call_id":I,"content":C}
                    total += 2 + 7 + 6 + 1 + 15 + text(&c.id) + 1 + 10 + text(content);
                }
                i = j;
                continue;
            }
            Role::Tool => {}
        }
        i += 1;
    }
    if let Some(s) = pending_summary {
        total += role_content("user", text(s));
    }
    total
}

/// The length of a string serialised as JSON (quotes and escapes included), as serde_json
/// writes it.
fn json_str_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// Number of messages without the system prompt.
pub fn count_without_system(messages: &[Message]) -> usize {
    messages.iter().filter(|m| m.role != Role::System).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            ref_: "call_1".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn interrupted_call_gets_a_result_in_the_request_only() {
        let h = vec![
            Message::system("s"),
            Message::user("u"),
            Message::assistant("", vec![call("a")]),
        ];
        let wire = to_wire(&h);
        assert_eq!(wire.len(), 4);
        assert_eq!(
            wire[3],
            json!({"role": "tool", "tool_call_id": "a", "content": INTERRUPTED_RESULT})
        );
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn summary_is_merged_into_the_next_user_message() {
        let h = vec![
            Message::system("s"),
            Message::summary("sum"),
            Message::user("next"),
        ];
        let wire = to_wire(&h);
        assert_eq!(
            wire,
            vec![
                json!({"role": "system", "content": "s"}),
                json!({"role": "user", "content": "sum\n\nnext"})
            ]
        );
    }

    #[test]
    fn a_note_is_read_before_the_user_words_in_the_same_message() {
        let mut noted = Message::user("next");
        noted.note = Some("[undo]".into());
        let h = vec![Message::system("s"), Message::summary("sum"), noted];
        let wire = to_wire(&h);
        assert_eq!(
            wire,
            vec![
                json!({"role": "system", "content": "s"}),
                json!({"role": "user", "content": "sum\n\n[undo]\n\nnext"})
            ]
        );
        let expected: usize = wire.iter().map(|v| v.to_string().len()).sum();
        assert_eq!(wire_chars(&h), expected);
        let stored = serde_json::to_value(&h[2]).unwrap_or_default();
        assert_eq!(
            stored,
            json!({"role": "user", "content": "next", "note": "[undo]"})
        );
    }

    #[test]
    fn wire_chars_is_the_length_of_the_serialised_request() {
        let h = vec![
            Message::system("sys \"quoted\" \\ path\n\ttab \u{1} é"),
            Message::summary("old summary"),
            Message::summary("second summary"),
            Message::user("hi\r\n"),
            Message::assistant("", vec![call("a"), call("b")]),
            Message::tool("a", "out\u{7f}", false),
            Message::assistant("done ✓", Vec::new()),
            Message::summary("trailing"),
            Message::assistant("after a summary", Vec::new()),
            Message::summary("last"),
        ];
        let expected: usize = to_wire(&h).iter().map(|v| v.to_string().len()).sum();
        assert_eq!(wire_chars(&h), expected);
        assert_eq!(
            wire_chars(&h[..4]),
            to_wire(&h[..4])
                .iter()
                .map(|v| v.to_string().len())
                .sum::<usize>()
        );
    }

    #[test]
    fn session_file_shape() {
        let m = Message::assistant("", vec![call("x1")]);
        let v = serde_json::to_value(&m).unwrap_or_default();
        assert_eq!(
            v,
            json!({"role": "assistant", "content": "", "toolCalls": [{"id": "x1", "ref": "call_1", "name": "bash", "arguments": "{}"}]})
        );
        let s = serde_json::to_value(Message::summary("x")).unwrap_or_default();
        assert_eq!(s, json!({"role": "user", "content": "x", "compact": true}));
    }
}
