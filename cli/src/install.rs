//! The installer's engine: toolprune's hooks and its `omitted` MCP server
//! written into an agent's settings files, together (pruning is never wired
//! without the way back), and taken out again byte for byte. It knows no
//! agent: each agent's adapter (the `agents` module) says which files get which
//! [`Edit`]s (a [`FilePlan`]); the `agents` module runs `install`, `uninstall`
//! and `doctor` with them. docs/hooks.md lists every agent's files.
//!
//! **Edits keep every other byte.** Files are edited as JSONC syntax trees
//! (`jsonc-parser`'s CST: comments, spacing, key order and unicode stay as
//! written), or — a `.toml` file (Codex CLI's `config.toml`) — as a
//! `toml_edit` document ([`toml`]); toolprune only appends array elements
//! and adds object members (TOML: keys and tables). One exception: a JSON
//! object written on one line that receives a member becomes multi-line
//! (put back as written by `uninstall`). A file that does not parse is
//! refused with its error and nothing is written.
//!
//! **Exactly what was added.** Each edit is recorded in a manifest
//! (`$XDG_CONFIG_HOME/toolprune/installed.json`, else
//! `~/.config/toolprune/installed.json`): `uninstall` removes those elements
//! and members (if still as written), the containers toolprune created if
//! they are empty again, and a file it created if nothing else is left in
//! it. Something already present before `install` is not recorded, so never
//! removed. `install` is idempotent: a second run changes nothing; after a
//! configuration change it replaces its own stale entries (e.g. the
//! post-tool matcher, made from the prunable-tool globs).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

mod toml;

/// The key of toolprune's MCP server in the agents' settings: the tool is
/// `mcp__toolprune__omitted` (Claude Code, Codex CLI), `mcp_toolprune_omitted`
/// (Gemini CLI; a key must not contain `_` there).
pub const SERVER_NAME: &str = "toolprune";

/// Where the entries go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The user's own settings (every project).
    User,
    /// The current directory's project settings (shared with the repository).
    Project,
}

/// The places and the program the entries name.
#[derive(Clone, Debug)]
pub struct Paths {
    /// `$HOME`.
    pub home: PathBuf,
    /// The project folder (the current directory).
    pub project: PathBuf,
    /// Where the manifest lives: `$XDG_CONFIG_HOME/toolprune`, else `~/.config/toolprune`.
    pub config_dir: PathBuf,
    /// The absolute path of this `toolprune` binary (what the hooks run).
    pub binary: PathBuf,
    /// Codex CLI's settings folder: `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
}

impl Paths {
    /// From the environment (`HOME`, `XDG_CONFIG_HOME`), the current
    /// directory and the running executable. Errors: no `HOME`, no current
    /// directory or executable path.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Paths, String> {
        let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).ok_or("HOME is not set")?;
        let config_dir = env("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"))
            .join("toolprune");
        let project = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
        let binary = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .map_err(|e| format!("the path of this toolprune binary: {e}"))?;
        let codex_home = env("CODEX_HOME").filter(|d| !d.is_empty()).map(PathBuf::from).unwrap_or_else(|| home.join(".codex"));
        Ok(Paths { home, project, config_dir, binary, codex_home })
    }

    /// `installed.json`.
    pub fn manifest(&self) -> PathBuf {
        self.config_dir.join("installed.json")
    }
}

/// A program path as one shell word (quoted only when needed).
pub fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%=,".contains(&b)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The tool-name globs (`*`, `?`) as one anchored regular expression, as
/// Claude Code and Gemini CLI read a hook matcher (an unanchored regex
/// search, not a glob: tests/e2e/FACTS*.md): `^(g1|g2|…)$`, with `extra`
/// exact names added.
pub fn matcher(globs: &[String], extra: &[String]) -> String {
    let mut alternatives: Vec<String> = Vec::new();
    for glob in globs.iter().map(|g| g.trim()).filter(|g| !g.is_empty()) {
        let mut re = String::new();
        for c in glob.chars() {
            match c {
                '*' => re.push_str(".*"),
                '?' => re.push('.'),
                c if "\\^$.|+()[]{}/".contains(c) => {
                    re.push('\\');
                    re.push(c);
                }
                c => re.push(c),
            }
        }
        alternatives.push(re);
    }
    for name in extra {
        alternatives.push(name.replace('.', "\\."));
    }
    alternatives.dedup();
    format!("^({})$", alternatives.join("|"))
}

/// One change toolprune makes in a settings file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Edit {
    /// Append `value` to the array at `path` (objects and the array created if missing).
    Append { path: Vec<String>, value: Value },
    /// Add the member `key` = `value` to the object at `path` (created if missing).
    Member { path: Vec<String>, key: String, value: Value },
    /// Replace the member `key` of the object at `path`, whose value is
    /// `from`, by `to` (`install --wrap`: a server entry made to start
    /// `toolprune mcp-proxy`); removing it puts `from` back.
    Replace { path: Vec<String>, key: String, from: Value, to: Value },
}

impl Edit {
    /// Append `value` to the array at `path`.
    pub fn append(path: &[&str], value: Value) -> Edit {
        Edit::Append { path: path.iter().map(|s| s.to_string()).collect(), value }
    }
    /// Add `key` = `value` to the object (table) at `path`.
    pub fn member(path: &[&str], key: &str, value: Value) -> Edit {
        Edit::Member { path: path.iter().map(|s| s.to_string()).collect(), key: key.to_string(), value }
    }

    /// One line for the report: `hooks.PostToolUse += {…}`.
    pub fn describe(&self) -> String {
        match self {
            Edit::Append { path, value } => format!("{} += {}", path.join("."), value),
            Edit::Member { path, key, value } => {
                let mut full = path.clone();
                full.push(key.clone());
                format!("{} = {}", full.join("."), value)
            }
            Edit::Replace { path, key, to, .. } => {
                let mut full = path.clone();
                full.push(key.clone());
                format!("{} = {} (the original kept in the manifest)", full.join("."), to)
            }
        }
    }
}

/// The edits of one file: `path` is absolute; a `.toml` path is edited as
/// TOML, any other as JSON with comments.
#[derive(Clone, Debug, PartialEq)]
pub struct FilePlan {
    pub path: PathBuf,
    pub edits: Vec<Edit>,
}

/// The texts the files of an install will have, in plan order (`None`: the
/// file will not exist), as [`install`] computed them before writing.
pub type Staged = [(PathBuf, Option<String>)];

/// Completes a file's plan from what the files before it will hold (Codex
/// CLI's trust records name positions in its `hooks.json`).
pub type Refine<'a> = &'a dyn Fn(&mut FilePlan, &Staged);

/// What the manifest remembers of one file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FileRecord {
    pub agent: String,
    pub scope: String,
    /// toolprune created the file.
    pub created_file: bool,
    /// The file's text when it held no JSON value (empty, blank or only
    /// comments): put back as it was when nothing else was added since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blank_text: Option<String>,
    /// Folders toolprune created for the file (deepest first), removed again if empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    /// Objects and arrays toolprune created (paths), removed again when empty.
    pub created: Vec<Vec<String>>,
    /// The edits toolprune made (and nothing that was there before).
    pub edits: Vec<Edit>,
    /// Containers written on one line that received an entry (jsonc-parser
    /// makes them multi-line): their path and original text, put back by
    /// `uninstall` when they hold the same value again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore: Vec<(Vec<String>, String)>,
}

/// `installed.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// By absolute file path.
    pub files: BTreeMap<String, FileRecord>,
}

impl Manifest {
    /// The manifest at `path` (empty when missing). Errors: unreadable or corrupt.
    pub fn load(path: &Path) -> Result<Manifest, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{} is corrupt: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest { version: 1, files: BTreeMap::new() }),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    fn save(&self, path: &Path) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        write_file(path, &text)
    }
}

