//! Streaming Markdown to ANSI: the answer is shown as it arrives, so this renders chunk by chunk
//! and holds back only what it cannot decide yet (the first characters of a line, a `*` that may
//! be `**`, a line of a code block until its end, for highlighting).
//!
//! A document parser needs the whole text; models stream theirs, and users want each token on
//! screen at once. So the text streams through this subset of what models write — headings
//! (without their `#`), lists, quotes, rules, emphasis, inline code, links (their text, then the
//! URL), fenced code blocks (without the fences; each code line cut with a dim `…` at the
//! window's edge, never wrapped, so copied code stays valid) — and only a table, which cannot be
//! drawn before its widest cell is known, is held whole and parsed by pulldown-cmark
//! ([`table_lines`]), its columns aligned and its cells wrapped when the window is narrow.

use pulldown_cmark::{Alignment, Event as Md, Options, Parser, Tag, TagEnd};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::style::{BLUE, BOLD, CYAN, DIM, GREEN, ITALIC, MAGENTA, RESET, YELLOW};

/// How the start of a line was classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineStart {
    /// Not decided: the characters are held in `pending`.
    Undecided,
    /// Inline text follows (paragraph, list item, quote, heading).
    Inline,
}

/// Renders streamed Markdown. Without layout (not a terminal) it is a pass-through; without
/// colour (`NO_COLOR`) the layout stays and the colours go ([`style::without_colour`]).
#[derive(Debug)]
pub struct MarkdownStream {
    /// The layout is drawn (stdout is a terminal).
    layout: bool,
    color: bool,
    state: LineStart,
    /// Characters not yet written.
    pending: String,
    /// Inside a fenced code block: its language (possibly empty).
    fence: Option<String>,
    /// Inside a heading: its colour.
    heading: Option<&'static str>,
    bold: bool,
    italic: bool,
    code: bool,
    /// The last character written in the current line (for emphasis rules).
    prev: Option<char>,
    /// The lines of a table being received (held until it ends).
    table: Vec<String>,
    /// A link being received: `[text` or `[text](url`, written once it closes.
    link: Option<String>,
    /// The window's width: code lines are cut, tables fit (`None`: no limit).
    width: Option<usize>,
}

impl MarkdownStream {
    pub fn new(layout: bool, color: bool) -> Self {
        MarkdownStream {
            layout,
            color,
            state: LineStart::Undecided,
            pending: String::new(),
            fence: None,
            heading: None,
            bold: false,
            italic: false,
            code: false,
            prev: None,
            table: Vec::new(),
            link: None,
            width: None,
        }
    }

    /// Code lines are cut and tables drawn to fit `width` columns (`None`: no limit).
    pub fn set_width(&mut self, width: Option<usize>) {
        self.width = width;
    }

    /// Renders the next chunk; returns what can be written now.
    pub fn push(&mut self, chunk: &str) -> String {
        if !self.layout {
            return chunk.to_string();
        }
        let mut out = String::new();
        for c in chunk.chars() {
            self.push_char(c, &mut out);
        }
        self.painted(out)
    }

    fn painted(&self, out: String) -> String {
        match self.color {
            true => out,
            false => super::style::without_colour(&out),
        }
    }

    /// Writes whatever is held back (the stream ended, or something else is about to be shown).
    pub fn finish(&mut self) -> String {
        if !self.layout {
            return String::new();
        }
        let mut out = String::new();
        if let Some(link) = self.link.take() {
            out.push_str(&link);
        }
        if self.fence.is_some() {
            if !self.pending.is_empty() {
                let line = std::mem::take(&mut self.pending);
                let lang = self.fence.clone().unwrap_or_default();
                out.push_str(&self.code_line(&line, &lang));
            }
        } else if !self.table.is_empty() {
            let held = std::mem::take(&mut self.pending);
            if !held.trim().is_empty() {
                self.table.push(held);
            }
            self.flush_table(&mut out);
            // The table's last line has its newline; the caller ends the line.
            if out.ends_with('\n') {
                out.pop();
            }
        } else {
            match self.state {
                LineStart::Undecided => {
                    let held = std::mem::take(&mut self.pending);
                    if !held.is_empty() {
                        self.decide(&held, false, &mut out);
                    }
                }
                LineStart::Inline => {
                    let held = std::mem::take(&mut self.pending);
                    for c in held.chars() {
                        self.literal(c, &mut out);
                    }
                }
            }
        }
        if self.heading.is_some() || self.bold || self.italic || self.code {
            out.push_str(RESET);
        }
        let width = self.width;
        *self = MarkdownStream {
            fence: None,
            ..MarkdownStream::new(self.layout, self.color)
        };
        self.width = width;
        self.painted(out)
    }

