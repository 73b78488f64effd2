//! Dev-only measurement of the offline scorer on a labelled corpus, natively
//! (no wasmtime): every document goes through the guest's real decision path
//! (`prune::Job::start` → `Job::complete`: gates, split, the 25 % floor,
//! markers counted), exactly as `toolprune eval` counts it
//! (`cli/src/eval.rs`): net reduction = the guest's ratio when the
//! outcome is `ok`, else 0; recall = the share of needed snippets present in
//! the body (or in one of its decoded JSON strings).
//!
//! ```sh
//! E="cargo run --release -q -p toolprune-guest --example offline_eval --"
//! $E eval [--threshold T] [--lang en|ja]  # per document, with the oracle (`P=k=v,… $E eval`: a variant)
//! $E oracle                               # the oracle alone, per document
//! $E table                                # every threshold and --lang ja, as the README's table
//! $E check                                # the variant path with Params::SHIPPED gives the shipped bodies
//! $E dump DOC                             # per-paragraph scores of the documents whose name holds DOC
//! $E time                                 # native scoring time per document (best of 20)
//! $E ranks                                # ranking power: the best per-document cut, ≤ 0/1/2 lost, ≤ 5 in all
//! $E secoracle                            # keeping whole sections that hold a needed snippet
//! $E grid [N] [SEED] [TARGET]             # N random configurations, fitted and leave-one-document-out
//! $E localgrid [TARGET]                   # the product of five knobs around `P`, the same report
//! ```
//!
//! `P` (environment) changes [`Params::SHIPPED`]: `P=gamma=3,mass_exponent=0 $E eval`.
//! The searches keep, among the configurations whose recall over all
//! documents is at least TARGET (default 0.97; snippets of documents that
//! are not scored count as found), the one with the best mean net reduction;
//! "leave-one-document-out" repeats that choice without each document (the
//! RFC's CRLF and LF copies are one group) and scores the document with the
//! configuration chosen without it.
//!
//! Variants are scored by `offline::score_with` with other [`Params`] and
//! answered to the same `Job` as a host scorer would (`check` proves that path
//! gives the shipped path's bytes for the shipped parameters). The **oracle**
//! answers 1.0 for a paragraph holding a needed snippet and 0.0 otherwise.

use std::path::{Path, PathBuf};
use std::time::Instant;

use toolprune_guest::types::{BatchAnswer, Lang, Outcome, PruneInput, Pruned, ScorerChoice, ScoringResponse};
use toolprune_guest::offline::{self, Params};
use toolprune_guest::log::outcome_name;
use toolprune_guest::prune::Job;

/// One document with one request.
struct Doc {
    file: String,
    request: String,
    text: String,
    needed: Vec<String>,
    topics: Vec<String>,
}

fn load(dir: &Path, lang: Lang) -> Vec<Doc> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(f).display()));
    let manifest: serde_json::Value = serde_json::from_str(&read("manifest.json")).expect("manifest");
    let labels: serde_json::Value = serde_json::from_str(&read("labels.json")).expect("labels");
    let key = match lang {
        Lang::En => "request_en",
        Lang::Ja => "request_ja",
    };
    let mut docs = Vec::new();
    for m in manifest.as_array().expect("manifest list") {
        let file = m["file"].as_str().expect("file").to_string();
        let Some(request) = m[key].as_str() else { continue };
        let source = m["derived_from"].as_str();
        let label = labels.as_array().unwrap().iter().find(|l| l["file"] == file.as_str()).or_else(|| {
            source.and_then(|s| labels.as_array().unwrap().iter().find(|l| l["file"] == s))
        });
        let (needed, topics) = label
            .map(|l| {
                l["needed"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| {
                        let topic = match &n["topic"] {
                            serde_json::Value::String(s) => s.clone(),
                            serde_json::Value::Null => String::new(),
                            v => v.to_string(),
                        };
                        (n["snippet"].as_str().unwrap().to_string(), topic)
                    })
                    .unzip()
            })
            .unwrap_or_default();
        docs.push(Doc { file: file.clone(), request: request.to_string(), text: read(&file), needed, topics });
    }
    docs
}

/// `cli/src/eval.rs`'s `Haystack`: the body and its decoded JSON strings.
struct Haystack<'b> {
    body: &'b str,
    strings: Vec<String>,
}

