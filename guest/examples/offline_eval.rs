//! Dev-only measurement of the offline scorer on a labelled corpus, natively
//! (no wasmtime): every document goes through the guest's real decision path
//! (`prune::Job::start` → `Job::complete`: gates, split, the 25 % floor,
//! markers counted), exactly as `toolprune eval` counts it
//! (`host-harness/src/eval.rs`): net reduction = the guest's ratio when the
//! outcome is `ok`, else 0; recall = the share of needed snippets present in
//! the body (or in one of its decoded JSON strings).
//!
//! ```sh
//! cargo run --release -p toolprune-guest --example offline_eval -- [--corpus DIR] eval [--threshold T] [--lang en|ja]
//! cargo run --release -p toolprune-guest --example offline_eval -- table      # every threshold, ja, oracle
//! cargo run --release -p toolprune-guest --example offline_eval -- check      # variant path == shipped path
//! cargo run --release -p toolprune-guest --example offline_eval -- dump DOC   # per-paragraph scores
//! cargo run --release -p toolprune-guest --example offline_eval -- time       # native scoring time per document
//! cargo run --release -p toolprune-guest --example offline_eval -- ablate     # one knob at a time
//! cargo run --release -p toolprune-guest --example offline_eval -- cv         # grid + leave-one-document-out
//! ```
//!
//! Variants are scored by `offline::score_with` with other [`Params`] and
//! answered to the same `Job` as a host scorer would (`check` proves that path
//! gives the shipped path's bytes for the shipped parameters). The **oracle**
//! answers 1.0 for a paragraph holding a needed snippet and 0.0 otherwise.

use std::path::{Path, PathBuf};
use std::time::Instant;

use toolprune_guest::component::exports::toolprune::pruner::pruner::{Outcome, PruneInput, Pruned, ScorerChoice};
use toolprune_guest::component::toolprune::pruner::types::{BatchAnswer, Lang, ScoringResponse};
use toolprune_guest::offline::{self, Params};
use toolprune_guest::prune::{outcome_name, Job};

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

/// `host-harness/src/eval.rs`'s `Haystack`: the body and its decoded JSON strings.
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
        sequence: 1,
        scorer,
        jev_model: None,
        agent: "eval".into(),
        tool: "eval".into(),
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
        Who::Shipped => Job::start(input(doc, threshold, lang, ScorerChoice::Offline)).complete(None),
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
            job.complete(response)
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
            job.complete(response)
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
    let hay = Haystack::new(&p.body);
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
    let h = p.body.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    Res {
        outcome: outcome_name(p.outcome),
        reduction: if ok { p.ratio.unwrap_or(0.0) } else { 0.0 },
        raw,
        saved: if ok { raw.saturating_sub(u64::from(p.counts.kept_chars)) } else { 0 },
        dropped: ok.then_some(p.counts.dropped),
        paragraphs: p.counts.paragraphs,
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

/// Per document, the best per-document cut of the scores: the net
/// reduction through the real path when the cut is just at the k-th lowest
/// score of a paragraph holding needed snippets (k = 0, 1, 2 snippets lost at most).
fn ranks(docs: &[Doc], p: Params) {
    let mut sums = [0.0f64; 3];
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
        let mut best = [(0.0f64, 0usize, 0.0f64); 3];
        for &c in &cuts {
            let r = measure(d, &run(d, 0.2, Lang::En, Who::Cut(p, c)));
            let lost = r.topics.len() - r.found;
            for k in 0..3 {
                if lost <= k && r.reduction > best[k].0 {
                    best[k] = (r.reduction, lost, c);
                }
            }
        }
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
    println!("mean best-cut net reduction: 0 lost {} | <=1 lost {} | <=2 lost {}", pct(sums[0] / n), pct(sums[1] / n), pct(sums[2] / n));
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
    x: Vec<[f64; offline::NF]>,
    /// Needed snippets held by each chunk.
    y: Vec<usize>,
    chars: Vec<usize>,
    section: Vec<usize>,
}

fn prepare<'d>(docs: &'d [Doc], lang: Lang) -> Vec<Prepared<'d>> {
    docs.iter()
        .filter_map(|d| {
            let job = Job::start(input(d, 0.2, lang, ScorerChoice::Host("fit".into())));
            let req = job.request()?;
            let chunks: Vec<&str> = req.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
            let x = offline::features(&req.basis, &chunks);
            let y = chunks
                .iter()
                .map(|c| {
                    let hay = Haystack::new(c);
                    d.needed.iter().filter(|s| hay.contains(s)).count()
                })
                .collect();
            let chars = chunks.iter().map(|c| c.chars().count()).collect();
            let batch_sizes = req.batches.iter().map(|b| b.chunks.len()).collect();
            let section = offline::sections_of(&chunks);
            Some(Prepared { doc: d, job, batch_sizes, x, y, chars, section })
        })
        .collect()
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// A linear model over a subset of the features.
#[derive(Clone, Debug)]
struct Lin {
    feats: Vec<usize>,
    w: Vec<f64>,
    b: f64,
}

