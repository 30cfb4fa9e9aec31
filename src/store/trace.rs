//! A [`Store`] decorator that records every call it forwards, for the `x-itemgraph-trace`
//! extension: what a GraphQL request cost, request by request, in start order.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde::Serialize;

use super::{
    BatchGet, BatchGetPage, BatchGetTables, BatchGetTablesPage, BatchWrite, BatchWritePage, Delete,
    GetItem, Item, PrimaryKey, Put, Query, QueryOutput, Scan, SortCondition, Store, StoreResult,
    TableAction, TableDescription, TableSchema, TransactAction, Update,
};

/// One store call as the trace extension shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceEntry {
    /// The DynamoDB operation: `GetItem`, `BatchGetItem`, `Query`, `PutItem` ….
    pub operation: &'static str,
    pub table: String,
    /// The secondary index a Query used; `null` for the base table.
    pub index: Option<String>,
    /// The key condition with its values, e.g. `PK = "CHAIN#bean-there" AND SK >= "CHAIN#bean-there"`;
    /// for BatchGetItem the number of keys asked for.
    pub key_condition: Option<String>,
    /// `ScanIndexForward` of a Query.
    pub scan_forward: Option<bool>,
    /// `Limit` of a Query.
    pub limit: Option<u32>,
    /// Items returned (read) or written.
    pub item_count: usize,
    /// A Scan's filter on what it read, with its values (the tenant's: `app = "harbor"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Items a Scan read, before its filter kept `itemCount` of them (DynamoDB's
    /// `ScannedCount`): what it cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scanned_count: Option<usize>,
    /// When the call started, from the start of the request.
    pub start_micros: u64,
    pub duration_micros: u64,
    /// Capacity units the call consumed, table and indexes together, where the engine
    /// reports it (DynamoDB does; the embedded engine has no capacity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<f64>,
    #[serde(skip)]
    seq: u64,
}

/// The calls of one request. Cheap to share; a std Mutex is fine because it is held only
/// to push or copy entries, never across an await.
#[derive(Debug)]
pub struct Trace {
    started: Instant,
    seq: AtomicU64,
    entries: Mutex<Vec<TraceEntry>>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            started: Instant::now(),
            seq: AtomicU64::new(0),
            entries: Mutex::new(Vec::new()),
        }
    }
}

impl Trace {
    /// The calls since the last take, in the order they started, timed from the first of
    /// them (a subscription's trace, event by event).
    pub fn take(&self) -> Vec<TraceEntry> {
        let mut entries =
            std::mem::take(&mut *self.entries.lock().unwrap_or_else(|p| p.into_inner()));
        entries.sort_by_key(|e| e.seq);
        let first = entries.iter().map(|e| e.start_micros).min().unwrap_or(0);
        for e in &mut entries {
            e.start_micros -= first;
        }
        entries
    }

    /// The calls so far, in the order they started.
    pub fn entries(&self) -> Vec<TraceEntry> {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        entries.sort_by_key(|e| e.seq);
        entries
    }
}

/// Forwards every call to `inner` and records it in `trace`.
pub struct TracedStore {
    inner: Arc<dyn Store>,
    trace: Arc<Trace>,
}

impl TracedStore {
    pub fn new(inner: Arc<dyn Store>, trace: Arc<Trace>) -> Self {
        TracedStore { inner, trace }
    }

    async fn record<T>(
        &self,
        operation: &'static str,
        describe: Described,
        call: impl std::future::Future<Output = StoreResult<T>>,
        count: impl FnOnce(&T) -> usize,
    ) -> StoreResult<T> {
        self.record_scanned(operation, describe, call, |t| (count(t), None))
            .await
    }

    /// [`TracedStore::record`], with the items a Scan read beside those it returned.
    async fn record_scanned<T>(
        &self,
        operation: &'static str,
        describe: Described,
        call: impl std::future::Future<Output = StoreResult<T>>,
        count: impl FnOnce(&T) -> (usize, Option<usize>),
    ) -> StoreResult<T> {
        let seq = self.trace.seq.fetch_add(1, Ordering::Relaxed);
        let start = self.trace.started.elapsed();
        let (result, stats) = super::call_stats::measured(call).await;
        let end = self.trace.started.elapsed();
        let (item_count, scanned_count) = result.as_ref().map_or((0, None), count);
        let entry = TraceEntry {
            operation,
            table: describe
                .tables
                .unwrap_or_else(|| self.inner.table_name().to_owned()),
            index: describe.index,
            key_condition: describe.key_condition,
            scan_forward: describe.scan_forward,
            limit: describe.limit,
            item_count,
            filter: describe.filter,
            scanned_count,
            start_micros: start.as_micros() as u64,
            duration_micros: (end - start).as_micros() as u64,
            consumed_capacity: stats.consumed_capacity,
            seq,
        };
        self.trace
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(entry);
        result
    }
}

#[derive(Default)]
struct Described {
    /// The tables of a call over several (`Shop, Orders`); `None`: the store's own.
    tables: Option<String>,
    index: Option<String>,
    key_condition: Option<String>,
    scan_forward: Option<bool>,
    limit: Option<u32>,
    filter: Option<String>,
}

fn key_equals(schema: &TableSchema, key: &PrimaryKey) -> Described {
    Described {
        key_condition: Some(match &schema.sk {
            Some(sk) => format!("{} = {:?} AND {sk} = {:?}", schema.pk, key.pk, key.sk),
            None => format!("{} = {:?}", schema.pk, key.pk),
        }),
        ..Default::default()
    }
}

