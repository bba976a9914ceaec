//! Runaway answers (engine.md, "Runaway answers"): a model that repeats itself is stopped — the
//! HTTP stream dropped so the server stops, the cut answer stored, the turn ended with
//! `[stopped: the model repeated itself]` and `end_turn` — in `mm -p` and over ACP; legitimate
//! long answers pass untouched; every request carries the default answer cap.
//!
//! The runaway streams are paced (one chunk a millisecond, thousands of them): a detector that
//! failed would keep the test reading for seconds and the server would write them all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::sync::Arc;
use std::time::Duration;

use common::acp::{TestClient, agent_text, updates};
use common::mm_run::{Run, Sandbox, assert_code};
use common::{Call, Chunk, FakeServer, Options, Reply};
use expectrl::{Eof, Expect};
use mm_acp::{Logger, serve_io};
use mm_core::config::{Config, ModelConfig};
use mm_engine::Engine;
use mm_model::openai::OpenAiClient;
use mm_model::{ChatRequest, ModelClient};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const STOP_LINE: &str = "[stopped: the model repeated itself]";
const PHRASE: &str = "of the vastness ";
/// Chunks of a runaway stream; at one a millisecond, three seconds if nobody stops it.
const RUNAWAY: usize = 3000;
const PACE: Duration = Duration::from_millis(1);

/// `Hello! ` then the phrase again and again, never finished.
fn text_loop() -> Reply {
    let mut chunks = vec![Chunk::text("Hello!")];
    chunks.extend((0..RUNAWAY).map(|_| Chunk::text(format!(" {}", PHRASE.trim_end()))));
    chunks.push(Chunk::finish("stop"));
    chunks.push(Chunk::Done);
    Reply::chunks(chunks, PACE)
}

