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
        let response = job.request().map(|request| toolprune::pruner::scorer::score(&request));
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

#[cfg(target_arch = "wasm32")]
export!(Component);
