//! A change stream that asks a hook before each `GetRecords` call: to count the calls,
//! or to answer one with an error the real stream would give (an expired iterator).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use itemgraph::store::stream::{
    ChangeStream, RecordsPage, ShardInfo, StartAt, StreamError, StreamResult,
};

/// What runs before each `GetRecords`: `Some(error)` answers the call with it.
pub type Hook = Arc<dyn Fn() -> BoxFuture<'static, Option<StreamError>> + Send + Sync>;

/// `inner`, with `hook` before each `GetRecords`.
pub struct Hooked {
    pub inner: Arc<dyn ChangeStream>,
    pub hook: Hook,
}

#[async_trait]
impl ChangeStream for Hooked {
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
    }
    async fn latest(&self) -> StreamResult<String> {
        self.inner.latest().await
    }
    async fn shards(&self) -> StreamResult<Vec<ShardInfo>> {
        self.inner.shards().await
    }
    async fn shard_iterator(&self, shard: &str, at: StartAt) -> StreamResult<String> {
        self.inner.shard_iterator(shard, at).await
    }
    async fn get_records(&self, iterator: &str, limit: u32) -> StreamResult<RecordsPage> {
        if let Some(error) = (self.hook)().await {
            return Err(error);
        }
        self.inner.get_records(iterator, limit).await
    }
    async fn wait_for_changes(&self, idle: Duration) {
        self.inner.wait_for_changes(idle).await
    }
}
