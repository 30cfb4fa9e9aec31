//! `itemgraph check` of a table served from a chart other than the built-in one: what the
//! chart implies, verified over the whole table.
//!
//! - every item decodes as the entity its type attribute names, with every required
//!   attribute of its declared type, and its key attributes (`PK`, `SK`, each index's,
//!   present or absent) are exactly what its templates render from its attributes;
//! - every reference resolves (and names an item of the same tenant);
//! - every counter the chart's `counts` keep (its own value plus its counter shards')
//!   equals the items found that count on it;
//! - every unique value has its marker, naming its owner, and every marker names an owner
//!   that holds its value. A client token's marker may name an item deleted since.

use std::collections::HashMap;

use super::{report, scan_all, violation, CheckReport, Violation, ViolationKind};
use crate::chart::samples::{key_values, marker, set_keys};
use crate::chart::{Chart, Entity};
use crate::graphql::charted::record::Record;
use crate::store::{AttributeValue, Item, PrimaryKey, Store, StoreError};

/// Scans the whole table and verifies what `chart` implies; fails only when the store
/// does.
pub async fn check_chart(store: &dyn Store, chart: &Chart) -> Result<CheckReport, StoreError> {
    let items = scan_all(store).await?;
    let count = items.len();
    Ok(report(count, Checker::new(chart).run(items)))
}

struct Checker<'c> {
    chart: &'c Chart,
    violations: Vec<Violation>,
}

/// A decoded item with the key it is stored under.
struct Found<'c> {
    key: PrimaryKey,
    entity: &'c Entity,
    item: Item,
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

impl<'c> Checker<'c> {
    fn new(chart: &'c Chart) -> Self {
        Checker {
            chart,
            violations: Vec::new(),
        }
    }

    fn report(&mut self, kind: ViolationKind, entity: &str, key: &PrimaryKey, message: String) {
        self.violations.push(violation(kind, entity, key, message));
    }

    fn run(mut self, items: Vec<Item>) -> Vec<Violation> {
        let chart = self.chart;
        let t = &chart.table;
        let mut found: HashMap<PrimaryKey, Found<'c>> = HashMap::new();
        for item in items {
            let key = PrimaryKey::new(
                text(&item, &t.partition_key).unwrap_or_else(|| "?".into()),
                text(&item, &t.sort_key).unwrap_or_else(|| "?".into()),
            );
            let ty = text(&item, &t.type_attribute).unwrap_or_else(|| "?".into());
            let rec = match Record::read(chart, item) {
                Ok(rec) => rec,
                Err(why) => {
                    self.report(ViolationKind::Undecodable, &ty, &key, why);
                    continue;
                }
            };
            let entity = rec.entity(chart);
            let item = rec.item;
            if !entity.system {
                self.keys_match(entity, &key, &item);
            }
            found.insert(key.clone(), Found { key, entity, item });
        }
        self.references(&found);
        self.counts(&found);
        self.markers(&found);
        self.violations
    }

    /// The stored keys are what the templates render from the item's attributes.
    fn keys_match(&mut self, e: &Entity, key: &PrimaryKey, item: &Item) {
        let chart = self.chart;
        let mut expected = item.clone();
        if let Err(why) = set_keys(
            &chart.table,
            &chart.indexes,
            e,
            &mut expected,
            &key_values(e, item),
        ) {
            self.report(ViolationKind::KeyMismatch, &e.name, key, why);
            return;
        }
        let mut attrs = vec![&chart.table.partition_key, &chart.table.sort_key];
        for i in chart.indexes.values() {
            attrs.extend([&i.partition_key, &i.sort_key]);
        }
        for a in attrs {
            let (is, should) = (text(item, a), text(&expected, a));
            if is != should {
                self.report(
                    ViolationKind::KeyMismatch,
                    &e.name,
                    key,
                    format!(
                        "`{a}` is {}, its templates say {}",
                        is.as_deref().unwrap_or("absent"),
                        should.as_deref().unwrap_or("absent")
                    ),
                );
            }
        }
    }

    /// The key of the item `reference` of `item` names (none when a part is absent).
    fn reference_key(&self, e: &Entity, item: &Item, reference: &str) -> Option<PrimaryKey> {
        let r = &e.references[reference];
        let source = key_values(e, item);
        let mut vars = HashMap::new();
        for (to, from) in &r.key {
            vars.insert(to.clone(), source.get(from)?.clone());
        }
        let target = &self.chart.entities[&r.entity];
        Some(PrimaryKey::new(
            target.key.pk.render(|n| vars.get(n).cloned()).ok()?,
            target.key.sk.render(|n| vars.get(n).cloned()).ok()?,
        ))
    }

