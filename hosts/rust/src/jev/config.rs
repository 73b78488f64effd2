//! Where Jev requests go and with which secret: routes (SPEC §5), the
//! environment variables, and the config file for the non-secret settings.
//!
//! Precedence: command-line flags (the CLI's `--threshold`, `--scorer`) >
//! environment variables > the config file > defaults. The token comes from
//! the environment only: it is never read from or written to the file, never
//! logged or printed ([`Token`]'s `Debug` is redacted, it has no `Display`),
//! and never passed into the guest (the WIT has no place for it).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::log::LogSink;

/// The environment variables read by [`Settings::load`], in the order the
/// README documents them.
pub const ENV_VARS: [&str; 6] = [
    "TOOLPRUNE_JEV_ROUTE",
    "TOOLPRUNE_JEV_ACCOUNT_ID",
    "TOOLPRUNE_JEV_TOKEN",
    "TOOLPRUNE_JEV_BASE_URL",
    "TOOLPRUNE_JEV_MODEL",
    "TOOLPRUNE_CONFIG",
];

/// The model pinned on the native and Vercel routes unless configured.
pub const DEFAULT_MODEL: &str = "jev-1.13.0";

/// Which API serves Jev (SPEC §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Route {
    /// Cloudflare Workers AI: `POST {base}/client/v4/accounts/{account_id}/ai/run/typesafe/jev`,
    /// base `https://api.cloudflare.com`. The model comes from the URL (no
    /// `model` in the body). The seeds' route, and the default.
    #[default]
    Cloudflare,
    /// TypeSafe's own API: `POST {base}/v1/systemone`, base
    /// `https://api.typesafe.ai`; the body names the model (pinned).
    TypeSafe,
    /// Vercel AI Gateway, TypeSafe-compatible: `POST {base}/v1/systemone`,
    /// base `https://ai-gateway.vercel.sh/typesafe`; the body names the model.
    Vercel,
}

impl Route {
    /// `cloudflare`, `typesafe` or `vercel` (as in `TOOLPRUNE_JEV_ROUTE`).
    pub fn name(self) -> &'static str {
        match self {
            Route::Cloudflare => "cloudflare",
            Route::TypeSafe => "typesafe",
            Route::Vercel => "vercel",
        }
    }

    /// Parses a route name (case-insensitive, surrounding spaces ignored).
    pub fn parse(name: &str) -> Option<Route> {
        match name.trim().to_ascii_lowercase().as_str() {
            "cloudflare" => Some(Route::Cloudflare),
            "typesafe" => Some(Route::TypeSafe),
            "vercel" => Some(Route::Vercel),
            _ => None,
        }
    }

    /// The base URL used when none is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Route::Cloudflare => "https://api.cloudflare.com",
            Route::TypeSafe => "https://api.typesafe.ai",
            Route::Vercel => "https://ai-gateway.vercel.sh/typesafe",
        }
    }

    /// Whether the request body names the model (native API and gateways
    /// compatible with it; Cloudflare takes it from the URL).
    pub fn names_model(self) -> bool {
        !matches!(self, Route::Cloudflare)
    }
}

/// The API token. Its `Debug` is redacted and it has no `Display`: the only
/// way out is the `Authorization` header the scorer builds.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token; surrounding whitespace (a pasted newline) is dropped.
    pub fn new(secret: impl Into<String>) -> Self {
        Token(secret.into().trim().to_string())
    }

    /// `Bearer <token>`: the value of the `Authorization` header.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }

    fn is_header_safe(&self) -> bool {
        !self.0.is_empty() && self.0.bytes().all(|b| (0x21..=0x7e).contains(&b))
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Everything needed to reach Jev. `Debug` never shows the token.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JevConfig {
    pub route: Route,
    /// Cloudflare account id (the Cloudflare route only).
    pub account_id: Option<String>,
    /// The API token (Cloudflare API token, TypeSafe key, Vercel gateway key).
    pub token: Option<Token>,
    /// Overrides the route's base URL (tests, proxies, other gateways):
    /// `https://…`, or `http://` to a loopback host only.
    pub base_url: Option<String>,
    /// The model named in the body on the TypeSafe and Vercel routes
    /// (default [`DEFAULT_MODEL`]); ignored on Cloudflare.
    pub model: Option<String>,
}

/// Why a [`JevConfig`] cannot send a request. `Display` says what to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JevProblem {
    NoToken,
    /// The token has characters an HTTP header cannot carry.
    BadToken,
    /// Cloudflare route without an account id.
    NoAccountId,
    BadAccountId,
    BadBaseUrl(String),
    BadModel,
}

