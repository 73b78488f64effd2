//! Shared helpers of the integration suite: the shared material (SPEC,
//! corpus, cases), texts built paragraph by paragraph, a turn with pruning on,
//! and the SPEC §9 marker formats written out independently of the guest.
//!
//! Every test in `tests/` drives the component in wasmtime through
//! `toolprune`; nothing here calls guest code directly.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use toolprune::types::{
    BatchAnswer, BatchFailure, Counts, Fate, Gate, Lang, OmittedResult, Outcome, ParagraphReport, ScoringRequest, Shape,
    StoredResult, UnitInfo,
};
use toolprune::{
    CapturedLog, Conversation, ConversationOptions, LimitsOverride, OmittedAnswer, PruneResult, Pruner, Scorer,
    ScoringContext, ScriptedScorer, ToolResult, Turn,
};

pub use toolprune;
pub use toolprune::types::wit_name;
pub use toolprune::Scoring;
pub use toolprune::LimitsOverride as Limits;

pub mod conformance;

/// The guest's answer as these tests read it: the fields of the host's
/// [`PruneResult`] with the counts and threshold unwrapped, and the stored
/// record of an `ok` result (from the conversation's store).
#[derive(Clone, Debug)]
pub struct Report {
    /// The pruned body, or none (the raw text went through).
    pub body: Option<String>,
    pub outcome: Outcome,
    pub gate: Option<Gate>,
    pub shape: Option<Shape>,
    pub counts: Counts,
    pub ratio: Option<f64>,
    pub threshold: f64,
    pub log_line: Option<String>,
    pub record: Option<StoredResult>,
    pub paragraphs: Vec<ParagraphReport>,
    pub failures: Vec<BatchFailure>,
    pub served_model: Option<String>,
}

/// A pruned result as these tests read it: body and raw as strings, the
/// host's result, and the guest's [`Report`] unless the host failed.
#[derive(Clone, Debug)]
pub struct Pruned {
    pub body: String,
    pub raw: String,
    pub outcome: Outcome,
    pub report: Option<Report>,
    pub failure: Option<toolprune::HostFailure>,
    /// The host's result as it came back.
    pub result: PruneResult,
}

impl Pruned {
    /// Reads `result`; `stored`: the conversation's store right after it.
    pub fn new(result: PruneResult, stored: &[StoredResult]) -> Self {
        let report = result.counts.map(|counts| Report {
            body: (!result.unchanged()).then(|| result.body.to_string()),
            outcome: result.outcome,
            gate: result.gate,
            shape: result.shape,
            counts,
            ratio: result.ratio,
            threshold: result.threshold.unwrap_or(f64::NAN),
            log_line: result.log_line.clone(),
            record: result.id.as_ref().and_then(|id| stored.iter().find(|r| &r.id == id).cloned()),
            paragraphs: result.paragraphs.clone(),
            failures: result.failures.clone(),
            served_model: result.served_model.clone(),
        });
        Pruned {
            body: result.body.to_string(),
            raw: result.raw.to_string(),
            outcome: result.outcome,
            report,
            failure: result.failure.clone(),
            result,
        }
    }
}

/// `shared/` beside the repository (read-only material: SPEC, corpus, cases).
pub const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared");

/// A request of more than 20 characters, the one most cases use.
pub const REQUEST: &str = "How do I configure the retry limit for the upload client?";

/// The tool name passed to every prune: it must never leave the machine.
pub const TOOL: &str = "fetch_tool_name_never_sent";

/// A file of `shared/`, e.g. `cases/crlf.md`.
pub fn shared_path(relative: &str) -> PathBuf {
    PathBuf::from(SHARED).join(relative)
}

