//! Tools: one trait, one file per tool, one dispatcher that runs the gates.

pub mod bash;
pub mod dispatch;
pub mod edit_file;
pub mod gate;
pub mod read_file;
pub mod read_skill;
pub mod repeat;
pub mod write_file;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::event::{FileDiff, Frontend, Plan, ToolKind, ToolStatus};
use crate::skills::Catalogue;

/// What a tool call runs with.
pub struct ToolContext<'a> {
    /// The session's working directory (absolute).
    pub cwd: &'a Path,
    /// The `call_N` ref of this call.
    pub call_id: &'a str,
    /// Characters of any result (the dispatcher caps again; tools that stream output use it to
    /// bound their memory).
    pub max_output: usize,
    /// Default `bash` timeout in seconds.
    pub bash_timeout: u64,
    pub frontend: &'a dyn Frontend,
    /// The session's plan (the plan tool).
    pub plan: &'a Mutex<Option<Plan>>,
    /// The session's skills (`read_skill`).
    pub skills: &'a Catalogue,
}

/// What a tool returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model receives.
    pub text: String,
    pub status: ToolStatus,
    /// File changes, for front ends that show diffs.
    pub diffs: Vec<FileDiff>,
}

impl ToolOutput {
    /// The tool ran.
    pub fn completed(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            status: ToolStatus::Completed,
            diffs: Vec::new(),
        }
    }

    /// The tool did not run, or failed to: the text explains why, for the model to act on.
    pub fn failed(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            status: ToolStatus::Failed,
            diffs: Vec::new(),
        }
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// The description sent to the model: short, it is paid for on every request.
    fn description(&self) -> &str;
    /// The JSON schema of the arguments.
    fn parameters(&self) -> Value;
    fn kind(&self, args: &Value) -> ToolKind;
    /// The title front ends show (`bash: ls`); `args` may be malformed.
    fn title(&self, args: &Value) -> String;
    /// Absolute paths the call involves.
    fn locations(&self, _args: &Value, _cwd: &Path) -> Vec<PathBuf> {
        Vec::new()
    }
    /// What a call of this tool counts as in a turn's recap.
    fn recap(&self) -> RecapKind {
        RecapKind::None
    }
    /// Whether the permission gate asks before this call runs (with `yolo = false`).
    fn gated(&self, args: &Value) -> bool;
    /// Runs the call. Bad arguments are a `failed` output explaining the mistake, never a panic.
    async fn run(
        &self,
        args: Value,
        ctx: &ToolContext<'_>,
        cancel: &CancellationToken,
    ) -> ToolOutput;
}

/// What a call counts as in a turn's recap (acp.md's `[acp] turn done: …` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecapKind {
    None,
    /// Counted once the tool ran.
    Command,
    /// Counted once the tool ran.
    FileOp,
    /// Counted when the call succeeded.
    Skill,
}

/// The tool definition sent to the model.
pub fn wire_definition(tool: &dyn Tool) -> Value {
    serde_json::json!({
        "type": "function",
        "function": {"name": tool.name(), "description": tool.description(), "parameters": tool.parameters()},
    })
}

/// The built-in tools of the engine.
pub fn builtin() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(bash::Bash),
        Arc::new(read_file::ReadFile),
        Arc::new(write_file::WriteFile),
        Arc::new(edit_file::EditFile),
        Arc::new(read_skill::ReadSkill),
    ]
}

/// The JSON schema of an argument struct, trimmed of what the model does not need
/// (`$schema`, `title`) to keep requests small.
pub fn schema_of<T: schemars::JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("$schema");
        m.remove("title");
    }
    v
}

/// Parses a call's arguments, or explains the mistake to the model.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(args.clone()).map_err(|e| {
        ToolOutput::failed(format!(
            "[bad arguments for {tool}: {e}; arguments given: {args}]"
        ))
    })
}

/// Caps a result at `max` characters, keeping the head and the tail with
/// `[… N characters omitted …]` between them.
pub fn cap_output(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head_n = max / 2;
    let tail_n = max - head_n;
    let omitted = n - head_n - tail_n;
    let head: String = text.chars().take(head_n).collect();
    let tail: String = text.chars().skip(n - tail_n).collect();
    format!("{head}\n[… {omitted} characters omitted …]\n{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail() {
        assert_eq!(cap_output("abcdef", 10), "abcdef");
        assert_eq!(
            cap_output("abcdefghij", 4),
            "ab\n[… 6 characters omitted …]\nij"
        );
    }
}
