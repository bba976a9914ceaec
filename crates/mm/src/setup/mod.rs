//! `mm setup` (docs/setup.md): the first run in a terminal, and what an editor runs for the
//! `mm-setup` auth method. Finds the servers on the usual ports (or asks for a URL), lists the
//! server's models and takes one, checks it with the doctor's probes, offers the sandbox modes
//! this kernel enforces, and writes the user's file keeping its comments. Questions are plain
//! lines; with `--url` and `--model` there are none.
//!
//! A model that fails a check is saved all the same when the user says so ("Save it anyway?")
//! or, without questions, with its failures listed.
//!
//! Exit codes: 0 once a working configuration is written, 1 when nothing was written (no
//! server, no answers, a failing model the user did not save) or what was written fails a
//! check. Ctrl-C (130) is `main.rs`'s: everything is written at the end in one atomic write, so
//! stopping before leaves the file as it was.

use std::io::Write;
use std::path::Path;

use futures::future::join_all;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{Loaded, SandboxMode, Source, edit, shown_file};
use crate::doctor::{Check, Status};
use crate::model::ModelError;
use crate::model::detect::{self, Detected};
use crate::model::openai::{ClientOptions, OpenAiClient};

/// What the command line gave (`--url`, `--model`, `--sandbox`) and where the user's file is.
pub struct Setup<'a> {
    pub loaded: &'a Loaded,
    pub home: Option<&'a Path>,
    pub url: Option<String>,
    pub model: Option<String>,
    pub sandbox: Option<String>,
    /// How servers are found (the usual ports; tests of the library give others).
    pub client: ClientOptions,
    /// Colour the doctor's marks.
    pub color: bool,
}

/// The answers, one line each, read on a thread of their own (a read of stdin blocks).
pub struct Answers(mpsc::Receiver<String>);

impl Answers {
    pub fn stdin() -> Answers {
        let (tx, rx) = mpsc::channel(1);
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut line = String::new();
            while matches!(stdin.read_line(&mut line), Ok(n) if n > 0) {
                let answer = line.trim().to_string();
                line.clear();
                if tx.blocking_send(answer).is_err() {
                    break;
                }
            }
        });
        Answers(rx)
    }

    /// `prompt`, then the next line; `None` at the end of the input.
    async fn ask(&mut self, out: &mut (dyn Write + Send), prompt: &str) -> Option<String> {
        let _ = write!(out, "{prompt}");
        let _ = out.flush();
        let answer = self.0.recv().await;
        if answer.is_none() {
            let _ = writeln!(out);
        }
        answer
    }
}

/// The sandbox modes this kernel enforces, the recommended first: with Landlock all three,
/// without it only `off`.
pub fn enforced_modes(landlock_abi: i32) -> Vec<SandboxMode> {
    if landlock_abi > 0 {
        vec![
            SandboxMode::WorkspaceWrite,
            SandboxMode::ReadOnly,
            SandboxMode::Off,
        ]
    } else {
        vec![SandboxMode::Off]
    }
}

fn mode_help(mode: SandboxMode) -> &'static str {
    match mode {
        SandboxMode::WorkspaceWrite => {
            "the default: commands write only in the project, the temp folders and the package caches; your keys (~/.ssh, ~/.aws, …) are hidden from them"
        }
        SandboxMode::ReadOnly => "commands write nowhere; your keys are hidden from them",
        SandboxMode::Off => "commands run unfenced, and can read your keys",
    }
}

/// The server's listing at `url` (`Err` says why not: a 401 is an `Http` error).
async fn listing(s: &Setup<'_>, url: &str, key: &str) -> Result<Detected, ModelError> {
    let mut model = s.loaded.config.model.clone();
    model.url = url.to_string();
    model.name = String::new();
    model.api_key = key.to_string();
    let client = OpenAiClient::with_options(&model, 0, s.client.clone());
    client.detected(&CancellationToken::new()).await
}

fn is_unauthorized(e: &ModelError) -> bool {
    matches!(
        e,
        ModelError::Http {
            status: 401 | 403,
            ..
        }
    )
}

