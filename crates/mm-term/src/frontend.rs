//! The terminal's [`Frontend`]s: interactive ([`TermFrontend`]) and one-shot
//! ([`OneShotFrontend`], `mm -p`). Both write what [`Renderer`] produces; write errors (a closed
//! pipe) are ignored, never a panic.
//!
//! Questions (the permission gate, `ask_user` forms — and any other front-end question, such as
//! one relayed from another agent) all go through [`TermFrontend::ask_permission`] and
//! [`TermFrontend::ask_user`]: one at a time, reading the session's one keyboard, which keeps the
//! keys typed before a question for the next prompt.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use unicode_width::UnicodeWidthStr;

use super::forms::{self, OneShotKeys};
use super::keyboard::Keyboard;
use super::permission;
use super::render::{self, Layout, Out, Renderer, Target};
use super::screen::Screen;
use super::style;
use crate::event::{
    ContextUsage, Event, Form, FormAnswer, Frontend, NetworkAnswer, NetworkQuestion,
    PermissionDecision, PermissionRequest,
};
use crate::relay::{RelayedAnswer, RelayedForm, RelayedPermission};
use crate::sanitize::visible;
use crate::tasks::Tasks;
use mm_agents::relay;

/// The note when a gated call cannot be asked about.
pub const NO_TERMINAL_REJECTED: &str = "gated tool rejected: no terminal to ask (use --yolo)";
/// Why `ask_user` cannot be answered.
pub const NO_TERMINAL: &str = "no terminal to ask";
/// The note when another agent's permission request cannot be put to the user.
pub const NO_TERMINAL_RELAYED: &str =
    "another agent's permission request refused: no terminal to ask";

