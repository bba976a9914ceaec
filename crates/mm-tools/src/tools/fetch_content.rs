//! The `fetch_content` tool (tools.md): GET an http(s) URL; HTML becomes readable text (converted
//! while it downloads, src/html_text.rs), JSON is pretty-printed, other text is shown as it is,
//! binary is refused unless `output` saves the raw body to a file. Everything is bounded: 5
//! redirects, a timeout over the whole fetch, a cap on the body, and cancellation drops the
//! connection at once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::{PermissionMode, ToolKind};
use crate::html_text::{Capture, HtmlText};
use crate::paths;
use crate::sandbox::Sandbox;
use crate::tasks::Tasks;
use crate::writer::{self, Check, FileKind};

pub const NAME: &str = "fetch_content";
/// The body read at most (10 MB).
pub const MAX_BODY: usize = 10 * 1024 * 1024;
/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// Characters of an error page shown after its status line.
const ERROR_BODY_CHARS: usize = 500;
/// Characters kept for the notes around a converted page, under the output cap.
const NOTE_ROOM: usize = 200;

/// The limits of a fetch (the tool's own settings; tests shorten the timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSettings {
    /// From connecting to the last byte.
    pub timeout: Duration,
    /// Bytes of body read at most.
    pub max_body: usize,
}

impl Default for FetchSettings {
    fn default() -> Self {
        FetchSettings {
            timeout: Duration::from_secs(30),
            max_body: MAX_BODY,
        }
    }
}

pub struct FetchContent {
    pub settings: FetchSettings,
    /// Saving to a file (`output`) outside it is refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
    /// The HTML parser runs on a blocking thread of these.
    pub tasks: Tasks,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(FetchContent {
        settings: FetchSettings {
            timeout: setup.config.tools.fetch_timeout,
            max_body: MAX_BODY,
        },
        sandbox: Arc::clone(setup.sandbox),
        tasks: setup.processes.tasks().clone(),
    }))
}

#[derive(Deserialize, JsonSchema)]
pub struct Args {
    /// http or https
    url: String,
    /// Save the raw body to this file
    output: Option<String>,
}

impl Describe for FetchContent {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Fetch a URL (GET). HTML comes back as text, JSON pretty-printed."
    }
    fn kind(&self, _args: &Value) -> ToolKind {
        ToolKind::Fetch
    }
    fn title(&self, args: &Value) -> String {
        match args.get("url").and_then(Value::as_str) {
            Some(u) => format!("{NAME}: {u}"),
            None => NAME.into(),
        }
    }
    fn locations(&self, args: &Value, cwd: &Path) -> Vec<PathBuf> {
        output_arg(args)
            .map(|p| vec![paths::resolve(cwd, p)])
            .unwrap_or_default()
    }
}

#[async_trait]
impl TypedTool for FetchContent {
    type Args = Args;

    /// Only writing a file is gated; reading a page is not.
    fn gated(&self, args: &Args) -> bool {
        args.output.as_deref().is_some_and(|p| !p.trim().is_empty())
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        let url = match check_url(&args.url) {
            Ok(u) => u,
            Err(line) => return ToolOutput::not_run(format!("[{NAME}: {line}]")),
        };
        let output = args
            .output
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        let fetch = Fetch {
            settings: self.settings,
            deadline: std::sync::Mutex::new(Instant::now() + self.settings.timeout),
            url: &url,
            call,
            sandbox: &self.sandbox,
            tasks: &self.tasks,
        };
        let result = match output {
            Some(path) => fetch.save(path).await,
            None => fetch.read().await,
        };
        match result {
            Ok(out) => out,
            Err(Stop::Cancelled) => ToolOutput::interrupted("[cancelled]"),
            Err(Stop::Refused(text)) => ToolOutput::not_run(text),
            Err(Stop::Failed(line)) => ToolOutput::not_run(format!("[{NAME}: {line}]")),
            Err(Stop::Status { line, body }) if body.is_empty() => {
                ToolOutput::not_run(format!("[{NAME}: {line}]"))
            }
            Err(Stop::Status { line, body }) => {
                ToolOutput::not_run(format!("[{NAME}: {line}]\n{body}"))
            }
        }
    }
}

fn output_arg(args: &Value) -> Option<&str> {
    args.get("output")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|p| !p.is_empty())
}

