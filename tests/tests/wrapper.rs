//! SPEC §8: a JSON wrapper is pruned in place — only its longest direct
//! string changes, the rest of the raw text keeps its bytes; anything
//! ambiguous gives up as `structured` without sending anything.

use std::sync::Arc;

use serde_json::Value;
use toolprune::types::{Fate, Shape};
use toolprune::ScriptedScorer;
use toolprune_tests::*;

/// Prunes the wrapper `raw` (dropping odd inner paragraphs) and checks
/// every SPEC §8 promise; returns the scorer to inspect what was sent.
fn assert_pruned_in_place(raw: &str, request: &str) -> Arc<ScriptedScorer> {
    let key = longest_string_key(raw);
    let span = string_value_span(raw, &key);
    let inner: String = serde_json::from_str(&raw[span.clone()]).unwrap();
    let count = infos(&inner).len();
    let scorer = dropping_odd(count);
    let (mut turn, log) = turn(request, scorer.clone());
    let p = prune(&mut turn, raw);
    let line = prune_line(&log);
    assert_eq!(outcome(&p), "ok", "{line}");
    let r = report(&p);
    assert_eq!(r.shape, Some(Shape::JsonWrapper));
    assert!(line.contains(" shape=json_wrapper "), "{line}");

    // Valid JSON, the same keys in the same order, the other values unchanged.
    let before: Value = serde_json::from_str(raw).unwrap();
    let after: Value = serde_json::from_str(&p.body).expect("the pruned body parses as JSON");
    for (k, v) in before.as_object().unwrap() {
        if *k != key {
            assert_eq!(&after[k], v, "value of {k}");
        }
    }
    // Only the string's span was replaced.
    let pruned_inner = replaced_string(raw, &p.body, span).unwrap();
    assert!(pruned_inner.starts_with("[Omitted by relevance: "), "the markers live inside the string");
    assert!(!p.body.replace(&serde_json::to_string(&pruned_inner).unwrap(), "").contains("[Omitted"));
    // Kept inner paragraphs verbatim and in order.
    assert_eq!(r.paragraphs.len(), count, "paragraphs are those of the decoded string");
    assert!(strip_markers(&pruned_inner) == kept_text(&inner, r), "kept inner paragraphs verbatim");
    // The net ratio is measured on the whole raw text.
    assert_eq!(field(&line, "raw_chars"), Some(chars(raw).to_string().as_str()));
    let ratio = (chars(raw) as f64 - chars(&p.body) as f64) / chars(raw) as f64;
    assert!((r.ratio.unwrap() - ratio).abs() < 1e-9);
    // The way back reads the decoded paragraphs.
    let first_dropped = r.paragraphs.iter().find(|q| q.fate == Fate::Dropped).unwrap().index;
    let back = turn.omitted(&format!(r#"{{"id":"P1","from":{first_dropped},"to":{first_dropped}}}"#)).unwrap();
    assert_eq!(back.text, spans(&inner)[first_dropped as usize]);
    scorer
}

#[test]
fn the_corpus_wrapper_is_pruned_in_place() {
    let doc = corpus_doc("pydantic-validators.wrapper.json");
    assert_pruned_in_place(&doc.text(), &doc.request_en);
}

#[test]
fn wrapper_cases_are_pruned_in_place_escaped_or_raw() {
    for file in ["wrapper-raw-utf8.json", "wrapper-ascii-escaped.json"] {
        let case = case(file);
        assert_pruned_in_place(&case.text(), &case.request);
    }
}

#[test]
fn a_wrapper_sends_only_its_inner_paragraphs() {
    let doc = corpus_doc("pydantic-validators.wrapper.json");
    let raw = doc.text();
    let inner: String = serde_json::from_str(&raw[string_value_span(&raw, "content")]).unwrap();
    let scorer = assert_pruned_in_place(&raw, &doc.request_en);
    let requests = scorer.requests();
    assert_eq!(requests.len(), 1);
    let sent: Vec<&String> = requests[0].batches.iter().flat_map(|b| &b.chunks).collect();
    // Every paragraph of the inner string, each without its separator, in order.
    let expected: Vec<&str> = spans(&inner).into_iter().map(str::trim_end).filter(|p| !p.trim().is_empty()).collect();
    let sent: Vec<&str> = sent.iter().map(|c| c.as_str()).collect();
    assert_eq!(sent.len(), expected.len(), "one chunk per inner paragraph");
    assert!(sent.iter().zip(&expected).all(|(s, e)| e.ends_with(s)), "exactly the inner paragraphs");
    for batch in &requests[0].batches {
        let body: Value = serde_json::from_str(&batch.jev_body).unwrap();
        let body_text = body.to_string();
        for outside in ["docs/concepts/validators.md", "\"path\"", "\"size\"", "30385"] {
            assert!(!body_text.contains(outside), "{outside} left the machine");
        }
    }
}

#[test]
fn a_wrapper_behind_a_bom_with_a_trailing_newline_keeps_both() {
    let inner = uniform(20, 300);
    let raw = format!("\u{FEFF}{{\"title\": \"Retries\", \"body\": {}, \"n\": 20}}\n", serde_json::to_string(&inner).unwrap());
    let span = string_value_span(&raw, "body");
    let (mut turn, _log) = turn(REQUEST, dropping_odd(20));
    let p = prune(&mut turn, &raw);
    assert_eq!(outcome(&p), "ok");
    assert!(p.body.starts_with('\u{FEFF}') && p.body.ends_with("}\n"));
    replaced_string(&raw, &p.body, span).unwrap();
}

/// A JSON text that is not a wrapper must be `structured`, untouched, unsent.
fn assert_gives_up(raw: &str, why: &str) {
    assert!(chars(raw) >= 4_000, "{why}: past the size gate");
    let scorer = dropping_odd(100);
    let (mut turn, log) = turn(REQUEST, scorer.clone());
    let p = prune(&mut turn, raw);
    assert_eq!(outcome(&p), "structured", "{why}");
    assert!(p.body == raw, "{why}: untouched");
    assert_eq!(scorer.calls(), 0, "{why}: nothing sent");
    assert!(!prune_line(&log).contains("shape="));
}

fn long(n: usize) -> String {
    serde_json::to_string(&uniform(n, 300)).unwrap()
}

#[test]
fn ambiguous_or_small_wrappers_give_up_as_structured() {
    assert_gives_up(&format!("[{}]", long(20)), "a top-level array");
    assert_gives_up(&format!("[{{\"content\": {}}}]", long(20)), "an array holding a wrapper");
    assert_gives_up(&format!("{{\"content\": {}, \"content\": \"x\"}}", long(20)), "a duplicate key");
    assert_gives_up(&format!("{{\"content\": {}, \"\\u0063ontent\": 1}}", long(20)), "a duplicate key, escaped");
    assert_gives_up(&format!("{{\"a\": {}, \"b\": {}}}", long(20), long(20)), "a tie for the longest string");
    let filler: Vec<u32> = (0..1_200).collect();
    assert_gives_up(
        &format!("{{\"content\": {}, \"ids\": {}}}", long(16), serde_json::to_string(&filler).unwrap()),
        "the string under 60 % of the raw text",
    );
    assert_gives_up(
        &format!("{{\"content\": {}, \"ids\": {}}}", long(13), serde_json::to_string(&filler[..150]).unwrap()),
        "the string under 4,000 characters",
    );
    assert_gives_up(&format!("{{\"data\": {{\"content\": {}}}}}", long(20)), "the string nested one level down");
    assert_gives_up(&format!("\"{}\"", "x".repeat(5_000)), "a top-level string");
}

#[test]
fn text_that_merely_starts_with_a_brace_is_text() {
    let text = format!("{{ not json }}\n\n{}", uniform(20, 300));
    let (mut turn, _log) = turn(REQUEST, dropping_odd(21));
    let p = prune(&mut turn, &text);
    assert_eq!(report(&p).shape, Some(Shape::Text));
}
