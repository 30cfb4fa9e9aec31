//! The chart recorded in the table, and what a change of chart asks of the table's items.
//!
//! `itemgraph migrate` compares the chart the table was last migrated to (its `Chart` item,
//! `CHART#`, holding the chart's text) with the one it is given, and plans the steps the
//! difference implies ([`plan`]):
//!
//! | Change | Step |
//! |---|---|
//! | a time to live declared (`[table] time_to_live`) | turned on (UpdateTimeToLive) |
//! | an index the table does not have | created (UpdateTable; the embedded engine's own), filled with the items that carry its keys |
//! | an entity joins an index the table has, or its index templates change | every item of it given the index keys its templates render (and an index it left, none) |
//! | a unique attribute declared | every value given its marker, where another item does not hold it |
//! | a version declared | every item of the entity without one given 1 |
//! | counter shards declared | every item of the owner from before them given its shards |
//! | counts declared | a recount, set where no writer has started the counter ([`recount`]) |
//! | a primary key that changes | every item moved: put at its new key, deleted at the old |
//!
//! and refuses, naming it, what it does not do: an index whose keys or projection change, a number of
//! shards that changes, a new required attribute, a time to live turned off. A refused plan writes nothing. The item steps run as one migration
//! of the registry's kind (`MIGRATION#1nn`: a parallel Scan, checkpoints, the budget), each
//! write conditioned on what it read; the chart is recorded once they are done. A table
//! with no chart recorded was made from the built-in chart, or by a command that did not
//! record one: the built-in chart is taken as its own; another is planned from nothing
//! (every step of its declarations, each finding nothing to do where the table already
//! keeps it).

use serde::{Deserialize, Serialize};

use crate::chart::samples::{key_of, key_values, marker, set_keys};
use crate::chart::{Chart, Entity};
use crate::store::own::OwnRecord as Record;
use crate::store::{
    AttributeValue, Condition, Item, PrimaryKey, Put, Store, StoreError, StoreResult, Update,
    UpdateExpr,
};

pub(super) use super::steps::digest;
pub use super::steps::{plan, scans_items, Step};
use super::{Ctx, MigrateReport};

/// The chart a table was last migrated to (or created from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartRecord {
    /// The chart's text.
    pub source: String,
    /// How many plans with item steps ran on the table: the next one's migration is
    /// `100 + plans`.
    pub plans: u32,
    pub recorded_at: String,
}

impl Record for ChartRecord {
    const TYPE: &'static str = "Chart";
    fn key(&self) -> PrimaryKey {
        PrimaryKey::new("CHART#", "CHART#")
    }
}

/// The chart recorded in the table, if any.
pub async fn recorded(store: &dyn Store) -> StoreResult<Option<ChartRecord>> {
    super::records::read(store, PrimaryKey::new("CHART#", "CHART#")).await
}

/// Records `chart` as the table's, after `plans` plans with item steps.
pub async fn record(store: &dyn Store, chart: &Chart, plans: u32) -> StoreResult<()> {
    super::records::write(
        store,
        &ChartRecord {
            source: chart.source.clone(),
            plans,
            recorded_at: crate::clock::now(),
        },
    )
    .await
}

/// The tables whose items a plan's item steps read (their places in the chart's tables),
/// the first first.
pub(super) fn tables_scanned(chart: &Chart, steps: &[Step]) -> Vec<usize> {
    tables_of(chart, steps, Step::scans_items)
}

/// The tables of the entities of the steps `which` picks, each once, the first first.
fn tables_of(chart: &Chart, steps: &[Step], which: impl Fn(&Step) -> bool) -> Vec<usize> {
    let mut tables: Vec<usize> = steps
        .iter()
        .filter(|s| which(s))
        .filter_map(|s| chart.entities.get(s.entity()?))
        .map(|e| e.table)
        .collect();
    tables.sort_unstable();
    tables.dedup();
    tables
}

