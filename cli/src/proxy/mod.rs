//! `toolprune mcp-proxy`: wrap one MCP server so that any MCP client gets
//! pruned results of prunable tools and the `omitted` tool (SPEC §10, §15).
//!
//! ```text
//! toolprune mcp-proxy [--name NAME] [--basis hook|argument|none] -- COMMAND [ARGS…]
//! toolprune mcp-proxy [--name NAME] [--basis …] --url URL [--header 'Name: value']…
//! ```
//!
//! The client starts the proxy instead of the server; the proxy starts the
//! server (stdio) or connects to it (Streamable HTTP, `--url`) and forwards
//! every JSON-RPC message both ways **as the peer wrote it** (stdio: line by
//! line, byte for byte): initialize / `server/discover`, resources, prompts,
//! completions, notifications, progress, logging, cancellation, pings,
//! server-to-client requests, methods it does not know. It changes exactly
//! three things ([`message`] has the splices):
//!
//! - a `tools/list` result: `omitted` is appended (on the last page, when a
//!   listed tool is prunable, pruning is on and the server has no `omitted`
//!   of its own); with basis `argument`, each prunable tool's schema gains
//!   the guest's optional request argument;
//! - a `tools/call` result of a prunable tool: its text blocks are pruned as
//!   one tool result by the library (`toolprune::Conversation`, one for the
//!   proxy's life); `isError` results, other blocks, `structuredContent` and
//!   `_meta` pass untouched; the request argument is removed before the
//!   call goes upstream. Only once the client's last `tools/list` carried
//!   the proxy's `omitted`: before any listing, or when the server lists an
//!   `omitted` of its own, the model has no way back, so nothing is pruned;
//! - a `tools/call` of `omitted`: answered by the proxy from its store.
//!
//! Fail-open: any proxy-side failure (a trap, the scorer, a timeout, a
//! panic) forwards the upstream's result unchanged. The upstream exiting
//! ends the proxy with its exit status after every answer it gave was
//! delivered; the client closing stdin closes the upstream's.

pub mod basis;
pub mod http;
pub mod ids;
pub mod message;
pub mod wrap;

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use clap::{Args, ValueEnum};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use toolprune::types::Dialect;
use toolprune::{CancelToken, Conversation, ConversationOptions, Pruner, Scoring, ToolResult};

use crate::logfile::LogFile;

use self::basis::{HookRecords, Whoami};
use self::message::{IdKey, Line};

/// Every name agents give tool `bare` of MCP server `server`: the bare
/// name, `mcp__SERVER__TOOL` (Claude Code, Codex CLI), `mcp_SERVER_TOOL`
/// and `SERVER__TOOL` (Gemini CLI). The proxy and the hooks check
/// prunability on all of them (SPEC §2).
pub fn mcp_tool_names(server: &str, bare: &str) -> Vec<String> {
    vec![bare.to_string(), format!("mcp__{server}__{bare}"), format!("mcp_{server}_{bare}"), format!("{server}__{bare}")]
}

/// Where the basis comes from (SPEC §15; config `[proxy] basis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BasisMode {
    /// The prompt hook's record of the user's request only.
    Hook,
    /// The hook's record, else the request the model writes in an added argument.
    Argument,
    /// No basis: every prunable result is `no_basis` (passes unchanged).
    None,
}

impl BasisMode {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "hook" => Some(BasisMode::Hook),
            "argument" => Some(BasisMode::Argument),
            "none" => Some(BasisMode::None),
            _ => None,
        }
    }
}

/// `toolprune mcp-proxy` arguments.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// The server's name in the client's configuration: tool-name globs are
    /// also tried as `mcp__NAME__TOOL` and `mcp_NAME_TOOL`, the way the hooks
    /// see the tool. Also the log lines' `agent=` label.
    #[arg(long)]
    pub name: Option<String>,
    /// Where the user's request comes from (default: the config's `[proxy]
    /// basis`, else `hook`).
    #[arg(long, value_enum)]
    pub basis: Option<BasisMode>,
    /// A Streamable HTTP server to connect to instead of starting COMMAND.
    #[arg(long, conflicts_with = "command")]
    pub url: Option<String>,
    /// An HTTP header for `--url` (`Name: value`), repeatable.
    #[arg(long = "header", requires = "url")]
    pub headers: Vec<String>,
    /// The server to start and its arguments (after `--`).
    #[arg(last = true, required_unless_present = "url")]
    pub command: Vec<String>,
}

