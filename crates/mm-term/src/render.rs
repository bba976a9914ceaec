//! Events to text: pure (no I/O, no globals), so every line is snapshot-tested.
//!
//! [`Renderer`] turns the engine's [`Event`]s into pieces of text for stdout or stderr. The
//! interactive layout shows everything on the terminal (warnings on stderr); the one-shot layout
//! (`mm -p`) keeps stdout for the answer's text alone and sends all activity to stderr.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use similar::{ChangeTag, TextDiff};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::markdown::MarkdownStream;
use super::numbers::{count, window};
use super::style::{self, GREEN, RED};
use super::wrap::Wrap;
use crate::engine::Recap;
use crate::engine::cut;
use crate::event::{
    ChildEnd, ChildEvent, ChildStep, ContextUsage, Event, FileDiff, PermissionMode, Plan,
    PlanStatus, ToolCallEnd, ToolCallStart, ToolKind, ToolStatus, Usage,
};
use crate::sanitize::visible;

/// Lines of a tool's output shown under its line.
pub const PREVIEW_LINES: usize = 4;
/// Lines of a diff shown under an edit.
pub const DIFF_LINES: usize = 40;
/// Lines of a proposed change shown above the permission question.
pub const PROPOSED_LINES: usize = 20;
/// What starts each line of the model's reasoning, so it reads apart from the answer without
/// colour too.
pub const THOUGHT_BAR: &str = "│ ";
/// Characters of one preview line.
const LINE_CHARS: usize = 160;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Stdout,
    Stderr,
}

/// A piece of rendered text and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub target: Target,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `mm`: the answer rendered as Markdown when colour is on, activity on stdout too.
    Interactive,
    /// `mm -p`: the final answer, plain, alone on stdout; everything else on stderr.
    OneShot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Nothing,
    Text,
    Thought,
}

/// Renders the events of a session, keeping what a line depends on (the call a result answers,
/// whether the screen is mid-line).
#[derive(Debug)]
pub struct Renderer {
    color: bool,
    layout: Layout,
    md: MarkdownStream,
    stream: Stream,
    /// Whether the terminal's cursor is at the start of a line (stdout and stderr share it).
    col0: bool,
    calls: HashMap<String, ToolCallStart>,
    /// A plan was drawn since the last call started: that call's result (the same checklist)
    /// is not previewed again.
    plan_drawn: bool,
    context: Option<ContextUsage>,
    /// Word wrapping of the answer and of the reasoning, when the width is known.
    wrap_text: Option<Wrap>,
    wrap_thought: Option<Wrap>,
    /// The next reasoning text starts a line (it gets the bar).
    thought_line_start: bool,
    /// The proposed changes shown above a permission question, by call: the result does not
    /// show them again.
    previewed: HashMap<String, Vec<FileDiff>>,
    /// The output of the failed call just shown: a notice repeating it is not shown again.
    last_failed: Option<String>,
    /// The model and server the banner named (the detected model line then says only what it
    /// adds).
    banner_model: Option<(String, String)>,
    /// The answer goes out byte for byte (stdout is not a terminal: a script reads it).
    raw_answer: bool,
    /// The last thing shown was a call's result that says it was cancelled (`[cancelled]`): the
    /// turn's own `cancelled` line would say it twice.
    said_cancelled: bool,
    /// `mm -p`: the model's text since its last tool call, held until it is known to be the
    /// final answer (stdout) and not narration before a call (stderr).
    held: String,
}

impl Renderer {
    /// `color`: ANSI styling on (NO_COLOR unset and the output a terminal). In the one-shot
    /// layout the answer is plain whatever the flag; it styles stderr only.
    pub fn new(layout: Layout, color: bool) -> Self {
        Renderer {
            color,
            layout,
            md: MarkdownStream::new(layout == Layout::Interactive, color),
            stream: Stream::Nothing,
            col0: true,
            calls: HashMap::new(),
            plan_drawn: false,
            context: None,
            wrap_text: None,
            wrap_thought: None,
            thought_line_start: true,
            previewed: HashMap::new(),
            last_failed: None,
            banner_model: None,
            raw_answer: false,
            said_cancelled: false,
            held: String::new(),
        }
    }

