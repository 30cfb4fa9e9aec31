//! One handle per engine for the generic suites: a fresh embedded store, or a fresh table
//! on DynamoDB Local (None, loudly, when it is unavailable outside CI).

use itemgraph::store::dynamo::DynamoStore;
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

/// A new in-memory embedded store with the table created.
pub async fn embedded() -> EmbeddedStore {
    let store = EmbeddedStore::in_memory("itemgraph", itemgraph::chart::builtin().table_schema())
        .expect("open");
    assert!(store.create_table().await.expect("create table"));
    store
}

/// A new in-memory embedded store holding the demo data: what the HTTP-level suites serve.
pub async fn embedded_demo() -> EmbeddedStore {
    let store = embedded().await;
    crate::common::demo::seed_demo(&store)
        .await
        .expect("seed the demo data");
    store
}

/// A new table on DynamoDB Local, created; `None` only when DynamoDB Local is unavailable
/// and `CI` is not set (the harness says so on stderr).
pub async fn dynamodb(prefix: &str) -> Option<DynamoStore> {
    super::dynamo_local::store(prefix).await
}

/// A new table on DynamoDB Local with its stream on (see [`dynamodb`]).
pub async fn dynamodb_streaming(prefix: &str) -> Option<DynamoStore> {
    let store = dynamodb(prefix).await?;
    assert!(store.enable_stream().await.expect("enabling the stream"));
    Some(store)
}

/// The DynamoDB engine against an endpoint a test serves itself (a fake answering with
/// errors): dummy credentials, three attempts with 1 ms backoff, nothing created.
pub fn dynamodb_at(endpoint: &str) -> DynamoStore {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(endpoint)
        .retry_config(
            aws_sdk_dynamodb::config::retry::RetryConfig::standard()
                .with_max_attempts(3)
                .with_initial_backoff(std::time::Duration::from_millis(1)),
        )
        .build();
    DynamoStore::from_client(
        aws_sdk_dynamodb::Client::from_conf(config),
        "itemgraph".into(),
        itemgraph::chart::builtin().table_schema(),
    )
}
