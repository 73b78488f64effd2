//! Where the proxy's basis comes from (SPEC §3, §15). An MCP server never
//! sees the user's message; the proxy takes it, in this order, from
//!
//! 1. **the prompt hook's record** ([`HookRecords`]): toolprune's prompt hook
//!    (`toolprune hook …`, `UserPromptSubmit` / `BeforeAgent` /
//!    `beforeSubmitPrompt`) writes the latest request of each agent session
//!    to the session store, with the agent's process id and working folder.
//!    The proxy takes the latest record **of the agent process that started
//!    it** (the record's `agent_pid` is the proxy's own agent process,
//!    [`agent_pid`]); failing that, the latest record of **the proxy's
//!    working folder** written in the last [`CWD_WINDOW_S`] seconds, when
//!    exactly one session wrote one there (two sessions in one folder: no
//!    basis rather than a guess);
//! 2. the **request argument** the model fills in (basis `argument` only);
//! 3. none: `no_basis`, the result passes unchanged.
//!
//! Safety: only the user's own store is read. Its root must be a directory
//! owned by this user with no group or other permission bits (`0700`);
//! session folders and files must be owned by this user and not be
//! symbolic links; a record over [`MAX_RECORD_BYTES`] is ignored. Nothing
//! is written here (the id counter lives in [`super::ids`]).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// The file a prompt hook writes in each session folder of the store.
pub const REQUEST_FILE: &str = "request.json";

/// How recent a record found by working folder only must be, in seconds.
pub const CWD_WINDOW_S: u64 = 15 * 60;

/// Records larger than this are ignored (a request is at most a few KB).
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// The session store's root, as the hooks resolve it ([`crate::store::Root::default_dir`]):
/// `$TOOLPRUNE_STORE_DIR`, else `$XDG_RUNTIME_DIR/toolprune`, else
/// `$XDG_CACHE_HOME/toolprune/sessions`, else `~/.cache/toolprune/sessions`;
/// none without any of them.
pub fn store_root(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    crate::store::Root::default_dir(env)
}

/// This process's user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Whether `path` is a private directory of this user: not a symbolic link,
/// owned by us, no group/other permission bits.
pub fn is_private_dir(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(m) => m.is_dir() && m.uid() == uid() && m.permissions().mode() & 0o077 == 0,
        Err(_) => false,
    }
}

/// One prompt hook record (`request.json`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Record {
    /// The user's request, raw.
    pub request: String,
    /// When it was written, Unix seconds.
    pub at: u64,
    /// The agent's working folder (the hook event's `cwd`).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The agent's process id ([`agent_pid`] as the hook saw it).
    #[serde(default)]
    pub agent_pid: Option<u32>,
}

/// What the proxy knows about itself to find its session's record.
#[derive(Clone, Debug)]
pub struct Whoami {
    /// The agent process that started the proxy ([`agent_pid`]).
    pub agent_pid: Option<u32>,
    /// The proxy's working folder, canonical.
    pub cwd: Option<PathBuf>,
}

impl Whoami {
    /// This process: its agent and working folder.
    pub fn current() -> Self {
        Whoami { agent_pid: agent_pid(), cwd: std::env::current_dir().ok().and_then(|d| d.canonicalize().ok()) }
    }
}

/// The prompt hook's records, read from the store on each lookup (so that a
/// new turn's request is seen at once).
#[derive(Clone, Debug)]
pub struct HookRecords {
    root: Option<PathBuf>,
    /// Records older than this are stale (the store's `max-age-s`).
    max_age_s: u64,
}

/// Which rule found a record (for the log and the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    AgentProcess,
    WorkingFolder,
}

impl HookRecords {
    /// Records under `root` (none: there is no store), stale after `max_age_s`.
    pub fn new(root: Option<PathBuf>, max_age_s: u64) -> Self {
        HookRecords { root, max_age_s }
    }

