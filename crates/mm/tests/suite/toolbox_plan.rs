//! The `plan` tool through a scripted model over ACP: the `plan` session updates (validated
//! against the official schema by the test client), gating, the session file, the
//! `session/load` replay and `/new`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_testkit as common;

use std::path::{Path, PathBuf};

use common::acp::*;
use common::{Answer, ScriptedModel};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn canonical(p: &Path) -> PathBuf {
    mm_core::paths::canonical(p).unwrap()
}

fn entry(content: &str, status: &str) -> Value {
    json!({"content": content, "priority": "medium", "status": status})
}

fn session_file(cwd: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(cwd.join(format!(".mm/sessions/{id}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[mm_testkit::test]
async fn each_change_sends_a_plan_update_and_the_plan_is_saved_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.sessions.enabled = true;
    let model = ScriptedModel::new(vec![
        Answer::call(
            "plan",
            json!({"action": "create", "title": "Ship it", "steps": ["Write", "Test", "Docs"]}),
        ),
        Answer::call(
            "plan",
            json!({"action": "update", "step": 1, "status": "completed"}),
        ),
        Answer::call(
            "plan",
            json!({"action": "update", "step": 3, "status": "skipped", "note": "later"}),
        ),
        Answer::call(
            "plan",
            json!({"action": "add", "step": "Release", "after": 2}),
        ),
        Answer::call(
            "plan",
            json!({"action": "update", "step": 2, "status": "in_progress"}),
        ),
        Answer::call("plan", json!({"action": "show"})),
        Answer::text("planned"),
    ]);
    let mut h = Harness::start(config.clone(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (before, r) = h.client.prompt(&id, "make a plan").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let ups = updates(&before);

    let calls: Vec<(&str, &str)> = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| (u["title"].as_str().unwrap(), u["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("plan create", "think"),
            ("plan update", "think"),
            ("plan update", "think"),
            ("plan add", "think"),
            ("plan update", "think"),
            ("plan show", "think"),
        ]
    );
    // One `plan` update per change (not for `show`), each the whole plan.
    let plans: Vec<Value> = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .map(|u| u["entries"].clone())
        .collect();
    let last = json!([
        entry("Write", "completed"),
        entry("Test", "in_progress"),
        entry("Release", "pending"),
        entry("Docs (skipped)", "completed"),
    ]);
    assert_eq!(plans.len(), 5);
    assert_eq!(
        plans[0],
        json!([
            entry("Write", "pending"),
            entry("Test", "pending"),
            entry("Docs", "pending")
        ])
    );
    assert_eq!(plans[4], last);
    // The model reads the checklist.
    let outputs: Vec<&str> = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .map(|u| u["rawOutput"]["output"].as_str().unwrap())
        .collect();
    assert_eq!(
        outputs.last().unwrap(),
        &"Plan: Ship it\n1. [x] Write\n2. [~] Test (in progress)\n3. [ ] Release\n\
          4. [-] Docs (skipped) — later\n"
    );

    // Saved in the session file.
    assert_eq!(
        session_file(&cwd, &id)["plan"],
        json!({"title": "Ship it", "steps": [
            {"content": "Write", "status": "completed"},
            {"content": "Test", "status": "in_progress"},
            {"content": "Release", "status": "pending"},
            {"content": "Docs", "status": "skipped", "note": "later"},
        ]})
    );
    h.finish().await.unwrap();

    // Replayed after the history, before the usage and the commands.
    let mut h = Harness::start(config, ScriptedModel::new(vec![]));
    h.client.initialize(false).await;
    let (before, r) = h.client.load_session(&id, &cwd).await;
    assert_eq!(r["result"], session_options("yolo"));
    let ups = updates(&before);
    let kinds = update_kinds(&ups);
    let n = kinds.len();
    assert_eq!(
        kinds[n - 3..],
        ["plan", "usage_update", "available_commands_update"]
    );
    assert_eq!(kinds.iter().filter(|k| **k == "plan").count(), 1);
    assert_eq!(ups[n - 3]["entries"], last);
    let replayed_calls: Vec<(&str, &str)> = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| (u["title"].as_str().unwrap(), u["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(replayed_calls, calls);

    // `/new` clears it, in memory, in the file and in the editor's plan view (an empty plan
    // after the command's one chunk); a second `/new`, with no plan left, sends none.
    let (msgs, r) = h.client.prompt(&id, "/new").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(session_file(&cwd, &id)["plan"], Value::Null);
    let ups = updates(&msgs);
    let kinds = update_kinds(&ups);
    assert_eq!(
        kinds,
        [
            "session_info_update",
            "agent_message_chunk",
            "plan",
            "usage_update"
        ]
    );
    assert_eq!(
        updates(&msgs)[2],
        json!({"sessionUpdate": "plan", "entries": []})
    );
    let (msgs, _) = h.client.prompt(&id, "/new").await;
    assert!(!updates(&msgs).iter().any(|u| u["sessionUpdate"] == "plan"));
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn changing_actions_are_gated_and_show_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    let mut config = test_config();
    config.yolo = false;
    let model = ScriptedModel::new(vec![
        Answer::call("plan", json!({"action": "show"})),
        Answer::call(
            "plan",
            json!({"action": "create", "title": "T", "steps": ["one"]}),
        ),
        Answer::text("ok"),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "plan").await;
    let (before, req) = h.client.until_request("session/request_permission").await;
    // `show` ran without asking, and there was nothing to show.
    let shown = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    assert_eq!(
        shown["rawOutput"]["output"],
        "No plan yet: create one with action \"create\"."
    );
    assert_eq!(req["params"]["toolCall"]["title"], "plan create");
    assert_eq!(req["params"]["toolCall"]["kind"], "think");
    h.client.select_option(&req, "reject").await;
    let (before, _) = h.client.until_response(pid).await;
    let ups = updates(&before);
    assert!(ups.iter().all(|u| u["sessionUpdate"] != "plan"), "{ups:#?}");
    let rejected = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed")
        .unwrap();
    assert_eq!(
        rejected["rawOutput"]["output"],
        "[plan rejected by the user]"
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
async fn a_mistake_is_explained_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = canonical(dir.path());
    let model = ScriptedModel::new(vec![
        Answer::call(
            "plan",
            json!({"action": "update", "step": 1, "status": "completed"}),
        ),
        Answer::call("plan", json!({"action": "finish"})),
        Answer::text("ok"),
    ]);
    let mut h = Harness::start(test_config(), model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let (before, r) = h.client.prompt(&id, "plan").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let failed: Vec<String> = updates(&before)
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed")
        .map(|u| u["rawOutput"]["output"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(failed.len(), 2);
    assert_eq!(
        failed[0],
        "[plan update: there is no plan yet: create one first]"
    );
    assert!(
        failed[1].starts_with("[bad arguments for plan: unknown variant `finish`"),
        "{}",
        failed[1]
    );
    h.finish().await.unwrap();
}

#[mm_testkit::test]
fn the_terminal_draws_the_checklist_once_per_change() {
    use mm_core::event::{
        Event, Plan, PlanStatus, PlanStep, ToolCallEnd, ToolCallStart, ToolKind, ToolStatus,
    };
    use mm_term::render::{Layout, Renderer};
    let mut r = Renderer::new(Layout::OneShot, false);
    let plan = Plan {
        title: "Ship it".into(),
        steps: vec![
            PlanStep {
                content: "Write".into(),
                status: PlanStatus::Completed,
                note: None,
            },
            PlanStep {
                content: "Test".into(),
                status: PlanStatus::Pending,
                note: None,
            },
        ],
    };
    let call = |id: &str, action: &str| {
        Event::ToolCallStarted(ToolCallStart {
            id: id.into(),
            name: "plan".into(),
            title: format!("plan {action}"),
            kind: ToolKind::Think,
            raw_input: json!({"action": action}),
            locations: vec![],
        })
    };
    let done = |id: &str| {
        Event::ToolCallFinished(ToolCallEnd {
            id: id.into(),
            status: ToolStatus::Completed,
            output: "Plan: Ship it\n1. [x] Write\n2. [ ] Test\n".into(),
            diffs: vec![],
            title: None,
        })
    };
    let mut text = String::new();
    for e in [
        call("call_1", "update"),
        Event::Plan(plan.clone()),
        done("call_1"),
        // `show` changes nothing: its result is the only place the checklist appears.
        call("call_2", "show"),
        done("call_2"),
    ] {
        for piece in r.event(&e) {
            text.push_str(&piece.text);
        }
    }
    assert_eq!(
        text,
        "💭 plan update\n📋 Ship it\n  ✓ Write\n  ○ Test\n💭 plan show\n  Plan: Ship it\n  1. [x] Write\n  2. [ ] Test\n"
    ); // The empty plan of `/new` draws nothing: the new-session line says enough.
    assert!(r.event(&Event::Plan(Plan::default())).is_empty());
}
