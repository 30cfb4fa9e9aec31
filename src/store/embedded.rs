//! The embedded engine: DynamoDB's semantics on `redb`, so the server runs with nothing
//! installed and tests run without a network.
//!
//! Layout inside the redb file, per DynamoDB table `T`:
//! - `meta`: one row per table, so DescribeTable and "table not found" behave as DynamoDB's;
//! - `items/T`: encoded `(PK, SK)` → the item, binary ([`encode_item`]; format 1 files
//!   held DynamoDB JSON and are migrated when opened, see [`FORMAT`]);
//! - `index/T/<index>`: encoded `(index PK, index SK, PK, SK)` → the encoded base key (the
//!   row points at the item), or, for rows written under a GSI lag, a copy of the item as
//!   it was then ([`PROJECTED`] then the encoded item: indexes project every attribute, so a
//!   lagging index answers with the item as it was). Only items carrying both index key
//!   attributes get a row, which makes the indexes sparse;
//! - `changes/T`: the change log, the table's stream ([`super::stream`]): sequence number
//!   → the change (kind, key, item before and after, time), written in the transaction of
//!   the write it records, trimmed to [`ChangeLog::capacity`] records and
//!   [`ChangeLog::retention`]; shard `n` holds sequence numbers `n × span + 1 ..= (n + 1) ×
//!   span`, so the log rolls over to a child shard as DynamoDB Streams does;
//! - `pending/T`: with a GSI lag ([`Faults`]), the index changes of each write in write
//!   order, each with the time it reaches the indexes. Due changes are applied before an
//!   index is read; all of them when the file is opened.
//!
//! Keys are encoded so that redb's byte order is DynamoDB's order: each string's UTF-8
//! bytes with `0x00` escaped as `0x00 0xFF`, then the terminator `0x00 0x01`. A prefix then
//! sorts before its extensions, and every key condition becomes one contiguous range.
//!
//! Every write runs in one redb write transaction (serializable, one writer at a time), so
//! conditions are checked and effects applied atomically, and TransactWriteItems is all or
//! nothing. Reads are snapshot reads, hence always strongly consistent, and indexes are
//! in step with the table, unless a fault model ([`super::faults`]) says otherwise.

// Over 1 000 lines with its tests: one engine, one redb transaction per port call, and the
// fault model's attempts around them; splitting the key encoding or the Query path out
// would scatter what one reader checks against DynamoDB's semantics.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use redb::{Database, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use super::faults::{Draw, Faults, Injector, CLIENT_TOKEN_TTL, SDK_MAX_ATTEMPTS};
use super::stream::{
    ChangeKind, ChangeRecord, ChangeStream, RecordsPage, ShardInfo, StartAt, StreamError,
    StreamResult, ITERATOR_TTL, MAX_RECORDS_PER_CALL,
};

use super::validate::{self, MAX_QUERY_PAGE_BYTES};
use super::value::{self, canonical_number, canonicalize, item_size, parse_number};
use super::{
    retry_conflicts, retry_schedule, AttributeValue, BatchGet, BatchGetPage, CancelReason, CmpOp,
    Condition, Delete, GetItem, IndexKey, Item, PageKey, PrimaryKey, Put, Query, QueryOutput,
    ReturnValues, Scan, SetValue, SortCondition, Store, StoreError, StoreResult, TableDescription,
    TableSchema, TransactAction, Update, UpdateExpr,
};

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
type Bytes<'a> = TableDefinition<'a, &'static [u8], &'static [u8]>;
type Sequence<'a> = TableDefinition<'a, u64, &'static [u8]>;

/// The first bytes of an index row that holds a copy of the item rather than the base
/// key: no encoded key starts with them (after `0x00` an encoded key has `0x01` or `0xFF`).
/// Without a lag rows point at the item, which keeps one copy of it on disk.
const PROJECTED: [u8; 2] = [0x00, 0x02];

fn projected(item: &Item) -> StoreResult<Vec<u8>> {
    let mut row = PROJECTED.to_vec();
    row.extend(encode_item(item)?);
    Ok(row)
}

/// BatchGetItem answers at most 16 MB; the rest comes back as unprocessed keys.
const MAX_BATCH_GET_BYTES: usize = 16 * 1024 * 1024;

/// The embedded engine for one table. Cheap to clone.
#[derive(Clone)]
pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
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

/// Most writes one group commit takes: bounds how long the first of them waits for the
/// last.
const MAX_GROUP: usize = 256;

/// Group commit: writes that arrive while a commit is under way wait in `queue`; the
/// committer takes them all into one redb write transaction and one fsync, then answers
/// each. Each write is planned against the items as the writes before it in the group left
/// them, so a group is the same as its writes committed one after the other.
#[derive(Default)]
struct Group {
    queue: Vec<Job>,
    /// Whether a committer runs (on the blocking pool); the first write finding none
    /// starts one.
    committing: bool,
}

/// The group committer's hold on the store, moved into its blocking task. Should that task
/// never run (the runtime refuses it while shutting down) or stop by a panic, dropping the
/// hold answers the writes still queued (an error; none of them was applied) and lets the
/// next write start a committer, rather than leaving every later write waiting.
struct Committer(Option<Arc<Inner>>);

impl Committer {
    fn run(mut self) {
        let Some((done, committed)) = self.0.as_ref().map(|inner| inner.commit_groups()) else {
            return;
        };
        // Let go of the store before answering the last group, so a caller that drops the
        // store once answered closes the file.
        self.0 = None;
        for d in done {
            d(&committed);
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            let abandoned = {
                let mut group = inner.group();
                group.committing = false;
                std::mem::take(&mut group.queue)
            };
            // Each job holds its caller's reply; dropping it answers "ended without an
            // answer", once the store is let go of (as `run` does).
            drop(inner);
            drop(abandoned);
        }
    }
}

/// One write of a group: runs inside the group's transaction (`None` when it could not be
/// opened) and returns what answers its caller once the group's commit is known.
type Job = Box<dyn FnOnce(&Inner, Option<&redb::WriteTransaction>, &mut Batch) -> Done + Send>;
type Done = Box<dyn FnOnce(&StoreResult<()>) + Send>;

/// What the writes of one group share.
#[derive(Default)]
struct Batch {
    /// Client request tokens of the transactions applied in this group, remembered once
    /// it commits (a repeat within the group is answered from here).
    tokens: Vec<(String, u64)>,
    /// A write failed while applying its changes (after planning, which writes nothing):
    /// nothing of the group is committed. A refusal, or an error met while planning, fails
    /// that write alone.
    unsound: bool,
}

/// Client request tokens of applied transactions, forgotten once expired: a queue in
/// expiry order (every token lives [`CLIENT_TOKEN_TTL`]), so forgetting costs nothing
/// per transaction beyond the tokens that expired.
#[derive(Default)]
struct Tokens {
    by_token: HashMap<String, (u64, Instant)>,
    expiring: std::collections::VecDeque<(Instant, String)>,
}

impl Tokens {
    fn remember(&mut self, token: &str, digest: u64, now: Instant) {
        while let Some((expires, _)) = self.expiring.front() {
            if *expires > now {
                break;
            }
            if let Some((_, old)) = self.expiring.pop_front() {
                if self.by_token.get(&old).is_some_and(|(_, e)| *e <= now) {
                    self.by_token.remove(&old);
                }
            }
        }
        let expires = now + CLIENT_TOKEN_TTL;
        self.by_token.insert(token.to_owned(), (digest, expires));
        self.expiring.push_back((expires, token.to_owned()));
    }
}

/// How much of the change log the engine keeps, and how it is cut into shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeLog {
    /// Records kept at most; older ones are trimmed as new ones are written.
    pub capacity: u64,
    /// Records are also trimmed once older than this (DynamoDB Streams: 24 hours).
    pub retention: Duration,
    /// Records per shard before the log rolls over to a child shard.
    pub shard_span: u64,
}

impl ChangeLog {
    pub const DEFAULT: ChangeLog = ChangeLog {
        capacity: 10_000,
        retention: Duration::from_secs(24 * 3600),
        shard_span: 50_000,
    };
}

impl Default for ChangeLog {
    fn default() -> Self {
        ChangeLog::DEFAULT
    }
}

/// Most records trimmed by one write: trimming keeps up with writing (each write logs at
/// most a transaction's 100 changes) without one write paying for a long backlog.
const MAX_TRIM_PER_WRITE: usize = 256;

/// One change as the log stores it: the time it was made (8 bytes, big-endian ms since
/// the Unix epoch, read alone when trimming), then this as JSON.
#[derive(Serialize, Deserialize)]
struct LoggedChange {
    kind: ChangeKind,
    pk: String,
    sk: String,
    old: Option<Item>,
    new: Option<Item>,
}

