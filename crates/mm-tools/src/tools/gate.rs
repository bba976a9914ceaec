//! The permission gate (docs/engine.md): asks the front end before a gated tool runs, remembering
//! "always" and "never" per tool name for the session.

use std::collections::HashSet;

use tokio_util::sync::CancellationToken;

use crate::event::{FileDiff, Frontend, PermissionDecision, PermissionRequest, ToolCallStart};

/// The gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateVerdict {
    Run,
    /// Rejected: the model receives the tool's own rejection text (`Tool::rejected`).
    Rejected,
}

/// Asks (or answers from memory) whether `call` may run. `gated` says whether the tool asks at
/// all for these arguments in the session's mode; `preview` gives the change it would
/// make, shown with the question (computed only when the question is asked).
pub async fn check(
    call: &ToolCallStart,
    gated: bool,
    allow_always: &mut HashSet<String>,
    never: &mut HashSet<String>,
    preview: impl FnOnce() -> Vec<FileDiff>,
    frontend: &dyn Frontend,
    cancel: &CancellationToken,
) -> GateVerdict {
    if !gated {
        return GateVerdict::Run;
    }
    if never.contains(&call.name) {
        return GateVerdict::Rejected;
    }
    if allow_always.contains(&call.name) {
        return GateVerdict::Run;
    }
    match frontend
        .ask_permission(
            PermissionRequest {
                call: call.clone(),
                preview: preview(),
            },
            cancel,
        )
        .await
    {
        PermissionDecision::AllowOnce => GateVerdict::Run,
        PermissionDecision::AllowAlways => {
            allow_always.insert(call.name.clone());
            GateVerdict::Run
        }
        PermissionDecision::RejectOnce => GateVerdict::Rejected,
        PermissionDecision::Never => {
            never.insert(call.name.clone());
            GateVerdict::Rejected
        }
    }
}
