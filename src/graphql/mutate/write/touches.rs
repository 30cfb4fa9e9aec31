//! What a write does beside its item: the markers of its unique values and client tokens,
//! and the counters and existence checks on the items its references name (one action
//! per item, merged), with the conditions that what it was built from still holds.

use super::conditions::{condition, positive};
use super::*;
use crate::chart::plan::{Guard, Step, Verb};

/// A marker's item (a unique value's, a client token's): the owner's values of the
/// marker's attributes, `extra` besides (a time the owner lacks is now), keys rendered.
pub(super) fn marker_item(
    chart: &Chart,
    marker: &Entity,
    owner: &Item,
    extra: &[(&str, AttributeValue)],
) -> Result<Item> {
    let mut source = owner.clone();
    for (name, v) in extra {
        source.insert((*name).to_owned(), v.clone());
    }
    for (name, a) in &marker.attributes {
        if let Type::Timestamp(form) = a.ty {
            if !source.contains_key(name) {
                let now = crate::clock::now();
                let v = form.store(&now).unwrap_or_else(|| s(&now));
                source.insert(name.clone(), v);
            }
        }
    }
    let vars = vars_of(marker, &source);
    crate::chart::samples::marker(
        chart.table_of(marker),
        &chart.indexes,
        marker,
        &source,
        &vars,
    )
    .map_err(|why| {
        tracing::error!(marker = %marker.name, %why, "a marker's keys could not be rendered");
        ApiError::Internal
    })
}

/// What one write does to the items its references name, merged by item (an item
/// appears at most once in a transaction: a ticket's requester who is also its
/// assignee): counter updates, and checks that a referenced item exists. Each is
/// conditioned on the item existing and, where it names a tenant, on it being the
/// writer's: another tenant's item is as missing as one that does not exist. Counts on an
/// item with counter shards land on a shard this process has no other write in flight on
/// ([`ShardLease`]); when that shard does not exist (an item made before its shards were
/// declared, or none at all), [`send`] makes the write again on the item itself.
#[derive(Default)]
pub(super) struct Touches(Vec<Touch>);

pub(super) struct Touch {
    key: PrimaryKey,
    update: UpdateExpr,
    when: Option<Condition>,
    meaning: Meaning,
    sharded: Option<OnShard>,
    /// Whether a plan's act merged into it names [`Guard::Positive`]: each counter taken
    /// from the item itself is above 0.
    positive: bool,
}

/// A touch made on one of an item's counter shards.
struct OnShard {
    /// The item the shard counts for, and the condition on it for a write made there.
    owner: PrimaryKey,
    owner_when: Option<Condition>,
    lease: ShardLease,
}

/// The shard leases a write holds while it is sent, and each sharded action's form on
/// the item itself, by its place among the actions.
#[derive(Default)]
pub(super) struct Sharded {
    leases: Vec<ShardLease>,
    fallbacks: Vec<(usize, TransactAction)>,
}

impl Touches {
    fn touch(
        &mut self,
        key: PrimaryKey,
        when: Option<Condition>,
        meaning: Meaning,
        positive: bool,
    ) -> &mut Touch {
        let i = match self.0.iter().position(|t| t.key == key) {
            Some(i) => i,
            None => {
                self.0.push(Touch {
                    key,
                    update: UpdateExpr::default(),
                    when,
                    meaning,
                    sharded: None,
                    positive: false,
                });
                self.0.len() - 1
            }
        };
        self.0[i].positive |= positive;
        &mut self.0[i]
    }

