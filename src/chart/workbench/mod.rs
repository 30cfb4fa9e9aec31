//! NoSQL Workbench data models, in and out: the JSON a data modeler exports from NoSQL
//! Workbench for DynamoDB (a model: its tables, each with its key attributes, other
//! attributes, facets with key aliases and sample items, global secondary indexes) read
//! and written as the format is (AWS's NoSQL Workbench guide; versions before 3.0 read as
//! well). [`export`] writes a chart as a model; [`import`] drafts a chart from one.
//!
//! Every field the format may hold that this server does not use is kept as it was read
//! (`other`), so a model read and written again loses nothing.

pub mod export;
pub mod import;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::{AttributeValue, Item};

/// A data model file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Model {
    pub model_name: String,
    #[serde(default)]
    pub model_metadata: Metadata,
    pub data_model: Vec<TableModel>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Metadata {
    #[serde(default)]
    pub author: String,
    #[serde(default)]
    pub date_created: String,
    #[serde(default)]
    pub date_last_modified: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "AWSService")]
    pub aws_service: String,
    #[serde(default)]
    pub version: String,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One table of the model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TableModel {
    pub table_name: String,
    pub key_attributes: KeyAttributes,
    #[serde(default)]
    pub non_key_attributes: Vec<AttributeDef>,
    #[serde(default)]
    pub table_facets: Vec<Facet>,
    #[serde(default)]
    pub global_secondary_indexes: Vec<Index>,
    /// Sample items of a table without facets (a table with facets keeps them in each).
    #[serde(default)]
    pub table_data: Vec<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_access: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_mode: Option<String>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeyAttributes {
    pub partition_key: AttributeDef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_key: Option<AttributeDef>,
}

/// An attribute's name and its DynamoDB type descriptor (`S`, `N`, `BOOL`, `M`, `L`, `SS`…).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeDef {
    pub attribute_name: String,
    pub attribute_type: String,
}

/// A facet: one kind of item of the table, with the aliases its keys are shown under and
/// its sample items.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Facet {
    pub facet_name: String,
    pub key_attribute_alias: KeyAlias,
    #[serde(default)]
    pub table_data: Vec<Map<String, Value>>,
    /// The names of the table's other attributes this facet's items hold.
    #[serde(default)]
    pub non_key_attributes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_access: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeyAlias {
    pub partition_key_alias: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_key_alias: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Index {
    pub index_name: String,
    pub key_attributes: KeyAttributes,
    pub projection: ProjectionModel,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ProjectionModel {
    pub projection_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_key_attributes: Option<Vec<String>>,
}

impl Model {
    /// Reads a model's JSON; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Model, String> {
        serde_json::from_str(text).map_err(|e| format!("not a NoSQL Workbench data model: {e}"))
    }

    /// Its tables' names, for a message: `` `Shop`, `Sessions` ``.
    pub fn table_names(&self) -> String {
        self.data_model
            .iter()
            .map(|t| format!("`{}`", t.table_name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl TableModel {
    /// Every sample item of the table, each with the facet it was given under (`None`: the
    /// table's own), as stored.
    pub fn items(&self) -> Vec<(Option<&str>, Item)> {
        let mut out: Vec<(Option<&str>, Item)> = self
            .table_data
            .iter()
            .map(|i| (None, item_from_json(i)))
            .collect();
        for f in &self.table_facets {
            out.extend(
                f.table_data
                    .iter()
                    .map(|i| (Some(f.facet_name.as_str()), item_from_json(i))),
            );
        }
        out
    }
}

/// A sample item in DynamoDB JSON (`{"PK": {"S": "c#1"}, "Price": {"N": "40"}}`) as an item.
pub fn item_from_json(item: &Map<String, Value>) -> Item {
    item.iter()
        .filter_map(|(k, v)| Some((k.clone(), value_from_json(v)?)))
        .collect()
}

/// A typed value, or (as some models hold inside a map) plain JSON taken for what it is.
fn value_from_json(v: &Value) -> Option<AttributeValue> {
    if let Value::Object(o) = v {
        if o.len() == 1 {
            let (t, x) = o.iter().next()?;
            let typed = match (t.as_str(), x) {
                ("S", Value::String(s)) => Some(AttributeValue::S(s.clone())),
                ("N", Value::String(n)) => Some(AttributeValue::N(n.clone())),
                ("N", Value::Number(n)) => Some(AttributeValue::N(n.to_string())),
                ("BOOL", Value::Bool(b)) => Some(AttributeValue::Bool(*b)),
                ("NULL", _) => Some(AttributeValue::Null(true)),
                ("M", Value::Object(m)) => Some(AttributeValue::M(
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), value_from_json(v)?)))
                        .collect(),
                )),
                ("L", Value::Array(l)) => Some(AttributeValue::L(
                    l.iter().filter_map(value_from_json).collect(),
                )),
                ("SS", Value::Array(l)) => Some(AttributeValue::Ss(
                    l.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect(),
                )),
                ("NS", Value::Array(l)) => Some(AttributeValue::Ns(
                    l.iter()
                        .filter_map(|s| match s {
                            Value::String(s) => Some(s.clone()),
                            Value::Number(n) => Some(n.to_string()),
                            _ => None,
                        })
                        .collect(),
                )),
                _ => None,
            };
            if typed.is_some() {
                return typed;
            }
        }
    }
    // Untyped JSON.
    Some(match v {
        Value::Null => AttributeValue::Null(true),
        Value::Bool(b) => AttributeValue::Bool(*b),
        Value::Number(n) => AttributeValue::N(n.to_string()),
        Value::String(s) => AttributeValue::S(s.clone()),
        Value::Array(l) => AttributeValue::L(l.iter().filter_map(value_from_json).collect()),
        Value::Object(m) => AttributeValue::M(
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), value_from_json(v)?)))
                .collect(),
        ),
    })
}

/// An item as DynamoDB JSON, its attributes in name order.
pub fn item_to_json(item: &Item) -> Map<String, Value> {
    let mut names: Vec<&String> = item.keys().collect();
    names.sort();
    names
        .into_iter()
        .map(|k| (k.clone(), value_to_json(&item[k])))
        .collect()
}

fn value_to_json(v: &AttributeValue) -> Value {
    let typed = |t: &str, x: Value| Value::Object(Map::from_iter([(t.to_owned(), x)]));
    match v {
        AttributeValue::S(s) => typed("S", Value::String(s.clone())),
        AttributeValue::N(n) => typed("N", Value::String(n.clone())),
        AttributeValue::Bool(b) => typed("BOOL", Value::Bool(*b)),
        AttributeValue::Null(_) => typed("NULL", Value::Bool(true)),
        AttributeValue::M(m) => {
            let mut names: Vec<&String> = m.keys().collect();
            names.sort();
            typed(
                "M",
                Value::Object(
                    names
                        .into_iter()
                        .map(|k| (k.clone(), value_to_json(&m[k])))
                        .collect(),
                ),
            )
        }
        AttributeValue::L(l) => typed("L", Value::Array(l.iter().map(value_to_json).collect())),
        AttributeValue::Ss(s) => typed(
            "SS",
            Value::Array(s.iter().cloned().map(Value::String).collect()),
        ),
        AttributeValue::Ns(s) => typed(
            "NS",
            Value::Array(s.iter().cloned().map(Value::String).collect()),
        ),
        // Binary values are not what a chart's items hold.
        _ => typed("NULL", Value::Bool(true)),
    }
}
