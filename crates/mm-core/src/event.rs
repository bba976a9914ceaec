//! The vocabulary between the engine and its front ends.
//!
//! Every front end matches [`Event`] exhaustively, so a new event is a compile error until each
//! decides what to do with it.

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::relay::{RelayedAnswer, RelayedForm, RelayedPermission};

/// What kind of tool a call is, as ACP's `ToolKind` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Execute,
    Fetch,
    Think,
    Other,
}

/// How a session's gated tools are let through (docs/engine.md, "Modes"): `ask` asks before
/// every gated call, `yolo` asks for none (but what asks always, an MCP server's
/// `permissions = "ask"`), `read-only` refuses them all without asking, but `bash` where a
/// read-only fence exists (its commands run inside it, unasked).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    Ask,
    /// The configuration's default (`yolo = true`).
    #[default]
    Yolo,
    ReadOnly,
}

impl PermissionMode {
    /// Every mode, in the order front ends list them.
    pub const ALL: [PermissionMode; 3] = [
        PermissionMode::Ask,
        PermissionMode::Yolo,
        PermissionMode::ReadOnly,
    ];

    /// The mode the configuration's `yolo` gives.
    pub fn from_yolo(yolo: bool) -> PermissionMode {
        if yolo {
            PermissionMode::Yolo
        } else {
            PermissionMode::Ask
        }
    }

    /// Its id (ACP `modeId`, the terminal's `/mode NAME`, the session file).
    pub fn id(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::Yolo => "yolo",
            PermissionMode::ReadOnly => "read-only",
        }
    }

    pub fn parse(id: &str) -> Option<PermissionMode> {
        PermissionMode::ALL.into_iter().find(|m| m.id() == id)
    }

    /// The name menus show.
    pub fn name(self) -> &'static str {
        match self {
            PermissionMode::Ask => "Ask",
            PermissionMode::Yolo => "Yolo",
            PermissionMode::ReadOnly => "Read-only",
        }
    }

    /// What menus say of it. `fenced`: commands run inside a read-only fence where the
    /// platform has one (Landlock), so `read-only` lets them read; without one they are refused.
    pub fn description(self, fenced: bool) -> &'static str {
        match (self, fenced) {
            (PermissionMode::Ask, _) => {
                "Ask before every command, file change and other gated tool"
            }
            (PermissionMode::Yolo, _) => "Run every tool without asking",
            (PermissionMode::ReadOnly, true) => {
                "Read and answer only: commands run inside a read-only fence (writes fail); file changes and other gated tools are refused"
            }
            (PermissionMode::ReadOnly, false) => {
                "Read and answer only: commands, file changes and other gated tools are refused (no read-only fence on this system)"
            }
        }
    }

    /// How much it holds back: `yolo` < `ask` < `read-only`.
    fn strictness(self) -> u8 {
        match self {
            PermissionMode::Yolo => 0,
            PermissionMode::Ask => 1,
            PermissionMode::ReadOnly => 2,
        }
    }

    /// This mode, or `floor` when `floor` holds back more: a session file (which a cloned
    /// repository may bring) never loosens what the configuration says.
    pub fn at_least(self, floor: PermissionMode) -> PermissionMode {
        if self.strictness() >= floor.strictness() {
            self
        } else {
            floor
        }
    }
}

/// The outcome of a tool call as front ends show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The tool ran, whatever its exit code.
    Completed,
    /// It did not run (loop detector, hook, rejection, bad arguments, unknown tool), timed out, or
    /// could not start.
    Failed,
}

/// A file change made by a tool, for front ends that show diffs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    pub path: PathBuf,
    /// `None` for a file that did not exist.
    pub old_text: Option<String>,
    pub new_text: String,
}

/// A tool call as announced before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallStart {
    /// The `call_N` ref (ACP `toolCallId`).
    pub id: String,
    pub name: String,
    pub title: String,
    pub kind: ToolKind,
    /// The arguments as the model sent them (a JSON string when they were not JSON).
    pub raw_input: Value,
    /// Absolute paths the call involves.
    pub locations: Vec<PathBuf>,
}

