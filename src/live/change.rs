//! What the live updates carry: a [`Change`] of one item of the design, as its [`Design`]
//! reads the table's items (which are its entities, and of which tenant).

use std::sync::Arc;

use super::relay::{Entry, Relayed};
use super::EventKind;
use crate::chart::kinds::Tenant;
use crate::model::Entity;
use crate::store::Item;

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
    /// The images as the built-in design's entities, decoded on first ask.
    entities: std::sync::OnceLock<(Option<Entity>, Option<Entity>)>,
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
            entities: std::sync::OnceLock::new(),
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

    fn entities(&self) -> &(Option<Entity>, Option<Entity>) {
        self.entities.get_or_init(|| {
            let decode = |i: &Option<Item>| i.clone().and_then(|i| Entity::from_item(i).ok());
            (decode(&self.before), decode(&self.after))
        })
    }

    /// The built-in design's entity as the change left it (as it was, when deleted);
    /// `None` for an item of another design.
    pub fn entity(&self) -> Option<&Entity> {
        let (before, after) = self.entities();
        after.as_ref().or(before.as_ref())
    }

    /// The built-in design's entity before the change.
    pub fn entity_before(&self) -> Option<&Entity> {
        self.entities().0.as_ref()
    }

    /// The built-in design's entity after the change.
    pub fn entity_after(&self) -> Option<&Entity> {
        self.entities().1.as_ref()
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

    /// The built-in four-entity design ([`crate::model::Entity`]).
    pub fn builtin() -> Design {
        Design::new(|item| {
            let e = Entity::from_item(item.clone()).ok()?;
            let key = |a: &str| match item.get(a) {
                Some(crate::store::AttributeValue::S(s)) => Some(s.as_str()),
                _ => None,
            };
            let stored = (key(crate::keys::PK)?, key(crate::keys::SK)?);
            let own = e.primary_key();
            if (own.pk.as_str(), own.sk.as_str()) != stored {
                return None;
            }
            Some(match &e {
                Entity::Organization(o) => Some(Tenant::from(&o.slug)),
                Entity::User(u) => Some(Tenant::from(&u.org)),
                Entity::UserEmail(m) => Some(Tenant::from(&m.org)),
                Entity::Ticket(t) => Some(Tenant::from(&t.org)),
                Entity::Order(o) => Some(Tenant::from(&o.org)),
                Entity::OrderLine(_) => None,
            })
        })
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
