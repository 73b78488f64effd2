//! The CLI's side of Jev: `prune --scorer jev` end to end, the default
//! scorer, Ctrl-C, `jev check` (served model, diagnoses), and the config file
//! (the guest resolves it), against a loopback server that plays Jev.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolprune_tests::conformance::fake_jev::{answer_all, envelope, FakeJev, Reply};

const TOKEN: &str = "tok-SECRET-4f2a9c";
const ACCOUNT: &str = "acc0123abcd";
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus");
const TRANSPORTS: &str = "mcp-spec-2025-11-25-transports.mdx";
const PEP: &str = "pep-0817-wheel-variants.rst";

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

/// Scores that vary with the paragraph number: every third dropped.
fn varied(n: u32) -> Value {
    json!(if n.is_multiple_of(3) { 0.05 } else { 0.9 })
}

fn toolprune(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolprune"));
    command.args(args);
    // Only PATH and the compiled component's cache from this environment.
    let cache = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/toolprune-cache");
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TOOLPRUNE_CACHE_DIR", cache)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    toolprune(args, env).output().expect("toolprune runs")
}

fn jev_env<'a>(server_url: &'a str, route: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("TOOLPRUNE_JEV_ROUTE", route),
        ("TOOLPRUNE_JEV_ACCOUNT_ID", ACCOUNT),
        ("TOOLPRUNE_JEV_TOKEN", TOKEN),
        ("TOOLPRUNE_JEV_BASE_URL", server_url),
    ]
}

fn file_path(name: &str) -> String {
    format!("{CORPUS}/{name}")
}

