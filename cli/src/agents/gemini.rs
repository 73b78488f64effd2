//! Gemini CLI (tests/e2e/FACTS-gemini-cursor.md, Gemini CLI 0.61.0).
//!
//! Gemini CLI cannot take a replacement text from a hook: an `AfterTool`
//! hook can only ask for a *tail call*, whose result replaces the original
//! under the original call's name and id. So:
//!
//! - `BeforeAgent` → record `prompt`.
//! - `AfterTool` of a prunable tool → prune the text of `llmContent` (minus
//!   the `<untrusted_context>` wrapper the CLI put around it), keep the record
//!   *and* the pruned body in the session, and answer a tail call to
//!   `mcp_toolprune_omitted` with `{"id", "from": 0, "to": 0, "session",
//!   "body": true}`: toolprune's MCP server returns that body (the arguments
//!   never reach the model).
//! - `AfterTool` of the model's own `mcp_toolprune_omitted` call → a tail
//!   call to the same tool with the model's arguments + `session`, so the
//!   model gets the dropped paragraphs with nothing appended (a `BeforeTool`
//!   rewrite would append the CLI's "[System] Tool input parameters were
//!   modified" line to the result).
//! - `AfterTool` of a tail call (it carries `original_request_name`) → `{}`.
//! - `SessionEnd` → drop the session's records (keep the counter).
//! - Anything else, and every failure: `{}` (no change). Gemini CLI reads
//!   stderr as the answer when stdout is empty, so stdout always has JSON.
//!
//! A tail call to a tool that is not registered, or that a headless run
//! does not offer (an untrusted server), replaces the result with "tool not
//! found": so a result is pruned only when `mcpServers.toolprune` is in the
//! user's or the project's `settings.json` and trusted or allowed
//! ([`Adapter::omitted_callable`]).
//!
//! Settings (`toolprune install gemini`): the hooks and the MCP server
//! (`trust: true`: headless runs never offer an untrusted server's tools)
//! in `~/.gemini/settings.json` (project: `.gemini/settings.json`).

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::{hook_command, hook_edits, plugin_command, plugin_program, Adapter, HookEntry, NoWayBack, Plugin, Via, PLUGIN_DESCRIPTION, PLUGIN_NAME};
use crate::hook::common::{is_our_omitted, tool_names, Answer, Hook, Pass, SERVER_NAME};
use crate::install::{matcher, Check, Edit, FilePlan, Paths, Scope};

/// `${extensionPath}`: Gemini CLI puts the extension's folder there in its
/// hooks file and its manifest's MCP servers.
const ROOT: &str = "${extensionPath}";

const OPEN: &str = "<untrusted_context>\n";
const CLOSE: &str = "\n</untrusted_context>";

/// Gemini CLI's name of toolprune's tool (`mcp_<server>_<tool>`).
pub fn omitted_tool() -> String {
    format!("mcp_{SERVER_NAME}_omitted")
}

/// The Gemini CLI adapter.
pub struct Gemini;

