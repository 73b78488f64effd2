//! SPEC §2–§12 put together: one tool result from the host's facts to the
//! body, the outcome, the counts and the log line.
//!
//! [`Job`] is the single code path. The one-shot `prune` export is
//! `Job::start` → the imported scorer on [`Job::request`] → [`Job::complete`];
//! the `prune-job` resource hands the same three steps to hosts that must not
//! block (Node, asyncio).

use crate::component::exports::toolprune::pruner::pruner::{
    BatchFailure, Counts, Fate, Outcome, ParagraphInfo, ParagraphKind, ParagraphReport, PruneInput, Pruned,
    ScorerChoice, Shape, StoredResult,
};
use crate::component::toolprune::pruner::types::{
    Batch, BatchAnswer, Failure, ScoringRequest, ScoringResponse, ScoringStop,
};
use crate::decide::{self, Verdict};
use crate::split::{split, Paragraph};
use crate::array::{self, JsonArray};
use crate::wrapper::{self, Classified, Wrapper};
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
    /// A cheap gate stopped the call: raw, no log line (SPEC §2).
    Skipped,
    /// JSON that is not a wrapper: raw, `structured` (SPEC §8).
    Structured,
    /// The basis is under 20 characters: raw, `no_basis` (SPEC §3).
    NoBasis { shape: Shape, paragraphs: Vec<Paragraph> },
    /// Every paragraph is over 6,000 characters: raw, `ok`, no call (SPEC §7).
    Unscorable { shape: Shape, paragraphs: Vec<Paragraph> },
    /// The scorer must be asked.
    Score(Plan),
}

/// One tool result on its way through pruning.
pub struct Job {
    input: PruneInput,
    raw_chars: usize,
    threshold: f64,
    stage: Stage,
}

impl Job {
    /// Apply the gates, split, and plan the batches (SPEC §2–§4). Never fails.
    pub fn start(input: PruneInput) -> Job {
        let raw_chars = input.text.chars().count();
        let threshold = decide::threshold(input.threshold);
        let facts = gates::Facts {
            enabled: input.enabled,
            succeeded: input.succeeded,
            prunable: input.prunable,
            raw_chars,
        };
        let stage = if !gates::pass(facts) {
            Stage::Skipped
        } else {
            match wrapper::classify(&input.text) {
                Classified::Structured => Stage::Structured,
                Classified::Text => plan(&input, Target::Text),
                // A wrapper whose string is itself a JSON array would be read
                // back as an array by `omitted` (it re-classifies the stored
                // text): ambiguous, so untouched.
                Classified::Wrapper(w) if matches!(wrapper::classify(&w.value), Classified::Array(_)) => {
                    Stage::Structured
                }
                Classified::Wrapper(w) => plan(&input, Target::Wrapper(w)),
                Classified::Array(a) => plan(&input, Target::Array(a)),
            }
        };
        Job { input, raw_chars, threshold, stage }
    }

    /// The work for the host's scorer, or `None` when no call must be made
    /// (a gate stopped it, nothing is scorable, or the scorer is offline).
    /// An owned copy, for the `prune-job` resource's `scoring-request`.
    pub fn request(&self) -> Option<ScoringRequest> {
        self.request_ref().cloned()
    }

    /// [`Job::request`] borrowed: what the `scorer` import is called with
    /// from `prune` (the request holds every chunk and Jev body, ≈ 2× the
    /// text: no copy for a call that only reads it).
    pub fn request_ref(&self) -> Option<&ScoringRequest> {
        match &self.stage {
            Stage::Score(plan) if !self.offline() => Some(&plan.request),
            _ => None,
        }
    }

    fn offline(&self) -> bool {
        matches!(self.input.scorer, ScorerChoice::Offline)
    }