/// The index changes of one write, waiting for the GSI lag to pass.
#[derive(Serialize, Deserialize)]
struct Propagation {
    /// Milliseconds since the Unix epoch when the change reaches the indexes.
    due_ms: u64,
    rows: Vec<IndexChange>,
}

/// (index position, encoded index key, the item to store there or `None` to remove).
type IndexChange = (usize, Vec<u8>, Option<Vec<u8>>);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What a write attempt is, for the fault model.
#[derive(Clone, Copy)]
enum Call {
    Read,
    /// PutItem, UpdateItem, DeleteItem.
    Single,
    /// TransactWriteItems with this many actions.
    Transaction(usize),
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
        let store = Self::with_db(db, table, schema, faults);
        // Index changes still waiting from the last run go in first, so the upgrade
        // rewrites their item copies too.
        store.inner.propagate(true)?;
        store.inner.upgrade_format(path)?;
        Ok(store)
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
        Ok(Self::with_db(db, table, schema, faults))
    }

    fn with_db(db: Database, table: &str, schema: TableSchema, faults: Faults) -> Self {
        let index_names = schema
            .indexes
            .iter()
            .map(|i| format!("index/{table}/{}", i.name))
            .collect();
        EmbeddedStore {
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
        }
    }

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

    /// Runs `write` in the next group commit, and answers once that group is durable (or
    /// failed whole).
    async fn commit_in_group<T: Send + 'static>(&self, write: WriteOp<T>) -> StoreResult<T> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |inner, tx, batch| {
            let result = match tx {
                Some(tx) => write(inner, tx, batch),
                None => Err(internal("the group's write transaction could not begin")),
            };
            Box::new(move |committed: &StoreResult<()>| {
                let _ = reply.send(match committed {
                    Ok(()) => result,
                    Err(e) => Err(e.clone()),
                });
            })
        });
        let lead = {
            let mut group = self.inner.group();
            group.queue.push(job);
            !std::mem::replace(&mut group.committing, true)
        };
        if lead {
            let committer = Committer(Some(self.inner.clone()));
            tokio::task::spawn_blocking(move || committer.run());
        }
        answer
            .await
            .map_err(|_| internal("the group commit ended without an answer"))?
    }

    /// One call as the SDK in front of DynamoDB makes it: without faults, `op` once; with
    /// them, up to [`SDK_MAX_ATTEMPTS`] attempts, each of which may be throttled (sent
    /// again), meet a transaction in flight (given back at once, as the SDK does), or be
    /// applied and lose its reply (sent again, applied again).
    async fn call<T: Send + 'static>(&self, call: Call, op: Op<T>) -> StoreResult<T> {
        let Some(injector) = &self.inner.faults else {
            return self.attempt(op).await;
        };
        let actions = match call {
            Call::Read => 0,
            Call::Single => 1,
            Call::Transaction(n) => n,
        };
        let mut waits = backon::BackoffBuilder::build(retry_schedule(SDK_MAX_ATTEMPTS - 1));
        let mut lost_before = false;
        loop {
            let draw = match injector.draw(actions) {
                // DynamoDB answers a transaction sent again with its client token from
                // the token, before any transaction in flight could conflict with it.
                Draw::Conflict(_) if lost_before && matches!(call, Call::Transaction(_)) => {
                    Draw::Through
                }
                draw => draw,
            };
            let failed = match draw {
                Draw::Through => return self.attempt(op).await,
                Draw::Throttled => StoreError::Throttled(
                    "Rate of requests exceeds the allowed throughput (injected)".into(),
                ),
                // A single write that conflicts after an attempt was applied and lost: the
                // caller cannot be told that nothing was written.
                Draw::Conflict(_) if lost_before => {
                    return Err(StoreError::Unavailable(
                        "Transaction is ongoing for the item (injected), after an attempt \
                         that timed out once the store had received it"
                            .into(),
                    ))
                }
                Draw::Conflict(at) => {
                    return Err(match call {
                        Call::Transaction(n) => StoreError::TransactionCanceled {
                            reasons: (0..n)
                                .map(|i| {
                                    if i == at {
                                        CancelReason::TransactionConflict
                                    } else {
                                        CancelReason::None
                                    }
                                })
                                .collect(),
                        },
                        _ => StoreError::TransactionConflict(
                            "Transaction is ongoing for the item (injected)".into(),
                        ),
                    })
                }
                Draw::LostReply => {
                    // Applied (or refused) by the store; the answer never reaches the caller.
                    lost_before = true;
                    let op = op.clone();
                    let _lost = self.attempt(op).await;
                    StoreError::Unavailable(
                        "the attempt timed out after the store received it (injected lost reply)"
                            .into(),
                    )
                }
            };
            match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                // Throttled now, but an earlier attempt may have been applied: the caller
                // cannot be told that nothing was written.
                None if lost_before => {
                    return Err(StoreError::Unavailable(format!(
                        "{failed}, after an attempt that timed out once the store had received it"
                    )))
                }
                None => return Err(failed),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Key encoding

fn push_component(out: &mut Vec<u8>, s: &str) {
    push_escaped(out, s);
    out.extend_from_slice(&[0x00, 0x01]);
}

fn push_escaped(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        if b == 0 {
            out.extend_from_slice(&[0x00, 0xFF]);
        } else {
            out.push(b);
        }
    }
}

fn encode_key(parts: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        push_component(&mut out, p);
    }
    out
}

fn table_key(k: &PrimaryKey) -> Vec<u8> {
    encode_key(&[&k.pk, &k.sk])
}

/// Decodes the components of an encoded key.
fn decode_key(mut bytes: &[u8]) -> StoreResult<Vec<String>> {
    let mut parts = Vec::new();
    while !bytes.is_empty() {
        let mut part = Vec::new();
        loop {
            match bytes {
                [0x00, 0x01, rest @ ..] => {
                    bytes = rest;
                    break;
                }
                [0x00, 0xFF, rest @ ..] => {
                    part.push(0);
                    bytes = rest;
                }
                [b, rest @ ..] => {
                    part.push(*b);
                    bytes = rest;
                }
                [] => return Err(internal("truncated key")),
            }
        }
        parts.push(String::from_utf8(part).map_err(internal)?);
    }
    Ok(parts)
}

/// The byte range of one partition under a sort-key condition.
fn key_range(partition: &str, sort: Option<&SortCondition>) -> (Vec<u8>, Vec<u8>) {
    let p = encode_key(&[partition]);
    let with = |s: &str, tail: &[u8]| {
        let mut v = p.clone();
        push_escaped(&mut v, s);
        v.extend_from_slice(tail);
        v
    };
    // `at(x)`: first key whose sort value is x; `after(x)`: first key past every sort value x.
    let at = |s: &str| with(s, &[0x00, 0x01]);
    let after = |s: &str| with(s, &[0x00, 0x02]);
    let start = p.clone();
    let end = {
        let mut v = p.clone();
        v.push(0xFF);
        v
    };
    match sort {
        None => (start, end),
        Some(SortCondition::Eq(x)) => (at(x), after(x)),
        Some(SortCondition::Lt(x)) => (start, at(x)),
        Some(SortCondition::Le(x)) => (start, after(x)),
        Some(SortCondition::Gt(x)) => (after(x), end),
        Some(SortCondition::Ge(x)) => (at(x), end),
        Some(SortCondition::Between(lo, hi)) => (at(lo), after(hi)),
        Some(SortCondition::BeginsWith(x)) => (with(x, &[]), with(x, &[0xFF])),
    }
}

// ---------------------------------------------------------------------------------------
// Items on disk

/// The format of a table in a data file: 2 is items in the binary encoding
/// ([`encode_item`]); 1 (no format recorded) was DynamoDB JSON. Recorded in `meta` under
/// [`FORMAT_KEY`] and the table's name when the file is opened.
const FORMAT: u32 = 2;
/// Table names cannot hold a NUL, so this prefix never meets a table's own row.
const FORMAT_KEY: &str = "\u{0}format/";

/// The first byte of an item stored in the binary encoding ([`FORMAT`] 2): a JSON item
/// (format 1) always starts with `{`.
const BINARY_ITEM: u8 = 0x02;

/// An attribute value as stored: postcard (variant index, varint lengths) of
/// [`StoredRef`], the mirror of [`AttributeValue`]. Decoded straight into the item's map
/// ([`StoredItem`], [`StoredValue`]), its strings built once, with none of JSON's escapes
/// and type tags to scan; the stored item is about half its JSON.
const STORED_VARIANTS: [&str; 10] = ["N", "S", "Bool", "B", "Null", "M", "L", "Ss", "Ns", "Bs"];

/// A stored item (a sequence of name and [`StoredValue`]) decoded into an [`Item`].
struct StoredItem(Item);

impl<'de> serde::Deserialize<'de> for StoredItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = StoredItem;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a stored item")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<StoredItem, A::Error> {
                let mut item = Item::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some((name, StoredValue(value))) =
                    seq.next_element::<(String, StoredValue)>()?
                {
                    item.insert(name, value);
                }
                Ok(StoredItem(item))
            }
        }
        d.deserialize_seq(Fields)
    }
}

