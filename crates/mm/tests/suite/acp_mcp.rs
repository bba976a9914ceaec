//! MCP tools over ACP (in process, every message validated against the ACP schema by the test
//! client): configured servers' calls as tool calls, and the editor's `mcpServers` in
//! `session/new` with `acp.clientMcpServers` off (counted and ignored) and on (started like
//! configured ones). The reference server `mcp-server-everything` is used when installed
//! (.ci/run installs it); without it those tests skip with a note.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::path::Path;

use common::acp::*;
use common::{Answer, HANG_GUARD, ScriptedModel};
use mm_core::config::{Config, McpServerConfig, McpTiming};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp/fake_mcp.py"
    )
    .to_string()
}

fn config(f: impl FnOnce(&mut Config)) -> Config {
    let mut c = test_config();
    c.mcp_timing = McpTiming {
        start: HANG_GUARD,
        list_wait: HANG_GUARD,
        ..McpTiming::default()
    };
    f(&mut c);
    c
}

fn tool_updates(msgs: &[Value]) -> Vec<Value> {
    updates(msgs)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .collect()
}

/// The names of the tools of the model's `n`th request that start with `prefix`.
fn offered(model: &ScriptedModel, n: usize, prefix: &str) -> Vec<String> {
    model.requests()[n]
        .tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

async fn new_session_with(h: &mut Harness, cwd: &Path, servers: Value) -> String {
    let (_, r) = h
        .client
        .call("session/new", json!({"cwd": cwd, "mcpServers": servers}))
        .await;
    let id = r["result"]["sessionId"].as_str().unwrap().to_string();
    h.client.until_update("available_commands_update").await;
    id
}

#[mm_testkit::test]
async fn a_configured_server_s_calls_are_execute_tool_calls_titled_server_colon_tool() {
    common::need_command("python3", ".ci/run installs it");
    let model = ScriptedModel::new(vec![
        Answer::call("fake__echo", json!({"text": "hi"})),
        Answer::call("fake__fail", json!({})),
        Answer::text("done"),
    ]);
    let c = config(|c| {
        c.mcp_servers.insert(
            "fake".into(),
            McpServerConfig::new("python3", vec![fixture(), "ok".into()]),
        );
    });
    let mut h = Harness::start(c, model.clone());
    h.client.initialize(false).await;
    let cwd = tempfile::tempdir().unwrap();
    let (id, _) = h.client.new_session(cwd.path()).await;
    let (msgs, r) = h.client.prompt(&id, "echo").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let calls = tool_updates(&msgs);
    let first = &calls[0];
    assert_eq!(
        (
            &first["sessionUpdate"],
            &first["title"],
            &first["kind"],
            &first["rawInput"]
        ),
        (
            &json!("tool_call"),
            &json!("fake: echo"),
            &json!("execute"),
            &json!({"text": "hi"})
        )
    );
    let ends: Vec<(Value, Value)> = calls
        .iter()
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .map(|u| {
            (
                u["status"].clone(),
                u["content"][0]["content"]["text"].clone(),
            )
        })
        .collect();
    assert_eq!(
        ends,
        vec![
            (json!("completed"), json!("echo: hi")),
            (json!("failed"), json!("the thing is broken"))
        ]
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn the_reference_server_over_acp() {
    common::need_command(
        "mcp-server-everything",
        "npm install -g @modelcontextprotocol/server-everything",
    );
    let model = ScriptedModel::new(vec![
        Answer::call("everything__get-sum", json!({"a": 40, "b": 2})),
        Answer::text("42"),
    ]);
    let c = config(|c| {
        c.mcp_servers.insert(
            "everything".into(),
            McpServerConfig::new("mcp-server-everything", vec!["stdio".into()]),
        );
    });
    let mut h = Harness::start(c, model.clone());
    h.client.initialize(false).await;
    let cwd = tempfile::tempdir().unwrap();
    let (id, _) = h.client.new_session(cwd.path()).await;
    let (msgs, _) = h.client.prompt(&id, "add").await;
    let calls = tool_updates(&msgs);
    assert_eq!(calls[0]["title"], "everything: get-sum");
    let last = calls.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(
        last["content"][0]["content"]["text"],
        "The sum of 40 and 2 is 42."
    );
    h.finish().await.unwrap();
}

/// The server an editor passes: the reference server when installed, else our fake.
fn client_server() -> (Value, &'static str, Value, &'static str) {
    if common::on_path("mcp-server-everything") {
        (
            json!({"name": "everything", "command": "mcp-server-everything", "args": ["stdio"], "env": []}),
            "everything__echo",
            json!({"message": "hi"}),
            "Echo: hi",
        )
    } else {
        (
            json!({"name": "everything", "command": "python3", "args": [fixture(), "ok"], "env": []}),
            "everything__echo",
            json!({"text": "hi"}),
            "echo: hi",
        )
    }
}

#[mm_testkit::test]
async fn client_servers_are_counted_and_ignored_by_default() {
    let (server, tool, _, _) = client_server();
    let model = ScriptedModel::new(vec![Answer::text("no tools")]);
    let mut h = Harness::start(config(|_| {}), model.clone());
    h.client.initialize(false).await;
    let cwd = tempfile::tempdir().unwrap();
    let id = new_session_with(&mut h, cwd.path(), json!([server])).await;
    h.client.prompt(&id, "hi").await;
    assert!(
        h.log_lines().contains(&format!(
            "[acp] session {id}: 1 MCP server(s) from the client ignored"
        )),
        "{:?}",
        h.log_lines()
    );
    assert!(
        !model.requests()[0]
            .tools
            .iter()
            .any(|t| t["function"]["name"] == tool)
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn with_client_mcp_servers_the_editor_s_stdio_servers_start_like_configured_ones() {
    common::need_command("python3", ".ci/run installs it");
    let (server, tool, args, answer) = client_server();
    let model = ScriptedModel::new(vec![
        Answer::call(tool, args.clone()),
        Answer::call("everything-2__echo", json!({"text": "two"})),
        Answer::text("done"),
    ]);
    let c = config(|c| {
        c.acp.client_mcp_servers = true;
    });
    let mut h = Harness::start(c, model.clone());
    h.client.initialize(false).await;
    let cwd = tempfile::tempdir().unwrap();
    let clash =
        json!({"name": "everything", "command": "python3", "args": [fixture(), "ok"], "env": []});
    let web =
        json!({"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []});
    let id = new_session_with(&mut h, cwd.path(), json!([server, clash, web])).await;
    let (msgs, r) = h.client.prompt(&id, "echo").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let log = h.log_lines();
    let mine: Vec<&String> = log
        .iter()
        .filter(|l| l.starts_with(&format!("[acp] session {id}: MCP server")))
        .collect();
    assert_eq!(mine.len(), 3, "{log:?}");
    assert!(
        mine[1].ends_with("(renamed from everything: the name was taken)"),
        "{mine:?}"
    );
    assert_eq!(
        mine[2],
        &format!(
            "[acp] session {id}: MCP server web from the client ignored: HTTP servers are not supported, only stdio"
        )
    );
    assert!(
        !log.iter()
            .any(|l| l.contains("ignored") && l.contains("MCP server(s)"))
    );
    assert!(offered(&model, 0, "everything__").contains(&tool.to_string()));
    let texts: Vec<Value> = tool_updates(&msgs)
        .iter()
        .filter(|u| u["status"] == "completed")
        .map(|u| u["content"][0]["content"]["text"].clone())
        .collect();
    assert_eq!(texts, vec![json!(answer), json!("echo: two")]);
    h.finish().await.unwrap();
}
