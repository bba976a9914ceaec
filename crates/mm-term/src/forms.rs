//! `ask_user` forms and the permission question, asked on the terminal with keys from a
//! [`Keys`] source: the interactive session's one reader (an open question of keyboard.rs), or
//! `mm -p`'s short raw reads. Parsing the answers is pure and unit-tested.

use std::collections::VecDeque;
use std::io::Write;

use async_trait::async_trait;

use super::keyboard::Asking;
use super::keys::{Decoder, Key};
use super::permission::inline;
use super::raw;
use super::style;
use crate::event::{
    AlwaysRule, AnswerValue, Form, FormAnswer, NetworkAnswer, PermissionDecision, Question,
    QuestionKind,
};
use crate::relay::{RelayedOption, RelayedPermission};
use crate::sanitize::visible;
use crate::tasks::Tasks;

/// Where a question's keys come from.
#[async_trait]
pub trait Keys: Send {
    /// The next key; `Hangup` when there will be none.
    async fn key(&mut self) -> Key;
}

#[async_trait]
impl Keys for Asking<'_> {
    async fn key(&mut self) -> Key {
        Asking::key(self).await
    }
}

/// `mm -p`'s keys: raw mode for the question only, what was typed before it discarded
/// (raw::Question), each read on a blocking thread.
pub struct OneShotKeys {
    _raw: Option<raw::Question>,
    decoder: Decoder,
    pending: VecDeque<Key>,
    /// The reads run on their blocking threads.
    tasks: Tasks,
}

impl OneShotKeys {
    pub fn enter(tasks: &Tasks) -> Self {
        OneShotKeys {
            _raw: raw::Question::enter(),
            decoder: Decoder::new(),
            pending: VecDeque::new(),
            tasks: tasks.clone(),
        }
    }
}

#[async_trait]
impl Keys for OneShotKeys {
    async fn key(&mut self) -> Key {
        if self._raw.is_none() {
            return Key::Hangup;
        }
        loop {
            if let Some(key) = self.pending.pop_front() {
                return key;
            }
            let mut decoder = std::mem::take(&mut self.decoder);
            let read = self
                .tasks
                .spawn_blocking(move || {
                    let keys = raw::read_keys(&mut decoder);
                    (decoder, keys)
                })
                .await;
            let Ok((decoder, keys)) = read else {
                return Key::Hangup;
            };
            self.decoder = decoder;
            self.pending.extend(keys);
        }
    }
}

/// Where a question is written.
pub type Out<'a> = &'a mut (dyn Write + Send);

/// Asks the permission question (already written) and returns the answer; `interrupted` is true
/// when the user pressed Ctrl-C (the turn is to be cancelled).
/// `rule` is what `[a]lways` remembers (none offered: no `a`); `t` reads the reason the model is
/// told.
pub async fn permission_key(
    keys: &mut dyn Keys,
    out: Out<'_>,
    rule: &AlwaysRule,
) -> (PermissionDecision, bool) {
    let _ = out.flush();
    let allowed: &[char] = match rule {
        AlwaysRule::Nothing => &['y', 'n', 't', 'v'],
        AlwaysRule::Tool | AlwaysRule::ReadOnly(_) | AlwaysRule::Exact => {
            &['y', 'a', 'n', 't', 'v']
        }
    };
    let (decision, word, interrupted) = match read_choice(keys, allowed, None).await {
        Choice::Key('y') => (PermissionDecision::AllowOnce, "yes", false),
        Choice::Key('a') => (PermissionDecision::AllowMatching, "always", false),
        Choice::Key('v') => (PermissionDecision::NeverMatching, "never", false),
        Choice::Key('t') => {
            let _ = write!(out, " no, because: ");
            let _ = out.flush();
            return match read_line(keys, out, None).await {
                LineEnd::Line(reason) if !reason.trim().is_empty() => {
                    (PermissionDecision::RejectBecause(reason), false)
                }
                LineEnd::Line(_) | LineEnd::Eof | LineEnd::Escape => {
                    (PermissionDecision::RejectOnce, false)
                }
                LineEnd::Interrupt => (PermissionDecision::RejectOnce, true),
            };
        }
        Choice::Key(_) | Choice::Escape | Choice::Eof => {
            (PermissionDecision::RejectOnce, "no", false)
        }
        Choice::Interrupt => (PermissionDecision::RejectOnce, "no (cancelled)", true),
    };
    let _ = writeln!(out, " {word}");
    let _ = out.flush();
    (decision, interrupted)
}

