//! The `plan` tool (tools.md): one plan per session, a title and ordered steps, which the model
//! creates, extends and checks off. Every change is shown to the user (ACP `plan` update, a
//! checklist in the terminal) and saved with the session.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::{Plan, PlanStatus, PlanStep, ToolKind};

pub const NAME: &str = "plan";

pub struct PlanTool {
    /// The session's plan (saved with the session, cleared by `/new`).
    pub plan: Arc<Mutex<Option<Plan>>>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(PlanTool {
        plan: Arc::clone(setup.plan),
    }))
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Action {
    Create,
    Add,
    Update,
    Show,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Add => "add",
            Action::Update => "update",
            Action::Show => "show",
        }
    }
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
    Skipped,
}

impl From<Status> for PlanStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Pending => PlanStatus::Pending,
            Status::InProgress => PlanStatus::InProgress,
            Status::Completed => PlanStatus::Completed,
            Status::Skipped => PlanStatus::Skipped,
        }
    }
}

// `add` names a step by its text, `update` by its number (a number written as a string is
// accepted: small models do that). No doc comment: it would be sent in the schema.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum StepArg {
    Number(usize),
    Text(String),
}

#[derive(Deserialize, JsonSchema)]
pub struct Args {
    action: Action,
    /// create
    title: Option<String>,
    /// create
    steps: Option<Vec<String>>,
    /// add: its text; update: its number
    step: Option<StepArg>,
    /// add: after this step number
    after: Option<usize>,
    /// update
    status: Option<Status>,
    /// update
    note: Option<String>,
}

impl Describe for PlanTool {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Keep a step-by-step plan the user sees. Steps are numbered from 1."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Think
    }
    fn title(&self, args: &Value) -> String {
        match args.get("action").and_then(Value::as_str) {
            Some(a) => format!("{NAME} {a}"),
            None => NAME.into(),
        }
    }
}

#[async_trait]
impl TypedTool for PlanTool {
    type Args = Args;

    /// Every action but `show` changes the plan.
    fn gated(&self, args: &Args) -> bool {
        args.action != Action::Show
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let action = args.action;
        let changed = {
            let Ok(mut slot) = self.plan.lock() else {
                return ToolOutput::not_run("[plan: the session's plan is unavailable]");
            };
            if let Err(e) = apply(&mut slot, args) {
                return ToolOutput::not_run(format!("[plan {}: {e}]", action.name()));
            }
            slot.clone()
        };
        match changed {
            Some(plan) => {
                if action != Action::Show {
                    call.report_plan(&plan);
                }
                ToolOutput::completed(checklist(&plan))
            }
            None => ToolOutput::completed("No plan yet: create one with action \"create\"."),
        }
    }
}

/// Applies one action to the session's plan; the error is for the model.
fn apply(slot: &mut Option<Plan>, args: Args) -> Result<(), String> {
    match args.action {
        Action::Show => Ok(()),
        Action::Create => {
            let title = args.title.filter(|t| !t.trim().is_empty());
            let steps = args.steps.unwrap_or_default();
            let steps: Vec<String> = steps.into_iter().filter(|s| !s.trim().is_empty()).collect();
            match (title, steps.is_empty()) {
                (None, _) => Err("give a title and steps (a list of strings)".into()),
                (Some(_), true) => {
                    Err("give at least one step in steps (a list of strings)".into())
                }
                (Some(title), false) => {
                    *slot = Some(Plan {
                        title,
                        steps: steps.into_iter().map(pending).collect(),
                    });
                    Ok(())
                }
            }
        }
        Action::Add => {
            let plan = slot.as_mut().ok_or(NO_PLAN)?;
            let text = match args.step {
                Some(StepArg::Text(t)) if !t.trim().is_empty() => t,
                Some(StepArg::Text(_)) | Some(StepArg::Number(_)) | None => {
                    return Err("give the new step's text in step".into());
                }
            };
            let at = match args.after {
                None => plan.steps.len(),
                Some(n) if n <= plan.steps.len() => n,
                Some(n) => return Err(out_of_range("after", n, plan.steps.len())),
            };
            plan.steps.insert(at, pending(text));
            Ok(())
        }
        Action::Update => {
            let plan = slot.as_mut().ok_or(NO_PLAN)?;
            let n = match args.step {
                Some(StepArg::Number(n)) => n,
                Some(StepArg::Text(t)) => t.trim().parse().map_err(|_| {
                    format!(
                        "step must be a step's number (1 to {}), got {t:?}",
                        plan.steps.len()
                    )
                })?,
                None => return Err("give the step's number in step".into()),
            };
            let count = plan.steps.len();
            let step = n
                .checked_sub(1)
                .and_then(|i| plan.steps.get_mut(i))
                .ok_or_else(|| out_of_range("step", n, count))?;
            if args.status.is_none() && args.note.is_none() {
                return Err("give a status, a note, or both".into());
            }
            if let Some(s) = args.status {
                step.status = s.into();
            }
            if let Some(note) = args.note {
                step.note = (!note.trim().is_empty()).then_some(note);
            }
            Ok(())
        }
    }
}

