//! The command line: its flags and words ([`Cli`]), the subcommands written as words, and what
//! the binary makes of them before anything starts (the configuration's load options, the
//! process's sandbox).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Parser;
use mm_core::config::{self, Flags, LoadOptions, Loaded};
use mm_tools::sandbox::{FENCED_VAR, Places, Sandbox, Settings};

/// mm: a bash-first coding agent for local language models.
#[derive(Debug, Parser)]
#[command(name = "mm", disable_version_flag = true, about, long_about = None)]
pub struct Cli {
    /// Run one turn with this prompt: the answer on stdout, activity on stderr.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Serve the Agent Client Protocol on stdio (also -acp).
    #[arg(long)]
    pub acp: bool,
    /// Ask another ACP agent a question (also -ask): a configured name or a command line.
    #[arg(long, value_name = "AGENT")]
    pub ask: Option<String>,
    /// Reopen a saved session of this folder.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Reopen the session of this folder updated last.
    #[arg(long = "continue")]
    pub continue_: bool,
    /// The model server's OpenAI-compatible base URL (model.url).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The model's name (model.name).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Run tools without asking (yolo = true).
    #[arg(long, conflicts_with = "no_yolo")]
    pub yolo: bool,
    /// Ask before gated tools run (yolo = false).
    #[arg(long = "no-yolo")]
    pub no_yolo: bool,
    /// Fence what the model runs: off, workspace-write or read-only (tools.sandbox).
    #[arg(long, value_name = "MODE", value_parser = clap::builder::PossibleValuesParser::new(config::SandboxMode::NAMES))]
    pub sandbox: Option<String>,
    /// Set any configuration key: -c context.keepLastTurns=4 (repeatable).
    #[arg(short = 'c', value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Read this configuration file after the user's and the project's.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the version.
    #[arg(short = 'V', long)]
    pub version: bool,
    /// With -p: nothing on stderr but errors (no banner, tool calls, notices, warnings, recap).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// With `doctor`: the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// The prompt; or `config` (the effective configuration), `doctor` (what works and what to
    /// fix), `trust [DIR]` (run a project's own commands), `setup` (pick a server and a model,
    /// check them, write the user's config).
    #[arg(value_name = "PROMPT")]
    pub words: Vec<String>,
}

/// The subcommands, written as words (`mm config`): to send one of these words as a prompt,
/// use `-p`.
pub enum Subcommand<'a> {
    Config,
    Doctor,
    /// `mm trust [DIR]`.
    Trust(Option<&'a str>),
    /// `mm setup` (also `mm -acp setup`: an editor appends the auth method's args to the
    /// agent's command line).
    Setup,
}

pub fn subcommand(cli: &Cli) -> Option<Subcommand<'_>> {
    if cli.prompt.is_none() && cli.ask.is_none() && cli.words == ["setup"] {
        return Some(Subcommand::Setup);
    }
    if cli.prompt.is_some() || cli.acp || cli.ask.is_some() {
        return None;
    }
    let words: Vec<&str> = cli.words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["config"] => Some(Subcommand::Config),
        ["doctor"] => Some(Subcommand::Doctor),
        ["trust"] => Some(Subcommand::Trust(None)),
        ["trust", dir] => Some(Subcommand::Trust(Some(dir))),
        _ => None,
    }
}

/// Go-style single-dash long flags (`-acp`, `-ask`) are accepted as well.
pub fn rewrite_args(args: impl Iterator<Item = String>) -> Vec<String> {
    args.map(|a| match a.as_str() {
        "-acp" => "--acp".to_string(),
        "-ask" => "--ask".to_string(),
        _ => a,
    })
    .collect()
}

/// The interactive session: stdin a terminal and nothing to do but talk.
pub fn interactive(cli: &Cli) -> bool {
    !cli.acp
        && cli.ask.is_none()
        && cli.prompt.is_none()
        && cli.words.is_empty()
        && std::io::stdin().is_terminal()
}

pub fn load_options(cli: &Cli, cwd: &Path) -> anyhow::Result<LoadOptions> {
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("MM_"))
        .collect();
    let mut overrides = Vec::new();
    for s in &cli.set {
        overrides.push(config::parse_override(s)?);
    }
    let yolo = if cli.yolo {
        Some(true)
    } else if cli.no_yolo {
        Some(false)
    } else {
        None
    };
    Ok(LoadOptions {
        cwd: cwd.to_path_buf(),
        home: mm_core::paths::home(),
        xdg_config_home: mm_core::paths::config_home(),
        config_file: cli.config.clone(),
        env,
        overrides,
        flags: Flags {
            url: cli.url.clone(),
            model: cli.model.clone(),
            yolo,
            sandbox: cli.sandbox.clone(),
        },
        user_text: None,
    })
}

/// The process's sandbox: `tools.sandbox`, `tools.sandboxWritable` and the agents' own
/// `sandboxWritable`, and the places below.
pub fn sandbox_of(cli: &Cli, cwd: &Path, loaded: &Loaded) -> Sandbox {
    Sandbox::new(
        Settings::of(&loaded.config),
        sandbox_places(cli, cwd, loaded),
    )
}

/// The places the sandbox needs that the configuration does not hold: the temp folders, and
/// the configuration mm read (kept read-only inside the fence).
fn sandbox_places(cli: &Cli, cwd: &Path, loaded: &Loaded) -> Places {
    let mut places = Places::default().with_temp_dir(std::env::temp_dir());
    places.protected.push(cwd.join(".mm"));
    if let Some(dir) = loaded.user_file.as_deref().and_then(|f| f.parent()) {
        places.protected.push(dir.to_path_buf());
    }
    // /undo's git store: its config and attributes are what keeps mm's own git from running
    // anything, so a command never writes them, even where XDG_STATE_HOME lies in the project
    // or a temp folder.
    let home = mm_core::paths::home();
    if let Some(state) =
        mm_core::paths::state_dir(home.as_deref(), mm_core::paths::state_home().as_deref())
    {
        places.protected.push(state.join("undo"));
    }
    if let Some(file) = &cli.config {
        places.protected_files.push(cwd.join(file));
    }
    // Hidden inside the fence: mm's config files (the key may be there; not their folder,
    // where skills' scripts live) and the container sockets of the user's runtime folder.
    places.secrets.extend(loaded.user_file.iter().cloned());
    places.user_config = loaded.user_file.clone();
    places.user_config_text = loaded.handed_user_text.clone();
    places
        .secrets
        .extend(cli.config.iter().map(|f| cwd.join(f)));
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|r| !r.is_empty()) {
        places
            .secrets
            .extend(mm_tools::sandbox::hidden::runtime_sockets(Path::new(
                &runtime,
            )));
    }
    if let Some(home) = &home {
        places.caches = mm_tools::sandbox::hidden::caches(home, |v| std::env::var_os(v));
    }
    places.home = mm_core::paths::home();
    places.outer_fence = std::env::var(FENCED_VAR).ok().filter(|v| !v.is_empty());
    places
}
