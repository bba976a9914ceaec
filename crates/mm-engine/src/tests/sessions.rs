//! Sessions and compression end to end through the engine (docs/sessions.md, docs/acp-reference.md
//! `/new` and `/compact`, docs/engine.md "The context window and usage"): files on disk, `/new`,
//! `/compact`, automatic compression, the server's "context exceeded", and `load_session`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use super::common;

use std::sync::Arc;

use crate::{Command, StopReason};
use common::*;
use mm_core::event::{Event, PermissionDecision, Plan, PlanStatus, PlanStep, Usage};
use mm_core::history::{Message, Role, ToolCall};
use mm_core::session::{self, SessionFile};
use mm_model::ModelError;
use mm_tools::tools::gate::{Answer as Remembered, Covers, Rule};
use pretty_assertions::assert_eq;
use regex::Regex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn read(r: &Rig, id: &str) -> SessionFile {
    session::load(&r.sessions_dir(), id).unwrap()
}

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

fn sessions_on(c: &mut mm_core::config::Config) {
    c.sessions.enabled = true;
}

// Its turns run bash, which Windows has only where Git Bash is (this crate's tests cannot skip
// with a reason at run time: mm-testkit's harness sits above it).
#[cfg_attr(windows, ignore = "its turns run bash, which Windows may not have")]
#[tokio::test]
async fn the_file_is_written_at_creation_and_after_every_turn_failed_and_cancelled_too() {
    let model = ScriptedModel::new(vec![
        Answer::text("hello"),
        // A turn that runs a tool, then fails.
        Answer::call("bash", json!({"command": "echo one"})),
        Answer::error(ModelError::Http {
            status: 500,
            message: "boom".into(),
        }),
        // A turn that runs a tool, then hangs until cancelled.
        Answer::call("bash", json!({"command": "echo two"})),
        Answer::hang(&[]),
    ]);
    let r = rig(model.clone(), sessions_on);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;

    // At creation: the system prompt alone.
    let f = read(&r, &s.id);
    assert_eq!(f.id, s.id);
    assert_eq!(f.cwd, r.cwd());
    assert_eq!(f.created_at, s.created_at);
    assert_eq!(roles(&f.messages), vec![Role::System]);

    // After a turn; the detected model's name is recorded.
    assert_eq!(f.model, "");
    assert_eq!(
        r.prompt(&mut s, "hi", &fe).await.stop,
        Ok(StopReason::EndTurn)
    );
    let f = read(&r, &s.id);
    assert_eq!(f.model, "fake");
    assert_eq!(f.messages, s.history);
    assert_eq!(f.messages[2].content, "hello");
    assert_eq!(f.usage.total_tokens, 110);

    // After a failed turn: what it did is kept in memory and on disk.
    let out = r.prompt(&mut s, "run one", &fe).await;
    assert_eq!(
        out.stop.map_err(|e| e.to_string()),
        Err("model server answered 500: boom".into())
    );
    let f = read(&r, &s.id);
    assert_eq!(f.messages, s.history);
    assert_eq!(f.messages.len(), 6);
    assert_eq!(f.messages[3].content, "run one");
    assert_eq!(f.messages[5].content, "one\n");

    // After a cancelled turn.
    let cancel = CancellationToken::new();
    let turn = r.engine.prompt(&mut s, "run two", &[], &fe, &cancel);
    let canceller = async {
        // The second model call of the turn (after the tool ran) hangs: cancel it.
        model.wait_for_requests(5).await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(turn, canceller);
    assert_eq!(out.stop, Ok(StopReason::Cancelled));
    let f = read(&r, &s.id);
    assert_eq!(f.messages, s.history);
    assert_eq!(f.messages.len(), 9);
    assert_eq!(f.messages[6].content, "run two");
    assert_eq!(f.messages[8].content, "two\n");
    assert_eq!(f.created_at, s.created_at);

    // A later turn sends a history the server accepts.
    model.push(Answer::text("fine"));
    r.prompt(&mut s, "and now?", &fe).await;
    assert_eq!(model.requests().len(), 6);
    model.assert_invariants();
}

#[tokio::test]
async fn new_archives_the_conversation_and_keeps_grants_usage_and_id() {
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo a"})),
        Answer::text("ran it"),
        Answer::text("just looking"),
        Answer::call("bash", json!({"command": "echo b"})),
        Answer::text("ran it again"),
    ]);
    let r = rig(model.clone(), |c| {
        c.sessions.enabled = true;
        c.yolo = false;
    });
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::AllowAlways);
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "first", &fe).await;
    s.rules.remember(Rule {
        answer: Remembered::Never,
        tool: "write_file".into(),
        covers: Covers::Tool,
    });
    *s.plan.lock().unwrap() = Some(Plan {
        title: "the plan".into(),
        steps: vec![PlanStep {
            content: "step".into(),
            status: PlanStatus::Pending,
            note: None,
        }],
    });
    r.prompt(&mut s, "look", &fe).await;
    assert!(read(&r, &s.id).plan.is_some());
    let old_history = s.history.clone();
    let usage = s.usage;
    let id = s.id.clone();
    fe.clear();

    let out = r.prompt(&mut s, "/new", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(out.recap, None);
    let Some(Command::New {
        forgotten,
        archived_as: Some(archive),
    }) = out.command
    else {
        panic!("{:?}", out.command);
    };
    assert_eq!(forgotten, 6);
    assert_ne!(archive, id);
    assert!(session::validate_id(&archive).is_ok());
    assert_eq!(
        fe.notices(),
        vec!["🆕 New session: 6 message(s) forgotten.".to_string()]
    );

    // The archive holds the old conversation, with the original createdAt.
    let a = read(&r, &archive);
    assert_eq!(a.id, archive);
    assert_eq!(a.created_at, s.created_at);
    assert_eq!(a.messages, old_history);
    assert_eq!(a.usage.total_tokens, usage.total());
    assert!(a.plan.is_some());

    // The session's own file: the system prompt alone, same id, totals kept, plan cleared.
    let own = read(&r, &id);
    assert_eq!(own.messages, vec![old_history[0].clone()]);
    assert_eq!(own.plan, None);
    assert_eq!(own.usage.total_tokens, usage.total());
    assert_eq!(s.id, id);
    assert_eq!(s.history.len(), 1);
    assert_eq!(s.usage, usage);
    assert_eq!(s.last_measure, None);
    assert_eq!(s.last_input, None);
    assert!(s.plan.lock().unwrap().is_none());
    assert_eq!(
        s.rules.answer("bash", Some("rm x")),
        Some(Remembered::Always)
    );
    assert_eq!(s.rules.answer("write_file", None), Some(Remembered::Never));

    // The grant survived: the next bash call asks nothing.
    assert_eq!(fe.asked(), vec!["bash: echo a"]);
    r.prompt(&mut s, "again", &fe).await;
    assert_eq!(fe.asked().len(), 1);
    assert_eq!(s.history.iter().filter(|m| m.role == Role::Tool).count(), 1);
    // The request after /new: the system prompt and the new question only.
    let after = &model.requests()[3];
    assert_eq!(after.messages.len(), 2);
    assert_eq!(after.messages[1]["content"], "again");
    model.assert_invariants();

    // /new on an empty conversation archives nothing.
    r.prompt(&mut s, "/new", &fe).await;
    let files_before = std::fs::read_dir(r.sessions_dir()).unwrap().count();
    let out = r.prompt(&mut s, "/new", &fe).await;
    assert_eq!(
        out.command,
        Some(Command::New {
            forgotten: 0,
            archived_as: None
        })
    );
    assert_eq!(
        fe.notices().last().unwrap(),
        "🆕 New session: 0 message(s) forgotten."
    );
    assert_eq!(
        std::fs::read_dir(r.sessions_dir()).unwrap().count(),
        files_before
    );
}

