//! Shared test helpers: `mod common;` in a test file, then `use common::*;`.
#![allow(dead_code, unused_imports)]

pub mod fake_server;

pub use fake_server::{Call, Chunk, FakeServer, LastByte, Options, Reply, check_history};
