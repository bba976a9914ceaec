//! The OpenAI-compatible client and server detection against a tiny scripted HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mm::config::ModelConfig;
use mm::model::detect::ServerKind;
use mm::model::openai::{ClientOptions, OpenAiClient};
use mm::model::{
    ChatRequest, ModelClient, ModelError, ModelInfo, ModelResponse, RawToolCall, StreamEvent,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const LLAMA_STREAM: &[u8] = include_bytes!("fixtures/sse/llamacpp_reasoning_tool_call.sse");

#[derive(Clone)]
enum Reply {
    /// Status, extra headers, JSON body.
    Json(u16, Vec<(&'static str, &'static str)>, String),
    /// A whole event stream, then the connection closes.
    Sse(String),
    /// A chunked event stream cut before its end.
    Cut(String),
    /// Reads the request and never answers.
    Idle,
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply::Json(status, vec![], body.to_string())
}

#[derive(Debug, Clone)]
struct Recorded {
    route: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Recorded {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

struct FakeServer {
    /// `http://127.0.0.1:PORT`
    root: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    arrivals: mpsc::UnboundedReceiver<String>,
}

impl FakeServer {
    /// Each route answers its replies in order, the last one again and again; others are 404.
    async fn start(routes: Vec<(&str, Vec<Reply>)>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let root = format!("http://{}", listener.local_addr().unwrap());
        let routes: HashMap<String, VecDeque<Reply>> = routes
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().collect()))
            .collect();
        let routes = Arc::new(Mutex::new(routes));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (tx, arrivals) = mpsc::unbounded_channel();
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let routes = Arc::clone(&routes);
                let recorded = Arc::clone(&recorded);
                let tx = tx.clone();
                tokio::spawn(async move {
                    let _ = handle(socket, routes, recorded, tx).await;
                });
            }
        });
        FakeServer {
            root,
            requests,
            arrivals,
        }
    }

    fn url(&self) -> String {
        format!("{}/v1", self.root)
    }

    fn requests(&self, route: &str) -> Vec<Recorded> {
        let all = self.requests.lock().unwrap();
        all.iter().filter(|r| r.route == route).cloned().collect()
    }
}

async fn handle(
    mut socket: TcpStream,
    routes: Arc<Mutex<HashMap<String, VecDeque<Reply>>>>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    arrivals: mpsc::UnboundedSender<String>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let route = format!(
        "{} {}",
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("")
    );
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).to_string();
    recorded.lock().unwrap().push(Recorded {
        route: route.clone(),
        headers,
        body,
    });
    let reply = {
        let mut routes = routes.lock().unwrap();
        match routes.get_mut(&route) {
            Some(queue) if queue.len() > 1 => queue.pop_front(),
            Some(queue) => queue.front().cloned(),
            None => None,
        }
    };
    let _ = arrivals.send(route);
    let reply = reply.unwrap_or_else(|| json_reply(404, json!({"error": "not found"})));
    match reply {
        Reply::Json(status, extra, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Reply::Sse(body) => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                .await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Reply::Cut(body) => {
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await?;
            let chunk = format!("{:x}\r\n{body}\r\n", body.len());
            socket.write_all(chunk.as_bytes()).await?;
        }
        Reply::Idle => {
            std::future::pending::<()>().await;
        }
    }
    socket.shutdown().await?;
    Ok(())
}

fn config(url: &str, name: &str) -> ModelConfig {
    ModelConfig {
        url: url.to_string(),
        name: name.to_string(),
        api_key: String::new(),
        temperature: None,
        max_tokens: None,
        request_timeout: 600,
        text_tool_calls: true,
    }
}

fn fast_options(candidates: Vec<(ServerKind, String)>) -> ClientOptions {
    ClientOptions {
        candidates,
        retry_base: Duration::from_millis(1),
        probe_timeout: Duration::from_millis(1500),
    }
}

fn client(config: &ModelConfig) -> OpenAiClient {
    OpenAiClient::with_options(config, 0, fast_options(vec![]))
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![json!({"role": "user", "content": "list files"})],
        tools: vec![],
        text_tool_names: vec![],
        repetition: None,
    }
}

/// Runs one chat, collecting the streamed events.
async fn chat(
    client: &OpenAiClient,
    request: &ChatRequest,
) -> (Vec<StreamEvent>, Result<ModelResponse, ModelError>) {
    let events = Mutex::new(Vec::new());
    let on_event = |e: StreamEvent| events.lock().unwrap().push(e);
    let result = client
        .chat(request, &on_event, &CancellationToken::new())
        .await;
    (events.into_inner().unwrap(), result)
}

