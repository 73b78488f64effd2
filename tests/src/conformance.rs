//! The Rust runner of the conformance suite (`tests/conformance/README.md`):
//! every scenario through the public `toolprune` API and a loopback Jev
//! server, **in both forms** ([`Form::Import`]: `pruner.prune` /
//! `judge.decide` with the `scorer.score` import; [`Form::Jobs`]:
//! `prune-job` / `judge-job`), each step's result as the JSON the README
//! defines, both compared with the same `expected/` file. The same code
//! writes `expected/` (generation, from the import form, after checking the
//! jobs form gives the same) and checks against it (the staleness test):
//! `tests/tests/conformance.rs`, `cli/tests/conformance.rs`. It also fails
//! a scenario whose scorer was asked twice for one result, or at all for a
//! gated, offline or stub one ([`scorer_call_rule`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use toolprune::types::{wit_name, BatchAnswer, Dialect, Failure, Lang, ScoringRequest};
use toolprune::{
    CacheDir, CancelToken, CapturedLog, Conversation, ConversationError, ConversationOptions, Form, JevScorer,
    LimitsOverride, LoadOptions, PruneResult, Pruner, Scorer, Scoring, ScoringContext, ScriptedScorer, ToolResult, Turn,
};

#[path = "fake_jev.rs"]
pub mod fake_jev;

use fake_jev::{FakeJev, Reply};
use toolprune::judge::{Decision, Judge, RouteError, Verdict};

/// `tests/conformance/` of this workspace.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance")
}

/// `shared/` beside the repository, or `$TOOLPRUNE_SHARED`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("TOOLPRUNE_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(crate::SHARED),
    }
}

/// Every scenario file, by name, in name order.
pub fn scenarios() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir().join("scenarios"))
        .expect("tests/conformance/scenarios exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("scenario readable");
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert_eq!(value["name"], json!(name), "{}: name must be the file name", path.display());
        out.push((name, value));
    }
    out
}

/// What this runner can do (README "Capabilities").
#[derive(Clone, Debug, Default)]
pub struct Runner {
    /// The `toolprune` binary, for `cli` steps; none: scenarios requiring `cli` are skipped.
    pub cli: Option<PathBuf>,
    /// Run `slow` scenarios.
    pub slow: bool,
}

impl Runner {
    /// Why this runner skips `scenario`, if it does.
    pub fn skip_reason(&self, scenario: &Value) -> Option<String> {
        let requires = scenario["requires"].as_array().cloned().unwrap_or_default();
        for need in requires.iter().filter_map(Value::as_str) {
            match need {
                "fuel" => {}
                "cli" if self.cli.is_some() => {}
                "cli" => return Some("cli: run by cli/tests/conformance.rs".into()),
                "slow" if self.slow => {}
                "slow" => return Some("slow: set TOOLPRUNE_SLOW=1".into()),
                "wall_time" => return Some("wall_time: this host's guard is fuel".into()),
                other => return Some(format!("unknown capability {other}")),
            }
        }
        let needs_cli = scenario["steps"].as_array().into_iter().flatten().any(|s| s.get("cli").is_some());
        if needs_cli && self.cli.is_none() {
            return Some("cli steps: run by cli/tests/conformance.rs".into());
        }
        None
    }
}

// ------------------------------------------------------------------ texts --

/// A TEXT of the README.
pub fn text(spec: &Value) -> String {
    match spec {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let sep = |default: &str| o.get("sep").and_then(Value::as_str).unwrap_or(default).to_string();
            if let Some(file) = o.get("shared").and_then(Value::as_str) {
                let path = shared_dir().join(file);
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            } else if let Some(file) = o.get("conformance").and_then(Value::as_str) {
                let path = dir().join(file);
                std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            } else if let Some(parts) = o.get("join").and_then(Value::as_array) {
                parts.iter().map(text).collect::<Vec<_>>().join(&sep(""))
            } else if let Some(part) = o.get("repeat") {
                let times = o["times"].as_u64().expect("repeat needs times") as usize;
                vec![text(part); times].join(&sep("\n\n"))
            } else if let Some(template) = o.get("numbered").and_then(Value::as_str) {
                let count = o["count"].as_u64().expect("numbered needs count");
                (1..=count).map(|i| template.replace("{i}", &i.to_string())).collect::<Vec<_>>().join(&sep("\n\n"))
            } else {
                panic!("unknown TEXT {spec}")
            }
        }
        other => panic!("unknown TEXT {other}"),
    }
}

