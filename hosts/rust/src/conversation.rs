//! One agent conversation ([`Conversation`]) and its user turns ([`Turn`]):
//! the id counter and the bounded store of pruned results (SPEC §10), one
//! instance dropped after any trap (SPEC §11), the host's log lines (SPEC §12).
//!
//! Every result goes through a `prune-job`: `new(input)` → the job's
//! `scoring-request` → scored by the conversation's [`Scoring`] (outside the
//! guest, so several results can be in flight at once) → `finish(response,
//! count + 1)`. The host never parses the text, counts characters or
//! decides a gate.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use wasmtime::component::ResourceAny;

use crate::cancel::CancelToken;
use crate::engine::{HostFailure, Instance, Pruner};
use crate::log::{LogSink, StderrLog};
use crate::scorer::{run_host_scorer, Scoring};
use crate::store::{MemoryStore, ResultStore, StoreError};
use crate::types::{
    wit_name, BatchFailure, Counts, Dialect, Gate, GuestPruned, Lang, OmittedOutcome, Operation, Outcome, ParagraphReport,
    PruneInput, ScoringRequest, ScoringResponse, Shape, StoredResult,
};

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
    /// Jev model named in request bodies (native routes), or none.
    pub jev_model: Option<String>,
    /// Where log lines go (default stderr).
    pub log: Arc<dyn LogSink>,
    /// Bounds of the default in-memory store; default the guest's
    /// (`settings.resolve([], none).store`). Ignored with [`store`](Self::store).
    pub max_records: Option<u32>,
    pub max_chars: Option<u64>,
    /// Where the id counter and the pruned results live; default a
    /// [`MemoryStore`] with the bounds above. An on-disk store (agent hooks,
    /// one process per event) keeps ids unique across processes.
    pub store: Option<Arc<dyn ResultStore>>,
    /// **Test-only**: the deadline used is `min(policy.deadline-ms, cap)`,
    /// so a deadline test runs in milliseconds. Never set in production.
    pub deadline_cap: Option<Duration>,
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
}

impl ToolResult {
    /// A successful result, not declared prunable.
    pub fn new(tool: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult { tool: tool.into(), text: text.into(), ok: true, prunable: false, report: false, scoring: None }
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
    pub failures: Vec<BatchFailure>,
    /// Why the host got no guest answer (then `body` is the input, outcome `failed`).
    pub failure: Option<HostFailure>,
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

    fn from_guest(raw: Arc<str>, pruned: GuestPruned) -> Self {
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
        }
    }