/// The server noticed the client leave after at most `most` chunks of the runaway stream. The
/// margin is wide (a second of chunks for a stop found after a dozen): the server keeps to its
/// schedule while a loaded machine may hold mm back; what mm kept shows the exact point.
async fn assert_stopped_early(server: &FakeServer, most: usize) {
    server.wait_for_abandoned(1).await;
    let stopped = server.stopped_after();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert!(stopped[0] < most, "the server wrote {} chunks", stopped[0]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// The stored messages of the only session file: (role, content).
fn stored(sb: &Sandbox) -> Vec<(String, String)> {
    sb.only_session()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The line before the turn's recap (`ctx 3% of 32k · 0.0s`), which ends -p's stderr.
fn stop_line(run: &Run) -> Option<&str> {
    let mut lines = run.stderr.lines().rev();
    let recap = lines.next()?;
    assert!(
        recap.starts_with("ctx "),
        "no recap line at the end: {recap}"
    );
    lines.next()
}

fn roles(messages: &[(String, String)]) -> Vec<&str> {
    messages.iter().map(|(r, _)| r.as_str()).collect()
}

const SESSIONS: [&str; 2] = ["-c", "sessions.enabled=true"];

// ------------------------------------------------------------------ mm -p

#[mm_testkit::test]
async fn p_stops_a_phrase_repeated_thousands_of_times_and_stores_it_once() {
    let server = FakeServer::start(vec![text_loop()]).await;
    let sb = Sandbox::new();
    let mut args = SESSIONS.to_vec();
    args.extend(["-p", "Say hello in one short sentence"]);
    let run = sb.run(Some(&server.url()), &args).await;
    assert_code(&run, 0);
    assert_stopped_early(&server, 1000).await;
    // The user saw the repetition start, then the line on stderr.
    assert!(
        run.stdout.starts_with(&format!("Hello! {PHRASE}{PHRASE}")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.len() < 400, "{}", run.stdout);
    assert_eq!(stop_line(&run), Some(STOP_LINE), "{}", run.stderr);
    // What is kept for the next request: up to the first occurrence.
    let messages = stored(&sb);
    assert_eq!(roles(&messages), ["system", "user", "assistant"]);
    assert_eq!(messages[2].1, "Hello! of the vastness");
    assert_eq!(server.requests().len(), 1);
}

#[mm_testkit::test]
async fn p_stops_reasoning_that_goes_round_in_circles() {
    let mut chunks: Vec<Chunk> = (0..RUNAWAY)
        .map(|_| Chunk::reasoning("Wait, let me check the file again. "))
        .collect();
    chunks.push(Chunk::text("never reached"));
    chunks.push(Chunk::Done);
    let server = FakeServer::start(vec![Reply::chunks(chunks, PACE)]).await;
    let sb = Sandbox::new();
    let mut args = SESSIONS.to_vec();
    args.extend(["-p", "fix the build"]);
    let run = sb.run(Some(&server.url()), &args).await;
    assert_code(&run, 0);
    assert_stopped_early(&server, 1000).await;
    assert_eq!(run.stdout, "");
    assert_eq!(stop_line(&run), Some(STOP_LINE), "{}", run.stderr);
    // No answer at all: the question goes too, as after a failure.
    for file in sb.session_files() {
        let session = common::mm_run::read_json(&file);
        let roles: Vec<&str> = session["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system"]);
    }
}

#[mm_testkit::test]
async fn p_stops_a_tool_call_whose_arguments_loop_and_does_not_run_it() {
    let mut chunks = vec![
        Chunk::text("Writing it."),
        Chunk::call_start(0, "write_file"),
        Chunk::call_args(0, r#"{"path": "story.txt", "content": ""#),
    ];
    chunks.extend((0..RUNAWAY).map(|_| Chunk::call_args(0, PHRASE)));
    chunks.push(Chunk::call_args(0, r#""}"#));
    chunks.push(Chunk::finish("tool_calls"));
    chunks.push(Chunk::Done);
    let server = FakeServer::start(vec![Reply::chunks(chunks, PACE)]).await;
    let sb = Sandbox::new();
    let mut args = SESSIONS.to_vec();
    args.extend(["-p", "write a story"]);
    let run = sb.run(Some(&server.url()), &args).await;
    assert_code(&run, 0);
    // Arguments are code: the run must fill repeatCount × repeatSpan characters (125 phrases).
    assert_stopped_early(&server, 1200).await;
    assert_eq!(stop_line(&run), Some(STOP_LINE), "{}", run.stderr);
    assert!(!sb.path("story.txt").exists(), "the call ran");
    let messages = stored(&sb);
    assert_eq!(roles(&messages), ["system", "user", "assistant"]);
    assert_eq!(messages[2].1, "Writing it.");
    assert_eq!(
        sb.only_session()["messages"][2].get("toolCalls"),
        None,
        "the unfinished call was stored"
    );
}

#[mm_testkit::test]
async fn p_lets_long_legitimate_answers_through_untouched() {
    let mut answer = String::from("Here is the inventory.\n\n| # | item | status | owner |\n");
    answer.push_str("|---|---|---|---|\n");
    for i in 1..=300 {
        answer.push_str(&format!("| {i} | part-{} | ok | team |\n", i % 9));
    }
    answer.push_str("\nThe steps:\n\n");
    for i in 1..=40 {
        answer.push_str(&format!(
            "{i}. Run the test suite again and read the output.\n"
        ));
    }
    answer.push_str("\n```python\n");
    for _ in 0..30 {
        answer.push_str("    assert parse(\"1\") == 1\n");
    }
    answer.push_str("```\n\nThat is all.");
    let server = FakeServer::start(vec![Reply::text(&answer)]).await;
    let sb = Sandbox::new();
    let mut args = SESSIONS.to_vec();
    args.extend(["-p", "list everything"]);
    let run = sb.run(Some(&server.url()), &args).await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, format!("{answer}\n"));
    assert!(!run.stderr.contains(STOP_LINE), "{}", run.stderr);
    assert_eq!(stored(&sb)[2].1, answer);
    assert_eq!(server.abandoned(), 0);
}

#[mm_testkit::test]
async fn p_writes_a_file_of_many_identical_lines() {
    let content = "hello world\n".repeat(500);
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "write_file",
            json!({"path": "same.txt", "content": content}),
        ),
        Reply::text("Written."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            Some(&server.url()),
            &["-p", "write the same line 500 times"],
        )
        .await;
    assert_code(&run, 0);
    assert!(!run.stderr.contains(STOP_LINE), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.path("same.txt")).unwrap(),
        content
    );
    assert_eq!(run.stdout, "Written.\n");
    assert_eq!(server.abandoned(), 0);
}

#[mm_testkit::test]
async fn p_with_detection_off_reads_the_whole_loop() {
    let mut chunks: Vec<Chunk> = (0..200).map(|_| Chunk::text(PHRASE)).collect();
    chunks.push(Chunk::finish("stop"));
    chunks.push(Chunk::Done);
    let server = FakeServer::start(vec![Reply::chunks(chunks, Duration::ZERO)]).await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            Some(&server.url()),
            &["-c", "loop.detectRepetition=false", "-p", "go"],
        )
        .await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, format!("{}\n", PHRASE.repeat(200)));
    assert!(!run.stderr.contains(STOP_LINE), "{}", run.stderr);
}

#[mm_testkit::test]
async fn p_honours_a_lower_repeat_count() {
    let server = FakeServer::start(vec![text_loop()]).await;
    let sb = Sandbox::new();
    let run = sb
        .run(
            Some(&server.url()),
            &["-c", "loop.repeatCount=3", "-p", "go"],
        )
        .await;
    assert_code(&run, 0);
    assert_stopped_early(&server, 1000).await;
    // "Hello!" and three phrases, give or take the chunk that completed the third.
    assert!(
        run.stdout.len() <= "Hello!".len() + 4 * PHRASE.len(),
        "{}",
        run.stdout
    );
}

// ------------------------------------------------------------------ the answer cap

async fn first_request(n_ctx: Option<u64>, config: &ModelConfig, window: u64) -> Value {
    let server = FakeServer::start_with(
        Options {
            n_ctx,
            ..Options::default()
        },
        vec![Reply::text("ok")],
    )
    .await
    .unwrap();
    let mut config = config.clone();
    config.url = server.url();
    let client = OpenAiClient::new(&config, window);
    let request = ChatRequest {
        messages: vec![json!({"role": "user", "content": "hi"})],
        ..ChatRequest::default()
    };
    client
        .chat(&request, &|_| {}, &CancellationToken::new())
        .await
        .unwrap();
    server.requests().remove(0)
}

#[mm_testkit::test]
async fn max_tokens_is_a_quarter_of_the_window_unless_set() {
    let unset = Config::default().model;
    // (server's n_ctx, model.maxTokens, contextWindow, max_tokens sent)
    type Case = (Option<u64>, Option<u64>, u64, Option<u64>);
    let cases: [Case; 7] = [
        (Some(32768), None, 0, Some(8192)),
        (Some(131072), None, 0, Some(32768)),
        // At least 2048, never more than half the window.
        (Some(4096), None, 0, Some(2048)),
        (Some(2048), None, 0, Some(1024)),
        // contextWindow wins over the probe.
        (Some(32768), None, 16384, Some(4096)),
        // Unknown window: none.
        (None, None, 0, None),
        // Set: as set.
        (Some(32768), Some(300), 0, Some(300)),
    ];
    for (n_ctx, max_tokens, window, sent) in cases {
        let config = ModelConfig {
            max_tokens,
            ..unset.clone()
        };
        let body = first_request(n_ctx, &config, window).await;
        assert_eq!(
            body.get("max_tokens").and_then(Value::as_u64),
            sent,
            "n_ctx {n_ctx:?}, maxTokens {max_tokens:?}, contextWindow {window}"
        );
    }
}

#[mm_testkit::test]
async fn max_tokens_0_sends_none() {
    let config = ModelConfig {
        max_tokens: Some(0),
        ..Config::default().model
    };
    let body = first_request(Some(32768), &config, 0).await;
    assert_eq!(body.get("max_tokens"), None, "{body}");
}

#[mm_testkit::test]
async fn mm_config_shows_the_cap_and_where_it_comes_from() {
    let sb = Sandbox::new();
    let line = |run: &Run| -> String {
        run.stdout
            .lines()
            .find(|l| l.starts_with("model.maxTokens"))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let run = sb.run(None, &["config"]).await;
    assert_eq!(
        line(&run),
        "model.maxTokens = auto (window/4, ≥ 2048) # default"
    );
    let run = sb.run(None, &["-c", "contextWindow=32768", "config"]).await;
    assert_eq!(
        line(&run),
        "model.maxTokens = 8192 (contextWindow/4) # default"
    );
    let run = sb.run(None, &["-c", "contextWindow=4096", "config"]).await;
    assert_eq!(line(&run), "model.maxTokens = 2048 (the minimum) # default");
    let run = sb.run(None, &["-c", "model.maxTokens=0", "config"]).await;
    assert_eq!(line(&run), "model.maxTokens = 0 (none sent) # -c");
    let run = sb.run(None, &["-c", "loop.repeatSpan=4", "config"]).await;
    assert_code(&run, 1);
    assert!(
        run.stderr
            .contains("loop.repeatSpan must be at least 8, got 4"),
        "{}",
        run.stderr
    );
}

// ------------------------------------------------------------------ ACP

/// `mm -acp` in-process, its engine on the real HTTP client, against `server`.
fn acp(server: &FakeServer) -> (TestClient, tokio::task::JoinHandle<()>) {
    let config = Arc::new(Config {
        model: ModelConfig {
            url: server.url(),
            ..Config::default().model
        },
        ..Config::default()
    });
    let model = Arc::new(OpenAiClient::new(&config.model, 0));
    let engine = Arc::new(Engine::new(config.clone(), model));
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (client_read, client_write) = tokio::io::split(client_end);
    let task = tokio::spawn(async move {
        let _ = serve_io(
            engine,
            config,
            server_read,
            server_write,
            Logger::new(|_| {}),
        )
        .await;
    });
    (
        TestClient::new(Box::new(client_write), Box::new(client_read)),
        task,
    )
}

#[mm_testkit::test]
async fn acp_ends_the_turn_with_the_line_and_end_turn_and_stores_the_cut_answer() {
    let server =
        FakeServer::start(vec![text_loop(), Reply::text("Hello!").with_usage(120, 2)]).await;
    let (mut client, task) = acp(&server);
    client.initialize(false).await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let (session, _) = client.new_session(&cwd).await;
    let (before, response) = client.prompt(&session, "Say hello").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_stopped_early(&server, 1000).await;
    // The last chunk is the line, then the usage update, then the response.
    let ups = updates(&before);
    let n = ups.len();
    assert_eq!(
        ups[n - 2],
        json!({"sessionUpdate": "agent_message_chunk",
               "content": {"type": "text", "text": STOP_LINE}})
    );
    assert_eq!(ups[n - 1]["sessionUpdate"], "usage_update");
    assert_eq!(ups[n - 1]["size"], 32768);
    let used = ups[n - 1]["used"].as_u64().unwrap();
    assert!(used > 0, "{}", ups[n - 1]);
    assert!(agent_text(&before).starts_with(&format!("Hello! {PHRASE}{PHRASE}")));
    // The next request carries the cut answer, not the loop.
    let (_, response) = client.prompt(&session, "Again").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let requests = server.requests();
    let second = &requests[1]["messages"];
    let assistant: Vec<&Value> = second
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 1, "{second}");
    assert_eq!(assistant[0]["content"], "Hello! of the vastness");
    assert_eq!(server.violations(), Vec::<String>::new());
    client.close().await;
    tokio::time::timeout(common::acp::TIMEOUT, task)
        .await
        .unwrap()
        .unwrap();
}

#[mm_testkit::test]
async fn acp_a_reasoning_loop_leaves_a_valid_history_for_the_next_prompt() {
    let mut chunks: Vec<Chunk> = (0..RUNAWAY)
        .map(|_| Chunk::reasoning("Hmm, let me reconsider. "))
        .collect();
    chunks.push(Chunk::Done);
    let server = FakeServer::start(vec![
        Reply::chunks(chunks, PACE),
        Reply::tool_calls(vec![Call::new("bash", json!({"command": "true"}))]),
        Reply::text("Done."),
    ])
    .await;
    let (mut client, _task) = acp(&server);
    client.initialize(false).await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let (session, _) = client.new_session(&cwd).await;
    let (before, response) = client.prompt(&session, "think").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), STOP_LINE);
    assert_stopped_early(&server, 1000).await;
    let (_, response) = client.prompt(&session, "just do it").await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    // The second prompt's request holds it alone: no unanswered question before it.
    let requests = server.requests();
    let roles: Vec<&str> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user"]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

