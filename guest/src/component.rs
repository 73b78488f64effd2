//! The component: the WIT world `toolprune` (`wit/`) bound to the rules.
//! The generated bindings live in the private `wit` module and nothing
//! outside this file names them (issue 22 §5): every export converts its
//! arguments to the plain types of [`crate::types`] (and [`crate::settings`],
//! [`crate::judge`]), calls the rule, and converts the answer back. The
//! conversions are written once, field by field, by the `records!` and
//! `enums!` macros below; a WIT change they do not follow fails to compile.
//!
//! The world's only import is `scorer.score`, which `pruner.prune` and
//! `judge.decide` hand to the rules as a function. On native targets the
//! bindings compile too (the conversions are tested here); only the
//! `export!` is wasm-only.
//!
//! The bindings are not part of the crate's API:
//!
//! ```compile_fail
//! use toolprune_guest::component::wit::exports::toolprune::pruner::pruner::Pruned;
//! ```

mod wit {
    wit_bindgen::generate!({
        world: "toolprune",
        path: "../wit",
    });
}

use wit::exports::toolprune::pruner::{judge, omitted, pruner, report, settings, types as wit_types};
use wit::toolprune::pruner::scorer;

use crate::types;

/// The exported component.
pub struct Component;

impl pruner::Guest for Component {
    type PruneJob = crate::prune::Job;

    fn prune(input: pruner::PruneInput, id_number: u32) -> pruner::Pruned {
        let score = |request: types::ScoringRequest| scorer::score(&request.convert()).convert();
        crate::prune::prune(input.convert(), id_number, score).convert()
    }

    fn inspect(text: String) -> pruner::Inspection {
        crate::prune::inspect(&text).convert()
    }
}

impl pruner::GuestPruneJob for crate::prune::Job {
    fn new(input: pruner::PruneInput) -> Self {
        crate::prune::Job::start(input.convert())
    }

    fn scoring_request(&self) -> Option<scorer::ScoringRequest> {
        self.request().convert()
    }

    fn finish(&self, response: Option<scorer::ScoringResponse>, id_number: u32) -> pruner::Pruned {
        self.complete(response.convert(), id_number).convert()
    }
}

impl omitted::Guest for Component {
    fn requested_id(arguments: String) -> Option<String> {
        crate::omitted::requested_id(&arguments)
    }

    fn answer(arguments: String, lang: wit_types::Lang, agent: String, found: Option<pruner::StoredResult>) -> omitted::OmittedResult {
        let found: Option<types::StoredResult> = found.convert();
        crate::omitted::answer(&arguments, lang.convert(), &agent, found.as_ref()).convert()
    }

    fn tool(lang: wit_types::Lang, dialect: omitted::Dialect) -> String {
        crate::omitted::tool(lang.convert(), dialect.convert())
    }

    fn unavailable(lang: wit_types::Lang) -> String {
        crate::omitted::unavailable(lang.convert())
    }

    fn request_argument(lang: wit_types::Lang) -> String {
        crate::omitted::request_argument(lang.convert())
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
            lang: if c.lang_ja { wit_types::Lang::Ja } else { wit_types::Lang::En },
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
        crate::judge::route(&rules, message, jev_model, &answers).convert()
    }

    fn decide(rules: String, message: String, jev_model: Option<String>) -> Result<judge::Decision, Vec<judge::LoadError>> {
        let score = |request: types::ScoringRequest| scorer::score(&request.convert()).convert();
        crate::judge::decide_with(&rules, message, jev_model, score).convert()
    }
}

impl judge::GuestJudgeJob for crate::judge::Job {
    fn load(rules: String, message: String, jev_model: Option<String>) -> Result<judge::JudgeJob, Vec<judge::LoadError>> {
        match crate::judge::Job::load(&rules, message, jev_model) {
            Ok(job) => Ok(judge::JudgeJob::new(job)),
            Err(errors) => Err(errors.convert()),
        }
    }

