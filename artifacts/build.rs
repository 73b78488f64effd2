//! Builds the toolprune component.
//!
//! `guest/` is compiled for `wasm32-unknown-unknown` by a nested `cargo build`
//! with the workspace's `[profile.guest]`, in its own target dir
//! (`<target>/guest-build`, shared by every outer profile) so that it never
//! waits on the lock that the outer build holds. The core module is then
//! turned into a component by `wit-component`, without an adapter: the guest
//! imports no WASI. The result is `$OUT_DIR/toolprune.wasm`
//! (`toolprune_artifacts::COMPONENT_PATH`).
//!
//! The nested build needs the standard library of `wasm32-unknown-unknown`.
//! `scripts/setup` provides it, and this script picks the toolchain itself:
//!
//! * the outer build's own cargo and rustc, when their sysroot has it
//!   (`rustup target add wasm32-unknown-unknown`);
//! * otherwise Debian's (`rustc-web`, `cargo-web`, `rust-web-src`, `lld-22`,
//!   installed by `scripts/setup` when rustup cannot add the target), which
//!   build std from source with `-Zbuild-std`. `TOOLPRUNE_GUEST_BUILD_STD=1`
//!   forces this road.
//!
//! With neither, the build fails with one line naming `scripts/setup`. This
//! script never downloads a toolchain.
//!
//! **Prebuilt** (issue 14): a copy of this crate without the guest's source
//! beside it — the packaged crate that `scripts/package` writes to
//! `dist/crates/`, or one from a registry — embeds the component that was
//! packaged with it instead, so that it builds on a toolchain without the
//! wasm32 target: `prebuilt/toolprune.wasm` and `prebuilt/contract-0.2.0.wasm`,
//! each checked against `prebuilt/SHA256SUMS` (written by `scripts/package`
//! from the files it built) before it is used. A missing file or a digest that
//! does not match stops the build with one line naming both digests; nothing is
//! ever built or downloaded instead. The feature `prebuilt` forces this road
//! inside the repository too. The road taken is
//! `toolprune_artifacts::COMPONENT_ORIGIN` (`guest-build` or `prebuilt`).

use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use wit_component::ComponentEncoder;

const GUEST_PACKAGE: &str = "toolprune-guest";
/// The guest's lib name, which names the core module and its dep-info file.
const GUEST_LIB: &str = "toolprune_guest";
const GUEST_TARGET: &str = "wasm32-unknown-unknown";
const GUEST_PROFILE: &str = "guest";
const COMPONENT_FILE: &str = "toolprune.wasm";

/// Debian's toolchain, as `scripts/setup` installs it.
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
/// From `lld-22`. Any name of lld will do: rustc passes it `-flavor wasm`.
const DEBIAN_LINKER: &str = "/usr/bin/wasm-ld-22";
const DEBIAN_STD_SOURCES: &str = "/usr/lib/rustlib/src/rust/library";

const FORCE_BUILD_STD: &str = "TOOLPRUNE_GUEST_BUILD_STD";

/// The prebuilt road: the folder (in this crate) and its files.
const PREBUILT_DIR: &str = "prebuilt";
const PREBUILT_SUMS: &str = "SHA256SUMS";
const FOREIGN_CONTRACT_FILE: &str = "contract-0.2.0.wasm";

fn main() -> Result<()> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();

    let forced = env::var_os("CARGO_FEATURE_PREBUILT").is_some();
    if forced || !has_guest_source(&workspace) {
        return embed_prebuilt(&manifest_dir.join(PREBUILT_DIR), &out_dir, forced);
    }

    let mut artifacts = Artifacts {
        target_dir: guest_target_dir(&out_dir, &workspace),
        out_dir,
        workspace,
        deps: BTreeSet::new(),
    };
    // Declared before building, so that a failed build is retried after any
    // of these change even though the guest's dep-info is not there yet.
    artifacts.watch_sources();

    let Some(toolchain) = Toolchain::detect()? else {
        println!(
            "cargo::error=the {GUEST_TARGET} target is not installed: run `scripts/setup` \
             (or `rustup target add {GUEST_TARGET}`)"
        );
        return Ok(());
    };
    let module = artifacts.build_guest(toolchain)?;
    let component = artifacts.compile_component(&module)?;
    artifacts.foreign_contract_component("0.2.0")?;
    announce_origin("guest-build", &component);
    Ok(())
}

