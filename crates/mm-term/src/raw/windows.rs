//! The terminal on Windows: the console through crossterm (mod.rs says what each platform
//! module holds).
//!
//! crossterm's raw mode on Windows changes the console's input handle only (no line input, no
//! echo, Ctrl-C a key): output is untouched, so a `\n` still starts a new line. Escape
//! sequences on the output (colours, the prompt's redraw) need the console's virtual terminal
//! processing, switched on once here. There is no Ctrl-Z to suspend and no bracketed paste (a
//! paste comes as keys).

use std::io::{self, IsTerminal};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event;
use crossterm::terminal;

use super::super::keyboard::Keyboard;
use super::super::keys::{self, Decoder, Key};
use crate::tasks::Tasks;

/// How often the reader looks at its wake-up flag while no key comes.
const WAKE_POLL: Duration = Duration::from_millis(20);

fn enable_ansi() {
    let _ = crossterm::ansi_support::supports_ansi();
}

/// The interactive session's hold on the console: raw mode from [`RawMode::enter`] until it is
/// dropped.
pub struct RawMode(());

impl RawMode {
    /// Takes the console; `None` when stdin is not one.
    pub fn enter() -> Option<RawMode> {
        if !io::stdin().is_terminal() {
            return None;
        }
        enable_ansi();
        terminal::enable_raw_mode().ok()?;
        Some(RawMode(()))
    }

    /// Ctrl-Z at the prompt: nothing to do on Windows.
    pub fn suspend(&self) {}
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

/// Ctrl-Z during a turn: nothing to do on Windows.
pub fn suspend() {}

/// The width of the console when stdout is one, in columns.
pub fn width() -> Option<usize> {
    console_width(io::stdout().is_terminal())
}

/// The width of the console when stderr is one (where `mm -p` asks its questions).
pub fn stderr_width() -> Option<usize> {
    console_width(io::stderr().is_terminal())
}

fn console_width(is_console: bool) -> Option<usize> {
    if !is_console {
        return None;
    }
    enable_ansi();
    match terminal::size() {
        Ok((columns, _)) if columns > 0 => Some(usize::from(columns)),
        _ => None,
    }
}

/// Raw mode for one question of `mm -p`: the events already waiting are discarded, so a key
/// typed before the question was asked never answers it.
pub struct Question(());

impl Question {
    pub fn enter() -> Option<Question> {
        if !io::stdin().is_terminal() {
            return None;
        }
        enable_ansi();
        terminal::enable_raw_mode().ok()?;
        while matches!(event::poll(Duration::ZERO), Ok(true)) {
            if event::read().is_err() {
                break;
            }
        }
        Some(Question(()))
    }
}

impl Drop for Question {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

/// The keys of the next console event that has any (a [`Question`] on); `[Hangup]` when the
/// console cannot be read. The decoder is Unix's (crossterm decodes here).
pub fn read_keys(_decoder: &mut Decoder) -> Vec<Key> {
    loop {
        match event::read() {
            Ok(ev) => {
                if let Some(key) = keys::of_event(ev) {
                    return vec![key];
                }
            }
            Err(_) => return vec![Key::Hangup],
        }
    }
}

/// A Ctrl-C sent from outside (`GenerateConsoleCtrlEvent`; the console's own Ctrl-C is a key in
/// raw mode) counts as a Ctrl-C. Spawns one of `tasks` (cut at shutdown).
pub fn forward_interrupts(tasks: &Tasks, keyboard: &Arc<Keyboard>) {
    if let Ok(mut ctrl_c) = tokio::signal::windows::ctrl_c() {
        let keys = Arc::clone(keyboard);
        tasks.spawn_until_shutdown(async move {
            while ctrl_c.recv().await.is_some() {
                keys.push(vec![Key::Interrupt]);
            }
        });
    }
}

/// Calls `resized` each time the console changes size (its size looked at four times a second:
/// the reader's resize events are crossterm's, read on another thread). Spawns one of `tasks`
/// (cut at shutdown).
pub fn on_resize(tasks: &Tasks, resized: impl Fn() + Send + 'static) {
    tasks.spawn_until_shutdown(async move {
        let mut last = terminal::size().ok();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            let now = terminal::size().ok();
            if now != last {
                last = now;
                resized();
            }
        }
    });
}

/// The keyboard's side of the wake-up: a flag the reader looks at between two short polls.
pub struct Waker(Arc<AtomicBool>);

/// The reader's side of the wake-up.
pub struct Woken(Arc<AtomicBool>);

impl Waker {
    pub fn wake(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The two sides of the wake-up.
pub fn wake_pair() -> Option<(Waker, Woken)> {
    let flag = Arc::new(AtomicBool::new(false));
    Some((Waker(Arc::clone(&flag)), Woken(flag)))
}

/// The reader thread: every console event, mapped to keys, queued at once.
pub fn read_loop(keyboard: &Keyboard, wake: Option<&Woken>) {
    loop {
        if wake.is_some_and(|w| w.0.swap(false, Ordering::SeqCst)) {
            if keyboard.stopping() {
                return;
            }
            // Whatever the console holds now was typed before the question: take it in first.
            loop {
                match event::poll(Duration::ZERO) {
                    Ok(true) => match event::read() {
                        Ok(ev) => keyboard.push(keys::of_event(ev).into_iter().collect()),
                        Err(_) => {
                            keyboard.push(vec![Key::Hangup]);
                            keyboard.mark();
                            return;
                        }
                    },
                    Ok(false) => break,
                    Err(_) => break,
                }
            }
            keyboard.mark();
            continue;
        }
        match event::poll(WAKE_POLL) {
            Ok(true) => match event::read() {
                Ok(ev) => keyboard.push(keys::of_event(ev).into_iter().collect()),
                Err(_) => {
                    keyboard.push(vec![Key::Hangup]);
                    return;
                }
            },
            Ok(false) => {}
            Err(_) => {
                keyboard.push(vec![Key::Hangup]);
                return;
            }
        }
    }
}
