//! The asked agent's pipes as the SDK's line transport, watched: the first line on its stdout
//! that is not JSON-RPC ends the connection at once (agents.md, step 5), and how the input ended
//! is recorded for the failure line. Its stderr is relayed to ours, each line prefixed.

use std::io::Write as _;

use agent_client_protocol::{Client, ConnectTo, Lines};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::tasks::Tasks;

/// Characters of a stray stdout line quoted in the failure line.
const STRAY_LINE_CHARS: usize = 80;

/// How the agent's stdout ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Eof,
    /// A line that is not JSON-RPC (clipped).
    NotJsonRpc(String),
    Read(String),
}

/// Whether a line is a JSON-RPC message: a JSON object naming `jsonrpc`. Validated without
/// building a tree (the SDK parses it again).
pub fn is_json_rpc(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('{')
        && t.contains("\"jsonrpc\"")
        && serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok()
}

fn clip(line: &str) -> String {
    let mut chars = line.chars();
    let head: String = chars.by_ref().take(STRAY_LINE_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// The SDK transport over the child's stdin and stdout, and how its stdout ended.
pub fn lines(
    stdin: ChildStdin,
    stdout: ChildStdout,
) -> (
    impl ConnectTo<Client> + 'static,
    watch::Receiver<Option<End>>,
) {
    let (end_tx, end) = watch::channel(None);
    let incoming = futures::stream::unfold(
        (BufReader::new(stdout), end_tx),
        |(mut reader, end_tx)| async move {
            loop {
                let mut buf = Vec::new();
                match reader.read_until(b'\n', &mut buf).await {
                    Ok(0) => {
                        end_tx.send_if_modified(|e| e.get_or_insert(End::Eof) == &End::Eof);
                        return None;
                    }
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = line.trim_end_matches(['\n', '\r']);
                        if line.trim().is_empty() {
                            continue;
                        }
                        if !is_json_rpc(line) {
                            let _ = end_tx.send(Some(End::NotJsonRpc(clip(line.trim()))));
                            let e = std::io::Error::other("a line that is not JSON-RPC");
                            return Some((Err(e), (reader, end_tx)));
                        }
                        let line = line.to_string();
                        return Some((Ok(line), (reader, end_tx)));
                    }
                    Err(e) => {
                        let _ = end_tx.send(Some(End::Read(e.to_string())));
                        return Some((Err(e), (reader, end_tx)));
                    }
                }
            }
        },
    );
    let outgoing = futures::sink::unfold(stdin, |mut w, mut line: String| async move {
        line.push('\n');
        w.write_all(line.as_bytes()).await?;
        w.flush().await?;
        Ok::<_, std::io::Error>(w)
    });
    (Lines::new(Box::pin(outgoing), Box::pin(incoming)), end)
}

/// Copies the agent's stderr to ours, each line prefixed, until it closes.
pub fn relay_stderr(tasks: &Tasks, stderr: ChildStderr, prefix: String) {
    tasks.spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{prefix}{line}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_rpc_objects_pass() {
        assert!(is_json_rpc(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_json_rpc("hello"));
        assert!(!is_json_rpc(r#"{"id":1}"#));
        assert!(!is_json_rpc(r#"{"jsonrpc":"2.0""#));
        assert!(!is_json_rpc(r#"["jsonrpc"]"#));
        assert_eq!(clip(&"x".repeat(100)), format!("{}…", "x".repeat(80)));
    }
}