/// The window's width now, for the live output's box (drawn and erased at the width of the
/// moment: the terminal may have reflowed it since it was drawn).
fn live_width() -> usize {
    super::raw::width().unwrap_or(permission::DEFAULT_WIDTH)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes rendered pieces to the real streams, flushing each.
pub fn write_out(pieces: &[Out]) {
    for piece in pieces {
        match piece.target {
            Target::Stdout => {
                let mut out = io::stdout().lock();
                let _ = out.write_all(piece.text.as_bytes());
                let _ = out.flush();
            }
            Target::Stderr => {
                let mut err = io::stderr().lock();
                let _ = err.write_all(piece.text.as_bytes());
                let _ = err.flush();
            }
        }
    }
}

/// `mm -p`: the final answer on stdout, plain; narration and activity on stderr.
pub struct OneShotFrontend {
    renderer: Mutex<Renderer>,
    color: bool,
    stdin_terminal: bool,
    /// `-q`: nothing on stderr but the questions asked (main.rs prints errors).
    quiet: bool,
    /// stderr is a terminal: a running command's output is shown as it comes.
    stderr_terminal: bool,
    tasks: Tasks,
}

impl OneShotFrontend {
    /// `color`: style stderr (a terminal, NO_COLOR unset); `stdin_terminal`: questions can be
    /// asked on the terminal.
    pub fn new(color: bool, stdin_terminal: bool, tasks: &Tasks) -> Self {
        OneShotFrontend {
            renderer: Mutex::new(Renderer::new(Layout::OneShot, color)),
            color,
            stdin_terminal,
            quiet: false,
            stderr_terminal: true,
            tasks: tasks.clone(),
        }
    }

    /// stderr is not a terminal (a log file): a running command's output is not shown as it
    /// comes, only the call's result with its last lines, so that each line is written once.
    pub fn stderr_terminal(mut self, terminal: bool) -> Self {
        self.stderr_terminal = terminal;
        self
    }

    /// `-q`: the answer on stdout, and on stderr only the questions that need an answer.
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// The answer goes to stdout byte for byte, as the model sent it (stdout is not a
    /// terminal); on a terminal it is shown visibly, as everything else from outside mm is.
    pub fn raw_answer(self, raw: bool) -> Self {
        let renderer = self
            .renderer
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        OneShotFrontend {
            renderer: Mutex::new(renderer.raw_answer(raw)),
            ..self
        }
    }

    /// Writes rendered activity: all of it, or with `-q` the answer alone.
    fn write_activity(&self, mut pieces: Vec<Out>) {
        if self.quiet {
            pieces.retain(|p| p.target == Target::Stdout);
        }
        write_out(&pieces);
    }

    /// The banner named this model at this server (the detected model line says only what it
    /// adds).
    pub fn banner_model(&self, model: Option<(String, String)>) {
        if let Some((name, url)) = model {
            lock(&self.renderer).set_banner_model(&name, &url);
        }
    }

    /// Ends the output after the turn (the answer's line ends with a newline).
    pub fn finish(&self) {
        let pieces = lock(&self.renderer).finish();
        self.write_activity(pieces);
    }

    /// A line on stderr, after whatever was streamed.
    pub fn note(&self, line: &str) {
        let mut r = lock(&self.renderer);
        let mut pieces = Vec::new();
        r.lines(&mut pieces, Target::Stderr, vec![line.to_string()]);
        self.write_activity(pieces);
    }

    /// The context usage last reported.
    pub fn context(&self) -> Option<ContextUsage> {
        lock(&self.renderer).context()
    }

    pub fn color(&self) -> bool {
        self.color
    }
}

#[async_trait]
impl Frontend for OneShotFrontend {
    fn emit(&self, event: Event) {
        if !self.stderr_terminal && matches!(event, Event::ToolCallProgress { .. }) {
            return;
        }
        let pieces = lock(&self.renderer).event(&event);
        self.write_activity(pieces);
    }

    async fn ask_permission(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> PermissionDecision {
        if !self.stdin_terminal {
            self.note(&style::yellow(self.color, NO_TERMINAL_REJECTED));
            return PermissionDecision::RejectOnce;
        }
        if cancel.is_cancelled() {
            return PermissionDecision::RejectOnce;
        }
        // Raw mode and what was typed before discarded, then the question.
        let mut keys = OneShotKeys::enter(&self.tasks);
        let width = super::raw::stderr_width().unwrap_or(permission::DEFAULT_WIDTH);
        let question = permission::question(&request, width, self.color);
        let pieces = {
            let mut r = lock(&self.renderer);
            let mut pieces = r.finish();
            r.lines(&mut pieces, Target::Stderr, question.lines);
            r.previewed(&request.call.id, request.preview.clone());
            pieces
        };
        write_out(&pieces);
        let mut err = io::stderr();
        let _ = write!(err, "{}", question.prompt);
        let (decision, interrupted) = tokio::select! {
            asked = forms::permission_key(&mut keys, &mut err, &request.rule) => asked,
            () = cancel.cancelled() => {
                let _ = writeln!(err);
                (PermissionDecision::RejectOnce, false)
            }
        };
        // Ctrl-C at the question (a key in raw mode) cancels the turn, as SIGINT would.
        if interrupted {
            cancel.cancel();
        }
        decision
    }

    async fn ask_user(&self, form: Form, cancel: &CancellationToken) -> FormAnswer {
        if !self.stdin_terminal {
            return FormAnswer::Unavailable(NO_TERMINAL.to_string());
        }
        let mut keys = OneShotKeys::enter(&self.tasks);
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
        let mut err = io::stderr();
        // Ctrl-C on a question cancels the question, not the turn: the model is told and
        // goes on.
        tokio::select! {
            answer = forms::ask_form(&form, &mut keys, &mut err, self.color) => answer,
            () = cancel.cancelled() => FormAnswer::Cancelled,
        }
    }

    async fn ask_relayed_permission(
        &self,
        request: RelayedPermission,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if !self.stdin_terminal {
            self.note(&style::yellow(self.color, NO_TERMINAL_RELAYED));
            return request.refusal();
        }
        if cancel.is_cancelled() {
            return None;
        }
        let mut keys = OneShotKeys::enter(&self.tasks);
        let width = super::raw::stderr_width().unwrap_or(permission::DEFAULT_WIDTH);
        let question = permission::relayed_question(&request, width, self.color);
        let pieces = {
            let mut r = lock(&self.renderer);
            let mut pieces = r.finish();
            r.lines(&mut pieces, Target::Stderr, question.lines);
            pieces
        };
        write_out(&pieces);
        let mut err = io::stderr();
        let _ = write!(err, "{}", question.prompt);
        let (chosen, interrupted) = tokio::select! {
            asked = forms::relayed_key(&request, &mut keys, &mut err) => asked,
            () = cancel.cancelled() => {
                let _ = writeln!(err);
                (None, false)
            }
        };
        // Ctrl-C at the prompt cancels the turn, as at our own permission prompt; the asked
        // agent is cancelled with it.
        if interrupted {
            cancel.cancel();
        }
        chosen
    }

    async fn ask_relayed_form(
        &self,
        form: RelayedForm,
        cancel: &CancellationToken,
    ) -> RelayedAnswer {
        if !self.stdin_terminal {
            return RelayedAnswer::Unavailable(NO_TERMINAL.to_string());
        }
        let mut keys = OneShotKeys::enter(&self.tasks);
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
        ask_relayed_form(form, &mut keys, &mut io::stderr(), self.color, cancel).await
    }
}

/// Asks another agent's form with the terminal's forms, when its fields are ones they draw.
async fn ask_relayed_form(
    form: RelayedForm,
    keys: &mut dyn forms::Keys,
    out: forms::Out<'_>,
    color: bool,
    cancel: &CancellationToken,
) -> RelayedAnswer {
    let Some(fields) = relay::questions_of(&form.schema) else {
        return RelayedAnswer::Unavailable(relay::FIELD_NOT_DRAWABLE.to_string());
    };
    let ours = Form {
        tool_call_id: form.tool_call_id.clone(),
        questions: fields.into_iter().map(|(_, q)| q).collect(),
    };
    let header = format!(
        "{} asks: {}",
        permission::inline(&form.agent),
        visible(&form.message)
    );
    let _ = writeln!(out, "{}", style::bold(color, &header));
    let answer = tokio::select! {
        answer = forms::ask_form(&ours, keys, out, color) => answer,
        () = cancel.cancelled() => FormAnswer::Cancelled,
    };
    match answer {
        FormAnswer::Accepted(values) => {
            RelayedAnswer::Accepted(relay::content_of(&form.schema, &values))
        }
        FormAnswer::Declined => RelayedAnswer::Declined,
        FormAnswer::Cancelled => RelayedAnswer::Cancelled,
        FormAnswer::Unavailable(why) => RelayedAnswer::Unavailable(why),
    }
}

/// The status line's state ([`render::status_line`]): drawn while mm waits during a turn (for
/// the model, or for a running call), erased before anything else is written.
#[derive(Debug, Default)]
struct SpinnerState {
    /// When the running turn began.
    turn: Option<Instant>,
    /// Whether it is drawn now (not while the answer streams, nor under a question).
    showing: bool,
    /// What runs: `thinking`, or the running call's title.
    what: String,
    /// The characters of answer and reasoning streamed this turn (a token is about 4).
    chars: usize,
    /// The titles of this turn's calls, by id.
    titles: HashMap<String, String>,
    /// The window's width at the last draw.
    width: usize,
    drawn: bool,
    /// The columns of the line drawn, the cursor after it (0 when the type-ahead's row under
    /// it left the cursor at the start of its row).
    columns: usize,
    /// The spinner's frame.
    frame: usize,
}

impl SpinnerState {
    fn tokens(&self) -> u64 {
        (self.chars / 4) as u64
    }
}

/// Draws the status line in place while a turn runs (and the type-ahead under it).
fn draw_status(s: &mut SpinnerState, keyboard: &Keyboard, color: bool) {
    let Some(since) = s.turn else {
        return;
    };
    // Read at each draw: a line cut to a wider window than it is now would wrap, and each
    // redraw (`\r` goes to its last row only) would leave a spinner row in the scrollback.
    s.width = super::raw::stderr_width().unwrap_or(permission::DEFAULT_WIDTH);
    let line = render::status_line(
        FRAMES[s.frame],
        &s.what,
        since.elapsed(),
        s.tokens(),
        s.width,
        color,
    );
    let typed = keyboard.typed_ahead();
    let mut text = String::new();
    if s.drawn {
        let climb = render::status_climb(s.columns, s.width);
        if !climb.is_empty() {
            text.push_str(&climb);
            text.push_str("\r\x1b[J");
        }
    }
    text.push_str(&render::status_rows(&line, &typed, s.width));
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
    s.drawn = true;
    s.columns = if typed.is_empty() {
        style::without_colour(&line).width()
    } else {
        0
    };
}

/// The interactive front end: streams the answer to stdout, asks questions on the terminal.
pub struct TermFrontend {
    renderer: Mutex<Renderer>,
    color: bool,
    /// Whether the spinner may be drawn (stderr is a terminal).
    spinner_enabled: bool,
    spinner: Arc<Mutex<SpinnerState>>,
    /// The model line last shown, so detection and events do not repeat it.
    model_shown: Mutex<Option<(String, String, Option<u64>)>>,
    /// The model and server the banner named.
    banner_model: Mutex<Option<(String, String)>>,
    keyboard: Arc<Keyboard>,
    screen: Arc<Screen>,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
    /// The running call's last lines, redrawn in place (stdout is a terminal), or `None`: the
    /// renderer appends them.
    live: Option<Arc<Mutex<render::LiveOutput>>>,
}

/// What the status line says while the model is asked.
const THINKING: &str = "thinking";

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl TermFrontend {
    /// `raw_answer`: stdout is not a terminal, the answer goes to it byte for byte
    /// ([`Renderer::raw_answer`]).
    pub fn new(
        color: bool,
        spinner_enabled: bool,
        raw_answer: bool,
        keyboard: Arc<Keyboard>,
        screen: Arc<Screen>,
        tasks: &Tasks,
    ) -> Arc<Self> {
        let frontend = Arc::new(TermFrontend {
            renderer: Mutex::new(Renderer::new(Layout::Interactive, color).raw_answer(raw_answer)),
            color,
            spinner_enabled,
            spinner: Arc::new(Mutex::new(SpinnerState::default())),
            model_shown: Mutex::new(None),
            banner_model: Mutex::new(None),
            keyboard,
            screen,
            asking: tokio::sync::Mutex::new(()),
            live: (!raw_answer).then(|| Arc::new(Mutex::new(render::LiveOutput::default()))),
        });
        if spinner_enabled {
            let state = Arc::clone(&frontend.spinner);
            let keyboard = Arc::clone(&frontend.keyboard);
            let live = frontend.live.clone();
            let color = frontend.color;
            tasks.spawn_until_shutdown(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    let mut s = lock(&state);
                    if s.turn.is_some() && keyboard.take_clear() {
                        // Ctrl-L during the turn: the screen is cleared now, the status line
                        // drawn again at its top.
                        let mut out = io::stdout().lock();
                        let _ = out.write_all(b"\x1b[H\x1b[2J");
                        let _ = out.flush();
                        if let Some(live) = &live {
                            lock(live).cleared();
                        }
                    }
                    if s.showing {
                        s.frame = (s.frame + 1) % FRAMES.len();
                        draw_status(&mut s, &keyboard, color);
                    }
                }
            });
        }
        frontend
    }

    pub fn color(&self) -> bool {
        self.color
    }

    pub fn keyboard(&self) -> &Arc<Keyboard> {
        &self.keyboard
    }

    /// The banner named this model at this server.
    pub fn banner_model(&self, model: Option<(String, String)>) {
        if let Some((name, url)) = &model {
            lock(&self.renderer).set_banner_model(name, url);
        }
        *lock(&self.banner_model) = model;
    }

    /// A turn starts: show the status line; the answer wraps at the window's width.
    pub fn begin_turn(&self) {
        lock(&self.renderer).set_width(super::raw::width());
        {
            let mut s = lock(&self.spinner);
            s.turn = Some(Instant::now());
            s.chars = 0;
            s.titles.clear();
        }
        self.start_spinner(THINKING);
    }

    /// The turn ended: write what was held back, stop the status line.
    pub fn end_turn(&self) {
        let mut s = self.stop_spinner();
        s.turn = None;
        drop(s);
        let _s = self.stop_spinner();
        if let Some(live) = &self.live {
            self.screen
                .print(Target::Stdout, &lock(live).end(live_width()));
        }
        let pieces = lock(&self.renderer).finish();
        self.write(&pieces);
    }

    /// The last line shown says a call was cancelled: the turn's `cancelled` would repeat it.
    pub fn said_cancelled(&self) -> bool {
        lock(&self.renderer).said_cancelled()
    }

    /// The context usage last reported.
    pub fn context(&self) -> Option<ContextUsage> {
        lock(&self.renderer).context()
    }

    /// Writes rendered pieces, erasing the live output's box first when it is drawn (the call's
    /// next output draws it again under them).
    fn write(&self, pieces: &[Out]) {
        if let (Some(live), false) = (&self.live, pieces.is_empty()) {
            let mut live = lock(live);
            if live.drawn() {
                self.screen.print(Target::Stdout, &live.erase(live_width()));
            }
        }
        for piece in pieces {
            self.screen.print(piece.target, &piece.text);
        }
    }

    /// Lines on `target`, each at the start of a line (above the prompt while one is shown).
    pub fn lines(&self, target: Target, lines: Vec<String>) {
        let _s = self.stop_spinner();
        let mut pieces = Vec::new();
        lock(&self.renderer).lines(&mut pieces, target, lines);
        self.write(&pieces);
    }

    /// Lines of prose on `target` (the recap, warnings, the banner), wrapped at word boundaries
    /// for the window so that no word is split.
    pub fn prose(&self, target: Target, lines: Vec<String>) {
        self.lines(target, render::wrap_lines(lines, super::raw::width()));
    }

    /// Shows the model line, unless the same one was shown already.
    pub fn show_model(&self, name: &str, url: &str, context_window: Option<u64>) {
        if let Some(line) = self.model_text(name, url, context_window) {
            self.lines(Target::Stderr, vec![line]);
        }
    }

    /// The model line, `None` when the same was shown already.
    pub fn model_text(&self, name: &str, url: &str, context_window: Option<u64>) -> Option<String> {
        let key = (name.to_string(), url.to_string(), context_window);
        let mut shown = lock(&self.model_shown);
        if shown.as_ref() == Some(&key) {
            return None;
        }
        *shown = Some(key);
        let banner = lock(&self.banner_model).clone();
        Some(super::banner::model_line(
            name,
            url,
            context_window,
            banner.as_ref(),
            self.color,
        ))
    }

    /// Shows the status line (drawn at once, then redrawn by the tick: no gap after output).
    fn start_spinner(&self, what: &str) {
        if self.spinner_enabled {
            let mut s = lock(&self.spinner);
            s.showing = true;
            s.what = what.to_string();
            draw_status(&mut s, &self.keyboard, self.color);
        }
    }

    /// Stops and erases the spinner; the guard keeps it from drawing while output is written.
    fn stop_spinner(&self) -> MutexGuard<'_, SpinnerState> {
        let mut s = lock(&self.spinner);
        s.showing = false;
        if s.drawn {
            // The status line (all the rows a narrowed window made of it) and the type-ahead's
            // row under it, if any.
            let width = super::raw::stderr_width().unwrap_or(permission::DEFAULT_WIDTH);
            let text = format!("{}\r\x1b[J", render::status_climb(s.columns, width));
            let mut err = io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
            s.drawn = false;
        }
        s
    }

    /// Ends what was streamed so far (before a question is written).
    fn settle(&self, lines: Vec<String>) {
        let _s = self.stop_spinner();
        let mut r = lock(&self.renderer);
        let mut pieces = r.finish();
        r.lines(&mut pieces, Target::Stdout, lines);
        drop(r);
        self.write(&pieces);
    }
}

