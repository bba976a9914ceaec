//! Tools: one trait, one file per tool, one dispatcher that runs the gates.

pub mod ask_user;
pub mod bash;
pub mod cut;
pub mod decode;
pub mod dispatch;
pub mod edit_file;
pub mod fetch_content;
pub mod gate;
pub mod lsp;
pub mod mcp;
pub mod plan;
pub mod read_file;
pub mod read_skill;
pub mod repeat;
pub mod task;
pub mod write_file;

pub use cut::cap_output;

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::event::{
    ChildEvent, ChildStep, Event, FileDiff, Form, FormAnswer, Frontend, NetworkAnswer,
    NetworkQuestion, PermissionMode, Plan, Question, Tally, ToolCallStart, ToolKind, ToolStatus,
};
use crate::lsp::LspServers;
use crate::process::Supervisor;
use crate::relay::{RelayedAnswer, RelayedForm, RelayedOption, RelayedPermission};
use crate::sandbox::Sandbox;
use crate::skills::Catalogue;
use crate::writer::Journal;

/// What a session's tools are built with: each tool takes the settings and the session state
/// it needs, and nothing else reaches it.
pub struct ToolSetup<'a> {
    pub config: &'a Config,
    pub session_id: &'a str,
    /// The session's working directory (absolute).
    pub cwd: &'a Path,
    pub skills: &'a Arc<Catalogue>,
    pub plan: &'a Arc<Mutex<Option<Plan>>>,
    /// Every child process goes through it.
    pub processes: &'a Arc<Supervisor>,
    /// The process's language servers (started on first use, kept for the process).
    pub lsp: &'a Arc<LspServers>,
    /// How deep this process is in a chain of agents asking agents (0: asked by no agent).
    pub ask_depth: u32,
    /// The sandbox (docs/sandbox.md): `bash` runs its commands in `sandbox.fence(cwd)`; a tool
    /// that writes a file asks `sandbox.check_write(cwd, path)` first.
    pub sandbox: &'a Arc<Sandbox>,
    /// The fence a session in `read-only` mode runs `bash` in ([`Sandbox::read_only`]);
    /// `None` where the platform has none (`bash` is then refused in that mode).
    pub read_only: Option<&'a Arc<Sandbox>>,
}

/// Builds a tool for a session; `None` when the tool is not offered (nothing to do for it). The
/// engine lists the built-in builders (`mm_engine::BUILTIN`: these tools and `ask_agent`).
pub type Builder = fn(&ToolSetup<'_>) -> Option<Arc<dyn Tool>>;

/// A child conversation's own cancellation ([`CallContext::hold_child`]); its id stops
/// reaching it when this drops.
pub struct HeldChild<'a> {
    subagents: &'a dyn task::Subagents,
    id: String,
    pub token: CancellationToken,
}

impl Drop for HeldChild<'_> {
    fn drop(&mut self) {
        self.subagents.release(&self.id);
    }
}

/// The narrow handle a running call gets: who it is, where it runs, its cancellation, and the
/// three things it may ask of the front end (show progress, ask the user, see the cap).
pub struct CallContext<'a> {
    /// The `call_N` ref of this call (ACP `toolCallId`).
    pub id: &'a str,
    /// The session's id (empty where no session runs the call).
    pub session: &'a str,
    /// The session's working directory (absolute).
    pub cwd: &'a Path,
    /// Characters of any result (the dispatcher caps again; tools that stream output use it to
    /// bound their memory).
    pub max_output: usize,
    /// Fires when the turn is cancelled.
    pub cancel: &'a CancellationToken,
    /// The session's mode at this call (the one the dispatcher gated it with): what a tool that
    /// hands work on (`ask_agent`) passes along.
    pub mode: PermissionMode,
    frontend: &'a dyn Frontend,
    /// Where the file tools note what they replace, for `/undo` (`None`: nothing is noted).
    journal: Option<&'a Journal>,
    /// What runs a `task` call's child session (`None`: nothing can, as in a child).
    subagents: Option<&'a dyn task::Subagents>,
}

impl<'a> CallContext<'a> {
    pub fn new(
        id: &'a str,
        cwd: &'a Path,
        max_output: usize,
        cancel: &'a CancellationToken,
        mode: PermissionMode,
        frontend: &'a dyn Frontend,
    ) -> Self {
        CallContext {
            id,
            session: "",
            cwd,
            max_output,
            cancel,
            mode,
            frontend,
            journal: None,
            subagents: None,
        }
    }

