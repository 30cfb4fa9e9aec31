//! The DynamoDB engine on `aws-sdk-dynamodb`.
//!
//! Each port operation is validated first by [`DynamoStore`]'s decorator (so this engine and
//! the embedded one refuse the same requests with the same message), then becomes exactly
//! one SDK call.
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
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    self as sdk, ConsumedCapacity, KeysAndAttributes, ReturnConsumedCapacity,
    ReturnValuesOnConditionCheckFailure,
};
use aws_sdk_dynamodb::Client;

mod client;
mod convert;
mod errors;
mod stream;
mod table;
#[cfg(test)]
mod tests;
mod transact;
mod wire;

use client::send_write;
pub use client::{DynamoOptions, DEFAULT_REGION};

use convert::{from_sdk_item, return_value, returned, to_sdk_item, Expressions};
use errors::{build_error, store_error};
use wire::{tapped, Member, Tapped};

use crate::metrics;

use crate::store::validated::Validated;
use crate::store::{
    BatchGet, BatchGetPage, BatchGetTables, BatchGetTablesPage, BatchWrite, BatchWritePage,
    BatchWriteRequest, Delete, GetItem, IndexSchema, Item, PageKey, PrimaryKey, Put, Query,
    QueryOutput, Scan, Store, StoreError, StoreResult, TableAction, TableDescription, TableSchema,
    TransactAction, Update,
};

/// Sends one single-item write request (a fluent builder of the SDK) with [`send_write`]:
/// the builder cloned for each send. A macro because the SDK's builders share no trait to
/// be generic over.
macro_rules! send_single {
    ($store:expr, $op:literal, $request:expr) => {
        send_write($op, || {
            let request = $request.clone();
            async move {
                let sent = request.send().await;
                sent.map_err(|e| store_error(&$store.table, e))
            }
        })
    };
}

/// The SDK's own attribute value; only this module ever names it.
type SdkValue = sdk::AttributeValue;
type SdkItem = HashMap<String, SdkValue>;

/// The [`Store`] on DynamoDB (or DynamoDB Local), every request validated first: what
/// callers hold. Cheap to clone: the SDK client is a handle.
pub type DynamoStore = Validated<DynamoEngine>;

/// The DynamoDB engine, under [`DynamoStore`]'s validation (the only way to make one).
#[derive(Debug, Clone)]
pub struct DynamoEngine {
    client: Client,
    table: String,
    schema: TableSchema,
    /// The table's stream, when the store was connected with a configuration a streams
    /// client could be made from ([`DynamoStore::connect`]).
    changes: Option<Arc<stream::DynamoChanges>>,
    /// Whether `create_table` turns the stream on.
    create_stream: bool,
    /// Every table opened on this client ([`DynamoStore::with_siblings`]), this one's
    /// included, each without siblings of its own (so none refers back to this list).
    family: Arc<Vec<DynamoEngine>>,
}

