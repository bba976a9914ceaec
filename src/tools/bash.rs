//! The `bash` tool (tools.md). Stub: replaced by the real implementation.

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Tool, ToolContext, ToolOutput};
use crate::event::ToolKind;

pub struct Bash;

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "bash"
    }
    fn parameters(&self) -> Value {
        serde_json::json!({"type": "object"})
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, _args: &Value) -> String {
        "bash".into()
    }
    fn gated(&self, _args: &Value) -> bool {
        true
    }
    async fn run(
        &self,
        _args: Value,
        _ctx: &ToolContext<'_>,
        _cancel: &CancellationToken,
    ) -> ToolOutput {
        ToolOutput::failed("not implemented")
    }
}
