//! Language servers for the `lsp` tool (tools.md): one server per (language, cwd), started on
//! first use through the process [`Supervisor`] and kept for the process; restarted on the next
//! call when it died or hung. Every wait is bounded; every failure is one line naming the
//! configuration key that would fix it.

pub mod rpc;
pub mod text;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, EntrySandbox};
use crate::process::{Child, Group, Supervisor};
use crate::sandbox::Sandbox;
use rpc::{Connection, RequestError};

/// How long a server is given to write its last words on stderr after it exited.
const LAST_WORDS: Duration = Duration::from_millis(500);

/// The bounded waits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Starting a server, through its answer to `initialize`.
    pub start: Duration,
    /// Each answer.
    pub request: Duration,
    /// Waiting for `publishDiagnostics`.
    pub diagnostics: Duration,
}

/// Why a call could not be answered; `Display` is the one line the model reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LspError {
    #[error(
        "no language server for {0} files; configure one under lsp.servers.<name> (command, args, extensions)"
    )]
    NoServer(String),
    #[error(
        "the language server for {ext} files is not installed ({tried} not found on PATH); install it or set {key}.command"
    )]
    Missing {
        ext: String,
        tried: String,
        key: String,
    },
    #[error("could not start {command} ({key}): {error}")]
    StartFailed {
        command: String,
        key: String,
        error: String,
    },
    #[error(
        "{command} exited during initialize ({status}{reason}), so it counts as missing; install it or set {key}"
    )]
    ExitedInInitialize {
        command: String,
        key: String,
        status: String,
        reason: String,
    },
    #[error("{command} refused to initialize: {message} ({key})")]
    InitializeRefused {
        command: String,
        key: String,
        message: String,
    },
    #[error(
        "{command} did not answer {what} within {after}; it was stopped and starts again on the next call ({key})"
    )]
    Timeout {
        command: String,
        key: String,
        what: String,
        after: String,
    },
    #[error(
        "{command} exited while answering {what} ({status}{reason}); it starts again on the next call ({key})"
    )]
    Exited {
        command: String,
        key: String,
        what: String,
        status: String,
        reason: String,
    },
    #[error("{command} answered {what} with an error: {message}")]
    Response {
        command: String,
        what: String,
        message: String,
    },
    /// The server had died before this call began (noticed only when it answered nothing):
    /// the call may be tried again on a new server; the text says what happened.
    #[error("{0}")]
    Gone(String),
    #[error("cancelled")]
    Cancelled,
}

/// One configured or default server.
#[derive(Debug, Clone, PartialEq)]
struct Spec {
    /// The name under `lsp.servers`.
    name: String,
    /// Commands tried in order (a default may have alternatives: `pylsp`, then `pyright`).
    commands: Vec<(String, Vec<String>)>,
    /// With their dot, lowercase.
    extensions: Vec<String>,
    /// How it meets the fence (a default: inside, nothing more writable).
    sandbox: EntrySandbox,
}

impl Spec {
    fn key(&self) -> String {
        format!("lsp.servers.{}", self.name)
    }
}

/// The servers used when their command is on PATH (tools.md, `lsp`).
fn defaults() -> Vec<Spec> {
    let spec = |name: &str, commands: &[(&str, &[&str])], exts: &[&str]| Spec {
        name: name.into(),
        commands: commands
            .iter()
            .map(|(c, a)| (c.to_string(), a.iter().map(|s| s.to_string()).collect()))
            .collect(),
        extensions: exts.iter().map(|s| s.to_string()).collect(),
        sandbox: EntrySandbox::default(),
    };
    vec![
        spec("rust", &[("rust-analyzer", &[])], &[".rs"]),
        spec("go", &[("gopls", &[])], &[".go"]),
        spec(
            "python",
            &[("pylsp", &[]), ("pyright-langserver", &["--stdio"])],
            &[".py", ".pyi"],
        ),
        spec(
            "typescript",
            &[("typescript-language-server", &["--stdio"])],
            &[".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"],
        ),
        spec(
            "c",
            &[("clangd", &[])],
            &[".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"],
        ),
    ]
}

fn dotted(ext: &str) -> String {
    let e = ext.trim().to_lowercase();
    if e.starts_with('.') {
        e
    } else {
        format!(".{e}")
    }
}