/// Runs the setup; returns the exit code.
pub async fn run(s: &Setup<'_>, answers: &mut Answers, out: &mut (dyn Write + Send)) -> i32 {
    let questions = s.url.is_none() || s.model.is_none();
    let user_file = s.loaded.user_file.as_deref();
    let shown = shown_file(user_file, s.home);
    let _ = writeln!(
        out,
        "mm setup {}: a model server, a model, a check, then {shown}",
        crate::VERSION
    );
    let mut key = s.loaded.config.model.api_key.clone();
    let mut asked_key = false;

    // The server.
    let mut url = s.url.clone();
    let found: Vec<Detected> = if url.is_some() {
        Vec::new()
    } else {
        let probes = s.client.candidates.iter().map(|(_, u)| listing(s, u, &key));
        join_all(probes).await.into_iter().flatten().collect()
    };
    if url.is_none() {
        if found.is_empty() {
            let _ = writeln!(
                out,
                "No model server answers on the usual ports (tried {}).",
                detect::tried(&s.client.candidates)
            );
        } else {
            let _ = writeln!(out, "Model servers found:");
            for (i, d) in found.iter().enumerate() {
                let n = detect::listed_models(d).models.len();
                let _ = writeln!(out, "{}", found_line(i + 1, d.kind.label(), &d.url, n));
            }
        }
    }
    let detected = loop {
        let chosen = match &url {
            Some(u) => u.clone(),
            None => {
                let prompt = if found.is_empty() {
                    "Server URL (e.g. http://127.0.0.1:8080/v1): "
                } else {
                    "Server (number or URL) [1]: "
                };
                let Some(answer) = answers.ask(out, prompt).await else {
                    return stopped(out);
                };
                match pick(
                    &answer,
                    &found.iter().map(|d| d.url.clone()).collect::<Vec<_>>(),
                ) {
                    Some(u) => u,
                    None => {
                        let _ = writeln!(out, "Give a number of the list or a URL.");
                        continue;
                    }
                }
            }
        };
        match listing(s, &chosen, &key).await {
            Ok(d) => break d,
            Err(e) if is_unauthorized(&e) && questions => {
                let _ = writeln!(out, "{e}");
                let Some(answer) = answers.ask(out, "The server needs an API key. Key: ").await
                else {
                    return stopped(out);
                };
                key = answer;
                asked_key = true;
                url = Some(chosen);
            }
            Err(e) => {
                let _ = writeln!(out, "{}", crate::sanitize::visible(&e.to_string()));
                if !questions {
                    return nothing_written(out);
                }
                url = None;
            }
        }
    };
    let url = detected.url.clone();
    let _ = writeln!(out, "✓ {} at {url}", detected.kind.label());

    // The model.
    let listed = detect::listed_models(&detected).models;
    let model = match &s.model {
        Some(m) => m.clone(),
        None => loop {
            if listed.is_empty() {
                let _ = writeln!(out, "The server lists no model.");
            } else {
                let _ = writeln!(out, "Models:");
                for (i, m) in listed.iter().enumerate() {
                    let _ = writeln!(out, "  {}) {}", i + 1, crate::sanitize::visible(m));
                }
            }
            let prompt = if listed.is_empty() {
                "Model name: "
            } else {
                "Model (number or name) [1]: "
            };
            let Some(answer) = answers.ask(out, prompt).await else {
                return stopped(out);
            };
            if let Some(m) = pick(&answer, &listed) {
                break m;
            }
        },
    };

    // The doctor's probes, on that server and model.
    let _ = writeln!(
        out,
        "Checking {} (a few requests)…",
        crate::sanitize::visible(&model)
    );
    let mut loaded = s.loaded.clone();
    loaded.config.model.url = url.clone();
    loaded.config.model.name = model.clone();
    loaded.config.model.api_key = key.clone();
    let mut failed = Vec::new();
    {
        let mut push = |check: Check| {
            for line in check.lines(s.color) {
                let _ = writeln!(out, "{line}");
            }
            if check.status == Status::Fail {
                failed.push(check.topic.label());
            }
        };
        crate::doctor::model_checks(&loaded, s.client.clone(), &mut push).await;
    }
    // A model that fails a check may still be what the user wants (the tiny model of
    // scripts/local-model.sh, a server being fixed): asked, it is saved all the same; without
    // questions it is saved, and the exit code says it does not work yet.
    if !failed.is_empty() {
        let _ = writeln!(
            out,
            "{} does not work with mm as it is ({}): fix what is said above, or pick another model.",
            crate::sanitize::visible(&model),
            failed.join(", ")
        );
        if questions {
            let save = loop {
                let Some(answer) = answers.ask(out, SAVE_ANYWAY).await else {
                    return stopped(out);
                };
                match answer.to_ascii_lowercase().as_str() {
                    "y" | "yes" => break true,
                    "" | "n" | "no" => break false,
                    _ => {}
                }
            };
            if !save {
                let _ = writeln!(out, "Run `mm setup` again once it works.");
                return nothing_written(out);
            }
        }
    }

    // The sandbox: only the modes this kernel enforces.
    let modes = enforced_modes(crate::sandbox::landlock_abi());
    let sandbox = match (&s.sandbox, questions) {
        (Some(given), _) => match modes.iter().find(|m| m.to_string() == *given) {
            Some(m) => Some(*m),
            None => {
                let _ = writeln!(
                    out,
                    "tools.sandbox = {given} is not enforced on this system (it enforces: {})",
                    names(&modes)
                );
                return nothing_written(out);
            }
        },
        (None, false) => None,
        (None, true) if modes.len() == 1 => {
            let _ = writeln!(
                out,
                "Sandbox: this system cannot fence the model's commands (no Landlock); tools.sandbox is left as it is."
            );
            None
        }
        (None, true) => {
            let _ = writeln!(out, "Sandbox for the model's commands:");
            for (i, m) in modes.iter().enumerate() {
                let _ = writeln!(out, "  {}) {m}: {}", i + 1, mode_help(*m));
            }
            let labels: Vec<String> = modes.iter().map(|m| m.to_string()).collect();
            loop {
                let Some(answer) = answers.ask(out, "Sandbox [1]: ").await else {
                    return stopped(out);
                };
                if let Some(label) = pick(&answer, &labels) {
                    break modes.iter().find(|m| m.to_string() == label).copied();
                }
            }
        }
    };

    // Sessions are not a question: on by default, said with the key that changes them.
    let _ = writeln!(out, "{}", sessions_line(&s.loaded.config.sessions));

    // What is written, and what would override it.
    let sandbox_label = sandbox.map(|m| m.to_string());
    let mut values: Vec<(&str, &str)> = vec![("model.url", &url), ("model.name", &model)];
    if asked_key {
        values.push(("model.apiKey", &key));
    }
    if let Some(label) = &sandbox_label {
        values.push(("tools.sandbox", label));
    }
    for (k, _) in &values {
        let over = match s.loaded.sources.get(*k) {
            Some(Source::ProjectFile(p)) => Some(format!("{}", p.display())),
            Some(Source::Env(var)) => Some(format!("env {var}")),
            _ => None,
        };
        if let Some(over) = over {
            let _ = writeln!(
                out,
                "! {over} sets {k}, which wins over what setup writes (here)"
            );
        }
    }
    match edit::set(user_file, s.home, &values) {
        Ok(_) => {
            let keys: Vec<&str> = values.iter().map(|(k, _)| *k).collect();
            let _ = writeln!(out, "✓ wrote {} in {shown}", keys.join(", "));
            if !failed.is_empty() {
                let _ = writeln!(
                    out,
                    "! saved although {} fails a check ({}): fix what is said above, then `mm doctor` checks it again.",
                    crate::sanitize::visible(&model),
                    failed.join(", ")
                );
                return 1;
            }
            let _ = writeln!(
                out,
                "Next: run `mm` in a project folder (`mm doctor` checks everything again)."
            );
            0
        }
        Err(e) => {
            let _ = writeln!(out, "{}", crate::sanitize::visible(&e.to_string()));
            nothing_written(out)
        }
    }
}

