//! [`JevScorer`]: the batches of one tool result over HTTP, under the
//! guest's transport policy and retry rule (SPEC §4.6, §11).
//!
//! **Why a blocking client (ureq) on plain threads.** The host scores on a
//! thread of its own while the thread that owns the guest waits (and answers
//! the retry questions). An async client would need a runtime started (or
//! borrowed) just to block on it again, and a dependency tree several times
//! larger. Four threads per tool result are nothing next to a 200 ms–2 s
//! HTTP call, and a detached thread is the simplest way to stop *waiting*
//! for a request at once (cancellation, deadline) without needing the request
//! itself to be interruptible: each request carries a global timeout equal to
//! what was left of the deadline when it started, so a thread left behind
//! ends on its own by then.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::engine::Pruner;
use crate::scorer::{Scorer, ScoringContext};
use crate::types::{BatchAnswer, Failure, JevEndpoint, ScoringRequest};

/// One HTTP attempt of one batch, for `jev check` and tests. Never a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 0-based batch number in `scoring-request.batches`.
    pub batch: usize,
    /// The HTTP status, or none for a connection error.
    pub status: Option<u16>,
    /// What went wrong without a status (`connection refused`, `timed out`,
    /// `host not found`, `tls: …`); none when there was a status.
    pub error: Option<String>,
    /// Time from sending to the status (or the error), in ms.
    pub ms: u32,
}

/// The Jev scorer: POSTs each batch's `jev-body` to the configured endpoint.
///
/// - Up to `policy.max-in-flight` requests at once (that many threads per
///   call, fewer when there are fewer batches).
/// - After a non-2xx answer or a network error it asks the guest's retry
///   rule (`settings.retry-delay`, through [`ScoringContext::retry_delay`]):
///   none → the batch fails with that status; some → wait (cancellable) and
///   try again.
/// - A final non-2xx → `failed(http(status))`; no status (refused, DNS, TLS,
///   reset, timeout of one request) → `failed(network)`. The body of a
///   non-2xx answer is never read. A 2xx body goes to the guest unread
///   (`jev-response`).
/// - The deadline and cancellation are the host's (every scorer gets them):
///   the threads stop taking batches once the host stops waiting; a request
///   still on the wire ends at its own timeout (what was left of the
///   deadline when it started).
///
/// `Debug` shows the URL, never the token.
#[derive(Clone)]
pub struct JevScorer {
    url: String,
    model: Option<String>,
    authorization: String,
    agent: ureq::Agent,
    trace: Option<Arc<Mutex<Vec<Attempt>>>>,
}

impl std::fmt::Debug for JevScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JevScorer").field("url", &self.url).field("token", &"<redacted>").finish()
    }
}

impl JevScorer {
    /// A scorer for `endpoint` (from `settings.resolve`, the guest's
    /// `config.jev`) with the API `token`. Errors: an empty token or one with
    /// characters an HTTP header cannot carry (the message names `variable`,
    /// never the token).
    pub fn new(endpoint: &JevEndpoint, token: &str, variable: &str) -> Result<Self, String> {
        let token = token.trim();
        if token.is_empty() {
            return Err(format!("no token: {variable} is empty"));
        }
        if !token.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(format!("{variable} has spaces or characters an HTTP header cannot carry"));
        }
        let mut builder = ureq::Agent::config_builder()
            // Non-2xx statuses are answers, not errors (their bodies stay unread).
            .http_status_as_error(false)
            // An API never redirects; following one could carry the token elsewhere.
            .max_redirects(0)
            .user_agent(concat!("toolprune/", env!("CARGO_PKG_VERSION")))
            .max_idle_connections_per_host(8);
        if endpoint.loopback {
            builder = builder.proxy(None);
        }
        Ok(JevScorer {
            url: endpoint.url.clone(),
            model: endpoint.model.clone(),
            authorization: format!("Bearer {token}"),
            agent: builder.build().into(),
            trace: None,
        })
    }

    /// The Jev scorer of this process's configuration (host design "Jev"):
    /// the variables the guest names (read with `env`), the config file they
    /// point at, resolved by the guest; the token from the variable the
    /// guest names (`config.token-variable`), read here and never passed
    /// into the guest. Also returns the model to name in bodies (the scorer
    /// names it to its conversations itself: [`Scorer::jev_model`]).
    ///
    /// Errors (one line, no secret): the configuration's or the endpoint's
    /// problem (the guest's message), or no token.
    pub fn from_env(pruner: &Pruner, env: &dyn Fn(&str) -> Option<String>) -> Result<(Self, Option<String>), String> {
        let config = pruner.configuration(env)?;
        let endpoint = config.jev.clone()?;
        let token = env(&config.token_variable)
            .ok_or_else(|| format!("no token: set {}", config.token_variable))?;
        let scorer = Self::new(&endpoint, &token, &config.token_variable)?;
        Ok((scorer, endpoint.model.clone()))
    }

    /// Records every HTTP attempt into `trace` (statuses, latencies; never a body).
    pub fn with_trace(mut self, trace: Arc<Mutex<Vec<Attempt>>>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// The URL batches are POSTed to (no secret in it).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Scorer for JevScorer {
    fn name(&self) -> &str {
        "jev"
    }

    fn jev_model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    fn score(&self, request: &ScoringRequest, context: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        let total = request.batches.len();
        if total == 0 {
            return Ok(Vec::new());
        }
        let work = Arc::new(Work {
            jev: self.clone(),
            bodies: request.batches.iter().map(|b| b.jev_body.clone()).collect(),
            next: AtomicUsize::new(0),
            answers: Mutex::new(vec![None; total]),
            context: context.clone(),
        });
        let workers = (request.policy.max_in_flight.max(1) as usize).min(total);
        let handles: Vec<_> = (0..workers)
            .filter_map(|_| {
                let work = work.clone();
                std::thread::Builder::new().name("toolprune-jev".into()).spawn(move || work.serve()).ok()
            })
            .collect();
        for handle in handles {
            let _ = handle.join();
        }
        let answers = work.answers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok(answers.into_iter().map(|a| a.unwrap_or(BatchAnswer::Failed(Failure::Network))).collect())
    }
}

