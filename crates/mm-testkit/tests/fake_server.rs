//! Tests of the model doubles themselves: the fake model server with a plain reqwest client, and
//! the scripted model in process. On the test kit's own harness (src/harness.rs), like the suites.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: its requests run in tasks of their own and it starts mm-fake-server itself (the
// test's runtime owns them and its end reaps them).
#![allow(clippy::disallowed_methods)]

use mm_testkit as common;

use std::time::{Duration, Instant};

use common::*;
use mm_model::{ChatRequest, ModelClient, ModelError, StreamEvent};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn chat_body(messages: Value, stream: bool) -> Value {
    json!({"model": "fake-model", "stream": stream, "messages": messages})
}

fn hello() -> Value {
    json!([{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}])
}

async fn post(client: &reqwest::Client, server: &FakeServer, body: &Value) -> reqwest::Response {
    client
        .post(format!("{}/chat/completions", server.url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The `data:` payloads of an SSE body.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").unwrap().to_string())
        .collect()
}

fn deltas(events: &[String]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .filter_map(|v| v["choices"].get(0).map(|c| c["delta"].clone()))
        .collect()
}

#[mm_testkit::test]
async fn streams_text_word_by_word_with_usage_and_done() {
    let server = FakeServer::start(vec![Reply::text("hello brave world").with_usage(12, 3)]).await;
    let client = reqwest::Client::new();
    let resp = post(&client, &server, &chat_body(hello(), true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let events = events(&resp.text().await.unwrap());
    let texts: Vec<Value> = deltas(&events)
        .into_iter()
        .map(|d| d["content"].clone())
        .collect();
    assert_eq!(
        texts,
        vec![
            json!("hello"),
            json!(" brave"),
            json!(" world"),
            Value::Null
        ]
    );
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    let finish: Value = serde_json::from_str(&events[3]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage: Value = serde_json::from_str(&events[4]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})
    );
    assert_eq!(events[5], "[DONE]");
    assert_eq!(events.len(), 6);
    assert_eq!(server.requests(), vec![chat_body(hello(), true)]);
    assert!(server.violations().is_empty());
}

#[mm_testkit::test]
async fn reasoning_comes_before_text() {
    let server = FakeServer::start(vec![Reply::text("ok").with_reasoning("think hard")]).await;
    let client = reqwest::Client::new();
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    let d = deltas(&events(&body));
    assert_eq!(
        d[0],
        json!({"reasoning_content": "think", "role": "assistant"})
    );
    assert_eq!(d[1], json!({"reasoning_content": " hard"}));
    assert_eq!(d[2], json!({"content": "ok"}));
}

#[mm_testkit::test]
async fn tool_calls_are_split_across_deltas_by_index() {
    let server = FakeServer::start(vec![Reply::tool_calls(vec![
        Call::new("bash", json!({"command": "ls -la /tmp"})),
        Call::new("read_file", json!({"path": "src/main.rs"})).with_id("mine"),
    ])])
    .await;
    let client = reqwest::Client::new();
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    let events = events(&body);
    // index → (id, name, argument fragments)
    let mut calls: Vec<(String, String, Vec<String>)> = Vec::new();
    for d in deltas(&events) {
        let Some(tc) = d.get("tool_calls") else {
            continue;
        };
        let tc = &tc[0];
        let index = tc["index"].as_u64().unwrap() as usize;
        if calls.len() <= index {
            calls.resize(index + 1, Default::default());
        }
        if let Some(id) = tc["id"].as_str() {
            calls[index].0 = id.to_string();
        }
        if let Some(name) = tc["function"]["name"].as_str() {
            calls[index].1 = name.to_string();
        }
        let frag = tc["function"]["arguments"].as_str().unwrap();
        if !frag.is_empty() {
            calls[index].2.push(frag.to_string());
        }
    }
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_fake_1");
    assert_eq!(calls[0].1, "bash");
    assert_eq!(calls[0].2.len(), 3);
    assert_eq!(calls[0].2.concat(), r#"{"command":"ls -la /tmp"}"#);
    assert_eq!(calls[1].0, "mine");
    assert_eq!(calls[1].1, "read_file");
    assert_eq!(calls[1].2.len(), 3);
    assert_eq!(calls[1].2.concat(), r#"{"path":"src/main.rs"}"#);
    let finish: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(events[events.len() - 1], "[DONE]");
}

#[mm_testkit::test]
async fn ids_count_per_server_across_replies() {
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "a"})),
        Reply::tool_call("bash", json!({"command": "b"})),
    ])
    .await;
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    let mut messages = hello();
    for _ in 0..2 {
        let body = post(&client, &server, &chat_body(messages.clone(), false))
            .await
            .json::<Value>()
            .await
            .unwrap();
        let msg = body["choices"][0]["message"].clone();
        let id = msg["tool_calls"][0]["id"].as_str().unwrap().to_string();
        messages.as_array_mut().unwrap().push(msg);
        messages
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "tool", "tool_call_id": id, "content": "x"}));
        ids.push(id);
    }
    assert_eq!(ids, vec!["call_fake_1", "call_fake_2"]);
    assert!(server.violations().is_empty());
}

