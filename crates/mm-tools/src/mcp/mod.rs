//! MCP servers as tools (docs/tools.md, "MCP tools"): an engine-level service, [`McpServers`],
//! holds one client per (name, command, args, env, cwd), shared by the sessions that use it;
//! each session keeps its [`SessionServers`], whose tools join the session's toolbox between
//! turns. The client is rmcp's, over the pipes of a child started through the process
//! [`Supervisor`].

pub mod content;
pub mod names;
pub mod server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTiming};
use crate::event::{Event, Frontend};
use crate::process::Supervisor;
use crate::tools::{Tool, Toolbox};
pub use server::{CallError, Phase, Server, ServerKey, ServerSpec, Snapshot, ToolInfo};

/// Every MCP server of the process, by key.
pub struct McpServers {
    processes: Arc<Supervisor>,
    timing: McpTiming,
    servers: Mutex<HashMap<ServerKey, Arc<Server>>>,
    /// Bumped by every server on every change.
    changes: Arc<watch::Sender<u64>>,
}

impl McpServers {
    pub fn new(processes: Arc<Supervisor>, timing: McpTiming) -> Arc<Self> {
        Arc::new(McpServers {
            processes,
            timing,
            servers: Mutex::new(HashMap::new()),
            changes: Arc::new(watch::channel(0).0),
        })
    }

    pub fn timing(&self) -> McpTiming {
        self.timing
    }

    /// The server of this key (one per key in the process), not started.
    pub fn server(&self, key: ServerKey) -> Arc<Server> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers
            .entry(key.clone())
            .or_insert_with(|| {
                Server::new(
                    key,
                    Arc::clone(&self.processes),
                    self.timing,
                    Arc::clone(&self.changes),
                )
            })
            .clone()
    }

    /// Waits until none of `servers` is fetching its list, at most `timing.list_wait` (or until
    /// `cancel`).
    pub async fn wait_lists(&self, servers: &[Arc<Server>], cancel: &CancellationToken) {
        let deadline = Instant::now() + self.timing.list_wait;
        let mut changes = self.changes.subscribe();
        while servers.iter().any(|s| s.snapshot().listing) {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = tokio::time::sleep_until(deadline) => return,
                () = cancel.cancelled() => return,
            }
        }
    }
}

/// The spec of a configured server for a session in `cwd`, named `name`.
pub fn spec(name: &str, config: &McpServerConfig, cwd: &std::path::Path) -> ServerSpec {
    ServerSpec {
        key: ServerKey {
            name: name.to_string(),
            command: config.command.clone(),
            args: config.args.clone(),
            env: config.env.clone(),
            cwd: cwd.to_path_buf(),
        },
        permissions: config.permissions,
        timeout: config.timeout,
    }
}

/// A server as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    pub name: String,
    pub phase: Phase,
    /// `(offered name, description)` of each tool, in order.
    pub tools: Vec<(String, String)>,
}

struct Attached {
    spec: ServerSpec,
    server: Arc<Server>,
    /// Faults of the server this session has been told of.
    seen_faults: u64,
}

/// The MCP servers a session uses, and what of them its toolbox holds.
#[derive(Default)]
pub struct SessionServers {
    attached: Vec<Attached>,
    /// The names of the MCP tools in the session's toolbox.
    offered: Vec<String>,
    /// The list versions those tools came from, per server (`None`: none offered yet).
    signature: Option<Vec<u64>>,
}

impl SessionServers {
    /// Adds a server to the session; [`SessionServers::start`] starts it (else the session's
    /// first turn does).
    pub fn attach(&mut self, mcp: &McpServers, spec: ServerSpec) {
        let server = mcp.server(spec.key.clone());
        self.attached.push(Attached {
            spec,
            server,
            seen_faults: 0,
        });
        // Offered in the order of their names, so the tool list is the same every turn.
        self.attached
            .sort_by(|a, b| a.spec.key.name.cmp(&b.spec.key.name));
    }

    /// Starts the session's servers that are not running yet, in the background: nothing
    /// waits. Front ends call it once the session is shown (ACP: after the `session/new`
    /// answer), so that the children's start does not compete with that answer.
    pub fn start(&self) {
        for a in &self.attached {
            a.server.wake();
        }
    }

    /// The session's servers (to start them once the session is registered elsewhere).
    pub fn servers(&self) -> Vec<Arc<Server>> {
        self.attached.iter().map(|a| a.server.clone()).collect()
    }

