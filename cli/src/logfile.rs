//! The log file every door writes (SPEC §12, issue 25 §3): one file in the
//! store root, counts only, bounded and private. `toolprune stats` reads it
//! back ([`read`]).
//!
//! ```text
//! <store root>/toolprune.log       the current file, 0600
//! <store root>/toolprune.log.1     the previous one … up to toolprune.log.{ROTATED}
//!
//! <unix seconds> [session=TAG] [id=Pn] LINE
//! 1767312000 session=3f2a9c0d1e4b5a69 id=P2 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok shape=text raw_chars=…
//! 1767312004 session=3f2a9c0d1e4b5a69 tool omitted: agent=claude-code id=P2 from=3 to=7 chars=1204 outcome=ok
//! ```
//!
//! - **One writer** ([`LogFile`]): the hooks, `toolprune mcp`,
//!   `toolprune mcp-proxy` and `toolprune prune` all append through it.
//!   `LINE` is the guest's line as it gave it (`tool prune:`, `tool
//!   omitted:`, a host's failure line) or a door's own (`hook:`, `mcp:`);
//!   the writer only puts the time and what it knows in front: the
//!   session's tag ([`crate::store::Session::tag`], a hash, never the
//!   agent's session id) and, on a `tool prune:` line with a stored result,
//!   its id, so that a later `tool omitted:` line of the same session names
//!   the result it read back. Lines written by older versions have only the
//!   time; they still read.
//! - **Bounded**: before a write would take the file past [`MAX_BYTES`] it
//!   is renamed `toolprune.log.1` (the older ones shift up, the one past
//!   [`ROTATED`] is deleted): at most `(ROTATED + 1) × MAX_BYTES` bytes, plus
//!   one line. These two numbers are the only rotation rule; every door
//!   uses them from here.
//! - **Private**: created `0600` (a file found wider is narrowed), never
//!   opened through a symbolic link (`O_NOFOLLOW`), refused when it is not
//!   a regular file of this user (issue 27 §5). Nothing is written outside
//!   the root.
//! - **Concurrent**: hook processes of several sessions write at once; each
//!   line is one `write` in append mode, under the file's `flock` (waited
//!   for at most [`LOCK_WAIT`]), and a writer that finds the file rotated
//!   under it opens the new one.
//!
//! Writing never fails a door: [`LogFile::write`] returns the error for
//! tests, the [`LogSink`] ignores it.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use toolprune::{LogSink, OmittedAnswer, PruneResult};

use crate::store::{Root, Session};

/// The file's name in the store root.
pub const FILE_NAME: &str = "toolprune.log";

/// A file is rotated before a write would take it past this many bytes.
pub const MAX_BYTES: u64 = 1 << 20;

/// Rotated files kept (`toolprune.log.1` … `toolprune.log.4`).
pub const ROTATED: u32 = 4;

/// How long a writer waits for another writer's lock before it appends
/// without it (an append of one line is still one `write`).
pub const LOCK_WAIT: Duration = Duration::from_secs(1);

/// A file larger than this is read only up to it by [`read`] (a file of
/// this version holds at most [`MAX_BYTES`] plus a line).
pub const MAX_READ_BYTES: u64 = 64 << 20;

/// Appends lines to `<root>/toolprune.log` (see the module's doc). Cheap to
/// make; holds no open file.
#[derive(Clone, Debug)]
pub struct LogFile {
    dir: PathBuf,
    session: Option<String>,
}

/// `[A-Za-z0-9_-]`, at most 64 characters; `-` when empty.
fn field(value: &str) -> String {
    let v: String = value.chars().take(64).map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if v.is_empty() { "-".to_string() } else { v }
}

/// One line stays one line: control characters become `_`.
fn one_line(line: &str) -> String {
    line.chars().map(|c| if c.is_control() { '_' } else { c }).collect()
}

