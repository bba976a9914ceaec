//! The interactive session: read a line, run it, show the turn, again.
//!
//! The terminal stays in raw mode from start to end (raw.rs), and one reader takes every key as
//! it comes (keyboard.rs): the prompt's editor reads them in order (keys typed during a turn
//! included), Ctrl-C during a turn cancels it, and questions read only the keys typed after
//! they show. Nothing is lost between two prompts: there is no "between".

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::banner::{self, Banner};
use super::commands;
use super::editor::{Complete, Editor};
use super::frontend::TermFrontend;
use super::history::History;
use super::input::{self, Input, Local};
use super::keyboard::Keyboard;
use super::raw;
use super::render::{self, Target, TurnSummary};
use super::screen::{self, Read, Screen};
use super::sessions;
use super::style;
use crate::config::Config;
use crate::engine::{Command, Engine, Session, StopReason};
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
    /// stdout is a terminal: the answer is shown visibly there; elsewhere it goes byte for byte.
    pub stdout_terminal: bool,
    /// The session was reopened (`--continue`, `--resume`): the banner says what it holds.
    pub reopened: bool,
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
            stdout_terminal: std::io::stdout().is_terminal(),
            reopened: false,
        }
    }
}

/// The prompt.
pub const PROMPT: &str = super::editor::PROMPT;

/// What Ctrl-C at an empty prompt says (a second one at once leaves).
pub const CTRL_C_AGAIN: &str = "(Ctrl-C again or Ctrl-D to leave)";

/// The interactive session's terminal: raw mode (until dropped), the one reader of keys, and
/// the screen. Taken before anything else starts, so that a question asked before the session
/// opens (whether to trust the project: trust.rs) reads the same keys as everything after it.
pub struct Terminal {
    tty: Option<raw::RawMode>,
    pub keyboard: Arc<Keyboard>,
    pub screen: Arc<Screen>,
}

impl Terminal {
    /// Takes the terminal (stdin): raw mode, and the key reader started.
    pub fn enter() -> Terminal {
        let tty = raw::RawMode::enter();
        Terminal {
            tty,
            keyboard: Keyboard::start(),
            screen: Arc::new(Screen::new()),
        }
    }

    /// Whole lines on stdout.
    pub fn print_lines(&self, lines: &[String]) {
        if !lines.is_empty() {
            self.screen
                .print(Target::Stdout, &format!("{}\n", lines.join("\n")));
        }
    }
}

/// Runs the interactive session until `/quit`, Ctrl-D, two Ctrl-C or `stop` (SIGTERM, SIGHUP:
/// main.rs owns the signals); returns the exit code. A turn running when `stop` fires is
/// cancelled and awaited (the engine saves the session), and the terminal is put back as it was
/// on every way out (a panic included: the raw-mode guard).
pub async fn run_interactive(
    terminal: Terminal,
    engine: Arc<Engine>,
    config: Arc<Config>,
    mut session: Session,
    banner: Banner,
    options: TermOptions,
    stop: CancellationToken,
) -> i32 {
    let _ = &config;
    let Terminal {
        tty,
        keyboard,
        screen,
    } = terminal;
    let frontend = TermFrontend::new(
        options.color,
        options.spinner,
        !options.stdout_terminal,
        Arc::clone(&keyboard),
        Arc::clone(&screen),
        engine.processes.tasks(),
    );
    frontend.banner_model(banner.model_named());
    let mut lines = banner::banner_lines(&banner, options.color_stderr);
    if options.reopened {
        lines.extend(sessions::reopened(&engine, &session, options.color_stderr));
    }
    lines.push(banner::hint_line(options.color_stderr));
    // Wrapped at word boundaries for the window: the terminal would cut words.
    frontend.prose(Target::Stderr, lines);

    raw::forward_interrupts(engine.processes.tasks(), &keyboard);
    let resized = Arc::clone(&screen);
    raw::on_resize(engine.processes.tasks(), move || resized.resized());
    spawn_detection(Arc::clone(&engine), Arc::clone(&frontend));

    let skills = session.view().skills().name_list();
    let models = Arc::new(std::sync::Mutex::new(Vec::new()));
    spawn_model_list(Arc::clone(&engine), Arc::clone(&models));
    let completer = Completer {
        models,
        commands: input::command_names(Engine::commands(), &skills),
        skills: skills.clone(),
        cwd: session.view().cwd().to_path_buf(),
        home: crate::paths::home(),
        sessions: engine
            .config
            .sessions
            .enabled
            .then(|| session.view().sessions_dir().clone().ok())
            .flatten(),
    };
    let mut editor = Editor::new(History::load(options.history_path.clone()));
    let color = options.color;
    let mut armed = false;
    loop {
        let read = screen::read_line(
            &screen,
            &keyboard,
            &mut editor,
            &completer,
            tty.as_ref(),
            &stop,
        )
        .await;
        let text = match read {
            Read::Line(text) => text,
            Read::Interrupted { empty, first } => {
                if empty && armed && first {
                    break;
                }
                // Twice on an empty line leaves; on a line with text, Ctrl-C clears it.
                armed = empty;
                if empty {
                    frontend.lines(Target::Stdout, vec![style::dim(color, CTRL_C_AGAIN)]);
                }
                continue;
            }
            Read::Eof | Read::Stopped => break,
        };
        armed = false;
        editor.history_mut().add(&text);
        let text = input::join_continuations(&text);
        match input::classify(&text, &skills) {
            Input::Empty => {}
            Input::Local(Local::Quit) => break,
            Input::Local(Local::Ask(rest)) => {
                ask_command(&rest, &engine, &session, &frontend, &stop).await;
            }
            Input::Local(command) => {
                let lines =
                    commands::run(&command, &engine, &mut session, frontend.as_ref(), color).await;
                frontend.lines(Target::Stdout, lines);
            }
            Input::Unknown(word) => frontend.lines(
                Target::Stdout,
                vec![style::yellow(
                    color,
                    &format!("unknown command /{word} (/help lists them)"),
                )],
            ),
            Input::Engine(text) => {
                let notices = input::unresolved(&text, session.view().cwd());
                if !notices.is_empty() {
                    let notices = notices.iter().map(|n| style::dim(color, n)).collect();
                    frontend.lines(Target::Stdout, notices);
                }
                run_turn(&engine, &mut session, &text, &frontend, &stop).await;
            }
        }
        if stop.is_cancelled() {
            break;
        }
    }
    keyboard.close();
    frontend.end_turn();
    drop(tty);
    0
}

