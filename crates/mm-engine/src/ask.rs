//! The front ends' door to another agent (agents.md): `/ask AGENT question` in the interactive
//! session and `mm --ask AGENT "question"`. The engine starts the agent inside its fence, asks
//! once and stops it; the front end shows the agent's progress and puts its questions to the
//! user (through the `Frontend` it passes).

use std::path::Path;

use mm_agents::agent_client::{self, AgentCommand, AgentError, Answer, StartOptions};
use tokio_util::sync::CancellationToken;

use super::Engine;
use crate::event::{Frontend, PermissionMode};
use crate::tools::CallContext;

/// The `toolCallId`-like ref of the asked agent's progress and questions.
const ASK_REF: &str = "ask";

impl Engine {
    /// Asks `agent` (a configured name or a command line) one question in `cwd`, the agent put in
    /// `mode` (the session's for `/ask`, the configuration's for `mm --ask`); `frontend` shows
    /// its progress and puts its questions to the user.
    pub async fn ask_agent(
        &self,
        cwd: &Path,
        mode: PermissionMode,
        agent: &str,
        question: &str,
        frontend: &dyn Frontend,
        cancel: &CancellationToken,
    ) -> Result<Answer, AgentError> {
        let cmd = AgentCommand::resolve(&self.config.agents, agent)?;
        let call = CallContext::new(
            ASK_REF,
            cwd,
            self.config.tools.max_output,
            cancel,
            mode,
            frontend,
        );
        let opts = StartOptions {
            cwd,
            processes: &self.processes,
            sandbox: &self.sandbox,
            depth: self.ask_depth(),
            silence: self.config.model.request_timeout,
        };
        agent_client::ask_once(&cmd, question, &opts, &call).await
    }
}
