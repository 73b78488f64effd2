//! The Jev transport over HTTP against a loopback server that plays Jev (no
//! real key): the request shape per route, concurrency, the guest's retry
//! rule, every failure path of SPEC §11, what leaves the machine (§12). The
//! endpoint is configured as users configure it: variables resolved by the
//! guest (`settings.resolve`). The CLI's side is `cli/tests/jev.rs`.
//!
//! The tests parse the JSON the server receives; the host never does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolprune::types::{Outcome, ScoringRequest};
use toolprune::{CancelToken, CapturedLog, ConversationOptions, JevScorer, Pruner, ScriptedScorer, ToolResult};
use toolprune_tests::conformance::fake_jev::{answer_all, envelope, FakeJev, Reply, Seen};
use toolprune_tests::{report, wit_name, Pruned, Scoring};

const TOKEN: &str = "tok-SECRET-4f2a9c";
const ACCOUNT: &str = "acc0123abcd";
const TOOL: &str = "zq_private_tool_name";
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus");
const FROZEN_INSTRUCTIONS: &str = "の文章は、`request` の依頼に答えるために必要な情報を含むか。";
const FROZEN_TRUE: &str = "依頼に答える材料 (事実・数値・主張・手順・限界) が含まれる";
const FROZEN_FALSE: &str =
    "ナビゲーション・広告・定型文・著者欄・無関係な話題など、依頼に答える材料を含まない";

fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component compiles")
}

fn corpus(name: &str) -> String {
    std::fs::read_to_string(format!("{CORPUS}/{name}")).expect("corpus file")
}

/// The manifest's English request of a corpus file.
fn request_for(name: &str) -> String {
    let manifest: Value = serde_json::from_str(&corpus("manifest.json")).expect("manifest");
    manifest
        .as_array()
        .expect("a list")
        .iter()
        .find(|d| d["file"] == name)
        .and_then(|d| d["request_en"].as_str())
        .expect("a request")
        .to_string()
}

const TRANSPORTS: &str = "mcp-spec-2025-11-25-transports.mdx";
const PEP: &str = "pep-0817-wheel-variants.rst";

/// The environment a user would set for Jev (the guest resolves it).
#[derive(Clone, Debug, Default)]
struct JevConfig {
    route: &'static str,
    account_id: Option<String>,
    token: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
}

impl JevConfig {
    fn env(&self) -> impl Fn(&str) -> Option<String> + '_ {
        move |name: &str| match name {
            "TOOLPRUNE_JEV_ROUTE" => Some(self.route.to_string()).filter(|r| !r.is_empty()),
            "TOOLPRUNE_JEV_ACCOUNT_ID" => self.account_id.clone(),
            "TOOLPRUNE_JEV_TOKEN" => self.token.clone(),
            "TOOLPRUNE_JEV_BASE_URL" => self.base_url.clone(),
            "TOOLPRUNE_JEV_MODEL" => self.model.clone(),
            _ => None,
        }
    }

    /// The scorer and the model to name in bodies, as the guest resolves them.
    fn resolve(&self) -> (JevScorer, Option<String>) {
        JevScorer::from_env(pruner(), &self.env()).expect("a complete configuration")
    }
}

fn config(route: &'static str, server: &FakeJev) -> JevConfig {
    JevConfig {
        route,
        account_id: Some(ACCOUNT.to_string()),
        token: Some(TOKEN.to_string()),
        base_url: Some(server.url()),
        model: None,
    }
}

fn jev(config: &JevConfig) -> JevScorer {
    config.resolve().0
}

/// How a test prunes: the conversation's options beyond the scorer.
#[derive(Clone, Default)]
struct How {
    deadline_cap: Option<Duration>,
    cancel: Option<CancelToken>,
    enabled: Option<bool>,
}

