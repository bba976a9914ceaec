//! The one dispatcher every tool call goes through:
//! announce → loop detector → `preToolCall` hooks → permission gate → run → `postToolCall` hooks
//! → finish. The engine never branches on a tool's name; the tools never run the gates.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::gate::{self, GateVerdict};
use super::repeat::{RepeatDetector, Verdict};
use super::{RecapKind, Tool, ToolContext, ToolOutput, cap_output};
use crate::event::{Event, Frontend, Plan, ToolCallEnd, ToolCallStart, ToolKind, ToolStatus};
use crate::history::ToolCall;
use crate::hooks::{HookDecision, HookEvent, HookResult, Hooks};
use crate::skills::Catalogue;

/// What a call runs with, for the length of a turn.
pub struct CallEnv<'a> {
    pub tools: &'a [Arc<dyn Tool>],
    pub cwd: &'a Path,
    pub session_id: &'a str,
    pub yolo: bool,
    pub max_output: usize,
    pub bash_timeout: u64,
    pub frontend: &'a dyn Frontend,
    pub plan: &'a Mutex<Option<Plan>>,
    pub skills: &'a Catalogue,
    pub hooks: &'a Hooks,
}

/// The mutable state of the gates within a session and a turn.
pub struct Gates<'a> {
    pub repeat: &'a mut RepeatDetector,
    pub allow_always: &'a mut HashSet<String>,
    pub never: &'a mut HashSet<String>,
}

/// The outcome of one dispatched call.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatched {
    /// The text the model receives.
    pub output: String,
    pub status: ToolStatus,
    /// The tool itself ran.
    pub ran: bool,
    /// What the call counts as in the turn's recap (`None` when it did not run).
    pub recap: RecapKind,
    /// The loop detector ends the turn with this line.
    pub end_turn: Option<String>,
}

/// Finds a tool by name.
pub fn find<'t>(tools: &'t [Arc<dyn Tool>], name: &str) -> Option<&'t Arc<dyn Tool>> {
    tools.iter().find(|t| t.name() == name)
}

/// The arguments as a JSON value: a string when they are not JSON.
pub fn parse_raw_args(arguments: &str) -> (Value, Option<String>) {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return (Value::Object(Default::default()), None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => (v, None),
        Err(e) => (Value::String(arguments.to_string()), Some(e.to_string())),
    }
}

/// How a call is announced (title, kind, locations), as the live tool gives it; an unknown
/// tool: its name and `execute`.
pub fn describe(
    tools: &[Arc<dyn Tool>],
    call_ref: &str,
    name: &str,
    arguments: &str,
    cwd: &Path,
) -> ToolCallStart {
    let (args, _) = parse_raw_args(arguments);
    match find(tools, name) {
        Some(tool) => ToolCallStart {
            id: call_ref.to_string(),
            name: name.to_string(),
            title: tool.title(&args),
            kind: tool.kind(&args),
            locations: tool.locations(&args, cwd),
            raw_input: args,
        },
        None => ToolCallStart {
            id: call_ref.to_string(),
            name: name.to_string(),
            title: name.to_string(),
            kind: ToolKind::Execute,
            raw_input: args,
            locations: Vec::new(),
        },
    }
}

