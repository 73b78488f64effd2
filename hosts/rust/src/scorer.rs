//! Who scores a result's paragraphs (SPEC §5, §14), and how the host runs a
//! scorer: on its own thread, under the deadline, cancellable, with
//! failures folded into per-batch `failed(network)` (SPEC §11).
//!
//! - [`Scoring`]: the guest's offline scorer, the guest's stub
//!   (`scorer-choice.stub`), or a host [`Scorer`] (Jev, a test scorer),
//!   asked through the component's `scorer.score` import (the import form)
//!   or between a job's two calls (the job form).
//! - [`Scorer`]: what a host scorer implements: one call per tool result,
//!   every batch, with a [`ScoringContext`] (deadline, stop, retry rule).
//! - [`ScriptedScorer`]: fixed answers for tests.

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cancel::CancelToken;
use crate::types::{BatchAnswer, Failure, RetryFacts, ScorerChoice, ScoringRequest, ScoringResponse, ScoringStop};

/// Who scores the paragraphs of a result.
#[derive(Clone, Default)]
pub enum Scoring {
    /// The guest's offline lexical scorer: no request, nothing leaves the
    /// machine (`scorer=offline` in the log).
    #[default]
    Offline,
    /// The word-overlap stub (tests and demos, not a relevance model),
    /// scored inside the guest (`scorer-choice.stub`, `scorer=stub`): no
    /// host call, like [`Scoring::Offline`].
    Stub,
    /// A host scorer: Jev ([`crate::JevScorer`]) or your own.
    Host(Arc<dyn Scorer>),
}

impl std::fmt::Debug for Scoring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scoring::Offline => f.write_str("Offline"),
            Scoring::Stub => f.write_str("Stub"),
            Scoring::Host(scorer) => write!(f, "Host({})", scorer.name()),
        }
    }
}

impl<T: Scorer + 'static> From<Arc<T>> for Scoring {
    fn from(scorer: Arc<T>) -> Self {
        Scoring::Host(scorer)
    }
}

impl From<Arc<dyn Scorer>> for Scoring {
    fn from(scorer: Arc<dyn Scorer>) -> Self {
        Scoring::Host(scorer)
    }
}

impl Scoring {
    /// A host scorer.
    pub fn host(scorer: impl Scorer + 'static) -> Self {
        Scoring::Host(Arc::new(scorer))
    }

    /// The label of the log line's `scorer=` and of reports.
    pub fn name(&self) -> &str {
        match self {
            Scoring::Offline => "offline",
            Scoring::Stub => "stub",
            Scoring::Host(scorer) => scorer.name(),
        }
    }

    /// The host scorer, if this is one (the guest's own scorers are none).
    pub(crate) fn host_scorer(&self) -> Option<Arc<dyn Scorer>> {
        match self {
            Scoring::Host(scorer) => Some(scorer.clone()),
            _ => None,
        }
    }

    /// The Jev model the scorer names, if any.
    pub(crate) fn jev_model(&self) -> Option<String> {
        match self {
            Scoring::Host(scorer) => scorer.jev_model().map(str::to_string),
            _ => None,
        }
    }

    /// What the guest is told (`prune-input.scorer`).
    pub(crate) fn choice(&self) -> ScorerChoice {
        match self {
            Scoring::Offline => ScorerChoice::Offline,
            Scoring::Stub => ScorerChoice::Stub,
            Scoring::Host(scorer) => ScorerChoice::Host(scorer.name().to_string()),
        }
    }
}

/// A host scorer (SPEC §14): answers every batch of one tool result.
///
/// Called on a thread of its own. The host enforces the deadline
/// (`policy.deadline-ms`) and cancellation whatever the scorer does: past
/// them it stops waiting and the result is `timeout` / `cancelled`. An
/// `Err` or a panic is a scorer failure: every batch `failed(network)` (the
/// guest's outcome `failed` and its log line). The answers go to the guest
/// as they are (a missing one is the guest's `no-answer`).
/// A long-running scorer should watch [`ScoringContext::is_stopped`] or
/// wait with [`ScoringContext::sleep`].
pub trait Scorer: Send + Sync {
    /// A short label for the log line's `scorer=` (e.g. `jev`).
    fn name(&self) -> &str;

    /// One answer per batch of `request`, in order.
    fn score(&self, request: &ScoringRequest, context: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>>;

    /// The Jev model to name in request bodies (native routes), when this
    /// scorer knows it ([`crate::JevScorer`] from its resolved endpoint).
    /// A conversation's own `jev_model` option wins.
    fn jev_model(&self) -> Option<&str> {
        None
    }
}

/// Set when the host stopped waiting: a scorer takes no new work, skips
/// retries and wakes from its waits.
#[derive(Default)]
pub(crate) struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    pub(crate) fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sleep(&self, wait: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, wait, |stopped| !*stopped)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

enum Event {
    Done(Option<Vec<BatchAnswer>>),
    Retry(RetryFacts, mpsc::SyncSender<Option<u32>>),
    Cancelled,
}

/// What a host scorer gets with a request: the deadline, whether the host
/// stopped waiting, and the guest's retry rule. Cheap to clone (share it
/// with worker threads).
#[derive(Clone)]
pub struct ScoringContext {
    deadline: Instant,
    stop: Arc<Stop>,
    events: mpsc::Sender<Event>,
}

impl ScoringContext {
    /// When the host stops waiting (the result's deadline, SPEC §11).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The host stopped waiting (deadline, cancellation): give up.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_set()
    }

    /// Sleeps `wait` unless the host stops waiting first; true when stopped.
    pub fn sleep(&self, wait: Duration) -> bool {
        self.stop.sleep(wait)
    }