#[async_trait]
impl Frontend for TermFrontend {
    fn emit(&self, event: Event) {
        // A `task` call's child shows as lines of the call (render::child_shown).
        let event = match event {
            Event::Child(child) => match render::child_shown(&child) {
                Some(shown) => shown,
                None => return,
            },
            event => event,
        };
        if let Event::ModelDetected {
            name,
            url,
            context_window,
        } = &event
        {
            self.show_model(name, url, *context_window);
            return;
        }
        // What the status line shows once the event is written: `None` keeps it off (the
        // answer streams on its line).
        let then: Option<String> = {
            let mut s = lock(&self.spinner);
            match &event {
                Event::Text(t) | Event::Thought(t) => {
                    s.chars += t.chars().count();
                    None
                }
                Event::ToolCallStarted(call) => {
                    s.titles.insert(call.id.clone(), call.title.clone());
                    None
                }
                Event::ToolCallRunning { id } | Event::ToolCallProgress { id, .. } => {
                    Some(s.titles.get(id).cloned().unwrap_or_default())
                }
                Event::ToolCallFinished(_) => Some(THINKING.to_string()),
                // The wait is the status line's until the answer starts.
                Event::Waiting(waiting) => Some(waiting.line()),
                _ => s.showing.then(|| s.what.clone()),
            }
        };
        let silent = matches!(
            event,
            Event::ContextUsage(_) | Event::ToolCallRunning { .. }
        );
        let spinner = if silent {
            None
        } else {
            Some(self.stop_spinner())
        };
        let pieces = match (&event, &self.live) {
            (Event::ToolCallProgress { id, text }, Some(live)) => {
                let drawn = lock(live).push(id, text, live_width(), self.color);
                self.screen.print(Target::Stdout, &drawn);
                Vec::new()
            }
            (Event::ToolCallFinished(_), Some(live)) => {
                self.screen
                    .print(Target::Stdout, &lock(live).end(live_width()));
                lock(&self.renderer).event(&event)
            }
            _ => lock(&self.renderer).event(&event),
        };
        self.write(&pieces);
        drop(spinner);
        if let Some(what) = then {
            self.start_spinner(&what);
        }
    }

