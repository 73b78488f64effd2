//! `toolprune`: prune a local document, or show how it splits.
//!
//! ```text
//! toolprune prune --request TEXT [--threshold 0.2] [--lang en|ja]
//!                 [--scorer offline|stub|jev] [--tool NAME] [--agent NAME] [--json] [FILE|-]
//! toolprune jev check
//! toolprune route --rules FILE --message TEXT [--answers FILE] [--json]
//! toolprune split [--json] [FILE|-]
//! toolprune eval --corpus DIR [--labels FILE] [--scorer offline|stub]
//!                [--threshold X] [--lang en|ja] [--json]
//! toolprune hook claude-code|gemini|cursor|codex [--plugin] (one agent event: stdin → stdout)
//! toolprune mcp                                 (the `omitted` MCP server, stdio)
//! toolprune stats [--since DATE|DURATION] [--agent A] [--tool T] [--json] [--html FILE]
//! ```
//!
//! Exit codes: 0 done (also when the input passed through unchanged), 1 the
//! input or the component could not be read, 2 usage.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use toolprune::types::Lang;
use toolprune::{ConversationOptions, Pruner, ToolResult};
use toolprune_cli::agents::{self, Agent};
use toolprune_cli::install;
use toolprune_cli::jev as cli_jev;
use toolprune_cli::route as cli_route;

#[derive(Parser)]
#[command(
    name = "toolprune",
    version,
    about = "Drop the paragraphs of a tool result that do not help answer a request."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Prune a document as if a prunable tool had returned it: the body goes
    /// to stdout byte for byte, the `tool prune:` log line to stderr (and to
    /// the store's log file, when the store root exists).
    Prune(PruneArgs),
    /// Show the units exactly as pruning splits the document (`pruner.inspect`):
    /// the shape, a wrapper's span, each unit's span and kind (scored, fixed,
    /// blank); structured JSON says it is not pruned.
    Split(SplitArgs),
    /// Prune every document of a corpus folder; report reduction and recall.
    Eval(toolprune_cli::eval::EvalArgs),
    /// Jev over HTTP: `toolprune jev check`.
    Jev(JevArgs),
    /// Decide where a message goes with a rules file (the judge router):
    /// the decision to stdout, the `judge:` line to stderr.
    Route(cli_route::RouteArgs),
    /// Wrap one MCP server for any MCP client: forwards every message
    /// unchanged except the pruned results of prunable tools, adds the
    /// `omitted` tool (docs/mcp-proxy.md).
    #[command(name = "mcp-proxy")]
    McpProxy(toolprune_cli::proxy::ProxyArgs),
    /// Answer one agent hook event (stdin → stdout; always exit 0, never
    /// stderr; any failure is the agent's "no change"). Registered by
    /// `toolprune install`.
    Hook {
        #[arg(value_enum)]
        agent: Agent,
    },
    /// The `omitted` MCP server (stdio), registered beside the hooks.
    Mcp,
    /// Build the agents' plugins (`toolprune plugin build DIR`; scripts/package).
    #[command(hide = true)]
    Plugin(PluginArgs),
    /// Register toolprune's hooks and its `omitted` MCP server in an
    /// agent's settings (idempotent; every other byte of the files kept).
    Install(InstallArgs),
    /// Remove exactly what `install` added.
    Uninstall(InstallArgs),
    /// Check that the hooks and the MCP server are in place and working;
    /// exit 1 when something is missing.
    Doctor(InstallArgs),
    /// What toolprune saved, per day, agent and tool, from the store's
    /// counts-only log: results pruned, characters and (estimated) tokens
    /// removed, what `omitted` read back, the scorer's time (docs/stats.md).
    Stats(toolprune_cli::stats::StatsArgs),
}

#[derive(Args)]
struct PluginArgs {
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Write the marketplace folder DIR: every agent's plugin (manifests
    /// from the same adapters as `install`), each with a copy of the binary
    /// (docs/plugins.md).
    Build {
        /// The folder to write (created; files of the same names replaced).
        dir: PathBuf,
        /// The binary each plugin carries (default: this one).
        #[arg(long)]
        binary: Option<PathBuf>,
    },
}

