//! `mm doctor`: what works and what to fix, one line each — the configuration, the model server
//! and its model, streaming, a real tool-call round trip, the prompt cache, the context window,
//! the project's trust, the sandbox and sessions (docs/doctor.md). Exit 0 when everything mm
//! needs works.
//!
//! The checks of the model server are in model.rs; the others, which read only the
//! configuration and the disk, are here.

mod model;

pub use model::{TOO_SMALL_WINDOW, tool_fix};

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::config::{ConfigError, Loaded};
use crate::model::openai::ClientOptions;
use crate::sandbox::Sandbox;

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Works.
    Ok,
    /// Works, but something is worth fixing.
    Warn,
    /// mm needs this and it does not work: `mm doctor` exits 1.
    Fail,
    /// Not checked (what it needs failed), or the server does not tell.
    Skip,
}

impl Status {
    fn mark(self) -> &'static str {
        match self {
            Status::Ok => "✓",
            Status::Warn => "!",
            Status::Fail => "✗",
            Status::Skip => "–",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }

    /// The ANSI colour of the mark.
    fn color(self) -> &'static str {
        match self {
            Status::Ok => "32",
            Status::Warn => "33",
            Status::Fail => "31",
            Status::Skip => "2",
        }
    }
}

/// What is checked, in the order of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// Windows only, and only when it fails: no bash to run commands with.
    Bash,
    Config,
    Server,
    Model,
    Streaming,
    ContextWindow,
    ToolCalls,
    PromptCache,
    Project,
    Sandbox,
    Network,
    Sessions,
}

impl Topic {
    /// As the text report names it.
    pub fn label(self) -> &'static str {
        match self {
            Topic::Bash => "bash",
            Topic::Config => "config",
            Topic::Server => "server",
            Topic::Model => "model",
            Topic::Streaming => "streaming",
            Topic::ContextWindow => "context window",
            Topic::ToolCalls => "tool calls",
            Topic::PromptCache => "prompt cache",
            Topic::Project => "project",
            Topic::Sandbox => "sandbox",
            Topic::Network => "network",
            Topic::Sessions => "sessions",
        }
    }

    /// As `--json` names it.
    pub fn key(self) -> &'static str {
        match self {
            Topic::Bash => "bash",
            Topic::Config => "config",
            Topic::Server => "server",
            Topic::Model => "model",
            Topic::Streaming => "streaming",
            Topic::ContextWindow => "contextWindow",
            Topic::ToolCalls => "toolCalls",
            Topic::PromptCache => "promptCache",
            Topic::Project => "project",
            Topic::Sandbox => "sandbox",
            Topic::Network => "network",
            Topic::Sessions => "sessions",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub topic: Topic,
    pub status: Status,
    /// What was found.
    pub summary: String,
    /// How to fix it.
    pub fix: Option<String>,
    /// More lines under it (the configuration's warnings).
    pub notes: Vec<String>,
    /// For `--json`: the numbers and names behind the summary.
    pub details: Value,
}

impl Check {
    pub fn new(topic: Topic, status: Status, summary: impl Into<String>) -> Self {
        Check {
            topic,
            status,
            summary: summary.into(),
            fix: None,
            notes: Vec::new(),
            details: Value::Null,
        }
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    fn fix_opt(mut self, fix: Option<String>) -> Self {
        self.fix = fix;
        self
    }

    fn details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// The check's lines: `✓ server: …`, then its notes and its fix, indented.
    pub fn lines(&self, color: bool) -> Vec<String> {
        // Summaries and notes quote servers and files: shown visibly.
        use crate::sanitize::visible;
        let mark = paint(color, self.status.color(), self.status.mark());
        let summary = visible(&self.summary);
        let mut lines = vec![format!("{mark} {}: {summary}", self.topic.label())];
        lines.extend(self.notes.iter().map(|n| format!("  {}", visible(n))));
        if let Some(fix) = &self.fix {
            lines.push(format!("  fix: {}", visible(fix)));
        }
        lines
    }

    fn json(&self) -> Value {
        let mut check = json!({
            "check": self.topic.key(),
            "status": self.status.key(),
            "summary": self.summary,
        });
        if let Some(fix) = &self.fix {
            check["fix"] = json!(fix);
        }
        if !self.notes.is_empty() {
            check["notes"] = json!(self.notes);
        }
        if !self.details.is_null() {
            check["details"] = self.details.clone();
        }
        check
    }
}

fn paint(color: bool, code: &str, text: &str) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Every check, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// Everything mm needs works: no check failed.
    pub fn ok(&self) -> bool {
        !self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// The exit code of `mm doctor`.
    pub fn code(&self) -> i32 {
        if self.ok() { 0 } else { 1 }
    }

    /// The last line of the text report.
    pub fn verdict(&self) -> String {
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.topic.label())
            .collect();
        if failed.is_empty() {
            "everything mm needs works".to_string()
        } else {
            format!("mm needs a fix: {}", failed.join(", "))
        }
    }

