//! `/undo` over the file tools and `bash`, in and out of a git repository: what it restores,
//! what it says, and that the user's branch, index and stash are left alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::sync::Arc;

use common::{Answer, Recorder, ScriptedModel};
use mm_core::config::Config;
use mm_engine::{Command, Engine, Environment, Session};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A folder outside the folders the fence lets commands write (/tmp among them).
fn folder() -> tempfile::TempDir {
    common::outside_the_fence()
}

fn engine(model: Arc<ScriptedModel>, home: &Path) -> Engine {
    Engine::builder(Arc::new(Config::default()), model)
        .env(Environment {
            home: Some(home.to_path_buf()),
            xdg_config_home: Some(home.join("config")),
            xdg_state_home: Some(home.join("state")),
        })
        .build()
}

async fn prompt(e: &Engine, s: &mut Session, text: &str, fe: &Recorder) -> Option<Command> {
    e.prompt(s, text, &[], fe, &CancellationToken::new())
        .await
        .command
}

/// `/undo`'s lines.
async fn undo(e: &Engine, s: &mut Session) -> Vec<String> {
    let fe = Recorder::new();
    match prompt(e, s, "/undo", &fe).await {
        Some(Command::Undo(done)) => {
            assert_eq!(fe.notices(), [done.lines().join("\n")]);
            done.lines()
        }
        other => panic!("not /undo: {other:?}"),
    }
}

/// git as the tests run it (not mm's): no global config, and as root in folders a plain user
/// may own by then (trust_repo.rs).
pub(crate) fn git(cwd: &Path, args: &[&str]) -> String {
    // Every test that sets a repository up skips, with the reason, where git is missing.
    common::need_command("git", "Git for Windows, or apt-get install git");
    let out = Process::new("git")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with `kept.txt` and `gone.txt` committed, `staged.txt` staged, `.mm/` ignored.
fn repository(cwd: &Path) {
    git(cwd, &["init", "-q", "-b", "main"]);
    fs::write(cwd.join("kept.txt"), "kept 1\n").unwrap();
    fs::write(cwd.join("gone.txt"), "gone 1\n").unwrap();
    fs::write(cwd.join(".gitignore"), ".mm/\n").unwrap();
    git(cwd, &["add", "."]);
    git(cwd, &["commit", "-q", "-m", "first"]);
    fs::write(cwd.join("staged.txt"), "staged\n").unwrap();
    git(cwd, &["add", "staged.txt"]);
}

fn read(path: PathBuf) -> Option<String> {
    fs::read_to_string(path).ok()
}

#[mm_testkit::test]
async fn undo_puts_back_what_the_file_tools_wrote_outside_git() {
    let (home, dir) = (folder(), folder());
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call("write_file", json!({"path": "a.txt", "content": "two\n"})),
        Answer::call(
            "write_file",
            json!({"path": "sub/new.txt", "content": "new\n"}),
        ),
        Answer::text("written"),
        Answer::call(
            "edit_file",
            json!({"path": "a.txt", "old_text": "two", "new_text": "three"}),
        ),
        Answer::text("edited"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "write", &fe).await;
    prompt(&e, &mut s, "edit", &fe).await;
    assert_eq!(read(cwd.join("a.txt")).as_deref(), Some("three\n"));
    // The last turn first, then the one before it.
    assert_eq!(
        undo(&e, &mut s).await,
        [
            "↩ turn 2 undone: 1 restored, 0 not restored",
            "  restored a.txt",
        ]
    );
    assert_eq!(read(cwd.join("a.txt")).as_deref(), Some("two\n"));
    assert_eq!(
        undo(&e, &mut s).await,
        [
            "↩ turn 1 undone: 2 restored, 0 not restored".to_string(),
            "  restored a.txt".to_string(),
            // In the system's own form (`sub\new.txt` on Windows).
            format!(
                "  removed {} (the turn created it)",
                common::platform::native("sub/new.txt")
            ),
        ]
    );
    assert_eq!(read(cwd.join("a.txt")).as_deref(), Some("one\n"));
    assert_eq!(read(cwd.join("sub/new.txt")), None);
    assert_eq!(
        undo(&e, &mut s).await,
        ["↩ nothing to undo: no turn of this session is left to undo"]
    );
}

#[mm_testkit::test]
async fn outside_git_what_commands_changed_is_said_not_restored() {
    common::platform::need_bash();
    let (home, dir) = (folder(), folder());
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "rm a.txt"})),
        Answer::text("removed"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "remove", &fe).await;
    assert_eq!(
        undo(&e, &mut s).await,
        [
            "↩ turn 1 undone: 0 restored, 1 not restored".to_string(),
            format!(
                "  not restored: what its 1 command(s) changed ({} is not in a git repository)",
                cwd.display()
            ),
        ]
    );
    assert_eq!(read(cwd.join("a.txt")), None);
}

