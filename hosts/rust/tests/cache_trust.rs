//! The compiled-component cache holds native code, so it trusts only what
//! this user wrote (issue 27 §4; hosts/rust/src/cache.rs): a private
//! directory (0700, owner-checked, never a symbolic link), private files
//! (0600) created exclusively, and an entry another user owns, or one that
//! is reached through a link, is never loaded — the component is compiled
//! again instead.
//!
//! The tests plant a *valid* compiled entry of another component (the
//! contract-0.2.0 build) under the real component's entry name, with a
//! matching digest: loaded, it makes `Pruner::load` fail ("implements
//! contract 0.2.0"), so a load that succeeds proves the entry was not used.
//! `a_planted_entry_of_this_user_is_loaded` shows the plant works.
//!
//! The second user is uid 65534 (`nobody`): files are chowned to it and
//! commands run as it, which needs root. CI runs as root; anywhere else these
//! tests fail unless `TOOLPRUNE_TEST_NO_SECOND_UID=1` says to skip them.
#![cfg(unix)]

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use sha2::Digest as _;
use toolprune::{CacheDir, LoadOptions, Pruner};

const NOBODY: u32 = 65534;

/// Whether this test may act as a second user (root); panics when it
/// cannot and no one said to skip.
fn second_uid() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("TOOLPRUNE_TEST_NO_SECOND_UID").as_deref() == Ok("1") {
        eprintln!("skipped: needs root to act as a second uid (TOOLPRUNE_TEST_NO_SECOND_UID=1)");
        return false;
    }
    panic!("this test needs root to own files as a second uid (CI runs as root); set TOOLPRUNE_TEST_NO_SECOND_UID=1 to skip it");
}

/// A fresh, empty directory under the target dir (mode 0755, so that the
/// second user can reach what a test lets it reach).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cache-trust").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for d in [dir.parent().unwrap(), &dir] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn load(component: Option<Vec<u8>>, dir: &Path) -> anyhow::Result<Pruner> {
    Pruner::load(LoadOptions {
        component: component.map(Arc::from),
        cache: CacheDir::Dir(dir.to_path_buf()),
        ..LoadOptions::default()
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    found.sort();
    found
}

/// The real component's entry stem and its compiled bytes, and a compiled
/// entry of the contract-0.2.0 component made by the same engine.
struct Entries {
    stem: String,
    good: Vec<u8>,
    foreign: Vec<u8>,
}

fn entries() -> &'static Entries {
    static ENTRIES: OnceLock<Entries> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let dir = scratch("real");
        load(None, &dir).unwrap();
        let cwasm = names(&dir).into_iter().find(|n| n.ends_with(".cwasm")).unwrap();
        let good = std::fs::read(dir.join(&cwasm)).unwrap();
        let stem = cwasm.trim_end_matches(".cwasm").to_string();
        let other = scratch("contract-0.1");
        load(Some(toolprune_artifacts::contract_0_2_component().to_vec()), &other).expect_err("0.2.0 is refused");
        let foreign_name = names(&other).into_iter().find(|n| n.ends_with(".cwasm")).expect("the 0.2.0 compile was cached");
        let foreign = std::fs::read(other.join(foreign_name)).unwrap();
        assert_ne!(foreign, good);
        Entries { stem, good, foreign }
    })
}

