//! The judge end to end on the seed's rules file (seed 003 §5), with fixed
//! answers: each rule, `otherwise`, failures, the threshold-only flip, and
//! every load-time validation error.

use super::*;

/// The seed's example, verbatim (the judge's questions and rules are written
/// in Japanese there; the code does not care).
pub const SEED_RULES: &str = r#"[questions.kind]
type = "choice"
ask  = "依頼 `message` の主な作業の種類を選んでください。"
options = { research = "外部情報の調査・比較", implement = "コードの変更・実装", other = "上記のいずれにも当てはまらない" }

[questions.risky]
type = "noul"
ask  = "`message` は取り消せない操作を依頼していますか。"
true_if  = "削除・公開・送信など取り消せない操作を依頼している"
false_if = "読み取り・調査・下書きだけを依頼している"

[questions.size]
type = "score"
ask  = "`message` の作業量を評価してください。"
levels = ["1 回の検索で済む", "数件の資料を比べる", "複数の工程に分かれる"]

# 上から順に評価し、最初に当たった規則だけを実行する
[[rules]]
when = "risky >= 0.7"
do   = "return"
note = "取り消せない操作を含むので振り分けませんでした"

[[rules]]
when = "kind == research and size >= 3"
to   = ["agent_3", "agent_10"]   # 2 体へ撒いて、答えを束ねる

[[rules]]
when = "kind == research and kind.margin >= 0.2"
to   = ["agent_3"]

[[rules]]
when = "kind == implement"
to   = ["agent_10"]

[otherwise]
do = "return"
"#;

/// A Jev response in its wire shape: `kind` probabilities for research,
/// implement, other; `size` probabilities for levels 0, 1, 2 and its score.
fn answers(risky: f64, kind: [f64; 3], size: [f64; 3], score: f64) -> String {
    format!(
        r#"{{"model":"jev-1.13.0","answers":{{
            "kind":{{"type":"choice","choice":"research","probabilities":{{"research":{},"implement":{},"other":{}}},"confidence":0.9}},
            "risky":{{"type":"noul","noul":{risky}}},
            "size":{{"type":"score","score":{score},"probabilities":{{"0":{},"1":{},"2":{}}},"legend":{{"0":"…"}},"confidence":0.9}}}},
          "usage":{{"input_tokens":534,"output_tokens":87}}}}"#,
        kind[0], kind[1], kind[2], size[0], size[1], size[2]
    )
}

fn judge(rules: &str, body: &str) -> Judgement {
    let rules = rules::load(rules).unwrap_or_else(|e| panic!("{e:?}"));
    decide(&rules, Reply::Body(body))
}

const SMALL: [f64; 3] = [0.8, 0.15, 0.05];
const LARGE: [f64; 3] = [0.02, 0.07, 0.91];

#[test]
fn the_seeds_file_loads_in_its_order() {
    let rules = rules::load(SEED_RULES).unwrap();
    let names: Vec<_> = rules.questions.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["kind", "risky", "size"]);
    assert_eq!(rules.rules.len(), 4);
    assert_eq!(
        rules.rules[1].action,
        Action::Route(vec!["agent_3".into(), "agent_10".into()])
    );
    assert_eq!(rules.otherwise, Action::Return(None));
}

#[test]
fn rule_1_returns_with_its_note_when_the_request_is_risky() {
    let j = judge(SEED_RULES, &answers(0.91, [0.99, 0.01, 0.0], LARGE, 1.89));
    assert_eq!(
        j.verdict,
        Verdict::Returned(Some(
            "取り消せない操作を含むので振り分けませんでした".into()
        ))
    );
    assert_eq!(j.rule, Some(1));
    assert_eq!(
        j.log_line,
        "judge: kind=research/0.99/0.98 risky=0.91 size=3/0.91/0.84 size.mean=2.89 rule=1 returned"
    );
}

#[test]
fn rule_2_fans_out_large_research() {
    let j = judge(SEED_RULES, &answers(0.03, [0.99, 0.01, 0.0], LARGE, 1.89));
    assert_eq!(
        j.verdict,
        Verdict::Routed(vec!["agent_3".into(), "agent_10".into()])
    );
    assert_eq!(j.rule, Some(2));
    assert_eq!(j.jev_tokens, 534);
    assert!(
        j.log_line.ends_with(" rule=2 routed to=agent_3,agent_10"),
        "{}",
        j.log_line
    );
}

