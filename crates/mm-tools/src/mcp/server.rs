//! One MCP server: its process (through the [`Supervisor`]), its rmcp client, its tool list, and
//! what happened to it. Shared by the sessions that use the same (name, command, args, env,
//! cwd).
//!
//! States: `Starting` (spawned, initialize and tools/list under way) → `Ready` (the list is
//! known, calls go through) → `Idle` (stopped after a while without a call; the list stays
//! offered and the next call starts it again) or `Failed` (could not start, exited, hung, or
//! answered garbage: its tools are withdrawn, and it is started again at most once per
//! `retry`).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, Implementation};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, ServiceError};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{EntrySandbox, McpPermissions, McpTiming, seconds};
use crate::process::{Group, Supervisor};
use crate::sandbox::Sandbox;

/// What identifies a server: two sessions that would start the same one share it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerKey {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// The session's cwd: the server runs there.
    pub cwd: PathBuf,
    /// Its entry's `sandbox` and `sandboxWritable`: how it meets the fence.
    pub sandbox: EntrySandbox,
}

/// A server as a session uses it: its key and the settings of its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub key: ServerKey,
    pub permissions: McpPermissions,
    /// One call's limit.
    pub timeout: Duration,
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The input schema, without `$schema` (the model does not need it).
    pub schema: Value,
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Starting,
    Ready,
    /// Stopped after `idle` without a call; its list is still offered.
    Idle,
    /// Why it is not running.
    Failed(String),
}

/// A server's state, for `/mcp` and for building a session's tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub phase: Phase,
    /// The tools offered (empty when failed).
    pub tools: Arc<Vec<ToolInfo>>,
    /// Changes whenever the list does.
    pub version: u64,
    /// A list is being fetched (start, or `notifications/tools/list_changed`).
    pub listing: bool,
    /// How many faults so far, and the last one's line.
    pub faults: u64,
    pub last_fault: Option<String>,
}

/// Why a call did not get a result; `Display` is the line the model receives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error(
        "[MCP server {server} is not running: {why}; mm starts it again at most once a minute]"
    )]
    NotRunning { server: String, why: String },
    #[error("[MCP server {server} could not start: {why}]")]
    StartFailed { server: String, why: String },
    #[error("[MCP server {server} stopped during the call: {what}]")]
    Exited { server: String, what: String },
    #[error(
        "[MCP server {server} did not answer within {} s; the call was cancelled]",
        seconds(*limit)
    )]
    Timeout { server: String, limit: Duration },
    #[error("[MCP server {server}: {message}]")]
    Protocol { server: String, message: String },
    #[error("[cancelled]")]
    Cancelled,
}

/// The running process and client.
struct Conn {
    peer: Peer<RoleClient>,
    /// Dropped with the connection: the client's loop ends.
    _service: RunningService<RoleClient, Handler>,
    /// Stops the process (its watcher holds the child).
    stop: CancellationToken,
    /// Set once the process exited: how (`exited with status 1: <stderr>`).
    exit: watch::Receiver<Option<String>>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

struct Inner {
    phase: Phase,
    tools: Arc<Vec<ToolInfo>>,
    version: u64,
    listing: bool,
    /// The connection attempt in force; exits and lists of older ones are ignored.
    epoch: u64,
    last_start: Option<Instant>,
    conn: Option<Conn>,
    faults: u64,
    last_fault: Option<String>,
    in_flight: usize,
    last_used: Instant,
}

/// One MCP server.
pub struct Server {
    key: ServerKey,
    processes: Arc<Supervisor>,
    /// The process's sandbox: the server starts inside its fence for the key's cwd.
    sandbox: Arc<Sandbox>,
    timing: McpTiming,
    inner: Mutex<Inner>,
    /// Bumped on every change of any server of the engine (list waits watch it).
    changes: Arc<watch::Sender<u64>>,
}

/// Lines of stderr kept for a failure's line.
const STDERR_LINES: usize = 3;
/// Characters kept of one such line.
const LINE_CHARS: usize = 200;

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= LINE_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(LINE_CHARS).collect();
    out.push('…');
    out
}

/// The last lines a stream wrote (stderr, or stdout lines that are not JSON-RPC).
#[derive(Default)]
struct Tail {
    lines: Mutex<VecDeque<String>>,
}