/// The protocol's `languageId` of a file.
fn language_id(path: &Path, server: &str) -> String {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let id = match ext.as_str() {
        "py" | "pyi" => "python",
        "rs" => "rust",
        "go" => "go",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        _ => server,
    };
    id.to_string()
}

type Slot = Arc<tokio::sync::Mutex<Option<Server>>>;

/// The language servers of the process.
pub struct LspServers {
    /// Configured servers first, then the defaults they do not replace.
    specs: Vec<Spec>,
    processes: Arc<Supervisor>,
    /// The servers start inside its fence (docs/sandbox.md).
    sandbox: Arc<Sandbox>,
    slots: Mutex<HashMap<(String, PathBuf), Slot>>,
    /// The last request's time from writing it to reading its answer (for the benchmark).
    round_trip: Mutex<Option<Duration>>,
}

impl LspServers {
    /// Nothing starts here: a server starts on the first call that needs it.
    pub fn new(config: &Config, processes: Arc<Supervisor>, sandbox: Arc<Sandbox>) -> Self {
        let mut specs: Vec<Spec> = Vec::new();
        let defaults = defaults();
        for (name, c) in &config.lsp_servers {
            let extensions: Vec<String> = if c.extensions.is_empty() {
                defaults
                    .iter()
                    .find(|d| &d.name == name)
                    .map(|d| d.extensions.clone())
                    .unwrap_or_default()
            } else {
                c.extensions.iter().map(|e| dotted(e)).collect()
            };
            specs.push(Spec {
                name: name.clone(),
                commands: vec![(c.command.clone(), c.args.clone())],
                extensions,
                sandbox: c.sandbox.clone(),
            });
        }
        for d in defaults {
            if !specs.iter().any(|s| s.name == d.name) {
                specs.push(d);
            }
        }
        LspServers {
            specs,
            processes,
            sandbox,
            slots: Mutex::new(HashMap::new()),
            round_trip: Mutex::new(None),
        }
    }

    /// The last request's time from writing it to reading the answer.
    pub fn last_round_trip(&self) -> Option<Duration> {
        self.round_trip.lock().ok().and_then(|r| *r)
    }

    fn spec_for(&self, path: &Path) -> Result<&Spec, LspError> {
        let ext = path
            .extension()
            .map(|e| dotted(&e.to_string_lossy()))
            .unwrap_or_default();
        if ext.is_empty() {
            return Err(LspError::NoServer(format!(
                "extension-less ({})",
                path.file_name().unwrap_or_default().to_string_lossy()
            )));
        }
        self.specs
            .iter()
            .find(|s| s.extensions.contains(&ext))
            .ok_or(LspError::NoServer(ext))
    }

