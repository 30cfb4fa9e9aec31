//! A bulk delete (`every`): the children a Query pattern finds, at most the mutation's
//! `max`, deleted by key in BatchWriteItems of 25 (what one leaves unprocessed sent again),
//! or in one TransactWriteItems when it is `atomic`. Its requests: the Queries that find
//! up to `max + 1` children (one, for a `max` of up to 100 small items), then
//! ⌈found / 25⌉ BatchWriteItems, or one TransactWriteItems.

use super::*;
use crate::chart::plan::Verb;
use crate::chart::{Every, MAX_PAGE_SIZE};
use crate::graphql::connection::Resolved;
use crate::graphql::read;
use crate::store::validate::{MAX_BATCH_WRITE_REQUESTS, MAX_TRANSACT_ACTIONS};
use crate::store::{BatchWrite, BatchWriteRequest};

/// What a bulk mutation did.
pub struct Deleted {
    /// Items deleted (or updated).
    pub count: usize,
    /// Whether the Query found more than `max`: left for the next call.
    pub more: bool,
}

pub(super) async fn delete_every(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    every: &Every,
    input: &IndexMap<Name, Value>,
) -> Result<Deleted> {
    let vars = values(every, input)?;
    if let Some(t) = &every.tenant_input {
        let sees = match vars.get(t) {
            Some(KeyValue::Text(v)) => Tenant::parse(v).is_ok_and(|s| rc.sees(&s)),
            _ => matches!(rc.access, Access::Unrestricted),
        };
        if !sees {
            // Another tenant's items are as missing as items that do not exist.
            let named = chart
                .tenant
                .as_ref()
                .map_or("tenant", |t| t.entity.as_str());
            return Err(ApiError::Missing {
                field: lower(named).into(),
            });
        }
    }
    let plan = &chart.plans[&m.name];
    let step = plan.steps.first().ok_or(ApiError::Internal)?;
    if m.action == Action::Update {
        let expr = change(chart, m, e, input)?;
        let (keys, more) = find(rc, chart, e, every, &vars).await?;
        let values = Values::of_caller(rc);
        let mut count = 0;
        for chunk in keys.chunks(MAX_TRANSACT_ACTIONS) {
            let mut pending = chunk.to_vec();
            for _ in 0..ATTEMPTS {
                if pending.is_empty() {
                    break;
                }
                let actions = pending
                    .iter()
                    .map(|key| {
                        let mut u = Update::new(key.clone(), expr.clone());
                        u.condition = of_step(step, Verb::Update, &values)?;
                        Ok(TransactAction::Update(u))
                    })
                    .collect::<Result<Vec<_>>>()?;
                match rc.store_of(chart, e)?.transact_write(actions).await {
                    Ok(()) => {
                        count += pending.len();
                        pending.clear();
                    }
                    // Some were deleted (or expired) since the Query found them: the rest
                    // are sent again without them.
                    Err(StoreError::TransactionCanceled { reasons })
                        if reasons
                            .iter()
                            .any(|r| matches!(r, CancelReason::ConditionalCheckFailed { .. })) =>
                    {
                        pending = pending
                            .into_iter()
                            .zip(reasons)
                            .filter(|(_, r)| {
                                !matches!(r, CancelReason::ConditionalCheckFailed { .. })
                            })
                            .map(|(k, _)| k)
                            .collect();
                    }
                    Err(err) => return Err(err.into()),
                }
            }
            if !pending.is_empty() {
                return Err(ApiError::Contention);
            }
        }
        return Ok(Deleted { count, more });
    }
    for _ in 0..ATTEMPTS {
        let (keys, more) = find(rc, chart, e, every, &vars).await?;
        if keys.is_empty() {
            return Ok(Deleted { count: 0, more });
        }
        let count = keys.len();
        if !every.atomic {
            for chunk in keys.chunks(MAX_BATCH_WRITE_REQUESTS) {
                let requests = chunk
                    .iter()
                    .cloned()
                    .map(BatchWriteRequest::Delete)
                    .collect();
                rc.store_of(chart, e)?
                    .batch_write(BatchWrite { requests })
                    .await?;
            }
            return Ok(Deleted { count, more });
        }
        let values = Values::of_caller(rc);
        let actions = keys
            .into_iter()
            .map(|key| {
                let mut d = Delete::new(key);
                d.condition = of_step(step, Verb::Delete, &values)?;
                Ok(TransactAction::Delete(d))
            })
            .collect::<Result<Vec<_>>>()?;
        match rc.store_of(chart, e)?.transact_write(actions).await {
            Ok(()) => return Ok(Deleted { count, more }),
            // One was deleted (or expired) since the Query found it: find them again.
            Err(err) if failed(&err).is_some() => continue,
            Err(err) => return Err(err.into()),
        }
    }
    Err(ApiError::Contention)
}

