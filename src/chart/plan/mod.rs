//! The chart resolved once, when it is read: what each request runs, with only its values
//! left to fill in.
//!
//! - **Mutations** ([`MutationPlan`]): the items each writes, as steps in the order a create
//!   sends them (its client token's marker, the item, the children written with it, its
//!   unique markers, the counters its references keep and the references checked to
//!   exist, its counter shards), each with the entity its items are items of and how many
//!   it writes at least and at most. A change's plan holds what any change of its fields
//!   may write (a marker moved, or renewed when the item's expiry moves; a count moved):
//!   which of them a given change writes depends on its values; and when it reads the
//!   item first ([`ReadFirst`]).
//! - **Query patterns** ([`PagePlan`]): the key condition a page sends, on which index and
//!   in which direction, the Limit for a page of a size, and what each item read decodes as
//!   (the parent, a child, a counter shard).
//! - **Subscriptions** ([`SubscriptionPlan`]): the argument naming the subscriber's tenant
//!   and the arguments that narrow the events.
//!
//! `chart explain` prints these plans (a mutation's actions and write units, a pattern's
//! request), `chart check`'s `transaction-size` adds up their items, the write path sends
//! a create's actions in their order, pages send their plan filled in, and
//! `tests/graphql/plans.rs` holds every action the write path sends and every Query the
//! read path sends, for every example chart, to its plan.

use indexmap::IndexMap;

use super::template::Template;
use super::{list_child, Action, Binding, Chart, Entity, KeyCondition, Mutation, Request};

mod guard;

use guard::{
    absent, as_read, free, index_sources, names_owner, present, referenced, tenant, unreferenced,
};
pub use guard::{counted_on, Act, Guard, IndexSources, TenantIs, Verb};

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
    /// The actions it sends, each with its condition: every action on an item of the step
    /// is one of these (a count and a check on one item are one UpdateItem, on the
    /// conditions of both).
    pub acts: Vec<Act>,
    /// For a counter kept on an item with counter shards: the condition of the update
    /// sent to one of them (the item's own act, sent when the shard is not there).
    pub on_shard: Option<Vec<Guard>>,
    /// How the items it writes are held to the caller's tenant.
    pub binding: Binding,
}

impl Step {
    /// Its act of `verb`.
    pub fn act(&self, verb: Verb) -> Option<&Act> {
        self.acts.iter().find(|a| a.verb == verb)
    }
}

/// A mutation as the write path runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MutationPlan {
    pub mutation: String,
    pub entity: String,
    pub action: Action,
    pub steps: Vec<Step>,
    /// When it reads the item first (a strongly consistent GetItem before its write).
    pub read_first: ReadFirst,
    /// A change's or a delete's one write when it does not read first: on the item at
    /// the key the input names, held to the caller's tenant where that key does not say.
    pub in_place: Option<Act>,
}

impl MutationPlan {
    /// The entities whose items it writes: its own, and each step's (markers, children,
    /// the items it counts on or checks, their counter shards).
    pub fn written<'c>(&self, chart: &'c Chart) -> Vec<&'c Entity> {
        let mut names: Vec<&str> = std::iter::once(self.entity.as_str())
            .chain(self.steps.iter().map(|s| s.entity.as_str()))
            .collect();
        let shards: Vec<&str> = chart
            .entities
            .values()
            .filter(|x| {
                x.shards_of
                    .as_ref()
                    .is_some_and(|(of, _)| names.contains(&of.as_str()))
            })
            .map(|x| x.name.as_str())
            .collect();
        names.extend(shards);
        let mut out: Vec<&Entity> = Vec::new();
        for n in names {
            if let Some(e) = chart.entities.get(n) {
                if !out.iter().any(|o| o.name == e.name) {
                    out.push(e);
                }
            }
        }
        out
    }

    /// The table (its place in the chart's tables) of each of its actions: a put's by the
    /// entity its item names, an action by key by the one entity it writes whose key
    /// templates the key fits (rule `tables` proves no two of its entities in different
    /// tables have keys that can be equal).
    pub fn tables_of(&self, chart: &Chart, actions: &[crate::store::TransactAction]) -> Vec<usize> {
        use crate::store::TransactAction;
        if !chart.several_tables() {
            return vec![0; actions.len()];
        }
        let written = self.written(chart);
        actions
            .iter()
            .map(|a| {
                let key = match a {
                    TransactAction::Put(p) => return chart.table_of_item(&p.item),
                    TransactAction::Update(u) => &u.key,
                    TransactAction::Delete(d) => &d.key,
                    TransactAction::ConditionCheck(c) => &c.key,
                };
                written.iter().find(|e| e.fits(key)).map_or(0, |e| e.table)
            })
            .collect()
    }
}

