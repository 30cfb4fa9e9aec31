//! The DynamoDB engine on `aws-sdk-dynamodb`.
//!
//! Each port operation is validated by [`validate`] first (so this engine and the embedded
//! one refuse the same requests with the same message), then becomes exactly one SDK call.
//! The port's condition and update trees are rendered by one `Expressions` renderer into
//! expression strings with `#n…`/`:v…` placeholders, so attribute names never collide with
//! DynamoDB's reserved words and values never need quoting. Items cross the boundary through
//! `serde_dynamo`'s conversions; SDK errors become [`StoreError`]s in one place,
//! `store_error`, and nowhere else in the crate.
//!
//! Every request that can asks DynamoDB for the capacity it consumed
//! (`ReturnConsumedCapacity: INDEXES`), recorded in
//! [`metrics::DYNAMODB_CONSUMED_CAPACITY`]; an interceptor on the client counts the SDK's
//! retries ([`metrics::DYNAMODB_RETRIES`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::credentials::CredentialsProviderChain;
use aws_config::meta::region::RegionProviderChain;
use aws_config::profile::{ProfileFileCredentialsProvider, ProfileFileRegionProvider};
use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    self as sdk, AttributeDefinition, BillingMode, ConsumedCapacity, GlobalSecondaryIndex,
    IndexStatus, KeySchemaElement, KeyType, KeysAndAttributes, Projection, ProjectionType,
    ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableStatus,
    TransactWriteItem,
};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::RequestAttempts;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

mod convert;
mod errors;
mod stream;
#[cfg(test)]
mod tests;

use convert::{from_sdk_item, return_value, returned, to_sdk_item, Expressions};
use errors::{build_error, store_error};

use crate::metrics;

use crate::store::{
    is_conflict, retry_conflicts, validate, BatchGet, BatchGetPage, Delete, GetItem, IndexSchema,
    Item, PageKey, PrimaryKey, Put, Query, QueryOutput, Scan, Store, StoreError, StoreResult,
    TableDescription, TableSchema, TransactAction, Update,
};

/// The SDK's own attribute value; only this module ever names it.
type SdkValue = sdk::AttributeValue;
type SdkItem = HashMap<String, SdkValue>;

/// Where requests are signed for when neither the options nor the environment name a region:
/// DynamoDB Local accepts any region, and a real deployment always configures one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// How long `create_table` waits for the table and its indexes to become ACTIVE. DynamoDB
/// Local is immediate; the real service takes seconds to a minute with two new indexes.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

/// The table's stream as subscriptions need it: every change with the item before and
/// after.
fn stream_specification() -> StoreResult<sdk::StreamSpecification> {
    sdk::StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(sdk::StreamViewType::NewAndOldImages)
        .build()
        .map_err(build_error)
}

/// How to reach DynamoDB. Every field has a default that works against the real service
/// with the standard AWS configuration chain; tests and local runs set `endpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoOptions {
    /// The table every request addresses.
    pub table: String,
    /// An endpoint override (DynamoDB Local, a test stack). `None` uses the region's
    /// public endpoint, or `AWS_ENDPOINT_URL*` when the environment sets one.
    pub endpoint: Option<String>,
    /// Overrides the region found by the configuration chain.
    pub region: Option<String>,
    /// Bounds TCP/TLS connection setup, so an unreachable endpoint fails fast.
    pub connect_timeout: Duration,
    /// Bounds a whole call including retries: the most a resolver can wait on the store.
    pub operation_timeout: Duration,
    /// Bounds one attempt, so a stalled connection is retried instead of eating the budget.
    pub operation_attempt_timeout: Duration,
    /// Attempts per call with the SDK's standard retry mode (throttling, 5xx, timeouts).
    pub max_attempts: u32,
    /// Whether `create_table` turns the table's stream on (subscriptions need it).
    pub stream: bool,
}