/// Whether this crate sits in the toolprune repository (the guest's crate
/// and the WIT beside it), where the component is built from source.
fn has_guest_source(workspace: &Path) -> bool {
    workspace.join("guest").join("Cargo.toml").is_file() && workspace.join("wit").join("world.wit").is_file()
}

/// Tells the library where its component came from and what it is.
fn announce_origin(origin: &str, component: &[u8]) {
    println!("cargo::rustc-env=TOOLPRUNE_COMPONENT_ORIGIN={origin}");
    println!("cargo::rustc-env=TOOLPRUNE_COMPONENT_SHA256={}", sha256_hex(component));
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The prebuilt road: copies `dir/toolprune.wasm` and
/// `dir/contract-0.2.0.wasm` into `OUT_DIR` after checking each against
/// `dir/SHA256SUMS` (`<64 hex digits>  <file name>` lines, `sha256sum`'s
/// format). Any problem is a build error (one `cargo::error` line); nothing
/// else is tried.
fn embed_prebuilt(dir: &Path, out_dir: &Path, forced: bool) -> Result<()> {
    let why = if forced {
        "the `prebuilt` feature is on"
    } else {
        "this copy of toolprune-artifacts has no guest source beside it (a packaged crate)"
    };
    let sums_path = dir.join(PREBUILT_SUMS);
    println!("cargo::rerun-if-changed={}", sums_path.display());
    let sums = match fs::read_to_string(&sums_path) {
        Ok(text) => text,
        Err(e) => {
            println!(
                "cargo::error={why}, but {} cannot be read ({e}): `scripts/package` writes it with the prebuilt component",
                sums_path.display()
            );
            return Ok(());
        }
    };
    let mut first = None;
    for name in [COMPONENT_FILE, FOREIGN_CONTRACT_FILE] {
        let path = dir.join(name);
        println!("cargo::rerun-if-changed={}", path.display());
        let expected = sums.lines().find_map(|line| {
            let (digest, file) = line.split_once("  ")?;
            (file.trim_start_matches('*') == name && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| digest.to_ascii_lowercase())
        });
        let Some(expected) = expected else {
            println!("cargo::error={} names no SHA-256 for {name}", sums_path.display());
            return Ok(());
        };
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                println!(
                    "cargo::error={why}, but {} cannot be read ({e}): `scripts/package` puts it there",
                    path.display()
                );
                return Ok(());
            }
        };
        let actual = sha256_hex(&bytes);
        if actual != expected {
            println!(
                "cargo::error={} has SHA-256 {actual}, but {PREBUILT_SUMS} says {expected}: the file is damaged or was replaced; reinstall toolprune-artifacts",
                path.display()
            );
            return Ok(());
        }
        let out = out_dir.join(name);
        fs::write(&out, &bytes).with_context(|| format!("writing {out:?}"))?;
        first.get_or_insert(bytes);
    }
    announce_origin("prebuilt", &first.unwrap_or_default());
    Ok(())
}

struct Artifacts {
    out_dir: PathBuf,
    workspace: PathBuf,
    /// Target dir of the nested build.
    target_dir: PathBuf,
    /// Files already announced with `rerun-if-changed`.
    deps: BTreeSet<String>,
}

/// Which cargo and rustc build the guest.
#[derive(Clone, Copy, Debug)]
enum Toolchain {
    /// The outer build's; its sysroot has the wasm32 standard library.
    Outer,
    /// Debian's, building the standard library from source.
    DebianBuildStd,
}

impl Toolchain {
    fn detect() -> Result<Option<Toolchain>> {
        println!("cargo::rerun-if-env-changed={FORCE_BUILD_STD}");
        let forced = env::var(FORCE_BUILD_STD).is_ok_and(|v| v == "1");
        if !forced && outer_has_wasm_std()? {
            return Ok(Some(Toolchain::Outer));
        }
        let debian = [DEBIAN_CARGO, DEBIAN_RUSTC, DEBIAN_LINKER, DEBIAN_STD_SOURCES];
        if debian.iter().all(|p| Path::new(p).exists()) {
            return Ok(Some(Toolchain::DebianBuildStd));
        }
        if forced {
            bail!("{FORCE_BUILD_STD}=1 but Debian's toolchain is missing: run `scripts/setup`");
        }
        Ok(None)
    }
}

