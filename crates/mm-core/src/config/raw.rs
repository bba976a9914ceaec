//! Phase one: every layer read into a TOML table, checked for unknown keys, and merged key by key,
//! remembering which layer set each leaf.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::{ConfigError, Flags};

/// Where an effective value came from, as `mm config` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    UserFile(PathBuf),
    ProjectFile(PathBuf),
    /// `--config FILE`.
    ConfigFile(PathBuf),
    /// An environment variable, by name.
    Env(String),
    /// A command-line flag: `-c`, `--url`, `--model`, `--yolo`, `--no-yolo`.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::UserFile(p) | Source::ProjectFile(p) | Source::ConfigFile(p) => {
                write!(f, "{}", p.display())
            }
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag(flag) => f.write_str(flag),
        }
    }
}

/// One layer of configuration, before merging.
pub(super) struct Layer {
    pub table: Table,
    pub source: Source,
}

/// Reads and parses one file; a missing optional file is no layer.
pub(super) fn read_file(path: &Path, required: bool) -> Result<Option<Table>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if !required && err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                err,
            });
        }
    };
    parse_text(path, &text).map(Some)
}

/// Parses one file's text (`path` only names it in errors).
pub(super) fn parse_text(path: &Path, text: &str) -> Result<Table, ConfigError> {
    toml::from_str::<Table>(text).map_err(|err| ConfigError::Parse {
        path: path.to_path_buf(),
        message: err.to_string().trim_end().to_string(),
    })
}

