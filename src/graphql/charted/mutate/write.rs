//! A chart's mutations as store requests: each one write (a conditional PutItem,
//! UpdateItem or DeleteItem, or one TransactWriteItems), preceded at most by the strongly
//! consistent GetItem its checks need. What the entity declares is kept in the same write:
//!
//! - **unique attributes**: a marker item per value, put `attribute_not_exists` with the
//!   item (`CONFLICT`, the attribute named), moved when the value changes, deleted with
//!   the item; a marker is removed only when it names this item (or is gone);
//! - **counts**: `ADD` on each item a reference names (on one of its counter shards when
//!   it has them), conditioned on it existing (`NOT_FOUND`, the reference named), moved
//!   when the reference changes; counts kept on an item guard its delete (`CONFLICT`,
//!   the counter named, while not 0);
//! - **version**: 1 at create; every change and delete compares `expectedVersion`
//!   (`VERSION_MISMATCH` with the current one) and bumps it;
//! - **life cycle**: a change of its attribute only along a declared transition
//!   (`INVALID_TRANSITION`), conditioned on the state read;
//! - **client token**: a marker put first in the create's transaction; when it is there
//!   already, nothing is written and the item it names is read back (`replayed`).
//!
//! When a write that depended on what was read finds the item changed (its condition
//! fails without a version to blame), it is built again from the item the failure
//! returned, at most [`ATTEMPTS`] times in all.

use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Value};
use rand::Rng;

use super::super::record::{decode_global_id, key_value, render, Vars};
use super::input::stored;
use crate::auth::{Access, Role};
use crate::chart::template::Value as KeyValue;
use crate::chart::types::Type;
use crate::chart::{Action, Auto, Chart, Count, Entity, Mutation};
use crate::collections::failed_condition as failed;
use crate::graphql::context::RequestContext;
use crate::graphql::errors::ApiError;
use crate::keys::{Id, Slug};
use crate::store::{
    AttributeValue, CancelReason, Condition, ConditionCheck, Delete, GetItem, Item, PrimaryKey,
    Put, ReturnValues, StoreError, TransactAction, Update, UpdateExpr,
};

/// How many times a write built from a read is built again when the item changed between.
const ATTEMPTS: usize = 3;

/// What a mutation wrote: the item as stored (as deleted, for a delete).
pub struct Written {
    pub item: Item,
    pub replayed: bool,
}

