//! `/undo` (docs/engine.md, "Undo"): puts back the files the last turn changed. Two records
//! are kept per turn: the files mm's own tools replaced, noted by the checked writer in the
//! session's [`Journal`] with what they held before; and, in a git repository, snapshots of the
//! work tree below the cwd before and after the turn (untracked files included, ignored ones
//! not), kept as trees in a git store of mm's own in its state folder (git.rs), so that what the
//! turn's commands changed can be put back too. No snapshot is made in read-only mode. Each `/undo` undoes the last turn not undone yet, and says what it
//! restored and what it could not: a file changed again since the turn, a change the journal
//! could not keep, what commands changed outside git. The model hears of it: a note of what
//! was put back is joined to the next prompt ([`Undone::note`]). With sessions on, the records
//! are kept on disk (saved.rs), so that `/undo` works after the session is reopened.

mod git;
mod saved;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::process::Supervisor;
use crate::writer::{self, Check, FileKind, Journal, KEPT_BYTES, Noted, Prior};
use git::Repo;

/// Turns kept for `/undo` at most (the oldest is forgotten first).
pub const KEPT_TURNS: usize = 20;

/// A session's undo records.
#[derive(Debug, Default)]
pub struct Undo {
    /// Where the running turn's tools note the files they replace.
    pub journal: Journal,
    /// Where mm's git stores are (`<state folder>/undo`); `None`: there is no state folder.
    stores: Option<PathBuf>,
    /// The work tree, once looked for.
    repo: Option<WorkTree>,
    /// The turns that can be undone, the last at the end.
    turns: Vec<Turn>,
    /// Engine turns of the session so far.
    count: usize,
    /// What `/undo` did since the last prompt, for the model ([`Undone::note`]).
    note: Option<String>,
    /// Where the records are kept on disk (`None`: they are not).
    saved: Option<PathBuf>,
}

/// What [`Undo::before_turn`] found of the work tree.
#[derive(Debug, Clone)]
enum WorkTree {
    Git(Repo),
    /// Not in a git repository (or in a folder git ignores).
    NotGit,
    /// In one, but mm has no store for it: why.
    NoStore(String),
}

/// What a turn starts from, for [`Undo::after_turn`].
#[derive(Debug)]
pub struct Before {
    /// The snapshot before it, or why there is none (the end of `what its N command(s)
    /// changed (…)`).
    tree: Result<String, String>,
    /// It started in read-only mode.
    read_only: bool,
}

/// What one turn changed.
#[derive(Debug)]
struct Turn {
    /// Its number in the session (1 for the first).
    number: usize,
    /// The snapshots before and after it, or why there are none.
    trees: Result<(String, String), String>,
    /// The files its tools replaced, with what they hold after the turn (`None`: missing, or
    /// not kept).
    written: Vec<(Noted, Option<Vec<u8>>)>,
    /// Commands it ran.
    commands: u32,
}

impl Turn {
    fn changed_anything(&self) -> bool {
        !self.written.is_empty()
            || self.commands > 0
            || self.trees.as_ref().is_ok_and(|(b, a)| b != a)
    }
}

/// What `/undo` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    /// The turn undone; `None`: there was none to undo.
    pub turn: Option<usize>,
    /// One line per file put back (`restored a.txt`, `removed new.txt (the turn created it)`).
    pub restored: Vec<String>,
    /// One line per change that was not (`b.txt (changed since the turn)`).
    pub not_restored: Vec<String>,
}

impl Undone {
    /// The first line, which the ACP log repeats.
    pub fn line(&self) -> String {
        match self.turn {
            None => "↩ nothing to undo: no turn of this session is left to undo".to_string(),
            Some(n) => format!(
                "↩ turn {n} undone: {} restored, {} not restored",
                self.restored.len(),
                self.not_restored.len()
            ),
        }
    }

    /// What the model is told with the next prompt (`None`: nothing was undone).
    pub fn note(&self) -> Option<String> {
        let n = self.turn?;
        let mut lines = vec![format!(
            "[/undo: the user undid the file changes of turn {n} of this session (turn 1 is \
             the first prompt); what the conversation says that turn changed no longer holds \
             for the files put back]"
        )];
        lines.extend(self.restored.iter().map(|l| format!("- {l}")));
        lines.extend(
            self.not_restored
                .iter()
                .map(|l| format!("- not restored: {l}")),
        );
        Some(lines.join("\n"))
    }

