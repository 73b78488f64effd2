//! Claude Code (tests/e2e/FACTS.md, Claude Code 2.1.332).
//!
//! - `UserPromptSubmit` → record `prompt`; print nothing (stdout would be
//!   added to the model's context).
//! - `PreToolUse` of `mcp__toolprune__omitted` → `updatedInput` = the
//!   model's arguments + `session` (the store's token), and
//!   `permissionDecision: "allow"` (also grants the tool in `-p` mode). The
//!   model's own `tool_use` block keeps the arguments it wrote.
//! - `PostToolUse` of a prunable tool → `tool_response` is the MCP content
//!   list: its text blocks are pruned as one text and replaced by
//!   `updatedMCPToolOutput` (non-text blocks stay in place). A built-in
//!   tool's object with a string `result` (WebFetch) is answered with
//!   `updatedToolOutput` in its own shape. Error results are never pruned.
//! - `SessionEnd` → drop the session's records (keep the counter).
//! - Anything else, and every failure: print nothing (no change).

use serde_json::{json, Map, Value};

use super::common::{is_our_omitted, joined_text, replace_text, Answer, Hook, Pass};

/// The Claude Code adapter.
pub fn handle(hook: &Hook<'_>) -> Answer {
    match hook.name() {
        "UserPromptSubmit" => hook.record_request(hook.str("prompt")).map(|()| None),
        "PreToolUse" => pre_tool_use(hook),
        "PostToolUse" => post_tool_use(hook),
        "SessionEnd" => hook.end_session().map(|()| None),
        _ => Ok(None),
    }
}

fn pre_tool_use(hook: &Hook<'_>) -> Answer {
    let tool = hook.str("tool_name").unwrap_or("");
    if !is_our_omitted(tool) {
        return Ok(None);
    }
    let mut input = hook.event.get("tool_input").and_then(Value::as_object).cloned().unwrap_or_default();
    input.remove("body");
    input.insert("session".to_string(), Value::String(hook.token()?));
    Ok(Some(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": input,
        }
    })))
}

/// Whether the response says the call failed (never pruned).
fn failed(event: &Value) -> bool {
    let flag = |v: &Value| ["is_error", "isError"].iter().any(|k| v.get(*k).and_then(Value::as_bool) == Some(true));
    flag(event) || flag(&event["tool_response"]) || event.get("error").is_some_and(|e| !e.is_null())
}

fn post_tool_use(hook: &Hook<'_>) -> Answer {
    let tool = hook.str("tool_name").unwrap_or("");
    if is_our_omitted(tool) {
        return Ok(None);
    }
    if failed(hook.event) {
        return Err(Pass::new("tool_failed"));
    }
    let transcript = || hook.str("transcript_path").and_then(last_user_text);
    match &hook.event["tool_response"] {
        Value::Array(blocks) => {
            let text = joined_text(blocks).ok_or_else(|| Pass::new("no_text"))?;
            let pruned = hook.prune(tool, text, &transcript)?;
            Ok(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PostToolUse",
                    "updatedMCPToolOutput": replace_text(blocks, &pruned.body),
                }
            })))
        }
        Value::Object(object) if object.get("result").is_some_and(Value::is_string) => {
            let text = object["result"].as_str().unwrap_or_default().to_string();
            let pruned = hook.prune(tool, text, &transcript)?;
            let mut output: Map<String, Value> = object.clone();
            output.insert("result".to_string(), Value::String(pruned.body));
            Ok(Some(json!({
                "hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": output}
            })))
        }
        _ => Err(Pass::new("shape")),
    }
}

/// The last user message with text in a Claude Code transcript (JSON lines
/// `{"type": "user", "message": {"role": "user", "content": …}}`), skipping
/// meta lines and messages that only carry tool results: the request when
/// the prompt hook did not record one (installed mid-session).
pub fn last_user_text(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().rev().find_map(|line| {
        let entry: Value = serde_json::from_str(line).ok()?;
        if entry.get("type").and_then(Value::as_str) != Some("user") || entry.get("isMeta").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let message = entry.get("message")?;
        if message.get("role").and_then(Value::as_str) != Some("user") {
            return None;
        }
        match message.get("content")? {
            Value::String(s) => Some(s.clone()),
            Value::Array(blocks) => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n\n"))
            }
            _ => None,
        }
    })
}
