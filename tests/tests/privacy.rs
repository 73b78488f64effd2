//! SPEC §12: what leaves the machine, and the log. Over every corpus
//! document and case file, with its request: log lines carry counts, never
//! text; the scorer receives only the basis (≤ 2,000 characters) and scored
//! paragraphs — never the tool or agent name, never a paragraph over 6,000
//! characters, nothing at all when a gate stops the call.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use toolprune::types::{UnitKind, ScoringRequest, Shape};
use toolprune::{Scorer, ToolResult};
use toolprune_tests::*;

const AGENT: &str = "agent_label_never_sent";

/// Every document with its request: the corpus (English request) and the cases.
fn documents() -> Vec<(String, String, String)> {
    let mut docs: Vec<(String, String, String)> =
        corpus().into_iter().map(|d| (format!("corpus/{}", d.file), d.text(), d.request_en.clone())).collect();
    docs.extend(cases().into_iter().map(|c| (format!("cases/{}", c.file), c.text(), c.request.clone())));
    docs
}

fn options_for(request: &str) -> TurnOptions {
    let mut o = options(request);
    o.agent = AGENT.to_string();
    o
}

/// No 12-character run of `line` occurs in `doc`.
fn assert_no_text(name: &str, line: &str, doc: &str) {
    let chars: Vec<char> = line.chars().collect();
    for w in chars.windows(12) {
        let run: String = w.iter().collect();
        assert!(!doc.contains(&run), "{name}: the log line carries document text {run:?}: {line}");
    }
}

/// What was sent for `text` is the basis and scored paragraphs only.
fn assert_sent_only_scored_paragraphs(name: &str, text: &str, request: &str, shape: Option<Shape>, sent: &[ScoringRequest]) {
    let basis: String = request.chars().take(2_000).collect();
    let scored: BTreeSet<String> = match shape {
        Some(Shape::JsonWrapper) => {
            let inner: String = serde_json::from_str(&text[string_value_span(text, &longest_string_key(text))]).unwrap();
            let infos = infos(&inner);
            infos
                .iter()
                .filter(|p| p.kind == UnitKind::Scored)
                .map(|p| inner[p.byte_start as usize..p.byte_end as usize].to_string())
                .collect()
        }
        // Elements of a JSON array: each chunk is a raw span of the text
        // that decodes to one element of the array.
        Some(Shape::JsonArray) => {
            let elements = array_values(text);
            let chunks = sent.iter().flat_map(|r| &r.batches).flat_map(|b| &b.chunks);
            chunks
                .inspect(|c| {
                    assert!(text.contains(c.as_str()), "{name}: a chunk that is not a span of the text was sent");
                    let v: Value = serde_json::from_str(c).expect("an element is JSON");
                    assert!(elements.contains(&v), "{name}: a chunk that is not an element was sent");
                })
                .cloned()
                .collect()
        }
        _ => infos(text)
            .iter()
            .filter(|p| p.kind == UnitKind::Scored)
            .map(|p| text[p.byte_start as usize..p.byte_end as usize].to_string())
            .collect(),
    };
    for request in sent {
        assert_eq!(request.basis, basis, "{name}: the basis is the first 2,000 characters of the request");
        for batch in &request.batches {
            for chunk in &batch.chunks {
                assert!(chars(chunk) <= 6_000, "{name}: a paragraph over 6,000 characters was sent");
                assert!(scored.contains(chunk), "{name}: a chunk that is not a scored paragraph was sent");
            }
            let body: Value = serde_json::from_str(&batch.jev_body).expect("the Jev body is JSON");
            let keys: BTreeSet<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys, BTreeSet::from(["state", "questions"]), "{name}: no model unless configured");
            assert_eq!(body["state"]["request"], Value::String(basis.clone()));
            let chunks: Vec<&str> = body["state"]["chunks"].as_object().unwrap().values().map(|v| v.as_str().unwrap()).collect();
            let mut expected: Vec<&str> = batch.chunks.iter().map(String::as_str).collect();
            let mut chunks = chunks;
            chunks.sort();
            expected.sort();
            assert_eq!(chunks, expected, "{name}: the Jev body holds exactly the batch's paragraphs");
            for secret in [TOOL, AGENT] {
                assert!(!batch.jev_body.contains(secret), "{name}: {secret} left the machine");
                assert!(!request.basis.contains(secret) && batch.chunks.iter().all(|c| !c.contains(secret)));
            }
        }
    }
}

