//! A hostile repository against mm's own git (`/undo`'s snapshots, docs/terminal.md, "What
//! /undo's git runs"): a `core.fsmonitor` a fenced command sets, a `filter.<x>.clean` the
//! repository ships, `.git` as a file pointing at another repository, `GIT_*` variables in
//! mm's environment. Each runs the real `mm -p` against the fake server, as root and as a plain
//! user (crates/mm-testkit/src/as_user.rs), and the test asserts on disk that nothing ran and
//! nothing was written outside the project and mm's state folder.
//!
//! Every folder lies outside the temp folders (which the fence lets commands write).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// the plain user is made with setpriv (as_user.rs)
#![cfg(unix)]

use mm_testkit as common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::as_user::{self, Who};
use common::mm_run::{RUN_LIMIT, Run, Sandbox as Dirs, finish_within};
use common::{FakeServer, Reply, tool_results};
use pretty_assertions::assert_eq;

use crate::undo::git;
use serde_json::json;

/// A home, a project in git and, beside them, a folder standing for everything outside, owned
/// by the user who runs mm.
struct Scene {
    who: Who,
    dirs: Dirs,
    root: PathBuf,
    project: PathBuf,
    outside: PathBuf,
    _root: tempfile::TempDir,
}

impl Scene {
    /// The scene for `who` (skipped with the reason when it cannot run here); `fenced`: the
    /// user's config fences commands in workspace-write (skipped without Landlock).
    fn new(root: bool, fenced: bool) -> Scene {
        if fenced {
            fence_or_skip();
        }
        let who = Who::get(root);
        let root_dir = as_user::scene();
        let root = root_dir.path().canonicalize().unwrap();
        let dirs = Dirs {
            home: tempfile::tempdir_in(&root).unwrap(),
            cwd: tempfile::tempdir_in(&root).unwrap(),
            limit: RUN_LIMIT,
        };
        let project = dirs.dir();
        let outside = root.join("outside");
        fs::create_dir_all(&outside).unwrap();
        if fenced {
            let file = dirs.user_config();
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, "[tools]\nsandbox = \"workspace-write\"\n").unwrap();
        }
        let scene = Scene {
            who,
            dirs,
            root,
            project,
            outside,
            _root: root_dir,
        };
        repository(&scene.project);
        scene
    }

    /// `mm ARGS -p PROMPT` in the project as the scene's user (everything of the scene made
    /// theirs first), the model answering `replies`; the run, and the tool results the model
    /// got.
    async fn mm(
        &self,
        args: &[&str],
        prompt: &str,
        replies: Vec<Reply>,
        env: &[(&str, &Path)],
    ) -> (Run, Vec<String>) {
        let server = FakeServer::start(replies).await;
        self.who.own(&self.root);
        let mut all = args.to_vec();
        all.extend(["-p", prompt]);
        let mut cmd = self.dirs.command_as(&self.who, Some(&server.url()), &all);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let out = finish_within(cmd.spawn().unwrap(), RUN_LIMIT).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert_eq!(server.violations(), Vec::<String>::new());
        let results = tool_results(server.requests().last().unwrap());
        (out, results)
    }

    /// Another repository, outside, and every file of its `.git` as it is.
    fn other_repository(&self) -> (PathBuf, BTreeMap<PathBuf, Vec<u8>>) {
        let other = self.outside.join("other");
        fs::create_dir_all(&other).unwrap();
        repository(&other);
        let files = tree(&other.join(".git"));
        (other, files)
    }

    fn marker(&self, name: &str) -> PathBuf {
        self.outside.join(name)
    }

    /// mm's state folder (`XDG_STATE_HOME/mm`, as mm_run sets it).
    fn state(&self) -> PathBuf {
        self.dirs.home.path().join(".local/state/mm")
    }

    /// The refs of mm's stores (there is one store per project; `sessions/` beside them holds
    /// the sessions' records).
    fn store_refs(&self) -> String {
        let stores = self.state().join("undo");
        let mut refs = String::new();
        for entry in fs::read_dir(&stores).into_iter().flatten() {
            let store = entry.unwrap().path();
            if store.ends_with("sessions") {
                continue;
            }
            refs.push_str(&git_in(&store, &["for-each-ref", "--format=%(refname)"]));
        }
        refs
    }
}

