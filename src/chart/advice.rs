//! Advice on a chart every start-up rule passes (`itemgraph chart check`): what the
//! DynamoDB literature warns a single-table design of, each with its reason. Warnings,
//! not refusals: the server serves such a chart, and load finds out.
//!
//! What the literature warns of that a chart cannot be served with at all is refused at
//! start instead, by the rules of [`super::RULES`]: a pattern whose key condition can
//! return what it does not declare (it would need a filter: `one-request`), a transaction
//! of more than 100 actions and a change of a primary key attribute (`writes`).

use serde::Serialize;

use super::size;
use super::template::Template;
use super::types::Type;
use super::{Action, Chart, Entity, Request};

/// One piece of advice: the rule, the entity it concerns (and the pattern, where it is
/// one pattern's), what is wrong and why it matters.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Advice {
    pub rule: &'static str,
    pub entity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<u32>,
    pub message: String,
    pub why: &'static str,
}

/// The rules advised on, each with what it asks (`docs/CHART.md`, "Advice").
pub const RULES: [(&str, &str); 10] = [
    (
        "hot-partition",
        "no counter item or index partition takes every create of one tenant: counters are spread over counter shards, index partitions over more than the tenant",
    ),
    (
        "item-size",
        "a list or map attribute has a `max_items`, so its item cannot outgrow 400 KB",
    ),
    (
        "transaction-size",
        "a mutation's transaction cannot exceed the 4 MB DynamoDB takes in one",
    ),
    (
        "page-size",
        "a Query pattern's largest first page fits in the 1 MB one Query returns",
    ),
    (
        "changing-sort-key",
        "no index sort key is built from an attribute a mutation changes",
    ),
    (
        "sparse-index",
        "an entity carries keys only in the indexes a pattern reads it from",
    ),
    (
        "scan-cost",
        "a Scan pattern reads a sparse few of an entity, of the caller's tenant alone",
    ),
    (
        "consistent-read",
        "a root field that reads one item after its create or change reads the base table, not an index",
    ),
    (
        "import-todo",
        "nothing `chart import` could not infer from a NoSQL Workbench model is left undecided: each `# TODO:` it wrote is done and removed",
    ),
    (
        "global-marker",
        "a marker unique across tenants (`global = true`) is meant to be: it tells one tenant which values another holds",
    ),
];

const HOT_COUNTER_WHY: &str = "One item takes about 1 000 write units a second, and an update \
inside a transaction costs 2 (AWS, \"Best practices for designing and using partition keys \
effectively\"; \"Using write sharding to distribute workloads evenly\").";

const HOT_INDEX_WHY: &str = "One partition of an index takes about 1 000 write units a \
second, as a table's does, and an index that cannot keep up throttles the table's writes \
(AWS, \"Best practices for designing and using partition keys effectively\"; \"Using Global \
Secondary Index write sharding for selective table queries\").";

const ITEM_SIZE_WHY: &str = "DynamoDB refuses an item over 400 KB, and every read of it costs \
its whole size (AWS, \"Best practices for storing large items and attributes\").";

const TRANSACTION_SIZE_WHY: &str = "The items of one TransactWriteItems may total 4 MB at \
most; past it DynamoDB refuses the whole transaction (AWS, \"Amazon DynamoDB Transactions: \
How it works\", and the TransactWriteItems API reference).";

const PAGE_SIZE_WHY: &str = "One Query reads at most 1 MB before it stops and hands back a \
LastEvaluatedKey, so a page past it takes another request (AWS, \"Paginating table query \
results\").";

const BATCH_GET_WHY: &str = "One BatchGetItem returns at most 16 MB; the keys whose items \
do not fit come back as UnprocessedKeys, read by another request (AWS, the BatchGetItem API \
reference).";

const CHANGING_SORT_KEY_WHY: &str = "A sort key orders a partition for its readers; a value \
that changes moves the item within it, so a read paging it by cursor sees the item twice or \
not at all, and DynamoDB writes the index entry twice (a delete and a put). A primary key \
cannot change at all: the item must be deleted and put again (AWS, \"Best practices for \
using sort keys to organize data\"; \"Managing Global Secondary Indexes\").";