impl DynamoOptions {
    /// DynamoDB connects in milliseconds within a region; past this a connection attempt
    /// is lost (a dropped SYN, a dead host) and a new attempt does better than waiting.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
    /// One attempt: far above DynamoDB's latency even for a 1 MB page, so only a stalled
    /// connection reaches it.
    pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);
    /// The whole call, retries included: half the default request deadline (10 s), so a
    /// store that does not answer fails the fields that need it with `UNAVAILABLE` while
    /// the rest of the response still resolves, instead of the deadline cancelling the
    /// whole request.
    pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(5);
    /// The SDK's standard mode default.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
}

impl Default for DynamoOptions {
    fn default() -> Self {
        DynamoOptions {
            table: "itemgraph".into(),
            endpoint: None,
            region: None,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            operation_timeout: Self::DEFAULT_OPERATION_TIMEOUT,
            operation_attempt_timeout: Self::DEFAULT_ATTEMPT_TIMEOUT,
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            stream: true,
        }
    }
}

/// The [`Store`] on DynamoDB (or DynamoDB Local). Cheap to clone: the SDK client is a handle.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    schema: TableSchema,
    /// The table's stream, when the store was connected with a configuration a streams
    /// client could be made from ([`DynamoStore::connect`]).
    changes: Option<Arc<stream::DynamoChanges>>,
    /// Whether `create_table` turns the stream on.
    create_stream: bool,
}

impl DynamoStore {
    /// Builds a client from the standard AWS configuration chain plus `opts`.
    ///
    /// With an endpoint override, credentials and region come only from the environment and
    /// the profile files, then fall back to static dummy values: DynamoDB Local accepts any
    /// credentials, and the rest of the chain (container and instance metadata) would probe
    /// the network for seconds before giving up on a developer machine or in CI.
    pub async fn connect(opts: DynamoOptions, schema: TableSchema) -> Self {
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(opts.connect_timeout)
            .operation_timeout(opts.operation_timeout)
            .operation_attempt_timeout(opts.operation_attempt_timeout)
            .build();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(RetryConfig::standard().with_max_attempts(opts.max_attempts.max(1)))
            .timeout_config(timeouts)
            // The SDK's stalled-stream protection watches every response body's throughput
            // with a timer of its own (5 % of the server's CPU at concurrency 64, measured);
            // DynamoDB's bodies are small JSON, and the attempt timeout above already ends
            // a stalled one and retries it.
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
        let fallback_region = Region::from_static(DEFAULT_REGION);
        loader = match (&opts.region, &opts.endpoint) {
            (Some(region), _) => loader.region(Region::new(region.clone())),
            (None, Some(_)) => loader.region(
                RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
                    .or_else(ProfileFileRegionProvider::builder().build())
                    .or_else(fallback_region),
            ),
            (None, None) => {
                loader.region(RegionProviderChain::default_provider().or_else(fallback_region))
            }
        };
        if let Some(endpoint) = &opts.endpoint {
            let credentials = CredentialsProviderChain::first_try(
                "Environment",
                EnvironmentVariableCredentialsProvider::new(),
            )
            .or_else("Profile", ProfileFileCredentialsProvider::builder().build())
            .or_else(
                "EndpointOverrideDummy",
                // DynamoDB Local (2.x and later) accepts only letters and digits in a key id.
                Credentials::new("itemgraphlocal", "itemgraphlocal", None, None, "itemgraph"),
            );
            loader = loader
                .endpoint_url(endpoint)
                .credentials_provider(credentials);
        }
        let config = loader.load().await;
        let streams = aws_sdk_dynamodbstreams::Client::new(&config);
        let mut store =
            Self::from_client(Client::new(&config), opts.table, schema).with_streams(streams);
        store.create_stream = opts.stream;
        store
    }

    /// The same store following the table's stream through `streams` (a client for the
    /// same account, region and endpoint).
    pub fn with_streams(mut self, streams: aws_sdk_dynamodbstreams::Client) -> Self {
        self.changes = Some(Arc::new(stream::DynamoChanges {
            client: self.client.clone(),
            streams,
            table: self.table.clone(),
            schema: self.schema.clone(),
            arn: tokio::sync::Mutex::new(None),
        }));
        self
    }

