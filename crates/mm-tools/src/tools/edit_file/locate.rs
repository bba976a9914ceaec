//! Finding `old_text` in the file, strategy after strategy in order of risk (docs/tools.md): the
//! exact text, then whole lines compared more and more loosely, then `...` elisions. A lenient
//! strategy runs only when the ones before it found nothing, and a strategy that finds several
//! places refuses: no strategy ever takes the first of several.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use memchr::memmem;

use super::keys::{LineKeys, Norm, empty_hash, find_all, is_blank, is_word, key_eq, key_hash};
use super::merge::{LineMatch, merge};
use super::text::{Splice, Text, split_lines};

/// Which strategy found `old_text`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum How {
    Exact,
    Lines(Norm),
    /// Whole lines ignoring whitespace inside them and blank lines.
    BlankLines,
    /// The pieces between `...` lines, each found exactly.
    Elision,
}

impl How {
    /// How `old_text` was compared, for the result line and the refusals.
    pub fn phrase(self) -> &'static str {
        match self {
            How::Exact | How::Lines(Norm::Exact) => "matched exactly",
            How::Lines(Norm::Trim) => "matched ignoring indentation and trailing spaces",
            How::Lines(Norm::Fold) => {
                "matched treating look-alike characters (curly quotes, dashes, no-break spaces) as plain ones"
            }
            How::Lines(Norm::NoSpace) => "matched ignoring whitespace inside lines",
            How::BlankLines => "matched ignoring blank lines and whitespace inside lines",
            How::Elision => "matched the pieces around the `...` lines exactly",
        }
    }

    /// The same, for a refusal: "… {loosely} it matches 2 times".
    pub fn loosely(self) -> &'static str {
        match self {
            How::Exact | How::Lines(Norm::Exact) => "as whole lines",
            How::Lines(Norm::Trim) => "ignoring indentation",
            How::Lines(Norm::Fold) => "with look-alike characters made plain",
            How::Lines(Norm::NoSpace) => "ignoring whitespace inside lines",
            How::BlankLines => "ignoring blank lines",
            How::Elision => "around the `...` lines",
        }
    }
}

pub struct Found {
    pub splices: Vec<Splice>,
    pub how: How,
    /// The 0-based first and last file lines of the first place edited.
    pub first: usize,
    pub last: usize,
    /// Places (or pieces) edited.
    pub count: usize,
}

pub enum Located {
    Edit(Found),
    /// `new_text` is already there: the 1-based line.
    Already(usize),
}

pub enum Miss {
    NotFound,
    /// Several places: the strategy and their 1-based lines.
    Ambiguous(How, Vec<usize>),
    /// The only match would cut a line or a word `new_text` does not restate: why.
    Cut(String),
}

pub struct Opts<'a> {
    pub all: bool,
    /// The 0-based line `old_text` said it starts at (line-number prefixes), to choose between
    /// places that match.
    pub hint: Option<usize>,
    /// `old_text` is whole lines (it had line-number prefixes): no substring match.
    pub whole_lines: bool,
    /// The path as the model gave it, for messages.
    pub shown: &'a str,
}

/// The strategies over one file, with its lines' keys hashed once (for every reading).
pub struct Locator<'t> {
    text: &'t Text,
    keys: OnceCell<LineKeys>,
    exact: OnceCell<Vec<u64>>,
    /// The file lines each word searched for is on (`None`: on too many).
    words: RefCell<HashMap<String, Option<Vec<usize>>>>,
}

/// The most lines a word may be on for the places it is on to be tried one by one.
const ANCHORED: usize = 20_000;

const NORMS: [Norm; 4] = [Norm::Exact, Norm::Trim, Norm::Fold, Norm::NoSpace];

pub(super) type Step = Option<Result<Located, Miss>>;

impl<'t> Locator<'t> {
    pub fn new(text: &'t Text) -> Locator<'t> {
        Locator {
            text,
            keys: OnceCell::new(),
            exact: OnceCell::new(),
            words: RefCell::new(HashMap::new()),
        }
    }

    pub fn text(&self) -> &'t Text {
        self.text
    }