impl Tail {
    fn push(&self, line: &str) {
        let line = clip(line);
        if line.is_empty() {
            return;
        }
        if let Ok(mut l) = self.lines.lock() {
            if l.len() == STDERR_LINES {
                l.pop_front();
            }
            l.push_back(line);
        }
    }

    fn joined(&self) -> Option<String> {
        let l = self.lines.lock().ok()?;
        (!l.is_empty()).then(|| l.iter().cloned().collect::<Vec<_>>().join(" / "))
    }
}

/// The server's stdout on its way to rmcp: lines that cannot be JSON-RPC (rmcp skips them) are
/// noted, so that a server that writes logs or garbage on stdout is named as such.
struct Spy<R> {
    inner: R,
    /// The line being read, while it still could be garbage.
    line: Vec<u8>,
    at_start: bool,
    garbage: Arc<Tail>,
}

impl<R> Spy<R> {
    fn new(inner: R, garbage: Arc<Tail>) -> Self {
        Spy {
            inner,
            line: Vec::new(),
            at_start: true,
            garbage,
        }
    }

    fn watch(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                if !self.line.is_empty() {
                    self.garbage.push(&String::from_utf8_lossy(&self.line));
                    self.line.clear();
                }
                self.at_start = true;
                continue;
            }
            if self.at_start {
                if b.is_ascii_whitespace() {
                    continue;
                }
                self.at_start = false;
                if b == b'{' {
                    continue;
                }
                self.line.push(b);
            } else if !self.line.is_empty() && self.line.len() < LINE_CHARS * 4 {
                self.line.push(b);
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Spy<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let new = buf.filled()[before..].to_vec();
            self.watch(&new);
        }
        polled
    }
}

/// The client side's handler: mm's identity, and a changed tool list fetched again.
#[derive(Clone)]
struct Handler {
    server: Weak<Server>,
    epoch: u64,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            server.relist(self.epoch);
        }
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mm", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// How a process ended, with what it last wrote on stderr.
fn ended(status: std::io::Result<std::process::ExitStatus>, stderr: &Tail) -> String {
    let how = match status {
        Ok(s) => match (s.code(), crate::process::signal_of(&s)) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "exited".to_string(),
        },
        Err(e) => format!("exited ({e})"),
    };
    match stderr.joined() {
        Some(err) => format!("{how}: {err}"),
        None => how,
    }
}

fn tool_info(t: rmcp::model::Tool) -> ToolInfo {
    let mut schema = Value::Object((*t.input_schema).clone());
    if let Value::Object(m) = &mut schema {
        m.remove("$schema");
        // Chat templates and servers expect an object schema; some MCP servers send `{}`.
        m.entry("type")
            .or_insert_with(|| Value::String("object".into()));
    }
    ToolInfo {
        name: t.name.to_string(),
        description: t.description.map(|d| d.to_string()).unwrap_or_default(),
        schema,
    }
}

impl Server {
    pub(super) fn new(
        key: ServerKey,
        processes: Arc<Supervisor>,
        sandbox: Arc<Sandbox>,
        timing: McpTiming,
        changes: Arc<watch::Sender<u64>>,
    ) -> Arc<Self> {
        Arc::new(Server {
            key,
            processes,
            sandbox,
            timing,
            inner: Mutex::new(Inner {
                phase: Phase::Idle,
                tools: Arc::new(Vec::new()),
                version: 0,
                listing: false,
                epoch: 0,
                last_start: None,
                conn: None,
                faults: 0,
                last_fault: None,
                in_flight: 0,
                last_used: Instant::now(),
            }),
            changes,
        })
    }

