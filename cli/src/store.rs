//! The session store of the agent hooks, the `omitted` MCP server and the
//! MCP proxy (SPEC §10, §15): one conversation's request, id counter and
//! pruned results on disk, shared by every process of that conversation.
//!
//! ```text
//! <root>/                      0700, owned by the user (else refused)
//!   key                        0600, 32 random bytes: the MAC key of session tokens
//!   toolprune.log[.1…]         the log of every door, counts only (the logfile module: rotated, 0600)
//!   .swept                     when the age sweep last ran
//!   <agent>-<hash>/            0700, one per conversation; hash = sha256(agent \0 session id)[..32 hex]
//!     lock                     exclusive lock of writers, shared lock of readers
//!     state.json               {"count": N, "records": [[n, chars], …], "calls": {"n": key, …}} — the counter and the index
//!                              (`calls`: the repeat gate's call keys of the held records, digests, never arguments)
//!     request.json             {"request": "<the turn's prompt>", "at": <unix s>}
//!     P<n>.json                the guest's stored-result (id, shape, units, chars, dropped)
//!     P<n>.body                the pruned body, where an agent needs it again (Gemini's tail call)
//! ```
//!
//! - **Root**: `$TOOLPRUNE_STORE_DIR`, else `$XDG_RUNTIME_DIR/toolprune`
//!   (a per-user tmpfs), else `$XDG_CACHE_HOME/toolprune/sessions`, else
//!   `$HOME/.cache/toolprune/sessions` ([`Root::from_env`]).
//! - **Atomic**: every file is written to a temporary file (0600) in the same
//!   directory and renamed into place; writers hold the session's lock
//!   (`flock`, waiting at most [`LOCK_WAIT`]), so concurrent hook processes
//!   of one session never lose or duplicate an id.
//! - **Counter**: results ever stored in the conversation: never reset per
//!   turn, never lowered by eviction or by [`Session::end`] (a tombstone), so
//!   an id names one text for the conversation's whole life.
//! - **Bounds**: after each push the oldest records are evicted until the
//!   [`Bounds`] hold (the configuration's `[store]`); [`Root::sweep`]
//!   deletes sessions untouched for `max_age`.
//! - **Isolation**: a session directory is reached either from the agent's
//!   session id (hooks) or from a [`Root::token`] — `<dir name>.<HMAC>` keyed
//!   by the root's `key` — that only toolprune's own hook hands to the
//!   `omitted` MCP server ([`Root::session_for_token`]). A token of another
//!   root, a forged or altered one opens nothing.
//!
//! Errors are [`StoreError`]s: callers fail open (no pruning, `omitted`
//! unavailable). Nothing here logs or prints.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toolprune::store::evict_oldest;
use toolprune::types::StoredResult;
use toolprune::{ResultStore, StoreError};

/// How long a writer (or reader) waits for a session's lock before giving up
/// (the caller then fails open).
pub const LOCK_WAIT: Duration = Duration::from_secs(3);

/// The age sweep runs at most this often (a `.swept` stamp in the root).
pub const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// Bounds of one session's records (the configuration's `[store]`, from the
/// guest's `settings.resolve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Records at most; the oldest are evicted first.
    pub max_records: u32,
    /// Characters of dropped text (the records' `chars`) at most.
    pub max_chars: u64,
}

impl From<&toolprune::types::StoreLimits> for Bounds {
    fn from(limits: &toolprune::types::StoreLimits) -> Self {
        Bounds { max_records: limits.max_records, max_chars: limits.max_chars }
    }
}

