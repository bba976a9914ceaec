//! From nothing to a working agent: the question that offers to trust a project whose own
//! commands were skipped (answered each way, in a pseudo-terminal; the user's file kept byte for
//! byte), `mm trust`, what `mm -p` and `mm -acp` say instead of asking, and how `mm -p` reports
//! its turn (the recap line, `-q`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use mm_testkit as common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::mm_run::Sandbox;
use common::platform::native;
use common::pty::answer_with_usage;
use common::{FakeServer, Reply};
use expectrl::session::OsSession;
use expectrl::{Eof, Expect};
use pretty_assertions::assert_eq;

/// The user's file, with comments and keys the answers must not touch.
const USER_FILE: &str = "# my settings
yolo = true   # keep going

[model]
# the model I like
temperature = 0.2
";

/// `text` is [`USER_FILE`] with the one line `key = […]` mm added after its first two, listing
/// `projects`; every other byte as the user wrote it. The value is read as TOML: toml_edit writes
/// a Windows path as a literal string (`'C:\…'`), a Unix one as a basic string.
fn assert_added(text: &str, key: &str, projects: &[&Path]) {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    assert!(lines.len() > 2, "{text}");
    let added = lines.remove(2);
    assert_eq!(lines.concat(), USER_FILE, "{text}");
    assert!(added.starts_with(&format!("{key} = [")), "{text}");
    let table: toml::Table = toml::from_str(added).unwrap();
    let listed: Vec<PathBuf> = table[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| PathBuf::from(v.as_str().unwrap()))
        .collect();
    assert_eq!(listed, projects, "{text}");
}

/// A project whose one command proves, by leaving a file, that it ran.
const PROJECT_FILE: &str = "[[hooks.sessionStart]]
command = \"echo started > hook-ran.txt\"
";

/// A home with the user's file and a project folder in it.
struct World {
    home: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let world = World {
            home: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(world.user_file().parent().unwrap()).unwrap();
        std::fs::write(world.user_file(), USER_FILE).unwrap();
        std::fs::create_dir_all(world.home.path().join("proj/.mm")).unwrap();
        std::fs::write(world.home.path().join("proj/.mm/config.toml"), PROJECT_FILE).unwrap();
        world
    }

    fn user_file(&self) -> PathBuf {
        self.home.path().join("config/mm/config.toml")
    }

    fn user_text(&self) -> String {
        std::fs::read_to_string(self.user_file()).unwrap()
    }

    fn project(&self) -> PathBuf {
        mm_core::paths::canonical(&self.home.path().join("proj")).unwrap()
    }

    /// `mm` in a pseudo-terminal, in the project; the model server is not there (nothing here
    /// needs it). A window wide enough for every warning on one line.
    fn spawn(&self) -> OsSession {
        self.spawn_at(250)
    }

    /// [`World::spawn`] in a window `columns` wide.
    fn spawn_at(&self, columns: u16) -> OsSession {
        let url = format!("http://127.0.0.1:{}/v1", common::refused_port());
        let command = common::pty::mm_command(self.home.path(), &self.project(), &url, &[]);
        common::pty::spawn_sized(&command, columns)
    }
}

/// What mm printed from now until `needle` (which is consumed too).
fn until(mm: &mut OsSession, needle: &str) -> String {
    let found = mm.expect(needle).unwrap();
    String::from_utf8_lossy(found.before()).into_owned()
}

fn ask(mm: &mut OsSession, project: &Path) {
    mm.expect(
        format!(
            "{} has commands of its own (.mm/config.toml), which mm runs only in projects you trust:\r\n",
            project.display()
        )
        .as_str(),
    )
    .unwrap();
    mm.expect("  1 │ hook sessionStart: echo started > hook-ran.txt\r\n")
        .unwrap();
    mm.expect(
        format!(
            "Trust {}?  [t]rust  [n]ot now  ne[v]er for this project",
            project.display()
        )
        .as_str(),
    )
    .unwrap();
}