/// Whether the outer rustc has the standard library of the guest's target.
fn outer_has_wasm_std() -> Result<bool> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", GUEST_TARGET])
        .output()
        .with_context(|| format!("running {rustc:?}"))?;
    if !output.status.success() {
        return Ok(false);
    }
    let libdir = PathBuf::from(String::from_utf8(output.stdout)?.trim());
    let Ok(entries) = fs::read_dir(&libdir) else {
        return Ok(false);
    };
    Ok(entries
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("libstd-")))
}

/// `<target>/guest-build/<checkout>`, where `<target>` is the outer build's
/// target dir (the ancestor of `OUT_DIR` that Cargo tagged with
/// `CACHEDIR.TAG`) and `<checkout>` a digest of this workspace's path.
/// Shared by every outer profile, so that `cargo build --release` does not
/// build the guest again. Not `<target>/guest`: that is where an outer
/// `--profile guest` build would write. Per checkout: two worktrees sharing
/// one `CARGO_TARGET_DIR` would otherwise overwrite each other's
/// `toolprune_guest.wasm` (same name, no metadata hash) and embed the other
/// checkout's guest.
fn guest_target_dir(out_dir: &Path, workspace: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    workspace.hash(&mut hasher);
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .unwrap_or(out_dir)
        .join("guest-build")
        .join(format!("{:016x}", hasher.finish()))
}

impl Artifacts {
    fn watch_sources(&mut self) {
        for path in [
            "guest/src",
            "guest/Cargo.toml",
            "wit",
            "Cargo.toml",
            "Cargo.lock",
            ".cargo/config.toml",
        ] {
            let path = self.workspace.join(path);
            // A path that does not exist would make Cargo rerun this script
            // on every build.
            if path.exists() {
                self.rerun_if_changed(path.to_str().unwrap());
            }
        }
    }

    /// Builds the guest's core module and returns its path.
    fn build_guest(&mut self, toolchain: Toolchain) -> Result<PathBuf> {
        let mut cmd = guest_cargo(toolchain);
        cmd.current_dir(&self.workspace)
            .arg("build")
            .arg(format!("--package={GUEST_PACKAGE}"))
            .arg(format!("--target={GUEST_TARGET}"))
            .arg(format!("--profile={GUEST_PROFILE}"))
            .env("CARGO_TARGET_DIR", &self.target_dir);
        if let Toolchain::DebianBuildStd = toolchain {
            cmd.arg("-Zbuild-std=std,panic_abort");
        }
        eprintln!("running: {cmd:?}");
        let status = cmd.status().context("spawning the guest's cargo build")?;
        if !status.success() {
            bail!("building {GUEST_PACKAGE} for {GUEST_TARGET} failed ({status}): see its errors above");
        }

        let module = self
            .target_dir
            .join(GUEST_TARGET)
            .join(GUEST_PROFILE)
            .join(format!("{GUEST_LIB}.wasm"));
        self.read_deps_of(&module)?;
        Ok(module)
    }

    /// Turns the core module into `$OUT_DIR/toolprune.wasm` and returns its bytes.
    fn compile_component(&self, module: &Path) -> Result<Vec<u8>> {
        let bytes = fs::read(module).with_context(|| format!("reading {module:?}"))?;
        let component = ComponentEncoder::default()
            .module(&bytes)
            .context("reading the guest's component type")?
            .validate(true)
            .encode()
            .context("turning the guest into a component")?;
        let path = self.out_dir.join(COMPONENT_FILE);
        fs::write(&path, &component).with_context(|| format!("writing {path:?}"))?;
        eprintln!("component: {path:?} ({} bytes)", component.len());
        Ok(component)
    }

