//! A live session ([`Session`]): what it holds, the read-only view front ends get of it
//! ([`SessionView`]) and the few things they change (its mode and model through its
//! [`Controls`], the answers it remembered); how the engine opens one (new or loaded) and lets
//! it go.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::{Controls, Engine, SessionServers, builtin, undo};
use crate::event::{Frontend, PermissionMode, Plan, ToolCallStart, Usage};
use crate::history::{Message, ToolCall};
use crate::hooks::{HookEvent, HookResult};
use crate::sandbox::Passage;
use crate::skills::{Catalogue, SkillDirs};
use crate::tools::gate::{Rule, Rules};
use crate::tools::{ToolSetup, Toolbox};

/// One conversation. Its fields are the engine's: a front end reads them through
/// [`Session::view`] and changes what it may through the methods below.
pub struct Session {
    pub(crate) id: String,
    /// Absolute.
    pub(crate) cwd: PathBuf,
    /// RFC 3339, local time.
    pub(crate) created_at: String,
    /// The first prompt's first line ([`TITLE_CHARS`] characters at most); `None` until there
    /// is one (and again after `/new`).
    pub(crate) title: Option<String>,
    /// The mode and the model choice, which a front end may switch while a turn runs (it keeps
    /// a clone): the mode applies from the next tool call, the model from the next turn.
    pub(crate) controls: Controls,
    /// The model chosen among the server's that the turns ask (`None`: the configured or
    /// detected one): `controls`' choice, taken when a turn starts.
    pub(crate) model: Option<String>,
    /// That model's context window once probed (`Some(0)`: no probe told).
    pub(crate) model_window: Option<u64>,
    /// Starts with the system prompt.
    pub(crate) history: Vec<Message>,
    /// The session's totals.
    pub(crate) usage: Usage,
    /// The last model call's input + output.
    pub(crate) last_measure: Option<u64>,
    /// The last model call's input tokens.
    pub(crate) last_input: Option<u64>,
    /// Characters per token measured on the last call that reported `prompt_tokens`.
    pub(crate) chars_per_token: f64,
    /// What the user answered "always" and "never" to, for the rest of the session (kept by
    /// `/new`).
    pub(crate) rules: Rules,
    /// Shared with the tools that keep it.
    pub(crate) plan: Arc<Mutex<Option<Plan>>>,
    pub(crate) skills: Arc<Catalogue>,
    /// The session's tools (built-ins, and whatever the session adds later).
    pub(crate) tools: Toolbox,
    /// Warnings about the session's skills and its session folder (front ends log them with
    /// the session id).
    pub(crate) warnings: Vec<String>,
    /// Where its file is saved: `sessions.dir` resolved once when it opened (a folder that
    /// leads outside the cwd is refused, and nothing is saved).
    pub(crate) sessions_dir: Result<PathBuf, mm_core::session::OutsideProject>,
    /// The MCP servers the session uses; their tools join `tools` between turns.
    pub(crate) mcp: SessionServers,
    /// `sessionStart` hooks still running: the first prompt waits for them.
    pub(crate) start_hooks: Option<tokio::task::JoinHandle<HookResult>>,
    /// What the turns changed, for `/undo`.
    pub(crate) undo: undo::Undo,
    /// The session's share of the fence's network: the hosts refused in it (its turns' recaps)
    /// and allowed for it (a `task` call's child shares its parent's).
    pub(crate) network: Passage,
    /// A `task` call's child session: its parent's id (its turn has `tools.task.maxSteps`
    /// and starts no child); `None` for a session of its own.
    pub(crate) parent: Option<String>,
}

/// What a front end sees of a session: read only.
#[derive(Clone, Copy)]
pub struct SessionView<'a>(&'a Session);

impl Session {
    /// What a front end sees of the session.
    pub fn view(&self) -> SessionView<'_> {
        SessionView(self)
    }

    /// The session's mode and model choice: a handle the front end keeps to switch them while a
    /// turn holds the session (the mode from the next tool call, the model from the next turn).
    pub fn controls(&self) -> &Controls {
        &self.controls
    }

    /// Forgets the remembered answer numbered `n` (from 1, as [`SessionView::rules`] lists them).
    pub fn forget_rule(&mut self, n: usize) -> Option<Rule> {
        self.rules.remove(n)
    }

    /// Forgets every remembered answer; how many there were.
    pub fn forget_rules(&mut self) -> usize {
        let n = self.rules.list().len();
        self.rules.clear();
        n
    }
}

impl<'a> SessionView<'a> {
    pub fn id(&self) -> &'a str {
        &self.0.id
    }

    /// Absolute.
    pub fn cwd(&self) -> &'a Path {
        &self.0.cwd
    }

    /// RFC 3339, local time.
    pub fn created_at(&self) -> &'a str {
        &self.0.created_at
    }

    /// The first prompt's first line, until `/new`.
    pub fn title(&self) -> Option<&'a str> {
        self.0.title.as_deref()
    }

    /// The mode the session's next tool call runs in.
    pub fn mode(&self) -> PermissionMode {
        self.0.controls.mode()
    }

    /// The messages, the system prompt first.
    pub fn history(&self) -> &'a [Message] {
        &self.0.history
    }

    /// The messages without the system prompt.
    pub fn messages(&self) -> usize {
        crate::history::count_without_system(&self.0.history)
    }

    /// The last model call's input + output, as the server reported it.
    pub fn last_measure(&self) -> Option<u64> {
        self.0.last_measure
    }

    /// The session's totals.
    pub fn usage(&self) -> Usage {
        self.0.usage
    }

    /// The session's plan as the model last wrote it.
    pub fn plan(&self) -> Option<Plan> {
        self.0.plan.lock().ok().and_then(|p| p.clone())
    }

    /// The answers remembered with "always" and "never", in the order given.
    pub fn rules(&self) -> &'a [Rule] {
        self.0.rules.list()
    }

    pub fn skills(&self) -> &'a Arc<Catalogue> {
        &self.0.skills
    }

    /// Warnings about the session's skills and its session folder.
    pub fn warnings(&self) -> &'a [String] {
        &self.0.warnings
    }

    /// Where its file is saved, or why nothing is.
    pub fn sessions_dir(&self) -> &'a Result<PathBuf, mm_core::session::OutsideProject> {
        &self.0.sessions_dir
    }

    /// How a stored call is announced, as the live tool announced it (a `session/load` replay):
    /// its title, kind, locations and raw input.
    pub fn describe(&self, call: &ToolCall) -> ToolCallStart {
        self.0
            .tools
            .describe("", &call.name, &call.arguments, &self.0.cwd)
    }
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

