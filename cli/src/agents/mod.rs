//! One adapter per agent, behind one trait ([`Adapter`]): its event shapes
//! and answers (`toolprune hook AGENT`), its hook entries and MCP server
//! entry as data, its settings files (`toolprune install|uninstall|doctor
//! AGENT`). Adding an agent is one file here plus its fixtures in
//! `tests/fixtures/hooks/`.
//!
//! | agent | file | prompt | post-tool answer | `omitted` learns the session | session end |
//! |---|---|---|---|---|---|
//! | Claude Code | [`claude_code`] | `UserPromptSubmit` | `updatedMCPToolOutput` | `PreToolUse` → `updatedInput` + `session` | `SessionEnd` |
//! | Gemini CLI | [`gemini`] | `BeforeAgent` | tail call to `omitted` with `body` | `AfterTool` → tail call + `session` | `SessionEnd` |
//! | Cursor | [`cursor`] | `beforeSubmitPrompt` | `updated_mcp_tool_output` | `postToolUse` of `omitted` answers from the store | `sessionEnd` |
//! | Codex CLI | [`codex`] | `UserPromptSubmit` | `decision: "block"`, `reason` = the body | `PreToolUse` → `updatedInput` + `session` | `SessionEnd` |
//!
//! The modules below this one know no agent: `crate::hook` is the runtime
//! an adapter's handler runs on (store, configuration, pruning, `omitted`),
//! `crate::install` the engine that edits settings files from an adapter's
//! [`FilePlan`]s. This module dispatches to them (no cycle: adapters use
//! both, neither uses an adapter).
//!
//! **One definition for the installer and the plugins** (issue 23 §4):
//! [`Adapter::hooks`] is the agent's hook entries as data (event, matcher,
//! timeout), [`Adapter::hook_element`] one entry as the agent's hooks file
//! holds it, [`Adapter::hooks_file`] the whole hooks file a plugin ships,
//! [`Adapter::mcp_server`] the `omitted` server entry. `install` writes
//! exactly these elements (tests check it), so a plugin built from them
//! cannot drift from the installer.

pub mod claude_code;
pub mod codex;
pub mod cursor;
pub mod gemini;
pub mod plugin;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

pub use crate::hook::Via;
use crate::hook::{Answer, Context, Hook, Pass};
use crate::install::{self, Check, Edit, FilePlan, Paths, Report, Scope, Staged};

/// The agents toolprune hooks into (`toolprune hook|install|uninstall|doctor AGENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (`~/.claude/settings.json` hooks, MCP in `~/.claude.json`).
    ClaudeCode,
    /// Gemini CLI (`~/.gemini/settings.json`).
    Gemini,
    /// Cursor (`~/.cursor/hooks.json`, `~/.cursor/mcp.json`); from its
    /// documentation only, not tested end to end.
    Cursor,
    /// Codex CLI (`$CODEX_HOME/hooks.json`, MCP and hook trust in
    /// `$CODEX_HOME/config.toml`).
    Codex,
}

impl Agent {
    /// Every agent, in the order the docs list them.
    pub const ALL: [Agent; 4] = [Agent::ClaudeCode, Agent::Gemini, Agent::Cursor, Agent::Codex];

    /// The agent's adapter.
    pub fn adapter(self) -> &'static dyn Adapter {
        match self {
            Agent::ClaudeCode => &claude_code::ClaudeCode,
            Agent::Gemini => &gemini::Gemini,
            Agent::Cursor => &cursor::Cursor,
            Agent::Codex => &codex::Codex,
        }
    }

    /// The label in the store (session directory names), logs and commands.
    pub fn label(self) -> &'static str {
        self.adapter().label()
    }
}

/// One hook registration, as data: toolprune's command answers `event`
/// (the agent's own event name) for the tools `matcher` selects (none: every
/// event of that kind), within `timeout` (in the agent's unit: seconds,
/// Gemini CLI milliseconds; none: the agent's default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookEntry {
    pub event: &'static str,
    pub matcher: Option<String>,
    pub timeout: Option<u64>,
}

/// Everything toolprune knows about one agent. The event side runs inside
/// `toolprune hook AGENT` ([`run`]), the settings side inside `toolprune
/// install|uninstall|doctor AGENT`.
pub trait Adapter: Sync {
    /// The label: `claude-code`, `gemini`, `cursor`, `codex`.
    fn label(&self) -> &'static str;

