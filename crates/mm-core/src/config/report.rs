//! `mm config`: the effective configuration, one leaf key a line, with its source.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::raw::{HOOK_EVENTS, join, quote};
use super::{ANSWER_CAP_MIN, Config, EntrySandbox, HookConfig, Loaded, McpPermissions, seconds};

/// Widest `key = value` part that the source column is aligned after.
const ALIGN_MAX: usize = 60;

/// An API key as `mm config` shows it: never more than its last 4 characters, and those only
/// when they are a small part of it.
fn mask(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    match chars.len() {
        0 => "\"\"".to_string(),
        n if n >= 12 => format!("****{}", chars[n - 4..].iter().collect::<String>()),
        _ => "(set)".to_string(),
    }
}

/// Environment variables of agents and MCP servers that hold credentials.
fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|w| upper.contains(w))
}

fn strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[{}]", quoted.join(", "))
}

fn paths(items: &[PathBuf]) -> String {
    let quoted: Vec<String> = items.iter().map(|p| quote(&p.to_string_lossy())).collect();
    format!("[{}]", quoted.join(", "))
}

fn hook(h: &HookConfig) -> String {
    let mut parts = vec![format!("command = {}", quote(&h.command))];
    if let Some(m) = &h.matcher {
        parts.push(format!("match = {}", quote(m)));
    }
    parts.push(format!("timeout = {}", seconds(h.timeout)));
    parts.push(format!("failClosed = {}", h.fail_closed));
    // Shown when set: most hooks have neither.
    if h.sandbox.outside {
        parts.push("sandbox = false".into());
    }
    if !h.sandbox.writable.is_empty() {
        parts.push(format!("sandboxWritable = {}", paths(&h.sandbox.writable)));
    }
    if !h.sandbox.network_allow.is_empty() {
        parts.push(format!(
            "networkAllow = {}",
            hosts(&h.sandbox.network_allow)
        ));
    }
    format!("{{ {} }}", parts.join(", "))
}

/// An entry's `sandbox` and `sandboxWritable` lines, and its `networkAllow` when it has one.
fn entry_sandbox(lines: &mut Vec<(String, String)>, prefix: &str, sandbox: &EntrySandbox) {
    lines.push((join(prefix, "sandbox"), (!sandbox.outside).to_string()));
    lines.push((join(prefix, "sandboxWritable"), paths(&sandbox.writable)));
    if !sandbox.network_allow.is_empty() {
        lines.push((join(prefix, "networkAllow"), hosts(&sandbox.network_allow)));
    }
}

/// A list of hosts as TOML writes it.
fn hosts(list: &[String]) -> String {
    format!(
        "[{}]",
        list.iter().map(|h| quote(h)).collect::<Vec<_>>().join(", ")
    )
}

fn env(lines: &mut Vec<(String, String)>, prefix: &str, env: &BTreeMap<String, String>) {
    let path = join(prefix, "env");
    if env.is_empty() {
        lines.push((path.clone(), "{}".into()));
    }
    for (name, value) in env {
        let shown = if looks_secret(name) {
            mask(value)
        } else {
            quote(value)
        };
        lines.push((join(&path, name), shown));
    }
}

/// What a switch whose name does not say it all does, after its source.
fn hint(key: &str) -> Option<&'static str> {
    match key {
        "acp.clientMcpServers" => Some(
            "true: start the stdio MCP servers an editor passes in session/new like mcp.servers; false: ignore them",
        ),
        _ => None,
    }
}

fn add(lines: &mut Vec<(String, String)>, key: &str, value: String) {
    lines.push((key.to_string(), value));
}