fn err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError(format!("{what} {}: {e}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The store's root directory: private to the user, holding the MAC key.
#[derive(Clone, Debug)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// The root named by the environment (`env` reads one variable):
    /// `TOOLPRUNE_STORE_DIR`, else `XDG_RUNTIME_DIR/toolprune`, else
    /// `XDG_CACHE_HOME/toolprune/sessions`, else `HOME/.cache/toolprune/sessions`.
    /// Created `0700` if missing. Errors: none of them is set, or as [`Root::at`].
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Root, StoreError> {
        Root::at(Root::default_dir(env).ok_or_else(|| StoreError("no HOME, XDG_RUNTIME_DIR or TOOLPRUNE_STORE_DIR".into()))?)
    }

    /// The directory [`Root::from_env`] would use, without creating it.
    pub fn default_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        var("TOOLPRUNE_STORE_DIR")
            .or_else(|| var("XDG_RUNTIME_DIR").map(|d| d.join("toolprune")))
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("toolprune").join("sessions")))
            .or_else(|| var("HOME").map(|d| d.join(".cache").join("toolprune").join("sessions")))
    }

    /// The root at `dir`, created `0700` (parents as needed). Errors: it
    /// cannot be created, it is not a directory, or it is group/other
    /// accessible or owned by another user (refused: records are private).
    pub fn at(dir: impl Into<PathBuf>) -> Result<Root, StoreError> {
        let dir = dir.into();
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(|e| err("cannot create", parent, e))?;
        }
        match private_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(err("cannot create", &dir, e)),
        }
        check_private(&dir)?;
        Ok(Root { dir })
    }

    /// The root directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The root at `dir` if it exists, without creating anything (readers
    /// such as `toolprune stats`). Errors: it is not a private directory of
    /// this user (as [`Root::at`]).
    pub fn existing(dir: impl Into<PathBuf>) -> Result<Option<Root>, StoreError> {
        let dir = dir.into();
        match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(err("cannot read", &dir, e)),
            Ok(_) => check_private(&dir).map(|()| Some(Root { dir })),
        }
    }

    /// The directory name of a session: `<agent>-<sha256(agent \0 id)[..32]>`
    /// (the raw id never appears in a path). `agent` is a short label
    /// (`claude-code`, `gemini`, `cursor`, `proxy`); other characters than
    /// `[a-z0-9-]` become `-`.
    pub fn session_name(agent: &str, session_id: &str) -> String {
        let label: String = agent
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' { c } else { '-' })
            .collect();
        let mut hasher = Sha256::new();
        hasher.update(agent.as_bytes());
        hasher.update([0]);
        hasher.update(session_id.as_bytes());
        format!("{label}-{}", &hex(&hasher.finalize())[..32])
    }

    /// The session of `agent`'s conversation `session_id`, its directory
    /// created `0700` if missing. Errors: an empty id, or the directory
    /// cannot be created or is not private.
    pub fn session(&self, agent: &str, session_id: &str) -> Result<Session, StoreError> {
        if session_id.trim().is_empty() {
            return Err(StoreError("empty session id".into()));
        }
        self.open(&Root::session_name(agent, session_id), true)
    }

    /// The session if its directory exists (no directory is created).
    pub fn existing_session(&self, agent: &str, session_id: &str) -> Result<Option<Session>, StoreError> {
        match self.open(&Root::session_name(agent, session_id), false) {
            Ok(session) => Ok(Some(session)),
            Err(_) if !self.dir.join(Root::session_name(agent, session_id)).exists() => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn open(&self, name: &str, create: bool) -> Result<Session, StoreError> {
        let dir = self.dir.join(name);
        if create {
            match private_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(err("cannot create", &dir, e)),
            }
        }
        check_private(&dir)?;
        Ok(Session { dir, bounds: None })
    }

    /// The MAC key (`<root>/key`, 32 random bytes, `0600`), made on first use.
    fn key(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.dir.join("key");
        match fs::read(&path) {
            Ok(key) if key.len() == 32 => return Ok(key),
            Ok(_) => return Err(StoreError(format!("{} is not a 32-byte key", path.display()))),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(err("cannot read", &path, e)),
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| StoreError(format!("no random bytes: {e}")))?;
        // Written atomically and never replaced: a concurrent first use keeps one key.
        let tmp = temp_path(&self.dir, "key");
        write_private(&tmp, &key).map_err(|e| err("cannot write", &tmp, e))?;
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(key.to_vec()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => fs::read(&path).map_err(|e| err("cannot read", &path, e)),
            Err(e) => Err(err("cannot write", &path, e)),
        }
    }

    fn mac(&self, name: &str) -> Result<Hmac<Sha256>, StoreError> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key()?).map_err(|e| StoreError(e.to_string()))?;
        mac.update(name.as_bytes());
        Ok(mac)
    }

    /// The token that lets toolprune's `omitted` MCP server open this
    /// session: `<session dir name>.<hex HMAC-SHA256(key, dir name)>`. Only
    /// toolprune's hook hands it over (in the tool call's arguments, after
    /// the model wrote them); it never carries the agent's session id.
    pub fn token(&self, agent: &str, session_id: &str) -> Result<String, StoreError> {
        let name = Root::session_name(agent, session_id);
        Ok(format!("{name}.{}", hex(&self.mac(&name)?.finalize().into_bytes())))
    }

    /// The session a token names, when its MAC is this root's (checked in
    /// constant time) and the session exists; `Ok(None)` for a missing,
    /// malformed, forged or foreign token, or a session swept meanwhile.
    pub fn session_for_token(&self, token: &str) -> Result<Option<Session>, StoreError> {
        let Some((name, mac_hex)) = token.trim().rsplit_once('.') else { return Ok(None) };
        let well_formed = name.rsplit_once('-').is_some_and(|(label, hash)| {
            !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && hash.len() == 32
                && hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        });
        let Some(mac_bytes) = unhex(mac_hex).filter(|_| well_formed) else { return Ok(None) };
        if self.mac(name)?.verify_slice(&mac_bytes).is_err() {
            return Ok(None);
        }
        if !self.dir.join(name).is_dir() {
            return Ok(None);
        }
        self.open(name, false).map(Some)
    }

    /// Deletes session directories untouched for `max_age` (their newest
    /// file), at most once per [`SWEEP_EVERY`] unless `force`. Returns how
    /// many were deleted. Errors: the root cannot be read.
    pub fn sweep(&self, max_age: Duration, force: bool) -> Result<usize, StoreError> {
        let stamp = self.dir.join(".swept");
        if !force {
            // Only a regular file of the root counts: a planted link (fresh
            // by its own mtime) must not hold the sweep off.
            let meta = fs::symlink_metadata(&stamp).ok().filter(|m| m.is_file());
            if let Some(modified) = meta.and_then(|m| m.modified().ok()) {
                if modified.elapsed().is_ok_and(|age| age < SWEEP_EVERY) {
                    return Ok(0);
                }
            }
        }
        // Refreshed every run, atomically (a new private file renamed over
        // it: a planted link is replaced, never written through).
        let _ = write_atomic(&self.dir, ".swept", now_s().to_string().as_bytes());
        let mut deleted = 0;
        let entries = fs::read_dir(&self.dir).map_err(|e| err("cannot read", &self.dir, e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if newest_change(&path).elapsed().is_ok_and(|age| age > max_age) && fs::remove_dir_all(&path).is_ok() {
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

/// The latest modification time of a directory and its files.
fn newest_change(dir: &Path) -> SystemTime {
    let mut newest = fs::metadata(dir).and_then(|m| m.modified()).unwrap_or(UNIX_EPOCH);
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
                newest = newest.max(modified);
            }
        }
    }
    newest
}

#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    fs::DirBuilder::new().mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir(dir)
}

