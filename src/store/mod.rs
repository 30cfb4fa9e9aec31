//! The store port: DynamoDB's operation vocabulary in the project's own types.
//!
//! Everything above this module (keys, access patterns, GraphQL) speaks to a [`Store`];
//! the engines below it ([`embedded::EmbeddedStore`], [`dynamo::DynamoStore`]) only execute
//! operations. No backend type crosses this boundary: items are `serde_dynamo` attribute
//! maps, conditions and updates are small typed trees rather than expression strings, and
//! every failure is a [`StoreError`].
//!
//! Both engines run every request through [`validate`] first, so a request DynamoDB would
//! reject is rejected identically by both, before any work is done. The contract tests
//! check that DynamoDB Local rejects the same raw requests, so the validator never refuses
//! what DynamoDB accepts.

pub mod call_stats;
pub mod dynamo;
pub mod embedded;
mod expr;
pub mod faults;
pub mod merged_stream;
pub mod metered;
pub mod open;
pub mod own;
pub mod schema;
pub mod shards;
pub mod stored;
pub mod stream;
pub mod trace;
pub mod validate;
pub mod validated;
pub mod value;

mod request;

pub use expr::{CmpOp, Condition, SetValue, UpdateExpr};
pub use request::*;
pub use schema::{sortable_number, IndexProjection, IndexSchema, KeyType, TableSchema};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use backon::{BackoffBuilder, ExponentialBuilder};
pub use serde_dynamo::AttributeValue;

/// One item: attribute name to value, exactly as DynamoDB stores it.
pub type Item = HashMap<String, AttributeValue>;

/// Every failure of the port. The GraphQL layer maps each to an error code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// DynamoDB would reject this request (`ValidationException`): a bug above the port,
    /// or input that slipped past validation. Clients see `INTERNAL` or `BAD_USER_INPUT`.
    #[error("validation error: {0}")]
    Validation(String),
    /// The condition expression of a single write did not hold. Clients see `CONFLICT`,
    /// `NOT_FOUND` or `VERSION_MISMATCH`, decided by the access pattern that wrote.
    #[error("the conditional request failed")]
    ConditionFailed { item: Option<Box<Item>> },
    /// TransactWriteItems was cancelled: one reason per action, in action order.
    #[error("transaction cancelled: {}", describe_reasons(.reasons))]
    TransactionCanceled { reasons: Vec<CancelReason> },
    /// A single-item write met a transaction in flight on its item
    /// (`TransactionConflictException`): nothing was written. Retried by
    /// [`retry_conflicts`]; past that, clients see `CONTENTION` (retryable).
    #[error("transaction conflict: {0}")]
    TransactionConflict(String),
    /// The table does not exist. Clients see `UNAVAILABLE`.
    #[error("table not found: {0}")]
    TableNotFound(String),
    /// Throttled past the retry budget. Clients see `THROTTLED` (retryable).
    #[error("throttled: {0}")]
    Throttled(String),
    /// The store could not be reached or timed out. Clients see `UNAVAILABLE`.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Anything else; logged with detail, clients see `INTERNAL`.
    #[error("internal store error: {0}")]
    Internal(String),
}

impl StoreError {
    /// DynamoDB's answer for a table it does not have: here, a table a call over several
    /// names that the store was not opened with.
    pub fn not_on_connection(table: &str) -> StoreError {
        StoreError::TableNotFound(format!(
            "Requested resource not found: table {table} is not on this store's connection"
        ))
    }

    /// The write's final error as its caller may read it, given whether an earlier attempt
    /// went unanswered (timed out or broken off after the store may have received it, or a
    /// 5xx, which DynamoDB documents as "may have succeeded"): a throttle or a conflict says
    /// that attempt wrote nothing, but the unanswered one may have been applied, so the
    /// outcome is unknown (`Unavailable`). Both engines answer by this rule.
    pub fn after_unanswered_attempt(self, unanswered: bool) -> StoreError {
        if unanswered && (matches!(self, StoreError::Throttled(_)) || is_conflict(&self)) {
            StoreError::Unavailable(format!(
                "{self}, after an attempt that got no answer: the write may have been applied"
            ))
        } else {
            self
        }
    }
}

/// Which action's condition failed (0 for a single write), with the item it found when
/// the write asked for it.
pub fn failed_condition(err: &StoreError) -> Option<(usize, Option<&Item>)> {
    match err {
        StoreError::ConditionFailed { item } => Some((0, item.as_deref())),
        StoreError::TransactionCanceled { reasons } => {
            reasons.iter().enumerate().find_map(|(i, r)| match r {
                CancelReason::ConditionalCheckFailed { item } => Some((i, item.as_ref())),
                _ => None,
            })
        }
        _ => None,
    }
}

