//! The prompt's history, kept in `$XDG_STATE_HOME/mm/history` across sessions: the last
//! [`MAX_ENTRIES`] lines, a line equal to the one before it kept once. The file is the format
//! rustyline wrote (`#V2`, then one entry per line with `\n` and `\` escaped), so the history of
//! earlier versions carries over.

use std::fs;
use std::path::{Path, PathBuf};

use crate::writer::{self, Check, FileKind, WriteError};

pub const MAX_ENTRIES: usize = 1000;
const HEADER: &str = "#V2";

#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    path: Option<PathBuf>,
}

impl History {
    /// The history in `path` (none when `None` or unreadable); a file over the limit is cut.
    pub fn load(path: Option<PathBuf>) -> History {
        let mut entries = match path.as_deref().map(fs::read_to_string) {
            Some(Ok(text)) => parse(&text),
            _ => Vec::new(),
        };
        if entries.len() > MAX_ENTRIES {
            entries.drain(..entries.len() - MAX_ENTRIES);
            if let Some(p) = &path {
                let _ = rewrite(p, &entries);
            }
        }
        History { entries, path }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Adds a submitted line (not a blank one, nor the same as the last) and appends it to the
    /// file.
    pub fn add(&mut self, line: &str) {
        if line.trim().is_empty() || self.entries.last().is_some_and(|l| l == line) {
            return;
        }
        self.entries.push(line.to_string());
        if self.entries.len() > MAX_ENTRIES {
            self.entries.remove(0);
        }
        if let Some(p) = &self.path {
            let _ = append(p, line);
        }
    }
}

/// The entries of a history file (a file without the header holds one entry per line).
pub fn parse(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    let escaped = match lines.next() {
        Some(HEADER) => true,
        Some(first) if !first.is_empty() => {
            return std::iter::once(first)
                .chain(lines)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
        }
        _ => true,
    };
    lines
        .filter(|l| !l.is_empty())
        .map(|l| if escaped { unescape(l) } else { l.to_string() })
        .collect()
}

pub fn escape(entry: &str) -> String {
    entry.replace('\\', "\\\\").replace('\n', "\\n")
}

pub fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn append(path: &Path, entry: &str) -> std::io::Result<()> {
    let line = format!("{}\n", escape(entry));
    let header = format!("{HEADER}\n");
    let shown = path.display().to_string();
    writer::append(
        path,
        &shown,
        header.as_bytes(),
        line.as_bytes(),
        Check::Anywhere,
    )
    .map_err(WriteError::into_io)
}

fn rewrite(path: &Path, entries: &[String]) -> std::io::Result<()> {
    let mut text = format!("{HEADER}\n");
    for e in entries {
        text.push_str(&escape(e));
        text.push('\n');
    }
    let shown = path.display().to_string();
    writer::write(
        path,
        &shown,
        text.as_bytes(),
        FileKind::Ordinary,
        Check::Anywhere,
    )
    .map_err(WriteError::into_io)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::disallowed_methods)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn entries_round_trip_through_the_file_with_newlines_and_backslashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/mm/history");
        let mut h = History::load(Some(path.clone()));
        h.add("first");
        h.add("first");
        h.add("   ");
        h.add("two \\\nlines C:\\\\");
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "#V2\nfirst\ntwo \\\\\\nlines C:\\\\\\\\\n"
        );
        let again = History::load(Some(path));
        assert_eq!(
            again.entries(),
            &["first".to_string(), "two \\\nlines C:\\\\".to_string()]
        );
    }

    #[test]
    fn a_file_over_the_limit_keeps_the_last_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history");
        let text: String = (0..MAX_ENTRIES + 5).map(|i| format!("e{i}\n")).collect();
        fs::write(&path, format!("#V2\n{text}")).unwrap();
        let h = History::load(Some(path.clone()));
        assert_eq!(h.entries().len(), MAX_ENTRIES);
        assert_eq!(h.entries()[0], "e5");
        assert_eq!(
            parse(&fs::read_to_string(&path).unwrap()).len(),
            MAX_ENTRIES
        );
        // A file of plain lines (no header) is read as it is.
        assert_eq!(parse("a\nb\n"), vec!["a".to_string(), "b".to_string()]);
    }
}
