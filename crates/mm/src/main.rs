//! The `mm` binary: parses the command line, loads the configuration and hands over to a front
//! end. Errors become exit codes here (and only here is `anyhow` used).
// The binary prints to stdout where that is its output (`--version`, `mm config`, one-shot
// answers); the workspace denies it everywhere else, since stdout is the protocol in ACP mode.
#![allow(clippy::print_stdout)]

mod piped;
mod signals;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use mm::config::{self, Flags, LoadOptions, Loaded};
use mm::engine::{Engine, Environment, Session, StopReason};
use mm::event::Frontend;
use mm::model::openai::OpenAiClient;
use mm::sanitize::visible;
use mm::term::{Banner, OneShotFrontend, TermOptions};
use tokio_util::sync::CancellationToken;

/// mm: a bash-first coding agent for local language models.
#[derive(Debug, Parser)]
#[command(name = "mm", disable_version_flag = true, about, long_about = None)]
struct Cli {
    /// Run one turn with this prompt: the answer on stdout, activity on stderr.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    prompt: Option<String>,
    /// Serve the Agent Client Protocol on stdio (also -acp).
    #[arg(long)]
    acp: bool,
    /// Ask another ACP agent a question (also -ask): a configured name or a command line.
    #[arg(long, value_name = "AGENT")]
    ask: Option<String>,
    /// Reopen a saved session of this folder.
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Reopen the session of this folder updated last.
    #[arg(long = "continue")]
    continue_: bool,
    /// The model server's OpenAI-compatible base URL (model.url).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The model's name (model.name).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Run tools without asking (yolo = true).
    #[arg(long, conflicts_with = "no_yolo")]
    yolo: bool,
    /// Ask before gated tools run (yolo = false).
    #[arg(long = "no-yolo")]
    no_yolo: bool,
    /// Fence what the model runs: off, workspace-write or read-only (tools.sandbox).
    #[arg(long, value_name = "MODE", value_parser = clap::builder::PossibleValuesParser::new(mm::config::SandboxMode::NAMES))]
    sandbox: Option<String>,
    /// Set any configuration key: -c context.keepLastTurns=4 (repeatable).
    #[arg(short = 'c', value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Read this configuration file after the user's and the project's.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print the version.
    #[arg(short = 'V', long)]
    version: bool,
    /// With -p: nothing on stderr but errors (no banner, tool calls, notices, warnings, recap).
    #[arg(short = 'q', long)]
    quiet: bool,
    /// With `doctor`: the report as JSON.
    #[arg(long)]
    json: bool,
    /// The prompt; or `config` (the effective configuration), `doctor` (what works and what to
    /// fix), `trust [DIR]` (run a project's own commands), `setup` (pick a server and a model,
    /// check them, write the user's config).
    #[arg(value_name = "PROMPT")]
    words: Vec<String>,
}

/// The subcommands, written as words (`mm config`): to send one of these words as a prompt,
/// use `-p`.
enum Subcommand<'a> {
    Config,
    Doctor,
    /// `mm trust [DIR]`.
    Trust(Option<&'a str>),
    /// `mm setup` (also `mm -acp setup`: an editor appends the auth method's args to the
    /// agent's command line).
    Setup,
}

fn subcommand(cli: &Cli) -> Option<Subcommand<'_>> {
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

fn main() {
    let code = match run() {
        Ok(code) => code,
        Err(e) => {
            // Errors may carry a server's or a file's text: shown visibly.
            eprintln!("mm: {}", visible(&one_line(&e)));
            1
        }
    };
    std::process::exit(code);
}

/// The error and its causes on one line, each cause once: many of mm's errors already say their
/// cause in their own message (`cannot read <path>: <why>`), and `{:#}` would repeat it.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}

/// Go-style single-dash long flags (`-acp`, `-ask`) are accepted as well.
fn rewrite_args(args: impl Iterator<Item = String>) -> Vec<String> {
    args.map(|a| match a.as_str() {
        "-acp" => "--acp".to_string(),
        "-ask" => "--ask".to_string(),
        _ => a,
    })
    .collect()
}

