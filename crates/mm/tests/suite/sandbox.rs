//! The sandbox (docs/sandbox.md): real commands and the file tools under each mode, with decoy
//! files outside the project that must come out untouched.
//!
//! Every folder here lies outside the temp folders (`common::outside_the_fence`: cargo's target
//! folder, or `/var/tmp` for a clone under /tmp): the temp folder is writable in
//! `workspace-write` by design, so a decoy there would prove nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Landlock is Linux's (docs/platforms.md)
#![cfg(target_os = "linux")]

use mm_testkit as common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Recorder;
use mm_core::config::Config;
use mm_core::config::SandboxMode as Mode;
use mm_core::event::ToolStatus;
use mm_tools::process::Supervisor;
use mm_tools::sandbox::{Places, Sandbox, Settings};
use mm_tools::tools::bash::Bash;
use mm_tools::tools::edit_file::EditFile;
use mm_tools::tools::write_file::WriteFile;
use mm_tools::tools::{CallContext, Tool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A project folder and, beside it, a folder standing for everything outside (the home, /etc).
struct World {
    _root: tempfile::TempDir,
    cwd: PathBuf,
    outside: PathBuf,
}

impl World {
    fn new() -> World {
        let root = common::outside_the_fence();
        let base = root.path().canonicalize().unwrap();
        let cwd = base.join("project");
        let outside = base.join("outside");
        fs::create_dir_all(&cwd).unwrap();
        fs::create_dir_all(outside.join("decoy/deep")).unwrap();
        fs::write(outside.join("decoy/deep/keep.txt"), "keep").unwrap();
        fs::write(outside.join("file.txt"), "original").unwrap();
        World {
            _root: root,
            cwd,
            outside,
        }
    }

    /// Every file under `outside`, with its content: what must not change.
    fn outside_snapshot(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        walk(&self.outside, &mut out);
        out.sort();
        out
    }
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let meta = fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            out.push((p.clone(), "<dir>".into()));
            walk(&p, out);
        } else {
            out.push((p.clone(), fs::read_to_string(&p).unwrap_or_default()));
        }
    }
}

/// Removes a file outside the test's folders if a failing fence let a command make it.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn sandbox(mode: Mode) -> Arc<Sandbox> {
    let mut config = Config::default();
    config.tools.sandbox = mode;
    Arc::new(Sandbox::new(Settings::of(&config), Places::default()))
}

fn bash_in(sandbox: &Arc<Sandbox>) -> Bash {
    Bash {
        timeout: Duration::from_secs(30),
        bash: None,
        processes: Supervisor::new(),
        sandbox: Arc::clone(sandbox),
        read_only: None,
    }
}

async fn run(tool: &dyn Tool, cwd: &Path, args: Value) -> ToolOutput {
    let frontend = Recorder::new();
    let cancel = CancellationToken::new();
    let call = CallContext::new(
        "call_1",
        cwd,
        30_000,
        &cancel,
        mm_core::event::PermissionMode::Yolo,
        &frontend,
    );
    tool.run(args, &call).await
}

async fn sh(bash: &Bash, cwd: &Path, command: &str) -> ToolOutput {
    run(bash, cwd, json!({ "command": command })).await
}

/// The tests of the fence need a kernel that fences (docs/sandbox.md: mm then says so in its
/// banner): without Landlock the test is skipped with the reason (under `CI=true` it fails).
fn require_landlock() {
    if mm_tools::sandbox::landlock_abi() == 0 {
        common::skip("this kernel has no Landlock: the fence cannot be tested here");
    }
}

/// Keeping the project's `.mm/` read-only needs a private mount namespace too.
fn require_namespace() {
    if let Err(why) = mm_tools::sandbox::namespace_works() {
        common::skip(format!(
            "no private mount namespace here ({why}): .mm/ cannot be kept read-only"
        ));
    }
    require_landlock();
}

const WW: &str = "[tools.sandbox = workspace-write: commands may write only in the working directory (not its .mm/), the temp folder and tools.sandboxWritable]";
const RO: &str = "[tools.sandbox = read-only: commands may not write any file]";

