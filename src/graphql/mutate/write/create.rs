//! A create: the item, its markers, its counts, its counter shards, in one write; a used
//! client token replays the item it made.

use super::*;
use crate::chart::plan::{Role, Verb};

pub(super) async fn create(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let now = crate::clock::now();
    let given = |name: &str| input.get(name).filter(|v| !matches!(v, Value::Null));
    let mut item = Item::new();
    for (name, a) in &e.attributes {
        if let Some(v) = initial(chart, e, name, a, given(name), &|| name.clone(), &now, 1)? {
            item.insert(name.clone(), v);
        }
    }
    // The children written with it, then what the item computes from them.
    let mut lists: Vec<(String, Vec<Item>)> = Vec::new();
    for list in m.with.keys() {
        let items = children(chart, e, list, given(list), &item, &now)?;
        lists.push((list.clone(), items));
    }
    for (name, a) in &e.attributes {
        if let Some(c) = &a.computed {
            item.insert(name.clone(), computed(e, c, &item, &lists, name)?);
        }
    }
    let vars = vars_of(e, &item);
    own_tenant(rc, chart, e, &vars)?;
    visible(rc, chart, e, &vars)?;
    let item = with_keys_of(chart, e, item, &vars)?;
    crate::store::validate::item_within_size(&item).map_err(|_| {
        ApiError::bad_input(&m.name, "the item would be larger than DynamoDB's 400 KB")
    })?;

    let mut actions = Vec::new();
    let mut meanings = Vec::new();
    let mut token = None;
    // The counts and checks on what the item's references name, merged by item: sent
    // where the plan puts them, once its steps of them are done.
    let mut touches = Touches::default();
    let mut touched = false;
    let mut sharded = Sharded::default();
    // The mutation's resolved plan, step by step: each fills its actions from the item
    // and the input, in the plan's order.
    for step in &chart.plans[&m.name].steps {
        let of = step.of.as_deref().unwrap_or_default();
        if touched && !matches!(step.role, Role::Counter | Role::Check) {
            sharded = std::mem::take(&mut touches).into_actions(&mut actions, &mut meanings);
            touched = false;
        }
        // A new item's actions are conditioned on no values of a read.
        let put = |item: Item| -> Result<TransactAction> {
            let mut p = Put::new(item);
            p.condition = of_step(step, Verb::Put, &Values::default())?;
            Ok(TransactAction::Put(p))
        };
        match step.role {
            Role::Token => {
                token = client_token(chart, step, &item, input, &mut actions)?;
                if token.is_some() {
                    meanings.push(Meaning::Taken("clientToken".into()));
                }
            }
            Role::Item => {
                actions.push(put(item.clone())?);
                meanings.push(Meaning::Taken(key_field(e)));
            }
            Role::Children => {
                let child = crate::chart::list_child(&chart.entities, &chart.patterns, e, of)
                    .ok_or(ApiError::Internal)?;
                let named_by = key_field(child);
                let (_, items) = lists
                    .iter()
                    .find(|(list, _)| list == of)
                    .ok_or(ApiError::Internal)?;
                for (i, item) in items.iter().enumerate() {
                    actions.push(put(item.clone())?);
                    meanings.push(Meaning::Child(format!("{of}[{i}].{named_by}")));
                }
            }
            Role::Marker => {
                if !item.contains_key(of) {
                    continue;
                }
                let marker = &chart.entities[&step.entity];
                actions.push(put(marker_item(chart, marker, &item, &[])?)?);
                meanings.push(Meaning::Taken(of.to_owned()));
            }
            Role::Counter => {
                let c = count_of(e, of)?;
                touches.count(chart, e, &item, c, 1, step).await?;
                touched = true;
            }
            Role::Check => {
                touches.check(chart, e, &item, of, step)?;
                touched = true;
            }
            Role::Shards => {
                for shard in new_shards(chart, e, &item)? {
                    actions.push(put(shard)?);
                    meanings.push(Meaning::Corrupt("a counter shard of a new item exists"));
                }
            }
        }
    }
    if touched {
        sharded = touches.into_actions(&mut actions, &mut meanings);
    }
    within_transaction_limits(chart, e, &actions, &meanings)?;
    match send(rc, chart, &chart.plans[&m.name], actions, sharded).await {
        Ok(_) => Ok(Written {
            item,
            lists,
            replayed: false,
        }),
        Err(err) => {
            if let (Some(_), StoreError::TransactionCanceled { reasons }) = (token, &err) {
                if let Some(CancelReason::ConditionalCheckFailed { item: Some(found) }) =
                    reasons.first()
                {
                    return replay(rc, chart, m, e, found).await;
                }
            }
            Err(explain(err, &meanings))
        }
    }
}