/// What the threads of one call share.
struct Work {
    jev: JevScorer,
    bodies: Vec<String>,
    next: AtomicUsize,
    answers: Mutex<Vec<Option<BatchAnswer>>>,
    context: ScoringContext,
}

impl Work {
    /// One thread: take batches until none is left or the host stopped waiting.
    fn serve(&self) {
        loop {
            if self.context.is_stopped() {
                return;
            }
            let batch = self.next.fetch_add(1, Ordering::SeqCst);
            if batch >= self.bodies.len() {
                return;
            }
            let answer = catch_unwind(AssertUnwindSafe(|| self.batch(batch)))
                .unwrap_or(BatchAnswer::Failed(Failure::Network));
            self.answers.lock().unwrap_or_else(|e| e.into_inner())[batch] = Some(answer);
        }
    }

    fn record(&self, attempt: Attempt) {
        if let Some(trace) = &self.jev.trace {
            trace.lock().unwrap_or_else(|e| e.into_inner()).push(attempt);
        }
    }

    /// One batch, with the retries the guest's rule allows.
    fn batch(&self, batch: usize) -> BatchAnswer {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let left = self.context.remaining();
            if left.is_zero() || self.context.is_stopped() {
                return BatchAnswer::Failed(Failure::Network);
            }
            let sent = Instant::now();
            let ms = |since: Instant| u32::try_from(since.elapsed().as_millis()).unwrap_or(u32::MAX);
            let result = self
                .jev
                .agent
                .post(&self.jev.url)
                .header("Authorization", &self.jev.authorization)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .config()
                .timeout_global(Some(left))
                .build()
                .send(self.bodies[batch].as_str());
            let (status, retry_after, retry_after_ms, failure) = match result {
                Err(error) => {
                    self.record(Attempt { batch, status: None, error: Some(network_error(&error)), ms: ms(sent) });
                    (None, None, None, Failure::Network)
                }
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    if (200..300).contains(&status) {
                        return match response.body_mut().read_to_vec() {
                            Ok(bytes) => {
                                self.record(Attempt { batch, status: Some(status), error: None, ms: ms(sent) });
                                // The guest judges the text; bytes that are not
                                // UTF-8 cannot be Jev JSON anyway.
                                let text = String::from_utf8(bytes)
                                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                                BatchAnswer::JevResponse(text)
                            }
                            Err(error) => {
                                self.record(Attempt { batch, status: None, error: Some(network_error(&error)), ms: ms(sent) });
                                BatchAnswer::Failed(Failure::Network)
                            }
                        };
                    }
                    // A non-2xx answer: keep the status and the retry headers,
                    // drop the response unread (its body may echo request headers).
                    let header = |name: &str| {
                        response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
                    };
                    let (retry_after, retry_after_ms) = (header("retry-after"), header("retry-after-ms"));
                    drop(response);
                    self.record(Attempt { batch, status: Some(status), error: None, ms: ms(sent) });
                    (Some(status), retry_after, retry_after_ms, Failure::Http(status))
                }
            };
            match self.context.retry_delay(attempt, status, retry_after, retry_after_ms) {
                Some(wait) if !self.context.sleep(wait) => continue,
                _ => return BatchAnswer::Failed(failure),
            }
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