#[derive(Args)]
struct InstallArgs {
    #[arg(value_enum)]
    agent: Agent,
    /// The user's settings (every project; the default).
    #[arg(long, conflicts_with = "project")]
    user: bool,
    /// The current directory's project settings.
    #[arg(long)]
    project: bool,
    /// Show what would change; write nothing (install, uninstall).
    #[arg(long)]
    dry_run: bool,
    /// install: also make the MCP server NAME (already configured for the
    /// agent) start through `toolprune mcp-proxy`, keeping its original
    /// entry; uninstall: put only that server's original entry back
    /// (docs/mcp-proxy.md).
    #[arg(long, value_name = "NAME")]
    wrap: Option<String>,
}

impl InstallArgs {
    fn scope(&self) -> install::Scope {
        if self.project {
            install::Scope::Project
        } else {
            install::Scope::User
        }
    }
}

#[derive(Args)]
struct PruneArgs {
    /// The user's request (the basis is its first 2,000 characters).
    #[arg(long, allow_hyphen_values = true)]
    request: String,
    /// 0.1, 0.2, 0.3 or 0.5 (another value is refused with exit 2 and the
    /// text passed through). Default: the configuration's, else 0.2.
    #[arg(long, allow_hyphen_values = true)]
    threshold: Option<String>,
    /// Language of the markers. Default: the configuration's, else `en`.
    #[arg(long, value_enum)]
    lang: Option<LangArg>,
    /// Who scores the paragraphs: `offline` is the guest's lexical (BM25)
    /// scorer, nothing leaves the machine; `stub` is a trivial word-overlap
    /// stand-in for tests, not a relevance model; `jev` is TypeSafe's Jev
    /// over HTTP (docs/jev.md). Default: `jev` when its credentials are
    /// configured (docs/jev.md), else `offline`.
    #[arg(long, value_enum)]
    scorer: Option<ScorerArg>,
    /// Tool name for the log line.
    #[arg(long, default_value = "cli", allow_hyphen_values = true)]
    tool: String,
    /// Agent name for the log line.
    #[arg(long, default_value = "cli", allow_hyphen_values = true)]
    agent: String,
    /// Print a JSON report (outcome, counts, paragraphs) instead of the body.
    #[arg(long)]
    json: bool,
    /// The document; `-` or nothing reads stdin.
    file: Option<PathBuf>,
}

#[derive(Args)]
struct SplitArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// The document; `-` or nothing reads stdin.
    file: Option<PathBuf>,
}

#[derive(Args)]
struct JevArgs {
    #[command(subcommand)]
    command: JevCommand,
}

#[derive(Subcommand)]
enum JevCommand {
    /// Send one two-paragraph request with the configured route and token;
    /// print the HTTP status, latency, what the guest decoded (calls,
    /// jev_tokens, scores) and the served model, or a diagnosis (no token,
    /// no account id, 401, 402, unreachable, …). Exit 0 when Jev answered.
    Check,
}

#[derive(Clone, Copy, ValueEnum)]
enum LangArg {
    Ja,
    En,
}

#[derive(Clone, Copy, ValueEnum)]
enum ScorerArg {
    /// The guest's offline BM25 scorer (no key, no network).
    Offline,
    /// Word overlap with the request: a stub for tests, not a relevance model.
    Stub,
    /// TypeSafe's Jev over HTTP (sends the basis and the scored paragraphs).
    Jev,
}

