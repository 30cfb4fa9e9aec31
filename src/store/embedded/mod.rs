//! The embedded engine: DynamoDB's semantics on `redb`, so the server runs with nothing
//! installed and tests run without a network.
//!
//! Layout inside the redb file, per DynamoDB table `T`:
//! - `meta`: one row per table, so DescribeTable and "table not found" behave as DynamoDB's;
//! - `items/T`: encoded `(PK, SK)` → the item, binary ([`codec`]; format 1 files held
//!   DynamoDB JSON and are migrated when opened, see [`upgrade`]);
//! - `index/T/<index>`: encoded `(index PK, index SK, PK, SK)` → the encoded base key (the
//!   row points at the item), or, for rows written under a GSI lag, a copy of the item as
//!   it was then (`codec::PROJECTED` then the encoded item: indexes project every
//!   attribute, so a lagging index answers with the item as it was). Only items carrying
//!   both index key attributes get a row, which makes the indexes sparse;
//! - `changes/T`: the change log, the table's stream ([`stream`]): sequence number → the
//!   change (kind, key, item before and after, time), written in the transaction of the
//!   write it records, trimmed to [`ChangeLog::capacity`] records and
//!   [`ChangeLog::retention`]; shard `n` holds sequence numbers `n × span + 1 ..= (n + 1) ×
//!   span`, so the log rolls over to a child shard as DynamoDB Streams does;
//! - `pending/T`: with a GSI lag ([`Faults`]), the index changes of each write in write
//!   order, each with the time it reaches the indexes. Due changes are applied before an
//!   index is read; all of them when the file is opened.
//!
//! Keys are encoded so that redb's byte order is DynamoDB's order ([`codec`]), and every
//! key condition becomes one contiguous range ([`query`]).
//!
//! Every write runs in one redb write transaction (serializable, one writer at a time), so
//! conditions are checked and effects applied atomically, and TransactWriteItems is all or
//! nothing ([`write`]); the writes that arrive during a commit share the next one
//! ([`group`]). Reads are snapshot reads, hence always strongly consistent, and indexes
//! are in step with the table, unless a fault model ([`super::faults`]) says otherwise.
//!
//! The files: this one the handle, the table's life and the [`Store`] calls; [`codec`]
//! key and item bytes; [`upgrade`] the file format; [`group`] group commit; [`expr`]
//! conditions and updates; [`write`] planning and applying writes and transactions;
//! [`query`] the reads; [`stream`] the change log as a change stream.

mod codec;
mod expr;
mod group;
mod query;
mod stream;
#[cfg(test)]
mod tests;
mod upgrade;
mod write;

pub use stream::ChangeLog;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition};

use super::faults::{self, Call};
use super::faults::{Faults, Injector};
use super::stream::ChangeStream;
use super::validated::Validated;
use codec::{decode_item, meta_indexes, meta_row, meta_time_to_live, meta_with, row_key};
use group::{Batch, Group, Tokens};
use query::{query, scan, MAX_BATCH_GET_BYTES};
use stream::EmbeddedChanges;
use write::{batch_in_group, digest, transact, transact_across};

use super::value::item_size;
use super::{
    retry_conflicts, BatchGet, BatchGetPage, BatchGetTables, BatchGetTablesPage, BatchWrite,
    BatchWritePage, Delete, GetItem, Item, Put, Query, QueryOutput, ReturnValues, Scan, Store,
    StoreError, StoreResult, TableAction, TableDescription, TableSchema, TransactAction, Update,
};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
type Bytes<'a> = TableDefinition<'a, &'static [u8], &'static [u8]>;
type Sequence<'a> = TableDefinition<'a, u64, &'static [u8]>;

/// The embedded engine for one table, every request validated first: what callers hold.
/// Cheap to clone.
pub type EmbeddedStore = Validated<EmbeddedEngine>;

