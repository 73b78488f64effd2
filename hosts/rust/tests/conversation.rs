//! The host's contract with the component, end to end: a corpus page pruned
//! with scripted scores, the conversation's ids and store read back through
//! `omitted`, fail-open on traps and limits (a fresh instance for the next
//! call, also under a result in flight), results in flight at once, and
//! scorer failures (panic, hang) handled by the host for every scorer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolprune::types::{BatchAnswer, Failure, Limit, OmittedOutcome, Outcome, ScoringRequest, UnitInfo};
use toolprune::{
    CapturedLog, Conversation, ConversationOptions, Form, LimitsOverride, LoadOptions, Pruner, Scorer, Scoring,
    ScoringContext, ScriptedScorer, ToolResult,
};

const TRANSPORTS: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/mcp-spec-2025-11-25-transports.mdx"));

const REQUEST: &str = "How does a client resume a broken Streamable HTTP SSE stream? Which header carries the last event ID?";

fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component compiles")
}

fn units(text: &str) -> Vec<UnitInfo> {
    pruner().inspect(text).expect("inspect").units
}

fn slice<'t>(text: &'t str, p: &UnitInfo) -> &'t str {
    &text[p.byte_start as usize..p.byte_end as usize]
}

/// Paragraph numbers of `text` whose text mentions `needle`.
fn mentioning(text: &str, needle: &str) -> Vec<u32> {
    units(text).iter().filter(|p| slice(text, p).contains(needle)).map(|p| p.index).collect()
}

/// Keeps the paragraphs about resumption (score 0.9), drops the rest (0.05).
fn resumption_scorer() -> ScriptedScorer {
    ScriptedScorer::new().default_score(Some(0.05)).scores(mentioning(TRANSPORTS, "Last-Event-ID"), 0.9)
}

fn conversation_on(pruner: &Pruner, scoring: impl Into<Scoring>, log: &Arc<CapturedLog>) -> Conversation {
    pruner
        .conversation(ConversationOptions {
            enabled: true,
            agent: "test".to_string(),
            scoring: Some(scoring.into()),
            log: log.clone(),
            ..ConversationOptions::default()
        })
        .expect("a conversation")
}

fn conversation(scoring: impl Into<Scoring>, log: &Arc<CapturedLog>) -> Conversation {
    conversation_on(pruner(), scoring, log)
}

fn with_limits(limits: LimitsOverride) -> Pruner {
    Pruner::load(LoadOptions { limits, ..LoadOptions::default() }).expect("the component loads")
}

