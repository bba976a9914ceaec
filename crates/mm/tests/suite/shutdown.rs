//! One way out for every front end (main.rs): SIGINT, SIGTERM, SIGHUP and, over ACP, the end of
//! stdin cancel the running turn, the session is saved, the running command's process group is
//! stopped, and mm exits with the signal's code (ACP: 0). Each case runs the real binary with a
//! `bash` call that sleeps, and checks that the sleep is gone and the session file holds the
//! prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Unix permissions, signals and process groups throughout (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::mm_run::{RUN_LIMIT, Sandbox};
use common::{FakeServer, Reply};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const SLEEPER: &str = "echo $$ > pid.txt; exec sleep 300";

/// The pid the command wrote, once it has written it (the file holds a whole line). No event
/// marks a file written by a process mm started: poll, bounded.
async fn pid_of_command(dir: &Path) -> i32 {
    let file = dir.join("pid.txt");
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && text.ends_with('\n')
        {
            return text.trim().parse().unwrap();
        }
        assert!(started.elapsed() < RUN_LIMIT, "the command wrote no pid");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether a process is gone (or a zombie nobody reaps yet: it no longer runs).
fn gone(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_err()
        || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
}

/// The death of a process mm is not the parent of has no event: poll, bounded.
async fn assert_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        gone(pid),
        "the command (pid {pid}) still runs after mm left"
    );
}

/// The user messages of the one session file.
fn saved_prompts(sb: &Sandbox) -> Vec<String> {
    let file = sb.only_session();
    file["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

async fn one_shot_signal(signal: Signal, code: i32) {
    let server = FakeServer::start(vec![Reply::tool_call(
        "bash",
        json!({ "command": SLEEPER }),
    )])
    .await;
    let sb = Sandbox::new();
    let mut child = sb
        .command(
            Some(&server.url()),
            &["-c", "sessions.enabled=true", "-p", "wait for it"],
        )
        .spawn()
        .unwrap();
    let pid = pid_of_command(&sb.dir()).await;
    kill(Pid::from_raw(child.id().unwrap() as i32), signal).unwrap();
    let status = tokio::time::timeout(RUN_LIMIT, child.wait())
        .await
        .expect("mm did not exit after the signal")
        .unwrap();
    assert_eq!(status.code(), Some(code), "{signal}");
    assert_gone(pid).await;
    assert_eq!(saved_prompts(&sb), vec!["wait for it".to_string()]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn one_shot_sigint_cancels_saves_and_exits_130() {
    one_shot_signal(Signal::SIGINT, 130).await;
}

#[mm_testkit::test]
async fn one_shot_sigterm_cancels_saves_and_exits_143() {
    one_shot_signal(Signal::SIGTERM, 143).await;
}

#[mm_testkit::test]
async fn one_shot_sighup_cancels_saves_and_exits_129() {
    one_shot_signal(Signal::SIGHUP, 129).await;
}

/// A raw JSON-RPC client of a spawned `mm -acp`.
struct Acp {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Acp {
    fn spawn(sb: &Sandbox, url: &str) -> Acp {
        let mut cmd = sb.command(Some(url), &["-acp", "-c", "sessions.enabled=true"]);
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Acp {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, id: i64, method: &str, params: Value) {
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Reads messages until the response to `id`.
    async fn response(&mut self, id: i64) -> Value {
        loop {
            let line = tokio::time::timeout(RUN_LIMIT, self.lines.next_line())
                .await
                .expect("no answer from mm")
                .unwrap()
                .expect("mm closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id && v.get("method").is_none() {
                return v;
            }
        }
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id().unwrap() as i32)
    }
}

/// `mm -acp` with a prompt whose `bash` call sleeps; `end` ends the process (a signal, or closing
/// stdin); mm must cancel the turn, save, stop the command and exit 0 (docs/acp-reference.md, "The
/// end of the connection"; the connection is over, so the prompt is not answered).
async fn acp_ends_during_a_command(end: impl FnOnce(&mut Acp)) {
    let server = FakeServer::start(vec![Reply::tool_call(
        "bash",
        json!({ "command": SLEEPER }),
    )])
    .await;
    let sb = Sandbox::new();
    let mut acp = Acp::spawn(&sb, &server.url());
    acp.send(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await;
    acp.response(1).await;
    acp.send(2, "session/new", json!({"cwd": sb.dir(), "mcpServers": []}))
        .await;
    let id = acp.response(2).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    acp.send(
        3,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "wait for it"}]}),
    )
    .await;
    let pid = pid_of_command(&sb.dir()).await;
    end(&mut acp);
    let status = tokio::time::timeout(RUN_LIMIT, acp.child.wait())
        .await
        .expect("mm did not exit")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_gone(pid).await;
    assert_eq!(saved_prompts(&sb), vec!["wait for it".to_string()]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
async fn acp_sigterm_cancels_saves_and_exits_0() {
    acp_ends_during_a_command(|acp| kill(acp.pid(), Signal::SIGTERM).unwrap()).await;
}

#[mm_testkit::test]
async fn acp_sighup_cancels_saves_and_exits_0() {
    acp_ends_during_a_command(|acp| kill(acp.pid(), Signal::SIGHUP).unwrap()).await;
}

#[mm_testkit::test]
async fn acp_end_of_stdin_cancels_saves_and_exits_0() {
    acp_ends_during_a_command(|acp| drop(acp.stdin.take())).await;
}

/// The interactive session in a pseudo-terminal: a signal during a turn cancels it, saves the
/// session, stops the command and leaves with the signal's code.
fn interactive_signal(signal: Signal, code: i32) {
    use expectrl::{Expect, Session};

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(FakeServer::start(vec![Reply::tool_call(
        "bash",
        json!({ "command": SLEEPER }),
    )]));
    let sb = Sandbox::new();
    let cmd = common::pty::mm_command(
        sb.home.path(),
        &sb.dir(),
        &server.url(),
        &["-c", "sessions.enabled=true"],
    );
    let mut mm = Session::spawn(cmd).expect("spawn mm in a pty");
    mm.set_expect_timeout(Some(RUN_LIMIT));
    mm.expect("> ").unwrap();
    mm.send_line("wait for it").unwrap();
    let pid = runtime.block_on(pid_of_command(&sb.dir()));
    let mm_pid = mm.get_process().pid().as_raw();
    kill(Pid::from_raw(mm_pid), signal).unwrap();
    // Read until mm closes the terminal, then collect its status.
    mm.expect(expectrl::Eof).unwrap();
    let status = mm.get_process().wait().unwrap();
    assert_eq!(
        format!("{status:?}"),
        format!("Exited(Pid({mm_pid}), {code})"),
        "{signal}"
    );
    runtime.block_on(assert_gone(pid));
    assert_eq!(saved_prompts(&sb), vec!["wait for it".to_string()]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[mm_testkit::test]
fn interactive_sigterm_cancels_saves_and_exits_143() {
    interactive_signal(Signal::SIGTERM, 143);
}

#[mm_testkit::test]
fn interactive_sighup_cancels_saves_and_exits_129() {
    interactive_signal(Signal::SIGHUP, 129);
}