/// The embedded engine for one table, under [`EmbeddedStore`]'s validation (the only way
/// to open one). Cheap to clone.
#[derive(Clone)]
pub struct EmbeddedEngine {
    inner: Arc<Inner>,
    /// Every table opened on the same database ([`EmbeddedStore::with_siblings`]), this
    /// one's included: what a call over several tables reaches. Its members hold no
    /// reference back to it.
    family: Arc<Vec<Arc<Inner>>>,
}

struct Inner {
    /// Shared by the tables opened on one file ([`EmbeddedStore::with_siblings`]): their
    /// transactions are this database's, so one spanning several is all or nothing.
    db: Arc<Database>,
    table: String,
    schema: TableSchema,
    items_name: String,
    index_names: Vec<String>,
    pending_name: String,
    changes_name: String,
    change_log: ChangeLog,
    /// Counts the commits that logged changes: what stream readers wait on.
    changed: tokio::sync::watch::Sender<u64>,
    /// How long a write takes to reach the indexes; zero writes them in its transaction.
    gsi_lag: Duration,
    faults: Option<Injector>,
    /// `ClientRequestToken`s of the transactions applied lately: the digest of the
    /// request and when the token expires.
    tokens: Mutex<Tokens>,
    /// Writes waiting for the next group commit.
    group: Mutex<Group>,
}

/// redb's page cache (reads and the write buffer) by default, in MiB (`--cache-mib`). The
/// benchmark's file is 135 MB: at 128 MiB most of its pages stay cached and the rest come
/// from the operating system's cache, with the peak RSS under 200 MB and no throughput
/// lost against redb's own default of 1 GiB, which caches the whole file on top of the
/// heap (measured in docs/BENCHMARKS.md; 64 MiB cost 12 % of the operations a second).
pub const DEFAULT_CACHE_MIB: u32 = 128;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

type ReadOp<T> = Arc<dyn Fn(&Inner) -> StoreResult<T> + Send + Sync>;
type WriteOp<T> =
    Arc<dyn Fn(&Inner, &redb::WriteTransaction, &mut Batch) -> StoreResult<T> + Send + Sync>;

/// What one attempt of a call does: a read, or a write inside a group's transaction.
enum Op<T> {
    Read(ReadOp<T>),
    Write(WriteOp<T>),
}

impl<T> Clone for Op<T> {
    fn clone(&self) -> Self {
        match self {
            Op::Read(f) => Op::Read(f.clone()),
            Op::Write(f) => Op::Write(f.clone()),
        }
    }
}

fn internal(e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!("embedded engine: {e}"))
}

fn not_found() -> StoreError {
    StoreError::TableNotFound("Cannot do operations on a non-existent table".into())
}

impl EmbeddedStore {
    /// Opens (or creates) a redb file. The table inside is created by `create_table`.
    pub fn open(path: &Path, table: &str, schema: TableSchema) -> StoreResult<Self> {
        Self::open_with_faults(path, table, schema, Faults::default())
    }

    /// [`EmbeddedStore::open`] with DynamoDB's failure modes injected.
    pub fn open_with_faults(
        path: &Path,
        table: &str,
        schema: TableSchema,
        faults: Faults,
    ) -> StoreResult<Self> {
        Self::open_with(path, table, schema, faults, DEFAULT_CACHE_MIB)
    }