/// How long the proxy waits for one result's pruning beyond the guest's
/// 20 s scoring deadline before it forwards the result unchanged.
const PRUNE_GRACE: Duration = Duration::from_secs(10);
/// The scoring deadline (SPEC §11), for the proxy's own timeout.
const SCORING_DEADLINE: Duration = Duration::from_secs(20);

/// What the proxy prunes with, when pruning is on.
pub struct Pruning {
    pruner: Pruner,
    conversation: Conversation,
    basis: BasisMode,
    hooks: HookRecords,
    me: Whoami,
    globs: Vec<String>,
    name: Option<String>,
    /// The `omitted` tool, MCP shape, JSON text (the guest's).
    omitted_tool: String,
    /// The request argument: name and property schema (JSON text), basis `argument` only.
    argument: Option<(String, String)>,
    /// How long one result may take before it is forwarded unchanged.
    timeout: Duration,
    /// The store root's log file (crate::logfile), when the root is usable;
    /// the lines also go to stderr, as before.
    log: Option<LogFile>,
}

enum Pending {
    /// A `tools/list` page; `first`: the request had no cursor.
    List { first: bool },
    /// A `tools/call` of a prunable tool: its name, the basis, and the
    /// call's arguments as the server got them (without the added basis
    /// argument): the repeat gate's (SPEC §2).
    Call { tool: String, basis: Option<String>, arguments: Option<String> },
}

/// The proxy's state shared by both directions.
pub struct Core {
    /// Set once [`setup`] finished (it loads the component: seconds on a
    /// cold cache); until then only lines about tools wait for it.
    pruning: OnceLock<Option<Pruning>>,
    ready: tokio::sync::watch::Sender<bool>,
    pending: Mutex<HashMap<IdKey, Pending>>,
    prunable: Mutex<HashMap<String, bool>>,
    /// Tools whose own schema declares the request argument's name.
    colliding: Mutex<HashSet<String>>,
    /// The current listing (since its first page) named a prunable tool.
    listing_prunable: AtomicBool,
    /// The upstream lists an `omitted` tool of its own: ours stays out.
    upstream_omitted: AtomicBool,
    /// The client's last complete `tools/list` carried the proxy's
    /// `omitted`: only then is a result pruned (SPEC §10: no marker without
    /// a way back). Unset until a listing ends with it, and again when a
    /// listing ends without it (the upstream has an `omitted` of its own, or
    /// no prunable tool is listed any more).
    omitted_listed: AtomicBool,
    /// Prunable calls from their request until their answer is delivered:
    /// a client's `notifications/cancelled` (or the upstream going away)
    /// stops their scoring.
    cancels: Mutex<HashMap<IdKey, CancelToken>>,
    /// Results being pruned right now.
    pruning_now: AtomicUsize,
}

/// Writes lines to the client (stdout) or the upstream.
pub type Sender = mpsc::UnboundedSender<String>;

impl Core {
    /// A core whose pruning is not set up yet ([`Core::set_pruning`]).
    pub fn new() -> Arc<Self> {
        Arc::new(Core {
            pruning: OnceLock::new(),
            ready: tokio::sync::watch::Sender::new(false),
            pending: Mutex::new(HashMap::new()),
            prunable: Mutex::new(HashMap::new()),
            colliding: Mutex::new(HashSet::new()),
            listing_prunable: AtomicBool::new(false),
            upstream_omitted: AtomicBool::new(false),
            omitted_listed: AtomicBool::new(false),
            cancels: Mutex::new(HashMap::new()),
            pruning_now: AtomicUsize::new(0),
        })
    }

    /// Sets pruning up (or off, `None`); lines waiting for it go on.
    pub fn set_pruning(&self, pruning: Option<Pruning>) {
        let _ = self.pruning.set(pruning);
        self.ready.send_replace(true);
    }

    /// Pruning, once set up and on.
    fn pruning(&self) -> Option<&Pruning> {
        self.pruning.get().and_then(Option::as_ref)
    }

