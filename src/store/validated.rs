//! The [`Store`] decorator that refuses what DynamoDB would refuse with
//! `ValidationException` ([`super::validate`]) before the engine under it sees the request,
//! so both engines refuse a bad request alike, with the same message. Each engine's handle
//! is this decorator over the engine (`EmbeddedStore`, `DynamoStore`), so nothing reaches
//! an engine unchecked.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use async_trait::async_trait;

use super::stream::ChangeStream;
use super::validate;
use super::{
    BatchGet, BatchGetPage, BatchGetTables, BatchGetTablesPage, BatchWrite, BatchWritePage, Delete,
    GetItem, Item, Put, Query, QueryOutput, Scan, Store, StoreResult, TableAction,
    TableDescription, TableSchema, TransactAction, Update,
};

/// Forwards every call to the engine `S` once it holds up against DynamoDB's rules. Derefs
/// to the engine, for what only that engine offers.
#[derive(Debug, Clone)]
pub struct Validated<S>(S);

impl<S> Validated<S> {
    pub(crate) fn new(engine: S) -> Self {
        Validated(engine)
    }
}

/// The tables a call over several names, each with its sibling store (`None`: this one's).
type Named = Vec<(String, Option<Arc<dyn Store>>)>;

impl<S: Store> Validated<S> {
    /// The stores of the tables a call over several names, this one's own included (each
    /// table's schema is what its requests are checked against).
    fn tables<'a>(&self, names: impl Iterator<Item = &'a str>) -> StoreResult<Named> {
        let mut stores: Named = Vec::new();
        for name in names {
            if stores.iter().any(|(n, _)| n == name) {
                continue;
            }
            let store = if name == self.table_name() {
                None
            } else {
                Some(
                    self.0
                        .sibling(name)
                        .ok_or_else(|| super::StoreError::not_on_connection(name))?,
                )
            };
            stores.push((name.to_owned(), store));
        }
        Ok(stores)
    }

    fn schema_in<'a>(&'a self, stores: &'a Named, table: &str) -> &'a TableSchema {
        match stores.iter().find(|(n, _)| n == table) {
            Some((_, Some(sibling))) => sibling.schema(),
            _ => self.schema(),
        }
    }
}

impl<S> Deref for Validated<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S> DerefMut for Validated<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.0
    }
}

#[async_trait]
impl<S: Store> Store for Validated<S> {
    fn table_name(&self) -> &str {
        self.0.table_name()
    }
    fn schema(&self) -> &TableSchema {
        self.0.schema()
    }
    fn engine_name(&self) -> &'static str {
        self.0.engine_name()
    }
    fn change_stream(&self) -> Option<Arc<dyn ChangeStream>> {
        self.0.change_stream()
    }
    async fn enable_change_stream(&self, dry_run: bool) -> StoreResult<bool> {
        self.0.enable_change_stream(dry_run).await
    }
    async fn time_to_live(&self) -> StoreResult<Option<String>> {
        self.0.time_to_live().await
    }
    async fn enable_time_to_live(&self, attribute: &str, dry_run: bool) -> StoreResult<bool> {
        self.0.enable_time_to_live(attribute, dry_run).await
    }
    async fn create_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        self.0.create_index(name, dry_run).await
    }
    async fn expire_items(&self) -> StoreResult<usize> {
        self.0.expire_items().await
    }
    async fn create_table(&self) -> StoreResult<bool> {
        self.0.create_table().await
    }
    async fn delete_table(&self) -> StoreResult<bool> {
        self.0.delete_table().await
    }
    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.0.describe_table().await
    }
    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        validate::get_item(self.schema(), &req)?;
        self.0.get_item(req).await
    }
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        validate::batch_get(self.schema(), &req)?;
        self.0.batch_get_page(req).await
    }
    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage> {
        validate::batch_write(self.schema(), &req)?;
        self.0.batch_write_page(req).await
    }
    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        validate::query(self.schema(), &req)?;
        self.0.query(req).await
    }
    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput> {
        validate::scan(self.schema(), &req)?;
        self.0.scan(req).await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        validate::put(self.schema(), &req)?;
        self.0.put_item(req).await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        validate::update(self.schema(), &req)?;
        self.0.update_item(req).await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        validate::delete(self.schema(), &req)?;
        self.0.delete_item(req).await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        validate::transact(self.schema(), &actions)?;
        self.0.transact_write(actions).await
    }
    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        self.0.sibling(table)
    }
    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let stores = self.tables(req.tables.iter().map(|(t, _)| t.as_str()))?;
        if stores.len() < req.tables.len() {
            return Err(super::StoreError::Validation(
                "Provided list of item keys contains duplicates".into(),
            ));
        }
        let checked: Vec<(&TableSchema, &[super::PrimaryKey])> = req
            .tables
            .iter()
            .map(|(t, keys)| (self.schema_in(&stores, t), keys.as_slice()))
            .collect();
        validate::batch_get_tables(&checked)?;
        self.0.batch_get_tables_page(req).await
    }
    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        let stores = self.tables(actions.iter().map(|a| a.table.as_str()))?;
        let checked: Vec<(&TableSchema, &str, &TransactAction)> = actions
            .iter()
            .map(|a| {
                (
                    self.schema_in(&stores, &a.table),
                    a.table.as_str(),
                    &a.action,
                )
            })
            .collect();
        validate::transact_tables(&checked)?;
        self.0.transact_write_tables(actions).await
    }
}
