//! The `lsp` tool (tools.md): code navigation through the process's language servers
//! (src/lsp/): definition, references, hover, symbols, workspace symbols, diagnostics, rename.
//! Results are compact text, one `path:line:col  text of the line` per place: each action is
//! a request and its answer parsed here (`Query`), rendered in render.rs; a rename's edits are
//! written by rename.rs.

mod rename;
mod render;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use lsp_types::{
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, Location, Position, WorkspaceEdit,
    WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use self::render::{
    Files, clip, diagnostic_line, flat_symbols, hover_text, joined, listing, nested_symbols, place,
    workspace_symbols,
};
use super::write_file::path_location;
use super::{CallContext, Describe, ToolOutput, ToolSetup, TypedTool};
use crate::event::ToolKind;
use crate::lsp::text::{self, lines};
use crate::lsp::{LspError, LspServers, ServerHandle, Timeouts, seconds};
use crate::paths;
use crate::sandbox::Sandbox;

pub const NAME: &str = "lsp";
/// How often a young server is asked again while it indexes.
const WARMING_UP_POLL: std::time::Duration = std::time::Duration::from_millis(200);

pub struct Lsp {
    pub servers: Arc<LspServers>,
    pub timeouts: Timeouts,
    /// A rename's writes outside it are refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &ToolSetup<'_>) -> Option<Arc<dyn super::Tool>> {
    Some(Arc::new(Lsp {
        servers: Arc::clone(setup.lsp),
        timeouts: Timeouts {
            start: setup.config.tools.lsp_timeout,
            request: setup.config.tools.lsp_timeout,
            diagnostics: setup.config.tools.lsp_diagnostics_wait,
        },
        sandbox: Arc::clone(setup.sandbox),
    }))
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Action {
    Definition,
    References,
    Hover,
    Symbols,
    WorkspaceSymbols,
    Diagnostics,
    Rename,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Definition => "definition",
            Action::References => "references",
            Action::Hover => "hover",
            Action::Symbols => "symbols",
            Action::WorkspaceSymbols => "workspace_symbols",
            Action::Diagnostics => "diagnostics",
            Action::Rename => "rename",
        }
    }

