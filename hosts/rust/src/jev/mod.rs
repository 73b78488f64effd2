//! Jev over HTTP: the real scorer (SPEC §5 routes, §11 failures, §12 what
//! leaves the machine, §14 the split).
//!
//! The guest is the codec: it encodes each batch's request body
//! (`batch.jev-body`) and decodes each 2xx answer
//! (`batch-answer::jev-response`). This module is transport only. It POSTs
//! the guest's bytes unchanged, adds the `Authorization` header, runs the
//! batches under the policy the guest sends (`scoring-request.policy`: in
//! flight, deadline, retries, retryable statuses), and hands back the status
//! or the response text. It never builds or reads Jev JSON and never counts
//! characters.
//!
//! - [`JevScorer`]: the [`Scorer`](crate::Scorer) (name `jev`).
//! - [`JevConfig`], [`Route`], [`Token`]: where to send and with what secret.
//! - [`Settings`]: the config file plus environment variables.
//! - [`CancelToken`]: stops a scoring call at once (`cancelled`).
//! - [`check`]: `toolprune jev check`, one two-paragraph request through the
//!   normal path, with a diagnosis.

mod cancel;
mod check;
mod config;
mod scorer;

pub use cancel::CancelToken;
pub use check::{check, CheckReport, Diagnosis};
pub use config::{JevConfig, JevProblem, Route, Settings, Token, ENV_VARS};
pub use scorer::{Attempt, BatchTrace, JevScorer};
