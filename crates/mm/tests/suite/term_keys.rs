//! No key is lost: the real `mm` in a pseudo-terminal, a key sent the instant an answer has been
//! printed (when the turn may still be ending, or the next prompt not yet drawn), hundreds of
//! times — a typed-ahead prompt, Ctrl-C, Ctrl-D — and keys typed before a permission question
//! never answer it. The terminal is given back as it was when mm leaves on a signal.
//!
//! One mm process answers many short turns from the fake server (Ctrl-D leaves, so its runs are
//! separate processes, several at once). Waiting for output polls the pty's descriptor; a lost
//! key shows as a wait that times out ([`WAIT`]).
#![allow(clippy::unwrap_used, clippy::expect_used)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use common::pty::{PtyServer as Server, mm_command};
use common::{Chunk, Reply};
use expectrl::process::unix::{Signal, WaitStatus};
use expectrl::session::OsSession;
use expectrl::{Eof, Expect, Needle, Regex, Session};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::termios::{LocalFlags, tcgetattr};
use serde_json::{Value, json};

/// Repetitions of each "answer printed → key at once" case.
const ROUNDS: usize = 500;
/// How long one expected output may take: only a lost key (or a hang) comes near it.
const WAIT: Duration = Duration::from_secs(10);

/// `mm` in a pseudo-terminal.
struct Term {
    session: OsSession,
}

impl Term {
    fn spawn(home: &Path, url: &str, extra: &[&str]) -> Term {
        // Its own waits (`WAIT`, polling the descriptor), not expectrl's timeout.
        let cmd = mm_command(home, home, url, extra);
        Term {
            session: Session::spawn(cmd).expect("spawn mm in a pty"),
        }
    }

    /// Waits for `needle` in the output (what comes before it is consumed) and returns what
    /// matched; panics after [`WAIT`].
    fn wait<N: Needle>(&mut self, needle: N, what: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.session.check(&needle) {
                Ok(found) if !found.is_empty() => {
                    let matched = found.matches().next().unwrap_or_default();
                    return String::from_utf8_lossy(matched).into_owned();
                }
                Ok(_) => {}
                Err(expectrl::Error::Eof) => panic!("mm ended while waiting for {what}"),
                Err(e) => panic!("reading the pty while waiting for {what}: {e}"),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {what} within {WAIT:?}");
            // SAFETY: the session's descriptor is open for as long as `self`.
            let fd = unsafe { BorrowedFd::borrow_raw(self.session.as_raw_fd()) };
            let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
            let ms = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            let _ = poll(&mut fds, ms);
        }
    }

    /// Waits for mm to leave; its exit code.
    fn wait_exit(&mut self, what: &str) -> i32 {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.session.check(Eof) {
                Ok(found) if !found.is_empty() => break,
                Ok(_) => {}
                Err(expectrl::Error::Eof) => break,
                Err(_) => break,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "mm did not leave after {what} within {WAIT:?}"
            );
            // SAFETY: as in `wait`.
            let fd = unsafe { BorrowedFd::borrow_raw(self.session.as_raw_fd()) };
            let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
            let _ = poll(
                &mut fds,
                PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX),
            );
        }
        match self.session.get_process().wait().unwrap() {
            WaitStatus::Exited(_, code) => code,
            other => panic!("mm ended with {other:?}"),
        }
    }

    fn send(&mut self, bytes: &str) {
        use std::io::Write;
        self.session.write_all(bytes.as_bytes()).unwrap();
        self.session.flush().unwrap();
    }

    /// The pty's settings (the master shares them with mm's side).
    fn local_flags(&self) -> LocalFlags {
        // SAFETY: as in `wait`.
        let fd = unsafe { BorrowedFd::borrow_raw(self.session.as_raw_fd()) };
        tcgetattr(fd).unwrap().local_flags
    }
}

/// `answer-0`, `answer-1`, …: most at once, every fifth with its end 20 ms after its text, so
/// that a key sent on seeing it lands while the turn still runs.
fn answers(n: usize) -> Vec<Reply> {
    (0..n)
        .map(|i| {
            let text = format!("answer-{i}");
            if i % 5 == 4 {
                // The space ends the word: it shows before the turn ends.
                let chunks = vec![Chunk::text(text + " "), Chunk::finish("stop"), Chunk::Done];
                Reply::chunks(chunks, Duration::from_millis(10))
            } else {
                Reply::text(&text)
            }
        })
        .collect()
}

