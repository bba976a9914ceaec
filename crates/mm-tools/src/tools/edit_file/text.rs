//! A file's text as the matchers see it: line feeds only, every line findable by number, and the
//! line endings it had kept aside, so that an edit changes only the text it replaces (a CRLF file
//! stays CRLF, a stray LF line in it stays LF).

use memchr::memmem;

/// Text with LF line endings, its lines indexed.
pub struct Text {
    body: String,
    /// The offsets in `body` of the `\n`s that were `\r\n` in the file, in order.
    crlf: Vec<usize>,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
}

/// Replace `body[start..end]` by `text` (LF line endings).
#[derive(Clone, Debug, PartialEq)]
pub struct Splice {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

impl Text {
    /// The text of a file (taken over without a copy when it has no CRLF).
    pub fn new(decoded: impl Into<String>) -> Text {
        let decoded: String = decoded.into();
        let (body, crlf) = if memmem::find(decoded.as_bytes(), b"\r\n").is_some() {
            let mut body = String::with_capacity(decoded.len());
            let mut crlf = Vec::new();
            for piece in decoded.split_inclusive('\n') {
                match piece.strip_suffix("\r\n") {
                    Some(line) => {
                        body.push_str(line);
                        crlf.push(body.len());
                        body.push('\n');
                    }
                    None => body.push_str(piece),
                }
            }
            (body, crlf)
        } else {
            (decoded, Vec::new())
        };
        let mut starts = Vec::with_capacity(body.len() / 32 + 1);
        if !body.is_empty() {
            starts.push(0);
            starts.extend(memchr::memchr_iter(b'\n', body.as_bytes()).map(|i| i + 1));
            if body.ends_with('\n') {
                starts.pop();
            }
        }
        Text { body, crlf, starts }
    }

    pub fn body(&self) -> &str {
        &self.body
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// Line `i` (0-based) without its line ending.
    pub fn line(&self, i: usize) -> &str {
        &self.body[self.starts[i]..self.line_end(i)]
    }

    pub fn line_start(&self, i: usize) -> usize {
        self.starts[i]
    }

    /// The offset of line `i`'s `\n`, or the end of the text.
    pub fn line_end(&self, i: usize) -> usize {
        match self.starts.get(i + 1) {
            Some(&next) => next - 1,
            None if self.body.ends_with('\n') => self.body.len() - 1,
            None => self.body.len(),
        }
    }

    /// The 0-based line holding byte `at`.
    pub fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| s <= at).saturating_sub(1)
    }

    /// Whether most lines ended in CRLF: the ending text an edit brings in gets.
    fn mostly_crlf(&self) -> bool {
        let newlines = self.line_count() - usize::from(!self.body.ends_with('\n'));
        !self.crlf.is_empty() && self.crlf.len() * 2 >= newlines
    }

    /// `body[from..to]` with the CRLF endings it had.
    fn copy(&self, out: &mut String, from: usize, to: usize) {
        let lo = self.crlf.partition_point(|&c| c < from);
        let hi = self.crlf.partition_point(|&c| c < to);
        let mut at = from;
        for &c in &self.crlf[lo..hi] {
            out.push_str(&self.body[at..c]);
            out.push_str("\r\n");
            at = c + 1;
        }
        out.push_str(&self.body[at..to]);
    }

    /// The file's text with `splices` (sorted, not overlapping) applied: the text they bring in
    /// gets the file's usual line ending; every other line keeps its own.
    pub fn render(&self, splices: &[Splice]) -> String {
        let crlf = self.mostly_crlf();
        let mut out = String::with_capacity(self.body.len() + self.crlf.len() + 64);
        let mut at = 0;
        for s in splices {
            self.copy(&mut out, at, s.start);
            if crlf {
                out.push_str(&s.text.replace('\n', "\r\n"));
            } else {
                out.push_str(&s.text);
            }
            at = s.end;
        }
        self.copy(&mut out, at, self.body.len());
        out
    }
}

/// Lines without their terminator; a final newline does not start another line.
pub fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_endings() {
        let t = Text::new("a\r\nbb\nc\r\n");
        assert_eq!(t.body(), "a\nbb\nc\n");
        assert_eq!(t.line_count(), 3);
        assert_eq!((t.line(1), t.line_start(1), t.line_end(1)), ("bb", 2, 4));
        assert_eq!(t.line_of(3), 1);
        // The edit's own line breaks get the file's usual ending; the LF line stays LF.
        let s = Splice {
            start: 0,
            end: 1,
            text: "x\ny".into(),
        };
        assert_eq!(t.render(&[s]), "x\r\ny\r\nbb\nc\r\n");
        assert_eq!(t.render(&[]), "a\r\nbb\nc\r\n");
        assert_eq!(Text::new("").line_count(), 0);
        assert_eq!(Text::new("x").line_end(0), 1);
        assert_eq!(split_lines("a\nb\n"), vec!["a", "b"]);
    }
}
