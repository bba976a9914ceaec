//! The `task` tool's child session (docs/engine.md, "Subagents"), through a scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use super::common;
use super::turns::Echo;

use std::sync::Arc;

use crate::StopReason;
use common::{Answer, Recorder, ScriptedModel, contents, rig};
use mm_core::event::*;
use mm_core::history::Role;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn task(prompt: &str) -> Answer {
    Answer::call("task", json!({"description": "find x", "prompt": prompt}))
}

/// The child's events, unwrapped, and the steps around them.
fn child_steps(events: &[Event]) -> Vec<ChildStep> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Child(c) => Some(c.step.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_task_runs_a_fresh_child_whose_answer_alone_joins_the_parent() {
    let model = ScriptedModel::new(vec![
        task("look for x").with_usage(100, 10),
        Answer::call("echo", json!({"text": "hi"})).with_usage(50, 5),
        Answer::call(
            "plan",
            json!({"action": "create", "title": "child", "steps": ["a"]}),
        )
        .with_usage(60, 6),
        Answer::text("x is in a.txt").with_usage(70, 7),
        Answer::text("done").with_usage(120, 12),
    ]);
    let r = rig(model.clone(), |c| c.yolo = false);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    s.tools = s.tools.with(vec![Arc::new(Echo)]);
    fe.answer_permission(PermissionDecision::AllowAlways);
    fe.answer_permission(PermissionDecision::AllowOnce);
    let out = r.prompt(&mut s, "where is x?", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    model.assert_invariants();

    // The parent's history: its call and the child's answer, nothing of the child's turns.
    let roles: Vec<Role> = s.history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(s.history[3].content, "x is in a.txt");
    assert_eq!(s.history[4].content, "done");

    // The child starts afresh: its system prompt and the task, the parent's tools but `task`.
    let requests = model.requests();
    let child = &requests[1];
    assert_eq!(contents(child)[1..], ["look for x".to_string()]);
    assert_eq!(child.messages[0]["role"], "system");
    let names = |r: &mm_model::ChatRequest| -> Vec<String> {
        r.tools
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(&requests[0]).contains(&"task".to_string()));
    assert!(!names(child).contains(&"task".to_string()));
    assert!(
        names(child).contains(&"echo".to_string()),
        "{:?}",
        names(child)
    );
    // The parent's next request holds the task's result, not the child's turns.
    assert_eq!(requests[4].messages.len(), 4);

    // The child's call asked as the parent's would, on the task's call, titled with the task.
    let task_ref = match &fe.events().iter().find_map(|e| match e {
        Event::ToolCallStarted(c) if c.name == "task" => Some(c.id.clone()),
        _ => None,
    }) {
        Some(id) => id.clone(),
        None => panic!("no task call"),
    };
    assert_eq!(
        fe.asked(),
        ["task: find x › echo: hi", "task: find x › plan create"]
    );
    // "Always" given in the child holds for the parent afterwards.
    assert_eq!(s.view().rules().len(), 1);

    // Announced before its traffic, its events wrapped, its end counted.
    let events = fe.events();
    let steps = child_steps(&events);
    assert_eq!(
        steps[0],
        ChildStep::Started {
            description: "find x".into(),
            cancellable: true,
        }
    );
    assert_eq!(
        steps.last(),
        Some(&ChildStep::Ended {
            steps: 3,
            calls: 2,
            end: ChildEnd::Answered
        })
    );
    assert!(steps.contains(&ChildStep::Event(Box::new(Event::Text(
        "x is in a.txt".into()
    )))));
    assert!(events.iter().all(|e| match e {
        Event::Child(c) => c.call == task_ref && c.session == format!("{}/{task_ref}", s.id),
        _ => true,
    }));
    // The parent's own stream has no text of the child's, and its plan is the parent's.
    assert!(!events.contains(&Event::Text("x is in a.txt".into())));
    assert!(!events.iter().any(|e| matches!(e, Event::Plan(_))));
    assert_eq!(s.view().plan(), None);
    // The child's tokens count in the session's totals; the parent's context is its own.
    assert_eq!(s.usage.input_tokens, 100 + 50 + 60 + 70 + 120);
    assert_eq!(s.last_measure, Some(132));
    let usages: Vec<&ContextUsage> = events
        .iter()
        .filter_map(|e| match e {
            Event::ContextUsage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(
        usages[0].used, 110,
        "the parent's first call, not the child's"
    );
    assert_eq!(usages[1].used, 132);
    // Its command counts in the turn's recap.
    assert_eq!(out.recap.unwrap().get(Tally::Command), 1);
}

#[tokio::test]
async fn a_child_stops_at_its_own_step_limit_and_a_cancel_of_it_alone_ends_the_task() {
    let model = ScriptedModel::new(vec![
        task("loop"),
        Answer::call("echo", json!({"text": "1"})),
        Answer::call("echo", json!({"text": "2"})),
        Answer::text("parent goes on"),
    ]);
    let r = rig(model.clone(), |c| c.tools.task_max_steps = 2);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    s.tools = s.tools.with(vec![Arc::new(Echo)]);
    r.prompt(&mut s, "go", &fe).await;
    assert_eq!(
        s.history[3].content,
        "[task stopped: 2 model calls, the tools.task.maxSteps limit]"
    );
    assert_eq!(s.history[4].content, "parent goes on");

    // A client cancels the child by its id: the task ends, the parent's turn goes on.
    let model = ScriptedModel::new(vec![
        task("wait"),
        Answer::hang(&["looking"]),
        Answer::text("parent goes on"),
    ]);
    let r = Arc::new(rig(model.clone(), |_| {}));
    let fe = Arc::new(Recorder::new());
    let mut s = r.session(&fe).await;
    let id = format!("{}/call_1", s.id);
    let (r2, fe2) = (Arc::clone(&r), Arc::clone(&fe));
    let turn = tokio::spawn(async move {
        let never = CancellationToken::new();
        let out = r2.engine.prompt(&mut s, "go", &[], &*fe2, &never).await;
        (out, s)
    });
    while model.calls() < 2 || !r.engine.cancel_child(&id) {
        tokio::task::yield_now().await;
    }
    let (out, s) = turn.await.unwrap();
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(s.history[3].content, "looking\n[task cancelled]");
    assert_eq!(s.history[4].content, "parent goes on");
    assert!(!r.engine.cancel_child(&id), "it is no longer running");
}

#[tokio::test]
async fn the_parent_s_file_keeps_the_child_beside_its_history_which_a_resume_never_sends() {
    let model = ScriptedModel::new(vec![
        task("look for x"),
        Answer::text("x is in a.txt"),
        Answer::text("done"),
        Answer::text("again"),
    ]);
    let r = rig(model.clone(), |c| c.sessions.enabled = true);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let out = r.prompt(&mut s, "where is x?", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));

    // The file: the parent's messages as its history holds them, the child beside them.
    let file = mm_core::session::load(&r.sessions_dir(), &s.id).unwrap();
    assert_eq!(file.messages, s.history);
    let call = s.history[2].tool_calls[0].ref_.clone();
    assert_eq!(file.children.len(), 1);
    let child = &file.children[0];
    assert_eq!(
        (
            child.id.as_str(),
            child.call.as_str(),
            child.description.as_str()
        ),
        (format!("{}/{call}", s.id).as_str(), call.as_str(), "find x")
    );
    assert_eq!(child.end, ChildEnd::Answered);
    let roles: Vec<Role> = child.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    assert_eq!(child.messages[0].content, "look for x");
    assert_eq!(child.messages[1].content, "x is in a.txt");

    // Resumed: the next request holds the task's result and nothing of the child's turns; the
    // child stays in the file.
    let id = s.id.clone();
    drop(s);
    let mut s = r.engine.load_session(r.cwd(), &id, &fe).await.unwrap();
    assert_eq!(s.view().children(), file.children.as_slice());
    let out = r.prompt(&mut s, "and then?", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    let requests = model.requests();
    let sent = contents(requests.last().unwrap());
    assert_eq!(
        sent[1..],
        ["where is x?", "", "x is in a.txt", "done", "and then?"]
    );
    let again = mm_core::session::load(&r.sessions_dir(), &id).unwrap();
    assert_eq!(again.children, file.children);
}
