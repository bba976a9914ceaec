//! The OpenAI-compatible client and server detection against the fake model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::sync::Mutex;
use std::time::Duration;

use common::{Chunk, FakeServer, Options, Reply};

use mm_core::config::ModelConfig;
use mm_core::event::Waiting;
use mm_model::detect::{LOCAL_MODEL_SCRIPT_URL, ServerKind, default_candidates};
use mm_model::openai::{ClientOptions, OpenAiClient};
use mm_model::{
    ChatRequest, ModelClient, ModelError, ModelInfo, ModelResponse, ModelStatus, RawToolCall,
    StreamEvent,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const LLAMA_STREAM: &[u8] =
    include_bytes!("../../../mm-model/fixtures/sse/llamacpp_reasoning_tool_call.sse");

fn config(url: &str, name: &str) -> ModelConfig {
    ModelConfig {
        url: url.to_string(),
        name: name.to_string(),
        api_key: String::new(),
        temperature: None,
        max_tokens: None,
        request_timeout: Duration::from_secs(600),
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
        model: None,
        repetition: None,
        conversation: None,
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

/// The chat requests the server received (headers included).
fn chats(server: &FakeServer) -> Vec<common::Received> {
    server.received("POST /v1/chat/completions")
}

/// The events as a stream: `data: {event}` each, then `data: [DONE]`.
fn sse(events: &[Value]) -> Reply {
    let mut chunks: Vec<Chunk> = events.iter().map(|e| Chunk::Raw(e.to_string())).collect();
    chunks.push(Chunk::Done);
    Reply::chunks(chunks, Duration::ZERO)
}

/// A server that answers `/props` with 404 and lists its one model without a window.
async fn windowless(script: Vec<Reply>) -> FakeServer {
    let options = Options {
        model: "m".into(),
        n_ctx: None,
        ..Options::default()
    };
    FakeServer::start_with(options, script).await.unwrap()
}

#[mm_testkit::test]
async fn streams_a_llamacpp_answer_and_sends_the_expected_request() {
    let stream = String::from_utf8(LLAMA_STREAM.to_vec()).unwrap();
    let server = FakeServer::start(vec![Reply::sse(&stream)]).await;
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
    let sent = chats(&server);
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
    assert_eq!(sent[0].header("authorization"), Some("Bearer sekret"));
}

/// Streams captured from a real llama.cpp server (llama-server b11434 serving SmolLM2-135M-Instruct,
/// scripts/local-model.sh): a plain answer, and two tool calls (`tool_choice: "required"` with
/// the `<tool_call>` prefill), each replayed byte for byte.
#[mm_testkit::test]
async fn replays_streams_captured_from_a_real_llamacpp_server() {
    let text = include_str!("../../../mm-model/fixtures/sse/llamacpp_captured_text.sse");
    let calls = include_str!("../../../mm-model/fixtures/sse/llamacpp_captured_tool_calls.sse");
    let server = FakeServer::start(vec![Reply::sse(text), Reply::sse(calls)]).await;
    let client = client(&config(&server.url(), "smollm2-135m-instruct"));

    let (events, result) = chat(&client, &request()).await;
    let answer = "I'm glad you're here. I'm glad you're here. What can I help you with?";
    let streamed: String = events
        .iter()
        .map(|e| match e {
            StreamEvent::Text(t) => t.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(streamed, answer);
    let response = result.unwrap();
    assert_eq!(response.text, answer);
    assert_eq!(response.tool_calls, Vec::<RawToolCall>::new());
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    let usage = response.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (35, 22));
    assert_eq!(usage.cached_read_tokens, Some(0));

    let (events, result) = chat(&client, &request()).await;
    assert_eq!(events, Vec::<StreamEvent>::new());
    let response = result.unwrap();
    assert_eq!(response.text, "");
    let call = |id: &str| RawToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: "{\n    \"command\": \"bash\"\n}".into(),
    };
    assert_eq!(
        response.tool_calls,
        vec![
            call("yTe7iEKPUIsFRQewroYbXhMNoDbt7pBO"),
            call("QxhWKeOMngcwDCQkRQVX0AAwLhfBsm9l")
        ]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    let usage = response.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (203, 63));
    assert_eq!(usage.cached_read_tokens, Some(21));
}

#[mm_testkit::test]
async fn sends_tools_and_temperature_and_no_key_when_none() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let mut cfg = config(&server.url(), "m");
    cfg.temperature = Some(0.25);
    let client = client(&cfg);
    let mut req = request();
    req.tools = vec![json!({"type": "function", "function": {"name": "bash", "parameters": {}}})];
    let (_, result) = chat(&client, &req).await;
    assert_eq!(result.unwrap().text, "ok");
    let sent = &chats(&server)[0];
    assert_eq!(sent.json()["tools"], json!(req.tools));
    assert_eq!(sent.json()["temperature"], json!(0.25));
    assert_eq!(sent.header("authorization"), None);
}

/// A server's error is one line with its message: a 500 and a 400 are not retried; a 503 that
/// never ends (more of them scripted than the client tries) is given up after five tries.
#[mm_testkit::test]
async fn a_server_error_is_one_line_with_its_message() {
    let loading = Reply::error(503, json!({"error": {"message": "Loading model"}}));
    let rows: Vec<(Vec<Reply>, &str, Option<usize>)> = vec![
        (
            vec![Reply::error(
                500,
                json!({"error": {"code": 500, "message": "model crashed"}}),
            )],
            "model server answered 500: model crashed",
            Some(1),
        ),
        (
            vec![Reply::error(400, json!({"error": "invalid tool schema"}))],
            "model server answered 400: invalid tool schema",
            None,
        ),
        (
            vec![loading; 10],
            "model server answered 503: Loading model",
            Some(5),
        ),
    ];
    for (replies, line, tries) in rows {
        let server = FakeServer::start(replies).await;
        let client = client(&config(&server.url(), "m"));
        let (_, result) = chat(&client, &request()).await;
        assert_eq!(result.unwrap_err().to_string(), line);
        if let Some(tries) = tries {
            assert_eq!(chats(&server).len(), tries, "{line}");
        }
    }
}

/// llama.cpp's answer while it loads its model.
fn loading_503() -> Reply {
    Reply::error(
        503,
        json!({"error": {"code": 503, "message": "Loading model"}}),
    )
}

/// What a call says when [`loading_503`] came twice: each retry before its wait (the test
/// clients wait 1 ms, then 2).
fn retried_twice() -> Vec<StreamEvent> {
    let retry = |attempt, ms| {
        StreamEvent::Waiting(Waiting::Retrying {
            error: "model server answered 503: Loading model".into(),
            attempt,
            of: 5,
            after: Duration::from_millis(ms),
        })
    };
    vec![retry(2, 1), retry(3, 2)]
}

/// What a chat says when [`loading_503`] came twice before `text`.
fn retried_twice_then(text: &str) -> Vec<StreamEvent> {
    let mut said = retried_twice();
    said.push(StreamEvent::Text(text.into()));
    said
}

#[mm_testkit::test]
async fn a_loading_server_503_is_retried_until_it_answers() {
    let loading = loading_503();
    let server = FakeServer::start(vec![loading.clone(), loading, Reply::text("ready")]).await;
    let client = client(&config(&server.url(), "m"));
    let (events, result) = chat(&client, &request()).await;
    // Each retry is said before its wait (the status line, an editor's notice).
    assert_eq!(events, retried_twice_then("ready"));
    assert_eq!(result.unwrap().text, "ready");
    assert_eq!(chats(&server).len(), 3);
}

/// Detection waits for a server still loading its model too (its `GET /models` answers 503),
/// often in the background with nobody to tell: a chat that waits for it says each retry, as
/// it says its own.
#[mm_testkit::test]
async fn a_chat_waiting_for_detection_says_the_loading_servers_retries() {
    let loading = loading_503();
    let server = FakeServer::start(vec![Reply::text("ready"), Reply::text("again")]).await;
    server.route(
        "GET /v1/models",
        vec![
            loading.clone(),
            loading,
            Reply::json(json!({"object": "list", "data": [{"id": "m", "object": "model"}]})),
        ],
    );
    let client = client(&config(&server.url(), "m"));
    let (events, result) = chat(&client, &request()).await;
    assert_eq!(events, retried_twice_then("ready"));
    assert_eq!(result.unwrap().text, "ready");
    // Once detected, the next chat has nothing more to say of it.
    let (events, _) = chat(&client, &request()).await;
    assert_eq!(events, vec![StreamEvent::Text("again".into())]);
}

#[mm_testkit::test]
async fn a_429_is_retried_after_its_retry_after() {
    let server = FakeServer::start(vec![
        Reply::error(429, json!({"error": "busy"})).with_header("Retry-After", "0"),
        Reply::text("done"),
    ])
    .await;
    let client = client(&config(&server.url(), "m"));
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(result.unwrap().text, "done");
    assert_eq!(chats(&server).len(), 2);
}

#[mm_testkit::test]
async fn a_stream_cut_midway_says_how_many_bytes_came() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = FakeServer::start(vec![Reply::sse(partial).cut_after(1)]).await;
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

#[mm_testkit::test]
async fn a_stream_closed_without_an_end_is_broken() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = FakeServer::start(vec![Reply::sse(partial)]).await;
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

#[mm_testkit::test]
async fn an_idle_server_times_out() {
    let server = FakeServer::start(vec![Reply::hang()]).await;
    let mut cfg = config(&server.url(), "m");
    cfg.request_timeout = Duration::from_millis(200);
    let client = client(&cfg);
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        "model server sent nothing for 0.2 s (model.requestTimeout)"
    );
}

#[mm_testkit::test]
async fn cancel_ends_a_waiting_call_at_once() {
    let server = FakeServer::start(vec![Reply::hang()]).await;
    let client = client(&config(&server.url(), "m"));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let req = request();
    let call = client.chat(&req, &|_| {}, &cancel);
    let trigger = async {
        server.wait_for_requests(1).await;
        canceller.cancel();
    };
    let (result, ()) =
        tokio::time::timeout(common::HANG_GUARD, async { tokio::join!(call, trigger) })
            .await
            .unwrap();
    assert_eq!(result, Err(ModelError::Cancelled));
}

#[mm_testkit::test]
async fn a_refused_port_fails_at_once_without_retries() {
    let port = common::refused_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let client = client(&config(&url, "m"));
    let started = std::time::Instant::now();
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err(),
        ModelError::Refused { url: url.clone() }
    );
    // A hang guard: retries took 7.5 s, nothing is waited for now.
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[mm_testkit::test]
async fn a_refused_port_without_a_model_name_fails_detection() {
    let port = common::refused_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let client = client(&config(&url, ""));
    assert_eq!(
        client
            .info(&CancellationToken::new())
            .await
            .unwrap_err()
            .to_string(),
        format!(
            "cannot reach the model server at {url}: connection refused — is it running? (mm doctor checks)"
        )
    );
}

#[mm_testkit::test]
async fn a_configured_url_without_a_model_list_is_detections_warning() {
    let server = FakeServer::start(vec![]).await;
    let wrong = server.url().replace("/v1", "/nope");
    let cancel = CancellationToken::new();
    // A model named: detection goes on without the listing, and says what it found.
    let info = client(&config(&wrong, "m")).info(&cancel).await.unwrap();
    assert_eq!(
        info.warning,
        Some(format!(
            "no OpenAI-compatible server at {wrong} (GET /models answered 404): check model.url or --url (mm doctor checks)"
        ))
    );
    let info = client(&config(&server.url(), "m"))
        .info(&cancel)
        .await
        .unwrap();
    assert_eq!(info.warning, None);
}

#[mm_testkit::test]
async fn detection_waits_for_a_server_loading_its_model() {
    // llama.cpp answers every endpoint 503 "Loading model" while it loads.
    let server = FakeServer::start(vec![]).await;
    let loading = Reply::error(
        503,
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
    );
    server.route(
        "GET /v1/models",
        vec![
            loading.clone(),
            loading.clone(),
            loading.clone(),
            loading,
            Reply::json(json!({"object": "list", "data": [{"id": "qwen", "object": "model"}]})),
        ],
    );
    for name in ["", "qwen"] {
        let client = client(&config(&server.url(), name));
        let info = client.info(&CancellationToken::new()).await.unwrap();
        assert_eq!(info.name, "qwen", "model.name {name:?}");
    }
    let listings = server
        .hits()
        .iter()
        .filter(|h| *h == "GET /v1/models")
        .count();
    assert_eq!(listings, 6, "four refusals, then one listing per client");
}

#[mm_testkit::test]
async fn a_refused_key_is_the_servers_answer_with_a_hint_not_an_unreachable_server() {
    let server = FakeServer::start(vec![]).await;
    let refused = Reply::error(
        401,
        json!({"error": {"message": "Invalid API Key", "type": "authentication_error"}}),
    );
    server.route("GET /v1/models", vec![refused]);
    let client = client(&config(&server.url(), ""));
    assert_eq!(
        client.info(&CancellationToken::new()).await,
        Err(ModelError::Http {
            status: 401,
            message: "Invalid API Key (check model.apiKey or MM_API_KEY)".into()
        })
    );
}

#[mm_testkit::test]
async fn llamacpp_context_error_carries_n_ctx_and_sets_the_unknown_window() {
    let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
    let body: Value = serde_json::from_str(body).unwrap();
    let server = windowless(vec![Reply::error(400, body)]).await;
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

#[mm_testkit::test]
async fn detection_takes_the_first_live_candidate_and_reads_props() {
    let dead = common::refused_port();
    let server = FakeServer::start(vec![]).await;
    server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"object": "list", "data": [
            {"id": "nomic-embed-text", "object": "model"},
            {"id": "qwen3-8b-q4_k_m.gguf", "object": "model", "owned_by": "llamacpp"}
        ]}))],
    );
    server.route(
        "GET /props",
        vec![Reply::json(
            json!({"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1}),
        )],
    );
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
            context_window: 32768,
            warning: None
        }
    );
    assert_eq!(client.server_kind().await, ServerKind::LlamaCpp);
}

