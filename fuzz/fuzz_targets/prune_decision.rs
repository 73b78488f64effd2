//! The whole pruning decision with arbitrary scores: the body is the input
//! byte for byte, or (outcome `ok`) the kept paragraphs verbatim in order
//! plus the header and marker lines; no panic. Input: the first bytes choose
//! the scores, the rest is the text (padded to pass the 4,000-character gate).
#![no_main]
use libfuzzer_sys::fuzz_target;
use toolprune_guest::types::{BatchAnswer, Fate, Lang, Outcome, PruneInput, ScorerChoice, ScoringResponse};
use toolprune_guest::prune::{inspect, Job};

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let (head, rest) = data.split_at(8);
    let Ok(s) = std::str::from_utf8(rest) else { return };
    let text = if s.is_empty() { String::new() } else { s.repeat(4_000 / s.chars().count() + 1) };
    let input = PruneInput {
        request: "How do I configure the retry limit of the upload client?".into(),
        text: text.clone(),
        enabled: true,
        succeeded: true,
        prunable: true,
        threshold: [0.1, 0.2, 0.3, 0.5][head[0] as usize % 4],
        lang: if head[1] % 2 == 0 { Lang::En } else { Lang::Ja },
        report: true,
        scorer: ScorerChoice::Host("fuzz".into()),
        jev_model: None,
        agent: "fuzz".into(),
        tool: "fetch".into(),
        arguments: None,
        pruned_calls: Vec::new(),
        work_budget: None,
    };
    let score = |n: u32| -> Option<f64> {
        match head[2 + n as usize % 6] {
            255 => None,
            254 => Some(f64::NAN),
            253 => Some(1.5),
            b => Some(b as f64 / 252.0),
        }
    };
    let job = Job::start(input);
    let response = job.request().map(|req| ScoringResponse {
        answers: Ok(req
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(b.paragraphs.iter().map(|&n| score(n)).collect()))
            .collect()),
        elapsed_ms: 1,
    });
    let pruned = job.complete(response, 1);
    let Some(body) = pruned.body.clone() else {
        return;
    };
    assert!(body != text || pruned.outcome == Outcome::Ok);
    assert_eq!(pruned.outcome, Outcome::Ok, "only ok changes the body");
    // A JSON body (wrapper, array): it must still parse.
    let json = |s: &str| serde_json::from_str::<serde_json::Value>(s.strip_prefix('\u{FEFF}').unwrap_or(s)).is_ok();
    if json(&text) {
        assert!(json(&body), "a JSON body still parses");
        return;
    }
    // Text: every kept paragraph appears verbatim, in order, after the header.
    let infos = inspect(&text).units;
    assert_eq!(infos.len(), pruned.paragraphs.len());
    // A leading byte-order mark stays first; paragraph 0 is kept without it.
    let bom = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
    let mut pos = body.find("id=P1").expect("a header");
    for (info, report) in infos.iter().zip(&pruned.paragraphs) {
        if report.fate == Fate::Dropped {
            continue;
        }
        let span = &text[(info.byte_start as usize).max(bom)..info.byte_end as usize];
        let found = body[pos..].find(span).expect("kept paragraph verbatim, in order");
        pos += found + span.len();
    }
});
