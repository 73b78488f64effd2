//! The fault matrix (issue 6, SPEC §11): every fault gives the raw text (or a
//! correct body), and the host goes on serving the next call.
//!
//! Rows already tested elsewhere are listed here, not duplicated:
//!
//! | fault | test |
//! |---|---|
//! | scorer error (every batch fails: HTTP 500, network) | `tests/tests/outcomes.rs` `failed_when_every_batch_fails`; over HTTP: `hosts/rust/tests/jev.rs` (429/500/402/4xx, connection refused) |
//! | partial failure (one batch fails, the rest prunes) | `tests/tests/outcomes.rs` `a_failed_batch_keeps_its_paragraphs_and_the_rest_prunes` |
//! | timeout (finished batches discarded) | `tests/tests/outcomes.rs` `timeout_returns_the_full_text_and_discards_every_score`; `hosts/rust/tests/jev.rs` `a_stalled_server_times_out_within_the_deadline_and_finished_batches_are_discarded` |
//! | cancellation | `tests/tests/outcomes.rs` `cancelled_returns_the_full_text`; `hosts/rust/tests/jev.rs` `cancellation_while_waiting_answers_cancelled_at_once`, `a_token_cancelled_before_scoring_sends_nothing_and_wins_over_the_deadline`, `cli_ctrl_c_during_scoring_prints_the_raw_text_with_outcome_cancelled` |
//! | malformed Jev answers (HTML, error envelope) | `tests/tests/outcomes.rs` `failed_when_every_answer_is_undecodable`; guest `jev.rs` unit tests (out-of-range `noul`) |
//! | malformed `scores` answers (NaN, ±∞, out of [0, 1], too few / too many scores, missing / extra batch answers) | **here** |
//! | guest trap (the call traps; next call gets a fresh instance) | `tests/tests/outcomes.rs` `a_guest_trap_returns_the_full_text_and_the_turn_goes_on` |
//! | fuel exhaustion | `tests/tests/outcomes.rs` `a_guest_trap_returns_the_full_text_and_the_turn_goes_on`; conformance `traps-and-limits` |
//! | memory limit | `hosts/rust/tests/conversation.rs` `hitting_the_memory_limit_returns_the_raw_text_and_the_conversation_goes_on`; conformance `log-labels-host-failure` |
//! | a scorer that throws / panics (every batch `failed(network)`, the guest's line) | conformance `scorer-throws`; `hosts/rust/tests/conversation.rs` `a_scorer_that_panics_is_a_scorer_failure` |
//! | a scorer that hangs (the deadline holds for every scorer) | conformance `deadline-custom-scorer` |
//! | an 18 MB input of 120,000 paragraphs (fuel sized from the input) | conformance `large-input` (slow) |
//! | a 10 MB input (text and JSON wrapper), default limits | **here** |
//! | deeply nested JSON (100,000 levels: arrays, objects, unclosed, around a long string; and as `omitted` arguments) | **here** |
//! | invalid UTF-16 surrogates (lone surrogates in a JS string; a Python `str` from `errors="surrogateescape"`) | not reachable from Rust (`String` is UTF-8 by type; the CLI passes non-UTF-8 input through); Node: `hosts/js/test/surrogates.test.js`, Python: `hosts/python/tests/test_surrogates.py` (the guest is not called, the same string comes back, `reason=invalid_text`) |
//! | a leading run of byte-order marks (found by `fuzz/` `wrapper`: one guest stack frame per BOM) | guest `wrapper.rs` `only_one_byte_order_mark_is_skipped` |

use std::sync::{Arc, Mutex};

use toolprune::types::{BatchAnswer, ScoringRequest};
use toolprune::{Scorer, ScoringContext, ScriptedScorer};
use toolprune_tests::*;

/// A scorer answering each request with `answer(request)`; counts its calls.
struct Answering<F: Fn(&ScoringRequest) -> Vec<BatchAnswer> + Send + Sync> {
    answer: F,
    calls: Mutex<usize>,
}

impl<F: Fn(&ScoringRequest) -> Vec<BatchAnswer> + Send + Sync> Scorer for Answering<F> {
    fn name(&self) -> &str {
        "answering"
    }
    fn score(&self, request: &ScoringRequest, _: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        *self.calls.lock().unwrap() += 1;
        Ok((self.answer)(request))
    }
}

fn answering<F: Fn(&ScoringRequest) -> Vec<BatchAnswer> + Send + Sync + 'static>(answer: F) -> Arc<Answering<F>> {
    Arc::new(Answering { answer, calls: Mutex::new(0) })
}

