//! mm's proxy, the only way out of a fence's network (docs/sandbox.md, "The network"): on
//! Linux it accepts on a listener the namespace's helper bound on the namespace's own
//! 127.0.0.1 (so only fenced commands reach it); on macOS on one mm binds on the host's
//! 127.0.0.1, the one address Seatbelt's profile lets commands connect to. It serves HTTP: `CONNECT host:port` (HTTPS and
//! anything tunnelled) and requests in absolute form (`GET http://host/path`), each checked by
//! the [`Door`], which resolves the name itself, with the hosts the session's passage allows;
//! a host on no list waits while the session's user is asked, when one can be. A refused host
//! gets a 403 whose body is the refusal's line, recorded in the passage. Bytes are copied both ways by tokio
//! (`copy_bidirectional`), one connection upstream per client connection.
//!
//! It runs on a thread of its own with a runtime of its own, stopped when the namespace's
//! holder drops its [`Proxy`]: the namespace outlives no session's runtime that made it.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::network::Door;
use super::passage::PassageKey;

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// The buffers of each direction of a tunnel: large enough that a download through the proxy
/// stays within twice the direct time (bench/sandbox.sh).
const COPY_BUFFER: usize = 1024 * 1024;

/// A running proxy; dropping it stops it.
#[derive(Debug)]
pub struct Proxy {
    port: u16,
    stop: CancellationToken,
}

impl Proxy {
    /// Serves on `listener` (bound in the namespace, listening) with `door`'s rule.
    pub fn start(
        listener: std::net::TcpListener,
        door: Door,
        passage: PassageKey,
    ) -> std::io::Result<Proxy> {
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let stop = CancellationToken::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let token = stop.clone();
        std::thread::Builder::new()
            .name("mm-proxy".into())
            .spawn(move || {
                runtime.block_on(async move {
                    if let Ok(listener) = TcpListener::from_std(listener) {
                        serve(listener, Arc::new(door), passage, token).await;
                    }
                });
            })?;
        Ok(Proxy { port, stop })
    }

    /// The port it listens on, on its loopback.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The environment a fenced child gets: the proxy variables, upper and lower case, and
    /// `NO_PROXY` set to `no_proxy` (what the child reaches without the proxy: on Linux the
    /// namespace's own loopback; on macOS nothing, since the profile lets only the proxy's port
    /// through, and a `NO_PROXY` of the user's would only send clients at a closed door).
    pub fn env(&self, no_proxy: &str) -> Vec<(&'static str, String)> {
        let url = format!("http://127.0.0.1:{}", self.port());
        let mut vars = Vec::new();
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
            vars.push((name, url.clone()));
        }
        for name in ["http_proxy", "https_proxy", "all_proxy"] {
            vars.push((name, url.clone()));
        }
        vars.push(("NO_PROXY", no_proxy.to_string()));
        vars.push(("no_proxy", no_proxy.to_string()));
        vars
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(
    listener: TcpListener,
    door: Arc<Door>,
    passage: PassageKey,
    stop: CancellationToken,
) {
    // The connections' tasks are owned here: stopping the proxy drops them all.
    let mut clients = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = clients.join_next(), if !clients.is_empty() => {}
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    let (door, passage) = (Arc::clone(&door), passage.clone());
                    clients.spawn(async move {
                        let _ = client(stream, &door, &passage).await;
                    });
                }
            }
        }
    }
}

/// One client connection: its request's head, the rule, then the tunnel.
async fn client(mut stream: TcpStream, door: &Door, passage: &PassageKey) -> std::io::Result<()> {
    // A session that ended has no commands left to serve.
    let Some(passage) = passage.passage() else {
        return Ok(());
    };
    let _ = stream.set_nodelay(true);
    let (head, rest) = match read_head(&mut stream).await? {
        Some(read) => read,
        None => return Ok(()),
    };
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let request = lines.next().unwrap_or("");
    let mut parts = request.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let (host, port, forward) = if method.eq_ignore_ascii_case("CONNECT") {
        match split_authority(target, 443) {
            Some((h, p)) => (h, p, None),
            None => {
                return answer(
                    &mut stream,
                    400,
                    "Bad Request",
                    "[mm's proxy: CONNECT needs host:port]",
                )
                .await;
            }
        }
    } else {
        let Some(url) = url::Url::parse(target)
            .ok()
            .filter(|u| u.scheme() == "http")
        else {
            return answer(
                &mut stream,
                400,
                "Bad Request",
                "[mm's proxy: only CONNECT and http:// requests in absolute form]",
            )
            .await;
        };
        let Some(host) = url.host_str().map(str::to_string) else {
            return answer(&mut stream, 400, "Bad Request", "[mm's proxy: no host]").await;
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let mut out = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            let name = line.split(':').next().unwrap_or("").trim();
            let hop = [
                "proxy-connection",
                "proxy-authorization",
                "connection",
                "keep-alive",
            ];
            if !hop.iter().any(|h| name.eq_ignore_ascii_case(h)) {
                out.push_str(line);
                out.push_str("\r\n");
            }
        }
        // One request per connection: a second one on it could name another host.
        out.push_str("Connection: close\r\n\r\n");
        (host, port, Some(out))
    };
    // While the user is asked, this connection alone waits.
    let ask = |host, port| passage.ask(host, port);
    let addrs = match passage.resolve(door, &host, port, ask).await {
        Ok(addrs) => addrs,
        Err(line) => return answer(&mut stream, 403, "Forbidden", &line).await,
    };
    let mut upstream = match connect(&addrs).await {
        Ok(s) => s,
        Err(e) => {
            let line = format!("[mm's proxy could not connect to {host}:{port}: {e}]");
            return answer(&mut stream, 502, "Bad Gateway", &line).await;
        }
    };
    let _ = upstream.set_nodelay(true);
    match forward {
        None => {
            stream
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?
        }
        Some(head) => upstream.write_all(head.as_bytes()).await?,
    }
    if !rest.is_empty() {
        upstream.write_all(&rest).await?;
    }
    tokio::io::copy_bidirectional_with_sizes(&mut stream, &mut upstream, COPY_BUFFER, COPY_BUFFER)
        .await?;
    Ok(())
}

/// The request's head (up to the blank line) and what came after it; `None` when the client
/// left or sent too much.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = from + at + 4;
            let rest = buf.split_off(end);
            buf.truncate(end - 4);
            return Ok(Some((buf, rest)));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

/// `host:port` (`[v6]:port`), the port `default` when absent.
fn split_authority(target: &str, default: u16) -> Option<(String, u16)> {
    if let Some(rest) = target.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default,
        };
        return Some((h.to_string(), port));
    }
    match target.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => Some((h.to_string(), p.parse().ok()?)),
        Some(_) => None,
        None if !target.is_empty() => Some((target.to_string(), default)),
        None => None,
    }
}

async fn connect(addrs: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no address");
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

async fn answer(
    stream: &mut TcpStream,
    code: u16,
    reason: &str,
    line: &str,
) -> std::io::Result<()> {
    let body = format!("{line}\n");
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