    /// The answer's text goes out as the model sent it, not shown visibly: for a stdout that is
    /// not a terminal (everything else from outside mm is still shown visibly, and so is the
    /// answer on a terminal).
    pub fn raw_answer(mut self, raw: bool) -> Self {
        self.raw_answer = raw;
        // Markdown's layout is for a terminal.
        self.md = MarkdownStream::new(self.layout == Layout::Interactive && !raw, self.color);
        self
    }

    /// Wraps the answer and the reasoning at word boundaries for a window this wide (`None`:
    /// not a terminal, no wrapping). Takes effect at the next line.
    pub fn set_width(&mut self, width: Option<usize>) {
        let same = self.wrap_text.as_ref().map(Wrap::width) == width;
        if same || self.stream != Stream::Nothing {
            return;
        }
        self.wrap_text = width.map(Wrap::new);
        self.md.set_width(width);
        self.wrap_thought = width.map(|w| Wrap::new(w).with_prefix(THOUGHT_BAR));
    }

    /// The width it wraps at (`None`: not a terminal).
    fn width(&self) -> Option<usize> {
        self.wrap_text.as_ref().map(Wrap::width)
    }

    /// The banner named this model at this server.
    pub fn set_banner_model(&mut self, name: &str, url: &str) {
        self.banner_model = Some((name.to_string(), url.to_string()));
    }

    /// The change a permission question showed for call `id`.
    pub fn previewed(&mut self, id: &str, diffs: Vec<FileDiff>) {
        if !diffs.is_empty() {
            self.previewed.insert(id.to_string(), diffs);
        }
    }

    /// The last context usage reported.
    pub fn context(&self) -> Option<ContextUsage> {
        self.context
    }

    /// The last line shown says a call was cancelled (`[cancelled]`).
    pub fn said_cancelled(&self) -> bool {
        self.said_cancelled
    }

    fn activity(&self) -> Target {
        match self.layout {
            Layout::Interactive => Target::Stdout,
            Layout::OneShot => Target::Stderr,
        }
    }

