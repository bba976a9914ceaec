//! The turn loop through a recording front end and a scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use super::common;

use std::sync::Arc;

use crate::{Command, Session, StopReason};
use async_trait::async_trait;
use common::{Answer, Recorder, Rig, ScriptedModel, rig};
use mm_core::event::*;
use mm_core::history::Role;
use mm_model::{ModelError, RawToolCall};
use mm_tools::tools::gate::Answer as Remembered;
use mm_tools::tools::{CallContext, Describe, Parsed, Tool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A gated test tool that echoes its `text` argument.
pub(super) struct Echo;

impl Describe for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echo"
    }
    fn kind(&self, _a: &Value) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, a: &Value) -> String {
        format!("echo: {}", a["text"].as_str().unwrap_or(""))
    }
    fn tally(&self) -> Option<Tally> {
        Some(Tally::Command)
    }
}

#[async_trait]
impl Tool for Echo {
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    fn gated(&self, _a: &Parsed) -> bool {
        true
    }
    async fn run_parsed(&self, a: Parsed, _call: &CallContext<'_>) -> ToolOutput {
        ToolOutput::completed(a.raw()["text"].as_str().unwrap_or("").to_string())
    }
}

/// A session whose tools are the built-ins and `echo`.
async fn session(r: &Rig, fe: &Recorder) -> Session {
    let mut s = r.session(fe).await;
    s.tools = s.tools.with(vec![Arc::new(Echo)]);
    s
}

#[tokio::test]
async fn a_text_turn_streams_and_is_stored() {
    let model = ScriptedModel::new(vec![Answer::text("hello there")]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "hi", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(s.history.len(), 3);
    assert_eq!(s.history[2].content, "hello there");
    let ev = fe.events();
    // The first prompt gives the session its title, as soon as it is taken.
    assert_eq!(ev[0], Event::Titled("hi".into()));
    assert_eq!(s.title.as_deref(), Some("hi"));
    let ev = ev[1..].to_vec();
    // The model is reported once per process, before the first call.
    assert_eq!(
        ev[0],
        Event::ModelDetected {
            name: "fake".into(),
            url: "http://fake/v1".into(),
            context_window: Some(8192)
        }
    );
    let ev = ev[1..].to_vec();
    assert_eq!(ev[0], Event::Text("hello there".into()));
    assert_eq!(
        ev[1],
        Event::ContextUsage(ContextUsage {
            used: 110,
            size: 8192
        })
    );
    assert!(matches!(ev.last(), Some(Event::ContextUsage(_))));
    assert_eq!(
        s.usage,
        Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Default::default()
        }
    );
}

