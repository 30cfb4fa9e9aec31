//! GraphQL over the demo data, for the suites that run on every engine.
//!
//! [`Api::embedded`] and [`Api::dynamodb`] seed the demo set into a fresh table; [`Api::run`]
//! executes one request through [`graphql::execute`] with the store trace on and a fixed
//! cursor secret, so the same query gives the same cursors on every run and every engine.
//! [`normalized`] removes what legitimately differs between runs and engines (timings,
//! the table's name), so whole responses, trace included, can be compared byte for byte.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use itemgraph::auth::Access;
use itemgraph::graphql::TokenExpiry;
use itemgraph::graphql::{self, CursorCodec, ItemgraphSchema};
use itemgraph::live::{Hub, LiveOptions};
use itemgraph::store::Store;
use serde_json::Value;

/// The cursor secret of every test request: cursors are a pure function of it.
pub const CURSOR_SECRET: &[u8] = b"itemgraph-tests-fixed-cursor-secret";

/// The table name every engine's trace shows after [`normalized`].
pub const TABLE: &str = "itemgraph";

/// The codec the tests' requests use, to forge or check cursors by hand.
pub fn cursors() -> CursorCodec {
    CursorCodec::new(CURSOR_SECRET)
}

/// The default limits with a deadline for a loaded machine: the suites that race requests
/// (a hundred creates at once on one DynamoDB Local beside the rest of the run) hold
/// what the answers are, not how soon they come; `limits.rs` holds the deadline itself.
fn limits() -> graphql::Limits {
    graphql::Limits {
        request_timeout: std::time::Duration::from_secs(120),
        ..graphql::Limits::default()
    }
}

/// Nothing, before or after a case ([`crate::on_both_engines_of`]).
pub async fn nothing(_: &Api) {}

