//! The `lsp` tool against real language servers (`pylsp`, `pyright-langserver`,
//! `typescript-language-server`, installed by `.ci/run`; a test whose server is missing skips
//! with a note on stderr), and its failure lines against stand-in servers made of `sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mm_core::config::{Config, LspServerConfig};
use mm_core::event::{FileDiff, ToolStatus};
use mm_tools::lsp::{LspServers, Timeouts};
use mm_tools::process::Supervisor;
use mm_tools::tools::lsp::Lsp;
use mm_tools::tools::{CallContext, Tool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Fixture {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    tool: Lsp,
    processes: Arc<Supervisor>,
}

impl Fixture {
    /// `request` bounds each answer; starting gets the same, and at least 20 s (a loaded
    /// machine starts Python slowly).
    fn new(servers: &[(&str, &str, &[&str], &[&str])], request: Duration) -> Fixture {
        Fixture::with(servers, request.max(Duration::from_secs(20)), request)
    }

    fn with(
        servers: &[(&str, &str, &[&str], &[&str])],
        start: Duration,
        request: Duration,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let cwd = mm_core::paths::canonical(dir.path()).unwrap();
        let lsp_servers = servers
            .iter()
            .map(|(name, command, args, exts)| {
                (
                    name.to_string(),
                    LspServerConfig {
                        command: command.to_string(),
                        args: args.iter().map(|s| s.to_string()).collect(),
                        extensions: exts.iter().map(|s| s.to_string()).collect(),
                        sandbox: Default::default(),
                    },
                )
            })
            .collect::<BTreeMap<_, _>>();
        let config = Config {
            lsp_servers,
            ..Config::default()
        };
        let processes = Arc::new(Supervisor::with_grace(Duration::from_millis(500)));
        let tool = Lsp {
            servers: Arc::new(LspServers::new(
                &config,
                Arc::clone(&processes),
                Default::default(),
            )),
            timeouts: Timeouts {
                start,
                request,
                diagnostics: Duration::from_secs(10),
            },
            sandbox: Default::default(),
        };
        Fixture {
            _dir: dir,
            cwd,
            tool,
            processes,
        }
    }

    fn write(&self, path: &str, text: &str) {
        let p = self.cwd.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.cwd.join(path)).unwrap()
    }

    async fn run(&self, args: Value) -> ToolOutput {
        // Nobody to ask: permission questions are refused, forms unavailable.
        let frontend = mm_testkit::Recorder::new();
        let cancel = CancellationToken::new();
        let call = CallContext::new(
            "call_1",
            &self.cwd,
            30_000,
            &cancel,
            mm_core::event::PermissionMode::Yolo,
            &frontend,
        );
        self.tool.run(args, &call).await
    }

    /// The result text of a call that must succeed.
    async fn ok(&self, args: Value) -> String {
        let out = self.run(args.clone()).await;
        assert_eq!(out.status(), ToolStatus::Completed, "{args}: {}", out.text);
        out.text
    }

    async fn stop(self) {
        self.processes.shutdown().await;
    }
}

const CALC: &str = "def add_one(x):
    return x + 1


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n = add_one(self.n)
        return self.n
";

const MAIN: &str = "from calc import add_one, Counter

print(add_one(41))
c = Counter()
c.bump()
";

fn python_project(f: &Fixture) {
    f.write("calc.py", CALC);
    f.write("main.py", MAIN);
}

fn sorted(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().collect();
    v.sort();
    v
}