// ---------------------------------------------------------------- results --

/// `F`, `F_sha256`, `F_bytes` for a string field (README "Results").
fn put_string(out: &mut Map<String, Value>, field: &str, value: &str) {
    let short = value.len() <= 1000;
    out.insert(field.into(), if short { json!(value) } else { Value::Null });
    out.insert(format!("{field}_sha256"), json!(hex(&Sha256::digest(value.as_bytes()))));
    out.insert(format!("{field}_bytes"), json!(value.len()));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `ms=` followed by digits → `ms=*` (README "Normalisation").
pub fn normalise_line(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("ms=") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push('*');
        }
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

fn lines(lines: &[String]) -> Value {
    json!(lines.iter().map(|l| normalise_line(l)).collect::<Vec<_>>())
}

/// PRUNED of the README.
pub fn pruned(result: &PruneResult, log: &[String]) -> Value {
    let mut out = Map::new();
    out.insert("outcome".into(), json!(wit_name(&result.outcome)));
    out.insert("gate".into(), json!(result.gate.as_ref().map(wit_name)));
    out.insert("id".into(), json!(result.id));
    out.insert("shape".into(), json!(result.shape.as_ref().map(wit_name)));
    put_string(&mut out, "body", &result.body);
    out.insert("body_is_input".into(), json!(*result.body == *result.raw));
    out.insert(
        "counts".into(),
        match &result.counts {
            Some(c) => json!({
                "raw_chars": c.raw_chars, "kept_chars": c.kept_chars, "paragraphs": c.paragraphs,
                "dropped": c.dropped, "calls": c.calls, "jev_tokens": c.jev_tokens,
                "ms": c.ms.map(|_| "*"), "work": c.work,
            }),
            None => Value::Null,
        },
    );
    out.insert("scorer_calls".into(), json!(result.scorer_calls));
    out.insert("ratio".into(), json!(result.ratio));
    out.insert("threshold".into(), json!(result.threshold));
    out.insert("served_model".into(), json!(result.served_model));
    out.insert(
        "failures".into(),
        json!(result
            .failures
            .iter()
            .map(|f| json!({"batch": f.batch, "status": f.status, "class": wit_name(&f.class)}))
            .collect::<Vec<_>>()),
    );
    out.insert(
        "failure".into(),
        match &result.failure {
            Some(f) => json!({"reason": f.reason_name(), "limit": f.limit.as_ref().map(wit_name)}),
            None => Value::Null,
        },
    );
    out.insert(
        "paragraphs".into(),
        json!(result
            .paragraphs
            .iter()
            .map(|p| json!({"index": p.index, "chars": p.chars, "score": p.score, "fate": wit_name(&p.fate)}))
            .collect::<Vec<_>>()),
    );
    out.insert("log".into(), lines(log));
    Value::Object(out)
}

// ---------------------------------------------------------------- scorers --

/// `{"throws": MESSAGE}`.
struct Throwing(String);

impl Scorer for Throwing {
    fn name(&self) -> &str {
        "scripted"
    }
    fn score(&self, _: &ScoringRequest, _: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        Err(anyhow::anyhow!("{}", self.0))
    }
}

/// `{"hangs": true}`: sleeps an hour (woken only when the host stops waiting).
struct Hanging;

impl Scorer for Hanging {
    fn name(&self) -> &str {
        "scripted"
    }
    fn score(&self, _: &ScoringRequest, context: &ScoringContext) -> anyhow::Result<Vec<BatchAnswer>> {
        context.sleep(Duration::from_secs(3600));
        anyhow::bail!("stopped")
    }
}

fn answer(spec: &Value) -> BatchAnswer {
    if let Some(scores) = spec.get("scores").and_then(Value::as_array) {
        BatchAnswer::Scores(scores.iter().map(Value::as_f64).collect())
    } else if let Some(body) = spec.get("jev_response").and_then(Value::as_str) {
        BatchAnswer::JevResponse(body.to_string())
    } else if let Some(failed) = spec.get("failed") {
        match failed.get("http").and_then(Value::as_u64) {
            Some(status) => BatchAnswer::Failed(Failure::Http(status as u16)),
            None => BatchAnswer::Failed(Failure::Network),
        }
    } else {
        panic!("unknown ANSWER {spec}")
    }
}

fn scripted(spec: &Value) -> ScriptedScorer {
    let mut scorer = ScriptedScorer::new();
    if let Some(default) = spec.get("default") {
        scorer = scorer.default_score(default.as_f64());
    }
    for (n, score) in spec.get("scores").and_then(Value::as_object).into_iter().flatten() {
        let n: u32 = n.parse().expect("paragraph numbers");
        scorer = match score.as_f64() {
            Some(s) => scorer.score(n, s),
            None => scorer.unscored(n),
        };
    }
    for (b, a) in spec.get("batches").and_then(Value::as_object).into_iter().flatten() {
        scorer = scorer.answer(b.parse().expect("batch numbers"), answer(a));
    }
    if let Some(ms) = spec.get("delay_ms").and_then(Value::as_u64) {
        scorer = scorer.delay(Duration::from_millis(ms));
    }
    scorer
}

/// One Jev RESPONSE of the README for the request `seen`.
fn reply(spec: &Value, seen: &fake_jev::Seen) -> Reply {
    let status = spec.get("status").and_then(Value::as_u64).unwrap_or(200) as u16;
    let from_file = spec.get("body_file").and_then(Value::as_str).map(|f| text(&json!({"conformance": f})));
    let body = match spec.get("body").and_then(Value::as_str).map(str::to_string).or(from_file) {
        Some(body) => body,
        None if (200..300).contains(&status) => {
            let a = spec.get("answer").cloned().unwrap_or(json!({}));
            let default = a.get("default").and_then(Value::as_f64).unwrap_or(1.0);
            let scores = a.get("scores").cloned().unwrap_or(json!({}));
            let mut bare: Value = serde_json::from_str(&fake_jev::answer_all(seen, |n| {
                scores.get(n.to_string()).cloned().unwrap_or(json!(default))
            }))
            .expect("answer_all is JSON");
            bare["model"] = a.get("model").cloned().unwrap_or(json!("jev-1.13.0"));
            let bare = bare.to_string();
            if a.get("envelope").and_then(Value::as_bool).unwrap_or(false) {
                fake_jev::envelope(&bare)
            } else {
                bare
            }
        }
        None => format!("{{\"error\":\"status {status}\"}}"),
    };
    let mut reply = Reply { body, ..Reply::status(status) };
    for (k, v) in spec.get("headers").and_then(Value::as_object).into_iter().flatten() {
        reply = reply.header(k, v.as_str().unwrap_or_default());
    }
    if let Some(ms) = spec.get("delay_ms").and_then(Value::as_u64) {
        reply = reply.delay(Duration::from_millis(ms));
    }
    reply.stall = spec.get("stall").and_then(Value::as_bool).unwrap_or(false);
    reply.close = spec.get("close").and_then(Value::as_bool).unwrap_or(false);
    reply
}

/// A loopback server playing JEV, and the scorer configured for it the way
/// users configure Jev (variables resolved by the guest).
fn jev(pruner: &Pruner, spec: &Value) -> (Scoring, Arc<FakeJev>) {
    let responses = spec.get("responses").and_then(Value::as_array).cloned().unwrap_or_default();
    let then = spec.get("then").cloned().unwrap_or(json!({"status": 200}));
    let server = Arc::new(FakeJev::start(move |seen| reply(responses.get(seen.n).unwrap_or(&then), seen)));
    let vars: BTreeMap<String, String> = [
        ("TOOLPRUNE_JEV_ROUTE".to_string(), "typesafe".to_string()),
        ("TOOLPRUNE_JEV_BASE_URL".to_string(), server.url()),
    ]
    .into();
    let pairs: Vec<(String, String)> = vars.clone().into_iter().collect();
    let token_variable = pruner.resolve(&pairs, None).expect("the loopback configuration resolves").token_variable;
    let env = move |name: &str| {
        if name == token_variable {
            Some("conformance-token".to_string())
        } else {
            vars.get(name).cloned()
        }
    };
    let (scorer, _model) = JevScorer::from_env(pruner, &env).expect("the loopback Jev scorer");
    (Scoring::host(scorer), server)
}

/// A SCORER of the README; the server when it is `{"jev": …}`.
fn scoring(pruner: &Pruner, spec: &Value) -> (Scoring, Option<Arc<FakeJev>>) {
    match spec {
        Value::String(s) if s == "offline" => (Scoring::Offline, None),
        Value::String(s) if s == "stub" => (Scoring::Stub, None),
        Value::Object(o) if o.contains_key("scripted") => (Scoring::host(scripted(&o["scripted"])), None),
        Value::Object(o) if o.contains_key("throws") => {
            (Scoring::host(Throwing(o["throws"].as_str().unwrap_or("error").to_string())), None)
        }
        Value::Object(o) if o.contains_key("hangs") => (Scoring::host(Hanging), None),
        Value::Object(o) if o.contains_key("jev") => {
            let (scoring, server) = jev(pruner, &o["jev"]);
            (scoring, Some(server))
        }
        other => panic!("unknown SCORER {other}"),
    }
}

// ------------------------------------------------------------------ steps --

/// A cache directory shared by the runs (the compiled component).
fn cache() -> CacheDir {
    CacheDir::Dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/toolprune-cache"))
}

fn load(spec: &Value) -> Pruner {
    let limits = &spec["limits"];
    let options = LoadOptions {
        limits: LimitsOverride {
            fuel: limits.get("fuel").and_then(Value::as_u64),
            wall_ms: limits.get("wall_ms").and_then(Value::as_u64).map(|v| v as u32),
            memory_bytes: limits.get("memory_bytes").and_then(Value::as_u64),
            work: limits.get("work").and_then(Value::as_u64),
        },
        cache: cache(),
        ..LoadOptions::default()
    };
    Pruner::load(options).expect("the component loads")
}

struct Live {
    conversation: Conversation,
    log: Arc<CapturedLog>,
    seen: usize,
    server: Option<Arc<FakeJev>>,
    /// The conversation's scorer is the host's (not the guest's offline or stub).
    host_scorer: bool,
}

impl Live {
    fn new_lines(&mut self) -> Vec<String> {
        let lines = self.log.lines();
        let new = lines[self.seen.min(lines.len())..].to_vec();
        self.seen = lines.len();
        new
    }
}

fn conversation(pruner: &Pruner, spec: &Value, form: Form) -> Result<Live, ConversationError> {
    let log = Arc::new(CapturedLog::new());
    let mut options = ConversationOptions { log: log.clone(), form, ..ConversationOptions::default() };
    let mut server = None;
    if let Some(v) = spec.get("enabled").and_then(Value::as_bool) {
        options.enabled = v;
    }
    match spec.get("threshold") {
        None => {}
        Some(Value::String(s)) => options.threshold = Some(s.clone()),
        // A number as the host's users pass one: its shortest decimal form.
        Some(Value::Number(n)) => options.threshold = Some(n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string())),
        Some(other) => panic!("threshold {other}"),
    }
    if let Some(lang) = spec.get("lang").and_then(Value::as_str) {
        options.lang = if lang == "ja" { Lang::Ja } else { Lang::En };
    }
    if let Some(agent) = spec.get("agent").and_then(Value::as_str) {
        options.agent = agent.to_string();
    }
    if let Some(s) = spec.get("scorer") {
        let (scoring, jev) = scoring(pruner, s);
        options.scoring = Some(scoring);
        server = jev;
    }
    if let Some(store) = spec.get("store") {
        options.max_records = store.get("max_records").and_then(Value::as_u64).map(|v| v as u32);
        options.max_chars = store.get("max_chars").and_then(Value::as_u64);
    }
    if let Some(ms) = spec.get("deadline_cap_ms").and_then(Value::as_u64) {
        options.deadline_cap = Some(Duration::from_millis(ms));
    }
    options.jev_model = spec.get("jev_model").and_then(Value::as_str).map(str::to_string);
    // Without a `scorer` the conversation scores with the pruner's default, the guest's offline scorer.
    let own_scorer = options.scoring.as_ref().is_some_and(|s| matches!(s, Scoring::Host(_)));
    Ok(Live { conversation: pruner.conversation(options)?, log, seen: 0, server, host_scorer: own_scorer })
}

