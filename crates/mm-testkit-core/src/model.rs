//! The model in process: a [`ScriptedModel`] answers chat calls from a script of [`Answer`]s and
//! summary calls (`complete`) from a second one, records every request, and checks each history
//! the way the fake HTTP server does. A request that breaks an invariant is answered with an
//! HTTP 417 error, so the failure shows up in the turn's outcome, and is recorded: the model
//! panics when dropped with violations recorded, so no test can miss one.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use mm_core::event::Usage;
use mm_model::{
    ChatRequest, ModelClient, ModelError, ModelInfo, ModelList, ModelResponse, RawToolCall,
    StreamEvent,
};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::WAIT_LIMIT;
use super::invariants::{check_history, describe_roles};

/// What `info` reports.
pub const MODEL_NAME: &str = "fake";
pub const MODEL_URL: &str = "http://fake/v1";
pub const WINDOW: u64 = 8192;

/// One scripted answer. Answers carry 100 input and 10 output tokens of usage unless told
/// otherwise ([`Answer::with_usage`], [`Answer::without_usage`]).
#[derive(Debug, Clone)]
pub struct Answer {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Streams the chunks as text, then returns the response (whose text is their sum).
    Respond {
        chunks: Vec<String>,
        response: ModelResponse,
    },
    /// Streams the chunks, then waits until the call is cancelled.
    Hang {
        chunks: Vec<String>,
    },
    Fail(ModelError),
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

impl Answer {
    fn respond(chunks: Vec<String>, tool_calls: Vec<RawToolCall>) -> Self {
        let finish = if tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        Answer {
            kind: Kind::Respond {
                response: ModelResponse {
                    text: chunks.concat(),
                    tool_calls,
                    finish_reason: Some(finish.into()),
                    usage: Some(usage(100, 10)),
                    ..ModelResponse::default()
                },
                chunks,
            },
        }
    }

    /// A text answer streamed in one piece.
    pub fn text(text: &str) -> Self {
        Self::chunks(&[text])
    }

    /// A text answer streamed in these pieces.
    pub fn chunks(chunks: &[&str]) -> Self {
        let chunks = chunks
            .iter()
            .filter(|c| !c.is_empty())
            .map(|c| c.to_string())
            .collect();
        Self::respond(chunks, Vec::new())
    }

    /// One tool call without an id (the engine gives it its ref).
    pub fn call(name: &str, arguments: Value) -> Self {
        Self::raw_call(name, &arguments.to_string())
    }

    /// One tool call whose arguments string is sent verbatim (e.g. invalid JSON).
    pub fn raw_call(name: &str, arguments: &str) -> Self {
        Self::calls(vec![RawToolCall {
            id: String::new(),
            name: name.into(),
            arguments: arguments.into(),
        }])
    }

    /// Several tool calls in one answer, exactly as given.
    pub fn calls(calls: Vec<RawToolCall>) -> Self {
        Self::respond(Vec::new(), calls)
    }

    /// The call fails with this error.
    pub fn error(error: ModelError) -> Self {
        Answer {
            kind: Kind::Fail(error),
        }
    }

    /// Streams these pieces of text, then waits until the call is cancelled.
    pub fn hang(chunks: &[&str]) -> Self {
        Answer {
            kind: Kind::Hang {
                chunks: chunks.iter().map(|c| c.to_string()).collect(),
            },
        }
    }

    pub fn with_usage(self, input: u64, output: u64) -> Self {
        self.map_response(|r| r.usage = Some(usage(input, output)))
    }

    pub fn without_usage(self) -> Self {
        self.map_response(|r| r.usage = None)
    }

    /// `length`, `stop`, … instead of what the answer implies.
    pub fn with_finish(self, reason: &str) -> Self {
        self.map_response(|r| r.finish_reason = Some(reason.into()))
    }