    /// A line of code, highlighted, cut with a dim `…` where it would cross the window's edge.
    fn code_line(&self, line: &str, lang: &str) -> String {
        // One column spare: a row as wide as the window would wrap in some terminals.
        match self
            .width
            .and_then(|w| super::wrap::cut_start(line, w.saturating_sub(1)))
        {
            Some(kept) => format!("{}{DIM}…{RESET}", highlight_line(kept, lang)),
            None => highlight_line(line, lang),
        }
    }

    fn flush_table(&mut self, out: &mut String) {
        let rows = std::mem::take(&mut self.table);
        for line in table_lines(&rows.join("\n"), self.width) {
            out.push_str(&line);
            out.push('\n');
        }
    }

    fn push_char(&mut self, c: char, out: &mut String) {
        if let Some(lang) = &self.fence {
            if c == '\n' {
                let line = std::mem::take(&mut self.pending);
                if line.trim_start().starts_with("```") {
                    // The closing fence is not shown.
                    self.fence = None;
                } else {
                    let lang = lang.clone();
                    out.push_str(&self.code_line(&line, &lang));
                    out.push('\n');
                }
            } else {
                self.pending.push(c);
            }
            return;
        }
        match self.state {
            LineStart::Undecided => {
                if c == '\n' {
                    let held = std::mem::take(&mut self.pending);
                    if is_table_row(&held) {
                        self.table.push(held);
                        return;
                    }
                    if !self.table.is_empty() {
                        self.flush_table(out);
                    }
                    if held.trim_start().starts_with("```") {
                        // The opening fence is not shown: its line goes, newline and all.
                        let lang = held.trim().trim_start_matches('`').trim().to_string();
                        self.fence = Some(lang);
                        return;
                    }
                    self.decide(&held, true, out);
                    self.end_line(out);
                } else if (c == '|' && self.pending.trim().is_empty())
                    || self.pending.trim_start().starts_with('|')
                    || !self.table.is_empty()
                {
                    // A table row (or what follows one) is held to the end of its line.
                    self.pending.push(c);
                } else {
                    self.pending.push(c);
                    let held = self.pending.clone();
                    if !undecidable(&held) {
                        self.pending.clear();
                        self.decide(&held, false, out);
                    }
                }
            }
            LineStart::Inline => {
                if c == '\n' {
                    if let Some(link) = self.link.take() {
                        // Not a link after all: a link never spans lines.
                        for h in link.chars() {
                            self.literal(h, out);
                        }
                    }
                    let held = std::mem::take(&mut self.pending);
                    for h in held.chars() {
                        self.literal(h, out);
                    }
                    self.end_line(out);
                } else {
                    self.inline(c, out);
                }
            }
        }
    }

