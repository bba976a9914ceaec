//! What `session/prompt` and `session/load` answer: the stop reason and the usage totals, or
//! the JSON-RPC error.

use serde_json::json;

use crate::engine::StopReason;
use crate::event::Usage;

/// Why a request about a session is refused, on top of the engine's own errors.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("cwd must be an absolute path")]
    CwdNotAbsolute(std::path::PathBuf),
    #[error("session {0} is already live")]
    AlreadyLive(String),
    /// `session/prompt` for a session this process does not hold.
    #[error("unknown session {0}")]
    UnknownSession(String),
    /// `session/set_mode` (or the mode option) with a mode mm does not have.
    #[error("unknown mode {0:?}: the modes are ask, yolo and read-only")]
    UnknownMode(String),
    /// `session/set_config_option` for an option mm does not have.
    #[error("unknown configuration option {0:?}: the options are mode and model")]
    UnknownOption(String),
    /// A value the option does not offer (a model the server does not list).
    #[error("{option} has no value {value:?}")]
    UnknownValue { option: String, value: String },
    /// `session/delete` of a session saved in none of the folders mm knows.
    #[error("no saved session {id} in {}", dirs.join(", "))]
    NotSaved { id: String, dirs: Vec<String> },
    /// `session/list` with a cursor it did not give.
    #[error(transparent)]
    BadCursor(#[from] super::session::BadCursor),
}

/// Every refusal as its JSON-RPC error, in one place (docs/acp-reference.md): a failed turn is
/// `-32603` with the one-line explanation; everything about the session asked for is
/// `invalid params` carrying the `sessionId` (and the explanation).
pub fn turn_error(e: &crate::engine::TurnError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::internal_error().data(json!({"error": e.to_string()}))
}

/// A session that cannot be loaded (`session/load`): invalid params with the id and the error.
pub fn load_error(id: &str, e: &crate::engine::LoadError) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params()
        .data(json!({"sessionId": id, "error": e.to_string()}))
}

/// A request refused before the engine saw it. `id` is the session asked for (`None` for
/// `session/new`, which names none).
pub fn request_error(id: Option<&str>, e: &RequestError) -> agent_client_protocol::Error {
    use agent_client_protocol::Error;
    match (e, id) {
        (RequestError::CwdNotAbsolute(cwd), None) => {
            Error::invalid_params().data(json!({"cwd": cwd, "error": e.to_string()}))
        }
        // A new session whose fresh id is taken is our fault, not the client's.
        (RequestError::AlreadyLive(_), None) => {
            Error::internal_error().data(json!({"error": e.to_string()}))
        }
        (RequestError::UnknownSession(_), Some(id)) => {
            Error::invalid_params().data(json!({"sessionId": id}))
        }
        (
            RequestError::CwdNotAbsolute(_)
            | RequestError::AlreadyLive(_)
            | RequestError::UnknownMode(_)
            | RequestError::UnknownOption(_)
            | RequestError::UnknownValue { .. }
            | RequestError::NotSaved { .. }
            | RequestError::BadCursor(_),
            Some(id),
        ) => Error::invalid_params().data(json!({"sessionId": id, "error": e.to_string()})),
        (RequestError::UnknownSession(id), None) => {
            Error::invalid_params().data(json!({"sessionId": id, "error": e.to_string()}))
        }
        (
            RequestError::UnknownMode(_)
            | RequestError::UnknownOption(_)
            | RequestError::UnknownValue { .. }
            | RequestError::NotSaved { .. }
            | RequestError::BadCursor(_),
            None,
        ) => Error::invalid_params().data(json!({"error": e.to_string()})),
    }
}

/// The stop reason's wire name.
pub fn stop_reason(stop: StopReason) -> agent_client_protocol::v1::schema::StopReason {
    use agent_client_protocol::v1::schema::StopReason as S;
    match stop {
        StopReason::EndTurn => S::EndTurn,
        StopReason::MaxTokens => S::MaxTokens,
        StopReason::MaxTurnRequests => S::MaxTurnRequests,
        StopReason::Cancelled => S::Cancelled,
    }
}

/// The session's totals for the prompt response, once the server reported any count.
pub fn prompt_usage(usage: &Usage) -> Option<agent_client_protocol::v1::schema::Usage> {
    let reported = usage.input_tokens > 0
        || usage.output_tokens > 0
        || usage.thought_tokens.is_some()
        || usage.cached_read_tokens.is_some();
    reported.then(|| {
        agent_client_protocol::v1::schema::Usage::new(
            usage.total(),
            usage.input_tokens,
            usage.output_tokens,
        )
        .thought_tokens(usage.thought_tokens)
        .cached_read_tokens(usage.cached_read_tokens)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn prompt_usage_only_once_reported() {
        assert_eq!(prompt_usage(&Usage::default()), None);
        let u = Usage {
            input_tokens: 10,
            output_tokens: 5,
            thought_tokens: None,
            cached_read_tokens: Some(4),
        };
        assert_eq!(
            serde_json::to_value(prompt_usage(&u)).unwrap(),
            json!({"totalTokens": 15, "inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 4})
        );
    }
}