impl<'b> Haystack<'b> {
    fn new(body: &'b str) -> Self {
        fn collect(v: serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::String(s) => out.push(s),
                serde_json::Value::Array(a) => a.into_iter().for_each(|v| collect(v, out)),
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        out.push(k);
                        collect(v, out);
                    }
                }
                _ => {}
            }
        }
        let mut strings = Vec::new();
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
            collect(v, &mut strings);
        }
        Haystack { body, strings }
    }
    fn contains(&self, s: &str) -> bool {
        self.body.contains(s) || self.strings.iter().any(|x| x.contains(s))
    }
}

fn input(doc: &Doc, threshold: f64, lang: Lang, scorer: ScorerChoice) -> PruneInput {
    PruneInput {
        request: doc.request.clone(),
        text: doc.text.clone(),
        enabled: true,
        succeeded: true,
        prunable: true,
        threshold,
        lang,
        report: true,
        scorer,
        jev_model: None,
        agent: "eval".into(),
        tool: "eval".into(),
        arguments: None,
        pruned_calls: Vec::new(),
        work_budget: None,
    }
}

/// Who scores a job.
#[derive(Clone, Copy)]
enum Who {
    /// The real path: `ScorerChoice::Offline`.
    Shipped,
    /// `offline::score_with(params)` answered as a host scorer.
    Variant(Params),
    /// 1.0 for a paragraph holding a needed snippet, else 0.0.
    Oracle,
    /// `score_with(params) >= cut` answered as 1.0, else 0.0 (a per-document threshold).
    Cut(Params, f64),
}

/// The scores a host scorer answers per batch, in batch order, flattened.
fn run(doc: &Doc, threshold: f64, lang: Lang, who: Who) -> Pruned {
    match who {
        Who::Shipped => Job::start(input(doc, threshold, lang, ScorerChoice::Offline)).complete(None, 1),
        Who::Variant(p) | Who::Cut(p, _) => {
            let job = Job::start(input(doc, threshold, lang, ScorerChoice::Host("variant".into())));
            let response = job.request().map(|req| {
                let chunks: Vec<&str> = req.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
                let mut scores = offline::score_with(&req.basis, &chunks, p).into_iter();
                if let Who::Cut(_, cut) = who {
                    scores = scores.map(|s| if s >= cut { 1.0 } else { 0.0 }).collect::<Vec<_>>().into_iter();
                }
                ScoringResponse {
                    answers: Ok(req
                        .batches
                        .iter()
                        .map(|b| BatchAnswer::Scores(scores.by_ref().take(b.chunks.len()).map(Some).collect()))
                        .collect()),
                    elapsed_ms: 0,
                }
            });
            job.complete(response, 1)
        }
        Who::Oracle => {
            let job = Job::start(input(doc, threshold, lang, ScorerChoice::Host("oracle".into())));
            let response = job.request().map(|req| ScoringResponse {
                answers: Ok(req
                    .batches
                    .iter()
                    .map(|b| {
                        BatchAnswer::Scores(
                            b.chunks
                                .iter()
                                .map(|c| {
                                    let hay = Haystack::new(c);
                                    Some(if doc.needed.iter().any(|s| hay.contains(s)) { 1.0 } else { 0.0 })
                                })
                                .collect(),
                        )
                    })
                    .collect()),
                elapsed_ms: 0,
            });
            job.complete(response, 1)
        }
    }
}

/// One document's result, as `toolprune eval` counts it.
#[derive(Clone)]
struct Res {
    outcome: &'static str,
    reduction: f64,
    raw: u64,
    saved: u64,
    dropped: Option<u32>,
    paragraphs: u32,
    found: usize,
    topics: Vec<(String, bool)>,
    missed: Vec<String>,
    body_hash: u64,
}

fn measure(doc: &Doc, p: &Pruned) -> Res {
    let ok = p.outcome == Outcome::Ok;
    // The body the model receives: the pruned one, else the text itself.
    let body = p.body.as_deref().unwrap_or(&doc.text);
    let hay = Haystack::new(body);
    let mut found = 0;
    let mut missed = Vec::new();
    let mut topics = Vec::new();
    for (s, t) in doc.needed.iter().zip(&doc.topics) {
        let f = hay.contains(s);
        found += usize::from(f);
        topics.push((t.clone(), f));
        if !f {
            missed.push(s.clone());
        }
    }
    let raw = u64::from(p.counts.raw_chars);
    let h = body.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    Res {
        outcome: outcome_name(p.outcome),
        reduction: if ok { p.ratio.unwrap_or(0.0) } else { 0.0 },
        raw,
        saved: if ok { raw.saturating_sub(u64::from(p.counts.kept_chars)) } else { 0 },
        dropped: ok.then_some(p.counts.dropped),
        paragraphs: p.counts.paragraphs.unwrap_or(0),
        found,
        topics,
        missed,
        body_hash: h,
    }
}