    /// The call runs in session `session`.
    pub fn with_session(mut self, session: &'a str) -> Self {
        self.session = session;
        self
    }

    /// A `task` call runs its child session with `subagents` (the engine's).
    pub fn with_subagents(mut self, subagents: Option<&'a dyn task::Subagents>) -> Self {
        self.subagents = subagents;
        self
    }

    /// What runs a `task` call's child session, when one can start here.
    pub fn subagents(&self) -> Option<&'a dyn task::Subagents> {
        self.subagents
    }

    /// The call notes the files it replaces in `journal` (the engine's, for `/undo`).
    pub fn with_journal(mut self, journal: Option<&'a Journal>) -> Self {
        self.journal = journal;
        self
    }

    /// Where a tool that writes files notes what it replaces (`writer::write_noted`).
    pub fn journal(&self) -> Option<&'a Journal> {
        self.journal
    }

    /// Shows progress text of the running call (ACP `tool_call_update` content; a dim line in
    /// the terminal).
    pub fn progress(&self, text: impl Into<String>) {
        self.frontend.emit(Event::ToolCallProgress {
            id: self.id.to_string(),
            text: text.into(),
        });
    }

    /// The id the conversation this call holds (`ask_agent`) has as a child session,
    /// `<session>/<call ref>`; `None` where no session runs the call (`/ask`, `mm --ask`).
    fn child_id(&self) -> Option<String> {
        (!self.session.is_empty()).then(|| format!("{}/{}", self.session, self.id))
    }

    /// The conversation this call holds is a child session ([`CallContext::show_child`]'s id):
    /// a token of its own, fired by the turn's cancel and by a client's cancel of that id alone,
    /// held until the guard drops; `None` where nothing registers children (no session, a call
    /// of a `task`'s child).
    pub fn hold_child(&self) -> Option<HeldChild<'a>> {
        let subagents = self.subagents?;
        let id = self.child_id()?;
        let token = subagents.hold(&id, self.cancel);
        Some(HeldChild {
            subagents,
            id,
            token,
        })
    }

    /// The same call, cancelled by `cancel` instead of the turn's token (a held child's).
    pub fn with_cancel<'b>(&'b self, cancel: &'b CancellationToken) -> CallContext<'b> {
        CallContext {
            id: self.id,
            session: self.session,
            cwd: self.cwd,
            max_output: self.max_output,
            cancel,
            mode: self.mode,
            frontend: self.frontend,
            journal: self.journal,
            subagents: self.subagents,
        }
    }

    /// Shows a step of the conversation this call holds with `agent` (`ask_agent`) as a child
    /// session, `<session>/<call ref>`, to the front ends that show children; nothing for a call
    /// no session runs (`/ask`, `mm --ask`: its question is the user's, not a child's).
    pub fn show_child(&self, agent: &str, step: ChildStep) {
        let Some(session) = self.child_id() else {
            return;
        };
        self.frontend.emit(Event::Child(ChildEvent {
            call: self.id.to_string(),
            session,
            step,
            agent: Some(agent.to_string()),
        }));
    }

    /// Shows the session's plan as it now is (ACP `plan` update; a checklist in the terminal).
    pub fn report_plan(&self, plan: &Plan) {
        self.frontend.emit(Event::Plan(plan.clone()));
    }

    /// Puts questions to the user; `Cancelled` when the turn is cancelled first.
    pub async fn ask_user(&self, questions: Vec<Question>) -> FormAnswer {
        let form = Form {
            tool_call_id: self.id.to_string(),
            questions,
        };
        self.frontend.ask_user(form, self.cancel).await
    }

    /// Asks the user whether this call may reach `host:port`, which the allow-list does not
    /// name (`asker`: what connects, the command's words); `No` when the turn is cancelled.
    pub async fn ask_network(&self, host: String, port: u16, asker: &str) -> NetworkAnswer {
        let question = NetworkQuestion {
            tool_call_id: self.id.to_string(),
            host,
            port,
            asker: asker.to_string(),
        };
        self.frontend.ask_network(question, self.cancel).await
    }

    /// Puts another agent's permission request to the user, for this call (the answer joins
    /// no allow-always/never set): the chosen option's id, `None` for cancelled.
    pub async fn ask_relayed_permission(
        &self,
        title: String,
        options: Vec<RelayedOption>,
    ) -> Option<String> {
        let request = RelayedPermission {
            tool_call_id: self.id.to_string(),
            title,
            options,
        };
        self.frontend
            .ask_relayed_permission(request, self.cancel)
            .await
    }

    /// Puts another agent's form (its schema unchanged) to the user, for this call.
    pub async fn ask_relayed_form(
        &self,
        agent: &str,
        message: String,
        schema: Value,
    ) -> RelayedAnswer {
        let form = RelayedForm {
            tool_call_id: self.id.to_string(),
            agent: agent.to_string(),
            message,
            schema,
        };
        self.frontend.ask_relayed_form(form, self.cancel).await
    }
}

