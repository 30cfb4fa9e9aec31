//! The DynamoDB engine's change stream: DynamoDB Streams through
//! `aws-sdk-dynamodbstreams`, on the table's latest stream (`NEW_AND_OLD_IMAGES`, which
//! `create_table` and `itemgraph migrate` enable).

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodbstreams::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodbstreams::types::{OperationType, ShardIteratorType};
use tokio::sync::Mutex;

use crate::store::stream::{
    ChangeKind, ChangeRecord, ChangeStream, RecordsPage, ShardInfo, StartAt, StreamError,
    StreamResult, MAX_RECORDS_PER_CALL,
};
use crate::store::{Item, StoreError, TableSchema};

/// The stream of one table, found from the table's `LatestStreamArn` on first use, and
/// again by [`latest`](ChangeStream::latest), which readers call every 10 s.
#[derive(Debug)]
pub(super) struct DynamoChanges {
    pub(super) client: aws_sdk_dynamodb::Client,
    pub(super) streams: aws_sdk_dynamodbstreams::Client,
    pub(super) table: String,
    pub(super) schema: TableSchema,
    pub(super) arn: Mutex<Option<Latest>>,
}

/// The table's latest stream, as `DescribeTable` names it.
#[derive(Debug, Clone)]
pub(super) struct Latest {
    arn: String,
    label: String,
}

/// A streams call's error in the port's terms: transport failures are `Unavailable`,
/// throttling `Throttled`; the stream-specific codes are named by the caller.
fn stream_error<E, R>(err: SdkError<E, R>) -> StreamError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let detail = DisplayErrorContext(&err).to_string();
    if !matches!(err, SdkError::ServiceError(_)) {
        return StreamError::Store(StoreError::Unavailable(detail));
    }
    let message = err.message().unwrap_or_default().to_owned();
    match err.code().unwrap_or_default() {
        "TrimmedDataAccessException" => StreamError::Trimmed(message),
        "ExpiredIteratorException" => StreamError::ExpiredIterator,
        "LimitExceededException" | "ThrottlingException" => {
            StreamError::Store(StoreError::Throttled(message))
        }
        "InternalServerError" | "ServiceUnavailable" => {
            StreamError::Store(StoreError::Unavailable(detail))
        }
        "ValidationException" => StreamError::Store(StoreError::Validation(message)),
        _ => StreamError::Store(StoreError::Internal(detail)),
    }
}

fn not_found<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    err.code() == Some("ResourceNotFoundException")
}

type StreamValue = aws_sdk_dynamodbstreams::types::AttributeValue;

/// A stream image in the port's terms, value by value (the map built once). An attribute
/// of a type newer than this SDK (its `Unknown` variant, on which `serde_dynamo` panics)
/// is left out of the image with a warning: the change is still delivered, and a read of
/// the item itself reports the type as an internal error.
fn item(image: Option<std::collections::HashMap<String, StreamValue>>) -> Option<Item> {
    fn unknown(v: &StreamValue) -> bool {
        match v {
            StreamValue::L(l) => l.iter().any(unknown),
            StreamValue::M(m) => m.values().any(unknown),
            other => other.is_unknown(),
        }
    }
    let image = image.filter(|i| !i.is_empty())?;
    Some(
        image
            .into_iter()
            .filter(|(name, v)| {
                let known = !unknown(v);
                if !known {
                    tracing::warn!(
                        attribute = %name,
                        "a stream image holds an attribute type this SDK does not know; \
                         left out of the change"
                    );
                }
                known
            })
            .map(|(k, v)| (k, v.into()))
            .collect(),
    )
}

impl DynamoChanges {
    /// The table's latest stream, described now (`NoStream` when it has none enabled).
    async fn describe_latest(&self) -> StreamResult<Latest> {
        let table = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|e| StreamError::Store(super::errors::store_error(&self.table, e)))?;
        let t = table.table();
        let enabled = t
            .and_then(|t| t.stream_specification())
            .is_some_and(|s| s.stream_enabled());
        let arn = t
            .and_then(|t| t.latest_stream_arn())
            .filter(|_| enabled)
            .ok_or_else(|| {
                StreamError::NoStream(format!(
                    "table {} has no stream enabled (run `itemgraph migrate` to enable one \
                     with NEW_AND_OLD_IMAGES)",
                    self.table
                ))
            })?;
        // The label is unique to the stream for the table; the ARN names it too.
        let label = t.and_then(|t| t.latest_stream_label()).unwrap_or(arn);
        Ok(Latest {
            arn: arn.to_owned(),
            label: label.to_owned(),
        })
    }

    /// The ARN of the stream [`latest`](ChangeStream::latest) last found (looked up on
    /// first use). Only `latest` moves it: a reader learns of a new stream from it, never
    /// behind its back.
    async fn arn(&self) -> StreamResult<String> {
        let mut cached = self.arn.lock().await;
        if let Some(latest) = cached.as_ref() {
            return Ok(latest.arn.clone());
        }
        let latest = self.describe_latest().await?;
        let arn = latest.arn.clone();
        *cached = Some(latest);
        Ok(arn)
    }
}

