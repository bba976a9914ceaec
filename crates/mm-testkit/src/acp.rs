//! A raw JSON-RPC test client for `mm -acp` (in-process over duplex pipes, or a spawned binary),
//! which validates every message mm writes against the official ACP schema, and the in-process
//! harness: `serve_io` over an engine whose model is the [`ScriptedModel`].
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mm_acp::{AcpError, Logger, serve_io};
use mm_core::config::Config;
use mm_engine::Engine;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;

use super::model::ScriptedModel;

// ---------------------------------------------------------------- schema

struct Schemas {
    stable: Value,
    unstable: Value,
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/acp-schema");
        let read = |f: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
        };
        Schemas {
            stable: read("schema.json"),
            unstable: read("schema.unstable.json"),
        }
    })
}

type Cache = Mutex<HashMap<(bool, String), Arc<jsonschema::Validator>>>;

fn validator(unstable: bool, def: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (unstable, def.to_string());
    if let Some(v) = cache.lock().unwrap().get(&key) {
        return v.clone();
    }
    let root = if unstable {
        &schemas().unstable
    } else {
        &schemas().stable
    };
    let schema = json!({
        "$schema": root["$schema"],
        "$defs": root["$defs"],
        "$ref": format!("#/$defs/{def}"),
    });
    let v = Arc::new(jsonschema::validator_for(&schema).unwrap());
    cache.lock().unwrap().insert(key, v.clone());
    v
}

/// The `$defs` type for a method, side and suffix (`Request`, `Response`, `Notification`).
fn def_for(method: &str, side: &str, suffix: &str) -> Option<String> {
    let defs = schemas().unstable["$defs"].as_object().unwrap();
    defs.iter()
        .find(|(name, d)| d["x-method"] == method && d["x-side"] == side && name.ends_with(suffix))
        .map(|(name, _)| name.clone())
}

fn check(unstable: bool, def: &str, instance: &Value, whole: &Value) {
    let v = validator(unstable, def);
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "message does not match {def}: {errors:?}\n{whole}"
    );
}

/// The result of `_session/steering`, an extension the ACP schema does not hold: the shapes
/// claude-agent-acp 0.101 and codex-acp 2.6 write.
fn check_steering(msg: &Value) {
    let schema = json!({"oneOf": [
        {"type": "object", "properties": {"outcome": {"enum": ["injected", "startedNewTurn"]}},
         "required": ["outcome"], "additionalProperties": false},
        {"type": "object", "properties": {"outcome": {"const": "promptRequired"},
         "reason": {"const": "noRunningTurn"}},
         "required": ["outcome", "reason"], "additionalProperties": false}
    ]});
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v
        .iter_errors(&msg["result"])
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "steering result: {errors:?}\n{msg}");
}

