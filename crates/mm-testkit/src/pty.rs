//! The real `mm` in a pseudo-terminal (expectrl): its command in a sandboxed home, and the fake
//! model server on a runtime of its own (the pty side of these tests is synchronous).
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use expectrl::session::OsSession;
use expectrl::{Expect, Session};
use serde_json::{Value, json};

use super::platform::OnlyHome;
use super::{Chunk, FakeServer, Reply};

/// How long one expectation of a [`spawn_mm`] session may wait.
pub const EXPECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The fake server, kept on a runtime of its own for a synchronous test.
pub struct PtyServer {
    pub server: FakeServer,
    _runtime: tokio::runtime::Runtime,
}

impl PtyServer {
    /// Starts it with `script`; returns it and its base URL.
    pub fn start(script: Vec<Reply>) -> (PtyServer, String) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(FakeServer::start(script));
        let url = server.url();
        (
            PtyServer {
                server,
                _runtime: runtime,
            },
            url,
        )
    }

    pub fn requests(&self) -> Vec<Value> {
        self.server.requests()
    }

    /// The tool results in the last request the server received.
    pub fn tool_results(&self) -> Vec<String> {
        let requests = self.requests();
        let last = requests.last().cloned().unwrap_or_default();
        last["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The text of the last user message of the last request.
    pub fn last_user_message(&self) -> String {
        let last = self.requests().pop().unwrap_or_default();
        super::agents::user_texts(&last).pop().unwrap_or_default()
    }

    /// Every request kept the invariants real servers enforce.
    pub fn assert_valid(&self) {
        assert_eq!(self.server.violations(), Vec::<String>::new());
    }
}

/// `mm --url URL EXTRA…` in `cwd` with `home` as its home (state and configuration under it), a
/// plain `xterm` without colour and nothing else of the test's environment but `PATH` (and what
/// Windows needs: [`OnlyHome`]).
pub fn mm_command(home: &Path, cwd: &Path, url: &str, extra: &[&str]) -> Command {
    mm_command_as(&super::as_user::Who::Root, home, cwd, url, extra)
}

/// [`mm_command`] run by `who` (the home and `cwd` must be theirs:
/// [`Who::own`](super::as_user::Who::own)); the user's link to the binary goes in the home's
/// parent, which they can reach.
pub fn mm_command_as(
    who: &super::as_user::Who,
    home: &Path,
    cwd: &Path,
    url: &str,
    extra: &[&str],
) -> Command {
    let (program, first) = who.program(&super::mm_binary(), home.parent().unwrap_or(home));
    let mut cmd = Command::new(program);
    cmd.args(first)
        .args(["--url", url])
        .args(extra)
        .current_dir(cwd)
        .only_home(home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    cmd
}

/// [`mm_command`] in a pseudo-terminal, its expectations failing after [`EXPECT_TIMEOUT`].
pub fn spawn_mm_in(home: &Path, cwd: &Path, url: &str, extra: &[&str]) -> OsSession {
    let mut session = super::platform::spawn_pty(mm_command(home, cwd, url, extra));
    session.set_expect_timeout(Some(EXPECT_TIMEOUT));
    session
}

/// [`mm_command`] in a pseudo-terminal `columns` wide from its first byte. The size is set once
/// the pty exists (expectrl gives it 80 columns after the child started), and on Unix a shell
/// waits for it before starting mm (a resize after the spawn may come after the banner).
pub fn spawn_sized(command: &Command, columns: u16) -> OsSession {
    spawn_window(command, columns, 24)
}

/// [`spawn_sized`] with `rows` rows.
pub fn spawn_window(command: &Command, columns: u16, rows: u16) -> OsSession {
    let sized = super::platform::once_sized(command, columns, rows);
    let mut session = super::platform::spawn_pty(sized);
    super::platform::resize(&mut session, columns, rows);
    session.set_expect_timeout(Some(EXPECT_TIMEOUT));
    session
}

/// The working folder [`spawn_mm`] and [`Term::spawn`] start mm in: `project` in the home,
/// made if missing. Not the home itself, which the fence (on by default) leaves unwritable.
pub fn project(home: &Path) -> std::path::PathBuf {
    let dir = home.join("project");
    std::fs::create_dir_all(&dir).expect("make the project folder");
    dir
}

/// [`spawn_mm_in`] with the home's [`project`] as the working folder.
pub fn spawn_mm(home: &Path, url: &str, extra: &[&str]) -> OsSession {
    spawn_mm_in(home, &project(home), url, extra)
}

/// A text answer with usage: 1 200 tokens in, 34 out.
pub fn answer_with_usage(text: &str) -> Reply {
    Reply::chunks(
        vec![
            Chunk::text(text),
            Chunk::finish("stop"),
            Chunk::Usage {
                prompt: 1200,
                completion: 34,
            },
            Chunk::Done,
        ],
        Duration::ZERO,
    )
}

/// One call of `tool` with these arguments, without usage.
pub fn call_reply(id: &str, tool: &str, args: Value) -> Reply {
    Reply::chunks(
        vec![
            Chunk::ToolCall {
                index: 0,
                id: Some(id.to_string()),
                name: Some(tool.to_string()),
                arguments: args.to_string(),
            },
            Chunk::finish("tool_calls"),
            Chunk::Done,
        ],
        Duration::ZERO,
    )
}

/// One `bash` call with usage.
pub fn bash_reply(id: &str, command: &str) -> Reply {
    Reply::chunks(
        vec![
            Chunk::ToolCall {
                index: 0,
                id: Some(id.to_string()),
                name: Some("bash".to_string()),
                arguments: json!({ "command": command }).to_string(),
            },
            Chunk::finish("tool_calls"),
            Chunk::Usage {
                prompt: 1000,
                completion: 20,
            },
            Chunk::Done,
        ],
        Duration::ZERO,
    )
}

/// Writes the user config of `home` (as [`mm_command`] sets it) with one agent, `name`, run as
/// `python3 crates/mm-testkit/agents/<script>`.
pub fn python_agent_config(home: &Path, name: &str, script: &str) {
    let agent = super::agents::agents_dir().join(script);
    let config = home.join("config/mm/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!(
            "[agents.{name}]\ncommand = \"python3\"\nargs = [{:?}]\n",
            agent.display().to_string()
        ),
    )
    .unwrap();
}

/// The real `mm` in a pseudo-terminal of a given size, and what that terminal shows: every byte
/// an expectation reads goes through a screen emulator (vt100), so a test asserts the rows a
/// user sees, after every cursor move and erase mm made.
pub struct Term {
    pub mm: OsSession,
    screen: vt100::Parser,
}

impl Term {
    /// [`spawn_mm`] in a window `cols` wide and `rows` high.
    pub fn spawn(home: &Path, url: &str, extra: &[&str], cols: u16, rows: u16) -> Term {
        Term::spawn_in(home, &project(home), url, extra, cols, rows)
    }

    /// [`Term::spawn`] with `cwd` as the working folder.
    pub fn spawn_in(
        home: &Path,
        cwd: &Path,
        url: &str,
        extra: &[&str],
        cols: u16,
        rows: u16,
    ) -> Term {
        let mm = spawn_window(&mm_command(home, cwd, url, extra), cols, rows);
        Term {
            mm,
            screen: vt100::Parser::new(rows, cols, 0),
        }
    }

    /// Reads until `needle` (consumed too) and shows what came on the screen; returns it.
    pub fn expect(&mut self, needle: &str) -> String {
        let found = self.mm.expect(needle).unwrap();
        let mut bytes = found.before().to_vec();
        bytes.extend_from_slice(found.get(0).unwrap_or_default());
        self.screen.process(&bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Reads until this regular expression matches, as [`Term::expect`].
    pub fn expect_regex(&mut self, regex: &str) -> String {
        let found = self.mm.expect(expectrl::Regex(regex)).unwrap();
        let mut bytes = found.before().to_vec();
        bytes.extend_from_slice(found.get(0).unwrap_or_default());
        self.screen.process(&bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub fn send(&mut self, text: &str) {
        self.mm.send(text).unwrap();
    }

    pub fn send_line(&mut self, text: &str) {
        self.mm.send_line(text).unwrap();
    }

    /// The rows on the screen, their trailing blanks cut, the empty rows at the bottom left out.
    pub fn rows(&self) -> Vec<String> {
        let screen = self.screen.screen();
        let (_, cols) = screen.size();
        let mut rows: Vec<String> = screen
            .rows(0, cols)
            .map(|r| r.trim_end().to_string())
            .collect();
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }

    /// The cursor's row and column.
    pub fn cursor(&self) -> (u16, u16) {
        self.screen.screen().cursor_position()
    }

    /// The characters drawn in a colour (foreground or background), with their row and column.
    pub fn coloured(&self) -> Vec<(u16, u16, String)> {
        let screen = self.screen.screen();
        let (rows, cols) = screen.size();
        let mut found = Vec::new();
        for row in 0..rows {
            for col in 0..cols {
                if let Some(cell) = screen.cell(row, col)
                    && (cell.fgcolor() != vt100::Color::Default
                        || cell.bgcolor() != vt100::Color::Default)
                {
                    found.push((row, col, cell.contents().to_string()));
                }
            }
        }
        found
    }
}
