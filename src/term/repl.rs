//! The interactive session: read a line, run it, show the turn, again.
//!
//! rustyline blocks, so it lives on its own thread and answers read requests over channels; the
//! turn runs on the async side, where Ctrl-C (SIGINT: the terminal is in cooked mode during a
//! turn) cancels it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::FutureExt;
use rustyline::completion::{Candidate, Completer};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Editor, ExternalPrinter, KeyCode, KeyEvent, Modifiers};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::banner::{self, Banner};
use super::frontend::TermFrontend;
use super::input::{self, Input, Local};
use super::raw;
use super::render::{self, Target, TurnSummary};
use super::style;
use crate::config::Config;
use crate::engine::{Engine, Session, StopReason};
use crate::event::Usage;

/// How the terminal is set up, decided by the caller (main.rs reads the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermOptions {
    /// Where line history persists; `None`: not kept.
    pub history_path: Option<PathBuf>,
    /// Colour and Markdown on stdout (a terminal, `NO_COLOR` unset).
    pub color: bool,
    /// Colour on stderr.
    pub color_stderr: bool,
    /// The spinner (stderr is a terminal).
    pub spinner: bool,
}

impl TermOptions {
    /// From the process's environment and streams.
    pub fn from_env() -> Self {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let xdg = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from);
        let home = crate::paths::home();
        TermOptions {
            history_path: input::history_path(xdg.as_deref(), home.as_deref()),
            color: !no_color && std::io::stdout().is_terminal(),
            color_stderr: !no_color && std::io::stderr().is_terminal(),
            spinner: std::io::stderr().is_terminal(),
        }
    }
}

/// The prompt.
pub const PROMPT: &str = "> ";

/// Runs the interactive session until `/quit`, Ctrl-D, two Ctrl-C or `stop` (SIGTERM, SIGHUP:
/// main.rs owns the signals); returns the exit code. A turn running when `stop` fires is
/// cancelled and awaited (the engine saves the session), and the terminal is put back as it was.
pub async fn run_interactive(
    engine: Arc<Engine>,
    config: Arc<Config>,
    mut session: Session,
    banner: Banner,
    options: TermOptions,
    stop: CancellationToken,
) -> i32 {
    let _ = &config;
    let frontend = TermFrontend::new(options.color, options.spinner);
    let mut err = std::io::stderr();
    for line in banner::banner_lines(&banner, options.color_stderr) {
        let _ = writeln!(err, "{line}");
    }

    let saved = raw::save();
    let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
        return 1;
    };

    let skills: Vec<String> = session
        .skills
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let helper = MmHelper {
        commands: input::command_names(Engine::commands(), &skills),
        skills: skills.clone(),
        cwd: session.cwd.clone(),
        home: crate::paths::home(),
    };
    let mut reader = LineReader::start(helper, options.history_path.clone());
    spawn_detection(Arc::clone(&engine), Arc::clone(&frontend), &mut reader);

    let mut armed = false;
    let code = loop {
        let read = tokio::select! {
            read = reader.read(PROMPT) => read,
            () = stop.cancelled() => break 0,
        };
        let text = match read {
            Read::Line(text) => text,
            Read::Interrupted => {
                if armed {
                    break 0;
                }
                armed = true;
                frontend.lines(
                    Target::Stdout,
                    vec![style::dim(
                        options.color,
                        "(Ctrl-C again or Ctrl-D to leave)",
                    )],
                );
                continue;
            }
            Read::Eof => break 0,
            Read::Failed(why) => {
                frontend.lines(Target::Stderr, vec![style::red(options.color, &why)]);
                break 1;
            }
        };
        armed = false;
        let text = input::join_continuations(&text);
        match input::classify(&text, &skills) {
            Input::Empty => {}
            Input::Local(Local::Quit) => break 0,
            Input::Local(command) => {
                local_command(&command, &engine, &mut session, &frontend).await
            }
            Input::Unknown(word) => frontend.lines(
                Target::Stdout,
                vec![style::yellow(
                    options.color,
                    &format!("unknown command /{word} (/help lists them)"),
                )],
            ),
            Input::Engine(text) => {
                run_turn(&engine, &mut session, &text, &frontend, &mut sigint, &stop).await;
            }
        }
        if stop.is_cancelled() {
            break 0;
        }
    };
    frontend.end_turn();
    if let Some(saved) = &saved {
        raw::restore(saved);
    }
    code
}

