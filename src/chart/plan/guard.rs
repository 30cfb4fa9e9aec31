//! The conditions a mutation's actions are written on, resolved once with the plan: each
//! [`Guard`] names the attributes it compares, and the write path only fills in their
//! values (the caller's tenant, the item as read, the version given, the time now).

use std::fmt;

use super::super::{Binding, Chart, Entity};

/// What an action of a step does to its item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Put,
    Update,
    Delete,
    /// A ConditionCheck: the item is read, not written.
    Check,
    /// A DeleteRequest of a BatchWriteItem: by key, and on no condition (a batch takes
    /// none).
    BatchDelete,
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verb::Put => "PutItem",
            Verb::Update => "UpdateItem",
            Verb::Delete => "DeleteItem",
            Verb::Check => "ConditionCheck",
            Verb::BatchDelete => "DeleteRequest in a BatchWriteItem",
        })
    }
}

/// One kind of action a step sends, and every part of the condition it is sent on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Act {
    pub verb: Verb,
    /// Its condition: all of these.
    pub when: Vec<Guard>,
}

impl Act {
    pub(super) fn new(verb: Verb, when: Vec<Guard>) -> Self {
        Act { verb, when }
    }
}

impl fmt::Display for Act {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.verb)?;
        // A guard on nothing (a write built from a read of an item that keeps nothing of
        // what it read) says nothing.
        let said = self
            .when
            .iter()
            .map(ToString::to_string)
            .filter(|g| !g.is_empty());
        for (i, g) in said.enumerate() {
            f.write_str(if i == 0 { " if " } else { " AND " })?;
            f.write_str(&g)?;
        }
        Ok(())
    }
}

/// Whose tenant a [`Guard::Tenant`] holds the item to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantIs {
    /// The caller's (a write sent without reading first); none for a caller who sees
    /// every tenant.
    Caller,
    /// The one the item was read as: a write built from a read lands only on that
    /// tenant's item, whatever was deleted and made again at its key between.
    AsRead,
    /// The writer's item's, held in this attribute of it: a count or a check on an item a
    /// reference names lands only on an item of the writer's tenant.
    Writers(String),
}

/// One part of an action's condition, its attributes resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// The key is free: nothing at it (`key` not there) or, where the entity expires
    /// (`expiry`), an item whose expiry has passed.
    Free { key: String, expiry: Option<String> },
    /// Nothing at the key at all: a child of a new item, a new item's counter shard.
    Absent { key: String },
    /// The item is there and, where it expires, its expiry has not passed (DynamoDB has
    /// not deleted it yet, and reads hide it).
    Present { key: String, expiry: Option<String> },
    /// The item's tenant `attribute` holds a tenant: the tenant binding where the key
    /// does not hold it ([`Binding::Condition`]).
    Tenant { attribute: String, is: TenantIs },
    /// The item's version is the `expectedVersion` the input gives (no condition when it
    /// gives none and may).
    Version { attribute: String },
    /// What the write was built from is still as read: each attribute its value read, or
    /// absent as read (unique values, references counted on, values that pick a counter,
    /// a life cycle's state).
    AsRead { attributes: Vec<String> },
    /// Each index key a change rewrites: every attribute it is rendered from as read, so
    /// two changes of its parts at once cannot leave the item where neither would.
    IndexSources { indexes: Vec<IndexSources> },
    /// The marker names its owner (or is gone): each of the owner's key values in
    /// `values`.
    NamesOwner { key: String, values: Vec<String> },
    /// Each counter the action takes from is above 0 (a count on the item itself; a
    /// shard's part may go below 0).
    Positive,
    /// The map attribute is there (an entry's path needs it).
    HasMap { map: String },
    /// The map attribute is not there (the first entry is written as the whole map).
    NoMap { map: String },
    /// There is room for the entry: its key is there already, or the map holds fewer than
    /// `max` entries.
    Room { map: String, max: usize },
    /// No other item counts on it any more: each of `counters` absent or 0.
    Unreferenced { counters: Vec<String> },
}