    /// Renders one event.
    pub fn event(&mut self, event: &Event) -> Vec<Out> {
        let mut out = Vec::new();
        let last_failed = self.last_failed.take();
        self.said_cancelled = match event {
            Event::ToolCallFinished(end) => {
                end.status == ToolStatus::Failed && end.output.trim_end().ends_with("[cancelled]")
            }
            // What the engine reports around the end of a turn changes nothing on the screen.
            Event::ContextUsage(_) | Event::Titled(_) => self.said_cancelled,
            _ => false,
        };
        match event {
            Event::Text(text) => {
                if self.stream == Stream::Thought {
                    self.end_thought(&mut out);
                }
                self.stream = Stream::Text;
                // Shown visibly before the Markdown renderer adds mm's own styling.
                let text = match self.raw_answer {
                    true => Cow::Borrowed(text.as_str()),
                    false => visible(text),
                };
                let rendered = self.md.push(&text);
                let rendered = match &mut self.wrap_text {
                    Some(w) => w.push(&rendered),
                    None => rendered,
                };
                self.write(&mut out, Target::Stdout, rendered);
            }
            Event::Thought(text) => {
                if self.stream == Stream::Text {
                    self.end_text(&mut out);
                }
                if self.stream != Stream::Thought {
                    self.thought_line_start = true;
                }
                self.stream = Stream::Thought;
                let marked = self.mark_thought(&visible(text));
                let rendered = style::dim(self.color, &marked);
                let rendered = match &mut self.wrap_thought {
                    Some(w) => w.push(&rendered),
                    None => rendered,
                };
                self.write(&mut out, self.activity(), rendered);
            }
            Event::Notice(line) => {
                // The loop detector's stop is the refused call's output too: one line of it.
                if last_failed.as_deref() != Some(line.as_str()) {
                    let target = self.activity();
                    let shown = visible(line);
                    let lines =
                        wrap_lines(shown.lines().map(str::to_string).collect(), self.width());
                    self.lines(&mut out, target, lines);
                }
            }
            Event::ToolCallStarted(call) => {
                // The text before a call was narration, not the answer.
                self.release_narration(&mut out);
                // Wrapped at word boundaries, continuation rows indented under the title.
                let line = tool_line(call, self.color);
                let lines = match self.width() {
                    Some(width) => {
                        let mut wrap = Wrap::new(width).with_prefix("  ");
                        let mut text = wrap.push(&line);
                        text.push_str(&wrap.finish());
                        text.split('\n').map(str::to_string).collect()
                    }
                    None => vec![line],
                };
                self.calls.insert(call.id.clone(), call.clone());
                self.plan_drawn = false;
                let target = self.activity();
                self.lines(&mut out, target, lines);
            }
            Event::ToolCallRunning { .. } => {}
            Event::ToolCallProgress { text, .. } => {
                // The last lines of what came since the last report (a command's output
                // arrives a few times a second, an asked agent's activity a line at a time).
                let all: Vec<&str> = text.lines().collect();
                let lines = all[all.len().saturating_sub(PREVIEW_LINES)..]
                    .iter()
                    .map(|l| style::dim(self.color, &format!("  │ {}", clip(&clean(l)))))
                    .collect();
                let target = self.activity();
                self.lines(&mut out, target, lines);
            }
            Event::ToolCallFinished(end) => {
                let shown_before = self.previewed.remove(&end.id);
                let lines = if self.plan_drawn && end.status == ToolStatus::Completed {
                    Vec::new()
                } else if shown_before.as_ref() == Some(&end.diffs) {
                    // The change was shown with the question: the result says only what it did.
                    let plain = ToolCallEnd {
                        diffs: Vec::new(),
                        ..end.clone()
                    };
                    tool_result(&plain, self.color)
                } else {
                    tool_result(end, self.color)
                };
                self.plan_drawn = false;
                self.calls.remove(&end.id);
                let target = self.activity();
                self.lines(&mut out, target, lines);
                if end.status == ToolStatus::Failed {
                    self.last_failed = Some(end.output.trim_end().to_string());
                }
            }
            Event::ContextUsage(usage) => {
                self.last_failed = last_failed;
                self.context = Some(*usage);
            }
            // A cleared plan (`/new`): the new-session line says enough.
            Event::Plan(plan) if plan.steps.is_empty() => {}
            Event::Plan(plan) => {
                self.plan_drawn = true;
                let target = self.activity();
                self.lines(&mut out, target, plan_lines(plan, self.color));
            }
            Event::ModelDetected {
                name,
                url,
                context_window,
            } => {
                let line = super::banner::model_line(
                    name,
                    url,
                    *context_window,
                    self.banner_model.as_ref(),
                    self.color,
                );
                let lines = wrap_lines(vec![line], self.width());
                self.lines(&mut out, Target::Stderr, lines);
            }
            Event::AutoCompacted(outcome) => {
                let line = style::dim(self.color, &visible(&outcome.line()));
                self.lines(&mut out, Target::Stderr, vec![line]);
            }
            Event::Attached(path) => {
                let path = path.display().to_string();
                let line = style::dim(self.color, &format!("📎 attached {}", visible(&path)));
                let target = self.activity();
                self.lines(&mut out, target, vec![line]);
            }
            Event::Warning(text) => {
                // Warnings are whole lines already (hook failures have their exact form),
                // wrapped at word boundaries for the window.
                let line = style::yellow(self.color, &visible(text));
                let lines = wrap_lines(vec![line], self.width());
                self.lines(&mut out, Target::Stderr, lines);
            }
            // Session lists and editors show these; the terminal has the outcome lines.
            Event::Titled(_) | Event::CompactionStarted { .. } | Event::CompactionEnded { .. } => {
                self.last_failed = last_failed;
            }
            Event::Child(child) => match child_shown(child) {
                Some(shown) => {
                    self.last_failed = last_failed;
                    out = self.event(&shown);
                }
                None => self.last_failed = last_failed,
            },
            // The interactive status line says it (frontend.rs); a one-shot run, which has none,
            // says it on stderr.
            Event::Waiting(waiting) => {
                self.last_failed = last_failed;
                if self.layout == Layout::OneShot {
                    let line = style::dim(self.color, &visible(&waiting.line()));
                    let lines = wrap_lines(vec![line], self.width());
                    self.lines(&mut out, Target::Stderr, lines);
                }
            }
        }
        out
    }