/// Reads the answer to [`super::permission::network_question`] (already written): Escape or
/// the end of input is `No`; `interrupted` is true on Ctrl-C (the turn is to be cancelled).
pub async fn network_key(keys: &mut dyn Keys, out: Out<'_>) -> (NetworkAnswer, bool) {
    let _ = out.flush();
    let (answer, word, interrupted) = match read_choice(keys, &['y', 'a', 'n'], None).await {
        Choice::Key('y') => (NetworkAnswer::Once, "yes", false),
        Choice::Key('a') => (NetworkAnswer::Session, "always this session", false),
        Choice::Key(_) | Choice::Escape | Choice::Eof => (NetworkAnswer::No, "no", false),
        Choice::Interrupt => (NetworkAnswer::No, "no (cancelled)", true),
    };
    let _ = writeln!(out, " {word}");
    let _ = out.flush();
    (answer, interrupted)
}

/// Reads the answer to [`super::permission::relayed_question`] (already written): the chosen option's id; Escape or
/// the end of input picks the agent's `reject_once` option; `interrupted` is true on Ctrl-C (the
/// turn is to be cancelled, and the answer is cancelled).
pub async fn relayed_key(
    request: &RelayedPermission,
    keys: &mut dyn Keys,
    out: Out<'_>,
) -> (Option<String>, bool) {
    let _ = out.flush();
    let options: Vec<&RelayedOption> = request.options.iter().take(9).collect();
    let allowed: Vec<char> = (1..=options.len())
        .filter_map(|n| char::from_digit(n as u32, 10))
        .collect();
    let (chosen, word, interrupted) = match read_choice(keys, &allowed, None).await {
        Choice::Key(k) => {
            let index = k.to_digit(10).map_or(0, |d| d as usize).saturating_sub(1);
            match options.get(index) {
                Some(o) => (Some(o.id.clone()), inline(&o.name), false),
                None => (request.refusal(), "no".to_string(), false),
            }
        }
        Choice::Escape | Choice::Eof => (request.refusal(), "no".to_string(), false),
        Choice::Interrupt => (None, "cancelled".to_string(), true),
    };
    let _ = writeln!(out, " {word}");
    let _ = out.flush();
    (chosen, interrupted)
}

/// Asks every question of a form in turn.
pub async fn ask_form(form: &Form, keys: &mut dyn Keys, out: Out<'_>, color: bool) -> FormAnswer {
    let mut answers = Vec::new();
    for question in &form.questions {
        match ask_question(question, keys, out, color).await {
            Asked::Answer(value) => answers.push(value),
            Asked::Declined => return FormAnswer::Declined,
            Asked::Cancelled => return FormAnswer::Cancelled,
        }
    }
    FormAnswer::Accepted(answers)
}

enum Asked {
    Answer(AnswerValue),
    Declined,
    Cancelled,
}

