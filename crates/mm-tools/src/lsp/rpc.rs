//! JSON-RPC 2.0 over a language server's pipes, framed with `Content-Length` headers (the base
//! protocol of the LSP specification). One task reads the server's stdout (answers go to the
//! waiting request, `publishDiagnostics` to the shared state, the server's own requests get a
//! neutral answer), one writes its stdin, one keeps the tail of its stderr for error lines.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::{mpsc, oneshot, watch};

use crate::tasks::Tasks;

/// A message larger than this is a broken server, not a big answer.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// Lines of the server's stderr kept for error lines: the first ones, and the last ones.
const STDERR_HEAD: usize = 5;
const STDERR_LINES: usize = 20;
/// Characters kept of one stderr line.
const STDERR_LINE_CHARS: usize = 300;

/// A server's error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseError {
    pub code: i64,
    pub message: String,
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestError {
    /// The server answered with an error.
    Response(ResponseError),
    /// The connection closed (the server exited) before the answer.
    Closed,
}

type Reply = Result<Value, ResponseError>;

/// What the reader task shares with the client.
#[derive(Default)]
pub struct Shared {
    /// The last `publishDiagnostics` per document URI, with how many were received for it.
    diagnostics: Mutex<HashMap<String, Published>>,
    /// The first lines the server wrote on stderr (where a crash usually says why).
    stderr_head: Mutex<Vec<String>>,
    stderr: Mutex<VecDeque<String>>,
}

/// What a server published for one document.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// How many publications came for the document.
    pub count: u64,
    /// The document version they were computed for, when the server says.
    pub version: Option<i32>,
    pub diagnostics: Vec<lsp_types::Diagnostic>,
}

impl Shared {
    /// What was last published for `uri`.
    pub fn diagnostics(&self, uri: &str) -> Published {
        self.diagnostics
            .lock()
            .ok()
            .and_then(|d| d.get(uri).cloned())
            .unwrap_or_default()
    }

    /// The line of the server's stderr that best says why it failed: the first that mentions
    /// an error, else the first, else the last.
    pub fn stderr_reason(&self) -> Option<String> {
        let head = self
            .stderr_head
            .lock()
            .map(|h| h.clone())
            .unwrap_or_default();
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        head.iter()
            .chain(tail.iter())
            .find(|l| l.to_lowercase().contains("error"))
            .or(head.first())
            .or(tail.last())
            .map(|l| l.trim().to_string())
    }
}

/// The client side of one server's connection.
pub struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Reply>>>>,
    next_id: AtomicI64,
    pub shared: Arc<Shared>,
    /// Bumped on every `publishDiagnostics` and when the connection closes.
    events: watch::Receiver<u64>,
    closed: watch::Receiver<bool>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
}

/// A request in flight: await [`Pending::answer`], or drop it to stop waiting.
pub struct Pending {
    pub id: i64,
    rx: oneshot::Receiver<Reply>,
}

impl Pending {
    pub async fn answer(self) -> Result<Value, RequestError> {
        match self.rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(RequestError::Response(e)),
            Err(_) => Err(RequestError::Closed),
        }
    }
}

impl Connection {
    /// Starts the reader, writer and stderr tasks over a server's pipes (they end when the
    /// pipes close). `root` answers the server's `workspace/workspaceFolders` requests.
    pub fn start<R, W, E>(
        tasks: &Tasks,
        stdout: R,
        stdin: W,
        stderr: Option<E>,
        root_uri: String,
    ) -> Connection
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        E: tokio::io::AsyncRead + Unpin + Send + 'static,
    {
        let (out, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Reply>>>> = Arc::default();
        let shared = Arc::new(Shared::default());
        let (events_tx, events) = watch::channel(0u64);
        let (closed_tx, closed) = watch::channel(false);
        // The queue's sender lives as long as the connection: cut at shutdown.
        tasks.spawn_until_shutdown(write_loop(stdin, out_rx));
        let stderr_task = stderr.map(|err| tasks.spawn(stderr_loop(err, Arc::clone(&shared))));
        let reader = Reader {
            out: out.clone(),
            pending: Arc::clone(&pending),
            shared: Arc::clone(&shared),
            events: events_tx,
            closed: closed_tx,
            root_uri,
        };
        tasks.spawn(async move { reader.run(BufReader::new(stdout)).await });
        Connection {
            out,
            pending,
            next_id: AtomicI64::new(1),
            shared,
            events,
            closed,
            stderr_task,
        }
    }

    /// Waits, at most `limit`, for the server's stderr to close (after it exited), so that
    /// its last words are read.
    pub async fn stderr_settled(&mut self, limit: std::time::Duration) {
        if let Some(task) = self.stderr_task.as_mut() {
            let _ = tokio::time::timeout(limit, task).await;
        }
    }

    /// Whether the server closed its output (it exited, or is about to).
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Resolves once the connection is closed.
    pub async fn closed(&self) {
        let mut c = self.closed.clone();
        let _ = c.wait_for(|closed| *closed).await;
    }

    /// Sends a request; the answer comes through the returned [`Pending`].
    pub fn request(&self, method: &str, params: Value) -> Pending {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        if self.is_closed() {
            // The reader has already failed every pending request; this one would wait forever.
            if let Ok(mut p) = self.pending.lock() {
                p.remove(&id);
            }
        } else {
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        }
        Pending { id, rx }
    }

    /// Stops waiting for a request and tells the server (`$/cancelRequest`).
    pub fn cancel(&self, id: i64) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        self.notify("$/cancelRequest", json!({"id": id}));
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn send(&self, msg: &Value) {
        let _ = self.out.send(frame(msg));
    }

    /// A receiver that changes on every `publishDiagnostics` and when the connection closes.
    pub fn events(&self) -> watch::Receiver<u64> {
        self.events.clone()
    }
}

/// A message with its `Content-Length` header.
pub fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Reads one framed message; `None` at a clean end of stream.
pub async fn read_message<R: AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Option<Value>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        let n = r.read_line(&mut line).await?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "end of stream in a header",
                ))
            };
        }
        first = false;
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a message without Content-Length",
        )
    })?;
    if length > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {length} bytes"),
        ));
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = rx.recv().await {
        if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
            break;
        }
    }
}