/// The URL, if it can be fetched; else the line saying why not.
fn check_url(raw: &str) -> Result<url::Url, String> {
    let raw = raw.trim();
    let url = url::Url::parse(raw).map_err(|e| format!("malformed URL {raw:?}: {e}"))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "only http and https URLs can be fetched, not {other}: ({raw})"
            ));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("malformed URL {raw:?}: no host"));
    }
    Ok(url)
}

/// Why a fetch gave no result.
enum Stop {
    Cancelled,
    /// The sandbox refused the file `output` names: its own text.
    Refused(String),
    /// The line for the model (without the `[fetch_content: …]` frame).
    Failed(String),
    /// An error status: its line, then the start of the page.
    Status {
        line: String,
        body: String,
    },
}

/// The HTTP clients, built on the first fetch (nothing at start-up): one that honours the
/// proxy settings of the environment, and one without proxy for this machine's own servers.
fn client(url: &url::Url) -> Result<&'static reqwest::Client, String> {
    static PROXIED: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static DIRECT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let local = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost" || d.ends_with(".localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    let build = |direct: bool| {
        let mut b = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .user_agent(concat!("mm/", env!("CARGO_PKG_VERSION")));
        if direct {
            b = b.no_proxy();
        }
        b.build().map_err(|e| format!("could not set up HTTP: {e}"))
    };
    let cell = if local { &DIRECT } else { &PROXIED };
    cell.get_or_init(|| build(local))
        .as_ref()
        .map_err(Clone::clone)
}

/// What a body is, from its content type and its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Html,
    Json,
    Text,
    Binary,
}

fn classify(content_type: Option<&str>, first: &[u8]) -> Body {
    let sniff = &first[..first.len().min(1024)];
    if sniff.contains(&0) {
        return Body::Binary;
    }
    let essence = content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let textual = |e: &str| {
        e.starts_with("text/")
            || e.ends_with("+xml")
            || matches!(
                e,
                "application/xml"
                    | "application/javascript"
                    | "application/ecmascript"
                    | "application/x-javascript"
                    | "application/x-sh"
                    | "application/x-yaml"
                    | "application/yaml"
                    | "application/toml"
                    | "application/sql"
                    | "application/graphql"
                    | "application/x-ndjson"
                    | "application/jsonl"
            )
    };
    match essence.as_str() {
        "text/html" | "application/xhtml+xml" => Body::Html,
        "application/json" | "text/json" => Body::Json,
        e if e.ends_with("+json") => Body::Json,
        e if textual(e) => Body::Text,
        "" | "application/octet-stream" | "binary/octet-stream" => {
            // Unlabelled: what it looks like.
            let start = String::from_utf8_lossy(&sniff[..sniff.len().min(256)]).to_lowercase();
            let start = start.trim_start();
            if start.starts_with("<!doctype html") || start.starts_with("<html") {
                Body::Html
            } else if start.starts_with('{') || start.starts_with('[') {
                Body::Json
            } else if std::str::from_utf8(sniff).is_ok()
                || std::str::from_utf8(sniff).is_err_and(|e| e.error_len().is_none())
            {
                Body::Text
            } else {
                Body::Binary
            }
        }
        _ => Body::Binary,
    }
}