fn tool_result(pruner: &Pruner, spec: &Value) -> (ToolResult, Option<Arc<FakeJev>>) {
    let (scoring, server) = match spec.get("scorer") {
        Some(s) => {
            let (scoring, server) = scoring(pruner, s);
            (Some(scoring), server)
        }
        None => (None, None),
    };
    let result = ToolResult {
        tool: spec.get("tool").and_then(Value::as_str).unwrap_or("fetch").to_string(),
        text: text(&spec["text"]),
        ok: spec.get("ok").and_then(Value::as_bool).unwrap_or(true),
        prunable: spec.get("prunable").and_then(Value::as_bool).unwrap_or(true),
        report: spec.get("report").and_then(Value::as_bool).unwrap_or(false),
        scoring,
        arguments: spec.get("arguments").map(|a| a.as_str().expect("PRUNE arguments is a JSON text (a string)").to_string()),
    };
    (result, server)
}

fn with_requests(mut value: Value, server: Option<&Arc<FakeJev>>, before: usize) -> Value {
    if let Some(server) = server {
        value["requests"] = json!(server.requests().len() - before);
    }
    value
}

/// The scorer-call rule (README "Results", `scorer_calls`): the host's
/// scorer is asked at most once per result, and never for a result stopped
/// by a cheap gate or scored by the guest itself (offline, stub).
/// `host_scorer`: the result's scorer is a host scorer.
pub fn scorer_call_rule(result: &PruneResult, host_scorer: bool) -> Result<(), String> {
    if result.scorer_calls > 1 {
        return Err(format!("the scorer was asked {} times for one result", result.scorer_calls));
    }
    if result.scorer_calls > 0 && result.gate.is_some() {
        return Err(format!("the scorer was asked for a result stopped by the gate {}", result.gate.as_ref().map(wit_name).unwrap_or_default()));
    }
    if result.scorer_calls > 0 && !host_scorer {
        return Err("the scorer was asked for a result the guest scores itself (offline, stub)".to_string());
    }
    Ok(())
}

