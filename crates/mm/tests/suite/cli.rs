//! The `mm` binary as a new user runs it: one-shot prompts (`-p`, positional, piped stdin)
//! against the scripted model server, the core tools really running in a temporary folder, exit
//! codes and error lines, configuration reports and warnings, `-acp`.
//!
//! Every test checks that the requests mm sent kept the history invariants real servers enforce
//! (`server.violations()` is empty).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

#[cfg(unix)]
use common::mm_run::interrupt;
use common::mm_run::{RUN_LIMIT, Run, Sandbox, assert_code, finish, finish_within};
use common::{Call, FakeServer, HANG_GUARD, Options, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The messages of request `n` (0-based).
fn messages(server: &FakeServer, n: usize) -> Vec<Value> {
    let requests = server.requests();
    assert!(
        requests.len() > n,
        "only {} requests: {requests:#?}",
        requests.len()
    );
    requests[n]["messages"].as_array().unwrap().clone()
}

/// The `tool` messages of request `n`, their contents in order.
fn tool_results(server: &FakeServer, n: usize) -> Vec<String> {
    messages(server, n)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn no_violations(server: &FakeServer) {
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// The line that ends a turn that did not fail: `1.2k in / 34 out · ctx 4% of 32k · 0.4s`.
fn is_recap(line: &str) -> bool {
    regex::Regex::new(r"^(.+ · )?\d+\.\ds$")
        .unwrap()
        .is_match(line)
}

/// The lines of stderr, the recap line that ends them checked and left out.
fn without_recap(run: &Run) -> Vec<&str> {
    let mut lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !common::platform::is_fence_gap(l))
        .collect();
    let last = lines.pop().unwrap_or_default();
    assert!(is_recap(last), "no recap line at the end:\n{}", run.stderr);
    lines
}

/// The lines of stderr after the banner (its three lines, and the model line when the server
/// was found), without the recap line.
fn activity(run: &Run) -> Vec<&str> {
    let mut lines: Vec<&str> = run
        .stderr
        .lines()
        .skip(3)
        .filter(|l| !common::platform::is_fence_gap(l))
        .collect();
    if lines
        .first()
        .is_some_and(|l| l.starts_with("model fake-model · "))
    {
        lines.remove(0);
    }
    if lines.last().is_some_and(|l| is_recap(l)) {
        lines.pop();
    }
    lines
}

/// [`activity`] without the model line, which comes when the first call is made (after the
/// notices about the prompt).
fn notices(run: &Run) -> Vec<&str> {
    activity(run)
        .into_iter()
        .filter(|l| !l.starts_with("model fake-model · "))
        .collect()
}

// ------------------------------------------------------------------ one-shot prompts

#[mm_testkit::test]
async fn p_streams_the_answer_on_stdout_and_the_banner_on_stderr() {
    let server = FakeServer::start(vec![Reply::text("Hello from the fake model.")]).await;
    let sb = Sandbox::new();
    let url = server.url();
    let run = sb.run(Some(&url), &["-p", "say hello"]).await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "Hello from the fake model.\n");
    let banner: Vec<&str> = without_recap(&run);
    assert_eq!(
        banner,
        vec![
            "mm v0.1.0",
            &format!("model server {url}"),
            &format!(
                "sessions on · mode yolo · {} · 0 skills · 0 hooks",
                common::platform::FENCE_FACTS
            ),
            // The server is named once.
            "model fake-model · context window 32k",
        ]
    );
    let msgs = messages(&server, 0);
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1], json!({"role": "user", "content": "say hello"}));
    assert_eq!(server.requests()[0]["stream"], true);
    assert_eq!(server.requests().len(), 1);
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_positional_prompt_is_the_prompt() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["what", "is", "this?"]).await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "ok\n");
    assert_eq!(messages(&server, 0)[1]["content"], "what is this?");
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_piped_prompt_is_read_from_stdin() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let run = sb
        .run_with_stdin(Some(&server.url()), &[], "prompt from a pipe\n")
        .await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "ok\n");
    assert_eq!(messages(&server, 0)[1]["content"], "prompt from a pipe");
    no_violations(&server);
}

