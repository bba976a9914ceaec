//! The permission question in the real terminal: `[a]lways` says what it covers — a read-only
//! form (`ls …` with the options the table allows) or exactly this command — and remembers just
//! that; `ne[v]er` holds for that command only; `/permissions` lists, removes and clears what was
//! remembered; `[t]ell why` sends the user's reason as the tool result; a call whose arguments do
//! not fit its tool is never asked. Exact lines at 120 and at 60 columns, and the screen's rows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, Term, answer_with_usage, bash_reply, call_reply, spawn_mm};
use expectrl::{Eof, Expect};
use serde_json::json;

/// The keys of the question for a command `[a]lways` remembers exactly.
const EXACT_KEYS: &str =
    "[y]es  [a]lways allow exactly this command  [n]o  [t]ell why  ne[v]er this command";

fn permissions_at(columns: u16) {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "ls -la"),
        answer_with_usage("first"),
        bash_reply("c2", "ls -a ."),
        answer_with_usage("second"),
        bash_reply("c3", "ls; touch chained.txt"),
        answer_with_usage("third"),
    ]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.get_process_mut().set_window_size(columns, 24).unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/permissions").unwrap();
    mm.expect("\r\nno permission remembered: every gated call asks (in ask mode)\r\n")
        .unwrap();
    mm.expect("> ").unwrap();

    mm.send_line("one").unwrap();
    mm.expect(
        "Allow bash: ls -la?  [y]es  [a]lways allow read-only \"ls …\"  [n]o  [t]ell why  ne[v]er this command",
    )
    .unwrap();
    mm.send("a").unwrap();
    mm.expect(" always\r\n").unwrap();
    mm.expect("first").unwrap();
    mm.expect("> ").unwrap();

    // The rule lets another read-only form of the command run unasked…
    mm.send_line("two").unwrap();
    mm.expect("$ bash: ls -a .").unwrap();
    mm.expect("second").unwrap();
    mm.expect("> ").unwrap();

    // …but not one that chains another after it, for which no rule is offered.
    mm.send_line("three").unwrap();
    mm.expect("Allow bash: ls; touch chained.txt?  [y]es  [n]o  [t]ell why  ne[v]er this command")
        .unwrap();
    mm.send("t").unwrap();
    mm.expect(" no, because: ").unwrap();
    mm.send("run ls alone\r").unwrap();
    mm.expect("[command rejected by the user: run ls alone]")
        .unwrap();
    mm.expect("third").unwrap();
    mm.expect("> ").unwrap();
    assert!(
        !common::pty::project(home.path())
            .join("chained.txt")
            .exists()
    );

    mm.send_line("/permissions").unwrap();
    mm.expect("\r\n1  always allow bash read-only \"ls …\"\r\n")
        .unwrap();
    mm.expect("/permissions remove N forgets one, /permissions clear all (/new keeps them)\r\n")
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        server.tool_results().last().unwrap(),
        "[command rejected by the user: run ls alone]"
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn always_remembers_the_read_only_form_and_tell_why_reaches_the_model_at_120_columns() {
    permissions_at(120);
}

#[mm_testkit::test]
fn always_remembers_the_read_only_form_and_tell_why_reaches_the_model_at_60_columns() {
    permissions_at(60);
}

/// The rows from the last one that is `row` (excluded) to the end.
fn after_last(rows: &[String], row: &str) -> Vec<String> {
    let at = rows
        .iter()
        .rposition(|r| r == row)
        .unwrap_or_else(|| panic!("{rows:#?}"));
    rows[at + 1..].to_vec()
}

/// The answers of the turns, in order.
const ANSWERS: [&str; 4] = ["first", "second", "third", "fourth"];

/// A model that runs `commands`, one per turn, each turn then answering `ANSWERS`' word; and
/// `mm --no-yolo` in a 120×40 window, at its prompt, in a home of its own.
fn asking(commands: &[&str]) -> (Server, tempfile::TempDir, Term) {
    let script = commands
        .iter()
        .zip(ANSWERS)
        .enumerate()
        .flat_map(|(i, (command, answer))| {
            [
                bash_reply(&format!("c{}", i + 1), command),
                answer_with_usage(answer),
            ]
        })
        .collect();
    let (server, url) = Server::start(script);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--no-yolo"], 120, 40);
    term.expect("> ");
    (server, home, term)
}

fn leave(mut term: Term) {
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
}

