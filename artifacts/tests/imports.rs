//! The component's boundary, read from its binary: its only import is the
//! host's scorer (`toolprune:pruner/scorer@0.3.0`: no WASI, no other
//! callback; contract 0.3), and it exports the six interfaces of `wit/` at
//! version 0.3.0. What `wasm-tools component wit dist/toolprune.wasm` shows.

use std::collections::BTreeSet;
use wasmparser::{Parser, Payload};

/// Names of the component's own (top-level) imports and exports; those of
/// the core modules and components nested inside it are skipped.
fn boundary() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut imports = BTreeSet::new();
    let mut exports = BTreeSet::new();
    // Every module or component, the outer one included, opens with
    // `Version` and closes with `End`.
    let mut depth = 0;
    for payload in Parser::new(0).parse_all(toolprune_artifacts::component()) {
        match payload.expect("the component parses") {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth -= 1,
            Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    imports.insert(import.expect("an import parses").name.full_name().into_owned());
                }
            }
            Payload::ComponentExportSection(section) if depth == 1 => {
                for export in section {
                    exports.insert(export.expect("an export parses").name.full_name().into_owned());
                }
            }
            _ => {}
        }
    }
    (imports, exports)
}

#[test]
fn imports_only_the_scorer() {
    let (imports, _) = boundary();
    assert_eq!(imports, BTreeSet::from(["toolprune:pruner/scorer@0.3.0".to_string()]));
}

#[test]
fn exports_the_six_interfaces_of_contract_0_3() {
    let (_, exports) = boundary();
    assert_eq!(
        exports,
        BTreeSet::from([
            "toolprune:pruner/types@0.3.0".to_string(),
            "toolprune:pruner/settings@0.3.0".to_string(),
            "toolprune:pruner/pruner@0.3.0".to_string(),
            "toolprune:pruner/omitted@0.3.0".to_string(),
            "toolprune:pruner/judge@0.3.0".to_string(),
            "toolprune:pruner/report@0.3.0".to_string(),
        ])
    );
}

/// The component stays under its size budget (issue 22 §6: 512 KB, with a
/// maintained TOML parser inside). `scripts/package` prints the size.
#[test]
fn the_component_fits_its_512_kb_budget() {
    let size = toolprune_artifacts::component().len();
    assert!(size <= 512 * 1024, "the component is {size} bytes, over 512 KiB");
}

#[test]
fn component_path_holds_the_component() {
    let on_disk = std::fs::read(toolprune_artifacts::COMPONENT_PATH).expect("COMPONENT_PATH exists");
    assert!(on_disk == toolprune_artifacts::component(), "COMPONENT_PATH differs from component()");
}