#[mm_testkit::test]
async fn workspace_write_lets_commands_work_in_the_cwd_and_the_temp_folder() {
    require_landlock();
    let w = World::new();
    let bash = bash_in(&sandbox(Mode::WorkspaceWrite));
    let out = sh(
        &bash,
        &w.cwd,
        "echo hi > a.txt && mkdir -p d/e && mv a.txt d/e/ && ln -s d/e link && cat link/a.txt \
         && rm -r d link && echo gone > b.txt && : > b.txt && truncate -s 3 b.txt && wc -c < b.txt",
    )
    .await;
    assert_eq!(out.text, "hi\n3\n");
    assert_eq!(out.status(), ToolStatus::Completed);

    // cargo- and pip-style work in the temp folder; device files a shell needs.
    let out = sh(
        &bash,
        &w.cwd,
        "d=$(mktemp -d) && mkdir -p $d/pip/build && echo x > $d/pip/build/setup.py \
         && cp -r $d/pip $d/copy && rm -rf $d && echo ok > /dev/null && head -c 3 /dev/zero | wc -c",
    )
    .await;
    assert_eq!(out.text, "3\n");
}

#[mm_testkit::test]
async fn workspace_write_lets_git_init_and_commit_in_the_cwd() {
    require_landlock();
    let w = World::new();
    let bash = bash_in(&sandbox(Mode::WorkspaceWrite));
    let out = sh(
        &bash,
        &w.cwd,
        &format!(
            "export HOME={} GIT_CONFIG_NOSYSTEM=1; git init -q . && echo x > f && git add f \
             && git -c user.name=t -c user.email=t@e commit -qm first && git log --format=%s",
            w.outside.display()
        ),
    )
    .await;
    assert_eq!(out.text, "first\n");
}

#[mm_testkit::test]
async fn workspace_write_refuses_every_way_out() {
    require_landlock();
    let w = World::new();
    let before = w.outside_snapshot();
    let etc_file = PathBuf::from(format!("/etc/mm-sandbox-test-{}", std::process::id()));
    let _cleanup = RemoveOnDrop(etc_file.clone());
    fs::create_dir_all(w.cwd.join("sub")).unwrap();
    symlink(&w.outside, w.cwd.join("out-dir")).unwrap();
    symlink(w.outside.join("file.txt"), w.cwd.join("out-file")).unwrap();
    let bash = bash_in(&sandbox(Mode::WorkspaceWrite));
    let o = w.outside.display();
    let attempts = [
        format!("HOME={o} bash -c 'touch ~/x'"),
        format!("echo x > {}", etc_file.display()),
        "echo x > out-dir/through-link".to_string(),
        "echo changed > out-file".to_string(),
        format!("cd / && rm -rf {o}/decoy"),
        format!("exec sh -c 'echo x > {o}/exec.txt'"),
        "cd sub && echo x > ../../outside/dotdot.txt".to_string(),
        format!("mv {o}/file.txt here.txt"),
        format!("ln {o}/file.txt hardlink && echo changed > hardlink"),
        format!("truncate -s 0 {o}/file.txt"),
        format!("python3 -c \"open('{o}/py.txt', 'w').write('x')\""),
        format!("mkdir {o}/newdir"),
    ];
    for command in &attempts {
        let out = sh(&bash, &w.cwd, command).await;
        assert_eq!(
            out.status(),
            ToolStatus::Completed,
            "{command}: {}",
            out.text
        );
        assert!(
            out.text.contains("[exit code: "),
            "{command} should have failed: {}",
            out.text
        );
        assert!(out.text.ends_with(WW), "{command}: no hint: {}", out.text);
    }
    assert!(!etc_file.exists());
    assert_eq!(w.outside_snapshot(), before);
}

#[mm_testkit::test]
async fn workspace_write_fences_what_a_command_leaves_running() {
    require_landlock();
    let w = World::new();
    let before = w.outside_snapshot();
    let bash = bash_in(&sandbox(Mode::WorkspaceWrite));
    let o = w.outside.display();
    // The background job writes after the call has returned, then says it is done.
    let out = sh(
        &bash,
        &w.cwd,
        &format!(
            "(sleep 0.3; echo late > {o}/late.txt; echo $? > bg-done.tmp; mv bg-done.tmp bg-done) > /dev/null 2>&1 &"
        ),
    )
    .await;
    assert_eq!(out.text, "");
    // No event tells when a released background job is done: poll for its marker, bounded.
    let start = Instant::now();
    while !w.cwd.join("bg-done").exists() && start.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fs::read_to_string(w.cwd.join("bg-done")).unwrap(), "1\n");
    assert_eq!(w.outside_snapshot(), before);
}

