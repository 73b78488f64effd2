//! SPEC §2–§12 put together: one tool result from the host's facts to the
//! body, the outcome, the counts and the log line.
//!
//! [`Job`] is the single code path. The one-call `prune` export ([`prune`])
//! is `Job::start` → the imported `scorer.score` on the job's request (at
//! most once) → [`Job::complete`]; the `prune-job` resource hands the same
//! three steps to hosts that must not block (an event loop), so both forms
//! give the same bytes. Everything here is on the plain types of
//! [`crate::types`].

use crate::types::{
    Batch, BatchAnswer, BatchFailure, Counts, Failure, Fate, Gate, Inspection, Outcome, ParagraphReport, PruneInput,
    Pruned, ScorerChoice, ScoringRequest, ScoringResponse, ScoringStop, Shape, StoredResult, UnitInfo, UnitKind,
};
use crate::budget::Meter;
use crate::decide::{self, Verdict};
use crate::split::{split, Paragraph};
use crate::shape::{self, Classified, JsonArray, Wrapper};
use crate::{basis, batch, gates, jev};

/// What was split: the raw text, a wrapper's decoded string, or the
/// elements of a JSON array (spans in the raw text).
enum Target {
    Text,
    Wrapper(Wrapper),
    Array(JsonArray),
}

/// Everything decided before the scorer is asked.
struct Plan {
    target: Target,
    paragraphs: Vec<Paragraph>,
    batches: Vec<Vec<usize>>,
    request: ScoringRequest,
}

enum Stage {
    /// A cheap gate stopped the call: raw, no log line but for `repeated` (SPEC §2).
    Skipped(Gate),
    /// The work would pass the budget ([`crate::budget`]): raw, `failed`,
    /// `reason=budget`. `shape` and `paragraphs` as far as they got.
    OverBudget { shape: Option<Shape>, paragraphs: Option<Vec<Paragraph>> },
    /// The threshold is not one of the four: raw, `failed` (SPEC §6; hosts
    /// check user input with `settings.threshold` first).
    BadThreshold,
    /// JSON that is not a wrapper: raw, `structured` (SPEC §8).
    Structured,
    /// The basis is under 20 characters: raw, `no_basis` (SPEC §3).
    NoBasis { shape: Shape, paragraphs: Vec<Paragraph> },
    /// No paragraph is scorable (every one is over 6,000 characters or has
    /// no visible character): raw, `ok`, no call (SPEC §7).
    Unscorable { shape: Shape, paragraphs: Vec<Paragraph> },
    /// The scorer must be asked.
    Score(Plan),
}

/// The one-call form (the `prune` export): [`Job::start`], at most one call
/// of `score` (the imported scorer) when a request is due, [`Job::complete`].
/// `score` is never called for a result stopped by a gate, with nothing
/// scorable, or scored by the guest itself (offline, stub). It gets the
/// request itself, not a copy (it holds every chunk and Jev body, ≈ 2× the
/// text), for the component to hand to the import without copying again.
pub fn prune(input: PruneInput, id_number: u32, score: impl FnOnce(ScoringRequest) -> ScoringResponse) -> Pruned {
    let mut job = Job::start(input);
    let response = job.take_request().map(score);
    job.complete(response, id_number)
}

/// One tool result on its way through pruning.
pub struct Job {
    input: PruneInput,
    raw_chars: usize,
    threshold: f64,
    /// The repeat gate's key of this call (none without arguments).
    call: Option<String>,
    stage: Stage,
    /// Work counted so far ([`crate::budget`]); `complete` charges on a copy.
    meter: Meter,
}

impl Job {
    /// Apply the gates, split, and plan the batches (SPEC §2–§4). Never fails.
    pub fn start(input: PruneInput) -> Job {
        let raw_chars = input.text.chars().count();
        let threshold = input.threshold;
        let call = input.arguments.as_deref().map(|a| gates::call_key(&input.tool, a));
        let facts = gates::Facts {
            enabled: input.enabled,
            succeeded: input.succeeded,
            // A file reader, shell, editor or `omitted` itself is never
            // pruned, whatever a host declared (SPEC §2, §10, §15).
            prunable: input.prunable && !crate::settings::never_prunable(&input.tool),
            raw_chars,
            repeated: call.as_ref().is_some_and(|k| input.pruned_calls.iter().any(|p| p == k)),
        };
        let mut meter = Meter::new(input.work_budget.unwrap_or_else(|| crate::budget::budget_for(input.text.len())));
        let stage = if let Some(gate) = gates::stopped_by(facts) {
            Stage::Skipped(gate)
        } else if !crate::settings::is_threshold(threshold) {
            Stage::BadThreshold
        } else if meter.charge(input.text.len()).is_err() {
            // Classifying and splitting scan the text.
            Stage::OverBudget { shape: None, paragraphs: None }
        } else {
            match shape::classify(&input.text) {
                Classified::Structured => Stage::Structured,
                Classified::Text => plan(&input, Target::Text, &mut meter),
                // A wrapper whose string is itself a JSON array: that string
                // is JSON, which split as text would break; which level is
                // the list is ambiguous, so untouched.
                Classified::Wrapper(w) if matches!(shape::classify(&w.value), Classified::Array(_)) => {
                    Stage::Structured
                }
                Classified::Wrapper(w) => plan(&input, Target::Wrapper(w), &mut meter),
                Classified::Array(a) => plan(&input, Target::Array(a), &mut meter),
            }
        };
        Job { input, raw_chars, threshold, call, stage, meter }
    }

