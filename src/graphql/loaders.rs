//! The per-request DataLoader, on the `dataloader` crate: every reference (`requester`,
//! `assignee`, `buyer`, `organization`, `node`, `nodes`) asks it for a key; it gathers the
//! keys asked while the request waits once (`gather`), drops repeats, and makes one GetItem (one key) or
//! one BatchGetItem (up to 100 keys; more are cut into batches of 100, and the store
//! retries `UnprocessedKeys`). Items a request already read are primed into its cache, so
//! never read twice; a key asked while its batch is being read waits for that batch (the
//! loader holds its state while it reads), so one request never reads one item twice.
//!
//! Every key gets its own answer: the entity, `None` when absent, or the error of the read
//! that should have brought it.

use std::collections::HashMap;
use std::sync::Arc;

use dataloader::BatchFn;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use super::errors::ApiError;
use super::loader_wait;
use crate::collections::{batch_get_entities, get_entity};
use crate::model::Entity;
use crate::store::validate::MAX_BATCH_GET_KEYS;
use crate::store::{PrimaryKey, Store};
use crate::telemetry;

/// What the loader answers for one key.
pub type Loaded = Result<Option<Entity>, Arc<ApiError>>;

/// The per-request loader of entities by primary key, with its cache.
pub type EntityLoader = dataloader::cached::Loader<PrimaryKey, Loaded, EntityBatch>;

/// A fresh loader (an empty cache) reading from `store`. Its wait for the other keys of a
/// level is one poll of the request, not a trip round the executor ([`super::loader_wait`]).
pub fn entity_loader(store: Arc<dyn Store>) -> EntityLoader {
    dataloader::cached::Loader::new(EntityBatch { store })
        .with_max_batch_size(MAX_BATCH_GET_KEYS)
        .with_custom_wait_for_work(loader_wait::wait_once)
}

/// The batch read behind [`EntityLoader`].
pub struct EntityBatch {
    store: Arc<dyn Store>,
}

impl BatchFn<PrimaryKey, Loaded> for EntityBatch {
    async fn load(&mut self, keys: &[PrimaryKey]) -> HashMap<PrimaryKey, Loaded> {
        answer_batch(keys, async {
            let found = if let [key] = keys {
                get_entity(self.store.as_ref(), key.clone())
                    .await
                    .map(|e| e.into_iter().map(|e| (e.primary_key(), e)).collect())
            } else {
                batch_get_entities(self.store.as_ref(), keys).await
            };
            found.map_err(ApiError::from)
        })
        .await
    }
}

/// Reads one batch of `keys` with `read`, in a `DataLoader batch` span: every key gets
/// its own answer, the item read, `None` when absent, or the error of the read that
/// should have brought it.
pub(super) async fn answer_batch<T>(
    keys: &[PrimaryKey],
    read: impl std::future::Future<Output = Result<HashMap<PrimaryKey, T>, ApiError>>,
) -> HashMap<PrimaryKey, Result<Option<T>, Arc<ApiError>>> {
    let otel = telemetry::child("DataLoader batch", SpanKind::Internal, || {
        vec![KeyValue::new(
            "itemgraph.dataloader.keys",
            keys.len() as i64,
        )]
    });
    let found = telemetry::within(otel.as_ref(), read)
        .await
        .map_err(Arc::new);
    if let Some(cx) = &otel {
        let error = found.as_ref().err().map(|e| e.code().into());
        let loaded = found.as_ref().map_or(0, HashMap::len);
        telemetry::end(
            cx,
            vec![KeyValue::new("itemgraph.dataloader.found", loaded as i64)],
            error,
        );
    }
    match found {
        Ok(mut found) => keys
            .iter()
            .map(|k| (k.clone(), Ok(found.remove(k))))
            .collect(),
        Err(e) => keys.iter().map(|k| (k.clone(), Err(e.clone()))).collect(),
    }
}
