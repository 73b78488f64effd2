//! The README's agent loops are the example files the hosts' suites run
//! (`examples/agent-loop/`, between `README:begin` and `README:end`): what a
//! new user copies is what was tested.

fn repo(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn region(source: &str, comment: &str) -> String {
    let begin = format!("{comment} README:begin\n");
    let end = format!("{comment} README:end");
    let start = source.find(&begin).expect("a README:begin line") + begin.len();
    let stop = source[start..].find(&end).expect("a README:end line") + start;
    source[start..stop].to_string()
}

#[test]
fn the_readme_shows_the_tested_agent_loops_verbatim() {
    let readme = repo("README.md");
    for (file, comment, fence) in [
        ("examples/agent-loop/agent_loop.mjs", "//", "```js\n"),
        ("examples/agent-loop/agent_loop.py", "#", "```python\n"),
    ] {
        let block = format!("{fence}{}```", region(&repo(file), comment));
        assert!(readme.contains(&block), "README's block differs from {file}'s README region");
    }
}