#[mm_testkit::test]
async fn in_git_writes_deletes_and_renames_by_commands_are_put_back() {
    common::need_command("git", "Git for Windows, or apt-get install git");
    let (home, dir) = (folder(), folder());
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    repository(&cwd);
    let head = git(&cwd, &["rev-parse", "HEAD"]);
    let index = fs::read(cwd.join(".git/index")).unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call(
            "bash",
            json!({"command": "echo kept 2 > kept.txt && rm gone.txt && mv staged.txt moved.txt && echo u > untracked.txt"}),
        ),
        Answer::call(
            "write_file",
            json!({"path": "kept.txt", "content": "kept 3\n"}),
        ),
        Answer::text("done"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "change things", &fe).await;
    assert_eq!(read(cwd.join("kept.txt")).as_deref(), Some("kept 3\n"));
    let mut lines = undo(&e, &mut s).await;
    let last = lines.pop().unwrap();
    lines[1..].sort();
    assert_eq!(
        lines,
        [
            "↩ turn 1 undone: 5 restored, 1 not restored",
            "  brought back gone.txt (the turn deleted it)",
            "  brought back staged.txt (the turn deleted it)",
            "  removed moved.txt (the turn created it)",
            "  removed untracked.txt (the turn created it)",
            "  restored kept.txt",
        ]
    );
    assert_eq!(
        last,
        format!(
            "  not restored: what its 1 command(s) changed outside {} or in files git ignores",
            cwd.display()
        )
    );
    assert_eq!(read(cwd.join("kept.txt")).as_deref(), Some("kept 1\n"));
    assert_eq!(read(cwd.join("gone.txt")).as_deref(), Some("gone 1\n"));
    assert_eq!(read(cwd.join("staged.txt")).as_deref(), Some("staged\n"));
    assert_eq!(read(cwd.join("moved.txt")), None);
    assert_eq!(read(cwd.join("untracked.txt")), None);
    // The user's branch, index and stash are as they were; mm's refs are gone with the turn.
    assert_eq!(git(&cwd, &["rev-parse", "HEAD"]), head);
    assert_eq!(fs::read(cwd.join(".git/index")).unwrap(), index);
    assert_eq!(git(&cwd, &["stash", "list"]), "");
    assert_eq!(git(&cwd, &["for-each-ref", "refs/mm"]), "");
    assert_eq!(
        git(&cwd, &["status", "--porcelain"]),
        "A  staged.txt\n",
        "the work tree is as it was"
    );
}

