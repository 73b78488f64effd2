//! Renderings of the guest's answers for people and tools (the CLI's
//! `--json` and tables). Names follow SPEC §7 and §12 (`no_basis`, …).
//! Everything shown was counted by the guest.

use serde::Serialize;

use crate::turn::Pruned;
use crate::types::{fate_name, outcome_name, shape_name, ParagraphInfo, ParagraphKind};

/// The `prune --json` report of one result, fields in this order.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport<'a> {
    /// SPEC §7 name: `ok`, `no_basis`, …, `failed`.
    pub outcome: &'static str,
    /// Why the guest gave no answer (`instantiate`, `guest_trap`); omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// `text`, `json_wrapper` or `json_array`; null when nothing was split.
    pub shape: Option<&'static str>,
    /// The log line's counts (characters, ms); null when the guest failed.
    pub counts: Option<CountsReport>,
    /// Net reduction; null when no body was assembled.
    pub ratio: Option<f64>,
    /// Threshold in effect; null when the guest failed.
    pub threshold: Option<f64>,
    /// [`Scorer::name`](crate::Scorer::name), e.g. `stub`.
    pub scorer: &'a str,
    /// `P1`, … when the result went into the turn store.
    pub id: Option<&'a str>,
    pub paragraphs: Vec<ParagraphLine>,
    pub failures: Vec<FailureLine<'a>>,
}

/// SPEC §12 counts: characters, paragraphs, batches, tokens, ms.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CountsReport {
    pub raw_chars: u32,
    pub kept_chars: u32,
    pub paragraphs: u32,
    pub dropped: u32,
    pub calls: u32,
    pub jev_tokens: u64,
    pub ms: u32,
}

/// One paragraph's fate: `kept`, `dropped`, `unscored` or `fixed`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ParagraphLine {
    pub index: u32,
    /// Characters, separators included.
    pub chars: u32,
    pub score: Option<f64>,
    pub fate: &'static str,
}

/// One failed batch: HTTP status (if any) and class, never a body.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FailureLine<'a> {
    pub batch: u32,
    pub status: Option<u16>,
    pub class: &'a str,
}

/// The report of `pruned`, scored by `scorer` (serialize it with serde_json).
pub fn prune_report<'a>(pruned: &'a Pruned, scorer: &'a str) -> PruneReport<'a> {
    let Some(report) = &pruned.report else {
        return PruneReport {
            outcome: outcome_name(pruned.outcome),
            reason: pruned.failure.as_ref().map(|f| f.reason),
            shape: None,
            counts: None,
            ratio: None,
            threshold: None,
            scorer,
            id: None,
            paragraphs: Vec::new(),
            failures: Vec::new(),
        };
    };
    let c = &report.counts;
    PruneReport {
        outcome: outcome_name(report.outcome),
        reason: None,
        shape: report.shape.map(shape_name),
        counts: Some(CountsReport {
            raw_chars: c.raw_chars,
            kept_chars: c.kept_chars,
            paragraphs: c.paragraphs,
            dropped: c.dropped,
            calls: c.calls,
            jev_tokens: c.jev_tokens,
            ms: c.ms,
        }),
        ratio: report.ratio,
        threshold: Some(report.threshold),
        scorer,
        id: report.record.as_ref().map(|r| r.id.as_str()),
        paragraphs: report
            .paragraphs
            .iter()
            .map(|p| ParagraphLine {
                index: p.index,
                chars: p.chars,
                score: p.score,
                fate: fate_name(p.fate),
            })
            .collect(),
        failures: report
            .failures
            .iter()
            .map(|f| FailureLine {
                batch: f.batch,
                status: f.status,
                class: &f.class,
            })
            .collect(),
    }
}

/// One line of `split --json`: spans are `[start, end)` in bytes and characters.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SplitLine {
    pub index: u32,
    pub byte_start: u32,
    pub byte_end: u32,
    pub char_start: u32,
    pub char_end: u32,
    pub chars: u32,
    /// `scored` or `fixed` (over 6,000 characters, kept unscored).
    pub kind: &'static str,
}

/// The `split --json` report: one [`SplitLine`] per paragraph.
pub fn split_report(paragraphs: &[ParagraphInfo]) -> Vec<SplitLine> {
    paragraphs
        .iter()
        .map(|p| SplitLine {
            index: p.index,
            byte_start: p.byte_start,
            byte_end: p.byte_end,
            char_start: p.char_start,
            char_end: p.char_end,
            chars: p.char_end.saturating_sub(p.char_start),
            kind: kind_name(p.kind),
        })
        .collect()
}

fn kind_name(kind: ParagraphKind) -> &'static str {
    match kind {
        ParagraphKind::Scored => "scored",
        ParagraphKind::Fixed => "fixed",
    }
}

/// Up to `max` characters of `text` on one line: `\n`, `\r`, `\t` and `\\`
/// escaped, `…` appended when cut. For display only.
pub fn preview(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// The `split` table: `index  bytes  chars  kind  text`, one paragraph per
/// line, each ending in `\n`; `text` is a [`preview`] of 60 characters.
pub fn paragraphs_table(text: &str, paragraphs: &[ParagraphInfo]) -> String {
    let mut out = format!(
        "{:>5}  {:<17}  {:>6}  {:<6}  {}\n",
        "index", "bytes", "chars", "kind", "text"
    );
    for p in paragraphs {
        let slice = text
            .get(p.byte_start as usize..p.byte_end as usize)
            .unwrap_or("");
        out.push_str(&format!(
            "{:>5}  {:<17}  {:>6}  {:<6}  {}\n",
            p.index,
            format!("{}..{}", p.byte_start, p.byte_end),
            p.char_end.saturating_sub(p.char_start),
            kind_name(p.kind),
            preview(slice, 60),
        ));
    }
    out
}
