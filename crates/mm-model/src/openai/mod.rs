//! The OpenAI-compatible client: one persistent HTTP client, detection in the background, streamed
//! Chat Completions parsed as the bytes arrive, retries for a loading or restarting server, and
//! every wait raced against cancellation. What the server's failures become (`ModelError`s
//! and their lines) is the crate's errors.rs.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::detect::{self, Detected, Prober, ServerKind};
use super::slots::Slots;
use super::sse::{ChunkAccumulator, SseEvent, SseParser, parse_usage, truncate_chars};
use super::text_calls::{Family, TextCalls, Tools};
use super::{
    ChatRequest, ModelClient, ModelError, ModelInfo, ModelList, ModelResponse, StreamEvent,
};
use crate::config::ModelConfig;
use crate::errors::{describe_error, transport_error};
pub use crate::errors::{http_error, server_message};
use crate::event::Waiting;
use crate::tasks::Tasks;

const MAX_TRIES: u32 = 5;
const RETRY_BUDGET: Duration = Duration::from_secs(30);
/// After `[DONE]`, how long to wait for the body's end so the connection can be reused.
const DRAIN_AFTER_DONE: Duration = Duration::from_millis(200);

/// What tests (and nothing else) change.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The addresses probed when no URL is configured.
    pub candidates: Vec<(ServerKind, String)>,
    /// The first retry's wait; it doubles.
    pub retry_base: Duration,
    pub probe_timeout: Duration,
}

impl ClientOptions {
    /// Without the candidates on `ports` (`tools.networkExpose`: a port mm forwards from the
    /// host's loopback into a fence is a server a command started, never a model server to
    /// find).
    pub fn skipping(mut self, ports: &[u16]) -> Self {
        self.candidates
            .retain(|(_, url)| !ports.iter().any(|p| detect::on_port(url, *p)));
        self
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            candidates: detect::default_candidates(),
            retry_base: Duration::from_millis(500),
            probe_timeout: detect::PROBE_TIMEOUT,
        }
    }
}

pub struct OpenAiClient {
    inner: Arc<Inner>,
    /// Background detection was started.
    warmed: AtomicBool,
}

struct Inner {
    config: ModelConfig,
    window_override: u64,
    options: ClientOptions,
    http: OnceLock<reqwest::Client>,
    detected: tokio::sync::OnceCell<Detected>,
    /// 0 while unknown.
    context_window: AtomicU64,
    /// A llama.cpp server's slots (`detect::probe_slots`); 0 while unknown or another server.
    total_slots: AtomicU32,
    /// The slot each conversation takes when there are several.
    slots: Slots,
    reprobed: AtomicBool,
    /// A router's listing as last asked (its statuses change as it loads and unloads).
    listing: std::sync::Mutex<Option<Value>>,
    /// What detection waits for while a server still loads its model (`None` when it does
    /// not): detection often runs in the background with nobody to tell, so a chat that waits
    /// for it says each wait as its own ([`Inner::detection_told`]).
    detection_waits: tokio::sync::watch::Sender<Option<Waiting>>,
}

impl OpenAiClient {
    /// `context_window_override` non-zero: the window, never probed. Detection starts with
    /// [`ModelClient::warm_up`] or at the first call, not here: building the HTTP client and
    /// probing the server must not delay start-up.
    pub fn new(model_config: &ModelConfig, context_window_override: u64) -> Self {
        Self::with_options(
            model_config,
            context_window_override,
            ClientOptions::default(),
        )
    }

    pub fn with_options(
        model_config: &ModelConfig,
        context_window_override: u64,
        options: ClientOptions,
    ) -> Self {
        let inner = Arc::new(Inner {
            config: model_config.clone(),
            window_override: context_window_override,
            options,
            http: OnceLock::new(),
            detected: tokio::sync::OnceCell::new(),
            context_window: AtomicU64::new(context_window_override),
            total_slots: AtomicU32::new(0),
            slots: Slots::for_process(),
            reprobed: AtomicBool::new(false),
            listing: std::sync::Mutex::new(None),
            detection_waits: tokio::sync::watch::Sender::new(None),
        });
        Self {
            inner,
            warmed: AtomicBool::new(false),
        }
    }