/// Runs one prompt through the engine; Ctrl-C cancels it and the prompt comes back.
async fn run_turn(
    engine: &Engine,
    session: &mut Session,
    text: &str,
    frontend: &Arc<TermFrontend>,
    sigint: &mut tokio::signal::unix::Signal,
    stop: &CancellationToken,
) {
    // A Ctrl-C from before this turn must not cancel it.
    while sigint.recv().now_or_never().is_some() {}
    let cancel = stop.child_token();
    frontend.begin_turn();
    let before = session.usage;
    let started = Instant::now();
    let outcome = {
        let turn = engine.prompt(session, text, &[], frontend.as_ref(), &cancel);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                outcome = &mut turn => break outcome,
                _ = sigint.recv() => cancel.cancel(),
            }
        }
    };
    frontend.end_turn();
    let color = frontend.color();
    let mut lines = Vec::new();
    match &outcome.stop {
        Err(why) => lines.push(style::red(color, &format!("error: {why}"))),
        Ok(StopReason::Cancelled) => lines.push(style::yellow(color, "cancelled")),
        Ok(StopReason::MaxTokens) => lines.push(style::yellow(
            color,
            "[stopped: the answer reached the model.maxTokens limit]",
        )),
        Ok(StopReason::EndTurn | StopReason::MaxTurnRequests) => {}
    }
    if outcome.recap.is_some() {
        let summary = TurnSummary {
            recap: outcome.recap,
            usage: usage_delta(&before, &session.usage),
            context: frontend.context().or(Some(engine.context_usage(session))),
            elapsed: started.elapsed(),
        };
        lines.push(render::recap_line(&summary, color));
    }
    frontend.lines(Target::Stdout, lines);
}

/// The tokens of one turn: the session's totals after minus before.
pub fn usage_delta(before: &Usage, after: &Usage) -> Usage {
    let sub = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), b) => Some(a.saturating_sub(b.unwrap_or(0))),
        (None, _) => None,
    };
    Usage {
        input_tokens: after.input_tokens.saturating_sub(before.input_tokens),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        thought_tokens: sub(after.thought_tokens, before.thought_tokens),
        cached_read_tokens: sub(after.cached_read_tokens, before.cached_read_tokens),
    }
}

async fn local_command(
    command: &Local,
    engine: &Engine,
    session: &mut Session,
    frontend: &Arc<TermFrontend>,
) {
    let color = frontend.color();
    let lines = match command {
        Local::Help => help_lines(session, color),
        Local::Model => match engine.model.info(&CancellationToken::new()).await {
            Ok(info) => {
                let window = if info.context_window > 0 {
                    render::window(info.context_window)
                } else {
                    "unknown".to_string()
                };
                vec![
                    format!("model           {}", info.name),
                    format!("server          {}", info.url),
                    format!("context window  {window}"),
                ]
            }
            Err(e) => vec![style::red(color, &e.to_string())],
        },
        Local::Skills => skills_lines(session, color),
        Local::Mcp => super::mcp::mcp_lines(&engine.mcp_report(session), color),
        Local::Sessions => sessions_lines(engine, session, color),
        Local::Load(id) => load_lines(engine, session, id.trim(), frontend).await,
        Local::Ask(_) => vec![style::yellow(
            color,
            "/ask: asking other agents is not available in this version yet",
        )],
        Local::Quit => Vec::new(),
    };
    frontend.lines(Target::Stdout, lines);
}

