//! Items as stored, written into a table that may be in use: a chart's data file (the
//! built-in chart's demo set is `charts/itemgraph.demo.json`), `snapshot --fixture`'s JSON
//! items, and what `serve --seed demo` and `seed` load.
//!
//! Nothing is ever overwritten: each Put is conditioned on its key being free, and an item
//! already there exactly as given is skipped, so an interrupted load is completed by the
//! next one and a table someone else uses loses nothing.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use super::Chart;
use crate::store::validate::{MAX_TRANSACT_ACTIONS, MAX_TRANSACT_BYTES};
use crate::store::value::{canonicalize_item, item_size};
use crate::store::{
    AttributeValue, CancelReason, Condition, GetItem, Item, Put, Scan, Store, StoreError,
    TableSchema, TransactAction,
};

/// The built-in chart's demo set, as stored: three tenants with users, tickets and orders,
/// the same on every run (their ids and texts are what `examples/`, the golden files and the
/// browser walks read).
pub const BUILTIN_DEMO_SOURCE: &str = include_str!("../../charts/itemgraph.demo.json");
/// Where it lives in the repository.
pub const BUILTIN_DEMO_PATH: &str = "charts/itemgraph.demo.json";

/// The built-in chart's demo items, parents first (the first is the set's marker,
/// [`is_loaded`]).
pub fn builtin_demo() -> Vec<Item> {
    // Compiled in and held to the built-in chart by the tests, so it cannot fail here.
    parse(BUILTIN_DEMO_SOURCE).unwrap_or_else(|e| panic!("{BUILTIN_DEMO_PATH}: {e}"))
}

/// A data file's items: a JSON array of items in DynamoDB JSON.
pub fn parse(text: &str) -> Result<Vec<Item>, String> {
    serde_json::from_str(text).map_err(|e| format!("a JSON array of items in DynamoDB JSON: {e}"))
}

/// Why items could not be loaded. Nothing of a refused transaction was written.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The items themselves cannot be loaded (an item without a key, two with one key).
    #[error("{0}")]
    Invalid(String),
    /// Another item holds one of the keys.
    #[error("the key ({pk}, {sk}) holds another item")]
    Taken { pk: String, sk: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a load wrote, by the items' type (the chart's type attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    pub items: usize,
    pub by_type: BTreeMap<String, usize>,
}

impl Loaded {
    fn of(chart: &Chart, items: &[Item]) -> Loaded {
        let mut by_type = BTreeMap::new();
        for item in items {
            let ty = match item.get(&chart.table.type_attribute) {
                Some(AttributeValue::S(t)) => t.clone(),
                _ => "(untyped)".to_owned(),
            };
            *by_type.entry(ty).or_default() += 1;
        }
        Loaded {
            items: items.len(),
            by_type,
        }
    }
}

impl fmt::Display for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} items", self.items)?;
        for (i, (ty, n)) in self.by_type.iter().enumerate() {
            write!(f, "{} {n} {ty}", if i == 0 { ":" } else { "," })?;
        }
        Ok(())
    }
}

