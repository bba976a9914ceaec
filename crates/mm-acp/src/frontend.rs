//! The engine's [`Frontend`] for one ACP session: events become `session/update`
//! notifications or stderr lines, questions become requests to the client.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use agent_client_protocol::{Client, UntypedMessage};
use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Logger;
use super::convert::{self, Output, QuestionOutcome};
use crate::event::{
    ChildEvent, ChildStep, Event, Form, FormAnswer, Frontend, NetworkAnswer, NetworkQuestion,
    PermissionDecision, PermissionRequest,
};
use crate::relay::{RelayedAnswer, RelayedForm, RelayedPermission};
use mm_agents::relay;

/// Lines of a running call's progress its `tool_call_update` content shows: the last ones, each
/// update replacing the previous content.
pub const PROGRESS_LINES: usize = 40;

/// The client as the front end sees it: notifications out, requests out and their answers.
#[async_trait]
pub trait Peer: Send + Sync {
    fn notify(&self, method: &str, params: Value);
    /// `Err` is the explanation of an error response or a transport failure.
    async fn request(&self, method: &str, params: Value) -> Result<Value, String>;
}

#[async_trait]
impl Peer for agent_client_protocol::v1::ConnectionTo<Client> {
    fn notify(&self, method: &str, params: Value) {
        // Built directly: `UntypedMessage::new` re-serialises the params into a new Value, a
        // deep copy of every streamed chunk and replayed message. A closed connection has
        // nobody left to tell.
        let m = UntypedMessage {
            method: method.to_string(),
            params,
        };
        let _ = self.send_notification(m);
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let m = UntypedMessage::new(method, params).map_err(|e| e.message.clone())?;
        self.send_request(m)
            .block_task()
            .await
            .map_err(|e| e.message.clone())
    }
}

/// One session's front end.
pub struct AcpFrontend {
    peer: Arc<dyn Peer>,
    /// Empty until the engine has created the session.
    session_id: Mutex<String>,
    /// The client advertised `clientCapabilities.elicitation.form`.
    forms: bool,
    /// The client advertised `clientCapabilities.session.compaction`.
    compaction: bool,
    /// The client advertised `clientCapabilities.subagents`: it is shown `task` calls' children.
    subagents: bool,
    /// The client advertised `clientCapabilities.session.notices`.
    notices: bool,
    log: Logger,
    /// The progress lines of running calls, by call id.
    progress: Mutex<HashMap<String, VecDeque<String>>>,
}

