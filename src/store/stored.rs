//! A [`Store`] decorator that reads and writes a chart's items as its table stores them
//! ([`crate::chart::stored`]): everything above it speaks the chart's form, everything
//! below (the engines, their validation, metering and trace) the table's. Only a chart
//! with stored forms gets one ([`wrap`]).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::stream::{
    ChangeRecord, ChangeStream, RecordsPage, ShardInfo, StartAt, StreamError, StreamResult,
};
use super::{
    BatchGet, BatchGetPage, BatchGetTables, BatchGetTablesPage, BatchWrite, BatchWritePage,
    BatchWriteRequest, CancelReason, ConditionCheck, Delete, GetItem, Item, Put, Query,
    QueryOutput, Scan, Store, StoreError, StoreResult, TableAction, TableDescription, TableSchema,
    TransactAction, Update,
};
use crate::chart::stored::Forms;
use crate::chart::Chart;

/// `store` speaking `chart`'s form, where its table stores items otherwise; else `store`.
pub fn wrap(store: Arc<dyn Store>, chart: &Arc<Chart>) -> Arc<dyn Store> {
    if chart.forms.is_none() {
        return store;
    }
    Arc::new(StoredStore::new(store, chart.clone(), 0))
}

/// The decorator: see the module.
pub struct StoredStore {
    inner: Arc<dyn Store>,
    chart: Arc<Chart>,
    /// Its table's place in the chart's tables.
    table: usize,
    /// The table's schema as the chart names it: each index under its chart name, as the
    /// requests above name it (a trace describes them by it).
    schema: TableSchema,
}

impl StoredStore {
    fn new(inner: Arc<dyn Store>, chart: Arc<Chart>, table: usize) -> Self {
        let mut schema = inner.schema().clone();
        for index in &mut schema.indexes {
            if let Some(i) = chart
                .indexes
                .values()
                .find(|i| i.table == table && i.stored == index.name)
            {
                index.name = i.name.clone();
            }
        }
        StoredStore {
            inner,
            chart,
            table,
            schema,
        }
    }

    fn forms(&self) -> &Forms {
        self.chart
            .forms
            .as_ref()
            .expect("only a chart with forms is wrapped")
    }

    fn charted(&self, item: Item) -> Item {
        self.forms().charted(&self.chart, self.table, item)
    }

    fn charted_all(&self, items: Vec<Item>) -> Vec<Item> {
        items.into_iter().map(|i| self.charted(i)).collect()
    }

    fn stored(&self, item: Item) -> Item {
        self.forms().stored(&self.chart, item)
    }

    /// A request's index as its table knows it ([`crate::chart::Index::stored`]).
    fn index_stored(&self, index: Option<String>) -> Option<String> {
        index.map(|i| match self.chart.indexes.get(&i) {
            Some(x) => x.stored.clone(),
            None => i,
        })
    }

    fn put(&self, p: Put) -> Put {
        self.put_in(self.table, self.inner.schema(), p)
    }

    /// A Put of table `t` of `schema` (this store's, or a sibling's in a transaction).
    fn put_in(&self, t: usize, schema: &TableSchema, mut p: Put) -> Put {
        let key = schema.key_of(&p.item);
        p.condition = p
            .condition
            .map(|c| self.forms().condition(&self.chart, t, key.as_ref(), c));
        p.item = self.stored(p.item);
        p
    }

    fn update(&self, t: usize, mut u: Update) -> Update {
        u.condition = u
            .condition
            .map(|c| self.forms().condition(&self.chart, t, Some(&u.key), c));
        u.update = self.forms().update(&self.chart, t, &u.key, u.update);
        u
    }

    fn delete(&self, t: usize, mut d: Delete) -> Delete {
        d.condition = d
            .condition
            .map(|c| self.forms().condition(&self.chart, t, Some(&d.key), c));
        d
    }

