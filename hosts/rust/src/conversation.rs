//! One agent conversation ([`Conversation`]) and its user turns ([`Turn`]):
//! the id counter and the bounded store of pruned results (SPEC §10),
//! instances dropped after any trap (SPEC §11), the host's log lines (SPEC §12).
//!
//! Every result goes through the guest in one of two forms ([`Form`], SPEC
//! §14), which give the same bytes:
//!
//! - **Import** (the default): one call, `pruner.prune(input, id-number)`;
//!   the guest calls the component's `scorer.score` import at most once,
//!   and this host answers it with the result's [`Scoring`] on the calling
//!   thread's own instance (deadline, cancellation, retries; an error,
//!   panic, timeout or cancellation is an answer, never a trap).
//! - **Jobs**: `prune-job` `new(input)` → its `scoring-request` → scored by
//!   the host between two calls → `finish(response, id-number)`.
//!
//! **Ids without gaps, in finish order, also with results in flight at
//! once.** The id number is an argument of `prune`, given before the
//! scorer runs, while the store decides the number only when the record is
//! kept. So the import form peeks `n0 = count + 1`
//! ([`ResultStore::next_number`]), calls `prune(input, n0)`
//! and keeps the scorer's response the import gave; then, inside the
//! store's `push(|n| …)` (atomic with every other push of the
//! conversation): if `n == n0` the record is the one `prune` returned; else
//! another result took `n0` meanwhile, and the same input is finished again
//! through a `prune-job` with the kept response and `n` — no second scorer
//! call, no second import call, the same bytes the job form gives with `n`.
//! Only an `ok` result is pushed: no other outcome takes an id, and a
//! larger `n` only lengthens the header's id, so it never turns another
//! outcome into `ok`.
//!
//! The host never parses the text, counts characters or decides a gate;
//! for the repeat gate (SPEC §2) it passes the call's arguments and the
//! store's call keys ([`ResultStore::calls`]).

use std::sync::Arc;
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::engine::{CallScoring, HostFailure, Instance, Pruner};
use crate::log::{LogSink, StderrLog};
use crate::scorer::{run_host_scorer, Scoring};
use crate::store::{MemoryStore, ResultStore, StoreError};
use crate::types::{
    wit_name, BatchFailure, Counts, Dialect, Gate, GuestPruned, Lang, OmittedOutcome, Operation, Outcome, ParagraphReport,
    PruneInput, ScoringResponse, Shape, StoredResult,
};

/// How a conversation's results go through the component (SPEC §14). Both
/// give the same bytes; the conformance suite runs every scenario in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Form {
    /// One call, `pruner.prune`, with the scorer answering the component's
    /// `scorer.score` import from inside it. The default: the simplest path
    /// for a caller that blocks while the scorer runs anyway (this crate's
    /// API is blocking).
    #[default]
    Import,
    /// The `prune-job` resource: the request comes out, the host scores it
    /// between two calls, the job is finished. For callers that want the
    /// guest out of the way while scoring (the form event-loop hosts use);
    /// in this blocking API it gives the same results, one call more.
    Jobs,
}