#[mm_testkit::test]
async fn pylsp_navigates_a_python_project() {
    common::need_command("pylsp", ".ci/run installs it");
    let f = Fixture::new(&[], Duration::from_secs(30));
    python_project(&f);
    assert_eq!(
        f.ok(json!({"action": "definition", "path": "main.py", "line": 3, "symbol": "add_one"}))
            .await,
        "calc.py:1:5  def add_one(x):"
    );
    assert_eq!(
        f.ok(json!({"action": "definition", "path": "main.py", "line": 3, "column": 8}))
            .await,
        "calc.py:1:5  def add_one(x):"
    );
    let refs = f
        .ok(json!({"action": "references", "path": "calc.py", "line": 1, "symbol": "add_one"}))
        .await;
    assert_eq!(
        sorted(&refs),
        [
            "calc.py:10:18  self.n = add_one(self.n)",
            "calc.py:1:5  def add_one(x):",
            "main.py:1:18  from calc import add_one, Counter",
            "main.py:3:7  print(add_one(41))",
        ]
    );
    let hover = f
        .ok(json!({"action": "hover", "path": "main.py", "line": 4, "symbol": "Counter"}))
        .await;
    assert!(hover.contains("Counter"), "{hover}");
    let symbols = f.ok(json!({"action": "symbols", "path": "calc.py"})).await;
    assert_eq!(
        symbols,
        "calc.py:1:1  function add_one\n\
         calc.py:5:1  class Counter\n\
         calc.py:6:5  method __init__ (in Counter)\n\
         calc.py:7:9  field n (in __init__)\n\
         calc.py:9:5  method bump (in Counter)\n\
         calc.py:10:9  field n (in bump)"
    );
    // pylsp has no workspace symbols: one line says so.
    let out = f
        .run(json!({"action": "workspace_symbols", "path": "calc.py", "query": "add"}))
        .await;
    assert_eq!(
        out,
        ToolOutput::not_run(
            "[lsp: pylsp (python) does not offer workspace_symbols (no workspaceSymbolProvider in its capabilities)]"
        )
    );
    f.stop().await;
}

#[mm_testkit::test]
async fn pylsp_diagnostics_follow_the_file_as_the_model_edits_it() {
    common::need_command("pylsp", ".ci/run installs it");
    let f = Fixture::new(&[], Duration::from_secs(30));
    python_project(&f);
    f.write("broken.py", "import os\n\ndef f(x):\n    return y\n");
    assert_eq!(
        f.ok(json!({"action": "diagnostics", "path": "broken.py"}))
            .await,
        "broken.py:1:1  warning: 'os' imported but unused [pyflakes]\n\
         broken.py:4:12  error: undefined name 'y' [pyflakes]"
    );
    // Fixed on disk between two calls: the server is sent the new text first.
    f.write("broken.py", "def f(x):\n    return x\n");
    assert_eq!(
        f.ok(json!({"action": "diagnostics", "path": "broken.py"}))
            .await,
        "no diagnostics for broken.py"
    );
    // An open file edited: positions refer to the new text.
    f.ok(json!({"action": "definition", "path": "main.py", "line": 3, "symbol": "add_one"}))
        .await;
    f.write("main.py", &format!("# moved down\n\n{MAIN}"));
    assert_eq!(
        f.ok(json!({"action": "definition", "path": "main.py", "line": 5, "symbol": "add_one"}))
            .await,
        "calc.py:1:5  def add_one(x):"
    );
    f.stop().await;
}

#[mm_testkit::test]
async fn pylsp_renames_across_two_files_with_one_diff_each() {
    common::need_command("pylsp", ".ci/run installs it");
    let f = Fixture::new(&[], Duration::from_secs(30));
    python_project(&f);
    let out = f
        .run(json!({"action": "rename", "path": "calc.py", "line": 1, "symbol": "add_one", "new_name": "plus_one"}))
        .await;
    assert_eq!(out.status(), ToolStatus::Completed, "{}", out.text);
    assert_eq!(
        out.text,
        "renamed to plus_one: 2 edits in 2 files\ncalc.py (1 edit)\nmain.py (1 edit)"
    );
    let calc = CALC.replace("add_one", "plus_one");
    let main = MAIN.replace("add_one", "plus_one");
    assert_eq!(f.read("calc.py"), calc);
    assert_eq!(f.read("main.py"), main);
    assert_eq!(
        out.diffs,
        vec![
            FileDiff {
                path: f.cwd.join("calc.py"),
                old_text: Some(CALC.into()),
                new_text: calc,
            },
            FileDiff {
                path: f.cwd.join("main.py"),
                old_text: Some(MAIN.into()),
                new_text: main,
            },
        ]
    );
    // The server follows: the new name is found where the old one was.
    assert_eq!(
        f.ok(json!({"action": "definition", "path": "main.py", "line": 3, "symbol": "plus_one"}))
            .await,
        "calc.py:1:5  def plus_one(x):"
    );
    f.stop().await;
}

