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
//!
//! Settings (`toolprune install cursor`): `~/.cursor/hooks.json` (version 1)
//! and `~/.cursor/mcp.json` (project: `.cursor/`).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{has_server, hook_command, hook_edits, plugin_command, plugin_program, read_json, Adapter, HookEntry, NoWayBack, Plugin, Via, PLUGIN_DESCRIPTION, PLUGIN_NAME};
use crate::hook::common::{is_our_omitted, joined_text, replace_text, tool_names, Answer, Hook, Pass, SERVER_NAME};
use crate::install::{Edit, FilePlan, Paths, Scope};

/// The Cursor adapter.
pub struct Cursor;

impl Adapter for Cursor {
    fn label(&self) -> &'static str {
        "cursor"
    }

    fn name(&self) -> &'static str {
        "Cursor"
    }

    /// `{}`; the prompt event needs `{"continue": true}`.
    fn pass(&self, event: Option<&str>) -> &'static str {
        if event == Some("beforeSubmitPrompt") {
            "{\"continue\":true}"
        } else {
            "{}"
        }
    }

    /// `conversation_id` (its `sessionEnd` has `session_id`, the same id).
    fn conversation<'e>(&self, event: &'e Value) -> Option<&'e str> {
        event.get("conversation_id").and_then(Value::as_str).or_else(|| event.get("session_id").and_then(Value::as_str))
    }

    fn handle(&self, hook: &Hook<'_>) -> Answer {
        match hook.name() {
            "beforeSubmitPrompt" => hook.record_request(hook.str("prompt")).map(|()| Some(json!({"continue": true}))),
            "postToolUse" => post_tool_use(hook),
            "sessionEnd" => hook.end_session().map(|()| None),
            _ => Ok(None),
        }
    }

    /// Timeouts in seconds; `postToolUse` has no matcher (the hook decides).
    fn hooks(&self, _prunable: &[String], _via: Via) -> Vec<HookEntry> {
        vec![
            HookEntry { event: "beforeSubmitPrompt", matcher: None, timeout: Some(10) },
            HookEntry { event: "postToolUse", matcher: None, timeout: Some(30) },
            HookEntry { event: "sessionEnd", matcher: None, timeout: Some(10) },
        ]
    }

    fn hook_element(&self, entry: &HookEntry, command: &str) -> Value {
        let mut element = json!({"command": command, "type": "command"});
        if let Some(t) = entry.timeout {
            element["timeout"] = json!(t);
        }
        if let Some(m) = &entry.matcher {
            element["matcher"] = json!(m);
        }
        element
    }

    /// `{"version": 1, "hooks": {…}}`.
    fn hooks_file(&self, entries: &[HookEntry], command: &str) -> Value {
        let mut file = json!({"version": 1, "hooks": {}});
        for entry in entries {
            let list = file["hooks"].as_object_mut().expect("an object").entry(entry.event).or_insert_with(|| json!([]));
            if let Value::Array(items) = list {
                items.push(self.hook_element(entry, command));
            }
        }
        file
    }

    fn plan(&self, scope: Scope, paths: &Paths, prunable: &[String]) -> Result<Vec<FilePlan>, String> {
        let dir = self.mcp_file(scope, paths).0.parent().expect("a folder").to_path_buf();
        let mut edits = vec![Edit::member(&[], "version", json!(1))];
        edits.extend(hook_edits(self, prunable, &hook_command(self, &paths.binary)));
        Ok(vec![
            FilePlan { path: dir.join("hooks.json"), edits },
            FilePlan {
                path: dir.join("mcp.json"),
                edits: vec![Edit::member(&["mcpServers"], SERVER_NAME, self.mcp_server(&paths.binary.to_string_lossy()))],
            },
        ])
    }

    fn mcp_file(&self, scope: Scope, paths: &Paths) -> (PathBuf, &'static str) {
        let base = match scope {
            Scope::User => &paths.home,
            Scope::Project => &paths.project,
        };
        (base.join(".cursor").join("mcp.json"), "mcpServers")
    }

    /// The plugin's hooks come with its own server; the settings' hooks
    /// need `mcpServers.toolprune` in `~/.cursor/mcp.json` or the
    /// workspace's `.cursor/mcp.json` (the model calls `omitted` there, and
    /// the `postToolUse` hook answers it from the store).
    fn omitted_callable(&self, paths: &Paths, via: Via) -> Result<String, NoWayBack> {
        if via == Via::Plugin {
            return Ok("the plugin's own MCP server".into());
        }
        let files = [self.mcp_file(Scope::User, paths).0, self.mcp_file(Scope::Project, paths).0];
        for file in &files {
            if has_server(read_json(file).as_ref().and_then(|m| m.get("mcpServers"))) {
                return Ok(format!("{}: mcpServers.{SERVER_NAME}", file.display()));
            }
        }
        Err(NoWayBack::no_server(self.label(), &format!("{} or {}", files[0].display(), files[1].display())))
    }

    /// `.cursor-plugin/plugin.json`, `hooks/hooks.json` (version 1) and
    /// `mcp.json`, with `${CURSOR_PLUGIN_ROOT}` (cursor.com/docs/reference/plugins;
    /// from the documentation only).
    fn plugin(&self, version: &str, prunable: &[String]) -> Option<Plugin> {
        let root = "${CURSOR_PLUGIN_ROOT}";
        let manifest = json!({
            "name": PLUGIN_NAME,
            "displayName": "toolprune",
            "version": version,
            "description": PLUGIN_DESCRIPTION,
            "author": {"name": "toolprune"},
            "license": "MIT OR Apache-2.0",
            "hooks": "./hooks/hooks.json",
            "mcpServers": "./mcp.json",
        });
        let hooks = self.hooks_file(&self.hooks(prunable, Via::Plugin), &plugin_command(self, root));
        let mcp = json!({"mcpServers": {SERVER_NAME: self.mcp_server(&plugin_program(root))}});
        Some(Plugin { dir: "cursor", files: vec![(".cursor-plugin/plugin.json", manifest), ("hooks/hooks.json", hooks), ("mcp.json", mcp)] })
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
    // The bare name first (the log label), then `MCP:TOOL` as Cursor sent
    // it: never prunable under either wins (SPEC §2).
    let bare = tool.strip_prefix("MCP:").unwrap_or(tool);
    let mut names = tool_names(bare, None);
    if bare != tool {
        names.push(tool.to_string());
    }
    let pruned = hook.prune(&names, text, &|| None)?;
    let mut result = output.clone();
    result["content"] = Value::Array(replace_text(blocks, &pruned.body));
    Ok(Some(replacement(result)))
}