/// How a call ended: what the front ends show (`status`) and whether it counts in the turn's
/// recap (`ran`) follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tool ran and finished (a command's non-zero exit included).
    Completed,
    /// The tool did not run (bad arguments, a path that does not exist, a refused write, what
    /// could not start): the text explains why, for the model to act on.
    NotRun,
    /// The tool ran but did not finish (timed out, cancelled, an error its server reported).
    Interrupted,
}

impl Outcome {
    /// What the front ends show.
    pub fn status(self) -> ToolStatus {
        match self {
            Outcome::Completed => ToolStatus::Completed,
            Outcome::NotRun | Outcome::Interrupted => ToolStatus::Failed,
        }
    }

    /// Only calls that ran count in a turn's recap.
    pub fn ran(self) -> bool {
        match self {
            Outcome::Completed | Outcome::Interrupted => true,
            Outcome::NotRun => false,
        }
    }
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model receives.
    pub text: String,
    pub outcome: Outcome,
    /// File changes, for front ends that show diffs.
    pub diffs: Vec<FileDiff>,
}

impl ToolOutput {
    fn new(text: impl Into<String>, outcome: Outcome) -> Self {
        ToolOutput {
            text: text.into(),
            outcome,
            diffs: Vec::new(),
        }
    }

    /// The tool ran.
    pub fn completed(text: impl Into<String>) -> Self {
        ToolOutput::new(text, Outcome::Completed)
    }

    /// The tool did not run (bad arguments, a path that does not exist, …): the text explains
    /// why, for the model to act on.
    pub fn not_run(text: impl Into<String>) -> Self {
        ToolOutput::new(text, Outcome::NotRun)
    }

    /// The tool ran but did not finish (timed out, cancelled).
    pub fn interrupted(text: impl Into<String>) -> Self {
        ToolOutput::new(text, Outcome::Interrupted)
    }

    /// What the front ends show.
    pub fn status(&self) -> ToolStatus {
        self.outcome.status()
    }
}

/// A call's arguments, parsed once by its tool ([`Tool::parse`]) before the hooks and the
/// permission gate: what the gate asks about, the hooks see and the tool runs is this one value.
pub struct Parsed {
    /// The arguments as the model sent them (what the hooks receive).
    raw: Value,
    /// The tool's typed arguments ([`TypedTool::Args`]); `None` for a tool whose schema is not
    /// ours (an MCP server's).
    typed: Option<Box<dyn Any + Send + Sync>>,
}

impl Parsed {
    /// Arguments a tool takes as they are (an MCP server's tool: its server checks them).
    pub fn untyped(raw: Value) -> Self {
        Parsed { raw, typed: None }
    }

    fn typed<T: Any + Send + Sync>(raw: Value, typed: T) -> Self {
        Parsed {
            raw,
            typed: Some(Box::new(typed)),
        }
    }

    /// The arguments as the model sent them.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    pub fn into_raw(self) -> Value {
        self.raw
    }

    /// The typed arguments, when they are a `T`.
    fn get<T: Any>(&self) -> Option<&T> {
        self.typed.as_ref()?.downcast_ref()
    }
}