    /// The agent's name for people: `Claude Code`, `Codex CLI`, …
    fn name(&self) -> &'static str;

    // -- events --------------------------------------------------------------

    /// The "no change" answer to `event` (`hook_event_name`, if it could be
    /// read): what the hook prints on every failure.
    fn pass(&self, event: Option<&str>) -> &'static str;

    /// The conversation's id in `event` (the store's session): `session_id`
    /// unless the agent names it otherwise.
    fn conversation<'e>(&self, event: &'e Value) -> Option<&'e str> {
        event.get("session_id").and_then(Value::as_str)
    }

    /// Answers one event: the JSON to print (`Ok(Some)`), the plain "no
    /// change" (`Ok(None)`), or why it passed. Errors and panics become
    /// [`Adapter::pass`] in [`run`].
    fn handle(&self, hook: &Hook<'_>) -> Answer;

    /// How an answer is printed (a JSON object's text; Codex CLI's too).
    fn render(&self, answer: &Value) -> String {
        answer.to_string()
    }

    // -- settings ------------------------------------------------------------

    /// The name the agent gives toolprune's `omitted` tool when its server
    /// was registered `via` settings or a plugin (default: the same name).
    fn omitted_tool(&self, _via: Via) -> String {
        format!("mcp__{}__omitted", install::SERVER_NAME)
    }

    /// The hook entries toolprune registers `via` settings or a plugin, for
    /// the prunable-tool globs `prunable` (the post-tool matcher).
    fn hooks(&self, prunable: &[String], via: Via) -> Vec<HookEntry>;

    /// One entry as the agent's hooks file holds it (the element appended
    /// to `hooks.<event>`), running `command` (`toolprune hook AGENT`, or a
    /// plugin's path to it).
    fn hook_element(&self, entry: &HookEntry, command: &str) -> Value;

    /// The agent's whole hooks file for `entries` running `command`:
    /// `{"hooks": {EVENT: [element, …]}}` (what a plugin's `hooks.json` holds).
    fn hooks_file(&self, entries: &[HookEntry], command: &str) -> Value {
        let mut events: Map<String, Value> = Map::new();
        for entry in entries {
            let list = events.entry(entry.event.to_string()).or_insert_with(|| json!([]));
            if let Value::Array(items) = list {
                items.push(self.hook_element(entry, command));
            }
        }
        json!({"hooks": events})
    }

    /// The `omitted` MCP server's entry (under [`install::SERVER_NAME`])
    /// running `program mcp`.
    fn mcp_server(&self, program: &str) -> Value {
        json!({"command": program, "args": ["mcp"]})
    }

    /// What `install` writes in `scope`: every file and its edits.
    /// Errors: the agent has no settings for that scope.
    fn plan(&self, scope: Scope, paths: &Paths, prunable: &[String]) -> Result<Vec<FilePlan>, String>;

    /// Completes one file's plan from the texts the files before it will
    /// have (default: nothing to add).
    fn refine(&self, _file: &mut FilePlan, _staged: &Staged, _paths: &Paths) {}

    /// The file holding the agent's MCP servers in `scope`, and the key of
    /// the servers' table in it (`install --wrap`).
    fn mcp_file(&self, scope: Scope, paths: &Paths) -> (PathBuf, &'static str);

    /// Checks beyond the settings' entries (Codex CLI: the hooks are trusted).
    fn checks(&self, _scope: Scope, _paths: &Paths, _prunable: &[String]) -> Vec<Check> {
        Vec::new()
    }

    // -- the plugin ----------------------------------------------------------

    /// The agent's plugin (extension) of toolprune `version` for the
    /// prunable-tool globs `prunable`, as its manifest files (none: the agent
    /// has no plugin format). Built from [`Adapter::hooks_file`] and
    /// [`Adapter::mcp_server`] with [`plugin_command`] / [`plugin_program`],
    /// so it holds the same entries `install` writes ([`plugin::build`]
    /// writes it, with the binary, into a marketplace folder).
    fn plugin(&self, _version: &str, _prunable: &[String]) -> Option<Plugin> {
        None
    }

    /// The folder of the toolprune plugin the agent has installed and
    /// enabled for the user (none: not installed, or unknown for this agent).
    fn installed_plugin(&self, _paths: &Paths) -> Option<PathBuf> {
        None
    }

    /// What the installed plugin needs beyond itself (Gemini CLI: its
    /// `omitted` tool allowed in the settings).
    fn plugin_checks(&self, _paths: &Paths) -> Vec<Check> {
        Vec::new()
    }

    // -- the way back ----------------------------------------------------------

    /// Whether the model can call toolprune's `omitted` in a session whose
    /// hooks were registered `via` settings or a plugin, seen from `paths`
    /// (the user's home, the session's project folder): `Ok` naming where
    /// the tool comes from, or why not. A hook prunes only when it can (SPEC
    /// §10, issue 25 §5: no marker is written where the dropped paragraphs
    /// cannot be read back), and `doctor` says which.
    fn omitted_callable(&self, paths: &Paths, via: Via) -> Result<String, NoWayBack>;
}

/// Why the model could not call toolprune's `omitted` in a session: a word
/// for the hook's log line (`reason=`), a sentence for `doctor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoWayBack {
    /// The log's reason word (`no_omitted_server`, `omitted_not_allowed`).
    pub reason: &'static str,
    /// What is missing and what to do, for people.
    pub why: String,
}

