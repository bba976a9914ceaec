//! Single keys and short answers read from the terminal in raw mode, for the permission prompt
//! and `ask_user` forms. Raw mode lives in a guard: it is restored on every path (an answer, an
//! error, end of input, a panic).
//!
//! These calls block: run them on a blocking thread.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::Mutex;

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

/// Keys read but not yet used: one read can hold several (typed ahead, pasted).
static PENDING: Mutex<VecDeque<Key>> = Mutex::new(VecDeque::new());

/// Reads one key (raw mode must be on).
pub fn read_key() -> Key {
    let mut pending = PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(key) = pending.pop_front() {
        return key;
    }
    let mut buf = [0u8; 256];
    let n = loop {
        match nix::unistd::read(io::stdin().as_fd(), &mut buf) {
            Ok(n) => break n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return Key::Eof,
        }
    };
    pending.extend(decode(&buf[..n]));
    pending.pop_front().unwrap_or(Key::Eof)
}

/// The keys in the bytes of one read; nothing read is the end of input.
pub fn decode(bytes: &[u8]) -> Vec<Key> {
    if bytes.is_empty() {
        return vec![Key::Eof];
    }
    let text = String::from_utf8_lossy(bytes);
    let mut keys = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        keys.push(match c {
            '\x04' => Key::Eof,
            '\x03' => Key::Interrupt,
            '\r' | '\n' => Key::Enter,
            '\x7f' | '\x08' => Key::Backspace,
            '\x1b' => match chars.peek() {
                None => Key::Escape,
                // An escape sequence (arrows, function keys): its final byte ends it.
                Some('[') | Some('O') => {
                    chars.next();
                    for n in chars.by_ref() {
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                    Key::Other
                }
                Some(_) => Key::Escape,
            },
            c if c.is_control() => Key::Other,
            c => Key::Char(c),
        });
    }
    keys
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

/// Reads one of `keys` (case-insensitive), ignoring others; `Enter` gives `on_enter` when set.
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn one_read_can_hold_several_keys() {
        assert_eq!(
            decode("3\r\x1b[Aé\x7f\x03\x04".as_bytes()),
            vec![
                Key::Char('3'),
                Key::Enter,
                Key::Other,
                Key::Char('é'),
                Key::Backspace,
                Key::Interrupt,
                Key::Eof
            ]
        );
        assert_eq!(decode(b"\x1b"), vec![Key::Escape]);
        assert_eq!(decode(b""), vec![Key::Eof]);
    }
}