#[mm_testkit::test]
async fn workspace_write_keeps_the_projects_mm_folder_read_only() {
    require_namespace();
    let w = World::new();
    fs::create_dir_all(w.cwd.join(".mm/hooks")).unwrap();
    fs::write(w.cwd.join(".mm/config.toml"), "yolo = true\n").unwrap();
    let bash = bash_in(&sandbox(Mode::WorkspaceWrite));
    for command in [
        "echo '[tools]' >> .mm/config.toml",
        "echo 'tools.sandbox = \"off\"' > .mm/config.toml",
        "rm -rf .mm",
        "mv .mm old-mm",
        "echo 'rm -rf ~' > .mm/hooks/guard.sh",
    ] {
        let out = sh(&bash, &w.cwd, command).await;
        assert!(out.text.contains("[exit code: "), "{command}: {}", out.text);
    }
    assert_eq!(
        fs::read_to_string(w.cwd.join(".mm/config.toml")).unwrap(),
        "yolo = true\n"
    );
    assert!(!w.cwd.join(".mm/hooks/guard.sh").exists());
    // The rest of the project stays writable, and reading .mm/ still works.
    let out = sh(&bash, &w.cwd, "cat .mm/config.toml && echo x > y").await;
    assert_eq!(out.text, "yolo = true\n");
}

#[mm_testkit::test]
async fn workspace_write_makes_a_missing_mm_folder_so_no_command_can_make_it() {
    require_namespace();
    let w = World::new();
    let bash = bash_in(&sandbox(Mode::WorkspaceWrite));
    let out = sh(
        &bash,
        &w.cwd,
        "mkdir -p .mm && echo 'tools.sandbox = \"off\"' > .mm/config.toml",
    )
    .await;
    assert!(out.text.contains("[exit code: 1]"), "{}", out.text);
    assert!(w.cwd.join(".mm").is_dir());
    assert!(!w.cwd.join(".mm/config.toml").exists());
}

#[mm_testkit::test]
async fn read_only_refuses_every_write_but_device_files() {
    require_landlock();
    let w = World::new();
    let before = w.outside_snapshot();
    fs::write(w.cwd.join("inside.txt"), "inside").unwrap();
    let bash = bash_in(&sandbox(Mode::ReadOnly));
    let o = w.outside.display();
    for command in [
        "touch new.txt".to_string(),
        "echo changed > inside.txt".to_string(),
        "rm inside.txt".to_string(),
        "mkdir d".to_string(),
        "mktemp".to_string(),
        format!("rm -rf {o}/decoy"),
        format!("echo x > {o}/file.txt"),
    ] {
        let out = sh(&bash, &w.cwd, &command).await;
        assert!(
            out.text.contains("[exit code: ") && out.text.ends_with(RO),
            "{command}: {}",
            out.text
        );
    }
    assert_eq!(
        fs::read_to_string(w.cwd.join("inside.txt")).unwrap(),
        "inside"
    );
    assert_eq!(fs::read_dir(&w.cwd).unwrap().count(), 1);
    assert_eq!(w.outside_snapshot(), before);
    // Reading works, and so do the device files a shell needs.
    let out = sh(
        &bash,
        &w.cwd,
        "cat inside.txt && echo x > /dev/null && head -c 2 /dev/zero | wc -c",
    )
    .await;
    assert_eq!(out.text, "inside2\n");
}

#[mm_testkit::test]
async fn a_failure_without_a_refusal_gets_no_hint_and_off_gets_none() {
    let w = World::new();
    let fenced = bash_in(&sandbox(Mode::WorkspaceWrite));
    let out = sh(&fenced, &w.cwd, "echo nope; exit 3").await;
    assert_eq!(out.text, "nope\n[exit code: 3]");
    let open = bash_in(&sandbox(Mode::Off));
    let out = sh(&open, &w.cwd, "echo 'Permission denied'; exit 1").await;
    assert_eq!(out.text, "Permission denied\n[exit code: 1]");
}

fn write_tools(mode: Mode) -> (WriteFile, EditFile) {
    let sb = sandbox(mode);
    (
        WriteFile {
            sandbox: Arc::clone(&sb),
        },
        EditFile { sandbox: sb },
    )
}