/// The port of `http://127.0.0.1:PORT` or `http://127.0.0.1:PORT/v1`.
fn port_of(url: &str) -> u16 {
    let after = url.rsplit(':').next().unwrap();
    after.split('/').next().unwrap().parse().unwrap()
}

/// mm's own candidate list, each port replaced by `moved(port)`: its order and kinds, reachable.
fn default_candidates_moved(moved: impl Fn(u16) -> u16) -> Vec<(ServerKind, String)> {
    default_candidates()
        .into_iter()
        .map(|(kind, url)| {
            let port = port_of(&url);
            let url = url.replacen(&format!(":{port}/"), &format!(":{}/", moved(port)), 1);
            (kind, url)
        })
        .collect()
}

#[mm_testkit::test]
async fn detection_finds_the_local_model_script_after_the_well_known_servers() {
    let listing = |server: &FakeServer, id: &str| {
        let models = json!({"object": "list", "data": [{"id": id, "object": "model", "owned_by": "llamacpp"}]});
        server.route("GET /v1/models", vec![Reply::json(models)]);
    };
    let script = FakeServer::start(vec![]).await;
    listing(&script, "smollm2-135m-instruct");
    let user = FakeServer::start(vec![]).await;
    listing(&user, "qwen3-8b");
    let dead = common::refused_port();
    let script_port = port_of(LOCAL_MODEL_SCRIPT_URL);
    let detected = |moved: &dyn Fn(u16) -> u16| {
        let options = fast_options(default_candidates_moved(moved));
        async move {
            let client = OpenAiClient::with_options(&config("", ""), 0, options);
            let info = client.info(&CancellationToken::new()).await.unwrap();
            (info.url, info.name, client.server_kind().await)
        }
    };

    // Nothing on the usual ports: `scripts/local-model.sh start` is enough, no URL to set.
    let only_script = |port| {
        if port == script_port {
            script.addr().port()
        } else {
            dead
        }
    };
    assert_eq!(
        detected(&only_script).await,
        (
            script.url(),
            "smollm2-135m-instruct".to_string(),
            ServerKind::LlamaCpp
        )
    );

    // The user's own llama-server on 8080 wins over the script's.
    let both = |port| match port {
        8080 => user.addr().port(),
        p if p == script_port => script.addr().port(),
        _ => dead,
    };
    assert_eq!(
        detected(&both).await,
        (user.url(), "qwen3-8b".to_string(), ServerKind::LlamaCpp)
    );
}

