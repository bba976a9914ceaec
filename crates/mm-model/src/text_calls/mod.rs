//! Tool calls that models write as text (docs/engine.md), in every format of today's open models
//! (one file each) and their usual drifts. While the answer streams, [`TextCallFilter`] holds
//! text back from the first possible opener of any format, and lets it go as soon as it cannot
//! be a call; at the end, [`recover`] reads the held text into calls and the prose around them.
//!
//! Each format gives an `open` (does a call start here? the whole opener, a cut one, or not)
//! and a `parse` that says, of a text cut anywhere, whether it is a call, still may become one
//! (`Stop::More`), or cannot (`Stop::Bad`): the same parse decides while streaming and at the
//! end.

mod bare;
mod command_r;
mod context;
mod deepseek;
mod family;
mod filter;
mod functionary;
mod gemma;
mod gigachat;
mod glm;
mod harmony;
mod hermes;
mod json_calls;
mod kimi;
mod llama;
mod minimax;
mod mistral;
mod pythonic;
mod scan;
mod tool_tags;
mod tools;
mod value;
mod wrapped;
mod xml;

pub use family::{Family, Format};
pub use filter::{Ending, TextCallFilter};
pub use tools::Tools;

use context::{Context, Unit};
use scan::{Cur, Marker, Step, Stop};
use tools::Call;

use super::RawToolCall;

/// What text-call recovery knows of the session: the tools it offers, and the model's family
/// when the server or the model's name tells it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextCalls {
    pub tools: Tools,
    pub family: Option<Family>,
}

impl TextCalls {
    /// These tool names, no schemas, no family.
    pub fn names(names: &[String]) -> Self {
        Self {
            tools: Tools::names(names),
            family: None,
        }
    }

    /// The most text (in bytes) the filter holds back before it has seen a whole opener: the
    /// longest opener of any format (`<|tool_calls_section_begin|>`, a JSON list's
    /// `[{"function_name"` with the blank space it may hold, `[NAME(` for the longest tool
    /// name). Prose is never delayed by more: its first character that no opener continues
    /// releases it.
    pub fn opener_budget(&self) -> usize {
        let longest_name = if self.tools.is_listed() {
            self.tools.listed_names().map(str::len).max().unwrap_or(0)
        } else {
            bare::MAX_NAME
        };
        LONGEST_LITERAL_OPENER
            .max(context::LONGEST_THOUGHT_MARKER)
            .max(bare::LONGEST_JSON_OPENER)
            .max(longest_name + bare::MAX_GAP + 2)
    }
}

/// `<|tool_calls_section_begin|>`, in bytes.
const LONGEST_LITERAL_OPENER: usize = 28;

/// Calls read from text, and the text around them.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub calls: Vec<RawToolCall>,
    /// The text without the calls (prose before, between and after them).
    pub text: String,
    /// The format of the first call.
    pub format: Format,
}

/// Where an opener is being looked for.
pub(crate) struct Open<'a> {
    /// Only blank space precedes it on its line.
    pub line_start: bool,
    pub tools: &'a Tools,
    pub family: Option<Family>,
}

impl Open<'_> {
    /// Whether the model's family writes `format`.
    pub fn writes(&self, format: Format) -> bool {
        self.family.is_some_and(|f| f.writes(format))
    }
}

/// What a parse knows.
pub(crate) struct Ctx<'a> {
    pub tools: &'a Tools,
    /// The text is the whole rest of the answer.
    pub end: bool,
}

/// Calls parsed from the start of a text.
pub(crate) struct Parsed {
    pub calls: Vec<Call>,
    /// Bytes taken from the text.
    pub len: usize,
    pub format: Format,
    /// Text a format carries between its calls (harmony's `final`, Functionary's `all`).
    pub text: String,
}

impl Parsed {
    pub fn calls(calls: Vec<Call>, len: usize, format: Format) -> Self {
        Self {
            calls,
            len,
            format,
            text: String::new(),
        }
    }
}

/// One way calls start in text.
struct Kind {
    /// The format named when its calls cannot be read (`mm doctor`).
    format: Format,
    /// Without a marker of its own: read only under the strict rules (bare.rs).
    markerless: bool,
    open: fn(&str, &Open) -> Marker,
    parse: fn(&str, &Ctx) -> Step<Parsed>,
}

