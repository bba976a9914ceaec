//! What a front end may change in a session while one of its turns runs: the mode (read at each
//! tool call, so a switch applies from the next call on) and the model (read when a turn starts).
//! The session holds them behind a shared handle, since a running turn holds the session itself.

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
}

impl Controls {
    pub fn new(mode: PermissionMode) -> Self {
        Controls(Arc::new(Mutex::new(Choice { mode, model: None })))
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
}
