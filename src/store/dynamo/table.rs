//! Table administration: CreateTable with the schema's keys and indexes (and its Time to
//! Live, UpdateTimeToLive), DeleteTable, DescribeTable, the table's stream turned on, and
//! the wait for the table to be ACTIVE.

use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    self as sdk, AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus,
    KeySchemaElement, KeyType, Projection, ProjectionType, ScalarAttributeType, TableStatus,
};

use crate::store::{IndexSchema, StoreError, StoreResult, TableDescription};

use super::errors::{build_error, store_error};
use super::DynamoEngine;

/// How long `create_table` waits for the table and its indexes to become ACTIVE. DynamoDB
/// Local is immediate; the real service takes seconds to a minute with two new indexes.
pub(super) const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

/// The table's stream as subscriptions need it: every change with the item before and
/// after.
pub(super) fn stream_specification() -> StoreResult<sdk::StreamSpecification> {
    sdk::StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(sdk::StreamViewType::NewAndOldImages)
        .build()
        .map_err(build_error)
}

/// A key of a partition key `pk` and a sort key `sk`.
fn key_schema(pk: &str, sk: Option<&str>) -> StoreResult<Vec<KeySchemaElement>> {
    elements(std::iter::once((pk, KeyType::Hash)).chain(sk.map(|sk| (sk, KeyType::Range))))
}

/// An index's key: each partition attribute (`HASH`), then each sort attribute (`RANGE`),
/// in order (a multi-attribute key has up to four of each).
fn index_key_schema(index: &IndexSchema) -> StoreResult<Vec<KeySchemaElement>> {
    let partition = index.partition_attributes().into_iter();
    let sort = index.sort_attributes().into_iter();
    elements(
        partition
            .map(|(a, _)| (a, KeyType::Hash))
            .chain(sort.map(|(a, _)| (a, KeyType::Range))),
    )
}

fn elements<'a>(
    keys: impl Iterator<Item = (&'a str, KeyType)>,
) -> StoreResult<Vec<KeySchemaElement>> {
    keys.map(|(attr, kind)| {
        KeySchemaElement::builder()
            .attribute_name(attr)
            .key_type(kind)
            .build()
            .map_err(build_error)
    })
    .collect()
}

/// Attribute definitions of key attributes, each of its type, each once.
fn key_attributes<'a>(
    attrs: impl IntoIterator<Item = (&'a str, crate::store::KeyType)>,
) -> StoreResult<Vec<AttributeDefinition>> {
    let mut seen: Vec<&str> = Vec::new();
    attrs
        .into_iter()
        .filter(|(attr, _)| {
            let new = !seen.contains(attr);
            seen.push(attr);
            new
        })
        .map(|(attr, ty)| {
            AttributeDefinition::builder()
                .attribute_name(attr)
                .attribute_type(match ty {
                    crate::store::KeyType::S => ScalarAttributeType::S,
                    crate::store::KeyType::N => ScalarAttributeType::N,
                })
                .build()
                .map_err(build_error)
        })
        .collect()
}

/// The key attributes of the table (`None`) or of an index, with their types.
fn keys_of<'a>(
    s: &'a crate::store::TableSchema,
    index: Option<&'a IndexSchema>,
) -> Vec<(&'a str, crate::store::KeyType)> {
    match index {
        None => std::iter::once((s.pk.as_str(), s.pk_type))
            .chain(s.sk.as_deref().map(|sk| (sk, s.sk_type)))
            .collect(),
        Some(i) => i
            .partition_attributes()
            .into_iter()
            .chain(i.sort_attributes())
            .collect(),
    }
}

impl DynamoEngine {
    /// Turns the table's stream on (`NEW_AND_OLD_IMAGES`) when it is off; `Ok(false)`
    /// when it was on already. A stream with another view type is refused: subscriptions
    /// need the item before and after each change.
    pub async fn enable_stream(&self) -> StoreResult<bool> {
        self.turn_stream_on(false).await
    }

    pub(super) async fn turn_stream_on(&self, dry_run: bool) -> StoreResult<bool> {
        let out = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        let spec = out.table().and_then(|t| t.stream_specification());
        if let Some(spec) = spec.filter(|s| s.stream_enabled()) {
            return if spec.stream_view_type() == Some(&sdk::StreamViewType::NewAndOldImages) {
                Ok(false)
            } else {
                Err(StoreError::Validation(format!(
                    "table {} has a stream of view type {:?}; subscriptions need \
                     NEW_AND_OLD_IMAGES (disable that stream first)",
                    self.table,
                    spec.stream_view_type()
                )))
            };
        }
        if dry_run {
            return Ok(true);
        }
        self.client
            .update_table()
            .table_name(&self.table)
            .stream_specification(stream_specification()?)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        self.wait_until_active().await?;
        Ok(true)
    }