/// Writes the foreign entry and its digest into `dir` under the real
/// component's name (mode 0600, owned by this user); returns both paths.
fn plant(dir: &Path) -> (PathBuf, PathBuf) {
    let e = entries();
    let entry = dir.join(format!("{}.cwasm", e.stem));
    let digest = dir.join(format!("{}.sha256", e.stem));
    for (path, bytes) in [(&entry, e.foreign.clone()), (&digest, sha256_hex(&e.foreign).into_bytes())] {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    (entry, digest)
}

/// A private cache directory (0700) of this user.
fn private(name: &str) -> PathBuf {
    let dir = scratch(name).join("cache");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o777
}

fn owner(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().uid()
}

/// Asserts the load compiled the real component and left a private entry of
/// this user (the real bytes, 0600) in place of what was planted.
fn assert_recompiled_and_replaced(dir: &Path) {
    let e = entries();
    let pruner = load(None, dir).expect("the planted entry is not loaded");
    assert_eq!(pruner.version(), "0.3.0");
    let entry = dir.join(format!("{}.cwasm", e.stem));
    let digest = dir.join(format!("{}.sha256", e.stem));
    assert_eq!(std::fs::read(&entry).unwrap(), e.good, "the entry is rewritten");
    for path in [&entry, &digest] {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert!(meta.file_type().is_file(), "{}", path.display());
        assert_eq!(meta.uid(), unsafe { libc::geteuid() }, "{}", path.display());
        assert_eq!(meta.mode() & 0o777, 0o600, "{}", path.display());
    }
}

/// Runs `script` with `sh -c` as the second user; its exit status.
fn as_nobody(script: &str) -> std::process::ExitStatus {
    Command::new("/bin/sh").arg("-c").arg(script).uid(NOBODY).gid(NOBODY).stderr(std::process::Stdio::null()).status().unwrap()
}

#[test]
fn a_planted_entry_of_this_user_is_loaded() {
    // The control: the plant is a valid entry, so every test below that
    // loads 0.2.0 from a planted directory did not use it.
    let dir = private("control");
    plant(&dir);
    let err = load(None, &dir).expect_err("the planted 0.2.0 entry is loaded");
    assert!(format!("{err:#}").contains("implements contract 0.2.0"), "{err:#}");
}

#[test]
fn the_cache_directory_is_0700_and_its_files_0600() {
    let parent = scratch("modes");
    let dir = parent.join("a").join("cache");
    load(None, &dir).unwrap();
    assert_eq!(mode(&dir), 0o700);
    let files = names(&dir);
    assert_eq!(files.len(), 2, "{files:?}");
    for name in files {
        assert_eq!(mode(&dir.join(&name)), 0o600, "{name}");
    }
}

#[test]
fn an_existing_cache_directory_others_can_reach_is_narrowed_to_0700() {
    let dir = scratch("narrowed").join("cache");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    load(None, &dir).unwrap();
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn an_entry_another_user_owns_is_never_loaded_but_recompiled_and_replaced() {
    if !second_uid() {
        return;
    }
    for chowned in ["both", "entry", "digest"] {
        let dir = private(&format!("foreign-owner-{chowned}"));
        let (entry, digest) = plant(&dir);
        if chowned != "digest" {
            std::os::unix::fs::lchown(&entry, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        if chowned != "entry" {
            std::os::unix::fs::lchown(&digest, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        assert_recompiled_and_replaced(&dir);
    }
}

#[test]
fn an_entry_others_can_write_is_never_loaded_but_recompiled_and_replaced() {
    let dir = private("loose-entry");
    let (entry, digest) = plant(&dir);
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&digest, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_recompiled_and_replaced(&dir);
}

#[test]
fn a_cache_directory_another_user_owns_is_never_used() {
    if !second_uid() {
        return;
    }
    let dir = private("foreign-dir");
    let (entry, digest) = plant(&dir);
    for path in [&dir, &entry, &digest] {
        std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let before = names(&dir);
    let pruner = load(None, &dir).expect("nothing of the other user's is loaded");
    assert_eq!(pruner.version(), "0.3.0");
    assert_eq!(names(&dir), before, "nothing is written into another user's directory");
    assert_eq!(std::fs::read(&entry).unwrap(), entries().foreign);
    assert_eq!(owner(&dir), NOBODY);
}

#[test]
fn a_second_user_can_neither_read_nor_plant_in_the_cache() {
    if !second_uid() {
        return;
    }
    let dir = scratch("closed").join("cache");
    load(None, &dir).unwrap();
    let d = dir.display();
    assert!(!as_nobody(&format!("ls '{d}'")).success(), "nobody lists the cache");
    assert!(!as_nobody(&format!(": > '{d}/planted'")).success(), "nobody writes into the cache");
    assert!(!as_nobody(&format!("ln -s /etc/passwd '{d}/planted'")).success(), "nobody plants a link");
    assert_eq!(names(&dir).len(), 2);
}

#[test]
fn links_a_second_user_planted_while_the_directory_was_open_are_never_followed() {
    if !second_uid() {
        return;
    }
    // Our cache directory, left world-writable by an older toolprune (or a
    // umask); the second user plants links at both names, pointing to a
    // valid entry of ours elsewhere (0600) — followed, it would be loaded.
    let outside = private("planted-links-target");
    let (target_entry, target_digest) = plant(&outside);
    let dir = scratch("planted-links").join("cache");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let stem = &entries().stem;
    let script = format!(
        "ln -s '{}' '{d}/{stem}.cwasm' && ln -s '{}' '{d}/{stem}.sha256'",
        target_entry.display(),
        target_digest.display(),
        d = dir.display()
    );
    assert!(as_nobody(&script).success(), "the second user plants the links");
    assert_eq!(owner(&dir.join(format!("{stem}.cwasm"))), NOBODY);
    assert_recompiled_and_replaced(&dir);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(std::fs::read(&target_entry).unwrap(), entries().foreign, "nothing is written through a link");
}

#[test]
fn an_entry_reached_through_a_link_of_this_user_is_never_loaded() {
    let outside = private("own-links-target");
    let (target_entry, target_digest) = plant(&outside);
    let dir = private("own-links");
    let stem = &entries().stem;
    std::os::unix::fs::symlink(&target_entry, dir.join(format!("{stem}.cwasm"))).unwrap();
    std::os::unix::fs::symlink(&target_digest, dir.join(format!("{stem}.sha256"))).unwrap();
    assert_recompiled_and_replaced(&dir);
    assert_eq!(std::fs::read(&target_entry).unwrap(), entries().foreign, "nothing is written through a link");
}

#[test]
fn a_cache_directory_that_is_a_link_is_never_used() {
    let real = private("dir-link-target");
    plant(&real);
    let link = scratch("dir-link").join("cache");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let before = names(&real);
    let pruner = load(None, &link).expect("the linked directory is not used");
    assert_eq!(pruner.version(), "0.3.0");
    assert_eq!(names(&real), before, "nothing is written through the link");
}
