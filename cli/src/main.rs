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
//! ```
//!
//! Exit codes: 0 done (also when the input passed through unchanged), 1 the
//! input or the component could not be read, 2 usage.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use toolprune::report::{paragraphs_table, prune_report, split_report};
use toolprune::types::Lang;
use toolprune::{Pruner, ToolResult, Turn, TurnOptions};

mod cli_jev;
mod cli_route;

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
    /// to stdout byte for byte, the `tool prune:` log line to stderr.
    Prune(PruneArgs),
    /// Show the paragraphs exactly as pruning splits the document.
    Split(SplitArgs),
    /// Prune every document of a corpus folder; report reduction and recall.
    Eval(toolprune::eval::EvalArgs),
    /// Jev over HTTP: `toolprune jev check`.
    Jev(cli_jev::JevArgs),
    /// Decide where a message goes with a rules file (the judge router):
    /// the decision to stdout, the `judge:` line to stderr.
    Route(cli_route::RouteArgs),
}

#[derive(Args)]
struct PruneArgs {
    /// The user's request (the basis is its first 2,000 characters).
    #[arg(long)]
    request: String,
    /// 0.1, 0.2, 0.3 or 0.5; any other value means 0.2. Default: the
    /// config file's `threshold`, else 0.2.
    #[arg(long)]
    threshold: Option<f64>,
    /// Language of the markers.
    #[arg(long, value_enum, default_value_t = LangArg::En)]
    lang: LangArg,
    /// Who scores the paragraphs: `offline` is the guest's lexical (BM25)
    /// scorer, nothing leaves the machine; `stub` is a trivial word-overlap
    /// stand-in for tests, not a relevance model; `jev` is TypeSafe's Jev
    /// over HTTP (README "Jev"). Default: `jev` when its credentials are
    /// set (TOOLPRUNE_JEV_TOKEN, and an account id on Cloudflare), else
    /// `offline`.
    #[arg(long, value_enum)]
    scorer: Option<ScorerArg>,
    /// Tool name for the log line.
    #[arg(long, default_value = "cli")]
    tool: String,
    /// Agent name for the log line.
    #[arg(long, default_value = "cli")]
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
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Prune(args) => prune(args),
        Command::Split(args) => split(args),
        Command::Eval(args) => toolprune::eval::cli(args)
            .and_then(|out| write_stdout(out.as_bytes()))
            .map(|()| ExitCode::SUCCESS),
        Command::Jev(args) => match args.command {
            cli_jev::JevCommand::Check => pruner().map(cli_jev::check),
        },
        Command::Route(args) => pruner().and_then(|p| cli_route::route(p, args)),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("toolprune: {message}");
            ExitCode::from(1)
        }
    }
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
    let setup = match cli_jev::prune_setup(named, args.threshold) {
        Ok(setup) => setup,
        Err(usage) => {
            // A usage error, but no text is lost: the input goes through unchanged.
            write_stdout(text.as_bytes())?;
            eprintln!("toolprune: {usage}; the text was passed through unchanged");
            return Ok(ExitCode::from(2));
        }
    };
    let requested_threshold = setup.threshold;
    let scorer = setup.scorer;
    let mut options = TurnOptions::new(args.request);
    options.threshold = setup.threshold;
    options.jev_model = setup.jev_model;
    options.lang = match args.lang {
        LangArg::Ja => Lang::Ja,
        LangArg::En => Lang::En,
    };
    options.agent = args.agent;
    options.enabled = setup.enabled;
    let mut turn = Turn::new(pruner()?, scorer.clone(), options);
    let pruned = turn.on_tool_result(ToolResult::prunable(args.tool, text));
    if let Some(report) = &pruned.report {
        // The guest decides the fallback (SPEC §6); the CLI only says it happened.
        if report.threshold != requested_threshold {
            eprintln!(
                "toolprune: warning: threshold {requested_threshold} is not a supported value; {} was used",
                report.threshold
            );
        }
    }
    if args.json {
        let report = prune_report(&pruned, scorer.name());
        let mut out = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        out.push('\n');
        write_stdout(out.as_bytes())?;
    } else {
        write_stdout(pruned.body.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn split(args: SplitArgs) -> Result<ExitCode, String> {
    let bytes = read_input(args.file.as_ref())?;
    let text =
        String::from_utf8(bytes).map_err(|_| "input is not UTF-8; nothing to split".to_string())?;
    let paragraphs = pruner()?
        .paragraphs(&text)
        .map_err(|e| format!("the component failed: {e}"))?;
    let out = if args.json {
        let mut out =
            serde_json::to_string_pretty(&split_report(&paragraphs)).map_err(|e| e.to_string())?;
        out.push('\n');
        out
    } else {
        paragraphs_table(&text, &paragraphs)
    };
    write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
