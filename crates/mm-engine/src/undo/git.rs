//! The git plumbing of `/undo`: snapshots of the work tree as trees in mm's own refs
//! (`refs/mm/undo/<session>/…`), made through a temporary index file of mm's (in the git
//! folder, `mm-index-<session>`), so that the user's branch, index and stash are never touched.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::process::{Group, Supervisor};
use crate::sandbox::{Fencing, Unfenced};

/// A work tree mm snapshots: where it is and the index file of mm's that it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The top of the work tree (canonical).
    pub top: PathBuf,
    /// The session's cwd below it, as git names paths (`""` at the top, else `sub/dir/`).
    pub prefix: String,
    /// mm's index file for this session.
    index: PathBuf,
    /// The user's index: mm's is seeded from it (so that git need not read every file again).
    user_index: PathBuf,
    /// Paths left out of every snapshot (the session files), as pathspecs.
    excluded: Vec<String>,
    /// `refs/mm/undo/<session>`.
    refs: String,
}

/// One change between two snapshots, as `git diff-tree --raw` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the top of the work tree.
    pub path: String,
    /// The mode and blob before (`000000` for a file the turn created).
    pub old_mode: String,
    pub old_blob: String,
}

/// Runs git in `cwd` with mm's index (when given): its standard output, or why it failed.
async fn git(
    processes: &Arc<Supervisor>,
    cwd: &Path,
    index: Option<&Path>,
    args: &[&str],
) -> Result<Vec<u8>, String> {
    let mut cmd = Command::new("git");
    // No hooks of the repository run for mm's own snapshots.
    cmd.args(["-c", "core.hooksPath=/dev/null"])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    let mut child = processes
        .spawn(
            &mut cmd,
            Group::Own,
            Fencing::outside(Unfenced::UndoSnapshots),
        )
        .map_err(|e| format!("could not run git: {e}"))?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut stdout = child.take_stdout();
    let mut stderr = child.take_stderr();
    let read_out = async {
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out).await;
        }
    };
    let read_err = async {
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut err).await;
        }
    };
    tokio::join!(read_out, read_err);
    let status = child.wait().await;
    child.release();
    match status {
        Ok(s) if s.success() => Ok(out),
        Ok(_) => Err(format!(
            "git {}: {}",
            args.first().copied().unwrap_or(""),
            String::from_utf8_lossy(&err).trim()
        )),
        Err(e) => Err(format!("could not wait for git: {e}")),
    }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

impl Repo {
    /// The work tree `cwd` is in; `None` outside git (no git, no repository, a bare one, or a
    /// cwd git ignores). `excluded`: folders under `cwd` left out of snapshots.
    pub async fn find(
        processes: &Arc<Supervisor>,
        cwd: &Path,
        session: &str,
        excluded: &[PathBuf],
    ) -> Option<Repo> {
        let index_name = format!("mm-index-{session}");
        let out = git(
            processes,
            cwd,
            None,
            &[
                "rev-parse",
                "--show-toplevel",
                "--show-prefix",
                "--git-path",
                "index",
                "--git-path",
                &index_name,
            ],
        )
        .await
        .ok()?;
        let out = String::from_utf8_lossy(&out).into_owned();
        let mut lines = out.lines();
        let top = PathBuf::from(lines.next()?);
        let prefix = lines.next()?.to_string();
        let user_index = cwd.join(lines.next()?);
        let index = cwd.join(lines.next()?);
        // A cwd that git ignores (a build folder) has nothing to snapshot.
        if git(processes, cwd, None, &["check-ignore", "-q", "."])
            .await
            .is_ok()
        {
            return None;
        }
        let excluded = excluded
            .iter()
            .filter_map(|d| d.strip_prefix(cwd).ok())
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| format!(":(exclude){}", d.display()))
            .collect();
        Some(Repo {
            top,
            prefix,
            index,
            user_index,
            excluded,
            refs: format!("refs/mm/undo/{session}"),
        })
    }

    /// The work tree below the cwd as it is now (untracked files included, ignored ones not),
    /// written as a tree kept under `refs/mm/undo/<session>/<name>`: the tree's id.
    pub async fn snapshot(
        &self,
        processes: &Arc<Supervisor>,
        name: &str,
    ) -> Result<String, String> {
        if !self.index.exists() {
            // Seeded from the user's index: git then hashes only what changed since. A
            // repository without commits has no index yet: mm's starts empty.
            if let Ok(bytes) = std::fs::read(&self.user_index) {
                let shown = self.index.display().to_string();
                crate::writer::write(
                    &self.index,
                    &shown,
                    &bytes,
                    crate::writer::FileKind::Private,
                    crate::writer::Check::Anywhere,
                )
                .map_err(|e| e.to_string())?;
            }
        }
        let cwd = self.top.join(&self.prefix);
        let mut args = vec!["add", "-A", "--", "."];
        args.extend(self.excluded.iter().map(String::as_str));
        git(processes, &cwd, Some(&self.index), &args).await?;
        let tree = text(git(processes, &cwd, Some(&self.index), &["write-tree"]).await?);
        let reference = format!("{}/{name}", self.refs);
        git(processes, &cwd, None, &["update-ref", &reference, &tree]).await?;
        Ok(tree)
    }

    /// Lets go of the snapshot kept as `name`.
    pub async fn forget(&self, processes: &Arc<Supervisor>, name: &str) {
        let reference = format!("{}/{name}", self.refs);
        let _ = git(
            processes,
            &self.top,
            None,
            &["update-ref", "-d", &reference],
        )
        .await;
    }

    /// What changed below the cwd from tree `from` to tree `to`.
    pub async fn changes(
        &self,
        processes: &Arc<Supervisor>,
        from: &str,
        to: &str,
    ) -> Result<Vec<Change>, String> {
        let mut args = vec!["diff-tree", "-r", "-z", "--no-renames", from, to, "--"];
        let prefix = if self.prefix.is_empty() {
            ".".to_string()
        } else {
            self.prefix.clone()
        };
        args.push(&prefix);
        let out = git(processes, &self.top, None, &args).await?;
        Ok(parse_raw(&out))
    }

    /// The content of a blob.
    pub async fn blob(&self, processes: &Arc<Supervisor>, id: &str) -> Result<Vec<u8>, String> {
        git(processes, &self.top, None, &["cat-file", "blob", id]).await
    }
}

/// `git diff-tree -r -z --raw` output: `:<old mode> <new mode> <old> <new> <status>\0<path>\0`…
fn parse_raw(out: &[u8]) -> Vec<Change> {
    let mut fields = out.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if let [old_mode, _, old_blob, ..] = parts[..] {
            changes.push(Change {
                path: String::from_utf8_lossy(path).into_owned(),
                old_mode: old_mode.to_string(),
                old_blob: old_blob.to_string(),
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_diff_is_read_path_by_path() {
        let out = b":100644 100644 aaaa bbbb M\0a b.txt\0:000000 100755 0000 cccc A\0new\0";
        assert_eq!(
            parse_raw(out),
            vec![
                Change {
                    path: "a b.txt".into(),
                    old_mode: "100644".into(),
                    old_blob: "aaaa".into()
                },
                Change {
                    path: "new".into(),
                    old_mode: "000000".into(),
                    old_blob: "0000".into()
                },
            ]
        );
    }
}
