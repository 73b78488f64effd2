//! What every host would otherwise have to know (WIT `settings`): the
//! contract version, thresholds (SPEC §6), the configuration from the
//! environment and the config file, which tools are prunable (SPEC §2, §15),
//! the retry rule (SPEC §11), resource limits per call, and the line a host
//! logs when the guest gave no answer.
//!
//! Hosts read the variables named by [`VARIABLES`] and the file at
//! [`config_path`], and pass them in; [`resolve`] applies defaults < file <
//! environment. The API token is never read here: [`TOKEN_VARIABLE`] names
//! the variable the host reads itself.

use crate::limits::{self, DEFAULT_THRESHOLD, THRESHOLDS};
use crate::toml_file::{self, DeTable, DeValue, Item};

/// The contract version (the WIT package's).
pub const VERSION: &str = "0.3.0";

/// The environment variable holding the API token (read by the host only).
pub const TOKEN_VARIABLE: &str = "TOOLPRUNE_JEV_TOKEN";

/// The environment variables [`resolve`] and [`config_path`] read.
pub const VARIABLES: [&str; 10] = [
    "TOOLPRUNE_CONFIG",
    "TOOLPRUNE_ENABLED",
    "TOOLPRUNE_THRESHOLD",
    "TOOLPRUNE_JEV_ROUTE",
    "TOOLPRUNE_JEV_ACCOUNT_ID",
    "TOOLPRUNE_JEV_BASE_URL",
    "TOOLPRUNE_JEV_MODEL",
    "XDG_CONFIG_HOME",
    "HOME",
    "APPDATA",
];

/// The model pinned in request bodies on the native and Vercel routes unless configured.
pub const DEFAULT_MODEL: &str = "jev-1.13.0";

/// Tool-name globs prunable when the config file names none: web-fetch
/// tools of Claude Code (`WebFetch`, an MCP server's `fetch`), Gemini CLI
/// (`web_fetch`, an MCP server's `fetch`: `mcp_<server>_fetch`) and Cursor,
/// and any MCP server named `fetch`.
pub const DEFAULT_PRUNABLE: [&str; 8] =
    ["WebFetch", "web_fetch", "fetch", "mcp__*__fetch", "mcp__fetch__*", "*__fetch", "mcp_fetch_*", "mcp_*_fetch"];

/// Tools never pruned whatever the globs say (compared case-insensitively
/// with the whole name and with each of its `_`/`:`-separated tails): file readers,
/// shells, editors, search over files, and bookkeeping tools whose results
/// must stay exact (SPEC §2). `omitted` (toolprune's own read-back) is never
/// pruned either: pruning a read-back would loop.
pub const NEVER_PRUNABLE: [&str; 46] = [
    // Claude Code
    "read", "write", "edit", "multiedit", "notebookedit", "notebookread", "bash", "bashoutput", "killshell",
    "grep", "glob", "ls", "todowrite", "task",
    // Gemini CLI
    "read_file", "read_many_files", "write_file", "replace", "run_shell_command", "search_file_content",
    "list_directory", "save_memory", "write_todos", "glob_tool",
    // Cursor
    "edit_file", "run_terminal_cmd", "grep_search", "file_search", "list_dir", "delete_file", "search_replace",
    "multi_edit", "read_lints", "terminal", "shell",
    // Common MCP file and shell servers
    "read_text_file", "read_media_file", "read_multiple_files", "edit_block", "create_directory",
    "move_file", "directory_tree", "execute_command", "run_command", "str_replace_editor", "apply_patch",
];

/// The name of toolprune's own read-back tool (SPEC §10).
pub const OMITTED_TOOL: &str = "omitted";

/// A configuration (WIT `settings.config`) on plain Rust types.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub enabled: bool,
    pub threshold: f64,
    pub lang_ja: bool,
    pub jev: Result<JevEndpoint, String>,
    pub prunable: Vec<String>,
    pub store: StoreLimits,
    pub proxy_basis: String,
}

/// Where Jev answers (WIT `settings.jev-endpoint`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JevEndpoint {
    pub route: &'static str,
    pub url: String,
    pub model: Option<String>,
    pub loopback: bool,
}

/// Bounds of a conversation's store (WIT `settings.store-limits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreLimits {
    pub max_records: u32,
    pub max_chars: u64,
    pub max_age_s: u64,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits { max_records: limits::STORE_MAX_RECORDS, max_chars: limits::STORE_MAX_CHARS, max_age_s: limits::STORE_MAX_AGE_S }
    }
}

/// Check a threshold written by a user: `0.2`, `0.20`, ` 0.5 ` are fine;
/// anything that is not one of the four values is refused (SPEC §6).
pub fn threshold(value: &str) -> Result<f64, String> {
    let t = value.trim();
    let parsed = if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !t.is_empty() { crate::number::parse(t) } else { None };
    match parsed.and_then(|v| THRESHOLDS.iter().copied().find(|x| (x - v).abs() < 1e-9)) {
        Some(x) => Ok(x),
        None => Err(format!(
            "threshold {:?} is not one of 0.1 (Light), 0.2 (Standard, the default), 0.3 (Strong), 0.5 (Maximum)",
            shorten(t)
        )),
    }
}

/// Whether `value` is one of the four thresholds exactly (as a number).
pub fn is_threshold(value: f64) -> bool {
    THRESHOLDS.iter().any(|x| (x - value).abs() < 1e-9)
}

fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}

fn var<'e>(env: &'e [(String, String)], name: &str) -> Option<&'e str> {
    env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.trim().is_empty())
}

/// The config file's path: `$TOOLPRUNE_CONFIG`, else
/// `$XDG_CONFIG_HOME/toolprune/config.toml`, else
/// `$HOME/.config/toolprune/config.toml`, else (Windows)
/// `%APPDATA%\toolprune\config.toml`; none when none of them is set.
pub fn config_path(env: &[(String, String)]) -> Option<String> {
    if let Some(p) = var(env, "TOOLPRUNE_CONFIG") {
        return Some(p.to_string());
    }
    if let Some(x) = var(env, "XDG_CONFIG_HOME") {
        return Some(format!("{}/toolprune/config.toml", x.trim_end_matches('/')));
    }
    if let Some(h) = var(env, "HOME") {
        return Some(format!("{}/.config/toolprune/config.toml", h.trim_end_matches('/')));
    }
    var(env, "APPDATA").map(|a| format!("{}\\toolprune\\config.toml", a.trim_end_matches('\\')))
}

