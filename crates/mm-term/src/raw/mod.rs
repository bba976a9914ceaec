//! The terminal, the one place of the front end that differs per platform: its modes (raw mode
//! for the whole interactive session, one guard restored on every way out; raw mode for one
//! question of `mm -p`), the width of the window, Ctrl-Z, a SIGINT from outside, and the reader
//! of keys that [`super::keyboard::Keyboard`] runs on its thread, with the wake-up a question
//! uses to take the keys. Everything else in the crate is the same on every platform.
//!
//! - Unix (unix.rs): termios, but not `cfmakeraw` — output processing (OPOST) stays on, so a
//!   `\n` written by any part of mm still starts a new line (crossterm's `enable_raw_mode` turns
//!   it off); input byte by byte, decoded by keys.rs, waiting 30 ms for the rest of an escape
//!   sequence cut between two reads; a pipe wakes the reader for a question.
//! - Windows (windows.rs): the console through crossterm: raw mode is the input handle's
//!   (output untouched), keys are crossterm's events mapped by [`super::keys::of_event`],
//!   escape sequences on the output are switched on; the reader polls its events in short
//!   slices and looks at a flag between them for a question.
//!
//! Each platform module has the same items: `RawMode`, `Question`, `suspend`, `width`,
//! `stderr_width`, `read_keys`, `wake_pair` (a `Waker` for the keyboard, a `Woken` for its
//! thread), `read_loop`, `forward_interrupts` and `on_resize`.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