    /// A transaction's action on table `t` of `schema`, in the table's form.
    fn action(&self, t: usize, schema: &TableSchema, a: TransactAction) -> TransactAction {
        match a {
            TransactAction::Put(p) => TransactAction::Put(self.put_in(t, schema, p)),
            TransactAction::Update(u) => TransactAction::Update(self.update(t, u)),
            TransactAction::Delete(d) => TransactAction::Delete(self.delete(t, d)),
            TransactAction::ConditionCheck(c) => TransactAction::ConditionCheck(ConditionCheck {
                condition: self
                    .forms()
                    .condition(&self.chart, t, Some(&c.key), c.condition),
                ..c
            }),
        }
    }

    /// The place in the chart's tables of the table named `name` on this store's
    /// connection (this store's own, else a sibling's by the chart's name).
    fn table_at(&self, name: &str) -> usize {
        if name == self.inner.table_name() {
            return self.table;
        }
        self.chart
            .tables
            .iter()
            .position(|t| t.name == name)
            .unwrap_or(self.table)
    }

    /// An error's items (a failed condition's current item) in the chart's form.
    fn error(&self, e: StoreError) -> StoreError {
        self.error_in(e, &[])
    }

    /// [`Self::error`] of a transaction whose action `i` is in table `tables[i]` (this
    /// store's where not given).
    fn error_in(&self, e: StoreError, tables: &[usize]) -> StoreError {
        match e {
            StoreError::ConditionFailed { item } => StoreError::ConditionFailed {
                item: item.map(|i| Box::new(self.charted(*i))),
            },
            StoreError::TransactionCanceled { reasons } => StoreError::TransactionCanceled {
                reasons: reasons
                    .into_iter()
                    .enumerate()
                    .map(|(at, r)| match r {
                        CancelReason::ConditionalCheckFailed { item } => {
                            let t = tables.get(at).copied().unwrap_or(self.table);
                            CancelReason::ConditionalCheckFailed {
                                item: item.map(|i| self.forms().charted(&self.chart, t, i)),
                            }
                        }
                        other => other,
                    })
                    .collect(),
            },
            other => other,
        }
    }
}