    /// What `mm doctor --json` prints.
    pub fn json(&self) -> Value {
        json!({
            "version": crate::VERSION,
            "ok": self.ok(),
            "checks": self.checks.iter().map(Check::json).collect::<Vec<_>>(),
        })
    }
}

/// What the checks need from `main.rs`.
pub struct Setup<'a> {
    /// The configuration as loaded, or why it did not load.
    pub loaded: Result<&'a Loaded, &'a ConfigError>,
    /// `--config FILE`, as given.
    pub config_file: Option<&'a Path>,
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    /// Built by `main.rs` from the configuration (it knows the places the fence needs).
    pub sandbox: Option<&'a Sandbox>,
    /// How the server is found (the defaults, but for tests of the library).
    pub client: ClientOptions,
}

/// Runs every check; `each` sees each one as soon as it is done (the text report prints it
/// then: the model's checks take seconds).
pub async fn run(setup: &Setup<'_>, each: &mut (dyn FnMut(&Check) + Send)) -> Report {
    let mut report = Report::default();
    let mut push = |check: Check| {
        each(&check);
        report.checks.push(check);
    };
    let loaded = match setup.loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            push(
                Check::new(Topic::Config, Status::Fail, e.to_string())
                    .fix("correct the file or the value it names; nothing else was checked"),
            );
            return report;
        }
    };
    // Without a bash (Windows without Git for Windows) no command runs: said first.
    if let Err(line) = crate::program::bash(loaded.config.tools.bash_path.as_deref()) {
        push(Check::new(Topic::Bash, Status::Fail, line).fix(
            "install Git for Windows, or set tools.bash.path in the user's config to a bash.exe",
        ));
    }
    push(config_check(setup, loaded));
    model::checks(loaded, setup.client.clone(), &mut push).await;
    push(project_check(setup, loaded));
    push(sandbox_check(setup, loaded));
    if let Some(check) = network_check(setup) {
        push(check);
    }
    push(sessions_check(setup, loaded));
    report
}

/// The checks of the model server alone (server, model, streaming, window, tool calls, prompt
/// cache), each given to `push` when done: what `mm setup` runs on the server and model chosen.
pub async fn model_checks(
    loaded: &Loaded,
    client: ClientOptions,
    push: &mut (dyn FnMut(Check) + Send),
) {
    model::checks(loaded, client, push).await;
}