/// The example chart `examples/charts/{name}.toml`, checked.
pub fn example_chart(name: &str) -> Arc<itemgraph::chart::Chart> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("examples/charts/{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// The schema and a store holding the demo data.
pub struct Api {
    pub store: Arc<dyn Store>,
    /// The store below the chart's stored forms: items as the table holds them (the same
    /// store where the chart stores items as it names them).
    pub raw: Arc<dyn Store>,
    schema: ItemgraphSchema,
    /// The change stream's reader for [`Api::subscribe`].
    pub hub: Arc<Hub>,
    /// Which items the hub's changes are of.
    design: itemgraph::live::Design,
    /// DynamoDB Local tables are dropped by [`Api::finish`]; embedded ones just vanish.
    drop_table: bool,
    /// A chart of several tables as served: its tables after the first under this test's
    /// names on DynamoDB Local (what [`Api::assert_clean`] reads and [`Api::finish`] drops).
    served: Option<Arc<itemgraph::chart::Chart>>,
}

impl Api {
    /// A fresh in-memory embedded store with the demo data.
    pub async fn embedded() -> Api {
        Api::seeded(Arc::new(super::engines::embedded().await), false).await
    }

    /// A fresh DynamoDB Local table with the demo data and its stream on; `None` when DynamoDB Local is
    /// unavailable outside CI (see [`super::dynamo_local::endpoint`]).
    pub async fn dynamodb(table_prefix: &str) -> Option<Api> {
        let store = super::engines::dynamodb(table_prefix).await?;
        let api = Api::seeded(Arc::new(store.clone()), true).await;
        // The stream after the seed: the suites follow what they do themselves.
        store.enable_stream().await.expect("enabling the stream");
        Some(api)
    }

    /// [`Api::dynamodb`] without the table's stream, for suites that follow no changes:
    /// DynamoDB Local describes every stream on every request, so each stream a suite
    /// turns on slows every later request of the run.
    pub async fn dynamodb_without_stream(table_prefix: &str) -> Option<Api> {
        let store = super::engines::dynamodb(table_prefix).await?;
        Some(Api::seeded(Arc::new(store), true).await)
    }

    /// The schema over `store` as it is (e.g. a wrapper around [`Api::store`]); the table
    /// is left to whoever owns it.
    pub fn over(store: Arc<dyn Store>) -> Api {
        Api {
            hub: Hub::new(store.change_stream(), super::changes::test_options()),
            design: itemgraph::live::Design::builtin(),
            raw: store.clone(),
            store,
            schema: graphql::schema_with(&limits()),
            drop_table: false,
            served: None,
        }
    }

    /// `chart`'s API over a fresh table holding its samples: in memory on the embedded
    /// engine, or on DynamoDB Local (`None` when it is unavailable outside CI).
    pub async fn chart(chart: Arc<itemgraph::chart::Chart>, dynamodb: Option<&str>) -> Option<Api> {
        Api::chart_holding(chart, None, dynamodb).await
    }

    /// `chart`'s API over fresh tables holding `items` as the tables store them (a NoSQL
    /// Workbench model's sample items), each with its table's place in the chart's tables,
    /// not the chart's samples.
    pub async fn chart_with_stored(
        chart: Arc<itemgraph::chart::Chart>,
        items: Vec<(usize, itemgraph::store::Item)>,
        dynamodb: Option<&str>,
    ) -> Option<Api> {
        Api::chart_holding(chart, Some(items), dynamodb).await
    }

    async fn chart_holding(
        chart: Arc<itemgraph::chart::Chart>,
        stored: Option<Vec<(usize, itemgraph::store::Item)>>,
        dynamodb: Option<&str>,
    ) -> Option<Api> {
        // On DynamoDB Local, a chart's other tables under names of this test's too.
        let chart = match dynamodb {
            Some(prefix) if chart.several_tables() => {
                let renames: Vec<(String, String)> = chart.tables[1..]
                    .iter()
                    .map(|t| {
                        let name = format!("{prefix}-{}", t.name);
                        (
                            t.name.clone(),
                            super::dynamo_local::unique_table_name(&name),
                        )
                    })
                    .collect();
                let fresh = Arc::new(itemgraph::chart::parse(&chart.source).expect("reparse"));
                itemgraph::config::named_as_stored(fresh, None, &renames).expect("renamed")
            }
            _ => chart,
        };
        let (store, drop_table): (Arc<dyn Store>, bool) = match dynamodb {
            None => (
                Arc::new(
                    itemgraph::store::embedded::EmbeddedStore::in_memory(
                        &chart.table.name,
                        chart.table_schema(),
                    )
                    .expect("open")
                    .with_siblings(chart.other_tables(), None)
                    .expect("open its other tables"),
                ),
                false,
            ),
            Some(prefix) => {
                let endpoint = super::dynamo_local::endpoint().await?;
                let table = super::dynamo_local::unique_table_name(prefix);
                (
                    Arc::new(
                        super::dynamo_local::connect_with(&endpoint, &table, chart.table_schema())
                            .await
                            .with_siblings(chart.other_tables()),
                    ),
                    true,
                )
            }
        };
        for t in 0..chart.tables.len() {
            let one = chart.store_of(&store, t).expect("its table");
            assert!(one.create_table().await.expect("create table"));
        }
        let raw = store.clone();
        let store = itemgraph::store::stored::wrap(store, &chart);
        match stored {
            Some(items) => {
                for (t, item) in items {
                    chart
                        .store_of(&raw, t)
                        .expect("its table")
                        .put_item(itemgraph::store::Put::new(item))
                        .await
                        .expect("put an item as stored");
                }
            }
            None => {
                let written = itemgraph::chart::samples::seed(store.as_ref(), &chart)
                    .await
                    .expect("seed the samples");
                assert_eq!(written, chart.samples.len());
            }
        }
        let served = chart.several_tables().then(|| chart.clone());
        Some(Api {
            drop_table,
            raw,
            served,
            ..Api::chart_over(chart, store)
        })
    }

    /// `chart`'s API over `store` as it is (e.g. a wrapper around a seeded table); the
    /// table is left to whoever owns it.
    pub fn chart_over(chart: Arc<itemgraph::chart::Chart>, store: Arc<dyn Store>) -> Api {
        let design = itemgraph::live::Design::of(chart.clone());
        Api {
            hub: Hub::for_design(
                // Each table's of a chart of several, read as one.
                itemgraph::store::merged_stream::MergedStream::of_chart(store.as_ref(), &chart),
                None,
                super::changes::test_options(),
                design.clone(),
            ),
            design,
            schema: graphql::chart_schema(chart, &limits()).expect("the schema"),
            raw: store.clone(),
            store,
            drop_table: false,
            served: None,
        }
    }

    async fn seeded(store: Arc<dyn Store>, drop_table: bool) -> Api {
        crate::common::demo::seed_demo(store.as_ref())
            .await
            .unwrap_or_else(|e| panic!("seeding {}: {e}", store.table_name()));
        Api {
            hub: Hub::new(store.change_stream(), super::changes::test_options()),
            design: itemgraph::live::Design::builtin(),
            raw: store.clone(),
            store,
            schema: graphql::schema_with(&limits()),
            drop_table,
            served: None,
        }
    }

    /// The names the served chart's tables are stored under (the first's is the store's).
    pub fn served_tables(&self) -> Vec<String> {
        match &self.served {
            Some(chart) => chart.tables.iter().map(|t| t.name.clone()).collect(),
            None => vec![self.store.table_name().to_owned()],
        }
    }

    /// The table holds what `chart` implies (`itemgraph check`).
    pub async fn assert_clean(&self, chart: &itemgraph::chart::Chart) {
        let chart = self.served.as_deref().unwrap_or(chart);
        let report = itemgraph::check::check_chart(self.store.as_ref(), chart)
            .await
            .unwrap();
        assert!(report.is_clean(), "{report}: {:#?}", report.violations);
    }

    /// Drops a DynamoDB Local table, so one shared DynamoDB Local does not keep every
    /// test's table for the rest of the run.
    pub async fn finish(self) {
        if self.drop_table {
            if let Some(chart) = &self.served {
                for t in &chart.tables[1..] {
                    if let Some(sibling) = self.store.sibling(&t.name) {
                        let _ = sibling.delete_table().await;
                    }
                }
            }
            let _ = self.store.delete_table().await;
        }
    }

    /// Runs `query` with the trace on; the raw response as JSON.
    pub async fn run(&self, query: &str) -> Value {
        self.run_with(query, Value::Null).await
    }

    /// Runs `query` with `variables` (a JSON object, or null) and the trace on, with auth
    /// off.
    pub async fn run_with(&self, query: &str, variables: Value) -> Value {
        self.run_as(&Access::Unrestricted, query, variables).await
    }

    /// Runs `query` with `variables` and the trace on, for a caller with `access`.
    pub async fn run_as(&self, access: &Access, query: &str, variables: Value) -> Value {
        let mut request = async_graphql::Request::new(query);
        if !variables.is_null() {
            request = request.variables(async_graphql::Variables::from_json(variables));
        }
        let response = graphql::execute(
            &self.schema,
            self.store.clone(),
            cursors(),
            access.clone(),
            request,
            true,
        )
        .await;
        serde_json::to_value(&response).expect("a response serializes")
    }

    /// The same API with its own change stream reader, configured by `options`.
    pub fn with_live(mut self, options: LiveOptions) -> Api {
        self.hub = Hub::for_design(
            self.store.change_stream(),
            None,
            options,
            self.design.clone(),
        );
        self
    }

    /// Starts subscription `query` for a caller with `access` whose token expires at
    /// `expiry`; its responses as JSON.
    pub fn subscribe(
        &self,
        access: &Access,
        expiry: Option<u64>,
        query: &str,
        variables: Value,
    ) -> impl Stream<Item = Value> + Send + Unpin + 'static {
        self.subscribe_traced(access, expiry, query, variables, false)
    }

    /// [`Api::subscribe`], with the DynamoDB trace on each event when `trace`.
    pub fn subscribe_traced(
        &self,
        access: &Access,
        expiry: Option<u64>,
        query: &str,
        variables: Value,
        trace: bool,
    ) -> impl Stream<Item = Value> + Send + Unpin + 'static {
        let mut request = async_graphql::Request::new(query);
        if !variables.is_null() {
            request = request.variables(async_graphql::Variables::from_json(variables));
        }
        graphql::subscribe(
            &self.schema,
            self.store.clone(),
            cursors(),
            self.hub.clone(),
            access.clone(),
            TokenExpiry(expiry),
            request,
            trace,
        )
        .map(|r| serde_json::to_value(&r).expect("a response serializes"))
        .boxed()
    }

    /// Runs `query` and returns its `data`, panicking on any error: for the steps of a
    /// test that only set up what it checks.
    pub async fn data(&self, query: &str, variables: Value) -> Value {
        let response = self.run_with(query, variables).await;
        assert!(
            response.get("errors").is_none(),
            "unexpected errors for {query}: {response:#}"
        );
        response["data"].clone()
    }
}