#[test]
fn cli_prune_with_scorer_jev_prunes_a_corpus_document_end_to_end() {
    let server = FakeJev::start(|seen| Reply::ok(envelope(&answer_all(seen, varied))));
    let url = server.url();
    let request = request_for(PEP);
    let out = run(
        &["prune", "--scorer", "jev", "--request", &request, &file_path(PEP)],
        &jev_env(&url, "cloudflare"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("outcome=ok") && stderr.contains(" scorer=jev"), "{stderr}");
    assert!(!stderr.contains(TOKEN));
    let body = String::from_utf8(out.stdout).unwrap();
    assert!(body.starts_with("[Omitted by relevance: "), "{}", &body[..100]);
    assert!(body.len() < corpus(PEP).len());
    assert!(!server.requests().is_empty());
}

#[test]
fn cli_uses_jev_by_default_when_credentials_are_present_and_offline_otherwise() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let url = server.url();
    let request = request_for(TRANSPORTS);
    let file = file_path(TRANSPORTS);
    let args = ["prune", "--request", request.as_str(), file.as_str()];
    let out = run(&args, &jev_env(&url, "typesafe"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(" scorer=jev"), "{stderr}");
    assert!(!server.requests().is_empty());

    // A Cloudflare route without an account id is not a credential.
    let mut env = jev_env(&url, "cloudflare");
    env.retain(|(k, _)| *k != "TOOLPRUNE_JEV_ACCOUNT_ID");
    let before = server.requests().len();
    let out = run(&args, &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(" scorer=offline"), "{stderr}");
    assert_eq!(server.requests().len(), before);

    // Named but incomplete: a usage error that says what is missing.
    let out = run(&["prune", "--scorer", "jev", "--request", &request, &file_path(TRANSPORTS)], &env);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TOOLPRUNE_JEV_ACCOUNT_ID"));
    // Fail-open even so: the text goes through unchanged.
    assert_eq!(out.stdout, std::fs::read(file_path(TRANSPORTS)).expect("corpus"));
}

#[test]
fn cli_ctrl_c_during_scoring_prints_the_raw_text_with_outcome_cancelled() {
    let server = FakeJev::start(|_| Reply::stall());
    let url = server.url();
    let request = request_for(TRANSPORTS);
    let child = toolprune(
        &["prune", "--scorer", "jev", "--request", &request, &file_path(TRANSPORTS)],
        &jev_env(&url, "typesafe"),
    )
    .spawn()
    .expect("toolprune runs");
    let waiting = Instant::now();
    while server.requests().is_empty() {
        assert!(waiting.elapsed() < Duration::from_secs(30), "no request arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = Instant::now();
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().expect("toolprune exits");
    assert!(interrupted.elapsed() < Duration::from_secs(5), "{:?}", interrupted.elapsed());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("outcome=cancelled"), "{stderr}");
    assert_eq!(out.stdout, corpus(TRANSPORTS).into_bytes());
}

#[test]
fn cli_jev_check_reports_status_and_decoded_counts_or_a_diagnosis() {
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, |n| json!(if n == 0 { 0.93 } else { 0.02 }))));
    let url = server.url();
    let out = run(&["jev", "check"], &jev_env(&url, "typesafe"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("HTTP 200"), "{stdout}");
    assert!(stdout.contains("calls=1 jev_tokens=200"), "{stdout}");
    assert!(stdout.contains("p0=0.93 p1=0.02"), "{stdout}");
    assert!(stdout.contains("model=jev-1.13.0 (requested)"), "{stdout}");
    assert!(stdout.contains("served model: jev-1.13.0\n"), "the model the answer named: {stdout}");
    assert!(!stdout.contains(TOKEN));
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].chunk_names(), ["p0", "p1"], "one two-paragraph request");
    assert!(!seen[0].body.contains("jev-check"), "the tool label is not sent");

    let diagnose = |status: u16, expect: &str| {
        let server = FakeJev::start(move |_| Reply::status(status));
        let url = server.url();
        let out = run(&["jev", "check"], &jev_env(&url, "cloudflare"));
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(stdout.contains(expect), "{status}: {stdout}");
        assert!(!stdout.contains("echo") && !stdout.contains(TOKEN), "{stdout}");
    };
    // An answer that names no model says so.
    let server = FakeJev::start(|seen| {
        let mut body: Value = serde_json::from_str(&answer_all(seen, |_| json!(0.5))).unwrap();
        body.as_object_mut().unwrap().remove("model");
        Reply::ok(body.to_string())
    });
    let url = server.url();
    let out = run(&["jev", "check"], &jev_env(&url, "typesafe"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("served model: the answer named none"), "{out:?}");

    diagnose(401, "token was refused");
    diagnose(402, "out of credit");
    diagnose(404, "no such endpoint");

    let out = run(&["jev", "check"], &[("TOOLPRUNE_JEV_ROUTE", "typesafe")]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no token"), "{:?}", out);
    let out = run(&["jev", "check"], &[("TOOLPRUNE_JEV_TOKEN", TOKEN)]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("no account id"), "{:?}", out);

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let out = run(&["jev", "check"], &jev_env(&dead, "typesafe"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unreachable: connection refused"), "{stdout}");
}

#[test]
fn cli_an_unparsable_config_file_turns_pruning_off_and_says_so() {
    let dir = std::env::temp_dir().join(format!("toolprune-jev-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "enabled = tru\n").unwrap();
    let request = request_for(TRANSPORTS);
    let out = run(
        &["prune", "--request", &request, &file_path(TRANSPORTS)],
        &[("TOOLPRUNE_CONFIG", bad.to_str().unwrap())],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pruning is off") && stderr.contains("bad.toml: line 1"), "{stderr}");
    assert_eq!(out.stdout, corpus(TRANSPORTS).into_bytes(), "the raw text, unchanged");

    let good = dir.join("good.toml");
    std::fs::write(&good, "threshold = 0.3\n[jev]\nroute = \"typesafe\"\n").unwrap();
    let server = FakeJev::start(|seen| Reply::ok(answer_all(seen, varied)));
    let url = server.url();
    let out = run(
        &["prune", "--request", &request, &file_path(TRANSPORTS)],
        &[
            ("TOOLPRUNE_CONFIG", good.to_str().unwrap()),
            ("TOOLPRUNE_JEV_TOKEN", TOKEN),
            ("TOOLPRUNE_JEV_BASE_URL", url.as_str()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(" scorer=jev") && stderr.contains("threshold=0.3"), "{stderr}");
    assert_eq!(server.requests()[0].path, "/v1/systemone", "route from the file");
}