/// Writes the text report as the checks complete, then the verdict; returns the exit code.
pub async fn print_text(setup: &Setup<'_>, out: &mut (dyn Write + Send), color: bool) -> i32 {
    let _ = writeln!(out, "mm doctor {}", crate::VERSION);
    let _ = out.flush();
    let report = {
        let mut each = |check: &Check| {
            for line in check.lines(color) {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
        };
        run(setup, &mut each).await
    };
    let _ = writeln!(out, "{}", report.verdict());
    let _ = out.flush();
    report.code()
}

/// Writes the JSON report once every check is done; returns the exit code.
pub async fn print_json(setup: &Setup<'_>, out: &mut (dyn Write + Send)) -> i32 {
    let report = run(setup, &mut |_| {}).await;
    let text = serde_json::to_string_pretty(&report.json()).unwrap_or_default();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    report.code()
}

/// A path as the report shows it: `~/…` under the home folder.
fn shown(path: &Path, home: Option<&Path>) -> String {
    crate::config::shown_file(Some(path), home)
}

/// The user's config file as the fixes name it (`~/.config/mm/config.toml`, or
/// `~\AppData\Roaming\mm\config.toml` on Windows).
fn user_file(setup: &Setup<'_>, loaded: &Loaded) -> String {
    crate::config::shown_file(loaded.user_file.as_deref(), setup.home)
}

fn config_check(setup: &Setup<'_>, loaded: &Loaded) -> Check {
    let project_file = setup.cwd.join(".mm").join("config.toml");
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(user) = loaded.user_file.as_deref().filter(|f| f.is_file()) {
        files.push(user.to_path_buf());
    }
    if project_file.is_file() {
        files.push(project_file);
    }
    if let Some(file) = setup.config_file {
        files.push(setup.cwd.join(file));
    }
    let read: Vec<String> = files.iter().map(|f| shown(f, setup.home)).collect();
    let summary = if read.is_empty() {
        let user = loaded.user_file.as_deref().map_or_else(
            || "no user file".to_string(),
            |f| format!("no {}", shown(f, setup.home)),
        );
        format!("built-in defaults ({user}, no .mm/config.toml)")
    } else {
        read.join(", ")
    };
    // The untrusted project has a line of its own.
    let user_file = loaded.user_file.as_deref();
    let skipped = [
        loaded
            .untrusted_project
            .as_ref()
            .map(|u| u.warning(user_file, setup.home)),
        loaded
            .ignored_keys
            .as_ref()
            .map(|k| k.warning(user_file, setup.home)),
    ];
    let warnings: Vec<String> = loaded
        .config
        .warnings
        .iter()
        .filter(|w| !skipped.iter().flatten().any(|s| s == *w))
        .cloned()
        .collect();
    let details = json!({"files": files, "warnings": warnings});
    if warnings.is_empty() {
        return Check::new(Topic::Config, Status::Ok, summary).details(details);
    }
    let mut check = Check::new(
        Topic::Config,
        Status::Warn,
        format!("{summary}; {} warning(s)", warnings.len()),
    )
    .details(details);
    check.notes = warnings;
    check
}

fn project_check(setup: &Setup<'_>, loaded: &Loaded) -> Check {
    let cwd = crate::paths::canonical(setup.cwd).unwrap_or_else(|_| setup.cwd.to_path_buf());
    let shown_cwd = cwd.display().to_string();
    let quoted = crate::paths::shell_quote(&shown_cwd);
    let config = &loaded.config;
    let commands = loaded.untrusted_project.as_ref().map(|u| &u.commands);
    let keys = loaded.ignored_keys.as_ref().map(|k| &k.keys);
    if commands.is_some() || keys.is_some() {
        let distrusted = loaded
            .untrusted_project
            .as_ref()
            .is_some_and(|u| u.distrusted)
            || loaded.ignored_keys.as_ref().is_some_and(|k| k.distrusted);
        let why = if distrusted {
            " (you answered never)"
        } else {
            ""
        };
        let summary = match (commands, keys) {
            (Some(commands), _) => format!(
                "{shown_cwd} is not trusted{why}: its {} command(s) in .mm/config.toml do not run",
                commands.len()
            ),
            (None, keys) => format!(
                "{shown_cwd} is not trusted{why}: its keys {} in .mm/config.toml are ignored",
                keys.map(|k| k.join(", ")).unwrap_or_default()
            ),
        };
        let mut check = Check::new(Topic::Project, Status::Warn, summary)
            .fix(format!("mm trust {quoted} (or answer the question mm asks at start)"))
            .details(json!({"path": cwd, "trusted": false, "distrusted": distrusted, "ignored": commands.cloned().unwrap_or_default(), "ignoredKeys": keys.cloned().unwrap_or_default()}));
        check.notes = commands.cloned().unwrap_or_default();
        // The banner's line, as it says it.
        check.notes.extend(
            loaded
                .ignored_keys
                .as_ref()
                .map(|k| k.warning(loaded.user_file.as_deref(), setup.home)),
        );
        return check;
    }
    let trusted = config
        .trusted_projects
        .iter()
        .any(|p| crate::paths::canonical(p).unwrap_or_else(|_| p.clone()) == cwd);
    let summary = if trusted {
        format!(
            "{shown_cwd} is trusted: its own hooks, MCP servers, language servers and agents run"
        )
    } else if cwd.join(".mm").join("config.toml").is_file() {
        format!("{shown_cwd} defines no commands of its own")
    } else {
        format!("{shown_cwd} has no .mm/config.toml")
    };
    Check::new(Topic::Project, Status::Ok, summary)
        .details(json!({"path": cwd, "trusted": trusted}))
}

fn sandbox_check(setup: &Setup<'_>, loaded: &Loaded) -> Check {
    let config = &loaded.config;
    let Some(sandbox) = setup.sandbox else {
        return Check::new(Topic::Sandbox, Status::Skip, "not checked");
    };
    let details = json!({"mode": sandbox.mode().name(), "required": config.tools.sandbox_required, "yolo": config.yolo});
    if !sandbox.is_on() {
        // The README recommends the fence with yolo: worth a mark, not a failure.
        return if config.yolo {
            Check::new(
                Topic::Sandbox,
                Status::Warn,
                "off; with yolo on, the model's commands run unasked and unfenced",
            )
            .fix(format!(
                "tools.sandbox = \"workspace-write\", the default, fences them: remove tools.sandbox = \"off\" from {} (or run with --sandbox workspace-write)",
                user_file(setup, loaded)
            ))
            .details(details)
        } else {
            Check::new(
                Topic::Sandbox,
                Status::Ok,
                "off; yolo is off, so mm asks before commands and edits run",
            )
            .details(details)
        };
    }
    // What the fence lacks, then what this run leaves out (skipped sandboxWritable entries, a
    // cwd at or above the home folder).
    let report = sandbox.report();
    let home = mm_core::paths::home();
    let shown = |paths: &[std::path::PathBuf]| -> String {
        let each: Vec<String> = paths
            .iter()
            .map(
                |p| match home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
                    Some(rest) => format!("~/{}", rest.display()),
                    None => p.display().to_string(),
                },
            )
            .collect();
        match each.is_empty() {
            true => "none here".to_string(),
            false => each.join(", "),
        }
    };
    // What is fenced and hidden, said on every run that fences (docs/doctor.md).
    let fenced = format!(
        "hidden from commands and mm's tools: {}{}",
        shown(&report.hidden),
        match report.mode {
            crate::config::SandboxMode::WorkspaceWrite =>
                format!("; package caches writable: {}", shown(&report.caches)),
            crate::config::SandboxMode::ReadOnly | crate::config::SandboxMode::Off => String::new(),
        }
    );
    let details = json!({
        "mode": sandbox.mode().name(),
        "required": config.tools.sandbox_required,
        "yolo": config.yolo,
        "hidden": report.hidden,
        "caches": report.caches,
    });
    let notes: Vec<String> = report
        .note()
        .into_iter()
        .chain(report.lines())
        .chain(sandbox.unwritable_cwd(setup.cwd).map(|c| c.to_string()))
        .collect();
    match (
        sandbox.require(config.tools.sandbox_required),
        notes.is_empty(),
    ) {
        (Err(e), _) => Check::new(Topic::Sandbox, Status::Fail, e.to_string())
            .fix(format!(
                "mm does not start like this: {}, or set tools.sandboxRequired = false",
                crate::sandbox::REMEDY
            ))
            .details(details),
        (Ok(()), false) => Check::new(
            Topic::Sandbox,
            Status::Warn,
            format!("{}: {}; {fenced}", report.label(), notes.join("; ")),
        )
        .details(details),
        (Ok(()), true) => Check::new(
            Topic::Sandbox,
            Status::Ok,
            format!("{} ({}); {fenced}", report.label(), report.fencer.name()),
        )
        .details(details),
    }
}

