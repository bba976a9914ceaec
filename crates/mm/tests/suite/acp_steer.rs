//! `_session/steering` through the built binary against the fake model server (docs/acp.md,
//! "Steering a running turn"); every message mm writes is validated by the test client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use common::acp::*;
use common::fake_server::FakeServer;
use common::script::Reply;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::acp_more::{Mm, spawn_mm};

fn dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    // As mm makes paths canonical (no `\\?\` prefix on Windows).
    let path = mm_core::paths::canonical(d.path()).unwrap();
    (d, path)
}

fn steering(id: &str, text: &str, idle: Option<&str>) -> Value {
    let mut p = json!({"sessionId": id, "prompt": [{"type": "text", "text": text}]});
    if let Some(idle) = idle {
        p["_meta"] = json!({"steering": {"idleBehavior": idle}});
    }
    p
}

#[mm_testkit::test]
async fn a_message_steered_during_a_bash_call_reaches_the_model_as_the_users() {
    common::platform::need_bash();
    // The command waits for a file the test writes once the message is in.
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "bash",
            json!({"command": "while [ ! -e go ]; do sleep 0.05; done; echo waited"}),
        ),
        Reply::text("stopping as asked"),
    ])
    .await;
    let (_d, cwd) = dir();
    let (_h, home) = dir();
    let mut mm = spawn_mm(&cwd, &home, &server.url());
    let init = mm.client.initialize(false).await;
    assert_eq!(
        init["result"]["_meta"],
        json!({"steering": {"supported": true}})
    );
    let (_, answer) = mm
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let prompt = mm.client.send_prompt(&id, "count the files").await;
    // The call runs: its `in_progress` update.
    loop {
        let (_, u) = mm.client.until_update("tool_call_update").await;
        if u["params"]["update"]["status"] == "in_progress" {
            break;
        }
    }
    let (_, r) = mm
        .client
        .call(
            "_session/steering",
            steering(&id, "stop after this one", None),
        )
        .await;
    assert_eq!(r["result"], json!({"outcome": "injected"}));
    std::fs::write(cwd.join("go"), "").unwrap();
    let (before, r) = mm.client.until_response(prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), "stopping as asked");
    let chats = server.received("POST /v1/chat/completions");
    assert_eq!(chats.len(), 2, "one turn, two model calls");
    let messages = chats[1].json()["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(messages[4]["content"], "stop after this one");
    assert_eq!(server.violations(), Vec::<String>::new());

    // No turn runs now: the client asked to keep the message.
    let (_, r) = mm
        .client
        .call(
            "_session/steering",
            steering(&id, "and then?", Some("promptRequired")),
        )
        .await;
    assert_eq!(
        r["result"],
        json!({"outcome": "promptRequired", "reason": "noRunningTurn"})
    );
    assert_eq!(server.received("POST /v1/chat/completions").len(), 2);

    // An unknown behaviour is refused, the session's id in the error.
    let (_, r) = mm
        .client
        .call("_session/steering", steering(&id, "x", Some("queue")))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["sessionId"], id.as_str());

    mm.client.close().await;
    let _ = mm.child.wait().await;
}

#[mm_testkit::test]
async fn a_message_steered_with_no_turn_starts_one_by_default() {
    let server = FakeServer::start(vec![Reply::text("hello")]).await;
    let (_d, cwd) = dir();
    let (_h, home) = dir();
    let mut mm = spawn_mm(&cwd, &home, &server.url());
    mm.client.initialize(false).await;
    let (_, answer) = mm
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let (_, r) = mm
        .client
        .call("_session/steering", steering(&id, "hi", None))
        .await;
    assert_eq!(r["result"], json!({"outcome": "startedNewTurn"}));
    // The turn runs as a prompt does: its title, then its answer.
    let (_, chunk) = mm.client.until_update("agent_message_chunk").await;
    assert_eq!(chunk["params"]["update"]["content"]["text"], "hello");
    mm.client.close().await;
    let _ = mm.child.wait().await;
}

/// The `notice` updates of a `session/new`, for a client that advertised `session.notices` or
/// not.
async fn notices_after_new(notices: bool) -> (Vec<Value>, std::path::PathBuf) {
    let server = FakeServer::start(vec![]).await;
    let (_d, cwd) = dir();
    let (_h, home) = dir();
    std::fs::create_dir_all(cwd.join(".mm")).unwrap();
    std::fs::write(
        cwd.join(".mm/config.toml"),
        "[[hooks.preToolCall]]\ncommand = \"guard.sh\"\n",
    )
    .unwrap();
    let mut mm = spawn_mm(&cwd, &home, &server.url());
    let (_, id) = open_session(&mut mm, &cwd, notices).await;
    // A prompt's answer comes after whatever the opening sent.
    mm.client.prompt(&id, "/compact").await;
    mm.client.close().await;
    let _ = mm.child.wait().await;
    (notices_in(&mm.client.received), cwd)
}

