//! The component's boundary, read from its binary: it imports nothing at all
//! (no scorer callback, no WASI: contract 0.2), and exports the five
//! interfaces of `wit/` at version 0.2.0.

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
fn imports_nothing() {
    let (imports, _) = boundary();
    assert!(imports.is_empty(), "imports: {imports:?}");
}

#[test]
fn exports_the_five_interfaces_of_contract_0_2() {
    let (_, exports) = boundary();
    assert_eq!(
        exports,
        BTreeSet::from([
            "toolprune:pruner/types@0.2.0".to_string(),
            "toolprune:pruner/settings@0.2.0".to_string(),
            "toolprune:pruner/pruner@0.2.0".to_string(),
            "toolprune:pruner/omitted@0.2.0".to_string(),
            "toolprune:pruner/judge@0.2.0".to_string(),
        ])
    );
}

#[test]
fn component_path_holds_the_component() {
    let on_disk = std::fs::read(toolprune_artifacts::COMPONENT_PATH).expect("COMPONENT_PATH exists");
    assert!(on_disk == toolprune_artifacts::component(), "COMPONENT_PATH differs from component()");
}
