//! Property tests of the whole pruning decision (issue 6), natively:
//! `prune::Job::start` → arbitrary scores → `Job::complete`.
//!
//! - every body is the input byte for byte, or (outcome `ok`) the header, then
//!   the kept paragraphs verbatim in order with one marker line per dropped
//!   run, naming that run — nothing else;
//! - for a JSON wrapper the body parses, differs from the input only inside
//!   the replaced string, and that string obeys the rule above;
//! - no input and no answer makes the guest panic.
//!
//! Paragraphs reassembling to the input byte for byte is
//! `split::tests::spans_tile_and_chars_are_counted_for_any_string` (and the
//! other `check_invariants` properties in `guest/src/split.rs`); the wrapper's
//! `body::wrapper` alone is `shape::tests::replace_parses_keeps_outside_bytes_and_decodes_to_the_new_value`.

use proptest::prelude::*;
use toolprune_guest::types::{BatchAnswer, Fate, Lang, Outcome, PruneInput, Pruned, ScorerChoice, ScoringResponse};
use toolprune_guest::prune::{inspect, Job};

const REQUEST: &str = "How do I configure the retry limit and the backoff of the upload client?";

fn input(text: &str, scores_lang: Lang, threshold: f64) -> PruneInput {
    PruneInput {
        request: REQUEST.to_string(),
        text: text.to_string(),
        enabled: true,
        succeeded: true,
        prunable: true,
        threshold,
        lang: scores_lang,
        report: true,
        scorer: ScorerChoice::Host("prop".into()),
        jev_model: None,
        agent: "prop".into(),
        tool: "fetch".into(),
        arguments: None,
        pruned_calls: Vec::new(),
        work_budget: None,
    }
}

/// The body the model receives: the pruned body, or the input itself.
fn body_of(pruned: &Pruned, text: &str) -> String {
    pruned.body.clone().unwrap_or_else(|| text.to_string())
}

/// Runs the decision with paragraph `n` answered `scores[n % len]`.
fn decide(text: &str, lang: Lang, threshold: f64, scores: &[Option<f64>]) -> Pruned {
    let job = Job::start(input(text, lang, threshold));
    let response = job.request().map(|req| ScoringResponse {
        answers: Ok(req
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(b.paragraphs.iter().map(|&n| scores[n as usize % scores.len()]).collect()))
            .collect()),
        elapsed_ms: 1,
    });
    job.complete(response, 1)
}

fn skip_newlines(body: &str, mut pos: usize, at_most: usize) -> usize {
    let mut n = 0;
    while n < at_most {
        if body[pos..].starts_with("\r\n") {
            pos += 2;
        } else if body[pos..].starts_with('\n') || body[pos..].starts_with('\r') {
            pos += 1;
        } else {
            break;
        }
        n += 1;
    }
    pos
}

/// `body` is `text` byte for byte, or header + kept paragraphs verbatim + markers.
fn check_body(text: &str, body: &str, pruned: &Pruned) -> Result<(), TestCaseError> {
    if body == text {
        return Ok(());
    }
    prop_assert_eq!(pruned.outcome, Outcome::Ok, "only `ok` may change the text");
    let infos = inspect(text).units;
    prop_assert_eq!(infos.len(), pruned.paragraphs.len());
    let drop: Vec<bool> = pruned.paragraphs.iter().map(|r| r.fate == Fate::Dropped).collect();
    prop_assert!(drop.iter().any(|d| *d), "a changed body drops something");
    // The header: one line ending `id=P1]` / `id=P1】`, then a blank line.
    let bom = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
    prop_assert_eq!(&body[..bom], &text[..bom]);
    let header_end = body
        .find("id=P1]")
        .map(|i| i + "id=P1]".len())
        .or_else(|| body.find("id=P1】").map(|i| i + "id=P1】".len()));
    let Some(header_end) = header_end else {
        return Err(TestCaseError::fail("no header"));
    };
    prop_assert!(!body[bom..header_end].contains('\n'), "the header is one line");
    let mut pos = skip_newlines(body, header_end, 2);
    prop_assert!(pos > header_end, "a blank line after the header");
    let mut i = 0;
    while i < infos.len() {
        let start = (infos[i].byte_start as usize).max(bom);
        let span = &text[start..infos[i].byte_end as usize];
        if !drop[i] {
            prop_assert!(body[pos..].starts_with(span), "kept paragraph {} verbatim at byte {}", i, pos);
            pos += span.len();
            i += 1;
            continue;
        }
        let mut last = i;
        while last + 1 < infos.len() && drop[last + 1] {
            last += 1;
        }
        pos = skip_newlines(body, pos, 2);
        let names = [
            if i == last { format!("[… paragraph {i} omitted: ") } else { format!("[… paragraphs {i}–{last} omitted: ") },
            if i == last { format!("［… 段落 {i}・") } else { format!("［… 段落 {i}〜{last}・") },
        ];
        prop_assert!(names.iter().any(|n| body[pos..].starts_with(n.as_str())), "marker for {}..={} at byte {}", i, last, pos);
        let end = body[pos..].find(['\n', '\r']).map_or(body.len(), |e| pos + e);
        let line = &body[pos..end];
        prop_assert!(line.ends_with("…]") || line.ends_with("…］"), "one marker line: {}", line);
        pos = end;
        pos = skip_newlines(body, pos, if last + 1 < infos.len() { 2 } else { 1 });
        i = last + 1;
    }
    prop_assert_eq!(pos, body.len(), "nothing after the last paragraph");
    Ok(())
}

fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "upload ", "client ", "retry ", "limit ", "backoff ", "the ", "and ", "configure ", "parts ", "of ",
        "é ", "日本語の文章", "🦀 ", "\t", "`x` ", "# Title ", "- item ", "> quote ", "[… ", "…] ", "{\"a\": 1} ",
        "\n", "\n", "\n\n", "\r\n\r\n", "\n \n", "\n\n\n", "\r\r", "\n```\ncode\n\nmore code\n```\n", "\n~~~\n",
    ])
}

/// Text that passes the gates (≥ 4,000 characters, not JSON).
fn prose() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 300..2_500).prop_map(|parts| {
        let mut s = String::from("Doc ");
        s.push_str(&parts.concat());
        while s.chars().count() < 4_000 {
            s.push_str("upload client retry limit backoff\n\n");
        }
        s
    })
}

fn score() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        6 => (0.0f64..=1.0).prop_map(Some),
        2 => Just(Some(0.0)),
        1 => Just(None),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, -0.5, 1.5, 0.2, 0.1, 0.3, 0.5]).prop_map(Some),
    ]
}

fn scores() -> impl Strategy<Value = Vec<Option<f64>>> {
    prop::collection::vec(score(), 1..50)
}

fn threshold() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.1, 0.2, 0.3, 0.5, 0.42, f64::NAN])
}

fn lang() -> impl Strategy<Value = Lang> {
    prop_oneof![Just(Lang::En), Just(Lang::Ja)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_text_body_is_the_input_or_the_kept_paragraphs_plus_markers(
        text in prose(), scores in scores(), threshold in threshold(), lang in lang(),
    ) {
        let pruned = decide(&text, lang, threshold, &scores);
        if std::env::var_os("PROPS_STATS").is_some() {
            eprintln!("outcome {:?} changed {}", pruned.outcome, pruned.body.is_some());
        }
        prop_assert_eq!(pruned.body.is_some(), pruned.outcome == Outcome::Ok);
        check_body(&text, &body_of(&pruned, &text), &pruned)?;
    }

    #[test]
    fn a_wrapper_body_parses_and_changes_only_inside_the_replaced_string(
        inner in prose(), scores in scores(), threshold in threshold(), lang in lang(),
        before in "[a-z]{1,8}", after in 0u32..1_000,
    ) {
        let raw = serde_json::json!({ "tool": before, "content": inner, "meta": { "n": after, "ok": true } }).to_string();
        let pruned = decide(&raw, lang, threshold, &scores);
        if std::env::var_os("PROPS_STATS").is_some() {
            eprintln!("wrapper outcome {:?} changed {}", pruned.outcome, pruned.body.is_some());
        }
        let Some(body) = pruned.body.clone() else {
            return Ok(());
        };
        prop_assert_eq!(pruned.outcome, Outcome::Ok);
        let parsed: serde_json::Value = serde_json::from_str(&body).map_err(|e| TestCaseError::fail(format!("not JSON: {e}")))?;
        prop_assert_eq!(&parsed["tool"], &serde_json::json!(before));
        prop_assert_eq!(&parsed["meta"], &serde_json::json!({ "n": after, "ok": true }));
        // Outside the string, the bytes are the input's.
        let start = raw.find("\"content\":\"").unwrap() + "\"content\":\"".len();
        let old_end = start + serde_json::to_string(&inner).unwrap().len() - 2;
        let new_value = parsed["content"].as_str().unwrap();
        let new_end = start + serde_json::to_string(new_value).unwrap().len() - 2;
        prop_assert_eq!(&body[..start], &raw[..start]);
        prop_assert_eq!(&body[new_end..], &raw[old_end..]);
        check_body(&inner, new_value, &pruned)?;
    }

    #[test]
    fn no_text_and_no_answer_makes_the_guest_panic(
        s in any::<String>(), scores in scores(), threshold in threshold(), lang in lang(),
        json in any::<bool>(),
    ) {
        let text = if s.is_empty() { s } else { s.repeat(4_000 / s.chars().count().max(1) + 1) };
        let text = if json { serde_json::json!({ "content": text }).to_string() } else { text };
        let pruned = decide(&text, lang, threshold, &scores);
        prop_assert!(pruned.body.is_none() || pruned.outcome == Outcome::Ok);
        // A request with no answers at all, and with a stop.
        let job = Job::start(input(&text, lang, threshold));
        if job.request().is_some() {
            let p = job.complete(Some(ScoringResponse { answers: Ok(vec![]), elapsed_ms: 0 }), 1);
            prop_assert!(p.body.is_none());
            let p = job.complete(None, 1);
            prop_assert!(p.body.is_none());
        }
    }
}
