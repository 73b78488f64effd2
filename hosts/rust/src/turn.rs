//! One user turn: a fresh instance, the turn store, fail-open calls.
//!
//! SPEC §10 (the turn store: memory only, lifetime = the turn), §11 (a trap,
//! panic or limit in the guest → the raw text, and go on), §12 (the host
//! writes the guest's log lines), §14 (the host is mechanism only: it never
//! parses the text, counts characters or decides a gate).

use std::sync::Arc;

use wasmtime::component::ResourceAny;

use crate::engine::{GuestFailure, Instance, Limits, Pruner};
use crate::log::{LogSink, StderrLog};
use crate::scorer::Scorer;
use crate::types::{
    GuestPruned, Lang, OmittedResult, Outcome, PruneInput, ScoringRequest, ScoringResponse,
    StoredResult, ToolSpec,
};

/// The turn's settings, passed to every `prune` as facts (SPEC §2, §3, §6).
#[derive(Clone, Debug)]
pub struct TurnOptions {
    /// The user's request for this turn: the raw message text, without
    /// attachments or quoted copies. The guest takes the basis from it.
    pub request: String,
    /// Label for the log lines' `agent=` (default `agent`). Never sent.
    pub agent: String,
    /// 0.1 / 0.2 / 0.3 / 0.5 (default 0.2); the guest maps anything else to 0.2.
    pub threshold: f64,
    /// Language of markers and `omitted` texts (default `en`).
    pub lang: Lang,
    /// Pruning enabled and a scorer configured. Default **false** (SPEC §2:
    /// off unless the user turns it on).
    pub enabled: bool,
    /// Jev model named in the request body (native route), or none.
    pub jev_model: Option<String>,
    /// Memory and fuel of the turn's instance.
    pub limits: Limits,
}

impl TurnOptions {
    /// Defaults for everything but the request (pruning **off**).
    pub fn new(request: impl Into<String>) -> Self {
        TurnOptions {
            request: request.into(),
            agent: "agent".to_string(),
            threshold: 0.2,
            lang: Lang::En,
            enabled: false,
            jev_model: None,
            limits: Limits::default(),
        }
    }
}

/// One tool result as the agent host sees it.
#[derive(Clone, Debug)]
pub struct ToolResult {
    /// Tool name, for the log line's `name=` only. Never sent.
    pub tool: String,
    /// The call succeeded (error texts are never pruned).
    pub succeeded: bool,
    /// The host declared the tool prunable (default not, SPEC §2).
    pub prunable: bool,
    /// The result text as the tool returned it.
    pub text: String,
}

impl ToolResult {
    /// A successful result of a tool declared prunable.
    pub fn prunable(tool: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            tool: tool.into(),
            succeeded: true,
            prunable: true,
            text: text.into(),
        }
    }
}

/// What the host hands the model (and its repeat detector) for one result.
#[derive(Clone, Debug)]
pub struct Pruned {
    /// The body for the model: the pruned body, or the raw text byte for byte.
    pub body: String,
    /// The raw text, for repeat detection (SPEC §11).
    pub raw: String,
    /// The guest's outcome, or `failed` when the guest gave no answer.
    pub outcome: Outcome,
    /// The guest's full answer (counts, paragraphs, failures, log line);
    /// none when it failed.
    pub report: Option<GuestPruned>,
    /// Why the guest gave no answer (then `body == raw`, outcome `failed`).
    pub failure: Option<GuestFailure>,
}

impl Pruned {
    fn fail_open(text: String, failure: GuestFailure) -> Self {
        Pruned {
            body: text.clone(),
            raw: text,
            outcome: Outcome::Failed,
            report: None,
            failure: Some(failure),
        }
    }

    fn from_guest(text: String, report: GuestPruned) -> Self {
        Pruned {
            body: report.body.clone(),
            raw: text,
            outcome: report.outcome,
            report: Some(report),
            failure: None,
        }
    }
}

/// One user turn: its request and settings, the turn store, and an instance
/// of the component that lives as long as the turn (or until it traps).
///
/// Instances are made lazily from the shared [`Pruner`]; after any wasmtime
/// error the instance is dropped and the next call makes a fresh one. No call
/// panics and no call loses the text.
pub struct Turn {
    pruner: Pruner,
    scorer: Arc<dyn Scorer>,
    log: Arc<dyn LogSink>,
    options: TurnOptions,
    stored: Vec<StoredResult>,
    instance: Option<Instance>,
}

