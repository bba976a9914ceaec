//! Shared test helpers: `mod common;` in a test file, then `use common::*;`.
#![allow(dead_code, unused_imports)]

pub mod fake_server;
pub mod invariants;
pub mod script;

pub use fake_server::{FakeServer, LastByte, Options, Responder};
pub use invariants::check_history;
pub use script::{Call, Chunk, Reply};

/// The real model server's base URL for end-to-end tests: `MM_E2E_URL`, which `.ci/run` sets
/// after `scripts/local-model.sh start`. `None` (and a note on stderr) when it is not set: the
/// test returns early.
pub fn e2e_url(test: &str) -> Option<String> {
    match std::env::var("MM_E2E_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!("{test}: skipped, MM_E2E_URL is not set (scripts/local-model.sh start)");
            None
        }
    }
}