/// The shape of the configuration, for unknown-key warnings and for reading `-c` values.
#[derive(Clone, Copy)]
pub(super) enum Shape {
    /// A leaf whose value is a string: a `-c` value that TOML reads otherwise is kept as text.
    Str,
    /// Any other leaf (its type is checked when resolving).
    Leaf,
    Table(&'static [(&'static str, Shape)]),
    /// A table whose keys are names chosen by the user.
    Map(&'static Shape),
    /// An array of tables.
    Array(&'static Shape),
}

const HOOK: Shape = Shape::Table(&[
    ("command", Shape::Str),
    ("match", Shape::Str),
    ("timeout", Shape::Leaf),
    ("failClosed", Shape::Leaf),
    ("sandbox", Shape::Leaf),
    ("sandboxWritable", Shape::Leaf),
    ("networkAllow", Shape::Leaf),
]);

/// The hook events as docs/hooks.md names them, in the order `mm config` lists them.
pub(super) const HOOK_EVENTS: [&str; 6] = [
    "sessionStart",
    "userPromptSubmit",
    "preToolCall",
    "postToolCall",
    "turnEnd",
    "preCompact",
];

const STRING_MAP: Shape = Shape::Map(&Shape::Str);

const ROOT: Shape = Shape::Table(&[
    ("yolo", Shape::Leaf),
    ("contextWindow", Shape::Leaf),
    ("maxSteps", Shape::Leaf),
    ("systemPrompt", Shape::Str),
    ("trustedProjects", Shape::Leaf),
    ("distrustedProjects", Shape::Leaf),
    (
        "model",
        Shape::Table(&[
            ("url", Shape::Str),
            ("name", Shape::Str),
            ("apiKey", Shape::Str),
            ("temperature", Shape::Leaf),
            ("maxTokens", Shape::Leaf),
            ("requestTimeout", Shape::Leaf),
            ("textToolCalls", Shape::Str),
        ]),
    ),
    (
        "acp",
        Shape::Table(&[
            ("name", Shape::Str),
            ("title", Shape::Str),
            ("clientMcpServers", Shape::Leaf),
            ("maxLineBytes", Shape::Leaf),
        ]),
    ),
    (
        "sessions",
        Shape::Table(&[
            ("enabled", Shape::Leaf),
            ("dir", Shape::Str),
            ("keep", Shape::Leaf),
        ]),
    ),
    (
        "context",
        Shape::Table(&[("threshold", Shape::Leaf), ("keepLastTurns", Shape::Leaf)]),
    ),
    (
        "loop",
        Shape::Table(&[
            ("maxRepeats", Shape::Leaf),
            ("detectRepetition", Shape::Leaf),
            ("repeatSpan", Shape::Leaf),
            ("repeatCount", Shape::Leaf),
        ]),
    ),
    (
        "tools",
        Shape::Table(&[
            ("maxOutput", Shape::Leaf),
            (
                "bash",
                Shape::Table(&[("timeout", Shape::Leaf), ("path", Shape::Leaf)]),
            ),
            ("sandbox", Shape::Str),
            ("sandboxWritable", Shape::Leaf),
            ("sandboxRequired", Shape::Leaf),
            ("sandboxHidden", Shape::Leaf),
            ("sandboxReadable", Shape::Leaf),
            ("task", Shape::Table(&[("maxSteps", Shape::Leaf)])),
            ("network", Shape::Str),
            ("networkAllow", Shape::Leaf),
            ("networkExpose", Shape::Leaf),
        ]),
    ),
    ("skills", Shape::Table(&[("dirs", Shape::Leaf)])),
    (
        "hooks",
        Shape::Table(&[
            (HOOK_EVENTS[0], Shape::Array(&HOOK)),
            (HOOK_EVENTS[1], Shape::Array(&HOOK)),
            (HOOK_EVENTS[2], Shape::Array(&HOOK)),
            (HOOK_EVENTS[3], Shape::Array(&HOOK)),
            (HOOK_EVENTS[4], Shape::Array(&HOOK)),
            (HOOK_EVENTS[5], Shape::Array(&HOOK)),
        ]),
    ),
    (
        "agents",
        Shape::Map(&Shape::Table(&[
            ("command", Shape::Str),
            ("args", Shape::Leaf),
            ("env", STRING_MAP),
            ("sandbox", Shape::Leaf),
            ("sandboxWritable", Shape::Leaf),
            ("networkAllow", Shape::Leaf),
        ])),
    ),
    (
        "mcp",
        Shape::Table(&[(
            "servers",
            Shape::Map(&Shape::Table(&[
                ("command", Shape::Str),
                ("args", Shape::Leaf),
                ("env", STRING_MAP),
                ("permissions", Shape::Str),
                ("timeout", Shape::Leaf),
                ("sandbox", Shape::Leaf),
                ("sandboxWritable", Shape::Leaf),
                ("networkAllow", Shape::Leaf),
            ])),
        )]),
    ),
    (
        "lsp",
        Shape::Table(&[(
            "servers",
            Shape::Map(&Shape::Table(&[
                ("command", Shape::Str),
                ("args", Shape::Leaf),
                ("extensions", Shape::Leaf),
                ("sandbox", Shape::Leaf),
                ("sandboxWritable", Shape::Leaf),
                ("networkAllow", Shape::Leaf),
            ])),
        )]),
    ),
]);

/// Appends `key` to a dotted path, quoting it when it is not a bare TOML key.
pub(super) fn join(prefix: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare { key.to_string() } else { quote(key) };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

/// A TOML basic string.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The dotted paths of the keys in `table` that the configuration does not know.
pub(super) fn unknown_keys(table: &Table) -> Vec<String> {
    let mut out = Vec::new();
    walk_table(table, ROOT, "", &mut out);
    out
}

fn walk_table(table: &Table, shape: Shape, prefix: &str, out: &mut Vec<String>) {
    for (key, value) in table {
        let path = join(prefix, key);
        match child_shape(shape, key) {
            Some(child) => walk(value, child, &path, out),
            None => leaves(value, &path, out),
        }
    }
}

fn child_shape(shape: Shape, key: &str) -> Option<Shape> {
    match shape {
        Shape::Table(keys) => keys.iter().find(|(k, _)| *k == key).map(|(_, s)| *s),
        Shape::Map(inner) => Some(*inner),
        Shape::Str | Shape::Leaf | Shape::Array(_) => None,
    }
}

fn walk(value: &Value, shape: Shape, path: &str, out: &mut Vec<String>) {
    match (shape, value) {
        (Shape::Table(_) | Shape::Map(_), Value::Table(t)) => walk_table(t, shape, path, out),
        (Shape::Array(inner), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, *inner, &format!("{path}[{i}]"), out);
            }
        }
        // A leaf, or a value of the wrong type: resolving reports the latter.
        _ => {}
    }
}

