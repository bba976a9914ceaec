//! Every write a tool makes goes through the one checked writer (src/writer/) and obeys the
//! sandbox and the mode (docs/sandbox.md, docs/tools.md): every built-in tool that writes, run
//! against a sandbox that refuses everything and in the read-only and ask modes; then a hostile
//! model, through the binary, that serves a config turning the fence off and fetches it over
//! the user's (`fetch_content` with `output`), and that renames through a symlink out of the
//! project or into a module the language server found on `sys.path` (`lsp rename`).
//!
//! Folders the sandbox must protect lie outside the temp folders (`common::outside_the_fence`:
//! cargo's target folder, or `/var/tmp` for a clone under /tmp): the temp folder is writable in
//! `workspace-write` by design, so a decoy there would prove nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Landlock is Linux's (docs/platforms.md)
#![cfg(target_os = "linux")]

use mm_testkit as common;

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::mm_run::{RUN_LIMIT, Sandbox as Run};
use common::{FakeServer, Recorder, Reply};
use mm_core::config::SandboxMode;
use mm_core::config::{AgentConfig, Config, LspServerConfig};
use mm_core::event::{PermissionMode, ToolStatus};
use mm_core::history::ToolCall;
use mm_core::skills::{Catalogue, Skill};
use mm_engine::BUILTIN;
use mm_tools::hooks::Hooks;
use mm_tools::lsp::LspServers;
use mm_tools::process::Supervisor;
use mm_tools::sandbox::{Places, Sandbox, Settings};
use mm_tools::tools::dispatch::{Gates, TurnEnv, dispatch};
use mm_tools::tools::repeat::RepeatDetector;
use mm_tools::tools::{CallContext, ToolSetup, Toolbox};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

// ------------------------------------------------------------------ what is on disk

