//! Third-party clients drive `mm -acp`: the official Python SDK (tests/acp_clients/). Skipped
//! with the reason when the SDK is not installed (under `CI=true` they fail).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;

use mm_testkit::demo::DemoServer;
use mm_testkit::platform::OnlyHome;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[mm_testkit::test]
fn the_python_sdk_parses_everything_mm_sends() {
    mm_testkit::agents::need_python_sdk();
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(cwd.path()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/python_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_mm"))
        .arg(&cwd)
        .only_home(home.path())
        .env("MM_MODEL_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agentName"], "bob");
    assert_eq!(v["protocolVersion"], 1);
    assert_eq!(v["stopReason"], "end_turn");
    // An unknown mode (modes are beyond the reference: tests/acp_more.rs).
    assert_eq!(v["setMode"], -32602);
    let updates = v["updates"].as_array().unwrap();
    // The Python SDK hands notifications to its handler as separate tasks, so their order in
    // `updates` is not the wire order (which tests/acp.rs checks): look the update up.
    let commands = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .expect("no available_commands_update");
    assert_eq!(
        *commands,
        json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "new", "description": "Clear the history and start a new session"},
            {"name": "compact", "description": "Compress the history now, keeping the last turns"},
            {"name": "undo", "description": "Restore the files the last turn changed (again: the turn before)"},
        ]})
    );
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "agent_message_chunk"
                && u["content"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("🗜️ nothing to compact")),
        "{updates:#?}"
    );
}

/// The demo model server (`mm-fake-server`'s answers, in this process): its URL, and the server
/// to stop afterwards.
fn demo_server() -> (String, DemoServer) {
    demo_server_with(&[])
}

/// The demo server with more models (`mm-fake-server --also-model M…`).
fn demo_server_with(also_models: &[&str]) -> (String, DemoServer) {
    let server = DemoServer::start(also_models);
    (server.url(), server)
}

#[mm_testkit::test]
fn the_python_sdk_completes_a_turn_with_a_tool_call_and_a_permission_request() {
    mm_testkit::agents::need_python_sdk();
    let (url, server) = demo_server();
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(cwd.path()).unwrap();
    std::fs::write(cwd.join("hello.txt"), "hi").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/python_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_mm"))
        .arg(&cwd)
        .arg("tool")
        .only_home(home.path())
        .env("MM_MODEL_URL", &url)
        .output()
        .unwrap();
    drop(server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stopReason"], "end_turn");
    let permissions = v["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{v:#}");
    assert_eq!(permissions[0]["title"], "bash: ls");
    let ids: Vec<&str> = permissions[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["allow", "allow_always", "reject", "never"]);
    let updates = v["updates"].as_array().unwrap();
    let finished = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("no completed tool call in {updates:#?}"));
    assert!(
        finished["rawOutput"]["output"]
            .as_str()
            .unwrap()
            .contains("hello.txt"),
        "{finished:#}"
    );
}

/// An editor user's day beyond the reference (docs/acp.md), with the Python SDK standing in for
/// the editor: a model switch, the three modes, a build watched as it goes, the session found
/// in the list, closed, resumed and deleted.
#[mm_testkit::test]
fn the_python_sdk_switches_models_and_modes_watches_a_build_and_reopens_the_session() {
    mm_testkit::agents::need_python_sdk();
    let (url, server) = demo_server_with(&["demo-large"]);
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(cwd.path()).unwrap();
    std::fs::write(cwd.join("hello.txt"), "hi").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/python_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_mm"))
        .arg(&cwd)
        .arg("beyond")
        .only_home(home.path())
        .env("MM_MODEL_URL", &url)
        .output()
        .unwrap();
    drop(server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["sessionCapabilities"],
        json!({"close": {}, "list": {}, "resume": {}, "delete": {}})
    );
    assert_eq!(v["modes"]["currentModeId"], "yolo");
    let ids: Vec<&str> = v["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ask", "yolo", "read-only"]);
    let models: Vec<&str> = v["options"][1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["fake-model", "demo-large"], "{v:#}");
    assert!(
        v["hello"]
            .as_str()
            .unwrap()
            .starts_with("Hello from fake-model!")
    );
    assert_eq!(v["title"], json!(["hello there"]));
    assert_eq!(v["modelAfterSwitch"], "demo-large");
    assert!(
        v["helloAgain"]
            .as_str()
            .unwrap()
            .starts_with("Hello from demo-large!"),
        "the next turn asks the new model: {v:#}"
    );
    // Ask: one permission request, allowed, the call ran.
    assert_eq!(v["askMode"]["permissions"], 1);
    assert_eq!(v["askMode"]["ends"][0]["status"], "completed");
    // Read-only: no question; the command runs inside the read-only fence where the kernel
    // has one, and is refused without one.
    assert_eq!(v["readOnly"]["permissions"], 1);
    if mm_tools::sandbox::landlock_abi() > 0 {
        assert_eq!(v["readOnly"]["ends"][0]["status"], "completed", "{v:#}");
    } else {
        assert_eq!(v["readOnly"]["ends"][0]["status"], "failed");
        assert_eq!(
            v["readOnly"]["ends"][0]["rawOutput"]["output"],
            "[bash refused: read-only mode]"
        );
    }
    assert_eq!(v["modeUpdates"], json!(["ask", "read-only"]));
    // The build: its output as it goes, then the whole of it.
    let progress = v["progress"].as_array().unwrap();
    assert!(progress.len() >= 2, "{v:#}");
    assert!(
        progress[0]
            .as_str()
            .unwrap()
            .starts_with("compiling unit 1/8")
    );
    let build = v["build"][0]["rawOutput"]["output"].as_str().unwrap();
    assert!(build.starts_with("compiling unit 1/8\n"), "{build}");
    assert!(build.ends_with("compiling unit 8/8\nbuilt\n"), "{build}");
    // Found in the list, closed, resumed (its mode kept), deleted.
    let listed = v["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["title"], "hello there");
    assert_eq!(listed[0]["cwd"], json!(cwd));
    assert_eq!(v["promptAfterClose"], -32602);
    assert_eq!(v["resumedMode"], "yolo");
    assert!(
        v["afterResume"]
            .as_str()
            .unwrap()
            .starts_with("Hello from fake-model!"),
        "a reopened session starts on the default model: {v:#}"
    );
    assert_eq!(v["deleted"], json!({}));
    assert_eq!(v["listedAfterDelete"], json!([]));
}