/// A tool call that finished (or was refused before running).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEnd {
    pub id: String,
    pub status: ToolStatus,
    /// The text the model receives.
    pub output: String,
    pub diffs: Vec<FileDiff>,
    /// A new title, when it changes (`<tool> — denied by a hook`).
    pub title: Option<String>,
}

/// Token counts of a session or of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_tokens: Option<u64>,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another count to this one (optional counts stay absent until one is reported).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        if let Some(t) = other.thought_tokens {
            *self.thought_tokens.get_or_insert(0) += t;
        }
        if let Some(c) = other.cached_read_tokens {
            *self.cached_read_tokens.get_or_insert(0) += c;
        }
    }
}

/// The context in use, as ACP's `usage_update` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextUsage {
    /// Tokens in use.
    pub used: u64,
    /// The context window, 0 when unknown.
    pub size: u64,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    pub content: String,
    pub status: PlanStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
    Skipped,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub title: String,
    pub steps: Vec<PlanStep>,
}

/// Why a model call has not started answering: the model server is busy with something the
/// user should hear of, rather than a silent wait (the terminal's status line, an editor's
/// notice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// The server loads the model before it answers (llama.cpp's router loading it on demand).
    Loading { model: String },
    /// The call failed in a way worth trying again (a server loading or restarting, a rate
    /// limit): the failure's line, the try about to be made (2 for the first retry) out of
    /// `of`, and the wait before it.
    Retrying {
        error: String,
        attempt: u32,
        of: u32,
        after: std::time::Duration,
    },
}

impl Waiting {
    /// One line that says it (the status line's text, a log line).
    pub fn line(&self) -> String {
        match self {
            Waiting::Loading { model } => format!("the model server is loading {model}"),
            Waiting::Retrying {
                error,
                attempt,
                of,
                after,
            } => format!(
                "{error} — try {attempt} of {of} in {} s",
                crate::config::seconds(*after)
            ),
        }
    }
}

/// What happens during a turn, as the engine reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A streamed piece of the model's answer.
    Text(String),
    /// A streamed piece of the model's reasoning.
    Thought(String),
    /// A line mm itself shows (a failure's explanation, a stop line, a command's answer). Shown
    /// like text but never stored in the history.
    Notice(String),
    /// A tool call is about to go through the gates (ACP `tool_call`, pending).
    ToolCallStarted(ToolCallStart),
    /// The gates let it through and it runs (ACP `tool_call_update`, in_progress).
    ToolCallRunning { id: String },
    /// Progress text from a running tool (for example another agent's activity).
    ToolCallProgress { id: String, text: String },
    /// It finished or was refused.
    ToolCallFinished(ToolCallEnd),
    /// A model call reported usage, or a turn or command ended: the context in use.
    ContextUsage(ContextUsage),
    /// The session's plan changed.
    Plan(Plan),
    /// The model server was found (or detection failed): for banners and logs.
    ModelDetected {
        name: String,
        url: String,
        context_window: Option<u64>,
    },
    /// The history was compressed automatically (or a compression was tried and failed).
    AutoCompacted(CompactOutcome),
    /// A prompt's `@path` named an existing file or directory, now attached (absolute path).
    Attached(PathBuf),
    /// Something went wrong that the front end should log (a file that cannot be written, a hook
    /// failure), not a turn failure.
    Warning(String),
    /// The session got its title (the first prompt's first line): for session lists.
    Titled(String),
    /// A compression's summary call starts (`/compact` or automatic); `id` is unique in the
    /// process.
    CompactionStarted { id: String },
    /// It ended.
    CompactionEnded { id: String, end: CompactionEnd },
    /// What a `task` call's child session does (docs/engine.md, "Subagents"): shown under the
    /// call by the front ends that show children; never the parent's own text, plan or usage.
    Child(ChildEvent),
    /// A model call waits for the server ([`Waiting`]); its answer (or failure) follows.
    Waiting(Waiting),
}