#[mm_testkit::test]
async fn piped_stdin_with_a_prompt_is_attached_and_said_so() {
    let code = "def f():\n    return 1\n@property\n";
    for args in [&["-p", "review this"][..], &["review", "this"][..]] {
        let server = FakeServer::start(vec![Reply::text("ok")]).await;
        let sb = Sandbox::new();
        let run = sb.run_with_stdin(Some(&server.url()), args, code).await;
        assert_code(&run, 0);
        assert_eq!(run.stdout, "ok\n");
        // One line, and no notice for the `@property` of the piped text.
        assert_eq!(notices(&run), vec!["📎 attached stdin (3 lines)"]);
        assert_eq!(
            messages(&server, 0)[1]["content"],
            "review this\n\n[attached stdin (3 lines)]\ndef f():\n    return 1\n@property\n[end of stdin]"
        );
        no_violations(&server);
    }
}

#[mm_testkit::test]
async fn a_silent_pipe_is_waited_for_and_said_so() {
    use tokio::io::AsyncWriteExt;
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let mut cmd = sb.command(Some(&server.url()), &["-p", "why does it fail"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // The first line on stderr, 3 s on: nothing else comes before stdin is read.
    let first = tokio::time::timeout(HANG_GUARD, lines.next_line())
        .await
        .expect("no line on stderr")
        .unwrap();
    assert_eq!(
        first.as_deref(),
        Some("waiting for stdin to end (nothing came in 3 s; `< /dev/null` gives mm no stdin)")
    );
    // The slow command's output comes at last: it is attached.
    stdin.write_all(b"error: it broke\n").await.unwrap();
    drop(stdin);
    let mut rest = Vec::new();
    while let Some(line) = tokio::time::timeout(HANG_GUARD, lines.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        rest.push(line);
    }
    assert_code(&finish(child).await, 0);
    assert!(
        rest.contains(&"📎 attached stdin (1 line)".to_string()),
        "{rest:#?}"
    );
    assert_eq!(
        messages(&server, 0)[1]["content"],
        "why does it fail\n\n[attached stdin (1 line)]\nerror: it broke\n[end of stdin]"
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_pipe_over_the_cap_is_cut_and_said_so() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    // 40 kB: more than the cap, less than a pipe's buffer (mm stops reading at the cap).
    let input = "y\n".repeat(20_000);
    let args = ["-c", "tools.maxOutput=100", "-p", "hi"];
    let run = sb.run_with_stdin(Some(&server.url()), &args, &input).await;
    assert_code(&run, 0);
    let notice = "📎 attached stdin (its first 50 lines: cut at 100 characters, tools.maxOutput)";
    assert_eq!(notices(&run), vec![notice]);
    assert_eq!(
        messages(&server, 0)[1]["content"],
        format!(
            "hi\n\n[attached stdin (its first 50 lines: cut at 100 characters, tools.maxOutput)]\n{}\n[end of stdin]",
            "y\n".repeat(50)
        )
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn binary_stdin_is_not_attached_and_an_empty_one_says_nothing() {
    let server = FakeServer::start(vec![Reply::text("ok"), Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let run = sb
        .run_with_stdin(Some(&server.url()), &["-p", "hi"], "PNG\0\0data")
        .await;
    assert_code(&run, 0);
    assert_eq!(
        notices(&run),
        vec!["stdin holds binary data (a NUL byte): not attached"]
    );
    assert_eq!(messages(&server, 0)[1]["content"], "hi");
    let run = sb
        .run_with_stdin(Some(&server.url()), &["-p", "again"], "")
        .await;
    assert_code(&run, 0);
    assert_eq!(notices(&run), Vec::<&str>::new());
    assert_eq!(messages(&server, 1)[1]["content"], "again");
    no_violations(&server);
}

#[mm_testkit::test]
async fn an_empty_pipe_is_no_prompt() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let run = sb.run_with_stdin(Some(&server.url()), &[], "\n").await;
    assert_code(&run, 1);
    assert_eq!(
        run.stderr,
        "mm: no prompt: stdin is empty (give one with -p \"…\", or run mm in a terminal)\n"
    );
    assert_eq!(server.requests().len(), 0);
}

#[mm_testkit::test]
async fn an_empty_p_is_no_prompt() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "  "]).await;
    assert_code(&run, 1);
    assert_eq!(run.stderr, "mm: no prompt: the prompt is empty\n");
    assert_eq!(server.requests().len(), 0);
}

#[cfg(unix)]
#[mm_testkit::test]
async fn sigint_while_a_command_runs_kills_it_and_exits_130() {
    let server = FakeServer::start(vec![Reply::tool_call(
        "bash",
        json!({"command": "echo $$ > pid; exec sleep 300"}),
    )])
    .await;
    let sb = Sandbox::new();
    // The command writes its pid into a FIFO: reading it waits until the command runs.
    let fifo = sb.path("pid");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut child = sb
        .command(Some(&server.url()), &["-p", "wait"])
        .spawn()
        .unwrap();
    let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap());
    let pid: i32 = tokio::time::timeout(RUN_LIMIT, read)
        .await
        .expect("the command wrote no pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let started = std::time::Instant::now();
    interrupt(&child);
    let status = tokio::time::timeout(RUN_LIMIT, child.wait())
        .await
        .expect("mm did not exit after Ctrl-C")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    // At once, not when the command ends (how soon: bench/latency.sh).
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    // The command's process group got SIGTERM: `sleep` is gone (no longer signalable).
    let gone = || {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z"))
    };
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !gone() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gone(), "sleep (pid {pid}) still runs after the cancel");
    assert_eq!(server.requests().len(), 1);
    no_violations(&server);
}

#[mm_testkit::test]
async fn agents_md_reaches_the_system_prompt() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    sb.write("AGENTS.md", "Always run `make check` before answering.\n");
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    let system = messages(&server, 0)[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains(
            "\nProject instructions (AGENTS.md):\nAlways run `make check` before answering.\n"
        ),
        "{system}"
    );
    assert!(
        system.contains(&format!(
            "Working directory: {}\n",
            mm_core::paths::for_model(&sb.dir())
        )),
        "{system}"
    );
    no_violations(&server);
}

/// The first request of a new user (empty folder, no skills) must stay small: local models
/// answer slowly when every request starts with thousands of tokens. 6 000 characters are
/// about 1 500 tokens.
#[mm_testkit::test]
async fn the_first_request_is_under_6000_characters_of_system_prompt_and_tools() {
    let server = FakeServer::start(vec![Reply::text("hi")]).await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "hello"]).await;
    assert_code(&run, 0);
    let request = &server.requests()[0];
    let system = request["messages"][0]["content"].as_str().unwrap();
    let tools = serde_json::to_string(&request["tools"]).unwrap();
    let names: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"bash"), "{names:?}");
    let size = system.chars().count() + tools.chars().count();
    eprintln!(
        "first request: system prompt {} + tools {} = {size} characters (≈{} tokens)",
        system.chars().count(),
        tools.chars().count(),
        size / 4
    );
    assert!(size < 6000, "system prompt + tools = {size} characters");
    no_violations(&server);
}

