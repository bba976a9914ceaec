//! A `task` call's child session (docs/engine.md, "Subagents"): what mm-tools' `task` tool
//! hands the engine through the dispatcher ([`Subagents`]), since a child session of the same
//! engine needs the engine. The child gets a fresh history (the system prompt and the task),
//! the parent's tools but `task`, its own plan, `tools.task.maxSteps`, and the parent's mode,
//! answers, hooks and fence; its writes join the parent's `/undo` journal, its tokens the
//! parent's totals. Only its final answer is the call's result: nothing else of it enters the
//! parent's history.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Controls, Engine, Recap, Session, SessionServers, StopReason, undo};
use crate::event::{
    ChildEnd, ChildEvent, ChildStep, Event, Form, FormAnswer, Frontend, NetworkAnswer,
    NetworkQuestion, PermissionDecision, PermissionRequest, Usage,
};
use crate::history::{Message, Role};
use crate::relay::{RelayedAnswer, RelayedForm, RelayedPermission};
use crate::sandbox::Passage;
use crate::skills::Catalogue;
use crate::tools::gate::Rules;
use crate::tools::task::{NAME, Subagents};
use crate::tools::{CallContext, ToolOutput, Toolbox};
use mm_core::session::ChildSession;

/// What runs the child sessions of one parent call: what it takes of the parent when the call
/// starts, and what the children spent, which [`Children::fold`] gives back to the parent.
pub(crate) struct Children<'a> {
    engine: &'a Engine,
    frontend: &'a dyn Frontend,
    parent: Parent,
    /// The parent's remembered answers, then the child's (its "always" holds for the parent
    /// afterwards, as an answer given during the parent's turn would).
    rules: Mutex<Rules>,
    spent: Mutex<Spent>,
}

/// What a child inherits of its parent.
struct Parent {
    id: String,
    skills: Arc<Catalogue>,
    /// The parent's tools this turn (the MCP servers' among them).
    tools: Toolbox,
    controls: Controls,
    model: Option<String>,
    model_window: Option<u64>,
    chars_per_token: f64,
    sessions_dir: Result<PathBuf, mm_core::session::OutsideProject>,
    /// The parent's share of the network: a child's refusals count in the parent's turn.
    network: Passage,
}

/// What the children of a call spent.
#[derive(Default)]
struct Spent {
    usage: Usage,
    recap: Recap,
    ran: bool,
    /// Their turns, for the parent's file.
    children: Vec<ChildSession>,
}

impl<'a> Children<'a> {
    /// The children a call of parent `s` may start.
    pub(crate) fn of(
        engine: &'a Engine,
        s: &Session,
        tools: &Toolbox,
        frontend: &'a dyn Frontend,
    ) -> Self {
        Children {
            engine,
            frontend,
            parent: Parent {
                id: s.id.clone(),
                skills: Arc::clone(&s.skills),
                tools: tools.clone(),
                controls: s.controls.clone(),
                model: s.model.clone(),
                model_window: s.model_window,
                chars_per_token: s.chars_per_token,
                sessions_dir: s.sessions_dir.clone(),
                network: s.network.clone(),
            },
            rules: Mutex::new(s.rules.clone()),
            spent: Mutex::new(Spent::default()),
        }
    }

    /// Gives the parent what its children spent: their tokens join its totals (not its
    /// context's measure), their calls the turn's recap, their answers its remembered ones.
    pub(crate) fn fold(self, s: &mut Session, recap: &mut Recap) {
        let spent = self
            .spent
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if !spent.ran {
            return;
        }
        s.usage.add(&spent.usage);
        recap.absorb(spent.recap);
        s.children.extend(spent.children);
        s.rules = self
            .rules
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
    }