    /// Decide and assemble from the scorer's response (SPEC §5–§12). `None`
    /// while a call was due means the host did not score: `failed`, raw.
    pub fn complete(&self, response: Option<ScoringResponse>) -> Pruned {
        let plan = match &self.stage {
            Stage::Skipped => return self.unchanged(Outcome::Ok, None, &[], Scoring::none(), false),
            Stage::Structured => return self.unchanged(Outcome::Structured, None, &[], Scoring::none(), true),
            Stage::NoBasis { shape, paragraphs } => {
                return self.unchanged(Outcome::NoBasis, Some(*shape), paragraphs, Scoring::none(), true)
            }
            Stage::Unscorable { shape, paragraphs } => {
                return self.unchanged(Outcome::Ok, Some(*shape), paragraphs, Scoring::none(), true)
            }
            Stage::Score(plan) => plan,
        };
        let shape = plan.shape();
        let response = if self.offline() { Some(plan.score_offline()) } else { response };
        let Some(response) = response else {
            return self.unchanged(Outcome::Failed, Some(shape), &plan.paragraphs, Scoring::none(), true);
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
                return self.unchanged(outcome, Some(shape), &plan.paragraphs, scoring, true);
            }
        };
        let mut scoring = plan.read(answers, ms);
        scoring.timed = !self.offline();
        if scoring.answered == 0 {
            return self.unchanged(Outcome::Failed, Some(shape), &plan.paragraphs, scoring, true);
        }
        if self.offline() {
            scoring.calls = 0;
        }
        let drop = match decide::verdict(&scoring.scores, self.threshold) {
            Verdict::AllDropped => {
                let below = scoring.scores.iter().filter(|s| matches!(s, Some(p) if *p < self.threshold)).count();
                let timed = scoring.timed;
                let mut out = self.unchanged(Outcome::AllDropped, Some(shape), &plan.paragraphs, scoring, false);
                out.counts.dropped = below as u32;
                out.log_line = Some(self.log_line(&out, timed));
                return out;
            }
            Verdict::NothingDropped => {
                return self.unchanged(Outcome::NothingDropped, Some(shape), &plan.paragraphs, scoring, true)
            }
            Verdict::Drop(drop) => drop,
        };
        let id = format!("P{}", self.input.sequence.max(1));
        let text = plan.text(&self.input.text);
        let lang = self.input.lang;
        let body = match &plan.target {
            Target::Text => decide::assemble(text, &plan.paragraphs, &drop, lang, &id).0,
            Target::Wrapper(w) => {
                let (inner, _) = decide::assemble(text, &plan.paragraphs, &drop, lang, &id);
                wrapper::replace(&self.input.text, w, &inner)
            }
            Target::Array(_) => array::assemble(text, &plan.paragraphs, &drop, lang, &id),
        };
        let body_chars = body.chars().count();
        let ratio = decide::ratio(self.raw_chars, body_chars);
        let dropped = drop.iter().filter(|d| **d).count();
        if !decide::clears_floor(ratio) {
            let timed = scoring.timed;
            let mut out = self.unchanged(Outcome::BelowFloor, Some(shape), &plan.paragraphs, scoring, false);
            out.counts.dropped = dropped as u32;
            out.ratio = Some(ratio);
            out.log_line = Some(self.log_line(&out, timed));
            return out;
        }
        let timed = scoring.timed;
        let record = StoredResult {
            id,
            text: text.to_string(),
            dropped: (0..drop.len()).filter(|&i| drop[i]).map(|i| i as u32).collect(),
        };
        let mut out = Pruned {
            raw: self.input.text.clone(),
            outcome: Outcome::Ok,
            shape: Some(shape),
            counts: Counts {
                raw_chars: self.raw_chars as u32,
                kept_chars: body_chars as u32,
                paragraphs: plan.paragraphs.len() as u32,
                dropped: dropped as u32,
                calls: scoring.calls,
                jev_tokens: scoring.tokens,
                ms,
            },
            ratio: Some(ratio),
            threshold: self.threshold,
            log_line: None,
            record: Some(record),
            paragraphs: reports(&plan.paragraphs, &scoring.scores, Some(&drop)),
            failures: scoring.failures,
            body,
        };
        out.log_line = Some(self.log_line(&out, timed));
        out
    }

    /// The raw text back, with the counts measured so far.
    fn unchanged(
        &self,
        outcome: Outcome,
        shape: Option<Shape>,
        paragraphs: &[Paragraph],
        scoring: Scoring,
        log: bool,
    ) -> Pruned {
        let timed = scoring.timed;
        let scores = if scoring.scores.is_empty() { vec![None; paragraphs.len()] } else { scoring.scores };
        let mut out = Pruned {
            body: self.input.text.clone(),
            raw: self.input.text.clone(),
            outcome,
            shape,
            counts: Counts {
                raw_chars: self.raw_chars as u32,
                kept_chars: self.raw_chars as u32,
                paragraphs: paragraphs.len() as u32,
                dropped: 0,
                calls: scoring.calls,
                jev_tokens: scoring.tokens,
                ms: scoring.ms,
            },
            ratio: None,
            threshold: self.threshold,
            log_line: None,
            record: None,
            paragraphs: reports(paragraphs, &scores, None),
            failures: scoring.failures,
        };
        if log {
            out.log_line = Some(self.log_line(&out, timed));
        }
        out
    }

    /// The `tool prune:` line (SPEC §12): counts only, never text. `shape=` is
    /// absent for `structured`; `ratio=-` where no body was assembled, `ms=-`
    /// where no host scorer answered (`timed` false: nothing was measured).
    fn log_line(&self, p: &Pruned, timed: bool) -> String {
        let c = &p.counts;
        let shape = match p.shape {
            Some(Shape::Text) => " shape=text",
            Some(Shape::JsonWrapper) => " shape=json_wrapper",
            Some(Shape::JsonArray) => " shape=json_array",
            None => "",
        };
        let ms = if timed { c.ms.to_string() } else { "-".to_string() };
        let ratio = match p.ratio {
            Some(r) => crate::number::fixed(r, 3),
            None => "-".to_string(),
        };
        let scorer = match &self.input.scorer {
            ScorerChoice::Offline => "offline".to_string(),
            ScorerChoice::Host(name) => log_label(name),
        };
        format!(
            "tool prune: agent={} name={} outcome={}{} raw_chars={} kept_chars={} paragraphs={} dropped={} calls={} jev_tokens={} ms={} threshold={} ratio={} scorer={}",
            log_label(&self.input.agent),
            log_label(&self.input.tool),
            outcome_name(p.outcome),
            shape,
            c.raw_chars,
            c.kept_chars,
            c.paragraphs,
            c.dropped,
            c.calls,
            c.jev_tokens,
            ms,
            crate::number::fixed(p.threshold, 1),
            ratio,
            scorer
        )
    }
}

