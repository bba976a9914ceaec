//! The fake server's HTTP/1.1: reading one request off a keep-alive connection, writing a JSON
//! response or a response head. What the server answers is fake_server.rs's business.
#![allow(dead_code)]

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One request as received.
pub struct Request {
    pub method: String,
    /// Without the query string.
    pub path: String,
    /// What follows `?`, as sent (empty when none).
    pub query: String,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub close: bool,
    pub body: Vec<u8>,
}

/// What happens to the connection after a response.
#[derive(PartialEq)]
pub enum After {
    KeepAlive,
    Close,
}

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 256 * 1024 * 1024;

/// Reads one request; `None` at end of stream or on a malformed request.
pub async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let head_end = loop {
        // Not HTTP (a TLS handshake sent to this plain port, garbage): refused at once, as
        // real servers do, rather than waited on.
        if buf.first().is_some_and(|b| !b.is_ascii_uppercase()) {
            let refusal =
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(refusal).await;
            return None;
        }
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > MAX_HEAD || !read_more(stream, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_string(), query.to_string());
    let mut headers = Vec::new();
    let mut length = 0usize;
    let mut close = false;
    let mut expect_continue = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        match name.as_str() {
            "content-length" => length = value.parse().ok()?,
            "connection" => close = value.eq_ignore_ascii_case("close"),
            "expect" => expect_continue = value.eq_ignore_ascii_case("100-continue"),
            _ => {}
        }
        headers.push((name, value.to_string()));
    }
    if length > MAX_BODY {
        return None;
    }
    // curl asks before sending a body over 1 KiB, and waits a second for this answer.
    if expect_continue
        && buf.len() < head_end + length
        && stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .is_err()
    {
        return None;
    }
    while buf.len() < head_end + length {
        if !read_more(stream, buf).await {
            return None;
        }
    }
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Some(Request {
        method,
        path,
        query,
        headers,
        close,
        body,
    })
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 16 * 1024];
    match stream.read(&mut tmp).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            true
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        413 => "Payload Too Large",
        417 => "Expectation Failed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// A response head: the status line, `extra` (whole header lines), `headers`, the blank line.
pub fn head(status: u16, headers: &[(String, String)], extra: &str) -> String {
    let mut h = format!("HTTP/1.1 {status} {}\r\n{extra}", reason(status));
    for (name, value) in headers {
        h.push_str(&format!("{name}: {value}\r\n"));
    }
    h.push_str("\r\n");
    h
}

pub async fn write_json(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &serde_json::Value,
) -> After {
    let body = body.to_string();
    let extra = format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    let mut out = head(status, headers, &extra).into_bytes();
    out.extend_from_slice(body.as_bytes());
    match stream.write_all(&out).await {
        Ok(()) => After::KeepAlive,
        Err(_) => After::Close,
    }
}
