//! SPEC §13 (issue 7): JSON arrays pruned element by element. Through the
//! harness: the body always parses as JSON, kept elements keep their bytes,
//! each dropped run is one marker string naming its elements, the first
//! marker carries the header, everything outside the array is unchanged,
//! and `omitted` gives the dropped elements back as a JSON array text.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use toolprune::types::{Fate, Lang, OmittedOutcome, Shape};
use toolprune::{Scorer, ScriptedScorer};
use toolprune_tests::*;

/// Element numbers a marker string names (`element 4`, `elements 1–2`,
/// `要素 4・`, `要素 1〜2・`), or `None` when the string is not a marker.
fn marker_indices(s: &str) -> Option<Vec<usize>> {
    let run = if let Some(at) = s.rfind("[… element") {
        let rest = &s[at..];
        let rest = rest.strip_prefix("[… elements ").or_else(|| rest.strip_prefix("[… element "))?;
        rest.split(" omitted").next()?.to_string()
    } else if let Some(at) = s.rfind("［… 要素 ") {
        s[at + "［… 要素 ".len()..].split('・').next()?.to_string()
    } else {
        return None;
    };
    let mut ends = run.split(['–', '〜']).map(|n| n.trim().parse::<usize>());
    let first = ends.next()?.ok()?;
    let last = match ends.next() {
        Some(n) => n.ok()?,
        None => first,
    };
    Some((first..=last).collect())
}

/// The array inside a parsed body (top level, or the value under `key`).
fn the_array<'a>(v: &'a Value, key: Option<&str>) -> &'a Vec<Value> {
    match key {
        Some(k) => v[k].as_array().expect("the list is still an array"),
        None => v.as_array().expect("the body is still an array"),
    }
}