/// The config file's keys, for the "unknown key" message.
const FILE_KEYS: &str = "enabled, threshold, lang, prunable, [jev] route/account_id/model/base_url, [store] max_records/max_chars/max_age_hours, [proxy] basis";

/// What the file and the environment say before defaults fill the gaps.
#[derive(Default)]
struct Raw {
    enabled: Option<bool>,
    threshold: Option<f64>,
    lang_ja: Option<bool>,
    prunable: Option<Vec<String>>,
    route: Option<String>,
    account_id: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    store: StoreLimits,
    proxy_basis: Option<String>,
}

/// What the config file says, into `raw`. Errors: one line, `line L,
/// column C: …` (a key's name at most, never a value but a number's text).
fn read_file(src: &str, raw: &mut Raw) -> Result<(), String> {
    let at = |byte: usize| {
        let (line, col) = toml_file::position(src, byte);
        format!("line {line}, column {col}")
    };
    let root = toml_file::parse(src).map_err(|e| format!("{}: {}", at(e.at), e.message))?;
    // Only decimal numbers are read: not hex, octal, binary, inf, nan, dates or times.
    let odd = |v: &Item<'_>| match v.get_ref() {
        DeValue::Integer(_) | DeValue::Float(_) => toml_file::decimal(src, v).is_none(),
        DeValue::Datetime(_) => true,
        _ => false,
    };
    if let Some(v) = toml_file::first(&root, &odd) {
        let text = src.get(v.span()).unwrap_or("");
        return Err(format!(
            "{}: `{text}` is not a decimal number (write 0.2 or 256; dates, times, hex and inf are not read)",
            at(v.span().start)
        ));
    }
    for (key, item) in &root {
        let where_ = || at(key.span().start);
        let value = item.get_ref();
        match key.get_ref().as_ref() {
            "enabled" => raw.enabled = Some(value.as_bool().ok_or_else(|| format!("{}: enabled must be true or false", where_()))?),
            "threshold" => {
                let v = match (toml_file::decimal(src, item), value) {
                    (Some(n), _) if is_threshold(n) => n,
                    (_, DeValue::String(s)) => threshold(s).map_err(|m| format!("{}: {m}", where_()))?,
                    _ => return Err(format!("{}: threshold must be 0.1, 0.2, 0.3 or 0.5", where_())),
                };
                raw.threshold = Some(v);
            }
            "lang" => raw.lang_ja = Some(lang(value).ok_or_else(|| format!("{}: lang must be \"en\" or \"ja\"", where_()))?),
            "prunable" => raw.prunable = Some(strings(value).ok_or_else(|| format!("{}: prunable must be a list of tool-name globs, e.g. [\"mcp__fetch__*\", \"WebFetch\"]", where_()))?),
            "jev" => read_jev(value.as_table().ok_or_else(|| format!("{}: [jev] must be a table", where_()))?, raw, &at)?,
            "store" => read_store(src, value.as_table().ok_or_else(|| format!("{}: [store] must be a table", where_()))?, raw, &at)?,
            "proxy" => {
                let t = value.as_table().ok_or_else(|| format!("{}: [proxy] must be a table", where_()))?;
                for (k, v) in t {
                    match (k.get_ref().as_ref(), v.get_ref()) {
                        ("basis", DeValue::String(s)) if ["hook", "argument", "none"].contains(&s.as_ref()) => raw.proxy_basis = Some(s.to_string()),
                        ("basis", _) => return Err(format!("{}: proxy.basis must be \"hook\", \"argument\" or \"none\"", at(k.span().start))),
                        (k_, _) => return Err(format!("{}: unknown key proxy.{k_} (known: {FILE_KEYS})", at(k.span().start))),
                    }
                }
            }
            k => return Err(format!("{}: unknown key {k} (known: {FILE_KEYS})", where_())),
        }
    }
    Ok(())
}

fn read_jev(t: &DeTable<'_>, raw: &mut Raw, at: &dyn Fn(usize) -> String) -> Result<(), String> {
    for (key, item) in t {
        let where_ = || at(key.span().start);
        let name = key.get_ref().as_ref();
        let text = || match item.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            _ => Err(format!("{}: jev.{name} must be a string", where_())),
        };
        match name {
            "route" => raw.route = Some(text()?),
            "account_id" => raw.account_id = Some(text()?),
            "model" => raw.model = Some(text()?),
            "base_url" => raw.base_url = Some(text()?),
            "token" => {
                return Err(format!(
                    "{}: jev.token is not read from a file: set the {TOKEN_VARIABLE} environment variable instead",
                    where_()
                ))
            }
            k => return Err(format!("{}: unknown key jev.{k} (known: {FILE_KEYS})", where_())),
        }
    }
    Ok(())
}

fn read_store(src: &str, t: &DeTable<'_>, raw: &mut Raw, at: &dyn Fn(usize) -> String) -> Result<(), String> {
    for (key, item) in t {
        let where_ = || at(key.span().start);
        let name = key.get_ref().as_ref();
        let n = match toml_file::decimal(src, item) {
            Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= 1e15 => n as u64,
            _ => return Err(format!("{}: store.{name} must be a whole number ≥ 1", where_())),
        };
        match name {
            "max_records" => raw.store.max_records = n.min(u64::from(u32::MAX)) as u32,
            "max_chars" => raw.store.max_chars = n,
            "max_age_hours" => raw.store.max_age_s = n.saturating_mul(3600),
            k => return Err(format!("{}: unknown key store.{k} (known: {FILE_KEYS})", where_())),
        }
    }
    Ok(())
}

fn lang(v: &DeValue<'_>) -> Option<bool> {
    match v.as_str() {
        Some(s) if s.eq_ignore_ascii_case("ja") => Some(true),
        Some(s) if s.eq_ignore_ascii_case("en") => Some(false),
        _ => None,
    }
}

fn strings(v: &DeValue<'_>) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|i| match i.get_ref() {
            DeValue::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            _ => None,
        })
        .collect()
}