    /// The work for the host's scorer, or `None` when no call must be made
    /// (a gate stopped it, nothing is scorable, or the scorer is offline).
    /// An owned copy, for the `prune-job` resource's `scoring-request`.
    pub fn request(&self) -> Option<ScoringRequest> {
        self.request_ref().cloned()
    }

    /// [`Job::request`] borrowed.
    pub fn request_ref(&self) -> Option<&ScoringRequest> {
        match &self.stage {
            Stage::Score(plan) if !self.internal() => Some(&plan.request),
            _ => None,
        }
    }

    /// [`Job::request`] moved out, for [`prune`]'s one call: a host scorer's
    /// request is not read again by [`Job::complete`] (only the guest's own
    /// scorers read it, and they have none to take); afterwards
    /// [`Job::request`] is a request without batches.
    fn take_request(&mut self) -> Option<ScoringRequest> {
        if self.internal() {
            return None;
        }
        match &mut self.stage {
            Stage::Score(plan) => {
                let policy = plan.request.policy;
                Some(core::mem::replace(&mut plan.request, ScoringRequest { basis: String::new(), batches: Vec::new(), policy }))
            }
            _ => None,
        }
    }

    /// The guest scores itself (offline, stub): no request, no call, no time measured.
    fn internal(&self) -> bool {
        matches!(self.input.scorer, ScorerChoice::Offline | ScorerChoice::Stub)
    }

