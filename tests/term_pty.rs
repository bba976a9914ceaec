//! The real `mm` binary in a pseudo-terminal, against a scripted model server: a turn with a tool
//! call, the permission prompt answered each way, Ctrl-C during a slow stream, `/new`, leaving.
//!
//! The server here is deliberately small (one thread per connection, `Connection: close`); the
//! shared fake server in `tests/common` replaces it once it lands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use expectrl::session::OsSession;
use expectrl::{Eof, Expect, Session};
use serde_json::{Value, json};

/// One scripted answer: SSE `data:` payloads, written `interval` apart.
struct Reply {
    events: Vec<Value>,
    interval: Duration,
}

fn text_reply(text: &str) -> Reply {
    Reply {
        events: vec![
            json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":34}}),
        ],
        interval: Duration::ZERO,
    }
}

fn bash_reply(id: &str, command: &str) -> Reply {
    let args = json!({ "command": command }).to_string();
    Reply {
        events: vec![
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":"bash","arguments":args}}]},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":20}}),
        ],
        interval: Duration::ZERO,
    }
}

/// Many words, slowly: cancelled long before the end.
fn slow_reply() -> Reply {
    let mut events = Vec::new();
    for i in 0..200 {
        events.push(
            json!({"choices":[{"index":0,"delta":{"content":format!("word{i} ")},"finish_reason":null}]}),
        );
    }
    events.push(json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}));
    Reply {
        events,
        interval: Duration::from_millis(100),
    }
}

#[derive(Clone, Default)]
struct Server {
    script: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Server {
    fn start(script: Vec<Reply>) -> (Server, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = Server {
            script: Arc::new(Mutex::new(script.into())),
            requests: Arc::default(),
        };
        let s = server.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                thread::spawn(move || s.serve(stream));
            }
        });
        (server, url)
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).is_err() {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        let _ = reader.read_exact(&mut body);
        let mut out = stream;
        let path = request_line.split_whitespace().nth(1).unwrap_or("");
        if request_line.starts_with("POST") && path.ends_with("/chat/completions") {
            self.requests
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let reply = self
                .script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| text_reply("done"));
            let _ = out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            for event in reply.events {
                thread::sleep(reply.interval);
                if out
                    .write_all(format!("data: {event}\n\n").as_bytes())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return;
                }
            }
            let _ = out.write_all(b"data: [DONE]\n\n");
            return;
        }
        let body = if path.ends_with("/models") {
            json!({"object":"list","data":[{"id":"fake-model","object":"model","meta":{"n_ctx":32768}}]})
        } else if path.ends_with("/props") {
            json!({"default_generation_settings":{"n_ctx":32768}})
        } else {
            let _ = out.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        };
        let body = body.to_string();
        let _ = out.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    }
}

/// `mm` in a pseudo-terminal, in a fresh home and folder, talking to `url`.
fn spawn_mm(home: &Path, url: &str, extra: &[&str]) -> OsSession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mm"));
    cmd.args(["--url", url])
        .args(extra)
        .current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let mut session = Session::spawn(cmd).expect("spawn mm in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(20)));
    session
}

fn user_messages(requests: &[Value]) -> Vec<String> {
    requests
        .last()
        .and_then(|r| r["messages"].as_array())
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_turn_with_a_tool_call_then_leave() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo hello-from-bash"),
        text_reply("All done."),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("mm v").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("say hello").unwrap();
    mm.expect("$ bash: echo hello-from-bash").unwrap();
    mm.expect("hello-from-bash").unwrap();
    mm.expect("All done.").unwrap();
    // The recap: this turn's tokens, the context, the time.
    mm.expect("2.2k in / 54 out").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(server.requests().len(), 2);
    // The history was written.
    let history = std::fs::read_to_string(home.path().join("state/mm/history")).unwrap();
    assert!(history.contains("say hello"), "{history}");
}

