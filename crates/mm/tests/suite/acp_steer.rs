//! `_session/steering` through the built binary against the fake model server (docs/acp.md,
//! "Steering a running turn"); every message mm writes is validated by the test client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use common::acp::*;
use common::fake_server::FakeServer;
use common::script::Reply;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::acp_more::spawn_mm;

fn dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().canonicalize().unwrap();
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
    // A prompt's answer comes after whatever the opening sent.
    mm.client.prompt(&id, "/compact").await;
    mm.client.close().await;
    let _ = mm.child.wait().await;
    let all: Vec<Value> = mm.client.received.clone();
    let found = updates(&all)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "notice")
        .collect();
    (found, cwd)
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
