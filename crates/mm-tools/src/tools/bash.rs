//! The `bash` tool (docs/tools.md): runs a command in its own session and process group, with its
//! output bounded in memory, a timeout, cancellation, and background jobs left alone.

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool, cut};
use crate::config::SandboxMode;
use crate::event::{PermissionMode, Tally, ToolKind};
use crate::process::{Child, Group, OutputReader, Supervisor};
use crate::sandbox::{Asked, Fencing, Listening, Sandbox};
use crate::tasks::Tasks;

pub const NAME: &str = "bash";
/// The largest timeout the model may ask for, in seconds.
pub const MAX_TIMEOUT: u64 = 3600;
/// What a failed command prints when a write was refused: EACCES, EPERM, EROFS (`.mm/`), and
/// EXDEV, which Landlock answers to a link or a move between folders it does not allow.
const DENIED_MARKERS: [&str; 4] = [
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "Invalid cross-device link",
];
/// How long the output is still read after bash exits, for jobs it left holding the pipe.
const AFTER_EXIT_READ: Duration = Duration::from_millis(200);
/// How often a running command's new output is reported (`CallContext::progress`), at most.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// Lines of new output one report carries at most (the last ones).
pub const PROGRESS_LINES: usize = 40;
/// Bytes of a line without its end kept for the report that will show it.
const PROGRESS_LINE_BYTES: usize = 4096;

