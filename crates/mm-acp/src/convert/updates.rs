//! Engine events as `session/update` payloads (or stderr lines), and the updates a session
//! sends on its own: tool calls, context usage, the plan, the available commands. The payloads
//! are the SDK's typed `SessionUpdate`s, written as JSON once ([`wire`]); the SDK leaves out a
//! pending call's `status` and an `other` call's `kind` (the protocol's defaults, docs/acp.md).

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::schema::SessionUpdate;
use serde_json::{Map, Value, json};

use crate::event::{
    ChildEnd, ChildEvent, CompactionEnd, ContextUsage, Event, FileDiff, Plan, PlanStatus,
    ToolCallEnd, ToolCallStart, ToolKind, ToolStatus, Waiting,
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
    /// A `task` call's child's step: shown only to a client that advertised `subagents`
    /// ([`subagent_started`], its events on its own session, [`subagent_ended`]).
    Child(ChildEvent),
    /// A line for stderr, and a `notice` for a client that advertised `session.notices`.
    LogAndNotice(String, Value),
}

/// The one exhaustive match on [`Event`].
pub fn translate(session_id: &str, event: Event) -> Output {
    match event {
        Event::Text(text) => Output::Update(wire(SessionUpdate::AgentMessageChunk(chunk(text)))),
        Event::Thought(text) => Output::Update(wire(SessionUpdate::AgentThoughtChunk(chunk(text)))),
        Event::Notice(text) => Output::Update(wire(SessionUpdate::AgentMessageChunk(chunk(text)))),
        Event::ToolCallStarted(start) => Output::Update(tool_call(&start)),
        Event::ToolCallRunning { id } => Output::Update(call_update(
            id,
            acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
        )),
        Event::ToolCallProgress { id, text } => Output::Update(call_update(
            id,
            acp::ToolCallUpdateFields::new().content(vec![text_content(text)]),
        )),
        Event::ToolCallFinished(end) => Output::Update(tool_call_finished(&end)),
        Event::ContextUsage(usage) => Output::Update(usage_update(usage)),
        Event::Plan(plan) => Output::Update(plan_update(&plan)),
        Event::ModelDetected {
            name,
            url,
            context_window,
        } => {
            let window = context_window.map_or_else(|| "unknown".to_string(), |n| n.to_string());
            let line = format!("[acp] model {name} at {url} · context window {window}");
            match context_window.filter(|&n| n < crate::engine::SMALL_WINDOW) {
                Some(n) => Output::LogAndNotice(line, small_window_notice(&name, n)),
                None => Output::Log(line),
            }
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
        Event::CompactionStarted { id } => {
            Output::Compaction(wire(SessionUpdate::CompactionUpdate(
                acp::CompactionUpdate::new(id, acp::CompactionStatus::InProgress),
            )))
        }
        Event::CompactionEnded { id, end } => Output::Compaction(compaction_ended(id, end)),
        Event::Child(child) => Output::Child(child),
        Event::Waiting(waiting) => Output::LogAndNotice(
            format!("[acp] session {session_id}: {}", waiting.line()),
            waiting_notice(&waiting),
        ),
    }
}

/// `subagent_update` announcing a child on its parent, before any of its traffic: its title,
/// running, and (`cancellable`: a `task` call's child, an asked agent's conversation in a
/// session) cancellable on its own session id.
pub fn subagent_started(child: &str, description: &str, cancellable: bool) -> Value {
    let mut update = acp::SubagentUpdate::new(child.to_string()).title(description.to_string());
    if cancellable {
        update = update.capabilities(
            acp::SubagentSessionCapabilities::new().cancel(acp::SessionCancelCapabilities::new()),
        );
    }
    wire(SessionUpdate::SubagentUpdate(update.state(
        acp::StateUpdate::Running(acp::RunningStateUpdate::new()),
    )))
}

/// `subagent_update` when the child's work ended: idle, with why it stopped (a client shows it
/// running until then).
pub fn subagent_ended(child: &str, end: ChildEnd) -> Value {
    let reason = match end {
        ChildEnd::Answered => acp::IdleStopReason::EndTurn,
        ChildEnd::Cancelled => acp::IdleStopReason::Cancelled,
        ChildEnd::Limit => acp::IdleStopReason::MaxTurnRequests,
        ChildEnd::Failed => acp::IdleStopReason::Error(acp::ErrorStopReason::new()),
    };
    wire(SessionUpdate::SubagentUpdate(
        acp::SubagentUpdate::new(child.to_string()).state(acp::StateUpdate::Idle(
            acp::IdleStateUpdate::new().stop_reason(reason),
        )),
    ))
}

/// An update as the JSON of its notification. The SDK's types always serialize (their maps
/// have string keys; paths are made strings before they go in).
pub(super) fn wire(update: SessionUpdate) -> Value {
    serde_json::to_value(update).unwrap_or(Value::Null)
}

/// `session_info_update` with the session's title.
pub fn session_info(title: &str) -> Value {
    wire(SessionUpdate::SessionInfoUpdate(
        acp::SessionInfoUpdate::new().title(title.to_string()),
    ))
}

/// `compaction_update` at the end: `completed` with the summary, `failed` with the error, or
/// `cancelled`.
fn compaction_ended(id: String, end: CompactionEnd) -> Value {
    let update = match end {
        CompactionEnd::Completed(summary) => {
            acp::CompactionUpdate::new(id, acp::CompactionStatus::Completed)
                .summary(vec![acp::ContentBlock::from(summary)])
        }
        CompactionEnd::Failed(error) => {
            acp::CompactionUpdate::new(id, acp::CompactionStatus::Failed).error(error)
        }
        CompactionEnd::Cancelled => {
            acp::CompactionUpdate::new(id, acp::CompactionStatus::Cancelled)
        }
    };
    wire(SessionUpdate::CompactionUpdate(update))
}

/// A `session/update` notification's params.
pub fn notification(session_id: &str, update: Value) -> Value {
    json!({"sessionId": session_id, "update": update})
}

/// A text chunk (`agent_message_chunk`, `user_message_chunk`, …).
pub(super) fn chunk(text: impl Into<String>) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::from(text.into()))
}

