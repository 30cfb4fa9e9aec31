//! What a chart implies, verified over the whole table: the checker behind
//! `itemgraph check`, for the built-in chart and any other alike.
//!
//! - every item decodes as the entity its type attribute names (the server's own items,
//!   migrations and leases, included), with every required attribute of its declared
//!   type, and its key attributes (`PK`, `SK`, each index's, present or absent) are
//!   exactly what its templates render from its attributes; no two items hold the same
//!   record;
//! - every reference resolves (and names an item of the same tenant);
//! - every counter the chart's `counts` keep (its own value plus its counter shards')
//!   equals the items found that count on it; an item whose counters are sharded has all
//!   its shards when it carries its create-time layout (`on_create`), none when it does
//!   not (an item from before its shards); a shard counts for an item that exists;
//! - every list agrees with its children: as many as its `min` and `max` allow, their
//!   positions 1 to n, the parent's computed numbers (`count`, `sum`) what its children
//!   say; every child has its parent; every computed product holds;
//! - every unique value has its marker, naming its owner, and every marker names an owner
//!   that holds its value; a client token's marker names the item it made, unless that
//!   entity can be deleted or expire (a retry after a delete must not create it again).
//!
//! An item whose time to live has passed is taken as absent, as reads and writes take it.
//!
//! The messages name attributes and items in the chart's words (`userCount is 4, but 3
//! users belong to it`, `its requester acme/alice does not exist`).

use std::collections::HashMap;

use super::{report, scan_all, violation, CheckReport, Violation, ViolationKind};
use crate::chart::samples::{key_of, key_values, marker, reference_key, reference_vars, set_keys};
use crate::chart::template::Value;
use crate::chart::{list_child, plural, words, Action, Chart, Computed, Entity, Request};
use crate::graphql::record::Record;
use crate::store::{AttributeValue, Item, PrimaryKey, Store, StoreError};

/// Scans the whole table (every table of a chart of several) and verifies what `chart`
/// implies; fails only when the store does.
pub async fn check_chart(store: &dyn Store, chart: &Chart) -> Result<CheckReport, StoreError> {
    // Each item with the table it was read from.
    let mut items = Vec::new();
    for (t, one) in chart.stores(store)?.iter() {
        items.extend(scan_all(one).await?.into_iter().map(|i| (t, i)));
    }
    let count = items.len();
    Ok(report(count, Checker::new(chart).run(items)))
}

/// [`check_chart`] within a read budget, for a table being adopted: pages of a strongly
/// consistent Scan until `max_rcu` read capacity units are read (one a 4 KB of a page's
/// items, rounded up), each item checked alone: what entity it is, that it decodes, that
/// its keys are what its templates render. What needs every item (references, counts,
/// markers, lists) is left out unless the whole table was read within the budget. A chart
/// of several tables reads them in turn, within the one budget.
pub async fn check_chart_within(
    store: &dyn Store,
    chart: &Chart,
    max_rcu: u64,
) -> Result<CheckReport, StoreError> {
    let mut items = Vec::new();
    let mut rcu = 0u64;
    let mut whole = true;
    for (t, one) in chart.stores(store)?.iter() {
        // A table after the first is read only while the budget lasts.
        if t > 0 && rcu >= max_rcu {
            whole = false;
        }
        if !whole {
            break;
        }
        whole = scan_within(t, one, max_rcu, &mut rcu, &mut items).await?;
    }
    let count = items.len();
    let mut checker = Checker::new(chart);
    checker.whole = whole;
    let mut r = report(count, checker.run(items));
    if !whole {
        r.within = Some(rcu);
    }
    Ok(r)
}

/// Pages of a strongly consistent Scan of `store`, the chart's table `t`, into `items`
/// until it ends (true) or `rcu` reaches `max_rcu` (false).
async fn scan_within(
    t: usize,
    store: &dyn Store,
    max_rcu: u64,
    rcu: &mut u64,
    items: &mut Vec<(usize, Item)>,
) -> Result<bool, StoreError> {
    let mut start = None;
    loop {
        let page = store
            .scan(crate::store::Scan {
                limit: Some(super::SCAN_PAGE_SIZE),
                start,
                consistent_read: true,
                ..Default::default()
            })
            .await?;
        let bytes: usize = page.items.iter().map(crate::store::value::item_size).sum();
        *rcu += (bytes as u64).div_ceil(4096).max(1);
        items.extend(page.items.into_iter().map(|i| (t, i)));
        match page.last_evaluated_key {
            None => return Ok(true),
            Some(_) if *rcu >= max_rcu => return Ok(false),
            Some(next) => start = Some(next),
        }
    }
}

