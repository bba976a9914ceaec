//! The terminal's modes: raw mode for the whole interactive session (one guard, restored on
//! every way out: return, error, panic, signal), the width of the window, Ctrl-Z, and the short
//! raw reads of `mm -p`'s questions.
//!
//! Raw mode here is not `cfmakeraw`: output processing stays on, so a `\n` written by any part
//! of mm still starts a new line; input is byte by byte, unechoed, Ctrl-C and Ctrl-Z are keys
//! (no signals), Ctrl-S and Ctrl-Q too (no flow control), and Enter is `\r`.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Mutex;
use std::thread::ThreadId;

use nix::sys::termios::{
    self, FlushArg, InputFlags, LocalFlags, SetArg, SpecialCharacterIndices, Termios,
};

/// Turns bracketed paste on: a paste comes as one piece, its newlines do not submit.
const PASTE_ON: &str = "\x1b[?2004h";
const PASTE_OFF: &str = "\x1b[?2004l";

/// The settings to put back (and the thread that took the terminal), for the panic hook.
static SAVED: Mutex<Option<(Termios, ThreadId)>> = Mutex::new(None);

fn raw_of(saved: &Termios) -> Termios {
    let mut raw = saved.clone();
    raw.local_flags &=
        !(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG | LocalFlags::IEXTEN);
    raw.input_flags &= !(InputFlags::IXON | InputFlags::ICRNL | InputFlags::INLCR);
    raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    raw
}

fn set(termios: &Termios) -> bool {
    termios::tcsetattr(io::stdin().as_fd(), SetArg::TCSANOW, termios).is_ok()
}

fn write_tty(text: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// The interactive session's hold on the terminal: raw mode and bracketed paste from
/// [`Session::enter`] until it is dropped (or a panic on the thread that entered).
pub struct Session {
    saved: Termios,
}

impl Session {
    /// Takes the terminal; `None` when stdin is not one.
    pub fn enter() -> Option<Session> {
        let saved = termios::tcgetattr(io::stdin().as_fd()).ok()?;
        if !set(&raw_of(&saved)) {
            return None;
        }
        write_tty(PASTE_ON);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = Some((saved.clone(), std::thread::current().id()));
        }
        install_panic_hook();
        Some(Session { saved })
    }

    /// Ctrl-Z at the prompt: see [`suspend`].
    pub fn suspend(&self) {
        suspend_with(&self.saved);
    }
}

/// Ctrl-Z: gives the terminal back, stops the process (as the shell expects), and takes the
/// terminal again when the shell continues it. Nothing when no session holds the terminal.
pub fn suspend() {
    let saved = SAVED
        .lock()
        .ok()
        .and_then(|s| s.as_ref().map(|(t, _)| t.clone()));
    if let Some(saved) = saved {
        suspend_with(&saved);
    }
}

fn suspend_with(saved: &Termios) {
    write_tty(PASTE_OFF);
    set(saved);
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP);
    set(&raw_of(saved));
    write_tty(PASTE_ON);
}

impl Drop for Session {
    fn drop(&mut self) {
        write_tty(PASTE_OFF);
        set(&self.saved);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = None;
        }
    }
}

/// Once per process: a panic on the thread that holds the terminal puts it back before the
/// message is printed (unwinding drops the [`Session`] too; this covers an abort). Panics on
/// other threads (a task's, caught by the runtime) leave the session as it is.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let saved = SAVED.lock().ok().and_then(|mut slot| match slot.as_ref() {
                Some((_, owner)) if *owner == std::thread::current().id() => slot.take(),
                _ => None,
            });
            if let Some((termios, _)) = saved {
                let _ = io::stdout().write_all(PASTE_OFF.as_bytes());
                let _ = io::stdout().flush();
                set(&termios);
            }
            previous(info);
        }));
    });
}

nix::ioctl_read_bad!(window_size, nix::libc::TIOCGWINSZ, nix::libc::winsize);

/// The width of the terminal on stdout, in columns; `None` when stdout is not a terminal.
pub fn width() -> Option<usize> {
    width_of(io::stdout().as_raw_fd())
}

/// The width of the terminal on stderr (where `mm -p` asks its questions).
pub fn stderr_width() -> Option<usize> {
    width_of(io::stderr().as_raw_fd())
}

fn width_of(fd: std::os::fd::RawFd) -> Option<usize> {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into `size`, which outlives the call; the fd is
    // stdout's or stderr's, open for the life of the process.
    let done = unsafe { window_size(fd, &mut size) };
    match done {
        Ok(_) if size.ws_col > 0 => Some(usize::from(size.ws_col)),
        _ => None,
    }
}

/// Raw mode for one question of `mm -p` (which has no session-long reader): keys typed before
/// the question was asked are discarded, so they never answer it.
pub struct Question {
    saved: Termios,
}

impl Question {
    pub fn enter() -> Option<Question> {
        let stdin = io::stdin();
        let saved = termios::tcgetattr(stdin.as_fd()).ok()?;
        if !set(&raw_of(&saved)) {
            return None;
        }
        let _ = termios::tcflush(stdin.as_fd(), FlushArg::TCIFLUSH);
        Some(Question { saved })
    }
}

impl Drop for Question {
    fn drop(&mut self) {
        set(&self.saved);
    }
}

/// One blocking read of stdin (raw mode on); an empty result is the end of input.
pub fn read_bytes() -> Vec<u8> {
    let mut buf = [0u8; 1024];
    loop {
        match nix::unistd::read(io::stdin().as_fd(), &mut buf) {
            Ok(n) => return buf[..n].to_vec(),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return Vec::new(),
        }
    }
}
