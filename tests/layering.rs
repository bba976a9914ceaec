//! The engine knows nothing of its front ends: no file of the engine, the model client, the
//! tools or the history mentions the ACP layer, the terminal, or the ACP SDK.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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

#[test]
fn engine_model_tools_and_history_do_not_know_the_front_ends() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for d in ["engine", "model", "tools"] {
        rust_files(&root.join(d), &mut files);
    }
    files.push(root.join("history.rs"));
    files.push(root.join("event.rs"));
    assert!(
        files.len() >= 8,
        "expected the engine's files, found {files:?}"
    );
    let forbidden = [
        "crate::acp",
        "crate::term",
        "agent_client_protocol",
        "mm::acp",
        "mm::term",
    ];
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for word in forbidden {
            if text.contains(word) {
                offenders.push(format!("{} mentions {word}", f.display()));
            }
        }
    }
    assert_eq!(offenders, Vec::<String>::new());
}