#[async_trait]
impl Store for StoredStore {
    fn table_name(&self) -> &str {
        self.inner.table_name()
    }
    fn schema(&self) -> &TableSchema {
        &self.schema
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

    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        Ok(self.inner.get_item(req).await?.map(|i| self.charted(i)))
    }

    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        let mut page = self.inner.batch_get_page(req).await?;
        page.items = self.charted_all(page.items);
        Ok(page)
    }

    async fn query(&self, mut req: Query) -> StoreResult<QueryOutput> {
        req.index = self.index_stored(req.index);
        let mut out = self.inner.query(req).await?;
        out.items = self.charted_all(out.items);
        Ok(out)
    }

    async fn scan(&self, mut req: Scan) -> StoreResult<QueryOutput> {
        if let Some(f) = req.filter.take() {
            // The entity a filtered Scan reads: the one that carries keys in its index.
            let entity = req.index.as_deref().and_then(|i| {
                let mut of = self
                    .chart
                    .entities
                    .values()
                    .filter(|e| e.indexes.contains_key(i));
                of.next().filter(|_| of.next().is_none())
            });
            req.filter = Some(self.forms().filter(&self.chart, entity, f));
        }
        req.index = self.index_stored(req.index);
        let mut out = self.inner.scan(req).await?;
        out.items = self.charted_all(out.items);
        Ok(out)
    }

    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        let req = self.put(req);
        match self.inner.put_item(req).await {
            Ok(old) => Ok(old.map(|i| self.charted(i))),
            Err(e) => Err(self.error(e)),
        }
    }

    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        let req = self.update(self.table, req);
        match self.inner.update_item(req).await {
            Ok(item) => Ok(item.map(|i| self.charted(i))),
            Err(e) => Err(self.error(e)),
        }
    }

    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        let req = self.delete(self.table, req);
        match self.inner.delete_item(req).await {
            Ok(old) => Ok(old.map(|i| self.charted(i))),
            Err(e) => Err(self.error(e)),
        }
    }

    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let schema = self.inner.schema();
        let actions = actions
            .into_iter()
            .map(|a| self.action(self.table, schema, a))
            .collect();
        self.inner
            .transact_write(actions)
            .await
            .map_err(|e| self.error(e))
    }

    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        Some(Arc::new(StoredStore::new(
            self.inner.sibling(table)?,
            self.chart.clone(),
            self.table_at(table),
        )))
    }

    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let mut page = self.inner.batch_get_tables_page(req).await?;
        // Each table's items as that table stores them.
        for (name, p) in &mut page.tables {
            let t = self.table_at(name);
            p.items = std::mem::take(&mut p.items)
                .into_iter()
                .map(|i| self.forms().charted(&self.chart, t, i))
                .collect();
        }
        Ok(page)
    }

    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        let mut stored = Vec::with_capacity(actions.len());
        // Each action's table: a cancellation's item is turned as its table stores it.
        let mut tables = Vec::with_capacity(actions.len());
        for a in actions {
            let sibling = match a.table == self.inner.table_name() {
                true => None,
                false => self.inner.sibling(&a.table),
            };
            let schema = sibling.as_ref().map_or(self.inner.schema(), |s| s.schema());
            let t = self.table_at(&a.table);
            tables.push(t);
            let action = self.action(t, schema, a.action);
            stored.push(TableAction { action, ..a });
        }
        self.inner
            .transact_write_tables(stored)
            .await
            .map_err(|e| self.error_in(e, &tables))
    }

    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage> {
        let requests = req
            .requests
            .into_iter()
            .map(|r| match r {
                BatchWriteRequest::Put(i) => BatchWriteRequest::Put(self.stored(i)),
                other => other,
            })
            .collect();
        let mut page = self.inner.batch_write_page(BatchWrite { requests }).await?;
        // Sent again through this store: back in the chart's form.
        page.unprocessed = page
            .unprocessed
            .into_iter()
            .map(|r| match r {
                BatchWriteRequest::Put(i) => BatchWriteRequest::Put(self.charted(i)),
                other => other,
            })
            .collect();
        Ok(page)
    }

    fn change_stream(&self) -> Option<Arc<dyn ChangeStream>> {
        let inner = self.inner.change_stream()?;
        Some(Arc::new(StoredStream {
            inner,
            chart: self.chart.clone(),
            table: self.table,
        }))
    }

    async fn enable_change_stream(&self, dry_run: bool) -> StoreResult<bool> {
        self.inner.enable_change_stream(dry_run).await
    }
    async fn time_to_live(&self) -> StoreResult<Option<String>> {
        self.inner.time_to_live().await
    }
    async fn create_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        self.inner.create_index(name, dry_run).await
    }
    async fn enable_time_to_live(&self, attribute: &str, dry_run: bool) -> StoreResult<bool> {
        self.inner.enable_time_to_live(attribute, dry_run).await
    }
    async fn expire_items(&self) -> StoreResult<usize> {
        self.inner.expire_items().await
    }
}

/// The change stream with each record's images in the chart's form.
struct StoredStream {
    inner: Arc<dyn ChangeStream>,
    chart: Arc<Chart>,
    /// Its table's place in the chart's tables.
    table: usize,
}

#[async_trait]
impl ChangeStream for StoredStream {
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
    async fn get_records(&self, iterator: &str, limit: u32) -> Result<RecordsPage, StreamError> {
        let mut page = self.inner.get_records(iterator, limit).await?;
        let forms = self.chart.forms.as_ref().expect("wrapped with forms");
        for ChangeRecord {
            old_image,
            new_image,
            ..
        } in &mut page.records
        {
            for image in [old_image, new_image] {
                if let Some(i) = image.take() {
                    *image = Some(forms.charted(&self.chart, self.table, i));
                }
            }
        }
        Ok(page)
    }
    async fn wait_for_changes(&self, idle: Duration) {
        self.inner.wait_for_changes(idle).await
    }
}
