//! The ACP front end's state and its handlers of the reference's methods (`initialize`,
//! `session/new`, `session/load`, `session/prompt`); sessions.rs has the others. Its tasks (the
//! answers and turns in flight) are a group of the process's, awaited at the end.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionDeleteCapabilities,
    SessionListCapabilities, SessionModeState, SessionResumeCapabilities,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, JsonRpcResponse};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::convert::{self, RequestError};
use crate::engine::{Engine, Session, SessionView};
use crate::frontend::AcpFrontend;
use crate::skills::Catalogue;
use crate::slot::Slot;
use crate::tasks::Tasks;
use crate::transport::ClientHello;
use crate::{Logger, prompt, stdout};

/// How [`Server::open_slot`] ends a way into a session.
pub(crate) struct Tail {
    /// The request named the session (`load`, `resume`): its errors name it too.
    pub(crate) named: bool,
    /// The line logged once the session is live.
    pub(crate) log: Option<String>,
    /// The updates sent after the answer.
    pub(crate) after: Vec<serde_json::Value>,
    /// The session's file is written once the answer is out (`session/new`: acp.md's "writes
    /// … at once"), before a prompt can run on the session.
    pub(crate) save: bool,
}

pub(crate) struct Server {
    pub(crate) engine: Arc<Engine>,
    pub(crate) config: Arc<Config>,
    pub(crate) log: Logger,
    /// The client advertised form elicitation at `initialize`.
    pub(crate) forms: Mutex<bool>,
    /// The client advertised `session.compaction` at `initialize`.
    pub(crate) compaction: Mutex<bool>,
    /// The client advertised `subagents` at `initialize`: it is shown `task` calls' children.
    pub(crate) subagents: Mutex<bool>,
    /// The client advertised `session.notices` at `initialize`.
    pub(crate) notices: Mutex<bool>,
    /// Whether the client can run the setup method (auth.rs).
    pub(crate) auth: crate::auth::Auth,
    /// The process's cwd, whose sessions `session/list` shows without a `cwd`.
    pub(crate) process_cwd: Option<PathBuf>,
    /// Folders `session/list` was asked about: `session/delete` looks there too.
    pub(crate) listed_cwds: Mutex<Vec<PathBuf>>,
    /// What the client sent in `initialize`, as the transport read it.
    pub(crate) hello: Arc<Mutex<Option<ClientHello>>>,
    pub(crate) sessions: Mutex<HashMap<String, Arc<Slot>>>,
    /// Cancels every turn at EOF or on a signal.
    pub(crate) shutdown: CancellationToken,
    /// The answers and turns in flight: a group of the process's tasks, awaited at the end of
    /// the connection.
    pub(crate) tasks: Tasks,
    /// The transport's writer, which the SDK's outgoing messages go through too: a
    /// `session/load` replay is queued there in one piece instead of message by message through
    /// the SDK.
    pub(crate) out: stdout::QueuedWriter,
}

impl Server {
    /// Runs `work` as one of the front end's tasks (outliving the connection: the SDK drops
    /// its own at EOF), and also hands the SDK a task that awaits it.
    pub(crate) fn spawn(
        &self,
        cx: &ConnectionTo<Client>,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let handle = self.tasks.spawn(work);
        // Never an error: a spawned task's error would shut the whole connection down.
        let _ = cx.spawn(async move {
            let _ = handle.await;
            Ok(())
        });
    }

    pub(crate) fn forms(&self) -> bool {
        self.forms.lock().map(|f| *f).unwrap_or(false)
    }

    /// A session's front end, with what the client said it supports.
    pub(crate) fn frontend(&self, cx: &ConnectionTo<Client>) -> Arc<AcpFrontend> {
        let compaction = self.compaction.lock().map(|c| *c).unwrap_or(false);
        let subagents = self.subagents.lock().map(|c| *c).unwrap_or(false);
        let notices = self.notices.lock().map(|c| *c).unwrap_or(false);
        Arc::new(
            AcpFrontend::new(Arc::new(cx.clone()), self.forms(), self.log.clone())
                .with_compaction(compaction)
                .with_subagents(subagents)
                .with_notices(notices),
        )
    }

    pub(crate) fn slot(&self, id: &str) -> Option<Arc<Slot>> {
        self.sessions.lock().ok().and_then(|s| s.get(id).cloned())
    }

