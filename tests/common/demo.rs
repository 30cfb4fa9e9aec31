//! The built-in chart's demo data as the tests read it: the items of
//! `charts/itemgraph.demo.json`, decoded into the built-in design's records, and written
//! as any data set is (`itemgraph::chart::data`: never overwriting, its first item last).
#![allow(dead_code)]

use super::records::{Entity, Organization, Records};
pub use itemgraph::chart::data::Seeded;
use itemgraph::chart::data::{self, LoadError, Loaded};
use itemgraph::store::{AttributeValue, Item, Store};

/// The demo user who requested the most tickets (the benchmark's and the paging suites'
/// long item collection).
pub const HEAVY_USER: &str = "wile-e-coyote";

/// The demo set as records, in the file's order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DemoData {
    pub records: Records,
    /// The counter shards of the organizations of the sharded layout, as the file has
    /// them (all at 0: the counts are on the organizations' own items).
    shards: Vec<Item>,
}

impl std::ops::Deref for DemoData {
    type Target = Records;
    fn deref(&self) -> &Records {
        &self.records
    }
}

impl std::ops::DerefMut for DemoData {
    fn deref_mut(&mut self) -> &mut Records {
        &mut self.records
    }
}

/// The demo set's items decoded: every item of the file is one record (or a counter
/// shard), or the file and the records have drifted apart.
pub fn demo_data() -> DemoData {
    let mut data = DemoData::default();
    for item in data::builtin_demo() {
        if matches!(item.get("Type"), Some(AttributeValue::S(t)) if t == "CounterShard") {
            data.shards.push(item);
            continue;
        }
        let r = &mut data.records;
        match Entity::from_item(item.clone())
            .unwrap_or_else(|e| panic!("a demo item decodes: {e}: {item:?}"))
        {
            Entity::Organization(o) => r.organizations.push(o),
            Entity::User(u) => r.users.push(u),
            Entity::UserEmail(m) => r.emails.push(m),
            Entity::Ticket(t) => r.tickets.push(t),
            Entity::Order(o) => r.orders.push(o),
            Entity::OrderLine(l) => r.lines.push(l),
        }
    }
    data
}

impl DemoData {
    /// Every record as an item, parents first, each organization of the sharded layout
    /// with its counter shards.
    pub fn items(&self) -> Vec<Item> {
        self.records.items_with(|o| {
            if o.schema_version != Some(Organization::SHARDED) {
                return Vec::new();
            }
            let org = AttributeValue::S(o.slug.to_string());
            self.shards
                .iter()
                .filter(|s| s.get("org") == Some(&org))
                .cloned()
                .collect()
        })
    }

    /// The same data in the layout before counter shards (schema version 1): what a table
    /// written by an earlier release holds, for the `counter-shards` migration's tests.
    pub fn unsharded(mut self) -> Self {
        for org in &mut self.records.organizations {
            org.schema_version = None;
        }
        self
    }

    /// How many items the set writes.
    pub fn len(&self) -> usize {
        self.items().len()
    }
}

/// The demo set's items, as the file has them.
pub fn demo_items() -> Vec<Item> {
    data::builtin_demo()
}

/// Writes the demo set (`itemgraph::chart::data::load`).
pub async fn seed_demo(store: &dyn Store) -> Result<Loaded, LoadError> {
    data::load(store, &itemgraph::chart::builtin(), data::builtin_demo()).await
}

/// Creates the table when missing and writes the demo set unless it is there, or the
/// table holds other items and `into_non_empty` is false
/// (`itemgraph::chart::data::load_if_absent`).
pub async fn seed_if_absent(store: &dyn Store, into_non_empty: bool) -> Result<Seeded, LoadError> {
    data::load_if_absent(
        store,
        &itemgraph::chart::builtin(),
        data::builtin_demo(),
        into_non_empty,
    )
    .await
}
