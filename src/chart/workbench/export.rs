//! `itemgraph chart export`: a chart as a NoSQL Workbench data model, so a data modeler
//! opens the design in NoSQL Workbench: its table with its key attributes and every other
//! attribute its items hold (as the table stores them: stored names, numbers as strings),
//! a facet per entity with its key templates as aliases and its samples as the table holds
//! them, and its global secondary indexes. What the format cannot hold (a local secondary
//! index, a multi-attribute key) is named in the answer's notes.

use serde_json::{Map, Value};

use super::{
    AttributeDef, Facet, Index, KeyAlias, KeyAttributes, Metadata, Model, ProjectionModel,
    TableModel,
};
use crate::chart::types::Type;
use crate::chart::{Chart, Entity, Projection};
use crate::store::KeyType;

/// The model, and what the format could not hold of the chart.
pub struct Exported {
    pub model: Model,
    pub notes: Vec<String>,
}

/// `chart` as a data model: a table model for each of its tables.
pub fn export(chart: &Chart) -> Exported {
    let mut notes = Vec::new();
    let tables = (0..chart.tables.len())
        .map(|t| table_model(chart, t, &mut notes))
        .collect();
    let now = model_date();
    Exported {
        model: Model {
            model_name: chart.name.clone(),
            model_metadata: Metadata {
                author: String::new(),
                date_created: now.clone(),
                date_last_modified: now,
                description: chart.description.clone().unwrap_or_default(),
                aws_service: "Amazon DynamoDB".into(),
                version: "3.0".into(),
                other: Map::new(),
            },
            data_model: tables,
            other: Map::new(),
        },
        notes,
    }
}

/// The chart's table `at` (its place in [`Chart::tables`]) as a table model: its
/// entities' facets, its indexes.
fn table_model(chart: &Chart, at: usize, notes: &mut Vec<String>) -> TableModel {
    let t = &chart.tables[at];
    let key = |name: &str, ty: KeyType| AttributeDef {
        attribute_name: name.to_owned(),
        attribute_type: ty.as_str().to_owned(),
    };
    let entities: Vec<&Entity> = chart
        .entities
        .values()
        .filter(|e| !e.system && e.table == at)
        .collect();
    let key_names: Vec<&str> = t.key_names();
    // Every other attribute an item holds, once, with its type as stored.
    let mut non_key: Vec<AttributeDef> = Vec::new();
    let mut add = |name: &str, ty: &str| {
        if !key_names.contains(&name) && !non_key.iter().any(|a| a.attribute_name == name) {
            non_key.push(AttributeDef {
                attribute_name: name.to_owned(),
                attribute_type: ty.to_owned(),
            });
        }
    };
    if t.types_stored {
        add(&t.type_attribute, "S");
    }
    let mut facets = Vec::new();
    for e in &entities {
        let mut names: Vec<String> = Vec::new();
        if t.types_stored {
            names.push(t.type_attribute.clone());
        }
        for (a, attr) in &e.attributes {
            if attr.key_only {
                continue;
            }
            let stored = attr.stored.clone().unwrap_or_else(|| a.clone());
            if key_names.contains(&stored.as_str()) {
                continue;
            }
            let ty = if attr.as_string {
                "S"
            } else {
                descriptor(&attr.ty)
            };
            add(&stored, ty);
            if !names.contains(&stored) {
                names.push(stored);
            }
        }
        for index in e.indexes.keys() {
            let i = &chart.indexes[index];
            for (name, ty) in [
                (Some(&i.partition_key), i.pk_type),
                (i.sort_key.as_ref(), i.sk_type),
            ] {
                let Some(name) = name else { continue };
                if key_names.contains(&name.as_str()) {
                    continue;
                }
                add(name, ty.as_str());
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        let table_data = chart
            .samples
            .iter()
            .filter(|i| matches!(i.get(&t.type_attribute), Some(crate::store::AttributeValue::S(n)) if *n == e.name))
            .map(|i| match &chart.forms {
                Some(forms) => super::item_to_json(&forms.stored(chart, i.clone())),
                None => super::item_to_json(i),
            })
            .collect();
        facets.push(Facet {
            facet_name: e.name.clone(),
            key_attribute_alias: KeyAlias {
                partition_key_alias: e.key.pk.source().to_owned(),
                sort_key_alias: t.sort_key.as_ref().map(|_| e.key.sk.source().to_owned()),
            },
            table_data,
            non_key_attributes: names,
            data_access: Some(mysql()),
            other: Map::new(),
        });
    }
    let mut indexes = Vec::new();
    for i in chart.indexes.values().filter(|i| i.table == at) {
        if i.local {
            notes.push(format!(
                "index {}: a local secondary index, which a NoSQL Workbench model cannot hold: \
                 left out",
                i.name
            ));
            continue;
        }
        if i.multi {
            notes.push(format!(
                "index {}: a multi-attribute key ({}), which a NoSQL Workbench model's `KeyAttributes` (one partition and one sort attribute) cannot hold: left out; its attributes are in the facets, as the items' own",
                i.name,
                i.key_names().join(", ")
            ));
            continue;
        }
        indexes.push(Index {
            index_name: i.stored.clone(),
            key_attributes: KeyAttributes {
                partition_key: key(&i.partition_key, i.pk_type),
                sort_key: i.sort_key.as_deref().map(|s| key(s, i.sk_type)),
            },
            projection: match &i.projection {
                Projection::All => ProjectionModel {
                    projection_type: "ALL".into(),
                    non_key_attributes: None,
                },
                Projection::KeysOnly => ProjectionModel {
                    projection_type: "KEYS_ONLY".into(),
                    non_key_attributes: None,
                },
                Projection::Include(a) => ProjectionModel {
                    projection_type: "INCLUDE".into(),
                    non_key_attributes: Some(a.clone()),
                },
            },
            other: Map::new(),
        });
    }
    TableModel {
        table_name: t.name.clone(),
        key_attributes: KeyAttributes {
            partition_key: key(&t.partition_key, t.pk_type),
            sort_key: t.sort_key.as_deref().map(|s| key(s, t.sk_type)),
        },
        non_key_attributes: non_key,
        table_facets: facets,
        global_secondary_indexes: indexes,
        table_data: Vec::new(),
        data_access: Some(mysql()),
        billing_mode: Some("PAY_PER_REQUEST".into()),
        other: Map::new(),
    }
}

/// What every table and facet of a Workbench model carries.
fn mysql() -> Value {
    Value::Object(Map::from_iter([(
        "MySql".to_owned(),
        Value::Object(Map::new()),
    )]))
}

/// The type descriptor NoSQL Workbench lists an attribute of type `ty` under.
fn descriptor(ty: &Type) -> &'static str {
    match ty {
        Type::Int { .. } | Type::Counter | Type::Cents { .. } | Type::Expiry => "N",
        Type::Boolean => "BOOL",
        Type::List { .. } => "L",
        Type::Map { .. } | Type::Shape(_) => "M",
        Type::Timestamp(f) if f.is_number() => "N",
        Type::String { .. } | Type::Timestamp(_) | Type::Kind(_) | Type::Enum { .. } => "S",
    }
}

/// Now, as NoSQL Workbench writes its models' dates (`Dec 7, 2026, 2:05 AM`, UTC).
fn model_date() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[month repr:short] [day padding:none], [year], [hour repr:12 padding:none]:[minute] [period]"
    );
    now.format(&format).unwrap_or_default()
}