    /// Decide and assemble from the scorer's response (SPEC §5–§12). `None`
    /// while a call was due means the host did not score: `failed`, raw.
    /// `id_number`: the conversation's count of stored results so far + 1;
    /// an `ok` result is stored as `P{id_number}` (SPEC §10).
    pub fn complete(&self, response: Option<ScoringResponse>, id_number: u32) -> Pruned {
        let mut meter = self.meter.clone();
        let plan = match &self.stage {
            Stage::Skipped(gate) => {
                let mut out = self.unchanged(Outcome::Skipped, None, None, Scoring::none(), false);
                out.gate = Some(*gate);
                if *gate == Gate::Repeated {
                    // The one cheap gate that logs (SPEC §2), naming itself: stats count the repeats.
                    out.log_line = Some(self.log_line(&out, Some("gate=repeated")));
                }
                return out;
            }
            Stage::OverBudget { shape, paragraphs } => {
                return self.over_budget(*shape, paragraphs.as_deref(), Scoring::none(), &meter);
            }
            Stage::BadThreshold => return self.unchanged(Outcome::Failed, None, None, Scoring::none(), true),
            Stage::Structured => return self.unchanged(Outcome::Structured, None, None, Scoring::none(), true),
            Stage::NoBasis { shape, paragraphs } => {
                return self.unchanged(Outcome::NoBasis, Some(*shape), Some(paragraphs), Scoring::none(), true)
            }
            Stage::Unscorable { shape, paragraphs } => {
                return self.unchanged(Outcome::Ok, Some(*shape), Some(paragraphs), Scoring::none(), true)
            }
            Stage::Score(plan) => plan,
        };
        let shape = plan.shape();
        let response = match self.input.scorer {
            ScorerChoice::Offline | ScorerChoice::Stub if meter.charge(plan.internal_cost()).is_err() => {
                return self.over_budget(Some(shape), Some(&plan.paragraphs), Scoring::none(), &meter);
            }
            ScorerChoice::Offline => Some(plan.score_offline()),
            ScorerChoice::Stub => Some(crate::stub::scores(&plan.request)),
            ScorerChoice::Host(_) => response,
        };
        let Some(response) = response else {
            return self.unchanged(Outcome::Failed, Some(shape), Some(&plan.paragraphs), Scoring::none(), true);
        };
        let ms = response.elapsed_ms;
        let answers = match response.answers {
            Ok(answers) => answers,
            Err(stop) => {
                let outcome = match stop {
                    ScoringStop::Timeout => Outcome::Timeout,
                    ScoringStop::Cancelled => Outcome::Cancelled,
                };
                let scoring = Scoring { ms, timed: true, ..Scoring::none() };
                return self.unchanged(outcome, Some(shape), Some(&plan.paragraphs), scoring, true);
            }
        };
        if meter.charge(plan.answers_cost(&answers)).is_err() {
            // The scorer answered (its time is measured) but the answers are not read.
            let scoring = Scoring { ms, timed: !self.internal(), ..Scoring::none() };
            return self.over_budget(Some(shape), Some(&plan.paragraphs), scoring, &meter);
        }
        let mut scoring = plan.read(answers, ms);
        scoring.timed = !self.internal();
        if scoring.answered == 0 {
            return self.unchanged(Outcome::Failed, Some(shape), Some(&plan.paragraphs), scoring, true).with_work(&meter);
        }
        if self.internal() {
            scoring.calls = 0;
        }
        let drop = match decide::verdict(&scoring.scores, self.threshold) {
            Verdict::AllDropped => {
                let below = scoring.scores.iter().filter(|s| matches!(s, Some(p) if *p < self.threshold)).count();
                let mut out = self.unchanged(Outcome::AllDropped, Some(shape), Some(&plan.paragraphs), scoring, false);
                out.counts.dropped = below as u32;
                out.counts.work = meter.spent();
                out.log_line = Some(self.log_line(&out, None));
                return out;
            }
            Verdict::NothingDropped => {
                return self
                    .unchanged(Outcome::NothingDropped, Some(shape), Some(&plan.paragraphs), scoring, true)
                    .with_work(&meter)
            }
            Verdict::Drop(drop) => drop,
        };
        // Assembling the body copies the text.
        if meter.charge(self.input.text.len()).is_err() {
            return self.over_budget(Some(shape), Some(&plan.paragraphs), scoring, &meter);
        }
        let id = format!("P{}", id_number.max(1));
        let text = plan.text(&self.input.text);
        let lang = self.input.lang;
        let body = match &plan.target {
            Target::Text => crate::body::text(text, &plan.paragraphs, &drop, lang, &id).0,
            Target::Wrapper(w) => {
                let (inner, _) = crate::body::text(text, &plan.paragraphs, &drop, lang, &id);
                crate::body::wrapper(&self.input.text, w, &inner)
            }
            Target::Array(_) => crate::body::array(text, &plan.paragraphs, &drop, lang, &id),
        };
        let body_chars = body.chars().count();
        let ratio = decide::ratio(self.raw_chars, body_chars);
        let dropped = drop.iter().filter(|d| **d).count();
        if !decide::clears_floor(ratio) {
            let mut out = self.unchanged(Outcome::BelowFloor, Some(shape), Some(&plan.paragraphs), scoring, false);
            out.counts.dropped = dropped as u32;
            out.counts.work = meter.spent();
            out.ratio = Some(ratio);
            out.log_line = Some(self.log_line(&out, None));
            return out;
        }
        let timed = scoring.timed;
        let dropped_units: Vec<(u32, &str)> = (0..drop.len())
            .filter(|&i| drop[i])
            .map(|i| (i as u32, &text[plan.paragraphs[i].start..plan.paragraphs[i].end]))
            .collect();
        let record = StoredResult {
            id,
            chars: (0..drop.len()).filter(|&i| drop[i]).map(|i| plan.paragraphs[i].chars as u64).sum(),
            call: self.call.clone(),
            data: crate::omitted::encode_record(shape, plan.paragraphs.len() as u32, &dropped_units),
        };
        let mut out = Pruned {
            body: Some(body),
            outcome: Outcome::Ok,
            gate: None,
            shape: Some(shape),
            counts: Counts {
                raw_chars: self.raw_chars as u32,
                kept_chars: body_chars as u32,
                paragraphs: Some(plan.paragraphs.len() as u32),
                dropped: dropped as u32,
                calls: scoring.calls,
                jev_tokens: scoring.tokens,
                ms: timed.then_some(ms),
                work: meter.spent(),
            },
            ratio: Some(ratio),
            threshold: self.threshold,
            log_line: None,
            record: Some(record),
            paragraphs: if self.input.report { reports(&plan.paragraphs, &scoring.scores, Some(&drop)) } else { Vec::new() },
            failures: scoring.failures,
            served_model: scoring.model,
        };
        out.log_line = Some(self.log_line(&out, None));
        out
    }

