//! Where the host writes the guest's log lines (SPEC §12): counts, never text.

use std::sync::Mutex;

/// Receives complete log lines (`tool prune: …`, `tool omitted: …`), one per
/// call, without a trailing newline. Any `Fn(&str) + Send + Sync` is a sink.
pub trait LogSink: Send + Sync {
    /// Writes one line.
    fn line(&self, line: &str);
}

impl<F: Fn(&str) + Send + Sync> LogSink for F {
    fn line(&self, line: &str) {
        self(line)
    }
}

/// The default sink: each line to stderr.
#[derive(Clone, Copy, Debug, Default)]
pub struct StderrLog;

impl LogSink for StderrLog {
    fn line(&self, line: &str) {
        use std::io::Write as _;
        // Never `eprintln!`: it panics when stderr fails (a closed pipe), and
        // a log line must never cost the agent its result (SPEC §11).
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// Writes `line` to `sink`, whatever the sink does: a sink that panics
/// loses its line, never the result the line is about (SPEC §11: a broken
/// log is one more failure that gives the text back, not an error).
pub(crate) fn write(sink: &dyn LogSink, line: &str) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink.line(line)));
}

/// Keeps the lines in memory, for tests.
#[derive(Debug, Default)]
pub struct CapturedLog {
    lines: Mutex<Vec<String>>,
}

impl CapturedLog {
    /// An empty capture.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every line written so far, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl LogSink for CapturedLog {
    fn line(&self, line: &str) {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.to_string());
    }
}