/// An index key a change may rewrite, and the attributes it is rendered from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSources {
    /// The index's key attributes (partition, and sort where it has one).
    pub keys: Vec<String>,
    pub sources: Vec<String>,
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let each = |f: &mut fmt::Formatter<'_>, names: &[String], one: &str| {
            let parts: Vec<String> = names.iter().map(|a| one.replace('@', a)).collect();
            f.write_str(&parts.join(" AND "))
        };
        match self {
            Guard::Free { key, expiry: None } | Guard::Absent { key } => {
                write!(f, "attribute_not_exists({key})")
            }
            Guard::Free {
                key,
                expiry: Some(t),
            } => write!(f, "(attribute_not_exists({key}) OR {t} <= :now)"),
            Guard::Present { key, expiry: None } => write!(f, "attribute_exists({key})"),
            Guard::Present {
                key,
                expiry: Some(t),
            } => write!(
                f,
                "attribute_exists({key}) AND (attribute_not_exists({t}) OR {t} > :now)"
            ),
            Guard::Tenant { attribute, is } => match is {
                TenantIs::Caller => write!(f, "{attribute} = :callersTenant"),
                TenantIs::AsRead => write!(f, "{attribute} = :{attribute}AsRead"),
                TenantIs::Writers(a) => write!(f, "{attribute} = :writers.{a}"),
            },
            Guard::Version { attribute } => write!(f, "{attribute} = :expectedVersion"),
            Guard::AsRead { attributes } => each(f, attributes, "@ = :@AsRead"),
            Guard::IndexSources { indexes } => {
                let mut sources: Vec<String> = Vec::new();
                for i in indexes {
                    for s in &i.sources {
                        if !sources.contains(s) {
                            sources.push(s.clone());
                        }
                    }
                }
                f.write_str("(when an index key is rewritten) ")?;
                each(f, &sources, "@ = :@AsRead")
            }
            Guard::NamesOwner { key, values } => {
                write!(f, "(attribute_not_exists({key}) OR ")?;
                each(f, values, "@ = :owner.@")?;
                f.write_str(")")
            }
            Guard::Positive => f.write_str("each counter taken from > 0"),
            Guard::HasMap { map } => write!(f, "attribute_exists({map})"),
            Guard::NoMap { map } => write!(f, "attribute_not_exists({map})"),
            Guard::Room { map, max } => {
                write!(f, "(attribute_exists({map}.:key) OR size({map}) < {max})")
            }
            Guard::Unreferenced { counters } => {
                let parts: Vec<String> = counters
                    .iter()
                    .map(|c| format!("(attribute_not_exists({c}) OR {c} = 0)"))
                    .collect();
                f.write_str(&parts.join(" AND "))
            }
        }
    }
}

impl Guard {
    /// The attributes its condition compares.
    pub fn attributes(&self) -> Vec<&str> {
        match self {
            Guard::Free { key, expiry } | Guard::Present { key, expiry } => {
                std::iter::once(key.as_str())
                    .chain(expiry.as_deref())
                    .collect()
            }
            Guard::Absent { key } => vec![key],
            Guard::Tenant { attribute, .. } | Guard::Version { attribute } => vec![attribute],
            Guard::AsRead { attributes } => attributes.iter().map(String::as_str).collect(),
            Guard::IndexSources { indexes } => indexes
                .iter()
                .flat_map(|i| i.sources.iter().map(String::as_str))
                .collect(),
            Guard::NamesOwner { key, values } => std::iter::once(key.as_str())
                .chain(values.iter().map(String::as_str))
                .collect(),
            // Whichever counters the action takes from.
            Guard::Positive => Vec::new(),
            Guard::Unreferenced { counters } => counters.iter().map(String::as_str).collect(),
            Guard::HasMap { map } | Guard::NoMap { map } | Guard::Room { map, .. } => {
                vec![map]
            }
        }
    }
}

/// `e`'s key free for a new item.
pub(super) fn free(chart: &Chart, e: &Entity) -> Guard {
    Guard::Free {
        key: chart.table_of(e).partition_key.clone(),
        expiry: e.expiry(chart.table_of(e)).map(str::to_owned),
    }
}

/// Nothing at the key of an item of `e`.
pub(super) fn absent(chart: &Chart, e: &Entity) -> Guard {
    Guard::Absent {
        key: chart.table_of(e).partition_key.clone(),
    }
}