/// One stored attribute value decoded into an [`AttributeValue`].
struct StoredValue(AttributeValue);

impl<'de> serde::Deserialize<'de> for StoredValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Value;
        impl<'de> serde::de::Visitor<'de> for Value {
            type Value = StoredValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a stored attribute value")
            }
            fn visit_enum<A: serde::de::EnumAccess<'de>>(
                self,
                data: A,
            ) -> Result<StoredValue, A::Error> {
                use serde::de::VariantAccess;
                let (variant, value): (u32, _) = data.variant()?;
                Ok(StoredValue(match variant {
                    0 => AttributeValue::N(value.newtype_variant()?),
                    1 => AttributeValue::S(value.newtype_variant()?),
                    2 => AttributeValue::Bool(value.newtype_variant()?),
                    3 => AttributeValue::B(value.newtype_variant()?),
                    4 => AttributeValue::Null(value.newtype_variant()?),
                    5 => AttributeValue::M(value.newtype_variant::<StoredItem>()?.0),
                    6 => AttributeValue::L(
                        value
                            .newtype_variant::<Vec<StoredValue>>()?
                            .into_iter()
                            .map(|v| v.0)
                            .collect(),
                    ),
                    7 => AttributeValue::Ss(value.newtype_variant()?),
                    8 => AttributeValue::Ns(value.newtype_variant()?),
                    9 => AttributeValue::Bs(value.newtype_variant()?),
                    n => {
                        return Err(serde::de::Error::invalid_value(
                            serde::de::Unexpected::Unsigned(n.into()),
                            &"a stored value kind (0 to 9)",
                        ))
                    }
                }))
            }
        }
        d.deserialize_enum("Stored", &STORED_VARIANTS, Value)
    }
}

