//! The toolprune guest: every rule of SPEC §2–§12, once.
//!
//! Each module holds one rule and is plain Rust, tested natively
//! (`cargo test -p toolprune-guest`). [`component`] binds them to the WIT
//! world `toolprune:pruner/toolprune` (see `wit/pruner.wit`); it is compiled
//! into the component for `wasm32-unknown-unknown` and imports no WASI.

pub mod array;
pub mod basis;
pub mod batch;
pub mod component;
pub mod decide;
pub mod gates;
pub mod jev;
pub mod json;
pub mod judge;
pub mod limits;
pub mod log;
pub mod marker;
pub mod number;
pub mod offline;
pub mod omitted;
pub mod prune;
pub mod settings;
pub mod split;
pub mod stub;
pub mod toml;
pub mod wrapper;