    pub fn key(&self) -> &ServerKey {
        &self.key
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub fn snapshot(&self) -> Snapshot {
        let i = self.lock();
        Snapshot {
            phase: i.phase.clone(),
            tools: i.tools.clone(),
            version: i.version,
            listing: i.listing,
            faults: i.faults,
            last_fault: i.last_fault.clone(),
        }
    }

    /// Starts the server when it has never run, or failed long enough ago; a server starting,
    /// ready or idle is left as it is. Returns at once: the start runs in the background.
    pub fn wake(self: &Arc<Self>) {
        let mut i = self.lock();
        let due = match &i.phase {
            Phase::Starting | Phase::Ready => false,
            Phase::Idle => i.last_start.is_none(),
            Phase::Failed(_) => i
                .last_start
                .is_none_or(|t| t.elapsed() >= self.timing.retry),
        };
        if due {
            self.start_locked(&mut i);
        }
    }

    fn start_locked(self: &Arc<Self>, i: &mut Inner) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        i.epoch += 1;
        i.phase = Phase::Starting;
        i.listing = true;
        i.last_start = Some(Instant::now());
        i.conn = None;
        let epoch = i.epoch;
        let me = Arc::clone(self);
        self.processes
            .tasks()
            .spawn_on(async move { me.connect(epoch).await }, &runtime);
        self.bump();
    }

