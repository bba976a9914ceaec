//! Hooks with real scripts: decisions, context, failures, timeouts, matching, input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// Unix permissions, signals and process groups throughout (docs/platforms.md)
#![cfg(unix)]
use mm_testkit as common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::HANG_GUARD;
use mm_core::config::{HookConfig, HooksConfig, Origin};
use mm_tools::hooks::{HookDecision, HookEvent, HookResult, Hooks};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self) -> &Path {
        self.tmp.path()
    }
    /// Writes an executable script; returns the command that runs it (relative to the cwd).
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.path().join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        format!("./{name}")
    }
    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path().join(name)).unwrap_or_default()
    }
}

fn hook(command: &str) -> HookConfig {
    HookConfig {
        command: command.into(),
        matcher: None,
        timeout: Duration::from_secs(10),
        fail_closed: false,
        origin: Origin::User,
        sandbox: Default::default(),
    }
}

fn hooks_for(event: HookEvent, list: Vec<HookConfig>) -> Hooks {
    let mut c = HooksConfig::default();
    match event {
        HookEvent::SessionStart => c.session_start = list,
        HookEvent::UserPromptSubmit => c.user_prompt_submit = list,
        HookEvent::PreToolCall => c.pre_tool_call = list,
        HookEvent::PostToolCall => c.post_tool_call = list,
        HookEvent::TurnEnd => c.turn_end = list,
        HookEvent::PreCompact => c.pre_compact = list,
    }
    Hooks::new(&c, mm_tools::process::Supervisor::new())
}

async fn run_in(dir: &Path, hooks: &Hooks, event: HookEvent, tool: Option<&str>) -> HookResult {
    let input = match tool {
        Some(t) => json!({"tool": t, "toolCallId": "call_7", "input": {"command": "ls"}}),
        None => json!({}),
    };
    hooks
        .run(event, input, tool, "s1", dir, &CancellationToken::new())
        .await
}

async fn run(dir: &Dir, hooks: &Hooks, event: HookEvent, tool: Option<&str>) -> HookResult {
    run_in(dir.path(), hooks, event, tool).await
}

fn deny(reason: &str) -> HookResult {
    HookResult {
        decision: HookDecision::Deny(reason.into()),
        ..HookResult::default()
    }
}

fn context(lines: &[&str]) -> HookResult {
    HookResult {
        context: lines.iter().map(|l| l.to_string()).collect(),
        ..HookResult::default()
    }
}

fn failed(line: &str) -> HookResult {
    HookResult {
        failures: vec![line.into()],
        ..HookResult::default()
    }
}

#[mm_testkit::test]
fn events_names_and_abilities() {
    let table: Vec<(&str, bool, bool)> = HookEvent::ALL
        .iter()
        .map(|e| (e.name(), e.can_deny(), e.can_add_context()))
        .collect();
    assert_eq!(
        table,
        vec![
            ("sessionStart", false, true),
            ("userPromptSubmit", true, true),
            ("preToolCall", true, false),
            ("postToolCall", false, true),
            ("turnEnd", false, false),
            ("preCompact", true, false),
        ]
    );
    assert_eq!(HookEvent::PreToolCall.to_string(), "preToolCall");
}

#[mm_testkit::test]
fn counts_per_event() {
    let c = HooksConfig {
        pre_tool_call: vec![hook("a"), hook("b")],
        turn_end: vec![hook("c")],
        ..HooksConfig::default()
    };
    assert_eq!(
        Hooks::new(&c, mm_tools::process::Supervisor::new()).counts(),
        vec![
            (HookEvent::SessionStart, 0),
            (HookEvent::UserPromptSubmit, 0),
            (HookEvent::PreToolCall, 2),
            (HookEvent::PostToolCall, 0),
            (HookEvent::TurnEnd, 1),
            (HookEvent::PreCompact, 0),
        ]
    );
}

#[mm_testkit::test]
async fn no_hooks_allow() {
    let d = Dir::new();
    let hooks = Hooks::new(
        &HooksConfig::default(),
        mm_tools::process::Supervisor::new(),
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        HookResult::default()
    );
}

#[mm_testkit::test]
async fn exit_zero_with_empty_stdout_allows() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::PreToolCall,
        vec![hook(&d.script("ok.sh", "cat >/dev/null; exit 0"))],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        HookResult::default()
    );
}