impl fmt::Display for JevProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JevProblem::NoToken => f.write_str(
                "no token: set TOOLPRUNE_JEV_TOKEN (a Cloudflare API token with Workers AI access, or a TypeSafe / Vercel gateway key)",
            ),
            JevProblem::BadToken => f.write_str(
                "TOOLPRUNE_JEV_TOKEN has spaces or characters an HTTP header cannot carry",
            ),
            JevProblem::NoAccountId => f.write_str(
                "no account id: the cloudflare route needs TOOLPRUNE_JEV_ACCOUNT_ID (or account_id in the config file)",
            ),
            JevProblem::BadAccountId => f.write_str(
                "the account id may hold only letters, digits, '-' and '_'",
            ),
            JevProblem::BadBaseUrl(why) => write!(f, "bad base URL: {why}"),
            JevProblem::BadModel => f.write_str("the model name is empty"),
        }
    }
}

impl std::error::Error for JevProblem {}

fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

/// The host part of an `http(s)://host[:port]/…` URL.
fn url_host(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(end) = authority.strip_prefix('[').and_then(|a| a.find(']')) {
        return &authority[..end + 2];
    }
    authority.split(':').next().unwrap_or(authority)
}

impl JevConfig {
    /// The first thing that keeps this configuration from sending, if any.
    pub fn problem(&self) -> Option<JevProblem> {
        match &self.token {
            None => return Some(JevProblem::NoToken),
            Some(token) if !token.is_header_safe() => {
                return Some(if token.0.is_empty() { JevProblem::NoToken } else { JevProblem::BadToken })
            }
            Some(_) => {}
        }
        self.url().err()
    }

    /// Credentials are complete (a token, and an account id on Cloudflare):
    /// the CLI then scores with Jev unless told otherwise.
    pub fn has_credentials(&self) -> bool {
        self.problem().is_none()
    }

    /// The base URL in effect (configured, or the route's), without a
    /// trailing `/`.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.route.default_base_url())
            .trim_end_matches('/')
    }

    /// The URL every batch is POSTed to. Carries no secret.
    pub fn url(&self) -> Result<String, JevProblem> {
        let base = self.base_url();
        let (scheme, rest) = base
            .split_once("://")
            .ok_or_else(|| JevProblem::BadBaseUrl(format!("{base:?} is not an http(s) URL")))?;
        let host = url_host(rest);
        if host.is_empty() {
            return Err(JevProblem::BadBaseUrl(format!("{base:?} has no host")));
        }
        match scheme.to_ascii_lowercase().as_str() {
            "https" => {}
            "http" if is_loopback_host(host) => {}
            "http" => {
                return Err(JevProblem::BadBaseUrl(format!(
                    "{base:?}: plain http is allowed to a loopback host only (the token would travel in clear)"
                )))
            }
            _ => return Err(JevProblem::BadBaseUrl(format!("{base:?} is not an http(s) URL"))),
        }
        if base.contains(['?', '#']) {
            return Err(JevProblem::BadBaseUrl(format!("{base:?} has a query or fragment")));
        }
        match self.route {
            Route::Cloudflare => {
                let account = self
                    .account_id
                    .as_deref()
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .ok_or(JevProblem::NoAccountId)?;
                if !account
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                {
                    return Err(JevProblem::BadAccountId);
                }
                Ok(format!("{base}/client/v4/accounts/{account}/ai/run/typesafe/jev"))
            }
            Route::TypeSafe | Route::Vercel => {
                if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                    return Err(JevProblem::BadModel);
                }
                Ok(format!("{base}/v1/systemone"))
            }
        }
    }

    /// Whether the URL goes to a loopback host (then no proxy is used).
    pub(crate) fn is_loopback(&self) -> bool {
        self.base_url()
            .split_once("://")
            .is_some_and(|(_, rest)| is_loopback_host(url_host(rest)))
    }

    /// What the guest is told to put in the body's `model`
    /// (`TurnOptions::jev_model`): the pinned model on the TypeSafe and Vercel
    /// routes, none on Cloudflare.
    pub fn jev_model(&self) -> Option<String> {
        self.route.names_model().then(|| {
            self.model
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .unwrap_or(DEFAULT_MODEL)
                .to_string()
        })
    }
}