/// The fence's network (docs/sandbox.md, "The network"), when the sandbox is on: the mode, the
/// hosts allowed, and whether its namespace and mm's proxy can be made here (tried).
fn network_check(setup: &Setup<'_>) -> Option<Check> {
    let sandbox = setup.sandbox.filter(|s| s.is_on())?;
    let report = sandbox.report();
    let door = sandbox.door();
    let details = |works: bool| json!({"mode": door.mode.name(), "hosts": door.allow.len(), "isolated": works});
    let ok = |summary: String, works: bool| {
        Some(Check::new(Topic::Network, Status::Ok, summary).details(details(works)))
    };
    let Some(label) = report.network_label() else {
        return ok("open: commands are not fenced here".into(), false);
    };
    let label = label.trim_start_matches("network ").to_string();
    if !door.isolated() {
        let exposed = match sandbox.expose().is_empty() {
            true => "",
            false => "; tools.networkExpose does nothing here (commands share the host's network)",
        };
        return ok(
            format!("{label} (tools.network = \"open\"): fenced commands reach any host{exposed}"),
            false,
        );
    }
    if let Some(outer) = &report.nested {
        return ok(
            format!(
                "{label}: the outer fence's network holds (mm runs inside mm's fence: MM_FENCED={outer})"
            ),
            false,
        );
    }
    let way = match door.proxied() {
        true => "mm's proxy is the fence's only way out",
        false => "no connection leaves the fence",
    };
    let exposed = exposed(sandbox.expose());
    match crate::sandbox::network_works() {
        Ok(()) if exposed.taken.is_empty() => ok(format!("{label}: {way}{}", exposed.said), true),
        Ok(()) => Some(
            Check::new(
                Topic::Network,
                Status::Warn,
                format!("{label}: {way}{}; but {}", exposed.said, exposed.taken.join("; ")),
            )
            .fix("stop what holds the port, or take it out of tools.networkExpose")
            .details(details(true)),
        ),
        Err(why) => Some(
            Check::new(
                Topic::Network,
                Status::Warn,
                format!("{label}, but the fence's network namespace cannot be made here ({why}): commands reach any host"),
            )
            .fix("a kernel that lets mm make network namespaces (unprivileged user namespaces), or tools.network = \"open\" to say so")
            .details(details(false)),
        ),
    }
}