/// Every format, in the order tried where two could open at the same place.
const KINDS: &[Kind] = &[
    Kind {
        format: Format::Hermes,
        markerless: false,
        open: hermes::open,
        parse: hermes::parse,
    },
    Kind {
        format: Format::QwenXml,
        markerless: false,
        open: xml::open,
        parse: xml::parse,
    },
    Kind {
        format: Format::MiniMax,
        markerless: false,
        open: minimax::open,
        parse: minimax::parse,
    },
    Kind {
        format: Format::DeepSeek,
        markerless: false,
        open: deepseek::open,
        parse: deepseek::parse,
    },
    Kind {
        format: Format::Kimi,
        markerless: false,
        open: kimi::open,
        parse: kimi::parse,
    },
    Kind {
        format: Format::Harmony,
        markerless: false,
        open: harmony::open,
        parse: harmony::parse,
    },
    Kind {
        format: Format::Gemma,
        markerless: false,
        open: gemma::open,
        parse: gemma::parse,
    },
    Kind {
        format: Format::Lfm2,
        markerless: false,
        open: pythonic::lfm2_open,
        parse: pythonic::lfm2_parse,
    },
    Kind {
        format: Format::Llama,
        markerless: false,
        open: llama::open,
        parse: llama::parse,
    },
    Kind {
        format: Format::Mistral,
        markerless: false,
        open: mistral::open,
        parse: mistral::parse,
    },
    Kind {
        format: Format::Granite,
        markerless: false,
        open: wrapped::open,
        parse: wrapped::parse,
    },
    Kind {
        format: Format::CommandR,
        markerless: false,
        open: command_r::open,
        parse: command_r::parse,
    },
    Kind {
        format: Format::Functionary,
        markerless: false,
        open: functionary::open,
        parse: functionary::parse,
    },
    Kind {
        format: Format::GigaChat,
        markerless: false,
        open: gigachat::open,
        parse: gigachat::parse,
    },
    Kind {
        format: Format::BareJson,
        markerless: true,
        open: bare::open,
        parse: bare::parse,
    },
    Kind {
        format: Format::ToolTags,
        markerless: true,
        open: tool_tags::open,
        parse: tool_tags::parse,
    },
];

/// The markerless formats, which a family may write.
const MARKERLESS: &[Format] = &[
    Format::BareJson,
    Format::Fenced,
    Format::Xlam,
    Format::Pythonic,
];

/// Characters that may start an opener anywhere in a line (letters start one only at the
/// start of a line, and only for the formats a family enables).
fn may_open(c: char) -> bool {
    matches!(c, '<' | '[' | '{' | '`' | '>' | 'f' | 'A')
}

/// Phrases that, just before a call-shaped text, say it is shown, not made.
const CUES: &[&str] = &[
    "not a tool call",
    "not a call",
    "not a real call",
    "for example",
    "example of",
    "example:",
    "e.g.",
    "for instance",
    "would look like",
    "looks like",
    "look like",
    "like this",
    "the syntax",
    "syntax is",
    "syntax:",
    "the format is",
    "format would be",
    "format:",
    "is formatted as",
    "form:",
    "shape:",
    "do not call",
    "don't call",
    "won't call",
    "never call",
    "without calling",
];

/// How much of the released text is kept for [`CUES`].
const RECENT: usize = 400;

/// The last `max` bytes of `text` (on a character boundary).
fn tail(text: &str, max: usize) -> &str {
    let mut at = text.len().saturating_sub(max);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[at..]
}

/// A line that opens a code fence (```` ``` ```` and a language, or `<response>` inside one).
fn fence_line(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("```") || line == "<response>"
}