/// When a mutation named by its key reads the item before it writes: a create never; a
/// delete when its plan writes more than the item (its markers freed, its counts
/// uncounted: what it holds must be known); a change by what it changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadFirst {
    /// Whatever it changes: a delete that writes more than the item, a change of a
    /// versioned item (read, then written as a TransactWriteItems, so the SDK's retry of an
    /// attempt whose reply was lost is idempotent, and answered with the item read and the
    /// change applied).
    pub always: bool,
    /// A change of any of these: a unique value (its marker moves), the expiry of an item
    /// with markers (they expire with it), a reference's key (its counts and checks move),
    /// a value that picks a counter, a life cycle's state.
    pub any_of: Vec<String>,
    /// An index key a change rewrites in part: each index's key attributes, and those of
    /// them not in the item's own key. A change of one of the first whose others of the
    /// second it does not give must read them to render the key.
    pub partly: Vec<(Vec<String>, Vec<String>)>,
}

impl ReadFirst {
    /// Whether a change of the attributes `changed` reads first.
    pub fn when(&self, changed: &dyn Fn(&str) -> bool) -> bool {
        self.always
            || self.any_of.iter().any(|a| changed(a))
            || self.partly.iter().any(|(all, kept)| {
                all.iter().any(|a| changed(a)) && kept.iter().any(|a| !changed(a))
            })
    }
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
    if let Some(every) = &m.every {
        return bulk(chart, m, e, every);
    }
    if let Some(entry) = &m.entry {
        return entry_plan(chart, m, e, entry);
    }
    let step = |role: Role, entity: &str, of: Option<&str>, least: u64, most: u64| Step {
        role,
        entity: entity.to_owned(),
        of: of.map(str::to_owned),
        least,
        most,
        acts: Vec::new(),
        on_shard: None,
        binding: chart.entities[entity].binding.clone(),
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
            let renews = e.expiry(chart.table_of(e)).is_some_and(|t| {
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
    let read_first = match m.action {
        Action::Create => ReadFirst::default(),
        Action::Delete => ReadFirst {
            always: steps.iter().any(|s| s.role != Role::Item),
            ..ReadFirst::default()
        },
        Action::Update => change_reads_first(chart, e),
    };
    let renews = m.action == Action::Update
        && e.expiry(chart.table_of(e)).is_some_and(|t| {
            m.fields.iter().any(|f| f == t) || e.attributes[t].auto == Some(super::Auto::Updated)
        });
    for s in &mut steps {
        acts(chart, m, e, s, renews);
    }
    let version = || {
        e.writes.version.as_ref().map(|a| Guard::Version {
            attribute: a.clone(),
        })
    };
    let in_place = match m.action {
        Action::Create => None,
        _ if read_first.always => None,
        Action::Update => Some(Act::new(
            Verb::Update,
            std::iter::once(present(chart, e))
                .chain(tenant(e, TenantIs::Caller))
                .collect(),
        )),
        Action::Delete => Some(Act::new(
            Verb::Delete,
            std::iter::once(present(chart, e))
                .chain(tenant(e, TenantIs::Caller))
                .chain(version())
                .chain(unreferenced(chart, e))
                .collect(),
        )),
    };
    MutationPlan {
        mutation: m.name.clone(),
        entity: e.name.clone(),
        action: m.action,
        steps,
        read_first,
        in_place,
    }
}

/// A map entry's write: one UpdateItem of the item at its key, there and the caller's, at
/// the version given; of the entry's path where the map is there (and, for a new key, has
/// room), else, for a put, of the whole map where it is not (an item made without it).
fn entry_plan(chart: &Chart, m: &Mutation, e: &Entity, entry: &super::Entry) -> MutationPlan {
    let base = || -> Vec<Guard> {
        std::iter::once(present(chart, e))
            .chain(tenant(e, TenantIs::Caller))
            .chain(e.writes.version.as_ref().map(|a| Guard::Version {
                attribute: a.clone(),
            }))
            .collect()
    };
    let map = entry.map.clone();
    let mut there = base();
    there.push(Guard::HasMap { map: map.clone() });
    if let (false, Some(max)) = (entry.remove, entry.max_items) {
        there.push(Guard::Room {
            map: map.clone(),
            max,
        });
    }
    let mut acts = vec![Act::new(Verb::Update, there)];
    if !entry.remove {
        let mut first = base();
        first.push(Guard::NoMap { map });
        acts.push(Act::new(Verb::Update, first));
    }
    MutationPlan {
        mutation: m.name.clone(),
        entity: e.name.clone(),
        action: m.action,
        in_place: acts.first().cloned(),
        steps: vec![Step {
            role: Role::Item,
            entity: e.name.clone(),
            of: Some(entry.map.clone()),
            least: 1,
            most: 1,
            acts,
            on_shard: None,
            binding: e.binding.clone(),
        }],
        read_first: ReadFirst::default(),
    }
}

/// A bulk delete's plan: the items its Query finds, up to its `max`, each deleted by key.
/// In BatchWriteItems no delete has a condition (a batch takes none: the keys were found
/// by a Query of the caller's tenant's partition, and hold the tenant); in one
/// TransactWriteItems (`atomic`) each is held to being there, and to the caller's tenant
/// where its key does not say. A bulk update is TransactWriteItems of up to 100 updates,
/// each held so too.
fn bulk(chart: &Chart, m: &Mutation, e: &Entity, every: &super::Every) -> MutationPlan {
    let act = if every.atomic || m.action == Action::Update {
        Act::new(
            if m.action == Action::Update {
                Verb::Update
            } else {
                Verb::Delete
            },
            std::iter::once(present(chart, e))
                .chain(tenant(e, TenantIs::Caller))
                .collect(),
        )
    } else {
        Act::new(Verb::BatchDelete, Vec::new())
    };
    MutationPlan {
        mutation: m.name.clone(),
        entity: e.name.clone(),
        action: m.action,
        steps: vec![Step {
            role: Role::Item,
            entity: e.name.clone(),
            of: None,
            least: 0,
            most: u64::from(every.max),
            acts: vec![act],
            on_shard: None,
            binding: e.binding.clone(),
        }],
        read_first: ReadFirst::default(),
        in_place: None,
    }
}

/// The actions of `s`, a step of `m` (a mutation of `e`), each with its condition; and,
/// for a counter on an item with counter shards, the condition of its update on a shard.
/// `renews`: a change that moves the item's expiry, which its markers take too.
fn acts(chart: &Chart, m: &Mutation, e: &Entity, s: &mut Step, renews: bool) {
    let target = &chart.entities[&s.entity];
    let version = e.writes.version.as_ref().map(|a| Guard::Version {
        attribute: a.clone(),
    });
    s.acts = match (m.action, s.role) {
        (Action::Create, Role::Token | Role::Marker) => {
            vec![Act::new(Verb::Put, vec![free(chart, target)])]
        }
        (Action::Create, Role::Item) => {
            vec![Act::new(Verb::Put, vec![free(chart, e)])]
        }
        (_, Role::Children | Role::Shards) => {
            vec![Act::new(Verb::Put, vec![absent(chart, target)])]
        }
        (_, Role::Check) => vec![Act::new(Verb::Check, referenced(chart, e, target))],
        (Action::Create, Role::Counter) => {
            vec![Act::new(Verb::Update, referenced(chart, e, target))]
        }
        // Taken from the item a reference named before (a change, a delete).
        (_, Role::Counter) => {
            let mut when = referenced(chart, e, target);
            when.push(Guard::Positive);
            vec![Act::new(Verb::Update, when)]
        }
        (Action::Update, Role::Item) => vec![change_of_item(chart, e)],
        (Action::Update, Role::Marker) => {
            let moves = m.fields.iter().any(|f| Some(f.as_str()) == s.of.as_deref());
            let mut acts = Vec::new();
            if moves {
                acts.push(Act::new(Verb::Delete, vec![names_owner(chart, e, target)]));
                acts.push(Act::new(Verb::Put, vec![free(chart, target)]));
            }
            if renews {
                acts.push(Act::new(Verb::Update, vec![names_owner(chart, e, target)]));
            }
            acts
        }
        (Action::Delete, Role::Item) => {
            let mut when = vec![present(chart, e)];
            when.extend(version);
            when.extend(unreferenced(chart, e));
            when.extend(tenant(e, TenantIs::AsRead));
            when.push(as_read(e));
            vec![Act::new(Verb::Delete, when)]
        }
        (Action::Delete, Role::Marker) => {
            vec![Act::new(Verb::Delete, vec![names_owner(chart, e, target)])]
        }
        // A change and a delete send no client token.
        (_, Role::Token) => Vec::new(),
    };
    if s.role == Role::Counter {
        s.on_shard = chart
            .shards_of(&s.entity)
            .map(|(shard, _)| referenced(chart, e, shard));
    }
}

/// A change's write of its item of `e` after reading it: there and not expired, still the
/// tenant's it was read as, and what the other actions were built from still so (its
/// version, else each value read and what each index key it rewrites is made of).
pub fn change_of_item(chart: &Chart, e: &Entity) -> Act {
    let mut when = vec![present(chart, e)];
    when.extend(tenant(e, TenantIs::AsRead));
    match &e.writes.version {
        Some(v) => when.push(Guard::Version {
            attribute: v.clone(),
        }),
        None => {
            when.push(as_read(e));
            when.extend(index_sources(chart, e));
        }
    }
    Act::new(Verb::Update, when)
}

/// What a change of `e` reads first for ([`ReadFirst`]).
fn change_reads_first(chart: &Chart, e: &Entity) -> ReadFirst {
    let key_vars = e.key.var_names();
    let mut any_of: Vec<String> = Vec::new();
    let mut add = |a: &str| {
        if !any_of.iter().any(|x| x == a) {
            any_of.push(a.to_owned());
        }
    };
    if let Some(t) = e.expiry(chart.table_of(e)) {
        if !e.writes.unique.is_empty() {
            add(t);
        }
    }
    for a in e.writes.unique.keys() {
        add(a);
    }
    for r in e.references.values() {
        for f in r.key.values() {
            add(f);
        }
    }
    for c in &e.writes.counts {
        for a in c.by_attributes() {
            add(a);
        }
    }
    if let Some(l) = &e.writes.lifecycle {
        add(&l.attribute);
    }
    let partly = e
        .indexes
        .values()
        .map(|k| {
            let all: Vec<String> =
                k.pk.vars()
                    .chain(k.sk.vars())
                    .map(|v| v.name.clone())
                    .collect();
            let kept = all
                .iter()
                .filter(|v| !key_vars.contains(&v.as_str()))
                .cloned()
                .collect();
            (all, kept)
        })
        .collect();
    ReadFirst {
        always: e.writes.version.is_some(),
        any_of,
        partly,
    }
}

/// What an item a Query pattern's page reads is to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// The pattern's parent, read with the first page.
    Parent,
    /// One of its children: the page.
    Child,
    /// A counter shard of the parent, read with it and summed into its counts.
    Shard,
}

/// A Query pattern as its reads run it: the key condition each page sends, in which
/// direction, how many items a page reads beyond its children, and what each item read
/// is to it. A request fills the key values and the page in ([`PagePlan::limit`]);
/// `chart explain` prints the same plan.
#[derive(Debug, Clone)]
pub struct PagePlan {
    pub pattern: u32,
    /// The key condition of a first page (of every page, when the pattern reads no
    /// parent): the index (`None`, the base table), the partition and the condition on the
    /// sort key, as templates of the pattern's key values.
    pub condition: KeyCondition,
    /// The children's sort-key prefix: what later pages of a pattern that reads a parent
    /// query (`begins_with`), so they leave the parent and its shards behind, and what
    /// every cursor's key starts with.
    pub children_prefix: Template,
    /// The pattern's own direction (a backward page reverses it).
    pub forward: bool,
    /// What each entity read decodes as, by entity name.
    pub reads: IndexMap<String, Read>,
    /// Items a first page reads beside its children at most: the parent and its counter
    /// shards.
    pub carried: u32,
    /// The children's entity.
    pub children: String,
    /// The parent's entity, if it is read with the first page.
    pub parent: Option<String>,
    /// Whether the Query finds the children's keys only and a BatchGetItem of them reads
    /// the children (two requests a page).
    pub then_get: bool,
    /// An item collection of several kinds (`kinds`): each kind's sort-key prefix, which
    /// a page of that kind alone queries. Empty for a Query of one kind, whose later
    /// pages query `children_prefix`; a collection's later pages query its condition
    /// from the last-seen key.
    pub kinds: IndexMap<String, Template>,
}

impl PagePlan {
    /// The Query's limit for a page of `size` children: one more, to tell whether more
    /// follow, and on a page that carries the parent, what it carries too.
    pub fn limit(&self, size: u32, carries_parent: bool) -> u32 {
        if carries_parent {
            size + 1 + self.carried
        } else {
            size + 1
        }
    }

    /// Whether a page read from `start` (none: the first) in the pattern's direction
    /// (`forward`) or against it carries the parent.
    pub fn carries_parent(&self, forward: bool, first: bool) -> bool {
        self.parent.is_some() && forward && first
    }
}

/// Every Query pattern of `chart` resolved, by number.
pub fn resolve_pages(chart: &Chart) -> IndexMap<u32, PagePlan> {
    chart
        .patterns
        .values()
        .filter_map(|p| {
            if let Request::Collection {
                condition,
                forward,
                parent,
                kinds,
                prefixes,
            } = &p.request
            {
                let mut reads = IndexMap::new();
                if let Some(pa) = parent {
                    reads.insert(pa.clone(), Read::Parent);
                }
                for k in kinds {
                    reads.insert(k.clone(), Read::Child);
                }
                let first = kinds.first()?;
                return Some((
                    p.number,
                    PagePlan {
                        pattern: p.number,
                        condition: condition.clone(),
                        children_prefix: prefixes.get(first)?.clone(),
                        forward: *forward,
                        reads,
                        carried: u32::from(parent.is_some()),
                        children: first.clone(),
                        parent: parent.clone(),
                        then_get: false,
                        kinds: prefixes.clone(),
                    },
                ));
            }
            let Request::Query {
                condition,
                forward,
                parent,
                beside,
                children,
                children_prefix,
                then_get,
            } = &p.request
            else {
                return None;
            };
            let mut reads = IndexMap::new();
            if let Some(pa) = parent {
                reads.insert(pa.clone(), Read::Parent);
            }
            let mut shards = 0;
            for b in beside {
                let e = &chart.entities[b];
                if let Some((_, n)) = &e.shards_of {
                    shards += *n;
                    reads.insert(b.clone(), Read::Shard);
                }
            }
            // A child of the parent's own entity (a hierarchy) is a child.
            reads.insert(children.clone(), Read::Child);
            Some((
                p.number,
                PagePlan {
                    pattern: p.number,
                    condition: condition.clone(),
                    children_prefix: children_prefix.clone(),
                    forward: *forward,
                    reads,
                    carried: u32::from(parent.is_some()) + shards,
                    children: children.clone(),
                    parent: parent.clone(),
                    then_get: *then_get,
                    kinds: IndexMap::new(),
                },
            ))
        })
        .collect()
}

/// A subscription as its events are picked: the argument that names the subscriber's
/// tenant and each argument that narrows the events to items holding its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionPlan {
    pub subscription: String,
    /// The entity whose items' changes it streams.
    pub entity: String,
    /// The argument naming the subscriber's tenant: the tenant's attribute.
    pub tenant: String,
    pub filters: Vec<Filter>,
}

/// One argument of a subscription that narrows its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub argument: String,
    /// The attribute an item must hold the argument's value in (before or after the
    /// change); `id`: the item's id, plain or global.
    pub attribute: String,
}