    /// The raw text back, with the counts measured so far. `paragraphs`:
    /// none when the text was not split (its count is then none, not 0).
    fn unchanged(
        &self,
        outcome: Outcome,
        shape: Option<Shape>,
        paragraphs: Option<&[Paragraph]>,
        scoring: Scoring,
        log: bool,
    ) -> Pruned {
        let count = paragraphs.map(|p| p.len() as u32);
        let paragraphs = paragraphs.unwrap_or(&[]);
        let scores = if scoring.scores.is_empty() { vec![None; paragraphs.len()] } else { scoring.scores };
        let mut out = Pruned {
            body: None,
            outcome,
            gate: None,
            shape,
            counts: Counts {
                raw_chars: self.raw_chars as u32,
                kept_chars: self.raw_chars as u32,
                paragraphs: count,
                dropped: 0,
                calls: scoring.calls,
                jev_tokens: scoring.tokens,
                ms: scoring.timed.then_some(scoring.ms),
                work: self.meter.spent(),
            },
            ratio: None,
            threshold: self.threshold,
            log_line: None,
            record: None,
            paragraphs: if self.input.report { reports(paragraphs, &scores, None) } else { Vec::new() },
            failures: scoring.failures,
            served_model: scoring.model,
        };
        if log {
            out.log_line = Some(self.log_line(&out, None));
        }
        out
    }

    /// The raw text back because the work would pass the budget: `failed`,
    /// the log line with `reason=budget`, the counts as far as they got.
    fn over_budget(&self, shape: Option<Shape>, paragraphs: Option<&[Paragraph]>, scoring: Scoring, meter: &Meter) -> Pruned {
        let mut out = self.unchanged(Outcome::Failed, shape, paragraphs, scoring, false);
        out.counts.work = meter.spent();
        out.log_line = Some(self.log_line(&out, Some("reason=budget")));
        out
    }

    /// The `tool prune:` line (SPEC §12) of `p`, `detail` after its outcome.
    fn log_line(&self, p: &Pruned, detail: Option<&str>) -> String {
        let scorer = match &self.input.scorer {
            ScorerChoice::Offline => "offline",
            ScorerChoice::Stub => "stub",
            ScorerChoice::Host(name) => name.as_str(),
        };
        crate::log::prune_line(&crate::log::PruneLine {
            agent: &self.input.agent,
            tool: &self.input.tool,
            outcome: p.outcome,
            detail,
            shape: p.shape,
            counts: &p.counts,
            // A refused threshold is not written as if it had been used.
            threshold: crate::settings::is_threshold(p.threshold).then_some(p.threshold),
            ratio: p.ratio,
            scorer,
        })
    }
}

/// Split the target and plan batches, or stop at the basis / fixed-only gates.
/// Charges the request's chunks (and Jev bodies) to `meter` before building it.
fn plan(input: &PruneInput, target: Target, meter: &mut Meter) -> Stage {
    let shape = shape_of(&target);
    let text = match &target {
        Target::Text | Target::Array(_) => input.text.as_str(),
        Target::Wrapper(w) => w.value.as_str(),
    };
    let paragraphs = match &target {
        Target::Array(a) => a.units(text),
        _ => split(text),
    };
    let basis = basis::basis(&input.request);
    if !basis::is_enough(basis) {
        return Stage::NoBasis { shape, paragraphs };
    }
    let batches = batch::batches(&paragraphs);
    if batches.is_empty() {
        return Stage::Unscorable { shape, paragraphs };
    }
    let model = input.jev_model.as_deref();
    // The guest's own scorers read the chunks in the guest: no request body to encode.
    let offline = matches!(input.scorer, ScorerChoice::Offline | ScorerChoice::Stub);
    let chunk_bytes: usize = batches.iter().flatten().map(|&i| paragraphs[i].end - paragraphs[i].start).sum();
    // The chunks are copied, and for a host scorer encoded once more as Jev bodies.
    if meter.charge(if offline { chunk_bytes } else { 2 * chunk_bytes }).is_err() {
        return Stage::OverBudget { shape: Some(shape), paragraphs: Some(paragraphs) };
    }
    let request = ScoringRequest {
        basis: basis.to_string(),
        batches: batches
            .iter()
            .map(|indices| {
                let chunks: Vec<(usize, &str)> =
                    indices.iter().map(|&i| (i, crate::split::content(&text[paragraphs[i].start..paragraphs[i].end]))).collect();
                Batch {
                    paragraphs: indices.iter().map(|&i| i as u32).collect(),
                    chunks: chunks.iter().map(|(_, t)| t.to_string()).collect(),
                    jev_body: if offline { String::new() } else { jev::encode_request(model, basis, &chunks) },
                }
            })
            .collect(),
        policy: jev::transport_policy(),
    };
    Stage::Score(Plan { target, paragraphs, batches, request })
}