#[mm_testkit::test]
async fn non_streamed_request_gets_a_whole_completion() {
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "ls"}))
            .with_text_before("Let me look.")
            .with_usage(7, 2),
    ])
    .await;
    let client = reqwest::Client::new();
    let body: Value = post(&client, &server, &chat_body(hello(), false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        body,
        json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
            "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me look.",
                "tool_calls": [{"id": "call_fake_1", "type": "function",
                    "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}})
    );
}

#[mm_testkit::test]
async fn exhausted_script_answers_done() {
    let server = FakeServer::start(vec![]).await;
    let client = reqwest::Client::new();
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(deltas(&events(&body))[0]["content"], "done");
}

#[mm_testkit::test]
async fn broken_history_is_answered_417_and_recorded() {
    let server = FakeServer::start(vec![Reply::text("scripted")]).await;
    let client = reqwest::Client::new();
    let orphan = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "user", "content": "again"},
    ]);
    let resp = post(&client, &server, &chat_body(orphan, true)).await;
    assert_eq!(resp.status(), 417);
    let body: Value = resp.json().await.unwrap();
    let expected = "history invariant violated: message 3 (user) comes before the answer to \
                    tool call(s) \"a\" of message 2 — messages: system, user, assistant[a], user";
    assert_eq!(
        body["error"]["message"],
        json!(format!("fake server: {expected}"))
    );
    assert_eq!(server.violations(), vec![expected.to_string()]);
    assert_eq!(server.requests().len(), 1);
    // The scripted reply was not used up by the bad request.
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(deltas(&events(&body))[0]["content"], "scripted");
}

#[mm_testkit::test]
async fn hang_holds_until_the_client_drops_it() {
    let server = FakeServer::start(vec![Reply::hang(), Reply::text("after")]).await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.url());
    let pending = tokio::spawn({
        let client = client.clone();
        let body = chat_body(hello(), true);
        async move { client.post(url).json(&body).send().await }
    });
    server.wait_for_requests(1).await;
    assert!(!pending.is_finished());
    pending.abort();
    server.wait_for_abandoned(1).await;
    assert_eq!(server.last_bytes().len(), 0);
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(deltas(&events(&body))[0]["content"], "after");
}

#[mm_testkit::test]
async fn dropping_the_server_ends_a_hang() {
    let server = FakeServer::start(vec![Reply::hang()]).await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.url());
    let pending = tokio::spawn({
        let body = chat_body(hello(), true);
        async move { client.post(url).json(&body).send().await }
    });
    server.wait_for_requests(1).await;
    drop(server);
    let result = tokio::time::timeout(HANG_GUARD, pending)
        .await
        .expect("the request ends once the server is gone")
        .unwrap();
    assert!(result.is_err());
}