impl NoWayBack {
    /// toolprune's MCP server is registered in none of `places` (the
    /// agent's files, named for people); `agent` is the label for `install`.
    pub fn no_server(agent: &str, places: &str) -> Self {
        NoWayBack {
            reason: "no_omitted_server",
            why: format!(
                "toolprune's MCP server (the model's `omitted` tool) is registered in none of {places}: the model could not read dropped \
                 paragraphs back, so the hooks pass every result unchanged; run `toolprune install {agent}`"
            ),
        }
    }
}

/// A JSON (or JSON with comments) file as a value; none when it is missing
/// or does not parse.
pub fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    jsonc_parser::parse_to_ast(&text, &Default::default(), &Default::default()).ok()?.value.map(Value::from)
}

/// Whether `servers` (an MCP servers table) holds toolprune's server.
pub fn has_server(servers: Option<&Value>) -> bool {
    servers.and_then(|s| s.get(install::SERVER_NAME)).is_some_and(Value::is_object)
}

/// One agent's plugin: the folder it gets in the marketplace (`dir`) and
/// its manifest files (path inside the folder → JSON). [`plugin::build`]
/// adds `bin/toolprune`, the licences and a README.
#[derive(Clone, Debug, PartialEq)]
pub struct Plugin {
    pub dir: &'static str,
    pub files: Vec<(&'static str, Value)>,
}

/// The plugin's name in every agent (Claude Code: `toolprune@toolprune`).
pub const PLUGIN_NAME: &str = "toolprune";

/// One line on what the plugin does (every manifest's `description`).
pub const PLUGIN_DESCRIPTION: &str =
    "Drops the paragraphs of a tool result that do not help answer the request; the model reads them back with the omitted tool.";

/// The plugin's program: `ROOT/bin/toolprune`, `root` being the agent's
/// variable for the plugin's folder (`${CLAUDE_PLUGIN_ROOT}`, `${extensionPath}`, …).
pub fn plugin_program(root: &str) -> String {
    format!("{root}/bin/toolprune")
}

/// A plugin's hook command: `"ROOT/bin/toolprune" hook LABEL --plugin`
/// (`--plugin`: the hook stands back when the settings hooks are installed
/// too, so a result is pruned once).
pub fn plugin_command(adapter: &dyn Adapter, root: &str) -> String {
    format!("\"{}\" hook {} --plugin", plugin_program(root), adapter.label())
}

/// Whether toolprune's settings hooks for `adapter` are in the user's or
/// the project's (`project`) settings: then a plugin's hook passes.
pub fn settings_hooks_installed(adapter: &dyn Adapter, paths: &Paths) -> bool {
    [Scope::User, Scope::Project]
        .into_iter()
        .filter_map(|scope| adapter.plan(scope, paths, &[]).ok())
        .any(|plans| install::has_hooks(adapter.label(), &plans))
}

/// The paths a running hook sees: `HOME`, the event's `cwd` (else Cursor's
/// first `workspace_roots`, else the process's), `CODEX_HOME`; none
/// without `HOME`.
fn hook_paths(event: &Value, env: &dyn Fn(&str) -> Option<String>) -> Option<Paths> {
    let home = PathBuf::from(env("HOME").filter(|h| !h.is_empty())?);
    let project = event
        .get("cwd")
        .and_then(Value::as_str)
        .or_else(|| event.get("workspace_roots").and_then(Value::as_array).and_then(|r| r.first()).and_then(Value::as_str))
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())?;
    let codex_home = env("CODEX_HOME").filter(|d| !d.is_empty()).map(PathBuf::from).unwrap_or_else(|| home.join(".codex"));
    Some(Paths { config_dir: home.join(".config/toolprune"), binary: PathBuf::from("toolprune"), home, project, codex_home })
}