/// What a tool is, whatever a call's arguments: its name and description, how a call is
/// announced before its arguments are parsed (the title, the kind, the locations read them raw,
/// since a call with bad arguments is announced too), and how the gate, the recap, the system
/// prompt and `/new` treat it. Every tool implements it once, in its file; the calls themselves
/// are [`TypedTool`] (built-in tools) or [`Tool`] (an MCP server's).
pub trait Describe: Send + Sync {
    fn name(&self) -> &str;
    /// The description sent to the model: short, it is paid for on every request.
    fn description(&self) -> &str;
    fn kind(&self, args: &Value) -> ToolKind;
    /// The title front ends show (`bash: ls`); `args` may be malformed.
    fn title(&self, args: &Value) -> String;
    /// Absolute paths the call involves.
    fn locations(&self, _args: &Value, _cwd: &Path) -> Vec<PathBuf> {
        Vec::new()
    }
    /// Whether a gated call still runs in `read-only` mode, unasked, because it cannot write
    /// there (`bash` inside the read-only fence).
    fn runs_read_only(&self) -> bool {
        false
    }
    /// Whether the gate asks even in `yolo` mode (an MCP server's `permissions = "ask"`).
    fn always_gated(&self) -> bool {
        false
    }
    /// What the model receives when the user rejects a call.
    fn rejected(&self) -> String {
        format!("[{} rejected by the user]", self.name())
    }
    /// What a call of this tool that ran counts as in the turn's recap.
    fn tally(&self) -> Option<Tally> {
        None
    }
    /// A section of the system prompt this tool needs (the skill catalogue, the agents), built
    /// once per session; `None` for most tools.
    fn prompt_section(&self) -> Option<String> {
        None
    }
    /// The session starts afresh (`/new`): let go of what was kept for follow-ups (the
    /// processes of asked agents).
    fn reset(&self) {}
}

/// A built-in tool's calls, their arguments declared once as `Args`: the schema the model sees
/// is derived from it, and the dispatcher parses a call's arguments into it once, before the
/// hooks and the gate ([`Tool::parse`]); `gated`, `rule_subject`, `preview` and `run` get that
/// value (a call whose arguments do not parse never reaches them, nor the user: the model is
/// told the mistake).
#[async_trait]
pub trait TypedTool: Describe {
    type Args: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static;

