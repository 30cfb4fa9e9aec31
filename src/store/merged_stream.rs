//! The change streams of a chart's several tables read as one: what subscriptions follow
//! when the entities they stream live in more than one table.
//!
//! Each table's stream keeps its own shards, sequence numbers and iterators; here a shard
//! and an iterator carry their table's place (`1/shardId-…`), so a position read from the
//! merged stream (a subscriber's resume token, a relayer's checkpoint) names its table
//! too. An item lives in one table, so the order of its changes is its table's, as the
//! port promises; changes of different tables are not ordered against each other, as
//! DynamoDB Streams orders none across tables either. The label is every table's, so a
//! stream replaced in any table is a new merged stream.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::stream::{ChangeStream, RecordsPage, ShardInfo, StartAt, StreamError, StreamResult};
use super::Store;
use crate::chart::Chart;

/// The streams of several tables, in the chart's order, read as one.
pub struct MergedStream {
    streams: Vec<Arc<dyn ChangeStream>>,
}

impl MergedStream {
    /// One stream of `streams` (the first table's first); a single stream is itself.
    pub fn of(mut streams: Vec<Arc<dyn ChangeStream>>) -> Option<Arc<dyn ChangeStream>> {
        match streams.len() {
            0 => None,
            1 => streams.pop(),
            _ => Some(Arc::new(MergedStream { streams })),
        }
    }

    /// The stream subscriptions of `chart` follow on `store`: its table's, or, for a chart
    /// of several tables, each table's read as one. A table without a stream is left out.
    pub fn of_chart(store: &dyn Store, chart: &Chart) -> Option<Arc<dyn ChangeStream>> {
        let mut streams = vec![store.change_stream()?];
        for t in &chart.tables[1..] {
            match store.sibling(&t.name).and_then(|s| s.change_stream()) {
                Some(s) => streams.push(s),
                None => {
                    tracing::warn!(table = %t.name, "the table has no change stream: its changes reach no subscription")
                }
            }
        }
        MergedStream::of(streams)
    }

    /// The stream a prefixed shard or iterator names, and the rest of it.
    fn split<'a>(&self, named: &'a str) -> StreamResult<(&Arc<dyn ChangeStream>, &'a str)> {
        let trimmed = || StreamError::Trimmed(format!("`{named}` names no table of the chart"));
        let (at, rest) = named.split_once('/').ok_or_else(trimmed)?;
        let at: usize = at.parse().map_err(|_| trimmed())?;
        let stream = self.streams.get(at).ok_or_else(trimmed)?;
        Ok((stream, rest))
    }
}

#[async_trait]
impl ChangeStream for MergedStream {
    fn engine_name(&self) -> &'static str {
        self.streams[0].engine_name()
    }

    async fn latest(&self) -> StreamResult<String> {
        let mut labels = Vec::with_capacity(self.streams.len());
        for s in &self.streams {
            labels.push(s.latest().await?);
        }
        Ok(labels.join(" "))
    }

    async fn shards(&self) -> StreamResult<Vec<ShardInfo>> {
        let mut out = Vec::new();
        for (at, s) in self.streams.iter().enumerate() {
            for shard in s.shards().await? {
                out.push(ShardInfo {
                    id: format!("{at}/{}", shard.id),
                    parent: shard.parent.map(|p| format!("{at}/{p}")),
                    closed: shard.closed,
                });
            }
        }
        Ok(out)
    }

    async fn shard_iterator(&self, shard: &str, at: StartAt) -> StreamResult<String> {
        let (stream, own) = self.split(shard)?;
        let table = &shard[..shard.len() - own.len() - 1];
        let iterator = stream.shard_iterator(own, at).await?;
        Ok(format!("{table}/{iterator}"))
    }

    async fn get_records(&self, iterator: &str, limit: u32) -> StreamResult<RecordsPage> {
        let (stream, own) = self.split(iterator)?;
        let table = &iterator[..iterator.len() - own.len() - 1];
        let mut page = stream.get_records(own, limit).await?;
        for r in &mut page.records {
            r.shard = format!("{table}/{}", r.shard);
        }
        page.next = page.next.map(|n| format!("{table}/{n}"));
        Ok(page)
    }

    /// Returns when any table's stream may have new records, or after `idle`.
    async fn wait_for_changes(&self, idle: Duration) {
        let waits = self
            .streams
            .iter()
            .map(|s| Box::pin(s.wait_for_changes(idle)));
        futures::future::select_all(waits).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::{AttributeValue, KeyType, Put, TableSchema};

    fn schema(pk: &str) -> TableSchema {
        TableSchema {
            pk: pk.into(),
            pk_type: KeyType::S,
            sk: None,
            sk_type: KeyType::S,
            indexes: Vec::new(),
            time_to_live: None,
        }
    }

    #[tokio::test]
    async fn both_tables_changes_are_read_each_under_its_tables_shards() {
        let store = EmbeddedStore::in_memory("first", schema("A"))
            .unwrap()
            .with_siblings(vec![("second".into(), schema("B"))], None)
            .unwrap();
        store.create_table().await.unwrap();
        let second = store.sibling("second").unwrap();
        second.create_table().await.unwrap();
        let merged = MergedStream::of(vec![
            store.change_stream().unwrap(),
            second.change_stream().unwrap(),
        ])
        .unwrap();
        let item = |k: &str, v: &str| {
            [(k.to_owned(), AttributeValue::S(v.to_owned()))]
                .into_iter()
                .collect()
        };
        store.put_item(Put::new(item("A", "one"))).await.unwrap();
        second.put_item(Put::new(item("B", "two"))).await.unwrap();
        let shards = merged.shards().await.unwrap();
        assert!(shards.iter().any(|s| s.id.starts_with("0/")), "{shards:?}");
        assert!(shards.iter().any(|s| s.id.starts_with("1/")), "{shards:?}");
        let mut keys = Vec::new();
        for s in &shards {
            let it = merged
                .shard_iterator(&s.id, StartAt::TrimHorizon)
                .await
                .unwrap();
            let page = merged.get_records(&it, 100).await.unwrap();
            for r in page.records {
                assert_eq!(r.shard, s.id);
                keys.push(r.key.pk);
            }
            // Where it goes on is of its table too.
            if let Some(next) = page.next {
                assert_eq!(next.split('/').next(), s.id.split('/').next());
            }
        }
        keys.sort();
        assert_eq!(keys, ["one", "two"]);
        assert_eq!(merged.latest().await.unwrap().split(' ').count(), 2);
        // A position of no table is trimmed, not a panic.
        assert!(matches!(
            merged.get_records("7/x", 10).await,
            Err(StreamError::Trimmed(_))
        ));
        assert!(matches!(
            merged.shard_iterator("nothing", StartAt::Latest).await,
            Err(StreamError::Trimmed(_))
        ));
    }
}