/// Validates one message mm wrote; `sent` maps the ids of our requests to their methods.
pub fn validate_message(msg: &Value, sent: &HashMap<i64, String>) {
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    if let Some(method) = msg.get("method").and_then(Value::as_str) {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        if msg.get("id").is_some() {
            let def = def_for(method, "client", "Request")
                .unwrap_or_else(|| panic!("mm sent a request the schema does not know: {msg}"));
            check(false, &def, &params, msg);
        } else {
            let def = def_for(method, "client", "Notification")
                .or_else(|| def_for(method, "protocol", "Notification"))
                .unwrap_or_else(|| {
                    panic!("mm sent a notification the schema does not know: {msg}")
                });
            // What only a client that advertised `subagents` receives is in the unstable
            // schema only.
            let unstable = method == "session/update"
                && params["update"]["sessionUpdate"] == "subagent_update";
            check(unstable, &def, &params, msg);
        }
    } else if let Some(error) = msg.get("error") {
        check(false, "Error", error, msg);
    } else {
        let id = msg["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("response to no request of ours: {msg}"));
        let method = sent
            .get(&id)
            .unwrap_or_else(|| panic!("response to an unknown id: {msg}"));
        if method == "_session/steering" {
            check_steering(msg);
            return;
        }
        let def = def_for(method, "agent", "Response")
            .unwrap_or_else(|| panic!("no schema for the result of {method}: {msg}"));
        // `usage` on the prompt response lives in the unstable schema only.
        let unstable = method == "session/prompt" && msg["result"].get("usage").is_some();
        check(unstable, &def, &msg["result"], msg);
    }
}

// ---------------------------------------------------------------- the client

pub type Log = Arc<Mutex<Vec<String>>>;

pub struct TestClient {
    writer: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    reader: BufReader<Box<dyn AsyncRead + Unpin + Send>>,
    next_id: i64,
    pub sent: HashMap<i64, String>,
    /// Every message mm wrote, in order.
    pub received: Vec<Value>,
    /// Messages read while waiting for something else, not yet taken.
    backlog: VecDeque<Value>,
    /// Responses read while waiting for another one.
    responses: HashMap<i64, Value>,
}

pub const TIMEOUT: Duration = Duration::from_secs(20);

impl TestClient {
    pub fn new(
        writer: Box<dyn AsyncWrite + Unpin + Send>,
        reader: Box<dyn AsyncRead + Unpin + Send>,
    ) -> Self {
        TestClient {
            writer: Some(writer),
            reader: BufReader::new(reader),
            next_id: 1,
            sent: HashMap::new(),
            received: Vec::new(),
            backlog: VecDeque::new(),
            responses: HashMap::new(),
        }
    }

    pub async fn send_line(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("stdin closed");
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
        w.flush().await.unwrap();
    }

    /// Writes bytes as they are (no newline added): a line in pieces, or several at once.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let w = self.writer.as_mut().expect("stdin closed");
        w.write_all(bytes).await.unwrap();
        w.flush().await.unwrap();
    }

    pub async fn send(&mut self, v: &Value) {
        self.send_line(&v.to_string()).await;
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.sent.insert(id, method.to_string());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Answers a request mm sent.
    pub async fn respond(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// Answers a `session/request_permission` request with the option `option_id` selected.
    pub async fn select_option(&mut self, request: &Value, option_id: &str) {
        self.respond(
            &request["id"],
            json!({"outcome": {"outcome": "selected", "optionId": option_id}}),
        )
        .await;
    }

    pub async fn respond_error(&mut self, id: &Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
        .await;
    }

    /// Closes mm's stdin.
    pub async fn close(&mut self) {
        if let Some(mut w) = self.writer.take() {
            let _ = w.shutdown().await;
        }
    }

    /// Reads the next line mm wrote (validated); `None` at EOF.
    async fn read(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = tokio::time::timeout(TIMEOUT, self.reader.read_line(&mut line))
            .await
            .expect("mm wrote nothing in time")
            .unwrap();
        if n == 0 {
            return None;
        }
        assert!(line.ends_with('\n'), "unterminated line {line:?}");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("mm wrote a line that is not JSON ({e}): {line:?}"));
        if std::env::var_os("ACP_TRACE").is_some() {
            eprintln!("<- {line}");
        }
        validate_message(&v, &self.sent);
        self.received.push(v.clone());
        Some(v)
    }

    /// The next message (from the backlog first).
    pub async fn next(&mut self) -> Value {
        if let Some(v) = self.backlog.pop_front() {
            return v;
        }
        self.read().await.expect("mm closed stdout")
    }

    /// Reads until EOF; returns what came.
    pub async fn drain(&mut self) -> Vec<Value> {
        let mut out: Vec<Value> = self.backlog.drain(..).collect();
        while let Some(v) = self.read().await {
            out.push(v);
        }
        out
    }

    /// Everything up to the response to `id`: (messages before it, the response).
    pub async fn until_response(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        if let Some(r) = self.responses.remove(&id) {
            return (before, r);
        }
        loop {
            let v = self.next().await;
            if v.get("method").is_none() {
                if v["id"] == id {
                    return (before, v);
                }
                if let Some(other) = v["id"].as_i64() {
                    self.responses.insert(other, v);
                    continue;
                }
            }
            before.push(v);
        }
    }

    /// The next request mm sent; messages before it are returned too.
    pub async fn until_request(&mut self, method: &str) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let v = self.next().await;
            if v["method"] == method && v.get("id").is_some() {
                return (before, v);
            }
            before.push(v);
        }
    }

    /// Waits for a `session/update` of the given kind.
    pub async fn until_update(&mut self, kind: &str) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let v = self.next().await;
            if v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == kind {
                return (before, v);
            }
            before.push(v);
        }
    }

    /// Sends a request and waits for its response.
    pub async fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.request(method, params).await;
        self.until_response(id).await
    }

    pub async fn initialize(&mut self, forms: bool) -> Value {
        let mut caps =
            json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false});
        if forms {
            caps["elicitation"] = json!({"form": {}});
        }
        let (_, r) = self
            .call(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": caps,
                       "clientInfo": {"name": "test-client", "version": "1.2.3"}}),
            )
            .await;
        r
    }

    /// `session/new`; returns the id and the messages that followed up to the commands update.
    pub async fn new_session(&mut self, cwd: &Path) -> (String, Value) {
        let (_, r) = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let id = r["result"]["sessionId"]
            .as_str()
            .expect("no session id")
            .to_string();
        let (_, commands) = self.until_update("available_commands_update").await;
        (id, commands)
    }

    /// `session/load` of `session` in `cwd`, with no MCP server: the messages before the answer,
    /// and the answer.
    pub async fn load_session(
        &mut self,
        session: &str,
        cwd: impl AsRef<Path>,
    ) -> (Vec<Value>, Value) {
        let params = json!({"sessionId": session, "cwd": cwd.as_ref(), "mcpServers": []});
        self.call("session/load", params).await
    }

    /// Sends `session/prompt` with one text block, and returns its id without waiting for the
    /// answer (`until_response` reads it).
    pub async fn send_prompt(&mut self, session: &str, text: &str) -> i64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    pub async fn prompt(&mut self, session: &str, text: &str) -> (Vec<Value>, Value) {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }
}