fn two_turns() -> Vec<Answer> {
    vec![
        Answer::call("bash", json!({"command": "echo 1"})),
        Answer::text("first done"),
        Answer::text("second done"),
        Answer::text("third done"),
    ]
}

#[tokio::test]
async fn compact_summarises_older_turns_and_keeps_the_last_ones() {
    let model = ScriptedModel::new(two_turns());
    let r = rig(model.clone(), |c| {
        c.sessions.enabled = true;
        c.context.keep_last_turns = 2;
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;

    // Nothing older than the last 2 turns.
    r.prompt(&mut s, "one", &fe).await;
    let before = s.history.clone();
    let out = r.prompt(&mut s, "/compact", &fe).await;
    let nothing = "🗜️ nothing to compact: 4 message(s), no turn older than the last 2";
    assert_eq!(compact_line(&out), Some(nothing.to_string()));
    assert_eq!(fe.notices(), vec![nothing.to_string()]);
    assert_eq!(s.history, before);
    // Unchanged history: the last measure is kept.
    assert_eq!(s.last_measure, Some(110));
    assert!(model.summary_requests().is_empty());

    r.prompt(&mut s, "two", &fe).await;
    r.prompt(&mut s, "three", &fe).await;
    let kept = s.history[5..].to_vec();
    let usage_before = s.usage;
    model.push_summary(Answer::text("SUMMARY of turn one").with_usage(50, 5));
    fe.clear();
    let out = r.prompt(&mut s, "/compact", &fe).await;
    let Some(line) = compact_line(&out) else {
        panic!()
    };
    let re = Regex::new(
        r"^🗜️ compressed \d+ messages → 1 summary \+ \d+ kept \(\d+ → \d+ tokens, \d+\.\ds\)$",
    )
    .unwrap();
    assert!(re.is_match(&line), "{line}");
    assert!(
        line.starts_with("🗜️ compressed 4 messages → 1 summary + 4 kept ("),
        "{line}"
    );
    assert_eq!(fe.notices(), vec![line.clone()]);
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    // system + summary + the two kept turns.
    assert_eq!(s.history.len(), 6);
    assert_eq!(s.history[0], before[0]);
    assert_eq!(s.history[1].role, Role::User);
    assert!(s.history[1].compact);
    assert_eq!(s.history[1].content, "SUMMARY of turn one");
    assert_eq!(s.history[2..].to_vec(), kept);
    // The change forgot the last measure; the summary call adds to the totals.
    assert_eq!(s.last_measure, None);
    assert_eq!(s.last_input, None);
    assert_eq!(s.usage.total(), usage_before.total() + 55);
    // The summary call saw the old turn as a transcript, without tools.
    let sreq = &model.summary_requests()[0];
    assert_eq!(sreq.len(), 2);
    let transcript = sreq[1]["content"].as_str().unwrap();
    assert!(transcript.contains("User: one"), "{transcript}");
    assert!(
        transcript.contains("Assistant called bash: {\"command\":\"echo 1\"}"),
        "{transcript}"
    );
    assert!(!transcript.contains("User: two"), "{transcript}");
    // The file was rewritten.
    assert_eq!(read(&r, &s.id).messages, s.history);

    // The next request: the summary merged into the next user message, invariants hold.
    r.prompt(&mut s, "four", &fe).await;
    let last = model.requests().pop().unwrap();
    assert_eq!(
        last.messages[0],
        json!({"role": "system", "content": before[0].content})
    );
    assert_eq!(last.messages[1]["content"], "SUMMARY of turn one\n\ntwo");
    model.assert_invariants();
}

#[tokio::test]
async fn a_failed_summary_keeps_the_history_and_the_measure() {
    let model = ScriptedModel::new(two_turns());
    let r = rig(model.clone(), |c| c.context.keep_last_turns = 1);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    let before = s.history.clone();
    model.push_summary(Answer::error(ModelError::Http {
        status: 503,
        message: "loading model".into(),
    }));
    let out = r.prompt(&mut s, "/compact", &fe).await;
    let line = "[compact: failed, history kept: model server answered 503: loading model]";
    assert_eq!(compact_line(&out), Some(line.to_string()));
    assert_eq!(fe.notices(), vec![line.to_string()]);
    assert_eq!(s.history, before);
    assert_eq!(s.last_measure, Some(110));

    // An empty summary is a failure too.
    model.push_summary(Answer::text("  "));
    let out = r.prompt(&mut s, "/compact", &fe).await;
    assert_eq!(
        compact_line(&out),
        Some("[compact: failed, history kept: the summary was empty]".to_string())
    );
    assert_eq!(s.history, before);
}

/// Enough text that a few turns fill a 3000-token window (the estimate is 4 chars a token).
fn bulky(i: usize) -> String {
    format!("turn {i}: {}", "lorem ipsum dolor sit amet ".repeat(60))
}

#[tokio::test]
async fn a_long_history_is_compressed_before_the_model_call() {
    let model = ScriptedModel::new(vec![]);
    // The window leaves room for a few turns beside the system prompt and the tool schemas.
    let r = rig(model.clone(), |c| {
        c.context_window = 3000;
        c.model.max_tokens = Some(200);
        c.context.keep_last_turns = 1;
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let mut turns = 0;
    while r.engine.estimate(&s) + 200 < 2400 {
        turns += 1;
        s.history.push(Message::user(bulky(turns)));
        s.history
            .push(Message::assistant(format!("answer {turns}"), Vec::new()));
        assert!(turns < 50);
    }
    assert!(turns >= 2, "{turns}");
    let estimate_before = r.engine.estimate(&s);
    model.push_summary(Answer::text("what happened so far"));
    let out = r.prompt(&mut s, "next", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    let auto = fe.auto_compacted();
    assert_eq!(auto.len(), 1, "{auto:?}");
    let re = Regex::new(
        r"^🗜️ compressed \d+ messages → 1 summary \+ 1 kept \(\d+ → \d+ tokens, \d+\.\ds\)$",
    )
    .unwrap();
    assert!(re.is_match(&auto[0]), "{}", auto[0]);
    // The event came before the model call's text.
    let ev = fe.events();
    let at = |want: &dyn Fn(&Event) -> bool| ev.iter().position(want).unwrap();
    assert!(at(&|e| matches!(e, Event::AutoCompacted(_))) < at(&|e| matches!(e, Event::Text(_))));
    // The request sent was the small one: system, summary merged into the question.
    let reqs = model.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].messages.len(), 2);
    assert_eq!(
        reqs[0].messages[1]["content"],
        "what happened so far\n\nnext"
    );
    assert!(r.engine.estimate(&s) < estimate_before);
    assert_eq!(model.summary_requests().len(), 1);
    model.assert_invariants();
}

#[tokio::test]
async fn a_reported_input_count_over_the_threshold_triggers_compression() {
    // The estimate is small, but the server counts many more tokens than 4 chars each.
    let model = ScriptedModel::new(vec![
        Answer::text("a").with_usage(900, 10),
        Answer::text("b").with_usage(1500, 10),
        Answer::text("c"),
    ]);
    let r = rig(model.clone(), |c| {
        c.context_window = 2000;
        c.model.max_tokens = Some(100);
        c.context.keep_last_turns = 1;
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    assert!(fe.auto_compacted().is_empty());
    assert_eq!(s.last_input, Some(1500));
    r.prompt(&mut s, "three", &fe).await;
    assert_eq!(fe.auto_compacted().len(), 1, "{:?}", fe.auto_compacted());
    let last = model.requests().pop().unwrap();
    assert_eq!(last.messages.len(), 2);
    assert_eq!(last.messages[1]["content"], "the summary\n\nthree");
    model.assert_invariants();
}

#[tokio::test]
async fn a_single_turn_over_the_window_ends_with_an_explanation_and_no_request() {
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |c| {
        c.context_window = 2000;
        c.model.max_tokens = Some(200);
    });
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let huge = "x".repeat(20_000);
    let out = r.prompt(&mut s, &huge, &fe).await;
    let Err(e) = &out.stop.as_ref().map_err(|e| e.to_string()) else {
        panic!("{out:?}")
    };
    let re = Regex::new(
        r"^this turn does not fit the context window: about \d+ tokens with the answer's reserve, the window is 2000$",
    )
    .unwrap();
    assert!(re.is_match(e), "{e}");
    assert_eq!(fe.notices(), vec![format!("[error: {e}]")]);
    assert!(model.requests().is_empty());
    assert!(model.summary_requests().is_empty());
    // The unanswered question is removed.
    assert_eq!(s.history.len(), 1);
}

/// How the turn fails when the server's "context exceeded" cannot be helped.
const EXCEEDED: &str =
    "model server answered 400: the request exceeds the available context size (4096 tokens)";

fn exceeded() -> ModelError {
    ModelError::ContextExceeded {
        status: 400,
        message: "the request exceeds the available context size (4096 tokens)".into(),
        n_ctx: Some(4096),
    }
}

#[tokio::test]
async fn context_exceeded_from_the_server_compresses_once_and_retries_once() {
    let model = ScriptedModel::new(vec![
        Answer::text("a"),
        Answer::text("b"),
        Answer::error(exceeded()),
        Answer::text("fits now"),
    ]);
    let r = rig(model.clone(), |c| c.context.keep_last_turns = 1);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    let out = r.prompt(&mut s, "three", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(fe.auto_compacted().len(), 1, "{:?}", fe.auto_compacted());
    assert_eq!(model.summary_requests().len(), 1);
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4);
    // The retry is smaller: system + summary merged into the question.
    assert_eq!(reqs[2].messages.len(), 6);
    assert_eq!(reqs[3].messages.len(), 2);
    assert_eq!(reqs[3].messages[1]["content"], "the summary\n\nthree");
    assert_eq!(s.history.last().unwrap().content, "fits now");
    model.assert_invariants();
}

#[tokio::test]
async fn context_exceeded_twice_fails_the_turn_with_the_servers_line() {
    let model = ScriptedModel::new(vec![
        Answer::text("a"),
        Answer::text("b"),
        Answer::error(exceeded()),
        Answer::error(exceeded()),
    ]);
    let r = rig(model.clone(), |c| c.context.keep_last_turns = 1);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    let out = r.prompt(&mut s, "three", &fe).await;
    assert_eq!(out.stop.map_err(|e| e.to_string()), Err(EXCEEDED.into()));
    assert_eq!(fe.notices(), vec![format!("[error: {EXCEEDED}]")]);
    assert_eq!(model.requests().len(), 4);
    assert_eq!(model.summary_requests().len(), 1);
    model.assert_invariants();
}

#[tokio::test]
async fn context_exceeded_with_a_failed_summary_reports_it_once_and_fails_with_the_servers_line() {
    let model = ScriptedModel::new(vec![
        Answer::text("a"),
        Answer::text("b"),
        Answer::text("c"),
        Answer::error(exceeded()),
    ]);
    let r = rig(model.clone(), |c| c.context.keep_last_turns = 2);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    for t in ["one", "two", "three"] {
        r.prompt(&mut s, t, &fe).await;
    }
    model.push_summary(Answer::error(ModelError::Http {
        status: 503,
        message: "busy".into(),
    }));
    let before = s.history.clone();
    let out = r.prompt(&mut s, "four", &fe).await;
    assert_eq!(out.stop.map_err(|e| e.to_string()), Err(EXCEEDED.into()));
    assert_eq!(model.summary_requests().len(), 1);
    assert_eq!(
        fe.auto_compacted(),
        vec!["[compact: failed, history kept: model server answered 503: busy]".to_string()]
    );
    assert_eq!(s.history, before);
}

#[tokio::test]
async fn context_exceeded_with_nothing_to_compress_fails_with_the_servers_line() {
    let model = ScriptedModel::new(vec![Answer::error(exceeded())]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    let out = r.prompt(&mut s, "one", &fe).await;
    assert_eq!(out.stop.map_err(|e| e.to_string()), Err(EXCEEDED.into()));
    assert_eq!(model.requests().len(), 1);
    assert!(model.summary_requests().is_empty());
}

fn stored_session(id: &str) -> SessionFile {
    SessionFile {
        version: session::VERSION,
        id: id.into(),
        cwd: "/somewhere/else".into(),
        created_at: "2026-01-02T03:04:05+01:00".into(),
        updated_at: "2026-01-02T03:05:00+01:00".into(),
        title: None,
        mode: None,
        model: "old-model".into(),
        usage: (&Usage {
            input_tokens: 1000,
            output_tokens: 200,
            ..Default::default()
        })
            .into(),
        plan: None,
        messages: vec![
            Message::system("THE OLD SYSTEM PROMPT"),
            Message::user("list the files"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "x1".into(),
                    ref_: "call_41".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            ),
            Message::tool("x1", "Cargo.toml\n", false),
            Message::assistant("one file", Vec::new()),
        ],
        children: Vec::new(),
    }
}

#[tokio::test]
async fn load_session_restores_the_conversation_under_the_current_system_prompt() {
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo hi"})),
        Answer::text("done"),
    ]);
    let r = rig(model.clone(), sessions_on);
    let fe = Recorder::new();
    let id = "20260102-030405-abcdef01";
    let stored = stored_session(id);
    session::save(&r.sessions_dir(), &stored).unwrap();

    let mut s = r.engine.load_session(r.cwd(), id, &fe).await.unwrap();
    assert_eq!(s.id, id);
    // The request's cwd wins over the file's, and is written back.
    assert_eq!(s.cwd, r.cwd());
    assert_eq!(read(&r, id).cwd, r.cwd());
    assert_eq!(s.created_at, "2026-01-02T03:04:05+01:00");
    // The current system prompt replaces the stored one.
    let current = r.engine.system_prompt(&r.cwd(), &s.tools);
    assert_eq!(s.history[0], Message::system(current));
    assert_eq!(s.history[1..], stored.messages[1..]);
    assert_eq!(
        s.usage,
        Usage {
            input_tokens: 1000,
            output_tokens: 200,
            ..Default::default()
        }
    );

    // The next live call gets a ref above the highest stored one.
    r.prompt(&mut s, "say hi", &fe).await;
    let started: Vec<String> = fe
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted(c) => Some(c.id),
            _ => None,
        })
        .collect();
    assert_eq!(started, vec!["call_42".to_string()]);
    assert_eq!(s.history[6].tool_calls[0].ref_, "call_42");
    // Usage adds to the restored totals; the file has it all.
    assert_eq!(s.usage.input_tokens, 1200);
    let f = read(&r, id);
    assert_eq!(f.messages, s.history);
    assert_eq!(f.usage.total_tokens, 1420);
    // The first request after the load: current prompt, stored turn, new question.
    let req = &model.requests()[0];
    assert_eq!(req.messages[0]["content"], s.history[0].content.as_str());
    assert_eq!(req.messages[1]["content"], "list the files");
    assert_eq!(req.messages[2]["tool_calls"][0]["id"], "x1");
    model.assert_invariants();
}

#[tokio::test]
async fn load_session_refuses_bad_and_unknown_ids() {
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), sessions_on);
    let fe = Recorder::new();
    // Why loading `id` is refused.
    let refused = async |id: &str| {
        let loaded = r.engine.load_session(r.cwd(), id, &fe).await;
        loaded.err().unwrap().to_string()
    };
    // Invalid: refused before any file or folder is touched.
    let outside = r.cwd().join("x.json");
    std::fs::write(&outside, "not a session").unwrap();
    let e = refused("../x").await;
    assert_eq!(
        e,
        "invalid session id \"../x\": expected 1 to 128 letters, digits, '_' or '-', starting with a letter or digit"
    );
    assert!(!r.sessions_dir().exists());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "not a session");
    for bad in ["", "/etc/passwd", "-x"] {
        assert!(r.engine.load_session(r.cwd(), bad, &fe).await.is_err());
    }
    assert!(!r.sessions_dir().exists());

    // Unknown: names the file.
    let e = refused("20260101-000000-00000000").await;
    let path = r.sessions_dir().join("20260101-000000-00000000.json");
    // The system's own text for the missing file ("Path not found." on Windows).
    let missing = std::fs::read(&path).unwrap_err().to_string();
    // mm words it without std's " (os error N)".
    let missing = missing.split(" (os error").next().unwrap();
    assert_eq!(e, format!("cannot read {}: {missing}", path.display()));
    // An invalid file is an error naming it, and is left as it was.
    std::fs::create_dir_all(r.sessions_dir()).unwrap();
    let broken = r.sessions_dir().join("broken.json");
    std::fs::write(&broken, "{").unwrap();
    let e = refused("broken").await;
    assert!(
        e.starts_with(&format!("{} is not a session file: ", broken.display())),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), "{");
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn a_session_written_by_one_engine_is_continued_by_another() {
    // As `mm -p` then `mm --continue -p` would: two engines, one folder.
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo one"})),
        Answer::text("first"),
    ]);
    let r = rig(model.clone(), sessions_on);
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    assert_eq!(s.history.len(), 7);

    let model2 = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo three"})),
        Answer::text("third"),
    ]);
    let mut cfg = mm_core::config::Config::default();
    cfg.sessions.enabled = true;
    let engine2 = crate::Engine::new(Arc::new(cfg), model2.clone());
    let latest = session::latest(&engine2.sessions_dir(&r.cwd()).unwrap()).unwrap();
    assert_eq!(latest.id, s.id);
    let mut s2 = engine2.load_session(r.cwd(), &s.id, &fe).await.unwrap();
    assert_eq!(s2.history[1..], s.history[1..]);
    let out = engine2
        .prompt(&mut s2, "three", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    // call_1 was used by the first engine: the second continues above it.
    assert_eq!(s2.history[8].tool_calls[0].ref_, "call_2");
    assert_eq!(read(&r, &s.id).messages.len(), 11);
    model2.assert_invariants();
}

