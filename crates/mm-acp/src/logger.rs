//! Where the `[acp] …` lines go.

use std::io::Write as _;
use std::sync::Arc;

/// Where the `[acp] …` lines go: stderr in `mm -acp`, a buffer in tests.
#[derive(Clone)]
pub struct Logger(Arc<dyn Fn(&str) + Send + Sync>);

impl Logger {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Logger(Arc::new(f))
    }

    pub fn stderr() -> Self {
        Logger::new(|line| {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        })
    }

    pub fn line(&self, line: &str) {
        (self.0)(line);
    }
}
