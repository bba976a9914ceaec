//! A `task` call over ACP (docs/acp-reference.md, "Subagents"), through the built binary and
//! the fake model server: a client that advertised `subagents` sees the child as a session of
//! its own, announced on the parent and idle at the end; one that did not sees the parent's
//! call and its result only, and the child's question on the parent's session for the call.
//! Every message mm writes is validated against the schema (the unstable one for
//! `subagent_update`) by the test client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::{Path, PathBuf};

use super::acp_more::{Mm, spawn_mm_with};
use common::acp::*;
use common::{FakeServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn spawn_mm(cwd: &Path, home: &Path, url: &str) -> Mm {
    spawn_mm_with(cwd, home, url, &["-c", "yolo=false"])
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap()
}

/// `initialize`, advertising `subagents`.
pub(crate) async fn initialize_with_subagents(client: &mut TestClient) {
    let caps = json!({"protocolVersion": 1, "clientCapabilities": {"subagents": {}}});
    let (_, r) = client.call("initialize", caps).await;
    assert_eq!(r["result"]["protocolVersion"], 1);
}

/// `session/load` of `id` in `cwd`: what was replayed before its answer.
async fn load(mm: &mut Mm, id: &str, cwd: &Path) -> Vec<Value> {
    let params = json!({"sessionId": id, "cwd": cwd, "mcpServers": []});
    let (replay, r) = mm.client.call("session/load", params).await;
    assert!(r.get("result").is_some(), "{r}");
    replay
}

/// The parent calls `task`; its child runs a command (which asks) and answers; the parent ends.
fn script() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "task",
            json!({"description": "find x", "prompt": "look for x"}),
        ),
        Reply::tool_call("bash", json!({"command": "echo hi"})),
        Reply::text("x is in a.txt"),
        Reply::text("done"),
    ]
}

/// Runs the prompt, allowing the one question; returns every message up to the answer and the
/// question.
async fn run(mm: &mut Mm, id: &str) -> (Vec<Value>, Value) {
    let prompt = mm.client.send_prompt(id, "where is x?").await;
    let (mut msgs, asked) = mm.client.until_request("session/request_permission").await;
    mm.client.select_option(&asked, "allow").await;
    let (rest, answer) = mm.client.until_response(prompt).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    msgs.push(asked.clone());
    msgs.extend(rest);
    (msgs, asked)
}

/// The updates sent on session `id`, as (kind, update).
pub(crate) fn on(msgs: &[Value], id: &str) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == id)
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// The `subagent_update`s among `updates`.
pub(crate) fn subagent_updates(updates: &[Value]) -> Vec<&Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "subagent_update")
        .collect()
}

/// The first `subagent_update` comes before anything on the `child`'s session.
pub(crate) fn assert_announced_first(msgs: &[Value], child: &str) {
    let at = |pred: &dyn Fn(&Value) -> bool| msgs.iter().position(pred).unwrap();
    let announced = at(&|m| m["params"]["update"]["sessionUpdate"] == "subagent_update");
    assert!(announced < at(&|m| m["params"]["sessionId"] == child));
}

/// The messages on session `id`.
fn msgs_on(msgs: &[Value], id: &str) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["params"]["sessionId"] == id)
        .cloned()
        .collect()
}

fn kinds(updates: &[Value]) -> Vec<&str> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect()
}

/// The `task` call's id, from its `tool_call`.
fn task_call(updates: &[Value]) -> String {
    updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["title"] == "task: find x")
        .map(|u| u["toolCallId"].as_str().unwrap().to_string())
        .expect("the task's tool_call")
}

/// The question of the child's command: on the parent's session, for the `task` call, titled
/// with the task and the command.
fn assert_asked(asked: &Value, parent: &str, call: &str) {
    assert_eq!(asked["params"]["sessionId"], parent);
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], call);
    assert_eq!(
        asked["params"]["toolCall"]["title"],
        "task: find x › bash: echo hi"
    );
}

