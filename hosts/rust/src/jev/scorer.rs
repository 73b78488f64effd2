//! [`JevScorer`]: the batches of one tool result over HTTP, under the
//! guest's transport policy (SPEC §4.6, §11).
//!
//! **Why a blocking client (ureq) on plain threads.** The `scorer` import is
//! a synchronous call: the guest waits inside it, and the host must answer
//! before returning. An async client would need a runtime started (or
//! borrowed) just to block on it again, and a dependency tree several times
//! larger. Four threads per tool result are nothing next to a 200 ms–2 s
//! HTTP call, and a detached thread is the simplest way to stop *waiting*
//! for a request at once (cancellation, deadline) without needing the request
//! itself to be interruptible: each request carries a global timeout equal to
//! what was left of the deadline when it started, so a thread left behind
//! ends on its own by then.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::cancel::CancelToken;
use super::config::{JevConfig, JevProblem, Route, Token};
use crate::scorer::Scorer;
use crate::types::{BatchAnswer, Failure, ScoringRequest, ScoringResponse, ScoringStop};

/// One HTTP attempt of one batch, for `jev check` and tests. Never a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The HTTP status, or none for a connection error.
    pub status: Option<u16>,
    /// What went wrong without a status (`connection refused`, `timed out`,
    /// `host not found`, `tls: …`); none when there was a status.
    pub error: Option<String>,
    /// Time from sending to the status (or the error), in ms.
    pub ms: u32,
}

/// The attempts of one batch that answered before scoring ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchTrace {
    /// The batch's number in `scoring-request.batches`.
    pub batch: usize,
    pub attempts: Vec<Attempt>,
}

/// The Jev scorer: POSTs each batch's `jev-body` to the configured route.
///
/// - Up to `policy.max-in-flight` requests at once (a pool of that many
///   threads per call, fewer when there are fewer batches).
/// - One deadline for the whole call, `policy.deadline-ms`: past it the
///   answer is `timeout` and finished batches are discarded (SPEC §11).
/// - [`CancelToken`]: cancelling stops waiting at once (`cancelled`); it wins
///   over the deadline. A token cancelled before the call sends nothing.
/// - A status in `policy.retry-on` is retried up to `policy.max-retries`
///   times, after `Retry-After` seconds when given and when the wait ends
///   before the deadline (else no retry); without it after 250 ms. Any other
///   non-2xx (402, 401, 422, …) is final.
/// - A final non-2xx → `failed(http(status))`; no status (refused, DNS, TLS,
///   reset, timeout of one request) → `failed(network)`. The body of a
///   non-2xx answer is never read. A 2xx body goes to the guest unread
///   (`jev-response`).
/// - `elapsed-ms` is the wall time of the call. Never panics; threads still
///   waiting on the network when the call returns are left to end at their
///   request's timeout (never later than the deadline).
///
/// `Debug` shows the URL, never the token.
#[derive(Clone)]
pub struct JevScorer {
    url: String,
    route: Route,
    authorization: String,
    agent: ureq::Agent,
    cancel: CancelToken,
    deadline_cap: Option<Duration>,
}

impl std::fmt::Debug for JevScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JevScorer")
            .field("route", &self.route)
            .field("url", &self.url)
            .field("token", &Token::new("-"))
            .field("cancel", &self.cancel)
            .field("deadline_cap", &self.deadline_cap)
            .finish()
    }
}

impl JevScorer {
    /// A scorer for `config`, or what is missing (no token, no account id on
    /// Cloudflare, a bad base URL).
    pub fn new(config: &JevConfig) -> Result<Self, JevProblem> {
        if let Some(problem) = config.problem() {
            return Err(problem);
        }
        let url = config.url()?;
        let token = config.token.as_ref().ok_or(JevProblem::NoToken)?;
        let mut builder = ureq::Agent::config_builder()
            // Non-2xx statuses are answers, not errors (their bodies stay unread).
            .http_status_as_error(false)
            // An API never redirects; following one could carry the token elsewhere.
            .max_redirects(0)
            .user_agent(concat!("toolprune/", env!("CARGO_PKG_VERSION")))
            .max_idle_connections_per_host(8);
        if config.is_loopback() {
            builder = builder.proxy(None);
        }
        Ok(JevScorer {
            url,
            route: config.route,
            authorization: token.bearer(),
            agent: builder.build().into(),
            cancel: CancelToken::new(),
            deadline_cap: None,
        })
    }

