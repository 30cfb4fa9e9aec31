//! A delete: refused while others count on the item; with its markers and counts, after
//! a read.

use super::*;
use crate::chart::plan::Role;

pub(super) async fn delete(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let (_, place) = target(rc, chart, m, e, input)?;
    let expected = expected_version(input, false)?;
    let guarded = guards(chart, e);
    let guard_conditions = |when: &mut Vec<Condition>| {
        for (g, _) in &guarded {
            when.push(Condition::Or(vec![
                Condition::not_exists(g.clone()),
                Condition::eq(g.clone(), n(0)),
            ]));
        }
    };
    let in_use = |item: &Item| {
        guarded
            .iter()
            .find(|(g, _)| number(item.get(g.as_str())) != 0)
            .map(|(_, what)| ApiError::Conflict {
                message: format!("cannot delete: still referenced by {what}"),
                field: what.clone().into(),
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
    let (key, found) = match place {
        Place::Key(key) => (key, None),
        // Found through an index: read first, which the delete's condition holds to.
        place => {
            let found = locate(rc, chart, e, &place, expected).await?;
            (
                primary_key(chart, &found).ok_or(ApiError::Internal)?,
                Some(found),
            )
        }
    };
    let plan = &chart.plans[&m.name];
    if !plan.read_first.always {
        let mut when = vec![present(chart, e)];
        when.extend(tenant_condition(rc, e));
        version_condition(&mut when);
        guard_conditions(&mut when);
        let mut d = Delete::new(key).when(Condition::And(when));
        d.returns = ReturnValues::AllOld;
        d.return_old_on_condition_failure = true;
        return match rc.store.delete_item(d).await {
            Ok(Some(item)) => Ok(Written {
                item,
                lists: Vec::new(),
                replayed: false,
            }),
            Ok(None) => Err(ApiError::Missing {
                field: lower(&e.name).into(),
            }),
            Err(StoreError::ConditionFailed { item: Some(found) })
                if visible_item(rc, chart, e, &found) =>
            {
                check(&found)?;
                Err(ApiError::Contention)
            }
            Err(StoreError::ConditionFailed { .. }) => Err(ApiError::Missing {
                field: lower(&e.name).into(),
            }),
            Err(err) => Err(err.into()),
        };
    }
    let mut current = match found {
        Some(found) => found,
        None => read(rc, e, &key).await?,
    };
    if !visible_item(rc, chart, e, &current) {
        return Err(ApiError::Missing {
            field: lower(&e.name).into(),
        });
    }
    for _ in 0..ATTEMPTS {
        check(&current)?;
        let mut when = vec![present(chart, e)];
        version_condition(&mut when);
        guard_conditions(&mut when);
        when.extend(held(e, &current));
        when.extend(as_read(e, &current));
        let mut actions = Vec::new();
        let mut meanings = Vec::new();
        let mut touches = Touches::default();
        // The mutation's resolved plan, step by step: the item, its markers, the counts
        // on what its references name (merged by item, after the rest).
        for step in &plan.steps {
            let of = step.of.as_deref().unwrap_or_default();
            match step.role {
                Role::Item => {
                    let mut own =
                        Delete::new(key.clone()).when(Condition::And(std::mem::take(&mut when)));
                    own.return_old_on_condition_failure = true;
                    actions.push(TransactAction::Delete(own));
                    meanings.push(Meaning::Own);
                }
                Role::Marker => {
                    if !current.contains_key(of) {
                        continue;
                    }
                    let marker = &chart.entities[&step.entity];
                    actions.push(drop_marker(chart, e, marker, &current)?);
                    meanings.push(Meaning::Corrupt("a unique marker names another item"));
                }
                Role::Counter => {
                    let c = count_of(e, of)?;
                    touches.count(chart, e, &current, c, -1).await;
                }
                // A delete's plan has no other step.
                _ => return Err(ApiError::Internal),
            }
        }
        let sharded = touches.into_actions(&mut actions, &mut meanings);
        within_transaction_limits(chart, e, &actions, &meanings)?;
        match send(rc, actions, sharded).await {
            Ok(_) => {
                return Ok(Written {
                    item: current,
                    lists: Vec::new(),
                    replayed: false,
                })
            }
            Err(err) => match failed(&err) {
                Some((0, None)) => {
                    return Err(ApiError::Missing {
                        field: lower(&e.name).into(),
                    })
                }
                Some((0, Some(found))) if visible_item(rc, chart, e, found) => {
                    current = found.clone()
                }
                Some((0, Some(_))) => {
                    return Err(ApiError::Missing {
                        field: lower(&e.name).into(),
                    })
                }
                _ => return Err(explain(err, &meanings)),
            },
        }
    }
    Err(ApiError::Contention)
}
