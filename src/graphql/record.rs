//! Items of a chart's entities: decoded (every attribute checked against its declared type,
//! every key value against its kind), answered as GraphQL values, named by global ids.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::{Name, Value};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::errors::ApiError;
use crate::chart::template::{Template, Value as KeyValue};
use crate::chart::types::Type;
use crate::chart::{Attribute, Chart, Entity};
use crate::store::{AttributeValue, Item, PageKey, PrimaryKey};

/// One item of an entity, as read.
#[derive(Debug, Clone)]
pub struct Record {
    pub entity: Arc<str>,
    pub item: Item,
    /// Its key values, worked out once (ids, references and pages all ask).
    vars: std::sync::OnceLock<Vars>,
}

/// The values a key template is rendered from, by variable name.
pub type Vars = HashMap<String, KeyValue>;

/// Longest global id accepted; anything longer is not one of ours.
const MAX_ID_LEN: usize = 512;

/// An item's place in a chart's tables: its table's place in [`Chart::tables`] and its
/// primary key (what the request's loader knows items by).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKey {
    pub table: usize,
    pub key: PrimaryKey,
}

impl Record {
    /// Decodes an item: its `Type` names an entity of the chart, every required
    /// attribute is there with its type's shape, every key value passes its kind. An item
    /// that does not decode is a fault of the table (`INTERNAL`), never of the caller.
    pub fn decode(chart: &Chart, item: Item) -> Result<Record, ApiError> {
        Record::read(chart, item).map_err(undecodable)
    }

    /// [`Record::decode`], saying why an item does not decode: what `itemgraph check`
    /// reports.
    pub fn read(chart: &Chart, item: Item) -> Result<Record, String> {
        let ty = item
            .get(&chart.table.type_attribute)
            .and_then(|v| match v {
                AttributeValue::S(s) => Some(s.as_str()),
                _ => None,
            })
            .ok_or_else(|| "an item without its type attribute".to_owned())?;
        let Some((name, entity)) = chart.entities.get_key_value(ty) else {
            return Err(format!("an item of unknown type `{ty}`"));
        };
        for (attr, a) in &entity.attributes {
            match item.get(attr) {
                None | Some(AttributeValue::Null(_)) if a.optional => {}
                // A missing counter is 0, a missing map one of no entries.
                None if matches!(a.ty, Type::Counter | Type::Map { .. }) => {}
                None | Some(AttributeValue::Null(_)) => {
                    return Err(format!("{ty} without `{attr}`"))
                }
                Some(v) if !fits(&a.ty, v) => {
                    return Err(format!("{ty}: `{attr}` is not a {}", a.ty.describe()))
                }
                Some(_) => {}
            }
        }
        for v in entity.key.pk.vars().chain(entity.key.sk.vars()) {
            if let (Some(AttributeValue::S(s)), Some(Type::Kind(k))) = (
                item.get(&v.name),
                entity.attributes.get(&v.name).map(|a| &a.ty),
            ) {
                if k.validate("key", s).ok().as_deref() != Some(s.as_str()) {
                    return Err(format!("{ty}: `{}` could forge a key", v.name));
                }
            }
        }
        Ok(Record::new(Arc::from(name.as_str()), item))
    }

    /// An item known to be of `entity`.
    pub fn new(entity: Arc<str>, item: Item) -> Record {
        Record {
            entity,
            item,
            vars: std::sync::OnceLock::new(),
        }
    }

