//! Renderings of the guest's answers for people and tools (the CLI's
//! `--json` and tables). Names are the guest's enum names in SPEC spelling
//! ([`wit_name`]: `no_basis`, `json_wrapper`, …); every count shown was
//! counted by the guest.

use serde::Serialize;
use toolprune::types::{wit_name, Inspection};
use toolprune::PruneResult;

/// The `prune --json` report of one result, fields in this order.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport<'a> {
    /// SPEC §7 name: `ok`, `skipped`, `no_basis`, …, `failed`.
    pub outcome: String,
    /// For `skipped`: `disabled`, `tool_failed`, `not_prunable`, `too_short`.
    pub gate: Option<String>,
    /// Why the host got no guest answer (`guest_trap`); omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Which limit stopped the guest (`fuel`, `memory`); omitted otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// `text`, `json_wrapper` or `json_array`; null when nothing was split.
    pub shape: Option<String>,
    /// The log line's counts (characters; `ms` null when not measured);
    /// null when the guest gave no answer.
    pub counts: Option<CountsReport>,
    /// Net reduction; null when no body was assembled.
    pub ratio: Option<f64>,
    /// Threshold in effect; null when the guest gave no answer.
    pub threshold: Option<f64>,
    /// The scorer's label, e.g. `stub`.
    pub scorer: &'a str,
    /// `P1`, … when the result went into the store.
    pub id: Option<&'a str>,
    /// The model the Jev service said it ran.
    pub served_model: Option<&'a str>,
    pub paragraphs: Vec<ParagraphLine>,
    pub failures: Vec<FailureLine>,
}

/// SPEC §12 counts: characters, paragraphs, batches, tokens, ms.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CountsReport {
    pub raw_chars: u32,
    pub kept_chars: u32,
    /// Paragraphs the text was split into; null when it was not split
    /// (skipped, `structured`), never 0 for that (SPEC §7).
    pub paragraphs: Option<u32>,
    pub dropped: u32,
    pub calls: u32,
    pub jev_tokens: u64,
    /// Scoring wall time in ms; null when no host scorer answered.
    pub ms: Option<u32>,
}

/// One paragraph's fate: `kept`, `dropped`, `unscored` or `fixed`.
#[derive(Clone, Debug, Serialize)]
pub struct ParagraphLine {
    pub index: u32,
    /// Characters, separators included.
    pub chars: u32,
    pub score: Option<f64>,
    pub fate: String,
}

/// One failed batch: HTTP status (if any) and class, never a body.
#[derive(Clone, Debug, Serialize)]
pub struct FailureLine {
    pub batch: u32,
    pub status: Option<u16>,
    pub class: String,
}

/// The report of `result`, scored by `scorer` (serialize it with serde_json).
pub fn prune_report<'a>(result: &'a PruneResult, scorer: &'a str) -> PruneReport<'a> {
    PruneReport {
        outcome: wit_name(&result.outcome),
        gate: result.gate.as_ref().map(wit_name),
        reason: result.failure.as_ref().map(|f| f.reason_name()),
        limit: result.failure.as_ref().and_then(|f| f.limit.as_ref()).map(wit_name),
        shape: result.shape.as_ref().map(wit_name),
        counts: result.counts.as_ref().map(|c| CountsReport {
            raw_chars: c.raw_chars,
            kept_chars: c.kept_chars,
            paragraphs: c.paragraphs,
            dropped: c.dropped,
            calls: c.calls,
            jev_tokens: c.jev_tokens,
            ms: c.ms,
        }),
        ratio: result.ratio,
        threshold: result.threshold,
        scorer,
        id: result.id.as_deref(),
        served_model: result.served_model.as_deref(),
        paragraphs: result
            .paragraphs
            .iter()
            .map(|p| ParagraphLine { index: p.index, chars: p.chars, score: p.score, fate: wit_name(&p.fate) })
            .collect(),
        failures: result
            .failures
            .iter()
            .map(|f| FailureLine { batch: f.batch, status: f.status, class: wit_name(&f.class) })
            .collect(),
    }
}

/// The `split --json` report (`pruner.inspect`): the shape, a wrapper's
/// span, and one line per unit.
#[derive(Clone, Debug, Serialize)]
pub struct SplitReport {
    /// `text`, `json_wrapper`, `json_array`; null: structured JSON, not pruned.
    pub shape: Option<String>,
    /// A wrapper's string literal in the raw text, bytes `[start, end)`.
    pub wrapper_span: Option<(u32, u32)>,
    pub units: Vec<SplitLine>,
}

/// One unit of `split --json`: spans are `[start, end)` in bytes and
/// characters of the split text (the raw text, or a wrapper's string).
#[derive(Clone, Debug, Serialize)]
pub struct SplitLine {
    pub index: u32,
    pub byte_start: u32,
    pub byte_end: u32,
    pub char_start: u32,
    pub char_end: u32,
    pub chars: u32,
    /// `scored`, `fixed` (over 6,000 characters, kept unscored) or `blank`.
    pub kind: String,
}

/// The `split --json` report of an inspection.
pub fn split_report(inspection: &Inspection) -> SplitReport {
    SplitReport {
        shape: inspection.shape.as_ref().map(wit_name),
        wrapper_span: inspection.wrapper_span,
        units: inspection
            .units
            .iter()
            .map(|u| SplitLine {
                index: u.index,
                byte_start: u.byte_start,
                byte_end: u.byte_end,
                char_start: u.char_start,
                char_end: u.char_end,
                chars: u.char_end.saturating_sub(u.char_start),
                kind: wit_name(&u.kind),
            })
            .collect(),
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

/// The `split` table: a `shape:` line (with the wrapper's span, or `not
/// pruned: structured`), then `index  bytes  chars  kind  text`, one unit per
/// line; `text` is a [`preview`] of 60 characters. For a wrapper the spans
/// are in its decoded string (the literal read as JSON here, for display).
pub fn split_table(text: &str, inspection: &Inspection) -> String {
    let mut out = match (&inspection.shape, inspection.wrapper_span) {
        (None, _) => "shape: none (not pruned: structured)\n".to_string(),
        (Some(shape), Some((start, end))) => format!("shape: {} (string literal at bytes {start}..{end})\n", wit_name(shape)),
        (Some(shape), None) => format!("shape: {}\n", wit_name(shape)),
    };
    if inspection.shape.is_none() {
        return out;
    }
    out.push_str(&format!("{:>5}  {:<17}  {:>6}  {:<6}  {}\n", "index", "bytes", "chars", "kind", "text"));
    let decoded: Option<String> = inspection
        .wrapper_span
        .and_then(|(start, end)| text.get(start as usize..end as usize))
        .and_then(|literal| serde_json::from_str(literal).ok());
    let source = decoded.as_deref().unwrap_or(text);
    for u in &inspection.units {
        let slice = source.get(u.byte_start as usize..u.byte_end as usize);
        out.push_str(&format!(
            "{:>5}  {:<17}  {:>6}  {:<6}  {}\n",
            u.index,
            format!("{}..{}", u.byte_start, u.byte_end),
            u.char_end.saturating_sub(u.char_start),
            wit_name(&u.kind),
            slice.map_or_else(|| "-".to_string(), |s| preview(s, 60)),
        ));
    }
    out
}
