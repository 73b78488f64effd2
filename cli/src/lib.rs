//! The `toolprune` command's parts (package `toolprune-cli`): `eval`, `jev check`, `route`, the configuration glue, one
//! adapter per agent (`agents`) on the hook runtime (`hook`) and the
//! installer engine (`install`), their session store (`store`), the log file
//! every door writes (`logfile`) and what `toolprune stats` reads from it
//! (`stats`), and the `omitted` MCP server (`mcp`). The
//! binary (`src/main.rs`) parses arguments and dispatches. Everything here
//! is presentation on top of the `toolprune` library; no rule lives here,
//! and the reports every CLI prints (`prune --json`, `split`, `split
//! --json`) are rendered by the guest (`report` in `wit/report.wit`).

pub mod agents;
pub mod check;
pub mod eval;
pub mod hook;
pub mod install;
pub mod jev;
pub mod logfile;
pub mod mcp;
pub mod route;
pub mod proxy;
pub mod stats;
pub mod store;