fn refused(path: &Path, mode: &str) -> ToolOutput {
    ToolOutput::not_run(format!(
        "[write outside the sandbox refused: {} (tools.sandbox = {mode})]",
        path.display()
    ))
}

#[mm_testkit::test]
async fn the_file_tools_refuse_writes_outside_workspace_write() {
    let w = World::new();
    let before = w.outside_snapshot();
    fs::create_dir_all(w.cwd.join("sub")).unwrap();
    fs::create_dir_all(w.cwd.join(".mm")).unwrap();
    fs::write(w.cwd.join(".mm/config.toml"), "yolo = true\n").unwrap();
    symlink(&w.outside, w.cwd.join("out-dir")).unwrap();
    symlink(w.outside.join("file.txt"), w.cwd.join("out-file")).unwrap();
    let (write, edit) = write_tools(Mode::WorkspaceWrite);

    let cases: [(&str, PathBuf); 5] = [
        ("../outside/new.txt", w.outside.join("new.txt")),
        ("sub/../../outside/file.txt", w.outside.join("file.txt")),
        ("out-dir/new.txt", w.outside.join("new.txt")),
        ("out-file", w.outside.join("file.txt")),
        (".mm/config.toml", w.cwd.join(".mm/config.toml")),
    ];
    for (path, lands) in &cases {
        let out = run(&write, &w.cwd, json!({"path": path, "content": "x"})).await;
        assert_eq!(out, refused(lands, "workspace-write"), "write_file {path}");
        let out = run(
            &edit,
            &w.cwd,
            json!({"path": path, "old_text": "original", "new_text": "changed"}),
        )
        .await;
        assert_eq!(out, refused(lands, "workspace-write"), "edit_file {path}");
    }
    let abs = w.outside.join("file.txt");
    let out = run(
        &write,
        &w.cwd,
        json!({"path": abs.to_str().unwrap(), "content": "x"}),
    )
    .await;
    assert_eq!(out, refused(&abs, "workspace-write"));
    assert_eq!(w.outside_snapshot(), before);
    assert_eq!(
        fs::read_to_string(w.cwd.join(".mm/config.toml")).unwrap(),
        "yolo = true\n"
    );

    // Inside: written, including through a link that stays inside, and in the temp folder.
    symlink("sub", w.cwd.join("in-link")).unwrap();
    let out = run(
        &write,
        &w.cwd,
        json!({"path": "in-link/a.txt", "content": "original"}),
    )
    .await;
    assert_eq!(out.text, "wrote 8 bytes to in-link/a.txt");
    let out = run(
        &edit,
        &w.cwd,
        json!({"path": "sub/a.txt", "old_text": "original", "new_text": "changed"}),
    )
    .await;
    assert_eq!(out.text, "edited sub/a.txt: replaced 1 occurrence");
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    let in_tmp = tmp.path().join("t.txt");
    let out = run(
        &write,
        &w.cwd,
        json!({"path": in_tmp.to_str().unwrap(), "content": "t"}),
    )
    .await;
    assert_eq!(out.status(), ToolStatus::Completed, "{}", out.text);
}

#[mm_testkit::test]
async fn the_file_tools_refuse_every_write_in_read_only_and_none_when_off() {
    let w = World::new();
    fs::write(w.cwd.join("a.txt"), "original").unwrap();
    let (write, edit) = write_tools(Mode::ReadOnly);
    let out = run(&write, &w.cwd, json!({"path": "b.txt", "content": "x"})).await;
    assert_eq!(out, refused(&w.cwd.join("b.txt"), "read-only"));
    let out = run(
        &edit,
        &w.cwd,
        json!({"path": "a.txt", "old_text": "original", "new_text": "changed"}),
    )
    .await;
    assert_eq!(out, refused(&w.cwd.join("a.txt"), "read-only"));
    assert_eq!(fs::read_to_string(w.cwd.join("a.txt")).unwrap(), "original");
    assert!(!w.cwd.join("b.txt").exists());

    let (write, _) = write_tools(Mode::Off);
    let out = run(
        &write,
        &w.cwd,
        json!({"path": "../outside/free.txt", "content": "x"}),
    )
    .await;
    assert_eq!(out.text, "wrote 1 bytes to ../outside/free.txt");
}