    /// Turns the table's stream on (`NEW_AND_OLD_IMAGES`) when it is off; `Ok(false)`
    /// when it was on already. A stream with another view type is refused: subscriptions
    /// need the item before and after each change.
    pub async fn enable_stream(&self) -> StoreResult<bool> {
        self.turn_stream_on(false).await
    }

    async fn turn_stream_on(&self, dry_run: bool) -> StoreResult<bool> {
        let out = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        let spec = out.table().and_then(|t| t.stream_specification());
        if let Some(spec) = spec.filter(|s| s.stream_enabled()) {
            return if spec.stream_view_type() == Some(&sdk::StreamViewType::NewAndOldImages) {
                Ok(false)
            } else {
                Err(StoreError::Validation(format!(
                    "table {} has a stream of view type {:?}; subscriptions need \
                     NEW_AND_OLD_IMAGES (disable that stream first)",
                    self.table,
                    spec.stream_view_type()
                )))
            };
        }
        if dry_run {
            return Ok(true);
        }
        self.client
            .update_table()
            .table_name(&self.table)
            .stream_specification(stream_specification()?)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        self.wait_until_active().await?;
        Ok(true)
    }

    /// Wraps a client configured elsewhere (tests, or an application that shares one),
    /// adding the interceptor that counts its retries.
    pub fn from_client(client: Client, table: String, schema: TableSchema) -> Self {
        let config = client
            .config()
            .to_builder()
            .interceptor(RetryCounter)
            .build();
        DynamoStore {
            client: Client::from_conf(config),
            table,
            schema,
            changes: None,
            create_stream: true,
        }
    }

