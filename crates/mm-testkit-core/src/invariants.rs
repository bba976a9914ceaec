//! The history invariants real servers enforce, checked by the fake server on every request.
#![allow(dead_code)]

use serde_json::Value;

/// The history invariants real servers enforce; one line per problem, empty when the messages
/// are fine:
/// - every `tool` message answers a call of the latest assistant message not answered yet;
/// - every assistant tool call is answered before the next non-tool message and before the end;
/// - no two `user` messages in a row.
pub fn check_history(messages: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    // Calls of the latest assistant message still waiting for their answer.
    let mut open: Vec<String> = Vec::new();
    let mut open_from = 0;
    let mut prev_role = "";
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "tool" {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
            match open.iter().position(|o| o == id) {
                Some(p) => {
                    open.remove(p);
                }
                None => problems.push(format!(
                    "message {i} (tool) answers tool call {id:?}, which no earlier assistant \
                     tool call left unanswered"
                )),
            }
        } else {
            if !open.is_empty() {
                problems.push(format!(
                    "message {i} ({role}) comes before the answer to tool call(s) {} of \
                     message {open_from}",
                    quoted(&open)
                ));
            }
            open.clear();
            if role == "user" && prev_role == "user" {
                problems.push(format!(
                    "messages {} and {i} are two user messages in a row",
                    i - 1
                ));
            }
            if role == "assistant" {
                open = call_ids(m);
                open_from = i;
            }
        }
        prev_role = role;
    }
    if !open.is_empty() {
        problems.push(format!(
            "the request ends before the answer to tool call(s) {} of message {open_from}",
            quoted(&open)
        ));
    }
    problems
}

fn call_ids(m: &Value) -> Vec<String> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    c.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("{id:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `system, user, assistant[a, b], tool(a), tool(b)`: the shape of a request, for error messages.
pub fn describe_roles(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
            match role {
                "assistant" if m.get("tool_calls").is_some() => {
                    format!("assistant[{}]", call_ids(m).join(", "))
                }
                "tool" => format!(
                    "tool({})",
                    m.get("tool_call_id").and_then(Value::as_str).unwrap_or("")
                ),
                r => r.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The messages of a history written as [`describe_roles`] writes one: `system, user,
    /// assistant[a, b], tool(a), assistant` (an assistant without brackets answers in text).
    fn history(shape: &str) -> Vec<Value> {
        let mut messages = Vec::new();
        let mut rest = shape;
        while !rest.is_empty() {
            let end = match rest.find('[') {
                Some(open) if rest[..open].find(',').is_none() => {
                    rest.find(']').map_or(rest.len(), |close| close + 1)
                }
                _ => rest.find(',').unwrap_or(rest.len()),
            };
            let (item, tail) = rest.split_at(end);
            rest = tail.trim_start_matches(',').trim_start();
            let message = match item.trim() {
                role @ ("system" | "user") => json!({"role": role, "content": "x"}),
                "assistant" => json!({"role": "assistant", "content": "t"}),
                call if call.starts_with("assistant[") => {
                    let ids = call["assistant[".len()..call.len() - 1].split(", ");
                    let calls: Vec<Value> = ids
                        .map(|id| json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}))
                        .collect();
                    json!({"role": "assistant", "content": "", "tool_calls": calls})
                }
                tool => {
                    let id = tool.trim_start_matches("tool(").trim_end_matches(')');
                    json!({"role": "tool", "tool_call_id": id, "content": "r"})
                }
            };
            messages.push(message);
        }
        messages
    }

    const UNANSWERED: &str = "which no earlier assistant tool call left unanswered";

    #[test]
    fn history_invariants() {
        let rows: &[(&str, &[&str])] = &[
            (
                "system, user, assistant[a, b], tool(b), tool(a), assistant[c], tool(c), assistant, user",
                &[],
            ),
            (
                "system, user, assistant[a], tool(z)",
                &[
                    "message 3 (tool) answers tool call \"z\", UNANSWERED",
                    "the request ends before the answer to tool call(s) \"a\" of message 2",
                ],
            ),
            (
                "user, assistant[a], tool(a), tool(a)",
                &["message 3 (tool) answers tool call \"a\", UNANSWERED"],
            ),
            (
                "system, user, user",
                &["messages 1 and 2 are two user messages in a row"],
            ),
            (
                "user, assistant[a, b], tool(a), assistant",
                &[
                    "message 3 (assistant) comes before the answer to tool call(s) \"b\" of message 1",
                ],
            ),
            // An answer to a call of an older assistant message, after a newer one.
            (
                "user, assistant[a], assistant[b], tool(b), tool(a)",
                &[
                    "message 2 (assistant) comes before the answer to tool call(s) \"a\" of message 1",
                    "message 4 (tool) answers tool call \"a\", UNANSWERED",
                ],
            ),
        ];
        for (shape, problems) in rows {
            let messages = history(shape);
            assert_eq!(describe_roles(&messages), *shape, "the table's notation");
            let problems: Vec<String> = problems
                .iter()
                .map(|p| p.replace("UNANSWERED", UNANSWERED))
                .collect();
            assert_eq!(check_history(&messages), problems, "{shape}");
        }
    }
}