/// The UTF-8 text of a file of `shared/`.
pub fn read_shared(relative: &str) -> String {
    let path = shared_path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// One entry of `shared/cases/cases.json`.
#[derive(Clone, Debug)]
pub struct Case {
    pub file: String,
    pub chars: usize,
    pub request: String,
    pub expect: Vec<String>,
}

impl Case {
    pub fn text(&self) -> String {
        read_shared(&format!("cases/{}", self.file))
    }
}

/// Every case of `shared/cases/cases.json`, in file order.
pub fn cases() -> Vec<Case> {
    let v: Value = serde_json::from_str(&read_shared("cases/cases.json")).expect("cases.json parses");
    v.as_array()
        .expect("cases.json is an array")
        .iter()
        .map(|c| Case {
            file: c["file"].as_str().expect("file").to_string(),
            chars: c["chars"].as_u64().expect("chars") as usize,
            request: c["request"].as_str().expect("request").to_string(),
            expect: c["expect"].as_array().expect("expect").iter().map(|e| e.as_str().expect("property").to_string()).collect(),
        })
        .collect()
}

/// One entry of `shared/corpus/manifest.json`.
#[derive(Clone, Debug)]
pub struct CorpusDoc {
    pub file: String,
    pub kind: String,
    pub chars: usize,
    pub request_en: String,
    pub request_ja: Option<String>,
}

impl CorpusDoc {
    pub fn text(&self) -> String {
        read_shared(&format!("corpus/{}", self.file))
    }
}

/// Every document of `shared/corpus/manifest.json`, in file order.
pub fn corpus() -> Vec<CorpusDoc> {
    let v: Value = serde_json::from_str(&read_shared("corpus/manifest.json")).expect("manifest.json parses");
    v.as_array()
        .expect("manifest.json is an array")
        .iter()
        .map(|d| CorpusDoc {
            file: d["file"].as_str().expect("file").to_string(),
            kind: d["kind"].as_str().expect("kind").to_string(),
            chars: d["chars"].as_u64().expect("chars") as usize,
            request_en: d["request_en"].as_str().expect("request_en").to_string(),
            request_ja: d["request_ja"].as_str().map(str::to_string),
        })
        .collect()
}

/// A corpus document by file name.
pub fn corpus_doc(file: &str) -> CorpusDoc {
    corpus().into_iter().find(|d| d.file == file).unwrap_or_else(|| panic!("{file} is not in the manifest"))
}

/// A case by file name.
pub fn case(file: &str) -> Case {
    cases().into_iter().find(|c| c.file == file).unwrap_or_else(|| panic!("{file} is not in cases.json"))
}

// ----- the component and turns -----

/// The component, compiled once per test binary.
pub fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component compiles")
}

/// A turn's settings as these tests write them (one conversation per test
/// turn; the request is the turn's).
#[derive(Clone, Debug)]
pub struct TurnOptions {
    pub request: String,
    pub agent: String,
    /// Checked by the guest when the conversation is made (0.1/0.2/0.3/0.5).
    pub threshold: f64,
    pub lang: Lang,
    pub enabled: bool,
    pub jev_model: Option<String>,
    /// Replaces the guest's per-call limits (a [`Pruner`] of its own).
    pub limits: LimitsOverride,
    /// Test-only deadline cap (see [`ConversationOptions::deadline_cap`]).
    pub deadline_cap: Option<std::time::Duration>,
    /// The turn's cancellation token.
    pub cancel: Option<toolprune::CancelToken>,
}

impl TurnOptions {
    /// Defaults for everything but the request (pruning **off**).
    pub fn new(request: &str) -> Self {
        TurnOptions {
            request: request.to_string(),
            agent: "agent".to_string(),
            threshold: 0.2,
            lang: Lang::En,
            enabled: false,
            jev_model: None,
            limits: LimitsOverride::default(),
            deadline_cap: None,
            cancel: None,
        }
    }
}

/// Options with pruning **enabled** for `request` (other settings default: en, 0.2).
pub fn options(request: &str) -> TurnOptions {
    let mut o = TurnOptions::new(request);
    o.enabled = true;
    o
}

/// A conversation and its one turn, as the tests drive them.
pub struct TestTurn {
    pub conversation: Conversation,
    pub turn: Turn,
}

impl TestTurn {
    /// [`Turn::on_tool_result`], read as [`Pruned`].
    pub fn on_tool_result(&self, result: ToolResult) -> Pruned {
        let result = self.turn.on_tool_result(result);
        Pruned::new(result, &self.conversation.stored())
    }

    /// [`Conversation::omitted`]: `Ok` with the guest's answer, `Err` when the guest trapped.
    pub fn omitted(&self, arguments: &str) -> Result<OmittedResult, OmittedAnswer> {
        let answer = self.conversation.omitted(arguments);
        match answer.outcome {
            Some(outcome) => Ok(OmittedResult { outcome, text: answer.text, log_line: answer.log_line }),
            None => Err(answer),
        }
    }

