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

/// How much of a transcript's end [`last_user_text`] reads: 8 MiB.
pub const TRANSCRIPT_TAIL: u64 = 8 << 20;

/// The last user message with text in a Claude Code transcript (JSON lines
/// `{"type": "user", "message": {"role": "user", "content": …}}`), skipping
/// meta lines and messages that only carry tool results: the request when
/// the prompt hook did not record one (installed mid-session). Only a
/// regular file is read (a FIFO or a device would block or never end), and
/// only its last [`TRANSCRIPT_TAIL`] bytes: the last user message is near
/// the end, and a hook's memory stays bounded whatever the file's size.
pub fn last_user_text(path: &str) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    // Checked before opening: opening a FIFO blocks until a writer comes.
    let len = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
    let mut file = std::fs::File::open(path).ok()?;
    let start = len.saturating_sub(TRANSCRIPT_TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(TRANSCRIPT_TAIL).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    // A tail that starts mid-line drops that partial line.
    let text = if start > 0 { text.split_once('\n').map_or("", |(_, rest)| rest) } else { &text };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user_line(text: &str) -> String {
        serde_json::json!({"type": "user", "message": {"role": "user", "content": text}}).to_string() + "\n"
    }

    #[test]
    fn a_transcript_is_read_from_its_tail_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        // An old message beyond the tail, then filler longer than the tail, then the last one.
        let filler = format!("{{\"type\":\"assistant\",\"pad\":\"{}\"}}\n", "x".repeat(TRANSCRIPT_TAIL as usize));
        std::fs::write(&path, user_line("old") + &filler + &user_line("the last request")).unwrap();
        assert_eq!(last_user_text(path.to_str().unwrap()).as_deref(), Some("the last request"));
        std::fs::write(&path, user_line("old") + &filler).unwrap();
        assert_eq!(last_user_text(path.to_str().unwrap()), None, "a message before the tail is not searched for");
    }

    #[test]
    fn a_transcript_that_is_not_a_regular_file_is_not_read() {
        assert_eq!(last_user_text("/dev/zero"), None, "a device never ends");
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(last_user_text(dir.path().to_str().unwrap()), None, "a folder");
        let fifo = dir.path().join("fifo");
        if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            assert_eq!(last_user_text(fifo.to_str().unwrap()), None, "a FIFO would block");
        }
    }
}
