//! The prompt on the screen: drawing the line being edited, printing above it (a line that
//! arrives while the user types, such as the model line when detection completes), and the
//! read loop that feeds the session's keys to the editor.

use std::io::{self, Write};
use std::sync::{Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::editor::{Complete, Editor, Outcome, PROMPT};
use super::keyboard::Keyboard;
use super::layout;
use super::raw;
use super::render::Target;

/// Columns when the width cannot be read.
const DEFAULT_WIDTH: usize = 80;

#[derive(Debug, Clone)]
struct Shown {
    /// `> `, or what stands before the line while the history is searched.
    prompt: String,
    buf: String,
    cursor: usize,
    /// The cursor's row below the prompt's first row.
    row: usize,
    frame: layout::Frame,
}

/// The terminal's output while a prompt may be on it. Every write of the interactive session
/// goes through here, so nothing is written into the middle of the line being edited.
#[derive(Debug, Default)]
pub struct Screen {
    shown: Mutex<Option<Shown>>,
}

fn width() -> usize {
    raw::width().unwrap_or(DEFAULT_WIDTH)
}

fn out(text: &str) {
    let mut o = io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

impl Screen {
    pub fn new() -> Self {
        Screen::default()
    }

    fn lock(&self) -> MutexGuard<'_, Option<Shown>> {
        self.shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Draws (or redraws) the prompt with this line and cursor.
    pub fn show(&self, buf: &str, cursor: usize) {
        self.show_after(PROMPT, buf, cursor);
    }

    /// Draws (or redraws) `prompt` and this line and cursor.
    pub fn show_after(&self, prompt: &str, buf: &str, cursor: usize) {
        let mut shown = self.lock();
        let row = shown.as_ref().map_or(0, |s| s.row);
        let frame = layout::frame(prompt, buf, cursor, width());
        let (text, row) = layout::draw(row, &frame);
        out(&text);
        *shown = Some(Shown {
            prompt: prompt.to_string(),
            buf: buf.to_string(),
            cursor,
            row,
            frame,
        });
    }

    /// Leaves the prompt as it is on the screen, `mark` after it, the cursor on a new line.
    pub fn leave(&self, mark: &str) {
        if let Some(s) = self.lock().take() {
            out(&layout::leave(s.row, &s.frame, mark));
        }
    }

    /// Writes `text` (whole lines) on `target`: above the prompt when one is shown.
    pub fn print(&self, target: Target, text: &str) {
        let mut shown = self.lock();
        if let Some(s) = shown.as_ref() {
            let mut clear = String::new();
            if s.row > 0 {
                clear.push_str(&format!("\x1b[{}A", s.row));
            }
            clear.push_str("\r\x1b[J");
            out(&clear);
        }
        match target {
            Target::Stdout => out(text),
            Target::Stderr => {
                let mut e = io::stderr().lock();
                let _ = e.write_all(text.as_bytes());
                let _ = e.flush();
            }
        }
        if let Some(s) = shown.as_mut() {
            let frame = layout::frame(&s.prompt, &s.buf, s.cursor, width());
            let (text, row) = layout::draw(0, &frame);
            out(&text);
            s.row = row;
            s.frame = frame;
        }
    }

    /// The window changed size: the prompt is drawn again whole, from its first row. The
    /// terminal has reflowed the rows it was on to the new width (tmux, VTE, iTerm2, kitty and
    /// Windows Terminal do), so the cursor is on the row the new width puts it on.
    pub fn resized(&self) {
        let mut shown = self.lock();
        if let Some(s) = shown.as_mut() {
            let frame = layout::frame(&s.prompt, &s.buf, s.cursor, width());
            let (text, row) = layout::draw(frame.cursor.0, &frame);
            out(&text);
            s.row = row;
            s.frame = frame;
        }
    }

    /// Ctrl-L: clears the screen; the prompt is drawn again at the top.
    pub fn clear(&self) {
        let mut shown = self.lock();
        out("\x1b[H\x1b[2J");
        if let Some(s) = shown.as_mut() {
            s.row = 0;
        }
    }
}

/// What one prompt read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// Ctrl-C; `empty`: on an empty line; `first`: before any other key at this prompt.
    Interrupted {
        empty: bool,
        first: bool,
    },
    /// Ctrl-D on an empty line, or the terminal is gone.
    Eof,
    /// `stop` fired (SIGTERM, SIGHUP).
    Stopped,
}

/// Reads one line at the prompt: keys from the session's keyboard (typed ahead or new) go to
/// the editor; the keys that arrived together are handled before the line is drawn again.
pub async fn read_line(
    screen: &Screen,
    keyboard: &Keyboard,
    editor: &mut Editor,
    completer: &dyn Complete,
    tty: Option<&raw::RawMode>,
    stop: &CancellationToken,
) -> Read {
    editor.start();
    screen.show(editor.text(), editor.cursor());
    loop {
        let mut key = tokio::select! {
            biased;
            () = stop.cancelled() => {
                screen.leave("");
                return Read::Stopped;
            }
            key = keyboard.next_key() => key,
        };
        let mut redraw = false;
        loop {
            match editor.key(key, completer) {
                Outcome::Redraw => redraw = true,
                Outcome::Nothing => {}
                Outcome::Submit(line) => {
                    // The line as it was when Enter came, the cursor after it.
                    screen.show(&line, line.len());
                    screen.leave("");
                    return Read::Line(line);
                }
                Outcome::Interrupt { empty, first } => {
                    if redraw {
                        screen.show_after(&editor.prompt(), editor.text(), editor.cursor());
                    }
                    screen.leave("^C");
                    return Read::Interrupted { empty, first };
                }
                Outcome::Eof | Outcome::Hangup => {
                    screen.leave("");
                    return Read::Eof;
                }
                Outcome::Suspend => {
                    screen.leave("");
                    if let Some(tty) = tty {
                        tty.suspend();
                    }
                    redraw = true;
                }
                Outcome::ClearScreen => {
                    screen.clear();
                    redraw = true;
                }
                Outcome::List(items) => {
                    screen.show_after(&editor.prompt(), editor.text(), editor.cursor());
                    let mut text = layout::columns(&items, width()).join("\n");
                    text.push('\n');
                    screen.print(Target::Stdout, &text);
                }
            }
            match keyboard.try_key() {
                Some(next) => key = next,
                None => break,
            }
        }
        if redraw {
            screen.show_after(&editor.prompt(), editor.text(), editor.cursor());
        }
    }
}
