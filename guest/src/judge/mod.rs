//! The judge router (seed 003 §5, SPEC §13): typed questions and rules a
//! person wrote decide where a message goes, with one Jev call.
//!
//! - [`rules`]: the rules file, read by [`crate::toml_file`] (the `toml` crate) and validated;
//! - [`expr`]: the `when` grammar, its checker and its evaluation;
//! - [`codec`]: the Jev request and the reading of its answers;
//! - [`log`]: the `judge:` line.
//!
//! [`Job`] is the single code path: load → [`Job::scoring_request`] (the one
//! call, as a scoring request with a single batch whose `jev-body` is the
//! judge's body) → [`Job::finish`]. [`decide_with`] (the `decide` export) is
//! this job with the imported `scorer.score` in the middle; [`route`] is it
//! with fixed answers.
//!
//! A scorer failure is [`Verdict::Failed`] with its class, never `otherwise`:
//! "could not judge" and "no rule matched" are different events.

pub mod codec;
pub mod expr;
pub mod log;
pub mod rules;


use crate::jev;
use crate::types::{
    self, Batch, BatchAnswer, Decision, Failure, QuestionKind, ScoringRequest, ScoringResponse, ScoringStop,
};

pub use expr::Answer;
pub use rules::{Action, LoadError, Rules};

/// What the judge decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Routed(Vec<String>),
    Returned(Option<String>),
    /// The failure class (`http-5xx`, `timeout`, `no-answer`, …).
    Failed(&'static str),
}

/// A decision with everything a host reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    /// 1-based rule number; none for `[otherwise]` and failures.
    pub rule: Option<u32>,
    /// Every declared question's answer, in the file's order; empty on failure.
    pub answers: Vec<(String, Answer)>,
    pub jev_tokens: u64,
    pub log_line: String,
}

