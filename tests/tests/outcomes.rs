//! SPEC §2, §7, §11: every outcome, and the full raw text on each one that
//! is not `ok` (fail-open).

use std::sync::Arc;

use std::time::Duration;

use toolprune::types::{Failure, Fate};
use toolprune::{CancelToken, ScriptedScorer, ToolResult};
use toolprune_tests::*;

/// 20 paragraphs of 400 characters: batches [0..16) and [16..20).
fn page() -> String {
    uniform(20, 400)
}

/// A result that was not pruned: the raw text, byte for byte, as body and
/// raw, nothing stored for `omitted`.
fn assert_full_text(p: &Pruned, text: &str) {
    assert!(p.body == text, "{}: the body must be the raw text", outcome(p));
    assert!(p.raw == text, "{}: the raw text must come back beside the body", outcome(p));
    if let Some(r) = &p.report {
        assert!(r.record.is_none(), "nothing stored for `omitted`");
        assert_eq!(r.counts.kept_chars, r.counts.raw_chars);
    }
}

/// Prune `text` under `scorer` with `request`; the pruned result and its one log line.
fn run(request: &str, scorer: &Arc<ScriptedScorer>, text: &str) -> (Pruned, String) {
    let (mut turn, log) = turn(request, scorer.clone());
    let p = prune(&mut turn, text);
    let line = prune_line(&log);
    (p, line)
}

#[test]
fn ok_prunes_and_logs_every_count() {
    let text = page();
    let scorer = dropping(0..10);
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "ok");
    assert_eq!(p.raw, text);
    assert_ne!(p.body, text);
    let r = report(&p);
    let body_chars = chars(&p.body);
    let ratio = (8_000.0 - body_chars as f64) / 8_000.0;
    assert!((r.ratio.unwrap() - ratio).abs() < 1e-9);
    assert_eq!(
        line,
        format!(
            "tool prune: agent=agent name={TOOL} outcome=ok shape=text raw_chars=8000 kept_chars={body_chars} paragraphs=20 dropped=10 calls=2 jev_tokens=0 ms=* threshold=0.2 ratio={ratio:.3} scorer=scripted"
        )
    );
    assert_eq!(scorer.calls(), 1);
}

#[test]
fn a_score_equal_to_the_threshold_is_kept() {
    let text = page();
    let scorer = Arc::new(ScriptedScorer::new().scores(0..8, 0.19).scores(8..12, 0.2));
    let (p, _) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "ok");
    assert_eq!(dropped_of(report(&p)), (0..8).collect::<Vec<u32>>());
}