/// How a conversation prunes (host design "Conversation"; SPEC §2, §6, §10).
#[derive(Clone)]
pub struct ConversationOptions {
    /// Pruning on. Default **false** (SPEC §2: off unless the user turns it on).
    pub enabled: bool,
    /// The threshold as the user wrote it (`"0.2"`, `"0.30"`), checked by
    /// the guest's `settings.threshold` when the conversation is made; any
    /// other value refuses the conversation. Default: the guest's (`None`).
    pub threshold: Option<String>,
    /// Language of markers and `omitted` texts (default `en`).
    pub lang: Lang,
    /// Label for the log lines' `agent=` (default `agent`). Never sent.
    pub agent: String,
    /// The scorer; default the [`Pruner`]'s ([`Scoring::Offline`] unless loaded otherwise).
    pub scoring: Option<Scoring>,
    /// Jev model named in request bodies (native routes); default: the
    /// scorer's ([`crate::Scorer::jev_model`], e.g. a [`crate::JevScorer`]'s).
    pub jev_model: Option<String>,
    /// Where log lines go (default stderr).
    pub log: Arc<dyn LogSink>,
    /// Store bound in stored results; default the guest's
    /// (`settings.resolve([], none).store.max-records`). Oldest evicted first.
    /// For the default in-memory store; ignored with [`store`](Self::store).
    pub max_records: Option<u32>,
    /// Store bound in characters of dropped text (`stored-result.chars`);
    /// default the guest's (`store.max-chars`). Oldest evicted first.
    pub max_chars: Option<u64>,
    /// Where the id counter and the pruned results live; default a
    /// [`MemoryStore`] with the bounds above. An on-disk store (agent hooks,
    /// one process per event) keeps ids unique across processes.
    pub store: Option<Arc<dyn ResultStore>>,
    /// **Test-only**: the deadline used is `min(policy.deadline-ms, cap)`,
    /// so a deadline test runs in milliseconds. Never set in production.
    pub deadline_cap: Option<Duration>,
    /// How results go through the component ([`Form::Import`] by default).
    pub form: Form,
}

impl Default for ConversationOptions {
    fn default() -> Self {
        ConversationOptions {
            enabled: false,
            threshold: None,
            lang: Lang::En,
            agent: "agent".to_string(),
            scoring: None,
            jev_model: None,
            log: Arc::new(StderrLog),
            max_records: None,
            max_chars: None,
            store: None,
            deadline_cap: None,
            form: Form::Import,
        }
    }
}

/// Why a conversation could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConversationError {
    /// The threshold was refused: the guest's message (SPEC §6).
    Threshold(String),
    /// The component failed while checking the options.
    Guest(String),
}

impl std::fmt::Display for ConversationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConversationError::Threshold(message) => write!(f, "threshold: {message}"),
            ConversationError::Guest(message) => write!(f, "the component failed: {message}"),
        }
    }
}

impl std::error::Error for ConversationError {}

/// One tool result as the agent host sees it.
#[derive(Clone, Debug)]
pub struct ToolResult {
    /// Tool name, for the log line's `name=` only. Never sent.
    pub tool: String,
    /// The result text as the tool returned it.
    pub text: String,
    /// The call succeeded (error texts are never pruned). Default true.
    pub ok: bool,
    /// The tool was declared prunable (see [`Pruner::is_prunable`]). Default false.
    pub prunable: bool,
    /// Fill [`PruneResult::paragraphs`] (one record per paragraph). Default false.
    pub report: bool,
    /// Scores this one result with another scorer than the conversation's.
    pub scoring: Option<Scoring>,
    /// The tool call's arguments as the agent sent them (a JSON text), for
    /// the repeat gate (SPEC §2): the same tool with the same arguments,
    /// after an earlier result of that call was pruned in this
    /// conversation, passes unpruned (`skipped`, gate `repeated`, with a log
    /// line). Compared by the guest as a digest of canonical JSON; never
    /// sent, logged or stored. `None` (the default): no repeat is detected.
    pub arguments: Option<String>,
}

impl ToolResult {
    /// A successful result, not declared prunable.
    pub fn new(tool: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            tool: tool.into(),
            text: text.into(),
            ok: true,
            prunable: false,
            report: false,
            scoring: None,
            arguments: None,
        }
    }

    /// A successful result of a tool declared prunable.
    pub fn prunable(tool: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult { prunable: true, ..Self::new(tool, text) }
    }
}

