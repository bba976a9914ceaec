//! One MCP server: its process (through the [`Supervisor`]), its rmcp client, its tool list, and
//! what happened to it. Shared by the sessions that use the same (name, command, args, env,
//! cwd, sandbox).
//!
//! One task owns all of it, the server's `Actor`, fed by a channel: the [`Server`] handle the
//! sessions hold asks it to start ([`Server::wake`]), for the connection of a call
//! ([`Server::call`]) or to say when the list is known ([`Server::listed`]), and reads the
//! [`Snapshot`] it publishes. What a connection waits for — its start, its process's exit, a
//! changed list fetched again, the idle timer — are futures the actor holds with it, so they end
//! with the connection; whatever ends one (a start that fails, the process exiting) goes through
//! `Actor::fail`. How a connection starts and what it is: `connect.rs`; what its pipes say of
//! a failure: `pipes.rs`.
//!
//! States: `Starting` (spawned, initialize and tools/list under way) → `Ready` (the list is
//! known, calls go through) → `Idle` (stopped after a while without a call; the list stays
//! offered and the next call starts it again) or `Failed` (could not start, exited, hung, or
//! answered garbage: its tools are withdrawn, and it is started again at most once per
//! `retry`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::connect::{
    Boxed, Conn, ServerKey, Started, ToolInfo, connect, exited, relisted, tool_info,
};
use crate::config::{McpPermissions, McpTiming, seconds};
use crate::process::Supervisor;
use crate::sandbox::Sandbox;

/// A server as a session uses it: its key and the settings of its calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub key: ServerKey,
    pub permissions: McpPermissions,
    /// One call's limit.
    pub timeout: Duration,
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

/// One MCP server, as the sessions hold it: a handle to its actor.
pub struct Server {
    key: ServerKey,
    mailbox: mpsc::UnboundedSender<Msg>,
    published: watch::Receiver<Snapshot>,
}

/// What the handle asks of the actor.
enum Msg {
    /// Start the server when it has never run, or failed long enough ago.
    Wake,
    /// The connection for a call, once the server is ready (started if it must be).
    Lease(oneshot::Sender<Result<Lease, CallError>>),
    /// Answer once no list is being fetched.
    WhenListed(oneshot::Sender<()>),
    /// A call ended: the idle timer counts from here.
    Returned,
}

/// What one call goes through: the server's peer, how its process ended once it has, and the
/// guard that tells the actor when the call is over (also when the lease is dropped unread).
struct Lease {
    peer: Peer<RoleClient>,
    exit: watch::Receiver<Option<String>>,
    _busy: Busy,
}

/// A call in flight: dropped, it tells the actor.
struct Busy(mpsc::UnboundedSender<Msg>);

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.send(Msg::Returned);
    }
}

impl Server {
    pub(super) fn new(
        key: ServerKey,
        processes: Arc<Supervisor>,
        sandbox: Arc<Sandbox>,
        timing: McpTiming,
    ) -> Arc<Self> {
        let (mailbox, inbox) = mpsc::unbounded_channel();
        let (publish, published) = watch::channel(Snapshot {
            phase: Phase::Idle,
            tools: Arc::new(Vec::new()),
            version: 0,
            listing: false,
            faults: 0,
            last_fault: None,
        });
        let actor = Actor {
            key: key.clone(),
            processes: Arc::clone(&processes),
            sandbox,
            timing,
            inbox,
            mailbox: mailbox.downgrade(),
            publish,
            state: State::Idle,
            waiting: Vec::new(),
            list_waiters: Vec::new(),
            last_start: None,
            in_flight: 0,
            last_used: Instant::now(),
            tools: Arc::new(Vec::new()),
            version: 0,
            listing: false,
            faults: 0,
            last_fault: None,
        };
        // It lives as long as the handles (or until shutdown, which stops its process); a
        // server made outside a runtime never starts.
        if tokio::runtime::Handle::try_current().is_ok() {
            processes.tasks().spawn_until_shutdown(actor.run());
        }
        Arc::new(Server {
            key,
            mailbox,
            published,
        })
    }

    pub fn key(&self) -> &ServerKey {
        &self.key
    }

    pub fn snapshot(&self) -> Snapshot {
        self.published.borrow().clone()
    }

    /// Starts the server when it has never run, or failed long enough ago; a server starting,
    /// ready or idle is left as it is. Returns at once: the start runs in the background.
    pub fn wake(&self) {
        let _ = self.mailbox.send(Msg::Wake);
    }