    /// Waits until pruning is set up, if `line` is about tools (a
    /// `tools/list` or `tools/call` request needs to know); any other line
    /// goes on at once (`initialize` is never held up by loading the component).
    pub async fn ready_for(&self, line: &str) {
        if self.pruning.get().is_some() || !line.contains("tools/") {
            return;
        }
        let mut ready = self.ready.subscribe();
        let _ = ready.wait_for(|r| *r).await;
    }

    fn is_prunable(&self, tool: &str) -> bool {
        let Some(p) = self.pruning() else { return false };
        if tool == "omitted" {
            return false;
        }
        let mut cache = self.prunable.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&known) = cache.get(tool) {
            return known;
        }
        // Every name a client may know the tool by: never prunable under
        // any of them wins (SPEC §2), so `read_file` of a server named
        // `fetch` stays exact although `mcp_fetch_*` matches it.
        let names = match &p.name {
            Some(server) => mcp_tool_names(server, tool),
            None => vec![tool.to_string()],
        };
        let answer = p.pruner.is_tool_prunable(&names, &p.globs);
        cache.insert(tool.to_string(), answer);
        answer
    }

    /// Handles one line from the client: forwards it (maybe edited) to the
    /// upstream, or answers it itself (`omitted`).
    pub fn from_client(self: &Arc<Self>, line: String, upstream: &Sender, client: &Sender) {
        let Some(pruning) = self.pruning() else {
            let _ = upstream.send(line);
            return;
        };
        match message::classify(&line) {
            Line::Request { id, raw_id, method, params } if method == "tools/call" => {
                let Some(call) = message::call_params(params) else {
                    let _ = upstream.send(line.clone());
                    return;
                };
                if call.name == "omitted" && !self.upstream_omitted.load(Ordering::SeqCst) {
                    let arguments = call.arguments.map_or("{}", |a| a.get()).to_string();
                    let modern = message::meta_is_modern(call.meta);
                    let raw_id = raw_id.get().to_string();
                    let conversation = pruning.conversation.clone();
                    let log = pruning.log.clone();
                    let client = client.clone();
                    tokio::task::spawn_blocking(move || {
                        let answer = conversation.omitted(&arguments);
                        if let Some(log) = &log {
                            log.omitted_answer(&answer);
                        }
                        let failed = matches!(answer.outcome_name().as_str(), "invalid" | "failed");
                        let content = vec![rmcp::model::ContentBlock::text(answer.text)];
                        let mut result = if failed {
                            rmcp::model::CallToolResult::error(content)
                        } else {
                            rmcp::model::CallToolResult::success(content)
                        };
                        if !modern {
                            result.result_type = None;
                        }
                        let line = match serde_json::to_string(&result) {
                            Ok(result) => message::response_line(&raw_id, &result),
                            Err(_) => message::error_line(&raw_id, -32603, "omitted: internal error"),
                        };
                        let _ = client.send(line);
                    });
                    return;
                }
                let tool = call.name.to_string();
                let prunable = self.is_prunable(&tool);
                // The basis argument is the proxy's, never the server's: it
                // is taken out of every prunable tool's call, also one that
                // is not pruned (a client calling from a schema it listed in
                // an earlier session, or while the server has its own
                // `omitted`).
                let mut forward = None;
                let mut written = None;
                if let (true, Some((argument, _)), Some(arguments)) = (prunable, &pruning.argument, call.arguments) {
                    let colliding = self.colliding.lock().unwrap_or_else(|e| e.into_inner()).contains(&tool);
                    if !colliding {
                        if let Some((stripped, value)) = message::strip_argument(&line, arguments, argument) {
                            forward = Some(stripped);
                            written = value;
                        }
                    }
                }
                // No way back, no pruning: the client was never shown our
                // `omitted` (no listing yet, or the upstream's own `omitted`
                // would take the model's read-back calls).
                if !self.omitted_listed.load(Ordering::SeqCst) || !prunable {
                    let _ = upstream.send(forward.unwrap_or_else(|| line.clone()));
                    return;
                }
                let hook = match pruning.basis {
                    BasisMode::None => None,
                    _ => pruning.hooks.lookup(&pruning.me).map(|(request, _)| request),
                };
                let basis = match pruning.basis {
                    BasisMode::None => None,
                    BasisMode::Hook => hook,
                    BasisMode::Argument => hook.or(written),
                };
                // The arguments the server gets: without the basis argument, which
                // the model rewrites each time and which is not the call's.
                let forwarded = forward.unwrap_or(line);
                let arguments = match message::classify(&forwarded) {
                    Line::Request { params, .. } => message::call_params(params).and_then(|c| c.arguments).map(|a| a.get().to_string()),
                    _ => None,
                };
                self.cancels.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), CancelToken::new());
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Pending::Call { tool, basis, arguments });
                let _ = upstream.send(forwarded);
            }
            Line::Request { id, method, params, .. } if method == "tools/list" => {
                let first = !message::has_cursor(params);
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Pending::List { first });
                let _ = upstream.send(line);
            }
            Line::Notification { method, params } if method == "notifications/cancelled" => {
                if let Some(id) = message::cancelled_request(params) {
                    if let Some(cancel) = self.cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
                        cancel.cancel();
                    }
                }
                let _ = upstream.send(line);
            }
            _ => {
                let _ = upstream.send(line);
            }
        }
    }

    /// Handles one line from the upstream: forwards it (maybe edited or
    /// pruned, possibly later) to the client.
    pub fn from_upstream(self: &Arc<Self>, line: String, client: &Sender) {
        let Some(pruning) = self.pruning() else {
            let _ = client.send(line);
            return;
        };
        let (pending, id) = match message::classify(&line) {
            Line::Response { id: Some(id), .. } => (self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id), Some(id)),
            _ => (None, None),
        };
        match pending {
            None => {
                let _ = client.send(line);
            }
            Some(Pending::List { first }) => {
                let edited = self.edit_list(pruning, &line, first);
                let _ = client.send(edited.unwrap_or(line));
            }
            Some(Pending::Call { tool, basis, arguments }) => {
                let Some(id) = id else { return };
                let cancel = self.cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&id).cloned().unwrap_or_default();
                self.pruning_now.fetch_add(1, Ordering::SeqCst);
                let core = self.clone();
                let client = client.clone();
                tokio::spawn(async move {
                    let conversation = core.pruning().map(|p| (p.conversation.clone(), p.log.clone()));
                    let timeout = core.pruning().map_or(SCORING_DEADLINE, |p| p.timeout);
                    let raw = line.clone();
                    let work = tokio::task::spawn_blocking({
                        let cancel = cancel.clone();
                        move || {
                            let call = Call { tool: &tool, arguments, basis: basis.as_deref().unwrap_or("") };
                            conversation.and_then(|(c, log)| prune_line(&c, log.as_ref(), &line, call, cancel))
                        }
                    });
                    let out = match tokio::time::timeout(timeout, work).await {
                        Ok(Ok(Some(pruned))) => pruned,
                        Ok(Ok(None)) => raw,
                        Ok(Err(_panic)) => {
                            eprintln!("toolprune mcp-proxy: pruning failed (panic); the result passes unchanged");
                            raw
                        }
                        Err(_elapsed) => {
                            cancel.cancel();
                            eprintln!("toolprune mcp-proxy: pruning took over {} s; the result passes unchanged", timeout.as_secs());
                            raw
                        }
                    };
                    let _ = client.send(out);
                    core.cancels.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                    core.pruning_now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        }
    }

    /// Cancels every pruning in progress (the upstream went away: deliver
    /// what it answered at once).
    pub fn cancel_all(&self) {
        for cancel in self.cancels.lock().unwrap_or_else(|e| e.into_inner()).values() {
            cancel.cancel();
        }
    }

    /// Whether results are still being pruned.
    pub fn busy(&self) -> bool {
        self.pruning_now.load(Ordering::SeqCst) > 0
    }

    fn edit_list(&self, pruning: &Pruning, line: &str, first: bool) -> Option<String> {
        let Line::Response { result: Some(result), .. } = message::classify(line) else { return None };
        let page = message::tools_page(result)?;
        if first {
            self.listing_prunable.store(false, Ordering::SeqCst);
            self.upstream_omitted.store(false, Ordering::SeqCst);
        }
        let mut edits = Vec::new();
        for tool in &page.tools {
            if tool.name == "omitted" {
                self.upstream_omitted.store(true, Ordering::SeqCst);
                continue;
            }
            if !self.is_prunable(&tool.name) {
                continue;
            }
            self.listing_prunable.store(true, Ordering::SeqCst);
            if let Some((argument, schema)) = &pruning.argument {
                let mut colliding = self.colliding.lock().unwrap_or_else(|e| e.into_inner());
                if message::schema_has_property(tool.input_schema, argument) {
                    colliding.insert(tool.name.to_string());
                } else {
                    colliding.remove(tool.name.as_ref());
                    if let Some(edit) = tool.input_schema.and_then(|s| message::add_property_edit(line, s, argument, schema)) {
                        edits.push(edit);
                    }
                }
            }
        }
        if !page.has_next {
            let ours = self.listing_prunable.load(Ordering::SeqCst) && !self.upstream_omitted.load(Ordering::SeqCst);
            if ours {
                edits.push(message::append_tool_edit(line, &page, &pruning.omitted_tool));
            }
            self.omitted_listed.store(ours, Ordering::SeqCst);
        }
        if edits.is_empty() {
            return None;
        }
        Some(message::splice(line, edits))
    }
}