fn leave(mut mm: OsSession) {
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

/// Waits for a file a background command writes (a bounded poll: nothing announces it).
fn appears(path: &Path) -> bool {
    let deadline = Instant::now() + common::HANG_GUARD;
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[mm_testkit::test]
fn trust_at_the_prompt_runs_the_project_s_commands_in_this_session() {
    let w = World::new();
    let project = w.project();
    let mut mm = w.spawn();
    ask(&mut mm, &project);
    mm.send("t").unwrap();
    mm.expect(" trust\r\n").unwrap();
    mm.expect(
        format!(
            "trusted {}: its commands run from now on (trustedProjects in {})\r\n",
            project.display(),
            native("~/config/mm/config.toml")
        )
        .as_str(),
    )
    .unwrap();
    // The banner comes after the answer, with the project's hook in force.
    let banner = until(&mut mm, "/help for commands");
    assert!(banner.contains("1 hook (sessionStart 1)"), "{banner}");
    assert!(!banner.contains("not trusted"), "{banner}");
    assert!(
        appears(&project.join("hook-ran.txt")),
        "the sessionStart hook did not run"
    );
    leave(mm);
    assert_added(&w.user_text(), "trustedProjects", &[&project]);
}

#[mm_testkit::test]
fn not_now_changes_nothing_and_asks_again_next_time() {
    let w = World::new();
    let project = w.project();
    let warning = format!(
        "warning: project {} is not trusted: ignored its 1 hook(s); trust it with: mm trust {}",
        project.display(),
        project.display()
    );
    for columns in [250, 60] {
        let mut mm = w.spawn_at(columns);
        ask(&mut mm, &project);
        mm.send("n").unwrap();
        mm.expect(" not now\r\n").unwrap();
        let banner = until(&mut mm, "/help for commands");
        assert!(banner.contains("0 hooks"), "{banner}");
        if columns == 250 {
            assert!(banner.contains(&format!("{warning}\r\n")), "{banner}");
        } else {
            // Wrapped at word boundaries: rows that fit, which put together are the line.
            let rows: Vec<&str> = banner
                .split("\r\n")
                .skip_while(|r| !r.starts_with("warning: project"))
                .take_while(|r| !r.is_empty() && !r.starts_with("warning: cannot reach"))
                .collect();
            assert!(rows.iter().all(|r| r.chars().count() <= 60), "{rows:#?}");
            assert_eq!(rows.join(" "), warning, "{banner}");
        }
        leave(mm);
        assert_eq!(w.user_text(), USER_FILE);
    }
    assert!(!project.join("hook-ran.txt").exists());
}

#[mm_testkit::test]
fn never_is_remembered_and_not_asked_again() {
    let w = World::new();
    let project = w.project();
    let mut mm = w.spawn();
    ask(&mut mm, &project);
    mm.send("v").unwrap();
    mm.expect(" never\r\n").unwrap();
    mm.expect(
        format!(
            "mm will not ask again for {} (distrustedProjects in {}; mm trust {} trusts it)\r\n",
            project.display(),
            native("~/config/mm/config.toml"),
            project.display()
        )
        .as_str(),
    )
    .unwrap();
    leave(mm);
    assert_added(&w.user_text(), "distrustedProjects", &[&project]);

    // The next start goes straight to the prompt, the warning saying why.
    let mut mm = w.spawn();
    let start = until(&mut mm, "/help for commands");
    assert!(!start.contains("Trust "), "{start}");
    assert!(
        start.contains(&format!(
            "warning: project {} is not trusted (distrustedProjects in {}): ignored its 1 hook(s); trust it with: mm trust {}",
            project.display(),
            native("~/config/mm/config.toml"),
            project.display()
        )),
        "{start}"
    );
    leave(mm);
    assert!(!project.join("hook-ran.txt").exists());
}

/// A sandbox holding the project file, and a user file with comments.
fn untrusted_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(".mm/config.toml", PROJECT_FILE);
    let user = sb.user_config();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, USER_FILE).unwrap();
    sb
}

fn warning(sb: &Sandbox) -> String {
    format!(
        "warning: project {} is not trusted: ignored its 1 hook(s); trust it with: mm trust {}",
        sb.dir().display(),
        sb.dir().display()
    )
}

