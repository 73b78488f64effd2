//! The toolprune guest: every rule of the SPEC, once. Each module holds one
//! rule, is plain Rust on the plain types of [`types`], and is tested
//! natively (`cargo test -p toolprune-guest`); [`component`] binds them to
//! the WIT world `toolprune:pruner/toolprune` (`wit/`), compiled for
//! `wasm32-unknown-unknown`; its only import is the host's `scorer.score`.
//! The generated bindings are private to [`component`], which converts at
//! the boundary; no module uses [`component`], and the modules form no
//! import cycle (`tests/modules.rs`).
//!
//! | module | rule | SPEC |
//! |---|---|---|
//! | [`gates`] | the cheap gates: enabled, succeeded, prunable, ≥ 4,000 characters | §2 |
//! | [`basis`] | the first 2,000 characters of the request; under 20 → `no_basis` | §3 |
//! | [`shape`] | text, JSON wrapper, JSON array or `structured` ([`json_scan`]: the span-aware scan) | §8, §13 |
//! | [`split`] | fences, blank lines, fixed and merged paragraphs | §4.1–§4.5 |
//! | [`batch`] | 16 paragraphs / 12,000 characters per batch | §4.6 |
//! | [`jev`] | the frozen question, request bodies, answers, failure classes | §5, §11 |
//! | [`offline`] | the offline lexical scorer | §14 |
//! | [`stub`] | the word-overlap stub scorer (tests, demos) | — |
//! | [`decide`] | verdicts, the net ratio, the 25 % floor | §7 |
//! | [`budget`] | the guest's own work budget, the same in every host | §7 |
//! | [`report`] | `prune --json`, `split`, `split --json`, `route`, `route --json` and a rules file's errors as every CLI prints them | §14 |
//! | [`body`] | the pruned body: header, markers, wrapper string, array elements | §9, §8, §13 |
//! | [`prune`] | one tool result from facts to outcome (the `prune-job`), `inspect` | §2–§12 |
//! | [`omitted`] | the way back and the tool's spec in each SDK's shape | §10 |
//! | [`log`] | the `tool prune:` line and label sanitising | §12 |
//! | [`settings`] | thresholds, configuration, prunable tools, retries, call limits, failure lines | §6, §11, §15 |
//! | [`limits`] | every number of the SPEC | all |
//! | [`judge`] | the judge router | §13 |
//! | [`json`], [`number`], [`toml_file`] | JSON string escaping, decimals, config and rules files read with the `toml` crate | — |
//! | [`types`] | the contract's values as plain Rust types (WIT names and fields) | §14 |
//! | [`component`] | the WIT bindings (private) and the conversions to and from [`types`] | §14 |

pub mod basis;
pub mod batch;
pub mod body;
pub mod budget;
pub mod component;
pub mod decide;
pub mod gates;
pub mod jev;
pub mod json;
pub mod json_scan;
pub mod judge;
pub mod limits;
pub mod log;
pub mod number;
pub mod offline;
pub mod omitted;
pub mod prune;
pub mod report;
pub mod settings;
pub mod shape;
pub mod split;
pub mod stub;
pub mod toml_file;
pub mod types;