async fn ask_question(
    question: &Question,
    keys: &mut dyn Keys,
    out: Out<'_>,
    color: bool,
) -> Asked {
    let _ = writeln!(
        out,
        "{}",
        style::bold(color, &format!("? {}", visible(&question.question)))
    );
    match &question.kind {
        QuestionKind::Confirm { default } => {
            let hint = match default {
                Some(true) => "[Y/n]",
                Some(false) => "[y/N]",
                None => "[y/n]",
            };
            let _ = write!(out, "{} ", style::dim(color, hint));
            let _ = out.flush();
            let on_enter = default.map(|d| if d { 'y' } else { 'n' });
            match read_choice(keys, &['y', 'n'], on_enter).await {
                Choice::Key(k) => {
                    let _ = writeln!(out, "{}", if k == 'y' { "yes" } else { "no" });
                    Asked::Answer(AnswerValue::Bool(k == 'y'))
                }
                Choice::Interrupt => {
                    let _ = writeln!(out, "^C");
                    Asked::Cancelled
                }
                Choice::Eof | Choice::Escape => {
                    let _ = writeln!(out);
                    Asked::Declined
                }
            }
        }
        QuestionKind::Choice { options, default } => {
            list_options(options, default.as_slice(), out, color);
            ask_line(
                keys,
                out,
                color,
                "↑/↓ or number>",
                Some(options),
                |line| parse_choice(line, options, default.as_deref()),
            )
            .await
        }
        QuestionKind::Multi { options, default } => {
            let defaults = default.clone().unwrap_or_default();
            list_options(options, &defaults, out, color);
            ask_line(keys, out, color, "numbers (e.g. 1,3)>", None, |line| {
                parse_multi(line, options, default.as_deref())
            })
            .await
        }
        QuestionKind::Text { default } => {
            let prompt = match default {
                Some(d) => format!("[{}]>", inline(d)),
                None => ">".to_string(),
            };
            let _ = write!(out, "{} ", style::dim(color, &prompt));
            let _ = out.flush();
            match read_line(keys, out, None).await {
                LineEnd::Line(line) => Asked::Answer(parse_text(&line, default.as_deref())),
                LineEnd::Interrupt => Asked::Cancelled,
                LineEnd::Eof | LineEnd::Escape => Asked::Declined,
            }
        }
    }
}

/// Asks for one line until `parse` takes it; what it refuses is explained and asked again.
/// With `options`, Up and Down step through them (the line shows the option's number and
/// name) and Enter takes the one shown.
async fn ask_line(
    keys: &mut dyn Keys,
    out: Out<'_>,
    color: bool,
    prompt: &str,
    options: Option<&[String]>,
    parse: impl Fn(&str) -> Result<AnswerValue, String> + Send,
) -> Asked {
    let prompt = format!("{} ", style::dim(color, prompt));
    loop {
        let _ = write!(out, "{prompt}");
        let _ = out.flush();
        let pick = options.map(|options| Pick {
            options,
            prompt: &prompt,
            color,
        });
        match read_line(keys, out, pick).await {
            LineEnd::Line(line) => match parse(&line) {
                Ok(value) => return Asked::Answer(value),
                Err(why) => {
                    let _ = writeln!(out, "{}", style::yellow(color, &why));
                }
            },
            LineEnd::Interrupt => return Asked::Cancelled,
            LineEnd::Eof | LineEnd::Escape => return Asked::Declined,
        }
    }
}

fn list_options(options: &[String], defaults: &[String], out: Out<'_>, color: bool) {
    for (i, option) in options.iter().enumerate() {
        let mark = if defaults.contains(option) {
            style::dim(color, " (default)")
        } else {
            String::new()
        };
        let _ = writeln!(out, "  {}. {}{mark}", i + 1, inline(option));
    }
}

/// How a short answer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineEnd {
    Line(String),
    Interrupt,
    Eof,
    Escape,
}

/// A choice's options, stepped through with Up and Down while its line is read.
pub struct Pick<'a> {
    options: &'a [String],
    /// The prompt as written, to draw the line again.
    prompt: &'a str,
    color: bool,
}

impl Pick<'_> {
    /// The option number after (`down`) or before the one the line holds (1-based; the first
    /// or the last when the line holds none).
    fn step(&self, line: &str, down: bool) -> usize {
        let count = self.options.len();
        match line.trim().parse::<usize>() {
            Ok(n) if (1..=count).contains(&n) => {
                if down {
                    (n % count) + 1
                } else if n == 1 {
                    count
                } else {
                    n - 1
                }
            }
            _ if down => 1,
            _ => count,
        }
    }

    /// The line drawn again holding option `n`, its name dimmed after it.
    fn draw(&self, n: usize, out: Out<'_>) {
        let name = self.options.get(n - 1).map_or(String::new(), |o| inline(o));
        let _ = write!(
            out,
            "\r\x1b[K{}{n}{}",
            self.prompt,
            style::dim(self.color, &format!("  {name}"))
        );
        // The cursor after the number, where typing goes on.
        let back = name.chars().count() + 2;
        let _ = write!(out, "\x1b[{back}D");
    }
}