/// Whether a transaction was cancelled by contention alone: at least one
/// `TransactionConflict` or throttled action, and otherwise only actions that were fine.
/// Nothing of it was applied, and trying again is safe (its conditions are evaluated
/// anew).
pub fn only_conflicts(reasons: &[CancelReason]) -> bool {
    use CancelReason::{None as Fine, Throttled, TransactionConflict};
    reasons
        .iter()
        .any(|r| matches!(r, TransactionConflict | Throttled))
        && reasons
            .iter()
            .all(|r| matches!(r, Fine | TransactionConflict | Throttled))
}

/// Whether a write failed only because it met concurrent writes, so that nothing of it
/// was applied and sending it again is safe.
pub fn is_conflict(err: &StoreError) -> bool {
    match err {
        StoreError::TransactionConflict(_) => true,
        StoreError::TransactionCanceled { reasons } => only_conflicts(reasons),
        _ => false,
    }
}

/// How many times a write that keeps meeting concurrent writes is sent
/// ([`retry_conflicts`]).
pub const CONFLICT_MAX_ATTEMPTS: u32 = 10;

/// Items per Scan page of a whole table read.
pub const SCAN_PAGE_SIZE: u32 = 500;

/// Every item of the table: a strongly consistent Scan, [`SCAN_PAGE_SIZE`] items a page.
pub async fn scan_all(store: &dyn Store) -> StoreResult<Vec<Item>> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .scan(Scan {
                limit: Some(SCAN_PAGE_SIZE),
                start,
                consistent_read: true,
                segment: None,
                ..Default::default()
            })
            .await?;
        items.extend(page.items);
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    Ok(items)
}

/// Deletes expired items every `period` ([`Store::expire_items`]), for as long as the
/// process runs: what `serve` does for a chart with a time to live.
pub async fn expire_every(store: Arc<dyn Store>, period: Duration) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match store.expire_items().await {
            Ok(0) => {}
            Ok(deleted) => tracing::info!(deleted, "expired items deleted"),
            Err(error) => tracing::warn!(%error, "deleting expired items failed; next time"),
        }
    }
}

/// Sends a write again while it fails only by conflicting with concurrent writes
/// ([`is_conflict`]), on [`retry_schedule`], at most [`CONFLICT_MAX_ATTEMPTS`] times; then
/// the last conflict is returned. The SDK does not retry conflicts, yet it is safe to:
/// nothing of the write was applied, and the next attempt evaluates every condition anew
/// against the items as they are then. Both engines' writes go through this.
pub async fn retry_conflicts<T, F, Fut>(op: &'static str, send: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    use backon::Retryable;
    send.retry(retry_schedule(CONFLICT_MAX_ATTEMPTS - 1))
        .when(is_conflict)
        .notify(|err, wait| {
            tracing::debug!(?wait, op, "write conflict; retrying");
            crate::metrics::record_retry(op, "transaction_conflict");
            let throttled = matches!(err, StoreError::TransactionCanceled { reasons }
                if reasons.iter().any(|r| matches!(r, CancelReason::Throttled)));
            call_stats::report_retry(throttled);
        })
        .await
}

/// Sends a call again on [`retry_schedule`], `attempts` times at most in all, while its
/// failure is one `again` says is worth another attempt; then the last failure is returned.
pub async fn retry_while<T, E, F, Fut>(
    attempts: u32,
    again: impl FnMut(&E) -> bool,
    send: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    use backon::Retryable;
    send.retry(retry_schedule(attempts.saturating_sub(1)))
        .when(again)
        .await
}

