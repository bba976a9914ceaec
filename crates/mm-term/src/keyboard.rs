//! The one reader of keys for the whole interactive session.
//!
//! A thread reads the terminal (in raw mode for the whole session, raw/) and queues every key
//! as it arrives, whatever mm is doing, so no key is lost between two prompts. Who takes them:
//!
//! - the prompt's line editor, in order ([`Keyboard::next_key`]);
//! - during a turn, Ctrl-C or Esc cancels it at once and Ctrl-Z suspends mm at once; Enter sends
//!   the line typed so far into the running turn (when the engine's turn takes messages, and the
//!   line is not a `/command`), Tab queues it for the next prompt as Enter did before; the other
//!   keys wait, typed ahead, for the next prompt. A Ctrl-C that came too late to cancel anything (the turn ended on its own) acts at
//!   the prompt instead ([`Keyboard::end_turn`]);
//! - a question (the permission prompt, a form) reads only the keys that come after it was put:
//!   [`Keyboard::question`] first has the reader take in whatever the terminal already holds,
//!   sets every key read so far aside, and gives them back, ahead of the later ones, when the
//!   question is answered. So a key typed before a question appears never answers it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::keys::Key;
use super::raw::{self, Waker};
use crate::engine::{Controls, Steered};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Key(Key),
    /// A Ctrl-C or an Esc that cancelled the running turn (it acts at the prompt if the turn
    /// ended on its own before seeing the cancel).
    TurnCancel(Key),
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Entry>,
    /// The keys read before the open question was put.
    held: VecDeque<Entry>,
    /// The running turn's cancel.
    turn: Option<CancellationToken>,
    /// Where Enter sends a line during the turn.
    steer: Option<Controls>,
    /// Lines sent into the turn, not yet echoed.
    sent: Vec<String>,
    /// A question is open: it takes the keys.
    question: bool,
    /// Ctrl-L came during the turn: the front end clears the screen at once.
    clear: bool,
    marks_requested: u64,
    marks_done: u64,
    /// The reader stopped (the terminal is gone, or mm is leaving).
    closed: bool,
    stopping: bool,
}

/// The session's keys. Cheap to share (`Arc`).
pub struct Keyboard {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    /// Wakes the reader thread (a question's mark, or leaving); `None` without a thread.
    wake: Option<Waker>,
}

