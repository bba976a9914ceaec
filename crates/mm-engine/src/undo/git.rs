//! The git plumbing of `/undo` (docs/terminal.md, "What /undo's git runs"): snapshots of the
//! work tree as trees in a git store of mm's own, in mm's state folder
//! (`<state>/undo/<project>-<hash>/`), never in the user's repository. git runs there with
//! `GIT_DIR` the store and `GIT_WORK_TREE` the folder that holds the project's `.git`, so that
//! nothing the repository says — its `.git/config` (`core.fsmonitor`, `filter.*`, hooks,
//! `core.worktree`), `.git` as a file pointing elsewhere, its `.gitattributes` — reaches the git
//! mm runs, and no write lands outside the store. The bytes of each file are stored as they are.
//!
//! The store, per project: `index-<session>` (one index per session, so that two mm in the same
//! project never wait on one lock; a new session's is seeded from the newest, so that only what
//! changed is hashed again), `refs/mm/undo/<session>/<turn>-before|after` (a session's undo
//! points, keyed by its id), `sessions/<session>` (when it last made one), `info/attributes`
//! (every attribute that changes bytes unset) and `info/exclude` (the repository's own, copied).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::process::{Group, Supervisor};
use crate::sandbox::{Fencing, Unfenced};
use crate::writer::{self, Check, FileKind};

/// git's empty tree: the attributes' source (git ≥ 2.41 reads `.gitattributes` from it, so not
/// from the work tree; older git ignores `GIT_ATTR_SOURCE`, and `info/attributes` holds).
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// The store's `info/attributes`, which takes precedence over every `.gitattributes`: no
/// filter (`filter.<x>.clean` would run a program), no end-of-line conversion (a CRLF file is
/// stored and put back byte for byte), no `ident`, no re-encoding.
const NO_ATTRIBUTES: &str = "* -text -crlf -eol -filter -ident -working-tree-encoding\n";

/// The options of every git mm runs: the repository's fsmonitor and hooks never run, the
/// user's global attributes are not read, no pager.
const OPTIONS: [&str; 9] = [
    "--no-pager",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "core.autocrlf=false",
];

/// A session's undo points are deleted this long after its last snapshot.
pub(super) const KEPT_DAYS: u64 = 7;

pub(super) const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// A work tree mm snapshots, and mm's store for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The folder that holds the project's `.git` (canonical).
    pub top: PathBuf,
    /// The session's cwd below it, as git names paths (`""` at the top, else `sub/dir/`).
    pub prefix: String,
    /// mm's git store for this work tree (`GIT_DIR`).
    store: PathBuf,
    /// The session's index file in it.
    index: PathBuf,
    /// Paths left out of every snapshot (the session files, mm's state), as lines of the
    /// store's `info/exclude` anchored at the work tree. Not as `:(exclude)` pathspecs: git
    /// refuses `add` ("paths are ignored") when such a path is also ignored, as `.mm/sessions`
    /// is by the `.mm/.gitignore` the first session save writes.
    excluded: Vec<String>,
    /// The session's id.
    session: String,
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

/// One git of mm's: which repository, which work tree and index.
struct Git<'a> {
    at: At<'a>,
    work_tree: Option<&'a Path>,
    index: Option<&'a Path>,
}

