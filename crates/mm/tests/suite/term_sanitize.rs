//! A hostile model, tool, project and agent against the terminal (the real binary in a
//! pseudo-terminal, the scripted fake server): escape sequences and bidirectional controls they
//! slip into what mm prints never reach the terminal raw — they show visibly (docs/terminal.md,
//! "What comes from outside") — and the permission question shows the whole of what will run.
//! Each test asserts on the injected bytes themselves: mm's own styling and line drawing use
//! ESC too, but never OSC, BEL, erase-line, RLO or a C1 control.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::Reply;
use common::pty::{PtyServer as Server, answer_with_usage, bash_reply, mm_command, spawn_mm};
use expectrl::session::OsSession;
use expectrl::{Eof, Expect};
use serde_json::json;

/// OSC 52 (writes the clipboard), erase-the-line-and-return (hides what came before), OSC 0
/// (retitles the window), RLO (shows what follows reversed), the one-byte C1 CSI.
const INJECTED: &str = "a\x1b]52;c;SGVsbG8=\x07b\x1b[2K\rc\x1b]0;title\x07d\u{202e}e\u{9b}2Jf";
/// [`INJECTED`] as the terminal must show it.
const SHOWN: &str = "a^[]52;c;SGVsbG8=^Gb^[[2K^Mc^[]0;title^Gd<U+202E>e<U+009B>2Jf";
/// What of [`INJECTED`] must never reach the terminal.
const RAW: [&str; 6] = [
    "\x1b]52;", "\x1b]0;", "\x07", "\x1b[2K", "\u{202e}", "\u{9b}",
];

/// Everything a session printed, kept as the test reads it.
struct Transcript {
    mm: OsSession,
    all: String,
}

impl Transcript {
    fn new(mm: OsSession) -> Self {
        Transcript {
            mm,
            all: String::new(),
        }
    }

    /// What was printed from now until `needle` (kept, with the needle).
    fn until(&mut self, needle: &str) -> String {
        let found = self.mm.expect(needle).unwrap();
        let before = String::from_utf8_lossy(found.before()).into_owned();
        self.all.push_str(&before);
        self.all.push_str(needle);
        before
    }

    fn send(&mut self, text: &str) {
        self.mm.send(text).unwrap();
    }

    /// Leaves (Ctrl-D at the prompt) and returns everything printed.
    fn leave(mut self) -> String {
        self.until("> ");
        self.mm.send("\x04").unwrap();
        self.all.push_str(&to_the_end(&mut self.mm));
        self.all
    }
}

/// Everything printed until the end of output (the `Eof` needle matches it all).
fn to_the_end(mm: &mut OsSession) -> String {
    let found = mm.expect(Eof).unwrap();
    let mut all = String::from_utf8_lossy(found.before()).into_owned();
    for m in found.matches() {
        all.push_str(&String::from_utf8_lossy(m));
    }
    all
}

/// No injected byte reached the terminal, and the injection shows visibly at least `times`.
fn assert_shown_visibly(all: &str, times: usize) {
    for raw in RAW {
        assert!(!all.contains(raw), "{raw:?} reached the terminal:\n{all:?}");
    }
    assert!(
        all.matches(SHOWN).count() >= times,
        "{SHOWN:?} shown fewer than {times} times:\n{all:?}"
    );
}

#[mm_testkit::test]
fn the_models_text_and_thinking_show_visibly_in_the_session() {
    let (server, url) = Server::start(vec![Reply::text(INJECTED).with_reasoning(INJECTED)]);
    let home = tempfile::tempdir().unwrap();
    let mut t = Transcript::new(spawn_mm(home.path(), &url, &["--yolo"]));
    t.until("> ");
    t.send("hi\r");
    t.until(&format!("│ {SHOWN}\r\n"));
    t.until(&format!("{SHOWN}\r\n"));
    assert_shown_visibly(&t.leave(), 2);
    server.assert_valid();
}