#[mm_testkit::test]
async fn pyright_offers_workspace_symbols() {
    common::need_command("pyright-langserver", ".ci/run installs it");
    let f = Fixture::new(
        &[("python", "pyright-langserver", &["--stdio"], &[".py"])],
        Duration::from_secs(60),
    );
    python_project(&f);
    assert_eq!(
        f.ok(json!({"action": "workspace_symbols", "path": "main.py", "query": "add_one"}))
            .await,
        "calc.py:1:5  function add_one"
    );
    assert_eq!(
        f.ok(json!({"action": "definition", "path": "main.py", "line": 5, "symbol": "bump"}))
            .await,
        "calc.py:9:9  def bump(self):"
    );
    f.stop().await;
}

// ---------------------------------------------------------------- failure lines

/// A stand-in language server (common::lsp): answers `initialize` (with a definition provider),
/// then on `textDocument/definition` does what `mode` says: `hang` or `crash`.
const FAKE_SERVER: &str = r#"
mode = sys.argv[1]
while True:
    msg = read()
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"definitionProvider": True}}})
    elif msg.get("method") == "textDocument/definition":
        if mode == "crash":
            sys.stderr.write("Traceback: something broke\n")
            sys.exit(7)
"#;

#[mm_testkit::test]
async fn a_missing_server_or_file_type_is_one_line_naming_the_key() {
    let f = Fixture::new(
        &[("python", "mm-no-such-server", &[], &[".py"])],
        Duration::from_secs(5),
    );
    f.write("a.py", "x = 1\n");
    f.write("notes.xyz", "x\n");
    assert_eq!(
        f.run(json!({"action": "symbols", "path": "a.py"})).await,
        ToolOutput::not_run(
            "[lsp: the language server for .py files is not installed (mm-no-such-server not found on PATH); install it or set lsp.servers.python.command]"
        )
    );
    assert_eq!(
        f.run(json!({"action": "symbols", "path": "notes.xyz"}))
            .await,
        ToolOutput::not_run(
            "[lsp: no language server for .xyz files; configure one under lsp.servers.<name> (command, args, extensions)]"
        )
    );
    assert_eq!(
        f.run(json!({"action": "symbols", "path": "nope.py"})).await,
        ToolOutput::not_run("[lsp: nope.py is not a file (it does not exist)]")
    );
    assert_eq!(
        f.run(json!({"action": "definition", "path": "a.py"})).await,
        ToolOutput::not_run("[lsp: definition needs line, and column or symbol]")
    );
    f.stop().await;
}

#[mm_testkit::test]
async fn a_server_that_exits_during_initialize_counts_as_missing() {
    common::need_command("sh", "Git for Windows has it: its bin folder on PATH");
    let f = Fixture::new(
        &[(
            "python",
            "sh",
            &[
                "-c",
                "echo 'fatal: no interpreter for this project' >&2; exit 3",
            ],
            &[".py"],
        )],
        Duration::from_secs(5),
    );
    f.write("a.py", "x = 1\n");
    let line = "[lsp: sh exited during initialize (exit status: 3; stderr: fatal: no interpreter for this project), so it counts as missing; install it or set lsp.servers.python]";
    for _ in 0..2 {
        assert_eq!(
            f.run(json!({"action": "symbols", "path": "a.py"})).await,
            ToolOutput::not_run(line)
        );
    }
    f.stop().await;
}

