//! What the terminal's ways in share (`mm`, `mm -p`, `mm -acp`'s banner on stderr): the session
//! a front end starts with (new, or reopened with `--resume`/`--continue`), the banner of a
//! folder, and why a start failed (main.rs turns it into an exit code).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::banner::Banner;
use super::repl::{TermOptions, Terminal, run_interactive};
use crate::config::Config;
use crate::engine::{Engine, LoadError, Session};
use crate::event::{Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionRequest};
use crate::sanitize::visible;
use crate::session::OutsideProject;
use crate::skills::Catalogue;

/// Why a terminal front end could not start; its `Display` (and its causes) is the line main.rs
/// prints after `mm: `.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// What the user asked cannot be done: the line says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// stdin could not be read (`what`: which read).
    #[error("{what}")]
    Stdin {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Outside(#[from] OutsideProject),
}

/// Which session a front end starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reopen {
    /// A new one.
    New,
    /// `--resume ID`.
    Resume(String),
    /// `--continue`: the one of this folder updated last.
    Continue,
}

impl Reopen {
    /// From the command line's `--resume ID` and `--continue`.
    pub fn of(resume: Option<String>, continue_: bool) -> Self {
        match (resume, continue_) {
            (Some(id), _) => Reopen::Resume(id),
            (None, true) => Reopen::Continue,
            (None, false) => Reopen::New,
        }
    }

    /// A saved session is reopened: the banner says what it holds.
    pub fn reopens(&self) -> bool {
        !matches!(self, Reopen::New)
    }
}

/// The session a front end starts with: a new one, or a saved one (`--resume`, `--continue`).
pub async fn open_session(
    engine: &Engine,
    config: &Config,
    cwd: PathBuf,
    reopen: &Reopen,
    frontend: &dyn Frontend,
) -> Result<Session, StartError> {
    let flag = match reopen {
        Reopen::Resume(_) => "--resume",
        Reopen::New | Reopen::Continue => "--continue",
    };
    if reopen.reopens() && !config.sessions.enabled {
        return Err(StartError::Refused(format!(
            "{flag}: sessions are off: set sessions.enabled = true (or -c sessions.enabled=true) to keep and resume them"
        )));
    }
    let id = match reopen {
        Reopen::Resume(id) => Some(id.clone()),
        Reopen::Continue => {
            let dir = engine.sessions_dir(&cwd)?;
            match crate::session::latest(&dir) {
                Some(s) => Some(s.id),
                None => {
                    return Err(StartError::Refused(format!(
                        "--continue: no saved session in this folder yet (they are kept in {})",
                        config.sessions.dir.display()
                    )));
                }
            }
        }
        Reopen::New => None,
    };
    let session = match id {
        Some(id) => match engine.load_session(cwd.clone(), &id, frontend).await {
            Ok(s) => s,
            Err(LoadError::File(e)) if e.is_not_found() => {
                let dir = engine.sessions_dir(&cwd)?;
                let lines = super::sessions::unknown_id(&dir, &id, "mm --resume ID");
                return Err(StartError::Refused(format!("{flag}: {}", lines.join("\n"))));
            }
            Err(e) => return Err(e.into()),
        },
        None => engine.new_session(cwd, frontend).await,
    };
    // The MCP servers start in the background: the banner and the prompt do not wait.
    engine.start_mcp(&session);
    Ok(session)
}

/// The interactive session (`mm` in a terminal): the session opened, its banner, then the loop
/// of repl.rs until the user leaves or `stop` fires; the exit code.
pub async fn interactive(
    terminal: Option<Terminal>,
    engine: Arc<Engine>,
    config: Arc<Config>,
    cwd: PathBuf,
    reopen: &Reopen,
    options: TermOptions,
    stop: &CancellationToken,
) -> Result<i32, StartError> {
    let quiet = QuietFrontend;
    let session = open_session(&engine, &config, cwd, reopen, &quiet).await?;
    let banner = banner_for(&engine, &session);
    let terminal = terminal.unwrap_or_else(Terminal::enter);
    Ok(run_interactive(
        terminal,
        engine,
        config,
        session,
        banner,
        options,
        stop.clone(),
    )
    .await)
}

/// The banner of a session: its folder's, in its mode.
pub fn banner_for(engine: &Engine, session: &Session) -> Banner {
    let mut banner = banner_of(
        engine,
        session.view().cwd(),
        session.view().skills(),
        session.view().warnings(),
    );
    // A reopened session may hold back more than the configuration says.
    banner.mode = session.view().mode();
    banner
}

/// The banner for a folder's skills: their count, the warnings found reading them, and those a
/// command shadows.
pub fn banner_of(engine: &Engine, cwd: &Path, skills: &Catalogue, warnings: &[String]) -> Banner {
    let mut banner = Banner::new(&engine.config, skills);
    banner.say_sandbox(
        &engine.sandbox.report(),
        engine.sandbox.unwritable_cwd(cwd).as_ref(),
    );
    banner
        .warnings
        .extend(engine.hooks.warnings().iter().cloned());
    banner.warnings.extend(warnings.iter().cloned());
    let commands: Vec<&str> = Engine::commands().iter().map(|(n, _)| *n).collect();
    banner
        .warnings
        .extend(crate::skills::shadowed(skills, &commands));
    banner
}

/// The banner's lines for the process's folder, without colour: what `mm -acp` writes on stderr
/// (stdout carries JSON-RPC only). It speaks of the skills of that folder (each session reads
/// those of its own cwd).
pub fn folder_banner_lines(engine: &Engine, cwd: &Path) -> Vec<String> {
    let (skills, warnings) = engine.skills_for(cwd);
    let banner = banner_of(engine, cwd, &skills, &warnings);
    super::banner::banner_lines(&banner, false)
}

/// A front end for work done before the interactive one starts (loading a session): it shows
/// warnings and never asks.
struct QuietFrontend;

#[async_trait]
impl Frontend for QuietFrontend {
    fn emit(&self, event: Event) {
        if let Event::Warning(w) = event {
            eprintln!("{}", visible(&w));
        }
    }
    async fn ask_permission(
        &self,
        _r: PermissionRequest,
        _cancel: &CancellationToken,
    ) -> PermissionDecision {
        PermissionDecision::RejectOnce
    }
    async fn ask_user(&self, _f: Form, _cancel: &CancellationToken) -> FormAnswer {
        FormAnswer::Unavailable("no front end yet".into())
    }
}
