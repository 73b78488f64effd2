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

pub use common::{FileLog, Pass};

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