// ------------------------------------------------------------------ the terminal

#[mm_testkit::test]
fn the_terminal_shows_the_line_then_a_right_recap_and_the_prompt_comes_back() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let answer = Reply::chunks(
        vec![
            Chunk::text("Hi."),
            Chunk::finish("stop"),
            Chunk::Usage {
                prompt: 1500,
                completion: 2,
            },
            Chunk::Done,
        ],
        Duration::ZERO,
    );
    let server = runtime.block_on(FakeServer::start(vec![text_loop(), answer]));
    let home = tempfile::tempdir().unwrap();
    let mut mm = common::pty::spawn_mm(home.path(), &server.url(), &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("Say hello").unwrap();
    mm.expect(STOP_LINE).unwrap();
    // The recap: no token counts (the stream was dropped before the server sent them), the
    // context of the history as it now is, the time.
    let recap = mm
        .expect(expectrl::Regex(r"ctx \d+% of 32k · \d+\.\ds"))
        .unwrap();
    let recap = String::from_utf8_lossy(recap.before()).to_string();
    assert!(!recap.contains(" out"), "{recap}");
    mm.expect("> ").unwrap();
    mm.send_line("Again").unwrap();
    mm.expect("Hi.").unwrap();
    mm.expect("1.5k in / 2 out").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    runtime.block_on(assert_stopped_early(&server, 1000));
    let requests = server.requests();
    let assistant: Vec<&Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistant[0]["content"], "Hello! of the vastness");
}