impl Keyboard {
    /// Starts the reader thread on stdin (already in raw mode).
    pub fn start() -> Arc<Keyboard> {
        let (wake_tx, wake_rx) = match raw::wake_pair() {
            Some((w, r)) => (Some(w), Some(r)),
            None => (None, None),
        };
        let keyboard = Arc::new(Keyboard {
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
            wake: wake_tx,
        });
        let reader = Arc::clone(&keyboard);
        let started = std::thread::Builder::new()
            .name("mm-keys".into())
            .spawn(move || {
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    raw::read_loop(&reader, wake_rx.as_ref())
                }));
                if run.is_err() {
                    reader.push(vec![Key::Hangup]);
                }
                reader.close_state();
            });
        if started.is_err() {
            keyboard.push(vec![Key::Hangup]);
            keyboard.close_state();
        }
        keyboard
    }

    /// A keyboard without a reader: keys come from [`Keyboard::push`] only (tests).
    pub fn detached() -> Arc<Keyboard> {
        Arc::new(Keyboard {
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
            wake: None,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn touch(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Queues keys as they were read (the reader thread; SIGINT from outside comes as Ctrl-C).
    pub fn push(&self, keys: Vec<Key>) {
        if keys.is_empty() {
            return;
        }
        let mut suspend = false;
        {
            let mut s = self.lock();
            for key in keys {
                let in_turn = s.turn.is_some() && !s.question;
                if in_turn && matches!(key, Key::Interrupt | Key::Escape) {
                    if let Some(turn) = &s.turn {
                        turn.cancel();
                    }
                    s.queue.push_back(Entry::TurnCancel(key));
                } else if in_turn && key == Key::Ctrl('l') {
                    // Now, not when the turn ends: the status line is drawn again at once.
                    s.clear = true;
                } else if in_turn && key == Key::Ctrl('z') {
                    // At the prompt the editor suspends (and draws the line again after).
                    suspend = true;
                } else if in_turn && key == Key::Tab {
                    // The line waits for the next prompt, which sends it.
                    s.queue.push_back(Entry::Key(Key::Enter));
                } else if in_turn && key == Key::Enter {
                    steer_line(&mut s);
                } else {
                    s.queue.push_back(Entry::Key(key));
                }
            }
        }
        if suspend {
            raw::suspend();
        }
        self.touch();
    }

    fn close_state(&self) {
        self.lock().closed = true;
        self.touch();
    }

    /// Stops the reader thread (mm is leaving): keys typed from now on stay in the terminal.
    pub fn close(&self) {
        self.lock().stopping = true;
        self.wake_reader();
    }

    fn wake_reader(&self) {
        if let Some(waker) = &self.wake {
            waker.wake();
        }
    }

    /// The next key for the prompt (typed ahead or new); `Hangup` once the terminal is gone.
    pub async fn next_key(&self) -> Key {
        self.wait_key(false).await
    }

    /// The next key of the queue, waiting for one; `Hangup` once the terminal is gone. The
    /// prompt (`for_question` false) waits while a question holds the keys; a question takes
    /// them.
    async fn wait_key(&self, for_question: bool) -> Key {
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            {
                let mut s = self.lock();
                if for_question || !s.question {
                    while let Some(entry) = s.queue.pop_front() {
                        match entry {
                            Entry::Key(key) => return key,
                            // Only during a turn; `end_turn` turns them into keys.
                            Entry::TurnCancel(_) => {}
                        }
                    }
                    if s.closed {
                        return Key::Hangup;
                    }
                }
            }
            if rx.changed().await.is_err() {
                return Key::Hangup;
            }
        }
    }

    /// The next key for the prompt if one is waiting.
    pub fn try_key(&self) -> Option<Key> {
        let mut s = self.lock();
        if s.question {
            return None;
        }
        while let Some(entry) = s.queue.pop_front() {
            match entry {
                Entry::Key(key) => return Some(key),
                Entry::TurnCancel(_) => {}
            }
        }
        None
    }

    /// Whether Ctrl-L came during the turn since the last ask (the screen is to be cleared).
    pub fn take_clear(&self) -> bool {
        std::mem::take(&mut self.lock().clear)
    }

    /// The text typed ahead so far, as the next prompt will start (its last line), for the echo
    /// under the status line while a turn runs. An approximation: characters, pastes, Backspace,
    /// Ctrl-W and Alt-Enter count; moves of the cursor do not (the prompt replays every key).
    pub fn typed_ahead(&self) -> String {
        let s = self.lock();
        let text = text_of(s.held.iter().chain(s.queue.iter()));
        text.rsplit('\n').next().unwrap_or("").to_string()
    }

    /// During the turn, Enter sends the line typed into it through `controls`.
    pub fn steer_into(&self, controls: &Controls) {
        self.lock().steer = Some(controls.clone());
    }

    /// The lines sent into the running turn since the last call, waiting for one.
    pub async fn sent(&self) -> Vec<String> {
        let mut rx = self.changed.subscribe();
        loop {
            rx.borrow_and_update();
            {
                let mut s = self.lock();
                if !s.sent.is_empty() {
                    return std::mem::take(&mut s.sent);
                }
            }
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// A turn starts: Ctrl-C and Esc cancel `cancel` from now on.
    pub fn begin_turn(&self, cancel: &CancellationToken) {
        let mut s = self.lock();
        s.turn = Some(cancel.clone());
        s.clear = false;
    }

    /// The turn ended; `cancelled`: it stopped on a cancel. A Ctrl-C that did not cancel it
    /// (it ended first) becomes a Ctrl-C at the prompt, where it was typed among the other keys.
    pub fn end_turn(&self, cancelled: bool) {
        {
            let mut s = self.lock();
            s.turn = None;
            s.steer = None;
            // A Ctrl-L nobody acted on (no status line) clears at the prompt.
            if std::mem::take(&mut s.clear) {
                s.queue.push_back(Entry::Key(Key::Ctrl('l')));
            }
            let queue = std::mem::take(&mut s.queue);
            s.queue = queue
                .into_iter()
                .filter_map(|e| match e {
                    Entry::TurnCancel(_) if cancelled => None,
                    Entry::TurnCancel(key) => Some(Entry::Key(key)),
                    key @ Entry::Key(_) => Some(key),
                })
                .collect();
        }
        self.touch();
    }

    /// Opens a question: every key the terminal sent until now is set aside (given back when
    /// the returned [`Asking`] is dropped), and the question reads only the keys that follow.
    /// Call it before showing the question. One question at a time.
    pub async fn question(&self) -> Asking<'_> {
        let target = {
            let mut s = self.lock();
            if s.closed || self.wake.is_none() {
                seal(&mut s);
                None
            } else {
                s.marks_requested += 1;
                Some(s.marks_requested)
            }
        };
        if let Some(target) = target {
            let mut rx = self.changed.subscribe();
            self.wake_reader();
            loop {
                rx.borrow_and_update();
                {
                    let mut s = self.lock();
                    if s.marks_done >= target {
                        break;
                    }
                    if s.closed {
                        seal(&mut s);
                        break;
                    }
                }
                if rx.changed().await.is_err() {
                    break;
                }
            }
        }
        Asking { keyboard: self }
    }

    /// Whether mm is leaving (the reader's thread ends when woken).
    pub fn stopping(&self) -> bool {
        self.lock().stopping
    }

    /// The reader's side of a question's mark: everything read until now is set aside.
    pub fn mark(&self) {
        {
            let mut s = self.lock();
            if s.marks_done < s.marks_requested {
                s.marks_done = s.marks_requested;
                seal(&mut s);
            }
        }
        self.touch();
    }
}

fn seal(s: &mut State) {
    let before = std::mem::take(&mut s.queue);
    s.held.extend(before);
    s.question = true;
}

/// An open question's hold on the keys.
pub struct Asking<'a> {
    keyboard: &'a Keyboard,
}

impl Asking<'_> {
    /// The next key typed since the question was put; `Hangup` once the terminal is gone.
    pub async fn key(&mut self) -> Key {
        self.keyboard.wait_key(true).await
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        {
            let mut s = self.keyboard.lock();
            s.question = false;
            let mut queue = std::mem::take(&mut s.held);
            queue.extend(std::mem::take(&mut s.queue));
            s.queue = queue;
        }
        self.keyboard.touch();
    }
}

/// The text the keys make, as the prompt would read it (see [`Keyboard::typed_ahead`]); Enter
/// starts it again.
fn text_of<'a>(entries: impl Iterator<Item = &'a Entry>) -> String {
    let mut text = String::new();
    for entry in entries {
        match entry {
            Entry::Key(Key::Char(c)) => text.push(*c),
            Entry::Key(Key::Paste(p)) => text.push_str(p),
            Entry::Key(Key::AltEnter) => text.push('\n'),
            Entry::Key(Key::Backspace) => {
                text.pop();
            }
            Entry::Key(Key::DeleteWordBack) => {
                let kept = text.trim_end().len();
                text.truncate(kept);
                let start = text
                    .char_indices()
                    .rev()
                    .find(|(_, c)| c.is_whitespace())
                    .map_or(0, |(i, c)| i + c.len_utf8());
                text.truncate(start);
            }
            // A line typed ahead is sent at the next prompt: the echo starts again.
            Entry::Key(Key::Enter) => text.clear(),
            _ => {}
        }
    }
    text
}

