//! The toolprune component, built from `guest/` by this crate's build script.
//!
//! Hosts and tests take the component from here instead of building it or
//! copying it by hand: [`component`] for its bytes, [`COMPONENT_PATH`] for a
//! file. `cargo run -p toolprune-artifacts --bin toolprune-dist` writes it to
//! `dist/toolprune.wasm`.
//!
//! In the repository the build script builds the guest (the wasm32 target is
//! needed); a packaged copy of this crate (`scripts/package`, `dist/crates/`)
//! embeds the component packaged with it, checked against its SHA-256 at
//! build time, and needs no wasm32 target ([`COMPONENT_ORIGIN`]).

/// Path of the component (`toolprune.wasm` in this crate's `OUT_DIR`), as
/// built by the compilation that this crate is part of.
pub const COMPONENT_PATH: &str = concat!(env!("OUT_DIR"), "/toolprune.wasm");

/// The component's bytes: the guest compiled for `wasm32-unknown-unknown`
/// and encoded with `wit-component`, world `toolprune:pruner/toolprune`,
/// importing no WASI.
pub fn component() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/toolprune.wasm"))
}

/// A component of world `toolprune` whose exports carry contract version
/// 0.2.0, from `wit/since_v0.2.0/` (a dummy core module; it does nothing): for tests of the hosts'
/// version check (`$OUT_DIR/contract-0.2.0.wasm`).
pub fn contract_0_2_component() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/contract-0.2.0.wasm"))
}

/// Path of [`contract_0_2_component`]'s file, for hosts that load a path.
pub const CONTRACT_0_2_PATH: &str = concat!(env!("OUT_DIR"), "/contract-0.2.0.wasm");

/// Where [`component`] came from: `"guest-build"` (built from `guest/` by the
/// build script, in the repository) or `"prebuilt"` (the packaged
/// `prebuilt/toolprune.wasm`, whose SHA-256 matched `prebuilt/SHA256SUMS`).
pub const COMPONENT_ORIGIN: &str = env!("TOOLPRUNE_COMPONENT_ORIGIN");

/// The SHA-256 of [`component`]'s bytes, 64 lowercase hex digits.
pub const COMPONENT_SHA256: &str = env!("TOOLPRUNE_COMPONENT_SHA256");