    pub fn entity<'c>(&self, chart: &'c Chart) -> &'c Entity {
        &chart.entities[&*self.entity]
    }

    pub fn text(&self, attr: &str) -> Option<&str> {
        match self.item.get(attr) {
            Some(AttributeValue::S(s)) => Some(s),
            _ => None,
        }
    }

    /// A counter: a missing one is 0.
    pub fn count(&self, attr: &str) -> i64 {
        match self.item.get(attr) {
            Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
            _ => 0,
        }
    }

    /// The values of the attributes a key can be built from (identifiers, enums,
    /// integers), as a template renders them; worked out once.
    pub fn vars(&self, entity: &Entity) -> &Vars {
        self.vars.get_or_init(|| self.key_values(entity))
    }

    fn key_values(&self, entity: &Entity) -> Vars {
        crate::chart::samples::key_values(entity, &self.item)
    }

    /// Its primary key, from its key attributes as stored.
    pub fn primary_key(&self, chart: &Chart) -> Option<PrimaryKey> {
        chart.key_of(&self.item)
    }

    /// Its place: its entity's table and its primary key (what the request's DataLoader
    /// knows it by).
    pub fn item_key(&self, chart: &Chart) -> Option<ItemKey> {
        Some(ItemKey {
            table: self.entity(chart).table,
            key: self.primary_key(chart)?,
        })
    }

    /// Where a page that ended on this item resumes, for a query on `index`.
    pub fn page_key(&self, chart: &Chart, index: Option<&str>) -> Option<PageKey> {
        let table = self.primary_key(chart)?;
        let index = match index.map(|i| chart.indexes.get(i)) {
            None => None,
            Some(None) => return None,
            // A multi-attribute key is the item's own values, as a key holds them.
            Some(Some(i)) if i.multi => {
                let entity = chart.entities.get(&*self.entity)?;
                Some(entity.multi_key(i, self.vars(entity))?)
            }
            Some(Some(i)) => Some(i.key_of(&self.item)?),
        };
        Some(PageKey { table, index })
    }

    /// Its global id: the entity's name and its key's values, base64url ([`id_text`]).
    pub fn global_id(&self, entity: &Entity) -> String {
        let vars = self.vars(entity);
        let values: Vec<String> = key_var_names(entity)
            .iter()
            .map(|name| match vars.get(name) {
                Some(KeyValue::Text(t)) => t.clone(),
                Some(KeyValue::Int(n)) => n.to_string(),
                None => String::new(),
            })
            .collect();
        URL_SAFE_NO_PAD.encode(id_text(&entity.name, &values))
    }

    /// The attribute `attr` (declared `a`) as GraphQL answers it: a missing counter is 0,
    /// a missing required map holds no entries (its field is a non-null list), anything
    /// else missing is null.
    pub fn value(&self, chart: &Chart, attr: &str, a: &Attribute) -> Value {
        match self.item.get(attr) {
            None if matches!(a.ty, Type::Counter) => Value::from(0),
            None if matches!(a.ty, Type::Map { .. }) && !a.optional => Value::List(Vec::new()),
            None => Value::Null,
            Some(v) => to_value(chart, &a.ty, v),
        }
    }
}

/// The names of an entity's key variables, in the order its templates spell them.
pub fn key_var_names(entity: &Entity) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in entity.key.pk.vars().chain(entity.key.sk.vars()) {
        if !out.contains(&v.name) {
            out.push(v.name.clone());
        }
    }
    out
}

/// The text a global id is the base64url of: the entity's name, then each of its key's
/// values after a `:` (`Store:bean-there:US:WA:SEATTLE:1001`). A value other than the last
/// that holds `:` (an email, a kind of the chart's own) would split back in the wrong
/// place: then each value is written after a `/` and its length in bytes instead
/// (`Member/7:a:b@c.d/3:xyz`). Every id whose values split back by `:` is as it always was.
fn id_text(entity: &str, values: &[String]) -> String {
    let lengths = needs_lengths(values);
    let mut raw = entity.to_owned();
    for v in values {
        if lengths {
            raw.push('/');
            raw.push_str(&v.len().to_string());
        }
        raw.push(':');
        raw.push_str(v);
    }
    raw
}

/// Whether a value other than the last holds `:`, so the values would not split back by it.
fn needs_lengths<S: AsRef<str>>(values: &[S]) -> bool {
    values
        .split_last()
        .is_some_and(|(_, before)| before.iter().any(|v| v.as_ref().contains(':')))
}

/// The `n` key values of an id's text after its entity's name ([`id_text`]); `None` when
/// it holds other than `n`, or is written with lengths where `:` would do (one item has
/// one id).
fn id_values(rest: &str, n: usize) -> Option<Vec<&str>> {
    if !rest.starts_with('/') {
        if n == 0 {
            return rest.is_empty().then(Vec::new);
        }
        let values: Vec<&str> = rest.strip_prefix(':')?.splitn(n, ':').collect();
        return (values.len() == n).then_some(values);
    }
    let mut rest = rest;
    let mut values = Vec::with_capacity(n);
    for _ in 0..n {
        let (len, tail) = rest.strip_prefix('/')?.split_once(':')?;
        // Decimal digits as written, without a leading zero.
        if len.is_empty()
            || !len.bytes().all(|b| b.is_ascii_digit())
            || (len.len() > 1 && len.starts_with('0'))
        {
            return None;
        }
        let len: usize = len.parse().ok()?;
        values.push(tail.get(..len)?);
        rest = tail.get(len..)?;
    }
    (rest.is_empty() && needs_lengths(&values)).then_some(values)
}

