//! The contract's values (`wit/`) as plain Rust types: what the rules take
//! and give. Each type has its WIT name and fields (`kebab-case` →
//! `snake_case`), so `wit/*.wit` documents them; the generated bindings stay
//! private to the `component` module, which converts at the boundary (and
//! fails to compile when the WIT changes and these types do not follow).
//! This module names no other module of the guest: every other one may use it.
//!
//! Grouped by the interface that declares them: `types`, `scorer` (the one
//! import's exchange, SPEC §5, §11, §14), `pruner` (one tool result, SPEC
//! §2–§13), `omitted` (SPEC §10) and `judge` (SPEC §13).

// ---- `types` ------------------------------------------------------------------

/// Language of markers, `omitted` answers and the tool description (SPEC §9, §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Ja,
    En,
}

/// What went wrong with a scorer call, as the guest classifies it (never a
/// body; SPEC §11). `Undecodable`: a 2xx body the guest could not read;
/// `NoAnswer`: no answer for the batch (the judge: no valid answer to a question).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureClass {
    Http4xx,
    Http5xx,
    HttpOther,
    RateLimited,
    OutOfCredit,
    Network,
    Undecodable,
    NoAnswer,
    Timeout,
    Cancelled,
}

// ---- `scorer`: the one call ---------------------------------------------------

/// One batch to score: up to 16 paragraphs and 12,000 characters (SPEC §4.6).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Paragraph numbers (0-based, SPEC §4.5), in order.
    pub paragraphs: Vec<u32>,
    /// The paragraphs' texts, same order (for scorers that answer with scores).
    pub chunks: Vec<String>,
    /// The Jev request body (SPEC §5); empty for the guest's own scorers.
    pub jev_body: String,
}

/// How to run the batches (SPEC §4.6, §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportPolicy {
    /// Requests in flight at most (4).
    pub max_in_flight: u32,
    /// Deadline for the whole result, in ms (20,000).
    pub deadline_ms: u32,
}

/// Everything a scorer needs for one tool result (one request per result).
#[derive(Clone, Debug, PartialEq)]
pub struct ScoringRequest {
    /// The basis (SPEC §3): the first 2,000 characters of the turn's request.
    pub basis: String,
    pub batches: Vec<Batch>,
    pub policy: TransportPolicy,
}

/// How one batch failed after the host's retries. Never the response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The last HTTP status (non-2xx).
    Http(u16),
    /// No HTTP status: connection, DNS, TLS, or a scorer that threw.
    Network,
}

/// The answer for one batch.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchAnswer {
    /// Scores in [0, 1] per paragraph of the batch, in order; `None` = not scored (kept).
    Scores(Vec<Option<f64>>),
    /// A 2xx Jev response body, bare or in the Cloudflare envelope.
    JevResponse(String),
    /// The batch could not be scored; its paragraphs are kept (SPEC §11).
    Failed(Failure),
}

/// Why scoring stopped before every batch answered (SPEC §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoringStop {
    Timeout,
    Cancelled,
}

/// The host's answer to a [`ScoringRequest`]: one answer per batch, or a stop.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoringResponse {
    pub answers: Result<Vec<BatchAnswer>, ScoringStop>,
    /// Wall time of scoring in ms, measured by the host (the log's `ms=`).
    pub elapsed_ms: u32,
}

// ---- `pruner`: one tool result --------------------------------------------------

/// Who scores the paragraphs (SPEC §14).
#[derive(Clone, Debug, PartialEq)]
pub enum ScorerChoice {
    /// The host scores; the name is the log line's `scorer=`.
    Host(String),
    /// The guest's offline lexical scorer: no request.
    Offline,
    /// The guest's word-overlap stub (tests, demos): no request.
    Stub,
}

/// One tool result and the facts the gates (SPEC §2) are decided from
/// (WIT `pruner.prune-input`, which documents each field).
#[derive(Clone, Debug, PartialEq)]
pub struct PruneInput {
    /// The user's request for this turn, raw (the guest takes the basis, SPEC §3).
    pub request: String,
    /// The tool result text.
    pub text: String,
    pub enabled: bool,
    pub succeeded: bool,
    pub prunable: bool,
    /// 0.1, 0.2, 0.3 or 0.5 (SPEC §6); anything else: `failed`, the text unchanged.
    pub threshold: f64,
    pub lang: Lang,
    pub scorer: ScorerChoice,
    pub jev_model: Option<String>,
    /// Labels for the log line only.
    pub agent: String,
    pub tool: String,
    /// Fill [`Pruned::paragraphs`].
    pub report: bool,
    /// The call's arguments (a JSON text), for the repeat gate only.
    pub arguments: Option<String>,
    /// The `call` keys of the results this conversation pruned so far.
    pub pruned_calls: Vec<String>,
    /// Replaces the guest's work budget (tests); none: sized from the text (SPEC §7).
    pub work_budget: Option<u64>,
}

/// What became of the result (SPEC §7, §11). `Skipped`: a cheap gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Skipped,
    Structured,
    NoBasis,
    AllDropped,
    NothingDropped,
    BelowFloor,
    Timeout,
    Failed,
    Cancelled,
}

/// Which cheap gate (SPEC §2) stopped a `skipped` result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    Disabled,
    ToolFailed,
    NotPrunable,
    TooShort,
    Repeated,
}

