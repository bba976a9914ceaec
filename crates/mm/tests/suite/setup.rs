//! `mm setup` (docs/setup.md) against the fake model server: in a pseudo-terminal, a run that
//! writes a working configuration (the user's comments kept) and exits 0; Ctrl-C exits 130 and
//! leaves the file byte for byte; a 401 asks for a key; and without questions
//! (`--url`, `--model`), a project's file that overrides what it writes is warned about; in a
//! narrow window its lines break at spaces.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use std::path::PathBuf;
use std::process::Command;

use common::Reply;
use common::probes::probes;
use common::pty::PtyServer;
use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession;
use expectrl::{Eof, Expect, Regex};
use pretty_assertions::assert_eq;
use serde_json::json;

const USER_FILE: &str =
    "# my settings\nyolo = true   # keep going\n\n[model]\n# the one I like\ntemperature = 0.2\n";

struct World {
    home: tempfile::TempDir,
}

impl World {
    fn new(user_file: Option<&str>) -> World {
        let world = World {
            home: tempfile::tempdir_in(common::target_tmpdir()).unwrap(),
        };
        if let Some(text) = user_file {
            std::fs::create_dir_all(world.user_file().parent().unwrap()).unwrap();
            std::fs::write(world.user_file(), text).unwrap();
        }
        std::fs::create_dir_all(world.project()).unwrap();
        world
    }

    fn user_file(&self) -> PathBuf {
        self.home.path().join("config/mm/config.toml")
    }

    fn user_text(&self) -> String {
        std::fs::read_to_string(self.user_file()).unwrap()
    }

    fn project(&self) -> PathBuf {
        self.home.path().join("proj")
    }

