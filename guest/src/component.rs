//! The WIT bindings (`wit/pruner.wit`, world `toolprune`) and the export of
//! the pure modules as the component. On native targets the bindings compile
//! too, so the modules use the same types in unit tests; only the `export!`
//! is wasm-only.

wit_bindgen::generate!({
    world: "toolprune",
    path: "../wit",
});

use exports::toolprune::pruner::pruner::{
    Guest, GuestPruneJob, Lang, OmittedResult, ParagraphInfo, PruneInput, Pruned, StoredResult, ToolSpec,
};
use toolprune::pruner::types::{ScoringRequest, ScoringResponse};

/// The exported component.
pub struct Component;

impl Guest for Component {
    type PruneJob = crate::prune::Job;

    fn prune(input: PruneInput) -> Pruned {
        let job = crate::prune::Job::start(input);
        let response = job.request_ref().map(toolprune::pruner::scorer::score);
        job.complete(response)
    }

    fn omitted(arguments: String, lang: Lang, agent: String, store: Vec<StoredResult>) -> OmittedResult {
        crate::omitted::omitted(&arguments, lang, &agent, &store)
    }

    fn omitted_tool(lang: Lang) -> ToolSpec {
        crate::omitted::tool_spec(lang)
    }

    fn paragraphs(text: String) -> Vec<ParagraphInfo> {
        crate::prune::paragraph_infos(&text)
    }
}

impl GuestPruneJob for crate::prune::Job {
    fn new(input: PruneInput) -> Self {
        crate::prune::Job::start(input)
    }

    fn scoring_request(&self) -> Option<ScoringRequest> {
        self.request()
    }

    fn finish(&self, response: Option<ScoringResponse>) -> Pruned {
        self.complete(response)
    }
}

/// The judge router (`wit/judge.wit`, [`crate::judge`]).
impl exports::toolprune::pruner::judge::Guest for Component {
    type JudgeJob = crate::judge::Job;

    fn route(
        rules: String,
        message: String,
        jev_model: Option<String>,
        answers: Option<String>,
    ) -> Result<exports::toolprune::pruner::judge::Decision, Vec<exports::toolprune::pruner::judge::LoadError>> {
        crate::judge::route(&rules, message, jev_model, answers, toolprune::pruner::scorer::score)
    }
}

impl exports::toolprune::pruner::judge::GuestJudgeJob for crate::judge::Job {
    fn load(
        rules: String,
        message: String,
        jev_model: Option<String>,
    ) -> Result<exports::toolprune::pruner::judge::JudgeJob, Vec<exports::toolprune::pruner::judge::LoadError>> {
        crate::judge::Job::load(&rules, message, jev_model)
            .map(exports::toolprune::pruner::judge::JudgeJob::new)
            .map_err(crate::judge::load_errors_to_wit)
    }

    fn scoring_request(&self) -> ScoringRequest {
        crate::judge::Job::scoring_request(self)
    }

    fn finish(&self, response: ScoringResponse) -> exports::toolprune::pruner::judge::Decision {
        crate::judge::Job::finish(self, response)
    }
}

#[cfg(target_arch = "wasm32")]
export!(Component);
