//! A fake OpenAI-compatible model server for tests, benchmarks and demos.
//!
//! It answers `POST /v1/chat/completions` from a script (a queue of [`Reply`]s), serves
//! `GET /v1/models`, `GET /props` and `GET /health`, records every chat request body and checks
//! the history invariants real servers enforce: a request that breaks one is answered HTTP 417
//! with an explanation, so the failure shows up in the agent's own error output.
//!
//! Plain HTTP/1.1 over `tokio::net::TcpListener` with keep-alive (reqwest reuses connections);
//! streamed answers use chunked transfer encoding. Only normal dependencies of the crate are used
//! (tokio, tokio-util, serde_json), because `src/bin/mm-fake-server.rs` includes this file too.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long the `wait_for_*` helpers wait before they panic, so a broken test fails instead of
/// hanging.
pub const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// The model id the server reports unless [`Options::model`] says otherwise.
pub const FAKE_MODEL: &str = "fake-model";

// ------------------------------------------------------------------ script

/// One piece of a streamed answer; each becomes one SSE event (`data: …`).
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// `delta.content`
    Text(String),
    /// `delta.reasoning_content`
    Reasoning(String),
    /// A fragment of tool call `index`. The first fragment of a call carries its `name`; when
    /// it has a name but no `id`, the server assigns `call_fake_<n>` (n counts per server).
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// An empty delta with this `finish_reason`.
    Finish(String),
    /// A usage chunk with empty `choices`.
    Usage { prompt: u64, completion: u64 },
    /// `choices[0].delta` exactly as given.
    Delta(Value),
    /// The payload of the `data:` line verbatim (for malformed-event tests).
    Raw(String),
    /// `data: [DONE]`
    Done,
}

impl Chunk {
    pub fn text(s: impl Into<String>) -> Self {
        Chunk::Text(s.into())
    }

    pub fn reasoning(s: impl Into<String>) -> Self {
        Chunk::Reasoning(s.into())
    }

    /// The first fragment of a call: index, name, empty arguments, id assigned by the server.
    pub fn call_start(index: usize, name: impl Into<String>) -> Self {
        Chunk::ToolCall {
            index,
            id: None,
            name: Some(name.into()),
            arguments: String::new(),
        }
    }

    /// A later fragment of a call's arguments.
    pub fn call_args(index: usize, fragment: impl Into<String>) -> Self {
        Chunk::ToolCall {
            index,
            id: None,
            name: None,
            arguments: fragment.into(),
        }
    }

    pub fn finish(reason: impl Into<String>) -> Self {
        Chunk::Finish(reason.into())
    }
}

/// A tool call for [`Reply::tool_calls`].
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: Option<String>,
    pub name: String,
    /// The arguments string as sent (normally JSON, but anything for bad-argument tests).
    pub arguments: String,
}

impl Call {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Call {
            id: None,
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    /// A call whose arguments string is sent verbatim (e.g. invalid JSON).
    pub fn raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Call {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Body {
    Stream(Vec<Chunk>),
    Error { status: u16, body: Value },
    Json(Value),
    Hang,
}

/// One scripted answer to a chat request.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    body: Body,
    /// Chunk `i` is written at `start + interval * (i + 1)` (a schedule, so pacing does not drift).
    interval: Duration,
    /// Close the connection after this many chunks (0: before the response head).
    cut_after: Option<usize>,
    headers: Vec<(String, String)>,
}

impl Reply {
    fn new(body: Body) -> Self {
        Reply {
            body,
            interval: Duration::ZERO,
            cut_after: None,
            headers: Vec::new(),
        }
    }

    /// Exactly these chunks (add [`Chunk::Done`] yourself), one every `interval`.
    pub fn chunks(chunks: Vec<Chunk>, interval: Duration) -> Self {
        Reply {
            interval,
            ..Self::new(Body::Stream(chunks))
        }
    }

    /// A text answer streamed word by word, `finish_reason: "stop"`, `[DONE]`.
    pub fn text(text: &str) -> Self {
        let mut chunks: Vec<Chunk> = split_words(text).into_iter().map(Chunk::Text).collect();
        chunks.push(Chunk::finish("stop"));
        chunks.push(Chunk::Done);
        Self::new(Body::Stream(chunks))
    }

