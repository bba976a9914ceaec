//! The MCP servers an editor passes in `session/new` and `session/load` (`mcpServers`): with
//! `acp.clientMcpServers`, the stdio ones become servers of the session like configured ones;
//! HTTP and SSE ones are not supported (`mcpCapabilities` stays false) and are only logged.

use agent_client_protocol::v1::schema::McpServer;

use crate::config::McpServerConfig;

/// The stdio servers to start, `(name, config)`, and a line for each server that is not.
pub fn client_servers(servers: &[McpServer]) -> (Vec<(String, McpServerConfig)>, Vec<String>) {
    let mut stdio = Vec::new();
    let mut refused = Vec::new();
    for server in servers {
        let (name, transport) = match server {
            McpServer::Stdio(s) => {
                let mut config =
                    McpServerConfig::new(s.command.to_string_lossy().into_owned(), s.args.clone());
                config.env = s
                    .env
                    .iter()
                    .map(|e| (e.name.clone(), e.value.clone()))
                    .collect();
                stdio.push((s.name.clone(), config));
                continue;
            }
            McpServer::Http(h) => (h.name.clone(), "HTTP"),
            McpServer::Sse(s) => (s.name.clone(), "SSE"),
            _ => ("?".to_string(), "this transport"),
        };
        refused.push(format!(
            "MCP server {name} from the client ignored: {transport} servers are not supported, only stdio"
        ));
    }
    (stdio, refused)
}

/// The line of a client server that joined the session as `given` (a configured server or an
/// earlier one already had the name `asked`).
pub fn client_server_line(asked: &str, given: &str, config: &McpServerConfig) -> String {
    let mut line = format!("MCP server {given} from the client: {}", config.command);
    for a in &config.args {
        line.push(' ');
        line.push_str(a);
    }
    if asked != given {
        line.push_str(&format!(" (renamed from {asked}: the name was taken)"));
    }
    line
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn stdio_servers_start_and_the_others_are_logged() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "fs", "command": "/usr/bin/fs-mcp", "args": ["."], "env": [{"name": "K", "value": "v"}]},
            {"type": "http", "name": "web", "url": "https://example.invalid/mcp", "headers": []},
            {"type": "sse", "name": "old", "url": "https://example.invalid/sse", "headers": []}
        ]))
        .unwrap();
        let (stdio, refused) = client_servers(&servers);
        assert_eq!(stdio.len(), 1);
        let (name, config) = &stdio[0];
        assert_eq!(name, "fs");
        assert_eq!(config.command, "/usr/bin/fs-mcp");
        assert_eq!(config.args, vec!["."]);
        assert_eq!(config.env.get("K").map(String::as_str), Some("v"));
        assert_eq!(
            refused,
            vec![
                "MCP server web from the client ignored: HTTP servers are not supported, only stdio",
                "MCP server old from the client ignored: SSE servers are not supported, only stdio"
            ]
        );
        assert_eq!(
            client_server_line("fs", "fs-2", config),
            "MCP server fs-2 from the client: /usr/bin/fs-mcp . (renamed from fs: the name was taken)"
        );
    }
}
