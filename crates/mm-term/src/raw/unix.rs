//! The terminal on Unix (mod.rs says what each platform module holds).
//!
//! Raw mode here is not `cfmakeraw`: output processing stays on, so a `\n` written by any part
//! of mm still starts a new line; input is byte by byte, unechoed, Ctrl-C and Ctrl-Z are keys
//! (no signals), Ctrl-S and Ctrl-Q too (no flow control), and Enter is `\r`.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::termios::{
    self, FlushArg, InputFlags, LocalFlags, SetArg, SpecialCharacterIndices, Termios,
};
use tokio::signal::unix::{SignalKind, signal};

use super::super::keyboard::Keyboard;
use super::super::keys::{Decoder, Key};
use crate::tasks::Tasks;

/// How long the rest of an escape sequence may take to arrive before a lone ESC is Escape.
const SEQUENCE_WAIT: Duration = Duration::from_millis(30);

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
/// [`RawMode::enter`] until it is dropped (or a panic on the thread that entered).
pub struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Takes the terminal; `None` when stdin is not one.
    pub fn enter() -> Option<RawMode> {
        let saved = termios::tcgetattr(io::stdin().as_fd()).ok()?;
        if !set(&raw_of(&saved)) {
            return None;
        }
        write_tty(PASTE_ON);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = Some((saved.clone(), std::thread::current().id()));
        }
        install_panic_hook();
        Some(RawMode { saved })
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

impl Drop for RawMode {
    fn drop(&mut self) {
        write_tty(PASTE_OFF);
        set(&self.saved);
        if let Ok(mut slot) = SAVED.lock() {
            *slot = None;
        }
    }
}

/// Once per process: a panic on the thread that holds the terminal puts it back before the
/// message is printed (unwinding drops the [`RawMode`] too; this covers an abort). Panics on
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

/// The keys of one blocking read of stdin (a [`Question`] on), decoded with `decoder` (which
/// keeps a paste cut between two reads); `[Hangup]` at the end of input.
pub fn read_keys(decoder: &mut Decoder) -> Vec<Key> {
    let mut buf = [0u8; 1024];
    loop {
        match nix::unistd::read(io::stdin().as_fd(), &mut buf) {
            Ok(0) => return vec![Key::Hangup],
            Ok(n) => {
                let mut keys = decoder.feed(&buf[..n]);
                // A lone ESC: a key of its own (an escape sequence comes in one read).
                keys.extend(decoder.flush());
                return keys;
            }
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return vec![Key::Hangup],
        }
    }
}

/// A SIGINT from outside (`kill -INT`; the terminal's Ctrl-C is a key in raw mode) counts as a
/// Ctrl-C. Spawns one of `tasks` (cut at shutdown).
pub fn forward_interrupts(tasks: &Tasks, keyboard: &Arc<Keyboard>) {
    if let Ok(mut sigint) = signal(SignalKind::interrupt()) {
        let keys = Arc::clone(keyboard);
        tasks.spawn_until_shutdown(async move {
            while sigint.recv().await.is_some() {
                keys.push(vec![Key::Interrupt]);
            }
        });
    }
}

/// Calls `resized` each time the window changes size (SIGWINCH). Spawns one of `tasks` (cut at
/// shutdown).
pub fn on_resize(tasks: &Tasks, resized: impl Fn() + Send + 'static) {
    if let Ok(mut winch) = signal(SignalKind::window_change()) {
        tasks.spawn_until_shutdown(async move {
            while winch.recv().await.is_some() {
                resized();
            }
        });
    }
}

/// The keyboard's side of the wake-up: one byte into a pipe the reader polls with stdin.
pub struct Waker(OwnedFd);

/// The reader's side of the wake-up.
pub struct Woken(OwnedFd);

impl Waker {
    pub fn wake(&self) {
        let _ = nix::unistd::write(&self.0, &[1]);
    }
}

/// The two sides of the wake-up; `None` when the pipe cannot be made (then a question cannot
/// wake the reader, and seals the keys at once).
pub fn wake_pair() -> Option<(Waker, Woken)> {
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
    // `pipe` then `fcntl`, not `pipe2`: macOS has no `pipe2`. A child started between the two
    // would only hold an end of this pipe open, which wakes nothing.
    let (r, w) = nix::unistd::pipe().ok()?;
    for fd in [&r, &w] {
        fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).ok()?;
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).ok()?;
    }
    Some((Waker(w), Woken(r)))
}

/// The reader thread: every byte of stdin, decoded, queued at once.
pub fn read_loop(keyboard: &Keyboard, wake: Option<&Woken>) {
    let stdin = io::stdin();
    let mut decoder = Decoder::new();
    let mut buf = [0u8; 4096];
    loop {
        let timeout = if decoder.holds() {
            PollTimeout::try_from(SEQUENCE_WAIT).unwrap_or(PollTimeout::NONE)
        } else {
            PollTimeout::NONE
        };
        let mut fds = vec![PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        if let Some(w) = wake {
            fds.push(PollFd::new(w.0.as_fd(), PollFlags::POLLIN));
        }
        let ready = match poll(&mut fds, timeout) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        };
        if ready == 0 {
            keyboard.push(decoder.flush());
            continue;
        }
        let input = fds[0].revents().unwrap_or(PollFlags::empty());
        let woken = fds
            .get(1)
            .and_then(PollFd::revents)
            .is_some_and(|r| r.contains(PollFlags::POLLIN));
        if woken {
            if let Some(w) = wake {
                let mut sink = [0u8; 64];
                while matches!(nix::unistd::read(&w.0, &mut sink), Ok(n) if n > 0) {}
            }
            if keyboard.stopping() {
                return;
            }
            // Whatever the terminal holds now was typed before the question: take it in first.
            loop {
                let mut one = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
                match poll(&mut one, PollTimeout::ZERO) {
                    Ok(1) if has_input(one[0].revents()) => match read(&stdin, &mut buf) {
                        Read::Bytes(bytes) => keyboard.push(decoder.feed(bytes)),
                        Read::Nothing => break,
                        Read::Gone => {
                            keyboard.push(vec![Key::Hangup]);
                            keyboard.mark();
                            return;
                        }
                    },
                    Ok(_) => break,
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(_) => break,
                }
            }
            keyboard.mark();
            // What `poll` said of stdin is stale now: ask again.
            continue;
        }
        if has_input(Some(input)) {
            match read(&stdin, &mut buf) {
                Read::Bytes(bytes) => keyboard.push(decoder.feed(bytes)),
                Read::Nothing => {}
                Read::Gone => {
                    keyboard.push(decoder.flush());
                    keyboard.push(vec![Key::Hangup]);
                    return;
                }
            }
        }
    }
}

fn has_input(revents: Option<PollFlags>) -> bool {
    revents
        .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// What one read of the terminal gave.
enum Read<'b> {
    Bytes(&'b [u8]),
    /// Nothing after all (a terminal left in non-blocking mode by another program).
    Nothing,
    /// The end of input, or an error: the terminal is gone.
    Gone,
}

fn read<'b>(stdin: &io::Stdin, buf: &'b mut [u8]) -> Read<'b> {
    loop {
        match nix::unistd::read(stdin.as_fd(), buf) {
            Ok(0) => return Read::Gone,
            Ok(n) => return Read::Bytes(&buf[..n]),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EAGAIN) => return Read::Nothing,
            Err(_) => return Read::Gone,
        }
    }
}
