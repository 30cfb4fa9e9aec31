//! The requests DynamoDB rejects with `ValidationException`, checked once for both engines.
//!
//! The [`Validated`](super::validated::Validated) decorator, which every engine's handle
//! is, calls these before the engine does any work, so both refuse a bad request with the
//! same [`StoreError::Validation`] message. The messages follow DynamoDB's own wording; the
//! contract tests send the same raw requests to DynamoDB Local and check that it rejects
//! them too, which keeps this module from refusing anything DynamoDB accepts.

use std::collections::HashSet;

use super::value::{check_number, compare, item_size, parse_number, type_name};
use super::{
    AttributeValue, BatchGet, BatchWrite, BatchWriteRequest, CmpOp, Condition, Delete, GetItem,
    Item, KeyType, PageKey, PrimaryKey, Put, Query, ReturnValues, Scan, ScanSegment, SetValue,
    SortCondition, StoreError, StoreResult, TableSchema, TransactAction, Update,
};

/// DynamoDB's item size limit (400 KB).
pub const MAX_ITEM_SIZE: usize = 400 * 1024;
/// Partition key values are at most 2048 bytes.
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;
/// Sort key values are at most 1024 bytes.
pub const MAX_SORT_KEY_BYTES: usize = 1024;
/// BatchGetItem takes at most 100 keys.
pub const MAX_BATCH_GET_KEYS: usize = 100;
/// BatchWriteItem takes at most 25 requests.
pub const MAX_BATCH_WRITE_REQUESTS: usize = 25;
/// BatchWriteItem carries at most 16 MB of items.
pub const MAX_BATCH_WRITE_BYTES: usize = 16 * 1024 * 1024;
/// TransactWriteItems takes at most 100 actions.
pub const MAX_TRANSACT_ACTIONS: usize = 100;
/// TransactWriteItems carries at most 4 MB of items.
pub const MAX_TRANSACT_BYTES: usize = 4 * 1024 * 1024;
/// Query reads at most 1 MB of items before it returns a page.
pub const MAX_QUERY_PAGE_BYTES: usize = 1024 * 1024;

/// A table or index name as DynamoDB takes it: 3 to 255 characters of `a-z`, `A-Z`,
/// `0-9`, `_`, `-` and `.`. Checked when the server starts (`--table`), so a name DynamoDB
/// would refuse is refused there, naming the flag, on both engines alike.
pub fn table_or_index_name(name: &str) -> Result<(), String> {
    if !(3..=255).contains(&name.len()) {
        return Err(format!(
            "`{}` is {} characters long: DynamoDB takes table and index names of 3 to 255",
            name.escape_debug(),
            name.chars().count()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "`{}` holds `{}`: DynamoDB takes table and index names of a-z, A-Z, 0-9, `_`, `-` and `.` only",
            name.escape_debug(),
            c.escape_debug()
        ));
    }
    Ok(())
}

fn invalid(msg: impl Into<String>) -> StoreError {
    StoreError::Validation(msg.into())
}

/// A key value of type `ty`: a string within the limits, or a number.
fn typed_key_value(attr: &str, ty: KeyType, value: &str, max: usize) -> StoreResult<()> {
    if ty == KeyType::N {
        return check_number(value).map_err(|_| {
            invalid(format!(
                "One or more parameter values were invalid: Type mismatch for key {attr} expected: N actual: S"
            ))
        });
    }
    if value.is_empty() {
        return Err(invalid(format!(
            "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: {attr}"
        )));
    }
    if value.len() > max {
        return Err(invalid(if max == MAX_PARTITION_KEY_BYTES {
            format!("One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of {max} bytes (key {attr})")
        } else {
            format!("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of {max} bytes (key {attr})")
        }));
    }
    Ok(())
}