/// The modification time of session `id`'s file set to `ago` before now: which file was saved
/// last, whatever the file system's clock granularity.
fn saved_ago(r: &Rig, id: &str, ago: std::time::Duration) {
    let file = std::fs::File::options()
        .write(true)
        .open(session::file_path(&r.sessions_dir(), id))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() - ago)
        .unwrap();
}

fn saved_ids(r: &Rig) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(r.sessions_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".json").map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// With no configuration at all, a session is kept (`sessions.enabled` is on by default) with
/// the `.gitignore` that keeps it out of the project's commits, and a folder keeps
/// `sessions.keep` files: a save that creates one removes those saved least recently beyond it,
/// never the one just saved; `sessions.keep = 0` keeps them all.
#[tokio::test]
async fn sessions_are_kept_by_default_and_the_folder_keeps_sessions_keep_of_them() {
    let hour = std::time::Duration::from_secs(3600);
    let model = ScriptedModel::new(vec![Answer::text("one")]);
    let r = rig(model, |c| {
        assert!(c.sessions.enabled, "sessions are on by default");
        assert_eq!(c.sessions.keep, 100, "sessions.keep's default");
        c.sessions.keep = 2;
    });
    let fe = Recorder::new();
    let mut first = r.session(&fe).await;
    assert_eq!(
        std::fs::read_to_string(r.cwd().join(".mm/.gitignore")).unwrap(),
        "# mm's session files: your conversations, not the project's.\nsessions/\n"
    );
    r.prompt(&mut first, "one", &fe).await;
    let second = r.session(&fe).await;
    // The first was saved last: the second is the one to go.
    saved_ago(&r, &second.id, 2 * hour);
    saved_ago(&r, &first.id, hour);
    let third = r.session(&fe).await;
    let mut kept = vec![first.id.clone(), third.id.clone()];
    kept.sort();
    assert_eq!(saved_ids(&r), kept);
    // Each new file prunes again.
    let fourth = r.session(&fe).await;
    saved_ago(&r, &fourth.id, 3 * hour);
    let fifth = r.session(&fe).await;
    let mut kept = vec![third.id.clone(), fifth.id.clone()];
    kept.sort();
    assert_eq!(saved_ids(&r), kept);
    assert_eq!(fe.warnings(), Vec::<String>::new());

    // 0 keeps them all.
    let r = rig(ScriptedModel::new(vec![]), |c| c.sessions.keep = 0);
    for _ in 0..3 {
        r.session(&fe).await;
    }
    assert_eq!(saved_ids(&r).len(), 3);
}
