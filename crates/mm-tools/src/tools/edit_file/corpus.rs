//! The table-driven test over the corpus of real failed edits (cases.rs): every case through the
//! same function the tool runs (decode, apply, encode), counted as landed, refused as required,
//! missed or wrong. The goal of issue 37: nine in ten land, every must-refuse is refused, and no
//! edit is ever wrong. `cargo test -p mm-tools --lib edit_file::corpus -- --nocapture` prints
//! the figures by source and by kind.

use std::collections::BTreeMap;

use super::apply::{Outcome, apply};
use super::cases::{CASES, Case, Expect};
use super::decode;

/// What the tool does with a case's file, in bytes.
#[derive(Debug, PartialEq)]
enum Did {
    Wrote(Vec<u8>),
    Already,
    Refused,
}

fn run(case: &Case) -> Did {
    let Ok(decoded) = decode::decode(case.file.to_vec()) else {
        return Did::Refused;
    };
    match apply(decoded.text, case.old, case.new, case.all, "f") {
        Outcome::Edited { text, .. } => match decode::encode(&text, decoded.encoding) {
            Ok(bytes) if bytes == case.file => Did::Refused,
            Ok(bytes) => Did::Wrote(bytes),
            Err(_) => Did::Refused,
        },
        Outcome::Already(_) => Did::Already,
        Outcome::Refused(_) => Did::Refused,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    Landed,
    RefusedAsRequired,
    Missed,
    Wrong,
}

fn verdict(case: &Case, did: &Did) -> Verdict {
    match (case.expect, did) {
        (Expect::Lands(want), Did::Wrote(got)) if got == want => Verdict::Landed,
        (Expect::Same, Did::Already) => Verdict::Landed,
        (Expect::Refuses, Did::Refused | Did::Already) => Verdict::RefusedAsRequired,
        (_, Did::Wrote(_)) => Verdict::Wrong,
        (Expect::Lands(_) | Expect::Same, Did::Refused | Did::Already) => Verdict::Missed,
    }
}

/// Where a case came from, for the figures: the project of its URL or repository.
fn origin(source: &str) -> String {
    if source.starts_with("mm issue") {
        return "mm issues 37, 41 (their own examples)".into();
    }
    let s = source.trim_start_matches("https://github.com/");
    let repo = s.split([' ', '/']).take(2).collect::<Vec<_>>().join("/");
    if source.starts_with("https://") {
        format!("{repo} (report)")
    } else {
        format!("{repo} (fixture)")
    }
}

#[test]
fn the_corpus_lands_nine_in_ten_and_no_edit_is_wrong() {
    let mut by_origin: BTreeMap<String, [usize; 5]> = BTreeMap::new();
    let mut by_kind: BTreeMap<String, [usize; 5]> = BTreeMap::new();
    let (mut to_land, mut to_refuse) = (0, 0);
    let (mut landed, mut refused, mut wrong) = (Vec::new(), Vec::new(), Vec::new());
    let mut missed = Vec::new();
    for case in CASES {
        let v = verdict(case, &run(case));
        let slot = match v {
            Verdict::Landed => 0,
            Verdict::RefusedAsRequired => 1,
            Verdict::Missed => 2,
            Verdict::Wrong => 3,
        };
        for (map, key) in [
            (&mut by_origin, origin(case.source)),
            (&mut by_kind, format!("{:?}", case.kind)),
        ] {
            let row = map.entry(key).or_default();
            row[slot] += 1;
            row[4] += 1;
        }
        match case.expect {
            Expect::Refuses => to_refuse += 1,
            Expect::Lands(_) | Expect::Same => to_land += 1,
        }
        match v {
            Verdict::Landed => landed.push(case.name),
            Verdict::RefusedAsRequired => refused.push(case.name),
            Verdict::Missed => missed.push(case.name),
            Verdict::Wrong => wrong.push(case.name),
        }
    }
    let traps = CASES.iter().filter(|c| c.trap).count();
    let table = |title: &str, map: &BTreeMap<String, [usize; 5]>| {
        let mut t = format!("{title:<48} cases landed refused missed wrong\n");
        for (k, r) in map {
            t.push_str(&format!(
                "{k:<48} {:>5} {:>6} {:>7} {:>6} {:>5}\n",
                r[4], r[0], r[1], r[2], r[3]
            ));
        }
        t
    };
    // Printed for the figures (shown with --nocapture).
    eprintln!(
        "{}\n{}\ncorpus: {} cases, {traps} where a lenient matcher is wrong; landed {}/{to_land}, refused as required {}/{to_refuse}, wrong {}\nmissed: {missed:?}",
        table("by source", &by_origin),
        table("by kind", &by_kind),
        CASES.len(),
        landed.len(),
        refused.len(),
        wrong.len(),
    );
    assert!(traps * 3 >= CASES.len(), "a third of the cases are traps");
    assert_eq!(wrong, Vec::<&str>::new(), "wrong edits");
    assert_eq!(refused.len(), to_refuse, "every must-refuse is refused");
    assert!(
        landed.len() * 10 >= to_land * 9,
        "nine in ten land: {} of {to_land}; missed {missed:?}",
        landed.len()
    );
}

/// Each case alone, so that a failure names it and shows the file it wrote.
#[test]
fn every_case_by_name() {
    let mut failures = Vec::new();
    for case in CASES {
        let did = run(case);
        match verdict(case, &did) {
            Verdict::Landed | Verdict::RefusedAsRequired | Verdict::Missed => {}
            Verdict::Wrong => failures.push(format!(
                "{} ({}): wrote {:?}",
                case.name,
                case.source,
                match &did {
                    Did::Wrote(b) => String::from_utf8_lossy(b).into_owned(),
                    Did::Already | Did::Refused => String::new(),
                }
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
