//! Bytes on disk: keys encoded so that redb's byte order is DynamoDB's order (each string's
//! UTF-8 bytes with `0x00` escaped as `0x00 0xFF`, then the terminator `0x00 0x01`: a prefix
//! sorts before its extensions, and every key condition becomes one contiguous range), items
//! in a compact binary encoding, and the change log's and pending index changes' records.

use crate::store::{
    AttributeValue, IndexKey, IndexSchema, Item, KeyType, PrimaryKey, SortCondition, StoreResult,
    TableSchema,
};

use super::internal;

/// The first bytes of an index row that holds a copy of the item rather than the base
/// key: no encoded key starts with them (after `0x00` an encoded key has `0x01` or `0xFF`).
/// Without a lag rows point at the item, which keeps one copy of it on disk.
pub(super) const PROJECTED: [u8; 2] = [0x00, 0x02];

pub(super) fn projected(item: &Item) -> StoreResult<Vec<u8>> {
    let mut row = PROJECTED.to_vec();
    row.extend(encode_item(item)?);
    Ok(row)
}

// ---------------------------------------------------------------------------------------
// Key encoding

pub(super) fn push_component(out: &mut Vec<u8>, s: &str) {
    push_escaped(out, s);
    out.extend_from_slice(&[0x00, 0x01]);
}

pub(super) fn push_escaped(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        if b == 0 {
            out.extend_from_slice(&[0x00, 0xFF]);
        } else {
            out.push(b);
        }
    }
}

pub(super) fn encode_key(parts: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        push_component(&mut out, p);
    }
    out
}

#[cfg(test)]
pub(super) fn table_key(k: &PrimaryKey) -> Vec<u8> {
    encode_key(&[&k.pk, &k.sk])
}

/// A key component of type `ty` as it sorts (a value that is no number, refused before it
/// gets here by validation, as itself).
fn sorted(ty: KeyType, text: &str) -> std::borrow::Cow<'_, str> {
    ty.sortable(text)
        .unwrap_or(std::borrow::Cow::Borrowed(text))
}

/// The row key of the item at `k` in a table of `schema`: its keys as their types sort.
pub(super) fn row_key(schema: &TableSchema, k: &PrimaryKey) -> Vec<u8> {
    encode_key(&[
        &sorted(schema.pk_type, &k.pk),
        &sorted(schema.sk_type, &k.sk),
    ])
}

/// The row key of an index row: the index key (every partition value, then every sort
/// value), then the table key, as their types sort.
pub(super) fn index_row_key(
    schema: &TableSchema,
    index: &IndexSchema,
    ik: &IndexKey,
    k: &PrimaryKey,
) -> Vec<u8> {
    let mut parts: Vec<std::borrow::Cow<'_, str>> = index
        .partition_attributes()
        .into_iter()
        .zip(ik.partition_values())
        .map(|((_, ty), v)| sorted(ty, v))
        .collect();
    let sorts = index.sort_attributes();
    if sorts.is_empty() {
        // Keyed by its partition alone: an empty sort component, as it always was.
        parts.push(std::borrow::Cow::Borrowed(""));
    }
    parts.extend(
        sorts
            .into_iter()
            .zip(ik.sort_values())
            .map(|((_, ty), v)| sorted(ty, v)),
    );
    parts.push(sorted(schema.pk_type, &k.pk));
    parts.push(sorted(schema.sk_type, &k.sk));
    let parts: Vec<&str> = parts.iter().map(|p| p.as_ref()).collect();
    encode_key(&parts)
}

/// [`key_range`] of a partition and sort condition whose values are of these types.
pub(super) fn typed_key_range(
    pk_type: KeyType,
    sk_type: KeyType,
    partition: &str,
    sort: Option<&SortCondition>,
) -> (Vec<u8>, Vec<u8>) {
    key_range(
        &[&sorted(pk_type, partition)],
        typed_sort(sk_type, sort).as_ref(),
    )
}

/// The range of an index of a multi-attribute key a Query reads: its partition values,
/// the sort values it holds equal, then its condition on the next sort attribute.
pub(super) fn multi_key_range(
    index: &IndexSchema,
    partition: &[&str],
    sort_prefix: &[String],
    sort: Option<&SortCondition>,
) -> (Vec<u8>, Vec<u8>) {
    let sorts = index.sort_attributes();
    let fixed: Vec<std::borrow::Cow<'_, str>> = index
        .partition_attributes()
        .into_iter()
        .zip(partition)
        .map(|((_, ty), v)| sorted(ty, v))
        .chain(
            sorts
                .iter()
                .zip(sort_prefix)
                .map(|((_, ty), v)| sorted(*ty, v)),
        )
        .collect();
    let fixed: Vec<&str> = fixed.iter().map(|p| p.as_ref()).collect();
    let next = sorts.get(sort_prefix.len()).map_or(KeyType::S, |(_, t)| *t);
    key_range(&fixed, typed_sort(next, sort).as_ref())
}