/// Prunes `text` through a conversation scored by `jev` (with the report);
/// the log lines are captured.
fn prune_how(jev: JevScorer, _config: &JevConfig, request: &str, result: ToolResult, how: How) -> (Pruned, Vec<String>) {
    let log = Arc::new(CapturedLog::new());
    let conversation = pruner()
        .conversation(ConversationOptions {
            enabled: how.enabled.unwrap_or(true),
            agent: "test".to_string(),
            // No jev_model: the scorer names the model the guest resolved.
            scoring: Some(Scoring::host(jev)),
            log: log.clone(),
            deadline_cap: how.deadline_cap,
            ..ConversationOptions::default()
        })
        .unwrap();
    let turn = conversation.turn_with_cancel(request, how.cancel.unwrap_or_default());
    let result = turn.on_tool_result(ToolResult { report: true, ..result });
    (Pruned::new(result, &conversation.stored()), log.lines())
}

fn prune_with(jev: JevScorer, config: &JevConfig, request: &str, text: &str) -> (Pruned, Vec<String>) {
    prune_how(jev, config, request, ToolResult::prunable(TOOL, text), How::default())
}

/// The scoring request the guest makes for `text` (no network).
fn plan(request: &str, text: &str, _config: &JevConfig) -> ScoringRequest {
    let scorer = Arc::new(ScriptedScorer::new());
    let conversation = pruner()
        .conversation(ConversationOptions {
            enabled: true,
            scoring: Some(scorer.clone().into()),
            log: Arc::new(CapturedLog::new()),
            ..ConversationOptions::default()
        })
        .unwrap();
    conversation.turn(request).on_tool_result(ToolResult::prunable(TOOL, text));
    scorer.requests().into_iter().next().expect("a scoring call")
}

/// Map from a batch's first chunk name (`p12`) to its batch number.
fn batch_of_first_chunk(plan: &ScoringRequest) -> BTreeMap<String, usize> {
    plan.batches
        .iter()
        .enumerate()
        .map(|(b, batch)| (format!("p{}", batch.paragraphs[0]), b))
        .collect()
}

/// Scores that vary with the paragraph number: every third dropped.
fn varied(n: u32) -> Value {
    json!(if n.is_multiple_of(3) { 0.05 } else { 0.9 })
}

fn scores_of(pruned: &Pruned) -> BTreeMap<u32, Option<f64>> {
    report(pruned).paragraphs.iter().map(|p| (p.index, p.score)).collect()
}

/// Checks one received request against the guest's plan of the same batch.
fn assert_wire_shape(seen: &Seen, request: &str, model: Option<&str>) {
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.header("authorization"), Some(format!("Bearer {TOKEN}").as_str()));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    let body = seen.json();
    let basis: String = request.chars().take(2_000).collect();
    assert_eq!(body["state"]["request"], Value::String(basis), "state.request is the basis");
    assert!(body["state"]["request"].as_str().unwrap().chars().count() <= 2_000);
    assert_eq!(body.get("model").and_then(Value::as_str), model);
    let chunks: Vec<&String> = body["state"]["chunks"].as_object().unwrap().keys().collect();
    let questions: Vec<&String> = body["questions"].as_object().unwrap().keys().collect();
    assert!(!chunks.is_empty() && chunks.len() <= 16);
    assert_eq!(chunks, questions, "chunks and questions keyed alike");
    // In the body, both key lists follow the paragraph order.
    let names = seen.chunk_names();
    let questions_at = seen.body.find("\"questions\":").expect("questions");
    let (chunk_part, question_part) = seen.body.split_at(questions_at);
    for part in [chunk_part, question_part] {
        let at: Vec<usize> = names.iter().map(|n| part.find(&format!("\"{n}\":")).expect("key")).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "keys in paragraph order");
    }
    for name in chunks {
        let q = &body["questions"][name.as_str()];
        assert_eq!(q["type"], "noul");
        assert_eq!(q["instructions"], format!("`chunks.{name}` {FROZEN_INSTRUCTIONS}"));
        assert_eq!(q["criteria"]["true"], FROZEN_TRUE);
        assert_eq!(q["criteria"]["false"], FROZEN_FALSE);
    }
}

