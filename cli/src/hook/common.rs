//! What every agent's adapter shares: the event, the store, the
//! configuration and scorer, pruning one text, answering `omitted`, and the
//! log file. Nothing here knows an agent: an adapter (the `agents` module)
//! makes a [`Hook`] with its label and the event's conversation id.

use std::cell::OnceCell;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use toolprune::types::{Config, Outcome};
use toolprune::{ConversationOptions, JevScorer, LogSink, MemoryStore, Pruner, ResultStore, Scoring, ToolResult};

use super::Context;
use crate::logfile::LogFile;
use crate::store::{Bounds, Root, Session};

pub use crate::install::SERVER_NAME;

/// Stdin beyond this many bytes is not parsed (the event is answered "no
/// change" after the rest is drained: `super::read_event`).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Why a hook gave the "no change" answer: one word for the log line
/// (`not_prunable`, `tool_failed`, `store`, `config`, `component`, an
/// outcome such as `no_basis`, …). Never text from the event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass(pub String);

impl Pass {
    pub fn new(reason: &str) -> Self {
        Pass(reason.to_string())
    }
}

/// A handler's answer: the JSON object to print, `Ok(None)` for the agent's
/// plain "no change", or why it passed.
pub type Answer = Result<Option<Value>, Pass>;

/// The configuration a hook prunes with.
pub struct Setup {
    pub pruner: Pruner,
    pub config: Config,
    pub scoring: Scoring,
    pub jev_model: Option<String>,
}

/// A text the hook pruned (outcome `ok`): the body for the model, its id,
/// and the session that holds its record.
pub struct Pruned {
    pub body: String,
    pub id: String,
    pub session: Session,
}

/// How the running hook was registered (issue 23): by `toolprune install`
/// in the agent's settings, or by the agent's own plugin command (`toolprune
/// hook AGENT --plugin`, the command a plugin's hooks file holds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Via {
    /// `toolprune install AGENT` wrote it into the agent's settings.
    #[default]
    Settings,
    /// A toolprune plugin (extension) installed by the agent's own command.
    Plugin,
}

/// One hook run: the agent's label, its event, and what it needs lazily.
pub struct Hook<'a> {
    /// The agent's label (`claude-code`, `codex`, …): the store's session
    /// folders, the log lines.
    pub agent: &'static str,
    pub cx: &'a Context<'a>,
    pub event: &'a Value,
    /// Settings or plugin ([`Via`]; set by the dispatcher after [`Hook::new`]).
    pub via: Via,
    /// Whether the model can call `omitted` in this session (set by the
    /// dispatcher from the agent's adapter): [`Hook::prune`] asks it once
    /// the cheap gates passed, and passes the result unchanged when it
    /// cannot (its reason word). None: not asked (tests of the runtime).
    pub way_back: Option<&'a dyn Fn() -> Result<(), Pass>>,
    /// The conversation's id, as the adapter read it from the event.
    conversation: Option<&'a str>,
    root: OnceCell<Option<Root>>,
    setup: OnceCell<Result<Setup, Pass>>,
    started: Instant,
}

/// A word safe for a log field: `[A-Za-z0-9_]`, at most 40 characters.
fn word(text: &str) -> String {
    let w: String = text.chars().take(40).map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if w.is_empty() { "-".to_string() } else { w }
}

pub use crate::proxy::mcp_tool_names;

