//! Cursor, from its documentation only (tests/fixtures/hooks/cursor/,
//! FACTS-gemini-cursor.md §2): not tested end to end — Cursor's agent
//! cannot be run offline against a scripted model.
//!
//! - `beforeSubmitPrompt` → record `prompt`; answer `{"continue": true}`.
//! - `postToolUse` of toolprune's `omitted` → the hook knows the
//!   conversation (`conversation_id`), so it answers the call from the store
//!   itself: `updated_mcp_tool_output` = `{"content": [{"type": "text",
//!   "text": <answer>}]}` (the MCP server, which cannot know the session,
//!   answered `not_found`).
//! - `postToolUse` of a prunable MCP tool → `tool_output` is the MCP result
//!   as a JSON string; its text blocks are pruned as one text and replaced
//!   by `updated_mcp_tool_output` (the result with its `content` replaced;
//!   non-text blocks in place). `isError` results are never pruned.
//! - `sessionEnd` → drop the session's records (keep the counter).
//! - Anything else, and every failure: `{}` (or `{"continue": true}`).
//!
//! Tool names: an MCP tool may arrive as `MCP:<tool>` (the documented
//! matcher form); the globs are tried on the name as given and without the
//! `MCP:` prefix.

use std::sync::Arc;

use serde_json::{json, Value};

use super::common::{is_our_omitted, joined_text, replace_text, Answer, Hook, Pass};

/// The Cursor adapter.
pub fn handle(hook: &Hook<'_>) -> Answer {
    match hook.name() {
        "beforeSubmitPrompt" => hook.record_request(hook.str("prompt")).map(|()| Some(json!({"continue": true}))),
        "postToolUse" => post_tool_use(hook),
        "sessionEnd" => hook.end_session().map(|()| None),
        _ => Ok(None),
    }
}

/// A JSON value that may arrive as a JSON string holding it.
fn decoded(value: Option<&Value>) -> Option<Value> {
    match value? {
        Value::String(s) => serde_json::from_str(s).ok(),
        other => Some(other.clone()),
    }
}

fn replacement(result: Value) -> Value {
    json!({"updated_mcp_tool_output": result})
}

fn post_tool_use(hook: &Hook<'_>) -> Answer {
    let tool = hook.str("tool_name").unwrap_or("");
    if is_our_omitted(tool) {
        let arguments = decoded(hook.event.get("tool_input")).filter(Value::is_object).unwrap_or_else(|| json!({}));
        let session = hook.session()?;
        let text = hook.omitted(Some(Arc::new(session)), &arguments.to_string())?;
        return Ok(Some(replacement(json!({"content": [{"type": "text", "text": text}]}))));
    }
    let output = decoded(hook.event.get("tool_output")).ok_or_else(|| Pass::new("shape"))?;
    let Some(blocks) = output.get("content").and_then(Value::as_array) else { return Err(Pass::new("shape")) };
    if output.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(Pass::new("tool_failed"));
    }
    let text = joined_text(blocks).ok_or_else(|| Pass::new("no_text"))?;
    let bare = tool.strip_prefix("MCP:").unwrap_or(tool);
    let name = if !hook.prunable(tool)? && hook.prunable(bare)? { bare } else { tool };
    let pruned = hook.prune(name, text, &|| None)?;
    let mut result = output.clone();
    result["content"] = Value::Array(replace_text(blocks, &pruned.body));
    Ok(Some(replacement(result)))
}