fn run() -> anyhow::Result<i32> {
    let cli = Cli::parse_from(rewrite_args(std::env::args()));
    if cli.version {
        println!("{}", mm::VERSION);
        return Ok(0);
    }
    if std::env::var_os("MM_LOG").is_some() {
        let filter = tracing_subscriber::EnvFilter::try_from_env("MM_LOG").unwrap_or_default();
        // Colour codes only on a terminal (an editor shows the raw log of `mm -acp`).
        let _ = tracing_subscriber::fmt()
            .with_ansi(std::io::stderr().is_terminal())
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let opts = load_options(&cli, &cwd)?;
    // `mm doctor` reports a configuration that does not load as one of its lines.
    if let Some(Subcommand::Doctor) = subcommand(&cli) {
        return doctor(&cli, &opts, &cwd);
    }
    let loaded = config::load(&opts)?;
    match subcommand(&cli) {
        Some(Subcommand::Config) => {
            // Values may come from a project's file: shown visibly.
            print!("{}", visible(&loaded.report()));
            return Ok(0);
        }
        Some(Subcommand::Trust(dir)) => return trust(&opts, &loaded, &cwd, dir),
        Some(Subcommand::Setup) => return setup(&cli, &opts),
        Some(Subcommand::Doctor) | None => {}
    }
    // Before anything starts: with tools.sandboxRequired, a fence the kernel cannot enforce
    // whole is an error.
    let sandbox = sandbox_of(&cli, &cwd, &loaded);
    sandbox.require(loaded.config.tools.sandbox_required)?;
    let runtime = runtime()?;
    let result = runtime.block_on(async_main(cli, loaded, opts, cwd, sandbox));
    // A read of stdin may still be parked on a blocking thread (ACP mode after a signal, for
    // one): do not wait for it. Everything that matters was awaited above.
    runtime.shutdown_background();
    result
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `mm doctor [--json]`: what works and what to fix; exit 0 when everything mm needs works.
fn doctor(cli: &Cli, opts: &LoadOptions, cwd: &std::path::Path) -> anyhow::Result<i32> {
    let loaded = config::load(opts);
    let sandbox = loaded.as_ref().ok().map(|l| sandbox_of(cli, cwd, l));
    let setup = mm::doctor::Setup {
        loaded: loaded.as_ref(),
        config_file: cli.config.as_deref(),
        cwd,
        home: opts.home.as_deref(),
        sandbox: sandbox.as_ref(),
        client: Default::default(),
    };
    let color = TermOptions::from_env().color;
    let runtime = runtime()?;
    let mut out = std::io::stdout();
    let code = runtime.block_on(async {
        if cli.json {
            mm::doctor::print_json(&setup, &mut out).await
        } else {
            mm::doctor::print_text(&setup, &mut out, color).await
        }
    });
    runtime.shutdown_background();
    Ok(code)
}

/// `mm setup`: the interactive first run (docs/setup.md); 130 on Ctrl-C, the file untouched
/// (it is written once, at the end).
fn setup(cli: &Cli, opts: &LoadOptions) -> anyhow::Result<i32> {
    // `--url`, `--model` and `--sandbox` are answers here, not a layer: what the files and the
    // environment say is what may override the answers.
    let mut files = opts.clone();
    files.flags = Flags::default();
    let loaded = config::load(&files)?;
    let setup = mm::setup::Setup {
        loaded: &loaded,
        home: opts.home.as_deref(),
        url: cli.url.clone(),
        model: cli.model.clone(),
        sandbox: cli.sandbox.clone(),
        client: Default::default(),
        color: TermOptions::from_env().color,
    };
    let runtime = runtime()?;
    let code = runtime.block_on(async {
        let mut answers = mm::setup::Answers::stdin();
        let mut out = std::io::stdout();
        tokio::select! {
            code = mm::setup::run(&setup, &mut answers, &mut out) => code,
            _ = tokio::signal::ctrl_c() => {
                println!();
                println!("Stopped: nothing written.");
                130
            }
        }
    });
    // The thread reading the answers may still be parked on stdin.
    runtime.shutdown_background();
    Ok(code)
}

/// `mm trust [DIR]`: adds the project (the cwd by default) to `trustedProjects` in the user's
/// file, which keeps its comments and layout.
fn trust(
    opts: &LoadOptions,
    loaded: &Loaded,
    cwd: &std::path::Path,
    dir: Option<&str>,
) -> anyhow::Result<i32> {
    let given = match dir {
        Some(dir) => mm::paths::resolve(cwd, dir),
        None => cwd.to_path_buf(),
    };
    let path = mm::paths::canonical(&given)
        .with_context(|| format!("trust: cannot find {}", given.display()))?;
    if !path.is_dir() {
        anyhow::bail!("trust: {} is not a folder", path.display());
    }
    let home = opts.home.as_deref();
    let user_file = loaded.user_file.as_deref();
    let shown = config::shown_file(user_file, home);
    let outcome = config::edit::trust(user_file, home, &path).context("trust")?;
    let line = match outcome {
        config::edit::Outcome::Changed => format!(
            "trusted {}: its own hooks, MCP servers, language servers and agents run from now on (trustedProjects in {shown})",
            path.display()
        ),
        config::edit::Outcome::Already => format!(
            "{} is already trusted (trustedProjects in {shown})",
            path.display()
        ),
    };
    println!("{}", visible(&line));
    Ok(0)
}

/// The interactive session: stdin a terminal and nothing to do but talk.
fn interactive(cli: &Cli) -> bool {
    !cli.acp
        && cli.ask.is_none()
        && cli.prompt.is_none()
        && cli.words.is_empty()
        && std::io::stdin().is_terminal()
}

fn load_options(cli: &Cli, cwd: &std::path::Path) -> anyhow::Result<LoadOptions> {
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
        home: mm::paths::home(),
        xdg_config_home: mm::paths::config_home(),
        config_file: cli.config.clone(),
        env,
        overrides,
        flags: Flags {
            url: cli.url.clone(),
            model: cli.model.clone(),
            yolo,
            sandbox: cli.sandbox.clone(),
        },
    })
}

