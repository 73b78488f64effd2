//! Cancellation of a turn (SPEC §11: stop waiting at once, `cancelled`;
//! cancellation wins over the deadline).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Waker = Box<dyn Fn() + Send>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next_id: AtomicU64,
    wakers: Mutex<Vec<(u64, Waker)>>,
}

/// A cancellation flag shared by the host's turn and its scorer.
///
/// Cheap to clone (all clones are one flag). [`cancel`](Self::cancel) is
/// sticky: every later scoring call through a scorer holding this token
/// answers `cancelled` without sending anything, so make one token per turn.
/// A scoring call in progress is woken at once (no polling): it registers a
/// waker for as long as it waits.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: sets the flag and wakes every waiting scoring call. Safe to
    /// call from any thread (e.g. a Ctrl-C handler thread), any number of times.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let wakers = self.0.wakers.lock().unwrap_or_else(|e| e.into_inner());
        for (_, wake) in wakers.iter() {
            wake();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Calls `wake` on cancellation until the returned guard is dropped.
    /// Check [`is_cancelled`](Self::is_cancelled) *after* subscribing: a
    /// cancellation that came before is not replayed.
    pub(crate) fn subscribe(&self, wake: impl Fn() + Send + 'static) -> Subscription {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
        self.0
            .wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, Box::new(wake)));
        Subscription {
            token: self.clone(),
            id,
        }
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Removes its waker from the token when dropped.
pub(crate) struct Subscription {
    token: CancelToken,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.token
            .0
            .wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::CancelToken;
    use std::sync::mpsc;

    #[test]
    fn cancel_wakes_subscribers_until_they_unsubscribe() {
        let token = CancelToken::new();
        let (tx, rx) = mpsc::channel();
        let sub = token.subscribe(move || {
            let _ = tx.send(());
        });
        token.clone().cancel();
        assert!(token.is_cancelled());
        assert!(rx.try_recv().is_ok());
        drop(sub);
        token.cancel();
        assert!(rx.try_recv().is_err(), "no waker after the guard is dropped");
    }
}