impl LogFile {
    /// The log of a store root.
    pub fn new(root: &Root) -> Self {
        LogFile { dir: root.path().to_path_buf(), session: None }
    }

    /// The log of the root the environment names, only if that root exists
    /// already (`toolprune prune`: a text command creates no directory).
    pub fn existing(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let dir = Root::default_dir(env)?;
        Root::existing(dir).ok().flatten().map(|root| LogFile::new(&root))
    }

    /// The same log, its lines tagged with `session`'s tag.
    pub fn for_session(mut self, session: &Session) -> Self {
        self.session = Some(session.tag());
        self
    }

    /// The same log, its lines tagged with `tag` (`[A-Za-z0-9_-]`; other
    /// characters become `_`).
    pub fn with_tag(mut self, tag: &str) -> Self {
        self.session = Some(field(tag));
        self
    }

    /// The current file (`<root>/toolprune.log`).
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// Writes the line of one pruned result (`result.log_line`; none for a
    /// result stopped by a cheap gate), with the stored id when it has one.
    pub fn prune_result(&self, result: &PruneResult) {
        if let Some(line) = &result.log_line {
            let _ = self.write(result.id.as_deref(), line);
        }
    }

    /// Writes the `tool omitted:` line of one answer.
    pub fn omitted_answer(&self, answer: &OmittedAnswer) {
        let _ = self.write(None, &answer.log_line);
    }

    /// Appends `line` with the time, the session's tag and `id` in front.
    /// Errors: the file is a symbolic link or not this user's regular file,
    /// it cannot be opened, rotated or written.
    pub fn write(&self, id: Option<&str>, line: &str) -> std::io::Result<()> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut text = now.to_string();
        if let Some(tag) = &self.session {
            text.push_str(" session=");
            text.push_str(tag);
        }
        if let Some(id) = id {
            text.push_str(" id=");
            text.push_str(&field(id));
        }
        text.push(' ');
        text.push_str(&one_line(line));
        text.push('\n');
        self.append(text.as_bytes())
    }

    fn append(&self, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.path();
        // Each round either writes, or finds the file rotated (by us or by
        // another writer) and opens the new one.
        for _ in 0..4 {
            let file = open_private(&path, true)?;
            let _lock = lock(&file);
            if !still_at(&file, &path)? {
                continue;
            }
            let len = file.metadata()?.len();
            if len > 0 && len + bytes.len() as u64 > MAX_BYTES {
                rotate(&self.dir)?;
                continue;
            }
            return (&file).write_all(bytes);
        }
        Err(std::io::Error::other(format!("{} kept moving", path.display())))
    }
}

impl LogSink for LogFile {
    fn line(&self, line: &str) {
        let _ = self.write(None, line);
    }
}

/// Opens `path` without following a symbolic link: for appending
/// (`create`: made `0600` if missing), else for reading. Errors: a link
/// (`ELOOP`), not a regular file, another user's file.
fn open_private(path: &Path, create: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    if create {
        options.append(true).create(true);
    } else {
        options.read(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK: a FIFO planted at the path never blocks the open.
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        // SAFETY: geteuid has no preconditions and cannot fail.
        if meta.uid() != unsafe { libc::geteuid() } {
            return Err(std::io::Error::other(format!("{} belongs to another user", path.display())));
        }
        if create && meta.mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(file)
}

/// The file's exclusive lock, waited for at most [`LOCK_WAIT`]; none when
/// it could not be had (the write goes on: one append is one `write`).
fn lock(file: &File) -> Option<Locked<'_>> {
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Some(Locked(file)),
            Err(fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => return None,
        }
    }
}

struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Whether the open `file` is still the one at `path` (not rotated away).
fn still_at(file: &File, path: &Path) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let open = file.metadata()?;
        match fs::symlink_metadata(path) {
            Ok(now) => Ok(now.dev() == open.dev() && now.ino() == open.ino()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        Ok(true)
    }
}

