//! Configuration: TOML layers resolved once into a typed [`Config`] (docs/config.md).
//!
//! Two phases: each layer is parsed into a TOML table and merged key by key; the merged table is
//! then resolved into [`Config`] with defaults and validated values. Config is passed in, never
//! read from a global.

pub mod edit;
mod raw;
mod report;
mod resolve;
mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use raw::Source;
use raw::{
    Layer, env_layers, flag_layers, merge, override_layer, parse_text, read_file, unknown_keys,
};
pub use trust::{AGENT_SANDBOX_KEY, HARMLESS_KEYS, IgnoredKeys, UntrustedProject};

/// The effective configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub yolo: bool,
    /// Tokens; 0: probe the server.
    pub context_window: u64,
    pub max_steps: u32,
    pub system_prompt: String,
    pub trusted_projects: Vec<PathBuf>,
    /// Projects the user said "never" for at the trust prompt: not asked again (user layers only).
    pub distrusted_projects: Vec<PathBuf>,
    pub model: ModelConfig,
    pub acp: AcpConfig,
    pub sessions: SessionsConfig,
    pub context: ContextConfig,
    pub loop_: LoopConfig,
    pub tools: ToolsConfig,
    pub skills: SkillsConfig,
    pub hooks: HooksConfig,
    pub agents: BTreeMap<String, AgentConfig>,
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    pub lsp_servers: BTreeMap<String, LspServerConfig>,
    /// How long MCP servers get (not configuration keys: fixed by docs/tools.md, shortened by
    /// tests).
    pub mcp_timing: McpTiming,
    /// Warnings found while loading (unknown keys, ignored project commands), for the banner.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// OpenAI-compatible base URL; empty: detect.
    pub url: String,
    /// Empty: the server's loaded or first model.
    pub name: String,
    pub api_key: String,
    pub temperature: Option<f64>,
    /// `max_tokens` of every request: `None` (unset) is the default cap, see
    /// [`ModelConfig::answer_cap`]; `Some(0)` sends none.
    pub max_tokens: Option<u64>,
    /// How long the server may send nothing before the call fails (`model.requestTimeout`,
    /// whole seconds in the files).
    pub request_timeout: Duration,
    /// Read tool calls that the model wrote as text.
    pub text_tool_calls: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AcpConfig {
    pub name: String,
    pub title: String,
    /// Start the stdio MCP servers an editor passes in `session/new` (`acp.clientMcpServers`);
    /// off: they are counted in the log and ignored.
    pub client_mcp_servers: bool,
    /// The longest input line accepted, in bytes (`acp.maxLineBytes`); a longer one is
    /// discarded as it arrives and answered with a parse error.
    pub max_line_bytes: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionsConfig {
    pub enabled: bool,
    /// Relative to the session's cwd.
    pub dir: PathBuf,
    /// `dir` was set by the user's own layers (user file, `--config`, environment, flags): it
    /// may lead outside the session's cwd, which a project's `dir` (or the default's symlink)
    /// may not (`session::resolve_dir`).
    pub user_dir: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextConfig {
    pub threshold: f64,
    pub keep_last_turns: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoopConfig {
    pub max_repeats: u32,
    /// Stop an answer that repeats itself (`loop.detectRepetition`).
    pub detect_repetition: bool,
    /// The longest span compared character by character (`loop.repeatSpan`).
    pub repeat_span: usize,
    /// How many times in a row a span must come back (`loop.repeatCount`).
    pub repeat_count: usize,
}

impl LoopConfig {
    /// The repetition detector's limits; `None` when it is off.
    pub fn repetition(&self) -> Option<RepeatLimits> {
        self.detect_repetition.then_some(RepeatLimits {
            span: self.repeat_span,
            count: self.repeat_count,
        })
    }
}

/// The repetition detector's thresholds, from `[loop]` (the model client's detector takes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatLimits {
    /// The longest unit compared character by character (`loop.repeatSpan`).
    pub span: usize,
    /// How many times in a row a unit must come (`loop.repeatCount`).
    pub count: usize,
}

impl RepeatLimits {
    /// The smallest span and count that make sense (and what `[loop]` accepts).
    pub const MIN_SPAN: usize = 8;
    pub const MIN_COUNT: usize = 2;
    /// The largest span accepted: the detector's cost is linear in it.
    pub const MAX_SPAN: usize = 2000;
    /// The largest count accepted.
    pub const MAX_COUNT: usize = 1000;
}

/// The smallest default answer cap (tokens).
pub const ANSWER_CAP_MIN: u64 = 2048;

impl ModelConfig {
    /// The `max_tokens` sent with a request, given the context window (0: unknown):
    /// `model.maxTokens` when set (0: none); otherwise a quarter of the window, at least
    /// [`ANSWER_CAP_MIN`] but never more than half of it; none when the window is unknown.
    pub fn answer_cap(&self, window: u64) -> Option<u64> {
        match self.max_tokens {
            Some(0) => None,
            Some(n) => Some(n),
            None if window == 0 => None,
            None => Some((window / 4).max(ANSWER_CAP_MIN).min(window / 2).max(1)),
        }
    }
}

/// `tools.sandbox` (docs/sandbox.md): what the sandbox lets commands and file tools write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// No fence (the default).
    #[default]
    Off,
    /// Reads anywhere; writes only under the session's cwd, the temp folders and
    /// `tools.sandboxWritable`.
    WorkspaceWrite,
    /// No writes at all (device files a shell needs aside).
    ReadOnly,
}

impl SandboxMode {
    /// The names `tools.sandbox` and `--sandbox` take.
    pub const NAMES: [&'static str; 3] = ["off", "workspace-write", "read-only"];

    pub fn parse(name: &str) -> Option<SandboxMode> {
        match name {
            "off" => Some(SandboxMode::Off),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "read-only" => Some(SandboxMode::ReadOnly),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    /// Characters of any tool result.
    pub max_output: usize,
    /// A `bash` call's limit when it gives none (`tools.bash.timeout`, whole seconds in the
    /// files).
    pub bash_timeout: Duration,
    /// `tools.bash.path`: the bash that runs `bash` calls (and hooks, on Windows); unset, `bash`
    /// on Unix and Git for Windows' on Windows (docs/platforms.md).
    pub bash_path: Option<PathBuf>,
    /// `fetch_content`: the whole fetch, from connecting to the last byte (30 s; not a
    /// configuration key: tests set it in milliseconds).
    pub fetch_timeout: Duration,
    /// `lsp`: starting a language server, and each of its answers (not a configuration key).
    pub lsp_timeout: Duration,
    /// `lsp diagnostics`: how long to wait for the server's `publishDiagnostics` (not a
    /// configuration key).
    pub lsp_diagnostics_wait: Duration,
    /// `tools.sandbox` (docs/sandbox.md); never set by a project file.
    pub sandbox: SandboxMode,
    /// `tools.sandboxWritable`: more folders commands may write in (absolute, `~/` expanded).
    pub sandbox_writable: Vec<PathBuf>,
    /// `tools.sandboxRequired`: a fence the kernel cannot enforce whole is an error.
    pub sandbox_required: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SkillsConfig {
    pub dirs: Vec<PathBuf>,
}

/// Where a command-defining entry came from: only trusted projects' entries run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    User,
    Project,
    /// `--config FILE` or `-c`.
    CommandLine,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    pub command: String,
    /// A regular expression matched against the whole tool name; `None`: every tool.
    pub matcher: Option<String>,
    /// Whole seconds in the files.
    pub timeout: Duration,
    pub fail_closed: bool,
    pub origin: Origin,
}

/// Hooks per event, in the order they run (the user's before the project's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HooksConfig {
    pub session_start: Vec<HookConfig>,
    pub user_prompt_submit: Vec<HookConfig>,
    pub pre_tool_call: Vec<HookConfig>,
    pub post_tool_call: Vec<HookConfig>,
    pub turn_end: Vec<HookConfig>,
    pub pre_compact: Vec<HookConfig>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// `agents.<name>.sandboxWritable`: folders this agent's fence (only) lets it write in — its
    /// own state (`~/.codex`); absolute, `~/` expanded; user layers only, like the sandbox keys.
    pub sandbox_writable: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpPermissions {
    Allow,
    Ask,
}

#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub permissions: McpPermissions,
    /// How long one call may take before it is cancelled (`timeout`, whole seconds in the
    /// files).
    pub timeout: Duration,
}

impl McpServerConfig {
    /// A server run as `command args…` with the defaults of the other keys.
    pub fn new(command: impl Into<String>, args: Vec<String>) -> Self {
        McpServerConfig {
            command: command.into(),
            args,
            env: BTreeMap::new(),
            permissions: McpPermissions::Allow,
            timeout: MCP_CALL_TIMEOUT,
        }
    }
}

/// `acp.maxLineBytes` when not configured: 8 MB.
pub const ACP_MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// A call's limit when the server's `timeout` is not set.
pub const MCP_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The fixed times of MCP servers (docs/tools.md, "MCP tools").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTiming {
    /// From the spawn to the tool list: initialize and tools/list must be answered within it.
    pub start: Duration,
    /// How long the first model call of a turn waits for lists still coming.
    pub list_wait: Duration,
    /// A server without a call for this long is stopped (its tools stay offered).
    pub idle: Duration,
    /// A server that failed is started again at most this often.
    pub retry: Duration,
}

impl Default for McpTiming {
    fn default() -> Self {
        McpTiming {
            start: Duration::from_secs(30),
            list_wait: Duration::from_secs(5),
            idle: Duration::from_secs(600),
            retry: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LspServerConfig {
    pub command: String,
    pub args: Vec<String>,
    pub extensions: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            yolo: true,
            context_window: 0,
            max_steps: 50,
            system_prompt: String::new(),
            trusted_projects: Vec::new(),
            distrusted_projects: Vec::new(),
            model: ModelConfig {
                url: String::new(),
                name: String::new(),
                api_key: String::new(),
                temperature: None,
                max_tokens: None,
                request_timeout: Duration::from_secs(600),
                text_tool_calls: true,
            },
            acp: AcpConfig {
                name: "bob".into(),
                title: "Bob (bash-first agent)".into(),
                client_mcp_servers: false,
                max_line_bytes: ACP_MAX_LINE_BYTES,
            },
            sessions: SessionsConfig {
                enabled: false,
                dir: PathBuf::from(".mm/sessions"),
                user_dir: false,
            },
            context: ContextConfig {
                threshold: 0.8,
                keep_last_turns: 2,
            },
            loop_: LoopConfig {
                max_repeats: 3,
                detect_repetition: true,
                repeat_span: 200,
                repeat_count: 10,
            },
            tools: ToolsConfig {
                max_output: 30_000,
                bash_timeout: Duration::from_secs(120),
                bash_path: None,
                fetch_timeout: Duration::from_secs(30),
                lsp_timeout: Duration::from_secs(20),
                lsp_diagnostics_wait: Duration::from_secs(5),
                sandbox: SandboxMode::Off,
                sandbox_writable: Vec::new(),
                sandbox_required: false,
            },
            skills: SkillsConfig { dirs: Vec::new() },
            hooks: HooksConfig::default(),
            agents: BTreeMap::new(),
            mcp_servers: BTreeMap::new(),
            lsp_servers: BTreeMap::new(),
            mcp_timing: McpTiming::default(),
            warnings: Vec::new(),
        }
    }
}

/// The most a hook's `match` pattern may compile to. The regex crate's default (10 MB, and as
/// much again for its lazy DFA) lets a short pattern such as `\w{200}{200}` take tens of megabytes;
/// a pattern over tool names never needs more than a few kilobytes.
const HOOK_PATTERN_LIMIT: usize = 1 << 20;

/// A hook's `match` pattern, compiled anchored (it is matched against the whole tool name) and
/// within [`HOOK_PATTERN_LIMIT`]; the one place that compiles it, for the config check and the
/// hooks alike.
pub fn hook_pattern(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(HOOK_PATTERN_LIMIT)
        .dfa_size_limit(HOOK_PATTERN_LIMIT)
        .build()
}

/// A duration the way the configuration and its messages write it: whole seconds as an integer
/// (`120`), anything finer as a decimal (`0.25`, which only code, such as a test, can set).
pub fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        d.as_secs_f64().to_string()
    }
}

/// What [`load`] needs from the process; the library never reads the environment itself.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub cwd: PathBuf,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `--config FILE` (relative to `cwd`).
    pub config_file: Option<PathBuf>,
    /// The process environment (only the `MM_*` variables are read).
    pub env: BTreeMap<String, String>,
    /// `-c key=value` pairs, in command-line order, applied after `flags`; shown as `-c`.
    pub overrides: Vec<(String, String)>,
    /// `--url`, `--model`, `--yolo`/`--no-yolo`, `--sandbox`, kept apart so `mm config` can
    /// name them.
    pub flags: Flags,
}

/// The named flags that set configuration keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `--url` → `model.url`.
    pub url: Option<String>,
    /// `--model` → `model.name`.
    pub model: Option<String>,
    /// `--yolo` → `Some(true)`, `--no-yolo` → `Some(false)`.
    pub yolo: Option<bool>,
    /// `--sandbox MODE` → `tools.sandbox`.
    pub sandbox: Option<String>,
}