    /// Warnings about a session's skills (skipped or shadowed), as `[acp] session <id>: …`.
    pub(crate) fn log_session_warnings(&self, session: SessionView<'_>) {
        let commands: Vec<&str> = Engine::commands().iter().map(|(n, _)| *n).collect();
        let shadowed = crate::skills::shadowed(session.skills(), &commands);
        for w in session.warnings().iter().chain(shadowed.iter()) {
            self.log
                .line(&format!("[acp] session {}: {w}", session.id()));
        }
    }

    /// What `session/load` and `session/resume` share: the checks, the session read from its
    /// file, the client's MCP servers, the warnings logged. The error is the request's answer.
    pub(crate) async fn open_saved(
        &self,
        id: &str,
        cwd: &std::path::Path,
        mcp_servers: &[agent_client_protocol::v1::schema::McpServer],
        frontend: &AcpFrontend,
    ) -> Result<Session, Error> {
        let refuse = |e: RequestError| convert::request_error(Some(id), &e);
        if self.slot(id).is_some() {
            return Err(refuse(RequestError::AlreadyLive(id.to_string())));
        }
        if !cwd.is_absolute() {
            return Err(refuse(RequestError::CwdNotAbsolute(cwd.to_path_buf())));
        }
        frontend.set_session_id(id);
        let mut session = self
            .engine
            .load_session(cwd.to_path_buf(), id, frontend)
            .await
            .map_err(|e| convert::load_error(id, &e))?;
        if !self.config.acp.client_mcp_servers && !mcp_servers.is_empty() {
            self.log.line(&format!(
                "[acp] session {id}: {} MCP server(s) from the client ignored",
                mcp_servers.len()
            ));
        }
        self.client_mcp(&mut session, mcp_servers);
        self.log_session_warnings(session.view());
        Ok(session)
    }

    /// The MCP servers the editor passed for a session (`session/new`, `session/load`,
    /// `session/resume`): with `acp.clientMcpServers`, its stdio servers join the session and
    /// start in the background like configured ones, and each is logged; without it nothing
    /// happens (the caller logged them as ignored).
    pub(crate) fn client_mcp(
        &self,
        session: &mut Session,
        servers: &[agent_client_protocol::v1::schema::McpServer],
    ) {
        if !self.config.acp.client_mcp_servers || servers.is_empty() {
            return;
        }
        let (stdio, refused) = convert::client_servers(servers);
        let configs: Vec<crate::config::McpServerConfig> =
            stdio.iter().map(|(_, c)| c.clone()).collect();
        let given = self.engine.attach_mcp_servers(session, stdio);
        let id = session.view().id();
        for ((asked, name), config) in given.iter().zip(&configs) {
            let line = convert::client_server_line(asked, name, config);
            self.log.line(&format!("[acp] session {id}: {line}"));
        }
        for line in refused {
            self.log.line(&format!("[acp] session {id}: {line}"));
        }
    }

    /// The tail the three ways into a session share (`session/new`, `session/load`,
    /// `session/resume`): the session made live in a slot of its own (refused when its id
    /// already is: `named`, the request named the session, says how), `log` logged, the
    /// method's answer (`answer`, given the session's modes and options) sent, then `after`;
    /// last the session's MCP servers start in the background, and its models are shown once
    /// the server's list is known.
    pub(crate) fn open_slot<T: JsonRpcResponse>(
        self: &Arc<Self>,
        session: Session,
        frontend: &Arc<AcpFrontend>,
        responder: Responder<T>,
        answer: impl FnOnce(SessionModeState, Vec<SessionConfigOption>) -> T,
        tail: Tail,
    ) {
        let id = session.view().id().to_string();
        let mcp = self.engine.mcp_start(&session);
        let slot = Slot::new(session, frontend.clone());
        // Held from before the session is registered until its file is written: a prompt on it
        // waits for the lock, so the file of a later turn is never overwritten by this one.
        let unsaved = if tail.save {
            slot.session.try_lock().ok()
        } else {
            None
        };
        if !self.register(&id, slot.clone()) {
            let e = RequestError::AlreadyLive(id.clone());
            let named = tail.named.then_some(id.as_str());
            let _ = responder.respond_with_error(convert::request_error(named, &e));
            return;
        }
        if let Some(line) = &tail.log {
            self.log.line(line);
        }
        let modes = convert::modes(slot.controls.mode(), self.engine.read_only_runs_commands());
        let _ = responder.respond(answer(modes, self.config_options(&slot)));
        for update in tail.after {
            frontend.update(update);
        }
        if let Some(session) = unsaved {
            self.engine.save(&session, &**frontend);
        }
        self.open_notices(frontend);
        // The MCP servers start once the answer is on its way, in the background.
        mcp.now();
        self.show_models_later(&slot);
    }