#[mm_testkit::test]
async fn the_rustup_shim_without_rust_analyzer_counts_as_missing() {
    // On machines where `rust-analyzer` is rustup's proxy without the component, it exits at
    // once with an error: that must read as "missing", not as a broken server.
    let shim = std::process::Command::new("rust-analyzer")
        .arg("--version")
        .output();
    let Ok(out) = shim else {
        common::skip("no rust-analyzer on PATH (rustup's proxy is the case tested)");
    };
    if out.status.success() {
        common::skip("rust-analyzer is installed for real here, not as rustup's bare proxy");
    }
    let f = Fixture::new(&[], Duration::from_secs(10));
    f.write("lib.rs", "fn main() {}\n");
    let out = f.run(json!({"action": "symbols", "path": "lib.rs"})).await;
    assert_eq!(out.status(), ToolStatus::Failed);
    assert!(
        out.text.starts_with("[lsp: rust-analyzer exited during initialize (exit status: 1; stderr: error: Unknown binary 'rust-analyzer'"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .ends_with("so it counts as missing; install it or set lsp.servers.rust]"),
        "{}",
        out.text
    );
    f.stop().await;
}

#[mm_testkit::test]
async fn a_server_that_hangs_is_stopped_after_the_timeout() {
    common::need_command("sh", "Git for Windows has it: its bin folder on PATH");
    let f = Fixture::with(
        &[("python", "sh", &["-c", "cat > /dev/null"], &[".py"])],
        Duration::from_millis(300),
        Duration::from_millis(300),
    );
    f.write("a.py", "x = 1\n");
    let started = std::time::Instant::now();
    assert_eq!(
        f.run(json!({"action": "symbols", "path": "a.py"})).await,
        ToolOutput::interrupted(
            "[lsp: sh did not answer initialize within 0.3 s; it was stopped and starts again on the next call (lsp.servers.python)]"
        )
    );
    assert!(started.elapsed() < common::HANG_GUARD);
    f.stop().await;
}

#[mm_testkit::test]
async fn a_server_that_hangs_or_crashes_on_a_request_is_one_line_and_starts_again() {
    common::need_command("python3", ".ci/run installs it");
    for (mode, expected) in [
        (
            "hang",
            "[lsp: python3 did not answer definition within 0.5 s; it was stopped and starts again on the next call (lsp.servers.python)]",
        ),
        (
            "crash",
            "[lsp: python3 exited while answering definition (exit status: 7; stderr: Traceback: something broke); it starts again on the next call (lsp.servers.python)]",
        ),
    ] {
        let f = Fixture::new(
            &[("python", "python3", &["fake_server.py", mode], &[".py"])],
            Duration::from_millis(500),
        );
        f.write("fake_server.py", &common::lsp::stand_in(FAKE_SERVER));
        f.write("a.py", "x = 1\n");
        let args = json!({"action": "definition", "path": "a.py", "line": 1, "column": 1});
        let out = f.run(args.clone()).await;
        assert_eq!(out, ToolOutput::interrupted(expected), "{mode}");
        let out = f.run(args).await;
        assert_eq!(out, ToolOutput::interrupted(expected), "{mode}, again");
        f.stop().await;
    }
}

#[cfg(unix)]
#[mm_testkit::test]
async fn a_server_killed_between_two_calls_is_started_again() {
    common::need_command("pylsp", ".ci/run installs it");
    let f = Fixture::new(
        &[(
            "python",
            "sh",
            &["-c", "echo $$ > server.pid; exec pylsp"],
            &[".py"],
        )],
        Duration::from_secs(30),
    );
    python_project(&f);
    let args = json!({"action": "definition", "path": "main.py", "line": 3, "symbol": "add_one"});
    assert_eq!(f.ok(args.clone()).await, "calc.py:1:5  def add_one(x):");
    let pid: i32 = f.read("server.pid").trim().parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The death of a process that is not ours to wait on has no event: poll, bounded.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    }) && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let text = f.ok(args).await;
    assert!(
        text.starts_with("[lsp: sh (lsp.servers.python) had exited (signal: 9 (SIGKILL)"),
        "{text}"
    );
    assert!(
        text.ends_with("since the last call; it was started again]\ncalc.py:1:5  def add_one(x):"),
        "{text}"
    );
    f.stop().await;
}

