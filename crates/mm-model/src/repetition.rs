//! The repetition detector: a small model that falls into a loop ("… of the vastness of the
//! vastness …") goes on until its window is full. Every streamed piece of text, reasoning and
//! tool-call arguments goes through [`RepetitionDetector`]; it says when the tail of a stream has
//! become the same thing again and again, so the client can drop the stream (engine.md,
//! "Runaway answers"). Pure: no I/O, tested on fixtures.
//!
//! Two levels:
//! - **characters**: for every period `p` up to `span`, the number of characters in a row equal
//!   to the one `p` before them (one pass over `span` counters per character, written so the
//!   compiler vectorises it). A unit of 8 characters or more repeated `count` times trips it; a
//!   shorter unit (`=====`, `ha ha`) only once the run fills `count × span` characters.
//! - **passages** (prose only): the same passage of one to sixteen whole sentences or lines, at
//!   least 64 characters long, three times in a row (a stanza or a paragraph that comes back is
//!   clear long before it came ten times, and may be longer than `span`).
//!
//! Code is held to a looser rule, because identical lines and data literals are normal there:
//! inside a fenced block of the answer, in the rows of a Markdown table (a blank template repeats
//! its rows), in a tool call written as text, and in a tool call's arguments, a run trips only
//! once it fills `count × span` characters, and a unit that holds a line break (whole lines
//! repeated) never does; the answer cap (`model.maxTokens`) bounds those.

use mm_core::config::RepeatLimits;

/// The bounds of the thresholds (`[loop]` accepts no others).
const MIN_SPAN: usize = RepeatLimits::MIN_SPAN;
const MIN_COUNT: usize = RepeatLimits::MIN_COUNT;
const MAX_SPAN: usize = RepeatLimits::MAX_SPAN;
const MAX_COUNT: usize = RepeatLimits::MAX_COUNT;

/// How many times a passage of whole sentences must come in a row.
const PASSAGE_TIMES: usize = 3;
/// The shortest passage that counts, in characters (a short line may well come back three
/// times: a refrain, `- TODO`).
const PASSAGE_MIN: usize = 64;
/// The longest passage, in sentences or lines, compared.
const PASSAGE_SENTENCES: usize = 16;

/// Which stream repeated itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Text,
    Thought,
    /// The arguments of tool call `index`.
    Arguments(u64),
}

/// A repetition found at the end of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repetition {
    pub channel: Channel,
    /// The length of the repeated unit, in characters.
    pub span: usize,
    /// How many times it came in a row.
    pub times: usize,
    /// How many characters of the stream a cut answer keeps: everything up to the first
    /// occurrence of the unit, to the end of its sentence or line when that comes soon after.
    pub keep: usize,
}

/// What a stream holds: prose is held to the strict rule, code to the loose one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prose,
    Code,
}

/// The detector of one answer: one tail per stream.
#[derive(Debug)]
pub struct RepetitionDetector {
    limits: RepeatLimits,
    /// Per period (indexed like [`Tail::runs`]), the run that trips it in prose and in code.
    prose_need: Vec<u16>,
    code_need: Vec<u16>,
    text: Tail,
    thought: Tail,
    arguments: Vec<(u64, Tail)>,
}

impl RepetitionDetector {
    pub fn new(limits: RepeatLimits) -> Self {
        let span = limits.span.clamp(MIN_SPAN, MAX_SPAN);
        let count = limits.count.clamp(MIN_COUNT, MAX_COUNT);
        let limits = RepeatLimits { span, count };
        let fill = count * span;
        // Runs are counted in 16 bits (twice the lanes per vector): a threshold beyond that is
        // reached at 65 535 characters.
        let need = |p: usize, kind: Kind| -> u16 {
            let run = match kind {
                Kind::Prose if p >= MIN_SPAN => (count - 1) * p,
                Kind::Prose | Kind::Code => fill - p,
            };
            u16::try_from(run).unwrap_or(u16::MAX)
        };
        // runs[k] is the run of period span - k.
        let prose_need = (0..span).map(|k| need(span - k, Kind::Prose)).collect();
        let code_need = (0..span).map(|k| need(span - k, Kind::Code)).collect();
        Self {
            limits,
            prose_need,
            code_need,
            text: Tail::new(span, Kind::Prose),
            thought: Tail::new(span, Kind::Prose),
            arguments: Vec::new(),
        }
    }

    pub fn limits(&self) -> RepeatLimits {
        self.limits
    }

