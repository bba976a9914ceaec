//! The `edit_file` tool (docs/tools.md): replaces a unique exact match, tolerating CRLF files and
//! (when unambiguous) a model's wrong indentation.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::write_file::{path_location, path_title};
use super::{CallContext, ToolOutput, ToolSetup, TypedTool};
use crate::event::{FileDiff, Tally, ToolKind};
use crate::paths;
use crate::sandbox::Sandbox;
use crate::writer::{self, Check, FileKind};

pub const NAME: &str = "edit_file";
/// Lines of context shown around the closest match when nothing matches.
const CONTEXT_LINES: usize = 2;

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

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Args {
    path: String,
    /// Exact text to replace
    old_text: String,
    new_text: String,
    /// Replace every match
    replace_all: Option<bool>,
}

#[async_trait]
impl TypedTool for EditFile {
    type Args = Args;

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
    fn gated(&self, _args: &Value) -> bool {
        true
    }
    fn preview(&self, args: Args, cwd: &Path) -> Vec<FileDiff> {
        match plan(&args, cwd) {
            Ok(Planned::Edit { diff, .. }) => vec![diff],
            Ok(Planned::Unchanged(_)) | Err(_) => Vec::new(),
        }
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let shown = args.path.as_str();
        let abs = paths::resolve(call.cwd, shown);
        if let Err(refused) = self.sandbox.check_write(call.cwd, &abs) {
            return ToolOutput::not_run(refused);
        }
        let (diff, summary) = match plan(&args, call.cwd) {
            Ok(Planned::Edit { diff, summary }) => (diff, summary),
            Ok(Planned::Unchanged(text)) => return ToolOutput::completed(text),
            Err(out) => return out,
        };
        let check = |p: &Path| self.sandbox.check_write(call.cwd, p);
        let bytes = diff.new_text.as_bytes();
        if let Err(e) = writer::write_noted(
            &diff.path,
            shown,
            bytes,
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
    /// The file's change, and a phrase saying what was done.
    Edit { diff: FileDiff, summary: String },
    /// The edit changes nothing: the text for the model.
    Unchanged(String),
}

/// Reads the file and applies the edit in memory; `Err` is the failed output for the model.
fn plan(args: &Args, cwd: &Path) -> Result<Planned, ToolOutput> {
    if args.old_text.is_empty() {
        return Err(ToolOutput::not_run(
            "old_text is empty; to create a file or replace all of its content, use write_file",
        ));
    }
    let shown = args.path.as_str();
    let abs = paths::resolve(cwd, shown);
    let original = match fs::read(&abs) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(_) => {
                return Err(ToolOutput::not_run(format!(
                    "{shown} is not a UTF-8 text file; edit_file cannot change it"
                )));
            }
        },
        Err(e) => return Err(ToolOutput::not_run(explain(shown, &abs, &e))),
    };
    let crlf = uses_crlf(&original);
    // A file mostly in LF keeps its few CRLF lines untouched where the edit is not.
    let content = if crlf {
        original.replace("\r\n", "\n")
    } else {
        original.clone()
    };
    let old = args.old_text.replace("\r\n", "\n");
    let new = args.new_text.replace("\r\n", "\n");
    let replace_all = args.replace_all.unwrap_or(false);

