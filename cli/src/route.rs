//! `toolprune route`: the judge router from the command line; the work is
//! done by [`toolprune::judge`].
//!
//! ```text
//! toolprune route --rules FILE --message TEXT [--answers FILE] [--json]
//! ```
//!
//! The decision goes to stdout, the `judge:` line to stderr. Exit codes: 0
//! routed or returned; 3 failed (Jev could not judge); 2 an invalid rules
//! file or no way to judge (usage); 1 a file could not be read or the
//! component failed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use toolprune::judge::{render_load_errors, Judge, RouteError, Verdict};
use toolprune::{JevScorer, Pruner};

/// `toolprune route` arguments.
#[derive(Args)]
pub struct RouteArgs {
    /// The rules file (TOML: `[questions.NAME]`, `[[rules]]`, `[otherwise]`).
    #[arg(long)]
    rules: PathBuf,
    /// The message to judge (sent to Jev as `{"message": …}`; never logged).
    #[arg(long, allow_hyphen_values = true)]
    message: String,
    /// Fixed Jev answers: a file holding the text of a Jev response
    /// (`{"answers": {…}}`), so no call is made. Without it, Jev is called once with the
    /// configured credentials (docs/jev.md).
    #[arg(long)]
    answers: Option<PathBuf>,
    /// Print the decision, the answers and the log line as JSON.
    #[arg(long)]
    json: bool,
}

fn read(path: &PathBuf, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

/// Runs `toolprune route`: the exit code, or a one-line error (exit 1).
pub fn route(pruner: &Pruner, args: RouteArgs) -> Result<ExitCode, String> {
    let rules = read(&args.rules, "rules file")?;
    let decision = match &args.answers {
        Some(path) => {
            let answers = read(path, "answers file")?;
            // No call is made: no scorer is needed.
            Judge::new(pruner, None).route_with_answers(&rules, &args.message, &answers)
        }
        None => {
            let (scorer, model) = match JevScorer::from_env(pruner, &crate::jev::env) {
                Ok(found) => found,
                Err(problem) => {
                    eprintln!("toolprune: route without --answers calls Jev, and {problem}; or pass --answers FILE (fixed answers)");
                    return Ok(ExitCode::from(2));
                }
            };
            Judge::new(pruner, Some(Arc::new(scorer)))
                .with_jev_model(model)
                .with_cancel(crate::jev::cancel_on_ctrl_c())
                .route(&rules, &args.message)
        }
    };
    let decision = match decision {
        Ok(decision) => decision,
        Err(RouteError::Rules(errors)) => {
            let file = args.rules.display().to_string();
            let rendered = pruner.rules_errors(&file, &errors).unwrap_or_else(|_| render_load_errors(&file, &errors));
            eprint!("{rendered}");
            return Ok(ExitCode::from(2));
        }
        Err(e @ RouteError::Guest(_)) => return Err(e.to_string()),
    };
    // Rendered by the guest (`report.route-json`, `report.route-summary`):
    // every CLI prints the same bytes.
    let out = if args.json {
        pruner.route_json(&decision).map(|json| json + "\n")
    } else {
        pruner.route_summary(&decision)
    };
    print!("{}", out.map_err(|e| e.to_string())?);
    Ok(match decision.verdict {
        Verdict::Failed(_) => ExitCode::from(3),
        _ => ExitCode::SUCCESS,
    })
}
