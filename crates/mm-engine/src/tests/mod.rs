//! The engine's behaviour through mm-testkit-core's doubles (a scripted model, a recording front
//! end), with no front end of mm's: turns (turns.rs), sessions, their files and compression
//! (sessions.rs), skills (skills.rs). `cargo test -p mm-engine` runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod sessions;
mod skills;
mod task;
mod turns;

use std::path::PathBuf;
use std::sync::Arc;

use mm_core::config::Config;
use mm_model::{ChatRequest, ModelClient};
use mm_testkit_core::Recorder;
use tokio_util::sync::CancellationToken;

use crate::{Command, Engine, Environment, PromptOutcome, Session};

/// What the tests name, as the suites of crates/mm name the test kit (`use common::*`).
mod common {
    pub use super::{Rig, compact_line, contents, rig};
    pub use mm_testkit_core::{Answer, Recorder, ScriptedModel};

    /// Paths in the forms mm shows them, on every system (mm-testkit's `platform`, which this
    /// crate sits below).
    pub mod platform {
        use std::path::Path;

        /// A path as the model sees it: `/` only (`C:/Users/…` on Windows, for Git Bash).
        pub fn slashed(path: &Path) -> String {
            path.to_string_lossy().replace('\\', "/")
        }

        /// `text` with `/` made the system's separator, as the user is shown a path.
        pub fn native(text: &str) -> String {
            text.replace('/', std::path::MAIN_SEPARATOR_STR)
        }
    }
}

/// An engine over a model with the default configuration changed by `f`, in a folder of its
/// own; the user's folders are empty ones of the test's, so nothing of the real user leaks in.
pub struct Rig {
    pub engine: Engine,
    pub home: tempfile::TempDir,
    pub cwd: tempfile::TempDir,
}

pub fn rig(model: Arc<dyn ModelClient>, f: impl FnOnce(&mut Config)) -> Rig {
    let mut config = Config::default();
    f(&mut config);
    let (home, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let at = |sub: &str| Some(home.path().join(sub));
    let env = Environment {
        home: Some(home.path().to_path_buf()),
        xdg_config_home: at("config"),
        xdg_state_home: at("state"),
    };
    let engine = Engine::builder(Arc::new(config), model).env(env).build();
    Rig { engine, home, cwd }
}

impl Rig {
    pub fn cwd(&self) -> PathBuf {
        self.cwd.path().to_path_buf()
    }

    /// A new session in the rig's folder.
    pub async fn session(&self, fe: &Recorder) -> Session {
        self.engine.new_session(self.cwd(), fe).await
    }

    /// Runs `text` on the session, never cancelled.
    pub async fn prompt(&self, s: &mut Session, text: &str, fe: &Recorder) -> PromptOutcome {
        let never = CancellationToken::new();
        self.engine.prompt(s, text, &[], fe, &never).await
    }

    /// The rig's session folder (inside its cwd).
    pub fn sessions_dir(&self) -> PathBuf {
        self.engine.sessions_dir(self.cwd.path()).unwrap()
    }
}

/// The message contents of a request, as sent.
pub fn contents(r: &ChatRequest) -> Vec<String> {
    let text = |m: &serde_json::Value| m["content"].as_str().unwrap_or("").to_string();
    r.messages.iter().map(text).collect()
}

/// The outcome line of a `/compact` prompt.
pub fn compact_line(out: &PromptOutcome) -> Option<String> {
    let Some(Command::Compact(outcome)) = &out.command else {
        return None;
    };
    Some(outcome.line())
}
