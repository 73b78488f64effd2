//! `toolprune eval`: how much a scorer drops and how much of what matters it
//! keeps, on a corpus folder (issue 4, part 2).
//!
//! Every document of `DIR/manifest.json` (entries with `file` and
//! `request_en` / `request_ja`) goes through the real pruning path: a fresh
//! [`Turn`] per document, pruning enabled, the tool prunable, the given
//! scorer. Per document: the outcome, the net reduction (the guest's SPEC §7
//! ratio when the outcome is `ok`, else 0 — the model gets the raw text),
//! paragraphs dropped (when `ok`), scorer calls, the log line's `ms`, and the
//! wall time of the call.
//!
//! With labels (`labels.json`: per file, `needed` snippets tagged with a
//! `topic`, and `distractors`; a manifest entry with `derived_from` and no
//! labels of its own uses its source's), **recall** is the share of needed
//! snippets present in the body the model would receive, overall and per
//! topic, and the share of distractors that body no longer holds. A snippet is
//! present when it occurs in the body or — when the body parses as JSON — in
//! one of its decoded strings (keys and values), so a wrapper's content
//! counts with its escapes undone ([`Haystack`]).
//!
//! Totals: the mean reduction over documents, the character-weighted
//! reduction (Σ net dropped characters / Σ raw characters, the guest's
//! counts), recall over all needed snippets pooled (and per topic), and
//! distractors removed pooled. The arithmetic is pure ([`Tally`],
//! [`LabelScore`], [`totals`]); [`run`] does the pruning and [`render_table`]
//! the people-readable form.
//!
//! **Oracle** (labelled documents): the same document through the same path
//! with [`OracleScorer`], which answers 1.0 for a paragraph holding a needed
//! snippet and 0.0 for every other — so the body keeps exactly those
//! paragraphs, with the same splitting, markers counted and the 25 % floor
//! applied. Its net reduction is printed beside the scorer's, per document
//! and in total: the distance between a scorer and what it could save.
//!
//! The eval is a tool, not the host's hot path: it searches the bodies for
//! snippets, but every count of characters comes from the guest's report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize, Serializer};

use toolprune::types::{wit_name, BatchAnswer, Lang, Outcome, ScoringRequest};
use toolprune::{ConversationOptions, Pruner, Scorer, Scoring, ScoringContext, ToolResult};

// ---------------------------------------------------------------- inputs --

/// One `manifest.json` entry (other fields are ignored).
#[derive(Clone, Debug, Deserialize)]
pub struct ManifestEntry {
    /// File name inside the corpus folder.
    pub file: String,
    #[serde(default)]
    pub request_en: Option<String>,
    #[serde(default)]
    pub request_ja: Option<String>,
    /// The file this one was derived from (e.g. an LF copy of a CRLF file);
    /// its labels apply when the file has none of its own.
    #[serde(default)]
    pub derived_from: Option<String>,
}

/// One needed snippet and the request's sub-topic it answers.
#[derive(Clone, Debug, Deserialize)]
pub struct Needed {
    pub snippet: String,
    /// `1`, `2`, … (a number or a string in the file).
    #[serde(default, deserialize_with = "topic_name")]
    pub topic: String,
}

/// The labels of one file (`labels.json` is a list of these).
#[derive(Clone, Debug, Deserialize)]
pub struct Labels {
    pub file: String,
    #[serde(default)]
    pub needed: Vec<Needed>,
    #[serde(default)]
    pub distractors: Vec<String>,
}

fn topic_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// Reads `manifest.json` of a corpus folder.
pub fn read_manifest(dir: &Path) -> Result<Vec<ManifestEntry>> {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a manifest", path.display()))
}

/// Reads a `labels.json`, keyed by file.
pub fn read_labels(path: &Path) -> Result<BTreeMap<String, Labels>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let list: Vec<Labels> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a labels file", path.display()))?;
    Ok(list.into_iter().map(|l| (l.file.clone(), l)).collect())
}

/// The labels of `entry`: its own, else those of the file it derives from.
pub fn labels_for<'l>(
    labels: &'l BTreeMap<String, Labels>,
    entry: &ManifestEntry,
) -> Option<&'l Labels> {
    labels.get(&entry.file).or_else(|| {
        entry
            .derived_from
            .as_ref()
            .and_then(|source| labels.get(source))
    })
}