#[tokio::test]
async fn tool_call_sequence_refs_and_recap() {
    let model = ScriptedModel::new(vec![
        Answer::raw_call("echo", r#"{"text":"hi"}"#),
        Answer::text("ok"),
    ]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "go", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(out.recap.unwrap().get(Tally::Command), 1);
    let ev = fe.events();
    let started = ev
        .iter()
        .find_map(|e| {
            if let Event::ToolCallStarted(s) = e {
                Some(s.clone())
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(started.id, "call_1");
    assert_eq!(started.title, "echo: hi");
    assert_eq!(started.raw_input, json!({"text": "hi"}));
    assert!(ev.contains(&Event::ToolCallRunning {
        id: "call_1".into()
    }));
    assert!(ev.contains(&Event::ToolCallFinished(ToolCallEnd {
        id: "call_1".into(),
        status: ToolStatus::Completed,
        output: "hi".into(),
        diffs: vec![],
        title: None
    })));
    // The second request carries the call and its result, id = the ref (the model gave none).
    let req = &model.requests()[1];
    assert_eq!(req.messages[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        req.messages[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "hi"})
    );
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_are_explained_and_the_turn_goes_on() {
    let model = ScriptedModel::new(vec![
        Answer::raw_call("echo", "{not json"),
        Answer::raw_call("nope", "{}"),
        Answer::text("sorry"),
    ]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "go", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    let tool_msgs: Vec<&str> = s
        .history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        tool_msgs[0].starts_with("[bad arguments for echo: not valid JSON"),
        "{}",
        tool_msgs[0]
    );
    assert!(
        tool_msgs[1].starts_with("[unknown tool \"nope\"; the tools are: "),
        "{}",
        tool_msgs[1]
    );
    assert_eq!(out.recap.unwrap().get(Tally::Command), 0);
}

#[tokio::test]
async fn loop_detector_blocks_then_ends_the_turn() {
    let replies = (0..6)
        .map(|_| Answer::raw_call("echo", r#"{"text":"x"}"#))
        .collect();
    let model = ScriptedModel::new(replies);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "go", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(
        fe.notices(),
        vec!["[stopped: the model kept calling echo with the same arguments]".to_string()]
    );
    let tool_msgs: Vec<&str> = s
        .history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        tool_msgs[3],
        "[loop detected: echo was already called 3 times with these arguments; change approach]"
    );
    assert_eq!(out.recap.unwrap().get(Tally::Command), 3);
}

#[tokio::test]
async fn max_steps_stops_the_turn() {
    let replies = (0..5)
        .map(|i| Answer::raw_call("echo", &format!(r#"{{"text":"{i}"}}"#)))
        .collect();
    let model = ScriptedModel::new(replies);
    let r = rig(model.clone(), |c| c.max_steps = 2);
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "go", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::MaxTurnRequests));
    assert_eq!(
        fe.notices(),
        vec!["[stopped: 2 model calls in this turn, the maxSteps limit]".to_string()]
    );
}

#[tokio::test]
async fn permission_answers_are_remembered() {
    let replies = vec![
        Answer::raw_call("echo", r#"{"text":"a"}"#),
        Answer::raw_call("echo", r#"{"text":"b"}"#),
        Answer::text("done"),
    ];
    let model = ScriptedModel::new(replies);
    let r = rig(model.clone(), |c| c.yolo = false);
    let fe = Recorder::new();
    fe.answer_permission(PermissionDecision::Never);
    let mut s = session(&r, &fe).await;
    r.prompt(&mut s, "go", &fe).await;
    assert_eq!(fe.asked(), vec!["echo: a".to_string()]);
    let tool_msgs: Vec<&str> = s
        .history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        tool_msgs,
        vec!["[echo rejected by the user]", "[echo rejected by the user]"]
    );
    // Survives /new (which keeps the conversation so far: sessions are on by default).
    let out = r.prompt(&mut s, "/new", &fe).await;
    let Some(Command::New {
        forgotten: 6,
        archived_as: Some(_),
    }) = out.command
    else {
        panic!("/new: {:?}", out.command);
    };
    assert_eq!(s.rules.answer("echo", None), Some(Remembered::Never));
    assert!(
        fe.notices()
            .contains(&"🆕 New session: 6 message(s) forgotten.".to_string())
    );
}

#[tokio::test]
async fn a_failure_removes_the_unanswered_question() {
    let model = ScriptedModel::new(vec![Answer::error(ModelError::Http {
        status: 500,
        message: "boom".into(),
    })]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "hi", &fe).await;
    assert_eq!(
        out.stop.map_err(|e| e.to_string()),
        Err("model server answered 500: boom".into())
    );
    assert_eq!(s.history.len(), 1);
    assert_eq!(
        fe.notices(),
        vec!["[error: model server answered 500: boom]".to_string()]
    );
}

#[tokio::test]
async fn a_cancelled_prompt_waiting_for_its_turn_never_runs() {
    let model = ScriptedModel::new(vec![]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = r.engine.prompt(&mut s, "hi", &[], &fe, &cancel).await;
    assert_eq!(out.stop, Ok(StopReason::Cancelled));
    assert!(model.requests().is_empty());
    assert_eq!(s.history.len(), 1);
}

#[tokio::test]
async fn interrupted_calls_are_answered_in_the_next_request_only() {
    // Two calls in one response; the turn is cut short by maxSteps after the first response.
    let two = Answer::calls(vec![
        RawToolCall {
            id: "a".into(),
            name: "echo".into(),
            arguments: r#"{"text":"1"}"#.into(),
        },
        RawToolCall {
            id: "a".into(),
            name: "echo".into(),
            arguments: r#"{"text":"2"}"#.into(),
        },
    ])
    .with_finish("length")
    .without_usage();
    let model = ScriptedModel::new(vec![two, Answer::text("ok")]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    let out = r.prompt(&mut s, "go", &fe).await;
    assert_eq!(out.stop, Ok(StopReason::MaxTokens));
    // Duplicate model ids: the second gets its ref.
    assert_eq!(s.history[2].tool_calls[0].id, "a");
    assert_eq!(s.history[2].tool_calls[1].id, "call_2");
    r.prompt(&mut s, "next", &fe).await;
    let req = &model.requests()[1];
    assert_eq!(
        req.messages[3]["content"],
        "[no result: the call was interrupted]"
    );
    assert_eq!(
        req.messages[4]["content"],
        "[no result: the call was interrupted]"
    );
    assert_eq!(s.history.iter().filter(|m| m.role == Role::Tool).count(), 0);
}

#[tokio::test]
async fn at_paths_are_attached_once() {
    let model = ScriptedModel::new(vec![Answer::text("ok")]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    std::fs::write(r.cwd.path().join("a.rs"), "fn main() {}").unwrap();
    r.prompt(&mut s, "fix @a.rs and @a.rs.", &fe).await;
    let abs = r.cwd.path().join("a.rs");
    assert_eq!(
        s.history[1].content,
        format!(
            "fix @a.rs and @a.rs.\n[attached file: {}]",
            mm_core::paths::for_model(&abs)
        )
    );
    assert!(fe.events().contains(&Event::Attached(abs)));
}

#[tokio::test]
async fn the_system_prompt_is_stable_between_turns() {
    let model = ScriptedModel::new(vec![Answer::text("a"), Answer::text("b")]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = session(&r, &fe).await;
    r.prompt(&mut s, "one", &fe).await;
    r.prompt(&mut s, "two", &fe).await;
    let r = model.requests();
    assert_eq!(r[0].messages[0], r[1].messages[0]);
    assert_eq!(r[1].messages.len(), 4);
}

#[tokio::test]
async fn the_system_prompt_speaks_only_of_tools_that_exist() {
    // Without agents there is no ask_agent tool, and the prompt does not offer one.
    let fe = Recorder::new();
    let s = session(&rig(ScriptedModel::new(vec![]), |_| {}), &fe).await;
    let system = &s.history[0].content;
    assert!(system.contains("`bash`"), "{system}");
    assert!(!system.contains("ask_agent"), "{system}");
    assert!(s.tools.get("ask_agent").is_none());
    // With agents, the tool exists and the prompt lists whom it reaches.
    let r = rig(ScriptedModel::new(vec![]), |c| {
        c.agents.insert(
            "reviewer".into(),
            mm_core::config::AgentConfig {
                command: "mm".into(),
                args: vec!["-acp".into()],
                env: Default::default(),
                sandbox: Default::default(),
            },
        );
    });
    let s = session(&r, &fe).await;
    let system = &s.history[0].content;
    assert!(
        system.contains("Agents you can ask with ask_agent: reviewer."),
        "{system}"
    );
    assert!(s.tools.get("ask_agent").is_some());
}

#[tokio::test]
async fn a_model_switch_starts_the_chars_per_token_estimate_afresh() {
    // The ratio learnt from one model's tokenizer says nothing of another's.
    let model = ScriptedModel::new(vec![
        Answer::text("measured").with_usage(10, 2),
        Answer::text("not measured").without_usage(),
    ]);
    model.list_models(&["fake", "other"]);
    let r = rig(model.clone(), |_| {});
    let fe = Recorder::new();
    let mut s = r.session(&fe).await;
    r.prompt(&mut s, "first", &fe).await;
    let learnt = s.chars_per_token;
    assert!(learnt > 20.0, "a long request over 10 tokens: {learnt}");

    // The second turn reports no usage, so nothing is learnt again in it.
    assert!(s.controls.set_model("other"));
    r.prompt(&mut s, "second", &fe).await;
    assert_eq!(model.requests()[1].model.as_deref(), Some("other"));
    assert_eq!(s.chars_per_token, 4.0);
}

/// A front end that sends a message into the running turn when the model's first answer
/// streams (as the user would while reading it).
struct SteersOnText {
    inner: Recorder,
    controls: crate::Controls,
    message: std::sync::Mutex<Option<String>>,
}

#[async_trait]
impl Frontend for SteersOnText {
    fn emit(&self, event: Event) {
        if matches!(event, Event::Text(_))
            && let Some(text) = self.message.lock().unwrap().take()
        {
            assert!(self.controls.steer(crate::Steered {
                text,
                attached: Vec::new(),
            }));
        }
        self.inner.emit(event);
    }
    async fn ask_permission(
        &self,
        r: PermissionRequest,
        c: &CancellationToken,
    ) -> PermissionDecision {
        self.inner.ask_permission(r, c).await
    }
    async fn ask_user(&self, f: Form, c: &CancellationToken) -> FormAnswer {
        self.inner.ask_user(f, c).await
    }
}

#[tokio::test]
async fn a_message_sent_into_a_turn_whose_answer_had_no_call_gets_one_more_step() {
    let model = ScriptedModel::new(vec![Answer::text("counting"), Answer::text("stopped")]);
    let r = rig(model.clone(), |_| {});
    let quiet = Recorder::new();
    let mut s = session(&r, &quiet).await;
    let fe = SteersOnText {
        inner: Recorder::new(),
        controls: s.controls().clone(),
        message: std::sync::Mutex::new(Some("stop now".into())),
    };
    let out = r
        .engine
        .prompt(&mut s, "count", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(model.calls(), 2, "one more step for the message");
    assert_eq!(model.last_user_message(), "stop now");
    let roles: Vec<Role> = s.history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    assert!(
        !s.controls().steer(crate::Steered {
            text: "late".into(),
            attached: Vec::new(),
        }),
        "the turn is over"
    );
    model.assert_invariants();
}
