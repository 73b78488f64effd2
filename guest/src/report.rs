//! What people and scripts read from every CLI, rendered once (issue 22 §7):
//! the `prune --json` report, the `split --json` report, the `split` table,
//! and the judge's `route` / `route --json` output and rules-file errors. Names are in SPEC spelling (`no_basis`, `json_wrapper`, …); every
//! count shown was counted by the guest. The JSON is serde_json's
//! pretty-printer (two spaces) over the structs below, fields in their
//! declared order: a stable format, documented in the README's CLI section.

use serde::Serialize;

use crate::judge::LoadError;
use crate::types::{Decision, FailureClass, Fate, Gate, Inspection, Pruned, QuestionKind, UnitKind, Verdict};

/// The `prune --json` report of one result, fields in this order.
#[derive(Serialize)]
struct PruneReport<'a> {
    /// SPEC §7 name: `ok`, `skipped`, `no_basis`, …, `failed`.
    outcome: &'static str,
    /// For `skipped`: `disabled`, `tool_failed`, `not_prunable`, `too_short`, `repeated`.
    gate: Option<&'static str>,
    /// Why the host got no guest answer (`guest_trap`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// Which limit stopped the guest (`fuel`, `memory`, `wall_time`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<&'a str>,
    /// `text`, `json_wrapper` or `json_array`; null when nothing was split.
    shape: Option<&'static str>,
    /// The log line's counts; null when the guest gave no answer.
    counts: Option<CountsReport>,
    /// Net reduction; null when no body was assembled.
    ratio: Option<f64>,
    /// Threshold in effect; null when the guest gave no answer.
    threshold: Option<f64>,
    /// The scorer's label, e.g. `stub`.
    scorer: &'a str,
    /// `P1`, … when the result went into the store.
    id: Option<&'a str>,
    /// The model the Jev service said it ran.
    served_model: Option<&'a str>,
    paragraphs: Vec<ParagraphLine>,
    failures: Vec<FailureLine>,
}

/// SPEC §12 counts: characters, paragraphs, batches, tokens, ms.
#[derive(Serialize)]
struct CountsReport {
    raw_chars: u32,
    kept_chars: u32,
    /// Null when the text was not split (never 0 for that, SPEC §7).
    paragraphs: Option<u32>,
    dropped: u32,
    calls: u32,
    jev_tokens: u64,
    /// Null when no host scorer answered.
    ms: Option<u32>,
}

#[derive(Serialize)]
struct ParagraphLine {
    index: u32,
    chars: u32,
    score: Option<f64>,
    fate: &'static str,
}

#[derive(Serialize)]
struct FailureLine {
    batch: u32,
    status: Option<u16>,
    class: &'static str,
}

