//! Loading the component: the contract version check before instantiation,
//! and the disk cache of the compiled component (corrupt, foreign or
//! unwritable caches never stop a load and never give a wrong answer).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolprune::{CacheDir, CapturedLog, ConversationOptions, LoadOptions, Pruner, Scoring, ToolResult};

const TRANSPORTS: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/mcp-spec-2025-11-25-transports.mdx"));
const REQUEST: &str = "How does a client resume a broken Streamable HTTP SSE stream? Which header carries the last event ID?";

/// A fresh, empty directory under the target dir.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn load(component: Option<Vec<u8>>, cache: CacheDir) -> anyhow::Result<Pruner> {
    Pruner::load(LoadOptions { component: component.map(Arc::from), cache, ..LoadOptions::default() })
}

/// Prunes the transports page with the stub: the body and the log line.
fn prune(pruner: &Pruner) -> (String, Vec<String>) {
    let log = Arc::new(CapturedLog::new());
    let conversation = pruner
        .conversation(ConversationOptions {
            enabled: true,
            scoring: Some(Scoring::Stub),
            log: log.clone(),
            ..ConversationOptions::default()
        })
        .unwrap();
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", TRANSPORTS));
    (result.body.to_string(), log.lines())
}

#[test]
fn a_component_of_another_contract_is_refused_naming_both_versions() {
    // wit/since_v0.2.0/ (the frozen 0.2 contract), encoded by the artifacts build.
    let foreign = toolprune_artifacts::contract_0_2_component().to_vec();
    let err = load(Some(foreign), CacheDir::Off).expect_err("0.2.0 is refused");
    let message = format!("{err:#}");
    assert!(
        message.contains("this component implements contract 0.2.0, this host needs 0.3.x (rebuild or reinstall toolprune)"),
        "{message}"
    );
}

#[test]
fn the_built_component_reports_its_version() {
    let pruner = load(None, CacheDir::Off).unwrap();
    assert_eq!(pruner.version(), "0.3.0");
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    found.sort();
    found
}

#[test]
fn the_cache_is_written_once_and_read_back() {
    let dir = scratch("cache-roundtrip");
    let (body, lines) = prune(&load(None, CacheDir::Dir(dir.clone())).unwrap());
    let files = entries(&dir);
    assert_eq!(files.len(), 2, "an entry and its digest: {files:?}");
    assert!(files.iter().any(|f| f.extension().is_some_and(|x| x == "cwasm")));
    assert!(files.iter().any(|f| f.extension().is_some_and(|x| x == "sha256")));
    let written = std::fs::metadata(&files[0]).unwrap().modified().unwrap();
    let again = load(None, CacheDir::Dir(dir.clone())).unwrap();
    assert_eq!(std::fs::metadata(&files[0]).unwrap().modified().unwrap(), written, "a valid entry is not rewritten");
    assert_eq!(prune(&again), (body, lines));
}

#[test]
fn a_corrupt_or_foreign_cache_entry_is_ignored_recompiled_and_rewritten() {
    let dir = scratch("cache-corrupt");
    let expected = prune(&load(None, CacheDir::Dir(dir.clone())).unwrap());
    let entry = entries(&dir).into_iter().find(|f| f.extension().is_some_and(|x| x == "cwasm")).unwrap();
    let digest = entry.with_extension("sha256");
    let good = std::fs::read(&entry).unwrap();

    // Flipped bytes: the digest beside it no longer matches.
    let mut bad = good.clone();
    let middle = bad.len() / 2;
    bad[middle] ^= 0xff;
    std::fs::write(&entry, &bad).unwrap();
    assert_eq!(prune(&load(None, CacheDir::Dir(dir.clone())).unwrap()), expected);
    assert_eq!(std::fs::read(&entry).unwrap(), good, "the entry is rewritten");

    // A foreign entry whose digest matches (written by someone else): not a
    // wasmtime artifact of this engine, so deserialize refuses it.
    let foreign = b"not a compiled component".to_vec();
    std::fs::write(&entry, &foreign).unwrap();
    std::fs::write(&digest, sha256_hex(&foreign)).unwrap();
    assert_eq!(prune(&load(None, CacheDir::Dir(dir.clone())).unwrap()), expected);
    assert_eq!(std::fs::read(&entry).unwrap(), good, "the entry is rewritten");

    // A truncated entry and a missing digest.
    std::fs::write(&entry, &good[..good.len() / 3]).unwrap();
    std::fs::remove_file(&digest).unwrap();
    assert_eq!(prune(&load(None, CacheDir::Dir(dir.clone())).unwrap()), expected);
    assert_eq!(std::fs::read(&entry).unwrap(), good);
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn an_unusable_cache_directory_only_costs_the_compile() {
    let dir = scratch("cache-unusable");
    // A file where the directory should be: nothing can be created under it.
    let file = dir.join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let expected = prune(&load(None, CacheDir::Off).unwrap());
    assert_eq!(prune(&load(None, CacheDir::Dir(file.join("toolprune"))).unwrap()), expected);
}
