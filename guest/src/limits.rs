//! Every number of the SPEC, once. Lengths are characters (Unicode scalar values).

/// SPEC §2: results shorter than this are never pruned (characters).
pub const MIN_CHARS: usize = 4_000;
/// SPEC §3: the basis is at most this many characters of the request.
pub const BASIS_CHARS: usize = 2_000;
/// SPEC §3: a trimmed basis shorter than this gives `no_basis` (characters).
pub const MIN_BASIS_CHARS: usize = 20;
/// SPEC §4.3: a paragraph longer than this is fixed: unscored and kept (characters).
pub const MAX_PARAGRAPH_CHARS: usize = 6_000;
/// SPEC §4.4: a paragraph shorter than this merges into a neighbour (characters).
pub const MIN_PARAGRAPH_CHARS: usize = 120;
/// SPEC §4.6: paragraphs per batch, at most.
pub const BATCH_PARAGRAPHS: usize = 16;
/// SPEC §4.6: characters per batch, at most.
pub const BATCH_CHARS: usize = 12_000;
/// SPEC §4.6: scorer calls in flight, at most.
pub const MAX_IN_FLIGHT: u32 = 4;
/// SPEC §11: deadline for the whole scoring of one result (ms).
pub const DEADLINE_MS: u32 = 20_000;
/// SPEC §11: retries per batch on 429 / 5xx.
pub const MAX_RETRIES: u32 = 1;
/// Wait before a retry without a usable `Retry-After` (ms).
pub const RETRY_BACKOFF_MS: u32 = 250;
/// SPEC §7: the net reduction floor.
pub const MIN_REDUCTION: f64 = 0.25;
/// SPEC §6: the four thresholds and the default.
pub const THRESHOLDS: [f64; 4] = [0.1, 0.2, 0.3, 0.5];
pub const DEFAULT_THRESHOLD: f64 = 0.2;
/// SPEC §8: a wrapper's string holds at least this share of the raw characters.
pub const WRAPPER_SHARE: f64 = 0.6;
/// SPEC §10: characters returned by one `omitted` call, at most.
pub const OMITTED_MAX_CHARS: usize = 20_000;

/// SPEC §10: a conversation's store keeps at most this many pruned results (oldest evicted first).
pub const STORE_MAX_RECORDS: u32 = 256;
/// SPEC §10: … and at most this many characters of dropped text.
pub const STORE_MAX_CHARS: u64 = 16_000_000;
/// SPEC §10: an on-disk session store untouched this long is deleted (seconds; 2 days).
pub const STORE_MAX_AGE_S: u64 = 172_800;

/// Safety nets for one call into the guest (SPEC §7): far above what the
/// work budget ([`WORK_PER_BYTE`]) lets the guest spend, so that they only
/// stop a guest that loops and never decide where the budget would not.
/// Fuel (hosts with fuel): this base (≈ 2 s of guest work here) …
pub const FUEL_BASE: u64 = 5_000_000_000;
/// … plus this much per byte of the text. Pruning costs ≈ 150–1,200 fuel per
/// byte for ≈ 5 work units per byte; the budget's 32 units per byte are then
/// at most ≈ 8,000 fuel per byte: 50,000 stays far above.
pub const FUEL_PER_BYTE: u64 = 50_000;
/// Wall time for one call in hosts without fuel (Node): this base (ms) …
pub const WALL_MS_BASE: u32 = 30_000;
/// … plus 1 ms per this many bytes of the text (an 18 MB text: 210 s, where
/// the guest needs ≈ 1 s on an idle core).
pub const WALL_BYTES_PER_MS: u64 = 100;
/// Linear memory of an instance: this base…
pub const MEMORY_BASE: u64 = 256 << 20;
/// … plus this many bytes per byte of the text (the guest holds a few copies) …
pub const MEMORY_PER_BYTE: u64 = 16;
/// … and at most this (wasm32 addresses 4 GiB).
pub const MEMORY_MAX: u64 = 3 << 30;

/// SPEC §7: the guest's work budget for one result (counted by the `budget` module):
/// this base (units) …
pub const WORK_BASE: u64 = 1_000_000;
/// … plus this many units per byte of the text. Pruning charges ≈ 4–6 units
/// per byte (split, request, scoring, body): the budget only stops a result
/// whose work would be out of proportion to its text, the same in every host.
pub const WORK_PER_BYTE: u64 = 32;

/// The largest configuration file read (bytes): a larger one is refused at
/// once with one line, and pruning is off (issue 27 §7).
pub const CONFIG_MAX_BYTES: usize = 1 << 20;