    /// One tool call, its arguments split across several deltas.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::tool_calls(vec![Call::new(name, arguments)])
    }

    /// Several tool calls (indexes 0, 1, …), each sent whole before the next;
    /// `finish_reason: "tool_calls"`.
    pub fn tool_calls(calls: Vec<Call>) -> Self {
        let mut chunks = Vec::new();
        for (index, call) in calls.into_iter().enumerate() {
            chunks.push(Chunk::ToolCall {
                index,
                id: call.id,
                name: Some(call.name),
                arguments: String::new(),
            });
            for piece in split_in(&call.arguments, 3) {
                chunks.push(Chunk::call_args(index, piece));
            }
        }
        chunks.push(Chunk::finish("tool_calls"));
        chunks.push(Chunk::Done);
        Self::new(Body::Stream(chunks))
    }

    /// An HTTP error with this JSON body.
    pub fn error(status: u16, body: Value) -> Self {
        Self::new(Body::Error { status, body })
    }

    /// A non-streamed answer with exactly this body (status 200).
    pub fn json(body: Value) -> Self {
        Self::new(Body::Json(body))
    }

    /// Streams `n` text chunks (`part0 `, `part1 `, …) then closes the connection in the middle
    /// of the response; `n = 0` closes it before sending anything (a reset before any byte).
    pub fn disconnect_after(n: usize) -> Self {
        let chunks = (0..n).map(|i| Chunk::Text(format!("part{i} "))).collect();
        Reply {
            cut_after: Some(n),
            ..Self::new(Body::Stream(chunks))
        }
    }

    /// Never answers; the connection stays open until the client drops it or the server stops.
    pub fn hang() -> Self {
        Self::new(Body::Hang)
    }

    /// Adds a usage chunk (empty `choices`) before the final `[DONE]`; for a non-streamed
    /// answer, the `usage` object.
    pub fn with_usage(mut self, prompt: u64, completion: u64) -> Self {
        if let Body::Stream(chunks) = &mut self.body {
            let at = if chunks.last() == Some(&Chunk::Done) {
                chunks.len() - 1
            } else {
                chunks.len()
            };
            chunks.insert(at, Chunk::Usage { prompt, completion });
        }
        self
    }

    /// Reasoning chunks (word by word) before everything else.
    pub fn with_reasoning(self, reasoning: &str) -> Self {
        self.prepend(split_words(reasoning).into_iter().map(Chunk::Reasoning))
    }

    /// Text chunks (word by word) before everything else, e.g. before tool calls.
    pub fn with_text_before(self, text: &str) -> Self {
        self.prepend(split_words(text).into_iter().map(Chunk::Text))
    }

    /// Waits `ms` milliseconds before each chunk.
    pub fn with_delay(self, ms: u64) -> Self {
        self.with_interval(Duration::from_millis(ms))
    }

    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Closes the connection after `n` chunks of this streamed answer.
    pub fn cut_after(mut self, n: usize) -> Self {
        self.cut_after = Some(n);
        self
    }

    /// An extra response header (e.g. `Retry-After` on a 429).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    fn prepend(mut self, front: impl Iterator<Item = Chunk>) -> Self {
        if let Body::Stream(chunks) = &mut self.body {
            let mut all: Vec<Chunk> = front.collect();
            all.append(chunks);
            *chunks = all;
        }
        self
    }
}

/// Splits text into words, each keeping the whitespace before it: `"a b"` → `["a", " b"]`.
fn split_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev_space = true;
    for c in text.chars() {
        let space = c.is_whitespace();
        match out.last_mut() {
            Some(last) if !(space && !prev_space) => last.push(c),
            _ => out.push(c.to_string()),
        }
        prev_space = space;
    }
    out
}

/// Splits `s` into at most `n` pieces of about equal length, on char boundaries.
fn split_in(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

// ------------------------------------------------------------------ server

/// Answers chat requests once the script is exhausted (the demo binary uses one).
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// How the server presents itself.
#[derive(Clone)]
pub struct Options {
    /// 0: any free port.
    pub port: u16,
    pub model: String,
    /// Reported by `/props` and `/v1/models` (`meta.n_ctx`); `None`: `/props` answers 404 and
    /// the model has no `meta`.
    pub n_ctx: Option<u64>,
    /// Consulted when the script is empty; without one the answer is the text `done`.
    pub responder: Option<Responder>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            port: 0,
            model: FAKE_MODEL.to_string(),
            n_ctx: Some(32768),
            responder: None,
        }
    }
}

