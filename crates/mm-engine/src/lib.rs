//! The engine: sessions, turns, slash commands and compression. It knows nothing of ACP or the
//! terminal: it reports [`Event`]s to a [`Frontend`] and asks it questions.

mod builtin;
mod commands;
pub mod compact;
mod controls;
mod error;
mod mcp;
mod store;
mod turn;
pub mod undo;

pub use builtin::{BUILTIN, builtin};
pub use controls::Controls;
pub use error::{LoadError, TurnError};
pub use mcp::{ServerReport, SessionServers};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

// The layers below under the names the modules of this crate use (`crate::config::…`); the
// engine's own `mcp` module is a session's servers, mm-tools' `mcp` the client.
use mm_core::{config, event, history, paths, prompt, session, skills, writer};
use mm_model as model;
use mm_tools::{hooks, lsp, process, sandbox, tools};

use crate::config::Config;
pub use crate::event::Recap;
use crate::event::{CompactOutcome, ContextUsage, Event, Frontend, PermissionMode, Plan, Usage};
use crate::history::Message;
use crate::hooks::{HookDecision, HookEvent, HookResult, Hooks};
use crate::lsp::LspServers;
use crate::model::ModelClient;
use crate::process::Supervisor;
use crate::sandbox::{Places, Sandbox, Settings};
use crate::skills::{Catalogue, SkillDirs};
use crate::tools::{ToolSetup, Toolbox};

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Cancelled,
}

/// Which slash command a prompt was.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `/new`; `archived_as` is the id the previous conversation was saved under.
    New {
        forgotten: usize,
        archived_as: Option<String>,
    },
    /// `/compact` and what it did.
    Compact(CompactOutcome),
    /// `/undo` and what it put back.
    Undo(undo::Undone),
}

/// The outcome of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptOutcome {
    /// `Err` says why the turn failed.
    pub stop: Result<StopReason, TurnError>,
    /// `Some` when the prompt was a slash command (no model call, no hook).
    pub command: Option<Command>,
    /// The engine turn's recap; `None` for a slash command.
    pub recap: Option<Recap>,
}

/// One conversation.
pub struct Session {
    pub id: String,
    /// Absolute.
    pub cwd: PathBuf,
    /// RFC 3339, local time.
    pub created_at: String,
    /// The first prompt's first line ([`TITLE_CHARS`] characters at most); `None` until there
    /// is one (and again after `/new`).
    pub title: Option<String>,
    /// The mode and the model choice, which a front end may switch while a turn runs (it keeps
    /// a clone): the mode applies from the next tool call, the model from the next turn.
    pub controls: Controls,
    /// The model chosen among the server's that the turns ask (`None`: the configured or
    /// detected one): `controls`' choice, taken when a turn starts.
    model: Option<String>,
    /// That model's context window once probed (`Some(0)`: no probe told).
    model_window: Option<u64>,
    /// Starts with the system prompt.
    pub history: Vec<Message>,
    /// The session's totals.
    pub usage: Usage,
    /// The last model call's input + output.
    pub last_measure: Option<u64>,
    /// The last model call's input tokens.
    pub last_input: Option<u64>,
    /// Characters per token measured on the last call that reported `prompt_tokens`.
    pub chars_per_token: f64,
    /// What the user answered "always" and "never" to, for the rest of the session (kept by
    /// `/new`).
    pub rules: tools::gate::Rules,
    /// Shared with the tools that keep it.
    pub plan: Arc<Mutex<Option<Plan>>>,
    pub skills: Arc<Catalogue>,
    /// The session's tools (built-ins, and whatever the session adds later).
    pub tools: Toolbox,
    /// Warnings about the session's skills and its session folder (front ends log them with
    /// the session id).
    pub warnings: Vec<String>,
    /// Where its file is saved: `sessions.dir` resolved once when it opened (a folder that
    /// leads outside the cwd is refused, and nothing is saved).
    pub sessions_dir: Result<PathBuf, crate::session::OutsideProject>,
    /// The MCP servers the session uses; their tools join `tools` between turns.
    pub mcp: SessionServers,
    /// `sessionStart` hooks still running: the first prompt waits for them.
    start_hooks: Option<tokio::task::JoinHandle<HookResult>>,
    /// What the turns changed, for `/undo`.
    pub undo: undo::Undo,
}

/// Characters of a session's title.
pub const TITLE_CHARS: usize = 80;

