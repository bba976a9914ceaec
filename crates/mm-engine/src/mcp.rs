//! A session's MCP servers: started in the background when the session opens, their tools
//! joined to the session's toolbox at the start of each turn (docs/tools.md, "MCP tools"). The
//! client, one per server and shared by the sessions, is mm-tools' `mcp`; the `Tool` is
//! mm-tools' `tools/mcp.rs`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Engine, Session};
use crate::config::McpServerConfig;
use crate::event::{Event, Frontend};
use crate::tools::mcp::McpTool;
use crate::tools::{Tool, Toolbox};
use mm_tools::mcp::{
    McpServers, Phase, Server, ServerSpec, Snapshot, ToolInfo, names, spec, unique_name, warning,
};

impl Engine {
    /// The configured servers (`mcp.servers`) join a new or loaded session; the front end starts
    /// them in the background once the session is shown ([`Engine::start_mcp`]), or the first
    /// turn does.
    pub(crate) fn attach_configured_mcp(&self, s: &mut Session) {
        for (name, server) in &self.config.mcp_servers {
            s.mcp.attach(&self.servers.mcp, spec(name, server, &s.cwd));
        }
    }

    /// More servers for a session (the stdio servers an editor passes, with
    /// `acp.clientMcpServers`), exactly like configured ones (started by [`Engine::start_mcp`]
    /// or the next turn). A name
    /// already used in the session gets a suffix (`files-2`). Returns `(asked, given)` names.
    pub fn attach_mcp_servers(
        &self,
        s: &mut Session,
        servers: Vec<(String, McpServerConfig)>,
    ) -> Vec<(String, String)> {
        let mut given = Vec::with_capacity(servers.len());
        for (name, server) in servers {
            let mut taken = s.mcp.names();
            taken.extend(self.config.mcp_servers.keys().cloned());
            let unique = unique_name(&name, &taken);
            s.mcp
                .attach(&self.servers.mcp, spec(&unique, &server, &s.cwd));
            given.push((name, unique));
        }
        given
    }

    /// At the start of a turn: the session's servers' tools as they are listed now join its
    /// toolbox (waiting at most `list_wait` for lists still coming); faults are reported.
    pub(super) async fn join_mcp_tools(
        &self,
        s: &mut Session,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) {
        if s.mcp.is_empty() {
            return;
        }
        s.mcp.prepare(&self.servers.mcp, frontend, cancel).await;
        if let Some(tools) = s.mcp.toolbox(&s.tools) {
            s.tools = tools;
        }
    }

    /// Starts the session's MCP servers in the background (nothing waits for them).
    pub fn start_mcp(&self, s: &Session) {
        self.mcp_start(s).now();
    }

    /// What starts the session's MCP servers, for a front end that starts them once the session
    /// is shown and no longer holds it (ACP: after the answer to `session/new`, `load` or
    /// `resume`, the session in its slot).
    pub fn mcp_start(&self, s: &Session) -> McpStart {
        McpStart(s.mcp.attached.iter().map(|a| a.server.clone()).collect())
    }

    /// The session's MCP servers, their state and tools (the terminal's `/mcp`).
    pub fn mcp_report(&self, s: &Session) -> Vec<ServerReport> {
        s.mcp.report(&s.tools)
    }
}

/// A session's MCP servers, to start in the background ([`McpStart::now`]).
#[must_use = "the servers start when `now` is called"]
pub struct McpStart(Vec<Arc<Server>>);

impl McpStart {
    /// Starts the servers that are not running yet, in the background: nothing waits.
    pub fn now(self) {
        for server in self.0 {
            server.wake();
        }
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
                tools.push(Arc::new(McpTool::new(
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