#[test]
fn permission_prompt_answered_each_way() {
    let (server, url) = Server::start(vec![
        bash_reply("c1", "echo one"),
        text_reply("first"),
        bash_reply("c2", "echo two"),
        text_reply("second"),
        bash_reply("c3", "echo three"),
        text_reply("third"),
        bash_reply("c4", "echo four"),
        text_reply("fourth"),
        bash_reply("c5", "echo five"),
        text_reply("fifth"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.expect("> ").unwrap();

    mm.send_line("one").unwrap();
    mm.expect("Allow bash: echo one?  [y]es  [a]lways  [n]o  ne[v]er")
        .unwrap();
    mm.send("y").unwrap();
    mm.expect(" yes").unwrap();
    mm.expect("first").unwrap();
    mm.expect("> ").unwrap();

    mm.send_line("two").unwrap();
    mm.expect("Allow bash: echo two?").unwrap();
    mm.send("n").unwrap();
    mm.expect(" no").unwrap();
    mm.expect("[command rejected by the user]").unwrap();
    mm.expect("second").unwrap();
    mm.expect("> ").unwrap();

    mm.send_line("three").unwrap();
    mm.expect("Allow bash: echo three?").unwrap();
    mm.send("a").unwrap();
    mm.expect(" always").unwrap();
    mm.expect("third").unwrap();
    mm.expect("> ").unwrap();

    // Allowed always: no question this time.
    mm.send_line("four").unwrap();
    mm.expect("$ bash: echo four").unwrap();
    mm.expect("fourth").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/quit").unwrap();
    mm.expect(Eof).unwrap();

    let tool_results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        tool_results
            .iter()
            .any(|t| t.contains("[command rejected by the user]"))
    );
    assert!(tool_results.iter().any(|t| t.contains("four")));
}

#[test]
fn permission_never_rejects_later_calls_without_asking() {
    let (_server, url) = Server::start(vec![
        bash_reply("c1", "echo one"),
        text_reply("first"),
        bash_reply("c2", "echo two"),
        text_reply("second"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--no-yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("one").unwrap();
    mm.expect("Allow bash: echo one?").unwrap();
    mm.send("v").unwrap();
    mm.expect(" never").unwrap();
    mm.expect("first").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("two").unwrap();
    mm.expect("$ bash: echo two").unwrap();
    mm.expect("[command rejected by the user]").unwrap();
    mm.expect("second").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
}

#[test]
fn ctrl_c_cancels_a_slow_stream_and_the_prompt_comes_back() {
    let (server, url) = Server::start(vec![slow_reply(), text_reply("after the cancel")]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("talk slowly").unwrap();
    mm.expect("word2 ").unwrap();
    mm.send("\x03").unwrap();
    mm.expect("cancelled").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("again").unwrap();
    mm.expect("after the cancel").unwrap();
    mm.expect("> ").unwrap();
    // The cancelled turn's text stayed in the history.
    let users = user_messages(&server.requests());
    assert_eq!(users, vec!["talk slowly".to_string(), "again".to_string()]);
    // Twice Ctrl-C on an empty line leaves.
    mm.send("\x03").unwrap();
    mm.expect("Ctrl-C again").unwrap();
    mm.send("\x03").unwrap();
    mm.expect(Eof).unwrap();
}

#[test]
fn new_forgets_the_conversation() {
    let (server, url) = Server::start(vec![text_reply("one"), text_reply("two")]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("first question").unwrap();
    mm.expect("one").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/new").unwrap();
    mm.expect("🆕 New session: 2 message(s) forgotten.")
        .unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("second question").unwrap();
    mm.expect("two").unwrap();
    mm.expect("> ").unwrap();
    mm.send("\x04").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(
        user_messages(&server.requests()),
        vec!["second question".to_string()]
    );
}

#[test]
fn local_commands_answer_without_the_model() {
    let (server, url) = Server::start(vec![]);
    let home = tempfile::tempdir().unwrap();
    let mut mm = spawn_mm(home.path(), &url, &["--yolo"]);
    mm.expect("> ").unwrap();
    mm.send_line("/help").unwrap();
    mm.expect("/compact").unwrap();
    mm.expect("> ").unwrap();
    mm.send_line("/model").unwrap();
    mm.expect("fake-model").unwrap();
    mm.expect("context window  32k").unwrap();
    mm.send_line("/sessions").unwrap();
    mm.expect("not available yet").unwrap();
    mm.send_line("/bogus").unwrap();
    mm.expect("unknown command /bogus").unwrap();
    mm.send_line("/quit").unwrap();
    mm.expect(Eof).unwrap();
    assert_eq!(server.requests().len(), 0);
}
