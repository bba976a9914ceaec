//! The `lsp` tool (tools.md): code navigation through the process's language servers
//! (src/lsp/): definition, references, hover, symbols, workspace symbols, diagnostics, rename.
//! Results are compact text, one `path:line:col  text of the line` per place.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use lsp_types::{
    DocumentSymbol, DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location,
    MarkedString, Position, SymbolInformation, SymbolKind, TextEdit, WorkspaceEdit,
    WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::write_file::path_location;
use super::{Call, Setup, Tool, ToolOutput, compact_schema, parse_args, schema_of};
use crate::event::{FileDiff, ToolKind};
use crate::lsp::text::{self, lines};
use crate::lsp::{LspError, LspServers, ServerHandle, Timeouts, seconds};
use crate::paths;
use crate::sandbox::Sandbox;
use crate::writer::{self, Check, FileKind};

pub const NAME: &str = "lsp";
/// Places listed at most in one result.
const MAX_PLACES: usize = 200;
/// How often a young server is asked again while it indexes.
const WARMING_UP_POLL: std::time::Duration = std::time::Duration::from_millis(200);
/// Characters of a line shown beside a place.
const LINE_CHARS: usize = 160;

pub struct Lsp {
    pub servers: Arc<LspServers>,
    pub timeouts: Timeouts,
    /// A rename's writes outside it are refused (docs/sandbox.md).
    pub sandbox: Arc<Sandbox>,
}

