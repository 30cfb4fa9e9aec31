//! A [`Store`] decorator that counts and times every call it forwards
//! ([`crate::metrics::STORE_CALLS`], [`crate::metrics::STORE_CALL_DURATION`]) and runs
//! each in a `store` span (`op`, `table`, `index`), so the engine's own logs and the SDK's
//! nest under the GraphQL request that caused them. In a traced request each call is also
//! an OpenTelemetry client span (`DynamoDB.Query` …) with the conventions' attributes.
//!
//! The server wraps its store in it once, for every request; the trace decorator
//! ([`super::trace::TracedStore`]) goes on top for a request that asks for it.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, StringValue, Value};
use tracing::Instrument;

use super::call_stats::{self, CallStats};
use super::CancelReason;
use super::{
    BatchGet, BatchGetPage, BatchGetTables, BatchGetTablesPage, BatchWrite, BatchWritePage, Delete,
    GetItem, Item, Put, Query, QueryOutput, Scan, Store, StoreError, StoreResult, TableAction,
    TableDescription, TableSchema, TransactAction, Update,
};
use crate::metrics;
use crate::telemetry;

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
        self.call_described(op, index, Vec::new, call, |_| None)
            .await
    }

    /// [`MeteredStore::call`], also in an OpenTelemetry client span when the request is
    /// traced: the conventions' attributes, `request`'s, and the item count `count` reads
    /// from the answer.
    async fn call_described<T>(
        &self,
        op: &'static str,
        index: Option<&str>,
        request: impl FnOnce() -> Vec<KeyValue>,
        call: impl std::future::Future<Output = StoreResult<T>>,
        count: impl FnOnce(&T) -> Option<usize>,
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
        let otel = telemetry::child(span_name(op), SpanKind::Client, || {
            let mut attributes = call_attributes(op, self.inner.table_name(), index);
            attributes.extend(request());
            attributes
        });
        let result = match &otel {
            None => call.instrument(span.clone()).await,
            Some(cx) => {
                let call = call_stats::measured(call.instrument(span.clone()));
                let (result, stats) = telemetry::within(Some(cx), call).await;
                end_span(cx, self.inner.table_name(), &result, stats, count);
                result
            }
        };
        pending.done = true;
        let outcome = store_outcome(&result);
        let took = pending.started.elapsed();
        tracing::debug!(parent: &span, outcome, micros = took.as_micros() as u64, "store call done");
        metrics::record_store_call(op, index, outcome, took);
        result
    }
}

/// `DynamoDB.Query`: the AWS SDK conventions' span name, `{rpc.service}.{rpc.method}`.
fn span_name(op: &'static str) -> &'static str {
    match op {
        "GetItem" => "DynamoDB.GetItem",
        "BatchGetItem" => "DynamoDB.BatchGetItem",
        "Query" => "DynamoDB.Query",
        "Scan" => "DynamoDB.Scan",
        "PutItem" => "DynamoDB.PutItem",
        "UpdateItem" => "DynamoDB.UpdateItem",
        "DeleteItem" => "DynamoDB.DeleteItem",
        "TransactWriteItems" => "DynamoDB.TransactWriteItems",
        "CreateTable" => "DynamoDB.CreateTable",
        "DeleteTable" => "DynamoDB.DeleteTable",
        "DescribeTable" => "DynamoDB.DescribeTable",
        _ => "DynamoDB",
    }
}

/// The attributes the database and AWS SDK semantic conventions give every DynamoDB call.
/// Keys and values of items never appear: they are tenant data.
fn call_attributes(op: &'static str, table: &str, index: Option<&str>) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("db.system", "aws.dynamodb"),
        KeyValue::new("db.system.name", "aws.dynamodb"),
        KeyValue::new("db.operation.name", op),
        KeyValue::new("rpc.system", "aws-api"),
        KeyValue::new("rpc.service", "DynamoDB"),
        KeyValue::new("rpc.method", op),
        KeyValue::new("db.collection.name", table.to_owned()),
        KeyValue::new(
            "aws.dynamodb.table_names",
            Value::Array(vec![StringValue::from(table.to_owned())].into()),
        ),
    ];
    if let Some(index) = index {
        attributes.push(KeyValue::new("aws.dynamodb.index_name", index.to_owned()));
    }
    attributes
}

/// DynamoDB's name for a failure in the port's terms, the span's `error.type`.
fn error_code(err: &StoreError) -> &'static str {
    match err {
        StoreError::Validation(_) => "ValidationException",
        StoreError::ConditionFailed { .. } => "ConditionalCheckFailedException",
        StoreError::TransactionCanceled { .. } => "TransactionCanceledException",
        StoreError::TransactionConflict(_) => "TransactionConflictException",
        StoreError::TableNotFound(_) => "ResourceNotFoundException",
        StoreError::Throttled(_) => "ThrottlingException",
        StoreError::Unavailable(_) => "ServiceUnavailable",
        StoreError::Internal(_) => "InternalServerError",
    }
}