    /// The bar at the start of each line of reasoning.
    fn mark_thought(&mut self, text: &str) -> String {
        let mut marked = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            if self.thought_line_start {
                marked.push_str(THOUGHT_BAR);
                self.thought_line_start = false;
            }
            marked.push(c);
            if c == '\n' {
                self.thought_line_start = true;
            }
        }
        marked
    }

    /// Ends the turn's output: writes what the Markdown renderer held back and ends the line.
    pub fn finish(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        match self.stream {
            Stream::Text => self.end_text(&mut out),
            Stream::Thought => self.end_thought(&mut out),
            Stream::Nothing => self.break_line(&mut out, self.activity()),
        }
        self.stream = Stream::Nothing;
        // `mm -p`: what the model said last, after its last call, is the answer.
        if !self.held.is_empty() {
            out.push(Out {
                target: Target::Stdout,
                text: std::mem::take(&mut self.held),
            });
        }
        out
    }

    /// `mm -p`: the text held so far was narration before a tool call: on stderr, shown
    /// visibly (even when the answer would have gone out byte for byte).
    fn release_narration(&mut self, out: &mut Vec<Out>) {
        if self.stream == Stream::Text {
            self.end_text(out);
            self.stream = Stream::Nothing;
        }
        if self.held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.held);
        let shown = visible(&held).into_owned();
        self.break_line(out, Target::Stderr);
        self.write(out, Target::Stderr, shown);
    }

    /// Lines that must start at the beginning of a line (after a streamed answer, for example).
    pub fn lines(&mut self, out: &mut Vec<Out>, target: Target, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        match self.stream {
            Stream::Text => self.end_text(out),
            Stream::Thought => self.end_thought(out),
            Stream::Nothing => self.break_line(out, target),
        }
        self.stream = Stream::Nothing;
        let mut text = lines.join("\n");
        text.push('\n');
        self.write(out, target, text);
    }

    /// The answer's text ended: what the Markdown renderer and the wrapping held back, and the
    /// end of its line (on stdout in both layouts: `mm -p`'s answer ends with a newline).
    fn end_text(&mut self, out: &mut Vec<Out>) {
        let held = self.md.finish();
        let held = match &mut self.wrap_text {
            Some(w) => {
                let mut s = w.push(&held);
                s.push_str(&w.finish());
                s
            }
            None => held,
        };
        self.write(out, Target::Stdout, held);
        self.break_line(out, Target::Stdout);
        self.stream = Stream::Nothing;
    }

    fn end_thought(&mut self, out: &mut Vec<Out>) {
        if let Some(w) = &mut self.wrap_thought {
            let held = w.finish();
            let target = self.activity();
            self.write(out, target, held);
        }
        self.break_line(out, self.activity());
        self.stream = Stream::Nothing;
    }

    fn break_line(&mut self, out: &mut Vec<Out>, target: Target) {
        if self.holds(target) {
            if !self.held.is_empty() && !self.held.ends_with('\n') {
                self.held.push('\n');
            }
            return;
        }
        if !self.col0 {
            self.write(out, target, "\n".to_string());
        }
    }

    /// Whether what goes to `target` is held (`mm -p`'s stdout, until the answer is known).
    fn holds(&self, target: Target) -> bool {
        self.layout == Layout::OneShot && target == Target::Stdout
    }

    fn write(&mut self, out: &mut Vec<Out>, target: Target, text: String) {
        if text.is_empty() {
            return;
        }
        if self.holds(target) {
            self.held.push_str(&text);
            return;
        }
        self.col0 = text.ends_with('\n');
        match out.last_mut() {
            Some(last) if last.target == target => last.text.push_str(&text),
            _ => out.push(Out { target, text }),
        }
    }
}

