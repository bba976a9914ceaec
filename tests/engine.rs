//! The turn loop through a recording front end and a scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mm::config::Config;
use mm::engine::{Command, Engine, Session, StopReason};
use mm::event::*;
use mm::history::Role;
use mm::model::{
    ChatRequest, ModelClient, ModelError, ModelInfo, ModelResponse, RawToolCall, StreamEvent,
};
use mm::tools::{Call, Tool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Scripted {
    replies: Mutex<VecDeque<Result<ModelResponse, ModelError>>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(replies: Vec<Result<ModelResponse, ModelError>>) -> Arc<Self> {
        Arc::new(Scripted {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        })
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ModelClient for Scripted {
    async fn chat(
        &self,
        request: &ChatRequest,
        on_event: &(dyn Fn(StreamEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Ok(text("done")));
        if let Ok(r) = &reply
            && !r.text.is_empty()
        {
            on_event(StreamEvent::Text(r.text.clone()));
        }
        reply
    }
    async fn complete(
        &self,
        _m: Vec<Value>,
        _c: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        Ok(text("summary"))
    }
    async fn info(&self, _cancel: &CancellationToken) -> Result<ModelInfo, ModelError> {
        Ok(ModelInfo {
            url: "http://fake/v1".into(),
            name: "fake".into(),
            context_window: 8192,
        })
    }
}

fn text(t: &str) -> ModelResponse {
    ModelResponse {
        text: t.into(),
        finish_reason: Some("stop".into()),
        usage: Some(Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn call(name: &str, args: &str) -> ModelResponse {
    ModelResponse {
        tool_calls: vec![RawToolCall {
            id: String::new(),
            name: name.into(),
            arguments: args.into(),
        }],
        finish_reason: Some("tool_calls".into()),
        ..Default::default()
    }
}

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
    answer: Mutex<VecDeque<PermissionDecision>>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Frontend for Recorder {
    fn emit(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }
    async fn ask_permission(
        &self,
        request: PermissionRequest,
        _cancel: &CancellationToken,
    ) -> PermissionDecision {
        self.asked.lock().unwrap().push(request.call.title.clone());
        self.answer
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(PermissionDecision::RejectOnce)
    }
    async fn ask_user(&self, _form: Form, _cancel: &CancellationToken) -> FormAnswer {
        FormAnswer::Unavailable("test".into())
    }
}

impl Recorder {
    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }
    fn notices(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| {
                if let Event::Notice(n) = e {
                    Some(n)
                } else {
                    None
                }
            })
            .collect()
    }
}

/// A gated test tool that echoes its `text` argument.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "echo"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
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
    fn gated(&self, _a: &Value) -> bool {
        true
    }
    async fn run(&self, a: Value, _call: &Call<'_>) -> ToolOutput {
        ToolOutput::completed(a["text"].as_str().unwrap_or("").to_string())
    }
}

fn engine(model: Arc<Scripted>, f: impl FnOnce(&mut Config)) -> Engine {
    let mut cfg = Config::default();
    f(&mut cfg);
    Engine::new(Arc::new(cfg), model)
}

/// A session whose tools are the built-ins and `echo`.
async fn session(e: &Engine, fe: &Recorder) -> (Session, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = e.new_session(dir.path().to_path_buf(), fe).await;
    s.tools = s.tools.with(vec![Arc::new(Echo)]);
    (s, dir)
}

#[tokio::test]
async fn a_text_turn_streams_and_is_stored() {
    let model = Scripted::new(vec![Ok(text("hello there"))]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "hi", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(out.stop, Ok(StopReason::EndTurn));
    assert_eq!(s.history.len(), 3);
    assert_eq!(s.history[2].content, "hello there");
    let ev = fe.events();
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
    let model = Scripted::new(vec![Ok(call("echo", r#"{"text":"hi"}"#)), Ok(text("ok"))]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "go", &[], &fe, &CancellationToken::new())
        .await;
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
    let model = Scripted::new(vec![
        Ok(call("echo", "{not json")),
        Ok(call("nope", "{}")),
        Ok(text("sorry")),
    ]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "go", &[], &fe, &CancellationToken::new())
        .await;
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
        .map(|_| Ok(call("echo", r#"{"text":"x"}"#)))
        .collect();
    let model = Scripted::new(replies);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "go", &[], &fe, &CancellationToken::new())
        .await;
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
        .map(|i| Ok(call("echo", &format!(r#"{{"text":"{i}"}}"#))))
        .collect();
    let model = Scripted::new(replies);
    let e = engine(model.clone(), |c| c.max_steps = 2);
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "go", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(out.stop, Ok(StopReason::MaxTurnRequests));
    assert_eq!(
        fe.notices(),
        vec!["[stopped: 2 model calls in this turn, the maxSteps limit]".to_string()]
    );
}

#[tokio::test]
async fn permission_answers_are_remembered() {
    let replies = vec![
        Ok(call("echo", r#"{"text":"a"}"#)),
        Ok(call("echo", r#"{"text":"b"}"#)),
        Ok(text("done")),
    ];
    let model = Scripted::new(replies);
    let e = engine(model.clone(), |c| c.yolo = false);
    let fe = Recorder::default();
    fe.answer
        .lock()
        .unwrap()
        .push_back(PermissionDecision::Never);
    let (mut s, _d) = session(&e, &fe).await;
    e.prompt(&mut s, "go", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(
        fe.asked.lock().unwrap().clone(),
        vec!["echo: a".to_string()]
    );
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
    // Survives /new.
    let out = e
        .prompt(&mut s, "/new", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(
        out.command,
        Some(Command::New {
            forgotten: 6,
            archived_as: None
        })
    );
    assert!(s.never.contains("echo"));
    assert!(
        fe.notices()
            .contains(&"🆕 New session: 6 message(s) forgotten.".to_string())
    );
}

#[tokio::test]
async fn a_failure_removes_the_unanswered_question() {
    let model = Scripted::new(vec![Err(ModelError::Http {
        status: 500,
        message: "boom".into(),
    })]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "hi", &[], &fe, &CancellationToken::new())
        .await;
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
    let model = Scripted::new(vec![]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = e.prompt(&mut s, "hi", &[], &fe, &cancel).await;
    assert_eq!(out.stop, Ok(StopReason::Cancelled));
    assert!(model.requests().is_empty());
    assert_eq!(s.history.len(), 1);
}

#[tokio::test]
async fn interrupted_calls_are_answered_in_the_next_request_only() {
    // Two calls in one response; the turn is cut short by maxSteps after the first response.
    let two = ModelResponse {
        tool_calls: vec![
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
        ],
        finish_reason: Some("length".into()),
        ..Default::default()
    };
    let model = Scripted::new(vec![Ok(two), Ok(text("ok"))]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    let out = e
        .prompt(&mut s, "go", &[], &fe, &CancellationToken::new())
        .await;
    assert_eq!(out.stop, Ok(StopReason::MaxTokens));
    // Duplicate model ids: the second gets its ref.
    assert_eq!(s.history[2].tool_calls[0].id, "a");
    assert_eq!(s.history[2].tool_calls[1].id, "call_2");
    e.prompt(&mut s, "next", &[], &fe, &CancellationToken::new())
        .await;
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
    let model = Scripted::new(vec![Ok(text("ok"))]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, d) = session(&e, &fe).await;
    std::fs::write(d.path().join("a.rs"), "fn main() {}").unwrap();
    e.prompt(
        &mut s,
        "fix @a.rs and @a.rs.",
        &[],
        &fe,
        &CancellationToken::new(),
    )
    .await;
    let abs = d.path().join("a.rs");
    assert_eq!(
        s.history[1].content,
        format!("fix @a.rs and @a.rs.\n[attached file: {}]", abs.display())
    );
    assert!(fe.events().contains(&Event::Attached(abs)));
}

#[tokio::test]
async fn the_system_prompt_is_stable_between_turns() {
    let model = Scripted::new(vec![Ok(text("a")), Ok(text("b"))]);
    let e = engine(model.clone(), |_| {});
    let fe = Recorder::default();
    let (mut s, _d) = session(&e, &fe).await;
    e.prompt(&mut s, "one", &[], &fe, &CancellationToken::new())
        .await;
    e.prompt(&mut s, "two", &[], &fe, &CancellationToken::new())
        .await;
    let r = model.requests();
    assert_eq!(r[0].messages[0], r[1].messages[0]);
    assert_eq!(r[1].messages.len(), 4);
}

#[tokio::test]
async fn the_system_prompt_speaks_only_of_tools_that_exist() {
    // Without agents there is no ask_agent tool, and the prompt does not offer one.
    let fe = Recorder::default();
    let e = engine(Scripted::new(vec![]), |_| {});
    let (s, _d) = session(&e, &fe).await;
    let system = &s.history[0].content;
    assert!(system.contains("`bash`"), "{system}");
    assert!(!system.contains("ask_agent"), "{system}");
    assert!(s.tools.get("ask_agent").is_none());
    // With agents, the tool exists and the prompt lists whom it reaches.
    let e = engine(Scripted::new(vec![]), |c| {
        c.agents.insert(
            "reviewer".into(),
            mm::config::AgentConfig {
                command: "mm".into(),
                args: vec!["-acp".into()],
                env: Default::default(),
            },
        );
    });
    let (s, _d) = session(&e, &fe).await;
    let system = &s.history[0].content;
    assert!(
        system.contains("Agents you can ask with ask_agent: reviewer."),
        "{system}"
    );
    assert!(s.tools.get("ask_agent").is_some());
}