    /// The raw SDK client: the contract tests send requests that bypass validation to prove
    /// DynamoDB rejects them too.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn key(&self, key: &PrimaryKey) -> SdkItem {
        HashMap::from([
            (self.schema.pk.clone(), SdkValue::S(key.pk.clone())),
            (self.schema.sk.clone(), SdkValue::S(key.sk.clone())),
        ])
    }

    fn primary_key_of(&self, key: SdkItem) -> StoreResult<PrimaryKey> {
        let item = from_sdk_item(key)?;
        self.schema.key_of(&item).ok_or_else(|| {
            StoreError::Internal(format!("DynamoDB returned a malformed key: {item:?}"))
        })
    }

    /// `ExclusiveStartKey`: on an index DynamoDB wants the index key and the table key.
    fn start_key(&self, index: Option<&IndexSchema>, start: &PageKey) -> SdkItem {
        let mut key = self.key(&start.table);
        if let (Some(index), Some(ik)) = (index, &start.index) {
            key.insert(index.pk.clone(), SdkValue::S(ik.pk.clone()));
            key.insert(index.sk.clone(), SdkValue::S(ik.sk.clone()));
        }
        key
    }

    /// A Query's or Scan's page in the port's terms (an empty `LastEvaluatedKey` is none).
    fn query_output(
        &self,
        index: Option<&IndexSchema>,
        items: Option<Vec<SdkItem>>,
        last_evaluated_key: Option<SdkItem>,
    ) -> StoreResult<QueryOutput> {
        Ok(QueryOutput {
            items: items
                .unwrap_or_default()
                .into_iter()
                .map(from_sdk_item)
                .collect::<StoreResult<_>>()?,
            last_evaluated_key: last_evaluated_key
                .filter(|k| !k.is_empty())
                .map(|k| self.page_key(index, k))
                .transpose()?,
        })
    }

    fn page_key(&self, index: Option<&IndexSchema>, last: SdkItem) -> StoreResult<PageKey> {
        let item = from_sdk_item(last)?;
        let malformed = || {
            StoreError::Internal(format!(
                "DynamoDB returned a malformed LastEvaluatedKey: {item:?}"
            ))
        };
        let table = self.schema.key_of(&item).ok_or_else(malformed)?;
        let index = match index {
            None => None,
            Some(index) => Some(
                self.schema
                    .index_key_of(index, &item)
                    .ok_or_else(malformed)?,
            ),
        };
        Ok(PageKey { table, index })
    }

    async fn wait_until_active(&self) -> StoreResult<()> {
        let deadline = tokio::time::Instant::now() + TABLE_ACTIVE_TIMEOUT;
        let mut pause = Duration::from_millis(20);
        loop {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(|e| store_error(&self.table, e))?;
            let table = out.table.as_ref();
            let active = table.and_then(|t| t.table_status()) == Some(&TableStatus::Active)
                && table.is_some_and(|t| {
                    t.global_secondary_indexes()
                        .iter()
                        .all(|i| i.index_status() == Some(&IndexStatus::Active))
                });
            if active {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StoreError::Unavailable(format!(
                    "table {} was not ACTIVE after {}s",
                    self.table,
                    TABLE_ACTIVE_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    fn transact_item(&self, action: TransactAction) -> StoreResult<TransactWriteItem> {
        let on_failure = |asked: bool| asked.then_some(ReturnValuesOnConditionCheckFailure::AllOld);
        let item = match action {
            TransactAction::Put(p) => {
                let mut ex = Expressions::default();
                let condition = p.condition.as_ref().map(|c| ex.condition(c));
                let (names, values) = ex.into_maps();
                let put = sdk::Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(to_sdk_item(p.item)))
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        p.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().put(put)
            }
            TransactAction::Update(u) => {
                let mut ex = Expressions::default();
                let Some(update) = ex.update(&u.update) else {
                    // TransactWriteItems requires an UpdateExpression; there is no no-op one.
                    return Err(StoreError::Validation(
                        "1 validation error detected: Value null at 'transactItems.member.update.updateExpression' failed to satisfy constraint: Member must not be null".into(),
                    ));
                };
                let condition = u.condition.as_ref().map(|c| ex.condition(c));
                let (names, values) = ex.into_maps();
                let update = sdk::Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key(&u.key)))
                    .update_expression(update)
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        u.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().update(update)
            }
            TransactAction::Delete(d) => {
                let mut ex = Expressions::default();
                let condition = d.condition.as_ref().map(|c| ex.condition(c));
                let (names, values) = ex.into_maps();
                let delete = sdk::Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key(&d.key)))
                    .set_condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        d.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().delete(delete)
            }
            TransactAction::ConditionCheck(c) => {
                let mut ex = Expressions::default();
                let condition = ex.condition(&c.condition);
                let (names, values) = ex.into_maps();
                let check = sdk::ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.key(&c.key)))
                    .condition_expression(condition)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_return_values_on_condition_check_failure(on_failure(
                        c.return_old_on_condition_failure,
                    ))
                    .build()
                    .map_err(build_error)?;
                TransactWriteItem::builder().condition_check(check)
            }
        };
        Ok(item.build())
    }
}

#[async_trait]
impl Store for DynamoStore {
    fn table_name(&self) -> &str {
        &self.table
    }

    fn schema(&self) -> &TableSchema {
        &self.schema
    }