#[test]
fn rule_2_reads_the_most_probable_level_not_the_expected_value() {
    // The seed's surprise: 90 % on the top level gives score 1.89 (0-based
    // expected value); `size >= 3` must still hold.
    let j = judge(
        SEED_RULES,
        &answers(0.03, [0.99, 0.01, 0.0], [0.05, 0.05, 0.9], 1.85),
    );
    assert_eq!(j.rule, Some(2));
    assert_eq!(
        j.answers[2].1,
        Answer::Score {
            level: 3,
            p: 0.9,
            margin: 0.85,
            mean: 2.85
        }
    );
}

#[test]
fn rule_3_hands_clear_research_to_one_agent() {
    let j = judge(SEED_RULES, &answers(0.03, [0.99, 0.01, 0.0], SMALL, 0.25));
    assert_eq!(j.verdict, Verdict::Routed(vec!["agent_3".into()]));
    assert_eq!(j.rule, Some(3));
    assert_eq!(
        j.log_line,
        "judge: kind=research/0.99/0.98 risky=0.03 size=1/0.80/0.65 size.mean=1.25 rule=3 routed to=agent_3"
    );
}

#[test]
fn rule_4_sends_implementation_to_agent_10() {
    let j = judge(SEED_RULES, &answers(0.2, [0.03, 0.95, 0.02], SMALL, 0.25));
    assert_eq!(j.verdict, Verdict::Routed(vec!["agent_10".into()]));
    assert_eq!(j.rule, Some(4));
}

#[test]
fn otherwise_when_no_rule_matches() {
    // Research, but too close to implement (margin 0.1 < 0.2), small.
    let j = judge(SEED_RULES, &answers(0.03, [0.55, 0.45, 0.0], SMALL, 0.25));
    assert_eq!(j.verdict, Verdict::Returned(None));
    assert_eq!(j.rule, None);
    assert!(
        j.log_line.ends_with(" rule=otherwise returned"),
        "{}",
        j.log_line
    );
}

