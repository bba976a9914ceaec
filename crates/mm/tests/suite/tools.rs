//! The four core tools, run as the dispatcher runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Unix permissions, signals and process groups throughout (docs/platforms.md)
#![cfg(unix)]
use mm_testkit as common;

use std::fs;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{HANG_GUARD, Recorder};
use mm_core::event::{FileDiff, ToolKind, ToolStatus};
use mm_tools::process::Supervisor;
use mm_tools::tools::bash::Bash;
use mm_tools::tools::edit_file::EditFile;
use mm_tools::tools::read_file::ReadFile;
use mm_tools::tools::write_file::WriteFile;
use mm_tools::tools::{CallContext, Describe, Outcome, Tool, ToolOutput, wire_definition};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Opts {
    max_output: usize,
}

const DEFAULT: Opts = Opts { max_output: 30_000 };

/// `bash` with the default timeout.
fn bash() -> Bash {
    bash_timing_out_after(Duration::from_secs(120))
}

fn bash_timing_out_after(timeout: Duration) -> Bash {
    Bash {
        timeout,
        bash: None,
        processes: Supervisor::new(),
        sandbox: Default::default(),
        read_only: None,
    }
}

async fn run_with(
    tool: &dyn Tool,
    cwd: &Path,
    args: Value,
    opts: Opts,
    cancel: &CancellationToken,
) -> ToolOutput {
    let frontend = Recorder::new();
    let call = CallContext::new(
        "call_1",
        cwd,
        opts.max_output,
        cancel,
        mm_core::event::PermissionMode::Yolo,
        &frontend,
    );
    tool.run(args, &call).await
}

async fn run(tool: &dyn Tool, cwd: &Path, args: Value) -> ToolOutput {
    run_with(tool, cwd, args, DEFAULT, &CancellationToken::new()).await
}

fn done(text: &str) -> ToolOutput {
    ToolOutput::completed(text)
}

fn failed(text: &str) -> ToolOutput {
    ToolOutput::not_run(text)
}

/// Ran, but did not finish (timed out, cancelled).
fn stopped(text: &str) -> ToolOutput {
    ToolOutput::interrupted(text)
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

/// Whether a process exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits (bounded) for a process that was signalled to go away; there is no event to await
/// for the death of a process we are not the parent of.
async fn gone_within(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

/// Reads a pid written by the command into a FIFO (blocks until the command writes it).
async fn pid_from_fifo(fifo: PathBuf) -> u32 {
    tokio::task::spawn_blocking(move || fs::read_to_string(fifo).unwrap())
        .await
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

// ---------------------------------------------------------------- definitions

#[mm_testkit::test]
fn wire_definitions_are_small() {
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(bash()),
        Box::new(ReadFile::default()),
        Box::new(WriteFile::default()),
        Box::new(EditFile::default()),
    ];
    let defs: Vec<Value> = tools.iter().map(|t| wire_definition(t.as_ref())).collect();
    let text = serde_json::to_string(&defs).unwrap();
    assert!(text.len() < 4000, "{} characters", text.len());
}

#[mm_testkit::test]
fn schemas_name_their_fields() {
    let required = |t: &dyn Tool| t.parameters()["required"].clone();
    assert_eq!(required(&bash()), json!(["command"]));
    assert_eq!(required(&ReadFile::default()), json!(["path"]));
    assert_eq!(required(&WriteFile::default()), json!(["path", "content"]));
    assert_eq!(
        required(&EditFile::default()),
        json!(["path", "old_text", "new_text"])
    );
}

#[mm_testkit::test]
fn names_kinds_titles_locations_gates() {
    let cwd = Path::new("/w");
    let args = json!({"path": "src/a.rs", "command": "ls -la"});
    let cases: [(&dyn Tool, &str, ToolKind, &str, bool); 4] = [
        (&bash(), "bash", ToolKind::Execute, "bash: ls -la", true),
        (
            &ReadFile::default(),
            "read_file",
            ToolKind::Read,
            "read_file: src/a.rs",
            false,
        ),
        (
            &WriteFile::default(),
            "write_file",
            ToolKind::Edit,
            "write_file: src/a.rs",
            true,
        ),
        (
            &EditFile::default(),
            "edit_file",
            ToolKind::Edit,
            "edit_file: src/a.rs",
            true,
        ),
    ];
    for (tool, name, kind, title, gated) in cases {
        assert_eq!(tool.name(), name);
        assert_eq!(tool.kind(&args), kind);
        assert_eq!(tool.title(&args), title);
        assert_eq!(tool.title(&json!("garbage")), name);
        assert_eq!(tool.title(&json!({"path": 3, "command": []})), name);
        // Arguments that fit each of the four (none of them refuses a field it does not know).
        let fitting = json!({"path": "src/a.rs", "command": "ls -la", "content": "x",
                             "old_text": "a", "new_text": "b"});
        assert_eq!(tool.gated(&tool.parse(fitting).unwrap()), gated);
        assert!(tool.locations(&json!("garbage"), cwd).is_empty());
    }
    assert!(bash().locations(&args, cwd).is_empty());
    for tool in [
        &ReadFile::default() as &dyn Tool,
        &WriteFile::default(),
        &EditFile::default(),
    ] {
        assert_eq!(
            tool.locations(&args, cwd),
            vec![PathBuf::from("/w/src/a.rs")]
        );
    }
}

// ---------------------------------------------------------------- bash

#[mm_testkit::test]
async fn bash_merges_stdout_and_stderr_in_order() {
    let (_d, cwd) = tmp();
    let out = run(
        &bash(),
        &cwd,
        json!({"command": "echo a; echo b >&2; echo c"}),
    )
    .await;
    assert_eq!(out, done("a\nb\nc\n"));
}

#[mm_testkit::test]
async fn bash_reports_a_non_zero_exit_code_and_still_completes() {
    let (_d, cwd) = tmp();
    let out = run(&bash(), &cwd, json!({"command": "echo x; exit 3"})).await;
    assert_eq!(out, done("x\n[exit code: 3]"));
    let out = run(&bash(), &cwd, json!({"command": "printf x; exit 1"})).await;
    assert_eq!(out, done("x\n[exit code: 1]"));
    let out = run(&bash(), &cwd, json!({"command": "exit 2"})).await;
    assert_eq!(out, done("[exit code: 2]"));
}

#[mm_testkit::test]
async fn bash_runs_in_the_cwd_with_no_stdin_and_no_git_prompt() {
    let (_d, cwd) = tmp();
    let out = run(
        &bash(),
        &cwd,
        json!({"command": "pwd; cat; echo \"prompt=$GIT_TERMINAL_PROMPT\""}),
    )
    .await;
    assert_eq!(out, done(&format!("{}\nprompt=0\n", cwd.display())));
}

#[mm_testkit::test]
async fn bash_runs_in_its_own_session_and_group() {
    let (_d, cwd) = tmp();
    let out = run(
        &bash(),
        &cwd,
        json!({"command": "read -r _ _ _ _ pgrp sid _ < /proc/$$/stat; echo \"$$ $pgrp $sid\""}),
    )
    .await;
    let ids: Vec<&str> = out.text.split_whitespace().collect();
    assert_eq!(ids.len(), 3, "{}", out.text);
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0], ids[2]);
}