/// Initializes as a client that advertises `session.notices` or not, and opens a session in
/// `cwd`: the `session/new` answer and the session's id.
async fn open_session(mm: &mut Mm, cwd: &std::path::Path, notices: bool) -> (Value, String) {
    let mut caps =
        json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false});
    if notices {
        caps["session"] = json!({"notices": {}});
    }
    mm.client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps}),
        )
        .await;
    let (_, answer) = mm
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await;
    let id = answer["result"]["sessionId"].as_str().unwrap().to_string();
    (answer, id)
}

/// The `notice` updates among the messages received; on a system without a fence for commands
/// (Windows), the notice that says so on every session is left out (the untrusted project's
/// test is about its own).
fn notices_in(received: &[Value]) -> Vec<Value> {
    updates(received)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "notice")
        .filter(|u| u["title"] != "Sandbox not enforced on this system")
        .collect()
}

#[mm_testkit::test]
async fn an_untrusted_projects_skipped_hook_is_a_notice_for_a_client_that_shows_them() {
    let (found, cwd) = notices_after_new(true).await;
    let untrusted: Vec<&Value> = found
        .iter()
        .filter(|n| n["title"] == "Project not trusted: its hooks and servers were skipped")
        .collect();
    assert_eq!(untrusted.len(), 1, "{found:?}");
    assert_eq!(untrusted[0]["severity"], "warning");
    let shown = cwd.display().to_string();
    assert_eq!(
        untrusted[0]["description"],
        format!(
            "project {shown} is not trusted: ignored its 1 hook(s); trust it with: mm trust {shown}"
        )
    );
    let (found, _) = notices_after_new(false).await;
    assert_eq!(
        found,
        Vec::<Value>::new(),
        "no notice without the capability"
    );
}

/// One prompt against `server`, for a client that advertised `session.notices` or not: the
/// `notice` updates it got, and the session's model option; with `loaded`, the router then
/// lists its model as `loaded` and a second prompt runs: the model option as it is sent again.
async fn notices_of_a_prompt(
    server: &FakeServer,
    notices: bool,
    loaded: Option<Reply>,
) -> (Vec<Value>, Value, Option<Value>) {
    let (_d, cwd) = dir();
    let (_h, home) = dir();
    let mut mm = spawn_mm(&cwd, &home, &server.url());
    let (answer, id) = open_session(&mut mm, &cwd, notices).await;
    let option = super::acp_more::model_option_of(&mut mm.client, &answer).await;
    let (before, r) = mm.client.prompt(&id, "hello").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), "up");
    let mut again = None;
    if let Some(loaded) = loaded {
        server.route("GET /v1/models", vec![loaded]);
        let prompt = mm.client.send_prompt(&id, "again").await;
        // Sent after the first turn or the second (after its answer), whichever saw the change.
        let mut answered = false;
        let option = loop {
            let (before, u) = mm.client.until_update("config_option_update").await;
            answered |= before.iter().any(|m| m["id"] == prompt);
            let option = u["params"]["update"]["configOptions"][1].clone();
            if option["options"][0]["description"] == "loaded" {
                break option;
            }
        };
        again = Some(option);
        if !answered {
            mm.client.until_response(prompt).await;
        }
    }
    mm.client.close().await;
    let _ = mm.child.wait().await;
    (notices_in(&mm.client.received), option, again)
}

/// A llama.cpp router (its README, "Using multiple models") whose one model is still loading.
fn router_loading() -> Reply {
    Reply::json(json!({"object": "list", "data": [
        {"id": "qwen3-8b", "object": "model", "owned_by": "llamacpp",
         "status": {"value": "loading", "args": ["llama-server", "-c", "32768"]}},
        {"id": "gemma-3-4b", "object": "model", "owned_by": "llamacpp",
         "status": {"value": "unloaded"}},
    ]}))
}

/// The same once the router has loaded it.
fn router_loaded() -> Reply {
    Reply::json(json!({"object": "list", "data": [
        {"id": "qwen3-8b", "object": "model", "owned_by": "llamacpp",
         "status": {"value": "loaded", "args": ["llama-server", "-c", "32768"]},
         "meta": {"n_ctx": 32768}},
        {"id": "gemma-3-4b", "object": "model", "owned_by": "llamacpp",
         "status": {"value": "unloaded"}},
    ]}))
}

