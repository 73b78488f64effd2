//! SPEC §2: the cheap gates — when pruning is not even attempted (no log line,
//! nothing sent). The shape gate (`structured`) and the basis gate (`no_basis`)
//! follow in [`crate::prune`], since they log.

use crate::limits::MIN_CHARS;

/// The facts a host passes about one tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// Pruning is on and a scorer is configured (default off).
    pub enabled: bool,
    /// The tool call succeeded; error texts are never pruned.
    pub succeeded: bool,
    /// The host declared the tool prunable (default not).
    pub prunable: bool,
    /// Characters of the raw result.
    pub raw_chars: usize,
}

/// Whether every cheap gate passes: enabled, succeeded, prunable, and at
/// least 4,000 characters (not bytes).
pub fn pass(f: Facts) -> bool {
    f.enabled && f.succeeded && f.prunable && f.raw_chars >= MIN_CHARS
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Facts = Facts { enabled: true, succeeded: true, prunable: true, raw_chars: 4_000 };

    #[test]
    fn every_cheap_gate_stops_the_call() {
        assert!(pass(OPEN));
        assert!(!pass(Facts { enabled: false, ..OPEN }));
        assert!(!pass(Facts { succeeded: false, ..OPEN }));
        assert!(!pass(Facts { prunable: false, ..OPEN }));
        assert!(!pass(Facts { raw_chars: 3_999, ..OPEN }));
    }
}
