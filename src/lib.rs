//! mm: a bash-first coding agent for local language models.
//!
//! The engine (`engine`, `model`, `tools`, `history`) knows nothing of any front end: it reports
//! what happens as [`event::Event`]s and asks its [`event::Frontend`] the questions it cannot
//! answer. `term` and `acp` are the two front ends.
#![deny(
    clippy::print_stdout,
    clippy::dbg_macro,
    clippy::unwrap_used,
    clippy::expect_used
)]

pub mod config;
pub mod doctor;
pub mod engine;
pub mod event;
pub mod history;
pub mod hooks;
pub mod html_text;
pub mod lsp;
pub mod mcp;
pub mod model;
pub mod paths;
pub mod process;
pub mod prompt;
pub mod relay;
pub mod sandbox;
pub mod sanitize;
pub mod session;
pub mod skills;
pub mod tools;
pub mod writer;

pub mod acp;
pub mod agent_client;
pub mod term;

/// The version string shown by `mm --version` and sent as ACP `agentInfo.version`.
pub const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));