    /// The names of the session's servers.
    pub fn names(&self) -> Vec<String> {
        self.attached
            .iter()
            .map(|a| a.spec.key.name.clone())
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.attached.is_empty()
    }

    /// Before a turn: servers that failed long enough ago start again, the lists still coming
    /// are awaited (bounded), and each new fault is reported once as a warning.
    pub async fn prepare(
        &mut self,
        mcp: &McpServers,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) {
        if self.attached.is_empty() {
            return;
        }
        for a in &self.attached {
            a.server.wake();
        }
        let servers: Vec<Arc<Server>> = self.attached.iter().map(|a| a.server.clone()).collect();
        mcp.wait_lists(&servers, cancel).await;
        for a in &mut self.attached {
            let snap = a.server.snapshot();
            if snap.faults > a.seen_faults {
                a.seen_faults = snap.faults;
                if let (Phase::Failed(why), true) = (&snap.phase, snap.faults > 0) {
                    frontend.emit(Event::Warning(warning(&a.spec.key.name, why)));
                }
            }
        }
    }

    /// The session's toolbox with the MCP tools as the servers list them now, or `None` when
    /// nothing changed since the last call (the toolbox, and the request prefix, stay as they
    /// are).
    pub fn toolbox(&mut self, current: &Toolbox) -> Option<Toolbox> {
        let snaps: Vec<Snapshot> = self.attached.iter().map(|a| a.server.snapshot()).collect();
        let signature: Vec<u64> = snaps.iter().map(|s| s.version).collect();
        if self.signature.as_ref() == Some(&signature) {
            return None;
        }
        let base = current.without(&self.offered);
        let taken = base.names();
        let pairs: Vec<(&str, &ToolInfo)> = self
            .attached
            .iter()
            .zip(&snaps)
            .flat_map(|(a, s)| s.tools.iter().map(|t| (a.spec.key.name.as_str(), t)))
            .collect();
        let plain: Vec<(&str, &str)> = pairs.iter().map(|(s, t)| (*s, t.name.as_str())).collect();
        let offered = names::assign(&plain, &taken);
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(offered.len());
        let mut k = 0;
        for (a, s) in self.attached.iter().zip(&snaps) {
            for info in s.tools.iter() {
                tools.push(Arc::new(crate::tools::mcp::McpTool::new(
                    a.server.clone(),
                    &a.spec,
                    info.clone(),
                    offered[k].clone(),
                )));
                k += 1;
            }
        }
        self.offered = offered;
        self.signature = Some(signature);
        Some(base.with(tools))
    }

    /// Each server, its state and the tools it offers, for `/mcp`.
    pub fn report(&self, toolbox: &Toolbox) -> Vec<ServerReport> {
        let taken = toolbox.without(&self.offered).names();
        let snaps: Vec<Snapshot> = self.attached.iter().map(|a| a.server.snapshot()).collect();
        let plain: Vec<(&str, &str)> = self
            .attached
            .iter()
            .zip(&snaps)
            .flat_map(|(a, s)| {
                s.tools
                    .iter()
                    .map(|t| (a.spec.key.name.as_str(), t.name.as_str()))
            })
            .collect();
        let mut offered = names::assign(&plain, &taken).into_iter();
        self.attached
            .iter()
            .zip(snaps)
            .map(|(a, s)| ServerReport {
                name: a.spec.key.name.clone(),
                tools: s
                    .tools
                    .iter()
                    .map(|t| (offered.next().unwrap_or_default(), t.description.clone()))
                    .collect(),
                phase: s.phase,
            })
            .collect()
    }
}

/// The line a session's front end shows when one of its servers failed.
pub fn warning(server: &str, why: &str) -> String {
    format!(
        "MCP server {server} failed: {why}; its tools are withdrawn until it restarts (at most once a minute)"
    )
}

/// The name a server added to a session gets when `taken` already has its own: `name-2`,
/// `name-3`, …
pub fn unique_name(name: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == name) {
        return name.to_string();
    }
    (2..)
        .map(|n| format!("{name}-{n}"))
        .find(|c| !taken.contains(c))
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clashing_names_get_a_suffix() {
        let taken = vec!["files".to_string(), "files-2".to_string()];
        assert_eq!(unique_name("git", &taken), "git");
        assert_eq!(unique_name("files", &taken), "files-3");
    }
}