/// Writes `items` in transactions of at most 100 distinct items and 4 MB, each all or
/// nothing and each Put conditioned on its key being free. An item already there exactly
/// as given is skipped; another item at one of the keys fails with [`LoadError::Taken`]
/// (that transaction writes nothing). Refuses, before writing anything, an item without a
/// key or two items with the same key. How many items it wrote.
pub async fn put_new(store: &dyn Store, items: Vec<Item>) -> Result<usize, LoadError> {
    let schema = store.schema();
    let mut written = 0;
    for mut chunk in chunks(schema, items)? {
        while !chunk.is_empty() {
            let actions: Vec<TransactAction> = chunk
                .iter()
                .map(|item| {
                    let mut put =
                        Put::new(item.clone()).when(Condition::not_exists(schema.pk.clone()));
                    put.return_old_on_condition_failure = true;
                    TransactAction::Put(put)
                })
                .collect();
            let reasons = match patiently(|| store.transact_write(actions.clone())).await {
                Ok(()) => {
                    written += chunk.len();
                    break;
                }
                Err(StoreError::TransactionCanceled { reasons }) => reasons,
                Err(e) => return Err(e.into()),
            };
            let mut keep = Vec::with_capacity(chunk.len());
            for (item, reason) in chunk.into_iter().zip(&reasons) {
                match reason {
                    CancelReason::ConditionalCheckFailed { item: Some(there) }
                        if canonicalize_item(there.clone()) == canonicalize_item(item.clone()) => {}
                    CancelReason::ConditionalCheckFailed { .. } => {
                        let key = schema.key_of(&item).expect("checked by chunks");
                        return Err(LoadError::Taken {
                            pk: key.pk,
                            sk: key.sk,
                        });
                    }
                    _ => keep.push(item),
                }
            }
            if keep.len() == reasons.len() {
                // Cancelled for another reason than a key that is taken.
                return Err(StoreError::TransactionCanceled { reasons }.into());
            }
            chunk = keep;
        }
    }
    Ok(written)
}

/// Splits items into transactions of at most 100 items and 4 MB; checks keys first.
pub(crate) fn chunks(schema: &TableSchema, items: Vec<Item>) -> Result<Vec<Vec<Item>>, LoadError> {
    let mut seen = HashSet::with_capacity(items.len());
    for item in &items {
        let key = schema
            .key_of(item)
            .ok_or_else(|| LoadError::Invalid("an item has no primary key".into()))?;
        if !seen.insert(key.clone()) {
            return Err(LoadError::Invalid(format!(
                "two items have the key ({}, {})",
                key.pk, key.sk
            )));
        }
    }
    let mut chunks: Vec<Vec<Item>> = Vec::new();
    let mut bytes = 0;
    for item in items {
        let size = item_size(&item);
        let full = chunks
            .last()
            .is_none_or(|c| c.len() == MAX_TRANSACT_ACTIONS || bytes + size > MAX_TRANSACT_BYTES);
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        chunks.last_mut().expect("pushed above").push(item);
    }
    Ok(chunks)
}

/// How many times one load's request is sent while the store throttles it or its outcome
/// is unknown.
const ATTEMPTS: u32 = 10;

/// A request of a load sent again while DynamoDB throttles it past the SDK's attempts
/// (nothing written) or its outcome is unknown (`UNAVAILABLE`): safe, since every Put is
/// conditioned on its key being free and an item already there as given is skipped.
async fn patiently<T, F, Fut>(send: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    crate::store::retry_while(
        ATTEMPTS,
        |e| matches!(e, StoreError::Throttled(_) | StoreError::Unavailable(_)),
        send,
    )
    .await
}

/// Whether the table holds any item: one Scan of one item.
pub async fn is_empty(store: &dyn Store) -> Result<bool, StoreError> {
    let page = store
        .scan(Scan {
            limit: Some(1),
            start: None,
            consistent_read: true,
            segment: None,
            ..Default::default()
        })
        .await?;
    Ok(page.items.is_empty())
}

/// Writes a data set's items with [`put_new`], its first item (its marker) last: until
/// that is written the set does not count as there ([`is_loaded`]), so an interrupted
/// load is completed, its items skipped, by the next one.
pub async fn load(
    store: &dyn Store,
    chart: &Chart,
    mut items: Vec<Item>,
) -> Result<Loaded, LoadError> {
    let loaded = Loaded::of(chart, &items);
    if !items.is_empty() {
        let marker = items.remove(0);
        items.push(marker);
    }
    put_new(store, items).await?;
    Ok(loaded)
}

/// Whether a data set is there: one GetItem on its marker (its first item), which must be
/// an item of the same type (another application's item at that key is not the set).
pub async fn is_loaded(
    store: &dyn Store,
    chart: &Chart,
    items: &[Item],
) -> Result<bool, StoreError> {
    let Some(marker) = items.first() else {
        return Ok(true);
    };
    let Some(key) = store.schema().key_of(marker) else {
        return Ok(false);
    };
    let ty = &chart.table.type_attribute;
    let there = store
        .get_item(GetItem {
            key,
            consistent_read: true,
        })
        .await?;
    Ok(there.is_some_and(|t| t.get(ty) == marker.get(ty)))
}

