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
//!
//! **An entry is native code** (deserializing trusts it completely), so on
//! Unix the cache has the session store's rules (issue 27 §4):
//! - the directory is created 0700; one that is a symbolic link, not a
//!   directory, or owned by another user is never used (the compile stays
//!   in memory); one of ours that others can reach is narrowed to 0700
//!   before anything in it is read or written;
//! - an entry or digest is opened without following a symbolic link and read
//!   only when it is a regular file owned by this user and private (no
//!   group/other bits): anything else is ignored and replaced by a fresh
//!   compile, never loaded;
//! - new files are created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode
//!   0600) under an unpredictable temporary name, then renamed over the
//!   entry (a rename replaces a planted link, never writes through it).

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
/// compiled (and written to `cache`). Errors only when compiling fails: an
/// unusable or untrusted cache (module docs) only costs the compile.
pub fn load_component(engine: &Engine, component: &[u8], cache: &CacheDir) -> anyhow::Result<Component> {
    let compile = || {
        Component::new(engine, component)
            .map_err(anyhow::Error::from)
            .context("compiling the toolprune component")
    };
    let Some(dir) = cache.path() else { return compile() };
    if private_dir(&dir).is_err() {
        return compile();
    }
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

/// This process's effective user id.
#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes `dir` the cache directory, or refuses it: created (parents too)
/// with mode 0700; an existing one must be a real directory (not a symbolic
/// link) owned by this user, and is narrowed to 0700 when others can reach it.
#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != euid() {
        return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "not a directory of this user"));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// The bytes of `path` when it is a regular file of this user that nobody
/// else can read or write, opened without following a symbolic link (nor
/// blocking on a FIFO); `None` otherwise.
#[cfg(unix)]
fn read_private(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != euid() || meta.mode() & 0o077 != 0 {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(not(unix))]
fn read_private(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// A cached entry whose bytes match the digest written beside them, both
/// files private to this user ([`read_private`]).
fn read_entry(engine: &Engine, entry: &Path, digest: &Path) -> Option<Component> {
    let expected = read_private(digest)?;
    let bytes = read_private(entry)?;
    if hex(&Sha256::digest(&bytes)).as_bytes() != expected.trim_ascii() {
        return None;
    }
    // SAFETY: the bytes are exactly those this host wrote after
    // `Engine::precompile_component` (their SHA-256 matches the digest
    // written beside them, atomically, by the same code), in files owned by
    // this user that no other user can write, in a directory only this user
    // can write, under a name that includes the engine's compatibility hash;
    // `deserialize` checks the wasmtime version and configuration again.
    unsafe { Component::deserialize(engine, &bytes) }.ok()
}

/// Creates `path` (which must not exist, and is never a symbolic link
/// followed) with mode 0600 and writes `bytes` to disk.
fn create_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Writes `path` atomically: a new private file under an unpredictable
/// name in the same directory, then a rename over `path`.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        hex(&nonce)
    ));
    let written = create_private(&tmp, bytes);
    if let Err(e) = &written {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            return written; // not ours: leave it
        }
    }
    written.and_then(|()| std::fs::rename(&tmp, path)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn write_entry(dir: &Path, entry: &Path, digest: &Path, serialized: &[u8]) -> std::io::Result<()> {
    // The entry first, then its digest: a reader that sees the new digest
    // sees the new entry too (an old digest with a new entry is a mismatch:
    // ignored and rewritten).
    write_atomic(dir, entry, serialized)?;
    write_atomic(dir, digest, hex(&Sha256::digest(serialized)).as_bytes())
}