/// One step of a `task` call's child session.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildEvent {
    /// The `task` call's ref in the parent (its ACP `toolCallId`).
    pub call: String,
    /// The child session's id.
    pub session: String,
    pub step: ChildStep,
    /// The agent an `ask_agent` call's conversation is with (its question and answer are the
    /// child's, shown as a child to the ACP clients that advertised `subagents`); `None` for a
    /// `task` call's child.
    pub agent: Option<String>,
}

/// What a child session did.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildStep {
    /// It starts, before any of its events: the task's description, and whether a client may
    /// cancel it alone (its own id's cancel reaches it: `Engine::cancel_child`).
    Started {
        description: String,
        cancellable: bool,
    },
    /// One of its events, as its own session would report it.
    Event(Box<Event>),
    /// It stopped: the model calls and the tool calls it made, and how it ended.
    Ended {
        steps: u32,
        calls: u32,
        end: ChildEnd,
    },
}

/// How a child session's work ended (kept in its parent's session file: an unknown word there
/// reads as `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChildEnd {
    /// It answered.
    Answered,
    /// Its own cancel, or its parent's.
    Cancelled,
    /// It reached `tools.task.maxSteps` or its answer the token limit.
    Limit,
    /// Its model call failed, or it ended without an answer.
    #[serde(other)]
    Failed,
}

/// How a compression's summary call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactionEnd {
    /// The summary now in the history.
    Completed(String),
    /// Why it failed; the history is unchanged.
    Failed(String),
    /// The turn was cancelled first; the history is unchanged.
    Cancelled,
}

/// What a compression did (`/compact`, automatic compression). Front ends show
/// [`CompactOutcome::line`]; nothing recognises an outcome by its text.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactOutcome {
    /// The history changed: `replaced` messages became one summary, `kept` stayed after it;
    /// `before`/`after` are the history's estimates in tokens.
    Compressed {
        replaced: usize,
        kept: usize,
        before: u64,
        after: u64,
        secs: f64,
    },
    /// No turn older than the last `keep`: nothing to do (`messages` without the system prompt).
    Nothing { messages: usize, keep: usize },
    /// A `preCompact` hook denied it: the reason.
    Skipped(String),
    /// The summary call failed or wrote nothing: the explanation. The history is unchanged.
    Failed(String),
}

impl CompactOutcome {
    /// Whether the history changed.
    pub fn changed(&self) -> bool {
        match self {
            CompactOutcome::Compressed { .. } => true,
            CompactOutcome::Nothing { .. }
            | CompactOutcome::Skipped(_)
            | CompactOutcome::Failed(_) => false,
        }
    }

    /// The outcome line (docs/sessions.md, "Compression").
    pub fn line(&self) -> String {
        match self {
            CompactOutcome::Compressed {
                replaced,
                kept,
                before,
                after,
                secs,
            } => format!(
                "🗜️ compressed {replaced} messages → 1 summary + {kept} kept ({before} → {after} tokens, {secs:.1}s)"
            ),
            CompactOutcome::Nothing { messages, keep } => format!(
                "🗜️ nothing to compact: {messages} message(s), no turn older than the last {keep}"
            ),
            CompactOutcome::Skipped(reason) => format!("[compact: skipped by a hook: {reason}]"),
            CompactOutcome::Failed(e) => format!("[compact: failed, history kept: {e}]"),
        }
    }
}

/// What a tool call that ran counts as in a turn's recap (the `[acp] turn done: …` line of
/// docs/acp-reference.md, the terminal's `📖 N skill(s)`). Each tool says which, if any, in its
/// own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tally {
    Command,
    FileOp,
    Skill,
}

/// What a turn did, for the front ends' recap lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recap {
    counts: [u32; 3],
    /// The hosts the fence's network refused during the turn (distinct `host:port`s).
    refused: u32,
}

impl Recap {
    fn index(t: Tally) -> usize {
        match t {
            Tally::Command => 0,
            Tally::FileOp => 1,
            Tally::Skill => 2,
        }
    }

    pub fn add(&mut self, t: Tally) {
        self.counts[Self::index(t)] += 1;
    }