async fn stderr_loop<E: tokio::io::AsyncRead + Unpin>(err: E, shared: Arc<Shared>) {
    let mut lines = BufReader::new(err);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match lines.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line: String = String::from_utf8_lossy(&buf)
                    .trim_end()
                    .chars()
                    .take(STDERR_LINE_CHARS)
                    .collect();
                if line.trim().is_empty() {
                    continue;
                }
                if let Ok(mut h) = shared.stderr_head.lock()
                    && h.len() < STDERR_HEAD
                {
                    h.push(line);
                    continue;
                }
                if let Ok(mut s) = shared.stderr.lock() {
                    if s.len() == STDERR_LINES {
                        s.pop_front();
                    }
                    s.push_back(line);
                }
            }
        }
    }
}

struct Reader {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<Mutex<HashMap<i64, oneshot::Sender<Reply>>>>,
    shared: Arc<Shared>,
    events: watch::Sender<u64>,
    closed: watch::Sender<bool>,
    root_uri: String,
}

impl Reader {
    async fn run<R: AsyncBufRead + Unpin>(&self, mut r: R) {
        while let Ok(Some(msg)) = read_message(&mut r).await {
            self.dispatch(msg);
        }
        // Closed first: a request sent from now on sees it and does not wait; then every
        // request still waiting learns that no answer will come.
        let _ = self.closed.send(true);
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
        self.events.send_modify(|n| *n += 1);
    }

    fn dispatch(&self, msg: Value) {
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").cloned();
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
                if let Some(tx) = waiter {
                    let reply = match msg.get("error") {
                        Some(e) => Err(ResponseError {
                            code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                            message: e
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or("(no message)")
                                .to_string(),
                        }),
                        None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = tx.send(reply);
                }
            }
            (Some(method), Some(id)) => {
                let answer = self.answer(method, msg.get("params"));
                let reply = match answer {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(code) => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": code, "message": format!("mm does not handle {method}")}}),
                };
                let _ = self.out.send(frame(&reply));
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = msg.get("params").cloned() else {
                    return;
                };
                let Ok(p) = serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(params)
                else {
                    return;
                };
                if let Ok(mut d) = self.shared.diagnostics.lock() {
                    let entry = d.entry(p.uri.as_str().to_string()).or_default();
                    entry.count += 1;
                    entry.version = p.version;
                    entry.diagnostics = p.diagnostics;
                }
                self.events.send_modify(|n| *n += 1);
            }
            // Progress, log messages, telemetry: nothing to do.
            (Some(_), None) | (None, None) => {}
        }
    }

    /// The answer to a request from the server: neutral values for what a client must
    /// support, "method not found" for the rest.
    fn answer(&self, method: &str, params: Option<&Value>) -> Result<Value, i64> {
        match method {
            "workspace/configuration" => {
                let n = params
                    .and_then(|p| p.get("items"))
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                Ok(Value::Array(vec![Value::Null; n]))
            }
            "workspace/workspaceFolders" => {
                Ok(json!([{"uri": self.root_uri, "name": "workspace"}]))
            }
            "client/registerCapability"
            | "client/unregisterCapability"
            | "window/workDoneProgress/create"
            | "window/showMessageRequest" => Ok(Value::Null),
            "workspace/applyEdit" => Ok(json!({"applied": false})),
            _ => Err(-32601),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_are_read_back_whatever_the_header_case_and_order() {
        let mut bytes = frame(&json!({"a": 1}));
        bytes.extend_from_slice(b"content-type: x\r\ncontent-length: 7\r\n\r\n{\"b\":2}");
        let mut r = BufReader::new(&bytes[..]);
        assert_eq!(read_message(&mut r).await.unwrap(), Some(json!({"a": 1})));
        assert_eq!(read_message(&mut r).await.unwrap(), Some(json!({"b": 2})));
        assert_eq!(read_message(&mut r).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_truncated_or_unframed_message_is_an_error() {
        let mut r = BufReader::new(&b"Content-Length: 10\r\n\r\n{}"[..]);
        assert!(read_message(&mut r).await.is_err());
        let mut r = BufReader::new(&b"hello\r\n\r\n{}"[..]);
        assert!(read_message(&mut r).await.is_err());
    }
}
