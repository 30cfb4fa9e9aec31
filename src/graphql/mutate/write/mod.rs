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

use super::super::record::{id_vars, key_value, render, Vars};
use super::input::stored;
use crate::auth::{Access, Role};
use crate::chart::kinds::{Id, Tenant};
use crate::chart::plan::MutationPlan;
use crate::chart::template::Value as KeyValue;
use crate::chart::types::Type;
use crate::chart::{Action, Auto, Chart, Computed, Count, Entity, Mutation};
use crate::graphql::context::RequestContext;
use crate::graphql::errors::ApiError;
use crate::store::failed_condition as failed;
use crate::store::shards::ShardLease;
use crate::store::{
    AttributeValue, CancelReason, CmpOp, Condition, ConditionCheck, Delete, GetItem, Item,
    PrimaryKey, Put, ReturnValues, StoreError, TableAction, TransactAction, Update, UpdateExpr,
};

mod bulk;
mod conditions;
mod create;
mod delete;
mod entry;
mod touches;
mod update;

pub use bulk::Deleted;
use conditions::{of_step, Values};
use create::create;
pub(in crate::graphql) use create::inherited;
use delete::delete;
use touches::*;
use update::update;

/// How many times a write built from a read is built again when the item changed between.
const ATTEMPTS: usize = 3;

/// What a mutation wrote: the item as stored (as deleted, for a delete).
pub struct Written {
    pub item: Item,
    /// The children written with it (read back with it, for a replay), by list.
    pub lists: Vec<(String, Vec<Item>)>,
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
    /// A child written with a new item, named by its input field (`lines[1].lineNo`): a
    /// child already there is what no writer made.
    Child(String),
}

impl Meaning {
    /// The input field an action is written for, as a refusal names it; `None`: the item
    /// itself or what the writes keep.
    fn field(&self) -> Option<&str> {
        match self {
            Meaning::Taken(f) | Meaning::Missing(f) | Meaning::Child(f) => Some(f),
            Meaning::Own | Meaning::Corrupt(_) => None,
        }
    }
}

/// DynamoDB's own limits on one TransactWriteItems, checked before it is sent: at most
/// 100 actions, no two on one item, at most 4 MB of items. Each refusal is
/// `BAD_USER_INPUT` naming the input field of the action that broke it (`lines[1].lineNo`
/// for a child whose key another child has, `manager` for a counted reference that names
/// the item itself), since what the caller gave made it: nothing is sent.
fn within_transaction_limits(
    chart: &Chart,
    e: &Entity,
    actions: &[TransactAction],
    meanings: &[Meaning],
) -> Result<()> {
    if actions.len() < 2 {
        return Ok(());
    }
    let own = lower(&e.name);
    let field = |i: usize| {
        meanings
            .get(i)
            .and_then(Meaning::field)
            .map_or_else(|| own.clone(), str::to_owned)
    };
    let max = crate::store::validate::MAX_TRANSACT_ACTIONS;
    if actions.len() > max {
        return Err(ApiError::bad_input(
            &field(max),
            format!(
                "this write would be a transaction of {} actions; DynamoDB takes at most {max}",
                actions.len()
            ),
        ));
    }
    let key = |a: &TransactAction| match a {
        TransactAction::Put(p) => chart.key_of(&p.item),
        TransactAction::Update(u) => Some(u.key.clone()),
        TransactAction::Delete(d) => Some(d.key.clone()),
        TransactAction::ConditionCheck(c) => Some(c.key.clone()),
    };
    let mut seen: Vec<(PrimaryKey, usize)> = Vec::with_capacity(actions.len());
    let mut bytes = 0;
    for (i, a) in actions.iter().enumerate() {
        if let Some(k) = key(a) {
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == k) {
                let (first, this) = (field(*first), field(i));
                let message = if first == this {
                    format!("{this} names the item this write writes already: one transaction writes an item once")
                } else {
                    format!("{this} names the same item as {first}: one transaction writes an item once")
                };
                return Err(ApiError::bad_input(&this, message));
            }
            seen.push((k, i));
        }
        if let TransactAction::Put(p) = a {
            bytes += crate::store::value::item_size(&p.item);
            if bytes > crate::store::validate::MAX_TRANSACT_BYTES {
                return Err(ApiError::bad_input(
                    &field(i),
                    "this write's items would total more than the 4 MB DynamoDB takes in one transaction",
                ));
            }
        }
    }
    Ok(())
}

