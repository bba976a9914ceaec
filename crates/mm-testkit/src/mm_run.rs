//! Running the real `mm` binary the way a user does, in a sandbox: a temporary working folder
//! and a temporary home (`HOME`, `USERPROFILE` which Windows reads, `XDG_CONFIG_HOME`), set on
//! the child only. The `MM_*`
//! variables of the test process are removed from the child so that a developer's own settings
//! cannot change what a test sees.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tempfile::TempDir;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// How long one run of `mm` may take before the test fails instead of hanging.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// A working folder and a home folder for one test.
pub struct Sandbox {
    pub home: TempDir,
    pub cwd: TempDir,
    /// How long one run may take (default [`RUN_LIMIT`]).
    pub limit: Duration,
}

/// What a finished run left: its exit code (`None`: killed by a signal) and its two streams.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
            limit: RUN_LIMIT,
        }
    }

    /// A sandbox whose runs may take up to `limit` (a real model on a busy machine).
    pub fn with_limit(limit: Duration) -> Self {
        Sandbox {
            limit,
            ..Self::new()
        }
    }

    /// The working folder (canonical as mm makes it: the system prompt and tool results use
    /// it).
    pub fn dir(&self) -> PathBuf {
        mm_core::paths::canonical(self.cwd.path()).unwrap()
    }

    /// `rel` (`/`-separated) under the working folder, with the system's separators (as mm
    /// shows it).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir().join(super::platform::native(rel))
    }

    /// `$XDG_CONFIG_HOME/mm/config.toml` of the sandbox.
    pub fn user_config(&self) -> PathBuf {
        self.home
            .path()
            .join(".config")
            .join("mm")
            .join("config.toml")
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `mm ARGS` in the sandbox, with `MM_MODEL_URL` = `url` when given; stdin is empty (not a
    /// terminal), stdout and stderr are captured, no colour.
    pub fn command(&self, url: Option<&str>, args: &[&str]) -> Command {
        self.command_as(&super::as_user::Who::Root, url, args)
    }

    /// [`Sandbox::command`] run by `who` (the sandbox's folders must be theirs:
    /// [`Who::own`](super::as_user::Who::own)).
    pub fn command_as(
        &self,
        who: &super::as_user::Who,
        url: Option<&str>,
        args: &[&str],
    ) -> Command {
        let bin = super::mm_binary();
        let home = self.home.path();
        let (program, first) = who.program(&bin, home.parent().unwrap_or(home));
        let mut c = Command::new(program);
        c.args(first)
            .args(args)
            .current_dir(self.cwd.path())
            .env("HOME", self.home.path())
            .env("USERPROFILE", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env(
                "XDG_STATE_HOME",
                self.home.path().join(".local").join("state"),
            )
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("MM_") {
                c.env_remove(&name);
            }
        }
        if let Some(url) = url {
            c.env("MM_MODEL_URL", url);
        }
        c
    }

    /// Runs `mm ARGS` to the end (at most `self.limit`).
    pub async fn run(&self, url: Option<&str>, args: &[&str]) -> Run {
        finish_within(self.command(url, args).spawn().unwrap(), self.limit).await
    }

    /// Runs `mm ARGS` with `input` on its stdin (a pipe, so not a terminal).
    pub async fn run_with_stdin(&self, url: Option<&str>, args: &[&str], input: &str) -> Run {
        let mut c = self.command(url, args);
        c.stdin(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        finish_within(child, self.limit).await
    }

    /// The value `mm config` reports for `key` (as TOML: `"workspace-write"`).
    pub async fn config_value(&self, key: &str) -> String {
        let report = self.run(None, &["config"]).await;
        let prefix = format!("{key} = ");
        let line = report
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("mm config shows no {key}: {}", report.stdout));
        line.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// The session files saved in the sandbox's folder (`.mm/sessions/*.json`), oldest first.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let dir = self.path(".mm/sessions");
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files
    }

    /// The one session file of the folder, parsed.
    pub fn only_session(&self) -> serde_json::Value {
        let files = self.session_files();
        assert_eq!(files.len(), 1, "expected one session file, found {files:?}");
        read_json(&files[0])
    }
}

/// Asserts the run's exit code, showing both streams when it differs.
pub fn assert_code(run: &Run, code: i32) {
    assert_eq!(
        run.code,
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Waits for a child (at most [`RUN_LIMIT`]) and collects its output.
pub async fn finish(child: Child) -> Run {
    finish_within(child, RUN_LIMIT).await
}

/// Waits for a child (at most `limit`) and collects its output.
pub async fn finish_within(child: Child, limit: Duration) -> Run {
    let pid = child.id();
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(out) => {
            let out = out.unwrap();
            Run {
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        }
        Err(_) => panic!("mm (pid {pid:?}) did not exit within {} s", limit.as_secs()),
    }
}

/// Sends SIGINT to a running child, as Ctrl-C in a terminal would.
pub fn interrupt(child: &Child) {
    super::platform::interrupt(child.id().expect("the child is still running"));
}