    /// `mm setup ARGS` in the project, with nothing of the test's environment but `PATH`.
    fn command(&self, args: &[&str]) -> Command {
        let home = self.home.path();
        let mut cmd = Command::new(common::mm_binary());
        cmd.arg("setup")
            .args(args)
            .current_dir(self.project())
            .env_clear()
            .env("HOME", home)
            .env("XDG_STATE_HOME", home.join("state"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TERM", "xterm")
            .env("NO_COLOR", "1");
        cmd
    }

    /// `mm setup ARGS` without a terminal (stdin empty): its exit code and stdout.
    fn run(&self, args: &[&str]) -> (Option<i32>, String) {
        let out = self
            .command(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    /// `mm setup ARGS` in a pseudo-terminal wide enough that none of its lines is wrapped (the
    /// wrapping has a test of its own).
    fn spawn(&self, args: &[&str]) -> OsSession {
        common::pty::spawn_window(&self.command(args), 400, 24)
    }
}

/// The first question: a URL when nothing answers on the usual ports, else a number or a URL
/// (a URL is an answer to both).
fn answer_server(mm: &mut OsSession, url: &str) {
    mm.expect(Regex(
        r"Server (URL \(e\.g\. [^)]*\)|\(number or URL\) \[1\]): ",
    ))
    .unwrap();
    mm.send_line(url).unwrap();
}

fn exit_code(mm: &mut OsSession) -> i32 {
    mm.expect(Eof).unwrap();
    match mm.get_process().wait().unwrap() {
        WaitStatus::Exited(_, code) => code,
        other => panic!("mm did not exit: {other:?}"),
    }
}

/// The sandbox question, when this kernel enforces a mode; the mode written (if any).
fn answer_sandbox(mm: &mut OsSession) -> Option<&'static str> {
    if mm_tools::sandbox::landlock_abi() > 0 {
        let offered = mm.expect("Sandbox [1]: ").unwrap();
        let offered = String::from_utf8_lossy(offered.before()).into_owned();
        for line in ["1) workspace-write", "2) read-only", "3) off"] {
            assert!(offered.contains(line), "{offered}");
        }
        mm.send_line("2").unwrap();
        Some("read-only")
    } else {
        // Only `off` is enforced here: nothing is offered.
        mm.expect("this system cannot fence the model's commands (no Landlock)")
            .unwrap();
        None
    }
}

fn sandbox_line(mode: Option<&str>) -> String {
    match mode {
        Some(m) => format!("\n[tools]\nsandbox = \"{m}\"\n"),
        None => String::new(),
    }
}

#[mm_testkit::test]
fn a_first_run_writes_a_working_config_keeping_the_user_s_comments() {
    let (server, url) = PtyServer::start(probes());
    let world = World::new(Some(USER_FILE));
    let mut mm = world.spawn(&[]);
    answer_server(&mut mm, &url);
    mm.expect(format!("✓ llama.cpp at {url}")).unwrap();
    mm.expect("  1) fake-model").unwrap();
    mm.expect("Model (number or name) [1]: ").unwrap();
    mm.send_line("").unwrap();
    mm.expect("✓ streaming: 3 tokens").unwrap();
    mm.expect("✓ context window: 32768 tokens").unwrap();
    mm.expect("✓ tool calls: get_time").unwrap();
    let mode = answer_sandbox(&mut mm);
    mm.expect("✓ wrote model.url, model.name").unwrap();
    mm.expect("Next: run `mm` in a project folder").unwrap();
    assert_eq!(exit_code(&mut mm), 0);
    assert_eq!(
        world.user_text(),
        format!(
            "# my settings\nyolo = true   # keep going\n\n[model]\n# the one I like\ntemperature = 0.2\nurl = \"{url}\"\nname = \"fake-model\"\n{}",
            sandbox_line(mode)
        )
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn ctrl_c_exits_130_and_leaves_the_file_byte_for_byte() {
    let (_server, url) = PtyServer::start(probes());
    let world = World::new(Some(USER_FILE));
    let mut mm = world.spawn(&[]);
    answer_server(&mut mm, &url);
    mm.expect("Model (number or name) [1]: ").unwrap();
    mm.send(expectrl::ControlCode::EndOfText).unwrap();
    mm.expect("Stopped: nothing written.").unwrap();
    assert_eq!(exit_code(&mut mm), 130);
    assert_eq!(world.user_text(), USER_FILE);
}

#[mm_testkit::test]
fn a_401_asks_for_a_key_which_is_written_and_sent() {
    let (server, url) = PtyServer::start(probes());
    let listing = json!({"object": "list", "data": [{"id": "fake-model", "object": "model",
        "owned_by": "fake", "meta": {"n_ctx": 32768}}]});
    server.server.route(
        "GET /v1/models",
        vec![
            Reply::error(401, json!({"error": {"message": "Invalid API Key"}})),
            Reply::json(listing),
        ],
    );
    let world = World::new(None);
    let mut mm = world.spawn(&[]);
    answer_server(&mut mm, &url);
    mm.expect("model server answered 401").unwrap();
    mm.expect("The server needs an API key. Key: ").unwrap();
    mm.send_line("sekrit").unwrap();
    mm.expect("Model (number or name) [1]: ").unwrap();
    mm.send_line("1").unwrap();
    let mode = answer_sandbox(&mut mm);
    mm.expect("✓ wrote model.url, model.name, model.apiKey")
        .unwrap();
    assert_eq!(exit_code(&mut mm), 0);
    assert_eq!(
        world.user_text(),
        format!(
            "[model]\nurl = \"{url}\"\nname = \"fake-model\"\napiKey = \"sekrit\"\n{}",
            sandbox_line(mode)
        )
    );
    let asked = server.server.received("GET /v1/models");
    assert_eq!(asked[0].header("authorization"), None);
    assert_eq!(
        asked.last().unwrap().header("authorization"),
        Some("Bearer sekrit")
    );
}

#[mm_testkit::test]
fn without_questions_a_project_file_that_overrides_is_warned_about() {
    let (_server, url) = PtyServer::start(probes());
    let world = World::new(Some(USER_FILE));
    let project_file = world.project().join(".mm/config.toml");
    std::fs::create_dir_all(project_file.parent().unwrap()).unwrap();
    std::fs::write(&project_file, "[model]\nname = \"other-model\"\n").unwrap();
    let (code, stdout) = world.run(&["--url", &url, "--model", "fake-model"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(!stdout.contains("Server ("), "no question: {stdout}");
    assert!(
        stdout.contains(&format!(
            "! {} sets model.name, which wins over what setup writes (here)",
            project_file.display()
        )),
        "{stdout}"
    );
    assert!(world.user_text().contains("name = \"fake-model\""));
}

/// In a window 40 columns wide, setup's lines break at spaces: no row is wider than the window
/// (the terminal would cut a word there, `Ollam` / `a`), and every word of a long line is whole.
#[mm_testkit::test]
fn setup_s_lines_are_wrapped_at_word_boundaries_in_a_narrow_window() {
    let (_server, url) = PtyServer::start(probes());
    let world = World::new(None);
    let command = world.command(&["--url", &url, "--model", "fake-model", "--sandbox", "off"]);
    let mut mm = common::pty::spawn_window(&command, 40, 24);
    let found = mm.expect(Eof).unwrap();
    let mut bytes = found.before().to_vec();
    bytes.extend_from_slice(found.get(0).unwrap_or_default());
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let rows: Vec<&str> = text.split("\r\n").collect();
    for row in &rows {
        assert!(row.chars().count() <= 40, "{row:?} in {rows:#?}");
    }
    let words: Vec<&str> = rows.iter().flat_map(|r| r.split_whitespace()).collect();
    assert!(
        words
            .join(" ")
            .contains("Next: run `mm` in a project folder (`mm doctor` checks everything again)."),
        "{rows:#?}"
    );
}

/// What the probes of a model that cannot make structured tool calls are answered (the tiny
/// model of scripts/local-model.sh): the stream works, the call comes back as prose.
fn no_tool_calls() -> Vec<Reply> {
    let mut replies = probes();
    replies[1] = Reply::text("I would look at the time in Paris.");
    replies.remove(2);
    replies
}

#[mm_testkit::test]
fn without_questions_a_model_that_fails_a_check_is_saved_with_its_failures_and_exits_1() {
    // The model answers the first check with an error.
    let (_server, url) = PtyServer::start(vec![Reply::error(
        500,
        json!({"error": {"message": "boom"}}),
    )]);
    let world = World::new(Some(USER_FILE));
    let (code, stdout) = world.run(&["--url", &url, "--model", "fake-model"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("✗ streaming: "), "{stdout}");
    assert!(
        stdout.contains("fake-model does not work with mm as it is (streaming"),
        "{stdout}"
    );
    assert!(
        stdout.contains("✓ wrote model.url, model.name in "),
        "{stdout}"
    );
    assert!(
        stdout.contains("! saved although fake-model fails a check (streaming"),
        "{stdout}"
    );
    assert!(!stdout.contains("Save it anyway?"), "no question: {stdout}");
    assert_eq!(
        world.user_text(),
        format!("{USER_FILE}url = \"{url}\"\nname = \"fake-model\"\n")
    );
    // `mm -acp setup` (what an editor runs for the auth method) is the same command.
    let (code, stdout) = world.run(&["-acp", "--url", &url, "--model", "fake-model"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.starts_with("mm setup v"), "{stdout}");
}

/// Asked, a model that fails a check is saved when the user says so (exit 1: it does not work
/// yet, and doctor's advice was shown), and not when they take the default.
#[mm_testkit::test]
fn asked_a_model_that_fails_a_check_is_saved_only_if_the_user_says_so() {
    let (server, url) = PtyServer::start(no_tool_calls());
    let world = World::new(Some(USER_FILE));
    let mut mm = world.spawn(&[]);
    answer_server(&mut mm, &url);
    mm.expect("Model (number or name) [1]: ").unwrap();
    mm.send_line("").unwrap();
    mm.expect("✗ tool calls: ").unwrap();
    mm.expect("  fix: ").unwrap();
    mm.expect("fake-model does not work with mm as it is (tool calls): fix what is said above, or pick another model.")
        .unwrap();
    mm.expect("Save it anyway? [y/N]: ").unwrap();
    mm.send_line("maybe").unwrap();
    mm.expect("Save it anyway? [y/N]: ").unwrap();
    mm.send_line("y").unwrap();
    let mode = answer_sandbox(&mut mm);
    mm.expect("Sessions: on: each project keeps the last 100 conversations in .mm/sessions")
        .unwrap();
    mm.expect("✓ wrote model.url, model.name").unwrap();
    mm.expect("! saved although fake-model fails a check (tool calls)")
        .unwrap();
    assert_eq!(exit_code(&mut mm), 1);
    assert_eq!(
        world.user_text(),
        format!(
            "{USER_FILE}url = \"{url}\"\nname = \"fake-model\"\n{}",
            sandbox_line(mode)
        )
    );
    drop(server);

    // Enter: no, nothing written.
    let (_server, url) = PtyServer::start(no_tool_calls());
    let world = World::new(Some(USER_FILE));
    let mut mm = world.spawn(&[]);
    answer_server(&mut mm, &url);
    mm.expect("Model (number or name) [1]: ").unwrap();
    mm.send_line("").unwrap();
    mm.expect("Save it anyway? [y/N]: ").unwrap();
    mm.send_line("").unwrap();
    mm.expect("Run `mm setup` again once it works.").unwrap();
    mm.expect("Nothing written.").unwrap();
    assert_eq!(exit_code(&mut mm), 1);
    assert_eq!(world.user_text(), USER_FILE);
}