impl DynamoEngine {
    fn key(&self, key: &PrimaryKey) -> SdkItem {
        self.schema
            .key_attributes(key)
            .into_iter()
            .map(|(name, v)| (name.to_owned(), v.into()))
            .collect()
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
            for (name, v) in index.key_attributes(ik) {
                key.insert(name.to_owned(), v.into());
            }
        }
        key
    }

    /// A Query's or Scan's page in the port's terms (an empty `LastEvaluatedKey` is none):
    /// its items as the tap read them, else as the SDK did.
    fn query_output(
        &self,
        index: Option<&IndexSchema>,
        tapped: Option<Tapped>,
        items: Option<Vec<SdkItem>>,
        last_evaluated_key: Option<SdkItem>,
    ) -> StoreResult<QueryOutput> {
        let items = match tapped {
            Some(Tapped::Items(items)) => items,
            _ => items
                .unwrap_or_default()
                .into_iter()
                .map(from_sdk_item)
                .collect::<StoreResult<_>>()?,
        };
        Ok(QueryOutput {
            items,
            last_evaluated_key: last_evaluated_key
                .filter(|k| !k.is_empty())
                .map(|k| self.page_key(index, k))
                .transpose()?,
            scanned: None,
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
}

#[async_trait]
impl Store for DynamoEngine {
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

    async fn time_to_live(&self) -> StoreResult<Option<String>> {
        self.time_to_live_attribute().await
    }

    async fn create_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        self.add_index(name, dry_run).await
    }

    async fn enable_time_to_live(&self, attribute: &str, dry_run: bool) -> StoreResult<bool> {
        if self.time_to_live_attribute().await?.as_deref() == Some(attribute) {
            return Ok(false);
        }
        if !dry_run {
            self.turn_time_to_live_on(attribute).await?;
        }
        Ok(true)
    }

    async fn create_table(&self) -> StoreResult<bool> {
        self.create().await
    }

    async fn delete_table(&self) -> StoreResult<bool> {
        self.delete().await
    }

    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.describe().await
    }

    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        let call = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key(&req.key)))
            .consistent_read(req.consistent_read)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send();
        let (out, tapped) = tapped(Member::Item, call).await;
        let out = out.map_err(|e| store_error(&self.table, e))?;
        record_capacity("GetItem", out.consumed_capacity.as_slice());
        match tapped {
            Some(Tapped::Item(item)) => Ok(item),
            _ => out.item.map(from_sdk_item).transpose(),
        }
    }

    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        let keys = KeysAndAttributes::builder()
            .set_keys(Some(req.keys.iter().map(|k| self.key(k)).collect()))
            .consistent_read(req.consistent_read)
            .build()
            .map_err(build_error)?;
        let call = self
            .client
            .batch_get_item()
            .request_items(&self.table, keys)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send();
        let (out, tapped) = tapped(Member::Responses, call).await;
        let out = out.map_err(|e| store_error(&self.table, e))?;
        record_capacity("BatchGetItem", out.consumed_capacity());
        let items = match tapped {
            Some(Tapped::Responses(mut by_table)) => {
                by_table.remove(&self.table).unwrap_or_default()
            }
            _ => out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
                .into_iter()
                .map(from_sdk_item)
                .collect::<StoreResult<_>>()?,
        };
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
        let index = req
            .index
            .as_deref()
            .and_then(|name| self.schema.index(name));
        let mut ex = Expressions::default();
        let filter = req.filter.as_ref().map(|c| ex.condition(c));
        let (names, values) = ex.into_maps();
        let call = self
            .client
            .scan()
            .table_name(&self.table)
            .set_index_name(req.index.clone())
            .set_filter_expression(filter)
            .set_expression_attribute_names(names)
            .set_expression_attribute_values(values)
            .set_limit(req.limit.map(|l| i32::try_from(l).unwrap_or(i32::MAX)))
            .set_exclusive_start_key(req.start.as_ref().map(|s| self.start_key(index, s)))
            .consistent_read(req.consistent_read)
            .set_segment(
                req.segment
                    .map(|s| i32::try_from(s.index).unwrap_or(i32::MAX)),
            )
            .set_total_segments(
                req.segment
                    .map(|s| i32::try_from(s.total).unwrap_or(i32::MAX)),
            )
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send();
        let (out, tapped) = tapped(Member::Items, call).await;
        let out = out.map_err(|e| store_error(&self.table, e))?;
        record_capacity("Scan", out.consumed_capacity.as_slice());
        let scanned = usize::try_from(out.scanned_count).ok();
        let mut page = self.query_output(index, tapped, out.items, out.last_evaluated_key)?;
        page.scanned = scanned;
        Ok(page)
    }

    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        let index = req
            .index
            .as_deref()
            .and_then(|name| self.schema.index(name));
        let s = &self.schema;
        let (partition, sorts) = match index {
            Some(i) => (i.partition_attributes(), i.sort_attributes()),
            None => (
                vec![(s.pk.as_str(), s.pk_type)],
                s.sk.as_deref()
                    .map(|sk| (sk, s.sk_type))
                    .into_iter()
                    .collect(),
            ),
        };
        let values = std::iter::once(req.partition.as_str())
            .chain(req.partition_more.iter().map(String::as_str));
        let partition: Vec<_> = partition.into_iter().zip(values).collect();
        let mut ex = Expressions::default();
        let key_condition =
            ex.key_condition(&partition, &sorts, &req.sort_prefix, req.sort.as_ref());
        let (names, values) = ex.into_maps();
        let call = self
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
            .send();
        let (out, tapped) = tapped(Member::Items, call).await;
        let out = out.map_err(|e| store_error(&self.table, e))?;
        record_capacity("Query", out.consumed_capacity.as_slice());
        self.query_output(index, tapped, out.items, out.last_evaluated_key)
    }

    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
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
        let out = send_single!(self, "PutItem", request).await?;
        record_capacity("PutItem", out.consumed_capacity.as_slice());
        Ok(None)
    }

    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
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
        let out = send_single!(self, "UpdateItem", request).await?;
        record_capacity("UpdateItem", out.consumed_capacity.as_slice());
        returned(req.returns, out.attributes)
    }

    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
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
        let out = send_single!(self, "DeleteItem", request).await?;
        record_capacity("DeleteItem", out.consumed_capacity.as_slice());
        returned(req.returns, out.attributes)
    }

    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage> {
        let requests = req
            .requests
            .iter()
            .map(|r| {
                let mut w = sdk::WriteRequest::builder();
                w = match r {
                    BatchWriteRequest::Put(item) => w.put_request(
                        sdk::PutRequest::builder()
                            .set_item(Some(to_sdk_item(item.clone())))
                            .build()
                            .map_err(build_error)?,
                    ),
                    BatchWriteRequest::Delete(key) => w.delete_request(
                        sdk::DeleteRequest::builder()
                            .set_key(Some(self.key(key)))
                            .build()
                            .map_err(build_error)?,
                    ),
                };
                Ok(w.build())
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let out = self
            .client
            .batch_write_item()
            .request_items(&self.table, requests)
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        record_capacity("BatchWriteItem", out.consumed_capacity());
        let unprocessed = out
            .unprocessed_items
            .and_then(|mut u| u.remove(&self.table))
            .unwrap_or_default()
            .into_iter()
            .map(|w| match (w.put_request, w.delete_request) {
                (Some(p), _) => from_sdk_item(p.item).map(BatchWriteRequest::Put),
                (_, Some(d)) => self.primary_key_of(d.key).map(BatchWriteRequest::Delete),
                _ => Err(StoreError::Internal(
                    "DynamoDB returned an unprocessed request of no kind".into(),
                )),
            })
            .collect::<StoreResult<_>>()?;
        Ok(BatchWritePage { unprocessed })
    }

    /// TransactWriteItems ([`DynamoEngine::transact`]).
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        self.transact(actions).await
    }

    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        let member = self.member(table).filter(|m| m.table != self.table)?;
        Some(Arc::new(Validated::new(member)))
    }

    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let members = req
            .tables
            .iter()
            .map(|(table, _)| self.own_or_member(table))
            .collect::<StoreResult<Vec<_>>>()?;
        let mut call = self
            .client
            .batch_get_item()
            .return_consumed_capacity(ReturnConsumedCapacity::Indexes);
        for ((table, keys), member) in req.tables.iter().zip(&members) {
            let keys = KeysAndAttributes::builder()
                .set_keys(Some(keys.iter().map(|k| member.key(k)).collect()))
                .consistent_read(req.consistent_read)
                .build()
                .map_err(build_error)?;
            call = call.request_items(table, keys);
        }
        let (out, tapped) = tapped(Member::Responses, call.send()).await;
        let out = out.map_err(|e| store_error(&self.table, e))?;
        record_capacity("BatchGetItem", out.consumed_capacity());
        let mut by_table = match tapped {
            Some(Tapped::Responses(by_table)) => by_table,
            _ => out
                .responses
                .unwrap_or_default()
                .into_iter()
                .map(|(t, items)| {
                    let items = items
                        .into_iter()
                        .map(from_sdk_item)
                        .collect::<StoreResult<Vec<_>>>()?;
                    Ok((t, items))
                })
                .collect::<StoreResult<HashMap<_, _>>>()?,
        };
        let mut unprocessed = out.unprocessed_keys.unwrap_or_default();
        let mut page = BatchGetTablesPage::default();
        for ((table, _), member) in req.tables.iter().zip(&members) {
            let items = by_table.remove(table).unwrap_or_default();
            let left = unprocessed
                .remove(table)
                .map(|k| k.keys)
                .unwrap_or_default()
                .into_iter()
                .map(|k| member.primary_key_of(k))
                .collect::<StoreResult<Vec<_>>>()?;
            page.tables.push((
                table.clone(),
                BatchGetPage {
                    items,
                    unprocessed: left,
                },
            ));
        }
        Ok(page)
    }

    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        let items = actions
            .into_iter()
            .map(|a| self.own_or_member(&a.table)?.transact_item(a.action))
            .collect::<StoreResult<Vec<_>>>()?;
        self.transact_items(items).await
    }
}

impl DynamoEngine {
    /// The engine of `table` on this client, when it was opened with it.
    fn member(&self, table: &str) -> Option<DynamoEngine> {
        let member = self.family.iter().find(|m| m.table == table)?;
        Some(DynamoEngine {
            family: self.family.clone(),
            ..member.clone()
        })
    }

    /// The engine of `table`: this one, or a sibling.
    fn own_or_member(&self, table: &str) -> StoreResult<DynamoEngine> {
        if table == self.table {
            return Ok(self.clone());
        }
        self.member(table)
            .ok_or_else(|| StoreError::not_on_connection(table))
    }
}

/// Records the capacity DynamoDB reports a request consumed, in the request's trace (the
/// total) and in the metrics: with `INDEXES`, the table's share and each index's apart; when an endpoint gives only the total, that as the
/// table's. A request that fails (a condition, a cancelled transaction) reports nothing,
/// though it consumed capacity too.
fn record_capacity(op: &'static str, consumed: &[ConsumedCapacity]) {
    let total: f64 = consumed.iter().filter_map(|c| c.capacity_units()).sum();
    if !consumed.is_empty() {
        crate::store::call_stats::report_capacity(total);
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
