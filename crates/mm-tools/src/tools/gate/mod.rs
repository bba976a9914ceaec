//! The permission gate (docs/engine.md): asks the front end before a gated tool runs,
//! remembering "always" and "never" for the session ([`Rules`]): per tool, or for a command
//! its read-only form (`read_only.rs`) or its exact words.

mod read_only;
mod rules;
mod words;

pub use rules::{Answer, Covers, Rule, Rules, rule_of};

use tokio_util::sync::CancellationToken;

use crate::event::{
    AlwaysRule, FileDiff, Frontend, PermissionDecision, PermissionRequest, ToolCallStart,
};

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    Run,
    /// Rejected: the model receives the tool's own rejection text (`Describe::rejected`), with the
    /// user's reason when one was given.
    Rejected(Option<String>),
}

/// Asks (or answers from what `rules` remember) whether `call` may run. `gated` says whether
/// the tool asks at all for these arguments in the session's mode; `subject` is what a rule is
/// matched against (`Tool::rule_subject`: a command); `preview` gives the change it would make,
/// shown with the question (computed only when the question is asked).
#[allow(clippy::too_many_arguments)]
pub async fn check(
    call: &ToolCallStart,
    gated: bool,
    subject: Option<&str>,
    rules: &mut Rules,
    preview: impl FnOnce() -> Vec<FileDiff>,
    frontend: &dyn Frontend,
    cancel: &CancellationToken,
) -> GateVerdict {
    if !gated {
        return GateVerdict::Run;
    }
    match rules.answer(&call.name, subject) {
        Some(Answer::Never) => return GateVerdict::Rejected(None),
        Some(Answer::Always) => return GateVerdict::Run,
        None => {}
    }
    let rule = subject.map_or(AlwaysRule::Tool, rule_of);
    let request = PermissionRequest {
        call: call.clone(),
        preview: preview(),
        rule: rule.clone(),
    };
    let decision = frontend.ask_permission(request, cancel).await;
    let mut remember = |answer, covers| {
        rules.remember(Rule {
            answer,
            tool: call.name.clone(),
            covers,
        })
    };
    // What one command's words cover; the tool when its calls have no subject.
    let this_command = || subject.map_or(Covers::Tool, |s| Covers::Exact(words::exact(s)));
    match decision {
        PermissionDecision::AllowOnce => GateVerdict::Run,
        PermissionDecision::AllowAlways => {
            remember(Answer::Always, Covers::Tool);
            GateVerdict::Run
        }
        PermissionDecision::AllowMatching => {
            match rule {
                AlwaysRule::Tool => remember(Answer::Always, Covers::Tool),
                AlwaysRule::ReadOnly(form) => remember(Answer::Always, Covers::ReadOnly(form)),
                AlwaysRule::Exact => remember(Answer::Always, this_command()),
                // Nothing was offered: this call only.
                AlwaysRule::Nothing => {}
            }
            GateVerdict::Run
        }
        PermissionDecision::RejectOnce => GateVerdict::Rejected(None),
        PermissionDecision::RejectBecause(reason) => GateVerdict::Rejected(Some(reason)),
        PermissionDecision::Never => {
            remember(Answer::Never, Covers::Tool);
            GateVerdict::Rejected(None)
        }
        PermissionDecision::NeverMatching => {
            remember(Answer::Never, this_command());
            GateVerdict::Rejected(None)
        }
    }
}

/// A tool's rejection with the user's reason: `[command rejected by the user: <reason>]`.
pub fn rejected_because(rejected: &str, reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        return rejected.to_string();
    }
    match rejected.strip_suffix(']') {
        Some(head) => format!("{head}: {reason}]"),
        None => format!("{rejected}: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_joins_the_rejection() {
        assert_eq!(
            rejected_because("[command rejected by the user]", " use nextest "),
            "[command rejected by the user: use nextest]"
        );
        assert_eq!(
            rejected_because("[command rejected by the user]", ""),
            "[command rejected by the user]"
        );
    }
}