    /// The server for `path` in `cwd`, started (or started again) if needed. The handle holds
    /// the server for the length of the call.
    pub async fn server_for(
        &self,
        path: &Path,
        cwd: &Path,
        t: &Timeouts,
        cancel: &CancellationToken,
    ) -> Result<ServerHandle<'_>, LspError> {
        let spec = self.spec_for(path)?;
        let slot = {
            let mut slots = self.slots.lock().map_err(|_| LspError::Cancelled)?;
            Arc::clone(
                slots
                    .entry((spec.name.clone(), cwd.to_path_buf()))
                    .or_default(),
            )
        };
        let mut guard = tokio::select! {
            g = slot.lock_owned() => g,
            () = cancel.cancelled() => return Err(LspError::Cancelled),
        };
        let mut note = None;
        let mut fresh = false;
        let dead = match guard.as_mut() {
            Some(s) => s.conn.is_closed() || s.has_exited(),
            None => true,
        };
        if dead {
            if let Some(mut old) = guard.take() {
                let (status, reason) = old.last_words().await;
                note = Some(format!(
                    "{} ({}) had exited ({status}{reason}) since the last call; it was started again",
                    old.command, old.key
                ));
            }
            let ext = path
                .extension()
                .map(|e| dotted(&e.to_string_lossy()))
                .unwrap_or_default();
            *guard = Some(self.start(spec, &ext, cwd, t, cancel).await?);
            fresh = true;
        }
        Ok(ServerHandle {
            guard,
            servers: self,
            note,
            fresh,
        })
    }

    async fn start(
        &self,
        spec: &Spec,
        ext: &str,
        cwd: &Path,
        t: &Timeouts,
        cancel: &CancellationToken,
    ) -> Result<Server, LspError> {
        let mut not_found = Vec::new();
        let mut last_err = None;
        for (command, args) in &spec.commands {
            match self.start_one(spec, command, args, cwd, t, cancel).await {
                Ok(s) => return Ok(s),
                Err(None) => not_found.push(command.clone()),
                // A server that exits during initialize counts as missing: try the next.
                Err(Some(e @ LspError::ExitedInInitialize { .. })) => last_err = Some(e),
                Err(Some(e)) => return Err(e),
            }
        }
        Err(last_err.unwrap_or_else(|| LspError::Missing {
            ext: ext.to_string(),
            tried: not_found.join(", "),
            key: spec.key(),
        }))
    }

    /// Starts one command and initializes it; `Err(None)` when the command does not exist.
    async fn start_one(
        &self,
        spec: &Spec,
        command: &str,
        args: &[String],
        cwd: &Path,
        t: &Timeouts,
        cancel: &CancellationToken,
    ) -> Result<Server, Option<LspError>> {
        let failed = |error: String| {
            Some(LspError::StartFailed {
                command: command.into(),
                key: spec.key(),
                error,
            })
        };
        let fencing = self
            .sandbox
            .fence_for(cwd, &spec.sandbox)
            .map_err(|e| failed(format!("the sandbox: {e}")))?;
        let mut cmd = fencing.command(crate::program::resolve(command.as_ref()));
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let python = crate::program::python::cwd_first(command, args);
        crate::program::python::protect(&mut cmd, python, &Default::default());
        let mut child = match self.processes.spawn(&mut cmd, Group::Own, fencing) {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
            Err(e) => return Err(failed(e.to_string())),
        };
        let (Some(stdin), Some(stdout)) = (child.take_stdin(), child.take_stdout()) else {
            return Err(Some(LspError::StartFailed {
                command: command.into(),
                key: spec.key(),
                error: "its pipes could not be opened".into(),
            }));
        };
        let root_uri = text::uri_of(cwd);
        let conn = Connection::start(
            self.processes.tasks(),
            stdout,
            stdin,
            child.take_stderr(),
            root_uri.clone(),
        );
        let mut server = Server {
            command: command.to_string(),
            key: spec.key(),
            name: spec.name.clone(),
            child: Some(child),
            conn,
            started: Instant::now(),
            capabilities: Value::Null,
            docs: HashMap::new(),
        };
        let params = initialize_params(cwd, &root_uri);
        let pending = server.conn.request("initialize", params);
        let id = pending.id;
        let answer = tokio::select! {
            a = pending.answer() => a,
            () = tokio::time::sleep(t.start) => {
                server.stop();
                return Err(Some(LspError::Timeout {
                    command: command.into(),
                    key: spec.key(),
                    what: "initialize".into(),
                    after: seconds(t.start),
                }));
            }
            () = cancel.cancelled() => {
                server.conn.cancel(id);
                return Err(Some(LspError::Cancelled));
            }
        };
        match answer {
            Ok(result) => {
                server.capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
                server.conn.notify("initialized", json!({}));
                Ok(server)
            }
            Err(RequestError::Closed) => {
                let (status, reason) = server.last_words().await;
                Err(Some(LspError::ExitedInInitialize {
                    command: command.into(),
                    key: spec.key(),
                    status,
                    reason,
                }))
            }
            Err(RequestError::Response(e)) => {
                server.stop();
                Err(Some(LspError::InitializeRefused {
                    command: command.into(),
                    key: spec.key(),
                    message: e.message,
                }))
            }
        }
    }
}

/// `12 s`, or `0.3 s` below a second.
pub fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn initialize_params(cwd: &Path, root_uri: &str) -> Value {
    json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "mm", "version": crate::VERSION},
        "rootUri": root_uri,
        "rootPath": cwd.to_string_lossy(),
        "workspaceFolders": [{"uri": root_uri, "name": cwd.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "workspace".into())}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "workspace": {
                "workspaceFolders": true,
                "configuration": true,
                "symbol": {"dynamicRegistration": false},
                "applyEdit": false,
            },
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": false},
                "definition": {"dynamicRegistration": false, "linkSupport": true},
                "references": {"dynamicRegistration": false},
                "hover": {"dynamicRegistration": false, "contentFormat": ["plaintext", "markdown"]},
                "documentSymbol": {"dynamicRegistration": false, "hierarchicalDocumentSymbolSupport": true},
                "rename": {"dynamicRegistration": false, "prepareSupport": false},
                "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
            },
        },
    })
}