    /// The conversation's stored results, oldest first.
    pub fn stored(&self) -> Vec<StoredResult> {
        self.conversation.stored()
    }
}

/// A turn with pruning enabled, logging into the returned capture.
pub fn turn(request: &str, scoring: impl Into<Scoring>) -> (TestTurn, Arc<CapturedLog>) {
    turn_with(options(request), scoring)
}

/// A turn with the given options, logging into the returned capture.
pub fn turn_with(options: TurnOptions, scoring: impl Into<Scoring>) -> (TestTurn, Arc<CapturedLog>) {
    let log = Arc::new(CapturedLog::new());
    let pruner = if options.limits == LimitsOverride::default() {
        pruner().clone()
    } else {
        Pruner::load(toolprune::LoadOptions { limits: options.limits, ..toolprune::LoadOptions::default() })
            .expect("the component loads")
    };
    let conversation = pruner
        .conversation(ConversationOptions {
            enabled: options.enabled,
            threshold: Some(options.threshold.to_string()),
            lang: options.lang,
            agent: options.agent,
            scoring: Some(scoring.into()),
            jev_model: options.jev_model,
            log: log.clone(),
            deadline_cap: options.deadline_cap,
            ..ConversationOptions::default()
        })
        .expect("a valid threshold");
    let turn = conversation.turn_with_cancel(options.request, options.cancel.unwrap_or_default());
    (TestTurn { conversation, turn }, log)
}

/// A scripted scorer under which `dropped` score 0.0 and every other paragraph 1.0.
pub fn dropping(dropped: impl IntoIterator<Item = u32>) -> Arc<ScriptedScorer> {
    Arc::new(ScriptedScorer::new().scores(dropped, 0.0))
}

/// Every odd paragraph of a text of `count` paragraphs scores 0.0.
pub fn dropping_odd(count: usize) -> Arc<ScriptedScorer> {
    dropping((0..count as u32).filter(|i| i % 2 == 1))
}

/// Prune `text` as the successful result of a prunable tool named [`TOOL`],
/// with the per-paragraph report.
pub fn prune(turn: &TestTurn, text: &str) -> Pruned {
    turn.on_tool_result(ToolResult { report: true, ..ToolResult::prunable(TOOL, text) })
}

/// The guest's answer; panics when the host got none (trap).
pub fn report(p: &Pruned) -> &Report {
    p.report.as_ref().unwrap_or_else(|| panic!("the guest gave no answer: {:?}", p.failure))
}

/// The SPEC name of an outcome (`ok`, `no_basis`, …).
pub fn outcome(p: &Pruned) -> String {
    toolprune::types::wit_name(&p.outcome)
}

/// The `tool prune:` lines of a capture, `ms=` normalised to `ms=*` (the
/// host measures scoring time).
pub fn prune_lines(log: &CapturedLog) -> Vec<String> {
    log.lines().into_iter().filter(|l| l.starts_with("tool prune:")).map(|l| normalise_ms(&l)).collect()
}

/// The single `tool prune:` line of a capture.
pub fn prune_line(log: &CapturedLog) -> String {
    let lines = prune_lines(log);
    assert_eq!(lines.len(), 1, "exactly one `tool prune:` line expected: {lines:?}");
    lines.into_iter().next().unwrap()
}

/// `ms=` followed by digits → `ms=*` (the host measures scoring time).
pub fn normalise_ms(line: &str) -> String {
    conformance::normalise_line(line)
}

/// The value of `key=` in a log line (`ratio`, `calls`, …).
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(' ').find_map(|kv| kv.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
}

// ----- paragraphs -----

/// The units of `text` as the component splits it (`pruner.inspect`).
pub fn infos(text: &str) -> Vec<UnitInfo> {
    pruner().inspect(text).expect("inspect answers").units
}

/// The paragraph texts of `text` (byte spans of the `paragraphs` export).
pub fn spans(text: &str) -> Vec<&str> {
    infos(text).iter().map(|p| &text[p.byte_start as usize..p.byte_end as usize]).collect()
}