#[mm_testkit::test]
async fn exit_two_denies_with_stderr_as_reason() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::PreToolCall,
        vec![hook(&d.script(
            "guard.sh",
            "echo '  no rm, please  ' >&2\necho 'line two' >&2\nexit 2",
        ))],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        deny("no rm, please  \nline two")
    );

    let hooks = hooks_for(
        HookEvent::UserPromptSubmit,
        vec![hook(&d.script("quiet.sh", "exit 2"))],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::UserPromptSubmit, None).await,
        deny("no reason given")
    );
}

#[mm_testkit::test]
async fn json_decision_denies() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::PreCompact,
        vec![hook(&d.script(
            "j.sh",
            r#"echo '{"decision": "deny", "reason": "keep it all"}'"#,
        ))],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::PreCompact, None).await,
        deny("keep it all")
    );
    let hooks = hooks_for(
        HookEvent::PreCompact,
        vec![hook(&d.script("j2.sh", r#"echo '{"decision": "deny"}'"#))],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::PreCompact, None).await,
        deny("no reason given")
    );
}

#[mm_testkit::test]
async fn context_by_json_and_by_plain_stdout() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::UserPromptSubmit,
        vec![
            hook(&d.script("j.sh", r#"echo '{"context": "the build is red"}'"#)),
            hook(&d.script("p.sh", "echo 'today is Tuesday'\necho 'second line'")),
            hook(&d.script("allow.sh", r#"echo '{"decision": "allow"}'"#)),
        ],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::UserPromptSubmit, None).await,
        context(&["the build is red", "today is Tuesday\nsecond line"])
    );

    // Events that take no context ignore it.
    for event in [
        HookEvent::PreToolCall,
        HookEvent::TurnEnd,
        HookEvent::PreCompact,
    ] {
        let hooks = hooks_for(event, vec![hook(&d.script("c.sh", "echo some context"))]);
        assert_eq!(
            run(&d, &hooks, event, Some("bash")).await,
            HookResult::default()
        );
    }
    for event in [HookEvent::SessionStart, HookEvent::PostToolCall] {
        let hooks = hooks_for(event, vec![hook(&d.script("c.sh", "echo some context"))]);
        assert_eq!(
            run(&d, &hooks, event, Some("bash")).await,
            context(&["some context"])
        );
    }
}

fn alive(pid: i32) -> bool {
    // A zombie waiting for its reaper is dead for our purpose.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z')
        }
        Err(_) => false,
    }
}

#[mm_testkit::test]
async fn a_hung_hook_times_out_and_its_process_group_is_killed() {
    let d = Dir::new();
    let mut h = hook(&d.script("hang.sh", "sleep 300 &\necho $! > child.pid\nwait"));
    // Long enough for the script to start its child and write the pid first.
    h.timeout = Duration::from_millis(500);
    let hooks = hooks_for(HookEvent::PreToolCall, vec![h]);
    let started = Instant::now();
    let result = run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await;
    let took = started.elapsed();
    assert_eq!(
        result,
        failed("🪝 preToolCall hook \"./hang.sh\" failed: timed out after 0.5 s")
    );
    // It waited for its timeout, then gave up on the hook.
    assert!(
        took >= Duration::from_millis(500) && took < HANG_GUARD,
        "{took:?}"
    );

    let pid: i32 = d.read("child.pid").trim().parse().unwrap();
    // SIGKILL is delivered asynchronously and nothing can be awaited for a grandchild: poll, bounded.
    let deadline = Instant::now() + HANG_GUARD;
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "the hook's child {pid} survived");
}

#[mm_testkit::test]
async fn cancel_kills_the_hook() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::PreToolCall,
        vec![hook(&d.script("hang.sh", "sleep 300"))],
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    let started = Instant::now();
    let result = hooks
        .run(
            HookEvent::PreToolCall,
            json!({}),
            Some("bash"),
            "s1",
            d.path(),
            &cancel,
        )
        .await;
    assert_eq!(result, deny("cancelled"));
    // At once, not when the hook ends.
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());

    let hooks = hooks_for(
        HookEvent::TurnEnd,
        vec![hook(&d.script("hang.sh", "sleep 300"))],
    );
    let result = hooks
        .run(HookEvent::TurnEnd, json!({}), None, "s1", d.path(), &cancel)
        .await;
    assert_eq!(result, HookResult::default());
}

