//! A plan's conditions filled in: the one place the write path turns the guards the chart
//! was resolved into ([`crate::chart::plan::Guard`]) into the conditions its actions are
//! sent on, with this request's values.

use super::*;
use crate::chart::plan::{Guard, Step, TenantIs, Verb};

/// The values a write's conditions are filled with.
#[derive(Default, Clone, Copy)]
pub(super) struct Values<'a> {
    /// The caller's tenant (none: the caller sees every tenant).
    pub caller: Option<&'a Tenant>,
    /// The item as read before the write.
    pub read: Option<&'a Item>,
    /// The item as the change leaves it.
    pub next: Option<&'a Item>,
    /// The item whose write this action is part of: the one a marker names, the one whose
    /// tenant a count or check holds the counted item to.
    pub owner: Option<&'a Item>,
    /// The `expectedVersion` given.
    pub expected: Option<i64>,
    /// The key of the map entry the write puts.
    pub entry: Option<&'a str>,
}

impl<'a> Values<'a> {
    pub(super) fn of_caller(rc: &'a RequestContext) -> Self {
        Values {
            caller: rc.access.org(),
            ..Values::default()
        }
    }
}

/// The condition of guards `when` (an act's), filled with `v`: all of them (none: no
/// condition).
pub(super) fn condition(when: &[Guard], v: &Values) -> Option<Condition> {
    let mut all: Vec<Condition> = Vec::new();
    for g in when {
        fill(g, v, &mut all);
    }
    match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(Condition::And(all)),
    }
}

/// The condition of `step`'s act of `verb`: an action its plan does not name is never
/// sent.
pub(super) fn of_step(step: &Step, verb: Verb, v: &Values) -> Result<Option<Condition>> {
    match step.act(verb) {
        Some(act) => Ok(condition(&act.when, v)),
        None => {
            tracing::error!(?verb, entity = %step.entity, "a write's action is not in its plan");
            Err(ApiError::Internal)
        }
    }
}

fn as_read(a: &str, read: Option<&Item>) -> Condition {
    match read.and_then(|i| i.get(a)) {
        Some(x) => Condition::eq(a.to_owned(), x.clone()),
        None => Condition::not_exists(a.to_owned()),
    }
}

fn push(all: &mut Vec<Condition>, c: Condition) {
    if !all.contains(&c) {
        all.push(c);
    }
}

fn fill(g: &Guard, v: &Values, all: &mut Vec<Condition>) {
    let now = || n(crate::chart::epoch_now());
    match g {
        Guard::Free { key, expiry } => {
            let absent = Condition::not_exists(key.clone());
            all.push(match expiry {
                None => absent,
                Some(t) => Condition::Or(vec![absent, Condition::Cmp(t.clone(), CmpOp::Le, now())]),
            });
        }
        Guard::Absent { key } => all.push(Condition::not_exists(key.clone())),
        Guard::Present { key, expiry } => {
            let exists = Condition::exists(key.clone());
            all.push(match expiry {
                None => exists,
                Some(t) => Condition::And(vec![
                    exists,
                    Condition::Or(vec![
                        Condition::not_exists(t.clone()),
                        Condition::Cmp(t.clone(), CmpOp::Gt, now()),
                    ]),
                ]),
            });
        }
        Guard::Tenant { attribute, is } => match is {
            TenantIs::Caller => {
                if let Some(t) = v.caller {
                    all.push(Condition::eq(attribute.clone(), s(t.as_str())));
                }
            }
            TenantIs::AsRead => all.push(as_read(attribute, v.read)),
            TenantIs::Writers(mine) => all.push(match v.owner.and_then(|o| o.get(mine)) {
                Some(x) => Condition::eq(attribute.clone(), x.clone()),
                None => Condition::not_exists(attribute.clone()),
            }),
        },
        Guard::Version { attribute } => {
            if let Some(expected) = v.expected {
                all.push(Condition::eq(attribute.clone(), n(expected)));
            }
        }
        Guard::AsRead { attributes } => {
            for a in attributes {
                push(all, as_read(a, v.read));
            }
        }
        Guard::IndexSources { indexes } => {
            let at = |i: Option<&Item>, a: &str| i.and_then(|i| i.get(a)).cloned();
            for i in indexes {
                let rewritten = i.keys.iter().any(|k| at(v.read, k) != at(v.next, k));
                if rewritten {
                    for a in &i.sources {
                        push(all, as_read(a, v.read));
                    }
                }
            }
        }
        Guard::NamesOwner { key, values } => {
            let names = values
                .iter()
                .filter_map(|a| {
                    let x = v.owner?.get(a)?;
                    Some(Condition::eq(a.clone(), x.clone()))
                })
                .collect();
            all.push(Condition::Or(vec![
                Condition::not_exists(key.clone()),
                Condition::And(names),
            ]));
        }
        // Filled where the update it conditions is known ([`positive`]).
        Guard::HasMap { map } => all.push(Condition::exists(map.clone())),
        Guard::NoMap { map } => all.push(Condition::not_exists(map.clone())),
        Guard::Room { map, max } => all.push(Condition::Or(vec![
            Condition::EntryExists(map.clone(), v.entry.unwrap_or_default().to_owned()),
            Condition::Size(
                map.clone(),
                CmpOp::Lt,
                i64::try_from(*max).unwrap_or(i64::MAX),
            ),
        ])),
        Guard::Positive => {}
        Guard::Unreferenced { counters } => {
            for c in counters {
                all.push(Condition::Or(vec![
                    Condition::not_exists(c.clone()),
                    Condition::eq(c.clone(), n(0)),
                ]));
            }
        }
    }
}

/// [`Guard::Positive`] filled for `update`: `counter > 0` for each counter it takes from.
pub(super) fn positive(update: &UpdateExpr) -> Vec<Condition> {
    update
        .add
        .iter()
        .filter(|(_, v)| number(Some(v)) < 0)
        .map(|(counter, _)| Condition::Cmp(counter.clone(), CmpOp::Gt, n(0)))
        .collect()
}