/// The loaded configuration and where each value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// Source of each leaf key set by a layer, by dotted path (`model.url`,
    /// `hooks.preToolCall[0]`); a key absent here has its default value.
    pub sources: BTreeMap<String, Source>,
    /// The user's config file, whether or not it exists.
    pub user_file: Option<PathBuf>,
    /// Set when the project defined commands that were ignored (the interactive session offers
    /// to trust it).
    pub untrusted_project: Option<UntrustedProject>,
    /// Set when an untrusted project's file set keys beyond [`HARMLESS_KEYS`], which were
    /// ignored.
    pub ignored_keys: Option<IgnoredKeys>,
}

impl Loaded {
    /// The source of a key's effective value (`Source::Default` when no layer set it).
    pub fn source_of(&self, key: &str) -> Source {
        source_of(&self.sources, key)
    }

    /// What `mm config` prints: one `key = value  # source` line per leaf key, API keys masked.
    pub fn report(&self) -> String {
        report::report(self)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {err}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        err: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{place}: {key} must be {expected}, got {got}")]
    WrongType {
        place: String,
        key: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{place}: {key} {problem}")]
    Invalid {
        place: String,
        key: String,
        problem: String,
    },
    #[error("{var} must be {expected}, got {value:?}")]
    Env {
        var: String,
        expected: &'static str,
        value: String,
    },
    #[error("-c {text}: {problem}")]
    Override { text: String, problem: String },
}

/// The user's config file: `$XDG_CONFIG_HOME/mm/config.toml`, else `$HOME/.config/mm/config.toml`.
pub fn user_config_path(home: Option<&Path>, xdg_config_home: Option<&Path>) -> Option<PathBuf> {
    // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    match xdg_config_home.filter(|x| x.is_absolute()) {
        Some(xdg) => Some(xdg.join("mm").join("config.toml")),
        None => home
            .filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(".config").join("mm").join("config.toml")),
    }
}

