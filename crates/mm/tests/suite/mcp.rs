//! MCP servers as tools, through the engine: a small server of our own (tests/fixtures/mcp/
//! fake_mcp.py) for every behaviour and every fault, and the reference server
//! `@modelcontextprotocol/server-everything` (installed by .ci/run; the tests that need it skip
//! with a note when it is missing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use mm_core::config::{Config, McpPermissions, McpServerConfig, McpTiming};
use mm_core::event::{Event, PermissionDecision, ToolKind, ToolStatus};
use mm_tools::mcp::Phase;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp/fake_mcp.py"
    )
    .to_string()
}

/// The fake server in `mode`, logging what it receives to `log` (a Python program: without
/// python3 the test is skipped with the reason).
fn fake(mode: &str, log: &Path) -> McpServerConfig {
    common::need_command("python3", ".ci/run installs it");
    let mut c = McpServerConfig::new("python3", vec![fixture(), mode.to_string()]);
    c.env
        .insert("MCP_LOG".into(), log.to_string_lossy().into_owned());
    c
}

/// Times for tests: starts and lists are awaited long enough for a busy machine, faults are
/// retried at once.
fn timing() -> McpTiming {
    McpTiming {
        start: HANG_GUARD,
        list_wait: HANG_GUARD,
        idle: Duration::from_secs(600),
        retry: Duration::ZERO,
    }
}

