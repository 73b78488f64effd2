//! Benchmark (not a test): scoring wall time of the Jev scorer against a
//! loopback server that answers every request in 200 ms, next to the ideal
//! ⌈batches ⁄ 4⌉ × 200 ms of 4 requests in flight.
//!
//! ```sh
//! cargo run --release -p toolprune --example jev_bench
//! ```
//!
//! Prints a Markdown table (median of 5 runs per document).

#[path = "../tests/support/fake_jev.rs"]
mod fake_jev;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_jev::{answer_all, FakeJev, Reply};
use toolprune::jev::{JevConfig, Route, Token};
use toolprune::{CapturedLog, JevScorer, Pruner, Scorer, ScriptedScorer, ToolResult, Turn, TurnOptions};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");
const DOCS: [&str; 5] = [
    "pep-0817-wheel-variants.rst",
    "nvm-README.md",
    "rust-blog-cargo-dev-cycle-1.90.md",
    "rust-rfc-3013-check-cfg.lf.md",
    "mcp-spec-2025-11-25-transports.mdx",
];
const ANSWER_MS: u64 = 200;
const RUNS: usize = 5;

fn main() -> anyhow::Result<()> {
    let pruner = Pruner::shared()?;
    let server = FakeJev::start(|seen| {
        Reply::ok(answer_all(seen, |n| serde_json::json!(if n.is_multiple_of(3) { 0.05 } else { 0.9 })))
            .delay(Duration::from_millis(ANSWER_MS))
    });
    let config = JevConfig {
        route: Route::TypeSafe,
        token: Some(Token::new("bench-token")),
        base_url: Some(server.url()),
        ..JevConfig::default()
    };
    let jev = JevScorer::new(&config)?;
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{CORPUS}/manifest.json"))?)?;

    println!("| document | chars | batches | ideal ⌈b/4⌉×200 ms | measured (median of {RUNS}) | overhead |");
    println!("|---|---:|---:|---:|---:|---:|");
    for doc in DOCS {
        let text = std::fs::read_to_string(format!("{CORPUS}/{doc}"))?;
        let entry = manifest
            .as_array()
            .and_then(|docs| docs.iter().find(|d| d["file"] == doc))
            .cloned()
            .unwrap_or_default();
        let request = entry["request_en"]
            .as_str()
            .unwrap_or("What does this document say about its main topic?");
        let mut options = TurnOptions::new(request);
        options.enabled = true;
        options.jev_model = config.jev_model();
        let mut turn = Turn::new(pruner, Arc::new(ScriptedScorer::new()), options)
            .with_log(Arc::new(CapturedLog::new()));
        let job = turn.begin(ToolResult::prunable("bench", text.clone()));
        let Some(plan) = job.scoring_request().cloned() else {
            continue;
        };
        drop(job);
        let batches = plan.batches.len();
        let ideal = batches.div_ceil(4) as u64 * ANSWER_MS;
        let mut times: Vec<u128> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                let response = jev.score(&plan);
                assert!(response.answers.is_ok());
                start.elapsed().as_millis()
            })
            .collect();
        times.sort_unstable();
        let median = times[RUNS / 2];
        println!(
            "| {doc} | {} | {batches} | {ideal} ms | {median} ms | +{} ms |",
            entry["chars"],
            median as i128 - ideal as i128
        );
    }
    Ok(())
}