/// What came back for the one call.
#[derive(Clone, Copy, Debug)]
pub enum Reply<'a> {
    /// A 2xx body (or a fixed answers file).
    Body(&'a str),
    /// No usable body: the failure class.
    Failed(&'static str),
}

impl<'a> Reply<'a> {
    /// The reply carried by a host's scoring response: its first answer.
    pub fn of(response: &'a ScoringResponse) -> Reply<'a> {
        match &response.answers {
            Err(ScoringStop::Timeout) => Reply::Failed("timeout"),
            Err(ScoringStop::Cancelled) => Reply::Failed("cancelled"),
            Ok(answers) => match answers.first() {
                Some(BatchAnswer::JevResponse(body)) => Reply::Body(body),
                Some(BatchAnswer::Failed(Failure::Http(status))) => {
                    Reply::Failed(jev::failure_class(Some(*status)))
                }
                Some(BatchAnswer::Failed(Failure::Network)) => {
                    Reply::Failed(jev::failure_class(None))
                }
                // A scorer that answers with scores is not Jev: it cannot judge.
                Some(BatchAnswer::Scores(_)) | None => Reply::Failed("no-answer"),
            },
        }
    }
}

/// Decides from the reply: the first rule that holds, else `[otherwise]`.
pub fn decide(rules: &Rules, reply: Reply<'_>) -> Judgement {
    let decoded = match reply {
        Reply::Body(body) => {
            codec::decode_response(body, &rules.questions).map_err(codec::DecodeError::class)
        }
        Reply::Failed(class) => Err(class),
    };
    let decoded = match decoded {
        Ok(decoded) => decoded,
        Err(class) => {
            let verdict = Verdict::Failed(class);
            let log_line = log::line(&[], None, &verdict);
            return Judgement {
                verdict,
                rule: None,
                answers: Vec::new(),
                jev_tokens: 0,
                log_line,
            };
        }
    };
    let answers: Vec<(String, Answer)> = rules
        .questions
        .iter()
        .map(|q| q.name.clone())
        .zip(decoded.answers)
        .collect();
    let answer_of = |name: &str| answers.iter().find(|(n, _)| n == name).map(|(_, a)| a);
    let matched = rules
        .rules
        .iter()
        .position(|rule| expr::eval(&rule.when, &answer_of));
    let (rule, action) = match matched {
        Some(i) => (u32::try_from(i + 1).ok(), &rules.rules[i].action),
        None => (None, &rules.otherwise),
    };
    let verdict = match action {
        Action::Route(to) => Verdict::Routed(to.clone()),
        Action::Return(note) => Verdict::Returned(note.clone()),
    };
    let named: Vec<(&str, &Answer)> = answers.iter().map(|(n, a)| (n.as_str(), a)).collect();
    let log_line = log::line(&named, rule, &verdict);
    Judgement {
        verdict,
        rule,
        answers,
        jev_tokens: decoded.input_tokens,
        log_line,
    }
}

/// One message on its way through the rules (the `judge-job` resource).
pub struct Job {
    rules: Rules,
    message: String,
    model: Option<String>,
}

impl Job {
    /// Loads and validates the rules; keeps the message.
    pub fn load(
        rules: &str,
        message: String,
        model: Option<String>,
    ) -> Result<Job, Vec<LoadError>> {
        Ok(Job {
            rules: rules::load(rules)?,
            message,
            model,
        })
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The Jev request body.
    pub fn body(&self) -> String {
        codec::encode_request(self.model.as_deref(), &self.message, &self.rules.questions)
    }

    /// The one call: a single batch without paragraphs; `jev-body` is [`Job::body`].
    pub fn scoring_request(&self) -> ScoringRequest {
        ScoringRequest {
            basis: String::new(),
            batches: vec![Batch {
                paragraphs: Vec::new(),
                chunks: Vec::new(),
                jev_body: self.body(),
            }],
            policy: jev::transport_policy(),
        }
    }

    pub fn decide(&self, reply: Reply<'_>) -> Judgement {
        decide(&self.rules, reply)
    }

    /// Decides from the host's response (the `finish` method).
    pub fn finish(&self, response: ScoringResponse) -> Decision {
        decision(&self.rules, self.decide(Reply::of(&response)))
    }
}

/// The one-shot `route` export: fixed `answers` (a Jev response text), or
/// one call through `score` (the imported scorer).
pub fn route(rules: &str, message: String, model: Option<String>, answers: &str) -> Result<Decision, Vec<LoadError>> {
    let job = Job::load(rules, message, model)?;
    let judgement = job.decide(Reply::Body(answers));
    Ok(decision(&job.rules, judgement))
}

/// The one-call `decide` export: load, one call of `score` (the imported
/// scorer) with [`Job::scoring_request`], decide. A rules file with problems
/// makes no call.
pub fn decide_with(
    rules: &str,
    message: String,
    model: Option<String>,
    score: impl FnOnce(ScoringRequest) -> ScoringResponse,
) -> Result<Decision, Vec<LoadError>> {
    let job = Job::load(rules, message, model)?;
    let response = score(job.scoring_request());
    Ok(job.finish(response))
}

/// The judgement as the contract's [`Decision`]: each answer with its
/// question's kind, the failure class by its WIT name.
fn decision(rules: &Rules, j: Judgement) -> Decision {
    let answers = j
        .answers
        .iter()
        .map(|(name, answer)| {
            let kind = match rules.question(name).map(|q| &q.kind) {
                Some(rules::Kind::Choice { .. }) => QuestionKind::Choice,
                Some(rules::Kind::Score { .. }) => QuestionKind::Score,
                _ => QuestionKind::Noul,
            };
            let (value, p, margin, mean) = match answer {
                Answer::Choice { option, p, margin } => {
                    (Some(option.clone()), *p, Some(*margin), None)
                }
                Answer::Noul { p } => (None, *p, None, None),
                Answer::Score {
                    level,
                    p,
                    margin,
                    mean,
                } => (Some(level.to_string()), *p, Some(*margin), Some(*mean)),
            };
            types::Answer {
                question: name.clone(),
                kind,
                value,
                p,
                margin,
                mean,
            }
        })
        .collect();
    let verdict = match j.verdict {
        Verdict::Routed(to) => types::Verdict::Routed(to),
        Verdict::Returned(note) => types::Verdict::Returned(note),
        Verdict::Failed(class) => types::Verdict::Failed(jev::class_of(class)),
    };
    Decision {
        verdict,
        rule: j.rule,
        answers,
        jev_tokens: j.jev_tokens,
        log_line: j.log_line,
    }
}

#[cfg(test)]
mod tests;
