//! The context window and what is measured against it: the window known so far (configured,
//! detected, or the chosen model's once probed), the context a session uses, the model a
//! session's turns ask, and the cap on a tool result.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio_util::sync::CancellationToken;

use super::{Engine, Session};
use crate::event::ContextUsage;

impl Engine {
    /// The context in use: the larger of the last measure and the history's estimate. Uses the
    /// window known so far (0 while detection runs).
    pub fn context_usage(&self, session: &Session) -> ContextUsage {
        let estimate = self.estimate(session);
        let used = session.last_measure.unwrap_or(0).max(estimate);
        ContextUsage {
            used,
            size: self.window_known(session),
        }
    }

    /// The window a session's requests are measured against, as known now (0: unknown): the
    /// chosen model's once probed, else the configured or detected model's.
    pub(crate) fn window_known(&self, s: &Session) -> u64 {
        match (&s.model, s.model_window) {
            (Some(_), Some(w)) if self.config.context_window == 0 => w,
            _ => self.known.window.load(Ordering::Relaxed),
        }
    }

    /// A session's context window: the configured one, else its chosen model's (probed once
    /// after the switch), else [`Engine::context_window`].
    pub async fn session_window(&self, s: &mut Session, cancel: &CancellationToken) -> u64 {
        if self.config.context_window > 0 {
            return self.config.context_window;
        }
        let Some(model) = &s.model else {
            return self.context_window(cancel).await;
        };
        if let Some(w) = s.model_window {
            return w;
        }
        let w = self.model.window_of(model, cancel).await;
        if cancel.is_cancelled() {
            return self.window_known(s);
        }
        s.model_window = Some(w);
        w
    }

    /// Takes the model the session's controls chose, when it changed: from this turn on the
    /// window is probed again and the chars-per-token estimate starts afresh. Other sessions
    /// keep theirs.
    pub(crate) fn take_model_choice(&self, s: &mut Session) {
        let chosen = s.controls.model();
        if chosen.is_some() && chosen != s.model {
            s.model = chosen;
            s.model_window = None;
            s.chars_per_token = 4.0;
        }
    }

    /// The model the session's turns ask (the one its controls chose once a turn took it),
    /// else the one detected (empty while detection runs and no name is configured).
    pub fn model_of(&self, s: &Session) -> String {
        match s.controls.model().or_else(|| s.model.clone()) {
            Some(m) => m,
            None => self.detected_model(),
        }
    }

    /// The model's name as last detected (the configured one until then; empty when neither).
    pub(crate) fn detected_model(&self) -> String {
        self.known
            .model
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default()
    }

    /// The history's estimate: the request's characters over the measured ratio.
    pub fn estimate(&self, session: &Session) -> u64 {
        let chars = crate::history::wire_chars(&session.history) + session.tools.chars();
        let ratio = if session.chars_per_token > 0.0 {
            session.chars_per_token
        } else {
            4.0
        };
        (chars as f64 / ratio).round() as u64
    }

    /// The context window: configured, else probed (awaits detection), 0 when unknown.
    pub async fn context_window(&self, cancel: &CancellationToken) -> u64 {
        let w = if self.config.context_window > 0 {
            self.config.context_window
        } else {
            match self.model.info(cancel).await {
                Ok(i) => i.context_window,
                // Withdrawn: what was known stays known.
                Err(crate::model::ModelError::Cancelled) => {
                    return self.known.window.load(Ordering::Relaxed);
                }
                Err(_) => 0,
            }
        };
        self.known.window.store(w, Ordering::Relaxed);
        w
    }

    /// Starts the context-window probe in the background (the ACP front end, once its
    /// `initialize` is answered), so that what is sent before the first model call (a
    /// `session/load`'s `usage_update`) carries the size once it is known. Never waited for.
    pub fn probe_window_later(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let engine = Arc::clone(self);
        self.processes.tasks().spawn_until_shutdown(async move {
            engine.context_window(&CancellationToken::new()).await;
        });
    }

    /// The cap on a tool result the model sees: `tools.maxOutput`, and a quarter of a known
    /// window (in characters).
    pub fn max_output(&self, s: &Session) -> usize {
        let max = self.config.tools.max_output;
        let window = self.window_known(s);
        if window == 0 {
            return max;
        }
        max.min((window as usize / 4) * 4)
    }
}
