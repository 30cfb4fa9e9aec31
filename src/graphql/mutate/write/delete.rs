//! A delete: refused while others count on the item; with its markers and counts, after
//! a read.

use super::*;
use crate::chart::plan::{counted_on, Role, Verb};

pub(super) async fn delete(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let (_, place) = target(rc, chart, m, e, input)?;
    let expected = expected_version(input, false)?;
    let guarded = counted_on(chart, e);
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
    let (key, found) = match place {
        Place::Key(key) => (key, None),
        // Found through an index: read first, which the delete's condition holds to.
        place => {
            let found = locate(rc, chart, e, &place, expected).await?;
            (chart.key_of(&found).ok_or(ApiError::Internal)?, Some(found))
        }
    };
    let plan = &chart.plans[&m.name];
    if let Some(act) = plan.in_place.as_ref().filter(|_| !plan.read_first.always) {
        let mut d = Delete::new(key);
        d.condition = conditions::condition(
            &act.when,
            &Values {
                expected,
                ..Values::of_caller(rc)
            },
        );
        d.returns = ReturnValues::AllOld;
        d.return_old_on_condition_failure = true;
        return match rc.store_of(chart, e)?.delete_item(d).await {
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
        None => read(rc, chart, e, &key).await?,
    };
    if !visible_item(rc, chart, e, &current) {
        return Err(ApiError::Missing {
            field: lower(&e.name).into(),
        });
    }
    for _ in 0..ATTEMPTS {
        check(&current)?;
        let mut actions = Vec::new();
        let mut meanings = Vec::new();
        let mut touches = Touches::default();
        // The mutation's resolved plan, step by step: the item, its markers, the counts
        // on what its references name (merged by item, after the rest).
        for step in &plan.steps {
            let of = step.of.as_deref().unwrap_or_default();
            match step.role {
                Role::Item => {
                    // There and not expired, as read (its version, its tenant, what the
                    // other actions are built from), counted on by nothing.
                    let as_read = Values {
                        read: Some(&current),
                        expected,
                        ..Values::default()
                    };
                    let mut own = Delete::new(key.clone());
                    own.condition = of_step(step, Verb::Delete, &as_read)?;
                    own.return_old_on_condition_failure = true;
                    actions.push(TransactAction::Delete(own));
                    meanings.push(Meaning::Own);
                }
                Role::Marker => {
                    if !current.contains_key(of) {
                        continue;
                    }
                    let marker = &chart.entities[&step.entity];
                    actions.push(drop_marker(chart, step, marker, &current)?);
                    meanings.push(Meaning::Corrupt("a unique marker names another item"));
                }
                Role::Counter => {
                    let c = count_of(e, of)?;
                    touches.count(chart, e, &current, c, -1, step).await?;
                }
                // A delete's plan has no other step.
                _ => return Err(ApiError::Internal),
            }
        }
        let sharded = touches.into_actions(&mut actions, &mut meanings);
        within_transaction_limits(chart, e, &actions, &meanings)?;
        match send(rc, chart, plan, actions, sharded).await {
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