/// An item of `e` there.
pub(super) fn present(chart: &Chart, e: &Entity) -> Guard {
    Guard::Present {
        key: chart.table_of(e).partition_key.clone(),
        expiry: e.expiry(chart.table_of(e)).map(str::to_owned),
    }
}

/// An item of `e` held to the tenant `is` names, where its binding says so.
pub(super) fn tenant(e: &Entity, is: TenantIs) -> Option<Guard> {
    match &e.binding {
        Binding::Condition(attribute) => Some(Guard::Tenant {
            attribute: attribute.clone(),
            is,
        }),
        _ => None,
    }
}

/// An item of `at` that a write of an item of `writer` counts on or checks: there, and
/// of the writer's tenant where its key does not say (rule `tenant` makes a key that
/// says it say the writer's own).
pub(super) fn referenced(chart: &Chart, writer: &Entity, at: &Entity) -> Vec<Guard> {
    let mut when = vec![present(chart, at)];
    if let Some(mine) = chart.tenant_attribute(writer) {
        when.extend(tenant(at, TenantIs::Writers(mine)));
    }
    when
}

/// A marker (an item of `marker`) of `owner`'s dropped or renewed only where it names
/// the owner.
pub(super) fn names_owner(chart: &Chart, owner: &Entity, marker: &Entity) -> Guard {
    let mut values: Vec<String> = Vec::new();
    for v in owner.key.pk.vars().chain(owner.key.sk.vars()) {
        if !values.contains(&v.name) {
            values.push(v.name.clone());
        }
    }
    Guard::NamesOwner {
        key: chart.table_of(marker).partition_key.clone(),
        values,
    }
}

/// What a write of `e` built from a read depends on: its unique values, the references it
/// counts on and the values that pick their counters, its life cycle's state.
pub(super) fn as_read(e: &Entity) -> Guard {
    let mut attributes: Vec<String> = e.writes.unique.keys().cloned().collect();
    for c in &e.writes.counts {
        attributes.extend(e.references[&c.reference].key.values().cloned());
        attributes.extend(c.by_attributes().map(str::to_owned));
    }
    attributes.extend(e.writes.lifecycle.iter().map(|l| l.attribute.clone()));
    Guard::AsRead { attributes }
}

/// Each index key of `e` and what it is rendered from.
pub(super) fn index_sources(chart: &Chart, e: &Entity) -> Option<Guard> {
    let indexes: Vec<IndexSources> = e
        .indexes
        .iter()
        .map(|(index, k)| {
            let i = &chart.indexes[index];
            let mut sources: Vec<String> = Vec::new();
            for v in k.pk.vars().chain(k.sk.vars()) {
                if !sources.contains(&v.name) {
                    sources.push(v.name.clone());
                }
            }
            IndexSources {
                keys: i.key_names().into_iter().map(str::to_owned).collect(),
                sources,
            }
        })
        .collect();
    (!indexes.is_empty()).then_some(Guard::IndexSources { indexes })
}

/// The counters of `e` that other entities keep, each with what a refused delete calls
/// the items it counts: the counter's `referrers`, else the connection it totals, else
/// the counter itself. Each guards a delete while not 0.
pub fn counted_on(chart: &Chart, e: &Entity) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for other in chart.declared() {
        for c in &other.writes.counts {
            if other
                .references
                .get(&c.reference)
                .is_none_or(|r| r.entity != e.name)
            {
                continue;
            }
            for counter in c.all() {
                if out.iter().any(|(g, _)| *g == counter) {
                    continue;
                }
                let named = e
                    .attributes
                    .get(&counter)
                    .and_then(|a| a.referrers.clone())
                    .or_else(|| {
                        e.connections.iter().find_map(|(name, spec)| {
                            matches!(&spec.total, Some(super::super::format::Total::Counter(t)) if *t == counter)
                                .then(|| name.clone())
                        })
                    })
                    .unwrap_or_else(|| counter.clone());
                out.push((counter, named));
            }
        }
    }
    out
}

/// A delete's guard that nothing counts on the item, where anything may.
pub(super) fn unreferenced(chart: &Chart, e: &Entity) -> Option<Guard> {
    let counters: Vec<String> = counted_on(chart, e).into_iter().map(|(c, _)| c).collect();
    (!counters.is_empty()).then_some(Guard::Unreferenced { counters })
}