/// The call a result answers: the tool, its arguments (without the basis
/// argument) and the basis.
struct Call<'a> {
    tool: &'a str,
    arguments: Option<String>,
    basis: &'a str,
}

/// Prunes a `tools/call` result line; none when nothing changes (not a
/// prunable shape, or any outcome but `ok`). Blocking (scores): run on
/// tokio's blocking pool, it prunes through the import path like every
/// other Rust door (the scorer runs inside `pruner.prune`, on this thread).
/// The log line goes to `log` too, with the stored id. The same call again
/// after a pruned result passes unpruned (the repeat gate, SPEC §2).
fn prune_line(conversation: &Conversation, log: Option<&LogFile>, line: &str, call: Call<'_>, cancel: CancelToken) -> Option<String> {
    let Line::Response { result: Some(result), .. } = message::classify(line) else { return None };
    let text = message::call_text(result)?;
    let turn = conversation.turn_with_cancel(call.basis, cancel);
    let pruned = turn.on_tool_result(ToolResult { arguments: call.arguments, ..ToolResult::prunable(call.tool, text.text.clone()) });
    if let Some(log) = log {
        log.prune_result(&pruned);
    }
    if pruned.outcome_name() != "ok" || pruned.unchanged() {
        return None;
    }
    message::replace_text(line, &text, &pruned.body)
}

