//! One ACP process under load (the fast variants of bench/load.sh, which runs the long ones):
//! 200 sessions with 20 prompts sent at once across them — turns are serialised process-wide, so
//! they queue — every request answered, in order per session, without a deadlock; and the memory
//! a session holds once idle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use common::HANG_GUARD;
use common::acp::TestClient;
use mm_acp::{Logger, serve_io};
use mm_core::event::Usage;
use mm_model::{ChatRequest, ModelClient, ModelError, ModelInfo, ModelResponse, StreamEvent};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A model that answers `re: <the last user message>` after a short pause, and remembers, per
/// session (told apart by the first prompt of its history), the prompts it was asked in order.
#[derive(Default)]
struct Echo {
    running: AtomicUsize,
    most_at_once: AtomicUsize,
    asked: std::sync::Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl ModelClient for Echo {
    async fn chat(
        &self,
        request: &ChatRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        let users: Vec<String> = request
            .messages
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect();
        self.asked.lock().unwrap().push(users.clone());
        // Long enough for the queue to build up behind this turn.
        let paused = tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(2)) => Ok(()),
            () = cancel.cancelled() => Err(ModelError::Cancelled),
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        paused?;
        let text = format!("re: {}", users.last().cloned().unwrap_or_default());
        on_event(StreamEvent::Text(text.clone()));
        Ok(ModelResponse {
            text,
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Usage::default()
            }),
            repeated: None,
        })
    }

    async fn complete(
        &self,
        _messages: Vec<Value>,
        _model: Option<&str>,
        _on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        _cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        Err(ModelError::Malformed("no summaries here".into()))
    }

    async fn info(&self, _cancel: &CancellationToken) -> Result<ModelInfo, ModelError> {
        Ok(ModelInfo {
            url: "http://echo/v1".into(),
            name: "echo".into(),
            context_window: 1_000_000,
            warning: None,
        })
    }
}

#[mm_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sessions_and_twenty_prompts_at_once_all_answered_in_order() {
    let config = Arc::new(common::acp::test_config());
    let model = Arc::new(Echo::default());
    let engine = Arc::new(mm_engine::Engine::new(config.clone(), model.clone()));
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_end);
    let (cr, cw) = tokio::io::split(client_end);
    let server = tokio::spawn(serve_io(engine, config, sr, sw, Logger::new(|_| {})));
    let mut c = TestClient::new(Box::new(cw), Box::new(cr));
    c.initialize(false).await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();

    let work = async {
        // 200 `session/new` at once.
        let mut ids = Vec::new();
        for _ in 0..200 {
            ids.push(
                c.request("session/new", json!({"cwd": cwd, "mcpServers": []}))
                    .await,
            );
        }
        let mut sessions = Vec::new();
        for id in ids {
            let (_, r) = c.until_response(id).await;
            sessions.push(r["result"]["sessionId"].as_str().unwrap().to_string());
        }
        // 20 prompts at once: two for each of ten sessions spread over the 200.
        let mut sent: Vec<(i64, String, String)> = Vec::new();
        for round in 1..=2 {
            for i in 0..10 {
                let session = sessions[i * 20 + 3].clone();
                let text = format!("s{i} p{round}");
                let id = c.send_prompt(&session, &text).await;
                sent.push((id, session, text));
            }
        }
        // Every message until the last answer, in the order written.
        let mut order: Vec<Value> = Vec::new();
        let mut answered = 0;
        while answered < sent.len() {
            let v = c.next().await;
            if v.get("method").is_none() && sent.iter().any(|(id, _, _)| v["id"] == *id) {
                answered += 1;
            }
            order.push(v);
        }
        (sessions, sent, order)
    };
    let (sessions, sent, order) = tokio::time::timeout(HANG_GUARD * 3, work)
        .await
        .expect("every request answered (no deadlock)");
    assert_eq!(sessions.len(), 200);
    assert_eq!(
        sessions
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        200
    );

    // Per session: its answers' text, and its responses, in the order they came.
    let mut texts: HashMap<String, Vec<String>> = HashMap::new();
    let mut responses: HashMap<String, Vec<String>> = HashMap::new();
    for v in &order {
        if v["method"] == "session/update"
            && v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        {
            let s = v["params"]["sessionId"].as_str().unwrap().to_string();
            let t = v["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap()
                .to_string();
            texts.entry(s).or_default().push(t);
        }
        if let Some((_, session, text)) = sent.iter().find(|(id, _, _)| v["id"] == *id) {
            assert_eq!(v["result"]["stopReason"], "end_turn", "{v}");
            responses
                .entry(session.clone())
                .or_default()
                .push(text.clone());
        }
    }
    for (i, (_, session, _)) in sent.iter().take(10).enumerate() {
        let expected = vec![format!("s{i} p1"), format!("s{i} p2")];
        assert_eq!(responses[session], expected, "the answers of session {i}");
        assert_eq!(
            texts[session],
            vec![format!("re: s{i} p1"), format!("re: s{i} p2")],
            "the text of session {i}"
        );
    }
    // Turns ran one at a time, each session's second after its first, with the first in its
    // history.
    assert_eq!(model.most_at_once.load(Ordering::SeqCst), 1);
    let asked = model.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 20);
    for i in 0..10 {
        let second = asked
            .iter()
            .find(|users| users.last() == Some(&format!("s{i} p2")))
            .unwrap();
        assert_eq!(second, &vec![format!("s{i} p1"), format!("s{i} p2")]);
    }
    c.close().await;
    tokio::time::timeout(HANG_GUARD, server)
        .await
        .expect("serve_io returns at EOF")
        .unwrap()
        .unwrap();
}

