//! Writes the shared test vectors `tests/vectors/vectors.json` (format:
//! `tests/vectors/README.md`) by running every case through the Rust host
//! with a deterministic scorer (the guest's offline scorer, or a
//! [`ScriptedScorer`] built from the case's description).
//!
//! ```sh
//! cargo run -p toolprune --example make_vectors            # write
//! cargo run -p toolprune --example make_vectors -- --check # compare only
//! ```
//!
//! `hosts/rust/tests/vectors.rs` includes this file and checks that the
//! committed vectors equal a fresh generation, so stale vectors fail CI.
//! Shared files are read from `../shared` beside the repository
//! (`TOOLPRUNE_SHARED` overrides it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolprune::types::{
    fate_name, omitted_outcome_name, outcome_name, shape_name, Failure, Fate, Lang, ScoringRequest,
    ScoringStop,
};
use toolprune::{
    CapturedLog, OfflineScorer, Pruner, Scorer, ScriptedScorer, ToolResult, Turn, TurnOptions,
};

/// Where the vectors live, relative to the workspace root.
pub const VECTORS_RELATIVE: &str = "tests/vectors/vectors.json";

/// `tests/vectors/vectors.json` of this workspace.
pub fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(VECTORS_RELATIVE)
}

/// `shared/` beside the repository, or `$TOOLPRUNE_SHARED`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("TOOLPRUNE_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

fn read_shared(relative: &str) -> String {
    let path = shared_dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

const REQUEST: &str = "How do I configure the retry limit for the upload client?";
const REQUEST_JA: &str = "アップロードの再試行回数を設定するにはどうすればよいですか？";
/// Bodies of at most this many characters are written out in full.
const BODY_INLINE_MAX: usize = 20_000;

// ----- the cases, as described in the vectors -----

/// How one batch fails in a scripted scorer.
#[derive(Clone, Copy, Debug)]
enum Fail {
    Http(u16),
    Network,
}

/// A scripted scorer, as the vectors describe it. Batches are numbered from
/// 0 in `scoring-request.batches` order; paragraphs by their SPEC §4.5 number.
#[derive(Clone, Debug)]
struct Scripted {
    default: Option<f64>,
    scores: BTreeMap<u32, Option<f64>>,
    fail_batches: BTreeMap<u32, Fail>,
    jev_responses: BTreeMap<u32, String>,
    stop: Option<ScoringStop>,
    elapsed_ms: u32,
}

impl Scripted {
    /// Every paragraph scores `default` until told otherwise; `ms=7`.
    fn new(default: Option<f64>) -> Self {
        Scripted {
            default,
            scores: BTreeMap::new(),
            fail_batches: BTreeMap::new(),
            jev_responses: BTreeMap::new(),
            stop: None,
            elapsed_ms: 7,
        }
    }

    fn with(mut self, paragraphs: impl IntoIterator<Item = u32>, score: Option<f64>) -> Self {
        for p in paragraphs {
            self.scores.insert(p, score);
        }
        self
    }

    fn fail(mut self, batch: u32, fail: Fail) -> Self {
        self.fail_batches.insert(batch, fail);
        self
    }

    fn jev(mut self, batch: u32, body: String) -> Self {
        self.jev_responses.insert(batch, body);
        self
    }

    fn stop(mut self, stop: ScoringStop) -> Self {
        self.stop = Some(stop);
        self
    }

    /// The Rust host's scorer for this description.
    fn scorer(&self) -> ScriptedScorer {
        let mut s = ScriptedScorer::new().default_score(self.default).elapsed_ms(self.elapsed_ms);
        for (&p, &score) in &self.scores {
            s = match score {
                Some(score) => s.score(p, score),
                None => s.unscored(p),
            };
        }
        for (&b, &fail) in &self.fail_batches {
            s = s.fail_batch(
                b as usize,
                match fail {
                    Fail::Http(status) => Failure::Http(status),
                    Fail::Network => Failure::Network,
                },
            );
        }
        for (&b, body) in &self.jev_responses {
            s = s.jev_response(b as usize, body.clone());
        }
        if let Some(stop) = self.stop {
            s = s.stop(stop);
        }
        s
    }

    /// The score this scorer gives paragraph `p`.
    fn score_of(&self, p: u32) -> Option<f64> {
        *self.scores.get(&p).unwrap_or(&self.default)
    }
}

#[derive(Clone, Debug)]
enum ScorerSpec {
    Offline,
    Scripted(Scripted),
}

#[derive(Clone, Debug)]
enum Input {
    Inline(String),
    /// Relative to `shared/`.
    File(String),
}

#[derive(Clone, Debug)]
struct Case {
    name: String,
    request: String,
    input: Input,
    succeeded: bool,
    prunable: bool,
    enabled: bool,
    threshold: f64,
    lang: Lang,
    agent: String,
    tool: String,
    scorer: ScorerSpec,
    /// `omitted` arguments, asked in order after the prune, same turn.
    omitted: Vec<String>,
}

impl Case {
    /// Pruning on, a successful prunable tool, en, 0.2, the offline scorer.
    fn new(name: &str, request: &str, input: Input) -> Self {
        Case {
            name: name.to_string(),
            request: request.to_string(),
            input,
            succeeded: true,
            prunable: true,
            enabled: true,
            threshold: 0.2,
            lang: Lang::En,
            agent: "vectors".to_string(),
            tool: "fetch".to_string(),
            scorer: ScorerSpec::Offline,
            omitted: Vec::new(),
        }
    }

    fn file(name: &str, request: &str, relative: &str) -> Self {
        Self::new(name, request, Input::File(relative.to_string()))
    }

    fn text(&self) -> String {
        match &self.input {
            Input::Inline(text) => text.clone(),
            Input::File(relative) => read_shared(relative),
        }
    }

    fn scripted(mut self, scripted: Scripted) -> Self {
        self.scorer = ScorerSpec::Scripted(scripted);
        self
    }

    fn lang(mut self, lang: Lang) -> Self {
        self.lang = lang;
        self
    }

    fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    fn omitted(mut self, arguments: impl IntoIterator<Item = String>) -> Self {
        self.omitted.extend(arguments);
        self
    }

    fn options(&self) -> TurnOptions {
        let mut o = TurnOptions::new(self.request.clone());
        o.agent = self.agent.clone();
        o.threshold = self.threshold;
        o.lang = self.lang;
        o.enabled = self.enabled;
        o
    }

    fn tool_result(&self) -> ToolResult {
        ToolResult {
            tool: self.tool.clone(),
            succeeded: self.succeeded,
            prunable: self.prunable,
            text: self.text(),
        }
    }

    /// The scoring request the guest makes for this case (None when no call
    /// is made), from a probe with a scorer that keeps everything.
    fn probe(&self) -> Option<ScoringRequest> {
        let scorer = Arc::new(ScriptedScorer::new());
        let mut options = self.options();
        options.enabled = true;
        let mut turn = Turn::new(pruner(), scorer.clone(), options).with_log(Arc::new(CapturedLog::new()));
        let mut result = self.tool_result();
        result.succeeded = true;
        result.prunable = true;
        turn.on_tool_result(result);
        scorer.requests().into_iter().next()
    }
}

fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component compiles")
}

