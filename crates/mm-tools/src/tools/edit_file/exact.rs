//! The first strategy: `old_text` exactly, as a substring — unless taking it would cut a word or
//! leave the rest of a line the model copied short; and the retried edit that is already there.

use memchr::memmem;

use super::locate::{Found, How, Located, Locator, Miss, Opts, Step};
use super::text::Splice;

impl Locator<'_> {
    pub(super) fn exact(&self, old: &str, new: &str, o: &Opts) -> Step {
        let body = self.text().body();
        let starts: Vec<usize> = memmem::find_iter(body.as_bytes(), old.as_bytes()).collect();
        let chosen = match starts.as_slice() {
            [] => return None,
            [_] => starts.clone(),
            _ if o.all => starts.clone(),
            many => match o
                .hint
                .and_then(|h| many.iter().find(|&&s| self.text().line_of(s) == h))
            {
                Some(&s) => vec![s],
                None => {
                    let lines = many.iter().map(|&s| self.text().line_of(s) + 1).collect();
                    return Some(Err(Miss::Ambiguous(How::Exact, lines)));
                }
            },
        };
        for &s in &chosen {
            if let Some(why) = self.cut(s, s + old.len(), old, new, o.shown) {
                return Some(Err(Miss::Cut(why)));
            }
        }
        if let [s] = chosen.as_slice()
            && let Some(line) = self.already(*s, old, new)
        {
            return Some(Ok(Located::Already(line)));
        }
        let splices = chosen
            .iter()
            .map(|&s| {
                let (mut start, mut end) = (s, s + old.len());
                // Deleting whole lines deletes their line break too.
                let line_start = start == 0 || body[..start].ends_with('\n');
                let line_end = end == body.len() || body[end..].starts_with('\n');
                if new.is_empty() && line_start && line_end && !old.ends_with('\n') {
                    if end < body.len() {
                        end += 1;
                    } else {
                        start = start.saturating_sub(1);
                    }
                }
                Splice {
                    start,
                    end,
                    text: new.to_string(),
                }
            })
            .collect();
        let first = self.text().line_of(chosen[0]);
        let last = self.text().line_of(chosen[0] + old.len().saturating_sub(1));
        Some(Ok(Located::Edit(Found {
            splices,
            how: How::Exact,
            first,
            last,
            count: chosen.len(),
        })))
    }

    /// Why the exact match `start..end` would damage the line it is in: it starts or ends inside
    /// a word, or, being several lines, ends inside a line, and `new_text` does not restate that
    /// part — the model copied a line short (`use std::threa`, `timeout = 1` of `timeout = 10`)
    /// and would leave its rest behind.
    fn cut(&self, start: usize, end: usize, old: &str, new: &str, shown: &str) -> Option<String> {
        let body = self.text().body();
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let before = body[..start].chars().next_back();
        let after = body[end..].chars().next();
        let line = |at: usize| self.text().line_of(at) + 1;
        let whole_word = |at: usize| {
            let from = body[..at]
                .char_indices()
                .rev()
                .take_while(|&(_, c)| word(c))
                .last()
                .map_or(at, |(i, _)| i);
            let to = body[at..]
                .char_indices()
                .find(|&(_, c)| !word(c))
                .map_or(body.len(), |(i, _)| at + i);
            &body[from..to]
        };
        if let (Some(last), Some(next)) = (old.chars().next_back(), after)
            && word(last)
            && word(next)
        {
            let tail: String = {
                let mut t: Vec<char> = old.chars().rev().take_while(|&c| word(c)).collect();
                t.reverse();
                t.into_iter().collect()
            };
            if !new.ends_with(&tail) {
                return Some(format!(
                    "old_text ends inside the word `{}` on line {} of {shown}; include the whole word",
                    whole_word(end),
                    line(end)
                ));
            }
        }
        if let (Some(first), Some(prev)) = (old.chars().next(), before)
            && word(first)
            && word(prev)
        {
            let head: String = old.chars().take_while(|&c| word(c)).collect();
            if !new.starts_with(&head) {
                return Some(format!(
                    "old_text starts inside the word `{}` on line {} of {shown}; include the whole word",
                    whole_word(start),
                    line(start)
                ));
            }
        }
        if !old.contains('\n') {
            return None;
        }
        let n = self.text().line_of(end);
        let rest = &body[end..self.text().line_end(n).max(end)];
        let old_last = old.rsplit('\n').next().unwrap_or("");
        let new_last = new.rsplit('\n').next().unwrap_or("");
        if !rest.trim().is_empty() && old_last != new_last {
            return Some(format!(
                "old_text ends inside line {} of {shown}, which goes on with `{}`; copy the whole line into old_text (or end new_text with the same part line)",
                n + 1,
                rest.trim_end()
            ));
        }
        None
    }

    /// `new_text` is `old_text` with lines added around it, and the file already reads
    /// `new_text` where `old_text` is: the edit was made before (a retried call).
    fn already(&self, start: usize, old: &str, new: &str) -> Option<usize> {
        let body = self.text().body();
        let k = new.find(old)?;
        if new.matches(old).count() != 1 || new.len() == old.len() || k > start {
            return None;
        }
        body.get(start - k..)?
            .starts_with(new)
            .then(|| self.text().line_of(start - k) + 1)
    }
}
