//! Writes the toolprune component to `dist/toolprune.wasm` (or to the path
//! given as the only argument) and prints its size and SHA-256. Beside it,
//! `contract-0.2.0.wasm`: a component of another contract version, for the
//! hosts' version-check tests (`toolprune_artifacts::contract_0_2_component`).
//!
//! ```text
//! cargo run -p toolprune-artifacts --bin toolprune-dist [-- OUT]
//! ```

use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let out = match std::env::args_os().nth(1) {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/toolprune.wasm"),
    };
    let component = toolprune_artifacts::component();
    let written = out
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&out, component));
    if let Err(e) = written {
        eprintln!("toolprune-dist: writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let foreign = out.with_file_name("contract-0.2.0.wasm");
    if let Err(e) = std::fs::write(&foreign, toolprune_artifacts::contract_0_2_component()) {
        eprintln!("toolprune-dist: writing {}: {e}", foreign.display());
        return ExitCode::FAILURE;
    }
    let sha256: String = Sha256::digest(component)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // The build script's digest, of the very bytes embedded.
    debug_assert_eq!(sha256, toolprune_artifacts::COMPONENT_SHA256);
    let out = out.canonicalize().unwrap_or(out);
    println!("{}", out.display());
    println!("size   {} bytes ({:.1} KiB)", component.len(), component.len() as f64 / 1024.0);
    println!("sha256 {sha256}");
    println!("origin {}", toolprune_artifacts::COMPONENT_ORIGIN);
    ExitCode::SUCCESS
}