#[mm_testkit::test]
async fn one_shot_and_acp_say_what_was_skipped_and_never_ask() {
    let server = FakeServer::start(vec![Reply::text("hello")]).await;
    let sb = untrusted_sandbox();
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "hello\n");
    assert!(
        run.stderr.lines().any(|l| l == warning(&sb)),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Trust "), "{}", run.stderr);

    // ACP: the log (stderr) says it; stdin's end ends the agent.
    let run = sb.run(Some(&server.url()), &["-acp"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.lines().any(|l| l == warning(&sb)),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.user_config()).unwrap(),
        USER_FILE
    );
    assert!(!sb.path("hook-ran.txt").exists());
}

#[mm_testkit::test]
async fn mm_trust_adds_the_project_keeping_the_user_s_file() {
    let server = FakeServer::start(vec![Reply::text("hello")]).await;
    let sb = untrusted_sandbox();
    let dir = sb.dir();
    let run = sb.run(None, &["trust"]).await;
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            Some(0),
            format!(
                "trusted {}: its own hooks, MCP servers, language servers and agents run from now on (trustedProjects in {})\n",
                dir.display(),
                native("~/.config/mm/config.toml")
            )
            .as_str(),
            ""
        )
    );
    assert_added(
        &std::fs::read_to_string(sb.user_config()).unwrap(),
        "trustedProjects",
        &[&dir],
    );
    let run = sb.run(None, &["trust", "."]).await;
    assert_eq!(
        run.stdout,
        format!(
            "{} is already trusted (trustedProjects in {})\n",
            dir.display(),
            native("~/.config/mm/config.toml")
        )
    );

    // Trusted: no warning, and the hook runs (through bash).
    common::platform::need_bash();
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("not trusted"), "{}", run.stderr);
    assert!(
        run.stderr.contains("1 hook (sessionStart 1)"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("hook-ran.txt")).unwrap(),
        "started\n"
    );

    // Another folder, by a relative path; a missing one is an error.
    std::fs::create_dir_all(sb.path("sub")).unwrap();
    let run = sb.run(None, &["trust", "sub"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_added(
        &std::fs::read_to_string(sb.user_config()).unwrap(),
        "trustedProjects",
        &[&dir, &dir.join("sub")],
    );
    let run = sb.run(None, &["trust", "nope"]).await;
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        format!(
            "mm: trust: cannot find {}: {}\n",
            dir.join("nope").display(),
            common::platform::open_error(&dir.join("nope"))
        )
    );
}

#[mm_testkit::test]
async fn one_shot_ends_with_the_recap_line_and_quiet_keeps_stderr_for_errors() {
    let server =
        FakeServer::start(vec![answer_with_usage("hello"), answer_with_usage("again")]).await;
    let sb = Sandbox::new();
    let run = sb.run(Some(&server.url()), &["-p", "hi"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "hello\n");
    let last = run.stderr.lines().last().unwrap_or_default();
    let last = regex::Regex::new(r"\d+\.\ds$")
        .unwrap()
        .replace(last, "N.Ns");
    assert_eq!(
        last, "1.2k in / 34 out · ctx 4% of 32k · N.Ns",
        "{}",
        run.stderr
    );

    let run = sb.run(Some(&server.url()), &["-q", "-p", "hi"]).await;
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (Some(0), "again\n", "")
    );

    // A failed turn ends with its error line, no recap; with -q it is the one line left.
    let url = format!("http://127.0.0.1:{}/v1", common::refused_port());
    let run = sb.run(Some(&url), &["-p", "hi"]).await;
    assert_eq!(
        run.stderr.lines().last(),
        Some(format!("[error: cannot reach the model server at {url}: connection refused — is it running? (mm doctor checks)]").as_str())
    );
    let run = sb.run(Some(&url), &["--quiet", "-p", "hi"]).await;
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            Some(1),
            "",
            format!("[error: cannot reach the model server at {url}: connection refused — is it running? (mm doctor checks)]\n").as_str()
        )
    );
}