    /// The guest's retry rule (`settings.retry-delay`, SPEC §11) after
    /// attempt number `attempt` (1 for the first) failed with `status`
    /// (none: a network error) and these headers: the wait before the next
    /// attempt, or none (give up: the batch fails). Asked of the thread that
    /// owns the guest, which answers while it waits for the scorer; none
    /// once it stopped waiting.
    pub fn retry_delay(
        &self,
        attempt: u32,
        status: Option<u16>,
        retry_after: Option<String>,
        retry_after_ms: Option<String>,
    ) -> Option<Duration> {
        let now_unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let remaining_ms = u32::try_from(self.remaining().as_millis()).unwrap_or(u32::MAX);
        let facts = RetryFacts { attempt, status, retry_after, retry_after_ms, now_unix_ms, remaining_ms };
        let (reply, answer) = mpsc::sync_channel(1);
        self.events.send(Event::Retry(facts, reply)).ok()?;
        answer.recv().ok().flatten().map(|ms| Duration::from_millis(u64::from(ms)))
    }
}

fn elapsed_ms(since: Instant) -> u32 {
    u32::try_from(since.elapsed().as_millis()).unwrap_or(u32::MAX)
}

/// Every batch `failed(network)`: what a scorer failure becomes.
fn all_failed(request: &ScoringRequest) -> Vec<BatchAnswer> {
    request.batches.iter().map(|_| BatchAnswer::Failed(Failure::Network)).collect()
}

/// Runs `scorer` on `request` on a thread of its own and waits for it, at
/// most until the deadline (`policy.deadline-ms`, lowered to `deadline_cap`
/// when given: tests). While waiting it answers the scorer's retry
/// questions with `retry` (the guest's rule). Cancellation wins over the
/// deadline. Never panics.
pub(crate) fn run_host_scorer(
    scorer: &Arc<dyn Scorer>,
    request: ScoringRequest,
    cancel: &CancelToken,
    deadline_cap: Option<Duration>,
    retry: &mut dyn FnMut(RetryFacts) -> Option<u32>,
) -> ScoringResponse {
    let start = Instant::now();
    let mut budget = Duration::from_millis(u64::from(request.policy.deadline_ms));
    if let Some(cap) = deadline_cap {
        budget = budget.min(cap);
    }
    let deadline = start + budget;
    let (tx, rx) = mpsc::channel::<Event>();
    let wake = tx.clone();
    let _subscription = cancel.subscribe(move || {
        let _ = wake.send(Event::Cancelled);
    });
    let respond = |answers: Result<Vec<BatchAnswer>, ScoringStop>| ScoringResponse { answers, elapsed_ms: elapsed_ms(start) };
    // Checked after subscribing, so no cancellation is missed.
    if cancel.is_cancelled() {
        return respond(Err(ScoringStop::Cancelled));
    }
    let stop = Arc::new(Stop::default());
    let context = ScoringContext { deadline, stop: stop.clone(), events: tx.clone() };
    let failed = all_failed(&request);
    let thread_scorer = scorer.clone();
    let done = tx;
    let spawned = std::thread::Builder::new().name("toolprune-scorer".into()).spawn(move || {
        let answers = catch_unwind(AssertUnwindSafe(|| thread_scorer.score(&request, &context)));
        let answers = match answers {
            // Too few or too many answers go to the guest as they are (it
            // reads a missing one as `no-answer`).
            Ok(Ok(answers)) => Some(answers),
            _ => None,
        };
        let _ = done.send(Event::Done(answers));
    });
    if spawned.is_err() {
        return respond(Ok(failed));
    }
    let outcome = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Done(Some(answers))) => break Ok(answers),
            Ok(Event::Done(None)) => break Ok(failed),
            Ok(Event::Retry(facts, reply)) => {
                let _ = reply.send(retry(facts));
            }
            Ok(Event::Cancelled) => break Err(ScoringStop::Cancelled),
            Err(RecvTimeoutError::Timeout) => break Err(ScoringStop::Timeout),
            Err(RecvTimeoutError::Disconnected) => break Ok(failed),
        }
    };
    stop.set();
    match outcome {
        // Cancellation wins over the deadline (SPEC §11).
        Err(ScoringStop::Timeout) if cancel.is_cancelled() => respond(Err(ScoringStop::Cancelled)),
        other => respond(other),
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

    /// Batch `batch` gets this answer (`failed(…)`, `jev-response(…)`, `scores(…)`).
    pub fn answer(mut self, batch: usize, answer: BatchAnswer) -> Self {
        self.batches.insert(batch, answer);
        self
    }

    /// Batch `batch` fails (e.g. `Failure::Http(500)`, `Failure::Network`).
    pub fn fail_batch(self, batch: usize, failure: Failure) -> Self {
        self.answer(batch, BatchAnswer::Failed(failure))
    }

    /// Batch `batch` is answered with a raw Jev response body (SPEC §5),
    /// for the guest to decode.
    pub fn jev_response(self, batch: usize, body: impl Into<String>) -> Self {
        self.answer(batch, BatchAnswer::JevResponse(body.into()))
    }

    /// Sleep this long before answering (a real wait on the scorer's thread;
    /// the host's deadline still applies).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
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

    fn score(&self, request: &ScoringRequest, context: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
        if !self.delay.is_zero() {
            context.sleep(self.delay);
        }
        Ok(request
            .batches
            .iter()
            .enumerate()
            .map(|(i, batch)| match self.batches.get(&i) {
                Some(answer) => answer.clone(),
                None => BatchAnswer::Scores(
                    batch.paragraphs.iter().map(|p| *self.scores.get(p).unwrap_or(&self.default_score)).collect(),
                ),
            })
            .collect())
    }
}
