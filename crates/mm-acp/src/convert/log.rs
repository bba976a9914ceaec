//! The `[acp] …` lines for stderr that requests leave behind (the events' own lines come from
//! `translate`).

use std::path::Path;

use crate::engine::{Command, Recap};
use crate::event::Tally;
use mm_core::sandbox_report::{SandboxReport, UnwritableCwd};

/// `initialize`.
pub fn log_client(name_version: Option<(&str, &str)>, protocol: u64, forms: bool) -> String {
    let client = match name_version {
        Some((name, version)) => format!("{name} {version}"),
        None => "unknown".to_string(),
    };
    format!("[acp] client {client} · protocol {protocol} · elicitation(form)={forms}")
}

/// `initialize`, when the sandbox is on: `[acp] sandbox: <mode>`, and what is not enforced
/// after ` — `; then one line per skipped `sandboxWritable` folder and per entry that runs
/// outside the fence.
pub fn log_sandbox(report: &SandboxReport) -> Vec<String> {
    let first = match report.note() {
        Some(n) => format!("[acp] sandbox: {} — {n}", report.mode),
        None => format!("[acp] sandbox: {}", report.mode),
    };
    std::iter::once(first)
        .chain(
            report
                .lines()
                .into_iter()
                .map(|l| format!("[acp] sandbox: {l}")),
        )
        .collect()
}

/// `session/new` in a folder commands may not write in.
pub fn log_sandbox_cwd(cwd: &UnwritableCwd) -> String {
    format!("[acp] sandbox: {cwd}")
}

/// `session/new`.
pub fn log_created(id: &str, cwd: &Path, mcp_servers: usize) -> Vec<String> {
    let mut lines = vec![format!("[acp] session {id} created in {}", cwd.display())];
    if mcp_servers > 0 {
        lines.push(format!(
            "[acp] session {id}: {mcp_servers} MCP server(s) from the client ignored"
        ));
    }
    lines
}

/// `session/load`.
pub fn log_loaded(id: &str, dir: &Path, messages: usize) -> String {
    format!(
        "[acp] session {id} loaded from {}: {messages} message(s) replayed",
        dir.display()
    )
}

/// After a prompt: the turn's recap, or the command's lines.
pub fn log_prompt(id: &str, command: Option<&Command>, recap: Option<&Recap>) -> Vec<String> {
    let mut lines = Vec::new();
    match command {
        Some(Command::New {
            forgotten,
            archived_as,
        }) => {
            if let Some(new_id) = archived_as {
                lines.push(format!(
                    "[acp] session {id}: previous conversation kept as {new_id}"
                ));
            }
            lines.push(format!(
                "[acp] session {id}: new session, {forgotten} message(s) forgotten"
            ));
        }
        Some(Command::Compact(outcome)) => {
            lines.push(format!("[acp] session {id}: /compact — {}", outcome.line()));
        }
        Some(Command::Undo(undone)) => {
            lines.push(format!("[acp] session {id}: /undo — {}", undone.line()));
        }
        None => {}
    }
    if let Some(r) = recap {
        // acp.md's line, to the letter; the hosts the fence refused follow it only when there
        // were any, as in the terminal's recap.
        let refused = match r.refused() {
            0 => String::new(),
            n => format!(" · {n} host(s) refused (tools.networkAllow)"),
        };
        lines.push(format!(
            "[acp] turn done: {} command(s) · {} file op(s) · {} skill(s){refused}",
            r.get(Tally::Command),
            r.get(Tally::FileOp),
            r.get(Tally::Skill)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::SandboxMode;
    use crate::event::CompactOutcome;
    use mm_core::sandbox_report::{Fencer, Gap};
    use pretty_assertions::assert_eq;

    /// A `workspace-write` sandbox under Landlock at `abi`, lacking `gaps`.
    fn report(abi: i32, gaps: Vec<Gap>) -> SandboxReport {
        SandboxReport {
            mode: SandboxMode::WorkspaceWrite,
            fencer: Fencer::Landlock(abi),
            gaps,
            nested: None,
            skipped: Vec::new(),
            outside: Vec::new(),
            caches: Vec::new(),
            hidden: Vec::new(),
            network: None,
        }
    }

    #[test]
    fn the_sandbox_is_said_at_initialize_with_what_it_lacks_and_leaves_out() {
        assert_eq!(
            log_sandbox(&report(7, Vec::new())),
            ["[acp] sandbox: workspace-write"]
        );
        let lacking = report(
            3,
            vec![
                Gap::DeviceIoctl,
                Gap::AbstractSockets,
                Gap::Namespace("Operation not permitted (os error 1)".into()),
            ],
        );
        let note = "Landlock ABI 3 enforced, but device ioctls are not fenced; abstract unix sockets are not fenced; the project's .mm/ stays writable and the hidden places are readable by commands (no private mount namespace: Operation not permitted (os error 1))";
        assert_eq!(
            log_sandbox(&lacking),
            [format!("[acp] sandbox: workspace-write — {note}")]
        );
        let mut opted = report(7, Vec::new());
        opted.outside = vec!["mcp.servers.x".into()];
        let line = "mcp.servers.x runs outside the fence (sandbox = false)";
        assert_eq!(
            log_sandbox(&opted),
            [
                "[acp] sandbox: workspace-write".to_string(),
                format!("[acp] sandbox: {line}")
            ]
        );
        assert_eq!(
            log_sandbox_cwd(&UnwritableCwd("/home/u".into())),
            "[acp] sandbox: the working directory /home/u is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)"
        );
    }

    #[test]
    fn log_lines() {
        assert_eq!(
            log_client(Some(("zed", "0.200.1")), 1, true),
            "[acp] client zed 0.200.1 · protocol 1 · elicitation(form)=true"
        );
        assert_eq!(
            log_client(None, 1, false),
            "[acp] client unknown · protocol 1 · elicitation(form)=false"
        );
        assert_eq!(
            log_created("S", Path::new("/w"), 2),
            vec![
                "[acp] session S created in /w",
                "[acp] session S: 2 MCP server(s) from the client ignored"
            ]
        );
        assert_eq!(
            log_created("S", Path::new("/w"), 0),
            vec!["[acp] session S created in /w"]
        );
        assert_eq!(
            log_loaded("S", Path::new("/w/.mm/sessions"), 4),
            "[acp] session S loaded from /w/.mm/sessions: 4 message(s) replayed"
        );
        assert_eq!(
            log_prompt("S", None, Some(&Recap::of(2, 1, 0))),
            vec!["[acp] turn done: 2 command(s) · 1 file op(s) · 0 skill(s)"]
        );
        let mut refused = Recap::of(1, 0, 0);
        refused.set_refused(2);
        assert_eq!(
            log_prompt("S", None, Some(&refused)),
            vec![
                "[acp] turn done: 1 command(s) · 0 file op(s) · 0 skill(s) · 2 host(s) refused (tools.networkAllow)"
            ]
        );
        assert_eq!(
            log_prompt(
                "S",
                Some(&Command::New {
                    forgotten: 4,
                    archived_as: Some("N".into())
                }),
                None
            ),
            vec![
                "[acp] session S: previous conversation kept as N",
                "[acp] session S: new session, 4 message(s) forgotten"
            ]
        );
        assert_eq!(
            log_prompt(
                "S",
                Some(&Command::Compact(CompactOutcome::Nothing {
                    messages: 2,
                    keep: 2
                })),
                None
            ),
            vec![
                "[acp] session S: /compact — 🗜️ nothing to compact: 2 message(s), no turn older than the last 2"
            ]
        );
    }
}
