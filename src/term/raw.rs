//! Single keys and short answers read from the terminal in raw mode, for the permission prompt
//! and `ask_user` forms. Raw mode lives in a guard: it is restored on every path (an answer, an
//! error, end of input, a panic).
//!
//! These calls block: run them on a blocking thread.

use std::io::{self, Write};
use std::os::fd::AsFd;

use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};

/// The terminal's settings, saved to be put back.
pub struct RawGuard {
    saved: Termios,
}

impl RawGuard {
    /// Puts stdin's terminal in raw mode (no line buffering, no echo, Ctrl-C as a key); output
    /// processing stays on so `\n` still starts a new line. `None` when stdin is not a terminal.
    pub fn enter() -> Option<RawGuard> {
        let stdin = io::stdin();
        let saved = termios::tcgetattr(stdin.as_fd()).ok()?;
        let mut raw = saved.clone();
        raw.local_flags &=
            !(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG | LocalFlags::IEXTEN);
        raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSADRAIN, &raw).ok()?;
        Some(RawGuard { saved })
    }
}

impl Drop for RawGuard {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(io::stdin().as_fd(), SetArg::TCSADRAIN, &self.saved);
    }
}

/// Saves the terminal's settings at start, to restore them when the process is told to stop
/// while some part of it had the terminal in raw mode.
pub fn save() -> Option<Termios> {
    termios::tcgetattr(io::stdin().as_fd()).ok()
}

pub fn restore(saved: &Termios) {
    let _ = termios::tcsetattr(io::stdin().as_fd(), SetArg::TCSANOW, saved);
}

/// A key as the prompts understand it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    Backspace,
    /// Ctrl-C.
    Interrupt,
    /// Ctrl-D, or the end of input.
    Eof,
    Escape,
    Other,
}

/// Reads one key (raw mode must be on).
pub fn read_key() -> Key {
    let mut buf = [0u8; 16];
    let n = loop {
        match nix::unistd::read(io::stdin().as_fd(), &mut buf) {
            Ok(n) => break n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return Key::Eof,
        }
    };
    decode(&buf[..n])
}

/// What the bytes of one read mean.
pub fn decode(bytes: &[u8]) -> Key {
    match bytes {
        [] | [0x04, ..] => Key::Eof,
        [0x03, ..] => Key::Interrupt,
        [b'\r', ..] | [b'\n', ..] => Key::Enter,
        [0x7f, ..] | [0x08, ..] => Key::Backspace,
        [0x1b] => Key::Escape,
        [0x1b, ..] => Key::Other,
        _ => match std::str::from_utf8(bytes) {
            Ok(s) => s.chars().next().map_or(Key::Other, |c| {
                if c.is_control() { Key::Other } else { Key::Char(c) }
            }),
            Err(_) => Key::Other,
        },
    }
}

/// How a short answer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineEnd {
    Line(String),
    Interrupt,
    Eof,
    Escape,
}

/// Reads a line with echo and backspace, in raw mode (so Ctrl-C is an answer, not a signal that
/// would leave this read behind, stealing the next prompt's input).
pub fn read_line(out: &mut dyn Write) -> LineEnd {
    let Some(_guard) = RawGuard::enter() else {
        return LineEnd::Eof;
    };
    let mut line = String::new();
    loop {
        match read_key() {
            Key::Char(c) => {
                line.push(c);
                let _ = write!(out, "{c}");
            }
            Key::Backspace => {
                if line.pop().is_some() {
                    let _ = write!(out, "\x08 \x08");
                }
            }
            Key::Enter => {
                let _ = writeln!(out);
                let _ = out.flush();
                return LineEnd::Line(line);
            }
            Key::Interrupt => {
                let _ = writeln!(out, "^C");
                return LineEnd::Interrupt;
            }
            Key::Eof if line.is_empty() => {
                let _ = writeln!(out);
                return LineEnd::Eof;
            }
            Key::Escape => {
                let _ = writeln!(out);
                return LineEnd::Escape;
            }
            Key::Eof | Key::Other => {}
        }
        let _ = out.flush();
    }
}

/// Reads one of `keys` (case-insensitive); `Enter` gives `on_enter` when set. `None` on Ctrl-C,
/// Escape or the end of input, with `Some(Err(key))` distinguishing how: see [`Choice`].
pub fn read_choice(keys: &[char], on_enter: Option<char>) -> Choice {
    let Some(_guard) = RawGuard::enter() else {
        return Choice::Eof;
    };
    loop {
        match read_key() {
            Key::Char(c) => {
                let lower = c.to_ascii_lowercase();
                if keys.contains(&lower) {
                    return Choice::Key(lower);
                }
            }
            Key::Enter => {
                if let Some(k) = on_enter {
                    return Choice::Key(k);
                }
            }
            Key::Interrupt => return Choice::Interrupt,
            Key::Eof => return Choice::Eof,
            Key::Escape => return Choice::Escape,
            Key::Backspace | Key::Other => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Key(char),
    Interrupt,
    Eof,
    Escape,
}