/// The prompt each request answers (its last user message), in order.
fn last_prompts(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .filter_map(|r| {
            r["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

#[mm_testkit::test]
fn a_prompt_typed_the_instant_an_answer_is_printed_is_never_lost() {
    let (server, url) = Server::start(answers(ROUNDS));
    let home = tempfile::tempdir().unwrap();
    let mut mm = Term::spawn(home.path(), &url, &["--yolo"]);
    // The first prompt is typed before mm has drawn its own.
    mm.send("q0\r");
    for i in 0..ROUNDS {
        mm.wait(format!("answer-{i}"), &format!("answer-{i}"));
        if i + 1 < ROUNDS {
            // Every 50 turns `/new` goes ahead too (and keeps the requests small).
            let new = if (i + 1) % 50 == 0 { "/new\r" } else { "" };
            mm.send(&format!("{new}q{}\r", i + 1));
        }
    }
    mm.send("\x04");
    assert_eq!(mm.wait_exit("Ctrl-D"), 0);
    let expected: Vec<String> = (0..ROUNDS).map(|i| format!("q{i}")).collect();
    assert_eq!(last_prompts(&server.requests()), expected);
    server.assert_valid();
}

#[mm_testkit::test]
fn ctrl_c_the_instant_an_answer_is_printed_is_never_lost() {
    // The rounds, then one answer that stalls after its first word: a Ctrl-C there lands in the
    // turn for certain, and must cancel it.
    let mut replies = answers(ROUNDS);
    let held = vec![
        Chunk::text("held-answer "),
        Chunk::finish("stop"),
        Chunk::Done,
    ];
    replies.push(Reply::chunks(held, Duration::from_millis(10)).stall_after(1));
    let (server, url) = Server::start(replies);
    let home = tempfile::tempdir().unwrap();
    let mut mm = Term::spawn(home.path(), &url, &["--yolo"]);
    let mut cancelled = 0;
    for i in 0..ROUNDS {
        let new = if i > 0 && i % 50 == 0 { "/new\r" } else { "" };
        mm.send(&format!("{new}q{i}\r"));
        mm.wait(format!("answer-{i}"), &format!("answer-{i}"));
        mm.send("\x03");
        // The Ctrl-C cancels the turn if it is still running, else it is a Ctrl-C at the
        // prompt: one or the other, every time.
        let reaction = mm.wait(
            Regex(r"cancelled|\(Ctrl-C again or Ctrl-D to leave\)"),
            &format!("a reaction to Ctrl-C after answer-{i}"),
        );
        if reaction == "cancelled" {
            cancelled += 1;
        }
    }
    eprintln!("{cancelled} of {ROUNDS} Ctrl-C cancelled the turn; the others came at the prompt");
    // The branch the race may not have taken: a Ctrl-C while the answer is still streaming.
    mm.send("held\r");
    mm.wait("held-answer", "the held answer");
    mm.send("\x03");
    let reaction = mm.wait(
        Regex(r"cancelled|\(Ctrl-C again or Ctrl-D to leave\)"),
        "a reaction to Ctrl-C during the held answer",
    );
    assert_eq!(reaction, "cancelled", "a Ctrl-C during a turn cancels it");
    // And the prompt is back: one more Ctrl-C there is the prompt's.
    mm.send("\x03");
    mm.wait(
        "(Ctrl-C again or Ctrl-D to leave)",
        "the prompt's Ctrl-C line",
    );
    mm.send("\x04");
    assert_eq!(mm.wait_exit("Ctrl-D"), 0);
    let mut expected: Vec<String> = (0..ROUNDS).map(|i| format!("q{i}")).collect();
    expected.push("held".into());
    assert_eq!(last_prompts(&server.requests()), expected);
    server.assert_valid();
}

#[mm_testkit::test]
fn ctrl_d_the_instant_an_answer_is_printed_always_leaves() {
    let (server, url) = Server::start(vec![Reply::text("answer"); ROUNDS]);
    // Ctrl-D leaves, so each round is a process of its own: four at a time.
    let workers = 4;
    std::thread::scope(|scope| {
        for w in 0..workers {
            let url = url.clone();
            scope.spawn(move || {
                let home = tempfile::tempdir().unwrap();
                for round in (w..ROUNDS).step_by(workers) {
                    let mut mm = Term::spawn(home.path(), &url, &["--yolo"]);
                    mm.send("q\r");
                    mm.wait("answer", &format!("the answer of round {round}"));
                    mm.send("\x04");
                    assert_eq!(mm.wait_exit(&format!("Ctrl-D in round {round}")), 0);
                }
            });
        }
    });
    assert_eq!(server.requests().len(), ROUNDS);
    server.assert_valid();
}

#[mm_testkit::test]
fn keys_typed_before_a_permission_question_never_answer_it() {
    // The text first, then (a while later) the call: the `y` sent on seeing the text is typed
    // before the question exists.
    let call = Reply::chunks(
        vec![
            Chunk::text("thinking "),
            Chunk::ToolCall {
                index: 0,
                id: Some("c1".into()),
                name: Some("bash".into()),
                arguments: json!({"command": "echo asked"}).to_string(),
            },
            Chunk::finish("tool_calls"),
            Chunk::Done,
        ],
        Duration::from_millis(300),
    );
    let (server, url) = Server::start(vec![call, Reply::text("done")]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = Term::spawn(home.path(), &url, &["--no-yolo"]);
    mm.send("go\r");
    mm.wait("thinking", "the text before the call");
    mm.send("y");
    mm.wait(
        "Allow bash: echo asked?  [y]es  [a]lways allow read-only \"echo …\"  [n]o  [t]ell why  ne[v]er this command",
        "the question",
    );
    // The question waits for a key typed after it showed.
    mm.send("n");
    mm.wait(" no", "the answer no");
    mm.wait("[command rejected by the user]", "the rejection");
    mm.wait("done", "the answer");
    // The `y` typed ahead is on the next prompt's line.
    mm.wait("> y", "the typed-ahead key at the prompt");
    mm.send("\x15\x04");
    assert_eq!(mm.wait_exit("Ctrl-D"), 0);
    server.assert_valid();
}

#[mm_testkit::test]
fn the_terminal_is_given_back_on_sigterm_and_sighup() {
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let (_server, url) = Server::start(vec![]);
        let home = tempfile::tempdir().unwrap();
        let mut mm = Term::spawn(home.path(), &url, &["--yolo"]);
        let cooked = LocalFlags::ICANON | LocalFlags::ISIG | LocalFlags::IEXTEN;
        mm.wait("> ", "the prompt");
        // Raw mode for the whole session.
        let raw = mm.local_flags();
        assert!(
            !raw.intersects(LocalFlags::ICANON | LocalFlags::ISIG),
            "{raw:?}"
        );
        mm.session.get_process_mut().signal(signal).unwrap();
        assert_eq!(mm.wait_exit(&format!("{signal}")), code);
        let after = mm.local_flags();
        assert!(after.contains(cooked), "after {signal}: {after:?}");
    }
}

#[mm_testkit::test]
fn enter_during_a_turn_sends_the_line_into_it_and_tab_keeps_it_for_the_next_prompt() {
    let (server, url) = Server::start(vec![
        common::pty::bash_reply("c1", "while [ ! -e go ]; do sleep 0.05; done; echo waited"),
        Reply::text("stopping"),
        Reply::text("later done"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = Term::spawn(home.path(), &url, &["--yolo"]);
    mm.send("count\r");
    mm.wait("bash: while", "the call running");
    mm.send("stop now\r");
    mm.wait(
        "stop now ↳ sent to the running turn",
        "the line echoed as sent",
    );
    mm.send("and later\t");
    std::fs::write(home.path().join("go"), "").unwrap();
    mm.wait("stopping", "the answer to the sent line");
    // The line kept with Tab is the next prompt, sent when it comes.
    mm.wait("later done", "the next turn");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "two turns");
    let last_user = |r: &Value| {
        let messages = r["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "user", "{r}");
        last["content"].as_str().unwrap().to_string()
    };
    assert_eq!(last_user(&requests[1]), "stop now");
    assert_eq!(last_user(&requests[2]), "and later");
    mm.send("\x15\x04");
    assert_eq!(mm.wait_exit("Ctrl-D"), 0);
    server.assert_valid();
}
