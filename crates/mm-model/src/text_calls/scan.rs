//! A cursor over the text of an answer that tells "the text stops too soon" from "this is not
//! it": while an answer streams, a call cut by the end of what came so far is still a call being
//! written; once it is over, the same cut is a truncated call, which stays text.

/// Why a parse stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The text ends before the structure does, and more text may come.
    More,
    /// The text is not this structure.
    Bad,
}

pub(crate) type Step<T> = Result<T, Stop>;

/// How a piece of text stands against a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    /// It starts with the whole marker, this many bytes long.
    Full(usize),
    /// It is a proper beginning of the marker: too short to tell.
    Partial,
    No,
}

/// `text` against one literal marker.
pub(crate) fn literal(text: &str, marker: &str) -> Marker {
    if text.starts_with(marker) {
        Marker::Full(marker.len())
    } else if !text.is_empty() && marker.starts_with(text) {
        Marker::Partial
    } else {
        Marker::No
    }
}

/// `text` against several literals: the first whole one, else whether one could still follow.
pub(crate) fn any_literal(text: &str, markers: &[&str]) -> Marker {
    let mut partial = false;
    for marker in markers {
        match literal(text, marker) {
            Marker::Full(n) => return Marker::Full(n),
            Marker::Partial => partial = true,
            Marker::No => {}
        }
    }
    if partial { Marker::Partial } else { Marker::No }
}

/// Characters of a tool name (names also carry `.`, `-` and `:` in some formats: `functions.x:0`).
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '$')
}

pub(crate) fn is_name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

/// A position in a text, and whether the text is the whole answer (`end`) or what came so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cur<'a> {
    text: &'a str,
    pub pos: usize,
    /// The text is the whole answer: running out of it is the end, not a wait for more.
    pub end: bool,
}