    /// What the process skipped or could not do that the user should know of a new session's
    /// work (only for a client that advertised `session.notices`: the frontend drops them
    /// otherwise): an untrusted project's commands, a fence not enforced.
    fn open_notices(&self, frontend: &AcpFrontend) {
        if let Some(u) = &self.config.untrusted_project {
            let home = mm_core::paths::home();
            frontend.notice(convert::untrusted_notice(&u.warning(None, home.as_deref())));
        }
        if let Some(shortfall) = self.engine.sandbox.report().shortfall() {
            frontend.notice(convert::unfenced_notice(&shortfall));
        }
    }

    /// Registers a session; `false` when the id is already live.
    pub(crate) fn register(&self, id: &str, slot: Arc<Slot>) -> bool {
        let Ok(mut s) = self.sessions.lock() else {
            return false;
        };
        if s.contains_key(id) {
            return false;
        }
        s.insert(id.to_string(), slot);
        true
    }

    pub(crate) fn commands_update(&self, skills: &Catalogue) -> serde_json::Value {
        convert::available_commands(Engine::commands(), &advertised(skills))
    }

    pub(crate) fn initialize(&self, req: InitializeRequest) -> InitializeResponse {
        // What the client sent wins over what the SDK made of it (see `ClientHello`).
        let sent = self.hello.lock().ok().and_then(|h| h.clone());
        let hello = sent.unwrap_or_else(|| ClientHello {
            info: req
                .client_info
                .as_ref()
                .map(|i| (i.name.clone(), i.version.clone())),
            protocol: serde_json::to_value(req.protocol_version)
                .ok()
                .and_then(|v| v.as_u64()),
            forms: req
                .client_capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| e.form.is_some()),
            compaction: req
                .client_capabilities
                .session
                .as_ref()
                .is_some_and(|s| s.compaction.is_some()),
            subagents: req.client_capabilities.subagents.is_some(),
            notices: req
                .client_capabilities
                .session
                .as_ref()
                .is_some_and(|s| s.notices.is_some()),
            terminal_auth: serde_json::to_value(&req.client_capabilities)
                .is_ok_and(|c| convert::advertises_terminal_auth(&c)),
        });
        if let Ok(mut f) = self.forms.lock() {
            *f = hello.forms;
        }
        if let Ok(mut c) = self.compaction.lock() {
            *c = hello.compaction;
        }
        if let Ok(mut c) = self.subagents.lock() {
            *c = hello.subagents;
        }
        if let Ok(mut n) = self.notices.lock() {
            *n = hello.notices;
        }
        self.auth.set_terminal(hello.terminal_auth);
        self.log.line(&convert::log_client(
            hello.info.as_ref().map(|(n, v)| (n.as_str(), v.as_str())),
            hello.protocol.unwrap_or(0),
            hello.forms,
        ));
        if self.engine.sandbox.is_on() {
            for line in convert::log_sandbox(&self.engine.sandbox.report()) {
                self.log.line(&line);
            }
        }
        let acp = &self.config.acp;
        let title = (!acp.title.is_empty()).then(|| acp.title.clone());
        // `session/close` is always there (the only way for a client to free a session); the
        // saved sessions' methods only with sessions on.
        let sessions = self.config.sessions.enabled;
        let mut caps = SessionCapabilities::new().close(SessionCloseCapabilities::new());
        if sessions {
            caps = caps
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .delete(SessionDeleteCapabilities::new());
        }
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(sessions)
                    .session_capabilities(caps),
            )
            .auth_methods(self.auth.methods())
            .agent_info(Implementation::new(acp.name.clone(), crate::VERSION).title(title))
            // `_session/steering`: the one addition a plain client sees, in the `_meta` ACP
            // reserves for extensions.
            .meta(convert::steering_meta())
    }

    pub(crate) async fn new_session(
        self: Arc<Self>,
        req: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        if !req.cwd.is_absolute() {
            let e = RequestError::CwdNotAbsolute(req.cwd.clone());
            let _ = responder.respond_with_error(convert::request_error(None, &e));
            return;
        }
        if let Err(e) = self
            .auth
            .check(&self.engine, &self.config, &self.shutdown)
            .await
        {
            let _ = responder.respond_with_error(e);
            return;
        }
        let frontend = self.frontend(&cx);
        let mut session = self.engine.new_session_unsaved(req.cwd.clone());
        let view = session.view();
        let id = view.id().to_string();
        frontend.set_session_id(&id);
        let ignored = if self.config.acp.client_mcp_servers {
            0
        } else {
            req.mcp_servers.len()
        };
        for line in convert::log_created(&id, view.cwd(), ignored) {
            self.log.line(&line);
        }
        if let Some(cwd) = self.engine.sandbox.unwritable_cwd(view.cwd()) {
            self.log.line(&convert::log_sandbox_cwd(&cwd));
        }
        self.client_mcp(&mut session, &req.mcp_servers);
        self.log_session_warnings(session.view());
        // The editor must know the session id before the update, or it drops it.
        let after = vec![self.commands_update(session.view().skills())];
        let tail = Tail {
            named: false,
            log: None,
            after,
            save: true,
        };
        self.open_slot(
            session,
            &frontend,
            responder,
            |modes, options| {
                NewSessionResponse::new(id)
                    .modes(modes)
                    .config_options(options)
            },
            tail,
        );
    }

    pub(crate) async fn load_session(
        self: Arc<Self>,
        req: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let id = req.session_id.0.to_string();
        let frontend = self.frontend(&cx);
        let session = match self
            .open_saved(&id, &req.cwd, &req.mcp_servers, &frontend)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                let _ = responder.respond_with_error(e);
                return;
            }
        };
        let view = session.view();
        // Nothing of this session can be queued in the SDK yet and the updates and response
        // below go out through it afterwards, so queueing the replay straight on the transport's
        // writer keeps the order while sparing a JSON tree and a queue hop per message.
        self.out.write_lines(convert::replay_lines(
            &id,
            view.history(),
            &|c: &crate::history::ToolCall| view.describe(c),
        ));
        if let Some(plan) = view.plan() {
            frontend.update(convert::plan_update(&plan));
        }
        frontend.update(convert::usage_update(self.engine.context_usage(&session)));
        frontend.update(self.commands_update(view.skills()));
        // Loaded from it, so resolved and inside.
        let dir: PathBuf = view.sessions_dir().clone().unwrap_or_default();
        // What the reference does not send comes after its answer.
        let tail = Tail {
            named: true,
            log: Some(convert::log_loaded(&id, &dir, view.messages())),
            after: view
                .title()
                .map(convert::session_info)
                .into_iter()
                .collect(),
            save: false,
        };
        self.open_slot(
            session,
            &frontend,
            responder,
            |modes, options| {
                LoadSessionResponse::new()
                    .modes(modes)
                    .config_options(options)
            },
            tail,
        );
    }

    pub(crate) async fn prompt(
        self: Arc<Self>,
        slot: Arc<Slot>,
        req: PromptRequest,
        token: CancellationToken,
        key: u64,
    ) -> Result<PromptResponse, Error> {
        let flat = prompt::flatten(&req.prompt);
        let mut session = slot.session.lock().await;
        let outcome = self
            .engine
            .prompt(
                &mut session,
                &flat.text,
                &flat.attached,
                &*slot.frontend,
                &token,
            )
            .await;
        slot.forget(key);
        for line in convert::log_prompt(
            session.view().id(),
            outcome.command.as_ref(),
            outcome.recap.as_ref(),
        ) {
            self.log.line(&line);
        }
        match outcome.stop {
            Ok(stop) => Ok(PromptResponse::new(convert::stop_reason(stop))
                .usage(convert::prompt_usage(&session.view().usage()))),
            Err(e) => {
                slot.frontend.notice(convert::failed_notice(&e.to_string()));
                Err(convert::turn_error(&e))
            }
        }
    }
}

/// The skills advertised as commands: all but those a real command shadows.
fn advertised(skills: &Catalogue) -> Vec<(String, String)> {
    let commands: Vec<&str> = Engine::commands().iter().map(|(n, _)| *n).collect();
    crate::skills::advertised(skills, &commands)
        .into_iter()
        .map(|s| (s.name.clone(), s.description.clone()))
        .collect()
}