    /// The server capability the action needs; `None`: every server publishes diagnostics.
    fn capability(self) -> Option<&'static str> {
        match self {
            Action::Definition => Some("definitionProvider"),
            Action::References => Some("referencesProvider"),
            Action::Hover => Some("hoverProvider"),
            Action::Symbols => Some("documentSymbolProvider"),
            Action::WorkspaceSymbols => Some("workspaceSymbolProvider"),
            Action::Rename => Some("renameProvider"),
            Action::Diagnostics => None,
        }
    }

    fn at_position(self) -> bool {
        match self {
            Action::Definition | Action::References | Action::Hover | Action::Rename => true,
            Action::Symbols | Action::WorkspaceSymbols | Action::Diagnostics => false,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct Args {
    action: Action,
    path: String,
    line: Option<u32>,
    /// or symbol: text on the line
    column: Option<u32>,
    symbol: Option<String>,
    query: Option<String>,
    new_name: Option<String>,
}

impl Describe for Lsp {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Language server: definition, references, hover, symbols, workspace_symbols (query), diagnostics, rename (new_name). Lines/columns from 1."
    }
    fn kind(&self, args: &Value) -> ToolKind {
        if is_rename(args) {
            ToolKind::Edit
        } else {
            ToolKind::Read
        }
    }
    fn title(&self, args: &Value) -> String {
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        let mut title = format!("{NAME} {action}").trim_end().to_string();
        if let Some(p) = args.get("path").and_then(Value::as_str) {
            let _ = write!(title, ": {p}");
            if let Some(l) = args.get("line").and_then(Value::as_u64) {
                let _ = write!(title, ":{l}");
            }
        }
        title
    }
    fn locations(&self, args: &Value, cwd: &Path) -> Vec<PathBuf> {
        path_location(args, cwd)
    }
}

#[async_trait]
impl TypedTool for Lsp {
    type Args = Args;

    /// Only `rename` changes files.
    fn gated(&self, args: &Args) -> bool {
        args.action == Action::Rename
    }
    async fn run(&self, args: Args, call: &CallContext<'_>) -> ToolOutput {
        // A hidden file is not opened for a server either (docs/sandbox.md).
        if let Err(refused) = self
            .sandbox
            .check_read(&paths::resolve(call.cwd, &args.path))
        {
            return ToolOutput::not_run(refused);
        }
        let mut result = self.answer(&args, call, None).await;
        // A server that had died since the last call is noticed when it answers nothing: the
        // call is tried once more on a new one.
        if let Err(Failure::Gone(note)) = result {
            result = self.answer(&args, call, Some(note)).await;
        }
        match result {
            Ok(out) => out,
            Err(Failure::Gone(line)) => ToolOutput::interrupted(format!("[lsp: {line}]")),
            Err(Failure::Cancelled) => ToolOutput::interrupted("[cancelled]"),
            Err(Failure::Before(line)) => ToolOutput::not_run(format!("[lsp: {line}]")),
            Err(Failure::During(line)) => ToolOutput::interrupted(format!("[lsp: {line}]")),
        }
    }
}

fn is_rename(args: &Value) -> bool {
    args.get("action").and_then(Value::as_str) == Some("rename")
}

/// Why a call gives no result: before anything ran (bad arguments, no server), or while the
/// server worked on it.
pub(crate) enum Failure {
    Before(String),
    During(String),
    /// The server had died before the call: try again.
    Gone(String),
    Cancelled,
}

impl From<LspError> for Failure {
    fn from(e: LspError) -> Self {
        match e {
            LspError::Cancelled => Failure::Cancelled,
            LspError::Gone(note) => Failure::Gone(note),
            LspError::NoServer(_)
            | LspError::Missing { .. }
            | LspError::StartFailed { .. }
            | LspError::ExitedInInitialize { .. }
            | LspError::InitializeRefused { .. } => Failure::Before(e.to_string()),
            LspError::Timeout { .. } | LspError::Exited { .. } | LspError::Response { .. } => {
                Failure::During(e.to_string())
            }
        }
    }
}

impl Lsp {
    /// Checks the call, finds its server and file, then asks what the action asks.
    async fn answer(
        &self,
        args: &Args,
        call: &CallContext<'_>,
        note: Option<String>,
    ) -> Result<ToolOutput, Failure> {
        let action = args.action;
        let abs = paths::resolve(call.cwd, &args.path);
        if !abs.is_file() {
            return Err(Failure::Before(format!(
                "{} is not a file ({})",
                args.path,
                if abs.exists() {
                    "a directory"
                } else {
                    "it does not exist"
                }
            )));
        }
        if action.at_position() && args.line.is_none() {
            return Err(Failure::Before(format!(
                "{} needs line, and column or symbol",
                action.name()
            )));
        }
        let new_name = match (action, args.new_name.as_deref().map(str::trim)) {
            (Action::Rename, Some(n)) if !n.is_empty() => n.to_string(),
            (Action::Rename, _) => return Err(Failure::Before("rename needs new_name".into())),
            _ => String::new(),
        };
        let t = &self.timeouts;
        let mut server = self
            .servers
            .server_for(&abs, call.cwd, t, call.cancel)
            .await?;
        if note.is_some() {
            server.note = note;
        }
        if let Some(cap) = action.capability()
            && !server.offers(cap)
        {
            return Err(Failure::Before(format!(
                "{} ({}) does not offer {} (no {cap} in its capabilities)",
                server.command(),
                server.name(),
                action.name()
            )));
        }
        let synced = server
            .sync(&abs)
            .map_err(|e| Failure::Before(format!("could not read {}: {e}", args.path)))?;
        let position = if action.at_position() {
            position(args, &synced.text)?
        } else {
            Position::default()
        };
        let (l, c) = text::human(&lines(&synced.text), position);
        let mut q = Query {
            files: Files::new(call.cwd, &abs, &synced.text),
            here: format!("{}:{l}:{c}", args.path),
            doc: json!({"uri": synced.uri}),
            uri: synced.uri,
            server,
            action,
            position,
            t,
            call,
        };
        let text = match action {
            Action::Definition => q.definition().await?,
            Action::References => q.references().await?,
            Action::Hover => q.hover().await?,
            Action::Symbols => q.symbols(&args.path).await?,
            Action::WorkspaceSymbols => {
                q.workspace_symbols(args.query.as_deref().unwrap_or_default())
                    .await?
            }
            Action::Diagnostics => q.diagnostics(&abs, &args.path).await?,
            Action::Rename => {
                let mut out = q.rename(&new_name, &self.sandbox).await?;
                if let Some(note) = q.server.note.take() {
                    out.text = format!("[lsp: {note}]\n{}", out.text);
                }
                return Ok(out);
            }
        };
        Ok(ToolOutput::completed(match q.server.note.take() {
            Some(note) => format!("[lsp: {note}]\n{text}"),
            None => text,
        }))
    }
}

/// One call's question to its server: each action is a request, the answer parsed, and the
/// answer rendered as text (render.rs).
struct Query<'s, 'c> {
    server: ServerHandle<'s>,
    action: Action,
    /// The synced file's URI, and its `{uri}` as a `textDocument`.
    uri: String,
    doc: Value,
    /// The place asked about (`line` and `column` or `symbol`; the file's start for the actions
    /// that take none), and it as `path:line:col` for "none found" lines.
    position: Position,
    here: String,
    files: Files,
    t: &'c Timeouts,
    call: &'c CallContext<'c>,
}

impl Query<'_, '_> {
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        Ok(self
            .server
            .request(method, self.action.name(), params, self.t, self.call.cancel)
            .await?)
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, v: Value) -> Result<T, Failure> {
        serde_json::from_value(v).map_err(|e| {
            Failure::During(format!(
                "could not read {}'s answer to {}: {e}",
                self.server.command(),
                self.action.name()
            ))
        })
    }

    /// The `TextDocumentPositionParams` of the place asked about.
    fn at(&self) -> Value {
        json!({"textDocument": self.doc, "position": self.position})
    }

    async fn definition(&mut self) -> Result<String, Failure> {
        let v = self.request("textDocument/definition", self.at()).await?;
        let places = match self.parse::<Option<GotoDefinitionResponse>>(v)? {
            None => Vec::new(),
            Some(GotoDefinitionResponse::Scalar(l)) => vec![place(&l)],
            Some(GotoDefinitionResponse::Array(ls)) => ls.iter().map(place).collect(),
            Some(GotoDefinitionResponse::Link(links)) => links
                .iter()
                .map(|l| {
                    (
                        l.target_uri.as_str().to_string(),
                        l.target_selection_range.start,
                    )
                })
                .collect(),
        };
        Ok(listing(&mut self.files, &places, || {
            format!("no definition found at {}", self.here)
        }))
    }

    async fn references(&mut self) -> Result<String, Failure> {
        let mut params = self.at();
        params["context"] = json!({"includeDeclaration": true});
        let v = self.request("textDocument/references", params).await?;
        let places: Vec<(String, Position)> = self
            .parse::<Option<Vec<Location>>>(v)?
            .unwrap_or_default()
            .iter()
            .map(place)
            .collect();
        Ok(listing(&mut self.files, &places, || {
            format!("no references found at {}", self.here)
        }))
    }

    async fn hover(&mut self) -> Result<String, Failure> {
        let v = self.request("textDocument/hover", self.at()).await?;
        Ok(match self.parse::<Option<Hover>>(v)? {
            Some(h) if !hover_text(&h.contents).trim().is_empty() => {
                hover_text(&h.contents).trim().to_string()
            }
            Some(_) | None => format!("no hover information at {}", self.here),
        })
    }

    async fn symbols(&mut self, path: &str) -> Result<String, Failure> {
        let params = json!({"textDocument": self.doc});
        let v = self.request("textDocument/documentSymbol", params).await?;
        let mut out = Vec::new();
        match self.parse::<Option<DocumentSymbolResponse>>(v)? {
            None => {}
            Some(DocumentSymbolResponse::Flat(mut list)) => {
                // Flat lists come in no particular order: the file's order reads best.
                list.sort_by_key(|s| {
                    (
                        s.location.range.start.line,
                        s.location.range.start.character,
                    )
                });
                flat_symbols(&mut self.files, &list, &mut out)
            }
            Some(DocumentSymbolResponse::Nested(list)) => {
                nested_symbols(&mut self.files, &self.uri, &list, 0, &mut out)
            }
        }
        Ok(joined(out, || format!("no symbols in {path}")))
    }

    async fn workspace_symbols(&mut self, query: &str) -> Result<String, Failure> {
        let mut v;
        loop {
            v = self
                .request("workspace/symbol", json!({"query": query}))
                .await?;
            // A server just started may still be indexing the workspace (pyright answers []
            // until then): ask again for a while before saying "none".
            let empty = matches!(&v, Value::Null) || v.as_array().is_some_and(Vec::is_empty);
            if !empty || self.server.age() >= self.t.diagnostics {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(WARMING_UP_POLL) => {}
                () = self.call.cancel.cancelled() => return Err(Failure::Cancelled),
            }
        }
        let mut out = Vec::new();
        match self.parse::<Option<WorkspaceSymbolResponse>>(v)? {
            None => {}
            Some(WorkspaceSymbolResponse::Flat(list)) => {
                flat_symbols(&mut self.files, &list, &mut out)
            }
            Some(WorkspaceSymbolResponse::Nested(list)) => {
                workspace_symbols(&mut self.files, &list, &mut out)
            }
        }
        Ok(joined(out, || format!("no symbols match {query:?}")))
    }

    async fn diagnostics(&mut self, abs: &Path, path: &str) -> Result<String, Failure> {
        let t = self.t;
        Ok(
            match self.server.diagnostics(abs, t, self.call.cancel).await? {
                None => format!(
                    "no diagnostics for {path} ({} published none within {})",
                    self.server.command(),
                    seconds(t.diagnostics)
                ),
                Some(mut list) => {
                    list.sort_by_key(|d| (d.range.start.line, d.range.start.character));
                    let out: Vec<String> = list
                        .iter()
                        .map(|d| diagnostic_line(&mut self.files, &self.uri, d))
                        .collect();
                    joined(out, || format!("no diagnostics for {path}"))
                }
            },
        )
    }

    async fn rename(&mut self, new_name: &str, sandbox: &Sandbox) -> Result<ToolOutput, Failure> {
        let mut params = self.at();
        params["newName"] = json!(new_name);
        let v = self.request("textDocument/rename", params).await?;
        let edit = self.parse::<Option<WorkspaceEdit>>(v)?.unwrap_or_default();
        rename::apply(edit, new_name, self.call, sandbox, &self.here)
    }
}