/// The parent's history holds the task's result, not the child's turns; the child started
/// afresh.
fn assert_histories(server: &FakeServer) {
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let roles = |r: &Value| -> Vec<String> {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(roles(&requests[1]), ["system", "user"]);
    assert_eq!(requests[1]["messages"][1]["content"], "look for x");
    assert_eq!(roles(&requests[3]), ["system", "user", "assistant", "tool"]);
    assert_eq!(requests[3]["messages"][3]["content"], "x is in a.txt");
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn a_client_that_advertised_subagents_sees_the_child_as_a_session_of_its_own() {
    common::platform::need_bash();
    let server = FakeServer::start(script()).await;
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cwd = canonical(dir.path());
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    initialize_with_subagents(&mut mm.client).await;
    let (id, _) = mm.client.new_session(&cwd).await;
    let (msgs, asked) = run(&mut mm, &id).await;

    let parent = on(&msgs, &id);
    let call = task_call(&parent);
    let child = format!("{id}/{call}");
    assert_asked(&asked, &id, &call);
    // Announced on the parent before any of its traffic, running then idle, then the result.
    assert_announced_first(&msgs, &child);
    assert_eq!(
        subagent_updates(&parent),
        [
            &json!({"sessionUpdate": "subagent_update", "sessionId": child, "title": "find x",
                    "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
            &json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "state": {"state": "idle", "stopReason": "end_turn"}}),
        ]
    );
    let result = parent
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == call.as_str() && u["status"] == "completed")
        .unwrap();
    assert_eq!(result["content"][0]["content"]["text"], "x is in a.txt");
    // The child's own updates, on its id: its command and its answer.
    let theirs = on(&msgs, &child);
    assert_eq!(
        kinds(&theirs)[..3],
        ["tool_call", "tool_call_update", "tool_call_update"]
    );
    assert_eq!(theirs[0]["title"], "bash: echo hi");
    assert_eq!(theirs[2]["status"], "completed");
    assert_eq!(agent_text(&msgs_on(&msgs, &child)), "x is in a.txt");
    // Nothing of the child's text on the parent's session.
    assert!(
        !parent
            .iter()
            .any(|u| u["content"]["text"] == "x is in a.txt")
    );
    assert_histories(&server);
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
}

#[mm_testkit::test]
async fn a_client_that_did_not_sees_the_call_and_its_result_only_and_load_replays_them() {
    let server = FakeServer::start(script()).await;
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cwd = canonical(dir.path());
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    mm.client.initialize(false).await;
    let (id, _) = mm.client.new_session(&cwd).await;
    let (msgs, asked) = run(&mut mm, &id).await;

    let updates: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "session/update")
        .collect();
    assert!(
        updates
            .iter()
            .all(|m| m["params"]["sessionId"] == id.as_str()),
        "nothing on another session"
    );
    let parent = on(&msgs, &id);
    let call = task_call(&parent);
    assert_asked(&asked, &id, &call);
    // The parent's call and its result, then its answer: exactly as for any tool.
    let calls: Vec<&Value> = parent
        .iter()
        .filter(|u| u.get("toolCallId").is_some())
        .collect();
    assert!(calls.iter().all(|u| u["toolCallId"] == call.as_str()));
    assert_eq!(
        kinds(&calls.iter().map(|u| (*u).clone()).collect::<Vec<_>>()),
        ["tool_call", "tool_call_update", "tool_call_update"]
    );
    assert_eq!(calls[2]["content"][0]["content"]["text"], "x is in a.txt");
    assert_eq!(agent_text(&msgs), "done");
    assert_histories(&server);

    // Loaded in a new process: the task is replayed as its call and its result.
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    mm.client.initialize(false).await;
    let replay = load(&mut mm, &id, &cwd).await;
    let replayed = on(&replay, &id);
    let task: Vec<&Value> = replayed
        .iter()
        .filter(|u| u["toolCallId"] == call.as_str())
        .collect();
    assert_eq!(task[0]["title"], "task: find x");
    assert_eq!(task.last().unwrap()["status"], "completed");
    assert!(
        !replayed
            .iter()
            .any(|u| u["content"]["text"] == "look for x"),
        "nothing of the child's turns"
    );
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
}