#[mm_testkit::test]
async fn bash_converts_invalid_utf8_lossily() {
    let (_d, cwd) = tmp();
    let out = run(&bash(), &cwd, json!({"command": "printf 'a\\xffb'"})).await;
    assert_eq!(out, done("a\u{FFFD}b"));
}

#[mm_testkit::test]
async fn bash_times_out_keeping_the_output() {
    let (_d, cwd) = tmp();
    let start = Instant::now();
    let out = run(
        &bash(),
        &cwd,
        json!({"command": "echo before; sleep 30", "timeout": 1}),
    )
    .await;
    assert_eq!(out, stopped("before\n[timed out after 1 s]"));
    // The timeout fired: the call did not wait for the command.
    assert!(start.elapsed() < HANG_GUARD, "{:?}", start.elapsed());
}

#[mm_testkit::test]
async fn bash_default_timeout_comes_from_its_settings() {
    let (_d, cwd) = tmp();
    let out = run(
        &bash_timing_out_after(Duration::from_millis(200)),
        &cwd,
        json!({"command": "sleep 30"}),
    )
    .await;
    assert_eq!(out, stopped("[timed out after 0.2 s]"));
}

#[mm_testkit::test]
async fn bash_timeout_above_the_maximum_is_capped_not_refused() {
    let (_d, cwd) = tmp();
    let out = run(
        &bash(),
        &cwd,
        json!({"command": "echo hi", "timeout": 99_999}),
    )
    .await;
    assert_eq!(out, done("hi\n"));
}

