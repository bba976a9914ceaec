//! The streaming filter: text goes in, what cannot start a call comes out at once; from a
//! whole opener on, text is held while it may still be a call, and released as soon as it
//! cannot (docs/engine.md).

use super::context::Context;
use super::scan::Stop;
use super::{
    Ctx, Found, KINDS, Kinds, Pass, RECENT, Recovered, TextCalls, fence_tail, find_opener,
    recover_after, tail, unit_len,
};

/// Text of a held opener is checked again on every piece while it is short; after that only
/// when it has doubled, so a long call costs linear time.
const CHECK_EVERY_PIECE: usize = 2048;

struct Hold {
    /// The kinds it may still be.
    kinds: Kinds,
    /// The held length when last checked.
    checked: usize,
    /// The opener is inside a code fence: a call only if the fence ends the answer.
    fenced: bool,
    /// A cue before the opener: the call is shown, not made, and goes out whole as text as
    /// soon as it is complete.
    quoted: bool,
}

/// The end of an answer's text, as the filter saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// Text never held (a cut opener at the very end): to show as it is.
    pub pending: String,
    /// Text held from the first opener on.
    pub held: String,
    /// The calls in `held`, and the text around them.
    pub recovered: Option<Recovered>,
}

/// The streaming filter: text goes in, the part that cannot start a call comes out at once.
pub struct TextCallFilter {
    setup: TextCalls,
    /// Text not given out yet: a cut opener, or everything from a whole one on.
    buf: String,
    hold: Option<Hold>,
    /// Where the text given out so far leaves the next: at a line's start, in a fence, in
    /// reasoning.
    ctx: Context,
    /// The end of the text given out (for [`CUES`]).
    recent: String,
}

impl std::fmt::Debug for TextCallFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCallFilter")
            .field("buf", &self.buf)
            .field("holding", &self.hold.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for TextCallFilter {
    fn default() -> Self {
        Self::new()
    }
}

impl TextCallFilter {
    /// Without names: every name may be a tool's (the names decide at the end).
    pub fn new() -> Self {
        Self::with(TextCalls::default())
    }

    pub fn with(setup: TextCalls) -> Self {
        Self {
            setup,
            buf: String::new(),
            hold: None,
            ctx: Context::start(),
            recent: String::new(),
        }
    }

    /// Moves the first `len` bytes of the buffer to `out`; `ctx` the state after them.
    fn release(&mut self, len: usize, ctx: Context, out: &mut String) {
        self.ctx = ctx;
        if len == 0 {
            return;
        }
        let piece: String = self.buf.drain(..len).collect();
        self.recent.push_str(&piece);
        if self.recent.len() > 2 * RECENT {
            self.recent = tail(&self.recent, RECENT).to_string();
        }
        out.push_str(&piece);
    }

    /// Takes a piece of text; returns what can be shown now.
    pub fn push(&mut self, text: &str) -> String {
        self.buf.push_str(text);
        let mut out = String::new();
        loop {
            if let Some(hold) = &mut self.hold {
                let len = self.buf.len();
                let due = len > hold.checked
                    && (len <= CHECK_EVERY_PIECE || len >= hold.checked.saturating_mul(2));
                if !due {
                    break;
                }
                hold.checked = len;
                let ctx = Ctx {
                    tools: &self.setup.tools,
                    end: false,
                };
                let buf = &self.buf;
                let mut kept = Kinds(0);
                let mut shown = None;
                for (i, kind) in KINDS.iter().enumerate() {
                    if hold.kinds.0 & (1 << i) == 0 {
                        continue;
                    }
                    let alive = match (kind.parse)(buf, &ctx) {
                        Ok(parsed) if hold.quoted => {
                            shown.get_or_insert(parsed.len);
                            false
                        }
                        Ok(parsed) if hold.fenced => {
                            fence_tail(&buf[parsed.len..], false) != Err(Stop::Bad)
                        }
                        Ok(_) | Err(Stop::More) => true,
                        Err(Stop::Bad) => false,
                    };
                    if alive {
                        kept.0 |= 1 << i;
                    }
                }
                if let Some(len) = shown {
                    // A quoted call, whole: it goes as text, openers inside it too.
                    self.hold = None;
                    let ctx = self.ctx.after_call(&self.buf[..len]);
                    self.release(len, ctx, &mut out);
                    continue;
                }
                hold.kinds = kept;
                if !kept.is_empty() {
                    break;
                }
                // Not a call after all: its first unit goes, the rest is looked at again.
                self.hold = None;
                let mut ctx = self.ctx;
                let first = unit_len(&mut ctx, &self.buf, 0);
                self.release(first, ctx, &mut out);
            }
            match find_opener(
                &self.buf,
                0,
                self.ctx,
                &self.recent,
                &self.setup,
                Pass::All,
                false,
            ) {
                Found::None(ctx) => {
                    let all = self.buf.len();
                    self.release(all, ctx, &mut out);
                    break;
                }
                Found::Partial(at, ctx) => {
                    self.release(at, ctx, &mut out);
                    break;
                }
                Found::Full(opener) => {
                    self.release(opener.at, opener.ctx, &mut out);
                    self.hold = Some(Hold {
                        kinds: opener.kinds,
                        checked: 0,
                        fenced: opener.ctx.fence,
                        quoted: opener.quoted,
                    });
                }
            }
        }
        out
    }

    /// Whether text is held from an opener on (a call is being written).
    pub fn is_holding(&self) -> bool {
        self.hold.is_some()
    }

    /// The end of the answer: (text still pending that is no call, text held from an opener on).
    pub fn finish(self) -> (String, String) {
        if self.hold.is_some() {
            (String::new(), self.buf)
        } else {
            (self.buf, String::new())
        }
    }

    /// The end of the answer, with the held text read into calls.
    pub fn end(self) -> Ending {
        if self.hold.is_none() {
            return Ending {
                pending: self.buf,
                held: String::new(),
                recovered: None,
            };
        }
        let recovered = recover_after(&self.buf, self.ctx, &self.recent, &self.setup);
        Ending {
            pending: String::new(),
            held: self.buf,
            recovered,
        }
    }
}
