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
//!
//! Settings (`toolprune install claude-code`): the hooks in
//! `~/.claude/settings.json` (project: `.claude/settings.json`) with
//! `permissions.allow` += the tool; the MCP server in `~/.claude.json`
//! (project: `.mcp.json`).

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::{has_server, hook_command, hook_edits, plugin_command, plugin_program, read_json, Adapter, HookEntry, NoWayBack, Plugin, Via, PLUGIN_DESCRIPTION, PLUGIN_NAME};
use crate::hook::common::{is_our_omitted, joined_text, replace_text, tool_names, Answer, Hook, Pass};
use crate::install::{matcher, Edit, FilePlan, Paths, Scope, SERVER_NAME};

/// Claude Code's name of toolprune's tool (`mcp__<server>__<tool>`) from
/// the settings' server.
pub fn omitted_tool() -> String {
    format!("mcp__{SERVER_NAME}__omitted")
}

/// The plugin's server is keyed `plugin:<plugin>:<server>`, its tools named
/// `mcp__plugin_<plugin>_<server>__<tool>` (Claude Code 2.1.332).
pub fn plugin_omitted_tool() -> String {
    format!("mcp__plugin_{PLUGIN_NAME}_{SERVER_NAME}__omitted")
}

/// `${CLAUDE_PLUGIN_ROOT}`: Claude Code puts the installed plugin's folder
/// there in hook commands and MCP server entries.
const ROOT: &str = "${CLAUDE_PLUGIN_ROOT}";

/// The Claude Code adapter.
pub struct ClaudeCode;

impl Adapter for ClaudeCode {
    fn label(&self) -> &'static str {
        "claude-code"
    }

    fn name(&self) -> &'static str {
        "Claude Code"
    }

    /// No output is no change (a prompt hook's stdout would be added to the
    /// model's context).
    fn pass(&self, _event: Option<&str>) -> &'static str {
        ""
    }

    fn handle(&self, hook: &Hook<'_>) -> Answer {
        match hook.name() {
            "UserPromptSubmit" => hook.record_request(hook.str("prompt")).map(|()| None),
            "PreToolUse" => pre_tool_use(hook),
            "PostToolUse" => post_tool_use(hook),
            "SessionEnd" => hook.end_session().map(|()| None),
            _ => Ok(None),
        }
    }

    fn omitted_tool(&self, via: Via) -> String {
        match via {
            Via::Settings => omitted_tool(),
            Via::Plugin => plugin_omitted_tool(),
        }
    }

    /// Timeouts in seconds (the prompt and pre-tool hooks: Claude Code's default).
    fn hooks(&self, prunable: &[String], via: Via) -> Vec<HookEntry> {
        vec![
            HookEntry { event: "UserPromptSubmit", matcher: None, timeout: None },
            HookEntry { event: "PreToolUse", matcher: Some(self.omitted_tool(via)), timeout: None },
            HookEntry { event: "PostToolUse", matcher: Some(matcher(prunable, &[])), timeout: Some(30) },
            HookEntry { event: "SessionEnd", matcher: None, timeout: Some(10) },
        ]
    }

    fn hook_element(&self, entry: &HookEntry, command: &str) -> Value {
        let mut hook = json!({"type": "command", "command": command});
        if let Some(t) = entry.timeout {
            hook["timeout"] = json!(t);
        }
        let mut element = json!({"hooks": [hook]});
        if let Some(m) = &entry.matcher {
            element["matcher"] = json!(m);
        }
        element
    }

    fn mcp_server(&self, program: &str) -> Value {
        json!({"type": "stdio", "command": program, "args": ["mcp"]})
    }

    fn plan(&self, scope: Scope, paths: &Paths, prunable: &[String]) -> Result<Vec<FilePlan>, String> {
        let base = match scope {
            Scope::User => paths.home.clone(),
            Scope::Project => paths.project.clone(),
        };
        let mut edits = hook_edits(self, prunable, &hook_command(self, &paths.binary));
        edits.push(Edit::append(&["permissions", "allow"], json!(omitted_tool())));
        let settings = FilePlan { path: base.join(".claude").join("settings.json"), edits };
        let server = self.mcp_server(&paths.binary.to_string_lossy());
        let mcp = FilePlan { path: self.mcp_file(scope, paths).0, edits: vec![Edit::member(&["mcpServers"], SERVER_NAME, server)] };
        Ok(vec![settings, mcp])
    }

    fn mcp_file(&self, scope: Scope, paths: &Paths) -> (PathBuf, &'static str) {
        match scope {
            Scope::User => (paths.home.join(".claude.json"), "mcpServers"),
            Scope::Project => (paths.project.join(".mcp.json"), "mcpServers"),
        }
    }

    /// `.claude-plugin/plugin.json`, `hooks/hooks.json` and `.mcp.json` (the
    /// files Claude Code finds by default). No `permissions.allow`: a plugin
    /// cannot grant a tool; the `PreToolUse` answer allows each `omitted` call.
    fn plugin(&self, version: &str, prunable: &[String]) -> Option<Plugin> {
        let manifest = json!({
            "name": PLUGIN_NAME,
            "version": version,
            "description": PLUGIN_DESCRIPTION,
            "author": {"name": "toolprune"},
            "license": "MIT OR Apache-2.0",
            "keywords": ["mcp", "context", "tool-results", "pruning"],
        });
        let hooks = self.hooks_file(&self.hooks(prunable, Via::Plugin), &plugin_command(self, ROOT));
        let mcp = json!({"mcpServers": {SERVER_NAME: self.mcp_server(&plugin_program(ROOT))}});
        Some(Plugin { dir: "claude-code", files: vec![(".claude-plugin/plugin.json", manifest), ("hooks/hooks.json", hooks), (".mcp.json", mcp)] })
    }

    /// The plugin's hooks come with its own server. The settings' hooks
    /// need toolprune's server where Claude Code reads MCP servers: the
    /// user's `~/.claude.json` (`mcpServers`, or `projects.<folder>.mcpServers`
    /// for the project or a folder above it: local scope), a `.mcp.json` in
    /// the project or a folder above it (not refused in
    /// `disabledMcpjsonServers`), or an enabled toolprune plugin.
    fn omitted_callable(&self, paths: &Paths, via: Via) -> Result<String, NoWayBack> {
        if via == Via::Plugin {
            return Ok("the plugin's own MCP server".into());
        }
        let user_file = paths.home.join(".claude.json");
        let user = read_json(&user_file).unwrap_or(Value::Null);
        if has_server(user.get("mcpServers")) {
            return Ok(format!("{}: mcpServers.{SERVER_NAME}", user_file.display()));
        }
        for dir in paths.project.ancestors() {
            let local = user.get("projects").and_then(|p| p.get(dir.to_string_lossy().as_ref()));
            if has_server(local.and_then(|l| l.get("mcpServers"))) {
                return Ok(format!("{}: the local server of {}", user_file.display(), dir.display()));
            }
            let refused = local
                .and_then(|l| l.get("disabledMcpjsonServers"))
                .and_then(Value::as_array)
                .is_some_and(|names| names.iter().any(|n| n == SERVER_NAME));
            let shared = dir.join(".mcp.json");
            if !refused && has_server(read_json(&shared).as_ref().and_then(|m| m.get("mcpServers"))) {
                return Ok(format!("{}: mcpServers.{SERVER_NAME}", shared.display()));
            }
        }
        if let Some(plugin) = self.installed_plugin(paths) {
            return Ok(format!("the toolprune plugin's MCP server ({})", plugin.display()));
        }
        Err(NoWayBack::no_server(self.label(), &format!("{}, the project's .mcp.json or an enabled toolprune plugin", user_file.display())))
    }

    /// `toolprune@…` in `~/.claude/plugins/installed_plugins.json` (user
    /// scope, its `installPath`) and enabled in `~/.claude/settings.json`
    /// (`enabledPlugins`), as `claude plugin install` leaves them.
    fn installed_plugin(&self, paths: &Paths) -> Option<PathBuf> {
        let read = |p: PathBuf| std::fs::read_to_string(p).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let installed = read(paths.home.join(".claude/plugins/installed_plugins.json"))?;
        let settings = read(paths.home.join(".claude/settings.json")).unwrap_or(Value::Null);
        let plugins = installed.get("plugins")?.as_object()?;
        plugins.iter().filter(|(id, _)| id.split('@').next() == Some(PLUGIN_NAME)).find_map(|(id, entries)| {
            if settings["enabledPlugins"][id.as_str()] != Value::Bool(true) {
                return None;
            }
            entries.as_array()?.iter().filter(|e| e["scope"] == "user").find_map(|e| e["installPath"].as_str()).map(PathBuf::from).filter(|p| p.is_dir())
        })
    }
}