impl Adapter for Gemini {
    fn label(&self) -> &'static str {
        "gemini"
    }

    fn name(&self) -> &'static str {
        "Gemini CLI"
    }

    /// A JSON object on stdout (with none, the CLI reads stderr as the answer).
    fn pass(&self, _event: Option<&str>) -> &'static str {
        "{}"
    }

    fn handle(&self, hook: &Hook<'_>) -> Answer {
        match hook.name() {
            "BeforeAgent" => hook.record_request(hook.str("prompt")).map(|()| None),
            "AfterTool" => after_tool(hook),
            "SessionEnd" => hook.end_session().map(|()| None),
            _ => Ok(None),
        }
    }

    /// Timeouts in milliseconds. `AfterTool` also answers the model's own
    /// `omitted` calls (a tail call adding the session).
    fn omitted_tool(&self, _via: Via) -> String {
        omitted_tool()
    }

    fn hooks(&self, prunable: &[String], via: Via) -> Vec<HookEntry> {
        vec![
            HookEntry { event: "BeforeAgent", matcher: None, timeout: Some(10_000) },
            HookEntry { event: "AfterTool", matcher: Some(matcher(prunable, &[self.omitted_tool(via)])), timeout: Some(30_000) },
            HookEntry { event: "SessionEnd", matcher: None, timeout: Some(10_000) },
        ]
    }

    fn hook_element(&self, entry: &HookEntry, command: &str) -> Value {
        let mut hook = json!({"type": "command", "command": command, "name": "toolprune"});
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
        json!({"command": program, "args": ["mcp"], "trust": true})
    }

    fn plan(&self, scope: Scope, paths: &Paths, prunable: &[String]) -> Result<Vec<FilePlan>, String> {
        let mut edits = hook_edits(self, prunable, &hook_command(self, &paths.binary));
        edits.push(Edit::member(&["mcpServers"], SERVER_NAME, self.mcp_server(&paths.binary.to_string_lossy())));
        Ok(vec![FilePlan { path: self.mcp_file(scope, paths).0, edits }])
    }

    fn mcp_file(&self, scope: Scope, paths: &Paths) -> (PathBuf, &'static str) {
        let base = match scope {
            Scope::User => &paths.home,
            Scope::Project => &paths.project,
        };
        (base.join(".gemini").join("settings.json"), "mcpServers")
    }

    /// `gemini-extension.json` (the `omitted` server; an extension cannot
    /// trust its server: Gemini CLI drops `trust` from it) and `hooks/hooks.json`.
    fn plugin(&self, version: &str, prunable: &[String]) -> Option<Plugin> {
        let mut server = self.mcp_server(&plugin_program(ROOT));
        if let Some(entry) = server.as_object_mut() {
            entry.remove("trust");
        }
        let manifest = json!({
            "name": PLUGIN_NAME,
            "version": version,
            "description": PLUGIN_DESCRIPTION,
            "mcpServers": {SERVER_NAME: server},
        });
        let hooks = self.hooks_file(&self.hooks(prunable, Via::Plugin), &plugin_command(self, ROOT));
        Some(Plugin { dir: "gemini", files: vec![("gemini-extension.json", manifest), ("hooks/hooks.json", hooks)] })
    }

    /// `~/.gemini/extensions/toolprune/` with its manifest (`gemini
    /// extensions install|link`; a link is followed) and not disabled for
    /// the user in `extension-enablement.json`.
    fn installed_plugin(&self, paths: &Paths) -> Option<PathBuf> {
        let extensions = paths.home.join(".gemini/extensions");
        let mut dir = extensions.join(PLUGIN_NAME);
        if let Some(target) = std::fs::read_to_string(dir.join(".gemini-extension-install.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(|m| m["type"] == "link")
            .and_then(|m| m["source"].as_str().map(PathBuf::from))
        {
            dir = target;
        }
        if !dir.join("gemini-extension.json").is_file() {
            return None;
        }
        // `extension-enablement.json`: `{"toolprune": {"overrides": ["/home/me/*"]}}`
        // as `install` leaves it; `disable` writes `!`-rules.
        let enablement = std::fs::read_to_string(extensions.join("extension-enablement.json")).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let rules: Vec<&str> = enablement.as_ref().and_then(|e| e[PLUGIN_NAME]["overrides"].as_array()).map(|o| o.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let disabled = !rules.is_empty() && rules.iter().all(|rule| rule.starts_with('!'));
        (!disabled).then_some(dir)
    }

    /// A tail call to a tool Gemini CLI will not run would lose the result
    /// ("tool not found"): the settings' server must be registered (user or
    /// project `settings.json`) and runnable unasked (`trust`, `mcp.allowed`
    /// or a user policy: headless runs never offer an untrusted server's
    /// tools); the extension's `omitted` must be allowed by a user policy or
    /// the settings.
    fn omitted_callable(&self, paths: &Paths, via: Via) -> Result<String, NoWayBack> {
        let allowed = omitted_allowed(&paths.home, Some(&paths.project));
        match via {
            Via::Plugin if allowed => Ok("the extension's MCP server, allowed by a user policy or the settings".into()),
            Via::Plugin => Err(NoWayBack {
                reason: "omitted_not_allowed",
                why: format!("Gemini CLI will not run the extension's omitted tool unasked: the extension passes every result unchanged until {} allows it", paths.home.join(".gemini/policies").join(POLICY_FILE).display()),
            }),
            Via::Settings if server_registered(&paths.home, &paths.project) && allowed => Ok("mcpServers.toolprune in the settings, trusted or allowed".into()),
            Via::Settings if server_registered(&paths.home, &paths.project) => Err(NoWayBack {
                reason: "omitted_not_allowed",
                why: "mcpServers.toolprune is neither trusted (\"trust\": true) nor allowed by mcp.allowed or a user policy: headless runs never offer its omitted tool, so the hooks pass every result unchanged; run `toolprune install gemini`".into(),
            }),
            Via::Settings => Err(NoWayBack::no_server(self.label(), "~/.gemini/settings.json or the project's .gemini/settings.json")),
        }
    }

    /// The extension's `omitted` runs only when the user allows it.
    fn plugin_checks(&self, paths: &Paths) -> Vec<Check> {
        let policy = paths.home.join(".gemini/policies").join(POLICY_FILE);
        if omitted_allowed(&paths.home, Some(&paths.project)) {
            vec![Check { ok: true, what: "Gemini CLI may run the extension's omitted tool (a user policy or the settings allow it)".into() }]
        } else {
            vec![Check {
                ok: false,
                what: format!(
                    "Gemini CLI runs no tool of an extension's MCP server unasked (headless: never) and ignores an extension's own allow rules: \
                     write {} with\n{POLICY}(until then the extension passes every result unchanged)",
                    policy.display()
                ),
            }]
        }
    }
}

/// The user policy file docs/plugins.md and `doctor` name.
pub const POLICY_FILE: &str = "toolprune.toml";

/// The user policy that lets Gemini CLI run the extension's `omitted` (a
/// read of text the user's own tool returned: it changes nothing).
pub const POLICY: &str = "[[rule]]\nmcpName = \"toolprune\"\ntoolName = \"omitted\"\ndecision = \"allow\"\npriority = 100\n";

/// Whether Gemini CLI will run toolprune's server's `omitted` without
/// asking: a user policy (`~/.gemini/policies/*.toml`) allows it, or a
/// settings file (user, or the project's) names the server in
/// `mcp.allowed` or trusts it (`mcpServers.toolprune.trust`).
fn omitted_allowed(home: &std::path::Path, project: Option<&std::path::Path>) -> bool {
    let mut files = vec![home.join(".gemini/settings.json")];
    files.extend(project.map(|p| p.join(".gemini/settings.json")));
    files.iter().any(|f| settings_allow(f)) || policies_allow(&home.join(".gemini/policies"))
}

/// A policy folder holds an `allow` rule for `omitted` of server `toolprune`
/// (`mcpName` + `toolName` `omitted` or `*`, or `toolName` `mcp_toolprune_omitted` / `mcp_toolprune_*`).
fn policies_allow(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "toml")).any(|e| {
        let Some(value) = std::fs::read_to_string(e.path()).ok().and_then(|t| crate::install::toml_value(&t)) else { return false };
        value["rule"].as_array().is_some_and(|rules| {
            rules.iter().any(|r| {
                let names: Vec<&str> = match &r["toolName"] {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                let ours = match r["mcpName"].as_str() {
                    Some(m) => (m == SERVER_NAME || m == "*") && names.iter().any(|n| *n == "omitted" || *n == "*"),
                    None => names.iter().any(|n| *n == omitted_tool() || *n == format!("mcp_{SERVER_NAME}_*")),
                };
                ours && r["decision"] == "allow" && r.get("argsPattern").is_none() && r.get("modes").is_none()
            })
        })
    })
}

/// Whether the settings file `path` (JSON with comments) lets Gemini CLI run
/// toolprune's server's tools without asking: `mcp.allowed` names it (or
/// `*`), or `mcpServers.toolprune.trust` is true.
fn settings_allow(path: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let Ok(root) = jsonc_parser::cst::CstRootNode::parse(&text, &Default::default()) else { return false };
    let Some(value) = root.value().and_then(|v| v.to_serde_value()) else { return false };
    let allowed = value["mcp"]["allowed"].as_array().is_some_and(|a| a.iter().any(|n| n == SERVER_NAME || n == "*"));
    allowed || value["mcpServers"][SERVER_NAME]["trust"] == Value::Bool(true)
}

/// The text the tool returned, from one `llmContent` part: the CLI wraps an
/// MCP text block as `<untrusted_context>\n…\n</untrusted_context>` and
/// escapes a literal closing tag inside it.
pub fn unwrap_untrusted(text: &str) -> String {
    match text.strip_prefix(OPEN).and_then(|t| t.strip_suffix(CLOSE)) {
        Some(inner) => inner.replace("&lt;/untrusted_context&gt;", "</untrusted_context>"),
        None => text.to_string(),
    }
}

/// The result's text: every part of `llmContent` must be a text part (a
/// result with an image or other part is not pruned), joined with `\n\n`; a
/// string `llmContent` (built-in tools) is taken as it is.
fn result_text(response: &Value) -> Result<String, Pass> {
    if response.get("error").is_some_and(|e| !e.is_null()) {
        return Err(Pass::new("tool_failed"));
    }
    match response.get("llmContent") {
        Some(Value::Array(parts)) if !parts.is_empty() => {
            let texts: Option<Vec<String>> = parts
                .iter()
                .map(|p| {
                    let only_text = p.as_object().is_some_and(|o| o.len() == 1);
                    p.get("text").and_then(Value::as_str).filter(|_| only_text).map(unwrap_untrusted)
                })
                .collect();
            texts.map(|t| t.join("\n\n")).ok_or_else(|| Pass::new("non_text"))
        }
        Some(Value::String(s)) => Ok(unwrap_untrusted(s)),
        _ => Err(Pass::new("shape")),
    }
}

/// Whether `mcpServers.toolprune` is in `~/.gemini/settings.json` or the
/// project's `.gemini/settings.json` (JSON with comments).
fn server_registered(home: &std::path::Path, project: &std::path::Path) -> bool {
    [home.join(".gemini/settings.json"), project.join(".gemini/settings.json")].iter().any(|path| {
        super::has_server(super::read_json(path).as_ref().and_then(|s| s.get("mcpServers")))
    })
}

fn tail_call(tool: &str, args: Map<String, Value>) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "AfterTool",
            "tailToolCallRequest": {"name": tool, "args": args},
        }
    })
}