#[mm_testkit::test]
async fn writable_paths_open_more_folders() {
    require_landlock();
    let w = World::new();
    let mut config = Config::default();
    config.tools.sandbox = Mode::WorkspaceWrite;
    config.tools.sandbox_writable = vec![w.outside.join("decoy")];
    let sb = Arc::new(Sandbox::new(Settings::of(&config), Places::default()));
    let bash = bash_in(&sb);
    let o = w.outside.display();
    let out = sh(
        &bash,
        &w.cwd,
        &format!(
            "echo cache > {o}/decoy/cache.txt && cat {o}/decoy/cache.txt; echo x > {o}/not-this.txt"
        ),
    )
    .await;
    assert!(out.text.starts_with("cache\n"), "{}", out.text);
    assert!(out.text.contains("[exit code: 1]"), "{}", out.text);
    assert!(!w.outside.join("not-this.txt").exists());
    let write = WriteFile { sandbox: sb };
    let out = run(
        &write,
        &w.cwd,
        json!({"path": format!("{o}/decoy/by-tool.txt"), "content": "x"}),
    )
    .await;
    assert_eq!(out.status(), ToolStatus::Completed, "{}", out.text);
}

// ------------------------------------------------------------------ a hostile model, end to end

/// The escapes a hostile model tries, as tool calls (`bash` and the file tools), with `o` the
/// folder outside the project and `home` the home folder.
fn escapes(o: &str, home: &str) -> Vec<(&'static str, Value)> {
    let bash = |c: String| ("bash", json!({ "command": c }));
    vec![
        bash("touch ~/x".into()),
        bash(format!("echo pwned > {o}/file.txt")),
        bash("ln -s ../outside out && echo pwned > out/through-link".into()),
        bash(format!("cd / && rm -rf {o}/decoy")),
        bash(format!(
            "(sleep 0.2; echo late > {o}/late.txt; echo tried >> bg-done) > /dev/null 2>&1 & echo started"
        )),
        bash(format!("exec sh -c 'echo x > {o}/exec.txt'")),
        bash("printf '[tools]\\nsandbox = \"off\"\\n' > .mm/config.toml".into()),
        bash("rm -rf .mm; mkdir -p .mm && echo 'yolo = true' > .mm/config.toml".into()),
        bash(format!(
            "mkdir -p {home}/.config/mm && printf '[tools]\\nsandbox = \"off\"\\n' > {home}/.config/mm/config.toml"
        )),
        (
            "write_file",
            json!({"path": ".mm/config.toml", "content": "[tools]\nsandbox = \"off\"\n"}),
        ),
        (
            "edit_file",
            json!({"path": ".mm/config.toml", "old_text": "maxSteps = 60", "new_text": "[tools]\nsandbox = \"off\""}),
        ),
        (
            "write_file",
            json!({"path": "../outside/file.txt", "content": "pwned"}),
        ),
        (
            "write_file",
            json!({"path": format!("{home}/.config/mm/config.toml"), "content": "[tools]\nsandbox = \"off\"\n"}),
        ),
    ]
}

