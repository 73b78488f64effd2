//! The Rust host of the toolprune component (contract 0.3, SPEC §14):
//! mechanism only — every name, text, number and rule is the guest's. It
//! provides the component's one import, `scorer.score` (`wit/scorer.wit`):
//! a result is pruned in one call of `pruner.prune`, the guest asking this
//! host's scorer at most once from inside it ([`Form::Import`], the
//! default); [`Form::Jobs`] runs the same exchange as a `prune-job`.
//!
//! | module | what | SPEC |
//! |---|---|---|
//! | [`engine`] | the compiled, version-checked component ([`Pruner`]), the `scorer.score` import, a pool of instances, per-call limits from `settings.call-limits-for` | §11, §14 |
//! | [`cache`] | the disk cache of the compiled component ([`CacheDir`]) | — |
//! | [`conversation`] | [`Conversation`] (id counter, bounded store), [`Turn`], [`PruneResult`], [`Form`], `omitted` | §2–§12, §14 |
//! | [`store`] | where a conversation keeps its id counter and pruned results: [`ResultStore`], [`MemoryStore`] (default) | §10 |
//! | [`scorer`] | [`Scoring`] (offline, stub, host), the [`Scorer`] trait, the deadline and retry questions ([`ScoringContext`]), [`ScriptedScorer`] | §5, §11, §14 |
//! | [`jev`] | the Jev transport over HTTP ([`JevScorer`]), configured by the guest's `settings.resolve` | §5, §11 |
//! | [`judge`] | the judge router ([`judge::Judge`]) | §13 |
//! | [`cancel`] | [`CancelToken`] | §11 |
//! | [`log`] | where log lines go ([`LogSink`]) | §12 |
//! | [`types`] | the WIT types under friendly names, [`types::wit_name`] (the generated bindings themselves are private) | — |
//!
//! ```no_run
//! use toolprune::{ConversationOptions, Pruner, Scoring, ToolResult};
//!
//! let pruner = Pruner::shared()?;
//! let conversation = pruner.conversation(ConversationOptions {
//!     enabled: true,
//!     scoring: Some(Scoring::Stub),
//!     ..ConversationOptions::default()
//! })?;
//! let turn = conversation.turn("How does the Streamable HTTP transport resume a stream?");
//! let result = turn.on_tool_result(ToolResult::prunable("fetch", std::fs::read_to_string("page.md")?));
//! println!("{}", result.body);
//! // Later, when the model calls the `omitted` tool:
//! let answer = conversation.omitted(r#"{"id": "P1"}"#);
//! println!("{}", answer.text);
//! # anyhow::Ok(())
//! ```

pub mod cache;
pub mod cancel;
pub mod conversation;
pub mod engine;
pub mod jev;
pub mod judge;
pub mod log;
pub mod scorer;
pub mod store;
pub mod types;
mod wit;

pub use cache::CacheDir;
pub use cancel::CancelToken;
pub use conversation::{Conversation, ConversationError, ConversationOptions, Form, OmittedAnswer, PruneResult, ToolResult, Turn};
pub use engine::{HostFailure, LimitsOverride, LoadOptions, Pruner};
pub use jev::{Attempt, JevScorer};
pub use log::{CapturedLog, LogSink, StderrLog};
pub use scorer::{Scorer, Scoring, ScoringContext, ScriptedScorer};
pub use store::{MemoryStore, ResultStore, StoreError};