/// A truthy / falsy environment value (`1`, `true`, `yes`, `on` / `0`, `false`, `no`, `off`).
fn flag(name: &str, value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("{name} must be 1/true or 0/false")),
    }
}

/// Resolve the configuration: defaults < the config file (`file`, its
/// text, read by the host from [`config_path`]; `None`: no such file) < the
/// environment (`env`, the values of [`VARIABLES`]). Errors: one line a
/// host prints as it is — a file problem names the file (`configuration
/// PATH: line L, column C: …`, never the file's content beyond a key name),
/// a variable names the variable; a file named by `TOOLPRUNE_CONFIG` that
/// does not exist is an error (a mistyped path must not silently drop the
/// user's settings), a missing default file is not.
pub fn resolve(env: &[(String, String)], file: Option<&str>) -> Result<Config, String> {
    let mut raw = Raw::default();
    let named = |m: String| match config_path(env) {
        Some(path) => format!("configuration {path}: {m}"),
        None => format!("configuration: {m}"),
    };
    match file {
        // Hosts read at most a bounded prefix of a file: the size is said as a bound.
        Some(src) if src.len() > limits::CONFIG_MAX_BYTES => {
            return Err(named(format!("larger than the {} bytes a configuration file may have", limits::CONFIG_MAX_BYTES)));
        }
        Some(src) => read_file(src, &mut raw).map_err(named)?,
        None if var(env, "TOOLPRUNE_CONFIG").is_some() => {
            return Err(named("no such file (named by TOOLPRUNE_CONFIG)".to_string()));
        }
        None => {}
    }
    if let Some(v) = var(env, "TOOLPRUNE_ENABLED") {
        raw.enabled = Some(flag("TOOLPRUNE_ENABLED", v)?);
    }
    if let Some(v) = var(env, "TOOLPRUNE_THRESHOLD") {
        raw.threshold = Some(threshold(v).map_err(|m| format!("TOOLPRUNE_THRESHOLD: {m}"))?);
    }
    for (name, slot) in [
        ("TOOLPRUNE_JEV_ROUTE", &mut raw.route),
        ("TOOLPRUNE_JEV_ACCOUNT_ID", &mut raw.account_id),
        ("TOOLPRUNE_JEV_BASE_URL", &mut raw.base_url),
        ("TOOLPRUNE_JEV_MODEL", &mut raw.model),
    ] {
        if let Some(v) = var(env, name) {
            *slot = Some(v.to_string());
        }
    }
    let route = match raw.route.as_deref().map(|r| r.trim().to_ascii_lowercase()) {
        None => Route::Cloudflare,
        Some(r) => Route::parse(&r).ok_or_else(|| format!("jev route {:?} is not one of cloudflare, typesafe, vercel", shorten(&r)))?,
    };
    Ok(Config {
        enabled: raw.enabled.unwrap_or(true),
        threshold: raw.threshold.unwrap_or(DEFAULT_THRESHOLD),
        lang_ja: raw.lang_ja.unwrap_or(false),
        jev: endpoint(route, raw.account_id.as_deref(), raw.base_url.as_deref(), raw.model.as_deref()),
        prunable: raw.prunable.unwrap_or_else(|| DEFAULT_PRUNABLE.iter().map(|s| s.to_string()).collect()),
        store: raw.store,
        proxy_basis: raw.proxy_basis.unwrap_or_else(|| "hook".to_string()),
    })
}

/// Which API serves Jev (SPEC §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Cloudflare Workers AI, the seeds' route and the default; the model comes from the URL.
    Cloudflare,
    /// TypeSafe's own API; the body names the model.
    TypeSafe,
    /// Vercel AI Gateway, TypeSafe-compatible; the body names the model.
    Vercel,
}

impl Route {
    fn parse(name: &str) -> Option<Route> {
        match name {
            "cloudflare" => Some(Route::Cloudflare),
            "typesafe" => Some(Route::TypeSafe),
            "vercel" => Some(Route::Vercel),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Route::Cloudflare => "cloudflare",
            Route::TypeSafe => "typesafe",
            Route::Vercel => "vercel",
        }
    }

    fn default_base(self) -> &'static str {
        match self {
            Route::Cloudflare => "https://api.cloudflare.com",
            Route::TypeSafe => "https://api.typesafe.ai",
            Route::Vercel => "https://ai-gateway.vercel.sh/typesafe",
        }
    }
}

fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if h == "localhost" || h == "::1" {
        return true;
    }
    let parts: Vec<&str> = h.split('.').collect();
    parts.len() == 4 && parts[0] == "127" && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok_and(|n| n <= 255))
}

/// The host of an `http(s)://[user@]host[:port]/…` URL's rest.
fn url_host(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    authority.split(':').next().unwrap_or(authority)
}

/// The endpoint of `route`, or what keeps it from being usable.
fn endpoint(route: Route, account_id: Option<&str>, base_url: Option<&str>, model: Option<&str>) -> Result<JevEndpoint, String> {
    let base = base_url.map(str::trim).filter(|b| !b.is_empty()).unwrap_or(route.default_base()).trim_end_matches('/');
    let shown = shorten(base);
    let (scheme, rest) = base.split_once("://").ok_or_else(|| format!("bad base URL: {shown:?} is not an http(s) URL"))?;
    let host = url_host(rest);
    if host.is_empty() {
        return Err(format!("bad base URL: {shown:?} has no host"));
    }
    let loopback = is_loopback_host(host);
    match scheme.to_ascii_lowercase().as_str() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err(format!("bad base URL: {shown:?}: plain http is allowed to a loopback host only (the token would travel in clear)")),
        _ => return Err(format!("bad base URL: {shown:?} is not an http(s) URL")),
    }
    if base.contains(['?', '#']) {
        return Err(format!("bad base URL: {shown:?} has a query or fragment"));
    }
    let (url, model) = match route {
        Route::Cloudflare => {
            let account = account_id.map(str::trim).filter(|a| !a.is_empty()).ok_or_else(|| {
                "no account id: the cloudflare route needs TOOLPRUNE_JEV_ACCOUNT_ID (or jev.account_id in the config file)".to_string()
            })?;
            if !account.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err("the account id may hold only letters, digits, '-' and '_'".to_string());
            }
            (format!("{base}/client/v4/accounts/{account}/ai/run/typesafe/jev"), None)
        }
        Route::TypeSafe | Route::Vercel => {
            let model = match model {
                Some(m) if m.trim().is_empty() => return Err("the model name is empty".to_string()),
                Some(m) => m.trim().to_string(),
                None => DEFAULT_MODEL.to_string(),
            };
            (format!("{base}/v1/systemone"), Some(model))
        }
    };
    Ok(JevEndpoint { route: route.name(), url, model, loopback })
}