/// The lines the fake server logged: its pid and cwd first, then every message it received.
fn logged(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn pids(log: &Path) -> Vec<i32> {
    logged(log)
        .iter()
        .filter_map(|v| v["pid"].as_i64().map(|p| p as i32))
        .collect()
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
}

/// A process's end has no event to await here: poll, bounded.
async fn gone(pid: i32) -> bool {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while alive(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    !alive(pid)
}

/// Waits (bounded) until the file has a line satisfying `f`: the server writes it in its own
/// time.
async fn logged_until(log: &Path, f: impl Fn(&Value) -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    loop {
        if logged(log).iter().any(&f) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn tool_names(r: &mm_model::ChatRequest) -> Vec<String> {
    r.tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn mcp_names(r: &mm_model::ChatRequest, prefix: &str) -> Vec<String> {
    tool_names(r)
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// The finished calls: (output, status).
fn finished(fe: &Recorder) -> Vec<(String, ToolStatus)> {
    fe.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished(end) => Some((end.output, end.status)),
            _ => None,
        })
        .collect()
}

fn started(fe: &Recorder) -> Vec<(String, String, ToolKind)> {
    fe.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted(s) => Some((s.name, s.title, s.kind)),
            _ => None,
        })
        .collect()
}

/// The line a session shows for a failed server, spelled out as docs/acp-reference.md gives it
/// (not built by `mm_tools::mcp::warning`, which it checks).
fn failed_line(server: &str, why: &str) -> String {
    format!(
        "MCP server {server} failed: {why}; its tools are withdrawn until it restarts (at most once a minute)"
    )
}

struct World {
    rig: Rig,
    model: std::sync::Arc<ScriptedModel>,
    logs: tempfile::TempDir,
}

impl World {
    fn new(answers: Vec<Answer>, f: impl FnOnce(&mut Config, &Path)) -> World {
        let logs = tempfile::tempdir().unwrap();
        let model = ScriptedModel::new(answers);
        let dir = logs.path().to_path_buf();
        let rig = rig(model.clone(), |c| {
            c.mcp_timing = timing();
            f(c, &dir);
        });
        World { rig, model, logs }
    }

    fn log(&self, name: &str) -> PathBuf {
        self.logs.path().join(name)
    }
}

#[mm_testkit::test]
async fn the_tools_of_a_server_are_offered_and_called_with_their_own_schemas() {
    let w = World::new(
        vec![
            Answer::call("fake__echo", json!({"text": "hello"})),
            Answer::call("fake__fail", json!({})),
            Answer::call("fake__image", json!({})),
            Answer::text("done"),
        ],
        |c, logs| {
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    let out = w.rig.prompt(&mut s, "use the tools", &fe).await;
    assert_eq!(out.stop, Ok(mm_engine::StopReason::EndTurn));
    let requests = w.model.requests();
    let first = &requests[0];
    assert_eq!(
        mcp_names(first, "fake__"),
        vec![
            "fake__echo",
            "fake__fail",
            "fake__image",
            "fake__sleep",
            "fake__crash",
            "fake__grow",
            "fake__pid"
        ]
    );
    let echo = first
        .tools
        .iter()
        .find(|t| t["function"]["name"] == "fake__echo")
        .unwrap();
    assert_eq!(
        echo["function"],
        json!({"name": "fake__echo", "description": "Echo the text",
               "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
    );
    // MCP tools never enter the system prompt (a stable prefix for the server's cache).
    assert!(
        !first.messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("fake")
    );
    assert_eq!(
        started(&fe),
        vec![
            ("fake__echo".into(), "fake: echo".into(), ToolKind::Execute),
            ("fake__fail".into(), "fake: fail".into(), ToolKind::Execute),
            (
                "fake__image".into(),
                "fake: image".into(),
                ToolKind::Execute
            ),
        ]
    );
    assert_eq!(
        finished(&fe),
        vec![
            ("echo: hello".into(), ToolStatus::Completed),
            ("the thing is broken".into(), ToolStatus::Failed),
            ("here:\n[image, 12 kB]".into(), ToolStatus::Completed),
        ]
    );
    // The server got the arguments as given, and runs in the session's cwd.
    let log = logged(&w.log("fake"));
    assert_eq!(
        log[0]["cwd"].as_str().map(PathBuf::from),
        Some(mm_core::paths::canonical(&w.rig.cwd()).unwrap())
    );
    let call = log.iter().find(|m| m["method"] == "tools/call").unwrap();
    assert_eq!(
        (&call["params"]["name"], &call["params"]["arguments"]),
        (&json!("echo"), &json!({"text": "hello"})),
        "{call}"
    );
    w.model.assert_invariants();
    let pid = pids(&w.log("fake"))[0];
    w.rig.engine.processes.shutdown().await;
    assert!(gone(pid).await, "the server outlived the shutdown");
}

#[mm_testkit::test]
async fn max_output_applies_and_the_gate_asks_for_ask_servers_even_in_yolo() {
    let w = World::new(
        vec![
            Answer::call("fake__echo", json!({"text": "x".repeat(100)})),
            Answer::call("fake__echo", json!({"text": "again"})),
            Answer::text("done"),
        ],
        |c, logs| {
            let mut server = fake("ok", &logs.join("fake"));
            server.permissions = McpPermissions::Ask;
            c.mcp_servers.insert("fake".into(), server);
            c.tools.max_output = 40;
        },
    );
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::AllowOnce);
    fe.answer_permission(PermissionDecision::RejectOnce);
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "go", &fe).await;
    assert_eq!(fe.asked(), vec!["fake: echo", "fake: echo"]);
    let done = finished(&fe);
    assert!(
        done[0].0.contains("characters omitted"),
        "maxOutput: {:?}",
        done[0]
    );
    assert_eq!(
        done[1],
        (
            "[fake__echo rejected by the user]".into(),
            ToolStatus::Failed
        )
    );
}

#[mm_testkit::test]
async fn with_yolo_off_an_allow_server_asks_too() {
    let w = World::new(
        vec![
            Answer::call("fake__echo", json!({"text": "hi"})),
            Answer::text("done"),
        ],
        |c, logs| {
            c.yolo = false;
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::AllowOnce);
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "go", &fe).await;
    assert_eq!(fe.asked(), vec!["fake: echo"]);
    assert_eq!(finished(&fe)[0], ("echo: hi".into(), ToolStatus::Completed));
}

#[mm_testkit::test]
async fn a_cancelled_call_sends_notifications_cancelled() {
    let w = World::new(
        vec![
            Answer::call("fake__sleep", json!({"seconds": 30})),
            Answer::text("unused"),
        ],
        |c, logs| {
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = std::sync::Arc::new(Recorder::new());
    let mut s = w.rig.session(&fe).await;
    let cancel = CancellationToken::new();
    let log = w.log("fake");
    let (c2, l2) = (cancel.clone(), log.clone());
    tokio::spawn(async move {
        logged_until(&l2, |m| m["method"] == "tools/call").await;
        c2.cancel();
    });
    let out = tokio::time::timeout(
        HANG_GUARD,
        w.rig.engine.prompt(&mut s, "sleep", &[], &*fe, &cancel),
    )
    .await
    .expect("the cancel was not answered at once");
    assert_eq!(out.stop, Ok(mm_engine::StopReason::Cancelled));
    assert_eq!(
        finished(&fe),
        vec![("[cancelled]".into(), ToolStatus::Failed)]
    );
    let call_id = logged(&log)
        .iter()
        .find(|m| m["method"] == "tools/call")
        .map(|m| m["id"].clone())
        .unwrap();
    assert!(
        logged_until(&log, |m| m["method"] == "notifications/cancelled"
            && m["params"]["requestId"] == call_id)
        .await,
        "no notifications/cancelled for the call: {:?}",
        logged(&log)
    );
}

#[mm_testkit::test]
async fn a_call_that_hangs_answers_one_line_when_its_timeout_passes() {
    let w = World::new(
        vec![
            Answer::call("fake__sleep", json!({"seconds": 30})),
            Answer::call("fake__echo", json!({"text": "still here"})),
            Answer::text("done"),
        ],
        |c, logs| {
            let mut server = fake("ok", &logs.join("fake"));
            server.timeout = Duration::from_millis(200);
            c.mcp_servers.insert("fake".into(), server);
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "sleep", &fe).await;
    assert_eq!(
        finished(&fe),
        vec![
            (
                "[MCP server fake did not answer within 0.2 s; the call was cancelled]".into(),
                ToolStatus::Failed
            ),
            ("echo: still here".into(), ToolStatus::Completed),
        ]
    );
    assert!(logged_until(&w.log("fake"), |m| m["method"] == "notifications/cancelled").await);
}

#[mm_testkit::test]
async fn a_server_that_exits_mid_call_answers_one_line_and_its_tools_disappear() {
    let w = World::new(
        vec![
            Answer::call("fake__crash", json!({})),
            Answer::text("it broke"),
            Answer::text("second turn"),
        ],
        |c, logs| {
            c.mcp_timing.retry = Duration::from_secs(600);
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "crash it", &fe).await;
    let why = "exited with status 7: fatal: the crash tool was called";
    assert_eq!(
        finished(&fe),
        vec![(
            format!("[MCP server fake stopped during the call: {why}]"),
            ToolStatus::Failed
        )]
    );
    let pid = pids(&w.log("fake"))[0];
    assert!(gone(pid).await, "no orphan");
    fe.clear();
    let out = w.rig.prompt(&mut s, "again", &fe).await;
    assert_eq!(out.stop, Ok(mm_engine::StopReason::EndTurn));
    assert_eq!(
        fe.warnings(),
        vec![failed_line("fake", why)],
        "one warning, once"
    );
    let requests = w.model.requests();
    assert_eq!(mcp_names(&requests[2], "fake__"), Vec::<String>::new());
    // Not started again before the retry delay.
    assert_eq!(
        w.rig.engine.mcp_report(&s)[0].phase,
        Phase::Failed(why.into())
    );
    assert_eq!(pids(&w.log("fake")).len(), 1);
}

#[mm_testkit::test]
async fn a_failed_server_starts_again_on_a_later_turn() {
    let w = World::new(
        vec![
            Answer::call("fake__crash", json!({})),
            Answer::text("it broke"),
            Answer::call("fake__echo", json!({"text": "back"})),
            Answer::text("done"),
        ],
        |c, logs| {
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "crash it", &fe).await;
    fe.clear();
    w.rig.prompt(&mut s, "again", &fe).await;
    assert_eq!(
        finished(&fe),
        vec![("echo: back".into(), ToolStatus::Completed)]
    );
    assert_eq!(pids(&w.log("fake")).len(), 2);
}

/// Each fault at start: the session goes on without the server's tools, and the warning names
/// the server and what happened.
async fn fault_at_start(mode: &str, start: Duration) -> (Vec<String>, Vec<String>, Vec<i32>) {
    let w = World::new(vec![Answer::text("fine")], |c, logs| {
        c.mcp_timing.start = start;
        c.mcp_timing.retry = Duration::from_secs(600);
        c.mcp_servers
            .insert("bad".into(), fake(mode, &logs.join("bad")));
        c.mcp_servers
            .insert("good".into(), fake("ok", &logs.join("good")));
    });
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    let out = w.rig.prompt(&mut s, "hi", &fe).await;
    assert_eq!(out.stop, Ok(mm_engine::StopReason::EndTurn));
    let requests = w.model.requests();
    if start == HANG_GUARD {
        // (A start limit of a few hundred milliseconds is too short to count on for the good
        // one on a busy machine.)
        assert_eq!(mcp_names(&requests[0], "good__").len(), 7);
    }
    let bad: Vec<String> = mcp_names(&requests[0], "bad__");
    (fe.warnings(), bad, pids(&w.log("bad")))
}

#[mm_testkit::test]
async fn a_server_that_crashes_on_start() {
    let (warnings, tools, pids) = fault_at_start("crash-on-start", HANG_GUARD).await;
    assert_eq!(
        warnings,
        vec![failed_line(
            "bad",
            "exited with status 3: boom: MY_API_KEY is not set (during initialize)"
        )]
    );
    assert_eq!(tools, Vec::<String>::new());
    assert!(gone(pids[0]).await);
}

#[mm_testkit::test]
async fn a_server_that_hangs_on_initialize() {
    let (warnings, tools, pids) = fault_at_start("hang-init", Duration::from_secs(2)).await;
    assert_eq!(
        warnings,
        vec![failed_line("bad", "no answer to initialize within 2 s")]
    );
    assert_eq!(tools, Vec::<String>::new());
    assert!(gone(pids[0]).await, "the hung server was stopped");
}

#[mm_testkit::test]
async fn a_server_that_writes_garbage_on_stdout() {
    let (warnings, tools, pids) = fault_at_start("garbage", Duration::from_secs(2)).await;
    assert_eq!(
        warnings,
        vec![failed_line(
            "bad",
            "no answer to initialize within 2 s; it wrote non-JSON-RPC on stdout: Starting the server, please wait..."
        )]
    );
    assert_eq!(tools, Vec::<String>::new());
    assert!(gone(pids[0]).await);
}

#[mm_testkit::test]
async fn a_server_that_hangs_on_its_tool_list() {
    let (warnings, _, pids) = fault_at_start("hang-list", Duration::from_secs(2)).await;
    assert_eq!(
        warnings,
        vec![failed_line("bad", "no answer to tools/list within 2 s")]
    );
    assert!(gone(pids[0]).await);
}

#[mm_testkit::test]
async fn a_command_that_does_not_exist() {
    let w = World::new(vec![Answer::text("fine")], |c, _| {
        c.mcp_servers.insert(
            "nope".into(),
            McpServerConfig::new("/nonexistent/mcp-server", vec![]),
        );
    });
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "hi", &fe).await;
    assert_eq!(
        fe.warnings(),
        vec![failed_line(
            "nope",
            &format!(
                "cannot start \"/nonexistent/mcp-server\": {}",
                common::platform::open_error(Path::new("/nonexistent/mcp-server"))
            )
        )]
    );
}

#[mm_testkit::test]
async fn a_slow_list_joins_on_a_later_turn_and_the_first_call_waits_only_so_long() {
    let w = World::new(vec![Answer::text("one"), Answer::text("two")], |c, logs| {
        c.mcp_timing.list_wait = Duration::from_millis(100);
        let mut server = fake("slow-list", &logs.join("slow"));
        // The server holds its list until the test lets it go.
        let release = logs.join("release-list").to_string_lossy().into_owned();
        server.env.insert("MCP_RELEASE".into(), release);
        c.mcp_servers.insert("slow".into(), server);
    });
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    // The first turn ends while the list is still held: it waited only list_wait (100 ms), not
    // for the list (held until it is released below).
    tokio::time::timeout(HANG_GUARD, w.rig.prompt(&mut s, "first", &fe))
        .await
        .expect("the first turn waited for the list");
    assert_ne!(w.rig.engine.mcp_report(&s)[0].phase, Phase::Ready);
    assert_eq!(mcp_names(&w.model.requests()[0], "slow__").len(), 0);
    std::fs::write(w.log("release-list"), "").unwrap();
    // The list arrives in its own time: poll the state, bounded.
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while w.rig.engine.mcp_report(&s)[0].phase != Phase::Ready {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.rig.prompt(&mut s, "second", &fe).await;
    assert_eq!(mcp_names(&w.model.requests()[1], "slow__").len(), 7);
}

#[mm_testkit::test]
async fn a_changed_tool_list_is_offered_from_the_next_turn() {
    let w = World::new(
        vec![
            Answer::call("fake__grow", json!({})),
            Answer::text("grown"),
            Answer::call("fake__extra", json!({})),
            Answer::text("done"),
        ],
        |c, logs| {
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "grow", &fe).await;
    let r = w.model.requests();
    assert!(
        !tool_names(&r[1]).contains(&"fake__extra".to_string()),
        "frozen for the turn"
    );
    w.rig.prompt(&mut s, "use it", &fe).await;
    let r = w.model.requests();
    assert!(tool_names(&r[2]).contains(&"fake__extra".to_string()));
    assert_eq!(
        finished(&fe)[1],
        ("unknown tool extra".into(), ToolStatus::Failed),
        "the fake lists it but has no body for it"
    );
}

#[mm_testkit::test]
async fn an_idle_server_stops_keeps_its_tools_and_starts_again_on_a_call() {
    let w = World::new(
        vec![
            Answer::call("fake__pid", json!({})),
            Answer::text("one"),
            Answer::call("fake__pid", json!({})),
            Answer::text("two"),
        ],
        |c, logs| {
            c.mcp_timing.idle = Duration::from_millis(300);
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "pid", &fe).await;
    let first = pids(&w.log("fake"))[0];
    assert!(gone(first).await, "stopped when idle");
    assert_eq!(w.rig.engine.mcp_report(&s)[0].phase, Phase::Idle);
    w.rig.prompt(&mut s, "pid again", &fe).await;
    let r = w.model.requests();
    assert_eq!(
        mcp_names(&r[2], "fake__").len(),
        7,
        "still offered while idle"
    );
    let all = pids(&w.log("fake"));
    assert_eq!(all.len(), 2);
    assert_eq!(
        finished(&fe),
        vec![
            (first.to_string(), ToolStatus::Completed),
            (all[1].to_string(), ToolStatus::Completed)
        ]
    );
    w.rig.engine.processes.shutdown().await;
    assert!(gone(all[1]).await);
}

#[mm_testkit::test]
async fn sessions_of_one_cwd_share_a_client_and_another_cwd_gets_its_own() {
    let w = World::new(
        vec![
            Answer::call("fake__pid", json!({})),
            Answer::text("a"),
            Answer::call("fake__pid", json!({})),
            Answer::text("b"),
            Answer::call("fake__pid", json!({})),
            Answer::text("c"),
        ],
        |c, logs| {
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut a = w.rig.session(&fe).await;
    let mut b = w.rig.session(&fe).await;
    let other = tempfile::tempdir().unwrap();
    let mut c = w
        .rig
        .engine
        .new_session(other.path().to_path_buf(), &fe)
        .await;
    w.rig.prompt(&mut a, "pid", &fe).await;
    w.rig.prompt(&mut b, "pid", &fe).await;
    w.rig.prompt(&mut c, "pid", &fe).await;
    let outputs: Vec<String> = finished(&fe).into_iter().map(|(o, _)| o).collect();
    assert_eq!(outputs[0], outputs[1], "one client for one cwd");
    assert_ne!(outputs[0], outputs[2], "another cwd, another client");
    assert_eq!(pids(&w.log("fake")).len(), 2);
}

#[mm_testkit::test]
async fn servers_added_to_a_session_get_a_suffix_when_their_name_is_taken() {
    let w = World::new(
        vec![
            Answer::call("fake-2__echo", json!({"text": "two"})),
            Answer::text("done"),
        ],
        |c, logs| {
            c.mcp_servers
                .insert("fake".into(), fake("ok", &logs.join("fake")));
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    let given = w
        .rig
        .engine
        .attach_mcp_servers(&mut s, vec![("fake".into(), fake("ok", &w.log("client")))]);
    assert_eq!(given, vec![("fake".to_string(), "fake-2".to_string())]);
    w.rig.prompt(&mut s, "go", &fe).await;
    assert_eq!(
        started(&fe)[0],
        (
            "fake-2__echo".into(),
            "fake-2: echo".into(),
            ToolKind::Execute
        )
    );
    assert_eq!(
        finished(&fe)[0],
        ("echo: two".into(), ToolStatus::Completed)
    );
    let report = w.rig.engine.mcp_report(&s);
    let names: Vec<&str> = report.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["fake", "fake-2"]);
}

// ---------------------------------------------------------------- the reference server

/// `mcp-server-everything`, which the test needs on PATH (.ci/run installs it): without it the
/// test is skipped with the reason.
fn everything() -> McpServerConfig {
    common::need_command(
        "mcp-server-everything",
        "npm install -g @modelcontextprotocol/server-everything",
    );
    McpServerConfig::new("mcp-server-everything", vec!["stdio".into()])
}

#[mm_testkit::test]
async fn the_reference_server_lists_and_answers_calls() {
    let server = everything();
    let w = World::new(
        vec![
            Answer::call("everything__get-sum", json!({"a": 2, "b": 3})),
            Answer::call("everything__echo", json!({})),
            Answer::call("everything__get-tiny-image", json!({})),
            Answer::text("done"),
        ],
        |c, _| {
            c.mcp_servers.insert("everything".into(), server);
        },
    );
    let fe = Recorder::new();
    let mut s = w.rig.session(&fe).await;
    w.rig.prompt(&mut s, "add", &fe).await;
    let names = mcp_names(&w.model.requests()[0], "everything__");
    for expected in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
    ] {
        assert!(names.contains(&expected.to_string()), "{names:?}");
    }
    let done = finished(&fe);
    assert_eq!(
        done[0],
        ("The sum of 2 and 3 is 5.".into(), ToolStatus::Completed)
    );
    assert_eq!(
        done[1].1,
        ToolStatus::Failed,
        "a call without its argument: {done:?}"
    );
    assert!(done[1].0.contains("message"), "{done:?}");
    assert!(
        regex_like_image(&done[2].0),
        "the image is summarised: {:?}",
        done[2]
    );
    assert_eq!(
        started(&fe)[0].1,
        "everything: get-sum",
        "the title names the server and the tool"
    );
}

/// `…[image, N kB]…` or `[image, N B]`.
fn regex_like_image(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("[image, ") && (l.ends_with(" kB]") || l.ends_with(" B]")))
}

#[mm_testkit::test]
async fn a_session_s_servers_start_in_the_background_before_any_turn() {
    let w = World::new(vec![], |c, logs| {
        c.mcp_servers
            .insert("fake".into(), fake("ok", &logs.join("fake")));
    });
    let fe = Recorder::new();
    let s = w.rig.session(&fe).await;
    assert_eq!(
        w.rig.engine.mcp_report(&s)[0].phase,
        Phase::Idle,
        "not started by the engine alone: the front end says when"
    );
    w.rig.engine.start_mcp(&s);
    // No turn: the state is all there is to watch. Poll, bounded.
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while w.rig.engine.mcp_report(&s)[0].phase != Phase::Ready {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(w.rig.engine.mcp_report(&s)[0].tools.len(), 7);
    assert_eq!(w.model.calls(), 0);
}