#[mm_testkit::test]
fn one_shot_on_a_terminal_shows_the_answer_and_thinking_visibly() {
    let (server, url) = Server::start(vec![Reply::text(INJECTED).with_reasoning(INJECTED)]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo", "-p", "hi"]);
    let all = to_the_end(&mut mm);
    assert!(all.contains(&format!("│ {SHOWN}\r\n")), "{all:?}");
    assert!(all.contains(&format!("{SHOWN}\r\n")), "{all:?}");
    assert_shown_visibly(&all, 2);
    server.assert_valid();
}

#[mm_testkit::test]
fn one_shot_into_a_pipe_gets_the_answer_byte_for_byte() {
    let (server, url) = Server::start(vec![Reply::text(INJECTED).with_reasoning(INJECTED)]);
    let home = tempfile::tempdir().unwrap();
    let out = mm_command(home.path(), home.path(), &url, &["--yolo", "-p", "hi"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // A script reading stdout gets what the model sent, escapes and all.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{INJECTED}\n")
    );
    // stderr is for people, read on a terminal sooner or later (`2>log; cat log`): shown
    // visibly, pipe or not.
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(&format!("│ {SHOWN}\n")), "{err:?}");
    assert_shown_visibly(&err, 1);
    server.assert_valid();
}

#[mm_testkit::test]
fn a_commands_output_shows_visibly_while_it_runs_and_after() {
    // printf writes the raw bytes; the command itself is plain text.
    let command = r"printf 'a\033]52;c;SGVsbG8=\007b\033[2K\rc\033]0;title\007d\342\200\256e\302\2332Jf\n'; sleep 0.6; echo finished";
    let (server, url) = Server::start(vec![bash_reply("c1", command), answer_with_usage("ran it")]);
    let home = tempfile::tempdir().unwrap();
    let mut t = Transcript::new(spawn_mm(home.path(), &url, &["--yolo"]));
    t.until("> ");
    t.send("run\r");
    // While it runs (the progress report), then in the result's preview.
    // While it runs: the progress report (which keeps what follows a carriage return, as a
    // progress bar would show), then in the result's preview.
    t.until("  │ c^[]0;title^Gd<U+202E>e<U+009B>2Jf\r\n");
    t.until(&format!("  {SHOWN}\r\n  finished\r\n"));
    t.until("ran it");
    assert_shown_visibly(&t.leave(), 1);
    server.assert_valid();
}

#[mm_testkit::test]
fn a_plan_with_a_hostile_title_and_steps_shows_visibly() {
    let (server, url) = Server::start(vec![
        Reply::tool_call(
            "plan",
            json!({"action": "create", "title": INJECTED, "steps": [INJECTED, "two"]}),
        ),
        answer_with_usage("planned"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut t = Transcript::new(spawn_mm(home.path(), &url, &["--yolo"]));
    t.until("> ");
    t.send("plan it\r");
    t.until(&format!("📋 {SHOWN}\r\n"));
    t.until(&format!(" {SHOWN}\r\n"));
    t.until("planned");
    assert_shown_visibly(&t.leave(), 2);
    server.assert_valid();
}

#[mm_testkit::test]
fn an_ask_user_form_with_a_hostile_question_and_options_shows_visibly() {
    let (server, url) = Server::start(vec![
        Reply::tool_call(
            "ask_user",
            json!({"questions": [{"question": INJECTED, "type": "choice", "options": [INJECTED, "plain"]}]}),
        ),
        answer_with_usage("thanks"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut t = Transcript::new(spawn_mm(home.path(), &url, &["--yolo"]));
    t.until("> ");
    t.send("ask me\r");
    t.until(&format!("? {SHOWN}\r\n"));
    t.until(&format!("  1. {SHOWN}\r\n  2. plain\r\n"));
    t.until("number>");
    t.send("2\r");
    t.until("thanks");
    assert_shown_visibly(&t.leave(), 2);
    assert_eq!(server.tool_results(), [format!("{INJECTED} → plain")]);
    server.assert_valid();
}

/// A project skill whose description is [`INJECTED`] (YAML escapes), and one whose name is.
fn hostile_skills(project: &Path) {
    let yaml = r#""a\e]52;c;SGVsbG8=\ab\e[2K\rc\e]0;title\ad\u202ee\x9b2Jf""#;
    for (dir, front) in [
        ("evil", format!("name: evil\ndescription: {yaml}")),
        ("bad", format!("name: {yaml}\ndescription: fine")),
    ] {
        let dir = project.join(".mm/skills").join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\n{front}\n---\nbody\n")).unwrap();
    }
}

#[mm_testkit::test]
fn a_projects_skill_names_and_descriptions_show_visibly() {
    let (server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    hostile_skills(home.path());
    // A description is read as one line (its whitespace, the CR included, made single spaces).
    let description = SHOWN.replace("^M", " ");
    // A window where the banner's warning fits (it wraps at word boundaries).
    let command = mm_command(home.path(), home.path(), &url, &["--yolo"]);
    let mut t = Transcript::new(common::pty::spawn_sized(&command, 250));
    // The banner's warning quotes the invalid name.
    t.until(&format!("invalid name \"{SHOWN}\""));
    t.until("> ");
    t.send("/skills\r");
    t.until(&format!("evil — {description}\r\n"));
    t.until("> ");
    t.send("/help\r");
    t.until(&format!("/evil         {description}\r\n"));
    let all = t.leave();
    assert_shown_visibly(&all, 1);
    assert_eq!(all.matches(&description).count(), 2, "{all:?}");
    assert_eq!(server.requests().len(), 0);
}

#[mm_testkit::test]
fn the_permission_question_shows_every_line_of_the_command() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo ok\nrm -rf ~"),
        answer_with_usage("first"),
        bash_reply("c2", "rm -rf ~\x1b[2K\recho ok"),
        answer_with_usage("second"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let keep = home.path().join("keep.txt");
    std::fs::write(&keep, "still here").unwrap();
    let mut t = Transcript::new(spawn_mm(home.path(), &url, &["--no-yolo"]));
    t.until("> ");
    t.send("clean up\r");
    // Every line is on the screen before the question that reads the key.
    let shown = t.until("Allow the call above?  [y]es  [n]o  [t]ell why  ne[v]er this command");
    assert!(
        shown.ends_with("  1 │ bash: echo ok\r\n  2 │ rm -rf ~\r\n"),
        "{shown:?}"
    );
    t.send("n");
    t.until("[command rejected by the user]");
    t.until("first");
    t.until("> ");
    t.send("again\r");
    // Erase-line-and-return cannot hide the real command behind the harmless one.
    t.until("Allow bash: rm -rf ~^[[2K^Mecho ok?  [y]es");
    t.send("n");
    t.until("second");
    let all = t.leave();
    for raw in RAW {
        assert!(!all.contains(raw), "{raw:?} reached the terminal:\n{all:?}");
    }
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "still here");
    server.assert_valid();
}

#[mm_testkit::test]
fn a_long_command_is_shown_whole_folded_at_the_width() {
    let words: Vec<String> = (0..50).map(|i| format!("w{i:02}xyz")).collect();
    let command = format!("echo {}", words.join(" "));
    let title = format!("bash: {command}");
    assert!(command.len() > 300);
    for cols in [60u16, 120] {
        let (server, url) =
            Server::start(vec![bash_reply("c1", &command), answer_with_usage("done")]);
        let home = tempfile::tempdir().unwrap();
        let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
        mm.get_process_mut().set_window_size(cols, 24).unwrap();
        let mut t = Transcript::new(mm);
        t.until("> ");
        t.send("go\r");
        let shown = t.until("Allow the call above?");
        let rows: Vec<&str> = shown
            .split("\r\n")
            .filter(|r| r.starts_with("  1 │ ") || r.starts_with("    │ "))
            .collect();
        // Never wider than the window, and nothing cut: the rows put together are the title.
        for row in &rows {
            assert!(
                row.chars().count() <= usize::from(cols),
                "{row:?} at {cols}"
            );
        }
        let whole: String = rows
            .iter()
            .map(|r| r.chars().skip(6).collect::<String>())
            .collect();
        assert_eq!(whole, title, "at {cols} columns");
        assert_eq!(rows.len(), title.len().div_ceil(usize::from(cols) - 6));
        t.send("y");
        t.until("done");
        t.leave();
        server.assert_valid();
    }
}

#[mm_testkit::test]
fn another_agents_permission_question_and_text_show_visibly() {
    let (_server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    common::pty::python_agent_config(home.path(), "evil", "hostile_agent.py");
    let python = Command::new("python3").arg("--version").output();
    assert!(
        python.is_ok_and(|o| o.status.success()),
        "python3 is needed"
    );
    let mut t = Transcript::new(spawn_mm(home.path(), &url, &[]));
    t.until("> ");
    t.send("/ask evil go\r");
    // Its tool call's title, then the whole of what it asks to run, then its options.
    t.until(&format!("  │ {SHOWN}\r\n"));
    let shown = t.until(&format!("Allow the call above?  [1] Yes{SHOWN}  [2] No"));
    assert!(
        shown.ends_with(&format!(
            "  1 │ evil: bash: echo ok\r\n  2 │ rm -rf ~{SHOWN}\r\n"
        )),
        "{shown:?}"
    );
    t.send("2");
    t.until(&format!("chose no {SHOWN}\r\n"));
    assert_shown_visibly(&t.leave(), 4);
}

/// A server whose listing fails with a hostile message: the banner's warning (said at start-up,
/// not at the first prompt) shows it visibly.
#[mm_testkit::test]
fn a_servers_error_in_the_banner_shows_visibly() {
    let (server, url) = Server::start(vec![]);
    server.server.route(
        "GET /v1/models",
        vec![Reply::error(404, json!({"error": {"message": INJECTED}}))],
    );
    let home = tempfile::tempdir().unwrap();
    let command = mm_command(home.path(), home.path(), &url, &["--yolo"]);
    let mut t = Transcript::new(common::pty::spawn_sized(&command, 200));
    t.until(&format!("warning: model server answered 404: {SHOWN}"));
    assert_shown_visibly(&t.leave(), 1);
}