/// A client token's marker put first, when the input gives one: conditioned on the token
/// being free, returning what holds it when it is not (the replay reads the item it
/// names). The marker entity, or none when no token is given.
fn client_token<'c>(
    chart: &'c Chart,
    step: &crate::chart::plan::Step,
    item: &Item,
    input: &IndexMap<Name, Value>,
    actions: &mut Vec<TransactAction>,
) -> Result<Option<&'c Entity>> {
    let Some(Value::String(t)) = input.get("clientToken") else {
        return Ok(None);
    };
    let marker = &chart.entities[&step.entity];
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
        item,
        &[(token_attr.as_str(), t)],
    )?);
    put.condition = of_step(step, Verb::Put, &Values::default())?;
    put.return_old_on_condition_failure = true;
    actions.push(TransactAction::Put(put));
    Ok(Some(marker))
}

/// The value a create writes for attribute `name` (`None`: none, an optional attribute
/// not given), named `field()` in a refusal (made only for a value given or missing);
/// `position`: its place in the list it is written with (1 for an item alone). A computed
/// one comes after the rest.
#[allow(clippy::too_many_arguments)]
fn initial(
    chart: &Chart,
    e: &Entity,
    name: &str,
    a: &crate::chart::Attribute,
    given: Option<&Value>,
    field: &dyn Fn() -> String,
    now: &str,
    position: usize,
) -> Result<Option<AttributeValue>> {
    Ok(Some(if let Some(auto) = a.auto {
        match auto {
            Auto::Ulid => s(&Id::generate().to_string()),
            Auto::Created | Auto::Updated => a.time(now),
            Auto::Position => n(position as i64),
        }
    } else if let Some(constant) = &a.on_create {
        constant.clone()
    } else if a.computed.is_some() {
        return Ok(None);
    } else if e.writes.version.as_deref() == Some(name) {
        n(1)
    } else if let Some(l) = e.writes.lifecycle.as_ref().filter(|l| l.attribute == name) {
        s(&l.initial)
    } else if matches!(a.ty, Type::Counter) {
        n(0)
    } else if let Some(v) = given {
        stored(chart, &field(), &a.ty, v)?
    } else if let Some(seconds) = a.lifetime {
        n(time::OffsetDateTime::now_utc().unix_timestamp() + seconds)
    } else if a.optional {
        return Ok(None);
    } else {
        let field = field();
        return Err(ApiError::bad_input(&field, format!("{field} is required")));
    }))
}