/// The key values an id a client sent for an item of `e` names: its plain id, or a global
/// id (`None`: the global id of another entity's item).
pub fn id_vars(chart: &Chart, e: &Entity, field: &str, id: &str) -> Result<Option<Vars>, ApiError> {
    if let Some(plain) = &e.plain_id {
        if let Ok(v) = key_value(&e.attributes[plain].ty, field, id) {
            return Ok(Some(Vars::from([(plain.clone(), v)])));
        }
    }
    let (found, vars) = decode_global_id(chart, field, id)?;
    Ok((found.name == e.name).then_some(vars))
}

/// A global id a client sent: the entity it names and its key's values, each checked.
pub fn decode_global_id<'c>(
    chart: &'c Chart,
    field: &str,
    id: &str,
) -> Result<(&'c Entity, Vars), ApiError> {
    let bad = || ApiError::bad_input(field, "not a valid id");
    if id.len() > MAX_ID_LEN {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(id).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    // The entity's name is a GraphQL name: it ends where the values start.
    let (ty, rest) = text.split_at(text.find([':', '/']).unwrap_or(text.len()));
    let entity = chart.entities.get(ty).filter(|e| e.node).ok_or_else(bad)?;
    let names = key_var_names(entity);
    let values = id_values(rest, names.len()).ok_or_else(bad)?;
    let mut vars = Vars::new();
    for (name, value) in names.iter().zip(values) {
        let a = &entity.attributes[name];
        vars.insert(
            name.clone(),
            key_value(&a.ty, "id", value).map_err(|_| bad())?,
        );
    }
    Ok((entity, vars))
}

/// A value a client gave for a key variable of type `ty`, checked.
pub fn key_value(ty: &Type, field: &str, value: &str) -> Result<KeyValue, String> {
    match ty {
        // The kinds' messages name the value `value`: they name the field here.
        Type::Kind(k) => k
            .validate("value", value)
            .map(KeyValue::Text)
            .map_err(|m| m.replacen("value", field, 1)),
        Type::Enum { values, .. } if values.iter().any(|v| v == value) => {
            Ok(KeyValue::Text(value.to_owned()))
        }
        // A time in a key: given as RFC 3339 or the form's text, as the key holds it.
        Type::Timestamp(f) if f.width().is_some() => match f.store(value) {
            Some(AttributeValue::S(t)) => Ok(KeyValue::Text(t)),
            _ => Err(format!(
                "{field} must be an RFC 3339 time (`2026-01-31T12:00:00Z`)"
            )),
        },
        Type::Int { min, max } => value
            .parse::<i64>()
            .ok()
            .filter(|n| min.is_none_or(|m| *n >= m) && max.is_none_or(|m| *n <= m))
            .map(KeyValue::Int)
            .ok_or_else(|| format!("{field} is out of range")),
        _ => Err(format!("{field} is not a value of {}", ty.describe())),
    }
}

/// Renders a template, every variable given.
pub fn render(t: &Template, vars: &Vars) -> Result<String, ApiError> {
    t.render(|n| vars.get(n).cloned()).map_err(|e| {
        tracing::error!(template = %t, error = %e, "a key could not be rendered");
        ApiError::Internal
    })
}

fn undecodable(what: String) -> ApiError {
    tracing::error!(%what, "an item does not decode as its chart says");
    ApiError::Internal
}

fn fits(ty: &Type, v: &AttributeValue) -> bool {
    match (ty, v) {
        (Type::String { .. } | Type::Kind(_) | Type::Enum { .. }, AttributeValue::S(_)) => true,
        (Type::Timestamp(f), v) => f.fits(v),
        (
            Type::Int { .. } | Type::Counter | Type::Cents { .. } | Type::Expiry,
            AttributeValue::N(n),
        ) => n.parse::<i64>().is_ok(),
        (Type::Boolean, AttributeValue::Bool(_)) => true,
        (Type::List { of, .. }, AttributeValue::L(items)) => items.iter().all(|i| fits(of, i)),
        (Type::Map { of, .. }, AttributeValue::M(m)) => m.values().all(|i| fits(of, i)),
        (Type::Shape(_), AttributeValue::M(_)) => true,
        _ => false,
    }
}

fn to_value(chart: &Chart, ty: &Type, v: &AttributeValue) -> Value {
    match (ty, v) {
        (Type::Timestamp(crate::chart::types::TimeForm::Rfc3339), AttributeValue::S(s)) => {
            Value::String(s.clone())
        }
        (Type::Timestamp(f), v) => f.answer(v).map_or(Value::Null, Value::String),
        (Type::Enum { .. }, AttributeValue::S(s)) => Value::Enum(Name::new(s)),
        (Type::Cents { .. }, AttributeValue::N(n)) => Value::String(n.clone()),
        (Type::Expiry, AttributeValue::N(n)) => n
            .parse::<i64>()
            .ok()
            .and_then(crate::chart::types::epoch_to_rfc3339)
            .map_or(Value::Null, Value::String),
        (Type::Int { .. } | Type::Counter, AttributeValue::N(n)) => {
            let n: i64 = n.parse().unwrap_or(0);
            Value::from(n.clamp(i32::MIN.into(), i32::MAX.into()))
        }
        (_, AttributeValue::S(s)) => Value::String(s.clone()),
        (_, AttributeValue::Bool(b)) => Value::Boolean(*b),
        (Type::List { of, .. }, AttributeValue::L(items)) => {
            Value::List(items.iter().map(|i| to_value(chart, of, i)).collect())
        }
        (Type::Map { of, .. }, AttributeValue::M(m)) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::List(
                keys.into_iter()
                    .map(|k| {
                        let mut entry = async_graphql::indexmap::IndexMap::new();
                        entry.insert(Name::new("key"), Value::String(k.clone()));
                        entry.insert(Name::new("value"), to_value(chart, of, &m[k]));
                        Value::Object(entry)
                    })
                    .collect(),
            )
        }
        (Type::Shape(name), AttributeValue::M(m)) => {
            let mut out = async_graphql::indexmap::IndexMap::new();
            if let Some(shape) = chart.shapes.get(name) {
                for (field, a) in shape {
                    let v = match m.get(field) {
                        Some(v) => to_value(chart, &a.ty, v),
                        // As an entity's own map: no entries, where one must be there.
                        None if matches!(a.ty, Type::Map { .. }) && !a.optional => {
                            Value::List(Vec::new())
                        }
                        None => Value::Null,
                    };
                    out.insert(Name::new(field), v);
                }
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    /// The second chart with a city kind that takes `:` (`ST:PAUL`): a store's city is the
    /// fourth of its five key values.
    fn chart() -> Chart {
        const LOCATOR: &str = include_str!("../../examples/charts/store-locator.toml");
        let from = "pattern = \"[A-Z0-9]+(-[A-Z0-9]+)*\"";
        assert!(LOCATOR.contains(from), "{from}");
        crate::chart::parse(&LOCATOR.replace(from, "pattern = \"[A-Z0-9:]+(-[A-Z0-9:]+)*\""))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn store(city: &str) -> Record {
        let item: Item = [
            ("chain", "bean-there"),
            ("country", "US"),
            ("state", "MN"),
            ("city", city),
            ("number", "1001"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), AttributeValue::S(v.to_owned())))
        .collect();
        Record::new(Arc::from("Store"), item)
    }

    #[test]
    fn a_global_id_names_its_item_whatever_its_values_hold() {
        let chart = chart();
        let e = &chart.entities["Store"];
        for city in ["SEATTLE", "ST:PAUL", "::", "A:B-C:D"] {
            let rec = store(city);
            let id = rec.global_id(e);
            let (found, vars) =
                decode_global_id(&chart, "id", &id).unwrap_or_else(|e| panic!("{city}: {e}"));
            assert_eq!(found.name, "Store", "{city}");
            assert_eq!(vars, *rec.vars(e), "{city}");
        }
        // Values that split back by `:` are written as they always were; others with their
        // lengths.
        let text = |city: &str| {
            String::from_utf8(URL_SAFE_NO_PAD.decode(store(city).global_id(e)).unwrap()).unwrap()
        };
        assert_eq!(text("SEATTLE"), "Store:bean-there:US:MN:SEATTLE:1001");
        assert_eq!(
            text("ST:PAUL"),
            "Store/10:bean-there/2:US/2:MN/7:ST:PAUL/4:1001"
        );
        // Lengths where `:` would do, a length with a leading zero or past the end, and
        // values missing: not ids of ours.
        for forged in [
            "Store/10:bean-there/2:US/2:MN/7:SEATTLE/4:1001",
            "Store/10:bean-there/2:US/2:MN/07:ST:PAUL/4:1001",
            "Store/10:bean-there/2:US/2:MN/7:ST:PAUL/5:1001",
            "Store/10:bean-there",
            "Store",
        ] {
            let id = URL_SAFE_NO_PAD.encode(forged);
            assert!(decode_global_id(&chart, "id", &id).is_err(), "{forged}");
        }
    }
}
