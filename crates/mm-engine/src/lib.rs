//! The engine: sessions, turns, slash commands and compression. It knows nothing of ACP or the
//! terminal: it reports [`Event`]s to a [`Frontend`] and asks it questions. It is the front
//! ends' only door to the layers below: what they name of them is re-exported here.
//!
//! This file: the [`Engine`] and how it is built; a live session is session.rs, a prompt's way
//! through the engine pipeline.rs, the context window window.rs.
#![forbid(unsafe_code)]

mod ask;
mod builtin;
mod commands;
pub mod compact;
mod controls;
mod error;
mod mcp;
mod pipeline;
mod session;
mod store;
mod task;
#[cfg(test)]
mod tests;
mod turn;
pub mod undo;
mod window;

pub use builtin::{BUILTIN, builtin};
pub use commands::EngineCommand;
pub use controls::{Controls, Steered};
pub use error::{LoadError, TurnError};
pub use mcp::{McpStart, ServerReport, SessionServers};
pub use pipeline::{Command, PromptOutcome, StopReason, stop_reason_name};
pub use session::{Session, SessionView, SkillsEntry, TITLE_CHARS, title_of};

// What the front ends name of the layers below the engine, which they reach only through it
// (docs/architecture.md, "The layers"): the model server's answers, an MCP server's state, the
// answers a session remembers, and the marker of a cut output.
pub use mm_model::detect::{SMALL_WINDOW, ServerKind, small_window_warning};
pub use mm_model::{ModelError, ModelInfo, ModelList, ModelStatus, ModelStatuses};
pub use mm_tools::mcp::Phase as McpPhase;
pub use mm_tools::tools::cut;
/// What "always" and "never" remember (a session's [`SessionView::rules`]).
pub mod gate {
    pub use mm_tools::tools::gate::{Answer, Covers, Rule, rule_of};
}

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

// The layers below under the names the modules of this crate use (`crate::config::…`); the
// engine's own `mcp` module is a session's servers, mm-tools' `mcp` the client, and its own
// `session` module a live session, mm-core's `session` the files (both written in full).
use mm_core::{config, event, history, paths, prompt, relay, skills, writer};
use mm_model as model;
use mm_tools::{hooks, lsp, process, sandbox, tools};

use crate::config::Config;
use crate::event::PermissionMode;
pub use crate::event::Recap;
use crate::hooks::Hooks;
use crate::lsp::LspServers;
use crate::model::ModelClient;
use crate::process::Supervisor;
use crate::sandbox::{Places, Sandbox, Settings};

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
    /// Every child process (tools, hooks) and every task goes through it.
    pub processes: Arc<Supervisor>,
    /// What the model's commands and file writes are fenced in (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
    /// The configured hooks, run inside the fence.
    pub hooks: Arc<Hooks>,
    /// The other servers the configuration starts inside the fence.
    servers: Servers,
    /// What every session is opened with.
    setting: Setting,
    /// What is known of the model server so far.
    known: Known,
    /// The process-wide ids.
    counters: Counters,
    /// Turns are serialised process-wide.
    turn_lock: tokio::sync::Mutex<()>,
    /// The `task` calls' child sessions running now.
    running: task::Running,
}

/// The servers the configuration starts inside the engine's fence, and the read-only fence.
struct Servers {
    /// Language servers, one per (language, cwd), started on first use by the `lsp` tool.
    lsp: Arc<LspServers>,
    /// The MCP servers of every session, one client per (name, command, args, env, cwd).
    mcp: Arc<mm_tools::mcp::McpServers>,
    /// The read-only fence of the sandbox's places that `read-only` sessions run `bash` in,
    /// made on first use (`None` inside: the platform has none).
    read_only: OnceLock<Option<Arc<Sandbox>>>,
}

/// What every session is opened with beside the configuration.
struct Setting {
    env: Environment,
    /// How deep this process is in a chain of agents asking agents (agents.md; main.rs reads
    /// it from the environment the asking agent set).
    ask_depth: u32,
    /// Skill catalogues per cwd, read once.
    skills: Mutex<HashMap<PathBuf, SkillsEntry>>,
}

/// What is known of the model server so far, shared by every session.
struct Known {
    /// The context window (0: unknown or not yet detected).
    window: AtomicU64,
    /// The model's name as last detected (for session files).
    model: Mutex<String>,
    /// The model server was reported to a front end (once per process).
    announced: AtomicBool,
}

/// The process-wide ids, never reset.
#[derive(Default)]
struct Counters {
    /// `call_N`.
    call: AtomicU64,
    /// `compaction_N`.
    compaction: AtomicU64,
}

/// How an [`Engine`] is made: what the binary knows before it starts (its supervisor, the
/// user's folders, the asking depth, the sandbox with its places), each optional, then
/// [`EngineBuilder::build`] makes what starts processes once, inside that sandbox.
pub struct EngineBuilder {
    config: Arc<Config>,
    model: Arc<dyn ModelClient>,
    processes: Option<Arc<Supervisor>>,
    env: Environment,
    ask_depth: u32,
    sandbox: Option<Sandbox>,
}

