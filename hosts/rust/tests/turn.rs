//! The host's contract with the component, end to end: a corpus page pruned
//! with scripted scores, fail-open on traps and limits, the turn store read
//! back through `omitted`, and the non-blocking `prune-job` form.

use std::sync::Arc;

use toolprune::types::{OmittedOutcome, Outcome, ParagraphInfo};
use toolprune::{CapturedLog, Limits, Pruner, ScriptedScorer, ToolResult, Turn, TurnOptions};
use wasmtime::Trap;

const TRANSPORTS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpus/mcp-spec-2025-11-25-transports.mdx"
));

const REQUEST: &str = "How does a client resume a broken Streamable HTTP SSE stream? Which header carries the last event ID?";

fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component compiles")
}

fn options() -> TurnOptions {
    let mut options = TurnOptions::new(REQUEST);
    options.enabled = true;
    options.agent = "test".to_string();
    options
}

fn paragraphs(text: &str) -> Vec<ParagraphInfo> {
    pruner().paragraphs(text).expect("paragraphs")
}

fn slice<'t>(text: &'t str, p: &ParagraphInfo) -> &'t str {
    &text[p.byte_start as usize..p.byte_end as usize]
}

/// Paragraph numbers of `text` whose text mentions `needle`.
fn mentioning(text: &str, needle: &str) -> Vec<u32> {
    paragraphs(text)
        .iter()
        .filter(|p| slice(text, p).contains(needle))
        .map(|p| p.index)
        .collect()
}

/// Keeps the paragraphs about resumption (score 0.9), drops the rest (0.05).
fn resumption_scorer() -> ScriptedScorer {
    ScriptedScorer::new()
        .default_score(Some(0.05))
        .scores(mentioning(TRANSPORTS, "Last-Event-ID"), 0.9)
        .elapsed_ms(7)
}

fn turn(scorer: Arc<ScriptedScorer>, log: Arc<CapturedLog>) -> Turn {
    Turn::new(pruner(), scorer, options()).with_log(log)
}

#[test]
fn the_transports_page_keeps_what_answers_and_stores_what_it_dropped() {
    let scorer = Arc::new(resumption_scorer());
    let log = Arc::new(CapturedLog::new());
    let mut turn = turn(scorer.clone(), log.clone());

    let pruned = turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));

    assert_eq!(
        pruned.outcome,
        Outcome::Ok,
        "{:?}",
        pruned.report.as_ref().map(|r| &r.log_line)
    );
    assert_eq!(pruned.raw, TRANSPORTS);
    assert!(pruned.body.len() < TRANSPORTS.len() / 2);
    let kept = mentioning(TRANSPORTS, "Last-Event-ID");
    assert!(!kept.is_empty());
    for p in paragraphs(TRANSPORTS)
        .iter()
        .filter(|p| kept.contains(&p.index))
    {
        assert!(
            pruned.body.contains(slice(TRANSPORTS, p).trim_end()),
            "paragraph {} kept verbatim",
            p.index
        );
    }

    // One scorer call; what would have left the machine is the request and paragraphs of the page.
    assert_eq!(scorer.calls(), 1);
    let request = &scorer.requests()[0];
    assert_eq!(request.basis, REQUEST);
    for batch in &request.batches {
        assert_eq!(batch.paragraphs.len(), batch.chunks.len());
        assert!(batch
            .chunks
            .iter()
            .all(|chunk| TRANSPORTS.contains(chunk.as_str())));
    }

    let stored = turn.stored();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].id, "P1");
    assert!(!stored[0].dropped.is_empty() && stored[0].dropped.iter().all(|p| !kept.contains(p)));

    let lines = log.lines();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("tool prune: agent=test name=fetch outcome=ok "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" ms=7 "), "{}", lines[0]);
}

#[test]
fn a_gate_that_stops_the_call_sends_nothing_and_logs_nothing() {
    let scorer = Arc::new(ScriptedScorer::new());
    let log = Arc::new(CapturedLog::new());
    let mut turn =
        Turn::new(pruner(), scorer.clone(), TurnOptions::new(REQUEST)).with_log(log.clone());

    let pruned = turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS)); // pruning off by default

    assert_eq!(pruned.body, TRANSPORTS);
    assert_eq!(scorer.calls(), 0);
    assert!(log.lines().is_empty());
    assert!(turn.stored().is_empty());
}

#[test]
fn running_out_of_fuel_returns_the_raw_text_and_the_next_call_gets_a_fresh_instance() {
    let scorer = Arc::new(resumption_scorer());
    let log = Arc::new(CapturedLog::new());
    let mut turn = turn(scorer, log.clone());

    turn.set_limits(Limits {
        fuel: 10_000,
        ..Limits::default()
    });
    let failed = turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
    assert_eq!(failed.outcome, Outcome::Failed);
    assert_eq!(failed.body, TRANSPORTS);
    assert_eq!(failed.raw, TRANSPORTS);
    assert!(failed.report.is_none());
    let failure = failed.failure.expect("a failure");
    assert_eq!(
        (failure.reason, failure.trap),
        ("guest_trap", Some(Trap::OutOfFuel))
    );
    assert_eq!(
        log.lines(),
        ["tool prune: agent=test name=fetch outcome=failed reason=guest_trap limit=fuel"]
    );

    turn.set_limits(Limits::default());
    let pruned = turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
    assert_eq!(pruned.outcome, Outcome::Ok);
    assert_eq!(turn.stored()[0].id, "P1", "a failed result takes no id");
}

