//! The permission gate (engine.md): asks the front end before a gated tool runs, remembering
//! "always" and "never" per tool name for the session.

use std::collections::HashSet;

use crate::event::{Frontend, PermissionDecision, PermissionRequest, ToolCallStart};

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    Run,
    /// Rejected: the text the model receives.
    Rejected(String),
}

/// The text the model receives when the user rejects a call.
pub fn rejection_text(tool: &str) -> String {
    if tool == "bash" {
        "[command rejected by the user]".to_string()
    } else {
        format!("[{tool} rejected by the user]")
    }
}

/// Asks (or answers from memory) whether `call` may run. `gated` says whether the tool asks at
/// all for these arguments with the current `yolo` setting.
pub async fn check(
    call: &ToolCallStart,
    gated: bool,
    allow_always: &mut HashSet<String>,
    never: &mut HashSet<String>,
    frontend: &dyn Frontend,
) -> GateVerdict {
    if !gated {
        return GateVerdict::Run;
    }
    if never.contains(&call.name) {
        return GateVerdict::Rejected(rejection_text(&call.name));
    }
    if allow_always.contains(&call.name) {
        return GateVerdict::Run;
    }
    match frontend
        .ask_permission(PermissionRequest { call: call.clone() })
        .await
    {
        PermissionDecision::AllowOnce => GateVerdict::Run,
        PermissionDecision::AllowAlways => {
            allow_always.insert(call.name.clone());
            GateVerdict::Run
        }
        PermissionDecision::RejectOnce => GateVerdict::Rejected(rejection_text(&call.name)),
        PermissionDecision::Never => {
            never.insert(call.name.clone());
            GateVerdict::Rejected(rejection_text(&call.name))
        }
    }
}