#[test]
fn the_transports_page_keeps_what_answers_and_stores_what_it_dropped() {
    let scorer = Arc::new(resumption_scorer());
    let log = Arc::new(CapturedLog::new());
    let conversation = conversation(scorer.clone(), &log);

    let pruned = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));

    assert_eq!(pruned.outcome, Outcome::Ok, "{:?}", pruned.log_line);
    assert_eq!(pruned.id.as_deref(), Some("P1"));
    assert_eq!(&*pruned.raw, TRANSPORTS);
    assert!(pruned.body.len() < TRANSPORTS.len() / 2);
    let kept = mentioning(TRANSPORTS, "Last-Event-ID");
    assert!(!kept.is_empty());
    for p in units(TRANSPORTS).iter().filter(|p| kept.contains(&p.index)) {
        assert!(pruned.body.contains(slice(TRANSPORTS, p).trim_end()), "paragraph {} kept verbatim", p.index);
    }

    // One scorer call; what would have left the machine is the request and paragraphs of the page.
    assert_eq!(scorer.calls(), 1);
    let request = &scorer.requests()[0];
    assert_eq!(request.basis, REQUEST);
    for batch in &request.batches {
        assert_eq!(batch.paragraphs.len(), batch.chunks.len());
        assert!(batch.chunks.iter().all(|chunk| TRANSPORTS.contains(chunk.as_str())));
    }

    let stored = conversation.stored();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].id, "P1");
    assert!(stored[0].chars > 0);
    // Whatever `omitted` gives back over the whole page is dropped text, never a kept paragraph.
    let all = units(TRANSPORTS);
    let back = conversation.omitted(&format!(r#"{{"id":"P1","from":0,"to":{}}}"#, all.len()));
    assert!(!back.text.is_empty());
    assert!(kept.iter().all(|k| !back.text.contains(slice(TRANSPORTS, &all[*k as usize]).trim())));

    let lines = log.lines();
    assert_eq!(lines.len(), 2, "the prune line and the omitted line");
    assert!(lines[0].starts_with("tool prune: agent=test name=fetch outcome=ok "), "{}", lines[0]);
    assert_eq!(pruned.log_line.as_deref(), Some(lines[0].as_str()));
}

#[test]
fn a_gate_that_stops_the_call_sends_nothing_logs_nothing_and_says_skipped() {
    let scorer = Arc::new(ScriptedScorer::new());
    let log = Arc::new(CapturedLog::new());
    let off = pruner()
        .conversation(ConversationOptions { scoring: Some(scorer.clone().into()), log: log.clone(), ..Default::default() })
        .unwrap();

    let pruned = off.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS)); // off by default

    assert_eq!(pruned.outcome, Outcome::Skipped);
    assert_eq!(pruned.outcome_name(), "skipped");
    assert_eq!(pruned.gate.map(|g| toolprune::types::wit_name(&g)).as_deref(), Some("disabled"));
    assert!(pruned.unchanged(), "the body is the input itself");
    assert_eq!(pruned.id, None);
    assert_eq!(scorer.calls(), 0);
    assert!(log.lines().is_empty());
    assert!(off.stored().is_empty());
}

#[test]
fn running_out_of_fuel_returns_the_raw_text_and_the_next_call_gets_a_fresh_instance() {
    // 5·10⁶ fuel per call: enough for a short page, not for the page ×20.
    let pruner = with_limits(LimitsOverride { fuel: Some(5_000_000), ..LimitsOverride::default() });
    let log = Arc::new(CapturedLog::new());
    let conversation = conversation_on(&pruner, Arc::new(ScriptedScorer::new().scores(0..4, 0.0)), &log);
    let turn = conversation.turn(REQUEST);
    let huge = TRANSPORTS.repeat(20);

    let failed = turn.on_tool_result(ToolResult::prunable("fetch", huge.as_str()));
    assert_eq!(failed.outcome, Outcome::Failed);
    assert!(failed.unchanged() && *failed.raw == *huge);
    assert!(failed.counts.is_none());
    let failure = failed.failure.as_ref().expect("a host failure");
    assert_eq!((failure.reason_name().as_str(), failure.limit), ("guest_trap", Some(Limit::Fuel)));
    assert_eq!(log.lines(), ["tool prune: agent=test name=fetch outcome=failed reason=guest_trap limit=fuel"]);
    assert_eq!(failed.log_line.as_deref(), Some(log.lines()[0].as_str()));

    let page: String = (0..12).map(|i| format!("Paragraph {i}: {}\n\n", "upload retry limits ".repeat(20))).collect();
    let pruned = turn.on_tool_result(ToolResult::prunable("fetch", page));
    assert_eq!(pruned.outcome, Outcome::Ok, "{:?}", pruned.log_line);
    assert_eq!(pruned.id.as_deref(), Some("P1"), "a failed result takes no id");
}