/// Reads the configuration and sets pruning up; none (forward only) when
/// pruning is off or the component cannot be loaded (said on stderr).
pub fn setup(args: &ProxyArgs) -> Option<Pruning> {
    let env = |name: &str| std::env::var(name).ok();
    let pruner = match Pruner::shared() {
        Ok(p) => p.clone(),
        Err(e) => {
            eprintln!("toolprune mcp-proxy: the component did not load ({e}); forwarding only");
            return None;
        }
    };
    let config = match pruner.configuration(&env) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("toolprune mcp-proxy: configuration: {message}; pruning is off, forwarding only");
            return None;
        }
    };
    if !config.enabled {
        return None;
    }
    let (scoring, jev_model) = if config.jev.is_ok() && env(&config.token_variable).is_some() {
        match toolprune::JevScorer::from_env(&pruner, &env) {
            Ok((scorer, model)) => (Scoring::host(scorer), model),
            Err(problem) => {
                eprintln!("toolprune mcp-proxy: jev: {problem}; scoring offline");
                (Scoring::Offline, None)
            }
        }
    } else {
        (Scoring::Offline, None)
    };
    let basis = args.basis.or_else(|| BasisMode::parse(&config.proxy_basis)).unwrap_or(BasisMode::Hook);
    let root = basis::store_root(&env);
    let ids = ids::IdNumbers::new(root.as_deref());
    let store = Arc::new(ids::ProxyStore::new(ids, config.store.max_records, config.store.max_chars));
    let lang = config.lang;
    let agent = args.name.clone().map_or_else(|| "mcp-proxy".to_string(), |n| format!("mcp-proxy:{n}"));
    let conversation = pruner
        .conversation(ConversationOptions {
            enabled: true,
            threshold: Some(format!("{}", config.threshold)),
            lang,
            agent,
            scoring: Some(scoring),
            jev_model,
            store: Some(store),
            ..ConversationOptions::default()
        })
        .map_err(|e| eprintln!("toolprune mcp-proxy: {e}; forwarding only"))
        .ok()?;
    let omitted_tool = pruner.omitted_tool(Dialect::Mcp, lang).ok()?.to_string();
    let argument = match basis {
        BasisMode::Argument => {
            let spec = pruner.request_argument(lang).ok()?;
            Some((spec["name"].as_str()?.to_string(), spec["schema"].to_string()))
        }
        _ => None,
    };
    let timeout = SCORING_DEADLINE + PRUNE_GRACE;
    // The proxy's ids are unique per user (ids.rs), so its lines need no session tag.
    let log = root.as_deref().and_then(|dir| crate::store::Root::at(dir).ok()).map(|r| LogFile::new(&r));
    Some(Pruning {
        hooks: HookRecords::new(root, config.store.max_age_s),
        me: Whoami::current(),
        pruner,
        conversation,
        basis,
        globs: config.prunable,
        name: args.name.clone(),
        omitted_tool,
        argument,
        timeout,
        log,
    })
}