/// A `content` block of text.
pub(super) fn text_content(text: impl Into<String>) -> acp::ToolCallContent {
    acp::ToolCallContent::from(acp::ContentBlock::from(text.into()))
}

/// `tool_call_update` of call `id`.
fn call_update(id: String, fields: acp::ToolCallUpdateFields) -> Value {
    wire(SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
        id, fields,
    )))
}

/// ACP's `ToolKind`.
fn acp_kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::Think => acp::ToolKind::Think,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

/// ACP's `ToolKind` name, as the permission request's `toolCall` writes it.
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

/// A call as every announcement of it carries it: id, title, kind, `rawInput`, `locations`.
pub(super) fn announced(start: &ToolCallStart) -> acp::ToolCall {
    let locations: Vec<acp::ToolCallLocation> = start
        .locations
        .iter()
        .map(|p| acp::ToolCallLocation::new(p.to_string_lossy().into_owned()))
        .collect();
    acp::ToolCall::new(start.id.clone(), start.title.clone())
        .kind(acp_kind(start.kind))
        .raw_input(start.raw_input.clone())
        .locations(locations)
}

/// The same fields as JSON, for the `toolCall` of a permission request.
pub(super) fn call_fields(start: &ToolCallStart) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("toolCallId".into(), json!(start.id));
    m.insert("title".into(), json!(start.title));
    m.insert("kind".into(), json!(kind_name(start.kind)));
    m.insert("rawInput".into(), start.raw_input.clone());
    if !start.locations.is_empty() {
        let paths = start.locations.iter();
        let l: Vec<Value> = paths
            .map(|p| json!({"path": p.to_string_lossy()}))
            .collect();
        m.insert("locations".into(), Value::Array(l));
    }
    m
}

/// `tool_call`, status `pending`.
pub fn tool_call(start: &ToolCallStart) -> Value {
    wire(SessionUpdate::ToolCall(
        announced(start).status(acp::ToolCallStatus::Pending),
    ))
}

fn call_status(status: ToolStatus) -> acp::ToolCallStatus {
    match status {
        ToolStatus::Completed => acp::ToolCallStatus::Completed,
        ToolStatus::Failed => acp::ToolCallStatus::Failed,
    }
}

/// `tool_call_update` `completed` or `failed`: diff blocks for file changes, else the output as
/// text; `rawOutput.output` always; the new title when there is one. The SDK's `Diff` leaves
/// out a new file's `oldText`, which mm writes `null` (docs/acp.md): diff blocks are mm's own,
/// the same as the permission request's.
pub fn tool_call_finished(end: &ToolCallEnd) -> Value {
    let mut fields = acp::ToolCallUpdateFields::new()
        .status(call_status(end.status))
        .title(end.title.clone())
        .raw_output(json!({"output": end.output}));
    if end.diffs.is_empty() {
        fields = fields.content(vec![text_content(end.output.clone())]);
    }
    let mut update = call_update(end.id.clone(), fields);
    if let (false, Value::Object(m)) = (end.diffs.is_empty(), &mut update) {
        let diffs = end.diffs.iter().map(diff_content).collect();
        m.insert("content".into(), Value::Array(diffs));
    }
    update
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
    wire(SessionUpdate::UsageUpdate(acp::UsageUpdate::new(
        usage.used, usage.size,
    )))
}

/// A `notice` session update.
fn notice(severity: acp::NoticeSeverity, title: &str, description: &str) -> Value {
    wire(SessionUpdate::Notice(
        acp::Notice::new(severity, title).description(description.to_string()),
    ))
}