/// Refuses a directory that is not a directory, is group/other accessible,
/// or belongs to another user.
#[cfg(unix)]
fn check_private(dir: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = fs::symlink_metadata(dir).map_err(|e| err("cannot read", dir, e))?;
    if !meta.is_dir() {
        return Err(StoreError(format!("{} is not a directory", dir.display())));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(StoreError(format!("{} belongs to another user", dir.display())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(StoreError(format!("{} is accessible to others (mode {:o}); expected 0700", dir.display(), meta.mode() & 0o777)));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(dir: &Path) -> Result<(), StoreError> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(StoreError(format!("{} is not a directory", dir.display()))),
        Err(e) => Err(err("cannot read", dir, e)),
    }
}

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    let mut nonce = [0u8; 6];
    let _ = getrandom::fill(&mut nonce);
    dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), hex(&nonce)))
}

/// Creates `path` (which must not exist) with mode 0600 and writes `bytes`.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)
}

/// Writes `name` in `dir` atomically: a 0600 temporary file, then a rename.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = temp_path(dir, name);
    let target = dir.join(name);
    let written = write_private(&tmp, bytes).and_then(|()| fs::rename(&tmp, &target));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(err("cannot write", &target, e));
    }
    Ok(())
}

fn read_optional(path: &Path) -> Result<Option<String>, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err("cannot read", path, e)),
    };
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(|e| err("cannot read", path, e))?;
    Ok(Some(text))
}

/// `state.json`: the counter and the index of held records (number, chars),
/// oldest first, with the call keys of those that have one (`stored-result.call`:
/// the repeat gate's digests). A state written before call keys existed
/// reads with none.
#[derive(Default, Serialize, Deserialize)]
struct State {
    count: u32,
    records: Vec<(u32, u64)>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    calls: std::collections::BTreeMap<u32, String>,
}

/// A stored result as JSON (the guest's `stored-result`, field for field;
/// `data` is the guest's own encoding, kept as it is).
#[derive(Serialize, Deserialize)]
struct RecordFile {
    id: String,
    chars: u64,
    /// The repeat gate's call key (a digest); absent in files of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call: Option<String>,
    data: String,
}

impl RecordFile {
    fn from_record(r: &StoredResult) -> Self {
        RecordFile { id: r.id.clone(), chars: r.chars, call: r.call.clone(), data: r.data.clone() }
    }

    fn into_record(self) -> Option<StoredResult> {
        Some(StoredResult { id: self.id, chars: self.chars, call: self.call, data: self.data })
    }
}

/// The log tag of a session directory's name ([`Root::session_name`]):
/// the first 16 hex digits of its hash.
pub fn tag_of(name: &str) -> String {
    let hash = name.rsplit_once('-').map_or(name, |(_, hash)| hash);
    hash.chars().take(16).collect()
}

/// `P3` → 3.
fn number_of(id: &str) -> Option<u32> {
    id.strip_prefix('P').filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())).and_then(|d| d.parse().ok())
}

/// Characters of a prompt a prompt hook keeps (far more than the guest's
/// basis, the first 2,000 characters of the request, SPEC §3, takes; a
/// bound, not that rule: at most ≈ 256 KiB of UTF-8, under the proxy's
/// 1 MiB record limit).
pub const REQUEST_KEPT_CHARS: usize = 65_536;

/// The turn's request as recorded by a prompt hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The user's prompt, raw (the guest takes the basis from it, SPEC §3).
    pub request: String,
    /// When it was recorded, unix seconds.
    pub at: u64,
    /// The agent's working folder (the event's `cwd`, Cursor's first
    /// workspace root), for `toolprune mcp-proxy` to find its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The agent's process id (`proxy::basis::agent_pid`: the hook's nearest
    /// ancestor that is not a shell), for `toolprune mcp-proxy` likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_pid: Option<u32>,
}