/// Whether a PRUNE's result is scored by a host scorer (its own `scorer`,
/// else the conversation's).
fn host_scored(spec: &Value, live: &Live) -> bool {
    match spec.get("scorer") {
        Some(Value::String(_)) => false,
        Some(_) => true,
        None => live.host_scorer,
    }
}

/// Runs one scenario in `form`; one result per step. Panics on a malformed
/// scenario, or when a result breaks [`scorer_call_rule`].
pub fn run(scenario: &Value, runner: &Runner, form: Form) -> Vec<Value> {
    let pruner = load(scenario.get("pruner").unwrap_or(&Value::Null));
    let mut live = conversation(&pruner, scenario.get("conversation").unwrap_or(&json!({})), form)
        .expect("the scenario's first conversation is valid");
    let mut turn: Option<Turn> = None;
    let mut results = Vec::new();
    for step in scenario["steps"].as_array().expect("steps") {
        let result = if let Some(spec) = step.get("conversation") {
            match conversation(&pruner, spec, form) {
                Ok(next) => {
                    live = next;
                    turn = None;
                    json!({"ok": true})
                }
                Err(ConversationError::Threshold(message)) => {
                    json!({"error": {"kind": "threshold", "message": message}})
                }
                Err(other) => panic!("conversation: {other}"),
            }
        } else if let Some(spec) = step.get("turn") {
            let cancel = CancelToken::new();
            if let Some(ms) = spec.get("cancel_after_ms").and_then(Value::as_u64) {
                let token = cancel.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    token.cancel();
                });
            }
            let request = text(&spec["request"]);
            turn = Some(live.conversation.turn_with_cancel(request, cancel));
            json!({"ok": true})
        } else if let Some(spec) = step.get("prune").or_else(|| step.get("prune_async")) {
            let turn = turn.as_ref().expect("a turn step comes first");
            let (result, own) = tool_result(&pruner, spec);
            let server = own.as_ref().or(live.server.as_ref()).cloned();
            let before = server.as_ref().map_or(0, |s| s.requests().len());
            let pruned_result = turn.on_tool_result(result);
            if let Err(e) = scorer_call_rule(&pruned_result, host_scored(spec, &live)) {
                panic!("{form:?} form, step {step}: {e}");
            }
            let value = pruned(&pruned_result, &live.new_lines());
            with_requests(value, server.as_ref(), before)
        } else if let Some(specs) = step.get("concurrent").and_then(Value::as_array) {
            let turn = turn.as_ref().expect("a turn step comes first");
            let inputs: Vec<(ToolResult, Option<Arc<FakeJev>>)> = specs.iter().map(|s| tool_result(&pruner, s)).collect();
            let outputs: Vec<PruneResult> = std::thread::scope(|scope| {
                let handles: Vec<_> =
                    inputs.iter().map(|(r, _)| scope.spawn(|| turn.on_tool_result(r.clone()))).collect();
                handles.into_iter().map(|h| h.join().expect("no panic")).collect()
            });
            let _ = live.new_lines();
            for (spec, output) in specs.iter().zip(&outputs) {
                if let Err(e) = scorer_call_rule(output, host_scored(spec, &live)) {
                    panic!("{form:?} form, concurrent step: {e}");
                }
            }
            json!(outputs
                .iter()
                .map(|r| pruned(r, &r.log_line.iter().cloned().collect::<Vec<_>>()))
                .collect::<Vec<_>>())
        } else if let Some(arguments) = step.get("omitted").and_then(Value::as_str) {
            let answer = live.conversation.omitted(arguments);
            let mut out = Map::new();
            out.insert("outcome".into(), json!(answer.outcome_name()));
            put_string(&mut out, "text", &answer.text);
            out.insert("log".into(), lines(&live.new_lines()));
            Value::Object(out)
        } else if let Some(spec) = step.get("omitted_tool") {
            let dialect = match spec["dialect"].as_str() {
                Some("openai") => Dialect::Openai,
                Some("anthropic") => Dialect::Anthropic,
                Some("mcp") => Dialect::Mcp,
                _ => Dialect::Plain,
            };
            let lang = spec.get("lang").and_then(Value::as_str).map(|l| if l == "ja" { Lang::Ja } else { Lang::En });
            let tool = live.conversation.omitted_tool(dialect, lang).expect("the tool spec");
            let name = tool.get("name").or_else(|| tool.pointer("/function/name")).cloned().unwrap_or(Value::Null);
            json!({"tool": tool, "name": name})
        } else if let Some(spec) = step.get("inspect") {
            let inspection = pruner.inspect(&text(spec)).expect("inspect");
            json!({
                "shape": inspection.shape.as_ref().map(wit_name),
                "wrapper_span": inspection.wrapper_span.map(|(a, b)| [a, b]),
                "units": inspection.units.iter().map(|u| json!({
                    "index": u.index, "byte_start": u.byte_start, "byte_end": u.byte_end,
                    "char_start": u.char_start, "char_end": u.char_end, "kind": wit_name(&u.kind),
                })).collect::<Vec<_>>(),
            })
        } else if let Some(spec) = step.get("is_prunable") {
            let globs: Vec<String> =
                spec["globs"].as_array().into_iter().flatten().filter_map(|g| g.as_str().map(str::to_string)).collect();
            let prunable = match spec.get("names").and_then(Value::as_array) {
                Some(names) => pruner.is_tool_prunable(&names.iter().filter_map(Value::as_str).collect::<Vec<_>>(), &globs),
                None => pruner.is_prunable(spec["tool"].as_str().unwrap_or_default(), &globs),
            };
            json!({"prunable": prunable})
        } else if let Some(spec) = step.get("route") {
            let log = Arc::new(CapturedLog::new());
            let judge = Judge::new(&pruner, None)
                .with_jev_model(spec.get("jev_model").and_then(Value::as_str).map(str::to_string))
                .with_log(log.clone());
            let decided = judge.route_with_answers(&text(&spec["rules"]), spec["message"].as_str().unwrap_or_default(), &text(&spec["answers"]));
            routed(decided, &log.lines())
        } else if let Some(spec) = step.get("route_live") {
            let log = Arc::new(CapturedLog::new());
            let (scoring, server) = scoring(&pruner, &spec["scorer"]);
            let Scoring::Host(scorer) = scoring else { panic!("route_live needs a host scorer") };
            let judge = Judge::new(&pruner, Some(scorer))
                .with_jev_model(spec.get("jev_model").and_then(Value::as_str).map(str::to_string))
                .with_log(log.clone())
                .with_form(form);
            let decided = judge.route(&text(&spec["rules"]), spec["message"].as_str().unwrap_or_default());
            with_requests(routed(decided, &log.lines()), server.as_ref(), 0)
        } else if let Some(spec) = step.get("cli") {
            cli(runner.cli.as_deref().expect("cli steps need the binary"), spec)
        } else {
            panic!("unknown step {step}")
        };
        results.push(result);
    }
    results
}