#[mm_testkit::test]
async fn a_hostile_model_cannot_get_out_nor_switch_the_fence_off() {
    use common::mm_run::{RUN_LIMIT, Sandbox as Run};
    use common::{FakeServer, Reply};
    require_namespace();
    // One folder of the test's own holds the home, the project and, beside it, `outside`.
    let root = common::outside_the_fence();
    let run = Run {
        home: tempfile::tempdir_in(root.path()).unwrap(),
        cwd: tempfile::tempdir_in(root.path()).unwrap(),
        limit: RUN_LIMIT,
    };
    let home = run.home.path().canonicalize().unwrap();
    // The user's choice, in the user's file; the project's own file sets something else.
    let user_config = "[tools]\nsandbox = \"workspace-write\"\n";
    std::fs::create_dir_all(home.join(".config/mm")).unwrap();
    std::fs::write(run.user_config(), user_config).unwrap();
    let project_config = "maxSteps = 60\n";
    run.write(".mm/config.toml", project_config);
    let outside = run.dir().parent().unwrap().join("outside");
    fs::create_dir_all(outside.join("decoy/deep")).unwrap();
    fs::write(outside.join("decoy/deep/keep.txt"), "keep").unwrap();
    fs::write(outside.join("file.txt"), "original").unwrap();
    let mut before_outside = Vec::new();
    walk(&outside, &mut before_outside);
    let mut before_home = Vec::new();
    walk(&home, &mut before_home);

    let o = outside.display().to_string();
    let h = home.display().to_string();
    let mut script = Vec::new();
    // The same escapes, twice over: a model in a loop.
    for _ in 0..2 {
        for (tool, args) in escapes(&o, &h) {
            script.push(Reply::tool_call(tool, args));
        }
    }
    script.push(Reply::text("done"));
    let server = FakeServer::start(script).await;
    let url = server.url();
    let out = run.run(Some(&url), &["-p", "get out"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    assert!(
        out.stderr
            .contains("sessions on · mode yolo · sandbox workspace-write · network allow-list (24 hosts) · 0 skills · 0 hooks"),
        "{}",
        out.stderr
    );
    assert_eq!(server.violations(), Vec::<String>::new());

    // The background jobs (one a round) tried to write after their calls returned; nothing
    // tells when they are done but the line each leaves: poll for them, bounded.
    let start = Instant::now();
    while fs::read_to_string(run.path("bg-done")).map_or(0, |t| t.lines().count()) < 2
        && start.elapsed() < Duration::from_secs(20)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        fs::read_to_string(run.path("bg-done")).unwrap(),
        "tried\ntried\n"
    );
    // Nothing outside changed, nor mm's configuration.
    let results: Vec<String> = server.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 2 * escapes(&o, &h).len());
    for r in &results {
        assert!(
            r.contains("[exit code: ")
                || r.starts_with("[write outside the sandbox refused: ")
                || r == "started\n",
            "an escape did not fail: {r}"
        );
    }
    let mut after_outside = Vec::new();
    walk(&outside, &mut after_outside);
    let mut after_home = Vec::new();
    walk(&home, &mut after_home);
    assert_eq!(after_outside, before_outside);
    assert_eq!(after_home, before_home);
    assert_eq!(
        fs::read_to_string(run.path(".mm/config.toml")).unwrap(),
        project_config
    );
    assert_eq!(fs::read_to_string(run.user_config()).unwrap(), user_config);

    // The next run is fenced just the same.
    assert_eq!(
        run.config_value("tools.sandbox").await,
        "\"workspace-write\""
    );
}

#[mm_testkit::test]
async fn the_sandbox_flag_fences_a_one_shot_run() {
    use common::mm_run::{RUN_LIMIT, Sandbox as Run};
    use common::{FakeServer, Reply};
    require_landlock();
    let root = common::outside_the_fence();
    let run = Run {
        home: tempfile::tempdir_in(root.path()).unwrap(),
        cwd: tempfile::tempdir_in(root.path()).unwrap(),
        limit: RUN_LIMIT,
    };
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "touch made-here"})),
        Reply::text("done"),
    ])
    .await;
    let out = run
        .run(
            Some(&server.url()),
            &["--sandbox", "read-only", "-p", "touch"],
        )
        .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("mode yolo · sandbox read-only · "),
        "{}",
        out.stderr
    );
    let messages = server.requests()[1]["messages"].clone();
    let result = messages.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        result,
        format!("touch: cannot touch 'made-here': Permission denied\n[exit code: 1]\n{RO}")
    );
    // The system prompt tells the model of the fence.
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("Sandbox: commands and file tools may not write files."),
    );
    assert!(!run.path("made-here").exists());

    let bad = run.run(None, &["--sandbox", "on", "-p", "x"]).await;
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr
            .contains("invalid value 'on' for '--sandbox <MODE>'"),
        "{}",
        bad.stderr
    );
}

#[mm_testkit::test]
fn the_file_tools_check_the_folder_they_opened_before_creating_anything() {
    use mm_core::writer::{self, Check, FileKind, WriteError};
    let w = World::new();
    symlink(&w.outside, w.cwd.join("link")).unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let check = |p: &Path| {
        seen.lock().unwrap().push(p.to_path_buf());
        Err("refused".to_string())
    };
    let target = w.cwd.join("link/new/deeper/f.txt");
    let r = writer::write(
        &target,
        "f",
        b"x",
        FileKind::Ordinary,
        Check::Fenced(&check),
    );
    assert!(matches!(r, Err(WriteError::Refused(t)) if t == "refused"));
    // The first folder to create is where it stops: nothing was made.
    assert_eq!(*seen.lock().unwrap(), [w.outside.join("new")]);
    // Refused before any folder was made.
    assert!(!w.outside.join("new").exists());
}
