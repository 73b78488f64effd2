//! The `toolprune` binary's Jev glue: choosing the scorer for `prune`, Ctrl-C,
//! and `toolprune jev check`. Part of the binary (`mod cli_jev` in
//! `main.rs`), not of the library; the work is done by
//! [`toolprune::jev`].

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use toolprune::jev::{self, CancelToken, JevScorer, Settings};
use toolprune::{OfflineScorer, Pruner, Scorer, StderrLog, StubScorer};

#[derive(Args)]
pub struct JevArgs {
    #[command(subcommand)]
    pub command: JevCommand,
}

#[derive(Subcommand)]
pub enum JevCommand {
    /// Send one two-paragraph request with the configured route and token;
    /// print the HTTP status, latency and what the guest decoded (calls,
    /// jev_tokens, scores), or a diagnosis (no token, no account id, 401,
    /// 402, unreachable, …). Exit 0 when Jev answered.
    Check,
}

/// The scorer the user named with `--scorer`.
#[derive(Clone, Copy)]
pub enum Named {
    Offline,
    Stub,
    Jev,
}

/// What `prune` runs with.
pub struct Setup {
    pub scorer: Arc<dyn Scorer>,
    pub enabled: bool,
    pub threshold: f64,
    pub jev_model: Option<String>,
}

/// Ctrl-C cancels scoring (the raw text is printed, outcome `cancelled`); a
/// second Ctrl-C exits at once with 130.
fn cancel_on_ctrl_c() -> CancelToken {
    let token = CancelToken::new();
    let handler = token.clone();
    let _ = ctrlc::set_handler(move || {
        if handler.is_cancelled() {
            std::process::exit(130);
        }
        handler.cancel();
    });
    token
}

/// Settings (flags > environment > config file > defaults) and the scorer
/// for `prune`. With no `--scorer`, Jev when its credentials are complete,
/// else offline. `Err` is a usage error (exit 2): `--scorer jev` without
/// complete credentials.
pub fn prune_setup(named: Option<Named>, threshold: Option<f64>) -> Result<Setup, String> {
    let settings = Settings::load(&StderrLog);
    let threshold = threshold.or(settings.threshold).unwrap_or(0.2);
    if settings.broken.is_some() {
        // Pruning is off (already said on stderr): nothing is scored.
        return Ok(Setup { scorer: Arc::new(OfflineScorer), enabled: false, threshold, jev_model: None });
    }
    let enabled = settings.enabled_or(true);
    let named = named.unwrap_or(if settings.jev.has_credentials() { Named::Jev } else { Named::Offline });
    let (scorer, jev_model): (Arc<dyn Scorer>, _) = match named {
        Named::Offline => (Arc::new(OfflineScorer), None),
        Named::Stub => (Arc::new(StubScorer), None),
        Named::Jev => {
            let scorer = JevScorer::new(&settings.jev)
                .map_err(|problem| format!("--scorer jev: {problem}"))?
                .with_cancel(cancel_on_ctrl_c());
            (Arc::new(scorer), settings.jev.jev_model())
        }
    };
    Ok(Setup { scorer, enabled, threshold, jev_model })
}

/// `toolprune jev check`: the report on stdout; 0 when Jev answered, 1 otherwise.
pub fn check(pruner: &Pruner) -> ExitCode {
    let settings = Settings::load(&StderrLog);
    let report = jev::check(pruner, &settings.jev, cancel_on_ctrl_c());
    print!("{}", report.render());
    if report.is_ok() && settings.broken.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
