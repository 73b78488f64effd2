//! Benchmark (not a test): what the guest costs beside the scorer.
//!
//! ```sh
//! cargo run --release -p toolprune --example bench
//! ```
//!
//! Prints a Markdown table, one run (medians of repeated calls):
//!
//! - guest work per result (gates, split, batches, decisions, markers,
//!   counts; the scorer answers instantly with fixed scores) on the
//!   121,429-character `pep-0817-wheel-variants.rst`: the component in
//!   wasmtime (fuel on, as the host runs it; and fuel off, for diagnosis)
//!   against the same guest code compiled natively (`toolprune_guest::prune::Job`);
//! - the same with the offline (BM25) scorer on the PEP's first 100,000
//!   characters;
//! - per-turn instantiation from the pre-instantiated component;
//! - the component's size;
//! - the guest's peak linear memory on a 1 MB input;
//! - fuel and wall time of the 18 MB input of 120,000 short paragraphs
//!   (issue 12; `BENCH_LARGE=0` skips it), against the guest's budget
//!   (`settings.call-limits-for`).
//!
//! The wasm side is linked here as `toolprune::Pruner` does it (same engine
//! config, `instantiate_pre`, a `prune-job` per result), with a store
//! limiter that records the largest memory the guest asked for.

use std::time::{Duration, Instant};

use toolprune::{ConversationOptions, Scoring};
use toolprune_guest::types::{self as gp, self as gs, self as gt};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, ResourceLimiter, Store};
use wit::exports::toolprune::pruner::pruner::{Outcome, PruneInput, ScorerChoice};
use wit::exports::toolprune::pruner::types::Lang;
use wit::toolprune::pruner::scorer::{BatchAnswer, ScoringRequest, ScoringResponse};
use wit::{Toolprune, ToolprunePre};

/// The bench's own bindings of `wit/` (the host crate keeps its own private).
mod wit {
    wasmtime::component::bindgen!({
        world: "toolprune",
        path: "wit",
    });
}

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");
const PEP: &str = "pep-0817-wheel-variants.rst";
const REQUEST: &str = "How does PEP 817 encode a wheel variant in the wheel filename, and what happens with installers that don't understand variants (null variant / backwards compatibility)? Also, what are the security implications of variant provider plugins?";

/// The fixed score of paragraph `n`: every third one is dropped.
fn fixed(n: u32) -> f64 {
    if n % 3 == 0 {
        0.05
    } else {
        0.9
    }
}

/// Store data: a limiter recording the peak memory.
struct State {
    peak: usize,
}