#[mm_testkit::test]
async fn a_file_changed_again_since_the_turn_is_left_alone() {
    common::need_command("git", "Git for Windows, or apt-get install git");
    let (home, dir) = (folder(), folder());
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    repository(&cwd);
    let model = ScriptedModel::new(vec![
        Answer::call(
            "write_file",
            json!({"path": "kept.txt", "content": "kept 2\n"}),
        ),
        Answer::call(
            "write_file",
            json!({"path": "gone.txt", "content": "gone 2\n"}),
        ),
        Answer::text("written"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "write", &fe).await;
    // The user edits one of them after the turn.
    fs::write(cwd.join("gone.txt"), "mine\n").unwrap();
    assert_eq!(
        undo(&e, &mut s).await,
        [
            "↩ turn 1 undone: 1 restored, 1 not restored",
            "  restored kept.txt",
            "  not restored: gone.txt (changed since the turn)",
        ]
    );
    assert_eq!(read(cwd.join("kept.txt")).as_deref(), Some("kept 1\n"));
    assert_eq!(read(cwd.join("gone.txt")).as_deref(), Some("mine\n"));
}

#[mm_testkit::test]
async fn a_turn_that_changed_nothing_is_not_one_to_undo() {
    common::need_command("git", "Git for Windows, or apt-get install git");
    let (home, dir) = (folder(), folder());
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    repository(&cwd);
    let model = ScriptedModel::new(vec![
        Answer::call(
            "write_file",
            json!({"path": "kept.txt", "content": "kept 2\n"}),
        ),
        Answer::text("written"),
        Answer::text("just talking"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "write", &fe).await;
    prompt(&e, &mut s, "talk", &fe).await;
    assert_eq!(
        undo(&e, &mut s).await,
        [
            "↩ turn 1 undone: 1 restored, 0 not restored",
            "  restored kept.txt",
        ]
    );
}

/// The turn wrote `d/f.txt`, then made `d` a link to a folder outside the project holding a
/// file of the same content: `/undo` asks the sandbox before each removal and restore, as the
/// tools' writes do, so it does not remove the file outside through the link.
#[cfg(unix)]
#[mm_testkit::test]
async fn undo_never_reaches_outside_the_project_through_a_link_the_turn_made() {
    let (home, dir, outside) = (folder(), folder(), folder());
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    let out = mm_core::paths::canonical(outside.path()).unwrap();
    fs::write(out.join("f.txt"), "x\n").unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call("write_file", json!({"path": "d/f.txt", "content": "x\n"})),
        Answer::call(
            "bash",
            json!({"command": format!("rm -rf d && ln -s {} d", out.display())}),
        ),
        Answer::text("linked"),
    ]);
    // The fence on (without it the model's commands may write anywhere anyway).
    let mut config = Config::default();
    config.tools.sandbox = mm_core::config::SandboxMode::WorkspaceWrite;
    let e = Engine::builder(Arc::new(config), model)
        .env(Environment {
            home: Some(home.path().to_path_buf()),
            xdg_config_home: Some(home.path().join("config")),
            xdg_state_home: Some(home.path().join("state")),
        })
        .build();
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "write and link", &fe).await;
    assert!(
        fs::symlink_metadata(cwd.join("d"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let lines = undo(&e, &mut s).await;
    assert_eq!(
        lines[0], "↩ turn 1 undone: 0 restored, 2 not restored",
        "{lines:?}"
    );
    let f = out.join("f.txt");
    assert_eq!(
        lines[1],
        format!(
            "  not restored: {f} ([write outside the sandbox refused: {f} (tools.sandbox = workspace-write)])",
            f = f.display()
        )
    );
    assert_eq!(read(out.join("f.txt")).as_deref(), Some("x\n"));
}

/// With `.gitattributes` `* text eol=crlf` git would store a CRLF file as LF: mm's snapshots
/// store the bytes as they are, so `/undo` puts the file back byte for byte.
#[mm_testkit::test]
async fn a_crlf_file_is_put_back_byte_for_byte_under_eol_crlf() {
    let (home, dir) = (folder(), folder());
    let cwd = dir.path().canonicalize().unwrap();
    git(&cwd, &["init", "-q", "-b", "main"]);
    fs::write(cwd.join(".gitattributes"), "* text eol=crlf\n").unwrap();
    fs::write(cwd.join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
    git(&cwd, &["add", "."]);
    git(&cwd, &["commit", "-q", "-m", "first"]);
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "printf 'three\\n' > crlf.txt"})),
        Answer::text("changed"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "change it", &fe).await;
    assert_eq!(fs::read(cwd.join("crlf.txt")).unwrap(), b"three\n");
    let lines = undo(&e, &mut s).await;
    assert_eq!(
        lines[..2],
        [
            "↩ turn 1 undone: 1 restored, 1 not restored",
            "  restored crlf.txt"
        ]
    );
    assert_eq!(fs::read(cwd.join("crlf.txt")).unwrap(), b"one\r\ntwo\r\n");
}

/// mm's git stores, one per project, under `<state>/mm/undo` (beside `sessions/`, the
/// sessions' records).
fn stores(home: &Path) -> Vec<PathBuf> {
    fs::read_dir(home.join("state/mm/undo"))
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("sessions"))
        .collect()
}

/// mm's store for a project (the one git store under `<state>/mm/undo`).
fn store(home: &Path) -> PathBuf {
    let stores = stores(home);
    assert_eq!(stores.len(), 1, "{stores:?}");
    stores[0].clone()
}

fn refs_of(git_dir: &Path) -> Vec<String> {
    let dir = git_dir.to_str().unwrap();
    git(
        git_dir,
        &["--git-dir", dir, "for-each-ref", "--format=%(refname)"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

fn age_by(path: &Path, days: u64) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 24 * 60 * 60);
    fs::File::open(path).unwrap().set_modified(then).unwrap();
}

/// The undo points are kept in mm's store by session id and turn, never in the repository; a
/// session's are deleted 7 days after its last snapshot (checked at most once a day).
#[mm_testkit::test]
async fn undo_points_are_kept_by_session_in_mm_s_store_for_seven_days() {
    let (home, dir) = (folder(), folder());
    let cwd = dir.path().canonicalize().unwrap();
    repository(&cwd);
    let write = |content: &str| {
        Answer::call(
            "write_file",
            json!({"path": "kept.txt", "content": content}),
        )
    };
    let model = ScriptedModel::new(vec![
        write("kept 2\n"),
        Answer::text("written"),
        write("kept 3\n"),
        Answer::text("written"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut first = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut first, "write", &fe).await;
    let store = store(home.path());
    let undo_points = |id: &str| {
        vec![
            format!("refs/mm/undo/{id}/1-after"),
            format!("refs/mm/undo/{id}/1-before"),
        ]
    };
    assert_eq!(refs_of(&store), undo_points(first.view().id()));
    assert_eq!(git(&cwd, &["for-each-ref", "refs/mm"]), "");
    // The first session ended 8 days ago; the store was last collected 2 days ago.
    age_by(&store.join("sessions").join(first.view().id()), 8);
    age_by(&store.join("gc"), 2);
    let mut second = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut second, "write again", &fe).await;
    assert_eq!(refs_of(&store), undo_points(second.view().id()));
    assert!(!store.join("sessions").join(first.view().id()).exists());
}

/// The `refs/mm/undo/*` and `mm-index-*` an older mm left in the repository (loose and packed)
/// are deleted when mm first makes its store for the project; nothing else of the user's.
#[mm_testkit::test]
async fn the_undo_refs_an_older_mm_left_in_the_repository_are_deleted() {
    let (home, dir) = (folder(), folder());
    let cwd = dir.path().canonicalize().unwrap();
    repository(&cwd);
    let tree = git(&cwd, &["rev-parse", "HEAD^{tree}"]);
    let tree = tree.trim();
    git(&cwd, &["update-ref", "refs/mm/undo/old/1-before", tree]);
    git(&cwd, &["update-ref", "refs/mm/kept", "HEAD"]);
    git(&cwd, &["tag", "t1"]);
    git(&cwd, &["pack-refs", "--all"]);
    git(&cwd, &["update-ref", "refs/mm/undo/old/1-after", tree]);
    fs::copy(cwd.join(".git/index"), cwd.join(".git/mm-index-old")).unwrap();
    let model = ScriptedModel::new(vec![Answer::text("hi")]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "hello", &fe).await;
    assert_eq!(
        refs_of(&cwd.join(".git")),
        ["refs/heads/main", "refs/mm/kept", "refs/tags/t1"]
    );
    assert!(!cwd.join(".git/mm-index-old").exists());
    assert!(cwd.join(".git/index").exists());
}

/// A cwd that git ignores (a build folder) is not snapshotted, and mm's state folder is left
/// as it was: the store made to ask git is removed again.
#[mm_testkit::test]
async fn a_cwd_git_ignores_gets_no_snapshot_and_no_store() {
    let (home, dir) = (folder(), folder());
    let top = dir.path().canonicalize().unwrap();
    repository(&top);
    fs::write(top.join(".gitignore"), ".mm/\nbuild/\n").unwrap();
    let cwd = top.join("build");
    fs::create_dir_all(&cwd).unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call("bash", json!({"command": "echo o > out.o"})),
        Answer::text("built"),
    ]);
    let e = engine(model, home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "build", &fe).await;
    assert!(!home.path().join("state").exists());
    assert_eq!(
        undo(&e, &mut s).await[1],
        format!(
            "  not restored: what its 1 command(s) changed ({} is not in a git repository)",
            cwd.display()
        )
    );
}

/// The model hears of `/undo` with the next prompt: a note of what was put back before the
/// user's words, in the same user message (never two user messages in a row); the history
/// keeps the note apart from the words.
#[mm_testkit::test]
async fn the_next_prompt_tells_the_model_what_undo_put_back() {
    let (home, dir) = (folder(), folder());
    let cwd = dir.path().canonicalize().unwrap();
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    let model = ScriptedModel::new(vec![
        Answer::call("write_file", json!({"path": "a.txt", "content": "two\n"})),
        Answer::text("written, the tests pass"),
        Answer::text("ok"),
    ]);
    let e = engine(model.clone(), home.path());
    let fe = Recorder::new();
    let mut s = e.new_session(cwd.clone(), &fe).await;
    prompt(&e, &mut s, "write", &fe).await;
    undo(&e, &mut s).await;
    prompt(&e, &mut s, "what now?", &fe).await;
    let note = "[/undo: the user undid the file changes of turn 1 of this session (turn 1 is \
                the first prompt); what the conversation says that turn changed no longer \
                holds for the files put back]\n- restored a.txt";
    assert_eq!(model.last_user_message(), format!("{note}\n\nwhat now?"));
    model.assert_invariants();
    let last = s.view().history().last().cloned().unwrap();
    assert_eq!(
        (last.content.as_str(), last.note.as_deref()),
        ("ok", None),
        "the answer"
    );
    let asked = &s.view().history()[s.view().history().len() - 2];
    assert_eq!(
        (asked.content.as_str(), asked.note.as_deref()),
        ("what now?", Some(note))
    );
    // Told once: the prompt after that carries no note.
    model.push(Answer::text("fine"));
    prompt(&e, &mut s, "and then?", &fe).await;
    assert_eq!(model.last_user_message(), "and then?");
}

/// With sessions on, the undo points outlive the process: a session reopened (`--continue`,
/// `session/load`) undoes the turns of before, in git and outside it.
#[mm_testkit::test]
async fn a_reopened_session_undoes_the_turns_of_before() {
    for in_git in [false, true] {
        let (home, dir) = (folder(), folder());
        let cwd = dir.path().canonicalize().unwrap();
        if in_git {
            repository(&cwd);
        }
        fs::write(cwd.join("kept.txt"), "kept 1\n").unwrap();
        let model = ScriptedModel::new(vec![
            Answer::call(
                "write_file",
                json!({"path": "kept.txt", "content": "kept 2\n"}),
            ),
            Answer::call("write_file", json!({"path": "new.txt", "content": "new\n"})),
            Answer::text("written"),
        ]);
        let fe = Recorder::new();
        let id = {
            let e = engine(model, home.path());
            let mut s = e.new_session(cwd.clone(), &fe).await;
            prompt(&e, &mut s, "write", &fe).await;
            s.view().id().to_string()
        };
        let e = engine(ScriptedModel::new(vec![]), home.path());
        let mut s = e.load_session(cwd.clone(), &id, &fe).await.unwrap();
        let mut lines = undo(&e, &mut s).await;
        lines[1..].sort();
        assert_eq!(
            lines,
            [
                "↩ turn 1 undone: 2 restored, 0 not restored",
                "  removed new.txt (the turn created it)",
                "  restored kept.txt",
            ],
            "in git: {in_git}"
        );
        assert_eq!(read(cwd.join("kept.txt")).as_deref(), Some("kept 1\n"));
        assert_eq!(read(cwd.join("new.txt")), None);
        // Undone is undone for good: reopened again, there is nothing left.
        let e = engine(ScriptedModel::new(vec![]), home.path());
        let mut s = e.load_session(cwd.clone(), &id, &fe).await.unwrap();
        assert_eq!(
            undo(&e, &mut s).await,
            ["↩ nothing to undo: no turn of this session is left to undo"]
        );
    }
}