/// When the server wrote the last byte of one chat response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastByte {
    pub at: Instant,
    pub unix_nanos: u128,
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Value>,
    violations: Vec<String>,
    hits: Vec<String>,
    last_bytes: Vec<LastByte>,
    abandoned: usize,
    connections: usize,
    next_call_id: u64,
}

struct Shared {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    options: Options,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let r = f(&mut self.lock());
        self.changed.send_modify(|v| *v += 1);
        r
    }
}

/// A running fake server; it stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    cancel: CancellationToken,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl FakeServer {
    /// Starts on 127.0.0.1 with a free port and the default [`Options`].
    pub async fn start(script: Vec<Reply>) -> FakeServer {
        match Self::start_with(Options::default(), script).await {
            Ok(s) => s,
            Err(e) => panic!("fake server: cannot bind 127.0.0.1: {e}"),
        }
    }

    pub async fn start_with(options: Options, script: Vec<Reply>) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind(("127.0.0.1", options.port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                script: script.into(),
                ..State::default()
            }),
            changed: watch::channel(0).0,
            options,
        });
        let cancel = CancellationToken::new();
        tokio::spawn(accept_loop(listener, shared.clone(), cancel.clone()));
        Ok(FakeServer {
            addr,
            shared,
            cancel,
        })
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends replies to the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.update(|s| s.script.extend(replies));
    }

    /// Every chat request body received, in order (violating ones included; a body that is not
    /// JSON is recorded as a string).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// The history invariant violations found, one line per violating request.
    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// `METHOD path` of every request received, chat or not.
    pub fn hits(&self) -> Vec<String> {
        self.shared.lock().hits.clone()
    }

    /// When the last byte of each completed chat response was written.
    pub fn last_bytes(&self) -> Vec<LastByte> {
        self.shared.lock().last_bytes.clone()
    }

    /// Chat responses the client walked away from (a hang it dropped, a stream it stopped reading).
    pub fn abandoned(&self) -> usize {
        self.shared.lock().abandoned
    }

    /// TCP connections accepted so far (keep-alive reuses one).
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Replies still in the script.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.len()
    }

    /// Waits until `n` chat requests have arrived (panics after [`WAIT_LIMIT`]).
    pub async fn wait_for_requests(&self, n: usize) {
        self.wait_until(&format!("{n} chat requests"), |s| s.requests.len() >= n)
            .await;
    }

    /// Waits until `n` chat responses have been written to their last byte.
    pub async fn wait_for_responses(&self, n: usize) {
        self.wait_until(&format!("{n} complete responses"), |s| {
            s.last_bytes.len() >= n
        })
        .await;
    }

    /// Waits until the client has walked away from `n` responses.
    pub async fn wait_for_abandoned(&self, n: usize) {
        self.wait_until(&format!("{n} abandoned responses"), |s| s.abandoned >= n)
            .await;
    }

    async fn wait_until(&self, what: &str, done: impl Fn(&State) -> bool) {
        let mut rx = self.shared.changed.subscribe();
        let wait = async {
            loop {
                if done(&self.shared.lock()) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(WAIT_LIMIT, wait).await.is_err() {
            let s = self.shared.lock();
            panic!(
                "fake server: waited {} s for {what}; got {} requests, {} responses, {} abandoned",
                WAIT_LIMIT.as_secs(),
                s.requests.len(),
                s.last_bytes.len(),
                s.abandoned
            );
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = cancel.cancelled() => return,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        shared.update(|s| s.connections += 1);
        let shared = shared.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = serve_connection(stream, shared) => {}
                _ = cancel.cancelled() => {}
            }
        });
    }
}

// ------------------------------------------------------------------ HTTP

struct Request {
    method: String,
    path: String,
    close: bool,
    body: Vec<u8>,
}

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 256 * 1024 * 1024;

/// Reads one request; `None` at end of stream or on a malformed request.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > MAX_HEAD || !read_more(stream, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let mut length = 0usize;
    let mut close = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().ok()?,
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    if length > MAX_BODY {
        return None;
    }
    while buf.len() < head_end + length {
        if !read_more(stream, buf).await {
            return None;
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Some(Request {
        method,
        path,
        close,
        body,
    })
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 16 * 1024];
    match stream.read(&mut tmp).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            true
        }
    }
}