// ------------------------------------------------------------ arithmetic --

/// `count` of `total` (needed snippets present, distractors removed).
/// Serialized as `{count, total, share}`; `share` is null when `total` is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: usize,
    pub total: usize,
}

impl Tally {
    /// One item, counted or not.
    pub fn one(counted: bool) -> Tally {
        Tally {
            count: usize::from(counted),
            total: 1,
        }
    }

    /// `count / total`, none when there is nothing to count.
    pub fn share(&self) -> Option<f64> {
        (self.total > 0).then(|| self.count as f64 / self.total as f64)
    }

    /// Pools two tallies (counts and totals add up).
    pub fn add(&mut self, other: Tally) {
        self.count += other.count;
        self.total += other.total;
    }
}

impl Serialize for Tally {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Tally", 3)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("total", &self.total)?;
        st.serialize_field("share", &self.share())?;
        st.end()
    }
}

/// Where snippets are looked for: the body, and when it parses as JSON
/// every decoded string in it (object keys and values, at any depth).
#[derive(Clone, Debug)]
pub struct Haystack<'b> {
    body: &'b str,
    strings: Vec<String>,
}

impl<'b> Haystack<'b> {
    pub fn new(body: &'b str) -> Self {
        let mut strings = Vec::new();
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
            collect_strings(value, &mut strings);
        }
        Haystack { body, strings }
    }

    /// The snippet occurs in the body or in one decoded JSON string.
    pub fn contains(&self, snippet: &str) -> bool {
        self.body.contains(snippet) || self.strings.iter().any(|s| s.contains(snippet))
    }
}

fn collect_strings(value: serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(items) => {
            for item in items {
                collect_strings(item, out);
            }
        }
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                out.push(key);
                collect_strings(item, out);
            }
        }
        _ => {}
    }
}

/// Recall and distractors of one body against one file's labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LabelScore {
    /// Needed snippets present in the body.
    pub recall: Tally,
    /// The same, per topic (topic name → tally).
    pub topics: BTreeMap<String, Tally>,
    /// Distractors **absent** from the body.
    pub distractors_removed: Tally,
    /// The needed snippets that are not in the body, in label order.
    pub missed: Vec<String>,
}

impl LabelScore {
    /// Pools another document's score into this one.
    pub fn add(&mut self, other: &LabelScore) {
        self.recall.add(other.recall);
        for (topic, tally) in &other.topics {
            self.topics.entry(topic.clone()).or_default().add(*tally);
        }
        self.distractors_removed.add(other.distractors_removed);
        self.missed.extend(other.missed.iter().cloned());
    }

    /// The topics in display order (numbers by value, then the rest).
    pub fn topics_sorted(&self) -> Vec<(&str, Tally)> {
        let mut topics: Vec<(&str, Tally)> =
            self.topics.iter().map(|(t, v)| (t.as_str(), *v)).collect();
        topics.sort_by_key(|(t, _)| (t.len(), *t));
        topics
    }
}

/// Scores `body` (what the model would receive) against `labels`.
pub fn score_labels(body: &str, labels: &Labels) -> LabelScore {
    let hay = Haystack::new(body);
    let mut score = LabelScore::default();
    for needed in &labels.needed {
        let found = hay.contains(&needed.snippet);
        if !found {
            score.missed.push(needed.snippet.clone());
        }
        let present = Tally::one(found);
        score.recall.add(present);
        score
            .topics
            .entry(needed.topic.clone())
            .or_default()
            .add(present);
    }
    for distractor in &labels.distractors {
        score
            .distractors_removed
            .add(Tally::one(!hay.contains(distractor)));
    }
    score
}

/// The oracle: a scorer that knows the labels. A chunk holding a needed
/// snippet (in its text or, as [`Haystack`], in one of its decoded JSON
/// strings) scores 1.0, every other chunk 0.0: at any threshold the guest
/// keeps exactly the paragraphs that hold a needed snippet. `name()` is
/// `"oracle"`; never fails, makes no network call.
#[derive(Clone, Debug)]
pub struct OracleScorer {
    needed: Vec<String>,
}

