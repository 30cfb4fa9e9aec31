//! `itemgraph chart explain`: a chart's entity chart and access-pattern table, as a person
//! reads them (Markdown) or a tool does (JSON), each pattern with its request, its key
//! condition, what it returns and what it costs in capacity units for items of a given
//! size, by DynamoDB's published arithmetic:
//!
//! - a read: 0.5 read unit per 4 KB, eventually consistent (1 strongly consistent); a
//!   GetItem rounds its item up, a Query the sum of what it reads, a BatchGetItem each
//!   item;
//! - a write: 1 write unit per KB of each item written, twice that inside a
//!   TransactWriteItems.
//!
//! What it says of the writes is the plans of [`super::plan`], which the write path runs:
//! the actions of a create (the item, its markers, the counters its references keep, the
//! children written with it, the counter shards it starts with, a client token's
//! marker) and the read a change or delete needs first.

use serde::Serialize;

mod markdown;
pub use markdown::{entity_table, markdown, pattern_table, plans_text};

use super::plan::Role;
use super::template::{Part, Template};
use super::{Action, Chart, Entity, KeyCondition, Request, SortCondition};

/// Capacity units of reads and writes, as DynamoDB rounds them.
const READ_UNIT_BYTES: u64 = 4096;
const WRITE_UNIT_BYTES: u64 = 1024;
/// What an index item holding keys only is taken to weigh: its key attributes, and the
/// 100 bytes DynamoDB counts for each index item.
const KEY_BYTES: u64 = 200;

/// The chart explained.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explained {
    pub chart: String,
    pub table: String,
    /// The key attributes, base table first: `PK`, `SK`, then each index's.
    pub key_attributes: Vec<String>,
    /// The table's sort key (`None`: a simple primary key), for the entity chart's line.
    #[serde(skip)]
    pub sort_key: Option<String>,
    /// A chart of several tables: those after the first, each with its keys (its indexes
    /// name it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_tables: Vec<TableShown>,
    pub indexes: Vec<IndexShown>,
    pub entities: Vec<EntityShown>,
    pub patterns: Vec<PatternShown>,
    /// The item size the costs are for.
    pub item_bytes: u64,
    /// The page size a connection reads when the client names none.
    pub page_size: u32,
}