/// The icon of a tool kind.
pub fn icon(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Execute => "$",
        ToolKind::Read => "📄",
        ToolKind::Edit => "✏️",
        ToolKind::Fetch => "🌐",
        ToolKind::Think => "💭",
        ToolKind::Other => "•",
    }
}

/// The one line of a tool call: its kind's icon and its title (first line only).
pub fn tool_line(call: &ToolCallStart, color: bool) -> String {
    let title = one_line(&call.title);
    format!("{} {}", icon(call.kind), style::bold(color, &title))
}

/// The mark of a failed call's result.
pub const FAILED_MARK: &str = "✗";

/// What the terminal shows of a `task` call's child (docs/terminal.md, "Tasks"): each of its
/// tool calls as a line of the `task` call's output (on a terminal, its live box under the
/// call, erased when the call ends), and a summary line when it ends; its text, plan and
/// usage are not shown (its answer is the call's result).
pub fn child_shown(child: &ChildEvent) -> Option<Event> {
    match &child.step {
        ChildStep::Started { .. } => None,
        ChildStep::Event(event) => match &**event {
            Event::ToolCallStarted(call) => Some(Event::ToolCallProgress {
                id: child.call.clone(),
                text: one_line(&call.title),
            }),
            _ => None,
        },
        ChildStep::Ended { steps, calls, end } => {
            let how = match end {
                ChildEnd::Answered => "answered",
                ChildEnd::Cancelled => "cancelled",
                ChildEnd::Limit => "stopped at its limit",
                ChildEnd::Failed => "failed",
            };
            Some(Event::Notice(format!(
                "  └ task {how}: {} model call(s), {} tool call(s)",
                count(u64::from(*steps)),
                count(u64::from(*calls))
            )))
        }
    }
}

/// The lines under a finished call: a dimmed preview of its output, the diff of an edit, or the
/// failure in red: `✗ <reason>`, then the last lines of the rest.
pub fn tool_result(end: &ToolCallEnd, color: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if end.status == ToolStatus::Failed {
        // The mark and the reason first, never folded away under `… N earlier lines`: a new
        // title says why (`bash — denied by a hook`), else the output's first line does (a tool
        // says why it failed there); the context after it, its last lines.
        let output = end.output.trim();
        let (reason, rest) = match &end.title {
            Some(title) => (one_line(title), output),
            None => {
                let (first, rest) = output.split_once('\n').unwrap_or((output, ""));
                (clip(&clean(first.trim())), rest)
            }
        };
        let reason = if reason.is_empty() {
            "failed".to_string()
        } else {
            reason
        };
        lines.push(style::red(color, &format!("  {FAILED_MARK} {reason}")));
        for line in tail(rest) {
            lines.push(style::red(color, &format!("  {line}")));
        }
        return lines;
    }
    if let Some(title) = &end.title {
        lines.push(style::dim(color, &format!("  ↳ {}", one_line(title))));
    }
    if end.diffs.is_empty() {
        for line in tail(&end.output) {
            lines.push(style::dim(color, &format!("  {line}")));
        }
    } else {
        for diff in &end.diffs {
            lines.extend(diff_lines(diff, color));
        }
    }
    lines
}

/// The last lines of a tool's output, each clipped, after `… N earlier lines` when there are
/// more: a build's errors and a test run's summary are at the end. The count is exact: where the
/// tool cut the middle of a long output, its marker line says how many line breaks it cut
/// (`tools::cut`).
pub fn tail(output: &str) -> Vec<String> {
    let text = output.trim_end();
    if text.trim().is_empty() {
        return Vec::new();
    }
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(PREVIEW_LINES);
    let mut lines = Vec::new();
    if from > 0 {
        lines.push(earlier(hidden_lines(&all[..from])));
    }
    lines.extend(all[from..].iter().map(|l| clip(&clean(l))));
    lines
}

/// The lines of the output that these shown lines stand for: a cut's marker line stands for the
/// line breaks it cut, less itself and the line it split in two.
fn hidden_lines(shown: &[&str]) -> usize {
    shown
        .iter()
        .map(|line| match cut::parse_marker(line) {
            Some(omitted) => omitted.lines,
            None => 1,
        })
        .sum::<usize>()
        .saturating_sub(
            shown
                .iter()
                .filter(|l| cut::parse_marker(l).is_some())
                .count(),
        )
}

