//! Engine events as `session/update` payloads (or stderr lines), and the updates a session
//! sends on its own: tool calls, context usage, the plan, the available commands.

use serde_json::{Map, Value, json};

use crate::event::{
    CompactionEnd, ContextUsage, Event, FileDiff, Plan, PlanStatus, ToolCallEnd, ToolCallStart,
    ToolKind, ToolStatus,
};

/// What one engine event becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The `update` of a `session/update` notification.
    Update(Value),
    /// A line for stderr.
    Log(String),
    /// A `compaction_update`: sent only to a client that advertised the `session.compaction`
    /// capability (the protocol allows it only then).
    Compaction(Value),
}

/// The one exhaustive match on [`Event`].
pub fn translate(session_id: &str, event: Event) -> Output {
    match event {
        Event::Text(text) => Output::Update(chunk("agent_message_chunk", &text)),
        Event::Thought(text) => Output::Update(chunk("agent_thought_chunk", &text)),
        Event::Notice(text) => Output::Update(chunk("agent_message_chunk", &text)),
        Event::ToolCallStarted(start) => Output::Update(tool_call(&start)),
        Event::ToolCallRunning { id } => Output::Update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "status": "in_progress",
        })),
        Event::ToolCallProgress { id, text } => Output::Update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "content": [text_content(&text)],
        })),
        Event::ToolCallFinished(end) => Output::Update(tool_call_finished(&end)),
        Event::ContextUsage(usage) => Output::Update(usage_update(usage)),
        Event::Plan(plan) => Output::Update(plan_update(&plan)),
        Event::ModelDetected {
            name,
            url,
            context_window,
        } => {
            let window = context_window.map_or_else(|| "unknown".to_string(), |n| n.to_string());
            Output::Log(format!(
                "[acp] model {name} at {url} · context window {window}"
            ))
        }
        Event::AutoCompacted(outcome) => Output::Log(format!(
            "[acp] session {session_id}: auto-compact — {}",
            outcome.line()
        )),
        Event::Attached(path) => Output::Log(format!(
            "[acp] session {session_id}: attached {}",
            path.display()
        )),
        Event::Warning(line) => Output::Log(line),
        Event::Titled(title) => Output::Update(session_info(&title)),
        Event::CompactionStarted { id } => Output::Compaction(json!({
            "sessionUpdate": "compaction_update",
            "compactionId": id,
            "status": "in_progress",
        })),
        Event::CompactionEnded { id, end } => Output::Compaction(compaction_ended(&id, &end)),
    }
}

/// `session_info_update` with the session's title.
pub fn session_info(title: &str) -> Value {
    json!({"sessionUpdate": "session_info_update", "title": title})
}

/// `compaction_update` at the end: `completed` with the summary, `failed` with the error, or
/// `cancelled`.
fn compaction_ended(id: &str, end: &CompactionEnd) -> Value {
    match end {
        CompactionEnd::Completed(summary) => json!({
            "sessionUpdate": "compaction_update", "compactionId": id, "status": "completed",
            "summary": [{"type": "text", "text": summary}],
        }),
        CompactionEnd::Failed(error) => json!({
            "sessionUpdate": "compaction_update", "compactionId": id, "status": "failed",
            "error": error,
        }),
        CompactionEnd::Cancelled => json!({
            "sessionUpdate": "compaction_update", "compactionId": id, "status": "cancelled",
        }),
    }
}

/// A `session/update` notification's params.
pub fn notification(session_id: &str, update: Value) -> Value {
    json!({"sessionId": session_id, "update": update})
}

/// A text chunk of the given kind (`agent_message_chunk`, `user_message_chunk`, …).
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

pub(super) fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// ACP's `ToolKind` name.
pub fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Execute => "execute",
        ToolKind::Fetch => "fetch",
        ToolKind::Think => "think",
        ToolKind::Other => "other",
    }
}