    /// A piece of the answer's text.
    pub fn text(&mut self, piece: &str) -> Option<Repetition> {
        let found = self.text.push(piece, &self.prose_need, &self.code_need)?;
        Some(found.on(Channel::Text))
    }

    /// The text from here on is a tool call written as text (held back from the user): code.
    pub fn text_is_call(&mut self) {
        self.text.forced_code = true;
    }

    /// A piece of reasoning.
    pub fn thought(&mut self, piece: &str) -> Option<Repetition> {
        let found = self
            .thought
            .push(piece, &self.prose_need, &self.code_need)?;
        Some(found.on(Channel::Thought))
    }

    /// A fragment of the arguments of tool call `index`.
    pub fn arguments(&mut self, index: u64, piece: &str) -> Option<Repetition> {
        let at = match self.arguments.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                let mut tail = Tail::new(self.limits.span, Kind::Code);
                tail.arguments = true;
                self.arguments.push((index, tail));
                self.arguments.len() - 1
            }
        };
        let tail = &mut self.arguments[at].1;
        let found = tail.push(piece, &self.prose_need, &self.code_need)?;
        Some(found.on(Channel::Arguments(index)))
    }
}

/// A repetition before it is told which stream it was in.
struct Found {
    span: usize,
    times: usize,
    keep: usize,
}

impl Found {
    fn on(self, channel: Channel) -> Repetition {
        Repetition {
            channel,
            span: self.span,
            times: self.times,
            keep: self.keep,
        }
    }
}

/// Not a character: what the window holds before the stream fills it (U+FFFF is a
/// noncharacter).
const EMPTY: u16 = u16::MAX;

/// A character in 16 bits: itself in the Basic Multilingual Plane; above it, folded (two
/// characters that fold alike only make a run one longer than it is).
fn fold(c: char) -> u16 {
    let c = u32::from(c);
    (c ^ (c >> 16)) as u16
}

/// The state of one stream.
#[derive(Debug)]
struct Tail {
    span: usize,
    /// The last `span` characters, twice over: the ring starts at `pos` and is mirrored at
    /// `pos + span`, so the window (oldest first) is the one slice `ring[pos..pos + span]`.
    ring: Vec<u16>,
    pos: usize,
    /// `runs[k]`: how many characters in a row, up to the last one, equal the character
    /// `span - k` before them (saturating).
    runs: Vec<u16>,
    /// Characters seen.
    seen: usize,
    kind: Kind,
    /// A tool call's arguments (JSON: a line break inside a string is the two characters `\n`).
    arguments: bool,
    /// The rest of the answer is a tool call written as text.
    forced_code: bool,
    fence: Fence,
    passages: Passages,
    /// The previous character (for `\n` escapes and sentence ends).
    last: char,
}

/// Markdown code fences (three backticks at the start of a line) and table rows (a line that
/// starts with `|`) in prose.
#[derive(Debug, Default)]
struct Fence {
    inside: bool,
    at_line_start: bool,
    ticks: u8,
    /// The current line is a table row (until the next line shows what it is).
    table: bool,
}

impl Tail {
    fn new(span: usize, kind: Kind) -> Self {
        Self {
            span,
            ring: vec![EMPTY; 2 * span],
            pos: 0,
            runs: vec![0; span],
            seen: 0,
            kind,
            arguments: false,
            forced_code: false,
            fence: Fence {
                at_line_start: true,
                ..Fence::default()
            },
            passages: Passages::default(),
            last: '\n',
        }
    }

    fn code(&self) -> bool {
        self.kind == Kind::Code || self.fence.inside || self.fence.table || self.forced_code
    }

    fn push(&mut self, piece: &str, prose_need: &[u16], code_need: &[u16]) -> Option<Found> {
        for c in piece.chars() {
            if self.kind == Kind::Prose {
                self.track_fence(c);
            }
            let code = self.code();
            let need = if code { code_need } else { prose_need };
            let hit = self.step(fold(c), need);
            self.seen += 1;
            let passage = if code {
                None
            } else {
                self.passages.push(c, self.last, self.seen)
            };
            self.last = c;
            if hit && let Some(found) = self.check(need, code) {
                return Some(found);
            }
            if let Some(found) = passage {
                return Some(found);
            }
        }
        None
    }

