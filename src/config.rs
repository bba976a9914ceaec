//! Configuration: TOML layers resolved once into a typed [`Config`] (config.md).
//!
//! Two phases: each layer is parsed into a TOML table and merged key by key; the merged table is
//! then resolved into [`Config`] with defaults and validated values. Config is passed in, never
//! read from a global.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The effective configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub yolo: bool,
    /// Tokens; 0: probe the server.
    pub context_window: u64,
    pub max_steps: u32,
    pub system_prompt: String,
    pub trusted_projects: Vec<PathBuf>,
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
    pub max_tokens: Option<u64>,
    /// Seconds without a byte from the server before the call fails.
    pub request_timeout: u64,
    /// Read tool calls that the model wrote as text.
    pub text_tool_calls: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AcpConfig {
    pub name: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionsConfig {
    pub enabled: bool,
    /// Relative to the session's cwd.
    pub dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextConfig {
    pub threshold: f64,
    pub keep_last_turns: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoopConfig {
    pub max_repeats: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    /// Characters of any tool result.
    pub max_output: usize,
    /// Seconds.
    pub bash_timeout: u64,
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
    /// Seconds.
    pub timeout: u64,
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
            model: ModelConfig {
                url: String::new(),
                name: String::new(),
                api_key: String::new(),
                temperature: None,
                max_tokens: None,
                request_timeout: 600,
                text_tool_calls: true,
            },
            acp: AcpConfig {
                name: "bob".into(),
                title: "Bob (bash-first agent)".into(),
            },
            sessions: SessionsConfig {
                enabled: false,
                dir: PathBuf::from(".mm/sessions"),
            },
            context: ContextConfig {
                threshold: 0.8,
                keep_last_turns: 2,
            },
            loop_: LoopConfig { max_repeats: 3 },
            tools: ToolsConfig {
                max_output: 30_000,
                bash_timeout: 120,
            },
            skills: SkillsConfig { dirs: Vec::new() },
            hooks: HooksConfig::default(),
            agents: BTreeMap::new(),
            mcp_servers: BTreeMap::new(),
            lsp_servers: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}
