//! The port's requests and their answers: keys, reads, writes, transactions and batches,
//! on one table or on several of one connection, as DynamoDB's operations take and give
//! them.

use super::{Condition, Item, KeyType, TableSchema, UpdateExpr};

/// A base-table primary key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrimaryKey {
    pub pk: String,
    pub sk: String,
}

impl PrimaryKey {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        PrimaryKey {
            pk: pk.into(),
            sk: sk.into(),
        }
    }
}

/// A secondary-index key (its partition and sort attribute values). A multi-attribute
/// key's further values follow the first of each, in the order its schema names them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct IndexKey {
    pub pk: String,
    pub sk: String,
    /// A multi-attribute key's partition values after `pk` ([`IndexSchema::pk_more`]).
    pub pk_more: Vec<String>,
    /// A multi-attribute key's sort values after `sk` ([`IndexSchema::sk_more`]).
    pub sk_more: Vec<String>,
}

impl IndexKey {
    /// The key of an index keyed by one partition and (unless `sk` is empty) one sort attribute.
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        IndexKey {
            pk: pk.into(),
            sk: sk.into(),
            ..IndexKey::default()
        }
    }

    /// Its partition values, in order.
    pub fn partition_values(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.pk.as_str()).chain(self.pk_more.iter().map(String::as_str))
    }

    /// Its sort values, in order (none for an index keyed by its partition key alone).
    pub fn sort_values(&self) -> impl Iterator<Item = &str> {
        let first = (!self.sk.is_empty() || !self.sk_more.is_empty()).then_some(self.sk.as_str());
        first
            .into_iter()
            .chain(self.sk_more.iter().map(String::as_str))
    }
}

/// Where a Query page stopped (`LastEvaluatedKey`) or resumes (`ExclusiveStartKey`).
/// On an index it holds the index key and the base-table key, as DynamoDB's does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageKey {
    pub table: PrimaryKey,
    pub index: Option<IndexKey>,
}

/// GetItem.
#[derive(Debug, Clone, PartialEq)]
pub struct GetItem {
    pub key: PrimaryKey,
    pub consistent_read: bool,
}

/// BatchGetItem on one table: at most [`validate::MAX_BATCH_GET_KEYS`] distinct keys.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchGet {
    pub keys: Vec<PrimaryKey>,
    pub consistent_read: bool,
}

/// One page of BatchGetItem: what came back and what DynamoDB left unprocessed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchGetPage {
    pub items: Vec<Item>,
    pub unprocessed: Vec<PrimaryKey>,
}

/// One BatchGetItem call over several tables of one connection (a store's own table and
/// its siblings, [`Store::sibling`]): each table's keys, at most
/// [`validate::MAX_BATCH_GET_KEYS`] in all, as DynamoDB counts them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchGetTables {
    /// Each table's name and its keys, no table twice.
    pub tables: Vec<(String, Vec<PrimaryKey>)>,
    pub consistent_read: bool,
}

impl BatchGetTables {
    /// How many keys it asks for, in all tables.
    pub fn len(&self) -> usize {
        self.tables.iter().map(|(_, keys)| keys.len()).sum()
    }

    /// Whether it asks for no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What one BatchGetItem call over several tables returned, table by table (a table
/// with nothing found and nothing left is absent).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchGetTablesPage {
    pub tables: Vec<(String, BatchGetPage)>,
}

/// One action of a TransactWriteItems over several tables of one connection: the table it
/// writes and the action.
#[derive(Debug, Clone, PartialEq)]
pub struct TableAction {
    pub table: String,
    pub action: TransactAction,
}

/// The sort-key half of a key condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortCondition {
    Eq(String),
    Lt(String),
    Le(String),
    Gt(String),
    Ge(String),
    Between(String, String),
    BeginsWith(String),
}

impl SortCondition {
    /// The condition with its values as a key of type `ty` orders them
    /// ([`KeyType::sortable`]), `begins_with`'s prefix as given; `None` when a value is no
    /// number of a number key.
    pub fn sortable(&self, ty: KeyType) -> Option<SortCondition> {
        let s = |v: &str| ty.sortable(v).map(std::borrow::Cow::into_owned);
        Some(match self {
            SortCondition::Eq(x) => SortCondition::Eq(s(x)?),
            SortCondition::Lt(x) => SortCondition::Lt(s(x)?),
            SortCondition::Le(x) => SortCondition::Le(s(x)?),
            SortCondition::Gt(x) => SortCondition::Gt(s(x)?),
            SortCondition::Ge(x) => SortCondition::Ge(s(x)?),
            SortCondition::Between(a, b) => SortCondition::Between(s(a)?, s(b)?),
            SortCondition::BeginsWith(x) => SortCondition::BeginsWith(x.clone()),
        })
    }
}

