//! `ask_user` forms and the permission question, asked on the terminal. Blocking: run on a
//! blocking thread. Parsing the answers is pure and unit-tested.

use std::io::Write;

use super::raw::{self, Choice, LineEnd};
use super::style;
use crate::event::{AnswerValue, Form, FormAnswer, PermissionDecision, Question, QuestionKind};
use crate::relay::{RelayedOption, RelayedPermission};

/// Asks the permission question (already written) and returns the answer; `interrupted` is true
/// when the user pressed Ctrl-C (the turn is to be cancelled).
pub fn permission_key(out: &mut dyn Write) -> (PermissionDecision, bool) {
    let _ = out.flush();
    let (decision, word, interrupted) = match raw::read_choice(&['y', 'a', 'n', 'v'], None) {
        Choice::Key('y') => (PermissionDecision::AllowOnce, "yes", false),
        Choice::Key('a') => (PermissionDecision::AllowAlways, "always", false),
        Choice::Key('v') => (PermissionDecision::Never, "never", false),
        Choice::Key(_) | Choice::Escape | Choice::Eof => {
            (PermissionDecision::RejectOnce, "no", false)
        }
        Choice::Interrupt => (PermissionDecision::RejectOnce, "no (cancelled)", true),
    };
    let _ = writeln!(out, " {word}");
    let _ = out.flush();
    (decision, interrupted)
}

/// The question for another agent's permission request: `Allow <agent>: <title>?` and its own
/// options, numbered (at most nine can be picked).
pub fn relayed_prompt(request: &RelayedPermission, color: bool) -> String {
    let question = format!(
        "Allow {}?",
        request.title.lines().next().unwrap_or_default()
    );
    let keys: Vec<String> = request
        .options
        .iter()
        .take(9)
        .enumerate()
        .map(|(i, o)| format!("[{}] {}", i + 1, o.name))
        .collect();
    let keys = format!("  {}", keys.join("  "));
    if color {
        format!(
            "{}{}",
            style::bold(true, &question),
            style::dim(true, &keys)
        )
    } else {
        format!("{question}{keys}")
    }
}

/// Reads the answer to [`relayed_prompt`] (already written): the chosen option's id; Escape or
/// the end of input picks the agent's `reject_once` option; `interrupted` is true on Ctrl-C (the
/// turn is to be cancelled, and the answer is cancelled).
pub fn relayed_key(request: &RelayedPermission, out: &mut dyn Write) -> (Option<String>, bool) {
    let _ = out.flush();
    let options: Vec<&RelayedOption> = request.options.iter().take(9).collect();
    let keys: Vec<char> = (1..=options.len())
        .filter_map(|n| char::from_digit(n as u32, 10))
        .collect();
    let (chosen, word, interrupted) = match raw::read_choice(&keys, None) {
        Choice::Key(k) => {
            let index = k.to_digit(10).map_or(0, |d| d as usize).saturating_sub(1);
            match options.get(index) {
                Some(o) => (Some(o.id.clone()), o.name.clone(), false),
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
pub fn ask_form(form: &Form, out: &mut dyn Write, color: bool) -> FormAnswer {
    let mut answers = Vec::new();
    for question in &form.questions {
        match ask_question(question, out, color) {
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

fn ask_question(question: &Question, out: &mut dyn Write, color: bool) -> Asked {
    let _ = writeln!(
        out,
        "{}",
        style::bold(color, &format!("? {}", question.question))
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
            match raw::read_choice(&['y', 'n'], on_enter) {
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
            ask_line(out, color, "number>", |line| {
                parse_choice(line, options, default.as_deref())
            })
        }
        QuestionKind::Multi { options, default } => {
            let defaults = default.clone().unwrap_or_default();
            list_options(options, &defaults, out, color);
            ask_line(out, color, "numbers (e.g. 1,3)>", |line| {
                parse_multi(line, options, default.as_deref())
            })
        }
        QuestionKind::Text { default } => {
            let prompt = match default {
                Some(d) => format!("[{d}]>"),
                None => ">".to_string(),
            };
            let _ = write!(out, "{} ", style::dim(color, &prompt));
            let _ = out.flush();
            match raw::read_line(out) {
                LineEnd::Line(line) => Asked::Answer(parse_text(&line, default.as_deref())),
                LineEnd::Interrupt => Asked::Cancelled,
                LineEnd::Eof | LineEnd::Escape => Asked::Declined,
            }
        }
    }
}

/// Asks for one line until `parse` takes it; what it refuses is explained and asked again.
fn ask_line(
    out: &mut dyn Write,
    color: bool,
    prompt: &str,
    parse: impl Fn(&str) -> Result<AnswerValue, String>,
) -> Asked {
    loop {
        let _ = write!(out, "{} ", style::dim(color, prompt));
        let _ = out.flush();
        match raw::read_line(out) {
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

fn list_options(options: &[String], defaults: &[String], out: &mut dyn Write, color: bool) {
    for (i, option) in options.iter().enumerate() {
        let mark = if defaults.contains(option) {
            style::dim(color, " (default)")
        } else {
            String::new()
        };
        let _ = writeln!(out, "  {}. {option}{mark}", i + 1);
    }
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
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn opts() -> Vec<String> {
        vec!["red".into(), "green".into(), "blue".into()]
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
