//! The engine: sessions, turns, slash commands and compression. It knows nothing of ACP or the
//! terminal: it reports [`Event`]s to a [`Frontend`] and asks it questions.

pub mod compact;
mod turn;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::event::{ContextUsage, Event, Frontend, Plan, Usage};
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

/// Where the engine finds the user's folders (passed in, never read from the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
}

/// The engine shared by every session of the process.
pub struct Engine {
    pub config: Arc<Config>,
    pub model: Arc<dyn ModelClient>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// The process-wide `call_N` counter (never reset).
    pub call_counter: AtomicU64,
    pub env: Environment,
    /// The context window known so far (0: unknown or not yet detected).
    known_window: AtomicU64,
    /// Turns are serialised process-wide.
    turn_lock: tokio::sync::Mutex<()>,
}

impl Engine {
    pub fn new(config: Arc<Config>, model: Arc<dyn ModelClient>) -> Self {
        let config_window = config.context_window;
        Engine {
            config,
            model,
            tools: crate::tools::builtin(),
            call_counter: AtomicU64::new(0),
            env: Environment::default(),
            known_window: AtomicU64::new(config_window),
            turn_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Sets where the user's folders are (skills, configuration).
    pub fn with_env(mut self, env: Environment) -> Self {
        self.env = env;
        self
    }

    /// Creates a session in `cwd` (absolute): system prompt, skills, `sessionStart` hooks, and the
    /// session file when sessions are enabled.
    pub async fn new_session(&self, cwd: PathBuf, frontend: &dyn Frontend) -> Session {
        let _ = frontend;
        let now = chrono::Local::now();
        let skills = Arc::new(Catalogue::default());
        let system = self.system_prompt(&cwd, &skills);
        Session {
            id: new_id(now),
            cwd,
            created_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
            history: vec![Message::system(system)],
            usage: Usage::default(),
            last_measure: None,
            last_input: None,
            chars_per_token: 4.0,
            allow_always: HashSet::new(),
            never: HashSet::new(),
            plan: Mutex::new(None),
            skills,
        }
    }

    /// The system prompt of a session in `cwd`.
    pub fn system_prompt(&self, cwd: &std::path::Path, skills: &Catalogue) -> String {
        let _ = skills;
        let date = chrono::Local::now().format("%Y-%m-%d").to_string();
        let agents: Vec<(String, String)> = self
            .config
            .agents
            .keys()
            .map(|k| (k.clone(), String::new()))
            .collect();
        crate::prompt::system_prompt(&crate::prompt::SystemPromptInput {
            title: &self.config.acp.title,
            cwd,
            date: &date,
            skills: "",
            agents: &agents,
            extra: &self.config.system_prompt,
        })
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
        // Turns are serialised process-wide; a prompt cancelled while it waits never runs.
        let _turn = tokio::select! {
            guard = self.turn_lock.lock() => guard,
            () = cancel.cancelled() => {
                return PromptOutcome { stop: Ok(StopReason::Cancelled), command: None, recap: Some(Recap::default()) };
            }
        };
        match text.trim() {
            "/new" => return self.command_new(session, frontend).await,
            "/compact" => return self.command_compact(session, frontend, cancel).await,
            _ => {}
        }
        let mut text = text.to_string();
        for (path, is_dir) in crate::prompt::at_paths(&text.clone(), &session.cwd) {
            if attached.contains(&path) {
                continue;
            }
            text.push_str(&crate::prompt::attachment_line(&path, is_dir));
            frontend.emit(Event::Attached(path));
        }
        session.history.push(Message::user(text));
        let end = self.run_turn(session, frontend, cancel).await;
        PromptOutcome {
            stop: end.stop,
            command: None,
            recap: Some(end.recap),
        }
    }

    async fn command_new(&self, s: &mut Session, frontend: &dyn Frontend) -> PromptOutcome {
        let forgotten = crate::history::count_without_system(&s.history);
        s.history.truncate(1);
        s.last_measure = None;
        s.last_input = None;
        if let Ok(mut plan) = s.plan.lock() {
            *plan = None;
        }
        frontend.emit(Event::Notice(format!(
            "🆕 New session: {forgotten} message(s) forgotten."
        )));
        frontend.emit(Event::ContextUsage(self.context_usage(s)));
        PromptOutcome {
            stop: Ok(StopReason::EndTurn),
            command: Some(Command::New {
                forgotten,
                archived_as: None,
            }),
            recap: None,
        }
    }

    async fn command_compact(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> PromptOutcome {
        let _ = cancel;
        let n = crate::history::count_without_system(&s.history);
        let line = format!(
            "🗜️ nothing to compact: {n} message(s), no turn older than the last {}",
            self.config.context.keep_last_turns
        );
        frontend.emit(Event::Notice(line.clone()));
        frontend.emit(Event::ContextUsage(self.context_usage(s)));
        PromptOutcome {
            stop: Ok(StopReason::EndTurn),
            command: Some(Command::Compact { line }),
            recap: None,
        }
    }

    /// Loads a saved session (`session/load`, `mm --resume`): validates the id, reads
    /// `<cwd>/<sessions.dir>/<id>.json`, replaces its system prompt by the current one, restores
    /// totals and plan, continues the `call_N` counter above the highest replayed ref, runs
    /// `sessionStart` hooks. `Err` is the one-line explanation (invalid id, unknown id, unreadable
    /// file).
    pub async fn load_session(
        &self,
        cwd: PathBuf,
        id: &str,
        frontend: &dyn Frontend,
    ) -> Result<Session, String> {
        let _ = (cwd, id, frontend);
        Err("sessions are not implemented yet".into())
    }

    /// How a stored tool call is shown (title, kind, locations), as the live tool would give
    /// it; an unknown tool: its name and `execute`. `arguments` that are not JSON go as a string.
    pub fn describe_call(
        &self,
        name: &str,
        arguments: &str,
        cwd: &std::path::Path,
    ) -> crate::event::ToolCallStart {
        crate::tools::dispatch::describe(&self.tools, "", name, arguments, cwd)
    }

    /// The context in use: the larger of the last measure and the history's estimate. Uses the
    /// window known so far (0 while detection runs).
    pub fn context_usage(&self, session: &Session) -> ContextUsage {
        let estimate = self.estimate(session);
        let used = session.last_measure.unwrap_or(0).max(estimate);
        ContextUsage {
            used,
            size: self.known_window.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The history's estimate: the request's characters over the measured ratio.
    pub fn estimate(&self, session: &Session) -> u64 {
        let request = crate::model::ChatRequest {
            messages: crate::history::to_wire(&session.history),
            tools: self
                .tools
                .iter()
                .map(|t| crate::tools::wire_definition(t.as_ref()))
                .collect(),
            text_tool_names: Vec::new(),
        };
        let ratio = if session.chars_per_token > 0.0 {
            session.chars_per_token
        } else {
            4.0
        };
        (turn::request_chars(&request) as f64 / ratio).round() as u64
    }

    /// The context window: configured, else probed (awaits detection), 0 when unknown.
    pub async fn context_window(&self) -> u64 {
        let w = if self.config.context_window > 0 {
            self.config.context_window
        } else {
            self.model
                .info()
                .await
                .map(|i| i.context_window)
                .unwrap_or(0)
        };
        self.known_window
            .store(w, std::sync::atomic::Ordering::Relaxed);
        w
    }

    /// The cap on a tool result the model sees: `tools.maxOutput`, and a quarter of a known
    /// window (in characters).
    pub fn max_output(&self) -> usize {
        let max = self.config.tools.max_output;
        let window = self.known_window.load(std::sync::atomic::Ordering::Relaxed);
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
        ]
    }
}

/// A time-sortable session id: `YYYYMMDD-HHMMSS-xxxxxxxx`.
fn new_id(now: chrono::DateTime<chrono::Local>) -> String {
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    format!(
        "{}-{:02x}{:02x}{:02x}{:02x}",
        now.format("%Y%m%d-%H%M%S"),
        b[0],
        b[1],
        b[2],
        b[3]
    )
}