    /// `by` on every counter the reference of `c` keeps, on the item `item` names (none
    /// when the reference is absent), as `step` of the plan says: an increment needs the
    /// item (`NOT_FOUND`, the reference named), a decrement finds it or the table holds
    /// what no writer made.
    pub(super) async fn count(
        &mut self,
        chart: &Chart,
        e: &Entity,
        item: &Item,
        c: &Count,
        by: i64,
        step: &Step,
    ) -> Result<()> {
        let Some((target, vars)) = referenced(chart, e, item, &c.reference) else {
            return Ok(());
        };
        let act = step.act(Verb::Update).ok_or(ApiError::Internal)?;
        let when = &act.when;
        let positive = when.contains(&Guard::Positive);
        let meaning = if by > 0 {
            Meaning::Missing(c.reference.clone())
        } else {
            Meaning::Corrupt("a counted item is gone")
        };
        let counters = c.of_item(item);
        let i = match shards_of(chart, target) {
            None => {
                let Some((key, when)) = at(item, target, &vars, when) else {
                    return Ok(());
                };
                let t = self.touch(key, when, meaning, positive);
                for counter in &counters {
                    add(&mut t.update, counter, by);
                }
                return Ok(());
            }
            Some((shard, count)) => {
                let Some((owner, owner_when)) = at(item, target, &vars, when) else {
                    return Ok(());
                };
                let on_shard = step.on_shard.as_deref().ok_or(ApiError::Internal)?;
                match self
                    .0
                    .iter()
                    .position(|t| t.sharded.as_ref().is_some_and(|s| s.owner == owner))
                {
                    Some(i) => i,
                    None => {
                        let lease = ShardLease::take(&owner, count).await;
                        let Some((key, when)) =
                            shard_vars(chart, target, shard, &vars, lease.shard)
                                .and_then(|v| at(item, shard, &v, on_shard))
                        else {
                            return Ok(());
                        };
                        self.0.push(Touch {
                            key,
                            update: UpdateExpr::default(),
                            when,
                            meaning,
                            sharded: Some(OnShard {
                                owner,
                                owner_when,
                                lease,
                            }),
                            positive,
                        });
                        self.0.len() - 1
                    }
                }
            }
        };
        for counter in &counters {
            add(&mut self.0[i].update, counter, by);
        }
        Ok(())
    }

    /// A check that the item `reference` names exists (and is the writer's tenant's), as
    /// `step` of the plan says.
    pub(super) fn check(
        &mut self,
        chart: &Chart,
        e: &Entity,
        item: &Item,
        reference: &str,
        step: &Step,
    ) -> Result<()> {
        let Some((target, vars)) = referenced(chart, e, item, reference) else {
            return Ok(());
        };
        let act = step.act(Verb::Check).ok_or(ApiError::Internal)?;
        if let Some((key, when)) = at(item, target, &vars, &act.when) {
            self.touch(key, when, Meaning::Missing(reference.to_owned()), false);
        }
        Ok(())
    }

    /// The touches as actions after `actions` (their meanings after `meanings`), with
    /// what sending them takes: the leases held and the sharded ones' forms on the item
    /// itself (a decrement there conditioned on the counter being positive, as the item
    /// alone counted).
    pub(super) fn into_actions(
        self,
        actions: &mut Vec<TransactAction>,
        meanings: &mut Vec<Meaning>,
    ) -> Sharded {
        let mut sharded = Sharded::default();
        for mut t in self.0 {
            t.update.add.retain(|(_, v)| number(Some(v)) != 0);
            // A count taken off an item (not a shard, whose part may go below 0) must be
            // there to take: else the table holds what no writer made.
            let taken = if t.positive {
                positive(&t.update)
            } else {
                Vec::new()
            };
            let and = |when: Option<Condition>, taken: Vec<Condition>| {
                let mut all: Vec<Condition> = when.into_iter().collect();
                all.extend(taken);
                match all.len() {
                    0 => None,
                    1 => all.pop(),
                    _ => Some(Condition::And(all)),
                }
            };
            match t.sharded {
                Some(on) => {
                    let mut fallback = Update::new(on.owner, t.update.clone());
                    fallback.condition = and(on.owner_when, taken);
                    sharded
                        .fallbacks
                        .push((actions.len(), TransactAction::Update(fallback)));
                    sharded.leases.push(on.lease);
                }
                None => t.when = and(t.when, taken),
            }
            actions.push(match (t.update.is_empty(), t.when) {
                (true, Some(condition)) => TransactAction::ConditionCheck(ConditionCheck {
                    key: t.key,
                    condition,
                    return_old_on_condition_failure: false,
                }),
                // A check on no condition checks nothing (its plan always names the item
                // there).
                (true, None) => continue,
                (false, when) => {
                    let mut u = Update::new(t.key, t.update);
                    u.condition = when;
                    TransactAction::Update(u)
                }
            });
            meanings.push(t.meaning);
        }
        sharded
    }
}