/// What a failed condition of one action means to the caller.
#[derive(Clone)]
enum Meaning {
    /// A unique value (or the item's key) is taken.
    Taken(String),
    /// What the action needs does not exist.
    Missing(String),
    /// The item the mutation changes: read again, or blame its version.
    Own,
    /// The table holds what no writer made.
    Corrupt(&'static str),
}

type Result<T, E = ApiError> = std::result::Result<T, E>;

pub async fn run(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    if let Some(role) = &m.role {
        allowed(&rc.access, role, &m.name)?;
    }
    let e = &chart.entities[&m.entity];
    match m.action {
        Action::Create => create(rc, chart, m, e, input).await,
        Action::Update => update(rc, chart, m, e, input).await,
        Action::Delete => delete(rc, chart, m, e, input).await,
    }
}

fn allowed(access: &Access, role: &str, mutation: &str) -> Result<()> {
    match access {
        Access::Unrestricted => Ok(()),
        Access::Tenant {
            role: Role::Admin, ..
        } => Ok(()),
        Access::Tenant {
            role: Role::Member, ..
        } if role == "MEMBER" => Ok(()),
        Access::Tenant { .. } => Err(ApiError::Forbidden(format!(
            "only an admin of the organization may call {mutation}"
        ))),
    }
}

/// The field a missing entity is named by (`Store` → `store`).
fn lower(name: &str) -> String {
    let mut c = name.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn number(v: Option<&AttributeValue>) -> i64 {
    match v {
        Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// An item's key values, as its templates render them.
fn vars_of(e: &Entity, item: &Item) -> Vars {
    crate::chart::samples::key_values(e, item)
}

/// The item with its keys, index keys and type attribute rendered from its attributes
/// ([`crate::chart::samples::set_keys`]).
fn with_keys(chart: &Chart, e: &Entity, mut item: Item) -> Result<Item> {
    let vars = vars_of(e, &item);
    crate::chart::samples::set_keys(&chart.table, &chart.indexes, e, &mut item, &vars).map_err(
        |why| {
            tracing::error!(entity = %e.name, %why, "a written item's keys could not be rendered");
            ApiError::Internal
        },
    )?;
    Ok(item)
}

fn primary_key(chart: &Chart, item: &Item) -> Option<PrimaryKey> {
    let text = |a: &str| match item.get(a) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    };
    Some(PrimaryKey::new(
        text(&chart.table.partition_key)?,
        text(&chart.table.sort_key)?,
    ))
}

/// `NOT_FOUND` (the tenant named) when the caller may not see the tenant the item names:
/// what the write would answer if it did not exist, before anything is read or written.
fn visible(rc: &RequestContext, chart: &Chart, e: &Entity, vars: &Vars) -> Result<()> {
    let Some(attr) = chart.tenant_attribute(e) else {
        return Ok(());
    };
    let Some(tenant) = chart.tenant.as_ref() else {
        return Ok(());
    };
    let sees = match vars.get(&attr) {
        Some(KeyValue::Text(t)) => Slug::parse(t).is_ok_and(|s| rc.sees(&s)),
        _ => matches!(rc.access, Access::Unrestricted),
    };
    if sees {
        Ok(())
    } else if tenant.entity == e.name {
        Err(ApiError::Missing {
            field: lower(&e.name).into(),
        })
    } else {
        Err(ApiError::Missing {
            field: lower(&tenant.entity).into(),
        })
    }
}

/// A marker's item (a unique value's, a client token's): the owner's values of the
/// marker's attributes, `extra` besides (a time the owner lacks is now), keys rendered.
fn marker_item(
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
        if matches!(a.ty, Type::Timestamp) && !source.contains_key(name) {
            source.insert(name.clone(), s(&crate::model::now()));
        }
    }
    let vars = vars_of(marker, &source);
    crate::chart::samples::marker(&chart.table, &chart.indexes, marker, &source, &vars).map_err(
        |why| {
            tracing::error!(marker = %marker.name, %why, "a marker's keys could not be rendered");
            ApiError::Internal
        },
    )
}

/// The condition a marker may be removed on: gone, or naming this owner.
fn names_owner(chart: &Chart, owner: &Entity, item: &Item) -> Condition {
    let mut names = Vec::new();
    for v in owner.key.pk.vars().chain(owner.key.sk.vars()) {
        if let Some(value) = item.get(&v.name) {
            let c = Condition::eq(v.name.clone(), value.clone());
            if !names.contains(&c) {
                names.push(c);
            }
        }
    }
    Condition::Or(vec![
        Condition::not_exists(chart.table.partition_key.clone()),
        Condition::And(names),
    ])
}

/// What one write does to the items its references name, merged by item (an item
/// appears at most once in a transaction: a ticket's requester who is also its
/// assignee): counter updates, and checks that a referenced item exists. Each is
/// conditioned on the item existing and, where it names a tenant, on it being the
/// writer's: another tenant's item is as missing as one that does not exist.
#[derive(Default)]
struct Touches(Vec<Touch>);

struct Touch {
    key: PrimaryKey,
    update: UpdateExpr,
    when: Condition,
    meaning: Meaning,
}

impl Touches {
    fn touch(&mut self, key: PrimaryKey, when: Condition, meaning: Meaning) -> &mut Touch {
        let i = match self.0.iter().position(|t| t.key == key) {
            Some(i) => i,
            None => {
                self.0.push(Touch {
                    key,
                    update: UpdateExpr::default(),
                    when,
                    meaning,
                });
                self.0.len() - 1
            }
        };
        &mut self.0[i]
    }

    /// `by` on every counter the reference of `c` keeps, on the item `item` names (none
    /// when the reference is absent): an increment needs the item (`NOT_FOUND`, the
    /// reference named), a decrement finds it or the table holds what no writer made.
    fn count(&mut self, chart: &Chart, e: &Entity, item: &Item, c: &Count, by: i64) {
        let Some((key, when)) = landing(chart, e, item, &c.reference, true) else {
            return;
        };
        let meaning = if by > 0 {
            Meaning::Missing(c.reference.clone())
        } else {
            Meaning::Corrupt("a counted item is gone")
        };
        let t = self.touch(key, when, meaning);
        for counter in &c.of_item(item) {
            match t.update.add.iter_mut().find(|(name, _)| name == counter) {
                Some((_, v)) => *v = n(number(Some(v)) + by),
                None => t.update.add.push((counter.clone(), n(by))),
            }
        }
    }

    /// A check that the item `reference` names exists (and is the writer's tenant's).
    fn check(&mut self, chart: &Chart, e: &Entity, item: &Item, reference: &str) {
        if let Some((key, when)) = landing(chart, e, item, reference, false) {
            self.touch(key, when, Meaning::Missing(reference.to_owned()));
        }
    }

    fn into_actions(self, actions: &mut Vec<TransactAction>, meanings: &mut Vec<Meaning>) {
        for mut t in self.0 {
            t.update.add.retain(|(_, v)| number(Some(v)) != 0);
            actions.push(if t.update.is_empty() {
                TransactAction::ConditionCheck(ConditionCheck {
                    key: t.key,
                    condition: t.when,
                    return_old_on_condition_failure: false,
                })
            } else {
                TransactAction::Update(Update::new(t.key, t.update).when(t.when))
            });
            meanings.push(t.meaning);
        }
    }
}

/// Where a reference of `item` lands (its counters on one of the item's counter shards
/// when `counted` and it has them), and the condition it must meet there.
fn landing(
    chart: &Chart,
    e: &Entity,
    item: &Item,
    reference: &str,
    counted: bool,
) -> Option<(PrimaryKey, Condition)> {
    let r = &e.references[reference];
    let source = vars_of(e, item);
    let mut vars = Vars::new();
    for (to, from) in &r.key {
        vars.insert(to.clone(), source.get(from)?.clone());
    }
    let target = &chart.entities[&r.entity];
    let shards = chart.entities.values().find_map(|s| {
        s.shards_of
            .as_ref()
            .filter(|(of, _)| *of == target.name && counted)
            .map(|(_, n)| (s, *n))
    });
    let (at, vars) = match shards {
        None => (target, vars),
        Some((shard, count)) => {
            let number = rand::rng().random_range(0..count);
            (shard, shard_vars(chart, target, shard, &vars, number)?)
        }
    };
    let key = PrimaryKey::new(
        render(&at.key.pk, &vars).ok()?,
        render(&at.key.sk, &vars).ok()?,
    );
    let mut when = vec![Condition::exists(chart.table.partition_key.clone())];
    let theirs = chart.tenant_attribute(at).filter(|a| !vars.contains_key(a));
    if let (Some(attr), Some(mine)) = (theirs, chart.tenant_attribute(e)) {
        if let Some(v) = item.get(&mine) {
            when.push(Condition::eq(attr, v.clone()));
        }
    }
    Some((key, Condition::And(when)))
}

/// The references of `e` no count of it verifies: a create (and a change of one) checks
/// that the item each names exists.
fn unchecked(e: &Entity) -> impl Iterator<Item = &String> {
    e.references
        .keys()
        .filter(|r| !e.writes.counts.iter().any(|c| c.reference == **r))
}

/// The conditions that what a write was built from (its unique values, the references it
/// counts on, its state) is still as `current` holds it.
fn as_read(e: &Entity, current: &Item) -> Vec<Condition> {
    let mut depends: Vec<&str> = e.writes.unique.keys().map(String::as_str).collect();
    for c in &e.writes.counts {
        depends.extend(e.references[&c.reference].key.values().map(String::as_str));
        depends.extend(c.by_attributes());
    }
    depends.extend(e.writes.lifecycle.iter().map(|l| l.attribute.as_str()));
    depends
        .into_iter()
        .map(|a| match current.get(a) {
            Some(v) => Condition::eq(a.to_owned(), v.clone()),
            None => Condition::not_exists(a.to_owned()),
        })
        .collect()
}

/// The delete of `owner`'s marker under `marker`, only where it names this owner.
fn drop_marker(
    chart: &Chart,
    owner: &Entity,
    marker: &Entity,
    item: &Item,
) -> Result<TransactAction> {
    let old = marker_item(chart, marker, item, &[])?;
    Ok(TransactAction::Delete(
        Delete::new(primary_key(chart, &old).ok_or(ApiError::Internal)?)
            .when(names_owner(chart, owner, item)),
    ))
}

/// A counter shard's key values: its number, and the owner's values (by name, or the
/// owner's tenant as the shard's tenant).
fn shard_vars(
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
fn new_shards(chart: &Chart, e: &Entity, item: &Item) -> Result<Vec<Item>> {
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

/// Runs the actions: one conditional write alone, else one TransactWriteItems.
async fn send(
    rc: &RequestContext,
    actions: Vec<TransactAction>,
) -> std::result::Result<Option<Item>, StoreError> {
    if actions.len() > 1 {
        return rc.store.transact_write(actions).await.map(|()| None);
    }
    match actions.into_iter().next() {
        Some(TransactAction::Put(p)) => rc.store.put_item(p).await.map(|_| None),
        Some(TransactAction::Update(mut u)) => {
            u.returns = ReturnValues::AllNew;
            rc.store.update_item(u).await
        }
        Some(TransactAction::Delete(mut d)) => {
            d.returns = ReturnValues::AllOld;
            rc.store.delete_item(d).await
        }
        Some(TransactAction::ConditionCheck(_)) | None => Ok(None),
    }
}

fn meaning_error(m: &Meaning) -> ApiError {
    match m {
        Meaning::Taken(field) => ApiError::Conflict {
            message: format!("this {field} is already taken"),
            field: field.clone().into(),
        },
        Meaning::Missing(field) => ApiError::Missing {
            field: field.clone().into(),
        },
        Meaning::Own => ApiError::Internal,
        Meaning::Corrupt(what) => {
            tracing::error!(what, "a write's condition found the table inconsistent");
            ApiError::Internal
        }
    }
}

// --- create ----------------------------------------------------------------------------

async fn create(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let now = crate::model::now();
    let mut item = Item::new();
    for (name, a) in &e.attributes {
        let given = input
            .get(name.as_str())
            .filter(|v| !matches!(v, Value::Null));
        let value = if let Some(auto) = a.auto {
            Some(match auto {
                Auto::Ulid => s(&Id::generate().to_string()),
                Auto::Created | Auto::Updated => s(&now),
            })
        } else if e.writes.version.as_deref() == Some(name) {
            Some(n(1))
        } else if let Some(l) = e.writes.lifecycle.as_ref().filter(|l| l.attribute == *name) {
            Some(s(&l.initial))
        } else if matches!(a.ty, Type::Counter) {
            Some(n(0))
        } else if let Some(v) = given {
            Some(stored(chart, name, &a.ty, v)?)
        } else if a.optional {
            None
        } else {
            return Err(ApiError::bad_input(name, format!("{name} is required")));
        };
        if let Some(v) = value {
            item.insert(name.clone(), v);
        }
    }
    visible(rc, chart, e, &vars_of(e, &item))?;
    let item = with_keys(chart, e, item)?;
    crate::store::validate::item_within_size(&item).map_err(|_| {
        ApiError::bad_input(&m.name, "the item would be larger than DynamoDB's 400 KB")
    })?;

    let pk = chart.table.partition_key.clone();
    let mut actions = Vec::new();
    let mut meanings = Vec::new();
    let token = match (&m.token, input.get("clientToken")) {
        (Some(marker), Some(Value::String(t))) => {
            let marker = &chart.entities[marker];
            let token_attr = marker
                .attributes
                .iter()
                .find(|(_, a)| matches!(a.ty, Type::Kind(crate::chart::types::Kind::Token)))
                .map(|(n, _)| n.clone())
                .ok_or(ApiError::Internal)?;
            let t = stored(
                chart,
                "clientToken",
                &marker.attributes[&token_attr].ty,
                &Value::String(t.clone()),
            )?;
            let mut put = Put::new(marker_item(
                chart,
                marker,
                &item,
                &[(token_attr.as_str(), t)],
            )?)
            .when(Condition::not_exists(pk.clone()));
            put.return_old_on_condition_failure = true;
            actions.push(TransactAction::Put(put));
            meanings.push(Meaning::Taken("clientToken".into()));
            Some(marker)
        }
        _ => None,
    };
    let own = key_field(e);
    actions.push(TransactAction::Put(
        Put::new(item.clone()).when(Condition::not_exists(pk.clone())),
    ));
    meanings.push(Meaning::Taken(own));
    for (attr, marker) in &e.writes.unique {
        if !item.contains_key(attr) {
            continue;
        }
        let marker = &chart.entities[marker];
        actions.push(TransactAction::Put(
            Put::new(marker_item(chart, marker, &item, &[])?)
                .when(Condition::not_exists(pk.clone())),
        ));
        meanings.push(Meaning::Taken(attr.clone()));
    }
    let mut touches = Touches::default();
    for c in &e.writes.counts {
        touches.count(chart, e, &item, c, 1);
    }
    for r in unchecked(e) {
        touches.check(chart, e, &item, r);
    }
    touches.into_actions(&mut actions, &mut meanings);
    for shard in new_shards(chart, e, &item)? {
        actions.push(TransactAction::Put(
            Put::new(shard).when(Condition::not_exists(pk.clone())),
        ));
        meanings.push(Meaning::Corrupt("a counter shard of a new item exists"));
    }
    match send(rc, actions).await {
        Ok(_) => Ok(Written {
            item,
            replayed: false,
        }),
        Err(err) => {
            if let (Some(_), StoreError::TransactionCanceled { reasons }) = (token, &err) {
                if let Some(CancelReason::ConditionalCheckFailed { item: Some(found) }) =
                    reasons.first()
                {
                    return replay(rc, e, found).await;
                }
            }
            Err(explain(err, &meanings))
        }
    }
}

/// The field a taken key is named by: the last variable of the sort key (`number`,
/// `username`), or the entity.
fn key_field(e: &Entity) -> String {
    e.key
        .sk
        .vars()
        .last()
        .or_else(|| e.key.pk.vars().last())
        .map_or_else(|| lower(&e.name), |v| v.name.clone())
}

fn explain(err: StoreError, meanings: &[Meaning]) -> ApiError {
    let single = matches!(err, StoreError::ConditionFailed { .. });
    match failed(&err) {
        Some((i, _)) if !single || meanings.len() == 1 => match meanings.get(i) {
            Some(m) => meaning_error(m),
            None => err.into(),
        },
        _ => err.into(),
    }
}

/// The item a used client token placed, read back: nothing new was written.
async fn replay(rc: &RequestContext, e: &Entity, found: &Item) -> Result<Written> {
    let mut owner = Item::new();
    for v in e.key.pk.vars().chain(e.key.sk.vars()) {
        if let Some(value) = found.get(&v.name) {
            owner.insert(v.name.clone(), value.clone());
        }
    }
    let vars = vars_of(e, &owner);
    let key = PrimaryKey::new(render(&e.key.pk, &vars)?, render(&e.key.sk, &vars)?);
    match rc
        .store
        .get_item(GetItem {
            key,
            consistent_read: true,
        })
        .await?
    {
        Some(item) => Ok(Written {
            item,
            replayed: true,
        }),
        // The token made an item that has been deleted since: the retry creates nothing.
        None => Err(ApiError::Missing {
            field: lower(&e.name).into(),
        }),
    }
}

// --- the item a change or a delete names ------------------------------------------------

/// The key values of the item an update or a delete names: its global `id`, or its key
/// attributes.
fn named(chart: &Chart, m: &Mutation, e: &Entity, input: &IndexMap<Name, Value>) -> Result<Vars> {
    if m.by_id {
        let id = match input.get("id") {
            Some(Value::String(id)) => id.as_str(),
            _ => return Err(ApiError::bad_input("id", "id is required")),
        };
        if let Some(plain) = &e.plain_id {
            if let Ok(v) = key_value(&e.attributes[plain].ty, "id", id) {
                return Ok(Vars::from([(plain.clone(), v)]));
            }
        }
        let (found, vars) = decode_global_id(chart, "id", id)?;
        if found.name != e.name {
            return Err(ApiError::bad_input(
                "id",
                format!("not the id of a {}", e.name),
            ));
        }
        return Ok(vars);
    }
    let mut vars = Vars::new();
    for v in e.key.pk.vars().chain(e.key.sk.vars()) {
        let given = match input.get(v.name.as_str()) {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Number(x)) => x.to_string(),
            Some(Value::Enum(x)) => x.to_string(),
            _ => {
                return Err(ApiError::bad_input(
                    &v.name,
                    format!("{} is required", v.name),
                ))
            }
        };
        let value = key_value(&e.attributes[&v.name].ty, &v.name, &given)
            .map_err(|msg| ApiError::bad_input(&v.name, msg))?;
        vars.insert(v.name.clone(), value);
    }
    Ok(vars)
}

fn key_of(e: &Entity, vars: &Vars) -> Result<PrimaryKey> {
    Ok(PrimaryKey::new(
        render(&e.key.pk, vars)?,
        render(&e.key.sk, vars)?,
    ))
}

/// A strongly consistent read of the item a write changes; `NOT_FOUND` when it is not
/// there.
async fn read(rc: &RequestContext, e: &Entity, key: &PrimaryKey) -> Result<Item> {
    rc.store
        .get_item(GetItem {
            key: key.clone(),
            consistent_read: true,
        })
        .await?
        .ok_or_else(|| ApiError::Missing {
            field: lower(&e.name).into(),
        })
}

fn expected_version(input: &IndexMap<Name, Value>, required: bool) -> Result<Option<i64>> {
    match input.get("expectedVersion") {
        Some(Value::Number(v)) => match v.as_i64().filter(|v| *v >= 1) {
            Some(v) => Ok(Some(v)),
            None => Err(ApiError::bad_input(
                "expectedVersion",
                "expectedVersion must be at least 1",
            )),
        },
        _ if required => Err(ApiError::bad_input(
            "expectedVersion",
            "expectedVersion is required",
        )),
        _ => Ok(None),
    }
}

fn version_mismatch(e: &Entity, expected: i64, current: Option<&Item>) -> ApiError {
    let attr = e.writes.version.as_deref().unwrap_or("version");
    match current {
        None => ApiError::Missing {
            field: lower(&e.name).into(),
        },
        Some(item) => ApiError::VersionMismatch {
            entity: lower(&e.name).into(),
            expected: u32::try_from(expected).unwrap_or(u32::MAX),
            current: u32::try_from(number(item.get(attr))).ok(),
        },
    }
}

/// The counters of `e` that other entities keep: each guards a delete while not 0.
fn guards(chart: &Chart, e: &Entity) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for other in chart.declared() {
        for c in &other.writes.counts {
            if other
                .references
                .get(&c.reference)
                .is_some_and(|r| r.entity == e.name)
            {
                for counter in &c.all() {
                    if !out.contains(counter) {
                        out.push(counter.clone());
                    }
                }
            }
        }
    }
    out
}

// --- update ----------------------------------------------------------------------------

async fn update(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let vars = named(chart, m, e, input)?;
    visible(rc, chart, e, &vars)?;
    let key = key_of(e, &vars)?;
    let expected = expected_version(input, e.writes.version.is_some())?;
    // The change: `Some(v)` sets, `None` removes (an optional attribute given as null).
    let mut change: Vec<(String, Option<AttributeValue>)> = Vec::new();
    for f in &m.fields {
        match input.get(f.as_str()) {
            None => {}
            Some(Value::Null) if e.attributes[f].optional => change.push((f.clone(), None)),
            Some(Value::Null) => return Err(ApiError::bad_input(f, format!("{f} cannot be null"))),
            Some(v) => change.push((f.clone(), Some(stored(chart, f, &e.attributes[f].ty, v)?))),
        }
    }
    if change.is_empty() {
        return Err(ApiError::BadUserInput {
            message: format!("nothing to change: give {}", m.fields.join(", ")),
            field: None,
        });
    }
    let changed = |a: &str| change.iter().any(|(f, _)| f == a);
    let key_vars: Vec<&str> = e
        .key
        .pk
        .vars()
        .chain(e.key.sk.vars())
        .map(|v| v.name.as_str())
        .collect();
    let needs_read = e.writes.unique.keys().any(|a| changed(a))
        || e.references
            .values()
            .any(|r| r.key.values().any(|f| changed(f)))
        || e.writes
            .counts
            .iter()
            .any(|c| c.by_attributes().any(&changed))
        || e.writes
            .lifecycle
            .as_ref()
            .is_some_and(|l| changed(&l.attribute))
        || e.indexes.values().any(|k| {
            let vs: Vec<&str> =
                k.pk.vars()
                    .chain(k.sk.vars())
                    .map(|v| v.name.as_str())
                    .collect();
            vs.iter().any(|v| changed(v)) && vs.iter().any(|v| !changed(v) && !key_vars.contains(v))
        });
    if !needs_read {
        return update_in_place(rc, chart, e, &vars, key, expected, &change).await;
    }
    let mut current = read(rc, e, &key).await?;
    for _ in 0..ATTEMPTS {
        let (actions, meanings, next) = changed_item(chart, e, &current, expected, &change)?;
        match send(rc, actions).await {
            Ok(Some(item)) => {
                return Ok(Written {
                    item,
                    replayed: false,
                })
            }
            Ok(None) => {
                return Ok(Written {
                    item: next,
                    replayed: false,
                })
            }
            Err(err) => match failed(&err) {
                Some((0, found)) if matches!(meanings.first(), Some(Meaning::Own)) => {
                    match (expected, found) {
                        (_, None) => {
                            return Err(ApiError::Missing {
                                field: lower(&e.name).into(),
                            })
                        }
                        (Some(v), Some(found))
                            if number(found.get(e.writes.version.as_deref().unwrap_or("")))
                                != v =>
                        {
                            return Err(version_mismatch(e, v, Some(found)))
                        }
                        (_, Some(found)) => current = found.clone(),
                    }
                }
                _ => return Err(explain(err, &meanings)),
            },
        }
    }
    Err(ApiError::Contention)
}

/// A change that needs nothing read: one UpdateItem conditioned on the item existing (and
/// on its version), its index keys rendered from the key and the change.
async fn update_in_place(
    rc: &RequestContext,
    chart: &Chart,
    e: &Entity,
    vars: &Vars,
    key: PrimaryKey,
    expected: Option<i64>,
    change: &[(String, Option<AttributeValue>)],
) -> Result<Written> {
    let mut known = Item::new();
    for (name, v) in vars {
        known.insert(
            name.clone(),
            match v {
                KeyValue::Text(t) => s(t),
                KeyValue::Int(i) => n(*i),
            },
        );
    }
    let mut u = UpdateExpr::default();
    for (f, v) in change {
        match v {
            Some(v) => {
                known.insert(f.clone(), v.clone());
                u = u.set(f.clone(), v.clone());
            }
            None => u = u.remove(f.clone()),
        }
    }
    let now = crate::model::now();
    for (name, a) in &e.attributes {
        if a.auto == Some(Auto::Updated) {
            u = u.set(name.clone(), s(&now));
        }
    }
    let known_vars = vars_of(e, &known);
    for (index, k) in &e.indexes {
        let touched =
            k.pk.vars()
                .chain(k.sk.vars())
                .any(|v| change.iter().any(|(f, _)| *f == v.name));
        if !touched {
            continue;
        }
        let i = &chart.indexes[index];
        match (
            k.pk.render(|n| known_vars.get(n).cloned()),
            k.sk.render(|n| known_vars.get(n).cloned()),
        ) {
            (Ok(pk), Ok(sk)) => {
                u = u
                    .set(i.partition_key.clone(), s(&pk))
                    .set(i.sort_key.clone(), s(&sk))
            }
            _ => u = u.remove(i.partition_key.clone()).remove(i.sort_key.clone()),
        }
    }
    let mut when = vec![Condition::exists(chart.table.partition_key.clone())];
    if let (Some(v), Some(attr)) = (expected, &e.writes.version) {
        when.push(Condition::eq(attr.clone(), n(v)));
        u = u.set(attr.clone(), n(v + 1));
    }
    let mut update = Update::new(key, u)
        .when(Condition::And(when))
        .returning(ReturnValues::AllNew);
    update.return_old_on_condition_failure = true;
    match rc.store.update_item(update).await {
        Ok(Some(item)) => Ok(Written {
            item,
            replayed: false,
        }),
        Ok(None) => Err(ApiError::Internal),
        Err(StoreError::ConditionFailed { item }) => match (expected, item) {
            (Some(v), Some(found)) => Err(version_mismatch(e, v, Some(&found))),
            _ => Err(ApiError::Missing {
                field: lower(&e.name).into(),
            }),
        },
        Err(err) => Err(err.into()),
    }
}

/// The actions of a change to `current`: the item's own update first (conditioned on
/// what was read), then its markers moved and its counts moved.
fn changed_item(
    chart: &Chart,
    e: &Entity,
    current: &Item,
    expected: Option<i64>,
    change: &[(String, Option<AttributeValue>)],
) -> Result<(Vec<TransactAction>, Vec<Meaning>, Item)> {
    let version = e.writes.version.as_deref();
    if let (Some(v), Some(attr)) = (expected, version) {
        if number(current.get(attr)) != v {
            return Err(version_mismatch(e, v, Some(current)));
        }
    }
    if let Some(l) = &e.writes.lifecycle {
        let from = match current.get(&l.attribute) {
            Some(AttributeValue::S(s)) => s.clone(),
            _ => String::new(),
        };
        if let Some((_, Some(AttributeValue::S(to)))) =
            change.iter().find(|(f, _)| *f == l.attribute)
        {
            let allowed = l.transitions.get(&from).is_some_and(|t| t.contains(to));
            if *to != from && !allowed {
                return Err(ApiError::InvalidTransition {
                    from,
                    to: to.clone(),
                });
            }
        }
    }
    let pk = chart.table.partition_key.clone();
    let mut next = current.clone();
    for (f, v) in change {
        match v {
            Some(v) => next.insert(f.clone(), v.clone()),
            None => next.remove(f),
        };
    }
    let now = crate::model::now();
    for (name, a) in &e.attributes {
        if a.auto == Some(Auto::Updated) {
            next.insert(name.clone(), s(&now));
        }
    }
    if let (Some(v), Some(attr)) = (expected, version) {
        next.insert(attr.to_owned(), n(v + 1));
    }
    let next = with_keys(chart, e, next)?;

    // The item's own write: what changed, index keys included, on the condition that
    // what the other actions were built from is still so.
    let mut u = UpdateExpr::default();
    let mut when = vec![Condition::exists(pk.clone())];
    for (name, v) in &next {
        if [&chart.table.partition_key, &chart.table.sort_key].contains(&name) {
            continue;
        }
        if current.get(name) != Some(v) {
            u = u.set(name.clone(), v.clone());
        }
    }
    for name in current.keys() {
        if !next.contains_key(name) {
            u = u.remove(name.clone());
        }
    }
    match (expected, version) {
        (Some(v), Some(attr)) => when.push(Condition::eq(attr.to_owned(), n(v))),
        _ => when.extend(as_read(e, current)),
    }
    let key = primary_key(chart, current).ok_or(ApiError::Internal)?;
    let mut own = Update::new(key, u).when(Condition::And(when));
    own.return_old_on_condition_failure = true;
    let mut actions = vec![TransactAction::Update(own)];
    let mut meanings = vec![Meaning::Own];

    for (attr, marker) in &e.writes.unique {
        if current.get(attr) == next.get(attr) {
            continue;
        }
        let marker = &chart.entities[marker];
        if current.contains_key(attr) {
            actions.push(drop_marker(chart, e, marker, current)?);
            meanings.push(Meaning::Corrupt("a unique marker names another item"));
        }
        if next.contains_key(attr) {
            actions.push(TransactAction::Put(
                Put::new(marker_item(chart, marker, &next, &[])?)
                    .when(Condition::not_exists(pk.clone())),
            ));
            meanings.push(Meaning::Taken(attr.clone()));
        }
    }
    let mut touches = Touches::default();
    for c in &e.writes.counts {
        let r = &e.references[&c.reference];
        let same = |f: &str| current.get(f) == next.get(f);
        if r.key.values().all(|f| same(f)) && c.by_attributes().all(same) {
            continue;
        }
        touches.count(chart, e, current, c, -1);
        touches.count(chart, e, &next, c, 1);
    }
    for r in unchecked(e) {
        let from = e.references[r].key.values();
        if from.clone().any(|f| current.get(f) != next.get(f)) {
            touches.check(chart, e, &next, r);
        }
    }
    touches.into_actions(&mut actions, &mut meanings);
    Ok((actions, meanings, next))
}

// --- delete ----------------------------------------------------------------------------

async fn delete(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let vars = named(chart, m, e, input)?;
    visible(rc, chart, e, &vars)?;
    let key = key_of(e, &vars)?;
    let expected = expected_version(input, false)?;
    let guarded = guards(chart, e);
    let pk = chart.table.partition_key.clone();
    let guard_conditions = |when: &mut Vec<Condition>| {
        for g in &guarded {
            when.push(Condition::Or(vec![
                Condition::not_exists(g.clone()),
                Condition::eq(g.clone(), n(0)),
            ]));
        }
    };
    let in_use = |item: &Item| {
        guarded
            .iter()
            .find(|g| number(item.get(g.as_str())) != 0)
            .map(|g| ApiError::Conflict {
                message: format!("cannot delete: still referenced by {g}"),
                field: g.clone().into(),
            })
    };
    let check = |item: &Item| -> Result<()> {
        if let (Some(v), Some(attr)) = (expected, &e.writes.version) {
            if number(item.get(attr)) != v {
                return Err(version_mismatch(e, v, Some(item)));
            }
        }
        match in_use(item) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    };
    let version_condition = |when: &mut Vec<Condition>| {
        if let (Some(v), Some(attr)) = (expected, &e.writes.version) {
            when.push(Condition::eq(attr.clone(), n(v)));
        }
    };
    if e.writes.unique.is_empty() && e.writes.counts.is_empty() {
        let mut when = vec![Condition::exists(pk.clone())];
        version_condition(&mut when);
        guard_conditions(&mut when);
        let mut d = Delete::new(key).when(Condition::And(when));
        d.returns = ReturnValues::AllOld;
        d.return_old_on_condition_failure = true;
        return match rc.store.delete_item(d).await {
            Ok(Some(item)) => Ok(Written {
                item,
                replayed: false,
            }),
            Ok(None) => Err(ApiError::Missing {
                field: lower(&e.name).into(),
            }),
            Err(StoreError::ConditionFailed { item: Some(found) }) => {
                check(&found)?;
                Err(ApiError::Contention)
            }
            Err(StoreError::ConditionFailed { item: None }) => Err(ApiError::Missing {
                field: lower(&e.name).into(),
            }),
            Err(err) => Err(err.into()),
        };
    }
    let mut current = read(rc, e, &key).await?;
    if !visible_item(rc, chart, e, &current) {
        return Err(ApiError::Missing {
            field: lower(&e.name).into(),
        });
    }
    for _ in 0..ATTEMPTS {
        check(&current)?;
        let mut when = vec![Condition::exists(pk.clone())];
        version_condition(&mut when);
        guard_conditions(&mut when);
        when.extend(as_read(e, &current));
        let mut own = Delete::new(key.clone()).when(Condition::And(when));
        own.return_old_on_condition_failure = true;
        let mut actions = vec![TransactAction::Delete(own)];
        let mut meanings = vec![Meaning::Own];
        for (attr, marker) in &e.writes.unique {
            if !current.contains_key(attr) {
                continue;
            }
            actions.push(drop_marker(chart, e, &chart.entities[marker], &current)?);
            meanings.push(Meaning::Corrupt("a unique marker names another item"));
        }
        let mut touches = Touches::default();
        for c in &e.writes.counts {
            touches.count(chart, e, &current, c, -1);
        }
        touches.into_actions(&mut actions, &mut meanings);
        match send(rc, actions).await {
            Ok(_) => {
                return Ok(Written {
                    item: current,
                    replayed: false,
                })
            }
            Err(err) => match failed(&err) {
                Some((0, None)) => {
                    return Err(ApiError::Missing {
                        field: lower(&e.name).into(),
                    })
                }
                Some((0, Some(found))) => current = found.clone(),
                _ => return Err(explain(err, &meanings)),
            },
        }
    }
    Err(ApiError::Contention)
}

/// Whether the caller may see the item read (its tenant theirs).
fn visible_item(rc: &RequestContext, chart: &Chart, e: &Entity, item: &Item) -> bool {
    visible(rc, chart, e, &vars_of(e, item)).is_ok()
}