// ------------------------------------------------------------------ tools

#[mm_testkit::test]
async fn bash_really_runs_in_the_working_folder_and_its_output_goes_back() {
    common::platform::need_bash();
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "bash",
            json!({"command": "echo hi > out.txt && echo written"}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(Some(&server.url()), &["-p", "write hi to out.txt"])
        .await;
    assert_code(&run, 0);
    assert_eq!(std::fs::read_to_string(sb.path("out.txt")).unwrap(), "hi\n");
    assert_eq!(tool_results(&server, 1), vec!["written\n".to_string()]);
    assert_eq!(run.stdout, "Done.\n");
    assert_eq!(
        activity(&run),
        vec!["$ bash: echo hi > out.txt && echo written", "  written"]
    );
    no_violations(&server);
}

/// `mm -p` in a script: stdout holds the final answer only; the narration before a call, the
/// call and its output go to stderr, which (a file here) gets each line once.
#[mm_testkit::test]
async fn p_prints_the_final_answer_alone_and_each_stderr_line_once() {
    common::platform::need_bash();
    let command = "for i in 1 2 3 4 5 6 7; do echo line$i; sleep 0.2; done";
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": command}))
            .with_text_before("Let me run the tests first."),
        Reply::text("All seven lines printed."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "count"]).await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "All seven lines printed.\n");
    let lines = activity(&run);
    assert_eq!(
        lines
            .iter()
            .filter(|l| **l == "Let me run the tests first.")
            .count(),
        1,
        "the narration once, on stderr:\n{}",
        run.stderr
    );
    for i in 1..=7 {
        let line = format!("line{i}");
        assert!(
            lines
                .iter()
                .filter(|l| l.trim_start().ends_with(&line))
                .count()
                <= 1,
            "{line} more than once:\n{}",
            run.stderr
        );
    }
    assert!(
        lines.iter().any(|l| l.trim_start().ends_with("line7")),
        "the output's tail:\n{}",
        run.stderr
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_failing_command_reports_its_exit_code_to_the_model() {
    common::platform::need_bash();
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "echo oops >&2; exit 3"})),
        Reply::text("It failed."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "try"]).await;
    assert_code(&run, 0);
    assert_eq!(
        tool_results(&server, 1),
        vec!["oops\n[exit code: 3]".to_string()]
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn write_edit_and_read_file_work_on_real_files() {
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "write_file",
            json!({"path": "src/notes.txt", "content": "alpha\nbeta\n"}),
        ),
        Reply::tool_call(
            "edit_file",
            json!({"path": "src/notes.txt", "old_text": "beta", "new_text": "gamma"}),
        ),
        Reply::tool_call("read_file", json!({"path": "src/notes.txt"})),
        Reply::text("The file says alpha and gamma."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "make notes"]).await;
    assert_code(&run, 0);
    let file = sb.path("src/notes.txt");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "alpha\ngamma\n");
    let results = tool_results(&server, 3);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], "wrote 11 bytes to src/notes.txt");
    assert!(
        results[1].starts_with("edited src/notes.txt: "),
        "{}",
        results[1]
    );
    assert_eq!(results[2], "alpha\ngamma\n");
    assert_eq!(run.stdout, "The file says alpha and gamma.\n");
    no_violations(&server);
}

