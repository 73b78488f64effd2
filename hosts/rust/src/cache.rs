//! The disk cache of the compiled component (a fast cold start for short
//! processes: the CLI, agent hooks).
//!
//! An entry is `Engine::precompile_component`'s output, named by the
//! component's SHA-256 and the engine's compatibility hash (the wasmtime
//! version and every setting that changes the machine code), with the
//! SHA-256 of the entry's own bytes written beside it. Both files are
//! written atomically (a temporary file, then a rename). Before the
//! `unsafe` [`Component::deserialize`], the entry's digest must match: a
//! corrupt, truncated or foreign entry is ignored, the component is compiled
//! again and the entry rewritten. A directory that cannot be created,
//! read or written only costs the compile (in memory).

use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

/// Where compiled components are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CacheDir {
    /// `$TOOLPRUNE_CACHE_DIR`, else `$XDG_CACHE_HOME/toolprune`, else
    /// `$HOME/.cache/toolprune`; no cache when none of them is set.
    #[default]
    Default,
    /// This directory (created if missing).
    Dir(PathBuf),
    /// Compile in memory every time.
    Off,
}

impl CacheDir {
    /// The directory this choice names, if any.
    pub fn path(&self) -> Option<PathBuf> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        match self {
            CacheDir::Off => None,
            CacheDir::Dir(dir) => Some(dir.clone()),
            CacheDir::Default => var("TOOLPRUNE_CACHE_DIR")
                .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("toolprune")))
                .or_else(|| var("HOME").map(|d| d.join(".cache").join("toolprune"))),
        }
    }
}

/// Feeds `Hash` output into SHA-256 (a stable digest, unlike `DefaultHasher`'s).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The entry's file name stem: the component's digest and the engine's.
pub fn entry_name(engine: &Engine, component: &[u8]) -> String {
    let mut hasher = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let engine_digest = hasher.0.finalize();
    format!("{}-{}", &hex(&Sha256::digest(component))[..32], &hex(&engine_digest)[..16])
}

/// The compiled `component`: from `cache` when a valid entry exists, else
/// compiled (and written to `cache`). Errors only when compiling fails.
pub fn load_component(engine: &Engine, component: &[u8], cache: &CacheDir) -> anyhow::Result<Component> {
    let compile = || {
        Component::new(engine, component)
            .map_err(anyhow::Error::from)
            .context("compiling the toolprune component")
    };
    let Some(dir) = cache.path() else { return compile() };
    let name = entry_name(engine, component);
    let entry = dir.join(format!("{name}.cwasm"));
    let digest = dir.join(format!("{name}.sha256"));
    if let Some(found) = read_entry(engine, &entry, &digest) {
        return Ok(found);
    }
    let Ok(serialized) = engine.precompile_component(component) else { return compile() };
    // SAFETY: these bytes were produced just now by `precompile_component`
    // of this very engine.
    let compiled = unsafe { Component::deserialize(engine, &serialized) };
    let compiled = match compiled {
        Ok(compiled) => compiled,
        Err(_) => return compile(),
    };
    let _ = write_entry(&dir, &entry, &digest, &serialized);
    Ok(compiled)
}

/// A cached entry whose bytes match the digest written beside them.
fn read_entry(engine: &Engine, entry: &Path, digest: &Path) -> Option<Component> {
    let expected = std::fs::read_to_string(digest).ok()?;
    let bytes = std::fs::read(entry).ok()?;
    if hex(&Sha256::digest(&bytes)) != expected.trim() {
        return None;
    }
    // SAFETY: the bytes are exactly those this host wrote after
    // `Engine::precompile_component` (their SHA-256 matches the digest
    // written beside them, atomically, by the same code), under a name that
    // includes the engine's compatibility hash; `deserialize` checks the
    // wasmtime version and configuration again.
    unsafe { Component::deserialize(engine, &bytes) }.ok()
}

/// Writes `path` atomically: a temporary file in the same directory, then a rename.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id()
    ));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn write_entry(dir: &Path, entry: &Path, digest: &Path, serialized: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // The entry first, then its digest: a reader that sees the new digest
    // sees the new entry too (an old digest with a new entry is a mismatch:
    // ignored and rewritten).
    write_atomic(dir, entry, serialized)?;
    write_atomic(dir, digest, hex(&Sha256::digest(serialized)).as_bytes())
}
