//! Scorers: what the host does when the guest calls the `scorer` import
//! (SPEC §5, §14). One call per tool result, carrying every batch.
//!
//! The Jev scorer (HTTP POST of each `jev-body`, the secret added as a
//! header, up to `policy.max-in-flight` in flight, `policy.deadline-ms`,
//! retries on `policy.retry-on`) is [`crate::jev::JevScorer`]; the scorers
//! here make no network call at all.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::types::{BatchAnswer, Failure, ScorerChoice, ScoringRequest, ScoringResponse, ScoringStop};

/// Answers the guest's scoring requests.
///
/// Implementations must not panic: a panic unwinds through wasmtime into the
/// host. A scorer that cannot score answers `failed(…)` per batch, or stops
/// with `timeout` / `cancelled` (SPEC §11).
pub trait Scorer: Send + Sync {
    /// A short label for reports (`--json`'s `scorer`), e.g. `stub`.
    fn name(&self) -> &str;

    /// Scores every batch of `request` and reports one answer per batch, in
    /// order, or a stop. The scorer measures `elapsed-ms` itself (wall time
    /// of the whole call, in ms): it is the log line's `ms=`.
    fn score(&self, request: &ScoringRequest) -> ScoringResponse;

    /// What the guest is told: the imported scorer under [`Scorer::name`]
    /// (the default), or the guest's own offline scorer.
    fn choice(&self) -> ScorerChoice {
        ScorerChoice::Host(self.name().to_string())
    }
}

/// The guest's offline lexical scorer (BM25 over the document's own
/// paragraphs, compiled into the component): the guest never calls the
/// `scorer` import, nothing leaves the machine, and every host gives the same
/// bytes. `calls=0`, `jev_tokens=0` in the log.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineScorer;

impl Scorer for OfflineScorer {
    fn name(&self) -> &str {
        "offline"
    }

    /// Never called by the guest for an offline choice; answers like a
    /// scorer that could not score, so a misuse fails open.
    fn score(&self, request: &ScoringRequest) -> ScoringResponse {
        ScoringResponse {
            answers: Ok(request.batches.iter().map(|_| BatchAnswer::Failed(Failure::Network)).collect()),
            elapsed_ms: 0,
        }
    }

    fn choice(&self) -> ScorerChoice {
        ScorerChoice::Offline
    }
}

fn elapsed_ms(since: Instant) -> u32 {
    u32::try_from(since.elapsed().as_millis()).unwrap_or(u32::MAX)
}

/// **A stub, not a relevance model.** Deterministic, offline: scores a
/// paragraph by the words it shares with the basis.
///
/// Words are maximal runs of alphanumeric characters, lowercased, of at least
/// 4 characters. With `B` the basis's distinct words and `share` the part of
/// `B` that occurs in the chunk, the score is `min(1, 2 × share)`; a basis
/// without such words leaves every paragraph unscored (kept). Text without
/// spaces (Japanese) forms few, long words: the stub is of little use there.
/// Answers with `batch-answer::scores`; never fails. `name()` is `"stub"`.
#[derive(Clone, Copy, Debug, Default)]
pub struct StubScorer;

impl StubScorer {
    fn words(text: &str) -> BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().nth(3).is_some())
            .map(str::to_lowercase)
            .collect()
    }

    /// The stub's score of one chunk against a basis, in [0, 1], or none.
    pub fn score_chunk(basis: &str, chunk: &str) -> Option<f64> {
        Self::score_words(&Self::words(basis), chunk)
    }

    fn score_words(basis: &BTreeSet<String>, chunk: &str) -> Option<f64> {
        if basis.is_empty() {
            return None;
        }
        let chunk = Self::words(chunk);
        let shared = basis.iter().filter(|w| chunk.contains(*w)).count();
        Some((2.0 * shared as f64 / basis.len() as f64).min(1.0))
    }
}

impl Scorer for StubScorer {
    fn name(&self) -> &str {
        "stub"
    }

    fn score(&self, request: &ScoringRequest) -> ScoringResponse {
        let start = Instant::now();
        let basis = Self::words(&request.basis);
        let answers = request
            .batches
            .iter()
            .map(|batch| {
                BatchAnswer::Scores(
                    batch
                        .chunks
                        .iter()
                        .map(|chunk| Self::score_words(&basis, chunk))
                        .collect(),
                )
            })
            .collect();
        ScoringResponse {
            answers: Ok(answers),
            elapsed_ms: elapsed_ms(start),
        }
    }
}