#[test]
fn cloudflare_route_posts_to_the_account_path_with_a_bearer_token_and_no_model() {
    let server = FakeJev::start(|seen| Reply::ok(envelope(&answer_all(seen, varied))));
    let config = config("cloudflare", &server);
    // A request over 2,000 characters: only the basis leaves the machine.
    let request = format!("{} {}", request_for(TRANSPORTS), "Also explain the details. ".repeat(90));
    assert!(request.chars().count() > 2_000);
    let (pruned, log) = prune_with(jev(&config), &config, &request, &corpus(TRANSPORTS));
    let seen = server.requests();
    assert!(!seen.is_empty());
    for s in &seen {
        assert_eq!(s.path, format!("/client/v4/accounts/{ACCOUNT}/ai/run/typesafe/jev"));
        assert_wire_shape(s, &request, None);
    }
    let report = report(&pruned);
    assert_eq!(report.counts.calls as usize, seen.len(), "the envelope decodes");
    assert_eq!(report.counts.jev_tokens, 100 * seen.iter().map(|s| s.chunk_names().len() as u64).sum::<u64>());
    assert!(report.failures.is_empty());
    assert!(log[0].contains(" scorer=jev"), "{log:?}");
}

#[test]
fn typesafe_route_posts_the_pinned_model_to_v1_systemone() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let config = config("typesafe", &server);
    let request = request_for(TRANSPORTS);
    let (pruned, _) = prune_with(jev(&config), &config, &request, &corpus(TRANSPORTS));
    let seen = server.requests();
    for s in &seen {
        assert_eq!(s.path, "/v1/systemone");
        assert_wire_shape(s, &request, Some("jev-1.13.0"));
    }
    assert_eq!(report(&pruned).clone().counts.calls as usize, seen.len(), "a bare body decodes");
}

#[test]
fn vercel_route_posts_under_the_gateway_base_with_the_configured_model() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let mut config = config("vercel", &server);
    config.base_url = Some(format!("{}/typesafe/", server.url()));
    config.model = Some("jev-1.14.0".to_string());
    let request = request_for(TRANSPORTS);
    let (pruned, _) = prune_with(jev(&config), &config, &request, &corpus(TRANSPORTS));
    let seen = server.requests();
    assert!(!seen.is_empty());
    for s in &seen {
        assert_eq!(s.path, "/typesafe/v1/systemone");
        assert_wire_shape(s, &request, Some("jev-1.14.0"));
    }
    assert!(report(&pruned).clone().failures.is_empty());
}

#[test]
fn the_cloudflare_envelope_and_a_bare_body_give_the_same_scores() {
    let bare = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let wrapped = FakeJev::start(|seen| Reply::ok(envelope(&answer_all(seen, varied))));
    let request = request_for(TRANSPORTS);
    let text = corpus(TRANSPORTS);
    let a = config("typesafe", &bare);
    let b = config("cloudflare", &wrapped);
    let (pa, _) = prune_with(jev(&a), &a, &request, &text);
    let (pb, _) = prune_with(jev(&b), &b, &request, &text);
    assert_eq!(scores_of(&pa), scores_of(&pb));
    assert!(scores_of(&pa).values().any(Option::is_some));
    assert_eq!(pa.body, pb.body);
    assert_eq!(pa.outcome, pb.outcome);
}

#[test]
fn at_most_four_requests_in_flight_and_every_batch_of_a_120k_document_scored() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)).delay(Duration::from_millis(80)));
    let config = config("typesafe", &server);
    let request = request_for(PEP);
    let text = corpus(PEP);
    assert_eq!(text.chars().count(), 121_429);
    let plan = plan(&request, &text, &config);
    assert_eq!(plan.policy.max_in_flight, 4);
    assert!(plan.batches.len() > 4, "{} batches", plan.batches.len());

    let (pruned, _) = prune_with(jev(&config), &config, &request, &text);
    let seen = server.requests();
    assert_eq!(seen.len(), plan.batches.len(), "one request per batch, no retry");
    assert_eq!(server.max_in_flight(), 4, "4 in flight, never more");
    assert!(server.max_connections() <= 4, "{} connections", server.max_connections());
    let sent: BTreeSet<String> = seen.iter().flat_map(Seen::chunk_names).collect();
    let planned: BTreeSet<String> =
        plan.batches.iter().flat_map(|b| b.paragraphs.iter().map(|p| format!("p{p}"))).collect();
    assert_eq!(sent, planned);
    let report = report(&pruned);
    assert_eq!(report.counts.calls as usize, plan.batches.len());
    assert!(report.failures.is_empty());
    let scores = scores_of(&pruned);
    for p in plan.batches.iter().flat_map(|b| &b.paragraphs) {
        assert!(scores[p].is_some(), "paragraph {p} scored");
    }
}