impl OracleScorer {
    /// The oracle for one file's labels.
    pub fn new(labels: &Labels) -> Self {
        OracleScorer { needed: labels.needed.iter().map(|n| n.snippet.clone()).collect() }
    }

    /// 1.0 when `chunk` holds a needed snippet, else 0.0.
    pub fn score_chunk(&self, chunk: &str) -> f64 {
        let hay = Haystack::new(chunk);
        if self.needed.iter().any(|s| hay.contains(s)) {
            1.0
        } else {
            0.0
        }
    }

    /// One `scores` answer per batch of `request`.
    pub fn answers(&self, request: &ScoringRequest) -> Vec<BatchAnswer> {
        request
            .batches
            .iter()
            .map(|batch| BatchAnswer::Scores(batch.chunks.iter().map(|chunk| Some(self.score_chunk(chunk))).collect()))
            .collect()
    }
}

impl Scorer for OracleScorer {
    fn name(&self) -> &str {
        "oracle"
    }

    fn score(&self, request: &ScoringRequest, _context: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        Ok(self.answers(request))
    }
}

/// SPEC §7: the net reduction the model sees — the guest's ratio when the
/// outcome is `ok`, else 0 (the raw text went through).
pub fn net_reduction(outcome: Outcome, ratio: Option<f64>) -> f64 {
    match outcome {
        Outcome::Ok => ratio.unwrap_or(0.0),
        _ => 0.0,
    }
}

/// One document's result.
#[derive(Clone, Debug, Serialize)]
pub struct DocResult {
    pub file: String,
    /// SPEC §7 name (`ok`, `below_floor`, …).
    pub outcome: String,
    /// Net reduction: the guest's ratio when `ok`, else 0.
    pub reduction: f64,
    /// The guest's `raw_chars`.
    pub raw_chars: u64,
    /// Net characters saved (`raw_chars − kept_chars`, markers included)
    /// when `ok`, else 0.
    pub saved_chars: u64,
    /// Paragraphs the guest split the text into.
    pub paragraphs: u32,
    /// Paragraphs dropped from the body; none unless `ok`.
    pub dropped: Option<u32>,
    /// Scorer calls that answered (0 for the offline scorer).
    pub calls: u32,
    /// The log line's `ms` (scoring time measured by the host); none when
    /// no host scorer answered (the offline scorer).
    pub ms: Option<u32>,
    /// Wall time of the whole pruning call, instance creation included.
    pub wall_ms: u64,
    /// The threshold the guest applied (after the SPEC §6 fallback).
    pub threshold: Option<f64>,
    /// Recall and distractors; none when the file has no labels.
    pub labels: Option<LabelScore>,
    /// The same document pruned by [`OracleScorer`]; none without labels.
    pub oracle: Option<OracleResult>,
}

/// One document pruned by the oracle (the paragraphs holding a needed
/// snippet kept, the others dropped), counted like the scorer's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OracleResult {
    /// SPEC §7 name: `ok`, or e.g. `below_floor` when even the oracle saves
    /// less than 25 %, `nothing_dropped` when every paragraph is needed.
    pub outcome: String,
    /// Net reduction: the guest's ratio when `ok`, else 0.
    pub reduction: f64,
    /// Net characters saved when `ok`, else 0.
    pub saved_chars: u64,
}

/// The oracle's totals over the labelled documents.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OracleTotals {
    /// Labelled documents (the oracle ran on each).
    pub documents: usize,
    /// Documents whose oracle outcome was `ok`.
    pub ok: usize,
    /// Mean of the oracle's per-document net reductions.
    pub mean_reduction: f64,
    /// Σ oracle-saved characters / Σ raw characters of those documents.
    pub weighted_reduction: f64,
}

/// A manifest entry that was not evaluated, and why (`missing file`,
/// `no request_ja`, `not UTF-8`).
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub file: String,
    pub reason: &'static str,
}

/// The totals over the evaluated documents.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub documents: usize,
    /// Documents whose outcome was `ok` (the model got the pruned body).
    pub ok: usize,
    /// Mean of the per-document net reductions (0 when nothing evaluated).
    pub mean_reduction: f64,
    /// Σ saved characters / Σ raw characters.
    pub weighted_reduction: f64,
    pub raw_chars: u64,
    pub saved_chars: u64,
    /// Documents with labels.
    pub labelled: usize,
    /// Every labelled document's snippets pooled.
    pub labels: LabelScore,
    /// The oracle over the labelled documents; none when there are none.
    pub oracle: Option<OracleTotals>,
}