impl Lin {
    fn z(&self, x: &[f64; offline::NF]) -> f64 {
        self.b + self.feats.iter().zip(&self.w).map(|(&f, w)| w * x[f]).sum::<f64>()
    }
}

/// Weighted L2 logistic regression by Newton's method.
fn fit(data: &[&Prepared], feats: &[usize], lambda: f64, neg_weight: f64) -> Lin {
    let k = feats.len() + 1;
    let mut rows: Vec<(Vec<f64>, f64, f64)> = Vec::new();
    for p in data {
        let total: usize = p.chars.iter().sum();
        let needed = p.y.iter().sum::<usize>().max(1) as f64;
        for i in 0..p.x.len() {
            let mut r: Vec<f64> = feats.iter().map(|&f| p.x[i][f]).collect();
            r.push(1.0);
            if p.y[i] > 0 {
                rows.push((r, 1.0, p.y[i] as f64 / needed));
            } else {
                rows.push((r, 0.0, neg_weight * p.chars[i] as f64 / total as f64));
            }
        }
    }
    let mut w = vec![0.0; k];
    for _ in 0..50 {
        let mut g = vec![0.0; k];
        let mut h = vec![vec![0.0; k]; k];
        for (r, y, wt) in &rows {
            let z: f64 = r.iter().zip(&w).map(|(a, b)| a * b).sum();
            let pr = sigmoid(z);
            for a in 0..k {
                g[a] += wt * (pr - y) * r[a];
                for b in 0..k {
                    h[a][b] += wt * pr * (1.0 - pr) * r[a] * r[b];
                }
            }
        }
        for a in 0..k - 1 {
            g[a] += lambda * w[a];
            h[a][a] += lambda;
        }
        h[k - 1][k - 1] += 1e-9;
        let step = solve(h, g);
        let mut change = 0.0f64;
        for a in 0..k {
            w[a] -= step[a];
            change = change.max(step[a].abs());
        }
        if change < 1e-9 {
            break;
        }
    }
    Lin { feats: feats.to_vec(), b: w[k - 1], w: w[..k - 1].to_vec() }
}

fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
        a.swap(c, p);
        b.swap(c, p);
        let d = a[c][c];
        if d.abs() < 1e-15 {
            continue;
        }
        for r in 0..n {
            if r != c {
                let f = a[r][c] / d;
                for k in c..n {
                    a[r][k] -= f * a[c][k];
                }
                b[r] -= f * b[c];
            }
        }
    }
    (0..n).map(|i| if a[i][i].abs() < 1e-15 { 0.0 } else { b[i] / a[i][i] }).collect()
}

/// The real path with `scores` answered; `measure`d.
fn complete(p: &Prepared, scores: &[f64]) -> Res {
    let mut it = scores.iter();
    let answers = p.batch_sizes.iter().map(|&n| BatchAnswer::Scores(it.by_ref().take(n).map(|s| Some(*s)).collect())).collect();
    measure(p.doc, &p.job.complete(Some(ScoringResponse { answers: Ok(answers), elapsed_ms: 0 })))
}