/// What the network line says of `tools.networkExpose`, and its ports another program holds on
/// the host now (tried: bound, then let go).
struct Exposed {
    said: String,
    taken: Vec<String>,
}

fn exposed(ports: &[u16]) -> Exposed {
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    let said = match list.is_empty() {
        true => String::new(),
        false => format!(
            "; the host's 127.0.0.1 reaches its port(s) {} (tools.networkExpose)",
            list.join(", ")
        ),
    };
    let taken = ports
        .iter()
        .filter_map(|p| {
            std::net::TcpListener::bind(("127.0.0.1", *p))
                .err()
                .map(|e| format!("127.0.0.1:{p} is taken on the host ({e}): the fence's server on port {p} will not be reachable from it"))
        })
        .collect();
    Exposed { said, taken }
}

fn sessions_check(setup: &Setup<'_>, loaded: &Loaded) -> Check {
    let config = &loaded.config;
    if !config.sessions.enabled {
        return Check::new(
            Topic::Sessions,
            Status::Ok,
            "off: conversations are not kept (sessions.enabled = true, the default, keeps them for --continue, /load and editors)",
        )
        .details(json!({"enabled": false}));
    }
    let dir = match crate::session::resolve_dir(setup.cwd, &config.sessions) {
        Ok(dir) => dir,
        Err(outside) => {
            return Check::new(Topic::Sessions, Status::Warn, outside.to_string())
                .fix(format!(
                    "remove the link, or set sessions.dir in {}",
                    user_file(setup, loaded)
                ))
                .details(json!({"enabled": true, "dir": outside.target, "refused": true}));
        }
    };
    let shown_dir = shown(&dir, setup.home);
    let saved = crate::session::list(&dir).len();
    let keep = config.sessions.keep;
    let details = json!({"enabled": true, "dir": dir, "saved": saved, "keep": keep});
    // The nearest folder that exists is where the first session file will be created.
    let mut existing = dir.as_path();
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => break,
        }
    }
    let writable = crate::writer::can_write(existing);
    if !writable {
        return Check::new(
            Topic::Sessions,
            Status::Fail,
            format!("on, but {} cannot be written", existing.display()),
        )
        .fix("make it writable, or set sessions.dir to a folder you can write")
        .details(details);
    }
    Check::new(
        Topic::Sessions,
        Status::Ok,
        match keep {
            0 => format!("on: {saved} saved in {shown_dir}, all kept (sessions.keep = 0)"),
            n => format!("on: {saved} saved in {shown_dir}, the last {n} kept (sessions.keep)"),
        },
    )
    .details(details)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_check_is_its_line_then_its_notes_and_fix() {
        let mut check = Check::new(
            Topic::ToolCalls,
            Status::Fail,
            "the model answered with text",
        )
        .fix("restart llama-server with `--jinja`");
        check.notes = vec!["a note".into()];
        assert_eq!(
            check.lines(false),
            vec![
                "✗ tool calls: the model answered with text",
                "  a note",
                "  fix: restart llama-server with `--jinja`",
            ]
        );
        assert_eq!(
            Check::new(Topic::Server, Status::Ok, "here").lines(true),
            vec!["\x1b[32m✓\x1b[0m server: here"]
        );
    }

    #[test]
    fn only_a_failure_fails_and_the_verdict_names_it() {
        let mut report = Report {
            checks: vec![
                Check::new(Topic::Server, Status::Ok, "a"),
                Check::new(Topic::PromptCache, Status::Skip, "b"),
                Check::new(Topic::ContextWindow, Status::Warn, "c"),
            ],
        };
        assert_eq!((report.ok(), report.code()), (true, 0));
        assert_eq!(report.verdict(), "everything mm needs works");
        report
            .checks
            .push(Check::new(Topic::ToolCalls, Status::Fail, "d"));
        assert_eq!((report.ok(), report.code()), (false, 1));
        assert_eq!(report.verdict(), "mm needs a fix: tool calls");
        assert_eq!(
            report.json()["checks"][3],
            json!({"check": "toolCalls", "status": "fail", "summary": "d"})
        );
    }
}