    /// Classifies a line from its first characters; `whole` when they are the whole line.
    fn decide(&mut self, held: &str, whole: bool, out: &mut String) {
        let indent_len = held.len() - held.trim_start_matches([' ', '\t']).len();
        let (indent, rest) = held.split_at(indent_len);
        if whole {
            let t = rest.trim_end();
            if t.len() >= 3
                && (t.chars().all(|c| c == '-')
                    || t.chars().all(|c| c == '*')
                    || t.chars().all(|c| c == '_'))
            {
                out.push_str(&format!("{DIM}{}{RESET}", "─".repeat(40)));
                return;
            }
        }
        self.state = LineStart::Inline;
        let hashes = rest.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && rest[hashes..].starts_with(' ') {
            let color = if hashes == 1 { MAGENTA } else { BLUE };
            self.heading = Some(color);
            out.push_str(indent);
            out.push_str(&format!("{BOLD}{color}"));
            self.feed(&rest[hashes + 1..], out);
            return;
        }
        for bullet in ["- ", "* ", "+ "] {
            if let Some(after) = rest.strip_prefix(bullet) {
                out.push_str(indent);
                out.push_str(&format!("{YELLOW}•{RESET} "));
                self.feed(after, out);
                return;
            }
        }
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && (rest[digits..].starts_with(". ") || rest[digits..].starts_with(") ")) {
            out.push_str(indent);
            out.push_str(&format!("{YELLOW}{}{RESET}", &rest[..digits + 2]));
            self.feed(&rest[digits + 2..], out);
            return;
        }
        if let Some(after) = rest.strip_prefix('>') {
            out.push_str(indent);
            out.push_str(&format!("{DIM}│{RESET}"));
            self.feed(after, out);
            return;
        }
        out.push_str(indent);
        self.feed(rest, out);
    }

    fn feed(&mut self, text: &str, out: &mut String) {
        for c in text.chars() {
            self.inline(c, out);
        }
    }

    /// One character of inline text; `*` is held until the next one says what it is, a link
    /// until it closes.
    fn inline(&mut self, c: char, out: &mut String) {
        if let Some(mut link) = self.link.take() {
            link.push(c);
            match link_step(&link) {
                LinkStep::More => self.link = Some(link),
                LinkStep::Done { text, url } => {
                    out.push_str(&text);
                    out.push_str(&format!(" {DIM}({url}){RESET}"));
                    self.restyle(out);
                    self.prev = Some(')');
                }
                LinkStep::NotALink => {
                    // Written as it came; its last character may start something.
                    let last = link.pop();
                    for h in link.chars() {
                        self.literal(h, out);
                    }
                    if let Some(last) = last {
                        self.inline(last, out);
                    }
                }
            }
            return;
        }
        if c == '[' && !self.code && self.pending.is_empty() {
            self.link = Some("[".to_string());
            return;
        }
        if self.code {
            if c == '`' {
                if !self.color {
                    out.push('`');
                }
                self.code = false;
                self.restyle(out);
            } else {
                out.push(c);
            }
            self.prev = Some(c);
            return;
        }
        if self.pending == "*" {
            self.pending.clear();
            if c == '*' {
                self.bold = !self.bold;
                self.restyle(out);
                self.prev = Some('*');
                return;
            }
            let opens = !self.italic && !c.is_whitespace();
            let closes = self.italic && self.prev.is_some_and(|p| !p.is_whitespace());
            if opens || closes {
                self.italic = !self.italic;
                self.restyle(out);
            } else {
                out.push('*');
                self.prev = Some('*');
            }
        }
        match c {
            '*' => self.pending.push('*'),
            '`' => {
                self.code = true;
                self.restyle(out);
                // Without colour inline code keeps its backticks: nothing else marks it.
                if !self.color {
                    out.push('`');
                }
            }
            _ => out.push(c),
        }
        if c != '*' {
            self.prev = Some(c);
        }
    }

    fn literal(&mut self, c: char, out: &mut String) {
        out.push(c);
        self.prev = Some(c);
    }

    fn end_line(&mut self, out: &mut String) {
        if self.heading.is_some() || self.bold || self.italic || self.code {
            out.push_str(RESET);
        }
        out.push('\n');
        self.heading = None;
        self.bold = false;
        self.italic = false;
        self.code = false;
        self.prev = None;
        if self.fence.is_none() {
            self.state = LineStart::Undecided;
        }
    }

    /// Writes the escape codes of the current inline state.
    fn restyle(&self, out: &mut String) {
        out.push_str(RESET);
        if let Some(color) = self.heading {
            out.push_str(BOLD);
            out.push_str(color);
        }
        if self.bold {
            out.push_str(BOLD);
        }
        if self.italic {
            out.push_str(ITALIC);
        }
        if self.code {
            out.push_str(CYAN);
        }
    }
}

/// What the characters of a link so far say.
enum LinkStep {
    More,
    Done { text: String, url: String },
    NotALink,
}

