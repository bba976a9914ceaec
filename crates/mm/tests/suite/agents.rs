//! mm as an ACP client, end to end with the real binary (agents.md): `mm --ask`, the `ask_agent`
//! tool against a second mm on the fake model server, an agent written with the Python ACP SDK
//! whose permission requests and forms are relayed, the failures with their exact lines, and no
//! process left behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::acp_task::{assert_announced_first, initialize_with_subagents, on, subagent_updates};
use common::acp::updates;
use common::agents::*;
use common::mm_run::{self, Sandbox, finish};
use common::{FakeServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

// ------------------------------------------------------------------ mm asks mm

#[mm_testkit::test]
async fn mm_asks_mm_from_the_command_line() {
    let server = FakeServer::start(vec![Reply::text("Two and two make four.")]).await;
    let sandbox = Sandbox::new();
    let r = run(
        &sandbox,
        Some(&server.url()),
        &["--ask", "mm -acp", "what is 2+2?"],
    )
    .await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "Two and two make four.\n");
    // The asked mm's stderr comes through, prefixed; it saw our initialize.
    assert!(
        r.stderr
            .contains("[mm -acp] [acp] client mm v0.1.0 · protocol 1 · elicitation(form)=true\n"),
        "{}",
        r.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(user_texts(&requests[0]), ["what is 2+2?"]);
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(
        until_no_process_in(&sandbox.dir(), &[]).await,
        Vec::<i32>::new()
    );
}

#[mm_testkit::test]
async fn ask_agent_reaches_a_second_mm_and_keeps_it_for_the_follow_up() {
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "ask_agent",
            json!({"agent": "second", "question": "what is 2+2?"}),
        ),
        Reply::text("four"),
        Reply::tool_call(
            "ask_agent",
            json!({"agent": "second", "question": "and 3+3?"}),
        ),
        Reply::text("six"),
        Reply::text("The other agent says four, then six."),
    ])
    .await;
    let sandbox = Sandbox::new();
    configure(&sandbox, SECOND_MM);
    let r = run(
        &sandbox,
        Some(&server.url()),
        &["-p", "ask the other agent"],
    )
    .await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "The other agent says four, then six.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // The system prompt names the agents the tool reaches.
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Agents you can ask with ask_agent: second."),
        "{system}"
    );
    assert_eq!(last_tool_result(&requests[2]), "four");
    assert_eq!(last_tool_result(&requests[4]), "six");
    // The follow-up went to the same agent, in the same session: it remembers the first.
    assert_eq!(user_texts(&requests[3]), ["what is 2+2?", "and 3+3?"]);
    let started = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("[second] [acp] session ") && l.contains(" created in "))
        .count();
    assert_eq!(started, 1, "{}", r.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(
        until_no_process_in(&sandbox.dir(), &[]).await,
        Vec::<i32>::new()
    );
}

/// mm over ACP whose model asks the agent `second` (a second mm) to run `echo hi`: its model
/// runs it and answers `it printed hi`; ours then answers `ok`.
async fn asking_second_to_run_echo() -> (FakeServer, Sandbox, Acp) {
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "ask_agent",
            json!({"agent": "second", "question": "run echo"}),
        ),
        Reply::tool_call("bash", json!({"command": "echo hi"})),
        Reply::text("it printed hi"),
        Reply::text("ok"),
    ])
    .await;
    let sandbox = Sandbox::new();
    configure(&sandbox, SECOND_MM);
    let acp = spawn_acp(&sandbox, &server.url());
    (server, sandbox, acp)
}

