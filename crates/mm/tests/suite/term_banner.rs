//! The banner a newcomer reads, in the real `mm` binary in a pseudo-terminal at 120 and 60
//! columns (the size set before mm starts): a URL where nothing listens, or where no
//! OpenAI-compatible server answers, is a warning before the first prompt, and the banner, the
//! model line and the warnings wrap at word boundaries, never mid-word.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// pseudo-terminals are Unix's (docs/platforms.md)
#![cfg(unix)]

use mm_testkit as common;

use common::pty::{PtyServer as Server, mm_command, spawn_sized};
use expectrl::session::OsSession;
use expectrl::{Eof, Expect};

/// What mm printed from now until `needle` (which is consumed too).
fn until(mm: &mut OsSession, needle: &str) -> String {
    let found = mm.expect(needle).unwrap();
    String::from_utf8_lossy(found.before()).into_owned()
}

/// The rows mm printed until `last` (included): what comes after the last erase of each (a line
/// printed above the prompt erases the prompt first), bracketed paste's switch left out.
fn rows_until(mm: &mut OsSession, last: &str) -> Vec<String> {
    let text = until(mm, &format!("{last}\r\n")) + last;
    text.split("\r\n")
        .map(|row| match row.rfind("\x1b[J") {
            Some(i) => row[i + 3..].to_string(),
            None => row.to_string(),
        })
        .map(|row| row.trim_start_matches("\x1b[?2004h").to_string())
        .filter(|row| !row.is_empty())
        .collect()
}

fn leave(mut mm: OsSession) {
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

/// The facts line, with the fence and its network that are on by default; wrapped in a narrow
/// terminal.
fn facts(columns: u16) -> String {
    match columns < 70 {
        true => "sessions on · mode yolo · sandbox workspace-write · network\nallow-list (24 hosts) · 0 skills · 0 hooks".into(),
        false => "sessions on · mode yolo · sandbox workspace-write · network allow-list (24 hosts) · 0 skills · 0 hooks".into(),
    }
}

/// The port of a URL `http://127.0.0.1:<port>/v1`.
fn port(url: &str) -> &str {
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/v1")
}

fn banner_of_a_wrong_url(columns: u16, warning: &[&str]) {
    let (server, url) = Server::start(vec![]);
    let wrong = url.replace("/v1", "/nope");
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    // A project in the home: mm started in the home itself says commands may not write there.
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let mut command = mm_command(home.path(), &project, &wrong, &[]);
    command.env("MM_MODEL", "fake-model");
    let mut mm = spawn_sized(&command, columns);
    let last = *warning.last().unwrap();
    let mut expected = vec![
        "mm v0.1.0".to_string(),
        format!("model fake-model at {wrong}"),
        facts(columns),
        "/help for commands · Ctrl-D to leave".to_string(),
        "context window unknown".to_string(),
    ];
    let port = port(&url);
    expected.extend(warning.iter().map(|row| row.replace("PORT", port)));
    let rows = rows_until(&mut mm, last);
    let expected: Vec<String> = expected
        .iter()
        .flat_map(|l| l.split('\n').map(String::from))
        .collect();
    assert_eq!(rows, expected);
    for row in &rows {
        assert!(row.chars().count() <= usize::from(columns), "{row:?}");
    }
    leave(mm);
    assert_eq!(server.requests().len(), 0);
}

#[mm_testkit::test]
fn a_wrong_url_is_a_warning_in_the_banner_at_120_columns() {
    banner_of_a_wrong_url(
        120,
        &[
            "warning: no OpenAI-compatible server at http://127.0.0.1:PORT/nope (GET /models answered 404): check model.url or --url",
            "(mm doctor checks)",
        ],
    );
}

#[mm_testkit::test]
fn a_wrong_url_is_a_warning_in_the_banner_wrapped_at_60_columns() {
    banner_of_a_wrong_url(
        60,
        &[
            "warning: no OpenAI-compatible server at",
            "http://127.0.0.1:PORT/nope (GET /models answered 404):",
            "check model.url or --url (mm doctor checks)",
        ],
    );
}

fn banner_of_a_refused_url(columns: u16, warning: &[&str]) {
    let port = common::refused_port().to_string();
    let url = format!("http://127.0.0.1:{port}/v1");
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    // A project in the home: mm started in the home itself says commands may not write there.
    let project = home.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let command = mm_command(home.path(), &project, &url, &[]);
    let mut mm = spawn_sized(&command, columns);
    let last = *warning.last().unwrap();
    let rows = rows_until(&mut mm, last);
    let mut expected = vec![
        "mm v0.1.0".to_string(),
        format!("model server {url}"),
        facts(columns),
        "/help for commands · Ctrl-D to leave".to_string(),
    ];
    expected.extend(warning.iter().map(|row| row.replace("PORT", &port)));
    let expected: Vec<String> = expected
        .iter()
        .flat_map(|l| l.split('\n').map(String::from))
        .collect();
    assert_eq!(rows, expected);
    leave(mm);
}

#[mm_testkit::test]
fn a_refused_url_is_a_warning_in_the_banner_at_120_columns() {
    banner_of_a_refused_url(
        120,
        &[
            "warning: cannot reach the model server at http://127.0.0.1:PORT/v1: connection refused — is it running? (mm doctor",
            "checks)",
        ],
    );
}

#[mm_testkit::test]
fn a_refused_url_is_a_warning_in_the_banner_wrapped_at_60_columns() {
    banner_of_a_refused_url(
        60,
        &[
            "warning: cannot reach the model server at",
            "http://127.0.0.1:PORT/v1: connection refused — is it",
            "running? (mm doctor checks)",
        ],
    );
}

#[mm_testkit::test]
fn mm_p_wraps_its_banner_at_60_columns() {
    let (server, url) = Server::start(vec![common::pty::answer_with_usage("fine")]);
    let home = tempfile::tempdir_in(common::target_tmpdir()).unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".mm")).unwrap();
    std::fs::write(
        project.join(".mm/config.toml"),
        "[[hooks.sessionStart]]\ncommand = \"true\"\n",
    )
    .unwrap();
    let project = project.canonicalize().unwrap();
    let command = mm_command(home.path(), &project, &url, &["-p", "hi"]);
    let mut mm = spawn_sized(&command, 60);
    let shown = until(&mut mm, "fine");
    let warning = format!(
        "warning: project {} is not trusted: ignored its 1 hook(s); trust it with: mm trust {}",
        project.display(),
        project.display()
    );
    let rows: Vec<&str> = shown
        .split("\r\n")
        .skip_while(|r| !r.starts_with("warning: project"))
        .take_while(|r| !r.is_empty() && !r.starts_with("model "))
        .collect();
    assert!(rows.len() > 1, "{shown:?}");
    assert!(rows.iter().all(|r| r.chars().count() <= 60), "{rows:#?}");
    assert_eq!(rows.join(" "), warning, "{shown:?}");
    mm.expect(Eof).unwrap();
    server.assert_valid();
}