/// Concatenation of the paragraphs of `text` whose fate in `report` is not `dropped`.
pub fn kept_text(text: &str, report: &Report) -> String {
    let spans = spans(text);
    assert_eq!(spans.len(), report.paragraphs.len(), "report and split disagree on the paragraph count");
    spans.iter().zip(&report.paragraphs).filter(|(_, r)| r.fate != Fate::Dropped).map(|(s, _)| *s).collect()
}

/// Paragraph numbers whose fate in `report` is `dropped`.
pub fn dropped_of(report: &Report) -> Vec<u32> {
    report.paragraphs.iter().filter(|r| r.fate == Fate::Dropped).map(|r| r.index).collect()
}

/// Filler prose: a paragraph body of exactly `chars` ASCII characters, no
/// line break, starting with a tag unique to `index`.
pub fn prose(index: usize, chars: usize) -> String {
    const WORDS: [&str; 12] = [
        "upload", "client", "retries", "parts", "with", "exponential", "backoff", "and", "each", "attempt", "waits",
        "longer",
    ];
    let mut s = format!("Paragraph {index} says:");
    let mut w = index;
    while s.len() < chars {
        s.push(' ');
        s.push_str(WORDS[w % WORDS.len()]);
        w += 1;
    }
    s.truncate(chars);
    s
}

/// A text whose paragraph `i` has exactly `sizes[i]` characters, separators
/// included: each is [`prose`] followed by a blank line (`\n\n`), the last by
/// a single `\n`. With every size ≥ 120 nothing merges, so the component must
/// split it into exactly these paragraphs.
pub fn text_of(sizes: &[usize]) -> String {
    let mut out = String::new();
    for (i, &n) in sizes.iter().enumerate() {
        let sep = if i + 1 == sizes.len() { "\n" } else { "\n\n" };
        assert!(n > sep.len(), "a paragraph needs room for its text");
        out.push_str(&prose(i, n - sep.len()));
        out.push_str(sep);
    }
    out
}

/// `count` paragraphs of `size` characters each.
pub fn uniform(count: usize, size: usize) -> String {
    text_of(&vec![size; count])
}

// ----- SPEC §9 markers, written from the SPEC -----

/// `n` with thousands separators: 9388 → `9,388`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The header line of SPEC §9.
pub fn header(lang: Lang, paragraphs: usize, chars: usize, dropped: usize, dropped_chars: usize, id: &str) -> String {
    let (p, c, dp, dc) = (thousands(paragraphs), thousands(chars), thousands(dropped), thousands(dropped_chars));
    match lang {
        Lang::Ja => format!(
            "【関連度で段落を省略しています: 全 {p} 段落・{c} 字のうち {dp} 段落・{dc} 字を省略。省略した段落は `omitted` に id と段落番号を渡すと逐語で読めます。id={id}】"
        ),
        Lang::En => format!(
            "[Omitted by relevance: {dp} of {p} paragraphs ({dc} of {c} characters). Call `omitted` with the id and paragraph numbers to read them verbatim. id={id}]"
        ),
    }
}

/// The marker line of SPEC §9 for dropped paragraphs `first..=last`.
pub fn run_marker(lang: Lang, first: usize, last: usize, chars: usize) -> String {
    let c = thousands(chars);
    match (lang, first == last) {
        (Lang::Ja, true) => format!("［… 段落 {first}・1 段落・{c} 字を省略 …］"),
        (Lang::Ja, false) => format!("［… 段落 {first}〜{last}・{} 段落・{c} 字を省略 …］", thousands(last - first + 1)),
        (Lang::En, true) => format!("[… paragraph {first} omitted: 1 paragraph, {c} characters …]"),
        (Lang::En, false) => {
            format!("[… paragraphs {first}–{last} omitted: {} paragraphs, {c} characters …]", thousands(last - first + 1))
        }
    }
}

fn is_header_line(line: &str) -> bool {
    line.starts_with("[Omitted by relevance: ") || line.starts_with("【関連度で段落を省略しています: ")
}

fn is_marker_line(line: &str) -> bool {
    let l = line.trim_end_matches(['\r', '\n']);
    (l.starts_with("[… paragraph") && l.ends_with("…]")) || (l.starts_with("［… 段落 ") && l.ends_with("…］"))
}

