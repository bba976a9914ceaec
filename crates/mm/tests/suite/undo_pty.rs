//! `/undo` in the real terminal: its lines, exact, at 120 and at 60 columns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, Term, answer_with_usage, call_reply, project};
use expectrl::{Eof, Expect};
use serde_json::json;

fn undo_at(columns: u16) {
    let (server, url) = Server::start(vec![
        call_reply(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "two\n"}),
        ),
        answer_with_usage("written"),
    ]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let file = project(home.path()).join("a.txt");
    std::fs::write(&file, "one\n").unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], columns, 40);
    term.expect("> ");
    term.send_line("write it");
    term.expect("written");
    term.expect("> ");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
    // The rows on the screen, whatever the status line drew and erased meanwhile.
    term.send_line("/undo");
    term.expect("restored a.txt");
    term.expect("> ");
    assert_eq!(
        after_last(&term.rows(), "> /undo"),
        [
            "↩ turn 1 undone: 1 restored, 0 not restored",
            "  restored a.txt",
            ">"
        ]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
    term.send_line("/undo");
    term.expect("left to undo");
    term.expect("> ");
    assert_eq!(
        after_last(&term.rows(), "> /undo"),
        [
            "↩ nothing to undo: no turn of this session is left to undo",
            ">"
        ]
    );
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
    server.assert_valid();
}

/// The rows after the last one that is `row`.
fn after_last(rows: &[String], row: &str) -> Vec<String> {
    let at = rows
        .iter()
        .rposition(|r| r == row)
        .unwrap_or_else(|| panic!("{rows:#?}"));
    rows[at + 1..].to_vec()
}

#[mm_testkit::test]
fn undo_says_what_it_restored_at_120_columns() {
    undo_at(120);
}

#[mm_testkit::test]
fn undo_says_what_it_restored_at_60_columns() {
    undo_at(60);
}