/// An attribute value to store, borrowing from the item being written.
#[derive(serde::Serialize)]
enum StoredRef<'a> {
    N(&'a str),
    S(&'a str),
    Bool(bool),
    B(&'a [u8]),
    Null(bool),
    M(Vec<(&'a str, StoredRef<'a>)>),
    L(Vec<StoredRef<'a>>),
    Ss(&'a [String]),
    Ns(&'a [String]),
    Bs(&'a [Vec<u8>]),
}

impl<'a> From<&'a AttributeValue> for StoredRef<'a> {
    fn from(v: &'a AttributeValue) -> Self {
        match v {
            AttributeValue::N(n) => StoredRef::N(n),
            AttributeValue::S(s) => StoredRef::S(s),
            AttributeValue::Bool(b) => StoredRef::Bool(*b),
            AttributeValue::B(b) => StoredRef::B(b),
            AttributeValue::Null(b) => StoredRef::Null(*b),
            AttributeValue::M(m) => {
                StoredRef::M(m.iter().map(|(k, v)| (k.as_str(), v.into())).collect())
            }
            AttributeValue::L(l) => StoredRef::L(l.iter().map(Into::into).collect()),
            AttributeValue::Ss(ss) => StoredRef::Ss(ss),
            AttributeValue::Ns(ns) => StoredRef::Ns(ns),
            AttributeValue::Bs(bs) => StoredRef::Bs(bs),
        }
    }
}

fn encode_item(item: &Item) -> StoreResult<Vec<u8>> {
    let fields: Vec<(&str, StoredRef<'_>)> =
        item.iter().map(|(k, v)| (k.as_str(), v.into())).collect();
    let mut out = vec![BINARY_ITEM];
    postcard::to_io(&fields, &mut out).map_err(internal)?;
    Ok(out)
}

/// An item in either encoding: the binary one, or the JSON of format 1 (a file being
/// migrated, or an index row written before).
fn decode_item(bytes: &[u8]) -> StoreResult<Item> {
    match bytes.split_first() {
        Some((&BINARY_ITEM, rest)) => {
            let StoredItem(item) = postcard::from_bytes(rest).map_err(internal)?;
            Ok(item)
        }
        _ => serde_json::from_slice(bytes).map_err(internal),
    }
}

fn change_ms(bytes: &[u8]) -> u64 {
    bytes
        .first_chunk::<8>()
        .map_or(0, |ms| u64::from_be_bytes(*ms))
}

fn decode_change(bytes: &[u8]) -> StoreResult<(LoggedChange, u64)> {
    let json = bytes
        .get(8..)
        .ok_or_else(|| internal("a change log record is cut short"))?;
    Ok((
        serde_json::from_slice(json).map_err(internal)?,
        change_ms(bytes),
    ))
}

fn decode_propagation(bytes: &[u8]) -> StoreResult<Propagation> {
    serde_json::from_slice(bytes).map_err(internal)
}

fn meta_row(table: &str) -> Vec<u8> {
    serde_json::json!({ "name": table, "status": "ACTIVE" })
        .to_string()
        .into_bytes()
}

impl Inner {
    /// Brings this table of the file to [`FORMAT`]: a format 1 table (items as JSON, no
    /// format recorded) is rewritten in the binary encoding in one transaction, items and
    /// the item copies of index rows; a table of a newer format is refused.
    fn upgrade_format(&self, path: &Path) -> StoreResult<()> {
        let key = format!("{FORMAT_KEY}{}", self.table);
        {
            let tx = self.db.begin_read().map_err(internal)?;
            match tx.open_table(META) {
                Ok(meta) => {
                    if let Some(v) = meta.get(key.as_str()).map_err(internal)? {
                        let found = v
                            .value()
                            .first_chunk::<4>()
                            .map_or(0, |b| u32::from_be_bytes(*b));
                        if found == FORMAT {
                            return Ok(());
                        }
                        if found > FORMAT {
                            return Err(StoreError::Internal(format!(
                                "{}: table {} is in format {found}, written by a newer itemgraph; \
                                 this build reads formats 1 to {FORMAT}: run a newer itemgraph, \
                                 or use another --data file",
                                path.display(),
                                self.table
                            )));
                        }
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(internal(e)),
            }
        }
        let tx = self.db.begin_write().map_err(internal)?;
        let mut migrated = 0usize;
        {
            let mut to_binary = |name: &str, projected: bool| -> StoreResult<()> {
                let def: Bytes<'_> = TableDefinition::new(name);
                let mut table = tx.open_table(def).map_err(internal)?;
                let mut rewrites = Vec::new();
                for row in table.iter().map_err(internal)? {
                    let (k, v) = row.map_err(internal)?;
                    let value = v.value();
                    let json = if projected {
                        value.strip_prefix(&PROJECTED)
                    } else {
                        Some(value)
                    };
                    if let Some(json) = json.filter(|j| j.first() == Some(&b'{')) {
                        let item: Item = serde_json::from_slice(json).map_err(internal)?;
                        let mut row = if projected {
                            PROJECTED.to_vec()
                        } else {
                            Vec::new()
                        };
                        row.extend(encode_item(&item)?);
                        rewrites.push((k.value().to_vec(), row));
                    }
                }
                migrated += rewrites.len();
                for (k, v) in rewrites {
                    table.insert(k.as_slice(), v.as_slice()).map_err(internal)?;
                }
                Ok(())
            };
            to_binary(&self.items_name, false)?;
            for name in &self.index_names {
                to_binary(name, true)?;
            }
            let mut meta = tx.open_table(META).map_err(internal)?;
            meta.insert(key.as_str(), FORMAT.to_be_bytes().as_slice())
                .map_err(internal)?;
        }
        tx.commit().map_err(internal)?;
        if migrated > 0 {
            tracing::info!(
                file = %path.display(),
                table = %self.table,
                rows = migrated,
                "the data file's items were rewritten from format 1 (JSON) to format {FORMAT} (binary)"
            );
        }
        Ok(())
    }

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

    /// Appends one change to the log (in the write's transaction) and trims what is
    /// past its capacity or retention. A write that leaves the item as it was logs
    /// nothing, as DynamoDB Streams does.
    fn log_change(
        &self,
        tx: &redb::WriteTransaction,
        key: &PrimaryKey,
        old: Option<&Item>,
        new: Option<&Item>,
    ) -> StoreResult<()> {
        let kind = match (old, new) {
            (None, None) => return Ok(()),
            (Some(o), Some(n)) if o == n => return Ok(()),
            (None, Some(_)) => ChangeKind::Insert,
            (Some(_), Some(_)) => ChangeKind::Modify,
            (Some(_), None) => ChangeKind::Remove,
        };
        let now = now_ms();
        let change = LoggedChange {
            kind,
            pk: key.pk.clone(),
            sk: key.sk.clone(),
            old: old.cloned(),
            new: new.cloned(),
        };
        let mut bytes = now.to_be_bytes().to_vec();
        serde_json::to_writer(&mut bytes, &change).map_err(internal)?;
        let mut log = tx.open_table(self.changes_def()).map_err(internal)?;
        let last = log.last().map_err(internal)?.map_or(0, |(k, _)| k.value());
        let seq = last + 1;
        log.insert(seq, bytes.as_slice()).map_err(internal)?;
        let oldest_kept_ms = now.saturating_sub(self.change_log.retention.as_millis() as u64);
        for _ in 0..MAX_TRIM_PER_WRITE {
            let first = log
                .first()
                .map_err(internal)?
                .map(|(k, v)| (k.value(), change_ms(v.value())));
            match first {
                Some((first, ms))
                    if first < seq
                        && (seq - first >= self.change_log.capacity || ms < oldest_kept_ms) =>
                {
                    log.remove(first).map_err(internal)?;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// Tells stream readers that changes were committed.
    fn group(&self) -> std::sync::MutexGuard<'_, Group> {
        // A std Mutex: held to queue a write or take a group, never across an await.
        self.group.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The committer: commits groups until no write waits, then stops (the next write
    /// starts another). It answers every group but the last, which it returns for
    /// [`Committer::run`] to answer once it has let go of the store.
    fn commit_groups(&self) -> (Vec<Done>, StoreResult<()>) {
        loop {
            let jobs: Vec<Job> = {
                let mut group = self.group();
                let n = group.queue.len().min(MAX_GROUP);
                group.queue.drain(..n).collect()
            };
            let (done, committed) = self.commit_group(jobs);
            let last = {
                let mut group = self.group();
                let last = group.queue.is_empty();
                if last {
                    group.committing = false;
                }
                last
            };
            if last {
                return (done, committed);
            }
            for d in done {
                d(&committed);
            }
        }
    }

    /// One group: every write in one transaction, one commit (one fsync). A write that
    /// fails while applying its changes (or panics) voids the whole group. What answers each caller, and the
    /// commit's outcome.
    fn commit_group(&self, jobs: Vec<Job>) -> (Vec<Done>, StoreResult<()>) {
        let mut batch = Batch::default();
        let tx = self.db.begin_write().map_err(internal);
        let mut done = Vec::with_capacity(jobs.len());
        for job in jobs {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                job(self, tx.as_ref().ok(), &mut batch)
            }));
            match ran {
                Ok(d) => done.push(d),
                // Its caller hears that the group ended without an answer.
                Err(_) => batch.unsound = true,
            }
        }
        let committed = match tx {
            Err(e) => Err(e),
            Ok(tx) if batch.unsound => {
                let _ = tx.abort();
                Err(internal(
                    "a write of this group failed before the commit; none of the group was written",
                ))
            }
            Ok(tx) => tx.commit().map_err(internal),
        };
        if committed.is_ok() {
            self.notify_changes();
            if !batch.tokens.is_empty() {
                let now = Instant::now();
                let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
                for (token, digest) in &batch.tokens {
                    tokens.remember(token, *digest, now);
                }
            }
        }
        (done, committed)
    }

    fn notify_changes(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Applies the index changes whose lag has passed (all of them with `all`), oldest
    /// first. A write transaction only when there is something to apply.
    fn propagate(&self, all: bool) -> StoreResult<()> {
        let now = now_ms();
        let due = |p: &Propagation| all || p.due_ms <= now;
        {
            let tx = self.db.begin_read().map_err(internal)?;
            let pending = match tx.open_table(self.pending_def()) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
                Err(e) => return Err(internal(e)),
            };
            let first = pending.first().map_err(internal)?;
            match first {
                Some((_, v)) if due(&decode_propagation(v.value())?) => {}
                _ => return Ok(()),
            }
        }
        let tx = self.db.begin_write().map_err(internal)?;
        {
            let mut pending = tx.open_table(self.pending_def()).map_err(internal)?;
            while let Some((seq, p)) = {
                let first = pending.first().map_err(internal)?;
                match first {
                    Some((k, v)) => Some((k.value(), decode_propagation(v.value())?)),
                    None => None,
                }
            } {
                if !due(&p) {
                    break;
                }
                self.apply_index_changes(&tx, &p.rows)?;
                pending.remove(seq).map_err(internal)?;
            }
        }
        tx.commit().map_err(internal)
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

    fn write_exists(&self, tx: &redb::WriteTransaction) -> StoreResult<()> {
        let meta = tx.open_table(META).map_err(internal)?;
        if self.table_exists(&meta)? {
            Ok(())
        } else {
            Err(not_found())
        }
    }

    /// Index rows an item has: (index position, encoded index key).
    fn index_rows(&self, item: &Item) -> Vec<(usize, Vec<u8>)> {
        let Some(key) = self.schema.key_of(item) else {
            return Vec::new();
        };
        self.schema
            .indexes
            .iter()
            .enumerate()
            .filter_map(|(i, index)| {
                let ik = self.schema.index_key_of(index, item)?;
                Some((i, encode_key(&[&ik.pk, &ik.sk, &key.pk, &key.sk])))
            })
            .collect()
    }

    fn get_in_write(
        &self,
        tx: &redb::WriteTransaction,
        key: &PrimaryKey,
    ) -> StoreResult<Option<Item>> {
        let items = tx.open_table(self.items_def()).map_err(internal)?;
        let got = items.get(table_key(key).as_slice()).map_err(internal)?;
        got.map(|v| decode_item(v.value())).transpose()
    }

    /// Replaces (or removes, with `None`) the item at `key`, keeping the indexes in step.
    fn write_item(
        &self,
        tx: &redb::WriteTransaction,
        key: &PrimaryKey,
        old: Option<&Item>,
        new: Option<&Item>,
    ) -> StoreResult<()> {
        let tk = table_key(key);
        self.log_change(tx, key, old, new)?;
        {
            let mut items = tx.open_table(self.items_def()).map_err(internal)?;
            match new {
                Some(item) => {
                    items
                        .insert(tk.as_slice(), encode_item(item)?.as_slice())
                        .map_err(internal)?;
                }
                None => {
                    items.remove(tk.as_slice()).map_err(internal)?;
                }
            }
        }
        let old_rows = old.map(|i| self.index_rows(i)).unwrap_or_default();
        let new_rows = new.map(|i| self.index_rows(i)).unwrap_or_default();
        let lag = !self.gsi_lag.is_zero();
        // Rows the item leaves, then its rows: new ones point at it; under a lag every
        // one holds the item as written, which reaches the index later.
        let mut changes: Vec<IndexChange> = old_rows
            .iter()
            .filter(|r| !new_rows.contains(r))
            .map(|(i, row)| (*i, row.clone(), None))
            .collect();
        if let Some(item) = new {
            let value = if lag { projected(item)? } else { tk.clone() };
            for (i, row) in &new_rows {
                // Without a lag a row the item keeps needs no write, unless it still holds
                // a copy from a run with a lag (which would go stale).
                let write = lag
                    || !old_rows.contains(&(*i, row.clone()))
                    || tx
                        .open_table(self.index_def(*i))
                        .map_err(internal)?
                        .get(row.as_slice())
                        .map_err(internal)?
                        .is_some_and(|v| v.value().starts_with(&PROJECTED));
                if write {
                    changes.push((*i, row.clone(), Some(value.clone())));
                }
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        if lag {
            // A row that points at the item would show the new item before the lag has
            // passed: it keeps the old item until then.
            if let Some(old) = old {
                let frozen = projected(old)?;
                for (i, row) in &old_rows {
                    let mut t = tx.open_table(self.index_def(*i)).map_err(internal)?;
                    let points = t
                        .get(row.as_slice())
                        .map_err(internal)?
                        .is_some_and(|v| !v.value().starts_with(&PROJECTED));
                    if points {
                        t.insert(row.as_slice(), frozen.as_slice())
                            .map_err(internal)?;
                    }
                }
            }
            let mut pending = tx.open_table(self.pending_def()).map_err(internal)?;
            let seq = pending
                .last()
                .map_err(internal)?
                .map_or(0, |(k, _)| k.value() + 1);
            let p = Propagation {
                due_ms: now_ms() + self.gsi_lag.as_millis() as u64,
                rows: changes,
            };
            let bytes = serde_json::to_vec(&p).map_err(internal)?;
            pending.insert(seq, bytes.as_slice()).map_err(internal)?;
            return Ok(());
        }
        self.apply_index_changes(tx, &changes)
    }

    /// Writes index rows (`Some` item) and removes them (`None`).
    fn apply_index_changes(
        &self,
        tx: &redb::WriteTransaction,
        changes: &[IndexChange],
    ) -> StoreResult<()> {
        for (i, row, item) in changes {
            let mut t = tx.open_table(self.index_def(*i)).map_err(internal)?;
            match item {
                Some(item) => t.insert(row.as_slice(), item.as_slice()),
                None => t.remove(row.as_slice()),
            }
            .map_err(internal)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Conditions and updates, evaluated against the stored item

fn attr<'a>(item: Option<&'a Item>, name: &str) -> Option<&'a AttributeValue> {
    item.and_then(|i| i.get(name))
}

/// Evaluates a condition expression the way DynamoDB does: a missing attribute or a type
/// mismatch makes a comparison false, except `<>`, which is then true.
pub(crate) fn eval(c: &Condition, item: Option<&Item>) -> bool {
    use std::cmp::Ordering::*;
    match c {
        Condition::Exists(a) => attr(item, a).is_some(),
        Condition::NotExists(a) => attr(item, a).is_none(),
        Condition::Cmp(a, op, v) => {
            let Some(x) = attr(item, a) else {
                return *op == CmpOp::Ne;
            };
            match op {
                CmpOp::Eq => value::equal(x, v),
                CmpOp::Ne => !value::equal(x, v),
                CmpOp::Lt => value::compare(x, v) == Some(Less),
                CmpOp::Le => matches!(value::compare(x, v), Some(Less | Equal)),
                CmpOp::Gt => value::compare(x, v) == Some(Greater),
                CmpOp::Ge => matches!(value::compare(x, v), Some(Greater | Equal)),
            }
        }
        Condition::Between(a, lo, hi) => attr(item, a).is_some_and(|x| {
            matches!(value::compare(x, lo), Some(Greater | Equal))
                && matches!(value::compare(x, hi), Some(Less | Equal))
        }),
        Condition::BeginsWith(a, p) => {
            matches!(attr(item, a), Some(AttributeValue::S(s)) if s.starts_with(p.as_str()))
        }
        Condition::And(cs) => cs.iter().all(|c| eval(c, item)),
        Condition::Or(cs) => cs.iter().any(|c| eval(c, item)),
        Condition::Not(c) => !eval(c, item),
    }
}

/// Applies an update expression to the current item (or to a new item holding only the
/// key), as UpdateItem does. Errors are those DynamoDB only finds against stored data.
fn apply_update(
    schema: &TableSchema,
    key: &PrimaryKey,
    old: Option<&Item>,
    e: &UpdateExpr,
) -> Result<Item, String> {
    let mut item = old.cloned().unwrap_or_else(|| {
        Item::from([
            (schema.pk.clone(), AttributeValue::S(key.pk.clone())),
            (schema.sk.clone(), AttributeValue::S(key.sk.clone())),
        ])
    });
    for (a, set) in &e.set {
        let v = match set {
            SetValue::Value(v) => v.clone(),
            SetValue::IfNotExists(v) => match old.and_then(|o| o.get(a)) {
                Some(current) => current.clone(),
                None => v.clone(),
            },
        };
        item.insert(a.clone(), canonicalize(v));
    }
    for a in &e.remove {
        item.remove(a);
    }
    for (a, v) in &e.add {
        let merged = match (item.get(a), v) {
            (None, v) => canonicalize(v.clone()),
            (Some(AttributeValue::N(x)), AttributeValue::N(y)) => {
                let sum = parse_number(x)? + parse_number(y)?;
                let text = canonical_number(&sum);
                parse_number(&text)?;
                AttributeValue::N(text)
            }
            (Some(AttributeValue::Ss(x)), AttributeValue::Ss(y)) => {
                AttributeValue::Ss(union(x, y, |a, b| a == b))
            }
            (Some(AttributeValue::Bs(x)), AttributeValue::Bs(y)) => {
                AttributeValue::Bs(union(x, y, |a, b| a == b))
            }
            (Some(AttributeValue::Ns(x)), AttributeValue::Ns(y)) => {
                let y: Vec<String> = y
                    .iter()
                    .map(|n| canonical_number(&parse_number(n).unwrap_or_default()))
                    .collect();
                AttributeValue::Ns(union(x, &y, |a, b| {
                    value::equal(&AttributeValue::N(a.clone()), &AttributeValue::N(b.clone()))
                }))
            }
            _ => {
                return Err("An operand in the update expression has an incorrect data type".into())
            }
        };
        item.insert(a.clone(), merged);
    }
    if item_size(&item) > validate::MAX_ITEM_SIZE {
        return Err("Item size to update has exceeded the maximum allowed size".into());
    }
    Ok(item)
}

fn union<T: Clone>(x: &[T], y: &[T], eq: impl Fn(&T, &T) -> bool) -> Vec<T> {
    let mut out = x.to_vec();
    for v in y {
        if !out.iter().any(|o| eq(o, v)) {
            out.push(v.clone());
        }
    }
    out
}

/// The outcome of checking one write against the stored item, before anything is applied.
enum Planned {
    /// Write `new` (or delete, when `None`) over `old`.
    Write {
        key: PrimaryKey,
        old: Option<Item>,
        new: Option<Item>,
    },
    /// A condition check that held: nothing to write.
    Nothing,
}

enum Refused {
    Condition(Option<Item>),
    Invalid(String),
}

fn plan(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    action: &TransactAction,
) -> StoreResult<Result<Planned, Refused>> {
    let key = action
        .key(&inner.schema)
        .ok_or_else(|| internal("action without key"))?;
    let old = inner.get_in_write(tx, &key)?;
    let (condition, wants_old) = match action {
        TransactAction::Put(p) => (p.condition.as_ref(), p.return_old_on_condition_failure),
        TransactAction::Update(u) => (u.condition.as_ref(), u.return_old_on_condition_failure),
        TransactAction::Delete(d) => (d.condition.as_ref(), d.return_old_on_condition_failure),
        TransactAction::ConditionCheck(c) => {
            (Some(&c.condition), c.return_old_on_condition_failure)
        }
    };
    if let Some(c) = condition {
        if !eval(c, old.as_ref()) {
            return Ok(Err(Refused::Condition(if wants_old { old } else { None })));
        }
    }
    let new = match action {
        TransactAction::Put(p) => Some(value::canonicalize_item(p.item.clone())),
        TransactAction::Update(u) => {
            match apply_update(&inner.schema, &key, old.as_ref(), &u.update) {
                Ok(item) => Some(item),
                Err(msg) => return Ok(Err(Refused::Invalid(msg))),
            }
        }
        TransactAction::Delete(_) => None,
        TransactAction::ConditionCheck(_) => return Ok(Ok(Planned::Nothing)),
    };
    Ok(Ok(Planned::Write { key, old, new }))
}

fn apply(inner: &Inner, tx: &redb::WriteTransaction, planned: &Planned) -> StoreResult<()> {
    if let Planned::Write { key, old, new } = planned {
        inner.write_item(tx, key, old.as_ref(), new.as_ref())?;
    }
    Ok(())
}

/// One single-item write in its group's transaction: plan, refuse with DynamoDB's error,
/// or apply.
fn single_write(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    action: &TransactAction,
) -> StoreResult<(Option<Item>, Option<Item>)> {
    inner.write_exists(tx)?;
    let planned = match plan(inner, tx, action)? {
        Ok(p) => p,
        Err(Refused::Condition(item)) => {
            return Err(StoreError::ConditionFailed {
                item: item.map(Box::new),
            })
        }
        Err(Refused::Invalid(msg)) => return Err(StoreError::Validation(msg)),
    };
    apply(inner, tx, &planned).inspect_err(|_| batch.unsound = true)?;
    Ok(match planned {
        Planned::Write { old, new, .. } => (old, new),
        Planned::Nothing => (None, None),
    })
}

#[async_trait]
impl Store for EmbeddedStore {
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
                meta.insert(inner.table.as_str(), meta_row(&inner.table).as_slice())
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
                status: "ACTIVE".into(),
                indexes: inner
                    .schema
                    .indexes
                    .iter()
                    .map(|i| i.name.clone())
                    .collect(),
                item_count: Some(count),
            }))
        })
        .await
    }

    async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
        validate::get_item(self.schema(), &req)?;
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| {
                let items = inner.read_items()?;
                let got = items
                    .get(table_key(&req.key).as_slice())
                    .map_err(internal)?;
                got.map(|v| decode_item(v.value())).transpose()
            })),
        )
        .await
    }

    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        validate::batch_get(self.schema(), &req)?;
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| {
                let items = inner.read_items()?;
                let mut page = BatchGetPage::default();
                let mut bytes = 0;
                for key in &req.keys {
                    if bytes >= MAX_BATCH_GET_BYTES {
                        page.unprocessed.push(key.clone());
                        continue;
                    }
                    if let Some(v) = items.get(table_key(key).as_slice()).map_err(internal)? {
                        let item = decode_item(v.value())?;
                        bytes += item_size(&item);
                        page.items.push(item);
                    }
                }
                Ok(page)
            })),
        )
        .await
    }

    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        validate::query(self.schema(), &req)?;
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
        validate::scan(self.schema(), &req)?;
        self.call(
            Call::Read,
            Op::Read(Arc::new(move |inner| {
                let items = inner.read_items()?;
                let start = req.start.as_ref().map(|s| table_key(&s.table));
                let lower = match &start {
                    Some(k) => Bound::Excluded(k.as_slice()),
                    None => Bound::Unbounded,
                };
                let limit = req.limit.map_or(usize::MAX, |l| l as usize);
                let mut out = QueryOutput::default();
                let mut bytes = 0;
                for row in items
                    .range::<&[u8]>((lower, Bound::Unbounded))
                    .map_err(internal)?
                {
                    let (_, v) = row.map_err(internal)?;
                    let item = decode_item(v.value())?;
                    bytes += item_size(&item);
                    let key = inner.schema.key_of(&item);
                    out.items.push(item);
                    if out.items.len() >= limit || bytes >= MAX_QUERY_PAGE_BYTES {
                        out.last_evaluated_key = key.map(|table| PageKey { table, index: None });
                        break;
                    }
                }
                Ok(out)
            })),
        )
        .await
    }

    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        validate::put(self.schema(), &req)?;
        let action = Arc::new(TransactAction::Put(req));
        self.single_write("PutItem", action).await.map(|_| None)
    }

    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        validate::update(self.schema(), &req)?;
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
        validate::delete(self.schema(), &req)?;
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
        validate::transact(self.schema(), &actions)?;
        let n = actions.len();
        let actions = Arc::new(actions);
        let faulty = self.inner.faults.is_some();
        retry_conflicts("TransactWriteItems", || {
            let actions = actions.clone();
            let token = faulty.then(|| (ulid::Ulid::new().to_string(), digest(&actions)));
            self.call(
                Call::Transaction(n),
                Op::Write(Arc::new(move |inner, tx, batch| {
                    transact(inner, tx, batch, &actions, token.as_ref())
                })),
            )
        })
        .await
    }
}

