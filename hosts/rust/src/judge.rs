//! The judge router from the host (seed 003 §5, SPEC §13, `wit/judge.wit`):
//! a rules file and a message in, a decision out.
//!
//! Every rule is the guest's (the TOML, its validation, the grammar, the Jev
//! body, the reading of the answer, the log line). The host reads files,
//! makes the one Jev call with the same [`Scorer`] it prunes with — by
//! default from inside `judge.decide`, answering the component's
//! `scorer.score` import ([`Form::Import`]); with [`Form::Jobs`] through a
//! `judge-job` — and writes the log line.
//!
//! ```no_run
//! use toolprune::judge::{Judge, Verdict};
//! use toolprune::Pruner;
//!
//! let judge = Judge::new(Pruner::shared()?, None);
//! let rules = std::fs::read_to_string("judge.toml")?;
//! let answers = std::fs::read_to_string("answers.json")?; // a Jev response
//! let decision = judge.route_with_answers(&rules, "Compare three CI services", &answers)?;
//! if let Verdict::Routed(targets) = &decision.verdict {
//!     println!("hand over to {}", targets.join(", "));
//! }
//! # anyhow::Ok(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::conversation::Form;
use crate::engine::{CallScoring, HostFailure, Pruner};
use crate::log::{LogSink, StderrLog};
use crate::scorer::{run_host_scorer, Scorer};
use crate::types::Operation;

pub use crate::types::{Answer, Decision, LoadError, QuestionKind, Verdict};

/// Why no decision came back.
#[derive(Clone, Debug)]
pub enum RouteError {
    /// The rules file is not valid: every problem, in line order.
    Rules(Vec<LoadError>),
    /// The guest trapped or hit a limit (logged with the guest's
    /// `settings.failure-line` for `judge`).
    Guest(HostFailure),
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Rules(errors) => {
                f.write_str(render_load_errors("rules", errors).trim_end())
            }
            RouteError::Guest(failure) => write!(f, "the component failed: {failure}"),
        }
    }
}

impl std::error::Error for RouteError {}

/// `FILE:LINE:COLUMN: message`, one line per problem.
pub fn render_load_errors(file: &str, errors: &[LoadError]) -> String {
    errors
        .iter()
        .map(|e| format!("{file}:{}:{}: {}\n", e.line, e.column, e.message))
        .collect()
}

/// Judges messages with a rules file. Each call runs in a fresh instance of
/// the component (a judgement keeps nothing between calls).
pub struct Judge {
    pruner: Pruner,
    scorer: Option<Arc<dyn Scorer>>,
    jev_model: Option<String>,
    log: Arc<dyn LogSink>,
    cancel: CancelToken,
    deadline_cap: Option<Duration>,
    form: Form,
}

impl Judge {
    /// A judge whose live calls go to `scorer` (a Jev scorer; one that
    /// answers with scores cannot judge: the decision is `failed`,
    /// `no-answer`), or none (fixed answers only). Logs to stderr.
    pub fn new(pruner: &Pruner, scorer: Option<Arc<dyn Scorer>>) -> Self {
        Judge {
            pruner: pruner.clone(),
            scorer,
            jev_model: None,
            log: Arc::new(StderrLog),
            cancel: CancelToken::new(),
            deadline_cap: None,
            form: Form::Import,
        }
    }

    /// Decide live calls through `judge.decide` and the import
    /// ([`Form::Import`], the default) or through a `judge-job` ([`Form::Jobs`]):
    /// the same decision and log line either way.
    pub fn with_form(mut self, form: Form) -> Self {
        self.form = form;
        self
    }

    /// The Jev model to name in the body (native route), or none (Cloudflare).
    pub fn with_jev_model(mut self, model: Option<String>) -> Self {
        self.jev_model = model;
        self
    }

    /// Write the `judge:` line to `log` instead of stderr.
    pub fn with_log(mut self, log: Arc<dyn LogSink>) -> Self {
        self.log = log;
        self
    }

    /// Stop waiting for Jev when `cancel` is cancelled.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// **Test-only**: lowers the deadline to `cap`.
    pub fn with_deadline_cap(mut self, cap: Duration) -> Self {
        self.deadline_cap = Some(cap);
        self
    }

