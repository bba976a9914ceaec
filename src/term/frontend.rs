//! The terminal's [`Frontend`]s: interactive ([`TermFrontend`]) and one-shot
//! ([`OneShotFrontend`], `mm -p`). Both write what [`Renderer`] produces; write errors (a closed
//! pipe) are ignored, never a panic.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::forms;
use super::render::{self, Layout, Out, Renderer, Target};
use super::style;
use crate::event::{Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionRequest};
use crate::relay::{self, RelayedAnswer, RelayedForm, RelayedPermission};

/// The note when a gated call cannot be asked about.
pub const NO_TERMINAL_REJECTED: &str = "gated tool rejected: no terminal to ask (use --yolo)";
/// Why `ask_user` cannot be answered.
pub const NO_TERMINAL: &str = "no terminal to ask";
/// The note when another agent's permission request cannot be put to the user.
pub const NO_TERMINAL_RELAYED: &str =
    "another agent's permission request refused: no terminal to ask";

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

/// `mm -p`: the answer's text on stdout as it streams, plain; activity on stderr.
pub struct OneShotFrontend {
    renderer: Mutex<Renderer>,
    color: bool,
    stdin_terminal: bool,
}

impl OneShotFrontend {
    /// `color`: style stderr (a terminal, NO_COLOR unset); `stdin_terminal`: questions can be
    /// asked on the terminal.
    pub fn new(color: bool, stdin_terminal: bool) -> Self {
        OneShotFrontend {
            renderer: Mutex::new(Renderer::new(Layout::OneShot, color)),
            color,
            stdin_terminal,
        }
    }

    /// Ends the output after the turn (the answer's line, on stderr when stdout had no newline).
    pub fn finish(&self) {
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
    }

    /// A line on stderr, after whatever was streamed.
    pub fn note(&self, line: &str) {
        let mut r = lock(&self.renderer);
        let mut pieces = Vec::new();
        r.lines(&mut pieces, Target::Stderr, vec![line.to_string()]);
        write_out(&pieces);
    }
}

#[async_trait]
impl Frontend for OneShotFrontend {
    fn emit(&self, event: Event) {
        let pieces = lock(&self.renderer).event(&event);
        write_out(&pieces);
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
        let prompt = render::permission_prompt(&request.call, self.color);
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
        let asked = tokio::task::spawn_blocking(move || {
            let mut err = io::stderr();
            let _ = write!(err, "{prompt}");
            forms::permission_key(&mut err).0
        });
        tokio::select! {
            asked = asked => asked.unwrap_or(PermissionDecision::RejectOnce),
            () = cancel.cancelled() => PermissionDecision::RejectOnce,
        }
    }

    async fn ask_user(&self, form: Form, cancel: &CancellationToken) -> FormAnswer {
        if !self.stdin_terminal {
            return FormAnswer::Unavailable(NO_TERMINAL.to_string());
        }
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
        let color = self.color;
        let asked =
            tokio::task::spawn_blocking(move || forms::ask_form(&form, &mut io::stderr(), color));
        tokio::select! {
            asked = asked => asked.unwrap_or_else(|e| FormAnswer::Unavailable(e.to_string())),
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
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
        let color = self.color;
        let asked = tokio::task::spawn_blocking(move || {
            let mut err = io::stderr();
            let _ = write!(err, "{}", forms::relayed_prompt(&request, color));
            forms::relayed_key(&request, &mut err)
        });
        let (chosen, interrupted) = tokio::select! {
            asked = asked => asked.unwrap_or((None, false)),
            () = cancel.cancelled() => (None, false),
        };
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
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
        ask_relayed_form(form, self.color, cancel, io::stderr).await
    }
}

/// Asks another agent's form with the terminal's forms, when its fields are ones they draw.
async fn ask_relayed_form<W: Write + 'static>(
    form: RelayedForm,
    color: bool,
    cancel: &CancellationToken,
    out: fn() -> W,
) -> RelayedAnswer {
    let Some(fields) = relay::questions_of(&form.schema) else {
        return RelayedAnswer::Unavailable(relay::FIELD_NOT_DRAWABLE.to_string());
    };
    let ours = Form {
        tool_call_id: form.tool_call_id.clone(),
        questions: fields.into_iter().map(|(_, q)| q).collect(),
    };
    let header = format!("{} asks: {}", form.agent, form.message);
    let asked = tokio::task::spawn_blocking(move || {
        let mut w = out();
        let _ = writeln!(w, "{}", style::bold(color, &header));
        forms::ask_form(&ours, &mut w, color)
    });
    let answer = tokio::select! {
        asked = asked => asked.unwrap_or_else(|e| FormAnswer::Unavailable(e.to_string())),
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

/// The spinner's state: shown from the start of a wait until the first output.
#[derive(Debug, Default)]
struct SpinnerState {
    since: Option<Instant>,
    drawn: bool,
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
}

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl TermFrontend {
    pub fn new(color: bool, spinner_enabled: bool) -> Arc<Self> {
        let frontend = Arc::new(TermFrontend {
            renderer: Mutex::new(Renderer::new(Layout::Interactive, color)),
            color,
            spinner_enabled,
            spinner: Arc::new(Mutex::new(SpinnerState::default())),
            model_shown: Mutex::new(None),
        });
        if spinner_enabled {
            let state = Arc::clone(&frontend.spinner);
            let color = frontend.color;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                let mut frame = 0usize;
                loop {
                    tick.tick().await;
                    let mut s = lock(&state);
                    if let Some(since) = s.since {
                        frame = (frame + 1) % FRAMES.len();
                        let text = format!(
                            "\r{} {}\x1b[K",
                            FRAMES[frame],
                            style::dim(color, &format!("{:.1}s", since.elapsed().as_secs_f64()))
                        );
                        let mut err = io::stderr().lock();
                        let _ = err.write_all(text.as_bytes());
                        let _ = err.flush();
                        s.drawn = true;
                    }
                }
            });
        }
        frontend
    }

    pub fn color(&self) -> bool {
        self.color
    }

    /// A turn starts: show the spinner.
    pub fn begin_turn(&self) {
        self.start_spinner();
    }

    /// The turn ended: write what was held back, stop the spinner.
    pub fn end_turn(&self) {
        let _s = self.stop_spinner();
        let pieces = lock(&self.renderer).finish();
        write_out(&pieces);
    }

    /// The context usage last reported.
    pub fn context(&self) -> Option<crate::event::ContextUsage> {
        lock(&self.renderer).context()
    }

    /// Lines on `target`, each at the start of a line.
    pub fn lines(&self, target: Target, lines: Vec<String>) {
        let _s = self.stop_spinner();
        let mut pieces = Vec::new();
        lock(&self.renderer).lines(&mut pieces, target, lines);
        write_out(&pieces);
    }

    /// Shows the model line, unless the same one was shown already.
    pub fn show_model(&self, name: &str, url: &str, context_window: Option<u64>) {
        if let Some(lines) = self.model_text(name, url, context_window) {
            self.lines(Target::Stderr, lines);
        }
    }

    /// The model line and its warning, `None` when the same was shown already.
    pub fn model_text(
        &self,
        name: &str,
        url: &str,
        context_window: Option<u64>,
    ) -> Option<Vec<String>> {
        let key = (name.to_string(), url.to_string(), context_window);
        let mut shown = lock(&self.model_shown);
        if shown.as_ref() == Some(&key) {
            return None;
        }
        *shown = Some(key);
        Some(super::banner::model_lines(
            name,
            url,
            context_window,
            self.color,
        ))
    }

    fn start_spinner(&self) {
        if self.spinner_enabled {
            let mut s = lock(&self.spinner);
            s.since = Some(Instant::now());
        }
    }

    /// Stops and erases the spinner; the guard keeps it from drawing while output is written.
    fn stop_spinner(&self) -> MutexGuard<'_, SpinnerState> {
        let mut s = lock(&self.spinner);
        s.since = None;
        if s.drawn {
            let mut err = io::stderr().lock();
            let _ = err.write_all(b"\r\x1b[K");
            let _ = err.flush();
            s.drawn = false;
        }
        s
    }
}