#[mm_testkit::test]
async fn disconnect_mid_stream_breaks_the_body() {
    let server = FakeServer::start(vec![Reply::disconnect_after(2)]).await;
    let client = reqwest::Client::new();
    let mut resp = post(&client, &server, &chat_body(hello(), true)).await;
    assert_eq!(resp.status(), 200);
    let mut got = Vec::new();
    let err = loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => got.extend_from_slice(&bytes),
            Ok(None) => panic!("the body ended cleanly"),
            Err(e) => break e,
        }
    };
    assert!(err.is_body() || err.is_decode(), "{err:?}");
    let got = String::from_utf8(got).unwrap();
    let texts: Vec<Value> = deltas(&events(&got))
        .into_iter()
        .map(|d| d["content"].clone())
        .collect();
    assert_eq!(texts, vec![json!("part0 "), json!("part1 ")]);
}

#[mm_testkit::test]
async fn stall_after_sends_the_first_chunks_then_nothing_until_the_client_leaves() {
    let server = FakeServer::start(vec![Reply::text("one two three").stall_after(2)]).await;
    let client = reqwest::Client::new();
    let mut resp = post(&client, &server, &chat_body(hello(), true)).await;
    let mut got = String::new();
    while deltas(&events(&got)).len() < 2 {
        let bytes = resp.chunk().await.unwrap().unwrap();
        got.push_str(std::str::from_utf8(&bytes).unwrap());
    }
    let texts: Vec<Value> = deltas(&events(&got))
        .into_iter()
        .map(|d| d["content"].clone())
        .collect();
    assert_eq!(texts, vec![json!("one"), json!(" two")]);
    // Nothing more comes (bounded: the stall is the thing under test).
    assert!(
        tokio::time::timeout(Duration::from_millis(200), resp.chunk())
            .await
            .is_err()
    );
    drop(resp);
    server.wait_for_abandoned(1).await;
}

/// The loading clock starts with the first request, not with `load_for`: a client that starts
/// late (a loaded machine) still meets the whole load, so a test may assert its wait from its
/// own first request (faults' "503 while loading" row measured 379 ms of a 400 ms load).
#[mm_testkit::test]
async fn the_loading_clock_starts_with_the_first_request() {
    let server = FakeServer::start(vec![Reply::text("ready")]).await;
    let load = Duration::from_millis(200);
    server.load_for(load);
    // What a slow client's start-up looks like to the server: time passes, nothing arrives.
    tokio::time::sleep(load + Duration::from_millis(100)).await;
    let client = reqwest::Client::new();
    let first = Instant::now();
    let resp = post(&client, &server, &chat_body(hello(), true)).await;
    assert_eq!(resp.status(), 503, "still loading at the first request");
    drop(resp);
    loop {
        let resp = post(&client, &server, &chat_body(hello(), true)).await;
        if resp.status() == 200 {
            break;
        }
        assert!(first.elapsed() < load + HANG_GUARD, "never loaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(first.elapsed() >= load, "{:?}", first.elapsed());
}

#[mm_testkit::test]
async fn a_loading_server_answers_503_to_everything_until_loaded() {
    let server = FakeServer::start(vec![Reply::text("ready")]).await;
    server.load_for(Duration::from_secs(60));
    let client = reqwest::Client::new();
    let loading =
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}});
    let resp = post(&client, &server, &chat_body(hello(), true)).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.json::<Value>().await.unwrap(), loading);
    let resp = client
        .get(format!("{}/models", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(
        server.remaining(),
        1,
        "the script is kept for after the load"
    );
    server.load_for(Duration::ZERO);
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(deltas(&events(&body))[0]["content"], "ready");
}

#[mm_testkit::test]
async fn a_request_that_is_not_http_is_refused_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = FakeServer::start(vec![]).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    // The first bytes of a TLS ClientHello.
    stream
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0xc8])
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(HANG_GUARD, stream.read_to_string(&mut answer))
        .await
        .expect("answered at once")
        .unwrap();
    assert_eq!(
        answer,
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

#[mm_testkit::test]
async fn disconnect_before_any_byte() {
    let server = FakeServer::start(vec![Reply::disconnect_after(0)]).await;
    let client = reqwest::Client::new();
    let err = client
        .post(format!("{}/chat/completions", server.url()))
        .json(&chat_body(hello(), true))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_request(), "{err:?}");
}