/// A base-table key: both parts non-empty and within DynamoDB's key length limits.
pub fn primary_key(schema: &TableSchema, pk: &str, sk: &str) -> StoreResult<()> {
    typed_key_value(&schema.pk, schema.pk_type, pk, MAX_PARTITION_KEY_BYTES)?;
    match &schema.sk {
        Some(attr) => typed_key_value(attr, schema.sk_type, sk, MAX_SORT_KEY_BYTES),
        // A simple primary key: a sort key given is one the table does not have.
        None if sk.is_empty() => Ok(()),
        None => Err(invalid(
            "The provided key element does not match the schema",
        )),
    }
}

/// One attribute value: numbers parse, sets are non-empty and free of duplicates.
pub fn value(v: &AttributeValue) -> StoreResult<()> {
    match v {
        AttributeValue::N(n) => check_number(n).map_err(invalid),
        AttributeValue::Ns(ns) => {
            non_empty_set(ns.len(), "number")?;
            let mut seen = HashSet::new();
            for n in ns {
                let d = parse_number(n).map_err(invalid)?;
                if !seen.insert(d) {
                    return Err(invalid(format!(
                        "Input collection {ns:?} contains duplicates."
                    )));
                }
            }
            Ok(())
        }
        AttributeValue::Ss(ss) => {
            non_empty_set(ss.len(), "string")?;
            no_duplicates(ss)
        }
        AttributeValue::Bs(bs) => {
            non_empty_set(bs.len(), "binary")?;
            no_duplicates(bs)
        }
        AttributeValue::L(l) => l.iter().try_for_each(value),
        AttributeValue::M(m) => m.values().try_for_each(value),
        _ => Ok(()),
    }
}

fn non_empty_set(len: usize, kind: &str) -> StoreResult<()> {
    if len == 0 {
        return Err(invalid(format!(
            "One or more parameter values were invalid: An {kind} set  may not be empty"
        )));
    }
    Ok(())
}

fn no_duplicates<T: std::hash::Hash + Eq + std::fmt::Debug>(xs: &[T]) -> StoreResult<()> {
    let mut seen = HashSet::new();
    if xs.iter().all(|x| seen.insert(x)) {
        Ok(())
    } else {
        Err(invalid(format!(
            "Input collection {xs:?} contains duplicates."
        )))
    }
}

fn attribute_name(name: &str) -> StoreResult<()> {
    if name.is_empty() {
        return Err(invalid(
            "ExpressionAttributeNames contains invalid value: Empty attribute name",
        ));
    }
    Ok(())
}

/// A whole item as PutItem would store it, or as an update leaves it.
pub fn item(schema: &TableSchema, item: &Item) -> StoreResult<()> {
    let keys = std::iter::once((&schema.pk, schema.pk_type))
        .chain(schema.sk.as_ref().map(|sk| (sk, schema.sk_type)));
    for (attr, ty) in keys {
        match item.get(attr) {
            None => {
                return Err(invalid(format!(
                    "One or more parameter values were invalid: Missing the key {attr} in the item"
                )))
            }
            Some(v) if ty.text(v).is_some() => {}
            Some(other) => {
                return Err(invalid(format!(
                    "One or more parameter values were invalid: Type mismatch for key {attr} expected: {} actual: {}",
                    ty.as_str(),
                    type_name(other)
                )))
            }
        }
    }
    let key = schema.key_of(item).expect("key attributes checked above");
    primary_key(schema, &key.pk, &key.sk)?;
    index_keys(schema, item)?;
    for (name, v) in item {
        attribute_name(name)?;
        value(v)?;
    }
    item_within_size(item)
}

