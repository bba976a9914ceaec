//! Streaming Markdown to ANSI: the answer is shown as it arrives, so this renders chunk by chunk
//! and holds back only what it cannot decide yet (the first characters of a line, a `*` that may
//! be `**`, a line of a code block until its end, for highlighting).
//!
//! A document parser (pulldown-cmark) needs the whole text; models stream theirs, and users want
//! each token on screen at once. The subset covers what models write: headings, lists, quotes,
//! rules, emphasis, inline code and fenced code blocks.

use super::style::{BLUE, BOLD, CYAN, DIM, GREEN, ITALIC, MAGENTA, RESET, YELLOW};

/// How the start of a line was classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineStart {
    /// Not decided: the characters are held in `pending`.
    Undecided,
    /// Inline text follows (paragraph, list item, quote, heading).
    Inline,
}

/// Renders streamed Markdown. With colour off it is a pass-through.
#[derive(Debug)]
pub struct MarkdownStream {
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
}

impl MarkdownStream {
    pub fn new(color: bool) -> Self {
        MarkdownStream {
            color,
            state: LineStart::Undecided,
            pending: String::new(),
            fence: None,
            heading: None,
            bold: false,
            italic: false,
            code: false,
            prev: None,
        }
    }

    /// Renders the next chunk; returns what can be written now.
    pub fn push(&mut self, chunk: &str) -> String {
        if !self.color {
            return chunk.to_string();
        }
        let mut out = String::new();
        for c in chunk.chars() {
            self.push_char(c, &mut out);
        }
        out
    }

    /// Writes whatever is held back (the stream ended, or something else is about to be shown).
    pub fn finish(&mut self) -> String {
        if !self.color {
            return String::new();
        }
        let mut out = String::new();
        if self.fence.is_some() {
            if !self.pending.is_empty() {
                let line = std::mem::take(&mut self.pending);
                let lang = self.fence.clone().unwrap_or_default();
                out.push_str(&highlight_line(&line, &lang));
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
        *self = MarkdownStream {
            fence: None,
            ..MarkdownStream::new(self.color)
        };
        out
    }

    fn push_char(&mut self, c: char, out: &mut String) {
        if let Some(lang) = &self.fence {
            if c == '\n' {
                let line = std::mem::take(&mut self.pending);
                if line.trim_start().starts_with("```") {
                    out.push_str(&format!("{DIM}{line}{RESET}\n"));
                    self.fence = None;
                } else {
                    out.push_str(&highlight_line(&line, lang));
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
                    self.decide(&held, true, out);
                    self.end_line(out);
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
            if t.starts_with("```") {
                let lang = t.trim_start_matches('`').trim().to_string();
                out.push_str(&format!("{DIM}{held}{RESET}"));
                self.fence = Some(lang);
                self.state = LineStart::Undecided;
                return;
            }
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
            out.push_str(&format!("{BOLD}{color}{}", &rest[..=hashes]));
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

    /// One character of inline text; `*` is held until the next one says what it is.
    fn inline(&mut self, c: char, out: &mut String) {
        if self.code {
            if c == '`' {
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
