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

/// The box office's two tables (`examples/charts/box-office.toml`) as the commands are
/// given them, on each engine: the store flags a command takes, the engine to open them
/// with, and the bookings table's name. On a file in `dir`, under the chart's names; on
/// DynamoDB Local where it is available, each under a name of its own (`--table`,
/// `--table-name`).
pub async fn box_office_tables(
    dir: &std::path::Path,
) -> Vec<(Vec<String>, itemgraph::store::open::Engine, String)> {
    use itemgraph::store::open::Engine;
    let data = dir.join("box.redb");
    let mut engines = vec![(
        vec!["--data".to_owned(), data.to_str().unwrap().to_owned()],
        Engine::Embedded {
            table: "box-office".into(),
            data: Some(data.clone()),
            cache_mib: 16,
            faults: Default::default(),
            change_log: Default::default(),
        },
        "box-office-bookings".to_owned(),
    )];
    if let Some(endpoint) = super::dynamo_local::endpoint().await {
        let first = super::dynamo_local::unique_table_name("box-office");
        let bookings = super::dynamo_local::unique_table_name("box-office-bookings");
        let mut opts = super::dynamo_local::options(&endpoint);
        opts.table = first.clone();
        engines.push((
            vec![
                "--store".to_owned(),
                "dynamodb".to_owned(),
                "--endpoint".to_owned(),
                endpoint.clone(),
                "--region".to_owned(),
                "us-east-1".to_owned(),
                "--table".to_owned(),
                first,
                "--table-name".to_owned(),
                format!("box-office-bookings={bookings}"),
            ],
            Engine::DynamoDb(opts),
            bookings,
        ));
    }
    engines
}

/// Drops the tables of [`box_office_tables`] on DynamoDB Local (a file goes with its
/// directory).
pub async fn drop_box_office_tables(
    engine: &itemgraph::store::open::Engine,
    bookings: &str,
    chart: &itemgraph::chart::Chart,
) {
    let itemgraph::store::open::Engine::DynamoDb(opts) = engine else {
        return;
    };
    let endpoint = opts.endpoint.as_deref().unwrap();
    let first =
        super::dynamo_local::connect_with(endpoint, &opts.table, chart.table_schema()).await;
    super::dynamo_local::drop_table(&first).await;
    let second = super::dynamo_local::connect_with(endpoint, bookings, chart.schema_of(1)).await;
    super::dynamo_local::drop_table(&second).await;
}

/// The item at `pk`, `sk` (`""` in a table without a sort key), read strongly consistent.
pub async fn get(store: &dyn Store, pk: &str, sk: &str) -> Option<itemgraph::store::Item> {
    store
        .get_item(itemgraph::store::GetItem {
            key: itemgraph::store::PrimaryKey::new(pk, sk),
            consistent_read: true,
        })
        .await
        .unwrap()
}
