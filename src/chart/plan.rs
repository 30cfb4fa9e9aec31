//! Each mutation of a chart resolved once, when the chart is read: the items it writes,
//! as steps in the order a create sends them (its client token's marker, the item, the
//! children written with it, its unique markers, the counters its references keep and the
//! references checked to exist, its counter shards), each with the entity its items are
//! items of and how many it writes at least and at most. A change's plan holds what any
//! change of its fields may write (a marker moved, or renewed when the item's expiry
//! moves; a count moved): which of them a given change writes depends on its values.
//!
//! `chart explain` prints these plans (its actions and write units), `chart check`'s
//! `transaction-size` adds up their items, the write path sends a create's actions in
//! their order, and `tests/graphql/plans.rs` holds every action the write path sends, for
//! every mutation of every example chart, to its mutation's plan.

use indexmap::IndexMap;

use super::{list_child, Action, Chart, Entity, Mutation};

/// What an item a mutation writes is to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A client token's marker, put first (a create with a token).
    Token,
    /// The item itself.
    Item,
    /// Children written with the item (a list's).
    Children,
    /// A unique marker (a change of the value: the old one deleted, the new one put).
    Marker,
    /// An update of a counter on the item a reference names.
    Counter,
    /// A ConditionCheck that a reference no count verifies names an item.
    Check,
    /// The counter shards a create starts the item with.
    Shards,
}

/// Some of the items a mutation writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub role: Role,
    /// The entity they are items of. A counter update is named by the item counted on:
    /// where that has counter shards the update goes to one of them, which holds no more
    /// than it (and an item from before its shards is counted on itself).
    pub entity: String,
    /// What the step is for: the list, the unique attribute, the counted or checked
    /// reference (none for the item, its shards and a token).
    pub of: Option<String>,
    /// How many at least (0: only when an optional value is given, or a value changes)
    /// and at most.
    pub least: u64,
    pub most: u64,
}

/// A mutation as the write path runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MutationPlan {
    pub mutation: String,
    pub entity: String,
    pub action: Action,
    pub steps: Vec<Step>,
}

impl MutationPlan {
    /// The items it writes at least.
    pub fn least(&self) -> u64 {
        self.steps.iter().map(|s| s.least).sum()
    }

    /// The items it writes at most, of one role or (`None`) of all.
    pub fn most(&self, role: Option<Role>) -> u64 {
        self.steps
            .iter()
            .filter(|s| role.is_none_or(|r| s.role == r))
            .map(|s| s.most)
            .sum()
    }

    /// Its steps of `role`.
    pub fn of(&self, role: Role) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(move |s| s.role == role)
    }
}

/// Every mutation of `chart` resolved, by name.
pub fn resolve(chart: &Chart) -> IndexMap<String, MutationPlan> {
    chart
        .mutations
        .values()
        .map(|m| (m.name.clone(), plan(chart, m)))
        .collect()
}

fn plan(chart: &Chart, m: &Mutation) -> MutationPlan {
    let e: &Entity = &chart.entities[&m.entity];
    let step = |role: Role, entity: &str, of: Option<&str>, least: u64, most: u64| Step {
        role,
        entity: entity.to_owned(),
        of: of.map(str::to_owned),
        least,
        most,
    };
    let referenced = |r: &str| e.references[r].entity.as_str();
    let optional_ref = |r: &str| {
        e.references[r]
            .key
            .values()
            .any(|a| e.attributes[a].optional)
    };
    let optional = |a: &str| e.attributes[a].optional;
    let mut steps = Vec::new();
    // What a create and a delete both write: each marker, each counter kept.
    let kept = |steps: &mut Vec<Step>| {
        for (attr, marker) in &e.writes.unique {
            steps.push(step(
                Role::Marker,
                marker,
                Some(attr),
                u64::from(!optional(attr)),
                1,
            ));
        }
        for c in &e.writes.counts {
            let r = c.reference.as_str();
            steps.push(step(
                Role::Counter,
                referenced(r),
                Some(r),
                u64::from(!optional_ref(r)),
                1,
            ));
        }
    };
    match m.action {
        Action::Create => {
            if let Some(t) = &m.token {
                steps.push(step(Role::Token, t, None, 0, 1));
            }
            steps.push(step(Role::Item, &e.name, None, 1, 1));
            for list in m.with.keys() {
                let l = &e.lists[list];
                let child = list_child(&chart.entities, &chart.patterns, e, list)
                    .map_or(e.name.as_str(), |c| c.name.as_str());
                steps.push(step(
                    Role::Children,
                    child,
                    Some(list),
                    u64::from(l.min.unwrap_or(0)),
                    u64::from(l.max.unwrap_or(100)),
                ));
            }
            kept(&mut steps);
            for (name, r) in e.checked_references() {
                steps.push(step(
                    Role::Check,
                    &r.entity,
                    Some(name),
                    u64::from(!optional_ref(name)),
                    1,
                ));
            }
            if let Some((shard, n)) = chart.shards_of(&e.name) {
                steps.push(step(
                    Role::Shards,
                    &shard.name,
                    None,
                    u64::from(n),
                    u64::from(n),
                ));
            }
        }
        Action::Update => {
            steps.push(step(Role::Item, &e.name, None, 1, 1));
            let changes = |a: &String| m.fields.contains(a);
            // A unique value changed: its old marker deleted, its new one put.
            // A change that moves the item's expiry: each marker of a value it keeps
            // takes the new expiry too.
            let renews = e.expiry(&chart.table).is_some_and(|t| {
                changes(&t.to_owned()) || e.attributes[t].auto == Some(super::Auto::Updated)
            });
            for (attr, marker) in &e.writes.unique {
                if changes(attr) {
                    steps.push(step(Role::Marker, marker, Some(attr), 0, 2));
                } else if renews {
                    steps.push(step(Role::Marker, marker, Some(attr), 0, 1));
                }
            }
            // A reference changed: the old item uncounted, the new one counted; a value
            // that picks a counter changed: one update of the same item.
            for c in &e.writes.counts {
                let r = c.reference.as_str();
                let n = if e.references[r].key.values().any(changes) {
                    2
                } else if c.by_attributes().any(|a| m.fields.iter().any(|f| f == a)) {
                    1
                } else {
                    0
                };
                if n > 0 {
                    steps.push(step(Role::Counter, referenced(r), Some(r), 0, n));
                }
            }
            // A changed reference no count verifies: checked to exist again.
            for (name, r) in e
                .checked_references()
                .filter(|(_, r)| r.key.values().any(changes))
            {
                steps.push(step(Role::Check, &r.entity, Some(name), 0, 1));
            }
        }
        Action::Delete => {
            steps.push(step(Role::Item, &e.name, None, 1, 1));
            kept(&mut steps);
        }
    }
    MutationPlan {
        mutation: m.name.clone(),
        entity: e.name.clone(),
        action: m.action,
        steps,
    }
}
