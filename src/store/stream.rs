//! The change stream port: DynamoDB Streams' vocabulary in the project's own types.
//!
//! A table's changes come as ordered records in shards, as DynamoDB Streams hands them
//! out (`NEW_AND_OLD_IMAGES`): each record names its shard, its sequence number in that
//! shard, the kind of change, the item's keys and the item before and after. A shard
//! holds records for a while, is then closed and continues in child shards (which name
//! it as their parent); records of one item are ordered within a shard and across a
//! parent and its children. Records older than the stream's retention are trimmed.
//!
//! Both engines implement it: [`super::dynamo::DynamoStore`] reads DynamoDB Streams
//! (`DescribeStream`, `GetShardIterator`, `GetRecords`), [`super::embedded::EmbeddedStore`]
//! keeps an ordered change log in its file with the same record shape, rolling over to a
//! new shard every so many records so that shard lineage is exercised there too. The
//! reader that fans records out to subscribers ([`crate::live`]) is written once against
//! this port.

use std::cmp::Ordering;
use std::time::Duration;

use async_trait::async_trait;

use super::{Item, PrimaryKey, StoreError};

/// What happened to the item (DynamoDB Streams' `eventName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ChangeKind {
    /// `INSERT`: the item is new.
    Insert,
    /// `MODIFY`: the item existed and was changed.
    Modify,
    /// `REMOVE`: the item was deleted.
    Remove,
}

/// One stream record.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    /// The shard it was read from.
    pub shard: String,
    /// Its sequence number: a decimal string, increasing within the shard (compare with
    /// [`seq_cmp`]).
    pub sequence: String,
    pub kind: ChangeKind,
    pub key: PrimaryKey,
    /// The item before the change (absent for an insert).
    pub old_image: Option<Item>,
    /// The item after the change (absent for a remove).
    pub new_image: Option<Item>,
    /// When the change was made, in milliseconds since the Unix epoch (DynamoDB Streams
    /// gives whole seconds).
    pub created_ms: u64,
}

/// A shard as `DescribeStream` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInfo {
    pub id: String,
    /// The shard it continues, if any (and if that one is still listed or known).
    pub parent: Option<String>,
    /// Closed: it takes no more records (`EndingSequenceNumber` is set); once read to
    /// its end, reading goes on in its children.
    pub closed: bool,
}

/// Where a shard iterator starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartAt {
    /// The oldest record still retained.
    TrimHorizon,
    /// Just after the newest record: only what is written from now on.
    Latest,
    /// Just after this sequence number.
    After(String),
}

/// One `GetRecords` answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RecordsPage {
    pub records: Vec<ChangeRecord>,
    /// Where to read next; `None` once a closed shard has been read to its end.
    pub next: Option<String>,
}

/// Why a stream call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StreamError {
    /// The table has no stream (or it was disabled): changes cannot be followed.
    #[error("the table has no change stream: {0}")]
    NoStream(String),
    /// The position asked for is older than what the stream retains
    /// (`TrimmedDataAccessException`), or its shard is no longer listed.
    #[error("the stream no longer holds that position: {0}")]
    Trimmed(String),
    /// The shard iterator was too old to use (`ExpiredIteratorException`, after 15
    /// minutes): get a new one from the last sequence number read.
    #[error("the shard iterator expired")]
    ExpiredIterator,
    /// Anything else, in the store's terms (unavailable, throttled, internal).
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type StreamResult<T> = Result<T, StreamError>;

/// How long a shard iterator stays usable, on DynamoDB and in the embedded engine.
pub const ITERATOR_TTL: Duration = Duration::from_secs(15 * 60);

/// Most records one `GetRecords` call returns (DynamoDB's limit).
pub const MAX_RECORDS_PER_CALL: u32 = 1000;

/// The change stream of one table.
#[async_trait]
pub trait ChangeStream: Send + Sync + 'static {
    /// The engine's name, for logs (`embedded`, `dynamodb`).
    fn engine_name(&self) -> &'static str;

    /// The table's stream, looked up now: its label. The label changes when the stream
    /// is disabled and enabled again or the table is recreated (DynamoDB's
    /// `StreamLabel`; the embedded engine's log is never replaced). The calls after this
    /// one address that stream. A reader that finds another label than the one it read
    /// has lost its place, and reads the new stream from its start.
    async fn latest(&self) -> StreamResult<String>;

    /// Every shard the stream lists, parents before their children.
    async fn shards(&self) -> StreamResult<Vec<ShardInfo>>;

    /// An iterator into `shard` from `at`.
    async fn shard_iterator(&self, shard: &str, at: StartAt) -> StreamResult<String>;

    /// Up to `limit` records from `iterator`, and where to go on. An empty page does not
    /// mean the shard's end: only `next: None` does.
    async fn get_records(&self, iterator: &str, limit: u32) -> StreamResult<RecordsPage>;

    /// Returns once new records may be there, or after `idle` at the latest: the
    /// embedded engine wakes at the next write; DynamoDB is polled, at most every
    /// `idle`.
    async fn wait_for_changes(&self, idle: Duration);
}

/// Orders two sequence numbers of one shard: decimal strings of any length.
pub fn seq_cmp(a: &str, b: &str) -> Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert_eq!(seq_cmp("9", "10"), Ordering::Less);
        assert_eq!(seq_cmp("000000000000000000010", "10"), Ordering::Equal);
        assert_eq!(
            seq_cmp(
                "4421584500000000017450439091",
                "4421584500000000017450439090"
            ),
            Ordering::Greater
        );
        assert_eq!(seq_cmp("0", ""), Ordering::Equal);
    }
}
