//! mm: a bash-first coding agent for local language models.
//!
//! The binary's library: the command line ([`cli`]), the subcommands that start no front end
//! ([`subcommands`]: [`doctor`], [`setup`], `mm trust`). It re-exports nothing: `main.rs` and
//! the integration tests name the crates of the workspace themselves (`mm_core::config`,
//! `mm_engine::Engine`, `mm_term`, …), so the seams between the layers show where they are
//! crossed. The engine (mm-engine, over mm-model, mm-tools and mm-core) knows nothing of any
//! front end; mm-term and mm-acp are the two front ends (docs/architecture.md).

pub mod cli;
pub mod doctor;
pub mod setup;
pub mod subcommands;

// The layers below under the names the modules of this crate use (`crate::config::…`).
use mm_core::{VERSION, config, paths, sanitize, session, writer};
use mm_model as model;
use mm_tools::{program, sandbox};
