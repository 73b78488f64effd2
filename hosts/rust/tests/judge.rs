//! The library's judge router ([`Judge`]): fixed answers (the guest's
//! `route`) and a live call through `judge-job` with the host's transport
//! (a host scorer, under the deadline). The CLI's side is `cli/tests/judge.rs`.

use std::sync::Arc;

use serde_json::json;
use toolprune::judge::{Judge, RouteError, Verdict};
use toolprune::types::{wit_name, Failure};
use toolprune::{CapturedLog, Pruner, ScriptedScorer};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/judge");

fn example_rules() -> String {
    std::fs::read_to_string(format!("{EXAMPLE}/rules.toml")).expect("the example rules file")
}

/// A Jev response for the example's questions.
fn answers(risky: f64, kind: [f64; 3], size: [f64; 3]) -> String {
    let mean = size[1] + 2.0 * size[2];
    json!({
        "answers": {
            "risky": {"type": "noul", "noul": risky},
            "kind": {"type": "choice", "choice": "research",
                     "probabilities": {"research": kind[0], "implement": kind[1], "other": kind[2]}},
            "size": {"type": "score", "score": mean,
                     "probabilities": {"0": size[0], "1": size[1], "2": size[2]}},
        },
        "usage": {"input_tokens": 534, "output_tokens": 87}
    })
    .to_string()
}

const SMALL: [f64; 3] = [0.8, 0.15, 0.05];

// ---- the library ----------------------------------------------------------

fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component compiles")
}

#[test]
fn a_live_call_and_fixed_answers_agree() {
    let body = answers(0.03, [0.99, 0.01, 0.0], SMALL);
    let scorer = Arc::new(ScriptedScorer::new().jev_response(0, body.clone()));
    let log = Arc::new(CapturedLog::new());
    let judge = Judge::new(pruner(), Some(scorer.clone())).with_log(log.clone());
    let live = judge.route(&example_rules(), "m").expect("a decision");
    let fixed = judge.route_with_answers(&example_rules(), "m", &body).expect("a decision");
    assert_eq!(format!("{live:?}"), format!("{fixed:?}"));
    assert!(matches!(&fixed.verdict, Verdict::Routed(to) if to == &["agent_3"]), "{fixed:?}");
    assert_eq!(scorer.calls(), 1, "one call for the live path; none with fixed answers");
    let requests = scorer.requests();
    let request = &requests[0];
    assert_eq!(request.batches.len(), 1);
    assert!(request.batches[0].chunks.is_empty() && request.batches[0].paragraphs.is_empty());
    assert!(
        request.basis.is_empty(),
        "the judge sends no basis; the message is in the body"
    );
    assert_eq!(log.lines().len(), 2);
    assert!(log.lines().iter().all(|l| *l == log.lines()[0]));
}

#[test]
fn a_scorer_that_is_not_jev_cannot_judge() {
    let log = Arc::new(CapturedLog::new());
    // Scores are no Jev answer: the judge cannot decide from them.
    let decision = Judge::new(pruner(), Some(Arc::new(ScriptedScorer::new())))
        .with_log(log.clone())
        .route(&example_rules(), "m")
        .expect("a decision");
    assert!(matches!(&decision.verdict, Verdict::Failed(c) if wit_name(c) == "no_answer"), "{decision:?}");
    let failing = Arc::new(ScriptedScorer::new().fail_batch(0, Failure::Http(503)));
    let decision = Judge::new(pruner(), Some(failing))
        .with_log(log.clone())
        .route(&example_rules(), "m")
        .expect("a decision");
    assert!(matches!(&decision.verdict, Verdict::Failed(c) if wit_name(c) == "http_5xx"), "{decision:?}");
    assert_eq!(decision.rule, None);
    assert_eq!(log.lines()[1], "judge: rule=- failed reason=http-5xx");
}

#[test]
fn invalid_rules_come_back_as_errors_from_both_calls() {
    let judge = Judge::new(pruner(), Some(Arc::new(ScriptedScorer::new())));
    for result in [
        judge.route("[questions.x]\n", "m"),
        judge.route_with_answers("[questions.x]\n", "m", "{}"),
    ] {
        let Err(RouteError::Rules(errors)) = result else {
            panic!("rules errors")
        };
        assert!(
            errors.iter().any(|e| e.message.contains("has no `type`")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.message.contains("no rules")),
            "{errors:?}"
        );
    }
}
