//! The guest's modules form no cycle (issue 22 §5: ten of them used to form
//! one, through `component.rs`, because the rules took the generated WIT
//! types from there and `component.rs` called back into the rules). Every
//! `crate::a` path is an edge (`support/module_graph.rs`, shared with
//! `cli/tests/modules.rs`). Only `component` names the generated bindings,
//! and nothing names `component`.

#[path = "support/module_graph.rs"]
mod module_graph;

use module_graph::{cycle, graph, references, sources};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn guest_graph() -> BTreeMap<String, BTreeSet<String>> {
    graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_guest_modules_form_no_cycle() {
    let graph = guest_graph();
    assert!(graph.contains_key("component") && graph.contains_key("prune") && graph.contains_key("judge"), "{graph:?}");
    assert!(graph["component"].contains("prune") && graph["prune"].contains("types"), "the edges are read: {graph:?}");
    if let Some(found) = cycle(&graph) {
        panic!("module cycle: {}", found.join(" -> "));
    }
}

#[test]
fn only_the_component_names_the_bindings_and_nothing_names_the_component() {
    let graph = guest_graph();
    let users: Vec<&String> = graph.iter().filter(|(_, to)| to.contains("component")).map(|(from, _)| from).collect();
    assert!(users.is_empty(), "modules that reach into the bindings' module: {users:?}");
    assert!(graph["types"].is_empty(), "the plain types depend on no module: {:?}", graph["types"]);
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    for file in files.iter().filter(|f| !f.ends_with("component.rs")) {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains("wit_bindgen"), "{} uses wit_bindgen", file.display());
    }
}

#[test]
fn the_cycle_finder_finds_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .iter()
        .fold(BTreeMap::new(), |mut g, (from, to)| {
            g.entry(from.to_string()).or_insert_with(BTreeSet::new).insert(to.to_string());
            g
        });
    assert_eq!(cycle(&graph), Some(vec!["a".to_string(), "b".to_string(), "c".to_string(), "a".to_string()]));
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        references("use crate::hook::common::X; // see crate::install\nnotcrate::x\n#[cfg(test)]\nmod tests { crate::agents }"),
        names(&["hook", "install"])
    );
    assert_eq!(
        references("use crate::{basis, batch::{self, X}, gates, jev};\nuse crate::{self as c, types::Lang};\n"),
        names(&["basis", "batch", "gates", "jev", "types"])
    );
}