/// What the host hands the model (and its repeat detector) for one result.
/// One shape in every host (host design "PruneResult").
#[derive(Clone, Debug)]
pub struct PruneResult {
    /// What the model receives: the pruned body (outcome `ok`), else the
    /// input itself (the same allocation as [`raw`](Self::raw)).
    pub body: Arc<str>,
    /// The input text, for repeat detection (SPEC §11).
    pub raw: Arc<str>,
    /// The guest's outcome, or `failed` when the host got no guest answer.
    pub outcome: Outcome,
    /// For `skipped`: the gate that stopped it.
    pub gate: Option<Gate>,
    /// The stored id (`P3`) when the outcome is `ok`.
    pub id: Option<String>,
    /// What was split (`text`, `json_wrapper`, `json_array`); none when nothing was.
    pub shape: Option<Shape>,
    /// The `tool prune:` counts (characters, not bytes); none after a host failure.
    pub counts: Option<Counts>,
    /// Net reduction (SPEC §7), when a body was assembled.
    pub ratio: Option<f64>,
    /// The threshold in effect; none after a host failure.
    pub threshold: Option<f64>,
    /// The line written to the log (the guest's, or the host failure line);
    /// none for `skipped`.
    pub log_line: Option<String>,
    /// The model the Jev service said it ran.
    pub served_model: Option<String>,
    /// With [`ToolResult::report`]: one record per paragraph.
    pub paragraphs: Vec<ParagraphReport>,
    /// Batches that failed (status, class), for diagnosis; never a body.
    pub failures: Vec<BatchFailure>,
    /// Why the host got no guest answer (then `body` is the input, outcome `failed`).
    pub failure: Option<HostFailure>,
    /// How many times the host's scorer was asked to score this result: 0
    /// (a gate, nothing scorable, the guest's own offline or stub scorer, a
    /// failure before scoring) or 1 (import calls in the import form, the
    /// job's request scored in the job form). Never more (SPEC §1: once).
    pub scorer_calls: u32,
}

impl PruneResult {
    /// The SPEC name of the outcome (`no_basis`, …).
    pub fn outcome_name(&self) -> String {
        wit_name(&self.outcome)
    }

    /// Whether the body is the input, unchanged.
    pub fn unchanged(&self) -> bool {
        Arc::ptr_eq(&self.body, &self.raw)
    }

    fn from_guest(raw: Arc<str>, pruned: GuestPruned, scorer_calls: u32) -> Self {
        let body = match pruned.body {
            Some(body) => Arc::from(body),
            None => raw.clone(),
        };
        PruneResult {
            body,
            raw,
            outcome: pruned.outcome,
            gate: pruned.gate,
            id: pruned.record.as_ref().map(|r| r.id.clone()),
            shape: pruned.shape,
            counts: Some(pruned.counts),
            ratio: pruned.ratio,
            threshold: Some(pruned.threshold),
            log_line: pruned.log_line,
            served_model: pruned.served_model,
            paragraphs: pruned.paragraphs,
            failures: pruned.failures,
            failure: None,
            scorer_calls,
        }
    }

    fn fail_open(raw: Arc<str>, failure: HostFailure, log_line: String, scorer_calls: u32) -> Self {
        PruneResult {
            body: raw.clone(),
            raw,
            outcome: Outcome::Failed,
            gate: None,
            id: None,
            shape: None,
            counts: None,
            ratio: None,
            threshold: None,
            log_line: Some(log_line),
            served_model: None,
            paragraphs: Vec::new(),
            failures: Vec::new(),
            failure: Some(failure),
            scorer_calls,
        }
    }

    /// The guest's answer rebuilt from this result, for the guest's
    /// `report.prune-json` (which reads the outcome, gate, shape, counts,
    /// ratio, threshold, the stored id, the served model, paragraphs and
    /// failures): none after a host failure. The body and the record's
    /// dropped text are left out (the report does not read them).
    pub(crate) fn to_guest(&self) -> Option<GuestPruned> {
        if self.failure.is_some() {
            return None;
        }
        Some(GuestPruned {
            body: None,
            outcome: self.outcome,
            gate: self.gate,
            shape: self.shape,
            counts: self.counts.clone()?,
            ratio: self.ratio,
            threshold: self.threshold?,
            log_line: self.log_line.clone(),
            record: self.id.clone().map(|id| StoredResult { id, chars: 0, call: None, data: String::new() }),
            paragraphs: self.paragraphs.clone(),
            failures: self.failures.clone(),
            served_model: self.served_model.clone(),
        })
    }
}

