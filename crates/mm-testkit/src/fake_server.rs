//! A fake OpenAI-compatible model server for tests, benchmarks and demos.
//!
//! It answers `POST /v1/chat/completions` from a script (a queue of [`Reply`]s), serves
//! `GET /v1/models`, `GET /props` and `GET /health` (or whatever [`FakeServer::route`] says for
//! these and any other route, such as Ollama's or LM Studio's), records every request, and checks
//! the history invariants real servers enforce: a chat request that breaks one is answered HTTP
//! 417 with an explanation, so the failure shows up in the agent's own error output.
//!
//! Plain HTTP/1.1 over `tokio::net::TcpListener` with keep-alive (reqwest reuses connections);
//! streamed answers use chunked transfer encoding. It and its three siblings (`http.rs`,
//! `script.rs`, `invariants.rs`) use no crate of mm: they are the `mm-fake-server` binary too.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::http::{After, Request, head, read_request, write_json};
use super::script::{Body, Chunk, Reply, completion, sse_data};
use mm_testkit_core::invariants::{check_history, describe_roles};

pub use mm_testkit_core::WAIT_LIMIT;

/// The model id the server reports unless [`Options::model`] says otherwise.
pub const FAKE_MODEL: &str = "fake-model";

// ------------------------------------------------------------------ server

const CHAT: &str = "POST /v1/chat/completions";

