//! A rename's workspace edit applied to the files: every file checked against the sandbox
//! before any is written, each written through the checked writer, one diff per file.

use std::fmt::Write as _;
use std::path::Path;

use lsp_types::{TextEdit, WorkspaceEdit};

use super::Failure;
use crate::event::FileDiff;
use crate::lsp::text;
use crate::sandbox::Sandbox;
use crate::tools::{CallContext, ToolOutput};
use crate::writer::{self, Check, FileKind};

/// Applies a rename's workspace edit to the files, one diff per file. Every file is checked
/// against the sandbox first (a server may edit through a symlink, or a definition it found
/// outside the project): when one is refused, nothing is written and each refusal is said.
pub(super) fn apply(
    edit: WorkspaceEdit,
    new_name: &str,
    call: &CallContext<'_>,
    sandbox: &Sandbox,
    here: &str,
) -> Result<ToolOutput, Failure> {
    let cwd = call.cwd;
    let mut per_file: Vec<(String, Vec<TextEdit>)> = Vec::new();
    let mut add =
        |uri: String, edits: Vec<TextEdit>| match per_file.iter_mut().find(|(u, _)| *u == uri) {
            Some((_, e)) => e.extend(edits),
            None => per_file.push((uri, edits)),
        };
    let mut skipped_ops = 0;
    if let Some(changes) = edit.changes {
        for (uri, edits) in changes {
            add(uri.as_str().to_string(), edits);
        }
    }
    match edit.document_changes {
        None => {}
        Some(lsp_types::DocumentChanges::Edits(list)) => {
            for e in list {
                add(
                    e.text_document.uri.as_str().to_string(),
                    plain_edits(e.edits),
                );
            }
        }
        Some(lsp_types::DocumentChanges::Operations(ops)) => {
            for op in ops {
                match op {
                    lsp_types::DocumentChangeOperation::Edit(e) => add(
                        e.text_document.uri.as_str().to_string(),
                        plain_edits(e.edits),
                    ),
                    lsp_types::DocumentChangeOperation::Op(_) => skipped_ops += 1,
                }
            }
        }
    }
    per_file.retain(|(_, e)| !e.is_empty());
    if per_file.is_empty() {
        return Err(Failure::During(format!(
            "the server found nothing to rename at {here}"
        )));
    }
    per_file.sort_by(|a, b| a.0.cmp(&b.0));
    // Every file is checked before any is written: a rename is applied whole or not at all.
    let mut planned = Vec::new();
    for (uri, edits) in per_file {
        let Some(path) = text::path_of(&uri) else {
            return Err(Failure::During(format!(
                "the server asked to edit {uri}, not a file"
            )));
        };
        let old = std::fs::read(&path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| Failure::During(format!("could not read {}: {e}", path.display())))?;
        let new = text::apply_edits(&old, &edits)
            .map_err(|e| Failure::During(format!("{e} for {}", path.display())))?;
        planned.push((path, old, new, edits.len()));
    }
    let shown_of = |path: &Path| crate::paths::for_model_in(cwd, path);
    let refusals: Vec<String> = planned
        .iter()
        .filter_map(|(path, ..)| {
            let refused = sandbox.check_write(cwd, path).err()?;
            Some(format!("{}: {refused}", shown_of(path)))
        })
        .collect();
    if !refusals.is_empty() {
        return Ok(ToolOutput::not_run(format!(
            "[lsp: the rename to {new_name} was not done, nothing was written: the sandbox refuses {} of its {} file{}]\n{}",
            refusals.len(),
            planned.len(),
            if planned.len() == 1 { "" } else { "s" },
            refusals.join("\n")
        )));
    }
    let check = |p: &Path| sandbox.check_write(cwd, p);
    let mut diffs = Vec::new();
    let mut lines_out = Vec::new();
    let total: usize = planned.iter().map(|p| p.3).sum();
    for (path, old, new, n) in planned {
        let shown = shown_of(&path);
        let written = writer::write_noted(
            &path,
            &shown,
            new.as_bytes(),
            FileKind::Ordinary,
            Check::Fenced(&check),
            call.journal(),
        );
        if let Err(e) = written {
            return Err(Failure::During(format!(
                "{e}; files written before it: {}",
                if lines_out.is_empty() {
                    "none".to_string()
                } else {
                    lines_out.join(", ")
                }
            )));
        }
        lines_out.push(format!(
            "{shown} ({n} edit{})",
            if n == 1 { "" } else { "s" }
        ));
        diffs.push(FileDiff {
            path,
            old_text: Some(old),
            new_text: new,
        });
    }
    let mut text = format!(
        "renamed to {new_name}: {total} edit{} in {} file{}\n{}",
        if total == 1 { "" } else { "s" },
        diffs.len(),
        if diffs.len() == 1 { "" } else { "s" },
        lines_out.join("\n")
    );
    if skipped_ops > 0 {
        let _ = write!(
            text,
            "\n[{skipped_ops} file operation(s) the server asked for (create, rename, delete) were not done]"
        );
    }
    let mut out = ToolOutput::completed(text);
    out.diffs = diffs;
    Ok(out)
}

fn plain_edits(
    edits: Vec<lsp_types::OneOf<TextEdit, lsp_types::AnnotatedTextEdit>>,
) -> Vec<TextEdit> {
    edits
        .into_iter()
        .map(|e| match e {
            lsp_types::OneOf::Left(t) => t,
            lsp_types::OneOf::Right(a) => a.text_edit,
        })
        .collect()
}