fn fence_or_skip() {
    if mm_tools::sandbox::landlock_abi() == 0 {
        common::skip("this kernel has no Landlock");
    }
    if let Err(why) = mm_tools::sandbox::namespace_works() {
        common::skip(format!("no private mount namespace here ({why})"));
    }
}

/// git in the bare git folder `dir` (a store of mm's, another repository's `.git`).
fn git_in(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["--git-dir", dir.to_str().unwrap()];
    all.extend(args);
    git(dir, &all)
}

/// `a.txt` committed.
fn repository(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    fs::write(dir.join("a.txt"), "a\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// Every file under `dir` with its content (none when it is missing).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path);
            } else {
                let bytes = fs::read(&path).unwrap_or_default();
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

/// Runs `$body(root)` once as root and once as a plain user, as two tests.
macro_rules! as_root_and_user {
    ($root:ident, $user:ident, $body:ident) => {
        #[mm_testkit::test]
        async fn $root() {
            $body(true).await;
        }

        #[mm_testkit::test]
        async fn $user() {
            $body(false).await;
        }
    };
}
pub(crate) use as_root_and_user;

// --------------------------------------------------------------------- hole 1: core.fsmonitor

/// A fenced command sets `core.fsmonitor` in `.git/config` to a script of its own; the
/// snapshot mm makes after the turn must not run it (it would run outside the fence).
async fn a_fsmonitor_set_by_a_fenced_command(root: bool) {
    let s = Scene::new(root, true);
    let marker = s.marker("fsmonitor-ran");
    let command = format!(
        "printf '#!/bin/sh\\ntouch {}\\n' > hook.sh && chmod +x hook.sh && git config core.fsmonitor \"$PWD/hook.sh\" && git config core.fsmonitor",
        marker.display()
    );
    let (_, results) = s
        .mm(
            &["--yolo"],
            "go",
            vec![
                Reply::tool_call("bash", json!({ "command": command })),
                Reply::text("done"),
            ],
            &[],
        )
        .await;
    // The command did set it (it may write the project's .git), and the hook would run.
    assert_eq!(
        results,
        [format!("{}/hook.sh\n", s.project.display())],
        "{results:?}"
    );
    assert!(
        !marker.exists(),
        "mm's own git ran the repository's fsmonitor"
    );
    // mm's snapshots were made, in its own store: the turn's two undo points.
    assert_eq!(s.store_refs().lines().count(), 2, "{}", s.store_refs());
}

as_root_and_user!(
    mm_s_git_never_runs_a_fsmonitor_a_fenced_command_set_as_root,
    mm_s_git_never_runs_a_fsmonitor_a_fenced_command_set_as_a_user,
    a_fsmonitor_set_by_a_fenced_command
);

// ----------------------------------------------------------------- hole 2: filter.<x>.clean

/// The repository ships a clean filter in `.git/config` and a `.gitattributes` that uses it.
fn plant_filter(s: &Scene) -> PathBuf {
    let marker = s.marker("filter-ran");
    let clean = format!("touch {}; cat", marker.display());
    git(&s.project, &["config", "filter.x.clean", &clean]);
    fs::write(s.project.join(".gitattributes"), "* filter=x\n").unwrap();
    marker
}

/// `mm -p hello` with the defaults (untrusted, no fence): one turn, no command.
async fn a_clean_filter_with_the_defaults(root: bool) {
    let s = Scene::new(root, false);
    let marker = plant_filter(&s);
    s.mm(&[], "hello", vec![Reply::text("hi")], &[]).await;
    assert!(!marker.exists(), "mm's own git ran the repository's filter");
}

as_root_and_user!(
    mm_s_git_never_runs_a_repository_s_filter_with_the_defaults_as_root,
    mm_s_git_never_runs_a_repository_s_filter_with_the_defaults_as_a_user,
    a_clean_filter_with_the_defaults
);

/// `mm -p hello` continuing a session in read-only mode, with a read-only fence: no snapshot
/// at all (nothing is written, mm's store included), so no git.
async fn a_clean_filter_in_read_only_mode(root: bool) {
    let s = Scene::new(root, false);
    fence_or_skip();
    // A first turn makes the session (and its snapshots, of a harmless repository then).
    let saved = ["-c", "sessions.enabled=true"];
    s.mm(&saved, "hello", vec![Reply::text("hi")], &[]).await;
    let files = s.dirs.session_files();
    assert_eq!(files.len(), 1);
    let mut session = common::mm_run::read_json(&files[0]);
    session["mode"] = json!("read-only");
    fs::write(&files[0], session.to_string()).unwrap();
    let marker = plant_filter(&s);
    let before = tree(&s.state());
    s.mm(
        &[&saved[..], &["--continue", "--sandbox", "read-only"]].concat(),
        "hello",
        vec![Reply::text("hi")],
        &[],
    )
    .await;
    assert!(!marker.exists(), "mm's own git ran the repository's filter");
    assert!(
        tree(&s.state()) == before,
        "a turn in read-only mode wrote mm's store"
    );
}

as_root_and_user!(
    mm_s_git_never_runs_a_repository_s_filter_in_read_only_mode_as_root,
    mm_s_git_never_runs_a_repository_s_filter_in_read_only_mode_as_a_user,
    a_clean_filter_in_read_only_mode
);

// -------------------------------------------------------------------- hole 3: .git as a file

/// The project's `.git` is a file pointing at another repository: a turn that changes a file
/// writes nothing there (no objects, no index, no `refs/mm/undo/*`).
async fn a_git_file_pointing_elsewhere(root: bool) {
    let s = Scene::new(root, false);
    let (other, theirs) = s.other_repository();
    fs::remove_dir_all(s.project.join(".git")).unwrap();
    fs::write(
        s.project.join(".git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .unwrap();
    s.mm(
        &["--yolo"],
        "go",
        vec![
            Reply::tool_call("bash", json!({"command": "echo b > b.txt"})),
            Reply::text("done"),
        ],
        &[],
    )
    .await;
    assert_eq!(fs::read_to_string(s.project.join("b.txt")).unwrap(), "b\n");
    assert_eq!(
        git_in(&other.join(".git"), &["for-each-ref", "refs/mm"]),
        ""
    );
    assert!(
        tree(&other.join(".git")) == theirs,
        "mm wrote into the repository the .git file points at"
    );
    // The snapshots are mm's, in its store.
    assert_eq!(s.store_refs().lines().count(), 2, "{}", s.store_refs());
}

as_root_and_user!(
    mm_s_git_never_writes_where_a_git_file_points_as_root,
    mm_s_git_never_writes_where_a_git_file_points_as_a_user,
    a_git_file_pointing_elsewhere
);

/// mm started with `GIT_DIR` and `GIT_INDEX_FILE` naming another repository (as under a git
/// hook): its own git does not follow them.
async fn git_variables_of_mm_s_environment(root: bool) {
    let s = Scene::new(root, false);
    let (other, theirs) = s.other_repository();
    let (git_dir, index) = (other.join(".git"), other.join(".git/index"));
    s.mm(
        &["--yolo"],
        "go",
        vec![Reply::text("hi")],
        &[("GIT_DIR", &git_dir), ("GIT_INDEX_FILE", &index)],
    )
    .await;
    assert!(
        tree(&other.join(".git")) == theirs,
        "mm's git followed GIT_DIR into another repository"
    );
}

as_root_and_user!(
    mm_s_git_ignores_git_variables_of_its_environment_as_root,
    mm_s_git_ignores_git_variables_of_its_environment_as_a_user,
    git_variables_of_mm_s_environment
);