#[mm_testkit::test]
async fn over_acp_the_asked_agents_tool_calls_are_progress_and_new_stops_it() {
    common::platform::need_bash();
    let (server, sandbox, mut acp) = asking_second_to_run_echo().await;
    acp.client.initialize(true).await;
    let (session, _) = acp.client.new_session(&sandbox.dir()).await;
    let (msgs, response) = acp.client.prompt(&session, "ask").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let ups = updates(&msgs);
    let call = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(call["title"], "ask_agent: second");
    // `other` is the protocol's default kind, which the SDK leaves out (docs/acp.md).
    assert_eq!(call.get("kind").unwrap_or(&json!("other")), "other");
    let id = call["toolCallId"].clone();
    let progress: Vec<&Value> = ups
        .iter()
        .filter(|u| {
            u["toolCallId"] == id
                && u["sessionUpdate"] == "tool_call_update"
                && u.get("status").is_none()
        })
        .collect();
    assert_eq!(
        progress,
        [
            &json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                 "content": [{"type": "content", "content": {"type": "text", "text": "bash: echo hi"}}]})
        ]
    );
    let done = ups
        .iter()
        .find(|u| u["toolCallId"] == id && u["status"] == "completed")
        .unwrap();
    assert_eq!(done["rawOutput"]["output"], "it printed hi");

    let outer = acp.child.id().unwrap() as i32;
    assert_eq!(
        processes_in(&sandbox.dir()).len(),
        2,
        "the outer mm and the asked one"
    );
    let (_, r) = acp.client.prompt(&session, "/new").await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(
        until_no_process_in(&sandbox.dir(), &[outer]).await,
        Vec::<i32>::new(),
        "/new stops the kept agent"
    );
    let run = acp.finish().await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn to_a_client_that_advertised_subagents_the_asked_agents_conversation_is_a_child_session() {
    common::platform::need_bash();
    let (server, sandbox, mut acp) = asking_second_to_run_echo().await;
    initialize_with_subagents(&mut acp.client).await;
    let (session, _) = acp.client.new_session(&sandbox.dir()).await;
    let (msgs, response) = acp.client.prompt(&session, "ask").await;
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let parent = on(&msgs, &session);
    let call = parent
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap()["toolCallId"]
        .as_str()
        .unwrap()
        .to_string();
    let child = format!("{session}/{call}");
    // Announced (cancellable alone), running then idle; its answer on its own id, before the
    // call's result on the parent; the agent's tool calls are still the call's progress.
    assert_eq!(
        subagent_updates(&parent),
        [
            &json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "title": "second: run echo", "capabilities": {"cancel": {}},
                    "state": {"state": "running"}}),
            &json!({"sessionUpdate": "subagent_update", "sessionId": child,
                    "state": {"state": "idle", "stopReason": "end_turn"}}),
        ]
    );
    assert_announced_first(&msgs, &child);
    let theirs = on(&msgs, &child);
    assert!(
        theirs
            .iter()
            .all(|u| u["sessionUpdate"] == "agent_message_chunk")
    );
    let text: String = theirs
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "it printed hi");
    assert!(parent.iter().any(|u| u["toolCallId"] == call.as_str()
        && u["content"][0]["content"]["text"] == "bash: echo hi"));
    assert!(
        !parent
            .iter()
            .any(|u| u["sessionUpdate"] == "agent_message_chunk"
                && u["content"]["text"] == "it printed hi")
    );
    let run = acp.finish().await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// An agent that waits for its cancel (`raw_agent.py wait_cancel`), asked by the model's first