const NO_PLAN: &str = "there is no plan yet: create one first";

fn pending(content: String) -> PlanStep {
    PlanStep {
        content,
        status: PlanStatus::Pending,
        note: None,
    }
}

fn out_of_range(field: &str, n: usize, count: usize) -> String {
    let lowest = if field == "after" { 0 } else { 1 };
    format!("{field} must be a step number from {lowest} to {count}, got {n}")
}

/// The plan as the model reads it: the title, then one numbered line per step.
pub fn checklist(plan: &Plan) -> String {
    let mut out = format!("Plan: {}\n", plan.title);
    for (i, step) in plan.steps.iter().enumerate() {
        let (mark, word) = match step.status {
            PlanStatus::Pending => (' ', ""),
            PlanStatus::InProgress => ('~', " (in progress)"),
            PlanStatus::Completed => ('x', ""),
            PlanStatus::Skipped => ('-', " (skipped)"),
        };
        let _ = write!(out, "{}. [{mark}] {}{word}", i + 1, step.content);
        if let Some(note) = &step.note {
            let _ = write!(out, " — {note}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn run(slot: &mut Option<Plan>, args: Value) -> Result<(), String> {
        apply(slot, serde_json::from_value(args).unwrap())
    }

    #[test]
    fn the_four_actions_and_the_checklist() {
        let mut p = None;
        run(
            &mut p,
            json!({"action": "create", "title": "Fix it", "steps": ["read", "fix", "test"]}),
        )
        .unwrap();
        run(
            &mut p,
            json!({"action": "add", "step": "first", "after": 0}),
        )
        .unwrap();
        run(&mut p, json!({"action": "add", "step": "docs"})).unwrap();
        run(
            &mut p,
            json!({"action": "update", "step": 1, "status": "completed"}),
        )
        .unwrap();
        run(
            &mut p,
            json!({"action": "update", "step": "2", "status": "in_progress", "note": "slow"}),
        )
        .unwrap();
        run(
            &mut p,
            json!({"action": "update", "step": 5, "status": "skipped"}),
        )
        .unwrap();
        run(&mut p, json!({"action": "show"})).unwrap();
        assert_eq!(
            checklist(p.as_ref().unwrap()),
            "Plan: Fix it\n1. [x] first\n2. [~] read (in progress) — slow\n3. [ ] fix\n\
             4. [ ] test\n5. [-] docs (skipped)\n"
        );
    }

    #[test]
    fn mistakes_are_explained() {
        let mut p = None;
        assert_eq!(
            run(&mut p, json!({"action": "add", "step": "x"})),
            Err(NO_PLAN.to_string())
        );
        assert_eq!(
            run(
                &mut p,
                json!({"action": "create", "title": "t", "steps": []})
            ),
            Err("give at least one step in steps (a list of strings)".to_string())
        );
        run(
            &mut p,
            json!({"action": "create", "title": "t", "steps": ["a"]}),
        )
        .unwrap();
        assert_eq!(
            run(
                &mut p,
                json!({"action": "update", "step": 3, "status": "completed"})
            ),
            Err("step must be a step number from 1 to 1, got 3".to_string())
        );
        assert_eq!(
            run(
                &mut p,
                json!({"action": "update", "step": 0, "status": "completed"})
            ),
            Err("step must be a step number from 1 to 1, got 0".to_string())
        );
        assert_eq!(
            run(&mut p, json!({"action": "add", "step": "b", "after": 2})),
            Err("after must be a step number from 0 to 1, got 2".to_string())
        );
        assert_eq!(
            run(&mut p, json!({"action": "update", "step": 1})),
            Err("give a status, a note, or both".to_string())
        );
        assert_eq!(
            run(
                &mut p,
                json!({"action": "update", "step": "one", "status": "completed"})
            ),
            Err("step must be a step's number (1 to 1), got \"one\"".to_string())
        );
    }
}