/// Splits a `-c` argument at its first `=`.
pub fn parse_override(arg: &str) -> Result<(String, String), ConfigError> {
    match arg.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err(ConfigError::Override {
            text: arg.to_string(),
            problem: "expected key=value".into(),
        }),
    }
}

/// The source of `key`: its own, else that of a key under it, else that of the key above it.
fn source_of(sources: &BTreeMap<String, Source>, key: &str) -> Source {
    if let Some(s) = sources.get(key) {
        return s.clone();
    }
    let dotted = format!("{key}.");
    let indexed = format!("{key}[");
    if let Some((_, s)) = sources
        .iter()
        .find(|(k, _)| k.starts_with(&dotted) || k.starts_with(&indexed))
    {
        return s.clone();
    }
    let mut path = key;
    while let Some(cut) = path.rfind(['.', '[']) {
        path = &path[..cut];
        if let Some(s) = sources.get(path) {
            return s.clone();
        }
    }
    Source::Default
}

fn canonical(path: &Path) -> PathBuf {
    crate::paths::canonical(path).unwrap_or_else(|_| crate::paths::normalize(path))
}

/// The variable `model.apiKey` is read from.
pub const API_KEY_VAR: &str = "MM_API_KEY";

/// Every variable mm reads the model server's key from: no child inherits them
/// (`process::Supervisor`).
pub const KEY_VARS: [&str; 1] = [API_KEY_VAR];