/// Index key attributes, where present, are non-empty strings within the key limits.
pub fn index_keys(schema: &TableSchema, item: &Item) -> StoreResult<()> {
    for index in &schema.indexes {
        let keys = index
            .partition_attributes()
            .into_iter()
            .map(|(a, t)| (a, t, MAX_PARTITION_KEY_BYTES))
            .chain(
                index
                    .sort_attributes()
                    .into_iter()
                    .map(|(a, t)| (a, t, MAX_SORT_KEY_BYTES)),
            );
        for (attr, ty, max) in keys {
            match item.get(attr) {
                None => {}
                Some(AttributeValue::S(s)) if ty == KeyType::S && s.is_empty() => {
                    return Err(invalid(format!(
                        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: {}, IndexKey: {attr}",
                        index.name
                    )))
                }
                Some(v) if ty.text(v).is_some() => {
                    typed_key_value(attr, ty, ty.text(v).unwrap_or_default(), max)?
                }
                Some(other) => {
                    return Err(invalid(format!(
                        "One or more parameter values were invalid: Type mismatch for Index Key {attr} Expected: {} Actual: {} IndexName: {}",
                        ty.as_str(),
                        type_name(other),
                        index.name
                    )))
                }
            }
        }
    }
    Ok(())
}

/// The 400 KB item limit.
pub fn item_within_size(item: &Item) -> StoreResult<()> {
    if item_size(item) > MAX_ITEM_SIZE {
        return Err(invalid("Item size has exceeded the maximum allowed size"));
    }
    Ok(())
}

/// A condition expression: names non-empty, values valid, no empty AND/OR.
pub fn condition(c: &Condition) -> StoreResult<()> {
    match c {
        Condition::Exists(a) | Condition::NotExists(a) => attribute_name(a),
        Condition::Cmp(a, op, v) => {
            attribute_name(a)?;
            value(v)?;
            let symbol = match op {
                CmpOp::Eq | CmpOp::Ne => return Ok(()),
                CmpOp::Lt => "<",
                CmpOp::Le => "<=",
                CmpOp::Gt => ">",
                CmpOp::Ge => ">=",
            };
            ordered_operand(symbol, v)
        }
        Condition::Between(a, lo, hi) => {
            attribute_name(a)?;
            value(lo)?;
            value(hi)?;
            ordered_operand("BETWEEN", lo)?;
            ordered_operand("BETWEEN", hi)?;
            match compare(lo, hi) {
                None => Err(invalid(format!(
                    "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {{{}}}, upper bound operand: AttributeValue: {{{}}}",
                    type_name(lo), type_name(hi)
                ))),
                Some(std::cmp::Ordering::Greater) => Err(invalid(
                    "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound",
                )),
                Some(_) => Ok(()),
            }
        }
        Condition::BeginsWith(a, _) | Condition::Size(a, ..) => attribute_name(a),
        Condition::EntryExists(m, k) => {
            attribute_name(m)?;
            if k.is_empty() {
                return Err(invalid(
                    "ExpressionAttributeNames contains invalid value: Empty attribute name",
                ));
            }
            Ok(())
        }
        Condition::And(cs) | Condition::Or(cs) => {
            if cs.is_empty() {
                return Err(invalid(
                    "Invalid ConditionExpression: The expression can not be empty;",
                ));
            }
            cs.iter().try_for_each(condition)
        }
        Condition::Not(c) => condition(c),
    }
}

/// Ordering operators take strings, numbers and binaries only.
fn ordered_operand(symbol: &str, v: &AttributeValue) -> StoreResult<()> {
    match v {
        AttributeValue::S(_) | AttributeValue::N(_) | AttributeValue::B(_) => Ok(()),
        other => Err(invalid(format!(
            "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: {symbol}, operand type: {}",
            type_name(other)
        ))),
    }
}

fn optional_condition(c: &Option<Condition>) -> StoreResult<()> {
    c.as_ref().map_or(Ok(()), condition)
}

pub fn get_item(schema: &TableSchema, req: &GetItem) -> StoreResult<()> {
    primary_key(schema, &req.key.pk, &req.key.sk)
}

/// 1 to 100 keys, each valid, none repeated.
pub fn batch_get(schema: &TableSchema, req: &BatchGet) -> StoreResult<()> {
    batch_get_tables(&[(schema, req.keys.as_slice())])
}