/// Reads a short answer with echo and backspace; with `pick`, Up and Down step through its
/// options.
pub async fn read_line(keys: &mut dyn Keys, out: Out<'_>, pick: Option<Pick<'_>>) -> LineEnd {
    let mut line = String::new();
    loop {
        match keys.key().await {
            key @ (Key::Up | Key::Down) if pick.as_ref().is_some_and(|p| !p.options.is_empty()) => {
                if let Some(pick) = &pick {
                    let n = pick.step(&line, key == Key::Down);
                    line = n.to_string();
                    pick.draw(n, out);
                }
            }
            Key::Char(c) => {
                line.push(c);
                let _ = write!(out, "{}{c}", erase(&pick));
            }
            Key::Paste(text) => {
                let one_line: String = text.chars().filter(|c| !c.is_control()).collect();
                line.push_str(&one_line);
                let _ = write!(out, "{}{}", erase(&pick), visible(&one_line));
            }
            Key::Backspace => {
                if line.pop().is_some() {
                    let _ = write!(out, "\x08 \x08{}", erase(&pick));
                }
            }
            Key::Enter => {
                let _ = writeln!(out);
                let _ = out.flush();
                return LineEnd::Line(line);
            }
            Key::Interrupt => {
                let _ = writeln!(out, "^C");
                return LineEnd::Interrupt;
            }
            Key::CtrlD | Key::Hangup if line.is_empty() => {
                let _ = writeln!(out);
                return LineEnd::Eof;
            }
            Key::Hangup => {
                let _ = writeln!(out);
                return LineEnd::Eof;
            }
            Key::Escape => {
                let _ = writeln!(out);
                return LineEnd::Escape;
            }
            Key::CtrlD
            | Key::AltEnter
            | Key::Tab
            | Key::DeleteWordBack
            | Key::Delete
            | Key::Left
            | Key::Right
            | Key::Up
            | Key::Down
            | Key::Home
            | Key::End
            | Key::WordLeft
            | Key::WordRight
            | Key::Ctrl(_)
            | Key::Other => {}
        }
        let _ = out.flush();
    }
}

