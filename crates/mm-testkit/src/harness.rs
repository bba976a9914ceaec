//! The harness of the suites (`harness = false` in their `[[test]]`, `fn main() ->
//! ExitCode { mm_testkit::harness::main() }`): libtest-mimic, so that a test that finds at run
//! time that it cannot run here — a missing acpx, Python SDK, language server, model server,
//! Landlock, namespace — says so with [`skip`] and is counted apart, as ignored with its reason,
//! instead of passing having done nothing. Under `CI=true`, where everything is installed, such a
//! test fails. On Windows that means the job must have Git for Windows (its `bash.exe`, which mm
//! runs commands and hooks with, and `sh` and `git` on `PATH`), `python3` (the fake MCP servers)
//! and a pseudo-console (ConPTY); `scripts/windows-test.sh` runs the Windows build under Wine,
//! which has none of these, without `CI=true`, each such test skipped with its reason.
//!
//! A test is a function with `#[mm_testkit::test]` (the macro of crates/mm-testkit-macros), which
//! puts a [`Test`] in the list this harness runs. The names are libtest's (`module::function`),
//! and so are the command line's filters and flags (`--exact`, `--ignored`, `--list`, …);
//! libtest-mimic does not capture what a test prints.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use libtest_mimic::{Arguments, Completion, Failed, Trial};

pub use inventory;
pub use tokio;

/// One test of the suite, as `#[mm_testkit::test]` writes it.
pub struct Test {
    /// `module_path!()` where it is written (the suite's crate first).
    pub module: &'static str,
    pub name: &'static str,
    /// `#[ignore = "why"]`: run only when asked (`--ignored`, `--include-ignored`); otherwise
    /// reported as ignored with the reason.
    pub ignored: Option<&'static str>,
    pub run: fn(),
}

inventory::collect!(Test);

/// What [`skip`] unwinds with.
struct Skip(String);

/// Ends the running test as skipped: what it needs is not here (`reason` says what, and how to
/// install it). The harness reports it as ignored with the reason, and lists it after the
/// summary; under `CI=true` it fails instead. Call it from the test's own thread (its body,
/// not a spawned task).
pub fn skip(reason: impl Into<String>) -> ! {
    // resume_unwind: no panic message, the harness says why.
    std::panic::resume_unwind(Box::new(Skip(reason.into())))
}

/// `CI=true`: every test must run.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

impl Test {
    /// libtest's name: the module path below the suite's crate, then the function.
    fn full_name(&self) -> String {
        match self.module.split_once("::") {
            Some((_, module)) => format!("{module}::{}", self.name),
            None => self.name.to_string(),
        }
    }
}

thread_local! {
    /// Where the last panic of this thread was raised (the panic hook of [`main`]).
    static PANICKED_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs the suite's tests as the command line asks, then lists those that were skipped and why.
pub fn main() -> ExitCode {
    // The default hook still prints every panic; this one also notes where, for a panic whose
    // message is empty (`run_one`). `skip` unwinds without a panic: it is not noted.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let at = info.location().map(|l| l.to_string());
        PANICKED_AT.with(|p| *p.borrow_mut() = at);
        default_hook(info);
    }));
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|n| n.parse().ok());
    }
    let skipped: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    // libtest-mimic reports a flagged test as `ignored` without its reason: one that is not
    // asked for runs as a trial that ends at once, ignored with it.
    let asked_ignored = args.ignored || args.include_ignored || args.list;
    let mut trials: Vec<Trial> = inventory::iter::<Test>
        .into_iter()
        .map(|test| {
            let name = test.full_name();
            if let (Some(why), false) = (test.ignored, asked_ignored) {
                return Trial::ignorable_test(name, move || Ok(Completion::ignored_with(why)));
            }
            let run = test.run;
            let skipped = Arc::clone(&skipped);
            let trial_name = name.clone();
            Trial::ignorable_test(trial_name, move || run_one(&name, run, &skipped))
                .with_ignored_flag(test.ignored.is_some())
        })
        .collect();
    trials.sort_by(|a, b| a.name().cmp(b.name()));
    let conclusion = libtest_mimic::run(&args, trials);
    let skipped = skipped.lock().map(|s| s.clone()).unwrap_or_default();
    report_skipped(skipped);
    conclusion.exit_code()
}

fn run_one(
    name: &str,
    run: fn(),
    skipped: &Mutex<Vec<(String, String)>>,
) -> Result<Completion, Failed> {
    let payload = match std::panic::catch_unwind(run) {
        Ok(()) => return Ok(Completion::Completed),
        Err(payload) => payload,
    };
    let Some(Skip(reason)) = payload.downcast_ref::<Skip>() else {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        // `assert!(ok, "{}", output)` with an empty output panics with an empty message: say
        // where, so that the failure list is never a bare `test panicked: `.
        if message.is_none_or(|m| m.trim().is_empty()) {
            let at = PANICKED_AT
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "a place the panic did not name".into());
            return Err(format!(
                "test panicked with an empty message at {at} (the assertion there failed; what it printed was empty)"
            )
            .into());
        }
        // A failure: libtest-mimic reports the panic's message.
        std::panic::resume_unwind(payload)
    };
    if under_ci() {
        return Err(format!("cannot run here, and under CI=true every test must: {reason}").into());
    }
    if let Ok(mut list) = skipped.lock() {
        list.push((name.to_string(), reason.clone()));
    }
    Ok(Completion::ignored_with(reason))
}

/// The variable naming the file where every suite adds the tests it skipped
/// (`<suite> <test>: <reason>`, a line each) instead of listing them after its own summary:
/// `scripts/test.sh` sets it and lists them all once every suite ran, as the last thing printed.
pub const SKIPPED_FILE_VAR: &str = "MM_SKIPPED_FILE";

// libtest-mimic writes its report to stdout; this list goes right after its summary.
#[allow(clippy::print_stdout)]
fn report_skipped(mut skipped: Vec<(String, String)>) {
    if skipped.is_empty() {
        return;
    }
    skipped.sort();
    if let Some(file) = std::env::var_os(SKIPPED_FILE_VAR).filter(|f| !f.is_empty()) {
        let suite = suite_name();
        let lines: String = skipped
            .iter()
            .map(|(name, reason)| format!("{suite} {name}: {}\n", one_line(reason)))
            .collect();
        let added = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, lines.as_bytes()));
        if added.is_ok() {
            return;
        }
    }
    let n = skipped.len();
    let tests = if n == 1 { "test" } else { "tests" };
    println!("skipped: {n} {tests} that cannot run here (under CI=true they fail):");
    for (name, reason) in skipped {
        println!("    {name}: {reason}");
    }
    println!();
}

/// The running suite's name: its executable's, without cargo's `-<hash>`.
fn suite_name() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}

/// A reason on one line.
fn one_line(reason: &str) -> String {
    reason.split_whitespace().collect::<Vec<_>>().join(" ")
}