/// BatchGetItem over several tables (each table's schema and keys): 1 to 100 keys in all,
/// each table's at least one, valid for its table, none twice.
pub fn batch_get_tables(tables: &[(&TableSchema, &[PrimaryKey])]) -> StoreResult<()> {
    if tables.is_empty() || tables.iter().any(|(_, keys)| keys.is_empty()) {
        return Err(invalid("1 validation error detected: Value at 'requestItems.1.member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1"));
    }
    if tables.iter().map(|(_, keys)| keys.len()).sum::<usize>() > MAX_BATCH_GET_KEYS {
        return Err(invalid(
            "Too many items requested for the BatchGetItem call",
        ));
    }
    for (schema, keys) in tables {
        let mut seen = HashSet::new();
        for k in *keys {
            primary_key(schema, &k.pk, &k.sk)?;
            if !seen.insert(k) {
                return Err(invalid("Provided list of item keys contains duplicates"));
            }
        }
    }
    Ok(())
}

/// BatchWriteItem: 1 to 25 requests, each a valid item or key, no two on one item, at
/// most 16 MB in all.
pub fn batch_write(schema: &TableSchema, req: &BatchWrite) -> StoreResult<()> {
    if req.requests.is_empty() {
        return Err(invalid("1 validation error detected: Value at 'requestItems.1.member' failed to satisfy constraint: Member must have length greater than or equal to 1"));
    }
    if req.requests.len() > MAX_BATCH_WRITE_REQUESTS {
        return Err(invalid(format!(
            "1 validation error detected: Value at 'requestItems.1.member' failed to satisfy constraint: Member must have length less than or equal to {MAX_BATCH_WRITE_REQUESTS}"
        )));
    }
    let mut seen = HashSet::new();
    let mut bytes = 0;
    for r in &req.requests {
        let key = match r {
            BatchWriteRequest::Put(i) => {
                item(schema, i)?;
                bytes += item_size(i);
                schema.key_of(i)
            }
            BatchWriteRequest::Delete(k) => {
                primary_key(schema, &k.pk, &k.sk)?;
                Some(k.clone())
            }
        };
        if let Some(key) = key {
            if !seen.insert(key) {
                return Err(invalid("Provided list of item keys contains duplicates"));
            }
        }
    }
    if bytes > MAX_BATCH_WRITE_BYTES {
        return Err(invalid(
            "Item collection size limit exceeded: a BatchWriteItem carries at most 16 MB",
        ));
    }
    Ok(())
}

