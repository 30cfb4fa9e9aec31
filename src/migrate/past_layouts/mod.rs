//! The built-in design's past layouts: the only Rust that knows what the built-in chart
//! (`charts/itemgraph.toml`) stored before its named migrations, 1 `email-markers` and 3
//! `counter-shards`. Today's keys are rendered by the chart itself; these files know only
//! what was different before (an entity's type name, an attribute it lacked, a key it
//! had).

use std::collections::HashMap;

use crate::chart::template::Value;
use crate::chart::{Chart, Entity};
use crate::store::{AttributeValue, Item, PrimaryKey};

pub(super) mod counter_shards;
pub(super) mod email_markers;

/// The built-in chart's entity `name`: the past layouts are its.
fn entity<'c>(chart: &'c Chart, name: &str) -> &'c Entity {
    chart
        .entities
        .get(name)
        .unwrap_or_else(|| panic!("the built-in chart declares {name}"))
}

/// Whether `item` is stored as an item of `e` (its type attribute names it).
fn is_a(chart: &Chart, e: &Entity, item: &Item) -> bool {
    matches!(item.get(&chart.table.type_attribute), Some(AttributeValue::S(t)) if *t == e.name)
}

/// A text attribute of `item`.
fn text<'i>(item: &'i Item, attr: &str) -> Option<&'i str> {
    match item.get(attr) {
        Some(AttributeValue::S(s)) => Some(s),
        _ => None,
    }
}

/// The key values `(attribute, text)` as a template renders them.
fn vars(values: &[(&str, &str)]) -> HashMap<String, Value> {
    values
        .iter()
        .map(|(a, v)| ((*a).to_owned(), Value::Text((*v).to_owned())))
        .collect()
}

/// The primary key the chart renders for an item of `e` with key values `vars`.
fn key_of(e: &Entity, vars: &HashMap<String, Value>) -> Option<PrimaryKey> {
    crate::chart::samples::key_of(e, vars)
}