/// `prune --json` (see `report.prune-json` in `wit/report.wit`): `pruned`,
/// or none with the host's `failure` (`reason`, `limit` names).
pub fn prune_json(pruned: Option<&Pruned>, failure: Option<(&str, Option<&str>)>, scorer: &str) -> String {
    let report = PruneReport {
        outcome: pruned.map_or("failed", |p| crate::log::outcome_name(p.outcome)),
        gate: pruned.and_then(|p| p.gate).map(gate_name),
        reason: failure.map(|(reason, _)| reason),
        limit: failure.and_then(|(_, limit)| limit),
        shape: pruned.and_then(|p| p.shape).map(crate::log::shape_name),
        counts: pruned.map(|p| CountsReport {
            raw_chars: p.counts.raw_chars,
            kept_chars: p.counts.kept_chars,
            paragraphs: p.counts.paragraphs,
            dropped: p.counts.dropped,
            calls: p.counts.calls,
            jev_tokens: p.counts.jev_tokens,
            ms: p.counts.ms,
        }),
        ratio: pruned.and_then(|p| p.ratio),
        threshold: pruned.map(|p| p.threshold),
        scorer,
        id: pruned.and_then(|p| p.record.as_ref()).map(|r| r.id.as_str()),
        served_model: pruned.and_then(|p| p.served_model.as_deref()),
        paragraphs: pruned
            .map(|p| {
                p.paragraphs
                    .iter()
                    .map(|r| ParagraphLine { index: r.index, chars: r.chars, score: r.score, fate: fate_name(r.fate) })
                    .collect()
            })
            .unwrap_or_default(),
        failures: pruned
            .map(|p| {
                p.failures
                    .iter()
                    .map(|f| FailureLine { batch: f.batch, status: f.status, class: class_name(f.class) })
                    .collect()
            })
            .unwrap_or_default(),
    };
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

/// The `split --json` report: the shape, a wrapper's span, one line per unit.
#[derive(Serialize)]
struct SplitReport {
    /// `text`, `json_wrapper`, `json_array`; null: structured JSON, not pruned.
    shape: Option<&'static str>,
    /// A wrapper's string literal in the raw text, bytes `[start, end)`.
    wrapper_span: Option<(u32, u32)>,
    units: Vec<SplitLine>,
}

/// One unit: spans `[start, end)` in bytes and characters of the split text
/// (the raw text, or a wrapper's decoded string).
#[derive(Serialize)]
struct SplitLine {
    index: u32,
    byte_start: u32,
    byte_end: u32,
    char_start: u32,
    char_end: u32,
    chars: u32,
    /// `scored`, `fixed` (over 6,000 characters, kept unscored) or `blank`.
    kind: &'static str,
}

/// `split --json` of `text` (see `report.split-json`).
pub fn split_json(text: &str) -> String {
    let inspection = crate::prune::inspect(text);
    let report = SplitReport {
        shape: inspection.shape.map(crate::log::shape_name),
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
                kind: kind_name(u.kind),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

/// Up to `max` characters of `text` on one line: `\n`, `\r`, `\t` and `\\`
/// escaped, other control characters as `\u{…}`, `…` appended when cut.
fn preview(text: &str, max: usize) -> String {
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

/// The `split` table of `text` (see `report.split-table`). For a wrapper the
/// spans are in its decoded string.
pub fn split_table(text: &str) -> String {
    let inspection = crate::prune::inspect(text);
    table(text, &inspection)
}

fn table(text: &str, inspection: &Inspection) -> String {
    let mut out = match (inspection.shape, inspection.wrapper_span) {
        (None, _) => "shape: none (not pruned: structured)\n".to_string(),
        (Some(shape), Some((start, end))) => {
            format!("shape: {} (string literal at bytes {start}..{end})\n", crate::log::shape_name(shape))
        }
        (Some(shape), None) => format!("shape: {}\n", crate::log::shape_name(shape)),
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
            kind_name(u.kind),
            slice.map_or_else(|| "-".to_string(), |s| preview(s, 60)),
        ));
    }
    out
}

/// `route --json`: keys sorted (as `serde_json::Value` writes them), so the
/// fields below are declared in alphabetical order.
#[derive(Serialize)]
struct RouteReport<'a> {
    answers: Vec<AnswerLine<'a>>,
    jev_tokens: u64,
    log: &'a str,
    note: Option<&'a str>,
    reason: Option<&'static str>,
    rule: Option<u32>,
    to: Option<&'a [String]>,
    verdict: &'static str,
}

#[derive(Serialize)]
struct AnswerLine<'a> {
    margin: Option<f64>,
    mean: Option<f64>,
    p: f64,
    question: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    value: Option<&'a str>,
}

/// `route --json` of `decision` (see `report.route-json`).
pub fn route_json(decision: &Decision) -> String {
    let (verdict, to, note, reason) = match &decision.verdict {
        Verdict::Routed(to) => ("routed", Some(to.as_slice()), None, None),
        Verdict::Returned(note) => ("returned", None, note.as_deref(), None),
        Verdict::Failed(class) => ("failed", None, None, Some(class_name(*class))),
    };
    let report = RouteReport {
        answers: decision
            .answers
            .iter()
            .map(|a| AnswerLine {
                margin: a.margin,
                mean: a.mean,
                p: a.p,
                question: &a.question,
                kind: match a.kind {
                    QuestionKind::Choice => "choice",
                    QuestionKind::Noul => "noul",
                    QuestionKind::Score => "score",
                },
                value: a.value.as_deref(),
            })
            .collect(),
        jev_tokens: decision.jev_tokens,
        log: &decision.log_line,
        note,
        reason,
        rule: decision.rule,
        to,
        verdict,
    };
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

/// `route`: one line for people (see `report.route-summary`).
pub fn route_summary(decision: &Decision) -> String {
    let rule = match decision.rule {
        Some(n) => format!("rule {n}"),
        None => "otherwise".to_string(),
    };
    match &decision.verdict {
        Verdict::Routed(to) => format!("routed to {} ({rule})\n", to.join(", ")),
        Verdict::Returned(None) => format!("returned ({rule})\n"),
        Verdict::Returned(Some(note)) => format!("returned ({rule}): {note}\n"),
        Verdict::Failed(class) => format!("failed: {}\n", class_name(*class)),
    }
}

/// A rules file's problems, `FILE:LINE:COLUMN: MESSAGE` per line.
pub fn rules_errors(file: &str, errors: &[LoadError]) -> String {
    errors.iter().map(|e| format!("{file}:{}:{}: {}\n", e.line, e.column, e.message)).collect()
}

fn gate_name(gate: Gate) -> &'static str {
    match gate {
        Gate::Disabled => "disabled",
        Gate::ToolFailed => "tool_failed",
        Gate::NotPrunable => "not_prunable",
        Gate::TooShort => "too_short",
        Gate::Repeated => "repeated",
    }
}