    fn fail_open(raw: Arc<str>, failure: HostFailure, log_line: String) -> Self {
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
        }
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

/// What the conversation's lock guards: the instance (the counter and the
/// records are the [`ResultStore`]'s).
struct State {
    instance: Option<Instance>,
    /// Bumped whenever the instance is dropped: jobs of an older one are gone.
    generation: u64,
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
    state: Mutex<State>,
}

/// One agent conversation: its options, the id counter and the bounded
/// store of pruned results (ids are unique within it: `P1`, `P2`, … across
/// every turn), and one instance of the component.
///
/// Cheap to clone (shared); `Send + Sync`: results of several threads may be
/// in flight at once (the guest is entered under a lock, scoring is not).
#[derive(Clone)]
pub struct Conversation {
    inner: Arc<Inner>,
}

impl Pruner {
    /// A new conversation (host design "Conversation"). Errors: a threshold
    /// the guest refuses ([`ConversationError::Threshold`] with its message).
    pub fn conversation(&self, options: ConversationOptions) -> Result<Conversation, ConversationError> {
        let threshold = match &options.threshold {
            Some(value) => self.threshold(value).map_err(ConversationError::Threshold)?,
            None => self.resolve(&[], None).map_err(ConversationError::Guest)?.threshold,
        };
        let store = match options.store {
            Some(store) => store,
            None => {
                let limits = self.resolve(&[], None).map_err(ConversationError::Guest)?.store;
                Arc::new(MemoryStore::new(
                    options.max_records.unwrap_or(limits.max_records),
                    options.max_chars.unwrap_or(limits.max_chars),
                ))
            }
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
                state: Mutex::new(State { instance: None, generation: 0 }),
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
        let answer = {
            let mut state = self.lock();
            let found = self.with_instance(&mut state, |instance| {
                let id = instance.call_bootstrap(|g, s| g.toolprune_pruner_omitted().call_requested_id(s, arguments))?;
                Ok(id)
            });
            match found {
                Err(failure) => Err(failure),
                Ok(id) => match id.map(|id| inner.store.find(&id)).transpose() {
                    Err(e) => Err(HostFailure::store(&e)),
                    Ok(found) => {
                        let found = found.flatten();
                        let bytes = arguments.len() + found.as_ref().map_or(0, |r| r.chars as usize * 4);
                        self.with_instance(&mut state, |instance| {
                            instance.call_sized(bytes, |g, s| {
                                g.toolprune_pruner_omitted().call_answer(s, arguments, inner.lang, &inner.agent, found.as_ref())
                            })
                        })
                    }
                },
            }
        };
        let answer = match answer {
            Ok(result) => OmittedAnswer { outcome: Some(result.outcome), text: result.text, log_line: result.log_line },
            Err(failure) => OmittedAnswer {
                outcome: None,
                text: inner.pruner.unavailable(inner.lang),
                log_line: inner.pruner.failure_line(Operation::Omitted, &inner.agent, "", &failure),
            },
        };
        inner.log.line(&answer.log_line);
        answer
    }

    /// The `omitted` tool in an SDK's shape, as a JSON object (SPEC §10,
    /// `omitted.tool`), in `lang` (default: the conversation's).
    pub fn omitted_tool(&self, dialect: Dialect, lang: Option<Lang>) -> Result<serde_json::Value, HostFailure> {
        self.inner.pruner.omitted_tool(dialect, lang.unwrap_or(self.inner.lang))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the live instance (made if needed); drops it after any error.
    fn with_instance<R>(
        &self,
        state: &mut State,
        f: impl FnOnce(&mut Instance) -> Result<R, HostFailure>,
    ) -> Result<R, HostFailure> {
        let instance = match &mut state.instance {
            Some(instance) => instance,
            None => state.instance.insert(self.inner.pruner.instantiate()?),
        };
        let answer = f(instance);
        if answer.is_err() {
            state.instance = None;
            state.generation += 1;
        }
        answer
    }

    fn input(&self, request: &str, result: &ToolResult, scoring: &Scoring) -> PruneInput {
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
            jev_model: inner.jev_model.clone(),
            agent: inner.agent.clone(),
            tool: result.tool.clone(),
            report: result.report,
        }
    }

    /// `new(input)` and its scoring request, on the live instance.
    fn start_job(&self, state: &mut State, input: &PruneInput) -> Result<(ResourceAny, Option<ScoringRequest>, u64), HostFailure> {
        let bytes = input.text.len();
        let job = self.with_instance(state, |instance| {
            instance.call_sized(bytes, |g, s| {
                let job = g.toolprune_pruner_pruner().prune_job();
                let handle = job.call_constructor(&mut *s, input)?;
                let request = job.call_scoring_request(&mut *s, handle)?;
                Ok((handle, request))
            })
        })?;
        Ok((job.0, job.1, state.generation))
    }

    fn prune(&self, request: &str, cancel: &CancelToken, result: ToolResult) -> PruneResult {
        let inner = &self.inner;
        let scoring = result.scoring.clone().unwrap_or_else(|| inner.scoring.clone());
        let input = self.input(request, &result, &scoring);
        let raw: Arc<str> = Arc::from(result.text);
        let tool = input.tool.clone();
        let started = {
            let mut state = self.lock();
            self.start_job(&mut state, &input)
        };
        let (handle, scoring_request, generation) = match started {
            Ok(started) => started,
            Err(failure) => return self.fail_open(raw, &tool, failure),
        };
        let response = match (scoring_request, &scoring) {
            (None, _) | (Some(_), Scoring::Offline) => None,
            (Some(request), Scoring::Stub) => {
                let mut state = self.lock();
                let bytes = input.text.len();
                let scored = self.with_instance(&mut state, |instance| {
                    instance.call_sized(bytes, |g, s| g.toolprune_pruner_pruner().call_stub_scores(s, &request))
                });
                match scored {
                    Ok(response) => Some(response),
                    Err(failure) => return self.fail_open(raw, &tool, failure),
                }
            }
            (Some(request), Scoring::Host(scorer)) => {
                let mut retry = |facts: crate::types::RetryFacts| {
                    let mut state = self.lock();
                    self.with_instance(&mut state, |instance| {
                        instance.call_bootstrap(|g, s| g.toolprune_pruner_settings().call_retry_delay(s, &facts))
                    })
                    .ok()
                    .flatten()
                };
                Some(run_host_scorer(scorer, request, cancel, inner.deadline_cap, &mut retry))
            }
        };
        let finished = {
            let mut state = self.lock();
            self.finish(&mut state, &input, handle, generation, response.as_ref())
        };
        match finished {
            Ok(pruned) => {
                if let Some(line) = &pruned.log_line {
                    inner.log.line(line);
                }
                PruneResult::from_guest(raw, pruned)
            }
            Err(failure) => self.fail_open(raw, &tool, failure),
        }
    }

    /// `finish(response, count + 1)` inside the store's `push` (under the
    /// lock); the store keeps the record. A job whose instance was dropped
    /// meanwhile (another call trapped) is made again from the same input in
    /// the new instance. A store that cannot give the number or keep the
    /// record is a host failure (`store`): the id is never handed out.
    fn finish(
        &self,
        state: &mut State,
        input: &PruneInput,
        handle: ResourceAny,
        generation: u64,
        response: Option<&ScoringResponse>,
    ) -> Result<GuestPruned, HostFailure> {
        let handle = if generation == state.generation && state.instance.is_some() {
            handle
        } else {
            self.start_job(state, input)?.0
        };
        let bytes = input.text.len();
        let mut finished: Option<Result<GuestPruned, HostFailure>> = None;
        let pushed = self.inner.store.push(&mut |id_number| {
            let pruned = self.with_instance(state, |instance| {
                instance.call_sized(bytes, |g, s| {
                    let pruned = g.toolprune_pruner_pruner().prune_job().call_finish(&mut *s, handle, response, id_number)?;
                    handle.resource_drop(&mut *s)?;
                    Ok(pruned)
                })
            });
            let record = pruned.as_ref().ok().and_then(|p| p.record.clone());
            finished = Some(pruned);
            record
        });
        match (pushed, finished) {
            (Ok(()), Some(pruned)) => pruned,
            (Err(e), finished) => {
                if finished.is_none() {
                    // The job was never finished: drop it (a failure here only costs the instance).
                    if let Some(instance) = &mut state.instance {
                        if instance.drop_resource(handle).is_err() {
                            state.instance = None;
                            state.generation += 1;
                        }
                    }
                }
                Err(HostFailure::store(&e))
            }
            (Ok(()), None) => Err(HostFailure::store(&StoreError("the store did not ask for the result".to_string()))),
        }
    }

    fn fail_open(&self, raw: Arc<str>, tool: &str, failure: HostFailure) -> PruneResult {
        let inner = &self.inner;
        let line = inner.pruner.failure_line(Operation::Prune, &inner.agent, tool, &failure);
        inner.log.line(&line);
        PruneResult::fail_open(raw, failure, line)
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