/// The protocol position of `line` and `column` or `symbol` in the text the server has.
fn position(args: &Args, text: &str) -> Result<Position, Failure> {
    let all = lines(text);
    let n = args.line.unwrap_or(1);
    let Some(line) = n.checked_sub(1).and_then(|i| all.get(i as usize)) else {
        return Err(Failure::Before(format!(
            "line {n} is not in {} ({} lines)",
            args.path,
            all.len()
        )));
    };
    let col = match (&args.symbol, args.column) {
        (Some(sym), _) if !sym.trim().is_empty() => {
            find_symbol(line, sym.trim()).ok_or_else(|| {
                Failure::Before(format!(
                    "{sym:?} is not on line {n} of {}: {:?}",
                    args.path,
                    clip(line.trim())
                ))
            })?
        }
        (_, Some(c)) if c >= 1 => c as usize - 1,
        (_, _) => {
            return Err(Failure::Before(format!(
                "give column (from 1) or symbol (the text to find on line {n}: {:?})",
                clip(line.trim())
            )));
        }
    };
    Ok(Position {
        line: n - 1,
        character: text::utf16_of_char(line, col),
    })
}

/// Where `symbol` is on a line (a character index): a whole-word match first, else any.
fn find_symbol(line: &str, symbol: &str) -> Option<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut any = None;
    for (byte, _) in line.match_indices(symbol) {
        let before = line[..byte].chars().next_back();
        let after = line[byte + symbol.len()..].chars().next();
        let col = line[..byte].chars().count();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return Some(col);
        }
        any.get_or_insert(col);
    }
    any
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_symbol_is_found_as_a_whole_word_first() {
        assert_eq!(find_symbol("    return add_one(one)", "one"), Some(19));
        assert_eq!(find_symbol("x = add_one(1)", "one"), Some(8));
        assert_eq!(find_symbol("x = 1", "y"), None);
    }

    #[test]
    fn the_title_names_the_place() {
        let t = Lsp {
            servers: Arc::new(LspServers::new(
                &crate::config::Config::default(),
                crate::process::Supervisor::new(),
                Default::default(),
            )),
            timeouts: Timeouts {
                start: std::time::Duration::from_secs(1),
                request: std::time::Duration::from_secs(1),
                diagnostics: std::time::Duration::from_secs(1),
            },
            sandbox: Arc::default(),
        };
        let title = |v: Value| t.title(&v);
        assert_eq!(
            title(json!({"action": "definition", "path": "a.py", "line": 3})),
            "lsp definition: a.py:3"
        );
        assert_eq!(
            title(json!({"action": "symbols", "path": "a.py"})),
            "lsp symbols: a.py"
        );
        assert_eq!(title(json!({})), "lsp");
        assert_eq!(t.kind(&json!({"action": "rename"})), ToolKind::Edit);
        let gated = |v: Value| {
            crate::tools::Tool::parse(&t, v).is_ok_and(|p| crate::tools::Tool::gated(&t, &p))
        };
        assert!(gated(json!({"action": "rename", "path": "a.py"})));
        assert!(!gated(json!({"action": "hover", "path": "a.py"})));
    }
}
