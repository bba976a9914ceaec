//! The banner shown on stderr at start (docs/terminal.md, "The banner"). Pure: a [`Banner`] in,
//! lines out. The model line comes later, when detection completes ([`model_line`]), so the prompt
//! is never delayed.

use super::numbers::window;
use super::style;
use crate::config::Config;
use crate::engine::{SMALL_WINDOW, ServerKind};
use crate::event::{ContextUsage, PermissionMode};
use crate::sanitize::visible;
use crate::skills::Catalogue;
use mm_core::sandbox_report::{SandboxReport, UnwritableCwd};

/// What the banner says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Banner {
    /// `v0.1.0`.
    pub version: String,
    /// The configured server URL; empty: it will be detected.
    pub url: String,
    /// The configured model name; empty: the server's.
    pub model: String,
    pub sessions: bool,
    /// The session's mode (`yolo` gives the first one).
    pub mode: PermissionMode,
    pub skills: usize,
    /// Active hooks per event (`preToolCall`, 2), events without hooks left out.
    pub hooks: Vec<(String, usize)>,
    /// Names of the configured MCP servers.
    pub mcp_servers: Vec<String>,
    /// Names of the configured agents.
    pub agents: Vec<String>,
    /// The sandbox's mode as enforced (`workspace-write`); `None` when it is off.
    pub sandbox: Option<String>,
    /// Every warning: configuration, skipped and shadowed skills.
    pub warnings: Vec<String>,
}

impl Banner {
    /// The banner of a configuration and a session's skills; the caller adds the warnings that
    /// did not come from the configuration (skipped or shadowed skills).
    pub fn new(config: &Config, skills: &Catalogue) -> Self {
        let hooks = &config.hooks;
        Banner {
            version: crate::VERSION.to_string(),
            url: config.model.url.clone(),
            model: config.model.name.clone(),
            sessions: config.sessions.enabled,
            mode: PermissionMode::from_yolo(config.yolo),
            skills: skills.skills.len(),
            hooks: [
                ("sessionStart", hooks.session_start.len()),
                ("userPromptSubmit", hooks.user_prompt_submit.len()),
                ("preToolCall", hooks.pre_tool_call.len()),
                ("postToolCall", hooks.post_tool_call.len()),
                ("turnEnd", hooks.turn_end.len()),
                ("preCompact", hooks.pre_compact.len()),
            ]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(e, n)| (e.to_string(), n))
            .collect(),
            mcp_servers: config.mcp_servers.keys().cloned().collect(),
            agents: config.agents.keys().cloned().collect(),
            sandbox: None,
            warnings: config.warnings.clone(),
        }
    }

    /// The model (empty when not configured) and the URL the banner names, if it names one.
    pub fn model_named(&self) -> Option<(String, String)> {
        (!self.url.is_empty()).then(|| (self.model.clone(), self.url.clone()))
    }
}

impl Banner {
    /// Says the sandbox: its mode as enforced among the facts (when it is on), and a warning
    /// `sandbox <mode>: …` for what the kernel does not enforce, each `sandboxWritable` folder
    /// skipped, each entry that runs outside the fence, and a working directory commands may
    /// not write in.
    pub fn say_sandbox(&mut self, report: &SandboxReport, cwd: Option<&UnwritableCwd>) {
        if report.is_on() {
            self.sandbox = Some(match report.network_label() {
                Some(net) => format!("{} · {net}", report.label()),
                None => report.label(),
            });
        }
        let mode = report.mode;
        self.warnings.extend(
            report
                .note()
                .into_iter()
                .chain(report.lines())
                .chain(cwd.map(UnwritableCwd::to_string))
                .map(|n| format!("sandbox {mode}: {n}")),
        );
    }
}

/// `0 hooks`, or `3 hooks (preToolCall 2, turnEnd 1)`.
fn hooks_fact(hooks: &[(String, usize)]) -> String {
    let total: usize = hooks.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return plural(0, "hook", "hooks");
    }
    let per: Vec<String> = hooks.iter().map(|(e, n)| format!("{e} {n}")).collect();
    format!("{} ({})", plural(total, "hook", "hooks"), per.join(", "))
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The banner's lines, for stderr. Names, URLs and warnings come from configuration files,
/// servers and a project's skills: shown visibly.
pub fn banner_lines(banner: &Banner, color: bool) -> Vec<String> {
    let mut lines = vec![format!("{} {}", style::bold(color, "mm"), banner.version)];
    let server = if banner.url.is_empty() {
        "detecting the model server…".to_string()
    } else if banner.model.is_empty() {
        format!("model server {}", banner.url)
    } else {
        format!("model {} at {}", banner.model, banner.url)
    };
    lines.push(style::dim(color, &visible(&server)));
    let mut facts = vec![
        format!("sessions {}", on_off(banner.sessions)),
        format!("mode {}", banner.mode.id()),
    ];
    if let Some(mode) = &banner.sandbox {
        facts.push(format!("sandbox {mode}"));
    }
    facts.extend([
        plural(banner.skills, "skill", "skills"),
        hooks_fact(&banner.hooks),
    ]);
    if !banner.mcp_servers.is_empty() {
        facts.push(format!("MCP: {}", banner.mcp_servers.join(", ")));
    }
    if !banner.agents.is_empty() {
        facts.push(format!("agents: {}", banner.agents.join(", ")));
    }
    lines.push(style::dim(color, &visible(&facts.join(" · "))));
    for warning in &banner.warnings {
        lines.push(style::yellow(
            color,
            &format!("warning: {}", visible(warning)),
        ));
    }
    lines
}