#[async_trait]
impl Frontend for TermFrontend {
    fn emit(&self, event: Event) {
        if let Event::ModelDetected {
            name,
            url,
            context_window,
        } = &event
        {
            self.show_model(name, url, *context_window);
            return;
        }
        let waits_for_model = matches!(event, Event::ToolCallFinished(_));
        let silent = matches!(
            event,
            Event::ContextUsage(_) | Event::ToolCallRunning { .. }
        );
        let spinner = if silent {
            None
        } else {
            Some(self.stop_spinner())
        };
        let pieces = lock(&self.renderer).event(&event);
        write_out(&pieces);
        drop(spinner);
        if waits_for_model {
            self.start_spinner();
        }
    }

    async fn ask_permission(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> PermissionDecision {
        let prompt = render::permission_prompt(&request.call, self.color);
        {
            let _s = self.stop_spinner();
            let pieces = lock(&self.renderer).finish();
            write_out(&pieces);
        }
        let asked = tokio::task::spawn_blocking(move || {
            let mut out = io::stdout();
            let _ = write!(out, "{prompt}");
            forms::permission_key(&mut out)
        });
        let (decision, interrupted) = tokio::select! {
            asked = asked => asked.unwrap_or((PermissionDecision::RejectOnce, false)),
            () = cancel.cancelled() => (PermissionDecision::RejectOnce, false),
        };
        // Ctrl-C at the prompt cancels the turn, as it does anywhere else in a turn.
        if interrupted {
            cancel.cancel();
        }
        decision
    }

    async fn ask_user(&self, form: Form, cancel: &CancellationToken) -> FormAnswer {
        {
            let _s = self.stop_spinner();
            let pieces = lock(&self.renderer).finish();
            write_out(&pieces);
        }
        let color = self.color;
        let asked =
            tokio::task::spawn_blocking(move || forms::ask_form(&form, &mut io::stdout(), color));
        // Ctrl-C on a question cancels the question, not the turn: the model is told and
        // goes on.
        tokio::select! {
            asked = asked => asked.unwrap_or_else(|e| FormAnswer::Unavailable(e.to_string())),
            () = cancel.cancelled() => FormAnswer::Cancelled,
        }
    }

    async fn ask_relayed_permission(
        &self,
        request: RelayedPermission,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let prompt = forms::relayed_prompt(&request, self.color);
        {
            let _s = self.stop_spinner();
            let pieces = lock(&self.renderer).finish();
            write_out(&pieces);
        }
        let asked = tokio::task::spawn_blocking(move || {
            let mut out = io::stdout();
            let _ = write!(out, "{prompt}");
            forms::relayed_key(&request, &mut out)
        });
        let (chosen, interrupted) = tokio::select! {
            asked = asked => asked.unwrap_or((None, false)),
            () = cancel.cancelled() => (None, false),
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
        {
            let _s = self.stop_spinner();
            let pieces = lock(&self.renderer).finish();
            write_out(&pieces);
        }
        ask_relayed_form(form, self.color, cancel, io::stdout).await
    }
}
