//! The permission gate (docs/engine.md): asks the front end before a gated tool runs,
//! remembering "always" and "never" for the session: per tool name, or for a command per rule
//! (its first word or two: `always allow "pytest …"`).

use std::collections::HashSet;

use tokio_util::sync::CancellationToken;

use crate::event::{
    AlwaysRule, FileDiff, Frontend, PermissionDecision, PermissionRequest, ToolCallStart,
};

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateVerdict {
    Run,
    /// Rejected: the model receives the tool's own rejection text (`Tool::rejected`), with the
    /// user's reason when one was given.
    Rejected(Option<String>),
}

/// First words that take a subcommand: the rule keeps both (`cargo test`, `git log`).
const TWO_WORDS: &[&str] = &[
    "bun", "cargo", "deno", "docker", "dotnet", "git", "go", "gradle", "just", "kubectl", "make",
    "mvn", "node", "npm", "npx", "pip", "pip3", "pnpm", "poetry", "python", "python3", "rustup",
    "uv", "yarn",
];

/// First words that run whatever follows them: no rule is offered.
const RUNNERS: &[&str] = &[
    "bash", "builtin", "command", "doas", "env", "eval", "exec", "nice", "nohup", "sh", "source",
    "sudo", "time", "timeout", "xargs", "zsh", ".",
];

/// The rule "always" offers for a command: its first word, two for a tool with subcommands;
/// nothing for a runner of other commands or an assignment (`X=1 cmd`).
pub fn rule_of(command: &str) -> AlwaysRule {
    let mut words = command.split_whitespace();
    let Some(first) = words.next() else {
        return AlwaysRule::Nothing;
    };
    let plain = |w: &str| {
        w.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '+' | ':'))
    };
    if !plain(first) || RUNNERS.contains(&first) {
        return AlwaysRule::Nothing;
    }
    match words.next() {
        Some(second) if TWO_WORDS.contains(&first) && plain(second) && !second.starts_with('-') => {
            AlwaysRule::Matching(format!("{first} {second}"))
        }
        _ => AlwaysRule::Matching(first.to_string()),
    }
}

/// Whether the rule `prefix` lets `command` run: it starts with the rule's words and chains,
/// redirects or substitutes nothing (so `pytest; rm -rf ~` is asked again).
pub fn rule_matches(prefix: &str, command: &str) -> bool {
    let command = command.trim();
    let chains = command.chars().any(|c| {
        matches!(
            c,
            ';' | '&' | '|' | '<' | '>' | '`' | '$' | '\n' | '\r' | '(' | ')'
        )
    });
    !chains && (command == prefix || command.starts_with(&format!("{prefix} ")))
}

/// How a rule is kept among the tool names of `allow_always`: `<tool> <words>` (tool names
/// hold no space).
pub fn rule_key(tool: &str, prefix: &str) -> String {
    format!("{tool} {prefix}")
}

/// Asks (or answers from memory) whether `call` may run. `gated` says whether the tool asks at
/// all for these arguments in the session's mode; `subject` is what a rule is matched against
/// (`Tool::rule_subject`: a command); `preview` gives the change it would make, shown with the
/// question (computed only when the question is asked).
#[allow(clippy::too_many_arguments)]
pub async fn check(
    call: &ToolCallStart,
    gated: bool,
    subject: Option<&str>,
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
        return GateVerdict::Rejected(None);
    }
    if allow_always.contains(&call.name) {
        return GateVerdict::Run;
    }
    let rule = match subject {
        None => AlwaysRule::Tool,
        Some(subject) => {
            let remembered = allow_always.iter().any(|key| {
                key.strip_prefix(&call.name)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .is_some_and(|prefix| rule_matches(prefix, subject))
            });
            if remembered {
                return GateVerdict::Run;
            }
            rule_of(subject)
        }
    };
    let request = PermissionRequest {
        call: call.clone(),
        preview: preview(),
        rule: rule.clone(),
    };
    match frontend.ask_permission(request, cancel).await {
        PermissionDecision::AllowOnce => GateVerdict::Run,
        PermissionDecision::AllowAlways => {
            allow_always.insert(call.name.clone());
            GateVerdict::Run
        }
        PermissionDecision::AllowMatching => {
            match rule {
                AlwaysRule::Tool => {
                    allow_always.insert(call.name.clone());
                }
                AlwaysRule::Matching(prefix) => {
                    allow_always.insert(rule_key(&call.name, &prefix));
                }
                // Nothing was offered: this call only.
                AlwaysRule::Nothing => {}
            }
            GateVerdict::Run
        }
        PermissionDecision::RejectOnce => GateVerdict::Rejected(None),
        PermissionDecision::RejectBecause(reason) => GateVerdict::Rejected(Some(reason)),
        PermissionDecision::Never => {
            never.insert(call.name.clone());
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
    fn a_rule_is_the_first_word_or_two() {
        let m = |s: &str| AlwaysRule::Matching(s.to_string());
        assert_eq!(rule_of("pytest -x tests/"), m("pytest"));
        assert_eq!(rule_of("cargo test -p mm"), m("cargo test"));
        assert_eq!(rule_of("git -C x log"), m("git"));
        assert_eq!(rule_of("ls"), m("ls"));
        assert_eq!(rule_of("sudo rm -rf /"), AlwaysRule::Nothing);
        assert_eq!(rule_of("bash big.sh"), AlwaysRule::Nothing);
        assert_eq!(rule_of("X=1 make"), AlwaysRule::Nothing);
        assert_eq!(rule_of("  "), AlwaysRule::Nothing);
        // A chained command offers nothing: no rule would let it run.
        assert_eq!(rule_of("pytest; rm -rf ~"), AlwaysRule::Nothing);
    }

    #[test]
    fn a_rule_never_lets_a_chained_command_through() {
        assert!(rule_matches("pytest", "pytest"));
        assert!(rule_matches("pytest", "pytest -x tests/"));
        assert!(!rule_matches("pytest", "pytestx"));
        assert!(!rule_matches("pytest", "pytest; rm -rf ~"));
        assert!(!rule_matches("pytest", "pytest && rm -rf ~"));
        assert!(!rule_matches("pytest", "pytest | sh"));
        assert!(!rule_matches("pytest", "pytest > ~/.bashrc"));
        assert!(!rule_matches("pytest", "pytest $(rm -rf ~)"));
        assert!(!rule_matches("pytest", "pytest\nrm -rf ~"));
        assert!(!rule_matches("cargo test", "cargo build"));
    }

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
