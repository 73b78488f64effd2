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

/// Fuel for one call into the guest: this base (≈ 2 s of guest work here)…
pub const FUEL_BASE: u64 = 5_000_000_000;
/// … plus this much per byte of the text. Pruning costs ≈ 150–1,200 fuel per
/// byte (more with many short paragraphs); 5,000 leaves room and still stops
/// a looping guest.
pub const FUEL_PER_BYTE: u64 = 5_000;
/// Wall time for one call in hosts without fuel (Node): this base (ms)…
pub const WALL_MS_BASE: u32 = 5_000;
/// … plus 1 ms per this many bytes of the text.
pub const WALL_BYTES_PER_MS: u64 = 1_000;
/// Linear memory of an instance: this base…
pub const MEMORY_BASE: u64 = 256 << 20;
/// … plus this many bytes per byte of the text (the guest holds a few copies) …
pub const MEMORY_PER_BYTE: u64 = 16;
/// … and at most this (wasm32 addresses 4 GiB).
pub const MEMORY_MAX: u64 = 3 << 30;