/// Totals of `docs` (pure arithmetic).
pub fn totals(docs: &[DocResult]) -> Totals {
    let mut t = Totals {
        documents: docs.len(),
        ..Totals::default()
    };
    let mut sum = 0.0;
    let mut oracle = OracleTotals::default();
    let (mut oracle_sum, mut oracle_raw, mut oracle_saved) = (0.0, 0u64, 0u64);
    for doc in docs {
        if let Some(o) = &doc.oracle {
            oracle.documents += 1;
            oracle.ok += usize::from(o.outcome == "ok");
            oracle_sum += o.reduction;
            oracle_raw += doc.raw_chars;
            oracle_saved += o.saved_chars;
        }
        sum += doc.reduction;
        t.raw_chars += doc.raw_chars;
        t.saved_chars += doc.saved_chars;
        t.ok += usize::from(doc.outcome == "ok");
        if let Some(score) = &doc.labels {
            t.labelled += 1;
            t.labels.add(score);
        }
    }
    if !docs.is_empty() {
        t.mean_reduction = sum / docs.len() as f64;
    }
    if t.raw_chars > 0 {
        t.weighted_reduction = t.saved_chars as f64 / t.raw_chars as f64;
    }
    if oracle.documents > 0 {
        oracle.mean_reduction = oracle_sum / oracle.documents as f64;
        if oracle_raw > 0 {
            oracle.weighted_reduction = oracle_saved as f64 / oracle_raw as f64;
        }
        t.oracle = Some(oracle);
    }
    t
}

// ------------------------------------------------------------------- run --

/// What to evaluate.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// The corpus folder (holds `manifest.json`).
    pub corpus: PathBuf,
    /// Labels file; none = `corpus/labels.json` when it exists.
    pub labels: Option<PathBuf>,
    /// 0.1 / 0.2 / 0.3 / 0.5 as written (checked by the guest: another
    /// value is an error); none: the guest's default.
    pub threshold: Option<String>,
    /// Which request (`request_en` / `request_ja`) and the markers' language.
    pub lang: Lang,
}

/// The whole evaluation.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub corpus: String,
    /// The labels file used, if any.
    pub labels: Option<String>,
    pub scorer: String,
    /// The threshold the guest applied (the requested one if nothing ran).
    pub threshold: f64,
    pub lang: &'static str,
    pub documents: Vec<DocResult>,
    pub skipped: Vec<Skipped>,
    pub totals: Totals,
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "en",
        Lang::Ja => "ja",
    }
}

