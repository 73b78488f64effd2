//! `toolprune mcp`: a stdio MCP server with one tool, `omitted` (SPEC §10),
//! registered beside toolprune's hooks by `toolprune install`.
//!
//! **How it learns the session.** An MCP server is shared by the agent's
//! process and sees no conversation: Claude Code gives it a stale session id
//! after `--continue`, Gemini CLI and Cursor none, and `tools/call` carries
//! none (tests/e2e/FACTS*.md). So the session travels in the call's
//! arguments, written by toolprune's own hook *after* the model wrote the
//! call: `session` is a token `<session dir>.<HMAC>` keyed by the store's
//! private key ([`crate::store::Root::token`]). The server opens only the
//! session the token's MAC vouches for; a call without one, or with one the
//! model made up, answers the guest's `not_found` ("call the tool again"),
//! so one conversation's text never reaches another through `omitted`.
//!
//! With `"body": true` (Gemini CLI's tail call) it returns the stored
//! pruned body of the id instead of dropped paragraphs.
//!
//! The tool's name, description and schema are the guest's
//! (`omitted.tool(lang, mcp-hooked)`): `id`, `from`, `to`, plus the optional
//! `session` and `body` the model is told to leave out.
//!
//! It speaks over [`transport::LineTransport`], not rmcp's stdio transport:
//! every line that is not a message (not JSON, not a valid request, 16 MiB
//! or more) gets a JSON-RPC error answer and the server goes on.

pub mod transport;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult, ErrorCode, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::Value;
use toolprune::types::{Config, Dialect};
use toolprune::{LogSink, Pruner, ResultStore};

use crate::hook::common::answer_omitted;
use crate::logfile::LogFile;
use crate::store::{Root, Session};

/// The `omitted` server: the component, the configuration, the store root.
pub struct OmittedServer {
    pruner: Pruner,
    config: Config,
    root: Option<Root>,
    tool: Tool,
}

/// A log that drops every line (no store root to write to).
struct Discard;

impl LogSink for Discard {
    fn line(&self, _line: &str) {}
}

impl OmittedServer {
    /// The server for this process's environment (`env`) with `pruner`.
    /// Errors: the guest's tool spec cannot be read.
    pub fn new(pruner: Pruner, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let config = pruner
            .configuration(env)
            .or_else(|_| pruner.resolve(&[], None))
            .map_err(|e| format!("configuration: {e}"))?;
        let spec = pruner.omitted_tool(Dialect::McpHooked, config.lang).map_err(|e| format!("the component failed: {e}"))?;
        let tool: Tool = serde_json::from_value(spec).map_err(|e| format!("the guest's tool spec: {e}"))?;
        let root = Root::from_env(env).ok();
        if let Some(root) = &root {
            let _ = root.sweep(std::time::Duration::from_secs(config.store.max_age_s), false);
        }
        Ok(OmittedServer { pruner, config, root, tool })
    }

    /// The tool as listed (`tools/list`).
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The store's log, tagged with `session` when there is one.
    fn log(&self, session: Option<&Session>) -> Arc<dyn LogSink> {
        match (&self.root, session) {
            (Some(root), Some(session)) => Arc::new(LogFile::new(root).for_session(session)),
            (Some(root), None) => Arc::new(LogFile::new(root)),
            (None, _) => Arc::new(Discard),
        }
    }

    /// The text answering one `omitted` call with these `arguments` (a JSON
    /// object): the stored pruned body (`body: true`), else the guest's
    /// answer from the session the `session` token names — or, with no valid
    /// token, from an empty store (`not_found`). Never fails.
    pub fn answer(&self, arguments: &Value) -> String {
        let session = match (&self.root, arguments.get("session").and_then(Value::as_str)) {
            (Some(root), Some(token)) => root.session_for_token(token).ok().flatten(),
            _ => None,
        };
        let log = self.log(session.as_ref());
        if session.is_none() {
            log.line("mcp: omitted session=missing");
        }
        let id = arguments.get("id").and_then(Value::as_str).map(|s| s.trim().to_ascii_uppercase());
        if arguments.get("body").and_then(Value::as_bool) == Some(true) {
            if let (Some(session), Some(id)) = (&session, &id) {
                if let Ok(Some(body)) = session.body(id) {
                    log.line(&format!("mcp: body outcome=ok chars={}", body.chars().count()));
                    return body;
                }
            }
        }
        let agent = session.as_ref().map_or_else(|| "mcp".to_string(), |s| s.agent());
        let store = session.map(|s| Arc::new(s) as Arc<dyn ResultStore>);
        let quiet = store.is_none();
        answer_omitted(&self.pruner, &self.config, &agent, store, &arguments.to_string(), if quiet { Arc::new(Discard) } else { log })
            .unwrap_or_else(|| "omitted is unavailable right now; call the tool again.".to_string())
    }
}

impl ServerHandler for OmittedServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("toolprune", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        if request.name != self.tool.name {
            return Err(McpError::invalid_params(format!("unknown tool {}", request.name), None));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let text = self.answer(&arguments);
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    /// A request rmcp could not read as any MCP request: one of the methods
    /// this server answers whose params do not fit it (a `tools/call`
    /// without a `name`, …) is −32602 Invalid params; any other method
    /// −32601 Method not found (rmcp's own answer).
    async fn on_custom_request(&self, request: CustomRequest, _context: RequestContext<RoleServer>) -> Result<CustomResult, McpError> {
        use rmcp::model::{
            CallToolRequestMethod as Call, ConstString as _, DiscoverRequestMethod as Discover, InitializeResultMethod as Initialize,
            ListToolsRequestMethod as List, PingRequestMethod as Ping,
        };
        if [Initialize::VALUE, Discover::VALUE, Ping::VALUE, List::VALUE, Call::VALUE].contains(&request.method.as_str()) {
            return Err(McpError::invalid_params(format!("the params do not fit {}", request.method), None));
        }
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None))
    }
}

/// `toolprune mcp`: serve on stdin/stdout until the client closes. Errors
/// (to stderr, exit 1): the component or its tool spec cannot be loaded,
/// or the transport fails.
pub fn main() -> Result<(), String> {
    let pruner = Pruner::shared().map_err(|e| format!("cannot load the component: {e:#}"))?.clone();
    let server = OmittedServer::new(pruner, &|name| std::env::var(name).ok())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("async runtime: {e}"))?;
    runtime.block_on(async move {
        let (stdin, stdout) = rmcp::transport::stdio();
        let running = server.serve(transport::LineTransport::new(stdin, stdout)).await.map_err(|e| format!("MCP: {e}"))?;
        running.waiting().await.map_err(|e| format!("MCP: {e}"))?;
        Ok(())
    })
}