#[mm_testkit::test]
async fn a_configured_window_is_not_probed() {
    let server = FakeServer::start(vec![]).await;
    server.route(
        "GET /props",
        vec![Reply::json(
            json!({"default_generation_settings": {"n_ctx": 4096}}),
        )],
    );
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

#[mm_testkit::test]
async fn no_server_found_says_what_was_tried() {
    let dead = common::refused_port();
    let options = fast_options(vec![(
        ServerKind::Ollama,
        format!("http://127.0.0.1:{dead}/v1"),
    )]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let (_, result) = chat(&client, &request()).await;
    assert_eq!(
        result.unwrap_err().to_string(),
        format!(
            "no model server found (tried http://127.0.0.1:{dead}/v1 (Ollama)); start one, e.g. `llama-server -m model.gguf --jinja` (on its default port, 8080 or 9931) or `ollama serve`, or set MM_MODEL_URL / --url"
        )
    );
}

#[mm_testkit::test]
async fn ollama_loaded_model_and_window_probed_again_after_the_first_call() {
    let nothing_loaded = Reply::json(json!({"models": []}));
    let server = FakeServer::start(vec![Reply::text("hi")]).await;
    server.route(
        "GET /v1/models",
        vec![Reply::json(
            json!({"object": "list", "data": [{"id": "qwen3:8b"}, {"id": "llama3.2:3b"}]}),
        )],
    );
    server.route(
        "GET /api/ps",
        vec![
            nothing_loaded.clone(),
            nothing_loaded,
            Reply::json(json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "context_length": 4096}]})),
        ],
    );
    server.route(
        "POST /api/show",
        vec![Reply::json(
            json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}}),
        )],
    );
    let options = fast_options(vec![(ServerKind::Ollama, server.url())]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let info = client.info(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        (info.name.as_str(), info.context_window),
        ("qwen3:8b", 40960)
    );
    assert_eq!(
        server.received("POST /api/show")[0].json(),
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

#[mm_testkit::test]
async fn lmstudio_loaded_model_is_preferred() {
    let server = FakeServer::start(vec![]).await;
    server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"data": [{"id": "text-embedding-nomic"}, {"id": "qwen2.5-7b"}, {"id": "gemma-3-12b"}]}))],
    );
    server.route(
        "GET /api/v0/models",
        vec![Reply::json(json!({"data": [
            {"id": "qwen2.5-7b", "type": "llm", "state": "not-loaded", "max_context_length": 32768},
            {"id": "gemma-3-12b", "type": "llm", "state": "loaded", "max_context_length": 131072, "loaded_context_length": 8192}
        ]}))],
    );
    let options = fast_options(vec![(ServerKind::LmStudio, server.url())]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let info = client.info(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        (info.name.as_str(), info.context_window),
        ("gemma-3-12b", 8192)
    );
}