/// The children of `list` a create writes with `parent`, from the input given: within
/// the list's bounds, each with the parent's key values it shares, its place, its own
/// values and what it computes, its keys rendered.
fn children(
    chart: &Chart,
    e: &Entity,
    list: &str,
    given: Option<&Value>,
    parent: &Item,
    now: &str,
) -> Result<Vec<Item>> {
    let child = crate::chart::list_child(&chart.entities, &chart.patterns, e, list)
        .ok_or(ApiError::Internal)?;
    let l = &e.lists[list];
    let given: &[Value] = match given {
        None => &[],
        Some(Value::List(v)) => v,
        Some(_) => return Err(ApiError::bad_input(list, format!("{list} is a list"))),
    };
    let (min, max) = (
        l.min.unwrap_or(0) as usize,
        l.max.unwrap_or(crate::chart::MAX_PAGE_SIZE) as usize,
    );
    if given.len() < min || given.len() > max {
        return Err(ApiError::bad_input(
            list,
            format!(
                "{} has {min} to {max} {list}, got {}",
                crate::chart::one(&e.name),
                given.len()
            ),
        ));
    }
    let from_parent = inherited(e, child);
    let mut out = Vec::with_capacity(given.len());
    for (i, v) in given.iter().enumerate() {
        let path = format!("{list}[{i}]");
        let Value::Object(o) = v else {
            return Err(ApiError::bad_input(&path, format!("{path} is an object")));
        };
        let mut item = Item::new();
        for (name, a) in &child.attributes {
            let value = if from_parent.contains(&name.as_str()) {
                parent.get(name).cloned()
            } else {
                let given = o.get(name.as_str()).filter(|v| !matches!(v, Value::Null));
                initial(
                    chart,
                    child,
                    name,
                    a,
                    given,
                    &|| format!("{path}.{name}"),
                    now,
                    i + 1,
                )?
            };
            if let Some(v) = value {
                item.insert(name.clone(), v);
            }
        }
        for (name, a) in &child.attributes {
            if let Some(c) = &a.computed {
                item.insert(name.clone(), computed(child, c, &item, &[], &path)?);
            }
        }
        let item = with_keys(chart, child, item)?;
        crate::store::validate::item_within_size(&item).map_err(|_| {
            ApiError::bad_input(&path, "the item would be larger than DynamoDB's 400 KB")
        })?;
        out.push(item);
    }
    Ok(out)
}

/// The attributes a child takes from its parent: those named as the parent's key values,
/// and its tenant (rule `writes` makes a child's tenant attribute its parent's), so no
/// child is written into another tenant than its parent's.
pub(in crate::graphql) fn inherited<'a>(parent: &Entity, child: &'a Entity) -> Vec<&'a str> {
    let tenant = |e: &Entity| match &e.binding {
        crate::chart::Binding::Key(a) | crate::chart::Binding::Condition(a) => Some(a.clone()),
        _ => None,
    };
    let parent_tenant = tenant(parent);
    child
        .attributes
        .keys()
        .map(String::as_str)
        .filter(|a| {
            parent
                .key
                .pk
                .vars()
                .chain(parent.key.sk.vars())
                .any(|v| v.name == *a)
                || parent_tenant.as_deref() == Some(*a)
        })
        .collect()
}