const SPARSE_INDEX_WHY: &str = "An index holds only the items that carry its keys, and a \
write that puts one, or changes what the index projects of it, costs the index's write units \
too; an index only the type a pattern reads \
carries is sparse, and a filter of one type over it reads that type alone (AWS, \"Take \
advantage of sparse indexes\").";

const SCAN_COST_WHY: &str = "A Scan reads the items of its table or index in turn and \
costs every item it reads, whatever its filter keeps; a Scan of a sparse index reads only the \
few items that carry its keys (AWS, \"Best practices for querying and scanning data\"; \"Take \
advantage of sparse indexes\").";

const CONSISTENT_READ_WHY: &str = "A global secondary index is only eventually consistent: \
it takes no ConsistentRead, and a write reaches it after the base table, usually within a \
second (AWS, \"Using Global Secondary Indexes in DynamoDB\", read consistency).";

const GLOBAL_MARKER_WHY: &str = "A marker keyed without the tenant holds one value for every \
tenant: a create or change of one tenant refused with `CONFLICT` for a value tells it that some \
other tenant holds that value (an email address, a phone number, a client token), which a \
marker keyed by the tenant never does.";

/// One Query's most: 1 MB.
const QUERY_BYTES: u64 = 1024 * 1024;

/// One BatchGetItem's most: 16 MB.
const BATCH_GET_BYTES: u64 = 16 * 1024 * 1024;

/// One transaction's most: 4 MB.
const TRANSACTION_BYTES: u64 = 4 * 1024 * 1024;

/// The advice on `chart`, by entity.
pub fn advise(chart: &Chart) -> Vec<Advice> {
    let mut out = Vec::new();
    hot_counters(chart, &mut out);
    hot_index_partitions(chart, &mut out);
    item_sizes(chart, &mut out);
    transaction_sizes(chart, &mut out);
    page_sizes(chart, &mut out);
    changing_sort_keys(chart, &mut out);
    sparse_indexes(chart, &mut out);
    scan_costs(chart, &mut out);
    consistent_reads(chart, &mut out);
    global_markers(chart, &mut out);
    import_todos(chart, &mut out);
    out.sort_by(|a, b| {
        a.entity
            .cmp(&b.entity)
            .then(a.rule.cmp(b.rule))
            .then(a.pattern.cmp(&b.pattern))
    });
    out
}

/// The mutations that create items of `e`, by name: its own creates, and a parent's that
/// write it as one of a list's children (`with`).
fn creates<'a>(chart: &'a Chart, e: &str) -> Vec<&'a str> {
    chart
        .mutations
        .values()
        .filter(|m| m.action == Action::Create)
        .filter(|m| {
            m.entity == e
                || m.with.keys().any(|list| {
                    super::list_child(
                        &chart.entities,
                        &chart.patterns,
                        &chart.entities[&m.entity],
                        list,
                    )
                    .is_some_and(|child| child.name == e)
                })
        })
        .map(|m| m.name.as_str())
        .collect()
}

/// `12 KB`, `1.2 MB`, `800 B`: a size as a sentence says it, rounded up (so a size past a
/// limit never reads as the limit).
fn bytes_text(b: u64) -> String {
    const MB: u64 = 1024 * 1024;
    if b >= MB {
        let tenths = (b * 10).div_ceil(MB);
        format!("{}.{} MB", tenths / 10, tenths % 10)
    } else if b >= 1024 {
        format!("{} KB", b.div_ceil(1024))
    } else {
        format!("{b} B")
    }
}

/// A counter on the tenant's own item that every create of its children updates, with no
/// counter shards: one tenant's creates are held to one item's write rate.
fn hot_counters(chart: &Chart, out: &mut Vec<Advice>) {
    let Some(tenant) = chart.tenant.as_ref().map(|t| t.entity.as_str()) else {
        return;
    };
    if chart.shards_of(tenant).is_some() {
        return;
    }
    for e in chart.declared() {
        for c in &e.writes.counts {
            if e.references.get(&c.reference).map(|r| r.entity.as_str()) != Some(tenant) {
                continue;
            }
            let creates = creates(chart, &e.name);
            if creates.is_empty() {
                continue;
            }
            out.push(Advice {
                rule: "hot-partition",
                entity: tenant.to_owned(),
                pattern: None,
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
                why: HOT_COUNTER_WHY,
            });
        }
    }
}