/// The modes of a session as `session/new`, `session/load` and `session/resume` answer them
/// (docs/acp.md, "Beyond the reference"), `current` the mode it is in.
pub fn modes(current: &str) -> Value {
    json!({"currentModeId": current, "availableModes": [
        {"id": "ask", "name": "Ask", "description": "Ask before every command, file change and other gated tool"},
        {"id": "yolo", "name": "Yolo", "description": "Run every tool without asking"},
        {"id": "read-only", "name": "Read-only", "description": read_only_description()},
    ]})
}

/// What `read-only` says of itself here: commands run inside the read-only fence where the
/// kernel has Landlock, and are refused where it has none.
pub fn read_only_description() -> &'static str {
    if mm_tools::sandbox::landlock_abi() > 0 {
        "Read and answer only: commands run inside a read-only fence (writes fail); file changes and other gated tools are refused"
    } else {
        "Read and answer only: commands, file changes and other gated tools are refused (no read-only fence on this system)"
    }
}

/// The mode as a configuration option, set to `current`.
pub fn mode_option(current: &str) -> Value {
    json!({"id": "mode", "name": "Mode", "description": "What runs without asking",
           "category": "mode", "type": "select", "currentValue": current, "options": [
        {"value": "ask", "name": "Ask", "description": "Ask before every command, file change and other gated tool"},
        {"value": "yolo", "name": "Yolo", "description": "Run every tool without asking"},
        {"value": "read-only", "name": "Read-only", "description": read_only_description()},
    ]})
}

/// The model as a configuration option: `current` among `models`.
pub fn model_option(current: &str, models: &[&str]) -> Value {
    let options: Vec<Value> = models
        .iter()
        .map(|m| json!({"value": m, "name": m}))
        .collect();
    json!({"id": "model", "name": "Model",
           "description": "The server's model this session asks, from its next turn",
           "category": "model", "type": "select", "currentValue": current, "options": options})
}

/// What the session answers carry beyond the reference while the server's models are not
/// known (or it lists none): the modes and the mode option.
pub fn session_options(mode: &str) -> Value {
    json!({"modes": modes(mode), "configOptions": [mode_option(mode)]})
}

/// The `update` objects among messages.
pub fn updates(msgs: &[Value]) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// The kinds of these updates (their `sessionUpdate`), in order.
pub fn update_kinds(updates: &[Value]) -> Vec<&str> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or_default())
        .collect()
}

/// The concatenated text of the `agent_message_chunk`s among messages.
pub fn agent_text(msgs: &[Value]) -> String {
    updates(msgs)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| {
            u["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

// ---------------------------------------------------------------- in-process harness

pub struct Harness {
    pub client: TestClient,
    pub log: Log,
    pub model: Arc<ScriptedModel>,
    pub server: Option<JoinHandle<Result<(), AcpError>>>,
}

pub fn test_config() -> Config {
    Config {
        system_prompt: "You are a test.".into(),
        context_window: 8192,
        ..Config::default()
    }
}

impl Harness {
    pub fn start(config: Config, model: Arc<ScriptedModel>) -> Self {
        let config = Arc::new(config);
        let engine = Arc::new(Engine::new(config.clone(), model.clone()));
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let (client_read, client_write) = tokio::io::split(client_end);
        let log: Log = Arc::default();
        let l = log.clone();
        let logger = Logger::new(move |line| l.lock().unwrap().push(line.to_string()));
        let server = tokio::spawn(serve_io(engine, config, server_read, server_write, logger));
        Harness {
            client: TestClient::new(Box::new(client_write), Box::new(client_read)),
            log,
            model,
            server: Some(server),
        }
    }

    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Closes stdin and waits for `serve_io` to return.
    pub async fn finish(&mut self) -> Result<(), AcpError> {
        self.client.close().await;
        let server = self.server.take().expect("already finished");
        tokio::time::timeout(TIMEOUT, server)
            .await
            .expect("serve_io did not return after EOF")
            .unwrap()
    }
}
