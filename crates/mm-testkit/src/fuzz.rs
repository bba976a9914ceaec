//! Fuzz targets over mm's parsers of outside input, shared by the property tests
//! (crates/mm/tests/fuzz_props.rs) and the fuzz driver (examples/fuzz.rs, bench/fuzz.sh): each
//! takes any bytes, must not panic, and checks what holds for every input — an oracle or an invariant, and
//! a bound on the memory it allocates. The bound is measured by [`Counting`], which a binary
//! installs as its global allocator (elsewhere [`peak_during`] measures nothing and every bound
//! holds).
//!
//! Uses the public API of mm's crates only.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use mm_acp::transport::{EXCERPT_BYTES, Line, for_sdk, read_line};
use mm_model::StreamEvent;
use mm_model::sse::{ChunkAccumulator, SseEvent, SseParser, parse_stream};
use mm_model::text_calls::{Family, TextCallFilter, TextCalls, Tools, parse_text_calls};

// ------------------------------------------------------------------ counting allocator

thread_local! {
    /// Bytes allocated and not yet freed by this thread (frees of another thread's blocks
    /// count here too, so it can go below zero).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting each thread's live bytes and their peak.
pub struct Counting;

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

// SAFETY: every call is passed to `System` unchanged; the counting touches only const-initialised
// thread-locals without destructors, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Runs `f` and returns its result and the most this thread had allocated at once during it,
/// beyond what it held before (0 when [`Counting`] is not the global allocator).
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let out = f();
    let peak = PEAK.with(Cell::get) - start;
    (out, peak.max(0) as usize)
}

/// Panics when `f` allocated more than `limit` bytes at once.
fn bounded<T>(what: &str, input_len: usize, limit: usize, f: impl FnOnce() -> T) -> T {
    let (out, peak) = peak_during(f);
    assert!(
        peak <= limit,
        "{what}: {peak} bytes allocated at once for {input_len} bytes of input (bound {limit})"
    );
    out
}

/// The usual bound of a parser: a multiple of its input, plus room for its fixed structures.
fn linear(len: usize, factor: usize) -> usize {
    factor * len + 256 * 1024
}

/// Deterministic cut points for feeding an input in pieces, taken from the input itself.
fn cuts(data: &[u8], len: usize) -> Vec<usize> {
    let mut seed = data.iter().fold(0x9e37_79b9_7f4a_7c15_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut at = Vec::new();
    let mut pos = 0;
    while pos < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        pos += 1 + (seed % 17) as usize;
        if pos < len {
            at.push(pos);
        }
    }
    at
}

// ------------------------------------------------------------------ the targets

/// A fuzz target: panics when its input shows a fault.
pub type Target = fn(&[u8]);

/// The fuzz targets by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("acp-lines", acp_lines),
    ("sse", sse),
    ("text-calls", text_calls),
    ("session-file", session_file),
    ("config", config),
    ("skill", skill),
];

/// What the ACP line reader must make of `input` with a cap of `cap` bytes: the input cut at
/// each `\n` (a last piece without one is a line too), each piece within the cap whole (a `\r`
/// before its newline dropped), each longer one as its first bytes and its length.
pub fn expected_lines(input: &[u8], cap: usize) -> Vec<Line> {
    let mut pieces: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if input.is_empty() || input.ends_with(b"\n") {
        pieces.pop();
    }
    pieces
        .into_iter()
        .map(|p| {
            if p.len() <= cap {
                let p = p.strip_suffix(b"\r").unwrap_or(p);
                Line::Whole(p.to_vec())
            } else {
                Line::TooLong {
                    head: p[..p.len().min(EXCERPT_BYTES)].to_vec(),
                    bytes: p.len() as u64,
                }
            }
        })
        .collect()
}