pub struct Bash {
    /// `tools.bash.timeout`: the default when the call gives none.
    pub timeout: Duration,
    /// `tools.bash.path` ([`crate::program::bash`]).
    pub bash: Option<std::path::PathBuf>,
    pub processes: Arc<Supervisor>,
    /// Commands run inside its fence (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
    /// What commands of a session in `read-only` mode run in; `None`: they are refused.
    pub read_only: Option<Arc<Sandbox>>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(Bash {
        timeout: setup.config.tools.bash_timeout,
        bash: setup.config.tools.bash_path.clone(),
        processes: Arc::clone(setup.processes),
        sandbox: Arc::clone(setup.sandbox),
        read_only: setup.read_only.cloned(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    /// Run with `bash -c`
    command: String,
    /// Seconds before it is killed (max 3600)
    timeout: Option<u64>,
}

impl Describe for Bash {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Run a bash command in the working directory. Returns stdout and stderr merged, and the exit code when non-zero."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, args: &Value) -> String {
        match args.get("command").and_then(Value::as_str) {
            Some(c) => format!("{NAME}: {c}"),
            None => NAME.into(),
        }
    }
    fn tally(&self) -> Option<Tally> {
        Some(Tally::Command)
    }
    fn runs_read_only(&self) -> bool {
        self.read_only.is_some()
    }
    fn rejected(&self) -> String {
        "[command rejected by the user]".to_string()
    }
    fn prompt_section(&self) -> Option<String> {
        sandbox_section(&self.sandbox)
    }
}

#[async_trait]
impl TypedTool for Bash {
    type Args = Args;

    fn gated(&self, _args: &Args) -> bool {
        true
    }
    fn rule_subject(&self, args: &Args) -> Option<String> {
        Some(args.command.clone())
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let timeout = match args.timeout {
            Some(secs) => Duration::from_secs(secs.clamp(1, MAX_TIMEOUT)),
            None => self.timeout,
        };
        let sandbox = match (call.mode, &self.read_only) {
            (PermissionMode::ReadOnly, Some(read_only)) => read_only,
            _ => &self.sandbox,
        };
        run_command(
            &self.processes,
            sandbox,
            self.bash.as_deref(),
            &args.command,
            timeout,
            call,
        )
        .await
    }
}

/// Seconds as the model reads them: `120`, or `0.2` for less than whole seconds.
/// What the system prompt says of the sandbox; `None` when commands are not fenced.
pub(crate) fn sandbox_section(sandbox: &Sandbox) -> Option<String> {
    if !sandbox.fences_commands() {
        return None;
    }
    match sandbox.mode() {
        SandboxMode::Off => None,
        SandboxMode::WorkspaceWrite => Some(
            "Sandbox: commands and file tools may write only in the working directory (not .mm/) and the temp folder."
                .into(),
        ),
        SandboxMode::ReadOnly => Some("Sandbox: commands and file tools may not write files.".into()),
    }
}

/// The line a failed call of a session in `cwd` gets when the fence may be why (its output
/// says a permission was denied); `None` when commands are not fenced.
pub(crate) fn denial_hint(sandbox: &Sandbox, cwd: &Path) -> Option<String> {
    if !sandbox.fences_commands() {
        return None;
    }
    match sandbox.mode() {
        SandboxMode::Off => None,
        SandboxMode::WorkspaceWrite if sandbox.unwritable_cwd(cwd).is_some() => Some(
            "[tools.sandbox = workspace-write: the working directory is the home folder, so commands may write only in the temp folder and tools.sandboxWritable]"
                .into(),
        ),
        SandboxMode::WorkspaceWrite => Some(
            "[tools.sandbox = workspace-write: commands may write only in the working directory (not its .mm/), the temp folder and tools.sandboxWritable]"
                .into(),
        ),
        SandboxMode::ReadOnly => {
            Some("[tools.sandbox = read-only: commands may not write any file]".into())
        }
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// The next question of the session's proxy, while the call listens.
async fn next_question(listening: &mut Option<Listening>) -> Option<Asked> {
    match listening {
        Some(l) => l.questions.recv().await,
        None => std::future::pending().await,
    }
}

/// Puts the proxy's question to the user, naming the command that connects, and sends the
/// answer back to the waiting connection.
async fn answer_question(call: &CallContext<'_>, command: &str, asked: Asked) {
    let Asked { host, port, reply } = asked;
    let answer = call.ask_network(host, port, command).await;
    let _ = reply.send(answer);
}

/// How a call ended.
enum End {
    Exited(io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

async fn run_command(
    processes: &Arc<Supervisor>,
    sandbox: &Sandbox,
    bash: Option<&Path>,
    command: &str,
    timeout: Duration,
    call: &CallContext<'_>,
) -> ToolOutput {
    let (cwd, cancel): (&Path, &CancellationToken) = (call.cwd, call.cancel);
    let fence = match sandbox.fence(cwd) {
        Ok(fence) => fence,
        Err(e) => {
            return ToolOutput::not_run(format!(
                "[could not start bash in {}: the sandbox: {e}]",
                crate::paths::for_model(cwd)
            ));
        }
    };
    // The hosts the fence's proxy refuses while the call runs are the model's to know: a
    // command's client rarely prints the 403's body.
    let refused_from = sandbox.refusals().count();
    // In `ask` mode a host on no list is put to the user while the call runs, the proxy's
    // connection waiting for the answer (docs/sandbox.md, "Asking"); one question at a time.
    let mut listening = (call.mode == PermissionMode::Ask && sandbox.door().proxied())
        .then(|| sandbox.passage().listen());
    let mut asking: Option<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = None;
    let (mut child, reader) = match spawn(processes, bash, command, cwd, fence) {
        Ok(started) => started,
        Err(e) => {
            return ToolOutput::not_run(format!(
                "[could not start bash in {}: {e}]",
                crate::paths::for_model(cwd)
            ));
        }
    };
    let mut capture = Capture::new(call.max_output);
    let mut progress = Progress::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let mut reader = reader;

    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // A command that ends within the first period reports nothing but its result. A tick missed
    // while there was nothing new fires as soon as something is, and the next one a whole
    // period later: reports are never closer than that.
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The time the user takes to answer a question is not the command's: its timeout stands
    // still meanwhile (the command waits for the answer, its connection held).
    let mut asked_at = None;
    let end = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break End::Cancelled,
            Some(asked) = next_question(&mut listening), if asking.is_none() => {
                asking = Some(Box::pin(answer_question(call, command, asked)));
                asked_at = Some(tokio::time::Instant::now());
            }
            () = async { if let Some(a) = asking.as_mut() { a.await } }, if asking.is_some() => {
                asking = None;
                if let Some(at) = asked_at.take() {
                    let later = deadline.deadline() + at.elapsed();
                    deadline.as_mut().reset(later);
                }
            }
            // Before the reader, which a command printing without pause keeps ready.
            _ = ticks.tick(), if progress.has_news() => call.progress(progress.take()),
            r = reader.read(&mut buf), if !eof => match r {
                Ok(0) => eof = true,
                Ok(n) => {
                    capture.push(&buf[..n]);
                    progress.push(&buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            },
            status = child.wait() => break End::Exited(status),
            _ = &mut deadline, if asking.is_none() => break End::TimedOut,
        }
    };

    // A question still open is withdrawn: its connection is refused.
    drop((asking, listening));
    match end {
        End::Exited(status) => {
            // Jobs bash left behind may hold the pipe open: read a little longer, then let a
            // detached task drain it so they never die of SIGPIPE.
            let until = tokio::time::Instant::now() + AFTER_EXIT_READ;
            while !eof {
                match tokio::time::timeout_at(until, reader.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => eof = true,
                    Ok(Ok(n)) => capture.push(&buf[..n]),
                    Err(_) => break,
                }
            }
            if !eof {
                drain_detached(processes.tasks(), reader);
            }
            // What bash left running in its group is the user's business (background jobs).
            child.release();
            let suffix = match status {
                Ok(s) => match exit_code(s) {
                    0 => None,
                    // A refused write shows as the command's own error; say which fence
                    // refused it.
                    code => match denial_hint(sandbox, cwd).filter(|_| capture.mentions_denial()) {
                        Some(hint) => Some(format!("[exit code: {code}]\n{hint}")),
                        None => Some(format!("[exit code: {code}]")),
                    },
                },
                Err(e) => Some(format!("[could not wait for bash: {e}]")),
            };
            let refused = sandbox.refusals().since(refused_from);
            let suffix = match (suffix, refused.is_empty()) {
                (suffix, true) => suffix,
                (None, false) => Some(refused.join("\n")),
                (Some(s), false) => Some(format!("{s}\n{}", refused.join("\n"))),
            };
            ToolOutput::completed(capture.finish(suffix.as_deref()))
        }
        End::TimedOut => {
            child.stop();
            if !eof && !take_ready(&mut reader, &mut buf, &mut capture) {
                drain_detached(processes.tasks(), reader);
            }
            let note = format!("[timed out after {} s]", seconds(timeout));
            ToolOutput::interrupted(capture.finish(Some(&note)))
        }
        End::Cancelled => {
            child.stop();
            if !eof && !take_ready(&mut reader, &mut buf, &mut capture) {
                drain_detached(processes.tasks(), reader);
            }
            ToolOutput::interrupted(capture.finish(Some("[cancelled]")))
        }
    }
}

/// The lines a running command printed since the last progress report: the last
/// [`PROGRESS_LINES`] complete ones (a line is what follows its last `\r`, as a terminal shows
/// a progress bar), bounded in memory whatever the command prints.
#[derive(Default)]
struct Progress {
    lines: VecDeque<String>,
    /// The line being printed, not ended yet (at most [`PROGRESS_LINE_BYTES`], its end kept).
    partial: Vec<u8>,
}

impl Progress {
    fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            self.partial.extend_from_slice(&rest[..i]);
            self.end_line();
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > PROGRESS_LINE_BYTES {
            let cut = self.partial.len() - PROGRESS_LINE_BYTES;
            self.partial.drain(..cut);
        }
    }

    fn end_line(&mut self) {
        let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
        let shown = match line.iter().rposition(|b| *b == b'\r') {
            Some(i) => &line[i + 1..],
            None => line,
        };
        if self.lines.len() == PROGRESS_LINES {
            self.lines.pop_front();
        }
        self.lines
            .push_back(String::from_utf8_lossy(shown).into_owned());
        self.partial.clear();
    }

    fn has_news(&self) -> bool {
        !self.lines.is_empty()
    }

    /// The new lines, one per line of the text; they are forgotten.
    fn take(&mut self) -> String {
        let lines: Vec<String> = self.lines.drain(..).collect();
        lines.join("\n")
    }
}

/// Starts `bash -c command` in a new session, stdout and stderr sharing one pipe so that their
/// lines stay in order.
fn spawn(
    processes: &Arc<Supervisor>,
    bash: Option<&Path>,
    command: &str,
    cwd: &Path,
    fence: Fencing,
) -> io::Result<(Child, OutputReader)> {
    let (read_end, write_end) = io::pipe()?;
    let write_err = write_end.try_clone()?;
    let bash = crate::program::bash(bash).map_err(io::Error::other)?;
    let mut cmd = fence.command(bash);
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_err))
        .env("GIT_TERMINAL_PROMPT", "0");
    // A new session: no controlling terminal, so nothing can wait on a tty prompt, and the
    // whole group can be signalled at once.
    let child = processes.spawn(&mut cmd, Group::Session, fence)?;
    // `cmd` still holds the write ends: drop it so that the pipe ends when the children do.
    drop(cmd);
    let reader = crate::process::output_reader(read_end)?;
    Ok((child, reader))
}

/// Keeps what the pipe already holds, without waiting for more: a cancel can win the race
/// against output written just before it. The read is the raw non-blocking one, since the
/// runtime may not have seen the pipe become readable yet; a few reads at most, since the
/// command may still be writing. `true` at the end of the output.
fn take_ready(reader: &mut OutputReader, buf: &mut [u8], capture: &mut Capture) -> bool {
    for _ in 0..16 {
        match crate::process::read_now(reader, buf) {
            Ok(0) => return true,
            Ok(n) => capture.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    false
}

/// Reads and discards what is left in the pipe until every writer has closed it, or until
/// shutdown: background jobs of a finished call may hold it open for ever.
fn drain_detached(tasks: &Tasks, mut reader: OutputReader) {
    tasks.spawn_until_shutdown(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
}

/// The exit code as a shell reports it (128 + N for a death by signal N).
fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), crate::process::signal_of(&status)) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => -1,
    }
}

/// The output of a command, bounded in memory: the first bytes, and a ring buffer of the last
/// ones, with a count of the characters dropped between them.
struct Capture {
    max_chars: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Bytes kept on each side: enough for `max_chars` characters of up to 4 bytes.
    side_bytes: usize,
    /// Characters evicted from the tail ring, and the line breaks among them.
    dropped_chars: usize,
    dropped_lines: usize,
}

impl Capture {
    fn new(max_chars: usize) -> Self {
        let side_bytes = max_chars.saturating_mul(4).saturating_add(4);
        Capture {
            max_chars,
            head: Vec::new(),
            tail: VecDeque::new(),
            side_bytes,
            dropped_chars: 0,
            dropped_lines: 0,
        }
    }

    /// Whether the kept output says that a write was refused.
    fn mentions_denial(&self) -> bool {
        let head = String::from_utf8_lossy(&self.head);
        let (a, b) = self.tail.as_slices();
        let tail = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        DENIED_MARKERS
            .iter()
            .any(|m| head.contains(m) || tail.contains(m))
    }

    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.side_bytes {
            let n = bytes.len().min(self.side_bytes - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.side_bytes {
            self.drop_tail(self.tail.len());
            let cut = bytes.len() - self.side_bytes;
            self.dropped_chars += count_chars(bytes[..cut].iter().copied());
            self.dropped_lines += cut::line_breaks(&bytes[..cut]);
            bytes = &bytes[cut..];
        } else {
            let excess = (self.tail.len() + bytes.len()).saturating_sub(self.side_bytes);
            self.drop_tail(excess);
        }
        self.tail.extend(bytes.iter().copied());
    }

    /// Evicts the first `n` bytes of the tail ring, counting them.
    fn drop_tail(&mut self, n: usize) {
        for b in self.tail.drain(..n) {
            self.dropped_chars += usize::from(b & 0xC0 != 0x80);
            self.dropped_lines += usize::from(b == b'\n');
        }
    }

    /// The text for the model: the output, then `suffix` on its own line, capped at
    /// `max_chars` the way `tools::cap_output` does it.
    fn finish(self, suffix: Option<&str>) -> String {
        let Capture {
            max_chars,
            mut head,
            tail,
            dropped_chars,
            dropped_lines,
            ..
        } = self;
        let with_suffix = |mut text: String| {
            if let Some(s) = suffix {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(s);
            }
            text
        };
        if dropped_chars == 0 {
            head.extend(tail);
            let text = with_suffix(String::from_utf8_lossy(&head).into_owned());
            return super::cap_output(&text, max_chars);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let tail = with_suffix(String::from_utf8_lossy(&Vec::from(tail)).into_owned());
        let head_n = max_chars / 2;
        let tail_n = max_chars - head_n;
        let head_total = head.chars().count();
        let tail_total = tail.chars().count();
        let kept_tail_from = tail_total.saturating_sub(tail_n);
        let omitted = head_total.saturating_sub(head_n) + dropped_chars + kept_tail_from;
        let breaks = |s: &str| s.chars().filter(|&c| c == '\n').count();
        let head_cut: String = head.chars().skip(head_n).collect();
        let tail_cut: String = tail.chars().take(kept_tail_from).collect();
        let lines = breaks(&head_cut) + dropped_lines + breaks(&tail_cut);
        let head: String = head.chars().take(head_n).collect();
        let tail: String = tail.chars().skip(kept_tail_from).collect();
        format!("{head}\n{}\n{tail}", cut::marker(omitted, lines))
    }
}

/// Characters in UTF-8 bytes: the bytes that do not continue a sequence.
fn count_chars(bytes: impl Iterator<Item = u8>) -> usize {
    bytes.filter(|b| b & 0xC0 != 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::cap_output;

    #[test]
    fn capture_matches_cap_output_when_small() {
        let mut c = Capture::new(10);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.finish(Some("[exit code: 1]")), {
            cap_output("hello world\n[exit code: 1]", 10)
        });
    }

    #[test]
    fn capture_bounded_matches_cap_output() {
        let text: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut c = Capture::new(20);
        for chunk in text.as_bytes().chunks(7) {
            c.push(chunk);
        }
        assert!(c.head.len() + c.tail.len() <= 2 * c.side_bytes);
        let expected = cap_output(&format!("{text}\n[exit code: 2]"), 20);
        assert_eq!(c.finish(Some("[exit code: 2]")), expected);
    }

    #[test]
    fn capture_counts_multibyte_characters() {
        let text = "é".repeat(1000);
        let mut c = Capture::new(10);
        c.push(text.as_bytes());
        assert_eq!(c.finish(None), cap_output(&text, 10));
    }

    #[test]
    fn progress_keeps_the_last_complete_lines_as_a_terminal_shows_them() {
        let mut p = Progress::default();
        assert!(!p.has_news());
        p.push(b"one\ntw");
        assert_eq!(p.take(), "one");
        assert!(!p.has_news(), "what was taken is forgotten");
        p.push(b"o\r\n 10%\r 50%\r100%\nthree");
        assert_eq!(p.take(), "two\n100%");
        for i in 0..100 {
            p.push(format!("\nline {i}").as_bytes());
        }
        let text = p.take();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), PROGRESS_LINES);
        assert_eq!(lines[0], "line 59");
        assert_eq!(lines[PROGRESS_LINES - 1], "line 98");
        p.push(&vec![b'x'; 3 * PROGRESS_LINE_BYTES]);
        assert!(p.partial.len() <= PROGRESS_LINE_BYTES);
    }

    #[test]
    fn title_and_kind() {
        let t = Bash {
            timeout: Duration::from_secs(1),
            bash: None,
            processes: Supervisor::new(),
            sandbox: Arc::new(Sandbox::off()),
            read_only: None,
        };
        assert_eq!(
            t.title(&serde_json::json!({"command": "ls -l"})),
            "bash: ls -l"
        );
        assert_eq!(t.title(&serde_json::json!({"cmd": "ls"})), "bash");
        assert_eq!(t.title(&serde_json::json!("ls")), "bash");
        assert_eq!(t.kind(&Value::Null), ToolKind::Execute);
        let parsed = crate::tools::Tool::parse(&t, serde_json::json!({"command": "ls"}));
        assert!(parsed.is_ok_and(|p| crate::tools::Tool::gated(&t, &p)));
        assert!(t.locations(&Value::Null, Path::new("/")).is_empty());
    }
}
