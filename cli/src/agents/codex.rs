//! Codex CLI (tests/e2e/FACTS-codex.md, `@openai/codex` 0.171.0).
//!
//! - `UserPromptSubmit` → record `prompt`; print nothing.
//! - `PreToolUse` of `mcp__toolprune__omitted` → `updatedInput` = the
//!   model's arguments + `session` (the store's token) and
//!   `permissionDecision: "allow"`: `toolprune mcp` answers from this
//!   conversation's session only.
//! - `PostToolUse` of a prunable tool → `tool_response` is the MCP result
//!   (`{"content": [blocks…]}`) or a built-in tool's string. The text is
//!   complete here, before Codex's own cut of long outputs
//!   (`tool_output_token_limit`). Codex cannot take a replacement output
//!   from a hook (`updatedMCPToolOutput` is refused as unsupported); its
//!   `{"decision": "block", "reason": TEXT}` replaces what the model sees
//!   with TEXT, a plain string. So a pruned result is answered with the body
//!   as `reason`, and only a result whose blocks are all text is pruned (a
//!   string cannot carry an image). Error results are never pruned.
//! - `SessionEnd` → drop the session's records (keep the counter). Codex
//!   gives it at most 3 s.
//! - Anything else, and **every failure: print nothing, exit 0**. A block
//!   with an error text would replace the result the model needed, so a
//!   toolprune failure never answers `decision: "block"`.
//!
//! Settings (`toolprune install codex`; user scope only): the hooks in
//! `$CODEX_HOME/hooks.json` (default `~/.codex`), the MCP server as
//! `[mcp_servers.toolprune]` in `$CODEX_HOME/config.toml`. Codex runs a
//! user's hook only when trusted: it keeps, per hook, `[hooks.state."<hooks
//! file>:<event>:<group>:<handler>"] trusted_hash = "sha256:…"` in the
//! user's `config.toml` (what its `/hooks` review writes), the hash of the
//! hook's normalized definition ([`trust_hash`]). `install` writes those
//! records for toolprune's own hooks; `doctor` checks them.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};

use super::{has_server, hook_command, hook_edits, plugin_command, Adapter, HookEntry, NoWayBack, Plugin, Via, PLUGIN_DESCRIPTION, PLUGIN_NAME};
use crate::hook::common::{is_our_omitted, joined_text, tool_names, Answer, Hook, Pass, SERVER_NAME};
use crate::install::{matcher, Check, Edit, FilePlan, Paths, Scope, Staged};

/// Codex CLI's name of toolprune's tool (namespace `mcp__toolprune`, tool `omitted`).
pub fn omitted_tool() -> String {
    format!("mcp__{SERVER_NAME}__omitted")
}

/// The longest `SessionEnd` hook Codex allows, in seconds (a longer one is
/// clamped, with a warning on every run).
pub const SESSION_END_TIMEOUT: u64 = 3;

/// The most a hook's output may hold before Codex cuts it, in Codex's
/// tokens (4 bytes each): 2,500 (`HOOK_OUTPUT_TOKEN_LIMIT` in Codex's hooks
/// crate, not configurable). A longer `reason` reaches the model as its head
/// and tail with the middle cut and a path to the full text: not verbatim,
/// kept paragraphs lost. So a pruned body over it is not sent: the result
/// passes unchanged (`reason=codex_hook_budget`).
pub const HOOK_OUTPUT_TOKENS: usize = 2_500;

/// Whether `text` fits Codex's hook-output budget (its token estimate:
/// bytes / 4, rounded up).
pub fn fits_hook_budget(text: &str) -> bool {
    text.len().div_ceil(4) <= HOOK_OUTPUT_TOKENS
}

/// The Codex CLI adapter.
pub struct Codex;