// ------------------------------------------------------------------ processes

#[cfg(unix)]
/// Whether a process is running (a zombie is not: it only waits to be reaped).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[cfg(unix)]
#[mm_testkit::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_cancelled_bash_calls_leave_no_process_behind() {
    use common::acp::Harness;
    use common::{Answer, ScriptedModel};

    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let model = ScriptedModel::new(vec![]);
    let mut h = Harness::start(common::acp::test_config(), model.clone());
    h.client.initialize(false).await;
    let (session, _) = h.client.new_session(&cwd).await;
    let mut pids: Vec<u32> = Vec::new();
    for i in 0..100 {
        let fifo = cwd.join(format!("pids-{i}"));
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Three background children, one of which ignores SIGTERM (only the SIGKILL after the
        // grace ends it); the call itself waits for them.
        let command = format!(
            "sleep 300 & a=$!; (trap '' TERM; exec sleep 300) & b=$!; sleep 300 & c=$!; \
             echo \"$a $b $c\" > {}; wait",
            fifo.display()
        );
        model.push(Answer::call("bash", json!({ "command": command })));
        let id = h
            .client
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": format!("run {i}")}]}),
            )
            .await;
        let started = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap());
        let started = tokio::time::timeout(HANG_GUARD, started)
            .await
            .expect("the command started its children")
            .unwrap();
        pids.extend(
            started
                .split_whitespace()
                .map(|p| p.parse::<u32>().unwrap()),
        );
        h.client
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
        let (_, r) = h.client.until_response(id).await;
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    }
    assert_eq!(pids.len(), 300);
    // Every group got SIGTERM at its cancel and SIGKILL 2 s later (in the background, so the
    // cancels did not wait for it). There is no event for the death of a process we are not the
    // parent of: a bounded poll.
    let deadline = std::time::Instant::now() + Duration::from_secs(2) + HANG_GUARD;
    let mut left: Vec<u32> = pids.clone();
    while !left.is_empty() && std::time::Instant::now() < deadline {
        left.retain(|p| alive(*p));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left, Vec::<u32>::new(), "processes left behind");
    h.finish().await.unwrap();
}
