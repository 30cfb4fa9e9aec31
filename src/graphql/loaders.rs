//! What every per-request DataLoader shares (the chart's, [`super::ItemLoader`]):
//! the answer of one batch. A loader gathers the keys asked while the request waits once
//! ([`super::loader_wait`]), drops repeats, and makes one GetItem (one key) or one
//! BatchGetItem (up to 100 keys; more are cut into batches of 100, and the store retries
//! `UnprocessedKeys`). Items a request already read are primed into its cache, so never
//! read twice; a key asked while its batch is being read waits for that batch.
//!
//! Every key gets its own answer: the item, `None` when absent, or the error of the read
//! that should have brought it.

use std::collections::HashMap;
use std::sync::Arc;

use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use super::errors::ApiError;
use crate::telemetry;

/// Reads one batch of `keys` with `read`, in a `DataLoader batch` span: every key gets
/// its own answer, the item read, `None` when absent, or the error of the read that
/// should have brought it.
pub(super) async fn answer_batch<K: Clone + Eq + std::hash::Hash, T>(
    keys: &[K],
    read: impl std::future::Future<Output = Result<HashMap<K, T>, ApiError>>,
) -> HashMap<K, Result<Option<T>, Arc<ApiError>>> {
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