    /// The JSON schema of the arguments: derived from `Args`; a tool overrides it only to send
    /// a shorter hand-written one.
    fn parameters(&self) -> Value {
        schema_of::<Self::Args>()
    }
    /// Whether the permission gate asks before this call runs in `ask` mode (`yolo = false`); in
    /// `read-only` mode such a call is refused.
    fn gated(&self, args: &Self::Args) -> bool;
    /// The file changes this call would make, computed without making them, for the permission
    /// question; empty when the tool changes no file or cannot tell (a failed edit: the run
    /// says why).
    fn preview(&self, _args: &Self::Args, _cwd: &Path) -> Vec<FileDiff> {
        Vec::new()
    }
    /// What the permission gate matches a remembered rule against (`bash`: the command);
    /// `None`: "always" remembers the whole tool.
    fn rule_subject(&self, _args: &Self::Args) -> Option<String> {
        None
    }
    /// Runs a call whose arguments parsed. A mistake found later is a `not_run` output
    /// explaining it, never a panic.
    async fn run(&self, args: Self::Args, call: &CallContext<'_>) -> ToolOutput;
}

/// The face the dispatcher sees: a tool ([`Describe`]) and its calls with their arguments
/// erased. A call's arguments are parsed once ([`Tool::parse`]) into a [`Parsed`] that the
/// hooks, the gate and the run share. Every [`TypedTool`] has it through one blanket
/// implementation; an MCP server's tool, whose schema is the server's, implements it directly.
#[async_trait]
pub trait Tool: Describe {
    /// The JSON schema of the arguments.
    fn parameters(&self) -> Value;
    /// Parses a call's arguments, once, before the hooks and the gate see it; the error is what
    /// the model receives (no one is asked about a call that does not fit the tool).
    fn parse(&self, args: Value) -> Result<Parsed, String> {
        Ok(Parsed::untyped(args))
    }
    /// [`TypedTool::gated`], for parsed arguments.
    fn gated(&self, args: &Parsed) -> bool;
    /// [`TypedTool::rule_subject`], for parsed arguments.
    fn rule_subject(&self, _args: &Parsed) -> Option<String> {
        None
    }
    /// [`TypedTool::preview`], for parsed arguments.
    fn preview(&self, _args: &Parsed, _cwd: &Path) -> Vec<FileDiff> {
        Vec::new()
    }
    /// Runs a call whose arguments parsed. A mistake found later is a `not_run` output
    /// explaining it, never a panic.
    async fn run_parsed(&self, args: Parsed, call: &CallContext<'_>) -> ToolOutput;
    /// Parses the arguments and runs the call (for callers without a dispatcher: tests,
    /// benchmarks); arguments that do not parse are a `not_run` output explaining the mistake.
    async fn run(&self, args: Value, call: &CallContext<'_>) -> ToolOutput {
        match self.parse(args) {
            Ok(parsed) => self.run_parsed(parsed, call).await,
            Err(complaint) => ToolOutput::not_run(complaint),
        }
    }
}

// Arguments this tool did not parse cannot reach `gated`, `preview`, `rule_subject` (the
// dispatcher parses with the same tool); were they to, the gate asks and the run parses again.
#[async_trait]
impl<T: TypedTool> Tool for T {
    fn parameters(&self) -> Value {
        TypedTool::parameters(self)
    }
    fn parse(&self, args: Value) -> Result<Parsed, String> {
        match T::Args::deserialize(&args) {
            Ok(typed) => Ok(Parsed::typed(args, typed)),
            Err(e) => Err(format!(
                "[bad arguments for {}: {e}; arguments given: {args}]",
                self.name()
            )),
        }
    }
    fn gated(&self, args: &Parsed) -> bool {
        args.get::<T::Args>()
            .is_none_or(|args| TypedTool::gated(self, args))
    }
    fn rule_subject(&self, args: &Parsed) -> Option<String> {
        args.get::<T::Args>()
            .and_then(|args| TypedTool::rule_subject(self, args))
    }
    fn preview(&self, args: &Parsed, cwd: &Path) -> Vec<FileDiff> {
        args.get::<T::Args>()
            .map(|args| TypedTool::preview(self, args, cwd))
            .unwrap_or_default()
    }
    async fn run_parsed(&self, args: Parsed, call: &CallContext<'_>) -> ToolOutput {
        let typed = match args.typed.map(|t| t.downcast::<T::Args>()) {
            Some(Ok(typed)) => *typed,
            Some(Err(_)) | None => match Tool::parse(self, args.raw) {
                Ok(parsed) => return Tool::run_parsed(self, parsed, call).await,
                Err(complaint) => return ToolOutput::not_run(complaint),
            },
        };
        TypedTool::run(self, typed, call).await
    }
}

/// The tool definition sent to the model.
pub fn wire_definition(tool: &dyn Tool) -> Value {
    serde_json::json!({
        "type": "function",
        "function": {"name": tool.name(), "description": tool.description(), "parameters": tool.parameters()},
    })
}

/// One copy of each distinct tool definition for the whole process, however many sessions
/// offer it: a definition held as a JSON value takes a few kilobytes, and every session builds
/// the same dozen (docs/acp.md, "Load and memory"). Returns it with its length as JSON.
fn shared_definition(definition: Value) -> (Arc<Value>, usize) {
    static SHARED: OnceLock<Mutex<HashMap<String, Arc<Value>>>> = OnceLock::new();
    let text = definition.to_string();
    let len = text.len();
    let mut shared = SHARED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let definition = Arc::clone(shared.entry(text).or_insert_with(|| Arc::new(definition)));
    (definition, len)
}

/// A session's tool set: cheap to clone, never changed in place (a turn keeps the set it
/// started with); a different set is a new `Toolbox`, with its definitions measured again.
#[derive(Clone, Default)]
pub struct Toolbox {
    inner: Arc<ToolboxInner>,
}

#[derive(Default)]
struct ToolboxInner {
    tools: Vec<Arc<dyn Tool>>,
    definitions: Vec<Arc<Value>>,
    /// Characters of the definitions in a request (for the history's estimate).
    chars: usize,
}

impl Toolbox {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut chars = 0;
        let definitions = tools
            .iter()
            .map(|t| {
                let (definition, len) = shared_definition(wire_definition(t.as_ref()));
                chars += len;
                definition
            })
            .collect();
        Toolbox {
            inner: Arc::new(ToolboxInner {
                tools,
                definitions,
                chars,
            }),
        }
    }

    /// This set plus `more` (a tool of the same name as one already here is left out).
    pub fn with(&self, more: Vec<Arc<dyn Tool>>) -> Self {
        let mut tools = self.inner.tools.clone();
        for t in more {
            if self.get(t.name()).is_none() {
                tools.push(t);
            }
        }
        Toolbox::new(tools)
    }

