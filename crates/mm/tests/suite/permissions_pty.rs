//! The permission question in the real terminal: `[a]lways` remembers the command's first
//! words, not every command; `[t]ell why` sends the user's reason as the tool result;
//! `/permissions` lists what was remembered. Exact lines at 120 and at 60 columns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, answer_with_usage, bash_reply, spawn_mm};
use expectrl::{Eof, Expect};

fn permissions_at(columns: u16) {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "pytest -x"),
        answer_with_usage("first"),
        bash_reply("c2", "pytest tests/"),
        answer_with_usage("second"),
        bash_reply("c3", "pytest; touch chained.txt"),
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
        "Allow bash: pytest -x?  [y]es  [a]lways allow \"pytest …\"  [n]o  [t]ell why  ne[v]er",
    )
    .unwrap();
    mm.send("a").unwrap();
    mm.expect(" always\r\n").unwrap();
    mm.expect("first").unwrap();
    mm.expect("> ").unwrap();

    // The rule lets the same command run unasked…
    mm.send_line("two").unwrap();
    mm.expect("$ bash: pytest tests/").unwrap();
    mm.expect("second").unwrap();
    mm.expect("> ").unwrap();

    // …but not one that chains another after it, for which no rule is offered.
    mm.send_line("three").unwrap();
    mm.expect("Allow bash: pytest; touch chained.txt?  [y]es  [n]o  [t]ell why  ne[v]er")
        .unwrap();
    mm.send("t").unwrap();
    mm.expect(" no, because: ").unwrap();
    mm.send("run the tests alone\r").unwrap();
    mm.expect("[command rejected by the user: run the tests alone]")
        .unwrap();
    mm.expect("third").unwrap();
    mm.expect("> ").unwrap();
    assert!(!home.path().join("chained.txt").exists());

    mm.send_line("/permissions").unwrap();
    mm.expect("\r\nalways allow bash \"pytest …\"\r\n").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        server.tool_results().last().unwrap(),
        "[command rejected by the user: run the tests alone]"
    );
    server.assert_valid();
}

#[mm_testkit::test]
fn always_remembers_the_first_words_and_tell_why_reaches_the_model_at_120_columns() {
    permissions_at(120);
}

#[mm_testkit::test]
fn always_remembers_the_first_words_and_tell_why_reaches_the_model_at_60_columns() {
    permissions_at(60);
}