fn describe_reasons(reasons: &[CancelReason]) -> String {
    reasons
        .iter()
        .map(|r| match r {
            CancelReason::None => "None".to_string(),
            CancelReason::ConditionalCheckFailed { .. } => "ConditionalCheckFailed".to_string(),
            CancelReason::TransactionConflict => "TransactionConflict".to_string(),
            CancelReason::Throttled => "ThrottlingError".to_string(),
            CancelReason::ValidationError(m) => format!("ValidationError ({m})"),
            CancelReason::Other { code, .. } => code.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub type StoreResult<T> = Result<T, StoreError>;

/// How long BatchGetItem keeps retrying `UnprocessedKeys` before giving up with an error.
pub const BATCH_GET_MAX_ATTEMPTS: u32 = 8;

/// How long BatchWriteItem keeps sending `UnprocessedItems` again before giving up with an
/// error.
pub const BATCH_WRITE_MAX_ATTEMPTS: u32 = 8;

/// The port. Engines implement the single-call operations; [`Store::batch_get_item`] is
/// written once here and drives [`Store::batch_get_page`] until every key is answered.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The table this store reads and writes.
    fn table_name(&self) -> &str;
    /// Its key attributes and indexes.
    fn schema(&self) -> &TableSchema;
    /// A short name for logs and test output (`embedded`, `dynamodb`).
    fn engine_name(&self) -> &'static str;

    /// Creates the table with its indexes; `Ok(false)` when it already exists.
    async fn create_table(&self) -> StoreResult<bool>;
    /// Deletes the table; `Ok(false)` when there was none.
    async fn delete_table(&self) -> StoreResult<bool>;
    /// The table's status, or `None` when it does not exist.
    async fn describe_table(&self) -> StoreResult<Option<TableDescription>>;

    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>>;
    /// One BatchGetItem call: may leave keys unprocessed.
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage>;
    async fn query(&self, req: Query) -> StoreResult<QueryOutput>;
    /// One page of a Scan of the base table.
    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput>;
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>>;
    /// Returns the item as `req.returns` asks (old or new), else `None`.
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>>;
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>>;
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()>;
    /// One BatchWriteItem call: may leave requests unprocessed.
    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage>;

    /// The store of another table on this store's connection (one DynamoDB client, one
    /// embedded database), decorated as this one is: what a chart of several tables reads
    /// each entity's table through. `None` for a table the connection was not opened with
    /// ([`open::open_tables`]), and for this store's own table (the caller holds it).
    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        let _ = table;
        None
    }

    /// One BatchGetItem call over this table and its siblings: may leave keys unprocessed.
    /// An engine without siblings answers for its own table alone.
    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let own = self.table_name().to_owned();
        let keys = own_table_only(&own, req.tables)?;
        let page = self
            .batch_get_page(BatchGet {
                keys,
                consistent_read: req.consistent_read,
            })
            .await?;
        Ok(BatchGetTablesPage {
            tables: vec![(own, page)],
        })
    }

    /// One TransactWriteItems over this table and its siblings: all of it applied or none.
    /// An engine without siblings takes actions on its own table alone.
    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        let own = self.table_name().to_owned();
        let actions = own_table_only(
            &own,
            actions
                .into_iter()
                .map(|a| (a.table, vec![a.action]))
                .collect(),
        )?;
        self.transact_write(actions).await
    }

    /// The table's change stream, when this engine can follow one (see [`stream`]).
    fn change_stream(&self) -> Option<Arc<dyn stream::ChangeStream>> {
        None
    }

    /// Turns the table's change stream on where it is off (DynamoDB: `NEW_AND_OLD_IMAGES`);
    /// whether it was off. With `dry_run`, only says. The embedded engine's is always on.
    async fn enable_change_stream(&self, dry_run: bool) -> StoreResult<bool> {
        let _ = dry_run;
        Ok(false)
    }

    /// The attribute the table's Time to Live reads, when it is on.
    async fn time_to_live(&self) -> StoreResult<Option<String>> {
        Ok(None)
    }

    /// Creates the global secondary index `name` of the table's schema where the table does
    /// not have it (DynamoDB: UpdateTable, then the wait for it to be ACTIVE while the
    /// service fills it), filled with every item that carries its keys; whether it was
    /// missing. With `dry_run`, only says.
    async fn create_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        let _ = (name, dry_run);
        Ok(false)
    }

    /// Turns the table's Time to Live on for `attribute` where it is not; whether it was
    /// not. With `dry_run`, only says.
    async fn enable_time_to_live(&self, attribute: &str, dry_run: bool) -> StoreResult<bool> {
        let _ = (attribute, dry_run);
        Ok(false)
    }

    /// Deletes the items whose time to live has passed, as DynamoDB's own background
    /// process does (each delete in the change stream); how many. DynamoDB does this
    /// itself, within days of an expiry, so its engine has nothing to do here; the embedded
    /// engine does it when asked (`serve` asks every minute).
    async fn expire_items(&self) -> StoreResult<usize> {
        Ok(0)
    }

    /// BatchGetItem for up to 100 keys, retrying `UnprocessedKeys` with jittered exponential
    /// backoff. Never drops a key: when keys are still unprocessed after
    /// [`BATCH_GET_MAX_ATTEMPTS`] calls, the whole call fails with `Throttled`.
    /// Items come back in no particular order; absent keys are simply missing.
    async fn batch_get_item(&self, req: BatchGet) -> StoreResult<Vec<Item>> {
        validate::batch_get(self.schema(), &req)?;
        let mut items = Vec::with_capacity(req.keys.len());
        let mut pending = req.keys;
        // A loop over backon's schedule rather than its `Retryable`: each attempt sends
        // only what the last left unprocessed and keeps what it brought.
        let mut waits = retry_schedule(BATCH_GET_MAX_ATTEMPTS - 1).build();
        loop {
            let page = self
                .batch_get_page(BatchGet {
                    keys: pending,
                    consistent_read: req.consistent_read,
                })
                .await?;
            items.extend(page.items);
            if page.unprocessed.is_empty() {
                return Ok(items);
            }
            pending = page.unprocessed;
            match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => {
                    return Err(StoreError::Throttled(format!(
                    "BatchGetItem left {} keys unprocessed after {BATCH_GET_MAX_ATTEMPTS} attempts",
                    pending.len()
                )))
                }
            }
        }
    }

    /// BatchGetItem over this table and its siblings, up to 100 keys in all, retrying
    /// `UnprocessedKeys` as [`Store::batch_get_item`] does; each table's items, in no
    /// particular order.
    async fn batch_get_tables(&self, req: BatchGetTables) -> StoreResult<Vec<(String, Vec<Item>)>> {
        let mut found: Vec<(String, Vec<Item>)> = Vec::new();
        let mut pending = req.tables;
        let mut waits = retry_schedule(BATCH_GET_MAX_ATTEMPTS - 1).build();
        loop {
            let page = self
                .batch_get_tables_page(BatchGetTables {
                    tables: pending,
                    consistent_read: req.consistent_read,
                })
                .await?;
            pending = Vec::new();
            for (table, got) in page.tables {
                match found.iter_mut().find(|(t, _)| *t == table) {
                    Some((_, items)) => items.extend(got.items),
                    None => found.push((table.clone(), got.items)),
                }
                if !got.unprocessed.is_empty() {
                    pending.push((table, got.unprocessed));
                }
            }
            if pending.is_empty() {
                return Ok(found);
            }
            match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => {
                    let left: usize = pending.iter().map(|(_, k)| k.len()).sum();
                    return Err(StoreError::Throttled(format!(
                        "BatchGetItem left {left} keys unprocessed after {BATCH_GET_MAX_ATTEMPTS} attempts"
                    )));
                }
            }
        }
    }

    /// BatchWriteItem of up to 25 requests, sending `UnprocessedItems` again with jittered
    /// exponential backoff; how many calls it took. Never drops a request: when some are
    /// still unprocessed after [`BATCH_WRITE_MAX_ATTEMPTS`] calls, the whole call fails
    /// with `Throttled` (what was processed stays written: a batch is not a transaction).
    async fn batch_write(&self, req: BatchWrite) -> StoreResult<u32> {
        validate::batch_write(self.schema(), &req)?;
        let mut pending = req.requests;
        let mut waits = retry_schedule(BATCH_WRITE_MAX_ATTEMPTS - 1).build();
        let mut calls = 0;
        loop {
            calls += 1;
            let page = self
                .batch_write_page(BatchWrite { requests: pending })
                .await?;
            if page.unprocessed.is_empty() {
                return Ok(calls);
            }
            pending = page.unprocessed;
            match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => {
                    return Err(StoreError::Throttled(format!(
                    "BatchWriteItem left {} requests unprocessed after {BATCH_WRITE_MAX_ATTEMPTS} attempts",
                    pending.len()
                )))
                }
            }
        }
    }
}

/// The requests of a call over several tables, when every one is on `own` (a store
/// without siblings): else DynamoDB's answer for a table it does not have.
fn own_table_only<T>(own: &str, by_table: Vec<(String, Vec<T>)>) -> StoreResult<Vec<T>> {
    let mut all = Vec::new();
    for (table, requests) in by_table {
        if table != own {
            return Err(StoreError::not_on_connection(&table));
        }
        all.extend(requests);
    }
    Ok(all)
}

/// The store of `table`: `store` itself when it is its table, else its sibling.
pub fn table_store(store: &Arc<dyn Store>, table: &str) -> StoreResult<Arc<dyn Store>> {
    if store.table_name() == table {
        return Ok(store.clone());
    }
    store
        .sibling(table)
        .ok_or_else(|| StoreError::not_on_connection(table))
}

/// The waits before a store call is sent again (keys left unprocessed, a transaction
/// cancelled by a concurrent write, an index that has not caught up): from 25 ms,
/// doubling, at most 1 s, each jittered so that callers retrying together spread out;
/// `retries` waits at most.
pub fn retry_schedule(retries: u32) -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(25))
        .with_factor(2.0)
        .with_max_delay(Duration::from_secs(1))
        .with_max_times(retries as usize)
        .with_jitter()
}
