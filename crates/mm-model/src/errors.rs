//! What the model server's failures become: a transport error's short reason and whether to
//! retry it, a failed TLS handshake explained, an HTTP error's message and a request too long
//! for the context told apart. Both the client (`openai/`) and detection (`detect.rs`) ask
//! servers, and both read their failures here.

use std::error::Error as _;

use serde_json::Value;

use crate::ModelError;
use crate::sse::truncate_chars;

/// The longest server message kept in an error, in characters.
const MESSAGE_MAX: usize = 200;

/// The error of a request to `url` that got no answer, and whether it is worth retrying (the
/// server dropped a kept-alive connection). A refused connection is not: nothing listens there,
/// and waiting seconds behind a spinner tells the user nothing (a restarting server is there
/// again by the next prompt).
pub(crate) fn transport_error(url: &str, error: &reqwest::Error) -> (ModelError, bool) {
    match describe_error(error) {
        (reason, _) if reason == REFUSED => (
            ModelError::Refused {
                url: url.to_string(),
            },
            false,
        ),
        (reason, retry) => (
            ModelError::Unreachable {
                url: url.to_string(),
                reason,
            },
            retry,
        ),
    }
}

const REFUSED: &str = "connection refused";

/// A short reason for a transport error, and whether it is worth retrying (the server
/// dropped a kept-alive connection).
pub(crate) fn describe_error(error: &reqwest::Error) -> (String, bool) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = error.source();
    let mut innermost = error.to_string();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind;
            let known = match io.kind() {
                ErrorKind::ConnectionRefused => Some((REFUSED, false)),
                ErrorKind::ConnectionReset => Some(("connection reset", true)),
                ErrorKind::ConnectionAborted => Some(("connection aborted", true)),
                ErrorKind::BrokenPipe => Some(("connection closed", true)),
                ErrorKind::UnexpectedEof => Some(("connection closed", true)),
                ErrorKind::TimedOut => Some(("timed out", false)),
                _ => None,
            };
            if let Some((reason, retry)) = known {
                return (reason.to_string(), retry);
            }
        }
        innermost = e.to_string();
        source = e.source();
    }
    if let Some(reason) = tls_failure(error) {
        return (reason, false);
    }
    if innermost.contains("connection closed before message completed") {
        return ("connection closed".to_string(), true);
    }
    if error.is_timeout() {
        return ("timed out".to_string(), false);
    }
    (innermost, false)
}

/// Why a TLS handshake failed, when it did: rustls reports its errors as `InvalidData` I/O
/// errors inside the connect error. Garbage where a TLS record was expected almost always means
/// an `https://` URL for a server that speaks plain HTTP.
fn tls_failure(error: &reqwest::Error) -> Option<String> {
    if !error.is_connect() || error.url().is_none_or(|u| u.scheme() != "https") {
        return None;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = error.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            // An I/O error wrapping another hides the inner one from `source()`.
            let inner = io
                .get_ref()
                .and_then(|i| i.downcast_ref::<std::io::Error>());
            if let Some(bad) = [Some(io), inner]
                .into_iter()
                .flatten()
                .find(|e| e.kind() == std::io::ErrorKind::InvalidData)
            {
                let text = bad.to_string();
                return Some(if text.contains("InvalidContentType") {
                    "TLS handshake failed: the server does not speak TLS (use an http:// URL)"
                        .to_string()
                } else {
                    format!("TLS handshake failed: {text}")
                });
            }
        }
        source = e.source();
    }
    None
}

/// The server's message: `error.message`, else `error` when a string, else `message`, else the
/// body's first line; at most 200 characters.
pub fn server_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let error = v.get("error");
        error
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .or_else(|| error.and_then(Value::as_str))
            .or_else(|| v.get("message").and_then(Value::as_str))
            .map(str::to_string)
    });
    let message = from_json.unwrap_or_else(|| body.lines().next().unwrap_or("").trim().to_string());
    truncate_chars(&message, MESSAGE_MAX)
}

/// An HTTP error as the user sees it; a request too long for the context is told apart.
pub fn http_error(status: u16, body: &str) -> ModelError {
    let message = server_message(body);
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = parsed.get("error").unwrap_or(&parsed);
    let field = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("");
    let lower = message.to_ascii_lowercase();
    let exceeded = field("type") == "exceed_context_size_error"
        || field("code") == "context_length_exceeded"
        || lower.contains("maximum context length")
        || lower.contains("exceeds the available context size");
    if !exceeded {
        let message = match status {
            401 | 403 => format!("{message} (check model.apiKey or MM_API_KEY)"),
            _ => message,
        };
        return ModelError::Http { status, message };
    }
    let n_ctx = error
        .get("n_ctx")
        .and_then(Value::as_u64)
        .or_else(|| number_after(&lower, "maximum context length is "));
    ModelError::ContextExceeded {
        status,
        message,
        n_ctx,
    }
}

fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn server_message_prefers_error_message_then_error_then_first_line() {
        assert_eq!(
            server_message(r#"{"error":{"message":"bad tools"}}"#),
            "bad tools"
        );
        assert_eq!(
            server_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            server_message(r#"{"object":"error","message":"vLLM says no","code":400}"#),
            "vLLM says no"
        );
        assert_eq!(server_message("Bad Gateway\n<html>"), "Bad Gateway");
        assert_eq!(
            server_message(&"x".repeat(300)),
            format!("{}…", "x".repeat(200))
        );
    }

    #[test]
    fn context_errors_of_each_server_are_recognised() {
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert_eq!(
            http_error(400, llama),
            ModelError::ContextExceeded {
                status: 400,
                message: "the request exceeds the available context size, try increasing it".into(),
                n_ctx: Some(8192)
            }
        );
        let openai = r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            http_error(400, openai),
            ModelError::ContextExceeded { n_ctx: None, .. }
        ));
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}"#;
        assert!(matches!(
            http_error(400, vllm),
            ModelError::ContextExceeded {
                n_ctx: Some(4096),
                ..
            }
        ));
        assert_eq!(
            http_error(500, r#"{"error":{"message":"boom"}}"#).to_string(),
            "model server answered 500: boom"
        );
    }
}