#[test]
fn a_failed_call_is_failed_never_otherwise() {
    let rules = rules::load(SEED_RULES).unwrap();
    for (reply, class) in [
        (Reply::Failed("http-5xx"), "http-5xx"),
        (Reply::Failed("timeout"), "timeout"),
        (Reply::Body("<html>"), "undecodable"),
        (
            Reply::Body(r#"{"answers":{"kind":{"probabilities":{"research":1}}}}"#),
            "no-answer",
        ),
    ] {
        let j = decide(&rules, reply);
        assert_eq!(j.verdict, Verdict::Failed(class));
        assert_eq!(j.rule, None);
        assert!(j.answers.is_empty());
        assert_eq!(j.log_line, format!("judge: rule=- failed reason={class}"));
    }
}

#[test]
fn a_host_response_maps_to_its_failure_class() {
    let response = |answers| ScoringResponse {
        answers,
        elapsed_ms: 5,
    };
    let class = |r: &ScoringResponse| match Reply::of(r) {
        Reply::Failed(c) => c,
        Reply::Body(_) => "body",
    };
    assert_eq!(
        class(&response(Ok(vec![BatchAnswer::Failed(Failure::Http(503))]))),
        "http-5xx"
    );
    assert_eq!(
        class(&response(Ok(vec![BatchAnswer::Failed(Failure::Http(402))]))),
        "out-of-credit"
    );
    assert_eq!(
        class(&response(Ok(vec![BatchAnswer::Failed(Failure::Http(429))]))),
        "rate-limited"
    );
    assert_eq!(
        class(&response(Ok(vec![BatchAnswer::Failed(Failure::Network)]))),
        "network"
    );
    assert_eq!(class(&response(Err(ScoringStop::Cancelled))), "cancelled");
    assert_eq!(
        class(&response(Ok(vec![BatchAnswer::Scores(vec![Some(1.0)])]))),
        "no-answer"
    );
    assert_eq!(class(&response(Ok(vec![]))), "no-answer");
    assert_eq!(
        class(&response(Ok(vec![BatchAnswer::JevResponse("{}".into())]))),
        "body"
    );
}

#[test]
fn changing_only_a_threshold_flips_the_route_with_identical_answers() {
    // Seed 003 §5: hold Jev's answer fixed, move the deterministic side.
    let body = answers(0.03, [0.99, 0.01, 0.0], SMALL, 0.25);
    let at = |threshold: &str| {
        let rules =
            SEED_RULES.replace("kind.margin >= 0.2", &format!("kind.margin >= {threshold}"));
        judge(&rules, &body)
    };
    let routed = at("0.6");
    assert_eq!(
        (routed.rule, routed.verdict),
        (Some(3), Verdict::Routed(vec!["agent_3".into()]))
    );
    let returned = at("0.99");
    assert_eq!(
        (returned.rule, returned.verdict),
        (None, Verdict::Returned(None))
    );
    assert_eq!(
        routed.answers, returned.answers,
        "not one digit of the answers moved"
    );
}

#[test]
fn the_job_asks_one_call_carrying_every_question() {
    let job = Job::load(
        SEED_RULES,
        "本番 DB を消して".into(),
        Some("jev-1.13.0".into()),
    )
    .unwrap();
    let request = job.scoring_request();
    assert_eq!(request.batches.len(), 1);
    assert!(request.batches[0].paragraphs.is_empty() && request.batches[0].chunks.is_empty());
    assert_eq!(request.basis, "");
    let body: serde_json::Value = serde_json::from_str(&request.batches[0].jev_body).unwrap();
    assert_eq!(body["state"]["message"], "本番 DB を消して");
    assert_eq!(body["questions"].as_object().map(|q| q.len()), Some(3));
    assert_eq!(request.policy.deadline_ms, 20_000);

    let response = ScoringResponse {
        answers: Ok(vec![BatchAnswer::JevResponse(answers(
            0.97,
            [0.1, 0.8, 0.1],
            SMALL,
            0.25,
        ))]),
        elapsed_ms: 600,
    };
    let decision = job.finish(response);
    assert_eq!(decision.rule, Some(1));
    assert_eq!(decision.answers.len(), 3);
    assert_eq!(decision.answers[0].value.as_deref(), Some("implement"));
    assert_eq!(decision.answers[2].value.as_deref(), Some("1"));
    assert_eq!(decision.answers[2].mean, Some(1.25));
}

#[test]
fn route_decides_from_fixed_answers() {
    let decision = route(SEED_RULES, "m".into(), None, &answers(0.03, [0.99, 0.01, 0.0], SMALL, 0.25)).unwrap();
    assert_eq!(decision.rule, Some(3));
    let decision = route(SEED_RULES, "m".into(), None, "<html>").unwrap();
    assert_eq!(decision.rule, None);
    assert!(matches!(
        decision.verdict,
        crate::types::Verdict::Failed(crate::types::FailureClass::Undecodable)
    ));
    let errors = route("nope", "m".into(), None, "{}").unwrap_err();
    assert_eq!(errors[0].line, 1);
}

// ---- validation -------------------------------------------------------

/// The errors of `src` as `line:column: message`.
fn errors(src: &str) -> Vec<String> {
    rules::load(src)
        .expect_err("invalid")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn has(src: &str, needle: &str) {
    let errors = errors(src);
    assert!(
        errors.iter().any(|e| e.contains(needle)),
        "no `{needle}` in {errors:#?}"
    );
}

const Q: &str = "[questions.kind]\ntype = \"choice\"\nask = \"a\"\noptions = { research = \"r\", implement = \"i\" }\n";
const OTHERWISE: &str = "[otherwise]\ndo = \"return\"\n";

/// A file with the questions `Q`, one rule `when`/`then`, and `[otherwise]`.
fn with_rule(body: &str) -> String {
    format!("{Q}\n[[rules]]\n{body}\n\n{OTHERWISE}")
}

#[test]
fn errors_carry_line_and_column() {
    // `knd` is on line 7, column 9 of the file (inside the `when` string).
    let src = with_rule("when = \"knd == research\"\nto = [\"a\"]");
    assert_eq!(
        errors(&src),
        ["7:9: rule 1: unknown question `knd` (declared: kind)"]
    );
    // An undeclared option points at the option.
    let src = with_rule("when = \"kind == reserch\"\nto = [\"a\"]");
    assert_eq!(
        errors(&src),
        ["7:17: rule 1: `kind` has no option `reserch` (options: research, implement)"]
    );
    // A string with escapes points at the string.
    let src = with_rule("when = \"kind == \\u0072eserch\"\nto = [\"a\"]");
    assert_eq!(errors(&src)[0].split(": ").next(), Some("7:8"));
    // A TOML error points at its byte.
    assert_eq!(errors("[questions.kind]\ntype = choice\n"), ["2:8: TOML: expected a value: a \"string\" (text needs quotes), true or false, [an array] or {an inline table}"]);
}

#[test]
fn every_validation_error_has_a_message() {
    let cases: Vec<(String, &str)> = vec![
        // The file.
        (format!("{Q}[[rule]]\nwhen = \"kind == research\"\nto = [\"a\"]\n{OTHERWISE}"), "unknown key `rule`"),
        (format!("[[rules]]\nwhen = \"x == y\"\nto = [\"a\"]\n{OTHERWISE}"), "no questions"),
        (format!("{Q}{OTHERWISE}"), "no rules"),
        (format!("rules = true\n{Q}{OTHERWISE}"), "`[[rules]]` tables"),
        (format!("{Q}[[rules]]\nwhen = \"kind == research\"\nto = [\"a\"]\n"), "no `[otherwise]`"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("do = \"return\"", "when = \"kind == research\"\ndo = \"return\""), "`[otherwise]` has no `when`"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("do = \"return\"", "go = \"home\""), "unknown key `go`"),
        // Questions.
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("[questions.kind]", "[questions.\"my kind\"]"), "cannot name a question"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("[questions.kind]", "[questions.and]"), "`and` is a keyword"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("type = \"choice\"\n", ""), "has no `type`"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("\"choice\"", "\"multi\""), "`type` must be"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"\n", ""), "has no `ask`"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"", "ask = \" \""), "`ask` is empty"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"", "ask = true"), "`ask` must be a string"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"", "ask = \"a\"\nlevels = [\"x\", \"y\"]"), "unknown key `levels` for this type"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"", "ask = \"a\"\nconfidence = \"high\""), "unknown key `confidence`"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("options = { research = \"r\", implement = \"i\" }\n", ""), "has no `options"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("{ research = \"r\", implement = \"i\" }", "[\"research\"]"), "`options` must be a table"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace(", implement = \"i\"", ""), "has 1 option(s)"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("implement = \"i\"", "\"do it\" = \"i\""), "cannot name an option"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("implement = \"i\"", "implement = true"), "must be described by a string"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("implement = \"i\"", "implement = \"\""), "empty description"),
        ("[questions.risky]\ntype = \"noul\"\nask = \"a\"\ntrue_if = \"t\"\n[[rules]]\nwhen = \"risky > 0.5\"\ndo = \"return\"\n[otherwise]\ndo = \"return\"\n".into(), "has no `false_if`"),
        ("[questions.size]\ntype = \"score\"\nask = \"a\"\nlevels = [\"one\"]\n[[rules]]\nwhen = \"size > 1\"\ndo = \"return\"\n[otherwise]\ndo = \"return\"\n".into(), "has 1 level(s); Jev takes 2 to 10"),
        (format!("[questions.size]\ntype = \"score\"\nask = \"a\"\nlevels = [{}]\n[[rules]]\nwhen = \"size > 1\"\ndo = \"return\"\n[otherwise]\ndo = \"return\"\n", ["\"l\""; 11].join(", ")), "has 11 level(s)"),
        ("[questions.size]\ntype = \"score\"\nask = \"a\"\nlevels = [\"one\", true]\n[[rules]]\nwhen = \"size > 1\"\ndo = \"return\"\n[otherwise]\ndo = \"return\"\n".into(), "each level is a non-empty string"),
        ("[questions.size]\ntype = \"score\"\nask = \"a\"\n[[rules]]\nwhen = \"size > 1\"\ndo = \"return\"\n[otherwise]\ndo = \"return\"\n".into(), "has no `levels"),
        // Rules.
        (with_rule("to = [\"a\"]"), "has no `when"),
        (with_rule("when = true\nto = [\"a\"]"), "`when` must be a string"),
        (with_rule("when = \"kind = research\"\nto = [\"a\"]"), "compare with `==`"),
        (with_rule("when = \"kind == 1\"\nto = [\"a\"]"), "compare it with an option name, not the number 1"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]\ndo = \"return\""), "has both `to` and `do`"),
        (with_rule("when = \"kind == research\""), "says neither"),
        (with_rule("when = \"kind == research\"\ndo = \"route\""), "`do` can only be \"return\""),
        (with_rule("when = \"kind == research\"\ndo = \"return\"\nnote = true"), "`note` must be a string"),
        (with_rule("when = \"kind == research\"\nto = []"), "`to` is empty"),
        (with_rule("when = \"kind == research\"\nto = \"agent_3\""), "write `to = [\"agent_3\"]`"),
        (with_rule("when = \"kind == research\"\nto = [\"a\", \"a\"]"), "named twice"),
        (with_rule("when = \"kind == research\"\nto = [\"agent 3\"]"), "without spaces"),
        (with_rule("when = \"kind == research\"\nto = [true]"), "a target is a string"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]\nnote = \"n\""), "`note` goes with `do"),
        (with_rule("when = \"kind == research\"\nto = [\"a\"]\nwhere = \"x\""), "unknown key `where`"),
    ];
    for (src, needle) in &cases {
        has(src, needle);
    }
}