#[mm_testkit::test]
async fn bash_returns_when_a_background_job_holds_the_pipe() {
    let (_d, cwd) = tmp();
    let start = Instant::now();
    let out = run(&bash(), &cwd, json!({"command": "sleep 300 & echo $!"})).await;
    let elapsed = start.elapsed();
    assert_eq!(out.status(), ToolStatus::Completed);
    let pid: u32 = out.text.trim().parse().unwrap();
    // Returned without waiting for the job (how soon: bench/latency.sh).
    assert!(elapsed < HANG_GUARD, "took {elapsed:?}");
    // A finished call leaves its jobs alone.
    assert!(alive(pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[mm_testkit::test]
async fn bash_background_job_keeps_writing_after_the_call() {
    // The job writes to the pipe after the call returned: the pipe must still be drained, or
    // the job dies of SIGPIPE.
    let (_d, cwd) = tmp();
    let fifo = cwd.join("pid");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let tool = bash();
    let call = run(
        &tool,
        &cwd,
        json!({"command": "(while :; do echo tick; sleep 0.05; done) & echo $! > pid; echo started"}),
    );
    let (out, pid) = tokio::join!(call, pid_from_fifo(fifo));
    assert_eq!(out.status(), ToolStatus::Completed);
    assert!(out.text.contains("started\n"), "{}", out.text);
    // No event marks "the job wrote again": let it write for a while.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(alive(pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[mm_testkit::test]
async fn bash_output_is_bounded_and_marked() {
    let (_d, cwd) = tmp();
    let out = run_with(
        &bash(),
        &cwd,
        json!({"command": "head -c 50000000 /dev/zero | tr '\\0' a"}),
        Opts { max_output: 1000 },
        &CancellationToken::new(),
    )
    .await;
    let expected = format!(
        "{}\n[… {} characters omitted …]\n{}",
        "a".repeat(500),
        50_000_000 - 1000,
        "a".repeat(500)
    );
    assert_eq!(out, done(&expected));
}

#[mm_testkit::test]
async fn bash_bounded_output_keeps_the_exit_code_in_the_tail() {
    let (_d, cwd) = tmp();
    let out = run_with(
        &bash(),
        &cwd,
        json!({"command": "seq 1 100000; exit 4"}),
        Opts { max_output: 40 },
        &CancellationToken::new(),
    )
    .await;
    let full: String =
        (1..=100_000).map(|i| format!("{i}\n")).collect::<String>() + "[exit code: 4]";
    assert_eq!(out, done(&mm_tools::tools::cap_output(&full, 40)));
}

#[mm_testkit::test]
async fn bash_says_how_many_lines_it_cut_so_the_tail_counts_exactly() {
    let (_d, cwd) = tmp();
    let out = run_with(
        &bash(),
        &cwd,
        json!({"command": "seq 1 100000; exit 4"}),
        Opts { max_output: 1000 },
        &CancellationToken::new(),
    )
    .await;
    assert!(
        out.text.contains(" lines omitted …]\n"),
        "the marker counts the lines: {}",
        out.text
    );
    assert_eq!(
        mm_term::render::tail(&out.text),
        vec![
            "… 99997 earlier lines",
            "99998",
            "99999",
            "100000",
            "[exit code: 4]"
        ]
    );
}

#[mm_testkit::test]
async fn bash_cancel_kills_the_group_at_once() {
    let (_d, cwd) = tmp();
    let fifo = cwd.join("pid");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let cancel = CancellationToken::new();
    let tool = bash();
    let call = run_with(
        &tool,
        &cwd,
        json!({"command": "echo working; sleep 300 & echo $! > pid; wait"}),
        DEFAULT,
        &cancel,
    );
    let canceller = async {
        let pid = pid_from_fifo(fifo.clone()).await;
        cancel.cancel();
        (pid, Instant::now())
    };
    let (out, (pid, cancelled_at)) = tokio::join!(call, canceller);
    // Answered at once, not when the command ends (how soon: bench/latency.sh).
    assert!(cancelled_at.elapsed() < HANG_GUARD);
    assert_eq!(out, stopped("working\n[cancelled]"));
    assert!(gone_within(pid, HANG_GUARD).await);
}

#[mm_testkit::test]
async fn bash_cancel_escalates_to_sigkill_without_waiting() {
    let (_d, cwd) = tmp();
    let fifo = cwd.join("pid");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let cancel = CancellationToken::new();
    // The rule does not depend on the length of the grace (2 s in mm): a shorter one keeps the
    // test short.
    let grace = Duration::from_secs(1);
    let tool = Bash {
        timeout: Duration::from_secs(120),
        bash: None,
        processes: std::sync::Arc::new(Supervisor::with_grace(grace)),
        sandbox: Default::default(),
        read_only: None,
    };
    let call = run_with(
        &tool,
        &cwd,
        json!({"command": "trap '' TERM; sleep 300 & echo $! > pid; wait"}),
        DEFAULT,
        &cancel,
    );
    let canceller = async {
        let pid = pid_from_fifo(fifo.clone()).await;
        cancel.cancel();
        (pid, Instant::now())
    };
    let (out, (pid, cancelled_at)) = tokio::join!(call, canceller);
    // Answered before the escalation, not after it.
    assert!(cancelled_at.elapsed() < grace);
    assert_eq!(out, stopped("[cancelled]"));
    // SIGTERM is ignored: only the SIGKILL after the grace ends it.
    assert!(alive(pid));
    assert!(gone_within(pid, grace + HANG_GUARD).await);
}

#[mm_testkit::test]
async fn bash_that_cannot_start_fails_with_a_reason() {
    let out = run(
        &bash(),
        Path::new("/nonexistent/mm-test-dir"),
        json!({"command": "true"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "[could not start bash in /nonexistent/mm-test-dir: No such file or directory (os error 2)]"
        )
    );
}

#[mm_testkit::test]
async fn bash_bad_arguments() {
    let (_d, cwd) = tmp();
    let cases = [
        (
            json!({}),
            "[bad arguments for bash: missing field `command`; arguments given: {}]",
        ),
        (
            json!({"command": 5}),
            "[bad arguments for bash: invalid type: integer `5`, expected a string; arguments given: {\"command\":5}]",
        ),
        (
            json!({"command": "true", "timeout": "soon"}),
            "[bad arguments for bash: invalid type: string \"soon\", expected u64; arguments given: {\"command\":\"true\",\"timeout\":\"soon\"}]",
        ),
        (
            json!("ls"),
            "[bad arguments for bash: invalid type: string \"ls\", expected struct Args; arguments given: \"ls\"]",
        ),
    ];
    for (args, text) in cases {
        assert_eq!(run(&bash(), &cwd, args).await, failed(text));
    }
}

// ---------------------------------------------------------------- read_file

#[mm_testkit::test]
async fn read_file_returns_the_text() {
    let (_d, cwd) = tmp();
    fs::write(cwd.join("a.txt"), "one\ntwo\n").unwrap();
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "a.txt"})).await,
        done("one\ntwo\n")
    );
    let abs = cwd.join("a.txt").display().to_string();
    assert_eq!(
        run(&ReadFile::default(), Path::new("/"), json!({"path": abs})).await,
        done("one\ntwo\n")
    );
}

#[mm_testkit::test]
async fn read_file_windows_with_offset_and_limit() {
    let (_d, cwd) = tmp();
    fs::write(cwd.join("a.txt"), "1\n2\n3\n4\n5\n").unwrap();
    assert_eq!(
        run(
            &ReadFile::default(),
            &cwd,
            json!({"path": "a.txt", "offset": 2, "limit": 2})
        )
        .await,
        done("[lines 2-3 of 5; pass offset to read on]\n2\n3\n")
    );
    assert_eq!(
        run(
            &ReadFile::default(),
            &cwd,
            json!({"path": "a.txt", "offset": 4})
        )
        .await,
        done("[lines 4-5 of 5; pass offset to read on]\n4\n5\n")
    );
    assert_eq!(
        run(
            &ReadFile::default(),
            &cwd,
            json!({"path": "a.txt", "offset": 6})
        )
        .await,
        failed("offset 6 is past the end of the file (5 lines)")
    );
}

#[mm_testkit::test]
async fn read_file_stops_at_2000_lines() {
    let (_d, cwd) = tmp();
    let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    fs::write(cwd.join("big.txt"), &text).unwrap();
    let first: String = (1..=2000).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "big.txt"})).await,
        done(&format!(
            "[lines 1-2000 of 2500; pass offset to read on]\n{first}"
        ))
    );
    let rest: String = (2001..=2500).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        run(
            &ReadFile::default(),
            &cwd,
            json!({"path": "big.txt", "offset": 2001, "limit": 5000})
        )
        .await,
        done(&format!(
            "[lines 2001-2500 of 2500; pass offset to read on]\n{rest}"
        ))
    );
}

