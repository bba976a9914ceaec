//! The `lsp` tool's answers as text: places as `path:line:col  text of the line` (paths
//! relative to the cwd), symbols, hover text, diagnostics; at most [`MAX_PLACES`] lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{
    DocumentSymbol, HoverContents, Location, MarkedString, Position, SymbolInformation, SymbolKind,
    WorkspaceSymbol,
};

use crate::lsp::text::{self, lines};

/// Places listed at most in one result.
const MAX_PLACES: usize = 200;
/// Characters of a line shown beside a place.
const LINE_CHARS: usize = 160;

pub(super) fn clip(s: &str) -> String {
    if s.chars().count() <= LINE_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(LINE_CHARS).collect();
    out.push('…');
    out
}

pub(super) fn place(l: &Location) -> (String, Position) {
    (l.uri.as_str().to_string(), l.range.start)
}

/// The files results point into, read once per call; paths shown relative to the cwd.
pub(super) struct Files {
    cwd: PathBuf,
    texts: HashMap<String, Option<String>>,
}

impl Files {
    pub(super) fn new(cwd: &Path, synced_path: &Path, synced_text: &str) -> Self {
        let mut texts = HashMap::new();
        texts.insert(text::uri_of(synced_path), Some(synced_text.to_string()));
        Files {
            cwd: cwd.to_path_buf(),
            texts,
        }
    }

    fn shown(&self, uri: &str) -> String {
        match text::path_of(uri) {
            Some(p) => crate::paths::for_model_in(&self.cwd, &p),
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
    pub(super) fn place(&mut self, uri: &str, p: Position) -> String {
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

pub(super) fn listing(
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
pub(super) fn joined(mut lines: Vec<String>, none: impl FnOnce() -> String) -> String {
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

pub(super) fn hover_text(c: &HoverContents) -> String {
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
pub(super) fn flat_symbols(files: &mut Files, list: &[SymbolInformation], out: &mut Vec<String>) {
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

pub(super) fn nested_symbols(
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

pub(super) fn diagnostic_line(files: &mut Files, uri: &str, d: &lsp_types::Diagnostic) -> String {
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

/// The symbols of a `workspace/symbol` answer in its newer shape (`WorkspaceSymbol`, whose
/// place may be a bare file).
pub(super) fn workspace_symbols(
    files: &mut Files,
    list: &[WorkspaceSymbol],
    out: &mut Vec<String>,
) {
    for s in list {
        let (uri, p) = match &s.location {
            lsp_types::OneOf::Left(l) => (l.uri.as_str().to_string(), l.range.start),
            lsp_types::OneOf::Right(w) => (w.uri.as_str().to_string(), Position::default()),
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
