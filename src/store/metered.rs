//! A [`Store`] decorator that counts and times every call it forwards
//! ([`crate::metrics::STORE_CALLS`], [`crate::metrics::STORE_CALL_DURATION`]) and runs
//! each in a `store` span (`op`, `table`, `index`), so the engine's own logs and the SDK's
//! nest under the GraphQL request that caused them.
//!
//! The server wraps its store in it once, for every request; the trace decorator
//! ([`super::trace::TracedStore`]) goes on top for a request that asks for it.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tracing::Instrument;

use super::{
    BatchGet, BatchGetPage, Delete, GetItem, Item, Put, Query, QueryOutput, Scan, Store,
    StoreError, StoreResult, TableDescription, TableSchema, TransactAction, Update,
};
use crate::metrics;

/// Forwards every call to `inner`, counted, timed and in a span.
pub struct MeteredStore {
    inner: Arc<dyn Store>,
}

impl MeteredStore {
    pub fn new(inner: Arc<dyn Store>) -> Self {
        MeteredStore { inner }
    }

    async fn call<T>(
        &self,
        op: &'static str,
        index: Option<&str>,
        call: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let span = tracing::info_span!(
            "store",
            op,
            table = self.inner.table_name(),
            index = index.unwrap_or(metrics::NO_INDEX),
        );
        let mut pending = Pending {
            op,
            index,
            started: Instant::now(),
            done: false,
        };
        let result = call.instrument(span.clone()).await;
        pending.done = true;
        let outcome = store_outcome(&result);
        let took = pending.started.elapsed();
        tracing::debug!(parent: &span, outcome, micros = took.as_micros() as u64, "store call done");
        metrics::record_store_call(op, index, outcome, took);
        result
    }
}

/// A call in flight. A request cancelled at its deadline drops its store calls mid-way:
/// they are counted as `cancelled` when dropped, so the call count never misses one.
struct Pending<'a> {
    op: &'static str,
    index: Option<&'a str>,
    started: Instant,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            metrics::record_store_call(self.op, self.index, "cancelled", self.started.elapsed());
        }
    }
}

#[async_trait]
impl Store for MeteredStore {
    fn table_name(&self) -> &str {
        self.inner.table_name()
    }
    fn schema(&self) -> &TableSchema {
        self.inner.schema()
    }
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
    }

    fn change_stream(&self) -> Option<Arc<dyn super::stream::ChangeStream>> {
        self.inner.change_stream()
    }

    async fn enable_change_stream(&self, dry_run: bool) -> StoreResult<bool> {
        self.inner.enable_change_stream(dry_run).await
    }
    async fn create_table(&self) -> StoreResult<bool> {
        self.call("CreateTable", None, self.inner.create_table())
            .await
    }
    async fn delete_table(&self) -> StoreResult<bool> {
        self.call("DeleteTable", None, self.inner.delete_table())
            .await
    }
    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.call("DescribeTable", None, self.inner.describe_table())
            .await
    }
    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        self.call("GetItem", None, self.inner.get_item(req)).await
    }
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        self.call("BatchGetItem", None, self.inner.batch_get_page(req))
            .await
    }
    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        let index = req.index.clone();
        self.call("Query", index.as_deref(), self.inner.query(req))
            .await
    }
    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput> {
        self.call("Scan", None, self.inner.scan(req)).await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        self.call("PutItem", None, self.inner.put_item(req)).await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        self.call("UpdateItem", None, self.inner.update_item(req))
            .await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        self.call("DeleteItem", None, self.inner.delete_item(req))
            .await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        self.call(
            "TransactWriteItems",
            None,
            self.inner.transact_write(actions),
        )
        .await
    }
}

/// The `outcome` label of a store call: `ok` or what failed, in the port's terms.
pub fn store_outcome<T>(result: &StoreResult<T>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(StoreError::Validation(_)) => "validation",
        Err(StoreError::ConditionFailed { .. }) => "condition_failed",
        Err(StoreError::TransactionCanceled { .. }) => "transaction_canceled",
        Err(StoreError::TransactionConflict(_)) => "transaction_conflict",
        Err(StoreError::TableNotFound(_)) => "table_not_found",
        Err(StoreError::Throttled(_)) => "throttled",
        Err(StoreError::Unavailable(_)) => "unavailable",
        Err(StoreError::Internal(_)) => "internal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::PrimaryKey;

    /// The decorator is transparent: what the engine answers, it answers.
    #[tokio::test]
    async fn calls_pass_through_unchanged() {
        let inner = Arc::new(EmbeddedStore::in_memory("t", crate::keys::table_schema()).unwrap());
        let store = MeteredStore::new(inner);
        assert!(store.create_table().await.unwrap());
        assert_eq!(store.table_name(), "t");
        assert_eq!(store.engine_name(), "embedded");
        let got = store
            .get_item(GetItem {
                key: PrimaryKey::new("ORG#a", "ORG#a"),
                consistent_read: false,
            })
            .await
            .unwrap();
        assert_eq!(got, None);
        let table = store.describe_table().await.unwrap().unwrap();
        assert_eq!(table.name, "t");
    }

    #[test]
    fn store_outcomes_name_the_failure() {
        assert_eq!(store_outcome(&Ok(())), "ok");
        let failed: crate::store::StoreResult<()> = Err(StoreError::ConditionFailed { item: None });
        assert_eq!(store_outcome(&failed), "condition_failed");
        let throttled: crate::store::StoreResult<()> = Err(StoreError::Throttled("x".into()));
        assert_eq!(store_outcome(&throttled), "throttled");
    }
}