/// `held` starts with `[`: a link `[text](url)` so far, complete, or not a link after all.
fn link_step(held: &str) -> LinkStep {
    let body = &held[1..];
    match body.find("](") {
        None => {
            if body.contains(['\n', '[']) {
                return LinkStep::NotALink;
            }
            // `]` not followed by `(`.
            if let Some(i) = body.find(']')
                && i + 1 < body.len()
            {
                return LinkStep::NotALink;
            }
            if body.chars().count() > 200 {
                return LinkStep::NotALink;
            }
            LinkStep::More
        }
        Some(i) => {
            let url = &body[i + 2..];
            if let Some(url) = url.strip_suffix(')') {
                if url.contains(char::is_whitespace) {
                    return LinkStep::NotALink;
                }
                return LinkStep::Done {
                    text: body[..i].to_string(),
                    url: url.to_string(),
                };
            }
            if url.contains(char::is_whitespace) || url.chars().count() > 500 {
                return LinkStep::NotALink;
            }
            LinkStep::More
        }
    }
}

/// A line of a table: it starts with `|` (after spaces).
fn is_table_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

/// A table (its Markdown lines) drawn with aligned columns: a bold header row, a rule under it,
/// cells aligned as the delimiter row says. When the table is wider than `width`, the widest
/// columns are narrowed and their cells wrap at word boundaries inside them. Lines that are
/// not a table after all come back as they were.
pub fn table_lines(markdown: &str, width: Option<usize>) -> Vec<String> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut align: Vec<Alignment> = Vec::new();
    let mut cell: Option<String> = None;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Md::Start(Tag::Table(a)) => align = a,
            Md::Start(Tag::TableHead | Tag::TableRow) => rows.push(Vec::new()),
            Md::Start(Tag::TableCell) => cell = Some(String::new()),
            Md::End(TagEnd::TableCell) => {
                if let (Some(row), Some(text)) = (rows.last_mut(), cell.take()) {
                    row.push(text.trim().to_string());
                }
            }
            Md::Text(t) | Md::Code(t) | Md::InlineHtml(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                }
            }
            Md::SoftBreak | Md::HardBreak => {
                if let Some(c) = cell.as_mut() {
                    c.push(' ');
                }
            }
            _ => {}
        }
    }
    if rows.is_empty() || align.is_empty() {
        return markdown.lines().map(str::to_string).collect();
    }
    let columns = align.len();
    let mut widths = vec![1usize; columns];
    for row in &rows {
        for (i, text) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(text.width());
        }
    }
    // `│ a │ b │`: 3 columns per cell and one more; narrow the widest until it fits.
    if let Some(w) = width {
        let frame = 3 * columns + 1;
        let room = w.saturating_sub(frame + 1).max(columns * 4);
        while widths.iter().sum::<usize>() > room {
            let Some((i, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
                break;
            };
            if widths[i] <= 4 {
                break;
            }
            widths[i] -= 1;
        }
    }
    let mut lines = Vec::new();
    let rule = |l: &str, m: &str, r: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        format!("{DIM}{l}{}{r}{RESET}", parts.join(m))
    };
    lines.push(rule("┌", "┬", "┐"));
    for (n, row) in rows.iter().enumerate() {
        let wrapped: Vec<Vec<String>> = (0..columns)
            .map(|i| wrap_cell(row.get(i).map_or("", String::as_str), widths[i]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            let mut line = format!("{DIM}│{RESET}");
            for i in 0..columns {
                let text = wrapped[i].get(k).map_or("", String::as_str);
                let pad = widths[i].saturating_sub(text.width());
                let (left, right) = match align[i] {
                    Alignment::Right => (pad, 0),
                    Alignment::Center => (pad / 2, pad - pad / 2),
                    Alignment::Left | Alignment::None => (0, pad),
                };
                let text = if n == 0 {
                    format!("{BOLD}{text}{RESET}")
                } else {
                    text.to_string()
                };
                line.push_str(&format!(
                    " {}{text}{} {DIM}│{RESET}",
                    " ".repeat(left),
                    " ".repeat(right)
                ));
            }
            lines.push(line);
        }
        if n == 0 {
            lines.push(rule("├", "┼", "┤"));
        }
    }
    lines.push(rule("└", "┴", "┘"));
    lines
}