#[test]
fn hitting_the_memory_limit_returns_the_raw_text_and_the_turn_goes_on() {
    let scorer = Arc::new(resumption_scorer());
    let log = Arc::new(CapturedLog::new());
    let mut turn = turn(scorer, log.clone());
    let huge = TRANSPORTS.repeat(400); // ~6.4 MB

    turn.set_limits(Limits {
        memory_bytes: 4 << 20,
        ..Limits::default()
    });
    let failed = turn.on_tool_result(ToolResult::prunable("fetch", huge.as_str()));
    assert_eq!(failed.outcome, Outcome::Failed);
    assert!(failed.body == huge && failed.raw == huge);
    assert!(
        log.lines()[0].ends_with("outcome=failed reason=guest_trap limit=memory"),
        "{:?}",
        log.lines()
    );
    assert_eq!(failed.failure.as_ref().and_then(|f| f.limit), Some("memory"));

    turn.set_limits(Limits::default());
    assert_eq!(
        turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS))
            .outcome,
        Outcome::Ok
    );
}

#[test]
fn omitted_reads_back_both_results_of_the_turn() {
    let scorer = Arc::new(resumption_scorer());
    let log = Arc::new(CapturedLog::new());
    let mut turn = turn(scorer, log.clone());
    assert_eq!(
        turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS))
            .outcome,
        Outcome::Ok
    );
    assert_eq!(
        turn.on_tool_result(ToolResult::prunable("fetch", TRANSPORTS))
            .outcome,
        Outcome::Ok
    );
    let ids: Vec<_> = turn.stored().iter().map(|s| s.id.clone()).collect();
    assert_eq!(ids, ["P1", "P2"]);

    let all = paragraphs(TRANSPORTS);
    let kept = mentioning(TRANSPORTS, "Last-Event-ID");
    for id in ["P1", "P2"] {
        let first_dropped = turn.stored()[0].dropped[0];
        let answer = turn
            .omitted(&format!(
                r#"{{"id":"{id}","from":{first_dropped},"to":{first_dropped}}}"#
            ))
            .expect("the guest answers");
        assert_eq!(answer.outcome, OmittedOutcome::Ok, "{}", answer.log_line);
        let p = &all[first_dropped as usize];
        assert!(
            answer.text.contains(slice(TRANSPORTS, p).trim()),
            "paragraph {first_dropped} verbatim"
        );
        assert!(kept.iter().all(|k| !answer
            .text
            .contains(slice(TRANSPORTS, &all[*k as usize]).trim())));
    }

    let missing = turn
        .omitted(r#"{"id":"P3","from":0,"to":0}"#)
        .expect("the guest answers");
    assert_eq!(missing.outcome, OmittedOutcome::NotFound);
    let omitted_lines: Vec<_> = log
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("tool omitted: agent=test "))
        .collect();
    assert_eq!(omitted_lines.len(), 3, "{omitted_lines:?}");
}

#[test]
fn the_prune_job_form_gives_the_same_answer_as_prune() {
    let blocking_log = Arc::new(CapturedLog::new());
    let blocking = turn(Arc::new(resumption_scorer()), blocking_log.clone())
        .on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));

    let scorer = Arc::new(resumption_scorer());
    let job_log = Arc::new(CapturedLog::new());
    let mut job_turn = turn(scorer.clone(), job_log.clone());
    let job = job_turn.begin(ToolResult::prunable("fetch", TRANSPORTS));
    let request = job.scoring_request().cloned().expect("a request to score");
    assert_eq!(
        scorer.calls(),
        0,
        "the guest does not call the import in the job form"
    );
    let response = toolprune::Scorer::score(&*scorer, &request);
    let via_job = job.finish(Some(response));

    assert_eq!(via_job.outcome, Outcome::Ok);
    assert_eq!(via_job.body, blocking.body);
    assert_eq!(job_log.lines(), blocking_log.lines());
    assert_eq!(job_turn.stored()[0].dropped, turn_stored_dropped(&blocking));

    // The turn's convenience wrapper takes the same path.
    let again = job_turn.on_tool_result_via_job(ToolResult::prunable("fetch", TRANSPORTS));
    assert_eq!(again.outcome, Outcome::Ok);
    assert_eq!(job_turn.stored()[1].id, "P2");
}

fn turn_stored_dropped(pruned: &toolprune::Pruned) -> Vec<u32> {
    pruned
        .report
        .as_ref()
        .and_then(|r| r.record.as_ref())
        .map(|r| r.dropped.clone())
        .unwrap_or_default()
}