/// Mean reduction over `data` (plus `extra_docs` documents counting 0) and
/// snippets found / needed (plus `extra_needed` always found).
fn evaluate(data: &[&Prepared], m: &Lin, shift: f64, threshold: f64) -> (f64, usize, usize, Vec<Res>) {
    let mut rs = Vec::new();
    for p in data {
        let scores: Vec<f64> = p.x.iter().map(|x| sigmoid(m.z(x) + shift)).collect();
        let mut scores = scores;
        let _ = threshold;
        for s in scores.iter_mut() {
            *s = s.clamp(0.0, 1.0);
        }
        rs.push(complete(p, &scores));
    }
    let red = rs.iter().map(|r| r.reduction).sum::<f64>();
    let found = rs.iter().map(|r| r.found).sum();
    let needed = rs.iter().map(|r| r.topics.len()).sum();
    (red, found, needed, rs)
}

/// The shift of the intercept that maximises the summed reduction at 0.2
/// with recall at least `target` on `data`.
fn calibrate(data: &[&Prepared], m: &Lin, target: f64) -> f64 {
    let mut best = (f64::NEG_INFINITY, 0.0);
    let mut s = -8.0;
    while s <= 8.0 {
        let (red, found, needed, _) = evaluate(data, m, s, 0.2);
        let recall = found as f64 / needed.max(1) as f64;
        if recall >= target && red > best.0 {
            best = (red, s);
        }
        s += 0.1;
    }
    best.1
}