/// Runs one prompt through the engine; Ctrl-C (read by the keyboard) cancels it and the prompt
/// comes back.
async fn run_turn(
    engine: &Engine,
    session: &mut Session,
    text: &str,
    frontend: &Arc<TermFrontend>,
    stop: &CancellationToken,
) {
    let cancel = stop.child_token();
    let keyboard = frontend.keyboard();
    keyboard.begin_turn(&cancel);
    keyboard.steer_into(session.controls());
    frontend.begin_turn();
    let before = session.view().usage();
    let started = Instant::now();
    let turn = engine.prompt(session, text, &[], frontend.as_ref(), &cancel);
    // A line sent into the turn with Enter is echoed at once, under what streamed so far.
    let echo = async {
        loop {
            let lines = keyboard.sent().await;
            let color = frontend.color();
            frontend.lines(
                Target::Stdout,
                lines.iter().map(|l| sent_line(l, color)).collect(),
            );
        }
    };
    let outcome = tokio::select! {
        outcome = turn => outcome,
        never = echo => never,
    };
    keyboard.end_turn(outcome.stop == Ok(StopReason::Cancelled));
    frontend.end_turn();
    let color = frontend.color();
    let mut lines = Vec::new();
    match &outcome.stop {
        // The engine's `[error: …]` line said it: one line per failure.
        Err(_) => {}
        // A cancelled call's `[cancelled]` said it already.
        Ok(StopReason::Cancelled) if frontend.said_cancelled() => {}
        Ok(StopReason::Cancelled) => lines.push(style::yellow(color, "cancelled")),
        Ok(StopReason::MaxTokens) => lines.push(style::yellow(
            color,
            "[stopped: the answer reached the model.maxTokens limit]",
        )),
        Ok(StopReason::EndTurn | StopReason::MaxTurnRequests) => {}
    }
    match &outcome.command {
        Some(Command::New {
            archived_as: Some(id),
            ..
        }) => lines.push(sessions::archived_line(id, color)),
        Some(Command::New {
            archived_as: None, ..
        })
        | Some(Command::Compact(_))
        | Some(Command::Undo(_))
        | None => {}
    }
    if outcome.recap.is_some() {
        let context = frontend
            .context()
            .unwrap_or_else(|| engine.context_usage(session));
        let summary = TurnSummary {
            recap: outcome.recap,
            usage: usage_delta(&before, &session.view().usage()),
            context: Some(context),
            elapsed: started.elapsed(),
            mode: Some(session.view().mode()),
        };
        lines.push(render::recap_line(&summary, color));
        if let Some(warning) = small_window(engine, frontend, context).await {
            lines.push(warning);
        }
    }
    frontend.prose(Target::Stdout, lines);
}

/// What Enter during a turn echoes: the line, and where it went.
pub const SENT: &str = "↳ sent to the running turn";

fn sent_line(line: &str, color: bool) -> String {
    let shown = crate::sanitize::visible(line).replace('\n', " ⏎ ");
    format!("{} {}", shown, style::dim(color, SENT))
}

