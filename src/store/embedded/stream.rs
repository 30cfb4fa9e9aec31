//! The change log as a change stream: written in each write's transaction, trimmed to its
//! capacity and retention, cut into shards and read through shard iterators as DynamoDB
//! Streams hands them out.

use std::time::Duration;

use async_trait::async_trait;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use crate::store::stream::{
    ChangeKind, ChangeRecord, ChangeStream, RecordsPage, ShardInfo, StartAt, StreamError,
    StreamResult, ITERATOR_TTL, MAX_RECORDS_PER_CALL,
};
use crate::store::{Item, PrimaryKey, StoreError, StoreResult};

use super::{internal, now_ms, EmbeddedEngine, Inner};

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
pub(super) const MAX_TRIM_PER_WRITE: usize = 256;

/// One change as the log stores it: the time it was made (8 bytes, big-endian ms since
/// the Unix epoch, read alone when trimming), then this as JSON.
#[derive(Serialize, Deserialize)]
pub(super) struct LoggedChange {
    pub(super) kind: ChangeKind,
    pub(super) pk: String,
    pub(super) sk: String,
    pub(super) old: Option<Item>,
    pub(super) new: Option<Item>,
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

impl Inner {
    /// Appends one change to the log (in the write's transaction) and trims what is
    /// past its capacity or retention. A write that leaves the item as it was logs
    /// nothing, as DynamoDB Streams does.
    pub(super) fn log_change(
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
}

/// The embedded engine's change stream: one handle per reader, each with its own view of
/// the commits it has been woken for.
pub(super) struct EmbeddedChanges {
    pub(super) store: EmbeddedEngine,
    pub(super) woken: tokio::sync::Mutex<tokio::sync::watch::Receiver<u64>>,
}

pub(super) fn shard_id(n: u64) -> String {
    format!("shardId-{n:020}")
}

pub(super) fn parse_shard(id: &str) -> Option<u64> {
    id.strip_prefix("shardId-")?.parse().ok()
}

pub(super) fn sequence(n: u64) -> String {
    format!("{n:021}")
}

/// A shard iterator: shard, next sequence number, issue time (ms).
pub(super) fn iterator(shard: u64, next: u64) -> String {
    format!("{shard}:{next}:{}", now_ms())
}

pub(super) fn bad_iterator() -> StreamError {
    StreamError::Store(StoreError::Validation(
        "Invalid ShardIterator: not an iterator of this stream".into(),
    ))
}

impl Inner {
    /// The first and last sequence numbers in the log: `(last + 1, last)` when it is
    /// empty, `(1, 0)` when nothing was ever logged.
    pub(super) fn log_bounds(&self) -> StoreResult<(u64, u64)> {
        let tx = self.db.begin_read().map_err(internal)?;
        self.log_bounds_in(&tx)
    }

    /// [`log_bounds`](Self::log_bounds) in a snapshot the caller reads on from.
    pub(super) fn log_bounds_in(&self, tx: &redb::ReadTransaction) -> StoreResult<(u64, u64)> {
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

    pub(super) fn shard_of(&self, seq: u64) -> u64 {
        seq.saturating_sub(1) / self.change_log.shard_span
    }

    /// The sequence numbers shard `n` may hold.
    pub(super) fn shard_range(&self, n: u64) -> (u64, u64) {
        let span = self.change_log.shard_span;
        (n * span + 1, (n + 1) * span)
    }
}

#[async_trait]
impl ChangeStream for EmbeddedChanges {
    fn engine_name(&self) -> &'static str {
        "embedded"
    }

    /// Its log is never replaced (a table deleted and created again in the same file is
    /// not told apart: the relay is not used with this engine).
    async fn latest(&self) -> StreamResult<String> {
        Ok("embedded".to_owned())
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