    let (edited, summary) = match apply(&content, &old, &new, replace_all) {
        Ok(done) => done,
        Err(why) => return Err(ToolOutput::not_run(why.message(shown))),
    };
    let edited = if crlf {
        edited.replace('\n', "\r\n")
    } else {
        edited
    };
    if edited == original {
        return Ok(Planned::Unchanged(format!(
            "{shown} is unchanged: new_text is the same as the text it replaces"
        )));
    }
    Ok(Planned::Edit {
        diff: FileDiff {
            path: abs,
            old_text: Some(original),
            new_text: edited,
        },
        summary,
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

/// Whether the file's lines mostly end in CRLF (it is written back that way).
fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

/// Why an edit could not be applied.
#[derive(Debug, PartialEq)]
enum NoEdit {
    /// Several exact matches and no `replace_all`: their line numbers.
    Ambiguous(Vec<usize>),
    /// Several matches once whitespace at line ends is ignored: their line numbers.
    AmbiguousLoose(Vec<usize>),
    /// Nothing matches; the closest lines, numbered, if any look alike.
    NotFound(Vec<(usize, String)>),
}

impl NoEdit {
    fn message(&self, shown: &str) -> String {
        let list = |lines: &[usize]| {
            lines
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            NoEdit::Ambiguous(lines) => format!(
                "old_text matches {} times in {shown} (lines {}); include more surrounding lines to make it unique, or set replace_all",
                lines.len(),
                list(lines)
            ),
            NoEdit::AmbiguousLoose(lines) => format!(
                "old_text does not match {shown} exactly; ignoring indentation it matches {} times (lines {}); copy old_text exactly from the file",
                lines.len(),
                list(lines)
            ),
            NoEdit::NotFound(closest) if closest.is_empty() => format!(
                "old_text does not match {shown}, and no line of the file looks like it; read the file and copy old_text exactly"
            ),
            NoEdit::NotFound(closest) => {
                let shown_lines: Vec<String> =
                    closest.iter().map(|(n, l)| format!("{n}: {l}")).collect();
                format!(
                    "old_text does not match {shown}; the closest lines are:\n{}\nCopy old_text exactly from the file.",
                    shown_lines.join("\n")
                )
            }
        }
    }
}

/// The edited text (LF line endings) and a phrase saying what was done.
fn apply(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, String), NoEdit> {
    let starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    match starts.len() {
        0 => loose_apply(content, old, new),
        1 => Ok((
            content.replacen(old, new, 1),
            "replaced 1 occurrence".into(),
        )),
        n if replace_all => Ok((
            content.replace(old, new),
            format!("replaced {n} occurrences"),
        )),
        _ => Err(NoEdit::Ambiguous(
            starts.iter().map(|&i| line_of(content, i)).collect(),
        )),
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Lines without their terminator; a final newline does not start another line.
fn split_lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Matches whole lines ignoring leading and trailing whitespace on each; a unique match is
/// replaced by `new`, re-indented by the difference between the file's and `old`'s indentation.
fn loose_apply(content: &str, old: &str, new: &str) -> Result<(String, String), NoEdit> {
    let file_lines = split_lines(content);
    let old_lines = split_lines(old);
    let k = old_lines.len();
    if old_lines.iter().all(|l| l.trim().is_empty()) || k > file_lines.len() {
        return Err(NoEdit::NotFound(closest(&file_lines, &old_lines)));
    }
    let matches: Vec<usize> = (0..=file_lines.len() - k)
        .filter(|&i| {
            old_lines
                .iter()
                .zip(&file_lines[i..i + k])
                .all(|(o, f)| o.trim() == f.trim())
        })
        .collect();
    let at = match matches.as_slice() {
        [] => return Err(NoEdit::NotFound(closest(&file_lines, &old_lines))),
        [one] => *one,
        many => return Err(NoEdit::AmbiguousLoose(many.iter().map(|i| i + 1).collect())),
    };
    // The first line with content sets the indentation difference.
    let j = old_lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(0);
    let from = leading_ws(old_lines[j]);
    let to = leading_ws(file_lines[at + j]);
    let new_lines: Vec<String> = if new.is_empty() {
        Vec::new()
    } else {
        split_lines(new)
            .into_iter()
            .map(|l| reindent(l, from, to))
            .collect()
    };
    let mut out: Vec<String> = file_lines[..at].iter().map(|s| s.to_string()).collect();
    out.extend(new_lines);
    out.extend(file_lines[at + k..].iter().map(|s| s.to_string()));
    let mut edited = out.join("\n");
    if content.ends_with('\n') && !edited.is_empty() {
        edited.push('\n');
    }
    let summary = format!(
        "no exact match; replaced lines {}-{}, which match old_text when leading/trailing whitespace is ignored, and re-indented new_text to match the file",
        at + 1,
        at + k
    );
    Ok((edited, summary))
}

/// Moves a line from indentation `from` to indentation `to`.
fn reindent(line: &str, from: &str, to: &str) -> String {
    if line.trim().is_empty() {
        return line.to_string();
    }
    if let Some(rest) = line.strip_prefix(from) {
        return format!("{to}{rest}");
    }
    // Less indented than old_text's first line: shift by the difference in width as far as it goes.
    if let Some(extra) = to.strip_prefix(from) {
        return format!("{extra}{line}");
    }
    if let Some(cut) = from.strip_prefix(to) {
        let ws = leading_ws(line);
        let drop = ws.len().min(cut.len());
        return line[drop..].to_string();
    }
    line.to_string()
}

/// The window of the file most like `old`, with some context, numbered from 1.
fn closest(file_lines: &[&str], old_lines: &[&str]) -> Vec<(usize, String)> {
    let wanted: Vec<Vec<(char, char)>> = old_lines.iter().map(|l| bigrams(l)).collect();
    let have: Vec<Vec<(char, char)>> = file_lines.iter().map(|l| bigrams(l)).collect();
    let k = old_lines.len().min(file_lines.len()).max(1);
    let mut best: Option<(f64, usize)> = None;
    for i in 0..file_lines.len().saturating_sub(k - 1) {
        let score: f64 = wanted
            .iter()
            .zip(&have[i..i + k])
            .map(|(w, h)| dice(w, h))
            .sum();
        if score > 0.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    let Some((_, i)) = best else {
        return Vec::new();
    };
    let from = i.saturating_sub(CONTEXT_LINES);
    let to = (i + k + CONTEXT_LINES).min(file_lines.len());
    (from..to)
        .map(|n| (n + 1, file_lines[n].to_string()))
        .collect()
}

/// The sorted character pairs of a line without its surrounding whitespace.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut pairs: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    pairs.sort_unstable();
    pairs
}

/// Dice similarity of two sorted bigram lists (1 for equal lines).
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn exact_single_and_all() {
        assert_eq!(
            apply("a b a", "b", "c", false),
            Ok(("a c a".into(), "replaced 1 occurrence".into()))
        );
        assert_eq!(
            apply("x\ny\nx\n", "x", "z", true),
            Ok(("z\ny\nz\n".into(), "replaced 2 occurrences".into()))
        );
        assert_eq!(
            apply("x\ny\nx\n", "x", "z", false),
            Err(NoEdit::Ambiguous(vec![1, 3]))
        );
    }

    #[test]
    fn loose_match_reindents() {
        let file = "fn f() {\n    if a {\n        b();\n    }\n}\n";
        let (edited, summary) = apply(
            file,
            "if a {\n    b();\n}",
            "if a {\n    c();\n}\nd();",
            false,
        )
        .unwrap_or_default();
        assert_eq!(
            edited,
            "fn f() {\n    if a {\n        c();\n    }\n    d();\n}\n"
        );
        assert_eq!(
            summary,
            "no exact match; replaced lines 2-4, which match old_text when leading/trailing whitespace is ignored, and re-indented new_text to match the file"
        );
    }

    #[test]
    fn loose_match_dedents() {
        let file = "a\n  b\n    c\n";
        let (edited, _) =
            apply(file, "    b\n      c", "    b2\n      c2", false).unwrap_or_default();
        assert_eq!(edited, "a\n  b2\n    c2\n");
    }

    #[test]
    fn no_match_shows_closest_lines() {
        let file = "one\ntwo\nlet total = compute(a, b);\nthree\nfour\nfive\nsix\n";
        assert_eq!(
            apply(file, "let total = compute(a, c);", "x", false),
            Err(NoEdit::NotFound(vec![
                (1, "one".into()),
                (2, "two".into()),
                (3, "let total = compute(a, b);".into()),
                (4, "three".into()),
                (5, "four".into()),
            ]))
        );
        assert_eq!(
            apply("abc\n", "zzz", "x", false),
            Err(NoEdit::NotFound(vec![]))
        );
    }

    #[test]
    fn crlf_detection() {
        assert!(uses_crlf("a\r\nb\r\n"));
        assert!(!uses_crlf("a\nb\n"));
        assert!(!uses_crlf("a\nb\nc\r\n"));
    }
}
