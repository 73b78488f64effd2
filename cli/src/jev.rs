//! The CLI's configuration glue: the guest's configuration for this process
//! (variables and config file resolved by `settings.resolve`), the scorer
//! for `prune`, and Ctrl-C.

use toolprune::types::Config;
use toolprune::{CancelToken, JevScorer, Pruner, Scoring};

/// The scorer the user named with `--scorer`.
#[derive(Clone, Copy)]
pub enum Named {
    Offline,
    Stub,
    Jev,
}

/// What `prune` runs with.
pub struct Setup {
    pub scoring: Scoring,
    pub enabled: bool,
    /// The threshold as checked by the guest.
    pub threshold: f64,
    pub jev_model: Option<String>,
    pub config: Option<Config>,
}

/// The process environment, for the guest's variables and the token.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Ctrl-C cancels scoring (the raw text is printed, outcome `cancelled`); a
/// second Ctrl-C exits at once with 130.
pub fn cancel_on_ctrl_c() -> CancelToken {
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

/// Settings (flags > environment > config file > defaults, resolved by the
/// guest) and the scorer for `prune`. With no `--scorer`: Jev when its
/// endpoint is complete and the token variable is set, else offline.
///
/// `Err` is a usage error (exit 2): a refused `--threshold` (the guest's
/// message) or `--scorer jev` without a complete configuration.
pub fn prune_setup(pruner: &Pruner, named: Option<Named>, threshold: Option<&str>) -> Result<Setup, String> {
    let threshold = match threshold {
        Some(value) => Some(pruner.threshold(value).map_err(|m| format!("--threshold {value}: {m}"))?),
        None => None,
    };
    let config = match pruner.configuration(&env) {
        Ok(config) => config,
        Err(message) => {
            // The guest's rule: a broken configuration turns pruning off
            // (its message names the file or the variable).
            eprintln!("toolprune: {message}; pruning is off");
            let default = pruner.resolve(&[], None).map_or(f64::NAN, |c| c.threshold);
            let threshold = threshold.unwrap_or(default);
            return Ok(Setup { scoring: Scoring::Offline, enabled: false, threshold, jev_model: None, config: None });
        }
    };
    let threshold = threshold.unwrap_or(config.threshold);
    let jev_ready = config.jev.is_ok() && env(&config.token_variable).is_some();
    let named = named.unwrap_or(if jev_ready { Named::Jev } else { Named::Offline });
    let (scoring, jev_model) = match named {
        Named::Offline => (Scoring::Offline, None),
        Named::Stub => (Scoring::Stub, None),
        Named::Jev => {
            let (scorer, model) = JevScorer::from_env(pruner, &env).map_err(|problem| format!("--scorer jev: {problem}"))?;
            (Scoring::host(scorer), model)
        }
    };
    Ok(Setup { scoring, enabled: config.enabled, threshold, jev_model, config: Some(config) })
}