#[test]
fn levels_and_types_are_checked_in_rules() {
    let src = format!(
        "{}[questions.size]\ntype = \"score\"\nask = \"a\"\nlevels = [\"x\", \"y\", \"z\"]\n[[rules]]\nwhen = \"size >= 4\"\ndo = \"return\"\n[[rules]]\nwhen = \"size.mean >= 3.5 or kind.mean > 1\"\ndo = \"return\"\n{OTHERWISE}",
        Q
    );
    let errors = errors(&src);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(errors[0].contains("rule 1: `size` has levels 1 to 3"));
    assert!(errors[1].contains("rule 2: `size.mean` runs from 1 to 3"));
    assert!(errors[2].contains("rule 2: `.mean` is only for score questions"));
}

#[test]
fn all_errors_come_at_once_in_line_order() {
    let src = "[questions.kind]\ntype = \"choice\"\nask = \"a\"\noptions = { a = \"x\" }\n[[rules]]\nwhen = \"k == a\"\n";
    let errors = errors(src);
    assert!(errors.len() >= 3, "{errors:#?}");
    let lines: Vec<u32> = errors
        .iter()
        .map(|e| e.split(':').next().unwrap().parse().unwrap())
        .collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{errors:#?}");
}

#[test]
fn decide_calls_the_scorer_once_with_the_judges_request_and_never_for_a_bad_file() {
    let body = answers(0.1, [0.1, 0.8, 0.1], [0.2, 0.5, 0.3], 1.1);
    let mut seen = Vec::new();
    let decision = decide_with(SEED_RULES, "Add a flag".to_string(), None, |request| {
        seen.push(request.batches.iter().map(|b| b.jev_body.clone()).collect::<Vec<_>>());
        ScoringResponse { answers: Ok(vec![BatchAnswer::JevResponse(body.clone())]), elapsed_ms: 3 }
    })
    .unwrap();
    let job = Job::load(SEED_RULES, "Add a flag".to_string(), None).unwrap();
    assert_eq!(seen, vec![vec![job.body()]], "one call, the job's own request");
    let by_job = job.finish(ScoringResponse { answers: Ok(vec![BatchAnswer::JevResponse(body.clone())]), elapsed_ms: 3 });
    assert_eq!(decision.log_line, by_job.log_line);
    // Rules that do not parse never reach the scorer (it would panic).
    assert!(decide_with("[questions", "m".to_string(), None, |_| unreachable!()).is_err());
}

#[test]
fn a_rules_file_holds_no_numbers_and_says_where_thresholds_go() {
    let no_numbers = "a rules file holds no numbers: thresholds go inside `when`, as in when = \"risky >= 0.7\"";
    for value in ["1", "0.7", "-3", "+1", "1979-05-27", "0x1f"] {
        let src = with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"", &format!("ask = {value}"));
        assert_eq!(errors(&src), [format!("3:7: TOML: {no_numbers}")], "{value}");
    }
    // The first number in the file, at any depth; a number inside `when` is text.
    let src = with_rule("when = \"kind == research\"\nto = [\"a\", [2]]\nnote = 1").replace("research = \"r\"", "research = \"r\", x = [[5]]");
    assert_eq!(errors(&src), [format!("4:35: TOML: {no_numbers}")]);
    for value in ["inf", "-nan", "research"] {
        let src = with_rule("when = \"kind == research\"\nto = [\"a\"]").replace("ask = \"a\"", &format!("ask = {value}"));
        assert_eq!(errors(&src), ["3:7: TOML: expected a value: a \"string\" (text needs quotes), true or false, [an array] or {an inline table}"], "{value}");
    }
}

#[test]
fn toml_errors_are_one_line_at_their_place() {
    assert_eq!(errors("[questions.kind]\ntype = \"choice\"\ntype = \"noul\"\n"), ["3:1: TOML: the key `type` is defined twice"]);
    assert_eq!(errors("[questions.kind]\n[questions.kind]\n"), ["2:12: TOML: the key `kind` is defined twice"]);
    assert_eq!(errors("[[rules]]\nto = [\"a\"\n"), ["2:10: TOML: unclosed array, expected `]`"]);
    assert_eq!(errors(&format!("x = {}\n", "{a = ".repeat(100))), ["1:405: TOML: cannot recurse further; max recursion depth met"]);
}

#[test]
fn header_errors_point_at_the_header() {
    // A `[[rules]]` table without `when` or an action, `[otherwise]` without one: the header.
    let src = format!("{Q}\n[[rules]]\nnote = \"n\"\n\n[otherwise]\n");
    assert_eq!(
        errors(&src),
        [
            "6:1: rule 1 has no `when = \"<condition>\"`",
            "6:1: rule 1 says neither `to = [\"target\", …]` nor `do = \"return\"`",
            "9:1: `[otherwise]` says neither `to = [\"target\", …]` nor `do = \"return\"`",
        ]
    );
}