/// What setup says of sessions (`sessions.enabled`, `sessions.keep`).
fn sessions_line(sessions: &crate::config::SessionsConfig) -> String {
    if !sessions.enabled {
        return "Sessions: off (sessions.enabled = false): conversations are not kept; set it to true for --continue, /load and an editor's history.".into();
    }
    let kept = match sessions.keep {
        0 => "every conversation".to_string(),
        n => format!("the last {n} conversations"),
    };
    format!(
        "Sessions: on: each project keeps {kept} in {} for --continue, /load and an editor's history (sessions.enabled = false keeps none, sessions.keep how many).",
        sessions.dir.display()
    )
}

/// Asked when the model failed a check; Enter is no.
const SAVE_ANYWAY: &str = "Save it anyway? [y/N]: ";

/// A number of `list` (1-based), an empty answer for the first, or the text itself.
/// One server of the list: `  1) Ollama at http://…/v1 (3 models)`.
fn found_line(number: usize, kind: &str, url: &str, models: usize) -> String {
    let noun = if models == 1 { "model" } else { "models" };
    format!("  {number}) {kind} at {url} ({models} {noun})")
}

fn pick(answer: &str, list: &[String]) -> Option<String> {
    let answer = answer.trim();
    if answer.is_empty() {
        return list.first().cloned();
    }
    if let Ok(n) = answer.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| list.get(i)).cloned();
    }
    Some(answer.to_string())
}

