//! What `mm -acp` does with input a client should not send, and with a client that does not wait
//! (docs/acp-reference.md, "Input limits"): a line over `acp.maxLineBytes` is answered with one
//! short parse error and discarded as it arrives, a line at the cap is served, a line that is not
//! JSON is quoted shortly, and requests written right behind `initialize` are answered as if the
//! client had waited.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

#[cfg(target_os = "linux")]
use std::process::Stdio;
#[cfg(target_os = "linux")]
use std::time::Duration;

use common::acp::*;
#[cfg(target_os = "linux")]
use common::mm_run::Sandbox;
use common::{Answer, ScriptedModel};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
#[cfg(target_os = "linux")]
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The peak RSS allowed while an over-cap line streams in (issue 13), and what the line may add
/// to what mm holds after `initialize`: the line is never held whole (a 100 MB line would show).
/// The debug build's own size after `initialize` grew to 29–33 MB with this wave's features
/// (measured with the fence on and off: not the fence), so the ceiling is 48 MB and the growth
/// is what this test is about; the release budget is bench/acp.sh's.
#[cfg(target_os = "linux")]
const PEAK_RSS_LIMIT_KB: u64 = 48 * 1024;
#[cfg(target_os = "linux")]
const LINE_GROWTH_LIMIT_KB: u64 = 16 * 1024;

fn config(max_line: usize) -> mm_core::config::Config {
    let mut c = test_config();
    c.acp.max_line_bytes = max_line;
    // Room for the prompts at the cap.
    c.context_window = 10_000_000;
    c
}

/// A `session/prompt` line of exactly `len` bytes (without the newline).
fn prompt_line(id: i64, session: &str, len: usize) -> String {
    let line = |text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
        .to_string()
    };
    let bare = line("").len();
    assert!(len > bare, "a line of {len} bytes cannot hold a prompt");
    let out = line(&"x".repeat(len - bare));
    assert_eq!(out.len(), len);
    out
}

/// The parse error mm writes for a refused line: `id` null, code -32700, `data.line` given.
fn parse_error(line: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null,
           "error": {"code": -32700, "message": "Parse error", "data": {"line": line}}})
}

