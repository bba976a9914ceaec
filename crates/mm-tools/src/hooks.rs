//! Hooks (docs/hooks.md): commands the user configures to run at points of a session, to guard
//! (deny), add context, or observe. This module runs them; the dispatcher and the engine decide
//! what a deny or a context means at each point.

use std::fmt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use crate::config::{HookConfig, HooksConfig, seconds};
use crate::process::{Group, Supervisor};
use crate::sandbox::Sandbox;

/// Bytes of a hook's stdout or stderr kept; the rest is read and dropped.
const MAX_CAPTURE: usize = 256 * 1024;
/// How long the output of a hook that exited is still awaited: a background process it started
/// may hold its pipes open, and must not make it look hung.
const OUTPUT_GRACE: Duration = Duration::from_millis(500);

/// The points of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolCall,
    PostToolCall,
    TurnEnd,
    PreCompact,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolCall,
        HookEvent::PostToolCall,
        HookEvent::TurnEnd,
        HookEvent::PreCompact,
    ];

    /// The name used in the configuration, on the hook's stdin and in `MM_HOOK_EVENT`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "sessionStart",
            HookEvent::UserPromptSubmit => "userPromptSubmit",
            HookEvent::PreToolCall => "preToolCall",
            HookEvent::PostToolCall => "postToolCall",
            HookEvent::TurnEnd => "turnEnd",
            HookEvent::PreCompact => "preCompact",
        }
    }

    /// Whether a hook of this event can stop what it precedes.
    pub fn can_deny(self) -> bool {
        match self {
            HookEvent::UserPromptSubmit | HookEvent::PreToolCall | HookEvent::PreCompact => true,
            HookEvent::SessionStart | HookEvent::PostToolCall | HookEvent::TurnEnd => false,
        }
    }

    /// Whether the context a hook of this event prints is used.
    pub fn can_add_context(self) -> bool {
        match self {
            HookEvent::SessionStart | HookEvent::UserPromptSubmit | HookEvent::PostToolCall => true,
            HookEvent::PreToolCall | HookEvent::TurnEnd | HookEvent::PreCompact => false,
        }
    }

    /// Whether the hooks of this event see a tool (and their `match` applies).
    pub fn about_a_tool(self) -> bool {
        matches!(self, HookEvent::PreToolCall | HookEvent::PostToolCall)
    }

    fn index(self) -> usize {
        match self {
            HookEvent::SessionStart => 0,
            HookEvent::UserPromptSubmit => 1,
            HookEvent::PreToolCall => 2,
            HookEvent::PostToolCall => 3,
            HookEvent::TurnEnd => 4,
            HookEvent::PreCompact => 5,
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the hooks of one event decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HookDecision {
    #[default]
    Allow,
    /// The reason, for the model or the user.
    Deny(String),
}

/// The outcome of the hooks of one event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HookResult {
    pub decision: HookDecision,
    /// Context to add, one entry per hook that gave some (empty for events that take none).
    pub context: Vec<String>,
    /// One line per failed hook, for stderr: `🪝 <event> hook "<command>" failed: <explanation>`.
    pub failures: Vec<String>,
}

impl HookResult {
    /// Failures are warnings for the front end to show; the session goes on.
    pub fn report(&self, frontend: &dyn crate::event::Frontend) {
        for f in &self.failures {
            frontend.emit(crate::event::Event::Warning(f.clone()));
        }
    }
}

#[derive(Debug, Clone)]
enum Matcher {
    Every,
    Pattern(Regex),
    /// The configured pattern does not compile: every run of the hook is a failure, so that a
    /// guard with a typo fails visibly (and closed, with `failClosed`) instead of vanishing.
    Invalid(String),
}

#[derive(Debug, Clone)]
struct Hook {
    config: HookConfig,
    matcher: Matcher,
}

/// The hooks that may run, per event, in the order configured.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    by_event: [Vec<Hook>; 6],
    warnings: Vec<String>,
    processes: Arc<Supervisor>,
    /// Hooks run inside its fence for the session's cwd (docs/sandbox.md).
    sandbox: Arc<Sandbox>,
    /// `tools.bash.path`: the shell of hooks on Windows ([`crate::program::hook_shell`]).
    bash: Option<std::path::PathBuf>,
}

