//! The conformance suite (`tests/conformance/README.md`) through the Rust
//! host: every scenario but the CLI ones (`cli/tests/conformance.rs`), its
//! hand-written expectations, and the generated `expected/` file (stale →
//! fails; `TOOLPRUNE_CONFORMANCE_WRITE=1` rewrites it).

use toolprune_tests::conformance::{run_all, Runner};

#[test]
fn every_scenario_matches_its_expected_results_byte_for_byte() {
    let write = std::env::var_os("TOOLPRUNE_CONFORMANCE_WRITE").is_some();
    let runner = Runner { cli: None, slow: write || std::env::var_os("TOOLPRUNE_SLOW").is_some() };
    let (failures, skips) = run_all(&runner, |_| true);
    for skip in &skips {
        eprintln!("skipped {skip}");
    }
    assert!(failures.is_empty(), "{} scenario(s) failed:\n{}", failures.len(), failures.join("\n"));
}
