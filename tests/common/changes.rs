//! What the table's change stream says a test's writes did: a subscriber of a
//! [`Hub`] over the store, reading from the moment it was made.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::common::records::Entity;
use futures::{Stream, StreamExt};
use itemgraph::live::{Change, Delivered, EventKind, Hub, LiveError, LiveOptions};
use itemgraph::store::Store;

type Changes = Pin<Box<dyn Stream<Item = Result<Delivered, LiveError>> + Send>>;

/// The store's changes from now on.
pub struct Watch {
    changes: Changes,
    _hub: Arc<Hub>,
}

/// Options for tests: the stream polled often, so a quiet moment is short.
pub fn test_options() -> LiveOptions {
    LiveOptions {
        poll: Duration::from_millis(100),
        ..LiveOptions::DEFAULT
    }
}

impl Watch {
    pub async fn new(store: &dyn Store) -> Watch {
        let hub = Hub::new(store.change_stream(), test_options());
        let changes = hub
            .subscribe(None, None, |_| true)
            .await
            .expect("the store has a change stream");
        Watch {
            changes: Box::pin(changes),
            _hub: hub,
        }
    }

    /// Every change from the last call on: waits (up to 20 s, for a loaded DynamoDB
    /// Local) for the first, then until the stream has been quiet for a moment.
    pub async fn changes(&mut self) -> Vec<Change> {
        self.gather(Duration::from_secs(20)).await
    }

    /// Asserts that no change comes within a second.
    pub async fn none(&mut self) {
        let got = self.gather(Duration::from_secs(1)).await;
        assert_eq!(summary(&got), Vec::<String>::new(), "no change");
    }

    async fn gather(&mut self, first: Duration) -> Vec<Change> {
        let mut out = Vec::new();
        loop {
            let wait = if out.is_empty() {
                first
            } else {
                Duration::from_millis(500)
            };
            match tokio::time::timeout(wait, self.changes.next()).await {
                Ok(Some(Ok(d))) => out.push((*d.change).clone()),
                Ok(Some(Err(e))) => panic!("the change stream failed: {e}"),
                Ok(None) | Err(_) => return out,
            }
        }
    }
}

/// `Created Ticket`, `Updated User` …: what changed, sorted.
pub fn summary(changes: &[Change]) -> Vec<String> {
    let mut out: Vec<String> = changes
        .iter()
        .map(|c| format!("{:?} {}", c.kind, type_of(c)))
        .collect();
    out.sort();
    out
}

/// The type of the item that changed, as stored.
pub fn type_of(c: &Change) -> &str {
    match c.item().get("Type") {
        Some(itemgraph::store::AttributeValue::S(t)) => t,
        _ => panic!("an untyped item changed: {c:?}"),
    }
}

/// The one change of an entity of type `ty`.
pub fn one_of<'a>(changes: &'a [Change], ty: &str) -> &'a Change {
    let of: Vec<&Change> = changes.iter().filter(|c| type_of(c) == ty).collect();
    assert_eq!(of.len(), 1, "one change of a {ty}: {:?}", summary(changes));
    of[0]
}

/// A change's images as the built-in design's typed records: the tests' own reading of
/// the built-in chart's items.
pub trait Decoded {
    /// The entity as the change left it (as it was, when deleted); `None` for an item of
    /// another design.
    fn entity(&self) -> Option<Entity>;
    fn entity_before(&self) -> Option<Entity>;
    fn entity_after(&self) -> Option<Entity>;
}

impl Decoded for Change {
    fn entity(&self) -> Option<Entity> {
        self.entity_after().or_else(|| self.entity_before())
    }
    fn entity_before(&self) -> Option<Entity> {
        self.before.clone().and_then(|i| Entity::from_item(i).ok())
    }
    fn entity_after(&self) -> Option<Entity> {
        self.after.clone().and_then(|i| Entity::from_item(i).ok())
    }
}

/// The entity after the change, which must be a `kind` change.
pub fn after(c: &Change, kind: EventKind) -> Entity {
    assert_eq!(c.kind, kind, "{c:?}");
    c.entity().expect("an entity")
}