    /// Decides with fixed answers: `answers` is the text of a Jev response
    /// (bare or in the Cloudflare envelope). No call is made (the guest's
    /// `route`). This is how rules are tested: hold the answers, vary the rules.
    pub fn route_with_answers(&self, rules: &str, message: &str, answers: &str) -> Result<Decision, RouteError> {
        let model = self.jev_model.as_deref();
        let bytes = rules.len() + message.len() + answers.len();
        let decided = self.pruner.instantiate().and_then(|mut instance| {
            instance.call_sized(bytes, |g, s| g.toolprune_pruner_judge().call_route(s, rules, message, model, answers))
        });
        self.settle(decided)
    }

    /// Decides with one live call to the scorer (under the deadline and
    /// the cancellation): by default `judge.decide`, the scorer answering
    /// the component's `scorer.score` import from inside it; with
    /// [`Form::Jobs`], `judge-job` load → its `scoring-request` → the scorer
    /// → `finish`. Without a scorer the answer is `failed` (`no-answer`),
    /// as for any scorer failure. Errors: the rules' problems, or a trap.
    pub fn route(&self, rules: &str, message: &str) -> Result<Decision, RouteError> {
        match self.form {
            Form::Import => self.route_import(rules, message),
            Form::Jobs => self.route_jobs(rules, message),
        }
    }

    fn route_import(&self, rules: &str, message: &str) -> Result<Decision, RouteError> {
        let model = self.jev_model.as_deref();
        let bytes = rules.len() + message.len();
        let mut instance = match self.pruner.checkout() {
            Ok(instance) => instance,
            Err(failure) => return self.settle(Err(failure)),
        };
        instance.set_scoring(CallScoring::new(&self.pruner, self.scorer.clone(), self.cancel.clone(), self.deadline_cap));
        let decided = instance.call_sized(bytes, |g, s| g.toolprune_pruner_judge().call_decide(s, rules, message, model));
        instance.take_scoring();
        if decided.is_ok() {
            self.pruner.checkin(instance);
        }
        self.settle(decided)
    }

    fn route_jobs(&self, rules: &str, message: &str) -> Result<Decision, RouteError> {
        let model = self.jev_model.as_deref();
        let bytes = rules.len() + message.len();
        let mut instance = match self.pruner.checkout() {
            Ok(instance) => instance,
            Err(failure) => return self.settle(Err(failure)),
        };
        let loaded = instance.call_sized(bytes, |g, s| {
            let job = g.toolprune_pruner_judge().judge_job();
            match job.call_load(&mut *s, rules, message, model)? {
                Ok(handle) => {
                    let request = job.call_scoring_request(&mut *s, handle)?;
                    Ok(Ok((handle, request)))
                }
                Err(errors) => Ok(Err(errors)),
            }
        });
        let (handle, request) = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(errors)) => {
                self.pruner.checkin(instance);
                return self.settle(Ok(Err(errors)));
            }
            Err(failure) => return self.settle(Err(failure)),
        };
        let response = match &self.scorer {
            Some(scorer) => {
                let pruner = self.pruner.clone();
                let mut retry = |facts: crate::types::RetryFacts| pruner.retry_delay(facts);
                run_host_scorer(scorer, request, &self.cancel, self.deadline_cap, &mut retry)
            }
            None => crate::types::ScoringResponse {
                answers: Ok(request.batches.iter().map(|_| crate::types::BatchAnswer::Failed(crate::types::Failure::Network)).collect()),
                elapsed_ms: 0,
            },
        };
        let decision = instance.call_sized(bytes, |g, s| {
            let decision = g.toolprune_pruner_judge().judge_job().call_finish(&mut *s, handle, &response)?;
            handle.resource_drop(&mut *s)?;
            Ok(Ok(decision))
        });
        if decision.is_ok() {
            self.pruner.checkin(instance);
        }
        self.settle(decision)
    }

    fn settle(&self, answer: Result<Result<Decision, Vec<LoadError>>, HostFailure>) -> Result<Decision, RouteError> {
        match answer {
            Ok(Ok(decision)) => {
                crate::log::write(&*self.log, &decision.log_line);
                Ok(decision)
            }
            Ok(Err(errors)) => Err(RouteError::Rules(errors)),
            Err(failure) => {
                crate::log::write(&*self.log, &self.pruner.failure_line(Operation::Judge, "", "", &failure));
                Err(RouteError::Guest(failure))
            }
        }
    }
}
