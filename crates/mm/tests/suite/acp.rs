//! `mm -acp` against docs/acp-reference.md, row by row: in-process over duplex pipes with a
//! scripted model, and a few through the built binary. Every message mm writes is validated against
//! the official schema (mm-testkit's fixtures/acp-schema) by the test client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::Path;
use std::process::Stdio;

use common::acp::*;
use common::platform::OnlyHome;
use common::{Answer, ScriptedModel};
use mm_model::ModelError;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn canonical(p: &Path) -> std::path::PathBuf {
    mm_core::paths::canonical(p).unwrap()
}

/// No capability of the agent is switched on, except those named.
fn assert_capabilities_off(caps: &Value, load_session: bool) {
    assert_eq!(caps["loadSession"], json!(load_session), "{caps}");
    fn no_true(v: &Value, path: &str) {
        match v {
            Value::Bool(b) => assert!(!b, "{path} is true"),
            Value::Object(m) => m
                .iter()
                .for_each(|(k, v)| no_true(v, &format!("{path}.{k}"))),
            Value::Null => {}
            other => panic!("{path} = {other}"),
        }
    }
    for (k, v) in caps.as_object().unwrap() {
        if k != "loadSession" {
            no_true(v, k);
        }
    }
}

// ------------------------------------------------------------------ initialize & co.

