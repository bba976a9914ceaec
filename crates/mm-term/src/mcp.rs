//! `/mcp`: the session's MCP servers, their state and their tools. Pure.

use super::style;
use crate::engine::McpPhase as Phase;
use crate::sanitize::visible;
use mm_engine::ServerReport;

/// Characters of a tool's description shown (its first line).
const DESCRIPTION_CHARS: usize = 70;

fn tools(n: usize) -> String {
    if n == 1 {
        "1 tool".to_string()
    } else {
        format!("{n} tools")
    }
}

fn short(description: &str) -> String {
    let description = visible(description);
    let first = description.lines().next().unwrap_or("").trim();
    if first.chars().count() <= DESCRIPTION_CHARS {
        return first.to_string();
    }
    let mut s: String = first.chars().take(DESCRIPTION_CHARS - 1).collect();
    s.push('…');
    s
}

/// The lines of `/mcp`; `user_file` is the user's config file as messages name it.
pub fn mcp_lines(servers: &[ServerReport], user_file: &str, color: bool) -> Vec<String> {
    if servers.is_empty() {
        return vec![style::dim(
            color,
            &format!("no MCP servers (add one under [mcp.servers.NAME] in {user_file})"),
        )];
    }
    let mut lines = Vec::new();
    for s in servers {
        let state = match &s.phase {
            Phase::Starting => style::dim(color, "starting"),
            Phase::Ready => format!("ready, {}", tools(s.tools.len())),
            Phase::Idle if s.tools.is_empty() => style::dim(color, "not started"),
            Phase::Idle => format!(
                "idle, {} (stopped after a while without a call; the next call starts it)",
                tools(s.tools.len())
            ),
            Phase::Failed(why) => style::red(color, &format!("failed: {}", visible(why))),
        };
        lines.push(format!(
            "{} — {state}",
            style::bold(color, &visible(&s.name))
        ));
        let names: Vec<_> = s.tools.iter().map(|(n, _)| visible(n)).collect();
        let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        for (name, (_, description)) in names.iter().zip(&s.tools) {
            lines.push(format!(
                "  {name:<width$}  {}",
                style::dim(color, &short(description))
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn servers_their_state_and_tools() {
        let report = |name: &str, phase: Phase, tools: &[(&str, &str)]| ServerReport {
            name: name.into(),
            phase,
            tools: tools
                .iter()
                .map(|(n, d)| (n.to_string(), d.to_string()))
                .collect(),
        };
        let lines = mcp_lines(
            &[
                report(
                    "everything",
                    Phase::Ready,
                    &[
                        ("everything__echo", "Echoes back the input string"),
                        (
                            "everything__get-sum",
                            &format!("Sum\nof {}", "x".repeat(90)),
                        ),
                    ],
                ),
                report("files", Phase::Starting, &[]),
                report(
                    "bad",
                    Phase::Failed("exited with status 3: boom".into()),
                    &[],
                ),
                report("lazy", Phase::Idle, &[("lazy__t", "A tool")]),
            ],
            "",
            false,
        );
        assert_eq!(
            lines,
            vec![
                "everything — ready, 2 tools",
                "  everything__echo     Echoes back the input string",
                "  everything__get-sum  Sum",
                "files — starting",
                "bad — failed: exited with status 3: boom",
                "lazy — idle, 1 tool (stopped after a while without a call; the next call starts it)",
                "  lazy__t  A tool",
            ]
        );
        // A server's tool names, descriptions and errors are shown visibly.
        let hostile = report(
            "files",
            Phase::Failed("boom\x1b]52;c;SGVsbG8=\x07".into()),
            &[("files__\x1b[2Kx", "read \u{202e}this")],
        );
        assert_eq!(
            mcp_lines(&[hostile], "", true)
                .join("\n")
                .replace("\x1b[1m", "")
                .replace("\x1b[2m", "")
                .replace("\x1b[31m", "")
                .replace("\x1b[0m", ""),
            "files — failed: boom^[]52;c;SGVsbG8=^G\n  files__^[[2Kx  read <U+202E>this"
        );
        assert_eq!(
            mcp_lines(&[], "~/.config/mm/config.toml", false),
            vec!["no MCP servers (add one under [mcp.servers.NAME] in ~/.config/mm/config.toml)"]
        );
    }
}
