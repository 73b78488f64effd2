//! The hook runtime that every agent adapter (the `agents` module) runs on: one
//! event on stdin, one answer on stdout (SPEC §15; docs/hooks.md). It knows
//! no agent: the adapters know the event shapes and the answers, this module
//! knows the store, the configuration, the scorer, pruning one text,
//! answering `omitted`, the log file, and how to read stdin safely.
//!
//! **Fail-open** is split in two: the adapter's dispatcher
//! (the `agents` module's `run`) turns every error and panic into the agent's "no
//! change" answer; [`serve`] reads the event so that the agent's write never
//! meets a closed pipe, however large the event, prints the answer, and exits
//! 0 with nothing on stderr. Diagnostics go to the store's log file
//! (`<root>/toolprune.log`), counts only.

pub mod common;

use std::io::{Read, Write as _};
use std::time::Duration;

use toolprune::Pruner;

pub use common::{Answer, Hook, Pass, Pruned, Via};

/// Stdin beyond this many bytes is not parsed: the event is answered "no
/// change" (after [`drain`]ing the rest).
pub const MAX_INPUT_BYTES: u64 = common::MAX_INPUT_BYTES;

/// How long [`serve`] keeps reading an oversized event before it answers
/// anyway: 5 s. An agent writes the event before it reads the answer, so a
/// hook that stops reading early makes the agent's write fail (EPIPE) and
/// the agent report the hook as failed; a writer that never closes stdin
/// must not hold the hook past its timeout either.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// What a hook run needs from outside: the environment and the component.
pub struct Context<'a> {
    /// Reads one environment variable (the process's, or a test's).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Loads the component (the process-wide [`Pruner::shared`], or a test's).
    pub load: &'a dyn Fn() -> Result<Pruner, String>,
}

impl Context<'static> {
    /// The process environment and the built-in component (disk-cached).
    pub fn process() -> Self {
        Context {
            env: &|name| std::env::var(name).ok(),
            load: &|| Pruner::shared().cloned().map_err(|e| format!("{e:#}")),
        }
    }
}

/// Reads the event: at most `limit` bytes of `input`, then — when there is
/// more — discards the rest until end of input or until `deadline` has
/// passed (the reading goes on in a thread that is left behind then).
/// Returns the bytes when the whole event fit in `limit`, `None` when it did
/// not or could not be read (the caller answers "no change").
pub fn read_event<R: Read + Send + 'static>(mut input: R, limit: u64, deadline: Duration) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    match (&mut input).take(limit).read_to_end(&mut bytes) {
        Ok(n) if (n as u64) < limit => return Some(bytes),
        Ok(_) => {}
        Err(_) => {
            drain(input, deadline);
            return None;
        }
    }
    // Exactly `limit` bytes so far: the event fits only if nothing follows.
    let mut probe = [0u8; 1];
    loop {
        match input.read(&mut probe) {
            Ok(0) => return Some(bytes),
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    drain(input, deadline);
    None
}

/// Discards `input` until its end, for at most `deadline`.
pub fn drain<R: Read + Send + 'static>(mut input: R, deadline: Duration) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut input, &mut std::io::sink());
        let _ = done.send(());
    });
    let _ = finished.recv_timeout(deadline);
}

/// `toolprune hook AGENT` as a process: reads stdin ([`read_event`] with
/// [`MAX_INPUT_BYTES`] and [`DRAIN_LIMIT`]), prints `answer(event)` — or
/// `pass` when the event was too large or unreadable — on stdout, exits 0.
/// Panic messages are silenced (a panic is answered "no change" by the
/// dispatcher; Gemini CLI would read a message on stderr as the answer).
pub fn serve(pass: &str, answer: impl FnOnce(&[u8]) -> String) -> std::process::ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let text = match read_event(std::io::stdin(), MAX_INPUT_BYTES, DRAIN_LIMIT) {
        Some(input) => answer(&input),
        None => pass.to_string(),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader of `len` bytes that counts what was read of it.
    struct Counted {
        left: u64,
        read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.left) as usize;
            buf[..n].fill(b' ');
            self.left -= n as u64;
            self.read.fetch_add(n as u64, std::sync::atomic::Ordering::SeqCst);
            Ok(n)
        }
    }

    fn counted(len: u64) -> (Counted, std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        (Counted { left: len, read: read.clone() }, read)
    }

    #[test]
    fn an_event_that_fits_is_returned_whole_even_at_the_limit() {
        for len in [0, 1, 99, 100] {
            let (input, _) = counted(len);
            assert_eq!(read_event(input, 100, DRAIN_LIMIT).map(|b| b.len() as u64), Some(len));
        }
    }

    #[test]
    fn an_oversized_event_is_refused_and_read_to_its_end() {
        let (input, read) = counted(1_000_001);
        assert_eq!(read_event(input, 100, DRAIN_LIMIT), None);
        assert_eq!(read.load(std::sync::atomic::Ordering::SeqCst), 1_000_001, "every byte was read");
    }

    /// Never ends: the drain gives up at its deadline.
    struct Endless;

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(Duration::from_millis(1));
            buf[0] = b'x';
            Ok(1)
        }
    }

    #[test]
    fn a_drain_that_never_ends_gives_up_at_its_deadline() {
        let started = std::time::Instant::now();
        assert_eq!(read_event(Endless, 10, Duration::from_millis(300)), None);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "{took:?}");
    }
}