fn earlier(n: usize) -> String {
    if n == 1 {
        "… 1 earlier line".to_string()
    } else {
        format!("… {n} earlier lines")
    }
}

fn more(n: usize) -> String {
    if n == 1 {
        "… 1 more line".to_string()
    } else {
        format!("… {n} more lines")
    }
}

/// A coloured unified diff of one file (2 lines of context), cut after [`DIFF_LINES`] lines.
pub fn diff_lines(diff: &FileDiff, color: bool) -> Vec<String> {
    diff_lines_cut(diff, color, DIFF_LINES)
}

/// The change a gated call proposes, shown above its permission question: the diff of each
/// file (a new file's first lines), cut after [`PROPOSED_LINES`] lines with a count.
pub fn proposed_lines(diffs: &[FileDiff], color: bool) -> Vec<String> {
    diffs
        .iter()
        .flat_map(|d| diff_lines_cut(d, color, PROPOSED_LINES))
        .collect()
}

fn diff_lines_cut(diff: &FileDiff, color: bool, max: usize) -> Vec<String> {
    let old = diff.old_text.as_deref().unwrap_or("");
    let text_diff = TextDiff::from_lines(old, diff.new_text.as_str());
    let mut body = Vec::new();
    for hunk in text_diff.unified_diff().context_radius(2).iter_hunks() {
        body.push(style::dim(color, &format!("  {}", hunk.header())));
        for change in hunk.iter_changes() {
            let value = clip(&clean(change.value().trim_end_matches(['\n', '\r'])));
            let line = match change.tag() {
                ChangeTag::Delete => style::paint(color, RED, &format!("  -{value}")),
                ChangeTag::Insert => style::paint(color, GREEN, &format!("  +{value}")),
                ChangeTag::Equal => style::dim(color, &format!("   {value}")),
            };
            body.push(line);
        }
    }
    let path = diff.path.display().to_string();
    let name = if diff.old_text.is_none() {
        format!("  new file {}", visible(&path))
    } else {
        format!("  {}", visible(&path))
    };
    let mut lines = vec![style::dim(color, &name)];
    let total = body.len();
    lines.extend(body.into_iter().take(max));
    if total > max {
        lines.push(style::dim(color, &format!("  {}", more(total - max))));
    }
    lines
}

/// The plan: its title, then one line per step (the model's text shown visibly).
pub fn plan_lines(plan: &Plan, color: bool) -> Vec<String> {
    let mut lines = vec![style::bold(color, &format!("📋 {}", visible(&plan.title)))];
    for step in &plan.steps {
        let content = visible(&step.content);
        let (mark, text) = match step.status {
            PlanStatus::Completed => ("✓", style::dim(color, &content)),
            PlanStatus::InProgress => ("▸", style::bold(color, &content)),
            PlanStatus::Pending => ("○", content.into_owned()),
            PlanStatus::Skipped => ("–", style::dim(color, &content)),
        };
        let mut line = format!("  {mark} {text}");
        if let Some(note) = &step.note {
            line.push_str(&style::dim(color, &format!(" — {}", visible(note))));
        }
        lines.push(line);
    }
    lines
}

/// What a turn did, for the line after it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TurnSummary {
    /// `None` for a slash command.
    pub recap: Option<Recap>,
    /// The tokens of this turn (the session's totals after minus before).
    pub usage: Usage,
    pub context: Option<ContextUsage>,
    pub elapsed: Duration,
    /// The session's mode, when the line shows it (the interactive session).
    pub mode: Option<PermissionMode>,
}

