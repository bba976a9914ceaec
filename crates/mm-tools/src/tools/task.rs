//! The `task` tool (tools.md): hands a self-contained task to a child session with a fresh
//! history, whose final answer is the call's result. What runs the child is the engine's
//! ([`Subagents`]): a child session of the same engine needs the engine, which this crate does
//! not know; the dispatcher hands it to the call (docs/architecture.md, "The `task` tool").

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::ToolKind;

pub const NAME: &str = "task";

/// What a call says when nothing can run a child (a child's own calls: it has no `task`).
pub const NO_CHILD: &str = "[task: no child session can be started here]";

/// Runs a `task` call's child session: the engine's, for the length of one parent call.
#[async_trait]
pub trait Subagents: Send + Sync {
    /// Runs the child to its final answer, which is the call's output.
    async fn run(&self, description: &str, prompt: &str, call: &CallContext<'_>) -> ToolOutput;

    /// A child that is not a session of this engine (an `ask_agent` call's conversation) runs
    /// under `id`: its token, which `parent` fires too and a client's cancel of `id` alone
    /// ([`Subagents::release`] once it is over).
    fn hold(&self, id: &str, parent: &CancellationToken) -> CancellationToken;

    /// The child held under `id` is over: its id no longer reaches it.
    fn release(&self, id: &str);
}

pub struct Task;

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(_setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(Task))
}

// No doc comment on the struct: it would be sent in the schema.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    /// 3-6 words naming the task
    description: String,
    /// All the helper needs: it sees nothing of this conversation
    prompt: String,
}

impl Describe for Task {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Give a self-contained task (explore, search, summarise) to a helper with a fresh context and your tools. Only its final answer comes back."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Other
    }
    fn title(&self, args: &Value) -> String {
        match args.get("description").and_then(Value::as_str) {
            Some(d) => format!("{NAME}: {d}"),
            None => NAME.to_string(),
        }
    }
}

#[async_trait]
impl TypedTool for Task {
    type Args = Args;

    // The task asks nothing itself: its child's calls go through the gate as the parent's.
    fn gated(&self, _args: &Args) -> bool {
        false
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        match call.subagents() {
            Some(children) => children.run(&args.description, &args.prompt, call).await,
            None => ToolOutput::not_run(NO_CHILD),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::event::{
        Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionMode, PermissionRequest,
    };
    use crate::tools::Tool;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    struct Silent;

    #[async_trait]
    impl Frontend for Silent {
        fn emit(&self, _event: Event) {}
        async fn ask_permission(
            &self,
            _r: PermissionRequest,
            _c: &CancellationToken,
        ) -> PermissionDecision {
            PermissionDecision::RejectOnce
        }
        async fn ask_user(&self, _f: Form, _c: &CancellationToken) -> FormAnswer {
            FormAnswer::Unavailable("a test".into())
        }
    }

    /// Answers with what it was given.
    struct Echo;

    #[async_trait]
    impl Subagents for Echo {
        async fn run(&self, description: &str, prompt: &str, call: &CallContext<'_>) -> ToolOutput {
            ToolOutput::completed(format!("{} {description}: {prompt}", call.id))
        }
        fn hold(&self, _id: &str, parent: &CancellationToken) -> CancellationToken {
            parent.child_token()
        }
        fn release(&self, _id: &str) {}
    }

    #[tokio::test]
    async fn a_task_runs_through_what_the_engine_hands_it_and_alone_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let args = json!({"description": "find x", "prompt": "look for x"});
        let call = CallContext::new(
            "call_1",
            dir.path(),
            1000,
            &cancel,
            PermissionMode::Ask,
            &Silent,
        );
        assert_eq!(
            Tool::run(&Task, args.clone(), &call).await,
            ToolOutput::not_run(NO_CHILD)
        );
        let call = call.with_subagents(Some(&Echo));
        assert_eq!(
            Tool::run(&Task, args.clone(), &call).await,
            ToolOutput::completed("call_1 find x: look for x")
        );
        assert_eq!(Task.title(&args), "task: find x");
        assert_eq!(Task.title(&json!("x")), "task");
        let parsed = Tool::parse(&Task, args).unwrap();
        assert!(!Tool::gated(&Task, &parsed), "the task itself never asks");
    }
}
