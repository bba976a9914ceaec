//! What comes on stdin when it is not a terminal: the prompt (`echo prompt | mm`), the question
//! of `mm --ask AGENT`, or an attachment to a prompt (`cat calc.py | mm -p "review this"`).
//! Read to its end, at most a cap: a huge pipe (`yes | mm -p …`) never fills the memory.

use std::io::{self, Read};
use std::sync::mpsc;
use std::time::Duration;

/// How long stdin may stay silent before mm says it is waiting for it: a program that starts mm
/// with a pipe it never closes would otherwise see mm hang without a word.
const SILENT: Duration = Duration::from_secs(3);

/// Bytes asked of stdin at a time.
const CHUNK: usize = 8192;

/// What stdin held, up to the cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piped {
    /// The text, at most the cap's characters, without the trailing newlines of the pipe.
    pub text: String,
    /// Whether there was more than the cap (what is past it was not read).
    pub cut: bool,
    /// A NUL byte: binary data, which no model reads as text.
    pub binary: bool,
}

impl Piped {
    /// Nothing but whitespace came (`mm < /dev/null`).
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// Reads stdin to its end or to `cap` characters; after [`SILENT`] without a byte, `waiting` is
/// called once (the caller says so on stderr) and the wait goes on: a slow `make 2>&1 | mm -p …`
/// is worth waiting for.
pub fn read_stdin(cap: usize, waiting: impl FnOnce() + Send + 'static) -> io::Result<Piped> {
    let (first, silent) = mpsc::channel::<()>();
    // A thread of its own, not a task: it only waits on a clock, and ends when the first byte
    // (or the end of stdin) drops `first`.
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = silent.recv_timeout(SILENT) {
            waiting();
        }
    });
    let mut stdin = io::stdin().lock();
    let mut first = Some(first);
    read_capped(&mut stdin, cap, || drop(first.take()))
}

/// Reads `input` to its end or to `cap` characters (at most `4 × cap + 4` bytes: a character of
/// UTF-8 is at most 4), `started` called once the first read returns.
pub fn read_capped(input: &mut impl Read, cap: usize, started: impl FnOnce()) -> io::Result<Piped> {
    let limit = cap.saturating_mul(4).saturating_add(4);
    let mut bytes = Vec::new();
    let mut chunk = [0u8; CHUNK];
    let mut started = Some(started);
    loop {
        let room = limit - bytes.len();
        if room == 0 {
            break;
        }
        let n = match input.read(&mut chunk[..room.min(CHUNK)]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(started) = started.take() {
            started();
        }
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    let binary = bytes.contains(&0);
    let text = String::from_utf8_lossy(&bytes);
    let cut = text.chars().nth(cap).is_some();
    let text: String = text.chars().take(cap).collect();
    let text = match cut {
        true => text,
        false => text.trim_end_matches(['\n', '\r']).to_string(),
    };
    Ok(Piped { text, cut, binary })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn read(input: &str, cap: usize) -> Piped {
        read_capped(&mut input.as_bytes(), cap, || {}).unwrap()
    }

    #[test]
    fn the_pipe_is_read_whole_without_its_last_newline() {
        let piped = read("a\nb\n\n", 100);
        assert_eq!(
            piped,
            Piped {
                text: "a\nb".into(),
                cut: false,
                binary: false
            }
        );
        assert!(read("\n \n", 100).is_empty());
    }

    #[test]
    fn a_pipe_over_the_cap_is_cut_and_read_no_further() {
        let mut endless = io::repeat(b'y');
        let piped = read_capped(&mut endless, 10, || {}).unwrap();
        assert_eq!(piped.text, "yyyyyyyyyy");
        assert!(piped.cut);
        let piped = read("ééééé", 5);
        assert_eq!((piped.text.as_str(), piped.cut), ("ééééé", false));
        assert_eq!(read("éééééé", 5).text, "ééééé");
    }

    #[test]
    fn a_nul_byte_is_binary() {
        assert!(read("PNG\0\0", 100).binary);
    }
}