    /// Every line, as the front ends show them.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.line()];
        lines.extend(self.restored.iter().map(|l| format!("  {l}")));
        lines.extend(
            self.not_restored
                .iter()
                .map(|l| format!("  not restored: {l}")),
        );
        lines
    }
}

/// How a path is shown: relative to the cwd below it, else whole.
fn shown(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// `path` with its folder's real path (as git names the work tree's files).
fn real(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map(|d| d.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// What is at `path` now, as the journal compares it: `None` for nothing or what it keeps not.
fn now(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > KEPT_BYTES {
        return None;
    }
    std::fs::read(path).ok()
}

/// What the session's sandbox says of a write at a path (`Sandbox::check_write` in the cwd):
/// every restore and removal asks it first, as the tools' writes do. The paths come from the
/// journal and from git's view of the work tree, but the turn may have put a link to a folder
/// outside the project in the way since.
pub type Fence<'a> = &'a (dyn Fn(&Path) -> Result<(), String> + Sync);

/// Puts `bytes` at `path` with the permission bits `mode` (a link in its place is removed
/// first: the old file is put back, not written through the link).
fn put_back(
    fence: Fence<'_>,
    path: &Path,
    shown: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<(), String> {
    fence(path).map_err(|refused| format!("{shown} ({refused})"))?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::remove_file(path).map_err(|e| format!("{shown} ({e})"))?;
    }
    writer::write(path, shown, bytes, FileKind::Ordinary, Check::Fenced(fence))
        .map_err(|e| e.to_string())?;
    writer::set_mode(path, mode).map_err(|e| format!("{shown} ({e})"))
}

/// Removes what the turn created at `path`.
fn remove(fence: Fence<'_>, path: &Path, shown: &str) -> Result<(), String> {
    fence(path).map_err(|refused| format!("{shown} ({refused})"))?;
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{shown} ({e})")),
    }
}

impl Undo {
    /// The records of a session whose git snapshots go to stores under `stores` (`<state
    /// folder>/undo`; `None`: none are made).
    pub fn new(stores: Option<PathBuf>) -> Undo {
        Undo {
            stores,
            ..Undo::default()
        }
    }

    /// The records of session `session`, kept on disk under `stores` (and read from there when
    /// the session is reopened).
    pub fn kept(stores: Option<PathBuf>, session: &str) -> Undo {
        let saved = stores.as_deref().map(|s| saved::folder(s, session));
        let mut undo = Undo {
            stores,
            saved,
            ..Undo::default()
        };
        if let Some(dir) = undo.saved.clone() {
            saved::load(&mut undo, &dir);
        }
        undo
    }

    fn save(&self) {
        if let Some(dir) = &self.saved {
            saved::save(self, dir);
        }
    }

    /// The note the next prompt carries for the model, taken (`None`: nothing was undone
    /// since the last prompt).
    pub fn take_note(&mut self) -> Option<String> {
        let note = self.note.take();
        if note.is_some() {
            self.save();
        }
        note
    }

    /// Finds the work tree once (a session reopened finds it at its first `/undo`).
    async fn find_repo(
        &mut self,
        processes: &Arc<Supervisor>,
        cwd: &Path,
        session: &str,
        excluded: &[PathBuf],
    ) {
        if self.repo.is_none() {
            let stores = self.stores.as_deref();
            self.repo = Some(
                match Repo::find(processes, cwd, stores, session, excluded).await {
                    Ok(Some(repo)) => WorkTree::Git(repo),
                    Ok(None) => WorkTree::NotGit,
                    Err(e) => WorkTree::NoStore(e),
                },
            );
        }
    }

    /// The repository, when snapshots are made in it.
    fn repo(&self) -> Option<Repo> {
        match &self.repo {
            Some(WorkTree::Git(repo)) => Some(repo.clone()),
            _ => None,
        }
    }

    /// Before an engine turn: the snapshot of the work tree it starts from (in git; none in
    /// read-only mode, where nothing is written, mm's store included).
    pub async fn before_turn(
        &mut self,
        processes: &Arc<Supervisor>,
        cwd: &Path,
        session: &str,
        excluded: &[PathBuf],
        read_only: bool,
    ) -> Before {
        self.count += 1;
        // What a tool wrote outside a turn (none should) is not this turn's.
        self.journal.take();
        if read_only {
            let tree = Err("no snapshot of the work tree in read-only mode".to_string());
            return Before { tree, read_only };
        }
        self.find_repo(processes, cwd, session, excluded).await;
        let tree = match &self.repo {
            Some(WorkTree::Git(repo)) => repo
                .snapshot(processes, &format!("{}-before", self.count))
                .await
                .map_err(|_| "the snapshot of the work tree failed".to_string()),
            Some(WorkTree::NoStore(why)) => Err(format!("no snapshot of the work tree: {why}")),
            Some(WorkTree::NotGit) | None => {
                Err(format!("{} is not in a git repository", cwd.display()))
            }
        };
        Before { tree, read_only }
    }

    /// After it: what it changed is kept for `/undo` (a turn that changed nothing and ran no
    /// command is not kept). `read_only`: the session is in read-only mode now; the commands
    /// of a turn that began and ended in it could write nothing (they ran in the read-only
    /// fence) and do not count.
    pub async fn after_turn(
        &mut self,
        processes: &Arc<Supervisor>,
        before: Before,
        commands: u32,
        read_only: bool,
    ) {
        let number = self.count;
        let commands = match before.read_only && read_only {
            true => 0,
            false => commands,
        };
        let trees = match (self.repo(), before.tree) {
            (Some(repo), Ok(before)) => repo
                .snapshot(processes, &format!("{number}-after"))
                .await
                .map(|after| (before, after))
                .map_err(|_| "the snapshot of the work tree failed".to_string()),
            (_, Err(why)) => Err(why),
            (None, Ok(_)) => Err("the snapshot of the work tree failed".to_string()),
        };
        let written = self
            .journal
            .take()
            .into_iter()
            .map(|mut n| {
                n.path = real(&n.path);
                let after = now(&n.path);
                (n, after)
            })
            .collect();
        let turn = Turn {
            number,
            trees,
            written,
            commands,
        };
        if !turn.changed_anything() {
            self.forget(processes, &turn).await;
            return;
        }
        self.turns.push(turn);
        if self.turns.len() > KEPT_TURNS {
            let oldest = self.turns.remove(0);
            self.forget(processes, &oldest).await;
        }
        self.save();
    }

    async fn forget(&self, processes: &Arc<Supervisor>, turn: &Turn) {
        if let Some(repo) = self.repo() {
            repo.forget(processes, &format!("{}-before", turn.number))
                .await;
            repo.forget(processes, &format!("{}-after", turn.number))
                .await;
        }
    }

    /// `/undo`: puts back what the last turn not undone yet changed, each write and removal
    /// asked of `fence` first; what it did is noted for the model's next request.
    pub async fn undo(
        &mut self,
        processes: &Arc<Supervisor>,
        (cwd, session, excluded): (&Path, &str, &[PathBuf]),
        fence: Fence<'_>,
    ) -> Undone {
        let done = self
            .undo_last(processes, cwd, session, excluded, fence)
            .await;
        if let Some(note) = done.note() {
            self.note = Some(match self.note.take() {
                Some(earlier) => format!("{earlier}\n{note}"),
                None => note,
            });
        }
        self.save();
        done
    }

    async fn undo_last(
        &mut self,
        processes: &Arc<Supervisor>,
        cwd: &Path,
        session: &str,
        excluded: &[PathBuf],
        fence: Fence<'_>,
    ) -> Undone {
        let real_cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let cwd = real_cwd.as_path();
        if self.turns.last().is_some_and(|t| t.trees.is_ok()) {
            self.find_repo(processes, cwd, session, excluded).await;
        }
        let Some(turn) = self.turns.pop() else {
            return Undone {
                turn: None,
                restored: Vec::new(),
                not_restored: Vec::new(),
            };
        };
        let mut done = Undone {
            turn: Some(turn.number),
            restored: Vec::new(),
            not_restored: Vec::new(),
        };
        let repo = self.repo();
        let mut handled: Vec<PathBuf> = Vec::new();
        if let (Some(repo), Ok((before, after))) = (&repo, &turn.trees) {
            self.undo_in_git(
                processes,
                repo,
                (before, after),
                cwd,
                fence,
                &mut done,
                &mut handled,
            )
            .await;
        }
        for (noted, after) in &turn.written {
            if handled.contains(&noted.path) {
                continue;
            }
            let name = shown(cwd, &noted.path);
            if now(&noted.path) != *after {
                done.not_restored
                    .push(format!("{name} (changed since the turn)"));
                continue;
            }
            let result = match &noted.before {
                Prior::Missing => remove(fence, &noted.path, &name)
                    .map(|()| format!("removed {name} (the turn created it)")),
                Prior::File { bytes, mode } => put_back(fence, &noted.path, &name, bytes, *mode)
                    .map(|()| format!("restored {name}")),
                Prior::NotKept(why) => Err(format!("{name} ({why})")),
            };
            match result {
                Ok(line) => done.restored.push(line),
                Err(line) => done.not_restored.push(line),
            }
        }
        if turn.commands > 0 {
            let line = match &turn.trees {
                Ok(_) => format!(
                    "what its {} command(s) changed outside {} or in files git ignores",
                    turn.commands,
                    cwd.display()
                ),
                Err(why) => format!("what its {} command(s) changed ({why})", turn.commands),
            };
            done.not_restored.push(line);
        }
        self.forget(processes, &turn).await;
        done
    }

    /// Puts back what changed below the cwd from `before` to `after`, but what changed again
    /// since.
    #[allow(clippy::too_many_arguments)]
    async fn undo_in_git(
        &self,
        processes: &Arc<Supervisor>,
        repo: &Repo,
        (before, after): (&str, &str),
        cwd: &Path,
        fence: Fence<'_>,
        done: &mut Undone,
        handled: &mut Vec<PathBuf>,
    ) {
        let changes = match repo.changes(processes, before, after).await {
            Ok(c) => c,
            Err(e) => {
                done.not_restored.push(format!("what changed in git ({e})"));
                return;
            }
        };
        if changes.is_empty() {
            return;
        }
        let since = match repo.snapshot(processes, "now").await {
            Ok(now) => repo.changes(processes, after, &now).await,
            Err(e) => Err(e),
        };
        repo.forget(processes, "now").await;
        let since: Vec<String> = match since {
            Ok(c) => c.into_iter().map(|c| c.path).collect(),
            Err(e) => {
                done.not_restored.push(format!("what changed in git ({e})"));
                return;
            }
        };
        for change in changes {
            let path = repo.top.join(&change.path);
            let name = shown(cwd, &path);
            handled.push(path.clone());
            if since.contains(&change.path) {
                done.not_restored
                    .push(format!("{name} (changed since the turn)"));
                continue;
            }
            let result = match change.old_mode.as_str() {
                "000000" => remove(fence, &path, &name)
                    .map(|()| format!("removed {name} (the turn created it)")),
                "100644" | "100755" => {
                    let mode = if change.old_mode == "100755" {
                        0o755
                    } else {
                        0o644
                    };
                    let existed = std::fs::symlink_metadata(&path).is_ok();
                    match repo.blob(processes, &change.old_blob).await {
                        Ok(bytes) => put_back(fence, &path, &name, &bytes, mode).map(|()| {
                            if existed {
                                format!("restored {name}")
                            } else {
                                format!("brought back {name} (the turn deleted it)")
                            }
                        }),
                        Err(e) => Err(format!("{name} ({e})")),
                    }
                }
                "120000" => Err(format!("{name} (a symbolic link)")),
                _ => Err(format!("{name} (a submodule)")),
            };
            match result {
                Ok(line) => done.restored.push(line),
                Err(line) => done.not_restored.push(line),
            }
        }
    }
}