/// Either the raw text byte for byte, or (outcome `ok`) exactly the kept
/// paragraphs verbatim plus the header and markers.
fn assert_correct_body(p: &Pruned, text: &str) {
    assert!(p.raw == text, "the raw text comes back beside the body");
    if p.body == text {
        return;
    }
    assert_eq!(outcome(p), "ok", "only `ok` may change the body");
    let kept = kept_text(text, report(p));
    assert!(strip_markers(&p.body) == kept, "the body is the kept paragraphs verbatim plus markers");
}

/// The turn still serves: a normal page prunes `ok` on the same turn.
fn assert_next_call_served(turn: &TestTurn) {
    let text = uniform(20, 400);
    let p = prune(turn, &text);
    assert!(p.failure.is_none(), "{:?}", p.failure);
    assert_correct_body(&p, &text);
}

#[test]
fn malformed_scores_keep_their_paragraphs_and_the_turn_goes_on() {
    let text = uniform(20, 400); // batches [0..16) and [16..20)
    let bad = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -0.01, -0.0 - 1e-300];
    // Paragraph i of batch 0 answers bad[i % 6] when i < 6, 0.0 (dropped) for 6..12, 1.0 after;
    // batch 0 answers two scores too many, batch 1 two too few.
    let scorer = answering(move |req| {
        req.batches
            .iter()
            .map(|b| {
                let mut s: Vec<Option<f64>> = b
                    .paragraphs
                    .iter()
                    .map(|&i| Some(if i < 6 { bad[i as usize] } else if i < 12 { 0.0 } else { 1.0 }))
                    .collect();
                if b.paragraphs[0] == 0 {
                    s.extend([Some(0.0), Some(0.0)]);
                } else {
                    s.truncate(s.len() - 2);
                }
                BatchAnswer::Scores(s)
            })
            .collect()
    });
    let (mut turn, _log) = turn(REQUEST, scorer.clone());
    let p = prune(&mut turn, &text);
    assert_correct_body(&p, &text);
    assert_eq!(outcome(&p), "ok");
    let r = report(&p);
    assert_eq!(dropped_of(r), (6..12).collect::<Vec<u32>>(), "invalid scores are not scores: kept");
    for i in 0..6 {
        assert_eq!(r.paragraphs[i].score, None, "paragraph {i}: {} is no probability", bad[i]);
    }
    assert_eq!(r.paragraphs[18].score, None, "a missing score is none");
    assert_next_call_served(&turn);
}

#[test]
fn missing_and_extra_batch_answers_fail_only_what_is_missing() {
    let text = uniform(20, 400);
    // One answer too few: batch 1 has none.
    let few = answering(|req| vec![BatchAnswer::Scores(req.batches[0].paragraphs.iter().map(|_| Some(0.0)).collect())]);
    let (mut turn, _log) = turn(REQUEST, few);
    let p = prune(&mut turn, &text);
    assert_correct_body(&p, &text);
    assert!(report(&p).failures.iter().any(|f| f.batch == 1 && wit_name(&f.class) == "no_answer"), "{:?}", report(&p).failures);
    assert_next_call_served(&turn);

    // Answers for batches that do not exist are ignored.
    let many = answering(|req| {
        let mut a: Vec<BatchAnswer> = req
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(b.paragraphs.iter().map(|&i| Some(if i % 2 == 0 { 0.0 } else { 1.0 })).collect()))
            .collect();
        a.push(BatchAnswer::Scores(vec![Some(0.0); 40]));
        a.push(BatchAnswer::JevResponse("{".repeat(100_000)));
        a
    });
    let (mut turn, _log) = toolprune_tests::turn(REQUEST, many);
    let p = prune(&mut turn, &text);
    assert_correct_body(&p, &text);
    assert_eq!(outcome(&p), "ok");
    assert_next_call_served(&turn);
}

#[test]
fn a_deeply_nested_jev_answer_is_undecodable_not_a_crash() {
    let text = uniform(20, 400);
    let deep = format!("{{\"answers\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let scorer = Arc::new(ScriptedScorer::new().jev_response(0, deep.clone()).jev_response(1, "{\"a\":".repeat(100_000)));
    let (mut turn, _log) = turn(REQUEST, scorer);
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "failed");
    assert!(p.body == text);
    assert!(report(&p).failures.iter().all(|f| wit_name(&f.class) == "undecodable"));
    assert_next_call_served(&turn);
}