fn add(update: &mut UpdateExpr, counter: &str, by: i64) {
    match update.add.iter_mut().find(|(name, _)| name == counter) {
        Some((_, v)) => *v = n(number(Some(v)) + by),
        None => update.add.push((counter.to_owned(), n(by))),
    }
}

/// Runs a write's actions ([`send_once`]); when one on a counter shard failed its
/// condition (the shard is not there), once more with it on the item itself, whose own
/// condition then says whether that is missing too. The leases are given back after the
/// first attempt.
pub(super) async fn send(
    rc: &RequestContext,
    chart: &Chart,
    plan: &MutationPlan,
    actions: Vec<TransactAction>,
    sharded: Sharded,
) -> std::result::Result<Option<Item>, StoreError> {
    let Sharded {
        leases,
        mut fallbacks,
    } = sharded;
    if fallbacks.is_empty() {
        drop(leases);
        return send_once(rc, chart, plan, actions).await;
    }
    let mut actions = actions;
    let mut result = send_once(rc, chart, plan, actions.clone()).await;
    drop(leases);
    loop {
        let at = match &result {
            Err(err) => failed(err).map(|(i, _)| i),
            Ok(_) => None,
        };
        let Some(pos) = at.and_then(|i| fallbacks.iter().position(|(j, _)| *j == i)) else {
            return result;
        };
        let (i, action) = fallbacks.swap_remove(pos);
        actions[i] = action;
        result = send_once(rc, chart, plan, actions.clone()).await;
    }
}

/// [`send`], a single action too as a TransactWriteItems (for its client request token).
pub(super) async fn send_transaction(
    rc: &RequestContext,
    chart: &Chart,
    plan: &MutationPlan,
    actions: Vec<TransactAction>,
    sharded: Sharded,
) -> std::result::Result<Option<Item>, StoreError> {
    if actions.len() == 1 {
        drop(sharded);
        let t = plan.tables_of(chart, &actions)[0];
        let store = chart.store_of(&rc.store, t)?;
        return store.transact_write(actions).await.map(|()| None);
    }
    send(rc, chart, plan, actions, sharded).await
}

/// The entity a reference of `item` names, and its key values (none when the reference
/// is absent).
fn referenced<'c>(
    chart: &'c Chart,
    e: &Entity,
    item: &Item,
    reference: &str,
) -> Option<(&'c Entity, Vars)> {
    let r = &e.references[reference];
    let source = vars_of(e, item);
    let mut vars = Vars::new();
    for (to, from) in &r.key {
        vars.insert(to.clone(), source.get(from)?.clone());
    }
    Some((&chart.entities[&r.entity], vars))
}

/// The counter shards of `target`, and how many it has.
fn shards_of<'c>(chart: &'c Chart, target: &Entity) -> Option<(&'c Entity, u32)> {
    chart.entities.values().find_map(|s| {
        s.shards_of
            .as_ref()
            .filter(|(of, _)| *of == target.name)
            .map(|(_, n)| (s, *n))
    })
}

/// The key of the `at` item `vars` name, and the condition `when` (its plan's: it exists,
/// and holds `item`'s tenant where its key does not say) filled for a write of `item`'s.
fn at(
    item: &Item,
    at: &Entity,
    vars: &Vars,
    when: &[Guard],
) -> Option<(PrimaryKey, Option<Condition>)> {
    let key = PrimaryKey::new(
        render(&at.key.pk, vars).ok()?,
        render(&at.key.sk, vars).ok()?,
    );
    Some((key, condition(when, &owned_by(item))))
}

