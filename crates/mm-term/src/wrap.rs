//! Word wrapping of streamed text for a terminal `width` columns wide: a line breaks at the
//! space before a word that would cross the edge, and only a word longer than a whole line is
//! cut. Pure, streaming (a word is held until it ends or cannot fit anyway), and blind to escape
//! sequences (they take no column). List items, quotes and indented lines continue under their
//! text; fenced code blocks are left to the terminal (code is not reflowed).

use unicode_width::UnicodeWidthChar;

#[derive(Debug, Clone)]
pub struct Wrap {
    width: usize,
    /// What starts a continuation row instead of the line's own indent (a thought's bar).
    prefix: Option<(String, usize)>,
    /// The column of the cursor.
    col: usize,
    word: String,
    word_width: usize,
    /// Inside an escape sequence: copy until its final byte.
    escape: bool,
    /// The continuation indent of this line, once its start is known.
    hang: usize,
    /// The words of this line so far (0: at its start).
    words: usize,
    /// Inside a fenced code block.
    fence: bool,
    /// This line is a fence line or inside a fence: not wrapped.
    verbatim: bool,
    /// The word being written is longer than a line: its characters go out as they come.
    long: bool,
    /// The start of a verbatim line (to see a fence close).
    vline: String,
    /// Spaces after the last word, written only if the next word stays on this row.
    spaces: usize,
}

impl Wrap {
    pub fn new(width: usize) -> Self {
        Wrap {
            width: width.max(8),
            prefix: None,
            col: 0,
            word: String::new(),
            word_width: 0,
            escape: false,
            hang: 0,
            words: 0,
            fence: false,
            verbatim: false,
            long: false,
            vline: String::new(),
            spaces: 0,
        }
    }

    /// The width it wraps at.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Continuation rows start with `prefix` (already in the text at each line's start).
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        let w = prefix.chars().filter_map(UnicodeWidthChar::width).sum();
        self.prefix = Some((prefix.to_string(), w));
        self
    }

    /// Wraps the next piece; returns what can be written now.
    pub fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            self.char(c, &mut out);
        }
        out
    }

    /// Writes the word held back; the next text starts a new line (the caller ends this one).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.flush_word(&mut out);
        self.put_spaces(&mut out);
        self.col = 0;
        self.words = 0;
        self.hang = 0;
        self.fence = false;
        self.verbatim = false;
        self.vline.clear();
        out
    }

    fn char(&mut self, c: char, out: &mut String) {
        // Escape sequences go where the text around them goes: held with a word, or out.
        let direct = self.verbatim || self.long;
        if self.escape {
            if direct {
                out.push(c)
            } else {
                self.word.push(c)
            }
            if ('@'..='~').contains(&c) && c != '[' {
                self.escape = false;
            }
            return;
        }
        match c {
            '\x1b' => {
                self.escape = true;
                if direct {
                    out.push(c)
                } else {
                    self.word.push(c)
                }
            }
            '\n' => {
                self.flush_word(out);
                self.put_spaces(out);
                if self.verbatim && self.fence && self.vline.trim_start().starts_with("```") {
                    self.fence = false;
                }
                out.push('\n');
                self.col = 0;
                self.words = 0;
                self.hang = 0;
                self.verbatim = self.fence;
                self.vline.clear();
            }
            ' ' if !self.verbatim => {
                self.flush_word(out);
                if self.words == 0 {
                    // Indentation.
                    self.hang += 1;
                    out.push(' ');
                    self.col += 1;
                } else {
                    self.spaces += 1;
                }
            }
            c => {
                let w = c.width().unwrap_or(0);
                if self.verbatim {
                    out.push(c);
                    self.col += w;
                    if self.vline.len() < 16 {
                        self.vline.push(c);
                    }
                    return;
                }
                if self.long {
                    if self.col + w > self.width {
                        self.new_row(out);
                    }
                    out.push(c);
                    self.col += w;
                    return;
                }
                self.word.push(c);
                self.word_width += w;
                if self.word_width > self.room() {
                    // Longer than a line: cut where the edge comes, from here on.
                    let word = std::mem::take(&mut self.word);
                    self.word_width = 0;
                    self.long = true;
                    self.words += 1;
                    if self.col > self.indent() {
                        self.new_row(out);
                    }
                    self.col += self.spaces;
                    self.put_spaces(out);
                    for ch in word.chars() {
                        self.long_char(ch, out);
                    }
                }
            }
        }
    }

    fn long_char(&mut self, c: char, out: &mut String) {
        let w = c.width().unwrap_or(0);
        if c != '\x1b' && w > 0 && self.col + w > self.width {
            self.new_row(out);
        }
        out.push(c);
        self.col += if c.is_control() { 0 } else { w };
    }

    /// Columns a continuation row offers.
    fn room(&self) -> usize {
        self.width.saturating_sub(self.indent()).max(1)
    }

    fn indent(&self) -> usize {
        match &self.prefix {
            Some((_, w)) => *w,
            None => self.hang.min(self.width / 2),
        }
    }

    /// Writes the spaces held after the last word.
    fn put_spaces(&mut self, out: &mut String) {
        for _ in 0..std::mem::take(&mut self.spaces) {
            out.push(' ');
        }
    }

    fn new_row(&mut self, out: &mut String) {
        // The spaces before the word that moves down are not written.
        self.spaces = 0;
        out.push('\n');
        match &self.prefix {
            Some((p, w)) => {
                out.push_str(p);
                self.col = *w;
            }
            None => {
                let indent = self.indent();
                out.push_str(&" ".repeat(indent));
                self.col = indent;
            }
        }
    }

    fn flush_word(&mut self, out: &mut String) {
        if self.long {
            self.long = false;
            return;
        }
        if self.word.is_empty() {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let w = std::mem::take(&mut self.word_width);
        if w > 0 && self.col + self.spaces + w > self.width && self.col > self.indent() {
            self.new_row(out);
        }
        self.col += self.spaces;
        self.put_spaces(out);
        out.push_str(&word);
        self.col += w;
        if self.words == 0 {
            let visible: String = word.chars().filter(|c| !c.is_control()).collect();
            if self.prefix.is_none() && is_marker(&strip_escapes(&visible)) {
                // `•`, `-`, `1.`, `>`: the text after it is where continuation rows start.
                self.hang += w + 1;
            }
            if strip_escapes(&visible).starts_with("```") {
                self.fence = !self.fence;
                self.verbatim = true;
            }
        }
        self.words += 1;
    }
}