/// In `workspace-write` the file tools may write in the system's temp folder outside the
/// working folder: `std::env::temp_dir()` (`$TMPDIR` or `/tmp`; `%TEMP%` on Windows, never `\tmp`
/// of the current drive).
#[mm_testkit::test]
async fn workspace_write_lets_the_file_tools_write_in_the_temp_folder() {
    let outside = common::outside_the_fence();
    let sb = Sandbox {
        home: tempfile::tempdir_in(outside.path()).unwrap(),
        cwd: tempfile::tempdir_in(outside.path()).unwrap(),
        limit: RUN_LIMIT,
    };
    let temp = tempfile::tempdir().unwrap();
    let file = mm_core::paths::canonical(temp.path())
        .unwrap()
        .join("t.txt");
    let server = FakeServer::start(vec![
        Reply::tool_call(
            "write_file",
            json!({"path": file.to_str().unwrap(), "content": "t"}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let run = sb
        .run(
            Some(&server.url()),
            &["--sandbox", "workspace-write", "-p", "note it"],
        )
        .await;
    assert_code(&run, 0);
    assert_eq!(
        tool_results(&server, 1),
        vec![format!("wrote 1 bytes to {}", file.to_str().unwrap())]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "t");
    no_violations(&server);
}

#[mm_testkit::test]
async fn bad_tool_arguments_are_explained_to_the_model_and_the_turn_goes_on() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::raw("bash", "{\"command\": ")]),
        Reply::tool_call("bash", json!({"cmd": "ls"})),
        Reply::tool_call("no_such_tool", json!({})),
        Reply::text("Sorry."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "list"]).await;
    assert_code(&run, 0);
    let results = tool_results(&server, 3);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(
        results[0].starts_with("[bad arguments for bash: not valid JSON ("),
        "{}",
        results[0]
    );
    assert!(
        results[0].ends_with("); send a JSON object matching the tool's schema]"),
        "{}",
        results[0]
    );
    assert!(
        results[1].starts_with("[bad arguments for bash: "),
        "{}",
        results[1]
    );
    assert!(results[1].contains("command"), "{}", results[1]);
    assert!(
        results[2].starts_with("[unknown tool \"no_such_tool\"; the tools are: bash, "),
        "{}",
        results[2]
    );
    assert_eq!(run.stdout, "Sorry.\n");
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_tool_call_written_as_text_is_run_and_never_shown() {
    common::platform::need_bash();
    let call = r#"<tool_call>{"name":"bash","arguments":{"command":"echo hi"}}</tool_call>"#;
    let server = FakeServer::start(vec![Reply::text(call), Reply::text("It printed hi.")]).await;
    let sb = Sandbox::new();
    let run = sb
        .run(Some(&server.url()), &["-p", "say hi with bash"])
        .await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "It printed hi.\n");
    let msgs = messages(&server, 1);
    let assistant = &msgs[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(
        serde_json::from_str::<Value>(
            assistant["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        )
        .unwrap(),
        json!({"command": "echo hi"})
    );
    assert_eq!(tool_results(&server, 1), vec!["hi\n".to_string()]);
    assert!(!run.stderr.contains("<tool_call>"), "{}", run.stderr);
    no_violations(&server);
}

#[mm_testkit::test]
async fn no_yolo_without_a_terminal_rejects_gated_tools_and_says_why() {
    let server = FakeServer::start(vec![
        Reply::tool_call("bash", json!({"command": "echo hi > out.txt"})),
        Reply::text("I could not run it."),
    ])
    .await;
    let sb = Sandbox::new();
    let run = sb
        .run(Some(&server.url()), &["--no-yolo", "-p", "write"])
        .await;
    assert_code(&run, 0);
    assert!(!sb.path("out.txt").exists());
    assert_eq!(
        tool_results(&server, 1),
        vec!["[command rejected by the user]".to_string()]
    );
    assert!(
        run.stderr
            .contains("gated tool rejected: no terminal to ask (use --yolo)\n"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("mode ask"), "{}", run.stderr);
    no_violations(&server);
}

// ------------------------------------------------------------------ a new user's first runs

#[mm_testkit::test]
async fn p_names_the_model_once_when_mm_model_is_set() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let url = server.url();
    let mut command = sb.command(Some(&url), &["-p", "hi"]);
    command.env("MM_MODEL", "fake-model");
    let run = finish_within(command.spawn().unwrap(), sb.limit).await;
    assert_code(&run, 0);
    assert_eq!(
        without_recap(&run),
        vec![
            "mm v0.1.0",
            &format!("model fake-model at {url}"),
            &format!(
                "sessions on · mode yolo · {} · 0 skills · 0 hooks",
                common::platform::FENCE_FACTS
            ),
            // Detection adds what the banner did not say.
            "context window 32k",
        ]
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn p_warns_of_a_small_window_only_once_a_turn_used_over_half_of_it() {
    let small = Options {
        n_ctx: Some(4096),
        ..Options::default()
    };
    let script = vec![
        Reply::text("short").with_usage(1000, 10),
        Reply::text("long").with_usage(3000, 50),
    ];
    let server = FakeServer::start_with(small, script).await.unwrap();
    let sb = Sandbox::new();
    let warning = "warning: context window 4096 tokens is small for an agent: ";
    let first = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&first, 0);
    assert!(!first.stderr.contains(warning), "{}", first.stderr);
    let second = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&second, 0);
    let last = second.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with(warning), "{}", second.stderr);
    assert_eq!(second.stderr.matches(warning).count(), 1);
    no_violations(&server);
}

#[mm_testkit::test]
async fn p_names_a_missing_file_not_an_unknown_skill_and_the_prompt_still_goes() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let prompt = "read @missing.txt with $nosuch; echo tick $i";
    let run = sb.run(Some(&server.url()), &["-p", prompt]).await;
    assert_code(&run, 0);
    assert_eq!(
        notices(&run),
        vec!["@missing.txt: no such file or folder, not attached"]
    );
    assert_eq!(messages(&server, 0)[1]["content"], prompt);
    no_violations(&server);
}

#[mm_testkit::test]
async fn p_continue_says_what_it_reopened() {
    let server = FakeServer::start(vec![Reply::text("first answer"), Reply::text("again")]).await;
    let sb = Sandbox::new();
    let on = ["-c", "sessions.enabled=true"];
    let first = sb
        .run(Some(&server.url()), &[&on[..], &["-p", "one"]].concat())
        .await;
    assert_code(&first, 0);
    let second = sb
        .run(
            Some(&server.url()),
            &[&on[..], &["--continue", "-p", "two"]].concat(),
        )
        .await;
    assert_code(&second, 0);
    let lines: Vec<&str> = second
        .stderr
        .lines()
        .skip(3)
        .filter(|l| !common::platform::is_fence_gap(l))
        .take(3)
        .collect();
    assert!(
        lines[0].starts_with("session ") && lines[0].contains(" · saved "),
        "{}",
        second.stderr
    );
    assert!(
        lines[0].ends_with(" · 2 message(s) · first prompt: one"),
        "{}",
        second.stderr
    );
    assert_eq!(lines[1..], ["  > one", "  first answer"]);
    no_violations(&server);
}

// ------------------------------------------------------------------ exit codes

#[mm_testkit::test]
async fn a_refused_connection_exits_1_at_once_with_the_url_and_the_fix() {
    let port = common::refused_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let sb = Sandbox::new();
    // With a model named, as without: nothing listens, so nothing is retried.
    for named in [&[][..], &["--model", "qwen3:8b"][..]] {
        let started = std::time::Instant::now();
        let run = sb.run(Some(&url), &[named, &["-p", "hi"]].concat()).await;
        let took = started.elapsed();
        assert_code(&run, 1);
        assert_eq!(run.stdout, "");
        assert_eq!(
            activity(&run),
            vec![format!(
                "[error: cannot reach the model server at {url}: connection refused — is it running? (mm doctor checks)]"
            )
            .as_str()]
        );
        // A hang guard, far above what it takes (it was 7.5 s of retries).
        assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    }
}

#[mm_testkit::test]
async fn an_http_500_exits_1_with_the_servers_message() {
    let server = FakeServer::start(vec![Reply::error(
        500,
        json!({"error": {"code": 500, "message": "the model crashed", "type": "server_error"}}),
    )])
    .await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 1);
    assert_eq!(
        activity(&run),
        vec!["[error: model server answered 500: the model crashed]"]
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_stream_broken_midway_exits_1_and_keeps_what_came() {
    let server = FakeServer::start(vec![Reply::disconnect_after(3)]).await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 1);
    // What came, and stdout ends with a newline.
    assert_eq!(run.stdout, "part0 part1 part2 \n");
    let lines = activity(&run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("[error: stream broke after "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" bytes: "), "{}", lines[0]);
    no_violations(&server);
}

#[mm_testkit::test]
async fn an_idle_server_times_out_with_request_timeout() {
    let server = FakeServer::start(vec![Reply::hang()]).await;
    let sb = Sandbox::new();
    let started = std::time::Instant::now();
    let run = sb
        .run(
            Some(&server.url()),
            &["-c", "model.requestTimeout=1", "-p", "hi"],
        )
        .await;
    assert_code(&run, 1);
    assert_eq!(
        activity(&run),
        vec!["[error: model server sent nothing for 1 s (model.requestTimeout)]"]
    );
    // The timeout fired, not a retry budget or the sandbox's limit.
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    no_violations(&server);
}

#[mm_testkit::test]
async fn max_steps_exits_2_with_the_explanation() {
    common::platform::need_bash();
    let server =
        FakeServer::start(vec![Reply::tool_call("bash", json!({"command": "true"}))]).await;
    let sb = Sandbox::new();
    let run = sb
        .run(Some(&server.url()), &["-c", "maxSteps=1", "-p", "loop"])
        .await;
    assert_code(&run, 2);
    assert_eq!(
        activity(&run),
        vec![
            "$ bash: true",
            "[stopped: 1 model calls in this turn, the maxSteps limit]"
        ]
    );
    assert_eq!(server.requests().len(), 1);
    no_violations(&server);
}

// SIGINT is Unix's (Windows' Ctrl-C reaches a console, not a process: docs/platforms.md).
#[cfg(unix)]
#[mm_testkit::test]
async fn sigint_during_a_slow_stream_exits_130() {
    // 100 s of answer: only the Ctrl-C can end it in time.
    let words: String = (0..1000).map(|i| format!("word{i} ")).collect();
    let server = FakeServer::start(vec![Reply::text(&words).with_delay(100)]).await;
    let sb = Sandbox::new();
    let child = sb
        .command(Some(&server.url()), &["-p", "talk"])
        .spawn()
        .unwrap();
    server.wait_for_requests(1).await;
    let started = std::time::Instant::now();
    interrupt(&child);
    let run = finish(child).await;
    assert_code(&run, 130);
    // At once, not when the answer ends (how soon: bench/latency.sh).
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    server.wait_for_abandoned(1).await;
    no_violations(&server);
}

// ------------------------------------------------------------------ flags and configuration

#[mm_testkit::test]
async fn version_prints_exactly_the_version() {
    let run = Sandbox::new().run(None, &["--version"]).await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "v0.1.0\n");
    assert_eq!(run.stderr, "");
}

