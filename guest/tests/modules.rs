//! The guest's modules form no cycle (issue 22 §5: ten of them used to form
//! one, through `component.rs`, because the rules took the generated WIT
//! types from there and `component.rs` called back into the rules). Every
//! `crate::a` path in a module's source outside its `#[cfg(test)] mod tests`
//! — in `use crate::a::…;`, in `use crate::{a, b::…};`, in an expression,
//! in a doc link — is an edge from its top-level module to `a` (the rule of
//! `cli/tests/modules.rs` and of `../shared/hooks/rust_cycles.py`, plus
//! `use crate::{…}` groups). A module's name written in prose is no edge.
//! Tests may reach anywhere. Only `component` names the generated bindings,
//! and nothing names `component`.

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

/// The top-level module a source file belongs to (`None`: lib.rs).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib").then_some(name)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
}

/// The top-level modules `text` names through `crate::NAME` or a
/// `crate::{NAME, …}` group (the group's first level only).
fn references(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            // The items at the group's first level, split at its commas.
            let (mut depth, mut item, mut items) = (0usize, String::new(), Vec::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            items.push(item);
            for item in items {
                let name: String = item.trim_start().chars().take_while(|&c| is_name_char(c)).collect();
                if !name.is_empty() && name != "self" {
                    out.insert(name);
                }
            }
            continue;
        }
        let name: String = rest.chars().take_while(|&c| is_name_char(c)).collect();
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