    /// The server kind detection found (`Unknown` until it is done or when it failed).
    pub fn detected_kind(&self) -> ServerKind {
        self.inner
            .detected
            .get()
            .map_or(ServerKind::Unknown, |d| d.kind)
    }

    /// Waits for detection (it starts if it has not) and returns what it found.
    pub async fn detected(&self, cancel: &CancellationToken) -> Result<Detected, ModelError> {
        or_cancel(cancel, self.inner.detection()).await?.cloned()
    }

    /// `GET {server root}{path}` (the server's own endpoints: llama.cpp `/props`, Ollama
    /// `/api/ps`) within `timeout`; `None` unless it answers 200 with JSON.
    pub async fn get_native(
        &self,
        path: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<Value> {
        let detected = or_cancel(cancel, self.inner.detection()).await.ok()?.ok()?;
        let mut prober = self.inner.prober().ok()?;
        prober.timeout = timeout;
        let url = format!("{}{path}", detected.root);
        or_cancel(cancel, prober.get(&url)).await.ok()?
    }

    /// One request shaped by the caller (`mm doctor`): its own messages, tools, `tool_choice`
    /// and `max_tokens`, streamed or not. The answer is read as [`ModelClient::chat`] reads it,
    /// except that tool calls written as text are left in the text: the caller sees what the
    /// server sent.
    pub async fn raw_chat(
        &self,
        request: &RawRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let inner = &self.inner;
        let detected = or_cancel(cancel, inner.detection()).await??;
        let mut body = inner.body(
            &detected.name,
            &request.messages,
            &request.tools,
            request.stream,
        );
        if let Some(choice) = &request.tool_choice {
            body["tool_choice"] = choice.clone();
        }
        if let Some(n) = request.max_tokens {
            body["max_tokens"] = json!(n);
        }
        let result = async {
            let response = inner.send(&detected.url, &body, on_event, cancel).await?;
            // No text-call names: a call written as text stays in the text.
            let reading = ChatRequest::default();
            inner
                .read_stream(response, &reading, None, on_event, cancel)
                .await
        }
        .await;
        if !cancel.is_cancelled() {
            inner.learn_window(detected, &result).await;
        }
        result
    }
}

/// A request for [`OpenAiClient::raw_chat`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawRequest {
    /// In the wire shape.
    pub messages: Vec<Value>,
    /// In the wire shape (`{"type": "function", "function": {…}}`).
    pub tools: Vec<Value>,
    /// Sent as it is when set (`"required"`, `{"type": "function", …}`).
    pub tool_choice: Option<Value>,
    /// Replaces `model.maxTokens` for this request.
    pub max_tokens: Option<u64>,
    pub stream: bool,
}

/// A future raced against cancellation.
async fn or_cancel<T>(
    cancel: &CancellationToken,
    future: impl Future<Output = T>,
) -> Result<T, ModelError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ModelError::Cancelled),
        value = future => Ok(value),
    }
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    ["127.", "localhost", "[::1]", "0.0.0.0"]
        .iter()
        .any(|p| rest.starts_with(p))
}

/// A whole (non-streamed) completion as one chunk, so it goes through the same accumulator.
fn completion_as_chunk(completion: &Value) -> Value {
    let mut message = completion
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for (index, call) in calls.iter_mut().enumerate() {
            if let Some(call) = call.as_object_mut() {
                call.insert("index".into(), json!(index));
            }
        }
    }
    let finish = completion
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("finish_reason"))
        .cloned()
        .unwrap_or(Value::Null);
    json!({
        "choices": [{"index": 0, "delta": message, "finish_reason": finish}],
        "usage": completion.get("usage").cloned().unwrap_or(Value::Null),
    })
}

