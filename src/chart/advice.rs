//! Advice on a chart every start-up rule passes (`itemgraph chart check`): what the
//! DynamoDB literature warns a single-table design of, each with its reason. Warnings,
//! not refusals: the server serves such a chart, and load finds out.

use serde::Serialize;

use super::types::Type;
use super::Chart;

/// One piece of advice: the rule, the entity it concerns, what is wrong and why it matters.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Advice {
    pub rule: &'static str,
    pub entity: String,
    pub message: String,
    pub why: &'static str,
}

/// The rules advised on, each with what it asks (`docs/CHART.md`, "Advice").
pub const RULES: [(&str, &str); 2] = [
    (
        "hot-partition",
        "a counter every create of a tenant's items updates is spread over counter shards",
    ),
    (
        "item-size",
        "a list or map attribute has a `max_items`, so its item cannot outgrow 400 KB",
    ),
];

const HOT_PARTITION_WHY: &str = "One item takes about 1 000 write units a second, and an update \
inside a transaction costs 2 (AWS, \"Best practices for designing and using partition keys \
effectively\"; \"Using write sharding to distribute workloads evenly\").";

const ITEM_SIZE_WHY: &str = "DynamoDB refuses an item over 400 KB, and every read of it costs \
its whole size (AWS, \"Best practices for storing large items and attributes\").";

/// The advice on `chart`, by entity.
pub fn advise(chart: &Chart) -> Vec<Advice> {
    let mut out = Vec::new();
    hot_partitions(chart, &mut out);
    item_sizes(chart, &mut out);
    out.sort_by(|a, b| a.entity.cmp(&b.entity).then(a.rule.cmp(b.rule)));
    out
}

/// A counter on the tenant's own item that every create of its children updates, with no
/// counter shards: one tenant's creates are held to one item's write rate.
fn hot_partitions(chart: &Chart, out: &mut Vec<Advice>) {
    let Some(tenant) = chart.tenant.as_ref().map(|t| t.entity.as_str()) else {
        return;
    };
    let sharded = chart
        .entities
        .values()
        .any(|s| s.shards_of.as_ref().is_some_and(|(of, _)| of == tenant));
    if sharded {
        return;
    }
    for e in chart.declared() {
        for c in &e.writes.counts {
            if e.references.get(&c.reference).map(|r| r.entity.as_str()) != Some(tenant) {
                continue;
            }
            let creates: Vec<&str> = chart
                .mutations
                .values()
                .filter(|m| m.entity == e.name && m.action == super::Action::Create)
                .map(|m| m.name.as_str())
                .collect();
            if creates.is_empty() {
                continue;
            }
            out.push(Advice {
                rule: "hot-partition",
                entity: tenant.to_owned(),
                message: format!(
                    "every {} of one {} updates its {} on the {}'s one item: at about 1 000 \
                     write units a second an item, 2 an update in a transaction, one {} takes \
                     about 500 new {} a second; counter shards (`shards_of`, `shards = 32`) \
                     spread them over 32 items, 16 000 a second",
                    creates.join(" or "),
                    super::words(tenant),
                    c.all().join(", "),
                    super::words(tenant),
                    super::words(tenant),
                    super::plural(&e.name),
                ),
                why: HOT_PARTITION_WHY,
            });
        }
    }
}

/// A list or map attribute (of an entity, or of a shape one holds) with no `max_items`.
fn item_sizes(chart: &Chart, out: &mut Vec<Advice>) {
    for e in chart.declared() {
        for (name, a) in &e.attributes {
            if let Some(path) = unbounded(chart, &a.ty, name, 0) {
                out.push(Advice {
                    rule: "item-size",
                    entity: e.name.clone(),
                    message: format!(
                        "`{path}` has no `max_items`: the item grows with it, and a write that \
                         takes it past 400 KB is refused"
                    ),
                    why: ITEM_SIZE_WHY,
                });
            }
        }
    }
}

/// The path of the first list or map without `max_items` in a value of `ty`.
fn unbounded(chart: &Chart, ty: &Type, path: &str, depth: usize) -> Option<String> {
    // A shape that holds itself is looked into a few levels deep.
    if depth > 4 {
        return None;
    }
    match ty {
        Type::List {
            max_items: None, ..
        }
        | Type::Map {
            max_items: None, ..
        } => Some(path.to_owned()),
        Type::List { of, .. } | Type::Map { of, .. } => unbounded(chart, of, path, depth + 1),
        Type::Shape(shape) => {
            chart.shapes.get(shape)?.iter().find_map(|(field, a)| {
                unbounded(chart, &a.ty, &format!("{path}.{field}"), depth + 1)
            })
        }
        _ => None,
    }
}
