//! Hooks end to end through the engine (hooks.md): real scripts in tempdirs, configured through
//! `Config.hooks`, around real tools.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::Path;
use std::time::Duration;

use common::*;
use mm_core::event::{Event, PermissionDecision, ToolCallEnd, ToolStatus};
use mm_engine::{Command, StopReason};
use mm_model::ModelError;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The JSON a hook that ran `cat > file` received.
fn received(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[mm_testkit::test]
async fn a_pre_tool_call_guard_denies_rm_rf_before_any_permission_is_asked() {
    common::platform::need_bash();
    let hooks_dir = tempfile::tempdir().unwrap();
    let guard = hooks_dir.path().join("guard.sh");
    let seen = hooks_dir.path().join("seen.json");
    script(
        &guard,
        &format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s' \"$input\" > {}\ncase \"$input\" in\n  *'rm -rf'*) echo 'destructive command refused' >&2; exit 2;;\nesac\nexit 0\n",
            seen.display()
        ),
    );
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "rm -rf victim"})),
        Answer::call("bash", json!({"command": "echo safe"})),
        Answer::text("ok"),
    ]);
    let guard_cmd = guard.display().to_string();
    let r = rig(model.clone(), |c| {
        c.yolo = false;
        c.hooks.pre_tool_call = vec![hook(
            &guard_cmd,
            Some("bash|write_file"),
            Duration::from_secs(10),
            false,
        )];
    });
    std::fs::write(r.cwd.path().join("victim"), "precious").unwrap();
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::AllowOnce);
    let mut s = r.session(&fe).await;
    let out = r.prompt(&mut s, "clean up", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));

    // The tool did not run.
    assert_eq!(
        std::fs::read_to_string(r.cwd.path().join("victim")).unwrap(),
        "precious"
    );
    // The model was told why.
    let req = &model.requests()[1];
    assert_eq!(
        req.messages[3],
        json!({"role": "tool", "tool_call_id": "call_1",
               "content": "[denied by a hook: destructive command refused]"})
    );
    // Started, then finished failed with the title; never running; no permission asked for it.
    let ev: Vec<Event> = fe
        .events()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::ToolCallStarted(_)
                    | Event::ToolCallRunning { .. }
                    | Event::ToolCallFinished(_)
            )
        })
        .collect();
    let Event::ToolCallStarted(start) = &ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!(start.id, "call_1");
    assert_eq!(start.title, "bash: rm -rf victim");
    assert_eq!(
        ev[1],
        Event::ToolCallFinished(ToolCallEnd {
            id: "call_1".into(),
            status: ToolStatus::Failed,
            output: "[denied by a hook: destructive command refused]".into(),
            diffs: vec![],
            title: Some("bash — denied by a hook".into()),
        })
    );
    // The second call passed the guard, was asked about, and ran.
    assert!(matches!(&ev[2], Event::ToolCallStarted(c) if c.id == "call_2"));
    assert_eq!(
        ev[3],
        Event::ToolCallRunning {
            id: "call_2".into()
        }
    );
    assert_eq!(ev.len(), 5);
    assert_eq!(fe.asked(), vec!["bash: echo safe".to_string()]);
    assert_eq!(
        tool_outputs(&s),
        vec![
            "[denied by a hook: destructive command refused]".to_string(),
            "safe\n".to_string()
        ]
    );
    assert_eq!(out.recap.unwrap().get(mm_core::event::Tally::Command), 1);
    // What the guard read on stdin (the last call it saw).
    assert_eq!(
        received(&seen),
        json!({"event": "preToolCall", "sessionId": s.view().id(), "cwd": r.cwd(),
               "tool": "bash", "toolCallId": "call_2", "input": {"command": "echo safe"}})
    );
    model.assert_invariants();
}

#[mm_testkit::test]
async fn post_tool_call_context_is_appended_to_the_result() {
    common::platform::need_bash();
    let hooks_dir = tempfile::tempdir().unwrap();
    let seen = hooks_dir.path().join("seen.json");
    let post = format!(
        "cat > {}; echo 'note: tests live in tests/'",
        seen.display()
    );
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo hi"})),
        Answer::text("ok"),
    ]);
    let r = rig(model.clone(), |c| {
        c.hooks.post_tool_call = vec![hook(&post, Some("bash"), Duration::from_secs(10), false)];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "go", &fe).await;
    let expected = "hi\n\nnote: tests live in tests/";
    assert_eq!(tool_outputs(&s), vec![expected.to_string()]);
    assert_eq!(model.requests()[1].messages[3]["content"], expected);
    assert_eq!(
        received(&seen),
        json!({"event": "postToolCall", "sessionId": s.view().id(), "cwd": r.cwd(),
               "tool": "bash", "toolCallId": "call_1", "input": {"command": "echo hi"},
               "output": "hi\n", "status": "completed"})
    );
}

