//! What `itemgraph migrate` keeps in the table: one item per migration (its state) and one
//! per segment of its parallel Scan (the checkpoint a killed run resumes from). They sit
//! in partitions of their own (`MIGRATION#<nnn>`, [`migration_key`]) that no access
//! pattern reads; `itemgraph check` accepts them.

use serde::{Deserialize, Serialize};

use crate::store::own::{migration_key, segment_key, OwnRecord as Record};
use crate::store::{Condition, GetItem, PageKey, PrimaryKey, Put, Store, StoreError, StoreResult};

/// Where a migration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MigrationState {
    /// Started, not finished: the next run resumes it from its segments' checkpoints.
    Running,
    /// Finished: no run does it again.
    Done,
}

/// A migration's own item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationRecord {
    pub version: u32,
    pub name: String,
    pub state: MigrationState,
    /// How many segments its Scan was split into: a resumed run keeps the number, since a
    /// checkpoint belongs to its segment.
    pub segments: u32,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<String>,
    /// A chart's plan: a digest of its steps, so a stopped run resumes only the same plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

impl Record for MigrationRecord {
    const TYPE: &'static str = "Migration";
    fn key(&self) -> PrimaryKey {
        migration_key(self.version)
    }
}

/// How far one segment of a migration's Scan got: every item before `next` is migrated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentCheckpoint {
    pub version: u32,
    pub segment: u32,
    /// The Scan's `LastEvaluatedKey` after the last page done (absent before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_sk: Option<String>,
    /// The segment was scanned to its end.
    pub done: bool,
    /// Items this segment has read so far, over every run.
    pub scanned: u64,
    /// How many segments the Scan it belongs to has: a checkpoint of another split names
    /// a position in other items, and a resume never starts from it. (Absent on
    /// checkpoints written before it was kept.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<u32>,
}

impl Record for SegmentCheckpoint {
    const TYPE: &'static str = "MigrationSegment";
    fn key(&self) -> PrimaryKey {
        segment_key(self.version, self.segment)
    }
}

/// The checkpoints of one table's Scan are numbered from its place in the chart's tables
/// times this (DynamoDB's most segments of a Scan): the first table's from 0, as before
/// charts had several; the `MigrationSegment` key holds ten tables' (`SEGMENT#1000003` is
/// the second table's segment 3).
pub const TABLE_SEGMENTS: u32 = crate::store::ScanSegment::MAX_TOTAL;

/// The most tables whose items one migration reads: their checkpoints' numbers fit the
/// `MigrationSegment` key's seven digits.
pub const MAX_TABLES: usize = 10;

impl SegmentCheckpoint {
    pub fn new(version: u32, segment: u32, segments: u32) -> Self {
        Self::of_table(version, 0, segment, segments)
    }

    /// The checkpoint of segment `segment` of the Scan of table `table` (its place in the
    /// chart's tables, under [`MAX_TABLES`]).
    pub fn of_table(version: u32, table: usize, segment: u32, segments: u32) -> Self {
        SegmentCheckpoint {
            version,
            segment: table as u32 * TABLE_SEGMENTS + segment,
            next_pk: None,
            next_sk: None,
            done: false,
            scanned: 0,
            segments: Some(segments),
        }
    }

    /// The table whose Scan it belongs to (its place in the chart's tables).
    pub fn table(&self) -> usize {
        (self.segment / TABLE_SEGMENTS) as usize
    }

    /// Its segment of that table's Scan.
    pub fn scan_segment(&self) -> u32 {
        self.segment % TABLE_SEGMENTS
    }

    /// Whether it belongs to a Scan of `segments` segments.
    pub fn of(&self, segments: u32) -> bool {
        self.segments.is_none_or(|of| of == segments)
    }

    /// Where the segment's Scan goes on.
    pub fn start(&self) -> Option<PageKey> {
        match (&self.next_pk, &self.next_sk) {
            (Some(pk), Some(sk)) => Some(PageKey {
                table: PrimaryKey::new(pk.clone(), sk.clone()),
                index: None,
            }),
            _ => None,
        }
    }

    /// After a page: `next` is its `LastEvaluatedKey`, none at the segment's end.
    pub fn advance(&mut self, read: usize, next: Option<&PageKey>) {
        self.scanned += read as u64;
        self.next_pk = next.map(|k| k.table.pk.clone());
        self.next_sk = next.map(|k| k.table.sk.clone());
        self.done = next.is_none();
    }
}

/// A record by key, read strongly consistent; `None` when absent or of another type.
pub async fn read<R: Record>(store: &dyn Store, key: PrimaryKey) -> StoreResult<Option<R>> {
    let item = store
        .get_item(GetItem {
            key,
            consistent_read: true,
        })
        .await?;
    Ok(item.and_then(|i| R::from_item(i, store.schema()).ok()))
}

/// Writes a record only where none is (`attribute_not_exists`): false when another run
/// wrote one first.
pub async fn create<R: Record>(store: &dyn Store, record: &R) -> StoreResult<bool> {
    match store
        .put_item(
            Put::new(record.to_item(own(store)?)).when(Condition::not_exists(&store.schema().pk)),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes a record over whatever was at its key: these items are the runner's own.
pub async fn write<R: Record>(store: &dyn Store, record: &R) -> StoreResult<()> {
    store
        .put_item(Put::new(record.to_item(own(store)?)))
        .await
        .map(|_| ())
}

/// The table's schema, where it can hold the server's own records.
fn own(store: &dyn Store) -> StoreResult<&crate::store::TableSchema> {
    let schema = store.schema();
    if !crate::store::own::holds_own_items(schema) {
        return Err(StoreError::Validation(format!(
            "the table's primary key ({}{}) cannot hold the server's own records, whose keys \
             are two strings: `itemgraph migrate` and the relay's lease need a table keyed so",
            schema.pk,
            schema
                .sk
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default()
        )));
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tables_checkpoints_have_numbers_of_their_own_that_the_key_holds() {
        let second = SegmentCheckpoint::of_table(101, 1, 3, 4);
        assert_eq!(
            second.key(),
            PrimaryKey::new("MIGRATION#101", "SEGMENT#1000003")
        );
        assert_eq!((second.table(), second.scan_segment()), (1, 3));
        let first = SegmentCheckpoint::new(101, 3, 4);
        assert_eq!(first.key(), segment_key(101, 3));
        assert_eq!((first.table(), first.scan_segment()), (0, 3));
        // The last table's last segment is the most the `MigrationSegment` key's seven
        // digits hold (its `segment` attribute's maximum).
        let last = SegmentCheckpoint::of_table(
            101,
            MAX_TABLES - 1,
            crate::store::ScanSegment::MAX_TOTAL - 1,
            crate::store::ScanSegment::MAX_TOTAL,
        );
        assert_eq!(last.segment, 9_999_999);
        assert_eq!(last.key().sk, "SEGMENT#9999999");
    }
}
