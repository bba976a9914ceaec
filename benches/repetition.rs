//! The repetition detector's cost (issue: under 0.5 ms per 1 000 chunks): the 20 000 one-token
//! chunks of the relay benchmark (`bench/acp.sh`), parsed by the stream accumulator with and
//! without the detector. `cargo bench --bench repetition` prints the numbers; under `cargo test`
//! it runs once, small, as a smoke test.

use std::time::{Duration, Instant};

use mm::model::RepeatLimits;
use mm::model::sse::{ChunkAccumulator, SseEvent};

const CHUNKS: usize = 20_000;
const ROUNDS: usize = 15;

/// One-token chunks of varied text: words from a small vocabulary picked by a fixed generator,
/// so the stream is realistic (short pieces, common words again and again) and never a loop.
fn chunks(n: usize) -> Vec<SseEvent> {
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
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let word = WORDS[(state % WORDS.len() as u64) as usize];
            let data = serde_json::json!({"choices": [{"index": 0, "delta": {"content": word}}]});
            SseEvent::Data(data.to_string())
        })
        .collect()
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

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (n, rounds) = if bench { (CHUNKS, ROUNDS) } else { (500, 1) };
    let events = chunks(n);
    let limits = Some(RepeatLimits {
        span: 200,
        count: 10,
    });
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..rounds {
        off.push(run(&events, None));
        on.push(run(&events, limits));
    }
    let (off, on) = (median(off), median(on));
    let per_1000 = |d: Duration| d.as_secs_f64() * 1000.0 / (n as f64 / 1000.0);
    println!("{n} chunks, median of {rounds}:");
    println!(
        "  accumulator without the detector  {:>8.3} ms per 1 000 chunks",
        per_1000(off)
    );
    println!(
        "  accumulator with the detector     {:>8.3} ms per 1 000 chunks",
        per_1000(on)
    );
    println!(
        "  added by the detector             {:>8.3} ms per 1 000 chunks (budget 0.5)",
        per_1000(on.saturating_sub(off))
    );
}
