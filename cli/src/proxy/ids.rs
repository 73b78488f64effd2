//! Id numbers for the proxy's stored results (`P{n}`), unique per user
//! across proxy processes (SPEC §10: "an id means one text"), and the
//! proxy's in-memory store numbered by them ([`ProxyStore`]).
//!
//! A proxy lives as long as its client's connection: `claude -p --continue`
//! starts a new one for turn 2 while turn 1's markers (`id=P1`) are still in
//! the conversation, and a session with two wrapped servers runs two at
//! once. Numbers from one counter per user (`<store root>/proxy-ids`, a
//! decimal number, `0600`, updated under an exclusive lock) never repeat,
//! so an old marker answers `not_found`, never another text. When the store
//! cannot be used, numbers come from a process-local counter starting at a
//! clock-derived base (large ids, still distinct across restarts).

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use toolprune::store::evict_oldest;
use toolprune::types::StoredResult;
use toolprune::{ResultStore, StoreError};

use super::basis::is_private_dir;

/// The counter file in the store root.
pub const COUNTER_FILE: &str = "proxy-ids";

/// Hands out id numbers: from the per-user counter file, else process-local.
pub struct IdNumbers {
    file: Option<PathBuf>,
    local: AtomicU32,
}

impl IdNumbers {
    /// Numbers from `<root>/proxy-ids` (the root is created `0700` if
    /// missing, and refused if it is not a private directory of this user).
    pub fn new(root: Option<&Path>) -> Arc<Self> {
        let file = root.and_then(|root| {
            if !root.exists() {
                let _ = fs::DirBuilder::new().recursive(true).mode(0o700).create(root);
            }
            is_private_dir(root).then(|| root.join(COUNTER_FILE))
        });
        // Fallback base: tenths of an hour since 2026, times 1000 — distinct per restart, under u32::MAX for decades.
        let hours = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()).saturating_sub(1_767_225_600) / 360;
        let base = u32::try_from(hours.saturating_mul(1000) % 4_000_000_000).unwrap_or(0);
        Arc::new(IdNumbers { file, local: AtomicU32::new(base) })
    }

    /// The number [`next`](Self::next) would give now (another proxy may
    /// take it first): the counter file's value + 1, else the local one's.
    pub fn peek(&self) -> u32 {
        if let Some(path) = &self.file {
            if let Ok(n) = peek(path) {
                return n;
            }
        }
        self.local.load(Ordering::SeqCst).wrapping_add(1).max(1)
    }

    /// The next number (never one handed out before by this counter).
    pub fn next(&self) -> u32 {
        if let Some(path) = &self.file {
            if let Ok(n) = bump(path) {
                return n;
            }
        }
        self.local.fetch_add(1, Ordering::SeqCst).wrapping_add(1).max(1)
    }
}

/// The proxy's store of pruned results (SPEC §10): in memory for the
/// proxy's life, bounded (`max_records`, `max_chars`, oldest evicted first,
/// the library's `evict_oldest`), numbered by [`IdNumbers`] so that an id
/// is never handed out twice by any proxy of this user.
pub struct ProxyStore {
    ids: Arc<IdNumbers>,
    max_records: u32,
    max_chars: u64,
    state: Mutex<(u32, VecDeque<StoredResult>, u64)>,
}