struct Checker<'c> {
    chart: &'c Chart,
    violations: Vec<Violation>,
    /// Whether every item of the table is at hand (what needs them all is checked too).
    whole: bool,
}

/// A decoded item with the key it is stored under.
struct Found<'c> {
    key: PrimaryKey,
    entity: &'c Entity,
    item: Item,
}

type Vars = HashMap<String, Value>;

/// Where a record is: its table (its place in the chart's tables) and the primary key its
/// templates render. Two tables may hold equal keys.
type At = (usize, PrimaryKey);

/// The records found, by where they are.
struct Records<'c>(HashMap<At, Found<'c>>);

impl<'c> Records<'c> {
    /// The record at `key` in the table of `e`.
    fn at(&self, e: &Entity, key: &PrimaryKey) -> Option<&Found<'c>> {
        self.0.get(&(e.table, key.clone()))
    }

    fn values(&self) -> impl Iterator<Item = &Found<'c>> {
        self.0.values()
    }

    fn iter(&self) -> impl Iterator<Item = (&At, &Found<'c>)> {
        self.0.iter()
    }
}

fn text(item: &Item, attr: &str) -> Option<String> {
    match item.get(attr) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

fn number(item: &Item, attr: &str) -> i64 {
    match item.get(attr) {
        Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        Value::Int(n) => n.to_string(),
    }
}

/// An item of `e` as a message names it: its plain id, else its key values joined by
/// `/` (`acme`, `acme/alice`).
fn identity(e: &Entity, vars: &Vars) -> String {
    if let Some(v) = e.plain_id.as_ref().and_then(|p| vars.get(p)) {
        return shown(v);
    }
    let mut names: Vec<&str> = Vec::new();
    for v in e.key.pk.vars().chain(e.key.sk.vars()) {
        if !names.contains(&v.name.as_str()) {
            names.push(&v.name);
        }
    }
    names
        .iter()
        .filter_map(|n| vars.get(*n).map(shown))
        .collect::<Vec<_>>()
        .join("/")
}

impl<'c> Checker<'c> {
    fn new(chart: &'c Chart) -> Self {
        Checker {
            chart,
            violations: Vec::new(),
            whole: true,
        }
    }

    fn report(&mut self, kind: ViolationKind, entity: &str, key: &PrimaryKey, message: String) {
        self.violations.push(violation(kind, entity, key, message));
    }

    /// Checks `items`, each with the table it was read from.
    fn run(mut self, items: Vec<(usize, Item)>) -> Vec<Violation> {
        let chart = self.chart;
        let t = &chart.table;
        let mut keyed: Vec<(PrimaryKey, usize, Item)> = items
            .into_iter()
            .map(|(at, item)| {
                let key = chart
                    .key_in(at, &item)
                    .unwrap_or_else(|| PrimaryKey::new("?", "?"));
                (key, at, item)
            })
            .collect();
        // In key order, so the first of two items holding one record is the one kept.
        keyed.sort_by(|a, b| {
            (a.0.pk.as_bytes(), a.0.sk.as_bytes()).cmp(&(b.0.pk.as_bytes(), b.0.sk.as_bytes()))
        });
        // By the primary key each record's templates render.
        let mut found = Records(HashMap::new());
        let now = crate::chart::epoch_now();
        for (key, at, item) in keyed {
            let ty = text(&item, &t.type_attribute).unwrap_or_else(|| "?".into());
            let rec = match Record::read(chart, item) {
                Ok(rec) => rec,
                Err(why) => {
                    let message = format!("does not decode: {why}");
                    self.report(ViolationKind::Undecodable, &ty, &key, message);
                    continue;
                }
            };
            let entity = rec.entity(chart);
            let item = rec.item;
            // Only its own table's reads find it.
            if entity.table != at {
                let message = format!(
                    "is in table {}, and the items of {} are in table {}: no read finds it here",
                    chart.tables[at].name,
                    entity.name,
                    chart.table_of(entity).name
                );
                self.report(ViolationKind::Undecodable, &entity.name, &key, message);
                continue;
            }
            // An expired item is gone to every read and write, and DynamoDB deletes it, and
            // what expires with it, each in its own time: absent here too.
            if entity.expired(chart.table_of(entity), &item, now) {
                continue;
            }
            let Some(own) = self.keys_match(entity, &key, &item) else {
                continue;
            };
            if let Some(first) = found.at(entity, &own) {
                let message = format!(
                    "holds the same {} as the item ({} | {})",
                    entity.name, first.key.pk, first.key.sk
                );
                self.report(ViolationKind::Duplicate, &entity.name, &key, message);
                continue;
            }
            found
                .0
                .insert((entity.table, own), Found { key, entity, item });
        }
        if self.whole {
            self.references(&found);
            self.counts(&found);
            self.shards(&found);
            self.lists(&found);
            self.markers(&found);
        }
        self.violations
    }

    /// The stored keys are what the templates render from the item's attributes: each
    /// that differs is reported. Answers the primary key its templates render.
    fn keys_match(&mut self, e: &Entity, key: &PrimaryKey, item: &Item) -> Option<PrimaryKey> {
        let chart = self.chart;
        let mut attrs = chart.table_of(e).key_names();
        for i in chart.indexes.values().filter(|i| i.table == e.table) {
            attrs.extend(i.key_names());
        }
        let mut expected = item.clone();
        for a in &attrs {
            expected.remove(*a);
        }
        if let Err(why) = set_keys(
            chart.table_of(e),
            &chart.indexes,
            e,
            &mut expected,
            &key_values(e, item),
        ) {
            self.report(ViolationKind::KeyMismatch, &e.name, key, why);
            return None;
        }
        for a in attrs {
            let key_text = |v: &AttributeValue| match v {
                AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
                _ => None,
            };
            let message = match (item.get(a), expected.get(a)) {
                (None, None) => continue,
                (Some(have), Some(want)) if have == want => continue,
                (Some(have), Some(want)) => match (key_text(have), key_text(want)) {
                    (Some(h), Some(w))
                        if std::mem::discriminant(have) == std::mem::discriminant(want) =>
                    {
                        format!("{a} is {h:?}, but its record's key is {w:?}")
                    }
                    _ if matches!(want, AttributeValue::N(_)) => format!("{a} is not a number"),
                    _ => format!("{a} is not a string"),
                },
                (Some(have), None) => match key_text(have) {
                    Some(have) => format!("{a} is {have:?}, but its record has no such key"),
                    None => format!("{a} is not a string"),
                },
                (None, Some(want)) => format!(
                    "{a} is missing; its record's key is {:?}",
                    key_text(want).unwrap_or_default()
                ),
            };
            self.report(ViolationKind::KeyMismatch, &e.name, key, message);
        }
        chart.key_of(&expected)
    }

    fn references(&mut self, found: &Records<'c>) {
        for f in found.values() {
            for (name, r) in &f.entity.references {
                let target = &self.chart.entities[&r.entity];
                let Some(vars) = reference_vars(f.entity, &f.item, name) else {
                    continue;
                };
                let ok = key_of(target, &vars)
                    .and_then(|k| found.at(target, &k))
                    .is_some_and(|t| t.entity.name == r.entity && self.same_tenant(f, t));
                if !ok {
                    self.report(
                        ViolationKind::DanglingReference,
                        &f.entity.name,
                        &f.key,
                        format!("its {name} {} does not exist", identity(target, &vars)),
                    );
                }
            }
        }
    }

    fn same_tenant(&self, a: &Found<'_>, b: &Found<'_>) -> bool {
        let of = |f: &Found<'_>| {
            self.chart
                .tenant_attribute(f.entity)
                .and_then(|attr| text(&f.item, &attr))
        };
        match (of(a), of(b)) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
    }

    /// The key values of the item a counter shard holds a share of, and its entity.
    fn shard_owner(&self, shard: &Found<'_>) -> Option<(Vars, &'c Entity)> {
        let (owner, _) = shard.entity.shards_of.as_ref()?;
        let owner = &self.chart.entities[owner];
        let own = key_values(shard.entity, &shard.item);
        let owner_tenant = self.chart.tenant_attribute(owner);
        let shard_tenant = self.chart.tenant_attribute(shard.entity);
        let mut vars = HashMap::new();
        for v in owner.key.pk.vars().chain(owner.key.sk.vars()) {
            let value = match own.get(&v.name) {
                Some(x) => x.clone(),
                None if owner_tenant.as_deref() == Some(v.name.as_str()) => {
                    own.get(shard_tenant.as_deref()?)?.clone()
                }
                None => return None,
            };
            vars.insert(v.name.clone(), value);
        }
        Some((vars, owner))
    }

    /// What the items counting on a counter of `target` are, as a message says it
    /// (`users belong to it`, `OPEN tickets belong to it`, `tickets name this user as
    /// requester`); `None` for a counter nothing counts on.
    fn counted_as(&self) -> HashMap<(String, String), String> {
        let chart = self.chart;
        let mut out: HashMap<(String, String), String> = HashMap::new();
        let tenant = chart.tenant.as_ref().map(|t| t.entity.as_str());
        for e in chart.declared() {
            for c in &e.writes.counts {
                let target = &e.references[&c.reference].entity;
                let how = if Some(target.as_str()) == tenant {
                    "belong to it".to_owned()
                } else {
                    format!("name this {} as {}", words(target), c.reference)
                };
                let mut said = vec![];
                for counter in &c.counters {
                    said.push((counter.clone(), format!("{} {how}", plural(&e.name))));
                }
                for b in &c.by {
                    for (value, counter) in &b.counters {
                        let what = format!("{value} {} {how}", plural(&e.name));
                        said.push((counter.clone(), what));
                    }
                }
                for (counter, what) in said {
                    out.entry((target.clone(), counter))
                        // Two declarations counting on one counter: no one phrase says both.
                        .and_modify(|w| *w = "items count on it".into())
                        .or_insert(what);
                }
            }
        }
        out
    }

    fn counts(&mut self, found: &Records<'c>) {
        let counted_as = self.counted_as();
        let mut counted: HashMap<&str, Vec<&str>> = HashMap::new();
        for (target, counter) in counted_as.keys() {
            counted.entry(target).or_default().push(counter);
        }
        // What each counted item should hold: the items found that count on it.
        let mut expected: HashMap<(At, String), i64> = HashMap::new();
        for f in found.values() {
            for c in &f.entity.writes.counts {
                let key = reference_key(&self.chart.entities, f.entity, &f.item, &c.reference);
                let table = f
                    .entity
                    .references
                    .get(&c.reference)
                    .and_then(|r| self.chart.entities.get(&r.entity))
                    .map(|t| t.table);
                if let (Some(key), Some(table)) = (key, table) {
                    for counter in c.of_item(&f.item) {
                        *expected.entry(((table, key.clone()), counter)).or_default() += 1;
                    }
                }
            }
        }
        // What each holds: its own counter plus its shards'.
        let mut held: HashMap<(At, String), i64> = HashMap::new();
        for (own, f) in found.iter() {
            let (owner_key, owner) = match self.shard_owner(f) {
                Some((vars, owner)) => match key_of(owner, &vars) {
                    Some(k) => ((owner.table, k), owner),
                    None => continue,
                },
                None => (own.clone(), f.entity),
            };
            for counter in counted.get(owner.name.as_str()).into_iter().flatten() {
                *held
                    .entry((owner_key.clone(), (*counter).to_owned()))
                    .or_default() += number(&f.item, counter);
            }
        }
        for (own, f) in found.iter() {
            if f.entity.shards_of.is_some() {
                continue;
            }
            for counter in counted.get(f.entity.name.as_str()).into_iter().flatten() {
                let k = (own.clone(), (*counter).to_owned());
                let (has, should) = (
                    held.get(&k).copied().unwrap_or(0),
                    expected.get(&k).copied().unwrap_or(0),
                );
                if has != should {
                    let what = &counted_as[&(f.entity.name.clone(), (*counter).to_owned())];
                    self.report(
                        ViolationKind::CounterMismatch,
                        &f.entity.name,
                        &f.key,
                        format!("{counter} is {has}, but {should} {what}"),
                    );
                }
            }
        }
    }

    /// Each counter shard counts for an item that exists; an item has all its shards when
    /// it carries the layout its creates write (its `on_create` values), none otherwise.
    fn shards(&mut self, found: &Records<'c>) {
        let mut have: HashMap<At, Vec<i64>> = HashMap::new();
        for f in found.values() {
            let Some((vars, owner)) = self.shard_owner(f) else {
                continue;
            };
            let owner_key = key_of(owner, &vars);
            match owner_key.as_ref().and_then(|k| found.at(owner, k)) {
                Some(o) if o.entity.name == owner.name => {
                    // The one key value a shard has of its own: its number.
                    let tenant = self.chart.tenant_attribute(f.entity);
                    let number_attr =
                        f.entity
                            .key
                            .sk
                            .vars()
                            .chain(f.entity.key.pk.vars())
                            .find(|v| {
                                !vars.contains_key(&v.name) && tenant.as_deref() != Some(&v.name)
                            });
                    let n = number_attr.map_or(0, |v| number(&f.item, &v.name));
                    have.entry((
                        owner.table,
                        owner_key.clone().unwrap_or_else(|| o.key.clone()),
                    ))
                    .or_default()
                    .push(n);
                }
                _ => self.report(
                    ViolationKind::CounterShards,
                    &f.entity.name,
                    &f.key,
                    format!(
                        "counts for the {} {}, which does not exist",
                        words(&owner.name),
                        identity(owner, &vars)
                    ),
                ),
            }
        }
        for (own, f) in found.iter() {
            let Some((shard, count)) = self.chart.shards_of(&f.entity.name) else {
                continue;
            };
            let layout: Vec<(&String, &AttributeValue)> = f
                .entity
                .attributes
                .iter()
                .filter_map(|(n, a)| Some((n, a.on_create.as_ref()?)))
                .collect();
            let said = |(n, v): &(&String, &AttributeValue)| {
                let v = match v {
                    AttributeValue::S(s) | AttributeValue::N(s) => s.clone(),
                    other => format!("{other:?}"),
                };
                format!("{} {v}", words(n))
            };
            let layout_said = layout.iter().map(said).collect::<Vec<_>>().join(", ");
            let sharded = layout.iter().all(|(n, v)| f.item.get(*n) == Some(*v));
            let mut numbers = have.remove(own).unwrap_or_default();
            numbers.sort_unstable();
            let shards_said = plural(&shard.name);
            let message = if sharded {
                let missing: Vec<String> = (0..i64::from(count))
                    .filter(|n| numbers.binary_search(n).is_err())
                    .map(|n| n.to_string())
                    .collect();
                let extra: Vec<String> = numbers
                    .iter()
                    .filter(|n| **n < 0 || **n >= i64::from(count))
                    .map(|n| n.to_string())
                    .collect();
                if missing.is_empty() && extra.is_empty() {
                    continue;
                }
                let why = if layout.is_empty() {
                    String::new()
                } else {
                    format!(" ({layout_said})")
                };
                format!(
                    "is sharded{why}, but lacks {shards_said} [{}] and has unknown ones [{}]",
                    missing.join(", "),
                    extra.join(", ")
                )
            } else if numbers.is_empty() {
                continue;
            } else {
                format!(
                    "is not sharded (no {layout_said}), but has {} {shards_said}",
                    numbers.len()
                )
            };
            self.report(
                ViolationKind::CounterShards,
                &f.entity.name,
                &f.key,
                message,
            );
        }
    }

    /// Every list agrees with its children, every child has its parent, every computed
    /// product holds.
    fn lists(&mut self, found: &Records<'c>) {
        let chart = self.chart;
        for f in found.values() {
            for (attr, a) in &f.entity.attributes {
                if let Some(Computed::Product(x, y)) = &a.computed {
                    let is = number(&f.item, attr);
                    let should = i128::from(number(&f.item, x)) * i128::from(number(&f.item, y));
                    if i128::from(is) != should {
                        self.report(
                            ViolationKind::OrderLines,
                            &f.entity.name,
                            &f.key,
                            format!("{attr} is {is}, but {x} × {y} is {should}"),
                        );
                    }
                }
            }
        }
        for parent in chart.declared() {
            for (name, list) in &parent.lists {
                let Some(child) = list_child(&chart.entities, &chart.patterns, parent, name) else {
                    continue;
                };
                let Some(Request::Query { condition, .. }) =
                    chart.patterns.get(&list.pattern).map(|p| &p.request)
                else {
                    continue;
                };
                // Parent and children share the partition the list's pattern reads.
                let partition = match &condition.index {
                    None => &chart.table_of(child).partition_key,
                    Some(i) => &chart.indexes[i].partition_key,
                };
                let position = child
                    .attributes
                    .iter()
                    .find(|(_, a)| a.auto == Some(crate::chart::Auto::Position))
                    .map(|(n, _)| n.as_str());
                let mut children: HashMap<String, Vec<&Found<'c>>> = HashMap::new();
                for c in found.values().filter(|c| c.entity.name == child.name) {
                    if let Some(p) = text(&c.item, partition) {
                        children.entry(p).or_default().push(c);
                    }
                }
                for p in found.values().filter(|p| p.entity.name == parent.name) {
                    let mine = text(&p.item, partition)
                        .and_then(|v| children.remove(&v))
                        .unwrap_or_default();
                    self.list(p, name, list, position, &mine);
                }
                for orphans in children.values() {
                    for c in orphans {
                        let vars: Vars = key_values(c.entity, &c.item)
                            .into_iter()
                            .filter(|(n, _)| condition.partition.vars().any(|v| v.name == *n))
                            .collect();
                        let mut shown: Vec<String> = condition
                            .partition
                            .vars()
                            .filter_map(|v| vars.get(&v.name).map(self::shown))
                            .collect();
                        shown.dedup();
                        self.report(
                            ViolationKind::OrphanLine,
                            &c.entity.name,
                            &c.key,
                            format!(
                                "its {} {} does not exist",
                                words(&parent.name),
                                shown.join("/")
                            ),
                        );
                    }
                }
            }
        }
    }

    /// One parent's list `name` against its children found.
    fn list(
        &mut self,
        p: &Found<'c>,
        name: &str,
        list: &crate::chart::format::List,
        position: Option<&str>,
        children: &[&Found<'c>],
    ) {
        let mut out = Vec::new();
        let n = children.len();
        let min = list.min.unwrap_or(0) as usize;
        if n < min {
            out.push(if n == 0 {
                format!("has no {name}")
            } else {
                format!("has {n} {name}, fewer than {min}")
            });
        }
        if let Some(max) = list.max.filter(|m| n > *m as usize) {
            out.push(format!("has {n} {name}, more than {max}"));
        }
        if let Some(pos) = position {
            let mut numbers: Vec<i64> = children.iter().map(|c| number(&c.item, pos)).collect();
            numbers.sort_unstable();
            let expected: Vec<i64> = (1..).take(n).collect();
            if n > 0 && numbers != expected {
                out.push(format!("its {name} are numbered {numbers:?}, not 1 to {n}"));
            }
        }
        for (attr, a) in &p.entity.attributes {
            let is = number(&p.item, attr);
            match &a.computed {
                Some(Computed::Count(l)) if l == name && is != n as i64 => {
                    out.push(format!("{attr} is {is}, but it has {n} {name}"));
                }
                Some(Computed::Sum { list: l, attribute }) if l == name => {
                    let total: i128 = children
                        .iter()
                        .map(|c| i128::from(number(&c.item, attribute)))
                        .sum();
                    if i128::from(is) != total {
                        out.push(format!("{attr} is {is}, but its {name} add up to {total}"));
                    }
                }
                _ => {}
            }
        }
        for message in out {
            self.report(ViolationKind::OrderLines, &p.entity.name, &p.key, message);
        }
    }

    fn markers(&mut self, found: &Records<'c>) {
        let chart = self.chart;
        // Marker entity → (owner, the attribute it keeps; none for a client token).
        let mut markers: HashMap<&str, (&Entity, Option<&str>)> = HashMap::new();
        for e in chart.declared() {
            for (attr, m) in &e.writes.unique {
                markers.insert(m, (e, Some(attr)));
            }
        }
        for m in chart.mutations.values() {
            if let Some(t) = &m.token {
                markers.insert(t, (&chart.entities[&m.entity], None));
            }
        }
        let viewer = chart.viewer.as_ref().map(|v| v.entity.as_str());
        for ((_, own), f) in found.iter() {
            // Every unique value has its marker, naming this owner.
            for (attr, m) in &f.entity.writes.unique {
                let Some(value) = f.item.get(attr) else {
                    continue;
                };
                let value = match value {
                    AttributeValue::S(s) | AttributeValue::N(s) => s.clone(),
                    other => format!("{other:?}"),
                };
                let marker_entity = &chart.entities[m];
                let vars = key_values(marker_entity, &f.item);
                let key = marker(
                    chart.table_of(marker_entity),
                    &chart.indexes,
                    marker_entity,
                    &f.item,
                    &vars,
                )
                .ok()
                .and_then(|i| chart.key_of(&i));
                let message = match key.as_ref().and_then(|k| found.at(marker_entity, k)) {
                    None => format!("its {} {value} has no marker item", words(attr)),
                    Some(mk) => {
                        let named = key_values(f.entity, &mk.item);
                        if key_of(f.entity, &named).as_ref() == Some(own) {
                            continue;
                        }
                        format!(
                            "the marker of its {} {value} names {}",
                            words(attr),
                            identity(f.entity, &named)
                        )
                    }
                };
                self.report(
                    ViolationKind::MissingMarker,
                    &f.entity.name,
                    &f.key,
                    message,
                );
            }
            // Every marker names an owner holding its value.
            let Some((owner, attr)) = markers.get(f.entity.name.as_str()) else {
                continue;
            };
            let named = key_values(owner, &f.item);
            let id = identity(owner, &named);
            let at = key_of(owner, &named)
                .and_then(|k| found.at(owner, &k))
                .filter(|o| o.entity.name == owner.name);
            let which = if Some(owner.name.as_str()) == viewer {
                "who"
            } else {
                "which"
            };
            let owner_words = words(&owner.name);
            let message = match (at, attr) {
                (Some(o), Some(attr)) if o.item.get(*attr) == f.item.get(*attr) => continue,
                (Some(o), Some(attr)) => format!(
                    "names the {owner_words} {id}, whose {} is {}",
                    words(attr),
                    text(&o.item, attr).unwrap_or_else(|| "absent".into())
                ),
                (Some(_), None) => continue,
                (None, None) if self.deletable(owner) => continue,
                (None, None) => match self.elsewhere(found, owner, &named) {
                    Some(tenant) => format!(
                        "names the {owner_words} {id} of another {} ({tenant})",
                        chart
                            .tenant
                            .as_ref()
                            .map_or_else(|| "tenant".into(), |t| words(&t.entity))
                    ),
                    None => format!("names the {owner_words} {id}, {which} does not exist"),
                },
                (None, Some(_)) => format!("names the {owner_words} {id}, {which} does not exist"),
            };
            self.report(ViolationKind::OrphanMarker, &f.entity.name, &f.key, message);
        }
    }

    /// Whether items of `e` go: a mutation of the chart deletes them, or they expire.
    fn deletable(&self, e: &Entity) -> bool {
        e.expiry(self.chart.table_of(e)).is_some()
            || self
                .chart
                .mutations
                .values()
                .any(|m| m.entity == e.name && m.action == Action::Delete)
    }

    /// The tenant of an item of `e` with the plain id `named` holds, found in another
    /// tenant than the one `named` says.
    fn elsewhere(&self, found: &Records<'c>, e: &Entity, named: &Vars) -> Option<String> {
        let plain = e.plain_id.as_ref()?;
        let id = named.get(plain)?;
        let tenant = self.chart.tenant_attribute(e)?;
        found
            .values()
            .filter(|o| o.entity.name == e.name)
            .find(|o| key_values(e, &o.item).get(plain) == Some(id))
            .and_then(|o| text(&o.item, &tenant))
    }
}