#[cfg(unix)]
#[mm_testkit::test]
async fn typescript_language_server_navigates_and_renames() {
    common::need_command("typescript-language-server", ".ci/run installs it");
    common::need_command("npm", ".ci/run installs it");
    // The server runs the project's own TypeScript: link the one installed with it.
    let root = std::process::Command::new("npm")
        .args(["root", "-g"])
        .output()
        .unwrap();
    let typescript = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim()).join("typescript");
    if !typescript.is_dir() {
        common::skip("typescript is not installed globally (.ci/run installs it)");
    }
    let f = Fixture::new(&[], Duration::from_secs(30));
    std::fs::create_dir_all(f.cwd.join("node_modules")).unwrap();
    std::os::unix::fs::symlink(&typescript, f.cwd.join("node_modules/typescript")).unwrap();
    f.write(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true}, "include": ["*.ts"]}"#,
    );
    let a = "export function addOne(x: number): number {\n  return x + 1;\n}\n";
    let b = "import { addOne } from \"./a\";\n\nconsole.log(addOne(41));\n";
    f.write("a.ts", a);
    f.write("b.ts", b);
    // Semantic answers come once the project is loaded, which the first diagnostics of a file
    // with a type error wait for.
    f.write("c.ts", "const n: number = \"text\";\n");
    assert_eq!(
        f.ok(json!({"action": "diagnostics", "path": "c.ts"})).await,
        "c.ts:1:7  error: Type 'string' is not assignable to type 'number'. [typescript 2322]"
    );
    let hover = f
        .ok(json!({"action": "hover", "path": "b.ts", "line": 3, "symbol": "addOne"}))
        .await;
    assert!(hover.contains("addOne(x: number): number"), "{hover}");
    let out = f
        .run(json!({"action": "rename", "path": "a.ts", "line": 1, "symbol": "addOne", "new_name": "plusOne"}))
        .await;
    assert_eq!(out.status(), ToolStatus::Completed, "{}", out.text);
    assert_eq!(f.read("a.ts"), a.replace("addOne", "plusOne"));
    assert_eq!(f.read("b.ts"), b.replace("addOne", "plusOne"));
    assert_eq!(out.diffs.len(), 2);
    f.stop().await;
}

// ---------------------------------------------------------------- over ACP

use mm_testkit as common;

#[mm_testkit::test]
async fn over_acp_a_rename_asks_first_and_shows_one_diff_per_file() {
    use common::acp::{Harness, test_config, updates};
    use common::{Answer, ScriptedModel};
    common::need_command("pylsp", ".ci/run installs it");
    let dir = tempfile::tempdir().unwrap();
    let cwd = mm_core::paths::canonical(dir.path()).unwrap();
    std::fs::write(cwd.join("calc.py"), CALC).unwrap();
    std::fs::write(cwd.join("main.py"), MAIN).unwrap();
    let mut config = test_config();
    config.yolo = false;
    let model = ScriptedModel::new(vec![
        Answer::call(
            "lsp",
            json!({"action": "references", "path": "calc.py", "line": 1, "symbol": "add_one"}),
        ),
        Answer::call(
            "lsp",
            json!({"action": "rename", "path": "calc.py", "line": 1, "symbol": "add_one", "new_name": "plus_one"}),
        ),
        Answer::text("renamed"),
    ]);
    let mut h = Harness::start(config, model);
    h.client.initialize(false).await;
    let (id, _) = h.client.new_session(&cwd).await;
    let pid = h.client.send_prompt(&id, "rename add_one").await;
    // The navigation ran without a dialog; the rename asks.
    let (before, req) = h.client.until_request("session/request_permission").await;
    let first = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(first["kind"], "read");
    assert_eq!(first["title"], "lsp references: calc.py:1");
    assert_eq!(req["params"]["toolCall"]["kind"], "edit");
    assert_eq!(req["params"]["toolCall"]["title"], "lsp rename: calc.py:1");
    h.client.select_option(&req, "allow").await;
    let (before, r) = h.client.until_response(pid).await;
    assert_eq!(r["result"]["stopReason"], "end_turn");
    let done = updates(&before)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .unwrap();
    assert_eq!(
        done["content"],
        json!([
            {"type": "diff", "path": cwd.join("calc.py"), "oldText": CALC, "newText": CALC.replace("add_one", "plus_one")},
            {"type": "diff", "path": cwd.join("main.py"), "oldText": MAIN, "newText": MAIN.replace("add_one", "plus_one")},
        ])
    );
    assert_eq!(
        done["rawOutput"]["output"],
        "renamed to plus_one: 2 edits in 2 files\ncalc.py (1 edit)\nmain.py (1 edit)"
    );
    h.finish().await.unwrap();
}
