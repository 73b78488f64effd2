//! Verbatim (SPEC §1, §9): kept paragraphs keep their bytes and order,
//! nothing else changes; the same input and scores give the same bytes; the
//! raw text comes back beside the body.

use toolprune::types::Lang;
use toolprune_tests::*;

/// Asserts that an `ok` body is the header, then the kept paragraphs of
/// `text` verbatim and in order, with only marker lines in between.
fn assert_verbatim(text: &str, body: &str, report: &Report) {
    let kept = kept_text(text, report);
    assert!(strip_markers(body) == kept, "removing header and markers must leave exactly the kept paragraphs");
    let spans = spans(text);
    let mut at = 0;
    for (span, r) in spans.iter().zip(&report.paragraphs) {
        if r.fate == toolprune::types::Fate::Dropped {
            continue;
        }
        let found = body[at..].find(span).unwrap_or_else(|| panic!("kept paragraph {} not found in order", r.index));
        at += found + span.len();
    }
}

#[test]
fn nothing_dropped_gives_the_input_byte_for_byte() {
    for doc in corpus() {
        let text = doc.text();
        let scorer = dropping([]);
        let (mut turn, _log) = turn(&doc.request_en, scorer);
        let p = prune(&mut turn, &text);
        assert!(p.body == text, "{}: {}", doc.file, outcome(&p));
    }
}

#[test]
fn kept_paragraphs_are_verbatim_and_in_order_whatever_runs_are_dropped() {
    let lf = uniform(12, 500);
    let crlf = lf.replace('\n', "\r\n");
    let no_final_newline = lf.trim_end().to_string();
    for text in [&lf, &crlf, &no_final_newline] {
        for dropped in [vec![0, 1, 2, 3], vec![8, 9, 10, 11], vec![0, 2, 4, 6, 8, 10], vec![1, 2, 3, 6, 7, 9]] {
            let (mut turn, _log) = turn(REQUEST, dropping(dropped.clone()));
            let p = prune(&mut turn, text);
            assert_eq!(outcome(&p), "ok", "{dropped:?}");
            let r = report(&p);
            assert_eq!(dropped_of(r), dropped);
            assert_verbatim(text, &p.body, r);
            assert_eq!(marker_lines(&p.body).len(), {
                let mut runs = 1;
                for w in dropped.windows(2) {
                    runs += usize::from(w[1] != w[0] + 1);
                }
                runs
            });
        }
    }
}

#[test]
fn corpus_documents_pruned_keep_their_paragraphs_verbatim() {
    let mut pruned = 0;
    for doc in corpus() {
        let text = doc.text();
        let count = infos(&text).len();
        let (mut turn, _log) = turn(&doc.request_en, dropping_odd(count));
        let p = prune(&mut turn, &text);
        assert!(p.raw == text, "{}: the raw text comes back beside the body", doc.file);
        if outcome(&p) != "ok" {
            assert!(p.body == text, "{}: {} must give the raw text", doc.file, outcome(&p));
            continue;
        }
        pruned += 1;
        let r = report(&p);
        if r.shape == Some(toolprune::types::Shape::JsonWrapper) {
            continue; // wrapper.rs checks the decoded string
        }
        if r.shape == Some(toolprune::types::Shape::JsonArray) {
            continue; // arrays.rs checks the elements
        }
        assert_verbatim(&text, &p.body, r);
        if text.contains("\r\n") {
            assert!(!p.body.replace("\r\n", "").contains('\n'), "{}: CRLF text keeps CRLF", doc.file);
        }
    }
    assert!(pruned >= 8, "most corpus documents prune: {pruned}");
}

#[test]
fn japanese_markers_keep_paragraphs_verbatim_too() {
    let doc = corpus_doc("vue-docs-ja-watchers.md");
    let text = doc.text();
    let mut o = options(doc.request_ja.as_deref().unwrap());
    o.lang = Lang::Ja;
    let (mut turn, _log) = turn_with(o, dropping_odd(infos(&text).len()));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    assert!(p.body.starts_with("【関連度で段落を省略しています: "));
    assert_verbatim(&text, &p.body, report(&p));
}

#[test]
fn same_input_and_scores_give_the_same_bytes_in_fresh_turns() {
    for doc in [corpus_doc("mcp-spec-2025-11-25-transports.mdx"), corpus_doc("rust-rfc-3013-check-cfg.crlf.md")] {
        let text = doc.text();
        let count = infos(&text).len();
        let once = || {
            let (mut turn, log) = turn(&doc.request_en, dropping_odd(count));
            let p = prune(&mut turn, &text);
            (p.body, prune_lines(&log))
        };
        let (a, log_a) = once();
        let (b, log_b) = once();
        assert_ne!(a, text);
        assert!(a == b, "{}: two fresh turns gave different bytes", doc.file);
        assert_eq!(log_a, log_b);
    }
}

#[test]
fn the_raw_text_comes_back_beside_the_pruned_body() {
    let text = uniform(12, 500);
    let (mut turn, _log) = turn(REQUEST, dropping([1, 2, 3, 4, 5]));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    assert_ne!(p.body, text);
    assert!(p.raw == text, "repeat detection compares the raw text");
    // A second identical result in the same turn: scores may differ, the raw text does not.
    let p2 = prune(&mut turn, &text);
    assert_eq!(p2.raw, p.raw);
}