    /// [`EmbeddedStore::open_with_faults`] with a page cache of `cache_mib` MiB.
    pub fn open_with(
        path: &Path,
        table: &str,
        schema: TableSchema,
        faults: Faults,
        cache_mib: u32,
    ) -> StoreResult<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(internal)?;
        }
        let cache_bytes = usize::try_from(cache_mib)
            .unwrap_or(usize::MAX)
            .saturating_mul(1024 * 1024);
        let db = Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(internal)?;
        let store = EmbeddedEngine::with_db(Arc::new(db), table, schema, faults);
        store.inner.open_in(path)?;
        Ok(Validated::new(store))
    }

    /// A store that lives in memory only, for tests and throwaway runs.
    pub fn in_memory(table: &str, schema: TableSchema) -> StoreResult<Self> {
        Self::in_memory_with_faults(table, schema, Faults::default())
    }

    /// [`EmbeddedStore::in_memory`] with DynamoDB's failure modes injected.
    pub fn in_memory_with_faults(
        table: &str,
        schema: TableSchema,
        faults: Faults,
    ) -> StoreResult<Self> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(internal)?;
        Ok(Validated::new(EmbeddedEngine::with_db(
            Arc::new(db),
            table,
            schema,
            faults,
        )))
    }

    /// The same store with `tables` (each name and schema) opened beside its own on its
    /// database, each reached through [`Store::sibling`], all reached by the calls over
    /// several tables. Call it before the store is cloned; on a file, `path` is the file
    /// (each table brought up to date as [`EmbeddedStore::open`] does), `None` in memory.
    pub fn with_siblings(
        mut self,
        tables: Vec<(String, TableSchema)>,
        path: Option<&Path>,
    ) -> StoreResult<Self> {
        if tables.is_empty() {
            return Ok(self);
        }
        let own = self.inner.clone();
        let faults = Faults {
            gsi_lag: own.gsi_lag,
            ..own.faults.as_ref().map(|i| i.faults()).unwrap_or_default()
        };
        let mut family = vec![own.clone()];
        for (table, schema) in tables {
            if family.iter().any(|i| i.table == table) {
                continue;
            }
            let mut sibling = EmbeddedEngine::with_db(own.db.clone(), &table, schema, faults);
            if let Some(inner) = Arc::get_mut(&mut sibling.inner) {
                inner.change_log = own.change_log;
            }
            if let Some(path) = path {
                sibling.inner.open_in(path)?;
            }
            family.push(sibling.inner);
        }
        self.family = Arc::new(family);
        Ok(self)
    }
}

impl EmbeddedEngine {
    fn with_db(db: Arc<Database>, table: &str, schema: TableSchema, faults: Faults) -> Self {
        let index_names = schema
            .indexes
            .iter()
            .map(|i| format!("index/{table}/{}", i.name))
            .collect();
        EmbeddedEngine {
            inner: Arc::new(Inner {
                db,
                items_name: format!("items/{table}"),
                index_names,
                pending_name: format!("pending/{table}"),
                changes_name: format!("changes/{table}"),
                change_log: ChangeLog::DEFAULT,
                changed: tokio::sync::watch::channel(0).0,
                table: table.to_owned(),
                schema,
                gsi_lag: faults.gsi_lag,
                faults: faults.any().then(|| Injector::new(faults)),
                tokens: Mutex::new(Tokens::default()),
                group: Mutex::new(Group::default()),
            }),
            family: Arc::default(),
        }
    }

    /// The table `table` of this database: this one's, or a sibling's.
    fn own_or_member(&self, table: &str) -> StoreResult<Arc<Inner>> {
        if table == self.inner.table {
            return Ok(self.inner.clone());
        }
        self.member(table)
            .map(|m| m.inner)
            .ok_or_else(|| StoreError::not_on_connection(table))
    }

    /// The engine of `table` on this one's database, when it was opened with it.
    fn member(&self, table: &str) -> Option<EmbeddedEngine> {
        let inner = self.family.iter().find(|i| i.table == table)?;
        Some(EmbeddedEngine {
            inner: inner.clone(),
            family: self.family.clone(),
        })
    }
}

impl Inner {
    /// BatchGetItem's reads of `keys` in a snapshot of now, the page cut once `bytes` (the
    /// call's reads so far) reaches 16 MB: the keys past it come back unprocessed.
    fn read_keys(
        &self,
        keys: &[super::PrimaryKey],
        bytes: &mut usize,
    ) -> StoreResult<BatchGetPage> {
        let items = self.read_items()?;
        let mut page = BatchGetPage::default();
        for key in keys {
            if *bytes >= MAX_BATCH_GET_BYTES {
                page.unprocessed.push(key.clone());
                continue;
            }
            if let Some(v) = items
                .get(row_key(&self.schema, key).as_slice())
                .map_err(internal)?
            {
                let item = decode_item(v.value())?;
                *bytes += item_size(&item);
                page.items.push(item);
            }
        }
        Ok(page)
    }

