//! The one dispatcher every tool call goes through:
//! announce → loop detector → parse → `preToolCall` hooks → permission gate → run →
//! `postToolCall` hooks → finish. The engine never branches on a tool's name; the tools never
//! run the gates.

use std::path::Path;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::gate::{self, GateVerdict, Rules};
use super::repeat::{RepeatDetector, Verdict};
use super::task::Subagents;
use super::{CallContext, ToolOutput, Toolbox, cap_output, parse_raw_args};
use crate::event::{Event, Frontend, PermissionMode, Tally, ToolCallEnd, ToolStatus};
use crate::history::ToolCall;
use crate::hooks::{HookDecision, HookEvent, HookResult, Hooks};
use crate::writer::Journal;

/// What a call runs with, for the length of a turn.
pub struct TurnEnv<'a> {
    /// The tool set the turn started with.
    pub tools: &'a Toolbox,
    pub cwd: &'a Path,
    pub session_id: &'a str,
    /// The session's mode as the turn started (`ask`, `yolo`, `read-only`).
    pub mode: PermissionMode,
    pub max_output: usize,
    pub frontend: &'a dyn Frontend,
    pub hooks: &'a Hooks,
    /// Where the calls note the files they replace (`/undo`); `None`: nowhere.
    pub journal: Option<&'a Journal>,
    /// What runs a `task` call's child session; `None`: nothing (a child's own calls).
    pub subagents: Option<&'a dyn Subagents>,
}

/// The mutable state of the gates within a session and a turn.
pub struct Gates<'a> {
    pub repeat: &'a mut RepeatDetector,
    /// The session's remembered answers.
    pub rules: &'a mut Rules,
}

/// The outcome of one dispatched call.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatched {
    /// The text the model receives.
    pub output: String,
    pub status: ToolStatus,
    /// What the call counts as in the turn's recap (`None` when it did not run).
    pub tally: Option<Tally>,
    /// The loop detector ends the turn with this line.
    pub end_turn: Option<String>,
}

/// Runs one call through every gate, reporting each step to the front end.
pub async fn dispatch(
    env: &TurnEnv<'_>,
    gates: Gates<'_>,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> Dispatched {
    // The text read as JSON once: the announcement, the loop detector and the parse share it.
    let (args, json_error) = parse_raw_args(&call.arguments);
    let start = env
        .tools
        .describe_args(&call.ref_, &call.name, args.clone(), env.cwd);
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
        tally: None,
        end_turn: None,
    };

    match gates.repeat.check(&call.name, &args) {
        Verdict::Run => {}
        Verdict::Block(text) => return refused(text),
        Verdict::EndTurn(line) => {
            let mut d = refused(line.clone());
            d.end_turn = Some(line);
            return d;
        }
    }
    let Some(tool) = env.tools.get(&call.name) else {
        let names = env.tools.names();
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
    // Once, before anyone sees the call: one that does not fit the tool is answered to the
    // model, and the hooks, the gate and the run share what parsed.
    let args = match tool.parse(args) {
        Ok(parsed) => parsed,
        Err(complaint) => return refused(complaint),
    };

    if env.hooks.any(HookEvent::PreToolCall, Some(&call.name)) {
        let input = json!({"tool": call.name, "toolCallId": call.ref_, "input": args.raw()});
        let r = tool_hooks(env, HookEvent::PreToolCall, &call.name, input, cancel).await;
        if let HookDecision::Deny(reason) = r.decision {
            if cancel.is_cancelled() {
                return refused("[cancelled]".to_string());
            }
            let text = format!("[denied by a hook: {reason}]");
            let title = Some(format!("{} — denied by a hook", call.name));
            return Dispatched {
                output: finish(text, ToolStatus::Failed, Vec::new(), title),
                status: ToolStatus::Failed,
                tally: None,
                end_turn: None,
            };
        }
    }

    let gated = match env.mode {
        PermissionMode::Yolo => tool.always_gated(),
        PermissionMode::Ask => tool.gated(&args) || tool.always_gated(),
        PermissionMode::ReadOnly => {
            if (tool.gated(&args) || tool.always_gated()) && !tool.runs_read_only() {
                return refused(read_only_refusal(&call.name));
            }
            false
        }
    };
    let subject = tool.rule_subject(&args);
    let verdict = gate::check(
        &start,
        gated,
        subject.as_deref(),
        gates.rules,
        || tool.preview(&args, env.cwd),
        env.frontend,
        cancel,
    )
    .await;
    match verdict {
        GateVerdict::Run => {}
        GateVerdict::Rejected(None) => return refused(tool.rejected()),
        GateVerdict::Rejected(Some(reason)) => {
            return refused(gate::rejected_because(&tool.rejected(), &reason));
        }
    }

    env.frontend.emit(Event::ToolCallRunning {
        id: call.ref_.clone(),
    });
    let handle = CallContext::new(
        &call.ref_,
        env.cwd,
        env.max_output,
        cancel,
        env.mode,
        env.frontend,
    )
    .with_session(env.session_id)
    .with_journal(env.journal)
    .with_subagents(env.subagents);
    // The hooks after the call see the arguments it ran with.
    let args_for_hooks = if env.hooks.any(HookEvent::PostToolCall, Some(&call.name)) {
        args.raw().clone()
    } else {
        Value::Null
    };
    let ToolOutput {
        text,
        outcome,
        diffs,
    } = tool.run_parsed(args, &handle).await;
    let status = outcome.status();
    let mut text = cap_output(&text, env.max_output);
    if env.hooks.any(HookEvent::PostToolCall, Some(&call.name)) {
        let status_name = match status {
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
        };
        let input = json!({"tool": call.name, "toolCallId": call.ref_, "input": args_for_hooks,
                           "output": text, "status": status_name});
        let r = tool_hooks(env, HookEvent::PostToolCall, &call.name, input, cancel).await;
        for ctx in r.context {
            text.push('\n');
            text.push_str(ctx.trim_end());
        }
    }
    Dispatched {
        output: finish(text, status, diffs, None),
        status,
        tally: if outcome.ran() { tool.tally() } else { None },
        end_turn: None,
    }
}

/// What the model receives for a gated call in `read-only` mode.
pub fn read_only_refusal(tool: &str) -> String {
    format!("[{tool} refused: read-only mode]")
}

/// Runs the hooks of a tool event; their failures are reported, and the caller reads the
/// decision and the context.
async fn tool_hooks(
    env: &TurnEnv<'_>,
    event: HookEvent,
    tool: &str,
    input: Value,
    cancel: &CancellationToken,
) -> HookResult {
    let r = env
        .hooks
        .run(event, input, Some(tool), env.session_id, env.cwd, cancel)
        .await;
    r.report(env.frontend);
    r
}