/// Every leaf under an unknown key, so that `[modle] url = …` warns about `modle.url`.
pub(super) fn leaves(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Table(t) if !t.is_empty() => {
            for (k, v) in t {
                leaves(v, &join(path, k), out);
            }
        }
        _ => out.push(path.to_string()),
    }
}

/// The shape at a dotted path given as segments, if the configuration knows it.
fn shape_at(segments: &[String]) -> Option<Shape> {
    let mut shape = ROOT;
    for seg in segments {
        shape = child_shape(shape, seg)?;
    }
    Some(shape)
}

/// Merges `layer` into `base`: tables key by key, hook arrays and `tools.sandboxHidden`
/// concatenated (a layer adds hidden places, never uncovers one), anything else replaced.
pub(super) fn merge(
    base: &mut Table,
    layer: Table,
    source: &Source,
    prefix: &str,
    sources: &mut BTreeMap<String, Source>,
) {
    for (key, value) in layer {
        let path = join(prefix, &key);
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(t)) => merge(b, t, source, &path, sources),
            (Some(Value::Array(b)), Value::Array(items)) if prefix == "hooks" => {
                let start = b.len();
                for (i, item) in items.into_iter().enumerate() {
                    sources.insert(format!("{path}[{}]", start + i), source.clone());
                    b.push(item);
                }
            }
            (Some(Value::Array(b)), Value::Array(items)) if path == ADDED_LIST => {
                b.extend(items);
                sources.insert(path, source.clone());
            }
            (_, value) => {
                forget(&path, sources);
                record(&value, source, prefix, &key, sources);
                base.insert(key, value);
            }
        }
    }
}

/// The list every layer adds to rather than replaces: a layer may hide more, never less.
const ADDED_LIST: &str = "tools.sandboxHidden";

/// Drops the sources of a path and everything under it.
fn forget(path: &str, sources: &mut BTreeMap<String, Source>) {
    let dotted = format!("{path}.");
    let indexed = format!("{path}[");
    sources.retain(|k, _| k != path && !k.starts_with(&dotted) && !k.starts_with(&indexed));
}

/// Records `source` for every leaf of a value newly placed at `prefix.key`.
fn record(
    value: &Value,
    source: &Source,
    prefix: &str,
    key: &str,
    sources: &mut BTreeMap<String, Source>,
) {
    let path = join(prefix, key);
    match value {
        Value::Table(t) if !t.is_empty() => {
            for (k, v) in t {
                record(v, source, &path, k, sources);
            }
        }
        Value::Array(items) if prefix == "hooks" => {
            for i in 0..items.len() {
                sources.insert(format!("{path}[{i}]"), source.clone());
            }
        }
        _ => {
            sources.insert(path, source.clone());
        }
    }
}

/// A table holding `value` at the dotted path `segments`.
fn nest(segments: &[String], value: Value) -> Table {
    let mut table = Table::new();
    match segments.split_first() {
        Some((first, [])) => {
            table.insert(first.clone(), value);
        }
        Some((first, rest)) => {
            table.insert(first.clone(), Value::Table(nest(rest, value)));
        }
        None => {}
    }
    table
}

fn path_of(segments: &[&str]) -> Vec<String> {
    segments.iter().map(|s| s.to_string()).collect()
}