/// The embedded engine's change stream: one handle per reader, each with its own view of
/// the commits it has been woken for.
struct EmbeddedChanges {
    store: EmbeddedStore,
    woken: tokio::sync::Mutex<tokio::sync::watch::Receiver<u64>>,
}

fn shard_id(n: u64) -> String {
    format!("shardId-{n:020}")
}

fn parse_shard(id: &str) -> Option<u64> {
    id.strip_prefix("shardId-")?.parse().ok()
}

fn sequence(n: u64) -> String {
    format!("{n:021}")
}

/// A shard iterator: shard, next sequence number, issue time (ms).
fn iterator(shard: u64, next: u64) -> String {
    format!("{shard}:{next}:{}", now_ms())
}

fn bad_iterator() -> StreamError {
    StreamError::Store(StoreError::Validation(
        "Invalid ShardIterator: not an iterator of this stream".into(),
    ))
}

impl Inner {
    /// The first and last sequence numbers in the log: `(last + 1, last)` when it is
    /// empty, `(1, 0)` when nothing was ever logged.
    fn log_bounds(&self) -> StoreResult<(u64, u64)> {
        let tx = self.db.begin_read().map_err(internal)?;
        self.log_bounds_in(&tx)
    }

    /// [`log_bounds`](Self::log_bounds) in a snapshot the caller reads on from.
    fn log_bounds_in(&self, tx: &redb::ReadTransaction) -> StoreResult<(u64, u64)> {
        self.read_exists(tx)?;
        let log = match tx.open_table(self.changes_def()) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok((1, 0)),
            Err(e) => return Err(internal(e)),
        };
        let last = log.last().map_err(internal)?.map_or(0, |(k, _)| k.value());
        let first = log
            .first()
            .map_err(internal)?
            .map_or(last + 1, |(k, _)| k.value());
        Ok((first, last))
    }

    fn shard_of(&self, seq: u64) -> u64 {
        seq.saturating_sub(1) / self.change_log.shard_span
    }

    /// The sequence numbers shard `n` may hold.
    fn shard_range(&self, n: u64) -> (u64, u64) {
        let span = self.change_log.shard_span;
        (n * span + 1, (n + 1) * span)
    }
}