/// A session's title from its first prompt: the first line that is not blank, trimmed, cut to
/// [`TITLE_CHARS`] characters (`…` ends a cut one); `None` for a prompt without text.
pub fn title_of(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() <= TITLE_CHARS {
        return Some(line.to_string());
    }
    let mut cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

/// A cwd's skill catalogue and the warnings found reading it.
pub type SkillsEntry = (Arc<Catalogue>, Vec<String>);

/// Where the engine finds the user's folders (passed in, never read from the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    /// `XDG_STATE_HOME`: mm's state folder is `<it>/mm`, else `~/.local/state/mm`.
    pub xdg_state_home: Option<PathBuf>,
}

/// The engine shared by every session of the process.
pub struct Engine {
    pub config: Arc<Config>,
    pub model: Arc<dyn ModelClient>,
    /// Every child process (tools, hooks) goes through it.
    pub processes: Arc<Supervisor>,
    /// Language servers, one per (language, cwd), started on first use by the `lsp` tool.
    pub lsp: Arc<LspServers>,
    /// What the model's commands and file writes are fenced in (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
    /// The read-only fence of `sandbox`'s places that `read-only` sessions run `bash` in,
    /// made on first use (`None` inside: the platform has none).
    read_only: std::sync::OnceLock<Option<Arc<Sandbox>>>,
    /// The process-wide `call_N` counter (never reset).
    pub call_counter: AtomicU64,
    pub env: Environment,
    /// The context window known so far (0: unknown or not yet detected).
    known_window: AtomicU64,
    /// The model's name as last detected (for session files).
    known_model: Mutex<String>,
    pub hooks: Arc<Hooks>,
    /// The MCP servers of every session, one client per (name, command, args, env, cwd).
    pub mcp: Arc<mm_tools::mcp::McpServers>,
    /// The model server was reported to a front end (once per process).
    model_announced: std::sync::atomic::AtomicBool,
    /// Skill catalogues per cwd, read once.
    skills_cache: Mutex<HashMap<PathBuf, SkillsEntry>>,
    /// Turns are serialised process-wide.
    turn_lock: tokio::sync::Mutex<()>,
    /// How deep this process is in a chain of agents asking agents (agents.md; main.rs reads
    /// it from the environment the asking agent set).
    ask_depth: u32,
    /// The process-wide compaction counter (`compaction_N` ids, never reset).
    compaction_counter: AtomicU64,
}

impl Engine {
    pub fn new(config: Arc<Config>, model: Arc<dyn ModelClient>) -> Self {
        Engine::with_processes(config, model, Supervisor::new())
    }

    /// An engine whose children and tasks go through `processes` (the binary makes it first:
    /// its signal watcher is one of the tasks).
    pub fn with_processes(
        config: Arc<Config>,
        model: Arc<dyn ModelClient>,
        processes: Arc<Supervisor>,
    ) -> Self {
        let config_window = config.context_window;
        let model_name = config.model.name.clone();
        let sandbox = Arc::new(Sandbox::new(Settings::of(&config), Places::default()));
        let (hooks, lsp, mcp) = Engine::starters(&config, &processes, &sandbox);
        Engine {
            config,
            model,
            processes,
            lsp,
            sandbox,
            read_only: std::sync::OnceLock::new(),
            call_counter: AtomicU64::new(0),
            env: Environment::default(),
            known_window: AtomicU64::new(config_window),
            known_model: Mutex::new(model_name),
            hooks,
            mcp,
            model_announced: std::sync::atomic::AtomicBool::new(false),
            skills_cache: Mutex::new(HashMap::new()),
            turn_lock: tokio::sync::Mutex::new(()),
            ask_depth: 0,
            compaction_counter: AtomicU64::new(0),
        }
    }

    /// What starts the configuration's processes (hooks, language servers, MCP servers), each
    /// inside `sandbox`'s fence.
    fn starters(
        config: &Config,
        processes: &Arc<Supervisor>,
        sandbox: &Arc<Sandbox>,
    ) -> (Arc<Hooks>, Arc<LspServers>, Arc<mm_tools::mcp::McpServers>) {
        let hooks = Hooks::new(&config.hooks, Arc::clone(processes))
            .with_bash(config.tools.bash_path.clone())
            .with_sandbox(Arc::clone(sandbox));
        let lsp = LspServers::new(config, Arc::clone(processes), Arc::clone(sandbox));
        let mcp = mm_tools::mcp::McpServers::new(
            Arc::clone(processes),
            Arc::clone(sandbox),
            config.mcp_timing,
        );
        (Arc::new(hooks), Arc::new(lsp), mcp)
    }

