//! mm's tools and what runs them: the [`process::Supervisor`] every child goes through, the
//! sandbox, hooks, the MCP and LSP clients, and [`tools`] (the `Tool` trait, the `Toolbox`, the
//! dispatcher that runs the gates, one file per tool). Above the vocabulary (mm-core), below the
//! engine; it knows no model server and no front end.

pub mod hooks;
pub mod html_text;
pub mod lsp;
pub mod mcp;
pub mod process;
pub mod program;
pub mod sandbox;
pub mod tools;

// The vocabulary under the names the modules of this crate use (`crate::config::…`).
use mm_core::{VERSION, config, event, history, paths, relay, skills, tasks, writer};