/// An untrusted project's commands were skipped.
pub fn untrusted_notice(warning: &str) -> Value {
    notice(
        acp::NoticeSeverity::Warning,
        "Project not trusted: its hooks and servers were skipped",
        warning,
    )
}

/// The sandbox is on but not enforced here.
pub fn unfenced_notice(shortfall: &str) -> Value {
    notice(
        acp::NoticeSeverity::Warning,
        "Sandbox not enforced on this system",
        shortfall,
    )
}

/// A turn failed (the model server failing, most often); its `[error: …]` chunk says it too.
pub fn failed_notice(error: &str) -> Value {
    notice(acp::NoticeSeverity::Error, "The turn failed", error)
}

/// A model call waits: the server loads the model, or the call is tried again.
fn waiting_notice(waiting: &Waiting) -> Value {
    match waiting {
        Waiting::Loading { model } => notice(
            acp::NoticeSeverity::Info,
            "Loading the model",
            &format!("the model server is loading {model}; the turn goes on once it is up"),
        ),
        Waiting::Retrying { .. } => notice(
            acp::NoticeSeverity::Warning,
            "The model server failed; retrying",
            &waiting.line(),
        ),
    }
}

fn small_window_notice(model: &str, window: u64) -> Value {
    notice(
        acp::NoticeSeverity::Warning,
        "Context window too small for an agent",
        &format!(
            "{model} has a context window of {window} tokens; raise it to at least {} in the model server's settings",
            crate::engine::SMALL_WINDOW
        ),
    )
}

/// `plan`: every step at priority `medium`; a skipped step is `completed` with ` (skipped)`.
pub fn plan_update(plan: &Plan) -> Value {
    let entries = plan
        .steps
        .iter()
        .map(|s| {
            let (status, suffix) = match s.status {
                PlanStatus::Pending => (acp::PlanEntryStatus::Pending, ""),
                PlanStatus::InProgress => (acp::PlanEntryStatus::InProgress, ""),
                PlanStatus::Completed => (acp::PlanEntryStatus::Completed, ""),
                PlanStatus::Skipped => (acp::PlanEntryStatus::Completed, " (skipped)"),
            };
            let content = format!("{}{suffix}", s.content);
            acp::PlanEntry::new(content, acp::PlanEntryPriority::Medium, status)
        })
        .collect();
    wire(SessionUpdate::Plan(acp::Plan::new(entries)))
}

/// The `input.hint` of a skill's command.
pub const SKILL_HINT: &str = "parameters, if this skill needs any";

/// `available_commands_update`: the intercepted commands, then one per advertised skill
/// (`(name, description)`).
pub fn available_commands(commands: &[(&str, &str)], skills: &[(String, String)]) -> Value {
    let hint =
        || acp::AvailableCommandInput::Unstructured(acp::UnstructuredCommandInput::new(SKILL_HINT));
    let list = commands
        .iter()
        .map(|(name, description)| acp::AvailableCommand::new(*name, *description))
        .chain(skills.iter().map(|(name, description)| {
            acp::AvailableCommand::new(name.clone(), description.clone()).input(hint())
        }))
        .collect();
    wire(SessionUpdate::AvailableCommandsUpdate(
        acp::AvailableCommandsUpdate::new(list),
    ))
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
        // Pending is the protocol's default status, which the SDK leaves out (docs/acp.md).
        assert_eq!(
            translate("s", Event::ToolCallStarted(start())),
            Output::Update(json!({
                "sessionUpdate": "tool_call", "toolCallId": "call_3", "title": "write_file: /w/a.txt",
                "kind": "edit", "rawInput": {"path": "a.txt", "content": "x"},
                "locations": [{"path": "/w/a.txt"}]
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
    fn a_wait_for_the_server_is_a_log_line_and_a_notice() {
        assert_eq!(
            translate(
                "S1",
                Event::Waiting(Waiting::Loading {
                    model: "qwen3".into()
                })
            ),
            Output::LogAndNotice(
                "[acp] session S1: the model server is loading qwen3".into(),
                json!({"sessionUpdate": "notice", "severity": "info", "title": "Loading the model",
                       "description": "the model server is loading qwen3; the turn goes on once it is up"})
            )
        );
        let retry = Waiting::Retrying {
            error: "model server answered 503: Loading model".into(),
            attempt: 2,
            of: 5,
            after: std::time::Duration::from_millis(500),
        };
        assert_eq!(
            translate("S1", Event::Waiting(retry)),
            Output::LogAndNotice(
                "[acp] session S1: model server answered 503: Loading model — try 2 of 5 in 0.5 s"
                    .into(),
                json!({"sessionUpdate": "notice", "severity": "warning",
                       "title": "The model server failed; retrying",
                       "description": "model server answered 503: Loading model — try 2 of 5 in 0.5 s"})
            )
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
