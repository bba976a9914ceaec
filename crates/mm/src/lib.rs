//! mm: a bash-first coding agent for local language models.
//!
//! The binary's library: `mm doctor` ([`doctor`]), and the layers of the workspace under the
//! names `main.rs` and the integration tests use (`mm::config`, `mm::engine`, `mm::term`, …).
//! The engine (mm-engine, over mm-model, mm-tools and mm-core) knows nothing of any front end:
//! it reports what happens as [`event::Event`]s and asks its [`event::Frontend`] the questions
//! it cannot answer. mm-term and mm-acp are the two front ends (docs/architecture.md).

pub mod cli;
pub mod doctor;
pub mod setup;
pub mod subcommands;

pub use mm_acp as acp;
pub use mm_agents::agent_client;
pub use mm_core::{
    VERSION, config, event, history, paths, prompt, relay, sanitize, session, skills, tasks, writer,
};
pub use mm_engine as engine;
pub use mm_model as model;
pub use mm_term as term;
pub use mm_tools::{hooks, html_text, lsp, mcp, process, program, sandbox, tools};