#[mm_testkit::test]
async fn a_missing_command_cannot_start() {
    let d = Dir::new();
    let hooks = hooks_for(HookEvent::PreToolCall, vec![hook("./missing.sh")]);
    let result = run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await;
    assert_eq!(result.decision, HookDecision::Allow);
    assert_eq!(result.failures.len(), 1);
    let line = &result.failures[0];
    // The rest is the shell's own message (dash: `sh: 1: ./missing.sh: not found`).
    assert!(
        line.starts_with("🪝 preToolCall hook \"./missing.sh\" failed: cannot start: ")
            && line.contains("./missing.sh: "),
        "{line}"
    );

    // The shell itself cannot start in a folder that does not exist.
    let hooks = hooks_for(HookEvent::PreToolCall, vec![hook("true")]);
    let gone = d.path().join("gone");
    assert_eq!(
        run_in(&gone, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        failed(
            "🪝 preToolCall hook \"true\" failed: cannot start: No such file or directory (os error 2)"
        )
    );
}

#[mm_testkit::test]
async fn a_crash_is_a_failure_that_allows() {
    let d = Dir::new();
    let cmd = d.script(
        "crash.sh",
        "echo 'boom: disk full' >&2\necho more >&2\nexit 3",
    );
    let hooks = hooks_for(HookEvent::PreToolCall, vec![hook(&cmd)]);
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        failed("🪝 preToolCall hook \"./crash.sh\" failed: exit code 3: boom: disk full")
    );
    let hooks = hooks_for(HookEvent::PreToolCall, vec![hook("exit 5")]);
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        failed("🪝 preToolCall hook \"exit 5\" failed: exit code 5")
    );
}

#[mm_testkit::test]
async fn fail_closed_turns_a_failure_into_a_deny() {
    let d = Dir::new();
    let cmd = d.script("crash.sh", "echo boom >&2; exit 3");
    let mut h = hook(&cmd);
    h.fail_closed = true;
    let after = d.script("after.sh", "touch after-ran");
    let hooks = hooks_for(HookEvent::PreToolCall, vec![h.clone(), hook(&after)]);
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        HookResult {
            decision: HookDecision::Deny("exit code 3: boom".into()),
            context: Vec::new(),
            failures: vec!["🪝 preToolCall hook \"./crash.sh\" failed: exit code 3: boom".into()],
        }
    );
    assert!(!d.path().join("after-ran").exists());

    // Only events that can deny fail closed.
    let hooks = hooks_for(HookEvent::PostToolCall, vec![h]);
    assert_eq!(
        run(&d, &hooks, HookEvent::PostToolCall, Some("bash")).await,
        failed("🪝 postToolCall hook \"./crash.sh\" failed: exit code 3: boom")
    );
}

#[mm_testkit::test]
async fn a_deny_from_an_event_that_cannot_deny_is_a_failure() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::TurnEnd,
        vec![hook(&d.script("deny.sh", "echo nope >&2; exit 2"))],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::TurnEnd, None).await,
        failed("🪝 turnEnd hook \"./deny.sh\" failed: turnEnd hooks cannot deny (reason: nope)")
    );
}

#[mm_testkit::test]
async fn match_is_a_regex_on_the_whole_tool_name() {
    let d = Dir::new();
    let mut h = hook(&d.script("guard.sh", "echo guarded >&2; exit 2"));
    h.matcher = Some("bash|write_file".into());
    let hooks = hooks_for(HookEvent::PreToolCall, vec![h]);
    for (tool, expected) in [
        ("bash", deny("guarded")),
        ("write_file", deny("guarded")),
        ("bash2", HookResult::default()),
        ("xbash", HookResult::default()),
        ("read_file", HookResult::default()),
    ] {
        assert_eq!(
            run(&d, &hooks, HookEvent::PreToolCall, Some(tool)).await,
            expected,
            "{tool}"
        );
    }
    assert!(hooks.any(HookEvent::PreToolCall, Some("bash")));
    assert!(!hooks.any(HookEvent::PreToolCall, Some("bash2")));
}

#[mm_testkit::test]
async fn an_invalid_pattern_is_a_warning_and_a_failure() {
    let d = Dir::new();
    let mut h = hook("exit 0");
    h.matcher = Some("bash(".into());
    h.fail_closed = true;
    let hooks = hooks_for(HookEvent::PreToolCall, vec![h]);
    assert_eq!(
        hooks.warnings(),
        ["preToolCall hook \"exit 0\": invalid match pattern \"bash(\": unclosed group"]
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::PreToolCall, Some("bash")).await,
        HookResult {
            decision: HookDecision::Deny(
                "invalid match pattern \"bash(\": unclosed group".into()
            ),
            context: Vec::new(),
            failures: vec![
                "🪝 preToolCall hook \"exit 0\" failed: invalid match pattern \"bash(\": unclosed group".into()
            ],
        }
    );
}