#[mm_testkit::test]
async fn complete_is_not_streamed_and_has_no_tools() {
    // A server still loading answers 503 twice: the summary call is retried, each retry said.
    let server = FakeServer::start(vec![
        loading_503(),
        loading_503(),
        Reply::json(
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "A summary."}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 900, "completion_tokens": 40}}),
        ),
    ])
    .await;
    let client = client(&config(&server.url(), "m"));
    let events = std::sync::Mutex::new(Vec::new());
    let response = client
        .complete(
            vec![json!({"role": "user", "content": "sum up"})],
            None,
            &|e| events.lock().unwrap().push(e),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(*events.lock().unwrap(), retried_twice());
    assert_eq!(response.text, "A summary.");
    assert_eq!(response.usage.unwrap().input_tokens, 900);
    // The summary is held to the same cap as any answer: a quarter of the server's 32k window.
    assert_eq!(
        chats(&server)[2].json(),
        json!({"model": "m", "messages": [{"role": "user", "content": "sum up"}], "stream": false,
               "max_tokens": 8192})
    );
}

#[mm_testkit::test]
async fn a_call_written_as_text_is_held_back_and_returned_as_a_call() {
    let server = FakeServer::start(vec![sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": "Checking.\n<tool_"}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ])])
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

/// The bash tool as the engine sends it: `command`, and an integer `timeout`.
fn bash_tool() -> Value {
    json!({"type": "function", "function": {"name": "bash", "description": "run a command",
        "parameters": {"type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": ["integer", "null"]}},
            "required": ["command"]}}})
}

fn content_stream(text: &str) -> Reply {
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ])
}

