//! Configuration: TOML layers resolved once into a typed [`Config`] (docs/config.md).
//!
//! Two phases: each layer is parsed into a TOML table and merged key by key; the merged table is
//! then resolved into [`Config`] with defaults and validated values. Config is passed in, never
//! read from a global. This file holds the types; load.rs finds and reads the layers.

pub mod edit;
mod load;
mod network;
mod raw;
mod report;
mod resolve;
mod trust;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use load::{
    ConfigError, Flags, LoadOptions, Loaded, from_text, load, parse_override, shown_file,
    user_config_path,
};
use load::{canonical, source_of};
pub use network::{AllowEntry, DEFAULT_ALLOW, NetworkConfig, NetworkMode};
pub use raw::Source;
pub use trust::{ENTRY_SANDBOX_KEYS, HARMLESS_KEYS, IgnoredKeys, UntrustedProject};

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
    /// The process's project, when its commands were skipped because it is not trusted (the
    /// editor's notice; `Loaded::untrusted_project` holds the same).
    pub untrusted_project: Option<UntrustedProject>,
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
    /// How many session files a folder keeps (`sessions.keep`): a save that creates one removes
    /// the least recently saved beyond it. 0 keeps them all.
    pub keep: usize,
}

/// `sessions.keep`'s default: a folder keeps the 100 sessions saved last.
pub const SESSIONS_KEEP: usize = 100;

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
    /// No fence.
    Off,
    /// Reads anywhere but the hidden places; writes only under the session's cwd, the temp
    /// folders, the package caches and `tools.sandboxWritable` (the default).
    #[default]
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
    /// `tools.sandboxHidden`: more places hidden inside the fence (absolute, `~/` expanded),
    /// besides the secret places mm knows; every layer's list adds to the others', a
    /// project's too.
    pub sandbox_hidden: Vec<PathBuf>,
    /// `tools.sandboxReadable`: places taken out of the hidden ones (the user's layers only).
    pub sandbox_readable: Vec<PathBuf>,
    /// `tools.task.maxSteps`: the model calls a `task` call's child session may make.
    pub task_max_steps: u32,
    /// `tools.network`, `tools.networkAllow`, `tools.networkExpose` (docs/sandbox.md); never
    /// set by a project file.
    pub network: NetworkConfig,
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

/// How an entry that starts a process in the project (a hook, an MCP or language server, an
/// asked agent) meets the fence of `tools.sandbox` (docs/sandbox.md, "What runs outside the
/// fence"): its `sandbox`, `sandboxWritable` and `networkAllow` keys, which only the user's own
/// entries set (config/trust.rs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntrySandbox {
    /// `sandbox = false`: it runs outside the fence, which the banner and the ACP log say.
    pub outside: bool,
    /// `sandboxWritable`: folders its fence (only) lets it write in, in `workspace-write` — a
    /// language server's caches (`~/.cargo`), an agent's state (`~/.codex`); absolute, `~/`
    /// expanded.
    pub writable: Vec<PathBuf>,
    /// `networkAllow`: hosts its fence (only) lets it reach besides `tools.networkAllow` (an
    /// asked agent's model server or API), each checked by `AllowEntry::parse`. When set, the
    /// entry's process gets a network namespace of its own whose door is both lists; when not,
    /// it keeps the network of a process outside the namespace (docs/sandbox.md).
    pub network_allow: Vec<String>,
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
    pub sandbox: EntrySandbox,
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

impl HooksConfig {
    /// Each event's name, as the files write it, with its hooks (in the order `mm config` lists
    /// them).
    pub fn by_event(&self) -> [(&'static str, &[HookConfig]); 6] {
        let e = raw::HOOK_EVENTS;
        [
            (e[0], &self.session_start),
            (e[1], &self.user_prompt_submit),
            (e[2], &self.pre_tool_call),
            (e[3], &self.post_tool_call),
            (e[4], &self.turn_end),
            (e[5], &self.pre_compact),
        ]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub sandbox: EntrySandbox,
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
    pub sandbox: EntrySandbox,
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
            sandbox: EntrySandbox::default(),
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
    pub sandbox: EntrySandbox,
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
                enabled: true,
                dir: PathBuf::from(".mm/sessions"),
                user_dir: false,
                keep: SESSIONS_KEEP,
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
                sandbox: SandboxMode::WorkspaceWrite,
                sandbox_writable: Vec::new(),
                sandbox_required: false,
                sandbox_hidden: Vec::new(),
                sandbox_readable: Vec::new(),
                task_max_steps: 20,
                network: NetworkConfig::default(),
            },
            skills: SkillsConfig { dirs: Vec::new() },
            hooks: HooksConfig::default(),
            agents: BTreeMap::new(),
            mcp_servers: BTreeMap::new(),
            lsp_servers: BTreeMap::new(),
            mcp_timing: McpTiming::default(),
            warnings: Vec::new(),
            untrusted_project: None,
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

/// The variable `model.apiKey` is read from.
pub const API_KEY_VAR: &str = "MM_API_KEY";

/// Every variable mm reads the model server's key from: no child inherits them
/// (`process::Supervisor`).
pub const KEY_VARS: [&str; 1] = [API_KEY_VAR];

/// The projects whose own commands run (user layers only).
pub const TRUSTED_KEY: &str = "trustedProjects";
/// The projects the user answered "never" for at the trust prompt (user layers only).
pub const DISTRUSTED_KEY: &str = "distrustedProjects";

/// A duration the way the configuration and its messages write it: whole seconds as an integer
/// (`120`), anything finer as a decimal (`0.25`, which only code, such as a test, can set).
pub fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        d.as_secs_f64().to_string()
    }
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