/// The process's sandbox: `tools.sandbox`, `tools.sandboxWritable` and the agents' own
/// `sandboxWritable`, and the places below.
fn sandbox_of(cli: &Cli, cwd: &std::path::Path, loaded: &Loaded) -> mm::sandbox::Sandbox {
    mm::sandbox::Sandbox::new(
        mm::sandbox::Settings::of(&loaded.config),
        sandbox_places(cli, cwd, loaded),
    )
}

/// The places the sandbox needs that the configuration does not hold: the temp folders, and
/// the configuration mm read (kept read-only inside the fence).
fn sandbox_places(cli: &Cli, cwd: &std::path::Path, loaded: &Loaded) -> mm::sandbox::Places {
    let mut places = mm::sandbox::Places::default().with_temp_dir(std::env::temp_dir());
    places.protected.push(cwd.join(".mm"));
    if let Some(dir) = loaded.user_file.as_deref().and_then(|f| f.parent()) {
        places.protected.push(dir.to_path_buf());
    }
    if let Some(file) = &cli.config {
        places.protected_files.push(cwd.join(file));
    }
    places.home = mm::paths::home();
    places.outer_fence = std::env::var(mm::sandbox::FENCED_VAR)
        .ok()
        .filter(|v| !v.is_empty());
    places
}