    /// A table of the file at `path` made ready to serve: the index changes still waiting
    /// from the last run go in first, so the format upgrade rewrites their item copies too.
    fn open_in(&self, path: &Path) -> StoreResult<()> {
        self.propagate(true)?;
        self.upgrade_format(path)
    }
}

impl EmbeddedStore {
    /// The same store keeping `log` of its changes. Call it before the store is cloned
    /// (a shared store keeps its settings).
    pub fn with_change_log(mut self, log: ChangeLog) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.change_log = ChangeLog {
                    capacity: log.capacity.max(1),
                    shard_span: log.shard_span.max(1),
                    ..log
                }
            }
            None => tracing::warn!(
                "the change log's settings are set before the store is shared; ignored"
            ),
        }
        self
    }
}

impl EmbeddedEngine {
    /// Runs blocking redb work off the async executor.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(internal)?
    }

    /// One attempt of `op`. A read runs on the calling task: it is short (a few B-tree
    /// lookups in redb's page cache, a page of at most 1 MB), and handing it to the
    /// blocking pool and back cost more CPU than the read itself (two thread wake-ups per
    /// call; docs/BENCHMARKS.md). An index read under a GSI lag goes to the blocking pool,
    /// as it first applies the due index changes (a write). A write joins the next group
    /// commit.
    async fn attempt<T: Send + 'static>(&self, op: Op<T>) -> StoreResult<T> {
        match op {
            Op::Read(f) if self.inner.gsi_lag.is_zero() => f(&self.inner),
            Op::Read(f) => self.run(move |inner| f(inner)).await,
            Op::Write(f) => self.commit_in_group(f).await,
        }
    }

    /// One call: without faults, `op` once; with them, the attempts the SDK in front of
    /// DynamoDB would make ([`faults::call`]).
    async fn call<T: Send + 'static>(&self, call: Call, op: Op<T>) -> StoreResult<T> {
        match &self.inner.faults {
            None => self.attempt(op).await,
            Some(injector) => faults::call(injector, call, || self.attempt(op.clone())).await,
        }
    }
}

impl Inner {
    fn items_def(&self) -> Bytes<'_> {
        TableDefinition::new(&self.items_name)
    }

    fn index_def(&self, i: usize) -> Bytes<'_> {
        TableDefinition::new(&self.index_names[i])
    }

    fn pending_def(&self) -> Sequence<'_> {
        TableDefinition::new(&self.pending_name)
    }

    fn changes_def(&self) -> Sequence<'_> {
        TableDefinition::new(&self.changes_name)
    }

    fn table_exists(
        &self,
        meta: &impl ReadableTable<&'static str, &'static [u8]>,
    ) -> StoreResult<bool> {
        Ok(meta.get(self.table.as_str()).map_err(internal)?.is_some())
    }

    fn read_exists(&self, tx: &redb::ReadTransaction) -> StoreResult<()> {
        match tx.open_table(META) {
            Ok(meta) if self.table_exists(&meta)? => Ok(()),
            Ok(_) | Err(redb::TableError::TableDoesNotExist(_)) => Err(not_found()),
            Err(e) => Err(internal(e)),
        }
    }

    /// The table's items in a snapshot of now, for a read (`TableNotFound` without it).
    fn read_items(&self) -> StoreResult<redb::ReadOnlyTable<&'static [u8], &'static [u8]>> {
        let tx = self.db.begin_read().map_err(internal)?;
        self.read_exists(&tx)?;
        tx.open_table(self.items_def()).map_err(internal)
    }

    /// The table's meta row, as bytes (`TableNotFound` without it).
    fn meta_row_in(
        &self,
        meta: &impl ReadableTable<&'static str, &'static [u8]>,
    ) -> StoreResult<Vec<u8>> {
        Ok(meta
            .get(self.table.as_str())
            .map_err(internal)?
            .ok_or_else(not_found)?
            .value()
            .to_vec())
    }

    /// The schema's indexes the table has filled: those its meta row names (a row from
    /// before they were kept: those whose tables exist).
    fn filled_indexes(&self, tx: &redb::ReadTransaction) -> StoreResult<Vec<String>> {
        let meta = tx.open_table(META).map_err(internal)?;
        let row = meta.get(self.table.as_str()).map_err(internal)?;
        let named = row.and_then(|r| meta_indexes(r.value()));
        Ok(self
            .schema
            .indexes
            .iter()
            .enumerate()
            .filter(|(i, index)| match &named {
                Some(names) => names.contains(&index.name),
                None => tx.open_table(self.index_def(*i)).is_ok(),
            })
            .map(|(_, index)| index.name.clone())
            .collect())
    }

    fn write_exists(&self, tx: &redb::WriteTransaction) -> StoreResult<()> {
        let meta = tx.open_table(META).map_err(internal)?;
        if self.table_exists(&meta)? {
            Ok(())
        } else {
            Err(not_found())
        }
    }
}