/// A log label (`agent=`, `name=`, `id=`): a given name with spaces and `=` made harmless, `-` if empty.
pub fn log_label(s: &str) -> String {
    if s.is_empty() {
        return "-".to_string();
    }
    s.chars().map(|c| if c.is_whitespace() || c == '=' || c.is_control() { '_' } else { c }).collect()
}

/// The outcome as written in logs and reports (SPEC §7).
pub fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Structured => "structured",
        Outcome::NoBasis => "no_basis",
        Outcome::AllDropped => "all_dropped",
        Outcome::NothingDropped => "nothing_dropped",
        Outcome::BelowFloor => "below_floor",
        Outcome::Timeout => "timeout",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
    }
}

/// Split the target and plan batches, or stop at the basis / fixed-only gates.
fn plan(input: &PruneInput, target: Target) -> Stage {
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
    // The offline scorer reads the chunks in the guest: no request body to encode.
    let offline = matches!(input.scorer, ScorerChoice::Offline);
    let request = ScoringRequest {
        basis: basis.to_string(),
        batches: batches
            .iter()
            .map(|indices| {
                let chunks: Vec<(usize, &str)> =
                    indices.iter().map(|&i| (i, &text[paragraphs[i].start..paragraphs[i].end])).collect();
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
}

impl Scoring {
    fn none() -> Scoring {
        Scoring { scores: Vec::new(), answered: 0, calls: 0, tokens: 0, ms: 0, timed: false, failures: Vec::new() }
    }
}

fn shape_of(target: &Target) -> Shape {
    match target {
        Target::Text => Shape::Text,
        Target::Wrapper(_) => Shape::JsonWrapper,
        Target::Array(_) => Shape::JsonArray,
    }
}

impl Plan {
    fn shape(&self) -> Shape {
        shape_of(&self.target)
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
        let mut scores = crate::offline::score(&self.request.basis, &chunks).into_iter();
        let answers = self
            .request
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(scores.by_ref().take(b.chunks.len()).map(Some).collect()))
            .collect();
        ScoringResponse { answers: Ok(answers), elapsed_ms: 0 }
    }

    /// Read one answer per batch; a missing answer fails its batch.
    fn read(&self, answers: Vec<BatchAnswer>, ms: u32) -> Scoring {
        let mut scoring = Scoring { scores: vec![None; self.paragraphs.len()], ms, ..Scoring::none() };
        let mut answers = answers.into_iter();
        for (b, indices) in self.batches.iter().enumerate() {
            let fail = |scoring: &mut Scoring, status: Option<u16>, class: &str| {
                scoring.failures.push(BatchFailure { batch: b as u32, status, class: class.to_string() })
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

/// The paragraphs of `text` as pruning splits it, with byte and character
/// spans (the `paragraphs` export; SPEC §14).
pub fn paragraph_infos(text: &str) -> Vec<ParagraphInfo> {
    let mut char_start = 0u32;
    split(text)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let info = ParagraphInfo {
                index: i as u32,
                byte_start: p.start as u32,
                byte_end: p.end as u32,
                char_start,
                char_end: char_start + p.chars as u32,
                kind: if p.fixed { ParagraphKind::Fixed } else { ParagraphKind::Scored },
            };
            char_start += p.chars as u32;
            info
        })
        .collect()
}
