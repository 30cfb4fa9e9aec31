//! What the live updates carry: a [`Change`] of one item of the design, as its [`Design`]
//! reads the table's items (which are its entities, and of which tenant).

use std::sync::Arc;

use super::relay::{Entry, Relayed};
use super::EventKind;
use crate::chart::kinds::Tenant;
use crate::chart::Chart;
use crate::store::{AttributeValue, Item};

/// One change of one entity of the design, from a stream record: the item's images and
/// the tenant it names, as the design ([`Design`]) read them.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: EventKind,
    /// The item before the change (none when it was created).
    pub before: Option<Item>,
    /// The item after the change (none when it was deleted).
    pub after: Option<Item>,
    /// The organization (tenant) the item belongs to; none for an entity that names
    /// none (an order line, which names only its order).
    pub org: Option<Tenant>,
    /// Where the record is in the stream.
    pub shard: String,
    pub sequence: String,
    /// When the change was made (ms since the Unix epoch; whole seconds on DynamoDB).
    pub created_ms: u64,
}

impl Change {
    pub fn new(
        kind: EventKind,
        before: Option<Item>,
        after: Option<Item>,
        org: Option<Tenant>,
        (shard, sequence, created_ms): (String, String, u64),
    ) -> Change {
        Change {
            kind,
            before,
            after,
            org,
            shard,
            sequence,
            created_ms,
        }
    }

    /// The item as it is after the change, or as it was when deleted.
    pub fn item(&self) -> &Item {
        self.after
            .as_ref()
            .or(self.before.as_ref())
            .expect("a change has an item before or after it")
    }

    /// The organization the entity belongs to.
    pub fn org(&self) -> Option<&Tenant> {
        self.org.as_ref()
    }
}

/// What the live updates know of the table's design: whether an item (stored under a
/// key) is one of its entities, its keys where the design puts them, and which tenant it
/// names. Items that are not are skipped.
#[derive(Clone)]
pub struct Design(Arc<DesignFn>);

type DesignFn = dyn Fn(&Item) -> Option<Option<Tenant>> + Send + Sync;

impl Design {
    /// A design from its reading of an item: `None` for no entity of it, else the tenant
    /// the entity names (if any).
    pub fn new(read: impl Fn(&Item) -> Option<Option<Tenant>> + Send + Sync + 'static) -> Design {
        Design(Arc::new(read))
    }

    /// The design of `chart`: every entity of the chart (not the server's own items, nor
    /// the counter shards that are part of their owner's counters) whose stored keys are
    /// those its templates render from the item's own values, with the tenant it names.
    pub fn of(chart: Arc<Chart>) -> Design {
        Design::new(move |item| {
            let Some(AttributeValue::S(ty)) = item.get(&chart.table.type_attribute) else {
                return None;
            };
            let e = chart.entities.get(ty)?;
            if e.system || e.shards_of.is_some() {
                return None;
            }
            let vars = crate::chart::samples::key_values(e, item);
            // Its key as its table holds it (a chart of several: its entity's table).
            if crate::chart::samples::key_of(e, &vars)? != chart.key_of(item)? {
                return None;
            }
            Some(chart.tenant_attribute(e).and_then(|a| match item.get(&a) {
                Some(AttributeValue::S(t)) => Tenant::parse(t).ok(),
                _ => None,
            }))
        })
    }

    /// The design of the built-in chart (`charts/itemgraph.toml`).
    pub fn builtin() -> Design {
        static BUILTIN: std::sync::OnceLock<Design> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| Design::of(crate::chart::builtin()))
            .clone()
    }

    /// `None` when `item` (stored under the keys it holds) is no entity of the design;
    /// else the tenant it names.
    pub fn read(&self, item: &Item) -> Option<Option<Tenant>> {
        (self.0)(item)
    }

    /// A relayed entry as this design reads it: a change of nothing it knows (a later
    /// version's new entity type) is unreadable, for its organization only.
    pub(crate) fn known(&self, mut entry: Entry) -> Entry {
        if let Relayed::Change(change) = &entry.relayed {
            let known = [&change.before, &change.after]
                .into_iter()
                .flatten()
                .any(|i| self.read(i).is_some());
            if !known {
                entry.relayed = Relayed::Unreadable {
                    org: change.org.as_ref().map(|o| o.as_str().to_owned()),
                    why: "a change of no entity of this server's design".into(),
                    placed: true,
                };
            }
        }
        entry
    }
}

impl Default for Design {
    fn default() -> Self {
        Design::builtin()
    }
}

impl std::fmt::Debug for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Design")
    }
}