    /// This set without the tools named in `names`.
    pub fn without(&self, names: &[String]) -> Self {
        if names.is_empty() {
            return self.clone();
        }
        let tools = self
            .inner
            .tools
            .iter()
            .filter(|t| !names.iter().any(|n| n == t.name()))
            .cloned()
            .collect();
        Toolbox::new(tools)
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.inner.tools.iter().find(|t| t.name() == name)
    }

    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.inner.tools
    }

    pub fn names(&self) -> Vec<String> {
        self.inner
            .tools
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// The definitions sent to the model, in order.
    pub fn definitions(&self) -> Vec<Value> {
        self.inner
            .definitions
            .iter()
            .map(|d| Value::clone(d))
            .collect()
    }

    /// Characters of the definitions in a request.
    pub fn chars(&self) -> usize {
        self.inner.chars
    }

    /// Lets every tool forget what it kept for follow-ups (`/new`).
    pub fn reset(&self) {
        for t in &self.inner.tools {
            t.reset();
        }
    }

    /// The system prompt's sections that the tools bring, in order.
    pub fn prompt_sections(&self) -> Vec<String> {
        self.inner
            .tools
            .iter()
            .filter_map(|t| t.prompt_section())
            .collect()
    }

    /// How a call is announced (title, kind, locations), as the live tool gives it; an unknown
    /// tool: its name and `execute`. `arguments` that are not JSON go as a string.
    pub fn describe(
        &self,
        call_ref: &str,
        name: &str,
        arguments: &str,
        cwd: &Path,
    ) -> ToolCallStart {
        let (args, _) = parse_raw_args(arguments);
        self.describe_args(call_ref, name, args, cwd)
    }

    /// [`Toolbox::describe`] for arguments already read as JSON ([`parse_raw_args`]).
    pub fn describe_args(
        &self,
        call_ref: &str,
        name: &str,
        args: Value,
        cwd: &Path,
    ) -> ToolCallStart {
        match self.get(name) {
            Some(tool) => ToolCallStart {
                id: call_ref.to_string(),
                name: name.to_string(),
                title: tool.title(&args),
                kind: tool.kind(&args),
                locations: tool.locations(&args, cwd),
                raw_input: args,
            },
            None => ToolCallStart {
                id: call_ref.to_string(),
                name: name.to_string(),
                title: name.to_string(),
                kind: ToolKind::Execute,
                raw_input: args,
                locations: Vec::new(),
            },
        }
    }
}

/// The arguments as a JSON value: a string when they are not JSON.
pub fn parse_raw_args(arguments: &str) -> (Value, Option<String>) {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => (v, None),
        Err(e) => (Value::String(arguments.to_string()), Some(e.to_string())),
    }
}

/// The JSON schema of an argument struct, trimmed of what the model does not need
/// (`$schema`, `title`) to keep requests small.
pub fn schema_of<T: schemars::JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("$schema");
        m.remove("title");
    }
    compact_schema(&mut v);
    v
}

/// Shrinks a derived schema to what a model needs, since every request pays for it: `$defs`
/// inlined, optional fields no longer spelled nullable (they are optional already), integer
/// formats and bounds dropped.
pub fn compact_schema(schema: &mut Value) {
    let defs = match schema {
        Value::Object(m) => m.remove("$defs"),
        _ => None,
    };
    compact_node(schema, defs.as_ref());
}

