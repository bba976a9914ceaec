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
mod acp_steer;
mod acp_task;
mod agents;
mod agents_inherit;
mod agents_pty;
mod ask_user;
mod cli;
mod compact;
mod config;
mod doctor;
mod e2e;
mod engine_hooks;
mod engine_sessions;
mod faults;
mod first_run;
mod hooks;
mod layering;
mod mcp;
mod mcp_cli;
mod model_client;
mod permissions_pty;
mod registry;
mod rules;
mod runaway;
mod sandbox;
mod scripts;
mod session_files;
mod setup;
mod shutdown;
mod skills;
mod spawns;
mod term_banner;
mod term_keys;
mod term_markdown;
mod term_plain_pty;
mod term_pty;
mod term_sanitize;
mod term_status;
mod toolbox_fetch;
mod toolbox_lsp;
mod toolbox_plan;
mod tools;
mod trust_children;
mod trust_config;
mod trust_fence;
mod trust_network;
mod trust_network_ask;
mod trust_pty;
mod trust_repo;
mod trust_secrets;
mod trust_writes;
mod undo;
mod undo_pty;

use regex::Regex;

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
        // Its list goes to stdout, not to the file of scripts/test.sh.
        cmd.env_remove(mm_testkit::harness::SKIPPED_FILE_VAR);
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

/// A test ignored on purpose says why in its line (libtest-mimic alone prints a bare
/// `ignored`), and is not counted among those that cannot run here.
#[mm_testkit::test]
fn an_ignored_test_says_why() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_test_that_cannot_run", "--color=never"])
        .env_remove("CI")
        .env_remove(mm_testkit::harness::SKIPPED_FILE_VAR)
        .output()
        .unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.lines().any(|l| l
            == "test a_test_that_cannot_run ... ignored (the child of a_test_that_cannot_run_is_ignored_with_its_reason_and_fails_under_ci)"),
        "{out}"
    );
    assert!(!out.contains("skipped:"), "{out}");
}

/// With `MM_SKIPPED_FILE` set (scripts/test.sh), a suite adds the tests it skipped to that file,
/// one line each with the suite's name, instead of listing them in the middle of the output:
/// the script lists them all last.
#[mm_testkit::test]
fn skipped_tests_go_to_the_file_the_test_script_lists_last() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("skipped");
    std::fs::write(&file, "fake_server earlier: kept\n").unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_test_that_cannot_run",
            "--ignored",
            "--color=never",
        ])
        .env_remove("CI")
        .env(mm_testkit::harness::SKIPPED_FILE_VAR, &file)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("skipped:"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "fake_server earlier: kept\n\
         suite a_test_that_cannot_run: the widget is not installed (apt-get install widget)\n"
    );
}

/// The README's test command is the script `.ci/run` runs, and the script runs every test
/// binary even after a failure, listing the skipped tests last.
#[mm_testkit::test]
fn the_readme_s_test_command_is_the_ci_s_and_runs_every_binary() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    let readme = read("README.md");
    let block = readme
        .split("# 2. Run the tests")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let commands: Vec<&str> = block
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["scripts/test.sh"]);
    let ci = read(".ci/run");
    assert!(ci.lines().any(|l| l == "\"$root/scripts/test.sh\""), "{ci}");
    let script = read("scripts/test.sh");
    assert!(
        script.contains(&format!(
            "{}=$skipped cargo test --all-targets --no-fail-fast \"$@\"",
            mm_testkit::harness::SKIPPED_FILE_VAR
        )),
        "{script}"
    );
    // The skipped list is printed after everything else.
    let list = script.find("sort \"$skipped\"").unwrap();
    assert!(
        script[list..]
            .lines()
            .skip(1)
            .all(|l| !l.contains("echo \"scripts/test.sh")),
        "{script}"
    );
}

/// Run by `a_panic_with_an_empty_message_says_where` only.
#[mm_testkit::test]
#[ignore = "the child of a_panic_with_an_empty_message_says_where"]
fn a_test_whose_assertion_prints_nothing() {
    let output = String::new();
    assert!(output.contains("[exit code: 1]"), "{}", output);
}

/// A failed assertion whose message is empty (`assert!(ok, "{}", output)` when the output was
/// empty) still says what failed: where.
#[mm_testkit::test]
fn a_panic_with_an_empty_message_says_where() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_test_whose_assertion_prints_nothing",
            "--ignored",
            "--color=never",
        ])
        .env_remove("CI")
        .env_remove(mm_testkit::harness::SKIPPED_FILE_VAR)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(101), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("test panicked"))
        .unwrap_or_else(|| panic!("no failure line: {stdout}"));
    let expected = Regex::new(
        r"^test panicked with an empty message at crates/mm/tests/suite/main\.rs:\d+:\d+ \(the assertion there failed; what it printed was empty\)$",
    )
    .unwrap();
    assert!(expected.is_match(line), "{line:?}");
}
