//! Benchmark of `edit_file` on a 10 MB file (bench/edit.sh runs it in release): each call is
//! timed from the call to its result, reading and writing the file included. The worst calls
//! try every strategy — `old_text` matches nothing, so the exact search, every whole-line key,
//! the blank-line match, the `...` pieces, the other readings (escaped, numbered, patch) and the
//! already-applied check all run, then the closest lines are searched — and must stay under 50 ms
//! of CPU time (the wall-clock time is printed too: on a busy machine it counts the others).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mm_tools::tools::ToolOutput;
use mm_tools::tools::edit_file::EditFile;
use serde_json::{Value, json};

mod common;

/// The CPU time this thread has used: on a shared machine, wall-clock time measures the other
/// processes too.
#[cfg(unix)]
fn cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Elsewhere (the Windows build compiles the examples; bench/edit.sh runs on Unix) the CPU time
/// is not read: the bench's CPU column is zero there and only its wall-clock time counts.
#[cfg(not(unix))]
fn cpu_time() -> Duration {
    Duration::ZERO
}

async fn run(cwd: &Path, args: Value) -> (Duration, Duration, ToolOutput) {
    let tool = EditFile::default();
    let (t, cpu) = (Instant::now(), cpu_time());
    let out = common::run(&tool, cwd, args).await;
    (t.elapsed(), cpu_time() - cpu, out)
}

/// About 10 MB of source-like text: functions with bodies, comments, blank lines, tabs.
fn big_file() -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 10 * 1024 * 1024 {
        let _ = write!(
            s,
            "/// Handles request kind {i}.\nfn handle_{i}(req: &Request, ctx: &mut Context) -> Result<Response, Error> {{\n\tlet id = req.id({i});\n\tif ctx.seen(id) {{\n\t\treturn Err(Error::Duplicate(id));\n\t}}\n\tctx.log(\"kind {i} from {{}}\", req.peer());\n\n\tOk(Response::new(id, {}))\n}}\n\n",
            i * 7 % 1000
        );
        i += 1;
    }
    s
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let text = big_file();
    println!(
        "file: {:.1} MB, {} lines",
        text.len() as f64 / 1048576.0,
        text.lines().count()
    );
    let nothing = "fn handle_x(req: &Request) -> Response {\n    let id = req.id(-1);\n    ...\n    Ok(Response::empty(\\\"none\\\"))\n}";
    let cases: [(&str, Value); 7] = [
        (
            "exact, deep in the file",
            json!({"old_text": "\tlet id = req.id(30000);", "new_text": "\tlet id = req.id(30000).max(1);"}),
        ),
        (
            "tabs typed as spaces (indentation)",
            json!({"old_text": "    let id = req.id(30001);\n    if ctx.seen(id) {", "new_text": "    let id = req.id(30001);\n    if ctx.seen(id) || ctx.closed() {"}),
        ),
        (
            "every strategy, then the closest lines",
            json!({"old_text": nothing, "new_text": nothing.replace("-1", "-2")}),
        ),
        (
            "every strategy, then a mistyped line's closest lines",
            json!({"old_text": "\tctx.lgo(\"kind 99999 from {}\", req.peer());", "new_text": "\tctx.log(\"kind 99999\");"}),
        ),
        (
            "every strategy, numbered old_text",
            json!({"old_text": "1: fn handle_x() {\n2:     nothing();\n3: }", "new_text": "1: fn handle_x() {}"}),
        ),
        (
            "every strategy, a patch as old_text",
            json!({"old_text": "@@ -1,3 +1,3 @@\n fn handle_x() {\n-    nothing();\n+    something();\n }", "new_text": ""}),
        ),
        (
            "ambiguous everywhere (refused)",
            json!({"old_text": "\t}\n", "new_text": "\t}\n\t// end\n"}),
        ),
    ];
    let only = std::env::args().nth(1);
    let mut worst = Duration::ZERO;
    for (name, mut args) in cases {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        std::fs::write(cwd.join("big.rs"), &text).unwrap();
        args["path"] = json!("big.rs");
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        let mut first = None;
        for _ in 0..7 {
            let (wall, cpu, out) = run(cwd, args.clone()).await;
            walls.push(wall);
            cpus.push(cpu);
            first.get_or_insert(out);
            std::fs::write(cwd.join("big.rs"), &text).unwrap();
        }
        walls.sort();
        cpus.sort();
        let (wall, cpu) = (walls[walls.len() / 2], cpus[cpus.len() / 2]);
        worst = worst.max(cpu);
        let out = first.unwrap();
        let line = out.text.lines().next().unwrap_or("");
        println!(
            "{name}: median {:.1} ms CPU, {:.1} ms wall ({:?}: {})",
            cpu.as_secs_f64() * 1e3,
            wall.as_secs_f64() * 1e3,
            out.outcome,
            &line[..line.len().min(80)]
        );
    }
    println!(
        "worst median: {:.1} ms of CPU time (budget 50 ms)",
        worst.as_secs_f64() * 1e3
    );
    if worst > Duration::from_millis(50) {
        std::process::exit(1);
    }
}
