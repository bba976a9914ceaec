//! Every child mm starts goes through the Supervisor's one `spawn`, which takes a `Fencing`
//! (clippy.toml refuses every other way to start a process in the library): inside the fence
//! the sandbox gave, or `Fencing::outside` with a reason of `Unfenced`. Each place that asks
//! for the outside is listed here with its reason, so that a new one fails this test until it
//! is reviewed and listed; and docs/sandbox.md names every reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

const SANDBOX_DOC: &str = include_str!("../../../../docs/sandbox.md");

/// Where the library asks for a child outside the fence, and why.
const OUTSIDE: [(&str, &str); 2] = [
    // mm's own git for /undo.
    (
        "crates/mm-engine/src/undo/git.rs",
        "Unfenced::UndoSnapshots",
    ),
    // An entry of the user's own with `sandbox = false` (`Sandbox::fence_for`).
    ("crates/mm-tools/src/sandbox/mod.rs", "Unfenced::OptedOut"),
];

/// The folder that holds the workspace's crates.
fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[mm_testkit::test]
fn every_child_outside_the_fence_says_why_at_a_listed_place() {
    let crates = crates();
    let root = crates.parent().unwrap();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // `/` on every system, as the list writes the files.
        let shown = file
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string()
            .replace('\\', "/");
        for (at, _) in text.match_indices("Fencing::outside(") {
            let rest = &text[at + "Fencing::outside(".len()..];
            let why: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == ':' || *c == '_')
                .collect();
            // The definition itself takes a parameter.
            if why != "why" {
                found.insert((shown.clone(), why));
            }
        }
    }
    let listed: BTreeSet<(String, String)> = OUTSIDE
        .iter()
        .map(|(f, w)| (f.to_string(), w.to_string()))
        .collect();
    assert_eq!(found, listed);
}

#[mm_testkit::test]
fn docs_sandbox_md_names_every_reason_to_run_outside_the_fence() {
    for why in mm_tools::sandbox::Unfenced::ALL {
        assert!(
            SANDBOX_DOC.contains(&format!("`{}`", why.name())),
            "docs/sandbox.md does not name {}",
            why.name()
        );
    }
}