/// What [`load_if_absent`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seeded {
    /// The set was written.
    Now(Loaded),
    /// It was there already; nothing written.
    Already,
    /// The table holds other items: nothing written, so that a table in use is never
    /// seeded silently.
    NotEmpty,
}

/// Creates the table when it is missing, then loads `items` unless they are there already
/// ([`is_loaded`]) or the table holds other items (unless `into_non_empty`). Loading never
/// overwrites an item ([`put_new`]).
pub async fn load_if_absent(
    store: &dyn Store,
    chart: &Chart,
    items: Vec<Item>,
    into_non_empty: bool,
) -> Result<Seeded, LoadError> {
    patiently(|| store.create_table()).await?;
    if patiently(|| is_loaded(store, chart, &items)).await? {
        return Ok(Seeded::Already);
    }
    if !into_non_empty && !patiently(|| is_empty(store)).await? {
        return Ok(Seeded::NotEmpty);
    }
    load(store, chart, items).await.map(Seeded::Now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;

    #[tokio::test]
    async fn the_demo_set_loads_once_and_is_seen_as_there() {
        let chart = super::super::builtin();
        let store = EmbeddedStore::in_memory("t", chart.table_schema()).unwrap();
        let items = builtin_demo();
        let first = load_if_absent(&store, &chart, items.clone(), false)
            .await
            .unwrap();
        let Seeded::Now(loaded) = first else {
            panic!("{first:?}")
        };
        assert_eq!(loaded.items, items.len());
        assert_eq!(loaded.by_type["Organization"], 3, "{loaded}");
        assert_eq!(
            load_if_absent(&store, &chart, items.clone(), false)
                .await
                .unwrap(),
            Seeded::Already
        );
        // Loaded again into the full table: every item is there as given, none written.
        assert_eq!(put_new(&store, items.clone()).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_key_holding_another_item_fails_its_transaction_and_overwrites_nothing() {
        let chart = super::super::builtin();
        let store = EmbeddedStore::in_memory("t", chart.table_schema()).unwrap();
        let mut items = builtin_demo();
        items.truncate(5);
        let mut other = items[3].clone();
        other.insert("name".into(), AttributeValue::S("someone else's".into()));
        store.create_table().await.unwrap();
        put_new(&store, vec![other.clone()]).await.unwrap();
        let err = put_new(&store, items.clone()).await.unwrap_err();
        assert!(matches!(err, LoadError::Taken { .. }), "{err}");
        assert_eq!(
            load_if_absent(&store, &chart, items, false).await.unwrap(),
            Seeded::NotEmpty,
            "a table holding other items is not seeded unless asked"
        );
        let key = store.schema().key_of(&other).unwrap();
        let there = store
            .get_item(GetItem {
                key,
                consistent_read: true,
            })
            .await
            .unwrap();
        assert_eq!(there, Some(other));
    }

    #[test]
    fn two_items_with_one_key_are_refused_before_anything_is_written() {
        let chart = super::super::builtin();
        let items = builtin_demo();
        let twice = vec![items[0].clone(), items[0].clone()];
        let err = chunks(&chart.table_schema(), twice).unwrap_err();
        assert!(err.to_string().contains("two items have the key"), "{err}");
    }

    /// Every demo item is an item of the built-in chart: it decodes as one of its entities
    /// (a uniqueness marker or a counter shard is stored for one).
    #[test]
    fn every_demo_item_is_the_builtin_charts() {
        let chart = super::super::builtin();
        for item in builtin_demo() {
            let Some(AttributeValue::S(ty)) = item.get(&chart.table.type_attribute) else {
                panic!("untyped: {item:?}")
            };
            assert!(
                chart.entities.contains_key(ty) || ty == "CounterShard",
                "{ty} is not the chart's"
            );
        }
    }
}