/// The repository a git of mm's works in.
#[derive(Clone, Copy)]
enum At<'a> {
    /// mm's store (`GIT_DIR`), where git starts.
    Store(&'a Path),
    /// The user's repository whose `.git` folder is in this folder, found by git itself from
    /// there, so that it refuses one another user owns (`safe.directory`, which only the system
    /// and global config could widen, and neither is read).
    Theirs(&'a Path),
}

impl Git<'_> {
    /// Runs git with `args` (and `input` on its standard input): its standard output, or why
    /// it failed.
    async fn run(
        &self,
        processes: &Arc<Supervisor>,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, String> {
        let mut cmd = Command::new("git");
        // Nothing of mm's own environment says where git looks or what it reads (`GIT_DIR`,
        // `GIT_INDEX_FILE`, `GIT_CONFIG_PARAMETERS`… are set when mm runs under a git hook).
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                cmd.env_remove(&name);
            }
        }
        cmd.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_SOURCE", EMPTY_TREE)
            .args(OPTIONS)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match self.at {
            // In the store, not the project: nothing there is found as `git` or read as its
            // config.
            At::Store(dir) => cmd.env("GIT_DIR", dir).current_dir(dir),
            At::Theirs(top) => cmd.current_dir(top),
        };
        if let Some(tree) = self.work_tree {
            cmd.env("GIT_WORK_TREE", tree);
        }
        if let Some(index) = self.index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        // Not fenced: it writes mm's store in the state folder, which the fence keeps out of
        // the commands' reach (that is what keeps the store's config and attributes mm's), and
        // once deletes the refs an older mm left in the repository's `.git`. It runs nothing
        // of the repository's (above), and reads the work tree only.
        let mut child = processes
            .spawn(
                &mut cmd,
                Group::Own,
                Fencing::outside(Unfenced::UndoSnapshots),
            )
            .map_err(|e| format!("could not run git: {e}"))?;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut stdin = child.take_stdin();
        let mut stdout = child.take_stdout();
        let mut stderr = child.take_stderr();
        let write_in = async {
            if let (Some(s), Some(bytes)) = (stdin.as_mut(), input) {
                let _ = s.write_all(bytes).await;
            }
            drop(stdin.take());
        };
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
        tokio::join!(write_in, read_out, read_err);
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
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

/// A path below the top as git names it (`/`-separated).
fn git_path(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The store's folder name for a work tree: its name and a hash of its whole path.
fn store_name(top: &Path) -> String {
    // FNV-1a, 64 bits: stable across builds, unlike std's hasher.
    let hash = top
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    let name: String = top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    format!("{name}-{hash:016x}")
}

pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let shown = path.display().to_string();
    writer::write(path, &shown, bytes, FileKind::Private, Check::Anywhere)
        .map_err(|e| e.to_string())
}

/// How long ago `path` was modified (`None`: it is not there).
pub(super) fn age(path: &Path) -> Option<Duration> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    Some(
        SystemTime::now()
            .duration_since(modified)
            .unwrap_or_default(),
    )
}

/// The files of a folder of the store, by name.
fn files_in(dir: &Path) -> Vec<(String, PathBuf)> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect()
}