/// An index partition every create of one tenant's items writes into: the index's
/// partition key built from the tenant alone, or with it a value every create gives the
/// same (its life cycle's first status) or one of an enum's few. Without the tenant in it,
/// every create of the whole table does. (A tenant's own item is created once: not it.)
fn hot_index_partitions(chart: &Chart, out: &mut Vec<Advice>) {
    let tenant_entity = chart.tenant.as_ref().map(|t| t.entity.as_str());
    for e in chart.declared() {
        let creates = creates(chart, &e.name);
        if creates.is_empty() || tenant_entity == Some(e.name.as_str()) {
            continue;
        }
        let tenant = chart.tenant_attribute(e);
        for (index, keys) in &e.indexes {
            let mut holds_tenant = false;
            // What each value of the key is, and how many partitions an enum's make.
            let mut same = Vec::new();
            let mut partitions = 1usize;
            let few = keys.pk.vars().all(|v| {
                let Some(a) = e.attributes.get(&v.name) else {
                    return false;
                };
                // An optional value leaves the index sparse: not every create writes it.
                if a.optional {
                    return false;
                }
                if Some(&v.name) == tenant.as_ref() {
                    holds_tenant = true;
                    return true;
                }
                let initial = e
                    .writes
                    .lifecycle
                    .as_ref()
                    .filter(|l| l.attribute == v.name)
                    .map(|l| l.initial.clone());
                match (&a.ty, initial) {
                    (_, Some(initial)) => {
                        same.push(format!("`{}` {initial}", v.name));
                        true
                    }
                    (Type::Enum { values, .. }, None) if values.len() <= FEW => {
                        same.push(format!("`{}` one of {}", v.name, values.len()));
                        partitions *= values.len();
                        true
                    }
                    _ => false,
                }
            });
            if !few {
                continue;
            }
            let whose = match (&chart.tenant, holds_tenant) {
                (Some(t), true) => format!("of one {}", super::words(&t.entity)),
                _ => "of the whole table".to_owned(),
            };
            let into = if partitions == 1 {
                "one partition".to_owned()
            } else {
                format!("one of {partitions} partitions")
            };
            out.push(Advice {
                rule: "hot-partition",
                entity: e.name.clone(),
                pattern: None,
                message: format!(
                    "every {} {whose} writes its {index} keys into {into} (`{}`{}): an index \
                     partition takes about 1 000 write units a second, one a KB the item \
                     projects, so about {partitions} 000 new {} a second of 1 KB{}; past it the \
                     index's throttling holds back the table's writes. Write sharding spreads \
                     it: a suffix from 0 to N − 1 on the index's partition key, which a \
                     pattern then reads N times",
                    creates.join(" or "),
                    super::explain::shown(&keys.pk),
                    if same.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", same.join(", "))
                    },
                    super::plural(&e.name),
                    if partitions == 1 {
                        ""
                    } else {
                        " at best, spread evenly"
                    },
                ),
                why: HOT_INDEX_WHY,
            });
        }
    }
}

/// An enum of up to this many values makes few partitions of an index.
const FEW: usize = 8;

/// An item that can outgrow 400 KB: a list or map attribute (of the entity, or of a shape
/// it holds) with no `max_items`, a shape that holds itself, or attributes whose bounds
/// add up past it.
fn item_sizes(chart: &Chart, out: &mut Vec<Advice>) {
    for e in chart.declared() {
        let mut warned = false;
        for (name, a) in &e.attributes {
            if let Some((path, why)) = size::unbounded(chart, &a.ty, name) {
                warned = true;
                out.push(Advice {
                    rule: "item-size",
                    entity: e.name.clone(),
                    pattern: None,
                    message: format!(
                        "`{path}` {why}: the item grows with it, and a write that takes it past \
                         400 KB is refused"
                    ),
                    why: ITEM_SIZE_WHY,
                });
            }
        }
        let s = size::max_item(chart, e);
        if !warned && s.bytes > size::MAX_ITEM_BYTES {
            out.push(Advice {
                rule: "item-size",
                entity: e.name.clone(),
                pattern: None,
                message: format!(
                    "its attributes at their largest take {} ({}), past the 400 KB of one \
                     item: a write that reaches it is refused. Bound them lower",
                    bytes_text(s.bytes),
                    largest(chart, e),
                ),
                why: ITEM_SIZE_WHY,
            });
        }
    }
}

