//! `toolprune eval` on a tiny hand-made corpus: two documents through the
//! real pruning path with a scorer whose answers are known, so the outcome,
//! the recall per topic and the distractors removed are exact.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use toolprune_cli::eval::{run, EvalOptions, Tally};
use toolprune::types::{BatchAnswer, Lang, ScoringRequest};
use toolprune::{Pruner, Scorer, Scoring, ScoringContext};

/// Scores 0 every paragraph that contains `filler`, 1 every other one.
struct FillerScorer;

impl Scorer for FillerScorer {
    fn name(&self) -> &str {
        "filler"
    }

    fn score(&self, request: &ScoringRequest, _: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        let answers = request
            .batches
            .iter()
            .map(|batch| {
                BatchAnswer::Scores(
                    batch
                        .chunks
                        .iter()
                        .map(|chunk| Some(if chunk.contains("filler") { 0.0 } else { 1.0 }))
                        .collect(),
                )
            })
            .collect();
        Ok(answers)
    }
}

/// A paragraph of about `chars` characters: `lead`, then numbered sentences
/// about `topic`.
fn paragraph(lead: &str, topic: &str, chars: usize) -> String {
    let mut p = lead.to_string();
    let mut i = 0;
    while p.chars().count() < chars {
        i += 1;
        p.push_str(&format!(" Sentence {i} is about {topic} and nothing else."));
    }
    p
}

/// Needed snippets and distractors of the two documents.
const WRAPPED_T1: &str = "The stream resumes with the last event id\nthat the client saw."; // spans a line: only in the decoded string
const WRAPPED_T2_DROPPED: &str = "The version header is sent on every request.";
const WRAPPED_T2_KEPT: &str = "A \"quoted\" header value is kept."; // escaped in the raw JSON
const WRAPPED_D_DROPPED: &str = "Sponsors are listed on the website.";
const WRAPPED_D_KEPT: &str = "The logo is blue.";
const PLAIN_T1_A: &str = "Indexing a string by byte is not allowed.";
const PLAIN_T1_B: &str = "Iterate with chars() to get scalar values.";
const PLAIN_T2: &str = "The plus operator takes ownership of the left string.";
const PLAIN_D: &str = "This filler line thanks the translators.";

/// Writes the tiny corpus to a fresh temp dir: `wrapped.json` (a JSON
/// wrapper whose two filler paragraphs are dropped: outcome `ok`),
/// `plain.md` (one short filler paragraph among long ones: `below_floor`),
/// and a manifest entry whose file is missing.
fn tiny_corpus(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolprune-eval-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");

    let content = [
        format!(
            "# Resuming\n\n{}",
            paragraph(WRAPPED_T1, "resuming streams", 900)
        ),
        paragraph(
            &format!("Unrelated filler. {WRAPPED_T2_DROPPED} {WRAPPED_D_DROPPED}"),
            "the sponsors",
            1500,
        ),
        paragraph(
            &format!("{WRAPPED_T2_KEPT} {WRAPPED_D_KEPT}"),
            "headers",
            900,
        ),
        paragraph("More filler about the project history.", "history", 1500),
        paragraph("Closing notes on event ids.", "event ids", 600),
    ]
    .join("\n\n");
    let wrapped = serde_json::to_string_pretty(&serde_json::json!({
        "path": "docs/resume.md",
        "content": content,
        "size": content.len(),
    }))
    .expect("json");
    assert!(
        !wrapped.contains(WRAPPED_T1),
        "the snippet is escaped in the raw JSON"
    );
    std::fs::write(dir.join("wrapped.json"), wrapped).expect("write");

    let plain = [
        paragraph(PLAIN_T1_A, "indexing", 1400),
        paragraph(PLAIN_T1_B, "iteration", 1400),
        paragraph(PLAIN_D, "thanks", 200),
        paragraph(PLAIN_T2, "concatenation", 1400),
    ]
    .join("\n\n");
    std::fs::write(dir.join("plain.md"), plain).expect("write");

    let manifest = serde_json::json!([
        {"file": "wrapped.json", "request_en": "How does a client resume a stream, and when is the version header sent?"},
        {"file": "plain.md", "request_en": "Why can't I index a String, and how do + and format! differ?", "request_ja": "文字列をインデックスできないのはなぜですか？"},
        {"file": "gone.md", "request_en": "A file the manifest lists but the folder lacks."}
    ]);
    let labels = serde_json::json!([
        {"file": "wrapped.json",
         "needed": [
            {"snippet": WRAPPED_T1, "topic": 1},
            {"snippet": WRAPPED_T2_DROPPED, "topic": 2},
            {"snippet": WRAPPED_T2_KEPT, "topic": 2}],
         "distractors": [WRAPPED_D_DROPPED, WRAPPED_D_KEPT]},
        {"file": "plain.md",
         "needed": [
            {"snippet": PLAIN_T1_A, "topic": 1},
            {"snippet": PLAIN_T1_B, "topic": 1},
            {"snippet": PLAIN_T2, "topic": 2}],
         "distractors": [PLAIN_D]}
    ]);
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).expect("write");
    std::fs::write(dir.join("labels.json"), labels.to_string()).expect("write");
    dir
}