#[test]
fn a_429_then_200_is_scored() {
    let calls = AtomicUsize::new(0);
    let server = FakeJev::start(move |seen| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::status(429).header("Retry-After", "0")
        } else {
            Reply::ok(answer_all(seen, varied))
        }
    });
    let config = config("typesafe", &server);
    let request = request_for(TRANSPORTS);
    let text = corpus(TRANSPORTS);
    let batches = plan(&request, &text, &config).batches.len();
    let (pruned, _) = prune_with(jev(&config), &config, &request, &text);
    let report = report(&pruned).clone();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.counts.calls as usize, batches);
    assert_eq!(server.requests().len(), batches + 1, "one retry");
}

#[test]
fn retry_after_is_honoured_when_it_fits_the_deadline_and_never_beyond_it() {
    let request = request_for(TRANSPORTS);
    let text = corpus(TRANSPORTS);

    // Retry-After: 1 → the retry comes a second later.
    let first = AtomicUsize::new(0);
    let server = FakeJev::start(move |seen| {
        if first.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::status(503).header("Retry-After", "1")
        } else {
            Reply::ok(answer_all(seen, varied))
        }
    });
    let first_config = config("typesafe", &server);
    let (pruned, _) = prune_with(jev(&first_config), &first_config, &request, &text);
    assert!(report(&pruned).clone().failures.is_empty());
    let seen = server.requests();
    let (failed, retried) = (&seen[0], seen.iter().skip(1).find(|s| s.body == seen[0].body).expect("a retry"));
    assert!(retried.at.duration_since(failed.at) >= Duration::from_millis(990));

    // Retry-After: 60 does not fit the 20 s deadline: no retry, no wait.
    let server = FakeJev::start(|_| Reply::status(429).header("Retry-After", "60"));
    let config = config("typesafe", &server);
    let plan = plan(&request, &text, &config);
    let started = Instant::now();
    let (pruned, _) = prune_with(jev(&config), &config, &request, &text);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(server.requests().len(), plan.batches.len(), "no retry");
    let failures = &report(&pruned).failures;
    assert_eq!(failures.len(), plan.batches.len());
    assert!(failures.iter().all(|f| f.status == Some(429) && wit_name(&f.class) == "rate_limited"));
}

#[test]
fn a_500_twice_keeps_that_batch_and_scores_the_others() {
    let server = FakeJev::start(|seen| {
        if seen.chunk_names()[0] == "p0" {
            Reply::status(500)
        } else {
            Reply::ok(answer_all(seen, varied))
        }
    });
    let config = config("typesafe", &server);
    let request = request_for(PEP);
    let text = corpus(PEP);
    let plan = plan(&request, &text, &config);
    let (pruned, log) = prune_with(jev(&config), &config, &request, &text);
    let first_batch = server.requests().into_iter().filter(|s| s.chunk_names()[0] == "p0").count();
    assert_eq!(first_batch, 2, "tried, retried once, then given up");
    let report = report(&pruned);
    assert_eq!(report.failures.len(), 1);
    assert_eq!((report.failures[0].batch, report.failures[0].status), (0, Some(500)));
    assert_eq!(wit_name(&report.failures[0].class), "http_5xx");
    assert_eq!(report.counts.calls as usize, plan.batches.len() - 1);
    let scores = scores_of(&pruned);
    assert!(plan.batches[0].paragraphs.iter().all(|p| scores[p].is_none()), "batch 0 kept");
    assert!(plan.batches[1].paragraphs.iter().all(|p| scores[p].is_some()));
    assert_ne!(pruned.outcome, Outcome::Failed);
    assert!(!log[0].contains("echo"), "never an error body");
}