impl Hooks {
    /// Hooks that run through `bash` (`tools.bash.path`) where they run through bash (Windows).
    pub fn with_bash(mut self, bash: Option<std::path::PathBuf>) -> Hooks {
        self.bash = bash;
        self
    }

    /// Hooks that run inside `sandbox`'s fence (the sandbox off when not set).
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> Hooks {
        self.sandbox = sandbox;
        self
    }

    /// Takes the hooks that may run (the config helper has already dropped untrusted ones);
    /// their processes go through `processes`.
    pub fn new(config: &HooksConfig, processes: Arc<Supervisor>) -> Hooks {
        let mut hooks = Hooks {
            processes,
            ..Hooks::default()
        };
        for event in HookEvent::ALL {
            let list = match event {
                HookEvent::SessionStart => &config.session_start,
                HookEvent::UserPromptSubmit => &config.user_prompt_submit,
                HookEvent::PreToolCall => &config.pre_tool_call,
                HookEvent::PostToolCall => &config.post_tool_call,
                HookEvent::TurnEnd => &config.turn_end,
                HookEvent::PreCompact => &config.pre_compact,
            };
            for config in list {
                let matcher = match &config.matcher {
                    None => Matcher::Every,
                    Some(p) => match crate::config::hook_pattern(p) {
                        Ok(re) => Matcher::Pattern(re),
                        Err(e) => {
                            // The regex crate's message draws the pattern over several
                            // lines; its last line says what is wrong.
                            let text = e.to_string();
                            let what = text
                                .lines()
                                .rev()
                                .map(str::trim)
                                .find(|l| !l.is_empty())
                                .unwrap_or_default();
                            let what = what.strip_prefix("error: ").unwrap_or(what);
                            let why = format!("invalid match pattern \"{p}\": {what}");
                            hooks
                                .warnings
                                .push(format!("{event} hook \"{}\": {why}", config.command));
                            Matcher::Invalid(why)
                        }
                    },
                };
                hooks.by_event[event.index()].push(Hook {
                    config: config.clone(),
                    matcher,
                });
            }
        }
        hooks
    }

    /// Problems found in the configuration (invalid `match` patterns), for the banner.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many hooks each event has, for the banner: the six events in order, zeros included.
    pub fn counts(&self) -> Vec<(HookEvent, usize)> {
        HookEvent::ALL
            .iter()
            .map(|e| (*e, self.by_event[e.index()].len()))
            .collect()
    }

    /// Whether `event` has any hook (for `tool_name`, when given).
    pub fn any(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        self.by_event[event.index()]
            .iter()
            .any(|h| applies(h, event, tool_name))
    }