/// A path as a gitignore pattern that matches it literally: the characters gitignore reads as
/// glob or syntax (`*?[\\`, a leading `!` or `#`, trailing spaces) escaped with a backslash.
fn exclude_literal(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for (i, c) in path.chars().enumerate() {
        if matches!(c, '*' | '?' | '[' | '\\' | ' ') || (i == 0 && matches!(c, '!' | '#')) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Repo {
    /// The work tree `cwd` is in (the nearest folder up from it that holds a `.git`, a folder
    /// or a file), with its store under `stores` (made the first time, when the refs an older
    /// mm left in the repository are cleaned up); `Ok(None)` outside git or in a cwd git
    /// ignores; `Err` when there is no store (`stores` is `None` without a state folder, or
    /// git failed). `excluded`: folders left out of snapshots.
    pub async fn find(
        processes: &Arc<Supervisor>,
        cwd: &Path,
        stores: Option<&Path>,
        session: &str,
        excluded: &[PathBuf],
    ) -> Result<Option<Repo>, String> {
        let cwd = crate::paths::canonical(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let Some(top) = cwd
            .ancestors()
            .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        else {
            return Ok(None);
        };
        let top = top.to_path_buf();
        let prefix = match git_path(cwd.strip_prefix(&top).unwrap_or(Path::new(""))) {
            p if p.is_empty() => p,
            p => format!("{p}/"),
        };
        let stores = stores.ok_or("mm has no state folder: HOME is not set")?;
        let store = stores.join(store_name(&top));
        let first = !store.join("HEAD").exists();
        // What making the store creates, so that a cwd git ignores leaves nothing behind.
        let made = store
            .ancestors()
            .take_while(|d| !d.exists())
            .last()
            .map(Path::to_path_buf);
        if first {
            Self::make_store(processes, &store).await?;
        }
        let repo = Repo {
            index: store.join(format!("index-{session}")),
            excluded: excluded
                .iter()
                .chain(std::iter::once(&stores.to_path_buf()))
                .filter_map(|d| {
                    let d = crate::paths::canonical(d).unwrap_or_else(|_| d.clone());
                    let rel = git_path(d.strip_prefix(&cwd).ok()?);
                    (!rel.is_empty())
                        .then(|| format!("/{}/", exclude_literal(&format!("{prefix}{rel}"))))
                })
                .collect(),
            top,
            prefix,
            store,
            session: session.to_string(),
        };
        repo.copy_excludes();
        // A cwd that git ignores (a build folder) has nothing to snapshot.
        if !repo.prefix.is_empty() {
            let path = repo.prefix.trim_end_matches('/');
            let ignored = repo
                .git(false)
                .run(
                    processes,
                    &["check-ignore", "-q", "--no-index", "--", path],
                    None,
                )
                .await;
            if ignored.is_ok() {
                if let Some(made) = made {
                    let _ = std::fs::remove_dir_all(made);
                }
                return Ok(None);
            }
        }
        if first {
            repo.clean_up_older_refs(processes).await;
        }
        if !first && age(&repo.store.join("gc")).is_none_or(|a| a > DAY) {
            repo.collect(processes).await;
        }
        Ok(Some(repo))
    }

    /// A new store: an empty repository of mm's with its attributes, no hooks or templates.
    async fn make_store(processes: &Arc<Supervisor>, store: &Path) -> Result<(), String> {
        // Its first file makes the folder, private: it holds copies of the project's files.
        write_file(&store.join("gc"), b"")?;
        let git = Git {
            at: At::Store(store),
            work_tree: None,
            index: None,
        };
        git.run(processes, &["init", "--quiet", "--template="], None)
            .await?;
        write_file(
            &store.join("info").join("attributes"),
            NO_ATTRIBUTES.as_bytes(),
        )
    }

    fn git(&self, index: bool) -> Git<'_> {
        Git {
            at: At::Store(&self.store),
            work_tree: Some(&self.top),
            index: index.then_some(self.index.as_path()),
        }
    }

    /// The repository's `.git/info/exclude` (a regular file of a `.git` folder) as the
    /// store's: files the user keeps out of git stay out of snapshots. It is only read.
    fn copy_excludes(&self) {
        let theirs = self.top.join(".git").join("info").join("exclude");
        let regular = std::fs::symlink_metadata(self.top.join(".git")).is_ok_and(|m| m.is_dir())
            && std::fs::symlink_metadata(&theirs).is_ok_and(|m| m.is_file() && m.len() < 1 << 20);
        let mut bytes = match regular {
            true => std::fs::read(&theirs).unwrap_or_default(),
            false => Vec::new(),
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        for line in &self.excluded {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        let ours = self.store.join("info").join("exclude");
        if std::fs::read(&ours).unwrap_or_default() != bytes {
            let _ = write_file(&ours, &bytes);
        }
    }

    /// Once, when the store is made: the `refs/mm/undo/*` and `mm-index-*` files that mm
    /// before its own store left in the repository's `.git` folder are deleted — those only.
    /// Not through a `.git` file (it points elsewhere). git runs in the user's repository here,
    /// so its `.git/config` is read, but for-each-ref and update-ref run no program of its (no
    /// hooks, no fsmonitor, no pager).
    async fn clean_up_older_refs(&self, processes: &Arc<Supervisor>) {
        let dot_git = self.top.join(".git");
        if !std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_dir()) {
            return;
        }
        for (name, path) in files_in(&dot_git) {
            if name.starts_with("mm-index-") {
                let _ = std::fs::remove_file(path);
            }
        }
        let packed = std::fs::read(dot_git.join("packed-refs")).unwrap_or_default();
        let left = dot_git.join("refs").join("mm").join("undo").exists()
            || packed.windows(13).any(|w| w == b"refs/mm/undo/");
        if !left {
            return;
        }
        let theirs = Git {
            at: At::Theirs(&self.top),
            work_tree: None,
            index: None,
        };
        let _ = delete_refs(processes, &theirs, |_| true).await;
    }

    /// The work tree below the cwd as it is now (untracked files included, ignored ones not),
    /// written as a tree kept under `refs/mm/undo/<session>/<name>`: the tree's id.
    pub async fn snapshot(
        &self,
        processes: &Arc<Supervisor>,
        name: &str,
    ) -> Result<String, String> {
        // The session's stamp first: the store's gc keeps what a stamped session made.
        write_file(&self.store.join("sessions").join(&self.session), b"")?;
        if !self.index.exists() {
            self.seed_index();
        }
        let tree = match self.write_tree(processes).await {
            Ok(tree) => tree,
            // An index whose blobs the store's gc let go of (seeded from a session that ended
            // long ago): hashed again from nothing.
            Err(_) => {
                let _ = std::fs::remove_file(&self.index);
                self.write_tree(processes).await?
            }
        };
        let reference = format!("refs/mm/undo/{}/{name}", self.session);
        self.git(false)
            .run(processes, &["update-ref", &reference, &tree], None)
            .await?;
        Ok(tree)
    }

    async fn write_tree(&self, processes: &Arc<Supervisor>) -> Result<String, String> {
        let below = match self.prefix.is_empty() {
            true => ".".to_string(),
            false => format!(":(literal){}", self.prefix),
        };
        self.git(true)
            .run(processes, &["add", "-A", "--", &below], None)
            .await?;
        Ok(text(
            self.git(true).run(processes, &["write-tree"], None).await?,
        ))
    }

    /// The session's index, seeded from the newest of the store (so that git hashes only
    /// what changed since); none: the first snapshot hashes every file.
    fn seed_index(&self) {
        if let Some(bytes) = self
            .newest_index()
            .and_then(|path| std::fs::read(path).ok())
        {
            let _ = write_file(&self.index, &bytes);
        }
    }

    /// The index file of the store written last.
    fn newest_index(&self) -> Option<PathBuf> {
        files_in(&self.store)
            .into_iter()
            .filter(|(name, _)| name.starts_with("index-") && !name.ends_with(".lock"))
            .filter_map(|(_, path)| Some((age(&path)?, path)))
            .min_by_key(|(age, _)| *age)
            .map(|(_, path)| path)
    }

    /// Lets go of the snapshot kept as `name`.
    pub async fn forget(&self, processes: &Arc<Supervisor>, name: &str) {
        let reference = format!("refs/mm/undo/{}/{name}", self.session);
        let _ = self
            .git(false)
            .run(processes, &["update-ref", "-d", &reference], None)
            .await;
    }

    /// What changed below the cwd from tree `from` to tree `to`.
    pub async fn changes(
        &self,
        processes: &Arc<Supervisor>,
        from: &str,
        to: &str,
    ) -> Result<Vec<Change>, String> {
        let below = match self.prefix.is_empty() {
            true => ".".to_string(),
            false => format!(":(literal){}", self.prefix),
        };
        let args = [
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            from,
            to,
            "--",
            &below,
        ];
        let out = self.git(false).run(processes, &args, None).await?;
        Ok(parse_raw(&out))
    }

    /// The content of a blob.
    pub async fn blob(&self, processes: &Arc<Supervisor>, id: &str) -> Result<Vec<u8>, String> {
        self.git(false)
            .run(processes, &["cat-file", "blob", id], None)
            .await
    }

    /// The store's retention, at most once a day: the undo points of a session whose last
    /// snapshot is more than [`KEPT_DAYS`] old are deleted, and the index files of ended
    /// sessions but the newest (the next session's seed); then, in the background, `git gc
    /// --prune=1.day.ago` gives their space back.
    async fn collect(&self, processes: &Arc<Supervisor>) {
        // Stamped first: a gc cut short at exit waits for the next day.
        if write_file(&self.store.join("gc"), b"").is_err() {
            return;
        }
        let kept = Duration::from_secs(KEPT_DAYS * DAY.as_secs());
        let live: Vec<String> = files_in(&self.store.join("sessions"))
            .into_iter()
            .filter_map(|(session, stamp)| match age(&stamp) {
                Some(a) if a <= kept => Some(session),
                _ => {
                    let _ = std::fs::remove_file(stamp);
                    None
                }
            })
            .collect();
        let newest = self.newest_index();
        for (name, path) in files_in(&self.store) {
            // A `.lock` is git's, being written.
            let Some(session) = name.strip_prefix("index-") else {
                continue;
            };
            let stale = !live.iter().any(|l| l == session) || age(&path).is_none_or(|a| a > DAY);
            if stale && !name.ends_with(".lock") && Some(&path) != newest.as_ref() {
                let _ = std::fs::remove_file(path);
            }
        }
        let git = self.git(false);
        let expired = |session: &str| !live.iter().any(|l| l == session);
        if delete_refs(processes, &git, expired).await.is_err() {
            return;
        }
        let (repo, owner) = (self.clone(), Arc::clone(processes));
        processes.tasks().spawn_until_shutdown(async move {
            let gc = ["gc", "--quiet", "--prune=1.day.ago"];
            let _ = repo.git(false).run(&owner, &gc, None).await;
        });
    }
}

/// Deletes the `refs/mm/undo/<session>/…` of `git`'s repository whose session `which` names.
async fn delete_refs(
    processes: &Arc<Supervisor>,
    git: &Git<'_>,
    which: impl Fn(&str) -> bool,
) -> Result<(), String> {
    let listed = git
        .run(
            processes,
            &["for-each-ref", "--format=%(refname)", "refs/mm/undo/"],
            None,
        )
        .await?;
    let deletions: String = String::from_utf8_lossy(&listed)
        .lines()
        .filter(|r| {
            r.strip_prefix("refs/mm/undo/")
                .and_then(|rest| rest.split('/').next())
                .is_some_and(&which)
        })
        .map(|r| format!("delete {r}\n"))
        .collect();
    if deletions.is_empty() {
        return Ok(());
    }
    git.run(
        processes,
        &["update-ref", "--stdin"],
        Some(deletions.as_bytes()),
    )
    .await
    .map(drop)
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
    fn an_excluded_folder_is_a_literal_pattern() {
        assert_eq!(exclude_literal(".mm/sessions"), ".mm/sessions");
        assert_eq!(exclude_literal("a b/[x]*?\\"), "a\\ b/\\[x]\\*\\?\\\\");
        assert_eq!(exclude_literal("!x/#y"), "\\!x/#y");
        assert_eq!(exclude_literal("#x"), "\\#x");
    }

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

    #[test]
    fn a_store_is_named_by_its_project_and_a_hash_of_its_path() {
        assert_eq!(
            store_name(Path::new("/home/u/my proj")),
            format!("my_proj-{:016x}", {
                let mut h = 0xcbf2_9ce4_8422_2325_u64;
                for b in b"/home/u/my proj" {
                    h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
                }
                h
            })
        );
        assert_ne!(store_name(Path::new("/a/p")), store_name(Path::new("/b/p")));
    }
}
