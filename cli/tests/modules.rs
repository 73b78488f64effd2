//! The CLI's modules form no cycle (issue 26 §0: the hooks, the installer
//! and the proxy used to import each other), nor do the Rust host crate's:
//! every `crate::a` path in a module's source outside its tests is an edge
//! (`guest/tests/support/module_graph.rs`, shared with the guest's test;
//! doc comments included: a doc that points at a module is a dependency on
//! its shape).

#[path = "../../guest/tests/support/module_graph.rs"]
mod module_graph;

use module_graph::{cycle, graph};
use std::path::Path;

#[test]
fn the_cli_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(graph.contains_key("agents") && graph.contains_key("hook") && graph.contains_key("install"), "{graph:?}");
    assert!(graph["agents"].contains("hook") && graph["agents"].contains("install"), "the adapters use the runtime and the engine");
    if let Some(found) = cycle(&graph) {
        panic!("module cycle: {}", found.join(" -> "));
    }
}

/// Issue 22 §5: the host crate's modules form no cycle either (it had
/// engine → scorer → types → engine, because the bindings lived in
/// `engine`): the generated bindings sit in their own private `wit` module
/// and the plain types in `types`.
#[test]
fn the_host_crate_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hosts/rust/src");
    let graph = graph(&src);
    assert!(graph.contains_key("engine") && graph.contains_key("conversation") && graph.contains_key("wit"), "{graph:?}");
    assert!(graph["types"].contains("wit"), "the plain types come from the bindings: {graph:?}");
    if let Some(found) = cycle(&graph) {
        panic!("module cycle: {}", found.join(" -> "));
    }
}