impl ResourceLimiter for State {
    fn memory_growing(&mut self, _current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        self.peak = self.peak.max(desired);
        Ok(true)
    }
    fn table_growing(&mut self, _current: usize, _desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

/// The component's one import: instant fixed scores (the bench itself
/// prunes through `prune-job`, so this is only linked).
impl wit::toolprune::pruner::scorer::Host for State {
    fn score(&mut self, request: ScoringRequest) -> ScoringResponse {
        instant(&request)
    }
}

/// Instant fixed scores for every batch.
fn instant(request: &ScoringRequest) -> ScoringResponse {
    ScoringResponse {
        answers: Ok(request
            .batches
            .iter()
            .map(|b| BatchAnswer::Scores(b.paragraphs.iter().map(|&n| Some(fixed(n))).collect()))
            .collect()),
        elapsed_ms: 0,
    }
}

const FUEL: u64 = 20_000_000_000;

struct Wasm {
    engine: Engine,
    pre: ToolprunePre<State>,
    fuel: bool,
}

impl Wasm {
    fn new(fuel: bool) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.consume_fuel(fuel);
        if std::env::var("BENCH_PERFMAP").is_ok() {
            // `perf report` resolves the guest's functions through /tmp/perf-PID.map.
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
        let component = Component::new(&engine, toolprune_artifacts::component()).map_err(anyhow::Error::from)?;
        let mut linker = Linker::<State>::new(&engine);
        Toolprune::add_to_linker::<State, wasmtime::component::HasSelf<State>>(&mut linker, |s| s).map_err(anyhow::Error::from)?;
        let pre = ToolprunePre::new(linker.instantiate_pre(&component).map_err(anyhow::Error::from)?)
            .map_err(anyhow::Error::from)?;
        Ok(Wasm { engine, pre, fuel })
    }

    fn instantiate(&self) -> (Store<State>, Toolprune) {
        let mut store = Store::new(&self.engine, State { peak: 0 });
        store.limiter(|s| s as &mut dyn ResourceLimiter);
        if self.fuel {
            store.set_fuel(FUEL).unwrap();
        }
        let bindings = self.pre.instantiate(&mut store).unwrap();
        (store, bindings)
    }

    /// One result as a host prunes it: `prune-job` new, its request scored
    /// instantly, finish. Returns the outcome and the fuel it burned.
    fn prune_with(&self, store: &mut Store<State>, bindings: &Toolprune, input: &PruneInput, fuel: u64) -> (Outcome, u64) {
        if self.fuel {
            store.set_fuel(fuel).unwrap();
        }
        let job = bindings.toolprune_pruner_pruner().prune_job();
        let handle = job.call_constructor(&mut *store, input).unwrap();
        let request = job.call_scoring_request(&mut *store, handle).unwrap();
        let response = request.as_ref().map(instant);
        let pruned = job.call_finish(&mut *store, handle, response.as_ref(), 1).unwrap();
        handle.resource_drop(&mut *store).unwrap();
        let burned = if self.fuel { fuel - store.get_fuel().unwrap() } else { 0 };
        (pruned.outcome, burned)
    }

    fn prune(&self, store: &mut Store<State>, bindings: &Toolprune, input: &PruneInput) -> Outcome {
        self.prune_with(store, bindings, input, FUEL).0
    }
}

fn host_input(text: &str, offline: bool) -> PruneInput {
    PruneInput {
        request: REQUEST.to_string(),
        text: text.to_string(),
        enabled: true,
        succeeded: true,
        prunable: true,
        threshold: 0.2,
        lang: Lang::En,
        scorer: if offline { ScorerChoice::Offline } else { ScorerChoice::Host("bench".into()) },
        jev_model: None,
        agent: "bench".into(),
        tool: "fetch".into(),
        report: false,
        arguments: None,
        pruned_calls: Vec::new(),
        work_budget: None,
    }
}

fn guest_input(text: &str, offline: bool) -> gp::PruneInput {
    gp::PruneInput {
        request: REQUEST.to_string(),
        text: text.to_string(),
        enabled: true,
        succeeded: true,
        prunable: true,
        threshold: 0.2,
        lang: gt::Lang::En,
        scorer: if offline { gp::ScorerChoice::Offline } else { gp::ScorerChoice::Host("bench".into()) },
        jev_model: None,
        agent: "bench".into(),
        tool: "fetch".into(),
        report: false,
        arguments: None,
        pruned_calls: Vec::new(),
        work_budget: None,
    }
}

/// The whole pruning decision natively: start, score instantly, complete.
fn native(text: &str, offline: bool) -> gp::Outcome {
    let job = toolprune_guest::prune::Job::start(guest_input(text, offline));
    let response = job.request_ref().map(|request| gs::ScoringResponse {
        answers: Ok(request
            .batches
            .iter()
            .map(|b| gs::BatchAnswer::Scores(b.paragraphs.iter().map(|&n| Some(fixed(n))).collect()))
            .collect()),
        elapsed_ms: 0,
    });
    job.complete(response, 1).outcome
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() -> anyhow::Result<()> {
    let pep = std::fs::read_to_string(format!("{CORPUS}/{PEP}"))?;
    let pep100k: String = pep.chars().take(100_000).collect();
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);

    if std::env::var("BENCH_PROFILE_NATIVE_OFFLINE").is_ok() {
        // For `valgrind --tool=callgrind`: only the native offline path.
        for _ in 0..runs {
            native(&pep100k, true);
        }
        return Ok(());
    }

    let fueled = Wasm::new(true)?;
    let unfueled = Wasm::new(false)?;

    if std::env::var("BENCH_PROFILE_WASM").is_ok() {
        // For `perf record`: only the fuel-off component's guest work on the PEP.
        let input = host_input(&pep, false);
        let (mut store, bindings) = unfueled.instantiate();
        for _ in 0..runs {
            unfueled.prune(&mut store, &bindings, &input);
        }
        return Ok(());
    }

    println!("| measurement | wasmtime (fuel on) | wasmtime (fuel off) | native | ratio (fuel on / native) | goal |");
    println!("|---|---:|---:|---:|---:|---|");
    for (label, text, offline, goal) in [
        (format!("guest work per result, {PEP} ({} chars), instant fixed scores", pep.chars().count()), &pep, false, "≤ 1.5×, ≤ 2 ms"),
        ("same, offline BM25 scorer, first 100,000 chars".to_string(), &pep100k, true, "—"),
    ] {
        let input = host_input(text, offline);
        // The three variants take turns, one call each per round, so that a
        // burst of load on this shared machine hits all three alike and the
        // ratio stays meaningful; at least 200 rounds for the short rows.
        let (mut store_fuel, bindings_fuel) = fueled.instantiate();
        let (mut store_free, bindings_free) = unfueled.instantiate();
        let outcome = Some(fueled.prune(&mut store_fuel, &bindings_fuel, &input));
        unfueled.prune(&mut store_free, &bindings_free, &input);
        let native_outcome = native(text, offline);
        let rounds = if offline { runs } else { runs.max(200) };
        let mut samples: [Vec<Duration>; 3] = Default::default();
        for _ in 0..rounds {
            let t = Instant::now();
            fueled.prune(&mut store_fuel, &bindings_fuel, &input);
            samples[0].push(t.elapsed());
            let t = Instant::now();
            unfueled.prune(&mut store_free, &bindings_free, &input);
            samples[1].push(t.elapsed());
            let t = Instant::now();
            native(text, offline);
            samples[2].push(t.elapsed());
        }
        let [fuel, free, nat] = samples.map(median);
        let (cells, n) = ([fuel, free], nat);
        println!(
            "| {label} (outcome {:?} / native {:?}) | {} | {} | {} | {:.2}× | {goal} |",
            outcome.unwrap(),
            native_outcome,
            ms(cells[0]),
            ms(cells[1]),
            ms(n),
            cells[0].as_secs_f64() / n.as_secs_f64(),
        );
    }

    // The host's own API (`Turn::on_tool_result`, one turn per call: fresh
    // instance, fuel on), first 100,000 chars: what a CLI or agent pays per
    // result. The Node and Python benches (`scripts/bench`) time the same call.
    let pruner = toolprune::Pruner::shared()?;
    for (name, scoring) in [("offline", Scoring::Offline), ("stub", Scoring::Stub)] {
        let turn_call = time(runs, || {
            let conversation = pruner
                .conversation(ConversationOptions {
                    enabled: true,
                    scoring: Some(scoring.clone()),
                    log: std::sync::Arc::new(toolprune::CapturedLog::new()),
                    ..ConversationOptions::default()
                })
                .expect("a conversation");
            conversation.turn(REQUEST).on_tool_result(toolprune::ToolResult::prunable("fetch", pep100k.as_str()));
        });
        println!(
            "| Rust host: per call through `Turn::on_tool_result` (new conversation + instance), {name} scorer, first 100,000 chars | {} | | | | — |",
            ms(turn_call)
        );
    }

    // Per-turn instantiation: a fresh store and instance from the pre-instantiated component.
    let inst = time(runs.max(200), || {
        let _ = fueled.instantiate();
    });
    println!(
        "| per-turn instantiation (fresh store + `instantiate_pre`d component) | {:.1} µs | | | | ≤ 50 µs |",
        inst.as_secs_f64() * 1e6
    );

    let size = toolprune_artifacts::component().len();
    println!("| component size | {size} bytes ({:.0} KiB) | | | | ≤ 512 KiB (issue 22 §6) |", size as f64 / 1024.0);

    // Peak memory on a 1 MB input (the PEP repeated), instant fixed scores.
    let mut mb = String::new();
    while mb.len() < 1_000_000 {
        mb.push_str(&pep);
    }
    mb.truncate(mb.floor_char_boundary(1_000_000));
    let (mut store, bindings) = fueled.instantiate();
    let baseline = store.data().peak;
    let t = Instant::now();
    let outcome = fueled.prune(&mut store, &bindings, &host_input(&mb, false));
    let took = t.elapsed();
    println!(
        "| guest peak linear memory, 1,000,000-byte input (outcome {outcome:?}, {}) | {:.1} MiB (after instantiation {:.1} MiB) | | | | — |",
        ms(took),
        store.data().peak as f64 / (1 << 20) as f64,
        baseline as f64 / (1 << 20) as f64,
    );

    if std::env::var("BENCH_LARGE").as_deref() != Ok("0") {
        // Issue 12: 18 MB of 120,000 short paragraphs, offline scorer, with
        // the guest's own budget for that size.
        let large: String = (1..=120_000)
            .map(|i| format!("Line {i} of the upload log: part queued, part sent, acknowledgement received after a short pause; the client moves on to the next part in its queue and records it."))
            .collect::<Vec<_>>()
            .join("\n\n");
        let (mut store, bindings) = fueled.instantiate();
        let limits = bindings
            .toolprune_pruner_settings()
            .call_call_limits_for(&mut store, large.len() as u64)
            .unwrap();
        let t = Instant::now();
        let (outcome, burned) = fueled.prune_with(&mut store, &bindings, &host_input(&large, true), limits.fuel);
        let took = t.elapsed();
        println!(
            "| 18 MB input ({} bytes, 120,000 paragraphs), offline scorer: fuel burned / the guest's budget (outcome {outcome:?}) | {:.2}·10⁹ of {:.2}·10⁹ fuel ({:.0}%), {} | | | | within budget |",
            large.len(),
            burned as f64 / 1e9,
            limits.fuel as f64 / 1e9,
            100.0 * burned as f64 / limits.fuel as f64,
            ms(took),
        );
    }
    Ok(())
}