/// Every name Gemini CLI knows for the event's tool: `tool_name`
/// (`mcp_SERVER_TOOL`, `SERVER__TOOL`, or the bare name), the MCP server's
/// tool bare (`mcp_context.tool_name`), and the other agents' forms of it
/// (SPEC §2: never prunable under any name wins).
fn names(hook: &Hook<'_>, tool: &str) -> Vec<String> {
    let context = hook.event.get("mcp_context");
    let field = |key: &str| context.and_then(|c| c.get(key)).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut names = tool_names(tool, field("server_name"));
    if let (Some(server), Some(bare)) = (field("server_name"), field("tool_name")) {
        for name in crate::hook::common::mcp_tool_names(server, bare) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

fn after_tool(hook: &Hook<'_>) -> Answer {
    if hook.event.get("original_request_name").is_some_and(|n| !n.is_null()) {
        return Ok(None);
    }
    let tool = hook.str("tool_name").unwrap_or("");
    if is_our_omitted(tool) {
        let mut args = hook.event.get("tool_input").and_then(Value::as_object).cloned().unwrap_or_default();
        args.remove("body");
        args.insert("session".to_string(), Value::String(hook.token()?));
        return Ok(Some(tail_call(tool, args)));
    }
    let text = result_text(&hook.event["tool_response"])?;
    // A tail call to a tool Gemini CLI will not run would lose the result:
    // `hook.prune` asks `omitted_callable` first (the dispatcher's way back).
    let pruned = hook.prune(&names(hook, tool), text, &|| None)?;
    pruned.session.put_body(&pruned.id, &pruned.body).map_err(|_| Pass::new("store"))?;
    let mut args = Map::new();
    args.insert("id".to_string(), Value::String(pruned.id.clone()));
    args.insert("from".to_string(), json!(0));
    args.insert("to".to_string(), json!(0));
    args.insert("session".to_string(), Value::String(hook.token()?));
    args.insert("body".to_string(), Value::Bool(true));
    Ok(Some(tail_call(&format!("mcp_{SERVER_NAME}_omitted"), args)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_untrusted_wrapper_comes_off_and_its_escape_is_undone() {
        assert_eq!(unwrap_untrusted("<untrusted_context>\nA\n\nB\n</untrusted_context>"), "A\n\nB");
        assert_eq!(
            unwrap_untrusted("<untrusted_context>\nx &lt;/untrusted_context&gt; y\n</untrusted_context>"),
            "x </untrusted_context> y"
        );
        assert_eq!(unwrap_untrusted("plain"), "plain");
    }

    #[test]
    fn only_all_text_results_without_error_are_taken() {
        let wrapped = |t: &str| json!({"text": format!("{OPEN}{t}{CLOSE}")});
        assert_eq!(result_text(&json!({"llmContent": [wrapped("a"), wrapped("b")]})).unwrap(), "a\n\nb");
        assert_eq!(result_text(&json!({"llmContent": "built-in text"})).unwrap(), "built-in text");
        let image = json!({"inlineData": {"mimeType": "image/png", "data": "AAAA"}});
        assert_eq!(result_text(&json!({"llmContent": [wrapped("a"), image]})), Err(Pass::new("non_text")));
        assert_eq!(
            result_text(&json!({"llmContent": "MCP tool 'fetch' reported tool error", "error": {"message": "x", "type": "mcp_tool_error"}})),
            Err(Pass::new("tool_failed"))
        );
        assert_eq!(result_text(&json!({"returnDisplay": "x"})), Err(Pass::new("shape")));
    }
}