impl AcpFrontend {
    pub fn new(peer: Arc<dyn Peer>, forms: bool, log: Logger) -> Self {
        AcpFrontend {
            peer,
            session_id: Mutex::new(String::new()),
            forms,
            compaction: false,
            subagents: false,
            notices: false,
            log,
            progress: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `compaction_update`s (the client advertised `session.compaction`).
    pub fn with_compaction(mut self, compaction: bool) -> Self {
        self.compaction = compaction;
        self
    }

    /// Shows `task` calls' children (the client advertised `subagents`).
    pub fn with_subagents(mut self, subagents: bool) -> Self {
        self.subagents = subagents;
        self
    }

    /// A `task` call's child's step, or an `ask_agent` call's conversation's, to a client that
    /// advertised `subagents`: announced on the parent, its events on its own session id, idle
    /// at the end. Others see only the call.
    fn child(&self, child: ChildEvent) {
        if !self.subagents {
            return;
        }
        let ChildEvent { session, step, .. } = child;
        match step {
            ChildStep::Started {
                description,
                cancellable,
            } => self.update(convert::subagent_started(
                &session,
                &description,
                cancellable,
            )),
            ChildStep::Event(event) => match convert::translate(&session, self.progress(*event)) {
                Output::Update(update) => self.update_on(&session, update),
                Output::Log(line) => self.log.line(&line),
                Output::Compaction(update) => {
                    if self.compaction {
                        self.update_on(&session, update);
                    }
                }
                Output::LogAndNotice(line, notice) => {
                    self.log.line(&line);
                    self.notice(notice);
                }
                // A child starts none.
                Output::Child(_) => {}
            },
            ChildStep::Ended { end, .. } => self.update(convert::subagent_ended(&session, end)),
        }
    }

    /// Sends `notice` updates (the client advertised `session.notices`).
    pub fn with_notices(mut self, notices: bool) -> Self {
        self.notices = notices;
        self
    }

    /// A `notice` update, for a client that advertised `session.notices` only; the chunks and
    /// log lines that say the same to other clients are sent as well.
    pub fn notice(&self, notice: serde_json::Value) {
        if self.notices {
            self.update(notice);
        }
    }

    /// A call's progress so far, its last [`PROGRESS_LINES`] lines with `text` added; a finished
    /// call's are forgotten.
    fn progress(&self, event: Event) -> Event {
        let Ok(mut all) = self.progress.lock() else {
            return event;
        };
        if let Event::ToolCallProgress { id, text } = event {
            let lines = all.entry(id.clone()).or_default();
            lines.extend(text.lines().map(str::to_string));
            while lines.len() > PROGRESS_LINES {
                lines.pop_front();
            }
            let text = lines.iter().cloned().collect::<Vec<_>>().join("\n");
            return Event::ToolCallProgress { id, text };
        }
        if let Event::ToolCallFinished(end) = &event {
            all.remove(&end.id);
        }
        event
    }

    pub fn session_id(&self) -> String {
        self.session_id
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    pub fn set_session_id(&self, id: &str) {
        if let Ok(mut s) = self.session_id.lock() {
            *s = id.to_string();
        }
    }

    /// Sends one `session/update`.
    pub fn update(&self, update: Value) {
        let id = self.session_id();
        if !id.is_empty() {
            self.update_on(&id, update);
        }
    }

    /// Sends one `session/update` on session `id` (the session's own, or a child's).
    fn update_on(&self, id: &str, update: Value) {
        self.peer
            .notify("session/update", convert::notification(id, update));
    }

    /// A request that gives up (`None`) when `cancel` fires first.
    async fn ask(
        &self,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Option<Result<Value, String>> {
        tokio::select! {
            r = self.peer.request(method, params) => Some(r),
            () = cancel.cancelled() => None,
        }
    }
}

#[async_trait]
impl Frontend for AcpFrontend {
    fn emit(&self, event: Event) {
        let event = self.progress(event);
        match convert::translate(&self.session_id(), event) {
            Output::Update(update) => self.update(update),
            Output::Log(line) => self.log.line(&line),
            Output::Compaction(update) => {
                if self.compaction {
                    self.update(update);
                }
            }
            Output::Child(child) => self.child(child),
            Output::LogAndNotice(line, notice) => {
                self.log.line(&line);
                self.notice(notice);
            }
        }
    }

    async fn ask_permission(
        &self,
        request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> PermissionDecision {
        let params = convert::permission_request(&self.session_id(), &request);
        match self.ask("session/request_permission", params, cancel).await {
            Some(r) => convert::permission_decision(r.as_ref().map_err(String::as_str)),
            None => PermissionDecision::RejectOnce,
        }
    }

    async fn ask_user(&self, form: Form, cancel: &CancellationToken) -> FormAnswer {
        let id = self.session_id();
        if self.forms {
            let params = convert::elicitation_request(&id, &form);
            return match self.ask("elicitation/create", params, cancel).await {
                Some(r) => convert::form_answer(&form, r.as_ref().map_err(String::as_str)),
                None => FormAnswer::Cancelled,
            };
        }
        if !convert::askable_by_permission(&form) {
            return FormAnswer::Unavailable(convert::NO_FORM_SUPPORT.to_string());
        }
        let mut answers = Vec::with_capacity(form.questions.len());
        for q in &form.questions {
            let params = convert::question_request(&id, &form.tool_call_id, q);
            let Some(r) = self.ask("session/request_permission", params, cancel).await else {
                return FormAnswer::Cancelled;
            };
            match convert::question_answer(q, r.as_ref().map_err(String::as_str)) {
                QuestionOutcome::Answer(a) => answers.push(a),
                QuestionOutcome::Declined => return FormAnswer::Declined,
                QuestionOutcome::Cancelled => return FormAnswer::Cancelled,
                QuestionOutcome::Unavailable(e) => return FormAnswer::Unavailable(e),
            }
        }
        FormAnswer::Accepted(answers)
    }

    async fn ask_relayed_permission(
        &self,
        request: RelayedPermission,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let params = convert::relayed_permission_request(&self.session_id(), &request);
        let r = self
            .ask("session/request_permission", params, cancel)
            .await?;
        convert::relayed_choice(r.as_ref().map_err(String::as_str))
    }

    async fn ask_network(
        &self,
        question: NetworkQuestion,
        cancel: &CancellationToken,
    ) -> NetworkAnswer {
        // A question in the middle of a running call is not what acp.md's permission requests
        // mean: only a client with forms is asked; to the others the refusal stands.
        if !self.forms {
            return NetworkAnswer::No;
        }
        let answer = self
            .ask_user(convert::network_form(&question), cancel)
            .await;
        convert::network_answer(&question, &answer)
    }

    async fn ask_relayed_form(
        &self,
        form: RelayedForm,
        cancel: &CancellationToken,
    ) -> RelayedAnswer {
        if self.forms {
            let params = convert::relayed_elicitation_request(&self.session_id(), &form);
            return match self.ask("elicitation/create", params, cancel).await {
                Some(r) => convert::relayed_answer(r.as_ref().map_err(String::as_str)),
                None => RelayedAnswer::Cancelled,
            };
        }
        // Without form support, a form of choices can still go question by question.
        let Some(fields) = relay::questions_of(&form.schema) else {
            return RelayedAnswer::Unavailable(convert::NO_FORM_SUPPORT.to_string());
        };
        let ours = Form {
            tool_call_id: form.tool_call_id.clone(),
            questions: fields.into_iter().map(|(_, q)| q).collect(),
        };
        match self.ask_user(ours, cancel).await {
            FormAnswer::Accepted(values) => {
                RelayedAnswer::Accepted(relay::content_of(&form.schema, &values))
            }
            FormAnswer::Declined => RelayedAnswer::Declined,
            FormAnswer::Cancelled => RelayedAnswer::Cancelled,
            FormAnswer::Unavailable(why) => RelayedAnswer::Unavailable(why),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{AnswerValue, Question, QuestionKind, ToolCallStart, ToolKind};
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::collections::VecDeque;

    /// Records what is sent and answers requests from a script.
    #[derive(Default)]
    struct Scripted {
        sent: Mutex<Vec<(String, Value)>>,
        answers: Mutex<VecDeque<Result<Value, String>>>,
    }

    #[async_trait]
    impl Peer for Scripted {
        fn notify(&self, method: &str, params: Value) {
            self.sent.lock().unwrap().push((method.into(), params));
        }
        async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
            self.sent.lock().unwrap().push((method.into(), params));
            let next = self.answers.lock().unwrap().pop_front();
            match next {
                Some(a) => a,
                None => std::future::pending().await,
            }
        }
    }

    fn frontend(
        forms: bool,
        answers: Vec<Result<Value, String>>,
    ) -> (Arc<Scripted>, AcpFrontend, Arc<Mutex<Vec<String>>>) {
        let peer = Arc::new(Scripted {
            answers: Mutex::new(answers.into()),
            ..Default::default()
        });
        let logs = Arc::new(Mutex::new(Vec::new()));
        let l = logs.clone();
        let f = AcpFrontend::new(
            peer.clone(),
            forms,
            Logger::new(move |s| l.lock().unwrap().push(s.to_string())),
        );
        f.set_session_id("S");
        (peer, f, logs)
    }

    fn none() -> CancellationToken {
        CancellationToken::new()
    }

    fn call() -> ToolCallStart {
        ToolCallStart {
            id: "call_1".into(),
            name: "bash".into(),
            title: "bash: ls".into(),
            kind: ToolKind::Execute,
            raw_input: json!({"command": "ls"}),
            locations: vec![],
        }
    }

    #[tokio::test]
    async fn events_go_out_as_updates_or_log_lines() {
        let (peer, f, logs) = frontend(false, vec![]);
        f.emit(Event::Text("hi".into()));
        f.emit(Event::Warning("🪝 x".into()));
        assert_eq!(
            *peer.sent.lock().unwrap(),
            vec![(
                "session/update".to_string(),
                json!({"sessionId": "S", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}})
            )]
        );
        assert_eq!(*logs.lock().unwrap(), vec!["🪝 x".to_string()]);
    }

    #[tokio::test]
    async fn permission_answers_and_failures() {
        let sel = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        let (peer, f, _) = frontend(
            false,
            vec![sel("allow_always"), Err("transport closed".into())],
        );
        assert_eq!(
            f.ask_permission(
                PermissionRequest {
                    call: call(),
                    preview: vec![],
                    rule: crate::event::AlwaysRule::Tool,
                },
                &none()
            )
            .await,
            PermissionDecision::AllowAlways
        );
        assert_eq!(
            f.ask_permission(
                PermissionRequest {
                    call: call(),
                    preview: vec![],
                    rule: crate::event::AlwaysRule::Tool,
                },
                &none()
            )
            .await,
            PermissionDecision::RejectOnce
        );
        assert_eq!(peer.sent.lock().unwrap()[0].0, "session/request_permission");
    }

    #[tokio::test]
    async fn a_cancelled_turn_stops_waiting_for_the_client() {
        let (_, f, _) = frontend(true, vec![]);
        let token = CancellationToken::new();
        token.cancel();
        assert_eq!(
            f.ask_permission(
                PermissionRequest {
                    call: call(),
                    preview: vec![],
                    rule: crate::event::AlwaysRule::Tool,
                },
                &token
            )
            .await,
            PermissionDecision::RejectOnce
        );
        let form = Form {
            tool_call_id: "call_1".into(),
            questions: vec![Question {
                question: "?".into(),
                kind: QuestionKind::Text { default: None },
            }],
        };
        assert_eq!(f.ask_user(form, &token).await, FormAnswer::Cancelled);
    }

    #[tokio::test]
    async fn forms_without_form_support() {
        let choice = Question {
            question: "Colour?".into(),
            kind: QuestionKind::Choice {
                options: vec!["red".into(), "blue".into()],
                default: None,
            },
        };
        let confirm = Question {
            question: "Sure?".into(),
            kind: QuestionKind::Confirm { default: None },
        };
        let text = Question {
            question: "Name?".into(),
            kind: QuestionKind::Text { default: None },
        };
        let sel = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));

        let (peer, f, _) = frontend(false, vec![sel("1"), sel("0")]);
        let form = Form {
            tool_call_id: "call_2".into(),
            questions: vec![choice.clone(), confirm.clone()],
        };
        assert_eq!(
            f.ask_user(form, &none()).await,
            FormAnswer::Accepted(vec![
                AnswerValue::Text("blue".into()),
                AnswerValue::Bool(true)
            ])
        );
        assert_eq!(peer.sent.lock().unwrap().len(), 2);

        let (_, f, _) = frontend(false, vec![sel("decline")]);
        let form = Form {
            tool_call_id: "call_2".into(),
            questions: vec![choice.clone(), confirm.clone()],
        };
        assert_eq!(f.ask_user(form, &none()).await, FormAnswer::Declined);

        let (peer, f, _) = frontend(false, vec![]);
        let form = Form {
            tool_call_id: "call_2".into(),
            questions: vec![choice, text],
        };
        assert_eq!(
            f.ask_user(form, &none()).await,
            FormAnswer::Unavailable("the client has no form support".into())
        );
        assert!(peer.sent.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn forms_with_form_support_go_as_one_elicitation() {
        let (peer, f, _) = frontend(
            true,
            vec![Ok(json!({"action": "accept", "content": {"q1": "Bob"}}))],
        );
        let form = Form {
            tool_call_id: "call_3".into(),
            questions: vec![Question {
                question: "Name?".into(),
                kind: QuestionKind::Text { default: None },
            }],
        };
        assert_eq!(
            f.ask_user(form, &none()).await,
            FormAnswer::Accepted(vec![AnswerValue::Text("Bob".into())])
        );
        let sent = peer.sent.lock().unwrap();
        assert_eq!(sent[0].0, "elicitation/create");
        assert_eq!(sent[0].1["message"], "Name?");
    }

    #[tokio::test]
    async fn progress_is_the_last_40_lines_each_update_replacing_the_last() {
        let (peer, f, _) = frontend(false, vec![]);
        for i in 1..=45 {
            f.emit(Event::ToolCallProgress {
                id: "call_1".into(),
                text: format!("line {i}"),
            });
        }
        let last = peer.sent.lock().unwrap().last().unwrap().1.clone();
        let expected: Vec<String> = (6..=45).map(|i| format!("line {i}")).collect();
        assert_eq!(
            last["update"],
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                   "content": [{"type": "content", "content": {"type": "text", "text": expected.join("\n")}}]})
        );
        f.emit(Event::ToolCallFinished(crate::event::ToolCallEnd {
            id: "call_1".into(),
            status: crate::event::ToolStatus::Completed,
            output: "done".into(),
            diffs: vec![],
            title: None,
        }));
        f.emit(Event::ToolCallProgress {
            id: "call_1".into(),
            text: "again".into(),
        });
        let last = peer.sent.lock().unwrap().last().unwrap().1.clone();
        assert_eq!(last["update"]["content"][0]["content"]["text"], "again");
    }

    #[tokio::test]
    async fn relayed_questions_go_to_the_client() {
        use crate::relay::{OptionKind, RelayedOption};
        let sel = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        let (peer, f, _) = frontend(false, vec![sel("their-no"), sel("1"), sel("decline")]);
        let request = RelayedPermission {
            tool_call_id: "call_2".into(),
            title: "rev: bash: rm x".into(),
            options: vec![RelayedOption {
                id: "their-no".into(),
                name: "No".into(),
                kind: OptionKind::RejectOnce,
            }],
        };
        assert_eq!(
            f.ask_relayed_permission(request, &none()).await,
            Some("their-no".into())
        );
        assert_eq!(
            peer.sent.lock().unwrap()[0].1["toolCall"],
            json!({"toolCallId": "call_2", "title": "rev: bash: rm x"})
        );
        // Without form support, a form of choices goes question by question.
        let form = |schema: Value| RelayedForm {
            tool_call_id: "call_2".into(),
            agent: "rev".into(),
            message: "?".into(),
            schema,
        };
        let choice =
            json!({"type": "object", "properties": {"c": {"type": "string", "enum": ["x", "y"]}}});
        assert_eq!(
            f.ask_relayed_form(form(choice.clone()), &none()).await,
            RelayedAnswer::Accepted(json!({"c": "y"}))
        );
        assert_eq!(
            f.ask_relayed_form(form(choice), &none()).await,
            RelayedAnswer::Declined
        );
        let text = json!({"type": "object", "properties": {"t": {"type": "string"}}});
        assert_eq!(
            f.ask_relayed_form(form(text), &none()).await,
            RelayedAnswer::Unavailable("the client has no form support".into())
        );
    }
}