/// What a session opens with, beside its history.
pub(crate) struct Opening {
    pub(crate) id: String,
    pub(crate) cwd: PathBuf,
    /// Resolved before (a saved session is read from it).
    pub(crate) sessions_dir: Result<PathBuf, mm_core::session::OutsideProject>,
    pub(crate) created_at: String,
    pub(crate) title: Option<String>,
    pub(crate) mode: PermissionMode,
}

impl Engine {
    /// Creates a session in `cwd` (absolute): system prompt, skills, `sessionStart` hooks (in
    /// the background), and the session file when sessions are enabled.
    pub async fn new_session(&self, cwd: PathBuf, frontend: &dyn Frontend) -> Session {
        let s = self.new_session_unsaved(cwd);
        self.save(&s, frontend);
        s
    }

    /// [`Engine::new_session`] without its file: for a front end that answers first and then
    /// writes it ([`Engine::save`]) before anything else can run on the session (ACP's
    /// `session/new`: the file's three fsyncs were most of its time in a new folder).
    pub fn new_session_unsaved(&self, cwd: PathBuf) -> Session {
        let now = chrono::Local::now();
        self.open_session(
            Opening {
                id: mm_core::session::new_id(now),
                sessions_dir: self.sessions_dir(&cwd),
                cwd,
                created_at: mm_core::session::timestamp(now),
                title: None,
                mode: self.configured_mode(),
            },
            Vec::new(),
            Usage::default(),
            None,
        )
    }

    /// A live session: its skills, its tools, the current system prompt ahead of `messages`
    /// (which hold none), and its `sessionStart` hooks started.
    pub(crate) fn open_session(
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
        let network = Passage::default();
        let tools = self.tools_for(&id, &cwd, &skills, &plan, &network);
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
            undo: undo::Undo::default(),
            parent: None,
            network,
        };
        let stores = crate::paths::state_dir(
            self.setting.env.home.as_deref(),
            self.setting.env.xdg_state_home.as_deref(),
        )
        .map(|state| state.join("undo"));
        // With sessions kept, so are their undo records, and a reopened session reads them.
        s.undo = match self.config.sessions.enabled {
            true => undo::Undo::kept(stores, &s.id),
            false => undo::Undo::new(stores),
        };
        self.attach_configured_mcp(&mut s);
        self.start_session_hooks(&mut s);
        s
    }

    /// A session's built-in tools, built with their own settings and the session's state.
    pub(crate) fn tools_for(
        &self,
        id: &str,
        cwd: &Path,
        skills: &Arc<Catalogue>,
        plan: &Arc<Mutex<Option<Plan>>>,
        network: &Passage,
    ) -> Toolbox {
        // The sandbox with the session's share of the network (its refusals, its allowed
        // hosts, its questions; on Linux a proxy of its own).
        let sandbox = Arc::new(self.sandbox.for_session(network));
        let read_only = self
            .read_only_sandbox()
            .map(|ro| Arc::new(ro.for_session(network)));
        builtin(&ToolSetup {
            config: &self.config,
            session_id: id,
            cwd,
            skills,
            plan,
            processes: &self.processes,
            lsp: &self.servers.lsp,
            ask_depth: self.setting.ask_depth,
            sandbox: &sandbox,
            read_only: read_only.as_ref(),
        })
    }

    /// The skill catalogue of a cwd (read once per process) and the warnings found reading it.
    pub fn skills_for(&self, cwd: &Path) -> SkillsEntry {
        if let Ok(cache) = self.setting.skills.lock()
            && let Some(hit) = cache.get(cwd)
        {
            return hit.clone();
        }
        let dirs = SkillDirs {
            cwd: cwd.to_path_buf(),
            home: self.setting.env.home.clone(),
            xdg_config: self.setting.env.xdg_config_home.clone(),
            extra: self.config.skills.dirs.clone(),
        };
        let (cat, warnings) = Catalogue::load(&dirs);
        let entry = (Arc::new(cat), warnings);
        if let Ok(mut cache) = self.setting.skills.lock() {
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
    pub(crate) async fn await_session_hooks(&self, s: &mut Session, frontend: &dyn Frontend) {
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
    pub fn system_prompt(&self, cwd: &Path, tools: &Toolbox) -> String {
        let date = chrono::Local::now().format("%Y-%m-%d").to_string();
        crate::prompt::system_prompt(&crate::prompt::SystemPromptInput {
            title: &self.config.acp.title,
            cwd,
            date: &date,
            sections: &tools.prompt_sections(),
            extra: &self.config.system_prompt,
        })
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