/// Whether a plugin's hook stands back on `event`: toolprune's settings
/// hooks are installed too (they prune; the plugin's would prune the same
/// result again). A call of the plugin's own `omitted` tool, when the agent
/// names it apart from the settings' one, is still the plugin's to answer.
///
/// It also stands back, always, when GitHub Copilot CLI runs it (Copilot CLI
/// installs the Claude Code plugin from the same marketplace and sets
/// `COPILOT_PLUGIN_ROOT` for plugin hooks; its shell hooks cannot replace a
/// tool's output, so pruning there would only store results the model
/// never sees): the plugin is inert in Copilot CLI (docs/plugins.md).
fn plugin_stands_back(adapter: &dyn Adapter, event: &Value, env: &dyn Fn(&str) -> Option<String>) -> bool {
    if env("COPILOT_PLUGIN_ROOT").is_some() {
        return true;
    }
    let own = adapter.omitted_tool(Via::Plugin);
    if own != adapter.omitted_tool(Via::Settings) && event.get("tool_name").and_then(Value::as_str) == Some(own.as_str()) {
        return false;
    }
    hook_paths(event, env).is_some_and(|paths| settings_hooks_installed(adapter, &paths))
}

/// `toolprune hook AGENT`'s command line for `program`: `PROGRAM hook LABEL`.
pub fn hook_command(adapter: &dyn Adapter, program: &Path) -> String {
    format!("{} hook {}", install::shell_word(&program.to_string_lossy()), adapter.label())
}

/// The edits that register `adapter`'s hooks (`hooks.<event> +=` each
/// element) running `command`.
pub fn hook_edits(adapter: &dyn Adapter, prunable: &[String], command: &str) -> Vec<Edit> {
    adapter.hooks(prunable, Via::Settings).iter().map(|entry| Edit::append(&["hooks", entry.event], adapter.hook_element(entry, command))).collect()
}

/// Answers one hook event for `agent`, registered `via` settings or a
/// plugin: `input` is the agent's stdin, the result is exactly what to print
/// on stdout (possibly empty). Never panics, never fails: any error, a
/// missing component, a trap or a panic is the agent's "no change"
/// ([`Adapter::pass`]). A plugin's hook also answers "no change" when the
/// settings hooks are installed too ([`settings_hooks_installed`]): a
/// result is pruned once, by the settings' hook.
pub fn run(agent: Agent, input: &[u8], cx: &Context<'_>, via: Via) -> String {
    let adapter = agent.adapter();
    let event: Option<Value> = serde_json::from_slice(input).ok();
    let name = event.as_ref().and_then(|e| e.get("hook_event_name")).and_then(Value::as_str).map(str::to_string);
    let pass = adapter.pass(name.as_deref());
    let Some(event) = event.filter(Value::is_object) else { return pass.to_string() };
    let handled = catch_unwind(AssertUnwindSafe(|| {
        if via == Via::Plugin && plugin_stands_back(adapter, &event, cx.env) {
            return Ok(None);
        }
        // The way back: asked only of a result about to be pruned (after
        // the cheap gates), from the files the agent reads.
        let way_back = || match hook_paths(&event, cx.env) {
            Some(paths) => adapter.omitted_callable(&paths, via).map(|_| ()).map_err(|no| Pass::new(no.reason)),
            None => Err(Pass::new("no_omitted_server")),
        };
        let mut hook = Hook::new(adapter.label(), adapter.conversation(&event), cx, &event);
        hook.via = via;
        hook.way_back = Some(&way_back);
        let answer = adapter.handle(&hook);
        hook.finish(&answer);
        answer.map(|a| a.map(|a| adapter.render(&a)))
    }));
    match handled {
        Ok(Ok(Some(answer))) => answer,
        _ => pass.to_string(),
    }
}