impl Adapter for Codex {
    fn label(&self) -> &'static str {
        "codex"
    }

    fn name(&self) -> &'static str {
        "Codex CLI"
    }

    /// Nothing: no output is no change for every event.
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

    /// Timeouts in seconds.
    fn hooks(&self, prunable: &[String], via: Via) -> Vec<HookEntry> {
        vec![
            HookEntry { event: "UserPromptSubmit", matcher: None, timeout: Some(10) },
            HookEntry { event: "PreToolUse", matcher: Some(format!("^{}$", self.omitted_tool(via))), timeout: Some(10) },
            HookEntry { event: "PostToolUse", matcher: Some(matcher(prunable, &[])), timeout: Some(30) },
            HookEntry { event: "SessionEnd", matcher: None, timeout: Some(SESSION_END_TIMEOUT) },
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

    fn plan(&self, scope: Scope, paths: &Paths, prunable: &[String]) -> Result<Vec<FilePlan>, String> {
        if scope == Scope::Project {
            return Err("Codex CLI keeps hook trust in the user's config.toml only: install with --user (the hooks then run in every project)".into());
        }
        let hooks = FilePlan { path: hooks_file(paths), edits: hook_edits(self, prunable, &hook_command(self, &paths.binary)) };
        let server = Edit::member(&["mcp_servers"], SERVER_NAME, self.mcp_server(&paths.binary.to_string_lossy()));
        Ok(vec![hooks, FilePlan { path: config_file(paths), edits: vec![server] }])
    }

    /// `config.toml` gets a trust record per toolprune hook, at the
    /// positions the hooks will have in `hooks.json` once installed.
    fn refine(&self, file: &mut FilePlan, staged: &Staged, paths: &Paths) {
        if file.path != config_file(paths) {
            return;
        }
        let hooks_path = hooks_file(paths);
        let text = match staged.iter().find(|(p, _)| *p == hooks_path) {
            Some((_, text)) => text.clone(),
            None => std::fs::read_to_string(&hooks_path).ok(),
        };
        for (key, hash) in our_hooks(&hooks_path, text.as_deref().unwrap_or("")) {
            file.edits.push(Edit::member(&["hooks", "state"], &key, json!({"trusted_hash": hash})));
        }
    }

    fn mcp_file(&self, _scope: Scope, paths: &Paths) -> (PathBuf, &'static str) {
        (config_file(paths), "mcp_servers")
    }

    /// `.codex-plugin/plugin.json` naming `./hooks/hooks.json` (the shape
    /// of `$CODEX_HOME/hooks.json`) and `./.mcp.json`. Codex runs a hook
    /// through the shell with `PLUGIN_ROOT` set; a plugin's stdio server
    /// must be a bare name or a `./` path inside the plugin (Codex CLI
    /// 0.171.0), so the server is `./bin/toolprune mcp`.
    fn plugin(&self, version: &str, prunable: &[String]) -> Option<Plugin> {
        let manifest = json!({
            "name": PLUGIN_NAME,
            "version": version,
            "description": PLUGIN_DESCRIPTION,
            "author": {"name": "toolprune"},
            "license": "MIT OR Apache-2.0",
            "hooks": "./hooks/hooks.json",
            "mcpServers": "./.mcp.json",
        });
        let hooks = self.hooks_file(&self.hooks(prunable, Via::Plugin), &plugin_command(self, "${PLUGIN_ROOT}"));
        let mcp = json!({"mcpServers": {SERVER_NAME: self.mcp_server("./bin/toolprune")}});
        Some(Plugin { dir: "codex", files: vec![(".codex-plugin/plugin.json", manifest), ("hooks/hooks.json", hooks), (".mcp.json", mcp)] })
    }

    /// The plugin's hooks come with its own server; the settings' hooks
    /// need `[mcp_servers.toolprune]` in `$CODEX_HOME/config.toml`, not
    /// `enabled = false`.
    fn omitted_callable(&self, paths: &Paths, via: Via) -> Result<String, NoWayBack> {
        if via == Via::Plugin {
            return Ok("the plugin's own MCP server".into());
        }
        let file = config_file(paths);
        let config = std::fs::read_to_string(&file).ok().and_then(|t| crate::install::toml_value(&t)).unwrap_or(Value::Null);
        let servers = config.get("mcp_servers");
        if has_server(servers) && servers.and_then(|s| s[SERVER_NAME].get("enabled")) != Some(&Value::Bool(false)) {
            return Ok(format!("{}: [mcp_servers.{SERVER_NAME}]", file.display()));
        }
        Err(NoWayBack::no_server(self.label(), &format!("{} (enabled)", file.display())))
    }

    /// Every toolprune hook in `hooks.json` is trusted (its record in the
    /// user's `config.toml` has the hash of its current definition) and not
    /// disabled; `hooks.json` is plain JSON (Codex reads no comments).
    fn checks(&self, _scope: Scope, paths: &Paths, _prunable: &[String]) -> Vec<Check> {
        let hooks_path = hooks_file(paths);
        let Ok(text) = std::fs::read_to_string(&hooks_path) else { return Vec::new() };
        let mut checks = Vec::new();
        if serde_json::from_str::<Value>(&text).is_err() {
            checks.push(Check { ok: false, what: format!("{}: Codex reads it as strict JSON (no comments, no trailing commas): fix it", hooks_path.display()) });
        }
        let config = std::fs::read_to_string(config_file(paths)).unwrap_or_default();
        let states = crate::install::toml_value(&config).and_then(|v| v.get("hooks").and_then(|h| h.get("state")).cloned()).unwrap_or(Value::Null);
        let ours = our_hooks(&hooks_path, &text);
        if ours.is_empty() {
            return checks;
        }
        for (key, hash) in ours {
            let state = states.get(&key);
            let what = match state.and_then(|s| s.get("trusted_hash")).and_then(Value::as_str) {
                _ if state.and_then(|s| s.get("enabled")) == Some(&Value::Bool(false)) => Err("is disabled in Codex (/hooks)".to_string()),
                Some(h) if h == hash => Ok(()),
                Some(_) => Err("changed since it was trusted: Codex will not run it (run `toolprune install codex` again)".to_string()),
                None => Err("is not trusted: Codex will not run it (run `toolprune install codex` again)".to_string()),
            };
            checks.push(match what {
                Ok(()) => Check { ok: true, what: format!("{}: hook {key} is trusted by Codex", config_file(paths).display()) },
                Err(why) => Check { ok: false, what: format!("{}: hook {key} {why}", config_file(paths).display()) },
            });
        }
        checks
    }
}

/// `$CODEX_HOME/hooks.json`.
fn hooks_file(paths: &Paths) -> PathBuf {
    paths.codex_home.join("hooks.json")
}

/// `$CODEX_HOME/config.toml`.
fn config_file(paths: &Paths) -> PathBuf {
    paths.codex_home.join("config.toml")
}

/// An event's name as Codex keys it: `PostToolUse` → `post_tool_use`.
pub fn event_key(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Events whose hooks Codex selects by matcher (for the others it ignores
/// one: it is not part of the hook's identity).
fn takes_matcher(event: &str) -> bool {
    matches!(event, "PreToolUse" | "PostToolUse" | "PermissionRequest" | "SessionStart" | "PreCompact" | "PostCompact")
}

/// The hash Codex trusts a command hook by: SHA-256 of the hook's
/// normalized identity as compact JSON with sorted keys —
/// `{"event_name": "post_tool_use", "matcher": M, "hooks": [{"type":
/// "command", "command": C, "timeout": T, "async": false}]}` (no `matcher`
/// when none or ignored; `timeout` defaults to 600 s, `SessionEnd` to 1 s
/// and at most [`SESSION_END_TIMEOUT`]; `statusMessage` only when set) —
/// as `sha256:<hex>`. Checked against the `currentHash` that `codex
/// app-server`'s `hooks/list` reports (tests/e2e/FACTS-codex.md).
pub fn trust_hash(event: &str, matcher: Option<&str>, handler: &Value) -> String {
    let session_end = event == "SessionEnd";
    let timeout = handler.get("timeout").and_then(Value::as_u64).unwrap_or(if session_end { 1 } else { 600 }).max(1);
    let timeout = if session_end { timeout.min(SESSION_END_TIMEOUT) } else { timeout };
    let mut hook = Map::new();
    hook.insert("type".into(), json!("command"));
    hook.insert("command".into(), handler.get("command").cloned().unwrap_or(Value::Null));
    hook.insert("timeout".into(), json!(timeout));
    hook.insert("async".into(), json!(handler.get("async").and_then(Value::as_bool).unwrap_or(false)));
    if let Some(status) = handler.get("statusMessage").filter(|s| s.is_string()) {
        hook.insert("statusMessage".into(), status.clone());
    }
    let mut identity = Map::new();
    identity.insert("event_name".into(), json!(event_key(event)));
    if let Some(m) = matcher.filter(|_| takes_matcher(event)) {
        identity.insert("matcher".into(), json!(m));
    }
    identity.insert("hooks".into(), json!([Value::Object(hook)]));
    let canonical = canonical(&Value::Object(identity));
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// `value` with every object's keys in sorted order.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// toolprune's hooks in the hooks file `path` whose text is `text`: each
/// one's trust key (`<path>:<event>:<group>:<handler>`) and [`trust_hash`].
/// A hook is ours when its command runs `… hook codex`.
pub fn our_hooks(path: &Path, text: &str) -> Vec<(String, String)> {
    let Ok(file) = serde_json::from_str::<Value>(text) else { return Vec::new() };
    let Some(events) = file.get("hooks").and_then(Value::as_object) else { return Vec::new() };
    let mut out = Vec::new();
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            for (h, handler) in group.get("hooks").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
                if handler.get("type").and_then(Value::as_str) == Some("command") && command.trim_end().ends_with("hook codex") {
                    out.push((format!("{}:{}:{g}:{h}", path.display(), event_key(event)), trust_hash(event, matcher, handler)));
                }
            }
        }
    }
    out
}

fn pre_tool_use(hook: &Hook<'_>) -> Answer {
    if !is_our_omitted(hook.str("tool_name").unwrap_or("")) {
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

/// The result's text: an MCP result's blocks, all text (joined with `\n\n`),
/// or a built-in tool's string.
fn result_text(response: &Value) -> Result<String, Pass> {
    match response {
        Value::Object(result) => {
            if result.get("isError").and_then(Value::as_bool) == Some(true) || result.get("is_error").and_then(Value::as_bool) == Some(true) {
                return Err(Pass::new("tool_failed"));
            }
            let blocks = result.get("content").and_then(Value::as_array).ok_or_else(|| Pass::new("shape"))?;
            if blocks.iter().any(|b| b.get("type").and_then(Value::as_str) != Some("text") || !b.get("text").is_some_and(Value::is_string)) {
                return Err(Pass::new("non_text"));
            }
            joined_text(blocks).ok_or_else(|| Pass::new("no_text"))
        }
        Value::String(text) => Ok(text.clone()),
        _ => Err(Pass::new("shape")),
    }
}

fn post_tool_use(hook: &Hook<'_>) -> Answer {
    let tool = hook.str("tool_name").unwrap_or("");
    if is_our_omitted(tool) {
        return Ok(None);
    }
    let text = result_text(&hook.event["tool_response"])?;
    let transcript = || hook.str("transcript_path").and_then(last_user_text);
    // `mcp__SERVER__TOOL`: the server's tool bare, and every agent's form of it.
    let pruned = hook.prune(&tool_names(tool, None), text, &transcript)?;
    if !fits_hook_budget(&pruned.body) {
        return Err(Pass::new("codex_hook_budget"));
    }
    Ok(Some(json!({"decision": "block", "reason": pruned.body})))
}

/// The last message the user typed in a Codex rollout file (JSON lines;
/// `{"type": "response_item", "payload": {"type": "message", "role":
/// "user", "content": [{"type": "input_text", "text": …}]}}`), skipping the
/// context blocks Codex sends as user messages (`<environment_context>` …):
/// the request when the prompt hook did not record one.
pub fn last_user_text(path: &str) -> Option<String> {
    let text = crate::hook::common::transcript_tail(path)?;
    text.lines().rev().find_map(|line| {
        let entry: Value = serde_json::from_str(line).ok()?;
        let payload = entry.get("payload").filter(|_| entry.get("type").and_then(Value::as_str) == Some("response_item"))?;
        if payload.get("type").and_then(Value::as_str) != Some("message") || payload.get("role").and_then(Value::as_str) != Some("user") {
            return None;
        }
        let texts: Vec<&str> = payload
            .get("content")?
            .as_array()?
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("input_text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim_start().starts_with('<'))
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n\n"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_hash_is_the_one_codex_reported() {
        // `currentHash` of these hooks in `codex app-server` hooks/list (Codex CLI 0.171.0).
        let probe = |c: &str| json!({"type": "command", "command": format!("python3 /tmp/cx/probe.py {c}")});
        assert_eq!(
            trust_hash("PostToolUse", Some("^mcp__docs__fetch$"), &probe("block")),
            "sha256:427265a4398d821d572765fc7b901b4dc7242ddbef56a80d942c7f21cff053e3"
        );
        assert_eq!(trust_hash("UserPromptSubmit", None, &probe("none")), "sha256:d14c95b507abb88c6f3f0b4ec3ea7a56dde7211600c9895ab5b7dbcc692bde80");
        assert_eq!(trust_hash("SessionStart", None, &probe("none")), "sha256:1a1d075ab811195c76ab62b4456b8d6f162b263fd6e2a04c73a6a8aa9d22097f");
        assert_eq!(trust_hash("SessionEnd", None, &probe("none")), "sha256:6ff0979647ee0b349cca191fddebeb32039b004a2c02327af91bbcc4c0fb5b90");
        assert_eq!(trust_hash("Stop", None, &probe("none")), "sha256:7eb5f6179fd27ae31b56c50bc579bf7a0164ef7c652d282557d0f97790e9414d");
        // A matcher is no part of a prompt hook's identity; the timeout is.
        assert_eq!(trust_hash("UserPromptSubmit", Some("x"), &probe("none")), trust_hash("UserPromptSubmit", None, &probe("none")));
        let mut timed = probe("none");
        timed["timeout"] = json!(600);
        assert_eq!(trust_hash("Stop", None, &timed), trust_hash("Stop", None, &probe("none")));
        timed["timeout"] = json!(30);
        assert_ne!(trust_hash("Stop", None, &timed), trust_hash("Stop", None, &probe("none")));
    }

    #[test]
    fn the_hook_budget_is_codexs_estimate() {
        assert!(fits_hook_budget(&"x".repeat(10_000)));
        assert!(!fits_hook_budget(&"x".repeat(10_001)));
        assert!(!fits_hook_budget(&"é".repeat(5_001)), "bytes, not characters");
    }

    #[test]
    fn our_hooks_are_keyed_by_their_position_among_the_users() {
        let text = r#"{"hooks": {"PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "mine"}]},
            {"matcher": "^(fetch)$", "hooks": [{"type": "command", "command": "/bin/toolprune hook codex", "timeout": 30}]}
        ]}}"#;
        let ours = our_hooks(Path::new("/h/.codex/hooks.json"), text);
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].0, "/h/.codex/hooks.json:post_tool_use:1:0");
        assert!(our_hooks(Path::new("/x"), "{ // not json\n}").is_empty());
    }

    #[test]
    fn only_all_text_results_without_error_are_taken() {
        assert_eq!(result_text(&json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})).unwrap(), "a\n\nb");
        assert_eq!(result_text(&json!("built-in")).unwrap(), "built-in");
        assert_eq!(result_text(&json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA"}]})), Err(Pass::new("non_text")));
        assert_eq!(result_text(&json!({"content": [{"type": "text", "text": "a"}], "isError": true})), Err(Pass::new("tool_failed")));
        assert_eq!(result_text(&json!({"structuredContent": {}})), Err(Pass::new("shape")));
    }

    #[test]
    fn the_rollouts_last_typed_message_is_the_fallback_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        let user = |t: &str| json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}}).to_string();
        let lines = [user("old question"), user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"), user("the request"), user("<turn_aborted>")];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        assert_eq!(last_user_text(path.to_str().unwrap()).as_deref(), Some("the request"));
    }
}