/// `model.maxTokens` as sent: the value set, or the default cap and what it comes from
/// (`ModelConfig::answer_cap`; the window is probed at run time when `contextWindow` is 0).
fn max_tokens(c: &Config) -> String {
    let window = c.context_window;
    match (c.model.max_tokens, c.model.answer_cap(window)) {
        (Some(0), _) => "0 (none sent)".to_string(),
        (Some(n), _) => n.to_string(),
        (None, None) => format!("auto (window/4, ≥ {ANSWER_CAP_MIN})"),
        (None, Some(cap)) if cap == window / 4 => format!("{cap} (contextWindow/4)"),
        (None, Some(cap)) if cap == ANSWER_CAP_MIN => format!("{cap} (the minimum)"),
        (None, Some(cap)) => format!("{cap} (contextWindow/2)"),
    }
}

pub(super) fn report(loaded: &Loaded) -> String {
    let c = &loaded.config;
    let mut lines: Vec<(String, String)> = Vec::new();
    let not_set = || "(not set)".to_string();

    add(&mut lines, "yolo", c.yolo.to_string());
    add(&mut lines, "contextWindow", c.context_window.to_string());
    add(&mut lines, "maxSteps", c.max_steps.to_string());
    add(&mut lines, "systemPrompt", quote(&c.system_prompt));
    add(&mut lines, "trustedProjects", paths(&c.trusted_projects));
    add(
        &mut lines,
        "distrustedProjects",
        paths(&c.distrusted_projects),
    );
    add(&mut lines, "model.url", quote(&c.model.url));
    add(&mut lines, "model.name", quote(&c.model.name));
    add(&mut lines, "model.apiKey", mask(&c.model.api_key));
    add(
        &mut lines,
        "model.temperature",
        c.model
            .temperature
            .map_or_else(not_set, |t| format!("{t:?}")),
    );
    add(&mut lines, "model.maxTokens", max_tokens(c));
    add(
        &mut lines,
        "model.requestTimeout",
        seconds(c.model.request_timeout),
    );
    let text_tool_calls = if c.model.text_tool_calls {
        "auto"
    } else {
        "off"
    };
    add(&mut lines, "model.textToolCalls", quote(text_tool_calls));
    add(&mut lines, "acp.name", quote(&c.acp.name));
    add(&mut lines, "acp.title", quote(&c.acp.title));
    add(
        &mut lines,
        "acp.clientMcpServers",
        c.acp.client_mcp_servers.to_string(),
    );
    add(
        &mut lines,
        "acp.maxLineBytes",
        c.acp.max_line_bytes.to_string(),
    );
    add(
        &mut lines,
        "sessions.enabled",
        c.sessions.enabled.to_string(),
    );
    add(
        &mut lines,
        "sessions.dir",
        quote(&c.sessions.dir.to_string_lossy()),
    );
    add(&mut lines, "sessions.keep", c.sessions.keep.to_string());
    add(
        &mut lines,
        "context.threshold",
        format!("{:?}", c.context.threshold),
    );
    add(
        &mut lines,
        "context.keepLastTurns",
        c.context.keep_last_turns.to_string(),
    );
    add(
        &mut lines,
        "loop.maxRepeats",
        c.loop_.max_repeats.to_string(),
    );
    add(
        &mut lines,
        "loop.detectRepetition",
        c.loop_.detect_repetition.to_string(),
    );
    add(
        &mut lines,
        "loop.repeatSpan",
        c.loop_.repeat_span.to_string(),
    );
    add(
        &mut lines,
        "loop.repeatCount",
        c.loop_.repeat_count.to_string(),
    );
    add(
        &mut lines,
        "tools.maxOutput",
        c.tools.max_output.to_string(),
    );
    add(
        &mut lines,
        "tools.bash.timeout",
        seconds(c.tools.bash_timeout),
    );
    if let Some(path) = &c.tools.bash_path {
        add(
            &mut lines,
            "tools.bash.path",
            quote(&path.to_string_lossy()),
        );
    }
    add(&mut lines, "tools.sandbox", quote(c.tools.sandbox.name()));
    add(
        &mut lines,
        "tools.sandboxWritable",
        paths(&c.tools.sandbox_writable),
    );
    add(
        &mut lines,
        "tools.sandboxRequired",
        c.tools.sandbox_required.to_string(),
    );
    add(
        &mut lines,
        "tools.sandboxHidden",
        paths(&c.tools.sandbox_hidden),
    );
    add(
        &mut lines,
        "tools.sandboxReadable",
        paths(&c.tools.sandbox_readable),
    );
    add(
        &mut lines,
        "tools.task.maxSteps",
        c.tools.task_max_steps.to_string(),
    );
    add(
        &mut lines,
        "tools.network",
        quote(c.tools.network.mode.name()),
    );
    add(
        &mut lines,
        "tools.networkAllow",
        hosts(&c.tools.network.allow),
    );
    add(
        &mut lines,
        "tools.networkExpose",
        format!(
            "[{}]",
            c.tools
                .network
                .expose
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    add(&mut lines, "skills.dirs", paths(&c.skills.dirs));

    let h = &c.hooks;
    let events = [
        &h.session_start,
        &h.user_prompt_submit,
        &h.pre_tool_call,
        &h.post_tool_call,
        &h.turn_end,
        &h.pre_compact,
    ];
    if events.iter().all(|e| e.is_empty()) {
        add(&mut lines, "hooks", "{}".into());
    }
    for (event, list) in HOOK_EVENTS.iter().zip(events) {
        for (i, entry) in list.iter().enumerate() {
            add(
                &mut lines,
                &format!("{}[{i}]", join("hooks", event)),
                hook(entry),
            );
        }
    }

    if c.agents.is_empty() {
        add(&mut lines, "agents", "{}".into());
    }
    for (name, agent) in &c.agents {
        let p = join("agents", name);
        add(&mut lines, &join(&p, "command"), quote(&agent.command));
        add(&mut lines, &join(&p, "args"), strings(&agent.args));
        env(&mut lines, &p, &agent.env);
        entry_sandbox(&mut lines, &p, &agent.sandbox);
    }
    if c.mcp_servers.is_empty() {
        add(&mut lines, "mcp.servers", "{}".into());
    }
    for (name, server) in &c.mcp_servers {
        let p = join("mcp.servers", name);
        add(&mut lines, &join(&p, "command"), quote(&server.command));
        add(&mut lines, &join(&p, "args"), strings(&server.args));
        env(&mut lines, &p, &server.env);
        let permissions = match server.permissions {
            McpPermissions::Allow => "allow",
            McpPermissions::Ask => "ask",
        };
        add(&mut lines, &join(&p, "permissions"), quote(permissions));
        add(&mut lines, &join(&p, "timeout"), seconds(server.timeout));
        entry_sandbox(&mut lines, &p, &server.sandbox);
    }
    if c.lsp_servers.is_empty() {
        lines.push(("lsp.servers".into(), "{}".into()));
    }
    for (name, server) in &c.lsp_servers {
        let p = join("lsp.servers", name);
        lines.push((join(&p, "command"), quote(&server.command)));
        lines.push((join(&p, "args"), strings(&server.args)));
        lines.push((join(&p, "extensions"), strings(&server.extensions)));
        entry_sandbox(&mut lines, &p, &server.sandbox);
    }

    let pairs: Vec<(String, String)> = lines
        .into_iter()
        .map(|(key, value)| {
            let mut source = loaded.source_of(&key).to_string();
            if let Some(hint) = hint(&key) {
                source.push_str(" — ");
                source.push_str(hint);
            }
            (format!("{key} = {value}"), source)
        })
        .collect();
    let width = pairs
        .iter()
        .map(|(kv, _)| kv.chars().count())
        .filter(|n| *n <= ALIGN_MAX)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (kv, source) in pairs {
        out.push_str(&format!("{kv:<width$}  # {source}\n"));
    }
    for warning in &c.warnings {
        out.push_str(&format!("# warning: {warning}\n"));
    }
    out
}