/// Fit on everything, then leave-one-group-out (the RFC's two copies are one group).
fn cv(all: &[Doc], feats: &[usize], lambda: f64, neg: f64, target: f64, verbose: bool) -> (f64, f64, f64, f64) {
    let prepared = prepare(all, Lang::En);
    let unscored = all.len() - prepared.len();
    let extra_needed: usize = all
        .iter()
        .filter(|d| !prepared.iter().any(|p| std::ptr::eq(p.doc, *d)))
        .map(|d| d.needed.len())
        .sum();
    let group = |p: &Prepared| p.doc.file.replace(".lf.md", ".crlf.md");
    let refs: Vec<&Prepared> = prepared.iter().collect();
    let m = fit(&refs, feats, lambda, neg);
    let shift = calibrate(&refs, &m, target);
    let (red, found, needed, rs) = evaluate(&refs, &m, shift, 0.2);
    let n = all.len() as f64;
    let fitted = (red / n, (found + extra_needed) as f64 / (needed + extra_needed) as f64);
    if verbose {
        let names: Vec<String> = m.feats.iter().zip(&m.w).map(|(&f, w)| format!("{}={w:.3}", offline::FEATURE_NAMES[f])).collect();
        println!("model: {} b={:.3} shift={shift:.1}", names.join(" "), m.b);
        for (p, r) in refs.iter().zip(&rs) {
            println!("  fitted {:<38} {:<14} {:>7} {}/{}", p.doc.file, r.outcome, pct(r.reduction), r.found, r.topics.len());
        }
    }
    let mut groups: Vec<String> = refs.iter().map(|p| group(p)).collect();
    groups.dedup();
    let (mut hred, mut hfound, mut hneeded) = (0.0, 0, 0);
    for g in &groups {
        let train: Vec<&Prepared> = refs.iter().copied().filter(|p| &group(p) != g).collect();
        let test: Vec<&Prepared> = refs.iter().copied().filter(|p| &group(p) == g).collect();
        let m = fit(&train, feats, lambda, neg);
        let shift = calibrate(&train, &m, target);
        let (red, found, needed, rs) = evaluate(&test, &m, shift, 0.2);
        hred += red;
        hfound += found;
        hneeded += needed;
        if verbose {
            for (p, r) in test.iter().zip(&rs) {
                println!("  held-out {:<36} {:<14} {:>7} {}/{} shift={shift:.1}", p.doc.file, r.outcome, pct(r.reduction), r.found, r.topics.len());
            }
        }
    }
    let _ = unscored;
    let held = (hred / n, (hfound + extra_needed) as f64 / (hneeded + extra_needed) as f64);
    (fitted.0, fitted.1, held.0, held.1)
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
        "eval" => print_eval(&docs, threshold, lang, Who::Shipped),
        "oracle" => print_eval(&docs, threshold, lang, Who::Oracle),
        "table" => table(&load(&corpus, Lang::En), &load(&corpus, Lang::Ja), Who::Shipped),
        "check" => {
            check(&load(&corpus, Lang::En), Lang::En);
            check(&load(&corpus, Lang::Ja), Lang::Ja);
        }
        "dump" => dump(&docs, args.get(1).map(String::as_str).unwrap_or(""), Params::SHIPPED),
        "time" => time(&docs, Params::SHIPPED),
        "ranks" => ranks(&docs, Params::SHIPPED),
        "rankfeat" => {
            let prepared = prepare(&docs, Lang::En);
            let verbose = args.get(2).is_some();
            let which: Vec<usize> = match args.get(1) {
                Some(f) => f.split(',').map(|x| x.parse().unwrap()).collect(),
                None => (0..offline::NF).collect(),
            };
            for f in which {
                let r = ranking(&docs, &prepared, &|p: &Prepared| p.x.iter().map(|x| x[f]).collect(), verbose);
                println!("{:<10} best-cut mean: 0 lost {} | <=1 {} | <=2 {}", offline::FEATURE_NAMES[f], pct(r[0]), pct(r[1]), pct(r[2]));
            }
        }
        "secoracle" => {
            let prepared = prepare(&docs, Lang::En);
            let r = ranking(&docs, &prepared, &|p: &Prepared| {
                (0..p.x.len()).map(|i| if (0..p.x.len()).any(|j| p.section[j] == p.section[i] && p.y[j] > 0) { 1.0 } else { 0.0 }).collect()
            }, true);
            println!("section oracle: {}", pct(r[0]));
            let r = ranking(&docs, &prepared, &|p: &Prepared| {
                (0..p.x.len()).map(|i| if p.y[i] > 0 { 1.0 } else { 0.0 }).collect()
            }, true);
            println!("paragraph oracle: {}", pct(r[0]));
        }
        "hard" => {
            let prepared = prepare(&docs, Lang::En);
            for p in &prepared {
                let mut idx: Vec<usize> = (0..p.x.len()).filter(|&i| p.y[i] > 0).collect();
                idx.sort_by(|&a, &b| p.x[a][0].total_cmp(&p.x[b][0]));
                let total: usize = p.chars.iter().sum();
                println!("{} ({} paragraphs, {} needed)", p.doc.file, p.x.len(), idx.len());
                for &i in idx.iter().take(5) {
                    let above: usize = (0..p.x.len()).filter(|&j| p.y[j] == 0 && p.x[j][0] >= p.x[i][0]).map(|j| p.chars[j]).sum();
                    let v: Vec<String> = p.x[i].iter().map(|v| format!("{v:.2}")).collect();
                    println!("   p{i:<3} y{} legacy {:.2} | non-needed chars at or above {:>5.1}% | {}", p.y[i], p.x[i][0], 100.0 * above as f64 / total as f64, v.join(" "));
                }
            }
        }
        "cv" => {
            let feats: Vec<usize> = args
                .get(1)
                .map(|f| f.split(',').map(|x| x.parse().expect("feature index")).collect())
                .unwrap_or_else(|| (0..offline::NF).collect());
            let lambda: f64 = args.get(2).map_or(0.01, |x| x.parse().unwrap());
            let neg: f64 = args.get(3).map_or(1.0, |x| x.parse().unwrap());
            let target: f64 = args.get(4).map_or(0.975, |x| x.parse().unwrap());
            let (fr, fc, hr, hc) = cv(&docs, &feats, lambda, neg, target, true);
            println!("fitted: mean {} recall {} | held-out: mean {} recall {}", pct(fr), pct(fc), pct(hr), pct(hc));
        }
        other => {
            eprintln!("unknown command {other}");
            std::process::exit(2);
        }
    }
}
