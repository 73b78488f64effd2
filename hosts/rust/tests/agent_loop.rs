//! The README's Rust agent loop (`hosts/rust/examples/agent_loop.rs`) with a
//! scripted model: the tool list is static and holds `omitted` in the
//! Anthropic shape, a fetched page comes back pruned with its marker and
//! verbatim kept text, and the model's `omitted` call gets the dropped
//! paragraphs verbatim.

#[path = "../examples/agent_loop.rs"]
#[allow(dead_code)]
mod agent_loop;

use serde_json::{json, Value};

const REQUEST: &str = "In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server messages? Also, when does the client have to send the MCP-Protocol-Version header?";

fn page() -> String {
    let dir = std::env::var("TOOLPRUNE_SHARED").map(std::path::PathBuf::from).unwrap_or_else(|_| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
    });
    std::fs::read_to_string(dir.join("corpus/mcp-spec-2025-11-25-transports.mdx")).expect("the shared corpus beside the repository")
}

/// `[… paragraphs A–B omitted` → (A, B) of the first run marker.
fn first_run(body: &str) -> (u32, u32) {
    let at = body.find("[… paragraph").expect("a run marker");
    let rest = &body[at..];
    let numbers: Vec<u32> = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| s.parse().unwrap())
        .collect();
    if rest.starts_with("[… paragraphs ") { (numbers[0], numbers[1]) } else { (numbers[0], numbers[0]) }
}

#[test]
fn the_readme_agent_loop_prunes_a_page_and_answers_omitted_verbatim() {
    let page = page();
    let (conversation, tools) = agent_loop::start().unwrap();
    assert_eq!(tools.len(), 2, "the tool list is static: fetch and omitted");
    assert_eq!(tools[1]["name"], "omitted");
    assert!(tools[1]["input_schema"].is_object(), "the Anthropic shape, no conversion by hand");

    let mut seen: Vec<Value> = Vec::new();
    let mut step = 0;
    let mut model = |messages: &[Value], _tools: &[Value]| {
        step += 1;
        seen.push(messages.last().cloned().unwrap());
        match step {
            1 => json!({"content": [{"type": "tool_use", "id": "t1", "name": "fetch", "input": {"url": "x"}}]}),
            2 => {
                let body = messages.last().unwrap()["content"][0]["content"].as_str().unwrap().to_string();
                let (from, to) = first_run(&body);
                json!({"content": [{"type": "tool_use", "id": "t2", "name": "omitted", "input": {"id": "P1", "from": from, "to": to}}]})
            }
            _ => json!({"content": [{"type": "text", "text": "done"}]}),
        }
    };
    let mut messages = Vec::new();
    let reply = agent_loop::chat(&conversation, &tools, REQUEST, &mut messages, &mut model, &mut |_| page.clone());
    assert_eq!(reply["content"][0]["text"], "done");

    let body = seen[1]["content"][0]["content"].as_str().unwrap();
    assert!(body.starts_with("[Omitted by relevance: "), "the page came back pruned");
    assert!(body.len() < page.len());
    let read_back = seen[2]["content"][0]["content"].as_str().unwrap();
    assert!(!read_back.is_empty() && page.contains(read_back.trim_end()), "omitted gives dropped text verbatim");
    assert!(!body.contains(read_back.trim()), "…text the model did not have");
}
