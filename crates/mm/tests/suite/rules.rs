//! What a remembered answer covers, through the engine (docs/engine.md, "Permission gate"): a
//! read-only rule lets only the forms its table allows run, so a hostile model cannot ride
//! `always allow "git log …"` to write a file; and a call whose arguments do not fit its tool is
//! answered to the model before any hook runs or anyone is asked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use mm_core::event::PermissionDecision;
use pretty_assertions::assert_eq;
use serde_json::json;

fn git(cwd: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The user answers `[a]lways` to `approved`; the model then runs `hostile`, which the rule
/// must not cover: it is asked (and refused), and `written` (in the project) never appears.
async fn always_does_not_cover(approved: &str, hostile: &str, written: &str, setup: fn(&Path)) {
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({ "command": approved })),
        Answer::call("bash", json!({ "command": hostile })),
        Answer::text("done"),
    ]);
    let r = rig(model, |c| c.yolo = false);
    setup(r.cwd.path());
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::AllowMatching);
    fe.answer_permission(PermissionDecision::RejectOnce);
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "look around", &fe).await;
    assert!(
        !r.cwd.path().join(written).exists(),
        "{hostile} ran unasked and wrote {written}"
    );
    assert_eq!(
        fe.asked(),
        [format!("bash: {approved}"), format!("bash: {hostile}")]
    );
    assert_eq!(
        tool_outputs(&s).last().map(String::as_str),
        Some("[command rejected by the user]")
    );
}

#[mm_testkit::test]
async fn always_allow_git_log_does_not_let_git_log_write_a_file() {
    need_command("git", "apt install git");
    always_does_not_cover(
        "git log -1 --format=%H",
        "git log -1 --format=%H --output=stolen.txt",
        "stolen.txt",
        |cwd| {
            git(cwd, &["init", "-q"]);
            git(cwd, &["commit", "-q", "--allow-empty", "-m", "one"]);
        },
    )
    .await;
}

#[mm_testkit::test]
async fn always_allow_find_does_not_let_find_write_a_file() {
    always_does_not_cover(
        "find . -name x",
        "find . -fprintf found.txt %p",
        "found.txt",
        |_| {},
    )
    .await;
}

#[mm_testkit::test]
async fn always_allow_sed_n_does_not_let_sed_write_a_file() {
    always_does_not_cover(
        "sed -n 1p a.txt",
        "sed -n '1w copy.txt' a.txt",
        "copy.txt",
        |cwd| std::fs::write(cwd.join("a.txt"), "one\n").unwrap(),
    )
    .await;
}

#[mm_testkit::test]
async fn a_call_that_does_not_fit_its_tool_is_answered_before_hooks_and_the_question() {
    let hooks_dir = tempfile::tempdir().unwrap();
    let ran = hooks_dir.path().join("hook-ran");
    let hook_script = hooks_dir.path().join("hook.sh");
    script(
        &hook_script,
        &format!("#!/bin/sh\ntouch {}\n", ran.display()),
    );
    let model = ScriptedModel::new(vec![
        // `new_text` is missing.
        Answer::call("edit_file", json!({"path": "a.txt", "old_text": "one"})),
        Answer::text("noted"),
    ]);
    let command = hook_script.display().to_string();
    let r = rig(model.clone(), |c| {
        c.yolo = false;
        c.hooks.pre_tool_call = vec![hook(&command, None, Duration::from_secs(10), false)];
    });
    std::fs::write(r.cwd.path().join("a.txt"), "one\n").unwrap();
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::AllowOnce);
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "edit it", &fe).await;
    assert_eq!(fe.asked(), Vec::<String>::new());
    assert!(
        !ran.exists(),
        "the preToolCall hook ran for a call that does not fit"
    );
    assert_eq!(
        tool_outputs(&s),
        [
            "[bad arguments for edit_file: missing field `new_text`; arguments given: {\"path\":\"a.txt\",\"old_text\":\"one\"}]"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(r.cwd.path().join("a.txt")).unwrap(),
        "one\n"
    );
}

/// Over ACP: the prompt's messages until its response, and the response.
async fn acp_turn(answers: Vec<Answer>, respond: &[&str]) -> (Vec<serde_json::Value>, String) {
    use common::acp::{Harness, test_config};
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::write(cwd.join("a.txt"), "one\n").unwrap();
    let mut config = test_config();
    config.yolo = false;
    let model = ScriptedModel::new(answers.into_iter().map(Answer::without_usage).collect());
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "go").await;
    let mut seen = Vec::new();
    for option in respond {
        let (before, req) = h.client.until_request("session/request_permission").await;
        seen.extend(before);
        seen.push(req.clone());
        h.client.select_option(&req, option).await;
    }
    let (before, r) = h.client.until_response(pid).await;
    seen.extend(before);
    h.finish().await.unwrap();
    let text = std::fs::read_to_string(cwd.join("a.txt")).unwrap();
    assert_eq!(r["result"]["stopReason"], "end_turn");
    (seen, text)
}

/// The `rawOutput.output` of each finished call, in order.
fn outputs(messages: &[serde_json::Value]) -> Vec<String> {
    common::acp::updates(messages)
        .iter()
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .map(|u| u["rawOutput"]["output"].as_str().unwrap_or("").to_string())
        .collect()
}

fn permission_requests(messages: &[serde_json::Value]) -> usize {
    messages
        .iter()
        .filter(|m| m["method"] == "session/request_permission")
        .count()
}

#[mm_testkit::test]
async fn over_acp_a_call_that_does_not_fit_its_tool_sends_no_permission_request() {
    let (seen, text) = acp_turn(
        vec![
            Answer::call("edit_file", json!({"path": "a.txt", "old_text": "one"})),
            Answer::text("noted"),
        ],
        &[],
    )
    .await;
    assert_eq!(permission_requests(&seen), 0, "{seen:#?}");
    assert_eq!(
        outputs(&seen),
        [
            "[bad arguments for edit_file: missing field `new_text`; arguments given: {\"path\":\"a.txt\",\"old_text\":\"one\"}]"
        ]
    );
    assert_eq!(text, "one\n");
}

#[mm_testkit::test]
async fn over_acp_reject_always_keeps_its_meaning_the_tool_name() {
    // acp.md: `never` rejects every later call of that tool name in the session, whatever the
    // command (the terminal's `ne[v]er` holds for one command).
    let (seen, _) = acp_turn(
        vec![
            Answer::call("bash", json!({"command": "echo one"})),
            Answer::call("bash", json!({"command": "echo two"})),
            Answer::text("end"),
        ],
        &["never"],
    )
    .await;
    assert_eq!(permission_requests(&seen), 1, "{seen:#?}");
    assert_eq!(
        outputs(&seen),
        [
            "[command rejected by the user]",
            "[command rejected by the user]"
        ]
    );
}
