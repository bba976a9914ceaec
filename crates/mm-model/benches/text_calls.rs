//! The cost of recovering tool calls written as text, per streamed chunk: the stream accumulator
//! with text calls off and on, on (1) 20 000 one-token chunks of prose full of the characters
//! that may open a call (`<`, `[`, `{`, backticks, line starts), and (2) answers that write a
//! call in each of several formats, with a long argument (a file's content), in chunks of a few
//! characters. `cargo bench --bench text_calls` prints the figures and exits 1 when the time
//! added per 1 000 chunks (the least disturbed round) is over its target; under `cargo test` it
//! runs once, small, as a smoke test.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use mm_model::sse::{ChunkAccumulator, SseEvent};
use mm_model::text_calls::{TextCalls, Tools};
use serde_json::{Value, json};

const CHUNKS: usize = 20_000;
const ROUNDS: usize = 15;
/// Added by text-call recovery on prose, ms per 1 000 chunks.
const PROSE_TARGET_MS: f64 = 1.0;
/// Added while a call is being written, ms per 1 000 chunks.
const CALL_TARGET_MS: f64 = 5.0;

/// One-token chunks of prose from a small vocabulary picked by a fixed generator, rich in the
/// characters that may start an opener.
fn prose(n: usize) -> Vec<String> {
    const WORDS: &[&str] = &[
        " the",
        " file",
        " is",
        " a",
        " `main`",
        ".",
        ",",
        "\n",
        "\n\n",
        " <",
        " >",
        " [0]",
        " {x}",
        " if",
        " a < b",
        " list[i]",
        " fn",
        "()",
        " {",
        " }",
        " [link](url)",
        " and",
        " we",
        " call",
        " it",
        " with",
        " `x`",
        "\n- ",
        " error",
        " Action",
        " for",
        " fix",
    ];
    common::pick(WORDS, n)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Answers that write one call each, with a long file content, in pieces of 4 characters:
/// the pieces, and where each answer ends.
fn calls(content_len: usize) -> (Vec<String>, Vec<usize>) {
    let content: String = "let x = vec![1, 2, 3]; // {a} <b> [c]\n"
        .chars()
        .cycle()
        .take(content_len)
        .collect();
    let args = json!({"path": "src/big.rs", "content": content});
    let escaped = args.to_string();
    let answers = [
        format!(
            "I'll write the file.\n<tool_call>\n{{\"name\": \"write_file\", \"arguments\": {escaped}}}\n</tool_call>"
        ),
        format!(
            "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/big.rs\n</parameter>\n<parameter=content>\n{content}\n</parameter>\n</function>\n</tool_call>"
        ),
        format!("[TOOL_CALLS]write_file[ARGS]{escaped}"),
        format!("{{\"name\": \"write_file\", \"parameters\": {escaped}}}"),
    ];
    let mut pieces = Vec::new();
    let mut ends = Vec::new();
    for answer in answers {
        let chars: Vec<char> = answer.chars().collect();
        pieces.extend(chars.chunks(4).map(|c| c.iter().collect::<String>()));
        ends.push(pieces.len());
    }
    (pieces, ends)
}

fn events(pieces: &[String]) -> Vec<SseEvent> {
    pieces
        .iter()
        .map(|p| {
            SseEvent::Data(json!({"choices": [{"index": 0, "delta": {"content": p}}]}).to_string())
        })
        .collect()
}

fn setup() -> TextCalls {
    let tool = |name: &str, props: Value| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}});
    let defs = vec![
        tool("bash", json!({"command": {"type": "string"}})),
        tool(
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
        ),
    ];
    TextCalls {
        tools: Tools::from_wire(&defs, &["bash".into(), "write_file".into()]),
        family: None,
    }
}

/// Feeds every event; an answer ends at each `finish` index (the accumulator starts again).
fn run(events: &[SseEvent], text_calls: Option<&TextCalls>, answers: &[usize]) -> Duration {
    let started = Instant::now();
    let mut from = 0;
    for &end in answers {
        let mut acc = ChunkAccumulator::with_text_calls(text_calls.cloned());
        for event in &events[from..end] {
            std::hint::black_box(acc.feed(event).unwrap_or_default());
        }
        let (_, response) = acc.finish();
        if text_calls.is_some() && answers.len() > 1 {
            assert_eq!(
                response.tool_calls.len(),
                1,
                "the benchmark's call was not recovered: {:?}",
                response.text.get(..200)
            );
        }
        std::hint::black_box(response);
        from = end;
    }
    started.elapsed()
}

/// (median, minimum) of the time added, ms per 1 000 chunks.
fn added(on: &mut [Duration], off: &mut [Duration], chunks: usize) -> (f64, f64) {
    on.sort();
    off.sort();
    let per_1000 = |d: Duration| d.as_secs_f64() * 1000.0 / (chunks as f64 / 1000.0);
    let median = per_1000(on[on.len() / 2].saturating_sub(off[off.len() / 2]));
    let least = per_1000(on[0].saturating_sub(off[0]));
    (median, least)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (n, content, rounds) = if bench {
        (CHUNKS, 8_000, ROUNDS)
    } else {
        (500, 400, 1)
    };
    let setup = setup();
    let prose_events = events(&prose(n));
    let (call_pieces, answers) = calls(content);
    let call_events = events(&call_pieces);
    let (mut prose_on, mut prose_off, mut call_on, mut call_off) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let whole = [prose_events.len()];
        if round % 2 == 0 {
            prose_on.push(run(&prose_events, Some(&setup), &whole));
            prose_off.push(run(&prose_events, None, &whole));
        } else {
            prose_off.push(run(&prose_events, None, &whole));
            prose_on.push(run(&prose_events, Some(&setup), &whole));
        }
        call_on.push(run(&call_events, Some(&setup), &answers));
        call_off.push(run(&call_events, None, &answers));
    }
    let (prose_median, prose_least) = added(&mut prose_on, &mut prose_off, prose_events.len());
    let (call_median, call_least) = added(&mut call_on, &mut call_off, call_events.len());
    println!(
        "{} prose chunks and {} call chunks, {rounds} rounds; ms added per 1 000 chunks:",
        prose_events.len(),
        call_events.len()
    );
    println!("                                   median   least   target");
    println!(
        "  prose                          {prose_median:>8.3} {prose_least:>7.3} {PROSE_TARGET_MS:>8.3}"
    );
    println!(
        "  calls being written            {call_median:>8.3} {call_least:>7.3} {CALL_TARGET_MS:>8.3}"
    );
    if bench && (prose_least > PROSE_TARGET_MS || call_least > CALL_TARGET_MS) {
        println!("over target");
        std::process::exit(1);
    }
}
