//! The engine knows nothing of its front ends: no module below them (the engine, the model
//! client, the tools, the history, hooks, skills, sessions, the prompt, processes, config — every
//! file of `src/` but the two front ends, the ACP client, `main.rs`, `lib.rs` and the binaries)
//! mentions the ACP layer, the terminal, or the ACP SDK.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `<file> mentions <word>` for each of `words` a file mentions.
fn mentions(files: &[PathBuf], words: &[&str]) -> Vec<String> {
    let mut offenders = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for word in words {
            if text.contains(word) {
                offenders.push(format!("{} mentions {word}", f.display()));
            }
        }
    }
    offenders
}

/// Every file below the front ends.
fn below_the_front_ends() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    rust_files(&root, &mut all);
    let above = [
        root.join("acp"),
        // mm as an ACP client: a protocol adapter like the ACP front end (checked below).
        root.join("agent_client"),
        root.join("term"),
        root.join("bin"),
        root.join("main.rs"),
        root.join("lib.rs"),
    ];
    all.retain(|f| !above.iter().any(|a| f.starts_with(a)));
    all.sort();
    all
}

#[test]
fn no_module_below_the_front_ends_knows_them() {
    let files = below_the_front_ends();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // The modules the rule is about are really among them.
    for must in [
        "engine/mod.rs",
        "model/mod.rs",
        "tools/mod.rs",
        "history.rs",
        "event.rs",
        "hooks.rs",
        "skills.rs",
        "session.rs",
        "prompt.rs",
        "process.rs",
        "config.rs",
    ] {
        assert!(
            files.contains(&root.join(must)),
            "{must} is not checked: {files:?}"
        );
    }
    let forbidden = [
        "crate::acp",
        "crate::term",
        "agent_client_protocol",
        "mm::acp",
        "mm::term",
    ];
    assert_eq!(mentions(&files, &forbidden), Vec::<String>::new());
}

/// The ACP client speaks the protocol but knows neither front end.
#[test]
fn the_acp_client_knows_no_front_end() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/agent_client");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(!files.is_empty(), "src/agent_client holds no file");
    assert_eq!(
        mentions(&files, &["crate::acp", "crate::term"]),
        Vec::<String>::new()
    );
}

/// The one checked writer stands below the tools (the core of the next layout): it knows no
/// tool, no engine, no sandbox (the check is a closure) and no front end.
#[test]
fn the_writer_knows_neither_the_tools_nor_the_sandbox() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/writer");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() >= 2, "src/writer holds {files:?}");
    let forbidden = [
        "crate::tools",
        "crate::engine",
        "crate::sandbox",
        "crate::lsp",
        "crate::mcp",
        "crate::acp",
        "crate::term",
        "crate::agent_client",
    ];
    assert_eq!(mentions(&files, &forbidden), Vec::<String>::new());
}