/// The body without what pruning added: the header line and the blank line
/// after it, and each marker line with the blank line after it. For a body
/// assembled per SPEC §9 from paragraphs separated by blank lines, this is
/// exactly the kept paragraphs, concatenated.
pub fn strip_markers(body: &str) -> String {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if (i == 0 && is_header_line(line)) || is_marker_line(line) {
            i += 1;
            if i < lines.len() && lines[i].trim_end_matches(['\r', '\n']).is_empty() {
                i += 1;
            }
            continue;
        }
        out.push_str(line);
        i += 1;
    }
    out
}

/// The marker lines of a body, in order.
pub fn marker_lines(body: &str) -> Vec<&str> {
    body.lines().filter(|l| is_marker_line(l)).collect()
}

// ----- JSON -----

/// Byte span (quotes included) of the string literal that is the value of
/// the top-level `key` in the JSON text `raw`, found by a scan of its own.
pub fn string_value_span(raw: &str, key: &str) -> Range<usize> {
    let b = raw.as_bytes();
    let needle = format!("\"{key}\"");
    let key_at = raw.find(&needle).unwrap_or_else(|| panic!("key {key} not found"));
    let mut i = key_at + needle.len();
    while b[i].is_ascii_whitespace() {
        i += 1;
    }
    assert_eq!(b[i], b':', "a colon after the key");
    i += 1;
    while b[i].is_ascii_whitespace() {
        i += 1;
    }
    assert_eq!(b[i], b'"', "a string value");
    let start = i;
    i += 1;
    loop {
        match b[i] {
            b'"' => return start..i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The top-level key whose string value is the longest (in characters).
pub fn longest_string_key(raw: &str) -> String {
    let v: Value = serde_json::from_str(raw.trim_start_matches('\u{FEFF}')).expect("JSON");
    v.as_object()
        .expect("an object")
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.chars().count())))
        .max_by_key(|(_, n)| *n)
        .expect("a direct string")
        .0
}

/// Checks that `body` differs from `raw` only inside the string literal at
/// `span`, and returns the decoded string that replaced it.
pub fn replaced_string(raw: &str, body: &str, span: Range<usize>) -> Result<String, String> {
    let tail = raw.len() - span.end;
    if body.len() < span.start + tail {
        return Err("the body is too short to hold the untouched bytes".into());
    }
    if body.as_bytes()[..span.start] != raw.as_bytes()[..span.start] {
        return Err("bytes before the string changed".into());
    }
    if body.as_bytes()[body.len() - tail..] != raw.as_bytes()[span.end..] {
        return Err("bytes after the string changed".into());
    }
    let literal = body.get(span.start..body.len() - tail).ok_or("the span is not on character boundaries")?;
    serde_json::from_str::<String>(literal).map_err(|e| format!("the replaced span is not one JSON string literal: {e}"))
}

// ----- scorers -----

/// A host scorer that keeps everything (1.0 for every paragraph), recording
/// every request: exactly what would leave the machine.
#[derive(Default)]
pub struct RecordingStub {
    seen: std::sync::Mutex<Vec<ScoringRequest>>,
}

impl RecordingStub {
    pub fn requests(&self) -> Vec<ScoringRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Scorer for RecordingStub {
    fn name(&self) -> &str {
        "recording-stub"
    }

    fn score(&self, request: &ScoringRequest, _: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        self.seen.lock().unwrap().push(request.clone());
        Ok(request.batches.iter().map(|b| BatchAnswer::Scores(vec![Some(1.0); b.chunks.len()])).collect())
    }
}

/// Characters of a string (Unicode scalar values).
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The elements of the array a JSON array result prunes (SPEC §13), as
/// values: the top-level array, or the top-level object's largest direct
/// value when it is an array. A test oracle independent of the guest's scan.
pub fn array_values(raw: &str) -> Vec<serde_json::Value> {
    use serde_json::Value;
    match serde_json::from_str::<Value>(raw.trim_start_matches('\u{FEFF}')).expect("JSON") {
        Value::Array(items) => items,
        Value::Object(map) => map
            .into_iter()
            .filter_map(|(_, v)| match v {
                Value::Array(items) => Some((serde_json::to_string(&items).unwrap().chars().count(), items)),
                _ => None,
            })
            .max_by_key(|(n, _)| *n)
            .map(|(_, items)| items)
            .expect("an object holding an array"),
        _ => panic!("not an array result"),
    }
}
