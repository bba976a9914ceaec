//! The repetition detector's cost (issue: under 0.5 ms per 1 000 chunks): the 20 000 one-token
//! chunks of the relay benchmark (`bench/acp.sh`), parsed by the stream accumulator with and
//! without the detector. `cargo bench --bench repetition` prints the numbers and exits 1 when the
//! time the detector adds (the least disturbed round) is over its budget; under `cargo test` it
//! runs once, small, as a smoke test.
// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use std::time::{Duration, Instant};

use mm_core::config::RepeatLimits;
use mm_model::repetition::RepetitionDetector;
use mm_model::sse::{ChunkAccumulator, SseEvent};

const CHUNKS: usize = 20_000;
const ROUNDS: usize = 25;

const LIMITS: RepeatLimits = RepeatLimits {
    span: 200,
    count: 10,
};

/// One-token chunks of varied text: words from a small vocabulary picked by a fixed generator,
/// so the stream is realistic (short pieces, common words again and again) and never a loop.
fn words(n: usize) -> Vec<&'static str> {
    const WORDS: &[&str] = &[
        " the",
        " file",
        " is",
        " a",
        " function",
        " that",
        " returns",
        " value",
        "\n",
        " and",
        " we",
        " call",
        " it",
        " with",
        " `main`",
        ".",
        ",",
        " test",
        " build",
        " error",
        " fix",
        " line",
        " 42",
        " in",
        " src",
        "/lib",
        ".rs",
        " because",
        " of",
        " type",
        "::",
        "()",
    ];
    common::pick(WORDS, n)
}

fn chunks(words: &[&str]) -> Vec<SseEvent> {
    words
        .iter()
        .map(|word| {
            let data = serde_json::json!({"choices": [{"index": 0, "delta": {"content": word}}]});
            SseEvent::Data(data.to_string())
        })
        .collect()
}

/// The detector alone, on the same words.
fn detect(words: &[&str]) -> Duration {
    let started = Instant::now();
    let mut d = RepetitionDetector::new(LIMITS);
    for word in words {
        assert!(
            d.text(word).is_none(),
            "the benchmark's stream tripped the detector"
        );
    }
    started.elapsed()
}

fn run(events: &[SseEvent], limits: Option<RepeatLimits>) -> Duration {
    let started = Instant::now();
    let mut acc = ChunkAccumulator::new(&[]).with_repetition(limits);
    for event in events {
        let out = acc.feed(event).unwrap_or_default();
        std::hint::black_box(out);
    }
    assert!(
        acc.repeated().is_none(),
        "the benchmark's stream tripped the detector"
    );
    std::hint::black_box(acc.finish());
    started.elapsed()
}

/// (median, minimum): the minimum is the run least disturbed by other work on the machine.
fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0])
}

/// What the detector may add per 1 000 chunks, in ms.
const BUDGET_MS: f64 = 0.5;

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (n, rounds) = if bench { (CHUNKS, ROUNDS) } else { (500, 1) };
    let words = words(n);
    let events = chunks(&words);
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut alone = Vec::new();
    // Which run comes first in a round changes its time a little: alternate.
    for round in 0..rounds {
        if round % 2 == 0 {
            on.push(run(&events, Some(LIMITS)));
            off.push(run(&events, None));
        } else {
            off.push(run(&events, None));
            on.push(run(&events, Some(LIMITS)));
        }
        alone.push(detect(&words));
    }
    let (off, off_min) = stats(off);
    let (on, on_min) = stats(on);
    let (alone, alone_min) = stats(alone);
    let per_1000 = |d: Duration| d.as_secs_f64() * 1000.0 / (n as f64 / 1000.0);
    println!("{n} chunks, {rounds} rounds, ms per 1 000 chunks:     median   minimum");
    println!(
        "  accumulator without the detector      {:>8.3}  {:>8.3}",
        per_1000(off),
        per_1000(off_min)
    );
    println!(
        "  accumulator with the detector         {:>8.3}  {:>8.3}",
        per_1000(on),
        per_1000(on_min)
    );
    let added_least = per_1000(on_min.saturating_sub(off_min));
    println!(
        "  added by the detector (budget {BUDGET_MS})    {:>8.3}  {:>8.3}",
        per_1000(on.saturating_sub(off)),
        added_least
    );
    println!(
        "  the detector alone, same words        {:>8.3}  {:>8.3}",
        per_1000(alone),
        per_1000(alone_min)
    );
    if bench && added_least > BUDGET_MS {
        println!("over budget");
        std::process::exit(1);
    }
}