/// What makes an entity's items as large as they can be: its largest attribute, or the
/// one only DynamoDB's limit bounds.
fn largest(chart: &Chart, e: &Entity) -> String {
    let s = size::max_item(chart, e);
    match s.unbounded {
        Some(a) => format!("`{a}`, which nothing bounds"),
        None => match size::largest_attribute(chart, e) {
            Some((a, b)) => format!("`{a}` up to {}", bytes_text(b)),
            None => "its keys".to_owned(),
        },
    }
}

/// A mutation whose transaction can total more than 4 MB: each item it writes at its most.
fn transaction_sizes(chart: &Chart, out: &mut Vec<Advice>) {
    for m in chart.mutations.values() {
        let written = &chart.plans[&m.name].steps;
        let mut total = 0u64;
        let mut biggest: Option<(&str, u64, u64)> = None;
        for w in written {
            let Some(e) = chart.entities.get(&w.entity) else {
                continue;
            };
            let each = size::max_item(chart, e).stored();
            total += each * w.most;
            if biggest.is_none_or(|(_, b, k)| b * k < each * w.most) {
                biggest = Some((&w.entity, each, w.most));
            }
        }
        if total <= TRANSACTION_BYTES {
            continue;
        }
        let items: u64 = written.iter().map(|w| w.most).sum();
        let (entity, each, n) = biggest.expect("a transaction writes an item");
        out.push(Advice {
            rule: "transaction-size",
            entity: m.entity.clone(),
            pattern: Some(m.pattern),
            message: format!(
                "`{}` writes up to {items} items in one TransactWriteItems, {} in all at their \
                 largest ({n} {} of up to {} each: {}), past the 4 MB one transaction takes: \
                 DynamoDB would refuse it whole. Bound what makes them large, or write fewer \
                 in one",
                m.name,
                bytes_text(total),
                if n == 1 {
                    super::words(entity)
                } else {
                    super::plural(entity)
                },
                bytes_text(each),
                largest(chart, &chart.entities[entity]),
            ),
            why: TRANSACTION_SIZE_WHY,
        });
    }
}

/// The most children one read of a Query pattern returns: a list's `max` where a list
/// reads it whole, the largest page where a connection (or a root field) pages it.
fn children_read(chart: &Chart, pattern: u32) -> u64 {
    let page = u64::from(crate::chart::MAX_PAGE_SIZE);
    let lists: Vec<u64> = chart
        .entities
        .values()
        .flat_map(|e| e.lists.values())
        .filter(|l| l.pattern == pattern)
        .map(|l| u64::from(l.max.unwrap_or(crate::chart::MAX_PAGE_SIZE)))
        .collect();
    let paged = chart
        .entities
        .values()
        .flat_map(|e| e.connections.values())
        .any(|c| c.pattern == pattern);
    match lists.iter().max() {
        Some(most) if !paged => *most,
        Some(most) => page.max(*most),
        None => page,
    }
}