/// The answer to one `omitted` tool call (SPEC §10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OmittedAnswer {
    /// The guest's outcome; none when the guest trapped (`failed`).
    pub outcome: Option<OmittedOutcome>,
    /// What goes back to the model as the tool result, whatever the outcome.
    pub text: String,
    /// The `tool omitted:` line (written to the log).
    pub log_line: String,
}

impl OmittedAnswer {
    /// `ok`, `not_dropped`, `not_found`, `too_large`, `invalid`, or `failed`.
    pub fn outcome_name(&self) -> String {
        self.outcome.as_ref().map_or_else(|| "failed".to_string(), wit_name)
    }
}

struct Inner {
    pruner: Pruner,
    threshold: f64,
    lang: Lang,
    agent: String,
    enabled: bool,
    scoring: Scoring,
    jev_model: Option<String>,
    log: Arc<dyn LogSink>,
    store: Arc<dyn ResultStore>,
    deadline_cap: Option<Duration>,
    form: Form,
}

/// One agent conversation: its options, the id counter and the bounded
/// store of pruned results (ids are unique within it: `P1`, `P2`, … across
/// every turn). It holds no instance: each call takes one of the
/// [`Pruner`]'s.
///
/// Cheap to clone (shared); `Send + Sync`: results of several threads may be
/// in flight at once, each on an instance of its own.
#[derive(Clone)]
pub struct Conversation {
    inner: Arc<Inner>,
}

/// Stores one finished result: `finish(number)` finishes it with the id
/// number the store gives (under the store's lock), and its record, if any,
/// is stored. The finished result, or the store's failure (also a store that
/// never asked).
fn push_finished(
    store: &dyn ResultStore,
    finish: &mut dyn FnMut(u32) -> Result<GuestPruned, HostFailure>,
) -> Result<GuestPruned, HostFailure> {
    let mut finished: Option<Result<GuestPruned, HostFailure>> = None;
    let pushed = store.push(&mut |number| {
        let pruned = finish(number);
        let record = pruned.as_ref().ok().and_then(|p| p.record.clone());
        finished = Some(pruned);
        record
    });
    match (pushed, finished) {
        (Ok(()), Some(pruned)) => pruned,
        (Err(e), _) => Err(HostFailure::store(&e)),
        (Ok(()), None) => Err(HostFailure::store(&StoreError("the store did not ask for the result".to_string()))),
    }
}

impl Pruner {
    /// A new conversation (host design "Conversation"). Errors: a threshold
    /// the guest refuses ([`ConversationError::Threshold`] with its message).
    pub fn conversation(&self, options: ConversationOptions) -> Result<Conversation, ConversationError> {
        let defaults = self.resolve(&[], None).map_err(ConversationError::Guest)?;
        let threshold = match &options.threshold {
            Some(value) => self.threshold(value).map_err(ConversationError::Threshold)?,
            None => defaults.threshold,
        };
        let store = match options.store {
            Some(store) => store,
            None => Arc::new(MemoryStore::new(
                options.max_records.unwrap_or(defaults.store.max_records),
                options.max_chars.unwrap_or(defaults.store.max_chars),
            )),
        };
        Ok(Conversation {
            inner: Arc::new(Inner {
                pruner: self.clone(),
                threshold,
                lang: options.lang,
                agent: options.agent,
                enabled: options.enabled,
                scoring: options.scoring.unwrap_or_else(|| self.default_scoring().clone()),
                jev_model: options.jev_model,
                log: options.log,
                store,
                deadline_cap: options.deadline_cap,
                form: options.form,
            }),
        })
    }
}