fn scorable(request: &ScoringRequest) -> Vec<u32> {
    request.batches.iter().flat_map(|b| b.paragraphs.iter().copied()).collect()
}

/// Odd scorable paragraphs score 0.05 (dropped), the others 0.9.
fn drop_odd(case: &Case) -> Scripted {
    let request = case.probe().unwrap_or_else(|| panic!("{}: no scoring request", case.name));
    Scripted::new(Some(0.9)).with(scorable(&request).into_iter().filter(|p| p % 2 == 1), Some(0.05))
}

/// Paragraphs whose text contains one of `needles` score 0.9, the rest 0.05.
fn keep_mentioning(case: &Case, needles: &[&str]) -> Scripted {
    let request = case.probe().unwrap_or_else(|| panic!("{}: no scoring request", case.name));
    let keep = request.batches.iter().flat_map(|b| {
        b.paragraphs
            .iter()
            .zip(&b.chunks)
            .filter(|(_, chunk)| needles.iter().any(|n| chunk.contains(n)))
            .map(|(p, _)| *p)
    });
    Scripted::new(Some(0.05)).with(keep.collect::<Vec<_>>(), Some(0.9))
}

fn batch_count(case: &Case) -> u32 {
    case.probe().map(|r| r.batches.len() as u32).unwrap_or(0)
}

