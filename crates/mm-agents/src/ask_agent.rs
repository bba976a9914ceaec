//! The `ask_agent` tool (tools.md, agents.md): the model asks a configured ACP agent. One agent
//! process per (session, agent) is kept for follow-up questions — in this tool instance, which
//! lives as long as its session — and stopped on `/new` ([`Describe::reset`]), when the session
//! goes, or after [`IDLE`] without a question.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::agent_client::{AgentCommand, AgentError, AgentStop, Connection, StartOptions};
use crate::config::AgentConfig;
use crate::event::{ChildEnd, ChildStep, ToolKind};
use crate::process::Supervisor;
use crate::sandbox::Sandbox;
use crate::tasks::Tasks;
use crate::tools::dispatch::read_only_refusal;
use crate::tools::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};

/// How long a kept agent waits for a follow-up before it is stopped.
pub const IDLE: Duration = Duration::from_secs(600);
/// What the model receives when the agent answered with no text.
pub const NO_ANSWER: &str = "[the agent answered nothing]";

pub struct AskAgent {
    agents: BTreeMap<String, AgentConfig>,
    cwd: PathBuf,
    processes: Arc<Supervisor>,
    /// The session's sandbox: the agents it starts run inside its fence.
    sandbox: Arc<Sandbox>,
    depth: u32,
    silence: Duration,
    kept: Pool<Connection>,
}