#[mm_testkit::test]
async fn the_chat_template_from_props_lets_the_model_write_its_own_form() {
    // Llama 3.2 may write a bare pythonic call; mm reads that only when the family is known,
    // here from the template llama.cpp reports (it does without --jinja too).
    let written = "bash(command=\"ls\", timeout=\"30\")";
    let server = FakeServer::start(vec![content_stream(written), content_stream(written)]).await;
    server.route(
        "GET /props",
        vec![Reply::json(json!({
            "default_generation_settings": {"n_ctx": 32768},
            "chat_template": "{{- '<|start_header_id|>ipython<|end_header_id|>' }}{{- '<|python_tag|>' }}{{- '<|eot_id|>' }}",
        }))],
    );
    let mut req = request();
    req.tools = vec![bash_tool()];
    req.text_tool_names = vec!["bash".into()];
    let client = client(&config(&server.url(), "model.gguf"));
    let (events, result) = chat(&client, &req).await;
    assert_eq!(events, vec![]);
    assert_eq!(
        result.unwrap().tool_calls,
        vec![RawToolCall {
            id: String::new(),
            name: "bash".into(),
            // `timeout` is an integer in the schema.
            arguments: "{\"command\":\"ls\",\"timeout\":30}".into()
        }]
    );
    // Without the template, the same text is text.
    let plain = FakeServer::start(vec![content_stream(written)]).await;
    let client = self::client(&config(&plain.url(), "model.gguf"));
    let (_, result) = chat(&client, &req).await;
    let response = result.unwrap();
    assert_eq!(
        (response.text.as_str(), response.tool_calls.len()),
        (written, 0)
    );
}