    fn engine_name(&self) -> &'static str {
        "dynamodb"
    }

    fn change_stream(&self) -> Option<Arc<dyn crate::store::stream::ChangeStream>> {
        self.changes
            .clone()
            .map(|c| c as Arc<dyn crate::store::stream::ChangeStream>)
    }

    async fn enable_change_stream(&self, dry_run: bool) -> StoreResult<bool> {
        self.turn_stream_on(dry_run).await
    }

    async fn create_table(&self) -> StoreResult<bool> {
        let s = &self.schema;
        let key_schema = |pk: &str, sk: &str| -> StoreResult<Vec<KeySchemaElement>> {
            [(pk, KeyType::Hash), (sk, KeyType::Range)]
                .into_iter()
                .map(|(attr, kind)| {
                    KeySchemaElement::builder()
                        .attribute_name(attr)
                        .key_type(kind)
                        .build()
                        .map_err(build_error)
                })
                .collect()
        };
        let mut key_attrs: Vec<&str> = vec![&s.pk, &s.sk];
        for index in &s.indexes {
            for attr in [&index.pk, &index.sk] {
                if !key_attrs.contains(&attr.as_str()) {
                    key_attrs.push(attr);
                }
            }
        }
        let definitions = key_attrs
            .into_iter()
            .map(|attr| {
                AttributeDefinition::builder()
                    .attribute_name(attr)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(build_error)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let indexes = s
            .indexes
            .iter()
            .map(|index| {
                GlobalSecondaryIndex::builder()
                    .index_name(&index.name)
                    .set_key_schema(Some(key_schema(&index.pk, &index.sk)?))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build()
                    .map_err(build_error)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .set_attribute_definitions(Some(definitions))
            .set_key_schema(Some(key_schema(&s.pk, &s.sk)?))
            .set_global_secondary_indexes((!indexes.is_empty()).then_some(indexes))
            .billing_mode(BillingMode::PayPerRequest)
            .set_stream_specification(self.create_stream.then(stream_specification).transpose()?)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e) if e.code() == Some("ResourceInUseException") => return Ok(false),
            Err(e) => return Err(store_error(&self.table, e)),
        }
        self.wait_until_active().await?;
        Ok(true)
    }

    async fn delete_table(&self) -> StoreResult<bool> {
        match self
            .client
            .delete_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) => match store_error(&self.table, e) {
                StoreError::TableNotFound(_) => Ok(false),
                other => Err(other),
            },
        }
    }

    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        let out = match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                return match store_error(&self.table, e) {
                    StoreError::TableNotFound(_) => Ok(None),
                    other => Err(other),
                }
            }
        };
        let Some(t) = out.table else {
            return Ok(None);
        };
        Ok(Some(TableDescription {
            name: t.table_name().unwrap_or(&self.table).to_owned(),
            status: t
                .table_status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            indexes: t
                .global_secondary_indexes()
                .iter()
                .filter_map(|i| i.index_name().map(str::to_owned))
                .collect(),
            item_count: t.item_count().and_then(|n| u64::try_from(n).ok()),
        }))
    }

    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        validate::get_item(&self.schema, &req)?;
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key(&req.key)))
            .consistent_read(req.consistent_read)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        record_capacity("GetItem", out.consumed_capacity.as_slice());
        out.item.map(from_sdk_item).transpose()
    }

    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        validate::batch_get(&self.schema, &req)?;
        let keys = KeysAndAttributes::builder()
            .set_keys(Some(req.keys.iter().map(|k| self.key(k)).collect()))
            .consistent_read(req.consistent_read)
            .build()
            .map_err(build_error)?;
        let out = self
            .client
            .batch_get_item()
            .request_items(&self.table, keys)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        record_capacity("BatchGetItem", out.consumed_capacity());
        let items = out
            .responses
            .and_then(|mut r| r.remove(&self.table))
            .unwrap_or_default()
            .into_iter()
            .map(from_sdk_item)
            .collect::<StoreResult<_>>()?;
        let unprocessed = out
            .unprocessed_keys
            .and_then(|mut u| u.remove(&self.table))
            .map(|k| k.keys)
            .unwrap_or_default()
            .into_iter()
            .map(|k| self.primary_key_of(k))
            .collect::<StoreResult<_>>()?;
        Ok(BatchGetPage { items, unprocessed })
    }

    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput> {
        validate::scan(&self.schema, &req)?;
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .set_limit(req.limit.map(|l| i32::try_from(l).unwrap_or(i32::MAX)))
            .set_exclusive_start_key(req.start.as_ref().map(|s| self.start_key(None, s)))
            .consistent_read(req.consistent_read)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        record_capacity("Scan", out.consumed_capacity.as_slice());
        self.query_output(None, out.items, out.last_evaluated_key)
    }

    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        validate::query(&self.schema, &req)?;
        let index = req
            .index
            .as_deref()
            .and_then(|name| self.schema.index(name));
        let (pk_attr, sk_attr) = match index {
            Some(i) => (&i.pk, &i.sk),
            None => (&self.schema.pk, &self.schema.sk),
        };
        let mut ex = Expressions::default();
        let key_condition = ex.key_condition(pk_attr, &req.partition, sk_attr, req.sort.as_ref());
        let (names, values) = ex.into_maps();
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .set_index_name(req.index.clone())
            .key_condition_expression(key_condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .scan_index_forward(req.forward)
            .set_limit(req.limit.map(|l| i32::try_from(l).unwrap_or(i32::MAX)))
            .set_exclusive_start_key(req.start.as_ref().map(|s| self.start_key(index, s)))
            .consistent_read(req.consistent_read)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        record_capacity("Query", out.consumed_capacity.as_slice());
        self.query_output(index, out.items, out.last_evaluated_key)
    }

    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        validate::put(&self.schema, &req)?;
        let mut ex = Expressions::default();
        let condition = req.condition.as_ref().map(|c| ex.condition(c));
        let (names, values) = ex.into_maps();
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_sdk_item(req.item)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .set_return_values_on_condition_check_failure(
                req.return_old_on_condition_failure
                    .then_some(ReturnValuesOnConditionCheckFailure::AllOld),
            )
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes);
        let out = send_write("PutItem", |uncertain| {
            let request = request.clone();
            async move {
                let sent = request.customize().interceptor(uncertain).send().await;
                sent.map_err(|e| store_error(&self.table, e))
            }
        })
        .await?;
        record_capacity("PutItem", out.consumed_capacity.as_slice());
        Ok(None)
    }

    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        validate::update(&self.schema, &req)?;
        let mut ex = Expressions::default();
        let update = ex.update(&req.update);
        let condition = req.condition.as_ref().map(|c| ex.condition(c));
        let (names, values) = ex.into_maps();
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key(&req.key)))
            .set_update_expression(update)
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values(return_value(req.returns))
            .set_return_values_on_condition_check_failure(
                req.return_old_on_condition_failure
                    .then_some(ReturnValuesOnConditionCheckFailure::AllOld),
            )
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes);
        let out = send_write("UpdateItem", |uncertain| {
            let request = request.clone();
            async move {
                let sent = request.customize().interceptor(uncertain).send().await;
                sent.map_err(|e| store_error(&self.table, e))
            }
        })
        .await?;
        record_capacity("UpdateItem", out.consumed_capacity.as_slice());
        returned(req.returns, out.attributes)
    }

    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        validate::delete(&self.schema, &req)?;
        let mut ex = Expressions::default();
        let condition = req.condition.as_ref().map(|c| ex.condition(c));
        let (names, values) = ex.into_maps();
        let request = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(self.key(&req.key)))
            .set_condition_expression(condition)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .return_values(return_value(req.returns))
            .set_return_values_on_condition_check_failure(
                req.return_old_on_condition_failure
                    .then_some(ReturnValuesOnConditionCheckFailure::AllOld),
            )
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes);
        let out = send_write("DeleteItem", |uncertain| {
            let request = request.clone();
            async move {
                let sent = request.customize().interceptor(uncertain).send().await;
                sent.map_err(|e| store_error(&self.table, e))
            }
        })
        .await?;
        record_capacity("DeleteItem", out.consumed_capacity.as_slice());
        returned(req.returns, out.attributes)
    }

    /// TransactWriteItems, sent again by [`retry_conflicts`] when DynamoDB cancelled it
    /// only because another write touched one of its items at the same moment (reasons
    /// all `None` or `TransactionConflict`).
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        validate::transact(&self.schema, &actions)?;
        let items = actions
            .into_iter()
            .map(|a| self.transact_item(a))
            .collect::<StoreResult<Vec<_>>>()?;
        let out = send_write("TransactWriteItems", |uncertain| async {
            self.client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                // One token per send, the same across the SDK's attempts of it: an attempt
                // that timed out after DynamoDB applied it is then answered with success
                // when sent again, instead of failing its own conditions.
                .client_request_token(ulid::Ulid::new().to_string())
                .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
                .customize()
                .interceptor(uncertain)
                .send()
                .await
                .map_err(|e| store_error(&self.table, e))
        })
        .await?;
        record_capacity("TransactWriteItems", out.consumed_capacity());
        Ok(())
    }
}

