//! A chart's sample items: written in the chart as its attributes (`[[samples.Store]]`),
//! checked like any item of the entity, stored with the keys its templates render. What
//! `serve --seed demo` loads into an empty table of a chart other than the built-in one.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::template::Value;
use super::types::Type;
use super::{Entity, Index, Table};
use crate::store::{AttributeValue, Condition, Item, Put, Store, StoreError};

/// The stored item of one sample, or why it is none.
pub(super) fn item(
    table: &Table,
    indexes: &IndexMap<String, Index>,
    e: &Entity,
    sample: &toml::Table,
) -> Result<Item, String> {
    let mut item = Item::new();
    let mut vars = HashMap::new();
    for (name, value) in sample {
        let Some(a) = e.attributes.get(name) else {
            return Err(format!("`{name}` is no attribute of {}", e.name));
        };
        let v =
            stored(&a.ty, value).ok_or_else(|| format!("`{name}` is not a {}", a.ty.describe()))?;
        match (&a.ty, &v) {
            (Type::Kind(k), AttributeValue::S(s)) => {
                let checked = k
                    .validate("value", s)
                    .map_err(|m| format!("`{name}`: {m}"))?;
                vars.insert(name.clone(), Value::Text(checked));
            }
            (Type::Enum { .. }, AttributeValue::S(s)) => {
                vars.insert(name.clone(), Value::Text(s.clone()));
            }
            (Type::Int { .. }, AttributeValue::N(n)) => {
                vars.insert(name.clone(), Value::Int(n.parse().unwrap_or(0)));
            }
            (Type::Timestamp(f), AttributeValue::S(s)) if f.width().is_some() => {
                vars.insert(name.clone(), Value::Text(s.clone()));
            }
            _ => {}
        }
        item.insert(name.clone(), v);
    }
    for (name, a) in &e.attributes {
        if !a.optional && !matches!(a.ty, Type::Counter) && !item.contains_key(name) {
            return Err(format!("`{name}` is missing"));
        }
    }
    set_keys(table, indexes, e, &mut item, &vars)?;
    Ok(item)
}

/// Gives an item of `e` its keys, the index keys its templates render (an index whose key
/// has an optional part left out: none, the item is not in it) and its type attribute,
/// from its key values `vars`.
pub fn set_keys(
    table: &Table,
    indexes: &IndexMap<String, Index>,
    e: &Entity,
    item: &mut Item,
    vars: &HashMap<String, Value>,
) -> Result<(), String> {
    let render = |t: &super::template::Template| {
        t.render(|n| vars.get(n).cloned())
            .map_err(|why| format!("its key `{t}`: {why}"))
    };
    for (name, v) in table.key_attributes(&render(&e.key.pk)?, &render(&e.key.sk)?) {
        item.insert(name, v);
    }
    for (index, keys) in &e.indexes {
        let i = &indexes[index];
        if let (Ok(pk), Ok(sk)) = (render(&keys.pk), render(&keys.sk)) {
            for (name, v) in i.key_attributes(&pk, &sk) {
                item.insert(name, v);
            }
        } else {
            for name in i.key_names() {
                item.remove(name);
            }
        }
    }
    item.insert(
        table.type_attribute.clone(),
        AttributeValue::S(e.name.clone()),
    );
    Ok(())
}

/// The values of an item's attributes a key can be built from (identifiers, enums,
/// integers), as a template renders them.
pub fn key_values(e: &Entity, item: &Item) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    for (name, a) in &e.attributes {
        match (item.get(name), &a.ty) {
            (Some(AttributeValue::N(n)), Type::Int { .. }) => {
                if let Ok(n) = n.parse() {
                    out.insert(name.clone(), Value::Int(n));
                }
            }
            (Some(AttributeValue::S(s)), Type::Kind(_) | Type::Enum { .. }) => {
                out.insert(name.clone(), Value::Text(s.clone()));
            }
            // A time of one width, as it goes into a key.
            (Some(AttributeValue::S(s)), Type::Timestamp(f)) if f.width().is_some() => {
                out.insert(name.clone(), Value::Text(s.clone()));
            }
            _ => {}
        }
    }
    out
}

/// The marker item of `owner`'s value under `marker` (a unique attribute's): the owner's
/// values of the marker's attributes, keys rendered.
pub fn marker(
    table: &Table,
    indexes: &IndexMap<String, Index>,
    marker: &Entity,
    owner: &Item,
    vars: &HashMap<String, Value>,
) -> Result<Item, String> {
    let mut item: Item = marker
        .attributes
        .keys()
        .filter_map(|a| Some((a.clone(), owner.get(a)?.clone())))
        .collect();
    set_keys(table, indexes, marker, &mut item, vars)?;
    Ok(item)
}