    /// Adds another recap's counts (a `task` call's child's, to its parent's turn).
    pub fn absorb(&mut self, other: Recap) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
    }

    pub fn get(&self, t: Tally) -> u32 {
        self.counts[Self::index(t)]
    }

    /// A recap with these counts (commands, file ops, skills).
    pub fn of(commands: u32, file_ops: u32, skills: u32) -> Recap {
        Recap {
            counts: [commands, file_ops, skills],
            refused: 0,
        }
    }

    /// The hosts the fence's network refused during the turn.
    pub fn refused(&self) -> u32 {
        self.refused
    }

    pub fn set_refused(&mut self, hosts: u32) {
        self.refused = hosts;
    }
}

/// A question the permission gate puts to the user.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub call: ToolCallStart,
    /// The change the call would make, when its tool can say before running (`Tool::preview`):
    /// front ends show it with the question.
    pub preview: Vec<FileDiff>,
    /// What "always" would remember for this call ([`PermissionDecision::AllowMatching`]).
    pub rule: AlwaysRule,
}

/// What "always" offers to remember for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlwaysRule {
    /// Every call of the tool (a file tool, an MCP tool).
    Tool,
    /// The command's program (with git's subcommand: `git log`) in the forms mm knows to be
    /// read-only: only the options its table allows, chaining nothing (docs/engine.md).
    ReadOnly(String),
    /// Exactly this command: the same words, chaining nothing.
    Exact,
    /// Nothing: the command chains, redirects or substitutes (no rule would let it run).
    Nothing,
}

/// The answers of the permission gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    AllowOnce,
    /// Every later call of the tool runs unasked for the session (ACP's `allow_always`).
    AllowAlways,
    /// Later calls the request's [`AlwaysRule`] matches run unasked for the session (the
    /// terminal's `[a]lways`).
    AllowMatching,
    RejectOnce,
    /// Reject it, and tell the model why (the user's words join the tool's rejection).
    RejectBecause(String),
    /// Reject this call and every later call of the tool in the session (ACP's
    /// `reject_always`).
    Never,
    /// Reject this call and, for the session, every later call of the same command (its
    /// words); of the tool when its calls have no command (the terminal's `ne[v]er`).
    NeverMatching,
}

/// The kind of one question of a form (`ask_user`).
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    Choice {
        options: Vec<String>,
        default: Option<String>,
    },
    Multi {
        options: Vec<String>,
        default: Option<Vec<String>>,
    },
    Text {
        default: Option<String>,
    },
    Confirm {
        default: Option<bool>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub question: String,
    pub kind: QuestionKind,
}

/// Questions for the user, asked by a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The `call_N` ref of the tool call asking.
    pub tool_call_id: String,
    pub questions: Vec<Question>,
}

/// One answer of a form.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerValue {
    Text(String),
    List(Vec<String>),
    Bool(bool),
    /// The question was left unanswered.
    None,
}

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    /// One value per question, in order.
    Accepted(Vec<AnswerValue>),
    Declined,
    Cancelled,
    /// Nobody can be asked (the front end cannot ask, or the client failed): the reason.
    Unavailable(String),
}

/// A question of the fence's network (docs/sandbox.md, "Asking"): a command of a session in
/// `ask` mode (or `fetch_content`) reaches a host that `tools.networkAllow` does not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkQuestion {
    /// The `call_N` ref of the call whose connection waits.
    pub tool_call_id: String,
    /// The host as the command named it, and the port.
    pub host: String,
    pub port: u16,
    /// What asked: the command's words, or `fetch_content <url>`.
    pub asker: String,
}

impl NetworkQuestion {
    /// `host:port`, `[v6]:port` for an IPv6 address.
    pub fn target(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }
}

/// The answers to a [`NetworkQuestion`]. No answer refuses later connections unasked: a "never"
/// would refuse every later command that needs the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkAnswer {
    /// This one connection.
    Once,
    /// The host, on any port, for the rest of the session (not written anywhere).
    Session,
    No,
}