pub fn query(schema: &TableSchema, q: &Query) -> StoreResult<()> {
    let (partition, sorts) = match &q.index {
        None => (
            vec![(schema.pk.as_str(), schema.pk_type)],
            schema
                .sk
                .as_deref()
                .map(|sk| (sk, schema.sk_type))
                .into_iter()
                .collect::<Vec<_>>(),
        ),
        Some(name) => {
            let Some(index) = schema.index(name) else {
                return Err(invalid(format!(
                    "The table does not have the specified index: {name}"
                )));
            };
            if q.consistent_read {
                return Err(invalid(
                    "Consistent reads are not supported on global secondary indexes",
                ));
            }
            (index.partition_attributes(), index.sort_attributes())
        }
    };
    // A multi-attribute key: every partition attribute equal, and a condition on a sort
    // attribute only after equalities on each one before it.
    if q.partition_more.len() + 1 != partition.len() {
        let missing: Vec<&str> = partition
            .iter()
            .skip(q.partition_more.len() + 1)
            .map(|(a, _)| *a)
            .collect();
        return Err(invalid(format!(
            "HASH key attributes {} must have equality conditions specified in the query",
            missing.join(", ")
        )));
    }
    // Equalities before the sort attribute `sort` compares: fewer than the key's sort
    // attributes (the last one given is `sort`'s, so none on a key of one sort attribute).
    if !q.sort_prefix.is_empty() && q.sort_prefix.len() >= sorts.len() {
        return Err(invalid(
            "Query condition missed key schema element: more sort conditions than the key has sort attributes",
        ));
    }
    let values = std::iter::once(&q.partition).chain(&q.partition_more);
    for ((attr, ty), v) in partition.iter().zip(values) {
        typed_key_value(attr, *ty, v, MAX_PARTITION_KEY_BYTES)?;
    }
    for ((attr, ty), v) in sorts.iter().zip(&q.sort_prefix) {
        typed_key_value(attr, *ty, v, MAX_SORT_KEY_BYTES)?;
    }
    let sk_attr = sorts.get(q.sort_prefix.len()).copied();
    if q.limit == Some(0) {
        return Err(invalid("1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"));
    }
    if let Some(sort) = &q.sort {
        let Some((sk_attr, sk_type)) = sk_attr else {
            return Err(invalid(
                "Query condition missed key schema element: the table or index has no sort key",
            ));
        };
        if sk_type == KeyType::N && matches!(sort, SortCondition::BeginsWith(_)) {
            return Err(invalid("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"));
        }
        let values: Vec<&String> = match sort {
            SortCondition::Eq(v)
            | SortCondition::Lt(v)
            | SortCondition::Le(v)
            | SortCondition::Gt(v)
            | SortCondition::Ge(v)
            | SortCondition::BeginsWith(v) => vec![v],
            SortCondition::Between(lo, hi) => vec![lo, hi],
        };
        for v in &values {
            typed_key_value(sk_attr, sk_type, v, MAX_SORT_KEY_BYTES)?;
        }
        if let SortCondition::Between(lo, hi) = sort {
            if sk_type.sortable(lo) > sk_type.sortable(hi) {
                return Err(invalid(format!(
                    "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {{S:{lo}}}, upper bound operand: AttributeValue: {{S:{hi}}}"
                )));
            }
        }
    }
    if let Some(start) = &q.start {
        start_key(schema, q, start)?;
    }
    Ok(())
}

/// Limit at least 1; a start key is a base-table key; a segment within 0..TotalSegments,
/// TotalSegments within 1..=1,000,000.
pub fn scan(schema: &TableSchema, s: &Scan) -> StoreResult<()> {
    if s.limit == Some(0) {
        return Err(invalid("1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"));
    }
    if let Some(seg) = s.segment {
        if seg.total == 0 || seg.total > ScanSegment::MAX_TOTAL {
            return Err(invalid(format!("1 validation error detected: Value '{}' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000 and greater than or equal to 1", seg.total)));
        }
        if seg.index >= seg.total {
            return Err(invalid(format!(
                "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: {} is not less than TotalSegments: {}",
                seg.index, seg.total
            )));
        }
    }
    if let Some(name) = &s.index {
        if schema.index(name).is_none() {
            return Err(invalid(format!(
                "The table does not have the specified index: {name}"
            )));
        }
        if s.consistent_read {
            return Err(invalid(
                "Consistent reads are not supported on global secondary indexes",
            ));
        }
    }
    if let Some(start) = &s.start {
        if start.index.is_some() != s.index.is_some()
            || primary_key(schema, &start.table.pk, &start.table.sk).is_err()
        {
            return Err(invalid("The provided starting key is invalid: The provided key element does not match the schema"));
        }
    }
    optional_condition(&s.filter)
}

