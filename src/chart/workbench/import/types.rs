//! What a draft's entities are and what their attributes are: the type attribute (constant
//! within each facet, different between them), the groups of items an entity each, and
//! each attribute's chart type from its declared descriptor and its sample values.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::names::{entity_name, quote, singular};
use super::Group;
use crate::chart::types::TimeForm;
use crate::chart::workbench::TableModel;
use crate::store::{AttributeValue, Item};

/// The attribute whose value is constant within each facet and differs between facets.
pub(super) fn type_attribute(
    t: &TableModel,
    items: &[(Option<&str>, Item)],
    keys: &[&str],
    prefer: Option<&str>,
) -> Option<String> {
    let mut names: Vec<&String> = items.iter().flat_map(|(_, i)| i.keys()).collect();
    names.sort();
    names.dedup();
    // `prefer` (another table's) first, where it is one here.
    if let Some(p) = prefer {
        if let Some(at) = names.iter().position(|n| *n == p) {
            let n = names.remove(at);
            names.insert(0, n);
        }
    }
    let facets = !t.table_facets.is_empty();
    names
        .into_iter()
        .filter(|n| !keys.contains(&n.as_str()))
        .find(|n| {
            let mut by_facet: HashMap<Option<&str>, &str> = HashMap::new();
            let mut seen: HashSet<&str> = HashSet::new();
            for (f, i) in items {
                let Some(AttributeValue::S(v)) = i.get(*n) else {
                    return false;
                };
                if !facets {
                    seen.insert(v);
                    continue;
                }
                match by_facet.get(f) {
                    Some(x) if x != v => return false,
                    Some(_) => {}
                    None => {
                        if !seen.insert(v) {
                            return false;
                        }
                        by_facet.insert(*f, v);
                    }
                }
            }
            if facets {
                by_facet.len()
                    == t.table_facets
                        .iter()
                        .filter(|f| !f.table_data.is_empty())
                        .count()
                    && !by_facet.is_empty()
            } else {
                // Without facets: a few words naming kinds of items, not a value per item.
                let words = [
                    "type",
                    "entitytype",
                    "entity",
                    "_type",
                    "kind",
                    "_et",
                    "__typename",
                ];
                words.contains(&n.to_lowercase().as_str()) && !seen.is_empty()
            }
        })
        .cloned()
}

/// The entities to draft: the facets, or the values of the type attribute, or the table.
pub(super) fn groups<'m>(
    t: &'m TableModel,
    items: &[(Option<&'m str>, Item)],
    type_attribute: Option<&str>,
) -> Vec<Group<'m>> {
    if !t.table_facets.is_empty() {
        return t
            .table_facets
            .iter()
            .map(|f| {
                let its: Vec<Item> = items
                    .iter()
                    .filter(|(n, _)| *n == Some(f.facet_name.as_str()))
                    .map(|(_, i)| i.clone())
                    .collect();
                let type_value = type_attribute.and_then(|a| match its.first()?.get(a)? {
                    AttributeValue::S(v) => Some(v.clone()),
                    _ => None,
                });
                Group {
                    name: entity_name(&f.facet_name),
                    type_value,
                    items: its,
                    alias: Some(&f.key_attribute_alias),
                    facet_attributes: Some(&f.non_key_attributes),
                }
            })
            .collect();
    }
    match type_attribute {
        Some(a) => {
            let mut by: BTreeMap<String, Vec<Item>> = BTreeMap::new();
            for (_, i) in items {
                if let Some(AttributeValue::S(v)) = i.get(a) {
                    by.entry(v.clone()).or_default().push(i.clone());
                }
            }
            by.into_iter()
                .map(|(v, its)| Group {
                    name: entity_name(&v),
                    type_value: Some(v),
                    items: its,
                    alias: None,
                    facet_attributes: None,
                })
                .collect()
        }
        None => vec![Group {
            name: entity_name(&singular(&t.table_name)),
            type_value: None,
            items: items.iter().map(|(_, i)| i.clone()).collect(),
            alias: None,
            facet_attributes: None,
        }],
    }
}

pub(super) fn values(items: &[Item], attr: &str) -> Vec<Option<String>> {
    items
        .iter()
        .map(|i| match i.get(attr)? {
            AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// The chart type of an attribute from its declared descriptor and its sample values, and
/// what the import could not tell of it.
pub(super) fn attribute_type(
    declared: Option<&str>,
    values: &[&AttributeValue],
) -> (String, Option<String>) {
    let strings: Vec<&str> = values
        .iter()
        .filter_map(|v| match v {
            AttributeValue::S(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let numbers: Vec<&str> = values
        .iter()
        .filter_map(|v| match v {
            AttributeValue::N(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let integer = |s: &&str| s.parse::<i64>().is_ok_and(|n| n.to_string() == *s);
    let descriptor = declared.unwrap_or(match values.first() {
        Some(AttributeValue::N(_)) => "N",
        Some(AttributeValue::Bool(_)) => "BOOL",
        Some(AttributeValue::M(_)) => "M",
        Some(AttributeValue::L(_)) => "L",
        Some(AttributeValue::Ss(_)) => "SS",
        _ => "S",
    });
    match descriptor {
        "N" if numbers.iter().all(integer) => ("type = \"int\"".into(), None),
        "N" => (
            "type = \"int\"".into(),
            Some(
                "numbers with a fraction: this server's numbers are whole (an int, or cents)"
                    .into(),
            ),
        ),
        "BOOL" => ("type = \"boolean\"".into(), None),
        "S" if !strings.is_empty()
            && time_form(strings.iter().copied()).is_some_and(|f| f != TimeForm::Rfc3339) =>
        {
            (
                format!(
                    "type = \"timestamp\", form = {}",
                    quote(time_form(strings.iter().copied()).map_or("", |f| f.name()))
                ),
                None,
            )
        }
        "S" if !strings.is_empty()
            && strings
                .iter()
                .all(|s| crate::chart::types::rfc3339_to_epoch(s).is_some()) =>
        {
            ("type = \"timestamp\"".into(), None)
        }
        "S" if !strings.is_empty()
            && strings.iter().all(integer)
            && strings.iter().all(|s| !s.starts_with('0') || s.len() == 1) =>
        {
            ("type = \"int\", stored_as = \"string\"".into(), None)
        }
        "S" => ("type = \"string\"".into(), None),
        "M" => (
            "type = \"map\", of = \"string\"".into(),
            Some("a map: declare its entries' type, or a shape of its fields".into()),
        ),
        "L" | "SS" | "NS" => (
            "type = \"list\", of = \"string\"".into(),
            Some(format!(
                "{}: declare its elements' type",
                match descriptor {
                    "L" => "a list",
                    "SS" => "a set of strings",
                    _ => "a set of numbers",
                }
            )),
        ),
        other => (
            "type = \"string\"".into(),
            Some(format!("type `{other}` is not one a chart declares")),
        ),
    }
}

/// The one form of time every value is written in, where they all are times: a form of one
/// width first (it can be part of a key), RFC 3339 as given last.
pub(super) fn time_form<'a>(mut values: impl Iterator<Item = &'a str> + Clone) -> Option<TimeForm> {
    let forms = [
        TimeForm::Seconds,
        TimeForm::Millis,
        TimeForm::LocalSeconds,
        TimeForm::Date,
    ];
    for f in forms {
        if values
            .clone()
            .all(|v| f.fits(&AttributeValue::S(v.to_owned())))
        {
            return Some(f);
        }
    }
    values
        .all(|v| crate::chart::types::rfc3339_to_epoch(v).is_some())
        .then_some(TimeForm::Rfc3339)
}