#[async_trait]
impl ChangeStream for DynamoChanges {
    fn engine_name(&self) -> &'static str {
        "dynamodb"
    }

    async fn latest(&self) -> StreamResult<String> {
        // Disabled and not enabled again: `NoStream`, and the old stream, still readable
        // for a day, stays the one read.
        let latest = self.describe_latest().await?;
        let label = latest.label.clone();
        *self.arn.lock().await = Some(latest);
        Ok(label)
    }

    async fn shards(&self) -> StreamResult<Vec<ShardInfo>> {
        crate::metrics::record_stream_call("DescribeStream");
        let arn = self.arn().await?;
        let mut shards = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let out = match self
                .streams
                .describe_stream()
                .stream_arn(&arn)
                .set_exclusive_start_shard_id(start.take())
                .send()
                .await
            {
                Ok(out) => out,
                // Not forgotten: only `latest` moves to another stream, so a reader never
                // sees a new stream's shards as its old one's.
                Err(e) if not_found(&e) => {
                    return Err(StreamError::NoStream(format!(
                        "the stream of table {} is gone",
                        self.table
                    )));
                }
                Err(e) => return Err(stream_error(e)),
            };
            let Some(description) = out.stream_description else {
                break;
            };
            for shard in description.shards.unwrap_or_default() {
                let Some(id) = shard.shard_id else { continue };
                let closed = shard
                    .sequence_number_range
                    .as_ref()
                    .and_then(|r| r.ending_sequence_number.as_ref())
                    .is_some();
                shards.push(ShardInfo {
                    id,
                    parent: shard.parent_shard_id,
                    closed,
                });
            }
            match description.last_evaluated_shard_id {
                Some(last) => start = Some(last),
                None => break,
            }
        }
        Ok(shards)
    }

    async fn shard_iterator(&self, shard: &str, at: StartAt) -> StreamResult<String> {
        crate::metrics::record_stream_call("GetShardIterator");
        let arn = self.arn().await?;
        let (kind, seq) = match at {
            StartAt::TrimHorizon => (ShardIteratorType::TrimHorizon, None),
            StartAt::Latest => (ShardIteratorType::Latest, None),
            StartAt::After(seq) => (ShardIteratorType::AfterSequenceNumber, Some(seq)),
        };
        match self
            .streams
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(shard)
            .shard_iterator_type(kind)
            .set_sequence_number(seq)
            .send()
            .await
        {
            Ok(out) => out.shard_iterator.ok_or_else(|| {
                StreamError::Trimmed(format!("shard {shard} gave no iterator (it is gone)"))
            }),
            Err(e) if not_found(&e) => Err(StreamError::Trimmed(format!(
                "shard {shard} is no longer listed"
            ))),
            Err(e) => Err(stream_error(e)),
        }
    }

    async fn get_records(&self, iterator: &str, limit: u32) -> StreamResult<RecordsPage> {
        crate::metrics::record_stream_call("GetRecords");
        let out = match self
            .streams
            .get_records()
            .shard_iterator(iterator)
            .limit(limit.clamp(1, MAX_RECORDS_PER_CALL) as i32)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if not_found(&e) => {
                return Err(StreamError::Trimmed("the shard is gone".into()));
            }
            Err(e) => return Err(stream_error(e)),
        };
        // The shard an iterator reads is not in the answer; records name their own
        // sequence numbers, and the caller knows the shard it asked for.
        let mut records = Vec::new();
        for r in out.records.unwrap_or_default() {
            let kind = match r.event_name {
                Some(OperationType::Insert) => ChangeKind::Insert,
                Some(OperationType::Modify) => ChangeKind::Modify,
                Some(OperationType::Remove) => ChangeKind::Remove,
                _ => continue,
            };
            let Some(data) = r.dynamodb else { continue };
            let Some(keys) = item(data.keys) else {
                continue;
            };
            let Some(key) = self.schema.key_of(&keys) else {
                continue;
            };
            records.push(ChangeRecord {
                shard: String::new(),
                sequence: data.sequence_number.unwrap_or_default(),
                kind,
                key,
                old_image: item(data.old_image),
                new_image: item(data.new_image),
                created_ms: data
                    .approximate_creation_date_time
                    .map_or(0, |t| t.to_millis().unwrap_or(0).max(0) as u64),
            });
        }
        Ok(RecordsPage {
            records,
            next: out.next_shard_iterator,
        })
    }

    async fn wait_for_changes(&self, idle: Duration) {
        tokio::time::sleep(idle).await;
    }
}