/// A document as the server last received it.
struct Doc {
    uri: String,
    version: i32,
    text: String,
    /// How many publications of its diagnostics had come when it was last sent.
    published_at_send: u64,
}

/// A running server.
struct Server {
    /// The command that runs (for error lines).
    command: String,
    /// `lsp.servers.<name>`.
    key: String,
    name: String,
    /// `None` once it exited and was waited for (its process group is no longer ours to stop:
    /// its id may be reused).
    child: Option<Child>,
    conn: Connection,
    started: Instant,
    capabilities: Value,
    docs: HashMap<PathBuf, Doc>,
}

impl Server {
    /// Whether the process has exited (it is then released, not stopped).
    fn has_exited(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => false,
            Some(Ok(Some(_)) | Err(_)) | None => true,
        }
    }

    /// Stops the process and its group (SIGTERM, then SIGKILL after the grace).
    fn stop(&mut self) {
        if let Some(c) = self.child.take() {
            c.stop();
        }
    }

    /// After the connection closed: the exit status and the reason from stderr, both bounded.
    async fn last_words(&mut self) -> (String, String) {
        let waited = match self.child.as_mut() {
            Some(c) => tokio::time::timeout(LAST_WORDS, c.wait()).await.ok(),
            None => None,
        };
        let status = match waited {
            Some(Ok(s)) => {
                if let Some(c) = self.child.take() {
                    c.release();
                }
                s.to_string()
            }
            Some(Err(_)) | None => "closed its output".to_string(),
        };
        self.conn.stderr_settled(LAST_WORDS).await;
        let reason = self
            .conn
            .shared
            .stderr_reason()
            .map(|r| format!("; stderr: {r}"))
            .unwrap_or_default();
        (status, reason)
    }
}

/// A server held for one call.
pub struct ServerHandle<'a> {
    guard: OwnedMutexGuard<Option<Server>>,
    servers: &'a LspServers,
    /// Set when the server had died since the last call and was started again.
    pub note: Option<String>,
    /// The server was started by this call.
    fresh: bool,
}

/// A document as it was sent before a request.
pub struct Synced {
    pub uri: String,
    /// The text the server has (what positions refer to).
    pub text: String,
}