    fn lines(&self) -> impl ExactSizeIterator<Item = &'t str> + 't {
        let text = self.text;
        (0..text.line_count()).map(move |i| text.line(i))
    }

    fn hashes(&self, norm: Norm) -> &[u64] {
        let keys = self.keys.get_or_init(|| LineKeys::new(self.lines()));
        match keys.of(norm) {
            Some(h) => h,
            None => self
                .exact
                .get_or_init(|| self.lines().map(|l| key_hash(l, Norm::Exact)).collect()),
        }
    }

    /// Every strategy in order; the first that finds something decides.
    pub fn locate(&self, old: &str, new: &str, o: &Opts) -> Result<Located, Miss> {
        let old_lines = split_lines(old);
        let new_lines = split_lines(new);
        if !o.whole_lines
            && let Some(done) = self.exact(old, new, o)
        {
            return done;
        }
        let norms: &[Norm] = if o.whole_lines { &NORMS } else { &NORMS[1..] };
        for &norm in norms {
            if let Some(done) = self.by_lines(&old_lines, &new_lines, norm, false, o) {
                return done;
            }
        }
        if let Some(done) = self.by_lines(&old_lines, &new_lines, Norm::NoSpace, true, o) {
            return done;
        }
        if !o.whole_lines
            && let Some(done) = self.elision(old, new)
        {
            return done;
        }
        Err(Miss::NotFound)
    }

    /// The 1-based line of the one place `needle` is, exactly or as whole lines under a key.
    pub fn presence(&self, needle: &str) -> Option<usize> {
        if needle.trim().is_empty() {
            return None;
        }
        let body = self.text.body();
        let mut at = memmem::find_iter(body.as_bytes(), needle.as_bytes());
        if let Some(first) = at.next() {
            return at.next().is_none().then(|| self.text.line_of(first) + 1);
        }
        let lines = split_lines(needle);
        for norm in &NORMS[1..] {
            let found = self.candidates(&lines, *norm, false);
            if !found.is_empty() {
                return (found.len() == 1).then(|| found[0].first + 1);
            }
        }
        None
    }

    /// Where `old`'s lines match whole file lines under `norm` (skipping blank lines on both
    /// sides when `skip_blank`). The places to try come from the longest word of `old_text`
    /// (a run of letters, digits and `_`, which every key keeps whole), searched for in the text;
    /// when it is short or everywhere, from the keys of every line, hashed once.
    fn candidates(&self, old: &[&str], norm: Norm, skip_blank: bool) -> Vec<LineMatch> {
        if old.iter().all(|l| is_blank(l)) {
            return Vec::new();
        }
        let kept: Vec<usize> = (0..old.len())
            .filter(|&j| !skip_blank || !is_blank(old[j]))
            .collect();
        let starts: Vec<usize> = match self.anchored(old) {
            Some((j, lines)) => {
                let rank = kept.iter().position(|&k| k == j).unwrap_or(0);
                let mut starts: Vec<usize> = lines
                    .into_iter()
                    .filter_map(|c| self.back(c, rank, skip_blank))
                    .collect();
                starts.dedup();
                starts
            }
            None => self.hashed_starts(old, &kept, norm, skip_blank),
        };
        starts
            .into_iter()
            .filter_map(|s| self.fit(s, old, &kept, norm, skip_blank))
            .collect()
    }

    /// The file line `rank` lines (non-blank ones when `skip_blank`) before line `c`.
    fn back(&self, c: usize, rank: usize, skip_blank: bool) -> Option<usize> {
        if !skip_blank {
            return c.checked_sub(rank);
        }
        let mut at = c;
        for _ in 0..rank {
            at = (0..at).rev().find(|&i| !is_blank(self.text.line(i)))?;
        }
        Some(at)
    }

