//! One connection to an MCP server: its process started inside the fence (through the
//! [`Supervisor`]), the handshake and the first list within the start's limit, and what the
//! server's actor then watches of it (its exit, `notifications/tools/list_changed`, a list
//! fetched again). A start that does not get that far is one line saying why ([`connect`]'s
//! `Err`), whatever stage it broke at.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, Implementation};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::pipes::{Spy, Tail, ended};
use crate::config::{EntrySandbox, seconds};
use crate::process::{Child, Group, Supervisor};
use crate::sandbox::Sandbox;
use crate::tasks::Tasks;

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

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// The input schema, without `$schema` (the model does not need it).
    pub schema: Value,
}

/// How long a process that exited is given for its stderr to close (its last lines are the
/// failure's line); longer only when something it started holds the pipe.
const STDERR_GRACE: Duration = Duration::from_millis(200);

/// A future the actor holds.
pub(super) type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A running server: its process and client.
pub(super) struct Conn {
    pub(super) peer: Peer<RoleClient>,
    /// Dropped with the connection: the client's loop ends.
    _service: RunningService<RoleClient, Handler>,
    /// Stops the process (its watcher holds the child).
    stop: CancellationToken,
    /// Set once the process exited: how (`exited with status 1: <stderr>`).
    pub(super) exit: watch::Receiver<Option<String>>,
    /// The server's `notifications/tools/list_changed`.
    pub(super) list_changed: mpsc::UnboundedReceiver<()>,
    /// The list being fetched again after one.
    pub(super) relist: Option<Boxed<Option<Vec<ToolInfo>>>>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// How the process ended, once it has.
pub(super) async fn exited(exit: &mut watch::Receiver<Option<String>>) -> String {
    if exit.wait_for(Option::is_some).await.is_err() {
        // The watcher ended without a word: it was told to stop the process.
        return std::future::pending().await;
    }
    exit.borrow().clone().unwrap_or_else(|| "exited".into())
}

/// The list fetched again, once it is; never without a fetch.
pub(super) async fn relisted(
    relist: &mut Option<Boxed<Option<Vec<ToolInfo>>>>,
) -> Option<Vec<ToolInfo>> {
    let Some(fetch) = relist else {
        return std::future::pending().await;
    };
    let listed = fetch.await;
    *relist = None;
    listed
}

/// A connection made, with the list it gave.
pub(super) struct Started {
    pub(super) conn: Box<Conn>,
    pub(super) tools: Vec<ToolInfo>,
}

/// The client side's handler: mm's identity, and a changed tool list passed to the actor.
#[derive(Clone)]
struct Handler {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mm", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A stage of the handshake that did not end well: which, what happened, and whether it was
/// silence (the deadline passed).
struct Broken {
    stage: &'static str,
    what: String,
    silent: bool,
}

/// One stage of the handshake, within the start's deadline.
async fn stage<T, E: std::fmt::Display>(
    stage: &'static str,
    deadline: Instant,
    limit: Duration,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, Broken> {
    match tokio::time::timeout_at(deadline, work).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) => Err(Broken {
            stage,
            what: format!("{stage} failed: {e}"),
            silent: false,
        }),
        Err(_) => Err(Broken {
            stage,
            what: format!("no answer to {stage} within {} s", seconds(limit)),
            silent: true,
        }),
    }
}

/// Spawns the process, shakes hands and lists the tools, all within `limit`; `Err` is the
/// failure's line.
pub(super) async fn connect(
    key: ServerKey,
    processes: Arc<Supervisor>,
    sandbox: Arc<Sandbox>,
    limit: Duration,
) -> Result<Started, String> {
    let deadline = Instant::now() + limit;
    let fencing = sandbox
        .fence_for(&key.cwd, &key.sandbox)
        .map_err(|e| format!("the sandbox: {e}"))?;
    let mut cmd = fencing.command(crate::program::resolve(key.command.as_ref()));
    cmd.args(&key.args)
        .envs(&key.env)
        .current_dir(&key.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let python = crate::program::python::cwd_first(&key.command, &key.args);
    crate::program::python::protect(&mut cmd, python, &key.env);
    let mut child = processes
        .spawn(&mut cmd, Group::Own, fencing)
        .map_err(|e| match key.cwd.is_dir() {
            false => format!("cannot start in {}: {e}", key.cwd.display()),
            true => format!("cannot start {:?}: {e}", key.command),
        })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.take_stdin(), child.take_stdout(), child.take_stderr())
    else {
        return Err("its pipes could not be opened".into());
    };
    let tasks = processes.tasks();
    let err_tail = Arc::new(Tail::default());
    let (tail, (stderr_closed, closed)) = (err_tail.clone(), oneshot::channel::<()>());
    tasks.spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tail.push(&line);
        }
        let _ = stderr_closed.send(());
    });
    let stop = CancellationToken::new();
    // Until the connection holds it, a start that goes no further stops the process.
    let stop_unless_started = stop.clone().drop_guard();
    let exit = watch_child(tasks, child, stop.clone(), err_tail, closed);
    let garbage = Arc::new(Tail::default());
    let (list_tx, list_changed) = mpsc::unbounded_channel();
    let handler = Handler {
        list_changed: list_tx,
    };
    let transport = (Spy::new(stdout, garbage.clone()), stdin);
    let handshake = async {
        let service = stage("initialize", deadline, limit, handler.serve(transport)).await?;
        let tools = stage(
            "tools/list",
            deadline,
            limit,
            service.peer().list_all_tools(),
        )
        .await?;
        Ok::<_, Broken>((service, tools))
    };
    match handshake.await {
        Ok((service, tools)) => {
            stop_unless_started.disarm();
            Ok(Started {
                conn: Box::new(Conn {
                    peer: service.peer().clone(),
                    _service: service,
                    stop,
                    exit,
                    list_changed,
                    relist: None,
                }),
                tools: tools.into_iter().map(tool_info).collect(),
            })
        }
        Err(Broken {
            stage,
            what,
            silent,
        }) => {
            if !silent {
                wait_exit(&exit).await;
            }
            let exited = exit.borrow().clone();
            Err(match (exited, garbage.joined()) {
                (Some(how), _) => format!("{how} (during {stage})"),
                (None, Some(g)) => format!("{what}; it wrote non-JSON-RPC on stdout: {g}"),
                (None, None) => what,
            })
        }
    }
}

/// Owns the child: says how it ended (once its stderr closed, for the last lines, within
/// [`STDERR_GRACE`]), or stops it when `stop` fires.
fn watch_child(
    tasks: &Tasks,
    mut child: Child,
    stop: CancellationToken,
    stderr: Arc<Tail>,
    stderr_closed: oneshot::Receiver<()>,
) -> watch::Receiver<Option<String>> {
    let (exit_tx, exit) = watch::channel(None);
    tasks.spawn(async move {
        tokio::select! {
            status = child.wait() => {
                let _ = tokio::time::timeout(STDERR_GRACE, stderr_closed).await;
                let _ = exit_tx.send(Some(ended(status, &stderr)));
                // What it left in its group goes with it: no orphan.
                child.stop();
            }
            () = stop.cancelled() => child.stop(),
        }
    });
    exit
}

pub(super) fn tool_info(t: rmcp::model::Tool) -> ToolInfo {
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
    fn schemas_lose_their_dialect_and_are_objects() {
        let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "t", "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let info = tool_info(tool);
        assert_eq!(info.schema, serde_json::json!({"type": "object"}));
        assert_eq!(info.description, "");
    }
}