#[mm_testkit::test]
async fn help_lists_every_flag() {
    let run = Sandbox::new().run(None, &["--help"]).await;
    assert_code(&run, 0);
    for flag in [
        "-p, --prompt <PROMPT>",
        "--acp",
        "--ask <AGENT>",
        "--resume <ID>",
        "--continue",
        "--url <URL>",
        "--model <NAME>",
        "--yolo",
        "--no-yolo",
        "-c <KEY=VALUE>",
        "--config <FILE>",
        "-V, --version",
        "-h, --help",
    ] {
        assert!(
            run.stdout.contains(flag),
            "{flag} missing from:\n{}",
            run.stdout
        );
    }
}

#[mm_testkit::test]
async fn mm_config_shows_each_value_and_its_source() {
    let sb = Sandbox::new();
    let user = sb.user_config();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "contextWindow = 16384\n").unwrap();
    let run = sb
        .run(
            Some("http://127.0.0.1:9/v1"),
            &["-c", "maxSteps=7", "config"],
        )
        .await;
    assert_code(&run, 0);
    let line = |key: &str| -> String {
        let prefix = format!("{key} = ");
        let found = run.stdout.lines().find(|l| l.starts_with(&prefix));
        let l = found.unwrap_or_else(|| panic!("no {key} in:\n{}", run.stdout));
        // The source column is aligned: collapse the padding.
        let (kv, source) = l.split_once("  #").unwrap();
        format!("{} #{}", kv.trim_end(), source)
    };
    assert_eq!(line("maxSteps"), "maxSteps = 7 # -c");
    assert_eq!(
        line("contextWindow"),
        format!("contextWindow = 16384 # {}", user.display())
    );
    assert_eq!(
        line("model.url"),
        "model.url = \"http://127.0.0.1:9/v1\" # env MM_MODEL_URL"
    );
    assert_eq!(line("yolo"), "yolo = true # default");
    assert_eq!(run.stderr, "");
}