/// The config file's keys (TOML). Unknown keys are an error, so a typo
/// never passes silently.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    enabled: Option<bool>,
    threshold: Option<f64>,
    jev: Option<FileJev>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJev {
    route: Option<String>,
    account_id: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    /// Present only to refuse it with a clear message.
    token: Option<serde::de::IgnoredAny>,
}

/// Settings from the config file and the environment (environment wins).
///
/// The file is TOML, at `$TOOLPRUNE_CONFIG`, else
/// `$XDG_CONFIG_HOME/toolprune/config.toml`, else
/// `$HOME/.config/toolprune/config.toml`:
///
/// ```toml
/// enabled = true          # pruning on (SPEC §2: off unless turned on)
/// threshold = 0.2         # 0.1 / 0.2 / 0.3 / 0.5
/// [jev]
/// route = "cloudflare"    # cloudflare | typesafe | vercel
/// account_id = "0123abcd…"
/// model = "jev-1.13.0"    # typesafe / vercel routes
/// # base_url = "https://…"
/// # no token here: TOOLPRUNE_JEV_TOKEN only
/// ```
///
/// A missing default file is no error. A file that cannot be read or parsed
/// (or a `TOOLPRUNE_CONFIG` that names a missing file, or a bad route name)
/// turns pruning **off** ([`broken`](Self::broken)) and [`load`](Self::load)
/// says so on the log sink — never silently.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `enabled` from the file, if it says.
    pub enabled: Option<bool>,
    /// `threshold` from the file, if it says.
    pub threshold: Option<f64>,
    pub jev: JevConfig,
    /// The file that was read, if any.
    pub file: Option<PathBuf>,
    /// Why the configuration could not be read: pruning is then off.
    pub broken: Option<String>,
}

impl Settings {
    /// Reads the process environment and the config file; writes one line to
    /// `log` when the configuration is broken (then pruning is off).
    pub fn load(log: &dyn LogSink) -> Settings {
        let settings = Self::from_sources(|name| std::env::var(name).ok());
        if let Some(why) = &settings.broken {
            log.line(&format!("toolprune: config: {why}; pruning is off"));
        }
        settings
    }

