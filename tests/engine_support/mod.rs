//! Shared by the engine end-to-end tests (`engine_sessions`, `engine_hooks`, `engine_skills`): a
//! scripted model that records what it is sent, and a front end that records what it is told.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
pub mod common;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mm::config::{Config, HookConfig, Origin};
use mm::engine::{Engine, Environment, PromptOutcome, Session};
use mm::event::*;
use mm::model::{
    ChatRequest, ModelClient, ModelError, ModelInfo, ModelResponse, RawToolCall, StreamEvent,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use common::check_history;

pub type Reply = Result<ModelResponse, ModelError>;

/// A model double: chat and summary answers from queues; every request recorded. A chat reply
/// may be delayed until a token is cancelled (to cancel a turn mid-call).
pub struct Scripted {
    replies: Mutex<VecDeque<Reply>>,
    summaries: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<ChatRequest>>,
    summary_requests: Mutex<Vec<Vec<Value>>>,
    pub window: u64,
    /// When set, a chat call with nothing scripted waits for the caller's cancellation.
    pub hang_when_empty: bool,
    /// Notified when a chat call starts.
    pub called: tokio::sync::Notify,
}

impl Scripted {
    pub fn new(replies: Vec<Reply>) -> Arc<Self> {
        Self::build(replies, 8192, false)
    }

    pub fn build(replies: Vec<Reply>, window: u64, hang_when_empty: bool) -> Arc<Self> {
        Arc::new(Scripted {
            replies: Mutex::new(replies.into()),
            summaries: Mutex::default(),
            requests: Mutex::default(),
            summary_requests: Mutex::default(),
            window,
            hang_when_empty,
            called: tokio::sync::Notify::new(),
        })
    }

    pub fn push(&self, r: Reply) {
        self.replies.lock().unwrap().push_back(r);
    }

    /// Waits until `n` chat requests have been made.
    pub async fn wait_for_requests(&self, n: usize) {
        while self.requests.lock().unwrap().len() < n {
            self.called.notified().await;
        }
    }

    pub fn push_summary(&self, r: Reply) {
        self.summaries.lock().unwrap().push_back(r);
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn summary_requests(&self) -> Vec<Vec<Value>> {
        self.summary_requests.lock().unwrap().clone()
    }

    /// Every chat request so far satisfies the history invariants real servers enforce.
    pub fn assert_invariants(&self) {
        for (i, r) in self.requests().iter().enumerate() {
            let problems = check_history(&r.messages);
            assert!(problems.is_empty(), "request {i}: {problems:?}");
        }
    }
}

#[async_trait]
impl ModelClient for Scripted {
    async fn chat(
        &self,
        request: &ChatRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        self.called.notify_one();
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let next = self.replies.lock().unwrap().pop_front();
        let reply = match next {
            Some(r) => r,
            None if self.hang_when_empty => {
                cancel.cancelled().await;
                return Err(ModelError::Cancelled);
            }
            None => Ok(text("done")),
        };
        if let Ok(r) = &reply
            && !r.text.is_empty()
        {
            on_event(StreamEvent::Text(r.text.clone()));
        }
        reply
    }

    async fn complete(
        &self,
        messages: Vec<Value>,
        _c: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        self.summary_requests.lock().unwrap().push(messages);
        self.summaries
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Ok(text("the summary")))
    }

    async fn info(&self, _cancel: &CancellationToken) -> Result<ModelInfo, ModelError> {
        Ok(ModelInfo {
            url: "http://fake/v1".into(),
            name: "fake".into(),
            context_window: self.window,
        })
    }
}

/// A text answer reporting 100 input and 10 output tokens.
pub fn text(t: &str) -> ModelResponse {
    text_with_usage(t, 100, 10)
}

pub fn text_with_usage(t: &str, input: u64, output: u64) -> ModelResponse {
    ModelResponse {
        text: t.into(),
        finish_reason: Some("stop".into()),
        usage: Some(Usage {
            input_tokens: input,
            output_tokens: output,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One tool call (the model gives no id: the ref is used).
pub fn call(name: &str, args: Value) -> ModelResponse {
    ModelResponse {
        tool_calls: vec![RawToolCall {
            id: String::new(),
            name: name.into(),
            arguments: args.to_string(),
        }],
        finish_reason: Some("tool_calls".into()),
        usage: Some(Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[derive(Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
    pub answers: Mutex<VecDeque<PermissionDecision>>,
    pub asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Frontend for Recorder {
    fn emit(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }
    async fn ask_permission(
        &self,
        request: PermissionRequest,
        _cancel: &CancellationToken,
    ) -> PermissionDecision {
        self.asked.lock().unwrap().push(request.call.title.clone());
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(PermissionDecision::RejectOnce)
    }
    async fn ask_user(&self, _form: Form, _cancel: &CancellationToken) -> FormAnswer {
        FormAnswer::Unavailable("test".into())
    }
}

impl Recorder {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }
    pub fn clear(&self) {
        self.events.lock().unwrap().clear();
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

/// An engine over `model` with the default configuration changed by `f`; the user's folders
/// (`home`, `xdg_config_home`) are empty tempdirs so nothing of the real user leaks in.
pub struct Rig {
    pub engine: Engine,
    pub home: tempfile::TempDir,
    pub cwd: tempfile::TempDir,
}

pub fn rig(model: Arc<Scripted>, f: impl FnOnce(&mut Config)) -> Rig {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    f(&mut cfg);
    let engine = Engine::new(Arc::new(cfg), model).with_env(Environment {
        home: Some(home.path().to_path_buf()),
        xdg_config_home: Some(home.path().join("config")),
    });
    Rig { engine, home, cwd }
}

impl Rig {
    pub fn cwd(&self) -> PathBuf {
        self.cwd.path().to_path_buf()
    }
    pub async fn session(&self, fe: &Recorder) -> Session {
        self.engine.new_session(self.cwd(), fe).await
    }
    pub async fn prompt(&self, s: &mut Session, text: &str, fe: &Recorder) -> PromptOutcome {
        self.engine
            .prompt(s, text, &[], fe, &CancellationToken::new())
            .await
    }
    pub fn sessions_dir(&self) -> PathBuf {
        self.engine.sessions_dir(self.cwd.path())
    }
}

/// A hook running `command` with a timeout of `timeout` seconds.
pub fn hook(command: &str, matcher: Option<&str>, timeout: u64, fail_closed: bool) -> HookConfig {
    HookConfig {
        command: command.into(),
        matcher: matcher.map(str::to_string),
        timeout: std::time::Duration::from_secs(timeout),
        fail_closed,
        origin: Origin::User,
    }
}

/// Writes an executable script.
pub fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The user message contents of a request, as sent.
pub fn contents(r: &ChatRequest) -> Vec<String> {
    r.messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The outcome line of a `/compact` prompt.
pub fn compact_line(out: &PromptOutcome) -> Option<String> {
    match &out.command {
        Some(mm::engine::Command::Compact(o)) => Some(o.line()),
        _ => None,
    }
}