/// Records the capacity DynamoDB reports a request consumed, in the request's trace (the
/// total) and in the metrics: with `INDEXES`, the table's share and each index's apart; when an endpoint gives only the total, that as the
/// table's. A request that fails (a condition, a cancelled transaction) reports nothing,
/// though it consumed capacity too.
fn record_capacity(op: &'static str, consumed: &[ConsumedCapacity]) {
    let total: f64 = consumed.iter().filter_map(|c| c.capacity_units()).sum();
    if !consumed.is_empty() {
        crate::store::trace::report_capacity(total);
    }
    for c in consumed {
        let table = c.table_name().unwrap_or_default();
        let indexes = c
            .global_secondary_indexes()
            .into_iter()
            .chain(c.local_secondary_indexes())
            .flatten()
            .filter_map(|(name, cap)| Some((Some(name.as_str()), cap.capacity_units()?)));
        let parts: Vec<(Option<&str>, f64)> = c
            .table()
            .and_then(|t| t.capacity_units())
            .map(|units| (None, units))
            .into_iter()
            .chain(indexes)
            .collect();
        if parts.is_empty() {
            if let Some(units) = c.capacity_units() {
                metrics::record_consumed_capacity(op, table, None, units);
            }
        }
        for (index, units) in parts {
            metrics::record_consumed_capacity(op, table, index, units);
        }
    }
}

