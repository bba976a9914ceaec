//! A tool of an MCP server (docs/tools.md, "MCP tools"): offered as `<server>__<tool>` with the
//! server's own schema, kind `execute`, title `<server>: <tool>`; gated when `yolo = false` or
//! the server's `permissions = "ask"`. Not in `BUILTIN`: a session's MCP tools join its toolbox
//! between turns (`mm_engine::SessionServers::toolbox`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::{CallContext, Describe, Parsed, Tool, ToolOutput};
use crate::config::McpPermissions;
use crate::event::ToolKind;
use crate::mcp::{CallError, Server, ServerSpec, ToolInfo, content};

/// Characters of a server's tool description sent to the model: descriptions are paid for on
/// every request, and some servers write essays.
const DESCRIPTION_CHARS: usize = 1024;

pub struct McpTool {
    server: Arc<Server>,
    /// The server's name in this session (`files`, `files-2`).
    server_name: String,
    info: ToolInfo,
    /// The name offered to the model.
    name: String,
    description: String,
    ask: bool,
    timeout: std::time::Duration,
}

impl McpTool {
    pub fn new(server: Arc<Server>, spec: &ServerSpec, info: ToolInfo, name: String) -> Self {
        let description = if info.description.chars().count() > DESCRIPTION_CHARS {
            let mut d: String = info.description.chars().take(DESCRIPTION_CHARS).collect();
            d.push('…');
            d
        } else {
            info.description.clone()
        };
        McpTool {
            server,
            server_name: spec.key.name.clone(),
            info,
            name,
            description,
            ask: spec.permissions == McpPermissions::Ask,
            timeout: spec.timeout,
        }
    }

    /// The tool's name on its server.
    pub fn tool_name(&self) -> &str {
        &self.info.name
    }
}

impl Describe for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Execute
    }

    fn title(&self, _args: &Value) -> String {
        format!("{}: {}", self.server_name, self.info.name)
    }

    fn always_gated(&self) -> bool {
        self.ask
    }
}

#[async_trait]
impl Tool for McpTool {
    fn parameters(&self) -> Value {
        self.info.schema.clone()
    }

    fn gated(&self, _args: &Parsed) -> bool {
        true
    }

    async fn run_parsed(&self, args: Parsed, call: &CallContext<'_>) -> ToolOutput {
        let Value::Object(arguments) = args.into_raw() else {
            return ToolOutput::not_run(format!(
                "[bad arguments for {}: expected a JSON object]",
                self.name
            ));
        };
        match self
            .server
            .call(&self.info.name, arguments, self.timeout, call.cancel)
            .await
        {
            Ok(result) => {
                let text = content::text(&result);
                if result.is_error == Some(true) {
                    ToolOutput::interrupted(text)
                } else {
                    ToolOutput::completed(text)
                }
            }
            Err(e @ (CallError::NotRunning { .. } | CallError::StartFailed { .. })) => {
                ToolOutput::not_run(e.to_string())
            }
            Err(
                e @ (CallError::Exited { .. }
                | CallError::Timeout { .. }
                | CallError::Protocol { .. }
                | CallError::Cancelled),
            ) => ToolOutput::interrupted(e.to_string()),
        }
    }
}