/// A computed number of `item` (`lists`: the children written with it), its overflow
/// refused as `BAD_USER_INPUT`: a product's naming `field`, a total's naming its list.
fn computed(
    e: &Entity,
    c: &Computed,
    item: &Item,
    lists: &[(String, Vec<Item>)],
    field: &str,
) -> Result<AttributeValue> {
    let of = |list: &str| {
        lists
            .iter()
            .find(|(l, _)| l == list)
            .map_or(&[][..], |(_, items)| items.as_slice())
    };
    let value = match c {
        Computed::Product(a, b) => number(item.get(a))
            .checked_mul(number(item.get(b)))
            .ok_or_else(|| ApiError::bad_input(field, format!("{a} × {b} is too large")))?,
        Computed::Sum { list, attribute } => of(list)
            .iter()
            .try_fold(0i64, |sum, child| {
                sum.checked_add(number(child.get(attribute)))
            })
            .ok_or_else(|| {
                ApiError::bad_input(
                    list,
                    format!("the {} total is too large", crate::chart::words(&e.name)),
                )
            })?,
        Computed::Count(list) => of(list).len() as i64,
    };
    Ok(n(value))
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

/// The item a used client token placed, read back: nothing new was written. With children
/// written with it, the pattern of each list reads it with them (a Query, read again with
/// backoff while an index has not caught up); else one GetItem.
pub(super) async fn replay(
    rc: &RequestContext,
    chart: &Chart,
    m: &Mutation,
    e: &Entity,
    found: &Item,
) -> Result<Written> {
    use backon::Retryable;
    let mut owner = Item::new();
    for v in e.key.pk.vars().chain(e.key.sk.vars()) {
        if let Some(value) = found.get(&v.name) {
            owner.insert(v.name.clone(), value.clone());
        }
    }
    let vars = vars_of(e, &owner);
    // A token (global on purpose) another tenant used: taken, before anything of that
    // tenant's item is read.
    if visible(rc, chart, e, &vars).is_err() {
        return Err(token_taken());
    }
    let gone = || ApiError::Missing {
        field: lower(&e.name).into(),
    };
    if m.with.is_empty() {
        let key = PrimaryKey::new(render(&e.key.pk, &vars)?, render(&e.key.sk, &vars)?);
        return match rc
            .store_of(chart, e)?
            .get_item(GetItem {
                key,
                consistent_read: true,
            })
            .await?
        {
            Some(item) if !visible_item(rc, chart, e, &item) => Err(token_taken()),
            Some(item) => Ok(Written {
                item,
                lists: Vec::new(),
                replayed: true,
            }),
            // The token made an item that has been deleted since: the retry creates nothing.
            None => Err(gone()),
        };
    }
    let mut item = None;
    let mut lists = Vec::new();
    for list in m.with.keys() {
        let l = &e.lists[list];
        let pattern = &chart.patterns[&l.pattern];
        // One page of the largest size holds the whole list (its `max` is at most that).
        let whole = crate::graphql::connection::Resolved {
            size: crate::chart::MAX_PAGE_SIZE,
            start: None,
            forward: true,
        };
        let read = || async {
            let fetched =
                super::super::super::read::page(&rc.store, chart, pattern, &vars, &whole).await?;
            if fetched.parent.is_none() {
                return Err(gone());
            }
            Ok(fetched)
        };
        // An item deleted since is as missing as one an index has not caught up with:
        // after the retries, a strongly consistent read of the item tells them apart
        // (`NOT_FOUND`, or `UNAVAILABLE`: it is there and cannot be read with its children
        // yet, so try again).
        let fetched = match read
            // The item was written with its token's marker, but the pattern may read an
            // index, which DynamoDB updates typically within a second, sometimes later.
            .retry(crate::store::retry_schedule(INDEX_READ_ATTEMPTS - 1))
            .when(|e| matches!(e, ApiError::Missing { .. }))
            .await
        {
            Err(ApiError::Missing { .. }) => {
                let key = PrimaryKey::new(render(&e.key.pk, &vars)?, render(&e.key.sk, &vars)?);
                let there = rc
                    .store_of(chart, e)?
                    .get_item(GetItem {
                        key,
                        consistent_read: true,
                    })
                    .await?;
                return Err(if there.is_some() {
                    tracing::warn!(entity = %e.name, "a replay cannot read back the item its token made yet");
                    ApiError::Unavailable
                } else {
                    gone()
                });
            }
            other => other?,
        };
        if let Some(parent) = fetched.parent {
            item.get_or_insert_with(|| parent.item.clone());
        }
        lists.push((
            list.clone(),
            fetched.children.iter().map(|c| c.item.clone()).collect(),
        ));
    }
    let item = item.ok_or_else(gone)?;
    if !visible_item(rc, chart, e, &item) {
        return Err(token_taken());
    }
    Ok(Written {
        item,
        lists,
        replayed: true,
    })
}

/// A token that named another tenant's item (a marker `global` on purpose): taken, and
/// nothing of that item told.
fn token_taken() -> ApiError {
    meaning_error(&Meaning::Taken("clientToken".into()))
}