#[mm_testkit::test]
async fn read_file_stops_at_the_output_cap() {
    let (_d, cwd) = tmp();
    let text: String = (0..50).map(|i| format!("line {i:04}\n")).collect();
    fs::write(cwd.join("a.txt"), &text).unwrap();
    let out = run_with(
        &ReadFile::default(),
        &cwd,
        json!({"path": "a.txt"}),
        Opts { max_output: 100 },
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        out,
        done("[lines 1-3 of 50; pass offset to read on]\nline 0000\nline 0001\nline 0002\n")
    );
}

#[mm_testkit::test]
async fn read_file_lists_a_directory() {
    let (_d, cwd) = tmp();
    fs::create_dir(cwd.join("sub")).unwrap();
    fs::write(cwd.join("b.txt"), "").unwrap();
    fs::write(cwd.join("a.txt"), "").unwrap();
    fs::write(cwd.join(".hidden"), "").unwrap();
    symlink(cwd.join("sub"), cwd.join("link")).unwrap();
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "."})).await,
        done(".hidden\na.txt\nb.txt\nlink/\nsub/")
    );
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "sub"})).await,
        done("[empty directory]")
    );
}

#[mm_testkit::test]
async fn read_file_recognises_binary_and_empty_files() {
    let (_d, cwd) = tmp();
    fs::write(cwd.join("nul.bin"), b"ab\0cd").unwrap();
    fs::write(cwd.join("ctl.bin"), b"\xe9\x02\xff").unwrap();
    fs::write(cwd.join("empty.txt"), b"").unwrap();
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "nul.bin"})).await,
        done("[binary file, 5 bytes]")
    );
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "ctl.bin"})).await,
        done("[binary file, 3 bytes]")
    );
    assert_eq!(
        run(&ReadFile::default(), &cwd, json!({"path": "empty.txt"})).await,
        done("[empty file]")
    );
}