/// A table of a chart of several, after the first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TableShown {
    pub name: String,
    pub partition_key: String,
    /// `null`: a simple primary key.
    pub sort_key: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexShown {
    pub name: String,
    /// Its name in its table, where not the chart's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<String>,
    /// The table it indexes, when not the first (a chart of several).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    pub partition_key: String,
    /// `null`: keyed by its partition key alone.
    pub sort_key: Option<String>,
    /// A multi-attribute key's further partition attributes, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more_partition_keys: Vec<String>,
    /// A multi-attribute key's further sort attributes, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more_sort_keys: Vec<String>,
    pub projection: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntityShown {
    pub name: String,
    pub description: Option<String>,
    /// One of the server's own items.
    pub system: bool,
    /// Each key attribute the entity's item carries, with its template (`CHAIN#<chain>`).
    pub keys: Vec<(String, String)>,
    /// For a link of two entities (many to many), what it links and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatternShown {
    pub number: u32,
    pub name: String,
    pub request: String,
    pub index: Option<String>,
    pub key_condition: Option<String>,
    pub forward: Option<bool>,
    pub returns: String,
    pub cost: Cost,
    /// A write pattern's resolved plan, as the write path runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanShown>,
}

/// A mutation's resolved plan ([`super::plan::MutationPlan`]): its steps in the order they
/// are sent, each action with its condition.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanShown {
    pub mutation: String,
    pub steps: Vec<StepShown>,
    /// Attributes whose change makes a change read its item first (`always`: any change;
    /// none: never).
    pub reads_first: Option<String>,
    /// The one write a change or a delete sends when it does not read first.
    pub in_place: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepShown {
    /// What the items are to the mutation: `item`, `token`, `children`, `marker`,
    /// `counter`, `check`, `shards`.
    pub role: String,
    pub entity: String,
    pub of: Option<String>,
    pub least: u64,
    pub most: u64,
    /// Each action it may send: its request and its condition.
    pub actions: Vec<String>,
    /// The condition of a counter update sent to one of the item's counter shards.
    pub on_shard: Option<String>,
    /// How its items are held to the caller's tenant.
    pub tenant: String,
}

/// The resolved plan of mutation `m`, as shown.
pub fn plan_shown(chart: &Chart, m: &super::Mutation) -> PlanShown {
    use super::plan::Guard;
    let plan = &chart.plans[&m.name];
    let conditions = |when: &[Guard]| {
        when.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let steps = plan
        .steps
        .iter()
        .map(|s| StepShown {
            role: format!("{:?}", s.role).to_lowercase(),
            entity: s.entity.clone(),
            of: s.of.clone(),
            least: s.least,
            most: s.most,
            actions: s.acts.iter().map(ToString::to_string).collect(),
            on_shard: s.on_shard.as_deref().map(conditions),
            tenant: match &s.binding {
                super::Binding::Open => "none".into(),
                super::Binding::Key(a) => format!("in its key ({a})"),
                super::Binding::Condition(a) => format!("by condition ({a})"),
                super::Binding::Global => "global".into(),
                super::Binding::Parent => "its parent's".into(),
            },
        })
        .collect();
    let r = &plan.read_first;
    let reads_first = if r.always {
        Some("always".to_owned())
    } else {
        let mut any: Vec<String> = r.any_of.clone();
        for (all, kept) in &r.partly {
            if !kept.is_empty() {
                for a in all {
                    if !any.contains(a) {
                        any.push(a.clone());
                    }
                }
            }
        }
        (!any.is_empty()).then(|| any.join(", "))
    };
    PlanShown {
        mutation: plan.mutation.clone(),
        steps,
        reads_first,
        in_place: plan.in_place.as_ref().map(ToString::to_string),
    }
}

/// What a pattern costs, in read or write units, from the least to the most it can.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub unit: &'static str,
    pub least: f64,
    pub most: f64,
    /// How the figure comes about.
    pub how: String,
}

/// A key template as a person reads it: `CHAIN#<chain>`, `CHAIN#<chain>#COUNT#<shard:02>`.
pub fn shown(t: &Template) -> String {
    t.parts
        .iter()
        .map(|p| match p {
            Part::Literal(l) => l.clone(),
            Part::Var(v) => match v.width {
                // Zero-padded to its width, as the chart writes it (`{shard:02}`).
                Some(w) => format!("<{}:0{w}>", v.name),
                None => format!("<{}>", v.name),
            },
        })
        .collect()
}

fn read_units(bytes: u64) -> f64 {
    0.5 * bytes.div_ceil(READ_UNIT_BYTES) as f64
}

fn write_units(bytes: u64) -> u64 {
    bytes.div_ceil(WRITE_UNIT_BYTES)
}

/// Explains `chart` for items of `item_bytes`.
pub fn explain(chart: &Chart, item_bytes: u64) -> Explained {
    let item_bytes = item_bytes.max(1);
    let page_size = super::DEFAULT_PAGE_SIZE;
    let mut key_attributes: Vec<String> = Vec::new();
    for a in chart
        .tables
        .iter()
        .flat_map(|t| t.key_names())
        .chain(chart.indexes.values().flat_map(|i| i.key_names()))
    {
        // A local index shares the table's partition key: named once.
        if !key_attributes.iter().any(|k| k == a) {
            key_attributes.push(a.to_owned());
        }
    }
    let indexes = chart
        .indexes
        .values()
        .map(|i| IndexShown {
            name: i.name.clone(),
            stored: (i.stored != i.name).then(|| i.stored.clone()),
            table: (i.table > 0).then(|| chart.tables[i.table].name.clone()),
            partition_key: i.partition_key.clone(),
            sort_key: i.sort_key.clone(),
            more_partition_keys: i.pk_more.iter().map(|(n, _)| n.clone()).collect(),
            more_sort_keys: i.sk_more.iter().map(|(n, _)| n.clone()).collect(),
            projection: match &i.projection {
                super::Projection::All => "ALL".into(),
                super::Projection::KeysOnly => "KEYS_ONLY".into(),
                super::Projection::Include(a) => format!("INCLUDE {}", a.join(", ")),
            },
        })
        .collect();
    // The server's own items only where the table can hold them (keyed by two strings).
    let own = crate::store::own::holds_own_items(&chart.table_schema());
    let entities = chart
        .entities
        .values()
        .filter(|e| own || !e.system)
        .map(|e| {
            let t = chart.table_of(e);
            let mut keys = vec![(t.partition_key.clone(), shown(&e.key.pk))];
            if let Some(sk) = &t.sort_key {
                keys.push((sk.clone(), shown(&e.key.sk)));
            }
            // A multi-attribute key: the entity's own attributes, each under its name.
            for (index, attrs) in &e.multi {
                for (key, a) in chart.indexes[index].key_names().into_iter().zip(attrs) {
                    keys.push((key.to_owned(), format!("<{a}>")));
                }
            }
            for (index, k) in &e.indexes {
                let i = &chart.indexes[index];
                if !i.local {
                    keys.push((i.partition_key.clone(), shown(&k.pk)));
                }
                if let Some(sk) = &i.sort_key {
                    keys.push((sk.clone(), shown(&k.sk)));
                }
            }
            let link = e.link.as_ref().map(|[near, far]| {
                let (a, b) = (&e.references[near].entity, &e.references[far].entity);
                // The index the rule `links` proves inverts it: keyed by the far side.
                let far_vars: Vec<&String> = e.references[far].key.values().collect();
                let inverted = e
                    .indexes
                    .iter()
                    .find(|(_, k)| far_vars.iter().all(|v| k.pk.vars().any(|x| x.name == **v)))
                    .map_or("", |(i, _)| i.as_str());
                format!(
                    "{} links {a} and {b}, many to many: in each {}'s item collection (`{near}`), inverted by {inverted} (`{far}`)",
                    e.name,
                    super::words(a),
                )
            });
            EntityShown {
                name: e.name.clone(),
                description: e.description.clone(),
                system: e.system,
                keys,
                link,
            }
        })
        .collect();
    let patterns = chart
        .patterns
        .values()
        .map(|p| pattern(chart, p, item_bytes, page_size))
        .collect();
    Explained {
        chart: chart.name.clone(),
        table: chart.table.name.clone(),
        key_attributes,
        sort_key: chart.table.sort_key.clone(),
        other_tables: chart.tables[1..]
            .iter()
            .map(|t| TableShown {
                name: t.name.clone(),
                partition_key: t.partition_key.clone(),
                sort_key: t.sort_key.clone(),
            })
            .collect(),
        indexes,
        entities,
        patterns,
        item_bytes,
        page_size,
    }
}

/// A key condition as text (`PK = CHAIN#<chain> AND SK >= CHAIN#<chain>`), each template
/// written by `render` (the chart's own form, or [`shown`]'s).
pub fn condition_text(
    chart: &Chart,
    p: &super::Pattern,
    c: &KeyCondition,
    render: &dyn Fn(&Template) -> String,
) -> String {
    let table = &chart.tables[p.table];
    let (pk, sorts) = match &c.index {
        None => (
            vec![table.partition_key.as_str()],
            table.sort_key.as_deref().into_iter().collect(),
        ),
        Some(i) => {
            let i = &chart.indexes[i];
            let names = i.key_names();
            (names[..i.partition_len()].to_vec(), i.sort_names())
        }
    };
    let values = std::iter::once(&c.partition).chain(&c.partition_more);
    let mut terms: Vec<String> = pk
        .iter()
        .zip(values)
        .map(|(k, t)| format!("{k} = {}", render(t)))
        .collect();
    for (k, t) in sorts.iter().zip(&c.sort_prefix) {
        terms.push(format!("{k} = {}", render(t)));
    }
    let mut out = terms.join(" AND ");
    let sk = sorts.get(c.sort_prefix.len()).copied().unwrap_or("");
    match &c.sort {
        None => {}
        Some(SortCondition::Eq(t)) => out.push_str(&format!(" AND {sk} = {}", render(t))),
        Some(SortCondition::Lt(t)) => out.push_str(&format!(" AND {sk} < {}", render(t))),
        Some(SortCondition::Le(t)) => out.push_str(&format!(" AND {sk} <= {}", render(t))),
        Some(SortCondition::Gt(t)) => out.push_str(&format!(" AND {sk} > {}", render(t))),
        Some(SortCondition::Ge(t)) => out.push_str(&format!(" AND {sk} >= {}", render(t))),
        Some(SortCondition::Between(a, b)) => out.push_str(&format!(
            " AND {sk} BETWEEN {} AND {}",
            render(a),
            render(b)
        )),
        Some(SortCondition::BeginsWith(t)) => {
            out.push_str(&format!(" AND begins_with({sk}, {})", render(t)))
        }
    }
    out
}

/// How many counter shards an item of `e` is read with (none when it has none).
fn shards_of(chart: &Chart, e: &str) -> u32 {
    chart.shards_of(e).map_or(0, |(_, n)| n)
}

fn pattern(chart: &Chart, p: &super::Pattern, item: u64, page: u32) -> PatternShown {
    let (request, index, key_condition, forward, returns, cost) = match &p.request {
        Request::GetItem {
            entity,
            with_shards,
        } => {
            let e = &chart.entities[entity];
            let t = chart.table_of(e);
            let key = match &t.sort_key {
                Some(sk) => format!(
                    "{} = {}, {sk} = {}",
                    t.partition_key,
                    shown(&e.key.pk),
                    shown(&e.key.sk)
                ),
                None => format!("{} = {}", t.partition_key, shown(&e.key.pk)),
            };
            let one = read_units(item);
            match with_shards {
                None => (
                    "GetItem".to_owned(),
                    None,
                    Some(key),
                    None,
                    format!("one {}", super::words(&e.name)),
                    Cost {
                        unit: "RCU",
                        least: one,
                        most: one,
                        how: format!("one item of {item} B"),
                    },
                ),
                Some(c) => {
                    let n = u64::from(shards_of(chart, entity));
                    let with = read_units(item * (n + 1));
                    (
                        "GetItem".to_owned(),
                        c.index.clone(),
                        Some(format!(
                            "{key}; with its counts: Query {}",
                            condition_text(chart, p, c, &shown)
                        )),
                        None,
                        format!(
                            "one {}; with its counts, its {n} counter shards too",
                            super::words(&e.name)
                        ),
                        Cost {
                            unit: "RCU",
                            least: one,
                            most: with,
                            how: format!("one item; with its counts, {} items in one Query", n + 1),
                        },
                    )
                }
            }
        }
        Request::Query { beside, .. } => {
            // The pattern's resolved plan: what its pages send.
            let plan = &chart.pages[&p.number];
            // What the Query reads beside the children: the parent, its counter shards.
            let carried = u64::from(plan.carried);
            let beside_n = carried - u64::from(plan.parent.is_some());
            let first = carried + u64::from(page);
            let most = carried + 100;
            let mut returns = String::new();
            if let Some(pa) = &plan.parent {
                returns.push_str(&format!("the {}", super::words(pa)));
                if beside_n > 0 {
                    returns.push_str(&format!(
                        ", its {beside_n} {}",
                        beside
                            .iter()
                            .map(|b| super::plural(b))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                returns.push_str(" and ");
            }
            returns.push_str(&format!(
                "a page of {} ({page} by default, 100 at most)",
                super::plural(&plan.children)
            ));
            let (request, cost) = if plan.then_get {
                // The Query reads the keys (about KEY_BYTES an item), the BatchGetItem each
                // item of the page, rounded up on its own.
                let page = u64::from(page);
                let cost = Cost {
                    unit: "RCU",
                    least: read_units(KEY_BYTES * (page + 1)) + page as f64 * read_units(item),
                    most: read_units(KEY_BYTES * 101) + 100.0 * read_units(item),
                    how: format!("{} keys in one Query and {page} items in one BatchGetItem for a first page of {page}, 101 keys and 100 items for one of 100", page + 1),
                };
                ("Query + BatchGetItem", cost)
            } else {
                let cost = Cost {
                    unit: "RCU",
                    least: read_units(item * first),
                    most: read_units(item * most),
                    how: format!("{first} items in one Query for a first page of {page}, {most} for one of 100"),
                };
                ("Query", cost)
            };
            (
                request.to_owned(),
                plan.condition.index.clone(),
                Some(condition_text(chart, p, &plan.condition, &shown)),
                Some(plan.forward),
                returns,
                cost,
            )
        }
        Request::Collection { kinds, .. } => {
            let plan = &chart.pages[&p.number];
            let carried = u64::from(plan.carried);
            let first = carried + u64::from(page);
            let most = carried + 100;
            let names: Vec<String> = kinds.iter().map(|k| super::plural(k)).collect();
            let returns = format!(
                "{}a page of {} together, in sort order ({page} by default, 100 at most); a page of one kind on its prefix alone",
                plan.parent
                    .as_deref()
                    .map(|pa| format!("the {} and ", super::words(pa)))
                    .unwrap_or_default(),
                and_words(&names),
            );
            (
                "Query".to_owned(),
                plan.condition.index.clone(),
                Some(condition_text(chart, p, &plan.condition, &shown)),
                Some(plan.forward),
                returns,
                Cost {
                    unit: "RCU",
                    least: read_units(item * first),
                    most: read_units(item * most),
                    how: format!("{first} items in one Query for a first page of {page}, {most} for one of 100"),
                },
            )
        }
        Request::Scan { index, children } => {
            // What a page reads: Limit items of the index (every tenant's), of which the
            // filter keeps the caller's.
            let tenant = chart.entities[children].binding.condition_or_key();
            let first = u64::from(page) + 1;
            (
                "Scan".to_owned(),
                Some(index.clone()),
                tenant.map(|a| format!("filter {a} = <caller's tenant>")),
                None,
                format!(
                    "a page of {} in no particular order ({page} by default, 100 at most){}",
                    super::plural(children),
                    if tenant.is_some() {
                        ", read from every tenant's and filtered to the caller's: a page may hold fewer"
                    } else {
                        ""
                    }
                ),
                Cost {
                    unit: "RCU",
                    least: read_units(item * first),
                    most: read_units(item * 101),
                    how: format!("{first} items of the index read for a first page of {page}, 101 for one of 100, whatever the filter keeps"),
                },
            )
        }
        Request::BatchGetItem => (
            "BatchGetItem".to_owned(),
            None,
            None,
            None,
            "each item asked (100 keys at most)".to_owned(),
            Cost {
                unit: "RCU",
                least: read_units(item),
                most: 100.0 * read_units(item),
                how: "each item rounded up on its own: one key to 100".to_owned(),
            },
        ),
        Request::Write { request, entity } if bulk_of(chart, p.number).is_some() => {
            let action = bulk_of(chart, p.number).map_or(super::Action::Delete, |(m, _)| m.action);
            let every = bulk_of(chart, p.number).map_or_else(Default::default, |(_, e)| e.clone());
            let (verb, verbs) = if action == super::Action::Update {
                ("updates", "updates")
            } else {
                ("deletes", "deletes")
            };
            let query = &chart.pages[&every.pattern];
            let units = write_units(item);
            let factor = u64::from(request.name() == "TransactWriteItems") + 1;
            let max = u64::from(every.max);
            (
                format!("Query + {}", request.name()),
                query.condition.index.clone(),
                Some(condition_text(chart, &chart.patterns[&every.pattern], &query.condition, &shown)),
                Some(query.forward),
                format!(
                    "{verb} the {} pattern {} finds, {max} at most a call",
                    super::plural(entity),
                    every.pattern
                ),
                Cost {
                    unit: "WCU",
                    least: 0.0,
                    most: (max * units * factor) as f64,
                    how: match (every.atomic, action) {
                        (true, _) => format!("none when the Query finds none; {max} {verbs} in one TransactWriteItems at most, after the Query of their keys"),
                        (false, super::Action::Update) => format!(
                            "none when the Query finds none; {max} updates in {} TransactWriteItems of 100 at most, after the Query of their keys",
                            every.writes(action)
                        ),
                        (false, _) => format!(
                            "none when the Query finds none; {max} deletes in {} BatchWriteItems of 25 at most, after the Query of their keys",
                            every.writes(action)
                        ),
                    },
                },
            )
        }
        Request::Write { request, entity } => {
            let (least, most, least_in_transaction, how) = write_actions(chart, p.number, entity);
            let units = write_units(item);
            // A transaction costs twice; the least of a change or delete may be the item's
            // own conditional write, outside one.
            let factor = u64::from(request.name() == "TransactWriteItems") + 1;
            let least_factor = if least_in_transaction { factor } else { 1 };
            (
                request.name().to_owned(),
                None,
                None,
                None,
                format!("writes one {}", super::words(entity)),
                Cost {
                    unit: "WCU",
                    least: (least * units * least_factor) as f64,
                    most: (most * units * factor) as f64,
                    how,
                },
            )
        }
    };
    let plan = chart
        .mutations
        .values()
        .find(|m| m.pattern == p.number)
        .map(|m| plan_shown(chart, m));
    PatternShown {
        number: p.number,
        name: p.name.clone(),
        request,
        index,
        key_condition,
        forward,
        returns,
        cost,
        plan,
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_words(words: &[String]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// The bulk delete that pattern `number` is, with what it deletes.
fn bulk_of(chart: &Chart, number: u32) -> Option<(&super::Mutation, &super::Every)> {
    chart
        .mutations
        .values()
        .find(|m| m.pattern == number)
        .and_then(|m| Some((m, m.every.as_ref()?)))
}

/// `1 unique marker`, `2 counter updates`.
fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The items a write pattern's mutation writes, least and most, whether the least is a
/// transaction too, and what they are: its resolved plan ([`super::plan`]), which the
/// write path runs.
fn write_actions(chart: &Chart, pattern: u32, entity: &str) -> (u64, u64, bool, String) {
    let e: &Entity = &chart.entities[entity];
    let Some(m) = chart.mutations.values().find(|m| m.pattern == pattern) else {
        return (1, 1, false, "the item".into());
    };
    let plan = &chart.plans[&m.name];
    let count = |role: Role| plan.of(role).count() as u64;
    let optional = |role: Role| plan.of(role).filter(|s| s.least == 0).count() as u64;
    let (markers, counts, checks) = (
        count(Role::Marker),
        count(Role::Counter),
        count(Role::Check),
    );
    match m.action {
        Action::Create => {
            let mut parts = vec!["the item".to_owned()];
            if markers > 0 {
                parts.push(counted(markers, "unique marker"));
            }
            if counts > 0 {
                parts.push(match optional(Role::Counter) {
                    0 => counted(counts, "counter update"),
                    o => format!(
                        "{}, {o} more with an optional reference given",
                        counted(counts - o, "counter update")
                    ),
                });
            }
            if checks > 0 {
                parts.push(counted(checks, "reference's existence check"));
            }
            if let Some(shards) = plan.of(Role::Shards).next() {
                parts.push(format!("its {} counter shards", shards.most));
            }
            for list in plan.of(Role::Children) {
                let name = list.of.as_deref().unwrap_or_default();
                parts.push(format!("{} to {} {name}", list.least, list.most));
            }
            if plan.of(Role::Token).next().is_some() {
                parts.push("a client token's marker when one is given".into());
            }
            (plan.least(), plan.most(None), true, parts.join(", "))
        }
        Action::Update => {
            let moved_markers = plan.most(Some(Role::Marker));
            let moved_counts = plan.most(Some(Role::Counter));
            let rechecks = plan.most(Some(Role::Check));
            let versioned = e.writes.version.is_some();
            (
                plan.least(),
                plan.most(None),
                versioned,
                format!(
                    "the item{}{}{}",
                    if moved_markers > 0 {
                        format!("; a changed unique value's old and new marker ({moved_markers})")
                    } else {
                        String::new()
                    },
                    if moved_counts > 0 {
                        format!("; the counters a change moves ({moved_counts})")
                    } else {
                        String::new()
                    },
                    if rechecks > 0 {
                        format!("; a changed reference's existence check ({rechecks})")
                    } else {
                        String::new()
                    },
                ),
            )
        }
        Action::Delete => (
            plan.least(),
            plan.most(None),
            markers + counts > 0,
            "the item, its markers and the counters it is counted on".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference no count verifies is one ConditionCheck of the create's transaction,
    /// as the write path sends it: the second chart's stores without their chain's counts.
    #[test]
    fn a_checked_reference_is_one_more_item_written() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/charts/store-locator.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let counted = super::super::parse(&text).unwrap();
        let unchecked = text.replace(
            "counts = { chain = [\"storeCount\", { by = \"status\", counters = { OPEN = \"openStoreCount\" } }] }\n",
            "",
        );
        let checked = super::super::parse(&unchecked).unwrap();
        let create = |chart: &Chart| {
            let x = explain(chart, 1024);
            let p = x.patterns.iter().find(|p| p.number == 7).unwrap();
            (p.cost.least, p.cost.most, p.cost.how.clone())
        };
        // The store and the chain's counters; its phone's marker and a client token's
        // when given.
        assert_eq!((create(&counted).0, create(&counted).1), (4.0, 8.0));
        // The store and the chain's existence; the same two markers when given.
        let (least, most, how) = create(&checked);
        assert_eq!((least, most), (4.0, 8.0), "{how}");
        assert!(how.contains("1 reference's existence check"), "{how}");
    }

    /// What `chart check` adds up the sizes of: each item a write writes, of the entity it
    /// is an item of (the built-in chart's ticket change: the ticket; the counters its
    /// status moves on the organization, and a new assignee on the old one and the new).
    #[test]
    fn the_items_written_are_named_by_their_entity() {
        let chart = super::super::builtin();
        let of = |mutation: &str| -> Vec<(Role, String, u64)> {
            chart.plans[mutation]
                .steps
                .iter()
                .map(|w| (w.role, w.entity.clone(), w.most))
                .collect()
        };
        let s = |x: &str| x.to_owned();
        assert_eq!(
            of("updateTicket"),
            [
                (Role::Item, s("Ticket"), 1),
                (Role::Counter, s("Organization"), 1),
                (Role::Counter, s("User"), 2),
            ]
        );
        let place = of("placeOrder");
        assert!(
            place.contains(&(Role::Children, s("OrderLine"), 96)),
            "{place:?}"
        );
        assert!(
            place.contains(&(Role::Token, s("OrderToken"), 1)),
            "{place:?}"
        );
        let create = of("createOrganization");
        assert!(
            create.contains(&(Role::Shards, s("CounterShard"), 32)),
            "{create:?}"
        );
    }
}