fn names(modes: &[SandboxMode]) -> String {
    let names: Vec<String> = modes.iter().map(|m| m.to_string()).collect();
    names.join(", ")
}

/// Setup's lines wrapped at word boundaries for a terminal `width` columns wide (as the session
/// wraps its notices): each line is held until it ends; a flush writes what there is of a line
/// as it is (a question, which the answer's Enter ends). With no width, the text passes as is.
pub struct Wrapped<W: Write> {
    inner: W,
    width: Option<usize>,
    line: Vec<u8>,
}

impl<W: Write> Wrapped<W> {
    pub fn new(inner: W, width: Option<usize>) -> Self {
        Wrapped {
            inner,
            width,
            line: Vec::new(),
        }
    }
}

impl<W: Write> Write for Wrapped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.width.is_none() {
            return self.inner.write(buf);
        }
        for &b in buf {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&self.line).into_owned();
                self.line.clear();
                for row in mm_term::render::wrap_lines(vec![line], self.width) {
                    self.inner.write_all(row.as_bytes())?;
                    self.inner.write_all(b"\n")?;
                }
            } else {
                self.line.push(b);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.write_all(&self.line)?;
        self.line.clear();
        self.inner.flush()
    }
}

impl<W: Write> Drop for Wrapped<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

fn stopped(out: &mut (dyn Write + Send)) -> i32 {
    let _ = writeln!(out, "No answer: nothing written.");
    1
}

fn nothing_written(out: &mut (dyn Write + Send)) -> i32 {
    let _ = writeln!(out, "Nothing written.");
    1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_pick_by_number_default_or_name() {
        let list = vec!["a".to_string(), "b".to_string()];
        assert_eq!(pick("", &list).as_deref(), Some("a"));
        assert_eq!(pick("2", &list).as_deref(), Some("b"));
        assert_eq!(pick("3", &list), None);
        assert_eq!(pick("0", &list), None);
        assert_eq!(pick(" http://h/v1 ", &list).as_deref(), Some("http://h/v1"));
        assert_eq!(pick("", &[]), None);
    }

    #[test]
    fn a_server_s_models_are_counted_in_words() {
        assert_eq!(
            found_line(1, "llama.cpp", "http://h/v1", 1),
            "  1) llama.cpp at http://h/v1 (1 model)"
        );
        assert_eq!(
            found_line(2, "Ollama", "http://o/v1", 3),
            "  2) Ollama at http://o/v1 (3 models)"
        );
    }

    #[test]
    fn lines_are_wrapped_at_word_boundaries() {
        let mut out = Wrapped::new(Vec::new(), Some(30));
        write!(out, "Server (number or URL) [1]: ").unwrap();
        out.flush().unwrap();
        writeln!(out, "  2) Ollama at http://127.0.0.1:11434/v1 (3 models)").unwrap();
        writeln!(out, "short").unwrap();
        let text = String::from_utf8(std::mem::take(&mut out.inner)).unwrap();
        assert_eq!(
            text,
            "Server (number or URL) [1]: \
             \x20 2) Ollama at\n\
             \x20    http://127.0.0.1:11434/v1\n\
             \x20    (3 models)\n\
             short\n"
        );
        // Without a terminal, as it is.
        let mut out = Wrapped::new(Vec::new(), None);
        writeln!(out, "{}", "word ".repeat(20)).unwrap();
        assert_eq!(out.inner, format!("{}\n", "word ".repeat(20)).into_bytes());
    }

    #[test]
    fn only_enforced_modes_are_offered() {
        assert_eq!(enforced_modes(0), [SandboxMode::Off]);
        assert_eq!(enforced_modes(4)[0], SandboxMode::WorkspaceWrite);
        assert_eq!(enforced_modes(4).len(), 3);
    }
}
