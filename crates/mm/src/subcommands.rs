//! The subcommands that start no front end: `mm doctor`, `mm setup`, `mm trust [DIR]` (`mm
//! config` is one line of main.rs), and the async runtime every way of the binary runs on.
// They print their output on stdout.
#![allow(clippy::print_stdout)]

use std::path::Path;

use anyhow::Context;
use mm_core::config::{self, Flags, LoadOptions, Loaded};
use mm_core::sanitize::visible;
use mm_term::TermOptions;

use crate::cli::{Cli, sandbox_of};

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `mm doctor [--json]`: what works and what to fix; exit 0 when everything mm needs works.
pub fn doctor(cli: &Cli, opts: &LoadOptions, cwd: &Path) -> anyhow::Result<i32> {
    let loaded = config::load(opts);
    let sandbox = loaded.as_ref().ok().map(|l| sandbox_of(cli, cwd, l));
    let setup = crate::doctor::Setup {
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
            crate::doctor::print_json(&setup, &mut out).await
        } else {
            crate::doctor::print_text(&setup, &mut out, color).await
        }
    });
    runtime.shutdown_background();
    Ok(code)
}

/// `mm setup`: the interactive first run (docs/setup.md); 130 on Ctrl-C, the file untouched
/// (it is written once, at the end).
pub fn setup(cli: &Cli, opts: &LoadOptions) -> anyhow::Result<i32> {
    // `--url`, `--model` and `--sandbox` are answers here, not a layer: what the files and the
    // environment say is what may override the answers.
    let mut files = opts.clone();
    files.flags = Flags::default();
    let loaded = config::load(&files)?;
    let setup = crate::setup::Setup {
        loaded: &loaded,
        home: opts.home.as_deref(),
        url: cli.url.clone(),
        model: cli.model.clone(),
        sandbox: cli.sandbox.clone(),
        client: mm_model::openai::ClientOptions::default()
            .skipping(&loaded.config.tools.network.expose),
        color: TermOptions::from_env().color,
    };
    let runtime = runtime()?;
    let code = runtime.block_on(async {
        let mut answers = crate::setup::Answers::stdin();
        // Wrapped at word boundaries: the terminal would cut a word (`Ollam` / `a`).
        let mut out = crate::setup::Wrapped::new(std::io::stdout(), mm_term::stdout_width());
        tokio::select! {
            code = crate::setup::run(&setup, &mut answers, &mut out) => code,
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
pub fn trust(
    opts: &LoadOptions,
    loaded: &Loaded,
    cwd: &Path,
    dir: Option<&str>,
) -> anyhow::Result<i32> {
    let given = match dir {
        Some(dir) => mm_core::paths::resolve(cwd, dir),
        None => cwd.to_path_buf(),
    };
    let path = mm_core::paths::canonical(&given)
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