/// The interactive session's hint, last line of its banner.
pub const HINT: &str = "/help for commands · Ctrl-D to leave";

/// The dim hint line of the interactive banner.
pub fn hint_line(color: bool) -> String {
    style::dim(color, HINT)
}

/// The line when detection completes: `model <name> at <url> · context window <N>`; when the
/// banner already named this model at this URL (`banner_model`), only `context window <N>`.
pub fn model_line(
    name: &str,
    url: &str,
    context_window: Option<u64>,
    banner_model: Option<&(String, String)>,
    color: bool,
) -> String {
    let ctx = match context_window {
        Some(n) if n > 0 => window(n),
        _ => "unknown".to_string(),
    };
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    let text = match banner_model {
        Some((n, u)) if n == name && same(u, url) => format!("context window {ctx}"),
        // The banner named the server only: the model, not the server again.
        Some((n, u)) if n.is_empty() && same(u, url) => {
            format!("model {name} · context window {ctx}")
        }
        _ => format!("model {name} at {url} · context window {ctx}"),
    };
    style::dim(color, &visible(&text))
}

/// The warning that a small window is filling up: once a turn has used more than half of a
/// window under [`SMALL_WINDOW`], with how to raise it on that server. Before that
/// the window is no trouble, and saying so at every start is noise.
pub fn small_window_warning(
    context: ContextUsage,
    kind: ServerKind,
    color: bool,
) -> Option<String> {
    if !small_window_filling(context) {
        return None;
    }
    crate::engine::small_window_warning(context.size, kind)
        .map(|w| style::yellow(color, &format!("warning: {w}")))
}

/// The window is small and over half of it is in use.
pub fn small_window_filling(context: ContextUsage) -> bool {
    context.size > 0 && context.size < SMALL_WINDOW && context.used.saturating_mul(2) > context.size
}

/// The line when detection failed (the server is unreachable or nothing was found).
pub fn detection_failed(error: &str, color: bool) -> String {
    style::yellow(color, &format!("warning: {}", visible(error)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxMode;
    use mm_core::sandbox_report::{Fencer, Gap};
    use pretty_assertions::assert_eq;

    fn said(report: &SandboxReport, cwd: Option<&UnwritableCwd>) -> (Option<String>, Vec<String>) {
        let mut banner = Banner::default();
        banner.say_sandbox(report, cwd);
        (banner.sandbox, banner.warnings)
    }

    #[test]
    fn the_sandbox_is_a_fact_and_what_it_lacks_or_leaves_out_are_warnings() {
        let mut report = SandboxReport {
            mode: SandboxMode::WorkspaceWrite,
            fencer: Fencer::Landlock(3),
            gaps: vec![
                Gap::DeviceIoctl,
                Gap::AbstractSockets,
                Gap::Namespace("Operation not permitted (os error 1)".into()),
            ],
            nested: None,
            skipped: Vec::new(),
            outside: Vec::new(),
            caches: Vec::new(),
            hidden: Vec::new(),
            network: None,
        };
        let note = "Landlock ABI 3 enforced, but device ioctls are not fenced; abstract unix sockets are not fenced; the project's .mm/ stays writable and the hidden places are readable by commands (no private mount namespace: Operation not permitted (os error 1))";
        assert_eq!(
            said(&report, None),
            (
                Some("workspace-write".to_string()),
                vec![format!("sandbox workspace-write: {note}")]
            )
        );
        report.gaps.clear();
        report.fencer = Fencer::Landlock(7);
        report.outside = vec!["mcp.servers.x".into()];
        let cwd = UnwritableCwd("/home/u".into());
        assert_eq!(
            said(&report, Some(&cwd)).1,
            [
                "sandbox workspace-write: mcp.servers.x runs outside the fence (sandbox = false)",
                "sandbox workspace-write: the working directory /home/u is the home folder or above it, so commands may not write in it: only in the temp folders and tools.sandboxWritable (start mm in a project's folder)"
            ]
        );
        report.outside.clear();
        report.network = Some((mm_core::config::NetworkMode::Allowlist, 24));
        assert_eq!(
            said(&report, None).0.as_deref(),
            Some("workspace-write · network allow-list (24 hosts)")
        );
        report.mode = SandboxMode::Off;
        report.network = None;
        assert_eq!(said(&report, None), (None, Vec::new()));
    }
}
