//! The ACP transport's input: newline-delimited JSON-RPC read with a bound on a line's size, and
//! held back after `initialize` until its answer is written.
//!
//! - A line longer than `acp.maxLineBytes` is never buffered whole: its first bytes are kept for
//!   the error and the rest is discarded as it arrives, so memory stays within the cap however
//!   long the line. The SDK then sees a short stand-in that is not JSON, and answers one parse
//!   error whose `data.line` is that excerpt (instead of echoing the whole line).
//! - A line that is not JSON at all is shortened the same way: the SDK's parse error echoes
//!   the line it got, and the client's own garbage need not come back whole.
//! - The SDK rejects any request that arrives before the `initialize` response is written
//!   (`ensure_initialized`), even one written right behind it. A client that pipelines
//!   `session/new` after `initialize` is answered as if it had waited: the reader hands the SDK
//!   nothing after an `initialize` request until the response to it has gone out.
//! - The same `initialize` line is read for what the client said of itself (`ClientHello`),
//!   which the SDK may not hand on whole. `lines` puts these together into the SDK's transport.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::sync::Mutex;

use agent_client_protocol::{Agent, ConnectTo, Lines};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

use crate::Logger;

/// How much of a refused line the parse error quotes, in bytes (cut back to a character
/// boundary).
pub const EXCERPT_BYTES: usize = 120;

/// How long lines after `initialize` are held at most: the answer is normally written within
/// milliseconds; the bound only keeps a lost answer from stopping the connection.
const HOLD_LIMIT: Duration = Duration::from_secs(10);

/// One line of input, without its `\n` (and a `\r` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line within the cap.
    Whole(Vec<u8>),
    /// A line over the cap: its first bytes, and its length (without the newline).
    TooLong { head: Vec<u8>, bytes: u64 },
}

/// Reads the next line, keeping at most `max` bytes of it. `Ok(None)` at the end of input; a
/// last line without a newline is still a line.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut buf: Vec<u8> = Vec::new();
    let mut head: Option<Vec<u8>> = None;
    let mut bytes: u64 = 0;
    let mut started = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            if !started {
                return Ok(None);
            }
            break;
        }
        started = true;
        let (part, newline) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        let used = part.len() + usize::from(newline);
        bytes += part.len() as u64;
        match &mut head {
            // Discarding: only the excerpt is topped up, when the cap was smaller than it.
            Some(head) => {
                let room = EXCERPT_BYTES.saturating_sub(head.len());
                head.extend_from_slice(&part[..part.len().min(room)]);
            }
            None if buf.len() + part.len() <= max => buf.extend_from_slice(part),
            None => {
                // Over the cap: keep the excerpt, free the rest, discard from here on.
                buf.extend_from_slice(&part[..part.len().min(EXCERPT_BYTES)]);
                buf.truncate(EXCERPT_BYTES);
                head = Some(std::mem::take(&mut buf));
            }
        }
        reader.consume(used);
        if newline {
            break;
        }
    }
    Ok(Some(match head {
        // The length as read: a `\r` before the newline is not told apart once discarded.
        Some(head) => Line::TooLong { head, bytes },
        None => {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            Line::Whole(buf)
        }
    }))
}

/// The text the SDK is handed for a line: the line itself when it is JSON; otherwise a short
/// stand-in that is never JSON (it ends in `…` outside any closed string, and holds no `"`
/// after the excerpt), so the SDK answers it with one parse error that quotes only the excerpt.
/// The second value is the log line for a line over the cap.
pub fn for_sdk(line: Line, max: usize) -> (String, Option<String>) {
    match line {
        Line::Whole(bytes) => {
            // Invalid UTF-8 is read lossily rather than refused (a stray byte in a string).
            let text = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            if text.len() <= EXCERPT_BYTES
                || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok()
            {
                return (text, None);
            }
            let short = excerpt(text.as_bytes());
            (format!("{short}… [{} bytes, not JSON]", text.len()), None)
        }
        Line::TooLong { head, bytes } => {
            let excerpt = excerpt(&head);
            (
                format!(
                    "{excerpt}… [{bytes} bytes, over the {max}-byte limit (acp.maxLineBytes): discarded]"
                ),
                Some(format!(
                    "[acp] input line of {bytes} bytes is over the {max}-byte limit (acp.maxLineBytes): discarded"
                )),
            )
        }
    }
}

