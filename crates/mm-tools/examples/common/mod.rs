//! What the examples share: a front end that shows nothing and asks nothing, and one call of a
//! tool through it.

use std::path::Path;

use async_trait::async_trait;
use mm_core::event::{Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionRequest};
use mm_tools::tools::{CallContext, Tool, ToolOutput};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub struct Quiet;

#[async_trait]
impl Frontend for Quiet {
    fn emit(&self, _event: Event) {}
    async fn ask_permission(
        &self,
        _r: PermissionRequest,
        _c: &CancellationToken,
    ) -> PermissionDecision {
        PermissionDecision::RejectOnce
    }
    async fn ask_user(&self, _f: Form, _c: &CancellationToken) -> FormAnswer {
        FormAnswer::Unavailable("a benchmark cannot ask".into())
    }
}

pub async fn run(tool: &dyn Tool, cwd: &Path, args: Value) -> ToolOutput {
    let cancel = CancellationToken::new();
    let call = CallContext::new(
        "call_1",
        cwd,
        30_000,
        &cancel,
        mm_core::event::PermissionMode::Yolo,
        &Quiet,
    );
    tool.run(args, &call).await
}
