//! The mm crate's suite: one test binary, a module per part (formerly one binary per file), on
//! mm-testkit's harness, where a test that cannot run here says why and counts as ignored (under
//! `CI=true` it fails): see mm-testkit's harness.rs. A test is `#[mm_testkit::test]`, on a plain
//! or an async fn (`#[mm_testkit::test(flavor = "multi_thread", worker_threads = 2)]` as with
//! tokio's); a plain `#[test]` here would never run, which `every_test_is_on_the_harness` checks.
//! The fuzz properties are the other binary (tests/fuzz_props.rs: its counting allocator is the
//! global one of its process).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod acp;
mod acp_acpx;
mod acp_clients;
mod acp_input;
mod acp_letter;
mod acp_load;
mod acp_mcp;
mod acp_more;
mod acp_setup;
mod agents;
mod agents_inherit;
mod agents_pty;
mod ask_user;
mod cli;
mod compact;
mod config;
mod doctor;
mod e2e;
mod engine;
mod engine_hooks;
mod engine_sessions;
mod engine_skills;
mod faults;
mod first_run;
mod hooks;
mod layering;
mod mcp;
mod mcp_cli;
mod model_client;
mod permissions_pty;
mod registry;
mod runaway;
mod sandbox;
mod session_files;
mod setup;
mod shutdown;
mod skills;
mod spawns;
mod term_banner;
mod term_keys;
mod term_markdown;
mod term_pty;
mod term_render;
mod term_sanitize;
mod term_status;
mod toolbox_fetch;
mod toolbox_lsp;
mod toolbox_plan;
mod tools;
mod trust_children;
mod trust_config;
mod trust_fence;
mod trust_writes;
mod undo;
mod undo_pty;

fn main() -> std::process::ExitCode {
    mm_testkit::harness::main()
}

/// Libtest's `#[test]` and `#[tokio::test]` do nothing in a suite whose harness is not libtest:
/// such a test would never run.
#[mm_testkit::test]
fn every_test_is_on_the_harness() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("#[test]") || line.starts_with("#[tokio::test") {
                found.push(format!("{}:{}: {line}", path.display(), i + 1));
            }
        }
    }
    assert_eq!(found, Vec::<String>::new(), "use #[mm_testkit::test]");
}

/// Run by `a_test_that_cannot_run_is_ignored_with_its_reason_and_fails_under_ci` only.
#[mm_testkit::test]
#[ignore = "the child of a_test_that_cannot_run_is_ignored_with_its_reason_and_fails_under_ci"]
fn a_test_that_cannot_run() {
    mm_testkit::skip("the widget is not installed (apt-get install widget)");
}

#[mm_testkit::test]
fn a_test_that_cannot_run_is_ignored_with_its_reason_and_fails_under_ci() {
    let run = |ci: Option<&str>| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "a_test_that_cannot_run",
            "--ignored",
            "--color=never",
        ]);
        match ci {
            Some(v) => cmd.env("CI", v),
            None => cmd.env_remove("CI"),
        };
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, out) = run(None);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.contains(
            &"test a_test_that_cannot_run ... ignored (the widget is not installed (apt-get install widget))"
        ),
        "{out}"
    );
    assert!(
        out.ends_with(
            "skipped: 1 test that cannot run here (under CI=true they fail):\n    \
             a_test_that_cannot_run: the widget is not installed (apt-get install widget)\n\n"
        ),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; ")),
        "{out}"
    );

    let (code, out) = run(Some("true"));
    assert_eq!(code, Some(101), "{out}");
    assert!(
        out.contains(
            "cannot run here, and under CI=true every test must: the widget is not installed (apt-get install widget)"
        ),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("test result: FAILED. 0 passed; 1 failed; 0 ignored;")),
        "{out}"
    );
}
