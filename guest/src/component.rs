//! The WIT bindings (`wit/`, world `toolprune`) and the export of the pure
//! modules as the component. On native targets the bindings compile too, so
//! the modules use the same types in unit tests; only the `export!` is
//! wasm-only. The world's only import is `scorer.score`, called from here
//! (`pruner.prune`, `judge.decide`) and handed to the rules as a function.

wit_bindgen::generate!({
    world: "toolprune",
    path: "../wit",
});

/// The generated types by interface, for the domain modules.
pub mod wit {
    pub use super::exports::toolprune::pruner::{judge, omitted, pruner, report, settings, types};
    pub use super::toolprune::pruner::scorer;
}

use exports::toolprune::pruner::{judge, omitted, pruner, report, settings};
use wit::types::Lang;

/// The exported component.
pub struct Component;


impl pruner::Guest for Component {
    type PruneJob = crate::prune::Job;

    fn prune(input: pruner::PruneInput, id_number: u32) -> pruner::Pruned {
        crate::prune::prune(input, id_number, wit::scorer::score)
    }

    fn inspect(text: String) -> pruner::Inspection {
        crate::prune::inspect(&text)
    }
}

impl pruner::GuestPruneJob for crate::prune::Job {
    fn new(input: pruner::PruneInput) -> Self {
        crate::prune::Job::start(input)
    }

    fn scoring_request(&self) -> Option<wit::scorer::ScoringRequest> {
        self.request()
    }

    fn finish(&self, response: Option<wit::scorer::ScoringResponse>, id_number: u32) -> pruner::Pruned {
        self.complete(response, id_number)
    }
}

impl omitted::Guest for Component {
    fn requested_id(arguments: String) -> Option<String> {
        crate::omitted::requested_id(&arguments)
    }

    fn answer(arguments: String, lang: Lang, agent: String, found: Option<pruner::StoredResult>) -> omitted::OmittedResult {
        crate::omitted::answer(&arguments, lang, &agent, found.as_ref())
    }

    fn tool(lang: Lang, dialect: omitted::Dialect) -> String {
        crate::omitted::tool(lang, dialect)
    }

    fn unavailable(lang: Lang) -> String {
        crate::omitted::unavailable(lang)
    }

    fn request_argument(lang: Lang) -> String {
        crate::omitted::request_argument(lang)
    }
}

impl settings::Guest for Component {
    fn version() -> String {
        crate::settings::VERSION.to_string()
    }

    fn threshold(value: String) -> Result<f64, String> {
        crate::settings::threshold(&value)
    }

    fn variables() -> Vec<String> {
        crate::settings::VARIABLES.iter().map(|v| v.to_string()).collect()
    }

    fn config_path(env: Vec<(String, String)>) -> Option<String> {
        crate::settings::config_path(&env)
    }

    fn resolve(env: Vec<(String, String)>, file: Option<String>) -> Result<settings::Config, String> {
        crate::settings::resolve(&env, file.as_deref()).map(|c| settings::Config {
            enabled: c.enabled,
            threshold: c.threshold,
            lang: if c.lang_ja { Lang::Ja } else { Lang::En },
            jev: c.jev.map(|e| settings::JevEndpoint { route: e.route.to_string(), url: e.url, model: e.model, loopback: e.loopback }),
            token_variable: crate::settings::TOKEN_VARIABLE.to_string(),
            prunable: c.prunable,
            store: settings::StoreLimits { max_records: c.store.max_records, max_chars: c.store.max_chars, max_age_s: c.store.max_age_s },
            proxy_basis: c.proxy_basis,
        })
    }

    fn is_prunable(tool: String, globs: Vec<String>) -> bool {
        crate::settings::is_prunable(&tool, &globs)
    }

    fn is_tool_prunable(names: Vec<String>, globs: Vec<String>) -> bool {
        crate::settings::is_tool_prunable(&names, &globs)
    }

    fn retry_delay(f: settings::RetryFacts) -> Option<u32> {
        crate::settings::retry_delay(&crate::settings::RetryFacts {
            attempt: f.attempt,
            status: f.status,
            retry_after: f.retry_after.as_deref(),
            retry_after_ms: f.retry_after_ms.as_deref(),
            now_unix_ms: f.now_unix_ms,
            remaining_ms: f.remaining_ms,
        })
    }

    fn call_limits_for(text_bytes: u64) -> settings::CallLimits {
        let (fuel, wall_ms, memory_bytes) = crate::settings::call_limits(text_bytes);
        settings::CallLimits { fuel, wall_ms, memory_bytes }
    }

    fn failure_line(
        operation: settings::Operation,
        agent: String,
        tool: String,
        failure: settings::HostFailure,
        limit: Option<settings::Limit>,
    ) -> String {
        use crate::settings::Operation as Op;
        let op = match operation {
            settings::Operation::Prune => Op::Prune,
            settings::Operation::Omitted => Op::Omitted,
            settings::Operation::Judge => Op::Judge,
        };
        crate::settings::failure_line(op, &agent, &tool, host_failure_name(failure), limit.map(limit_name))
    }
}

/// The judge router (`wit/judge.wit`, [`crate::judge`]).
impl judge::Guest for Component {
    type JudgeJob = crate::judge::Job;

    fn route(
        rules: String,
        message: String,
        jev_model: Option<String>,
        answers: String,
    ) -> Result<judge::Decision, Vec<judge::LoadError>> {
        crate::judge::route(&rules, message, jev_model, &answers)
    }

    fn decide(rules: String, message: String, jev_model: Option<String>) -> Result<judge::Decision, Vec<judge::LoadError>> {
        crate::judge::decide_with(&rules, message, jev_model, wit::scorer::score)
    }
}

impl judge::GuestJudgeJob for crate::judge::Job {
    fn load(rules: String, message: String, jev_model: Option<String>) -> Result<judge::JudgeJob, Vec<judge::LoadError>> {
        crate::judge::Job::load(&rules, message, jev_model)
            .map(judge::JudgeJob::new)
            .map_err(crate::judge::load_errors_to_wit)
    }

    fn scoring_request(&self) -> wit::scorer::ScoringRequest {
        crate::judge::Job::scoring_request(self)
    }

    fn finish(&self, response: wit::scorer::ScoringResponse) -> judge::Decision {
        crate::judge::Job::finish(self, response)
    }
}

/// What people and scripts read from every CLI (`wit/report.wit`, [`crate::report`]).
impl report::Guest for Component {
    fn prune_json(
        pruned: Option<pruner::Pruned>,
        failure: Option<(settings::HostFailure, Option<settings::Limit>)>,
        scorer: String,
    ) -> String {
        let failure = failure.map(|(f, l)| (host_failure_name(f), l.map(limit_name)));
        crate::report::prune_json(pruned.as_ref(), failure, &scorer)
    }

    fn split_json(text: String) -> String {
        crate::report::split_json(&text)
    }

    fn split_table(text: String) -> String {
        crate::report::split_table(&text)
    }
}

fn host_failure_name(failure: settings::HostFailure) -> &'static str {
    match failure {
        settings::HostFailure::GuestTrap => "guest_trap",
        settings::HostFailure::InvalidText => "invalid_text",
        settings::HostFailure::InvalidInput => "invalid_input",
        settings::HostFailure::Store => "store",
    }
}

fn limit_name(limit: settings::Limit) -> &'static str {
    match limit {
        settings::Limit::Fuel => "fuel",
        settings::Limit::Memory => "memory",
        settings::Limit::WallTime => "wall_time",
    }
}

#[cfg(target_arch = "wasm32")]
export!(Component);