/// Query: partition-key equality, an optional sort-key condition, direction and page size.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// `None` queries the base table, `Some(name)` a global secondary index.
    pub index: Option<String>,
    pub partition: String,
    /// On an index of a multi-attribute partition key: the values of its partition
    /// attributes after the first, in order (every one is required, as DynamoDB's are).
    pub partition_more: Vec<String>,
    /// On an index of a multi-attribute sort key: equalities on its first sort attributes,
    /// in order; `sort` then applies to the attribute after them (DynamoDB's rule: a
    /// condition on a sort attribute needs equalities on every one before it).
    pub sort_prefix: Vec<String>,
    pub sort: Option<SortCondition>,
    /// `ScanIndexForward`: ascending by sort key when true.
    pub forward: bool,
    /// At most this many items (DynamoDB also cuts the page at 1 MB read).
    pub limit: Option<u32>,
    pub start: Option<PageKey>,
    /// Strongly consistent read; allowed on the base table only.
    pub consistent_read: bool,
}

impl Query {
    /// A forward query of one whole partition of the base table, no limit.
    pub fn partition(partition: impl Into<String>) -> Self {
        Query {
            index: None,
            partition: partition.into(),
            partition_more: Vec::new(),
            sort_prefix: Vec::new(),
            sort: None,
            forward: true,
            limit: None,
            start: None,
            consistent_read: false,
        }
    }
}

/// What one Query call returned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryOutput {
    pub items: Vec<Item>,
    /// Present when there may be more items: pass it back as `start` for the next page.
    pub last_evaluated_key: Option<PageKey>,
    /// A Scan's `ScannedCount`: the items it read, before its filter.
    pub scanned: Option<usize>,
}

/// Scan of the base table or of an index, page by page: every item once, in no
/// particular order. The base table's is the consistency checker's and the migrations';
/// an index's is a Scan pattern's (a sparse index).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scan {
    /// `None` scans the base table, `Some(name)` a secondary index.
    pub index: Option<String>,
    /// DynamoDB's `FilterExpression`: applied to each item read, after `limit` counted it,
    /// so a page may hold fewer items than it read (`QueryOutput::scanned` says how many).
    pub filter: Option<Condition>,
    /// At most this many items per page (DynamoDB also cuts the page at 1 MB read).
    pub limit: Option<u32>,
    pub start: Option<PageKey>,
    pub consistent_read: bool,
    /// A parallel scan's part: `Segment` and `TotalSegments`. The segments split the
    /// table by partition key, so each item is in exactly one, and scanning each to its
    /// end reads the whole table once.
    pub segment: Option<ScanSegment>,
}

/// One part of a parallel Scan: `index` of `total` (DynamoDB's `Segment`, `TotalSegments`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSegment {
    pub index: u32,
    pub total: u32,
}

impl ScanSegment {
    /// DynamoDB's bound on `TotalSegments`.
    pub const MAX_TOTAL: u32 = 1_000_000;

    /// Whether an item of partition key `pk` falls in this segment, as the embedded engine
    /// splits its table: by a hash of the partition key, stable across processes and
    /// releases (a checkpointed scan resumes in another process). CRC-32 is enough: it
    /// spreads keys, and nothing depends on it being hard to invert.
    pub fn holds(&self, pk: &str) -> bool {
        self.total <= 1 || crc32fast::hash(pk.as_bytes()) % self.total == self.index
    }
}

/// What a write returns besides success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnValues {
    #[default]
    None,
    /// The item as it was before the write (absent if there was none).
    AllOld,
    /// The item as it is after the write (UpdateItem only).
    AllNew,
}

/// PutItem.
#[derive(Debug, Clone, PartialEq)]
pub struct Put {
    pub item: Item,
    pub condition: Option<Condition>,
    /// On a failed condition, report the current item in the error.
    pub return_old_on_condition_failure: bool,
}

impl Put {
    pub fn new(item: Item) -> Self {
        Put {
            item,
            condition: None,
            return_old_on_condition_failure: false,
        }
    }
    pub fn when(mut self, condition: Condition) -> Self {
        self.condition = Some(condition);
        self
    }
}