fn describe_query(schema: &TableSchema, q: &Query) -> Described {
    let index = q.index.as_deref().and_then(|i| schema.index(i));
    let (partition, sorts): (Vec<&str>, Vec<&str>) = match index {
        Some(index) => (
            index
                .partition_attributes()
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
            index
                .sort_attributes()
                .into_iter()
                .map(|(n, _)| n)
                .collect(),
        ),
        None => (
            vec![schema.pk.as_str()],
            schema.sk.as_deref().into_iter().collect(),
        ),
    };
    let values = std::iter::once(&q.partition).chain(&q.partition_more);
    let mut terms: Vec<String> = partition
        .iter()
        .zip(values)
        .map(|(pk, v)| format!("{pk} = {v:?}"))
        .collect();
    for (sk, v) in sorts.iter().zip(&q.sort_prefix) {
        terms.push(format!("{sk} = {v:?}"));
    }
    let mut cond = terms.join(" AND ");
    let sk = sorts.get(q.sort_prefix.len()).copied().unwrap_or("");
    if let Some(sort) = &q.sort {
        let _ = match sort {
            SortCondition::Eq(v) => write!(cond, " AND {sk} = {v:?}"),
            SortCondition::Lt(v) => write!(cond, " AND {sk} < {v:?}"),
            SortCondition::Le(v) => write!(cond, " AND {sk} <= {v:?}"),
            SortCondition::Gt(v) => write!(cond, " AND {sk} > {v:?}"),
            SortCondition::Ge(v) => write!(cond, " AND {sk} >= {v:?}"),
            SortCondition::Between(a, b) => write!(cond, " AND {sk} BETWEEN {a:?} AND {b:?}"),
            SortCondition::BeginsWith(p) => write!(cond, " AND begins_with({sk}, {p:?})"),
        };
    }
    if let Some(start) = &q.start {
        let at = match &start.index {
            None => start.table.sk.clone(),
            Some(ik) => ik.sort_values().collect::<Vec<_>>().join(", "),
        };
        let sk = sorts.join(", ");
        let _ = write!(cond, " (after {sk} {at:?})");
    }
    Described {
        index: q.index.clone(),
        key_condition: Some(cond),
        scan_forward: Some(q.forward),
        limit: q.limit,
        ..Default::default()
    }
}

fn item_of_key(schema: &TableSchema, item: &Item) -> Described {
    schema
        .key_of(item)
        .map(|k| key_equals(schema, &k))
        .unwrap_or_default()
}

#[async_trait]
impl Store for TracedStore {
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
        self.inner.create_table().await
    }
    async fn delete_table(&self) -> StoreResult<bool> {
        self.inner.delete_table().await
    }
    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.inner.describe_table().await
    }
    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        let d = key_equals(self.schema(), &req.key);
        self.record("GetItem", d, self.inner.get_item(req), |i| {
            usize::from(i.is_some())
        })
        .await
    }
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        let d = Described {
            key_condition: Some(format!("{} keys", req.keys.len())),
            ..Default::default()
        };
        self.record("BatchGetItem", d, self.inner.batch_get_page(req), |p| {
            p.items.len()
        })
        .await
    }
    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        let d = describe_query(self.schema(), &req);
        self.record("Query", d, self.inner.query(req), |o| o.items.len())
            .await
    }
    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput> {
        let d = Described {
            index: req.index.clone(),
            limit: req.limit,
            filter: req.filter.as_ref().map(|c| c.to_string()),
            key_condition: req.start.as_ref().map(|s| {
                let at = s.index.as_ref().map_or(&s.table.pk, |i| &i.pk);
                format!("(after {at:?})")
            }),
            ..Default::default()
        };
        self.record_scanned("Scan", d, self.inner.scan(req), |o| {
            (o.items.len(), o.scanned)
        })
        .await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        let d = item_of_key(self.schema(), &req.item);
        self.record("PutItem", d, self.inner.put_item(req), |_| 1)
            .await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        let d = key_equals(self.schema(), &req.key);
        self.record("UpdateItem", d, self.inner.update_item(req), |_| 1)
            .await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        let d = key_equals(self.schema(), &req.key);
        self.record("DeleteItem", d, self.inner.delete_item(req), |_| 1)
            .await
    }
    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage> {
        let n = req.requests.len();
        let d = Described {
            key_condition: Some(format!("{n} requests")),
            ..Default::default()
        };
        self.record("BatchWriteItem", d, self.inner.batch_write_page(req), |p| {
            n - p.unprocessed.len()
        })
        .await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let n = actions.len();
        let d = Described {
            key_condition: Some(format!("{n} actions")),
            ..Default::default()
        };
        self.record(
            "TransactWriteItems",
            d,
            self.inner.transact_write(actions),
            |_| n,
        )
        .await
    }
    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        let sibling = self.inner.sibling(table)?;
        Some(Arc::new(TracedStore::new(sibling, self.trace.clone())))
    }
    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let d = Described {
            key_condition: Some(format!("{} keys", req.len())),
            tables: several(req.tables.iter().map(|(t, _)| t.as_str())),
            ..Default::default()
        };
        self.record(
            "BatchGetItem",
            d,
            self.inner.batch_get_tables_page(req),
            |p| p.tables.iter().map(|(_, p)| p.items.len()).sum(),
        )
        .await
    }
    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        let n = actions.len();
        let d = Described {
            key_condition: Some(format!("{n} actions")),
            tables: several(actions.iter().map(|a| a.table.as_str())),
            ..Default::default()
        };
        self.record(
            "TransactWriteItems",
            d,
            self.inner.transact_write_tables(actions),
            |_| n,
        )
        .await
    }
}

/// The tables a call names, in first-named order, joined (`Shop, Orders`); `None` when it
/// names one only (the store's own is then shown).
fn several<'a>(tables: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for t in tables {
        if !names.contains(&t) {
            names.push(t);
        }
    }
    (names.len() > 1).then(|| names.join(", "))
}
