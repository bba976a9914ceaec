//! A live session of the ACP front end: the engine's session, its front end, the prompts queued
//! on it and their cancellation.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::engine::{Controls, Session};
use crate::frontend::AcpFrontend;

/// A live session.
pub(crate) struct Slot {
    pub(crate) session: tokio::sync::Mutex<Session>,
    pub(crate) frontend: Arc<AcpFrontend>,
    /// The tokens of the prompts running or waiting on this session.
    pub(crate) cancels: Mutex<Vec<(u64, CancellationToken)>>,
    /// The end of the session's queue of prompts: resolves once the last prompt received has
    /// been answered.
    pub(crate) last: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
    /// The session's mode and model choice, switched while a turn holds the session.
    pub(crate) controls: Controls,
    /// The session's cwd (where its file is).
    pub(crate) cwd: PathBuf,
    /// The model option was sent (in an answer or a `config_option_update`).
    pub(crate) models_shown: std::sync::atomic::AtomicBool,
    /// The statuses of a router's models as the model option last said them.
    pub(crate) statuses_shown: Mutex<crate::engine::ModelStatuses>,
}

impl Slot {
    pub(crate) fn new(session: Session, frontend: Arc<AcpFrontend>) -> Arc<Self> {
        Arc::new(Slot {
            controls: session.controls().clone(),
            cwd: session.view().cwd().to_path_buf(),
            session: tokio::sync::Mutex::new(session),
            frontend,
            cancels: Mutex::new(Vec::new()),
            last: Mutex::new(None),
            models_shown: std::sync::atomic::AtomicBool::new(false),
            statuses_shown: Mutex::new(Default::default()),
        })
    }

    /// Takes the next place in the session's queue, in the order prompts arrive (the handler runs
    /// one message at a time; the tasks it spawns may start in any order): what to wait for
    /// before running, and what to drop once answered.
    pub(crate) fn queue(
        &self,
    ) -> (
        Option<tokio::sync::oneshot::Receiver<()>>,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let (done, next) = tokio::sync::oneshot::channel();
        let before = self.last.lock().ok().and_then(|mut l| l.replace(next));
        (before, done)
    }

    pub(crate) fn cancel_all(&self) {
        if let Ok(c) = self.cancels.lock() {
            for (_, t) in c.iter() {
                t.cancel();
            }
        }
    }

    /// Registers the token of a prompt; the key forgets it.
    pub(crate) fn track(&self, token: &CancellationToken) -> u64 {
        let Ok(mut c) = self.cancels.lock() else {
            return 0;
        };
        let key = c.iter().map(|(k, _)| *k).max().unwrap_or(0) + 1;
        c.push((key, token.clone()));
        key
    }

    pub(crate) fn forget(&self, key: u64) {
        if let Ok(mut c) = self.cancels.lock() {
            c.retain(|(k, _)| *k != key);
        }
    }
}