    /// The same, from any variable lookup (for tests; nothing is logged).
    pub fn from_sources(env: impl Fn(&str) -> Option<String>) -> Settings {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let mut settings = Settings::default();
        let path = match var("TOOLPRUNE_CONFIG") {
            Some(path) => Some((PathBuf::from(path), true)),
            None => var("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|home| Path::new(&home).join(".config")))
                .map(|dir| (dir.join("toolprune").join("config.toml"), false)),
        };
        let file = match path {
            Some((path, named)) => match read_file(&path, named) {
                Ok(Some(file)) => {
                    settings.file = Some(path);
                    file
                }
                Ok(None) => FileConfig::default(),
                Err(why) => {
                    settings.broken = Some(why);
                    FileConfig::default()
                }
            },
            None => FileConfig::default(),
        };
        settings.enabled = file.enabled;
        settings.threshold = file.threshold;
        let fj = file.jev.unwrap_or_default();
        if fj.token.is_some() {
            settings.broken.get_or_insert_with(|| {
                "the config file has a `token`: it is never read from a file; set TOOLPRUNE_JEV_TOKEN instead and remove it".to_string()
            });
        }
        let route = var("TOOLPRUNE_JEV_ROUTE").map(|r| (r, "TOOLPRUNE_JEV_ROUTE")).or(fj.route.map(|r| (r, "route in the config file")));
        if let Some((name, from)) = route {
            match Route::parse(&name) {
                Some(route) => settings.jev.route = route,
                None => {
                    settings.broken.get_or_insert_with(|| {
                        format!("{from} is {name:?}; expected cloudflare, typesafe or vercel")
                    });
                }
            }
        }
        settings.jev.account_id = var("TOOLPRUNE_JEV_ACCOUNT_ID").or(fj.account_id).map(|a| a.trim().to_string());
        settings.jev.base_url = var("TOOLPRUNE_JEV_BASE_URL").or(fj.base_url).map(|b| b.trim().to_string());
        settings.jev.model = var("TOOLPRUNE_JEV_MODEL").or(fj.model).map(|m| m.trim().to_string());
        settings.jev.token = var("TOOLPRUNE_JEV_TOKEN").map(Token::new);
        settings
    }

    /// Whether to prune, given the host's default when the file does not say.
    /// Always false when the configuration is [`broken`](Self::broken).
    pub fn enabled_or(&self, default: bool) -> bool {
        self.broken.is_none() && self.enabled.unwrap_or(default)
    }
}

/// The parsed file; `Ok(None)` when an unnamed default file does not exist.
/// Messages name the file and the line, never its content (a pasted secret
/// must not reach stderr).
fn read_file(path: &Path, named: bool) -> Result<Option<FileConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {}", path.display(), io_reason(&e))),
    };
    toml::from_str::<FileConfig>(&text).map(Some).map_err(|e| {
        let line = e
            .span()
            .map(|span| format!(" line {}", text[..span.start.min(text.len())].matches('\n').count() + 1))
            .unwrap_or_default();
        format!("cannot parse {}{line}: {}", path.display(), e.message().trim())
    })
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::InvalidData => "not UTF-8".to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Settings {
        let vars: HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_sources(move |name| vars.get(name).cloned())
    }

    fn temp_file(name: &str, content: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolprune-config-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, content).unwrap();
        path
    }

    #[test]
    fn routes_build_the_documented_urls() {
        let mut c = JevConfig { account_id: Some("abc123".into()), ..JevConfig::default() };
        assert_eq!(
            c.url().unwrap(),
            "https://api.cloudflare.com/client/v4/accounts/abc123/ai/run/typesafe/jev"
        );
        assert_eq!(c.jev_model(), None, "Cloudflare takes the model from the URL");
        c.route = Route::TypeSafe;
        assert_eq!(c.url().unwrap(), "https://api.typesafe.ai/v1/systemone");
        assert_eq!(c.jev_model().as_deref(), Some("jev-1.13.0"));
        c.route = Route::Vercel;
        assert_eq!(c.url().unwrap(), "https://ai-gateway.vercel.sh/typesafe/v1/systemone");
        c.base_url = Some("http://127.0.0.1:8080/gw/".into());
        assert_eq!(c.url().unwrap(), "http://127.0.0.1:8080/gw/v1/systemone");
        c.model = Some("jev-2".into());
        assert_eq!(c.jev_model().as_deref(), Some("jev-2"));
    }

    #[test]
    fn plain_http_only_to_loopback_and_account_ids_stay_in_their_segment() {
        let mut c = JevConfig { route: Route::TypeSafe, ..JevConfig::default() };
        c.base_url = Some("http://example.com".into());
        assert!(matches!(c.url(), Err(JevProblem::BadBaseUrl(_))));
        c.base_url = Some("http://localhost:9".into());
        assert!(c.url().is_ok());
        c.base_url = Some("http://[::1]:9".into());
        assert!(c.url().is_ok());
        c.base_url = Some("http://127.0.0.1.evil.example".into());
        assert!(c.url().is_err());
        let c = JevConfig { account_id: Some("../x".into()), ..JevConfig::default() };
        assert_eq!(c.url(), Err(JevProblem::BadAccountId));
    }

    #[test]
    fn problems_name_what_is_missing() {
        let mut c = JevConfig::default();
        assert_eq!(c.problem(), Some(JevProblem::NoToken));
        c.token = Some(Token::new("secret"));
        assert_eq!(c.problem(), Some(JevProblem::NoAccountId));
        c.account_id = Some("acc".into());
        assert_eq!(c.problem(), None);
        c.token = Some(Token::new("has space"));
        assert_eq!(c.problem(), Some(JevProblem::BadToken));
        c.token = Some(Token::new("  \n"));
        assert_eq!(c.problem(), Some(JevProblem::NoToken));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let c = JevConfig { token: Some(Token::new("sk-very-secret")), ..JevConfig::default() };
        let shown = format!("{c:?} {:?}", settings(&[("TOOLPRUNE_JEV_TOKEN", "sk-very-secret")]));
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn environment_overrides_the_config_file() {
        let path = temp_file(
            "precedence",
            "enabled = true\nthreshold = 0.3\n[jev]\nroute = \"cloudflare\"\naccount_id = \"file-acc\"\nmodel = \"jev-file\"\n",
        );
        let s = settings(&[
            ("TOOLPRUNE_CONFIG", path.to_str().unwrap()),
            ("TOOLPRUNE_JEV_ROUTE", "TypeSafe"),
            ("TOOLPRUNE_JEV_MODEL", "jev-env"),
            ("TOOLPRUNE_JEV_TOKEN", "tok\n"),
        ]);
        assert_eq!(s.broken, None);
        assert_eq!(s.file.as_deref(), Some(path.as_path()));
        assert_eq!((s.enabled, s.threshold), (Some(true), Some(0.3)));
        assert_eq!(s.jev.route, Route::TypeSafe);
        assert_eq!(s.jev.account_id.as_deref(), Some("file-acc"));
        assert_eq!(s.jev.jev_model().as_deref(), Some("jev-env"));
        assert_eq!(s.jev.token, Some(Token::new("tok")));
        assert!(s.enabled_or(false));
    }

    #[test]
    fn the_default_file_lives_under_xdg_config_home_and_may_be_absent() {
        let path = temp_file("xdg", "enabled = false\n");
        let xdg = path.parent().unwrap().parent().unwrap().to_path_buf();
        std::fs::create_dir_all(xdg.join("toolprune")).unwrap();
        std::fs::copy(&path, xdg.join("toolprune/config.toml")).unwrap();
        let s = settings(&[("XDG_CONFIG_HOME", xdg.to_str().unwrap())]);
        assert_eq!((s.enabled, s.broken.as_deref()), (Some(false), None));
        assert!(!s.enabled_or(true));
        let s = settings(&[("XDG_CONFIG_HOME", "/nonexistent/toolprune-test")]);
        assert_eq!((s.enabled, s.broken.as_deref(), s.file.as_deref()), (None, None, None));
        assert!(s.enabled_or(true));
    }

    #[test]
    fn an_unreadable_or_unparsable_file_turns_pruning_off_and_says_why() {
        let path = temp_file("bad", "enabled = true\n[jev]\nrute = \"typesafe\"\n");
        let s = settings(&[("TOOLPRUNE_CONFIG", path.to_str().unwrap())]);
        let why = s.broken.clone().expect("broken");
        assert!(why.contains("line 3") && why.contains("rute"), "{why}");
        assert!(!s.enabled_or(true));

        let s = settings(&[("TOOLPRUNE_CONFIG", "/nonexistent/toolprune.toml")]);
        assert!(s.broken.as_deref().unwrap().contains("no such file"));
        assert!(!s.enabled_or(true));

        let s = settings(&[("TOOLPRUNE_JEV_ROUTE", "openai"), ("HOME", "/nonexistent")]);
        assert!(s.broken.as_deref().unwrap().contains("TOOLPRUNE_JEV_ROUTE"));
    }

    #[test]
    fn a_token_in_the_file_is_refused_and_never_echoed() {
        let path = temp_file("token", "[jev]\ntoken = \"sk-in-file\"\n");
        let s = settings(&[("TOOLPRUNE_CONFIG", path.to_str().unwrap())]);
        let why = s.broken.clone().expect("refused");
        assert!(why.contains("TOOLPRUNE_JEV_TOKEN") && !why.contains("sk-in-file"), "{why}");
        assert_eq!(s.jev.token, None);
        let path = temp_file("token-top", "token = \"sk-top-level\"\n");
        let s = settings(&[("TOOLPRUNE_CONFIG", path.to_str().unwrap())]);
        let why = s.broken.clone().expect("unknown key");
        assert!(!why.contains("sk-top-level"), "{why}");
    }
}