/// `toolprune.log.{n}`.
fn rotated(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("{FILE_NAME}.{n}"))
}

/// Drops the oldest file, shifts the others up, and makes the current one
/// `toolprune.log.1`. Renames move links, never follow them.
fn rotate(dir: &Path) -> std::io::Result<()> {
    let gone = |r: std::io::Result<()>| match r {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    };
    gone(fs::remove_file(rotated(dir, ROTATED)))?;
    for n in (1..ROTATED).rev() {
        gone(fs::rename(rotated(dir, n), rotated(dir, n + 1)))?;
    }
    gone(fs::rename(dir.join(FILE_NAME), rotated(dir, 1)))
}

/// Every file of the log in a store root directory, oldest first: the
/// rotated ones that exist, then the current one.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = (1..=ROTATED).rev().map(|n| rotated(dir, n)).collect();
    out.push(dir.join(FILE_NAME));
    out.retain(|p| fs::symlink_metadata(p).is_ok());
    out
}

/// The log as [`read`] found it.
#[derive(Debug, Default)]
pub struct LogText {
    /// Complete lines (without their `\n`), oldest first.
    pub lines: Vec<String>,
    /// Lines that were not UTF-8, or a last line without its `\n` (a write
    /// cut short, or one still in progress).
    pub broken: usize,
    /// Files that were refused (a link, not a regular file, another
    /// user's), with why.
    pub refused: Vec<String>,
    /// Bytes read.
    pub bytes: u64,
}

