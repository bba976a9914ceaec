//! The terminal front end: the interactive session (`mm`), one-shot mode (`mm -p`), `mm --ask`
//! and the banner. `render`, `banner`, `numbers`, `editor`, `layout`, `keys`, `wrap` and `input` are pure
//! and tested on their own; `raw`, `keyboard`, `screen`, `frontend` and `repl` do the I/O.

pub mod ask;
pub mod banner;
mod commands;
mod editor;
mod forms;
mod frontend;
mod history;
pub mod input;
mod keyboard;
// The byte decoder is the Unix reader's: on Windows the keys are crossterm's events.
#[cfg_attr(not(unix), allow(dead_code))]
mod keys;
mod layout;
pub mod markdown;
mod mcp;
pub mod numbers;
pub mod one_shot;
pub mod permission;
mod piped;
mod raw;
pub mod render;
pub mod repl;
mod screen;
pub mod sessions;
pub mod start;
pub mod style;
pub mod trust;
mod wrap;

// The layers below under the names the modules of this crate use (`crate::config::…`); the
// terminal's own `history` (the prompt history) and `mcp` (`/mcp`) name theirs in full.
use mm_agents::agent_client;
use mm_core::{
    VERSION, config, event, paths, prompt, relay, sanitize, session, skills, tasks, writer,
};
use mm_engine as engine;

pub use banner::Banner;
pub use frontend::{OneShotFrontend, TermFrontend};
pub use repl::{TermOptions, Terminal, run_interactive};
pub use start::{Reopen, StartError};

/// The width of the terminal on stdout, in columns; `None` when stdout is not a terminal (what
/// `mm setup` wraps its lines at).
pub fn stdout_width() -> Option<usize> {
    raw::width()
}

/// The width of the terminal on stderr, in columns; `None` when stderr is not a terminal (what
/// `mm -p` wraps its banner and notices at).
pub fn stderr_width() -> Option<usize> {
    raw::stderr_width()
}