fn fate_name(fate: Fate) -> &'static str {
    match fate {
        Fate::Kept => "kept",
        Fate::Dropped => "dropped",
        Fate::Unscored => "unscored",
        Fate::Fixed => "fixed",
    }
}

fn kind_name(kind: UnitKind) -> &'static str {
    match kind {
        UnitKind::Scored => "scored",
        UnitKind::Fixed => "fixed",
        UnitKind::Blank => "blank",
    }
}

fn class_name(class: FailureClass) -> &'static str {
    match class {
        FailureClass::Http4xx => "http_4xx",
        FailureClass::Http5xx => "http_5xx",
        FailureClass::HttpOther => "http_other",
        FailureClass::RateLimited => "rate_limited",
        FailureClass::OutOfCredit => "out_of_credit",
        FailureClass::Network => "network",
        FailureClass::Undecodable => "undecodable",
        FailureClass::NoAnswer => "no_answer",
        FailureClass::Timeout => "timeout",
        FailureClass::Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(verdict: Verdict, rule: Option<u32>) -> Decision {
        Decision {
            verdict,
            rule,
            answers: vec![crate::types::Answer {
                question: "kind".into(),
                kind: QuestionKind::Choice,
                value: Some("research".into()),
                p: 0.8,
                margin: Some(0.6),
                mean: None,
            }],
            jev_tokens: 120,
            log_line: "judge: kind=research/0.8/0.6 rule=2 routed to=a,b".into(),
        }
    }

    #[test]
    fn route_json_sorts_its_keys_as_the_cli_always_printed_them() {
        let json = route_json(&decision(Verdict::Routed(vec!["a".into(), "b".into()]), Some(2)));
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json, serde_json::to_string_pretty(&value).unwrap(), "the same bytes as a sorted Value");
        assert_eq!(value["to"], serde_json::json!(["a", "b"]));
        assert_eq!(value["answers"][0]["type"], "choice");
        let failed = route_json(&decision(Verdict::Failed(FailureClass::NoAnswer), None));
        assert!(failed.contains("\"reason\": \"no_answer\""), "{failed}");
    }

    #[test]
    fn route_summaries_name_the_rule_or_otherwise() {
        assert_eq!(route_summary(&decision(Verdict::Routed(vec!["a".into(), "b".into()]), Some(2))), "routed to a, b (rule 2)\n");
        assert_eq!(route_summary(&decision(Verdict::Returned(None), None)), "returned (otherwise)\n");
        assert_eq!(route_summary(&decision(Verdict::Returned(Some("no".into())), Some(1))), "returned (rule 1): no\n");
        assert_eq!(route_summary(&decision(Verdict::Failed(FailureClass::Timeout), None)), "failed: timeout\n");
        let errors = [LoadError { line: 3, column: 7, message: "m".into() }];
        assert_eq!(rules_errors("rules.toml", &errors), "rules.toml:3:7: m\n");
    }

    #[test]
    fn the_split_table_previews_each_unit_on_one_line() {
        let text = "# Title\n\nFirst paragraph, long enough to stand alone as its own unit of text for the table here.\tEnd.\n\n".repeat(2);
        let table = split_table(&text);
        let mut lines = table.lines();
        assert_eq!(lines.next(), Some("shape: text"));
        assert_eq!(lines.next(), Some("index  bytes               chars  kind    text"));
        let first = lines.next().unwrap();
        assert!(first.starts_with("    0  0.."), "{first}");
        assert!(first.contains("# Title\\n\\nFirst paragraph"), "{first}");
        assert!(first.ends_with('…'), "cut at 60 characters: {first}");
        assert!(table.ends_with('\n'));
    }

    #[test]
    fn structured_json_is_said_not_pruned_in_the_table_and_null_in_json() {
        assert_eq!(split_table("{\"a\": 1}"), "shape: none (not pruned: structured)\n");
        assert_eq!(split_json("{\"a\": 1}"), "{\n  \"shape\": null,\n  \"wrapper_span\": null,\n  \"units\": []\n}");
    }

    #[test]
    fn a_host_failure_reports_reason_and_limit_and_null_counts() {
        let json = prune_json(None, Some(("guest_trap", Some("fuel"))), "jev");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["outcome"], "failed");
        assert_eq!(v["reason"], "guest_trap");
        assert_eq!(v["limit"], "fuel");
        assert!(v["counts"].is_null() && v["threshold"].is_null());
        let keys: Vec<&str> = json.lines().filter_map(|l| l.strip_prefix("  \"")).map(|l| l.split('"').next().unwrap()).collect();
        assert_eq!(
            keys,
            ["outcome", "gate", "reason", "limit", "shape", "counts", "ratio", "threshold", "scorer", "id", "served_model", "paragraphs", "failures"]
        );
    }
}