/// What was split: plain text, a JSON wrapper's string (SPEC §8), a JSON array's elements (SPEC §13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Text,
    JsonWrapper,
    JsonArray,
}

/// What became of one paragraph (or array element).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Kept,
    Dropped,
    Unscored,
    Fixed,
}

/// One paragraph of a [`Pruned`] report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParagraphReport {
    pub index: u32,
    /// Characters of the paragraph (separators included, as in the body).
    pub chars: u32,
    /// The score, or none (fixed, blank, failed batch, missing answer).
    pub score: Option<f64>,
    pub fate: Fate,
}

/// A batch that failed, for diagnosis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchFailure {
    /// 0-based, in [`ScoringRequest::batches`] order.
    pub batch: u32,
    pub status: Option<u16>,
    pub class: FailureClass,
}

/// The counts of the `tool prune:` line (SPEC §12); characters are Unicode scalar values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub raw_chars: u32,
    /// Characters of the body the model receives (markers included).
    pub kept_chars: u32,
    /// None when the text was not split (not 0; SPEC §7, §12).
    pub paragraphs: Option<u32>,
    pub dropped: u32,
    /// Scorer calls that answered; 0 for the guest's own scorers.
    pub calls: u32,
    pub jev_tokens: u64,
    /// Scoring wall time in ms as the host measured it; none when no host scorer answered.
    pub ms: Option<u32>,
    /// Work units the guest counted (SPEC §7's budget).
    pub work: u64,
}

/// What `omitted` needs later in the conversation (SPEC §10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResult {
    /// `P{id-number}`.
    pub id: String,
    /// Characters of the dropped units together.
    pub chars: u64,
    /// The call's key (repeat gate); none without arguments.
    pub call: Option<String>,
    /// The guest's own encoding of the shape and dropped units (the `omitted` module's).
    pub data: String,
}

/// What pruning one tool result gives back (WIT `pruner.pruned`).
#[derive(Clone, Debug, PartialEq)]
pub struct Pruned {
    /// The pruned body (outcome `ok`); none: the raw text goes to the model unchanged.
    pub body: Option<String>,
    pub outcome: Outcome,
    pub gate: Option<Gate>,
    pub shape: Option<Shape>,
    pub counts: Counts,
    /// Net reduction (SPEC §7), when a body was assembled.
    pub ratio: Option<f64>,
    pub threshold: f64,
    /// The `tool prune:` line (SPEC §12).
    pub log_line: Option<String>,
    pub record: Option<StoredResult>,
    pub paragraphs: Vec<ParagraphReport>,
    pub failures: Vec<BatchFailure>,
    pub served_model: Option<String>,
}

/// How a unit of an [`Inspection`] is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    /// Sent to the scorer.
    Scored,
    /// Over 6,000 characters: kept, never sent (SPEC §4.3).
    Fixed,
    /// No visible character: kept, never sent.
    Blank,
}

/// One unit: spans in the split text, bytes and characters, [start, end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitInfo {
    pub index: u32,
    pub byte_start: u32,
    pub byte_end: u32,
    pub char_start: u32,
    pub char_end: u32,
    pub kind: UnitKind,
}

/// How pruning would split a text (SPEC §14's inspection call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// None: JSON that is not pruned (`structured`).
    pub shape: Option<Shape>,
    /// For a wrapper: its string literal's byte span in the raw text (quotes included).
    pub wrapper_span: Option<(u32, u32)>,
    pub units: Vec<UnitInfo>,
}

// ---- `omitted` ----------------------------------------------------------------------

/// How an `omitted` call ended (SPEC §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OmittedOutcome {
    Ok,
    NotDropped,
    NotFound,
    TooLarge,
    Invalid,
}

/// The answer to one `omitted` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OmittedResult {
    pub outcome: OmittedOutcome,
    /// For the model: the dropped paragraphs verbatim, or what to do.
    pub text: String,
    /// The `tool omitted:` line (SPEC §12).
    pub log_line: String,
}

/// The SDK shapes of a tool definition (WIT `omitted.dialect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Plain,
    Openai,
    Anthropic,
    Mcp,
    McpHooked,
}

// ---- `judge` --------------------------------------------------------------------------

/// The kind of a declared question (SPEC §13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuestionKind {
    Choice,
    Noul,
    Score,
}

/// What Jev answered to one declared question; probabilities rounded to 0.01.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub question: String,
    pub kind: QuestionKind,
    /// choice: the option; score: the level, 1-based, as digits; noul: none.
    pub value: Option<String>,
    /// choice, score: the probability of `value`; noul: the probability of true.
    pub p: f64,
    /// choice, score: the first probability minus the second.
    pub margin: Option<f64>,
    /// score: the expected level, 1-based.
    pub mean: Option<f64>,
}

/// Where the message goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Hand the message to these targets.
    Routed(Vec<String>),
    /// Do not route; the rule's `note`.
    Returned(Option<String>),
    /// Jev could not judge; never folded into `otherwise`.
    Failed(FailureClass),
}

/// The judge's decision for one message.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    /// 1-based number of the rule that matched; none for `[otherwise]` and failures.
    pub rule: Option<u32>,
    /// One per declared question, in the file's order; empty when failed.
    pub answers: Vec<Answer>,
    pub jev_tokens: u64,
    /// The `judge:` line (SPEC §12).
    pub log_line: String,
}