/// What happens to the connection after a response.
#[derive(PartialEq)]
enum After {
    KeepAlive,
    Close,
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    // Chunks must leave as soon as they are written (latency is measured).
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut stream, &mut buf).await {
        let close = req.close;
        let after = route(&mut stream, &shared, req).await;
        if close || after == After::Close {
            return;
        }
    }
}

async fn route(stream: &mut TcpStream, shared: &Shared, req: Request) -> After {
    let path = req.path.split('?').next().unwrap_or("").to_string();
    shared.update(|s| s.hits.push(format!("{} {}", req.method, path)));
    let opts = &shared.options;
    match (req.method.as_str(), path.as_str()) {
        ("POST", "/v1/chat/completions") => chat(stream, shared, &req.body).await,
        ("GET", "/v1/models") => {
            let mut model = json!({"id": opts.model, "object": "model", "owned_by": "fake"});
            if let Some(n) = opts.n_ctx {
                model["meta"] = json!({"n_ctx": n, "n_ctx_train": n});
            }
            let body = json!({"object": "list", "data": [model]});
            write_json(stream, 200, &[], &body).await
        }
        ("GET", "/props") => match opts.n_ctx {
            Some(n) => {
                let body = json!({"default_generation_settings": {"n_ctx": n},
                                  "model_alias": opts.model});
                write_json(stream, 200, &[], &body).await
            }
            None => not_found(stream, &req.method, &path).await,
        },
        ("GET", "/health") => write_json(stream, 200, &[], &json!({"status": "ok"})).await,
        _ => not_found(stream, &req.method, &path).await,
    }
}

async fn not_found(stream: &mut TcpStream, method: &str, path: &str) -> After {
    let body = json!({"error": {"code": 404, "type": "not_found_error",
        "message": format!("fake server: no route for {method} {path}")}});
    write_json(stream, 404, &[], &body).await
}

async fn chat(stream: &mut TcpStream, shared: &Shared, raw: &[u8]) -> After {
    let body: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(e) => {
            let text = String::from_utf8_lossy(raw).into_owned();
            shared.update(|s| s.requests.push(Value::String(text)));
            let err = json!({"error": {"code": 400, "type": "invalid_request_error",
                "message": format!("fake server: the request body is not JSON: {e}")}});
            return write_json(stream, 400, &[], &err).await;
        }
    };
    let problems = match body.get("messages").and_then(Value::as_array) {
        Some(messages) => check_history(messages),
        None => vec!["the request has no `messages` array".to_string()],
    };
    let violation = (!problems.is_empty()).then(|| {
        let roles = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|m| describe_roles(m))
            .unwrap_or_default();
        format!(
            "history invariant violated: {} — messages: {roles}",
            problems.join("; ")
        )
    });
    // A violating request is recorded but does not consume a scripted reply.
    let reply = shared.update(|s| {
        s.requests.push(body.clone());
        match &violation {
            Some(v) => {
                s.violations.push(v.clone());
                None
            }
            None => Some(s.script.pop_front()),
        }
    });
    let reply = match (violation, reply) {
        (Some(v), _) => {
            let err = json!({"error": {"code": 417, "type": "fake_server_history_violation",
                "message": format!("fake server: {v}")}});
            return write_json(stream, 417, &[], &err).await;
        }
        (None, Some(Some(r))) => r,
        (None, _) => match &shared.options.responder {
            Some(f) => f(&body),
            None => Reply::text("done"),
        },
    };
    let streamed = body.get("stream").and_then(Value::as_bool) == Some(true);
    let headers = reply.headers.clone();
    match reply.body {
        Body::Error { status, body } => write_json(stream, status, &headers, &body).await,
        Body::Json(body) => {
            let after = write_json(stream, 200, &headers, &body).await;
            record_last_byte(shared);
            after
        }
        Body::Hang => {
            // Read until the client goes away; the server's cancel token ends it too.
            let mut tmp = [0u8; 1024];
            loop {
                match stream.read(&mut tmp).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            shared.update(|s| s.abandoned += 1);
            After::Close
        }
        Body::Stream(chunks) if !streamed => {
            let ids = assign_ids(shared, &chunks);
            let model = &shared.options.model;
            let after = write_json(stream, 200, &headers, &completion(&chunks, &ids, model)).await;
            record_last_byte(shared);
            after
        }
        Body::Stream(chunks) => {
            let ids = assign_ids(shared, &chunks);
            let timing = Timing {
                interval: reply.interval,
                cut_after: reply.cut_after,
            };
            write_stream(stream, shared, &chunks, &ids, &timing, &headers).await
        }
    }
}

