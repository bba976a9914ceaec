//! What a front end may change in a session while one of its turns runs: the mode (read at each
//! tool call, so a switch applies from the next call on), the model (read when a turn starts) and
//! the messages the user steers the running turn with (joined at its next model call). The
//! session holds them behind a shared handle, since a running turn holds the session itself.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::event::PermissionMode;

/// A session's mode and model choice, shared between the session and its front end.
#[derive(Debug, Clone)]
pub struct Controls(Arc<Mutex<Choice>>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Choice {
    mode: PermissionMode,
    /// `None`: the configured or detected model.
    model: Option<String>,
    /// `Some` while a turn runs: the messages sent into it, not yet joined.
    steered: Option<Vec<Steered>>,
}

/// A message sent into a running turn: the text after the front end's flattening, and the paths
/// it already attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steered {
    pub text: String,
    pub attached: Vec<PathBuf>,
}

impl Controls {
    pub fn new(mode: PermissionMode) -> Self {
        Controls(Arc::new(Mutex::new(Choice {
            mode,
            model: None,
            steered: None,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Choice> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn mode(&self) -> PermissionMode {
        self.lock().mode
    }

    /// Switches the mode; `false` when it was already that one.
    pub fn set_mode(&self, mode: PermissionMode) -> bool {
        let mut c = self.lock();
        let changed = c.mode != mode;
        c.mode = mode;
        changed
    }

    /// The model chosen for the session's next turns (`None`: the configured or detected one).
    pub fn model(&self) -> Option<String> {
        self.lock().model.clone()
    }

    /// Chooses one of the server's models for the next turns; `false` when it was already
    /// chosen.
    pub fn set_model(&self, model: &str) -> bool {
        let mut c = self.lock();
        let changed = c.model.as_deref() != Some(model);
        c.model = Some(model.to_string());
        changed
    }

    /// Sends a message into the session's running turn, which takes it at its next model call as
    /// the user's; `false` when no turn runs (the message is not kept).
    pub fn steer(&self, message: Steered) -> bool {
        match &mut self.lock().steered {
            Some(queue) => {
                queue.push(message);
                true
            }
            None => false,
        }
    }

    /// A turn starts: messages may be sent into it.
    pub(crate) fn open_turn(&self) {
        self.lock().steered = Some(Vec::new());
    }

    /// The messages sent since the last call.
    pub(crate) fn take_steered(&self) -> Vec<Steered> {
        self.lock()
            .steered
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The model answered without a call: the turn ends (`true`) unless a message came that it
    /// has not seen yet, in one step so that none arrives in between.
    pub(crate) fn end_unless_steered(&self) -> bool {
        let mut c = self.lock();
        if c.steered.as_ref().is_some_and(|q| !q.is_empty()) {
            return false;
        }
        c.steered = None;
        true
    }

    /// The turn ended: what was sent too late for it.
    pub(crate) fn close_turn(&self) -> Vec<Steered> {
        self.lock().steered.take().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_sees_the_switches() {
        let c = Controls::new(PermissionMode::Ask);
        let other = c.clone();
        assert!(other.set_mode(PermissionMode::ReadOnly));
        assert!(!other.set_mode(PermissionMode::ReadOnly));
        assert_eq!(c.mode(), PermissionMode::ReadOnly);
        assert_eq!(c.model(), None);
        assert!(other.set_model("b"));
        assert!(!c.set_model("b"));
        assert_eq!(c.model().as_deref(), Some("b"));
    }

    #[test]
    fn a_message_is_taken_only_while_a_turn_runs() {
        let c = Controls::new(PermissionMode::Ask);
        let m = |t: &str| Steered {
            text: t.into(),
            attached: Vec::new(),
        };
        assert!(!c.steer(m("early")), "no turn: refused");
        c.open_turn();
        assert!(c.steer(m("one")));
        assert!(!c.end_unless_steered(), "a message waits: one more step");
        assert_eq!(c.take_steered(), [m("one")]);
        assert!(c.end_unless_steered());
        assert!(!c.steer(m("late")), "the turn is over");
        assert!(c.close_turn().is_empty());
    }
}