#[mm_testkit::test]
async fn a_post_tool_call_hook_with_another_match_does_not_run() {
    common::platform::need_bash();
    let hooks_dir = tempfile::tempdir().unwrap();
    let marker = hooks_dir.path().join("ran");
    let post = format!("touch {}; echo context", marker.display());
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo hi"})),
        Answer::text("ok"),
    ]);
    let r = rig(model.clone(), |c| {
        c.hooks.post_tool_call = vec![hook(
            &post,
            Some("write_file"),
            Duration::from_secs(10),
            false,
        )];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "go", &fe).await;
    assert_eq!(tool_outputs(&s), vec!["hi\n".to_string()]);
    assert!(!marker.exists());
}

#[mm_testkit::test]
async fn a_user_prompt_submit_deny_blocks_the_turn_without_a_model_call() {
    common::platform::need_bash();
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |c| {
        c.hooks.user_prompt_submit = vec![hook(
            r#"echo '{"decision": "deny", "reason": "no secrets in prompts"}'"#,
            None,
            Duration::from_secs(10),
            false,
        )];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let out = r.prompt(&mut s, "my password is hunter2", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(out.command, None);
    assert_eq!(
        fe.notices(),
        vec!["[prompt blocked by a hook: no secrets in prompts]".to_string()]
    );
    assert!(model.requests().is_empty());
    assert_eq!(s.view().history().len(), 1);
    // Slash commands fire no userPromptSubmit hook.
    let out = r.prompt(&mut s, "/new", &fe).await;
    assert!(matches!(out.command, Some(Command::New { .. })));
}

#[mm_testkit::test]
async fn user_prompt_submit_context_is_appended_to_the_user_message() {
    common::platform::need_bash();
    let hooks_dir = tempfile::tempdir().unwrap();
    let seen = hooks_dir.path().join("seen.json");
    let cmd = format!("cat > {}; echo 'the branch is main'", seen.display());
    let model = ScriptedModel::new(vec![Answer::text("ok")]);
    let r = rig(model.clone(), |c| {
        c.hooks.user_prompt_submit = vec![hook(&cmd, None, Duration::from_secs(10), false)];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "what branch?", &fe).await;
    assert_eq!(
        s.view().history()[1].content,
        "what branch?\nthe branch is main"
    );
    assert_eq!(
        model.requests()[0].messages[1]["content"],
        "what branch?\nthe branch is main"
    );
    assert_eq!(
        received(&seen),
        json!({"event": "userPromptSubmit", "sessionId": s.view().id(), "cwd": r.cwd(),
               "prompt": "what branch?"})
    );
}

#[mm_testkit::test]
async fn session_start_context_joins_the_system_prompt_and_the_first_prompt_waits() {
    common::platform::need_bash();
    let model = ScriptedModel::new(vec![Answer::text("ok"), Answer::text("ok")]);
    let r = rig(model.clone(), |c| {
        // Slow on purpose: the first prompt must wait for it, not race it.
        c.hooks.session_start = vec![hook(
            "sleep 0.5; echo 'this project indents with tabs'",
            None,
            Duration::from_secs(10),
            false,
        )];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "hi", &fe).await;
    r.prompt(&mut s, "again", &fe).await;
    let reqs = model.requests();
    let system = reqs[0].messages[0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("\nthis project indents with tabs\n"),
        "{system}"
    );
    assert_eq!(s.view().history()[0].content, system);
    // Once: the second request has the same system prompt.
    assert_eq!(reqs[1].messages[0], reqs[0].messages[0]);
}

#[mm_testkit::test]
async fn turn_end_receives_the_stop_reason() {
    common::platform::need_bash();
    let hooks_dir = tempfile::tempdir().unwrap();
    let seen = hooks_dir.path().join("seen.json");
    let cmd = format!("cat > {}", seen.display());
    let model = ScriptedModel::new(vec![
        Answer::text("ok"),
        Answer::error(ModelError::Http {
            status: 500,
            message: "boom".into(),
        }),
    ]);
    let r = rig(model.clone(), |c| {
        c.hooks.turn_end = vec![hook(&cmd, None, Duration::from_secs(10), false)];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "hi", &fe).await;
    assert_eq!(
        received(&seen),
        json!({"event": "turnEnd", "sessionId": s.view().id(), "cwd": r.cwd(), "stopReason": "end_turn"})
    );
    r.prompt(&mut s, "again", &fe).await;
    assert_eq!(received(&seen)["stopReason"], "error");
}

#[mm_testkit::test]
async fn a_hanging_hook_times_out_with_a_warning_and_the_tool_still_runs() {
    common::platform::need_bash();
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo ran"})),
        Answer::text("ok"),
    ]);
    let r = rig(model.clone(), |c| {
        c.hooks.pre_tool_call = vec![hook("sleep 30", None, Duration::from_millis(200), false)];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let started = std::time::Instant::now();
    let out = r.prompt(&mut s, "go", &fe).await;
    // The timeout fired: the turn did not wait for the hook.
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(
        fe.warnings(),
        vec!["🪝 preToolCall hook \"sleep 30\" failed: timed out after 0.2 s".to_string()]
    );
    assert_eq!(tool_outputs(&s), vec!["ran\n".to_string()]);
    assert!(fe.events().contains(&Event::ToolCallRunning {
        id: "call_1".into()
    }));
}

#[mm_testkit::test]
async fn a_fail_closed_hook_that_times_out_denies() {
    common::platform::need_bash();
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo ran"})),
        Answer::text("ok"),
    ]);
    let r = rig(model.clone(), |c| {
        c.hooks.pre_tool_call = vec![hook("sleep 30", None, Duration::from_millis(200), true)];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "go", &fe).await;
    assert_eq!(
        fe.warnings(),
        vec!["🪝 preToolCall hook \"sleep 30\" failed: timed out after 0.2 s".to_string()]
    );
    assert_eq!(
        tool_outputs(&s),
        vec!["[denied by a hook: timed out after 0.2 s]".to_string()]
    );
    assert!(!fe.events().contains(&Event::ToolCallRunning {
        id: "call_1".into()
    }));
}

#[mm_testkit::test]
async fn a_pre_compact_deny_skips_compression() {
    common::platform::need_bash();
    let hooks_dir = tempfile::tempdir().unwrap();
    let seen = hooks_dir.path().join("seen.json");
    let cmd = format!(
        "cat > {}; echo 'keep everything for the audit' >&2; exit 2",
        seen.display()
    );
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |c| {
        c.context.keep_last_turns = 1;
        c.hooks.pre_compact = vec![hook(&cmd, None, Duration::from_secs(10), false)];
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    let before = s.view().history().to_vec();
    let out = r.prompt(&mut s, "/compact", &fe).await;
    let line = "[compact: skipped by a hook: keep everything for the audit]";
    assert_eq!(compact_line(&out), Some(line.to_string()));
    assert_eq!(fe.notices(), vec![line.to_string()]);
    assert_eq!(s.view().history(), before);
    assert_eq!(s.view().last_measure(), Some(110));
    assert!(model.summary_requests().is_empty());
    assert_eq!(
        received(&seen),
        json!({"event": "preCompact", "sessionId": s.view().id(), "cwd": r.cwd(), "trigger": "manual"})
    );
}

#[mm_testkit::test]
async fn mm_p_runs_the_configured_guard() {
    common::platform::need_bash();
    use common::{FakeServer, Reply as Http};
    let server = FakeServer::start(vec![
        Http::tool_call("bash", json!({"command": "rm -rf victim"})),
        Http::text("could not delete it"),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("victim"), "precious").unwrap();
    let guard = home.path().join("guard.sh");
    script(
        &guard,
        "#!/bin/sh\ncase \"$(cat)\" in *'rm -rf'*) echo 'no rm -rf here' >&2; exit 2;; esac\n",
    );
    let config = home.path().join("hooks.toml");
    std::fs::write(
        &config,
        format!(
            "[[hooks.preToolCall]]\ncommand = \"{}\"\nmatch = \"bash\"\n",
            guard.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let args = ["--config", config, "-p", "delete victim"];
    let (code, _, stderr) =
        super::engine_sessions::mm(home.path(), cwd.path(), &server.url(), &args).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("victim")).unwrap(),
        "precious"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[1]["messages"][3]["content"],
        "[denied by a hook: no rm -rf here]"
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}