struct Timing {
    interval: Duration,
    cut_after: Option<usize>,
}

fn record_last_byte(shared: &Shared) {
    let unix_nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let at = Instant::now();
    shared.update(|s| s.last_bytes.push(LastByte { at, unix_nanos }));
}

/// The ids of the calls that start in `chunks` (by chunk position); `None` where none is needed.
fn assign_ids(shared: &Shared, chunks: &[Chunk]) -> Vec<Option<String>> {
    shared.update(|s| {
        chunks
            .iter()
            .map(|c| match c {
                Chunk::ToolCall { id: Some(id), .. } => Some(id.clone()),
                Chunk::ToolCall {
                    id: None,
                    name: Some(_),
                    ..
                } => {
                    s.next_call_id += 1;
                    Some(format!("call_fake_{}", s.next_call_id))
                }
                _ => None,
            })
            .collect()
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        413 => "Payload Too Large",
        417 => "Expectation Failed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)], extra: &str) -> String {
    let mut h = format!("HTTP/1.1 {status} {}\r\n{extra}", reason(status));
    for (name, value) in headers {
        h.push_str(&format!("{name}: {value}\r\n"));
    }
    h.push_str("\r\n");
    h
}

async fn write_json(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &Value,
) -> After {
    let body = body.to_string();
    let extra = format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    let mut out = head(status, headers, &extra).into_bytes();
    out.extend_from_slice(body.as_bytes());
    match stream.write_all(&out).await {
        Ok(()) => After::KeepAlive,
        Err(_) => After::Close,
    }
}

async fn write_stream(
    stream: &mut TcpStream,
    shared: &Shared,
    chunks: &[Chunk],
    ids: &[Option<String>],
    timing: &Timing,
    headers: &[(String, String)],
) -> After {
    let model = &shared.options.model;
    if timing.cut_after != Some(0) {
        let extra = "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                     Transfer-Encoding: chunked\r\n";
        if stream
            .write_all(head(200, headers, extra).as_bytes())
            .await
            .is_err()
        {
            return After::Close;
        }
    }
    let start = tokio::time::Instant::now();
    let mut first_delta = true;
    for (i, chunk) in chunks.iter().enumerate() {
        if timing.cut_after == Some(i) {
            return After::Close;
        }
        if !timing.interval.is_zero() {
            tokio::time::sleep_until(start + timing.interval * (i as u32 + 1)).await;
        }
        let id = ids.get(i).cloned().flatten();
        let data = sse_data(chunk, id, model, &mut first_delta);
        let event = format!("data: {data}\n\n");
        let framed = format!("{:x}\r\n{event}\r\n", event.len());
        if stream.write_all(framed.as_bytes()).await.is_err() {
            shared.update(|s| s.abandoned += 1);
            return After::Close;
        }
    }
    if timing.cut_after.is_some() {
        return After::Close;
    }
    if stream.write_all(b"0\r\n\r\n").await.is_err() {
        shared.update(|s| s.abandoned += 1);
        return After::Close;
    }
    record_last_byte(shared);
    After::KeepAlive
}

fn chunk_json(model: &str, choices: Value) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
           "model": model, "choices": choices})
}