#[mm_testkit::test]
async fn ollamas_show_gives_the_family_and_a_chosen_model_its_own() {
    let written = "Sure: {\"name\": \"bash\", \"parameters\": {\"command\": \"id\"}}";
    let server = FakeServer::start(vec![content_stream(written), content_stream(written)]).await;
    server.route(
        "GET /v1/models",
        vec![Reply::json(
            json!({"object": "list", "data": [{"id": "my-tuned:latest"}, {"id": "qwen3:8b"}]}),
        )],
    );
    server.route(
        "GET /api/version",
        vec![Reply::json(json!({"version": "0.12.0"}))],
    );
    server.route(
        "POST /api/show",
        vec![Reply::json(
            json!({"template": "{{ .Prompt }}", "details": {"family": "llama"},
            "model_info": {"general.architecture": "llama", "llama.context_length": 8192}}),
        )],
    );
    let options = fast_options(vec![(ServerKind::Ollama, server.url())]);
    let client = OpenAiClient::with_options(&config("", "my-tuned:latest"), 0, options);
    let mut req = request();
    req.tools = vec![bash_tool()];
    req.text_tool_names = vec!["bash".into()];
    let (_, result) = chat(&client, &req).await;
    let response = result.unwrap();
    assert_eq!(response.text, "Sure: ");
    assert_eq!(response.tool_calls.len(), 1, "{response:?}");
    // A session that chose another model: its name's family (Qwen), which writes no bare
    // JSON after prose on the same line.
    req.model = Some("qwen3:8b".into());
    let (_, result) = chat(&client, &req).await;
    let response = result.unwrap();
    assert_eq!(
        (response.text.as_str(), response.tool_calls.len()),
        (written, 0)
    );
}

#[mm_testkit::test]
async fn detection_finds_llama_server_on_its_new_default_port_with_nothing_configured() {
    let server = FakeServer::start(vec![]).await;
    let models = json!({"object": "list", "data": [{"id": "qwen3-8b", "object": "model", "owned_by": "llamacpp"}]});
    server.route("GET /v1/models", vec![Reply::json(models)]);
    let dead = common::refused_port();
    // Only 9931 answers (moved to the fake server's port): nothing else listens.
    let only_9931 = |port| {
        if port == 9931 {
            server.addr().port()
        } else {
            dead
        }
    };
    let client = OpenAiClient::with_options(
        &config("", ""),
        0,
        fast_options(default_candidates_moved(only_9931)),
    );
    let info = client.info(&CancellationToken::new()).await.unwrap();
    assert_eq!(
        (info.url, info.name),
        (server.url(), "qwen3-8b".to_string())
    );
    assert_eq!(client.server_kind().await, ServerKind::LlamaCpp);
}