#[test]
fn a_402_and_other_4xx_are_never_retried_and_their_bodies_never_kept() {
    for status in [402u16, 401, 403, 408, 413, 422] {
        let server = FakeJev::start(move |seen| {
            if seen.chunk_names()[0] == "p0" {
                Reply::status(status)
            } else {
                Reply::ok(answer_all(seen, varied))
            }
        });
        let config = config("typesafe", &server);
        let request = request_for(PEP);
        let (pruned, log) = prune_with(jev(&config), &config, &request, &corpus(PEP));
        let tried = server.requests().into_iter().filter(|s| s.chunk_names()[0] == "p0").count();
        assert_eq!(tried, 1, "{status} is not retried");
        let report = report(&pruned);
        assert_eq!(report.failures[0].status, Some(status));
        let class = if status == 402 { "out_of_credit" } else { "http_4xx" };
        assert_eq!(wit_name(&report.failures[0].class), class);
        let shown = format!("{:?} {log:?}", report.failures);
        assert!(!shown.contains("echo") && !shown.contains(TOKEN), "{shown}");
    }
}

#[test]
fn undecodable_answers_and_invalid_scores_keep_their_paragraphs() {
    let config_probe = JevConfig { route: "typesafe", ..JevConfig::default() };
    let request = request_for(PEP);
    let text = corpus(PEP);
    let plan = plan(&request, &text, &config_probe);
    assert!(plan.batches.len() >= 5);
    let batch_of = batch_of_first_chunk(&plan);
    let server = FakeJev::start(move |seen| {
        let names = seen.chunk_names();
        match batch_of[&names[0]] {
            0 => Reply::ok("{\"answers\": {\"p0\": "),
            1 => Reply::ok(r#"{"success":false,"errors":[{"code":3040,"message":"capacity"}],"result":null}"#),
            // Half the answers missing.
            2 => {
                let full: Value = serde_json::from_str(&answer_all(seen, |_| json!(0.9))).unwrap();
                let mut answers = full["answers"].as_object().unwrap().clone();
                for name in names.iter().skip(names.len() / 2) {
                    answers.remove(name);
                }
                Reply::ok(json!({"answers": answers, "usage": {"input_tokens": 7}}).to_string())
            }
            // Out of [0, 1], or not a number.
            3 => Reply::ok(answer_all(seen, |n| if n % 2 == 0 { json!(1.5) } else { json!(-0.2) })),
            4 => Reply::ok(answer_all(seen, |_| json!("0.5"))),
            _ => Reply::ok(answer_all(seen, varied)),
        }
    });
    let config = config("typesafe", &server);
    let (pruned, _) = prune_with(jev(&config), &config, &request, &text);
    let report = report(&pruned);
    let failed: Vec<(u32, String)> = report.failures.iter().map(|f| (f.batch, wit_name(&f.class))).collect();
    assert_eq!(failed, vec![(0, "undecodable".to_string()), (1, "undecodable".to_string())]);
    assert_eq!(report.counts.calls as usize, plan.batches.len() - 2);
    let scores = scores_of(&pruned);
    for b in [0, 1, 3, 4] {
        assert!(plan.batches[b].paragraphs.iter().all(|p| scores[p].is_none()), "batch {b} kept");
    }
    let half = plan.batches[2].paragraphs.len() / 2;
    for (k, p) in plan.batches[2].paragraphs.iter().enumerate() {
        assert_eq!(scores[p].is_some(), k < half, "paragraph {p}: missing answers are none");
    }
    assert!(plan.batches[5].paragraphs.iter().all(|p| scores[p].is_some()));
}

#[test]
fn all_batches_failing_is_failed_and_gives_the_raw_text() {
    let server = FakeJev::start(|_| Reply::status(503));
    let config = config("typesafe", &server);
    let text = corpus(TRANSPORTS);
    let (pruned, log) = prune_with(jev(&config), &config, &request_for(TRANSPORTS), &text);
    assert_eq!(pruned.outcome, Outcome::Failed);
    assert_eq!(pruned.body, text);
    assert!(log[0].contains("outcome=failed") && log[0].contains("calls=0"), "{log:?}");
    assert!(report(&pruned).clone().failures.iter().all(|f| f.status == Some(503)));
}

#[test]
fn a_connection_error_fails_the_batches_as_network() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let config = JevConfig {
        route: "typesafe",
        token: Some(TOKEN.to_string()),
        base_url: Some(url),
        ..JevConfig::default()
    };
    let text = corpus(TRANSPORTS);
    let (pruned, _) = prune_with(jev(&config), &config, &request_for(TRANSPORTS), &text);
    assert_eq!(pruned.outcome, Outcome::Failed);
    assert_eq!(pruned.body, text);
    let failures = report(&pruned).clone().failures;
    assert!(!failures.is_empty());
    assert!(failures.iter().all(|f| f.status.is_none() && wit_name(&f.class) == "network"), "{failures:?}");
}