fn start_key(schema: &TableSchema, q: &Query, start: &PageKey) -> StoreResult<()> {
    let bad = || {
        invalid("The provided starting key is invalid: The provided key element does not match the schema")
    };
    primary_key(schema, &start.table.pk, &start.table.sk).map_err(|_| bad())?;
    let outside = || {
        invalid(
            "The provided starting key is outside query boundaries based on provided conditions",
        )
    };
    let (sort, sk_type) = match (&q.index, &start.index) {
        (None, None) => {
            if start.table.pk != q.partition {
                return Err(outside());
            }
            (start.table.sk.clone(), schema.sk_type)
        }
        (Some(name), Some(ik)) => {
            let Some(index) = schema.index(name) else {
                return Err(bad());
            };
            let sorts = index.sort_attributes();
            if ik.pk.is_empty()
                || ik.pk_more.len() != index.pk_more.len()
                || ik.sort_values().count() != sorts.len()
            {
                return Err(bad());
            }
            let given = std::iter::once(&q.partition).chain(&q.partition_more);
            let same = index
                .partition_attributes()
                .iter()
                .zip(ik.partition_values().zip(given))
                .all(|((_, ty), (have, want))| ty.sortable(have) == ty.sortable(want));
            if !same {
                return Err(outside());
            }
            // Equal on the sort prefix the query fixes, then the condition on the next.
            let values: Vec<&str> = ik.sort_values().collect();
            let n = q.sort_prefix.len();
            let prefix_equal = sorts
                .iter()
                .zip(values.iter().zip(&q.sort_prefix))
                .all(|((_, ty), (v, want))| ty.sortable(v) == ty.sortable(want));
            if !prefix_equal {
                return Err(invalid(
                    "The provided starting key does not match the range key predicate",
                ));
            }
            match sorts.get(n) {
                Some((_, ty)) => (values[n].to_owned(), *ty),
                None => (String::new(), KeyType::S),
            }
        }
        _ => return Err(bad()),
    };
    if let Some(cond) = &q.sort {
        if !sort_matches_typed(cond, &sort, sk_type) {
            return Err(invalid(
                "The provided starting key does not match the range key predicate",
            ));
        }
    }
    Ok(())
}

/// Whether a sort key value of type `ty` satisfies a key condition, values compared as
/// that type orders them (a number by value; `begins_with` on the text).
pub fn sort_matches_typed(cond: &SortCondition, sk: &str, ty: KeyType) -> bool {
    cond.sortable(ty)
        .zip(ty.sortable(sk))
        .is_some_and(|(c, s)| sort_matches(&c, &s))
}

/// Whether a sort key value satisfies a key condition (UTF-8 byte order).
pub fn sort_matches(cond: &SortCondition, sk: &str) -> bool {
    let s = sk.as_bytes();
    match cond {
        SortCondition::Eq(v) => s == v.as_bytes(),
        SortCondition::Lt(v) => s < v.as_bytes(),
        SortCondition::Le(v) => s <= v.as_bytes(),
        SortCondition::Gt(v) => s > v.as_bytes(),
        SortCondition::Ge(v) => s >= v.as_bytes(),
        SortCondition::Between(lo, hi) => s >= lo.as_bytes() && s <= hi.as_bytes(),
        SortCondition::BeginsWith(p) => s.starts_with(p.as_bytes()),
    }
}

pub fn put(schema: &TableSchema, p: &Put) -> StoreResult<()> {
    item(schema, &p.item)?;
    optional_condition(&p.condition)
}

