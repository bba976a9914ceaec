//! The `read_file` tool (docs/tools.md): a text file by windows of lines, a directory's listing, or
//! a note that the file is binary; legacy-encoded text is decoded ([`decode`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::write_file::{path_location, path_title};
use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool, decode};
use crate::event::{Tally, ToolKind};
use crate::paths;
use crate::sandbox::Sandbox;

pub const NAME: &str = "read_file";
/// The most lines one call returns.
pub const MAX_LINES: usize = 2000;

#[derive(Default)]
pub struct ReadFile {
    /// With the sandbox on, its hidden places are refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(ReadFile {
        sandbox: Arc::clone(setup.sandbox),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    path: String,
    /// First line, 1-based
    offset: Option<usize>,
    /// Number of lines
    limit: Option<usize>,
}

impl Describe for ReadFile {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Read a text file (at most 2000 lines a call) or list a directory."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Read
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
impl TypedTool for ReadFile {
    type Args = Args;

    fn gated(&self, _args: &Args) -> bool {
        false
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let abs = paths::resolve(call.cwd, &args.path);
        if let Err(refused) = self.sandbox.check_read(&abs) {
            return ToolOutput::not_run(refused);
        }
        let meta = match fs::metadata(&abs) {
            Ok(m) => m,
            Err(e) => return ToolOutput::not_run(explain(&args.path, &abs, &e)),
        };
        if meta.is_dir() {
            return match list_dir(&abs) {
                Ok(listing) => ToolOutput::completed(listing),
                Err(e) => ToolOutput::not_run(explain(&args.path, &abs, &e)),
            };
        }
        let bytes = match fs::read(&abs) {
            Ok(b) => b,
            Err(e) => return ToolOutput::not_run(explain(&args.path, &abs, &e)),
        };
        let decoded = match decode::decode(bytes) {
            Ok(d) => d,
            Err(bytes) => {
                return ToolOutput::completed(format!("[binary file, {} bytes]", bytes.len()));
            }
        };
        let Some(name) = decoded.encoding.label() else {
            return window(&decoded.text, args.offset, args.limit, call.max_output);
        };
        let note = format!("[decoded from {name}]\n");
        let budget = call.max_output.saturating_sub(note.len());
        let mut out = window(&decoded.text, args.offset, args.limit, budget);
        out.text.insert_str(0, &note);
        out
    }
}

/// An error the model can act on.
fn explain(shown: &str, abs: &Path, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => format!(
            "{shown} does not exist ({}); check the path, or list its directory with read_file",
            crate::paths::for_model(abs)
        ),
        io::ErrorKind::PermissionDenied => format!("{shown} cannot be read: permission denied"),
        _ => format!("{shown} cannot be read: {e}"),
    }
}

/// One entry a line, sorted, `/` after directories.
fn list_dir(dir: &Path) -> io::Result<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        // Follows symlinks, so a link to a directory reads as one.
        if entry.path().is_dir() {
            name.push('/');
        }
        names.push(name);
    }
    if names.is_empty() {
        return Ok("[empty directory]".into());
    }
    names.sort();
    Ok(names.join("\n"))
}

/// The lines asked for, at most [`MAX_LINES`] and `max_chars` characters; a window that is not
/// the whole file starts with `[lines A-B of N; pass offset to read on]`.
fn window(text: &str, offset: Option<usize>, limit: Option<usize>, max_chars: usize) -> ToolOutput {
    if text.is_empty() {
        return ToolOutput::completed("[empty file]");
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    let first = offset.unwrap_or(1).max(1);
    if first > total {
        return ToolOutput::not_run(format!(
            "offset {first} is past the end of the file ({total} lines)"
        ));
    }
    let limit = limit.unwrap_or(MAX_LINES).clamp(1, MAX_LINES);
    // Room for the header line.
    let budget = max_chars.saturating_sub(64);
    let mut body = String::new();
    let mut used = 0;
    let mut last = first - 1;
    for line in lines.iter().skip(first - 1).take(limit) {
        let n = line.chars().count();
        if last >= first && used + n > budget {
            break;
        }
        body.push_str(line);
        used += n;
        last += 1;
    }
    if first == 1 && last == total {
        return ToolOutput::completed(body);
    }
    ToolOutput::completed(format!(
        "[lines {first}-{last} of {total}; pass offset to read on]\n{body}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        let text: String = (1..=5).map(|i| format!("l{i}\n")).collect();
        assert_eq!(window(&text, None, None, 1000).text, text);
        assert_eq!(
            window(&text, Some(2), Some(2), 1000).text,
            "[lines 2-3 of 5; pass offset to read on]\nl2\nl3\n"
        );
        // A budget too small for two lines still gives one.
        assert_eq!(
            window(&text, Some(4), None, 66).text,
            "[lines 4-4 of 5; pass offset to read on]\nl4\n"
        );
        let past = window(&text, Some(9), None, 1000);
        assert_eq!(past.text, "offset 9 is past the end of the file (5 lines)");
        assert_eq!(past.status(), crate::event::ToolStatus::Failed);
        // No final newline: the last line still counts.
        assert_eq!(
            window("a\nb", Some(2), None, 1000).text,
            "[lines 2-2 of 2; pass offset to read on]\nb"
        );
    }
}
