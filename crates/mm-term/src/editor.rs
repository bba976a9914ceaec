//! The prompt's line editor: what each key does to the line. Pure (no I/O), unit-tested;
//! screen.rs feeds it the keys and draws the line (layout.rs).
//!
//! Keys: the usual readline ones (arrows, Home/End, Ctrl-A/E/B/F/K/U/W/Y, Alt-B/F, Delete,
//! Backspace), history (Up/Down, Ctrl-P/N; Ctrl-R searches it), Tab completion, multi-line input (a trailing `\`
//! then Enter, or Alt-Enter, or a paste), Ctrl-L, Ctrl-Z, Ctrl-C, Ctrl-D.

use super::history::History;
use super::input;
use super::keys::Key;

/// The prompt.
pub const PROMPT: &str = "> ";

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The line changed or the cursor moved: draw it again.
    Redraw,
    /// Nothing to do.
    Nothing,
    /// Enter: the line as typed (continuation `\` and all).
    Submit(String),
    /// Ctrl-C; `empty`: on an empty line; `first`: before any other key at this prompt.
    Interrupt { empty: bool, first: bool },
    /// Ctrl-D on an empty line.
    Eof,
    /// The terminal is gone.
    Hangup,
    /// Ctrl-Z.
    Suspend,
    /// Ctrl-L.
    ClearScreen,
    /// Tab found several candidates and could not complete further: show them.
    List(Vec<String>),
}

/// Completion candidates at a position: the start of the word replaced and the candidates
/// `(display, replacement)` (as [`input::complete`] gives them).
pub trait Complete {
    fn complete(&self, line: &str, pos: usize) -> (usize, Vec<(String, String)>);
}

/// The line being edited and the history.
#[derive(Debug, Default)]
pub struct Editor {
    buf: String,
    /// A byte index into `buf`, on a char boundary.
    cursor: usize,
    history: History,
    /// The history entry shown (Up/Down), and the line that was being typed before.
    browsing: Option<usize>,
    draft: String,
    /// What Ctrl-K, Ctrl-U or Ctrl-W cut last (Ctrl-Y puts it back).
    cut: String,
    /// A key was handled at this prompt.
    touched: bool,
    /// Ctrl-R: searching the history.
    search: Option<Search>,
}

/// A search of the history (Ctrl-R): the line shows the latest entry holding `query`.
#[derive(Debug, Default)]
struct Search {
    query: String,
    /// The entry shown.
    at: Option<usize>,
    /// No entry holds the query.
    failed: bool,
    /// The line and cursor before the search (Escape puts them back).
    draft: String,
    draft_cursor: usize,
}

impl Editor {
    pub fn new(history: History) -> Self {
        Editor {
            history,
            ..Editor::default()
        }
    }

    /// A new, empty prompt.
    pub fn start(&mut self) {
        self.buf.clear();
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        self.touched = false;
        self.search = None;
    }

    /// What the prompt says before the line: `> `, or the search's query while Ctrl-R searches.
    pub fn prompt(&self) -> String {
        match &self.search {
            None => PROMPT.to_string(),
            Some(s) if s.failed => format!("(no match: {}) ", s.query),
            Some(s) => format!("(search: {}) ", s.query),
        }
    }