/// What clears the name a [`Pick`] drew after the cursor, before the line changes.
fn erase(pick: &Option<Pick<'_>>) -> &'static str {
    if pick.is_some() { "\x1b[K" } else { "" }
}

/// Reads one of `allowed` (case-insensitive), ignoring other keys; `Enter` gives `on_enter`
/// when set.
pub async fn read_choice(keys: &mut dyn Keys, allowed: &[char], on_enter: Option<char>) -> Choice {
    loop {
        match keys.key().await {
            Key::Char(c) => {
                let lower = c.to_ascii_lowercase();
                if allowed.contains(&lower) {
                    return Choice::Key(lower);
                }
            }
            Key::Enter => {
                if let Some(k) = on_enter {
                    return Choice::Key(k);
                }
            }
            Key::Interrupt => return Choice::Interrupt,
            Key::CtrlD | Key::Hangup => return Choice::Eof,
            Key::Escape => return Choice::Escape,
            Key::AltEnter
            | Key::Tab
            | Key::Backspace
            | Key::DeleteWordBack
            | Key::Delete
            | Key::Left
            | Key::Right
            | Key::Up
            | Key::Down
            | Key::Home
            | Key::End
            | Key::WordLeft
            | Key::WordRight
            | Key::Ctrl(_)
            | Key::Paste(_)
            | Key::Other => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Key(char),
    Interrupt,
    Eof,
    Escape,
}

/// A choice: its number, or its text; empty takes the default.
pub fn parse_choice(
    line: &str,
    options: &[String],
    default: Option<&str>,
) -> Result<AnswerValue, String> {
    let line = line.trim();
    if line.is_empty() {
        return match default {
            Some(d) => Ok(AnswerValue::Text(d.to_string())),
            None => Err(format!("type a number from 1 to {}", options.len())),
        };
    }
    pick(line, options)
        .map(AnswerValue::Text)
        .ok_or_else(|| format!("type a number from 1 to {}", options.len()))
}

/// Several choices, by number or text, separated by commas or spaces; empty takes the default
/// (or none).
pub fn parse_multi(
    line: &str,
    options: &[String],
    default: Option<&[String]>,
) -> Result<AnswerValue, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(AnswerValue::List(
            default.map(<[String]>::to_vec).unwrap_or_default(),
        ));
    }
    let mut picked = Vec::new();
    for part in line.split([',', ' ']).filter(|p| !p.is_empty()) {
        match pick(part, options) {
            Some(o) if !picked.contains(&o) => picked.push(o),
            Some(_) => {}
            None => {
                return Err(format!(
                    "{part:?} is not a number from 1 to {}",
                    options.len()
                ));
            }
        }
    }
    Ok(AnswerValue::List(picked))
}

/// A text answer; empty takes the default, else is no answer.
pub fn parse_text(line: &str, default: Option<&str>) -> AnswerValue {
    if line.trim().is_empty() {
        match default {
            Some(d) => AnswerValue::Text(d.to_string()),
            None => AnswerValue::None,
        }
    } else {
        AnswerValue::Text(line.to_string())
    }
}

fn pick(part: &str, options: &[String]) -> Option<String> {
    if let Ok(n) = part.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| options.get(i)).cloned();
    }
    options
        .iter()
        .find(|o| o.eq_ignore_ascii_case(part))
        .cloned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::event::Question;
    use pretty_assertions::assert_eq;

    fn opts() -> Vec<String> {
        vec!["red".into(), "green".into(), "blue".into()]
    }

    /// Scripted keys.
    struct Typed(VecDeque<Key>);

    #[async_trait]
    impl Keys for Typed {
        async fn key(&mut self) -> Key {
            self.0.pop_front().unwrap_or(Key::Hangup)
        }
    }

    fn typed(s: &str) -> Typed {
        Typed(
            s.chars()
                .map(|c| match c {
                    '\r' => Key::Enter,
                    '\x03' => Key::Interrupt,
                    '\x7f' => Key::Backspace,
                    c => Key::Char(c),
                })
                .collect(),
        )
    }

    #[tokio::test]
    async fn a_form_is_asked_question_by_question() {
        let form = Form {
            tool_call_id: "call_1".into(),
            questions: vec![
                Question {
                    question: "Colour?".into(),
                    kind: QuestionKind::Choice {
                        options: opts(),
                        default: None,
                    },
                },
                Question {
                    question: "Sure?".into(),
                    kind: QuestionKind::Confirm {
                        default: Some(true),
                    },
                },
                Question {
                    question: "Name?".into(),
                    kind: QuestionKind::Text { default: None },
                },
            ],
        };
        let mut out = Vec::new();
        let answer = ask_form(&form, &mut typed("9\r2\r\rBox\x7fb\r"), &mut out, false).await;
        assert_eq!(
            answer,
            FormAnswer::Accepted(vec![
                AnswerValue::Text("green".into()),
                AnswerValue::Bool(true),
                AnswerValue::Text("Bob".into())
            ])
        );
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("type a number from 1 to 3"), "{shown}");
        let cancelled = ask_form(&form, &mut typed("\x03"), &mut Vec::new(), false).await;
        assert_eq!(cancelled, FormAnswer::Cancelled);
    }

    #[tokio::test]
    async fn a_choice_takes_arrow_keys_and_enter_as_well_as_numbers() {
        let form = Form {
            tool_call_id: "call_1".into(),
            questions: vec![Question {
                question: "Colour?".into(),
                kind: QuestionKind::Choice {
                    options: opts(),
                    default: None,
                },
            }],
        };
        let ask = |keys: Vec<Key>| {
            let form = form.clone();
            async move {
                let mut out = Vec::new();
                let answer = ask_form(&form, &mut Typed(keys.into()), &mut out, false).await;
                (answer, String::from_utf8(out).unwrap())
            }
        };
        let (answer, shown) = ask(vec![Key::Down, Key::Down, Key::Enter]).await;
        assert_eq!(
            answer,
            FormAnswer::Accepted(vec![AnswerValue::Text("green".into())])
        );
        assert!(
            shown.ends_with("\r\x1b[K↑/↓ or number> 2  green\x1b[7D\n"),
            "{shown:?}"
        );
        // Up from nothing is the last; Down past the last wraps to the first.
        let (answer, _) = ask(vec![Key::Up, Key::Down, Key::Enter]).await;
        assert_eq!(
            answer,
            FormAnswer::Accepted(vec![AnswerValue::Text("red".into())])
        );
        // A number typed after the arrows replaces what they showed.
        let (answer, _) = ask(vec![Key::Down, Key::Backspace, Key::Char('3'), Key::Enter]).await;
        assert_eq!(
            answer,
            FormAnswer::Accepted(vec![AnswerValue::Text("blue".into())])
        );
    }

    #[tokio::test]
    async fn the_permission_key_ignores_other_keys() {
        let mut out = Vec::new();
        let got = permission_key(&mut typed("xa"), &mut out, &AlwaysRule::Tool).await;
        assert_eq!(got, (PermissionDecision::AllowMatching, false));
        assert_eq!(String::from_utf8(out).unwrap(), " always\n");
        let got = permission_key(&mut typed("\x03"), &mut Vec::new(), &AlwaysRule::Tool).await;
        assert_eq!(got, (PermissionDecision::RejectOnce, true));
        // No rule offered: `a` is not a key of the question.
        let got = permission_key(&mut typed("ay"), &mut Vec::new(), &AlwaysRule::Nothing).await;
        assert_eq!(got, (PermissionDecision::AllowOnce, false));
        // "Never" is the terminal's: scoped like "always" (the gate reads what it covers).
        let got = permission_key(&mut typed("v"), &mut Vec::new(), &AlwaysRule::Exact).await;
        assert_eq!(got, (PermissionDecision::NeverMatching, false));
    }

    #[tokio::test]
    async fn tell_why_reads_the_reason_the_model_is_told() {
        let mut out = Vec::new();
        let rule = AlwaysRule::Exact;
        let got = permission_key(&mut typed("tuse nextest\r"), &mut out, &rule).await;
        assert_eq!(
            got,
            (
                PermissionDecision::RejectBecause("use nextest".into()),
                false
            )
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            " no, because: use nextest\n"
        );
        let got = permission_key(&mut typed("t\r"), &mut Vec::new(), &rule).await;
        assert_eq!(got, (PermissionDecision::RejectOnce, false));
    }

    #[test]
    fn choice_by_number_text_or_default() {
        assert_eq!(
            parse_choice("2", &opts(), None),
            Ok(AnswerValue::Text("green".into()))
        );
        assert_eq!(
            parse_choice(" Blue ", &opts(), None),
            Ok(AnswerValue::Text("blue".into()))
        );
        assert_eq!(
            parse_choice("", &opts(), Some("red")),
            Ok(AnswerValue::Text("red".into()))
        );
        assert_eq!(
            parse_choice("4", &opts(), None),
            Err("type a number from 1 to 3".to_string())
        );
        assert_eq!(
            parse_choice("", &opts(), None),
            Err("type a number from 1 to 3".to_string())
        );
    }

    #[test]
    fn multi_by_numbers_and_names() {
        assert_eq!(
            parse_multi("3, 1 blue", &opts(), None),
            Ok(AnswerValue::List(vec!["blue".into(), "red".into()]))
        );
        assert_eq!(
            parse_multi("", &opts(), None),
            Ok(AnswerValue::List(vec![]))
        );
        assert_eq!(
            parse_multi("", &opts(), Some(&["green".to_string()])),
            Ok(AnswerValue::List(vec!["green".into()]))
        );
        assert_eq!(
            parse_multi("1,9", &opts(), None),
            Err("\"9\" is not a number from 1 to 3".to_string())
        );
    }

    #[test]
    fn text_empty_is_default_or_no_answer() {
        assert_eq!(parse_text("", Some("x")), AnswerValue::Text("x".into()));
        assert_eq!(parse_text("  ", None), AnswerValue::None);
        assert_eq!(parse_text("hi", None), AnswerValue::Text("hi".into()));
    }
}