/// Issue 41, point 7: legacy-encoded text is text, and the model is told how it was decoded.
#[mm_testkit::test]
async fn read_file_decodes_legacy_text_and_names_the_encoding() {
    let (_d, cwd) = tmp();
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "latin1.txt",
            b"caf\xe9\nna\xefve\n",
            "[decoded from Latin-1]\ncaf\u{e9}\nna\u{ef}ve\n",
        ),
        (
            "cp1252.txt",
            b"say \x93hi\x94 \x96 \x80 5\n",
            "[decoded from Windows-1252]\nsay \u{201c}hi\u{201d} \u{2013} \u{20ac} 5\n",
        ),
        (
            "le.txt",
            b"\xff\xfea\x00=\x00\xe9\x00\r\x00\n\x00",
            "[decoded from UTF-16LE]\na=\u{e9}\r\n",
        ),
        (
            "be.txt",
            b"\xfe\xff\x00a\x00=\x00\xe9\x00\n",
            "[decoded from UTF-16BE]\na=\u{e9}\n",
        ),
        ("bom.cs", b"\xef\xbb\xbfusing System;\n", "using System;\n"),
    ];
    for (name, bytes, text) in cases {
        fs::write(cwd.join(name), bytes).unwrap();
        assert_eq!(
            run(&ReadFile::default(), &cwd, json!({"path": name})).await,
            done(text),
            "{name}"
        );
    }
}

#[mm_testkit::test]
async fn read_file_bad_arguments() {
    let (_d, cwd) = tmp();
    let missing = format!(
        "nope.txt does not exist ({}/nope.txt); check the path, or list its directory with read_file",
        cwd.display()
    );
    let cases = [
        (json!({"path": "nope.txt"}), missing.as_str()),
        (
            json!({}),
            "[bad arguments for read_file: missing field `path`; arguments given: {}]",
        ),
        (
            json!({"path": "a", "offset": "x"}),
            "[bad arguments for read_file: invalid type: string \"x\", expected usize; arguments given: {\"path\":\"a\",\"offset\":\"x\"}]",
        ),
        (
            json!({"path": "a", "limit": -1}),
            "[bad arguments for read_file: invalid value: integer `-1`, expected usize; arguments given: {\"path\":\"a\",\"limit\":-1}]",
        ),
    ];
    for (args, text) in cases {
        assert_eq!(run(&ReadFile::default(), &cwd, args).await, failed(text));
    }
}

// ---------------------------------------------------------------- write_file

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[mm_testkit::test]
async fn write_file_creates_parents_with_the_default_mode() {
    let (_d, cwd) = tmp();
    let out = run(
        &WriteFile::default(),
        &cwd,
        json!({"path": "sub/dir/new.txt", "content": "héllo"}),
    )
    .await;
    let abs = cwd.join("sub/dir/new.txt");
    assert_eq!(
        out,
        ToolOutput {
            text: "wrote 6 bytes to sub/dir/new.txt".into(),
            outcome: Outcome::Completed,
            diffs: vec![FileDiff {
                path: abs.clone(),
                old_text: None,
                new_text: "héllo".into(),
            }],
        }
    );
    assert_eq!(fs::read_to_string(&abs).unwrap(), "héllo");
    // What a plain create gives under this process's umask.
    let reference = cwd.join("reference");
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(&reference)
        .unwrap();
    assert_eq!(mode(&abs), mode(&reference));
    assert_eq!(entries(&cwd.join("sub/dir")), vec!["new.txt"]);
}