type Result<T, E = ApiError> = std::result::Result<T, E>;

pub async fn run(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    if let Some(role) = &m.role {
        allowed(chart, &rc.access, role, &m.may)?;
    }
    let e = &chart.entities[&m.entity];
    match m.action {
        Action::Create => create(rc, chart, m, e, input).await,
        Action::Update if m.entry.is_some() => entry::write(rc, chart, m, e, input).await,
        Action::Update => update(rc, chart, m, e, input).await,
        Action::Delete => delete(rc, chart, m, e, input).await,
    }
}

/// A bulk delete ([`crate::chart::Every`]): what it deleted.
pub async fn run_every(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    input: &IndexMap<Name, Value>,
) -> Result<Deleted> {
    if let Some(role) = &m.role {
        allowed(chart, &rc.access, role, &m.may)?;
    }
    let e = &chart.entities[&m.entity];
    let every = m.every.as_ref().ok_or(ApiError::Internal)?;
    bulk::delete_every(rc, chart, m, e, every, input).await
}

/// `u` with what every write of `e` built without a read keeps: the version bumped, the
/// `updated` times set.
fn kept(e: &Entity, mut u: UpdateExpr) -> UpdateExpr {
    if let Some(v) = &e.writes.version {
        u = u.add(v.clone(), 1);
    }
    let now = crate::clock::now();
    for (name, a) in &e.attributes {
        if a.auto == Some(Auto::Updated) {
            u = u.set(name.clone(), a.time(&now));
        }
    }
    u
}

fn allowed(chart: &Chart, access: &Access, role: &str, may: &str) -> Result<()> {
    match access {
        Access::Unrestricted => Ok(()),
        Access::Tenant {
            role: Role::Admin, ..
        } => Ok(()),
        Access::Tenant {
            role: Role::Member, ..
        } if role == "MEMBER" => Ok(()),
        Access::Tenant { .. } => Err(ApiError::Forbidden(format!(
            "only an admin of the {} may {may}",
            chart
                .tenant
                .as_ref()
                .map_or_else(|| "tenant".to_owned(), |t| crate::chart::words(&t.entity))
        ))),
    }
}