/// What a bulk update sets on each item: the fields given (an optional one given as null
/// removed), the version bumped, the `updated` times set.
fn change(
    chart: &Chart,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<UpdateExpr> {
    let mut u = UpdateExpr::default();
    let mut given = false;
    for f in &m.fields {
        let a = &e.attributes[f];
        match input.get(f.as_str()) {
            None => continue,
            Some(Value::Null) if a.optional => u = u.remove(f.clone()),
            Some(Value::Null) => return Err(ApiError::bad_input(f, format!("{f} cannot be null"))),
            Some(v) => u = u.set(f.clone(), stored(chart, f, &a.ty, v)?),
        }
        given = true;
    }
    if !given {
        return Err(ApiError::BadUserInput {
            message: format!("nothing to change: give {}", m.fields.join(" or ")),
            field: None,
        });
    }
    Ok(kept(e, u))
}

/// The pattern's key values from the input: each required one given, each checked as a
/// key value of its type is.
fn values(every: &Every, input: &IndexMap<Name, Value>) -> Result<Vars> {
    let mut vars = Vars::new();
    for (name, ty, optional) in &every.inputs {
        let given = match input.get(name.as_str()) {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Number(x)) => x.to_string(),
            Some(Value::Enum(x)) => x.to_string(),
            None | Some(Value::Null) if *optional => continue,
            _ => return Err(ApiError::bad_input(name, format!("{name} is required"))),
        };
        let value = key_value(ty, name, &given).map_err(|msg| ApiError::bad_input(name, msg))?;
        vars.insert(name.clone(), value);
    }
    Ok(vars)
}

/// The keys of the first `max` children the pattern finds, in its order, and whether it
/// found more. Through an index that holds only their keys every item found is a child
/// (rule `one-request`); otherwise the items found are the children of the entity's
/// type, not expired, and the caller's.
async fn find(
    rc: &RequestContext,
    chart: &Chart,
    e: &Entity,
    every: &Every,
    vars: &Vars,
) -> Result<(Vec<PrimaryKey>, bool)> {
    let pattern = chart
        .patterns
        .get(&every.pattern)
        .ok_or(ApiError::Internal)?;
    let page_plan = chart.pages.get(&every.pattern).ok_or(ApiError::Internal)?;
    let max = every.max as usize;
    let mut keys: Vec<PrimaryKey> = Vec::new();
    let mut start = None;
    loop {
        let page = Resolved {
            size: MAX_PAGE_SIZE.min(every.max),
            start: start.take(),
            forward: true,
        };
        let (query, _) = read::query(chart, pattern, vars, &page)?;
        let out = rc.store_in(chart, pattern.table)?.query(query).await?;
        for item in &out.items {
            let child = page_plan.then_get
                || (matches!(item.get(&chart.table.type_attribute), Some(AttributeValue::S(t)) if *t == e.name)
                    && visible_item(rc, chart, e, item));
            if !child {
                continue;
            }
            if keys.len() == max {
                return Ok((keys, true));
            }
            keys.push(chart.key_of(item).ok_or(ApiError::Internal)?);
        }
        match out.last_evaluated_key {
            Some(k) => start = Some(k),
            None => return Ok((keys, false)),
        }
    }
}