fn locations(paths: &[std::path::PathBuf]) -> Option<Value> {
    (!paths.is_empty()).then(|| {
        Value::Array(
            paths
                .iter()
                .map(|p| json!({"path": p.to_string_lossy()}))
                .collect(),
        )
    })
}

/// The fields every announcement of a call carries: id, title, kind, `rawInput`, `locations`.
pub(super) fn call_fields(start: &ToolCallStart) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("toolCallId".into(), json!(start.id));
    m.insert("title".into(), json!(start.title));
    m.insert("kind".into(), json!(kind_name(start.kind)));
    m.insert("rawInput".into(), start.raw_input.clone());
    if let Some(l) = locations(&start.locations) {
        m.insert("locations".into(), l);
    }
    m
}

/// `tool_call`, status `pending`.
pub fn tool_call(start: &ToolCallStart) -> Value {
    let mut m = Map::new();
    m.insert("sessionUpdate".into(), json!("tool_call"));
    m.extend(call_fields(start));
    m.insert("status".into(), json!("pending"));
    Value::Object(m)
}

fn status_name(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Completed => "completed",
        ToolStatus::Failed => "failed",
    }
}

/// `tool_call_update` `completed` or `failed`: diff blocks for file changes, else the output as
/// text; `rawOutput.output` always; the new title when there is one.
pub fn tool_call_finished(end: &ToolCallEnd) -> Value {
    let content: Vec<Value> = if end.diffs.is_empty() {
        vec![text_content(&end.output)]
    } else {
        end.diffs.iter().map(diff_content).collect()
    };
    let mut m = Map::new();
    m.insert("sessionUpdate".into(), json!("tool_call_update"));
    m.insert("toolCallId".into(), json!(end.id));
    m.insert("status".into(), json!(status_name(end.status)));
    if let Some(title) = &end.title {
        m.insert("title".into(), json!(title));
    }
    m.insert("content".into(), Value::Array(content));
    m.insert("rawOutput".into(), json!({"output": end.output}));
    Value::Object(m)
}

/// A `diff` content block: `oldText` is `null` for a new file (docs/tools.md, write_file).
pub(super) fn diff_content(d: &FileDiff) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("diff"));
    m.insert("path".into(), json!(d.path.to_string_lossy()));
    m.insert("oldText".into(), json!(d.old_text));
    m.insert("newText".into(), json!(d.new_text));
    Value::Object(m)
}

/// `usage_update` (no `cost`: the servers are local).
pub fn usage_update(usage: ContextUsage) -> Value {
    json!({"sessionUpdate": "usage_update", "used": usage.used, "size": usage.size})
}