/// What the answers amounted to.
struct Scoring {
    /// Per paragraph of the text (empty when nothing was read).
    scores: Vec<Option<f64>>,
    /// Batches answered with usable scores.
    answered: u32,
    /// Scorer calls counted in the log (`answered`, but 0 offline).
    calls: u32,
    tokens: u64,
    ms: u32,
    /// A host scorer answered, so `ms` was measured (SPEC §12: the log line
    /// writes `ms=-` otherwise: offline scoring, gates, no answer).
    timed: bool,
    failures: Vec<BatchFailure>,
    /// The model the Jev service named in its answers (the first that did).
    model: Option<String>,
}

impl Scoring {
    fn none() -> Scoring {
        Scoring { scores: Vec::new(), answered: 0, calls: 0, tokens: 0, ms: 0, timed: false, failures: Vec::new(), model: None }
    }
}

fn shape_of(target: &Target) -> Shape {
    match target {
        Target::Text => Shape::Text,
        Target::Wrapper(_) => Shape::JsonWrapper,
        Target::Array(_) => Shape::JsonArray,
    }
}

/// Work units of decoding one paragraph's answer in a Jev body.
const JEV_ANSWER_UNITS: usize = 64;

impl Pruned {
    /// The counts' `work` set to what `meter` spent.
    fn with_work(mut self, meter: &Meter) -> Pruned {
        self.counts.work = meter.spent();
        self
    }
}

impl Plan {
    fn shape(&self) -> Shape {
        shape_of(&self.target)
    }

    /// Work units of reading the host's answers: [`JEV_ANSWER_UNITS`] per
    /// paragraph of each batch answered with a Jev body (scores cost nothing
    /// worth counting). Counted from the request, never from the body's
    /// bytes, which differ between servers that write the same answer
    /// (spacing, key order): the work must be the same in every host.
    fn answers_cost(&self, answers: &[BatchAnswer]) -> usize {
        self.batches
            .iter()
            .zip(answers)
            .filter(|(_, a)| matches!(a, BatchAnswer::JevResponse(_)))
            .map(|(batch, _)| batch.len() * JEV_ANSWER_UNITS)
            .sum()
    }

    /// Work units of scoring in the guest (offline, stub): every chunk read
    /// once, and the basis once per chunk.
    ///
    /// The basis is counted in characters (≈ its terms: a word or, in CJK
    /// text, a character bigram), not bytes: a Japanese basis is 3 bytes a
    /// character, and counted in bytes it made a 2,000-character request on
    /// a 300 KB page of short paragraphs pass the budget.
    fn internal_cost(&self) -> usize {
        let chunks = self.request.batches.iter().map(|b| b.chunks.len()).sum::<usize>();
        let bytes = self.request.batches.iter().flat_map(|b| b.chunks.iter().map(String::len)).sum::<usize>();
        bytes.saturating_add(chunks.saturating_mul(self.request.basis.chars().count()))
    }

    fn text<'a>(&'a self, raw: &'a str) -> &'a str {
        match &self.target {
            Target::Text | Target::Array(_) => raw,
            Target::Wrapper(w) => &w.value,
        }
    }

    /// Score every batch with the guest's offline scorer: IDF over all the
    /// scorable paragraphs of the text at once, answered per batch.
    fn score_offline(&self) -> ScoringResponse {
        let chunks: Vec<&str> =
            self.request.batches.iter().flat_map(|b| b.chunks.iter().map(String::as_str)).collect();
        // Abstaining (no evidence, SPEC §5), every paragraph is unscored: `nothing_dropped`.
        let mut scores = match crate::offline::score_or_abstain(&self.request.basis, &chunks) {
            Some(scores) => scores.into_iter().map(Some).collect::<Vec<_>>().into_iter(),
            None => vec![None; chunks.len()].into_iter(),
        };
        let answers = self
            .request
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(scores.by_ref().take(b.chunks.len()).collect()))
            .collect();
        ScoringResponse { answers: Ok(answers), elapsed_ms: 0 }
    }

    /// Read one answer per batch; a missing answer fails its batch.
    fn read(&self, answers: Vec<BatchAnswer>, ms: u32) -> Scoring {
        let mut scoring = Scoring { scores: vec![None; self.paragraphs.len()], ms, ..Scoring::none() };
        let mut answers = answers.into_iter();
        for (b, indices) in self.batches.iter().enumerate() {
            let fail = |scoring: &mut Scoring, status: Option<u16>, class: &str| {
                scoring.failures.push(BatchFailure { batch: b as u32, status, class: jev::class_of(class) })
            };
            let scores: Vec<Option<f64>> = match answers.next() {
                None => {
                    fail(&mut scoring, None, "no-answer");
                    continue;
                }
                Some(BatchAnswer::Failed(Failure::Http(status))) => {
                    fail(&mut scoring, Some(status), jev::failure_class(Some(status)));
                    continue;
                }
                Some(BatchAnswer::Failed(Failure::Network)) => {
                    fail(&mut scoring, None, jev::failure_class(None));
                    continue;
                }
                Some(BatchAnswer::Scores(scores)) => scores,
                Some(BatchAnswer::JevResponse(body)) => match jev::decode_response(&body, indices) {
                    Ok(decoded) => {
                        scoring.tokens += decoded.input_tokens;
                        if scoring.model.is_none() {
                            scoring.model = decoded.model;
                        }
                        decoded.scores
                    }
                    Err(_) => {
                        fail(&mut scoring, None, "undecodable");
                        continue;
                    }
                },
            };
            scoring.answered += 1;
            scoring.calls += 1;
            for (k, &i) in indices.iter().enumerate() {
                scoring.scores[i] = scores.get(k).copied().flatten().filter(|p| p.is_finite() && (0.0..=1.0).contains(p));
            }
        }
        scoring
    }
}