/// ≈10 MB of prose (the text shape) under default limits: a correct body,
/// and the turn goes on.
#[test]
fn a_10_mb_text_gives_a_correct_body_under_default_limits() {
    let page = uniform(25, 400); // 10,000 bytes
    let text = page.repeat(1_000);
    assert!(text.len() >= 10_000_000);
    let scorer = dropping_odd(25_000);
    let (mut turn, _log) = turn(REQUEST, scorer.clone());
    let p = prune(&mut turn, &text);
    assert!(p.failure.is_none(), "{:?}", p.failure);
    assert_correct_body(&p, &text);
    assert_eq!(outcome(&p), "ok");
    assert!(p.body.len() < text.len());
    assert_next_call_served(&turn);
}

/// ≈10 MB inside a JSON wrapper: the body parses and the turn goes on.
#[test]
fn a_10_mb_json_wrapper_gives_a_correct_body_under_default_limits() {
    let inner = uniform(25, 400).repeat(1_000);
    let raw = serde_json::json!({ "content": inner, "isError": false }).to_string();
    let scorer = answering(|req| {
        req.batches
            .iter()
            .map(|b| BatchAnswer::Scores(b.paragraphs.iter().map(|&i| Some(if i % 2 == 1 { 0.0 } else { 1.0 })).collect()))
            .collect()
    });
    let (mut turn, _log) = turn(REQUEST, scorer);
    let p = prune(&mut turn, &raw);
    assert!(p.failure.is_none(), "{:?}", p.failure);
    assert!(p.raw == raw);
    let parsed: serde_json::Value = serde_json::from_str(&p.body).expect("the body is JSON");
    assert_eq!(parsed["isError"], serde_json::json!(false));
    if p.body != raw {
        assert_eq!(outcome(&p), "ok");
        let content = parsed["content"].as_str().unwrap();
        assert!(content.len() < inner.len());
    }
    assert_next_call_served(&turn);
}

/// 100,000 levels of nesting: never a crash; `structured` (or the raw text
/// another way), and the turn goes on.
#[test]
fn deeply_nested_json_returns_the_raw_text_and_the_turn_goes_on() {
    const N: usize = 100_000;
    let long = prose(0, 5_000);
    let texts = [
        format!("{}{}", "[".repeat(N), "]".repeat(N)),
        format!("{}1{}", "{\"a\":".repeat(N), "}".repeat(N)),
        "[".repeat(N),                                  // unclosed
        format!("{}\"x", "{\"a\":[".repeat(N)),        // unclosed, mixed
        format!("{{\"content\":\"{long}\",\"meta\":{}{}}}", "[".repeat(N), "]".repeat(N)), // a long string beside deep nesting
        format!("{}\"{long}\"{}", "[".repeat(N), "]".repeat(N)), // a long string at the bottom
    ];
    let scorer = dropping_odd(40);
    let (mut turn, log) = turn(REQUEST, scorer.clone());
    for text in &texts {
        let p = prune(&mut turn, text);
        assert!(p.failure.is_none(), "{} bytes: {:?}", text.len(), p.failure);
        assert!(p.raw == *text);
        if p.body != *text {
            // Only a wrapper's string may change: the nesting is untouched.
            assert_eq!(outcome(&p), "ok");
            let (b, t) = (p.body.as_bytes(), text.as_bytes());
            let pre = b.iter().zip(t).take_while(|(x, y)| x == y).count();
            let suf = b.iter().rev().zip(t.iter().rev()).take_while(|(x, y)| x == y).count();
            let changed = &text[pre..t.len() - suf.min(t.len() - pre)];
            assert!(!changed.contains(['[', ']', '{', '}']), "only inside the replaced string");
        }
    }
    for line in log.lines() {
        assert!(!line.contains("[[[[") && !line.contains("{\"a\""), "no document text in the log: {line}");
    }
    assert_next_call_served(&turn);
}

#[test]
fn deeply_nested_omitted_arguments_are_invalid_not_a_crash() {
    let text = uniform(20, 400);
    let (mut turn, _log) = turn(REQUEST, dropping_odd(20));
    assert_eq!(outcome(&prune(&mut turn, &text)), "ok");
    for args in [
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("{{\"id\":\"P1\",\"from\":{}1{}}}", "[".repeat(100_000), "]".repeat(100_000)),
        "{\"id\":".repeat(100_000),
    ] {
        let r = turn.omitted(&args).expect("the guest answers");
        assert_eq!(wit_name(&r.outcome), "invalid");
    }
    let r = turn.omitted(r#"{"id":"P1","from":1,"to":1}"#).expect("the guest answers");
    assert_eq!(wit_name(&r.outcome), "ok");
    assert_next_call_served(&turn);
}
