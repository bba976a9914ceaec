//! mm's test doubles below the engine (dev only), so that mm-engine's own tests drive it without
//! the ACP layer: the model in process ([`ScriptedModel`], model.rs), the front end
//! ([`Recorder`], recorder.rs), and the history invariants every model double checks
//! (invariants.rs). mm-testkit re-exports all of it for the suites of crates/mm.
// Test code: a failed step panics with its reason.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod invariants;
pub mod model;
pub mod recorder;

use std::time::Duration;

pub use invariants::check_history;
pub use model::{Answer, ScriptedModel};
pub use recorder::Recorder;

/// How long the `wait_for_*` helpers wait before they panic, so a broken test fails instead of
/// hanging.
pub const WAIT_LIMIT: Duration = Duration::from_secs(30);