#[mm_testkit::test]
async fn error_reply_with_header() {
    let server = FakeServer::start(vec![
        Reply::error(429, json!({"error": {"message": "slow down"}}))
            .with_header("Retry-After", "1"),
    ])
    .await;
    let client = reqwest::Client::new();
    let resp = post(&client, &server, &chat_body(hello(), true)).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body, json!({"error": {"message": "slow down"}}));
}

#[mm_testkit::test]
async fn keep_alive_reuses_one_connection() {
    let server = FakeServer::start(vec![]).await;
    let client = reqwest::Client::new();
    for _ in 0..3 {
        let body = post(&client, &server, &chat_body(hello(), true))
            .await
            .text()
            .await
            .unwrap();
        assert!(body.ends_with("data: [DONE]\n\n"));
    }
    let models: Value = client
        .get(format!("{}/models", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "fake-model");
    assert_eq!(server.connections(), 1);
    assert_eq!(server.last_bytes().len(), 3);
    assert_eq!(
        server.hits(),
        vec![
            "POST /v1/chat/completions",
            "POST /v1/chat/completions",
            "POST /v1/chat/completions",
            "GET /v1/models",
        ]
    );
}

#[mm_testkit::test]
async fn models_and_props_report_the_context_window() {
    let server = FakeServer::start_with(
        Options {
            n_ctx: Some(4096),
            model: "tiny".into(),
            ..Options::default()
        },
        vec![],
    )
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let get = |path: &str| client.get(format!("http://{}{path}", server.addr())).send();
    let models: Value = get("/v1/models").await.unwrap().json().await.unwrap();
    assert_eq!(
        models,
        json!({"object": "list", "data": [{"id": "tiny", "object": "model", "owned_by": "fake",
                                           "meta": {"n_ctx": 4096, "n_ctx_train": 4096}}]})
    );
    let props: Value = get("/props").await.unwrap().json().await.unwrap();
    assert_eq!(props["default_generation_settings"]["n_ctx"], 4096);

    let unknown = FakeServer::start_with(
        Options {
            n_ctx: None,
            ..Options::default()
        },
        vec![],
    )
    .await
    .unwrap();
    let resp = client
        .get(format!("http://{}/props", unknown.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let models: Value = client
        .get(format!("{}/models", unknown.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0].get("meta"), None);
}

#[mm_testkit::test]
async fn paced_chunks_and_last_byte_time() {
    let chunks = (0..5).map(|i| Chunk::text(format!("{i}"))).collect();
    let server = FakeServer::start(vec![Reply::chunks(chunks, Duration::from_millis(20))]).await;
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    let received = Instant::now();
    assert!(t0.elapsed() >= Duration::from_millis(100));
    // Reply::chunks sends exactly what it is given: no finish, no [DONE].
    assert_eq!(events(&body).len(), 5);
    server.wait_for_responses(1).await;
    let last = server.last_bytes()[0];
    assert!(last.at >= t0 + Duration::from_millis(100));
    // Stamped before the last write, so never after the client had it all.
    assert!(last.at <= received);
}

#[mm_testkit::test]
async fn raw_chunks_and_pushed_replies() {
    let server = FakeServer::start(vec![]).await;
    server.push([Reply::chunks(
        vec![Chunk::Raw("{not json".into()), Chunk::Done],
        Duration::ZERO,
    )]);
    assert_eq!(server.remaining(), 1);
    let client = reqwest::Client::new();
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(body, "data: {not json\n\ndata: [DONE]\n\n");
    assert_eq!(server.remaining(), 0);
}

#[mm_testkit::test]
async fn answers_expect_100_continue_before_the_body() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = FakeServer::start(vec![]).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let body = chat_body(hello(), false).to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\
         Expect: 100-continue\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut got = vec![0u8; 25];
    tcp.read_exact(&mut got).await.unwrap();
    assert_eq!(
        String::from_utf8(got).unwrap(),
        "HTTP/1.1 100 Continue\r\n\r\n"
    );
    tcp.write_all(body.as_bytes()).await.unwrap();
    server.wait_for_responses(1).await;
    assert_eq!(server.requests(), vec![chat_body(hello(), false)]);
}

/// The demo binary: prints its URL, answers "list" with a `bash` call of `ls`, then a text.
#[mm_testkit::test]
async fn demo_binary_calls_ls_when_asked_to_list() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm-fake-server"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut url = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut url)
        .await
        .unwrap();
    let url = url.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"),
        "{url}"
    );
    let client = reqwest::Client::new();
    let ask = |messages: Value| {
        client
            .post(format!("{url}/chat/completions"))
            .json(&chat_body(messages, false))
            .send()
    };
    let user = json!({"role": "user", "content": "please list the files"});
    let first: Value = ask(json!([user])).await.unwrap().json().await.unwrap();
    let msg = first["choices"][0]["message"].clone();
    assert_eq!(msg["content"], "Let me list the files.");
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(
        msg["tool_calls"][0]["function"]["arguments"],
        r#"{"command":"ls"}"#
    );
    let id = msg["tool_calls"][0]["id"].clone();
    let tool = json!({"role": "tool", "tool_call_id": id, "content": "a\nb\n"});
    let second: Value = ask(json!([user, msg, tool]))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "The command printed 2 lines. I am a demo model, so that is all I can say about it."
    );
    child.kill().await.unwrap();
}

