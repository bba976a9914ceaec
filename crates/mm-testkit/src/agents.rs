//! Asking other agents from the real binary (crates/mm/tests/agents*.rs): `mm` in a sandbox with `mm` on its
//! `PATH` (so an agent configured as `mm -acp` is the mm under test), the agents of
//! `agents/` of this crate, an `mm -acp` driven by the ACP test client, the tool results the model
//! server saw, and the processes a test left in its folder.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::acp::TestClient;
use super::mm_run::{self, Sandbox, finish};

pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("agents")
}

/// The test needs the ACP Python SDK (`import acp.stdio`): without it the test is skipped with
/// the reason (under `CI=true` it fails).
pub fn need_python_sdk() {
    let there = std::process::Command::new("python3")
        .args(["-c", "import acp.stdio"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !there {
        crate::skip(
            "the ACP Python SDK is not installed (pip install agent-client-protocol==0.12.1)",
        );
    }
}

/// The test needs python3 (the stand-in agents are Python scripts).
pub fn need_python() {
    let there = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !there {
        crate::skip("python3 is not installed");
    }
}

/// The test needs a kernel that fences (Landlock); without it mm says so in its banner, and
/// there is no fence to check: the test is skipped with the reason.
pub fn need_landlock() {
    if mm_tools::sandbox::landlock_abi() == 0 {
        crate::skip("this kernel has no Landlock: the asked agent's fence cannot be tested");
    }
}

/// `PATH` with the directory of the `mm` under test first, so that `mm -acp` names it.
pub fn path_with_mm() -> String {
    let bin = super::mm_binary();
    let bin = bin.parent().unwrap();
    let old = std::env::var("PATH").unwrap_or_default();
    format!("{}:{old}", bin.display())
}

/// `mm ARGS` in the sandbox with `mm` on its `PATH`.
pub fn command(sandbox: &Sandbox, url: Option<&str>, args: &[&str]) -> tokio::process::Command {
    let mut c = sandbox.command(url, args);
    c.env("PATH", path_with_mm());
    c
}

pub async fn run(sandbox: &Sandbox, url: Option<&str>, args: &[&str]) -> mm_run::Run {
    finish(command(sandbox, url, args).spawn().unwrap()).await
}

/// The user configuration of the sandbox.
pub fn configure(sandbox: &Sandbox, toml: &str) {
    let path = sandbox.user_config();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, toml).unwrap();
}

pub const SECOND_MM: &str = "[agents.second]\ncommand = \"mm\"\nargs = [\"-acp\"]\n";

/// The processes (not zombies) whose working directory is inside `dir`: what a test started
/// there and what those left behind.
pub fn processes_in(dir: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        if zombie {
            continue;
        }
        if let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd"))
            && cwd.starts_with(dir)
        {
            pids.push(pid);
        }
    }
    pids
}

/// Waits until no process runs in `dir` (or only `except`). A process's end has no event to
/// await here: a bounded poll.
pub async fn until_no_process_in(dir: &Path, except: &[i32]) -> Vec<i32> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<i32> = processes_in(dir)
            .into_iter()
            .filter(|p| !except.contains(p))
            .collect();
        if left.is_empty() || tokio::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The content of the last `tool` message of a chat request.
pub fn last_tool_result(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool message in {request:#}"))
        .to_string()
}

pub fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// `mm -acp` spawned in the sandbox, driven by the validating test client.
pub struct Acp {
    pub client: TestClient,
    pub child: tokio::process::Child,
}

pub fn spawn_acp(sandbox: &Sandbox, url: &str) -> Acp {
    let mut c = command(sandbox, Some(url), &["-acp"]);
    c.stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    Acp {
        client: TestClient::new(Box::new(stdin), Box::new(stdout)),
        child,
    }
}

impl Acp {
    pub async fn finish(mut self) -> mm_run::Run {
        self.client.close().await;
        self.client.drain().await;
        finish(self.child).await
    }
}

/// The `[agents.<name>]` entry of the recording agent (agents/mode_agent.py): it appends
/// every message it receives to `log` and offers the modes `modes` (comma-separated ids, or
/// `none`).
pub fn mode_agent(name: &str, log: &Path, modes: &str) -> String {
    format!(
        "[agents.{name}]\ncommand = \"python3\"\nargs = [{:?}, {:?}, {:?}]\n",
        agents_dir().join("mode_agent.py").display().to_string(),
        log.display().to_string(),
        modes
    )
}

/// What the recording agent received, in order: each request's or notification's method
/// (`session/set_mode` with the mode id after it), `response` for an answer to its own request.
pub fn received(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let msg: Value = serde_json::from_str(line).unwrap();
            match msg["method"].as_str() {
                Some("session/set_mode") => {
                    format!(
                        "session/set_mode {}",
                        msg["params"]["modeId"].as_str().unwrap()
                    )
                }
                Some(method) => method.to_string(),
                None => "response".to_string(),
            }
        })
        .collect()
}

/// A folder outside the temp folders, which `workspace-write` does not open: what a write that
/// must be refused aims at ([`super::outside_the_fence`]).
pub fn outside() -> tempfile::TempDir {
    super::outside_the_fence()
}