/// `toolprune hook AGENT [--plugin]` as a process (stdin → [`run`] →
/// stdout, exit 0; an oversized event is drained and answered "no change":
/// `crate::hook::serve`).
pub fn main(agent: Agent, via: Via) -> std::process::ExitCode {
    crate::hook::serve(agent.adapter().pass(None), |input| run(agent, input, &Context::process(), via))
}

/// `toolprune install AGENT`: the adapter's plan through the installer
/// engine (see `crate::install`). Errors: a scope the agent has no settings
/// for, a settings file or the manifest that does not parse, a file that
/// cannot be written.
pub fn install(agent: Agent, scope: Scope, paths: &Paths, prunable: &[String], dry_run: bool) -> Result<Report, String> {
    let adapter = agent.adapter();
    let plans = adapter.plan(scope, paths, prunable)?;
    let refine = |file: &mut FilePlan, staged: &Staged| adapter.refine(file, staged, paths);
    install::install(adapter.label(), scope, &plans, &refine, &paths.manifest(), dry_run)
}

/// `toolprune uninstall AGENT`: removes exactly what `install` recorded.
pub fn uninstall(agent: Agent, scope: Scope, paths: &Paths, dry_run: bool) -> Result<Report, String> {
    install::uninstall(agent.label(), scope, &paths.manifest(), dry_run)
}

/// `toolprune install AGENT --wrap NAME` (`install::wrap` on the agent's MCP file).
pub fn wrap(agent: Agent, scope: Scope, paths: &Paths, name: &str, dry_run: bool) -> Result<Report, String> {
    let adapter = agent.adapter();
    let (file, servers) = adapter.mcp_file(scope, paths);
    install::wrap(adapter.label(), scope, (&file, servers), paths, name, dry_run)
}

/// `toolprune uninstall AGENT --wrap NAME` (`install::unwrap`).
pub fn unwrap(agent: Agent, scope: Scope, paths: &Paths, name: &str, dry_run: bool) -> Result<Report, String> {
    let (file, servers) = agent.adapter().mcp_file(scope, paths);
    install::unwrap((&file, servers), paths, name, dry_run)
}