/// Totals: mean net reduction, char-weighted, recall (found, total), ok count.
struct Tot {
    mean: f64,
    weighted: f64,
    found: usize,
    needed: usize,
    ok: usize,
}

fn totals(rs: &[Res]) -> Tot {
    let n = rs.len().max(1) as f64;
    let raw: u64 = rs.iter().map(|r| r.raw).sum();
    let saved: u64 = rs.iter().map(|r| r.saved).sum();
    Tot {
        mean: rs.iter().map(|r| r.reduction).sum::<f64>() / n,
        weighted: if raw > 0 { saved as f64 / raw as f64 } else { 0.0 },
        found: rs.iter().map(|r| r.found).sum(),
        needed: rs.iter().map(|r| r.topics.len()).sum(),
        ok: rs.iter().filter(|r| r.outcome == "ok").count(),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn topic_share(rs: &[Res], topic: &str) -> String {
    let (f, t) = rs.iter().flat_map(|r| &r.topics).filter(|(n, _)| n == topic).fold((0, 0), |(f, t), (_, x)| (f + usize::from(*x), t + 1));
    if t == 0 {
        "-".into()
    } else {
        pct(f as f64 / t as f64)
    }
}

fn eval(docs: &[Doc], threshold: f64, lang: Lang, who: Who) -> Vec<Res> {
    docs.iter().map(|d| measure(d, &run(d, threshold, lang, who))).collect()
}

fn print_eval(docs: &[Doc], threshold: f64, lang: Lang, who: Who) {
    let rs = eval(docs, threshold, lang, who);
    let or = eval(docs, threshold, lang, Who::Oracle);
    println!("{:<38} {:<16} {:>7} {:>8} {:>7}  {:<16} {:>7}", "file", "outcome", "net", "dropped", "recall", "oracle", "net");
    for ((d, r), o) in docs.iter().zip(&rs).zip(&or) {
        println!(
            "{:<38} {:<16} {:>7} {:>8} {:>3}/{:<3}  {:<16} {:>7}",
            d.file,
            r.outcome,
            pct(r.reduction),
            r.dropped.map_or("-".into(), |x| format!("{x}/{}", r.paragraphs)),
            r.found,
            r.topics.len(),
            o.outcome,
            pct(o.reduction)
        );
        for m in &r.missed {
            println!("      missed: {}", m.chars().take(100).collect::<String>().replace('\n', "⏎"));
        }
    }
    let t = totals(&rs);
    let o = totals(&or);
    println!(
        "total: {} docs ({} ok) mean {} weighted {} recall {} ({}/{}) topic1 {} topic2 {} | oracle mean {} weighted {} ({} ok)",
        rs.len(),
        t.ok,
        pct(t.mean),
        pct(t.weighted),
        pct(t.found as f64 / t.needed.max(1) as f64),
        t.found,
        t.needed,
        topic_share(&rs, "1"),
        topic_share(&rs, "2"),
        pct(o.mean),
        pct(o.weighted),
        o.ok
    );
}

fn summary_line(docs: &[Doc], threshold: f64, lang: Lang, who: Who) -> (Tot, Vec<Res>) {
    let rs = eval(docs, threshold, lang, who);
    (totals(&rs), rs)
}

fn table(en: &[Doc], ja: &[Doc], who: Who) {
    println!("| threshold | docs (ok) | net reduction, mean | char-weighted | recall | topic 1 | topic 2 | oracle mean |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows: Vec<(String, &[Doc], f64, Lang)> =
        [0.1, 0.2, 0.3, 0.5].iter().map(|&t| (format!("{t}"), en, t, Lang::En)).collect();
    rows.push(("0.2, `--lang ja`".into(), ja, 0.2, Lang::Ja));
    for (name, docs, t, lang) in rows {
        let (s, rs) = summary_line(docs, t, lang, who);
        let (o, _) = summary_line(docs, t, lang, Who::Oracle);
        println!(
            "| {name} | {} ({}) | {} | {} | {} ({}/{}) | {} | {} | {} |",
            rs.len(),
            s.ok,
            pct(s.mean),
            pct(s.weighted),
            pct(s.found as f64 / s.needed.max(1) as f64),
            s.found,
            s.needed,
            topic_share(&rs, "1"),
            topic_share(&rs, "2"),
            pct(o.mean)
        );
    }
}

fn check(docs: &[Doc], lang: Lang) {
    let mut same = 0;
    for d in docs {
        for t in [0.1, 0.2, 0.3, 0.5] {
            let a = measure(d, &run(d, t, lang, Who::Shipped));
            let b = measure(d, &run(d, t, lang, Who::Variant(Params::SHIPPED)));
            assert_eq!(a.body_hash, b.body_hash, "{} at {t}: the variant path differs", d.file);
            assert_eq!(a.outcome, b.outcome);
            same += 1;
        }
    }
    println!("check: {same} runs, the variant path with Params::SHIPPED gives the shipped bodies");
}

fn dump(docs: &[Doc], want: &str, p: Params) {
    for d in docs.iter().filter(|d| d.file.contains(want)) {
        let job = Job::start(input(d, 0.2, Lang::En, ScorerChoice::Host("dump".into())));
        let Some(req) = job.request() else {
            println!("{}: no scoring request", d.file);
            continue;
        };
        let chunks: Vec<&str> = req.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
        let scores = offline::score_with(&req.basis, &chunks, p);
        println!("### {} :: {}", d.file, d.request);
        println!("query tokens: {:?}", offline::tokens(&req.basis));
        for (i, (c, s)) in chunks.iter().zip(&scores).enumerate() {
            let hay = Haystack::new(c);
            let n = d.needed.iter().filter(|x| hay.contains(x)).count();
            let head: String = c.trim().chars().take(100).collect::<String>().replace(['\n', '\r'], "⏎");
            println!("{:>4} {:.3} {:>5} {} {}", i, s, c.chars().count(), if n > 0 { format!("N{n}") } else { "  ".into() }, head);
        }
    }
}

/// The best summed reduction with at most `lost` snippets lost over all
/// documents, each document at its own best cut (`curve[k]`: best reduction
/// losing at most k).
fn budget(curves: &[[f64; 6]], lost: usize) -> f64 {
    let mut dp = vec![0.0f64; lost + 1];
    for c in curves {
        let mut next = vec![f64::NEG_INFINITY; lost + 1];
        for used in 0..=lost {
            for k in 0..=(lost - used) {
                next[used + k] = next[used + k].max(dp[used] + c[k]);
            }
        }
        dp = next;
    }
    dp.into_iter().fold(0.0, f64::max)
}

/// Per document, the best per-document cut of the scores: the net
/// reduction through the real path when the cut is just at the k-th lowest
/// score of a paragraph holding needed snippets (k = 0, 1, 2 snippets lost at most).
fn ranks(docs: &[Doc], p: Params) {
    let mut sums = [0.0f64; 3];
    let mut curves: Vec<[f64; 6]> = vec![[0.0; 6]];
    for d in docs {
        let job = Job::start(input(d, 0.2, Lang::En, ScorerChoice::Host("ranks".into())));
        let Some(req) = job.request() else {
            println!("{:<38} no scoring", d.file);
            continue;
        };
        let chunks: Vec<&str> = req.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
        let scores = offline::score_with(&req.basis, &chunks, p);
        let mut cuts: Vec<f64> = chunks
            .iter()
            .zip(&scores)
            .filter(|(c, _)| {
                let hay = Haystack::new(c);
                d.needed.iter().any(|s| hay.contains(s))
            })
            .map(|(_, s)| *s)
            .collect();
        cuts.sort_by(f64::total_cmp);
        cuts.push(f64::INFINITY);
        let mut curve = [0.0f64; 6];
        let mut best = [(0.0f64, 0usize, 0.0f64); 3];
        for &c in &cuts {
            let r = measure(d, &run(d, 0.2, Lang::En, Who::Cut(p, c)));
            let lost = r.topics.len() - r.found;
            for k in lost..6 {
                let e = &mut curve[k];
                if r.reduction > *e {
                    *e = r.reduction;
                }
            }
            for k in 0..3 {
                if lost <= k && r.reduction > best[k].0 {
                    best[k] = (r.reduction, lost, c);
                }
            }
        }
        curves.push(curve);
        let low: Vec<String> = cuts.iter().take(4).map(|c| format!("{c:.2}")).collect();
        println!(
            "{:<38} lowest needed {:<24} best cut: 0 lost {:>6} @{:.2} | <=1 {:>6} @{:.2} | <=2 {:>6} @{:.2}",
            d.file,
            low.join(" "),
            pct(best[0].0),
            best[0].2,
            pct(best[1].0),
            best[1].2,
            pct(best[2].0),
            best[2].2
        );
        for k in 0..3 {
            sums[k] += best[k].0;
        }
    }
    let n = docs.len() as f64;
    println!("mean best-cut net reduction: 0 lost {} | <=1 lost {} | <=2 lost {} | <=5 lost in all {}", pct(sums[0] / n), pct(sums[1] / n), pct(sums[2] / n), pct(budget(&curves, 5) / n));
}

fn time(docs: &[Doc], p: Params) {
    for d in docs {
        let job = Job::start(input(d, 0.2, Lang::En, ScorerChoice::Host("time".into())));
        let Some(req) = job.request() else { continue };
        let chunks: Vec<&str> = req.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
        let mut best = f64::MAX;
        for _ in 0..20 {
            let t = Instant::now();
            std::hint::black_box(offline::score_with(&req.basis, &chunks, p));
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{:<38} {:>7} chars {:>8.2} ms (best of 20)", d.file, d.text.chars().count(), best * 1000.0);
    }
}

// ------------------------------------------------------------ fitting --

/// One document prepared for fitting: the started job (completed many
/// times), its features, labels and characters per scored chunk.
struct Prepared<'d> {
    doc: &'d Doc,
    job: Job,
    /// Chunks per batch, to answer in batch order.
    batch_sizes: Vec<usize>,
    /// Needed snippets held by each chunk.
    y: Vec<usize>,
    section: Vec<usize>,
    basis: String,
    chunks: Vec<String>,
}

fn prepare<'d>(docs: &'d [Doc], lang: Lang) -> Vec<Prepared<'d>> {
    docs.iter()
        .filter_map(|d| {
            let job = Job::start(input(d, 0.2, lang, ScorerChoice::Host("fit".into())));
            let req = job.request()?;
            let chunks: Vec<&str> = req.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
            let y = chunks
                .iter()
                .map(|c| {
                    let hay = Haystack::new(c);
                    d.needed.iter().filter(|s| hay.contains(s)).count()
                })
                .collect();
            let batch_sizes = req.batches.iter().map(|b| b.chunks.len()).collect();
            let section = offline::section_numbers(&chunks);
            let chunks_owned = chunks.iter().map(|c| c.to_string()).collect();
            Some(Prepared { doc: d, job, batch_sizes, y, section, basis: req.basis.clone(), chunks: chunks_owned })
        })
        .collect()
}

/// The real path with `scores` answered; `measure`d.
fn complete(p: &Prepared, scores: &[f64]) -> Res {
    let mut it = scores.iter();
    let answers = p.batch_sizes.iter().map(|&n| BatchAnswer::Scores(it.by_ref().take(n).map(|s| Some(*s)).collect())).collect();
    measure(p.doc, &p.job.complete(Some(ScoringResponse { answers: Ok(answers), elapsed_ms: 0 }), 1))
}

/// Ranking power of a score, whatever its calibration: per document, the
/// best net reduction through the real path with a per-document cut losing
/// at most 0 / 1 / 2 snippets; the mean over all documents (unscored ones count 0).
fn ranking(all: &[Doc], prepared: &[Prepared], f: &dyn Fn(&Prepared) -> Vec<f64>, verbose: bool) -> [f64; 3] {
    let mut sums = [0.0f64; 3];
    for p in prepared {
        let scores = f(p);
        let mut cuts: Vec<f64> = scores.clone();
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        cuts.push(f64::INFINITY);
        let mut best = [0.0f64; 3];
        for &c in &cuts {
            let s: Vec<f64> = scores.iter().map(|&x| if x >= c { 1.0 } else { 0.0 }).collect();
            let r = complete(p, &s);
            let lost = r.topics.len() - r.found;
            for k in 0..3 {
                if lost <= k && r.reduction > best[k] {
                    best[k] = r.reduction;
                }
            }
            if lost > 2 {
                break;
            }
        }
        if verbose {
            println!("  {:<38} {:>7} {:>7} {:>7}", p.doc.file, pct(best[0]), pct(best[1]), pct(best[2]));
        }
        for k in 0..3 {
            sums[k] += best[k];
        }
    }
    let n = all.len() as f64;
    [sums[0] / n, sums[1] / n, sums[2] / n]
}

/// A deterministic pseudo-random generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

/// Per configuration, per prepared document: (reduction, snippets found).
fn grid_table(prepared: &[Prepared], configs: &[Params]) -> Vec<Vec<(f64, usize)>> {
    configs
        .iter()
        .map(|p| {
            prepared
                .iter()
                .map(|d| {
                    let chunks: Vec<&str> = d.chunks.iter().map(String::as_str).collect();
                    let scores = offline::score_with(&d.basis, &chunks, *p);
                    let r = complete(d, &scores);
                    (r.reduction, r.found)
                })
                .collect()
        })
        .collect()
}

/// Chooses the configuration with the best mean reduction at recall ≥
/// `target` over the documents `mask` selects (documents not prepared count
/// 0 reduction and all snippets found: `extra_docs`, `extra_needed`); when
/// none reaches the target, the one with the best recall.
fn choose(table: &[Vec<(f64, usize)>], needed: &[usize], mask: &[bool], extra_docs: usize, extra_needed: usize, target: f64) -> Option<usize> {
    let n_docs = mask.iter().filter(|m| **m).count() + extra_docs;
    let n_needed: usize = needed.iter().zip(mask).filter(|(_, m)| **m).map(|(n, _)| n).sum::<usize>() + extra_needed;
    let mut best: Option<(f64, usize)> = None;
    let mut fallback: Option<(usize, f64, usize)> = None;
    for (c, row) in table.iter().enumerate() {
        let (mut red, mut found) = (0.0, extra_needed);
        for (d, (r, f)) in row.iter().enumerate() {
            if mask[d] {
                red += r;
                found += f;
            }
        }
        let mean = red / n_docs as f64;
        if fallback.is_none_or(|(f, m, _)| found > f || (found == f && mean > m + 1e-12)) {
            fallback = Some((found, mean, c));
        }
        if (found as f64) < target * n_needed as f64 {
            continue;
        }
        if best.is_none_or(|(b, _)| mean > b + 1e-12) {
            best = Some((mean, c));
        }
    }
    // No configuration reaches the target: the one with the best recall.
    best.map(|(_, c)| c).or(fallback.map(|(_, _, c)| c))
}

fn grid(all: &[Doc], configs: Vec<Params>, target: f64) {
    let prepared = prepare(all, Lang::En);
    let extra_docs = all.len() - prepared.len();
    let extra_needed: usize = all.iter().map(|d| d.needed.len()).sum::<usize>() - prepared.iter().map(|p| p.doc.needed.len()).sum::<usize>();
    let needed: Vec<usize> = prepared.iter().map(|p| p.doc.needed.len()).collect();
    let t = Instant::now();
    let table = grid_table(&prepared, &configs);
    eprintln!("{} configurations in {:.1} s", configs.len(), t.elapsed().as_secs_f64());
    let all_mask = vec![true; prepared.len()];
    let Some(c) = choose(&table, &needed, &all_mask, extra_docs, extra_needed, target) else {
        println!("no configuration reaches recall {target}");
        return;
    };
    let fitted_red: f64 = table[c].iter().map(|r| r.0).sum::<f64>() / all.len() as f64;
    let fitted_found: usize = table[c].iter().map(|r| r.1).sum::<usize>() + extra_needed;
    let total_needed: usize = all.iter().map(|d| d.needed.len()).sum();
    println!("fitted: {:?}", configs[c]);
    for (p, r) in prepared.iter().zip(&table[c]) {
        println!("  {:<38} {:>7} {}/{}", p.doc.file, pct(r.0), r.1, p.doc.needed.len());
    }
    println!("fitted: mean {} recall {} ({}/{})", pct(fitted_red), pct(fitted_found as f64 / total_needed as f64), fitted_found, total_needed);
    // Leave one group out (the RFC's two copies are one group).
    let group = |p: &Prepared| p.doc.file.replace(".lf.md", ".crlf.md");
    let mut groups: Vec<String> = prepared.iter().map(group).collect();
    groups.dedup();
    let (mut hred, mut hfound) = (0.0, extra_needed);
    for g in &groups {
        let mask: Vec<bool> = prepared.iter().map(|p| &group(p) != g).collect();
        let Some(c) = choose(&table, &needed, &mask, extra_docs, extra_needed, target) else { continue };
        for (d, p) in prepared.iter().enumerate() {
            if !mask[d] {
                hred += table[c][d].0;
                hfound += table[c][d].1;
                println!("  held-out {:<36} {:>7} {}/{}  (config {c})", p.doc.file, pct(table[c][d].0), table[c][d].1, p.doc.needed.len());
            }
        }
    }
    println!(
        "held-out (leave one document out): mean {} recall {} ({}/{})",
        pct(hred / all.len() as f64),
        pct(hfound as f64 / total_needed as f64),
        hfound,
        total_needed
    );
}

/// Random configurations of the shipped family (and the shipped one first).
fn random_configs(n: usize, seed: u64) -> Vec<Params> {
    let mut rng = Rng(seed);
    let mut out = vec![Params::SHIPPED];
    for _ in 0..n {
        out.push(Params {
            query_counts: rng.pick(&[false, true]),
            k1: rng.pick(&[0.9, 1.2, 2.0]),
            b: rng.pick(&[0.5, 0.75, 0.9]),
            heading_weight: rng.pick(&[0.5, 1.0, 2.0]),
            gamma: rng.pick(&[1.5, 2.0, 3.0, 4.0, 5.0]),
            coverage_ref: rng.pick(&[0.0, 0.7, 0.9]),
            section_decay: rng.pick(&[0.0, 0.4, 0.5, 0.6, 0.7]),
            neighbour_share: rng.pick(&[0.0, 0.2, 0.3, 0.4, 0.5]),
            bridge_share: rng.pick(&[0.0, 0.5, 0.7, 0.9]),
            mass_exponent: rng.pick(&[0.0, 0.5, 0.6, 0.7, 0.8]),
            ..Params::SHIPPED
        });
    }
    out
}

/// `Params::SHIPPED` changed by `key=value,…` (the `P` environment variable).
fn params_from_env() -> Params {
    let mut p = Params::SHIPPED;
    let spec = std::env::var("P").unwrap_or_default();
    for kv in spec.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').expect("key=value");
        let f: f64 = v.parse().unwrap_or(0.0);
        match k {
            "sentences" => p.sentences = f != 0.0,
            "headings" => p.headings = f != 0.0,
            "query_counts" => p.query_counts = f != 0.0,
            "k1" => p.k1 = f,
            "b" => p.b = f,
            "heading_weight" => p.heading_weight = f,
            "gamma" => p.gamma = f,
            "coverage_ref" => p.coverage_ref = f,
            "section_decay" => p.section_decay = f,
            "neighbour_share" => p.neighbour_share = f,
            "bridge_share" => p.bridge_share = f,
            "mass_exponent" => p.mass_exponent = f,
            other => panic!("unknown parameter {other}"),
        }
    }
    p
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    let mut threshold = 0.2;
    let mut lang = Lang::En;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--corpus" => {
                corpus = PathBuf::from(args.remove(i + 1));
                args.remove(i);
            }
            "--threshold" => {
                threshold = args.remove(i + 1).parse().expect("threshold");
                args.remove(i);
            }
            "--lang" => {
                lang = if args.remove(i + 1) == "ja" { Lang::Ja } else { Lang::En };
                args.remove(i);
            }
            _ => i += 1,
        }
    }
    let docs = load(&corpus, lang);
    let cmd = args.first().map(String::as_str).unwrap_or("eval");
    match cmd {
        "eval" => print_eval(&docs, threshold, lang, if std::env::var("P").is_ok() { Who::Variant(params_from_env()) } else { Who::Shipped }),
        "oracle" => print_eval(&docs, threshold, lang, Who::Oracle),
        "table" => table(&load(&corpus, Lang::En), &load(&corpus, Lang::Ja), Who::Shipped),
        "check" => {
            check(&load(&corpus, Lang::En), Lang::En);
            check(&load(&corpus, Lang::Ja), Lang::Ja);
        }
        "dump" => dump(&docs, args.get(1).map(String::as_str).unwrap_or(""), params_from_env()),
        "time" => time(&docs, params_from_env()),
        "evidence" => evidence(&load(&corpus, Lang::En), &load(&corpus, Lang::Ja)),
        "ranks" => ranks(&docs, params_from_env()),
        "secoracle" => {
            let prepared = prepare(&docs, Lang::En);
            let r = ranking(&docs, &prepared, &|p: &Prepared| {
                (0..p.y.len()).map(|i| if (0..p.y.len()).any(|j| p.section[j] == p.section[i] && p.y[j] > 0) { 1.0 } else { 0.0 }).collect()
            }, true);
            println!("section oracle: {}", pct(r[0]));
            let r = ranking(&docs, &prepared, &|p: &Prepared| {
                (0..p.y.len()).map(|i| if p.y[i] > 0 { 1.0 } else { 0.0 }).collect()
            }, true);
            println!("paragraph oracle: {}", pct(r[0]));
        }
        "grid" => {
            let n: usize = args.get(1).map_or(300, |x| x.parse().unwrap());
            let seed: u64 = args.get(2).map_or(1, |x| x.parse().unwrap());
            let target: f64 = args.get(3).map_or(0.97, |x| x.parse().unwrap());
            grid(&docs, random_configs(n, seed), target);
        }
        "localgrid" => {
            // The shipped family around `P`: a full product of five knobs.
            let base = params_from_env();
            let target: f64 = args.get(1).map_or(0.97, |x| x.parse().unwrap());
            let mut configs = Vec::new();
            for gamma in [3.0, 4.0, 5.0] {
                for mass_exponent in [0.5, 0.55, 0.6, 0.65] {
                    for section_decay in [0.4, 0.5, 0.6] {
                        for neighbour_share in [0.2, 0.3, 0.4] {
                            for bridge_share in [0.5, 0.7, 0.9] {
                                configs.push(Params { gamma, mass_exponent, section_decay, neighbour_share, bridge_share, ..base });
                            }
                        }
                    }
                }
            }
            grid(&docs, configs, target);
        }
        other => {
            eprintln!("unknown command {other}");
            std::process::exit(2);
        }
    }
}