/// An update: key valid, no key attribute touched, no attribute named twice, ADD on
/// numbers or sets only.
pub fn update(schema: &TableSchema, u: &Update) -> StoreResult<()> {
    primary_key(schema, &u.key.pk, &u.key.sk)?;
    optional_condition(&u.condition)?;
    let e = &u.update;
    let names = e
        .set
        .iter()
        .map(|(a, _)| a)
        .chain(&e.remove)
        .chain(e.add.iter().map(|(a, _)| a));
    let mut seen = HashSet::new();
    for name in names {
        attribute_name(name)?;
        if *name == schema.pk || schema.sk.as_ref() == Some(name) {
            return Err(invalid(format!(
                "One or more parameter values were invalid: Cannot update attribute {name}. This attribute is part of the key"
            )));
        }
        if !seen.insert(name) {
            return Err(invalid(format!(
                "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [{name}], path two: [{name}]"
            )));
        }
    }
    // An entry's path overlaps its map's, and another on the same entry.
    let mut entries = HashSet::new();
    let entry_paths = e
        .set_entry
        .iter()
        .map(|(m, k, _)| (m, k))
        .chain(e.remove_entry.iter().map(|(m, k)| (m, k)));
    for (m, k) in entry_paths {
        attribute_name(m)?;
        if k.is_empty() {
            return Err(invalid(
                "ExpressionAttributeNames contains invalid value: Empty attribute name",
            ));
        }
        if schema.is_key_attribute(m) {
            return Err(invalid(format!(
                "One or more parameter values were invalid: Cannot update attribute {m}. This attribute is part of the key"
            )));
        }
        if seen.contains(m) || !entries.insert((m, k)) {
            return Err(invalid(format!(
                "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [{m}], path two: [{m}, {k}]"
            )));
        }
    }
    for (_, _, v) in &e.set_entry {
        value(v)?;
    }
    for (attr, set) in &e.set {
        let (SetValue::Value(v) | SetValue::IfNotExists(v)) = set;
        value(v)?;
        let probe: Item = [(attr.clone(), v.clone())].into();
        index_keys(schema, &probe)?;
    }
    for (attr, v) in &e.add {
        value(v)?;
        if schema.is_key_attribute(attr) {
            // ADD takes numbers and sets; index keys are strings.
            return Err(invalid(format!(
                "One or more parameter values were invalid: Type mismatch for Index Key {attr}"
            )));
        }
        if !matches!(
            v,
            AttributeValue::N(_)
                | AttributeValue::Ss(_)
                | AttributeValue::Ns(_)
                | AttributeValue::Bs(_)
        ) {
            return Err(invalid(format!(
                "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: {}",
                type_name(v)
            )));
        }
    }
    Ok(())
}

pub fn delete(schema: &TableSchema, d: &Delete) -> StoreResult<()> {
    primary_key(schema, &d.key.pk, &d.key.sk)?;
    if d.returns == ReturnValues::AllNew {
        return Err(invalid("Return values set to invalid value"));
    }
    optional_condition(&d.condition)
}

/// 1 to 100 actions, each valid, no two on the same item, at most 4 MB in all.
pub fn transact(schema: &TableSchema, actions: &[TransactAction]) -> StoreResult<()> {
    let on: Vec<_> = actions.iter().map(|a| (schema, "", a)).collect();
    transact_tables(&on)
}

/// TransactWriteItems over several tables (each action with its table's schema and name):
/// 1 to 100 actions in all, each valid for its table, no two on one item of one table, at
/// most 4 MB of items.
pub fn transact_tables(actions: &[(&TableSchema, &str, &TransactAction)]) -> StoreResult<()> {
    if actions.is_empty() {
        return Err(invalid("1 validation error detected: Value null at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1"));
    }
    if actions.len() > MAX_TRANSACT_ACTIONS {
        return Err(invalid(format!("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to {MAX_TRANSACT_ACTIONS}")));
    }
    let mut seen = HashSet::new();
    let mut bytes = 0;
    for (schema, table, action) in actions {
        match action {
            TransactAction::Put(p) => {
                put(schema, p)?;
                bytes += item_size(&p.item);
            }
            TransactAction::Update(u) => {
                update(schema, u)?;
                if u.update.is_empty() {
                    // Unlike UpdateItem, a transaction's Update requires an expression.
                    return Err(invalid("1 validation error detected: Value null at 'transactItems.member.update.updateExpression' failed to satisfy constraint: Member must not be null"));
                }
            }
            TransactAction::Delete(d) => delete(schema, d)?,
            TransactAction::ConditionCheck(c) => {
                primary_key(schema, &c.key.pk, &c.key.sk)?;
                condition(&c.condition)?;
            }
        }
        let key = action.key(schema).expect("validated above");
        if !seen.insert((*table, key)) {
            return Err(invalid(
                "Transaction request cannot include multiple operations on one item",
            ));
        }
    }
    if bytes > MAX_TRANSACT_BYTES {
        return Err(invalid(
            "Transaction request size exceeds the maximum of 4 MB",
        ));
    }
    Ok(())
}