    /// Uses `token` for cancellation (one token per turn: a cancelled token
    /// stays cancelled).
    pub fn with_cancel(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// The cancellation token in use.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// **Test-only knob.** Lowers the deadline to `cap` when the policy's is
    /// longer (it can never raise it), so a stalled-server test need not wait
    /// 20 s. Production code never calls it: the deadline is the guest's
    /// `policy.deadline-ms`.
    pub fn with_deadline_cap_for_tests(mut self, cap: Duration) -> Self {
        self.deadline_cap = Some(cap);
        self
    }

    /// The URL batches are POSTed to (no secret in it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The route in use.
    pub fn route(&self) -> Route {
        self.route
    }

    /// [`Scorer::score`], plus the HTTP attempts of every batch that
    /// answered in time (statuses and latencies; never a body).
    pub fn score_traced(&self, request: &ScoringRequest) -> (ScoringResponse, Vec<BatchTrace>) {
        let start = Instant::now();
        let (answers, traces) = self.run(request, start);
        let elapsed_ms = u32::try_from(start.elapsed().as_millis()).unwrap_or(u32::MAX);
        (ScoringResponse { answers, elapsed_ms }, traces)
    }

    fn run(
        &self,
        request: &ScoringRequest,
        start: Instant,
    ) -> (Result<Vec<BatchAnswer>, ScoringStop>, Vec<BatchTrace>) {
        let policy = &request.policy;
        let mut budget = Duration::from_millis(u64::from(policy.deadline_ms));
        if let Some(cap) = self.deadline_cap {
            budget = budget.min(cap);
        }
        let deadline = start + budget;
        let total = request.batches.len();

        let (tx, rx) = mpsc::channel::<Event>();
        let wake = tx.clone();
        let _subscription = self.cancel.subscribe(move || {
            let _ = wake.send(Event::Cancelled);
        });
        // Checked after subscribing, so no cancellation is missed.
        if self.cancel.is_cancelled() {
            return (Err(ScoringStop::Cancelled), Vec::new());
        }
        if total == 0 {
            return (Ok(Vec::new()), Vec::new());
        }

        let work = Arc::new(Work {
            url: self.url.clone(),
            authorization: self.authorization.clone(),
            agent: self.agent.clone(),
            bodies: request.batches.iter().map(|b| b.jev_body.clone()).collect(),
            next: AtomicUsize::new(0),
            deadline,
            max_retries: policy.max_retries,
            retry_on: policy.retry_on.clone(),
            retry_backoff: Duration::from_millis(u64::from(policy.retry_backoff_ms)),
            stop: Stop::default(),
        });
        let workers = (policy.max_in_flight.max(1) as usize).min(total);
        let mut started = 0;
        for _ in 0..workers {
            let (work, tx) = (work.clone(), tx.clone());
            let spawned = std::thread::Builder::new()
                .name("toolprune-jev".into())
                .spawn(move || work.serve(&tx));
            if spawned.is_ok() {
                started += 1;
            }
        }
        drop(tx);
        if started == 0 {
            // No thread could be made: every batch fails, nothing was sent.
            work.stop.set();
            let answers = (0..total).map(|_| BatchAnswer::Failed(Failure::Network)).collect();
            return (Ok(answers), Vec::new());
        }

        let mut answers: Vec<Option<BatchAnswer>> = vec![None; total];
        let mut traces = Vec::new();
        let mut waiting = total;
        let outcome = loop {
            if waiting == 0 {
                break None;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Event::Done { batch, answer, trace }) => {
                    if answers[batch].replace(answer).is_none() {
                        waiting -= 1;
                    }
                    traces.push(trace);
                }
                Ok(Event::Cancelled) => break Some(ScoringStop::Cancelled),
                Err(RecvTimeoutError::Timeout) => break Some(ScoringStop::Timeout),
                // Cannot happen while we hold the cancel waker's sender; if
                // it did, the missing batches fail below.
                Err(RecvTimeoutError::Disconnected) => break None,
            }
        };
        work.stop.set();
        match outcome {
            // Cancellation wins over the deadline (SPEC §11).
            Some(_) if self.cancel.is_cancelled() => (Err(ScoringStop::Cancelled), Vec::new()),
            Some(stop) => (Err(stop), Vec::new()),
            None => {
                traces.sort_by_key(|t: &BatchTrace| t.batch);
                let answers = answers
                    .into_iter()
                    .map(|a| a.unwrap_or(BatchAnswer::Failed(Failure::Network)))
                    .collect();
                (Ok(answers), traces)
            }
        }
    }
}

impl Scorer for JevScorer {
    fn name(&self) -> &str {
        "jev"
    }

    fn score(&self, request: &ScoringRequest) -> ScoringResponse {
        self.score_traced(request).0
    }
}

enum Event {
    Done {
        batch: usize,
        answer: BatchAnswer,
        trace: BatchTrace,
    },
    Cancelled,
}

/// Set when the caller stopped waiting: threads take no new batch, skip
/// retries and wake from a `Retry-After` wait.
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps `wait` unless stopped first; true when stopped.
    fn sleep(&self, wait: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, wait, |stopped| !*stopped)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