    /// Runs the hooks of `event`, in order, until one denies. `input` holds the event's own
    /// fields (`tool`, `toolCallId`, `input`, `output`, `status`, `prompt`, `stopReason`,
    /// `trigger`); `tool_name` selects the hooks whose `match` accepts it.
    ///
    /// When `cancel` fires, the running hook's process group is killed and no further hook runs;
    /// an event that can deny then answers `Deny("cancelled")`, so that nothing proceeds on a
    /// guard's behalf that it never gave.
    pub async fn run(
        &self,
        event: HookEvent,
        input: Value,
        tool_name: Option<&str>,
        session_id: &str,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> HookResult {
        let mut result = HookResult::default();
        let hooks: Vec<&Hook> = self.by_event[event.index()]
            .iter()
            .filter(|h| applies(h, event, tool_name))
            .collect();
        if hooks.is_empty() {
            return result;
        }
        let stdin = stdin_json(event, input, session_id, cwd);
        for hook in hooks {
            let outcome = match &hook.matcher {
                Matcher::Invalid(why) => Outcome::Failure(why.clone()),
                Matcher::Every | Matcher::Pattern(_) => interpret(
                    event,
                    run_process(self, hook, event, &stdin, session_id, cwd, cancel).await,
                ),
            };
            match outcome {
                Outcome::Allow => {}
                Outcome::Context(text) => {
                    if event.can_add_context() {
                        result.context.push(text);
                    }
                }
                Outcome::Deny(reason) => {
                    result.decision = HookDecision::Deny(reason);
                    return result;
                }
                Outcome::Cancelled => {
                    if event.can_deny() {
                        result.decision = HookDecision::Deny("cancelled".into());
                    }
                    return result;
                }
                Outcome::Failure(explanation) => {
                    result.failures.push(format!(
                        "🪝 {event} hook \"{}\" failed: {explanation}",
                        hook.config.command
                    ));
                    if hook.config.fail_closed && event.can_deny() {
                        result.decision = HookDecision::Deny(explanation);
                        return result;
                    }
                }
            }
        }
        result
    }
}

fn applies(hook: &Hook, event: HookEvent, tool_name: Option<&str>) -> bool {
    if !event.about_a_tool() {
        return true;
    }
    match (&hook.matcher, tool_name) {
        (Matcher::Pattern(re), Some(tool)) => re.is_match(tool),
        (Matcher::Pattern(_), None) | (Matcher::Every, _) | (Matcher::Invalid(_), _) => true,
    }
}

/// The one JSON object a hook reads on stdin: the common fields, then the event's own.
fn stdin_json(event: HookEvent, input: Value, session_id: &str, cwd: &Path) -> Vec<u8> {
    let mut obj = Map::new();
    obj.insert("event".into(), Value::from(event.name()));
    obj.insert("sessionId".into(), Value::from(session_id));
    obj.insert("cwd".into(), Value::from(cwd.to_string_lossy().as_ref()));
    if let Value::Object(fields) = input {
        for (k, v) in fields {
            if !obj.contains_key(&k) {
                obj.insert(k, v);
            }
        }
    }
    let mut bytes = Value::Object(obj).to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// How a hook's process ended.
enum Ran {
    Exited {
        status: std::process::ExitStatus,
        stdout: String,
        stderr: String,
    },
    TimedOut(Duration),
    Cancelled,
    CannotStart(String),
}

/// What a hook said, before the event's rules apply.
enum Outcome {
    Allow,
    Context(String),
    Deny(String),
    Failure(String),
    Cancelled,
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

fn interpret(event: HookEvent, ran: Ran) -> Outcome {
    let (status, stdout, stderr) = match ran {
        Ran::Exited {
            status,
            stdout,
            stderr,
        } => (status, stdout, stderr),
        Ran::TimedOut(after) => {
            return Outcome::Failure(format!("timed out after {} s", seconds(after)));
        }
        Ran::Cancelled => return Outcome::Cancelled,
        Ran::CannotStart(e) => return Outcome::Failure(format!("cannot start: {e}")),
    };
    let said = match status.code() {
        Some(0) => read_stdout(&stdout),
        Some(2) => {
            let reason = stderr.trim();
            Outcome::Deny(if reason.is_empty() {
                "no reason given".into()
            } else {
                reason.to_string()
            })
        }
        // What `sh -c` answers when the command is missing or not executable.
        Some(126 | 127) => Outcome::Failure(format!("cannot start: {}", first_line(&stderr))),
        Some(code) => {
            let line = first_line(&stderr);
            Outcome::Failure(if line.is_empty() {
                format!("exit code {code}")
            } else {
                format!("exit code {code}: {line}")
            })
        }
        None => Outcome::Failure(format!(
            "killed by signal {}",
            crate::process::signal_of(&status).unwrap_or_default()
        )),
    };
    match said {
        Outcome::Deny(reason) if !event.can_deny() => {
            Outcome::Failure(format!("{event} hooks cannot deny (reason: {reason})"))
        }
        other => other,
    }
}

fn read_stdout(stdout: &str) -> Outcome {
    let text = stdout.trim();
    if text.is_empty() {
        return Outcome::Allow;
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else {
        return Outcome::Context(text.to_string());
    };
    let decision = obj.get("decision").and_then(Value::as_str).unwrap_or("");
    // `block` is what Claude Code's hooks print; accepting it lets users reuse them.
    if decision.eq_ignore_ascii_case("deny") || decision.eq_ignore_ascii_case("block") {
        let reason = obj
            .get("reason")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or("no reason given");
        return Outcome::Deny(reason.to_string());
    }
    match obj.get("context").and_then(Value::as_str).map(str::trim) {
        Some(c) if !c.is_empty() => Outcome::Context(c.to_string()),
        _ => Outcome::Allow,
    }
}

async fn read_capped<R: AsyncRead + Unpin>(mut r: R, stop: CancellationToken) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = tokio::select! {
            n = r.read(&mut chunk) => match n {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = stop.cancelled() => break,
        };
        let room = MAX_CAPTURE.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..n.min(room)]);
    }
    kept
}

async fn run_process(
    hooks: &Hooks,
    hook: &Hook,
    event: HookEvent,
    stdin: &[u8],
    session_id: &str,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Ran {
    let processes = &hooks.processes;
    let shell = match crate::program::hook_shell(hooks.bash.as_deref()) {
        Ok(shell) => shell,
        Err(line) => return Ran::CannotStart(line),
    };
    let fencing = match hooks.sandbox.fence_for(cwd, &hook.config.sandbox) {
        Ok(f) => f,
        Err(e) => return Ran::CannotStart(format!("the sandbox: {e}")),
    };
    let mut cmd = fencing.command(shell);
    cmd.arg("-c")
        .arg(&hook.config.command)
        .current_dir(cwd)
        .env("MM_HOOK_EVENT", event.name())
        .env("MM_SESSION_ID", session_id)
        .env("MM_CWD", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let python = crate::program::python::line_cwd_first(&hook.config.command);
    crate::program::python::protect(&mut cmd, python, &Default::default());
    // Stopped with its whole group if we give up on it (a timeout, a cancel, a dropped future).
    let mut child = match processes.spawn(&mut cmd, Group::Own, fencing) {
        Ok(c) => c,
        Err(e) => return Ran::CannotStart(e.to_string()),
    };

    // Written by a task of its own: a hook that never reads its stdin must not block us, and one
    // that exits without reading it (EPIPE) is not a failure.
    let writer = child.take_stdin().map(|mut w| {
        let bytes = stdin.to_vec();
        processes.tasks().spawn(async move {
            let _ = w.write_all(&bytes).await;
            let _ = w.shutdown().await;
        })
    });
    let stop = CancellationToken::new();
    let out = child
        .take_stdout()
        .map(|r| processes.tasks().spawn(read_capped(r, stop.clone())));
    let err = child
        .take_stderr()
        .map(|r| processes.tasks().spawn(read_capped(r, stop.clone())));

    let timeout = hook.config.timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let waited = tokio::select! {
        s = child.wait() => Ok(s),
        _ = tokio::time::sleep_until(deadline) => Err(Ran::TimedOut(timeout)),
        _ = cancel.cancelled() => Err(Ran::Cancelled),
    };
    let status = match waited {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => {
            child.stop();
            stop.cancel();
            return Ran::CannotStart(e.to_string());
        }
        Err(ran) => {
            child.stop();
            stop.cancel();
            if let Some(w) = writer {
                w.abort();
            }
            return ran;
        }
    };
    // The hook exited: what it left running in the background is its business.
    child.release();
    if let Some(w) = writer {
        w.abort();
    }
    let grace = tokio::time::sleep(OUTPUT_GRACE);
    tokio::pin!(grace);
    let mut collect = async |h: Option<tokio::task::JoinHandle<Vec<u8>>>| -> String {
        let Some(mut h) = h else {
            return String::new();
        };
        let bytes = tokio::select! {
            r = &mut h => r.unwrap_or_default(),
            _ = &mut grace => {
                stop.cancel();
                h.await.unwrap_or_default()
            }
        };
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let stdout = collect(out).await;
    let stderr = collect(err).await;
    Ran::Exited {
        status,
        stdout,
        stderr,
    }
}