/// Checks every promise of an `ok` array result; returns the dropped elements.
fn assert_array_pruned(turn: &TestTurn, raw: &str, p: &Pruned, key: Option<&str>) -> Vec<usize> {
    assert_eq!(outcome(p), "ok");
    let r = report(p);
    assert_eq!(r.shape, Some(Shape::JsonArray));
    let before: Value = serde_json::from_str(raw).unwrap();
    let after: Value = serde_json::from_str(&p.body).expect("the pruned body parses as JSON");
    let (b, a) = (the_array(&before, key), the_array(&after, key));
    assert_eq!(r.paragraphs.len(), b.len(), "one unit per element");
    let dropped: Vec<usize> =
        r.paragraphs.iter().filter(|q| q.fate == Fate::Dropped).map(|q| q.index as usize).collect();
    assert!(!dropped.is_empty());
    // Outside the array: the other keys unchanged.
    if let (Some(bo), Some(ao)) = (before.as_object(), after.as_object()) {
        assert_eq!(bo.keys().collect::<Vec<_>>(), ao.keys().collect::<Vec<_>>());
        for (k, v) in bo {
            if Some(k.as_str()) != key {
                assert_eq!(&ao[k], v, "{k}");
            }
        }
    }
    // Kept elements in order and their raw bytes present; one marker per run.
    let mut named = BTreeSet::new();
    let mut next = 0;
    let mut markers = 0;
    for item in a {
        if let Some(indices) = item.as_str().and_then(marker_indices) {
            markers += 1;
            assert_eq!(indices[0], next, "a marker stands where its run was");
            if markers == 1 {
                let s = item.as_str().unwrap();
                assert!(s.contains("id=P1"), "the first marker carries the header: {s}");
            }
            next = indices.last().unwrap() + 1;
            named.extend(indices);
        } else {
            assert!(!dropped.contains(&next), "element {next} dropped but not marked");
            assert_eq!(item, &b[next], "kept element {next}");
            next += 1;
        }
    }
    assert_eq!(next, b.len());
    assert_eq!(named, dropped.iter().copied().collect::<BTreeSet<_>>(), "every dropped element is named by a marker");
    // The way back: every dropped element, as a JSON array of raw spans.
    let back = turn.omitted(&format!(r#"{{"id":"P1","from":0,"to":{}}}"#, b.len() - 1)).unwrap();
    if back.outcome == OmittedOutcome::Ok {
        let got: Vec<Value> = serde_json::from_str(&back.text).expect("omitted answers a JSON array");
        let want: Vec<Value> = dropped.iter().map(|&i| b[i].clone()).collect();
        assert_eq!(got, want);
    } else {
        assert_eq!(back.outcome, OmittedOutcome::TooLarge);
    }
    for &i in &dropped {
        let one = turn.omitted(&format!(r#"{{"id":"P1","from":{i},"to":{i}}}"#)).unwrap();
        assert_eq!(one.outcome, OmittedOutcome::Ok);
        let got: Vec<Value> = serde_json::from_str(&one.text).unwrap();
        assert_eq!(got, vec![b[i].clone()]);
        assert!(raw.contains(one.text.trim_start_matches('[').trim_end_matches(']')), "a raw span");
    }
    dropped
}

fn post(i: usize, topic: &str) -> String {
    format!(
        "{{\"id\": {i}, \"author\": \"user{i}\", \"title\": \"post {i}\", \"body\": \"{}\"}}",
        format!("This post is about {topic} and only {topic}; it goes on at length about {topic}. ").repeat(5)
    )
}

fn posts(topics: &[&str], sep: &str) -> String {
    let items: Vec<String> = topics.iter().enumerate().map(|(i, t)| post(i, t)).collect();
    format!("[{}]", items.join(sep))
}

fn twenty() -> Vec<&'static str> {
    (0..20).map(|i| if i % 7 == 3 { "upload retry limits" } else { "gardening tomatoes" }).collect()
}

#[test]
fn vue_partners_with_its_request_offline() {
    let doc = corpus_doc("vue-docs-partners.json");
    let raw = doc.text();
    let (mut turn, log) = turn(&doc.request_en, Scoring::Offline);
    let p = prune(&mut turn, &raw);
    let line = prune_line(&log);
    assert!(line.contains(" shape=json_array "), "{line}");
    assert!(line.contains(" outcome=ok "), "{line}");
    let dropped = assert_array_pruned(&mut turn, &raw, &p, None);
    assert!(!dropped.is_empty() && dropped.len() < 7);
    assert!(p.body.starts_with("[\n  \"[Omitted by relevance: ") || p.body.contains("\"[Omitted by relevance: "));
}

#[test]
fn vue_partners_scripted_scores_all_but_one_dropped() {
    let doc = corpus_doc("vue-docs-partners.json");
    let raw = doc.text();
    for keep in [0usize, 3, 6] {
        let scorer = dropping((0..7u32).filter(|&i| i as usize != keep));
        let (mut turn, _log) = turn(&doc.request_en, scorer.clone());
        let p = prune(&mut turn, &raw);
        let dropped = assert_array_pruned(&mut turn, &raw, &p, None);
        assert_eq!(dropped.len(), 6, "keep {keep}");
        let after: Vec<Value> = serde_json::from_str(&p.body).unwrap();
        assert_eq!(after.len(), if keep == 0 || keep == 6 { 2 } else { 3 }, "keep {keep}");
        // The chunk sent for an element is its raw JSON text.
        let sent: Vec<String> = scorer.requests()[0].batches.iter().flat_map(|b| b.chunks.clone()).collect();
        assert_eq!(sent.len(), 7);
        let elements = array_values(&raw);
        for (chunk, element) in sent.iter().zip(&elements) {
            assert!(raw.contains(chunk.as_str()));
            assert_eq!(&serde_json::from_str::<Value>(chunk).unwrap(), element);
        }
    }
}

#[test]
fn top_level_array_case_stays_json() {
    let case = case("top-level-array.json");
    let raw = case.text();
    // Offline: the posts do not match the request → all dropped → raw.
    let (mut turn1, _log) = turn(&case.request, Scoring::Offline);
    let p = prune(&mut turn1, &raw);
    assert_eq!(report(&p).shape, Some(Shape::JsonArray));
    assert!(serde_json::from_str::<Value>(&p.body).is_ok());
    // Scripted: odd posts dropped.
    let n = array_values(&raw).len();
    let (mut turn2, _log) = turn(&case.request, dropping_odd(n));
    let p = prune(&mut turn2, &raw);
    let dropped = assert_array_pruned(&mut turn2, &raw, &p, None);
    assert_eq!(dropped.len(), n / 2);
}

#[test]
fn a_list_with_metadata_keeps_the_metadata() {
    let list = posts(&twenty(), ",\n    ");
    let raw = format!("{{\n  \"items\": {list},\n  \"total\": 120,\n  \"next\": \"cursor-2\"\n}}\n");
    let (mut turn, log) = turn("How do I configure the upload retry limits for the client?", Scoring::Offline);
    let p = prune(&mut turn, &raw);
    assert!(prune_line(&log).contains(" shape=json_array "));
    let dropped = assert_array_pruned(&mut turn, &raw, &p, Some("items"));
    assert!(dropped.len() >= 5 && [3, 10, 17].iter().all(|i| !dropped.contains(i)), "{dropped:?}");
    let after: Value = serde_json::from_str(&p.body).unwrap();
    assert_eq!(after["total"], 120);
    assert!(p.body.ends_with("],\n  \"total\": 120,\n  \"next\": \"cursor-2\"\n}\n"), "bytes after the array unchanged");
    assert!(p.body.starts_with("{\n  \"items\": [\"[Omitted by relevance: "));
}

#[test]
fn markers_in_japanese_and_english() {
    let raw = posts(&twenty(), ", ");
    let scorer = || dropping([0, 1, 2, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 19]);
    let chars_of = |i: usize| post(i, twenty()[i]).chars().count();
    let c = chars_of(0);
    let total: usize = (0..20).map(chars_of).sum();
    let dropped: usize = [0, 1, 2, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 19].iter().map(|&i| chars_of(i)).sum();
    for lang in [Lang::En, Lang::Ja] {
        let mut o = options("How do I configure the upload retry limits for the client?");
        o.lang = lang;
        let (mut turn, _log) = turn_with(o, scorer() as Arc<dyn Scorer>);
        let p = prune(&mut turn, &raw);
        assert_array_pruned(&mut turn, &raw, &p, None);
        let after: Vec<Value> = serde_json::from_str(&p.body).unwrap();
        let strings: Vec<&str> = after.iter().filter_map(Value::as_str).collect();
        let expected = match lang {
            Lang::En => vec![
                format!("[Omitted by relevance: 16 of 20 elements ({} of {} characters). Call `omitted` with the id and element numbers (from, to) to read them verbatim. id=P1] [… elements 0–2 omitted: 3 elements, {} characters …]", thousands(dropped), thousands(total), thousands(3 * c)),
                format!("[… elements 5–9 omitted: 5 elements, {} characters …]", thousands((5..10).map(chars_of).sum())),
                format!("[… elements 11–17 omitted: 7 elements, {} characters …]", thousands((11..18).map(chars_of).sum())),
                format!("[… element 19 omitted: 1 element, {} characters …]", thousands(chars_of(19))),
            ],
            Lang::Ja => vec![
                format!("【関連度で要素を省略しています: 全 20 要素・{} 字のうち 16 要素・{} 字を省略。省略した要素は `omitted` に id と要素番号（from, to）を渡すと逐語で読めます。id=P1】［… 要素 0〜2・3 要素・{} 字を省略 …］", thousands(total), thousands(dropped), thousands(3 * c)),
                format!("［… 要素 5〜9・5 要素・{} 字を省略 …］", thousands((5..10).map(chars_of).sum())),
                format!("［… 要素 11〜17・7 要素・{} 字を省略 …］", thousands((11..18).map(chars_of).sum())),
                format!("［… 要素 19・1 要素・{} 字を省略 …］", thousands(chars_of(19))),
            ],
        };
        assert_eq!(strings, expected);
        assert_eq!(after.len(), 4 + 4);
    }
}

#[test]
fn runs_at_the_start_the_end_and_all_but_one_stay_valid_json() {
    let raw = format!("{}\n", posts(&twenty(), ",\n"));
    let all: Vec<u32> = (0..20).collect();
    for drop in [
        (0..15).collect::<Vec<u32>>(),
        (5..20).collect(),
        all.iter().copied().filter(|&i| i != 0).collect(),
        all.iter().copied().filter(|&i| i != 19).collect(),
        all.iter().copied().filter(|&i| i != 10).collect(),
        all.iter().copied().filter(|&i| i % 4 != 1).collect(),
    ] {
        let (mut turn, _log) = turn("How do I configure the upload retry limits for the client?", dropping(drop.clone()));
        let p = prune(&mut turn, &raw);
        let got = assert_array_pruned(&mut turn, &raw, &p, None);
        assert_eq!(got, drop.iter().map(|&i| i as usize).collect::<Vec<_>>());
        assert!(p.body.ends_with("]\n"));
    }
}

#[test]
fn decisions_are_those_of_section_7() {
    let raw = posts(&twenty(), ", ");
    let request = "How do I configure the upload retry limits for the client?";
    for (scorer, expected) in [
        (dropping(0..20), "all_dropped"),
        (dropping([]), "nothing_dropped"),
        (dropping([4]), "below_floor"),
    ] {
        let (mut turn, log) = turn(request, scorer);
        let p = prune(&mut turn, &raw);
        assert_eq!(outcome(&p), expected);
        assert_eq!(p.body, raw);
        assert!(prune_line(&log).contains(" shape=json_array "));
    }
}

#[test]
fn an_element_over_6000_characters_is_fixed_kept_and_never_sent() {
    let big = format!("{{\"id\": \"big\", \"body\": \"{}\"}}", "z".repeat(6_100));
    let items: Vec<String> = (0..12).map(|i| post(i, "gardening")).chain([big.clone()]).collect();
    let raw = format!("[{}]", items.join(", "));
    let scorer = dropping(0..12);
    let (mut turn, _log) = turn("How do I configure the upload retry limits for the client?", scorer.clone());
    let p = prune(&mut turn, &raw);
    // Every scored element dropped: all_dropped → raw; the big one never left.
    assert_eq!(outcome(&p), "all_dropped");
    assert_eq!(report(&p).paragraphs[12].fate, Fate::Fixed);
    assert!(scorer.requests()[0].batches.iter().all(|b| !b.paragraphs.contains(&12)));
    let scorer = dropping(1..12);
    let (mut t2, _log) = toolprune_tests::turn("How do I configure the upload retry limits for the client?", scorer);
    let p = prune(&mut t2, &raw);
    assert_array_pruned(&mut t2, &raw, &p, None);
    assert!(p.body.contains(&big));
}

#[test]
fn batches_hold_16_elements_and_12000_characters() {
    let topics: Vec<&str> = (0..40).map(|_| "gardening tomatoes").collect();
    let raw = posts(&topics, ",");
    let scorer = dropping([]);
    let (mut turn, _log) = turn("How do I configure the upload retry limits for the client?", scorer.clone());
    prune(&mut turn, &raw);
    let sizes: Vec<usize> = scorer.requests()[0].batches.iter().map(|b| b.paragraphs.len()).collect();
    assert!(sizes.iter().all(|&n| n <= 16), "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), 40);
    for b in &scorer.requests()[0].batches {
        assert!(b.chunks.iter().map(|c| chars(c)).sum::<usize>() <= 12_000);
    }
}

#[test]
fn ambiguous_arrays_are_structured_and_send_nothing() {
    let list = posts(&twenty(), ",");
    let half = posts(&twenty()[..10], ",");
    for raw in [
        // Arrays of arrays at the top.
        format!("[{half}, {half}]"),
        format!("{{\"pages\": [{half}, {half}]}}"),
        // Duplicate keys.
        format!("{{\"items\": {list}, \"items\": []}}"),
        // A tie for the largest value.
        format!("{{\"a\": {half}, \"b\": {half}}}"),
        // Under 60 %.
        format!("{{\"items\": {half}, \"notes\": \"{}\"}}", "n".repeat(half.len())),
    ] {
        let scorer = Arc::new(ScriptedScorer::new());
        let (mut turn, log) = turn("How do I configure the upload retry limits for the client?", scorer.clone());
        let p = prune(&mut turn, &raw);
        assert_eq!(outcome(&p), "structured", "{:.60}", raw);
        assert_eq!(p.body, raw);
        assert!(scorer.requests().is_empty());
        assert!(!prune_line(&log).contains("shape="));
    }
}

#[test]
fn omitted_on_an_array_answers_like_section_10() {
    let items: Vec<String> = (0..10).map(|i| format!("{{\"id\": {i}, \"body\": \"{}\"}}", "w".repeat(5_000))).collect();
    let raw = format!("[\n{}\n]", items.join(",\n"));
    let (mut turn, _log) = turn("How do I configure the upload retry limits for the client?", dropping(0..9));
    let p = prune(&mut turn, &raw);
    assert_eq!(outcome(&p), "ok");
    let r = turn.omitted(r#"{"id":"P1","from":0,"to":9}"#).unwrap();
    assert_eq!(r.outcome, OmittedOutcome::TooLarge);
    let r = turn.omitted(r#"{"id":"P1","from":2,"to":4}"#).unwrap();
    assert_eq!(r.outcome, OmittedOutcome::Ok);
    assert_eq!(r.text, format!("[{}]", items[2..5].join(",\n")));
    let r = turn.omitted(r#"{"id":"P1","from":9,"to":9}"#).unwrap();
    assert_eq!(r.outcome, OmittedOutcome::NotDropped);
    let r = turn.omitted(r#"{"id":"P2","from":0,"to":1}"#).unwrap();
    assert_eq!(r.outcome, OmittedOutcome::NotFound);
}
