//! Third-party clients drive `mm -acp`: the official Python SDK (tests/acp_clients/). Skipped,
//! with a message saying why, when the SDK is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn python_sdk_available() -> bool {
    Command::new("python3")
        .args(["-c", "import acp.stdio"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn the_python_sdk_parses_everything_mm_sends() {
    if !python_sdk_available() {
        eprintln!(
            "SKIPPED: the ACP Python SDK is not installed (pip install agent-client-protocol==0.12.1)"
        );
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = cwd.path().canonicalize().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/python_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_mm"))
        .arg(&cwd)
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("MM_MODEL_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agentName"], "bob");
    assert_eq!(v["protocolVersion"], 1);
    assert_eq!(v["stopReason"], "end_turn");
    assert_eq!(v["setMode"], -32601);
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

/// The demo model server (`mm-fake-server`): its URL, and the process to kill afterwards.
fn demo_server() -> (String, std::process::Child) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mm-fake-server"))
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (line.trim().to_string(), child)
}

#[test]
fn the_python_sdk_completes_a_turn_with_a_tool_call_and_a_permission_request() {
    if !python_sdk_available() {
        eprintln!(
            "SKIPPED: the ACP Python SDK is not installed (pip install agent-client-protocol==0.12.1)"
        );
        return;
    }
    let (url, mut server) = demo_server();
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = cwd.path().canonicalize().unwrap();
    std::fs::write(cwd.join("hello.txt"), "hi").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/python_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_mm"))
        .arg(&cwd)
        .arg("tool")
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("MM_MODEL_URL", &url)
        .output()
        .unwrap();
    let _ = server.kill();
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