    /// `old`'s lines laid on the file from line `s`, if they match under `norm`.
    fn fit(
        &self,
        s: usize,
        old: &[&str],
        kept: &[usize],
        norm: Norm,
        skip_blank: bool,
    ) -> Option<LineMatch> {
        let text = self.text;
        let mut map = vec![None; old.len()];
        let mut at = s;
        for (r, &j) in kept.iter().enumerate() {
            if r > 0 {
                at += 1;
                while skip_blank && at < text.line_count() && is_blank(text.line(at)) {
                    at += 1;
                }
            }
            if at >= text.line_count() || !key_eq(text.line(at), old[j], norm) {
                return None;
            }
            map[j] = Some(at);
        }
        Some(LineMatch {
            map,
            first: s,
            last: at,
        })
    }

    /// A line of `old_text` and the file lines that have one of its words (at least 3
    /// characters, the longest first), for the first of a few words that is not on too many.
    fn anchored(&self, old: &[&str]) -> Option<(usize, Vec<usize>)> {
        let mut words: Vec<(usize, &str)> = old
            .iter()
            .enumerate()
            .flat_map(|(j, l)| l.split(|c: char| !is_word(c)).map(move |w| (j, w)))
            .filter(|(_, w)| w.chars().count() >= 3)
            .collect();
        words.sort_by_key(|(_, w)| std::cmp::Reverse(w.len()));
        words.dedup_by_key(|(_, w)| *w);
        words
            .into_iter()
            .take(4)
            .find_map(|(j, w)| self.lines_with(w).map(|l| (j, l)))
    }

    /// The file lines `word` is on, if not more than [`ANCHORED`].
    pub fn lines_with(&self, word: &str) -> Option<Vec<usize>> {
        if let Some(found) = self.words.borrow().get(word) {
            return found.clone();
        }
        let mut lines = Vec::new();
        let mut found = true;
        for at in memmem::find_iter(self.text.body().as_bytes(), word.as_bytes()) {
            let line = self.text.line_of(at);
            if lines.last() != Some(&line) {
                lines.push(line);
                if lines.len() > ANCHORED {
                    found = false;
                    break;
                }
            }
        }
        let found = found.then_some(lines);
        self.words
            .borrow_mut()
            .insert(word.to_string(), found.clone());
        found
    }

    /// Starts of matches from every line's hashed key (the word of `old_text` could not narrow
    /// them down).
    fn hashed_starts(
        &self,
        old: &[&str],
        kept: &[usize],
        norm: Norm,
        skip_blank: bool,
    ) -> Vec<usize> {
        let file = self.hashes(norm);
        let needle: Vec<u64> = kept.iter().map(|&j| key_hash(old[j], norm)).collect();
        if !skip_blank {
            return find_all(file, &needle);
        }
        let empty = empty_hash();
        let lines: Vec<usize> = (0..self.text.line_count())
            .filter(|&i| file[i] != empty || !is_blank(self.text.line(i)))
            .collect();
        let hay: Vec<u64> = lines.iter().map(|&i| file[i]).collect();
        find_all(&hay, &needle)
            .into_iter()
            .map(|p| lines[p])
            .collect()
    }

    fn by_lines(&self, old: &[&str], new: &[&str], norm: Norm, skip_blank: bool, o: &Opts) -> Step {
        let found = self.candidates(old, norm, skip_blank);
        let how = if skip_blank {
            How::BlankLines
        } else {
            How::Lines(norm)
        };
        let chosen: Vec<&LineMatch> = match found.as_slice() {
            [] => return None,
            [one] => vec![one],
            many if o.all => {
                let mut taken: Vec<&LineMatch> = Vec::new();
                for m in many {
                    if taken.last().is_none_or(|t| m.first > t.last) {
                        taken.push(m);
                    }
                }
                taken
            }
            many => match o.hint.and_then(|h| many.iter().find(|m| m.first == h)) {
                Some(m) => vec![m],
                None => {
                    return Some(Err(Miss::Ambiguous(
                        how,
                        many.iter().map(|m| m.first + 1).collect(),
                    )));
                }
            },
        };
        if norm != Norm::Exact
            && let Some(why) = chosen.iter().find_map(|m| self.disagrees(m, old, o.shown))
        {
            return Some(Err(Miss::Cut(why)));
        }
        let body_len = self.text.body().len();
        let splices = chosen
            .iter()
            .map(|m| {
                let lines = merge(self.text, m, old, new, norm);
                let start = self.text.line_start(m.first);
                let end = self.text.line_end(m.last);
                if !lines.is_empty() {
                    Splice {
                        start,
                        end,
                        text: lines.join("\n"),
                    }
                } else if end < body_len {
                    Splice {
                        start,
                        end: end + 1,
                        text: String::new(),
                    }
                } else {
                    Splice {
                        start: start.saturating_sub(1),
                        end,
                        text: String::new(),
                    }
                }
            })
            .collect();
        Some(Ok(Located::Edit(Found {
            splices,
            how,
            first: chosen[0].first,
            last: chosen[0].last,
            count: chosen.len(),
        })))
    }