    fn scoring_request(&self) -> scorer::ScoringRequest {
        crate::judge::Job::scoring_request(self).convert()
    }

    fn finish(&self, response: scorer::ScoringResponse) -> judge::Decision {
        crate::judge::Job::finish(self, response.convert()).convert()
    }
}

/// What people and scripts read from every CLI (`wit/report.wit`, [`crate::report`]).
impl report::Guest for Component {
    fn prune_json(
        pruned: Option<pruner::Pruned>,
        failure: Option<(settings::HostFailure, Option<settings::Limit>)>,
        scorer: String,
    ) -> String {
        let pruned: Option<types::Pruned> = pruned.convert();
        let failure = failure.map(|(f, l)| (host_failure_name(f), l.map(limit_name)));
        crate::report::prune_json(pruned.as_ref(), failure, &scorer)
    }

    fn split_json(text: String) -> String {
        crate::report::split_json(&text)
    }

    fn split_table(text: String) -> String {
        crate::report::split_table(&text)
    }

    fn route_json(decision: judge::Decision) -> String {
        let decision: types::Decision = decision.convert();
        crate::report::route_json(&decision)
    }

    fn route_summary(decision: judge::Decision) -> String {
        let decision: types::Decision = decision.convert();
        crate::report::route_summary(&decision)
    }