async fn async_main(
    cli: Cli,
    loaded: Loaded,
    opts: LoadOptions,
    cwd: PathBuf,
    sandbox: mm::sandbox::Sandbox,
) -> anyhow::Result<i32> {
    let stop = CancellationToken::new();
    // Every child and every task of the process is the supervisor's (the signal watcher
    // first): the one way out below shuts them down.
    let processes = mm::process::Supervisor::new();
    // The interactive session takes the terminal (and the signals) first: whether to trust a
    // project whose own commands were skipped is asked before anything starts, so a "trust"
    // works at once.
    let terminal = match interactive(&cli) {
        true => Some((
            mm::term::Terminal::enter(),
            watch_signals(processes.tasks(), &stop, false)?,
        )),
        false => None,
    };
    let loaded = match &terminal {
        Some((t, _)) => {
            let color = TermOptions::from_env().color;
            mm::term::trust::offer(t, loaded, &opts, color, &stop).await
        }
        None => loaded,
    };
    let config = Arc::new(loaded.config);
    let model = Arc::new(OpenAiClient::new(&config.model, config.context_window));
    let env = Environment {
        home: mm::paths::home(),
        xdg_config_home: mm::paths::config_home(),
    };
    // How deep this process is in a chain of agents asking agents (agents.md): the asking mm
    // sets it on the agent it starts.
    let depth = std::env::var(mm::agent_client::DEPTH_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let engine = Arc::new(
        Engine::with_processes(config.clone(), model, processes)
            .with_env(env)
            .with_ask_depth(depth)
            .with_sandbox(sandbox),
    );
    // One way out for every front end: a signal (or stdin's end, in ACP mode) fires `stop`; the
    // front end cancels its running turn and waits for it (the session is saved), then every
    // child still running is stopped and reaped here, and the tasks are shut down (watchers
    // cut, the rest awaited within the grace).
    let result = front_end(&cli, &engine, config, cwd, &stop, terminal).await;
    engine.processes.shutdown().await;
    result
}

/// Which signal asked the process to stop, by exit code (0: none).
type Signalled = Arc<std::sync::atomic::AtomicI32>;

/// Watches SIGTERM and SIGHUP (and SIGINT when `sigint`: the interactive session reads Ctrl-C
/// itself) and fires `stop` on the first. The handlers are installed before this returns, so a
/// signal that comes at once is never the default action (death without saving).
fn watch_signals(
    tasks: &mm::tasks::Tasks,
    stop: &CancellationToken,
    sigint: bool,
) -> anyhow::Result<Signalled> {
    let first = signals::watch(sigint).context("cannot watch signals")?;
    let signalled: Signalled = Arc::default();
    let (stop, seen) = (stop.clone(), signalled.clone());
    tasks.spawn_until_shutdown(async move {
        let code = first.await;
        seen.store(code, std::sync::atomic::Ordering::SeqCst);
        stop.cancel();
    });
    Ok(signalled)
}

async fn front_end(
    cli: &Cli,
    engine: &Arc<Engine>,
    config: Arc<config::Config>,
    cwd: PathBuf,
    stop: &CancellationToken,
    terminal: Option<(mm::term::Terminal, Signalled)>,
) -> anyhow::Result<i32> {
    let engine = Arc::clone(engine);
    if cli.acp {
        watch_signals(engine.processes.tasks(), stop, true)?;
        // The banner goes to stderr in ACP mode too: stdout carries JSON-RPC only. It speaks of
        // the skills of the process's folder (each session reads those of its own cwd).
        let (skills, warnings) = engine.skills_for(&cwd);
        let banner = banner_of(&engine, &cwd, &skills, &warnings);
        for line in mm::term::banner::banner_lines(&banner, false) {
            eprintln!("{line}");
        }
        // A signal ends the connection like stdin's end: turns cancelled, sessions saved, exit 0.
        mm::acp::serve(engine, config, stop.clone()).await?;
        return Ok(0);
    }
    if let Some(agent) = &cli.ask {
        // No model is needed to ask another agent: nothing is detected.
        return ask_agent(cli, &engine, &config, &cwd, agent, stop).await;
    }
    // The terminal front ends start detection at once (the banner's model line waits for it).
    engine.model.warm_up(engine.processes.tasks());

    let stdin_terminal = std::io::stdin().is_terminal();
    let cap = config.tools.max_output;
    let given = match (&cli.prompt, cli.words.is_empty()) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(cli.words.join(" ")),
        (None, true) => None,
    };
    if given.as_deref().is_some_and(|p| p.trim().is_empty()) {
        anyhow::bail!("no prompt: the prompt is empty");
    }
    let prompt = match given {
        // `cat calc.py | mm -p "review this"`: what is piped goes with the prompt.
        Some(text) if !stdin_terminal => Some(with_stdin(text, cap, cli.quiet)?),
        Some(text) => Some(Prompt {
            text,
            ..Prompt::default()
        }),
        // `echo prompt | mm`: what is piped is the prompt.
        None if !stdin_terminal => {
            let piped = read_stdin(cap, cli.quiet).context("cannot read the prompt from stdin")?;
            // An empty pipe (`mm < /dev/null`) is no prompt, not an empty question to the model.
            if piped.is_empty() {
                anyhow::bail!(
                    "no prompt: stdin is empty (give one with -p \"…\", or run mm in a terminal)"
                );
            }
            let notices = match piped.cut {
                true => vec![format!("the prompt from stdin is cut at {}", cut_at(cap))],
                false => Vec::new(),
            };
            Some(Prompt {
                text: piped.text,
                attached: String::new(),
                notices,
            })
        }
        None => None,
    };
    let options = TermOptions {
        reopened: cli.resume.is_some() || cli.continue_,
        ..TermOptions::from_env()
    };

    let interactive = prompt.is_none();
    let (terminal, signalled) = match terminal {
        Some((terminal, signalled)) => (Some(terminal), signalled),
        None => (
            None,
            watch_signals(engine.processes.tasks(), stop, !interactive)?,
        ),
    };
    let code = match prompt {
        Some(text) => {
            one_shot(
                engine,
                config,
                cwd,
                cli,
                text,
                stdin_terminal,
                &options,
                stop,
            )
            .await?
        }
        None => {
            let quiet = QuietFrontend;
            let session = open_session(&engine, &config, cwd, cli, &quiet).await?;
            let banner = banner_for(&engine, &session);
            let terminal = terminal.unwrap_or_else(mm::term::Terminal::enter);
            mm::term::run_interactive(
                terminal,
                engine,
                config,
                session,
                banner,
                options,
                stop.clone(),
            )
            .await
        }
    };
    Ok(match signalled.load(std::sync::atomic::Ordering::SeqCst) {
        0 => code,
        by_signal => by_signal,
    })
}

