//! A session's MCP servers: started in the background when the session opens, their tools
//! joined to the session's toolbox at the start of each turn (docs/tools.md, "MCP tools").

use tokio_util::sync::CancellationToken;

use super::{Engine, Session};
use crate::config::McpServerConfig;
use crate::event::Frontend;
use mm_tools::mcp::{ServerReport, spec, unique_name};

impl Engine {
    /// The configured servers (`mcp.servers`) join a new or loaded session; the front end starts
    /// them in the background once the session is shown ([`Engine::start_mcp`]), or the first
    /// turn does.
    pub(super) fn attach_configured_mcp(&self, s: &mut Session) {
        for (name, server) in &self.config.mcp_servers {
            s.mcp.attach(&self.mcp, spec(name, server, &s.cwd));
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
            s.mcp.attach(&self.mcp, spec(&unique, &server, &s.cwd));
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
        s.mcp.prepare(&self.mcp, frontend, cancel).await;
        if let Some(tools) = s.mcp.toolbox(&s.tools) {
            s.tools = tools;
        }
    }

    /// Starts the session's MCP servers in the background (nothing waits for them).
    pub fn start_mcp(&self, s: &Session) {
        s.mcp.start();
    }

    /// The session's MCP servers, their state and tools (the terminal's `/mcp`).
    pub fn mcp_report(&self, s: &Session) -> Vec<ServerReport> {
        s.mcp.report(&s.tools)
    }
}
