//! Items and expressions across the SDK boundary: the port's items to the SDK's and back,
//! and the port's condition, update and key-condition trees rendered into expression
//! strings with placeholders.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::ReturnValue;

use super::{SdkItem, SdkValue};
use crate::store::{
    AttributeValue, Condition, Item, KeyType, ReturnValues, SetValue, SortCondition, StoreError,
    StoreResult, UpdateExpr,
};

pub(super) fn return_value(r: ReturnValues) -> ReturnValue {
    match r {
        ReturnValues::None => ReturnValue::None,
        ReturnValues::AllOld => ReturnValue::AllOld,
        ReturnValues::AllNew => ReturnValue::AllNew,
    }
}

/// DynamoDB answers an empty map rather than nothing in some cases (no old item); the port
/// says `None` for "no item", and nothing at all unless the caller asked.
pub(super) fn returned(
    asked: ReturnValues,
    attributes: Option<SdkItem>,
) -> StoreResult<Option<Item>> {
    match (asked, attributes) {
        (ReturnValues::None, _) | (_, None) => Ok(None),
        (_, Some(a)) if a.is_empty() => Ok(None),
        (_, Some(a)) => from_sdk_item(a).map(Some),
    }
}

/// Value by value, the map built once (`serde_dynamo::Item`'s `From`/`Into` build it twice).
pub(super) fn to_sdk_item(item: Item) -> SdkItem {
    item.into_iter().map(|(k, v)| (k, v.into())).collect()
}

/// `serde_dynamo` panics on the SDK's `Unknown` variant (a type newer than this SDK);
/// a server must not, so such an item is an internal error instead.
pub(super) fn from_sdk_item(item: SdkItem) -> StoreResult<Item> {
    fn unknown(v: &SdkValue) -> bool {
        match v {
            SdkValue::L(l) => l.iter().any(unknown),
            SdkValue::M(m) => m.values().any(unknown),
            other => other.is_unknown(),
        }
    }
    if item.values().any(unknown) {
        return Err(StoreError::Internal(
            "DynamoDB returned an attribute type this SDK does not know".into(),
        ));
    }
    Ok(item.into_iter().map(|(k, v)| (k, v.into())).collect())
}

/// Renders one request's condition, update and key-condition trees into expression strings,
/// collecting `ExpressionAttributeNames` (`#n0`, `#n1` …, one per distinct attribute) and
/// `ExpressionAttributeValues` (`:v0`, `:v1` …, one per operand). Every name goes through a
/// placeholder, so reserved words (`Status`, `Name`, `Type` …) need no special casing.
#[derive(Debug, Default)]
pub(super) struct Expressions {
    pub(super) names: HashMap<String, String>,
    pub(super) placeholder_of: HashMap<String, String>,
    pub(super) values: HashMap<String, SdkValue>,
}

impl Expressions {
    pub(super) fn name(&mut self, attr: &str) -> String {
        if let Some(p) = self.placeholder_of.get(attr) {
            return p.clone();
        }
        let p = format!("#n{}", self.names.len());
        self.names.insert(p.clone(), attr.to_owned());
        self.placeholder_of.insert(attr.to_owned(), p.clone());
        p
    }

    pub(super) fn value(&mut self, v: &AttributeValue) -> String {
        let p = format!(":v{}", self.values.len());
        self.values.insert(p.clone(), v.clone().into());
        p
    }

    pub(super) fn string(&mut self, s: &str) -> String {
        self.value(&AttributeValue::S(s.to_owned()))
    }

    pub(super) fn condition(&mut self, c: &Condition) -> String {
        match c {
            Condition::Exists(a) => format!("attribute_exists({})", self.name(a)),
            Condition::NotExists(a) => format!("attribute_not_exists({})", self.name(a)),
            Condition::Cmp(a, op, v) => {
                format!("{} {} {}", self.name(a), op.symbol(), self.value(v))
            }
            Condition::Between(a, lo, hi) => {
                let a = self.name(a);
                format!("{a} BETWEEN {} AND {}", self.value(lo), self.value(hi))
            }
            Condition::BeginsWith(a, prefix) => {
                format!("begins_with({}, {})", self.name(a), self.string(prefix))
            }
            Condition::EntryExists(m, k) => {
                format!("attribute_exists({}.{})", self.name(m), self.name(k))
            }
            Condition::Size(a, op, n) => {
                let n = self.value(&AttributeValue::N(n.to_string()));
                format!("size({}) {} {n}", self.name(a), op.symbol())
            }
            Condition::And(cs) => self.junction(cs, " AND "),
            Condition::Or(cs) => self.junction(cs, " OR "),
            Condition::Not(c) => format!("NOT {}", self.operand(c)),
        }
    }

