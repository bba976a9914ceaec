//! The ACP front end (`mm -acp`): JSON-RPC 2.0 on stdio, through `agent-client-protocol`.
//!
//! A thin translation: requests call the [`Engine`], the engine's events come back through an
//! [`AcpFrontend`] per session, and `convert` holds every wire shape. Turns run in tasks mm owns
//! (the SDK drops its own spawned tasks at EOF), so that at EOF or on a signal they can be
//! cancelled and awaited.

mod convert;
mod frontend;
mod prompt;
mod sessions;
mod stdout;
pub mod transport;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionDeleteCapabilities,
    SessionListCapabilities, SessionResumeCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, Lines};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

// The layers below under the names the modules of this crate use (`crate::config::…`).
use mm_core::{VERSION, config, event, history, relay, session, skills};
use mm_engine as engine;
use mm_model as model;

use crate::config::Config;
use crate::engine::{Controls, Engine, Session};
use crate::skills::Catalogue;
use convert::RequestError;
pub use frontend::{AcpFrontend, Peer};

/// How long running turns get to finish once stdin closed or a signal arrived.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("ACP connection failed: {0}")]
    Connection(String),
}

/// Where the `[acp] …` lines go: stderr in `mm -acp`, a buffer in tests.
#[derive(Clone)]
pub struct Logger(Arc<dyn Fn(&str) + Send + Sync>);

impl Logger {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Logger(Arc::new(f))
    }

    pub fn stderr() -> Self {
        Logger::new(|line| {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        })
    }

    pub fn line(&self, line: &str) {
        (self.0)(line);
    }
}

/// Serves ACP on stdin/stdout until stdin closes or `stop` fires (main.rs fires it on SIGINT,
/// SIGTERM and SIGHUP).
pub async fn serve(
    engine: Arc<Engine>,
    config: Arc<Config>,
    stop: CancellationToken,
) -> Result<(), AcpError> {
    if let Ok(filter) = std::env::var("MM_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .try_init();
    }
    let out = stdout::QueuedWriter::stdout();
    let result = serve_with(
        engine,
        config,
        tokio::io::stdin(),
        out.clone(),
        Logger::stderr(),
        stop.cancelled_owned(),
    )
    .await;
    // Every answer queued before the end reaches the client before the process exits.
    out.drain(Duration::from_secs(2));
    result
}

/// Serves ACP over any byte pipe pair (in-process tests use `tokio::io::duplex`), until `input`
/// reaches its end. `output` is written by a task of the current runtime, as stdout is by its
/// thread, so both transports carry pre-serialised lines the same way.
pub async fn serve_io<R, W>(
    engine: Arc<Engine>,
    config: Arc<Config>,
    input: R,
    output: W,
    log: Logger,
) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(
        engine,
        config,
        input,
        stdout::QueuedWriter::task(output),
        log,
        std::future::pending(),
    )
    .await
}

/// What the client said of itself in `initialize`, read from the raw request: the SDK
/// negotiates the version first and, for a version it does not speak, hands the handler a
/// request without the client's info and capabilities — but the log line and the form support
/// must be what the client sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `clientInfo.name` and `.version`.
    pub info: Option<(String, String)>,
    /// The `protocolVersion` the client asked for.
    pub protocol: Option<u64>,
    /// `clientCapabilities.elicitation.form` present and non-null.
    pub forms: bool,
    /// `clientCapabilities.session.compaction` present and non-null.
    pub compaction: bool,
}