    fn map_response(mut self, f: impl FnOnce(&mut ModelResponse)) -> Self {
        if let Kind::Respond { response, .. } = &mut self.kind {
            f(response);
        }
        self
    }
}

#[derive(Default)]
struct State {
    answers: VecDeque<Answer>,
    summaries: VecDeque<Answer>,
    requests: Vec<ChatRequest>,
    summary_requests: Vec<Vec<Value>>,
    /// The model each summary request named (`None`: the default).
    summary_models: Vec<Option<String>>,
    violations: Vec<String>,
    /// What `models` answers; `None`: the default (an empty list).
    listing: Option<ModelList>,
    /// What `window_of` answers for a model named here; others: `WINDOW`.
    windows: Vec<(String, u64)>,
    /// The models `window_of` was asked about, in order.
    probed: Vec<String>,
    /// What `info` answers instead of the fake model (a server that cannot be found).
    info_error: Option<ModelError>,
}

/// A model double; see the module's documentation. With nothing scripted, a chat call answers
/// `done` and a summary call `the summary`.
pub struct ScriptedModel {
    state: Mutex<State>,
    /// Bumped on every request, chat or summary.
    called: watch::Sender<u64>,
    /// Bumped on every `info` call, once it has answered.
    informed: watch::Sender<u64>,
}

impl ScriptedModel {
    pub fn new(answers: Vec<Answer>) -> Arc<Self> {
        Arc::new(ScriptedModel {
            state: Mutex::new(State {
                answers: answers.into(),
                ..State::default()
            }),
            called: watch::channel(0).0,
            informed: watch::channel(0).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lists these models (the first the default), as a server's `/v1/models` would.
    pub fn list_models(&self, models: &[&str]) {
        self.lock().listing = Some(ModelList {
            default: models.first().map(|m| m.to_string()).unwrap_or_default(),
            models: models.iter().map(|m| m.to_string()).collect(),
            ..ModelList::default()
        });
    }

    /// `model`'s context window, as a probe of the server would find it.
    pub fn window(&self, model: &str, window: u64) {
        self.lock().windows.push((model.to_string(), window));
    }

    /// `info` (detection) fails with `error` from now on.
    pub fn fail_info(&self, error: ModelError) {
        self.lock().info_error = Some(error);
    }

    /// Waits until `info` has been asked at least once (panics after [`WAIT_LIMIT`]). `info`
    /// never waits, so on the tests' one-thread runtime whoever asked has used its answer too.
    pub async fn wait_for_info(&self) {
        let mut rx = self.informed.subscribe();
        if tokio::time::timeout(WAIT_LIMIT, rx.wait_for(|n| *n > 0))
            .await
            .is_err()
        {
            panic!("scripted model: info was never asked");
        }
    }

    /// The models whose window was probed, in order.
    pub fn probed(&self) -> Vec<String> {
        self.lock().probed.clone()
    }

    /// The model each summary request named (`None`: the default).
    pub fn summary_models(&self) -> Vec<Option<String>> {
        self.lock().summary_models.clone()
    }

    /// Appends a chat answer to the script.
    pub fn push(&self, answer: Answer) {
        self.lock().answers.push_back(answer);
    }

    /// Appends a summary answer to its script.
    pub fn push_summary(&self, answer: Answer) {
        self.lock().summaries.push_back(answer);
    }

    /// Every chat request, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// How many chat requests were made.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }

    /// The messages of every summary request, in order.
    pub fn summary_requests(&self) -> Vec<Vec<Value>> {
        self.lock().summary_requests.clone()
    }

    /// The content of the last user message of the last chat request.
    pub fn last_user_message(&self) -> String {
        let state = self.lock();
        let last = state.requests.last().expect("no model call");
        last.messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }

    /// The history invariant violations found, one line per violating request.
    pub fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    /// No request so far broke a history invariant.
    pub fn assert_invariants(&self) {
        assert_eq!(self.violations(), Vec::<String>::new());
    }

    /// Waits until `n` chat requests have been made (panics after [`WAIT_LIMIT`]).
    pub async fn wait_for_requests(&self, n: usize) {
        let mut rx = self.called.subscribe();
        let reached = async {
            while self.calls() < n {
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(WAIT_LIMIT, reached).await.is_err() {
            panic!(
                "scripted model: waited {} s for {n} chat requests; got {}",
                WAIT_LIMIT.as_secs(),
                self.calls()
            );
        }
    }

    /// Records a request's messages; `Err` (HTTP 417, as the fake server answers) when they break
    /// an invariant.
    fn check(&self, what: &str, messages: &[Value]) -> Result<(), ModelError> {
        let problems = check_history(messages);
        if problems.is_empty() {
            return Ok(());
        }
        let line = format!(
            "{what}: history invariant violated: {} — messages: {}",
            problems.join("; "),
            describe_roles(messages)
        );
        self.lock().violations.push(line.clone());
        Err(ModelError::Http {
            status: 417,
            message: format!("scripted model: {line}"),
        })
    }

    fn bump(&self) {
        self.called.send_modify(|n| *n += 1);
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        let violations = self.violations();
        if !violations.is_empty() && !std::thread::panicking() {
            panic!("the scripted model received invalid histories: {violations:#?}");
        }
    }
}

async fn answer(
    answer: Answer,
    on_event: &(dyn Fn(StreamEvent) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<ModelResponse, ModelError> {
    match answer.kind {
        Kind::Respond { chunks, response } => {
            for c in chunks {
                on_event(StreamEvent::Text(c));
            }
            Ok(response)
        }
        Kind::Hang { chunks } => {
            for c in chunks {
                on_event(StreamEvent::Text(c));
            }
            cancel.cancelled().await;
            Err(ModelError::Cancelled)
        }
        Kind::Fail(e) => Err(e),
    }
}

#[async_trait]
impl ModelClient for ScriptedModel {
    async fn chat(
        &self,
        request: &ChatRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let n = {
            let mut state = self.lock();
            state.requests.push(request.clone());
            state.requests.len()
        };
        let checked = self.check(&format!("chat request {n}"), &request.messages);
        self.bump();
        checked?;
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let next = self.lock().answers.pop_front();
        answer(
            next.unwrap_or_else(|| Answer::text("done")),
            on_event,
            cancel,
        )
        .await
    }

    async fn complete(
        &self,
        messages: Vec<Value>,
        model: Option<&str>,
        _on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let n = {
            let mut state = self.lock();
            state.summary_requests.push(messages.clone());
            state.summary_models.push(model.map(str::to_string));
            state.summary_requests.len()
        };
        let checked = self.check(&format!("summary request {n}"), &messages);
        self.bump();
        checked?;
        let next = self.lock().summaries.pop_front();
        answer(
            next.unwrap_or_else(|| Answer::text("the summary")),
            &|_| {},
            cancel,
        )
        .await
    }

    async fn models(&self, _cancel: &CancellationToken) -> Result<ModelList, ModelError> {
        Ok(self.lock().listing.clone().unwrap_or_default())
    }

    fn models_now(&self) -> Option<ModelList> {
        self.lock().listing.clone()
    }

    async fn window_of(&self, model: &str, _cancel: &CancellationToken) -> u64 {
        let mut state = self.lock();
        state.probed.push(model.to_string());
        let known = state.windows.iter().find(|(m, _)| m == model);
        known.map_or(WINDOW, |(_, w)| *w)
    }

    async fn info(&self, _cancel: &CancellationToken) -> Result<ModelInfo, ModelError> {
        let error = self.lock().info_error.clone();
        self.informed.send_modify(|n| *n += 1);
        match error {
            Some(e) => Err(e),
            None => Ok(ModelInfo {
                url: MODEL_URL.into(),
                name: MODEL_NAME.into(),
                context_window: WINDOW,
                warning: None,
            }),
        }
    }
}