/// The first [`EXCERPT_BYTES`] of a line, cut back to a character boundary.
fn excerpt(bytes: &[u8]) -> String {
    let mut end = bytes.len().min(EXCERPT_BYTES);
    loop {
        match std::str::from_utf8(&bytes[..end]) {
            Ok(t) => return t.to_string(),
            // Invalid in the middle: read lossily; at the very end: a cut character.
            Err(e) if e.error_len().is_some() => {
                return String::from_utf8_lossy(&bytes[..end]).into_owned();
            }
            Err(e) => end = e.valid_up_to(),
        }
    }
}

/// Holds the input after an `initialize` request until its response is written.
#[derive(Default)]
pub struct InitGate {
    /// The id of the `initialize` request waiting for its answer, as JSON text.
    waiting: std::sync::Mutex<Option<String>>,
    armed: AtomicBool,
    opened: Notify,
}

impl InitGate {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Called by the reader for each line it hands on: an `initialize` request arms the gate.
    pub fn saw_incoming(&self, line: &str) {
        let Some(id) = initialize_id(line) else {
            return;
        };
        if let Ok(mut w) = self.waiting.lock() {
            *w = Some(id);
            self.armed.store(true, Ordering::Release);
        }
    }

    /// Called by the writer for each line it writes: the response to the `initialize` request
    /// (or an error without an id, which the SDK writes when it could not read one) opens the
    /// gate.
    pub fn saw_outgoing(&self, line: &str) {
        if !self.armed.load(Ordering::Acquire) {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if v.get("method").is_some() || (v.get("result").is_none() && v.get("error").is_none()) {
            return;
        }
        let id = v.get("id").map(Value::to_string).unwrap_or_default();
        let Ok(mut w) = self.waiting.lock() else {
            return;
        };
        if w.as_deref() == Some(id.as_str()) || id == "null" || id.is_empty() {
            *w = None;
            self.armed.store(false, Ordering::Release);
            self.opened.notify_waiters();
        }
    }

    /// Waits until no `initialize` answer is pending (at most [`HOLD_LIMIT`]).
    pub async fn wait(&self) {
        let _ = tokio::time::timeout(HOLD_LIMIT, async {
            loop {
                let opened = self.opened.notified();
                tokio::pin!(opened);
                // Registered before the check, so an answer written in between is not missed.
                opened.as_mut().enable();
                if !self.armed.load(Ordering::Acquire) {
                    return;
                }
                opened.await;
            }
        })
        .await;
    }
}

/// An `initialize` message line, parsed; `None` for any other line (most are told apart
/// without parsing them). The gate reads its id, [`ClientHello`] its params.
fn initialize_message(line: &str) -> Option<Value> {
    if !line.contains("\"initialize\"") {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("method").and_then(Value::as_str) == Some("initialize")).then_some(v)
}

/// The id (as JSON text) of an `initialize` request line; `None` for any other line.
fn initialize_id(line: &str) -> Option<String> {
    initialize_message(line)?.get("id").map(Value::to_string)
}

/// What the client said of itself in `initialize`, read from the raw request: the SDK
/// negotiates the version first and, for a version it does not speak, hands the handler a
/// request without the client's info and capabilities — but the log line and the form support
/// must be what the client sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `clientInfo.name` and `.version`.
    pub info: Option<(String, String)>,
    /// The `protocolVersion` the client asked for.
    pub protocol: Option<u64>,
    /// `clientCapabilities.elicitation.form` present and non-null.
    pub forms: bool,
    /// `clientCapabilities.session.compaction` present and non-null.
    pub compaction: bool,
    /// `clientCapabilities.subagents` present and non-null.
    pub subagents: bool,
    /// `clientCapabilities.session.notices` present and non-null.
    pub notices: bool,
    /// Terminal auth advertised (`auth.terminal` or `_meta["terminal-auth"]`).
    pub terminal_auth: bool,
}