/// Every subscription of `chart` resolved, by GraphQL field name. A chart with
/// subscriptions has a tenant (rule `tenant`).
pub fn resolve_subscriptions(chart: &Chart) -> IndexMap<String, SubscriptionPlan> {
    let Some(tenant) = &chart.tenant else {
        return IndexMap::new();
    };
    chart
        .subscriptions
        .iter()
        .map(|(name, sub)| {
            let filters = sub
                .filters
                .iter()
                .map(|f| Filter {
                    argument: f.clone(),
                    attribute: f.clone(),
                })
                .chain(sub.arguments.iter().map(|(arg, a)| Filter {
                    argument: arg.clone(),
                    attribute: a.attribute.clone(),
                }))
                .collect();
            (
                name.clone(),
                SubscriptionPlan {
                    subscription: name.clone(),
                    entity: sub.entity.clone(),
                    tenant: tenant.attribute.clone(),
                    filters,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in chart's reads before a write: a user's change reads first for a new
    /// email (its marker moves) and not for a new name; a ticket's, versioned, always; a
    /// delete that frees a marker always; a create never.
    #[test]
    fn the_plans_say_which_writes_read_first() {
        let chart = crate::chart::builtin();
        let user = &chart.plans["updateUser"].read_first;
        assert!(user.when(&|a| a == "email"));
        assert!(!user.when(&|a| a == "name"));
        assert!(chart.plans["updateTicket"]
            .read_first
            .when(&|a| a == "title"));
        assert!(chart.plans["deleteUser"].read_first.always);
        assert_eq!(chart.plans["createTicket"].read_first, ReadFirst::default());
    }
}