/// The offline scorer's evidence (`offline::evidence`, SPEC §5's abstention)
/// for every document's own requests and for every other document's English
/// request (a request on a page that does not answer it).
fn evidence(en: &[Doc], ja: &[Doc]) {
    let ev = |request: &str, text: &str| offline::evidence(request, &[text]);
    let parts = |request: &str, text: &str| {
        let (c, r) = offline::evidence_parts(request, &[text]);
        format!("coverage {c:.3} reach {r:.3}")
    };
    println!("own requests (en):");
    for d in en {
        println!("  {:.3}  {}  {}", ev(&d.request, &d.text), parts(&d.request, &d.text), d.file);
    }
    println!("own requests (ja):");
    for d in ja {
        println!("  {:.3}  {}  {}", ev(&d.request, &d.text), parts(&d.request, &d.text), d.file);
    }
    // A mixed page: the Japanese Vue page, then the English transports page.
    if let (Some(vue), Some(mcp), Some(mcp_ja)) = (
        en.iter().find(|d| d.file.starts_with("vue-docs-ja")),
        en.iter().find(|d| d.file.starts_with("mcp-spec")),
        ja.iter().find(|d| d.file.starts_with("mcp-spec")),
    ) {
        let mixed = format!("{}\n\n{}", vue.text, mcp.text);
        for (what, request) in [("en transports request", &mcp.request), ("ja transports request", &mcp_ja.request), ("en vue request", &vue.request)] {
            println!("  {:.3}  {}  mixed page (vue ja + transports en), {what}", ev(request, &mixed), parts(request, &mixed));
        }
    }
    let mut cross: Vec<(f64, String)> = Vec::new();
    for r in en {
        for d in en {
            if r.file != d.file && !(r.file.starts_with("rust-rfc-3013") && d.file.starts_with("rust-rfc-3013")) {
                cross.push((ev(&r.request, &d.text), format!("{} on {}", r.file, d.file)));
            }
        }
    }
    cross.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("other documents' en requests: {} pairs, highest:", cross.len());
    for (e, what) in cross.iter().take(8) {
        println!("  {e:.3}  {what}");
    }
    let n = cross.len() as f64;
    for bound in [0.3, 0.4, 0.5, 0.6] {
        println!("  below {bound}: {:.1} %", 100.0 * cross.iter().filter(|c| c.0 < bound).count() as f64 / n);
    }
}