#[mm_testkit::test]
async fn write_file_overwrites_keeping_the_mode() {
    let (_d, cwd) = tmp();
    let path = cwd.join("run.sh");
    fs::write(&path, "old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
    let out = run(
        &WriteFile::default(),
        &cwd,
        json!({"path": "run.sh", "content": "new"}),
    )
    .await;
    assert_eq!(
        out.diffs,
        vec![FileDiff {
            path: path.clone(),
            old_text: Some("old".into()),
            new_text: "new".into(),
        }]
    );
    assert_eq!(out.text, "wrote 3 bytes to run.sh");
    assert_eq!(fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(mode(&path), 0o751);
    assert_eq!(entries(&cwd), vec!["run.sh"]);
}

#[mm_testkit::test]
async fn write_file_through_a_symlink_keeps_the_link() {
    let (_d, cwd) = tmp();
    fs::create_dir(cwd.join("real")).unwrap();
    fs::write(cwd.join("real/target.txt"), "old").unwrap();
    symlink("real/target.txt", cwd.join("link.txt")).unwrap();
    let out = run(
        &WriteFile::default(),
        &cwd,
        json!({"path": "link.txt", "content": "new"}),
    )
    .await;
    assert_eq!(out.status(), ToolStatus::Completed);
    assert_eq!(out.diffs[0].old_text.as_deref(), Some("old"));
    assert!(
        fs::symlink_metadata(cwd.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::read_to_string(cwd.join("real/target.txt")).unwrap(),
        "new"
    );
    assert_eq!(entries(&cwd), vec!["link.txt", "real"]);
    assert_eq!(entries(&cwd.join("real")), vec!["target.txt"]);
}

#[mm_testkit::test]
async fn write_file_through_a_dangling_symlink_creates_the_target() {
    let (_d, cwd) = tmp();
    symlink("missing.txt", cwd.join("link.txt")).unwrap();
    let out = run(
        &WriteFile::default(),
        &cwd,
        json!({"path": "link.txt", "content": "x"}),
    )
    .await;
    assert_eq!(out.diffs[0].old_text, None);
    assert!(
        fs::symlink_metadata(cwd.join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(cwd.join("missing.txt")).unwrap(), "x");
}

#[mm_testkit::test]
async fn write_file_refuses_a_read_only_file() {
    let (_d, cwd) = tmp();
    let path = cwd.join("ro.txt");
    fs::write(&path, "keep").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let out = run(
        &WriteFile::default(),
        &cwd,
        json!({"path": "ro.txt", "content": "new"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "ro.txt is read-only; it was not changed (make it writable with chmod u+w first if it should be)"
        )
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "keep");
    assert_eq!(entries(&cwd), vec!["ro.txt"]);
}

#[mm_testkit::test]
async fn write_file_bad_arguments() {
    let (_d, cwd) = tmp();
    fs::create_dir(cwd.join("d")).unwrap();
    let cases = [
        (
            json!({"path": "d", "content": "x"}),
            "d is a directory, not a file",
        ),
        (
            json!({"path": "a.txt"}),
            "[bad arguments for write_file: missing field `content`; arguments given: {\"path\":\"a.txt\"}]",
        ),
        (
            json!({"path": "a.txt", "content": ["x"]}),
            "[bad arguments for write_file: invalid type: sequence, expected a string; arguments given: {\"path\":\"a.txt\",\"content\":[\"x\"]}]",
        ),
    ];
    for (args, text) in cases {
        assert_eq!(run(&WriteFile::default(), &cwd, args).await, failed(text));
    }
    assert_eq!(entries(&cwd), vec!["d"]);
}

// ---------------------------------------------------------------- edit_file

async fn edit(cwd: &Path, args: Value) -> ToolOutput {
    run(&EditFile::default(), cwd, args).await
}

#[mm_testkit::test]
async fn edit_file_replaces_a_unique_match() {
    let (_d, cwd) = tmp();
    let path = cwd.join("a.rs");
    fs::write(&path, "fn a() {}\nfn b() {}\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let out = edit(
        &cwd,
        json!({"path": "a.rs", "old_text": "fn b()", "new_text": "fn c()"}),
    )
    .await;
    assert_eq!(
        out,
        ToolOutput {
            text: "edited a.rs: replaced 1 occurrence".into(),
            outcome: Outcome::Completed,
            diffs: vec![FileDiff {
                path: path.clone(),
                old_text: Some("fn a() {}\nfn b() {}\n".into()),
                new_text: "fn a() {}\nfn c() {}\n".into(),
            }],
        }
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "fn a() {}\nfn c() {}\n");
    assert_eq!(mode(&path), 0o640);
    assert_eq!(entries(&cwd), vec!["a.rs"]);
}

#[mm_testkit::test]
async fn edit_file_several_matches_need_replace_all() {
    let (_d, cwd) = tmp();
    let path = cwd.join("a.txt");
    fs::write(&path, "x = 1\ny = 2\nx = 1\n\nx = 1\n").unwrap();
    let out = edit(
        &cwd,
        json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 9"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "old_text matches 3 times in a.txt (lines 1, 3, 5); include more surrounding lines to make it unique, or set replace_all"
        )
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "x = 1\ny = 2\nx = 1\n\nx = 1\n"
    );
    let out = edit(
        &cwd,
        json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 9", "replace_all": true}),
    )
    .await;
    assert_eq!(out.text, "edited a.txt: replaced 3 occurrences");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "x = 9\ny = 2\nx = 9\n\nx = 9\n"
    );
}

#[mm_testkit::test]
async fn edit_file_keeps_crlf_line_endings() {
    let (_d, cwd) = tmp();
    let path = cwd.join("win.txt");
    fs::write(&path, "one\r\ntwo\r\nthree\r\n").unwrap();
    let out = edit(
        &cwd,
        json!({"path": "win.txt", "old_text": "one\ntwo", "new_text": "uno\ndos\ndos bis"}),
    )
    .await;
    assert_eq!(out.text, "edited win.txt: replaced 1 occurrence");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "uno\r\ndos\r\ndos bis\r\nthree\r\n"
    );
}

#[mm_testkit::test]
async fn edit_file_tolerates_whitespace_and_reindents() {
    let (_d, cwd) = tmp();
    let path = cwd.join("m.py");
    fs::write(
        &path,
        "class A:\n    def f(self):\n        if x:  \n            return 1\n        return 2\n",
    )
    .unwrap();
    let out = edit(
        &cwd,
        json!({
            "path": "m.py",
            "old_text": "if x:\n    return 1",
            "new_text": "if x:\n    log()\n    return 1",
        }),
    )
    .await;
    assert_eq!(
        out.text,
        "edited m.py: replaced lines 3-4, matched ignoring indentation and trailing spaces"
    );
    assert_eq!(out.status(), ToolStatus::Completed);
    // The lines new_text repeats stay as the file had them (trailing spaces too).
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "class A:\n    def f(self):\n        if x:  \n            log()\n            return 1\n        return 2\n"
    );
}

#[mm_testkit::test]
async fn edit_file_without_a_match_shows_the_closest_lines() {
    let (_d, cwd) = tmp();
    let path = cwd.join("a.rs");
    let text = "use std::io;\n\nfn main() {\n    let total = compute(a, b);\n    println!(\"{total}\");\n}\n";
    fs::write(&path, text).unwrap();
    let out = edit(
        &cwd,
        json!({"path": "a.rs", "old_text": "let total = compute(a, c);", "new_text": "x"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "old_text does not match a.rs; the closest lines are:\n2: \n3: fn main() {\n4:     let total = compute(a, b);\n5:     println!(\"{total}\");\n6: }\nLine 4 differs from line 1 of old_text at the caret:\n  file:         let total = compute(a, b);\n                                       ^\n  old_text: let total = compute(a, c);\nCopy old_text exactly from the file."
        )
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

#[mm_testkit::test]
async fn edit_file_ambiguous_loose_match_is_refused() {
    let (_d, cwd) = tmp();
    fs::write(cwd.join("a.txt"), "  a\nb\n    a\n").unwrap();
    let out = edit(
        &cwd,
        json!({"path": "a.txt", "old_text": "a ", "new_text": "z"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "old_text does not match a.txt exactly; ignoring indentation it matches 2 times (lines 1, 3); include more surrounding lines to make it unique"
        )
    );
}

#[mm_testkit::test]
async fn edit_file_refuses_a_read_only_file() {
    let (_d, cwd) = tmp();
    let path = cwd.join("ro.txt");
    fs::write(&path, "a b c").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o400)).unwrap();
    let out = edit(
        &cwd,
        json!({"path": "ro.txt", "old_text": "b", "new_text": "x"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "ro.txt is read-only; it was not changed (make it writable with chmod u+w first if it should be)"
        )
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "a b c");
}

#[mm_testkit::test]
async fn edit_file_bad_arguments() {
    let (_d, cwd) = tmp();
    fs::write(cwd.join("a.txt"), "abc").unwrap();
    fs::write(cwd.join("b.bin"), b"\x7fELF\x02\x01\x00\x00").unwrap();
    let missing = format!(
        "nope.txt does not exist ({}/nope.txt); check the path, or create the file with write_file",
        cwd.display()
    );
    let cases = [
        (
            json!({"path": "a.txt", "old_text": "", "new_text": "x"}),
            "old_text is empty; to create a file or replace all of its content, use write_file",
        ),
        (
            json!({"path": "nope.txt", "old_text": "a", "new_text": "x"}),
            missing.as_str(),
        ),
        (
            json!({"path": ".", "old_text": "a", "new_text": "x"}),
            ". is a directory, not a file",
        ),
        (
            json!({"path": "b.bin", "old_text": "a", "new_text": "x"}),
            "b.bin is not a text file; edit_file cannot change it",
        ),
        (
            json!({"path": "a.txt", "old_text": "zzz", "new_text": "x"}),
            "old_text does not match a.txt, and no line of the file looks like it; read the file and copy old_text exactly",
        ),
        (
            json!({"path": "a.txt", "old_text": "a"}),
            "[bad arguments for edit_file: missing field `new_text`; arguments given: {\"path\":\"a.txt\",\"old_text\":\"a\"}]",
        ),
        (
            json!({"path": "a.txt", "old_text": "a", "new_text": "x", "replace_all": "yes"}),
            "[bad arguments for edit_file: invalid type: string \"yes\", expected a boolean; arguments given: {\"path\":\"a.txt\",\"old_text\":\"a\",\"new_text\":\"x\",\"replace_all\":\"yes\"}]",
        ),
        (
            json!(null),
            "[bad arguments for edit_file: invalid type: null, expected struct Args; arguments given: null]",
        ),
    ];
    for (args, text) in cases {
        assert_eq!(edit(&cwd, args).await, failed(text));
    }
    assert_eq!(fs::read_to_string(cwd.join("a.txt")).unwrap(), "abc");
}

/// Issue 37: the argument names Claude Code and OpenCode taught the models are accepted, and the
/// call is still announced with its file.
#[mm_testkit::test]
async fn edit_file_accepts_the_names_other_agents_use() {
    let (_d, cwd) = tmp();
    let path = cwd.join("a.txt");
    fs::write(&path, "one two\n").unwrap();
    let claude = json!({"file_path": "a.txt", "old_string": "one", "new_string": "uno"});
    let opencode =
        json!({"filePath": "a.txt", "oldString": "two", "newString": "dos", "replaceAll": true});
    for args in [&claude, &opencode] {
        assert_eq!(
            EditFile::default().title(args),
            "edit_file: a.txt",
            "{args}"
        );
        assert_eq!(
            EditFile::default().locations(args, &cwd),
            vec![path.clone()]
        );
    }
    assert_eq!(
        edit(&cwd, claude).await.text,
        "edited a.txt: replaced 1 occurrence"
    );
    assert_eq!(
        edit(&cwd, opencode).await.text,
        "edited a.txt: replaced 1 occurrence"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "uno dos\n");
}

/// Issue 37's wrong edits: a line copied short is never matched inside a word, spaces for tabs
/// keep the file's tabs (a Makefile recipe stays a recipe), and a retried edit is not made twice.
#[mm_testkit::test]
async fn edit_file_makes_no_wrong_edit_of_the_known_kinds() {
    let (_d, cwd) = tmp();
    let rs = cwd.join("main.rs");
    fs::write(&rs, "use std::sync::Arc;\nuse std::thread;\n").unwrap();
    let out = edit(
        &cwd,
        json!({"path": "main.rs", "old_text": "use std::threa", "new_text": "use log::info;"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "old_text ends inside the word `thread` on line 2 of main.rs; include the whole word"
        )
    );
    assert_eq!(
        fs::read_to_string(&rs).unwrap(),
        "use std::sync::Arc;\nuse std::thread;\n"
    );

    let mk = cwd.join("Makefile");
    fs::write(&mk, "build:\n\tgo build ./...\n").unwrap();
    let out = edit(
        &cwd,
        json!({
            "path": "Makefile",
            "old_text": "build:\n    go build ./...",
            "new_text": "build:\n    go vet ./...\n    go build ./...",
        }),
    )
    .await;
    assert_eq!(
        out.text,
        "edited Makefile: replaced lines 1-2, matched ignoring indentation and trailing spaces"
    );
    assert_eq!(
        fs::read_to_string(&mk).unwrap(),
        "build:\n\tgo vet ./...\n\tgo build ./...\n"
    );

    let again =
        json!({"path": "Makefile", "old_text": "build:", "new_text": "build:\n\tgo vet ./..."});
    assert_eq!(
        edit(&cwd, again).await,
        done(
            "Makefile already has new_text at line 1: the edit is already applied, nothing was changed"
        )
    );
    assert_eq!(
        fs::read_to_string(&mk).unwrap(),
        "build:\n\tgo vet ./...\n\tgo build ./...\n"
    );
}

/// Issue 41, point 7: a Latin-1 file is edited as text and written back in Latin-1, byte for
/// byte outside the edit; a character it cannot hold is refused.
#[mm_testkit::test]
async fn edit_file_keeps_a_legacy_encoding() {
    let (_d, cwd) = tmp();
    let path = cwd.join("menu.txt");
    fs::write(&path, b"caf\xe9 \x80 2\r\nna\xefve\r\n").unwrap();
    let out = edit(
        &cwd,
        json!({"path": "menu.txt", "old_text": "caf\u{e9} \u{20ac} 2", "new_text": "caf\u{e9} \u{20ac} 3"}),
    )
    .await;
    assert_eq!(
        out.text,
        "edited menu.txt: replaced 1 occurrence; the file stays Windows-1252"
    );
    assert_eq!(fs::read(&path).unwrap(), b"caf\xe9 \x80 3\r\nna\xefve\r\n");
    let out = edit(
        &cwd,
        json!({"path": "menu.txt", "old_text": "na\u{ef}ve", "new_text": "\u{4e2d}"}),
    )
    .await;
    assert_eq!(
        out,
        failed(
            "new_text has \u{4e2d} (U+4E2D), which menu.txt cannot hold: it is Windows-1252 text; nothing was changed"
        )
    );
}

#[mm_testkit::test]
async fn edit_file_same_text_changes_nothing() {
    let (_d, cwd) = tmp();
    fs::write(cwd.join("a.txt"), "abc").unwrap();
    let out = edit(
        &cwd,
        json!({"path": "a.txt", "old_text": "b", "new_text": "b"}),
    )
    .await;
    assert_eq!(
        out,
        done("a.txt is unchanged: new_text is the same as the text it replaces")
    );
}
