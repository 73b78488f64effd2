//! SPEC §14: the non-blocking form (`prune-job`: create, take the scoring
//! request, score it yourself, finish) gives the same bytes as `prune`.

use toolprune::types::Lang;
use toolprune::{Scorer, ToolResult};
use toolprune_tests::*;

#[test]
fn the_job_form_gives_the_same_bytes_as_the_one_shot_form() {
    let docs = [
        (uniform(20, 400), REQUEST.to_string()),
        {
            let d = corpus_doc("pydantic-validators.wrapper.json");
            (d.text(), d.request_en)
        },
        {
            let d = corpus_doc("rust-rfc-3013-check-cfg.crlf.md");
            (d.text(), d.request_en)
        },
    ];
    for (text, request) in docs {
        let scorer = dropping_odd(10_000);
        let mut o = options(&request);
        o.lang = Lang::Ja;

        let (mut one_shot, one_log) = turn_with(o.clone(), scorer.clone());
        let a = prune(&mut one_shot, &text);

        let (mut jobs, job_log) = turn_with(o, scorer.clone());
        let job = jobs.begin(ToolResult::prunable(TOOL, text.clone()));
        let request = job.scoring_request().cloned().expect("a call is due");
        // The host scores it itself (here: on this thread, with the same scorer).
        let response = Scorer::score(&*scorer, &request);
        let b = job.finish(Some(response));

        assert_eq!(outcome(&a), "ok");
        assert!(a.body == b.body, "same bytes");
        assert_eq!(a.raw, b.raw);
        assert_eq!(a.outcome, b.outcome);
        assert_eq!(one_log.lines(), job_log.lines());
        assert_eq!(format!("{:?}", one_shot.stored()), format!("{:?}", jobs.stored()));
        let requests = scorer.requests();
        assert_eq!(format!("{:?}", requests[0]), format!("{:?}", requests[1]), "the same scoring request both ways");
        // And the way back works the same after a job.
        let args = r#"{"id":"P1","from":0,"to":100000}"#;
        assert_eq!(one_shot.omitted(args).unwrap().text, jobs.omitted(args).unwrap().text);
    }
}

#[test]
fn a_job_without_a_call_finishes_like_prune() {
    let text = uniform(20, 400);
    for request in [REQUEST, "ok"] {
        for result in [
            ToolResult::prunable(TOOL, text.clone()),
            ToolResult { tool: TOOL.into(), succeeded: true, prunable: false, text: text.clone() },
            ToolResult::prunable(TOOL, text_of(&[7_000, 7_000])),
            ToolResult::prunable(TOOL, serde_json::to_string(&vec![text.clone()]).unwrap()),
        ] {
            let scorer = dropping([1, 2, 3, 4, 5, 6]);
            let (mut one_shot, one_log) = turn(request, scorer.clone());
            let a = one_shot.on_tool_result(result.clone());
            let (mut jobs, job_log) = turn(request, scorer.clone());
            let b = jobs.on_tool_result_via_job(result);
            assert!(a.body == b.body);
            assert_eq!(a.outcome, b.outcome);
            assert_eq!(one_log.lines(), job_log.lines());
        }
    }
}

#[test]
fn finishing_without_the_answer_that_was_due_fails_open() {
    let text = uniform(20, 400);
    let (mut jobs, log) = turn(REQUEST, dropping([1, 2, 3, 4, 5, 6]));
    let job = jobs.begin(ToolResult::prunable(TOOL, text.clone()));
    assert!(job.scoring_request().is_some());
    let p = job.finish(None);
    assert_eq!(outcome(&p), "failed");
    assert!(p.body == text);
    assert!(prune_line(&log).contains(" outcome=failed "));
}

#[test]
fn the_offline_scorer_gives_the_same_bytes_both_ways() {
    let doc = corpus_doc("mcp-spec-2025-11-25-transports.mdx");
    let text = doc.text();
    let mut o = options(&doc.request_en);
    o.threshold = 0.3;
    let offline = std::sync::Scoring::Offline;
    let (mut one_shot, one_log) = turn_with(o.clone(), offline.clone());
    let a = prune(&mut one_shot, &text);
    let (mut jobs, job_log) = turn_with(o, offline);
    let job = jobs.begin(ToolResult::prunable(TOOL, text.clone()));
    assert!(job.scoring_request().is_none(), "offline: no request for the host");
    let b = job.finish(None);
    assert!(a.body == b.body);
    assert_eq!(a.outcome, b.outcome);
    assert_eq!(one_log.lines(), job_log.lines());
}