    pub fn text(&self) -> &str {
        &self.buf
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn history_mut(&mut self) -> &mut History {
        &mut self.history
    }

    /// Handles one key.
    pub fn key(&mut self, key: Key, completer: &dyn Complete) -> Outcome {
        let first = !self.touched;
        self.touched = true;
        if self.search.is_some()
            && let Some(outcome) = self.search_key(&key)
        {
            return outcome;
        }
        match key {
            Key::Char(c) => self.insert(&c.to_string()),
            Key::Paste(text) => {
                let clean: String = text
                    .chars()
                    .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
                    .collect();
                self.insert(&clean)
            }
            Key::Enter => {
                if input::continues(&self.buf) {
                    self.cursor = self.buf.len();
                    self.insert("\n")
                } else {
                    Outcome::Submit(std::mem::take(&mut self.buf))
                }
            }
            Key::AltEnter => self.insert("\n"),
            Key::Tab => self.complete(completer),
            Key::Backspace => match self.prev(self.cursor) {
                Some(p) => {
                    self.edit(p, self.cursor, "");
                    Outcome::Redraw
                }
                None => Outcome::Nothing,
            },
            Key::Delete => self.delete_forward(),
            Key::CtrlD if self.buf.is_empty() => Outcome::Eof,
            Key::CtrlD => self.delete_forward(),
            Key::DeleteWordBack => {
                let start = self.word_left(self.cursor);
                self.cut = self.buf[start..self.cursor].to_string();
                self.edit(start, self.cursor, "");
                Outcome::Redraw
            }
            Key::Left | Key::Ctrl('b') => self.move_to(self.prev(self.cursor)),
            Key::Right | Key::Ctrl('f') => self.move_to(self.next(self.cursor)),
            Key::WordLeft => self.move_to(Some(self.word_left(self.cursor))),
            Key::WordRight => self.move_to(Some(self.word_right(self.cursor))),
            Key::Home | Key::Ctrl('a') => self.move_to(Some(self.line_start(self.cursor))),
            Key::End | Key::Ctrl('e') => self.move_to(Some(self.line_end(self.cursor))),
            Key::Up => match self.line_above() {
                Some(p) => self.move_to(Some(p)),
                None => self.history_back(),
            },
            Key::Down => match self.line_below() {
                Some(p) => self.move_to(Some(p)),
                None => self.history_forward(),
            },
            Key::Ctrl('p') => self.history_back(),
            Key::Ctrl('n') => self.history_forward(),
            Key::Ctrl('k') => {
                let end = self.line_end(self.cursor);
                let end = if end == self.cursor {
                    self.next(end).unwrap_or(end)
                } else {
                    end
                };
                self.cut = self.buf[self.cursor..end].to_string();
                self.edit(self.cursor, end, "");
                Outcome::Redraw
            }
            Key::Ctrl('u') => {
                let start = self.line_start(self.cursor);
                self.cut = self.buf[start..self.cursor].to_string();
                self.edit(start, self.cursor, "");
                Outcome::Redraw
            }
            Key::Ctrl('y') => {
                let text = self.cut.clone();
                self.insert(&text)
            }
            Key::Ctrl('r') => {
                self.search = Some(Search {
                    draft: self.buf.clone(),
                    draft_cursor: self.cursor,
                    ..Search::default()
                });
                Outcome::Redraw
            }
            Key::Ctrl('l') => Outcome::ClearScreen,
            Key::Ctrl('z') => Outcome::Suspend,
            Key::Interrupt => Outcome::Interrupt {
                empty: self.buf.trim().is_empty(),
                first,
            },
            Key::Hangup => Outcome::Hangup,
            Key::Ctrl(_) | Key::Escape | Key::Other => Outcome::Nothing,
        }
    }

    fn insert(&mut self, text: &str) -> Outcome {
        self.edit(self.cursor, self.cursor, text);
        Outcome::Redraw
    }

    /// Replaces `start..end` by `text`, the cursor after it; the line is the user's now.
    fn edit(&mut self, start: usize, end: usize, text: &str) {
        self.buf.replace_range(start..end, text);
        self.cursor = start + text.len();
        self.browsing = None;
    }

    fn delete_forward(&mut self) -> Outcome {
        match self.next(self.cursor) {
            Some(n) => {
                self.buf.replace_range(self.cursor..n, "");
                self.browsing = None;
                Outcome::Redraw
            }
            None => Outcome::Nothing,
        }
    }

    fn move_to(&mut self, to: Option<usize>) -> Outcome {
        match to {
            Some(p) if p != self.cursor => {
                self.cursor = p;
                Outcome::Redraw
            }
            _ => Outcome::Nothing,
        }
    }

    fn prev(&self, at: usize) -> Option<usize> {
        self.buf[..at].char_indices().next_back().map(|(i, _)| i)
    }

    fn next(&self, at: usize) -> Option<usize> {
        self.buf[at..].chars().next().map(|c| at + c.len_utf8())
    }

    fn line_start(&self, at: usize) -> usize {
        self.buf[..at].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self, at: usize) -> usize {
        self.buf[at..].find('\n').map_or(self.buf.len(), |i| at + i)
    }

    fn word_left(&self, at: usize) -> usize {
        let before = &self.buf[..at];
        let trimmed = before.trim_end_matches(|c: char| !c.is_alphanumeric());
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(0, |(i, c)| i + c.len_utf8())
    }

    fn word_right(&self, at: usize) -> usize {
        let after = &self.buf[at..];
        let skip = after.len()
            - after
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .len();
        let rest = &after[skip..];
        let word = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        at + skip + word
    }

    /// The position in the line above at the same column (in characters), if there is one.
    fn line_above(&self) -> Option<usize> {
        let start = self.line_start(self.cursor);
        if start == 0 {
            return None;
        }
        let column = self.buf[start..self.cursor].chars().count();
        let above = self.line_start(start - 1);
        Some(self.at_column(above, start - 1, column))
    }

    fn line_below(&self) -> Option<usize> {
        let end = self.line_end(self.cursor);
        if end == self.buf.len() {
            return None;
        }
        let column = self.buf[self.line_start(self.cursor)..self.cursor]
            .chars()
            .count();
        let below_end = self.line_end(end + 1);
        Some(self.at_column(end + 1, below_end, column))
    }

    fn at_column(&self, start: usize, end: usize, column: usize) -> usize {
        self.buf[start..end]
            .char_indices()
            .nth(column)
            .map_or(end, |(i, _)| start + i)
    }

    fn history_back(&mut self) -> Outcome {
        let entries = self.history.entries();
        let to = match self.browsing {
            None if entries.is_empty() => return Outcome::Nothing,
            None => {
                self.draft = self.buf.clone();
                entries.len() - 1
            }
            Some(0) => return Outcome::Nothing,
            Some(i) => i - 1,
        };
        self.show_entry(Some(to));
        Outcome::Redraw
    }

    fn history_forward(&mut self) -> Outcome {
        match self.browsing {
            None => Outcome::Nothing,
            Some(i) if i + 1 < self.history.entries().len() => {
                self.show_entry(Some(i + 1));
                Outcome::Redraw
            }
            Some(_) => {
                self.show_entry(None);
                Outcome::Redraw
            }
        }
    }

    fn show_entry(&mut self, at: Option<usize>) {
        self.buf = match at {
            Some(i) => self.history.entries()[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.cursor = self.buf.len();
        self.browsing = at;
    }

    /// A key while Ctrl-R searches; `None`: the search ended on the entry shown, and the key
    /// acts on it as on any line (Enter sends it, an arrow moves in it).
    fn search_key(&mut self, key: &Key) -> Option<Outcome> {
        let s = self.search.as_mut()?;
        match key {
            Key::Char(c) => {
                s.query.push(*c);
                self.find(None);
            }
            Key::Paste(text) => {
                s.query.extend(text.chars().filter(|c| !c.is_control()));
                self.find(None);
            }
            Key::Backspace => {
                s.query.pop();
                self.find(None);
            }
            // Again: an older entry.
            Key::Ctrl('r') => {
                let before = s.at;
                self.find(before.or(Some(self.history.entries().len())));
            }
            Key::Escape | Key::Ctrl('g') | Key::Interrupt => {
                let s = self.search.take()?;
                self.buf = s.draft;
                self.cursor = s.draft_cursor;
            }
            _ => {
                self.search = None;
                self.browsing = None;
                return None;
            }
        }
        Some(Outcome::Redraw)
    }

    /// Shows the latest entry before `before` (all of them when `None`) that holds the query.
    fn find(&mut self, before: Option<usize>) {
        let Some(s) = self.search.as_mut() else {
            return;
        };
        let entries = self.history.entries();
        let end = before.unwrap_or(entries.len()).min(entries.len());
        let found = entries[..end]
            .iter()
            .rposition(|e| e.contains(s.query.as_str()));
        match found {
            Some(i) => {
                s.at = Some(i);
                s.failed = false;
                self.buf = entries[i].clone();
                self.cursor = self.buf.find(s.query.as_str()).unwrap_or(self.buf.len());
            }
            // An older one was asked for and there is none: the one shown stays.
            None if before.is_some() && s.at.is_some() => {}
            None => s.failed = true,
        }
    }

    fn complete(&mut self, completer: &dyn Complete) -> Outcome {
        let (start, found) = completer.complete(&self.buf, self.cursor);
        let start = start.min(self.cursor);
        match found.len() {
            0 => Outcome::Nothing,
            1 => {
                let replacement = found[0].1.clone();
                self.edit(start, self.cursor, &replacement);
                Outcome::Redraw
            }
            _ => {
                let common = common_prefix(found.iter().map(|(_, r)| r.as_str()));
                if common.len() > self.cursor - start {
                    self.edit(start, self.cursor, &common);
                    Outcome::Redraw
                } else {
                    Outcome::List(found.into_iter().map(|(d, _)| d).collect())
                }
            }
        }
    }
}

fn common_prefix<'a>(mut words: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = words.next() else {
        return String::new();
    };
    let mut len = first.len();
    for w in words {
        len = first
            .char_indices()
            .zip(w.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(len);
    }
    first[..len].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    struct Words(Vec<&'static str>);

    impl Complete for Words {
        fn complete(&self, line: &str, pos: usize) -> (usize, Vec<(String, String)>) {
            let start = line[..pos].rfind(' ').map_or(0, |i| i + 1);
            let word = &line[start..pos];
            let found = self
                .0
                .iter()
                .filter(|w| w.starts_with(word))
                .map(|w| (w.to_string(), format!("{w} ")))
                .collect();
            (start, found)
        }
    }

    fn none() -> Words {
        Words(vec![])
    }

    fn typed(e: &mut Editor, s: &str) {
        for c in s.chars() {
            e.key(Key::Char(c), &none());
        }
    }

    #[test]
    fn ctrl_r_searches_the_history_back_and_enter_sends_the_entry_found() {
        let mut h = History::default();
        for line in ["cargo build", "ls src", "cargo test -p mm", "git status"] {
            h.add(line);
        }
        let mut e = Editor::new(h);
        typed(&mut e, "draft");
        assert_eq!(e.key(Key::Ctrl('r'), &none()), Outcome::Redraw);
        assert_eq!(e.prompt(), "(search: ) ");
        typed(&mut e, "cargo");
        assert_eq!(
            (e.prompt().as_str(), e.text()),
            ("(search: cargo) ", "cargo test -p mm")
        );
        e.key(Key::Ctrl('r'), &none());
        assert_eq!(e.text(), "cargo build");
        // No older one: the entry found stays.
        e.key(Key::Ctrl('r'), &none());
        assert_eq!(e.text(), "cargo build");
        typed(&mut e, "zz");
        assert_eq!(e.prompt(), "(no match: cargozz) ");
        e.key(Key::Backspace, &none());
        e.key(Key::Backspace, &none());
        assert_eq!(e.text(), "cargo test -p mm");
        assert_eq!(
            e.key(Key::Enter, &none()),
            Outcome::Submit("cargo test -p mm".into())
        );
        assert_eq!(e.prompt(), "> ");

        // Escape puts back the line being typed; another key takes the entry and acts on it.
        e.start();
        typed(&mut e, "dra");
        e.key(Key::Ctrl('r'), &none());
        typed(&mut e, "ls");
        e.key(Key::Escape, &none());
        assert_eq!(
            (e.prompt().as_str(), e.text(), e.cursor()),
            ("> ", "dra", 3)
        );
        e.key(Key::Ctrl('r'), &none());
        typed(&mut e, "git");
        e.key(Key::End, &none());
        typed(&mut e, " -s");
        assert_eq!(e.text(), "git status -s");
    }

    #[test]
    fn typing_moving_and_cutting() {
        let mut e = Editor::default();
        typed(&mut e, "hello world");
        e.key(Key::WordLeft, &none());
        assert_eq!(e.cursor(), 6);
        e.key(Key::Ctrl('k'), &none());
        assert_eq!(e.text(), "hello ");
        e.key(Key::Home, &none());
        typed(&mut e, "¡");
        e.key(Key::End, &none());
        e.key(Key::Backspace, &none());
        assert_eq!(e.text(), "¡hello");
        e.key(Key::DeleteWordBack, &none());
        assert_eq!(e.text(), "¡");
        e.key(Key::Ctrl('y'), &none());
        assert_eq!(e.text(), "¡hello");
        e.key(Key::Ctrl('u'), &none());
        assert_eq!((e.text(), e.cursor()), ("", 0));
    }

    #[test]
    fn enter_submits_unless_the_line_continues() {
        let mut e = Editor::default();
        typed(&mut e, "one \\");
        assert_eq!(e.key(Key::Enter, &none()), Outcome::Redraw);
        typed(&mut e, "two");
        e.key(Key::AltEnter, &none());
        e.key(Key::Paste("three\nfour".into()), &none());
        assert_eq!(
            e.key(Key::Enter, &none()),
            Outcome::Submit("one \\\ntwo\nthree\nfour".into())
        );
    }

    #[test]
    fn ctrl_c_and_ctrl_d_say_whether_the_line_was_empty() {
        let mut e = Editor::default();
        assert_eq!(
            e.key(Key::Interrupt, &none()),
            Outcome::Interrupt {
                empty: true,
                first: true
            }
        );
        e.start();
        typed(&mut e, "x");
        assert_eq!(
            e.key(Key::Interrupt, &none()),
            Outcome::Interrupt {
                empty: false,
                first: false
            }
        );
        e.start();
        typed(&mut e, "ab");
        e.key(Key::Home, &none());
        assert_eq!(e.key(Key::CtrlD, &none()), Outcome::Redraw);
        assert_eq!(e.text(), "b");
        e.start();
        assert_eq!(e.key(Key::CtrlD, &none()), Outcome::Eof);
    }

    #[test]
    fn history_up_and_down_keep_the_draft() {
        let mut h = History::default();
        h.add("first");
        h.add("second");
        let mut e = Editor::new(h);
        typed(&mut e, "dra");
        e.key(Key::Up, &none());
        assert_eq!(e.text(), "second");
        e.key(Key::Up, &none());
        e.key(Key::Up, &none());
        assert_eq!(e.text(), "first");
        e.key(Key::Down, &none());
        e.key(Key::Down, &none());
        assert_eq!(e.text(), "dra");
    }

    #[test]
    fn up_and_down_move_between_lines_first() {
        let mut e = Editor::default();
        e.key(Key::Paste("abcd\nxy".into()), &none());
        e.key(Key::Up, &none());
        assert_eq!(e.cursor(), 2);
        e.key(Key::Right, &none());
        e.key(Key::Down, &none());
        assert_eq!(e.cursor(), e.text().len());
    }

    #[test]
    fn tab_completes_the_common_part_then_lists() {
        let words = Words(vec!["compact", "commit", "new"]);
        let mut e = Editor::default();
        typed(&mut e, "n");
        e.key(Key::Tab, &words);
        assert_eq!(e.text(), "new ");
        e.start();
        typed(&mut e, "c");
        assert_eq!(e.key(Key::Tab, &words), Outcome::Redraw);
        assert_eq!(e.text(), "com");
        assert_eq!(
            e.key(Key::Tab, &words),
            Outcome::List(vec!["compact".into(), "commit".into()])
        );
    }
}