/// The seam between the engine and a front end.
#[async_trait]
pub trait Frontend: Send + Sync {
    /// Reports an event. Must not block: front ends queue or write at once.
    fn emit(&self, event: Event);

    /// Asks whether a gated tool call may run. A front end that cannot ask answers `RejectOnce`;
    /// when `cancel` fires first, the question is withdrawn and the answer is `RejectOnce`.
    async fn ask_permission(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> PermissionDecision;

    /// Puts questions to the user; when `cancel` fires first, the answer is `Cancelled`.
    async fn ask_user(&self, form: Form, cancel: &CancellationToken) -> FormAnswer;

    /// Asks whether a fenced command may reach a host the allow-list does not name. A front
    /// end that cannot ask answers `No` (the refusal stands); when `cancel` fires first, `No`.
    async fn ask_network(
        &self,
        _question: NetworkQuestion,
        _cancel: &CancellationToken,
    ) -> NetworkAnswer {
        NetworkAnswer::No
    }

    /// Puts another agent's permission request to the user (agents.md, step 5): the chosen
    /// option's id, `None` for cancelled. The answer joins no allow-always/never set. A front
    /// end that cannot ask answers the agent's `reject_once` option.
    async fn ask_relayed_permission(
        &self,
        request: RelayedPermission,
        _cancel: &CancellationToken,
    ) -> Option<String> {
        request.refusal()
    }

    /// Puts another agent's form to the user; when `cancel` fires first, `Cancelled`.
    async fn ask_relayed_form(
        &self,
        _form: RelayedForm,
        _cancel: &CancellationToken,
    ) -> RelayedAnswer {
        RelayedAnswer::Unavailable(crate::relay::CANNOT_ASK.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_have_ids_and_never_loosen_below_a_floor() {
        for m in PermissionMode::ALL {
            assert_eq!(PermissionMode::parse(m.id()), Some(m));
            assert_eq!(
                serde_json::to_value(m).ok(),
                Some(serde_json::json!(m.id()))
            );
        }
        assert_eq!(PermissionMode::parse("Yolo"), None);
        assert_eq!(PermissionMode::from_yolo(true), PermissionMode::Yolo);
        assert_eq!(PermissionMode::from_yolo(false), PermissionMode::Ask);
        assert_eq!(
            PermissionMode::Yolo.at_least(PermissionMode::Ask),
            PermissionMode::Ask
        );
        assert_eq!(
            PermissionMode::ReadOnly.at_least(PermissionMode::Ask),
            PermissionMode::ReadOnly
        );
        assert_eq!(
            PermissionMode::Ask.at_least(PermissionMode::Yolo),
            PermissionMode::Ask
        );
        assert_eq!(
            PermissionMode::Yolo.at_least(PermissionMode::ReadOnly),
            PermissionMode::ReadOnly
        );
    }

    fn compressed(replaced: usize, kept: usize, before: u64, after: u64, secs: f64) -> String {
        CompactOutcome::Compressed {
            replaced,
            kept,
            before,
            after,
            secs,
        }
        .line()
    }

    #[test]
    fn the_compact_outcome_lines_are_exact() {
        assert_eq!(
            compressed(12, 4, 5230, 1410, 3.2),
            "🗜️ compressed 12 messages → 1 summary + 4 kept (5230 → 1410 tokens, 3.2s)"
        );
        assert_eq!(
            compressed(3, 0, 100, 20, 0.04),
            "🗜️ compressed 3 messages → 1 summary + 0 kept (100 → 20 tokens, 0.0s)"
        );
        assert_eq!(
            CompactOutcome::Nothing {
                messages: 3,
                keep: 2
            }
            .line(),
            "🗜️ nothing to compact: 3 message(s), no turn older than the last 2"
        );
        assert_eq!(
            CompactOutcome::Failed("the summary was empty".into()).line(),
            "[compact: failed, history kept: the summary was empty]"
        );
        assert_eq!(
            CompactOutcome::Skipped("not now".into()).line(),
            "[compact: skipped by a hook: not now]"
        );
    }
}