async fn refused_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

fn sse(chunks: &[Value]) -> String {
    let mut out: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

fn text_stream(text: &str) -> String {
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ])
}

#[tokio::test]
async fn streams_a_llamacpp_answer_and_sends_the_expected_request() {
    let stream = String::from_utf8(LLAMA_STREAM.to_vec()).unwrap();
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![Reply::Sse(stream)],
    )])
    .await;
    let mut cfg = config(&server.url(), "qwen3-8b");
    cfg.api_key = "sekret".into();
    cfg.max_tokens = Some(2048);
    let client = client(&cfg);
    let (events, result) = chat(&client, &request()).await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Thought("The user wants".into()),
            StreamEvent::Thought(" the file list.".into()),
            StreamEvent::Text("Listing files.".into()),
        ]
    );
    let response = result.unwrap();
    assert_eq!(
        response.tool_calls,
        vec![RawToolCall {
            id: "Xk2pQ9".into(),
            name: "bash".into(),
            arguments: "{\"command\":\"ls -la\"}".into()
        }]
    );
    let sent = server.requests("POST /v1/chat/completions");
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].json(),
        json!({
            "model": "qwen3-8b",
            "messages": [{"role": "user", "content": "list files"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 2048
        })
    );
    assert_eq!(
        sent[0].headers.get("authorization").unwrap(),
        "Bearer sekret"
    );
}

#[tokio::test]
async fn sends_tools_and_temperature_and_no_key_when_none() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![Reply::Sse(text_stream("ok"))],
    )])
    .await;
    let mut cfg = config(&server.url(), "m");
    cfg.temperature = Some(0.25);
    let client = client(&cfg);
    let mut req = request();
    req.tools = vec![json!({"type": "function", "function": {"name": "bash", "parameters": {}}})];
    let (_, result) = chat(&client, &req).await;
    assert_eq!(result.unwrap().text, "ok");
    let sent = &server.requests("POST /v1/chat/completions")[0];
    assert_eq!(sent.json()["tools"], json!(req.tools));
    assert_eq!(sent.json()["temperature"], json!(0.25));
    assert_eq!(sent.headers.get("authorization"), None);
}

#[tokio::test]
async fn a_server_error_is_one_line_with_its_message_and_not_retried() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![json_reply(
            500,
            json!({"error": {"code": 500, "message": "model crashed"}}),
        )],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        "model server answered 500: model crashed"
    );
    assert_eq!(server.requests("POST /v1/chat/completions").len(), 1);
}

#[tokio::test]
async fn a_400_shows_the_servers_message() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![json_reply(400, json!({"error": "invalid tool schema"}))],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        "model server answered 400: invalid tool schema"
    );
}

#[tokio::test]
async fn a_loading_server_503_is_retried_until_it_answers() {
    let loading = json_reply(
        503,
        json!({"error": {"code": 503, "message": "Loading model"}}),
    );
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![loading.clone(), loading, Reply::Sse(text_stream("ready"))],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (events, result) = chat(&client, &request()).await;
    assert_eq!(events, vec![StreamEvent::Text("ready".into())]);
    assert_eq!(result.unwrap().text, "ready");
    assert_eq!(server.requests("POST /v1/chat/completions").len(), 3);
}

#[tokio::test]
async fn a_503_that_never_ends_gives_up_after_five_tries() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![json_reply(
            503,
            json!({"error": {"message": "Loading model"}}),
        )],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        "model server answered 503: Loading model"
    );
    assert_eq!(server.requests("POST /v1/chat/completions").len(), 5);
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![
            Reply::Json(
                429,
                vec![("Retry-After", "0")],
                r#"{"error":"busy"}"#.into(),
            ),
            Reply::Sse(text_stream("done")),
        ],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(result.unwrap().text, "done");
    assert_eq!(server.requests("POST /v1/chat/completions").len(), 2);
}

#[tokio::test]
async fn a_stream_cut_midway_says_how_many_bytes_came() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![Reply::Cut(partial.into())],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (events, result) = chat(&client, &request()).await;
    assert_eq!(events, vec![StreamEvent::Text("Hel".into())]);
    assert_eq!(
        result.unwrap_err().to_string(),
        format!(
            "stream broke after {} bytes: connection closed",
            partial.len()
        )
    );
}