/// Runs [`setup`] on a blocking thread and hands the result to `core`.
pub fn start_setup(core: &Arc<Core>, args: &ProxyArgs) {
    let core = core.clone();
    let (name, basis) = (args.name.clone(), args.basis);
    tokio::task::spawn_blocking(move || {
        let pruning = std::panic::catch_unwind(|| setup(&ProxyArgs { name, basis, url: None, headers: Vec::new(), command: Vec::new() }));
        core.set_pruning(pruning.unwrap_or_else(|_| {
            eprintln!("toolprune mcp-proxy: setting pruning up failed (panic); forwarding only");
            None
        }));
    });
}

/// `toolprune mcp-proxy`: runs until the upstream is gone; exits with its status.
pub fn run(args: ProxyArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolprune mcp-proxy: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(async move {
        match &args.url {
            Some(url) => http::run(&args, url.clone()).await,
            None => run_stdio(&args).await,
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    ExitCode::from(code)
}

/// Writes every line of `rx` to `out` as it is (each carries its own line
/// end, or none: a peer's last line before its end of output), flushing
/// after each; stops at the first write error (the peer is gone).
pub async fn write_lines(mut rx: mpsc::UnboundedReceiver<String>, mut out: impl AsyncWrite + Unpin) -> bool {
    while let Some(line) = rx.recv().await {
        if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
            return false;
        }
    }
    let _ = out.shutdown().await;
    true
}

/// Reads one line as the peer wrote it: its bytes up to and including the
/// `\n` (so a `\r\n` stays one, and a blank line is a line), or, for the
/// last line before the end of input, up to the end with no line end added
/// (a direct connection would get that fragment as it is). None at the end
/// of input. Invalid UTF-8 is passed on lossily: JSON-RPC is UTF-8.
pub async fn next_line(reader: &mut (impl tokio::io::AsyncBufRead + Unpin), buf: &mut Vec<u8>) -> Option<String> {
    buf.clear();
    match reader.read_until(b'\n', buf).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(match String::from_utf8(std::mem::take(buf)) {
            Ok(line) => line,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }),
    }
}

async fn run_stdio(args: &ProxyArgs) -> u8 {
    let (program, rest) = match args.command.split_first() {
        Some(split) => split,
        None => {
            eprintln!("toolprune mcp-proxy: no server command (toolprune mcp-proxy -- COMMAND ARGS…)");
            return 2;
        }
    };
    let mut child = match tokio::process::Command::new(program)
        .args(rest)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("toolprune mcp-proxy: cannot start {program}: {e}");
            return 1;
        }
    };
    let child_pid = child.id();
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        eprintln!("toolprune mcp-proxy: the server's pipes are missing");
        return 1;
    };
    let core = Core::new();
    start_setup(&core, args);

    let (to_client, client_rx) = mpsc::unbounded_channel::<String>();
    let (to_upstream, upstream_rx) = mpsc::unbounded_channel::<String>();
    let client_writer = tokio::spawn(write_lines(client_rx, tokio::io::stdout()));
    let upstream_writer = tokio::spawn(write_lines(upstream_rx, child_in));

    // Client → upstream. On EOF the upstream's stdin is closed (its sender dropped).
    let client_reader = {
        let core = core.clone();
        let to_client = to_client.clone();
        tokio::spawn(async move {
            let mut stdin = BufReader::new(tokio::io::stdin());
            let mut buf = Vec::new();
            while let Some(line) = next_line(&mut stdin, &mut buf).await {
                core.ready_for(&line).await;
                core.from_client(line, &to_upstream, &to_client);
            }
        })
    };
    let client_gone = Arc::new(AtomicBool::new(false));
    let upstream_reader = {
        let core = core.clone();
        let to_client = to_client.clone();
        tokio::spawn(async move {
            let mut out = BufReader::new(child_out);
            let mut buf = Vec::new();
            while let Some(line) = next_line(&mut out, &mut buf).await {
                core.from_upstream(line, &to_client);
            }
        })
    };

    let mut signals = Signals::new();
    let mut client_reader = client_reader;
    let mut upstream_reader = upstream_reader;
    let mut client_done = false;
    let mut upstream_done = false;
    let mut status = None;
    let mut client_writer = client_writer;
    let mut writer_done = false;
    loop {
        tokio::select! {
            _ = &mut client_reader, if !client_done => {
                client_done = true;
                client_gone.store(true, Ordering::SeqCst);
                // MCP stdio shutdown: stdin closed, then SIGTERM, then SIGKILL.
                let pid = child_pid;
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    signal(pid, libc::SIGTERM);
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    signal(pid, libc::SIGKILL);
                });
            }
            _ = &mut upstream_reader, if !upstream_done => {
                upstream_done = true;
                core.cancel_all();
                break;
            }
            ok = &mut client_writer, if !writer_done => {
                writer_done = true;
                if !matches!(ok, Ok(true)) {
                    // The client is gone: stop the upstream.
                    signal(child_pid, libc::SIGTERM);
                }
            }
            s = child.wait(), if status.is_none() => {
                status = Some(s);
            }
            // The server exited but something it started keeps its stdout open:
            // after 2 s of silence the proxy ends anyway.
            _ = tokio::time::sleep(Duration::from_secs(2)), if status.is_some() => {
                core.cancel_all();
                break;
            }
            _ = signals.recv() => {
                signal(child_pid, libc::SIGTERM);
                let pid = child_pid;
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    signal(pid, libc::SIGKILL);
                });
            }
        }
    }
    let _ = upstream_done;
    // Deliver every answer still being pruned (cancelled: they finish at once).
    for _ in 0..200 {
        if !core.busy() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let status = match status {
        Some(s) => s.ok(),
        None => match tokio::time::timeout(Duration::from_secs(3), child.wait()).await {
            Ok(s) => s.ok(),
            Err(_) => {
                let _ = child.kill().await;
                None
            }
        },
    };
    client_reader.abort();
    drop(to_client);
    drop(core);
    if !writer_done {
        let _ = tokio::time::timeout(Duration::from_secs(5), client_writer).await;
    }
    upstream_writer.abort();
    exit_code(status)
}

/// The proxy's exit code for the upstream's status: its code, `128 + signal`
/// when it was killed, 1 when unknown.
fn exit_code(status: Option<std::process::ExitStatus>) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => u8::try_from(code).unwrap_or(1),
            (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(1),
            _ => 1,
        },
        None => 1,
    }
}

fn signal(pid: Option<u32>, sig: i32) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) on our own child's pid; an error (already gone) is harmless.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP to the proxy (each forwarded to the upstream as SIGTERM).
struct Signals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    async fn recv(&mut self) {
        async fn one(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = one(&mut self.term) => {}
            _ = one(&mut self.int) => {}
            _ = one(&mut self.hup) => {}
        }
    }
}
