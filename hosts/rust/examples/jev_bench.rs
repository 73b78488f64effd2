//! Benchmark (not a test): wall time of pruning with the Jev scorer against
//! a loopback server that answers every request in 200 ms, next to the ideal
//! ⌈batches ⁄ 4⌉ × 200 ms of 4 requests in flight (the overhead includes
//! the guest's work on the document).
//!
//! ```sh
//! cargo run --release -p toolprune --example jev_bench
//! ```
//!
//! Prints a Markdown table (median of 5 runs per document).

#[path = "../../../tests/src/fake_jev.rs"]
mod fake_jev;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_jev::{answer_all, FakeJev, Reply};
use toolprune::{CapturedLog, ConversationOptions, JevScorer, Pruner, Scoring, ToolResult};

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
    let url = server.url();
    let env = move |name: &str| match name {
        "TOOLPRUNE_JEV_ROUTE" => Some("typesafe".to_string()),
        "TOOLPRUNE_JEV_BASE_URL" => Some(url.clone()),
        "TOOLPRUNE_JEV_TOKEN" => Some("bench-token".to_string()),
        _ => None,
    };
    let (jev, model) = JevScorer::from_env(pruner, &env).map_err(anyhow::Error::msg)?;
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
        let conversation = pruner.conversation(ConversationOptions {
            enabled: true,
            scoring: Some(Scoring::host(jev.clone())),
            jev_model: model.clone(),
            log: Arc::new(CapturedLog::new()),
            ..ConversationOptions::default()
        })?;
        let mut batches = 0;
        let mut times: Vec<u128> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                let result = conversation.turn(request).on_tool_result(ToolResult::prunable("bench", text.clone()));
                batches = result.counts.map_or(0, |c| c.calls as usize);
                start.elapsed().as_millis()
            })
            .collect();
        times.sort_unstable();
        let median = times[RUNS / 2];
        let ideal = batches.div_ceil(4) as u64 * ANSWER_MS;
        println!(
            "| {doc} | {} | {batches} | {ideal} ms | {median} ms | +{} ms |",
            entry["chars"],
            median as i128 - ideal as i128
        );
    }
    Ok(())
}
