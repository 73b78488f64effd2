//! The judge router from the host (seed 003 §5, SPEC §13, `wit/judge.wit`):
//! a rules file and a message in, a decision out.
//!
//! Every rule is the guest's (the TOML, its validation, the grammar, the Jev
//! body, the reading of the answer, the log line). The host reads files,
//! makes the one Jev call with the same [`Scorer`] it prunes with, and
//! writes the log line.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolprune::judge::{Judge, Verdict};
//! use toolprune::{Pruner, StderrLog, StubScorer};
//!
//! let judge = Judge::new(Pruner::shared()?, Arc::new(StubScorer));
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

use crate::engine::{GuestFailure, Limits, Pruner};
use crate::log::{LogSink, StderrLog};
use crate::scorer::Scorer;

pub use crate::engine::wit::exports::toolprune::pruner::judge::{
    Answer, Decision, LoadError, QuestionKind, Verdict,
};

/// Why no decision came back.
#[derive(Clone, Debug)]
pub enum RouteError {
    /// The rules file is not valid: every problem, in line order.
    Rules(Vec<LoadError>),
    /// The guest trapped or hit a limit (logged as `judge: rule=- failed
    /// reason=guest_trap`).
    Guest(GuestFailure),
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

/// `routed`, `returned` or `failed`.
pub fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Routed(_) => "routed",
        Verdict::Returned(_) => "returned",
        Verdict::Failed(_) => "failed",
    }
}

/// `choice`, `noul` or `score`.
pub fn kind_name(kind: QuestionKind) -> &'static str {
    match kind {
        QuestionKind::Choice => "choice",
        QuestionKind::Noul => "noul",
        QuestionKind::Score => "score",
    }
}

/// Judges messages with a rules file. Each call runs in a fresh instance of
/// the component (a judgement keeps nothing between calls).
pub struct Judge {
    pruner: Pruner,
    scorer: Arc<dyn Scorer>,
    jev_model: Option<String>,
    limits: Limits,
    log: Arc<dyn LogSink>,
}

impl Judge {
    /// A judge whose one call goes to `scorer` (a Jev scorer: one that
    /// answers with scores cannot judge, and the decision is `failed`,
    /// `no-answer`). Logs to stderr.
    pub fn new(pruner: &Pruner, scorer: Arc<dyn Scorer>) -> Self {
        Judge {
            pruner: pruner.clone(),
            scorer,
            jev_model: None,
            limits: Limits::default(),
            log: Arc::new(StderrLog),
        }
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

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Decides with fixed answers: `answers` is the text of a Jev response
    /// (bare or in the Cloudflare envelope). No call is made (the `route`
    /// export with answers). This is how rules are tested: hold the answers,
    /// vary the rules.
    pub fn route_with_answers(
        &self,
        rules: &str,
        message: &str,
        answers: &str,
    ) -> Result<Decision, RouteError> {
        let model = self.jev_model.as_deref();
        self.settle(
            self.call(|guest, store| guest.call_route(store, rules, message, model, Some(answers))),
        )
    }

    /// Decides with one call to the scorer, made by the guest through the
    /// `scorer` import (the `route` export without answers).
    pub fn route(&self, rules: &str, message: &str) -> Result<Decision, RouteError> {
        let model = self.jev_model.as_deref();
        self.settle(self.call(|guest, store| guest.call_route(store, rules, message, model, None)))
    }

    /// The same decision through the `judge-job` resource, the path of hosts
    /// that must not block: `load`, its `scoring-request` to
    /// [`Scorer::score`] (outside the guest), `finish`.
    pub fn route_via_job(&self, rules: &str, message: &str) -> Result<Decision, RouteError> {
        let model = self.jev_model.as_deref();
        let mut instance = match self.pruner.instantiate(self.scorer.clone(), self.limits) {
            Ok(instance) => instance,
            Err(failure) => return self.settle(Err(failure)),
        };
        let loaded = instance.call_judge(|guest, store| {
            let job = guest.judge_job();
            match job.call_load(&mut *store, rules, message, model)? {
                Ok(handle) => {
                    let request = job.call_scoring_request(&mut *store, handle)?;
                    Ok(Ok((handle, request)))
                }
                Err(errors) => Ok(Err(errors)),
            }
        });
        let (handle, request) = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(errors)) => return self.settle(Ok(Err(errors))),
            Err(failure) => return self.settle(Err(failure)),
        };
        let response = self.scorer.score(&request);
        let decision = instance.call_judge(|guest, store| {
            let decision = guest
                .judge_job()
                .call_finish(&mut *store, handle, &response)?;
            handle.resource_drop(&mut *store)?;
            Ok(Ok(decision))
        });
        self.settle(decision)
    }

    fn call<R>(
        &self,
        f: impl FnOnce(
            &crate::engine::JudgeGuest,
            &mut wasmtime::Store<crate::engine::HostState>,
        ) -> wasmtime::Result<R>,
    ) -> Result<R, GuestFailure> {
        let mut instance = self.pruner.instantiate(self.scorer.clone(), self.limits)?;
        instance.call_judge(f)
    }

    fn settle(
        &self,
        answer: Result<Result<Decision, Vec<LoadError>>, GuestFailure>,
    ) -> Result<Decision, RouteError> {
        match answer {
            Ok(Ok(decision)) => {
                self.log.line(&decision.log_line);
                Ok(decision)
            }
            Ok(Err(errors)) => Err(RouteError::Rules(errors)),
            Err(failure) => {
                self.log
                    .line(&format!("judge: rule=- failed {}", failure.log_fields()));
                Err(RouteError::Guest(failure))
            }
        }
    }
}

/// A decision as JSON (`toolprune route --json`).
pub fn decision_json(decision: &Decision) -> serde_json::Value {
    let (to, note, reason) = match &decision.verdict {
        Verdict::Routed(to) => (Some(to.clone()), None, None),
        Verdict::Returned(note) => (None, note.clone(), None),
        Verdict::Failed(reason) => (None, None, Some(reason.clone())),
    };
    let answers: Vec<serde_json::Value> = decision
        .answers
        .iter()
        .map(|a| {
            serde_json::json!({
                "question": a.question,
                "type": kind_name(a.kind),
                "value": a.value,
                "p": a.p,
                "margin": a.margin,
                "mean": a.mean,
            })
        })
        .collect();
    serde_json::json!({
        "verdict": verdict_name(&decision.verdict),
        "to": to,
        "note": note,
        "reason": reason,
        "rule": decision.rule,
        "answers": answers,
        "jev_tokens": decision.jev_tokens,
        "log": decision.log_line,
    })
}