impl Turn {
    /// A new turn, logging to stderr.
    pub fn new(pruner: &Pruner, scorer: Arc<dyn Scorer>, options: TurnOptions) -> Self {
        Turn {
            pruner: pruner.clone(),
            scorer,
            log: Arc::new(StderrLog),
            options,
            stored: Vec::new(),
            instance: None,
        }
    }

    /// Write log lines to `log` instead of stderr.
    pub fn with_log(mut self, log: Arc<dyn LogSink>) -> Self {
        self.log = log;
        self
    }

    /// The turn's settings.
    pub fn options(&self) -> &TurnOptions {
        &self.options
    }

    /// The scorer behind the `scorer` import.
    pub fn scorer(&self) -> &Arc<dyn Scorer> {
        &self.scorer
    }

    /// Limits for the following calls (the live instance keeps running).
    pub fn set_limits(&mut self, limits: Limits) {
        self.options.limits = limits;
        if let Some(instance) = &mut self.instance {
            instance.set_limits(limits);
        }
    }

    /// The turn store: every `ok` result pruned in this turn, in order
    /// (`P1`, `P2`, …). Memory only; gone with the turn.
    pub fn stored(&self) -> &[StoredResult] {
        &self.stored
    }

    /// Prunes one tool result (the `prune` export; the guest calls the
    /// scorer at most once). Stores the record of an `ok` result, writes the
    /// guest's log line. Fails open: on any wasmtime error the raw text comes
    /// back as the body, outcome `failed`, with one log line
    /// `tool prune: agent=… name=… outcome=failed reason=guest_trap`.
    pub fn on_tool_result(&mut self, result: ToolResult) -> Pruned {
        let tool = result.tool.clone();
        let input = self.input(result);
        let answer = self.call(|guest, store| guest.call_prune(store, &input));
        self.settle(&tool, input.text, answer)
    }