/// `value` with every traced request's `startMicros` and `durationMicros` set to 0 and its
/// `table` set to [`TABLE`]: what is left is the same on every run and every engine.
pub fn normalized(mut value: Value) -> Value {
    if let Some(requests) = value
        .pointer_mut("/extensions/dynamodb/requests")
        .and_then(Value::as_array_mut)
    {
        for request in requests {
            if let Some(r) = request.as_object_mut() {
                for timing in ["startMicros", "durationMicros"] {
                    if r.contains_key(timing) {
                        r.insert(timing.to_owned(), Value::from(0));
                    }
                }
                if r.contains_key("table") {
                    r.insert("table".to_owned(), Value::from(TABLE));
                }
                // DynamoDB reports capacity, the embedded engine none.
                r.remove("consumedCapacity");
            }
        }
    }
    value
}

/// The traced requests of a response (`extensions.dynamodb.requests`).
pub fn requests(response: &Value) -> &Vec<Value> {
    response
        .pointer("/extensions/dynamodb/requests")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no trace in {response:#}"))
}

/// `extensions.dynamodb.requestCount`, checked against the list it counts.
pub fn request_count(response: &Value) -> u64 {
    let count = response
        .pointer("/extensions/dynamodb/requestCount")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no requestCount in {response:#}"));
    assert_eq!(count, requests(response).len() as u64, "{response:#}");
    count
}

/// The `extensions.code` of every error, in order.
pub fn error_codes(response: &Value) -> Vec<String> {
    response
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    e.pointer("/extensions/code")
                        .and_then(Value::as_str)
                        .unwrap_or("<none>")
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A subscription's events, as [`Api::subscribe`] gives them.
pub type Events = Box<dyn Stream<Item = Value> + Send + Unpin>;

/// The next event of `events` within 20 s, without errors: its `field`.
pub async fn next_event(events: &mut Events, field: &str) -> Value {
    let r = tokio::time::timeout(std::time::Duration::from_secs(20), events.next())
        .await
        .expect("an event in time")
        .expect("the subscription goes on");
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"][field].clone()
}