    pub(super) async fn wait_until_active(&self) -> StoreResult<()> {
        let deadline = tokio::time::Instant::now() + TABLE_ACTIVE_TIMEOUT;
        let mut pause = Duration::from_millis(20);
        loop {
            let out = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(|e| store_error(&self.table, e))?;
            let table = out.table.as_ref();
            let active = table.and_then(|t| t.table_status()) == Some(&TableStatus::Active)
                && table.is_some_and(|t| {
                    t.global_secondary_indexes()
                        .iter()
                        .all(|i| i.index_status() == Some(&IndexStatus::Active))
                });
            if active {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(StoreError::Unavailable(format!(
                    "table {} was not ACTIVE after {}s",
                    self.table,
                    TABLE_ACTIVE_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    /// CreateTable with the schema's keys and indexes (on demand, the stream on unless
    /// the options turned it off), then waits for it to be ACTIVE.
    pub(super) async fn create(&self) -> StoreResult<bool> {
        let s = &self.schema;
        let mut key_attrs = keys_of(s, None);
        for index in &s.indexes {
            key_attrs.extend(keys_of(s, Some(index)));
        }
        let definitions = key_attributes(key_attrs)?;
        let indexes = s
            .indexes
            .iter()
            .filter(|i| !i.local)
            .map(|index| {
                GlobalSecondaryIndex::builder()
                    .index_name(&index.name)
                    .set_key_schema(Some(index_key_schema(index)?))
                    .projection(projection(index))
                    .build()
                    .map_err(build_error)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let local = s
            .indexes
            .iter()
            .filter(|i| i.local)
            .map(|index| {
                sdk::LocalSecondaryIndex::builder()
                    .index_name(&index.name)
                    .set_key_schema(Some(index_key_schema(index)?))
                    .projection(projection(index))
                    .build()
                    .map_err(build_error)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .set_attribute_definitions(Some(definitions))
            .set_key_schema(Some(key_schema(&s.pk, s.sk.as_deref())?))
            .set_global_secondary_indexes((!indexes.is_empty()).then_some(indexes))
            .set_local_secondary_indexes((!local.is_empty()).then_some(local))
            .billing_mode(BillingMode::PayPerRequest)
            .set_stream_specification(self.create_stream.then(stream_specification).transpose()?)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(e) if e.code() == Some("ResourceInUseException") => return Ok(false),
            Err(e) => return Err(store_error(&self.table, e)),
        }
        self.wait_until_active().await?;
        if let Some(attr) = &s.time_to_live {
            self.turn_time_to_live_on(attr).await?;
        }
        Ok(true)
    }

    /// UpdateTable creating the schema's index `name` (its keys strings, its projection),
    /// unless the table has it; then the wait for it to be ACTIVE (the service fills it
    /// from the items that carry its keys).
    pub(super) async fn add_index(&self, name: &str, dry_run: bool) -> StoreResult<bool> {
        let Some(index) = self.schema.indexes.iter().find(|i| i.name == name) else {
            return Err(StoreError::Validation(format!(
                "the table's schema has no index {name}"
            )));
        };
        let has = self
            .describe()
            .await?
            .is_some_and(|d| d.indexes.iter().any(|i| i == name));
        if has {
            return Ok(false);
        }
        if dry_run {
            return Ok(true);
        }
        if index.local {
            return Err(StoreError::Validation(format!(
                "{name} is a local secondary index: DynamoDB makes one only with its table"
            )));
        }
        let definitions = key_attributes(keys_of(&self.schema, Some(index)))?;
        let create = sdk::CreateGlobalSecondaryIndexAction::builder()
            .index_name(name)
            .set_key_schema(Some(index_key_schema(index)?))
            .projection(projection(index))
            .build()
            .map_err(build_error)?;
        self.client
            .update_table()
            .table_name(&self.table)
            .set_attribute_definitions(Some(definitions))
            .global_secondary_index_updates(
                sdk::GlobalSecondaryIndexUpdate::builder()
                    .create(create)
                    .build(),
            )
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        // A large table's index takes DynamoDB longer to fill than the wait: the index is
        // there, and a run again writes the keys the plan writes.
        self.wait_until_active().await.map_err(|e| match e {
            StoreError::Unavailable(why) => StoreError::Unavailable(format!(
                "index {name} is created and still being filled ({why}): run migrate again to go on"
            )),
            other => other,
        })?;
        Ok(true)
    }

    /// UpdateTimeToLive on `attribute`, unless DescribeTimeToLive says it is on already.
    pub(super) async fn turn_time_to_live_on(&self, attribute: &str) -> StoreResult<()> {
        if self.time_to_live_attribute().await?.as_deref() == Some(attribute) {
            return Ok(());
        }
        let spec = sdk::TimeToLiveSpecification::builder()
            .attribute_name(attribute)
            .enabled(true)
            .build()
            .map_err(build_error)?;
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        Ok(())
    }

    /// The attribute the table's Time to Live reads, while it is on (or turning on).
    pub(super) async fn time_to_live_attribute(&self) -> StoreResult<Option<String>> {
        let out = self
            .client
            .describe_time_to_live()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|e| store_error(&self.table, e))?;
        Ok(out.time_to_live_description().and_then(|d| {
            matches!(
                d.time_to_live_status(),
                Some(sdk::TimeToLiveStatus::Enabled | sdk::TimeToLiveStatus::Enabling)
            )
            .then(|| d.attribute_name().map(str::to_owned))
            .flatten()
        }))
    }

    pub(super) async fn delete(&self) -> StoreResult<bool> {
        match self
            .client
            .delete_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) => match store_error(&self.table, e) {
                StoreError::TableNotFound(_) => Ok(false),
                other => Err(other),
            },
        }
    }

    pub(super) async fn describe(&self) -> StoreResult<Option<TableDescription>> {
        let out = match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                return match store_error(&self.table, e) {
                    StoreError::TableNotFound(_) => Ok(None),
                    other => Err(other),
                }
            }
        };
        let Some(t) = out.table else {
            return Ok(None);
        };
        Ok(Some(TableDescription {
            name: t.table_name().unwrap_or(&self.table).to_owned(),
            arn: t.table_arn().map(str::to_owned),
            status: t
                .table_status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            indexes: t
                .global_secondary_indexes()
                .iter()
                .filter_map(|i| i.index_name().map(str::to_owned))
                .collect(),
            item_count: t.item_count().and_then(|n| u64::try_from(n).ok()),
            shape: shape_of(&t),
        }))
    }
}

/// The keys and indexes a DescribeTable answer gives, in the port's terms; `None` when it
/// says too little (no key schema, a key of a type the port does not have).
fn shape_of(t: &sdk::TableDescription) -> Option<crate::store::TableSchema> {
    use crate::store::{IndexProjection, KeyType as Kt};
    let types = t.attribute_definitions();
    let type_of = |name: &str| -> Option<Kt> {
        let def = types.iter().find(|d| d.attribute_name() == name)?;
        match def.attribute_type() {
            ScalarAttributeType::S => Some(Kt::S),
            ScalarAttributeType::N => Some(Kt::N),
            _ => None,
        }
    };
    // Each key's attributes, partition then sort, with their types.
    type Keys = (Vec<(String, Kt)>, Vec<(String, Kt)>);
    let keys = |schema: &[KeySchemaElement]| -> Option<Keys> {
        let mut out: Keys = (Vec::new(), Vec::new());
        for k in schema {
            let name = k.attribute_name().to_owned();
            let ty = type_of(&name)?;
            match k.key_type() {
                KeyType::Hash => out.0.push((name, ty)),
                _ => out.1.push((name, ty)),
            }
        }
        Some(out)
    };
    let projection = |p: Option<&Projection>| match p.and_then(|p| p.projection_type()) {
        Some(ProjectionType::KeysOnly) => IndexProjection::KeysOnly,
        Some(ProjectionType::Include) => IndexProjection::Include(
            p.map(|p| p.non_key_attributes().to_vec())
                .unwrap_or_default(),
        ),
        _ => IndexProjection::All,
    };
    let index = |name: &str, schema: &[KeySchemaElement], p: Option<&Projection>, local: bool| {
        let (partition, sort) = keys(schema)?;
        let mut partition = partition.into_iter();
        let mut sort = sort.into_iter();
        let (pk, pk_type) = partition.next()?;
        let (sk, sk_type) = match sort.next() {
            Some((n, t)) => (Some(n), t),
            None => (None, Kt::S),
        };
        Some(IndexSchema {
            name: name.to_owned(),
            pk,
            pk_type,
            sk,
            sk_type,
            pk_more: partition.collect(),
            sk_more: sort.collect(),
            local,
            projection: projection(p),
        })
    };
    let (partition, sort) = keys(t.key_schema())?;
    let (pk, pk_type) = partition.into_iter().next()?;
    let (sk, sk_type) = match sort.into_iter().next() {
        Some((n, t)) => (Some(n), t),
        None => (None, Kt::S),
    };
    let mut indexes = Vec::new();
    for i in t.global_secondary_indexes() {
        indexes.push(index(
            i.index_name()?,
            i.key_schema(),
            i.projection(),
            false,
        )?);
    }
    for i in t.local_secondary_indexes() {
        indexes.push(index(
            i.index_name()?,
            i.key_schema(),
            i.projection(),
            true,
        )?);
    }
    Some(crate::store::TableSchema {
        pk,
        pk_type,
        sk,
        sk_type,
        indexes,
        time_to_live: None,
    })
}

/// An index's projection as CreateTable and UpdateTable are told of it.
fn projection(index: &crate::store::IndexSchema) -> Projection {
    use crate::store::IndexProjection;
    let b = Projection::builder();
    match &index.projection {
        IndexProjection::All => b.projection_type(ProjectionType::All),
        IndexProjection::KeysOnly => b.projection_type(ProjectionType::KeysOnly),
        IndexProjection::Include(a) => b
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(a.clone())),
    }
    .build()
}
