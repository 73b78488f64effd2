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
        eprintln!("{line}");
    }
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
