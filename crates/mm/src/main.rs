//! The `mm` binary: parses the command line, loads the configuration and hands over to a front
//! end. Errors become exit codes here (and only here is `anyhow` used).
// The binary prints to stdout where that is its output (`--version`, `mm config`, one-shot
// answers); the workspace denies it everywhere else, since stdout is the protocol in ACP mode.
#![allow(clippy::print_stdout)]

mod signals;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use mm::cli::{Cli, Subcommand, interactive, load_options, rewrite_args, sandbox_of, subcommand};
use mm::subcommands::{doctor, runtime, setup, trust};
use mm_core::config::{self, LoadOptions, Loaded};
use mm_core::sanitize::visible;
use mm_engine::{Engine, Environment};
use mm_model::openai::{ClientOptions, OpenAiClient};
use mm_term::one_shot::Prompt as OneShotPrompt;
use mm_term::{Reopen, TermOptions};
use tokio_util::sync::CancellationToken;

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

fn run() -> anyhow::Result<i32> {
    let cli = Cli::parse_from(rewrite_args(std::env::args()));
    if cli.version {
        println!("{}", mm_core::VERSION);
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
    // An asking mm handed its user config (the fence hides the file): read and closed before
    // anything starts. SAFETY: no thread has started yet (the runtime starts below).
    let handed = unsafe { mm_tools::process::take_handed_config() };
    let mut opts = load_options(&cli, &cwd)?;
    if let Some(text) = handed {
        opts.user_text = Some(text.context("cannot read the config the asking mm handed")?);
    }
    // The key was read into `opts`: from here on it is mm's alone (docs/config.md, "Trust").
    // SAFETY: no thread has started yet (the runtime starts below).
    unsafe { mm_tools::process::keep_private(&config::KEY_VARS) };
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

async fn async_main(
    cli: Cli,
    loaded: Loaded,
    opts: LoadOptions,
    cwd: PathBuf,
    sandbox: mm_tools::sandbox::Sandbox,
) -> anyhow::Result<i32> {
    let stop = CancellationToken::new();
    // Every child and every task of the process is the supervisor's (the signal watcher
    // first): the one way out below shuts them down.
    let processes = mm_tools::process::Supervisor::new();
    // The interactive session takes the terminal (and the signals) first: whether to trust a
    // project whose own commands were skipped is asked before anything starts, so a "trust"
    // works at once.
    let terminal = match interactive(&cli) {
        true => Some((
            mm_term::Terminal::enter(),
            watch_signals(processes.tasks(), &stop, false)?,
        )),
        false => None,
    };
    let loaded = match &terminal {
        Some((t, _)) => {
            let color = TermOptions::from_env().color;
            mm_term::trust::offer(t, loaded, &opts, color, &stop).await
        }
        None => loaded,
    };
    let config = Arc::new(loaded.config);
    let model = Arc::new(OpenAiClient::with_options(
        &config.model,
        config.context_window,
        ClientOptions::default().skipping(&config.tools.network.expose),
    ));
    let env = Environment {
        home: mm_core::paths::home(),
        xdg_config_home: mm_core::paths::config_home(),
        xdg_state_home: mm_core::paths::state_home(),
    };
    // How deep this process is in a chain of agents asking agents (agents.md): the asking mm
    // sets it on the agent it starts.
    let depth = std::env::var(mm_agents::agent_client::DEPTH_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let engine = Arc::new(
        Engine::builder(config.clone(), model)
            .processes(processes)
            .env(env)
            .ask_depth(depth)
            .sandbox(sandbox)
            .build(),
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
    tasks: &mm_core::tasks::Tasks,
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
    terminal: Option<(mm_term::Terminal, Signalled)>,
) -> anyhow::Result<i32> {
    let engine = Arc::clone(engine);
    if cli.acp {
        watch_signals(engine.processes.tasks(), stop, true)?;
        // The banner goes to stderr in ACP mode too: stdout carries JSON-RPC only.
        for line in mm_term::start::folder_banner_lines(&engine, &cwd) {
            eprintln!("{line}");
        }
        // A signal ends the connection like stdin's end: turns cancelled, sessions saved, exit 0.
        mm_acp::serve(engine, config, stop.clone()).await?;
        return Ok(0);
    }
    let stdin_terminal = std::io::stdin().is_terminal();
    let cap = config.tools.max_output;
    let given = match (&cli.prompt, cli.words.is_empty()) {
        (Some(p), _) => Some(p.clone()),
        (None, false) => Some(cli.words.join(" ")),
        (None, true) => None,
    };
    if let Some(agent) = &cli.ask {
        // No model is needed to ask another agent: nothing is detected.
        let question = mm_term::ask::question(agent, given, stdin_terminal, cap, cli.quiet)?;
        let signalled = watch_signals(engine.processes.tasks(), stop, true)?;
        let color = TermOptions::from_env().color_stderr;
        let code =
            mm_term::ask::run_ask(&engine, &cwd, agent, &question, color, &stop.child_token())
                .await;
        return Ok(exit_code(&signalled, code));
    }
    // The terminal front ends start detection at once (the banner's model line waits for it).
    engine.model.warm_up(engine.processes.tasks());
    let prompt = OneShotPrompt::gather(given, stdin_terminal, cap, cli.quiet)?;
    let reopen = Reopen::of(cli.resume.clone(), cli.continue_);
    let options = TermOptions {
        reopened: reopen.reopens(),
        ..TermOptions::from_env()
    };
    let (terminal, signalled) = match terminal {
        Some((terminal, signalled)) => (Some(terminal), signalled),
        None => (
            None,
            watch_signals(engine.processes.tasks(), stop, prompt.is_some())?,
        ),
    };
    let code = match prompt {
        Some(prompt) => {
            let setup = mm_term::one_shot::OneShot {
                cwd,
                reopen: &reopen,
                quiet: cli.quiet,
                stdin_terminal,
                options: &options,
            };
            mm_term::one_shot::run(engine, config, setup, prompt, stop).await?
        }
        None => {
            mm_term::start::interactive(terminal, engine, config, cwd, &reopen, options, stop)
                .await?
        }
    };
    Ok(exit_code(&signalled, code))
}

/// The code of the signal that stopped the process, else the front end's.
fn exit_code(signalled: &Signalled, code: i32) -> i32 {
    match signalled.load(std::sync::atomic::Ordering::SeqCst) {
        0 => code,
        by_signal => by_signal,
    }
}
