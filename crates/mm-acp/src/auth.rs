//! Setting up from the editor (docs/acp.md): a client that advertised terminal auth at
//! `initialize` is offered `mm setup` as its auth method, and its `session/new` answers
//! `auth_required` while no model server is configured or found, which is what makes an editor
//! offer the method. Other clients see neither.

use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::AuthMethod;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::convert;
use crate::engine::Engine;
use crate::engine::ModelError;

#[derive(Debug, Default)]
pub(crate) struct Auth {
    /// The client can run a terminal auth method.
    terminal: AtomicBool,
}

impl Auth {
    pub(crate) fn set_terminal(&self, terminal: bool) {
        self.terminal.store(terminal, Ordering::Relaxed);
    }

    /// `authMethods` of the `initialize` answer.
    pub(crate) fn methods(&self) -> Vec<AuthMethod> {
        let command = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "mm".to_string());
        convert::auth_methods(self.terminal.load(Ordering::Relaxed), &command)
    }

    /// Before `session/new`: for a client that can run the setup, `auth_required` when no
    /// server is configured (`model.url`, `MM_MODEL_URL`, `--url`) and detection found none.
    /// Any other failure is left to the turns, which report it.
    pub(crate) async fn check(
        &self,
        engine: &Engine,
        config: &Config,
        stop: &CancellationToken,
    ) -> Result<(), Error> {
        if !self.terminal.load(Ordering::Relaxed) || !config.model.url.trim().is_empty() {
            return Ok(());
        }
        match engine.model.info(&stop.child_token()).await {
            Err(ModelError::NoServer(why)) => Err(convert::setup_required(&why)),
            _ => Ok(()),
        }
    }
}