/// Reads every line of `input` with the ACP transport's reader (`cap` bytes, reads of `chunk`
/// bytes), each read bounded in memory by the cap, whatever the line's length.
pub fn read_lines(input: &[u8], cap: usize, chunk: usize) -> Vec<Line> {
    let mut reader = tokio::io::BufReader::with_capacity(chunk, input);
    let mut lines = Vec::new();
    loop {
        // The line's buffer may double past the cap once; the reader's own buffer is apart.
        let limit = 2 * cap + 2 * EXCERPT_BYTES + 4096;
        let next = bounded("acp line reader", input.len(), limit, || {
            futures::executor::block_on(read_line(&mut reader, cap))
        });
        match next.expect("reading from memory cannot fail") {
            Some(line) => lines.push(line),
            None => return lines,
        }
    }
}

/// The ACP line reader against its oracle, and what the SDK is handed for each line.
pub fn acp_lines(data: &[u8]) {
    let (cap, chunk, input) = match data {
        [a, b, rest @ ..] => (1 + usize::from(*a) * 4, 1 + usize::from(*b % 64), rest),
        _ => (16, 4, data),
    };
    let lines = read_lines(input, cap, chunk);
    assert_eq!(
        lines,
        expected_lines(input, cap),
        "cap {cap}, reads of {chunk}"
    );
    for line in lines {
        let too_long = matches!(line, Line::TooLong { .. });
        let whole = match &line {
            Line::Whole(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Line::TooLong { .. } => None,
        };
        let (text, log) = for_sdk(line, cap);
        assert_eq!(log.is_some(), too_long);
        let json = serde_json::from_str::<serde_json::Value>(&text).is_ok();
        match whole {
            // A line is handed on as it came when it is JSON or short, else shortened.
            Some(w) if w.len() <= EXCERPT_BYTES || json => assert_eq!(text, w),
            Some(_) | None => {
                assert!(!json, "a stand-in must never be JSON: {text:?}");
                assert!(text.len() <= 4 * EXCERPT_BYTES + 200, "{text:?}");
            }
        }
    }
}

/// The SSE parser gives the same events whatever the chunking; the accumulator never panics,
/// and what it streams as text is what the response stores.
pub fn sse(data: &[u8]) {
    bounded("sse", data.len(), linear(data.len(), 16), || {
        let mut whole = SseParser::new();
        let mut expected = whole.feed(data);
        expected.extend(whole.finish());
        let mut pieces = SseParser::new();
        let mut got = Vec::new();
        let mut from = 0;
        for at in cuts(data, data.len()).into_iter().chain([data.len()]) {
            got.extend(pieces.feed(&data[from..at]));
            from = at;
        }
        got.extend(pieces.finish());
        assert_eq!(got, expected, "the events depend on the chunking");
        for names in [
            Vec::new(),
            vec!["bash".to_string(), "read_file".to_string()],
        ] {
            accumulate(&expected, &names);
            let _ = parse_stream(data, &names);
        }
    });
}

fn accumulate(events: &[SseEvent], names: &[String]) {
    let mut acc = ChunkAccumulator::new(names);
    let mut shown = String::new();
    let mut take = |events: Vec<StreamEvent>| {
        for e in events {
            match e {
                StreamEvent::Text(t) => shown.push_str(&t),
                StreamEvent::Thought(_) | StreamEvent::Waiting(_) => {}
            }
        }
    };
    for event in events {
        match acc.feed(event) {
            Ok(out) => take(out),
            Err(_) => return,
        }
    }
    let (tail, response) = acc.finish();
    take(tail);
    assert_eq!(
        shown, response.text,
        "streamed text differs from the stored text"
    );
}

/// The tools the text-call target offers: names with schemas, so coercion runs too.
fn fuzz_tools() -> Tools {
    let tool = |name: &str, props: serde_json::Value| {
        serde_json::json!({"type": "function", "function": {"name": name,
            "parameters": {"type": "object", "properties": props}}})
    };
    let defs = vec![
        tool(
            "bash",
            serde_json::json!({"command": {"type": "string"}, "timeout": {"type": "integer"}}),
        ),
        tool(
            "read_file",
            serde_json::json!({"path": {"type": "string"}, "all": {"type": "boolean"}, "lines": {"type": "array"}}),
        ),
    ];
    Tools::from_wire(&defs, &["bash".to_string(), "read_file".to_string()])
}

/// The families the target tries, one per input (its first byte picks): none, and those that
/// enable forms of their own.
const FAMILIES: &[Option<Family>] = &[
    None,
    Some(Family::Llama),
    Some(Family::Functionary),
    Some(Family::Qwen),
    Some(Family::Xlam),
];

/// The text-call filter splits its input without losing or adding a byte, however it is fed
/// and whatever it knows of the tools and the family; reading what it held never panics, and
/// what it reads is bounded by it.
pub fn text_calls(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    bounded("text calls", data.len(), linear(data.len(), 16), || {
        let family = FAMILIES[data.first().map_or(0, |b| *b as usize) % FAMILIES.len()];
        let setups = [
            TextCalls::default(),
            TextCalls {
                tools: fuzz_tools(),
                family,
            },
        ];
        for setup in setups {
            let mut filter = TextCallFilter::with(setup);
            let mut out = String::new();
            let mut from = 0;
            let ends = cuts(data, text.len())
                .into_iter()
                .filter(|at| text.is_char_boundary(*at))
                .chain([text.len()]);
            for at in ends {
                out.push_str(&filter.push(&text[from..at]));
                from = at;
            }
            let ending = filter.end();
            out.push_str(&ending.pending);
            out.push_str(&ending.held);
            assert_eq!(out, text, "the filter lost or added text");
            if let Some(recovered) = ending.recovered {
                assert!(!recovered.calls.is_empty());
                assert!(recovered.text.len() <= ending.held.len(), "{recovered:?}");
                for call in recovered.calls {
                    assert!(
                        call.arguments.len() <= ending.held.len() * 6 + 2,
                        "{call:?}"
                    );
                }
            }
        }
        let known = ["bash".to_string(), "read_file".to_string()];
        if let Some((calls, _rest)) = parse_text_calls(&text, &known) {
            for call in calls {
                assert!(call.arguments.len() <= text.len() * 6 + 2, "{call:?}");
            }
        }
    });
}

/// A session file that loads is written back to the same bytes' meaning.
pub fn session_file(data: &[u8]) {
    let path = Path::new("fuzz.json");
    bounded("session file", data.len(), linear(data.len(), 32), || {
        if let Ok(file) = mm_core::session::parse(path, data) {
            let again =
                mm_core::session::parse(path, &mm_core::session::encode(&file).unwrap()).unwrap();
            assert_eq!(again, file);
        }
    });
}

/// The configuration loader answers any text with a configuration or one error.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    bounded(
        "config",
        data.len(),
        // A hook's `match` pattern compiles to a regex of up to 1 MB (mm_core::config::hook_pattern),
        // and even a one-letter pattern costs the regex crate ~350 kB of tables.
        linear(data.len(), 64) + 3 * 1024 * 1024,
        || match mm_core::config::from_text(Path::new("fuzz.toml"), &text) {
            Ok(c) => assert!(c.max_steps >= 1),
            Err(e) => assert!(!e.to_string().is_empty()),
        },
    );
}

/// A skill's front matter: a skill or one error, in memory bounded by the file's size (YAML
/// aliases must not expand without end).
pub fn skill(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    bounded(
        "skill",
        data.len(),
        linear(data.len(), 64),
        || match mm_core::skills::parse_skill(&text, Path::new("/skills/fuzz"), "fuzz") {
            Ok(s) => {
                assert!(mm_core::skills::valid_name(&s.name), "{s:?}");
                assert!(!s.description.is_empty());
                assert!(!s.description.contains('\n'));
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        },
    );
}
