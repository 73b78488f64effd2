//! `toolprune hook claude-code|gemini|cursor`: one agent event on stdin, the
//! agent's answer on stdout (SPEC §15; docs/hooks.md).
//!
//! | event | Claude Code | Gemini CLI | Cursor |
//! |---|---|---|---|
//! | prompt: record the turn's request | `UserPromptSubmit` | `BeforeAgent` | `beforeSubmitPrompt` |
//! | post-tool: prune a prunable tool's text | `PostToolUse` → `updatedMCPToolOutput` | `AfterTool` → tail call to `omitted` with `body` | `postToolUse` → `updated_mcp_tool_output` |
//! | `omitted` learns the session | `PreToolUse` → `updatedInput` + `session` | `AfterTool` of the model's call → tail call + `session` | `postToolUse` of `omitted` answers from the store |
//! | session end: drop the records, keep the counter | `SessionEnd` | `SessionEnd` | `sessionEnd` |
//!
//! **Fail-open**: [`run`] never fails and never panics outward: any error —
//! unreadable input or store, a corrupt configuration, a missing component,
//! a trap — gives the agent's "no change" answer ([`Agent::pass`]). The
//! process always exits 0 and prints nothing on stderr; diagnostics go to
//! the store's log file (`<root>/toolprune.log`), counts only.

pub mod claude;
pub mod common;
pub mod cursor;
pub mod gemini;

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::Value;
use toolprune::Pruner;

pub use common::Pass;

/// The agents toolprune hooks into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (`~/.claude/settings.json` hooks, MCP in `~/.claude.json`).
    ClaudeCode,
    /// Gemini CLI (`~/.gemini/settings.json`).
    Gemini,
    /// Cursor (`~/.cursor/hooks.json`, `~/.cursor/mcp.json`); from its
    /// documentation only, not tested end to end.
    Cursor,
}

impl Agent {
    /// The label in the store (session directory names), logs and commands.
    pub fn label(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
        }
    }

    /// The "no change" answer to `event` (`hook_event_name`, if it could be
    /// read): Claude Code reads no output as no change (and adds a prompt
    /// hook's stdout to the model's context, so nothing is printed); Gemini
    /// CLI needs a JSON object on stdout (else it reads stderr as the answer);
    /// Cursor's prompt event needs `{"continue": true}`.
    pub fn pass(self, event: Option<&str>) -> &'static str {
        match self {
            Agent::ClaudeCode => "",
            Agent::Gemini => "{}",
            Agent::Cursor if event == Some("beforeSubmitPrompt") => "{\"continue\":true}",
            Agent::Cursor => "{}",
        }
    }
}

/// What a hook run needs from outside: the environment and the component.
pub struct Context<'a> {
    /// Reads one environment variable (the process's, or a test's).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Loads the component (the process-wide [`Pruner::shared`], or a test's).
    pub load: &'a dyn Fn() -> Result<Pruner, String>,
}

impl Context<'static> {
    /// The process environment and the built-in component (disk-cached).
    pub fn process() -> Self {
        Context {
            env: &|name| std::env::var(name).ok(),
            load: &|| Pruner::shared().cloned().map_err(|e| format!("{e:#}")),
        }
    }
}

/// Answers one hook event: `input` is the agent's stdin, the result is
/// exactly what to print on stdout (possibly empty). Never panics, never
/// fails: see the module's fail-open rule.
pub fn run(agent: Agent, input: &[u8], cx: &Context<'_>) -> String {
    let event: Option<Value> = serde_json::from_slice(input).ok();
    let name = event.as_ref().and_then(|e| e.get("hook_event_name")).and_then(Value::as_str).map(str::to_string);
    let pass = agent.pass(name.as_deref());
    let Some(event) = event.filter(Value::is_object) else { return pass.to_string() };
    let handled = catch_unwind(AssertUnwindSafe(|| {
        let hook = common::Hook::new(agent, cx, &event);
        let answer = match agent {
            Agent::ClaudeCode => claude::handle(&hook),
            Agent::Gemini => gemini::handle(&hook),
            Agent::Cursor => cursor::handle(&hook),
        };
        hook.finish(&answer);
        answer
    }));
    match handled {
        Ok(Ok(Some(answer))) => answer.to_string(),
        _ => pass.to_string(),
    }
}

/// `toolprune hook AGENT` as a process: stdin → [`run`] → stdout, exit 0.
/// Panic messages are silenced (a panic is caught and answered "no change";
/// Gemini CLI would read a message on stderr as the hook's answer).
pub fn main(agent: Agent) -> std::process::ExitCode {
    use std::io::{Read as _, Write as _};
    std::panic::set_hook(Box::new(|_| {}));
    let mut input = Vec::new();
    let read = std::io::stdin().lock().take(common::MAX_INPUT_BYTES).read_to_end(&mut input);
    let answer = match read {
        Ok(_) => run(agent, &input, &Context::process()),
        Err(_) => agent.pass(None).to_string(),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(answer.as_bytes()).and_then(|()| out.flush());
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolprune::{LimitsOverride, LoadOptions};

    fn event(name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks/claude-code").join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Runs the prompt and the fetch of one session with `load`; returns the fetch's answer.
    fn fetch_with(agent: Agent, load: &dyn Fn() -> Result<Pruner, String>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store").to_string_lossy().into_owned();
        let env = move |name: &str| (name == "TOOLPRUNE_STORE_DIR").then(|| store.clone());
        let cx = Context { env: &env, load };
        let mut prompt = event("user_prompt_submit.json");
        prompt["prompt"] = "Why can't I index a Rust String with s[0], and how do I iterate over its characters?".into();
        run(Agent::ClaudeCode, prompt.to_string().as_bytes(), &cx);
        let mut fetch = event("post_tool_use.mcp_fetch.json");
        if agent == Agent::Gemini {
            let text = fetch["tool_response"][0]["text"].clone();
            fetch["hook_event_name"] = "AfterTool".into();
            fetch["tool_name"] = "mcp_fetch_fetch".into();
            fetch["tool_response"] = serde_json::json!({"llmContent": [{"text": text}]});
        }
        run(agent, fetch.to_string().as_bytes(), &cx)
    }

    #[test]
    fn the_built_in_component_prunes() {
        let load = || Pruner::shared().cloned().map_err(|e| e.to_string());
        assert!(fetch_with(Agent::ClaudeCode, &load).contains("updatedMCPToolOutput"));
    }

    #[test]
    fn a_missing_component_is_the_agents_no_change() {
        let load = || Err("no component".to_string());
        assert_eq!(fetch_with(Agent::ClaudeCode, &load), "");
        assert_eq!(fetch_with(Agent::Gemini, &load), "{}");
    }

    #[test]
    fn a_trapping_component_is_the_agents_no_change() {
        for limits in [LimitsOverride { fuel: Some(10_000), ..Default::default() }, LimitsOverride { memory_bytes: Some(1 << 16), ..Default::default() }] {
            let load = move || Pruner::load(LoadOptions { limits, ..LoadOptions::default() }).map_err(|e| e.to_string());
            assert_eq!(fetch_with(Agent::ClaudeCode, &load), "", "{limits:?}");
            assert_eq!(fetch_with(Agent::Gemini, &load), "{}", "{limits:?}");
        }
    }

    #[test]
    fn a_panic_inside_the_handler_is_the_agents_no_change() {
        let load = || -> Result<Pruner, String> { panic!("boom") };
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(fetch_with(Agent::ClaudeCode, &load), "");
        assert_eq!(fetch_with(Agent::Gemini, &load), "{}");
        let _ = std::panic::take_hook();
    }
}