/// Reads every file of the log in `dir` ([`files`]), each opened without
/// following links and at most [`MAX_READ_BYTES`] of it. Never fails: what
/// cannot be read is counted in [`LogText::refused`] or [`LogText::broken`].
pub fn read(dir: &Path) -> LogText {
    let mut out = LogText::default();
    for path in files(dir) {
        let mut bytes = Vec::new();
        let read = open_private(&path, false).and_then(|f| f.take(MAX_READ_BYTES).read_to_end(&mut bytes));
        if let Err(e) = read {
            out.refused.push(format!("{}: {e}", path.display()));
            continue;
        }
        out.bytes += bytes.len() as u64;
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let (line, complete) = match rest.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    let line = &rest[..at];
                    rest = &rest[at + 1..];
                    (line, true)
                }
                None => {
                    let line = rest;
                    rest = &[];
                    (line, false)
                }
            };
            match std::str::from_utf8(line) {
                Ok(text) if complete => out.lines.push(text.to_string()),
                _ => out.broken += 1,
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, Root) {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::at(tmp.path().join("store")).unwrap();
        (tmp, root)
    }

    #[test]
    fn a_line_carries_the_time_the_session_tag_and_the_id_in_front_of_the_line_as_given() {
        let (_tmp, root) = root();
        let log = LogFile::new(&root).with_tag("3f2a9c0d1e4b5a69");
        log.write(Some("P2"), "tool prune: agent=a name=t outcome=ok").unwrap();
        log.write(None, "tool omitted: agent=a id=P2 from=1 to=2 chars=10 outcome=ok").unwrap();
        LogFile::new(&root).write(None, "hook: two\nlines").unwrap();
        let text = read(root.path());
        assert_eq!(text.lines.len(), 3);
        let (time, rest) = text.lines[0].split_once(' ').unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert!(time.parse::<u64>().unwrap().abs_diff(now) < 60);
        assert_eq!(rest, "session=3f2a9c0d1e4b5a69 id=P2 tool prune: agent=a name=t outcome=ok");
        assert!(text.lines[1].ends_with(" session=3f2a9c0d1e4b5a69 tool omitted: agent=a id=P2 from=1 to=2 chars=10 outcome=ok"));
        assert!(text.lines[2].ends_with(" hook: two_lines"), "one line stays one line: {}", text.lines[2]);
        assert_eq!(text.broken, 0);
    }

    #[test]
    fn the_log_rotates_by_size_and_keeps_a_bounded_number_of_files() {
        let (_tmp, root) = root();
        let log = LogFile::new(&root);
        let line = "x".repeat(999);
        let lines_per_file = MAX_BYTES / (line.len() as u64 + 12);
        let written = lines_per_file * u64::from(ROTATED + 3);
        for _ in 0..written {
            log.write(None, &line).unwrap();
        }
        let files = files(root.path());
        assert_eq!(files.len(), ROTATED as usize + 1, "{files:?}");
        assert!(!rotated(root.path(), ROTATED + 1).exists());
        for path in &files {
            assert!(fs::metadata(path).unwrap().len() <= MAX_BYTES, "{}", path.display());
        }
        let kept = read(root.path()).lines.len() as u64;
        assert!(kept < written && kept >= lines_per_file * u64::from(ROTATED), "kept {kept} of {written}");
    }

    #[cfg(unix)]
    #[test]
    fn files_are_0600_and_a_wider_file_is_narrowed() {
        use std::os::unix::fs::PermissionsExt as _;
        let (_tmp, root) = root();
        let log = LogFile::new(&root);
        log.write(None, "one").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&log.path()), 0o600);
        fs::set_permissions(log.path(), fs::Permissions::from_mode(0o644)).unwrap();
        log.write(None, "two").unwrap();
        assert_eq!(mode(&log.path()), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_log_is_refused_and_nothing_is_written_outside_the_root() {
        let (tmp, root) = root();
        let outside = tmp.path().join("outside");
        std::os::unix::fs::symlink(&outside, root.path().join(FILE_NAME)).unwrap();
        let log = LogFile::new(&root);
        assert!(log.write(None, "tool prune: agent=a name=t outcome=ok").is_err());
        log.line("tool prune: agent=a name=t outcome=ok");
        assert!(!outside.exists(), "the link's target was created");
        // A link to an existing file: not appended to either.
        fs::write(&outside, "theirs\n").unwrap();
        log.line("tool prune: agent=a name=t outcome=ok");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "theirs\n");
        // And the reader does not follow it.
        let text = read(root.path());
        assert!(text.lines.is_empty() && text.refused.len() == 1, "{text:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_among_the_rotated_files_is_moved_never_written_through() {
        let (tmp, root) = root();
        let outside = tmp.path().join("outside");
        fs::write(&outside, "theirs\n").unwrap();
        std::os::unix::fs::symlink(&outside, rotated(root.path(), 1)).unwrap();
        let log = LogFile::new(&root);
        let line = "y".repeat(4000);
        for _ in 0..(2 * MAX_BYTES / 4000 + 2) {
            log.write(None, &line).unwrap();
        }
        assert_eq!(fs::read_to_string(&outside).unwrap(), "theirs\n");
        assert!(fs::symlink_metadata(root.path().join(format!("{FILE_NAME}.3"))).unwrap().file_type().is_symlink());
    }

    #[test]
    fn a_truncated_last_line_and_bytes_that_are_not_utf8_are_counted_not_fatal() {
        let (_tmp, root) = root();
        fs::write(root.path().join(FILE_NAME), b"1 ok\n2 \xff\xfe bad\n3 cut sh").unwrap();
        let text = read(root.path());
        assert_eq!(text.lines, ["1 ok"]);
        assert_eq!(text.broken, 2);
    }

    #[test]
    fn concurrent_writers_never_mix_lines_or_lose_one() {
        let (_tmp, root) = root();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = LogFile::new(&root);
                std::thread::spawn(move || {
                    for i in 0..200 {
                        log.write(None, &format!("writer={t} line={i} {}", "z".repeat(1000))).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = read(root.path());
        assert_eq!(text.broken, 0);
        assert_eq!(text.lines.len(), 1600, "8 × 200 lines, across rotations");
        assert!(text.lines.iter().all(|l| l.ends_with(&"z".repeat(1000)) && l.matches("writer=").count() == 1));
    }
}
