//! The `edit_file` tool (docs/tools.md): replaces the one place `old_text` matches. When the exact
//! text is not there, it takes what a small model meant and never what it did not: a ladder of
//! strategies in order of risk (locate.rs), readings of `old_text` as numbered lines, a patch or
//! escaped text (readings.rs), the change replayed on the file's own lines (merge.rs), and a
//! refusal that shows the closest lines and the difference (closest.rs). The file's line endings
//! and encoding (the decoder `read_file` shares, tools/decode.rs) are kept.

mod apply;
#[cfg(test)]
mod cases;
mod closest;
#[cfg(test)]
mod corpus;
mod exact;
mod keys;
mod locate;
mod merge;
mod readings;
mod text;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::decode;
use super::write_file::{path_location, path_title};
use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::{FileDiff, Tally, ToolKind};
use crate::paths;
use crate::sandbox::Sandbox;
use crate::writer::{self, Check, FileKind};
use apply::Outcome;

pub const NAME: &str = "edit_file";

#[derive(Default)]
pub struct EditFile {
    /// Edits outside it are refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(EditFile {
        sandbox: Arc::clone(setup.sandbox),
    }))
}

// The names other agents taught the models (Claude Code's `file_path`, `old_string`,
// `new_string`; OpenCode's camel case) are accepted too, without showing in the schema (a `///`
// comment here would be sent to the model as the schema's description).
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    #[serde(alias = "file_path", alias = "filePath")]
    path: String,
    /// Exact text to replace
    #[serde(alias = "old_string", alias = "oldString")]
    old_text: String,
    #[serde(alias = "new_string", alias = "newString")]
    new_text: String,
    /// Replace every match
    #[serde(alias = "replaceAll")]
    replace_all: Option<bool>,
}

impl Describe for EditFile {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Replace old_text with new_text in a file. old_text must match exactly once unless replace_all."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Edit
    }
    fn title(&self, args: &Value) -> String {
        path_title(NAME, args)
    }
    fn locations(&self, args: &Value, cwd: &Path) -> Vec<PathBuf> {
        path_location(args, cwd)
    }
    fn tally(&self) -> Option<Tally> {
        Some(Tally::FileOp)
    }
}

#[async_trait]
impl TypedTool for EditFile {
    type Args = Args;

    fn gated(&self, _args: &Args) -> bool {
        true
    }
    fn preview(&self, args: &Args, cwd: &Path) -> Vec<FileDiff> {
        match plan(args, cwd) {
            Ok(Planned::Edit { diff, .. }) => vec![diff],
            Ok(Planned::Unchanged(_)) | Err(_) => Vec::new(),
        }
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let shown = args.path.as_str();
        let abs = paths::resolve(call.cwd, shown);
        if let Err(refused) = self.sandbox.check_read(&abs) {
            return ToolOutput::not_run(refused);
        }
        if let Err(refused) = self.sandbox.check_write(call.cwd, &abs) {
            return ToolOutput::not_run(refused);
        }
        let (diff, summary, bytes) = match plan(&args, call.cwd) {
            Ok(Planned::Edit {
                diff,
                summary,
                bytes,
            }) => (diff, summary, bytes),
            Ok(Planned::Unchanged(text)) => return ToolOutput::completed(text),
            Err(out) => return out,
        };
        let check = |p: &Path| self.sandbox.check_write(call.cwd, p);
        if let Err(e) = writer::write_noted(
            &diff.path,
            shown,
            &bytes,
            FileKind::Ordinary,
            Check::Fenced(&check),
            call.journal(),
        ) {
            return ToolOutput::not_run(e.to_string());
        }
        let mut out = ToolOutput::completed(format!("edited {shown}: {summary}"));
        out.diffs.push(diff);
        out
    }
}

/// What an edit would do.
enum Planned {
    /// The file's change (as text), a phrase saying what was done, and the bytes to write.
    Edit {
        diff: FileDiff,
        summary: String,
        bytes: Vec<u8>,
    },
    /// The edit changes nothing: the text for the model.
    Unchanged(String),
}

/// Reads the file and applies the edit in memory; `Err` is the failed output for the model.
fn plan(args: &Args, cwd: &Path) -> Result<Planned, ToolOutput> {
    let shown = args.path.as_str();
    let abs = paths::resolve(cwd, shown);
    let original = fs::read(&abs).map_err(|e| ToolOutput::not_run(explain(shown, &abs, &e)))?;
    let Ok(decoded) = decode::decode(original) else {
        return Err(ToolOutput::not_run(format!(
            "{shown} is not a text file; edit_file cannot change it"
        )));
    };
    let all = args.replace_all.unwrap_or(false);
    let (text, mut summary, before) =
        match apply::apply(decoded.text, &args.old_text, &args.new_text, all, shown) {
            Outcome::Edited {
                text,
                summary,
                before,
            } => (text, summary, before),
            Outcome::Already(text) => return Ok(Planned::Unchanged(text)),
            Outcome::Refused(why) => return Err(ToolOutput::not_run(why)),
        };
    if text == before {
        return Ok(Planned::Unchanged(format!(
            "{shown} is unchanged: new_text is the same as the text it replaces"
        )));
    }
    let bytes = decode::encode(&text, decoded.encoding).map_err(|c| {
        ToolOutput::not_run(format!(
            "new_text has {c} (U+{:04X}), which {shown} cannot hold: it is {} text; nothing was changed",
            u32::from(c),
            decoded.encoding.label().unwrap_or("UTF-8")
        ))
    })?;
    if let Some(name) = decoded.encoding.label() {
        summary.push_str(&format!("; the file stays {name}"));
    }
    Ok(Planned::Edit {
        diff: FileDiff {
            path: abs,
            old_text: Some(before),
            new_text: text,
        },
        summary,
        bytes,
    })
}

fn explain(shown: &str, abs: &Path, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => format!(
            "{shown} does not exist ({}); check the path, or create the file with write_file",
            crate::paths::for_model(abs)
        ),
        io::ErrorKind::IsADirectory => format!("{shown} is a directory, not a file"),
        _ => format!("{shown} cannot be read: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The aliases are accepted but not offered: the schema the model sees is the one it always was.
    #[test]
    fn aliases_parse_and_stay_out_of_the_schema() {
        assert_eq!(
            super::super::schema_of::<Args>(),
            json!({
                "type": "object",
                "required": ["path", "old_text", "new_text"],
                "properties": {
                    "path": {"type": "string"},
                    "old_text": {"description": "Exact text to replace", "type": "string"},
                    "new_text": {"type": "string"},
                    "replace_all": {"description": "Replace every match", "type": "boolean"}
                }
            })
        );
        for args in [
            json!({"file_path": "a", "old_string": "x", "new_string": "y"}),
            json!({"filePath": "a", "oldString": "x", "newString": "y", "replaceAll": true}),
        ] {
            let parsed: Args = serde_json::from_value(args).unwrap();
            assert_eq!((parsed.path.as_str(), parsed.old_text.as_str()), ("a", "x"));
        }
    }
}