#[test]
fn a_stalled_server_times_out_within_the_deadline_and_finished_batches_are_discarded() {
    // Batch 0 answers at once; the others stall.
    let server = FakeJev::start(|seen| {
        if seen.chunk_names()[0] == "p0" {
            Reply::ok(answer_all(seen, varied))
        } else {
            Reply::stall()
        }
    });
    let config = config("typesafe", &server);
    let request = request_for(PEP);
    let text = corpus(PEP);
    let plan = plan(&request, &text, &config);
    assert_eq!(plan.policy.deadline_ms, 20_000, "the guest's policy");
    let deadline = Duration::from_millis(1_500);

    let started = Instant::now();
    let how = How { deadline_cap: Some(deadline), ..How::default() };
    let (pruned, log) = prune_how(jev(&config), &config, &request, ToolResult::prunable(TOOL, text.as_str()), how);
    let waited = started.elapsed();
    // The margin only absorbs thread scheduling on a loaded CI machine.
    assert!(waited >= deadline && waited < deadline + Duration::from_millis(900), "{waited:?}");
    let ms = report(&pruned).counts.ms.expect("measured");
    assert!((1_500..2_400).contains(&ms), "{ms}");
    // Raw text, outcome timeout, no score kept (batch 0's answer discarded).
    assert_eq!(pruned.outcome, Outcome::Timeout);
    assert_eq!(pruned.body, text);
    assert!(scores_of(&pruned).values().all(Option::is_none));
    assert!(log[0].contains("outcome=timeout"), "{log:?}");
}

#[test]
fn cancellation_while_waiting_answers_cancelled_at_once() {
    let server = FakeJev::start(|_| Reply::stall());
    let config = config("typesafe", &server);
    let request = request_for(TRANSPORTS);
    let text = corpus(TRANSPORTS);
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            token.cancel();
        })
    };
    let started = Instant::now();
    let how = How { cancel: Some(token), ..How::default() };
    let (pruned, log) = prune_how(jev(&config), &config, &request, ToolResult::prunable(TOOL, text.as_str()), how);
    let waited = started.elapsed();
    canceller.join().unwrap();
    // At once: woken by the token, not by the 20 s deadline (the margin only
    // absorbs thread scheduling on a loaded CI machine).
    assert!(waited < Duration::from_millis(1_500), "stopped waiting at once: {waited:?}");
    assert!(!server.requests().is_empty(), "it was waiting on the server");
    assert_eq!(pruned.outcome, Outcome::Cancelled);
    assert_eq!(pruned.body, text);
    assert!(log[0].contains("outcome=cancelled"), "{log:?}");
}