/// The dim line after a turn:
/// `1.2k in / 340 out · 80% cached · ctx 23% of 32k · 4.2s · 📖 1 skill(s)`.
pub fn recap_line(summary: &TurnSummary, color: bool) -> String {
    let mut parts = Vec::new();
    let usage = &summary.usage;
    if usage.input_tokens + usage.output_tokens > 0 {
        parts.push(format!(
            "{} in / {} out",
            count(usage.input_tokens),
            count(usage.output_tokens)
        ));
        if let Some(cached) = usage.cached_read_tokens
            && usage.input_tokens > 0
        {
            parts.push(format!("{}% cached", percent(cached, usage.input_tokens)));
        }
    }
    if let Some(ctx) = summary.context {
        if ctx.size > 0 {
            parts.push(format!(
                "ctx {}% of {}",
                percent(ctx.used, ctx.size),
                window(ctx.size)
            ));
        } else if ctx.used > 0 {
            parts.push(format!("ctx {} of unknown", count(ctx.used)));
        }
    }
    parts.push(format!("{:.1}s", summary.elapsed.as_secs_f64()));
    if let Some(recap) = summary.recap
        && recap.get(crate::event::Tally::Skill) > 0
    {
        parts.push(format!(
            "📖 {} skill(s)",
            recap.get(crate::event::Tally::Skill)
        ));
    }
    if let Some(recap) = summary.recap
        && recap.refused() > 0
    {
        parts.push(format!(
            "⛔ {} host(s) refused (tools.networkAllow)",
            recap.refused()
        ));
    }
    if let Some(mode) = summary.mode {
        parts.push(format!("mode {}", mode.id()));
    }
    style::dim(color, &parts.join(" · "))
}

fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        ((part as f64 * 100.0) / whole as f64).round() as u64
    }
}

/// Lines of prose (the recap, warnings, notices) wrapped at word boundaries for a window
/// `width` columns wide, so the terminal never breaks a word; a line that fits is left as it is,
/// and so is every line when the width is not known.
pub fn wrap_lines(lines: Vec<String>, width: Option<usize>) -> Vec<String> {
    let Some(width) = width else {
        return lines;
    };
    let mut out = Vec::new();
    for line in lines {
        let mut w = Wrap::new(width);
        let mut text = w.push(&line);
        text.push_str(&w.finish());
        out.extend(text.split('\n').map(str::to_string));
    }
    out
}

/// The status line while a turn runs (on stderr, redrawn in place): a spinner frame, what runs
/// (`thinking`, or the running call's title), the seconds since the turn began, the tokens the
/// model has streamed so far when there are any, and how to stop it. What runs is cut with `…`
/// so that the line fits `width` columns (it is redrawn with `\r`, and must never wrap).
pub fn status_line(
    frame: &str,
    what: &str,
    elapsed: Duration,
    tokens: u64,
    width: usize,
    color: bool,
) -> String {
    let mut facts = format!("{:.0}s", elapsed.as_secs_f64().floor());
    if tokens > 0 {
        facts.push_str(&format!(" · {} tokens", count(tokens)));
    }
    facts.push_str(" · esc to interrupt");
    let what = one_line(what);
    // `frame what · facts`, one column spare so the terminal never wraps at the edge.
    let room = width.saturating_sub(facts.chars().count() + frame.chars().count() + 5);
    let what = fit(&what, room);
    format!(
        "{frame} {what} {}",
        style::dim(color, &format!("· {facts}"))
    )
}

/// The status line as it is drawn in place (`\r`, the line, the rest of the row erased), and
/// under it, when keys were typed ahead during the turn, the prompt with their text, cut to
/// fit `width` columns from its end; the cursor is left on the status line's row.
pub fn status_rows(line: &str, typed: &str, width: usize) -> String {
    let mut text = format!("\r{line}\x1b[K");
    if !typed.is_empty() {
        let typed = clean(typed);
        let room = width.saturating_sub(PROMPT_COLUMNS + 1).max(1);
        let shown = if typed.width() > room {
            // Its end, where the typing is: characters from the end while they fit.
            let mut used = 1;
            let mut tail: Vec<char> = Vec::new();
            for c in typed.chars().rev() {
                used += c.width().unwrap_or(0);
                if used > room {
                    break;
                }
                tail.push(c);
            }
            std::iter::once('…').chain(tail.into_iter().rev()).collect()
        } else {
            typed
        };
        text.push_str(&format!("\n\r> {shown}\x1b[K\x1b[1A\r"));
    }
    text
}