fn reports(paragraphs: &[Paragraph], scores: &[Option<f64>], drop: Option<&[bool]>) -> Vec<ParagraphReport> {
    paragraphs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let score = scores.get(i).copied().flatten();
            let fate = if p.fixed {
                Fate::Fixed
            } else if drop.is_some_and(|d| d[i]) {
                Fate::Dropped
            } else if score.is_none() {
                Fate::Unscored
            } else {
                Fate::Kept
            };
            ParagraphReport { index: i as u32, chars: p.chars as u32, score, fate }
        })
        .collect()
}

/// How pruning would split `text` (the `inspect` export; SPEC §14): the
/// shape, and the units exactly as they are split and scored — a wrapper's
/// decoded string's paragraphs (spans in that string, and the string's span
/// in the raw text), a JSON array's elements (spans in the raw text), or
/// nothing for JSON that is not pruned (`structured`).
pub fn inspect(text: &str) -> Inspection {
    let (shape, wrapper_span, target, units) = match shape::classify(text) {
        Classified::Structured => return Inspection { shape: None, wrapper_span: None, units: Vec::new() },
        Classified::Wrapper(w) if matches!(shape::classify(&w.value), Classified::Array(_)) => {
            return Inspection { shape: None, wrapper_span: None, units: Vec::new() }
        }
        Classified::Text => (Shape::Text, None, text, split(text)),
        Classified::Wrapper(w) => {
            let span = Some((w.span.start as u32, w.span.end as u32));
            let units = split(&w.value);
            // The units' spans are in the decoded string, returned below.
            return Inspection { shape: Some(Shape::JsonWrapper), wrapper_span: span, units: unit_infos(&w.value, &units) };
        }
        Classified::Array(a) => {
            let units = a.units(text);
            (Shape::JsonArray, None, text, units)
        }
    };
    Inspection { shape: Some(shape), wrapper_span, units: unit_infos(target, &units) }
}