/// Every entry under `dir` (links not followed), with its content or link target: what must not
/// change.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                out.insert(p, format!("-> {}", to.display()));
            } else if meta.is_dir() {
                out.insert(p.clone(), "<dir>".into());
                walk(&p, out);
            } else {
                out.insert(p.clone(), std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// Whether this kernel fences bash (Landlock).
fn landlock() -> bool {
    mm_tools::sandbox::landlock_abi() > 0
}

/// `[write outside the sandbox refused: <path> (tools.sandbox = <mode>)]`
fn refusal(lands: &Path, mode: &str) -> String {
    format!(
        "[write outside the sandbox refused: {} (tools.sandbox = {mode})]",
        lands.display()
    )
}

// ------------------------------------------------------------------ every built-in tool

/// A stand-in language server (common::lsp): answers `initialize` (renaming offered), and a rename with an
/// edit at the position asked, plus one at the start of each file named on its command line (a
/// server that found the definition elsewhere); anything else asked gets `null`.
const RENAMING_SERVER: &str = r#"
while True:
    msg = read()
    method, id = msg.get("method"), msg.get("id")
    if id is None:
        if method == "exit":
            sys.exit(0)
        continue
    if method == "initialize":
        result = {"capabilities": {"renameProvider": True}}
    elif method == "textDocument/rename":
        p = msg["params"]
        at = {"start": p["position"], "end": p["position"]}
        changes = {p["textDocument"]["uri"]: [{"range": at, "newText": p["newName"]}]}
        for other in sys.argv[1:]:
            start = {"line": 0, "character": 0}
            changes["file://" + other] = [{"range": {"start": start, "end": start}, "newText": p["newName"]}]
        result = {"changes": changes}
    else:
        result = None
    send({"jsonrpc": "2.0", "id": id, "result": result})
"#;

/// A project to write in, a folder outside it, and a server to fetch from.
struct World {
    _root: tempfile::TempDir,
    cwd: PathBuf,
    outside: PathBuf,
    server_script: PathBuf,
}

impl World {
    fn new() -> World {
        let root = common::outside_the_fence();
        let base = root.path().canonicalize().unwrap();
        let cwd = base.join("project");
        let outside = base.join("outside");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(cwd.join("a.txt"), "original\n").unwrap();
        std::fs::write(cwd.join("a.py"), "def f():\n    return 1\n").unwrap();
        std::fs::write(outside.join("lib.py"), "def g():\n    return 2\n").unwrap();
        let server_script = base.join("renaming_server.py");
        std::fs::write(&server_script, common::lsp::stand_in(RENAMING_SERVER)).unwrap();
        World {
            _root: root,
            cwd,
            outside,
            server_script,
        }
    }

    /// A configuration with every built-in tool on offer: a language server (the stand-in,
    /// editing `also` besides), an agent, in `sandbox` mode.
    fn config(&self, sandbox: SandboxMode, also: &[&Path]) -> Config {
        let mut args = vec![self.server_script.display().to_string()];
        args.extend(also.iter().map(|p| p.display().to_string()));
        let mut config = Config {
            lsp_servers: [(
                "python".to_string(),
                LspServerConfig {
                    command: "python3".into(),
                    args,
                    extensions: vec![".py".into()],
                    sandbox: Default::default(),
                },
            )]
            .into(),
            agents: [(
                "helper".to_string(),
                AgentConfig {
                    command: "true".into(),
                    args: Vec::new(),
                    env: BTreeMap::new(),
                    sandbox: Default::default(),
                },
            )]
            .into(),
            ..Config::default()
        };
        config.tools.sandbox = sandbox;
        config
    }
}

/// A session's built-in tools, as the engine builds them; every builder of `BUILTIN` gives its
/// tool here (a skill and an agent are configured for the ones that need them).
struct Tools {
    toolbox: Toolbox,
    processes: Arc<Supervisor>,
}

impl Tools {
    fn new(config: &Config, cwd: &Path) -> Tools {
        let sandbox = Arc::new(Sandbox::new(Settings::of(config), Places::default()));
        let processes = Supervisor::new();
        let lsp = Arc::new(LspServers::new(
            config,
            Arc::clone(&processes),
            Arc::clone(&sandbox),
        ));
        let skills = Arc::new(Catalogue {
            skills: vec![Skill {
                name: "notes".into(),
                description: "How to take notes".into(),
                dir: cwd.join("no-such-skill"),
            }],
        });
        let plan = Arc::new(Mutex::new(None));
        let toolbox = mm_engine::builtin(&ToolSetup {
            config,
            session_id: "s1",
            cwd,
            skills: &skills,
            plan: &plan,
            processes: &processes,
            lsp: &lsp,
            ask_depth: 0,
            sandbox: &sandbox,
            read_only: None,
        });
        assert_eq!(
            toolbox.tools().len(),
            BUILTIN.len(),
            "a built-in tool was not built: {:?}",
            toolbox.names()
        );
        Tools { toolbox, processes }
    }
}

/// The call that makes a built-in tool write a file in the project, or `None` for a tool that
/// writes none. A new tool fails here until it says which it is.
fn writing_call(tool: &str, url: &str) -> Option<Value> {
    match tool {
        "bash" => Some(json!({"command": "echo x > by-bash.txt"})),
        "write_file" => Some(json!({"path": "new.txt", "content": "x"})),
        "edit_file" => {
            Some(json!({"path": "a.txt", "old_text": "original", "new_text": "changed"}))
        }
        "fetch_content" => Some(json!({"url": url, "output": "saved.json"})),
        "lsp" => Some(
            json!({"action": "rename", "path": "a.py", "line": 1, "symbol": "f", "new_name": "renamed"}),
        ),
        // They read, or keep what they change in the session (the plan).
        "read_file" | "read_skill" | "plan" | "ask_user" => None,
        // The asked agent writes in its own process, inside the session's fence.
        "ask_agent" => None,
        // Its child's calls go through the same dispatcher (and fence) as the parent's.
        "task" => None,
        other => panic!(
            "{other} is a new built-in tool: say in writing_call whether it writes a file, and with which call"
        ),
    }
}

/// A fake server answering `GET /payload` with a JSON body (what `fetch_content` saves).
async fn payload_server() -> (FakeServer, String) {
    let server = FakeServer::start(Vec::new()).await;
    server.route("GET /payload", vec![Reply::json(json!({"saved": true}))]);
    let url = format!("http://{}/payload", server.addr());
    (server, url)
}

#[mm_testkit::test]
async fn every_builtin_tool_that_writes_is_refused_by_a_sandbox_that_refuses_everything() {
    common::need_command("python3", ".ci/run installs it");
    let w = World::new();
    let (_server, url) = payload_server().await;
    let tools = Tools::new(&w.config(SandboxMode::ReadOnly, &[]), &w.cwd);
    let before = snapshot(w.cwd.parent().unwrap());
    let ro = |name: &str| refusal(&w.cwd.join(name), "read-only");
    let expected: BTreeMap<&str, String> = [
        (
            "bash",
            "bash: line 1: by-bash.txt: Permission denied\n[exit code: 1]\n[tools.sandbox = read-only: commands may not write any file]".to_string(),
        ),
        ("write_file", ro("new.txt")),
        ("edit_file", ro("a.txt")),
        ("fetch_content", ro("saved.json")),
        (
            "lsp",
            format!(
                "[lsp: the rename to renamed was not done, nothing was written: the sandbox refuses 1 of its 1 file]\na.py: {}",
                ro("a.py")
            ),
        ),
    ]
    .into();
    let mut tried = Vec::new();
    for tool in tools.toolbox.tools() {
        let Some(args) = writing_call(tool.name(), &url) else {
            continue;
        };
        if tool.name() == "bash" && !landlock() {
            continue;
        }
        let frontend = Recorder::new();
        let cancel = CancellationToken::new();
        let call = CallContext::new(
            "call_1",
            &w.cwd,
            30_000,
            &cancel,
            mm_core::event::PermissionMode::Yolo,
            &frontend,
        );
        let out = tool.run(args, &call).await;
        let want = &expected[tool.name()];
        assert_eq!(&out.text, want, "{}", tool.name());
        assert!(out.diffs.is_empty(), "{}", tool.name());
        if tool.name() != "bash" {
            // Refused before anything ran (bash ran, and the kernel refused its write).
            assert_eq!(out.status(), ToolStatus::Failed, "{}", tool.name());
            assert!(!out.outcome.ran(), "{}", tool.name());
        }
        tried.push(tool.name().to_string());
    }
    assert_eq!(snapshot(w.cwd.parent().unwrap()), before);
    let mut listed: Vec<&str> = expected.keys().copied().collect();
    if !landlock() {
        listed.retain(|t| *t != "bash");
    }
    tried.sort();
    assert_eq!(tried, listed);
    tools.processes.shutdown().await;
    if !landlock() {
        // The other tools were checked; the test did not do all it says.
        common::skip("this kernel has no Landlock: bash is not fenced here, and was not tried");
    }
}

#[mm_testkit::test]
async fn every_builtin_tool_that_writes_is_refused_in_read_only_mode_and_asks_in_ask_mode() {
    let w = World::new();
    let (_server, url) = payload_server().await;
    let tools = Tools::new(&w.config(SandboxMode::Off, &[]), &w.cwd);
    let before = snapshot(w.cwd.parent().unwrap());
    let hooks = Hooks::default();
    let mut n = 0;
    for mode in [PermissionMode::ReadOnly, PermissionMode::Ask] {
        for tool in tools.toolbox.tools() {
            let Some(args) = writing_call(tool.name(), &url) else {
                continue;
            };
            n += 1;
            // Nothing scripted: the front end rejects what it is asked.
            let frontend = Recorder::new();
            let env = TurnEnv {
                tools: &tools.toolbox,
                cwd: &w.cwd,
                session_id: "s1",
                mode,
                max_output: 30_000,
                frontend: &frontend,
                hooks: &hooks,
                journal: None,
                subagents: None,
            };
            let gates = Gates {
                repeat: &mut RepeatDetector::new(10),
                rules: &mut Default::default(),
            };
            let call = ToolCall {
                id: format!("c{n}"),
                ref_: format!("call_{n}"),
                name: tool.name().to_string(),
                arguments: args.to_string(),
            };
            let out = dispatch(&env, gates, &call, &CancellationToken::new()).await;
            let title = tool.title(&args);
            match mode {
                PermissionMode::ReadOnly => {
                    assert_eq!(
                        out.output,
                        format!("[{} refused: read-only mode]", tool.name())
                    );
                    assert_eq!(frontend.asked(), Vec::<String>::new(), "{title}");
                }
                PermissionMode::Ask => {
                    assert_eq!(out.output, tool.rejected(), "{title}");
                    assert_eq!(frontend.asked(), [title]);
                }
                PermissionMode::Yolo => unreachable!(),
            }
            assert_eq!(out.status, ToolStatus::Failed);
        }
    }
    assert_eq!(snapshot(w.cwd.parent().unwrap()), before);
    tools.processes.shutdown().await;
}

#[mm_testkit::test]
async fn a_rename_that_would_edit_a_file_outside_the_workspace_writes_nothing() {
    common::need_command("python3", ".ci/run installs it");
    let w = World::new();
    let outside_file = w.outside.join("lib.py");
    let tools = Tools::new(
        &w.config(SandboxMode::WorkspaceWrite, &[&outside_file]),
        &w.cwd,
    );
    let before = snapshot(w.cwd.parent().unwrap());
    let lsp = tools.toolbox.get("lsp").unwrap();
    let frontend = Recorder::new();
    let cancel = CancellationToken::new();
    let call = CallContext::new(
        "call_1",
        &w.cwd,
        30_000,
        &cancel,
        mm_core::event::PermissionMode::Yolo,
        &frontend,
    );
    let out = lsp.run(writing_call("lsp", "").unwrap(), &call).await;
    assert_eq!(
        out.text,
        format!(
            "[lsp: the rename to renamed was not done, nothing was written: the sandbox refuses 1 of its 2 files]\n{}: {}",
            outside_file.display(),
            refusal(&outside_file, "workspace-write")
        )
    );
    assert_eq!(out.status(), ToolStatus::Failed);
    // The server ran in the fence, which made the project's `.mm/` first (empty: mm's own).
    let mut after = snapshot(w.cwd.parent().unwrap());
    assert_eq!(after.remove(&w.cwd.join(".mm")).as_deref(), Some("<dir>"));
    assert_eq!(after, before);
    tools.processes.shutdown().await;
}

// ------------------------------------------------------------------ a hostile model (hole 1)

/// The home, the project and the folder outside, all under the target folder; the user's config
/// sets `tools.sandbox` (and `yolo`) as given.
fn user(config: &str) -> (tempfile::TempDir, Run) {
    let root = common::outside_the_fence();
    let run = Run {
        home: tempfile::tempdir_in(root.path()).unwrap(),
        cwd: tempfile::tempdir_in(root.path()).unwrap(),
        limit: RUN_LIMIT,
    };
    std::fs::create_dir_all(run.user_config().parent().unwrap()).unwrap();
    std::fs::write(run.user_config(), config).unwrap();
    (root, run)
}

/// What the model serves: a config that switches the fence off.
const HOSTILE_CONFIG: &str = "[tools]\nsandbox = \"off\"\n";

/// A process the test must end whatever happens (a server the model left running).
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// The contents of the `tool` messages of the last request the server received.
fn tool_results(server: &FakeServer) -> Vec<String> {
    server.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

/// One prompt to `mm -acp` in a session switched to read-only mode (`session/set_mode`); the
/// turn ends without a permission question.
async fn prompt_in_read_only_mode(run: &Run, server: &FakeServer, prompt: &str) {
    let mut c = run.command(Some(&server.url()), &["-acp"]);
    c.stdin(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut client = common::acp::TestClient::new(Box::new(stdin), Box::new(stdout));
    client.initialize(false).await;
    let (id, _) = client.new_session(&run.dir()).await;
    let (_, r) = client
        .call(
            "session/set_mode",
            json!({"sessionId": id, "modeId": "read-only"}),
        )
        .await;
    assert_eq!(r["result"], json!({}));
    let (msgs, r) = client.prompt(&id, prompt).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert!(
        msgs.iter()
            .all(|m| m["method"] != "session/request_permission")
    );
    client.close().await;
    let _ = child.wait().await;
}

/// The model's `bash` call that serves `dir` over HTTP on `port` from a background job (fenced
/// like any command) and waits until it answers; it prints `pid <N>`.
fn serve_call(dir: &Path, port: u16) -> Reply {
    let command = format!(
        "python3 -m http.server {port} --bind 127.0.0.1 --directory {} >/dev/null 2>&1 & echo \"pid $!\"; \
         for i in $(seq 400); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0; sleep 0.05; done; exit 1",
        dir.display()
    );
    Reply::tool_call("bash", json!({ "command": command }))
}

#[mm_testkit::test]
async fn a_fetched_config_cannot_replace_the_users_in_either_sandbox_mode() {
    common::need_command("python3", ".ci/run installs it");
    for mode in ["workspace-write", "read-only"] {
        let user_config = format!("[tools]\nsandbox = \"{mode}\"\n");
        let (_root, run) = user(&user_config);
        let served = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::write(served.path().join("config.toml"), HOSTILE_CONFIG).unwrap();
        let port = common::refused_port();
        let url = format!("http://127.0.0.1:{port}/config.toml");
        let target = run.user_config();
        let home = run.home.path().canonicalize().unwrap();
        let lands = home.join(".config/mm/config.toml");
        let before = snapshot(&home);
        let server = FakeServer::start(vec![
            serve_call(served.path(), port),
            Reply::tool_call(
                "fetch_content",
                json!({"url": url, "output": target.display().to_string()}),
            ),
            Reply::tool_call(
                "fetch_content",
                json!({"url": url, "output": "~/.config/mm/config.toml"}),
            ),
            Reply::text("done"),
        ])
        .await;
        let out = run
            .run(Some(&server.url()), &["-p", "turn the fence off"])
            .await;
        let results = tool_results(&server);
        let _server = results[0]
            .strip_prefix("pid ")
            .and_then(|r| r.trim().parse().ok())
            .map(KillOnDrop);
        assert_eq!(out.code, Some(0), "{mode}: {}", out.stderr);
        assert_eq!(out.stdout, "done\n");
        // The fenced server started and listened: the fetches were refused, not failed.
        assert!(
            results[0].starts_with("pid ") && !results[0].contains("[exit code"),
            "{mode}: {results:?}"
        );
        assert_eq!(
            results[1..],
            [refusal(&lands, mode), refusal(&lands, mode)],
            "{mode}"
        );
        assert_eq!(snapshot(&home), before, "{mode}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), user_config);
        // The next run is fenced just the same.
        assert_eq!(
            run.config_value("tools.sandbox").await,
            format!("\"{mode}\""),
            "{mode}"
        );
    }
}

/// A child of the test, stopped when dropped.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server the test starts itself (in read-only mode the model cannot start one).
fn serve(dir: &Path, port: u16) -> Served {
    let child = std::process::Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .arg("--directory")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Nothing tells when it listens but a connection: try, bounded.
    let deadline = std::time::Instant::now() + common::HANG_GUARD;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "python3 -m http.server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Served(child)
}

#[mm_testkit::test]
async fn a_fetched_config_cannot_replace_the_users_in_ask_and_read_only_mode() {
    common::need_command("python3", ".ci/run installs it");
    let served = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::write(served.path().join("config.toml"), HOSTILE_CONFIG).unwrap();
    let port = common::refused_port();
    let _http = serve(served.path(), port);
    let url = format!("http://127.0.0.1:{port}/config.toml");

    // Ask mode (`yolo = false`), one-shot: nobody at a terminal to say yes.
    let user_config = "yolo = false\n";
    let (_root, run) = user(user_config);
    let target = run.user_config();
    let fetch = json!({"url": url, "output": target.display().to_string()});
    let server = FakeServer::start(vec![
        Reply::tool_call("fetch_content", fetch.clone()),
        Reply::text("done"),
    ])
    .await;
    let out = run.run(Some(&server.url()), &["-p", "fetch it"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        tool_results(&server),
        ["[fetch_content rejected by the user]"]
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), user_config);

    // Read-only mode, over ACP (yolo is the config's default): refused without asking.
    let user_config = "# yolo\n";
    let (_root, run) = user(user_config);
    let target = run.user_config();
    let fetch = json!({"url": url, "output": target.display().to_string()});
    let server = FakeServer::start(vec![
        Reply::tool_call("fetch_content", fetch),
        Reply::text("done"),
    ])
    .await;
    prompt_in_read_only_mode(&run, &server, "fetch it").await;
    assert_eq!(
        tool_results(&server),
        ["[fetch_content refused: read-only mode]"]
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), user_config);
}

// ------------------------------------------------------------------ a hostile model (hole 4)

/// A project whose `lib` is a symlink to a folder outside, and which imports a module found on
/// `PYTHONPATH` outside too; plus two files of its own.
struct Renames {
    _root: tempfile::TempDir,
    run: Run,
    outside: PathBuf,
}

impl Renames {
    fn new(user_config: &str) -> Renames {
        let (root, run) = user(user_config);
        let outside = root.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(outside.join("lib")).unwrap();
        std::fs::create_dir_all(outside.join("site")).unwrap();
        std::fs::write(outside.join("lib/__init__.py"), "").unwrap();
        std::fs::write(outside.join("lib/util.py"), "def helper():\n    return 1\n").unwrap();
        std::fs::write(
            outside.join("site/extlib.py"),
            "def ext_helper():\n    return 2\n",
        )
        .unwrap();
        std::fs::create_dir_all(run.home.path().join(".cache")).unwrap();
        symlink(outside.join("lib"), run.path("lib")).unwrap();
        run.write("main.py", "from lib.util import helper\nhelper()\n");
        run.write("b.py", "from extlib import ext_helper\next_helper()\n");
        run.write("calc.py", "def add_one(x):\n    return x + 1\n");
        run.write("use.py", "from calc import add_one\nadd_one(1)\n");
        Renames {
            _root: root,
            run,
            outside,
        }
    }

    /// Everything the renames could touch: the project (its files, not mm's .mm/) and outside.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut all = snapshot(&self.outside);
        all.extend(
            snapshot(&self.run.dir())
                .into_iter()
                .filter(|(p, _)| !p.starts_with(self.run.path(".mm"))),
        );
        all
    }

    /// `mm -p` with the language servers finding `site` on `sys.path`.
    async fn run(&self, server: &FakeServer, args: &[&str]) -> common::mm_run::Run {
        let mut c = self.run.command(Some(&server.url()), args);
        c.env("PYTHONPATH", self.outside.join("site"));
        common::mm_run::finish(c.spawn().unwrap()).await
    }
}

/// What the model gets for a rename the sandbox refuses: `refused` are the refused files, as
/// `(shown, where the write lands)`, out of `of` files.
fn rename_refused(refused: &[(&str, &Path)], of: usize, mode: &str) -> String {
    let mut text = format!(
        "[lsp: the rename to pwned was not done, nothing was written: the sandbox refuses {} of its {of} files]",
        refused.len()
    );
    for (shown, lands) in refused {
        text.push_str(&format!("\n{shown}: {}", refusal(lands, mode)));
    }
    text
}

fn rename(path: &str, line: u32, symbol: &str) -> Reply {
    Reply::tool_call(
        "lsp",
        json!({"action": "rename", "path": path, "line": line, "symbol": symbol, "new_name": "pwned"}),
    )
}

#[mm_testkit::test]
async fn a_rename_cannot_edit_through_a_symlink_or_on_sys_path_in_workspace_write() {
    common::need_command("pylsp", ".ci/run installs it");
    // pylsp runs in the fence too: its cache (jedi's, parso's) is its own writable folder.
    let r = Renames::new(
        "[tools]\nsandbox = \"workspace-write\"\n[lsp.servers.python]\ncommand = \"pylsp\"\nsandboxWritable = [\"~/.cache\"]\n",
    );
    let before = r.snapshot();
    let server = FakeServer::start(vec![
        rename("main.py", 2, "helper"),
        rename("b.py", 2, "ext_helper"),
        Reply::text("done"),
    ])
    .await;
    let out = r.run(&server, &["-p", "rename"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let extlib = r.outside.join("site/extlib.py");
    let ww = "workspace-write";
    assert_eq!(
        tool_results(&server),
        [
            rename_refused(&[("lib/util.py", &r.outside.join("lib/util.py"))], 2, ww),
            rename_refused(&[(&extlib.display().to_string(), &extlib)], 2, ww),
        ]
    );
    // Nothing changed, outside nor inside: a rename is done whole or not at all.
    assert_eq!(r.snapshot(), before);
}

#[mm_testkit::test]
async fn a_rename_changes_nothing_in_the_read_only_sandbox_nor_in_read_only_mode() {
    common::need_command("pylsp", ".ci/run installs it");
    // The read-only sandbox: even the project's own files are refused. pylsp, which cannot
    // work where it may write nothing, runs outside the fence (the user's choice).
    let r = Renames::new(
        "[tools]\nsandbox = \"read-only\"\n[lsp.servers.python]\ncommand = \"pylsp\"\nsandbox = false\n",
    );
    let before = r.snapshot();
    let server = FakeServer::start(vec![
        rename("calc.py", 1, "add_one"),
        rename("main.py", 2, "helper"),
        Reply::text("done"),
    ])
    .await;
    let out = r.run(&server, &["-p", "rename"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let dir = r.run.dir();
    let (calc, usage, main) = (dir.join("calc.py"), dir.join("use.py"), dir.join("main.py"));
    let util = r.outside.join("lib/util.py");
    assert_eq!(
        tool_results(&server),
        [
            rename_refused(&[("calc.py", &calc), ("use.py", &usage)], 2, "read-only"),
            rename_refused(
                &[("lib/util.py", &util), ("main.py", &main)],
                2,
                "read-only"
            ),
        ]
    );
    assert_eq!(r.snapshot(), before);

    // Read-only mode (no sandbox), over ACP: refused without asking, before any server runs.
    let r = Renames::new("# yolo, no sandbox\n");
    let before = r.snapshot();
    let server =
        FakeServer::start(vec![rename("calc.py", 1, "add_one"), Reply::text("done")]).await;
    prompt_in_read_only_mode(&r.run, &server, "rename").await;
    assert_eq!(tool_results(&server), ["[lsp refused: read-only mode]"]);
    assert_eq!(r.snapshot(), before);
}
