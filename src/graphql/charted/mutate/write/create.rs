//! A create: the item, its markers, its counts, its counter shards, in one write; a used
//! client token replays the item it made.

use super::*;

pub(super) async fn create(
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
        } else if let Some(constant) = &a.on_create {
            Some(constant.clone())
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
    let vars = vars_of(e, &item);
    own_tenant(rc, chart, e, &vars)?;
    visible(rc, chart, e, &vars)?;
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
        touches.count(chart, e, &item, c, 1).await;
    }
    for r in unchecked(e) {
        touches.check(chart, e, &item, r);
    }
    let sharded = touches.into_actions(&mut actions, &mut meanings);
    for shard in new_shards(chart, e, &item)? {
        actions.push(TransactAction::Put(
            Put::new(shard).when(Condition::not_exists(pk.clone())),
        ));
        meanings.push(Meaning::Corrupt("a counter shard of a new item exists"));
    }
    match send(rc, actions, sharded).await {
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

/// A tenant is created only by a caller that sees every tenant or by the one its token
/// names (`FORBIDDEN`: which tenant a token names is its issuer's to say).
fn own_tenant(rc: &RequestContext, chart: &Chart, e: &Entity, vars: &Vars) -> Result<()> {
    if chart.tenant.as_ref().is_some_and(|t| t.entity == e.name)
        && visible(rc, chart, e, vars).is_err()
    {
        return Err(ApiError::Forbidden(format!(
            "a token may create only its own {} (its `org` claim)",
            crate::chart::words(&e.name)
        )));
    }
    Ok(())
}

/// The field a taken key is named by: the last variable of the sort key (`number`,
/// `username`), or the entity.
pub(super) fn key_field(e: &Entity) -> String {
    e.key
        .sk
        .vars()
        .last()
        .or_else(|| e.key.pk.vars().last())
        .map_or_else(|| lower(&e.name), |v| v.name.clone())
}

/// The item a used client token placed, read back: nothing new was written.
pub(super) async fn replay(rc: &RequestContext, e: &Entity, found: &Item) -> Result<Written> {
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