fn main() -> ExitCode {
    // The hook answers before anything else can print: no clap errors on stderr.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() >= 2 && args[1] == "hook" && !args[2..].iter().any(|a| a == "-h" || a == "--help") {
        let agent = args.get(2).and_then(|a| a.to_str()).and_then(|a| <Agent as ValueEnum>::from_str(a, false).ok());
        match (args.len(), agent, args.get(3).and_then(|a| a.to_str())) {
            (3, Some(agent), None) => return agents::main(agent, agents::Via::Settings),
            (4, Some(agent), Some("--plugin")) => return agents::main(agent, agents::Via::Plugin),
            _ => {}
        }
        // A mistyped hook command (no agent, an unknown one, extra words):
        // an agent reads exit 2 as "block" and shows stderr, so say nothing
        // and change nothing — the result reaches the model as it is. The
        // event is read first, so the agent's write never meets a closed pipe.
        toolprune_cli::hook::drain(std::io::stdin(), toolprune_cli::hook::DRAIN_LIMIT);
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Prune(args) => prune(args),
        Command::Split(args) => split(args),
        Command::Eval(args) => toolprune_cli::eval::cli(args)
            .and_then(|out| write_stdout(out.as_bytes()))
            .map(|()| ExitCode::SUCCESS),
        Command::Jev(args) => match args.command {
            JevCommand::Check => pruner().map(jev_check),
        },
        Command::Route(args) => pruner().and_then(|p| cli_route::route(p, args)),
        Command::McpProxy(args) => return toolprune_cli::proxy::run(args),
        Command::Hook { agent } => return agents::main(agent, agents::Via::Settings),
        Command::Plugin(args) => match args.command {
            PluginCommand::Build { dir, binary } => plugin_build(&dir, binary),
        },
        Command::Mcp => toolprune_cli::mcp::main().map(|()| ExitCode::SUCCESS),
        Command::Install(args) => install_cmd(args),
        Command::Uninstall(args) => install::Paths::from_env(&cli_jev::env)
            .and_then(|paths| match &args.wrap {
                Some(name) => agents::unwrap(args.agent, args.scope(), &paths, name, args.dry_run),
                None => agents::uninstall(args.agent, args.scope(), &paths, args.dry_run),
            })
            .and_then(|report| write_stdout(report.text.as_bytes()))
            .map(|()| ExitCode::SUCCESS),
        Command::Stats(args) => return stats(&args),
        Command::Doctor(args) => install::Paths::from_env(&cli_jev::env).and_then(|paths| {
            let (text, ok) = agents::doctor(args.agent, args.scope(), &paths, &cli_jev::env);
            write_stdout(text.as_bytes())?;
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("toolprune: {message}");
            ExitCode::from(1)
        }
    }
}

/// `toolprune stats`: exit 0 with the report, 1 when the store or the HTML
/// file cannot be used, 2 for a bad `--since`.
fn stats(args: &toolprune_cli::stats::StatsArgs) -> ExitCode {
    use std::io::IsTerminal as _;
    use toolprune_cli::stats::StatsError;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) || std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    let color = std::io::stdout().is_terminal() && !no_color;
    match toolprune_cli::stats::run(args, &cli_jev::env, color) {
        Ok(out) => match write_stdout(out.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("toolprune stats: {message}");
                ExitCode::from(1)
            }
        },
        Err(StatsError::Usage(message)) => {
            eprintln!("toolprune stats: {message}");
            ExitCode::from(2)
        }
        Err(StatsError::Failed(message)) => {
            eprintln!("toolprune stats: {message}");
            ExitCode::from(1)
        }
    }
}