/// `--stream-bench N`: N one-token chunks, and the time of the last byte on stderr.
#[mm_testkit::test]
async fn bench_binary_streams_n_chunks_and_reports_the_last_byte() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm-fake-server"))
        .args(["--stream-bench", "50", "--rate", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut url = String::new();
    tokio::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .await
        .unwrap();
    let body = reqwest::Client::new()
        .post(format!("{}/chat/completions", url.trim()))
        .json(&chat_body(hello(), true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let received = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let texts: Vec<String> = deltas(&events(&body))
        .iter()
        .filter_map(|d| d["content"].as_str().map(String::from))
        .collect();
    assert_eq!(texts.len(), 50);
    assert_eq!(texts[0], "t0 ");
    assert_eq!(texts[49], "t49 ");
    let mut line = String::new();
    tokio::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .await
        .unwrap();
    let nanos: u128 = line
        .trim()
        .strip_prefix("last_byte_unix_ns=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(nanos <= received, "{nanos} > {received}");
    child.kill().await.unwrap();
}

/// The body llama.cpp b11434 sent for a 12 033-token prompt with `-c 8192`, byte for byte.
#[mm_testkit::test]
async fn context_exceeded_is_llama_cpp_s_error() {
    let server = FakeServer::start(vec![Reply::context_exceeded(12033, 8192)]).await;
    let resp = post(&reqwest::Client::new(), &server, &chat_body(hello(), true)).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.text().await.unwrap(),
        r#"{"error":{"code":400,"message":"request (12033 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":12033,"n_ctx":8192}}"#
    );
}

#[mm_testkit::test]
async fn other_routes_answer_their_replies_in_order_the_last_one_again() {
    let server = FakeServer::start(vec![]).await;
    server.route(
        "GET /api/ps",
        vec![
            Reply::json(json!({"models": []})),
            Reply::error(503, json!({"error": "busy"})),
            Reply::json(json!({"models": ["m"]})),
        ],
    );
    // Over a built-in route too.
    server.route("GET /props", vec![Reply::json(json!({"n": 1}))]);
    let client = reqwest::Client::new();
    let get = |path: &str| {
        client
            .get(format!("http://{}{path}?verbose=1", server.addr()))
            .header("X-Probe", "yes")
            .send()
    };
    let mut seen = Vec::new();
    for path in ["/api/ps", "/api/ps", "/api/ps", "/api/ps", "/props"] {
        let resp = get(path).await.unwrap();
        seen.push((resp.status().as_u16(), resp.json::<Value>().await.unwrap()));
    }
    assert_eq!(
        seen,
        vec![
            (200, json!({"models": []})),
            (503, json!({"error": "busy"})),
            (200, json!({"models": ["m"]})),
            (200, json!({"models": ["m"]})),
            (200, json!({"n": 1})),
        ]
    );
    // Every request is recorded with its headers, without the query string.
    let received = server.received("GET /api/ps");
    assert_eq!(received.len(), 4);
    assert_eq!(received[0].header("x-probe"), Some("yes"));
    assert_eq!(received[0].body, b"");
    assert_eq!(server.hits().last().unwrap(), "GET /props");
}

#[mm_testkit::test]
async fn recorded_events_are_sent_byte_for_byte() {
    let recorded = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                    data: [DONE]\n\n";
    let server = FakeServer::start(vec![Reply::sse(recorded)]).await;
    let client = reqwest::Client::new();
    let body = post(&client, &server, &chat_body(hello(), true))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(body, recorded);
}

// ------------------------------------------------------------------ the model in process

fn wire(messages: Value) -> ChatRequest {
    ChatRequest {
        messages: messages.as_array().unwrap().clone(),
        ..ChatRequest::default()
    }
}

#[mm_testkit::test]
async fn the_scripted_model_streams_its_chunks_then_hangs_until_cancelled() {
    let model = ScriptedModel::new(vec![
        Answer::chunks(&["Hel", "lo"]).with_usage(7, 2),
        Answer::hang(&["wait"]),
    ]);
    let events = std::sync::Mutex::new(Vec::new());
    let on_event = |e: StreamEvent| events.lock().unwrap().push(e);
    let cancel = CancellationToken::new();
    let first = model
        .chat(&wire(hello()), &on_event, &cancel)
        .await
        .unwrap();
    assert_eq!(first.text, "Hello");
    assert_eq!(first.usage.unwrap().input_tokens, 7);
    let request = wire(hello());
    let second = model.chat(&request, &on_event, &cancel);
    let canceller = async {
        model.wait_for_requests(2).await;
        cancel.cancel();
    };
    let (second, ()) = tokio::join!(second, canceller);
    assert_eq!(second, Err(ModelError::Cancelled));
    assert_eq!(
        events.into_inner().unwrap(),
        ["Hel", "lo", "wait"].map(|t| StreamEvent::Text(t.into()))
    );
    assert_eq!(model.requests().len(), 2);
}

#[mm_testkit::test]
async fn the_scripted_model_refuses_a_broken_history_and_will_not_be_dropped_quietly() {
    let model = ScriptedModel::new(vec![Answer::text("kept for a valid request")]);
    let orphan = wire(json!([
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "x", "content": "out"}
    ]));
    let cancel = CancellationToken::new();
    let refused = model.chat(&orphan, &|_| {}, &cancel).await.unwrap_err();
    assert!(
        matches!(&refused, ModelError::Http { status: 417, message }
            if message.contains("answers tool call \"x\"")),
        "{refused:?}"
    );
    assert_eq!(model.violations().len(), 1);
    let answered = model.chat(&wire(hello()), &|_| {}, &cancel).await.unwrap();
    assert_eq!(answered.text, "kept for a valid request");
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(model)));
    assert!(dropped.is_err(), "dropping it with a violation must panic");
}

fn main() -> std::process::ExitCode {
    mm_testkit::harness::main()
}
