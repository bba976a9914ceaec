//! An engine over the [`ScriptedModel`](super::model::ScriptedModel) in a sandbox, and small
//! helpers of the engine tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mm_core::config::{Config, HookConfig, Origin};
use mm_core::history::Role;
use mm_engine::{Engine, Environment, PromptOutcome, Session};
use mm_model::{ChatRequest, ModelClient};
use tokio_util::sync::CancellationToken;

use super::recorder::Recorder;

/// An engine over a model with the default configuration changed by `f`; the user's folders
/// (`home`, `xdg_config_home`, `xdg_state_home`) are empty tempdirs so nothing of the real user
/// leaks in.
pub struct Rig {
    pub engine: Engine,
    pub home: tempfile::TempDir,
    pub cwd: tempfile::TempDir,
}

pub fn rig(model: Arc<dyn ModelClient>, f: impl FnOnce(&mut Config)) -> Rig {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    f(&mut cfg);
    let engine = Engine::builder(Arc::new(cfg), model)
        .env(Environment {
            home: Some(home.path().to_path_buf()),
            xdg_config_home: Some(home.path().join("config")),
            xdg_state_home: Some(home.path().join("state")),
        })
        .build();
    Rig { engine, home, cwd }
}

impl Rig {
    pub fn cwd(&self) -> PathBuf {
        self.cwd.path().to_path_buf()
    }

    pub async fn session(&self, fe: &Recorder) -> Session {
        self.engine.new_session(self.cwd(), fe).await
    }

    pub async fn prompt(&self, s: &mut Session, text: &str, fe: &Recorder) -> PromptOutcome {
        self.engine
            .prompt(s, text, &[], fe, &CancellationToken::new())
            .await
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.engine
            .sessions_dir(self.cwd.path())
            .expect("the session folder is inside the cwd")
    }
}

/// A hook running `command`.
pub fn hook(
    command: &str,
    matcher: Option<&str>,
    timeout: Duration,
    fail_closed: bool,
) -> HookConfig {
    HookConfig {
        command: command.into(),
        matcher: matcher.map(str::to_string),
        timeout,
        fail_closed,
        origin: Origin::User,
        sandbox: Default::default(),
    }
}

/// Writes an executable script.
pub fn script(path: &Path, body: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, body).unwrap();
    crate::platform::make_executable(path);
}

/// The message contents of a request, as sent.
pub fn contents(r: &ChatRequest) -> Vec<String> {
    r.messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The outcome line of a `/compact` prompt.
pub fn compact_line(out: &PromptOutcome) -> Option<String> {
    match &out.command {
        Some(mm_engine::Command::Compact(o)) => Some(o.line()),
        _ => None,
    }
}

/// The content of a session's `tool` messages, in order.
pub fn tool_outputs(s: &Session) -> Vec<String> {
    let history = s.view().history();
    let tools = history.iter().filter(|m| m.role == Role::Tool);
    tools.map(|m| m.content.clone()).collect()
}