impl<'a> Cur<'a> {
    pub fn new(text: &'a str, end: bool) -> Self {
        Self { text, pos: 0, end }
    }

    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.text.len()
    }

    pub fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub fn bump(&mut self, bytes: usize) {
        self.pos = (self.pos + bytes).min(self.text.len());
    }

    /// What running out of text means here: a wait while streaming, a failure at the end.
    pub fn out(&self) -> Stop {
        if self.end { Stop::Bad } else { Stop::More }
    }

    /// Skips blank space (newlines included).
    pub fn ws(&mut self) {
        let rest = self.rest();
        let skipped = rest.len() - rest.trim_start().len();
        self.bump(skipped);
    }

    /// Skips blank space and the end-of-turn tokens models print after a call.
    pub fn ws_and_ends(&mut self) {
        loop {
            self.ws();
            match any_literal(self.rest(), END_TOKENS) {
                Marker::Full(n) => self.bump(n),
                Marker::Partial | Marker::No => return,
            }
        }
    }

    /// After a call that only more calls may follow: whether the answer ends here (blank space
    /// and end-of-turn tokens passed over). Running out of what came so far, or stopping inside
    /// an end-of-turn token, is a wait.
    pub fn answer_ends(&mut self) -> Step<bool> {
        self.ws_and_ends();
        if self.is_empty() {
            return if self.end { Ok(true) } else { Err(Stop::More) };
        }
        if !self.end && any_literal(self.rest(), END_TOKENS) == Marker::Partial {
            return Err(Stop::More);
        }
        Ok(false)
    }

    /// Whether another block follows (one of `markers`, after blank space and end-of-turn
    /// tokens): the cursor then stands on it; otherwise it does not move.
    pub fn followed_by(&mut self, markers: &[&str]) -> bool {
        let start = self.pos;
        self.ws_and_ends();
        if matches!(any_literal(self.rest(), markers), Marker::Full(_)) {
            return true;
        }
        self.pos = start;
        false
    }

    /// Requires `marker` here.
    pub fn lit(&mut self, marker: &str) -> Step<()> {
        match literal(self.rest(), marker) {
            Marker::Full(n) => {
                self.bump(n);
                Ok(())
            }
            Marker::Partial => Err(self.out()),
            Marker::No if self.is_empty() => Err(self.out()),
            Marker::No => Err(Stop::Bad),
        }
    }

    /// Takes `marker` when it is here. A cut marker at the end of what came is a wait; at the
    /// end of the answer it is not there.
    pub fn eat(&mut self, marker: &str) -> Step<bool> {
        self.eat_any(&[marker]).map(|m| m.is_some())
    }

    /// Takes the first of `markers` that is here; its index.
    pub fn eat_any(&mut self, markers: &[&str]) -> Step<Option<usize>> {
        let rest = self.rest();
        let mut partial = false;
        for (i, marker) in markers.iter().enumerate() {
            match literal(rest, marker) {
                Marker::Full(n) => {
                    self.bump(n);
                    return Ok(Some(i));
                }
                Marker::Partial => partial = true,
                Marker::No => {}
            }
        }
        if (partial || rest.is_empty()) && !self.end {
            Err(Stop::More)
        } else {
            Ok(None)
        }
    }

    /// The text up to the first of `markers` (which is taken too), and which one it was.
    pub fn until_any(&mut self, markers: &[&str]) -> Step<(&'a str, usize)> {
        let rest = self.rest();
        let found = markers
            .iter()
            .enumerate()
            .filter_map(|(i, m)| rest.find(m).map(|at| (at, i)))
            .min();
        match found {
            Some((at, i)) => {
                self.bump(at + markers[i].len());
                Ok((&rest[..at], i))
            }
            None => Err(self.out()),
        }
    }

    pub fn until(&mut self, marker: &str) -> Step<&'a str> {
        self.until_any(&[marker]).map(|(text, _)| text)
    }

    /// A tool name: a letter or `_`, then name characters. Cut by the end of what came, it may
    /// go on.
    pub fn name(&mut self) -> Step<&'a str> {
        let rest = self.rest();
        match rest.chars().next() {
            None => return Err(self.out()),
            Some(c) if !is_name_start(c) => return Err(Stop::Bad),
            Some(_) => {}
        }
        let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        if len == rest.len() && !self.end {
            return Err(Stop::More);
        }
        self.bump(len);
        Ok(&rest[..len])
    }
}

/// What models print after a call to end their turn, when the server leaves it in the text.
pub(crate) const END_TOKENS: &[&str] = &[
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "</s>",
    "<end_of_turn>",
    "<turn|>",
    "<|END_OF_TURN_TOKEN|>",
    "<｜end▁of▁sentence｜>",
];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_marker_waits_while_streaming_and_is_absent_at_the_end() {
        let mut streaming = Cur::new("</tool_", false);
        assert_eq!(streaming.eat("</tool_call>"), Err(Stop::More));
        let mut ended = Cur::new("</tool_", true);
        assert_eq!(ended.eat("</tool_call>"), Ok(false));
        let mut other = Cur::new("text", false);
        assert_eq!(other.eat("</tool_call>"), Ok(false));
        assert_eq!(other.lit("</tool_call>"), Err(Stop::Bad));
    }

    #[test]
    fn names_stop_at_the_first_other_character() {
        let mut cur = Cur::new("functions.bash:0<|x|>", false);
        assert_eq!(cur.name(), Ok("functions.bash:0"));
        assert_eq!(Cur::new("bas", false).name(), Err(Stop::More));
        assert_eq!(Cur::new("bas", true).name(), Ok("bas"));
        assert_eq!(Cur::new("1x", true).name(), Err(Stop::Bad));
    }

    #[test]
    fn until_finds_the_earliest_marker() {
        let mut cur = Cur::new("value</b> and </a>", true);
        assert_eq!(cur.until_any(&["</a>", "</b>"]), Ok(("value", 1)));
        assert_eq!(cur.rest(), " and </a>");
    }
}