    /// Returns once no list is being fetched (what was asked before is done first: a server
    /// just woken is listing).
    pub async fn listed(&self) {
        let (tx, rx) = oneshot::channel();
        if self.mailbox.send(Msg::WhenListed(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Calls one tool, starting the server when it is idle (or failed long enough ago) and
    /// waiting for its start. A cancel or the timeout drops the request, which sends
    /// `notifications/cancelled` to the server.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let (tx, rx) = oneshot::channel();
        self.mailbox
            .send(Msg::Lease(tx))
            .map_err(|_| CallError::Cancelled)?;
        let Lease { peer, mut exit, .. } = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(CallError::Cancelled),
            lease = rx => lease.unwrap_or(Err(CallError::Cancelled))?,
        };
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

/// Where the server is, with what that state waits for.
enum State {
    /// Never started, or stopped after `idle` without a call.
    Idle,
    /// Its start: process, initialize, tools/list.
    Starting(Boxed<Result<Started, String>>),
    Ready(Box<Conn>),
    Failed(String),
}

/// The task that owns one server.
struct Actor {
    key: ServerKey,
    processes: Arc<Supervisor>,
    /// The process's sandbox: the server starts inside its fence for the key's cwd.
    sandbox: Arc<Sandbox>,
    timing: McpTiming,
    inbox: mpsc::UnboundedReceiver<Msg>,
    /// For the calls' [`Busy`] guards; weak, so that the actor ends with the last handle.
    mailbox: mpsc::WeakUnboundedSender<Msg>,
    publish: watch::Sender<Snapshot>,
    state: State,
    /// The calls waiting for the server to be ready, each with whether its wait started it.
    waiting: Vec<(oneshot::Sender<Result<Lease, CallError>>, bool)>,
    /// Who waits for the list to be known.
    list_waiters: Vec<oneshot::Sender<()>>,
    last_start: Option<Instant>,
    in_flight: usize,
    last_used: Instant,
    tools: Arc<Vec<ToolInfo>>,
    version: u64,
    listing: bool,
    faults: u64,
    last_fault: Option<String>,
}

/// What the actor wakes up for.
enum Step {
    /// A message, or `None` once every handle is gone.
    Mail(Option<Msg>),
    Started(Result<Started, String>),
    /// The process of the connection exited: how.
    Exited(String),
    /// `notifications/tools/list_changed`.
    ListChanged,
    /// The list fetched again (`None`: that failed, and the list known so far stays).
    Listed(Option<Vec<ToolInfo>>),
    /// `idle` passed without a call.
    IdleTime,
}

impl Actor {
    async fn run(mut self) {
        loop {
            match self.next().await {
                Step::Mail(None) => return,
                Step::Mail(Some(msg)) => self.mail(msg),
                Step::Started(Ok(started)) => self.ready(started),
                Step::Started(Err(why)) | Step::Exited(why) => self.fail(why),
                Step::ListChanged => self.relist(),
                Step::Listed(tools) => self.listed(tools),
                Step::IdleTime => self.idle(),
            }
            self.publish();
        }
    }

    /// Waits for the next thing that concerns the server in its state.
    async fn next(&mut self) -> Step {
        let inbox = &mut self.inbox;
        match &mut self.state {
            State::Idle | State::Failed(_) => Step::Mail(inbox.recv().await),
            State::Starting(start) => tokio::select! {
                mail = inbox.recv() => Step::Mail(mail),
                started = start => Step::Started(started),
            },
            State::Ready(conn) => {
                let idle_at = (self.in_flight == 0).then(|| self.last_used + self.timing.idle);
                tokio::select! {
                    mail = inbox.recv() => Step::Mail(mail),
                    how = exited(&mut conn.exit) => Step::Exited(how),
                    Some(()) = conn.list_changed.recv() => Step::ListChanged,
                    listed = relisted(&mut conn.relist) => Step::Listed(listed),
                    () = until(idle_at) => Step::IdleTime,
                }
            }
        }
    }

    fn mail(&mut self, msg: Msg) {
        match msg {
            Msg::Wake => {
                let due = match &self.state {
                    State::Starting(_) | State::Ready(_) => false,
                    State::Idle => self.last_start.is_none(),
                    State::Failed(_) => self.retry_due(),
                };
                if due {
                    self.start();
                }
            }
            Msg::Lease(reply) => match &self.state {
                State::Ready(_) => self.lend(reply),
                State::Starting(_) => self.waiting.push((reply, false)),
                State::Idle => {
                    self.start();
                    self.waiting.push((reply, true));
                }
                State::Failed(why) if !self.retry_due() => {
                    let server = self.key.name.clone();
                    let why = why.clone();
                    let _ = reply.send(Err(CallError::NotRunning { server, why }));
                }
                State::Failed(_) => {
                    self.start();
                    self.waiting.push((reply, true));
                }
            },
            Msg::WhenListed(reply) => self.list_waiters.push(reply),
            Msg::Returned => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.last_used = Instant::now();
            }
        }
    }

    /// Whether a failed (or never started) server may start again.
    fn retry_due(&self) -> bool {
        self.last_start
            .is_none_or(|t| t.elapsed() >= self.timing.retry)
    }

    fn start(&mut self) {
        self.last_start = Some(Instant::now());
        self.listing = true;
        let start = connect(
            self.key.clone(),
            Arc::clone(&self.processes),
            Arc::clone(&self.sandbox),
            self.timing.start,
        );
        self.state = State::Starting(Box::pin(start));
    }

    /// Gives a call the connection of a ready server.
    fn lend(&mut self, reply: oneshot::Sender<Result<Lease, CallError>>) {
        let (State::Ready(conn), Some(mailbox)) = (&self.state, self.mailbox.upgrade()) else {
            return;
        };
        let lease = Lease {
            peer: conn.peer.clone(),
            exit: conn.exit.clone(),
            _busy: Busy(mailbox),
        };
        // A call that gave up meanwhile drops the lease, which counts as returned.
        let _ = reply.send(Ok(lease));
        self.in_flight += 1;
        self.last_used = Instant::now();
    }

    fn ready(&mut self, started: Started) {
        let Started { conn, tools } = started;
        self.listing = false;
        if *self.tools != tools {
            self.tools = Arc::new(tools);
            self.version += 1;
        }
        self.last_used = Instant::now();
        self.state = State::Ready(conn);
        for (reply, _) in std::mem::take(&mut self.waiting) {
            self.lend(reply);
        }
    }

    /// The one way a connection ends in failure (its start failed, or its process exited):
    /// the process is stopped, its tools are withdrawn and the fault recorded; the calls that
    /// started it are told, the others start it again if it is due, else are told.
    fn fail(&mut self, why: String) {
        tracing::warn!(server = %self.key.name, "MCP server failed: {why}");
        // Dropping the connection stops the process.
        self.state = State::Failed(why.clone());
        self.listing = false;
        if !self.tools.is_empty() {
            self.tools = Arc::new(Vec::new());
            self.version += 1;
        }
        self.faults += 1;
        self.last_fault = Some(why.clone());
        let mut again = Vec::new();
        for (reply, started) in std::mem::take(&mut self.waiting) {
            let (server, why) = (self.key.name.clone(), why.clone());
            if started {
                let _ = reply.send(Err(CallError::StartFailed { server, why }));
            } else if self.retry_due() {
                again.push((reply, true));
            } else {
                let _ = reply.send(Err(CallError::NotRunning { server, why }));
            }
        }
        if !again.is_empty() {
            self.start();
            self.waiting = again;
        }
    }

    /// `notifications/tools/list_changed`: the list is fetched again (offered from the next
    /// turn); a fetch still under way gives way to it.
    fn relist(&mut self) {
        let State::Ready(conn) = &mut self.state else {
            return;
        };
        self.listing = true;
        let peer = conn.peer.clone();
        let limit = self.timing.start;
        conn.relist = Some(Box::pin(async move {
            let listed = tokio::time::timeout(limit, peer.list_all_tools()).await;
            listed
                .ok()?
                .ok()
                .map(|tools| tools.into_iter().map(tool_info).collect())
        }));
    }

    /// A list fetched again: offered when it changed; a failed fetch keeps the list known so
    /// far.
    fn listed(&mut self, tools: Option<Vec<ToolInfo>>) {
        self.listing = false;
        if let Some(tools) = tools
            && *self.tools != tools
        {
            self.tools = Arc::new(tools);
            self.version += 1;
        }
    }

    /// Stops the process after `timing.idle` without a call; the list stays offered.
    fn idle(&mut self) {
        if self.in_flight == 0 && self.last_used.elapsed() >= self.timing.idle {
            // Dropping the connection stops the process.
            self.state = State::Idle;
            self.listing = false;
        }
    }

    /// Publishes the state, and answers those waiting for the list once it is known.
    fn publish(&mut self) {
        let snapshot = Snapshot {
            phase: match &self.state {
                State::Idle => Phase::Idle,
                State::Starting(_) => Phase::Starting,
                State::Ready(_) => Phase::Ready,
                State::Failed(why) => Phase::Failed(why.clone()),
            },
            tools: Arc::clone(&self.tools),
            version: self.version,
            listing: self.listing,
            faults: self.faults,
            last_fault: self.last_fault.clone(),
        };
        self.publish.send_if_modified(|now| {
            let changed = *now != snapshot;
            *now = snapshot;
            changed
        });
        if !self.listing {
            for waiter in std::mem::take(&mut self.list_waiters) {
                let _ = waiter.send(());
            }
        }
    }
}

/// Sleeps until `at`; never without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

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