/// The registration (`mm_engine::BUILTIN`): offered only when agents are configured.
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn crate::tools::Tool>> {
    if setup.config.agents.is_empty() {
        return None;
    }
    Some(Arc::new(AskAgent {
        agents: setup.config.agents.clone(),
        cwd: setup.cwd.to_path_buf(),
        processes: Arc::clone(setup.processes),
        sandbox: Arc::clone(setup.sandbox),
        depth: setup.ask_depth,
        silence: setup.config.model.request_timeout,
        kept: Pool::new(IDLE, setup.processes.tasks().clone()),
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    agent: String,
    question: String,
}

impl Describe for AskAgent {
    fn name(&self) -> &str {
        "ask_agent"
    }
    fn description(&self) -> &str {
        "Ask another agent a question; it remembers earlier questions."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Other
    }
    fn title(&self, args: &Value) -> String {
        match args.get("agent").and_then(Value::as_str) {
            Some(agent) => format!("ask_agent: {agent}"),
            None => "ask_agent".into(),
        }
    }
    fn prompt_section(&self) -> Option<String> {
        let names: Vec<&str> = self.agents.keys().map(String::as_str).collect();
        Some(format!(
            "Agents you can ask with ask_agent: {}.",
            names.join(", ")
        ))
    }
    fn reset(&self) {
        self.kept.clear();
    }
}

#[async_trait]
impl TypedTool for AskAgent {
    type Args = Args;

    /// Not gated: it reaches configured agents only, which run inside the session's fence and
    /// are put in its mode before each question; they ask their own permissions (relayed).
    fn gated(&self, _args: &Args) -> bool {
        false
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let cmd = match AgentCommand::named(&self.agents, &args.agent) {
            Ok(c) => c,
            Err(e) => return ToolOutput::not_run(e.line(&args.agent)),
        };
        // A kept agent that died while idle is replaced, not asked.
        let kept = self
            .kept
            .take(&args.agent)
            .and_then(|mut c| c.usable().then_some(c));
        let mut conn = match kept {
            Some(c) => c,
            None => {
                let opts = StartOptions {
                    cwd: &self.cwd,
                    processes: &self.processes,
                    sandbox: &self.sandbox,
                    depth: self.depth,
                    silence: self.silence,
                };
                match Connection::start(&cmd, &opts, call).await {
                    Ok(c) => c,
                    Err(AgentError::Cancelled) => return ToolOutput::interrupted("[cancelled]"),
                    Err(e) => return ToolOutput::not_run(e.line(&args.agent)),
                }
            }
        };
        // The question and its answer are a child session's, for the front ends that show them,
        // which a client may cancel alone where the session registers it (the parent's turn goes
        // on with the refusal below).
        let held = call.hold_child();
        let own = held.as_ref().map(|h| h.token.clone());
        call.show_child(
            &args.agent,
            ChildStep::Started {
                description: format!("{}: {}", args.agent, first_line(&args.question)),
                cancellable: held.is_some(),
            },
        );
        let asked = own.as_ref().map(|token| call.with_cancel(token));
        let answer = conn
            .ask(&args.question, asked.as_ref().unwrap_or(call))
            .await;
        // Its id no longer reaches it.
        drop(held);
        if conn.usable() {
            self.kept.put(&args.agent, conn);
        }
        let end = match &answer {
            Ok(a) => match a.stop {
                AgentStop::EndTurn => ChildEnd::Answered,
                AgentStop::Cancelled => ChildEnd::Cancelled,
                AgentStop::MaxTokens | AgentStop::MaxTurnRequests => ChildEnd::Limit,
                AgentStop::Refusal => ChildEnd::Failed,
            },
            Err(AgentError::Cancelled) => ChildEnd::Cancelled,
            Err(_) => ChildEnd::Failed,
        };
        // Its model and tool calls are the agent's own, not counted here.
        let (steps, calls) = (0, 0);
        call.show_child(&args.agent, ChildStep::Ended { steps, calls, end });
        match answer {
            Ok(a) => ToolOutput::completed(answer_text(&a.text, a.stop)),
            // The question alone was cancelled (a client's cancel of its child id): the turn
            // goes on, and the model learns the user stopped it.
            Err(AgentError::Cancelled) if !call.cancel.is_cancelled() => ToolOutput::interrupted(
                format!("[the user cancelled the question to {}]", args.agent),
            ),
            Err(AgentError::Cancelled) => ToolOutput::interrupted("[cancelled]"),
            // The words of the dispatcher's own read-only refusal: the model learns the same
            // thing either way.
            Err(AgentError::NoReadOnlyMode) => ToolOutput::not_run(read_only_refusal(self.name())),
            Err(e) => ToolOutput::not_run(e.line(&args.agent)),
        }
    }
}

/// The first line of `text`, for a title.
fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or_default()
}

/// The answer as the model reads it: the text, and why it stopped when it did not just end.
pub fn answer_text(text: &str, stop: AgentStop) -> String {
    let mut out = if text.trim().is_empty() {
        NO_ANSWER.to_string()
    } else {
        text.to_string()
    };
    match stop {
        AgentStop::EndTurn => {}
        AgentStop::MaxTokens
        | AgentStop::MaxTurnRequests
        | AgentStop::Refusal
        | AgentStop::Cancelled => {
            out.push_str(&format!("\n[the agent stopped: {}]", stop.name()));
        }
    }
    out
}

/// Values kept by name until taken, cleared, or idle for too long (then dropped, which for a
/// connection stops its agent).
pub struct Pool<T: Send + 'static> {
    inner: Arc<Mutex<HashMap<String, Kept<T>>>>,
    idle: Duration,
    /// The idle timers are theirs (cut at shutdown).
    tasks: Tasks,
}

struct Kept<T> {
    /// `None` once taken.
    value: Option<T>,
    timer: tokio::task::AbortHandle,
}

impl<T> Drop for Kept<T> {
    fn drop(&mut self) {
        self.timer.abort();
    }
}

impl<T: Send + 'static> Pool<T> {
    pub fn new(idle: Duration, tasks: Tasks) -> Self {
        Pool {
            inner: Arc::new(Mutex::new(HashMap::new())),
            idle,
            tasks,
        }
    }

    /// The value kept under `name`, no longer kept.
    pub fn take(&self, name: &str) -> Option<T> {
        let mut kept = self.inner.lock().ok()?.remove(name)?;
        kept.value.take()
    }

    /// Keeps `value` under `name` until taken, cleared, or idle for the pool's limit.
    pub fn put(&self, name: &str, value: T) {
        let weak: Weak<Mutex<HashMap<String, Kept<T>>>> = Arc::downgrade(&self.inner);
        let idle = self.idle;
        let key = name.to_string();
        let timer = self
            .tasks
            .spawn_until_shutdown(async move {
                tokio::time::sleep(idle).await;
                let expired = weak
                    .upgrade()
                    .and_then(|inner| inner.lock().ok().and_then(|mut m| m.remove(&key)));
                drop(expired);
            })
            .abort_handle();
        if let Ok(mut m) = self.inner.lock() {
            m.insert(
                name.to_string(),
                Kept {
                    value: Some(value),
                    timer,
                },
            );
        }
    }

    /// Drops everything kept.
    pub fn clear(&self) {
        let all: Vec<Kept<T>> = match self.inner.lock() {
            Ok(mut m) => m.drain().map(|(_, k)| k).collect(),
            Err(_) => Vec::new(),
        };
        drop(all);
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Send + 'static> Drop for Pool<T> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_value_is_dropped_after_the_idle_limit_unless_taken() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let pool = Pool::new(Duration::from_secs(600), Tasks::new());
        pool.put("a", Counted(dropped.clone()));
        pool.put("b", Counted(dropped.clone()));
        tokio::time::sleep(Duration::from_secs(300)).await;
        let b = pool.take("b").unwrap();
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        pool.put("b", b);
        tokio::time::sleep(Duration::from_secs(301)).await;
        // `a` has been idle 601 s, `b` 301 s.
        assert_eq!((dropped.load(Ordering::SeqCst), pool.len()), (1, 1));
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert_eq!((dropped.load(Ordering::SeqCst), pool.len()), (2, 0));
    }

    #[tokio::test]
    async fn clearing_drops_everything() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let pool = Pool::new(IDLE, Tasks::new());
        pool.put("a", Counted(dropped.clone()));
        pool.put("b", Counted(dropped.clone()));
        pool.clear();
        assert_eq!((dropped.load(Ordering::SeqCst), pool.is_empty()), (2, true));
        pool.put("c", Counted(dropped.clone()));
        drop(pool);
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn answers_say_why_they_stopped() {
        assert_eq!(answer_text("ok", AgentStop::EndTurn), "ok");
        assert_eq!(answer_text(" ", AgentStop::EndTurn), NO_ANSWER);
        assert_eq!(
            answer_text("part", AgentStop::MaxTokens),
            "part\n[the agent stopped: max_tokens]"
        );
    }
}