    pub(super) fn junction(&mut self, cs: &[Condition], op: &str) -> String {
        let parts: Vec<String> = cs.iter().map(|c| self.operand(c)).collect();
        parts.join(op)
    }

    /// A sub-condition as an operand of AND, OR or NOT: compound ones are parenthesised so
    /// the rendering never depends on DynamoDB's operator precedence.
    pub(super) fn operand(&mut self, c: &Condition) -> String {
        let rendered = self.condition(c);
        match c {
            Condition::And(cs) | Condition::Or(cs) if cs.len() > 1 => format!("({rendered})"),
            _ => rendered,
        }
    }

    /// `None` for an empty update: UpdateItem then only creates the item if it is absent.
    pub(super) fn update(&mut self, u: &UpdateExpr) -> Option<String> {
        let mut clauses = Vec::new();
        if !u.set.is_empty() || !u.set_entry.is_empty() {
            let mut actions = Vec::new();
            for (attr, set) in &u.set {
                let n = self.name(attr);
                actions.push(match set {
                    SetValue::Value(v) => format!("{n} = {}", self.value(v)),
                    SetValue::IfNotExists(v) => {
                        format!("{n} = if_not_exists({n}, {})", self.value(v))
                    }
                });
            }
            for (m, k, v) in &u.set_entry {
                let path = format!("{}.{}", self.name(m), self.name(k));
                actions.push(format!("{path} = {}", self.value(v)));
            }
            clauses.push(format!("SET {}", actions.join(", ")));
        }
        if !u.remove.is_empty() || !u.remove_entry.is_empty() {
            let mut names: Vec<String> = u.remove.iter().map(|a| self.name(a)).collect();
            for (m, k) in &u.remove_entry {
                names.push(format!("{}.{}", self.name(m), self.name(k)));
            }
            clauses.push(format!("REMOVE {}", names.join(", ")));
        }
        if !u.add.is_empty() {
            let mut actions = Vec::new();
            for (attr, v) in &u.add {
                let n = self.name(attr);
                actions.push(format!("{n} {}", self.value(v)));
            }
            clauses.push(format!("ADD {}", actions.join(", ")));
        }
        (!clauses.is_empty()).then(|| clauses.join(" "))
    }

    /// A key condition: each partition attribute (name, type) equal to its value; each
    /// sort attribute of `sorts` equal to its value of `sort_prefix`, then `sort` on the
    /// one after them (the table's or a single-attribute index's sort key when the prefix
    /// is empty).
    pub(super) fn key_condition(
        &mut self,
        partition: &[((&str, KeyType), &str)],
        sorts: &[(&str, KeyType)],
        sort_prefix: &[String],
        sort: Option<&SortCondition>,
    ) -> String {
        let mut terms = Vec::new();
        let equal = |this: &mut Self, (attr, ty): (&str, KeyType), v: &str| {
            format!("{} = {}", this.name(attr), this.value(&ty.value(v)))
        };
        for (key, v) in partition {
            terms.push(equal(self, *key, v));
        }
        for (key, v) in sorts.iter().zip(sort_prefix) {
            terms.push(equal(self, *key, v));
        }
        if let (Some(sort), Some((sk_attr, sk_type))) = (sort, sorts.get(sort_prefix.len())) {
            let sk = self.name(sk_attr);
            let mut v = |x: &str| self.value(&sk_type.value(x));
            terms.push(match sort {
                SortCondition::Eq(x) => format!("{sk} = {}", v(x)),
                SortCondition::Lt(x) => format!("{sk} < {}", v(x)),
                SortCondition::Le(x) => format!("{sk} <= {}", v(x)),
                SortCondition::Gt(x) => format!("{sk} > {}", v(x)),
                SortCondition::Ge(x) => format!("{sk} >= {}", v(x)),
                SortCondition::Between(lo, hi) => {
                    let lo = v(lo);
                    format!("{sk} BETWEEN {lo} AND {}", v(hi))
                }
                SortCondition::BeginsWith(p) => format!("begins_with({sk}, {})", v(p)),
            });
        }
        terms.join(" AND ")
    }

    /// The two maps, each `None` when empty: DynamoDB rejects an empty
    /// `ExpressionAttributeNames` or `ExpressionAttributeValues`.
    pub(super) fn into_maps(self) -> (Option<HashMap<String, String>>, Option<SdkItem>) {
        let names = (!self.names.is_empty()).then_some(self.names);
        let values = (!self.values.is_empty()).then_some(self.values);
        (names, values)
    }
}