#[test]
fn a_token_cancelled_before_scoring_sends_nothing_and_wins_over_the_deadline() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let config = config("typesafe", &server);
    let token = CancelToken::new();
    token.cancel();
    let how = How { cancel: Some(token), deadline_cap: Some(Duration::ZERO), ..How::default() };
    let (pruned, _) = prune_how(jev(&config), &config, &request_for(TRANSPORTS), ToolResult::prunable(TOOL, corpus(TRANSPORTS)), how);
    assert_eq!(pruned.outcome, Outcome::Cancelled);
    assert!(server.requests().is_empty());
}

#[test]
fn across_the_corpus_only_the_basis_and_short_paragraphs_leave_and_the_token_only_in_its_header() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let config = config("typesafe", &server);
    let manifest: Value = serde_json::from_str(&corpus("manifest.json")).unwrap();
    let mut scored_docs = 0;
    for doc in manifest.as_array().unwrap() {
        let file = doc["file"].as_str().unwrap();
        let request = doc["request_en"].as_str().unwrap();
        let text = corpus(file);
        let before = server.requests().len();
        let (pruned, log) = prune_with(jev(&config), &config, request, &text);
        let sent = &server.requests()[before..];
        if pruned.outcome == Outcome::Structured {
            assert!(sent.is_empty(), "{file}: structured sends nothing");
        }
        if !sent.is_empty() {
            scored_docs += 1;
        }
        for line in &log {
            assert!(!line.contains(TOKEN), "{file}: token in the log");
        }
        for s in sent {
            let basis: String = request.chars().take(2_000).collect();
            assert_eq!(s.json()["state"]["request"], Value::String(basis));
            assert!(!s.body.contains(TOOL) && !s.path.contains(TOOL), "{file}: tool name sent");
            for (name, chunk) in s.json()["state"]["chunks"].as_object().unwrap() {
                let chars = chunk.as_str().unwrap().chars().count();
                assert!(chars <= 6_000, "{file} {name}: {chars} characters sent");
            }
            assert!(!s.body.contains(TOKEN) && !s.path.contains(TOKEN), "{file}: token outside its header");
            for (name, value) in &s.headers {
                assert!(!value.contains(TOOL), "{file}: tool name in {name}");
                if name != "authorization" {
                    assert!(!value.contains(TOKEN), "{file}: token in {name}");
                }
            }
        }
    }
    assert!(scored_docs >= 8, "{scored_docs} documents scored");
}

#[test]
fn nothing_is_sent_when_a_gate_stops_the_call() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let config = config("typesafe", &server);
    let request = request_for(TRANSPORTS);
    let text = corpus(TRANSPORTS);
    // JSON that is neither a wrapper nor an array (SPEC §8, §13).
    let structured = corpus("danger-js-fixture-github_pr.json");
    assert!(structured.trim_start().starts_with('{'));
    let off = How { enabled: Some(false), ..How::default() };
    let cases = [
        ("disabled", request.as_str(), off, ToolResult::prunable(TOOL, text.clone())),
        ("failed tool", request.as_str(), How::default(), ToolResult { ok: false, ..ToolResult::prunable(TOOL, text.clone()) }),
        ("not prunable", request.as_str(), How::default(), ToolResult::new(TOOL, text.clone())),
        ("short", request.as_str(), How::default(), ToolResult::prunable(TOOL, text[..3_000].to_string())),
        ("structured", request.as_str(), How::default(), ToolResult::prunable(TOOL, structured.clone())),
        ("no basis", "ok", How::default(), ToolResult::prunable(TOOL, text.clone())),
    ];
    for (gate, request, how, result) in cases {
        let raw = result.text.clone();
        let (pruned, _) = prune_how(jev(&config), &config, request, result, how);
        assert_eq!(pruned.body, raw, "{gate}");
        assert!(server.requests().is_empty(), "{gate}: something was sent");
    }
}

#[test]
fn debug_output_of_the_scorer_never_shows_the_token() {
    let server = FakeJev::start(|_| Reply::status(500));
    let scorer = jev(&config("cloudflare", &server));
    let shown = format!("{scorer:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains(ACCOUNT), "the URL is shown: {shown}");
    assert!(!format!("{:?}", Scoring::host(scorer)).contains(TOKEN));
}