#[mm_testkit::test]
async fn hooks_run_in_order_and_the_first_deny_wins() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::UserPromptSubmit,
        vec![
            hook(&d.script("one.sh", "echo one >> log; echo first context")),
            hook(&d.script("two.sh", "echo two >> log; echo 'stop here' >&2; exit 2")),
            hook(&d.script("three.sh", "echo three >> log; exit 2")),
        ],
    );
    assert_eq!(
        run(&d, &hooks, HookEvent::UserPromptSubmit, None).await,
        HookResult {
            decision: HookDecision::Deny("stop here".into()),
            context: vec!["first context".into()],
            failures: Vec::new(),
        }
    );
    assert_eq!(d.read("log"), "one\ntwo\n");
}

#[mm_testkit::test]
async fn the_hook_receives_its_input_and_environment() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::PreToolCall,
        vec![hook(&d.script(
            "spy.sh",
            "cat > stdin.json\nprintf '%s|%s|%s|%s\\n' \"$MM_HOOK_EVENT\" \"$MM_SESSION_ID\" \"$MM_CWD\" \"$PWD\" > env.txt",
        ))],
    );
    let input =
        json!({"tool": "bash", "toolCallId": "call_7", "input": {"command": "rm -rf build"}});
    let result = hooks
        .run(
            HookEvent::PreToolCall,
            input,
            Some("bash"),
            "20260916-101530-4f2a9c1e",
            d.path(),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(result, HookResult::default());
    let cwd = d.path().display().to_string();
    let expected = json!({
        "event": "preToolCall",
        "sessionId": "20260916-101530-4f2a9c1e",
        "cwd": cwd,
        "tool": "bash",
        "toolCallId": "call_7",
        "input": {"command": "rm -rf build"},
    });
    // One JSON object, fields in this order.
    assert_eq!(d.read("stdin.json"), format!("{expected}\n"));
    assert_eq!(
        d.read("env.txt"),
        format!("preToolCall|20260916-101530-4f2a9c1e|{cwd}|{cwd}\n")
    );
}

#[mm_testkit::test]
async fn post_tool_call_input_fields_pass_through() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::PostToolCall,
        vec![hook(&d.script("spy.sh", "cat > stdin.json"))],
    );
    let input = json!({"tool": "bash", "toolCallId": "call_2", "input": {"command": "ls"},
        "output": "a\nb", "status": "completed", "event": "spoofed"});
    hooks
        .run(
            HookEvent::PostToolCall,
            input,
            Some("bash"),
            "s1",
            d.path(),
            &CancellationToken::new(),
        )
        .await;
    let got: Value = serde_json::from_str(&d.read("stdin.json")).unwrap();
    assert_eq!(
        got,
        json!({"event": "postToolCall", "sessionId": "s1", "cwd": d.path().display().to_string(),
            "tool": "bash", "toolCallId": "call_2", "input": {"command": "ls"},
            "output": "a\nb", "status": "completed"})
    );
}

#[mm_testkit::test]
async fn a_hook_that_does_not_read_stdin_is_not_a_failure() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::UserPromptSubmit,
        vec![
            hook(&d.script("skip.sh", "exit 0")),
            hook(&d.script("say.sh", "echo noted")),
        ],
    );
    // Far more than a pipe holds, so that writing it would block or break without care.
    let prompt = "x".repeat(2 * 1024 * 1024);
    let result = hooks
        .run(
            HookEvent::UserPromptSubmit,
            json!({"prompt": prompt}),
            None,
            "s1",
            d.path(),
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(result, context(&["noted"]));
}

#[mm_testkit::test]
async fn a_background_process_holding_stdout_does_not_hang_the_hook() {
    let d = Dir::new();
    let hooks = hooks_for(
        HookEvent::TurnEnd,
        vec![hook(
            &d.script("notify.sh", "sleep 300 &\necho $! > child.pid"),
        )],
    );
    let started = Instant::now();
    assert_eq!(
        run(&d, &hooks, HookEvent::TurnEnd, None).await,
        HookResult::default()
    );
    // The hook's exit ended it, not its child's.
    assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    // It was the hook's own choice to leave it running; clean up after the test.
    let pid: i32 = d.read("child.pid").trim().parse().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}