    /// Spawns the process, shakes hands and lists the tools, all within `timing.start`.
    async fn connect(self: Arc<Self>, epoch: u64) {
        let deadline = Instant::now() + self.timing.start;
        let limit = seconds(self.timing.start);
        let fencing = match self.sandbox.fence_for(&self.key.cwd, &self.key.sandbox) {
            Ok(f) => f,
            Err(e) => return self.fail(epoch, format!("the sandbox: {e}")),
        };
        let key = &self.key;
        let mut cmd = fencing.command(crate::program::resolve(key.command.as_ref()));
        cmd.args(&key.args)
            .envs(&key.env)
            .current_dir(&key.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let python = crate::program::python::cwd_first(&key.command, &key.args);
        crate::program::python::protect(&mut cmd, python, &key.env);
        let mut child = match self.processes.spawn(&mut cmd, Group::Own, fencing) {
            Ok(c) => c,
            Err(e) if !self.key.cwd.is_dir() => {
                let cwd = self.key.cwd.display();
                return self.fail(epoch, format!("cannot start in {cwd}: {e}"));
            }
            Err(e) => {
                return self.fail(epoch, format!("cannot start {:?}: {e}", self.key.command));
            }
        };
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.take_stdin(), child.take_stdout(), child.take_stderr())
        else {
            return self.fail(epoch, "its pipes could not be opened".into());
        };
        let err_tail = Arc::new(Tail::default());
        let tail = err_tail.clone();
        self.processes.tasks().spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tail.push(&line);
            }
        });
        // The watcher owns the child: it reports the exit, or stops the process when told.
        let stop = CancellationToken::new();
        let (exit_tx, exit) = watch::channel(None);
        let (weak, stopper, tail) = (Arc::downgrade(&self), stop.clone(), err_tail.clone());
        self.processes.tasks().spawn(async move {
            tokio::select! {
                status = child.wait() => {
                    // Let stderr's last lines arrive (the pipe closes with the process).
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let _ = exit_tx.send(Some(ended(status, &tail)));
                    if let Some(server) = weak.upgrade() {
                        server.exited(epoch);
                    }
                    // What it left in its group goes with it: no orphan.
                    child.stop();
                }
                () = stopper.cancelled() => child.stop(),
            }
        });
        let garbage = Arc::new(Tail::default());
        let transport = (Spy::new(stdout, garbage.clone()), stdin);
        let handler = Handler {
            server: Arc::downgrade(&self),
            epoch,
        };
        let failure = |stage: &str, err: String, exit: &watch::Receiver<Option<String>>| {
            let exited = exit.borrow().clone();
            match (exited, garbage.joined()) {
                (Some(how), _) => format!("{how} (during {stage})"),
                (None, Some(g)) => format!("{err}; it wrote non-JSON-RPC on stdout: {g}"),
                (None, None) => err,
            }
        };
        let service = match tokio::time::timeout_at(deadline, handler.serve(transport)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                wait_exit(&exit).await;
                let why = failure("initialize", format!("initialize failed: {e}"), &exit);
                stop.cancel();
                return self.fail(epoch, why);
            }
            Err(_) => {
                let why = failure(
                    "initialize",
                    format!("no answer to initialize within {limit} s"),
                    &exit,
                );
                stop.cancel();
                return self.fail(epoch, why);
            }
        };
        let peer = service.peer().clone();
        let tools = match tokio::time::timeout_at(deadline, peer.list_all_tools()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                wait_exit(&exit).await;
                let why = failure("tools/list", format!("tools/list failed: {e}"), &exit);
                stop.cancel();
                return self.fail(epoch, why);
            }
            Err(_) => {
                let why = failure(
                    "tools/list",
                    format!("no answer to tools/list within {limit} s"),
                    &exit,
                );
                stop.cancel();
                return self.fail(epoch, why);
            }
        };
        let tools: Vec<ToolInfo> = tools.into_iter().map(tool_info).collect();
        {
            let mut i = self.lock();
            if i.epoch != epoch {
                return;
            }
            i.phase = Phase::Ready;
            i.listing = false;
            if *i.tools != tools {
                i.tools = Arc::new(tools);
                i.version += 1;
            }
            i.last_used = Instant::now();
            i.conn = Some(Conn {
                peer,
                _service: service,
                stop,
                exit,
            });
        }
        self.bump();
        let me = Arc::clone(&self);
        // It sleeps until the server is idle: cut at shutdown.
        self.processes
            .tasks()
            .spawn_until_shutdown(async move { me.idle_watch(epoch).await });
    }

    /// The attempt `epoch` failed: its tools are withdrawn and the fault recorded.
    fn fail(&self, epoch: u64, why: String) {
        {
            let mut i = self.lock();
            if i.epoch != epoch {
                return;
            }
            tracing::warn!(server = %self.key.name, "MCP server failed: {why}");
            i.phase = Phase::Failed(why.clone());
            i.listing = false;
            i.conn = None;
            if !i.tools.is_empty() {
                i.tools = Arc::new(Vec::new());
                i.version += 1;
            }
            i.faults += 1;
            i.last_fault = Some(why);
        }
        self.bump();
    }

    /// The process of attempt `epoch` exited on its own.
    fn exited(&self, epoch: u64) {
        let how = {
            let i = self.lock();
            if i.epoch != epoch || i.phase != Phase::Ready {
                // A start in progress reports its own failure; a stopped server was stopped.
                return;
            }
            i.conn
                .as_ref()
                .and_then(|c| c.exit.borrow().clone())
                .unwrap_or_else(|| "exited".into())
        };
        self.fail(epoch, how);
    }

    /// `notifications/tools/list_changed`: the list is fetched again (offered from the next
    /// turn).
    fn relist(self: &Arc<Self>, epoch: u64) {
        let peer = {
            let mut i = self.lock();
            match (&i.conn, i.epoch == epoch, &i.phase) {
                (Some(c), true, Phase::Ready) => {
                    let p = c.peer.clone();
                    i.listing = true;
                    p
                }
                _ => return,
            }
        };
        self.bump();
        let me = Arc::clone(self);
        let limit = self.timing.start;
        self.processes.tasks().spawn(async move {
            let listed = tokio::time::timeout(limit, peer.list_all_tools()).await;
            {
                let mut i = me.lock();
                if i.epoch != epoch {
                    return;
                }
                i.listing = false;
                // A failed relist keeps the list known so far.
                if let Ok(Ok(tools)) = listed {
                    let tools: Vec<ToolInfo> = tools.into_iter().map(tool_info).collect();
                    if *i.tools != tools {
                        i.tools = Arc::new(tools);
                        i.version += 1;
                    }
                }
            }
            me.bump();
        });
    }

    /// Stops the process after `timing.idle` without a call; the list stays offered.
    async fn idle_watch(self: Arc<Self>, epoch: u64) {
        loop {
            let wake = {
                let i = self.lock();
                if i.epoch != epoch || i.phase != Phase::Ready {
                    return;
                }
                if i.in_flight > 0 {
                    Instant::now() + self.timing.idle
                } else {
                    i.last_used + self.timing.idle
                }
            };
            tokio::time::sleep_until(wake).await;
            let stopped = {
                let mut i = self.lock();
                if i.epoch != epoch || i.phase != Phase::Ready {
                    return;
                }
                if i.in_flight == 0 && i.last_used.elapsed() >= self.timing.idle {
                    i.phase = Phase::Idle;
                    // Dropping the connection stops the process.
                    i.conn.take()
                } else {
                    None
                }
            };
            if let Some(conn) = stopped {
                drop(conn);
                self.bump();
                return;
            }
        }
    }

    /// The connection to call through, starting the server when it is idle (or failed long
    /// enough ago) and waiting for its start.
    async fn ready(
        self: &Arc<Self>,
        cancel: &CancellationToken,
    ) -> Result<(Peer<RoleClient>, watch::Receiver<Option<String>>), CallError> {
        let mut changes = self.changes.subscribe();
        let mut started = false;
        loop {
            {
                let mut i = self.lock();
                match i.phase.clone() {
                    Phase::Ready => match &i.conn {
                        Some(c) => {
                            let got = (c.peer.clone(), c.exit.clone());
                            i.in_flight += 1;
                            i.last_used = Instant::now();
                            return Ok(got);
                        }
                        // Not expected (a ready server has its connection): start it again.
                        None => {
                            self.start_locked(&mut i);
                            started = true;
                        }
                    },
                    Phase::Starting => {}
                    Phase::Idle => {
                        self.start_locked(&mut i);
                        started = true;
                    }
                    Phase::Failed(why) => {
                        let due = i
                            .last_start
                            .is_none_or(|t| t.elapsed() >= self.timing.retry);
                        let server = self.key.name.clone();
                        if started {
                            return Err(CallError::StartFailed { server, why });
                        }
                        if !due {
                            return Err(CallError::NotRunning { server, why });
                        }
                        self.start_locked(&mut i);
                        started = true;
                    }
                }
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Err(CallError::Cancelled);
                    }
                }
                () = cancel.cancelled() => return Err(CallError::Cancelled),
            }
        }
    }

    /// Calls one tool. A cancel or the timeout drops the request, which sends
    /// `notifications/cancelled` to the server.
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let (peer, mut exit) = self.ready(cancel).await?;
        let _busy = Busy(self);
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(arguments);
        let server = self.key.name.clone();
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(CallError::Cancelled),
            r = tokio::time::timeout(limit, peer.call_tool(params)) => r,
        };
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Err(_) => Err(CallError::Timeout { server, limit }),
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Protocol {
                server,
                message: e.message.to_string(),
            }),
            Ok(Err(e)) => {
                // The connection closed: say how the process ended, once it has.
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), exit.wait_for(|e| e.is_some()))
                        .await;
                let what = exit.borrow().clone();
                Err(CallError::Exited {
                    server,
                    what: what.unwrap_or_else(|| format!("failed ({e})")),
                })
            }
        }
    }
}