/// Runs one call through every gate, reporting each step to the front end.
pub async fn dispatch(
    env: &CallEnv<'_>,
    gates: Gates<'_>,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> Dispatched {
    let start = describe(env.tools, &call.ref_, &call.name, &call.arguments, env.cwd);
    env.frontend.emit(Event::ToolCallStarted(start.clone()));
    let finish = |output: String, status: ToolStatus, diffs, title: Option<String>| {
        env.frontend.emit(Event::ToolCallFinished(ToolCallEnd {
            id: call.ref_.clone(),
            status,
            output: output.clone(),
            diffs,
            title,
        }));
        output
    };
    let refused = |output: String| Dispatched {
        output: finish(output, ToolStatus::Failed, Vec::new(), None),
        status: ToolStatus::Failed,
        ran: false,
        recap: RecapKind::None,
        end_turn: None,
    };

    let (args, json_error) = parse_raw_args(&call.arguments);
    match gates.repeat.check(&call.name, &args) {
        Verdict::Run => {}
        Verdict::Block(text) => return refused(text),
        Verdict::EndTurn(line) => {
            let mut d = refused(line.clone());
            d.end_turn = Some(line);
            return d;
        }
    }
    let Some(tool) = find(env.tools, &call.name) else {
        let names: Vec<&str> = env.tools.iter().map(|t| t.name()).collect();
        return refused(format!(
            "[unknown tool {:?}; the tools are: {}]",
            call.name,
            names.join(", ")
        ));
    };
    if let Some(e) = json_error {
        return refused(format!(
            "[bad arguments for {}: not valid JSON ({e}); send a JSON object matching the tool's schema]",
            call.name
        ));
    }
    if !args.is_object() {
        return refused(format!(
            "[bad arguments for {}: expected a JSON object, got {args}]",
            call.name
        ));
    }

    if env.hooks.any(HookEvent::PreToolCall, Some(&call.name)) {
        let input = json!({"tool": call.name, "toolCallId": call.ref_, "input": args});
        let r = env
            .hooks
            .run(
                HookEvent::PreToolCall,
                input,
                Some(&call.name),
                env.session_id,
                env.cwd,
                cancel,
            )
            .await;
        warn_failures(env.frontend, &r);
        if let HookDecision::Deny(reason) = r.decision {
            if cancel.is_cancelled() {
                return refused("[cancelled]".to_string());
            }
            let text = format!("[denied by a hook: {reason}]");
            let title = Some(format!("{} — denied by a hook", call.name));
            return Dispatched {
                output: finish(text, ToolStatus::Failed, Vec::new(), title),
                status: ToolStatus::Failed,
                ran: false,
                recap: RecapKind::None,
                end_turn: None,
            };
        }
    }

    let gated = !env.yolo && tool.gated(&args);
    if let GateVerdict::Rejected(text) =
        gate::check(&start, gated, gates.allow_always, gates.never, env.frontend).await
    {
        return refused(text);
    }

    env.frontend.emit(Event::ToolCallRunning {
        id: call.ref_.clone(),
    });
    let ctx = ToolContext {
        cwd: env.cwd,
        call_id: &call.ref_,
        max_output: env.max_output,
        bash_timeout: env.bash_timeout,
        frontend: env.frontend,
        plan: env.plan,
        skills: env.skills,
    };
    // The hooks after the call see the arguments it ran with.
    let args_for_hooks = if env.hooks.any(HookEvent::PostToolCall, Some(&call.name)) {
        args.clone()
    } else {
        Value::Null
    };
    let ToolOutput {
        text,
        status,
        diffs,
    } = tool.run(args, &ctx, cancel).await;
    let mut text = cap_output(&text, env.max_output);
    if env.hooks.any(HookEvent::PostToolCall, Some(&call.name)) {
        let status_name = match status {
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
        };
        let input = json!({"tool": call.name, "toolCallId": call.ref_, "input": args_for_hooks,
                           "output": text, "status": status_name});
        let r = env
            .hooks
            .run(
                HookEvent::PostToolCall,
                input,
                Some(&call.name),
                env.session_id,
                env.cwd,
                cancel,
            )
            .await;
        warn_failures(env.frontend, &r);
        for ctx in r.context {
            text.push('\n');
            text.push_str(ctx.trim_end());
        }
    }
    Dispatched {
        output: finish(text, status, diffs, None),
        status,
        ran: true,
        recap: tool.recap(),
        end_turn: None,
    }
}

fn warn_failures(frontend: &dyn Frontend, r: &HookResult) {
    for f in &r.failures {
        frontend.emit(Event::Warning(f.clone()));
    }
}