fn pre_tool_use(hook: &Hook<'_>) -> Answer {
    let tool = hook.str("tool_name").unwrap_or("");
    if !is_our_omitted(tool) {
        return Ok(None);
    }
    let input = hook.omitted_input()?;
    Ok(Some(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": input,
        }
    })))
}

/// Every name Claude Code knows for the event's tool: `tool_name`
/// (`mcp__SERVER__TOOL` for an MCP tool, `WebFetch` …), the MCP server's
/// tool bare, and the other agents' forms of it (SPEC §2: never prunable
/// under any name wins). The server is `mcp_server.name` when the event
/// names it, else read from the `mcp__SERVER__` prefix.
fn names(hook: &Hook<'_>, tool: &str) -> Vec<String> {
    let server = hook.event.get("mcp_server").and_then(|m| m.get("name")).and_then(Value::as_str);
    tool_names(tool, server)
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
    let names = names(hook, tool);
    match &hook.event["tool_response"] {
        Value::Array(blocks) => {
            let text = joined_text(blocks).ok_or_else(|| Pass::new("no_text"))?;
            let pruned = hook.prune(&names, text, &transcript)?;
            Ok(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PostToolUse",
                    "updatedMCPToolOutput": replace_text(blocks, &pruned.body),
                }
            })))
        }
        Value::Object(object) if object.get("result").is_some_and(Value::is_string) => {
            let text = object["result"].as_str().unwrap_or_default().to_string();
            let pruned = hook.prune(&names, text, &transcript)?;
            let mut output: Map<String, Value> = object.clone();
            output.insert("result".to_string(), Value::String(pruned.body));
            Ok(Some(json!({
                "hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": output}
            })))
        }
        _ => Err(Pass::new("shape")),
    }
}

pub use crate::hook::common::TRANSCRIPT_TAIL;

/// The last user message with text in a Claude Code transcript (JSON lines
/// `{"type": "user", "message": {"role": "user", "content": …}}`), skipping
/// meta lines and messages that only carry tool results: the request when
/// the prompt hook did not record one (installed mid-session). Read with
/// `crate::hook::common::transcript_tail`: a regular file only, its last
/// [`TRANSCRIPT_TAIL`] bytes.
pub fn last_user_text(path: &str) -> Option<String> {
    let text = crate::hook::common::transcript_tail(path)?;
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