impl Conversation {
    /// A new user turn with its request (the raw message text; the guest
    /// takes the basis from it), not cancellable.
    pub fn turn(&self, request: impl Into<String>) -> Turn {
        self.turn_with_cancel(request, CancelToken::new())
    }

    /// A new user turn whose scoring stops at once when `cancel` is
    /// cancelled (outcome `cancelled`, SPEC §11).
    pub fn turn_with_cancel(&self, request: impl Into<String>, cancel: CancelToken) -> Turn {
        Turn { conversation: self.clone(), request: Arc::from(request.into()), cancel }
    }

    /// The threshold in effect (checked at construction).
    pub fn threshold(&self) -> f64 {
        self.inner.threshold
    }

    /// The conversation's language.
    pub fn lang(&self) -> Lang {
        self.inner.lang
    }

    /// The default scorer of this conversation.
    pub fn scoring(&self) -> &Scoring {
        &self.inner.scoring
    }

    /// The stored results, oldest first (bounded; evicted ones are gone;
    /// empty when the store cannot be read).
    pub fn stored(&self) -> Vec<StoredResult> {
        self.inner.store.records().unwrap_or_default()
    }

    /// Results stored so far (the next id is `P{count + 1}`; 0 when the
    /// store cannot be read).
    pub fn count(&self) -> u32 {
        self.inner.store.count().unwrap_or(0)
    }

    /// The conversation's store.
    pub fn store(&self) -> &Arc<dyn ResultStore> {
        &self.inner.store
    }

    /// Answers a model's `omitted` tool call (SPEC §10): `arguments` is the
    /// model's JSON text, passed on unparsed. Writes the `tool omitted:`
    /// line. Never fails: after a trap, or when the store cannot be read,
    /// the text asks the model to try again (`omitted.unavailable`) and the
    /// outcome is `failed`.
    pub fn omitted(&self, arguments: &str) -> OmittedAnswer {
        let inner = &self.inner;
        let answer = self.on_instance(|instance| {
            let id = instance.call_bootstrap(|g, s| g.toolprune_pruner_omitted().call_requested_id(s, arguments))?;
            let found = id.map(|id| inner.store.find(&id)).transpose().map_err(|e| HostFailure::store(&e))?.flatten();
            let bytes = arguments.len() + found.as_ref().map_or(0, |r| r.chars as usize * 4);
            instance.call_sized(bytes, |g, s| {
                g.toolprune_pruner_omitted().call_answer(s, arguments, inner.lang, &inner.agent, found.as_ref())
            })
        });
        let answer = match answer {
            Ok(result) => OmittedAnswer { outcome: Some(result.outcome), text: result.text, log_line: result.log_line },
            Err(failure) => OmittedAnswer {
                outcome: None,
                text: inner.pruner.unavailable(inner.lang),
                log_line: inner.pruner.failure_line(Operation::Omitted, &inner.agent, "", &failure),
            },
        };
        crate::log::write(&*inner.log, &answer.log_line);
        answer
    }

    /// The `omitted` tool in an SDK's shape, as a JSON object (SPEC §10,
    /// `omitted.tool`), in `lang` (default: the conversation's).
    pub fn omitted_tool(&self, dialect: Dialect, lang: Option<Lang>) -> Result<serde_json::Value, HostFailure> {
        self.inner.pruner.omitted_tool(dialect, lang.unwrap_or(self.inner.lang))
    }

    /// How this conversation's results go through the component.
    pub fn form(&self) -> Form {
        self.inner.form
    }

    /// Runs `f` on an instance of its own (from the pool); gives it back
    /// after success, drops it after any error (a trap, a limit, the store).
    fn on_instance<R>(&self, f: impl FnOnce(&mut Instance) -> Result<R, HostFailure>) -> Result<R, HostFailure> {
        let mut instance = self.inner.pruner.checkout()?;
        let answer = f(&mut instance);
        if answer.is_ok() {
            self.inner.pruner.checkin(instance);
        }
        answer
    }

