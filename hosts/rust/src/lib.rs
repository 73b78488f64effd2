//! The Rust host of the toolprune component (SPEC §14): mechanism only.
//!
//! - [`engine`]: wasmtime bindings of `wit/pruner.wit`, the compiled
//!   component ([`Pruner`], once per process) and resource [`Limits`].
//! - [`scorer`]: what answers the `scorer` import ([`Scorer`];
//!   [`StubScorer`], [`ScriptedScorer`]).
//! - [`turn`]: one user turn ([`Turn`]): a fresh instance, the turn store,
//!   fail-open calls (SPEC §10, §11).
//! - [`jev`]: the Jev scorer over HTTP ([`JevScorer`]), its routes and
//!   configuration, cancellation, `jev check`.
//! - [`judge`]: the judge router ([`judge::Judge`]): a rules file and a
//!   message in, a decision out (seed 003 §5).
//! - [`log`]: where the guest's log lines go (SPEC §12).
//! - [`report`]: JSON and table renderings for the CLI.
//! - [`eval`]: `toolprune eval`, reduction and recall on a labelled corpus.
//!
//! Every rule (gates, split, decisions, markers, counts, log lines) is the
//! guest's. The host never parses or builds Jev JSON and never counts
//! characters.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolprune::{Pruner, StubScorer, ToolResult, Turn, TurnOptions};
//!
//! let pruner = Pruner::shared()?;
//! let mut options = TurnOptions::new("How does the Streamable HTTP transport resume a stream?");
//! options.enabled = true;
//! let mut turn = Turn::new(pruner, Arc::new(StubScorer), options);
//! let pruned = turn.on_tool_result(ToolResult::prunable("fetch", std::fs::read_to_string("page.md")?));
//! println!("{}", pruned.body);
//! # anyhow::Ok(())
//! ```

pub mod engine;
pub mod jev;
pub mod judge;
pub mod eval;
pub mod log;
pub mod report;
pub mod scorer;
pub mod turn;
pub mod types;

pub use engine::{GuestFailure, Limits, Pruner};
pub use jev::{CancelToken, JevConfig, JevScorer, Settings};
pub use log::{CapturedLog, LogSink, StderrLog};
pub use scorer::{OfflineScorer, Scorer, ScriptedScorer, StubScorer};
pub use turn::{PruneJob, Pruned, ToolResult, Turn, TurnOptions};