    /// One character through every period: the loop the cost budget is about. Returns whether
    /// some period reached its threshold.
    #[inline]
    fn step(&mut self, c: u16, need: &[u16]) -> bool {
        let span = self.span;
        let window = &self.ring[self.pos..self.pos + span];
        let mut hit = false;
        for ((run, &before), &n) in self.runs.iter_mut().zip(window).zip(need) {
            let r = if before == c {
                run.saturating_add(1)
            } else {
                0
            };
            *run = r;
            hit |= r >= n;
        }
        self.ring[self.pos] = c;
        self.ring[self.pos + span] = c;
        self.pos = if self.pos + 1 == span {
            0
        } else {
            self.pos + 1
        };
        hit
    }

    fn run_of(&self, period: usize) -> usize {
        self.runs[self.span - period] as usize
    }

    /// The character `back` places before the next one (1: the last one seen), folded.
    fn char_back(&self, back: usize) -> u16 {
        self.ring[self.pos + self.span - back]
    }

    /// A period reached its threshold: is it a repetition worth stopping for?
    fn check(&self, need: &[u16], code: bool) -> Option<Found> {
        // The smallest period that reached its threshold; a smaller one that covers the same
        // stretch is its real unit (`=` × 80 is a run of `=`, not ten of `========`), and that one
        // did not reach its own.
        let period = (1..=self.span).find(|&p| self.run_of(p) >= need[self.span - p] as usize)?;
        let stretch = self.run_of(period) + period;
        if (1..period).any(|q| self.run_of(q) + q >= stretch) {
            return None;
        }
        if code && self.unit_has_line_break(period) {
            return None;
        }
        let run = self.run_of(period);
        Some(Found {
            span: period,
            times: stretch / period,
            keep: self.seen - run + self.extension(period, run),
        })
    }

    /// Whether the last `period` characters hold a line break (`\n`, or the escape `\n` in JSON).
    fn unit_has_line_break(&self, period: usize) -> bool {
        let newline = fold('\n');
        let backslash = fold('\\');
        let n = fold('n');
        (1..=period).any(|back| {
            let c = self.char_back(back);
            c == newline
                || (self.arguments
                    && c == n
                    && back < self.span
                    && self.char_back(back + 1) == backslash)
        })
    }

    /// The cut keeps the text up to the first occurrence of the unit; it goes on to the end of
    /// that sentence or line when one ends within the next unit, so the answer kept reads whole.
    /// Returns how many more characters are kept.
    fn extension(&self, period: usize, run: usize) -> usize {
        // The stretch is periodic: the character `j` places after the cut is the one at the same
        // phase among the last `period` characters.
        for j in 1..=period.min(run) {
            // Position (from the end) of character cut + j - 1, folded into the last period.
            let from_end = run + 1 - j; // 1 = the last character
            let folded = (from_end - 1) % period + 1;
            if let Some(c) = char::from_u32(u32::from(self.char_back(folded)))
                && matches!(c, '.' | '!' | '?' | '\n')
            {
                return j;
            }
        }
        0
    }

    fn track_fence(&mut self, c: char) {
        let f = &mut self.fence;
        match c {
            '\n' => {
                f.at_line_start = true;
                f.ticks = 0;
            }
            '`' if f.at_line_start => {
                f.table = false;
                f.ticks += 1;
                if f.ticks == 3 {
                    f.inside = !f.inside;
                    f.at_line_start = false;
                    self.passages = Passages::default();
                }
            }
            ' ' if f.at_line_start && f.ticks == 0 => {}
            _ if f.at_line_start => {
                f.at_line_start = false;
                f.table = c == '|' && f.ticks == 0;
            }
            _ => {}
        }
    }
}