    /// A child session with a fresh history: the system prompt of its tools, and the task.
    fn child(&self, id: String, cwd: PathBuf, prompt: &str) -> Session {
        let p = &self.parent;
        let plan = Arc::new(Mutex::new(None));
        let own = self
            .engine
            .tools_for(&id, &cwd, &p.skills, &plan, &p.network);
        // The parent's other tools (its MCP servers'), but `task`: a child starts no child.
        let more = p
            .tools
            .tools()
            .iter()
            .filter(|t| own.get(t.name()).is_none())
            .cloned()
            .collect();
        let tools = own.with(more).without(&[NAME.to_string()]);
        let system = Message::system(self.engine.system_prompt(&cwd, &tools));
        let rules = std::mem::take(&mut *self.rules.lock().unwrap_or_else(PoisonError::into_inner));
        Session {
            id,
            cwd,
            created_at: String::new(),
            title: None,
            controls: p.controls.clone(),
            model: p.model.clone(),
            model_window: p.model_window,
            history: vec![system, Message::user(prompt)],
            usage: Usage::default(),
            last_measure: None,
            last_input: None,
            chars_per_token: p.chars_per_token,
            rules,
            plan,
            skills: Arc::clone(&p.skills),
            tools,
            warnings: Vec::new(),
            sessions_dir: p.sessions_dir.clone(),
            mcp: SessionServers::default(),
            start_hooks: None,
            undo: undo::Undo::new(None),
            parent: Some(p.id.clone()),
            children: Vec::new(),
            network: p.network.clone(),
        }
    }
}

#[async_trait]
impl Subagents for Children<'_> {
    async fn run(&self, description: &str, prompt: &str, call: &CallContext<'_>) -> ToolOutput {
        let id = format!("{}/{}", self.parent.id, call.id);
        let shown = Shown {
            parent: self.frontend,
            call: call.id,
            session: &id,
            title: format!("{NAME}: {description}"),
        };
        shown.step(ChildStep::Started {
            description: description.to_string(),
            cancellable: true,
        });
        let mut child = self.child(id.clone(), call.cwd.to_path_buf(), prompt);
        let mut recap = Recap::default();
        // Its own token: a client may cancel the child alone (`Engine::cancel_child`).
        let cancel = self.engine.running.start(&id, call.cancel);
        let stop = self
            .engine
            .turn_loop(&mut child, &shown, &cancel, &mut recap)
            .await;
        self.engine.running.end(&id);
        // What it wrote is the parent's turn's to undo; what it learnt, the parent's to keep.
        if let Some(journal) = call.journal() {
            journal.absorb(child.undo.journal.take());
        }
        *self.rules.lock().unwrap_or_else(PoisonError::into_inner) =
            std::mem::take(&mut child.rules);
        {
            let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
            spent.usage.add(&child.usage);
            spent.recap.absorb(recap);
            spent.ran = true;
        }
        let count = |role: Role| child.history.iter().filter(|m| m.role == role).count() as u32;
        let cancelled = stop == Ok(StopReason::Cancelled) || cancel.is_cancelled();
        let output = result(
            &child,
            stop,
            self.engine.config.tools.task_max_steps,
            cancelled,
        );
        shown.step(ChildStep::Ended {
            steps: count(Role::Assistant),
            calls: count(Role::Tool),
            end: output.1,
        });
        // Its turns are kept in the parent's file, beside its history.
        let mut messages = std::mem::take(&mut child.history);
        messages.retain(|m| m.role != Role::System);
        self.spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .children
            .push(ChildSession {
                id,
                call: call.id.to_string(),
                description: description.to_string(),
                end: output.1,
                messages,
            });
        output.0
    }

    fn hold(&self, id: &str, parent: &CancellationToken) -> CancellationToken {
        self.engine.running.start(id, parent)
    }

    fn release(&self, id: &str) {
        self.engine.running.end(id);
    }
}

/// The child sessions running in the process, by id: what a client's cancel of one reaches.
#[derive(Default)]
pub(crate) struct Running(Mutex<HashMap<String, CancellationToken>>);

impl Running {
    /// A child starts: its token, which its parent's cancel fires too.
    fn start(&self, id: &str, parent: &CancellationToken) -> CancellationToken {
        let token = parent.child_token();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_string(), token.clone());
        token
    }

    fn end(&self, id: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Cancels the running child `id`; `false` when none runs under that id.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        let token = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned();
        token.map(|t| t.cancel()).is_some()
    }
}