/// ROUTED of the README.
fn routed(decided: Result<Decision, RouteError>, log: &[String]) -> Value {
    match decided {
        Ok(d) => {
            let (to, note, reason) = match &d.verdict {
                Verdict::Routed(to) => (json!(to), Value::Null, Value::Null),
                Verdict::Returned(note) => (Value::Null, json!(note), Value::Null),
                Verdict::Failed(class) => (Value::Null, Value::Null, json!(wit_name(class))),
            };
            let answers: Vec<Value> = d
                .answers
                .iter()
                .map(|a| json!({"question": a.question, "type": wit_name(&a.kind), "value": a.value, "p": a.p, "margin": a.margin, "mean": a.mean}))
                .collect();
            json!({
                "decision": {"verdict": wit_name(&d.verdict), "to": to, "note": note, "reason": reason, "rule": d.rule, "answers": answers, "jev_tokens": d.jev_tokens},
                "log": lines(log),
            })
        }
        Err(RouteError::Rules(errors)) => json!({
            "errors": errors.iter().map(|e| json!({"line": e.line, "column": e.column, "message": e.message})).collect::<Vec<_>>(),
            "log": lines(log),
        }),
        Err(RouteError::Guest(failure)) => panic!("the judge trapped: {failure}"),
    }
}

/// CLI of the README: runs `binary` with the step's arguments, stdin and
/// environment (PATH, a fresh empty HOME, the given variables).
fn cli(binary: &Path, spec: &Value) -> Value {
    let home = std::env::temp_dir().join(format!("toolprune-conformance-home-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let args: Vec<String> = spec["args"].as_array().into_iter().flatten().map(|a| a.as_str().unwrap_or_default().to_string()).collect();
    let stdin = spec.get("stdin").map(text).unwrap_or_default();
    let mut command = Command::new(binary);
    command.current_dir(dir()).args(&args).env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).env("HOME", &home);
    // The compiled component's cache is not part of the behaviour under test.
    command.env("TOOLPRUNE_CACHE_DIR", PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/toolprune-cache"));
    for (k, v) in spec.get("env").and_then(Value::as_object).into_iter().flatten() {
        command.env(k, v.as_str().unwrap_or_default());
    }
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the CLI runs");
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        let bytes = stdin.clone().into_bytes();
        std::thread::spawn(move || {
            let _ = input.write_all(&bytes);
        });
    }
    let output = child.wait_with_output().expect("the CLI ends");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let log: Vec<String> =
        stderr.lines().filter(|l| l.starts_with("tool ") || l.starts_with("judge:")).map(str::to_string).collect();
    let mut out = Map::new();
    out.insert("exit".into(), json!(output.status.code()));
    put_string(&mut out, "stdout", &stdout);
    out.insert("stdout_is_stdin".into(), json!(stdout == stdin));
    out.insert("log".into(), lines(&log));
    out.insert("stderr".into(), json!(stderr));
    Value::Object(out)
}

// -------------------------------------------------------------- comparing --

/// Checks a hand-written partial expectation (README "STEP").
pub fn partial(expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                if k == "stderr_contains" {
                    let stderr = a.get("stderr").and_then(Value::as_str).unwrap_or_default();
                    let wanted = v.as_str().unwrap_or_default();
                    if !stderr.contains(wanted) {
                        return Err(format!("{at}.stderr does not contain {wanted:?}: {stderr:?}"));
                    }
                    continue;
                }
                partial(v, a.get(k).unwrap_or(&Value::Null), &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                partial(e, a, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{at}: expected {e}, got {a}")),
    }
}

/// Every step's hand-written expectation against the results.
pub fn check_hand_written(scenario: &Value, results: &[Value]) -> Result<(), String> {
    for (i, (step, result)) in scenario["steps"].as_array().expect("steps").iter().zip(results).enumerate() {
        if let Some(expect) = step.get("expect") {
            partial(expect, result, &format!("step {i}"))?;
        }
    }
    Ok(())
}

/// The generated file's content for `results` (stderr is not compared: it
/// differs between hosts).
pub fn expected_file(name: &str, results: &[Value]) -> String {
    let steps: Vec<Value> = results
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                o.remove("stderr");
            }
            r
        })
        .collect();
    let file = json!({
        "scenario": name,
        "generated_by": "the Rust host: TOOLPRUNE_CONFORMANCE_WRITE=1 cargo test -p toolprune-tests -p toolprune-cli --test conformance",
        "steps": steps,
    });
    let mut text = serde_json::to_string_pretty(&file).expect("JSON");
    text.push('\n');
    text
}

