//! The engine: sessions, turns, slash commands and compression. It knows nothing of ACP or the
//! terminal: it reports [`Event`]s to a [`Frontend`] and asks it questions.

pub mod compact;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::event::{ContextUsage, Frontend, Plan, Usage};
use crate::history::Message;
use crate::model::ModelClient;
use crate::skills::Catalogue;
use crate::tools::Tool;

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Cancelled,
}

/// What a turn did, for the front ends' recap lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recap {
    /// `bash` calls that ran.
    pub commands: u32,
    /// `read_file`, `write_file`, `edit_file` calls that ran.
    pub file_ops: u32,
    /// `read_skill` calls that succeeded.
    pub skills: u32,
}

/// Which slash command a prompt was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/new`; `archived_as` is the id the previous conversation was saved under.
    New {
        forgotten: usize,
        archived_as: Option<String>,
    },
    /// `/compact`; `line` is the outcome line.
    Compact { line: String },
}

/// The outcome of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptOutcome {
    /// `Err` carries the one-line explanation of a failed turn.
    pub stop: Result<StopReason, String>,
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
    /// Tool names allowed for the rest of the session.
    pub allow_always: HashSet<String>,
    /// Tool names rejected for the rest of the session.
    pub never: HashSet<String>,
    pub plan: Mutex<Option<Plan>>,
    pub skills: Arc<Catalogue>,
}

/// The engine shared by every session of the process.
pub struct Engine {
    pub config: Arc<Config>,
    pub model: Arc<dyn ModelClient>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// The process-wide `call_N` counter (never reset).
    pub call_counter: AtomicU64,
    /// Turns are serialised process-wide.
    turn_lock: tokio::sync::Mutex<()>,
}

impl Engine {
    pub fn new(config: Arc<Config>, model: Arc<dyn ModelClient>) -> Self {
        Engine {
            config,
            model,
            tools: crate::tools::builtin(),
            call_counter: AtomicU64::new(0),
            turn_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Creates a session in `cwd` (absolute): system prompt, skills, `sessionStart` hooks, and the
    /// session file when sessions are enabled.
    pub async fn new_session(&self, cwd: PathBuf, frontend: &dyn Frontend) -> Session {
        let _ = (&self.turn_lock, frontend);
        Session {
            id: String::new(),
            cwd,
            created_at: String::new(),
            history: Vec::new(),
            usage: Usage::default(),
            last_measure: None,
            last_input: None,
            chars_per_token: 4.0,
            allow_always: HashSet::new(),
            never: HashSet::new(),
            plan: Mutex::new(None),
            skills: Arc::new(Catalogue::default()),
        }
    }

    /// Runs one prompt: the text after the front end's own flattening (acp-notes.md step 1).
    /// `attached` are the paths step 1 already attached (for deduplication). Slash commands,
    /// `/skill`, `@path`, `$skill` and `userPromptSubmit` hooks are handled here; the session
    /// file is rewritten afterwards when sessions are enabled.
    pub async fn prompt(
        &self,
        session: &mut Session,
        text: &str,
        attached: &[PathBuf],
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        let _ = (session, text, attached, frontend, cancel);
        PromptOutcome {
            stop: Err("not implemented".into()),
            command: None,
            recap: None,
        }
    }

    /// The context in use: the larger of the last measure and the history's estimate.
    pub fn context_usage(&self, session: &Session) -> ContextUsage {
        let _ = session;
        ContextUsage { used: 0, size: 0 }
    }

    /// The slash commands this engine intercepts, with their descriptions.
    pub fn commands() -> &'static [(&'static str, &'static str)] {
        &[
            ("new", "Clear the history and start a new session"),
            (
                "compact",
                "Compress the history now, keeping the last turns",
            ),
        ]
    }
}