/// Whether the text before an opener says that what follows is an example, not a call: a cue
/// on the opener's own line, or on the line above when the opener starts its line and that
/// line ends with `:` (a fence's opening line between them is passed over).
fn cue_before(recent: &str, before: &str) -> bool {
    let before = tail(before, RECENT);
    let joined;
    let text = if before.len() >= RECENT || before.contains('\n') {
        before
    } else {
        joined = format!("{recent}{before}");
        &joined
    };
    let mut lines = context::after_reasoning(text).rsplit('\n');
    let current = lines.next().unwrap_or("");
    let line = if current.trim().is_empty() {
        match lines.find(|l| !l.trim().is_empty() && !fence_line(l)) {
            Some(above) if above.trim_end().ends_with(':') => above,
            _ => return false,
        }
    } else {
        current
    };
    let line = line.to_lowercase();
    CUES.iter().any(|cue| {
        // At the start of a word: `form:` is a cue, `platform:` is not.
        line.match_indices(cue).any(|(at, _)| {
            !line[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
        })
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Formats with a marker, and the markerless ones of the model's family.
    Markers,
    All,
}

enum Found {
    /// No opener; the state at the end.
    None(Context),
    /// The text ends inside what may be an opener (or a marker of [`Context`]), from here; the
    /// state there.
    Partial(usize, Context),
    /// Whole openers here.
    Full(Opener),
}

/// Whole openers at a place.
#[derive(Clone, Copy)]
struct Opener {
    at: usize,
    /// The kinds (bits of [`KINDS`]) they open.
    kinds: Kinds,
    /// The state before them.
    ctx: Context,
    /// A cue before it says what follows is shown, not made: the call it opens is text, and
    /// so is every opener inside it.
    quoted: bool,
}

/// A set of [`KINDS`], as bits: where openers of several formats look alike
/// (`<|tool_call_begin|>` is Kimi's, and DeepSeek's in a distilled model's spelling), each is
/// tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kinds(u32);

impl Kinds {
    fn iter(self) -> impl Iterator<Item = &'static Kind> {
        KINDS
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, k)| k)
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The first opener of `text` from `from` on, `ctx` the state there. Nothing inside reasoning
/// or inline code opens a call; `end`: the text is the whole rest of the answer.
fn find_opener(
    text: &str,
    from: usize,
    mut ctx: Context,
    recent: &str,
    setup: &TextCalls,
    pass: Pass,
    end: bool,
) -> Found {
    let family_markerless = setup
        .family
        .is_some_and(|f| MARKERLESS.iter().any(|m| f.writes(*m)));
    let letters = setup.tools.is_listed()
        && setup.family.is_some_and(|f| {
            [Format::Functionary, Format::Glm, Format::Pythonic]
                .iter()
                .any(|m| f.writes(*m))
        });
    let mut at = from;
    while let Some(c) = text[at..].chars().next() {
        if !ctx.quiet() && (may_open(c) || (letters && ctx.line_start && scan::is_name_start(c))) {
            let open = Open {
                line_start: ctx.line_start,
                tools: &setup.tools,
                family: setup.family,
            };
            let mut partial = false;
            let mut full = Kinds(0);
            for (i, kind) in KINDS.iter().enumerate() {
                if pass == Pass::Markers && kind.markerless && !family_markerless {
                    continue;
                }
                match (kind.open)(&text[at..], &open) {
                    Marker::Full(_) => full.0 |= 1 << i,
                    Marker::Partial => partial = true,
                    Marker::No => {}
                }
            }
            if !full.is_empty() {
                return Found::Full(Opener {
                    at,
                    kinds: full,
                    ctx,
                    quoted: cue_before(recent, &text[..at]),
                });
            } else if partial && !end {
                return Found::Partial(at, ctx);
            }
        }
        match ctx.pass(text, at, end) {
            Unit::Len(n) => at += n.max(1),
            Unit::Cut => return Found::Partial(at, ctx),
        }
    }
    Found::None(ctx)
}

/// The length of the unit at `at` (an opener that was no call is passed as its first unit).
fn unit_len(ctx: &mut Context, text: &str, at: usize) -> usize {
    match ctx.pass(text, at, true) {
        Unit::Len(n) if n > 0 => n,
        _ => first_char_len(&text[at..]),
    }
}

fn first_char_len(text: &str) -> usize {
    text.chars().next().map_or(0, char::len_utf8)
}

/// After a call quoted in a code fence: only the fence's end (and a `</response>` before it)
/// and the end of the answer. A call in a fence is a call only when the fence ends the answer:
/// anything after it makes it an example.
fn fence_tail(rest: &str, end: bool) -> Step<()> {
    let mut cur = Cur::new(rest, end);
    cur.ws();
    if cur.eat("</response>")? {
        cur.ws();
    }
    if cur.is_empty() {
        return if end { Ok(()) } else { Err(Stop::More) };
    }
    cur.lit("```")?;
    cur.ws_and_ends();
    if !cur.is_empty() {
        return Err(Stop::Bad);
    }
    if end { Ok(()) } else { Err(Stop::More) }
}

impl Opener {
    /// Whether the call it opens, which `rest` follows, is made: not quoted after a cue, not in
    /// a code fence that text follows, not in reasoning the chat template opened.
    fn makes(&self, rest: &str) -> bool {
        !self.quoted
            && (!self.ctx.fence || fence_tail(rest, true).is_ok())
            && !self.ctx.in_template_thought(rest)
    }
}

/// Reads calls from `text`, the end of an answer, `ctx` the state before it (`recent`: the text
/// before it, for cues). Formats with a marker are tried first; the markerless ones only when
/// those give none. Nothing inside reasoning is a call.
fn recover_after(text: &str, ctx: Context, recent: &str, setup: &TextCalls) -> Option<Recovered> {
    let parse_ctx = Ctx {
        tools: &setup.tools,
        end: true,
    };
    for pass in [Pass::Markers, Pass::All] {
        let mut pos = 0;
        let mut ctx = ctx;
        let mut calls = Vec::new();
        let mut prose = String::new();
        let mut format = None;
        loop {
            let Found::Full(opener) = find_opener(text, pos, ctx, recent, setup, pass, true) else {
                prose.push_str(&text[pos..]);
                break;
            };
            let at = opener.at;
            let parsed = opener
                .kinds
                .iter()
                .find_map(|kind| (kind.parse)(&text[at..], &parse_ctx).ok())
                .filter(|parsed| !parsed.calls.is_empty());
            let next = match parsed {
                Some(parsed) if opener.makes(&text[at + parsed.len..]) => {
                    prose.push_str(&text[pos..at]);
                    prose.push_str(&parsed.text);
                    format.get_or_insert(parsed.format);
                    calls.extend(parsed.calls.into_iter().map(|c| setup.tools.finish(c)));
                    let mut cur = Cur::new(&text[at + parsed.len..], true);
                    cur.ws_and_ends();
                    pos = at + parsed.len + cur.pos;
                    ctx = opener.ctx.after_call(&text[..pos]);
                    continue;
                }
                // A call shown, not made: all of it is text, openers inside it too.
                Some(parsed) => {
                    ctx = opener.ctx.after_call(&text[..at + parsed.len]);
                    at + parsed.len
                }
                None => {
                    ctx = opener.ctx;
                    at + unit_len(&mut ctx, text, at)
                }
            };
            prose.push_str(&text[pos..next]);
            pos = next;
        }
        if let Some(format) = format {
            return Some(Recovered {
                calls,
                text: prose,
                format,
            });
        }
    }
    None
}

/// Reads the calls written in a whole answer's text, and the text around them; `None` when it
/// holds none. Reasoning left in the text (`<think>…</think>`, or up to a `</think>` the chat
/// template opened) holds no call.
pub fn recover(text: &str, setup: &TextCalls) -> Option<Recovered> {
    recover_after(text, Context::start(), "", setup)
}

/// The format a text opens a call in, whether or not the call can be read (`mm doctor`).
pub fn written_format(text: &str, setup: &TextCalls) -> Option<Format> {
    let parse_ctx = Ctx {
        tools: &setup.tools,
        end: true,
    };
    let mut pos = 0;
    let mut ctx = Context::start();
    loop {
        let Found::Full(opener) = find_opener(text, pos, ctx, "", setup, Pass::All, true) else {
            return None;
        };
        let at = opener.at;
        let parsed = opener
            .kinds
            .iter()
            .find_map(|k| (k.parse)(&text[at..], &parse_ctx).ok());
        match parsed {
            Some(parsed) if opener.makes(&text[at + parsed.len..]) => return Some(parsed.format),
            Some(parsed) => {
                ctx = opener.ctx.after_call(&text[..at + parsed.len]);
                pos = at + parsed.len;
                continue;
            }
            None => {}
        }
        // A markerless shape that is no call says nothing about the format.
        match opener.kinds.iter().find(|k| !k.markerless) {
            Some(kind) if !opener.quoted => return Some(kind.format),
            _ => {
                ctx = opener.ctx;
                pos = at + unit_len(&mut ctx, text, at);
            }
        }
    }
}

/// Calls written as text in `held` (text from the first possible marker on) for these tool
/// names: the calls and the text left, or `None` when there is no call.
pub fn parse_text_calls(held: &str, known_tools: &[String]) -> Option<(Vec<RawToolCall>, String)> {
    recover(held, &TextCalls::names(known_tools)).map(|r| (r.calls, r.text))
}