#[async_trait]
impl ChangeStream for EmbeddedChanges {
    fn engine_name(&self) -> &'static str {
        "embedded"
    }

    async fn shards(&self) -> StreamResult<Vec<ShardInfo>> {
        Ok(self
            .store
            .run(|inner| {
                let (first, last) = inner.log_bounds()?;
                let open = inner.shard_of(last + 1);
                Ok((inner.shard_of(first)..=open)
                    .map(|n| ShardInfo {
                        id: shard_id(n),
                        parent: n.checked_sub(1).map(shard_id),
                        closed: n < open,
                    })
                    .collect())
            })
            .await?)
    }

    async fn shard_iterator(&self, shard: &str, at: StartAt) -> StreamResult<String> {
        let n = parse_shard(shard).ok_or_else(|| {
            StreamError::Trimmed(format!("shard {shard} is not a shard of this stream"))
        })?;
        let (first, last) = self.store.run(|inner| inner.log_bounds()).await?;
        let inner = &self.store.inner;
        let (lo, hi) = inner.shard_range(n);
        if n > inner.shard_of(last + 1) || first > hi {
            return Err(StreamError::Trimmed(format!("shard {shard} is not listed")));
        }
        let next = match at {
            StartAt::TrimHorizon => first.max(lo),
            StartAt::Latest => (last + 1).clamp(lo, hi + 1),
            StartAt::After(seq) => {
                let seq: u64 = seq.parse().map_err(|_| bad_iterator())?;
                if !(lo..=hi).contains(&seq) {
                    return Err(StreamError::Store(StoreError::Validation(format!(
                        "Invalid SequenceNumber {seq} for shard {shard}"
                    ))));
                }
                if seq + 1 < first {
                    return Err(StreamError::Trimmed(format!(
                        "sequence number {seq} of {shard} is beyond the trim horizon"
                    )));
                }
                seq + 1
            }
        };
        Ok(iterator(n, next))
    }

    async fn get_records(&self, it: &str, limit: u32) -> StreamResult<RecordsPage> {
        let mut parts = it.split(':').map(str::parse::<u64>);
        let (Some(Ok(n)), Some(Ok(next)), Some(Ok(issued)), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad_iterator());
        };
        if now_ms().saturating_sub(issued) > ITERATOR_TTL.as_millis() as u64 {
            return Err(StreamError::ExpiredIterator);
        }
        let limit = u64::from(limit.clamp(1, MAX_RECORDS_PER_CALL));
        let read = self
            .store
            .run(move |inner| {
                // Bounds and records from one snapshot: a trim in between cannot drop
                // records unseen.
                let tx = inner.db.begin_read().map_err(internal)?;
                let (first, _) = inner.log_bounds_in(&tx)?;
                if next < first {
                    return Ok(None);
                }
                let (_, hi) = inner.shard_range(n);
                let log = match tx.open_table(inner.changes_def()) {
                    Ok(t) => t,
                    Err(redb::TableError::TableDoesNotExist(_)) => {
                        return Ok(Some((Vec::new(), next)))
                    }
                    Err(e) => return Err(internal(e)),
                };
                let mut records = Vec::new();
                let mut after = next;
                for row in log.range(next..=hi).map_err(internal)? {
                    let (k, v) = row.map_err(internal)?;
                    let (c, ms) = decode_change(v.value())?;
                    records.push(ChangeRecord {
                        shard: shard_id(n),
                        sequence: sequence(k.value()),
                        kind: c.kind,
                        key: PrimaryKey { pk: c.pk, sk: c.sk },
                        old_image: c.old,
                        new_image: c.new,
                        created_ms: ms,
                    });
                    after = k.value() + 1;
                    if records.len() as u64 >= limit {
                        break;
                    }
                }
                Ok(Some((records, after)))
            })
            .await?;
        let Some((records, after)) = read else {
            return Err(StreamError::Trimmed(format!(
                "records of shard {} from {next} were trimmed",
                shard_id(n)
            )));
        };
        let (_, hi) = self.store.inner.shard_range(n);
        Ok(RecordsPage {
            records,
            next: (after <= hi).then(|| iterator(n, after)),
        })
    }

    async fn wait_for_changes(&self, idle: Duration) {
        let mut woken = self.woken.lock().await;
        let _ = tokio::time::timeout(idle, woken.changed()).await;
    }
}

impl EmbeddedStore {
    async fn single_write(
        &self,
        op: &'static str,
        action: Arc<TransactAction>,
    ) -> StoreResult<(Option<Item>, Option<Item>)> {
        retry_conflicts(op, || {
            let action = action.clone();
            self.call(
                Call::Single,
                Op::Write(Arc::new(move |inner, tx, batch| {
                    single_write(inner, tx, batch, &action)
                })),
            )
        })
        .await
    }
}