/// The count of `e` on its reference `reference`: what a plan's counter step names.
pub(super) fn count_of<'e>(e: &'e Entity, reference: &str) -> Result<&'e Count> {
    e.writes
        .counts
        .iter()
        .find(|c| c.reference == reference)
        .ok_or(ApiError::Internal)
}

/// The delete of `item`'s marker under `marker`, on its plan's condition (only where it
/// names the item).
pub(super) fn drop_marker(
    chart: &Chart,
    step: &Step,
    marker: &Entity,
    item: &Item,
) -> Result<TransactAction> {
    let old = marker_item(chart, marker, item, &[])?;
    let mut d = Delete::new(chart.key_of(&old).ok_or(ApiError::Internal)?);
    d.condition = of_step(step, Verb::Delete, &owned_by(item))?;
    Ok(TransactAction::Delete(d))
}

/// The marker of `item`'s value under `marker` given the item's expiry `ttl` (removed when
/// the item has none), on its plan's condition (only where it names the item).
pub(super) fn renew_marker(
    chart: &Chart,
    step: &Step,
    marker: &Entity,
    item: &Item,
    ttl: &str,
) -> Result<TransactAction> {
    let at = marker_item(chart, marker, item, &[])?;
    let set = match item.get(ttl) {
        Some(v) => crate::store::UpdateExpr::default().set(ttl.to_owned(), v.clone()),
        None => crate::store::UpdateExpr::default().remove(ttl.to_owned()),
    };
    let mut u = Update::new(chart.key_of(&at).ok_or(ApiError::Internal)?, set);
    u.condition = of_step(step, Verb::Update, &owned_by(item))?;
    Ok(TransactAction::Update(u))
}

/// The values of an action made for `item`: a marker that names it, a count or check held
/// to its tenant.
pub(super) fn owned_by(item: &Item) -> Values<'_> {
    Values {
        owner: Some(item),
        ..Values::default()
    }
}

/// A counter shard's key values: its number, and the owner's values (by name, or the
/// owner's tenant as the shard's tenant).
pub(super) fn shard_vars(
    chart: &Chart,
    owner: &Entity,
    shard: &Entity,
    owner_vars: &Vars,
    number: u32,
) -> Option<Vars> {
    let mut vars = Vars::new();
    for v in shard.key.pk.vars().chain(shard.key.sk.vars()) {
        let value = if let Some(x) = owner_vars.get(&v.name) {
            x.clone()
        } else if chart.tenant_attribute(shard).as_deref() == Some(v.name.as_str()) {
            owner_vars.get(&chart.tenant_attribute(owner)?)?.clone()
        } else if matches!(
            shard.attributes.get(&v.name).map(|a| &a.ty),
            Some(Type::Int { .. })
        ) {
            KeyValue::Int(number.into())
        } else {
            return None;
        };
        vars.insert(v.name.clone(), value);
    }
    Some(vars)
}

/// The shard items of a new item with counter shards, each counting nothing.
pub(super) fn new_shards(chart: &Chart, e: &Entity, item: &Item) -> Result<Vec<Item>> {
    let Some((shard, count)) = chart.entities.values().find_map(|s| {
        s.shards_of
            .as_ref()
            .filter(|(of, _)| *of == e.name)
            .map(|(_, n)| (s, *n))
    }) else {
        return Ok(Vec::new());
    };
    let owner_vars = vars_of(e, item);
    let mut out = Vec::new();
    for i in 0..count {
        let vars = shard_vars(chart, e, shard, &owner_vars, i).ok_or(ApiError::Internal)?;
        let mut shard_item = Item::new();
        for (name, a) in &shard.attributes {
            match (vars.get(name), &a.ty) {
                (Some(KeyValue::Text(t)), _) => {
                    shard_item.insert(name.clone(), s(t));
                }
                (Some(KeyValue::Int(v)), _) => {
                    shard_item.insert(name.clone(), n(*v));
                }
                (None, Type::Counter) => {
                    shard_item.insert(name.clone(), n(0));
                }
                _ => {}
            }
        }
        out.push(with_keys(chart, shard, shard_item)?);
    }
    Ok(out)
}
