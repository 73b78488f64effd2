//! A conversation with a store of its own ([`ResultStore`]): ids come from
//! the store's counter, records go to it, `omitted` reads from it, and a
//! store that fails makes the conversation fail open (reason `store`).

use std::sync::{Arc, Mutex};

use toolprune::types::{OmittedOutcome, Outcome, StoredResult};
use toolprune::{CapturedLog, ConversationOptions, MemoryStore, Pruner, ResultStore, Scoring, StoreError, ToolResult};

const REQUEST: &str = "How does a client resume a broken Streamable HTTP SSE stream? Which header carries the last event ID?";

/// A page whose paragraphs mostly miss the request: the stub drops some.
fn page() -> String {
    let mut text = String::new();
    for i in 0..60 {
        if i % 5 == 0 {
            text.push_str(&format!("Paragraph {i}: the client resumes a broken SSE stream with the Last-Event-ID header after reconnecting.\n\n"));
        } else {
            text.push_str(&format!("Paragraph {i}: gardening notes about tomatoes, basil and the weather in early spring, nothing else here.\n\n"));
        }
    }
    text
}

fn pruner() -> &'static Pruner {
    Pruner::shared().expect("the toolprune component loads")
}

/// A store that starts its counter at `start` and records every push.
struct Shared {
    inner: MemoryStore,
    start: u32,
    pushes: Mutex<Vec<u32>>,
}

impl ResultStore for Shared {
    fn push(&self, finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError> {
        let start = self.start;
        let pushes = &self.pushes;
        self.inner.push(&mut |n| {
            pushes.lock().unwrap().push(n + start);
            finish(n + start)
        })
    }
    fn find(&self, id: &str) -> Result<Option<StoredResult>, StoreError> {
        self.inner.find(id)
    }
    fn count(&self) -> Result<u32, StoreError> {
        Ok(self.inner.count()? + self.start)
    }
    fn records(&self) -> Result<Vec<StoredResult>, StoreError> {
        self.inner.records()
    }
}

/// A store whose reads and writes all fail (a disk store gone unreadable).
struct Broken;

impl ResultStore for Broken {
    fn push(&self, _finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError> {
        Err(StoreError("permission denied".to_string()))
    }
    fn find(&self, _id: &str) -> Result<Option<StoredResult>, StoreError> {
        Err(StoreError("permission denied".to_string()))
    }
    fn count(&self) -> Result<u32, StoreError> {
        Err(StoreError("permission denied".to_string()))
    }
    fn records(&self) -> Result<Vec<StoredResult>, StoreError> {
        Err(StoreError("permission denied".to_string()))
    }
}

/// Keeps the record but fails afterwards (a disk that filled up while writing).
struct FailsAfterFinish;

impl ResultStore for FailsAfterFinish {
    fn push(&self, finish: &mut dyn FnMut(u32) -> Option<StoredResult>) -> Result<(), StoreError> {
        let _ = finish(1);
        Err(StoreError("no space left on device".to_string()))
    }
    fn find(&self, _id: &str) -> Result<Option<StoredResult>, StoreError> {
        Ok(None)
    }
    fn count(&self) -> Result<u32, StoreError> {
        Ok(0)
    }
    fn records(&self) -> Result<Vec<StoredResult>, StoreError> {
        Ok(Vec::new())
    }
}

fn options(store: Arc<dyn ResultStore>, log: Arc<CapturedLog>) -> ConversationOptions {
    ConversationOptions {
        enabled: true,
        scoring: Some(Scoring::Stub),
        agent: "test".to_string(),
        store: Some(store),
        log,
        ..ConversationOptions::default()
    }
}

#[test]
fn ids_come_from_the_stores_counter_and_omitted_reads_the_store() {
    let store = Arc::new(Shared { inner: MemoryStore::new(10, 1_000_000), start: 6, pushes: Mutex::new(Vec::new()) });
    let log = Arc::new(CapturedLog::new());
    let conversation = pruner().conversation(options(store.clone(), log.clone())).unwrap();
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", page()));
    assert_eq!(result.outcome, Outcome::Ok, "{:?}", result.log_line);
    assert_eq!(result.id.as_deref(), Some("P7"), "the store's counter + 1");
    assert!(result.body.contains("id=P7"));
    assert_eq!(*store.pushes.lock().unwrap(), [7]);
    assert_eq!(conversation.count(), 7);
    let stored = store.find("P7").unwrap().expect("the record went to the store");
    let first = stored.dropped[0].index;
    let answer = conversation.omitted(&format!(r#"{{"id": "P7", "from": {first}, "to": {first}}}"#));
    assert_eq!(answer.outcome, Some(OmittedOutcome::Ok));
    assert_eq!(answer.text, stored.dropped[0].text);
}

#[test]
fn a_store_that_cannot_be_read_passes_the_text_unchanged_with_reason_store() {
    let log = Arc::new(CapturedLog::new());
    let conversation = pruner().conversation(options(Arc::new(Broken), log.clone())).unwrap();
    let text = page();
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", text.clone()));
    assert_eq!(result.outcome, Outcome::Failed);
    assert_eq!(&*result.body, text.as_str());
    assert!(result.unchanged());
    assert_eq!(result.id, None);
    assert_eq!(result.failure.as_ref().map(|f| f.reason_name()).as_deref(), Some("store"));
    assert_eq!(log.lines(), ["tool prune: agent=test name=fetch outcome=failed reason=store"]);
    let answer = conversation.omitted(r#"{"id": "P1", "from": 0, "to": 3}"#);
    assert_eq!(answer.outcome, None, "failed");
    assert!(answer.text.contains("try again") || answer.text.contains("again"), "{}", answer.text);
    assert_eq!(log.lines()[1], "tool omitted: agent=test outcome=failed reason=store");
}

#[test]
fn a_record_the_store_could_not_keep_never_hands_out_its_id() {
    let log = Arc::new(CapturedLog::new());
    let conversation = pruner().conversation(options(Arc::new(FailsAfterFinish), log.clone())).unwrap();
    let text = page();
    let result = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", text.clone()));
    assert_eq!(result.outcome, Outcome::Failed);
    assert_eq!(&*result.body, text.as_str(), "no marker pointing at a record that does not exist");
    assert_eq!(log.lines(), ["tool prune: agent=test name=fetch outcome=failed reason=store"]);
    // The conversation goes on: the next result still prunes (with a working store it would store).
    let again = conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", text));
    assert_eq!(again.outcome, Outcome::Failed);
}

#[test]
fn the_default_store_is_in_memory_with_the_given_bounds() {
    let conversation = pruner()
        .conversation(ConversationOptions {
            enabled: true,
            scoring: Some(Scoring::Stub),
            max_records: Some(1),
            log: Arc::new(CapturedLog::new()),
            ..ConversationOptions::default()
        })
        .unwrap();
    for _ in 0..3 {
        conversation.turn(REQUEST).on_tool_result(ToolResult::prunable("fetch", page()));
    }
    assert_eq!(conversation.count(), 3);
    let ids: Vec<String> = conversation.stored().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["P3"]);
    assert!(conversation.store().find("P1").unwrap().is_none());
}