/// `*` matches any run (also empty), `?` one character; case-sensitive.
fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The names one tool-name is checked under for [`never_prunable`]: the
/// whole name, then every tail after a `_` or `:` (leading `_`/`:` trimmed),
/// so `mcp__fetch__read_file` gives `fetch__read_file`, `read_file`, `file`;
/// `mcp_fetch_read_file` gives `fetch_read_file`, `read_file`, `file`;
/// Cursor's `MCP:read_file` gives `read_file`, `file`. A server's name is
/// never a tail on its own (it is followed by the tool's).
fn tails(lower: &str) -> impl Iterator<Item = &str> {
    std::iter::once(lower).chain(
        lower
            .char_indices()
            .filter(|&(_, c)| c == '_' || c == ':')
            .map(move |(i, _)| lower[i + 1..].trim_start_matches(['_', ':']))
            .filter(|t| !t.is_empty()),
    )
}

/// Whether `tool` is never prunable: a file reader, shell or editor, or
/// `omitted` itself, by its whole name or any of its `_`/`:`-separated tails
/// (compared case-insensitively): MCP tools are `mcp__server__tool` in
/// Claude Code and Codex, `mcp_server_tool` or `server__tool` in Gemini CLI,
/// `MCP:tool` in Cursor, and the server's name may hold `_` itself.
pub fn never_prunable(tool: &str) -> bool {
    let lower = tool.trim().to_ascii_lowercase();
    let never = tails(&lower).any(|n| n == OMITTED_TOOL || NEVER_PRUNABLE.contains(&n));
    never
}

/// Whether one tool's results may be pruned (SPEC §2, §15), given every
/// name a door knows for it (the bare name, `mcp__server__tool`,
/// `mcp_server_tool`, `server__tool`, `MCP:tool`, …): never when any name
/// is [`never_prunable`], whichever glob another name matches; else when
/// any name matches one of `globs` (`*`, `?`, case-sensitive). No names:
/// false.
pub fn is_tool_prunable<S: AsRef<str>>(names: &[S], globs: &[String]) -> bool {
    !names.iter().any(|n| never_prunable(n.as_ref()))
        && names.iter().any(|n| globs.iter().any(|g| glob(g.trim(), n.as_ref())))
}

/// [`is_tool_prunable`] for a tool known by one name only.
pub fn is_prunable(tool: &str, globs: &[String]) -> bool {
    is_tool_prunable(&[tool], globs)
}

/// What a host knows after a failed attempt (WIT `settings.retry-facts`).
#[derive(Clone, Debug, Default)]
pub struct RetryFacts<'a> {
    pub attempt: u32,
    pub status: Option<u16>,
    pub retry_after: Option<&'a str>,
    pub retry_after_ms: Option<&'a str>,
    pub now_unix_ms: u64,
    pub remaining_ms: u32,
}

/// SPEC §11: retry once on 429 and 5xx, never on 402 or another 4xx, nor
/// on a network error. The wait is the vendor's `retry-after-ms` header
/// (milliseconds), else `Retry-After` (seconds, or an HTTP-date against the
/// host's clock), else [`limits::RETRY_BACKOFF_MS`]; no retry when the wait
/// would reach the deadline.
pub fn retry_delay(f: &RetryFacts) -> Option<u32> {
    let status = f.status?;
    if f.attempt > limits::MAX_RETRIES || !crate::jev::RETRY_ON.iter().any(|&(lo, hi)| (lo..=hi).contains(&status)) {
        return None;
    }
    let from_ms = f.retry_after_ms.and_then(|v| {
        let v = v.trim();
        crate::number::parse(v).filter(|x| *x >= 0.0).map(|x| x.ceil().min(4e9) as u64)
    });
    let from_header = || {
        let v = f.retry_after?.trim();
        let digits = v.strip_prefix('+').unwrap_or(v);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            // Seconds (`5`, `+5`); a number past u64 means "not before the deadline".
            return Some(digits.parse::<u64>().unwrap_or(u64::MAX).saturating_mul(1000));
        }
        http_date_ms(v).map(|at| at.saturating_sub(f.now_unix_ms))
    };
    let wait = from_ms.or_else(from_header).unwrap_or(u64::from(limits::RETRY_BACKOFF_MS));
    (wait < u64::from(f.remaining_ms)).then_some(wait as u32)
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7) in ms
/// since the Unix epoch; other date forms are not read (then the backoff applies).
fn http_date_ms(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_ascii_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    let day: u64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m == month)? as u64 + 1;
    let year: i64 = year.parse().ok().filter(|y| (1970..=9999).contains(y))?;
    let hms: Vec<u64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, m, sec] = hms.as_slice() else { return None };
    if *h > 23 || *m > 59 || *sec > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days as u64 * 86_400 + h * 3600 + m * 60 + sec;
    Some(secs * 1000)
}

/// Resource limits for one call with a text of `text_bytes` bytes (WIT
/// `settings.call-limits`): a base plus a share per byte, so a large input
/// gets room in proportion and a looping guest is still stopped.
pub fn call_limits(text_bytes: u64) -> (u64, u32, u64) {
    let fuel = limits::FUEL_BASE.saturating_add(limits::FUEL_PER_BYTE.saturating_mul(text_bytes));
    let wall = u64::from(limits::WALL_MS_BASE).saturating_add(text_bytes / limits::WALL_BYTES_PER_MS);
    let memory = limits::MEMORY_BASE.saturating_add(limits::MEMORY_PER_BYTE.saturating_mul(text_bytes)).min(limits::MEMORY_MAX);
    (fuel, wall.min(u64::from(u32::MAX)) as u32, memory)
}