/// Runs every document of the corpus through `pruner` with `scorer`.
/// Errors: the manifest or an explicitly named labels file cannot be read.
/// A listed file that is missing or not UTF-8 is skipped, not an error.
pub fn run(pruner: &Pruner, scoring: Scoring, options: &EvalOptions) -> Result<Report> {
    let requested = match &options.threshold {
        Some(value) => pruner.threshold(value).map_err(|m| anyhow::anyhow!("--threshold: {m}"))?,
        None => pruner.resolve(&[], None).map_err(anyhow::Error::msg)?.threshold,
    };
    let manifest = read_manifest(&options.corpus)?;
    if manifest.is_empty() {
        bail!(
            "{} lists no documents",
            options.corpus.join("manifest.json").display()
        );
    }
    let labels_path = match &options.labels {
        Some(path) => Some(path.clone()),
        None => Some(options.corpus.join("labels.json")).filter(|p| p.is_file()),
    };
    let labels = match &labels_path {
        Some(path) => read_labels(path)?,
        None => BTreeMap::new(),
    };
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    for entry in &manifest {
        let request = match options.lang {
            Lang::En => &entry.request_en,
            Lang::Ja => &entry.request_ja,
        };
        let Some(request) = request.clone() else {
            let reason = match options.lang {
                Lang::En => "no request_en",
                Lang::Ja => "no request_ja",
            };
            skipped.push(Skipped {
                file: entry.file.clone(),
                reason,
            });
            continue;
        };
        let bytes = match std::fs::read(options.corpus.join(&entry.file)) {
            Ok(bytes) => bytes,
            Err(_) => {
                skipped.push(Skipped {
                    file: entry.file.clone(),
                    reason: "missing file",
                });
                continue;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            skipped.push(Skipped {
                file: entry.file.clone(),
                reason: "not UTF-8",
            });
            continue;
        };
        documents.push(prune_one(
            pruner, &scoring, options, entry, request, text, &labels,
        ));
    }
    let threshold = documents
        .iter()
        .find_map(|d| d.threshold)
        .unwrap_or(requested);
    Ok(Report {
        corpus: options.corpus.display().to_string(),
        labels: labels_path.map(|p| p.display().to_string()),
        scorer: scoring.name().to_string(),
        threshold,
        lang: lang_name(options.lang),
        totals: totals(&documents),
        documents,
        skipped,
    })
}

fn prune_one(
    pruner: &Pruner,
    scoring: &Scoring,
    options: &EvalOptions,
    entry: &ManifestEntry,
    request: String,
    text: String,
    labels: &BTreeMap<String, Labels>,
) -> DocResult {
    let prune = |scoring: Scoring, text: &str| {
        let conversation = pruner.conversation(ConversationOptions {
            enabled: true,
            threshold: options.threshold.clone(),
            lang: options.lang,
            agent: "eval".to_string(),
            scoring: Some(scoring),
            log: Arc::new(|_: &str| {}),
            ..ConversationOptions::default()
        });
        match conversation {
            Ok(conversation) => conversation.turn(request.clone()).on_tool_result(ToolResult::prunable("eval", text)),
            Err(e) => unreachable!("the threshold was checked in run: {e}"),
        }
    };
    let labels = labels_for(labels, entry);
    let oracle = labels.map(|l| {
        let pruned = prune(Scoring::Host(Arc::new(OracleScorer::new(l))), &text);
        let ok = pruned.outcome == Outcome::Ok;
        OracleResult {
            outcome: wit_name(&pruned.outcome),
            reduction: net_reduction(pruned.outcome, pruned.ratio),
            saved_chars: match pruned.counts.as_ref() {
                Some(c) if ok => u64::from(c.raw_chars).saturating_sub(u64::from(c.kept_chars)),
                _ => 0,
            },
        }
    });
    let start = Instant::now();
    let pruned = prune(scoring.clone(), &text);
    let wall_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let ok = pruned.outcome == Outcome::Ok;
    let counts = pruned.counts.as_ref();
    let raw_chars = counts.map_or(0, |c| u64::from(c.raw_chars));
    let kept_chars = counts.map_or(0, |c| u64::from(c.kept_chars));
    DocResult {
        file: entry.file.clone(),
        outcome: wit_name(&pruned.outcome),
        reduction: net_reduction(pruned.outcome, pruned.ratio),
        raw_chars,
        saved_chars: if ok {
            raw_chars.saturating_sub(kept_chars)
        } else {
            0
        },
        paragraphs: counts.and_then(|c| c.paragraphs).unwrap_or(0),
        dropped: if ok { counts.map(|c| c.dropped) } else { None },
        calls: counts.map_or(0, |c| c.calls),
        ms: counts.and_then(|c| c.ms),
        wall_ms,
        threshold: pruned.threshold,
        labels: labels.map(|l| score_labels(&pruned.body, l)),
        oracle,
    }
}

// ---------------------------------------------------------------- render --

fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "-".to_string(), |s| format!("{:.1}%", s * 100.0))
}