impl ProxyStore {
    /// An empty store with these bounds, numbered by `ids`.
    pub fn new(ids: Arc<IdNumbers>, max_records: u32, max_chars: u64) -> Self {
        ProxyStore { ids, max_records, max_chars, state: Mutex::new((0, VecDeque::new(), 0)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u32, VecDeque<StoredResult>, u64)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ResultStore for ProxyStore {
    /// `finish` gets the next number of the per-user counter (not this
    /// store's count + 1); a number `finish` does not use is skipped.
    fn push(&self, finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError> {
        let mut state = self.lock();
        if let Some(record) = finish(self.ids.next()) {
            state.0 = state.0.saturating_add(1);
            let chars = state.2 + record.chars;
            state.1.push_back(record);
            state.2 = evict_oldest(&mut state.1, chars, self.max_records, self.max_chars);
        }
        Ok(())
    }

    fn find(&self, id: &str) -> Result<Option<StoredResult>, StoreError> {
        Ok(self.lock().1.iter().find(|r| r.id == id).cloned())
    }

    /// Results this proxy stored (its ids are not `P1…P{count}`).
    fn count(&self) -> Result<u32, StoreError> {
        Ok(self.lock().0)
    }

    /// The per-user counter's next number ([`IdNumbers::peek`]), not `count + 1`.
    fn next_number(&self) -> Result<u32, StoreError> {
        Ok(self.ids.peek())
    }

    fn records(&self) -> Result<Vec<StoredResult>, StoreError> {
        Ok(self.lock().1.iter().cloned().collect())
    }
}

/// The counter file's value + 1, read under a shared lock (never through a link).
fn peek(path: &Path) -> std::io::Result<u32> {
    let mut file: File = match OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK).open(path) {
        Ok(file) => file,
        // No counter yet: `bump` creates it empty, read as 0.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(1),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("the id counter is not a regular file"));
    }
    file.lock_shared()?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    file.unlock()?;
    counter_value(&text)?.checked_add(1).ok_or_else(spent)
}

/// The counter's value: an empty (new) file is 0; anything but a decimal
/// number is an error, so the clock-derived local numbers serve — never a
/// restart at 1, which would hand out `P1` again (an id means one text).
fn counter_value(text: &str) -> std::io::Result<u32> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse::<u32>().map_err(|_| std::io::Error::other("the id counter does not hold a number"))
}

fn spent() -> std::io::Error {
    std::io::Error::other("the id counter is spent")
}

fn bump(path: &Path) -> std::io::Result<u32> {
    // Never through a symbolic link planted at the counter (issue 27 §5): it
    // would truncate the link's target. Then the process-local numbers serve.
    let mut file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("the id counter is not a regular file"));
    }
    file.lock()?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let next = counter_value(&text)?.checked_add(1).ok_or_else(spent)?;
    // Written in place at a fixed width, never truncated first: a write cut
    // short leaves the new number's first digits on the old one's last, a
    // number no smaller than the old one — never an empty file read as 0.
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{next:010}\n").as_bytes())?;
    file.sync_data().ok();
    file.unlock()?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn root(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("toolprune-ids-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        p
    }

    /// A tester's counters: a damaged or spent file never restarts the ids
    /// at `P1` (which old markers still name); the clock-derived local
    /// numbers serve instead, and they are large.
    #[test]
    fn a_damaged_or_spent_counter_never_restarts_at_one() {
        for damaged in ["abc", "-1", "4294967295", "18446744073709551615", "12x"] {
            let dir = root("damaged");
            fs::create_dir_all(&dir).unwrap();
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
            fs::write(dir.join(COUNTER_FILE), damaged).unwrap();
            let ids = IdNumbers::new(Some(&dir));
            let (peeked, next) = (ids.peek(), ids.next());
            assert!(peeked > 1000 && next > 1000, "{damaged}: {peeked}, {next}");
            assert_eq!(ids.next(), next + 1, "{damaged}");
            assert_eq!(fs::read_to_string(dir.join(COUNTER_FILE)).unwrap(), damaged, "left as it was");
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn a_fresh_counter_peeks_the_number_it_then_gives() {
        // Else the first result of every new proxy is finished twice (its peeked number moved).
        let dir = root("fresh");
        let ids = IdNumbers::new(Some(&dir));
        assert_eq!(ids.peek(), 1);
        assert_eq!(ids.next(), 1);
        assert_eq!(ids.peek(), 2);
        assert_eq!(ids.next(), 2);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_counter_is_written_at_a_fixed_width_and_reads_older_files() {
        let dir = root("width");
        let ids = IdNumbers::new(Some(&dir));
        assert_eq!(ids.next(), 1);
        assert_eq!(fs::read_to_string(dir.join(COUNTER_FILE)).unwrap(), "0000000001\n");
        fs::write(dir.join(COUNTER_FILE), "41\n").unwrap();
        assert_eq!(ids.next(), 42);
        assert_eq!(fs::read_to_string(dir.join(COUNTER_FILE)).unwrap(), "0000000042\n");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn two_counters_on_one_file_never_hand_out_the_same_number() {
        let dir = root("shared");
        let a = IdNumbers::new(Some(&dir));
        let b = IdNumbers::new(Some(&dir));
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let threads: Vec<_> = [a, b]
            .into_iter()
            .map(|c| std::thread::spawn(move || (0..200).map(|_| c.next()).collect::<Vec<_>>()))
            .collect();
        let mut all: Vec<u32> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 400);
        assert_eq!(*all.first().unwrap(), 1);
        assert_eq!(IdNumbers::new(Some(&dir)).peek(), 401, "peek names the next number");
        assert_eq!(IdNumbers::new(Some(&dir)).next(), 401, "a restarted proxy continues");
        assert_eq!(IdNumbers::new(Some(&dir)).peek(), 402, "and takes none");
        fs::remove_dir_all(&dir).unwrap();
    }

    fn record(n: u32, chars: u64) -> StoredResult {
        StoredResult { id: format!("P{n}"), chars, call: None, data: String::new() }
    }

    #[test]
    fn the_store_numbers_from_the_counter_and_keeps_the_newest_within_its_bounds() {
        let dir = root("store");
        let ids = IdNumbers::new(Some(&dir));
        for _ in 0..5 {
            ids.next();
        }
        let store = ProxyStore::new(ids, 3, 1_000);
        for _ in 0..4 {
            store.push(&mut |n| Some(record(n, 10))).unwrap();
        }
        store.push(&mut |_| None).unwrap();
        let held: Vec<String> = store.records().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(held, ["P7", "P8", "P9"], "numbers continue the user's counter; the oldest is evicted");
        assert!(store.find("P6").unwrap().is_none());
        assert_eq!(store.count().unwrap(), 4);
        let store = ProxyStore::new(IdNumbers::new(Some(&dir)), 10, 25);
        store.push(&mut |n| Some(record(n, 20))).unwrap();
        store.push(&mut |n| Some(record(n, 20))).unwrap();
        assert_eq!(store.records().unwrap().len(), 1, "the character bound holds");
        assert_eq!(store.records().unwrap()[0].id, "P12", "P10 went to the `None` push above");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_symlink_planted_at_the_counter_is_not_followed_and_ids_still_never_repeat() {
        let dir = root("link");
        let ids = IdNumbers::new(Some(&dir));
        let outside = std::env::temp_dir().join(format!("toolprune-ids-{}-outside", std::process::id()));
        fs::write(&outside, "someone else's file\n").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(COUNTER_FILE)).unwrap();
        let (a, b) = (ids.next(), ids.next());
        assert_ne!(a, b);
        assert_eq!(fs::read_to_string(&outside).unwrap(), "someone else's file\n", "the link's target is untouched");
        fs::remove_file(&outside).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_root_open_to_others_is_not_used() {
        let dir = root("open");
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let ids = IdNumbers::new(Some(&dir));
        let n = ids.next();
        assert!(!dir.join(COUNTER_FILE).exists());
        assert_eq!(ids.next(), n + 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