#[mm_testkit::test]
async fn a_routers_model_still_loading_is_a_notice_for_a_client_that_shows_them() {
    for notices in [true, false] {
        let server = FakeServer::start(vec![Reply::text("up"), Reply::text("up")]).await;
        server.route("GET /v1/models", vec![router_loading()]);
        let (found, option, again) =
            notices_of_a_prompt(&server, notices, Some(router_loaded())).await;
        // The models with their status, as the router lists them.
        assert_eq!(
            option["options"],
            json!([{"value": "qwen3-8b", "name": "qwen3-8b", "description": "loading"},
                   {"value": "gemma-3-4b", "name": "gemma-3-4b", "description": "not loaded"}])
        );
        let expected = match notices {
            true => vec![json!({"sessionUpdate": "notice", "severity": "info",
                "title": "Loading the model",
                "description": "the model server is loading qwen3-8b; the turn goes on once it is up"})],
            false => Vec::new(),
        };
        assert_eq!(found, expected, "notices advertised: {notices}");
        // Once loaded, the model option says so again.
        assert_eq!(
            again.unwrap()["options"],
            json!([{"value": "qwen3-8b", "name": "qwen3-8b", "description": "loaded"},
                   {"value": "gemma-3-4b", "name": "gemma-3-4b", "description": "not loaded"}])
        );
    }
}

/// A server still loading its one model answers detection's `GET /models` with 503 too: a prompt
/// that waits for detection says its retries as notices (they were a silent wait), the last
/// one always, the earlier ones as the prompt came in time for them.
#[mm_testkit::test]
async fn a_server_loading_during_detection_is_a_notice_for_a_client_that_shows_them() {
    let loading = Reply::error(
        503,
        json!({"error": {"code": 503, "message": "Loading model"}}),
    );
    let server = FakeServer::start(vec![Reply::text("up")]).await;
    // Three refusals: detection waits 0.5, 1 and 2 s, the prompt comes well within them.
    server.route(
        "GET /v1/models",
        vec![
            loading.clone(),
            loading.clone(),
            loading,
            Reply::json(json!({"object": "list", "data": [{"id": "m", "object": "model"}]})),
        ],
    );
    let (_d, cwd) = dir();
    let (_h, home) = dir();
    let mut mm = spawn_mm(&cwd, &home, &server.url());
    let (_, id) = open_session(&mut mm, &cwd, true).await;
    let (before, r) = mm.client.prompt(&id, "hello").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), "up");
    mm.client.close().await;
    let _ = mm.child.wait().await;
    let retry = |attempt: u32, after: &str| {
        json!({"sessionUpdate": "notice", "severity": "warning",
            "title": "The model server failed; retrying",
            "description": format!("model server answered 503: Loading model — try {attempt} of 5 in {after} s")})
    };
    let all = [retry(2, "0.5"), retry(3, "1"), retry(4, "2")];
    let found = notices_in(&mm.client.received);
    assert!(!found.is_empty() && all.ends_with(&found), "{found:#?}");
}

/// The summary call of a compression is retried like any model call, and said the same way.
#[mm_testkit::test]
async fn a_retried_summary_call_is_a_notice_for_a_client_that_shows_them() {
    let restarting = Reply::error(
        503,
        json!({"error": {"code": 503, "message": "Loading model"}}),
    );
    let mut script = vec![Reply::text("up"); 3];
    script.extend([restarting, Reply::text("Goals: none.")]);
    let server = FakeServer::start(script).await;
    let (_d, cwd) = dir();
    let (_h, home) = dir();
    let mut mm = spawn_mm(&cwd, &home, &server.url());
    let (_, id) = open_session(&mut mm, &cwd, true).await;
    for text in ["one", "two", "three"] {
        mm.client.prompt(&id, text).await;
    }
    let (_, r) = mm.client.prompt(&id, "/compact").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    mm.client.close().await;
    let _ = mm.child.wait().await;
    assert_eq!(
        notices_in(&mm.client.received),
        [json!({"sessionUpdate": "notice", "severity": "warning",
            "title": "The model server failed; retrying",
            "description": "model server answered 503: Loading model — try 2 of 5 in 0.5 s"})]
    );
    // The summary came from the call retried.
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    assert_eq!(requests[4]["stream"], false);
}

#[mm_testkit::test]
async fn a_retried_model_server_is_a_notice_for_a_client_that_shows_them() {
    for notices in [true, false] {
        let restarting = Reply::error(
            503,
            json!({"error": {"code": 503, "message": "Loading model"}}),
        );
        let server = FakeServer::start(vec![restarting, Reply::text("up")]).await;
        let (found, _, _) = notices_of_a_prompt(&server, notices, None).await;
        let expected = match notices {
            true => vec![json!({"sessionUpdate": "notice", "severity": "warning",
                "title": "The model server failed; retrying",
                "description": "model server answered 503: Loading model — try 2 of 5 in 0.5 s"})],
            false => Vec::new(),
        };
        assert_eq!(found, expected, "notices advertised: {notices}");
    }
}