/// Which call failed, for [`failure_line`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Prune,
    Omitted,
    Judge,
}

/// The line a host writes when the guest gave no answer (SPEC §11, §12):
/// `tool prune: agent=A name=T outcome=failed reason=guest_trap limit=fuel`.
pub fn failure_line(op: Operation, agent: &str, tool: &str, reason: &str, limit: Option<&str>) -> String {
    let limit = limit.map(|l| format!(" limit={l}")).unwrap_or_default();
    match op {
        Operation::Prune => format!(
            "tool prune: agent={} name={} outcome=failed reason={reason}{limit}",
            crate::log::label(agent),
            crate::log::label(tool)
        ),
        Operation::Omitted => format!("tool omitted: agent={} outcome=failed reason={reason}{limit}", crate::log::label(agent)),
        Operation::Judge => format!("judge: rule=- failed reason={reason}{limit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_threshold_outside_the_four_values_is_refused_not_replaced() {
        assert_eq!(threshold("0.2"), Ok(0.2));
        assert_eq!(threshold(" 0.50 "), Ok(0.5));
        assert_eq!(threshold("0.1"), Ok(0.1));
        for bad in ["-1", "0.25", "NaN", "nan", "inf", "", "0.2.0", "1e-1", "0x1", "0,2"] {
            let e = threshold(bad).unwrap_err();
            assert!(e.contains("0.1 (Light)"), "{bad}: {e}");
        }
    }

    #[test]
    fn config_defaults_when_nothing_is_set() {
        let c = resolve(&[], None).unwrap();
        assert!(c.enabled);
        assert_eq!(c.threshold, 0.2);
        assert!(!c.lang_ja);
        assert_eq!(c.jev.unwrap_err(), "no account id: the cloudflare route needs TOOLPRUNE_JEV_ACCOUNT_ID (or jev.account_id in the config file)");
        assert_eq!(c.prunable, DEFAULT_PRUNABLE.map(String::from).to_vec());
        assert_eq!(c.store, StoreLimits::default());
        assert_eq!(c.proxy_basis, "hook");
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let file = "enabled = false\nthreshold = 0.3\n[jev]\nroute = \"typesafe\"\nmodel = \"jev-2\"\n";
        let c = resolve(&env(&[("TOOLPRUNE_ENABLED", "1"), ("TOOLPRUNE_JEV_MODEL", "jev-3")]), Some(file)).unwrap();
        assert!(c.enabled);
        assert_eq!(c.threshold, 0.3);
        let jev = c.jev.unwrap();
        assert_eq!(jev.url, "https://api.typesafe.ai/v1/systemone");
        assert_eq!(jev.model.as_deref(), Some("jev-3"));
        assert!(!jev.loopback);
    }

    #[test]
    fn routes_give_their_urls() {
        let cf = resolve(&env(&[("TOOLPRUNE_JEV_ACCOUNT_ID", "abc_1")]), None).unwrap().jev.unwrap();
        assert_eq!(cf.url, "https://api.cloudflare.com/client/v4/accounts/abc_1/ai/run/typesafe/jev");
        assert_eq!(cf.model, None);
        let v = resolve(&env(&[("TOOLPRUNE_JEV_ROUTE", "Vercel")]), None).unwrap().jev.unwrap();
        assert_eq!(v.url, "https://ai-gateway.vercel.sh/typesafe/v1/systemone");
        assert_eq!(v.model.as_deref(), Some(DEFAULT_MODEL));
        assert!(resolve(&env(&[("TOOLPRUNE_JEV_ROUTE", "azure")]), None).unwrap_err().contains("not one of cloudflare"));
    }

    #[test]
    fn plain_http_only_to_a_loopback_host() {
        let e = |b: &str| resolve(&env(&[("TOOLPRUNE_JEV_ROUTE", "typesafe"), ("TOOLPRUNE_JEV_BASE_URL", b)]), None).unwrap().jev;
        let ok = e("http://127.0.0.1:8080/gw/").unwrap();
        assert_eq!(ok.url, "http://127.0.0.1:8080/gw/v1/systemone");
        assert!(ok.loopback);
        assert!(e("http://[::1]:9/").unwrap().loopback);
        assert!(e("http://localhost/").unwrap().loopback);
        assert!(e("http://example.com/").unwrap_err().contains("loopback host only"));
        assert!(e("http://127.0.0.1.evil.com/").unwrap_err().contains("loopback host only"));
        assert!(e("http://127.255.0.9/").unwrap().loopback);
        for not_loopback in ["http://127.0.0/", "http://127..0.1/", "http://127.0.0.256/", "http://127.0.0.0001/", "http://127.0.0.+1/", "http://128.0.0.1/", "http://10.0.0.1/"] {
            assert!(e(not_loopback).unwrap_err().contains("loopback host only"), "{not_loopback}");
        }
        assert!(e("ftp://x/").unwrap_err().contains("not an http(s) URL"));
        assert!(e("https://x/?q").unwrap_err().contains("query"));
    }

    #[test]
    fn a_token_in_the_file_is_refused_and_never_echoed() {
        let e = resolve(&[], Some("[jev]\ntoken = \"sk-secret-value\"\n")).unwrap_err();
        assert!(e.contains("TOOLPRUNE_JEV_TOKEN"), "{e}");
        assert!(!e.contains("sk-secret"), "{e}");
    }

    #[test]
    fn file_errors_name_line_and_column_not_content() {
        let e = resolve(&[], Some("enabled = true\nthreshold = 0.25\n")).unwrap_err();
        assert!(e.starts_with("configuration: line 2, column 1:"), "{e}");
        let e = resolve(&env(&[("HOME", "/h")]), Some("threshold = 0.25\n")).unwrap_err();
        assert!(e.starts_with("configuration /h/.config/toolprune/config.toml: line 1, column 1:"), "{e}");
        let e = resolve(&[], Some("enabled = true\nsecret_words = \"x\"\n")).unwrap_err();
        assert!(e.contains("unknown key secret_words"), "{e}");
        // (Not the word `unclosed`: the parser's own message says "unclosed array".)
        let e = resolve(&[], Some("a = [\"sk-secret-value\n")).unwrap_err();
        assert!(e.starts_with("configuration: line "), "{e}");
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn a_missing_file_is_an_error_only_when_toolprune_config_names_it() {
        let e = resolve(&env(&[("HOME", "/h"), ("TOOLPRUNE_CONFIG", "/typo.toml")]), None).unwrap_err();
        assert_eq!(e, "configuration /typo.toml: no such file (named by TOOLPRUNE_CONFIG)");
        assert!(resolve(&env(&[("HOME", "/h")]), None).is_ok(), "the default file may be missing");
        assert!(resolve(&env(&[("TOOLPRUNE_CONFIG", " ")]), None).is_ok(), "an empty variable names nothing");
    }

    #[test]
    fn a_variables_error_names_the_variable_not_the_file() {
        let e = resolve(&env(&[("HOME", "/h"), ("TOOLPRUNE_THRESHOLD", "0.99")]), None).unwrap_err();
        assert!(e.starts_with("TOOLPRUNE_THRESHOLD: threshold \"0.99\""), "{e}");
        let e = resolve(&env(&[("TOOLPRUNE_ENABLED", "maybe")]), None).unwrap_err();
        assert_eq!(e, "TOOLPRUNE_ENABLED must be 1/true or 0/false");
        for (v, on) in [("1", true), ("TRUE", true), (" yes ", true), ("on", true), ("0", false), ("false", false), ("No", false), ("off", false)] {
            assert_eq!(resolve(&env(&[("TOOLPRUNE_ENABLED", v)]), Some("enabled = true\n")).unwrap().enabled, on, "{v}");
            assert_eq!(resolve(&env(&[("TOOLPRUNE_ENABLED", v)]), Some("enabled = false\n")).unwrap().enabled, on, "{v}");
        }
    }

    #[test]
    fn each_file_value_is_checked_by_its_kind() {
        let ok = |src: &str| resolve(&[], Some(src));
        assert!(!ok("enabled = false\n").unwrap().enabled);
        assert!(ok("enabled = \"yes\"\n").unwrap_err().contains("enabled must be true or false"));
        assert_eq!(ok("threshold = \"0.3\"\n").unwrap().threshold, 0.3);
        assert_eq!(ok("threshold = 0.5\n").unwrap().threshold, 0.5);
        assert!(ok("threshold = \"0.25\"\n").is_err() && ok("threshold = true\n").is_err());
        assert!(ok("lang = \"JA\"\n").unwrap().lang_ja);
        assert!(!ok("lang = \"En\"\n").unwrap().lang_ja);
        for bad in ["lang = \"fr\"\n", "lang = 1\n"] {
            assert!(ok(bad).unwrap_err().contains("lang must be"), "{bad}");
        }
        assert!(ok("prunable = [\"a\", \" \"]\n").unwrap_err().contains("prunable must be a list"));
        assert_eq!(ok("prunable = [\" a* \"]\n").unwrap().prunable, vec!["a*".to_string()]);
        for good in ["hook", "argument", "none"] {
            assert_eq!(ok(&format!("[proxy]\nbasis = \"{good}\"\n")).unwrap().proxy_basis, good);
        }
        assert!(ok("[proxy]\nbasis = \"model\"\n").unwrap_err().contains("proxy.basis must be"));
        for bad in ["0", "1.5", "-3", "1e16", "\"5\""] {
            assert!(ok(&format!("[store]\nmax_records = {bad}\n")).unwrap_err().contains("must be a whole number"), "{bad}");
        }
        assert_eq!(ok("[store]\nmax_records = 1\nmax_chars = 1e15\n").unwrap().store.max_chars, 1_000_000_000_000_000);
    }

    #[test]
    fn routes_are_named_by_their_own_names() {
        for (name, url_end) in [("cloudflare", "/ai/run/typesafe/jev"), ("typesafe", "/v1/systemone"), ("vercel", "/v1/systemone")] {
            let c = resolve(&env(&[("TOOLPRUNE_JEV_ROUTE", name), ("TOOLPRUNE_JEV_ACCOUNT_ID", "acc")]), None).unwrap();
            let jev = c.jev.unwrap();
            assert_eq!(jev.route, name);
            assert!(jev.url.ends_with(url_end), "{name}: {}", jev.url);
        }
        let e = resolve(&env(&[("TOOLPRUNE_JEV_ROUTE", "CloudFlare "), ("TOOLPRUNE_JEV_ACCOUNT_ID", "acc")]), None).unwrap();
        assert_eq!(e.jev.unwrap().route, "cloudflare");
        let c = resolve(&env(&[("TOOLPRUNE_JEV_ROUTE", "typesafe"), ("TOOLPRUNE_JEV_MODEL", " ")]), None).unwrap();
        assert_eq!(c.jev.unwrap().model.as_deref(), Some(DEFAULT_MODEL), "a blank variable is no variable");
        let c = resolve(&[], Some("[jev]\nroute = \"typesafe\"\nmodel = \" \"\n")).unwrap();
        assert_eq!(c.jev.unwrap_err(), "the model name is empty");
    }

    #[test]
    fn store_and_prunable_and_lang_come_from_the_file() {
        let c = resolve(&[], Some("lang = \"ja\"\nprunable = [\"mcp__docs__*\"]\n[store]\nmax_records = 10\nmax_chars = 1_000\nmax_age_hours = 2\n[proxy]\nbasis = \"argument\"\n")).unwrap();
        assert!(c.lang_ja);
        assert_eq!(c.prunable, vec!["mcp__docs__*".to_string()]);
        assert_eq!(c.store, StoreLimits { max_records: 10, max_chars: 1000, max_age_s: 7200 });
        assert_eq!(c.proxy_basis, "argument");
    }

    #[test]
    fn config_path_follows_the_variables_in_order() {
        assert_eq!(config_path(&env(&[("HOME", "/h"), ("TOOLPRUNE_CONFIG", "/c.toml")])), Some("/c.toml".into()));
        assert_eq!(config_path(&env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x/")])), Some("/x/toolprune/config.toml".into()));
        assert_eq!(config_path(&env(&[("HOME", "/h")])), Some("/h/.config/toolprune/config.toml".into()));
        assert_eq!(config_path(&[]), None);
    }

    #[test]
    fn globs_match_star_and_question_mark() {
        assert!(glob("mcp__fetch__*", "mcp__fetch__fetch"));
        assert!(glob("mcp__*__fetch", "mcp__docs__fetch"));
        assert!(glob("Web?etch", "WebFetch"));
        assert!(!glob("mcp__fetch__*", "mcp__docs__fetch"));
        assert!(glob("*", ""));
        assert!(!glob("a", "ab"));
        assert!(glob("a*b*c", "aXbYbZc") && !glob("a*b*c", "aXbYbZ"), "a star backtracks one character at a time");
        assert!(glob("*fetch", "fetchfetch") && glob("*?h", "fetch"));
    }

    #[test]
    fn readers_shells_editors_and_omitted_are_never_prunable() {
        let all = vec!["*".to_string()];
        for t in ["Read", "Bash", "Edit", "read_file", "run_shell_command", "mcp__filesystem__read_file", "omitted", "mcp__toolprune__omitted", "toolprune__omitted", "mcp_bash", "mcp_toolprune_omitted"] {
            assert!(!is_prunable(t, &all), "{t}");
        }
        let d: Vec<String> = DEFAULT_PRUNABLE.map(String::from).to_vec();
        for t in ["WebFetch", "web_fetch", "mcp__docs__fetch", "mcp__fetch__fetch", "fetch__fetch", "fetch", "mcp_docs_fetch", "mcp_fetch_fetch"] {
            assert!(is_prunable(t, &d), "{t}");
        }
        for t in ["mcp__github__search", "Grep", "mcp__docs__fetch_x", "mcp_github_search", "mcp_docs_fetch_x"] {
            assert!(!is_prunable(t, &d), "{t}");
        }
    }

    #[test]
    fn a_tool_never_prunable_under_any_of_its_names_is_never_prunable() {
        let d: Vec<String> = DEFAULT_PRUNABLE.map(String::from).to_vec();
        // Servers named with the globs' own words: `mcp__fetch__*`, `mcp_fetch_*` match every tool of theirs.
        for server in ["fetch", "web", "search", "web_fetch", "fetch__x"] {
            for tool in ["read_file", "Read", "bash", "run_shell_command", "edit_file", "omitted", "read_text_file", "list_directory"] {
                let names = [
                    tool.to_string(),
                    format!("mcp__{server}__{tool}"),
                    format!("mcp_{server}_{tool}"),
                    format!("{server}__{tool}"),
                    format!("MCP:{tool}"),
                ];
                assert!(!is_tool_prunable(&names, &d), "{names:?}");
                assert!(!is_tool_prunable(&names, &["*".to_string()]), "{names:?}");
                // Each agent's name alone, too (Claude Code / Codex, Gemini CLI, Cursor).
                for one in &names {
                    assert!(!is_prunable(one, &["*".to_string()]), "{one}");
                }
            }
            // The server's fetch stays prunable under every form.
            let fetch = ["fetch".to_string(), format!("mcp__{server}__fetch"), format!("mcp_{server}_fetch"), format!("{server}__fetch")];
            assert!(is_tool_prunable(&fetch, &d), "{fetch:?}");
        }
        // A glob matched by another name does not make a never-prunable name prunable.
        assert!(!is_tool_prunable(&["read_file", "mcp_fetch_read_file"], &["mcp_fetch_*".to_string()]));
        // Any name may match: the bare name of a `fetch` server's `fetch_markdown`.
        assert!(is_tool_prunable(&["fetch_markdown", "mcp__fetch__fetch_markdown"], &d));
        assert!(!is_tool_prunable(&["fetch_markdown"], &d));
        assert!(!is_tool_prunable::<&str>(&[], &["*".to_string()]));
        // A server's name alone is no tail: `mcp__grep__fetch`, `mcp_bash_fetch` are fetches.
        assert!(is_tool_prunable(&["mcp__grep__fetch", "mcp_bash_fetch"], &d));
    }

    #[test]
    fn retries_once_on_429_and_5xx_only() {
        let f = |attempt, status| retry_delay(&RetryFacts { attempt, status, remaining_ms: 20_000, ..Default::default() });
        assert_eq!(f(1, Some(429)), Some(250));
        assert_eq!(f(1, Some(503)), Some(250));
        assert_eq!(f(2, Some(503)), None);
        for s in [400, 401, 402, 404, 408, 422] {
            assert_eq!(f(1, Some(s)), None, "{s}");
        }
        assert_eq!(f(1, None), None);
    }

    #[test]
    fn retry_waits_follow_the_headers_and_the_deadline() {
        let base = RetryFacts { attempt: 1, status: Some(429), remaining_ms: 20_000, now_unix_ms: 784_111_777_000, ..Default::default() };
        assert_eq!(retry_delay(&RetryFacts { retry_after: Some("2"), ..base.clone() }), Some(2000));
        assert_eq!(retry_delay(&RetryFacts { retry_after: Some("+2"), ..base.clone() }), Some(2000));
        assert_eq!(retry_delay(&RetryFacts { retry_after_ms: Some("1500.2"), retry_after: Some("9"), ..base.clone() }), Some(1501));
        assert_eq!(retry_delay(&RetryFacts { retry_after: Some("Sun, 06 Nov 1994 08:49:40 GMT"), ..base.clone() }), Some(3000));
        assert_eq!(retry_delay(&RetryFacts { retry_after: Some("soon"), ..base.clone() }), Some(250));
        assert_eq!(retry_delay(&RetryFacts { retry_after: Some("30"), ..base.clone() }), None);
        assert_eq!(retry_delay(&RetryFacts { retry_after: Some("18446744073709551616"), ..base.clone() }), None);
        assert_eq!(retry_delay(&RetryFacts { remaining_ms: 250, ..base }), None);
    }

    #[test]
    fn http_dates_are_read_as_imf_fixdate() {
        assert_eq!(http_date_ms("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777_000));
        assert_eq!(http_date_ms("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date_ms("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(http_date_ms("Fri, 31 Dec 1999 23:59:60 GMT"), Some(946_684_800_000), "a leap second is read");
        for bad in ["Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC"] {
            assert_eq!(http_date_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_config_file_over_one_mebibyte_is_refused_at_once_in_one_line() {
        let big = format!("enabled = true\n# {}\n", "x".repeat(limits::CONFIG_MAX_BYTES));
        let err = resolve(&env(&[("TOOLPRUNE_CONFIG", "/c.toml")]), Some(&big)).unwrap_err();
        assert_eq!(err, "configuration /c.toml: larger than the 1048576 bytes a configuration file may have");
        let fits = format!("enabled = true\n#{}\n", "x".repeat(limits::CONFIG_MAX_BYTES - 17));
        assert_eq!(fits.len(), limits::CONFIG_MAX_BYTES);
        assert!(resolve(&env(&[]), Some(&fits)).is_ok());
    }

    #[test]
    fn a_config_of_twenty_thousand_keys_is_read_at_once_and_in_linear_time() {
        // Issue 27 §7: the hand-written reader was quadratic (10,000 keys: 0.6 s
        // in the component; 20,000: out of fuel, a multi-line trap).
        let n = 20_000;
        let keys: String = (0..n).map(|i| format!("k{i} = true\n")).collect();
        let e = resolve(&env(&[("TOOLPRUNE_CONFIG", "/c.toml")]), Some(&keys)).unwrap_err();
        assert_eq!(e, format!("configuration /c.toml: line 1, column 1: unknown key k0 (known: {FILE_KEYS})"));
        // The same number of values in keys that exist: resolved.
        let globs: Vec<String> = (0..n).map(|i| format!("\"mcp__s{i}__*\"")).collect();
        let src = format!("enabled = true\nprunable = [\n{}\n]\n[store]\nmax_records = 10\n", globs.join(",\n"));
        let c = resolve(&[], Some(&src)).unwrap();
        assert_eq!(c.prunable.len(), n);
        assert_eq!(c.store.max_records, 10);
        // A key written twice among them: one line, naming the key.
        let twice = format!("{keys}k7 = false\n");
        assert_eq!(resolve(&[], Some(&twice)).unwrap_err(), format!("configuration: line {}, column 1: the key `k7` is defined twice", n + 1));
        // The largest file read (just under 1 MiB, 75,000 keys). Unoptimized,
        // natively, on a busy machine: 1.2 s; the hand-written reader took
        // 19.5 s for 40,000 keys.
        let keys: String = (0..75_000).map(|i| format!("k{i} = true\n")).collect();
        assert!(keys.len() <= limits::CONFIG_MAX_BYTES);
        let t0 = std::time::Instant::now();
        assert!(resolve(&[], Some(&keys)).unwrap_err().contains("unknown key k0"));
        assert!(t0.elapsed().as_secs() < 10, "{:?}", t0.elapsed());
    }

    #[test]
    fn only_decimal_numbers_are_read_from_the_file() {
        let e = |src: &str| resolve(&[], Some(src)).unwrap_err();
        for (src, at) in [("[store]\nmax_records = 0x10\n", "line 2, column 15"), ("threshold = inf\n", "line 1, column 13"), ("enabled = true\nx = 1979-05-27\n", "line 2, column 5"), ("[store]\nmax_chars = 0b1\n", "line 2, column 13")] {
            let text = src.rsplit(" = ").next().unwrap().trim();
            assert_eq!(e(src), format!("configuration: {at}: `{text}` is not a decimal number (write 0.2 or 256; dates, times, hex and inf are not read)"), "{src}");
        }
        let ok = |src: &str| resolve(&[], Some(src)).unwrap();
        assert_eq!(ok("[store]\nmax_chars = 1_000\nmax_records = +7\nmax_age_hours = 2e0\n").store, StoreLimits { max_records: 7, max_chars: 1000, max_age_s: 7200 });
        assert_eq!(ok("threshold = 0.30\n").threshold, 0.3);
        assert!(e("threshold = 1\n").contains("threshold must be 0.1, 0.2, 0.3 or 0.5"));
    }

    #[test]
    fn syntax_errors_are_one_line_with_line_and_column() {
        for (src, expected) in [
            ("enabled = yes\n", "configuration: line 1, column 11: expected a value: a \"string\" (text needs quotes), true or false, [an array] or {an inline table}"),
            ("[jev]\nroute = \"typesafe\"\n[jev]\n", "configuration: line 3, column 2: the key `jev` is defined twice"),
            ("lang = \"en\" \"ja\"\n", "configuration: line 1, column 13: unexpected key or value, expected newline, `#`"),
            (&format!("prunable = {}\n", "[".repeat(200)), "configuration: line 1, column 92: cannot recurse further; max recursion depth met"),
        ] {
            let e = resolve(&[], Some(src)).unwrap_err();
            assert_eq!(e, expected, "{src:?}");
        }
    }

    #[test]
    fn call_limits_grow_with_the_input() {
        let (f0, w0, m0) = call_limits(0);
        let (f1, w1, m1) = call_limits(18_000_000);
        assert!(f1 > f0 && w1 > w0 && m1 >= m0);
        assert!(m1 <= limits::MEMORY_MAX);
        // base + per byte, exactly (docs/reliability.md "Limits and their defaults").
        assert_eq!(call_limits(0), (limits::FUEL_BASE, limits::WALL_MS_BASE, limits::MEMORY_BASE));
        assert_eq!(
            call_limits(1_000_000),
            (limits::FUEL_BASE + 1_000_000 * limits::FUEL_PER_BYTE, limits::WALL_MS_BASE + 10_000, limits::MEMORY_BASE + 16_000_000)
        );
        assert_eq!(call_limits(u64::MAX).2, limits::MEMORY_MAX);
    }

    #[test]
    fn failure_lines_sanitise_labels() {
        assert_eq!(
            failure_line(Operation::Prune, "my agent", "a=b\nc", "guest_trap", Some("fuel")),
            "tool prune: agent=my_agent name=a_b_c outcome=failed reason=guest_trap limit=fuel"
        );
        assert_eq!(failure_line(Operation::Omitted, "", "", "guest_trap", None), "tool omitted: agent=- outcome=failed reason=guest_trap");
        assert_eq!(failure_line(Operation::Prune, "hook", "mcp__docs__fetch", "store", None), "tool prune: agent=hook name=mcp__docs__fetch outcome=failed reason=store");
    }
}