    async fn ask_permission(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> PermissionDecision {
        if cancel.is_cancelled() {
            return PermissionDecision::RejectOnce;
        }
        let _one = self.asking.lock().await;
        // Keys typed until now are set aside before the question shows: they never answer it.
        let mut keys = self.keyboard.question().await;
        let width = super::raw::width().unwrap_or(permission::DEFAULT_WIDTH);
        let question = permission::question(&request, width, self.color);
        self.settle(question.lines);
        lock(&self.renderer).previewed(&request.call.id, request.preview.clone());
        let mut out = io::stdout();
        let _ = write!(out, "{}", question.prompt);
        let (decision, interrupted) = tokio::select! {
            asked = forms::permission_key(&mut keys, &mut out, &request.rule) => asked,
            () = cancel.cancelled() => {
                let _ = writeln!(out);
                (PermissionDecision::RejectOnce, false)
            }
        };
        drop(keys);
        // Ctrl-C at the question cancels the turn, as it does anywhere else in a turn.
        if interrupted {
            cancel.cancel();
        }
        decision
    }

    async fn ask_user(&self, form: Form, cancel: &CancellationToken) -> FormAnswer {
        if cancel.is_cancelled() {
            return FormAnswer::Cancelled;
        }
        let _one = self.asking.lock().await;
        let mut keys = self.keyboard.question().await;
        self.settle(Vec::new());
        let mut out = io::stdout();
        // Ctrl-C on a question cancels the question, not the turn: the model is told and
        // goes on.
        tokio::select! {
            answer = forms::ask_form(&form, &mut keys, &mut out, self.color) => answer,
            () = cancel.cancelled() => {
                let _ = writeln!(out);
                FormAnswer::Cancelled
            }
        }
    }

    async fn ask_relayed_permission(
        &self,
        request: RelayedPermission,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if cancel.is_cancelled() {
            return None;
        }
        let _one = self.asking.lock().await;
        // Keys typed until now are set aside before the question shows: they never answer it.
        let mut keys = self.keyboard.question().await;
        let width = super::raw::width().unwrap_or(permission::DEFAULT_WIDTH);
        let question = permission::relayed_question(&request, width, self.color);
        self.settle(question.lines);
        let mut out = io::stdout();
        let _ = write!(out, "{}", question.prompt);
        let (chosen, interrupted) = tokio::select! {
            asked = forms::relayed_key(&request, &mut keys, &mut out) => asked,
            () = cancel.cancelled() => {
                let _ = writeln!(out);
                (None, false)
            }
        };
        drop(keys);
        // Ctrl-C at the prompt cancels the turn, as at our own permission prompt; the asked
        // agent is cancelled with it.
        if interrupted {
            cancel.cancel();
        }
        chosen
    }

    async fn ask_relayed_form(
        &self,
        form: RelayedForm,
        cancel: &CancellationToken,
    ) -> RelayedAnswer {
        if cancel.is_cancelled() {
            return RelayedAnswer::Cancelled;
        }
        let _one = self.asking.lock().await;
        let mut keys = self.keyboard.question().await;
        self.settle(Vec::new());
        ask_relayed_form(form, &mut keys, &mut io::stdout(), self.color, cancel).await
    }

    async fn ask_network(
        &self,
        question: NetworkQuestion,
        cancel: &CancellationToken,
    ) -> NetworkAnswer {
        if cancel.is_cancelled() {
            return NetworkAnswer::No;
        }
        let _one = self.asking.lock().await;
        // Keys typed until now are set aside before the question shows: they never answer it.
        let mut keys = self.keyboard.question().await;
        let question = permission::network_question(&question, self.color);
        self.settle(question.lines);
        let mut out = io::stdout();
        let _ = write!(out, "{}", question.prompt);
        let (answer, interrupted) = tokio::select! {
            asked = forms::network_key(&mut keys, &mut out) => asked,
            () = cancel.cancelled() => {
                let _ = writeln!(out);
                (NetworkAnswer::No, false)
            }
        };
        drop(keys);
        // Ctrl-C at the question cancels the turn, as at the permission question.
        if interrupted {
            cancel.cancel();
        }
        answer
    }
}