/// `toolprune doctor AGENT`: `install::doctor` with the adapter's plan and
/// checks, and its installed plugin's ([`Adapter::installed_plugin`]): the
/// plugin alone is checked as a plugin; installed both ways, the report says
/// so and names the active one (the settings hooks: the plugin's stand back).
pub fn doctor(agent: Agent, scope: Scope, paths: &Paths, env: &dyn Fn(&str) -> Option<String>) -> (String, bool) {
    let adapter = agent.adapter();
    let plugin = adapter.installed_plugin(paths);
    let settings = |prunable: &[String]| -> Vec<Check> {
        let settings_checks = || match adapter.plan(scope, paths, prunable) {
            Ok(plans) => {
                let mut checks = install::check_settings(adapter.label(), &plans);
                checks.extend(adapter.checks(scope, paths, prunable));
                checks
            }
            Err(e) => vec![Check { ok: false, what: e }],
        };
        let way_back = |via: Via| match adapter.omitted_callable(paths, via) {
            Ok(from) => Check { ok: true, what: format!("the model can call omitted ({from}): results may be pruned") },
            Err(no) => Check { ok: false, what: no.why },
        };
        let Some(dir) = &plugin else {
            let mut checks = settings_checks();
            checks.push(way_back(Via::Settings));
            return checks;
        };
        let mut checks = plugin::check_installed(adapter, dir, prunable);
        checks.extend(adapter.plugin_checks(paths));
        if settings_hooks_installed(adapter, paths) {
            checks.push(Check {
                ok: true,
                what: format!(
                    "installed both ways: the settings hooks are active, the plugin's ({}) stand back, so a result is pruned once; \
                     keep one (`toolprune uninstall {}`, or remove the plugin with {}'s own command)",
                    dir.display(),
                    adapter.label(),
                    adapter.name()
                ),
            });
            checks.extend(settings_checks());
            checks.push(way_back(Via::Settings));
        } else {
            checks.push(Check { ok: true, what: format!("the plugin is active ({}); no settings hooks", dir.display()) });
            checks.push(way_back(Via::Plugin));
        }
        checks
    };
    install::doctor(adapter.label(), scope, &settings, env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolprune::{LimitsOverride, LoadOptions, Pruner};

    fn event(name: &str) -> Value {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/hooks/claude-code").join(name);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Runs the prompt and the fetch of one session with `load`; returns the fetch's answer.
    fn fetch_with(agent: Agent, load: &dyn Fn() -> Result<Pruner, String>) -> String {
        let dir = tempfile::tempdir().unwrap();
        fetch_in(agent, load, dir.path(), Via::Settings)
    }

    /// The same with `root/home` as `HOME` and `root/project` as the events'
    /// `cwd`, the hooks registered `via` settings or a plugin.
    fn fetch_in(agent: Agent, load: &dyn Fn() -> Result<Pruner, String>, root: &Path, via: Via) -> String {
        let store = root.join("store").to_string_lossy().into_owned();
        let home = root.join("home").to_string_lossy().into_owned();
        let project = root.join("project").to_string_lossy().into_owned();
        let env = move |name: &str| match name {
            "TOOLPRUNE_STORE_DIR" => Some(store.clone()),
            "HOME" => Some(home.clone()),
            _ => None,
        };
        if via == Via::Settings {
            register_omitted_server(agent, &root.join("home"));
        }
        let cx = Context { env: &env, load };
        let run = |agent: Agent, bytes: &[u8], cx: &Context<'_>, _via: Via| {
            let mut event: Value = serde_json::from_slice(bytes).unwrap();
            event["cwd"] = Value::String(project.clone());
            run(agent, event.to_string().as_bytes(), cx, via)
        };
        let mut prompt = event("user_prompt_submit.json");
        prompt["prompt"] = "Why can't I index a Rust String with s[0], and how do I iterate over its characters?".into();
        if agent == Agent::Gemini {
            prompt["hook_event_name"] = "BeforeAgent".into();
        }
        run(agent, prompt.to_string().as_bytes(), &cx, Via::Settings);
        let mut fetch = event("post_tool_use.mcp_fetch.json");
        match agent {
            Agent::Gemini => {
                let text = fetch["tool_response"][0]["text"].clone();
                fetch["hook_event_name"] = "AfterTool".into();
                fetch["tool_name"] = "mcp_fetch_fetch".into();
                fetch["tool_response"] = serde_json::json!({"llmContent": [{"text": text}]});
            }
            Agent::Codex => {
                let content = fetch["tool_response"].clone();
                fetch["tool_response"] = serde_json::json!({"content": content});
            }
            _ => {}
        }
        run(agent, fetch.to_string().as_bytes(), &cx, Via::Settings)
    }

    /// Registers toolprune's MCP server in `agent`'s user settings under
    /// `home` (kept when the file is there: a test's own settings).
    fn register_omitted_server(agent: Agent, home: &Path) {
        let (file, text) = match agent {
            Agent::ClaudeCode => (".claude.json", r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"]}}}"#),
            Agent::Gemini => (".gemini/settings.json", r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"], "trust": true}}}"#),
            Agent::Cursor => (".cursor/mcp.json", r#"{"mcpServers": {"toolprune": {"command": "toolprune", "args": ["mcp"]}}}"#),
            Agent::Codex => (".codex/config.toml", "[mcp_servers.toolprune]\ncommand = \"toolprune\"\nargs = [\"mcp\"]\n"),
        };
        let path = home.join(file);
        if !path.exists() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    #[test]
    fn the_built_in_component_prunes() {
        let load = || Pruner::shared().cloned().map_err(|e| e.to_string());
        assert!(fetch_with(Agent::ClaudeCode, &load).contains("updatedMCPToolOutput"));
        assert!(fetch_with(Agent::Codex, &load).starts_with(r#"{"decision":"block","reason":"[Omitted by relevance:"#));
    }

    #[test]
    fn a_missing_component_is_the_agents_no_change() {
        let load = || Err("no component".to_string());
        assert_eq!(fetch_with(Agent::ClaudeCode, &load), "");
        assert_eq!(fetch_with(Agent::Gemini, &load), "{}");
        assert_eq!(fetch_with(Agent::Codex, &load), "", "never a block");
    }

    #[test]
    fn a_trapping_component_is_the_agents_no_change() {
        for limits in [LimitsOverride { fuel: Some(10_000), ..Default::default() }, LimitsOverride { memory_bytes: Some(1 << 16), ..Default::default() }] {
            let load = move || Pruner::load(LoadOptions { limits, ..LoadOptions::default() }).map_err(|e| e.to_string());
            assert_eq!(fetch_with(Agent::ClaudeCode, &load), "", "{limits:?}");
            assert_eq!(fetch_with(Agent::Gemini, &load), "{}", "{limits:?}");
            assert_eq!(fetch_with(Agent::Codex, &load), "", "{limits:?}: never a block");
        }
    }

    #[test]
    fn a_panic_inside_the_handler_is_the_agents_no_change() {
        let load = || -> Result<Pruner, String> { panic!("boom") };
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(fetch_with(Agent::ClaudeCode, &load), "");
        assert_eq!(fetch_with(Agent::Gemini, &load), "{}");
        assert_eq!(fetch_with(Agent::Codex, &load), "");
        let _ = std::panic::take_hook();
    }

    fn paths(dir: &Path) -> Paths {
        Paths {
            home: dir.join("home"),
            project: dir.join("project"),
            config_dir: dir.join("home/.config/toolprune"),
            binary: PathBuf::from("/opt/tool prune/bin/toolprune"),
            codex_home: dir.join("home/.codex"),
        }
    }

    #[test]
    fn the_installer_writes_exactly_the_hook_elements_a_plugin_would_carry() {
        // One definition (issue 23 §4): every hook edit of the plan is an
        // element of the adapter's hooks file for the same command, and every
        // element of that file is in the plan.
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let globs = vec!["mcp__*__fetch".to_string(), "WebFetch".to_string()];
        for agent in Agent::ALL {
            let adapter = agent.adapter();
            let command = hook_command(adapter, &paths.binary);
            let file = adapter.hooks_file(&adapter.hooks(&globs, Via::Settings), &command);
            let mut expected: Vec<(String, Value)> = Vec::new();
            for (event, elements) in file["hooks"].as_object().unwrap() {
                for element in elements.as_array().unwrap() {
                    expected.push((event.clone(), element.clone()));
                }
            }
            let mut planned: Vec<(String, Value)> = Vec::new();
            for plan in adapter.plan(Scope::User, &paths, &globs).unwrap() {
                for edit in plan.edits {
                    if let Edit::Append { path, value } = edit {
                        if path.len() == 2 && path[0] == "hooks" {
                            planned.push((path[1].clone(), value));
                        }
                    }
                }
            }
            expected.sort_by(|a, b| a.0.cmp(&b.0));
            planned.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(planned, expected, "{}", adapter.name());
            assert!(!expected.is_empty());
        }
    }

    fn shared() -> Result<Pruner, String> {
        Pruner::shared().cloned().map_err(|e| e.to_string())
    }

    #[test]
    fn a_plugins_hook_prunes_alone_and_stands_back_when_the_settings_hooks_are_installed_too() {
        // A result is pruned once (issue 23 §4): the settings' hook prunes,
        // the plugin's answers "no change".
        for agent in [Agent::ClaudeCode, Agent::Codex] {
            let tmp = tempfile::tempdir().unwrap();
            let pruned = fetch_in(agent, &shared, tmp.path(), Via::Plugin);
            assert!(pruned.contains("[Omitted by relevance:"), "{agent:?} plugin alone: {pruned}");
            let mut paths = paths(tmp.path());
            paths.binary = std::env::current_exe().unwrap();
            install(agent, Scope::User, &paths, &["mcp__*__fetch".to_string()], false).unwrap();
            assert!(settings_hooks_installed(agent.adapter(), &paths));
            let tmp2 = tempfile::tempdir().unwrap();
            std::fs::rename(tmp.path().join("home"), tmp2.path().join("home")).unwrap();
            assert_eq!(fetch_in(agent, &shared, tmp2.path(), Via::Plugin), "", "{agent:?}: the plugin stands back");
            assert!(fetch_in(agent, &shared, tmp2.path(), Via::Settings).contains("[Omitted by relevance:"), "{agent:?}: the settings' hook prunes");
        }
    }

    #[test]
    fn the_claude_code_plugin_is_inert_when_github_copilot_cli_runs_its_hooks() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let store_text = store.to_string_lossy().into_owned();
        let env = move |name: &str| match name {
            "TOOLPRUNE_STORE_DIR" => Some(store_text.clone()),
            "COPILOT_PLUGIN_ROOT" => Some("/x/plugins/toolprune".into()),
            _ => None,
        };
        let cx = Context { env: &env, load: &shared };
        let mut prompt = event("user_prompt_submit.json");
        prompt["prompt"] = "Why can't I index a Rust String with s[0]?".into();
        assert_eq!(run(Agent::ClaudeCode, prompt.to_string().as_bytes(), &cx, Via::Plugin), "");
        assert_eq!(run(Agent::ClaudeCode, event("post_tool_use.mcp_fetch.json").to_string().as_bytes(), &cx, Via::Plugin), "");
        assert!(!store.exists() || std::fs::read_dir(&store).unwrap().next().is_none(), "nothing stored");
    }

    #[test]
    fn the_plugins_own_omitted_tool_is_still_answered_when_the_settings_hooks_are_installed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut paths = paths(tmp.path());
        paths.binary = std::env::current_exe().unwrap();
        install(Agent::ClaudeCode, Scope::User, &paths, &["mcp__*__fetch".to_string()], false).unwrap();
        let store = tmp.path().join("store").to_string_lossy().into_owned();
        let home = tmp.path().join("home").to_string_lossy().into_owned();
        let env = move |name: &str| match name {
            "TOOLPRUNE_STORE_DIR" => Some(store.clone()),
            "HOME" => Some(home.clone()),
            _ => None,
        };
        let cx = Context { env: &env, load: &shared };
        let mut pre = json!({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": tmp.path().join("project"), "tool_input": {"id": "P1", "from": 0, "to": 0}});
        pre["tool_name"] = claude_code::plugin_omitted_tool().into();
        assert!(run(Agent::ClaudeCode, pre.to_string().as_bytes(), &cx, Via::Plugin).contains("updatedInput"), "its own tool");
        pre["tool_name"] = claude_code::omitted_tool().into();
        assert_eq!(run(Agent::ClaudeCode, pre.to_string().as_bytes(), &cx, Via::Plugin), "", "the settings' tool is the settings hook's");
    }

    #[test]
    fn gemini_clis_extension_prunes_only_where_a_user_policy_allows_its_omitted_tool() {
        // A tail call to a tool Gemini CLI refuses would lose the result:
        // without `mcp.allowed` the extension passes it unchanged.
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.gemini")).unwrap();
        assert_eq!(fetch_in(Agent::Gemini, &shared, tmp.path(), Via::Plugin), "{}");
        let log = std::fs::read_to_string(tmp.path().join("store/toolprune.log")).unwrap();
        assert!(log.contains("reason=omitted_not_allowed"), "{log}");
        let mut paths = paths(tmp.path());
        paths.home = tmp.path().join("home");
        assert!(Agent::Gemini.adapter().plugin_checks(&paths).iter().any(|c| !c.ok && c.what.contains(gemini::POLICY)));
        std::fs::create_dir_all(tmp.path().join("home/.gemini/policies")).unwrap();
        std::fs::write(tmp.path().join("home/.gemini/policies").join(gemini::POLICY_FILE), gemini::POLICY).unwrap();
        let tmp2 = tempfile::tempdir().unwrap();
        std::fs::rename(tmp.path().join("home"), tmp2.path().join("home")).unwrap();
        let answer = fetch_in(Agent::Gemini, &shared, tmp2.path(), Via::Plugin);
        let log = std::fs::read_to_string(tmp2.path().join("store/toolprune.log")).unwrap_or_default();
        assert!(answer.contains("tailToolCallRequest"), "{answer}: {log}");
        paths.home = tmp2.path().join("home");
        assert!(Agent::Gemini.adapter().plugin_checks(&paths).iter().all(|c| c.ok));
    }

    #[test]
    fn every_agent_has_a_distinct_label_and_the_cli_names_it_so() {
        use clap::ValueEnum as _;
        let mut labels: Vec<&str> = Agent::ALL.iter().map(|a| a.label()).collect();
        for agent in Agent::ALL {
            assert_eq!(Agent::from_str(agent.label(), false), Ok(agent), "`toolprune hook {}`", agent.label());
        }
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), Agent::ALL.len());
    }
}