/// A Jev response body for batch `batch` of `case`, answering each paragraph
/// as `scripted` would, with `tokens` input tokens; in the Cloudflare
/// envelope when `cloudflare`.
fn jev_body(case: &Case, scripted: &Scripted, batch: u32, tokens: u64, cloudflare: bool) -> String {
    let request = case.probe().unwrap_or_else(|| panic!("{}: no scoring request", case.name));
    let answers: Vec<String> = request.batches[batch as usize]
        .paragraphs
        .iter()
        .filter_map(|&p| {
            scripted.score_of(p).map(|s| format!(r#""p{p}":{{"type":"noul","noul":{}}}"#, number(s)))
        })
        .collect();
    let bare = format!(
        r#"{{"model":"jev-1.13.0","answers":{{{}}},"usage":{{"input_tokens":{tokens},"output_tokens":0}}}}"#,
        answers.join(",")
    );
    if cloudflare {
        format!(r#"{{"success":true,"result":{bare},"errors":[],"messages":[]}}"#)
    } else {
        bare
    }
}

fn number(x: f64) -> String {
    serde_json::to_string(&x).expect("finite")
}

fn args(id: &str, from: u32, to: u32) -> String {
    format!(r#"{{"id":"{id}","from":{from},"to":{to}}}"#)
}

/// `omitted` calls for a case expected to be `ok`: the first dropped
/// paragraph (ok), a kept one (not_dropped), an unknown id (not_found), and
/// invalid arguments.
fn omitted_probes(case: &Case) -> Vec<String> {
    let Some(request) = case.probe() else { return Vec::new() };
    let ScorerSpec::Scripted(s) = &case.scorer else {
        return vec![args("P1", 0, 3), args("P2", 0, 1), r#"{"id":"P1","from":3}"#.to_string()];
    };
    let threshold = case.threshold;
    let ps = scorable(&request);
    let dropped: Vec<u32> = ps.iter().copied().filter(|&p| s.score_of(p).is_some_and(|x| x < threshold)).collect();
    let kept: Vec<u32> = ps.iter().copied().filter(|&p| s.score_of(p).is_some_and(|x| x >= threshold)).collect();
    let mut out = Vec::new();
    if let Some(&d) = dropped.first() {
        out.push(args("P1", d, d));
        if let Some(&d2) = dropped.get(1) {
            out.push(format!(r#"{{"id":" p1 ","from":"{d}","to":{}.0}}"#, d2));
        }
    }
    if let Some(&k) = kept.iter().find(|&&k| !dropped.contains(&k)) {
        out.push(args("P1", k, k));
    }
    out.push(args("P2", 0, 1));
    out.push(r#"{"id":"P1","from":5,"to":2}"#.to_string());
    out.push("not json".to_string());
    out
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let headings = || Case::file("", REQUEST, "cases/headings.md");
    let named = |name: &str, mut c: Case| {
        c.name = name.to_string();
        c
    };

    // --- SPEC §2 cheap gates: raw text, no log line, nothing sent.
    let mut c = named("gate-disabled", headings());
    c.enabled = false;
    cases.push(c.scripted(Scripted::new(Some(0.0))));
    let mut c = named("gate-tool-failed", headings());
    c.succeeded = false;
    cases.push(c.scripted(Scripted::new(Some(0.0))));
    let mut c = named("gate-not-prunable", headings());
    c.prunable = false;
    cases.push(c.scripted(Scripted::new(Some(0.0))));
    cases.push(
        Case::file("gate-below-min-chars-cjk", REQUEST_JA, "cases/cjk-below-min.md")
            .lang(Lang::Ja)
            .scripted(Scripted::new(Some(0.0))),
    );
    cases.push(
        Case::new("gate-below-min-chars-inline", REQUEST, Input::Inline("A short tool result.\n\nTwo paragraphs.\n".to_string()))
            .scripted(Scripted::new(Some(0.0))),
    );

    // --- every outcome (SPEC §7, §11), scripted.
    cases.push(
        Case::new("structured-array-of-arrays", REQUEST, Input::Inline(format!("[{}, {}]", posts_inline(0..8), posts_inline(8..16))))
            .scripted(Scripted::new(Some(0.0))),
    );
    cases.push(
        Case::new("structured-object-inline", REQUEST, Input::Inline(format!("{{\"a\": \"{}\", \"b\": \"{}\"}}", "x".repeat(2500), "y".repeat(2500))))
            .scripted(Scripted::new(Some(0.0))),
    );
    cases.push(Case::file("no-basis", "  ok  ", "cases/no-basis.md").scripted(Scripted::new(Some(0.0))).omitted([args("P1", 0, 1)]));
    cases.push(Case::file("no-basis-ja", "続けて", "cases/headings.md").lang(Lang::Ja).scripted(Scripted::new(Some(0.0))));
    cases.push(named("all-dropped", headings()).scripted(Scripted::new(Some(0.0))));
    cases.push(named("nothing-dropped", headings()).scripted(Scripted::new(Some(1.0))));
    cases.push(named("nothing-dropped-all-unscored", headings()).scripted(Scripted::new(None)));
    cases.push(named("below-floor", headings()).scripted(Scripted::new(Some(0.9)).with([1], Some(0.0))));
    cases.push(named("timeout", headings()).scripted(Scripted::new(Some(0.0)).stop(ScoringStop::Timeout)));
    cases.push(named("cancelled", headings()).scripted(Scripted::new(Some(0.0)).stop(ScoringStop::Cancelled)));
    let c = named("failed-http-500", headings());
    let n = batch_count(&c);
    let mut s = Scripted::new(Some(0.0));
    for b in 0..n {
        s = s.fail(b, Fail::Http(500));
    }
    cases.push(c.scripted(s));
    let c = named("failed-network", headings());
    let mut s = Scripted::new(Some(0.0));
    for b in 0..n {
        s = s.fail(b, Fail::Network);
    }
    cases.push(c.scripted(s));
    let c = named("ok", headings());
    let s = drop_odd(&c);
    let c = c.scripted(s);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));
    let c = named("ok-ja", headings()).lang(Lang::Ja);
    let s = drop_odd(&c);
    let c = c.scripted(s);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));
    let mut c = named("ok-labels", headings());
    c.agent = "my agent=x".to_string();
    c.tool = "web fetch=1".to_string();
    let s = drop_odd(&c);
    cases.push(c.scripted(s));
    let mut c = named("ok-empty-labels", headings());
    c.agent = String::new();
    c.tool = String::new();
    let s = drop_odd(&c);
    let c = c.scripted(s);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));

    // --- thresholds (SPEC §6): 0.25 for every odd paragraph.
    for (name, t) in [("threshold-0.1", 0.1), ("threshold-0.3", 0.3), ("threshold-0.5", 0.5), ("threshold-0.22-means-0.2", 0.22), ("threshold-0-means-0.2", 0.0)] {
        let c = named(name, headings()).threshold(t);
        let request = c.probe().expect("headings scores");
        let s = Scripted::new(Some(0.9)).with(scorable(&request).into_iter().filter(|p| p % 2 == 1), Some(0.25));
        cases.push(c.scripted(s));
    }
    let c = named("threshold-equal-is-kept", headings());
    let request = c.probe().expect("headings scores");
    let ps = scorable(&request);
    let s = Scripted::new(Some(0.2)).with(ps.iter().copied().filter(|p| p % 2 == 1), Some(0.199_999)).with(ps.iter().copied().filter(|p| p % 4 == 0), Some(0.5));
    cases.push(c.scripted(s));

    // --- scores the guest must read defensively: none, out of range.
    let c = named("scores-none-and-out-of-range", headings());
    let s = drop_odd(&c).with([0], None).with([2], Some(1.5)).with([4], Some(-0.1)).with([3], None);
    cases.push(c.scripted(s));

    // --- multi-batch results: partial failures, Jev bodies, retried classes.
    let multi = || Case::file("", REQUEST, "cases/inline-backticks.md");
    let c = named("partial-failure-http-503", multi());
    let n = batch_count(&c);
    assert!(n >= 2, "inline-backticks.md has {n} batch(es); a multi-batch case needs ≥ 2");
    let s = drop_odd(&c).fail(1, Fail::Http(503));
    cases.push(c.scripted(s));
    for (name, status) in [("partial-failure-rate-limited", 429), ("partial-failure-out-of-credit", 402), ("partial-failure-http-401", 401), ("partial-failure-http-529", 529)] {
        let c = named(name, multi());
        let s = drop_odd(&c).fail(n - 1, Fail::Http(status));
        cases.push(c.scripted(s));
    }
    let c = named("partial-failure-network", multi());
    let s = drop_odd(&c).fail(n - 1, Fail::Network);
    cases.push(c.scripted(s));
    let c = named("jev-response-bare", multi());
    let mut s = drop_odd(&c);
    for b in 0..n {
        let body = jev_body(&c, &s, b, 1000 + u64::from(b), false);
        s = s.jev(b, body);
    }
    let c = c.scripted(s);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));
    let c = named("jev-response-cloudflare", multi());
    let mut s = drop_odd(&c);
    let body = jev_body(&c, &s, 0, 1834, true);
    s = s.jev(0, body);
    cases.push(c.scripted(s));
    let c = named("jev-response-undecodable", multi());
    let s = drop_odd(&c).jev(0, "<html>502 Bad Gateway</html>".to_string());
    cases.push(c.scripted(s));
    let c = named("jev-response-cloudflare-failure", multi());
    let s = drop_odd(&c).jev(0, r#"{"success":false,"result":null,"errors":[{"code":7000,"message":"No route"}],"messages":[]}"#.to_string());
    cases.push(c.scripted(s));
    let c = named("jev-response-invalid-values", multi());
    let request = c.probe().expect("scores");
    let b0 = &request.batches[0].paragraphs;
    let body = format!(
        r#"{{"answers":{{"p{}":{{"type":"noul","noul":1.5}},"p{}":{{"type":"noul","noul":"0.01"}},"p{}":{{"type":"choice","noul":0.01}},"p{}":{{"type":"noul","noul":0.01}}}},"usage":{{"input_tokens":77}}}}"#,
        b0[0], b0[1], b0[2], b0[3]
    );
    let s = drop_odd(&c).jev(0, body);
    cases.push(c.scripted(s));
    let c = named("all-failed-mixed", multi());
    let s = Scripted::new(Some(0.0)).fail(0, Fail::Http(429)).fail(1, Fail::Network);
    let mut s = s;
    for b in 2..n {
        s = s.jev(b, "{}garbage".to_string());
    }
    cases.push(c.scripted(s));

    // --- markers, CRLF, CJK, emoji, BOM, fixed paragraphs (scripted).
    for (name, file, request, lang) in [
        ("crlf", "cases/crlf.md", REQUEST, Lang::En),
        ("crlf-lf-twin", "cases/crlf-lf-twin.md", REQUEST, Lang::En),
        ("crlf-ja", "cases/crlf.md", REQUEST_JA, Lang::Ja),
        ("cjk-above-min-ja", "cases/cjk-above-min.md", REQUEST_JA, Lang::Ja),
        ("cjk-above-min-en", "cases/cjk-above-min.md", REQUEST_JA, Lang::En),
        ("emoji", "cases/emoji.md", REQUEST, Lang::En),
        ("emoji-ja", "cases/emoji.md", REQUEST, Lang::Ja),
        ("bom", "cases/bom.md", REQUEST, Lang::En),
        ("huge-paragraph", "cases/huge-paragraph.md", REQUEST, Lang::En),
        ("table", "cases/table.md", REQUEST, Lang::En),
        ("brace-prose", "cases/brace-prose.md", REQUEST, Lang::En),
        ("ws-only-separators", "cases/ws-only-separators.md", REQUEST, Lang::En),
    ] {
        let c = Case::file(name, request, file).lang(lang);
        let s = drop_odd(&c);
        let c = c.scripted(s);
        let probes = omitted_probes(&c);
        cases.push(c.omitted(probes));
    }
    cases.push(Case::file("all-huge-no-call", REQUEST, "cases/all-huge.md").scripted(Scripted::new(Some(0.0))));
    cases.push(Case::file("single-long-line-no-call", REQUEST, "cases/single-long-line.txt").scripted(Scripted::new(Some(0.0))));

    // --- the JSON wrapper (SPEC §8), scripted.
    for (name, file, lang) in [
        ("wrapper-ascii-escaped", "cases/wrapper-ascii-escaped.json", Lang::En),
        ("wrapper-raw-utf8", "cases/wrapper-raw-utf8.json", Lang::En),
        ("wrapper-raw-utf8-ja", "cases/wrapper-raw-utf8.json", Lang::Ja),
    ] {
        let c = Case::file(name, REQUEST, file).lang(lang);
        if c.probe().is_none() {
            // Documented as possibly structured: keep the case, nothing to score.
            cases.push(c.scripted(Scripted::new(Some(0.0))));
            continue;
        }
        let s = drop_odd(&c);
        let c = c.scripted(s);
        let probes = omitted_probes(&c);
        cases.push(c.omitted(probes));
    }
    // --- JSON arrays, element by element (SPEC §13), scripted.
    for (name, lang) in [("array-top-level-scripted", Lang::En), ("array-top-level-scripted-ja", Lang::Ja)] {
        let c = Case::file(name, REQUEST, "cases/top-level-array.json").lang(lang);
        let s = drop_odd(&c);
        let c = c.scripted(s);
        let probes = omitted_probes(&c);
        cases.push(c.omitted(probes));
    }
    cases.push(Case::file("array-top-level-all-dropped", REQUEST, "cases/top-level-array.json").scripted(Scripted::new(Some(0.0))));
    let vue = manifest_request("vue-docs-partners.json");
    let c = Case::file("array-vue-partners-scripted", &vue, "corpus/vue-docs-partners.json");
    let s = keep_mentioning(&c, &["Europe", "Nuxt"]);
    let c = c.scripted(s);
    let mut probes = omitted_probes(&c);
    probes.push(args("P1", 0, 100));
    cases.push(c.omitted(probes));
    let list = format!("{{\n  \"items\": {},\n  \"total\": 120,\n  \"next\": null\n}}\n", posts_inline(0..20));
    for (name, lang) in [("array-in-object-scripted", Lang::En), ("array-in-object-scripted-ja", Lang::Ja)] {
        let c = Case::new(name, REQUEST, Input::Inline(list.clone())).lang(lang);
        // Runs at the start and at the end: 0–2 and 17–19 drop, and every 4th between.
        let s = Scripted::new(Some(0.9)).with([0, 1, 2, 5, 9, 13, 17, 18, 19], Some(0.05));
        let c = c.scripted(s);
        let probes = omitted_probes(&c);
        cases.push(c.omitted(probes));
    }
    let c = Case::new("array-all-but-one-scripted", REQUEST, Input::Inline(posts_inline(0..12)));
    let s = Scripted::new(Some(0.05)).with([7], Some(0.9));
    let c = c.scripted(s).omitted([args("P1", 0, 11), args("P1", 7, 7)]);
    cases.push(c);

    let pydantic = manifest_request("pydantic-validators.wrapper.json");
    let c = Case::file("pydantic-wrapper-scripted", &pydantic, "corpus/pydantic-validators.wrapper.json");
    let s = keep_mentioning(&c, &["model_validator", "ValidationInfo", "mode='after'", "info.data"]);
    let c = c.scripted(s);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));

    // --- the 121,429-character PEP, scripted: keep what mentions the
    // request's topics; one batch fails, one answers in a Cloudflare envelope.
    let pep_request = manifest_request("pep-0817-wheel-variants.rst");
    let c = Case::file("pep-0817-scripted", &pep_request, "corpus/pep-0817-wheel-variants.rst");
    let s = keep_mentioning(&c, &["filename", "null variant", "Null variant", "ecurity"]);
    let body = jev_body(&c, &s, 3, 4321, true);
    let s = s.fail(2, Fail::Http(503)).jev(3, body).with([0], None);
    let c = c.scripted(s);
    let mut probes = omitted_probes(&c);
    probes.push(args("P1", 0, 100_000));
    cases.push(c.omitted(probes));
    let c = Case::file("pep-0817-scripted-ja", &pep_request, "corpus/pep-0817-wheel-variants.rst").lang(Lang::Ja);
    let s = keep_mentioning(&c, &["filename", "null variant", "Null variant", "ecurity"]);
    let c = c.scripted(s).omitted([args("P1", 0, 100_000), args("P9", 0, 1), "[]".to_string()]);
    cases.push(c);

    // --- every corpus document with its manifest request, offline.
    for doc in manifest() {
        let file = doc["file"].as_str().expect("file");
        let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
        let request_en = doc["request_en"].as_str().expect("request_en");
        let c = Case::file(&format!("offline-{stem}"), request_en, &format!("corpus/{file}"));
        let probes = omitted_probes(&c);
        cases.push(c.omitted(probes));
        if let Some(request_ja) = doc["request_ja"].as_str() {
            let c = Case::file(&format!("offline-{stem}-ja"), request_ja, &format!("corpus/{file}")).lang(Lang::Ja);
            let probes = omitted_probes(&c);
            cases.push(c.omitted(probes));
        }
    }
    let c = Case::file("offline-mcp-spec-2025-11-25-transports-0.3", &manifest_request("mcp-spec-2025-11-25-transports.mdx"), "corpus/mcp-spec-2025-11-25-transports.mdx").threshold(0.3);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));
    let c = Case::file("offline-pep-0817-0.5-ja", &pep_request, "corpus/pep-0817-wheel-variants.rst").threshold(0.5).lang(Lang::Ja);
    let probes = omitted_probes(&c);
    cases.push(c.omitted(probes));

    // --- every edge case of shared/cases with its request, offline.
    for case in shared_cases() {
        let file = case["file"].as_str().expect("file");
        let request = case["request"].as_str().expect("request");
        let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
        let lang = if request.is_ascii() { Lang::En } else { Lang::Ja };
        cases.push(Case::file(&format!("offline-case-{stem}"), request, &format!("cases/{file}")).lang(lang));
    }

    let mut names = BTreeSet::new();
    for c in &cases {
        assert!(names.insert(c.name.clone()), "duplicate case name {}", c.name);
    }
    cases
}