fn parse_options() -> ParseOptions {
    ParseOptions::default()
}

/// Parses a settings file's text (JSON with comments and trailing commas).
fn parse(path: &Path, text: &str) -> Result<CstRootNode, String> {
    let root = CstRootNode::parse(text, &parse_options()).map_err(|e| format!("{} does not parse: {e}; nothing was changed", path.display()))?;
    match root.value() {
        None => Ok(root),
        Some(CstNode::Container(c)) if c.as_object().is_some() => Ok(root),
        Some(_) => Err(format!("{} is not a JSON object; nothing was changed", path.display())),
    }
}

/// A parsed settings file: JSON with comments, or TOML.
enum Doc {
    Json(CstRootNode),
    Toml(toml::TomlDoc),
}

fn is_toml(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "toml")
}

impl Doc {
    /// Parses `text` as the file at `path` is written (by its extension).
    fn parse(path: &Path, text: &str) -> Result<Doc, String> {
        if is_toml(path) {
            toml::TomlDoc::parse(text).map(Doc::Toml).map_err(|e| format!("{} does not parse: {e}; nothing was changed", path.display()))
        } else {
            parse(path, text).map(Doc::Json)
        }
    }

    fn present(&self, edit: &Edit) -> bool {
        match self {
            Doc::Json(root) => present(root, edit),
            Doc::Toml(doc) => doc.present(edit),
        }
    }

    fn remove(&mut self, edit: &Edit) -> bool {
        match self {
            Doc::Json(root) => remove(root, edit),
            Doc::Toml(doc) => doc.remove(edit),
        }
    }

    fn apply(&mut self, edit: &Edit, created: &mut Vec<Vec<String>>) -> Result<Option<String>, String> {
        match self {
            Doc::Json(root) => apply(root, edit, created),
            Doc::Toml(doc) => doc.apply(edit, created),
        }
    }

    fn remove_empty(&mut self, created: &[Vec<String>]) {
        match self {
            Doc::Json(root) => remove_empty(root, created),
            Doc::Toml(doc) => doc.remove_empty(created),
        }
    }

    /// No member at all (an empty object, or no value: blank or comments).
    fn is_empty(&self) -> bool {
        match self {
            Doc::Json(root) => root_is_empty(root),
            Doc::Toml(doc) => doc.is_empty(),
        }
    }

    /// No value at all: blank or comments only (TOML: no key).
    fn is_blank(&self) -> bool {
        match self {
            Doc::Json(root) => root.value().is_none(),
            Doc::Toml(doc) => doc.is_empty(),
        }
    }

    fn text(&self) -> String {
        match self {
            Doc::Json(root) => root.to_string(),
            Doc::Toml(doc) => doc.text(),
        }
    }

    /// The whole file as JSON (an empty object when blank).
    fn value(&self) -> Value {
        match self {
            Doc::Json(root) => root.value().and_then(|v| v.to_serde_value()).unwrap_or_else(|| json!({})),
            Doc::Toml(doc) => doc.value(),
        }
    }
}

/// A TOML text as JSON (none when it does not parse).
pub fn toml_value(text: &str) -> Option<Value> {
    toml::TomlDoc::parse(text).ok().map(|d| d.value())
}

/// The JSON value at `path` (object keys) in `value`.
fn value_at<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// The order keys are written in (toolprune's own values; a serde_json map is sorted).
fn key_rank(key: &str) -> usize {
    ["type", "name", "matcher", "command", "args", "timeout", "trust", "hooks"].iter().position(|k| *k == key).unwrap_or(100)
}

fn to_input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_input).collect()),
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by_key(|(k, _)| (key_rank(k), (*k).clone()));
            CstInputValue::Object(members.into_iter().map(|(k, v)| (k.clone(), to_input(v))).collect())
        }
    }
}

/// The object at `path` (none when a step is missing or not an object).
fn object_at(root: &CstRootNode, path: &[String]) -> Option<CstObject> {
    let mut object = root.object_value()?;
    for key in path {
        object = object.object_value(key)?;
    }
    Some(object)
}

fn array_at(root: &CstRootNode, path: &[String]) -> Option<CstArray> {
    let (last, parents) = path.split_last()?;
    object_at(root, parents)?.array_value(last)
}

/// The object at `path`, creating missing objects (their paths go to `created`).
fn object_or_create(root: &CstRootNode, path: &[String], created: &mut Vec<Vec<String>>) -> Result<CstObject, String> {
    if root.value().is_none() {
        created.push(Vec::new());
    }
    let mut object = root.object_value_or_create().ok_or("the file is not a JSON object")?;
    for (i, key) in path.iter().enumerate() {
        object = match object.get(key) {
            Some(prop) => prop.object_value().ok_or_else(|| format!("{} is not an object", path[..=i].join(".")))?,
            None => {
                created.push(path[..=i].to_vec());
                object.append(key, CstInputValue::Object(Vec::new())).object_value().ok_or("cannot create an object")?
            }
        };
    }
    Ok(object)
}

/// The byte span of the value at `path` (object keys) in `text`.
fn span_at(text: &str, path: &[String]) -> Option<(usize, usize)> {
    use jsonc_parser::common::Ranged as _;
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &parse_options()).ok()?;
    let mut value = parsed.value.as_ref()?;
    for key in path {
        match value {
            jsonc_parser::ast::Value::Object(object) => value = &object.get(key)?.value,
            _ => return None,
        }
    }
    let range = value.range();
    Some((range.start, range.end))
}

fn serde_of(text: &str) -> Option<Value> {
    CstRootNode::parse(text, &parse_options()).ok()?.value()?.to_serde_value()
}

/// The container that `edit` adds to: the array it appends to, or the
/// deepest existing object on its path (which gets a new member).
fn receiving_container(root: &CstRootNode, edit: &Edit) -> Vec<String> {
    let (path, is_array) = match edit {
        Edit::Append { path, .. } => (path.as_slice(), true),
        Edit::Member { path, .. } | Edit::Replace { path, .. } => (path.as_slice(), false),
    };
    if is_array && array_at(root, path).is_some() {
        return path.to_vec();
    }
    let objects = if is_array { &path[..path.len().saturating_sub(1)] } else { path };
    let mut deepest = Vec::new();
    for (i, _) in objects.iter().enumerate() {
        if object_at(root, &objects[..=i]).is_none() {
            break;
        }
        deepest = objects[..=i].to_vec();
    }
    deepest
}

/// Remembers the text of the container `edit` adds to, and of each
/// container around it, when written on one line (jsonc-parser makes a
/// container that receives an entry multi-line, and that can spread outward).
fn remember_one_line(root: &CstRootNode, edit: &Edit, record: &mut FileRecord) {
    let path = receiving_container(root, edit);
    let text = root.to_string();
    for depth in 0..=path.len() {
        let prefix = &path[..depth];
        if record.restore.iter().any(|(p, _)| p == prefix) {
            continue;
        }
        let Some((start, end)) = span_at(&text, prefix) else { continue };
        let original = &text[start..end];
        if !original.contains('\n') {
            record.restore.push((prefix.to_vec(), original.to_string()));
        }
    }
}

/// Puts back one-line containers that hold their original value again.
fn restore_one_line(text: String, restore: &[(Vec<String>, String)]) -> String {
    let mut entries: Vec<&(Vec<String>, String)> = restore.iter().collect();
    entries.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    let mut text = text;
    for (path, original) in entries {
        let Some((start, end)) = span_at(&text, path) else { continue };
        if serde_of(&text[start..end]).is_some() && serde_of(&text[start..end]) == serde_of(original) {
            text.replace_range(start..end, original);
        }
    }
    text
}