#[test]
fn threshold_is_one_of_four_values_and_anything_else_is_refused() {
    let text = page();
    let scorer = Arc::new(ScriptedScorer::new().scores(0..10, 0.25));
    for (asked, expected) in [(0.3, "ok"), (0.5, "ok"), (0.1, "nothing_dropped"), (0.2, "nothing_dropped")] {
        let mut o = options(REQUEST);
        o.threshold = asked;
        let (turn, log) = turn_with(o, scorer.clone());
        let p = prune(&turn, &text);
        assert_eq!(outcome(&p), expected, "threshold {asked}");
        assert_eq!(report(&p).threshold, asked);
        assert_eq!(field(&prune_line(&log), "threshold"), Some(asked.to_string().as_str()));
    }
    // SPEC §6: refused with the guest's message, never replaced by 0.2.
    for asked in ["0.22", "0", "NaN", "-1", "0.25", ""] {
        let refused = pruner().conversation(toolprune::ConversationOptions {
            threshold: Some(asked.to_string()),
            ..toolprune::ConversationOptions::default()
        });
        match refused {
            Err(toolprune::ConversationError::Threshold(message)) => {
                assert!(message.contains("is not one of 0.1"), "{asked:?}: {message}")
            }
            other => panic!("{asked:?} must be refused: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn structured_json_is_untouched_and_nothing_is_sent() {
    // An object of many strings: no wrapper, no dominant array (SPEC §8, §13).
    let items: std::collections::BTreeMap<String, String> = (0..20).map(|i| (format!("k{i:02}"), prose(i, 300))).collect();
    let text = serde_json::to_string_pretty(&items).unwrap();
    assert!(chars(&text) >= 4_000);
    let scorer = dropping(0..10);
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "structured");
    assert_full_text(&p, &text);
    assert_eq!(scorer.calls(), 0);
    assert!(line.contains(" outcome=structured "), "{line}");
    assert!(!line.contains("shape="), "structured lines carry no shape: {line}");
    assert_eq!(field(&line, "ratio"), Some("-"));
    assert_eq!(field(&line, "paragraphs"), Some("-"), "nothing was split: no count, not 0");
    assert_eq!(report(&p).shape, None);
    assert_eq!(report(&p).counts.paragraphs, None);
}

#[test]
fn structured_is_decided_before_the_basis() {
    let items: std::collections::BTreeMap<String, String> = (0..20).map(|i| (format!("k{i:02}"), prose(i, 300))).collect();
    let text = serde_json::to_string(&items).unwrap();
    let scorer = dropping(0..10);
    let (p, _) = run("ok", &scorer, &text);
    assert_eq!(outcome(&p), "structured");
    assert_eq!(scorer.calls(), 0);
}

#[test]
fn no_basis_under_20_trimmed_characters_sends_nothing() {
    let text = page();
    for request in ["  ok  ", "continue", "続けて", &format!("  {}  ", "x".repeat(19))] {
        let scorer = dropping(0..10);
        let (p, line) = run(request, &scorer, &text);
        assert_eq!(outcome(&p), "no_basis", "{request:?}");
        assert_full_text(&p, &text);
        assert_eq!(scorer.calls(), 0, "{request:?}");
        assert!(line.contains(" outcome=no_basis shape=text "), "{line}");
        assert_eq!(field(&line, "calls"), Some("0"));
        assert_eq!(field(&line, "ratio"), Some("-"));
    }
    // Twenty characters are enough.
    let scorer = dropping(0..10);
    let (p, _) = run(&format!("  {}  ", "x".repeat(20)), &scorer, &text);
    assert_eq!(outcome(&p), "ok");
}

#[test]
fn all_dropped_returns_the_full_text() {
    let text = page();
    let scorer = Arc::new(ScriptedScorer::new().default_score(Some(0.0)));
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "all_dropped");
    assert_full_text(&p, &text);
    assert_eq!(field(&line, "calls"), Some("2"));
    assert_eq!(field(&line, "ratio"), Some("-"));
    assert_eq!(report(&p).ratio, None);
}

#[test]
fn all_dropped_counts_only_scored_paragraphs() {
    // Batch 1 fails (kept, unscored); every scored paragraph is below.
    let text = page();
    let scorer = Arc::new(
        ScriptedScorer::new().default_score(Some(0.0)).fail_batch(1, Failure::Http(503)),
    );
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "all_dropped");
    assert_full_text(&p, &text);
    assert_eq!(field(&line, "calls"), Some("1"));
}

#[test]
fn nothing_dropped_returns_the_full_text() {
    let text = page();
    let scorer = dropping([]);
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "nothing_dropped");
    assert_full_text(&p, &text);
    assert_eq!(field(&line, "dropped"), Some("0"));
    assert_eq!(field(&line, "calls"), Some("2"));
    assert_eq!(field(&line, "ratio"), Some("-"));
}

#[test]
fn below_floor_returns_the_full_text_and_logs_the_ratio() {
    let text = page();
    let scorer = dropping([3]);
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "below_floor");
    assert_full_text(&p, &text);
    let ratio = report(&p).ratio.expect("the ratio was measured");
    assert!(ratio < 0.25, "{ratio}");
    assert_eq!(field(&line, "ratio"), Some(format!("{ratio:.3}").as_str()), "{line}");
    assert_eq!(field(&line, "dropped"), Some("1"));
    assert_eq!(field(&line, "kept_chars"), Some("8000"));
}