/// The parent calls `task`, whose child answers at once; the parent ends.
fn quick_task() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "task",
            json!({"description": "find x", "prompt": "look for x"}),
        ),
        Reply::text("x is in a.txt"),
        Reply::text("done"),
    ]
}

/// Runs one turn with a task against `server` and returns each request's `id_slot` (the parent,
/// its child, the parent again).
async fn slots_sent(server: &FakeServer) -> Vec<Option<u64>> {
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cwd = canonical(dir.path());
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    mm.client.initialize(false).await;
    let (id, _) = mm.client.new_session(&cwd).await;
    let prompt = mm.client.send_prompt(&id, "where is x?").await;
    let (_, answer) = mm.client.until_response(prompt).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1]["messages"][1]["content"], "look for x");
    requests.iter().map(|r| r["id_slot"].as_u64()).collect()
}

/// llama.cpp's `/props` saying it has `slots` slots.
fn props(slots: u64) -> Reply {
    Reply::json(json!({"default_generation_settings": {"n_ctx": 32768},
                       "model_alias": common::fake_server::FAKE_MODEL, "total_slots": slots}))
}

#[mm_testkit::test]
async fn on_a_llama_cpp_server_with_two_slots_the_child_takes_another_slot_than_its_parent() {
    let server = FakeServer::start(quick_task()).await;
    server.route("GET /props", vec![props(2)]);
    let slots = slots_sent(&server).await;
    let parent = slots[0].expect("the parent's request names its slot");
    assert_eq!(slots[2], Some(parent), "the parent keeps its slot");
    let child = slots[1].expect("the child's request names its slot");
    assert_ne!(child, parent);
    assert!(child < 2);
}

#[mm_testkit::test]
async fn with_one_slot_or_on_another_server_no_request_names_a_slot() {
    // llama.cpp with one slot.
    let server = FakeServer::start(quick_task()).await;
    server.route("GET /props", vec![props(1)]);
    assert_eq!(slots_sent(&server).await, [None, None, None]);
    // vLLM (its listing says so), even were its `/props` to speak of slots.
    let server = FakeServer::start(quick_task()).await;
    server.route("GET /props", vec![props(2)]);
    server.route(
        "GET /v1/models",
        vec![Reply::json(json!({"object": "list", "data": [
            {"id": common::fake_server::FAKE_MODEL, "object": "model", "owned_by": "vllm",
             "max_model_len": 32768}]}))],
    );
    assert_eq!(slots_sent(&server).await, [None, None, None]);
}

#[mm_testkit::test]
async fn load_replays_the_child_to_a_client_that_advertised_subagents_and_resumes_without_it() {
    common::platform::need_bash();
    let mut replies = script();
    replies.push(Reply::text("again"));
    let server = FakeServer::start(replies).await;
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cwd = canonical(dir.path());
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    initialize_with_subagents(&mut mm.client).await;
    let (id, _) = mm.client.new_session(&cwd).await;
    let (msgs, _) = run(&mut mm, &id).await;
    let call = task_call(&on(&msgs, &id));
    let child = format!("{id}/{call}");
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));

    // Loaded in a new process: the child as it was live, before the task's call and result.
    let mut mm = spawn_mm(&cwd, home.path(), &server.url());
    initialize_with_subagents(&mut mm.client).await;
    let replay = load(&mut mm, &id, &cwd).await;
    let parent = on(&replay, &id);
    let at = |pred: &dyn Fn(&Value) -> bool| parent.iter().position(pred).unwrap();
    let started =
        at(&|u| u["sessionUpdate"] == "subagent_update" && u["state"]["state"] == "running");
    let idle = at(&|u| u["sessionUpdate"] == "subagent_update" && u["state"]["state"] == "idle");
    let result = at(&|u| u["toolCallId"] == call.as_str());
    assert!(started < idle && idle < result);
    assert_eq!(parent[started]["sessionId"], child.as_str());
    assert_eq!(parent[started]["title"], "find x");
    assert_eq!(parent[idle]["state"]["stopReason"], "end_turn");
    assert_eq!(parent[result]["status"], "completed");
    assert_announced_first(&replay, &child);
    let theirs = on(&replay, &child);
    assert_eq!(
        kinds(&theirs),
        ["user_message_chunk", "tool_call", "agent_message_chunk"]
    );
    assert_eq!(theirs[0]["content"]["text"], "look for x");
    assert_eq!(theirs[1]["title"], "bash: echo hi");
    assert_eq!(theirs[1]["status"], "completed");
    assert_eq!(theirs[2]["content"]["text"], "x is in a.txt");
    // Nothing of the child's on the parent's session.
    assert!(!parent.iter().any(|u| u["content"]["text"] == "look for x"));

    // The next turn's request holds the task's result, not the child's turns.
    let prompt = mm.client.send_prompt(&id, "and then?").await;
    let (_, answer) = mm.client.until_response(prompt).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let requests = server.requests();
    let last = requests.last().unwrap();
    let sent: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        sent[1..],
        ["where is x?", "", "x is in a.txt", "done", "and then?"]
    );
    assert_eq!(server.violations(), Vec::<String>::new());
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
}

