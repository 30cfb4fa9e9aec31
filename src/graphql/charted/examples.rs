//! A chart's example operations: one per access pattern a root field reaches, written from
//! the chart and its samples, each headed by the comment saying which pattern it shows,
//! the request it is and what it costs. The playground preloads them as its tabs when it
//! serves the chart, as it does `examples/` for the built-in one.

use std::fmt::Write as _;

use super::record::{key_var_names, Record};
use crate::chart::types::Type;
use crate::chart::{Chart, Entity, Pattern, Request, SortCondition};
use crate::store::{AttributeValue, Item};

/// The chart's examples, in the order of its patterns.
pub fn examples(chart: &Chart) -> Vec<String> {
    let mut out = Vec::new();
    for p in chart.patterns.values() {
        if let Some(op) = example(chart, p) {
            out.push(op);
        }
    }
    out
}

fn example(chart: &Chart, p: &Pattern) -> Option<String> {
    let mut head = format!("# Access pattern {}: {}.\n#\n", p.number, p.name);
    let (body, requests) = match &p.request {
        Request::GetItem { entity, .. } => {
            let (root, args) = root_of(chart, entity)?;
            let e = &chart.entities[entity];
            writeln!(
                head,
                "# One GetItem of the key {} / {}.",
                e.key.pk, e.key.sk
            )
            .ok()?;
            (
                format!("  {root}({args}) {{\n{}  }}\n", fields(chart, e, 4)),
                1,
            )
        }
        Request::Query {
            condition,
            forward,
            parent,
            children,
            ..
        } => {
            let (owner, field) = chart.entities.values().find_map(|e| {
                e.connections
                    .iter()
                    .find(|(_, c)| c.pattern == p.number)
                    .map(|(name, _)| (e, name.clone()))
            })?;
            let (root, args) = root_of(chart, &owner.name)?;
            let child = &chart.entities[children];
            let carried = parent.as_deref() == Some(owner.name.as_str());
            let extra = connection_args(chart, owner, p, child);
            writeln!(
                head,
                "# One Query, {}: {}{}.",
                if *forward { "forward" } else { "backward" },
                condition_text(chart, condition),
                if carried {
                    format!(
                        ", which reads the {} and the first page together",
                        owner.name
                    )
                } else {
                    format!(
                        "; the {} itself is one GetItem, concurrent with it",
                        owner.name
                    )
                }
            )
            .ok()?;
            writeln!(
                head,
                "# Later pages (`after: <endCursor>`) query from the last-seen key."
            )
            .ok()?;
            let total = chart.entities[&owner.name].connections[&field]
                .total
                .is_some();
            let body = format!(
                "  {root}({args}) {{\n{}    {field}(first: 10{extra}) {{\n{}      nodes {{\n{}      }}\n      pageInfo {{\n        hasNextPage\n        endCursor\n      }}\n    }}\n  }}\n",
                fields(chart, owner, 4),
                if total { "      totalCount\n" } else { "" },
                fields(chart, child, 8),
            );
            (body, if carried { 1 } else { 2 })
        }
        Request::BatchGetItem => {
            let ids: Vec<String> = chart
                .declared()
                .filter(|e| e.node)
                .filter_map(|e| sample(chart, &e.name).map(|item| (e, item)))
                .map(|(e, item)| {
                    Record::new(std::sync::Arc::from(e.name.as_str()), item).global_id(e)
                })
                .take(3)
                .collect();
            if ids.is_empty() {
                return None;
            }
            writeln!(head, "# One BatchGetItem of every id asked.").ok()?;
            let mut body = String::from("  nodes(ids: [");
            body.push_str(
                &ids.iter()
                    .map(|i| format!("\"{i}\""))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            body.push_str("]) {\n    __typename\n    id\n");
            for e in chart.declared().filter(|e| e.node) {
                let _ = write!(
                    body,
                    "    ... on {} {{\n{}    }}\n",
                    e.name,
                    fields(chart, e, 6)
                );
            }
            body.push_str("  }\n");
            (body, 1)
        }
        // A mutation's tab writes: the playground's tabs read.
        Request::Write { .. } => return None,
    };
    let name: String = p
        .field
        .split('.')
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    Some(format!(
        "{head}#\n# DynamoDB requests: {requests}\n# dynamodb-requests: {requests}\n\nquery Pattern{}{name} {{\n{body}}}\n",
        p.number
    ))
}

/// The root field that reads `entity`, and its arguments from the first sample.
fn root_of(chart: &Chart, entity: &str) -> Option<(String, String)> {
    let (name, root) = chart.query.iter().find(|(_, q)| q.entity == entity)?;
    let e = &chart.entities[entity];
    let item = sample(chart, entity)?;
    let args = if root.by.as_deref() == Some("id") {
        let rec = Record::new(std::sync::Arc::from(entity), item);
        format!("id: \"{}\"", rec.global_id(e))
    } else {
        key_var_names(e)
            .iter()
            .map(|v| format!("{v}: {}", literal(&e.attributes[v].ty, item.get(v))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some((name.clone(), args))
}

/// A connection's own arguments, from the first sample child.
fn connection_args(chart: &Chart, owner: &Entity, p: &Pattern, child: &Entity) -> String {
    let Request::Query { condition, .. } = &p.request else {
        return String::new();
    };
    let item = sample(chart, &child.name);
    let mut out = String::new();
    let mut seen: Vec<String> = Vec::new();
    for v in condition.templates().into_iter().flat_map(|t| t.vars()) {
        if owner.attributes.contains_key(&v.name) || seen.contains(&v.name) {
            continue;
        }
        seen.push(v.name.clone());
        let ty = chart.var_type(condition, &v.name);
        if let (Some(ty), Some(item)) = (ty, &item) {
            let _ = write!(out, ", {}: {}", v.name, literal(&ty, item.get(&v.name)));
        }
    }
    out
}

fn sample(chart: &Chart, entity: &str) -> Option<Item> {
    chart
        .samples
        .iter()
        .find(|i| {
            matches!(i.get(&chart.table.type_attribute), Some(AttributeValue::S(t)) if t == entity)
        })
        .cloned()
}

fn literal(ty: &Type, v: Option<&AttributeValue>) -> String {
    match (ty, v) {
        (Type::Enum { .. }, Some(AttributeValue::S(s))) => s.clone(),
        (_, Some(AttributeValue::S(s))) => format!("{s:?}"),
        (_, Some(AttributeValue::N(n))) => n.clone(),
        _ => "null".into(),
    }
}

/// The entity's scalar fields (and a complex one's subfields), indented.
fn fields(chart: &Chart, e: &Entity, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    if e.node {
        let _ = writeln!(out, "{pad}id");
    }
    for (name, a) in e.attributes.iter().filter(|(_, a)| a.graphql) {
        let inner = if let Some(shape) = shape_of(&a.ty) {
            chart
                .shapes
                .get(shape)
                .map(|f| f.keys().cloned().collect::<Vec<_>>())
        } else if matches!(a.ty, Type::Map { .. }) {
            Some(vec!["key".to_owned(), "value".to_owned()])
        } else {
            None
        };
        match inner {
            None => {
                let _ = writeln!(out, "{pad}{name}");
            }
            Some(sub) => {
                let _ = writeln!(out, "{pad}{name} {{");
                for s in sub {
                    let _ = writeln!(out, "{pad}  {s}");
                }
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
    out
}

fn shape_of(ty: &Type) -> Option<&String> {
    match ty {
        Type::Shape(s) => Some(s),
        Type::List { of, .. } => shape_of(of),
        _ => None,
    }
}

fn condition_text(chart: &Chart, cond: &crate::chart::KeyCondition) -> String {
    let (pk, sk) = match &cond.index {
        None => (
            chart.table.partition_key.as_str(),
            chart.table.sort_key.as_str(),
        ),
        Some(i) => (
            chart.indexes[i].partition_key.as_str(),
            chart.indexes[i].sort_key.as_str(),
        ),
    };
    let mut out = format!("{pk} = {}", cond.partition);
    match &cond.sort {
        None => {}
        Some(SortCondition::Eq(t)) => out.push_str(&format!(" AND {sk} = {t}")),
        Some(SortCondition::Lt(t)) => out.push_str(&format!(" AND {sk} < {t}")),
        Some(SortCondition::Le(t)) => out.push_str(&format!(" AND {sk} <= {t}")),
        Some(SortCondition::Gt(t)) => out.push_str(&format!(" AND {sk} > {t}")),
        Some(SortCondition::Ge(t)) => out.push_str(&format!(" AND {sk} >= {t}")),
        Some(SortCondition::Between(a, b)) => {
            out.push_str(&format!(" AND {sk} BETWEEN {a} AND {b}"))
        }
        Some(SortCondition::BeginsWith(t)) => out.push_str(&format!(" AND begins_with({sk}, {t})")),
    }
    out
}