/// A scripted scorer for tests: fixed answers, recorded requests.
///
/// Build it with the chained methods, share it as `Arc<ScriptedScorer>`
/// (keep a clone to inspect [`requests`](Self::requests) — exactly what would
/// have left the machine — and [`calls`](Self::calls)). Batches are counted
/// from 0 in the order of `scoring-request.batches`. `name()` is `"scripted"`.
#[derive(Debug)]
pub struct ScriptedScorer {
    default_score: Option<f64>,
    scores: HashMap<u32, Option<f64>>,
    batches: BTreeMap<usize, BatchAnswer>,
    delay: Duration,
    stop: Option<ScoringStop>,
    elapsed_ms: Option<u32>,
    seen: Mutex<Vec<ScoringRequest>>,
}

impl Default for ScriptedScorer {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedScorer {
    /// Every paragraph scores 1.0 (kept) until told otherwise.
    pub fn new() -> Self {
        ScriptedScorer {
            default_score: Some(1.0),
            scores: HashMap::new(),
            batches: BTreeMap::new(),
            delay: Duration::ZERO,
            stop: None,
            elapsed_ms: None,
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Score of every paragraph not listed with [`score`](Self::score);
    /// `None` answers "not scored".
    pub fn default_score(mut self, score: Option<f64>) -> Self {
        self.default_score = score;
        self
    }

    /// Paragraph number `paragraph` (SPEC §4.5) scores `score`. Values
    /// outside [0, 1] are passed on as they are (the guest must reject them).
    pub fn score(mut self, paragraph: u32, score: f64) -> Self {
        self.scores.insert(paragraph, Some(score));
        self
    }

    /// The same score for several paragraphs.
    pub fn scores(mut self, paragraphs: impl IntoIterator<Item = u32>, score: f64) -> Self {
        for p in paragraphs {
            self.scores.insert(p, Some(score));
        }
        self
    }

    /// Paragraph `paragraph` is answered `none` (not scored).
    pub fn unscored(mut self, paragraph: u32) -> Self {
        self.scores.insert(paragraph, None);
        self
    }

    /// Batch `batch` fails (e.g. `Failure::Http(500)`, `Failure::Network`).
    pub fn fail_batch(mut self, batch: usize, failure: Failure) -> Self {
        self.batches.insert(batch, BatchAnswer::Failed(failure));
        self
    }

    /// Batch `batch` is answered with a raw Jev response body (SPEC §5),
    /// for the guest to decode.
    pub fn jev_response(mut self, batch: usize, body: impl Into<String>) -> Self {
        self.batches
            .insert(batch, BatchAnswer::JevResponse(body.into()));
        self
    }

    /// Sleep this long before answering (a real wait on the calling thread).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Answer the whole request with a stop (`timeout` or `cancelled`).
    pub fn stop(mut self, stop: ScoringStop) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Report this `elapsed-ms` instead of the measured wall time (for
    /// byte-exact log lines).
    pub fn elapsed_ms(mut self, ms: u32) -> Self {
        self.elapsed_ms = Some(ms);
        self
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ScoringRequest> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Number of `score` calls so far.
    pub fn calls(&self) -> usize {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Scorer for ScriptedScorer {
    fn name(&self) -> &str {
        "scripted"
    }

    fn score(&self, request: &ScoringRequest) -> ScoringResponse {
        let start = Instant::now();
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        let answers = match self.stop {
            Some(stop) => Err(stop),
            None => Ok(request
                .batches
                .iter()
                .enumerate()
                .map(|(i, batch)| match self.batches.get(&i) {
                    Some(answer) => answer.clone(),
                    None => BatchAnswer::Scores(
                        batch
                            .paragraphs
                            .iter()
                            .map(|p| *self.scores.get(p).unwrap_or(&self.default_score))
                            .collect(),
                    ),
                })
                .collect()),
        };
        ScoringResponse {
            answers,
            elapsed_ms: self.elapsed_ms.unwrap_or_else(|| elapsed_ms(start)),
        }
    }
}

/// For instances that must never score (inspection calls): answers
/// `cancelled`, so a guest that calls anyway fails open.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NoScorer;

impl Scorer for NoScorer {
    fn name(&self) -> &str {
        "none"
    }

    fn score(&self, _request: &ScoringRequest) -> ScoringResponse {
        ScoringResponse {
            answers: Err(ScoringStop::Cancelled),
            elapsed_ms: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StubScorer;

    #[test]
    fn the_stub_scores_the_share_of_basis_words_doubled_and_capped() {
        // Basis words of ≥ 4 characters: resume, broken, stream (3).
        let basis = "How to resume a broken SSE stream?";
        assert_eq!(
            StubScorer::score_chunk(basis, "Nothing related."),
            Some(0.0)
        );
        assert_eq!(
            StubScorer::score_chunk(basis, "A STREAM can break."),
            Some(2.0 / 3.0)
        );
        assert_eq!(
            StubScorer::score_chunk(basis, "Resume the stream."),
            Some(1.0)
        );
        assert_eq!(StubScorer::score_chunk("a b c", "anything"), None);
    }
}