    fn input(&self, request: &str, result: &ToolResult, scoring: &Scoring, pruned_calls: Vec<String>) -> PruneInput {
        let inner = &self.inner;
        PruneInput {
            request: request.to_string(),
            text: result.text.clone(),
            enabled: inner.enabled,
            succeeded: result.ok,
            prunable: result.prunable,
            threshold: inner.threshold,
            lang: inner.lang,
            scorer: scoring.choice(),
            jev_model: inner.jev_model.clone().or_else(|| scoring.jev_model()),
            agent: inner.agent.clone(),
            tool: result.tool.clone(),
            report: result.report,
            arguments: result.arguments.clone(),
            pruned_calls,
            work_budget: inner.pruner.limits_override().work,
        }
    }

    fn prune(&self, request: &str, cancel: &CancelToken, result: ToolResult) -> PruneResult {
        let inner = &self.inner;
        let scoring = result.scoring.clone().unwrap_or_else(|| inner.scoring.clone());
        // The repeat gate's facts: only needed when the call's arguments are known.
        let pruned_calls = match result.arguments {
            Some(_) => match inner.store.calls() {
                Ok(calls) => calls,
                Err(e) => return self.fail_open(Arc::from(result.text), &result.tool, HostFailure::store(&e), 0),
            },
            None => Vec::new(),
        };
        let input = self.input(request, &result, &scoring, pruned_calls);
        let raw: Arc<str> = Arc::from(result.text);
        let tool = input.tool.clone();
        let call = CallScoring::new(&inner.pruner, scoring.host_scorer(), cancel.clone(), inner.deadline_cap);
        let (finished, scorer_calls) = match inner.form {
            Form::Import => self.prune_import(&input, call),
            Form::Jobs => self.prune_jobs(&input, call),
        };
        match finished {
            Ok(pruned) => {
                if let Some(line) = &pruned.log_line {
                    crate::log::write(&*inner.log, line);
                }
                PruneResult::from_guest(raw, pruned, scorer_calls)
            }
            Err(failure) => self.fail_open(raw, &tool, failure, scorer_calls),
        }
    }

    /// The import form: `prune(input, n0)` on an instance of its own, the
    /// scorer answering the import inside it, then the record kept under the
    /// number the store gives (see the module's doc). Returns the guest's
    /// answer and the import calls made.
    fn prune_import(&self, input: &PruneInput, call: CallScoring) -> (Result<GuestPruned, HostFailure>, u32) {
        let store = &self.inner.store;
        let first = match store.next_number() {
            Ok(number) => number,
            Err(e) => return (Err(HostFailure::store(&e)), 0),
        };
        let mut instance = match self.inner.pruner.checkout() {
            Ok(instance) => instance,
            Err(failure) => return (Err(failure), 0),
        };
        instance.set_scoring(call);
        let pruned = instance.call_sized(input.text.len(), |g, s| g.toolprune_pruner_pruner().call_prune(s, input, first));
        let seen = instance.take_scoring();
        let scorer_calls = seen.as_ref().map_or(0, |c| c.calls);
        let response = seen.and_then(|c| c.response);
        let pruned = match pruned {
            Ok(pruned) => {
                self.inner.pruner.checkin(instance);
                pruned
            }
            // The trapped instance is dropped here.
            Err(failure) => return (Err(failure), scorer_calls),
        };
        // Nothing to keep (no record: not pruned): no number taken.
        if pruned.record.is_none() {
            return (Ok(pruned), scorer_calls);
        }
        let mut first_answer = Some(pruned);
        let finished = push_finished(&**store, &mut |number| match first_answer.take() {
            Some(pruned) if number == first => Ok(pruned),
            // Another result was stored meanwhile: the same input, the same scores, the id the store gives.
            _ => self.finish_again(input, response.as_ref(), number),
        });
        (finished, scorer_calls)
    }