#[mm_testkit::test]
async fn an_unknown_key_warns_naming_the_file_and_the_run_goes_on() {
    let server = FakeServer::start(vec![Reply::text("ok")]).await;
    let sb = Sandbox::new();
    let project = sb.write(".mm/config.toml", "maxStep = 3\n");
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_code(&run, 0);
    assert_eq!(run.stdout, "ok\n");
    let warning = format!("warning: unknown key \"maxStep\" in {}", project.display());
    assert!(
        run.stderr.lines().any(|l| l == warning),
        "no `{warning}` in:\n{}",
        run.stderr
    );
    no_violations(&server);
}

#[mm_testkit::test]
async fn a_value_of_the_wrong_type_exits_1_naming_key_file_and_type() {
    let sb = Sandbox::new();
    let user = sb.user_config();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "maxSteps = \"many\"\n").unwrap();
    let run = sb.run(Some("http://127.0.0.1:9/v1"), &["-p", "hi"]).await;
    assert_code(&run, 1);
    assert_eq!(run.stdout, "");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!("mm: {}: maxSteps must be ", user.display())),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with("got a string"), "{}", lines[0]);
}

#[mm_testkit::test]
async fn single_dash_acp_serves_the_protocol_on_stdio() {
    let sb = Sandbox::new();
    let mut cmd = sb.command(Some("http://127.0.0.1:9/v1"), &["-acp"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    use tokio::io::AsyncWriteExt;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(RUN_LIMIT, lines.next_line())
        .await
        .expect("no answer to initialize")
        .unwrap()
        .expect("stdout closed before the answer");
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    assert_eq!(
        answer["result"]["agentInfo"]["version"], "v0.1.0",
        "{answer}"
    );
    drop(stdin);
    let status = tokio::time::timeout(RUN_LIMIT, child.wait())
        .await
        .expect("mm -acp did not exit when stdin closed")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[mm_testkit::test]
async fn resuming_a_missing_session_says_why_once() {
    let sb = Sandbox::new();
    let run = sb
        .run(
            Some("http://127.0.0.1:9/v1"),
            &[
                "-c",
                "sessions.enabled=true",
                "--resume",
                "nosuch",
                "-p",
                "hi",
            ],
        )
        .await;
    assert_eq!(run.code, Some(1));
    // No internal path: what is saved here (nothing yet).
    assert_eq!(
        run.stderr,
        "mm: --resume: no saved session nosuch in this folder, and none is saved here yet\n"
    );
}

#[mm_testkit::test]
async fn a_missing_config_file_says_why_once() {
    let sb = Sandbox::new();
    let run = sb
        .run(None, &["--config", "/nonexistent/mm.toml", "-p", "hi"])
        .await;
    assert_eq!(run.code, Some(1));
    // As mm joins it to the working folder: on its drive on Windows (`C:/nonexistent/mm.toml`).
    #[allow(clippy::join_absolute_paths)]
    let file = sb.dir().join("/nonexistent/mm.toml");
    assert_eq!(
        run.stderr,
        format!(
            "mm: cannot read {}: {}\n",
            file.display(),
            common::platform::open_error(&file)
        )
    );
}
