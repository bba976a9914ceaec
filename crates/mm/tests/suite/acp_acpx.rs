//! A third-party ACP client drives `mm -acp`: acpx 0.19.1 (npm, installed by `.ci/run`), run
//! directly on the installed Node. acpx advertises `fs` and `terminal` (mm uses neither) and
//! answers permission requests by its policy flag (mm runs with `--no-yolo` to ask them). Its `--format json` output is the whole
//! conversation, both directions: every message mm wrote is validated against the official
//! schema. Skipped, with a message saying why, when acpx is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::collections::HashMap;
use std::process::Stdio;

use common::acp::validate_message;
use common::mm_run::Sandbox;
use common::{FakeServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The test needs acpx: without it the test is skipped with the reason (under `CI=true` it fails).
fn need_acpx() {
    let there = std::process::Command::new("acpx")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !there {
        common::skip("acpx is not installed (npm install -g acpx@0.19.1)");
    }
}

/// The methods a client serves (mm sends them); every other method is the agent's.
fn served_by_client(method: &str) -> bool {
    method == "session/update"
        || method == "session/request_permission"
        || method == "elicitation/create"
        || method.starts_with("fs/")
        || method.starts_with("terminal/")
}

/// One `acpx --format json FLAGS … exec PROMPT` against `mm -acp` in the sandbox, its model at `url`.
/// Returns every message of the conversation in wire order.
async fn acpx_exec(
    sandbox: &Sandbox,
    url: &str,
    flags: &[&str],
    prompt: &str,
) -> (Option<i32>, Vec<Value>) {
    // yolo is on by default: --no-yolo makes mm ask before the command.
    let agent = format!("{} -acp --no-yolo", env!("CARGO_BIN_EXE_mm"));
    let mut cmd = sandbox.command(Some(url), &[]);
    // Sandbox::command runs mm; acpx runs it in turn, with the same sandboxed environment.
    let std_cmd = cmd.as_std_mut();
    let mut acpx = tokio::process::Command::new("acpx");
    for (k, v) in std_cmd.get_envs() {
        match v {
            Some(v) => acpx.env(k, v),
            None => acpx.env_remove(k),
        };
    }
    acpx.args(["--agent", &agent, "--format", "json"])
        .args(flags)
        .arg("--cwd")
        .arg(sandbox.dir())
        .args(["exec", prompt])
        .current_dir(sandbox.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(sandbox.limit, acpx.output())
        .await
        .expect("acpx did not finish in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let conversation = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    (out.status.code(), conversation)
}

/// The messages mm wrote, each validated against the schema. mm's own requests carry string
/// ids (UUIDs) and acpx's integers, so a response's id says whom it answers.
fn from_mm(conversation: &[Value]) -> Vec<Value> {
    let mut acpx_waiting: HashMap<i64, String> = HashMap::new();
    let mut mm_waiting: HashMap<String, String> = HashMap::new();
    let mut mine = Vec::new();
    for msg in conversation {
        let id = &msg["id"];
        match msg.get("method").and_then(Value::as_str) {
            Some(method) if served_by_client(method) => {
                if let Some(id) = id.as_str() {
                    mm_waiting.insert(id.to_string(), method.to_string());
                }
                validate_message(msg, &acpx_waiting);
                mine.push(msg.clone());
            }
            Some(method) => {
                if let Some(id) = id.as_i64() {
                    acpx_waiting.insert(id, method.to_string());
                }
            }
            None => {
                if let Some(id) = id.as_str() {
                    assert!(mm_waiting.remove(id).is_some(), "answer to nothing: {msg}");
                } else {
                    let id = id.as_i64().unwrap_or_else(|| panic!("no id: {msg}"));
                    validate_message(msg, &acpx_waiting);
                    acpx_waiting.remove(&id);
                    mine.push(msg.clone());
                }
            }
        }
    }
    assert!(
        acpx_waiting.is_empty(),
        "unanswered by mm: {acpx_waiting:?}"
    );
    assert!(mm_waiting.is_empty(), "unanswered by acpx: {mm_waiting:?}");
    mine
}

fn updates(msgs: &[Value]) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

fn agent_text(msgs: &[Value]) -> String {
    updates(msgs)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn stop_reason(msgs: &[Value]) -> Value {
    msgs.iter()
        .rev()
        .find_map(|m| m["result"].get("stopReason").cloned())
        .expect("no prompt response")
}

/// The tool message of the model's second request (what the model was told of the call).
fn tool_result(server: &FakeServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "two model requests");
    let messages = requests[1]["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_string()
}

#[mm_testkit::test]
async fn acpx_approves_a_command_and_mm_runs_it() {
    need_acpx();
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "echo made > made.txt"})),
        Reply::text("Wrote made.txt."),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (code, conversation) =
        acpx_exec(&sandbox, &server.url(), &["--approve-all"], "make a file").await;
    assert_eq!(code, Some(0), "{conversation:#?}");
    let mine = from_mm(&conversation);

    assert_eq!(mine[0]["result"]["agentInfo"]["name"], "bob");
    let asked: Vec<&Value> = mine
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert_eq!(asked.len(), 1, "one permission request: {mine:#?}");
    assert_eq!(asked[0]["params"]["toolCall"]["toolCallId"], "call_1");
    let last = updates(&mine)
        .into_iter()
        .rfind(|u| u["toolCallId"] == "call_1")
        .unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(
        std::fs::read_to_string(sandbox.path("made.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(agent_text(&mine), "Wrote made.txt.");
    assert_eq!(stop_reason(&mine), "end_turn");
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn acpx_denies_a_command_and_the_model_is_told() {
    need_acpx();
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "echo made > made.txt"})),
        Reply::text("Understood, I will not."),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (code, conversation) =
        acpx_exec(&sandbox, &server.url(), &["--deny-all"], "make a file").await;
    // acpx ends with its "permission denied" code (5) when it refused a request.
    assert_eq!(code, Some(5), "{conversation:#?}");
    let mine = from_mm(&conversation);

    assert!(!sandbox.path("made.txt").exists(), "the denied command ran");
    let last = updates(&mine)
        .into_iter()
        .rfind(|u| u["toolCallId"] == "call_1")
        .unwrap();
    assert_eq!(last["status"], "failed", "{last}");
    assert_eq!(tool_result(&server), "[command rejected by the user]");
    assert_eq!(agent_text(&mine), "Understood, I will not.");
    assert_eq!(stop_reason(&mine), "end_turn");
    assert_eq!(server.violations(), Vec::<String>::new());
}