/// A Query pattern whose largest first page (its parent, what it reads beside it, and the
/// most children a page holds) can pass the 1 MB one Query returns.
fn page_sizes(chart: &Chart, out: &mut Vec<Advice>) {
    for p in chart.patterns.values() {
        let Request::Query {
            condition,
            parent,
            beside,
            children,
            then_get,
            ..
        } = &p.request
        else {
            continue;
        };
        if *then_get {
            batch_get_sizes(chart, p, children, out);
        }
        // What the index holds of each item: all of it, or its keys and what it includes.
        let index = condition.index.as_deref();
        let size_of = |e: &str| size::max_item_in(chart, &chart.entities[e], index).stored();
        let mut carried = parent.as_deref().map_or(0, size_of);
        for b in beside {
            carried += u64::from(chart.entities[b].items_beside()) * size_of(b);
        }
        let n = children_read(chart, p.number);
        let each = size_of(children);
        let total = carried + n * each;
        if total <= QUERY_BYTES {
            continue;
        }
        let fits = QUERY_BYTES.saturating_sub(carried) / each.max(1);
        out.push(Advice {
            rule: "page-size",
            entity: children.clone(),
            pattern: Some(p.number),
            message: format!(
                "{} reads {}up to {n} {} of up to {} each ({}): {} in all, past the 1 MB one \
                 Query returns, so DynamoDB stops after about {fits} and a client that asked \
                 for {n} gets fewer and pages on, with another request. Bound what makes them \
                 large, or page smaller",
                p.name,
                parent
                    .as_deref()
                    .map(|pa| format!("the {} and ", super::words(pa)))
                    .unwrap_or_default(),
                super::plural(children),
                bytes_text(each),
                largest(chart, &chart.entities[children]),
                bytes_text(total),
            ),
            why: PAGE_SIZE_WHY,
        });
    }
}

/// A Query followed by a BatchGetItem of its page's keys whose largest page of whole
/// items can pass the 16 MB one BatchGetItem returns: the rest comes back unprocessed and
/// is read by another request, past the pattern's two.
fn batch_get_sizes(chart: &Chart, p: &super::Pattern, children: &str, out: &mut Vec<Advice>) {
    let e = &chart.entities[children];
    let n = children_read(chart, p.number);
    let each = size::max_item_in(chart, e, None).stored();
    let total = n * each;
    if total <= BATCH_GET_BYTES {
        return;
    }
    out.push(Advice {
        rule: "page-size",
        entity: children.to_owned(),
        pattern: Some(p.number),
        message: format!(
            "{} reads up to {n} {} whole by one BatchGetItem, up to {} each ({}): {} in all, \
             past the 16 MB one BatchGetItem returns, so the rest comes back unprocessed and \
             takes another request. Bound what makes them large, or page smaller",
            p.name,
            super::plural(children),
            bytes_text(each),
            largest(chart, e),
            bytes_text(total),
        ),
        why: BATCH_GET_WHY,
    });
}

/// The attributes of `e` a mutation changes, each with what changes it: the first
/// mutation that changes it, or every change (the version, a time of every write).
fn changed(chart: &Chart, e: &Entity) -> Vec<(String, String)> {
    let updates: Vec<&super::Mutation> = chart
        .mutations
        .values()
        .filter(|m| m.entity == e.name && m.action == Action::Update)
        .collect();
    let mut out: Vec<(String, String)> = Vec::new();
    for m in &updates {
        for f in &m.fields {
            if !out.iter().any(|(a, _)| a == f) {
                out.push((f.clone(), format!("`{}`", m.name)));
            }
        }
    }
    if !updates.is_empty() {
        let every = e
            .attributes
            .iter()
            .filter(|(_, a)| a.auto == Some(super::Auto::Updated))
            .map(|(name, _)| name)
            .chain(e.writes.version.iter());
        for a in every {
            if !out.iter().any(|(x, _)| x == a) {
                out.push((a.clone(), "every change".to_owned()));
            }
        }
    }
    out
}