/// TransactWriteItems in its group's transaction: every action planned against the items
/// as stored (and as the group's earlier writes left them), then all applied or none. A
/// `ClientRequestToken` (with the digest of the request) that applied a transaction within
/// [`CLIENT_TOKEN_TTL`] makes a repeat a success that changes nothing, as on DynamoDB; the
/// same token with another request is DynamoDB's `IdempotentParameterMismatchException`.
fn transact(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    actions: &[TransactAction],
    token: Option<&(String, u64)>,
) -> StoreResult<()> {
    inner.write_exists(tx)?;
    if let Some((token, digest)) = token {
        let tokens = inner.tokens.lock().unwrap_or_else(|p| p.into_inner());
        let in_group = batch
            .tokens
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, d)| (d, Instant::now() + CLIENT_TOKEN_TTL));
        let seen = in_group.or_else(|| tokens.by_token.get(token).map(|(d, e)| (d, *e)));
        match seen {
            Some((seen, expires)) if expires > Instant::now() => {
                return if seen == digest {
                    Ok(())
                } else {
                    Err(internal(
                        "IdempotentParameterMismatchException: the client token was used with another request",
                    ))
                };
            }
            _ => {}
        }
    }
    let mut planned = Vec::with_capacity(actions.len());
    let mut reasons = Vec::with_capacity(actions.len());
    for action in actions {
        match plan(inner, tx, action)? {
            Ok(p) => {
                planned.push(p);
                reasons.push(CancelReason::None);
            }
            Err(Refused::Condition(item)) => {
                reasons.push(CancelReason::ConditionalCheckFailed { item })
            }
            Err(Refused::Invalid(msg)) => reasons.push(CancelReason::ValidationError(msg)),
        }
    }
    // Planning wrote nothing: a refused transaction leaves the group as it was.
    if planned.len() < actions.len() {
        return Err(StoreError::TransactionCanceled { reasons });
    }
    for p in &planned {
        apply(inner, tx, p).inspect_err(|_| batch.unsound = true)?;
    }
    if let Some((token, digest)) = token {
        batch.tokens.push((token.clone(), *digest));
    }
    Ok(())
}

/// A digest of a transaction's actions, the same for equal requests: what a client token
/// is checked against.
fn digest(actions: &[TransactAction]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for action in actions {
        match action {
            // The only part kept in a map, whose order is not fixed: sorted first.
            TransactAction::Put(p) => {
                format!("{:?}", p.item.iter().collect::<BTreeMap<_, _>>()).hash(&mut h);
                format!("{:?}{}", p.condition, p.return_old_on_condition_failure).hash(&mut h);
            }
            other => format!("{other:?}").hash(&mut h),
        }
    }
    h.finish()
}