/// A TOML value as the attribute of type `ty` stores it.
fn stored(ty: &Type, v: &toml::Value) -> Option<AttributeValue> {
    Some(match (ty, v) {
        (Type::Enum { values, .. }, toml::Value::String(s)) => {
            values.contains(s).then(|| AttributeValue::S(s.clone()))?
        }
        (Type::String { max_length, .. }, toml::Value::String(s)) => (max_length
            .is_none_or(|m| s.chars().count() <= m))
        .then(|| AttributeValue::S(s.clone()))?,
        (
            Type::Timestamp(super::types::TimeForm::Rfc3339) | Type::Kind(_),
            toml::Value::String(s),
        ) => AttributeValue::S(s.clone()),
        // A time in another form: given as RFC 3339 (or the form's own text), stored so.
        (Type::Timestamp(form), toml::Value::String(s)) => form.store(s)?,
        (Type::Expiry, toml::Value::String(s)) => {
            AttributeValue::N(super::types::rfc3339_to_epoch(s)?.to_string())
        }
        (Type::Int { min, max }, toml::Value::Integer(n)) => (min.is_none_or(|m| *n >= m)
            && max.is_none_or(|m| *n <= m))
        .then(|| AttributeValue::N(n.to_string()))?,
        (Type::Counter, toml::Value::Integer(n)) if *n >= 0 => AttributeValue::N(n.to_string()),
        (Type::Cents { .. }, toml::Value::Integer(n)) => AttributeValue::N(n.to_string()),
        (Type::Boolean, toml::Value::Boolean(b)) => AttributeValue::Bool(*b),
        (Type::List { of, max_items }, toml::Value::Array(items)) => {
            if max_items.is_some_and(|m| items.len() > m) {
                return None;
            }
            AttributeValue::L(items.iter().map(|i| stored(of, i)).collect::<Option<_>>()?)
        }
        (Type::Map { of, .. }, toml::Value::Table(t)) => AttributeValue::M(
            t.iter()
                .map(|(k, v)| Some((k.clone(), stored(of, v)?)))
                .collect::<Option<_>>()?,
        ),
        // A shape's fields are checked where the chart is served: stored as given.
        (Type::Shape(_), toml::Value::Table(t)) => AttributeValue::M(
            t.iter()
                .map(|(k, v)| Some((k.clone(), plain(v)?)))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

fn plain(v: &toml::Value) -> Option<AttributeValue> {
    Some(match v {
        toml::Value::String(s) => AttributeValue::S(s.clone()),
        toml::Value::Integer(n) => AttributeValue::N(n.to_string()),
        toml::Value::Boolean(b) => AttributeValue::Bool(*b),
        toml::Value::Array(a) => AttributeValue::L(a.iter().map(plain).collect::<Option<_>>()?),
        toml::Value::Table(t) => AttributeValue::M(
            t.iter()
                .map(|(k, v)| Some((k.clone(), plain(v)?)))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

/// Writes the chart's samples into `store`, each only where its key is free; how many it
/// wrote. Nothing is overwritten: a sample already there is skipped.
pub async fn seed(store: &dyn Store, chart: &super::Chart) -> Result<usize, StoreError> {
    let tables = chart.stores(store)?;
    let mut written = 0;
    for item in &chart.samples {
        let at = chart.table_of_item(item);
        let put = Put {
            item: item.clone(),
            condition: Some(Condition::not_exists(
                chart.tables[at].partition_key.clone(),
            )),
            return_old_on_condition_failure: false,
        };
        match tables.get(at).put_item(put).await {
            Ok(_) => written += 1,
            Err(StoreError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(written)
}

/// The key values of the item `reference` of `item` (an item of `e`) names; none when a
/// part of it is absent (an optional reference not given).
pub fn reference_vars(e: &Entity, item: &Item, reference: &str) -> Option<HashMap<String, Value>> {
    let r = e.references.get(reference)?;
    let source = key_values(e, item);
    let mut vars = HashMap::new();
    for (to, from) in &r.key {
        vars.insert(to.clone(), source.get(from)?.clone());
    }
    Some(vars)
}

/// The primary key of an item of `e` with key values `vars`; none when a part is absent.
pub fn key_of(e: &Entity, vars: &HashMap<String, Value>) -> Option<crate::store::PrimaryKey> {
    Some(crate::store::PrimaryKey::new(
        e.key.pk.render(|n| vars.get(n).cloned()).ok()?,
        e.key.sk.render(|n| vars.get(n).cloned()).ok()?,
    ))
}

/// The primary key of the item `reference` of `item` (an item of `e`) names.
pub fn reference_key(
    entities: &IndexMap<String, Entity>,
    e: &Entity,
    item: &Item,
    reference: &str,
) -> Option<crate::store::PrimaryKey> {
    let target = entities.get(&e.references.get(reference)?.entity)?;
    key_of(target, &reference_vars(e, item, reference)?)
}