/// A one-shot prompt: what the user gave, what is attached to it (piped stdin), and the
/// notices about how it was made (shown after the banner).
#[derive(Default)]
struct Prompt {
    text: String,
    attached: String,
    notices: Vec<String>,
}

/// How a cut is named: the cap and its key.
fn cut_at(cap: usize) -> String {
    format!("{cap} characters, tools.maxOutput")
}

/// Reads what is piped on stdin, at most `cap` characters; saying on stderr (unless `quiet`)
/// that mm waits for it when nothing comes for a while.
fn read_stdin(cap: usize, quiet: bool) -> std::io::Result<piped::Piped> {
    piped::read_stdin(cap, move || {
        if !quiet {
            eprintln!(
                "waiting for stdin to end (nothing came in 3 s; `< /dev/null` gives mm no stdin)"
            );
        }
    })
}

/// The prompt with piped stdin attached (`cat calc.py | mm -p "review this"`), and the line
/// that says so; an empty stdin (`< /dev/null`) attaches nothing and says nothing.
fn with_stdin(text: String, cap: usize, quiet: bool) -> anyhow::Result<Prompt> {
    let piped = read_stdin(cap, quiet).context("cannot read stdin")?;
    let mut prompt = Prompt {
        text,
        ..Prompt::default()
    };
    if piped.binary {
        prompt
            .notices
            .push("stdin holds binary data (a NUL byte): not attached".to_string());
    } else if !piped.is_empty() {
        let cut = piped.cut.then(|| format!("cut at {}", cut_at(cap)));
        prompt.attached = mm::prompt::attached_text("stdin", &piped.text, cut.as_deref());
        let size = mm::prompt::attached_size(&piped.text, cut.as_deref());
        prompt.notices.push(format!("📎 attached stdin ({size})"));
    }
    Ok(prompt)
}