#[async_trait]
impl Store for EmbeddedEngine {
    fn table_name(&self) -> &str {
        &self.inner.table
    }

    fn schema(&self) -> &TableSchema {
        &self.inner.schema
    }

    fn engine_name(&self) -> &'static str {
        "embedded"
    }

    async fn create_table(&self) -> StoreResult<bool> {
        self.run(|inner| {
            let tx = inner.db.begin_write().map_err(internal)?;
            {
                let mut meta = tx.open_table(META).map_err(internal)?;
                if inner.table_exists(&meta)? {
                    return Ok(false);
                }
                let indexes: Vec<&str> = inner
                    .schema
                    .indexes
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect();
                let row = meta_row(&inner.table, inner.schema.time_to_live.as_deref(), &indexes);
                meta.insert(inner.table.as_str(), row.as_slice())
                    .map_err(internal)?;
            }
            tx.open_table(inner.items_def()).map_err(internal)?;
            for i in 0..inner.index_names.len() {
                tx.open_table(inner.index_def(i)).map_err(internal)?;
            }
            tx.commit().map_err(internal)?;
            Ok(true)
        })
        .await
    }

    async fn time_to_live(&self) -> StoreResult<Option<String>> {
        self.run(|inner| {
            let tx = inner.db.begin_read().map_err(internal)?;
            inner.read_exists(&tx)?;
            let meta = tx.open_table(META).map_err(internal)?;
            let row = meta.get(inner.table.as_str()).map_err(internal)?;
            Ok(row.and_then(|r| meta_time_to_live(r.value())))
        })
        .await
    }

    /// An index a later schema adds: its table created and filled, in one transaction,
    /// with a row for every item that carries its keys.
    async fn create_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        let name = name.to_owned();
        self.run(move |inner| {
            let Some(i) = inner.schema.indexes.iter().position(|x| x.name == name) else {
                return Err(StoreError::Validation(format!(
                    "the table's schema has no index {name}"
                )));
            };
            {
                let tx = inner.db.begin_read().map_err(internal)?;
                inner.read_exists(&tx)?;
                if inner.filled_indexes(&tx)?.contains(&name) {
                    return Ok(false);
                }
            }
            if dry_run {
                return Ok(true);
            }
            let tx = inner.db.begin_write().map_err(internal)?;
            {
                let items = tx.open_table(inner.items_def()).map_err(internal)?;
                let mut index = tx.open_table(inner.index_def(i)).map_err(internal)?;
                for entry in items.iter().map_err(internal)? {
                    let (k, v) = entry.map_err(internal)?;
                    let item = decode_item(v.value())?;
                    for (at, row) in inner.index_rows(&item) {
                        if at == i {
                            index.insert(row.as_slice(), k.value()).map_err(internal)?;
                        }
                    }
                }
                let mut meta = tx.open_table(META).map_err(internal)?;
                let row = inner.meta_row_in(&meta)?;
                let mut filled: Vec<String> = match meta_indexes(&row) {
                    Some(names) => names,
                    None => inner
                        .schema
                        .indexes
                        .iter()
                        .map(|x| x.name.clone())
                        .filter(|n| *n != name)
                        .collect(),
                };
                filled.push(name.clone());
                let row = meta_with(&row, "indexes", serde_json::json!(filled));
                meta.insert(inner.table.as_str(), row.as_slice())
                    .map_err(internal)?;
            }
            tx.commit().map_err(internal)?;
            Ok(true)
        })
        .await
    }

    async fn enable_time_to_live(&self, attribute: &str, dry_run: bool) -> StoreResult<bool> {
        let attribute = attribute.to_owned();
        self.run(move |inner| {
            let tx = inner.db.begin_write().map_err(internal)?;
            {
                let mut meta = tx.open_table(META).map_err(internal)?;
                let row = inner.meta_row_in(&meta)?;
                if meta_time_to_live(&row).as_deref() == Some(attribute.as_str()) {
                    return Ok(false);
                }
                if dry_run {
                    return Ok(true);
                }
                let row = meta_with(
                    &row,
                    "timeToLive",
                    serde_json::json!({ "attributeName": attribute, "enabled": true }),
                );
                meta.insert(inner.table.as_str(), row.as_slice())
                    .map_err(internal)?;
            }
            tx.commit().map_err(internal)?;
            Ok(true)
        })
        .await
    }

    /// What DynamoDB's Time to Live process does: every item whose expiry (epoch seconds)
    /// has passed, and is not more than five years old (DynamoDB ignores those), deleted
    /// on the condition that it still has, so a write that moved the expiry meanwhile
    /// wins. Each delete is in the change log, as a TTL delete is in DynamoDB's stream.
    async fn expire_items(&self) -> StoreResult<usize> {
        use super::{AttributeValue, CmpOp, Condition};
        const FIVE_YEARS: i64 = 5 * 365 * 86_400;
        let Some(attr) = self.time_to_live().await? else {
            return Ok(0);
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let mut due = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .scan(Scan {
                    limit: None,
                    start,
                    consistent_read: true,
                    segment: None,
                    ..Default::default()
                })
                .await?;
            for item in &page.items {
                let expiry = match item.get(&attr) {
                    Some(AttributeValue::N(n)) => n.parse::<i64>().ok(),
                    _ => None,
                };
                if expiry.is_some_and(|t| t <= now && t > now - FIVE_YEARS) {
                    due.extend(self.inner.schema.key_of(item));
                }
            }
            match page.last_evaluated_key {
                Some(next) => start = Some(next),
                None => break,
            }
        }
        let mut deleted = 0;
        for key in due {
            let gone = Delete::new(key).when(Condition::Cmp(
                attr.clone(),
                CmpOp::Le,
                AttributeValue::N(now.to_string()),
            ));
            match self.delete_item(gone).await {
                Ok(_) => deleted += 1,
                Err(StoreError::ConditionFailed { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }

    async fn delete_table(&self) -> StoreResult<bool> {
        self.run(|inner| {
            let tx = inner.db.begin_write().map_err(internal)?;
            {
                let mut meta = tx.open_table(META).map_err(internal)?;
                if meta
                    .remove(inner.table.as_str())
                    .map_err(internal)?
                    .is_none()
                {
                    return Ok(false);
                }
            }
            tx.delete_table(inner.items_def()).map_err(internal)?;
            for i in 0..inner.index_names.len() {
                tx.delete_table(inner.index_def(i)).map_err(internal)?;
            }
            tx.delete_table(inner.pending_def()).map_err(internal)?;
            tx.delete_table(inner.changes_def()).map_err(internal)?;
            tx.commit().map_err(internal)?;
            inner.notify_changes();
            Ok(true)
        })
        .await
    }

    async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
        self.run(|inner| {
            let tx = inner.db.begin_read().map_err(internal)?;
            if let Err(StoreError::TableNotFound(_)) = inner.read_exists(&tx) {
                return Ok(None);
            }
            let items = tx.open_table(inner.items_def()).map_err(internal)?;
            let count = redb::ReadableTableMetadata::len(&items).map_err(internal)?;
            Ok(Some(TableDescription {
                name: inner.table.clone(),
                arn: None,
                status: "ACTIVE".into(),
                // Those of the schema the file has filled: one a later schema adds is
                // created by `create_index` (a write may have opened its table before).
                indexes: inner.filled_indexes(&tx)?,
                item_count: Some(count),
                shape: None,
            }))
        })
        .await
    }

    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| {
                let items = inner.read_items()?;
                let got = items
                    .get(row_key(&inner.schema, &req.key).as_slice())
                    .map_err(internal)?;
                got.map(|v| decode_item(v.value())).transpose()
            })),
        )
        .await
    }

    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| inner.read_keys(&req.keys, &mut 0))),
        )
        .await
    }

    fn sibling(&self, table: &str) -> Option<Arc<dyn Store>> {
        let member = self
            .member(table)
            .filter(|m| m.inner.table != self.inner.table)?;
        Some(Arc::new(Validated::new(member)))
    }

    /// Each table read in turn, the page cut at 16 MB read in all, as DynamoDB's is.
    async fn batch_get_tables_page(&self, req: BatchGetTables) -> StoreResult<BatchGetTablesPage> {
        let members = req
            .tables
            .iter()
            .map(|(table, _)| self.own_or_member(table))
            .collect::<StoreResult<Vec<_>>>()?;
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |_| {
                let mut bytes = 0;
                let mut out = BatchGetTablesPage::default();
                for ((table, keys), inner) in req.tables.iter().zip(&members) {
                    let page = inner.read_keys(keys, &mut bytes)?;
                    out.tables.push((table.clone(), page));
                }
                Ok(out)
            })),
        )
        .await
    }

    /// One group commit's transaction over the tables of this database, all or nothing.
    async fn transact_write_tables(&self, actions: Vec<TableAction>) -> StoreResult<()> {
        if actions.iter().all(|a| a.table == self.inner.table) {
            return self
                .transact_write(actions.into_iter().map(|a| a.action).collect())
                .await;
        }
        let on = actions
            .into_iter()
            .map(|a| Ok((self.own_or_member(&a.table)?, a.action)))
            .collect::<StoreResult<Vec<_>>>()?;
        let writes: Vec<faults::ItemWrite> = match self.inner.faults {
            None => Vec::new(),
            Some(_) => on
                .iter()
                .enumerate()
                .map(
                    |(i, (inner, a))| match faults::ItemWrite::of(&inner.schema, a) {
                        Some(w) => faults::ItemWrite {
                            key: format!("{}\u{0}{}", inner.table, w.key),
                            ..w
                        },
                        None => faults::ItemWrite {
                            key: format!("\u{0}action {i}"),
                            units: 1.0,
                        },
                    },
                )
                .collect(),
        };
        let faulty = self.inner.faults.is_some();
        let digest = faulty.then(|| {
            let plain: Vec<TransactAction> = on.iter().map(|(_, a)| a.clone()).collect();
            let tables: String = on.iter().map(|(i, _)| i.table.as_str()).collect();
            digest(&plain) ^ crc32fast::hash(tables.as_bytes()) as u64
        });
        let on = Arc::new(on);
        retry_conflicts("TransactWriteItems", || {
            let on = on.clone();
            let token = digest.map(|d| (ulid::Ulid::new().to_string(), d));
            self.call(
                Call::Transaction(writes.clone()),
                Op::Write(Arc::new(move |inner, tx, batch| {
                    let actions: Vec<(&Inner, &TransactAction)> =
                        on.iter().map(|(i, a)| (i.as_ref(), a)).collect();
                    transact_across(inner, tx, batch, &actions, token.as_ref())?;
                    batch.touched.extend(
                        on.iter()
                            .filter(|(i, _)| i.table != inner.table)
                            .map(|(i, _)| i.clone()),
                    );
                    Ok(())
                })),
            )
        })
        .await
    }

    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| {
                if req.index.is_some() && !inner.gsi_lag.is_zero() {
                    inner.propagate(false)?;
                }
                query(inner, &req)
            })),
        )
        .await
    }

    async fn scan(&self, req: Scan) -> StoreResult<QueryOutput> {
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| {
                if req.index.is_some() && !inner.gsi_lag.is_zero() {
                    inner.propagate(false)?;
                }
                scan(inner, &req)
            })),
        )
        .await
    }

    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        let action = Arc::new(TransactAction::Put(req));
        self.single_write("PutItem", action).await.map(|_| None)
    }

    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        let returns = req.returns;
        let (old, new) = self
            .single_write("UpdateItem", Arc::new(TransactAction::Update(req)))
            .await?;
        Ok(match returns {
            ReturnValues::None => None,
            ReturnValues::AllOld => old,
            ReturnValues::AllNew => new,
        })
    }

    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        let returns = req.returns;
        let (old, _) = self
            .single_write("DeleteItem", Arc::new(TransactAction::Delete(req)))
            .await?;
        Ok(if returns == ReturnValues::AllOld {
            old
        } else {
            None
        })
    }

    /// Each request applied on its own, in one group commit. With faults, DynamoDB's
    /// answer to a throttled item: some requests come back unprocessed (each at the
    /// throttle rate, or past its item's write units), to be sent again.
    async fn batch_write_page(&self, req: BatchWrite) -> StoreResult<BatchWritePage> {
        let (send, unprocessed) = match &self.inner.faults {
            None => (req.requests, Vec::new()),
            Some(injector) => {
                let writes: Vec<Option<faults::ItemWrite>> = req
                    .requests
                    .iter()
                    .map(|r| faults::ItemWrite::of_batch(&self.inner.schema, r))
                    .collect();
                let left = injector.unprocessed(&writes);
                let (send, kept): (Vec<_>, Vec<_>) = req
                    .requests
                    .into_iter()
                    .zip(left)
                    .partition(|(_, left)| !left);
                (
                    send.into_iter().map(|(r, _)| r).collect(),
                    kept.into_iter().map(|(r, _)| r).collect(),
                )
            }
        };
        if !send.is_empty() {
            let send = Arc::new(send);
            self.attempt(Op::Write(Arc::new(move |inner, tx, batch| {
                batch_in_group(inner, tx, batch, &send)
            })))
            .await?;
        }
        Ok(BatchWritePage { unprocessed })
    }

    /// The change log, followed through its own handle.
    fn change_stream(&self) -> Option<Arc<dyn ChangeStream>> {
        Some(Arc::new(EmbeddedChanges {
            store: self.clone(),
            woken: tokio::sync::Mutex::new(self.inner.changed.subscribe()),
        }))
    }

    /// With faults, each send carries a `ClientRequestToken` (the same for the attempts
    /// of one send), as [`super::dynamo::DynamoStore`]'s do.
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        let faulty = self.inner.faults.is_some();
        // What the fault model counts (item limits, conflicts): one entry per action.
        let writes: Vec<faults::ItemWrite> = if faulty {
            actions
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    faults::ItemWrite::of(&self.inner.schema, a).unwrap_or(faults::ItemWrite {
                        key: format!("\u{0}action {i}"),
                        units: 1.0,
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let actions = Arc::new(actions);
        retry_conflicts("TransactWriteItems", || {
            let actions = actions.clone();
            let token = faulty.then(|| (ulid::Ulid::new().to_string(), digest(&actions)));
            self.call(
                Call::Transaction(writes.clone()),
                Op::Write(Arc::new(move |inner, tx, batch| {
                    transact(inner, tx, batch, &actions, token.as_ref())
                })),
            )
        })
        .await
    }
}