/// The item steps of a plan for one item of the table `ctx` migrates: an item of an
/// entity of another table is not this table's, and left.
pub(super) async fn migrate_item(
    ctx: &Ctx<'_>,
    chart: &Chart,
    steps: &[Step],
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let Some(AttributeValue::S(ty)) = item.get(&chart.tables[ctx.table].type_attribute) else {
        return Ok(());
    };
    let Some(e) = chart
        .entities
        .get(ty)
        .filter(|e| !e.system && e.table == ctx.table)
    else {
        return Ok(());
    };
    let pk = chart.table_of(e).partition_key.clone();
    let Some(key) = ctx.store.schema().key_of(item) else {
        return Ok(());
    };
    // An item that moves carries its index keys and version with it; what else the plan
    // does to it is done at its new key.
    let moved = if steps
        .iter()
        .any(|s| matches!(s, Step::Rekey { entity } if *entity == e.name))
    {
        rekey(ctx, chart, e, steps, &key, item, report).await?
    } else {
        None
    };
    let (key, item) = match &moved {
        Some((k, i)) => (k.clone(), i),
        None => (key, item),
    };
    for step in steps {
        match step {
            Step::IndexKeys { .. } | Step::Versions { .. } if moved.is_some() => {}
            Step::IndexKeys { entity, index } if *entity == e.name => {
                index_keys(ctx, chart, e, index, &key, item, report).await?;
            }
            Step::Markers { entity, attribute } if *entity == e.name => {
                put_marker(ctx, chart, e, attribute, &key, item, report).await?;
            }
            Step::Shards { owner } if *owner == e.name => {
                shard(ctx, chart, e, &key, item, report).await?;
            }
            Step::Versions { entity, attribute } if *entity == e.name => {
                if item.contains_key(attribute) {
                    continue;
                }
                if ctx.dry_run {
                    report.versions_set += 1;
                    continue;
                }
                let u = Update::new(
                    key.clone(),
                    UpdateExpr::default().set(attribute.clone(), AttributeValue::N("1".into())),
                )
                .when(Condition::And(vec![
                    Condition::exists(pk.clone()),
                    Condition::not_exists(attribute.clone()),
                ]));
                match ctx.update(u).await {
                    Ok(_) => report.versions_set += 1,
                    Err(StoreError::ConditionFailed { .. }) => {}
                    Err(err) => return Err(err),
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The index's two key attributes as its templates render them for `item` (none where an
/// optional part is absent, or the entity is not in the index), written where they differ,
/// conditioned on both as read.
async fn index_keys(
    ctx: &Ctx<'_>,
    chart: &Chart,
    e: &Entity,
    index: &str,
    key: &PrimaryKey,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let Some(i) = chart.indexes.get(index) else {
        return Ok(());
    };
    let attrs: Vec<String> = i.key_names().into_iter().map(str::to_owned).collect();
    let mut expected = item.clone();
    for a in &attrs {
        expected.remove(a);
    }
    if set_keys(
        chart.table_of(e),
        &chart.indexes,
        e,
        &mut expected,
        &key_values(e, item),
    )
    .is_err()
    {
        report.skipped.push(format!(
            "{} ({} | {}): its keys do not render",
            e.name, key.pk, key.sk
        ));
        return Ok(());
    }
    if attrs.iter().all(|a| item.get(a) == expected.get(a)) {
        return Ok(());
    }
    if ctx.dry_run {
        report.keys_rewritten += 1;
        return Ok(());
    }
    let mut u = UpdateExpr::default();
    let mut when = vec![Condition::exists(chart.table_of(e).partition_key.clone())];
    // What the keys are rendered from, as read: a writer that changes it meanwhile wrote
    // its own keys.
    if let Some(k) = e.indexes.get(index) {
        let mut names: Vec<&str> =
            k.pk.vars()
                .chain(k.sk.vars())
                .map(|v| v.name.as_str())
                .collect();
        names.dedup();
        for n in names {
            when.push(match item.get(n) {
                Some(v) => Condition::eq(n.to_owned(), v.clone()),
                None => Condition::not_exists(n.to_owned()),
            });
        }
    }
    for a in &attrs {
        u = match expected.get(a) {
            Some(v) => u.set(a.clone(), v.clone()),
            None => u.remove(a.clone()),
        };
        when.push(match item.get(a) {
            Some(v) => Condition::eq(a.clone(), v.clone()),
            None => Condition::not_exists(a.clone()),
        });
    }
    match ctx
        .update(Update::new(key.clone(), u).when(Condition::And(when)))
        .await
    {
        Ok(_) => report.keys_rewritten += 1,
        Err(StoreError::ConditionFailed { .. }) => report.skipped.push(format!(
            "{} ({} | {}): changed while being migrated",
            e.name, key.pk, key.sk
        )),
        Err(err) => return Err(err),
    }
    Ok(())
}

/// The marker of `item`'s value of `attribute`, put where none is (in the marker's table,
/// which may be another than its owner's); a value another item holds is left, and named.
async fn put_marker(
    ctx: &Ctx<'_>,
    chart: &Chart,
    e: &Entity,
    attribute: &str,
    key: &PrimaryKey,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    if !item.contains_key(attribute) {
        return Ok(());
    }
    let m = &chart.entities[&e.writes.unique[attribute]];
    let Ok(marker_item) = marker(
        chart.table_of(m),
        &chart.indexes,
        m,
        item,
        &key_values(m, item),
    ) else {
        return Ok(());
    };
    let marker_ctx = ctx.on(m.table);
    let Some(at) = marker_ctx.store.schema().key_of(&marker_item) else {
        return Ok(());
    };
    let existing = marker_ctx
        .store
        .get_item(crate::store::GetItem {
            key: at,
            consistent_read: true,
        })
        .await?;
    let names_this = |found: &Item| key_of(e, &key_values(e, found)).as_ref() == Some(key);
    match existing {
        Some(found) if names_this(&found) => return Ok(()),
        Some(_) => {
            report.skipped.push(format!(
                "{} ({} | {}): its {attribute} is another item's (a marker names it)",
                e.name, key.pk, key.sk
            ));
            return Ok(());
        }
        None => {}
    }
    if ctx.dry_run {
        report.markers_put += 1;
        return Ok(());
    }
    // The marker, and its owner still there with the value read: a marker never names an
    // owner that changed or went meanwhile.
    let actions = vec![
        (
            m.table,
            crate::store::TransactAction::Put(Put::new(marker_item).when(Condition::not_exists(
                chart.table_of(m).partition_key.clone(),
            ))),
        ),
        (
            e.table,
            crate::store::TransactAction::ConditionCheck(crate::store::ConditionCheck {
                key: key.clone(),
                condition: Condition::And(vec![
                    Condition::exists(chart.table_of(e).partition_key.clone()),
                    Condition::eq(attribute.to_owned(), item[attribute].clone()),
                ]),
                return_old_on_condition_failure: false,
            }),
        ),
    ];
    match ctx.transact_in(actions).await {
        Ok(()) => report.markers_put += 1,
        Err(StoreError::TransactionCanceled { .. }) => report.skipped.push(format!(
            "{} ({} | {}): its {attribute} was taken, or changed, while being migrated",
            e.name, key.pk, key.sk
        )),
        Err(err) => return Err(err),
    }
    Ok(())
}

/// An item of `owner` from before its counter shards: its shards put and its create-time
/// layout set, in one TransactWriteItems (each shard `attribute_not_exists`, the item
/// conditioned on not having the layout yet), as the built-in chart's `counter-shards`
/// does. Without a layout to mark it, each shard is put where none is.
async fn shard(
    ctx: &Ctx<'_>,
    chart: &Chart,
    owner: &Entity,
    key: &PrimaryKey,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let layout: Vec<(&String, &AttributeValue)> = owner
        .attributes
        .iter()
        .filter_map(|(n, a)| Some((n, a.on_create.as_ref()?)))
        .collect();
    if !layout.is_empty() && layout.iter().all(|(n, v)| item.get(*n) == Some(*v)) {
        return Ok(());
    }
    let Some(shards) = crate::graphql::shard_items(chart, owner, item) else {
        return Ok(());
    };
    // Shards are in their owner's table (rule `tables`).
    let pk = chart.table_of(owner).partition_key.clone();
    if layout.is_empty() {
        for s in shards {
            if ctx.dry_run {
                let at = ctx.store.schema().key_of(&s);
                let there = match at {
                    Some(k) => ctx
                        .store
                        .get_item(crate::store::GetItem {
                            key: k,
                            consistent_read: true,
                        })
                        .await?
                        .is_some(),
                    None => true,
                };
                report.shards_put += usize::from(!there);
                continue;
            }
            match ctx
                .put(Put::new(s).when(Condition::not_exists(pk.clone())))
                .await
            {
                Ok(_) => report.shards_put += 1,
                Err(StoreError::ConditionFailed { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        return Ok(());
    }
    if ctx.dry_run {
        report.shards_put += shards.len();
        return Ok(());
    }
    let count = shards.len();
    let mut actions: Vec<crate::store::TransactAction> = shards
        .into_iter()
        .map(|s| {
            crate::store::TransactAction::Put(Put::new(s).when(Condition::not_exists(pk.clone())))
        })
        .collect();
    let mut set = UpdateExpr::default();
    for (n, v) in &layout {
        set = set.set((*n).clone(), (*v).clone());
    }
    actions.push(crate::store::TransactAction::Update(
        Update::new(key.clone(), set).when(Condition::And(vec![
            Condition::exists(pk.clone()),
            Condition::not_exists(layout[0].0.clone()),
        ])),
    ));
    match ctx.transact(actions).await {
        Ok(()) => report.shards_put += count,
        Err(StoreError::TransactionCanceled { .. }) => report.skipped.push(format!(
            "{} ({} | {}): sharded by another run, or changed, while being migrated",
            owner.name, key.pk, key.sk
        )),
        Err(err) => return Err(err),
    }
    Ok(())
}

/// The plan's counts, recounted: the tables of the counting entities read whole (strongly
/// consistent), each item counted on what its reference names (in its own table, or
/// another), then each count set where the counter is not there yet
/// (`attribute_not_exists`: no write has started it). A counter a writer started
/// meanwhile is left, and named, unless it holds the count already: recounting it needs
/// the writers stopped.
pub(super) async fn recount(
    ctx: &Ctx<'_>,
    chart: &Chart,
    steps: &[Step],
    report: &mut MigrateReport,
) -> StoreResult<()> {
    use std::collections::BTreeMap;
    if !steps.iter().any(|s| matches!(s, Step::Counts { .. })) {
        return Ok(());
    }
    // By the counted item's table, key, and counter.
    let mut tally: BTreeMap<(usize, String, String, String), i64> = BTreeMap::new();
    for t in tables_of(chart, steps, |s| matches!(s, Step::Counts { .. })) {
        tally_table(&ctx.on(t), chart, steps, &mut tally).await?;
    }
    for ((t, tpk, tsk, counter), n) in tally {
        if ctx.dry_run {
            report.counts_set += 1;
            continue;
        }
        set_count(
            &ctx.on(t),
            chart,
            PrimaryKey::new(tpk, tsk),
            counter,
            n,
            report,
        )
        .await?;
    }
    Ok(())
}

/// Counts the items of the table `ctx` migrates on what their references name.
async fn tally_table(
    ctx: &Ctx<'_>,
    chart: &Chart,
    steps: &[Step],
    tally: &mut std::collections::BTreeMap<(usize, String, String, String), i64>,
) -> StoreResult<()> {
    let mut start = None;
    loop {
        let page = ctx
            .store
            .scan(crate::store::Scan {
                limit: Some(crate::check::SCAN_PAGE_SIZE),
                start,
                consistent_read: true,
                segment: None,
                ..Default::default()
            })
            .await?;
        for item in &page.items {
            let Some(AttributeValue::S(ty)) = item.get(&chart.tables[ctx.table].type_attribute)
            else {
                continue;
            };
            let Some(e) = chart.entities.get(ty).filter(|e| e.table == ctx.table) else {
                continue;
            };
            for step in steps {
                let Step::Counts {
                    entity,
                    reference,
                    counters,
                } = step
                else {
                    continue;
                };
                if *entity != e.name {
                    continue;
                }
                let Some(c) = e.writes.counts.iter().find(|c| c.reference == *reference) else {
                    continue;
                };
                let Some(target) =
                    crate::chart::samples::reference_key(&chart.entities, e, item, reference)
                else {
                    continue;
                };
                let Some(at) = e
                    .references
                    .get(reference)
                    .and_then(|r| chart.entities.get(&r.entity))
                    .map(|t| t.table)
                else {
                    continue;
                };
                for counter in c.of_item(item).into_iter().filter(|n| counters.contains(n)) {
                    *tally
                        .entry((at, target.pk.clone(), target.sk.clone(), counter))
                        .or_default() += 1;
                }
            }
        }
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => return Ok(()),
        }
    }
}

/// Sets `counter` of the item at `key` in the table `ctx` migrates to `n`, where no
/// writer has started it.
async fn set_count(
    ctx: &Ctx<'_>,
    chart: &Chart,
    key: PrimaryKey,
    counter: String,
    n: i64,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let pk = chart.tables[ctx.table].partition_key.clone();
    let set = Update::new(
        key.clone(),
        UpdateExpr::default().set(counter.clone(), AttributeValue::N(n.to_string())),
    )
    .when(Condition::And(vec![
        Condition::exists(pk),
        Condition::not_exists(counter.clone()),
    ]));
    match ctx.update(set).await {
        Ok(_) => report.counts_set += 1,
        Err(StoreError::ConditionFailed { .. }) => {
            let now = ctx
                .store
                .get_item(crate::store::GetItem {
                    key: key.clone(),
                    consistent_read: true,
                })
                .await?;
            let holds = now.as_ref().and_then(|i| match i.get(&counter) {
                Some(AttributeValue::N(v)) => v.parse::<i64>().ok(),
                _ => None,
            });
            match (now, holds) {
                (None, _) => report.skipped.push(format!(
                    "({} | {}): counted on by {n} items, and not there",
                    key.pk, key.sk
                )),
                (Some(_), Some(v)) if v == n => {}
                (Some(_), v) => report.skipped.push(format!(
                    "({} | {}): {counter} is {} and {n} items count on it: a writer started it; recount it with the writers stopped",
                    key.pk,
                    key.sk,
                    v.map_or_else(|| "absent".to_owned(), |v| v.to_string())
                )),
            }
        }
        Err(err) => return Err(err),
    }
    Ok(())
}

/// An item whose primary key its templates now render elsewhere: put there (with the index
/// keys they render, and its version where the plan gives one) `attribute_not_exists`, and
/// deleted where it was, conditioned on every attribute as read, in one
/// TransactWriteItems. The item at its new key, when it moved.
async fn rekey(
    ctx: &Ctx<'_>,
    chart: &Chart,
    e: &Entity,
    steps: &[Step],
    key: &PrimaryKey,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<Option<(PrimaryKey, Item)>> {
    let t = chart.table_of(e);
    let mut key_attrs: Vec<String> = t.key_names().into_iter().map(str::to_owned).collect();
    for i in chart.indexes.values().filter(|i| i.table == e.table) {
        key_attrs.extend(i.key_names().into_iter().map(str::to_owned));
    }
    let mut next = item.clone();
    for a in &key_attrs {
        next.remove(a);
    }
    let mut versioned = false;
    for step in steps {
        if let Step::Versions { entity, attribute } = step {
            if *entity == e.name && !next.contains_key(attribute) {
                next.insert(attribute.clone(), AttributeValue::N("1".into()));
                versioned = true;
            }
        }
    }
    if set_keys(t, &chart.indexes, e, &mut next, &key_values(e, item)).is_err() {
        report.skipped.push(format!(
            "{} ({} | {}): its keys do not render",
            e.name, key.pk, key.sk
        ));
        return Ok(None);
    }
    let Some(to) = chart.key_in(e.table, &next) else {
        return Ok(None);
    };
    if to == *key {
        return Ok(None);
    }
    if ctx.dry_run {
        report.items_moved += 1;
        return Ok(None);
    }
    let mut as_read = vec![Condition::exists(t.partition_key.clone())];
    for (a, v) in item {
        if !key_attrs.contains(a) {
            as_read.push(Condition::eq(a.clone(), v.clone()));
        }
    }
    // And what it did not have: an attribute a writer sets meanwhile is not lost.
    for a in e.attributes.keys().filter(|a| !item.contains_key(*a)) {
        as_read.push(Condition::not_exists(a.clone()));
    }
    let actions = vec![
        crate::store::TransactAction::Put(
            Put::new(next.clone()).when(Condition::not_exists(t.partition_key.clone())),
        ),
        crate::store::TransactAction::Delete(
            crate::store::Delete::new(key.clone()).when(Condition::And(as_read)),
        ),
    ];
    match ctx.transact(actions).await {
        Ok(()) => {
            report.items_moved += 1;
            report.versions_set += usize::from(versioned);
            Ok(Some((to, next)))
        }
        Err(StoreError::TransactionCanceled { .. }) => {
            report.skipped.push(format!(
                "{} ({} | {}): changed while being moved, or ({} | {}) is taken",
                e.name, key.pk, key.sk, to.pk, to.sk
            ));
            Ok(None)
        }
        Err(err) => Err(err),
    }
}