/// A sort condition's values as their type sorts (a value that is no number, refused
/// before it gets here by validation, as itself).
fn typed_sort(sk_type: KeyType, sort: Option<&SortCondition>) -> Option<SortCondition> {
    sort.map(|c| c.sortable(sk_type).unwrap_or_else(|| c.clone()))
}

/// Decodes the components of an encoded key.
#[cfg(test)]
pub(super) fn decode_key(mut bytes: &[u8]) -> StoreResult<Vec<String>> {
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

/// The byte range of one partition (and, on a multi-attribute key, of the sort values held
/// equal: the components `fixed`) under a condition on the next sort component.
pub(super) fn key_range(fixed: &[&str], sort: Option<&SortCondition>) -> (Vec<u8>, Vec<u8>) {
    let p = encode_key(fixed);
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

/// The first byte of an item stored in the binary encoding ([`FORMAT`] 2): a JSON item
/// (format 1) always starts with `{`.
pub(super) const BINARY_ITEM: u8 = 0x02;

/// An attribute value as stored: postcard (variant index, varint lengths) of
/// [`StoredRef`], the mirror of [`AttributeValue`]. Decoded straight into the item's map
/// ([`StoredItem`], [`StoredValue`]), its strings built once, with none of JSON's escapes
/// and type tags to scan; the stored item is about half its JSON.
pub(super) const STORED_VARIANTS: [&str; 10] =
    ["N", "S", "Bool", "B", "Null", "M", "L", "Ss", "Ns", "Bs"];

/// A stored item (a sequence of name and [`StoredValue`]) decoded into an [`Item`].
pub(super) struct StoredItem(Item);

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
pub(super) struct StoredValue(AttributeValue);

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
pub(super) enum StoredRef<'a> {
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

pub(super) fn encode_item(item: &Item) -> StoreResult<Vec<u8>> {
    let fields: Vec<(&str, StoredRef<'_>)> =
        item.iter().map(|(k, v)| (k.as_str(), v.into())).collect();
    let mut out = vec![BINARY_ITEM];
    postcard::to_io(&fields, &mut out).map_err(internal)?;
    Ok(out)
}

/// An item in either encoding: the binary one, or the JSON of format 1 (a file being
/// migrated, or an index row written before).
pub(super) fn decode_item(bytes: &[u8]) -> StoreResult<Item> {
    match bytes.split_first() {
        Some((&BINARY_ITEM, rest)) => {
            let StoredItem(item) = postcard::from_bytes(rest).map_err(internal)?;
            Ok(item)
        }
        _ => serde_json::from_slice(bytes).map_err(internal),
    }
}

pub(super) fn meta_row(table: &str, time_to_live: Option<&str>, indexes: &[&str]) -> Vec<u8> {
    let mut row = serde_json::json!({ "name": table, "status": "ACTIVE", "indexes": indexes });
    if let Some(attr) = time_to_live {
        row["timeToLive"] = serde_json::json!({ "attributeName": attr, "enabled": true });
    }
    row.to_string().into_bytes()
}

/// A table's meta row with `field` set to `value`, its other fields kept.
pub(super) fn meta_with(row: &[u8], field: &str, value: serde_json::Value) -> Vec<u8> {
    let mut row: serde_json::Value =
        serde_json::from_slice(row).unwrap_or_else(|_| serde_json::json!({}));
    row[field] = value;
    row.to_string().into_bytes()
}

/// The indexes a table's meta row says are filled; `None` for a row from before they
/// were kept (its index tables are the filled ones).
pub(super) fn meta_indexes(row: &[u8]) -> Option<Vec<String>> {
    let row: serde_json::Value = serde_json::from_slice(row).ok()?;
    row.get("indexes")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// The attribute a table's meta row says its Time to Live reads, when it is on.
pub(super) fn meta_time_to_live(row: &[u8]) -> Option<String> {
    let row: serde_json::Value = serde_json::from_slice(row).ok()?;
    let ttl = row.get("timeToLive")?;
    if ttl.get("enabled")?.as_bool()? {
        ttl.get("attributeName")?.as_str().map(str::to_owned)
    } else {
        None
    }
}