fn compact_node(v: &mut Value, defs: Option<&Value>) {
    match v {
        Value::Object(m) => {
            if let Some(target) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| defs.and_then(|d| d.get(name)))
                .cloned()
            {
                m.remove("$ref");
                if let Value::Object(t) = target {
                    for (k, val) in t {
                        m.entry(k).or_insert(val);
                    }
                }
            }
            // `anyOf: [X, {type: null}]` is X.
            if let Some(Value::Array(any)) = m.get("anyOf")
                && any.len() == 2
                && any
                    .iter()
                    .any(|a| a.get("type") == Some(&Value::from("null")))
            {
                let keep = any
                    .iter()
                    .find(|a| a.get("type") != Some(&Value::from("null")))
                    .cloned();
                m.remove("anyOf");
                if let Some(Value::Object(t)) = keep {
                    for (k, val) in t {
                        m.entry(k).or_insert(val);
                    }
                }
                return compact_node(v, defs);
            }
            if let Some(Value::Array(types)) = m.get("type")
                && types.len() == 2
                && types.contains(&Value::from("null"))
                && let Some(t) = types.iter().find(|t| *t != &Value::from("null")).cloned()
            {
                m.insert("type".into(), t);
            }
            m.remove("format");
            m.remove("minimum");
            m.remove("additionalProperties");
            for (key, child) in m.iter_mut() {
                match (key.as_str(), child) {
                    // The keys of `properties` are parameter names (a parameter may be called
                    // `format`): only their values are schemas.
                    ("properties", Value::Object(props)) => {
                        props.values_mut().for_each(|c| compact_node(c, defs))
                    }
                    (_, c) => compact_node(c, defs),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| compact_node(c, defs)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str);

    impl Describe for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "A tool of the memory test."
        }
        fn kind(&self, _args: &Value) -> ToolKind {
            ToolKind::Other
        }
        fn title(&self, _args: &Value) -> String {
            self.0.to_string()
        }
    }

    #[async_trait]
    impl Tool for Named {
        fn parameters(&self) -> Value {
            serde_json::json!({"type": "object", "properties": {"x": {"type": "string"}}})
        }
        fn gated(&self, _args: &Parsed) -> bool {
            false
        }
        async fn run_parsed(&self, _args: Parsed, _call: &CallContext<'_>) -> ToolOutput {
            ToolOutput::completed("")
        }
    }

    /// Keeps the sessions of the child events it is shown.
    #[derive(Default)]
    struct Children(Mutex<Vec<String>>);

    #[async_trait]
    impl Frontend for Children {
        fn emit(&self, event: Event) {
            if let Event::Child(c) = event {
                self.0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(c.session);
            }
        }
        async fn ask_permission(
            &self,
            _r: crate::event::PermissionRequest,
            _c: &CancellationToken,
        ) -> crate::event::PermissionDecision {
            crate::event::PermissionDecision::RejectOnce
        }
        async fn ask_user(&self, _f: Form, _c: &CancellationToken) -> FormAnswer {
            FormAnswer::Unavailable("a test".into())
        }
    }

    #[test]
    fn an_asked_agent_s_conversation_is_a_child_only_in_a_session() {
        let (fe, cancel) = (Children::default(), CancellationToken::new());
        let call = CallContext::new(
            "call_2",
            Path::new("/"),
            10,
            &cancel,
            PermissionMode::Ask,
            &fe,
        );
        let started = || ChildStep::Started {
            description: "second: go".into(),
            cancellable: false,
        };
        // `/ask`, `mm --ask`: no session, no child (it would never be announced).
        call.show_child("second", started());
        let call = call.with_session("s1");
        call.show_child("second", started());
        assert_eq!(
            *fe.0.lock().unwrap_or_else(PoisonError::into_inner),
            ["s1/call_2"]
        );
    }

    #[test]
    fn sessions_share_one_copy_of_each_tool_definition() {
        // Each session builds its own tools; their definitions, a few kilobytes each as JSON
        // values, must not be held once per session (bench/load.sh: RSS per idle session).
        let a = Toolbox::new(vec![
            Arc::new(Named("memtest_a")),
            Arc::new(Named("memtest_b")),
        ]);
        let b = Toolbox::new(vec![
            Arc::new(Named("memtest_a")),
            Arc::new(Named("memtest_b")),
        ]);
        for (x, y) in a.inner.definitions.iter().zip(&b.inner.definitions) {
            assert!(Arc::ptr_eq(x, y), "{x} is held twice");
        }
        assert!(!Arc::ptr_eq(
            &a.inner.definitions[0],
            &a.inner.definitions[1]
        ));
        assert_eq!(a.definitions()[1]["function"]["name"], "memtest_b");
        assert_eq!(
            a.chars(),
            a.definitions()
                .iter()
                .map(|d| d.to_string().len())
                .sum::<usize>()
        );
    }

    #[test]
    fn a_compact_schema_inlines_definitions_and_drops_nullability() {
        let mut v = serde_json::json!({
            "$defs": {"A": {"type": "string", "enum": ["x", "y"]}},
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/A"},
                "b": {"description": "d", "anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]},
                "n": {"type": ["integer", "null"], "format": "uint", "minimum": 0},
                "format": {"type": "string", "format": "uri"},
            },
            "additionalProperties": false,
        });
        compact_schema(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string", "enum": ["x", "y"]},
                    "b": {"description": "d", "type": "string", "enum": ["x", "y"]},
                    "n": {"type": "integer"},
                    "format": {"type": "string"},
                },
            })
        );
    }
}