/// The readable form: a header line, one aligned row per document, the
/// skipped entries, and the `total` line.
pub fn render_table(report: &Report) -> String {
    let topics: Vec<String> = report
        .totals
        .labels
        .topics_sorted()
        .into_iter()
        .map(|(t, _)| t.to_string())
        .collect();
    let mut header = vec![
        "file".to_string(),
        "outcome".to_string(),
        "net".to_string(),
        "oracle".to_string(),
        "dropped".to_string(),
        "calls".to_string(),
        "ms".to_string(),
        "wall ms".to_string(),
        "recall".to_string(),
    ];
    header.extend(topics.iter().map(|t| format!("topic {t}")));
    header.push("distractors removed".to_string());
    let mut rows = vec![header];
    for doc in &report.documents {
        let mut row = vec![
            doc.file.clone(),
            doc.outcome.to_string(),
            percent(Some(doc.reduction)),
            percent(doc.oracle.as_ref().map(|o| o.reduction)),
            doc.dropped
                .map_or_else(|| "-".to_string(), |d| format!("{d}/{}", doc.paragraphs)),
            doc.calls.to_string(),
            doc.ms.map_or_else(|| "-".to_string(), |ms| ms.to_string()),
            doc.wall_ms.to_string(),
        ];
        match &doc.labels {
            Some(score) => {
                row.push(tally_cell(score.recall));
                for t in &topics {
                    row.push(
                        score
                            .topics
                            .get(t)
                            .map_or("-".to_string(), |v| tally_cell(*v)),
                    );
                }
                row.push(tally_cell(score.distractors_removed));
            }
            None => row.extend(std::iter::repeat_n("-".to_string(), topics.len() + 2)),
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let t = &report.totals;
    let mut out = format!(
        "toolprune eval: corpus {}  labels {}  scorer {}  threshold {}  lang {}\n",
        report.corpus,
        report.labels.as_deref().unwrap_or("none"),
        report.scorer,
        report.threshold,
        report.lang
    );
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                let pad = w - cell.chars().count();
                if i < 2 {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{cell}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let mut reasons: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in &report.skipped {
        reasons.entry(s.reason).or_default().push(&s.file);
    }
    for (reason, files) in reasons {
        out.push_str(&format!("skipped ({reason}): {}\n", files.join(", ")));
    }
    out.push_str(&format!(
        "total: {} documents ({} ok)  net reduction mean {} char-weighted {} ({}/{} chars)",
        t.documents,
        t.ok,
        percent(Some(t.mean_reduction)),
        percent(Some(t.weighted_reduction)),
        t.saved_chars,
        t.raw_chars
    ));
    if let Some(o) = &t.oracle {
        out.push_str(&format!(
            "  oracle mean {} char-weighted {} ({} ok)",
            percent(Some(o.mean_reduction)),
            percent(Some(o.weighted_reduction)),
            o.ok
        ));
    }
    if t.labelled > 0 {
        let per_topic: Vec<String> = t
            .labels
            .topics_sorted()
            .into_iter()
            .map(|(name, v)| format!("topic {name} {}", tally_cell(v)))
            .collect();
        out.push_str(&format!(
            "  recall {} ({})  distractors removed {}",
            tally_cell(t.labels.recall),
            per_topic.join(", "),
            tally_cell(t.labels.distractors_removed)
        ));
    }
    out.push('\n');
    out
}

fn tally_cell(t: Tally) -> String {
    format!("{} {}/{}", percent(t.share()), t.count, t.total)
}

// ------------------------------------------------------------------- CLI --

/// `toolprune eval` arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct EvalArgs {
    /// The corpus folder: `manifest.json` and the files it lists.
    #[arg(long)]
    pub corpus: PathBuf,
    /// Labels (needed snippets by topic, distractors); default
    /// `CORPUS/labels.json` when present.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// `offline` (the guest's BM25 scorer) or `stub` (word overlap, for tests).
    #[arg(long, value_enum, default_value_t = EvalScorer::Offline)]
    pub scorer: EvalScorer,
    /// 0.1, 0.2, 0.3 or 0.5 (another value is refused with the guest's
    /// message). Default: the guest's.
    #[arg(long, allow_hyphen_values = true)]
    pub threshold: Option<String>,
    /// `en` uses `request_en`; `ja` uses `request_ja` and skips documents
    /// without one.
    #[arg(long, value_enum, default_value_t = EvalLang::En)]
    pub lang: EvalLang,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The scorers `eval` can run.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum EvalScorer {
    /// The guest's offline BM25 scorer.
    Offline,
    /// Word overlap with the request: a stub for tests, not a relevance model.
    Stub,
}

/// Request languages.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum EvalLang {
    En,
    Ja,
}

/// Runs `toolprune eval`: the text to print, or a one-line error.
pub fn cli(args: EvalArgs) -> Result<String, String> {
    let pruner = Pruner::shared().map_err(|e| format!("cannot load the component: {e:#}"))?;
    let scoring = match args.scorer {
        EvalScorer::Offline => Scoring::Offline,
        EvalScorer::Stub => Scoring::Stub,
    };
    let options = EvalOptions {
        corpus: args.corpus,
        labels: args.labels,
        threshold: args.threshold,
        lang: match args.lang {
            EvalLang::En => Lang::En,
            EvalLang::Ja => Lang::Ja,
        },
    };
    let report = run(pruner, scoring, &options).map_err(|e| format!("{e:#}"))?;
    if args.json {
        let mut out = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        out.push('\n');
        Ok(out)
    } else {
        Ok(render_table(&report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(needed: &[(&str, &str)], distractors: &[&str]) -> Labels {
        Labels {
            file: "f".into(),
            needed: needed
                .iter()
                .map(|(s, t)| Needed {
                    snippet: s.to_string(),
                    topic: t.to_string(),
                })
                .collect(),
            distractors: distractors.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn doc(
        outcome: &str,
        reduction: f64,
        raw: u64,
        saved: u64,
        l: Option<LabelScore>,
    ) -> DocResult {
        DocResult {
            file: "f".into(),
            outcome: outcome.to_string(),
            reduction,
            raw_chars: raw,
            saved_chars: saved,
            paragraphs: 10,
            dropped: None,
            calls: 0,
            ms: None,
            wall_ms: 0,
            threshold: Some(0.2),
            labels: l,
            oracle: None,
        }
    }

    #[test]
    fn recall_counts_needed_snippets_per_topic_and_removed_distractors() {
        let l = labels(
            &[
                ("alpha", "1"),
                ("beta", "1"),
                ("gamma", "2"),
                ("delta", "10"),
            ],
            &["noise one", "noise two"],
        );
        let s = score_labels("alpha … gamma … noise two", &l);
        assert_eq!(s.recall, Tally { count: 2, total: 4 });
        assert_eq!(s.recall.share(), Some(0.5));
        assert_eq!(s.topics["1"], Tally { count: 1, total: 2 });
        assert_eq!(s.topics["2"], Tally { count: 1, total: 1 });
        assert_eq!(s.topics["10"], Tally { count: 0, total: 1 });
        assert_eq!(s.distractors_removed, Tally { count: 1, total: 2 });
        assert_eq!(s.missed, ["beta", "delta"]);
        let order: Vec<&str> = s.topics_sorted().into_iter().map(|(t, _)| t).collect();
        assert_eq!(order, ["1", "2", "10"]);
        assert_eq!(Tally::default().share(), None);
    }

    #[test]
    fn json_bodies_are_searched_in_their_decoded_strings_too() {
        let body =
            r#"{"path": "a.md", "content": "line one\nline \"two\"", "nested": [{"k": "ünï"}]}"#;
        let hay = Haystack::new(body);
        assert!(hay.contains("line one\nline \"two\""), "decoded value");
        assert!(hay.contains("\"path\": \"a.md\""), "raw body");
        assert!(
            hay.contains("ünï") && hay.contains("nested"),
            "nested value and key"
        );
        assert!(!hay.contains("line three"));
        // Not JSON: the body only.
        let plain = Haystack::new("line one\\nline");
        assert!(!plain.contains("line one\nline"));
    }

    #[test]
    fn totals_pool_snippets_and_weight_reduction_by_characters() {
        let a = score_labels(
            "alpha gamma",
            &labels(&[("alpha", "1"), ("gamma", "2"), ("x", "2")], &["d"]),
        );
        let b = score_labels("d alpha2", &labels(&[("alpha2", "1")], &["d", "e"]));
        let docs = [
            doc("ok", 0.5, 1000, 500, Some(a)),
            doc("below_floor", 0.0, 3000, 0, Some(b)),
            doc("structured", 0.0, 1000, 0, None),
        ];
        let t = totals(&docs);
        assert_eq!(t.documents, 3);
        assert_eq!(t.ok, 1);
        assert_eq!(t.labelled, 2);
        assert!((t.mean_reduction - 0.5 / 3.0).abs() < 1e-12);
        assert_eq!(t.weighted_reduction, 500.0 / 5000.0);
        assert_eq!(t.labels.recall, Tally { count: 3, total: 4 });
        assert_eq!(t.labels.topics["1"], Tally { count: 2, total: 2 });
        assert_eq!(t.labels.topics["2"], Tally { count: 1, total: 2 });
        assert_eq!(t.labels.distractors_removed, Tally { count: 2, total: 3 });
        assert_eq!(t.labels.missed, ["x"]);
        assert_eq!(totals(&[]), Totals::default());
    }

    #[test]
    fn the_oracle_scores_one_exactly_for_chunks_holding_a_needed_snippet() {
        let oracle = OracleScorer::new(&labels(&[("resume the \"stream\"", "1"), ("version", "2")], &["noise"]));
        assert_eq!(oracle.score_chunk("How to resume the \"stream\" here."), 1.0);
        // Escaped in a JSON chunk (an array element): found decoded.
        assert_eq!(oracle.score_chunk(r#"{"body": "resume the \"stream\""}"#), 1.0);
        assert_eq!(oracle.score_chunk("the version header"), 1.0);
        assert_eq!(oracle.score_chunk("noise only, resume the stream"), 0.0);
        let request = ScoringRequest {
            basis: "b".into(),
            batches: vec![toolprune::types::Batch {
                paragraphs: vec![0, 1],
                chunks: vec!["no".into(), "a version".into()],
                jev_body: String::new(),
            }],
            policy: toolprune::types::TransportPolicy { max_in_flight: 1, deadline_ms: 1 },
        };
        match oracle.answers(&request).as_slice() {
            [BatchAnswer::Scores(scores)] => assert_eq!(scores, &[Some(0.0), Some(1.0)]),
            _ => panic!("one batch of scores expected"),
        }
        assert_eq!(oracle.name(), "oracle");
    }

    #[test]
    fn oracle_totals_pool_the_labelled_documents_only() {
        let oracle = |reduction: f64, saved: u64| {
            Some(OracleResult {
                outcome: if reduction > 0.0 { "ok" } else { "below_floor" }.to_string(),
                reduction,
                saved_chars: saved,
            })
        };
        let mut a = doc("ok", 0.3, 1000, 300, Some(LabelScore::default()));
        a.oracle = oracle(0.8, 800);
        let mut b = doc("below_floor", 0.0, 3000, 0, Some(LabelScore::default()));
        b.oracle = oracle(0.0, 0);
        let c = doc("ok", 0.5, 4000, 2000, None);
        let t = totals(&[a, b, c]);
        let o = t.oracle.expect("oracle totals");
        assert_eq!((o.documents, o.ok), (2, 1));
        assert_eq!(o.mean_reduction, 0.4);
        assert_eq!(o.weighted_reduction, 800.0 / 4000.0);
        assert_eq!(totals(&[doc("ok", 0.5, 10, 5, None)]).oracle, None);
    }

    #[test]
    fn only_an_ok_outcome_counts_as_a_reduction() {
        assert_eq!(net_reduction(Outcome::Ok, Some(0.4)), 0.4);
        assert_eq!(net_reduction(Outcome::BelowFloor, Some(0.2)), 0.0);
        assert_eq!(net_reduction(Outcome::Structured, None), 0.0);
    }

    #[test]
    fn a_derived_file_uses_its_sources_labels_unless_it_has_its_own() {
        let mut all = BTreeMap::new();
        all.insert(
            "a.crlf.md".to_string(),
            Labels {
                file: "a.crlf.md".into(),
                ..labels(&[], &[])
            },
        );
        let entry = |file: &str, from: Option<&str>| ManifestEntry {
            file: file.into(),
            request_en: None,
            request_ja: None,
            derived_from: from.map(str::to_string),
        };
        assert_eq!(
            labels_for(&all, &entry("a.lf.md", Some("a.crlf.md"))).map(|l| l.file.as_str()),
            Some("a.crlf.md")
        );
        assert!(labels_for(&all, &entry("a.lf.md", None)).is_none());
        let topics: Vec<Needed> = serde_json::from_str(
            r#"[{"snippet":"s","topic":1},{"snippet":"t","topic":"b"},{"snippet":"u"}]"#,
        )
        .unwrap();
        let names: Vec<&str> = topics.iter().map(|n| n.topic.as_str()).collect();
        assert_eq!(names, ["1", "b", ""]);
    }
}