/// The names a hook knows for an event's tool `tool`: `tool` itself first
/// (the log label), then, when its MCP server is known (`server`: the
/// event's own field) or `tool` reads `mcp__SERVER__TOOL`, every agent's
/// form of that server's tool ([`mcp_tool_names`]). No duplicates.
pub fn tool_names(tool: &str, server: Option<&str>) -> Vec<String> {
    let mut names = vec![tool.to_string()];
    let split = match server.filter(|s| !s.is_empty()) {
        Some(s) => {
            let bare = [format!("mcp__{s}__"), format!("mcp_{s}_"), format!("{s}__")]
                .iter()
                .find_map(|prefix| tool.strip_prefix(prefix.as_str()))
                .unwrap_or(tool);
            Some((s, bare))
        }
        None => tool.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")),
    };
    if let Some((server, bare)) = split.filter(|(_, bare)| !bare.is_empty()) {
        for name in mcp_tool_names(server, bare) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

impl<'a> Hook<'a> {
    /// A run for the agent labelled `agent` on `event`, whose conversation
    /// id is `conversation` (none: every store operation passes `no_session`).
    pub fn new(agent: &'static str, conversation: Option<&'a str>, cx: &'a Context<'a>, event: &'a Value) -> Self {
        Hook {
            agent,
            cx,
            event,
            via: Via::Settings,
            way_back: None,
            conversation,
            root: OnceCell::new(),
            setup: OnceCell::new(),
            started: Instant::now(),
        }
    }

    /// A string field of the event.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.event.get(key).and_then(Value::as_str)
    }

    /// `hook_event_name`.
    pub fn name(&self) -> &'a str {
        self.str("hook_event_name").unwrap_or("")
    }

    /// The conversation's id (as the adapter read it; blank is none).
    pub fn session_id(&self) -> Result<&'a str, Pass> {
        self.conversation.filter(|id| !id.trim().is_empty()).ok_or_else(|| Pass::new("no_session"))
    }

    /// The store's root (from the environment), if it can be used.
    pub fn root(&self) -> Result<&Root, Pass> {
        self.root.get_or_init(|| Root::from_env(self.cx.env).ok()).as_ref().ok_or_else(|| Pass::new("store"))
    }

    /// This conversation's session (created if missing).
    pub fn session(&self) -> Result<Session, Pass> {
        let id = self.session_id()?;
        self.root()?.session(self.agent, id).map_err(|_| Pass::new("store"))
    }

    /// The `omitted` MCP server's token for this conversation.
    pub fn token(&self) -> Result<String, Pass> {
        let id = self.session_id()?;
        self.root()?.token(self.agent, id).map_err(|_| Pass::new("store"))
    }

    /// The arguments for toolprune's `omitted` server, from the model's call
    /// (`tool_input`): its own, minus `body` (the model may not ask for a
    /// stored body), plus `session` = this conversation's token
    /// ([`Hook::token`]), so the server answers from this session only.
    pub fn omitted_input(&self) -> Result<Map<String, Value>, Pass> {
        let mut input = self.event.get("tool_input").and_then(Value::as_object).cloned().unwrap_or_default();
        input.remove("body");
        input.insert("session".to_string(), Value::String(self.token()?));
        Ok(input)
    }

    /// The store's log, its lines tagged with this conversation's session
    /// (when the event names one).
    pub fn log_file(&self) -> Result<LogFile, Pass> {
        let log = LogFile::new(self.root()?);
        Ok(match self.session_id() {
            Ok(id) => log.with_tag(&crate::store::tag_of(&Root::session_name(self.agent, id))),
            Err(_) => log,
        })
    }

    /// Writes one line to the store's log (nothing when there is no store).
    pub fn log(&self, line: &str) {
        if let Ok(log) = self.log_file() {
            log.line(line);
        }
    }

    /// The tool call's arguments as the event carries them (`tool_input`
    /// in every agent's post-tool event: an object, or Cursor's JSON text
    /// passed as it is), for the repeat gate (SPEC §2); none when absent.
    pub fn arguments(&self) -> Option<String> {
        match self.event.get("tool_input")? {
            Value::Null => None,
            Value::String(text) => Some(text.clone()),
            other => Some(other.to_string()),
        }
    }

    /// The prompt event: records the turn's request for this conversation,
    /// with the agent's working folder (`cwd`, else Cursor's first
    /// `workspace_roots`) and process id, so that `toolprune mcp-proxy`
    /// started by the same agent finds it (docs/mcp-proxy.md "Basis").
    pub fn record_request(&self, prompt: Option<&str>) -> Result<(), Pass> {
        let prompt = prompt.ok_or_else(|| Pass::new("no_prompt"))?;
        let cwd = self.str("cwd").or_else(|| {
            self.event.get("workspace_roots").and_then(Value::as_array).and_then(|r| r.first()).and_then(Value::as_str)
        });
        let agent = crate::proxy::basis::agent_pid();
        self.session()?.record_request_from(prompt, cwd, agent).map_err(|_| Pass::new("store"))
    }

    /// The session's end: drops its records and request, keeps its counter.
    /// Loads no component (fast: agents give this event little time).
    pub fn end_session(&self) -> Result<(), Pass> {
        let id = self.session_id()?;
        match self.root()?.existing_session(self.agent, id) {
            Ok(Some(session)) => session.end().map_err(|_| Pass::new("store")),
            Ok(None) => Ok(()),
            Err(_) => Err(Pass::new("store")),
        }
    }

    /// The component, the configuration (disabled → pass), and the scorer:
    /// Jev when its endpoint is complete and the token variable is set,
    /// else the offline scorer.
    pub fn setup(&self) -> Result<&Setup, Pass> {
        self.setup
            .get_or_init(|| {
                let pruner = (self.cx.load)().map_err(|_| Pass::new("component"))?;
                let config = pruner.configuration(self.cx.env).map_err(|_| Pass::new("config"))?;
                if !config.enabled {
                    return Err(Pass::new("disabled"));
                }
                let jev_ready = config.jev.is_ok() && (self.cx.env)(&config.token_variable).is_some_and(|t| !t.is_empty());
                let (scoring, jev_model) = if jev_ready {
                    match JevScorer::from_env(&pruner, self.cx.env) {
                        Ok((scorer, model)) => (Scoring::host(scorer), model),
                        Err(_) => (Scoring::Offline, None),
                    }
                } else {
                    (Scoring::Offline, None)
                };
                Ok(Setup { pruner, config, scoring, jev_model })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the configuration declares the tool known by `names` (the
    /// event's name first, then every other name the adapter knows for it:
    /// [`tool_names`]) prunable: the guest's `settings.is-tool-prunable`
    /// (globs, and never readers, shells, editors or `omitted` under any of
    /// the names), and not behind `toolprune mcp-proxy`.
    pub fn prunable(&self, names: &[String]) -> Result<bool, Pass> {
        let setup = self.setup()?;
        Ok(setup.pruner.is_tool_prunable(names, &setup.config.prunable) && !names.iter().any(|n| self.behind_proxy(n)))
    }

    /// Whether `tool` belongs to an MCP server that `toolprune install
    /// --wrap` put behind `toolprune mcp-proxy` (the manifest's wrapped
    /// servers): the proxy prunes its results already, and a second pruning
    /// would score the markers away. The server is the event's
    /// `mcp_server.name` (Claude Code) or `mcp_context.server_name` (Gemini
    /// CLI), else the tool name's `mcp__SERVER__` / `mcp_SERVER_` prefix.
    fn behind_proxy(&self, tool: &str) -> bool {
        let env = self.cx.env;
        let config = env("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".config")));
        let Some(config) = config else { return false };
        let servers = crate::install::wrapped_servers(&config.join("toolprune").join("installed.json"));
        if servers.is_empty() {
            return false;
        }
        let named = self
            .event
            .get("mcp_server")
            .and_then(|m| m.get("name"))
            .or_else(|| self.event.get("mcp_context").and_then(|m| m.get("server_name")))
            .and_then(Value::as_str);
        servers.iter().any(|s| named == Some(s.as_str()) || tool.starts_with(&format!("mcp__{s}__")) || tool.starts_with(&format!("mcp_{s}_")))
    }

    /// Prunes one tool result's text for this conversation (SPEC §2–§12):
    /// the basis is the recorded request, else `fallback` (the agent's
    /// transcript); the id comes from the session's counter and the record
    /// goes to the session. Any outcome but `ok` passes (its name is the
    /// reason). Sweeps sessions older than the configured age afterwards.
    ///
    /// `names`: every name the adapter knows for the tool ([`tool_names`]);
    /// the first is the log line's `name=`.
    pub fn prune(&self, names: &[String], text: String, fallback: &dyn Fn() -> Option<String>) -> Result<Pruned, Pass> {
        let tool = names.first().map_or("", String::as_str);
        if !self.prunable(names)? {
            return Err(Pass::new("not_prunable"));
        }
        // No marker without a way back (SPEC §10).
        if let Some(way_back) = self.way_back {
            way_back()?;
        }
        let setup = self.setup()?;
        let root = self.root()?;
        let session = self.session()?.with_bounds(Bounds::from(&setup.config.store));
        let request = match session.request() {
            Ok(Some(recorded)) => recorded.request,
            Ok(None) => fallback().unwrap_or_default(),
            Err(_) => return Err(Pass::new("store")),
        };
        let conversation = setup
            .pruner
            .conversation(ConversationOptions {
                enabled: true,
                threshold: Some(setup.config.threshold.to_string()),
                lang: setup.config.lang,
                agent: self.agent.to_string(),
                scoring: Some(setup.scoring.clone()),
                jev_model: setup.jev_model.clone(),
                // The line is written below, with the stored result's id.
                log: Arc::new(|_: &str| {}),
                store: Some(Arc::new(session.clone())),
                ..ConversationOptions::default()
            })
            .map_err(|_| Pass::new("config"))?;
        // The arguments feed the repeat gate: the same call again after a pruned result passes whole.
        let result = conversation
            .turn(request)
            .on_tool_result(ToolResult { arguments: self.arguments(), ..ToolResult::prunable(tool, text) });
        LogFile::new(root).for_session(&session).prune_result(&result);
        let _ = root.sweep(Duration::from_secs(setup.config.store.max_age_s), false);
        match (result.outcome, &result.id) {
            (Outcome::Ok, Some(id)) if !result.unchanged() => Ok(Pruned { body: result.body.to_string(), id: id.clone(), session }),
            // The reason is the gate for a skipped result (`repeated`), else the outcome.
            (outcome, _) => Err(Pass(result.gate.as_ref().map_or_else(|| toolprune::types::wit_name(&outcome), toolprune::types::wit_name))),
        }
    }

    /// Answers an `omitted` call from `store` (none: an empty store, so the
    /// guest answers `not_found`): the text for the model, whatever the
    /// outcome. Writes the `tool omitted:` line.
    pub fn omitted(&self, store: Option<Arc<dyn ResultStore>>, arguments: &str) -> Result<String, Pass> {
        let setup = self.setup()?;
        answer_omitted(&setup.pruner, &setup.config, self.agent, store, arguments, Arc::new(self.log_file()?))
            .ok_or_else(|| Pass::new("config"))
    }

    /// Writes the hook's own log line: the event, whether it answered, why
    /// not, and its wall time. Counts and words only.
    pub fn finish(&self, answer: &Answer) {
        let ms = self.started.elapsed().as_millis();
        let event = word(self.name());
        let line = match answer {
            Ok(Some(_)) => format!("hook: agent={} event={event} answer=replace ms={ms}", self.agent),
            Ok(None) => format!("hook: agent={} event={event} answer=none ms={ms}", self.agent),
            Err(Pass(reason)) => {
                format!("hook: agent={} event={event} answer=pass reason={} ms={ms}", self.agent, word(reason))
            }
        };
        // Events answered with a plain "no change" (prompts, session ends, other tools) are not logged.
        if !matches!(answer, Ok(None)) {
            self.log(&line);
        }
    }
}

/// How much of a transcript's end [`transcript_tail`] reads: 8 MiB.
pub const TRANSCRIPT_TAIL: u64 = 8 << 20;

/// The last [`TRANSCRIPT_TAIL`] bytes of an agent's transcript at `path`
/// (lossy UTF-8, without a first partial line): where the adapters look for
/// the request when the prompt hook did not record one (installed
/// mid-session). Only a regular file is read (a FIFO or a device would block
/// or never end), and only its tail: the last user message is near the end,
/// and a hook's memory stays bounded whatever the file's size.
pub fn transcript_tail(path: &str) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    // Checked before opening: opening a FIFO blocks until a writer comes.
    let len = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
    let mut file = std::fs::File::open(path).ok()?;
    let start = len.saturating_sub(TRANSCRIPT_TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(TRANSCRIPT_TAIL).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    // A tail that starts mid-line drops that partial line.
    Some(if start > 0 { text.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string()) } else { text })
}

/// The guest's answer to an `omitted` call (`arguments`: the JSON object
/// text) from `store`, in the configured language; none when the
/// conversation cannot be made. Shared by the Cursor hook and `toolprune mcp`.
pub fn answer_omitted(
    pruner: &Pruner,
    config: &Config,
    agent: &str,
    store: Option<Arc<dyn ResultStore>>,
    arguments: &str,
    log: Arc<dyn LogSink>,
) -> Option<String> {
    let store = store.unwrap_or_else(|| Arc::new(MemoryStore::new(1, 1)));
    let conversation = pruner
        .conversation(ConversationOptions {
            enabled: true,
            lang: config.lang,
            agent: agent.to_string(),
            log,
            store: Some(store),
            ..ConversationOptions::default()
        })
        .ok()?;
    Some(conversation.omitted(arguments).text)
}

/// Whether `tool` is toolprune's own `omitted` as an agent names it:
/// `mcp__toolprune__omitted` (Claude Code), `mcp_toolprune_omitted` (Gemini
/// CLI), `omitted` / `MCP:omitted` / `MCP:toolprune:omitted` (Cursor);
/// from a plugin's server (`plugin:toolprune:toolprune` in Claude Code):
/// `mcp__plugin_toolprune_toolprune__omitted`.
pub fn is_our_omitted(tool: &str) -> bool {
    let tool = tool.trim();
    let bare = tool.strip_prefix("MCP:").unwrap_or(tool);
    [
        format!("mcp__{SERVER_NAME}__omitted"),
        format!("mcp__plugin_{SERVER_NAME}_{SERVER_NAME}__omitted"),
        format!("mcp_{SERVER_NAME}_omitted"),
        format!("{SERVER_NAME}:omitted"),
        "omitted".to_string(),
    ]
    .iter()
    .any(|name| name == bare)
}

/// The text blocks of an MCP content list, joined as one result: their
/// texts with `\n\n` between (one block: its text, byte for byte). None when
/// there is no text block.
pub fn joined_text(blocks: &[Value]) -> Option<String> {
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// The content list with the pruned `body` in place of the text blocks: the
/// first text block keeps its other fields and takes the body, the other
/// text blocks go (their text is in the body), every other block (images,
/// resources) stays where it was, untouched.
pub fn replace_text(blocks: &[Value], body: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut placed = false;
    for block in blocks {
        let is_text = block.get("type").and_then(Value::as_str) == Some("text") && block.get("text").is_some_and(Value::is_string);
        if !is_text {
            out.push(block.clone());
        } else if !placed {
            let mut first = block.clone();
            first["text"] = Value::String(body.to_string());
            out.push(first);
            placed = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_blocks_are_joined_and_replaced_in_place_of_the_first() {
        let blocks = vec![
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "text", "text": "one", "annotations": {"priority": 1}}),
            json!({"type": "text", "text": "two"}),
            json!({"type": "resource", "resource": {"uri": "file:///x"}}),
        ];
        assert_eq!(joined_text(&blocks).as_deref(), Some("one\n\ntwo"));
        let out = replace_text(&blocks, "BODY");
        assert_eq!(
            out,
            vec![
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
                json!({"type": "text", "text": "BODY", "annotations": {"priority": 1}}),
                json!({"type": "resource", "resource": {"uri": "file:///x"}}),
            ]
        );
        assert_eq!(joined_text(&[json!({"type": "image", "data": "x"})]), None);
    }

    #[test]
    fn our_omitted_is_recognised_in_every_agents_naming_and_nothing_else() {
        for name in ["mcp__toolprune__omitted", "mcp__plugin_toolprune_toolprune__omitted", "mcp_toolprune_omitted", "omitted", "MCP:omitted", "MCP:toolprune:omitted"] {
            assert!(is_our_omitted(name), "{name}");
        }
        for name in ["mcp__other__omitted", "mcp__toolprune__fetch", "omitted_x", "WebFetch", ""] {
            assert!(!is_our_omitted(name), "{name}");
        }
    }

    #[test]
    fn log_words_carry_no_text() {
        assert_eq!(word("PostToolUse"), "PostToolUse");
        assert_eq!(word("a b=c\nsecret"), "a_b_c_secret");
        assert_eq!(word(""), "-");
        assert_eq!(word(&"x".repeat(100)).len(), 40);
    }
}
