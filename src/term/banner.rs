//! The banner shown on stderr at start (docs/terminal.md, "The banner"). Pure: a [`Banner`] in,
//! lines out. The model line comes later, when detection completes ([`model_lines`]), so the prompt
//! is never delayed.

use super::render::window;
use super::style;
use crate::config::Config;
use crate::skills::Catalogue;

/// Below this window the banner warns that it is small for an agent (docs/terminal.md, "The
/// banner").
pub const SMALL_WINDOW: u64 = 16 * 1024;

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
    pub yolo: bool,
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
            yolo: config.yolo,
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

/// The banner's lines, for stderr.
pub fn banner_lines(banner: &Banner, color: bool) -> Vec<String> {
    let mut lines = vec![format!("{} {}", style::bold(color, "mm"), banner.version)];
    let server = if banner.url.is_empty() {
        "detecting the model server…".to_string()
    } else if banner.model.is_empty() {
        format!("model server {}", banner.url)
    } else {
        format!("model {} at {}", banner.model, banner.url)
    };
    lines.push(style::dim(color, &server));
    let mut facts = vec![
        format!("sessions {}", on_off(banner.sessions)),
        format!("yolo {}", on_off(banner.yolo)),
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
    lines.push(style::dim(color, &facts.join(" · ")));
    for warning in &banner.warnings {
        lines.push(style::yellow(color, &format!("warning: {warning}")));
    }
    lines
}

/// The model line once detection completed, and a warning when the window is small for an
/// agent, saying how to raise it on that server.
pub fn model_lines(name: &str, url: &str, context_window: Option<u64>, color: bool) -> Vec<String> {
    let ctx = match context_window {
        Some(n) if n > 0 => window(n),
        _ => "unknown".to_string(),
    };
    let mut lines = vec![style::dim(
        color,
        &format!("model {name} at {url} · context window {ctx}"),
    )];
    if let Some(n) = context_window
        && n > 0
        && n < SMALL_WINDOW
    {
        lines.push(style::yellow(
            color,
            &format!(
                "warning: a context window of {} is small for an agent; {}",
                window(n),
                raise_hint(url)
            ),
        ));
    }
    lines
}

/// How to raise the window on the server behind `url` (recognised by its well-known port).
fn raise_hint(url: &str) -> &'static str {
    if url.contains(":11434") {
        "raise it with OLLAMA_CONTEXT_LENGTH=32768 ollama serve (or num_ctx in a Modelfile)"
    } else if url.contains(":1234") {
        "raise it by loading the model with a larger context length in LM Studio"
    } else if url.contains(":8080") {
        "raise it by starting llama-server with -c 32768"
    } else {
        "raise the server's context size (and set contextWindow if it is not probed)"
    }
}

/// The line when detection failed (the server is unreachable or nothing was found).
pub fn detection_failed(error: &str, color: bool) -> String {
    style::yellow(color, &format!("warning: {error}"))
}