/// `/sessions`: the saved sessions of this folder, oldest first.
fn sessions_lines(engine: &Engine, session: &Session, color: bool) -> Vec<String> {
    if !engine.config.sessions.enabled {
        return vec![style::yellow(
            color,
            "sessions are off: set sessions.enabled = true to keep and resume them",
        )];
    }
    let dir = engine.sessions_dir(&session.cwd);
    let list = crate::session::list(&dir);
    if list.is_empty() {
        return vec![style::dim(
            color,
            &format!("no saved session in {}", dir.display()),
        )];
    }
    let mut lines: Vec<String> = list
        .iter()
        .map(|s| {
            let mark = if s.id == session.id { "* " } else { "  " };
            let age = chrono::DateTime::parse_from_rfc3339(&s.updated_at)
                .map(|t| age(chrono::Local::now().signed_duration_since(t)))
                .unwrap_or_else(|_| "?".into());
            let size = if s.size >= 1024 {
                format!("{} kB", s.size / 1024)
            } else {
                format!("{} B", s.size)
            };
            let prompt = s.first_prompt.as_deref().unwrap_or("(no prompt)");
            format!(
                "{mark}{}  {age:>8}  {:>4} msg  {size:>7}  {prompt}",
                s.id, s.messages
            )
        })
        .collect();
    lines.push(style::dim(color, "resume one with /load ID"));
    lines
}

/// How long ago, shortly: `45s ago`, `12m ago`, `3h ago`, `2d ago`.
fn age(d: chrono::TimeDelta) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// `/load ID`: replaces the current session by a saved one (the current one stays saved).
async fn load_lines(
    engine: &Engine,
    session: &mut Session,
    id: &str,
    frontend: &Arc<TermFrontend>,
) -> Vec<String> {
    let color = frontend.color();
    if !engine.config.sessions.enabled {
        return vec![style::yellow(
            color,
            "sessions are off: set sessions.enabled = true to keep and resume them",
        )];
    }
    if id.is_empty() {
        return vec![style::yellow(color, "usage: /load ID (see /sessions)")];
    }
    match engine
        .load_session(session.cwd.clone(), id, frontend.as_ref())
        .await
    {
        Ok(loaded) => {
            let n = crate::history::count_without_system(&loaded.history);
            *session = loaded;
            vec![style::dim(
                color,
                &format!("loaded session {id}: {n} message(s)"),
            )]
        }
        Err(e) => vec![style::red(color, &format!("/load: {e}"))],
    }
}

/// `/help`.
pub fn help_lines(session: &Session, color: bool) -> Vec<String> {
    let mut commands: Vec<(String, String)> = input::LOCAL_COMMANDS
        .iter()
        .chain(Engine::commands().iter())
        .map(|(n, d)| ((*n).to_string(), (*d).to_string()))
        .collect();
    commands.sort();
    let mut lines = vec![style::bold(color, "Commands")];
    for (name, description) in commands {
        lines.push(format!("  /{name:<12} {}", style::dim(color, &description)));
    }
    if !session.skills.skills.is_empty() {
        lines.push(style::bold(color, "Skills (/name or $name in a prompt)"));
        for skill in &session.skills.skills {
            lines.push(format!(
                "  /{:<12} {}",
                skill.name,
                style::dim(color, &skill.description)
            ));
        }
    }
    lines.push(style::bold(color, "Keys"));
    for (keys, what) in [
        ("Enter", "send"),
        ("\\ at the end, Alt-Enter", "new line"),
        ("Tab", "complete /commands, $skills, @paths"),
        ("Ctrl-C", "cancel the turn; twice on the prompt: leave"),
        ("Ctrl-D", "leave"),
    ] {
        lines.push(format!("  {keys:<24} {}", style::dim(color, what)));
    }
    lines
}

/// `/skills`: the catalogue with each skill's folder.
pub fn skills_lines(session: &Session, color: bool) -> Vec<String> {
    if session.skills.skills.is_empty() {
        return vec![style::dim(color, "no skills")];
    }
    let mut lines = Vec::new();
    for skill in &session.skills.skills {
        lines.push(format!(
            "{} — {}",
            style::bold(color, &skill.name),
            skill.description
        ));
        lines.push(style::dim(color, &format!("  {}", skill.dir.display())));
    }
    lines
}

/// Shows the model line when detection completes, without disturbing the prompt being edited.
fn spawn_detection(engine: Arc<Engine>, frontend: Arc<TermFrontend>, reader: &mut LineReader) {
    let printer_rx = reader.printer.take();
    let at_prompt = Arc::clone(&reader.at_prompt);
    tokio::spawn(async move {
        let color = frontend.color();
        let lines = match engine.model.info(&CancellationToken::new()).await {
            Ok(info) => {
                let window = (info.context_window > 0).then_some(info.context_window);
                frontend.model_text(&info.name, &info.url, window)
            }
            Err(e) => Some(vec![banner::detection_failed(&e.to_string(), color)]),
        };
        let Some(lines) = lines else {
            return;
        };
        let printer = match printer_rx {
            Some(rx) => rx.await.ok().flatten(),
            None => None,
        };
        match printer {
            Some(mut printer) if at_prompt.load(Ordering::SeqCst) => {
                let _ = printer.print(format!("{}\n", lines.join("\n")));
            }
            _ => frontend.lines(Target::Stderr, lines),
        }
    });
}