/// One conversation's directory. Implements [`ResultStore`], so a
/// [`toolprune::Conversation`] made with it numbers and keeps its results
/// here ([`toolprune::ConversationOptions::store`]).
#[derive(Clone, Debug)]
pub struct Session {
    dir: PathBuf,
    bounds: Option<Bounds>,
}

/// A held `flock` on a session's `lock` file (released on drop).
struct Lock(#[allow(dead_code)] File);

impl Session {
    /// The session directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The agent label the session was opened with (`claude-code`, `gemini`,
    /// …), as its directory name carries it: for log lines.
    pub fn agent(&self) -> String {
        let name = self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.rsplit_once('-').map_or(name.clone(), |(label, _)| label.to_string())
    }

    /// The session's tag in log lines: the first 16 hex digits of its
    /// directory's hash (`sha256(agent \0 session id)`), never the id itself.
    pub fn tag(&self) -> String {
        tag_of(&self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
    }

    /// The same session with these bounds for [`ResultStore::push`]
    /// (without bounds nothing is evicted).
    pub fn with_bounds(mut self, bounds: Bounds) -> Self {
        self.bounds = Some(bounds);
        self
    }

    fn lock(&self, exclusive: bool) -> Result<Lock, StoreError> {
        let path = self.dir.join("lock");
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            // Never through a symbolic link planted at `lock` (issue 27 §5):
            // the target would be created outside the root.
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK);
        }
        let file = options.open(&path).map_err(|e| err("cannot open", &path, e))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(StoreError(format!("{} is not a regular file", path.display())));
        }
        let started = Instant::now();
        loop {
            let tried = if exclusive { file.try_lock() } else { file.try_lock_shared() };
            match tried {
                Ok(()) => return Ok(Lock(file)),
                Err(fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(StoreError(format!("{} stayed locked for {} s", path.display(), LOCK_WAIT.as_secs())))
                }
                Err(fs::TryLockError::Error(e)) => return Err(err("cannot lock", &path, e)),
            }
        }
    }

    fn state(&self) -> Result<State, StoreError> {
        let path = self.dir.join("state.json");
        match read_optional(&path)? {
            None => Ok(State::default()),
            Some(text) => serde_json::from_str(&text).map_err(|e| StoreError(format!("{} is corrupt: {e}", path.display()))),
        }
    }

    fn write_state(&self, state: &State) -> Result<(), StoreError> {
        let json = serde_json::to_vec(state).map_err(|e| StoreError(e.to_string()))?;
        write_atomic(&self.dir, "state.json", &json)
    }

    /// Records the turn's request (the prompt hook): replaces the previous one.
    pub fn record_request(&self, request: &str) -> Result<(), StoreError> {
        self.record_request_from(request, None, None)
    }

    /// [`Session::record_request`] with where it came from: the agent's
    /// working folder and process id (docs/mcp-proxy.md "Basis").
    /// Only the first [`REQUEST_KEPT_CHARS`] characters are kept: the guest
    /// takes the basis from the start of the request, and a pasted megabyte
    /// must not make a record that readers (the proxy) refuse as too large.
    pub fn record_request_from(&self, request: &str, cwd: Option<&str>, agent_pid: Option<u32>) -> Result<(), StoreError> {
        let kept = match request.char_indices().nth(REQUEST_KEPT_CHARS) {
            Some((end, _)) => &request[..end],
            None => request,
        };
        let record = Request { request: kept.to_string(), at: now_s(), cwd: cwd.map(str::to_string), agent_pid };
        let json = serde_json::to_vec(&record).map_err(|e| StoreError(e.to_string()))?;
        let _lock = self.lock(true)?;
        write_atomic(&self.dir, "request.json", &json)
    }

    /// The latest recorded request, if any.
    pub fn request(&self) -> Result<Option<Request>, StoreError> {
        let path = self.dir.join("request.json");
        let _lock = self.lock(false)?;
        match read_optional(&path)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| StoreError(format!("{} is corrupt: {e}", path.display()))),
        }
    }

    /// Keeps the pruned body of a held record (`P3` → `P3.body`), for agents
    /// that replace a result by a second tool call. Errors: the record is not
    /// held (evicted, ended) or the file cannot be written.
    pub fn put_body(&self, id: &str, body: &str) -> Result<(), StoreError> {
        let number = number_of(id).ok_or_else(|| StoreError("not a record id".into()))?;
        let _lock = self.lock(true)?;
        if !self.state()?.records.iter().any(|(n, _)| *n == number) {
            return Err(StoreError(format!("P{number} is not held")));
        }
        write_atomic(&self.dir, &format!("P{number}.body"), body.as_bytes())
    }

    /// The pruned body kept by [`Session::put_body`], while its record is held.
    pub fn body(&self, id: &str) -> Result<Option<String>, StoreError> {
        let Some(number) = number_of(id) else { return Ok(None) };
        let _lock = self.lock(false)?;
        if !self.state()?.records.iter().any(|(n, _)| *n == number) {
            return Ok(None);
        }
        read_optional(&self.dir.join(format!("P{number}.body")))
    }

    /// The session's end (the agent's end event): deletes the request, the
    /// records and the bodies, and keeps the counter (a tombstone), so that a
    /// resumed conversation numbers on and an old id answers `not_found`,
    /// never another text. No component is loaded: this is fast.
    pub fn end(&self) -> Result<(), StoreError> {
        let _lock = self.lock(true)?;
        let state = self.state()?;
        self.write_state(&State { count: state.count, ..State::default() })?;
        let entries = fs::read_dir(&self.dir).map_err(|e| err("cannot read", &self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = name == "request.json"
                || (name.starts_with('P') && (name.ends_with(".json") || name.ends_with(".body")))
                || (name.starts_with('.') && name.ends_with(".tmp"));
            if ours {
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    fn remove_record_files(&self, number: u32) {
        let _ = fs::remove_file(self.dir.join(format!("P{number}.json")));
        let _ = fs::remove_file(self.dir.join(format!("P{number}.body")));
    }
}

impl ResultStore for Session {
    fn push(&self, finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError> {
        let _lock = self.lock(true)?;
        let mut state = self.state()?;
        let number = state.count.checked_add(1).ok_or_else(|| StoreError("the counter is full".into()))?;
        let Some(record) = finish(number) else { return Ok(()) };
        if number_of(&record.id) != Some(number) {
            return Err(StoreError("the record's id is not the number it was given".into()));
        }
        let json = serde_json::to_vec(&RecordFile::from_record(&record)).map_err(|e| StoreError(e.to_string()))?;
        write_atomic(&self.dir, &format!("P{number}.json"), &json)?;
        state.count = number;
        state.records.push((number, record.chars));
        if let Some(call) = &record.call {
            state.calls.insert(number, call.clone());
        }
        let mut evicted = Vec::new();
        if let Some(bounds) = self.bounds {
            // The same rule as the in-memory store (`evict_oldest`), on the index.
            let mut held: VecDeque<StoredResult> = state
                .records
                .iter()
                .map(|&(n, chars)| StoredResult { id: format!("P{n}"), chars, call: None, data: String::new() })
                .collect();
            let total = held.iter().map(|r| r.chars).sum();
            evict_oldest(&mut held, total, bounds.max_records, bounds.max_chars);
            let kept: Vec<u32> = held.iter().filter_map(|r| number_of(&r.id)).collect();
            evicted = state.records.iter().map(|(n, _)| *n).filter(|n| !kept.contains(n)).collect();
            state.records.retain(|(n, _)| kept.contains(n));
            state.calls.retain(|n, _| kept.contains(n));
        }
        if let Err(e) = self.write_state(&state) {
            let _ = fs::remove_file(self.dir.join(format!("P{number}.json")));
            return Err(e);
        }
        for n in evicted {
            self.remove_record_files(n);
        }
        Ok(())
    }

    fn find(&self, id: &str) -> Result<Option<StoredResult>, StoreError> {
        let Some(number) = number_of(id) else { return Ok(None) };
        let _lock = self.lock(false)?;
        if !self.state()?.records.iter().any(|(n, _)| *n == number) {
            return Ok(None);
        }
        let path = self.dir.join(format!("P{number}.json"));
        match read_optional(&path)? {
            None => Ok(None),
            Some(text) => {
                let file: RecordFile = serde_json::from_str(&text).map_err(|e| StoreError(format!("{} is corrupt: {e}", path.display())))?;
                Ok(file.into_record().filter(|r| r.id == format!("P{number}")))
            }
        }
    }

    fn count(&self) -> Result<u32, StoreError> {
        let _lock = self.lock(false)?;
        Ok(self.state()?.count)
    }

    /// From the index (`state.json`), without reading the records.
    fn calls(&self) -> Result<Vec<String>, StoreError> {
        let _lock = self.lock(false)?;
        let state = self.state()?;
        Ok(state.records.iter().filter_map(|(n, _)| state.calls.get(n).cloned()).collect())
    }

    fn records(&self) -> Result<Vec<StoredResult>, StoreError> {
        let numbers: Vec<u32> = {
            let _lock = self.lock(false)?;
            self.state()?.records.iter().map(|(n, _)| *n).collect()
        };
        let mut out = Vec::new();
        for n in numbers {
            if let Some(record) = self.find(&format!("P{n}"))? {
                out.push(record);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(number: u32, chars: u64) -> StoredResult {
        StoredResult { id: format!("P{number}"), chars, call: Some(format!("key{number}")), data: format!("dropped paragraph of P{number} ✓\n\n") }
    }

    fn root() -> (tempfile::TempDir, Root) {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::at(tmp.path().join("store")).unwrap();
        (tmp, root)
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// A pasted megabyte in a prompt (a tester's 2.4 MB `request.json`): the
    /// record keeps its first 65,536 characters, whole characters, so it
    /// stays under the proxy's record limit and gives the same basis.
    #[test]
    fn a_huge_prompt_is_recorded_by_its_start() {
        let (_tmp, root) = root();
        let session = root.session("claude-code", "huge").unwrap();
        let prompt: String = "質問".repeat(600_000);
        session.record_request(&prompt).unwrap();
        let kept = session.request().unwrap().unwrap().request;
        assert_eq!(kept.chars().count(), REQUEST_KEPT_CHARS);
        assert!(prompt.starts_with(&kept));
        let size = fs::metadata(session.dir.join("request.json")).unwrap().len();
        assert!(size < crate::proxy::basis::MAX_RECORD_BYTES, "{size}");
        session.record_request("short").unwrap();
        assert_eq!(session.request().unwrap().unwrap().request, "short");
    }

    #[test]
    fn the_root_comes_from_the_environment_in_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        assert_eq!(Root::default_dir(&env(&[("HOME", "/h")])), Some(PathBuf::from("/h/.cache/toolprune/sessions")));
        assert_eq!(Root::default_dir(&env(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/c")])), Some(PathBuf::from("/c/toolprune/sessions")));
        assert_eq!(
            Root::default_dir(&env(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/c"), ("XDG_RUNTIME_DIR", "/run/user/1")])),
            Some(PathBuf::from("/run/user/1/toolprune"))
        );
        assert_eq!(
            Root::default_dir(&env(&[("XDG_RUNTIME_DIR", "/run/user/1"), ("TOOLPRUNE_STORE_DIR", "/s")])),
            Some(PathBuf::from("/s"))
        );
        assert_eq!(Root::default_dir(&env(&[])), None);
    }

    #[cfg(unix)]
    #[test]
    fn directories_are_0700_and_files_0600() {
        let (_tmp, root) = root();
        assert_eq!(mode(root.path()), 0o700);
        let session = root.session("claude-code", "s-1").unwrap();
        assert_eq!(mode(session.path()), 0o700);
        session.record_request("How do I index a String?").unwrap();
        session.push(&mut |n| Some(record(n, 10))).unwrap();
        root.token("claude-code", "s-1").unwrap();
        for entry in fs::read_dir(session.path()).unwrap().chain(fs::read_dir(root.path()).unwrap()) {
            let path = entry.unwrap().path();
            if path.is_file() {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_root_open_to_others_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("open");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let e = Root::at(&dir).unwrap_err();
        assert!(e.0.contains("accessible to others"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_planted_at_a_sessions_lock_is_refused_and_nothing_is_created_outside_the_root() {
        let (tmp, root) = root();
        let session = root.session("claude-code", "s").unwrap();
        let outside = tmp.path().join("outside-lock");
        std::os::unix::fs::symlink(&outside, session.path().join("lock")).unwrap();
        assert!(session.push(&mut |n| Some(record(n, 1))).is_err(), "a writer fails (the caller fails open)");
        assert!(session.record_request("a request").is_err());
        assert!(session.find("P1").is_err(), "and so does a reader");
        assert!(!outside.exists(), "the link's target was created outside the root");
        // A FIFO at `lock` neither blocks nor is taken for the lock.
        fs::remove_file(session.path().join("lock")).unwrap();
        let fifo = std::ffi::CString::new(session.path().join("lock").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(session.count().is_err());
    }

    #[test]
    fn the_session_tag_is_a_prefix_of_its_hash_and_never_the_id() {
        let (_tmp, root) = root();
        let session = root.session("claude-code", "secret-session-id").unwrap();
        let name = Root::session_name("claude-code", "secret-session-id");
        assert_eq!(session.tag(), name["claude-code-".len()..][..16]);
        assert_eq!(session.tag().len(), 16);
        assert!(!session.tag().contains("secret"));
    }

    #[test]
    fn an_existing_root_is_opened_without_creating_one() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(Root::existing(tmp.path().join("none")).unwrap().is_none());
        assert!(!tmp.path().join("none").exists());
        let made = Root::at(tmp.path().join("store")).unwrap();
        assert_eq!(Root::existing(made.path()).unwrap().unwrap().path(), made.path());
    }

    #[test]
    fn the_session_directory_never_carries_the_raw_id() {
        let name = Root::session_name("claude-code", "9b1c-secret-uuid");
        assert!(name.starts_with("claude-code-") && !name.contains("secret"), "{name}");
        assert_eq!(name.len(), "claude-code-".len() + 32);
        assert_ne!(name, Root::session_name("gemini", "9b1c-secret-uuid"), "agents do not share sessions");
        assert!(Root::session_name("Weird Agent!", "x").starts_with("weird-agent--"));
    }

    #[test]
    fn ids_number_on_across_handles_and_the_end_keeps_the_counter() {
        let (_tmp, root) = root();
        let one = root.session("gemini", "abc").unwrap();
        one.push(&mut |n| Some(record(n, 10))).unwrap();
        // Another process of the same conversation: another handle, same directory.
        let two = root.session("gemini", "abc").unwrap();
        two.push(&mut |n| Some(record(n, 10))).unwrap();
        assert_eq!(one.count().unwrap(), 2);
        assert_eq!(two.find("P1").unwrap().unwrap().data, "dropped paragraph of P1 ✓\n\n");
        one.record_request("a request").unwrap();
        one.put_body("P2", "pruned body").unwrap();
        one.end().unwrap();
        assert!(two.find("P1").unwrap().is_none(), "records are gone at the session's end");
        assert_eq!(two.body("P2").unwrap(), None);
        assert_eq!(two.request().unwrap(), None);
        assert_eq!(two.count().unwrap(), 2, "the counter is a tombstone");
        two.push(&mut |n| Some(record(n, 10))).unwrap();
        assert_eq!(two.records().unwrap().iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["P3"]);
        let files: Vec<String> = fs::read_dir(one.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(!files.iter().any(|f| f.ends_with(".tmp")), "{files:?}");
    }

    #[test]
    fn a_finish_that_keeps_nothing_uses_no_number() {
        let (_tmp, root) = root();
        let session = root.session("cursor", "c").unwrap();
        session.push(&mut |_| None).unwrap();
        assert_eq!(session.count().unwrap(), 0);
        let mut given = 0;
        session.push(&mut |n| { given = n; Some(record(n, 1)) }).unwrap();
        assert_eq!(given, 1);
    }

    #[test]
    fn bounds_evict_the_oldest_records_with_their_bodies() {
        let (_tmp, root) = root();
        let session = root.session("claude-code", "b").unwrap().with_bounds(Bounds { max_records: 2, max_chars: 100 });
        for _ in 0..3 {
            session.push(&mut |n| Some(record(n, 10))).unwrap();
            session.put_body(&format!("P{}", session.count().unwrap()), "body").unwrap();
        }
        let ids: Vec<String> = session.records().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["P2", "P3"]);
        assert!(!session.path().join("P1.json").exists() && !session.path().join("P1.body").exists());
        assert!(session.find("P1").unwrap().is_none());
        session.push(&mut |n| Some(record(n, 95))).unwrap();
        let ids: Vec<String> = session.records().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["P4"], "the character bound evicts until it holds");
        assert_eq!(session.count().unwrap(), 4);
    }

    #[test]
    fn call_keys_come_from_the_index_go_with_evicted_records_and_survive_reopening() {
        let (_tmp, root) = root();
        let session = root.session("claude-code", "k").unwrap().with_bounds(Bounds { max_records: 2, max_chars: 1_000 });
        session.push(&mut |n| Some(record(n, 10))).unwrap();
        session.push(&mut |n| Some(StoredResult { call: None, ..record(n, 10) })).unwrap();
        assert_eq!(session.calls().unwrap(), ["key1"], "a record without a key adds none");
        session.push(&mut |n| Some(record(n, 10))).unwrap();
        assert_eq!(session.calls().unwrap(), ["key3"], "P1 was evicted, and its key with it");
        let again = root.session("claude-code", "k").unwrap();
        assert_eq!(again.calls().unwrap(), ["key3"], "another process of the session sees the same keys");
        assert_eq!(again.find("P3").unwrap().unwrap().call.as_deref(), Some("key3"));
        again.end().unwrap();
        assert!(again.calls().unwrap().is_empty(), "the session's end drops the keys with the records");
    }

    #[test]
    fn a_state_written_before_call_keys_reads_with_none() {
        let (_tmp, root) = root();
        let session = root.session("claude-code", "old").unwrap();
        session.push(&mut |n| Some(StoredResult { call: None, ..record(n, 10) })).unwrap();
        std::fs::write(session.path().join("state.json"), r#"{"count":1,"records":[[1,10]]}"#).unwrap();
        std::fs::write(session.path().join("P1.json"), r#"{"id":"P1","chars":10,"data":"x"}"#).unwrap();
        assert!(session.calls().unwrap().is_empty());
        assert_eq!(session.find("P1").unwrap().unwrap().call, None);
    }

    #[test]
    fn a_token_opens_its_own_session_and_nothing_else() {
        let (_tmp, root) = root();
        let mine = root.session("claude-code", "mine").unwrap();
        mine.push(&mut |n| Some(record(n, 10))).unwrap();
        root.session("claude-code", "other").unwrap().push(&mut |n| Some(record(n, 10))).unwrap();
        let token = root.token("claude-code", "mine").unwrap();
        assert!(!token.contains("mine"), "the raw session id never travels: {token}");
        let opened = root.session_for_token(&token).unwrap().expect("its own session");
        assert_eq!(opened.path(), mine.path());
        assert_eq!(opened.agent(), "claude-code");
        // Another session's name under this token's MAC, a flipped MAC bit, garbage: nothing.
        let other_name = Root::session_name("claude-code", "other");
        let (_, mac) = token.rsplit_once('.').unwrap();
        assert!(root.session_for_token(&format!("{other_name}.{mac}")).unwrap().is_none());
        let mut flipped = token.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(root.session_for_token(&String::from_utf8(flipped).unwrap()).unwrap().is_none());
        for bad in ["", "claude-code", "../x.00", "claude-code:mine:abc", &format!("{token}x")] {
            assert!(root.session_for_token(bad).unwrap().is_none(), "{bad:?}");
        }
        // The same token against another root (another key): nothing.
        let (_tmp2, root2) = super::tests::root();
        root2.session("claude-code", "mine").unwrap();
        assert!(root2.session_for_token(&token).unwrap().is_none());
    }

    #[test]
    fn the_sweep_deletes_sessions_untouched_for_the_max_age_at_most_hourly() {
        let (_tmp, root) = root();
        let age = |session: &Session| {
            let then = SystemTime::now() - Duration::from_secs(3 * 3600);
            for entry in fs::read_dir(session.path()).unwrap() {
                File::open(entry.unwrap().path()).unwrap().set_modified(then).unwrap();
            }
            File::open(session.path()).unwrap().set_modified(then).unwrap();
        };
        let old = root.session("gemini", "old").unwrap();
        old.record_request("x").unwrap();
        age(&old);
        let fresh = root.session("gemini", "fresh").unwrap();
        fresh.record_request("y").unwrap();
        assert_eq!(root.sweep(Duration::from_secs(3600), false).unwrap(), 1);
        assert!(!old.path().exists() && fresh.path().exists());
        let again = root.session("gemini", "old2").unwrap();
        again.record_request("z").unwrap();
        age(&again);
        assert_eq!(root.sweep(Duration::from_secs(3600), false).unwrap(), 0, "swept less than an hour ago");
        assert_eq!(root.sweep(Duration::from_secs(3600), true).unwrap(), 1);
    }

    #[test]
    fn the_sweep_refreshes_its_stamp_so_the_next_run_waits_an_hour_again() {
        let (_tmp, root) = root();
        let stamp = root.dir.join(".swept");
        assert_eq!(root.sweep(Duration::from_secs(3600), false).unwrap(), 0);
        let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
        File::open(&stamp).unwrap().set_modified(two_hours_ago).unwrap();
        assert_eq!(root.sweep(Duration::from_secs(3600), false).unwrap(), 0, "ran: an hour passed");
        let refreshed = fs::metadata(&stamp).unwrap().modified().unwrap();
        assert!(refreshed.elapsed().unwrap() < Duration::from_secs(60), "stamp not refreshed");
        let old = root.session("gemini", "old").unwrap();
        old.record_request("x").unwrap();
        let then = SystemTime::now() - Duration::from_secs(3 * 3600);
        for entry in fs::read_dir(old.path()).unwrap() {
            File::open(entry.unwrap().path()).unwrap().set_modified(then).unwrap();
        }
        File::open(old.path()).unwrap().set_modified(then).unwrap();
        assert_eq!(root.sweep(Duration::from_secs(3600), false).unwrap(), 0, "swept again within the hour");
        assert!(old.path().exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_the_sweep_stamp_is_replaced_not_written_through() {
        let (tmp, root) = root();
        let victim = tmp.path().join("victim");
        fs::write(&victim, "untouched").unwrap();
        File::open(&victim).unwrap().set_modified(SystemTime::now() - Duration::from_secs(7200)).unwrap();
        std::os::unix::fs::symlink(&victim, root.dir.join(".swept")).unwrap();
        root.sweep(Duration::from_secs(3600), false).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        let meta = fs::symlink_metadata(root.dir.join(".swept")).unwrap();
        assert!(meta.is_file(), "the stamp is a file of the root now");
    }

    #[test]
    fn a_corrupt_state_is_an_error_not_a_reset() {
        let (_tmp, root) = root();
        let session = root.session("claude-code", "c").unwrap();
        session.push(&mut |n| Some(record(n, 1))).unwrap();
        fs::write(session.path().join("state.json"), "{not json").unwrap();
        assert!(session.push(&mut |n| Some(record(n, 1))).is_err());
        assert!(session.find("P1").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_session_is_an_error() {
        use std::os::unix::fs::PermissionsExt as _;
        if unsafe { libc::geteuid() } == 0 {
            return; // root reads anything: the chmod cannot make it fail.
        }
        let (_tmp, root) = root();
        let session = root.session("claude-code", "u").unwrap();
        session.push(&mut |n| Some(record(n, 1))).unwrap();
        fs::set_permissions(session.path(), fs::Permissions::from_mode(0o000)).unwrap();
        assert!(session.push(&mut |n| Some(record(n, 1))).is_err());
        assert!(session.find("P1").is_err());
        fs::set_permissions(session.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn concurrent_pushes_of_one_session_never_lose_or_repeat_a_number() {
        let (_tmp, root) = root();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let root = root.clone();
                std::thread::spawn(move || {
                    let session = root.session("claude-code", "busy").unwrap();
                    for _ in 0..5 {
                        session.push(&mut |n| Some(record(n, 1))).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let session = root.session("claude-code", "busy").unwrap();
        assert_eq!(session.count().unwrap(), 40);
        let ids: Vec<String> = session.records().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, (1..=40).map(|n| format!("P{n}")).collect::<Vec<_>>());
    }
}
