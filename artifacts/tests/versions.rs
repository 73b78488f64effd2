//! One version for every package built from this repository (issue 14): the
//! workspace's `version` (Cargo.toml) is the source; the npm package, its
//! lockfile, the Python project and `toolprune.__version__` must carry the
//! same, the crates published together pin each other to it exactly, and the
//! contract (the WIT package `toolprune:pruner@X.Y.Z`, which the component
//! exports and the hosts check by major.minor) has the same major.minor.
//! `scripts/package` names its files with this version and checks it again.

use std::fs;
use std::path::{Path, PathBuf};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read(path: &str) -> String {
    fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The quoted value after `key = ` on the first line of `text` that starts with `key`.
fn assigned<'a>(text: &'a str, key: &str, path: &str) -> &'a str {
    text.lines()
        .map(str::trim)
        .find_map(|line| {
            let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
            rest.strip_prefix('"')?.split('"').next()
        })
        .unwrap_or_else(|| panic!("{path}: no `{key} = \"…\"` line"))
}

fn major_minor(version: &str) -> &str {
    let end = version.match_indices('.').nth(1).map_or(version.len(), |(i, _)| i);
    &version[..end]
}

#[test]
fn the_npm_package_and_its_lockfile_carry_the_workspace_version() {
    let package: serde_json::Value = serde_json::from_str(&read("hosts/js/package.json")).unwrap();
    assert_eq!(package["version"], VERSION, "hosts/js/package.json");
    let lock: serde_json::Value = serde_json::from_str(&read("hosts/js/package-lock.json")).unwrap();
    assert_eq!(lock["version"], VERSION, "hosts/js/package-lock.json");
    assert_eq!(lock["packages"][""]["version"], VERSION, "hosts/js/package-lock.json packages[\"\"]");
}

#[test]
fn the_python_project_and_its_dunder_version_carry_the_workspace_version() {
    let pyproject = read("hosts/python/pyproject.toml");
    let project = pyproject.split("[project]").nth(1).expect("hosts/python/pyproject.toml has [project]");
    assert_eq!(assigned(project, "version", "hosts/python/pyproject.toml"), VERSION);
    let init = read("hosts/python/src/toolprune/__init__.py");
    assert_eq!(assigned(&init, "__version__", "hosts/python/src/toolprune/__init__.py"), VERSION);
}

#[test]
fn the_crates_published_together_pin_each_other_to_the_workspace_version() {
    let manifest = read("Cargo.toml");
    let deps = manifest.split("[workspace.dependencies]").nth(1).expect("Cargo.toml has [workspace.dependencies]");
    for name in ["toolprune", "toolprune-artifacts"] {
        let line = deps
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("Cargo.toml: no workspace dependency `{name}`"));
        let spec = line.split_once('{').map(|(_, s)| s).unwrap_or_else(|| panic!("Cargo.toml: `{line}`"));
        assert!(spec.contains("path"), "Cargo.toml: {line} (a path for this workspace)");
        let version = spec.split("version").nth(1).and_then(|s| s.split('"').nth(1));
        assert_eq!(version, Some(format!("={VERSION}").as_str()), "Cargo.toml: {line}");
    }
}

#[test]
fn the_contract_has_the_workspace_major_and_minor_version() {
    let mut files = 0;
    for entry in fs::read_dir(repo().join("wit")).unwrap() {
        let path = entry.unwrap().path();
        // `wit/since_vX.Y.Z/`: earlier contracts, frozen as they were.
        if path.is_dir() {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        let package = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("package toolprune:pruner@"))
            .unwrap_or_else(|| panic!("{path:?}: no `package toolprune:pruner@…` line"));
        let contract = package.trim_end_matches(';');
        assert_eq!(major_minor(contract), major_minor(VERSION), "{path:?}: contract {contract}, packages {VERSION}");
        files += 1;
    }
    assert!(files >= 7, "the WIT files were found ({files})");
}

/// Every earlier contract stays readable, frozen in `wit/since_vX.Y.Z/`
/// (as Zed keeps its extension API): each file there names its own version.
#[test]
fn earlier_contracts_are_frozen_in_their_own_folders() {
    for version in ["0.1.0", "0.2.0"] {
        let dir = repo().join("wit").join(format!("since_v{version}"));
        let mut files = 0;
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap().path();
            let text = fs::read_to_string(&path).unwrap();
            assert!(text.contains(&format!("package toolprune:pruner@{version};")), "{path:?}");
            files += 1;
        }
        assert!(files >= 2, "{dir:?}");
    }
}

#[test]
fn major_minor_keeps_the_first_two_numbers() {
    assert_eq!(major_minor("0.2.0"), "0.2");
    assert_eq!(major_minor("10.20.30-rc.1"), "10.20");
    assert_eq!(major_minor("1.2"), "1.2");
}
