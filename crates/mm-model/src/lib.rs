//! The model client: OpenAI-compatible Chat Completions over HTTP, streamed (docs/engine.md).
#![forbid(unsafe_code)]

pub mod detect;
mod errors;
pub mod openai;
pub mod repetition;
mod slots;
pub mod sse;
pub mod text_calls;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

// The vocabulary under the names the modules of this crate use (`crate::config::…`).
use mm_core::{config, event, tasks};

use crate::event::Usage;
use mm_core::config::RepeatLimits;
pub use repetition::Repetition;

/// One request to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// Messages in the wire shape (`history::to_wire`).
    pub messages: Vec<Value>,
    /// Tool definitions in the wire shape (`{"type": "function", "function": {…}}`).
    pub tools: Vec<Value>,
    /// Names of the tools whose calls are recognised when the model writes them as text; empty
    /// when `model.textToolCalls` is off.
    pub text_tool_names: Vec<String>,
    /// The model to ask, when the session chose one of the server's models; `None`: the
    /// configured or detected one.
    pub model: Option<String>,
    /// Watch the stream for repetition and stop it when found (`[loop]`); `None`: do not watch.
    pub repetition: Option<RepeatLimits>,
    /// The conversation asking, so that a server with several prompt caches keeps each in its
    /// own ([`Conversation`]); `None`: the server picks.
    pub conversation: Option<Conversation>,
}

/// Who asks: a session, or the child of one (a `task`'s). On a llama.cpp server with several
/// slots a session keeps one slot and its child takes another (`id_slot`), so that the child's
/// requests do not evict the parent's cached prefix; other servers are sent nothing of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    pub id: String,
    /// The parent session's id, for a child.
    pub parent: Option<String>,
}

/// A piece of the streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    Text(String),
    Thought(String),
    /// The answer has not started: the server loads the model, or the call is retried.
    Waiting(event::Waiting),
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawToolCall {
    /// The model's id; empty when it gave none (or the call was written as text).
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The whole answer of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// The answer's text (without reasoning, without tool calls written as text).
    pub text: String,
    pub tool_calls: Vec<RawToolCall>,
    /// `stop`, `tool_calls`, `length`, … as the server said.
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The model repeated itself and the stream was dropped: `text` is cut after the first
    /// occurrence, tool calls are dropped, `finish_reason` and usage are what came before.
    pub repeated: Option<Repetition>,
}

/// What the client knows of the server once detection is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// Base URL, ending in `/v1` (or `/engines/v1`).
    pub url: String,
    pub name: String,
    /// The context window, 0 when unknown.
    pub context_window: u64,
    /// What detection found wrong at a configured URL that it did not fail on: nothing there
    /// answered a model listing (a 404, not an OpenAI-compatible server), with how to fix it.
    pub warning: Option<String>,
}

/// The models a server lists, and the one sessions use unless they choose another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelList {
    /// The configured or detected model (empty when none is known).
    pub default: String,
    /// The listing's ids without embedding models, in the server's order; the default among
    /// them (first when the listing does not name it). Empty when nothing can be listed.
    pub models: Vec<String>,
    /// What a server that loads its models on demand says of each (llama.cpp's router mode),
    /// by id; empty for a server that does not say.
    pub status: ModelStatuses,
}

/// The status of each of a router's models, by id.
pub type ModelStatuses = std::collections::BTreeMap<String, ModelStatus>;

/// Where one of a router's models is (llama.cpp's `GET /models` `status.value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStatus {
    Loaded,
    Loading,
    Unloaded,
    /// Loaded, its weights set aside while idle: answers after a short wake-up.
    Sleeping,
    /// Being downloaded before it loads.
    Downloading,
    /// Its last load failed.
    Failed,
}

impl ModelStatus {
    /// As llama.cpp says it, `failed` for an unloaded model whose load failed; `None` for a
    /// value it does not know.
    pub fn parse(status: &Value) -> Option<ModelStatus> {
        if status.get("failed").and_then(Value::as_bool) == Some(true) {
            return Some(ModelStatus::Failed);
        }
        Some(match status.get("value")?.as_str()? {
            "loaded" => ModelStatus::Loaded,
            "loading" => ModelStatus::Loading,
            "unloaded" => ModelStatus::Unloaded,
            "sleeping" => ModelStatus::Sleeping,
            "downloading" => ModelStatus::Downloading,
            _ => return None,
        })
    }