    /// The request of the proxy's session, if a prompt hook recorded one
    /// (module docs for the rules). Never fails: any problem is "none".
    pub fn lookup(&self, me: &Whoami) -> Option<(String, Found)> {
        let root = self.root.as_deref()?;
        if !is_private_dir(root) {
            return None;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut records: Vec<(PathBuf, Record)> = Vec::new();
        for entry in fs::read_dir(root).ok()?.flatten() {
            let dir = entry.path();
            let Ok(meta) = fs::symlink_metadata(&dir) else { continue };
            if !meta.is_dir() || meta.uid() != uid() {
                continue;
            }
            if let Some(record) = read_record(&dir.join(REQUEST_FILE)) {
                if record.at + self.max_age_s >= now && record.at <= now + 60 {
                    records.push((dir, record));
                }
            }
        }
        let latest = |found: Vec<&(PathBuf, Record)>| found.into_iter().max_by_key(|(_, r)| r.at).map(|(_, r)| r.request.clone());
        if let Some(pid) = me.agent_pid {
            let mine: Vec<_> = records.iter().filter(|(_, r)| r.agent_pid == Some(pid)).collect();
            if let Some(request) = latest(mine) {
                return Some((request, Found::AgentProcess));
            }
        }
        let cwd = me.cwd.as_deref()?;
        let here: Vec<_> = records
            .iter()
            .filter(|(_, r)| r.at + CWD_WINDOW_S >= now)
            .filter(|(_, r)| r.cwd.as_deref().and_then(|c| Path::new(c).canonicalize().ok()).as_deref() == Some(cwd))
            .collect();
        let sessions: std::collections::HashSet<&PathBuf> = here.iter().map(|(d, _)| d).collect();
        if sessions.len() != 1 {
            return None;
        }
        latest(here).map(|request| (request, Found::WorkingFolder))
    }
}

fn read_record(path: &Path) -> Option<Record> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.uid() != uid() || meta.len() > MAX_RECORD_BYTES {
        return None;
    }
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// Shells and launchers that stand between an agent and the processes it
/// starts (`sh -c "toolprune hook …"`); skipped when looking for the agent.
const LAUNCHERS: [&str; 9] = ["sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "busybox", "env"];

/// The process id of the agent that started this process: the nearest
/// ancestor that is not a shell (at most 4 steps up). The prompt hook and
/// the proxy both call this, so a hook run by `sh -c` under Claude Code and
/// the proxy started by the same Claude Code process name the same agent.
/// Linux reads `/proc`; elsewhere it is the parent process. None when the
/// parent is init (the agent is gone).
pub fn agent_pid() -> Option<u32> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..4 {
        if pid <= 1 {
            return None;
        }
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok();
        match comm {
            Some(name) if LAUNCHERS.contains(&name.trim()) => match parent_of(pid) {
                Some(parent) => pid = parent,
                None => return Some(pid),
            },
            _ => return Some(pid),
        }
    }
    Some(pid)
}

/// The parent of `pid` from `/proc/PID/stat` (the field after the `(comm)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private_root() -> tempfile_lite::Dir {
        let dir = tempfile_lite::Dir::new();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn write(root: &Path, session: &str, record: &serde_json::Value) {
        let dir = root.join(session);
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(dir.join(REQUEST_FILE), record.to_string()).unwrap();
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    #[test]
    fn the_agent_processs_latest_record_wins_over_other_sessions() {
        let root = private_root();
        let t = now();
        write(root.path(), "claude-a", &serde_json::json!({"request": "mine, older", "at": t - 50, "cwd": "/nowhere", "agent_pid": 4242}));
        write(root.path(), "claude-b", &serde_json::json!({"request": "someone else's", "at": t, "cwd": "/nowhere", "agent_pid": 99}));
        write(root.path(), "claude-c", &serde_json::json!({"request": "mine, newer", "at": t - 5, "agent_pid": 4242}));
        let records = HookRecords::new(Some(root.path().to_path_buf()), 3600);
        let me = Whoami { agent_pid: Some(4242), cwd: None };
        assert_eq!(records.lookup(&me), Some(("mine, newer".to_string(), Found::AgentProcess)));
        let stranger = Whoami { agent_pid: Some(7), cwd: None };
        assert_eq!(records.lookup(&stranger), None, "no pid match and no folder: no basis");
    }

    #[test]
    fn the_working_folder_is_used_only_when_one_session_wrote_there_recently() {
        let root = private_root();
        let project = tempfile_lite::Dir::new();
        let cwd = project.path().canonicalize().unwrap();
        let t = now();
        write(root.path(), "gemini-a", &serde_json::json!({"request": "here", "at": t - 10, "cwd": cwd, "agent_pid": 1}));
        write(root.path(), "gemini-old", &serde_json::json!({"request": "stale", "at": t - CWD_WINDOW_S - 10, "cwd": cwd}));
        let records = HookRecords::new(Some(root.path().to_path_buf()), 48 * 3600);
        let me = Whoami { agent_pid: Some(5), cwd: Some(cwd.clone()) };
        assert_eq!(records.lookup(&me), Some(("here".to_string(), Found::WorkingFolder)));
        write(root.path(), "gemini-b", &serde_json::json!({"request": "a second session here", "at": t - 2, "cwd": cwd}));
        assert_eq!(records.lookup(&me), None, "two sessions in one folder: no guess");
    }

    #[test]
    fn a_store_open_to_others_or_stale_records_give_nothing() {
        let root = private_root();
        let t = now();
        write(root.path(), "s", &serde_json::json!({"request": "r", "at": t, "agent_pid": 10}));
        let me = Whoami { agent_pid: Some(10), cwd: None };
        assert!(HookRecords::new(Some(root.path().to_path_buf()), 60).lookup(&me).is_some());
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(HookRecords::new(Some(root.path().to_path_buf()), 60).lookup(&me), None, "a readable root is refused");
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o700)).unwrap();
        write(root.path(), "s", &serde_json::json!({"request": "r", "at": t - 120, "agent_pid": 10}));
        assert_eq!(HookRecords::new(Some(root.path().to_path_buf()), 60).lookup(&me), None, "older than max-age");
        assert_eq!(HookRecords::new(None, 60).lookup(&me), None);
    }

    #[test]
    fn a_symlinked_session_is_not_followed() {
        let root = private_root();
        let elsewhere = tempfile_lite::Dir::new();
        write(elsewhere.path(), "x", &serde_json::json!({"request": "r", "at": now(), "agent_pid": 10}));
        std::os::unix::fs::symlink(elsewhere.path().join("x"), root.path().join("link")).unwrap();
        let me = Whoami { agent_pid: Some(10), cwd: None };
        assert_eq!(HookRecords::new(Some(root.path().to_path_buf()), 60).lookup(&me), None);
    }

    #[test]
    fn the_store_root_follows_the_hooks_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string());
        assert_eq!(store_root(&env(&[("TOOLPRUNE_STORE_DIR", "/s"), ("XDG_RUNTIME_DIR", "/r")])), Some(PathBuf::from("/s")));
        assert_eq!(store_root(&env(&[("XDG_RUNTIME_DIR", "/r"), ("HOME", "/h")])), Some(PathBuf::from("/r/toolprune")));
        assert_eq!(store_root(&env(&[("XDG_CACHE_HOME", "/c")])), Some(PathBuf::from("/c/toolprune/sessions")));
        assert_eq!(store_root(&env(&[("HOME", "/h")])), Some(PathBuf::from("/h/.cache/toolprune/sessions")));
        assert_eq!(store_root(&env(&[])), None);
    }

    #[test]
    fn this_test_process_has_an_agent() {
        // cargo test runs under cargo (not a shell): the agent is a live process.
        let pid = agent_pid().expect("a parent");
        assert!(Path::new(&format!("/proc/{pid}")).exists());
    }

    /// A temporary directory removed on drop (no extra dependency).
    mod tempfile_lite {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicU32, Ordering};

        pub struct Dir(PathBuf);

        impl Dir {
            pub fn new() -> Self {
                static N: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!("toolprune-basis-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
