//! Any entity by primary key, whatever its type: access patterns 1, 5, 8 and 9 for
//! references, `node` and `nodes` (GetItem for one key, BatchGetItem for many), and the
//! bulk writes that seed a table.

use std::collections::{HashMap, HashSet};

use super::error::{RepoError, RepoResult};
use crate::chart::data::LoadError;
use crate::model::{Entity, Record};
use crate::store::validate::MAX_BATCH_GET_KEYS;
use crate::store::{BatchGet, GetItem, Item, PrimaryKey, Put, Store, TableSchema, TransactAction};

pub(super) async fn get_record<R: Record>(
    store: &dyn Store,
    key: PrimaryKey,
) -> RepoResult<Option<R>> {
    let item = store
        .get_item(GetItem {
            key,
            consistent_read: false,
        })
        .await?;
    Ok(item.map(R::from_item).transpose()?)
}

/// Access pattern 1, 5, 9 for one key: any entity by primary key, in one GetItem.
pub async fn get_entity(store: &dyn Store, key: PrimaryKey) -> RepoResult<Option<Entity>> {
    let item = store
        .get_item(GetItem {
            key,
            consistent_read: false,
        })
        .await?;
    Ok(item.map(Entity::from_item).transpose()?)
}

/// Access pattern 8, 9: entities of any type by primary key, in one BatchGetItem (at most 100
/// distinct keys; repeats are asked once). Absent keys are absent from the map.
pub async fn batch_get_entities(
    store: &dyn Store,
    keys: &[PrimaryKey],
) -> RepoResult<HashMap<PrimaryKey, Entity>> {
    let mut seen = HashSet::new();
    let keys: Vec<PrimaryKey> = keys.iter().filter(|k| seen.insert(*k)).cloned().collect();
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    if keys.len() > MAX_BATCH_GET_KEYS {
        return Err(RepoError::Invalid(format!(
            "at most {MAX_BATCH_GET_KEYS} keys per batch, got {}",
            keys.len()
        )));
    }
    let items = store
        .batch_get_item(BatchGet {
            keys,
            consistent_read: false,
        })
        .await?;
    items
        .into_iter()
        .map(|item| {
            let entity = Entity::from_item(item)?;
            Ok((entity.primary_key(), entity))
        })
        .collect()
}

/// Writes items for seeding: TransactWriteItems in chunks of at most 100 distinct items and
/// 4 MB, each chunk all or nothing. Refuses (before writing anything) an item without a
/// key or two items with the same key, rather than letting one silently win. Returns how
/// many items were written.
pub async fn put_entities(store: &dyn Store, items: Vec<Item>) -> RepoResult<usize> {
    let total = items.len();
    for chunk in chunk_items(store.schema(), items)? {
        let actions = chunk
            .into_iter()
            .map(|item| TransactAction::Put(Put::new(item)))
            .collect();
        store.transact_write(actions).await?;
    }
    Ok(total)
}

/// [`put_entities`] that never overwrites: each Put is conditioned on its item being
/// absent. An item already there exactly as given is skipped (a seed interrupted before
/// can be completed); any other item at one of the keys fails the chunk with
/// `AlreadyExists("item")`, and that chunk writes nothing. What seeding a table someone
/// else may use does. Returns how many items were written.
pub async fn put_new_entities(store: &dyn Store, items: Vec<Item>) -> RepoResult<usize> {
    crate::chart::data::put_new(store, items)
        .await
        .map_err(repo_error)
}

/// Splits items into transactions of at most 100 items and 4 MB; checks keys first.
pub(super) fn chunk_items(schema: &TableSchema, items: Vec<Item>) -> RepoResult<Vec<Vec<Item>>> {
    crate::chart::data::chunks(schema, items).map_err(repo_error)
}

fn repo_error(e: LoadError) -> RepoError {
    match e {
        LoadError::Invalid(why) => RepoError::Invalid(why),
        LoadError::Taken { .. } => RepoError::AlreadyExists("item"),
        LoadError::Store(e) => RepoError::Store(e),
    }
}
