//! A whole agent loop with toolprune (README "Use it in your own agent"):
//! one conversation per chat, a static tool list with `omitted` in it, every
//! tool result through the turn, every `omitted` call answered by the
//! conversation. Messages are in the Anthropic Messages shape as
//! `serde_json::Value`s; any SDK works the same way. `call_model` and
//! `run_tool` are yours; `hosts/rust/tests/agent_loop.rs` drives [`chat`]
//! with a scripted model, and `main` runs it on a page of the shared corpus.

use serde_json::{json, Value};
use toolprune::types::Dialect;
use toolprune::{Conversation, ConversationOptions, Pruner, ToolResult};

// README:begin
pub fn start() -> anyhow::Result<(Conversation, Vec<Value>)> {
    let pruner = Pruner::shared()?; // scores offline; for Jev: toolprune::JevScorer
    let conversation = pruner.conversation(ConversationOptions { enabled: true, ..Default::default() })?;
    let fetch = json!({"name": "fetch", "description": "Fetch a web page as markdown.",
        "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}});
    let tools = vec![fetch, conversation.omitted_tool(Dialect::Anthropic, None)?]; // static
    Ok((conversation, tools))
}

pub fn chat(conversation: &Conversation, tools: &[Value], user: &str, messages: &mut Vec<Value>,
            call_model: &mut dyn FnMut(&[Value], &[Value]) -> Value, run_tool: &mut dyn FnMut(&Value) -> String) -> Value {
    let omitted = tools.last().and_then(|t| t["name"].as_str()).unwrap_or("omitted").to_string();
    let turn = conversation.turn(user); // the basis: the user's own words
    messages.push(json!({"role": "user", "content": user}));
    loop {
        let reply = call_model(messages, tools);
        messages.push(json!({"role": "assistant", "content": reply["content"]}));
        let calls: Vec<&Value> = reply["content"].as_array().into_iter().flatten().filter(|b| b["type"] == "tool_use").collect();
        if calls.is_empty() {
            return reply;
        }
        let results: Vec<Value> = calls.iter().map(|call| {
            let text = if call["name"] == omitted.as_str() {
                conversation.omitted(&call["input"].to_string()).text // every outcome's text goes back
            } else {
                let result = ToolResult { prunable: call["name"] == "fetch", arguments: Some(call["input"].to_string()), // a repeat passes whole
                                          ..ToolResult::new(call["name"].as_str().unwrap_or(""), run_tool(call)) };
                turn.on_tool_result(result).body.to_string()
            };
            json!({"type": "tool_result", "tool_use_id": call["id"], "content": text})
        }).collect();
        messages.push(json!({"role": "user", "content": results}));
    }
}
// README:end

/// Runs [`chat`] once on the MCP transports page with a scripted model that
/// fetches, reads back the first omitted run, and answers.
#[allow(dead_code)]
fn main() -> anyhow::Result<()> {
    let page = std::fs::read_to_string("../shared/corpus/mcp-spec-2025-11-25-transports.mdx")?;
    let (conversation, tools) = start()?;
    let mut step = 0;
    let mut model = |messages: &[Value], _tools: &[Value]| {
        step += 1;
        match step {
            1 => json!({"content": [{"type": "tool_use", "id": "t1", "name": "fetch", "input": {"url": "https://example.org/transports"}}]}),
            2 => {
                let result = messages.last().map(|m| m["content"][0]["content"].as_str().unwrap_or("").to_string()).unwrap_or_default();
                println!("--- the tool result the model read ({} characters) ---\n{}", result.chars().count(), &result[..result.len().min(600)]);
                json!({"content": [{"type": "tool_use", "id": "t2", "name": "omitted", "input": {"id": "P1", "from": 0, "to": 3}}]})
            }
            _ => json!({"content": [{"type": "text", "text": "done"}]}),
        }
    };
    let mut messages = Vec::new();
    let request = "In the MCP Streamable HTTP transport, how does a client resume a dropped SSE stream without losing server messages?";
    chat(&conversation, &tools, request, &mut messages, &mut model, &mut |_call| page.clone());
    println!("--- omitted answered ---\n{}", messages[messages.len() - 2]["content"][0]["content"]);
    Ok(())
}