/// `/ask AGENT question`: asks another agent (a configured name or a command line) once; its
/// tool calls show as progress, its questions come to this terminal, Ctrl-C cancels it.
async fn ask_command(
    rest: &str,
    engine: &Engine,
    session: &Session,
    frontend: &Arc<TermFrontend>,
    stop: &CancellationToken,
) {
    let color = frontend.color();
    let (agent, question) = match crate::agent_client::split_first_word(rest) {
        Ok(Some((agent, question))) if !question.is_empty() => (agent, question.to_string()),
        Ok(_) => {
            let usage =
                "usage: /ask AGENT question (AGENT: a name from [agents] or a command line)";
            frontend.lines(Target::Stdout, vec![style::yellow(color, usage)]);
            return;
        }
        Err(e) => {
            let line = e.line(rest.trim());
            let line = style::red(color, &crate::sanitize::visible(&line));
            frontend.lines(Target::Stdout, vec![line]);
            return;
        }
    };
    let cancel = stop.child_token();
    let keyboard = frontend.keyboard();
    keyboard.begin_turn(&cancel);
    frontend.begin_turn();
    let view = session.view();
    let outcome = engine
        .ask_agent(
            view.cwd(),
            view.mode(),
            &agent,
            &question,
            frontend.as_ref(),
            &cancel,
        )
        .await;
    let cancelled = matches!(outcome, Err(crate::agent_client::AgentError::Cancelled));
    keyboard.end_turn(cancelled);
    let mut lines = Vec::new();
    match outcome {
        Ok(answer) => {
            use crate::event::Frontend as _;
            frontend.emit(crate::event::Event::Text(answer.text));
            use crate::agent_client::AgentStop;
            match answer.stop {
                AgentStop::EndTurn => {}
                AgentStop::MaxTokens
                | AgentStop::MaxTurnRequests
                | AgentStop::Refusal
                | AgentStop::Cancelled => lines.push(style::yellow(
                    color,
                    &format!("[the agent stopped: {}]", answer.stop.name()),
                )),
            }
        }
        Err(crate::agent_client::AgentError::Cancelled) => {
            lines.push(style::yellow(color, "cancelled"));
        }
        Err(e) => {
            let line = e.line(super::ask::shown_name(&agent));
            lines.push(style::red(color, &crate::sanitize::visible(&line)));
        }
    }
    frontend.end_turn();
    frontend.lines(Target::Stdout, lines);
}

/// The small-window warning, once per session, when a turn used over half of a small window.
async fn small_window(
    engine: &Engine,
    frontend: &TermFrontend,
    context: crate::event::ContextUsage,
) -> Option<String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SHOWN: AtomicBool = AtomicBool::new(false);
    if SHOWN.load(Ordering::Relaxed) || !banner::small_window_filling(context) {
        return None;
    }
    let kind = engine.model.server_kind().await;
    let line = banner::small_window_warning(context, kind, frontend.color())?;
    SHOWN.store(true, Ordering::Relaxed);
    Some(line)
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

/// Shows the model line when detection completes, above the prompt being edited.
fn spawn_detection(engine: Arc<Engine>, frontend: Arc<TermFrontend>) {
    let tasks = engine.processes.tasks().clone();
    tasks.spawn_until_shutdown(async move {
        let color = frontend.color();
        let lines = match engine.model.info(&CancellationToken::new()).await {
            Ok(info) => {
                let window = (info.context_window > 0).then_some(info.context_window);
                let line = frontend.model_text(&info.name, &info.url, window);
                // A URL where nothing answered a listing: said now, not at the first prompt.
                let warning = info.warning.map(|w| banner::detection_failed(&w, color));
                line.into_iter().chain(warning).collect()
            }
            Err(e) => vec![banner::detection_failed(&e.to_string(), color)],
        };
        if !lines.is_empty() {
            frontend.prose(Target::Stderr, lines);
        }
    });
}

/// Asks the server for its models once, for `/model`'s completion.
fn spawn_model_list(engine: Arc<Engine>, into: Arc<std::sync::Mutex<Vec<String>>>) {
    let tasks = engine.processes.tasks().clone();
    tasks.spawn_until_shutdown(async move {
        if let Ok(list) = engine.model.models(&CancellationToken::new()).await
            && let Ok(mut models) = into.lock()
        {
            *models = list.models;
        }
    });
}

/// Tab completion: `/commands` at the start, `$skills`, `@paths`, session ids after `/load `,
/// and the server's models after `/model `.
struct Completer {
    /// The models the server lists, asked once in the background at start (empty until then,
    /// or when it lists none).
    models: Arc<std::sync::Mutex<Vec<String>>>,
    commands: Vec<String>,
    skills: Vec<String>,
    cwd: PathBuf,
    home: Option<PathBuf>,
    /// The sessions folder, when sessions are on.
    sessions: Option<PathBuf>,
}

impl Complete for Completer {
    fn complete(&self, line: &str, pos: usize) -> (usize, Vec<(String, String)>) {
        let models = self.models.lock().map(|m| m.clone()).unwrap_or_default();
        if let Some(found) = input::complete_argument(line, pos, "/model ", &models) {
            return found;
        }
        if let Some(dir) = &self.sessions
            && let Some(found) = input::complete_load(line, pos, &sessions::ids(dir))
        {
            return found;
        }
        input::complete(
            line,
            pos,
            &self.commands,
            &self.skills,
            &self.cwd,
            self.home.as_deref(),
        )
    }
}