    /// Starts the non-blocking form (`prune-job`): the guest prepares the
    /// scoring request and the host scores it itself, then
    /// [`PruneJob::finish`]es. Same results, store and log as
    /// [`on_tool_result`](Self::on_tool_result).
    pub fn begin(&mut self, result: ToolResult) -> PruneJob<'_> {
        let tool = result.tool.clone();
        let input = self.input(result);
        let started = self.call(|guest, store| {
            let job = guest.prune_job();
            let handle = job.call_constructor(&mut *store, &input)?;
            let request = job.call_scoring_request(&mut *store, handle)?;
            Ok((handle, request))
        });
        let (job, request) = match started {
            Ok((handle, request)) => (Ok(handle), request),
            Err(failure) => (Err(failure), None),
        };
        PruneJob {
            turn: self,
            tool,
            input,
            job: Some(job),
            request,
        }
    }

    /// [`begin`](Self::begin), score with the turn's scorer, finish.
    pub fn on_tool_result_via_job(&mut self, result: ToolResult) -> Pruned {
        let scorer = self.scorer.clone();
        let job = self.begin(result);
        let response = job.scoring_request().map(|request| scorer.score(request));
        job.finish(response)
    }

    /// The `omitted` tool (SPEC §10): `arguments` is the model's JSON text,
    /// passed on unparsed with the whole turn store. Writes the guest's
    /// `tool omitted:` line.
    ///
    /// Errors: the guest trapped (logged as `tool omitted: agent=…
    /// outcome=failed reason=guest_trap`); tell the model the tool failed.
    pub fn omitted(&mut self, arguments: &str) -> Result<OmittedResult, GuestFailure> {
        let (lang, agent) = (self.options.lang, self.options.agent.clone());
        // Lent to the call and put back: the store is never copied.
        let stored = std::mem::take(&mut self.stored);
        let answer =
            self.call(|guest, store| guest.call_omitted(store, arguments, lang, &agent, &stored));
        self.stored = stored;
        match answer {
            Ok(result) => {
                self.log.line(&result.log_line);
                Ok(result)
            }
            Err(failure) => {
                self.log.line(&format!(
                    "tool omitted: agent={agent} outcome=failed {}",
                    failure.log_fields()
                ));
                Err(failure)
            }
        }
    }

    /// The `omitted` tool's name, description and schema in the turn's
    /// language (SPEC §10).
    pub fn omitted_tool(&mut self) -> Result<ToolSpec, GuestFailure> {
        let lang = self.options.lang;
        self.call(|guest, store| guest.call_omitted_tool(store, lang))
    }

    fn input(&self, result: ToolResult) -> PruneInput {
        let o = &self.options;
        PruneInput {
            request: o.request.clone(),
            text: result.text,
            enabled: o.enabled,
            succeeded: result.succeeded,
            prunable: result.prunable,
            threshold: o.threshold,
            lang: o.lang,
            sequence: u32::try_from(self.stored.len() + 1).unwrap_or(u32::MAX),
            scorer: self.scorer.choice(),
            jev_model: o.jev_model.clone(),
            agent: o.agent.clone(),
            tool: result.tool,
        }
    }

    /// One export call on the live instance (made if needed); drops the
    /// instance on any error.
    fn call<R>(
        &mut self,
        f: impl FnOnce(
            &crate::engine::Guest,
            &mut wasmtime::Store<crate::engine::HostState>,
        ) -> wasmtime::Result<R>,
    ) -> Result<R, GuestFailure> {
        let instance = match &mut self.instance {
            Some(instance) => instance,
            None => self.instance.insert(
                self.pruner
                    .instantiate(self.scorer.clone(), self.options.limits)?,
            ),
        };
        let answer = instance.call(f);
        if answer.is_err() {
            self.instance = None;
        }
        answer
    }

    fn settle(
        &mut self,
        tool: &str,
        text: String,
        answer: Result<GuestPruned, GuestFailure>,
    ) -> Pruned {
        match answer {
            Ok(report) => {
                if let Some(record) = &report.record {
                    self.stored.push(record.clone());
                }
                if let Some(line) = &report.log_line {
                    self.log.line(line);
                }
                Pruned::from_guest(text, report)
            }
            Err(failure) => {
                self.log.line(&format!(
                    "tool prune: agent={} name={tool} outcome=failed {}",
                    self.options.agent,
                    failure.log_fields()
                ));
                Pruned::fail_open(text, failure)
            }
        }
    }
}

/// A `prune-job` in flight (the non-blocking form of `prune`). Holds the
/// turn until finished. Dropping it unfinished drops the guest's job and
/// returns nothing: call [`finish`](Self::finish).
pub struct PruneJob<'t> {
    turn: &'t mut Turn,
    tool: String,
    input: PruneInput,
    /// The guest's job, or why there is none; taken by `finish`.
    job: Option<Result<ResourceAny, GuestFailure>>,
    request: Option<ScoringRequest>,
}

impl PruneJob<'_> {
    /// The work for the scorer, or none when no call is needed (a gate
    /// stopped it, no scorable paragraph, or the guest failed).
    pub fn scoring_request(&self) -> Option<&ScoringRequest> {
        self.request.as_ref()
    }

    /// Finishes with the host's answer (`None` exactly when there was no
    /// request). Fails open like [`Turn::on_tool_result`].
    pub fn finish(mut self, response: Option<ScoringResponse>) -> Pruned {
        let job = self.job.take();
        let text = std::mem::take(&mut self.input.text);
        let answer = match job {
            Some(Err(failure)) => Err(failure),
            None => Err(GuestFailure::trap(wasmtime::Error::msg(
                "prune-job already finished",
            ))),
            Some(Ok(handle)) => self.turn.call(|guest, store| {
                let pruned =
                    guest
                        .prune_job()
                        .call_finish(&mut *store, handle, response.as_ref())?;
                handle.resource_drop(&mut *store)?;
                Ok(pruned)
            }),
        };
        let tool = std::mem::take(&mut self.tool);
        self.turn.settle(&tool, text, answer)
    }
}

impl Drop for PruneJob<'_> {
    fn drop(&mut self) {
        if let Some(Ok(handle)) = self.job.take() {
            if let Some(instance) = &mut self.turn.instance {
                if handle.resource_drop(&mut instance.store).is_err() {
                    self.turn.instance = None;
                }
            }
        }
    }
}
