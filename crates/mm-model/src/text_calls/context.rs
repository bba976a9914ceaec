//! Where a position of an answer's text stands, as far as calls care: inside a model's reasoning
//! (`<think>`, `<seed:think>`, `[THINK]`, …), where a call is only thought of; inside a code
//! fence or an inline code span, where a call is quoted (docs/engine.md). The state is carried
//! from the start of the answer (the streaming filter keeps it for the text it has let go).

use super::scan::{Marker, any_literal};

/// Reasoning blocks of the families that write them in the text: (open, close).
const THOUGHTS: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel>", "<channel|>"),
    ("<mm:think>", "</mm:think>"),
];

/// The longest marker of [`THOUGHTS`], in bytes.
pub(crate) const LONGEST_THOUGHT_MARKER: usize = 18;

const FENCE: &str = "```";

/// The text after the last close of reasoning in `text` (all of it when none): what reasoning
/// said is no cue for what follows it.
pub(crate) fn after_reasoning(text: &str) -> &str {
    let end = THOUGHTS
        .iter()
        .filter_map(|(_, close)| text.rfind(close).map(|at| at + close.len()))
        .max()
        .unwrap_or(0);
    &text[end..]
}

/// The state of the text before a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Context {
    /// Only blank space precedes the position on its line.
    pub line_start: bool,
    /// Inside a ``` block.
    pub fence: bool,
    /// Inside a `code span` of the current line.
    pub inline: bool,
    /// The reasoning block (index in [`THOUGHTS`]) the position is inside.
    thought: Option<usize>,
    /// A reasoning marker has been seen before the position.
    seen_thought: bool,
}

/// What the text at a position is, to [`Context`].
pub(crate) enum Unit {
    /// This many bytes, passed.
    Len(usize),
    /// The text ends inside what may be a marker: wait for more.
    Cut,
}

impl Context {
    /// The start of an answer.
    pub fn start() -> Self {
        Self {
            line_start: true,
            fence: false,
            inline: false,
            thought: None,
            seen_thought: false,
        }
    }

    /// No call is read here: inside reasoning or inline code.
    pub fn quiet(&self) -> bool {
        self.thought.is_some() || self.inline
    }

    /// Whether a call that `rest` follows was written inside reasoning the chat template
    /// opened: no reasoning marker has been seen before it, and `rest` closes a block it never
    /// opens.
    pub fn in_template_thought(&self, rest: &str) -> bool {
        if self.seen_thought || self.thought.is_some() {
            return false;
        }
        let first_close = THOUGHTS
            .iter()
            .enumerate()
            .filter_map(|(i, (_, close))| rest.find(close).map(|at| (at, i)))
            .min();
        first_close.is_some_and(|(at, i)| !rest[..at].contains(THOUGHTS[i].0))
    }

    /// Passes the unit at `at` (a marker, a run of backticks, a character) and says how long
    /// it was; `end`: the text is the whole rest of the answer.
    pub fn pass(&mut self, text: &str, at: usize, end: bool) -> Unit {
        let rest = &text[at..];
        let Some(c) = rest.chars().next() else {
            return Unit::Len(0);
        };
        if c == '\n' {
            self.line_start = true;
            self.inline = false;
            return Unit::Len(1);
        }
        if let Some(i) = self.thought {
            if c == THOUGHTS[i].1.as_bytes()[0] as char {
                match any_literal(rest, &[THOUGHTS[i].1]) {
                    Marker::Full(n) => {
                        self.thought = None;
                        self.line_start = false;
                        return Unit::Len(n);
                    }
                    Marker::Partial if !end => return Unit::Cut,
                    Marker::Partial | Marker::No => {}
                }
            }
            self.line_start = self.line_start && c.is_whitespace();
            return Unit::Len(c.len_utf8());
        }
        if c == '`' {
            let run = rest.len() - rest.trim_start_matches('`').len();
            // A run cut short may be a fence's opening.
            if run == rest.len() && run < FENCE.len() && !end {
                return Unit::Cut;
            }
            if self.line_start && run >= FENCE.len() {
                self.fence = !self.fence;
                self.inline = false;
            } else if !self.fence {
                self.inline = !self.inline;
            }
            self.line_start = false;
            return Unit::Len(run);
        }
        if matches!(c, '<' | '[') && !self.fence && !self.inline {
            let mut cut = false;
            for (i, (open, close)) in THOUGHTS.iter().enumerate() {
                for (marker, opens) in [(*open, true), (*close, false)] {
                    match any_literal(rest, &[marker]) {
                        Marker::Full(n) => {
                            self.thought = opens.then_some(i);
                            self.seen_thought = true;
                            self.line_start = false;
                            return Unit::Len(n);
                        }
                        Marker::Partial => cut = true,
                        Marker::No => {}
                    }
                }
            }
            if cut && !end {
                return Unit::Cut;
            }
        }
        self.line_start = self.line_start && c.is_whitespace();
        Unit::Len(c.len_utf8())
    }

    /// The state just after a call read from the text, `before` the text up to there.
    pub fn after_call(mut self, before: &str) -> Self {
        self.line_start = match before.rfind('\n') {
            Some(nl) => before[nl + 1..].trim().is_empty(),
            None => before.trim().is_empty(),
        };
        self.inline = false;
        self
    }

    /// The state after the whole of `text` (which ends on a unit's boundary).
    #[cfg(test)]
    pub fn after(mut self, text: &str) -> Self {
        let mut at = 0;
        while at < text.len() {
            match self.pass(text, at, true) {
                Unit::Len(n) => at += n.max(1),
                Unit::Cut => break,
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_code_spans_and_reasoning_are_followed() {
        let ctx = Context::start().after("Look:\n```xml\n");
        assert!(ctx.fence && ctx.line_start);
        let ctx = ctx.after("<a>\n```\nSee `");
        assert!(!ctx.fence && ctx.inline && ctx.quiet());
        let ctx = Context::start().after("<seed:think>I could call");
        assert!(ctx.quiet());
        assert!(!ctx.after(" it.</seed:think>").quiet());
        // Markers inside a fence are quoted, not reasoning.
        assert!(!Context::start().after("```\n<think>\n").quiet());
    }

    #[test]
    fn a_close_nobody_opened_means_the_template_opened_it() {
        let start = Context::start();
        assert!(start.in_template_thought(" hmm</think>x"));
        assert!(!start.in_template_thought(" <think>a</think>x"));
        assert!(!start.in_template_thought(" done"));
        let seen = Context::start().after("<think>a</think>");
        assert!(!seen.in_template_thought("b</think>"));
    }

    #[test]
    fn a_cut_marker_or_backtick_run_waits() {
        let mut ctx = Context::start();
        assert!(matches!(ctx.pass("</seed:th", 0, false), Unit::Cut));
        assert!(matches!(ctx.pass("``", 0, false), Unit::Cut));
        assert!(matches!(ctx.pass("``", 0, true), Unit::Len(2)));
    }
}