    /// Sets how deep this process is in a chain of agents asking agents.
    pub fn with_ask_depth(mut self, depth: u32) -> Self {
        self.ask_depth = depth;
        self
    }

    /// How deep this process is in a chain of agents asking agents.
    pub fn ask_depth(&self) -> u32 {
        self.ask_depth
    }

    /// Sets the sandbox (built by `main.rs` with the places it knows: the temp folder, the
    /// configuration files).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Arc::new(sandbox);
        self.read_only = std::sync::OnceLock::new();
        // Nothing has started yet: what starts processes takes the new fence.
        (self.hooks, self.lsp, self.mcp) =
            Engine::starters(&self.config, &self.processes, &self.sandbox);
        self
    }

    /// The fence `read-only` sessions run `bash` in; `None` where the platform has none.
    pub fn read_only_sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.read_only
            .get_or_init(|| self.sandbox.read_only().map(Arc::new))
            .as_ref()
    }

    /// Whether `read-only` mode lets commands run (inside the read-only fence): what the
    /// modes' descriptions say ([`Mode::description`]).
    pub fn read_only_runs_commands(&self) -> bool {
        self.read_only_sandbox().is_some()
    }

    /// Sets where the user's folders are (skills, configuration).
    pub fn with_env(mut self, env: Environment) -> Self {
        self.env = env;
        self
    }

    /// Creates a session in `cwd` (absolute): system prompt, skills, `sessionStart` hooks (in
    /// the background), and the session file when sessions are enabled.
    pub async fn new_session(&self, cwd: PathBuf, frontend: &dyn Frontend) -> Session {
        let now = chrono::Local::now();
        let s = self.open_session(
            Opening {
                id: crate::session::new_id(now),
                sessions_dir: self.sessions_dir(&cwd),
                cwd,
                created_at: crate::session::timestamp(now),
                title: None,
                mode: self.configured_mode(),
            },
            Vec::new(),
            Usage::default(),
            None,
        );
        self.save(&s, frontend);
        s
    }

    /// A live session: its skills, its tools, the current system prompt ahead of `messages`
    /// (which hold none), and its `sessionStart` hooks started.
    fn open_session(
        &self,
        opening: Opening,
        messages: Vec<Message>,
        usage: Usage,
        plan: Option<Plan>,
    ) -> Session {
        let Opening {
            id,
            cwd,
            sessions_dir,
            created_at,
            title,
            mode,
        } = opening;
        let (skills, mut warnings) = self.skills_for(&cwd);
        if let (true, Err(outside)) = (self.config.sessions.enabled, &sessions_dir) {
            warnings.push(outside.to_string());
        }
        let plan = Arc::new(Mutex::new(plan));
        let tools = self.tools_for(&id, &cwd, &skills, &plan);
        let mut history = Vec::with_capacity(messages.len() + 1);
        history.push(Message::system(self.system_prompt(&cwd, &tools)));
        history.extend(messages);
        let mut s = Session {
            id,
            cwd,
            created_at,
            title,
            controls: Controls::new(mode),
            model: None,
            model_window: None,
            history,
            usage,
            last_measure: None,
            last_input: None,
            chars_per_token: 4.0,
            rules: Default::default(),
            plan,
            skills,
            tools,
            warnings,
            sessions_dir,
            mcp: SessionServers::default(),
            start_hooks: None,
            undo: undo::Undo::new(
                crate::paths::state_dir(
                    self.env.home.as_deref(),
                    self.env.xdg_state_home.as_deref(),
                )
                .map(|state| state.join("undo")),
            ),
        };
        self.attach_configured_mcp(&mut s);
        self.start_session_hooks(&mut s);
        s
    }

    /// A session's built-in tools, built with their own settings and the session's state.
    fn tools_for(
        &self,
        id: &str,
        cwd: &std::path::Path,
        skills: &Arc<Catalogue>,
        plan: &Arc<Mutex<Option<Plan>>>,
    ) -> Toolbox {
        builtin(&ToolSetup {
            config: &self.config,
            session_id: id,
            cwd,
            skills,
            plan,
            processes: &self.processes,
            lsp: &self.lsp,
            ask_depth: self.ask_depth,
            sandbox: &self.sandbox,
            read_only: self.read_only_sandbox(),
        })
    }

    /// The skill catalogue of a cwd (read once per process) and the warnings found reading it.
    pub fn skills_for(&self, cwd: &std::path::Path) -> SkillsEntry {
        if let Ok(cache) = self.skills_cache.lock()
            && let Some(hit) = cache.get(cwd)
        {
            return hit.clone();
        }
        let dirs = SkillDirs {
            cwd: cwd.to_path_buf(),
            home: self.env.home.clone(),
            xdg_config: self.env.xdg_config_home.clone(),
            extra: self.config.skills.dirs.clone(),
        };
        let (cat, warnings) = Catalogue::load(&dirs);
        let entry = (Arc::new(cat), warnings);
        if let Ok(mut cache) = self.skills_cache.lock() {
            cache.insert(cwd.to_path_buf(), entry.clone());
        }
        entry
    }

    fn start_session_hooks(&self, s: &mut Session) {
        if !self.hooks.any(HookEvent::SessionStart, None) {
            return;
        }
        let hooks = self.hooks.clone();
        let (id, cwd) = (s.id.clone(), s.cwd.clone());
        s.start_hooks = Some(self.processes.tasks().spawn(async move {
            let cancel = CancellationToken::new();
            hooks
                .run(
                    HookEvent::SessionStart,
                    serde_json::json!({}),
                    None,
                    &id,
                    &cwd,
                    &cancel,
                )
                .await
        }));
    }

    /// Waits for the session's `sessionStart` hooks; their context joins the system prompt.
    async fn await_session_hooks(&self, s: &mut Session, frontend: &dyn Frontend) {
        let Some(handle) = s.start_hooks.take() else {
            return;
        };
        let Ok(result) = handle.await else { return };
        result.report(frontend);
        for ctx in result.context {
            if let Some(system) = s.history.first_mut() {
                system.content.push('\n');
                system.content.push_str(ctx.trim_end());
                system.content.push('\n');
            }
        }
    }

    /// The system prompt of a session in `cwd` with these tools.
    pub fn system_prompt(&self, cwd: &std::path::Path, tools: &Toolbox) -> String {
        let date = chrono::Local::now().format("%Y-%m-%d").to_string();
        crate::prompt::system_prompt(&crate::prompt::SystemPromptInput {
            title: &self.config.acp.title,
            cwd,
            date: &date,
            sections: &tools.prompt_sections(),
            extra: &self.config.system_prompt,
        })
    }

    /// Runs one prompt: the text after the front end's own flattening (docs/engine.md, "The prompt
    /// pipeline", step 1). `attached` are the paths step 1 already attached (for deduplication).
    /// Slash commands, `/skill`, `@path`, `$skill` and `userPromptSubmit` hooks are handled here;
    /// the session file is rewritten afterwards when sessions are enabled.
    pub async fn prompt(
        &self,
        session: &mut Session,
        text: &str,
        attached: &[PathBuf],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        // Turns are serialised process-wide; a prompt cancelled while it waits never runs.
        let _turn = tokio::select! {
            guard = self.turn_lock.lock() => guard,
            () = cancel.cancelled() => {
                // Answered like any cancelled turn (the usage, then the answer), but a slash
                // command that never ran is no engine turn: no recap for it.
                frontend.emit(Event::ContextUsage(self.context_usage(session)));
                let command = matches!(text.trim(), "/new" | "/compact" | "/undo");
                return PromptOutcome {
                    stop: Ok(StopReason::Cancelled),
                    command: None,
                    recap: (!command).then(Recap::default),
                };
            }
        };
        self.await_session_hooks(session, frontend).await;
        self.take_model_choice(session);
        let outcome = self
            .prompt_locked(session, text, attached, frontend, cancel)
            .await;
        self.save(session, frontend);
        outcome
    }

    async fn prompt_locked(
        &self,
        s: &mut Session,
        text: &str,
        attached: &[PathBuf],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        match text.trim() {
            "/new" => return self.command_new(s, frontend),
            "/compact" => return self.command_compact(s, frontend, cancel).await,
            "/undo" => return self.command_undo(s, frontend).await,
            _ => {}
        }
        let commands: Vec<&str> = Self::commands().iter().map(|(n, _)| *n).collect();
        let text = crate::skills::rewrite_slash(text, &s.skills, &commands)
            .unwrap_or_else(|| text.to_string());
        let mut full = text.clone();
        for (path, is_dir) in crate::prompt::at_paths(&text, &s.cwd) {
            if attached.contains(&path) {
                continue;
            }
            full.push_str(&crate::prompt::attachment_line(&path, is_dir));
            frontend.emit(Event::Attached(path));
        }
        let mut full = crate::skills::resolve_notation(&full, &s.skills);
        if self.hooks.any(HookEvent::UserPromptSubmit, None) {
            let input = serde_json::json!({"prompt": full});
            let r = self
                .hooks
                .run(
                    HookEvent::UserPromptSubmit,
                    input,
                    None,
                    &s.id,
                    &s.cwd,
                    cancel,
                )
                .await;
            r.report(frontend);
            if let HookDecision::Deny(reason) = &r.decision {
                let stop = if cancel.is_cancelled() {
                    StopReason::Cancelled
                } else {
                    frontend.emit(Event::Notice(format!(
                        "[prompt blocked by a hook: {reason}]"
                    )));
                    StopReason::EndTurn
                };
                frontend.emit(Event::ContextUsage(self.context_usage(s)));
                return PromptOutcome {
                    stop: Ok(stop),
                    command: None,
                    recap: Some(Recap::default()),
                };
            }
            for ctx in r.context {
                full.push('\n');
                full.push_str(&ctx);
            }
        }
        if s.title.is_none()
            && let Some(title) = title_of(&text)
        {
            s.title = Some(title.clone());
            frontend.emit(Event::Titled(title));
        }
        s.history.push(Message::user(full));
        let excluded: Vec<PathBuf> = s.sessions_dir.iter().cloned().collect();
        let read_only = s.controls.mode() == PermissionMode::ReadOnly;
        let before = s
            .undo
            .before_turn(&self.processes, &s.cwd, &s.id, &excluded, read_only)
            .await;
        let end = self.run_turn(s, frontend, cancel).await;
        let commands = end.recap.get(crate::event::Tally::Command);
        let read_only = s.controls.mode() == PermissionMode::ReadOnly;
        s.undo
            .after_turn(&self.processes, before, commands, read_only)
            .await;
        if self.hooks.any(HookEvent::TurnEnd, None) {
            let reason = match &end.stop {
                Ok(r) => stop_reason_name(*r),
                Err(_) => "error",
            };
            let input = serde_json::json!({"stopReason": reason});
            let r = self
                .hooks
                .run(
                    HookEvent::TurnEnd,
                    input,
                    None,
                    &s.id,
                    &s.cwd,
                    &CancellationToken::new(),
                )
                .await;
            r.report(frontend);
        }
        PromptOutcome {
            stop: end.stop,
            command: None,
            recap: Some(end.recap),
        }
    }

    /// The context in use: the larger of the last measure and the history's estimate. Uses the
    /// window known so far (0 while detection runs).
    pub fn context_usage(&self, session: &Session) -> ContextUsage {
        let estimate = self.estimate(session);
        let used = session.last_measure.unwrap_or(0).max(estimate);
        ContextUsage {
            used,
            size: self.window_known(session),
        }
    }

    /// The window a session's requests are measured against, as known now (0: unknown): the
    /// chosen model's once probed, else the configured or detected model's.
    fn window_known(&self, s: &Session) -> u64 {
        match (&s.model, s.model_window) {
            (Some(_), Some(w)) if self.config.context_window == 0 => w,
            _ => self.known_window.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// A session's context window: the configured one, else its chosen model's (probed once
    /// after the switch), else [`Engine::context_window`].
    pub async fn session_window(&self, s: &mut Session, cancel: &CancellationToken) -> u64 {
        if self.config.context_window > 0 {
            return self.config.context_window;
        }
        let Some(model) = &s.model else {
            return self.context_window(cancel).await;
        };
        if let Some(w) = s.model_window {
            return w;
        }
        let w = self.model.window_of(model, cancel).await;
        if cancel.is_cancelled() {
            return self.window_known(s);
        }
        s.model_window = Some(w);
        w
    }

    /// The mode the configuration gives a new session (`yolo`).
    pub fn configured_mode(&self) -> PermissionMode {
        PermissionMode::from_yolo(self.config.yolo)
    }

    /// Takes the model the session's controls chose, when it changed: from this turn on the
    /// window is probed again and the chars-per-token estimate starts afresh. Other sessions
    /// keep theirs.
    fn take_model_choice(&self, s: &mut Session) {
        let chosen = s.controls.model();
        if chosen.is_some() && chosen != s.model {
            s.model = chosen;
            s.model_window = None;
            s.chars_per_token = 4.0;
        }
    }

    /// The model the session's turns ask (the one its controls chose once a turn took it),
    /// else the one detected (empty while detection runs and no name is configured).
    pub fn model_of(&self, s: &Session) -> String {
        match s.controls.model().or_else(|| s.model.clone()) {
            Some(m) => m,
            None => self
                .known_model
                .lock()
                .map(|m| m.clone())
                .unwrap_or_default(),
        }
    }

    /// The next `compaction_N` id.
    pub(crate) fn next_compaction_id(&self) -> String {
        let n = self
            .compaction_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        format!("compaction_{n}")
    }

    /// Lets go of everything a session holds before it is dropped (`session/close`): what its
    /// tools kept (asked agents' processes) and its share of the MCP servers. Its running turn
    /// must have ended (the caller cancels it and waits for the session).
    pub fn close_session(&self, s: &mut Session) {
        s.tools.reset();
        s.mcp = SessionServers::default();
        if let Some(hooks) = s.start_hooks.take() {
            hooks.abort();
        }
    }

    /// The history's estimate: the request's characters over the measured ratio.
    pub fn estimate(&self, session: &Session) -> u64 {
        let chars = crate::history::wire_chars(&session.history) + session.tools.chars();
        let ratio = if session.chars_per_token > 0.0 {
            session.chars_per_token
        } else {
            4.0
        };
        (chars as f64 / ratio).round() as u64
    }

    /// The context window: configured, else probed (awaits detection), 0 when unknown.
    pub async fn context_window(&self, cancel: &CancellationToken) -> u64 {
        let w = if self.config.context_window > 0 {
            self.config.context_window
        } else {
            match self.model.info(cancel).await {
                Ok(i) => i.context_window,
                // Withdrawn: what was known stays known.
                Err(crate::model::ModelError::Cancelled) => {
                    return self.known_window.load(std::sync::atomic::Ordering::Relaxed);
                }
                Err(_) => 0,
            }
        };
        self.known_window
            .store(w, std::sync::atomic::Ordering::Relaxed);
        w
    }

    /// Starts the context-window probe in the background (the ACP front end, once its
    /// `initialize` is answered), so that what is sent before the first model call (a
    /// `session/load`'s `usage_update`) carries the size once it is known. Never waited for.
    pub fn probe_window_later(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let engine = Arc::clone(self);
        self.processes.tasks().spawn_until_shutdown(async move {
            engine.context_window(&CancellationToken::new()).await;
        });
    }

    /// The cap on a tool result the model sees: `tools.maxOutput`, and a quarter of a known
    /// window (in characters).
    pub fn max_output(&self, s: &Session) -> usize {
        let max = self.config.tools.max_output;
        let window = self.window_known(s);
        if window == 0 {
            return max;
        }
        max.min((window as usize / 4) * 4)
    }

    /// The next `call_N` ref.
    pub fn next_ref(&self) -> String {
        let n = self
            .call_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        format!("call_{n}")
    }

    /// The slash commands this engine intercepts, with their descriptions.
    pub fn commands() -> &'static [(&'static str, &'static str)] {
        &[
            ("new", "Clear the history and start a new session"),
            (
                "compact",
                "Compress the history now, keeping the last turns",
            ),
            (
                "undo",
                "Restore the files the last turn changed (again: the turn before)",
            ),
        ]
    }
}

/// What a session opens with, beside its history.
struct Opening {
    id: String,
    cwd: PathBuf,
    /// Resolved before (a saved session is read from it).
    sessions_dir: Result<PathBuf, crate::session::OutsideProject>,
    created_at: String,
    title: Option<String>,
    mode: PermissionMode,
}

/// The `stopReason` name hooks receive.
pub fn stop_reason_name(r: StopReason) -> &'static str {
    match r {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::MaxTurnRequests => "max_turn_requests",
        StopReason::Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_first_line_with_text_cut_to_80_characters() {
        assert_eq!(
            title_of("  fix the build \nthen test").as_deref(),
            Some("fix the build")
        );
        assert_eq!(title_of("\n\n  \n  second  ").as_deref(), Some("second"));
        assert_eq!(title_of(" \n "), None);
        let long = "é".repeat(100);
        let title = title_of(&long).unwrap_or_default();
        assert_eq!(title.chars().count(), TITLE_CHARS);
        assert!(title.ends_with("é…"));
        assert_eq!(title_of(&"x".repeat(80)), Some("x".repeat(80)));
    }
}