impl Inner {
    fn http(&self) -> Result<&reqwest::Client, ModelError> {
        if let Some(client) = self.http.get() {
            return Ok(client);
        }
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90));
        // A proxy from the environment must not capture a server on this machine.
        if self.config.url.trim().is_empty() || is_loopback(self.config.url.trim()) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| ModelError::Unreachable {
            url: self.config.url.clone(),
            reason: format!("cannot create the HTTP client: {e}"),
        })?;
        let _ = self.http.set(client);
        self.http.get().ok_or_else(|| ModelError::Unreachable {
            url: self.config.url.clone(),
            reason: "cannot create the HTTP client".into(),
        })
    }

    /// `model.apiKey`, for the configured `model.url` only: a server found on the usual ports
    /// (one the model left listening on 8080, say) is not the one the user gave the key for.
    /// A project's file sets neither (config/trust.rs), so both come from the user's layers.
    fn api_key(&self) -> &str {
        if self.config.url.trim().is_empty() {
            ""
        } else {
            &self.config.api_key
        }
    }

    fn prober(&self) -> Result<Prober, ModelError> {
        Ok(Prober {
            http: self.http()?.clone(),
            api_key: self.api_key().to_string(),
            timeout: self.options.probe_timeout,
        })
    }

    /// Server, model and window: done once (a failure is not kept, so a server started later
    /// is found by the next call).
    async fn detection(&self) -> Result<&Detected, ModelError> {
        self.detected
            .get_or_try_init(|| async {
                let prober = self.prober()?;
                // A server still loading its model answers 503 here too (llama.cpp): waited
                // for like a chat request.
                let started = Instant::now();
                let mut backoff = self.options.retry_base;
                let mut tries = 0;
                let mut detected = loop {
                    tries += 1;
                    let found = detect::detect(
                        &prober,
                        &self.config.url,
                        &self.config.name,
                        &self.options.candidates,
                    )
                    .await;
                    match found {
                        Err(error @ ModelError::Http { status: 503, .. })
                            if tries < MAX_TRIES
                                && started.elapsed() + backoff <= RETRY_BUDGET =>
                        {
                            self.detection_waits
                                .send_replace(Some(Waiting::Retrying {
                                    error: error.to_string(),
                                    attempt: tries + 1,
                                    of: MAX_TRIES,
                                    after: backoff,
                                }));
                            tokio::time::sleep(backoff).await;
                            backoff *= 2;
                        }
                        other => {
                            self.detection_waits.send_replace(None);
                            break other?;
                        }
                    }
                };
                let window = async {
                    if self.window_override == 0 {
                        let window = detect::probe_context_window(&prober, &detected).await;
                        self.context_window.store(window, Ordering::Relaxed);
                    }
                };
                let slots = async {
                    let total = detect::probe_slots(&prober, &detected).await;
                    self.total_slots.store(total, Ordering::Relaxed);
                };
                let (_, _, family) = tokio::join!(
                    window,
                    slots,
                    detect::probe_family(&prober, &detected)
                );
                detected.family = family;
                tracing::debug!(url = %detected.url, model = %detected.name, kind = ?detected.kind, family = ?detected.family, "model server detected");
                Ok(detected)
            })
            .await
    }

    /// [`Inner::detection`], each of its waits for a loading server said to `on_event` (the
    /// one under way when this call began, then each new one) until it is done.
    async fn detection_told(
        &self,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
    ) -> Result<&Detected, ModelError> {
        if let Some(detected) = self.detected.get() {
            return Ok(detected);
        }
        let mut waits = self.detection_waits.subscribe();
        if let Some(wait) = waits.borrow_and_update().clone() {
            on_event(StreamEvent::Waiting(wait));
        }
        let detection = self.detection();
        tokio::pin!(detection);
        loop {
            tokio::select! {
                detected = &mut detection => return detected,
                // The sender lives as long as `self`: never closed while this runs.
                Ok(()) = waits.changed() => {
                    if let Some(wait) = waits.borrow_and_update().clone() {
                        on_event(StreamEvent::Waiting(wait));
                    }
                }
            }
        }
    }

    fn body(&self, model: &str, messages: &[Value], tools: &[Value], stream: bool) -> Value {
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(model));
        body.insert("messages".into(), json!(messages));
        if !tools.is_empty() {
            body.insert("tools".into(), json!(tools));
        }
        body.insert("stream".into(), json!(stream));
        if stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if let Some(t) = self.config.temperature {
            body.insert("temperature".into(), json!(t));
        }
        let window = self.context_window.load(Ordering::Relaxed);
        if let Some(n) = self.config.answer_cap(window) {
            body.insert("max_tokens".into(), json!(n));
        }
        Value::Object(body)
    }

    fn idle(&self) -> Duration {
        self.config.request_timeout
    }

    fn timeout_error(&self) -> ModelError {
        ModelError::Timeout {
            after: self.config.request_timeout,
        }
    }

    /// Sends the request until it gets a successful answer, retrying what a loading or
    /// restarting server causes; each retry is said to `on_event` before its wait.
    async fn send(
        &self,
        base_url: &str,
        body: &Value,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ModelError> {
        let http = self.http()?;
        let url = format!("{base_url}/chat/completions");
        let started = Instant::now();
        let mut backoff = self.options.retry_base;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut request = http.post(&url).json(body);
            if !self.api_key().is_empty() {
                request = request.bearer_auth(self.api_key());
            }
            let sent = or_cancel(cancel, tokio::time::timeout(self.idle(), request.send())).await?;
            let (error, wait) = match sent {
                Err(_) => return Err(self.timeout_error()),
                Ok(Err(e)) => {
                    let (error, retry) = transport_error(base_url, &e);
                    (error, retry.then_some(backoff))
                }
                Ok(Ok(response)) if response.status().is_success() => return Ok(response),
                Ok(Ok(response)) => {
                    let status = response.status().as_u16();
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let text =
                        or_cancel(cancel, tokio::time::timeout(self.idle(), response.text()))
                            .await?
                            .map_err(|_| self.timeout_error())?
                            .unwrap_or_default();
                    let wait = match status {
                        503 => Some(backoff),
                        429 => Some(retry_after.unwrap_or(backoff)),
                        _ => None,
                    };
                    (http_error(status, &text), wait)
                }
            };
            let Some(wait) = wait else {
                return Err(error);
            };
            if tries >= MAX_TRIES || started.elapsed() + wait > RETRY_BUDGET {
                return Err(error);
            }
            tracing::debug!(%error, ?wait, tries, "model call failed, retrying");
            on_event(StreamEvent::Waiting(Waiting::Retrying {
                error: error.to_string(),
                attempt: tries + 1,
                of: MAX_TRIES,
                after: wait,
            }));
            or_cancel(cancel, tokio::time::sleep(wait)).await?;
            backoff *= 2;
        }
    }

    /// Reads the answer as it streams; the response is complete only with `[DONE]` or a
    /// `finish_reason`.
    ///
    /// With `request.repetition`, a stream that repeats itself is dropped at once (the server
    /// sees the connection close and stops generating) and the cut answer returned.
    async fn read_stream(
        &self,
        response: reqwest::Response,
        request: &ChatRequest,
        family: Option<Family>,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let mut parser = SseParser::new();
        let text_calls = (!request.text_tool_names.is_empty()).then(|| TextCalls {
            tools: Tools::from_wire(&request.tools, &request.text_tool_names),
            family,
        });
        let mut acc =
            ChunkAccumulator::with_text_calls(text_calls).with_repetition(request.repetition);
        let mut stream = response.bytes_stream();
        let mut bytes: u64 = 0;
        let mut body = Vec::new();
        let mut done = false;
        let feed = |acc: &mut ChunkAccumulator, event: &SseEvent, bytes: u64| {
            let events = acc.feed(event).map_err(|e| match e {
                ModelError::StreamBroke { reason, .. } => ModelError::StreamBroke { bytes, reason },
                other => other,
            })?;
            for event in events {
                on_event(event);
            }
            Ok::<(), ModelError>(())
        };
        while !done {
            let next = or_cancel(cancel, tokio::time::timeout(self.idle(), stream.next())).await?;
            match next {
                Err(_) => return Err(self.timeout_error()),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(ModelError::StreamBroke {
                        bytes,
                        reason: describe_error(&e).0,
                    });
                }
                Ok(Some(Ok(chunk))) => {
                    bytes += chunk.len() as u64;
                    if is_json {
                        body.extend_from_slice(&chunk);
                        continue;
                    }
                    for event in parser.feed(&chunk) {
                        done |= event == SseEvent::Done;
                        feed(&mut acc, &event, bytes)?;
                        if acc.repeated().is_some() {
                            // Dropping the body closes the connection: the server stops.
                            drop(stream);
                            return Ok(acc.finish().1);
                        }
                    }
                }
            }
        }
        if done {
            // Reading the body's end lets the connection go back to the pool.
            let _ = or_cancel(
                cancel,
                tokio::time::timeout(DRAIN_AFTER_DONE, stream.next()),
            )
            .await;
        } else if is_json {
            let completion: Value = serde_json::from_slice(&body).map_err(|_| {
                ModelError::Malformed(truncate_chars(&String::from_utf8_lossy(&body), 120))
            })?;
            feed(
                &mut acc,
                &SseEvent::Data(completion_as_chunk(&completion).to_string()),
                bytes,
            )?;
            feed(&mut acc, &SseEvent::Done, bytes)?;
        } else if let Some(event) = parser.finish() {
            feed(&mut acc, &event, bytes)?;
        }
        if !acc.is_complete() {
            return Err(ModelError::StreamBroke {
                bytes,
                reason: "the server closed the stream before the answer was complete".into(),
            });
        }
        let (tail, response) = acc.finish();
        for event in tail {
            on_event(event);
        }
        Ok(response)
    }

    /// A router's model that is not loaded: said before the call, which waits while the server
    /// loads it (a router answers once the model is up, with no 503 to retry on).
    async fn announce_loading(
        &self,
        detected: &Detected,
        model: &str,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) {
        if !detected.router {
            return;
        }
        let Ok(prober) = self.prober() else {
            return;
        };
        let status = self
            .router_listing(detected, &prober, cancel)
            .await
            .and_then(|l| detect::model_status(&l, model));
        if status.is_some_and(super::ModelStatus::must_load) {
            on_event(StreamEvent::Waiting(Waiting::Loading {
                model: model.to_string(),
            }));
        }
    }

    /// A router's listing asked again, and kept for [`ModelClient::models_now`].
    async fn router_listing(
        &self,
        detected: &Detected,
        prober: &Prober,
        cancel: &CancellationToken,
    ) -> Option<Value> {
        let url = format!("{}/models", detected.url);
        let listing = or_cancel(cancel, prober.get(&url)).await.ok().flatten()?;
        if let Ok(mut kept) = self.listing.lock() {
            *kept = Some(listing.clone());
        }
        Some(listing)
    }

    /// After an answer: a window learnt from the error, or probed again once the model is loaded.
    async fn learn_window(&self, detected: &Detected, result: &Result<ModelResponse, ModelError>) {
        if self.window_override != 0 {
            return;
        }
        match result {
            Err(ModelError::ContextExceeded {
                n_ctx: Some(n_ctx), ..
            }) => {
                let _ = self.context_window.compare_exchange(
                    0,
                    *n_ctx,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            Ok(_)
                if (detected.kind.loads_on_demand() || detected.router)
                    && !self.reprobed.swap(true, Ordering::Relaxed) =>
            {
                if let Ok(prober) = self.prober() {
                    let window = detect::probe_context_window(&prober, detected).await;
                    if window > 0 {
                        self.context_window.store(window, Ordering::Relaxed);
                    }
                }
            }
            _ => {}
        }
    }
}

#[async_trait]
impl ModelClient for OpenAiClient {
    fn warm_up(&self, tasks: &Tasks) {
        if self.warmed.swap(true, Ordering::Relaxed) {
            return;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            let background = Arc::clone(&self.inner);
            tasks.spawn_until_shutdown(async move {
                let _ = background.detection().await;
            });
        }
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let inner = &self.inner;
        let detected = or_cancel(cancel, inner.detection_told(on_event)).await??;
        let model = request.model.as_deref().unwrap_or(&detected.name);
        let mut body = inner.body(model, &request.messages, &request.tools, true);
        // Only a llama.cpp server with several slots is sent one (`probe_slots`): to another
        // server the field is unknown.
        let total = inner.total_slots.load(Ordering::Relaxed);
        let slot = (request.conversation.as_ref()).and_then(|c| inner.slots.of(c, total));
        if let Some(slot) = slot {
            body["id_slot"] = json!(slot);
        }
        // A model the session chose has the family its name says.
        let family = if model == detected.name {
            detected.family
        } else {
            Family::from_name(model)
        };
        let result = async {
            inner
                .announce_loading(detected, model, on_event, cancel)
                .await;
            let response = inner.send(&detected.url, &body, on_event, cancel).await?;
            inner
                .read_stream(response, request, family, on_event, cancel)
                .await
        }
        .await;
        if !cancel.is_cancelled() {
            inner.learn_window(detected, &result).await;
        }
        result
    }

    async fn await_detection(
        &self,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) {
        let _ = or_cancel(cancel, self.inner.detection_told(on_event)).await;
    }

    async fn complete(
        &self,
        messages: Vec<Value>,
        model: Option<&str>,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let inner = &self.inner;
        let detected = or_cancel(cancel, inner.detection_told(on_event)).await??;
        let body = inner.body(model.unwrap_or(&detected.name), &messages, &[], false);
        let response = inner.send(&detected.url, &body, on_event, cancel).await?;
        let text = or_cancel(cancel, tokio::time::timeout(inner.idle(), response.text()))
            .await?
            .map_err(|_| inner.timeout_error())?
            .map_err(|e| ModelError::StreamBroke {
                bytes: 0,
                reason: describe_error(&e).0,
            })?;
        let completion: Value = serde_json::from_str(&text)
            .map_err(|_| ModelError::Malformed(truncate_chars(&text, 120)))?;
        let mut acc = ChunkAccumulator::new(&[]);
        acc.feed(&SseEvent::Data(
            completion_as_chunk(&completion).to_string(),
        ))?;
        let (_, mut response) = acc.finish();
        if response.usage.is_none() {
            response.usage = completion.get("usage").and_then(parse_usage);
        }
        Ok(response)
    }

    async fn info(&self, cancel: &CancellationToken) -> Result<ModelInfo, ModelError> {
        let detected = or_cancel(cancel, self.inner.detection()).await??;
        Ok(ModelInfo {
            url: detected.url.clone(),
            name: detected.name.clone(),
            context_window: self.inner.context_window.load(Ordering::Relaxed),
            warning: detected.problem.clone(),
        })
    }

    async fn models(&self, cancel: &CancellationToken) -> Result<ModelList, ModelError> {
        let detected = or_cancel(cancel, self.inner.detection()).await??;
        if detected.router {
            // Its statuses change as it loads and unloads: asked again.
            let prober = self.inner.prober()?;
            if let Some(listing) = self.inner.router_listing(detected, &prober, cancel).await {
                return Ok(detect::listed_from(detected, &listing));
            }
            if cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
        }
        Ok(detect::listed_models(detected))
    }

    fn models_now(&self) -> Option<ModelList> {
        let detected = self.inner.detected.get()?;
        let kept = self.inner.listing.lock().ok().and_then(|l| l.clone());
        Some(match kept {
            Some(listing) => detect::listed_from(detected, &listing),
            None => detect::listed_models(detected),
        })
    }

    async fn window_of(&self, model: &str, cancel: &CancellationToken) -> u64 {
        if self.inner.window_override != 0 {
            return self.inner.window_override;
        }
        let Ok(Ok(detected)) = or_cancel(cancel, self.inner.detection()).await else {
            return 0;
        };
        if model == detected.name {
            return self.inner.context_window.load(Ordering::Relaxed);
        }
        let Ok(prober) = self.inner.prober() else {
            return 0;
        };
        let other = Detected {
            name: model.to_string(),
            ..detected.clone()
        };
        or_cancel(cancel, detect::probe_context_window(&prober, &other))
            .await
            .unwrap_or(0)
    }

    async fn server_kind(&self) -> ServerKind {
        match self.inner.detection().await {
            Ok(detected) => detected.kind,
            Err(_) => ServerKind::Unknown,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_whole_completion_goes_through_the_accumulator() {
        let completion = json!({
            "choices": [{"message": {"role": "assistant", "content": "<think>hm</think>Summary.", "tool_calls": [
                {"id": "", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                {"id": "", "type": "function", "function": {"name": "b", "arguments": "{}"}}
            ]}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}
        });
        let mut acc = ChunkAccumulator::new(&[]);
        acc.feed(&SseEvent::Data(
            completion_as_chunk(&completion).to_string(),
        ))
        .unwrap();
        let (_, response) = acc.finish();
        assert_eq!(response.text, "Summary.");
        assert_eq!(response.tool_calls.len(), 2);
        assert_eq!(response.usage.unwrap().input_tokens, 10);
    }
}
