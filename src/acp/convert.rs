//! Every translation between the engine's vocabulary and ACP's wire shapes, as pure functions:
//! events to `session/update` payloads or log lines, questions to requests and answers back,
//! a stored history to its `session/load` replay. The strings acp.md fixes live here.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::engine::{Command, Recap, StopReason};
use crate::event::Tally;
use crate::event::{
    AnswerValue, ContextUsage, Event, Form, FormAnswer, PermissionDecision, Plan, PlanStatus,
    Question, QuestionKind, ToolCallEnd, ToolCallStart, ToolKind, ToolStatus, Usage,
};
use crate::history::{Message, Role, ToolCall};

/// What one engine event becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The `update` of a `session/update` notification.
    Update(Value),
    /// A line for stderr.
    Log(String),
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
    }
}

/// A failed turn as a JSON-RPC error: `-32603` with the one-line explanation (acp-notes.md).
pub fn turn_error(e: &crate::engine::TurnError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::internal_error().data(json!({"error": e.to_string()}))
}

/// A session that cannot be loaded: every cause is `invalid params` carrying the `sessionId`
/// and the explanation (acp.md, acp-notes.md).
pub fn load_error(id: &str, e: &crate::engine::LoadError) -> agent_client_protocol::Error {
    use crate::engine::LoadError;
    let error = match e {
        LoadError::InvalidId(e) => e.to_string(),
        LoadError::File(e) => e.to_string(),
    };
    agent_client_protocol::Error::invalid_params().data(json!({"sessionId": id, "error": error}))
}

/// A `session/update` notification's params.
pub fn notification(session_id: &str, update: Value) -> Value {
    json!({"sessionId": session_id, "update": update})
}

/// A whole JSON-RPC notification as one line of the transport, newline included.
pub fn notification_line(method: &str, params: Value) -> String {
    let mut line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
    line.push('\n');
    line
}

/// A text chunk of the given kind (`agent_message_chunk`, `user_message_chunk`, …).
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

