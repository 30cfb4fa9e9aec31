//! The server's own items, kept in the table beside a chart's: `itemgraph migrate`'s
//! records and checkpoints, and the leases replicas elect a holder by. Each sits in a
//! partition of its own that no access pattern reads; their keys are those of the chart's
//! system entities (`Migration`, `MigrationSegment`, `Lease`), which every chart has.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{AttributeValue, Item, KeyType, PrimaryKey, TableSchema};

/// Whether a table of `schema` can hold the server's own items: their keys are two strings
/// (`MIGRATION#003` / `SEGMENT#0007`), so the table's must be.
pub fn holds_own_items(schema: &TableSchema) -> bool {
    schema.pk_type == KeyType::S && schema.sk.is_some() && schema.sk_type == KeyType::S
}

/// The partition key attribute of the tables the server makes.
pub const PK: &str = "PK";
/// The sort key attribute of the tables the server makes.
pub const SK: &str = "SK";
/// The attribute naming an item's type.
pub const TYPE: &str = "Type";

/// Why an item is not the record asked for.
#[derive(Debug, thiserror::Error)]
pub enum OwnError {
    #[error("the item is no {0}")]
    WrongType(&'static str),
    #[error("a malformed {ty} item: {source}")]
    Malformed {
        ty: &'static str,
        source: serde_dynamo::Error,
    },
}

/// One of the server's own items, as a serde record at its key.
pub trait OwnRecord: Serialize + DeserializeOwned {
    /// Its type attribute's value.
    const TYPE: &'static str;

    /// Where it is stored.
    fn key(&self) -> PrimaryKey;

    /// The item in a table of `schema`: its fields, its key under the table's key
    /// attributes, and its type.
    fn to_item(&self, schema: &TableSchema) -> Item {
        let mut item = match serde_dynamo::to_attribute_value(self) {
            Ok(AttributeValue::M(m)) => m,
            _ => unreachable!("a record serializes to a map"),
        };
        let key = self.key();
        for (name, v) in schema.key_attributes(&key) {
            item.insert(name.to_owned(), v);
        }
        item.insert(TYPE.into(), AttributeValue::S(Self::TYPE.into()));
        item
    }

    /// The record an item of a table of `schema` holds; fails when the item is of another
    /// type or malformed.
    fn from_item(mut item: Item, schema: &TableSchema) -> Result<Self, OwnError> {
        if !matches!(item.get(TYPE), Some(AttributeValue::S(t)) if t == Self::TYPE) {
            return Err(OwnError::WrongType(Self::TYPE));
        }
        item.remove(&schema.pk);
        if let Some(sk) = &schema.sk {
            item.remove(sk);
        }
        item.remove(TYPE);
        serde_dynamo::from_attribute_value(AttributeValue::M(item)).map_err(|source| {
            OwnError::Malformed {
                ty: Self::TYPE,
                source,
            }
        })
    }
}

/// The record of migration `version`: `MIGRATION#<nnn>` for both PK and SK.
pub fn migration_key(version: u32) -> PrimaryKey {
    let k = migration_partition(version);
    PrimaryKey::new(k.clone(), k)
}

/// The partition of migration `version`'s record and checkpoints.
pub fn migration_partition(version: u32) -> String {
    format!("MIGRATION#{version:03}")
}

/// Sort-key prefix of a migration's checkpoints.
pub const SEGMENTS_PREFIX: &str = "SEGMENT#";

/// The checkpoint of one segment of migration `version`'s parallel Scan:
/// `MIGRATION#<nnn>` / `SEGMENT#<nnnnnnn>` (DynamoDB allows up to 1,000,000 segments).
pub fn segment_key(version: u32, segment: u32) -> PrimaryKey {
    PrimaryKey::new(
        migration_partition(version),
        format!("{SEGMENTS_PREFIX}{segment:07}"),
    )
}

/// A lease replicas elect one holder by: `LEASE#<name>` for both PK and SK.
pub fn lease_key(name: &str) -> PrimaryKey {
    let k = format!("LEASE#{name}");
    PrimaryKey::new(k.clone(), k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_records_and_leases_have_partitions_of_their_own() {
        let pk = |p: &str, s: &str| PrimaryKey::new(p, s);
        assert_eq!(migration_key(3), pk("MIGRATION#003", "MIGRATION#003"));
        assert_eq!(segment_key(3, 7), pk("MIGRATION#003", "SEGMENT#0000007"));
        assert!(segment_key(3, 999_999).sk.starts_with(SEGMENTS_PREFIX));
        assert_eq!(
            lease_key("stream-relay"),
            pk("LEASE#stream-relay", "LEASE#stream-relay")
        );
    }
}
