//! What can go wrong in the engine, as types: front ends map them in one place each (the ACP
//! layer to JSON-RPC errors, the terminal to lines) and never recognise a failure by its text.

use crate::model::ModelError;

/// Why a turn failed. `Display` is the one-line explanation users see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// The model call failed (server unreachable, HTTP error, broken stream, timeout).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Even after compression the turn does not fit the known context window.
    #[error(
        "this turn does not fit the context window: about {need} tokens with the answer's reserve, the window is {window}"
    )]
    TooLarge { need: u64, window: u64 },
    /// The model answered without text and without a tool call (and was not cut by a limit).
    #[error("the model sent an empty answer (no text, no tool call)")]
    EmptyAnswer,
}

/// Why a saved session could not be loaded. `Display` is the one-line explanation.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The id is not a session id (`../x`, empty): refused before any file is touched.
    #[error(transparent)]
    InvalidId(#[from] mm_core::session::InvalidId),
    /// The file is missing, unreadable or not a session.
    #[error(transparent)]
    File(#[from] mm_core::session::FileError),
    /// The session folder leads outside the cwd: nothing is read there.
    #[error(transparent)]
    Outside(#[from] mm_core::session::OutsideProject),
}