/// Sends one write: again while it only conflicted with concurrent writes
/// ([`retry_conflicts`]: DynamoDB did not apply it), each send watched by one [`Uncertain`],
/// which settles the final error.
async fn send_write<T, F, Fut>(op: &'static str, send: F) -> StoreResult<T>
where
    F: Fn(Uncertain) -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let uncertain = Uncertain::default();
    retry_conflicts(op, || send(uncertain.clone()))
        .await
        .map_err(|e| uncertain.settle(e))
}

/// Notes, for one write, whether any of the SDK's attempts failed without DynamoDB's
/// answer (no response: a timed-out attempt or a broken connection; or a 5xx, which
/// DynamoDB documents as "may have succeeded"). Such an attempt may have been applied, so
/// a later attempt's throttling must not tell the caller that nothing was written.
#[derive(Debug, Clone, Default)]
struct Uncertain(Arc<AtomicBool>);

impl Uncertain {
    /// The write's final error as the caller may read it: a throttle or a conflict
    /// (nothing written by that attempt) becomes `Unavailable` (outcome unknown) after an
    /// unanswered attempt.
    fn settle(&self, err: StoreError) -> StoreError {
        let unknown = self.0.load(Ordering::Relaxed)
            && (matches!(err, StoreError::Throttled(_)) || is_conflict(&err));
        if unknown {
            StoreError::Unavailable(format!(
                "{err}, after an attempt that got no answer: the write may have been applied"
            ))
        } else {
            err
        }
    }
}

impl Intercept for Uncertain {
    fn name(&self) -> &'static str {
        "itemgraph::Uncertain"
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let failed = context.output_or_error().is_some_and(|o| o.is_err());
        let unanswered = context
            .response()
            .is_none_or(|r| r.status().is_server_error());
        if failed && unanswered {
            self.0.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Counts the SDK's retries in [`metrics::DYNAMODB_RETRIES`]: the SDK numbers each attempt
/// in the config bag before the attempt starts, so an attempt past the first is a retry
/// (throttling, a 5xx, a timed-out attempt).
#[derive(Debug)]
struct RetryCounter;

impl Intercept for RetryCounter {
    fn name(&self) -> &'static str {
        "itemgraph::RetryCounter"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let attempt = cfg.load::<RequestAttempts>().map_or(1, |a| a.attempts());
        if attempt > 1 {
            let op = cfg.load::<Metadata>().map_or("unknown", |m| m.name());
            metrics::record_retry(op, "sdk");
        }
        Ok(())
    }
}