#[mm_testkit::test]
async fn initialize_answers_the_reference_values_and_logs_the_client() {
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    let r = h.client.initialize(true).await;
    let result = &r["result"];
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["authMethods"], json!([]));
    assert_eq!(
        result["agentInfo"],
        json!({"name": "bob", "title": "Bob (bash-first agent)", "version": mm_core::VERSION})
    );
    // No configuration: sessions are kept by default, so `loadSession` and the history's
    // methods are on (acp.md: `loadSession` follows `sessions.enabled`).
    assert_capabilities_off(&result["agentCapabilities"], true);
    // Beyond the reference: a client can always close a session (docs/acp.md).
    assert_eq!(
        result["agentCapabilities"]["sessionCapabilities"],
        json!({"close": {}, "list": {}, "resume": {}, "delete": {}})
    );
    // The fence is on by default: its line follows (what a kernel lacks is its own test's).
    let lines = h.log_lines();
    assert_eq!(
        lines[0],
        "[acp] client test-client 1.2.3 · protocol 1 · elicitation(form)=true"
    );
    assert!(
        lines[1].starts_with("[acp] sandbox: workspace-write"),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn initialize_reflects_the_configuration() {
    let mut config = test_config();
    config.sessions.enabled = false;
    config.acp.name = "alice".into();
    config.acp.title = String::new();
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    let (_, r) = h
        .client
        .call("initialize", json!({"protocolVersion": 1}))
        .await;
    assert_eq!(
        r["result"]["agentInfo"],
        json!({"name": "alice", "version": mm_core::VERSION})
    );
    assert_capabilities_off(&r["result"]["agentCapabilities"], false);
    assert_eq!(
        r["result"]["agentCapabilities"]["sessionCapabilities"],
        json!({"close": {}})
    );
    // The fence is on by default: its line follows (what a kernel lacks is its own test's).
    let lines = h.log_lines();
    assert_eq!(
        lines[0],
        "[acp] client unknown · protocol 1 · elicitation(form)=false"
    );
    assert!(
        lines[1].starts_with("[acp] sandbox: workspace-write"),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn initialize_logs_the_sandbox_on_its_own_line_when_it_is_on() {
    let mut config = test_config();
    config.tools.sandbox = mm_core::config::SandboxMode::ReadOnly;
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(true).await;
    let lines = h.log_lines();
    // The initialize line keeps its exact text; the sandbox has a line of its own.
    assert_eq!(
        lines[0],
        "[acp] client test-client 1.2.3 · protocol 1 · elicitation(form)=true"
    );
    if mm_tools::sandbox::landlock_abi() >= 5 {
        assert_eq!(lines[1..], ["[acp] sandbox: read-only"]);
    } else {
        // An older kernel: the line says what it does not enforce.
        assert!(
            lines[1].starts_with("[acp] sandbox: read-only — "),
            "{lines:?}"
        );
    }
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn authenticate_returns_an_empty_response() {
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (_, r) = h
        .client
        .call("authenticate", json!({"methodId": "none"}))
        .await;
    assert_eq!(r["result"], json!({}));
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn unsupported_methods_are_method_not_found_and_unknown_sessions_invalid_params() {
    let mut config = test_config();
    config.sessions.enabled = false;
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    for (method, params) in [
        ("logout", json!({})),
        // Without `sessions.enabled`.
        ("session/list", json!({})),
        (
            "session/resume",
            json!({"sessionId": "x", "cwd": "/", "mcpServers": []}),
        ),
        ("session/delete", json!({"sessionId": "x"})),
        (
            "session/load",
            json!({"sessionId": "x", "cwd": "/", "mcpServers": []}),
        ),
    ] {
        let (_, r) = h.client.call(method, params).await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }
    // Beyond the reference, whether sessions are saved or not (tests/acp_more.rs): for a
    // session this process does not hold, invalid params with its id.
    for (method, params) in [
        (
            "session/set_mode",
            json!({"sessionId": "x", "modeId": "ask"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": "x", "configId": "mode", "value": "ask"}),
        ),
        ("session/close", json!({"sessionId": "x"})),
    ] {
        let (_, r) = h.client.call(method, params).await;
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
        assert_eq!(r["error"]["data"]["sessionId"], "x", "{method}: {r}");
    }
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn malformed_lines_and_wrong_params_never_crash() {
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    h.client.send_line("this is not json").await;
    h.client.send_line("{\"jsonrpc\": \"2.0\"}").await;
    h.client.send_line("").await;
    let (_, r) = h.client.call("session/new", json!({"cwd": 42})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (_, r) = h
        .client
        .call("session/prompt", json!({"prompt": "x"}))
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (_, r) = h.client.call("no/such/method", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    // session/cancel for an unknown session is ignored.
    h.client
        .notify("session/cancel", json!({"sessionId": "nope"}))
        .await;
    let (_, r) = h
        .client
        .call("authenticate", json!({"methodId": "none"}))
        .await;
    assert_eq!(r["result"], json!({}));
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn prompt_for_an_unknown_session_is_invalid_params_with_the_id() {
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (_, r) = h.client.prompt("20990101-000000-deadbeef", "hi").await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(
        r["error"]["data"],
        json!({"sessionId": "20990101-000000-deadbeef"})
    );
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ session/new

#[mm_testkit::test]
async fn session_new_answers_then_lists_the_commands_and_skills() {
    let dir = tmp();
    let skill = dir.path().join(".mm/skills/greetings");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greetings\ndescription: Greet somebody with a festive message.\n---\nSay hi.\n",
    )
    .unwrap();
    let shadow = dir.path().join(".mm/skills/compact");
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(
        shadow.join("SKILL.md"),
        "---\nname: compact\ndescription: A skill the command shadows.\n---\nx\n",
    )
    .unwrap();
    let cwd = canonical(dir.path());
    let mut h = Harness::start(test_config(), ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let id = h
        .client
        .request(
            "session/new",
            json!({"cwd": cwd, "mcpServers": [
                {"name": "a", "command": "/bin/true", "args": [], "env": []},
                {"name": "b", "command": "/bin/true", "args": [], "env": []}
            ]}),
        )
        .await;
    let r = h.client.next().await;
    assert_eq!(r["id"], id, "the response comes first: {r}");
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    assert!(
        regex::Regex::new(r"^\d{8}-\d{6}-[0-9a-f]{8}$")
            .unwrap()
            .is_match(&session),
        "{session}"
    );
    let next = h.client.next().await;
    assert_eq!(
        next["params"],
        json!({"sessionId": session, "update": {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "new", "description": "Clear the history and start a new session"},
            {"name": "compact", "description": "Compress the history now, keeping the last turns"},
            {"name": "undo", "description": "Restore the files the last turn changed (again: the turn before)"},
            {"name": "greetings", "description": "Greet somebody with a festive message.", "input": {"hint": "parameters, if this skill needs any"}},
        ]}})
    );
    let log = h.log_lines();
    assert!(
        log.contains(&format!(
            "[acp] session {session} created in {}",
            cwd.display()
        )),
        "{log:?}"
    );
    assert!(
        log.contains(&format!(
            "[acp] session {session}: 2 MCP server(s) from the client ignored"
        )),
        "{log:?}"
    );
    assert!(
        log.contains(&format!(
            "[acp] session {session}: skill \"compact\" is not advertised: the /compact command shadows it; use $compact"
        )),
        "{log:?}"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn session_new_with_sessions_writes_the_file_at_once() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.sessions.enabled = true;
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    assert!(
        cwd.join(".mm/sessions")
            .join(format!("{id}.json"))
            .is_file()
    );
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ session/prompt

#[mm_testkit::test]
async fn a_text_turn_streams_chunks_then_usage_then_end_turn_with_totals() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![
        Answer::chunks(&["Hello", " world\n"]).with_usage(10, 5),
    ]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let (before, r) = h.client.prompt(&id, "hi").await;
    let ups = updates(&before);
    // The first prompt gives the session its title (beyond the reference: docs/acp.md).
    assert_eq!(
        ups[0],
        json!({"sessionUpdate": "session_info_update", "title": "hi"})
    );
    assert_eq!(
        ups[1..3],
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": " world\n"}}),
        ]
    );
    let last = ups.last().unwrap();
    assert_eq!(
        last["sessionUpdate"], "usage_update",
        "the last update before the response"
    );
    assert_eq!(last["size"], 8192);
    assert!(last["used"].as_u64().unwrap() >= 15, "{last}");
    assert_eq!(
        r["result"],
        json!({"stopReason": "end_turn", "usage": {"totalTokens": 15, "inputTokens": 10, "outputTokens": 5}})
    );
    assert_eq!(model.last_user_message(), "hi");
    assert!(
        h.log_lines()
            .contains(&"[acp] turn done: 0 command(s) · 0 file op(s) · 0 skill(s)".to_string())
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn no_usage_on_the_response_until_the_server_reported_some() {
    let dir = tmp();
    let mut h = Harness::start(
        test_config(),
        ScriptedModel::new(vec![Answer::text("ok").without_usage()]),
    );
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let (_, r) = h.client.prompt(&id, "hi").await;
    assert_eq!(r["result"], json!({"stopReason": "end_turn"}));
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn resource_links_are_flattened_into_the_user_message() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![Answer::text("ok").without_usage()]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let (_, r) = h
        .client
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [
                {"type": "text", "text": "read"},
                {"type": "resource_link", "name": "a b.txt", "uri": "file:///nowhere/a%20b.txt#L2"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            ]}),
        )
        .await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(
        model.last_user_message(),
        "read\n[attached file: /nowhere/a b.txt]"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn at_paths_are_attached_and_logged() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    std::fs::write(cwd.join("notes.md"), "n").unwrap();
    let model = ScriptedModel::new(vec![Answer::text("ok").without_usage()]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    h.client.prompt(&id, "see @notes.md.").await;
    let path = cwd.join("notes.md");
    assert_eq!(
        model.last_user_message(),
        format!(
            "see @notes.md.\n[attached file: {}]",
            mm_core::paths::for_model(&path)
        )
    );
    assert!(
        h.log_lines()
            .contains(&format!("[acp] session {id}: attached {}", path.display()))
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_tool_call_is_announced_run_and_finished() {
    common::platform::need_bash();
    let dir = tmp();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo hi"})).without_usage(),
        Answer::text("done").without_usage(),
    ]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (before, r) = h.client.prompt(&id, "run it").await;
    let ups = updates(&before);
    let calls: Vec<&Value> = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .collect();
    assert_eq!(calls.len(), 3, "{ups:#?}");
    let call_id = calls[0]["toolCallId"].as_str().unwrap();
    assert!(call_id.starts_with("call_"), "{call_id}");
    assert_eq!(calls[0]["sessionUpdate"], "tool_call");
    assert_eq!(calls[0]["title"], "bash: echo hi");
    assert_eq!(calls[0]["kind"], "execute");
    assert_eq!(calls[0]["rawInput"], json!({"command": "echo hi"}));
    assert!(calls[0]["status"].is_null() || calls[0]["status"] == "pending");
    assert_eq!(
        *calls[1],
        json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"})
    );
    assert_eq!(calls[2]["status"], "completed");
    let output = calls[2]["rawOutput"]["output"].as_str().unwrap();
    assert!(output.contains("hi"), "{output}");
    assert_eq!(
        calls[2]["content"],
        json!([{"type": "content", "content": {"type": "text", "text": output}}])
    );
    assert_eq!(agent_text(&before), "done");
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert!(
        h.log_lines()
            .contains(&"[acp] turn done: 1 command(s) · 0 file op(s) · 0 skill(s)".to_string())
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_file_edit_carries_a_diff_and_its_location() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![
        Answer::call("write_file", json!({"path": "a.txt", "content": "new\n"})).without_usage(),
        Answer::text("ok").without_usage(),
    ]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (before, _) = h.client.prompt(&id, "write").await;
    let ups = updates(&before);
    let start = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    let path = cwd.join("a.txt");
    assert_eq!(start["kind"], "edit");
    assert_eq!(start["locations"], json!([{"path": path}]));
    let end = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    assert_eq!(
        end["content"],
        json!([{"type": "diff", "path": path, "oldText": null, "newText": "new\n"}])
    );
    assert!(end["rawOutput"]["output"].is_string());
    assert!(
        h.log_lines()
            .contains(&"[acp] turn done: 0 command(s) · 1 file op(s) · 0 skill(s)".to_string())
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn permission_requests_offer_the_four_options_and_are_obeyed() {
    common::platform::need_bash();
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.yolo = false;
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo one"})).without_usage(),
        Answer::call("bash", json!({"command": "echo two"})).without_usage(),
        Answer::call("bash", json!({"command": "echo three"})).without_usage(),
        Answer::text("end").without_usage(),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "go").await;

    // First call: rejected.
    let (_, req) = h.client.until_request("session/request_permission").await;
    let p = &req["params"];
    assert_eq!(p["sessionId"], json!(id));
    assert_eq!(p["toolCall"]["title"], "bash: echo one");
    assert_eq!(p["toolCall"]["kind"], "execute");
    assert_eq!(p["toolCall"]["rawInput"], json!({"command": "echo one"}));
    assert_eq!(
        p["options"],
        json!([
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            {"optionId": "never", "name": "Never", "kind": "reject_always"},
        ])
    );
    h.client.select_option(&req, "reject").await;
    let (_, failed) = h.client.until_update("tool_call_update").await;
    assert_eq!(failed["params"]["update"]["status"], "failed");
    assert_eq!(
        failed["params"]["update"]["rawOutput"]["output"],
        "[command rejected by the user]"
    );

    // Second: always allowed; the third runs without a dialog.
    let (_, req) = h.client.until_request("session/request_permission").await;
    h.client.select_option(&req, "allow_always").await;
    let (before, r) = h.client.until_response(pid).await;
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission"),
        "{before:#?}"
    );
    let completed = updates(&before)
        .iter()
        .filter(|u| u["status"] == "completed")
        .count();
    assert_eq!(completed, 2);
    assert_eq!(r["result"]["stopReason"], "end_turn");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_permission_request_carries_the_whole_command() {
    // Over ACP the title is acp.md's `bash: <command>`, every line of it, and `rawInput` the
    // whole arguments: the editor shows them (the terminal folds them itself).
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.yolo = false;
    let command = format!("echo ok\nrm -rf ~ {}", "x".repeat(300));
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({ "command": command })).without_usage(),
        Answer::text("end").without_usage(),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "go").await;
    let (_, req) = h.client.until_request("session/request_permission").await;
    let call = &req["params"]["toolCall"];
    assert_eq!(call["title"], json!(format!("bash: {command}")));
    assert_eq!(call["rawInput"], json!({ "command": command }));
    h.client.select_option(&req, "reject").await;
    let (_, r) = h.client.until_response(pid).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_permission_request_carries_the_change_the_call_would_make() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    std::fs::write(cwd.join("a.txt"), "one\ntwo\n").unwrap();
    let mut config = test_config();
    config.yolo = false;
    let model = ScriptedModel::new(vec![
        Answer::call(
            "write_file",
            json!({"path": "new.txt", "content": "hello\n"}),
        )
        .without_usage(),
        Answer::call(
            "edit_file",
            json!({"path": "a.txt", "old_text": "two", "new_text": "2"}),
        )
        .without_usage(),
        Answer::text("end").without_usage(),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "go").await;
    // Before the user answers, the editor has the diff (a new file: `oldText` null).
    let (_, req) = h.client.until_request("session/request_permission").await;
    let new_file = cwd.join("new.txt").to_string_lossy().into_owned();
    assert_eq!(
        req["params"]["toolCall"]["content"],
        json!([{"type": "diff", "path": new_file, "oldText": null, "newText": "hello\n"}])
    );
    assert!(!cwd.join("new.txt").exists());
    h.client.select_option(&req, "reject").await;
    let (_, req) = h.client.until_request("session/request_permission").await;
    let a = cwd.join("a.txt").to_string_lossy().into_owned();
    assert_eq!(
        req["params"]["toolCall"]["content"],
        json!([{"type": "diff", "path": a, "oldText": "one\ntwo\n", "newText": "one\n2\n"}])
    );
    h.client.select_option(&req, "reject").await;
    let (_, r) = h.client.until_response(pid).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_cancelled_permission_outcome_is_a_rejection() {
    let dir = tmp();
    let mut config = test_config();
    config.yolo = false;
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo x"})).without_usage(),
        Answer::text("end").without_usage(),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let pid = h.client.send_prompt(&id, "go").await;
    let (_, req) = h.client.until_request("session/request_permission").await;
    h.client
        .respond(&req["id"], json!({"outcome": {"outcome": "cancelled"}}))
        .await;
    let (before, r) = h.client.until_response(pid).await;
    let ups = updates(&before);
    let end = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(end["status"], "failed");
    assert_eq!(end["rawOutput"]["output"], "[command rejected by the user]");
    assert_eq!(r["result"]["stopReason"], "end_turn");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn session_cancel_stops_the_turn_in_flight() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![Answer::hang(&["thinking"])]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let pid = h.client.send_prompt(&id, "go").await;
    h.client.until_update("agent_message_chunk").await;
    h.client
        .notify("session/cancel", json!({"sessionId": id}))
        .await;
    let (_, r) = h.client.until_response(pid).await;
    assert_eq!(r["result"]["stopReason"], "cancelled");
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_prompt_waiting_behind_another_turn_is_cancelled_without_running() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![Answer::hang(&["busy"])]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (a, _) = h.client.new_session(&cwd).await;
    let (b, _) = h.client.new_session(&cwd).await;
    let pa = h.client.send_prompt(&a, "A").await;
    h.client.until_update("agent_message_chunk").await;
    let pb = h.client.send_prompt(&b, "B").await;
    h.client
        .notify("session/cancel", json!({"sessionId": b}))
        .await;
    h.client
        .notify("session/cancel", json!({"sessionId": a}))
        .await;
    let (_, ra) = h.client.until_response(pa).await;
    let (_, rb) = h.client.until_response(pb).await;
    assert_eq!(ra["result"]["stopReason"], "cancelled");
    assert_eq!(rb["result"]["stopReason"], "cancelled");
    assert_eq!(
        model.calls(),
        1,
        "the waiting prompt never reached the model"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_failed_turn_is_an_internal_error_with_one_line() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![Answer::error(ModelError::Http {
        status: 500,
        message: "boom".into(),
    })]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let (_, r) = h.client.prompt(&id, "hi").await;
    assert_eq!(r["error"]["code"], -32603);
    assert_eq!(r["error"]["message"], "Internal error");
    let line = r["error"]["data"]["error"].as_str().unwrap();
    assert!(line.contains("model server answered 500: boom"), "{line}");
    assert!(!line.contains('\n'));
    assert!(
        h.log_lines()
            .iter()
            .any(|l| l.starts_with("[acp] turn done: "))
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn new_forgets_the_history_with_one_chunk() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![Answer::text("first answer").with_usage(10, 2)]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    h.client.prompt(&id, "first").await;
    let (before, r) = h.client.prompt(&id, "  /new \n").await;
    assert_eq!(
        agent_text(&before),
        "🆕 New session: 2 message(s) forgotten."
    );
    assert_eq!(
        r["result"],
        json!({"stopReason": "end_turn", "usage": {"totalTokens": 12, "inputTokens": 10, "outputTokens": 2}})
    );
    assert_eq!(model.calls(), 1, "/new does not consult the model");
    let log = h.log_lines();
    assert!(
        log.contains(&format!(
            "[acp] session {id}: new session, 2 message(s) forgotten"
        )),
        "{log:?}"
    );
    assert_eq!(
        log.iter()
            .filter(|l| l.starts_with("[acp] turn done"))
            .count(),
        1,
        "{log:?}"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn new_with_sessions_keeps_the_previous_conversation() {
    let dir = tmp();
    let mut config = test_config();
    config.sessions.enabled = true;
    let model = ScriptedModel::new(vec![Answer::text("a").without_usage()]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    h.client.prompt(&id, "q").await;
    h.client.prompt(&id, "/new").await;
    let log = h.log_lines();
    let kept = log
        .iter()
        .position(|l| {
            l.starts_with(&format!(
                "[acp] session {id}: previous conversation kept as "
            ))
        })
        .unwrap_or_else(|| panic!("{log:?}"));
    assert_eq!(
        log[kept + 1],
        format!("[acp] session {id}: new session, 2 message(s) forgotten")
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn compact_with_nothing_to_compact_answers_one_chunk() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    let (before, r) = h.client.prompt(&id, "/compact").await;
    let line = "🗜️ nothing to compact: 0 message(s), no turn older than the last 2";
    assert_eq!(agent_text(&before), line);
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(model.calls(), 0);
    assert!(
        h.log_lines()
            .contains(&format!("[acp] session {id}: /compact — {line}"))
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_slash_skill_is_rewritten_and_runs_a_turn() {
    let dir = tmp();
    let skill = dir.path().join(".mm/skills/greetings");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greetings\ndescription: Greet.\n---\nSay hi.\n",
    )
    .unwrap();
    let model = ScriptedModel::new(vec![Answer::text("ok").without_usage()]);
    let mut h = Harness::start(test_config(), model.clone());
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    h.client.prompt(&id, "/greetings Bob").await;
    assert!(
        model.last_user_message().starts_with("$greetings Bob"),
        "{}",
        model.last_user_message()
    );
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ session/load

#[mm_testkit::test]
async fn session_load_replays_the_stored_history() {
    common::platform::need_bash();
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.sessions.enabled = true;
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo hi"})).without_usage(),
        Answer::text("done").with_usage(20, 3),
    ]);
    let mut h = Harness::start(config.clone(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (before, _) = h.client.prompt(&id, "run it").await;
    let live_call = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    // Loading a live session is refused.
    let (_, r) = h.client.load_session(&id, &cwd).await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["sessionId"], json!(id));
    h.finish().await.unwrap();

    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (before, r) = h.client.load_session(&id, &cwd).await;
    // The reference answers `{}`; mm adds the modes and options (docs/acp.md).
    assert_eq!(r["result"], session_options("yolo"));
    let ups = updates(&before);
    let kinds = update_kinds(&ups);
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "agent_message_chunk",
            "usage_update",
            "available_commands_update"
        ]
    );
    assert_eq!(ups[0]["content"]["text"], "run it");
    let replayed = &ups[1];
    assert_eq!(replayed["toolCallId"], live_call["toolCallId"]);
    assert_eq!(replayed["title"], "bash: echo hi");
    assert_eq!(replayed["kind"], "execute");
    assert_eq!(replayed["status"], "completed");
    assert_eq!(replayed["rawInput"], json!({"command": "echo hi"}));
    let output = replayed["rawOutput"]["output"].as_str().unwrap();
    assert_eq!(
        replayed["content"],
        json!([{"type": "content", "content": {"type": "text", "text": output}}])
    );
    assert_eq!(ups[2]["content"]["text"], "done");
    assert!(h.log_lines().contains(&format!(
        "[acp] session {id} loaded from {}: 4 message(s) replayed",
        cwd.join(".mm/sessions").display()
    )));
    // The loaded session takes prompts; totals were restored.
    h.model.push(Answer::text("again").with_usage(1, 1));
    let (_, r) = h.client.prompt(&id, "more").await;
    assert_eq!(r["result"]["usage"]["totalTokens"], 25);
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn session_load_of_an_unknown_or_invalid_id_is_invalid_params() {
    let dir = tmp();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.sessions.enabled = true;
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    for bad in ["20990101-000000-deadbeef", "../../etc/passwd"] {
        let (before, r) = h.client.load_session(bad, &cwd).await;
        assert!(updates(&before).is_empty());
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["data"]["sessionId"], bad);
        assert!(r["error"]["data"]["error"].is_string(), "{r}");
    }
    h.finish().await.unwrap();
}

// ------------------------------------------------------------------ lifetime

#[mm_testkit::test]
async fn eof_cancels_the_running_turn_and_returns() {
    let dir = tmp();
    let model = ScriptedModel::new(vec![Answer::hang(&["working"])]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&canonical(dir.path())).await;
    h.client.send_prompt(&id, "go").await;
    h.client.until_update("agent_message_chunk").await;
    h.finish().await.unwrap();
    assert!(
        h.log_lines()
            .iter()
            .any(|l| l.starts_with("[acp] turn done: ")),
        "the turn ended: {:?}",
        h.log_lines()
    );
}

// ------------------------------------------------------------------ the binary

struct Child {
    child: tokio::process::Child,
    client: TestClient,
}

fn spawn_mm(cwd: &Path, home: &Path) -> Child {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm"))
        .arg("-acp")
        .current_dir(cwd)
        .only_home(home)
        .env("MM_MODEL_URL", "http://127.0.0.1:9/v1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    Child {
        client: TestClient::new(Box::new(stdin), Box::new(stdout)),
        child,
    }
}

async fn stderr_of(child: &mut tokio::process::Child) -> String {
    use tokio::io::AsyncReadExt;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut s).await.unwrap();
    }
    s
}

#[mm_testkit::test]
async fn the_binary_serves_initialize_and_session_new_and_exits_0_at_eof() {
    let dir = tmp();
    let home = tmp();
    let cwd = canonical(dir.path());
    let mut mm = spawn_mm(&cwd, home.path());
    let r = mm.client.initialize(false).await;
    assert_eq!(r["result"]["agentInfo"]["version"], mm_core::VERSION);
    let (id, _) = mm.client.new_session(&cwd).await;
    mm.client.close().await;
    assert!(mm.client.drain().await.is_empty());
    let status = tokio::time::timeout(TIMEOUT, mm.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let err = stderr_of(&mut mm.child).await;
    assert!(
        err.contains("[acp] client test-client 1.2.3 · protocol 1 · elicitation(form)=false\n"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "[acp] session {id} created in {}\n",
            cwd.display()
        )),
        "{err}"
    );
}

#[cfg(unix)]
#[mm_testkit::test]
async fn the_binary_exits_0_on_sigterm() {
    let dir = tmp();
    let home = tmp();
    let mut mm = spawn_mm(dir.path(), home.path());
    mm.client.initialize(false).await;
    let pid = mm.child.id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(TIMEOUT, mm.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[mm_testkit::test]
async fn the_binary_replays_a_loaded_session_before_its_response() {
    // Over real stdio the replay is written straight to the transport: it must still come
    // whole, schema-valid and before the `session/load` response.
    let dir = tmp();
    let home = tmp();
    let cwd = canonical(dir.path());
    std::fs::create_dir_all(cwd.join(".mm/sessions")).unwrap();
    // The user's choice: a project's own file does not switch sessions on unless trusted.
    std::fs::create_dir_all(home.path().join(".config/mm")).unwrap();
    std::fs::write(
        home.path().join(".config/mm/config.toml"),
        "[sessions]\nenabled = true\n",
    )
    .unwrap();
    let id = "20260101-000000-0badcafe";
    let mut messages = vec![json!({"role": "system", "content": "old"})];
    for i in 0..50 {
        messages.push(json!({"role": "user", "content": format!("q{i}")}));
        messages.push(json!({"role": "assistant", "content": "", "toolCalls": [
            {"id": format!("x{i}"), "ref": format!("call_{}", i + 1), "name": "bash",
             "arguments": format!("{{\"command\":\"echo {i}\"}}")}]}));
        messages.push(
            json!({"role": "tool", "toolCallId": format!("x{i}"), "content": format!("{i}\n")}),
        );
        messages.push(json!({"role": "assistant", "content": format!("a{i}")}));
    }
    let file = json!({"version": 1, "id": id, "cwd": cwd, "createdAt": "2026-01-01T00:00:00+00:00",
        "updatedAt": "2026-01-01T00:00:00+00:00", "model": "m",
        "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "plan": null,
        "messages": messages});
    std::fs::write(
        cwd.join(format!(".mm/sessions/{id}.json")),
        file.to_string(),
    )
    .unwrap();
    let mut mm = spawn_mm(&cwd, home.path());
    mm.client.initialize(false).await;
    let (before, r) = mm.client.load_session(id, &cwd).await;
    // The reference answers `{}`; mm adds the modes and options (docs/acp.md).
    assert_eq!(r["result"], session_options("yolo"));
    let ups = updates(&before);
    assert_eq!(ups.len(), 150 + 2, "{ups:#?}");
    assert_eq!(ups[0]["content"]["text"], "q0");
    assert_eq!(ups[1]["toolCallId"], "call_1");
    assert_eq!(ups[1]["status"], "completed");
    assert_eq!(ups[2]["content"]["text"], "a0");
    assert_eq!(ups[149]["content"]["text"], "a49");
    assert_eq!(ups[150]["sessionUpdate"], "usage_update");
    assert_eq!(ups[151]["sessionUpdate"], "available_commands_update");
    mm.client.close().await;
    let status = tokio::time::timeout(TIMEOUT, mm.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}