    /// The import form's result finished again with id number `number`
    /// through a `prune-job`, from the response the import gave (none: the
    /// guest scored itself): what the job form gives with that number.
    fn finish_again(&self, input: &PruneInput, response: Option<&ScoringResponse>, number: u32) -> Result<GuestPruned, HostFailure> {
        self.on_instance(|instance| {
            instance.call_sized(input.text.len(), |g, s| {
                let job = g.toolprune_pruner_pruner().prune_job();
                let handle = job.call_constructor(&mut *s, input)?;
                let pruned = job.call_finish(&mut *s, handle, response, number)?;
                handle.resource_drop(&mut *s)?;
                Ok(pruned)
            })
        })
    }

    /// The job form: `new(input)` and its request on an instance of its
    /// own, the request scored by the host, then `finish(response, n)`
    /// inside the store's `push` on the same instance. Returns the guest's
    /// answer and the requests scored (0 or 1).
    fn prune_jobs(&self, input: &PruneInput, call: CallScoring) -> (Result<GuestPruned, HostFailure>, u32) {
        let mut instance = match self.inner.pruner.checkout() {
            Ok(instance) => instance,
            Err(failure) => return (Err(failure), 0),
        };
        let bytes = input.text.len();
        let started = instance.call_sized(bytes, |g, s| {
            let job = g.toolprune_pruner_pruner().prune_job();
            let handle = job.call_constructor(&mut *s, input)?;
            let request = job.call_scoring_request(&mut *s, handle)?;
            Ok((handle, request))
        });
        let (handle, request) = match started {
            Ok(started) => started,
            Err(failure) => return (Err(failure), 0),
        };
        let (response, scorer_calls) = match (request, &call.scorer) {
            (Some(request), Some(scorer)) => {
                let pruner = self.inner.pruner.clone();
                let mut retry = |facts: crate::types::RetryFacts| pruner.retry_delay(facts);
                (Some(run_host_scorer(scorer, request, &call.cancel, call.deadline_cap, &mut retry)), 1)
            }
            // No request (a gate, nothing scorable, the guest's own scorer),
            // or one without a host scorer (none: the guest says `failed`).
            _ => (None, 0),
        };
        let finished = push_finished(&*self.inner.store, &mut |number| {
            instance.call_sized(bytes, |g, s| {
                let pruned = g.toolprune_pruner_pruner().prune_job().call_finish(&mut *s, handle, response.as_ref(), number)?;
                handle.resource_drop(&mut *s)?;
                Ok(pruned)
            })
        });
        // An unfinished job or a trap: the instance goes with it.
        if finished.is_ok() {
            self.inner.pruner.checkin(instance);
        }
        (finished, scorer_calls)
    }

    fn fail_open(&self, raw: Arc<str>, tool: &str, failure: HostFailure, scorer_calls: u32) -> PruneResult {
        let inner = &self.inner;
        let line = inner.pruner.failure_line(Operation::Prune, &inner.agent, tool, &failure);
        crate::log::write(&*inner.log, &line);
        PruneResult::fail_open(raw, failure, line, scorer_calls)
    }
}

/// One user turn of a [`Conversation`]: its request and cancellation.
/// Cheap to clone; `Send + Sync` (results may be pruned from several threads).
#[derive(Clone)]
pub struct Turn {
    conversation: Conversation,
    request: Arc<str>,
    cancel: CancelToken,
}

impl Turn {
    /// Prunes one tool result (SPEC §2–§12): the body for the model, the
    /// outcome and counts, the stored id when `ok`. Writes the log line.
    /// Never fails and never loses the text: on any host failure the input
    /// comes back with outcome `failed` and [`PruneResult::failure`] set.
    /// Blocks while the scorer runs (at most the deadline).
    pub fn on_tool_result(&self, result: ToolResult) -> PruneResult {
        self.conversation.prune(&self.request, &self.cancel, result)
    }

    /// The turn's cancellation token.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// The conversation this turn belongs to.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }
}
