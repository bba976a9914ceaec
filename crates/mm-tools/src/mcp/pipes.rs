//! What an MCP server's pipes tell of it besides JSON-RPC: the last lines it wrote on stderr
//! ([`Tail`]), the lines on stdout that cannot be JSON-RPC ([`Spy`]), and how the process ended
//! ([`ended`]), for the one line that says why a server failed.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Lines of stderr kept for a failure's line.
const STDERR_LINES: usize = 3;
/// Characters kept of one such line.
const LINE_CHARS: usize = 200;

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= LINE_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(LINE_CHARS).collect();
    out.push('…');
    out
}

/// The last lines a stream wrote (stderr, or stdout lines that are not JSON-RPC).
#[derive(Default)]
pub(super) struct Tail {
    lines: Mutex<VecDeque<String>>,
}

impl Tail {
    pub(super) fn push(&self, line: &str) {
        let line = clip(line);
        if line.is_empty() {
            return;
        }
        if let Ok(mut l) = self.lines.lock() {
            if l.len() == STDERR_LINES {
                l.pop_front();
            }
            l.push_back(line);
        }
    }

    pub(super) fn joined(&self) -> Option<String> {
        let l = self.lines.lock().ok()?;
        (!l.is_empty()).then(|| l.iter().cloned().collect::<Vec<_>>().join(" / "))
    }
}

/// The server's stdout on its way to rmcp: lines that cannot be JSON-RPC (rmcp skips them) are
/// noted, so that a server that writes logs or garbage on stdout is named as such.
pub(super) struct Spy<R> {
    inner: R,
    /// The line being read, while it still could be garbage.
    line: Vec<u8>,
    at_start: bool,
    garbage: Arc<Tail>,
}

impl<R> Spy<R> {
    pub(super) fn new(inner: R, garbage: Arc<Tail>) -> Self {
        Spy {
            inner,
            line: Vec::new(),
            at_start: true,
            garbage,
        }
    }

    fn watch(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                if !self.line.is_empty() {
                    self.garbage.push(&String::from_utf8_lossy(&self.line));
                    self.line.clear();
                }
                self.at_start = true;
                continue;
            }
            if self.at_start {
                if b.is_ascii_whitespace() {
                    continue;
                }
                self.at_start = false;
                if b == b'{' {
                    continue;
                }
                self.line.push(b);
            } else if !self.line.is_empty() && self.line.len() < LINE_CHARS * 4 {
                self.line.push(b);
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Spy<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let new = buf.filled()[before..].to_vec();
            self.watch(&new);
        }
        polled
    }
}

/// How a process ended, with what it last wrote on stderr.
pub(super) fn ended(status: std::io::Result<std::process::ExitStatus>, stderr: &Tail) -> String {
    let how = match status {
        Ok(s) => match (s.code(), crate::process::signal_of(&s)) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "exited".to_string(),
        },
        Err(e) => format!("exited ({e})"),
    };
    match stderr.joined() {
        Some(err) => format!("{how}: {err}"),
        None => how,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_spy_notes_lines_that_are_not_json() {
        let tail = Arc::new(Tail::default());
        let mut spy = Spy::new(tokio::io::empty(), tail.clone());
        spy.watch(b"{\"jsonrpc\":\"2.0\"}\nStarting server");
        spy.watch(b"...\n  {\"a\":1}\n\nhello\n");
        assert_eq!(
            tail.joined(),
            Some("Starting server... / hello".to_string())
        );
    }
}