/// The payload of one `data:` line.
fn sse_data(chunk: &Chunk, id: Option<String>, model: &str, first_delta: &mut bool) -> String {
    let mut delta = match chunk {
        Chunk::Text(t) => json!({"content": t}),
        Chunk::Reasoning(t) => json!({"reasoning_content": t}),
        Chunk::ToolCall {
            index,
            name,
            arguments,
            ..
        } => {
            let mut call = json!({"index": index});
            if let Some(id) = id {
                call["id"] = json!(id);
                call["type"] = json!("function");
            }
            let mut function = json!({"arguments": arguments});
            if let Some(name) = name {
                function["name"] = json!(name);
            }
            call["function"] = function;
            json!({"tool_calls": [call]})
        }
        Chunk::Finish(reason) => {
            return chunk_json(
                model,
                json!([{"index": 0, "delta": {}, "finish_reason": reason}]),
            )
            .to_string();
        }
        Chunk::Usage { prompt, completion } => {
            let mut v = chunk_json(model, json!([]));
            v["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion,
                                "total_tokens": prompt + completion});
            return v.to_string();
        }
        Chunk::Delta(d) => d.clone(),
        Chunk::Raw(s) => return s.clone(),
        Chunk::Done => return "[DONE]".to_string(),
    };
    if std::mem::take(first_delta) {
        if let Some(obj) = delta.as_object_mut() {
            obj.insert("role".into(), json!("assistant"));
        }
    }
    chunk_json(
        model,
        json!([{"index": 0, "delta": delta, "finish_reason": null}]),
    )
    .to_string()
}

/// The non-streamed form of a streamed reply (for `stream: false` requests).
fn completion(chunks: &[Chunk], ids: &[Option<String>], model: &str) -> Value {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    for (chunk, id) in chunks.iter().zip(ids) {
        match chunk {
            Chunk::Text(t) => content.push_str(t),
            Chunk::Reasoning(t) => reasoning.push_str(t),
            Chunk::ToolCall {
                index,
                name,
                arguments,
                ..
            } => {
                while calls.len() <= *index {
                    calls.push(json!({"id": "", "type": "function",
                                      "function": {"name": "", "arguments": ""}}));
                }
                let call = &mut calls[*index];
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                if let Some(name) = name {
                    call["function"]["name"] = json!(name);
                }
                let args = call["function"]["arguments"].as_str().unwrap_or("");
                call["function"]["arguments"] = json!(format!("{args}{arguments}"));
            }
            Chunk::Finish(r) => finish = json!(r),
            Chunk::Usage { prompt, completion } => {
                usage = json!({"prompt_tokens": prompt, "completion_tokens": completion,
                               "total_tokens": prompt + completion});
            }
            Chunk::Delta(_) | Chunk::Raw(_) | Chunk::Done => {}
        }
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let mut v = json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}]});
    if !usage.is_null() {
        v["usage"] = usage;
    }
    v
}

// ------------------------------------------------------------------ invariants

/// The history invariants real servers enforce; one line per problem, empty when the messages
/// are fine:
/// - every `tool` message answers a call of the latest assistant message not answered yet;
/// - every assistant tool call is answered before the next non-tool message and before the end;
/// - no two `user` messages in a row.
pub fn check_history(messages: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    // Calls of the latest assistant message still waiting for their answer.
    let mut open: Vec<String> = Vec::new();
    let mut open_from = 0;
    let mut prev_role = "";
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "tool" {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
            match open.iter().position(|o| o == id) {
                Some(p) => {
                    open.remove(p);
                }
                None => problems.push(format!(
                    "message {i} (tool) answers tool call {id:?}, which no earlier assistant \
                     tool call left unanswered"
                )),
            }
        } else {
            if !open.is_empty() {
                problems.push(format!(
                    "message {i} ({role}) comes before the answer to tool call(s) {} of \
                     message {open_from}",
                    quoted(&open)
                ));
            }
            open.clear();
            if role == "user" && prev_role == "user" {
                problems.push(format!(
                    "messages {} and {i} are two user messages in a row",
                    i - 1
                ));
            }
            if role == "assistant" {
                open = call_ids(m);
                open_from = i;
            }
        }
        prev_role = role;
    }
    if !open.is_empty() {
        problems.push(format!(
            "the request ends before the answer to tool call(s) {} of message {open_from}",
            quoted(&open)
        ));
    }
    problems
}

fn call_ids(m: &Value) -> Vec<String> {
    m.get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    c.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("{id:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `system, user, assistant[a, b], tool(a), tool(b)`: the shape of a request, for error messages.
pub fn describe_roles(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
            match role {
                "assistant" if m.get("tool_calls").is_some() => {
                    format!("assistant[{}]", call_ids(m).join(", "))
                }
                "tool" => format!(
                    "tool({})",
                    m.get("tool_call_id").and_then(Value::as_str).unwrap_or("")
                ),
                r => r.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