#[test]
fn timeout_returns_the_full_text_and_discards_every_score() {
    let text = page();
    // The scorer answers after the deadline (capped to 200 ms for the test).
    let scorer = Arc::new(ScriptedScorer::new().scores(0..10, 0.0).delay(Duration::from_secs(5)));
    let mut o = options(REQUEST);
    o.deadline_cap = Some(Duration::from_millis(200));
    let (turn, log) = turn_with(o, scorer.clone());
    let p = prune(&turn, &text);
    let line = prune_line(&log);
    assert_eq!(outcome(&p), "timeout");
    assert_full_text(&p, &text);
    assert!(line.contains(" outcome=timeout shape=text "), "{line}");
    assert_eq!(field(&line, "calls"), Some("0"));
    assert_eq!(field(&line, "dropped"), Some("0"));
    assert_eq!(field(&line, "ms"), Some("*"), "measured by the host");
    assert_eq!(field(&line, "ratio"), Some("-"));
    assert!(report(&p).paragraphs.iter().all(|r| r.score.is_none()));
}

#[test]
fn cancelled_returns_the_full_text() {
    let text = page();
    let scorer = Arc::new(ScriptedScorer::new().scores(0..10, 0.0));
    let cancel = CancelToken::new();
    cancel.cancel();
    let mut o = options(REQUEST);
    o.cancel = Some(cancel);
    let (turn, log) = turn_with(o, scorer.clone());
    let p = prune(&turn, &text);
    let line = prune_line(&log);
    assert_eq!(outcome(&p), "cancelled");
    assert_eq!(scorer.calls(), 0, "a cancelled turn scores nothing");
    assert_full_text(&p, &text);
    assert_eq!(field(&line, "calls"), Some("0"));
    assert_eq!(field(&line, "ratio"), Some("-"));
}

#[test]
fn failed_when_every_batch_fails() {
    let text = page();
    let scorer = Arc::new(
        ScriptedScorer::new()
            .scores(0..10, 0.0)
            .fail_batch(0, Failure::Http(500))
            .fail_batch(1, Failure::Network)
            ,
    );
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "failed");
    assert_full_text(&p, &text);
    assert_eq!(field(&line, "calls"), Some("0"));
    assert_eq!(field(&line, "ratio"), Some("-"));
    let failures: Vec<(u32, Option<u16>, String)> =
        report(&p).failures.iter().map(|f| (f.batch, f.status, wit_name(&f.class))).collect();
    assert_eq!(failures, vec![(0, Some(500), "http_5xx".into()), (1, None, "network".into())]);
}

#[test]
fn failed_when_every_answer_is_undecodable() {
    let text = page();
    let scorer = Arc::new(
        ScriptedScorer::new()
            .jev_response(0, "<html>502 Bad Gateway</html>")
            .jev_response(1, r#"{"success":false,"errors":[{"code":7000}],"result":null}"#)
            ,
    );
    let (p, _) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "failed");
    assert_full_text(&p, &text);
    assert!(report(&p).failures.iter().all(|f| wit_name(&f.class) == "undecodable"));
}

#[test]
fn a_failed_batch_keeps_its_paragraphs_and_the_rest_prunes() {
    let text = page();
    let scorer = Arc::new(
        ScriptedScorer::new().scores(0..12, 0.0).score(17, 0.0).fail_batch(1, Failure::Http(429)),
    );
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "ok");
    let r = report(&p);
    assert_eq!(dropped_of(r), (0..12).collect::<Vec<u32>>());
    for i in 16..20 {
        assert_eq!(r.paragraphs[i].fate, Fate::Unscored, "paragraph {i} of the failed batch");
    }
    assert!(p.body.contains(spans(&text)[17]), "paragraph 17 scored 0 but its batch failed: kept");
    assert_eq!(field(&line, "calls"), Some("1"), "calls counts successes");
    assert_eq!(r.failures.len(), 1);
    assert_eq!((r.failures[0].batch, r.failures[0].status, wit_name(&r.failures[0].class)), (1, Some(429), "rate_limited".to_string()));
}

/// A bare Jev answer for paragraphs `from..to`, each scored by `score(i)`.
fn jev_answers(range: std::ops::Range<u32>, score: impl Fn(u32) -> Option<String>) -> String {
    let answers: Vec<String> = range.filter_map(|i| score(i).map(|a| format!("\"p{i}\":{a}"))).collect();
    format!("{{{}}}", answers.join(","))
}