/// Whether `edit` is present in `root` as written.
fn present(root: &CstRootNode, edit: &Edit) -> bool {
    match edit {
        Edit::Append { path, value } => {
            array_at(root, path).is_some_and(|a| a.elements().iter().any(|e| e.to_serde_value().as_ref() == Some(value)))
        }
        Edit::Member { path, key, value } | Edit::Replace { path, key, to: value, .. } => {
            object_at(root, path).and_then(|o| o.get(key)).and_then(|p| p.value()).and_then(|v| v.to_serde_value()).as_ref() == Some(value)
        }
    }
}

/// Removes `edit` from `root` if present as written; whether it was.
fn remove(root: &CstRootNode, edit: &Edit) -> bool {
    match edit {
        Edit::Append { path, value } => {
            let Some(array) = array_at(root, path) else { return false };
            match array.elements().into_iter().find(|e| e.to_serde_value().as_ref() == Some(value)) {
                Some(element) => {
                    element.remove();
                    true
                }
                None => false,
            }
        }
        Edit::Member { path, key, value } => match object_at(root, path).and_then(|o| o.get(key)) {
            Some(prop) if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(value) => {
                prop.remove();
                true
            }
            _ => false,
        },
        Edit::Replace { path, key, from, to } => match object_at(root, path).and_then(|o| o.get(key)) {
            Some(prop) if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(to) => {
                prop.set_value(to_input(from));
                true
            }
            _ => false,
        },
    }
}

/// Applies `edit` (absent by now). `Ok(Some(note))`: a member that exists
/// with another value, the user's, left alone; `Err`: the settings cannot
/// take the edit (a key of ours holds another kind of value, a wrapped
/// entry changed or is gone).
fn apply(root: &CstRootNode, edit: &Edit, created: &mut Vec<Vec<String>>) -> Result<Option<String>, String> {
    match edit {
        Edit::Append { path, value } => {
            let (last, parents) = path.split_last().ok_or("empty path")?;
            let object = object_or_create(root, parents, created)?;
            let array = match object.get(last) {
                Some(prop) => prop.array_value().ok_or_else(|| format!("{} is not an array", path.join(".")))?,
                None => {
                    created.push(path.clone());
                    object.append(last, CstInputValue::Array(Vec::new())).array_value().ok_or("cannot create an array")?
                }
            };
            array.append(to_input(value));
            Ok(None)
        }
        Edit::Member { path, key, value } => {
            let object = object_or_create(root, path, created)?;
            if object.get(key).is_some() {
                let mut full = path.clone();
                full.push(key.clone());
                return Ok(Some(format!("{} is already set to something else; left as it is", full.join("."))));
            }
            object.append(key, to_input(value));
            Ok(None)
        }
        Edit::Replace { path, key, from, to } => {
            let mut full = path.clone();
            full.push(key.clone());
            match object_at(root, path).and_then(|o| o.get(key)) {
                Some(prop) if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(from) => {
                    prop.set_value(to_input(to));
                    Ok(None)
                }
                Some(_) => Err(format!("{} changed since it was read; left as it is", full.join("."))),
                None => Err(format!("{} is not configured", full.join("."))),
            }
        }
    }
}

/// Removes the containers toolprune created that are empty again, deepest first.
fn remove_empty(root: &CstRootNode, created: &[Vec<String>]) {
    let mut paths: Vec<&Vec<String>> = created.iter().filter(|p| !p.is_empty()).collect();
    paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for path in paths {
        let (last, parents) = path.split_last().expect("not empty");
        let Some(parent) = object_at(root, parents) else { continue };
        let Some(prop) = parent.get(last) else { continue };
        let empty = match prop.value() {
            Some(CstNode::Container(c)) => c.as_object().map(|o| o.properties().is_empty()).or_else(|| c.as_array().map(|a| a.elements().is_empty())),
            _ => None,
        };
        if empty == Some(true) {
            prop.remove();
        }
    }
}

fn root_is_empty(root: &CstRootNode) -> bool {
    match root.value() {
        None => true,
        Some(CstNode::Container(c)) => c.as_object().is_some_and(|o| o.properties().is_empty()),
        Some(_) => false,
    }
}

/// Writes `path` atomically (a temporary file, then a rename), creating its
/// folder, keeping an existing file's permissions (else 0644; the manifest 0600).
fn write_file(path: &Path, text: &str) -> Result<(), String> {
    // A settings file that is a symbolic link (dotfiles) stays one: the
    // text goes to the file it points to.
    let resolved;
    let path = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            resolved = std::fs::canonicalize(path).map_err(|e| format!("cannot follow the link {}: {e}", path.display()))?;
            resolved.as_path()
        }
        _ => path,
    };
    let dir = path.parent().ok_or("no parent folder")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{}.toolprune.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("settings")));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// A file's new text and record, computed before anything is written.
struct Change {
    path: PathBuf,
    before: Option<String>,
    after: Option<String>,
    record: Option<FileRecord>,
    notes: Vec<String>,
}

fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn scope_name(scope: Scope) -> String {
    match scope {
        Scope::User => "user".into(),
        Scope::Project => "project".into(),
    }
}

fn install_file(file: &FilePlan, old: Option<&FileRecord>, agent: &str, scope: Scope) -> Result<Change, String> {
    let before = read_optional(&file.path)?;
    let mut root = Doc::parse(&file.path, before.as_deref().unwrap_or(""))?;
    let mut record = old.cloned().unwrap_or_else(|| FileRecord {
        agent: agent.to_string(),
        scope: scope_name(scope),
        created_file: before.is_none(),
        blank_text: before.clone().filter(|_| root.is_blank()),
        created_dirs: missing_dirs(&file.path),
        ..FileRecord::default()
    });
    let mut notes = Vec::new();
    // Our own entries that the plan no longer has (an old matcher, a moved binary): out.
    // Wrapped servers (`--wrap`) are not part of the plan: they stay until `uninstall`.
    let wrap = |e: &Edit| matches!(e, Edit::Replace { .. });
    let stale: Vec<Edit> = record.edits.iter().filter(|e| !wrap(e) && !file.edits.contains(e)).cloned().collect();
    for edit in &stale {
        if root.remove(edit) {
            notes.push(format!("replaced {}", edit.describe()));
        }
    }
    record.edits.retain(|e| wrap(e) || file.edits.contains(e));
    for edit in &file.edits {
        if root.present(edit) {
            continue;
        }
        let mut created = Vec::new();
        let mut restore = record.clone();
        if let Doc::Json(json) = &root {
            remember_one_line(json, edit, &mut restore);
        }
        // A key of ours that holds something else (`"hooks": "none"`):
        // refused, and nothing written — an install that half happened
        // would print success and leave `doctor` failing.
        let applied = root
            .apply(edit, &mut created)
            .map_err(|message| format!("{}: {message}; fix or remove it, then install again", file.path.display()))?;
        match applied {
            None => {
                record.restore = restore.restore;
                if !record.edits.contains(edit) {
                    record.edits.push(edit.clone());
                }
                for path in created {
                    if !record.created.contains(&path) {
                        record.created.push(path);
                    }
                }
                notes.push(format!("added {}", edit.describe()));
            }
            Some(left_alone) => notes.push(format!("warning: {left_alone}")),
        }
    }
    let after = root.text();
    let after = if before.as_deref() == Some(after.as_str()) {
        before.clone()
    } else if before.is_none() && !after.ends_with('\n') {
        Some(format!("{after}\n"))
    } else {
        Some(after)
    };
    Ok(Change { path: file.path.clone(), before, after, record: Some(record), notes })
}

/// The folders above `path` that do not exist yet, deepest first.
fn missing_dirs(path: &Path) -> Vec<String> {
    path.ancestors().skip(1).take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(|d| d.to_string_lossy().into_owned()).collect()
}