/// An index sort key built from an attribute a mutation changes. (A primary key's is
/// refused at start: no mutation may change one.)
fn changing_sort_keys(chart: &Chart, out: &mut Vec<Advice>) {
    for e in chart.declared() {
        let changed = changed(chart, e);
        for (index, keys) in &e.indexes {
            for v in keys.sk.vars() {
                let Some((_, by)) = changed.iter().find(|(a, _)| *a == v.name) else {
                    continue;
                };
                let read = chart
                    .patterns
                    .values()
                    .filter(|p| reads(p, index, &e.name))
                    .map(|p| p.number.to_string())
                    .collect::<Vec<_>>();
                out.push(Advice {
                    rule: "changing-sort-key",
                    entity: e.name.clone(),
                    pattern: None,
                    message: format!(
                        "its {index} sort key `{}` is built from `{}`, which {by} changes: a \
                         change moves the {} within its partition{}, so a client paging it by \
                         cursor sees it twice or not at all, and the index entry is written \
                         twice. Sort by what does not change (its id, its creation time)",
                        super::explain::shown(&keys.sk),
                        v.name,
                        super::words(&e.name),
                        match read.len() {
                            0 => String::new(),
                            1 => format!(" (pattern {})", read[0]),
                            _ => format!(" (patterns {})", read.join(", ")),
                        },
                    ),
                    why: CHANGING_SORT_KEY_WHY,
                });
            }
        }
    }
}

/// Whether pattern `p` reads `entity` from `index`.
fn reads(p: &super::Pattern, index: &str, entity: &str) -> bool {
    match &p.request {
        Request::Query {
            condition,
            parent,
            beside,
            children,
            ..
        } => {
            condition.index.as_deref() == Some(index)
                && (children == entity
                    || parent.as_deref() == Some(entity)
                    || beside.iter().any(|b| b == entity))
        }
        Request::GetItem {
            with_shards: Some(c),
            entity: e,
        } => c.index.as_deref() == Some(index) && e == entity,
        Request::Scan { index: i, children } => i == index && children == entity,
        _ => false,
    }
}

/// Whether a template renders from `names` alone.
fn renders_from(t: &Template, names: &[&str]) -> bool {
    t.vars().all(|v| names.contains(&v.name.as_str()))
}

/// An entity carrying keys in an index that no pattern reads it from, nor a mutation
/// finds it through (an item named by a plain id its primary key does not hold).
fn sparse_indexes(chart: &Chart, out: &mut Vec<Advice>) {
    for e in chart.declared() {
        for (index, keys) in &e.indexes {
            if chart.patterns.values().any(|p| reads(p, index, &e.name)) {
                continue;
            }
            let found_by_id = e.plain_id.as_deref().is_some_and(|id| {
                let tenant = chart.tenant_attribute(e);
                let mut names = vec![id];
                names.extend(tenant.as_deref());
                chart
                    .mutations
                    .values()
                    .any(|m| m.entity == e.name && m.by_id && m.action != Action::Create)
                    && !renders_from(&e.key.pk, &names)
                    && renders_from(&keys.pk, &names)
                    && renders_from(&keys.sk, &names)
            });
            if found_by_id {
                continue;
            }
            out.push(Advice {
                rule: "sparse-index",
                entity: e.name.clone(),
                pattern: None,
                message: format!(
                    "it carries {index} keys (`{}` / `{}`), and no pattern reads {} from \
                     {index}: every put of one, and every change of what {index} holds of it, \
                     costs {index}'s write units and storage for nothing. Leave them out, so \
                     {index} holds only what its patterns read",
                    super::explain::shown(&keys.pk),
                    super::explain::shown(&keys.sk),
                    super::plural(&e.name),
                ),
                why: SPARSE_INDEX_WHY,
            });
        }
    }
}