/// The field a missing entity is named by (`Store` → `store`).
fn lower(name: &str) -> String {
    super::super::lower_first(name)
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
fn with_keys(chart: &Chart, e: &Entity, item: Item) -> Result<Item> {
    let vars = vars_of(e, &item);
    with_keys_of(chart, e, item, &vars)
}

/// [`with_keys`], with the item's key values `vars` already read.
fn with_keys_of(chart: &Chart, e: &Entity, mut item: Item, vars: &Vars) -> Result<Item> {
    crate::chart::samples::set_keys(chart.table_of(e), &chart.indexes, e, &mut item, vars)
        .map_err(|why| {
            tracing::error!(entity = %e.name, %why, "a written item's keys could not be rendered");
            ApiError::Internal
        })?;
    Ok(item)
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
        Some(KeyValue::Text(t)) => Tenant::parse(t).is_ok_and(|s| rc.sees(&s)),
        Some(KeyValue::Int(_)) => matches!(rc.access, Access::Unrestricted),
        // The key names no tenant: the write's read or condition holds the item to the
        // caller's.
        None => true,
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

/// Runs the actions: one conditional write alone, else one TransactWriteItems. Each goes
/// to the table of the item it writes ([`MutationPlan::tables_of`]): actions all on one
/// table to that table's store, actions on several to one TransactWriteItems across them.
async fn send_once(
    rc: &RequestContext,
    chart: &Chart,
    plan: &MutationPlan,
    actions: Vec<TransactAction>,
) -> std::result::Result<Option<Item>, StoreError> {
    let tables = plan.tables_of(chart, &actions);
    let first = tables.first().copied().unwrap_or(0);
    if tables.iter().any(|t| *t != first) {
        let named = tables
            .into_iter()
            .zip(actions)
            .map(|(t, action)| TableAction {
                table: chart.table_name_on(rc.store.as_ref(), t),
                action,
            })
            .collect();
        return rc.store.transact_write_tables(named).await.map(|()| None);
    }
    let store = chart.store_of(&rc.store, first)?;
    if actions.len() > 1 {
        return store.transact_write(actions).await.map(|()| None);
    }
    match actions.into_iter().next() {
        Some(TransactAction::Put(p)) => store.put_item(p).await.map(|_| None),
        Some(TransactAction::Update(mut u)) => {
            u.returns = ReturnValues::AllNew;
            store.update_item(u).await
        }
        Some(TransactAction::Delete(mut d)) => {
            d.returns = ReturnValues::AllOld;
            store.delete_item(d).await
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
        Meaning::Child(_) => {
            tracing::error!("a write's condition found a child of a new item there already");
            ApiError::Internal
        }
        Meaning::Corrupt(what) => {
            tracing::error!(what, "a write's condition found the table inconsistent");
            ApiError::Internal
        }
    }
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

/// The key values of the item an update or a delete names: its global `id`, or its key
/// attributes.
fn named(chart: &Chart, m: &Mutation, e: &Entity, input: &IndexMap<Name, Value>) -> Result<Vars> {
    if m.by_id {
        let field = super::id_field(e);
        let id = match input.get(field) {
            Some(Value::String(id)) => id.as_str(),
            _ => return Err(ApiError::bad_input(field, format!("{field} is required"))),
        };
        return id_vars(chart, e, field, id)?.ok_or_else(|| {
            ApiError::bad_input(
                field,
                format!("not the id of {}", crate::chart::one(&e.name)),
            )
        });
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

/// Where the item an update or a delete names is found.
enum Place {
    /// At its primary key.
    Key(PrimaryKey),
    /// Only through an index whose keys the values given render (an order by its plain id,
    /// where its key names its organization too): a Query of that index, eventually
    /// consistent, for the item whose index keys these are.
    Index {
        index: String,
        partition: String,
        sort: String,
        /// Whether the item was made so recently (its plain ULID under
        /// [`INDEX_CATCH_UP`] old) that the index may not hold it yet.
        young: bool,
    },
}

/// How long after its id was made an item may still be missing from an index: DynamoDB
/// propagates a write to its indexes typically within a second, sometimes later.
const INDEX_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// How many times an item is looked for on an index that may not hold it yet (a young one
/// by plain id, a replay's read with its children): on [`crate::store::retry_schedule`],
/// about 4 s in all.
const INDEX_READ_ATTEMPTS: u32 = 9;

/// The item an update or a delete names: its key values and where it is, once the caller
/// may see its tenant (when its key does not name the tenant, the write's read or
/// condition holds it to the caller's: the plan's [`crate::chart::plan::TenantIs::Caller`]). A key part the values given
/// do not hold is the caller's tenant, when the caller has one; else the item is found
/// through an index they render.
fn target(
    rc: &RequestContext,
    chart: &Chart,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<(Vars, Place)> {
    let mut vars = named(chart, m, e, input)?;
    // Another tenant's item is as missing as one that does not exist.
    if visible(rc, chart, e, &vars).is_err() {
        return Err(ApiError::Missing {
            field: lower(&e.name).into(),
        });
    }
    if let Ok(key) = key_of(e, &vars) {
        return Ok((vars, Place::Key(key)));
    }
    if let (Some(attr), Some(own)) = (chart.tenant_attribute(e), rc.access.org()) {
        vars.entry(attr)
            .or_insert_with(|| KeyValue::Text(own.as_str().to_owned()));
        if let Ok(key) = key_of(e, &vars) {
            return Ok((vars, Place::Key(key)));
        }
    }
    let young = e.plain_id.as_ref().and_then(|p| match vars.get(p) {
        Some(KeyValue::Text(t)) => Id::parse(t).ok(),
        _ => None,
    });
    let young = young.is_some_and(|id| {
        // Not from the future either: an invented id would otherwise cost the backoff.
        let now = crate::clock::now_ms();
        id.timestamp_ms() <= now && now - id.timestamp_ms() < INDEX_CATCH_UP.as_millis() as u64
    });
    for (index, k) in &e.indexes {
        if let (Ok(partition), Ok(sort)) = (render(&k.pk, &vars), render(&k.sk, &vars)) {
            let place = Place::Index {
                index: index.clone(),
                partition,
                sort,
                young,
            };
            return Ok((vars, place));
        }
    }
    tracing::error!(entity = %e.name, "a mutation names an item that neither its key nor an index finds");
    Err(ApiError::Internal)
}

/// The item as stored now, for a write: a strongly consistent GetItem at its key, or, for
/// an item found through an index, one Query of that index (read again with backoff while
/// a young item is not there yet), and a strongly consistent GetItem after it when the
/// index shows an older version than `expected`. `NOT_FOUND` when it is not there.
async fn locate(
    rc: &RequestContext,
    chart: &Chart,
    e: &Entity,
    place: &Place,
    expected: Option<i64>,
) -> Result<Item> {
    use backon::Retryable;
    let (index, partition, sort, young) = match place {
        Place::Key(key) => return read(rc, chart, e, key).await,
        Place::Index {
            index,
            partition,
            sort,
            young,
        } => (index, partition, sort, *young),
    };
    let missing = || ApiError::Missing {
        field: lower(&e.name).into(),
    };
    let on_index = || async {
        let out = rc
            .store_of(chart, e)?
            .query(crate::store::Query {
                index: Some(index.clone()),
                partition: partition.clone(),
                sort: Some(crate::store::SortCondition::Eq(sort.clone())),
                partition_more: Vec::new(),
                sort_prefix: Vec::new(),
                forward: true,
                limit: Some(1),
                start: None,
                consistent_read: false,
            })
            .await?;
        out.items.into_iter().next().ok_or_else(missing)
    };
    let indexed = on_index
        .retry(crate::store::retry_schedule(INDEX_READ_ATTEMPTS - 1))
        .when(|e| young && matches!(e, ApiError::Missing { .. }))
        .await?;
    // An index that does not project every attribute found the item's key: it is read
    // whole at that key.
    let partial = chart
        .indexes
        .get(index)
        .is_some_and(|i| i.projection != crate::chart::Projection::All);
    // Found by what the caller gave, not by a key holding their tenant: another
    // tenant's item is as missing as one that is not there (checked on the whole item
    // when the index holds less of it).
    if !partial && !visible_item(rc, chart, e, &indexed) {
        return Err(missing());
    }
    // What the index holds is read again at its key when it is less than the item, or
    // older than the version the caller expects.
    let stale = partial
        || matches!((expected, e.writes.version.as_deref()),
            (Some(v), Some(attr)) if number(indexed.get(attr)) < v);
    let current = if stale {
        let key = chart.key_of(&indexed).ok_or(ApiError::Internal)?;
        read(rc, chart, e, &key).await?
    } else {
        indexed
    };
    if visible_item(rc, chart, e, &current) {
        Ok(current)
    } else {
        Err(missing())
    }
}

fn key_of(e: &Entity, vars: &Vars) -> Result<PrimaryKey> {
    Ok(PrimaryKey::new(
        render(&e.key.pk, vars)?,
        render(&e.key.sk, vars)?,
    ))
}

/// A strongly consistent read of the item a write changes; `NOT_FOUND` when it is not
/// there.
async fn read(rc: &RequestContext, chart: &Chart, e: &Entity, key: &PrimaryKey) -> Result<Item> {
    rc.store_of(chart, e)?
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
        // GraphQL's Int is 32 bits; inside an input object a value past them passes
        // validation and is refused here.
        Some(Value::Number(v)) => match v.as_i64() {
            Some(v) if v > i64::from(i32::MAX) || v < i64::from(i32::MIN) => Err(
                ApiError::bad_input("expectedVersion", "expectedVersion is not a 32-bit Int"),
            ),
            Some(v) if v >= 1 => Ok(Some(v)),
            _ => Err(ApiError::bad_input(
                "expectedVersion",
                "expectedVersion must be 1 or more",
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

/// The counter shards a new item of `e` is created with (none where `e` has none).
pub(super) fn shard_items(chart: &Chart, e: &Entity, item: &Item) -> Option<Vec<Item>> {
    touches::new_shards(chart, e, item).ok()
}

/// Whether the caller may see the item read: its tenant theirs (an item whose tenant
/// attribute is missing is no tenant's, seen only by a caller who sees every one), and
/// not expired.
fn visible_item(rc: &RequestContext, chart: &Chart, e: &Entity, item: &Item) -> bool {
    let theirs = match (&e.binding, &rc.access) {
        (_, Access::Unrestricted) => true,
        (crate::chart::Binding::Key(a) | crate::chart::Binding::Condition(a), _) => {
            match item.get(a) {
                Some(AttributeValue::S(t)) => rc.sees(t.as_str()),
                _ => false,
            }
        }
        _ => visible(rc, chart, e, &vars_of(e, item)).is_ok(),
    };
    theirs && !e.expired(chart.table_of(e), item, crate::chart::epoch_now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(key: &str) -> TransactAction {
        TransactAction::ConditionCheck(ConditionCheck {
            key: PrimaryKey::new(key.to_owned(), key.to_owned()),
            condition: Condition::exists("PK"),
            return_old_on_condition_failure: false,
        })
    }

    fn refusal(r: Result<()>) -> (String, String) {
        match r {
            Err(ApiError::BadUserInput {
                message,
                field: Some(field),
            }) => (field.to_string(), message),
            other => panic!("not refused naming a field: {other:?}"),
        }
    }

    #[test]
    fn a_transaction_past_dynamodbs_limits_is_refused_naming_the_field_that_passed_them() {
        let chart = crate::chart::builtin();
        let e = &chart.entities["Order"];
        // 101 actions: the 101st is a child's.
        let actions: Vec<TransactAction> = (0..101).map(|i| check(&format!("K#{i}"))).collect();
        let mut meanings = vec![Meaning::Own];
        meanings.extend((0..100).map(|i| Meaning::Child(format!("lines[{i}].lineNo"))));
        let (field, message) = refusal(within_transaction_limits(&chart, e, &actions, &meanings));
        assert_eq!(field, "lines[99].lineNo");
        assert!(message.contains("101 actions"), "{message}");
        assert!(within_transaction_limits(&chart, e, &actions[..100], &meanings[..100]).is_ok());
        // Items past 4 MB in all: the put that passes it.
        let big = |k: &str| {
            let mut item = Item::new();
            item.insert("PK".into(), s(k));
            item.insert("SK".into(), s(k));
            item.insert("body".into(), s(&"x".repeat(390 * 1024)));
            TransactAction::Put(Put::new(item))
        };
        let actions: Vec<TransactAction> = (0..11).map(|i| big(&format!("B#{i}"))).collect();
        let meanings: Vec<Meaning> = (0..11)
            .map(|i| Meaning::Child(format!("lines[{i}].lineNo")))
            .collect();
        let (field, message) = refusal(within_transaction_limits(&chart, e, &actions, &meanings));
        assert_eq!(field, "lines[10].lineNo");
        assert!(message.contains("4 MB"), "{message}");
        // One action is no transaction: nothing to check.
        assert!(within_transaction_limits(&chart, e, &[check("K")], &[Meaning::Own]).is_ok());
    }
}