/// Answers chat requests once the script is exhausted (the demo binary uses one).
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// How the server presents itself.
#[derive(Clone)]
pub struct Options {
    /// 0: any free port.
    pub port: u16,
    pub model: String,
    /// Other models `/v1/models` lists after `model` (a server with several installed).
    pub more_models: Vec<String>,
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
            more_models: Vec::new(),
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

/// One request as received, chat or not.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// Without the query string.
    pub path: String,
    /// What follows `?`, as sent (empty when none).
    pub query: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    /// `METHOD path`
    pub fn route(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The first value of a header (`name` in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics when it is not).
    pub fn json(&self) -> Value {
        match serde_json::from_slice(&self.body) {
            Ok(v) => v,
            Err(e) => panic!("{} sent a body that is not JSON: {e}", self.route()),
        }
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    /// Replies of the other routes, by `METHOD path`; the last one is given again and again.
    routes: HashMap<String, VecDeque<Reply>>,
    requests: Vec<Value>,
    violations: Vec<String>,
    received: Vec<Received>,
    last_bytes: Vec<LastByte>,
    abandoned: usize,
    /// For each streamed answer the client walked away from: the chunks written before.
    stopped_after: Vec<usize>,
    connections: usize,
    next_call_id: u64,
    /// How long the model loads from the next request on (`FakeServer::load_for`).
    loading_for: Option<Duration>,
    /// Until then every request is answered 503 "Loading model": set by the first request
    /// after `load_for`.
    loading_until: Option<Instant>,
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

    /// Answers `route` (`METHOD path`, anything but chat) with `replies` in order, the last one
    /// again and again, instead of the built-in answer or 404. Each is a [`Reply::json`] or a
    /// [`Reply::error`]. A route with its query (`GET /props?model=a&autoload=false`, as sent)
    /// answers that query only, before the route without one.
    pub fn route(&self, route: &str, replies: Vec<Reply>) {
        assert!(!replies.is_empty(), "fake server: no replies for {route}");
        assert_ne!(
            route, CHAT,
            "fake server: chat answers come from the script"
        );
        self.shared
            .update(|s| s.routes.insert(route.to_string(), replies.into()));
    }

    /// Plays a server that loads its model for `d` from the next request it receives: until
    /// then every request, chat or not, is answered as llama.cpp does, HTTP 503 `Loading model`
    /// (recorded in [`hits`](Self::hits), not in [`requests`](Self::requests)). The loading
    /// clock starts with that request, not now, so a client's wait measured from before its
    /// first request is at least `d` however slowly the client started.
    pub fn load_for(&self, d: Duration) {
        self.shared.update(|s| {
            s.loading_for = Some(d);
            s.loading_until = None;
        });
    }

    /// `METHOD path` of every request received, chat or not.
    pub fn hits(&self) -> Vec<String> {
        self.shared
            .lock()
            .received
            .iter()
            .map(Received::route)
            .collect()
    }

    /// Every request to `route` (`METHOD path`), with its headers and body.
    pub fn received(&self, route: &str) -> Vec<Received> {
        let state = self.shared.lock();
        state
            .received
            .iter()
            .filter(|r| r.route() == route)
            .cloned()
            .collect()
    }

    /// When the last byte of each completed chat response was written.
    pub fn last_bytes(&self) -> Vec<LastByte> {
        self.shared.lock().last_bytes.clone()
    }

    /// Chat responses the client walked away from (a hang it dropped, a stream it stopped reading).
    pub fn abandoned(&self) -> usize {
        self.shared.lock().abandoned
    }

    /// For each streamed answer the client walked away from (closed the connection in the
    /// middle), how many of its chunks had been written when the server noticed.
    pub fn stopped_after(&self) -> Vec<usize> {
        self.shared.lock().stopped_after.clone()
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

    /// Waits, with no time limit, until `n` chat responses are complete (the bench binary waits
    /// for clients that come whenever they like).
    pub async fn until_responses(&self, n: usize) {
        self.until(|s| s.last_bytes.len() >= n).await;
    }

    async fn until(&self, done: impl Fn(&State) -> bool) {
        let mut rx = self.shared.changed.subscribe();
        loop {
            if done(&self.shared.lock()) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    async fn wait_until(&self, what: &str, done: impl Fn(&State) -> bool) {
        if tokio::time::timeout(WAIT_LIMIT, self.until(done))
            .await
            .is_err()
        {
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

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    // Chunks must leave as soon as they are written (latency is measured).
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut stream, &mut buf).await {
        let close = req.close;
        let after = route(&mut stream, &shared, req).await;
        if close || after == After::Close {
            // The end of the stream said at once (a FIN), not left to the socket's close: Wine
            // tells a client of a dropped socket only later, past a short requestTimeout.
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
            return;
        }
    }
}

async fn route(stream: &mut TcpStream, shared: &Shared, req: Request) -> After {
    let received = Received {
        method: req.method,
        path: req.path,
        query: req.query,
        headers: req.headers,
        body: req.body,
    };
    let route = received.route();
    let loading = shared.update(|s| {
        s.received.push(received.clone());
        let now = Instant::now();
        if let Some(d) = s.loading_for.take() {
            s.loading_until = Some(now + d);
        }
        s.loading_until.is_some_and(|t| now < t)
    });
    if loading {
        let body = json!({"error": {"code": 503, "message": "Loading model",
                                    "type": "unavailable_error"}});
        return write_json(stream, 503, &[], &body).await;
    }
    let with_query = format!("{route}?{}", received.query);
    let scripted = shared.update(|s| {
        let key = match received.query.is_empty() || !s.routes.contains_key(&with_query) {
            true => &route,
            false => &with_query,
        };
        let replies = s.routes.get_mut(key)?;
        match replies.len() {
            1 => replies.front().cloned(),
            _ => replies.pop_front(),
        }
    });
    let (method, path) = (received.method.as_str(), received.path.as_str());
    if let Some(reply) = scripted {
        let headers = &reply.headers;
        return match reply.body {
            Body::Json(body) => write_json(stream, 200, headers, &body).await,
            Body::Error { status, body } => write_json(stream, status, headers, &body).await,
            Body::Stream(_) | Body::Hang => {
                let body = json!({"error": {"code": 500, "type": "fake_server_error",
                    "message": format!("fake server: {route} answers Reply::json or Reply::error")}});
                write_json(stream, 500, &[], &body).await
            }
        };
    }
    let opts = &shared.options;
    match (method, path) {
        ("POST", "/v1/chat/completions") => chat(stream, shared, &received.body).await,
        ("GET", "/v1/models") => {
            let data: Vec<Value> = std::iter::once(&opts.model)
                .chain(&opts.more_models)
                .map(|id| {
                    let mut model = json!({"id": id, "object": "model", "owned_by": "fake"});
                    if let Some(n) = opts.n_ctx {
                        model["meta"] = json!({"n_ctx": n, "n_ctx_train": n});
                    }
                    model
                })
                .collect();
            let body = json!({"object": "list", "data": data});
            write_json(stream, 200, &[], &body).await
        }
        ("GET", "/props") => match opts.n_ctx {
            Some(n) => {
                let body = json!({"default_generation_settings": {"n_ctx": n},
                                  "model_alias": opts.model});
                write_json(stream, 200, &[], &body).await
            }
            None => not_found(stream, method, path).await,
        },
        ("GET", "/health") => write_json(stream, 200, &[], &json!({"status": "ok"})).await,
        _ => not_found(stream, method, path).await,
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
            let last = Stamp::now();
            let after = write_json(stream, 200, &headers, &body).await;
            record_last_byte(shared, last);
            after
        }
        Body::Hang => hold(stream, shared).await,
        Body::Stream(chunks) if !streamed => {
            let ids = assign_ids(shared, &chunks);
            let model = &shared.options.model;
            let last = Stamp::now();
            let after = write_json(stream, 200, &headers, &completion(&chunks, &ids, model)).await;
            record_last_byte(shared, last);
            after
        }
        Body::Stream(chunks) => {
            let ids = assign_ids(shared, &chunks);
            let timing = Timing {
                interval: reply.interval,
                cut_after: reply.cut_after,
                stall_after: reply.stall_after,
            };
            write_stream(stream, shared, &chunks, &ids, &timing, &headers).await
        }
    }
}

/// Sends nothing more: reads until the client goes away (the server's cancel token ends it too),
/// and counts the response as abandoned.
async fn hold(stream: &mut TcpStream, shared: &Shared) -> After {
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

struct Timing {
    interval: Duration,
    cut_after: Option<usize>,
    stall_after: Option<usize>,
}

/// A moment, on both clocks.
struct Stamp {
    at: Instant,
    unix_nanos: u128,
}

impl Stamp {
    fn now() -> Stamp {
        let unix_nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Stamp {
            at: Instant::now(),
            unix_nanos,
        }
    }
}

fn record_last_byte(shared: &Shared, last: Stamp) {
    let Stamp { at, unix_nanos } = last;
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
        if timing.stall_after == Some(i) {
            return hold(stream, shared).await;
        }
        if !timing.interval.is_zero() {
            tokio::time::sleep_until(start + timing.interval * (i as u32 + 1)).await;
        }
        let id = ids.get(i).cloned().flatten();
        let data = sse_data(chunk, id, model, &mut first_delta);
        let event = format!("data: {data}\n\n");
        let framed = format!("{:x}\r\n{event}\r\n", event.len());
        if stream.write_all(framed.as_bytes()).await.is_err() {
            shared.update(|s| {
                s.abandoned += 1;
                s.stopped_after.push(i);
            });
            return After::Close;
        }
    }
    if timing.stall_after.is_some() {
        return hold(stream, shared).await;
    }
    if timing.cut_after.is_some() {
        return After::Close;
    }
    // Stamped just before the last write: the client may read the bytes before this task runs
    // again, and an overhead measured against it must never come out too small.
    let last = Stamp::now();
    if stream.write_all(b"0\r\n\r\n").await.is_err() {
        shared.update(|s| {
            s.abandoned += 1;
            s.stopped_after.push(chunks.len());
        });
        return After::Close;
    }
    record_last_byte(shared, last);
    After::KeepAlive
}