/// A llama.cpp router's listing (its README, "Using multiple models"): each model with its
/// `status`, the loaded one's `meta` forwarded.
fn router_listing(statuses: &[(&str, &str)]) -> Reply {
    let data: Vec<Value> = statuses
        .iter()
        .map(|(id, status)| {
            let mut m = json!({"id": id, "object": "model", "owned_by": "llamacpp",
                               "status": {"value": status, "args": ["llama-server", "-c", "8192"]}});
            if *status == "loaded" {
                m["meta"] = json!({"n_ctx": 8192, "n_ctx_train": 40960});
            }
            m
        })
        .collect();
    Reply::json(json!({"object": "list", "data": data}))
}

#[mm_testkit::test]
async fn a_llamacpp_router_gives_its_loaded_model_each_window_and_the_statuses() {
    let server = FakeServer::start(vec![]).await;
    server.route(
        "GET /v1/models",
        vec![router_listing(&[
            ("nomic-embed", "loaded"),
            ("gemma-3-4b", "unloaded"),
            ("qwen3-8b", "loaded"),
            ("glm-4.7-flash", "loading"),
        ])],
    );
    // The router's own props say nothing of a model; each model's, asked without loading it.
    server.route("GET /props", vec![Reply::json(json!({"role": "router"}))]);
    server.route(
        "GET /props?model=qwen3-8b&autoload=false",
        vec![Reply::json(
            json!({"default_generation_settings": {"n_ctx": 16384}}),
        )],
    );
    server.route(
        "GET /props?model=gemma-3-4b&autoload=false",
        vec![Reply::json(
            json!({"default_generation_settings": {"n_ctx": 65536}}),
        )],
    );
    let options = fast_options(vec![(ServerKind::LlamaCpp, server.url())]);
    let client = OpenAiClient::with_options(&config("", ""), 0, options);
    let cancel = CancellationToken::new();
    let info = client.info(&cancel).await.unwrap();
    // The loaded model, not the first listed (an embedding model is never the one).
    assert_eq!(
        (info.name.as_str(), info.context_window),
        ("qwen3-8b", 16384)
    );
    assert_eq!(client.window_of("gemma-3-4b", &cancel).await, 65536);
    // Another model the router does not say the window of: unknown, not qwen3-8b's.
    assert_eq!(client.window_of("glm-4.7-flash", &cancel).await, 0);
    let list = client.models(&cancel).await.unwrap();
    assert_eq!(list.models, ["gemma-3-4b", "qwen3-8b", "glm-4.7-flash"]);
    assert_eq!(
        list.status.into_iter().collect::<Vec<_>>(),
        [
            ("gemma-3-4b".to_string(), ModelStatus::Unloaded),
            ("glm-4.7-flash".to_string(), ModelStatus::Loading),
            ("qwen3-8b".to_string(), ModelStatus::Loaded),
        ]
    );
}

#[mm_testkit::test]
async fn a_call_to_a_routers_model_still_loading_says_so_before_it_waits() {
    let server = FakeServer::start(vec![Reply::text("up"), Reply::text("again")]).await;
    server.route(
        "GET /v1/models",
        vec![
            // Detection, then the first call's look: loading; the second call's: loaded.
            router_listing(&[("qwen3-8b", "loading")]),
            router_listing(&[("qwen3-8b", "loading")]),
            router_listing(&[("qwen3-8b", "loaded")]),
        ],
    );
    let client = client(&config(&server.url(), "qwen3-8b"));
    let (events, result) = chat(&client, &request()).await;
    assert_eq!(
        events,
        vec![
            StreamEvent::Waiting(Waiting::Loading {
                model: "qwen3-8b".into()
            }),
            StreamEvent::Text("up".into())
        ]
    );
    assert_eq!(result.unwrap().text, "up");
    let (events, _) = chat(&client, &request()).await;
    assert_eq!(events, vec![StreamEvent::Text("again".into())]);
}
