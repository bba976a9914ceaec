//! The harness of the suites (`harness = false` in their `[[test]]`, `fn main() ->
//! ExitCode { mm_testkit::harness::main() }`): libtest-mimic, so that a test that finds at run
//! time that it cannot run here — a missing acpx, Python SDK, language server, model server,
//! Landlock, namespace — says so with [`skip`] and is counted apart, as ignored with its reason,
//! instead of passing having done nothing. Under `CI=true`, where everything is installed, such a
//! test fails.
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
    /// `#[ignore]`: run only when asked (`--ignored`, `--include-ignored`).
    pub ignored: bool,
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

/// Runs the suite's tests as the command line asks, then lists those that were skipped and why.
pub fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|n| n.parse().ok());
    }
    let skipped: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let mut trials: Vec<Trial> = inventory::iter::<Test>
        .into_iter()
        .map(|test| {
            let name = test.full_name();
            let run = test.run;
            let skipped = Arc::clone(&skipped);
            let trial_name = name.clone();
            Trial::ignorable_test(trial_name, move || run_one(&name, run, &skipped))
                .with_ignored_flag(test.ignored)
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

// libtest-mimic writes its report to stdout; this list goes right after its summary.
#[allow(clippy::print_stdout)]
fn report_skipped(mut skipped: Vec<(String, String)>) {
    if skipped.is_empty() {
        return;
    }
    skipped.sort();
    let n = skipped.len();
    let tests = if n == 1 { "test" } else { "tests" };
    println!("skipped: {n} {tests} that cannot run here (under CI=true they fail):");
    for (name, reason) in skipped {
        println!("    {name}: {reason}");
    }
    println!();
}