impl ServerHandle<'_> {
    fn server(&mut self) -> Result<&mut Server, LspError> {
        self.guard.as_mut().ok_or(LspError::Cancelled)
    }

    /// How long ago the server was started (a young one may still be indexing).
    pub fn age(&self) -> Duration {
        self.guard
            .as_ref()
            .map_or(Duration::ZERO, |s| s.started.elapsed())
    }

    /// The command that runs (`pylsp`).
    pub fn command(&self) -> &str {
        self.guard.as_ref().map_or("", |s| s.command.as_str())
    }

    /// The server's name under `lsp.servers`.
    pub fn name(&self) -> &str {
        self.guard.as_ref().map_or("", |s| s.name.as_str())
    }

    /// Whether the server advertised a capability (`definitionProvider`, …).
    pub fn offers(&self, capability: &str) -> bool {
        self.guard.as_ref().is_some_and(|s| {
            !matches!(
                s.capabilities.get(capability),
                None | Some(Value::Null) | Some(Value::Bool(false))
            )
        })
    }

    /// Sends again every open document that changed on disk since it was sent (closing those
    /// that are gone), then opens `path` if it is not open. Returns `path` as the server has it.
    pub fn sync(&mut self, path: &Path) -> Result<Synced, std::io::Error> {
        let Ok(server) = self.server() else {
            return Err(std::io::Error::other("the server is gone"));
        };
        let published = |uri: &str, s: &Server| s.conn.shared.diagnostics(uri).count;
        let paths: Vec<PathBuf> = server.docs.keys().cloned().collect();
        for p in paths {
            let on_disk = std::fs::read(&p).map(|b| String::from_utf8_lossy(&b).into_owned());
            let Some(doc) = server.docs.get(&p) else {
                continue;
            };
            match on_disk {
                Ok(text) if text == doc.text => {}
                Ok(text) => {
                    let count = published(&doc.uri, server);
                    if let Some(doc) = server.docs.get_mut(&p) {
                        doc.version += 1;
                        doc.published_at_send = count;
                        server.conn.notify(
                            "textDocument/didChange",
                            json!({"textDocument": {"uri": doc.uri, "version": doc.version},
                                   "contentChanges": [{"text": text}]}),
                        );
                        doc.text = text;
                    }
                }
                Err(_) => {
                    server.conn.notify(
                        "textDocument/didClose",
                        json!({"textDocument": {"uri": doc.uri}}),
                    );
                    server.docs.remove(&p);
                }
            }
        }
        if !server.docs.contains_key(path) {
            let text = String::from_utf8_lossy(&std::fs::read(path)?).into_owned();
            let uri = text::uri_of(path);
            let count = published(&uri, server);
            server.conn.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": language_id(path, &server.name),
                                        "version": 1, "text": text}}),
            );
            server.docs.insert(
                path.to_path_buf(),
                Doc {
                    uri,
                    version: 1,
                    text,
                    published_at_send: count,
                },
            );
        }
        let doc = &server.docs[path];
        Ok(Synced {
            uri: doc.uri.clone(),
            text: doc.text.clone(),
        })
    }

    /// Sends a request and waits (bounded) for its answer. A server that hangs is stopped, one
    /// that exited is reported; both start again on the next call.
    pub async fn request(
        &mut self,
        method: &str,
        what: &str,
        params: Value,
        t: &Timeouts,
        cancel: &CancellationToken,
    ) -> Result<Value, LspError> {
        let server = self.server()?;
        let started = Instant::now();
        let pending = server.conn.request(method, params);
        let id = pending.id;
        let answer = tokio::select! {
            a = pending.answer() => a,
            () = tokio::time::sleep(t.request) => {
                let e = LspError::Timeout {
                    command: server.command.clone(),
                    key: server.key.clone(),
                    what: what.into(),
                    after: seconds(t.request),
                };
                self.stop();
                return Err(e);
            }
            () = cancel.cancelled() => {
                server.conn.cancel(id);
                return Err(LspError::Cancelled);
            }
        };
        if let Ok(mut r) = self.servers.round_trip.lock() {
            *r = Some(started.elapsed());
        }
        match answer {
            Ok(v) => Ok(v),
            Err(RequestError::Response(e)) => Err(LspError::Response {
                command: self.command().to_string(),
                what: what.into(),
                message: e.message,
            }),
            Err(RequestError::Closed) => Err(self.exited(what).await),
        }
    }

    async fn exited(&mut self, what: &str) -> LspError {
        let Some(mut server) = self.guard.take() else {
            return LspError::Cancelled;
        };
        let (status, reason) = server.last_words().await;
        if !self.fresh && self.note.is_none() {
            return LspError::Gone(format!(
                "{} ({}) had exited ({status}{reason}) since the last call; it was started again",
                server.command, server.key
            ));
        }
        LspError::Exited {
            command: server.command,
            key: server.key,
            what: what.into(),
            status,
            reason,
        }
    }

    /// Stops the server; the next call starts it again.
    fn stop(&mut self) {
        if let Some(mut server) = self.guard.take() {
            server.stop();
        }
    }

    /// The diagnostics of an open document, waiting (bounded) for the server to publish them
    /// for the text last sent. `None`: nothing was published in time.
    pub async fn diagnostics(
        &mut self,
        path: &Path,
        t: &Timeouts,
        cancel: &CancellationToken,
    ) -> Result<Option<Vec<lsp_types::Diagnostic>>, LspError> {
        let server = self.server()?;
        let Some(doc) = server.docs.get(path) else {
            return Ok(None);
        };
        let (uri, version, at_send) = (doc.uri.clone(), doc.version, doc.published_at_send);
        let fresh =
            |p: &rpc::Published| p.count > at_send && p.version.is_none_or(|v| v >= version);
        let mut events = server.conn.events();
        let deadline = tokio::time::Instant::now() + t.diagnostics;
        loop {
            let server = self.server()?;
            let published = server.conn.shared.diagnostics(&uri);
            if fresh(&published) {
                return Ok(Some(published.diagnostics));
            }
            if server.conn.is_closed() {
                return Err(self.exited("diagnostics").await);
            }
            tokio::select! {
                changed = events.changed() => {
                    if changed.is_err() {
                        return Err(self.exited("diagnostics").await);
                    }
                }
                () = tokio::time::sleep_until(deadline) => return Ok(None),
                () = cancel.cancelled() => return Err(LspError::Cancelled),
            }
        }
    }
}
