//! Shared test helpers: `mod common;` in a test file, then `use common::*;`.
#![allow(dead_code, unused_imports)]

pub mod fake_server;
pub mod invariants;
pub mod script;

pub use fake_server::{FakeServer, LastByte, Options, Responder};
pub use invariants::check_history;
pub use script::{Call, Chunk, Reply};
