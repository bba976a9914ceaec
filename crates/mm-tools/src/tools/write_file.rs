//! The `write_file` tool (docs/tools.md), and the title and location the path tools share.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::{FileDiff, Tally, ToolKind};
use crate::paths;
use crate::sandbox::Sandbox;
use crate::writer::{self, Check, FileKind, WriteError};

pub const NAME: &str = "write_file";

#[derive(Default)]
pub struct WriteFile {
    /// Writes outside it are refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(WriteFile {
        sandbox: Arc::clone(setup.sandbox),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    path: String,
    content: String,
}

impl Describe for WriteFile {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Create or overwrite a file with the given content (parent directories are created)."
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
impl TypedTool for WriteFile {
    type Args = Args;

    fn gated(&self, _args: &Args) -> bool {
        true
    }
    fn preview(&self, args: &Args, cwd: &Path) -> Vec<FileDiff> {
        change(&args.path, args.content.clone(), cwd)
            .map(|d| vec![d])
            .unwrap_or_default()
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let shown = args.path.clone();
        let abs = paths::resolve(call.cwd, &args.path);
        if let Err(refused) = self.sandbox.check_write(call.cwd, &abs) {
            return ToolOutput::not_run(refused);
        }
        let diff = match change(&args.path, args.content, call.cwd) {
            Ok(d) => d,
            Err(e) => return ToolOutput::not_run(e.to_string()),
        };
        let check = |p: &Path| self.sandbox.check_write(call.cwd, p);
        let bytes = diff.new_text.as_bytes();
        if let Err(e) = writer::write_noted(
            &diff.path,
            &shown,
            bytes,
            FileKind::Ordinary,
            Check::Fenced(&check),
            call.journal(),
        ) {
            return ToolOutput::not_run(e.to_string());
        }
        let mut out =
            ToolOutput::completed(format!("wrote {} bytes to {shown}", diff.new_text.len()));
        out.diffs.push(diff);
        out
    }
}

/// The change a call makes: the file's absolute path, its content now (`None`: it does not
/// exist) and the new content.
fn change(path: &str, content: String, cwd: &Path) -> Result<FileDiff, WriteError> {
    let abs = paths::resolve(cwd, path);
    if abs.is_dir() {
        return Err(WriteError::IsDirectory(path.to_string()));
    }
    let old_text = match fs::read(&abs) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(WriteError::Io {
                path: path.to_string(),
                source: e,
            });
        }
    };
    Ok(FileDiff {
        path: abs,
        old_text,
        new_text: content,
    })
}

/// `<tool>: <path>`, or the tool's name when the arguments carry no path.
pub(crate) fn path_title(tool: &str, args: &Value) -> String {
    match path_arg(args) {
        Some(p) => format!("{tool}: {p}"),
        None => tool.to_string(),
    }
}

/// The absolute path named by the arguments' `path`, if any.
pub(crate) fn path_location(args: &Value, cwd: &Path) -> Vec<PathBuf> {
    path_arg(args)
        .map(|p| vec![paths::resolve(cwd, p)])
        .unwrap_or_default()
}

/// The `path` argument, or the names `edit_file` accepts for it (`file_path`, `filePath`), so
/// that a call is announced and gated with its file whichever name the model used.
fn path_arg(args: &Value) -> Option<&str> {
    ["path", "file_path", "filePath"]
        .iter()
        .find_map(|k| args.get(k).and_then(Value::as_str))
}