/// Prunes one document under `scorer` and checks the log and what was sent.
fn check_document(name: &str, text: &str, request: &str, scorer: Arc<dyn Scorer>, sent: &dyn Fn() -> Vec<ScoringRequest>) {
    let (mut turn, log) = turn_with(options_for(request), scorer);
    let p = prune(&mut turn, text);
    for line in log.lines() {
        assert_no_text(name, &line, text);
    }
    let shape = p.report.as_ref().and_then(|r| r.shape);
    assert_sent_only_scored_paragraphs(name, text, request, shape, &sent());
    if outcome(&p) == "ok" {
        let r = turn.omitted(r#"{"id":"P1","from":0,"to":100000}"#).unwrap();
        assert_no_text(name, &r.log_line, text);
    }
}

#[test]
fn log_lines_carry_no_text_and_only_paragraphs_leave_the_machine() {
    for (name, text, request) in documents() {
        let stub = Arc::new(RecordingStub::default());
        check_document(&name, &text, &request, stub.clone(), &|| stub.requests());
        let scripted = dropping_odd(infos(&text).len());
        check_document(&name, &text, &request, scripted.clone(), &|| scripted.requests());
    }
}

#[test]
fn nothing_leaves_the_machine_when_a_gate_stops_the_call() {
    for (name, text, request) in documents() {
        let results = [
            (true, ToolResult { ok: false, ..ToolResult::prunable(TOOL, text.clone()) }),
            (true, ToolResult::new(TOOL, text.clone())),
            (false, ToolResult::prunable(TOOL, text.clone())),
        ];
        for (enabled, result) in results {
            let stub = Arc::new(RecordingStub::default());
            let mut o = options_for(&request);
            o.enabled = enabled;
            let (mut turn, log) = turn_with(o, stub.clone());
            let p = turn.on_tool_result(result);
            assert!(p.body == text, "{name}");
            assert!(stub.requests().is_empty(), "{name}: a gate stopped the call, yet something was sent");
            assert!(log.lines().is_empty(), "{name}: a cheap gate writes no log line");
        }
        // No basis, or not a wrapper: a log line, nothing sent.
        let stub = Arc::new(RecordingStub::default());
        let (mut turn, _log) = turn_with(options_for("ok"), stub.clone());
        prune(&mut turn, &text);
        assert!(stub.requests().is_empty(), "{name}: no_basis sent something");
    }
}

#[test]
fn the_basis_is_at_most_2000_characters_of_the_request() {
    let request = "アップロードの再試行回数を設定するにはどうすればよいですか？".repeat(100);
    assert!(chars(&request) > 2_000);
    let scorer = dropping([1, 2, 3]);
    let (mut turn, _log) = turn(&request, scorer.clone());
    prune(&mut turn, &uniform(12, 500));
    let sent = scorer.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(chars(&sent[0].basis), 2_000);
    assert!(request.starts_with(&sent[0].basis));
    for batch in &sent[0].batches {
        let body: Value = serde_json::from_str(&batch.jev_body).unwrap();
        assert_eq!(body["state"]["request"].as_str().unwrap(), sent[0].basis);
    }
}

#[test]
fn the_jev_model_is_named_only_when_configured() {
    let mut o = options(REQUEST);
    o.jev_model = Some("jev-1.13.0".into());
    let scorer = dropping([1, 2, 3]);
    let (mut turn, _log) = turn_with(o, scorer.clone());
    prune(&mut turn, &uniform(12, 500));
    let body: Value = serde_json::from_str(&scorer.requests()[0].batches[0].jev_body).unwrap();
    assert_eq!(body["model"], "jev-1.13.0");
}

#[test]
fn the_offline_scorer_sends_nothing_and_logs_no_text() {
    let mut pruned = 0;
    for (name, text, request) in documents() {
        // The offline scorer is the guest's: the host has no scorer to call,
        // and the guest asks for no scoring (calls=0, ms=-: nothing measured).
        let (turn, log) = turn_with(options_for(&request), Scoring::Offline);
        let p = prune(&turn, &text);
        for line in log.lines() {
            assert!(line.contains(" ms=- ") || !line.contains(" ms="), "{name}: {line}");
            assert_no_text(&name, &line, &text);
            assert!(line.contains(" scorer=offline") && line.contains(" calls=0 "), "{name}: {line}");
        }
        pruned += usize::from(outcome(&p) == "ok" && p.body != text);
    }
    assert!(pruned > 0, "the offline scorer pruned nothing at all");
}
