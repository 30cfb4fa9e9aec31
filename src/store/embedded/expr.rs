//! Condition and update expressions, evaluated against the stored item as DynamoDB
//! evaluates them.

use crate::store::validate::{self};
use crate::store::value::{self, canonicalize, item_size};
use crate::store::{
    AttributeValue, CmpOp, Condition, Item, PrimaryKey, SetValue, TableSchema, UpdateExpr,
};

pub(super) fn attr<'a>(item: Option<&'a Item>, name: &str) -> Option<&'a AttributeValue> {
    item.and_then(|i| i.get(name))
}

/// Evaluates a condition expression the way DynamoDB does: a missing attribute or a type
/// mismatch makes a comparison false, except `<>`, which is then true.
pub(crate) fn eval(c: &Condition, item: Option<&Item>) -> bool {
    use std::cmp::Ordering::*;
    match c {
        Condition::Exists(a) => attr(item, a).is_some(),
        Condition::NotExists(a) => attr(item, a).is_none(),
        Condition::Cmp(a, op, v) => {
            let Some(x) = attr(item, a) else {
                return *op == CmpOp::Ne;
            };
            match op {
                CmpOp::Eq => value::equal(x, v),
                CmpOp::Ne => !value::equal(x, v),
                CmpOp::Lt => value::compare(x, v) == Some(Less),
                CmpOp::Le => matches!(value::compare(x, v), Some(Less | Equal)),
                CmpOp::Gt => value::compare(x, v) == Some(Greater),
                CmpOp::Ge => matches!(value::compare(x, v), Some(Greater | Equal)),
            }
        }
        Condition::Between(a, lo, hi) => attr(item, a).is_some_and(|x| {
            matches!(value::compare(x, lo), Some(Greater | Equal))
                && matches!(value::compare(x, hi), Some(Less | Equal))
        }),
        Condition::BeginsWith(a, p) => {
            matches!(attr(item, a), Some(AttributeValue::S(s)) if s.starts_with(p.as_str()))
        }
        Condition::EntryExists(m, k) => {
            matches!(attr(item, m), Some(AttributeValue::M(entries)) if entries.contains_key(k))
        }
        Condition::Size(a, op, n) => {
            let size = match attr(item, a) {
                Some(AttributeValue::M(m)) => m.len(),
                Some(AttributeValue::L(l)) => l.len(),
                Some(AttributeValue::Ss(s) | AttributeValue::Ns(s)) => s.len(),
                Some(AttributeValue::Bs(s)) => s.len(),
                Some(AttributeValue::S(s)) => s.len(),
                Some(AttributeValue::B(b)) => b.len(),
                // No size: the comparison is false, as any on a missing attribute.
                _ => return false,
            };
            let size = i64::try_from(size).unwrap_or(i64::MAX);
            match op {
                CmpOp::Eq => size == *n,
                CmpOp::Ne => size != *n,
                CmpOp::Lt => size < *n,
                CmpOp::Le => size <= *n,
                CmpOp::Gt => size > *n,
                CmpOp::Ge => size >= *n,
            }
        }
        Condition::And(cs) => cs.iter().all(|c| eval(c, item)),
        Condition::Or(cs) => cs.iter().any(|c| eval(c, item)),
        Condition::Not(c) => !eval(c, item),
    }
}

/// DynamoDB's refusal of a path into a map that is not there.
const INVALID_PATH: &str =
    "The document path provided in the update expression is invalid for update";

/// Applies an update expression to the current item (or to a new item holding only the
/// key), as UpdateItem does. Errors are those DynamoDB only finds against stored data.
pub(super) fn apply_update(
    schema: &TableSchema,
    key: &PrimaryKey,
    old: Option<&Item>,
    e: &UpdateExpr,
) -> Result<Item, String> {
    let mut item = old.cloned().unwrap_or_else(|| {
        schema
            .key_attributes(key)
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v))
            .collect()
    });
    for (a, set) in &e.set {
        let v = match set {
            SetValue::Value(v) => v.clone(),
            SetValue::IfNotExists(v) => match old.and_then(|o| o.get(a)) {
                Some(current) => current.clone(),
                None => v.clone(),
            },
        };
        item.insert(a.clone(), canonicalize(v));
    }
    for a in &e.remove {
        item.remove(a);
    }
    // An entry's path needs its map: DynamoDB refuses one whose map is not there.
    for (m, k, v) in &e.set_entry {
        match item.get_mut(m) {
            Some(AttributeValue::M(entries)) => {
                entries.insert(k.clone(), canonicalize(v.clone()));
            }
            _ => return Err(INVALID_PATH.into()),
        }
    }
    for (m, k) in &e.remove_entry {
        match item.get_mut(m) {
            Some(AttributeValue::M(entries)) => {
                entries.remove(k);
            }
            _ => return Err(INVALID_PATH.into()),
        }
    }
    for (a, v) in &e.add {
        let merged = match (item.get(a), v) {
            (None, v) => canonicalize(v.clone()),
            (Some(AttributeValue::N(x)), AttributeValue::N(y)) => {
                AttributeValue::N(value::add_numbers(x, y)?)
            }
            (Some(AttributeValue::Ss(x)), AttributeValue::Ss(y)) => {
                AttributeValue::Ss(union(x, y, |a, b| a == b))
            }
            (Some(AttributeValue::Bs(x)), AttributeValue::Bs(y)) => {
                AttributeValue::Bs(union(x, y, |a, b| a == b))
            }
            (Some(AttributeValue::Ns(x)), AttributeValue::Ns(y)) => {
                let y: Vec<String> = y
                    .iter()
                    .map(|n| value::canonical_text(n).unwrap_or_else(|| "0".into()))
                    .collect();
                AttributeValue::Ns(union(x, &y, |a, b| {
                    value::equal(&AttributeValue::N(a.clone()), &AttributeValue::N(b.clone()))
                }))
            }
            _ => {
                return Err("An operand in the update expression has an incorrect data type".into())
            }
        };
        item.insert(a.clone(), merged);
    }
    if item_size(&item) > validate::MAX_ITEM_SIZE {
        return Err("Item size to update has exceeded the maximum allowed size".into());
    }
    Ok(item)
}

pub(super) fn union<T: Clone>(x: &[T], y: &[T], eq: impl Fn(&T, &T) -> bool) -> Vec<T> {
    let mut out = x.to_vec();
    for v in y {
        if !out.iter().any(|o| eq(o, v)) {
            out.push(v.clone());
        }
    }
    out
}