/// `plan`: every step at priority `medium`; a skipped step is `completed` with ` (skipped)`.
pub fn plan_update(plan: &Plan) -> Value {
    let entries: Vec<Value> = plan
        .steps
        .iter()
        .map(|s| {
            let (status, suffix) = match s.status {
                PlanStatus::Pending => ("pending", ""),
                PlanStatus::InProgress => ("in_progress", ""),
                PlanStatus::Completed => ("completed", ""),
                PlanStatus::Skipped => ("completed", " (skipped)"),
            };
            json!({"content": format!("{}{suffix}", s.content), "priority": "medium", "status": status})
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// The `input.hint` of a skill's command.
pub const SKILL_HINT: &str = "parameters, if this skill needs any";

/// `available_commands_update`: the intercepted commands, then one per advertised skill
/// (`(name, description)`).
pub fn available_commands(commands: &[(&str, &str)], skills: &[(String, String)]) -> Value {
    let mut list: Vec<Value> = commands
        .iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    list.extend(skills.iter().map(|(name, description)| {
        json!({"name": name, "description": description, "input": {"hint": SKILL_HINT}})
    }));
    json!({"sessionUpdate": "available_commands_update", "availableCommands": list})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::CompactOutcome;
    use crate::event::{FileDiff, PlanStep};
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

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
    fn text_thought_and_notice_become_chunks() {
        assert_eq!(
            translate("s", Event::Text(" a\n".into())),
            Output::Update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": " a\n"}})
            )
        );
        assert_eq!(
            translate("s", Event::Thought("hm".into())),
            Output::Update(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})
            )
        );
        assert_eq!(
            translate("s", Event::Notice("[stopped]".into())),
            Output::Update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "[stopped]"}})
            )
        );
    }

    #[test]
    fn tool_call_started_is_pending_with_title_kind_input_and_locations() {
        assert_eq!(
            translate("s", Event::ToolCallStarted(start())),
            Output::Update(json!({
                "sessionUpdate": "tool_call", "toolCallId": "call_3", "title": "write_file: /w/a.txt",
                "kind": "edit", "rawInput": {"path": "a.txt", "content": "x"},
                "locations": [{"path": "/w/a.txt"}], "status": "pending"
            }))
        );
        let mut bash = start();
        bash.kind = ToolKind::Execute;
        bash.locations.clear();
        let Output::Update(v) = translate("s", Event::ToolCallStarted(bash)) else {
            panic!("not an update")
        };
        assert_eq!(v.get("locations"), None);
        assert_eq!(v["kind"], "execute");
    }

    #[test]
    fn running_and_progress_are_updates() {
        assert_eq!(
            translate(
                "s",
                Event::ToolCallRunning {
                    id: "call_1".into()
                }
            ),
            Output::Update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "in_progress"})
            )
        );
        assert_eq!(
            translate(
                "s",
                Event::ToolCallProgress {
                    id: "call_1".into(),
                    text: "50%".into()
                }
            ),
            Output::Update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                "content": [{"type": "content", "content": {"type": "text", "text": "50%"}}]})
            )
        );
    }

    #[test]
    fn finished_carries_text_or_diffs_raw_output_and_new_title() {
        let end = ToolCallEnd {
            id: "call_1".into(),
            status: ToolStatus::Failed,
            output: "[denied by a hook: no]".into(),
            diffs: vec![],
            title: Some("bash — denied by a hook".into()),
        };
        assert_eq!(
            translate("s", Event::ToolCallFinished(end)),
            Output::Update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                "status": "failed", "title": "bash — denied by a hook",
                "content": [{"type": "content", "content": {"type": "text", "text": "[denied by a hook: no]"}}],
                "rawOutput": {"output": "[denied by a hook: no]"}})
            )
        );
        let end = ToolCallEnd {
            id: "call_2".into(),
            status: ToolStatus::Completed,
            output: "wrote a.txt".into(),
            diffs: vec![
                FileDiff {
                    path: "/w/a.txt".into(),
                    old_text: None,
                    new_text: "x".into(),
                },
                FileDiff {
                    path: "/w/b.txt".into(),
                    old_text: Some("o".into()),
                    new_text: "n".into(),
                },
            ],
            title: None,
        };
        assert_eq!(
            translate("s", Event::ToolCallFinished(end)),
            Output::Update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_2",
                "status": "completed",
                "content": [{"type": "diff", "path": "/w/a.txt", "oldText": null, "newText": "x"},
                            {"type": "diff", "path": "/w/b.txt", "oldText": "o", "newText": "n"}],
                "rawOutput": {"output": "wrote a.txt"}})
            )
        );
    }

    #[test]
    fn context_usage_and_plan() {
        assert_eq!(
            translate(
                "s",
                Event::ContextUsage(ContextUsage { used: 120, size: 0 })
            ),
            Output::Update(json!({"sessionUpdate": "usage_update", "used": 120, "size": 0}))
        );
        let plan = Plan {
            title: "t".into(),
            steps: vec![
                PlanStep {
                    content: "a".into(),
                    status: PlanStatus::Completed,
                    note: None,
                },
                PlanStep {
                    content: "b".into(),
                    status: PlanStatus::Skipped,
                    note: Some("n".into()),
                },
                PlanStep {
                    content: "c".into(),
                    status: PlanStatus::InProgress,
                    note: None,
                },
                PlanStep {
                    content: "d".into(),
                    status: PlanStatus::Pending,
                    note: None,
                },
            ],
        };
        assert_eq!(
            translate("s", Event::Plan(plan)),
            Output::Update(json!({"sessionUpdate": "plan", "entries": [
                {"content": "a", "priority": "medium", "status": "completed"},
                {"content": "b (skipped)", "priority": "medium", "status": "completed"},
                {"content": "c", "priority": "medium", "status": "in_progress"},
                {"content": "d", "priority": "medium", "status": "pending"},
            ]}))
        );
    }

    #[test]
    fn log_events() {
        assert_eq!(
            translate(
                "S1",
                Event::ModelDetected {
                    name: "qwen".into(),
                    url: "http://h/v1".into(),
                    context_window: Some(32768)
                }
            ),
            Output::Log("[acp] model qwen at http://h/v1 · context window 32768".into())
        );
        assert_eq!(
            translate(
                "S1",
                Event::ModelDetected {
                    name: "qwen".into(),
                    url: "http://h/v1".into(),
                    context_window: None
                }
            ),
            Output::Log("[acp] model qwen at http://h/v1 · context window unknown".into())
        );
        assert_eq!(
            translate(
                "S1",
                Event::AutoCompacted(CompactOutcome::Failed("boom".into()))
            ),
            Output::Log(
                "[acp] session S1: auto-compact — [compact: failed, history kept: boom]".into()
            )
        );
        assert_eq!(
            translate("S1", Event::Attached("/w/a.rs".into())),
            Output::Log("[acp] session S1: attached /w/a.rs".into())
        );
        assert_eq!(
            translate("S1", Event::Warning("🪝 preToolCall hook x failed".into())),
            Output::Log("🪝 preToolCall hook x failed".into())
        );
    }

    #[test]
    fn titles_and_compactions() {
        assert_eq!(
            translate("s", Event::Titled("fix the build".into())),
            Output::Update(
                json!({"sessionUpdate": "session_info_update", "title": "fix the build"})
            )
        );
        assert_eq!(
            translate(
                "s",
                Event::CompactionStarted {
                    id: "compaction_1".into()
                }
            ),
            Output::Compaction(
                json!({"sessionUpdate": "compaction_update", "compactionId": "compaction_1", "status": "in_progress"})
            )
        );
        let ended = |end| {
            translate(
                "s",
                Event::CompactionEnded {
                    id: "compaction_1".into(),
                    end,
                },
            )
        };
        assert_eq!(
            ended(CompactionEnd::Completed("The user wants…".into())),
            Output::Compaction(json!({"sessionUpdate": "compaction_update",
                "compactionId": "compaction_1", "status": "completed",
                "summary": [{"type": "text", "text": "The user wants…"}]}))
        );
        assert_eq!(
            ended(CompactionEnd::Failed(
                "model server answered 500: boom".into()
            )),
            Output::Compaction(json!({"sessionUpdate": "compaction_update",
                "compactionId": "compaction_1", "status": "failed",
                "error": "model server answered 500: boom"}))
        );
        assert_eq!(
            ended(CompactionEnd::Cancelled),
            Output::Compaction(json!({"sessionUpdate": "compaction_update",
                "compactionId": "compaction_1", "status": "cancelled"}))
        );
    }

    #[test]
    fn commands_then_skills() {
        let v = available_commands(
            crate::engine::Engine::commands(),
            &[("greetings".into(), "Greet somebody.".into())],
        );
        assert_eq!(
            v,
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "new", "description": "Clear the history and start a new session"},
                {"name": "compact", "description": "Compress the history now, keeping the last turns"},
                {"name": "undo", "description": "Restore the files the last turn changed (again: the turn before)"},
                {"name": "greetings", "description": "Greet somebody.", "input": {"hint": "parameters, if this skill needs any"}},
            ]})
        );
    }
}