/// One layer per environment variable that mm reads, in a fixed order.
pub(super) fn env_layers(env: &BTreeMap<String, String>) -> Result<Vec<Layer>, ConfigError> {
    let mut layers = Vec::new();
    let mut push = |var: &str, segments: &[&str], value: Value| {
        layers.push(Layer {
            table: nest(&path_of(segments), value),
            source: Source::Env(var.to_string()),
        });
    };
    // An empty variable counts as unset, as shells make it easy to clear one that way.
    let get = |var: &str| env.get(var).filter(|v| !v.is_empty());
    if let Some(url) = get("MM_MODEL_URL") {
        push(
            "MM_MODEL_URL",
            &["model", "url"],
            Value::String(url.clone()),
        );
    }
    if let Some(name) = get("MM_MODEL") {
        push("MM_MODEL", &["model", "name"], Value::String(name.clone()));
    }
    if let Some(key) = get(super::API_KEY_VAR) {
        push(
            super::API_KEY_VAR,
            &["model", "apiKey"],
            Value::String(key.clone()),
        );
    }
    if let Some(raw) = get("MM_YOLO") {
        let yolo = match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" => true,
            "0" | "false" => false,
            _ => {
                return Err(ConfigError::Env {
                    var: "MM_YOLO".into(),
                    expected: "1, 0, true or false",
                    value: raw.clone(),
                });
            }
        };
        push("MM_YOLO", &["yolo"], Value::Boolean(yolo));
    }
    if let Some(mode) = get("MM_SANDBOX") {
        push(
            "MM_SANDBOX",
            &["tools", "sandbox"],
            Value::String(mode.clone()),
        );
    }
    if let Some(raw) = get("MM_CONTEXT_WINDOW") {
        let tokens = raw
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| ConfigError::Env {
                var: "MM_CONTEXT_WINDOW".into(),
                expected: "a non-negative integer",
                value: raw.clone(),
            })?;
        push(
            "MM_CONTEXT_WINDOW",
            &["contextWindow"],
            Value::Integer(tokens),
        );
    }
    Ok(layers)
}

/// One layer per named flag.
pub(super) fn flag_layers(flags: &Flags) -> Vec<Layer> {
    let mut layers = Vec::new();
    let mut push = |flag: &str, segments: &[&str], value: Value| {
        layers.push(Layer {
            table: nest(&path_of(segments), value),
            source: Source::Flag(flag.to_string()),
        });
    };
    if let Some(url) = &flags.url {
        push("--url", &["model", "url"], Value::String(url.clone()));
    }
    if let Some(model) = &flags.model {
        push("--model", &["model", "name"], Value::String(model.clone()));
    }
    match flags.yolo {
        Some(true) => push("--yolo", &["yolo"], Value::Boolean(true)),
        Some(false) => push("--no-yolo", &["yolo"], Value::Boolean(false)),
        None => {}
    }
    if let Some(mode) = &flags.sandbox {
        push(
            "--sandbox",
            &["tools", "sandbox"],
            Value::String(mode.clone()),
        );
    }
    layers
}

/// A `-c key=value` layer: the key is a dotted TOML key, the value a TOML value or else text.
pub(super) fn override_layer(key: &str, value: &str) -> Result<Layer, ConfigError> {
    let bad = |problem: &str| ConfigError::Override {
        text: format!("{key}={value}"),
        problem: problem.to_string(),
    };
    if key.contains(['\n', '\r', '=', '#']) {
        return Err(bad("not a valid key"));
    }
    let probe =
        toml::from_str::<Table>(&format!("{key} = 0")).map_err(|_| bad("not a valid key"))?;
    let mut segments = Vec::new();
    let mut table = &probe;
    loop {
        let mut entries = table.iter();
        match (entries.next(), entries.next()) {
            (Some((k, v)), None) => {
                segments.push(k.clone());
                match v {
                    Value::Table(t) => table = t,
                    _ => break,
                }
            }
            _ => return Err(bad("not a valid key")),
        }
    }
    let text = || Value::String(value.to_string());
    let parsed = toml::from_str::<Table>(&format!("v = {value}"))
        .ok()
        .filter(|t| t.len() == 1)
        .and_then(|mut t| t.remove("v"));
    let value = match (parsed, shape_at(&segments)) {
        // `-c model.apiKey=12345` means the text, not the number.
        (Some(v), Some(Shape::Str)) if !v.is_str() => text(),
        (Some(v), _) => v,
        (None, _) => text(),
    };
    Ok(Layer {
        table: nest(&segments, value),
        source: Source::Flag("-c".into()),
    })
}