/// The projects whose own commands run (user layers only).
pub const TRUSTED_KEY: &str = "trustedProjects";
/// The projects the user answered "never" for at the trust prompt (user layers only).
pub const DISTRUSTED_KEY: &str = "distrustedProjects";

/// The user's config file as messages name it: `~/…` under the home folder.
pub fn shown_file(user_file: Option<&Path>, home: Option<&Path>) -> String {
    match (user_file, home) {
        (Some(f), Some(h)) => match f.strip_prefix(h) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => f.display().to_string(),
        },
        (Some(f), None) => f.display().to_string(),
        (None, _) => "your user config".to_string(),
    }
}

/// One configuration file's text resolved alone, as `--config FILE` would be with no other
/// layer (`path` only names it in messages): the loader without the file system, for the
/// property tests and the fuzz driver. Unknown keys become warnings, as in [`load`].
pub fn from_text(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let source = Source::ConfigFile(path.to_path_buf());
    let table = parse_text(path, text)?;
    let warnings: Vec<String> = unknown_keys(&table)
        .into_iter()
        .map(|key| format!("unknown key {} in {source}", raw::quote(&key)))
        .collect();
    let mut merged = toml::Table::new();
    let mut sources = BTreeMap::new();
    merge(&mut merged, table, &source, "", &mut sources);
    let resolver = resolve::Resolver {
        sources: &sources,
        home: None,
    };
    let mut config = resolver.resolve(&merged)?;
    config.warnings = warnings;
    Ok(config)
}