#[test]
fn jev_responses_decode_bare_and_in_the_cloudflare_envelope() {
    let text = page();
    let batch0 = jev_answers(0..16, |i| match i {
        0..=9 => Some(r#"{"type":"noul","noul":0.05}"#.into()),
        10 => Some(r#"{"type":"noul","noul":1.5}"#.into()),
        11 => Some(r#"{"type":"noul","noul":"0.1"}"#.into()),
        12 => Some(r#"{"type":"choice","noul":0.01}"#.into()),
        13 => None,
        14 => Some(r#"{"type":"noul","noul":-0.1}"#.into()),
        _ => Some(r#"{"type":"noul","noul":0.9}"#.into()),
    });
    let bare = format!(r#"{{"model":"jev-1.13.0","answers":{batch0},"usage":{{"input_tokens":1834,"output_tokens":0}}}}"#);
    let batch1 = jev_answers(16..20, |_| Some(r#"{"type":"noul","noul":0.5}"#.into()));
    let enveloped = format!(
        r#"{{"success":true,"result":{{"model":"jev-1.13.0","answers":{batch1},"usage":{{"input_tokens":1000,"output_tokens":0}}}},"errors":[],"messages":[]}}"#
    );
    let scorer = Arc::new(ScriptedScorer::new().jev_response(0, bare).jev_response(1, enveloped));
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "ok");
    let r = report(&p);
    assert_eq!(dropped_of(r), (0..10).collect::<Vec<u32>>());
    for i in 10..=14 {
        assert_eq!(r.paragraphs[i].fate, Fate::Unscored, "invalid answer for paragraph {i} is kept");
        assert!(p.body.contains(spans(&text)[i]));
    }
    assert_eq!(r.paragraphs[15].score, Some(0.9));
    assert_eq!(r.paragraphs[16].score, Some(0.5));
    assert_eq!(field(&line, "jev_tokens"), Some("2834"));
    assert_eq!(field(&line, "calls"), Some("2"));
}

// ----- cheap gates: raw, no log line, no scorer call -----

/// A Japanese text of exactly `n` characters (3 bytes each but the line ends).
fn cjk_text(n: usize) -> String {
    let sentence = "アップロードの再試行回数は設定ファイルの retry_limit で決まります。";
    let mut out = String::new();
    while chars(&out) < n {
        let mut para = String::new();
        while chars(&para) < 198 {
            para.push_str(sentence);
        }
        out.push_str(&para.chars().take(198).collect::<String>());
        out.push_str("\n\n");
    }
    out.chars().take(n).collect()
}

fn assert_cheap_gate_stops(result: ToolResult, enabled: bool) {
    let text = result.text.clone();
    let scorer = dropping(0..10);
    let mut o = options(REQUEST);
    o.enabled = enabled;
    let (turn, log) = turn_with(o, scorer.clone());
    let p = turn.on_tool_result(result);
    assert_full_text(&p, &text);
    assert!(log.lines().is_empty(), "no log line: {:?}", log.lines());
    assert_eq!(report(&p).log_line, None);
    assert_eq!(report(&p).counts.paragraphs, None, "not attempted: no paragraph count, not 0");
    assert_eq!(scorer.calls(), 0, "nothing leaves the machine");
}

#[test]
fn pruning_disabled_is_a_cheap_gate() {
    assert_cheap_gate_stops(ToolResult::prunable(TOOL, page()), false);
}

#[test]
fn pruning_is_disabled_by_default() {
    let scorer = dropping(0..10);
    let (mut turn, log) = turn_with(TurnOptions::new(REQUEST), scorer.clone());
    let text = page();
    let p = prune(&mut turn, &text);
    assert_full_text(&p, &text);
    assert!(log.lines().is_empty());
    assert_eq!(scorer.calls(), 0);
}

#[test]
fn a_failed_tool_call_is_a_cheap_gate() {
    assert_cheap_gate_stops(ToolResult { ok: false, ..ToolResult::prunable(TOOL, page()) }, true);
}

#[test]
fn a_tool_not_declared_prunable_is_a_cheap_gate() {
    assert_cheap_gate_stops(ToolResult::new(TOOL, page()), true);
}

#[test]
fn under_4000_characters_is_a_cheap_gate_counted_in_characters() {
    let ascii: String = page().chars().take(3_999).collect();
    assert_cheap_gate_stops(ToolResult::prunable(TOOL, ascii), true);
    let cjk = cjk_text(3_999);
    assert_eq!(chars(&cjk), 3_999);
    assert!(cjk.len() > 4_000, "the bytes pass 4,000, the characters do not");
    assert_cheap_gate_stops(ToolResult::prunable(TOOL, cjk), true);
}

#[test]
fn exactly_4000_characters_is_attempted() {
    for text in [page().chars().take(4_000).collect::<String>(), cjk_text(4_000)] {
        let scorer = dropping([]);
        let (p, line) = run(REQUEST, &scorer, &text);
        assert_eq!(field(&line, "raw_chars"), Some("4000"));
        assert_eq!(scorer.calls(), 1);
        assert_eq!(outcome(&p), "nothing_dropped");
    }
}

#[test]
fn only_fixed_paragraphs_is_ok_without_a_call() {
    let text = text_of(&[7_000, 8_000]);
    let scorer = dropping(0..2);
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "ok");
    assert!(p.body == text, "body == input");
    assert_eq!(scorer.calls(), 0);
    assert_eq!(field(&line, "calls"), Some("0"));
    assert_eq!(field(&line, "dropped"), Some("0"));
    assert!(report(&p).paragraphs.iter().all(|r| r.fate == Fate::Fixed));
}

#[test]
fn a_guest_trap_returns_the_full_text_and_the_turn_goes_on() {
    // 5·10⁶ fuel per call: enough for the 8,000-character page, not for
    // 800,000 characters.
    let big = uniform(2_000, 400);
    let scorer = dropping(0..10);
    let mut o = options(REQUEST);
    o.limits = Limits { fuel: Some(5_000_000), ..Limits::default() };
    let (turn, log) = turn_with(o, scorer.clone());
    let p = prune(&turn, &big);
    assert_eq!(outcome(&p), "failed");
    assert!(p.failure.is_some());
    assert_full_text(&p, &big);
    assert_eq!(log.lines(), vec![format!("tool prune: agent=agent name={TOOL} outcome=failed reason=guest_trap limit=fuel")]);
    let p = prune(&turn, &page());
    assert_eq!(outcome(&p), "ok", "a fresh instance serves the next call");
}

/// WIT `counts.dropped` is "paragraphs below the threshold (also when the
/// floor kept them)": `all_dropped` logs how many were below, not 0 — a
/// measured quantity is never written as 0 (SPEC §12).
#[test]
fn all_dropped_logs_how_many_paragraphs_were_below_the_threshold() {
    let text = page();
    let scorer = Arc::new(ScriptedScorer::new().default_score(Some(0.0)));
    let (p, line) = run(REQUEST, &scorer, &text);
    assert_eq!(outcome(&p), "all_dropped");
    assert_eq!(field(&line, "dropped"), Some("20"), "{line}");
    assert_eq!(report(&p).counts.dropped, 20);
}

#[test]
fn ms_is_written_only_when_a_host_scorer_answered() {
    // SPEC §12: never write 0 for a quantity that was not measured.
    let text = page();
    let (_, scored) = run(REQUEST, &dropping(0..10), &text);
    assert_eq!(field(&scored, "ms"), Some("*"), "{scored}");

    // The guest's own scorer has no clock: scoring happened, untimed.
    let doc = corpus_doc("pep-0817-wheel-variants.rst");
    let (mut offline, log) = turn(&doc.request_en, Scoring::Offline);
    let p = prune(&mut offline, &doc.text());
    let line = prune_line(&log);
    assert_eq!(report(&p).counts.calls, 0);
    assert_eq!(field(&line, "ms"), Some("-"), "{line}");

    // A gate after the cheap ones (no basis): no call at all.
    let scorer = dropping(0..10);
    let (_, no_basis) = run("hi", &scorer, &text);
    assert_eq!(field(&no_basis, "outcome"), Some("no_basis"));
    assert_eq!(field(&no_basis, "ms"), Some("-"), "{no_basis}");
    assert_eq!(scorer.calls(), 0);
}
