//! A store whose reads never answer, for the suites that test the request deadline: what
//! a stalled DynamoDB looks like from the server, without waiting on a real one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use itemgraph::store::{
    BatchGet, BatchGetPage, Delete, GetItem, Item, Put, Query, QueryOutput, Scan, Store,
    StoreResult, TableDescription, TableSchema, TransactAction, Update,
};

/// A store whose reads never answer. Each read counts as outstanding until its future is
/// dropped, which is how a cancelled store call ends.
pub struct Stalled {
    inner: Arc<dyn Store>,
    pub started: AtomicUsize,
    outstanding: Arc<AtomicUsize>,
}

/// Counts one outstanding call from creation to drop.
struct Outstanding(Arc<AtomicUsize>);

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Stalled {
    pub fn over(inner: Arc<dyn Store>) -> Arc<Stalled> {
        Arc::new(Stalled {
            inner,
            started: AtomicUsize::new(0),
            outstanding: Arc::default(),
        })
    }

    async fn stall<T>(&self) -> T {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let _guard = Outstanding(self.outstanding.clone());
        std::future::pending().await
    }

    /// Waits (bounded, by yielding to the runtime, never by sleeping) until no call is
    /// outstanding: a cancelled read ends when the runtime next drops what held it.
    pub async fn until_none_outstanding(&self) {
        for _ in 0..10_000 {
            if self.outstanding.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!(
            "{} store calls still outstanding after the request ended",
            self.outstanding.load(Ordering::SeqCst)
        );
    }
}

#[async_trait]
impl Store for Stalled {
    fn table_name(&self) -> &str {
        self.inner.table_name()
    }
    fn schema(&self) -> &TableSchema {
        self.inner.schema()
    }
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
    }
    async fn create_table(&self) -> StoreResult<bool> {
        self.inner.create_table().await
    }
    async fn delete_table(&self) -> StoreResult<bool> {
        self.inner.delete_table().await
    }
    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.inner.describe_table().await
    }
    async fn get_item(&self, _: GetItem) -> StoreResult<Option<Item>> {
        self.stall().await
    }
    async fn batch_get_page(&self, _: BatchGet) -> StoreResult<BatchGetPage> {
        self.stall().await
    }
    async fn query(&self, _: Query) -> StoreResult<QueryOutput> {
        self.stall().await
    }
    async fn scan(&self, _: Scan) -> StoreResult<QueryOutput> {
        self.stall().await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        self.inner.put_item(req).await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        self.inner.update_item(req).await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        self.inner.delete_item(req).await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        self.inner.transact_write(actions).await
    }
    async fn batch_write_page(
        &self,
        req: itemgraph::store::BatchWrite,
    ) -> StoreResult<itemgraph::store::BatchWritePage> {
        self.inner.batch_write_page(req).await
    }
}
