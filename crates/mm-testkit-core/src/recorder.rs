//! The front end in process: a [`Recorder`] keeps every event the engine emits and answers
//! permission questions and forms from scripts.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use mm_core::event::{Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionRequest};
use tokio_util::sync::CancellationToken;

/// What an unscripted form is answered with.
pub const NOBODY: &str = "nobody to ask in a test";

#[derive(Default)]
struct State {
    events: Vec<Event>,
    permissions: VecDeque<PermissionDecision>,
    forms: VecDeque<FormAnswer>,
    asked: Vec<PermissionRequest>,
    forms_asked: Vec<Form>,
}

/// A front end double. With nothing scripted, a permission question is answered `RejectOnce` and
/// a form `Unavailable` (as a front end that cannot ask would).
#[derive(Default)]
pub struct Recorder {
    state: Mutex<State>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends an answer to the permission script.
    pub fn answer_permission(&self, decision: PermissionDecision) {
        self.lock().permissions.push_back(decision);
    }

    /// Appends an answer to the form script.
    pub fn answer_form(&self, answer: FormAnswer) {
        self.lock().forms.push_back(answer);
    }

    /// The titles of the calls permission was asked for, in order.
    pub fn asked(&self) -> Vec<String> {
        self.lock()
            .asked
            .iter()
            .map(|r| r.call.title.clone())
            .collect()
    }

    /// The forms put to the user, in order.
    pub fn forms(&self) -> Vec<Form> {
        self.lock().forms_asked.clone()
    }

    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    pub fn clear(&self) {
        self.lock().events.clear();
    }

    pub fn notices(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Notice(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    pub fn warnings(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Warning(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    /// The lines of the automatic compressions.
    pub fn auto_compacted(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::AutoCompacted(n) => Some(n.line()),
                _ => None,
            })
            .collect()
    }
}

#[async_trait]
impl Frontend for Recorder {
    fn emit(&self, event: Event) {
        self.lock().events.push(event);
    }

    async fn ask_permission(
        &self,
        request: PermissionRequest,
        _cancel: &CancellationToken,
    ) -> PermissionDecision {
        let mut state = self.lock();
        state.asked.push(request);
        state
            .permissions
            .pop_front()
            .unwrap_or(PermissionDecision::RejectOnce)
    }

    async fn ask_user(&self, form: Form, _cancel: &CancellationToken) -> FormAnswer {
        let mut state = self.lock();
        state.forms_asked.push(form);
        state
            .forms
            .pop_front()
            .unwrap_or_else(|| FormAnswer::Unavailable(NOBODY.into()))
    }
}