#[tokio::test]
async fn a_stream_closed_without_an_end_is_broken() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![Reply::Sse(partial.into())],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        format!(
            "stream broke after {} bytes: the server closed the stream before the answer was complete",
            partial.len()
        )
    );
}

#[tokio::test]
async fn an_idle_server_times_out() {
    let server = FakeServer::start(vec![("POST /v1/chat/completions", vec![Reply::Idle])]).await;
    let mut cfg = config(&server.url(), "m");
    cfg.request_timeout = 1;
    let client = client(&cfg);
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        "model server sent nothing for 1 s (model.requestTimeout)"
    );
}

#[tokio::test]
async fn cancel_ends_a_waiting_call_at_once() {
    let mut server =
        FakeServer::start(vec![("POST /v1/chat/completions", vec![Reply::Idle])]).await;
    let client = client(&config(&server.url(), "m"));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let req = request();
    let call = client.chat(&req, &|_| {}, &cancel);
    let trigger = async {
        while let Some(route) = server.arrivals.recv().await {
            if route == "POST /v1/chat/completions" {
                canceller.cancel();
                return;
            }
        }
    };
    let (result, ()) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(call, trigger)
    })
    .await
    .unwrap();
    assert_eq!(result, Err(ModelError::Cancelled));
}

#[tokio::test]
async fn a_refused_port_is_unreachable_after_retries() {
    let port = refused_port().await;
    let url = format!("http://127.0.0.1:{port}/v1");
    let client = client(&config(&url, "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        format!("model server unreachable at {url}: connection refused")
    );
}

#[tokio::test]
async fn a_refused_port_without_a_model_name_fails_detection() {
    let port = refused_port().await;
    let url = format!("http://127.0.0.1:{port}/v1");
    let client = client(&config(&url, ""));
    assert_eq!(
        client
            .info(&CancellationToken::new())
            .await
            .unwrap_err()
            .to_string(),
        format!("model server unreachable at {url}: connection refused")
    );
}

#[tokio::test]
async fn llamacpp_context_error_carries_n_ctx_and_sets_the_unknown_window() {
    let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
    let server = FakeServer::start(vec![
        (
            "POST /v1/chat/completions",
            vec![Reply::Json(400, vec![], body.into())],
        ),
        (
            "GET /v1/models",
            vec![json_reply(
                200,
                json!({"object": "list", "data": [{"id": "m"}]}),
            )],
        ),
    ])
    .await;
    let client = client(&config(&server.url(), "m"));
    assert_eq!(
        client
            .info(&CancellationToken::new())
            .await
            .unwrap()
            .context_window,
        0
    );
    let (_, result) = chat(&client, &request()).await;
    let error = result.unwrap_err();
    assert_eq!(
        error,
        ModelError::ContextExceeded {
            status: 400,
            message: "the request exceeds the available context size, try increasing it".into(),
            n_ctx: Some(8192)
        }
    );
    assert_eq!(
        error.to_string(),
        "model server answered 400: the request exceeds the available context size, try increasing it"
    );
    assert_eq!(
        client
            .info(&CancellationToken::new())
            .await
            .unwrap()
            .context_window,
        8192
    );
}

#[tokio::test]
async fn detection_takes_the_first_live_candidate_and_reads_props() {
    let dead = refused_port().await;
    let server = FakeServer::start(vec![
        (
            "GET /v1/models",
            vec![json_reply(
                200,
                json!({"object": "list", "data": [
                    {"id": "nomic-embed-text", "object": "model"},
                    {"id": "qwen3-8b-q4_k_m.gguf", "object": "model", "owned_by": "llamacpp"}
                ]}),
            )],
        ),
        (
            "GET /props",
            vec![json_reply(
                200,
                json!({"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1}),
            )],
        ),
    ])
    .await;
    let options = fast_options(vec![
        (ServerKind::LlamaCpp, format!("http://127.0.0.1:{dead}/v1")),
        (ServerKind::LlamaCpp, server.url()),
        (ServerKind::Vllm, format!("http://127.0.0.1:{dead}/v1")),
    ]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    assert_eq!(
        client.info(&CancellationToken::new()).await.unwrap(),
        ModelInfo {
            url: server.url(),
            name: "qwen3-8b-q4_k_m.gguf".into(),
            context_window: 32768
        }
    );
    assert_eq!(client.server_kind().await, ServerKind::LlamaCpp);
}

#[tokio::test]
async fn a_configured_window_is_not_probed() {
    let server = FakeServer::start(vec![(
        "GET /props",
        vec![json_reply(
            200,
            json!({"default_generation_settings": {"n_ctx": 4096}}),
        )],
    )])
    .await;
    let client =
        OpenAiClient::with_options(&config(&server.url(), "m"), 65536, fast_options(vec![]));
    assert_eq!(
        client
            .info(&CancellationToken::new())
            .await
            .unwrap()
            .context_window,
        65536
    );
}

#[tokio::test]
async fn no_server_found_says_what_was_tried() {
    let dead = refused_port().await;
    let options = fast_options(vec![(
        ServerKind::Ollama,
        format!("http://127.0.0.1:{dead}/v1"),
    )]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        format!(
            "no model server found (tried http://127.0.0.1:{dead}/v1 (Ollama)); start one, e.g. `llama-server -m model.gguf --port 8080 --jinja` or `ollama serve`, or set MM_MODEL_URL / --url"
        )
    );
}

#[tokio::test]
async fn ollama_loaded_model_and_window_probed_again_after_the_first_call() {
    let nothing_loaded = json_reply(200, json!({"models": []}));
    let server = FakeServer::start(vec![
        (
            "GET /v1/models",
            vec![json_reply(200, json!({"object": "list", "data": [{"id": "qwen3:8b"}, {"id": "llama3.2:3b"}]}))],
        ),
        (
            "GET /api/ps",
            vec![
                nothing_loaded.clone(),
                nothing_loaded,
                json_reply(200, json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096}]})),
            ],
        ),
        (
            "POST /api/show",
            vec![json_reply(200, json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}))],
        ),
        ("POST /v1/chat/completions", vec![Reply::Sse(text_stream("hi"))]),
    ])
    .await;
    let options = fast_options(vec![(ServerKind::Ollama, server.url())]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let info = client.info(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        (info.name.as_str(), info.context_window),
        ("qwen3:8b", 40960)
    );
    assert_eq!(
        server.requests("POST /api/show")[0].json(),
        json!({"model": "qwen3:8b"})
    );
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(result.unwrap().text, "hi");
    assert_eq!(
        client
            .info(&CancellationToken::new())
            .await
            .unwrap()
            .context_window,
        4096
    );
}

