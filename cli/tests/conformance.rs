//! The conformance suite's CLI scenarios (`tests/conformance/README.md`,
//! `requires: ["cli"]`) through this crate's `toolprune` binary.

use toolprune_tests::conformance::{run_all, Runner};

#[test]
fn every_cli_scenario_matches_its_expected_results_byte_for_byte() {
    let runner = Runner { cli: Some(env!("CARGO_BIN_EXE_toolprune").into()), slow: false };
    let needs_cli = |scenario: &serde_json::Value| {
        scenario["steps"].as_array().into_iter().flatten().any(|s| s.get("cli").is_some())
    };
    let (failures, skips) = run_all(&runner, needs_cli);
    for skip in &skips {
        eprintln!("skipped {skip}");
    }
    assert!(failures.is_empty(), "{} scenario(s) failed:\n{}", failures.len(), failures.join("\n"));
}