/// `toolprune plugin build DIR [--binary PATH]`: the plugins with the
/// default configuration's prunable tools (a plugin is built for everyone).
fn plugin_build(dir: &std::path::Path, binary: Option<PathBuf>) -> Result<ExitCode, String> {
    let binary = match binary {
        Some(path) => path,
        None => std::env::current_exe().map_err(|e| format!("the path of this toolprune binary: {e}"))?,
    };
    let defaults = pruner()?.configuration(&|_| None).map_err(|e| format!("the default configuration: {e}"))?;
    let built = agents::plugin::build(dir, &binary, env!("CARGO_PKG_VERSION"), &defaults.prunable)?;
    let mut out = String::new();
    for file in &built.files {
        out.push_str(&format!("{}\n", dir.join(file).display()));
    }
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `toolprune install AGENT`: the prunable globs from the configuration
/// (a configuration that does not resolve is refused: fix it first).
fn install_cmd(args: InstallArgs) -> Result<ExitCode, String> {
    let paths = install::Paths::from_env(&cli_jev::env)?;
    let config = pruner()?.configuration(&cli_jev::env).map_err(|e| format!("configuration: {e}; fix it, then install again"))?;
    if let Some(name) = &args.wrap {
        // Refuse a server that cannot be wrapped before anything is written.
        agents::wrap(args.agent, args.scope(), &paths, name, true)?;
    }
    let report = agents::install(args.agent, args.scope(), &paths, &config.prunable, args.dry_run)?;
    write_stdout(report.text.as_bytes())?;
    if let Some(name) = &args.wrap {
        let report = agents::wrap(args.agent, args.scope(), &paths, name, args.dry_run)?;
        write_stdout(report.text.as_bytes())?;
    }
    if !args.dry_run {
        let agent = args.agent.label();
        let prunable = config.prunable.join(", ");
        write_stdout(
            format!(
                "toolprune is installed for {agent}: results of {prunable} are pruned from the next session on; \
                 `toolprune doctor {agent}` checks it, `toolprune uninstall {agent}` removes it\n"
            )
            .as_bytes(),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The input's bytes, or a one-line message naming it.
fn read_input(file: Option<&PathBuf>) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    match file.filter(|path| path.as_os_str() != "-") {
        Some(path) => {
            bytes =
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        }
        None => {
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
        }
    }
    Ok(bytes)
}

fn write_stdout(bytes: &[u8]) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write stdout: {e}"))
}

fn pruner() -> Result<&'static Pruner, String> {
    Pruner::shared().map_err(|e| format!("cannot load the component: {e:#}"))
}

fn prune(args: PruneArgs) -> Result<ExitCode, String> {
    let bytes = read_input(args.file.as_ref())?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            // Fail-open: what cannot be pruned goes through untouched.
            write_stdout(e.as_bytes())?;
            eprintln!("toolprune: warning: input is not UTF-8; passed through unchanged");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let named = args.scorer.map(|s| match s {
        ScorerArg::Offline => cli_jev::Named::Offline,
        ScorerArg::Stub => cli_jev::Named::Stub,
        ScorerArg::Jev => cli_jev::Named::Jev,
    });
    let pruner = pruner()?;
    let setup = match cli_jev::prune_setup(pruner, named, args.threshold.as_deref()) {
        Ok(setup) => setup,
        Err(usage) => {
            // A usage error, but no text is lost: the input goes through unchanged.
            write_stdout(text.as_bytes())?;
            eprintln!("toolprune: {usage}; the text was passed through unchanged");
            return Ok(ExitCode::from(2));
        }
    };
    let lang = match args.lang {
        Some(LangArg::Ja) => Lang::Ja,
        Some(LangArg::En) => Lang::En,
        None => setup.config.as_ref().map_or(Lang::En, |c| c.lang),
    };
    let scorer_name = setup.scoring.name().to_string();
    let conversation = pruner
        .conversation(ConversationOptions {
            enabled: setup.enabled,
            threshold: Some(setup.threshold.to_string()),
            lang,
            agent: args.agent,
            scoring: Some(setup.scoring),
            jev_model: setup.jev_model,
            ..ConversationOptions::default()
        })
        .map_err(|e| e.to_string())?;
    let turn = conversation.turn_with_cancel(args.request, cli_jev::cancel_on_ctrl_c());
    let result = turn.on_tool_result(ToolResult { report: args.json, ..ToolResult::prunable(args.tool, text) });
    // The line went to stderr; it goes to the store's log too, when there is one.
    if let Some(log) = toolprune_cli::logfile::LogFile::existing(&cli_jev::env) {
        log.prune_result(&result);
    }
    if args.json {
        // Rendered by the guest (`report.prune-json`): the same bytes in every CLI.
        let mut out = pruner.prune_json(&result, &scorer_name).map_err(|e| format!("the component failed: {e}"))?;
        out.push('\n');
        write_stdout(out.as_bytes())?;
    } else {
        write_stdout(result.body.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolprune jev check`: the report on stdout; 0 when Jev answered, 1 otherwise.
fn jev_check(pruner: &Pruner) -> ExitCode {
    let report = toolprune_cli::check::check(pruner, &cli_jev::env, cli_jev::cancel_on_ctrl_c());
    print!("{}", report.render());
    if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn split(args: SplitArgs) -> Result<ExitCode, String> {
    let bytes = read_input(args.file.as_ref())?;
    let text =
        String::from_utf8(bytes).map_err(|_| "input is not UTF-8; nothing to split".to_string())?;
    // Rendered by the guest (`report.split-json`, `report.split-table`): the same bytes in every CLI.
    let pruner = pruner()?;
    let out = if args.json {
        let mut out = pruner.split_json(&text).map_err(|e| format!("the component failed: {e}"))?;
        out.push('\n');
        out
    } else {
        pruner.split_table(&text).map_err(|e| format!("the component failed: {e}"))?
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