fn query(inner: &Inner, req: &Query) -> StoreResult<QueryOutput> {
    let tx = inner.db.begin_read().map_err(internal)?;
    inner.read_exists(&tx)?;
    let items = tx.open_table(inner.items_def()).map_err(internal)?;
    let index = match &req.index {
        None => None,
        Some(name) => Some(
            inner
                .schema
                .indexes
                .iter()
                .position(|i| &i.name == name)
                .ok_or_else(|| internal("unknown index"))?,
        ),
    };
    let (mut lo, mut hi) = key_range(&req.partition, req.sort.as_ref());
    let mut lo_bound_excluded = false;
    let mut hi_bound_excluded = true;
    if let Some(start) = &req.start {
        let sk = match (&start.index, index) {
            (Some(ik), Some(_)) => encode_key(&[&ik.pk, &ik.sk, &start.table.pk, &start.table.sk]),
            _ => table_key(&start.table),
        };
        if req.forward {
            if sk >= lo {
                lo = sk;
                lo_bound_excluded = true;
            }
        } else if sk <= hi {
            hi = sk;
            hi_bound_excluded = true;
        }
    }
    let lower = if lo_bound_excluded {
        Bound::Excluded(lo.as_slice())
    } else {
        Bound::Included(lo.as_slice())
    };
    let upper = if hi_bound_excluded {
        Bound::Excluded(hi.as_slice())
    } else {
        Bound::Included(hi.as_slice())
    };
    if lo > hi || (lo == hi && (lo_bound_excluded || hi_bound_excluded)) {
        return Ok(QueryOutput::default());
    }

    let limit = req.limit.map(|l| l as usize).unwrap_or(usize::MAX);
    let mut out = QueryOutput::default();
    let mut bytes = 0usize;
    let mut last: Option<PageKey> = None;
    let mut stopped = false;

    let mut visit = |row_key: &[u8], row_val: &[u8]| -> StoreResult<bool> {
        let (item, page_key) = match index {
            None => {
                let item = decode_item(row_val)?;
                let parts = decode_key(row_key)?;
                let [pk, sk]: [String; 2] = parts.try_into().map_err(|_| internal("bad key"))?;
                (
                    item,
                    PageKey {
                        table: PrimaryKey { pk, sk },
                        index: None,
                    },
                )
            }
            Some(_) => {
                let parts = decode_key(row_key)?;
                let [ipk, isk, pk, sk]: [String; 4] =
                    parts.try_into().map_err(|_| internal("bad index key"))?;
                let item = match row_val.strip_prefix(&PROJECTED) {
                    Some(copy) => decode_item(copy)?,
                    None => {
                        let base = items
                            .get(row_val)
                            .map_err(internal)?
                            .ok_or_else(|| internal("index row without item"))?;
                        decode_item(base.value())?
                    }
                };
                (
                    item,
                    PageKey {
                        table: PrimaryKey { pk, sk },
                        index: Some(IndexKey { pk: ipk, sk: isk }),
                    },
                )
            }
        };
        bytes += item_size(&item);
        out.items.push(item);
        last = Some(page_key);
        // DynamoDB stops at Limit items, or once it has read 1 MB, and then hands back the
        // key of the last item it returned, whether or not more items follow.
        Ok(out.items.len() >= limit || bytes >= MAX_QUERY_PAGE_BYTES)
    };

    let index_table = match index {
        None => None,
        Some(i) => Some(tx.open_table(inner.index_def(i)).map_err(internal)?),
    };
    let range = index_table
        .as_ref()
        .unwrap_or(&items)
        .range::<&[u8]>((lower, upper))
        .map_err(internal)?;
    let rows: Box<dyn Iterator<Item = _>> = if req.forward {
        Box::new(range)
    } else {
        Box::new(range.rev())
    };
    for row in rows {
        let (k, v) = row.map_err(internal)?;
        if visit(k.value(), v.value())? {
            stopped = true;
            break;
        }
    }
    if stopped {
        let at_inclusive_end = index.is_none()
            && last
                .as_ref()
                .is_some_and(|k| match (&req.sort, req.forward) {
                    (Some(SortCondition::Le(end) | SortCondition::Between(_, end)), true)
                    | (Some(SortCondition::Ge(end) | SortCondition::Between(end, _)), false) => {
                        k.table.sk == *end
                    }
                    _ => false,
                });
        // A base-table page that ends on the inclusive bound of its key condition cannot
        // be followed by anything (sort keys are unique there), and DynamoDB then returns
        // no LastEvaluatedKey; on an index, equal sort keys may follow, so the key stays.
        if !at_inclusive_end {
            out.last_evaluated_key = last;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored_row(path: &Path, table: &str, key: &[u8]) -> Vec<u8> {
        let db = Database::create(path).expect("the file");
        let tx = db.begin_read().expect("read");
        let def: Bytes<'_> = TableDefinition::new(table);
        let t = tx.open_table(def).expect("table");
        let v = t.get(key).expect("get").expect("a row").value().to_vec();
        v
    }

    /// A format 1 file (items and index copies as DynamoDB JSON, no format recorded) is
    /// rewritten in the binary encoding when opened, and reads the same; a file of a newer
    /// format is refused with a message saying so.
    #[tokio::test]
    async fn a_format_1_file_is_migrated_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("old.redb");
        let item = Item::from([
            ("PK".to_owned(), AttributeValue::S("A".into())),
            ("SK".to_owned(), AttributeValue::S("1".into())),
            ("GSI1PK".to_owned(), AttributeValue::S("G".into())),
            ("GSI1SK".to_owned(), AttributeValue::S("1".into())),
            ("n".to_owned(), AttributeValue::N("1.5".into())),
            (
                "m".to_owned(),
                AttributeValue::M(HashMap::from([(
                    "l".to_owned(),
                    AttributeValue::L(vec![AttributeValue::Bool(true), AttributeValue::Null(true)]),
                )])),
            ),
            ("ss".to_owned(), AttributeValue::Ss(vec!["x\"y".into()])),
            ("b".to_owned(), AttributeValue::B(vec![0, 1, 255])),
        ]);
        let key = table_key(&PrimaryKey::new("A", "1"));
        {
            let store = EmbeddedStore::open(&path, "t", TableSchema::itemgraph()).expect("open");
            store.create_table().await.expect("create");
            store.put_item(Put::new(item.clone())).await.expect("put");
        }
        // Make it what format 1 wrote: JSON, and no format recorded.
        let index = format!("index/t/{}", TableSchema::itemgraph().indexes[0].name);
        {
            let db = Database::create(&path).expect("the file");
            let tx = db.begin_write().expect("write");
            {
                let mut items = tx.open_table(Bytes::new("items/t")).expect("items");
                let json = serde_json::to_vec(&item).expect("json");
                items
                    .insert(key.as_slice(), json.as_slice())
                    .expect("insert");
                let mut rows = tx.open_table(Bytes::new(&index)).expect("index");
                let mut projected = PROJECTED.to_vec();
                projected.extend(serde_json::to_vec(&item).expect("json"));
                rows.insert(b"row".as_slice(), projected.as_slice())
                    .expect("insert");
                let mut meta = tx.open_table(META).expect("meta");
                meta.remove(format!("{FORMAT_KEY}t").as_str())
                    .expect("remove");
            }
            tx.commit().expect("commit");
        }
        assert_eq!(stored_row(&path, "items/t", &key).first(), Some(&b'{'));
        {
            let store = EmbeddedStore::open(&path, "t", TableSchema::itemgraph()).expect("migrate");
            let got = store
                .get_item(GetItem {
                    key: PrimaryKey::new("A", "1"),
                    consistent_read: true,
                })
                .await
                .expect("get");
            assert_eq!(got.as_ref(), Some(&item));
        }
        assert_eq!(
            stored_row(&path, "items/t", &key).first(),
            Some(&BINARY_ITEM)
        );
        let row = stored_row(&path, &index, b"row");
        assert_eq!(
            row.strip_prefix(&PROJECTED).and_then(|r| r.first()),
            Some(&BINARY_ITEM)
        );
        assert_eq!(decode_item(&row[PROJECTED.len()..]).expect("decodes"), item);

        // A newer format: refused, saying so.
        {
            let db = Database::create(&path).expect("the file");
            let tx = db.begin_write().expect("write");
            {
                let mut meta = tx.open_table(META).expect("meta");
                meta.insert(
                    format!("{FORMAT_KEY}t").as_str(),
                    3u32.to_be_bytes().as_slice(),
                )
                .expect("insert");
            }
            tx.commit().expect("commit");
        }
        let err = EmbeddedStore::open(&path, "t", TableSchema::itemgraph())
            .err()
            .expect("refused");
        assert!(
            err.to_string()
                .contains("format 3, written by a newer itemgraph"),
            "{err}"
        );
    }

    /// The committer lets go of the store before it answers the last group: a store dropped
    /// as soon as its write is answered has closed its file, so it opens again at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_dropped_once_its_write_is_answered_opens_again_at_once() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("t.redb");
        for i in 0..100 {
            let store = EmbeddedStore::open(&path, "t", TableSchema::itemgraph())
                .unwrap_or_else(|e| panic!("open {i}: {e}"));
            if i == 0 {
                store.create_table().await.expect("create");
            }
            store
                .put_item(Put::new(Item::from([
                    ("PK".to_owned(), AttributeValue::S("A".into())),
                    ("SK".to_owned(), AttributeValue::S(i.to_string())),
                ])))
                .await
                .expect("put");
        }
    }

    /// A write whose group committer the runtime refuses to start (it is shutting down) is
    /// answered with an error, nothing of it written, and the store's next write commits:
    /// no write waits for a committer that will never run.
    #[test]
    fn a_committer_the_runtime_refuses_answers_its_writes_and_the_next_write_commits() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = EmbeddedStore::open(&dir.path().join("t.redb"), "t", TableSchema::itemgraph())
            .expect("open");
        let item = |sk: &str| {
            Item::from([
                ("PK".to_owned(), AttributeValue::S("A".into())),
                ("SK".to_owned(), AttributeValue::S(sk.into())),
            ])
        };
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
        };
        let first = runtime();
        first.block_on(store.create_table()).expect("create");
        let handle = first.handle().clone();
        first.shutdown_background();

        let (tx, rx) = std::sync::mpsc::channel();
        let writer = store.clone();
        std::thread::spawn(move || {
            let _ = tx.send(handle.block_on(writer.put_item(Put::new(item("1")))));
        });
        let refused = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the write is answered, not left waiting");
        assert!(
            matches!(&refused, Err(StoreError::Internal(m)) if m.contains("without an answer")),
            "{refused:?}"
        );

        let second = runtime();
        second
            .block_on(store.put_item(Put::new(item("2"))))
            .expect("the next write commits");
        let get = |sk: &str| {
            second
                .block_on(store.get_item(GetItem {
                    key: PrimaryKey::new("A", sk),
                    consistent_read: true,
                }))
                .expect("get")
        };
        assert_eq!(get("2"), Some(item("2")));
        assert_eq!(get("1"), None, "the refused write left nothing");
    }

    #[test]
    fn every_kind_of_value_round_trips_through_the_binary_encoding() {
        let item = Item::from([
            ("s".to_owned(), AttributeValue::S(String::new())),
            ("n".to_owned(), AttributeValue::N("-1e-130".into())),
            ("b".to_owned(), AttributeValue::B(vec![])),
            ("t".to_owned(), AttributeValue::Bool(false)),
            ("z".to_owned(), AttributeValue::Null(true)),
            ("m".to_owned(), AttributeValue::M(HashMap::new())),
            (
                "l".to_owned(),
                AttributeValue::L(vec![AttributeValue::M(HashMap::from([(
                    "k".to_owned(),
                    AttributeValue::Ns(vec!["1".into(), "2".into()]),
                )]))]),
            ),
            (
                "ss".to_owned(),
                AttributeValue::Ss(vec!["a".into(), "\u{0}".into()]),
            ),
            (
                "bs".to_owned(),
                AttributeValue::Bs(vec![vec![1], vec![2, 3]]),
            ),
        ]);
        let bytes = encode_item(&item).expect("encodes");
        assert_eq!(decode_item(&bytes).expect("decodes"), item);
        let json = serde_json::to_vec(&item).expect("json");
        assert!(
            bytes.len() < json.len(),
            "{} vs {}",
            bytes.len(),
            json.len()
        );
        assert_eq!(decode_item(&json).expect("old items still read"), item);
        assert!(
            decode_item(&bytes[..bytes.len() - 1]).is_err(),
            "a cut item is an error"
        );
    }

    /// Writes answered by a group commit are on disk: a store opened again on the file
    /// finds each of them, and the writes of one moment shared commits.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn group_committed_writes_survive_the_file_being_opened_again() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("group.redb");
        {
            let store = EmbeddedStore::open(&path, "t", TableSchema::itemgraph()).expect("open");
            store.create_table().await.expect("create");
            let writes = (0..200).map(|i| {
                let item = Item::from([
                    ("PK".to_owned(), AttributeValue::S("G".into())),
                    ("SK".to_owned(), AttributeValue::S(format!("{i:03}"))),
                ]);
                store.put_item(Put::new(item))
            });
            for r in futures::future::join_all(writes).await {
                r.expect("a put");
            }
        }
        let store = EmbeddedStore::open(&path, "t", TableSchema::itemgraph()).expect("reopen");
        let page = store
            .query(Query {
                limit: Some(1000),
                ..Query::partition("G")
            })
            .await
            .expect("query");
        assert_eq!(page.items.len(), 200);
    }

    #[test]
    fn a_projected_row_never_reads_as_a_base_key() {
        for pk in ["\0", "\0\u{1}", "a", "{"] {
            let key = table_key(&PrimaryKey::new(pk, "s"));
            assert!(!key.starts_with(&PROJECTED), "{pk:?}");
        }
    }

    #[test]
    fn encoded_keys_sort_like_utf8_strings() {
        let mut words = vec![
            "",
            "a",
            "a\0",
            "a\0b",
            "ab",
            "a\u{1}",
            "b",
            "#x",
            "\u{FFFF}",
            "\u{10000}",
        ];
        let mut encoded: Vec<(Vec<u8>, &str)> =
            words.iter().map(|w| (encode_key(&[w, "z"]), *w)).collect();
        words.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        encoded.sort();
        let order: Vec<&str> = encoded.into_iter().map(|(_, w)| w).collect();
        assert_eq!(order, words);
    }

    #[test]
    fn encoded_keys_decode_back() {
        let k = encode_key(&["ORG#a\0c", "", "x"]);
        assert_eq!(decode_key(&k).unwrap(), vec!["ORG#a\0c", "", "x"]);
    }

    #[test]
    fn begins_with_range_holds_exactly_the_prefixed_keys() {
        let (lo, hi) = key_range("p", Some(&SortCondition::BeginsWith("ab".into())));
        for (sk, inside) in [
            ("ab", true),
            ("ab\0", true),
            ("abz", true),
            ("aa", false),
            ("ac", false),
            ("a", false),
        ] {
            let k = encode_key(&["p", sk]);
            assert_eq!(k >= lo && k < hi, inside, "{sk:?}");
        }
    }
}