/// The registration (`mm_engine::BUILTIN`).
pub fn tool(setup: &Setup<'_>) -> Option<Arc<dyn Tool>> {
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
struct Args {
    action: Action,
    path: String,
    line: Option<u32>,
    /// or symbol: text on the line
    column: Option<u32>,
    symbol: Option<String>,
    query: Option<String>,
    new_name: Option<String>,
}

#[async_trait]
impl Tool for Lsp {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Language server: definition, references, hover, symbols, workspace_symbols (query), diagnostics, rename (new_name). Lines/columns from 1."
    }
    fn parameters(&self) -> Value {
        let mut schema = schema_of::<Args>();
        compact_schema(&mut schema);
        schema
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
    /// Only `rename` changes files.
    fn gated(&self, args: &Value) -> bool {
        is_rename(args)
    }
    async fn run(&self, args: Value, call: &Call<'_>) -> ToolOutput {
        let args: Args = match parse_args(NAME, &args) {
            Ok(a) => a,
            Err(out) => return out,
        };
        let mut result = self.answer(&args, call, None).await;
        // A server that had died since the last call is noticed when it answers nothing: the
        // call is tried once more on a new one.
        if let Err(Failure::Gone(note)) = result {
            result = self.answer(&args, call, Some(note)).await;
        }
        match result {
            Ok(out) => out,
            Err(Failure::Gone(line)) => ToolOutput::stopped(format!("[lsp: {line}]")),
            Err(Failure::Cancelled) => ToolOutput::stopped("[cancelled]"),
            Err(Failure::Before(line)) => ToolOutput::failed(format!("[lsp: {line}]")),
            Err(Failure::During(line)) => ToolOutput::stopped(format!("[lsp: {line}]")),
        }
    }
}

fn is_rename(args: &Value) -> bool {
    args.get("action").and_then(Value::as_str) == Some("rename")
}

/// Why a call gives no result: before anything ran (bad arguments, no server), or while the
/// server worked on it.
enum Failure {
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
    async fn answer(
        &self,
        args: &Args,
        call: &Call<'_>,
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
        let mut files = Files::new(call.cwd, &abs, &synced.text);
        let doc = json!({"uri": synced.uri});
        let position = if action.at_position() {
            Some(position(args, &synced.text)?)
        } else {
            None
        };
        let at = |p: Position| json!({"textDocument": doc, "position": p});
        let here = || {
            let p = position.unwrap_or_default();
            let (l, c) = text::human(&lines(&synced.text), p);
            format!("{}:{l}:{c}", args.path)
        };
        let text = match action {
            Action::Definition => {
                let v = request(
                    &mut server,
                    "textDocument/definition",
                    action,
                    at(pos(position)),
                    t,
                    call,
                )
                .await?;
                let places = match parse::<Option<GotoDefinitionResponse>>(&server, action, v)? {
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
                listing(&mut files, &places, || {
                    format!("no definition found at {}", here())
                })
            }
            Action::References => {
                let mut params = at(pos(position));
                params["context"] = json!({"includeDeclaration": true});
                let v = request(
                    &mut server,
                    "textDocument/references",
                    action,
                    params,
                    t,
                    call,
                )
                .await?;
                let places: Vec<(String, Position)> =
                    parse::<Option<Vec<Location>>>(&server, action, v)?
                        .unwrap_or_default()
                        .iter()
                        .map(place)
                        .collect();
                listing(&mut files, &places, || {
                    format!("no references found at {}", here())
                })
            }
            Action::Hover => {
                let v = request(
                    &mut server,
                    "textDocument/hover",
                    action,
                    at(pos(position)),
                    t,
                    call,
                )
                .await?;
                match parse::<Option<Hover>>(&server, action, v)? {
                    Some(h) if !hover_text(&h.contents).trim().is_empty() => {
                        hover_text(&h.contents).trim().to_string()
                    }
                    Some(_) | None => format!("no hover information at {}", here()),
                }
            }
            Action::Symbols => {
                let v = request(
                    &mut server,
                    "textDocument/documentSymbol",
                    action,
                    json!({"textDocument": doc}),
                    t,
                    call,
                )
                .await?;
                let mut out = Vec::new();
                match parse::<Option<DocumentSymbolResponse>>(&server, action, v)? {
                    None => {}
                    Some(DocumentSymbolResponse::Flat(mut list)) => {
                        // Flat lists come in no particular order: the file's order reads best.
                        list.sort_by_key(|s| {
                            (
                                s.location.range.start.line,
                                s.location.range.start.character,
                            )
                        });
                        flat_symbols(&mut files, &list, &mut out)
                    }
                    Some(DocumentSymbolResponse::Nested(list)) => {
                        nested_symbols(&mut files, &synced.uri, &list, 0, &mut out)
                    }
                }
                joined(out, || format!("no symbols in {}", args.path))
            }
            Action::WorkspaceSymbols => {
                let query = args.query.clone().unwrap_or_default();
                let mut v;
                loop {
                    v = request(
                        &mut server,
                        "workspace/symbol",
                        action,
                        json!({"query": query}),
                        t,
                        call,
                    )
                    .await?;
                    // A server just started may still be indexing the workspace (pyright
                    // answers [] until then): ask again for a while before saying "none".
                    let empty =
                        matches!(&v, Value::Null) || v.as_array().is_some_and(Vec::is_empty);
                    if !empty || server.age() >= t.diagnostics {
                        break;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(WARMING_UP_POLL) => {}
                        () = call.cancel.cancelled() => return Err(Failure::Cancelled),
                    }
                }
                let mut out = Vec::new();
                match parse::<Option<WorkspaceSymbolResponse>>(&server, action, v)? {
                    None => {}
                    Some(WorkspaceSymbolResponse::Flat(list)) => {
                        flat_symbols(&mut files, &list, &mut out)
                    }
                    Some(WorkspaceSymbolResponse::Nested(list)) => {
                        for s in list {
                            let (uri, p) = match &s.location {
                                lsp_types::OneOf::Left(l) => {
                                    (l.uri.as_str().to_string(), l.range.start)
                                }
                                lsp_types::OneOf::Right(w) => {
                                    (w.uri.as_str().to_string(), Position::default())
                                }
                            };
                            let container = s
                                .container_name
                                .as_deref()
                                .map(|c| format!(" (in {c})"))
                                .unwrap_or_default();
                            out.push(format!(
                                "{}  {} {}{container}",
                                files.place(&uri, p),
                                kind_name(s.kind),
                                s.name
                            ));
                        }
                    }
                }
                joined(out, || format!("no symbols match {query:?}"))
            }
            Action::Diagnostics => match server.diagnostics(&abs, t, call.cancel).await? {
                None => format!(
                    "no diagnostics for {} ({} published none within {})",
                    args.path,
                    server.command(),
                    seconds(t.diagnostics)
                ),
                Some(mut list) => {
                    list.sort_by_key(|d| (d.range.start.line, d.range.start.character));
                    let out: Vec<String> = list
                        .iter()
                        .map(|d| diagnostic_line(&mut files, &synced.uri, d))
                        .collect();
                    joined(out, || format!("no diagnostics for {}", args.path))
                }
            },
            Action::Rename => {
                let mut params = at(pos(position));
                params["newName"] = json!(new_name);
                let v =
                    request(&mut server, "textDocument/rename", action, params, t, call).await?;
                let edit = parse::<Option<WorkspaceEdit>>(&server, action, v)?.unwrap_or_default();
                let mut out = rename(edit, &new_name, call, &self.sandbox, &here())?;
                if let Some(note) = server.note.take() {
                    out.text = format!("[lsp: {note}]\n{}", out.text);
                }
                return Ok(out);
            }
        };
        Ok(ToolOutput::completed(match server.note.take() {
            Some(note) => format!("[lsp: {note}]\n{text}"),
            None => text,
        }))
    }
}

fn pos(p: Option<Position>) -> Position {
    p.unwrap_or_default()
}

async fn request(
    server: &mut ServerHandle<'_>,
    method: &str,
    action: Action,
    params: Value,
    t: &Timeouts,
    call: &Call<'_>,
) -> Result<Value, Failure> {
    Ok(server
        .request(method, action.name(), params, t, call.cancel)
        .await?)
}

fn parse<T: serde::de::DeserializeOwned>(
    server: &ServerHandle<'_>,
    action: Action,
    v: Value,
) -> Result<T, Failure> {
    serde_json::from_value(v).map_err(|e| {
        Failure::During(format!(
            "could not read {}'s answer to {}: {e}",
            server.command(),
            action.name()
        ))
    })
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

fn clip(s: &str) -> String {
    if s.chars().count() <= LINE_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(LINE_CHARS).collect();
    out.push('…');
    out
}

fn place(l: &Location) -> (String, Position) {
    (l.uri.as_str().to_string(), l.range.start)
}

/// The files results point into, read once per call; paths shown relative to the cwd.
struct Files {
    cwd: PathBuf,
    texts: HashMap<String, Option<String>>,
}

impl Files {
    fn new(cwd: &Path, synced_path: &Path, synced_text: &str) -> Self {
        let mut texts = HashMap::new();
        texts.insert(text::uri_of(synced_path), Some(synced_text.to_string()));
        Files {
            cwd: cwd.to_path_buf(),
            texts,
        }
    }

    fn shown(&self, uri: &str) -> String {
        match text::path_of(uri) {
            Some(p) => match p.strip_prefix(&self.cwd) {
                Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
                _ => p.display().to_string(),
            },
            None => uri.to_string(),
        }
    }

    fn text(&mut self, uri: &str) -> Option<&str> {
        self.texts
            .entry(uri.to_string())
            .or_insert_with(|| {
                let p = text::path_of(uri)?;
                std::fs::read(p)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            })
            .as_deref()
    }

    /// `path:line:col` (1-based, in characters).
    fn place(&mut self, uri: &str, p: Position) -> String {
        let shown = self.shown(uri);
        let (l, c) = match self.text(uri) {
            Some(t) => text::human(&lines(t), p),
            None => (p.line as usize + 1, p.character as usize + 1),
        };
        format!("{shown}:{l}:{c}")
    }

    /// `path:line:col  text of the line`.
    fn place_with_line(&mut self, uri: &str, p: Position) -> String {
        let at = self.place(uri, p);
        let line = self
            .text(uri)
            .and_then(|t| lines(t).get(p.line as usize).map(|l| clip(l.trim())))
            .unwrap_or_default();
        if line.is_empty() {
            at
        } else {
            format!("{at}  {line}")
        }
    }
}

fn listing(
    files: &mut Files,
    places: &[(String, Position)],
    none: impl FnOnce() -> String,
) -> String {
    let out = places
        .iter()
        .map(|(uri, p)| files.place_with_line(uri, *p))
        .collect();
    joined(out, none)
}

/// The lines, at most [`MAX_PLACES`] of them; `none()` when there are none.
fn joined(mut lines: Vec<String>, none: impl FnOnce() -> String) -> String {
    if lines.is_empty() {
        return none();
    }
    if lines.len() > MAX_PLACES {
        let more = lines.len() - MAX_PLACES;
        lines.truncate(MAX_PLACES);
        lines.push(format!("… {more} more"));
    }
    lines.join("\n")
}

fn hover_text(c: &HoverContents) -> String {
    fn marked(m: &MarkedString) -> String {
        match m {
            MarkedString::String(s) => s.clone(),
            MarkedString::LanguageString(ls) => format!("```{}\n{}\n```", ls.language, ls.value),
        }
    }
    match c {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(list) => list.iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value.clone(),
    }
}

fn kind_name(k: SymbolKind) -> &'static str {
    const NAMES: &[(SymbolKind, &str)] = &[
        (SymbolKind::FILE, "file"),
        (SymbolKind::MODULE, "module"),
        (SymbolKind::NAMESPACE, "namespace"),
        (SymbolKind::PACKAGE, "package"),
        (SymbolKind::CLASS, "class"),
        (SymbolKind::METHOD, "method"),
        (SymbolKind::PROPERTY, "property"),
        (SymbolKind::FIELD, "field"),
        (SymbolKind::CONSTRUCTOR, "constructor"),
        (SymbolKind::ENUM, "enum"),
        (SymbolKind::INTERFACE, "interface"),
        (SymbolKind::FUNCTION, "function"),
        (SymbolKind::VARIABLE, "variable"),
        (SymbolKind::CONSTANT, "constant"),
        (SymbolKind::STRING, "string"),
        (SymbolKind::NUMBER, "number"),
        (SymbolKind::BOOLEAN, "boolean"),
        (SymbolKind::ARRAY, "array"),
        (SymbolKind::OBJECT, "object"),
        (SymbolKind::KEY, "key"),
        (SymbolKind::NULL, "null"),
        (SymbolKind::ENUM_MEMBER, "enum member"),
        (SymbolKind::STRUCT, "struct"),
        (SymbolKind::EVENT, "event"),
        (SymbolKind::OPERATOR, "operator"),
        (SymbolKind::TYPE_PARAMETER, "type parameter"),
    ];
    NAMES
        .iter()
        .find(|(kind, _)| *kind == k)
        .map_or("symbol", |(_, name)| name)
}

#[allow(deprecated)] // `SymbolInformation::deprecated` is a field of the type, unused here
fn flat_symbols(files: &mut Files, list: &[SymbolInformation], out: &mut Vec<String>) {
    for s in list {
        let container = s
            .container_name
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(|c| format!(" (in {c})"))
            .unwrap_or_default();
        out.push(format!(
            "{}  {} {}{container}",
            files.place(s.location.uri.as_str(), s.location.range.start),
            kind_name(s.kind),
            s.name
        ));
    }
}

fn nested_symbols(
    files: &mut Files,
    uri: &str,
    list: &[DocumentSymbol],
    depth: usize,
    out: &mut Vec<String>,
) {
    for s in list {
        out.push(format!(
            "{}  {}{} {}",
            files.place(uri, s.selection_range.start),
            "  ".repeat(depth),
            kind_name(s.kind),
            s.name
        ));
        if let Some(children) = &s.children {
            nested_symbols(files, uri, children, depth + 1, out);
        }
    }
}

fn diagnostic_line(files: &mut Files, uri: &str, d: &lsp_types::Diagnostic) -> String {
    use lsp_types::DiagnosticSeverity as S;
    let severity = match d.severity {
        Some(S::ERROR) => "error",
        Some(S::WARNING) => "warning",
        Some(S::INFORMATION) => "info",
        Some(S::HINT) => "hint",
        Some(_) | None => "error",
    };
    let code = match &d.code {
        Some(lsp_types::NumberOrString::Number(n)) => format!(" {n}"),
        Some(lsp_types::NumberOrString::String(s)) => format!(" {s}"),
        None => String::new(),
    };
    let source = match (&d.source, code.is_empty()) {
        (Some(s), _) => format!(" [{s}{code}]"),
        (None, false) => format!(" [{}]", code.trim()),
        (None, true) => String::new(),
    };
    let message = d.message.lines().collect::<Vec<_>>().join(" ");
    format!(
        "{}  {severity}: {message}{source}",
        files.place(uri, d.range.start)
    )
}

/// Applies a rename's workspace edit to the files, one diff per file. Every file is checked
/// against the sandbox first (a server may edit through a symlink, or a definition it found
/// outside the project): when one is refused, nothing is written and each refusal is said.
fn rename(
    edit: WorkspaceEdit,
    new_name: &str,
    call: &Call<'_>,
    sandbox: &Sandbox,
    here: &str,
) -> Result<ToolOutput, Failure> {
    let cwd = call.cwd;
    let mut per_file: Vec<(String, Vec<TextEdit>)> = Vec::new();
    let mut add =
        |uri: String, edits: Vec<TextEdit>| match per_file.iter_mut().find(|(u, _)| *u == uri) {
            Some((_, e)) => e.extend(edits),
            None => per_file.push((uri, edits)),
        };
    let mut skipped_ops = 0;
    if let Some(changes) = edit.changes {
        for (uri, edits) in changes {
            add(uri.as_str().to_string(), edits);
        }
    }
    match edit.document_changes {
        None => {}
        Some(lsp_types::DocumentChanges::Edits(list)) => {
            for e in list {
                add(
                    e.text_document.uri.as_str().to_string(),
                    plain_edits(e.edits),
                );
            }
        }
        Some(lsp_types::DocumentChanges::Operations(ops)) => {
            for op in ops {
                match op {
                    lsp_types::DocumentChangeOperation::Edit(e) => add(
                        e.text_document.uri.as_str().to_string(),
                        plain_edits(e.edits),
                    ),
                    lsp_types::DocumentChangeOperation::Op(_) => skipped_ops += 1,
                }
            }
        }
    }
    per_file.retain(|(_, e)| !e.is_empty());
    if per_file.is_empty() {
        return Err(Failure::During(format!(
            "the server found nothing to rename at {here}"
        )));
    }
    per_file.sort_by(|a, b| a.0.cmp(&b.0));
    // Every file is checked before any is written: a rename is applied whole or not at all.
    let mut planned = Vec::new();
    for (uri, edits) in per_file {
        let Some(path) = text::path_of(&uri) else {
            return Err(Failure::During(format!(
                "the server asked to edit {uri}, not a file"
            )));
        };
        let old = std::fs::read(&path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| Failure::During(format!("could not read {}: {e}", path.display())))?;
        let new = text::apply_edits(&old, &edits)
            .map_err(|e| Failure::During(format!("{e} for {}", path.display())))?;
        planned.push((path, old, new, edits.len()));
    }
    let shown_of = |path: &Path| match path.strip_prefix(cwd) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    };
    let refusals: Vec<String> = planned
        .iter()
        .filter_map(|(path, ..)| {
            let refused = sandbox.check_write(cwd, path).err()?;
            Some(format!("{}: {refused}", shown_of(path)))
        })
        .collect();
    if !refusals.is_empty() {
        return Ok(ToolOutput::failed(format!(
            "[lsp: the rename to {new_name} was not done, nothing was written: the sandbox refuses {} of its {} file{}]\n{}",
            refusals.len(),
            planned.len(),
            if planned.len() == 1 { "" } else { "s" },
            refusals.join("\n")
        )));
    }
    let check = |p: &Path| sandbox.check_write(cwd, p);
    let mut diffs = Vec::new();
    let mut lines_out = Vec::new();
    let total: usize = planned.iter().map(|p| p.3).sum();
    for (path, old, new, n) in planned {
        let shown = shown_of(&path);
        let written = writer::write_noted(
            &path,
            &shown,
            new.as_bytes(),
            FileKind::Ordinary,
            Check::Fenced(&check),
            call.journal(),
        );
        if let Err(e) = written {
            return Err(Failure::During(format!(
                "{e}; files written before it: {}",
                if lines_out.is_empty() {
                    "none".to_string()
                } else {
                    lines_out.join(", ")
                }
            )));
        }
        lines_out.push(format!(
            "{shown} ({n} edit{})",
            if n == 1 { "" } else { "s" }
        ));
        diffs.push(FileDiff {
            path,
            old_text: Some(old),
            new_text: new,
        });
    }
    let mut text = format!(
        "renamed to {new_name}: {total} edit{} in {} file{}\n{}",
        if total == 1 { "" } else { "s" },
        diffs.len(),
        if diffs.len() == 1 { "" } else { "s" },
        lines_out.join("\n")
    );
    if skipped_ops > 0 {
        let _ = write!(
            text,
            "\n[{skipped_ops} file operation(s) the server asked for (create, rename, delete) were not done]"
        );
    }
    let mut out = ToolOutput::completed(text);
    out.diffs = diffs;
    Ok(out)
}

fn plain_edits(
    edits: Vec<lsp_types::OneOf<TextEdit, lsp_types::AnnotatedTextEdit>>,
) -> Vec<TextEdit> {
    edits
        .into_iter()
        .map(|e| match e {
            lsp_types::OneOf::Left(t) => t,
            lsp_types::OneOf::Right(a) => a.text_edit,
        })
        .collect()
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
        assert!(t.gated(&json!({"action": "rename"})));
        assert!(!t.gated(&json!({"action": "hover"})));
    }
}