fn text_content(text: &str) -> Value {
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
fn call_fields(start: &ToolCallStart) -> Map<String, Value> {
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
        end.diffs
            .iter()
            .map(|d| {
                let mut m = Map::new();
                m.insert("type".into(), json!("diff"));
                m.insert("path".into(), json!(d.path.to_string_lossy()));
                if let Some(old) = &d.old_text {
                    m.insert("oldText".into(), json!(old));
                }
                m.insert("newText".into(), json!(d.new_text));
                Value::Object(m)
            })
            .collect()
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

/// The stop reason's wire name.
pub fn stop_reason(stop: StopReason) -> agent_client_protocol::v1::schema::StopReason {
    use agent_client_protocol::v1::schema::StopReason as S;
    match stop {
        StopReason::EndTurn => S::EndTurn,
        StopReason::MaxTokens => S::MaxTokens,
        StopReason::MaxTurnRequests => S::MaxTurnRequests,
        StopReason::Cancelled => S::Cancelled,
    }
}

/// The session's totals for the prompt response, once the server reported any count.
pub fn prompt_usage(usage: &Usage) -> Option<agent_client_protocol::v1::schema::Usage> {
    let reported = usage.input_tokens > 0
        || usage.output_tokens > 0
        || usage.thought_tokens.is_some()
        || usage.cached_read_tokens.is_some();
    reported.then(|| {
        agent_client_protocol::v1::schema::Usage::new(
            usage.total(),
            usage.input_tokens,
            usage.output_tokens,
        )
        .thought_tokens(usage.thought_tokens)
        .cached_read_tokens(usage.cached_read_tokens)
    })
}

// ---- log lines ----

/// `initialize`.
pub fn log_client(name_version: Option<(&str, &str)>, protocol: u16, forms: bool) -> String {
    let client = match name_version {
        Some((name, version)) => format!("{name} {version}"),
        None => "unknown".to_string(),
    };
    format!("[acp] client {client} · protocol {protocol} · elicitation(form)={forms}")
}

/// `session/new`.
pub fn log_created(id: &str, cwd: &Path, mcp_servers: usize) -> Vec<String> {
    let mut lines = vec![format!("[acp] session {id} created in {}", cwd.display())];
    if mcp_servers > 0 {
        lines.push(format!(
            "[acp] session {id}: {mcp_servers} MCP server(s) from the client ignored"
        ));
    }
    lines
}

/// `session/load`.
pub fn log_loaded(id: &str, dir: &Path, messages: usize) -> String {
    format!(
        "[acp] session {id} loaded from {}: {messages} message(s) replayed",
        dir.display()
    )
}

/// After a prompt: the turn's recap, or the command's lines.
pub fn log_prompt(id: &str, command: Option<&Command>, recap: Option<&Recap>) -> Vec<String> {
    let mut lines = Vec::new();
    match command {
        Some(Command::New {
            forgotten,
            archived_as,
        }) => {
            if let Some(new_id) = archived_as {
                lines.push(format!(
                    "[acp] session {id}: previous conversation kept as {new_id}"
                ));
            }
            lines.push(format!(
                "[acp] session {id}: new session, {forgotten} message(s) forgotten"
            ));
        }
        Some(Command::Compact(outcome)) => {
            lines.push(format!("[acp] session {id}: /compact — {}", outcome.line()));
        }
        None => {}
    }
    if let Some(r) = recap {
        lines.push(format!(
            "[acp] turn done: {} command(s) · {} file op(s) · {} skill(s)",
            r.get(Tally::Command),
            r.get(Tally::FileOp),
            r.get(Tally::Skill)
        ));
    }
    lines
}

// ---- permission ----

/// The four options of a permission dialog.
const PERMISSION_OPTIONS: [(&str, &str, &str); 4] = [
    ("allow", "Allow", "allow_once"),
    ("allow_always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
    ("never", "Never", "reject_always"),
];

/// `session/request_permission` params for a gated call.
pub fn permission_request(session_id: &str, call: &ToolCallStart) -> Value {
    let options: Vec<Value> = PERMISSION_OPTIONS
        .iter()
        .map(|(id, name, kind)| json!({"optionId": id, "name": name, "kind": kind}))
        .collect();
    json!({
        "sessionId": session_id,
        "toolCall": Value::Object(call_fields(call)),
        "options": options,
    })
}

/// The option the client selected; `None` for a cancelled outcome or a malformed answer.
fn selected_option(response: &Value) -> Option<&str> {
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

// ---- ask_user ----

/// The reason given when the client can neither show a form nor ask choice by choice.
pub const NO_FORM_SUPPORT: &str = "the client has no form support";

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
        Err(e) => return FormAnswer::Unavailable(e.to_string()),
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
        Err(e) => return QuestionOutcome::Unavailable(e.to_string()),
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

// ---- session/load replay ----

/// The replay as transport lines (`replay` wrapped in `session/update` notifications), the text
/// chunks written without building JSON maps: a long session replays thousands of them.
pub fn replay_lines(
    session_id: &str,
    history: &[Message],
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
            Role::User => text_line("user_message_chunk", &m.content, &mut out),
            Role::Assistant => {
                if !m.content.is_empty() {
                    text_line("agent_message_chunk", &m.content, &mut out);
                }
                for call in &m.tool_calls {
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

/// The notifications that replay a stored history (the system prompt is not sent). `describe`
/// gives a stored call's title, kind and `rawInput` as the live tool would.
pub fn replay(history: &[Message], describe: &dyn Fn(&ToolCall) -> ToolCallStart) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, m) in history.iter().enumerate() {
        match m.role {
            Role::System | Role::Tool => {}
            Role::User if m.compact => {
                out.push(chunk("agent_message_chunk", &format!("🗜️ {}", m.content)));
            }
            Role::User => out.push(chunk("user_message_chunk", &m.content)),
            Role::Assistant => {
                if !m.content.is_empty() {
                    out.push(chunk("agent_message_chunk", &m.content));
                }
                for call in &m.tool_calls {
                    let response = history[i + 1..]
                        .iter()
                        .take_while(|t| t.role == Role::Tool)
                        .find(|t| t.tool_call_id.as_deref() == Some(call.id.as_str()));
                    out.push(replayed_call(call, response, describe));
                }
            }
        }
    }
    out
}

fn replayed_call(
    call: &ToolCall,
    response: Option<&Message>,
    describe: &dyn Fn(&ToolCall) -> ToolCallStart,
) -> Value {
    let mut start = describe(call);
    start.id = call.ref_.clone();
    let mut m = Map::new();
    m.insert("sessionUpdate".into(), json!("tool_call"));
    m.extend(call_fields(&start));
    match response {
        Some(t) if !t.failed => {
            m.insert("status".into(), json!("completed"));
            m.insert("content".into(), json!([text_content(&t.content)]));
            m.insert("rawOutput".into(), json!({"output": t.content}));
        }
        Some(t) => {
            m.insert("status".into(), json!("failed"));
            m.insert("rawOutput".into(), json!({"output": t.content}));
        }
        None => {
            m.insert("status".into(), json!("failed"));
        }
    }
    Value::Object(m)
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
                "content": [{"type": "diff", "path": "/w/a.txt", "newText": "x"},
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
                {"name": "greetings", "description": "Greet somebody.", "input": {"hint": "parameters, if this skill needs any"}},
            ]})
        );
    }

    #[test]
    fn prompt_usage_only_once_reported() {
        assert_eq!(prompt_usage(&Usage::default()), None);
        let u = Usage {
            input_tokens: 10,
            output_tokens: 5,
            thought_tokens: None,
            cached_read_tokens: Some(4),
        };
        assert_eq!(
            serde_json::to_value(prompt_usage(&u)).unwrap(),
            json!({"totalTokens": 15, "inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 4})
        );
    }

    #[test]
    fn log_lines() {
        assert_eq!(
            log_client(Some(("zed", "0.200.1")), 1, true),
            "[acp] client zed 0.200.1 · protocol 1 · elicitation(form)=true"
        );
        assert_eq!(
            log_client(None, 1, false),
            "[acp] client unknown · protocol 1 · elicitation(form)=false"
        );
        assert_eq!(
            log_created("S", Path::new("/w"), 2),
            vec![
                "[acp] session S created in /w",
                "[acp] session S: 2 MCP server(s) from the client ignored"
            ]
        );
        assert_eq!(
            log_created("S", Path::new("/w"), 0),
            vec!["[acp] session S created in /w"]
        );
        assert_eq!(
            log_loaded("S", Path::new("/w/.mm/sessions"), 4),
            "[acp] session S loaded from /w/.mm/sessions: 4 message(s) replayed"
        );
        assert_eq!(
            log_prompt("S", None, Some(&Recap::of(2, 1, 0))),
            vec!["[acp] turn done: 2 command(s) · 1 file op(s) · 0 skill(s)"]
        );
        assert_eq!(
            log_prompt(
                "S",
                Some(&Command::New {
                    forgotten: 4,
                    archived_as: Some("N".into())
                }),
                None
            ),
            vec![
                "[acp] session S: previous conversation kept as N",
                "[acp] session S: new session, 4 message(s) forgotten"
            ]
        );
        assert_eq!(
            log_prompt(
                "S",
                Some(&Command::Compact(CompactOutcome::Nothing {
                    messages: 2,
                    keep: 2
                })),
                None
            ),
            vec![
                "[acp] session S: /compact — 🗜️ nothing to compact: 2 message(s), no turn older than the last 2"
            ]
        );
    }

    #[test]
    fn permission_request_and_answers() {
        assert_eq!(
            permission_request("S", &start()),
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
            FormAnswer::Unavailable("Internal error".into())
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

    #[test]
    fn replay_lines_say_what_replay_says() {
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
        let expected: Vec<Value> = replay(&history, &describe)
            .into_iter()
            .map(|u| json!({"jsonrpc": "2.0", "method": "session/update", "params": notification("S", u)}))
            .collect();
        let lines = replay_lines("S", &history, &describe);
        let got: Vec<Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got, expected);
        assert!(lines.ends_with('\n'));
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
            replay(&history, &describe),
            vec![
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "🗜️ earlier work"}}),
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "list files"}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Sure."}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_4", "title": "bash: {\"command\":\"ls\"}", "kind": "execute",
                    "rawInput": {"command": "ls"}, "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}],
                    "rawOutput": {"output": "a\nb"}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_5", "title": "bash: {}", "kind": "execute",
                    "rawInput": {}, "status": "failed", "rawOutput": {"output": "[command rejected by the user]"}}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_6", "title": "bash: x", "kind": "execute",
                    "rawInput": "x", "status": "failed"}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
            ]
        );
    }
}