/// UpdateItem: creates the item when it is absent and the condition allows.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub key: PrimaryKey,
    pub update: UpdateExpr,
    pub condition: Option<Condition>,
    pub returns: ReturnValues,
    pub return_old_on_condition_failure: bool,
}

impl Update {
    pub fn new(key: PrimaryKey, update: UpdateExpr) -> Self {
        Update {
            key,
            update,
            condition: None,
            returns: ReturnValues::None,
            return_old_on_condition_failure: false,
        }
    }
    pub fn when(mut self, condition: Condition) -> Self {
        self.condition = Some(condition);
        self
    }
    pub fn returning(mut self, returns: ReturnValues) -> Self {
        self.returns = returns;
        self
    }
}

/// DeleteItem.
#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    pub key: PrimaryKey,
    pub condition: Option<Condition>,
    pub returns: ReturnValues,
    pub return_old_on_condition_failure: bool,
}

impl Delete {
    pub fn new(key: PrimaryKey) -> Self {
        Delete {
            key,
            condition: None,
            returns: ReturnValues::None,
            return_old_on_condition_failure: false,
        }
    }
    pub fn when(mut self, condition: Condition) -> Self {
        self.condition = Some(condition);
        self
    }
}

/// ConditionCheck inside a transaction: asserts without writing.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionCheck {
    pub key: PrimaryKey,
    pub condition: Condition,
    pub return_old_on_condition_failure: bool,
}

/// One action of TransactWriteItems. `return_old_on_condition_failure` asks for the
/// current item in the cancellation reason; `returns` is ignored inside transactions.
#[derive(Debug, Clone, PartialEq)]
pub enum TransactAction {
    Put(Put),
    Update(Update),
    Delete(Delete),
    ConditionCheck(ConditionCheck),
}

impl TransactAction {
    /// The primary key of the item the action touches.
    pub fn key(&self, schema: &TableSchema) -> Option<PrimaryKey> {
        match self {
            TransactAction::Put(p) => schema.key_of(&p.item),
            TransactAction::Update(u) => Some(u.key.clone()),
            TransactAction::Delete(d) => Some(d.key.clone()),
            TransactAction::ConditionCheck(c) => Some(c.key.clone()),
        }
    }
}

/// One request of a BatchWriteItem: a Put of a whole item or a Delete by key, with no
/// condition (DynamoDB takes none in a batch).
#[derive(Debug, Clone, PartialEq)]
pub enum BatchWriteRequest {
    Put(Item),
    Delete(PrimaryKey),
}

impl BatchWriteRequest {
    /// The primary key of the item it writes.
    pub fn key(&self, schema: &TableSchema) -> Option<PrimaryKey> {
        match self {
            BatchWriteRequest::Put(item) => schema.key_of(item),
            BatchWriteRequest::Delete(key) => Some(key.clone()),
        }
    }
}

/// One BatchWriteItem call on one table: at most [`validate::MAX_BATCH_WRITE_REQUESTS`]
/// requests, no two on one item. Each request is applied on its own (not all or none).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchWrite {
    pub requests: Vec<BatchWriteRequest>,
}

/// What one BatchWriteItem call left unprocessed (DynamoDB's `UnprocessedItems`): to be
/// sent again; the rest was applied.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchWritePage {
    pub unprocessed: Vec<BatchWriteRequest>,
}

/// Why one action of a cancelled transaction was cancelled (in action order).
#[derive(Debug, Clone, PartialEq)]
pub enum CancelReason {
    /// This action was fine; another one cancelled the transaction.
    None,
    /// Its condition did not hold; `item` is the current item when it was asked for.
    ConditionalCheckFailed { item: Option<Item> },
    /// Another transaction or write touched the item at the same time.
    TransactionConflict,
    /// DynamoDB throttled the action (`ThrottlingError`,
    /// `ProvisionedThroughputExceeded`).
    Throttled,
    /// The action was invalid only against the stored item (e.g. ADD to a non-number).
    ValidationError(String),
    /// Any other reason DynamoDB names, with its code and message.
    Other { code: String, message: String },
}

/// Table status as DescribeTable reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDescription {
    pub name: String,
    /// The table's ARN (DynamoDB); none for the embedded engine.
    pub arn: Option<String>,
    pub status: String,
    pub indexes: Vec<String>,
    pub item_count: Option<u64>,
    /// Its keys and indexes as the service describes them (DynamoDB); `None` where the
    /// engine's table is always the schema it was opened with (the embedded engine).
    pub shape: Option<TableSchema>,
}
