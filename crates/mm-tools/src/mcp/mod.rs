//! MCP servers as tools (docs/tools.md, "MCP tools"): an engine-level service, [`McpServers`],
//! holds one client per (name, command, args, env, cwd), shared by the sessions that use it;
//! each session keeps its servers (mm-engine's `SessionServers`), whose tools join the session's
//! toolbox between turns. The client is rmcp's, over the pipes of a child started through the process
//! [`Supervisor`].

mod connect;
pub mod content;
pub mod names;
mod pipes;
pub mod server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, McpTiming};
use crate::process::Supervisor;
use crate::sandbox::Sandbox;
pub use connect::{ServerKey, ToolInfo};
pub use server::{CallError, Phase, Server, ServerSpec, Snapshot};

/// Every MCP server of the process, by key.
pub struct McpServers {
    processes: Arc<Supervisor>,
    /// The servers start inside its fence (docs/sandbox.md).
    sandbox: Arc<Sandbox>,
    timing: McpTiming,
    servers: Mutex<HashMap<ServerKey, Arc<Server>>>,
}

impl McpServers {
    pub fn new(processes: Arc<Supervisor>, sandbox: Arc<Sandbox>, timing: McpTiming) -> Arc<Self> {
        Arc::new(McpServers {
            processes,
            sandbox,
            timing,
            servers: Mutex::new(HashMap::new()),
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
                    Arc::clone(&self.sandbox),
                    self.timing,
                )
            })
            .clone()
    }

    /// Waits until none of `servers` is fetching its list, at most `timing.list_wait` (or until
    /// `cancel`).
    pub async fn wait_lists(&self, servers: &[Arc<Server>], cancel: &CancellationToken) {
        let deadline = Instant::now() + self.timing.list_wait;
        let all = async {
            for s in servers {
                s.listed().await;
            }
        };
        tokio::select! {
            () = all => {}
            () = tokio::time::sleep_until(deadline) => {}
            () = cancel.cancelled() => {}
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
            sandbox: config.sandbox.clone(),
        },
        permissions: config.permissions,
        timeout: config.timeout,
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
