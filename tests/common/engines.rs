//! One handle per engine for the generic suites: a fresh embedded store, or a fresh table
//! on DynamoDB Local (None, loudly, when it is unavailable outside CI).

use itemgraph::store::dynamo::DynamoStore;
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::{Store, TableSchema};

/// A new in-memory embedded store with the table created.
pub async fn embedded() -> EmbeddedStore {
    let store = EmbeddedStore::in_memory("itemgraph", TableSchema::itemgraph()).expect("open");
    assert!(store.create_table().await.expect("create table"));
    store
}

/// A new in-memory embedded store holding the demo data: what the HTTP-level suites serve.
pub async fn embedded_demo() -> EmbeddedStore {
    let store = embedded().await;
    itemgraph::demo::seed_demo(&store)
        .await
        .expect("seed the demo data");
    store
}

/// A new table on DynamoDB Local, created; `None` only when DynamoDB Local is unavailable
/// and `CI` is not set (the harness says so on stderr).
pub async fn dynamodb(prefix: &str) -> Option<DynamoStore> {
    super::dynamo_local::store(prefix).await
}