/// `mm --ask AGENT "question"`: the question is the words after AGENT, else `-p`, else stdin.
async fn ask_agent(
    cli: &Cli,
    engine: &Engine,
    config: &config::Config,
    cwd: &std::path::Path,
    agent: &str,
    stop: &CancellationToken,
) -> anyhow::Result<i32> {
    let question = match (&cli.prompt, cli.words.is_empty()) {
        (Some(p), _) => p.clone(),
        (None, false) => cli.words.join(" "),
        (None, true) if !std::io::stdin().is_terminal() => {
            read_stdin(config.tools.max_output, cli.quiet)
                .context("cannot read the question from stdin")?
                .text
        }
        (None, true) => String::new(),
    };
    if question.trim().is_empty() {
        anyhow::bail!("--ask {agent}: no question (mm --ask AGENT \"question\")");
    }
    let signalled = watch_signals(engine.processes.tasks(), stop, true)?;
    let setup = mm::term::ask::AskSetup {
        config,
        processes: &engine.processes,
        sandbox: &engine.sandbox,
        cwd,
        // No session: the configuration's mode (`yolo`); `mm --ask` cannot ask, so in `ask`
        // the agent's permission requests get its own refusal.
        mode: engine.configured_mode(),
        depth: engine.ask_depth(),
    };
    let color = TermOptions::from_env().color_stderr;
    let code = mm::term::ask::run_ask(&setup, agent, &question, color, &stop.child_token()).await;
    Ok(match signalled.load(std::sync::atomic::Ordering::SeqCst) {
        0 => code,
        by_signal => by_signal,
    })
}

/// The session a front end starts with: a new one, or a saved one (`--resume`, `--continue`).
async fn open_session(
    engine: &Engine,
    config: &config::Config,
    cwd: PathBuf,
    cli: &Cli,
    frontend: &dyn Frontend,
) -> anyhow::Result<Session> {
    let flag = if cli.resume.is_some() {
        "--resume"
    } else {
        "--continue"
    };
    if (cli.resume.is_some() || cli.continue_) && !config.sessions.enabled {
        anyhow::bail!(
            "{flag}: sessions are off: set sessions.enabled = true (or -c sessions.enabled=true) to keep and resume them"
        );
    }
    let id = if let Some(id) = &cli.resume {
        Some(id.clone())
    } else if cli.continue_ {
        let dir = engine.sessions_dir(&cwd)?;
        match mm::session::latest(&dir) {
            Some(s) => Some(s.id),
            None => anyhow::bail!(
                "--continue: no saved session in this folder yet (they are kept in {})",
                config.sessions.dir.display()
            ),
        }
    } else {
        None
    };
    let session = match id {
        Some(id) => match engine.load_session(cwd.clone(), &id, frontend).await {
            Ok(s) => s,
            Err(mm::engine::LoadError::File(e)) if e.is_not_found() => {
                let dir = engine.sessions_dir(&cwd)?;
                let lines = mm::term::sessions::unknown_id(&dir, &id, "mm --resume ID");
                anyhow::bail!("{flag}: {}", lines.join("\n"));
            }
            Err(e) => return Err(e.into()),
        },
        None => engine.new_session(cwd, frontend).await,
    };
    // The MCP servers start in the background: the banner and the prompt do not wait.
    engine.start_mcp(&session);
    Ok(session)
}

fn banner_for(engine: &Engine, session: &Session) -> Banner {
    let mut banner = banner_of(engine, &session.cwd, &session.skills, &session.warnings);
    // A reopened session may hold back more than the configuration says.
    banner.mode = session.controls.mode();
    banner
}

/// The banner for a folder's skills: their count, the warnings found reading them, and those a
/// command shadows.
fn banner_of(
    engine: &Engine,
    cwd: &std::path::Path,
    skills: &mm::skills::Catalogue,
    warnings: &[String],
) -> Banner {
    let mut banner = Banner::new(&engine.config, skills);
    if engine.sandbox.is_on() {
        banner.sandbox = Some(engine.sandbox.label());
    }
    banner.warnings.extend(engine.sandbox.warnings(cwd));
    banner
        .warnings
        .extend(engine.hooks.warnings().iter().cloned());
    banner.warnings.extend(warnings.iter().cloned());
    let commands: Vec<&str> = Engine::commands().iter().map(|(n, _)| *n).collect();
    banner
        .warnings
        .extend(mm::skills::shadowed(skills, &commands));
    banner
}