impl ClientHello {
    /// Reads an `initialize` request line; `None` for any other line.
    fn read(line: &str) -> Option<ClientHello> {
        if !line.contains("\"initialize\"") {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        if v.get("method").and_then(|m| m.as_str()) != Some("initialize") {
            return None;
        }
        let params = &v["params"];
        let info = params.get("clientInfo").map(|i| {
            let field = |k: &str| i.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            (field("name"), field("version"))
        });
        Some(ClientHello {
            info,
            protocol: params.get("protocolVersion").and_then(|p| p.as_u64()),
            forms: params["clientCapabilities"]["elicitation"]
                .get("form")
                .is_some_and(|f| !f.is_null()),
            compaction: params["clientCapabilities"]["session"]
                .get("compaction")
                .is_some_and(|c| !c.is_null()),
        })
    }
}

/// A line transport over tokio pipes (transport.rs): lines are capped at `max_line` bytes, and
/// lines after `initialize` are held until its answer is written; invalid UTF-8 is read lossily
/// rather than ending the connection. The `initialize` request is also read for `hello`.
fn lines<R, W>(
    input: R,
    output: W,
    hello: Arc<Mutex<Option<ClientHello>>>,
    max_line: usize,
    log: Logger,
) -> impl ConnectTo<Agent> + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let gate = transport::InitGate::new();
    let reader = BufReader::with_capacity(64 * 1024, input);
    let incoming = futures::stream::unfold(reader, {
        let gate = gate.clone();
        move |mut reader| {
            let (hello, gate, log) = (hello.clone(), gate.clone(), log.clone());
            async move {
                // A request written right behind `initialize` waits for its answer.
                gate.wait().await;
                match transport::read_line(&mut reader, max_line).await {
                    Ok(None) => None,
                    Ok(Some(line)) => {
                        let (line, refused) = transport::for_sdk(line, max_line);
                        if let Some(refused) = refused {
                            log.line(&refused);
                        }
                        if let Some(h) = ClientHello::read(&line)
                            && let Ok(mut slot) = hello.lock()
                        {
                            *slot = Some(h);
                        }
                        gate.saw_incoming(&line);
                        Some((Ok(line), reader))
                    }
                    Err(e) => Some((Err(e), reader)),
                }
            }
        }
    });
    let outgoing = futures::sink::unfold(output, move |mut w, mut line: String| {
        let gate = gate.clone();
        async move {
            line.push('\n');
            w.write_all(line.as_bytes()).await?;
            w.flush().await?;
            gate.saw_outgoing(&line);
            Ok::<_, std::io::Error>(w)
        }
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

/// Turns in flight: each holds a guard; waiting ends when every guard is dropped.
struct Tasks {
    guard: Mutex<Option<mpsc::Sender<()>>>,
    done: tokio::sync::Mutex<mpsc::Receiver<()>>,
}

impl Tasks {
    fn new() -> Self {
        let (tx, rx) = mpsc::channel(1);
        Tasks {
            guard: Mutex::new(Some(tx)),
            done: tokio::sync::Mutex::new(rx),
        }
    }

    fn guard(&self) -> Option<mpsc::Sender<()>> {
        self.guard.lock().ok().and_then(|g| g.clone())
    }

    /// Runs `work` as one of mm's tasks (outliving the connection), and also hands the SDK a
    /// task that awaits it.
    fn spawn(
        &self,
        cx: &ConnectionTo<Client>,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let guard = self.guard();
        let handle = tokio::spawn(async move {
            let _guard = guard;
            work.await;
        });
        // Never an error: a spawned task's error would shut the whole connection down.
        let _ = cx.spawn(async move {
            let _ = handle.await;
            Ok(())
        });
    }

    async fn wait(&self, limit: Duration) {
        if let Ok(mut g) = self.guard.lock() {
            g.take();
        }
        let mut rx = self.done.lock().await;
        let _ = tokio::time::timeout(limit, rx.recv()).await;
    }
}

/// A live session.
struct Slot {
    session: tokio::sync::Mutex<Session>,
    frontend: Arc<AcpFrontend>,
    /// The tokens of the prompts running or waiting on this session.
    cancels: Mutex<Vec<(u64, CancellationToken)>>,
    /// The end of the session's queue of prompts: resolves once the last prompt received has
    /// been answered.
    last: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
    /// The session's mode and model choice, switched while a turn holds the session.
    controls: Controls,
    /// The session's cwd (where its file is).
    cwd: PathBuf,
    /// The model option was sent (in an answer or a `config_option_update`).
    models_shown: std::sync::atomic::AtomicBool,
}

impl Slot {
    fn new(session: Session, frontend: Arc<AcpFrontend>) -> Arc<Self> {
        Arc::new(Slot {
            controls: session.controls.clone(),
            cwd: session.cwd.clone(),
            session: tokio::sync::Mutex::new(session),
            frontend,
            cancels: Mutex::new(Vec::new()),
            last: Mutex::new(None),
            models_shown: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Takes the next place in the session's queue, in the order prompts arrive (the handler runs
    /// one message at a time; the tasks it spawns may start in any order): what to wait for
    /// before running, and what to drop once answered.
    fn queue(
        &self,
    ) -> (
        Option<tokio::sync::oneshot::Receiver<()>>,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let (done, next) = tokio::sync::oneshot::channel();
        let before = self.last.lock().ok().and_then(|mut l| l.replace(next));
        (before, done)
    }

    fn cancel_all(&self) {
        if let Ok(c) = self.cancels.lock() {
            for (_, t) in c.iter() {
                t.cancel();
            }
        }
    }

    /// Registers the token of a prompt; the key forgets it.
    fn track(&self, token: &CancellationToken) -> u64 {
        let Ok(mut c) = self.cancels.lock() else {
            return 0;
        };
        let key = c.iter().map(|(k, _)| *k).max().unwrap_or(0) + 1;
        c.push((key, token.clone()));
        key
    }

    fn forget(&self, key: u64) {
        if let Ok(mut c) = self.cancels.lock() {
            c.retain(|(k, _)| *k != key);
        }
    }
}

struct Server {
    engine: Arc<Engine>,
    config: Arc<Config>,
    log: Logger,
    /// The client advertised form elicitation at `initialize`.
    forms: Mutex<bool>,
    /// The client advertised `session.compaction` at `initialize`.
    compaction: Mutex<bool>,
    /// The process's cwd, whose sessions `session/list` shows without a `cwd`.
    process_cwd: Option<PathBuf>,
    /// Folders `session/list` was asked about: `session/delete` looks there too.
    listed_cwds: Mutex<Vec<PathBuf>>,
    /// What the client sent in `initialize`, as the transport read it.
    hello: Arc<Mutex<Option<ClientHello>>>,
    sessions: Mutex<HashMap<String, Arc<Slot>>>,
    /// Cancels every turn at EOF or on a signal.
    shutdown: CancellationToken,
    tasks: Tasks,
    /// The transport's writer, which the SDK's outgoing messages go through too: a
    /// `session/load` replay is queued there in one piece instead of message by message through
    /// the SDK.
    out: stdout::QueuedWriter,
}

impl Server {
    fn forms(&self) -> bool {
        self.forms.lock().map(|f| *f).unwrap_or(false)
    }

    /// A session's front end, with what the client said it supports.
    fn frontend(&self, cx: &ConnectionTo<Client>) -> Arc<AcpFrontend> {
        let compaction = self.compaction.lock().map(|c| *c).unwrap_or(false);
        Arc::new(
            AcpFrontend::new(Arc::new(cx.clone()), self.forms(), self.log.clone())
                .with_compaction(compaction),
        )
    }

    fn slot(&self, id: &str) -> Option<Arc<Slot>> {
        self.sessions.lock().ok().and_then(|s| s.get(id).cloned())
    }

    /// Warnings about a session's skills (skipped or shadowed), as `[acp] session <id>: …`.
    fn log_session_warnings(&self, session: &Session) {
        let commands: Vec<&str> = Engine::commands().iter().map(|(n, _)| *n).collect();
        let shadowed = crate::skills::shadowed(&session.skills, &commands);
        for w in session.warnings.iter().chain(shadowed.iter()) {
            self.log.line(&format!("[acp] session {}: {w}", session.id));
        }
    }

    /// The MCP servers the editor passed for a session (`session/new`, `session/load`; a
    /// `session/resume` handler calls this too): with `acp.clientMcpServers`, its stdio servers
    /// join the session and start in the background like configured ones, and each is logged;
    /// without it nothing happens (the caller logged them as ignored).
    /// What `session/load` and `session/resume` share: the checks, the session read from its
    /// file, the client's MCP servers, the warnings logged. The error is the request's answer.
    async fn open_saved(
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
        self.log_session_warnings(&session);
        Ok(session)
    }

    fn client_mcp(
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
        for ((asked, name), config) in given.iter().zip(&configs) {
            let line = convert::client_server_line(asked, name, config);
            self.log
                .line(&format!("[acp] session {}: {line}", session.id));
        }
        for line in refused {
            self.log
                .line(&format!("[acp] session {}: {line}", session.id));
        }
    }

    /// Registers a session; `false` when the id is already live.
    fn register(&self, id: &str, slot: Arc<Slot>) -> bool {
        let Ok(mut s) = self.sessions.lock() else {
            return false;
        };
        if s.contains_key(id) {
            return false;
        }
        s.insert(id.to_string(), slot);
        true
    }

    fn commands_update(&self, skills: &Catalogue) -> serde_json::Value {
        convert::available_commands(Engine::commands(), &advertised(skills))
    }

    fn initialize(&self, req: InitializeRequest) -> InitializeResponse {
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
        });
        if let Ok(mut f) = self.forms.lock() {
            *f = hello.forms;
        }
        if let Ok(mut c) = self.compaction.lock() {
            *c = hello.compaction;
        }
        self.log.line(&convert::log_client(
            hello.info.as_ref().map(|(n, v)| (n.as_str(), v.as_str())),
            hello.protocol.unwrap_or(0),
            hello.forms,
        ));
        if self.engine.sandbox.is_on() {
            for line in self.engine.sandbox.log_lines() {
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
            .auth_methods(Vec::new())
            .agent_info(Implementation::new(acp.name.clone(), crate::VERSION).title(title))
    }

    async fn new_session(
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
        let frontend = self.frontend(&cx);
        let mut session = self.engine.new_session(req.cwd.clone(), &*frontend).await;
        let id = session.id.clone();
        frontend.set_session_id(&id);
        let ignored = if self.config.acp.client_mcp_servers {
            0
        } else {
            req.mcp_servers.len()
        };
        for line in convert::log_created(&id, &session.cwd, ignored) {
            self.log.line(&line);
        }
        if let Some(note) = self.engine.sandbox.cwd_note(&session.cwd) {
            self.log.line(&format!("[acp] sandbox: {note}"));
        }
        self.client_mcp(&mut session, &req.mcp_servers);
        self.log_session_warnings(&session);
        let commands = self.commands_update(&session.skills);
        let mcp = session.mcp.servers();
        let slot = Slot::new(session, frontend.clone());
        if !self.register(&id, slot.clone()) {
            let e = RequestError::AlreadyLive(id);
            let _ = responder.respond_with_error(convert::request_error(None, &e));
            return;
        }
        // The editor must know the session id before the update, or it drops it.
        let _ = responder.respond(
            NewSessionResponse::new(id)
                .modes(convert::modes(
                    slot.controls.mode(),
                    self.engine.read_only_runs_commands(),
                ))
                .config_options(self.config_options(&slot)),
        );
        frontend.update(commands);
        // The MCP servers start once the answer is on its way, in the background.
        for server in &mcp {
            server.wake();
        }
        self.show_models_later(&slot);
    }

    async fn load_session(
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
        let cwd = session.cwd.clone();
        let tools = session.tools.clone();
        let describe =
            |c: &crate::history::ToolCall| tools.describe("", &c.name, &c.arguments, &cwd);
        // Nothing of this session can be queued in the SDK yet and the updates and response
        // below go out through it afterwards, so queueing the replay straight on the transport's
        // writer keeps the order while sparing a JSON tree and a queue hop per message.
        self.out
            .write_lines(convert::replay_lines(&id, &session.history, &describe));
        let plan = session.plan.lock().ok().and_then(|p| p.clone());
        if let Some(plan) = plan {
            frontend.update(convert::plan_update(&plan));
        }
        frontend.update(convert::usage_update(self.engine.context_usage(&session)));
        frontend.update(self.commands_update(&session.skills));
        // Loaded from it, so resolved and inside.
        let dir: PathBuf = session.sessions_dir.clone().unwrap_or_default();
        let replayed = crate::history::count_without_system(&session.history);
        let mcp = session.mcp.servers();
        let title = session.title.clone();
        let slot = Slot::new(session, frontend.clone());
        if !self.register(&id, slot.clone()) {
            let e = RequestError::AlreadyLive(id.clone());
            let _ = responder.respond_with_error(convert::request_error(Some(&id), &e));
            return;
        }
        self.log.line(&convert::log_loaded(&id, &dir, replayed));
        let _ = responder.respond(
            LoadSessionResponse::new()
                .modes(convert::modes(
                    slot.controls.mode(),
                    self.engine.read_only_runs_commands(),
                ))
                .config_options(self.config_options(&slot)),
        );
        // What the reference does not send comes after its answer.
        if let Some(title) = title {
            frontend.update(convert::session_info(&title));
        }
        for server in &mcp {
            server.wake();
        }
        self.show_models_later(&slot);
    }

    async fn prompt(
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
            &session.id,
            outcome.command.as_ref(),
            outcome.recap.as_ref(),
        ) {
            self.log.line(&line);
        }
        match outcome.stop {
            Ok(stop) => Ok(PromptResponse::new(convert::stop_reason(stop))
                .usage(convert::prompt_usage(&session.usage))),
            Err(e) => Err(convert::turn_error(&e)),
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

async fn serve_with<R>(
    engine: Arc<Engine>,
    config: Arc<Config>,
    input: R,
    out: stdout::QueuedWriter,
    log: Logger,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), AcpError>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let hello = Arc::new(Mutex::new(None));
    let max_line = config.acp.max_line_bytes;
    let transport = lines(input, out.clone(), hello.clone(), max_line, log.clone());
    let server = Arc::new(Server {
        engine,
        config,
        log,
        forms: Mutex::new(false),
        compaction: Mutex::new(false),
        process_cwd: std::env::current_dir().ok(),
        listed_cwds: Mutex::new(Vec::new()),
        hello,
        sessions: Mutex::new(HashMap::new()),
        shutdown: CancellationToken::new(),
        tasks: Tasks::new(),
        out,
    });
    let (s1, s2, s3, s4, s5, s6) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let connection = Agent
        .v1()
        .name("mm")
        .on_receive_request(
            async move |req: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                let answered = responder.respond(s1.initialize(req));
                // Detection (HTTP client, probes) starts once the answer is out, never before.
                s1.engine.model.warm_up();
                answered
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        _cx| { responder.respond(AuthenticateResponse::new()) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                let server = s2.clone();
                s2.tasks
                    .spawn(&cx, server.new_session(req, responder, cx.clone()));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                if !s3.config.sessions.enabled {
                    return responder
                        .respond_with_error(Error::method_not_found().data("session/load"));
                }
                let server = s3.clone();
                s3.tasks
                    .spawn(&cx, server.load_session(req, responder, cx.clone()));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let id = req.session_id.0.to_string();
                let Some(slot) = s4.slot(&id) else {
                    let e = convert::RequestError::UnknownSession(id.clone());
                    return responder.respond_with_error(convert::request_error(Some(&id), &e));
                };
                let token = s4.shutdown.child_token();
                let key = slot.track(&token);
                let (before, done) = slot.queue();
                let server = s4.clone();
                s4.tasks.spawn(&cx, async move {
                    // A second prompt on the session waits for the first to be answered.
                    if let Some(before) = before {
                        let _ = before.await;
                    }
                    let result = server.clone().prompt(slot.clone(), req, token, key).await;
                    let _ = responder.respond_with_result(result);
                    // A model list that came during the turn (a server started late).
                    server.show_models_now(&slot);
                    drop(done);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            _cx| server.set_mode(req, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: SetSessionConfigOptionRequest,
                            responder: Responder<SetSessionConfigOptionResponse>,
                            _cx| server.set_config_option(req, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: CloseSessionRequest,
                            responder: Responder<CloseSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    let s = server.clone();
                    server.tasks.spawn(&cx, s.close_session(req, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        // Saved sessions' methods: without `sessions.enabled`, "method not found" as for an
        // agent that has none.
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: ListSessionsRequest,
                            responder: Responder<ListSessionsResponse>,
                            cx: ConnectionTo<Client>| {
                    if !server.config.sessions.enabled {
                        return responder
                            .respond_with_error(Error::method_not_found().data("session/list"));
                    }
                    let s = server.clone();
                    server.tasks.spawn(&cx, s.list_sessions(req, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: ResumeSessionRequest,
                            responder: Responder<ResumeSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    if !server.config.sessions.enabled {
                        return responder
                            .respond_with_error(Error::method_not_found().data("session/resume"));
                    }
                    let s = server.clone();
                    server
                        .tasks
                        .spawn(&cx, s.resume_session(req, responder, cx.clone()));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let server = server.clone();
                async move |req: DeleteSessionRequest,
                            responder: Responder<DeleteSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    if !server.config.sessions.enabled {
                        return responder
                            .respond_with_error(Error::method_not_found().data("session/delete"));
                    }
                    let s = server.clone();
                    server.tasks.spawn(&cx, s.delete_session(req, responder));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                if let Some(slot) = s5.slot(&n.session_id.0) {
                    slot.cancel_all();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport);
    let result = tokio::select! {
        r = connection => r.map_err(|e| AcpError::Connection(e.to_string())),
        () = stop => Ok(()),
    };
    // The output ends with the connection (the reader sees EOF now, not once the last turn
    // lets go of the server); what the SDK wrote before is still written.
    s6.out.close();
    // The SDK does not join what was spawned: cancel the turns and give them time to save.
    s6.shutdown.cancel();
    s6.tasks.wait(SHUTDOWN_GRACE).await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_client_hello_is_what_the_client_sent_whatever_the_version() {
        let line = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":{v},"clientInfo":{{"name":"zed","version":"0.1"}},"clientCapabilities":{{"elicitation":{{"form":{{}}}}}}}}}}"#
            )
        };
        for v in ["0", "1", "2"] {
            assert_eq!(
                ClientHello::read(&line(v)),
                Some(ClientHello {
                    info: Some(("zed".into(), "0.1".into())),
                    protocol: v.parse().ok(),
                    forms: true,
                    compaction: false,
                })
            );
        }
        assert_eq!(
            ClientHello::read(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":null}}}}"#
            ),
            Some(ClientHello {
                info: None,
                protocol: Some(1),
                forms: false,
                compaction: false,
            })
        );
        assert_eq!(
            ClientHello::read(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}}"#
            )
            .map(|h| h.compaction),
            Some(true)
        );
        // Other messages, even ones that mention the word, are not the hello.
        assert_eq!(
            ClientHello::read(
                r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"\"initialize\""}]}}"#
            ),
            None
        );
        assert_eq!(ClientHello::read("not json \"initialize\""), None);
    }
}