/// A client that advertised `subagents`, with a session whose prompt `where is x?` was sent:
/// its child's model request is waiting on the fake (the second reply hangs). Returns mm, the
/// session, the prompt's id, the child's id and what came before.
async fn child_waiting(server: &FakeServer, cwd: &Path, home: &Path) -> (Mm, String, i64, String) {
    let mut mm = spawn_mm(cwd, home, &server.url());
    initialize_with_subagents(&mut mm.client).await;
    let (id, _) = mm.client.new_session(cwd).await;
    let prompt = mm.client.send_prompt(&id, "where is x?").await;
    let (_, announced) = mm.client.until_update("subagent_update").await;
    let child = announced["params"]["update"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    server.wait_for_requests(2).await;
    (mm, id, prompt, child)
}

/// The `subagent_update`s that say the child went idle, and why.
fn idle_reasons(msgs: &[Value], parent: &str) -> Vec<Value> {
    on(msgs, parent)
        .iter()
        .filter(|u| u["sessionUpdate"] == "subagent_update" && u["state"]["state"] == "idle")
        .map(|u| u["state"]["stopReason"].clone())
        .collect()
}

#[mm_testkit::test]
async fn a_cancel_of_the_parent_cancels_its_running_child() {
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "task",
            json!({"description": "find x", "prompt": "look for x"}),
        ),
        Reply::hang(),
    ])
    .await;
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cwd = canonical(dir.path());
    let (mut mm, id, prompt, _) = child_waiting(&server, &cwd, home.path()).await;
    mm.client
        .notify("session/cancel", json!({"sessionId": id}))
        .await;
    let (msgs, answer) = mm.client.until_response(prompt).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled");
    // The child's request was dropped, it went idle as cancelled, and the parent asked no more.
    server.wait_for_abandoned(1).await;
    assert_eq!(idle_reasons(&msgs, &id), [json!("cancelled")]);
    assert_eq!(server.requests().len(), 2);
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
}

#[mm_testkit::test]
async fn a_cancel_on_the_child_s_id_cancels_the_child_alone_and_the_parent_goes_on() {
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "task",
            json!({"description": "find x", "prompt": "look for x"}),
        ),
        Reply::hang(),
        Reply::text("done"),
    ])
    .await;
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let cwd = canonical(dir.path());
    let (mut mm, id, prompt, child) = child_waiting(&server, &cwd, home.path()).await;
    assert!(child.starts_with(&format!("{id}/")), "{child}");
    mm.client
        .notify("session/cancel", json!({"sessionId": child}))
        .await;
    let (msgs, answer) = mm.client.until_response(prompt).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    server.wait_for_abandoned(1).await;
    assert_eq!(idle_reasons(&msgs, &id), [json!("cancelled")]);
    // The task's result says so, and the parent's next request carries it.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2]["messages"][3]["content"], "[task cancelled]");
    assert_eq!(agent_text(&msgs), "done");
    mm.client.close().await;
    assert_eq!(mm.child.wait().await.unwrap().code(), Some(0));
}