#[allow(clippy::too_many_arguments)]
async fn one_shot(
    engine: Arc<Engine>,
    config: Arc<config::Config>,
    cwd: PathBuf,
    cli: &Cli,
    prompt: Prompt,
    stdin_terminal: bool,
    options: &TermOptions,
    stop: &CancellationToken,
) -> anyhow::Result<i32> {
    let Prompt {
        text,
        attached,
        notices,
    } = prompt;
    let quiet = cli.quiet;
    let color = options.color_stderr;
    let frontend = OneShotFrontend::new(color, stdin_terminal, engine.processes.tasks())
        .quiet(quiet)
        .raw_answer(!options.stdout_terminal);
    let mut session = open_session(&engine, &config, cwd, cli, &frontend).await?;
    let banner = banner_for(&engine, &session);
    frontend.banner_model(banner.model_named());
    // Everything on stderr but errors is activity, which -q hides.
    let mut activity: Vec<String> = Vec::new();
    activity.extend(mm::term::banner::banner_lines(&banner, color));
    if options.reopened {
        activity.extend(mm::term::sessions::reopened(&engine, &session, color));
    }
    // `@missing` is left out of the prompt: say so, and the prompt still goes (what stdin
    // brought is not looked at: `@property` in piped Python names no file).
    for notice in notices
        .iter()
        .chain(&mm::term::input::unresolved(&text, &session.cwd))
    {
        activity.push(mm::term::style::dim(color, notice));
    }
    if !quiet {
        // At word boundaries for the window: the terminal would cut words.
        for line in mm::term::render::wrap_lines(activity, mm::term::stderr_width()) {
            eprintln!("{line}");
        }
    }
    // The model line comes from the engine (`Event::ModelDetected`) before the first call.
    // Ctrl-C (and SIGTERM, SIGHUP) cancel the turn: main.rs watches them.
    let cancel = stop.child_token();
    let before = session.usage;
    let started = std::time::Instant::now();
    let text = text + &attached;
    let outcome = engine
        .prompt(&mut session, &text, &[], &frontend, &cancel)
        .await;
    frontend.finish();
    let mut after: Vec<String> = Vec::new();
    // How the turn went, as the interactive session says it after each turn.
    let context = frontend
        .context()
        .unwrap_or_else(|| engine.context_usage(&session));
    // A failure's own line says how it went.
    if outcome.recap.is_some() && outcome.stop.is_ok() {
        let summary = mm::term::render::TurnSummary {
            recap: outcome.recap,
            usage: mm::term::repl::usage_delta(&before, &session.usage),
            context: Some(context),
            elapsed: started.elapsed(),
            // One turn: the mode is the one the command line set, no news to the user.
            mode: None,
        };
        after.push(mm::term::render::recap_line(&summary, color));
    }
    // A small window is worth a word only once a turn has used over half of it.
    if mm::term::banner::small_window_filling(context) {
        let kind = engine.model.server_kind().await;
        after.extend(mm::term::banner::small_window_warning(context, kind, color));
    }
    if let Ok(StopReason::MaxTokens) = outcome.stop {
        after.push("[stopped: the answer reached the model.maxTokens limit]".to_string());
    }
    if !quiet {
        for line in after {
            eprintln!("{line}");
        }
    } else if let Err(e) = &outcome.stop {
        // The engine's error line went to the front end, which -q keeps quiet.
        eprintln!("[error: {}]", visible(&e.to_string()));
    }
    Ok(match outcome.stop {
        Ok(StopReason::EndTurn) => 0,
        Ok(StopReason::MaxTokens | StopReason::MaxTurnRequests) => 2,
        Ok(StopReason::Cancelled) => 130,
        Err(_) => 1,
    })
}

/// A front end for work done before the interactive one starts (loading a session): it shows
/// warnings and never asks.
struct QuietFrontend;

#[async_trait::async_trait]
impl Frontend for QuietFrontend {
    fn emit(&self, event: mm::event::Event) {
        if let mm::event::Event::Warning(w) = event {
            eprintln!("{}", visible(&w));
        }
    }
    async fn ask_permission(
        &self,
        _r: mm::event::PermissionRequest,
        _cancel: &CancellationToken,
    ) -> mm::event::PermissionDecision {
        mm::event::PermissionDecision::RejectOnce
    }
    async fn ask_user(
        &self,
        _f: mm::event::Form,
        _cancel: &CancellationToken,
    ) -> mm::event::FormAnswer {
        mm::event::FormAnswer::Unavailable("no front end yet".into())
    }
}