/// call; mm started on it with `subagents` advertised or not. Returns the session, the prompt's
/// id, the agent's log of the methods it received, once its prompt is there, and the messages
/// read until then.
async fn asking_an_agent_that_waits(
    server: &FakeServer,
    sandbox: &Sandbox,
    subagents: bool,
) -> (Acp, String, i64, PathBuf, Vec<Value>) {
    let pids = sandbox.path("pids");
    let agent = agents_dir().join("raw_agent.py");
    configure(
        sandbox,
        &format!(
            "[agents.raw]\ncommand = \"python3\"\nargs = [{:?}, \"wait_cancel\", {:?}]\n",
            agent.display().to_string(),
            pids.display().to_string()
        ),
    );
    let mut acp = spawn_acp(sandbox, &server.url());
    if subagents {
        initialize_with_subagents(&mut acp.client).await;
    } else {
        acp.client.initialize(false).await;
    }
    let (session, _) = acp.client.new_session(&sandbox.dir()).await;
    let id = acp.client.send_prompt(&session, "go").await;
    let (mut read, update) = acp.client.until_update("tool_call_update").await;
    read.push(update);
    // The agent logs each method it receives: its prompt is there once it is asked.
    let log = PathBuf::from(format!("{}.log", pids.display()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("session/prompt")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent was never prompted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (acp, session, id, log, read)
}

#[mm_testkit::test]
async fn session_cancel_reaches_the_asked_agent() {
    need_python();
    let server = FakeServer::start(vec![
        Reply::tool_call("ask_agent", json!({"agent": "raw", "question": "wait"})),
        Reply::text("never used"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (mut acp, session, id, log, _) = asking_an_agent_that_waits(&server, &sandbox, false).await;
    acp.client
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (msgs, r) = acp.client.until_response(id).await;
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    let finished = updates(&msgs)
        .into_iter()
        .find(|u| u["status"] == "failed")
        .unwrap();
    assert_eq!(finished["rawOutput"]["output"], "[cancelled]");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "initialize\nsession/new\nsession/prompt\nsession/cancel\n"
    );
    acp.finish().await;
}

/// A client shown subagents may cancel the asked agent's conversation on its child id: the
/// agent gets its cancel, the parent's turn goes on, and the model reads that the user stopped
/// the question.
#[mm_testkit::test]
async fn a_cancel_on_the_asked_agents_child_id_stops_the_question_alone() {
    need_python();
    let server = FakeServer::start(vec![
        Reply::tool_call("ask_agent", json!({"agent": "raw", "question": "wait"})),
        Reply::text("going on without it"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (mut acp, session, id, log, mut msgs) =
        asking_an_agent_that_waits(&server, &sandbox, true).await;
    let is_announce = |m: &Value| m["params"]["update"]["sessionUpdate"] == "subagent_update";
    let announced = match msgs.iter().find(|m| is_announce(m)) {
        Some(m) => m.clone(),
        None => {
            let (before, announced) = acp.client.until_update("subagent_update").await;
            msgs.extend(before);
            msgs.push(announced.clone());
            announced
        }
    };
    let child = announced["params"]["update"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // Announced cancellable on its own id.
    assert_eq!(
        announced["params"]["update"]["capabilities"],
        json!({"cancel": {}})
    );
    acp.client
        .notify("session/cancel", json!({"sessionId": child}))
        .await;
    let (rest, r) = acp.client.until_response(id).await;
    msgs.extend(rest);
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let line = "[the user cancelled the question to raw]";
    let finished = updates(&msgs)
        .into_iter()
        .find(|u| u["status"] == "failed")
        .unwrap();
    assert_eq!(finished["rawOutput"]["output"], line);
    assert_eq!(
        subagent_updates(&on(&msgs, &session)).last().copied(),
        Some(
            &json!({"sessionUpdate": "subagent_update", "sessionId": child,
                     "state": {"state": "idle", "stopReason": "cancelled"}})
        )
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].to_string().contains(line),
        "the model reads it: {}",
        requests[1]
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "initialize\nsession/new\nsession/prompt\nsession/cancel\n"
    );
    acp.finish().await;
}

// ------------------------------------------------------------------ an agent on another stack

#[mm_testkit::test]
async fn a_python_sdk_agent_gets_reject_once_and_an_error_from_mm_ask() {
    need_python_sdk();
    let sandbox = Sandbox::new();
    let agent = format!("python3 {}", agents_dir().join("python_agent.py").display());
    let r = run(&sandbox, None, &["--ask", &agent, "go"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "permission=py-no; form=error: the asking agent cannot ask its user\n"
    );
    assert!(r.stderr.contains("  │ rm -rf build\n"), "{}", r.stderr);
}

#[mm_testkit::test]
async fn a_python_sdk_agents_questions_are_relayed_to_an_acp_client() {
    need_python_sdk();
    for forms in [true, false] {
        let server = FakeServer::start(vec![
            Reply::tool_call("ask_agent", json!({"agent": "py", "question": "go"})),
            Reply::text("ok"),
        ])
        .await;
        let sandbox = Sandbox::new();
        configure(
            &sandbox,
            &format!(
                "[agents.py]\ncommand = \"python3\"\nargs = [{:?}]\n",
                agents_dir().join("python_agent.py").display().to_string()
            ),
        );
        let mut acp = spawn_acp(&sandbox, &server.url());
        acp.client.initialize(forms).await;
        let (session, _) = acp.client.new_session(&sandbox.dir()).await;
        let id = acp.client.send_prompt(&session, "go").await;
        let (before, permission) = acp.client.until_request("session/request_permission").await;
        let call_id = updates(&before)
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call")
            .unwrap()["toolCallId"]
            .clone();
        assert_eq!(
            permission["params"],
            json!({"sessionId": session,
            "toolCall": {"toolCallId": call_id, "title": "py: rm -rf build"},
            "options": [
                {"optionId": "py-yes", "name": "Yes, once", "kind": "allow_once"},
                {"optionId": "py-no", "name": "No", "kind": "reject_once"},
            ]})
        );
        let selected = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        acp.client
            .respond(&permission["id"], selected("py-yes"))
            .await;
        if forms {
            let (_, form) = acp.client.until_request("elicitation/create").await;
            // The schema goes as the agent wrote it, properties in its order.
            let schema = json!({"type": "object", "properties": {
                "zeta": {"type": "string", "title": "Pick a colour", "enum": ["red", "blue"]},
                "alpha": {"type": "boolean", "title": "Sure?"}},
                "required": ["zeta"]});
            assert_eq!(
                form["params"],
                json!({"sessionId": session, "toolCallId": call_id, "mode": "form",
                    "message": "A few details", "requestedSchema": schema,
                    "_meta": {"mm.elicitationScope": {"sessionId": session, "toolCallId": call_id}}})
            );
            assert!(
                form["params"]
                    .to_string()
                    .contains(r#""properties":{"zeta""#)
            );
            acp.client
                .respond(
                    &form["id"],
                    json!({"action": "accept", "content": {"zeta": "blue", "alpha": true}}),
                )
                .await;
        } else {
            // Without form support, a form of choices goes question by question.
            let (_, colour) = acp.client.until_request("session/request_permission").await;
            assert_eq!(colour["params"]["toolCall"]["title"], "? Pick a colour");
            acp.client.respond(&colour["id"], selected("1")).await;
            let (_, sure) = acp.client.until_request("session/request_permission").await;
            assert_eq!(sure["params"]["toolCall"]["title"], "? Sure?");
            acp.client.respond(&sure["id"], selected("0")).await;
        }
        let (_, r) = acp.client.until_response(id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let requests = server.requests();
        assert_eq!(
            last_tool_result(&requests[1]),
            r#"permission=py-yes; form=accept {"alpha": true, "zeta": "blue"}"#
        );
        let run = acp.finish().await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert_eq!(
            until_no_process_in(&sandbox.dir(), &[]).await,
            Vec::<i32>::new()
        );
    }
}

// ------------------------------------------------------------------ failures

/// The pids a raw agent wrote (its own and its background `sleep`'s).
fn pids_of(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[mm_testkit::test]
async fn every_failure_is_one_line_and_leaves_no_process() {
    need_python();
    let agent = agents_dir().join("raw_agent.py");
    let cases = [
        ("start_crash", "it exited (exit code 3)"),
        ("crash", "it exited (exit code 7)"),
        (
            "error",
            "it answered session/prompt with an error: the model is down",
        ),
        (
            "stray",
            "it wrote a line that is not JSON-RPC: Traceback: something printed on stdout",
        ),
        ("silent", "it sent nothing for 1 s (model.requestTimeout)"),
    ];
    for (mode, explanation) in cases {
        let sandbox = Sandbox::new();
        let pids = sandbox.path("pids");
        let line = format!("python3 {} {mode} {}", agent.display(), pids.display());
        // Only the silent agent waits out the limit: the others' failures must win over it even
        // when Python takes more than a second to start on a loaded machine.
        let limit = match mode {
            "silent" => "model.requestTimeout=1",
            _ => "model.requestTimeout=60",
        };
        let r = run(&sandbox, None, &["-c", limit, "--ask", &line, "go"]).await;
        assert_eq!(r.code, Some(1), "{mode}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{mode}");
        assert!(
            r.stderr
                .ends_with(&format!("[agent {line} failed: {explanation}]\n")),
            "{mode}: {}",
            r.stderr
        );
        assert_eq!(pids_of(&pids).len(), 2, "{mode}: the agent started");
        assert_eq!(
            until_no_process_in(&sandbox.dir(), &[]).await,
            Vec::<i32>::new(),
            "{mode}: a process survived"
        );
    }
}

#[mm_testkit::test]
async fn mm_ask_exits_2_when_the_agent_stopped_at_a_limit() {
    need_python();
    let sandbox = Sandbox::new();
    let line = format!(
        "python3 {} limit {}",
        agents_dir().join("raw_agent.py").display(),
        sandbox.path("pids").display()
    );
    let r = run(&sandbox, None, &["--ask", &line, "go"]).await;
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_eq!(r.stdout, "partial\n");
    assert!(
        r.stderr.ends_with("[the agent stopped: max_tokens]\n"),
        "{}",
        r.stderr
    );
}

#[mm_testkit::test]
async fn an_agent_that_is_not_there_or_too_deep_fails_at_once() {
    let sandbox = Sandbox::new();
    let r = run(&sandbox, None, &["--ask", "no-such-agent-here --acp", "go"]).await;
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        "[agent no-such-agent-here --acp failed: command not found: no-such-agent-here]\n"
    );
    let mut c = command(&sandbox, None, &["--ask", "mm -acp", "go"]);
    c.env("MM_ASK_DEPTH", "2");
    let r = finish(c.spawn().unwrap()).await;
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr,
        "[agent mm -acp failed: asking nests at most 2 deep]\n"
    );
}

#[mm_testkit::test]
async fn the_depth_travels_to_the_asked_agent() {
    // We are at depth 1: the mm we ask is at depth 2 and cannot ask in turn.
    let server = FakeServer::start(vec![
        Reply::tool_call("ask_agent", json!({"agent": "second", "question": "x"})),
        Reply::text("I could not ask."),
    ])
    .await;
    let sandbox = Sandbox::new();
    configure(&sandbox, SECOND_MM);
    let mut c = command(
        &sandbox,
        Some(&server.url()),
        &["--ask", "mm -acp", "ask second"],
    );
    c.env("MM_ASK_DEPTH", "1");
    let r = finish(c.spawn().unwrap()).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "I could not ask.\n");
    assert_eq!(
        last_tool_result(&server.requests()[1]),
        "[agent second failed: asking nests at most 2 deep]"
    );
}

#[mm_testkit::test]
async fn ask_agent_reaches_configured_agents_only() {
    let server = FakeServer::start(vec![
        Reply::tool_call("ask_agent", json!({"agent": "mm -acp", "question": "x"})),
        Reply::text("ok"),
    ])
    .await;
    let sandbox = Sandbox::new();
    configure(&sandbox, SECOND_MM);
    let r = run(&sandbox, Some(&server.url()), &["-p", "go"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        last_tool_result(&server.requests()[1]),
        "[agent mm -acp failed: no agent of that name is configured (configured: second)]"
    );
}

#[mm_testkit::test]
async fn ctrl_c_on_mm_ask_cancels_the_asked_agent() {
    need_python();
    let sandbox = Sandbox::new();
    let pids = sandbox.path("pids");
    let log = PathBuf::from(format!("{}.log", pids.display()));
    let line = format!(
        "python3 {} wait_cancel {}",
        agents_dir().join("raw_agent.py").display(),
        pids.display()
    );
    let child = command(&sandbox, None, &["--ask", &line, "go"])
        .spawn()
        .unwrap();
    // The prompt has no event to await from here: a bounded poll on the agent's log.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("session/prompt")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent was never prompted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    mm_run::interrupt(&child);
    let r = finish(child).await;
    assert_eq!(r.code, Some(130), "{}", r.stderr);
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .ends_with("session/cancel\n")
    );
    assert_eq!(
        until_no_process_in(&sandbox.dir(), &[]).await,
        Vec::<i32>::new()
    );
}

// ------------------------------------------------------------------ ask_user without a user

#[mm_testkit::test]
async fn mm_p_without_a_terminal_answers_ask_user_at_once() {
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "ask_user",
            json!({"questions": [{"question": "Colour?", "type": "choice", "options": ["red", "blue"]}]}),
        ),
        Reply::text("ok"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let r = run(&sandbox, Some(&server.url()), &["-p", "go"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        last_tool_result(&server.requests()[1]),
        "[nobody can be asked: no terminal to ask]"
    );
}

#[mm_testkit::test]
async fn a_projects_own_agents_run_only_when_the_project_is_trusted() {
    let server = FakeServer::start(vec![Reply::text("from the project's agent")]).await;
    let sandbox = Sandbox::new();
    sandbox.write(
        ".mm/config.toml",
        "[agents.proj]\ncommand = \"mm\"\nargs = [\"-acp\"]\n",
    );
    // Untrusted: the name is not an agent, so it is run as a command line, which fails.
    let r = run(&sandbox, Some(&server.url()), &["--ask", "proj", "hi"]).await;
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr
            .ends_with("[agent proj failed: command not found: proj]\n"),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests().len(), 0);
    configure(
        &sandbox,
        &format!(
            "trustedProjects = [{:?}]\n",
            sandbox.dir().display().to_string()
        ),
    );
    let r = run(&sandbox, Some(&server.url()), &["--ask", "proj", "hi"]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "from the project's agent\n");
}
