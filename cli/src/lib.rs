//! The `toolprune` command's parts (package `toolprune-cli`): report
//! renderers, `eval`, `jev check`, `route`, and the configuration glue. The
//! binary (`src/main.rs`) parses arguments and dispatches. Everything here
//! is presentation on top of the `toolprune` library; no rule lives here.

pub mod check;
pub mod eval;
pub mod jev;
pub mod report;
pub mod route;
pub mod proxy;