impl ClientHello {
    /// Reads an `initialize` request line; `None` for any other line.
    fn read(line: &str) -> Option<ClientHello> {
        let v = initialize_message(line)?;
        let params = &v["params"];
        let info = params.get("clientInfo").map(|i| {
            let field = |k: &str| i.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            (field("name"), field("version"))
        });
        Some(ClientHello {
            info,
            protocol: params.get("protocolVersion").and_then(|p| p.as_u64()),
            forms: params["clientCapabilities"]["elicitation"]
                .get("form")
                .is_some_and(|f| !f.is_null()),
            compaction: params["clientCapabilities"]["session"]
                .get("compaction")
                .is_some_and(|c| !c.is_null()),
            subagents: params["clientCapabilities"]
                .get("subagents")
                .is_some_and(|c| !c.is_null()),
            notices: params["clientCapabilities"]["session"]
                .get("notices")
                .is_some_and(|c| !c.is_null()),
            terminal_auth: crate::convert::advertises_terminal_auth(&params["clientCapabilities"]),
        })
    }
}

/// A line transport over tokio pipes (transport.rs): lines are capped at `max_line` bytes, and
/// lines after `initialize` are held until its answer is written; invalid UTF-8 is read lossily
/// rather than ending the connection. The `initialize` request is also read for `hello`.
pub(crate) fn lines<R, W>(
    input: R,
    output: W,
    hello: Arc<Mutex<Option<ClientHello>>>,
    max_line: usize,
    log: Logger,
) -> impl ConnectTo<Agent> + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let gate = InitGate::new();
    let reader = BufReader::with_capacity(64 * 1024, input);
    let incoming = futures::stream::unfold(reader, {
        let gate = gate.clone();
        move |mut reader| {
            let (hello, gate, log) = (hello.clone(), gate.clone(), log.clone());
            async move {
                // A request written right behind `initialize` waits for its answer.
                gate.wait().await;
                match read_line(&mut reader, max_line).await {
                    Ok(None) => None,
                    Ok(Some(line)) => {
                        let (line, refused) = for_sdk(line, max_line);
                        if let Some(refused) = refused {
                            log.line(&refused);
                        }
                        if let Some(h) = ClientHello::read(&line)
                            && let Ok(mut slot) = hello.lock()
                        {
                            *slot = Some(h);
                        }
                        gate.saw_incoming(&line);
                        Some((Ok(line), reader))
                    }
                    Err(e) => Some((Err(e), reader)),
                }
            }
        }
    });
    let outgoing = futures::sink::unfold(output, move |mut w, mut line: String| {
        let gate = gate.clone();
        async move {
            line.push('\n');
            w.write_all(line.as_bytes()).await?;
            w.flush().await?;
            gate.saw_outgoing(&line);
            Ok::<_, std::io::Error>(w)
        }
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = tokio::io::BufReader::with_capacity(7, input);
        let mut out = Vec::new();
        while let Some(l) = read_line(&mut r, max).await.unwrap() {
            out.push(l);
        }
        out
    }

    #[tokio::test]
    async fn lines_within_the_cap_come_whole_and_longer_ones_as_an_excerpt() {
        let long = "y".repeat(300);
        let input = format!("ab\r\n\n{long}\nxyz");
        assert_eq!(
            lines(input.as_bytes(), 200).await,
            vec![
                Line::Whole(b"ab".to_vec()),
                Line::Whole(Vec::new()),
                Line::TooLong {
                    head: long.as_bytes()[..EXCERPT_BYTES].to_vec(),
                    bytes: 300
                },
                Line::Whole(b"xyz".to_vec()),
            ]
        );
        // Exactly at the cap is within it.
        assert_eq!(
            lines(b"12345\n", 5).await,
            vec![Line::Whole(b"12345".to_vec())]
        );
        assert_eq!(
            lines(b"123456\n", 5).await,
            vec![Line::TooLong {
                head: b"123456".to_vec(),
                bytes: 6
            }]
        );
        assert_eq!(lines(b"", 5).await, Vec::<Line>::new());
    }

    #[test]
    fn what_the_sdk_sees_is_the_line_or_a_short_stand_in_that_is_not_json() {
        let json = br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#.to_vec();
        assert_eq!(
            for_sdk(Line::Whole(json.clone()), 100),
            (String::from_utf8(json).unwrap(), None)
        );
        assert_eq!(
            for_sdk(Line::Whole(b"not json".to_vec()), 100),
            ("not json".to_string(), None)
        );
        let garbage = format!("{{\"a\": \"{}", "é".repeat(200));
        let (text, log) = for_sdk(Line::Whole(garbage.clone().into_bytes()), 10_000);
        assert_eq!(log, None);
        assert_eq!(
            text,
            format!("{{\"a\": \"{}… [407 bytes, not JSON]", "é".repeat(56))
        );
        let (text, log) = for_sdk(
            Line::TooLong {
                head: b"{\"jsonrpc\":\"2.0\"}".to_vec(),
                bytes: 9_000_000,
            },
            8_388_608,
        );
        assert_eq!(
            text,
            "{\"jsonrpc\":\"2.0\"}… [9000000 bytes, over the 8388608-byte limit (acp.maxLineBytes): discarded]"
        );
        assert!(serde_json::from_str::<Value>(&text).is_err());
        assert_eq!(
            log.unwrap(),
            "[acp] input line of 9000000 bytes is over the 8388608-byte limit (acp.maxLineBytes): discarded"
        );
    }

    #[tokio::test]
    async fn the_gate_opens_with_the_answer_to_initialize() {
        let gate = InitGate::new();
        gate.saw_incoming(r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#);
        let waiting = crate::tasks::Tasks::new().spawn({
            let gate = gate.clone();
            async move { gate.wait().await }
        });
        gate.saw_outgoing(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#);
        gate.saw_outgoing(r#"{"jsonrpc":"2.0","id":6,"result":{}}"#);
        assert!(!waiting.is_finished());
        gate.saw_outgoing(r#"{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":1}}"#);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        // Nothing pending: no wait.
        tokio::time::timeout(Duration::from_secs(5), gate.wait())
            .await
            .unwrap();
        // A notification named initialize has no answer to wait for.
        gate.saw_incoming(r#"{"jsonrpc":"2.0","method":"initialize"}"#);
        tokio::time::timeout(Duration::from_secs(5), gate.wait())
            .await
            .unwrap();
    }
}

#[cfg(test)]
mod hello_tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_client_hello_is_what_the_client_sent_whatever_the_version() {
        let line = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":{v},"clientInfo":{{"name":"zed","version":"0.1"}},"clientCapabilities":{{"elicitation":{{"form":{{}}}}}}}}}}"#
            )
        };
        for v in ["0", "1", "2"] {
            assert_eq!(
                ClientHello::read(&line(v)),
                Some(ClientHello {
                    info: Some(("zed".into(), "0.1".into())),
                    protocol: v.parse().ok(),
                    forms: true,
                    compaction: false,
                    subagents: false,
                    notices: false,
                    terminal_auth: false,
                })
            );
        }
        assert_eq!(
            ClientHello::read(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":null}}}}"#
            ),
            Some(ClientHello {
                info: None,
                protocol: Some(1),
                forms: false,
                compaction: false,
                subagents: false,
                notices: false,
                terminal_auth: false,
            })
        );
        assert_eq!(
            ClientHello::read(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}}"#
            )
            .map(|h| h.compaction),
            Some(true)
        );
        // Other messages, even ones that mention the word, are not the hello.
        assert_eq!(
            ClientHello::read(
                r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"\"initialize\""}]}}"#
            ),
            None
        );
        assert_eq!(ClientHello::read("not json \"initialize\""), None);
    }
}