/// A Scan pattern whose index is not sparse for its entity (every item of it carries the
/// keys: the Scan reads them all), or that reads every tenant's items to keep the
/// caller's (each page costs what every tenant's share of the index costs).
fn scan_costs(chart: &Chart, out: &mut Vec<Advice>) {
    for p in chart.patterns.values() {
        let Request::Scan { index, children } = &p.request else {
            continue;
        };
        let e = &chart.entities[children];
        let Some(keys) = e.indexes.get(index) else {
            continue;
        };
        let every = keys
            .pk
            .vars()
            .chain(keys.sk.vars())
            .all(|v| e.attributes.get(&v.name).is_some_and(|a| !a.optional));
        let plural = super::plural(children);
        if every {
            out.push(Advice {
                rule: "scan-cost",
                entity: e.name.clone(),
                pattern: Some(p.number),
                message: format!(
                    "every one of the {plural} carries {index} keys (`{}` / `{}` are made of \
                     attributes each has): the Scan reads them all, a page at a time, not a sparse \
                     few. Key {index} by an optional attribute only the {plural} it lists hold",
                    super::explain::shown(&keys.pk),
                    super::explain::shown(&keys.sk),
                ),
                why: SCAN_COST_WHY,
            });
        }
        if let (Some(t), Some(attr)) = (&chart.tenant, e.binding.condition_or_key()) {
            out.push(Advice {
                rule: "scan-cost",
                entity: e.name.clone(),
                pattern: Some(p.number),
                message: format!(
                    "the Scan of {index} reads every {tenant}'s {plural} and keeps the caller's \
                     (a filter on `{attr}`): a page costs the items read, which grow with every \
                     {tenant}, and may hold fewer than asked. Where each {tenant} lists its own, \
                     an index whose partition holds `{attr}` answers one Query of just those",
                    tenant = super::words(&t.entity),
                ),
                why: SCAN_COST_WHY,
            });
        }
    }
}

/// A root field reading one item through an index, where a mutation creates or changes
/// that item: a client reading back what it just wrote may not find it there yet.
fn consistent_reads(chart: &Chart, out: &mut Vec<Advice>) {
    for (field, root) in &chart.query {
        let Some(p) = chart.patterns.get(&root.pattern) else {
            continue;
        };
        let Request::Query { condition, .. } = &p.request else {
            continue;
        };
        let Some(index) = &condition.index else {
            continue;
        };
        let writes: Vec<&str> = chart
            .mutations
            .values()
            .filter(|m| m.entity == root.entity && m.action != Action::Delete)
            .map(|m| m.name.as_str())
            .collect();
        if writes.is_empty() {
            continue;
        }
        out.push(Advice {
            rule: "consistent-read",
            entity: root.entity.clone(),
            pattern: Some(p.number),
            message: format!(
                "`Query.{field}` reads {} through {index}, which cannot be read consistently: \
                 a client that reads one just after `{}` may find none, or it as it was, for a \
                 moment. Read it back from the mutation's payload, or give `Query.{field}` a \
                 pattern of the base table",
                super::one(&root.entity),
                writes.join("` or `"),
            ),
            why: CONSISTENT_READ_WHY,
        });
    }
}

/// Markers global on purpose: each told of, with what it tells.
fn global_markers(chart: &Chart, out: &mut Vec<Advice>) {
    for e in chart.declared().filter(|e| e.global) {
        let kept: Vec<String> = chart
            .declared()
            .flat_map(|owner| {
                owner
                    .writes
                    .unique
                    .iter()
                    .filter(|(_, m)| **m == e.name)
                    .map(move |(a, _)| format!("`{}.{a}`", owner.name))
            })
            .chain(
                chart
                    .mutations
                    .values()
                    .filter(|m| m.token.as_deref() == Some(e.name.as_str()))
                    .map(|m| format!("`{}`'s client tokens", m.name)),
            )
            .collect();
        out.push(Advice {
            rule: "global-marker",
            entity: e.name.clone(),
            pattern: None,
            message: format!(
                "`global = true`: {} unique across every tenant, so a `CONFLICT` tells one tenant that another holds the value",
                kept.join(", ")
            ),
            why: GLOBAL_MARKER_WHY,
        });
    }
}

const IMPORT_TODO_WHY: &str = "`itemgraph chart import` drafts a chart from what a NoSQL \
Workbench model shows (its facets, key aliases and sample items) and writes `# TODO:` where \
the model does not tell: a chart served with one left serves what the samples suggested, \
not what the design is.";

/// Each `# TODO:` comment `chart import` left in the chart's text.
fn import_todos(chart: &Chart, out: &mut Vec<Advice>) {
    for (n, line) in chart.source.lines().enumerate() {
        if let Some(what) = line.trim_start().strip_prefix("# TODO:") {
            out.push(Advice {
                rule: "import-todo",
                entity: String::new(),
                pattern: None,
                message: format!("line {}: {}", n + 1, what.trim()),
                why: IMPORT_TODO_WHY,
            });
        }
    }
}
