//! The terminal front end: the interactive session (`mm`), one-shot mode (`mm -p`) and the
//! banner. `render` and `banner` are pure and snapshot-tested; `frontend` and `repl` do the I/O.

pub mod banner;
pub mod forms;
pub mod frontend;
pub mod input;
pub mod markdown;
pub mod mcp;
pub mod raw;
pub mod render;
pub mod repl;
pub mod style;

pub use banner::Banner;
pub use frontend::{OneShotFrontend, TermFrontend};
pub use repl::{TermOptions, run_interactive};