fn unit_infos(text: &str, units: &[Paragraph]) -> Vec<UnitInfo> {
    let mut char_at = 0usize;
    let mut byte_at = 0usize;
    units
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // Units tile a text, but a JSON array's elements leave gaps
            // (brackets, commas): count the characters in between.
            char_at += text[byte_at..p.start].chars().count();
            let info = UnitInfo {
                index: i as u32,
                byte_start: p.start as u32,
                byte_end: p.end as u32,
                char_start: char_at as u32,
                char_end: (char_at + p.chars) as u32,
                kind: if p.fixed {
                    UnitKind::Fixed
                } else if !p.visible {
                    UnitKind::Blank
                } else {
                    UnitKind::Scored
                },
            };
            char_at += p.chars;
            byte_at = p.end;
            info
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Lang;
    use std::cell::Cell;

    const REQUEST: &str = "How do I configure the retry limit for the upload client?";

    /// Sixteen paragraphs of ~310 characters: odd ones about something else.
    fn text() -> String {
        (0..16)
            .map(|i| {
                if i % 2 == 0 {
                    format!("Part {i}. The upload client retry limit is configured with the retry setting of the upload client; the retry limit counts attempts per part and the client waits between attempts. {}", "Configure the retry limit in the client file. ".repeat(3))
                } else {
                    format!("Part {i}. Gardening notes: tomatoes need sun, water in the morning, and a stake once they grow tall; basil likes the same bed. {}", "Mulch keeps the soil moist. ".repeat(6))
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn input(scorer: ScorerChoice) -> PruneInput {
        PruneInput {
            request: REQUEST.to_string(),
            text: text(),
            enabled: true,
            succeeded: true,
            prunable: true,
            threshold: 0.2,
            lang: Lang::En,
            scorer,
            jev_model: None,
            agent: "test".to_string(),
            tool: "fetch".to_string(),
            report: false,
            arguments: Some(r#"{"url": "https://example.org/"}"#.to_string()),
            pruned_calls: Vec::new(),
            work_budget: None,
        }
    }

    /// Scores every paragraph of the request: odd ones 0.0, even ones 1.0.
    fn scripted(request: &ScoringRequest) -> ScoringResponse {
        let answers = request
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(b.paragraphs.iter().map(|&i| Some(if i % 2 == 1 { 0.0 } else { 1.0 })).collect()))
            .collect();
        ScoringResponse { answers: Ok(answers), elapsed_ms: 7 }
    }

    fn host() -> ScorerChoice {
        ScorerChoice::Host("scripted".to_string())
    }

    /// `prune` with a scorer that counts its calls.
    fn prune_counting(input: PruneInput) -> (Pruned, u32) {
        let calls = Cell::new(0);
        let out = prune(input, 1, |r| {
            calls.set(calls.get() + 1);
            scripted(&r)
        });
        (out, calls.get())
    }

    #[test]
    fn the_one_call_form_scores_once_and_gives_the_job_forms_bytes() {
        let (one_call, calls) = prune_counting(input(host()));
        assert_eq!(calls, 1);
        assert_eq!(one_call.outcome, Outcome::Ok);
        let job = Job::start(input(host()));
        let response = scripted(job.request().as_ref().unwrap());
        let by_job = job.complete(Some(response), 1);
        assert_eq!(one_call, by_job);
    }

    #[test]
    fn no_call_for_a_gated_result_nor_for_the_guests_own_scorers() {
        for (case, input) in [
            ("disabled", PruneInput { enabled: false, ..input(host()) }),
            ("too short", PruneInput { text: "short".to_string(), ..input(host()) }),
            ("no basis", PruneInput { request: "ok".to_string(), ..input(host()) }),
            ("structured", PruneInput { text: format!("{{\"a\": {:?}, \"b\": 1, \"c\": {:?}}}", "x".repeat(3000), "y".repeat(3000)), ..input(host()) }),
            ("offline", input(ScorerChoice::Offline)),
            ("stub", input(ScorerChoice::Stub)),
        ] {
            let (out, calls) = prune_counting(input);
            assert_eq!(calls, 0, "{case}: {:?}", out.outcome);
        }
    }

    #[test]
    fn a_never_prunable_tool_passes_whole_whatever_the_host_declared() {
        for tool in ["omitted", "mcp__toolprune__omitted", "read_file", "mcp_fs_read_file", "Bash", "Edit"] {
            let (out, calls) = prune_counting(PruneInput { tool: tool.to_string(), ..input(host()) });
            assert_eq!((out.outcome, out.gate, calls), (Outcome::Skipped, Some(Gate::NotPrunable), 0), "{tool}");
            assert_eq!(out.body, None, "{tool}");
        }
        assert_eq!(prune_counting(PruneInput { tool: "mcp__docs__fetch".to_string(), ..input(host()) }).0.outcome, Outcome::Ok);
    }

    #[test]
    fn the_stub_scores_in_the_guest_and_logs_its_name() {
        let (out, _) = prune_counting(input(ScorerChoice::Stub));
        let line = out.log_line.unwrap();
        assert!(line.ends_with(" scorer=stub"), "{line}");
        assert_eq!(out.counts.calls, 0);
        assert_eq!(out.counts.ms, None, "nothing was timed: {line}");
    }

    #[test]
    fn a_repeated_call_passes_unpruned_with_a_log_line_and_a_new_call_still_prunes() {
        let (first, _) = prune_counting(input(host()));
        let key = first.record.as_ref().and_then(|r| r.call.clone()).expect("an ok result carries its call's key");
        let again = PruneInput { pruned_calls: vec![key.clone()], ..input(host()) };
        let (second, calls) = prune_counting(again);
        assert_eq!((second.outcome, second.gate, calls), (Outcome::Skipped, Some(Gate::Repeated), 0));
        assert_eq!(second.body, None, "the whole text");
        let line = second.log_line.expect("the repeat gate writes a line");
        assert!(line.contains(" name=fetch outcome=skipped gate=repeated raw_chars="), "{line}");
        assert!(line.contains(" paragraphs=- "), "{line}");
        let other = PruneInput {
            pruned_calls: vec![key],
            arguments: Some(r#"{"url": "https://example.org/other"}"#.to_string()),
            ..input(host())
        };
        assert_eq!(prune_counting(other).0.outcome, Outcome::Ok);
        let unknown = PruneInput { arguments: None, pruned_calls: vec![first.record.unwrap().call.unwrap()], ..input(host()) };
        assert_eq!(prune_counting(unknown).0.outcome, Outcome::Ok, "no arguments: no repeat detected");
    }

    #[test]
    fn the_work_does_not_depend_on_how_the_server_spaced_its_answer() {
        let answer = |spaced: bool| {
            move |request: ScoringRequest| {
                let answers = request
                    .batches
                    .iter()
                    .map(|b| {
                        let scores: Vec<String> = b.paragraphs.iter().map(|i| format!(r#""p{i}": {{"type": "noul", "noul": {}}}"#, i % 2)).collect();
                        let body = format!(r#"{{"model": "jev-1.13.0", "answers": {{{}}}, "usage": {{"input_tokens": 9}}}}"#, scores.join(", "));
                        BatchAnswer::JevResponse(if spaced { body } else { body.replace(": ", ":").replace(", ", ",") })
                    })
                    .collect();
                ScoringResponse { answers: Ok(answers), elapsed_ms: 1 }
            }
        };
        let spaced = prune(input(host()), 1, answer(true));
        let compact = prune(input(host()), 1, answer(false));
        assert_eq!(spaced.outcome, compact.outcome);
        assert_eq!(spaced.counts.work, compact.counts.work);
        // Refused at reading the answers (one unit short of reading them and
        // copying the body): the scorer answered, so its time is in the line.
        let work = spaced.counts.work;
        let short = PruneInput { work_budget: Some(work - text().len() as u64 - 1), ..input(host()) };
        let at_answers = prune(short, 1, answer(true));
        assert_eq!(at_answers.outcome, Outcome::Failed);
        let line = at_answers.log_line.unwrap();
        assert!(line.contains(" outcome=failed reason=budget shape=text ") && line.contains(" ms=1 "), "{line}");
    }

    /// A tester's case: the longest basis (2,000 characters of Japanese,
    /// ≈ 6 KB) on a 300 KB page of ≈ 125-character paragraphs is ordinary
    /// work, not out of proportion to the text.
    #[test]
    fn the_longest_japanese_basis_on_a_page_of_short_paragraphs_stays_within_the_budget() {
        let basis: String = "ストリームの再開とヘッダーの送り方を教えてください。".chars().cycle().take(2_000).collect();
        let paragraph = "The client resumes the stream with the Last-Event-ID header; the server replays what was missed since then.";
        let text = (0..).map(|i| format!("{i} {paragraph}")).take_while({
            let mut size = 0;
            move |p: &String| {
                size += p.len() + 2;
                size <= 300_000
            }
        });
        let text: Vec<String> = text.collect();
        let text = text.join("\n\n");
        for scorer in [ScorerChoice::Offline, ScorerChoice::Stub] {
            let out = prune(PruneInput { request: basis.clone(), text: text.clone(), ..input(scorer) }, 1, |_| unreachable!());
            assert_ne!(out.outcome, Outcome::Failed, "{:?}", out.log_line);
            assert!(out.counts.work < crate::budget::budget_for(text.len()) / 2, "{} of {}", out.counts.work, crate::budget::budget_for(text.len()));
        }
    }

    #[test]
    fn the_work_budget_decides_at_its_edge_the_same_in_both_forms() {
        let (ok, _) = prune_counting(input(host()));
        assert_eq!(ok.outcome, Outcome::Ok);
        let work = ok.counts.work;
        assert!(work > text().len() as u64, "{work}");
        let exact = prune_counting(PruneInput { work_budget: Some(work), ..input(host()) }).0;
        assert_eq!((exact.outcome, exact.counts.work), (Outcome::Ok, work));
        let (short, calls) = prune_counting(PruneInput { work_budget: Some(work - 1), ..input(host()) });
        assert_eq!((short.outcome, short.body.clone()), (Outcome::Failed, None));
        assert_eq!(calls, 1, "the last phase (the body) was refused after scoring");
        let line = short.log_line.unwrap();
        assert!(line.contains(" outcome=failed reason=budget shape=text "), "{line}");
        let (tiny, calls) = prune_counting(PruneInput { work_budget: Some(10), ..input(host()) });
        assert_eq!((tiny.outcome, calls, tiny.counts.paragraphs), (Outcome::Failed, 0, None));
        let job = Job::start(PruneInput { work_budget: Some(work - 1), ..input(host()) });
        let response = scripted(job.request().as_ref().unwrap());
        assert_eq!(job.complete(Some(response), 1).log_line.unwrap(), line);
    }
}