/// A cell's text in lines of at most `width` columns, broken at spaces (a longer word cut).
fn wrap_cell(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let line = lines.last_mut().map_or(0, |l| l.width());
            let sep = usize::from(line > 0);
            if line + sep + word.width() <= width {
                if let Some(l) = lines.last_mut() {
                    if sep == 1 {
                        l.push(' ');
                    }
                    l.push_str(&word);
                }
                break;
            }
            if line > 0 {
                lines.push(String::new());
                continue;
            }
            // A word longer than the cell: cut it.
            let mut head = String::new();
            let mut used = 0;
            let mut rest = String::new();
            for c in word.chars() {
                let cw = c.width().unwrap_or(0);
                if used + cw > width || !rest.is_empty() {
                    rest.push(c);
                } else {
                    used += cw;
                    head.push(c);
                }
            }
            if let Some(l) = lines.last_mut() {
                l.push_str(&head);
            }
            lines.push(String::new());
            word = rest;
            if word.is_empty() {
                lines.pop();
                break;
            }
        }
    }
    lines
}

/// Whether the first characters of a line could still start a block construct.
fn undecidable(held: &str) -> bool {
    let rest = held.trim_start_matches([' ', '\t']);
    if rest.is_empty() {
        return true;
    }
    let first = rest.chars().next().unwrap_or(' ');
    let all_same = rest.chars().all(|c| c == first);
    match first {
        // A heading needs `#…# `; a fence `` ``` `` and its language (up to the newline).
        '#' => all_same && rest.len() <= 6,
        '`' => all_same || rest.starts_with("```"),
        // A bullet, a rule, or emphasis.
        '-' | '*' | '+' | '_' => all_same,
        '0'..='9' => {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let tail = &rest[digits..];
            tail.is_empty() || tail == "." || tail == ")"
        }
        _ => false,
    }
}

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "defer",
    "del",
    "do",
    "done",
    "elif",
    "else",
    "enum",
    "esac",
    "export",
    "extends",
    "false",
    "fi",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "go",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "is",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "new",
    "nil",
    "None",
    "not",
    "null",
    "or",
    "and",
    "package",
    "pass",
    "pub",
    "raise",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "switch",
    "then",
    "this",
    "throw",
    "trait",
    "true",
    "True",
    "False",
    "try",
    "type",
    "typeof",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
];

/// The line-comment marker of a fence language.
fn comment_marker(lang: &str) -> &'static str {
    match lang {
        "python" | "py" | "sh" | "bash" | "shell" | "zsh" | "console" | "toml" | "yaml" | "yml"
        | "ruby" | "rb" | "make" | "makefile" | "dockerfile" | "r" | "perl" => "#",
        "sql" | "lua" | "haskell" | "hs" => "--",
        "" | "text" | "txt" | "markdown" | "md" | "json" => "",
        _ => "//",
    }
}

/// Simple syntax colours for one line of a code block: comments, strings, numbers, keywords.
pub fn highlight_line(line: &str, lang: &str) -> String {
    let lang = lang.to_ascii_lowercase();
    let marker = comment_marker(&lang);
    let plain_text = matches!(lang.as_str(), "text" | "txt" | "markdown" | "md");
    if plain_text {
        return line.to_string();
    }
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..].iter().collect();
        if !marker.is_empty()
            && rest.starts_with(marker)
            && (i == 0 || chars[i - 1].is_whitespace() || marker != "#")
        {
            out.push_str(&format!("{DIM}{rest}{RESET}"));
            return out;
        }
        if c == '"' || c == '\'' || c == '`' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            let s: String = chars[i..end].iter().collect();
            out.push_str(&format!("{GREEN}{s}{RESET}"));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            if word.chars().next().is_some_and(|f| f.is_ascii_digit()) {
                out.push_str(&format!("{YELLOW}{word}{RESET}"));
            } else if KEYWORDS.contains(&word.as_str()) {
                out.push_str(&format!("{MAGENTA}{word}{RESET}"));
            } else {
                out.push_str(&word);
            }
            i = j;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}
