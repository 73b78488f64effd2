//! SPEC §7: which paragraphs drop, the net ratio, and the floor. The body
//! itself is the `body` module's.

use crate::limits::MIN_REDUCTION;

/// What the scores say, before any body is assembled (SPEC §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// At least one paragraph scored, and every scored one is below the threshold.
    AllDropped,
    /// No scored paragraph is below the threshold (also: nothing scored).
    NothingDropped,
    /// Some, not all, scored paragraphs are below the threshold: drop these.
    Drop(Vec<bool>),
}

/// Judge per-paragraph scores (`None` = kept: fixed, failed or missing).
pub fn verdict(scores: &[Option<f64>], threshold: f64) -> Verdict {
    let scored = scores.iter().filter(|s| s.is_some()).count();
    let below: Vec<bool> = scores.iter().map(|s| matches!(s, Some(p) if *p < threshold)).collect();
    let dropped = below.iter().filter(|b| **b).count();
    if dropped == 0 {
        Verdict::NothingDropped
    } else if dropped == scored {
        Verdict::AllDropped
    } else {
        Verdict::Drop(below)
    }
}

/// Net reduction (SPEC §7): `(raw − body) / raw`, markers included.
pub fn ratio(raw_chars: usize, body_chars: usize) -> f64 {
    if raw_chars == 0 {
        return 0.0;
    }
    (raw_chars as f64 - body_chars as f64) / raw_chars as f64
}

/// Whether a net reduction clears the 25 % floor (SPEC §7).
pub fn clears_floor(ratio: f64) -> bool {
    ratio >= MIN_REDUCTION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_threshold_drops_and_equal_keeps() {
        assert_eq!(verdict(&[Some(0.19), Some(0.2), None], 0.2), Verdict::Drop(vec![true, false, false]));
    }

    #[test]
    fn all_scored_below_is_all_dropped_even_with_unscored_paragraphs() {
        assert_eq!(verdict(&[Some(0.1), None, Some(0.0)], 0.2), Verdict::AllDropped);
    }

    #[test]
    fn nothing_below_or_nothing_scored_is_nothing_dropped() {
        assert_eq!(verdict(&[Some(0.9), Some(0.2)], 0.2), Verdict::NothingDropped);
        assert_eq!(verdict(&[None, None], 0.2), Verdict::NothingDropped);
    }

    #[test]
    fn ratio_counts_markers() {
        assert_eq!(ratio(1000, 750), 0.25);
        assert!(clears_floor(0.25));
        assert!(!clears_floor(0.2499));
    }
}
