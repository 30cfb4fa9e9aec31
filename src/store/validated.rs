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
    BatchGet, BatchGetPage, BatchWrite, BatchWritePage, Delete, GetItem, Item, Put, Query,
    QueryOutput, Scan, Store, StoreResult, TableDescription, TableSchema, TransactAction, Update,
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
}
