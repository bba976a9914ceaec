//! What the real terminal shows without colour (`NO_COLOR`, which the pty layer sets): the
//! Markdown's layout, a failed call's mark, a cancelled call said once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, Term, answer_with_usage, call_reply};
use expectrl::{Eof, Expect};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The rows after the last one that is `row`, up to the prompt's.
fn after_last(rows: &[String], row: &str) -> Vec<String> {
    let at = rows
        .iter()
        .rposition(|r| r == row)
        .unwrap_or_else(|| panic!("{rows:#?}"));
    rows[at + 1..]
        .iter()
        .take_while(|r| !r.starts_with('>'))
        .cloned()
        .collect()
}

/// NO_COLOR means no colour, not no layout: headings without their `#`, a table drawn with
/// its columns aligned, fenced code without its fences — and not one coloured character.
#[mm_testkit::test]
fn no_color_keeps_the_markdown_layout() {
    let answer = "# Results\n\n| tool | speed |\n|:-----|------:|\n| rg | 10 |\n| grep | 1 |\n\n```sh\nrg -n TODO\n```\nDone.";
    let (server, url) = Server::start(vec![answer_with_usage(answer)]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], 100, 40);
    term.expect("> ");
    term.send_line("compare");
    term.expect("Done.");
    term.expect("> ");
    let shown = after_last(&term.rows(), "> compare");
    let shown: Vec<&str> = shown
        .iter()
        .map(String::as_str)
        // The model line comes whenever detection completes.
        .filter(|r| !r.is_empty() && !r.starts_with("model fake-model"))
        .collect();
    assert_eq!(
        shown[..7],
        [
            "Results",
            "┌──────┬───────┐",
            "│ tool │ speed │",
            "├──────┼───────┤",
            "│ rg   │    10 │",
            "│ grep │     1 │",
            "└──────┴───────┘",
        ],
        "{shown:#?}"
    );
    assert_eq!(shown[7..9], ["rg -n TODO", "Done."], "{shown:#?}");
    assert_eq!(term.coloured(), Vec::new(), "no colour with NO_COLOR");
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
    server.assert_valid();
}

/// A failed call shows as failed: its first row is the mark and the reason, not folded away
/// under `… N earlier lines`.
#[mm_testkit::test]
fn a_failed_edit_shows_its_mark_and_reason_first() {
    let (server, url) = Server::start(vec![
        call_reply(
            "c1",
            "edit_file",
            json!({"path": "a.txt", "old_text": "not there", "new_text": "x"}),
        ),
        answer_with_usage("It did not apply."),
    ]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let text: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    std::fs::write(home.path().join("a.txt"), text).unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], 120, 40);
    term.expect("> ");
    term.send_line("edit it");
    term.expect("It did not apply.");
    term.expect("> ");
    let shown = after_last(&term.rows(), "> edit it");
    let call = shown
        .iter()
        .position(|r| r.starts_with("✏️") || r.contains("edit_file") || r.contains("a.txt"))
        .unwrap_or_else(|| panic!("{shown:#?}"));
    let reason = &shown[call + 1];
    assert!(
        reason.starts_with("  ✗ ") && reason.contains("a.txt"),
        "the mark and the reason first: {shown:#?}"
    );
    assert!(!reason.contains("earlier line"), "{shown:#?}");
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
    server.assert_valid();
}

/// A command cancelled with Ctrl-C says so once: its `[cancelled]`, not then the turn's
/// `cancelled` as well.
#[mm_testkit::test]
fn a_cancelled_command_is_said_cancelled_once() {
    let (server, url) = Server::start(vec![
        call_reply("c1", "bash", json!({"command": "sleep 30"})),
        answer_with_usage("after the cancel"),
    ]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let mut term = Term::spawn(home.path(), &url, &["--yolo"], 100, 40);
    term.expect("> ");
    term.send_line("wait");
    term.expect("bash: sleep 30");
    term.send("\x03");
    term.expect("cancelled");
    term.expect("> ");
    let shown = after_last(&term.rows(), "> wait");
    let said = shown.iter().filter(|r| r.contains("cancelled")).count();
    assert_eq!(said, 1, "{shown:#?}");
    term.send("\x04");
    term.mm.expect(Eof).unwrap();
    server.assert_valid();
}