    /// Why a loose match's structure disagrees with the file's: where `old_text` steps in or
    /// out between two lines, the file must step the same way. (`old_text` flatter than the file
    /// is a model that dropped indentation; one that steps where the file does not believes in
    /// blocks that are not there — in Python, a different program.)
    fn disagrees(&self, m: &LineMatch, old: &[&str], shown: &str) -> Option<String> {
        let width = |l: &str| -> i64 {
            l.chars()
                .take_while(|c| c.is_whitespace())
                .map(|c| if c == '\t' { 4 } else { 1 })
                .sum()
        };
        let lines: Vec<(&str, usize)> = old
            .iter()
            .zip(&m.map)
            .filter_map(|(l, f)| f.map(|f| (*l, f)))
            .filter(|(l, _)| !is_blank(l))
            .collect();
        for w in lines.windows(2) {
            let ((a, fa), (b, fb)) = (w[0], w[1]);
            let step = (width(b) - width(a)).signum();
            let file_step = (width(self.text.line(fb)) - width(self.text.line(fa))).signum();
            if step != 0 && step != file_step {
                let how = if step > 0 { "deeper" } else { "less deep" };
                return Some(format!(
                    "old_text matches lines {}-{} of {shown} except for its indentation, and it does not follow the file's: in old_text `{}` is {how} than the line before it, in the file (line {}) it is not; copy old_text exactly from the file",
                    m.first + 1,
                    m.last + 1,
                    b.trim(),
                    fb + 1
                ));
            }
        }
        None
    }

    /// `...` lines in both `old_text` and `new_text`, as many in each (aider's rule: `...` is
    /// real code in Python, JavaScript and Go, so one in `old_text` alone is not an elision);
    /// each piece around them must be in the file exactly once, in order.
    fn elision(&self, old: &str, new: &str) -> Step {
        let olds = pieces(old);
        let news = pieces(new);
        if olds.len() < 2 || olds.len() != news.len() {
            return None;
        }
        let body = self.text.body();
        let mut splices = Vec::new();
        let mut after = 0;
        let mut first = None;
        for (o, n) in olds.iter().zip(&news) {
            if o.is_empty() {
                if n.is_empty() {
                    continue;
                }
                return None;
            }
            let at: Vec<usize> = memmem::find_iter(body.as_bytes(), o.as_bytes()).collect();
            match at.as_slice() {
                [] => return None,
                [s] if *s >= after => {
                    first.get_or_insert(*s);
                    after = s + o.len();
                    splices.push(Splice {
                        start: *s,
                        end: after,
                        text: n.clone(),
                    });
                }
                [_] => return None,
                many => {
                    let lines = many.iter().map(|&s| self.text.line_of(s) + 1).collect();
                    return Some(Err(Miss::Ambiguous(How::Elision, lines)));
                }
            }
        }
        let start = first?;
        Some(Ok(Located::Edit(Found {
            first: self.text.line_of(start),
            last: self.text.line_of(after.saturating_sub(1)),
            count: splices.len(),
            splices,
            how: How::Elision,
        })))
    }
}

/// The text between lines that are `...`, each piece with its line breaks.
fn pieces(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim() == "..." {
            out.push(String::new());
        } else if let Some(last) = out.last_mut() {
            last.push_str(line);
        }
    }
    out
}