fn charset(content_type: Option<&str>) -> Option<String> {
    content_type?.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// Text in its charset (UTF-8 when absent or unknown), lossily.
fn decode(bytes: &[u8], charset: Option<&str>) -> String {
    match charset.and_then(|c| encoding_rs::Encoding::for_label(c.as_bytes())) {
        Some(enc) => enc.decode(bytes).0.into_owned(),
        None => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// `10 MB` for whole megabytes, else bytes.
fn size(n: usize) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
}

/// One fetch in progress.
struct Fetch<'a> {
    settings: FetchSettings,
    /// Later by the time the user took to answer a question (not the fetch's time).
    deadline: std::sync::Mutex<Instant>,
    url: &'a url::Url,
    call: &'a CallContext<'a>,
    sandbox: &'a Sandbox,
    tasks: &'a Tasks,
}

impl Fetch<'_> {
    fn deadline(&self) -> Instant {
        *self.deadline.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Awaits `fut` unless the deadline passes or the call is cancelled first.
    async fn bounded<T>(&self, fut: impl Future<Output = T>) -> Result<T, Stop> {
        tokio::select! {
            v = fut => Ok(v),
            () = tokio::time::sleep_until(self.deadline()) => Err(Stop::Failed(format!(
                "timed out after {} fetching {}",
                crate::lsp::seconds(self.settings.timeout),
                self.url
            ))),
            () = self.call.cancel.cancelled() => Err(Stop::Cancelled),
        }
    }

    /// Awaits `fut` unless the call is cancelled first.
    async fn cancellable<T>(&self, fut: impl Future<Output = T>) -> Result<T, Stop> {
        tokio::select! {
            v = fut => Ok(v),
            () = self.call.cancel.cancelled() => Err(Stop::Cancelled),
        }
    }

    /// Sends the request; a response with an error status is a failure carrying its start.
    async fn response(&self) -> Result<reqwest::Response, Stop> {
        let mut resp = match self.sandbox.fences_network() {
            true => self.through_the_door().await?,
            false => {
                let client = client(self.url).map_err(Stop::Failed)?;
                self.send(client, self.url).await?
            }
        };
        let status = resp.status();
        if status.is_client_error() || status.is_server_error() {
            let ct = content_type(&resp);
            let mut start = Vec::new();
            while start.len() < 64 * 1024 {
                match self.bounded(resp.chunk()).await {
                    Ok(Ok(Some(c))) => start.extend_from_slice(&c),
                    Err(Stop::Cancelled) => return Err(Stop::Cancelled),
                    Ok(Ok(None))
                    | Ok(Err(_))
                    | Err(Stop::Failed(_) | Stop::Refused(_) | Stop::Status { .. }) => {
                        break;
                    }
                }
            }
            let body = match classify(ct.as_deref(), &start) {
                Body::Html => crate::html_text::convert(
                    &decode(&start, charset(ct.as_deref()).as_deref()),
                    Some(resp.url().clone()),
                    ERROR_BODY_CHARS * 2,
                ),
                Body::Json | Body::Text => decode(&start, charset(ct.as_deref()).as_deref()),
                Body::Binary => String::new(),
            };
            let body: String = body.trim().chars().take(ERROR_BODY_CHARS).collect();
            let reason = status
                .canonical_reason()
                .map(|r| format!(" {r}"))
                .unwrap_or_default();
            return Err(Stop::Status {
                line: format!("HTTP {}{reason} from {}", status.as_u16(), resp.url()),
                body,
            });
        }
        Ok(resp)
    }

    async fn send(
        &self,
        client: &reqwest::Client,
        url: &url::Url,
    ) -> Result<reqwest::Response, Stop> {
        let request = client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
            )
            .send();
        self.bounded(request)
            .await?
            .map_err(|e| Stop::Failed(self.explain(&e)))
    }

    /// With the fence on, the fetch keeps the fence's door (docs/sandbox.md, "The network"):
    /// each hop's host is checked and resolved by the door, the connection pinned to the
    /// addresses it let through, and a redirect followed only after the same check for its
    /// target. A refused host is the refusal's line, counted with the proxy's.
    async fn through_the_door(&self) -> Result<reqwest::Response, Stop> {
        let door = self.sandbox.door();
        let mut url = self.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let host = url.host_str().unwrap_or("").to_string();
            let bare = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            let port = url.port_or_known_default().unwrap_or(0);
            // In `ask` mode a host on no list is put to the user, naming this hop's URL.
            let asker = format!("fetch_content {url}");
            let ask = |host, port| async move {
                match self.call.mode {
                    PermissionMode::Ask => Some(self.call.ask_network(host, port, &asker).await),
                    PermissionMode::Yolo | PermissionMode::ReadOnly => None,
                }
            };
            let resolving = self.sandbox.passage().resolve(door, &bare, port, ask);
            // The user's time to answer is not the fetch's: its deadline moves by it.
            let resolved = match self.call.mode {
                PermissionMode::Ask => {
                    let asked = Instant::now();
                    let resolved = self.cancellable(resolving).await?;
                    let mut deadline = self.deadline.lock().unwrap_or_else(PoisonError::into_inner);
                    *deadline += asked.elapsed();
                    resolved
                }
                PermissionMode::Yolo | PermissionMode::ReadOnly => self.bounded(resolving).await?,
            };
            let addrs = resolved.map_err(Stop::Refused)?;
            let client = reqwest::Client::builder()
                .use_rustls_tls()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .resolve_to_addrs(&bare, &addrs)
                .user_agent(concat!("mm/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| Stop::Failed(format!("could not set up HTTP: {e}")))?;
            let resp = self.send(&client, &url).await?;
            let next = resp
                .status()
                .is_redirection()
                .then(|| resp.headers().get(reqwest::header::LOCATION))
                .flatten()
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok());
            match next {
                Some(next) if matches!(next.scheme(), "http" | "https") => url = next,
                _ => return Ok(resp),
            }
        }
        Err(Stop::Failed(format!(
            "too many redirects (more than {MAX_REDIRECTS}) from {}",
            self.url
        )))
    }

    /// The model's line for a failed request.
    fn explain(&self, e: &reqwest::Error) -> String {
        let host = self.url.host_str().unwrap_or("");
        if e.is_redirect() {
            return format!(
                "too many redirects (more than {MAX_REDIRECTS}) from {}",
                self.url
            );
        }
        let mut source: Option<&dyn std::error::Error> = Some(e);
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::ConnectionRefused
            {
                let port = self.url.port_or_known_default().unwrap_or(0);
                return format!("connection refused by {host}:{port}");
            }
            let text = s.to_string();
            if text.contains("dns error") || text.contains("failed to lookup address") {
                return format!("could not resolve the host {host} (DNS)");
            }
            source = s.source();
        }
        if e.is_timeout() {
            return format!(
                "timed out after {} fetching {}",
                crate::lsp::seconds(self.settings.timeout),
                self.url
            );
        }
        let mut chain = e.to_string();
        let mut s = std::error::Error::source(e);
        while let Some(inner) = s {
            chain.push_str(": ");
            chain.push_str(&inner.to_string());
            s = inner.source();
        }
        format!("could not fetch {}: {chain}", self.url)
    }

    /// The next chunk of the body; `None` at its end.
    async fn chunk(&self, resp: &mut reqwest::Response) -> Result<Option<bytes::Bytes>, Stop> {
        self.bounded(resp.chunk())
            .await?
            .map_err(|e| Stop::Failed(format!("the download from {} broke off: {e}", self.url)))
    }

    /// The body as text for the model.
    async fn read(&self) -> Result<ToolOutput, Stop> {
        let mut resp = self.response().await?;
        let ct = content_type(&resp);
        let cs = charset(ct.as_deref());
        let length = resp.content_length();
        let first = self.chunk(&mut resp).await?.unwrap_or_default();
        let kind = classify(ct.as_deref(), &first);
        let max = self.call.max_output.saturating_sub(NOTE_ROOM).max(1);
        let (text, cut) = match kind {
            Body::Binary => {
                let ct = ct.unwrap_or_else(|| "no content type".into());
                let size = length.map(|n| format!(", {n} bytes")).unwrap_or_default();
                return Err(Stop::Failed(format!(
                    "{} is binary ({ct}{size}); give output to save it to a file",
                    self.url
                )));
            }
            Body::Html => self.convert(resp, first, cs, max).await?,
            Body::Json | Body::Text => {
                let (bytes, cut) = self.collect(&mut resp, first).await?;
                let text = decode(&bytes, cs.as_deref());
                let text = match kind {
                    Body::Json if !cut => serde_json::from_str::<Value>(&text)
                        .ok()
                        .and_then(|v| serde_json::to_string_pretty(&v).ok())
                        .unwrap_or(text),
                    Body::Json | Body::Text | Body::Html | Body::Binary => text,
                };
                let mut capture = Capture::new(max);
                capture.push_str(&text);
                (capture.finish(), cut)
            }
        };
        let mut out = String::new();
        if cut {
            out.push_str(&format!(
                "[cut: the body is over the {} cap; this is its first {}]\n",
                size(self.settings.max_body),
                size(self.settings.max_body)
            ));
        }
        out.push_str(&text);
        Ok(ToolOutput::completed(out))
    }

    /// The body, up to the cap; `true` when it went past it.
    async fn collect(
        &self,
        resp: &mut reqwest::Response,
        first: bytes::Bytes,
    ) -> Result<(Vec<u8>, bool), Stop> {
        let cap = self.settings.max_body;
        let mut body = Vec::with_capacity(first.len());
        let mut next = Some(first);
        while let Some(c) = next {
            if body.len() + c.len() > cap {
                body.extend_from_slice(&c[..cap - body.len()]);
                return Ok((body, true));
            }
            body.extend_from_slice(&c);
            next = self.chunk(resp).await?;
        }
        Ok((body, false))
    }

    /// Converts an HTML body while it downloads (on a blocking thread: the parser is not
    /// `Send`), up to the cap; `true` when the body went past it.
    async fn convert(
        &self,
        mut resp: reqwest::Response,
        first: bytes::Bytes,
        charset: Option<String>,
        max: usize,
    ) -> Result<(String, bool), Stop> {
        let base = resp.url().clone();
        // A few chunks in flight: the download waits for the parser, memory stays bounded.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(8);
        let parser = self.tasks.spawn_blocking(move || {
            let mut page = HtmlText::new(Some(base), charset.as_deref(), max);
            while let Some(chunk) = rx.blocking_recv() {
                if page.write(&chunk).is_err() {
                    break;
                }
            }
            page.finish()
        });
        let cap = self.settings.max_body;
        let mut read = 0usize;
        let mut cut = false;
        let mut next = Some(first);
        while let Some(mut c) = next {
            if read + c.len() > cap {
                c.truncate(cap - read);
                cut = true;
            }
            read += c.len();
            if tx.send(c).await.is_err() || cut {
                break;
            }
            next = match self.chunk(&mut resp).await {
                Ok(n) => n,
                Err(stop) => {
                    // The parser ends when its channel closes.
                    drop(tx);
                    return Err(stop);
                }
            };
        }
        drop(tx);
        drop(resp);
        let text = parser
            .await
            .map_err(|e| Stop::Failed(format!("the page could not be converted: {e}")))?;
        Ok((text, cut))
    }

    /// Writes the raw body to `path` as it downloads, through the checked writer (a temporary
    /// file beside it: a body over the cap, a broken download or a cancellation leave nothing
    /// behind). The sandbox is asked before anything is fetched.
    async fn save(&self, shown: &str) -> Result<ToolOutput, Stop> {
        let path = paths::resolve(self.call.cwd, shown);
        let cwd = self.call.cwd;
        self.sandbox
            .check_write(cwd, &path)
            .map_err(Stop::Refused)?;
        if path.is_dir() {
            return Err(Stop::Failed(format!("{shown} is a directory, not a file")));
        }
        let mut resp = self.response().await?;
        let ct = content_type(&resp);
        let check = |p: &Path| self.sandbox.check_write(cwd, p);
        let staged = writer::stage_noted(
            &path,
            shown,
            FileKind::Ordinary,
            Check::Fenced(&check),
            self.call.journal(),
        )
        .map_err(|e| match e {
            writer::WriteError::Refused(text) => Stop::Refused(text),
            other => Stop::Failed(other.to_string()),
        })?;
        let n = self.download(&mut resp, &staged).await?;
        staged.commit().map_err(|e| Stop::Failed(e.to_string()))?;
        let ct = ct
            .map(|c| c.split(';').next().unwrap_or("").trim().to_string())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "no content type".into());
        Ok(ToolOutput::completed(format!(
            "saved {n} bytes ({ct}) to {shown}"
        )))
    }

    /// Streams the body into the staged file; an error leaves it uncommitted (removed when
    /// dropped).
    async fn download(
        &self,
        resp: &mut reqwest::Response,
        staged: &writer::Staged,
    ) -> Result<usize, Stop> {
        let write_err = |e: std::io::Error| Stop::Failed(staged.error(e).to_string());
        let mut file = tokio::fs::File::from_std(staged.file().try_clone().map_err(write_err)?);
        let mut n = 0usize;
        while let Some(c) = self.chunk(resp).await? {
            n += c.len();
            if n > self.settings.max_body {
                return Err(Stop::Failed(format!(
                    "the body is over the {} cap; nothing was written (a cut file would be corrupt)",
                    size(self.settings.max_body)
                )));
            }
            file.write_all(&c).await.map_err(write_err)?;
        }
        file.flush().await.map_err(write_err)?;
        Ok(n)
    }
}

fn content_type(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
