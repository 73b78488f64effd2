//! SPEC §12: the log lines — counts, never text. Every line the product
//! writes is built here or from [`label`] (the `tool omitted:` line in
//! the `omitted` module, the judge's in `judge::log`, a host's failure line
//! in `settings::failure_line`: they use this module, not the reverse).

use crate::types::{Counts, Outcome, Shape};

/// A label given by the host or a user (`agent=`, `name=`): whitespace,
/// `=` and control characters become `_` so the line stays one line of
/// `key=value` pairs; an empty label is `-`.
pub fn label(s: &str) -> String {
    if s.is_empty() {
        return "-".to_string();
    }
    s.chars().map(|c| if c.is_whitespace() || c == '=' || c.is_control() { '_' } else { c }).collect()
}

/// The outcome as written in logs and reports (SPEC §7; `skipped` reaches
/// a line only for the repeat gate).
pub fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Skipped => "skipped",
        Outcome::Structured => "structured",
        Outcome::NoBasis => "no_basis",
        Outcome::AllDropped => "all_dropped",
        Outcome::NothingDropped => "nothing_dropped",
        Outcome::BelowFloor => "below_floor",
        Outcome::Timeout => "timeout",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
    }
}

/// The shape as written in logs and reports.
pub fn shape_name(s: Shape) -> &'static str {
    match s {
        Shape::Text => "text",
        Shape::JsonWrapper => "json_wrapper",
        Shape::JsonArray => "json_array",
    }
}

/// Everything on one `tool prune:` line.
pub struct PruneLine<'a> {
    pub agent: &'a str,
    pub tool: &'a str,
    pub outcome: Outcome,
    /// Why, written right after the outcome: `gate=repeated`,
    /// `reason=budget`; none for the rest.
    pub detail: Option<&'a str>,
    pub shape: Option<Shape>,
    pub counts: &'a Counts,
    /// The threshold used; none (`threshold=-`) for one the guest refused,
    /// never written as if it had been used.
    pub threshold: Option<f64>,
    pub ratio: Option<f64>,
    /// `offline`, `stub`, or the host scorer's name (a label).
    pub scorer: &'a str,
}

/// The `tool prune:` line (SPEC §12). `shape=` is absent when the text was
/// not split (`structured`), and `paragraphs=-` then too; `ratio=-` where no body was assembled, `ms=-`
/// where no host scorer answered: a quantity not measured is never 0.
pub fn prune_line(l: &PruneLine) -> String {
    let c = l.counts;
    let shape = l.shape.map(|s| format!(" shape={}", shape_name(s))).unwrap_or_default();
    let ms = c.ms.map(|m| m.to_string()).unwrap_or_else(|| "-".to_string());
    let ratio = l.ratio.map(|r| crate::number::fixed(r, 3)).unwrap_or_else(|| "-".to_string());
    let paragraphs = c.paragraphs.map(|p| p.to_string()).unwrap_or_else(|| "-".to_string());
    let detail = l.detail.map(|d| format!(" {d}")).unwrap_or_default();
    let threshold = l.threshold.map(|t| crate::number::fixed(t, 1)).unwrap_or_else(|| "-".to_string());
    format!(
        "tool prune: agent={} name={} outcome={}{}{} raw_chars={} kept_chars={} paragraphs={} dropped={} calls={} jev_tokens={} ms={} threshold={} ratio={} scorer={}",
        label(l.agent),
        label(l.tool),
        outcome_name(l.outcome),
        detail,
        shape,
        c.raw_chars,
        c.kept_chars,
        paragraphs,
        c.dropped,
        c.calls,
        c.jev_tokens,
        ms,
        threshold,
        ratio,
        label(l.scorer)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_with_spaces_newlines_and_equals_stay_one_field() {
        assert_eq!(label("my agent"), "my_agent");
        assert_eq!(label("a=b\nc\td\u{7}"), "a_b_c_d_");
        assert_eq!(label(""), "-");
        assert_eq!(label("日本語"), "日本語");
    }

    /// 5,000 characters kept whole in 3 paragraphs, nothing measured.
    const COUNTS: Counts = Counts { raw_chars: 5000, kept_chars: 5000, paragraphs: Some(3), dropped: 0, calls: 0, jev_tokens: 0, ms: None, work: 0 };

    /// The line of agent `a`, tool `t`, a text, the offline scorer at 0.2, no ratio: change what a test is about.
    fn line(counts: &Counts, change: impl FnOnce(&mut PruneLine)) -> String {
        let mut l = PruneLine {
            agent: "a",
            tool: "t",
            outcome: Outcome::NothingDropped,
            detail: None,
            shape: Some(Shape::Text),
            counts,
            threshold: Some(0.2),
            ratio: None,
            scorer: "offline",
        };
        change(&mut l);
        prune_line(&l)
    }

    #[test]
    fn unmeasured_quantities_are_dashes() {
        assert_eq!(
            line(&COUNTS, |_| {}),
            "tool prune: agent=a name=t outcome=nothing_dropped shape=text raw_chars=5000 kept_chars=5000 paragraphs=3 dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=offline"
        );
    }

    #[test]
    fn the_detail_follows_the_outcome_and_a_refused_threshold_is_a_dash() {
        let line = line(&COUNTS, |l| {
            l.outcome = Outcome::Skipped;
            l.detail = Some("gate=repeated");
            l.threshold = None;
            l.scorer = "stub";
        });
        assert!(line.starts_with("tool prune: agent=a name=t outcome=skipped gate=repeated shape=text raw_chars=5000 "), "{line}");
        assert!(line.ends_with(" ms=- threshold=- ratio=- scorer=stub"), "{line}");
    }

    #[test]
    fn a_text_that_was_not_split_counts_no_paragraphs_not_zero() {
        let counts = Counts { paragraphs: None, ..COUNTS };
        let line = line(&counts, |l| {
            l.outcome = Outcome::Structured;
            l.shape = None;
        });
        assert!(line.contains(" kept_chars=5000 paragraphs=- dropped=0 "), "{line}");
    }
}
