//! The letter of docs/acp-reference.md where the first version was off (the issue "The letter
//! of acp.md"): each test here failed before its fix. In-process with the scripted model, every
//! message validated against the official schema by the test client; one test through the
//! binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::Path;

use common::acp::*;
use common::platform::OnlyHome;
use common::{Answer, ScriptedModel};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn canonical(p: &Path) -> std::path::PathBuf {
    mm_core::paths::canonical(p).unwrap()
}

/// The `update`s among `msgs` that belong to session `id`.
fn updates_of(msgs: &[Value], id: &str) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == id)
        .map(|m| m["params"]["update"].clone())
        .collect()
}

fn turn_done_lines(h: &Harness) -> usize {
    h.log_lines()
        .iter()
        .filter(|l| l.starts_with("[acp] turn done: "))
        .count()
}

/// Session A's turn hangs; session B sends `text`, which waits behind it, and is cancelled.
/// Returns what came before B's answer and the answer.
async fn cancelled_while_waiting(h: &mut Harness, cwd: &Path, text: &str) -> (Vec<Value>, Value) {
    h.client.initialize(false).await;
    let (a, _) = h.client.new_session(cwd).await;
    let (b, _) = h.client.new_session(cwd).await;
    let pa = h.client.send_prompt(&a, "A").await;
    h.client.until_update("agent_message_chunk").await;
    let pb = h.client.send_prompt(&b, text).await;
    h.client
        .notify("session/cancel", json!({"sessionId": b}))
        .await;
    let (before, rb) = h.client.until_response(pb).await;
    h.client
        .notify("session/cancel", json!({"sessionId": a}))
        .await;
    let (_, ra) = h.client.until_response(pa).await;
    assert_eq!(ra["result"]["stopReason"], "cancelled");
    assert_eq!(rb["result"]["stopReason"], "cancelled");
    let b_updates = updates_of(&before, &b);
    assert_eq!(
        b_updates.last().map(|u| u["sessionUpdate"].clone()),
        Some(json!("usage_update")),
        "a cancelled answer follows its usage_update: {b_updates:#?}"
    );
    (before, rb)
}

#[mm_testkit::test]
async fn a_waiting_compact_that_is_cancelled_gets_its_usage_update_and_no_turn_log() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![Answer::hang(&["busy"])]);
    let mut h = Harness::start(test_config(), model.clone());
    cancelled_while_waiting(&mut h, &cwd, "/compact").await;
    h.finish().await.unwrap();
    // Only A's turn is an engine turn; the /compact never ran.
    assert_eq!(turn_done_lines(&h), 1, "{:#?}", h.log_lines());
}

#[mm_testkit::test]
async fn a_waiting_prompt_that_is_cancelled_gets_its_usage_update_and_its_turn_log() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![Answer::hang(&["busy"])]);
    let mut h = Harness::start(test_config(), model.clone());
    cancelled_while_waiting(&mut h, &cwd, "B").await;
    h.finish().await.unwrap();
    assert_eq!(turn_done_lines(&h), 2, "{:#?}", h.log_lines());
    assert_eq!(
        model.calls(),
        1,
        "the waiting prompt never reached the model"
    );
}

#[mm_testkit::test]
async fn the_initialize_log_line_says_what_the_client_sent_even_for_a_newer_version() {
    let model = ScriptedModel::new(vec![]);
    let mut h = Harness::start(test_config(), model);
    let (_, r) = h
        .client
        .call(
            "initialize",
            json!({"protocolVersion": 2, "clientInfo": {"name": "zed", "version": "0.1"},
                   "clientCapabilities": {"elicitation": {"form": {}}}}),
        )
        .await;
    assert_eq!(r["result"]["protocolVersion"], 1);
    h.finish().await.unwrap();
    assert_eq!(
        h.log_lines()[0],
        "[acp] client zed 0.1 · protocol 2 · elicitation(form)=true"
    );
}

#[mm_testkit::test]
async fn calls_that_did_not_run_do_not_count_in_the_turn_log() {
    common::platform::need_bash();
    let dir = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    std::fs::write(cwd.join("there.txt"), "hi").unwrap();
    let model = ScriptedModel::new(vec![
        // Bad arguments and a missing file: the tools did not run.
        Answer::call("read_file", json!({"path": "missing.txt"})),
        Answer::call("read_file", json!({})),
        Answer::call("bash", json!({})),
        Answer::call(
            "edit_file",
            json!({"path": "missing.txt", "old_text": "a", "new_text": "b"}),
        ),
        // These ran.
        Answer::call("read_file", json!({"path": "there.txt"})),
        Answer::call("bash", json!({"command": "exit 3"})),
        Answer::text("done"),
    ]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (_, r) = h.client.prompt(&id, "go").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    h.finish().await.unwrap();
    let done: Vec<String> = h
        .log_lines()
        .into_iter()
        .filter(|l| l.starts_with("[acp] turn done"))
        .collect();
    assert_eq!(
        done,
        vec!["[acp] turn done: 1 command(s) · 1 file op(s) · 0 skill(s)".to_string()]
    );
}

#[mm_testkit::test]
async fn the_acp_banner_counts_the_folders_skills_and_says_which_a_command_shadows() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    for (name, desc) in [("greetings", "Greet somebody."), ("compact", "Squeeze.")] {
        let d = cwd.join(".mm/skills").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {desc}\n---\nDo it.\n"),
        )
        .unwrap();
    }
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm"))
        .arg("-acp")
        .current_dir(&cwd)
        .only_home(home.path())
        .env("MM_MODEL_URL", "http://127.0.0.1:9/v1")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(" · 2 skills · "), "{stderr}");
    assert!(
        stderr.contains(
            "skill \"compact\" is not advertised: the /compact command shadows it; use $compact"
        ),
        "{stderr}"
    );
}