/// What the threads of one call share.
struct Work {
    url: String,
    authorization: String,
    agent: ureq::Agent,
    bodies: Vec<String>,
    next: AtomicUsize,
    deadline: Instant,
    max_retries: u32,
    retry_on: Vec<(u16, u16)>,
    retry_backoff: Duration,
    stop: Stop,
}

impl Work {
    /// One thread: take batches until none is left or the caller stopped.
    fn serve(&self, tx: &mpsc::Sender<Event>) {
        loop {
            if self.stop.is_set() {
                return;
            }
            let batch = self.next.fetch_add(1, Ordering::SeqCst);
            if batch >= self.bodies.len() {
                return;
            }
            let (answer, attempts) = catch_unwind(AssertUnwindSafe(|| self.batch(batch)))
                .unwrap_or_else(|_| (BatchAnswer::Failed(Failure::Network), Vec::new()));
            let trace = BatchTrace { batch, attempts };
            if tx.send(Event::Done { batch, answer, trace }).is_err() {
                return;
            }
        }
    }

    fn retryable(&self, status: u16) -> bool {
        self.retry_on.iter().any(|&(lo, hi)| (lo..=hi).contains(&status))
    }

    /// One batch, with its retries.
    fn batch(&self, batch: usize) -> (BatchAnswer, Vec<Attempt>) {
        let mut attempts = Vec::new();
        let mut retries = 0;
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stop.is_set() {
                let answer = match attempts.last() {
                    Some(Attempt { status: Some(s), .. }) => BatchAnswer::Failed(Failure::Http(*s)),
                    _ => BatchAnswer::Failed(Failure::Network),
                };
                return (answer, attempts);
            }
            let sent = Instant::now();
            let result = self
                .agent
                .post(&self.url)
                .header("Authorization", &self.authorization)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .config()
                .timeout_global(Some(left))
                .build()
                .send(self.bodies[batch].as_str());
            let ms = |since: Instant| u32::try_from(since.elapsed().as_millis()).unwrap_or(u32::MAX);
            let mut response = match result {
                Ok(response) => response,
                Err(error) => {
                    attempts.push(Attempt { status: None, error: Some(network_error(&error)), ms: ms(sent) });
                    return (BatchAnswer::Failed(Failure::Network), attempts);
                }
            };
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                let body = response.body_mut().read_to_vec();
                return match body {
                    Ok(bytes) => {
                        attempts.push(Attempt { status: Some(status), error: None, ms: ms(sent) });
                        // The guest judges the text; bytes that are not UTF-8
                        // cannot be Jev JSON anyway.
                        let text = String::from_utf8(bytes)
                            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                        (BatchAnswer::JevResponse(text), attempts)
                    }
                    Err(error) => {
                        attempts.push(Attempt { status: None, error: Some(network_error(&error)), ms: ms(sent) });
                        (BatchAnswer::Failed(Failure::Network), attempts)
                    }
                };
            }
            // A non-2xx answer: keep the status and the Retry-After header,
            // drop the response unread (its body may echo request headers).
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            drop(response);
            attempts.push(Attempt { status: Some(status), error: None, ms: ms(sent) });
            if retries >= self.max_retries || !self.retryable(status) {
                return (BatchAnswer::Failed(Failure::Http(status)), attempts);
            }
            let wait = retry_after.unwrap_or(self.retry_backoff);
            let fits = Instant::now()
                .checked_add(wait)
                .is_some_and(|resume| resume < self.deadline);
            if !fits || self.stop.sleep(wait) {
                return (BatchAnswer::Failed(Failure::Http(status)), attempts);
            }
            retries += 1;
        }
    }
}

/// A short, body-free description of a request that got no status.
fn network_error(error: &ureq::Error) -> String {
    use std::io::ErrorKind;
    match error {
        ureq::Error::Timeout(_) => "timed out".to_string(),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::Tls(why) => format!("tls: {why}"),
        ureq::Error::Io(e) => match e.kind() {
            ErrorKind::ConnectionRefused => "connection refused".to_string(),
            ErrorKind::ConnectionReset => "connection reset".to_string(),
            ErrorKind::ConnectionAborted => "connection aborted".to_string(),
            ErrorKind::TimedOut => "timed out".to_string(),
            ErrorKind::UnexpectedEof => "connection closed early".to_string(),
            // e.g. "failed to lookup address information: …" (no secret in it).
            _ => e.to_string(),
        },
        ureq::Error::BodyExceedsLimit(_) => "response body too large".to_string(),
        ureq::Error::Protocol(_) => "HTTP protocol error".to_string(),
        other => format!("{other}"),
    }
}