/// Loads every layer, merges them and resolves the result (docs/config.md).
pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigError> {
    let home = opts.home.as_deref();
    let user_file = user_config_path(home, opts.xdg_config_home.as_deref());
    let project_file = opts.cwd.join(".mm").join("config.toml");

    let mut layers: Vec<Layer> = Vec::new();
    if let Some(path) = &user_file
        && let Some(table) = read_file(path, false)?
    {
        layers.push(Layer {
            table,
            source: Source::UserFile(path.clone()),
        });
    }
    if let Some(table) = read_file(&project_file, false)? {
        layers.push(Layer {
            table,
            source: Source::ProjectFile(project_file.clone()),
        });
    }
    if let Some(file) = &opts.config_file {
        let path = opts.cwd.join(file);
        if let Some(table) = read_file(&path, true)? {
            layers.push(Layer {
                table,
                source: Source::ConfigFile(path),
            });
        }
    }
    layers.extend(env_layers(&opts.env)?);
    layers.extend(flag_layers(&opts.flags));
    for (key, value) in &opts.overrides {
        layers.push(override_layer(key, value)?);
    }

    let mut warnings = Vec::new();
    let mut project_unknown = Vec::new();
    for layer in &layers {
        let unknown = unknown_keys(&layer.table);
        for key in &unknown {
            warnings.push(format!(
                "unknown key {} in {}",
                raw::quote(key),
                layer.source
            ));
        }
        if matches!(layer.source, Source::ProjectFile(_)) {
            project_unknown = unknown;
        }
    }

    // Trust comes from the layers the user controls; a project cannot trust itself.
    let mut trusted = Vec::new();
    for layer in &mut layers {
        if !matches!(layer.source, Source::ProjectFile(_)) {
            continue;
        }
        if layer.table.remove(TRUSTED_KEY).is_some() {
            warnings.push(format!(
                "trustedProjects is ignored in project files ({}): only the user's config can trust a project",
                layer.source
            ));
        }
        if layer.table.remove(DISTRUSTED_KEY).is_some() {
            warnings.push(format!(
                "distrustedProjects is ignored in project files ({}): only the user's config says which projects not to trust",
                layer.source
            ));
        }
    }
    let mut distrusted = Vec::new();
    for layer in &layers {
        for (key, list) in [
            (TRUSTED_KEY, &mut trusted),
            (DISTRUSTED_KEY, &mut distrusted),
        ] {
            if layer.table.contains_key(key) {
                let sources = BTreeMap::from([(key.to_string(), layer.source.clone())]);
                let r = resolve::Resolver {
                    sources: &sources,
                    home,
                };
                *list = r.projects(&layer.table, key)?;
            }
        }
    }
    let project = canonical(&opts.cwd);
    let standing = trust::Standing {
        trusted: trusted.iter().any(|p| canonical(p) == project),
        distrusted: distrusted.iter().any(|p| canonical(p) == project),
        path: project,
        user_file: user_file.as_deref(),
        home,
    };
    let mut untrusted_project = None;
    let mut ignored_keys = None;
    for layer in &mut layers {
        if matches!(layer.source, Source::ProjectFile(_)) {
            let filtered =
                trust::filter_project(&mut layer.table, &layer.source, &standing, &project_unknown);
            warnings.extend(filtered.warnings);
            untrusted_project = filtered.untrusted;
            ignored_keys = filtered.ignored;
        }
    }

    let mut merged = toml::Table::new();
    let mut sources = BTreeMap::new();
    for layer in layers {
        merge(&mut merged, layer.table, &layer.source, "", &mut sources);
    }
    let resolver = resolve::Resolver {
        sources: &sources,
        home,
    };
    let mut config = resolver.resolve(&merged)?;
    config.warnings = warnings;
    Ok(Loaded {
        config,
        sources,
        user_file,
        untrusted_project,
        ignored_keys,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn modes_parse_and_name() {
        for name in SandboxMode::NAMES {
            assert_eq!(SandboxMode::parse(name).unwrap().name(), name);
        }
        assert_eq!(SandboxMode::parse("on"), None);
    }
}