#[mm_testkit::test]
fn always_for_another_program_covers_exactly_that_command_and_says_so() {
    let (server, _home, mut term) = asking(&["printf one", "printf  one", "printf two"]);
    term.send_line("one");
    term.expect(EXACT_KEYS);
    term.send("a");
    term.expect("first");
    term.expect("> ");
    // The same words run unasked…
    term.send_line("two");
    term.expect("second");
    term.expect("> ");
    assert_eq!(
        after_last(&term.rows(), "> two")[..3],
        ["$ bash: printf  one", "  one", "second"]
    );
    // …other words are asked.
    term.send_line("three");
    term.expect(EXACT_KEYS);
    assert_eq!(
        after_last(&term.rows(), "> three"),
        [
            "$ bash: printf two".to_string(),
            format!("Allow bash: printf two?  {EXACT_KEYS}")
        ]
    );
    term.send("y");
    term.expect("third");
    term.expect("> ");
    leave(term);
    assert_eq!(server.tool_results(), ["one", "one", "two"]);
    server.assert_valid();
}

#[mm_testkit::test]
fn never_refuses_that_command_and_a_second_command_is_still_asked() {
    let (server, _home, mut term) = asking(&["printf one", "printf two", "printf one"]);
    term.send_line("one");
    term.expect(EXACT_KEYS);
    term.send("v");
    term.expect(" never");
    term.expect("first");
    term.expect("> ");
    // Another command is still put to the user.
    term.send_line("two");
    term.expect(EXACT_KEYS);
    assert_eq!(
        after_last(&term.rows(), "> two"),
        [
            "$ bash: printf two".to_string(),
            format!("Allow bash: printf two?  {EXACT_KEYS}")
        ]
    );
    term.send("y");
    term.expect("second");
    term.expect("> ");
    // The refused one is refused without a question.
    term.send_line("three");
    term.expect("third");
    term.expect("> ");
    assert!(
        !after_last(&term.rows(), "> three")
            .iter()
            .any(|r| r.starts_with("Allow")),
        "{:#?}",
        term.rows()
    );
    term.send_line("/permissions");
    term.expect("(/new keeps them)");
    term.expect("> ");
    assert_eq!(
        after_last(&term.rows(), "> /permissions"),
        [
            "1  never bash exactly \"printf one\"",
            "/permissions remove N forgets one, /permissions clear all (/new keeps them)",
            ">"
        ]
    );
    leave(term);
    assert_eq!(
        server.tool_results(),
        [
            "[command rejected by the user]",
            "two",
            "[command rejected by the user]"
        ]
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn a_removed_rule_asks_again_and_clear_forgets_all() {
    let (server, _home, mut term) = asking(&["ls -a", "ls", "ls", "ls -a"]);
    let question = "Allow bash: ls?  [y]es  [a]lways allow read-only \"ls …\"  [n]o  [t]ell why  ne[v]er this command";
    term.send_line("one");
    term.expect("ne[v]er this command");
    term.send("a");
    term.expect("first");
    term.expect("> ");
    term.send_line("two");
    term.expect("second");
    term.expect("> ");
    term.send_line("/permissions remove 1");
    term.expect("forgot: always allow bash read-only \"ls …\"");
    term.expect("> ");
    term.send_line("/permissions remove 1");
    term.expect("(/permissions lists them)");
    term.expect("> ");
    assert_eq!(
        after_last(&term.rows(), "> /permissions remove 1"),
        ["no remembered answer 1 (/permissions lists them)", ">"]
    );
    // Asked again, and remembered again.
    term.send_line("three");
    term.expect("ne[v]er this command");
    assert_eq!(
        after_last(&term.rows(), "> three"),
        ["$ bash: ls", question]
    );
    term.send("a");
    term.expect("third");
    term.expect("> ");
    term.send_line("/permissions clear");
    term.expect("every gated call asks");
    term.expect("> ");
    assert_eq!(
        after_last(&term.rows(), "> /permissions clear"),
        ["forgot 1 remembered answer(s): every gated call asks", ">"]
    );
    term.send_line("four");
    term.expect("ne[v]er this command");
    term.send("y");
    term.expect("fourth");
    term.expect("> ");
    leave(term);
    assert_eq!(server.tool_results().len(), 4);
    server.assert_valid();
}

#[mm_testkit::test]
fn a_call_that_does_not_fit_its_tool_is_never_asked() {
    let (server, url) = Server::start(vec![
        // `new_text` is missing: the model is told, nobody is asked.
        call_reply(
            "c1",
            "edit_file",
            json!({"path": "a.txt", "old_text": "one"}),
        ),
        answer_with_usage("noted"),
    ]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let file = common::pty::project(home.path()).join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--no-yolo"], 120, 40);
    term.expect("> ");
    term.send_line("edit it");
    term.expect("noted");
    term.expect("> ");
    let rows = after_last(&term.rows(), "> edit it");
    assert!(!rows.iter().any(|r| r.contains("Allow")), "{rows:#?}");
    assert!(
        rows.iter()
            .any(|r| r.contains("[bad arguments for edit_file: missing field `new_text`")),
        "{rows:#?}"
    );
    leave(term);
    assert_eq!(
        server.tool_results(),
        [
            "[bad arguments for edit_file: missing field `new_text`; arguments given: {\"path\":\"a.txt\",\"old_text\":\"one\"}]"
        ]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    server.assert_valid();
}
