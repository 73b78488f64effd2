//! The judge router from the command line: `toolprune route` with fixed
//! answers (the README's example, each verdict, the threshold-only flip,
//! invalid files) and with Jev over a loopback server. The library's side is
//! `hosts/rust/tests/judge.rs`.

use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use toolprune_tests::conformance::fake_jev::{envelope, FakeJev, Reply};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/judge");

fn rules_path() -> String {
    format!("{EXAMPLE}/rules.toml")
}

fn example_rules() -> String {
    std::fs::read_to_string(rules_path()).expect("the example rules file")
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
const LARGE: [f64; 3] = [0.02, 0.07, 0.91];

/// A scratch directory for this test's files.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolprune-judge-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

fn toolprune(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolprune"));
    let cache = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/toolprune-cache");
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TOOLPRUNE_CACHE_DIR", cache)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("toolprune runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

// ---- the CLI with fixed answers ------------------------------------------

#[test]
fn route_the_readmes_example_with_its_fixed_answers() {
    let out = toolprune(
        &[
            "route",
            "--rules",
            &rules_path(),
            "--message",
            "Compare the pricing of three CI services",
            "--answers",
            &format!("{EXAMPLE}/answers.json"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "routed to agent_3 (rule 3)\n");
    assert_eq!(
        text(&out.stderr),
        "judge: risky=0.03 kind=research/0.99/0.98 size=1/0.80/0.65 size.mean=1.25 rule=3 routed to=agent_3\n"
    );
}

#[test]
fn the_documented_rules_file_is_the_example_file() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/judge.md"))
        .expect("docs/judge.md");
    let section = readme
        .split("# The judge router")
        .nth(1)
        .expect("a judge router section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a toml block");
    assert!(
        example_rules().ends_with(block),
        "docs/judge.md's rules file differs from examples/judge/rules.toml"
    );
}

#[test]
fn route_prints_each_verdict_and_its_exit_code() {
    let dir = scratch("verdicts");
    let cases = [
        (
            answers(0.91, [0.99, 0.01, 0.0], SMALL),
            0,
            "returned (rule 1): Contains an operation that cannot be undone: not routed\n",
        ),
        (
            answers(0.03, [0.99, 0.01, 0.0], LARGE),
            0,
            "routed to agent_3, agent_10 (rule 2)\n",
        ),
        (
            answers(0.03, [0.99, 0.01, 0.0], SMALL),
            0,
            "routed to agent_3 (rule 3)\n",
        ),
        (
            answers(0.03, [0.02, 0.97, 0.01], SMALL),
            0,
            "routed to agent_10 (rule 4)\n",
        ),
        (
            answers(0.03, [0.55, 0.45, 0.0], SMALL),
            0,
            "returned (otherwise)\n",
        ),
        ("<html>busy</html>".to_string(), 3, "failed: undecodable\n"),
        (
            r#"{"answers":{"risky":{"noul":0.1}}}"#.to_string(),
            3,
            "failed: no_answer\n",
        ),
    ];
    for (i, (body, code, stdout)) in cases.iter().enumerate() {
        let answers = write(&dir, &format!("a{i}.json"), body);
        let out = toolprune(
            &[
                "route",
                "--rules",
                &rules_path(),
                "--message",
                "m",
                "--answers",
                &answers,
            ],
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(*code),
            "{body}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), *stdout, "{body}");
        assert_eq!(text(&out.stderr).lines().count(), 1, "one judge: line");
        assert!(text(&out.stderr).starts_with("judge: "));
    }
}

#[test]
fn a_failure_is_never_otherwise() {
    let dir = scratch("failure");
    let answers = write(
        &dir,
        "a.json",
        r#"{"success":false,"errors":[{"code":7000}],"result":null}"#,
    );
    let out = toolprune(
        &[
            "route",
            "--rules",
            &rules_path(),
            "--message",
            "m",
            "--answers",
            &answers,
            "--json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(3));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["verdict"], "failed");
    assert_eq!(report["reason"], "undecodable");
    assert_eq!(report["rule"], Value::Null);
    assert_eq!(report["answers"], json!([]));
    assert_eq!(
        text(&out.stderr),
        "judge: rule=- failed reason=undecodable\n"
    );
}

#[test]
fn json_carries_the_decision_the_answers_and_the_log_line() {
    let dir = scratch("json");
    let answers = write(&dir, "a.json", &answers(0.03, [0.99, 0.01, 0.0], LARGE));
    let out = toolprune(
        &[
            "route",
            "--rules",
            &rules_path(),
            "--message",
            "m",
            "--answers",
            &answers,
            "--json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["verdict"], "routed");
    assert_eq!(report["to"], json!(["agent_3", "agent_10"]));
    assert_eq!(report["rule"], 2);
    assert_eq!(report["jev_tokens"], 534);
    assert_eq!(
        report["answers"][1],
        json!({"question": "kind", "type": "choice", "value": "research", "p": 0.99, "margin": 0.98, "mean": null})
    );
    assert_eq!(
        report["answers"][2]["value"], "3",
        "the most probable level, 1-based"
    );
    assert_eq!(
        report["answers"][2]["mean"], 2.89,
        "the expected level, 1-based"
    );
    assert_eq!(report["log"], text(&out.stderr).trim_end());
}

#[test]
fn changing_only_a_threshold_flips_the_route() {
    // Seed 003 §5: the answers stay byte for byte; only the rules move.
    let dir = scratch("flip");
    let answers = write(&dir, "a.json", &answers(0.03, [0.99, 0.01, 0.0], SMALL));
    let mut outs = Vec::new();
    for threshold in ["0.6", "0.99"] {
        let rules =
            example_rules().replace("kind.margin >= 0.2", &format!("kind.margin >= {threshold}"));
        let path = write(&dir, &format!("rules-{threshold}.toml"), &rules);
        outs.push(toolprune(
            &[
                "route",
                "--rules",
                &path,
                "--message",
                "m",
                "--answers",
                &answers,
            ],
            &[],
        ));
    }
    assert_eq!(text(&outs[0].stdout), "routed to agent_3 (rule 3)\n");
    assert_eq!(text(&outs[1].stdout), "returned (otherwise)\n");
    let answered = |o: &Output| {
        text(&o.stderr)
            .split(" rule=")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(answered(&outs[0]), answered(&outs[1]), "identical answers");
}

#[test]
fn an_invalid_rules_file_lists_every_problem_with_file_line_and_column() {
    let dir = scratch("invalid");
    let rules = example_rules()
        .replace("risky >= 0.7", "risky >= 7")
        .replace("kind == implement", "kind == implemnt")
        .replace(
            "to   = [\"agent_3\"]",
            "to   = [\"agent_3\"]\ndo   = \"return\"",
        );
    let path = write(&dir, "rules.toml", &rules);
    let answers = write(&dir, "a.json", &answers(0.03, [0.99, 0.01, 0.0], SMALL));
    let out = toolprune(
        &[
            "route",
            "--rules",
            &path,
            "--message",
            "m",
            "--answers",
            &answers,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(
        lines[0],
        format!("{path}:22:18: rule 1: `risky` is a probability from 0 to 1, and 7 is outside")
    );
    assert!(
        lines[1].starts_with(&format!("{path}:33:1: rule 3 has both `to` and `do`")),
        "{stderr}"
    );
    assert!(
        lines[2].starts_with(&format!(
            "{path}:36:17: rule 4: `kind` has no option `implemnt`"
        )),
        "{stderr}"
    );
}

#[test]
fn unreadable_files_and_missing_credentials() {
    let out = toolprune(
        &[
            "route",
            "--rules",
            "/nonexistent/rules.toml",
            "--message",
            "m",
            "--answers",
            "x",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read the rules file /nonexistent/rules.toml"));
    let out = toolprune(
        &[
            "route",
            "--rules",
            &rules_path(),
            "--message",
            "m",
            "--answers",
            "/nonexistent/a.json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    // Without --answers, Jev is called: no token is a usage error (the
    // variable named by the guest), and so is an incomplete route.
    let out = toolprune(&["route", "--rules", &rules_path(), "--message", "m"], &[("TOOLPRUNE_JEV_ROUTE", "typesafe")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no token: set TOOLPRUNE_JEV_TOKEN"), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--answers"));
    let out = toolprune(&["route", "--rules", &rules_path(), "--message", "m"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("TOOLPRUNE_JEV_ACCOUNT_ID"), "{}", text(&out.stderr));
}

// ---- the CLI with Jev over loopback ---------------------------------------

fn jev_env(url: &str) -> Vec<(&str, &str)> {
    vec![
        ("TOOLPRUNE_JEV_ROUTE", "typesafe"),
        ("TOOLPRUNE_JEV_TOKEN", "tok-judge-test"),
        ("TOOLPRUNE_JEV_BASE_URL", url),
    ]
}

#[test]
fn route_calls_jev_once_with_every_question_and_the_message() {
    let reply = answers(0.03, [0.99, 0.01, 0.0], LARGE);
    let server = FakeJev::start(move |_| Reply::ok(envelope(&reply)));
    let url = server.url();
    let message = "Compare three CI services: price, limits, and caching";
    let out = toolprune(
        &["route", "--rules", &rules_path(), "--message", message],
        &jev_env(&url),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "routed to agent_3, agent_10 (rule 2)\n");
    assert!(
        text(&out.stderr).ends_with(" rule=2 routed to=agent_3,agent_10\n"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains(message),
        "the message is never logged"
    );

    let seen = server.requests();
    assert_eq!(seen.len(), 1, "one call");
    assert_eq!(seen[0].path, "/v1/systemone");
    let body = seen[0].json();
    assert_eq!(body["state"], json!({"message": message}));
    assert!(
        body["model"].is_string(),
        "the native route names the model"
    );
    let questions = body["questions"].as_object().expect("questions");
    assert_eq!(
        questions.keys().collect::<Vec<_>>(),
        ["kind", "risky", "size"].iter().collect::<Vec<_>>()
    );
    assert_eq!(body["questions"]["risky"]["type"], "noul");
    assert_eq!(
        body["questions"]["risky"]["criteria"],
        json!({"true": "It asks to delete, publish or send something", "false": "It only asks to read, look up or draft"})
    );
    assert_eq!(body["questions"]["kind"]["type"], "choice");
    assert_eq!(
        body["questions"]["kind"]["criteria"]["implement"],
        "Change or write code"
    );
    assert_eq!(body["questions"]["size"]["type"], "score");
    assert_eq!(
        body["questions"]["size"]["criteria"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

#[test]
fn a_jev_error_is_failed_with_its_class() {
    let server = FakeJev::start(|_| Reply::status(402));
    let url = server.url();
    let out = toolprune(
        &["route", "--rules", &rules_path(), "--message", "m"],
        &jev_env(&url),
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stdout), "failed: out_of_credit\n");
    assert_eq!(
        text(&out.stderr),
        "judge: rule=- failed reason=out-of-credit\n"
    );
    assert_eq!(server.requests().len(), 1, "402 is never retried");
}


/// A rules file of thousands of errors (5,400 rules naming unknown questions,
/// just under the 256 KiB cap) is validated in linear work: every error
/// listed, exit 2, the same in every host — not a fuel trap (the positions
/// used to be found by scanning the file once per error, the errors sorted
/// by insertion: Rust and Python trapped on fuel, Node listed them).
#[test]
fn thousands_of_errors_are_all_listed_not_a_trap() {
    let dir = scratch("many-errors");
    let extra: String = (0..5_400).map(|i| format!("\n[[rules]]\nwhen = \"nosuch{i} == x\"\nto = [\"a\"]\n")).collect();
    let rules = write(&dir, "rules.toml", &(example_rules() + &extra));
    let answers = write(&dir, "answers.json", &answers(0.1, [0.2, 0.7, 0.1], [0.2, 0.5, 0.3]));
    let out = toolprune(&["route", "--rules", &rules, "--message", "x", "--answers", &answers], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", stderr.chars().take(500).collect::<String>());
    assert_eq!(stderr.lines().filter(|l| l.contains(": unknown question `nosuch")).count(), 5_400);
    assert!(!stderr.contains("guest_trap"), "{}", stderr.chars().take(500).collect::<String>());
}