/// `tests/conformance/expected/NAME.json`.
pub fn expected_path(name: &str) -> PathBuf {
    dir().join("expected").join(format!("{name}.json"))
}

/// Runs every scenario this runner can run: checks the hand-written
/// expectations, then writes (`TOOLPRUNE_CONFORMANCE_WRITE=1`) or compares
/// the generated file. Returns the failures and the skips.
pub fn run_all(runner: &Runner, only: impl Fn(&Value) -> bool) -> (Vec<String>, Vec<String>) {
    let write = std::env::var_os("TOOLPRUNE_CONFORMANCE_WRITE").is_some();
    let mut failures = Vec::new();
    let mut skips = Vec::new();
    for (name, scenario) in scenarios() {
        if !only(&scenario) {
            continue;
        }
        if let Some(reason) = runner.skip_reason(&scenario) {
            skips.push(format!("{name}: {reason}"));
            continue;
        }
        let results = run(&scenario, runner, Form::Import);
        if let Err(e) = check_hand_written(&scenario, &results) {
            failures.push(format!("{name} (import form): {e}"));
            continue;
        }
        // The jobs form must give the very same results (one expected/ for both).
        let jobs = run(&scenario, runner, Form::Jobs);
        if let Err(e) = check_hand_written(&scenario, &jobs) {
            failures.push(format!("{name} (jobs form): {e}"));
            continue;
        }
        let (import_file, jobs_file) = (expected_file(&name, &results), expected_file(&name, &jobs));
        if import_file != jobs_file {
            let (a, b): (Value, Value) = (serde_json::from_str(&import_file).unwrap(), serde_json::from_str(&jobs_file).unwrap());
            let at = a["steps"].as_array().into_iter().flatten().zip(b["steps"].as_array().into_iter().flatten()).position(|(x, y)| x != y);
            failures.push(format!(
                "{name}: the import and jobs forms differ at step {at:?}: {}",
                at.map_or(String::new(), |i| format!("import {} jobs {}", a["steps"][i], b["steps"][i]))
            ));
            continue;
        }
        let fresh = expected_file(&name, &results);
        let path = expected_path(&name);
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).expect("expected/ can be made");
            std::fs::write(&path, &fresh).expect("expected file written");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Err(_) => failures.push(format!("{name}: no {} (generate it)", path.display())),
            Ok(committed) => {
                let committed: Value = serde_json::from_str(&committed).expect("expected file is JSON");
                let fresh: Value = serde_json::from_str(&fresh).expect("JSON");
                if committed["steps"] != fresh["steps"] {
                    let at = committed["steps"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .zip(fresh["steps"].as_array().into_iter().flatten())
                        .position(|(a, b)| a != b);
                    failures.push(format!(
                        "{name}: differs from {} at step {at:?}: {}\n(after a guest change, regenerate with TOOLPRUNE_CONFORMANCE_WRITE=1 and commit)",
                        path.display(),
                        at.map_or(String::new(), |i| format!(
                            "expected {} got {}",
                            committed["steps"][i], fresh["steps"][i]
                        ))
                    ));
                }
            }
        }
    }
    (failures, skips)
}
