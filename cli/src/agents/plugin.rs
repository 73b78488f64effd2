//! The plugins (issue 23 §2, docs/plugins.md): `toolprune plugin build DIR`
//! writes one marketplace folder that every agent's own install command
//! reads as it is, with nothing fetched at run time:
//!
//! ```text
//! DIR/.claude-plugin/marketplace.json   Claude Code (and GitHub Copilot CLI): plugin ./claude-code
//! DIR/.agents/plugins/marketplace.json  Codex CLI: plugin ./codex
//! DIR/.cursor-plugin/marketplace.json   Cursor: plugin ./cursor
//! DIR/claude-code/  .claude-plugin/plugin.json, hooks/hooks.json, .mcp.json
//! DIR/gemini/       gemini-extension.json, hooks/hooks.json (`gemini extensions install DIR/gemini`)
//! DIR/cursor/       .cursor-plugin/plugin.json, hooks/hooks.json, mcp.json
//! DIR/codex/        .codex-plugin/plugin.json, hooks/hooks.json, .mcp.json
//! DIR/*/bin/toolprune                   this binary (the same file, hard-linked when it can be)
//! DIR/*/README.md, LICENSE-MIT, LICENSE-APACHE
//! ```
//!
//! Every manifest comes from the agent's adapter ([`Adapter::plugin`]):
//! the hook entries and the `omitted` server are [`Adapter::hooks`],
//! [`Adapter::hooks_file`] and [`Adapter::mcp_server`], the ones `toolprune
//! install` writes, with the plugin's path to the binary and `--plugin`.
//! The post-tool matcher is made from the default configuration's prunable
//! tools (a plugin is built once for everyone).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Adapter, Agent, PLUGIN_DESCRIPTION, PLUGIN_NAME};
use crate::install::Check;

/// The licences each plugin carries (the repository's, built in).
const LICENSES: [(&str, &str); 2] = [("LICENSE-MIT", include_str!("../../../LICENSE-MIT")), ("LICENSE-APACHE", include_str!("../../../LICENSE-APACHE"))];

/// What [`build`] wrote: every file, relative to the folder, in order.
#[derive(Debug, Default)]
pub struct Built {
    pub files: Vec<PathBuf>,
}

/// Every agent's plugin of toolprune `version` for the prunable-tool globs
/// `prunable`, by agent (agents without a plugin format are left out).
pub fn plugins(version: &str, prunable: &[String]) -> Vec<(Agent, super::Plugin)> {
    Agent::ALL.iter().filter_map(|agent| agent.adapter().plugin(version, prunable).map(|p| (*agent, p))).collect()
}

/// A marketplace catalogue listing the plugin at `./DIR` (Claude Code's
/// `marketplace.json` shape, which Codex CLI and Cursor read as well).
fn marketplace(version: &str, dir: &str) -> Value {
    json!({
        "name": PLUGIN_NAME,
        "owner": {"name": "toolprune"},
        "description": "toolprune: prune tool results to what answers the request",
        "plugins": [{
            "name": PLUGIN_NAME,
            "source": format!("./{dir}"),
            "description": PLUGIN_DESCRIPTION,
            "version": version,
        }],
    })
}

/// Writes `bytes` to `base/sub/rel`, listing `sub/rel`.
fn write(base: &Path, sub: &str, rel: &str, bytes: &[u8], built: &mut Built) -> Result<(), String> {
    let path = base.join(sub).join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    built.files.push(Path::new(sub).join(rel));
    Ok(())
}

fn pretty(value: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    text.push('\n');
    text.into_bytes()
}

/// Puts `binary` at `to` (a hard link when both are on one file system,
/// else a copy), executable.
fn place_binary(binary: &Path, to: &Path) -> Result<(), String> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let _ = std::fs::remove_file(to);
    if std::fs::hard_link(binary, to).is_err() {
        std::fs::copy(binary, to).map_err(|e| format!("cannot copy {} to {}: {e}", binary.display(), to.display()))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(to).map_err(|e| e.to_string())?.permissions().mode();
        if mode & 0o111 != 0o111 {
            std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode | 0o755)).map_err(|e| format!("cannot make {} executable: {e}", to.display()))?;
        }
    }
    Ok(())
}