/// The longest start of `line` (no escape sequence in it) that leaves a column for a `…` within
/// `room` columns; `None` when the whole line fits in `room`.
pub fn cut_start(line: &str, room: usize) -> Option<&str> {
    if unicode_width::UnicodeWidthStr::width(line) <= room {
        return None;
    }
    let mut used = 0;
    for (i, c) in line.char_indices() {
        used += c.width().unwrap_or(0);
        if used + 1 > room {
            return Some(&line[..i]);
        }
    }
    Some(line)
}

/// Cuts one line (no newline in it, no escape sequence) into rows of at most `width` columns,
/// keeping every character: for text that must be shown whole, such as a command to allow,
/// where a break at a space would hide whether the space was there. A wide character that
/// would cross the edge starts the next row.
pub fn fold(line: &str, width: usize) -> Vec<String> {
    let width = width.max(2);
    let mut rows = vec![String::new()];
    let mut col = 0;
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if w > 0 && col + w > width {
            rows.push(String::new());
            col = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(c);
        }
        col += w;
    }
    rows
}

/// The text without escape sequences.
fn strip_escapes(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for n in chars.by_ref() {
                if ('@'..='~').contains(&n) && n != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A list bullet, a numbered item's number, or a quote's bar.
fn is_marker(word: &str) -> bool {
    matches!(word, "•" | "-" | "*" | "+" | ">" | "│")
        || (word.len() > 1
            && (word.ends_with('.') || word.ends_with(')'))
            && word[..word.len() - 1].chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn wrap(width: usize, pieces: &[&str]) -> String {
        let mut w = Wrap::new(width);
        let mut out: String = pieces.iter().map(|p| w.push(p)).collect();
        out.push_str(&w.finish());
        out
    }

    #[test]
    fn breaks_at_the_space_before_a_word_that_would_cross_the_edge() {
        assert_eq!(
            wrap(20, &["The quick brown fox jumps over the lazy dog.\n"]),
            "The quick brown fox\njumps over the lazy\ndog.\n"
        );
        // However the text is cut into pieces.
        assert_eq!(
            wrap(
                20,
                &["The qu", "ick brown fox ju", "mps over the lazy dog."]
            ),
            "The quick brown fox\njumps over the lazy\ndog."
        );
    }

    #[test]
    fn only_a_word_longer_than_a_line_is_cut() {
        assert_eq!(
            wrap(10, &["see https://example.com/very/long ok"]),
            "see\nhttps://ex\nample.com/\nvery/long\nok"
        );
    }

    #[test]
    fn list_items_and_indented_lines_continue_under_their_text() {
        assert_eq!(
            wrap(16, &["• one two three four\n  1. five six seven\n"]),
            "• one two three\n  four\n  1. five six\n     seven\n"
        );
    }

    #[test]
    fn escapes_take_no_column_and_code_blocks_are_not_reflowed() {
        assert_eq!(
            wrap(10, &["\x1b[1mbold\x1b[0m words here\n"]),
            "\x1b[1mbold\x1b[0m words\nhere\n"
        );
        assert_eq!(
            wrap(10, &["```\nlet x = 1 + 2 + 3;\n```\nafter the fence\n"]),
            "```\nlet x = 1 + 2 + 3;\n```\nafter the\nfence\n"
        );
    }

    #[test]
    fn folding_keeps_every_character() {
        assert_eq!(fold("abcdefgh", 3), vec!["abc", "def", "gh"]);
        assert_eq!(fold("a b  c", 2), vec!["a ", "b ", " c"]);
        assert_eq!(fold("", 5), vec![""]);
        // A wide character does not straddle the edge; a combining one stays with its letter.
        assert_eq!(fold("ab界c", 3), vec!["ab", "界c"]);
        assert_eq!(fold("ae\u{301}b", 2), vec!["ae\u{301}", "b"]);
    }

    #[test]
    fn a_prefix_starts_continuation_rows() {
        let mut w = Wrap::new(12).with_prefix("│ ");
        let mut out = w.push("│ one two three four");
        out.push_str(&w.finish());
        assert_eq!(out, "│ one two\n│ three four");
    }
}