/// Ends a call's span with what it did: items, capacity, attempts, and how it failed.
fn end_span<T>(
    cx: &opentelemetry::Context,
    table: &str,
    result: &StoreResult<T>,
    stats: CallStats,
    count: impl FnOnce(&T) -> Option<usize>,
) {
    let mut attributes = vec![
        KeyValue::new("itemgraph.dynamodb.outcome", store_outcome(result)),
        KeyValue::new("itemgraph.dynamodb.attempts", i64::from(stats.attempts())),
        KeyValue::new("itemgraph.dynamodb.throttles", i64::from(stats.throttles)),
    ];
    if let Some(n) = result.as_ref().ok().and_then(count) {
        attributes.push(KeyValue::new("itemgraph.dynamodb.item_count", n as i64));
    }
    if let Some(units) = stats.consumed_capacity {
        attributes.push(KeyValue::new(
            "itemgraph.dynamodb.consumed_capacity_units",
            units,
        ));
        let consumed = format!(r#"{{"TableName":{table:?},"CapacityUnits":{units}}}"#);
        attributes.push(KeyValue::new(
            "aws.dynamodb.consumed_capacity",
            Value::Array(vec![StringValue::from(consumed)].into()),
        ));
    }
    let error = match result {
        Ok(_) => None,
        Err(err) => {
            if let StoreError::TransactionCanceled { reasons } = err {
                let reasons: Vec<StringValue> = reasons
                    .iter()
                    .map(|r| StringValue::from(cancel_reason_code(r)))
                    .collect();
                attributes.push(KeyValue::new(
                    "itemgraph.dynamodb.cancellation_reasons",
                    Value::Array(reasons.into()),
                ));
            }
            Some(std::borrow::Cow::Borrowed(error_code(err)))
        }
    };
    telemetry::end(cx, attributes, error);
}

fn cancel_reason_code(reason: &CancelReason) -> &'static str {
    match reason {
        CancelReason::None => "None",
        CancelReason::ConditionalCheckFailed { .. } => "ConditionalCheckFailed",
        CancelReason::TransactionConflict => "TransactionConflict",
        CancelReason::Throttled => "ThrottlingError",
        CancelReason::ValidationError(_) => "ValidationError",
        CancelReason::Other { .. } => "Other",
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
    async fn time_to_live(&self) -> StoreResult<Option<String>> {
        self.inner.time_to_live().await
    }
    async fn enable_time_to_live(&self, attribute: &str, dry_run: bool) -> StoreResult<bool> {
        self.inner.enable_time_to_live(attribute, dry_run).await
    }
    async fn create_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        self.inner.create_index(name, dry_run).await
    }
    async fn expire_items(&self) -> StoreResult<usize> {
        self.inner.expire_items().await
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
        let consistent = req.consistent_read;
        self.call_described(
            "GetItem",
            None,
            || vec![KeyValue::new("aws.dynamodb.consistent_read", consistent)],
            self.inner.get_item(req),
            |item| Some(usize::from(item.is_some())),
        )
        .await
    }
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        let (keys, consistent) = (req.keys.len(), req.consistent_read);
        self.call_described(
            "BatchGetItem",
            None,
            || batch_get_attributes(keys, consistent),
            self.inner.batch_get_page(req),
            |page| Some(page.items.len()),
        )
        .await
    }
    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        let index = req.index.clone();
        let (limit, forward, consistent) = (req.limit, req.forward, req.consistent_read);
        self.call_described(
            "Query",
            index.as_deref(),
            || query_attributes(limit, Some(forward), consistent),
            self.inner.query(req),
            |out| Some(out.items.len()),
        )
        .await
    }
    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput> {
        let (limit, consistent) = (req.limit, req.consistent_read);
        let index = req.index.clone();
        self.call_described(
            "Scan",
            index.as_deref(),
            || query_attributes(limit, None, consistent),
            self.inner.scan(req),
            |out| Some(out.items.len()),
        )
        .await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        self.call_described("PutItem", None, Vec::new, self.inner.put_item(req), |_| {
            Some(1)
        })
        .await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        self.call_described(
            "UpdateItem",
            None,
            Vec::new,
            self.inner.update_item(req),
            |_| Some(1),
        )
        .await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        self.call_described(
            "DeleteItem",
            None,
            Vec::new,
            self.inner.delete_item(req),
            |_| Some(1),
        )
        .await
    }
    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage> {
        let n = req.requests.len();
        self.call_described(
            "BatchWriteItem",
            None,
            || vec![KeyValue::new("itemgraph.dynamodb.request_count", n as i64)],
            self.inner.batch_write_page(req),
            |page| Some(n - page.unprocessed.len()),
        )
        .await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let n = actions.len();
        self.call_described(
            "TransactWriteItems",
            None,
            || vec![KeyValue::new("itemgraph.dynamodb.action_count", n as i64)],
            self.inner.transact_write(actions),
            |()| Some(n),
        )
        .await
    }
    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        Some(Arc::new(MeteredStore::new(self.inner.sibling(table)?)))
    }
    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let (keys, consistent) = (req.len(), req.consistent_read);
        self.call_described(
            "BatchGetItem",
            None,
            || batch_get_attributes(keys, consistent),
            self.inner.batch_get_tables_page(req),
            |page| Some(page.tables.iter().map(|(_, p)| p.items.len()).sum()),
        )
        .await
    }
    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        let n = actions.len();
        self.call_described(
            "TransactWriteItems",
            None,
            || vec![KeyValue::new("itemgraph.dynamodb.action_count", n as i64)],
            self.inner.transact_write_tables(actions),
            |()| Some(n),
        )
        .await
    }
}

/// A BatchGetItem's request attributes.
fn batch_get_attributes(keys: usize, consistent: bool) -> Vec<KeyValue> {
    vec![
        KeyValue::new("itemgraph.dynamodb.key_count", keys as i64),
        KeyValue::new("aws.dynamodb.consistent_read", consistent),
    ]
}

/// A Query's or Scan's request attributes.
fn query_attributes(limit: Option<u32>, forward: Option<bool>, consistent: bool) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new("aws.dynamodb.consistent_read", consistent)];
    if let Some(limit) = limit {
        attributes.push(KeyValue::new("aws.dynamodb.limit", i64::from(limit)));
    }
    if let Some(forward) = forward {
        attributes.push(KeyValue::new("aws.dynamodb.scan_forward", forward));
    }
    attributes
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
        let inner = Arc::new(
            EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap(),
        );
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