/// Writes the marketplace folder `dir` (see the module's docs) for
/// toolprune `version`, the post-tool matchers from `prunable`, each plugin
/// running `binary`. Files already in `dir` under the same names are
/// replaced; nothing else there is touched. Errors: a file that cannot be
/// written, a binary that cannot be linked or copied.
pub fn build(dir: &Path, binary: &Path, version: &str, prunable: &[String]) -> Result<Built, String> {
    let mut built = Built::default();
    for (agent, plugin) in plugins(version, prunable) {
        for (rel, value) in &plugin.files {
            write(dir, plugin.dir, rel, &pretty(value), &mut built)?;
        }
        for (name, text) in LICENSES {
            write(dir, plugin.dir, name, text.as_bytes(), &mut built)?;
        }
        write(dir, plugin.dir, "README.md", readme(agent, plugin.dir).as_bytes(), &mut built)?;
        place_binary(binary, &dir.join(plugin.dir).join("bin/toolprune"))?;
        built.files.push(PathBuf::from(plugin.dir).join("bin/toolprune"));
        let catalogue = match agent {
            Agent::ClaudeCode => Some(".claude-plugin/marketplace.json"),
            Agent::Codex => Some(".agents/plugins/marketplace.json"),
            Agent::Cursor => Some(".cursor-plugin/marketplace.json"),
            Agent::Gemini => None,
        };
        if let Some(rel) = catalogue {
            write(dir, "", rel, &pretty(&marketplace(version, plugin.dir)), &mut built)?;
        }
    }
    write(dir, "", "README.md", folder_readme().as_bytes(), &mut built)?;
    Ok(built)
}

/// The install command of each plugin, from the marketplace folder `DIR`.
pub fn install_command(agent: Agent) -> &'static str {
    match agent {
        Agent::ClaudeCode => "claude plugin marketplace add DIR && claude plugin install toolprune@toolprune",
        Agent::Gemini => "gemini extensions install DIR/gemini",
        Agent::Cursor => "Cursor: add DIR as a plugin marketplace (or copy DIR/cursor to ~/.cursor/plugins/local/toolprune)",
        Agent::Codex => "codex plugin marketplace add DIR && codex plugin add toolprune@toolprune",
    }
}

fn readme(agent: Agent, dir: &str) -> String {
    let adapter = agent.adapter();
    format!(
        "# toolprune for {name}\n\n{PLUGIN_DESCRIPTION}\n\nInstall from the marketplace folder that holds this `{dir}/` folder (DIR):\n\n    {cmd}\n\n\
         The plugin runs its own `bin/toolprune` (nothing is downloaded at run time). Its hooks call \
         `toolprune hook {label} --plugin`; when toolprune is also installed in {name}'s settings \
         (`toolprune install {label}`), the settings hooks prune and this plugin's hooks pass, so a \
         result is pruned once. `bin/toolprune doctor {label}` says which one is active.\n\n\
         Licensed under MIT or Apache-2.0, at your option.\n",
        name = adapter.name(),
        label = adapter.label(),
        cmd = install_command(agent),
    )
}

fn folder_readme() -> String {
    let mut text = String::from("# toolprune plugins\n\nA marketplace folder: serve it as it is (a path or a git repository).\n\n");
    for agent in Agent::ALL {
        if agent.adapter().plugin("0", &[]).is_some() {
            text.push_str(&format!("- {}: `{}`\n", agent.adapter().name(), install_command(agent)));
        }
    }
    text.push_str("\nWritten by `toolprune plugin build` (scripts/package); every manifest comes from the adapters `toolprune install` uses.\n");
    text
}