#[tokio::test]
async fn lmstudio_loaded_model_is_preferred() {
    let server = FakeServer::start(vec![
        (
            "GET /v1/models",
            vec![json_reply(200, json!({"data": [{"id": "text-embedding-nomic"}, {"id": "qwen2.5-7b"}, {"id": "gemma-3-12b"}]}))],
        ),
        (
            "GET /api/v0/models",
            vec![json_reply(200, json!({"data": [
                {"id": "qwen2.5-7b", "type": "llm", "state": "not-loaded", "max_context_length": 32768},
                {"id": "gemma-3-12b", "type": "llm", "state": "loaded", "max_context_length": 131072, "loaded_context_length": 8192}
            ]}))],
        ),
    ])
    .await;
    let options = fast_options(vec![(ServerKind::LmStudio, server.url())]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let info = client.info(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        (info.name.as_str(), info.context_window),
        ("gemma-3-12b", 8192)
    );
}

#[tokio::test]
async fn complete_is_not_streamed_and_has_no_tools() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![json_reply(
            200,
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "A summary."}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 900, "completion_tokens": 40}}),
        )],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let response = client
        .complete(
            vec![json!({"role": "user", "content": "sum up"})],
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(response.text, "A summary.");
    assert_eq!(response.usage.unwrap().input_tokens, 900);
    assert_eq!(
        server.requests("POST /v1/chat/completions")[0].json(),
        json!({"model": "m", "messages": [{"role": "user", "content": "sum up"}], "stream": false})
    );
}

#[tokio::test]
async fn a_call_written_as_text_is_held_back_and_returned_as_a_call() {
    let server = FakeServer::start(vec![(
        "POST /v1/chat/completions",
        vec![Reply::Sse(sse(&[
            json!({"choices": [{"index": 0, "delta": {"content": "Checking.\n<tool_"}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>"}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ]))],
    )])
    .await;
    let client = client(&config(&server.url(), "m"));
    let mut req = request();
    req.text_tool_names = vec!["bash".into()];
    let (events, result) = chat(&client, &req).await;
    assert_eq!(events, vec![StreamEvent::Text("Checking.\n".into())]);
    let response = result.unwrap();
    assert_eq!(response.text, "Checking.\n");
    assert_eq!(
        response.tool_calls,
        vec![RawToolCall {
            id: String::new(),
            name: "bash".into(),
            arguments: "{\"command\":\"ls\"}".into()
        }]
    );
}