    /// What the `/model` list and an editor's model option say.
    pub fn label(self) -> &'static str {
        match self {
            ModelStatus::Loaded => "loaded",
            ModelStatus::Loading => "loading",
            ModelStatus::Unloaded => "not loaded",
            ModelStatus::Sleeping => "sleeping",
            ModelStatus::Downloading => "downloading",
            ModelStatus::Failed => "failed to load",
        }
    }

    /// Whether a call to it waits for the server to load it first (a failed one is tried
    /// again).
    pub fn must_load(self) -> bool {
        self != ModelStatus::Loaded
    }
}

/// A failed model call; `Display` is the one-line explanation users see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("model server unreachable at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// Nothing listens at the URL: not worth retrying for seconds, and most often a server not
    /// started or a wrong port.
    #[error(
        "cannot reach the model server at {url}: connection refused — is it running? (mm doctor checks)"
    )]
    Refused { url: String },
    #[error("model server answered {status}: {message}")]
    Http { status: u16, message: String },
    /// The server says the request does not fit its context (`n_ctx` when it said).
    #[error("model server answered {status}: {message}")]
    ContextExceeded {
        status: u16,
        message: String,
        n_ctx: Option<u64>,
    },
    #[error("stream broke after {bytes} bytes: {reason}")]
    StreamBroke { bytes: u64, reason: String },
    #[error("model server sent nothing for {} s (model.requestTimeout)", crate::config::seconds(*.after))]
    Timeout { after: std::time::Duration },
    #[error("model server sent a malformed event: {0}")]
    Malformed(String),
    #[error("{0}")]
    NoServer(String),
    #[error("cancelled")]
    Cancelled,
}

#[async_trait]
pub trait ModelClient: Send + Sync {
    /// Streams one answer; `on_event` receives text and reasoning as they arrive. Tool calls
    /// written as text are held back and returned as calls.
    async fn chat(
        &self,
        request: &ChatRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError>;

    /// One non-streamed call without tools (the summary of a compression), to `model` when the
    /// session chose one (`None`: the configured or detected one); `on_event` hears of its waits
    /// (retries of a loading or failing server), as a chat's does.
    async fn complete(
        &self,
        messages: Vec<Value>,
        model: Option<&str>,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError>;

    /// Waits for detection (server, model, context window) and returns what is known;
    /// `Err(Cancelled)` when `cancel` fires first (detection goes on in the background).
    async fn info(&self, cancel: &CancellationToken) -> Result<ModelInfo, ModelError>;

    /// Waits for detection like [`ModelClient::info`], saying each of its waits for a server
    /// still loading its model (`GET /models` answering 503) to `on_event`: detection usually
    /// runs in the background, where nobody hears of them, so a turn calls this before the
    /// model calls that would wait silently. Its failure is left to the call that follows.
    async fn await_detection(
        &self,
        _on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        _cancel: &CancellationToken,
    ) {
    }

    /// Starts detection in the background, if it has not started. Front ends call it once the
    /// work that must be fast (the ACP `initialize` answer, the prompt) is done; a call to the
    /// model starts it anyway. The probe is one of `tasks`, cut at shutdown.
    fn warm_up(&self, _tasks: &tasks::Tasks) {}

    /// The models a session may switch to (`/v1/models`); waits for detection. A client that
    /// cannot list answers an empty list.
    async fn models(&self, _cancel: &CancellationToken) -> Result<ModelList, ModelError> {
        Ok(ModelList::default())
    }

    /// The same without waiting: `None` while detection has not completed.
    fn models_now(&self) -> Option<ModelList> {
        None
    }

    /// The context window of one of the server's models (a session switched to it), probed
    /// again; 0 when no probe tells. The configured `contextWindow` wins, as for the default model.
    async fn window_of(&self, _model: &str, cancel: &CancellationToken) -> u64 {
        self.info(cancel).await.map_or(0, |i| i.context_window)
    }

    /// Which server detection found (the banner's hint for a small window,
    /// `detect::small_window_warning`); `Unknown` when not known.
    async fn server_kind(&self) -> detect::ServerKind {
        detect::ServerKind::Unknown
    }
}