/// Checks an installed plugin's folder `dir` against the adapter's plugin
/// for the configuration's `prunable` globs: its hooks file is the one
/// `toolprune plugin build` writes for them (else the post-tool matcher
/// misses a tool the configuration prunes), and its `bin/toolprune` runs.
pub fn check_installed(adapter: &dyn Adapter, dir: &Path, prunable: &[String]) -> Vec<Check> {
    let mut checks = Vec::new();
    let program = dir.join("bin/toolprune");
    let runs = std::process::Command::new(&program).arg("--version").output().is_ok_and(|o| o.status.success());
    checks.push(if runs {
        Check { ok: true, what: format!("the {} plugin's binary {} runs", adapter.name(), program.display()) }
    } else {
        Check { ok: false, what: format!("the {} plugin's binary {} does not run (reinstall the plugin)", adapter.name(), program.display()) }
    });
    let Some(plugin) = adapter.plugin("0", prunable) else { return checks };
    let Some((rel, want)) = plugin.files.iter().find(|(rel, _)| rel.starts_with("hooks/")) else { return checks };
    let have = std::fs::read_to_string(dir.join(rel)).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
    checks.push(match have {
        Some(have) if &have == want => Check { ok: true, what: format!("{}: the plugin's hooks match the configuration", dir.join(rel).display()) },
        Some(_) => Check {
            ok: false,
            what: format!(
                "{}: the plugin's hooks differ from what this configuration needs (its matcher is built for the default prunable tools): \
                 use `toolprune install {}` for tools beyond them, or reinstall a matching plugin",
                dir.join(rel).display(),
                adapter.label()
            ),
        },
        None => Check { ok: false, what: format!("{} is missing or not JSON", dir.join(rel).display()) },
    });
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{hook_edits, plugin_command, Via};
    use crate::install::Edit;

    fn globs() -> Vec<String> {
        vec!["mcp__*__fetch".to_string(), "WebFetch".to_string()]
    }

    #[test]
    fn every_plugins_hooks_are_the_installers_entries_with_the_plugins_command() {
        // One definition (issue 23 §4): a plugin's hooks file holds exactly
        // the elements `install` appends, event for event, but for the
        // command (the plugin's path, `--plugin`) and, where the agent names
        // the plugin's server apart, the `omitted` tool in a matcher.
        for (agent, plugin) in plugins("1.2.3", &globs()) {
            let adapter = agent.adapter();
            let (_, file) = plugin.files.iter().find(|(rel, _)| rel.starts_with("hooks/")).expect("a hooks file");
            let command = file["hooks"].as_object().unwrap().values().next().unwrap()[0]["hooks"]
                .get(0)
                .map(|h| h["command"].clone())
                .unwrap_or_else(|| file["hooks"].as_object().unwrap().values().next().unwrap()[0]["command"].clone());
            let command = command.as_str().unwrap().to_string();
            assert!(command.ends_with(&format!("hook {} --plugin", adapter.label())), "{command}");
            let settings_tool = adapter.omitted_tool(Via::Settings);
            let plugin_tool = adapter.omitted_tool(Via::Plugin);
            let mut expected = Vec::new();
            for edit in hook_edits(adapter, &globs(), &command) {
                let Edit::Append { path, value } = edit else { continue };
                let text = value.to_string().replace(&settings_tool, &plugin_tool);
                expected.push((path[1].clone(), serde_json::from_str::<Value>(&text).unwrap()));
            }
            let mut carried = Vec::new();
            for (event, elements) in file["hooks"].as_object().unwrap() {
                for element in elements.as_array().unwrap() {
                    carried.push((event.clone(), element.clone()));
                }
            }
            expected.sort_by(|a, b| a.0.cmp(&b.0));
            carried.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(carried, expected, "{}", adapter.name());
            assert_eq!(command, plugin_command(adapter, command.split("/bin/toolprune").next().unwrap().trim_start_matches('"')));
        }
    }

    #[test]
    fn every_plugins_mcp_server_is_the_installers_entry_running_the_plugins_binary() {
        for (agent, plugin) in plugins("1.2.3", &globs()) {
            let adapter = agent.adapter();
            let servers = plugin
                .files
                .iter()
                .find_map(|(_, v)| v.get("mcpServers").filter(|s| s.is_object()))
                .unwrap_or_else(|| panic!("{}: no mcpServers", adapter.name()));
            let server = &servers[crate::install::SERVER_NAME];
            let program = server["command"].as_str().unwrap();
            assert!(program.ends_with("bin/toolprune"), "{program}");
            let mut want = adapter.mcp_server(program);
            want.as_object_mut().unwrap().remove("trust");
            let mut have = server.clone();
            have.as_object_mut().unwrap().remove("trust");
            assert_eq!(have, want, "{}", adapter.name());
        }
    }

    #[test]
    fn the_folder_holds_every_manifest_each_plugins_binary_and_the_catalogues() {
        let tmp = tempfile::tempdir().unwrap();
        let binary = tmp.path().join("toolprune-bin");
        std::fs::write(&binary, b"#!/bin/sh\n").unwrap();
        let out = tmp.path().join("plugins");
        let built = build(&out, &binary, "1.2.3", &globs()).unwrap();
        for rel in [
            ".claude-plugin/marketplace.json",
            ".agents/plugins/marketplace.json",
            ".cursor-plugin/marketplace.json",
            "claude-code/.claude-plugin/plugin.json",
            "claude-code/hooks/hooks.json",
            "claude-code/.mcp.json",
            "claude-code/bin/toolprune",
            "gemini/gemini-extension.json",
            "gemini/hooks/hooks.json",
            "gemini/bin/toolprune",
            "cursor/.cursor-plugin/plugin.json",
            "codex/.codex-plugin/plugin.json",
            "codex/bin/toolprune",
            "codex/LICENSE-MIT",
            "README.md",
        ] {
            assert!(out.join(rel).is_file(), "{rel}");
            assert!(built.files.contains(&PathBuf::from(rel)), "{rel} listed");
        }
        let catalogue: Value = serde_json::from_str(&std::fs::read_to_string(out.join(".claude-plugin/marketplace.json")).unwrap()).unwrap();
        assert_eq!(catalogue["plugins"][0]["source"], "./claude-code");
        assert_eq!(catalogue["plugins"][0]["version"], "1.2.3");
        let manifest: Value = serde_json::from_str(&std::fs::read_to_string(out.join("gemini/gemini-extension.json")).unwrap()).unwrap();
        assert_eq!(manifest["version"], "1.2.3");
        assert!(manifest["mcpServers"]["toolprune"].get("trust").is_none(), "an extension cannot trust its server");
        assert_eq!(std::fs::read(out.join("cursor/bin/toolprune")).unwrap(), b"#!/bin/sh\n");
        // Built again into the same folder: the same files, no error.
        let again = build(&out, &binary, "1.2.3", &globs()).unwrap();
        assert_eq!(again.files, built.files);
    }
}
