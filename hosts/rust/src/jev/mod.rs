//! Jev over HTTP: the real scorer (SPEC §5 routes, §11 failures, §12 what
//! leaves the machine, §14 the split).
//!
//! The guest is the codec and the policy: it encodes each batch's request
//! body (`batch.jev-body`), decodes each 2xx answer
//! (`batch-answer::jev-response`), resolves the route, URL and model from
//! the environment and the config file (`settings.resolve`), and decides
//! every retry (`settings.retry-delay`). This module is transport only: it
//! POSTs the guest's bytes unchanged with the `Authorization` header, and
//! hands back the status or the response text. It never builds or reads Jev
//! JSON, never counts characters, and knows no URL or variable name.

mod scorer;

pub use scorer::{Attempt, JevScorer};