    fn rules_errors(file: String, errors: Vec<judge::LoadError>) -> String {
        let errors: Vec<crate::judge::LoadError> = errors.convert();
        crate::report::rules_errors(&file, &errors)
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
wit::export!(Component with_types_in wit);

// ---- conversions between the generated and the plain types ----------------

/// A value of one side of the boundary as the other side's type (`Into`
/// cannot be implemented for `Option`, `Vec`, `Result` of our types, which
/// the generated code uses as they are).
trait Convert<T> {
    fn convert(self) -> T;
}

macro_rules! same {
    ($($t:ty),*) => {$(
        impl Convert<$t> for $t {
            fn convert(self) -> $t {
                self
            }
        }
    )*};
}
same!(bool, u16, u32, u64, f64, String);

impl<A: Convert<B>, B> Convert<Option<B>> for Option<A> {
    fn convert(self) -> Option<B> {
        self.map(A::convert)
    }
}

impl<A: Convert<B>, B> Convert<Vec<B>> for Vec<A> {
    fn convert(self) -> Vec<B> {
        self.into_iter().map(A::convert).collect()
    }
}

impl<A: Convert<B>, B, E: Convert<F>, F> Convert<Result<B, F>> for Result<A, E> {
    fn convert(self) -> Result<B, F> {
        self.map(A::convert).map_err(E::convert)
    }
}

impl<A: Convert<B>, B, C: Convert<D>, D> Convert<(B, D)> for (A, C) {
    fn convert(self) -> (B, D) {
        (self.0.convert(), self.1.convert())
    }
}

/// Records `plain = generated { every field }`, both ways. Destructuring
/// makes each side's field list exhaustive.
macro_rules! records {
    ($($plain:ty = $wit:ty { $($field:ident),* $(,)? })*) => {$(
        impl Convert<$wit> for $plain {
            fn convert(self) -> $wit {
                type Wit = $wit;
                let Self { $($field),* } = self;
                Wit { $($field: $field.convert()),* }
            }
        }
        impl Convert<$plain> for $wit {
            fn convert(self) -> $plain {
                type Plain = $plain;
                let Self { $($field),* } = self;
                Plain { $($field: $field.convert()),* }
            }
        }
    )*};
}

/// Enums `plain = generated { every case }`, both ways, case by name.
macro_rules! enums {
    ($($plain:ty = $wit:ty { $($case:ident),* $(,)? })*) => {$(
        impl Convert<$wit> for $plain {
            fn convert(self) -> $wit {
                type Wit = $wit;
                match self { $(Self::$case => Wit::$case),* }
            }
        }
        impl Convert<$plain> for $wit {
            fn convert(self) -> $plain {
                type Plain = $plain;
                match self { $(Self::$case => Plain::$case),* }
            }
        }
    )*};
}

records! {
    types::Batch = scorer::Batch { paragraphs, chunks, jev_body }
    types::TransportPolicy = scorer::TransportPolicy { max_in_flight, deadline_ms }
    types::ScoringRequest = scorer::ScoringRequest { basis, batches, policy }
    types::ScoringResponse = scorer::ScoringResponse { answers, elapsed_ms }
    types::PruneInput = pruner::PruneInput {
        request, text, enabled, succeeded, prunable, threshold, lang, scorer, jev_model, agent, tool, report,
        arguments, pruned_calls, work_budget,
    }
    types::ParagraphReport = pruner::ParagraphReport { index, chars, score, fate }
    types::BatchFailure = pruner::BatchFailure { batch, status, class }
    types::Counts = pruner::Counts { raw_chars, kept_chars, paragraphs, dropped, calls, jev_tokens, ms, work }
    types::StoredResult = pruner::StoredResult { id, chars, call, data }
    types::Pruned = pruner::Pruned {
        body, outcome, gate, shape, counts, ratio, threshold, log_line, record, paragraphs, failures, served_model,
    }
    types::UnitInfo = pruner::UnitInfo { index, byte_start, byte_end, char_start, char_end, kind }
    types::Inspection = pruner::Inspection { shape, wrapper_span, units }
    types::OmittedResult = omitted::OmittedResult { outcome, text, log_line }
    types::Answer = judge::Answer { question, kind, value, p, margin, mean }
    types::Decision = judge::Decision { verdict, rule, answers, jev_tokens, log_line }
    crate::judge::LoadError = judge::LoadError { line, column, message }
}

enums! {
    types::Lang = wit_types::Lang { Ja, En }
    types::FailureClass = wit_types::FailureClass {
        Http4xx, Http5xx, HttpOther, RateLimited, OutOfCredit, Network, Undecodable, NoAnswer, Timeout, Cancelled,
    }
    types::ScoringStop = scorer::ScoringStop { Timeout, Cancelled }
    types::Outcome = pruner::Outcome {
        Ok, Skipped, Structured, NoBasis, AllDropped, NothingDropped, BelowFloor, Timeout, Failed, Cancelled,
    }
    types::Gate = pruner::Gate { Disabled, ToolFailed, NotPrunable, TooShort, Repeated }
    types::Shape = pruner::Shape { Text, JsonWrapper, JsonArray }
    types::Fate = pruner::Fate { Kept, Dropped, Unscored, Fixed }
    types::UnitKind = pruner::UnitKind { Scored, Fixed, Blank }
    types::OmittedOutcome = omitted::OmittedOutcome { Ok, NotDropped, NotFound, TooLarge, Invalid }
    types::Dialect = omitted::Dialect { Plain, Openai, Anthropic, Mcp, McpHooked }
    types::QuestionKind = judge::QuestionKind { Choice, Noul, Score }
}

// The variants with payloads, by hand.

impl Convert<scorer::Failure> for types::Failure {
    fn convert(self) -> scorer::Failure {
        match self {
            types::Failure::Http(status) => scorer::Failure::Http(status),
            types::Failure::Network => scorer::Failure::Network,
        }
    }
}

impl Convert<types::Failure> for scorer::Failure {
    fn convert(self) -> types::Failure {
        match self {
            scorer::Failure::Http(status) => types::Failure::Http(status),
            scorer::Failure::Network => types::Failure::Network,
        }
    }
}

impl Convert<scorer::BatchAnswer> for types::BatchAnswer {
    fn convert(self) -> scorer::BatchAnswer {
        match self {
            types::BatchAnswer::Scores(scores) => scorer::BatchAnswer::Scores(scores),
            types::BatchAnswer::JevResponse(body) => scorer::BatchAnswer::JevResponse(body),
            types::BatchAnswer::Failed(failure) => scorer::BatchAnswer::Failed(failure.convert()),
        }
    }
}

impl Convert<types::BatchAnswer> for scorer::BatchAnswer {
    fn convert(self) -> types::BatchAnswer {
        match self {
            scorer::BatchAnswer::Scores(scores) => types::BatchAnswer::Scores(scores),
            scorer::BatchAnswer::JevResponse(body) => types::BatchAnswer::JevResponse(body),
            scorer::BatchAnswer::Failed(failure) => types::BatchAnswer::Failed(failure.convert()),
        }
    }
}

impl Convert<pruner::ScorerChoice> for types::ScorerChoice {
    fn convert(self) -> pruner::ScorerChoice {
        match self {
            types::ScorerChoice::Host(name) => pruner::ScorerChoice::Host(name),
            types::ScorerChoice::Offline => pruner::ScorerChoice::Offline,
            types::ScorerChoice::Stub => pruner::ScorerChoice::Stub,
        }
    }
}

impl Convert<types::ScorerChoice> for pruner::ScorerChoice {
    fn convert(self) -> types::ScorerChoice {
        match self {
            pruner::ScorerChoice::Host(name) => types::ScorerChoice::Host(name),
            pruner::ScorerChoice::Offline => types::ScorerChoice::Offline,
            pruner::ScorerChoice::Stub => types::ScorerChoice::Stub,
        }
    }
}

impl Convert<judge::Verdict> for types::Verdict {
    fn convert(self) -> judge::Verdict {
        match self {
            types::Verdict::Routed(to) => judge::Verdict::Routed(to),
            types::Verdict::Returned(note) => judge::Verdict::Returned(note),
            types::Verdict::Failed(class) => judge::Verdict::Failed(class.convert()),
        }
    }
}

impl Convert<types::Verdict> for judge::Verdict {
    fn convert(self) -> types::Verdict {
        match self {
            judge::Verdict::Routed(to) => types::Verdict::Routed(to),
            judge::Verdict::Returned(note) => types::Verdict::Returned(note),
            judge::Verdict::Failed(class) => types::Verdict::Failed(class.convert()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{:?}` without the `Type::` prefixes and the WIT field names of the
    /// generated Debug (`Outcome::NoBasis` → `NoBasis`, `jev-model` →
    /// `jev_model`), so that a plain value and its generated twin print the
    /// same when every field and case matches (the samples hold no `-`).
    fn debug<T: core::fmt::Debug>(value: &T) -> String {
        let text = format!("{value:?}").replace('-', "_");
        let mut out = String::new();
        let mut word = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            if c == ':' && chars.peek() == Some(&':') && word.starts_with(|w: char| w.is_ascii_uppercase()) {
                chars.next();
                word.clear();
                continue;
            }
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
        out + &word
    }

    /// `plain` crosses the boundary and back unchanged, and its generated
    /// twin prints the same fields and cases.
    fn crosses<P, W>(plain: P)
    where
        P: Convert<W> + Clone + PartialEq + core::fmt::Debug,
        W: Convert<P> + core::fmt::Debug,
    {
        let wit: W = plain.clone().convert();
        assert_eq!(debug(&wit), debug(&plain));
        let back: P = wit.convert();
        assert_eq!(back, plain);
    }

    fn pruned(outcome: types::Outcome, class: types::FailureClass) -> types::Pruned {
        types::Pruned {
            body: Some("body".into()),
            outcome,
            gate: Some(types::Gate::Repeated),
            shape: Some(types::Shape::JsonWrapper),
            counts: types::Counts { raw_chars: 1, kept_chars: 2, paragraphs: Some(3), dropped: 4, calls: 5, jev_tokens: 6, ms: Some(7), work: 8 },
            ratio: Some(0.25),
            threshold: 0.3,
            log_line: Some("tool prune: …".into()),
            record: Some(types::StoredResult { id: "P1".into(), chars: 9, call: Some("k".into()), data: "d".into() }),
            paragraphs: vec![types::ParagraphReport { index: 0, chars: 10, score: None, fate: types::Fate::Unscored }],
            failures: vec![types::BatchFailure { batch: 1, status: Some(503), class }],
            served_model: Some("jev".into()),
        }
    }

    #[test]
    fn every_value_crosses_the_boundary_field_for_field_and_case_for_case() {
        use types::*;
        for scorer in [ScorerChoice::Host("jev".into()), ScorerChoice::Offline, ScorerChoice::Stub] {
            crosses::<_, pruner::PruneInput>(PruneInput {
                request: "r".into(),
                text: "t".into(),
                enabled: true,
                succeeded: false,
                prunable: true,
                threshold: 0.2,
                lang: Lang::Ja,
                scorer,
                jev_model: Some("m".into()),
                agent: "a".into(),
                tool: "t".into(),
                report: true,
                arguments: Some("{}".into()),
                pruned_calls: vec!["c".into()],
                work_budget: Some(9),
            });
        }
        crosses::<_, pruner::Pruned>(pruned(Outcome::BelowFloor, FailureClass::RateLimited));
        crosses::<_, pruner::Pruned>(pruned(Outcome::NoBasis, FailureClass::Http4xx));
        crosses::<_, scorer::ScoringRequest>(ScoringRequest {
            basis: "b".into(),
            batches: vec![Batch { paragraphs: vec![0, 1], chunks: vec!["x".into(), "y".into()], jev_body: "{}".into() }],
            policy: TransportPolicy { max_in_flight: 4, deadline_ms: 20_000 },
        });
        let answers = vec![
            BatchAnswer::Scores(vec![Some(0.5), None]),
            BatchAnswer::JevResponse("{}".into()),
            BatchAnswer::Failed(Failure::Http(429)),
            BatchAnswer::Failed(Failure::Network),
        ];
        crosses::<_, scorer::ScoringResponse>(ScoringResponse { answers: Ok(answers), elapsed_ms: 3 });
        for stop in [ScoringStop::Timeout, ScoringStop::Cancelled] {
            crosses::<_, scorer::ScoringResponse>(ScoringResponse { answers: Err(stop), elapsed_ms: 3 });
        }
        crosses::<_, pruner::Inspection>(Inspection {
            shape: Some(Shape::JsonArray),
            wrapper_span: Some((1, 2)),
            units: vec![UnitInfo { index: 0, byte_start: 1, byte_end: 2, char_start: 3, char_end: 4, kind: UnitKind::Blank }],
        });
        crosses::<_, omitted::OmittedResult>(OmittedResult { outcome: OmittedOutcome::TooLarge, text: "t".into(), log_line: "l".into() });
        for verdict in [Verdict::Routed(vec!["a".into()]), Verdict::Returned(Some("n".into())), Verdict::Failed(FailureClass::NoAnswer)] {
            crosses::<_, judge::Decision>(Decision {
                verdict,
                rule: Some(2),
                answers: vec![Answer { question: "q".into(), kind: QuestionKind::Score, value: Some("3".into()), p: 0.5, margin: Some(0.1), mean: Some(2.5) }],
                jev_tokens: 7,
                log_line: "judge: …".into(),
            });
        }
        crosses::<_, judge::LoadError>(crate::judge::LoadError { line: 1, column: 2, message: "m".into() });
        crosses::<_, omitted::Dialect>(Dialect::McpHooked);
    }

    #[test]
    fn the_debug_comparison_tells_cases_apart() {
        assert_eq!(debug(&pruner::Outcome::NoBasis), "NoBasis");
        assert_eq!(debug(&Some(scorer::Failure::Http(3))), "Some(Http(3))");
        assert_ne!(debug(&pruner::ScorerChoice::Offline), debug(&types::ScorerChoice::Stub));
    }
}