    /// A component of world `toolprune` of an earlier contract: the WIT
    /// frozen in `wit/since_v{version}/` with a dummy core module:
    /// `$OUT_DIR/contract-{version}.wasm`, for the hosts' version-check
    /// tests. A few kilobytes, encoded in milliseconds.
    fn foreign_contract_component(&self, version: &str) -> Result<()> {
        let copy = self.workspace.join("wit").join(format!("since_v{version}"));
        let mut resolve = wit_parser::Resolve::default();
        let (package, _) = resolve.push_dir(&copy).context("the frozen WIT")?;
        let world = resolve.select_world(&[package], Some("toolprune"))?;
        // The legacy name mangling, as wit-bindgen writes it for the real
        // guest (`toolprune:pruner/settings@0.2.0#version`): the Node host
        // reads the version from the core module's names (jco keeps no
        // component), so the stand-in must name it the way a guest does.
        let mangling = wit_parser::ManglingAndAbi::Legacy(wit_parser::LiftLowerAbi::Sync);
        let mut module = wit_component::dummy_module(&resolve, world, mangling);
        wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8, false)?;
        let component = ComponentEncoder::default().module(&module)?.validate(true).encode()?;
        fs::write(self.out_dir.join(format!("contract-{version}.wasm")), component)?;
        Ok(())
    }

    /// Reads the `*.d` file that Cargo wrote beside `artifact` and reruns
    /// this script when any file it lists changes: every source of the guest
    /// and of its dependencies, `wit/` included.
    ///
    /// See <https://doc.rust-lang.org/cargo/reference/build-cache.html#dep-info-files>.
    fn read_deps_of(&mut self, artifact: &Path) -> Result<()> {
        let deps_file = artifact.with_extension("d");
        let contents = fs::read_to_string(&deps_file)
            .with_context(|| format!("reading the dep-info file {deps_file:?}"))?;
        for line in contents.lines() {
            let Some(pos) = line.find(": ") else {
                continue;
            };
            let mut parts = line[pos + 2..].split_whitespace();
            while let Some(part) = parts.next() {
                let mut file = part.to_string();
                // A space in a path is escaped as `\ `.
                while file.ends_with('\\') {
                    file.pop();
                    file.push(' ');
                    file.push_str(parts.next().unwrap_or_default());
                }
                self.rerun_if_changed(&file);
            }
        }
        Ok(())
    }

    fn rerun_if_changed(&mut self, file: &str) {
        if self.deps.insert(file.to_string()) {
            println!("cargo::rerun-if-changed={file}");
        }
    }
}

/// A `cargo` for the nested build, without what the outer build leaks into a
/// build script's environment.
fn guest_cargo(toolchain: Toolchain) -> Command {
    let mut cmd = match toolchain {
        Toolchain::Outer => Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into())),
        Toolchain::DebianBuildStd => Command::new(DEBIAN_CARGO),
    };
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if leaks_from_outer_build(key) {
            cmd.env_remove(key);
        }
    }
    if let Toolchain::DebianBuildStd = toolchain {
        let linker = format!("CARGO_TARGET_{}_LINKER", GUEST_TARGET.to_uppercase().replace('-', "_"));
        cmd.env("RUSTC", DEBIAN_RUSTC)
            // `-Zbuild-std` on a stable toolchain.
            .env("RUSTC_BOOTSTRAP", "1")
            .env(linker, DEBIAN_LINKER);
    }
    cmd
}

/// Variables that Cargo sets for this build script, or that configure the
/// outer build, and would change the nested one: host flags and `--target`,
/// the outer target dir, `cfg`s and features of this package, a `clippy`
/// wrapper. Kept: `RUSTC` (the same toolchain), `RUSTC_WRAPPER` (a cache) and
/// `CARGO_MAKEFLAGS` (the jobserver, so that both builds share the cores).
fn leaks_from_outer_build(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_BUILD_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "OUT_DIR",
        "TARGET",
        "HOST",
        "NUM_JOBS",
        "OPT_LEVEL",
        "DEBUG",
        "PROFILE",
    ];
    const PREFIXES: &[&str] = &["CARGO_CFG_", "CARGO_FEATURE_", "CARGO_PKG_", "DEP_"];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}