/// A call in flight: the idle timer counts from its end.
struct Busy<'a>(&'a Arc<Server>);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut i = self.0.lock();
        i.in_flight = i.in_flight.saturating_sub(1);
        i.last_used = Instant::now();
    }
}

/// After a broken handshake, the process is usually exiting: give its exit a moment to be
/// known, so the line says how it ended rather than that the pipe closed.
async fn wait_exit(exit: &watch::Receiver<Option<String>>) {
    let mut exit = exit.clone();
    let _ = tokio::time::timeout(Duration::from_millis(500), exit.wait_for(|e| e.is_some())).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_spy_notes_lines_that_are_not_json() {
        let tail = Arc::new(Tail::default());
        let mut spy = Spy::new(tokio::io::empty(), tail.clone());
        spy.watch(b"{\"jsonrpc\":\"2.0\"}\nStarting server");
        spy.watch(b"...\n  {\"a\":1}\n\nhello\n");
        assert_eq!(
            tail.joined(),
            Some("Starting server... / hello".to_string())
        );
    }

    #[test]
    fn schemas_lose_their_dialect_and_are_objects() {
        let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "t", "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let info = tool_info(tool);
        assert_eq!(info.schema, serde_json::json!({"type": "object"}));
        assert_eq!(info.description, "");
    }

    #[test]
    fn call_errors_are_one_line_naming_the_server() {
        let s = || "files".to_string();
        assert_eq!(
            CallError::Timeout {
                server: s(),
                limit: Duration::from_millis(250)
            }
            .to_string(),
            "[MCP server files did not answer within 0.25 s; the call was cancelled]"
        );
        assert_eq!(
            CallError::Exited {
                server: s(),
                what: "exited with status 3: boom".into()
            }
            .to_string(),
            "[MCP server files stopped during the call: exited with status 3: boom]"
        );
    }
}