/// What takes the cursor back to the status line's first row before it is drawn again or
/// erased: the line was `columns` wide with the cursor after it, and a terminal that reflows
/// (tmux, VTE, iTerm2, kitty, Windows Terminal) made it several rows when the window narrowed
/// to `width`, the cursor on the last (`\r` alone would leave the others in the scrollback).
pub fn status_climb(columns: usize, width: usize) -> String {
    match columns.div_ceil(width.max(1)).saturating_sub(1) {
        0 => String::new(),
        n => format!("\x1b[{n}A"),
    }
}

/// The columns of the prompt (`> `).
const PROMPT_COLUMNS: usize = 2;

/// The first line of a title, with `…` when there were more.
fn one_line(text: &str) -> String {
    let mut lines = text.trim().lines();
    let first = clip(&clean(lines.next().unwrap_or("")));
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

fn clip(line: &str) -> String {
    if line.chars().count() > LINE_CHARS {
        let cut: String = line.chars().take(LINE_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// A line of a tool's output (or any outside text shown on one line of a preview) as the
/// terminal shows it: escape sequences and control characters visible (never acted on), tabs
/// as four spaces.
pub fn clean(line: &str) -> String {
    visible(line).replace('\t', "    ")
}

/// The live output of the running call on a terminal: its last [`PREVIEW_LINES`] lines, each
/// cut to one row, redrawn in place under the call's line as output arrives (never appended to
/// the scrollback). When the call ends, the box is erased and the result's tail takes its place.
///
/// The text it returns moves the cursor: it assumes the cursor is where the box left it, at
/// the start of the row under the box, and that nothing was written since but lines it erased
/// first ([`LiveOutput::erase`]).
#[derive(Debug, Default)]
pub struct LiveOutput {
    /// The call whose output is kept.
    id: String,
    lines: std::collections::VecDeque<String>,
    /// The columns of each row drawn now (none when no box is drawn): a terminal that reflows
    /// its rows when the window narrows (tmux, VTE, iTerm2, kitty, Windows Terminal) makes a
    /// row wider than the new width two or more, which the erase must climb too.
    drawn: Vec<usize>,
}

impl LiveOutput {
    /// Output of call `id` arrived (whole lines): the text that draws the box again with its
    /// last lines, each cut to fit `width` columns.
    pub fn push(&mut self, id: &str, text: &str, width: usize, color: bool) -> String {
        if self.id != id {
            self.id = id.to_string();
            self.lines.clear();
        }
        for line in text.lines() {
            if self.lines.len() == PREVIEW_LINES {
                self.lines.pop_front();
            }
            self.lines.push_back(clean(line));
        }
        let mut drawn = self.erase(width);
        // `  │ ` and one column spare, so that a row never wraps.
        let room = width.saturating_sub(5).max(1);
        for line in &self.lines {
            let row = format!("  │ {}", fit(line, room));
            self.drawn.push(row.width());
            drawn.push_str(&style::dim(color, &row));
            drawn.push('\n');
        }
        drawn
    }

    /// The text that erases the box (nothing when none is drawn), the window being `width`
    /// columns wide now; its lines are kept, for the next output of the same call.
    pub fn erase(&mut self, width: usize) -> String {
        let width = width.max(1);
        let rows: usize = std::mem::take(&mut self.drawn)
            .into_iter()
            .map(|columns| columns.div_ceil(width).max(1))
            .sum();
        match rows {
            0 => String::new(),
            n => format!("\x1b[{n}A\r\x1b[J"),
        }
    }

    /// The call ended: the text that erases the box; its lines are forgotten.
    pub fn end(&mut self, width: usize) -> String {
        self.id.clear();
        self.lines.clear();
        self.erase(width)
    }

    /// The screen was cleared: nothing is left to erase (the next output draws the box again).
    pub fn cleared(&mut self) {
        self.drawn.clear();
    }

    /// Whether a box is on the screen.
    pub fn drawn(&self) -> bool {
        !self.drawn.is_empty()
    }
}

/// `line` cut to `room` columns, with `…` when it was longer.
fn fit(line: &str, room: usize) -> String {
    match super::wrap::cut_start(line, room) {
        Some(kept) => format!("{kept}…"),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests;
