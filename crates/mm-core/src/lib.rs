//! mm's vocabulary, below every other crate: what the engine and its front ends say to each
//! other ([`event`], [`relay`], [`sandbox_report`]), the history, the configuration, session
//! files, skills, the system prompt, paths, the one checked writer and the terminal sanitiser.
//! It knows no model server, no tool and no front end.

pub mod config;
pub mod event;
pub mod handle_path;
pub mod history;
pub mod paths;
pub mod prompt;
pub mod relay;
pub mod sandbox_report;
pub mod sanitize;
pub mod session;
pub mod skills;
pub mod tasks;
pub mod writer;

/// The version string shown by `mm --version` and sent as ACP `agentInfo.version` (every crate
/// of the workspace has the workspace's version).
pub const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));