/// Enter during a turn: the line typed since the last Enter goes into the turn and is echoed;
/// a `/command` (commands wait for the prompt), a blank line, or a turn that no longer takes
/// messages leave it typed ahead with its Enter, as before.
fn steer_line(s: &mut State) {
    let start = s
        .queue
        .iter()
        .rposition(|e| matches!(e, Entry::Key(Key::Enter) | Entry::TurnCancel(_)))
        .map_or(0, |i| i + 1);
    let text = text_of(s.queue.iter().skip(start));
    let line = text.trim();
    let sent = !line.is_empty()
        && !line.starts_with('/')
        && s.steer.as_ref().is_some_and(|c| {
            c.steer(Steered {
                text: line.to_string(),
                attached: Vec::new(),
            })
        });
    if sent {
        s.sent.push(line.to_string());
        s.queue.truncate(start);
    } else {
        s.queue.push_back(Entry::Key(Key::Enter));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn chars(s: &str) -> Vec<Key> {
        s.chars().map(Key::Char).collect()
    }

    #[test]
    fn the_echo_of_keys_typed_ahead_is_the_next_prompt_s_last_line() {
        let k = Keyboard::detached();
        let turn = CancellationToken::new();
        k.begin_turn(&turn);
        assert_eq!(k.typed_ahead(), "");
        k.push(chars("git stax"));
        k.push(vec![Key::Backspace, Key::Char('t'), Key::Left]);
        assert_eq!(k.typed_ahead(), "git stat");
        k.push(vec![Key::DeleteWordBack]);
        assert_eq!(k.typed_ahead(), "git ");
        k.push(vec![Key::Paste("log é".into()), Key::AltEnter]);
        assert_eq!(k.typed_ahead(), "");
        k.push(chars("second"));
        assert_eq!(k.typed_ahead(), "second");
        k.push(vec![Key::Enter]);
        k.push(chars("next"));
        assert_eq!(k.typed_ahead(), "next");
        // The cancel is not text, nor is Ctrl-L, which clears the screen during the turn.
        k.push(vec![Key::Escape]);
        assert_eq!(k.typed_ahead(), "next");
        assert!(!k.take_clear());
        k.push(vec![Key::Ctrl('l')]);
        assert!(k.take_clear());
        assert!(!k.take_clear());
        // One nobody took is the prompt's, after the keys typed before it.
        k.push(vec![Key::Ctrl('l')]);
        k.end_turn(true);
        assert!(!k.take_clear(), "at the prompt it is the editor's key");
        let mut keys = Vec::new();
        while let Some(key) = k.try_key() {
            keys.push(key);
        }
        assert_eq!(keys.last(), Some(&Key::Ctrl('l')));
        assert_eq!(keys.iter().filter(|k| **k == Key::Ctrl('l')).count(), 1);
    }

    #[tokio::test]
    async fn keys_typed_during_a_turn_wait_for_the_prompt_and_ctrl_c_cancels_it() {
        let k = Keyboard::detached();
        let turn = CancellationToken::new();
        k.begin_turn(&turn);
        k.push(chars("ab"));
        k.push(vec![Key::Interrupt]);
        assert!(turn.is_cancelled());
        k.push(chars("c"));
        // Ctrl-Z suspends at once (nothing to suspend here: no terminal held); it is not typed
        // ahead.
        k.push(vec![Key::Ctrl('z')]);
        k.end_turn(true);
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(k.next_key().await);
        }
        assert_eq!(got, chars("abc"));
    }

    #[tokio::test]
    async fn esc_cancels_a_turn_and_a_double_esc_loses_no_key_typed_after_it() {
        let k = Keyboard::detached();
        let turn = CancellationToken::new();
        k.begin_turn(&turn);
        let mut d = super::super::keys::Decoder::new();
        // Esc, Esc, then `hi` in one read, as a quick typist sends them.
        let mut keys = d.feed(b"\x1b\x1bhi");
        keys.extend(d.flush());
        k.push(keys);
        assert!(turn.is_cancelled());
        k.end_turn(true);
        assert_eq!(k.next_key().await, Key::Char('h'));
        assert_eq!(k.next_key().await, Key::Char('i'));
        assert_eq!(k.try_key(), None);
    }

    #[tokio::test]
    async fn a_ctrl_c_that_came_too_late_for_the_turn_acts_at_the_prompt() {
        let k = Keyboard::detached();
        let turn = CancellationToken::new();
        k.begin_turn(&turn);
        k.push(vec![Key::Char('x'), Key::Interrupt]);
        k.end_turn(false);
        assert_eq!(k.next_key().await, Key::Char('x'));
        assert_eq!(k.next_key().await, Key::Interrupt);
    }

    #[tokio::test]
    async fn keys_typed_before_a_question_never_answer_it() {
        let k = Keyboard::detached();
        let turn = CancellationToken::new();
        k.begin_turn(&turn);
        k.push(chars("y"));
        {
            let mut q = k.question().await;
            k.push(vec![Key::Char('n'), Key::Interrupt, Key::Char('z')]);
            assert_eq!(q.key().await, Key::Char('n'));
            // Ctrl-C while a question is open is the question's.
            assert_eq!(q.key().await, Key::Interrupt);
            assert!(!turn.is_cancelled());
        }
        k.end_turn(false);
        assert_eq!(k.next_key().await, Key::Char('y'));
        assert_eq!(k.next_key().await, Key::Char('z'));
    }

    #[tokio::test]
    async fn the_prompt_sees_hangup_once_the_reader_is_gone() {
        let k = Keyboard::detached();
        k.push(vec![Key::Char('q')]);
        k.close_state();
        assert_eq!(k.next_key().await, Key::Char('q'));
        assert_eq!(k.next_key().await, Key::Hangup);
        assert_eq!(k.next_key().await, Key::Hangup);
    }
}