fn options(dir: &Path, lang: Lang) -> EvalOptions {
    EvalOptions {
        corpus: dir.to_path_buf(),
        labels: None,
        threshold: None,
        lang,
    }
}

#[test]
fn eval_recall_is_exact_on_a_tiny_corpus() {
    let dir = tiny_corpus("recall");
    let pruner = Pruner::shared().expect("component");
    let report = run(pruner, Scoring::host(FillerScorer), &options(&dir, Lang::En)).expect("eval");

    assert_eq!(report.scorer, "filler");
    assert_eq!(
        report.labels,
        Some(dir.join("labels.json").display().to_string()),
        "default labels"
    );
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(
        (report.skipped[0].file.as_str(), report.skipped[0].reason),
        ("gone.md", "missing file")
    );
    assert_eq!(report.documents.len(), 2);

    // The wrapper: two filler paragraphs dropped, net ratio from the guest.
    let w = &report.documents[0];
    assert_eq!(w.file, "wrapped.json");
    assert_eq!(w.outcome, "ok");
    assert_eq!(w.dropped, Some(2));
    assert_eq!(w.calls, 1);
    assert!(w.reduction >= 0.25 && w.reduction < 1.0, "{}", w.reduction);
    assert!(w.saved_chars > 0 && w.saved_chars < w.raw_chars);
    assert_eq!(w.reduction, w.saved_chars as f64 / w.raw_chars as f64);
    let wl = w.labels.as_ref().expect("labels");
    // The multi-line and the quoted snippet are found in the decoded string.
    assert_eq!(wl.recall, Tally { count: 2, total: 3 });
    assert_eq!(wl.topics["1"], Tally { count: 1, total: 1 });
    assert_eq!(wl.topics["2"], Tally { count: 1, total: 2 });
    assert_eq!(wl.distractors_removed, Tally { count: 1, total: 2 });
    assert_eq!(wl.missed, [WRAPPED_T2_DROPPED]);

    // The plain page: one short paragraph below the threshold is under the
    // 25 % floor, so the raw text goes through: reduction 0, recall 1.
    let p = &report.documents[1];
    assert_eq!(p.file, "plain.md");
    assert_eq!(p.outcome, "below_floor");
    assert_eq!(p.reduction, 0.0);
    assert_eq!(p.saved_chars, 0);
    assert_eq!(p.dropped, None);
    let pl = p.labels.as_ref().expect("labels");
    assert_eq!(pl.recall, Tally { count: 3, total: 3 });
    assert_eq!(pl.recall.share(), Some(1.0));
    assert_eq!(pl.distractors_removed, Tally { count: 0, total: 1 });

    // Totals: mean over documents, weighted by characters, snippets pooled.
    let t = &report.totals;
    assert_eq!((t.documents, t.ok, t.labelled), (2, 1, 2));
    assert_eq!(t.mean_reduction, w.reduction / 2.0);
    assert_eq!(t.raw_chars, w.raw_chars + p.raw_chars);
    assert_eq!(
        t.weighted_reduction,
        w.saved_chars as f64 / (w.raw_chars + p.raw_chars) as f64
    );
    assert_eq!(t.labels.recall, Tally { count: 5, total: 6 });
    assert_eq!(t.labels.topics["1"], Tally { count: 3, total: 3 });
    assert_eq!(t.labels.topics["2"], Tally { count: 2, total: 3 });
    assert_eq!(t.labels.distractors_removed, Tally { count: 1, total: 3 });

    // --lang ja: only the document with a request_ja.
    let ja = run(pruner, Scoring::host(FillerScorer), &options(&dir, Lang::Ja)).expect("eval");
    let files: Vec<&str> = ja.documents.iter().map(|d| d.file.as_str()).collect();
    assert_eq!(files, ["plain.md"]);
    assert_eq!(ja.lang, "ja");
    assert!(ja
        .skipped
        .iter()
        .any(|s| s.file == "wrapped.json" && s.reason == "no request_ja"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eval_cli_prints_the_table_and_the_totals_line() {
    let dir = tiny_corpus("cli");
    let corpus = dir.display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_toolprune"))
        .args(["eval", "--corpus", &corpus, "--scorer", "stub"])
        .output()
        .expect("toolprune runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("toolprune eval: corpus "), "{table}");
    assert!(
        lines[1].starts_with("file") && lines[1].contains("topic 2"),
        "{table}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("wrapped.json")),
        "{table}"
    );
    assert!(
        lines.contains(&"skipped (missing file): gone.md"),
        "{table}"
    );
    let total = lines.last().expect("a totals line");
    assert!(total.starts_with("total: 2 documents"), "{table}");
    assert!(
        total.contains("net reduction mean")
            && total.contains(" recall ")
            && total.contains("distractors removed"),
        "{total}"
    );

    let json = Command::new(env!("CARGO_BIN_EXE_toolprune"))
        .args(["eval", "--corpus", &corpus, "--scorer", "stub", "--json"])
        .output()
        .expect("toolprune runs");
    assert!(json.status.success());
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(report["scorer"], "stub");
    assert_eq!(report["totals"]["documents"], 2);
    assert_eq!(report["totals"]["labels"]["recall"]["total"], 6);

    let missing = Command::new(env!("CARGO_BIN_EXE_toolprune"))
        .args(["eval", "--corpus", "/nonexistent/corpus"])
        .output()
        .expect("toolprune runs");
    assert_eq!(missing.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

const SHARED_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus");

/// `value` without its `wall_ms` fields (the only measured, varying numbers).
fn without_wall_time(mut value: serde_json::Value) -> serde_json::Value {
    for doc in value["documents"].as_array_mut().expect("documents") {
        doc.as_object_mut().expect("object").remove("wall_ms");
    }
    value
}

#[test]
fn the_offline_scorer_gives_identical_results_across_runs() {
    let eval = || {
        let out = Command::new(env!("CARGO_BIN_EXE_toolprune"))
            .args(["eval", "--corpus", SHARED_CORPUS, "--json"])
            .output()
            .expect("toolprune runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        without_wall_time(serde_json::from_slice(&out.stdout).expect("JSON"))
    };
    let first = eval();
    assert_eq!(first["scorer"], "offline");
    assert!(
        first["totals"]["ok"].as_u64() > Some(0),
        "the offline scorer pruned something"
    );
    assert_eq!(
        first,
        eval(),
        "two processes, the same outcomes, ratios and recall"
    );

    // Every paragraph's score, bit for bit (serde_json prints f64 exactly).
    let pep = format!("{SHARED_CORPUS}/pep-0817-wheel-variants.rst");
    let request = "How is a wheel variant named in the filename?";
    let scores = || {
        Command::new(env!("CARGO_BIN_EXE_toolprune"))
            .args(["prune", "--json", "--request", request, &pep])
            .output()
            .expect("toolprune runs")
            .stdout
    };
    let a = scores();
    let report: serde_json::Value = serde_json::from_slice(&a).expect("JSON");
    assert!(report["paragraphs"]
        .as_array()
        .is_some_and(|p| p.len() > 100));
    assert_eq!(a, scores());
}

/// SPEC §13: recall is counted inside a pruned JSON array — a needed snippet
/// escaped in the raw JSON is found in a kept element's decoded string, one
/// in a dropped element is missed, the markers are strings of the body.
#[test]
fn eval_recall_counts_inside_a_pruned_array() {
    const KEPT: &str = "The retry \"limit\" is set per client.\nIt defaults to three."; // escaped in the raw JSON
    const DROPPED: &str = "Tomatoes need six hours of sun.";
    let dir = std::env::temp_dir().join(format!("toolprune-eval-array-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let items: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            let body = match i {
                3 => paragraph(KEPT, "retry limits", 500),
                7 => paragraph(&format!("Some filler. {DROPPED}"), "gardening", 500),
                _ if i % 2 == 0 => paragraph("Some filler.", "gardening", 500),
                _ => paragraph("Retry notes.", "retry limits", 500),
            };
            serde_json::json!({"id": i, "body": body})
        })
        .collect();
    let raw = serde_json::to_string_pretty(&items).expect("json");
    assert!(!raw.contains(KEPT), "the kept snippet is escaped in the raw JSON");
    std::fs::write(dir.join("posts.json"), raw).expect("write");
    let manifest = serde_json::json!([{"file": "posts.json", "request_en": "How do I set the retry limit of the client?"}]);
    let labels = serde_json::json!([{"file": "posts.json",
        "needed": [{"snippet": KEPT, "topic": 1}, {"snippet": DROPPED, "topic": 2}],
        "distractors": []}]);
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).expect("write");
    std::fs::write(dir.join("labels.json"), labels.to_string()).expect("write");

    let pruner = Pruner::shared().expect("component");
    let report = run(pruner, Scoring::host(FillerScorer), &options(&dir, Lang::En)).expect("eval");
    let d = &report.documents[0];
    assert_eq!(d.outcome, "ok");
    assert_eq!(d.dropped, Some(7));
    let l = d.labels.as_ref().expect("labels");
    assert_eq!(l.recall, Tally { count: 1, total: 2 });
    assert_eq!(l.missed, [DROPPED]);
    let _ = std::fs::remove_dir_all(&dir);
}