/// A pretty JSON array of forum posts `range` (each about 480 characters).
fn posts_inline(range: std::ops::Range<usize>) -> String {
    let items: Vec<String> = range
        .map(|i| {
            let topic = if i % 3 == 0 { "the upload client's retry limit" } else { "gardening in a small balcony" };
            format!(
                "{{\"id\": {i}, \"author\": \"user{i}\", \"title\": \"post {i}\", \"body\": \"{}\"}}",
                format!("This post is about {topic}; it explains one more detail of {topic} in plain words. ").repeat(4)
            )
        })
        .collect();
    format!("[\n  {}\n]", items.join(",\n  "))
}

fn manifest() -> Vec<Value> {
    let v: Value = serde_json::from_str(&read_shared("corpus/manifest.json")).expect("manifest.json parses");
    v.as_array().expect("manifest.json is a list").clone()
}

fn manifest_request(file: &str) -> String {
    manifest()
        .into_iter()
        .find(|d| d["file"] == file)
        .and_then(|d| d["request_en"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("{file} is not in the manifest"))
}

fn shared_cases() -> Vec<Value> {
    let v: Value = serde_json::from_str(&read_shared("cases/cases.json")).expect("cases.json parses");
    v.as_array().expect("cases.json is a list").clone()
}

// ----- running a case and writing it out -----

#[derive(Serialize)]
struct Vector {
    name: String,
    request: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text_file: Option<String>,
    succeeded: bool,
    prunable: bool,
    enabled: bool,
    threshold: f64,
    lang: &'static str,
    agent: String,
    tool: String,
    scorer: ScorerOut,
    expect: Expect,
    omitted: Vec<OmittedCase>,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum ScorerOut {
    Offline,
    Scripted {
        default: Option<f64>,
        scores: BTreeMap<u32, Option<f64>>,
        fail_batches: BTreeMap<u32, Value>,
        jev_responses: BTreeMap<u32, String>,
        stop: Option<&'static str>,
        elapsed_ms: u32,
    },
}

#[derive(Serialize)]
struct Expect {
    outcome: &'static str,
    shape: Option<&'static str>,
    counts: CountsOut,
    ratio: Option<f64>,
    threshold: f64,
    log_line: Option<String>,
    body_chars: usize,
    body_sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    record: Option<RecordOut>,
    fates: String,
    failures: Vec<FailureOut>,
}

#[derive(Serialize)]
struct CountsOut {
    raw_chars: u32,
    kept_chars: u32,
    paragraphs: u32,
    dropped: u32,
    calls: u32,
    jev_tokens: u64,
    ms: u32,
}

#[derive(Serialize)]
struct RecordOut {
    id: String,
    dropped: Vec<u32>,
    text_chars: usize,
    text_sha256: String,
}

#[derive(Serialize)]
struct FailureOut {
    batch: u32,
    status: Option<u16>,
    class: String,
}

#[derive(Serialize)]
struct OmittedCase {
    arguments: String,
    lang: &'static str,
    expect: OmittedExpect,
}

#[derive(Serialize)]
struct OmittedExpect {
    outcome: &'static str,
    text: String,
    log_line: String,
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Ja => "ja",
        Lang::En => "en",
    }
}

fn fate_letter(fate: Fate) -> char {
    fate_name(fate).chars().next().expect("a name")
}

fn run(case: &Case) -> Vector {
    let scorer: Arc<dyn Scorer> = match &case.scorer {
        ScorerSpec::Offline => Arc::new(OfflineScorer),
        ScorerSpec::Scripted(s) => Arc::new(s.scorer()),
    };
    let log = Arc::new(CapturedLog::new());
    let mut turn = Turn::new(pruner(), scorer, case.options()).with_log(log.clone());
    let text = case.text();
    let pruned = turn.on_tool_result(case.tool_result());
    let report = pruned
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("{}: the guest gave no answer: {:?}", case.name, pruned.failure));
    assert_eq!(pruned.raw, text, "{}: raw", case.name);
    assert_eq!(log.lines(), report.log_line.iter().cloned().collect::<Vec<_>>(), "{}: log", case.name);
    let body_chars = pruned.body.chars().count();
    let c = &report.counts;
    let expect = Expect {
        outcome: outcome_name(report.outcome),
        shape: report.shape.map(shape_name),
        counts: CountsOut {
            raw_chars: c.raw_chars,
            kept_chars: c.kept_chars,
            paragraphs: c.paragraphs,
            dropped: c.dropped,
            calls: c.calls,
            jev_tokens: c.jev_tokens,
            ms: c.ms,
        },
        ratio: report.ratio,
        threshold: report.threshold,
        log_line: report.log_line.clone(),
        body_chars,
        body_sha256: sha256(&pruned.body),
        body: (body_chars < BODY_INLINE_MAX).then(|| pruned.body.clone()),
        record: report.record.as_ref().map(|r| RecordOut {
            id: r.id.clone(),
            dropped: r.dropped.clone(),
            text_chars: r.text.chars().count(),
            text_sha256: sha256(&r.text),
        }),
        fates: report.paragraphs.iter().map(|p| fate_letter(p.fate)).collect(),
        failures: report
            .failures
            .iter()
            .map(|f| FailureOut { batch: f.batch, status: f.status, class: f.class.clone() })
            .collect(),
    };
    // Offline cases also read back their first dropped paragraph.
    let mut asked = Vec::new();
    if let (ScorerSpec::Offline, Some(record)) = (&case.scorer, &report.record) {
        if let Some(&d) = record.dropped.first() {
            asked.push(args(&record.id, d, d));
        }
    }
    asked.extend(case.omitted.iter().cloned());
    let omitted = asked
        .iter()
        .map(|arguments| {
            let answer = turn
                .omitted(arguments)
                .unwrap_or_else(|e| panic!("{}: omitted({arguments}) trapped: {e}", case.name));
            OmittedCase {
                arguments: arguments.clone(),
                lang: lang_name(case.lang),
                expect: OmittedExpect {
                    outcome: omitted_outcome_name(answer.outcome),
                    text: answer.text,
                    log_line: answer.log_line,
                },
            }
        })
        .collect();
    let (text, text_file) = match &case.input {
        Input::Inline(text) => (Some(text.clone()), None),
        Input::File(relative) => (None, Some(relative.clone())),
    };
    Vector {
        name: case.name.clone(),
        request: case.request.clone(),
        text,
        text_file,
        succeeded: case.succeeded,
        prunable: case.prunable,
        enabled: case.enabled,
        threshold: case.threshold,
        lang: lang_name(case.lang),
        agent: case.agent.clone(),
        tool: case.tool.clone(),
        scorer: match &case.scorer {
            ScorerSpec::Offline => ScorerOut::Offline,
            ScorerSpec::Scripted(s) => ScorerOut::Scripted {
                default: s.default,
                scores: s.scores.clone(),
                fail_batches: s
                    .fail_batches
                    .iter()
                    .map(|(&b, f)| {
                        let v = match f {
                            Fail::Http(status) => serde_json::json!({ "http": status }),
                            Fail::Network => Value::String("network".to_string()),
                        };
                        (b, v)
                    })
                    .collect(),
                jev_responses: s.jev_responses.clone(),
                stop: s.stop.map(|stop| match stop {
                    ScoringStop::Timeout => "timeout",
                    ScoringStop::Cancelled => "cancelled",
                }),
                elapsed_ms: s.elapsed_ms,
            },
        },
        expect,
        omitted,
    }
}

/// Every vector, as the text of `vectors.json` (pretty JSON, trailing newline).
pub fn generate() -> String {
    let vectors: Vec<Vector> = cases().iter().map(run).collect();
    let mut out = serde_json::to_string_pretty(&vectors).expect("vectors serialize");
    out.push('\n');
    out
}

#[allow(dead_code)]
fn main() {
    let check = std::env::args().any(|a| a == "--check");
    let fresh = generate();
    let path = vectors_path();
    if check {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != fresh {
            eprintln!("{} is stale: run `cargo run -p toolprune --example make_vectors`", path.display());
            std::process::exit(1);
        }
        eprintln!("{} is up to date", path.display());
        return;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("creating tests/vectors");
    }
    std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    let count = fresh.matches("\n    \"name\": ").count();
    eprintln!("wrote {} ({count} cases, {} bytes)", path.display(), fresh.len());
}
