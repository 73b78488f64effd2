//! The CLI's modules form no cycle (issue 26 §0: the hooks, the installer
//! and the proxy used to import each other): every `crate::a::…` path in a
//! module's source outside its `#[cfg(test)] mod tests` is an edge from its
//! top-level module to `a` (the rule of `../shared/hooks/rust_cycles.py`,
//! doc comments included: a doc that points at a module is a dependency on
//! its shape). Tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`None`: lib.rs, main.rs).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// The top-level modules `text` names through `crate::NAME`.
fn references(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[at + 7..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// The module graph of the source folder `src`: top-level module → the
/// top-level modules it references.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in &files {
        let Some(from) = top_module(src, file) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for to in references(&text) {
            if to != from && modules.contains(&to) {
                graph.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    graph
}

/// One cycle of `graph`, as the modules on it (the first repeated last).
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(node: &str, graph: &BTreeMap<String, BTreeSet<String>>, stack: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut found = stack[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, stack, done) {
                return Some(found);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

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

#[test]
fn the_cycle_finder_finds_one() {
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .iter()
        .fold(BTreeMap::new(), |mut g, (from, to)| {
            g.entry(from.to_string()).or_insert_with(BTreeSet::new).insert(to.to_string());
            g
        });
    assert_eq!(cycle(&graph), Some(vec!["a".to_string(), "b".to_string(), "c".to_string(), "a".to_string()]));
    assert_eq!(references("use crate::hook::common::X; // see crate::install\nnotcrate::x\n#[cfg(test)]\nmod tests { crate::agents }"), ["hook", "install"].iter().map(|s| s.to_string()).collect());
}