/// Sentences of prose, as hashes, and the runs of the passages they form.
#[derive(Debug, Default)]
struct Passages {
    /// FNV-1a of the sentence being read (blank space at its start left out).
    hash: u64,
    /// A sentence has begun (something other than blank space came since the last one ended).
    began: bool,
    /// The last sentences: (hash, the character count at its end), newest last.
    recent: std::collections::VecDeque<(u64, usize)>,
    /// `runs[t - 1]`: how many sentences in a row, up to the last one, equal the one `t` before.
    runs: [usize; PASSAGE_SENTENCES],
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

impl Passages {
    /// One character; `seen` counts it. Returns a passage repeated [`PASSAGE_TIMES`] times.
    fn push(&mut self, c: char, last: char, seen: usize) -> Option<Found> {
        let ends = c == '\n' || (c.is_whitespace() && matches!(last, '.' | '!' | '?'));
        if ends {
            return self.end_sentence(seen);
        }
        if !self.began {
            if c.is_whitespace() {
                return None;
            }
            self.began = true;
            self.hash = FNV_OFFSET;
        }
        for b in (c as u32).to_le_bytes() {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
        None
    }

    fn end_sentence(&mut self, seen: usize) -> Option<Found> {
        if !self.began {
            return None;
        }
        self.began = false;
        let hash = self.hash;
        // The sentence ends before the blank that ended it.
        let end = seen - 1;
        let keep = PASSAGE_SENTENCES * PASSAGE_TIMES + 1;
        for t in 1..=PASSAGE_SENTENCES {
            let same = self.recent.len() >= t && self.recent[self.recent.len() - t].0 == hash;
            self.runs[t - 1] = if same { self.runs[t - 1] + 1 } else { 0 };
        }
        self.recent.push_back((hash, end));
        if self.recent.len() > keep {
            self.recent.pop_front();
        }
        let last = self.recent.len() - 1;
        for t in 1..=PASSAGE_SENTENCES {
            let run = self.runs[t - 1];
            if run < (PASSAGE_TIMES - 1) * t || last < run {
                continue;
            }
            // The passage's length: from the end of the sentence before it to its end.
            let length = end - self.recent[last - t].1;
            // A passage that is a shorter one again and again is that one (`A A A` three times
            // is `A` nine times, for the character level to judge).
            let shorter = (1..t).any(|u| self.runs[u - 1] + u >= run + t);
            if length < PASSAGE_MIN || shorter {
                continue;
            }
            return Some(Found {
                span: length,
                times: (run + t) / t,
                keep: self.recent[last - run].1,
            });
        }
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const LIMITS: RepeatLimits = RepeatLimits {
        span: 200,
        count: 10,
    };

    /// Feeds `text` in pieces of `size` characters; the repetition and the characters fed.
    fn feed_text(text: &str, size: usize) -> (Option<Repetition>, String) {
        let mut d = RepetitionDetector::new(LIMITS);
        let chars: Vec<char> = text.chars().collect();
        let mut fed = String::new();
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            fed.push_str(&piece);
            if let Some(r) = d.text(&piece) {
                return (Some(r), fed);
            }
        }
        (None, fed)
    }

    /// The text a cut answer keeps.
    fn kept(fed: &str, r: &Repetition) -> String {
        fed.chars().take(r.keep).collect()
    }

    #[test]
    fn a_phrase_said_again_and_again_is_stopped_at_the_count() {
        let text = format!("Hello! I am {}", "of the vastness ".repeat(1000));
        for size in [1, 3, 7, 64] {
            let (found, fed) = feed_text(&text, size);
            let r = found.expect("a repetition");
            assert_eq!((r.channel, r.span, r.times), (Channel::Text, 16, 10));
            let fed_chars = fed.chars().count();
            // Found within the piece that completed the tenth occurrence.
            assert!(
                fed_chars < "Hello! I am ".len() + 16 * 10 + size,
                "{fed_chars}"
            );
            assert_eq!(kept(&fed, &r), "Hello! I am of the vastness");
        }
    }

    #[test]
    fn a_sentence_repeated_is_cut_after_its_first_occurrence_at_its_end() {
        let text = format!(
            "I am Bob. I'm a programming assistant. {}",
            "I'm a programming assistant. ".repeat(50)
        );
        let (found, fed) = feed_text(&text, 4);
        let r = found.unwrap();
        assert_eq!((r.span, r.times), (29, 10));
        // The stretch starts at the ". " before the first occurrence; the cut still ends where
        // that occurrence's sentence ends.
        assert_eq!(kept(&fed, &r), "I am Bob. I'm a programming assistant.");
    }

    #[test]
    fn a_line_of_a_poem_over_and_over_is_stopped() {
        let text = format!(
            "The sea is deep,\nThe sea is wide,\n{}",
            "A place of endless love,\n".repeat(40)
        );
        let (found, fed) = feed_text(&text, 5);
        let r = found.unwrap();
        assert_eq!((r.span, r.times), (25, 10));
        assert_eq!(
            kept(&fed, &r),
            "The sea is deep,\nThe sea is wide,\nA place of endless love,\n"
        );
    }

    #[test]
    fn a_paragraph_longer_than_the_span_is_stopped_at_its_third_time() {
        let paragraph = "The multiverse is often described as a multidimensional \
            multidimensional multiverse, or the multiverse, which is a hypothetical theoretical \
            framework that attempts to explain the origin and evolution of the multiverse.";
        assert!(paragraph.len() > 200);
        let text = format!(
            "The universe is vast. {paragraph}\n\n{}",
            format!("{paragraph} ").repeat(10)
        );
        let (found, fed) = feed_text(&text, 6);
        let r = found.unwrap();
        assert_eq!((r.span, r.times), (paragraph.len() + 1, 3));
        assert_eq!(kept(&fed, &r), format!("The universe is vast. {paragraph}"));
    }

    #[test]
    fn a_stanza_that_comes_back_is_stopped_at_its_third_time() {
        // SmolLM2-135M, "Write a poem about the sea.", temperature 0.
        let stanza = "The sea, a place of endless wonder,\nA place of endless wonder,\n\
            A place of endless wonder,\nA place of endless wonder,\n\n";
        let text = format!("The sea is deep and wide,\n\n{}", stanza.repeat(20));
        let (found, fed) = feed_text(&text, 5);
        let r = found.unwrap();
        assert_eq!(r.times, 3);
        assert_eq!(
            kept(&fed, &r),
            format!("The sea is deep and wide,\n\n{}", stanza.trim_end())
        );
    }

    #[test]
    fn two_stanzas_that_take_turns_are_stopped_at_their_third_turn() {
        // SmolLM2-135M over ACP, "Write a poem about the sea.", temperature 0.
        let stanza = |x: &str| {
            format!(
                "The sea is a place of endless {x},\nA place of endless {x},\n\
                 A place of endless {x},\nA place of endless {x}.\n\n"
            )
        };
        let pair = format!("{}{}", stanza("love"), stanza("beauty"));
        let text = format!("The Sea\n\n{}", pair.repeat(5));
        let (found, fed) = feed_text(&text, 4);
        let r = found.unwrap();
        assert_eq!(r.times, 3);
        assert_eq!(kept(&fed, &r), format!("The Sea\n\n{}", pair.trim_end()));
    }

    #[test]
    fn a_long_sentence_that_comes_back_is_stopped_at_its_third_time() {
        // SmolLM2-135M, "Describe the vastness of the universe.", temperature 0.
        let sentence = "It is a universe that is forever changing, forever evolving, forever \
            growing.";
        let text = format!("The universe is vast. {}", format!("{sentence} ").repeat(5));
        let (found, fed) = feed_text(&text, 3);
        let r = found.unwrap();
        assert_eq!((r.span, r.times), (sentence.len() + 1, 3));
        assert_eq!(kept(&fed, &r), format!("The universe is vast. {sentence}"));
    }

    #[test]
    fn a_short_line_may_come_back_a_few_times() {
        let text = "Chorus:\nLet it be, let it be.\nLet it be, let it be.\n\
            Let it be, let it be.\n- TODO\n- TODO\n- TODO\n- TODO\nThe end.\n";
        assert_eq!(feed_text(text, 4).0, None);
    }

    #[test]
    fn reasoning_is_watched_too() {
        let mut d = RepetitionDetector::new(LIMITS);
        let mut found = None;
        for _ in 0..100 {
            found = d.thought("Wait, let me check. ");
            if found.is_some() {
                break;
            }
        }
        let r = found.unwrap();
        assert_eq!((r.channel, r.span, r.times), (Channel::Thought, 20, 10));
        assert_eq!(d.text("fine"), None);
    }

    #[test]
    fn a_single_character_or_a_short_unit_needs_count_times_span_characters() {
        for unit in ["=", "ha ", "\n", "0, "] {
            let mut d = RepetitionDetector::new(LIMITS);
            let mut fed = 0;
            let r = loop {
                fed += unit.len();
                if let Some(r) = d.text(unit) {
                    break r;
                }
                assert!(fed < 5000, "{unit:?} never stopped");
            };
            assert_eq!(r.span, unit.len(), "{unit:?}");
            assert!((2000..2000 + unit.len()).contains(&fed), "{unit:?}: {fed}");
        }
    }

    #[test]
    fn separators_and_rules_pass() {
        let text = format!(
            "Results\n{}\n\n| a | b |\n|{}|{}|\n| 1 | 2 |\n\n{}\n",
            "=".repeat(120),
            "-".repeat(150),
            "-".repeat(150),
            "─".repeat(200)
        );
        assert_eq!(feed_text(&text, 3).0, None);
    }

    #[test]
    fn a_long_table_passes() {
        let mut text = String::from("| # | name | status | owner |\n|---|---|---|---|\n");
        for i in 0..300 {
            text.push_str(&format!("| {i} | item-{} | ok | team |\n", i % 7));
        }
        assert_eq!(feed_text(&text, 4).0, None);
    }

    #[test]
    fn a_blank_table_template_passes() {
        let mut text = String::from("Fill in the week:\n\n| Day | Task | Hours | Notes |\n");
        text.push_str("|-----|------|-------|-------|\n");
        text.push_str(&"|     |      |       |       |\n".repeat(40));
        text.push_str("\nThen send it back.\n");
        assert_eq!(feed_text(&text, 4).0, None);
        // Prose after the table is prose again.
        let text = format!("{text}{}", "of the vastness ".repeat(20));
        assert_eq!(feed_text(&text, 4).0.map(|r| r.span), Some(16));
    }

    #[test]
    fn a_numbered_list_of_similar_lines_passes() {
        let mut text = String::from("Steps:\n");
        for i in 1..=120 {
            text.push_str(&format!(
                "{i}. Run the test suite again and check the output.\n"
            ));
        }
        assert_eq!(feed_text(&text, 5).0, None);
    }

    #[test]
    fn code_with_repeated_lines_in_a_fence_passes() {
        let mut text = String::from("Here it is:\n\n```python\n");
        for _ in 0..60 {
            text.push_str("    assert parse(\"1\") == 1\n");
        }
        text.push_str("grid = [");
        text.push_str(&"[0, 0, 0], ".repeat(40));
        text.push_str("]\n```\n\nDone.\n");
        assert_eq!(feed_text(&text, 4).0, None);
    }

    #[test]
    fn a_loop_inside_a_fence_is_stopped_once_it_fills_count_times_span() {
        let text = format!("```\n{}", "print the value ".repeat(500));
        let (found, fed) = feed_text(&text, 4);
        let r = found.unwrap();
        assert_eq!(r.span, 16);
        let fed = fed.chars().count();
        assert!((2000..2100).contains(&fed), "{fed}");
    }

    #[test]
    fn identical_lines_in_arguments_pass_a_phrase_looping_in_them_does_not() {
        let mut d = RepetitionDetector::new(LIMITS);
        let file = "hello world\\n".repeat(1000);
        let args = format!("{{\"path\": \"a.txt\", \"content\": \"{file}\"}}");
        for piece in args.as_bytes().chunks(7) {
            assert_eq!(d.arguments(0, std::str::from_utf8(piece).unwrap()), None);
        }
        let mut d = RepetitionDetector::new(LIMITS);
        assert_eq!(d.arguments(1, "{\"content\": \""), None);
        let mut fed = 0;
        let r = loop {
            fed += 16;
            if let Some(r) = d.arguments(1, "of the vastness ") {
                break r;
            }
            assert!(fed < 10_000);
        };
        assert_eq!((r.channel, r.span), (Channel::Arguments(1), 16));
        assert!(fed < 2100, "{fed}");
    }

    #[test]
    fn streams_are_kept_apart() {
        let mut d = RepetitionDetector::new(LIMITS);
        // Alternating text and reasoning never forms a run in either.
        for i in 0..200 {
            assert_eq!(d.text(&format!("step {i} ")), None);
            assert_eq!(d.thought(&format!("thinking about {i}. ")), None);
        }
    }

    #[test]
    fn prose_that_merely_reuses_words_passes() {
        let text = "The meaning of life is a question that has been asked for centuries. \
            Some have argued that it is a matter of choice, while others have argued that it \
            lies in the nature of ethics. In science, the answer has been explored in various \
            ways. In art, the answer has been explored in various ways. In religion, the \
            answer has been explored in various ways. Ultimately, the answer is personal. "
            .repeat(3);
        // The same text three times over is a loop only once a passage of it repeats whole.
        let (found, _) = feed_text(&text, 4);
        let r = found.unwrap();
        assert!(r.span > 200, "{r:?}");
        let once = &text[..text.len() / 3];
        assert_eq!(feed_text(once, 4).0, None);
    }

    #[test]
    fn limits_are_clamped_to_what_makes_sense() {
        let d = RepetitionDetector::new(RepeatLimits { span: 1, count: 0 });
        assert_eq!(
            d.limits(),
            RepeatLimits {
                span: MIN_SPAN,
                count: MIN_COUNT
            }
        );
    }
}