fn uninstall_file(path: &Path, record: &FileRecord) -> Result<Change, String> {
    let before = read_optional(path)?;
    let Some(text) = before.clone() else {
        return Ok(Change { path: path.to_path_buf(), before: None, after: None, record: None, notes: vec!["already gone".into()] });
    };
    let mut root = Doc::parse(path, &text)?;
    let mut notes = Vec::new();
    for edit in &record.edits {
        if root.remove(edit) {
            notes.push(format!("removed {}", edit.describe()));
        } else if !root.present(edit) {
            notes.push(format!("not found (changed or removed since): {}", edit.describe()));
        }
    }
    root.remove_empty(&record.created);
    let after = match (&record.blank_text, root.is_empty()) {
        _ if record.created_file && root.is_empty() => None,
        (Some(blank), true) => Some(blank.clone()),
        _ => Some(restore_one_line(root.text(), &record.restore)),
    };
    if after.is_none() {
        notes.push("deleted the file toolprune had created".into());
    }
    Ok(Change { path: path.to_path_buf(), before, after, record: None, notes })
}

/// The report of an install or uninstall, for the terminal.
#[derive(Debug)]
pub struct Report {
    pub text: String,
    pub changed: bool,
}

fn commit(changes: &[Change], manifest: &mut Manifest, manifest_path: &Path, dry_run: bool) -> Result<Report, String> {
    let mut text = String::new();
    let mut changed = false;
    for change in changes {
        let differs = change.before != change.after;
        changed |= differs;
        let _ = writeln!(text, "{}{}", change.path.display(), if differs { "" } else { ": unchanged" });
        for note in &change.notes {
            let _ = writeln!(text, "  {note}");
        }
    }
    if dry_run {
        text.push_str("(dry run: nothing written)\n");
        return Ok(Report { text, changed });
    }
    for change in changes {
        if change.before != change.after {
            match &change.after {
                Some(after) => write_file(&change.path, after)?,
                None => {
                    std::fs::remove_file(&change.path).map_err(|e| format!("cannot delete {}: {e}", change.path.display()))?;
                    // The folders install made for it, if nothing else is in them.
                    let key = change.path.to_string_lossy().into_owned();
                    for dir in manifest.files.get(&key).map(|r| r.created_dirs.clone()).unwrap_or_default() {
                        let _ = std::fs::remove_dir(dir);
                    }
                }
            }
        }
        let key = change.path.to_string_lossy().into_owned();
        match &change.record {
            Some(record) if !record.edits.is_empty() => {
                manifest.files.insert(key, record.clone());
            }
            _ => {
                manifest.files.remove(&key);
            }
        }
    }
    manifest.version = 1;
    if manifest.files.is_empty() {
        if manifest_path.exists() {
            std::fs::remove_file(manifest_path).map_err(|e| format!("cannot delete {}: {e}", manifest_path.display()))?;
            // toolprune's own config folder, when nothing else (a config.toml) is in it.
            if let Some(dir) = manifest_path.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    } else {
        manifest.save(manifest_path)?;
    }
    Ok(Report { text, changed })
}

/// Installs the agent labelled `agent`: applies `plans` in order (each
/// first completed by `refine` from the texts the files before it will have)
/// and records every edit in the manifest at `manifest`. Idempotent; our
/// own entries the plans no longer have are replaced. Errors: a settings
/// file or the manifest does not parse, or a key of ours holds another kind
/// of value (nothing written), or a file cannot be written.
pub fn install(agent: &str, scope: Scope, plans: &[FilePlan], refine: Refine<'_>, manifest: &Path, dry_run: bool) -> Result<Report, String> {
    let manifest_path = manifest;
    let mut manifest = Manifest::load(manifest_path)?;
    let mut staged: Vec<(PathBuf, Option<String>)> = Vec::new();
    let mut changes: Vec<Change> = Vec::new();
    for plan in plans {
        let mut file = plan.clone();
        refine(&mut file, &staged);
        let change = install_file(&file, manifest.files.get(&*file.path.to_string_lossy()), agent, scope)?;
        staged.push((change.path.clone(), change.after.clone()));
        changes.push(change);
    }
    commit(&changes, &mut manifest, manifest_path, dry_run)
}

/// Removes exactly what `install` recorded for the agent labelled `agent`
/// in `scope` (the manifest at `manifest`). Errors as [`install`].
pub fn uninstall(agent: &str, scope: Scope, manifest: &Path, dry_run: bool) -> Result<Report, String> {
    let manifest_path = manifest;
    let mut manifest = Manifest::load(manifest_path)?;
    let ours: Vec<(String, FileRecord)> = manifest
        .files
        .iter()
        .filter(|(_, r)| r.agent == agent && r.scope == scope_name(scope))
        .map(|(k, r)| (k.clone(), r.clone()))
        .collect();
    if ours.is_empty() {
        return Ok(Report { text: format!("toolprune is not installed for {agent} ({} scope)\n", scope_name(scope)), changed: false });
    }
    let changes: Vec<Change> = ours.iter().map(|(path, record)| uninstall_file(Path::new(path), record)).collect::<Result<_, _>>()?;
    commit(&changes, &mut manifest, manifest_path, dry_run)
}

/// `toolprune install AGENT --wrap NAME`: rewrites the MCP server entry
/// `NAME` of the table `servers` (`mcpServers`; Codex: `mcp_servers`) in
/// the agent's MCP file `path` (already configured) to start `toolprune
/// mcp-proxy` in front of it (`proxy::wrap::wrapped`, running `paths.binary`),
/// every other byte of the file kept; the manifest keeps the original entry
/// for `uninstall`. A second run changes nothing. Errors: no such entry, it
/// already goes through a proxy, an SSE server, a file or manifest that does
/// not parse.
pub fn wrap(agent: &str, scope: Scope, (path, servers): (&Path, &str), paths: &Paths, name: &str, dry_run: bool) -> Result<Report, String> {
    let mut manifest = Manifest::load(&paths.manifest())?;
    let path = path.to_path_buf();
    let key = path.to_string_lossy().into_owned();
    let before = read_optional(&path)?.ok_or_else(|| format!("{} does not exist: no server {name} to wrap", path.display()))?;
    let mut root = Doc::parse(&path, &before)?;
    let mut record = manifest.files.get(&key).cloned().unwrap_or_else(|| FileRecord {
        agent: agent.to_string(),
        scope: scope_name(scope),
        created_file: false,
        ..FileRecord::default()
    });
    let ours = record.edits.iter().find(|e| matches!(e, Edit::Replace { key: k, .. } if k == name)).cloned();
    let mut notes = Vec::new();
    match ours {
        Some(edit) if root.present(&edit) => notes.push(format!("{name} already goes through toolprune mcp-proxy")),
        _ => {
            let entry = root
                .value()
                .get(servers)
                .and_then(|o| o.get(name))
                .cloned()
                .ok_or_else(|| format!("{}: {servers}.{name} is not configured", path.display()))?;
            let wrapped = crate::proxy::wrap::wrapped(&entry, name, &paths.binary.to_string_lossy())?;
            let edit = Edit::Replace { path: vec![servers.into()], key: name.to_string(), from: entry, to: wrapped };
            // The entry's own text, to put back byte for byte (`restore_one_line`
            // puts back any remembered container that holds its value again).
            let entry_path = vec![servers.to_string(), name.to_string()];
            if let Some((start, end)) = span_at(&before, &entry_path).filter(|_| !is_toml(&path)) {
                record.restore.retain(|(p, _)| p != &entry_path);
                record.restore.push((entry_path, before[start..end].to_string()));
            }
            let mut created = Vec::new();
            if let Some(left_alone) = root.apply(&edit, &mut created)? {
                return Err(left_alone);
            }
            record.edits.retain(|e| !matches!(e, Edit::Replace { key: k, .. } if k == name));
            record.edits.push(edit.clone());
            notes.push(format!("wrapped {}", edit.describe()));
        }
    }
    let after = root.text();
    let change = Change { path: path.clone(), before: Some(before), after: Some(after), record: Some(record), notes };
    commit(&[change], &mut manifest, &paths.manifest(), dry_run)
}

/// `toolprune uninstall AGENT --wrap NAME`: puts the original entry of a
/// server wrapped by [`wrap`] back (when the entry is still what `wrap`
/// wrote; a changed entry is left alone and said so). The hooks stay.
pub fn unwrap((path, servers): (&Path, &str), paths: &Paths, name: &str, dry_run: bool) -> Result<Report, String> {
    let mut manifest = Manifest::load(&paths.manifest())?;
    let path = path.to_path_buf();
    let key = path.to_string_lossy().into_owned();
    let Some(mut record) = manifest.files.get(&key).cloned() else {
        return Ok(Report { text: format!("{name} was not wrapped by toolprune in {}\n", path.display()), changed: false });
    };
    let Some(edit) = record.edits.iter().find(|e| matches!(e, Edit::Replace { key: k, .. } if k == name)).cloned() else {
        return Ok(Report { text: format!("{name} was not wrapped by toolprune in {}\n", path.display()), changed: false });
    };
    let before = read_optional(&path)?;
    let mut notes = Vec::new();
    let after = match &before {
        Some(text) => {
            let mut root = Doc::parse(&path, text)?;
            if root.remove(&edit) {
                notes.push(format!("put back {servers}.{name} as it was"));
            } else {
                notes.push(format!("{servers}.{name} changed since it was wrapped; left as it is"));
            }
            Some(restore_one_line(root.text(), &record.restore))
        }
        None => None,
    };
    record.edits.retain(|e| e != &edit);
    record.restore.retain(|(p, _)| p.as_slice() != [servers.to_string(), name.to_string()]);
    let change = Change { path, before, after, record: Some(record), notes };
    commit(&[change], &mut manifest, &paths.manifest(), dry_run)
}

/// The servers wrapped by `install --wrap` (their `mcpServers` keys), from
/// the manifest at `manifest`; empty when there is none. The hooks leave
/// these servers' tools to the proxy (no second pruning).
pub fn wrapped_servers(manifest: &Path) -> Vec<String> {
    let Ok(manifest) = Manifest::load(manifest) else { return Vec::new() };
    let mut names: Vec<String> = manifest
        .files
        .values()
        .flat_map(|r| r.edits.iter())
        .filter_map(|e| match e {
            Edit::Replace { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// One line of `doctor`'s report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub ok: bool,
    pub what: String,
}

/// The program a hook command runs (its first shell word, unquoted).
fn program_of(command: &str) -> String {
    let command = command.trim();
    if let Some(rest) = command.strip_prefix('\'') {
        let mut out = String::new();
        let mut rest = rest;
        loop {
            match rest.find('\'') {
                Some(i) => {
                    out.push_str(&rest[..i]);
                    rest = &rest[i + 1..];
                    if let Some(r) = rest.strip_prefix("\\''") {
                        out.push('\'');
                        rest = r;
                    } else {
                        return out;
                    }
                }
                None => return out + rest,
            }
        }
    }
    command.split_whitespace().next().unwrap_or("").to_string()
}

pub fn executable(path: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        Path::new(path).is_file()
    }
}

/// Whether any hooks file of `plans` holds a hook of toolprune for `agent`
/// (a command ending in `hook AGENT`, as `install` writes it; a plugin's
/// `… --plugin` command is not one): a missing or unreadable file holds none.
pub fn has_hooks(agent: &str, plans: &[FilePlan]) -> bool {
    plans.iter().any(|file| {
        let hook_paths: Vec<&Vec<String>> = file
            .edits
            .iter()
            .filter_map(|e| match e {
                Edit::Append { path, .. } if path.first().is_some_and(|p| p == "hooks") => Some(path),
                _ => None,
            })
            .collect();
        if hook_paths.is_empty() {
            return false;
        }
        let Ok(Some(text)) = read_optional(&file.path) else { return false };
        let Ok(doc) = Doc::parse(&file.path, &text) else { return false };
        let root = doc.value();
        hook_paths.iter().any(|path| {
            value_at(&root, path).and_then(Value::as_array).is_some_and(|elements| elements.iter().any(|e| ours(e, agent)))
        })
    })
}

/// Whether a hooks-file element runs `… hook AGENT` (in its `hooks` list, or
/// as its own `command`: Cursor).
fn ours(element: &Value, agent: &str) -> bool {
    let commands: Vec<&str> = match element.get("hooks").and_then(Value::as_array) {
        Some(hooks) => hooks.iter().filter_map(|h| h.get("command").and_then(Value::as_str)).collect(),
        None => element.get("command").and_then(Value::as_str).into_iter().collect(),
    };
    commands.iter().any(|c| c.trim_end().ends_with(&format!("hook {agent}")))
}

/// Checks the settings of `agent` in `scope` against what `install` writes:
/// each hook entry present with the expected matcher and a command that runs
/// an existing `toolprune … hook AGENT`, the MCP server registered with an
/// existing binary and `mcp`, Claude Code's permission entry.
pub fn check_settings(agent: &str, plans: &[FilePlan]) -> Vec<Check> {
    let mut checks = Vec::new();
    for file in plans {
        let text = match read_optional(&file.path) {
            Ok(Some(text)) => text,
            Ok(None) => {
                checks.push(Check { ok: false, what: format!("{} is missing", file.path.display()) });
                continue;
            }
            Err(e) => {
                checks.push(Check { ok: false, what: e });
                continue;
            }
        };
        let doc = match Doc::parse(&file.path, &text) {
            Ok(doc) => doc,
            Err(e) => {
                checks.push(Check { ok: false, what: e });
                continue;
            }
        };
        let root = doc.value();
        for edit in &file.edits {
            let (ok, what) = match edit {
                Edit::Append { path, value } if value.get("hooks").is_some() || value.get("command").is_some() => {
                    let elements = value_at(&root, path).and_then(Value::as_array).cloned().unwrap_or_default();
                    match elements.into_iter().find(|e| ours(e, agent)) {
                        None => (false, format!("{}: no toolprune hook in {}", file.path.display(), path.join("."))),
                        Some(entry) => {
                            let command = entry
                                .get("hooks")
                                .and_then(|h| h.get(0))
                                .unwrap_or(&entry)
                                .get("command")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string();
                            let program = program_of(&command);
                            if !executable(&program) {
                                (false, format!("{}: the {} hook runs {program}, which does not exist", file.path.display(), path.join(".")))
                            } else if entry.get("matcher") != value.get("matcher") {
                                (
                                    false,
                                    format!(
                                        "{}: the {} matcher is {} but the configuration needs {} (run toolprune install {} again)",
                                        file.path.display(),
                                        path.join("."),
                                        entry.get("matcher").unwrap_or(&Value::Null),
                                        value.get("matcher").unwrap_or(&Value::Null),
                                        agent
                                    ),
                                )
                            } else {
                                (true, format!("{}: {} hook → {program}", file.path.display(), path.join(".")))
                            }
                        }
                    }
                }
                Edit::Member { path, key, value } if value.get("command").is_some() => {
                    let found = value_at(&root, path).and_then(|o| o.get(key)).cloned();
                    match found {
                        None => (false, format!("{}: no MCP server {key}", file.path.display())),
                        Some(server) => {
                            let program = server.get("command").and_then(Value::as_str).unwrap_or("").to_string();
                            if server.get("args") != Some(&json!(["mcp"])) || !executable(&program) {
                                (false, format!("{}: MCP server {key} does not run an existing `toolprune mcp` ({server})", file.path.display()))
                            } else if value.get("trust").is_some() && server.get("trust") != value.get("trust") {
                                (false, format!("{}: MCP server {key} needs \"trust\": true (headless runs never offer the tool otherwise)", file.path.display()))
                            } else {
                                (true, format!("{}: MCP server {key} → {program} mcp", file.path.display()))
                            }
                        }
                    }
                }
                other => {
                    let ok = doc.present(other);
                    (ok, format!("{}: {}{}", file.path.display(), other.describe(), if ok { "" } else { " is missing" }))
                }
            };
            checks.push(Check { ok, what });
        }
    }
    checks
}

/// `toolprune doctor AGENT` for the agent labelled `agent`: the component
/// (loads, disk cache), the configuration (resolves), the settings
/// (`settings(prunable globs)`: [`check_settings`] and the agent's own
/// checks), and the store root (private and writable). Returns the report
/// and whether every check passed.
pub fn doctor(agent: &str, scope: Scope, settings: &dyn Fn(&[String]) -> Vec<Check>, env: &dyn Fn(&str) -> Option<String>) -> (String, bool) {
    let mut checks = Vec::new();
    let pruner = toolprune::Pruner::shared();
    let config = match &pruner {
        Ok(pruner) => {
            checks.push(Check { ok: true, what: format!("the component loads (contract {})", pruner.version()) });
            match toolprune::CacheDir::Default.path() {
                Some(dir) if std::fs::read_dir(&dir).is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm")))) => {
                    checks.push(Check { ok: true, what: format!("compiled component cached in {}", dir.display()) })
                }
                Some(dir) => checks.push(Check { ok: false, what: format!("no compiled component in {} (every hook compiles it: slow)", dir.display()) }),
                None => checks.push(Check { ok: false, what: "no cache folder (HOME unset): every hook compiles the component".into() }),
            }
            match pruner.configuration(env) {
                Ok(config) => {
                    checks.push(Check { ok: true, what: format!("configuration resolves (enabled={}, prunable={:?})", config.enabled, config.prunable) });
                    Some(config)
                }
                Err(e) => {
                    checks.push(Check { ok: false, what: format!("configuration: {e} (hooks pass everything unchanged)") });
                    None
                }
            }
        }
        Err(e) => {
            checks.push(Check { ok: false, what: format!("the component does not load: {e:#}") });
            None
        }
    };
    let prunable = config.as_ref().map(|c| c.prunable.clone()).unwrap_or_default();
    checks.extend(settings(&prunable));
    match crate::store::Root::from_env(env) {
        Ok(root) => {
            let probe = root.session("doctor", &format!("{}", std::process::id())).and_then(|s| {
                s.record_request("doctor")?;
                std::fs::remove_dir_all(s.path()).map_err(toolprune::StoreError::from)
            });
            match probe {
                Ok(()) => checks.push(Check { ok: true, what: format!("session store {} is private and writable", root.path().display()) }),
                Err(e) => checks.push(Check { ok: false, what: format!("session store: {e}") }),
            }
        }
        Err(e) => checks.push(Check { ok: false, what: format!("session store: {e}") }),
    }
    let ok = checks.iter().all(|c| c.ok);
    let mut text = String::new();
    for check in &checks {
        let _ = writeln!(text, "{} {}", if check.ok { "ok  " } else { "FAIL" }, check.what);
    }
    let _ = writeln!(
        text,
        "{}",
        if ok { format!("toolprune is ready in {agent} ({} scope)", scope_name(scope)) } else { format!("something is missing: run `toolprune install {agent}`") }
    );
    (text, ok)
}

#[cfg(test)]
mod tests {
    //! The engine through every agent's adapter (`crate::agents`), as
    //! `toolprune install|uninstall AGENT` runs it.
    use super::*;
    use crate::agents::Agent;

    fn plan(agent: Agent, scope: Scope, paths: &Paths, prunable: &[String]) -> Vec<FilePlan> {
        agent.adapter().plan(scope, paths, prunable).unwrap()
    }
    fn install(agent: Agent, scope: Scope, paths: &Paths, prunable: &[String], dry_run: bool) -> Result<Report, String> {
        crate::agents::install(agent, scope, paths, prunable, dry_run)
    }
    fn uninstall(agent: Agent, scope: Scope, paths: &Paths, dry_run: bool) -> Result<Report, String> {
        crate::agents::uninstall(agent, scope, paths, dry_run)
    }
    fn wrap(agent: Agent, scope: Scope, paths: &Paths, name: &str, dry_run: bool) -> Result<Report, String> {
        crate::agents::wrap(agent, scope, paths, name, dry_run)
    }
    fn unwrap(agent: Agent, scope: Scope, paths: &Paths, name: &str, dry_run: bool) -> Result<Report, String> {
        crate::agents::unwrap(agent, scope, paths, name, dry_run)
    }
    fn mcp_file(agent: Agent, scope: Scope, paths: &Paths) -> PathBuf {
        agent.adapter().mcp_file(scope, paths).0
    }

    fn paths(dir: &Path) -> Paths {
        Paths {
            home: dir.join("home"),
            project: dir.join("project"),
            config_dir: dir.join("home/.config/toolprune"),
            binary: PathBuf::from("/opt/tool prune/bin/toolprune"),
            codex_home: dir.join("home/.codex"),
        }
    }

    fn globs() -> Vec<String> {
        vec!["mcp__*__fetch".into(), "WebFetch".into(), "a.b?".into()]
    }

    const ORIGINAL: &str = "{\n  // the user's comment\n    \"model\" :  \"opus\",\t\"hooks\": {\"Stop\": [ ]},\n  \"permissions\": {\"allow\": [\"Bash(ls)\"], \"deny\": []},\n  \"greeting\": \"こんにちは ✓ \\u00e9\"\n}";

    /// Everything on one line, with containers toolprune adds to.
    const ONE_LINE: &str = r#"{"hooks": {"PostToolUse": [{"matcher": "x", "hooks": []}], "BeforeAgent": [ ]}, "mcpServers": {"x": {"command": "y"}}, "permissions": {"allow": ["Read"]}}"#;

    /// A user's MCP file with a fetch server (comments, odd spacing) and another server.
    const MCP_FILE: &str = "{\n  // my servers\n  \"mcpServers\": {\n    \"fetch\": {\"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"], \"env\": {\"A\": \"1\"}},\n    \"other\":   {\"url\": \"https://x.test/mcp\"}\n  },\n  \"numStartups\": 3\n}\n";

    #[test]
    fn wrapping_a_configured_server_goes_through_the_proxy_and_uninstall_puts_the_original_bytes_back() {
        for (agent, scope) in [(Agent::ClaudeCode, Scope::User), (Agent::ClaudeCode, Scope::Project), (Agent::Gemini, Scope::User), (Agent::Cursor, Scope::Project)] {
            let tmp = tempfile::tempdir().unwrap();
            let paths = paths(tmp.path());
            let file = mcp_file(agent, scope, &paths);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, MCP_FILE).unwrap();
            install(agent, scope, &paths, &globs(), false).unwrap();
            let installed = std::fs::read_to_string(&file).unwrap();
            wrap(agent, scope, &paths, "fetch", false).unwrap();
            let text = std::fs::read_to_string(&file).unwrap();
            let value = serde_of(&text).unwrap();
            let bin = paths.binary.to_string_lossy().into_owned();
            assert_eq!(value["mcpServers"]["fetch"]["command"], bin.as_str());
            assert_eq!(value["mcpServers"]["fetch"]["args"], json!(["mcp-proxy", "--name", "fetch", "--", "uvx", "mcp-server-fetch"]));
            assert_eq!(value["mcpServers"]["fetch"]["env"], json!({"A": "1"}));
            assert_eq!(value["mcpServers"]["other"], json!({"url": "https://x.test/mcp"}), "{agent:?}");
            assert!(text.contains("// my servers") && text.contains("\"numStartups\": 3"));
            assert_eq!(wrapped_servers(&paths.manifest()), ["fetch"]);
            // Idempotent, and a later plain install keeps the wrap.
            assert!(!wrap(agent, scope, &paths, "fetch", false).unwrap().changed);
            install(agent, scope, &paths, &globs(), false).unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
            // uninstall --wrap: only that entry goes back.
            unwrap(agent, scope, &paths, "fetch", false).unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), installed, "{agent:?} {scope:?}");
            assert!(wrapped_servers(&paths.manifest()).is_empty());
            // Wrap again, then a full uninstall: the user's original file, byte for byte.
            wrap(agent, scope, &paths, "fetch", false).unwrap();
            uninstall(agent, scope, &paths, false).unwrap();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), MCP_FILE, "{agent:?} {scope:?}");
        }
    }

    #[test]
    fn a_server_that_is_missing_or_changed_since_is_not_touched() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let file = mcp_file(Agent::Cursor, Scope::User, &paths);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, MCP_FILE).unwrap();
        assert!(wrap(Agent::Cursor, Scope::User, &paths, "nope", false).unwrap_err().contains("not configured"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), MCP_FILE);
        wrap(Agent::Cursor, Scope::User, &paths, "fetch", false).unwrap();
        // The user edits the wrapped entry: uninstall leaves it and says so.
        let edited = std::fs::read_to_string(&file).unwrap().replace("\"mcp-server-fetch\"", "\"mcp-server-fetch\", \"--x\"");
        std::fs::write(&file, &edited).unwrap();
        let report = unwrap(Agent::Cursor, Scope::User, &paths, "fetch", false).unwrap();
        assert!(report.text.contains("changed since it was wrapped"), "{}", report.text);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    }

    #[test]
    fn globs_become_one_anchored_regex() {
        assert_eq!(matcher(&globs(), &[]), "^(mcp__.*__fetch|WebFetch|a\\.b.)$");
        assert_eq!(matcher(&["fetch".into()], &["mcp_toolprune_omitted".into()]), "^(fetch|mcp_toolprune_omitted)$");
    }

    #[test]
    fn program_paths_are_one_shell_word() {
        assert_eq!(shell_word("/usr/bin/toolprune"), "/usr/bin/toolprune");
        assert_eq!(shell_word("/opt/tool prune/it's"), "'/opt/tool prune/it'\\''s'");
        assert_eq!(program_of("'/opt/tool prune/it'\\''s' hook gemini"), "/opt/tool prune/it's");
        assert_eq!(program_of("/usr/bin/toolprune hook gemini"), "/usr/bin/toolprune");
    }

    fn round_trip(agent: Agent, scope: Scope, original: Option<&str>) {
        round_trip_with(agent, scope, &|_| original.map(str::to_string))
    }

    /// Install, again, uninstall, with each planned file first holding
    /// `original(path)` (none: missing).
    fn round_trip_with(agent: Agent, scope: Scope, original: &dyn Fn(&Path) -> Option<String>) {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let files = plan(agent, scope, &paths, &globs());
        for file in &files {
            if let Some(text) = original(&file.path) {
                std::fs::create_dir_all(file.path.parent().unwrap()).unwrap();
                std::fs::write(&file.path, text).unwrap();
            }
        }
        let first = install(agent, scope, &paths, &globs(), false).unwrap();
        assert!(first.changed);
        let installed: Vec<Option<String>> = files.iter().map(|f| std::fs::read_to_string(&f.path).ok()).collect();
        for (file, text) in files.iter().zip(&installed) {
            let text = text.as_ref().expect("written");
            for edit in &file.edits {
                assert!(Doc::parse(&file.path, text).unwrap().present(edit), "{}: {}", file.path.display(), edit.describe());
            }
            if original(&file.path).is_some_and(|o| o.contains("// the user's comment")) {
                assert!(text.contains("// the user's comment") && text.contains("\"model\" :  \"opus\",\t") && text.contains("こんにちは ✓ \\u00e9"));
            }
        }
        let second = install(agent, scope, &paths, &globs(), false).unwrap();
        assert!(!second.changed, "a second install changes nothing:\n{}", second.text);
        let again: Vec<Option<String>> = files.iter().map(|f| std::fs::read_to_string(&f.path).ok()).collect();
        assert_eq!(installed, again);
        let removed = uninstall(agent, scope, &paths, false).unwrap();
        assert!(removed.changed);
        for file in &files {
            match original(&file.path) {
                Some(text) => assert_eq!(std::fs::read_to_string(&file.path).unwrap(), text, "{}", file.path.display()),
                None => {
                    assert!(!file.path.exists(), "{} was created by install and removed", file.path.display());
                    let parent = file.path.parent().unwrap();
                    let users = files.iter().any(|f| f.path.parent() == Some(parent) && original(&f.path).is_some());
                    assert!(users || !parent.exists() || parent == paths.home || parent == paths.project, "{} was created by install and removed", parent.display());
                }
            }
        }
        assert!(!paths.manifest().exists(), "nothing left to remember");
        assert!(!paths.config_dir.exists(), "nor the folder made for it");
    }

    #[test]
    fn install_then_uninstall_gives_the_original_bytes_for_every_agent_and_scope() {
        for agent in [Agent::ClaudeCode, Agent::Gemini, Agent::Cursor] {
            for scope in [Scope::User, Scope::Project] {
                round_trip(agent, scope, Some(ORIGINAL));
                round_trip(agent, scope, Some(&format!("{ORIGINAL}\n")));
                round_trip(agent, scope, Some("{}"));
                round_trip(agent, scope, Some("{\r\n  \"a\": 1\r\n}\r\n"));
                round_trip(agent, scope, Some(ONE_LINE));
                round_trip(agent, scope, None);
            }
        }
    }

    /// A Codex `config.toml` with the user's comments, settings and servers.
    const CODEX_CONFIG: &str = "# my Codex settings\nmodel = \"gpt-5\"   # fast\n\n[mcp_servers.fetch]\ncommand = \"uvx\"\nargs = [\"mcp-server-fetch\"]\n\n[projects.\"/home/me/x\"]\ntrust_level = \"trusted\"\n";

    #[test]
    fn codex_install_then_uninstall_gives_the_original_bytes() {
        let hooks = |json: &'static str| move |p: &Path| Some(if p.extension().is_some_and(|x| x == "toml") { CODEX_CONFIG.to_string() } else { json.to_string() });
        round_trip_with(Agent::Codex, Scope::User, &hooks("{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"mine\"}]}]\n  }\n}\n"));
        round_trip_with(Agent::Codex, Scope::User, &hooks("{}"));
        round_trip_with(Agent::Codex, Scope::User, &|p: &Path| p.extension().is_some_and(|x| x == "toml").then(|| CODEX_CONFIG.to_string()));
        round_trip_with(Agent::Codex, Scope::User, &|p: &Path| p.extension().is_some_and(|x| x == "toml").then(|| "# only a comment\n".to_string()));
        round_trip(Agent::Codex, Scope::User, None);
    }

    #[test]
    fn codex_hooks_are_trusted_at_the_positions_they_land_on() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        std::fs::create_dir_all(&paths.codex_home).unwrap();
        let hooks_path = paths.codex_home.join("hooks.json");
        // The user's own PostToolUse hook comes first: ours is group 1.
        std::fs::write(&hooks_path, r#"{"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "mine"}]}]}}"#).unwrap();
        install(Agent::Codex, Scope::User, &paths, &globs(), false).unwrap();
        let config = toml_value(&std::fs::read_to_string(paths.codex_home.join("config.toml")).unwrap()).unwrap();
        let states = config["hooks"]["state"].as_object().unwrap();
        let key = |event: &str, group: usize| format!("{}:{event}:{group}:0", hooks_path.display());
        let mut keys: Vec<&String> = states.keys().collect();
        keys.sort();
        let mut want = [key("post_tool_use", 1), key("pre_tool_use", 0), key("session_end", 0), key("user_prompt_submit", 0)];
        want.sort();
        assert_eq!(keys, want.iter().collect::<Vec<_>>());
        let ours = crate::agents::codex::our_hooks(&hooks_path, &std::fs::read_to_string(&hooks_path).unwrap());
        for (k, hash) in &ours {
            assert_eq!(states[k]["trusted_hash"], hash.as_str());
        }
        assert_eq!(config["mcp_servers"]["toolprune"], json!({"command": "/opt/tool prune/bin/toolprune", "args": ["mcp"]}));
        assert!(crate::agents::Agent::Codex.adapter().checks(Scope::User, &paths, &globs()).iter().all(|c| c.ok));
        // A new matcher (another configuration) changes the hash: the record follows.
        install(Agent::Codex, Scope::User, &paths, &["mcp__docs__*".to_string()], false).unwrap();
        let config = toml_value(&std::fs::read_to_string(paths.codex_home.join("config.toml")).unwrap()).unwrap();
        let (k, hash) = crate::agents::codex::our_hooks(&hooks_path, &std::fs::read_to_string(&hooks_path).unwrap())
            .into_iter()
            .find(|(k, _)| k.contains("post_tool_use"))
            .unwrap();
        assert_eq!(config["hooks"]["state"][&k]["trusted_hash"], hash.as_str());
        assert_eq!(config["hooks"]["state"].as_object().unwrap().len(), 4, "the stale record went");
        // The user edits our hook: doctor says it is no longer trusted.
        let edited = std::fs::read_to_string(&hooks_path).unwrap().replace("\"timeout\": 30", "\"timeout\": 31");
        std::fs::write(&hooks_path, edited).unwrap();
        let checks = crate::agents::Agent::Codex.adapter().checks(Scope::User, &paths, &globs());
        assert!(checks.iter().any(|c| !c.ok && c.what.contains("changed since it was trusted")), "{checks:?}");
        // The project scope is refused before anything is written.
        let e = install(Agent::Codex, Scope::Project, &paths, &globs(), false).unwrap_err();
        assert!(e.contains("--user"), "{e}");
    }

    #[test]
    fn codex_wrap_puts_a_toml_server_behind_the_proxy_and_back() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let file = mcp_file(Agent::Codex, Scope::User, &paths);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, CODEX_CONFIG).unwrap();
        install(Agent::Codex, Scope::User, &paths, &globs(), false).unwrap();
        let installed = std::fs::read_to_string(&file).unwrap();
        wrap(Agent::Codex, Scope::User, &paths, "fetch", false).unwrap();
        let value = toml_value(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(value["mcp_servers"]["fetch"]["args"], json!(["mcp-proxy", "--name", "fetch", "--", "uvx", "mcp-server-fetch"]));
        assert_eq!(wrapped_servers(&paths.manifest()), ["fetch"]);
        unwrap(Agent::Codex, Scope::User, &paths, "fetch", false).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);
        uninstall(Agent::Codex, Scope::User, &paths, false).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), CODEX_CONFIG);
    }

    #[test]
    fn an_entry_the_user_had_before_is_never_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let settings = paths.home.join(".claude/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        let text = "{\n  \"permissions\": {\n    \"allow\": [\"mcp__toolprune__omitted\"]\n  }\n}\n";
        std::fs::write(&settings, text).unwrap();
        install(Agent::ClaudeCode, Scope::User, &paths, &globs(), false).unwrap();
        let manifest = Manifest::load(&paths.manifest()).unwrap();
        let record = &manifest.files[&*settings.to_string_lossy()];
        assert!(!record.edits.iter().any(|e| matches!(e, Edit::Append { path, .. } if path[0] == "permissions")));
        uninstall(Agent::ClaudeCode, Scope::User, &paths, false).unwrap();
        assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    }

    #[test]
    fn the_users_later_edits_stay_after_uninstall() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        install(Agent::Gemini, Scope::User, &paths, &globs(), false).unwrap();
        let settings = paths.home.join(".gemini/settings.json");
        let text = std::fs::read_to_string(&settings).unwrap();
        let edited = text.replacen("{", "{\n  \"theme\": \"dark\",", 1);
        std::fs::write(&settings, &edited).unwrap();
        uninstall(Agent::Gemini, Scope::User, &paths, false).unwrap();
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
        assert_eq!(after, json!({"theme": "dark"}));
    }

    #[test]
    fn a_new_configuration_replaces_the_stale_matcher_only() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        install(Agent::ClaudeCode, Scope::User, &paths, &globs(), false).unwrap();
        let report = install(Agent::ClaudeCode, Scope::User, &paths, &["mcp__docs__*".to_string()], false).unwrap();
        assert!(report.changed);
        let settings: Value = serde_json::from_str(&std::fs::read_to_string(paths.home.join(".claude/settings.json")).unwrap()).unwrap();
        let post = settings["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(post.len(), 1);
        assert_eq!(post[0]["matcher"], "^(mcp__docs__.*)$");
        uninstall(Agent::ClaudeCode, Scope::User, &paths, false).unwrap();
        assert!(!paths.home.join(".claude/settings.json").exists());
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let mcp = paths.home.join(".claude.json");
        std::fs::create_dir_all(&paths.home).unwrap();
        std::fs::write(&mcp, "{ \"mcpServers\": ").unwrap();
        let e = install(Agent::ClaudeCode, Scope::User, &paths, &globs(), false).unwrap_err();
        assert!(e.contains("does not parse") && e.contains("nothing was changed"), "{e}");
        assert!(!paths.home.join(".claude/settings.json").exists(), "not even the file that parses");
        assert_eq!(std::fs::read_to_string(&mcp).unwrap(), "{ \"mcpServers\": ");
    }

    #[test]
    fn a_server_of_the_same_name_that_is_not_ours_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let mcp = paths.project.join(".mcp.json");
        std::fs::create_dir_all(&paths.project).unwrap();
        let text = "{\"mcpServers\": {\"toolprune\": {\"command\": \"elsewhere\"}}}";
        std::fs::write(&mcp, text).unwrap();
        let report = install(Agent::ClaudeCode, Scope::Project, &paths, &globs(), false).unwrap();
        assert!(report.text.contains("already set to something else"), "{}", report.text);
        assert_eq!(std::fs::read_to_string(&mcp).unwrap(), text);
    }

    #[test]
    fn a_dry_run_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = paths(tmp.path());
        let report = install(Agent::Cursor, Scope::User, &paths, &globs(), true).unwrap();
        assert!(report.changed && report.text.contains("dry run"));
        assert!(!paths.home.join(".cursor").exists() && !paths.manifest().exists());
    }

    #[test]
    fn an_empty_or_comment_only_settings_file_comes_back_byte_for_byte() {
        for original in ["", "  \n", "// my settings\n"] {
            let tmp = tempfile::tempdir().unwrap();
            let paths = paths(tmp.path());
            let settings = paths.home.join(".cursor/hooks.json");
            std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
            std::fs::write(&settings, original).unwrap();
            install(Agent::Cursor, Scope::User, &paths, &globs(), false).unwrap();
            assert!(std::fs::read_to_string(&settings).unwrap().contains("toolprune"), "{original:?}");
            uninstall(Agent::Cursor, Scope::User, &paths, false).unwrap();
            assert_eq!(std::fs::read_to_string(&settings).unwrap(), original);
        }
    }
}
