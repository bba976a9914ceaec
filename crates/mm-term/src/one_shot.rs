//! One-shot mode (`mm -p "…"`, `mm words…`, `echo prompt | mm`): one turn, the final answer
//! on stdout, the banner, the narration, the activity and the recap on stderr (none but errors
//! with `-q`), and the exit code of how the turn ended.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::frontend::OneShotFrontend;
use super::piped::{self, Piped};
use super::repl::TermOptions;
use super::start::{self, Reopen, StartError};
use crate::config::Config;
use crate::engine::{Engine, StopReason};
use crate::sanitize::visible;

/// A one-shot prompt: what the user gave, what is attached to it (piped stdin), and the
/// notices about how it was made (shown after the banner).
#[derive(Debug, Default)]
pub struct Prompt {
    text: String,
    attached: String,
    notices: Vec<String>,
}

impl Prompt {
    /// The prompt of a one-shot run, if there is one: `given` (`-p`, or the words of the command
    /// line) with piped stdin attached, or what is piped when nothing is given; `None` when
    /// nothing is given and stdin is a terminal (the interactive session). `cap` is
    /// `tools.maxOutput`; `quiet` keeps the wait for stdin unsaid.
    pub fn gather(
        given: Option<String>,
        stdin_terminal: bool,
        cap: usize,
        quiet: bool,
    ) -> Result<Option<Prompt>, StartError> {
        if given.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(StartError::Refused(
                "no prompt: the prompt is empty".to_string(),
            ));
        }
        Ok(match given {
            // `cat calc.py | mm -p "review this"`: what is piped goes with the prompt.
            Some(text) if !stdin_terminal => Some(with_stdin(text, cap, quiet)?),
            Some(text) => Some(Prompt {
                text,
                ..Prompt::default()
            }),
            // `echo prompt | mm`: what is piped is the prompt.
            None if !stdin_terminal => {
                let piped = read_stdin(cap, quiet).map_err(|source| StartError::Stdin {
                    what: "cannot read the prompt from stdin",
                    source,
                })?;
                // An empty pipe (`mm < /dev/null`) is no prompt, not an empty question to the
                // model.
                if piped.is_empty() {
                    return Err(StartError::Refused(
                        "no prompt: stdin is empty (give one with -p \"…\", or run mm in a terminal)"
                            .to_string(),
                    ));
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
        })
    }
}

/// How a cut is named: the cap and its key.
fn cut_at(cap: usize) -> String {
    format!("{cap} characters, tools.maxOutput")
}

/// Reads what is piped on stdin, at most `cap` characters; saying on stderr (unless `quiet`)
/// that mm waits for it when nothing comes for a while.
pub(crate) fn read_stdin(cap: usize, quiet: bool) -> std::io::Result<Piped> {
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
fn with_stdin(text: String, cap: usize, quiet: bool) -> Result<Prompt, StartError> {
    let piped = read_stdin(cap, quiet).map_err(|source| StartError::Stdin {
        what: "cannot read stdin",
        source,
    })?;
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
        prompt.attached = crate::prompt::attached_text("stdin", &piped.text, cut.as_deref());
        let size = crate::prompt::attached_size(&piped.text, cut.as_deref());
        prompt.notices.push(format!("📎 attached stdin ({size})"));
    }
    Ok(prompt)
}

/// How a one-shot run is set up beside its prompt.
pub struct OneShot<'a> {
    pub cwd: PathBuf,
    pub reopen: &'a Reopen,
    /// `-q`: nothing on stderr but errors.
    pub quiet: bool,
    pub stdin_terminal: bool,
    pub options: &'a TermOptions,
}

/// Runs one turn of `prompt`; the exit code: 0 at the end of the turn, 2 at a limit, 130
/// cancelled, 1 failed.
pub async fn run(
    engine: Arc<Engine>,
    config: Arc<Config>,
    setup: OneShot<'_>,
    prompt: Prompt,
    stop: &CancellationToken,
) -> Result<i32, StartError> {
    let Prompt {
        text,
        attached,
        notices,
    } = prompt;
    let OneShot {
        cwd,
        reopen,
        quiet,
        stdin_terminal,
        options,
    } = setup;
    let color = options.color_stderr;
    let frontend = OneShotFrontend::new(color, stdin_terminal, engine.processes.tasks())
        .quiet(quiet)
        .stderr_terminal(options.spinner)
        .raw_answer(!options.stdout_terminal);
    let mut session = start::open_session(&engine, &config, cwd, reopen, &frontend).await?;
    let banner = start::banner_for(&engine, &session);
    frontend.banner_model(banner.model_named());
    // Everything on stderr but errors is activity, which -q hides.
    let mut activity: Vec<String> = Vec::new();
    activity.extend(super::banner::banner_lines(&banner, color));
    if options.reopened {
        activity.extend(super::sessions::reopened(&engine, &session, color));
    }
    // `@missing` is left out of the prompt: say so, and the prompt still goes (what stdin
    // brought is not looked at: `@property` in piped Python names no file).
    for notice in notices
        .iter()
        .chain(&super::input::unresolved(&text, session.view().cwd()))
    {
        activity.push(super::style::dim(color, notice));
    }
    if !quiet {
        // At word boundaries for the window: the terminal would cut words.
        for line in super::render::wrap_lines(activity, super::stderr_width()) {
            eprintln!("{line}");
        }
    }
    // The model line comes from the engine (`Event::ModelDetected`) before the first call.
    // Ctrl-C (and SIGTERM, SIGHUP) cancel the turn: main.rs watches them.
    let cancel = stop.child_token();
    let before = session.view().usage();
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
        let summary = super::render::TurnSummary {
            recap: outcome.recap,
            usage: super::repl::usage_delta(&before, &session.view().usage()),
            context: Some(context),
            elapsed: started.elapsed(),
            // One turn: the mode is the one the command line set, no news to the user.
            mode: None,
        };
        after.push(super::render::recap_line(&summary, color));
    }
    // A small window is worth a word only once a turn has used over half of it.
    if super::banner::small_window_filling(context) {
        let kind = engine.model.server_kind().await;
        after.extend(super::banner::small_window_warning(context, kind, color));
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