/// The result of one read.
enum Read {
    Line(String),
    Interrupted,
    Eof,
    Failed(String),
}

type Printer = Box<dyn ExternalPrinter + Send>;

/// rustyline on its own thread.
struct LineReader {
    requests: std::sync::mpsc::Sender<String>,
    answers: mpsc::UnboundedReceiver<Read>,
    /// The editor's printer, which writes above the prompt being edited (taken once).
    printer: Option<oneshot::Receiver<Option<Printer>>>,
    at_prompt: Arc<AtomicBool>,
}

impl LineReader {
    fn start(helper: MmHelper, history: Option<PathBuf>) -> LineReader {
        let (requests, request_rx) = std::sync::mpsc::channel::<String>();
        let (answer_tx, answers) = mpsc::unbounded_channel();
        let (printer_tx, printer_rx) = oneshot::channel();
        let at_prompt = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&at_prompt);
        std::thread::spawn(move || {
            let mut editor = match make_editor(helper, history.as_ref()) {
                Ok(e) => e,
                Err(e) => {
                    let _ = printer_tx.send(None);
                    let _ = answer_tx.send(Read::Failed(format!("line editor: {e}")));
                    return;
                }
            };
            let printer = editor
                .create_external_printer()
                .ok()
                .map(|p| Box::new(p) as Printer);
            let _ = printer_tx.send(printer);
            while let Ok(prompt) = request_rx.recv() {
                flag.store(true, Ordering::SeqCst);
                let read = editor.readline(&prompt);
                flag.store(false, Ordering::SeqCst);
                let answer = match read {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                            if let Some(path) = &history {
                                let _ = editor.append_history(path);
                            }
                        }
                        Read::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Read::Interrupted,
                    Err(ReadlineError::Eof) => Read::Eof,
                    Err(e) => Read::Failed(format!("cannot read the terminal: {e}")),
                };
                if answer_tx.send(answer).is_err() {
                    break;
                }
            }
        });
        LineReader {
            requests,
            answers,
            printer: Some(printer_rx),
            at_prompt,
        }
    }

    async fn read(&mut self, prompt: &str) -> Read {
        if self.requests.send(prompt.to_string()).is_err() {
            return Read::Eof;
        }
        self.answers.recv().await.unwrap_or(Read::Eof)
    }
}

fn make_editor(
    helper: MmHelper,
    history: Option<&PathBuf>,
) -> rustyline::Result<Editor<MmHelper, FileHistory>> {
    let config = rustyline::Config::builder()
        .max_history_size(1000)?
        .history_ignore_dups(true)?
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor = Editor::with_config(config)?;
    editor.set_helper(Some(helper));
    editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
    if let Some(path) = history {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.load_history(path);
    }
    Ok(editor)
}

/// Completion and multi-line input for rustyline.
struct MmHelper {
    commands: Vec<String>,
    skills: Vec<String>,
    cwd: PathBuf,
    home: Option<PathBuf>,
}

struct Pair {
    display: String,
    replacement: String,
}

impl Candidate for Pair {
    fn display(&self) -> &str {
        &self.display
    }
    fn replacement(&self) -> &str {
        &self.replacement
    }
}

impl Completer for MmHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = input::complete(
            line,
            pos,
            &self.commands,
            &self.skills,
            &self.cwd,
            self.home.as_deref(),
        );
        Ok((
            start,
            found
                .into_iter()
                .map(|(display, replacement)| Pair {
                    display,
                    replacement,
                })
                .collect(),
        ))
    }
}

impl Hinter for MmHelper {
    type Hint = String;
}

impl Highlighter for MmHelper {}

impl Validator for MmHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        if input::continues(ctx.input()) {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl rustyline::Helper for MmHelper {}