/// The call's result: the child's last answer, and why it stopped when it did not answer.
fn result(
    child: &Session,
    stop: Result<StopReason, crate::TurnError>,
    max_steps: u32,
    cancelled: bool,
) -> (ToolOutput, ChildEnd) {
    // Its last answer after the task (a step that also called tools wrote it on the way).
    let answer = child
        .history
        .iter()
        .skip(2)
        .rev()
        .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
        .map(|m| m.content.trim().to_string())
        .unwrap_or_default();
    let with = |line: String| match answer.is_empty() {
        true => line,
        false => format!("{answer}\n{line}"),
    };
    let cut = |line: String, end| (ToolOutput::interrupted(with(line)), end);
    if cancelled {
        return cut("[task cancelled]".to_string(), ChildEnd::Cancelled);
    }
    match stop {
        Ok(StopReason::EndTurn) if !answer.is_empty() => {
            (ToolOutput::completed(answer), ChildEnd::Answered)
        }
        Ok(StopReason::EndTurn) => cut(
            "[task ended without an answer]".to_string(),
            ChildEnd::Failed,
        ),
        Ok(StopReason::MaxTurnRequests) => cut(
            format!("[task stopped: {max_steps} model calls, the tools.task.maxSteps limit]"),
            ChildEnd::Limit,
        ),
        Ok(StopReason::MaxTokens) => cut(
            "[task stopped: its answer reached the token limit]".to_string(),
            ChildEnd::Limit,
        ),
        Ok(StopReason::Cancelled) => cut("[task cancelled]".to_string(), ChildEnd::Cancelled),
        Err(e) => cut(format!("[task failed: {e}]"), ChildEnd::Failed),
    }
}

/// The child's front end: its events go to the parent's as [`Event::Child`]; its questions
/// are asked on the parent's session, for the `task` call, titled with the task.
struct Shown<'a> {
    parent: &'a dyn Frontend,
    /// The `task` call's ref.
    call: &'a str,
    session: &'a str,
    /// The `task` call's title.
    title: String,
}

impl Shown<'_> {
    fn step(&self, step: ChildStep) {
        self.parent.emit(Event::Child(ChildEvent {
            call: self.call.to_string(),
            session: self.session.to_string(),
            step,
            agent: None,
        }));
    }
}

#[async_trait]
impl Frontend for Shown<'_> {
    fn emit(&self, event: Event) {
        self.step(ChildStep::Event(Box::new(event)));
    }

    async fn ask_permission(
        &self,
        mut request: PermissionRequest,
        cancel: &CancellationToken,
    ) -> PermissionDecision {
        request.call.id = self.call.to_string();
        request.call.title = format!("{} › {}", self.title, request.call.title);
        self.parent.ask_permission(request, cancel).await
    }

    async fn ask_user(&self, mut form: Form, cancel: &CancellationToken) -> FormAnswer {
        form.tool_call_id = self.call.to_string();
        self.parent.ask_user(form, cancel).await
    }

    async fn ask_relayed_permission(
        &self,
        mut request: RelayedPermission,
        cancel: &CancellationToken,
    ) -> Option<String> {
        request.tool_call_id = self.call.to_string();
        request.title = format!("{} › {}", self.title, request.title);
        self.parent.ask_relayed_permission(request, cancel).await
    }

    async fn ask_relayed_form(
        &self,
        mut form: RelayedForm,
        cancel: &CancellationToken,
    ) -> RelayedAnswer {
        form.tool_call_id = self.call.to_string();
        self.parent.ask_relayed_form(form, cancel).await
    }

    async fn ask_network(
        &self,
        mut question: NetworkQuestion,
        cancel: &CancellationToken,
    ) -> NetworkAnswer {
        question.tool_call_id = self.call.to_string();
        question.asker = format!("{} › {}", self.title, question.asker);
        self.parent.ask_network(question, cancel).await
    }
}
