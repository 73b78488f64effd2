//! Where a [`crate::Conversation`] keeps its id counter and its pruned
//! results (SPEC §10): the [`ResultStore`] trait, and [`MemoryStore`], the
//! default (in process, bounded, oldest evicted first).
//!
//! A store is mechanism: it never looks inside a record except for its `id`
//! (to find it), `chars` (what it weighs against the bounds) and `call` (the
//! repeat gate's key, handed back by [`ResultStore::calls`]). Agents that
//! run every hook as a separate process keep the same semantics on disk
//! (the `toolprune` CLI's session store implements this trait), so a
//! conversation's ids stay unique across processes.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::types::StoredResult;

/// Why a store could not give the next id, keep a record or read one (an
/// on-disk store: unreadable, locked, full, corrupt). The conversation then
/// fails open: the text goes to the model unchanged (outcome `failed`,
/// reason `store`), or `omitted` answers "unavailable". The message is for
/// diagnosis only and must not carry document text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError(e.to_string())
    }
}

/// A conversation's id counter and bounded store of pruned results.
///
/// The counter is the number of results ever stored in the conversation:
/// never reset per turn, never decremented, not lowered by eviction, so an
/// id (`P{n}`) names one text for the conversation's whole life.
/// Implementations must be safe to share between threads (and, for on-disk
/// stores, between processes of one conversation).
pub trait ResultStore: Send + Sync {
    /// Atomically with respect to every other `push` of this conversation:
    /// calls `finish` once with the counter + 1; if it returns a record,
    /// stores it, sets the counter to that number, and evicts the oldest
    /// records until the store's bounds hold. If it returns none, nothing
    /// changes (the number is not used).
    ///
    /// Errors: the counter could not be read (then `finish` was not called)
    /// or the record could not be kept (then the caller must not hand out
    /// the id: the conversation fails open).
    fn push(&self, finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError>;

    /// The stored record with this `id` (as the guest's `omitted.requested-id`
    /// gives it: `P3`); none when it was never stored or has been evicted.
    fn find(&self, id: &str) -> Result<Option<StoredResult>, StoreError>;

    /// The counter (results stored so far; the next id is `P{count + 1}`).
    fn count(&self) -> Result<u32, StoreError>;

    /// The number the next [`push`](Self::push) will most likely give
    /// `finish` (default `count + 1`): a guess, since another push may come
    /// first. The conversation's import form prunes with this number before
    /// the scorer runs, and finishes the result again only when `push`
    /// gives another (`conversation` module). A store that numbers in its
    /// own way (not `count + 1`) should answer its own next number here.
    fn next_number(&self) -> Result<u32, StoreError> {
        Ok(self.count()?.saturating_add(1))
    }

    /// The records held, oldest first.
    fn records(&self) -> Result<Vec<StoredResult>, StoreError>;

    /// The call keys (`stored-result.call`: a digest of a tool's name and
    /// canonical arguments, never the arguments) of the records held, oldest
    /// first; records stored without one are left out. The conversation
    /// passes them to the guest for the repeat gate (SPEC §2: the same call
    /// after a pruned result passes unpruned); an evicted record no longer
    /// counts. The default reads [`records`](Self::records); a store that
    /// keeps an index (on disk) should answer from it.
    fn calls(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.records()?.into_iter().filter_map(|r| r.call).collect())
    }
}

struct Memory {
    count: u32,
    records: VecDeque<StoredResult>,
    chars: u64,
}

/// The default store: in process memory, at most `max_records` records and
/// `max_chars` characters of dropped text (the records' `chars`), the oldest
/// evicted first. Never fails.
pub struct MemoryStore {
    max_records: u32,
    max_chars: u64,
    state: Mutex<Memory>,
}

impl MemoryStore {
    /// An empty store with these bounds.
    pub fn new(max_records: u32, max_chars: u64) -> Self {
        MemoryStore { max_records, max_chars, state: Mutex::new(Memory { count: 0, records: VecDeque::new(), chars: 0 }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Evicts the oldest of `records` until at most `max_records` remain and
/// their `chars` sum to at most `max_chars`; returns the new sum. Shared by
/// every store so that bounds mean the same everywhere.
pub fn evict_oldest(records: &mut VecDeque<StoredResult>, mut chars: u64, max_records: u32, max_chars: u64) -> u64 {
    while records.len() > max_records as usize || chars > max_chars {
        match records.pop_front() {
            Some(old) => chars = chars.saturating_sub(old.chars),
            None => break,
        }
    }
    chars
}

impl ResultStore for MemoryStore {
    fn push(&self, finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError> {
        let mut state = self.lock();
        let number = state.count.saturating_add(1);
        if let Some(record) = finish(number) {
            state.count = number;
            let chars = state.chars + record.chars;
            state.records.push_back(record);
            state.chars = evict_oldest(&mut state.records, chars, self.max_records, self.max_chars);
        }
        Ok(())
    }

    fn find(&self, id: &str) -> Result<Option<StoredResult>, StoreError> {
        Ok(self.lock().records.iter().find(|r| r.id == id).cloned())
    }

    fn count(&self) -> Result<u32, StoreError> {
        Ok(self.lock().count)
    }

    fn records(&self) -> Result<Vec<StoredResult>, StoreError> {
        Ok(self.lock().records.iter().cloned().collect())
    }

    fn calls(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.lock().records.iter().filter_map(|r| r.call.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(number: u32, chars: u64) -> StoredResult {
        StoredResult { id: format!("P{number}"), chars, call: Some(format!("call{number}")), data: "x".repeat(chars as usize) }
    }

    #[test]
    fn call_keys_are_those_of_the_records_held_and_go_with_evicted_ones() {
        let store = MemoryStore::new(2, 1_000);
        store.push(&mut |n| Some(record(n, 10))).unwrap();
        store.push(&mut |n| Some(StoredResult { call: None, ..record(n, 10) })).unwrap();
        assert_eq!(store.calls().unwrap(), ["call1"], "a record without a key adds none");
        store.push(&mut |n| Some(record(n, 10))).unwrap();
        assert_eq!(store.calls().unwrap(), ["call3"], "P1 was evicted, and its key with it");
    }

    #[test]
    fn numbers_count_every_stored_result_and_none_is_reused_after_eviction() {
        let store = MemoryStore::new(2, 1_000);
        for _ in 0..4 {
            store.push(&mut |n| Some(record(n, 10))).unwrap();
        }
        assert_eq!(store.count().unwrap(), 4);
        let ids: Vec<String> = store.records().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["P3", "P4"], "the oldest evicted first");
        assert!(store.find("P1").unwrap().is_none());
        assert_eq!(store.find("P4").unwrap().unwrap().id, "P4");
    }

    #[test]
    fn a_finish_that_stores_nothing_leaves_the_counter() {
        let store = MemoryStore::new(10, 1_000);
        let mut seen = Vec::new();
        store.push(&mut |n| { seen.push(n); None }).unwrap();
        store.push(&mut |n| { seen.push(n); Some(record(n, 1)) }).unwrap();
        assert_eq!(seen, [1, 1]);
        assert_eq!(store.count().unwrap(), 1);
    }

    #[test]
    fn the_character_bound_evicts_the_oldest_until_it_holds() {
        let store = MemoryStore::new(10, 100);
        store.push(&mut |n| Some(record(n, 60))).unwrap();
        store.push(&mut |n| Some(record(n, 30))).unwrap();
        store.push(&mut |n| Some(record(n, 30))).unwrap();
        let ids: Vec<String> = store.records().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["P2", "P3"]);
    }
}
