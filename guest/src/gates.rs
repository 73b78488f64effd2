//! SPEC §2: the cheap gates — when pruning is not even attempted (no log line,
//! nothing sent). The shape gate (`structured`) and the basis gate (`no_basis`)
//! follow in [`crate::prune`], since they log.

use crate::component::wit::pruner::Gate;
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

/// The first cheap gate that stops the call, in the order enabled,
/// succeeded, prunable, at least 4,000 characters (not bytes); none when
/// every gate passes.
pub fn stopped_by(f: Facts) -> Option<Gate> {
    if !f.enabled {
        Some(Gate::Disabled)
    } else if !f.succeeded {
        Some(Gate::ToolFailed)
    } else if !f.prunable {
        Some(Gate::NotPrunable)
    } else if f.raw_chars < MIN_CHARS {
        Some(Gate::TooShort)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Facts = Facts { enabled: true, succeeded: true, prunable: true, raw_chars: 4_000 };

    #[test]
    fn every_cheap_gate_stops_the_call_and_is_named() {
        assert_eq!(stopped_by(OPEN), None);
        assert_eq!(stopped_by(Facts { enabled: false, ..OPEN }), Some(Gate::Disabled));
        assert_eq!(stopped_by(Facts { succeeded: false, ..OPEN }), Some(Gate::ToolFailed));
        assert_eq!(stopped_by(Facts { prunable: false, ..OPEN }), Some(Gate::NotPrunable));
        assert_eq!(stopped_by(Facts { raw_chars: 3_999, ..OPEN }), Some(Gate::TooShort));
        assert_eq!(stopped_by(Facts { enabled: false, succeeded: false, ..OPEN }), Some(Gate::Disabled));
    }
}