#[mm_testkit::test]
async fn a_line_over_the_cap_gets_one_short_parse_error_and_the_next_line_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let cap = 64 * 1024;
    let mut h = Harness::start(config(cap), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    // 1 MB of a request that never ends, written in pieces, then its newline.
    let head = r#"{"jsonrpc":"2.0","id":99,"method":"session/prompt","params":{"prompt":[{"type":"text","text":""#;
    let mut sent = head.len();
    h.client.send_raw(head.as_bytes()).await;
    let piece = "y".repeat(64 * 1024);
    while sent < 1024 * 1024 {
        h.client.send_raw(piece.as_bytes()).await;
        sent += piece.len();
    }
    h.client.send_raw(b"\n").await;
    let (before, r) = h
        .client
        .call("session/new", json!({"cwd": dir.path(), "mcpServers": []}))
        .await;
    assert!(r["result"]["sessionId"].is_string(), "{r}");
    let excerpt = format!("{head}{}", "y".repeat(120 - head.len()));
    assert_eq!(
        before,
        vec![parse_error(&format!(
            "{excerpt}… [{sent} bytes, over the 65536-byte limit (acp.maxLineBytes): discarded]"
        ))]
    );
    assert!(
        h.log_lines().contains(&format!(
            "[acp] input line of {sent} bytes is over the 65536-byte limit (acp.maxLineBytes): discarded"
        )),
        "{:?}",
        h.log_lines()
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_valid_line_at_the_cap_is_served_and_one_byte_more_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let cap = 256 * 1024;
    let model = ScriptedModel::new(vec![Answer::text("got it")]);
    let mut h = Harness::start(config(cap), model.clone());
    h.client.initialize(false).await;
    let (session, _) = h.client.new_session(&cwd).await;

    h.client.sent.insert(100, "session/prompt".into());
    h.client.send_line(&prompt_line(100, &session, cap)).await;
    let (_, r) = h.client.until_response(100).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(model.requests().len(), 1);
    assert!(model.last_user_message().len() > cap - 200);

    h.client
        .send_line(&prompt_line(101, &session, cap + 1))
        .await;
    let (before, r) = h
        .client
        .call("authenticate", json!({"methodId": "x"}))
        .await;
    assert_eq!(r["result"], json!({}));
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["error"]["code"], -32700);
    let line = before[0]["error"]["data"]["line"].as_str().unwrap();
    assert!(
        line.ends_with(&format!(
            "… [{} bytes, over the {cap}-byte limit (acp.maxLineBytes): discarded]",
            cap + 1
        )),
        "{line}"
    );
    assert_eq!(model.requests().len(), 1, "the refused prompt never ran");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_line_that_is_not_json_is_quoted_shortly() {
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    h.client.send_line("short garbage").await;
    let long = format!("{{\"jsonrpc\": \"2.0\", {}", "z".repeat(10_000));
    h.client.send_line(&long).await;
    let (before, _) = h
        .client
        .call("authenticate", json!({"methodId": "x"}))
        .await;
    assert_eq!(
        before,
        vec![
            parse_error("short garbage"),
            parse_error(&format!(
                "{}… [{} bytes, not JSON]",
                &long[..120],
                long.len()
            )),
        ]
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn requests_written_right_behind_initialize_are_answered_as_if_the_client_had_waited() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let new = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
               "params": {"cwd": cwd, "mcpServers": []}})
    };
    // One write: the client waits for nothing.
    let burst = format!("{init}\n{}\n{}\n", new(2), new(3));
    h.client.sent.insert(1, "initialize".into());
    h.client.sent.insert(2, "session/new".into());
    h.client.sent.insert(3, "session/new".into());
    h.client.send_raw(burst.as_bytes()).await;
    let (_, r1) = h.client.until_response(1).await;
    assert_eq!(r1["result"]["protocolVersion"], 1, "{r1}");
    for id in [2, 3] {
        let (_, r) = h.client.until_response(id).await;
        assert!(r["result"]["sessionId"].is_string(), "{r}");
    }
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_failed_initialize_does_not_hold_the_lines_behind_it() {
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    // A string protocol version is refused (-32602); the line behind it is not held.
    let burst = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        "\n"
    );
    h.client.sent.insert(1, "initialize".into());
    h.client.sent.insert(2, "initialize".into());
    h.client.send_raw(burst.as_bytes()).await;
    let (_, r1) = h.client.until_response(1).await;
    assert_eq!(r1["error"]["code"], -32602, "{r1}");
    let (_, r2) = h.client.until_response(2).await;
    assert_eq!(r2["result"]["protocolVersion"], 1, "{r2}");
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ the binary's memory

/// The peak resident set of a process (`VmHWM`), in kB: Linux's `/proc`.
#[cfg(target_os = "linux")]
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[cfg(target_os = "linux")]
#[mm_testkit::test]
async fn a_100_mb_line_keeps_mm_under_40_mb_and_is_not_echoed() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command(Some("http://127.0.0.1:9/v1"), &["-acp"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read = async || {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line))
            .await
            .expect("mm answered in time")
            .unwrap();
        line
    };
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .await
        .unwrap();
    let init = read().await;
    assert!(init.contains("\"protocolVersion\":1"), "{init}");
    let baseline = peak_rss_kb(pid);

    let total: usize = 100 * 1024 * 1024;
    let piece = vec![b'a'; 1024 * 1024];
    for _ in 0..total / piece.len() {
        stdin.write_all(&piece).await.unwrap();
    }
    stdin
        .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"authenticate\",\"params\":{\"methodId\":\"x\"}}\n")
        .await
        .unwrap();
    let error = read().await;
    let answer = read().await;
    let peak = peak_rss_kb(pid);
    drop(stdin);
    let _ = child.wait().await;

    assert!(
        error.len() < 400,
        "the parse error is short: {} bytes",
        error.len()
    );
    let error: Value = serde_json::from_str(&error).unwrap();
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(
        error["error"]["data"]["line"],
        format!(
            "{}… [{total} bytes, over the 8388608-byte limit (acp.maxLineBytes): discarded]",
            "a".repeat(120)
        )
    );
    assert_eq!(
        serde_json::from_str::<Value>(&answer).unwrap(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    eprintln!("peak RSS: {baseline} kB after initialize, {peak} kB after the 100 MB line");
    assert!(
        peak < PEAK_RSS_LIMIT_KB && peak.saturating_sub(baseline) < LINE_GROWTH_LIMIT_KB,
        "peak RSS {peak} kB (after initialize: {baseline} kB)"
    );
}
