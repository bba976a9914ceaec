//! The terminal front end: the interactive session (`mm`), one-shot mode (`mm -p`) and the
//! banner. `render`, `banner`, `editor`, `layout`, `keys`, `wrap` and `input` are pure and tested on their
//! own; `raw`, `keyboard`, `screen`, `frontend` and `repl` do the I/O.

pub mod ask;
pub mod banner;
pub mod commands;
pub mod editor;
pub mod forms;
pub mod frontend;
pub mod history;
pub mod input;
pub mod keyboard;
pub mod keys;
pub mod layout;
pub mod markdown;
pub mod mcp;
pub mod permission;
pub mod raw;
pub mod render;
pub mod repl;
pub mod screen;
pub mod sessions;
pub mod style;
pub mod trust;
pub mod wrap;

pub use banner::Banner;
pub use frontend::{OneShotFrontend, TermFrontend};
pub use repl::{TermOptions, Terminal, run_interactive};