    fn references(&mut self, found: &HashMap<PrimaryKey, Found<'c>>) {
        for f in found.values() {
            for (name, r) in &f.entity.references {
                let Some(key) = self.reference_key(f.entity, &f.item, name) else {
                    continue;
                };
                let ok = found
                    .get(&key)
                    .is_some_and(|t| t.entity.name == r.entity && self.same_tenant(f, t));
                if !ok {
                    self.report(
                        ViolationKind::DanglingReference,
                        &f.entity.name,
                        &f.key,
                        format!("its {name} ({} | {}) does not exist", key.pk, key.sk),
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

    /// The key of the item a counter shard holds a share of.
    fn shard_owner(&self, shard: &Found<'_>) -> Option<(PrimaryKey, &'c Entity)> {
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
        Some((
            PrimaryKey::new(
                owner.key.pk.render(|n| vars.get(n).cloned()).ok()?,
                owner.key.sk.render(|n| vars.get(n).cloned()).ok()?,
            ),
            owner,
        ))
    }

    fn counts(&mut self, found: &HashMap<PrimaryKey, Found<'c>>) {
        // What each counted item should hold: the items found that count on it.
        let mut expected: HashMap<(PrimaryKey, String), i64> = HashMap::new();
        let mut counted: HashMap<String, Vec<String>> = HashMap::new();
        for e in self.chart.declared() {
            for c in &e.writes.counts {
                let target = &e.references[&c.reference].entity;
                let names = counted.entry(target.clone()).or_default();
                for counter in &c.all() {
                    if !names.contains(counter) {
                        names.push(counter.clone());
                    }
                }
            }
        }
        for f in found.values() {
            for c in &f.entity.writes.counts {
                if let Some(key) = self.reference_key(f.entity, &f.item, &c.reference) {
                    for counter in &c.of_item(&f.item) {
                        *expected.entry((key.clone(), counter.clone())).or_default() += 1;
                    }
                }
            }
        }
        // What each holds: its own counter plus its shards'.
        let mut held: HashMap<(PrimaryKey, String), i64> = HashMap::new();
        for f in found.values() {
            let (owner_key, owner) = match self.shard_owner(f) {
                Some(o) => o,
                None if counted.contains_key(&f.entity.name) => (f.key.clone(), f.entity),
                None => continue,
            };
            for counter in counted.get(&owner.name).into_iter().flatten() {
                *held
                    .entry((owner_key.clone(), counter.clone()))
                    .or_default() += number(&f.item, counter);
            }
        }
        for f in found.values() {
            if f.entity.shards_of.is_some() {
                continue;
            }
            for counter in counted.get(&f.entity.name).into_iter().flatten() {
                let k = (f.key.clone(), counter.clone());
                let (has, should) = (
                    held.get(&k).copied().unwrap_or(0),
                    expected.get(&k).copied().unwrap_or(0),
                );
                if has != should {
                    self.report(
                        ViolationKind::CounterMismatch,
                        &f.entity.name,
                        &f.key,
                        format!("`{counter}` is {has}, and {should} items count on it"),
                    );
                }
            }
        }
    }

    fn markers(&mut self, found: &HashMap<PrimaryKey, Found<'c>>) {
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
        for f in found.values() {
            // Every unique value has its marker, naming this owner.
            for (attr, m) in &f.entity.writes.unique {
                if !f.item.contains_key(attr) {
                    continue;
                }
                let marker_entity = &chart.entities[m];
                let vars = key_values(marker_entity, &f.item);
                let key = marker(&chart.table, &chart.indexes, marker_entity, &f.item, &vars)
                    .ok()
                    .and_then(|i| {
                        Some(PrimaryKey::new(
                            text(&i, &chart.table.partition_key)?,
                            text(&i, &chart.table.sort_key)?,
                        ))
                    });
                let names_owner = key
                    .as_ref()
                    .and_then(|k| found.get(k))
                    .is_some_and(|mk| owner_key_of(f.entity, &mk.item).as_ref() == Some(&f.key));
                if !names_owner {
                    self.report(
                        ViolationKind::MissingMarker,
                        &f.entity.name,
                        &f.key,
                        format!("no {m} of its `{attr}` naming it"),
                    );
                }
            }
            // Every marker names an owner holding its value.
            // A client token's marker outlives the item it made (a retry after a delete
            // must not create it again): there is nothing to hold it to.
            let Some((owner, Some(attr))) = markers.get(f.entity.name.as_str()) else {
                continue;
            };
            let holds = owner_key_of(owner, &f.item)
                .and_then(|k| found.get(&k))
                .is_some_and(|o| {
                    o.entity.name == owner.name && o.item.get(*attr) == f.item.get(*attr)
                });
            if !holds {
                self.report(
                    ViolationKind::OrphanMarker,
                    &f.entity.name,
                    &f.key,
                    format!("names no {} that holds its value", owner.name),
                );
            }
        }
    }
}

/// The key of the owner a marker names (its owner's key attributes, which it holds).
fn owner_key_of(owner: &Entity, marker: &Item) -> Option<PrimaryKey> {
    let vars = key_values(owner, marker);
    Some(PrimaryKey::new(
        owner.key.pk.render(|n| vars.get(n).cloned()).ok()?,
        owner.key.sk.render(|n| vars.get(n).cloned()).ok()?,
    ))
}
