//! Any entity by primary key, whatever its type: access patterns 1, 5, 8 and 9 for
//! references, `node` and `nodes` (GetItem for one key, BatchGetItem for many), and the
//! bulk writes that seed a table.

use std::collections::{HashMap, HashSet};

use super::error::{RepoError, RepoResult};
use crate::keys::PK;
use crate::model::{Entity, Record};
use crate::store::validate::{MAX_BATCH_GET_KEYS, MAX_TRANSACT_ACTIONS, MAX_TRANSACT_BYTES};
use crate::store::value::canonicalize_item;
use crate::store::value::item_size;
use crate::store::{
    BatchGet, CancelReason, Condition, GetItem, Item, PrimaryKey, Put, Store, StoreError,
    TableSchema, TransactAction,
};

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
    let mut written = 0;
    for mut chunk in chunk_items(store.schema(), items)? {
        while !chunk.is_empty() {
            let actions: Vec<TransactAction> = chunk
                .iter()
                .map(|item| {
                    let mut put = Put::new(item.clone()).when(Condition::not_exists(PK));
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
                        return Err(RepoError::AlreadyExists("item"))
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

/// How many times one seeding transaction is sent while the store throttles it or its
/// outcome is unknown.
const SEED_ATTEMPTS: u32 = 10;

/// Sends a seeding transaction again while DynamoDB throttles it past the SDK's attempts
/// (nothing written) or its outcome is unknown (`UNAVAILABLE`): safe, since every Put is
/// conditioned on its key being free and an item already there as given is skipped.
async fn patiently<F, Fut>(send: F) -> Result<(), StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), StoreError>>,
{
    crate::store::retry_while(
        SEED_ATTEMPTS,
        |e| matches!(e, StoreError::Throttled(_) | StoreError::Unavailable(_)),
        send,
    )
    .await
}

/// Splits items into transactions of at most 100 items and 4 MB; checks keys first.
pub(super) fn chunk_items(schema: &TableSchema, items: Vec<Item>) -> RepoResult<Vec<Vec<Item>>> {
    let mut seen = HashSet::with_capacity(items.len());
    for item in &items {
        let key = schema
            .key_of(item)
            .ok_or_else(|| RepoError::Invalid("an item has no primary key".into()))?;
        if !seen.insert(key.clone()) {
            return Err(RepoError::Invalid(format!(
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