#[test]
fn hitting_the_memory_limit_returns_the_raw_text_and_the_conversation_goes_on() {
    let pruner = with_limits(LimitsOverride { memory_bytes: Some(4 << 20), ..LimitsOverride::default() });
    let log = Arc::new(CapturedLog::new());
    let conversation = conversation_on(&pruner, Arc::new(resumption_scorer()), &log);
    let turn = conversation.turn(REQUEST);
    let huge = TRANSPORTS.repeat(400); // ~6.4 MB

    let failed = turn.on_tool_result(ToolResult::prunable("fetch", huge.as_str()));
    assert_eq!(failed.outcome, Outcome::Failed);
    assert!(failed.unchanged() && *failed.raw == *huge);
    assert!(log.lines()[0].ends_with("outcome=failed reason=guest_trap limit=memory"), "{:?}", log.lines());
    assert_eq!(failed.failure.as_ref().and_then(|f| f.limit), Some(Limit::Memory));

    assert_eq!(turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS)).outcome, Outcome::Ok);
}

#[test]
fn omitted_reads_back_results_of_every_turn_of_the_conversation() {
    let log = Arc::new(CapturedLog::new());
    let conversation = conversation(Arc::new(resumption_scorer()), &log);
    for _ in 0..2 {
        let turn = conversation.turn(REQUEST);
        assert_eq!(turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS)).outcome, Outcome::Ok);
    }
    let ids: Vec<_> = conversation.stored().iter().map(|s| s.id.clone()).collect();
    assert_eq!(ids, ["P1", "P2"], "ids count across turns");
    assert_eq!(conversation.count(), 2);

    let all = units(TRANSPORTS);
    let kept = mentioning(TRANSPORTS, "Last-Event-ID");
    for id in ["P1", "P2"] {
        let first_dropped = (0..all.len() as u32).find(|i| !kept.contains(i)).expect("a dropped paragraph");
        let answer = conversation.omitted(&format!(r#"{{"id":"{id}","from":{first_dropped},"to":{first_dropped}}}"#));
        assert_eq!(answer.outcome, Some(OmittedOutcome::Ok), "{}", answer.log_line);
        let p = &all[first_dropped as usize];
        assert!(answer.text.contains(slice(TRANSPORTS, p).trim()), "paragraph {first_dropped} verbatim");
        assert!(kept.iter().all(|k| !answer.text.contains(slice(TRANSPORTS, &all[*k as usize]).trim())));
    }

    let missing = conversation.omitted(r#"{"id":"P3","from":0,"to":0}"#);
    assert_eq!(missing.outcome, Some(OmittedOutcome::NotFound));
    assert_eq!(missing.outcome_name(), "not_found");
    let omitted_lines: Vec<_> =
        log.lines().into_iter().filter(|l| l.starts_with("tool omitted: agent=test ")).collect();
    assert_eq!(omitted_lines.len(), 3, "{omitted_lines:?}");
}

/// In both forms. The import form prunes with the number it peeked
/// (`count + 1`) before its scorer ran; a result that finishes after
/// another took that number is finished again through a `prune-job` with
/// the same scores and the store's number: every body names its own id,
/// every id reads back its own text, and no scorer is asked twice.
#[test]
fn results_in_flight_at_once_get_unique_ids_in_the_order_they_finish() {
    for form in [Form::Import, Form::Jobs] {
        let log = Arc::new(CapturedLog::new());
        let conversation = pruner()
            .conversation(ConversationOptions {
                enabled: true,
                agent: "test".to_string(),
                log: log.clone(),
                form,
                ..ConversationOptions::default()
            })
            .unwrap();
        let turn = conversation.turn(REQUEST);
        let delays = [900u64, 0, 450, 150];
        let scorers: Vec<Arc<ScriptedScorer>> =
            delays.iter().map(|&ms| Arc::new(resumption_scorer().delay(Duration::from_millis(ms)))).collect();
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = scorers
                .iter()
                .map(|scorer| {
                    let turn = turn.clone();
                    let scoring = Scoring::from(scorer.clone());
                    scope.spawn(move || {
                        let result = ToolResult { scoring: Some(scoring), ..ToolResult::prunable("fetch", TRANSPORTS) };
                        turn.on_tool_result(result)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ids: Vec<_> = results.iter().map(|r| r.id.clone().unwrap_or_default()).collect();
        assert_eq!(ids, ["P4", "P1", "P3", "P2"], "{form:?}: ids follow the finishing order (delays {delays:?})");
        assert_eq!(conversation.count(), 4);
        for (result, scorer) in results.iter().zip(&scorers) {
            let id = result.id.as_deref().unwrap();
            assert!(result.body.contains(&format!("id={id}]")), "{form:?}: the body names its own id {id}");
            assert_eq!(scorer.calls(), 1, "{form:?}: {id}'s scorer was asked once");
            assert_eq!(result.scorer_calls, 1, "{form:?}: {id}");
            let line = result.log_line.as_deref().unwrap();
            assert!(log.lines().iter().any(|l| l == line), "{form:?}: {id}'s line was written");
        }
        let stored: Vec<String> = conversation.stored().into_iter().map(|r| r.id).collect();
        assert_eq!(stored, ["P1", "P2", "P3", "P4"], "{form:?}: no gap, no duplicate");
        let bodies: std::collections::BTreeSet<&str> = results.iter().map(|r| &*r.body).collect();
        assert_eq!(bodies.len(), 4, "{form:?}: same text and scores, four ids: four bodies");
    }
}

/// The import form gives the job form's bytes, and asks the scorer the
/// same once: the default form goes through `pruner.prune`.
#[test]
fn the_import_and_the_job_form_give_the_same_bytes_with_one_scorer_call() {
    let mut bodies = Vec::new();
    for form in [Form::Import, Form::Jobs] {
        let scorer = Arc::new(resumption_scorer());
        let conversation = pruner()
            .conversation(ConversationOptions {
                enabled: true,
                scoring: Some(Scoring::from(scorer.clone())),
                log: Arc::new(CapturedLog::new()),
                form,
                ..ConversationOptions::default()
            })
            .unwrap();
        assert_eq!(conversation.form(), form);
        let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
        assert_eq!(result.outcome, Outcome::Ok);
        assert_eq!((scorer.calls(), result.scorer_calls), (1, 1), "{form:?}");
        // The line's `ms=` is the scorer's wall time: the only field allowed to differ.
        let line = result.log_line.clone().unwrap_or_default();
        let line: Vec<&str> = line.split(' ').filter(|field| !field.starts_with("ms=")).collect();
        bodies.push((result.body.to_string(), line.join(" "), result.counts.clone().map(|c| (c.work, c.dropped))));
    }
    assert_eq!(bodies[0], bodies[1]);
    assert_eq!(ConversationOptions::default().form, Form::Import, "the import form is the default");
}

#[test]
fn a_trap_while_another_result_is_in_flight_does_not_lose_that_result() {
    // Memory for the page, not for the page ×400: the second result traps
    // (the instance is dropped) while the first one is being scored.
    let pruner = with_limits(LimitsOverride { memory_bytes: Some(8 << 20), ..LimitsOverride::default() });
    let log = Arc::new(CapturedLog::new());
    let conversation = conversation_on(&pruner, Scoring::Offline, &log);
    let turn = conversation.turn(REQUEST);
    let huge = TRANSPORTS.repeat(400);
    let (slow, trapped) = std::thread::scope(|scope| {
        let slow_turn = turn.clone();
        let slow = scope.spawn(move || {
            let scorer = resumption_scorer().delay(Duration::from_millis(600));
            slow_turn.on_tool_result(ToolResult { scoring: Some(Scoring::host(scorer)), ..ToolResult::prunable("fetch", TRANSPORTS) })
        });
        std::thread::sleep(Duration::from_millis(150));
        let trapped = turn.on_tool_result(ToolResult::prunable("fetch", huge.as_str()));
        (slow.join().unwrap(), trapped)
    });
    assert_eq!(trapped.outcome, Outcome::Failed);
    assert_eq!(slow.outcome, Outcome::Ok, "{:?}", slow.log_line);
    assert_eq!(slow.id.as_deref(), Some("P1"));
    assert_eq!(conversation.omitted(r#"{"id":"P1","from":0,"to":0}"#).outcome, Some(OmittedOutcome::Ok), "P1 survived the other call's trap");
}

/// A scorer that panics.
struct Panicking;

impl Scorer for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }
    fn score(&self, _: &ScoringRequest, _: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        panic!("a bug in the scorer")
    }
}

#[test]
fn a_scorer_that_panics_is_a_scorer_failure() {
    // Inside the import (the default form) as between a job's calls: an
    // answer, never a trap; the same outcome and line.
    let mut seen = Vec::new();
    for form in [Form::Import, Form::Jobs] {
        let log = Arc::new(CapturedLog::new());
        let conversation = pruner()
            .conversation(ConversationOptions {
                enabled: true,
                agent: "test".to_string(),
                scoring: Some(Scoring::host(Panicking)),
                log: log.clone(),
                form,
                ..ConversationOptions::default()
            })
            .unwrap();
        let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
        assert_eq!(result.outcome, Outcome::Failed);
        assert!(result.unchanged());
        assert_eq!(result.failure, None, "{form:?}: not a host failure: the guest decided");
        assert_eq!(result.scorer_calls, 1);
        assert!(!result.failures.is_empty());
        assert!(result.failures.iter().all(|f| f.status.is_none() && toolprune::types::wit_name(&f.class) == "network"));
        let lines = log.lines();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains(" outcome=failed shape=text ") && lines[0].ends_with(" scorer=panicking"), "{}", lines[0]);
        seen.push(lines[0].split(" ms=").next().unwrap().to_string());
    }
    assert_eq!(seen[0], seen[1], "the same line in both forms");
}

/// A scorer that never answers (and ignores the host's stop).
struct Stuck;

impl Scorer for Stuck {
    fn name(&self) -> &str {
        "stuck"
    }
    fn score(&self, _: &ScoringRequest, _: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        std::thread::sleep(Duration::from_secs(30));
        Ok(Vec::new())
    }
}

#[test]
fn the_deadline_holds_for_a_custom_scorer_that_never_answers() {
    let log = Arc::new(CapturedLog::new());
    let conversation = pruner()
        .conversation(ConversationOptions {
            enabled: true,
            scoring: Some(Scoring::host(Stuck)),
            log: log.clone(),
            deadline_cap: Some(Duration::from_millis(300)),
            ..ConversationOptions::default()
        })
        .unwrap();
    let start = Instant::now();
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
    let took = start.elapsed();
    assert_eq!(result.outcome, Outcome::Timeout);
    assert!(result.unchanged());
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_failed_batch_answer_reaches_the_guest_as_it_is() {
    let log = Arc::new(CapturedLog::new());
    let scorer = resumption_scorer().fail_batch(0, Failure::Http(503));
    let conversation = conversation(Arc::new(scorer), &log);
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
    assert_eq!(result.failures.len(), 1);
    assert_eq!((result.failures[0].batch, result.failures[0].status), (0, Some(503)));
}

/// A log sink that panics (a closed pipe, a bug) loses its lines, never the
/// result: the caller still gets the pruned body, and `omitted` answers
/// (SPEC §11; a tester's JS and Python sinks that threw took the body away
/// after the result was stored).
#[test]
fn a_sink_that_panics_never_costs_the_result() {
    let sink: Arc<dyn toolprune::LogSink> = Arc::new(|_: &str| panic!("the log is broken"));
    let conversation = pruner()
        .conversation(ConversationOptions {
            enabled: true,
            scoring: Some(Scoring::host(resumption_scorer())),
            log: sink,
            ..ConversationOptions::default()
        })
        .unwrap();
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
    assert_eq!(result.outcome_name(), "ok");
    assert!(result.body.starts_with("[Omitted by relevance:"));
    let answer = conversation.omitted(r#"{"id": "P1", "from": 0, "to": 0}"#);
    assert_eq!(answer.outcome, Some(OmittedOutcome::Ok), "{}", answer.text);
}