impl EngineBuilder {
    /// Children and tasks go through `processes` (the binary makes it first: its signal watcher
    /// is one of the tasks); else a supervisor of the engine's own.
    pub fn processes(mut self, processes: Arc<Supervisor>) -> Self {
        self.processes = Some(processes);
        self
    }

    /// Where the user's folders are (skills, configuration, state).
    pub fn env(mut self, env: Environment) -> Self {
        self.env = env;
        self
    }

    /// How deep this process is in a chain of agents asking agents.
    pub fn ask_depth(mut self, depth: u32) -> Self {
        self.ask_depth = depth;
        self
    }

    /// The sandbox (built by the binary with the places it knows: the temp folder, the
    /// configuration files); else the configuration's with no places.
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    pub fn build(self) -> Engine {
        let EngineBuilder {
            config,
            model,
            processes,
            env,
            ask_depth,
            sandbox,
        } = self;
        let processes = processes.unwrap_or_else(Supervisor::new);
        let sandbox = Arc::new(
            sandbox.unwrap_or_else(|| Sandbox::new(Settings::of(&config), Places::default())),
        );
        // What starts the configuration's processes (hooks, language servers, MCP servers),
        // each inside the sandbox's fence.
        let hooks = Hooks::new(&config.hooks, Arc::clone(&processes))
            .with_bash(config.tools.bash_path.clone())
            .with_sandbox(Arc::clone(&sandbox));
        let servers = Servers {
            lsp: Arc::new(LspServers::new(
                &config,
                Arc::clone(&processes),
                Arc::clone(&sandbox),
            )),
            mcp: mm_tools::mcp::McpServers::new(
                Arc::clone(&processes),
                Arc::clone(&sandbox),
                config.mcp_timing,
            ),
            read_only: OnceLock::new(),
        };
        let known = Known {
            window: AtomicU64::new(config.context_window),
            model: Mutex::new(config.model.name.clone()),
            announced: AtomicBool::new(false),
        };
        Engine {
            config,
            model,
            processes,
            sandbox,
            hooks: Arc::new(hooks),
            servers,
            setting: Setting {
                env,
                ask_depth,
                skills: Mutex::new(HashMap::new()),
            },
            known,
            counters: Counters::default(),
            turn_lock: tokio::sync::Mutex::new(()),
            running: task::Running::default(),
        }
    }
}

impl Engine {
    /// An engine with a supervisor of its own, no user folders and the configuration's sandbox.
    pub fn new(config: Arc<Config>, model: Arc<dyn ModelClient>) -> Self {
        Engine::builder(config, model).build()
    }

    /// An engine made step by step ([`EngineBuilder`]).
    pub fn builder(config: Arc<Config>, model: Arc<dyn ModelClient>) -> EngineBuilder {
        EngineBuilder {
            config,
            model,
            processes: None,
            env: Environment::default(),
            ask_depth: 0,
            sandbox: None,
        }
    }

    /// How deep this process is in a chain of agents asking agents.
    pub fn ask_depth(&self) -> u32 {
        self.setting.ask_depth
    }

    /// Where the user's folders are.
    pub fn env(&self) -> &Environment {
        &self.setting.env
    }

    /// The fence `read-only` sessions run `bash` in; `None` where the platform has none.
    pub fn read_only_sandbox(&self) -> Option<&Arc<Sandbox>> {
        self.servers
            .read_only
            .get_or_init(|| self.sandbox.read_only().map(Arc::new))
            .as_ref()
    }

    /// Whether `read-only` mode lets commands run (inside the read-only fence): what the
    /// modes' descriptions say ([`PermissionMode::description`]).
    pub fn read_only_runs_commands(&self) -> bool {
        self.read_only_sandbox().is_some()
    }

    /// The mode the configuration gives a new session (`yolo`).
    pub fn configured_mode(&self) -> PermissionMode {
        PermissionMode::from_yolo(self.config.yolo)
    }

    /// Cancels the running child session `id` of a `task` call (a client's `session/cancel` on
    /// it): the task ends, its parent's turn goes on. `false` when no child runs under that id.
    pub fn cancel_child(&self, id: &str) -> bool {
        self.running.cancel(id)
    }

    /// The next `call_N` ref.
    pub fn next_ref(&self) -> String {
        let n = self.counters.call.fetch_add(1, Ordering::Relaxed) + 1;
        format!("call_{n}")
    }

    /// The next `compaction_N` id.
    pub(crate) fn next_compaction_id(&self) -> String {
        let n = self.counters.compaction.fetch_add(1, Ordering::Relaxed) + 1;
        format!("compaction_{n}")
    }
}
