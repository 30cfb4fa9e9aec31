//! What a key condition can return: each entity of the index it reads, its templates laid
//! against the condition's with the variables they share tied together.

use std::cmp::Ordering;
use std::collections::HashMap;

use indexmap::IndexMap;

use super::template::{self, Bound, Laid, Template, Var};
use super::types::Type;
use super::{Entity, KeyCondition, SortCondition};

/// Whether a key condition can return an entity's items, from the templates alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Included {
    No,
    Maybe,
}

/// Binds an entity's variables to domains of their own (`side` tells two entities apart).
pub(super) fn entity_binder<'a>(
    e: &'a Entity,
    side: &'a str,
) -> impl Fn(&Var) -> Option<Bound> + 'a {
    move |v: &Var| {
        let a = e.attributes.get(&v.name)?;
        let domain = a.ty.key_domain(v.width, false).ok()?;
        Some(Bound {
            id: format!("{side}:{}", v.name),
            domain,
        })
    }
}

/// The variables of a key condition, each once.
pub(super) fn condition_vars(cond: &KeyCondition) -> Vec<Var> {
    let mut out: Vec<Var> = Vec::new();
    for v in cond.templates().into_iter().flat_map(|t| t.vars()) {
        if !out.iter().any(|o| o.name == v.name) {
            out.push(v.clone());
        }
    }
    out
}

/// The templates of a sort condition.
pub(super) fn sort_templates(s: &SortCondition) -> Vec<&Template> {
    match s {
        SortCondition::Between(a, b) => vec![a, b],
        SortCondition::Eq(t)
        | SortCondition::Lt(t)
        | SortCondition::Le(t)
        | SortCondition::Gt(t)
        | SortCondition::Ge(t)
        | SortCondition::BeginsWith(t) => vec![t],
    }
}

/// Which attribute of which entity a condition's variable meets, segment by segment: in
/// the partition, or in a sort template of an entity in that partition.
pub(super) fn alignments(cond: &KeyCondition, e: &Entity) -> Vec<(String, String)> {
    if let Some(attrs) = cond.index.as_ref().and_then(|i| e.multi.get(i)) {
        return multi_alignments(cond, attrs);
    }
    let Some(keys) = e.keys_in(cond.index.as_deref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut align = |a: &Template, b: &Template, whole: bool| {
        let (sa, sb) = (a.segments(), b.segments());
        if whole && sa.len() != sb.len() {
            return;
        }
        for (x, y) in sa.iter().zip(sb.iter()) {
            if x.literal != y.literal {
                return;
            }
            if let (Some(v), Some(w)) = (x.var, y.var) {
                out.push((v.name.clone(), w.name.clone()));
            }
            if x.var.is_some() != y.var.is_some() {
                return;
            }
        }
    };
    align(&cond.partition, &keys.pk, true);
    if let Some(s) = &cond.sort {
        for t in sort_templates(s) {
            align(t, &keys.sk, false);
        }
    }
    out
}

/// On a multi-attribute key each of the condition's values meets one attribute: the
/// partition's, then the sort values held equal, then the sort condition's.
fn multi_alignments(cond: &KeyCondition, attrs: &[String]) -> Vec<(String, String)> {
    let mut given: Vec<&Template> = std::iter::once(&cond.partition)
        .chain(&cond.partition_more)
        .chain(&cond.sort_prefix)
        .collect();
    let at = given.len();
    given.extend(cond.sort.iter().flat_map(sort_templates));
    given
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let attr = attrs.get(i.min(at))?;
            let v = t.vars().next()?;
            Some((v.name.clone(), attr.clone()))
        })
        .collect()
}

/// The type of a condition's variable: the attribute it meets in an entity the condition
/// reaches.
pub(super) fn var_type(
    cond: &KeyCondition,
    entities: &IndexMap<String, Entity>,
    var: &str,
) -> Option<Type> {
    for e in entities.values() {
        for (cv, attr) in alignments(cond, e) {
            if cv == var {
                return e.attributes.get(&attr).map(|a| a.ty.clone());
            }
        }
    }
    None
}

/// Binds, for each entity, its variables that meet a condition's variable in the
/// partition to that variable's identity, and the rest to their own.
pub(super) fn condition_binder<'a>(
    cond: &'a KeyCondition,
    entities: &'a IndexMap<String, Entity>,
) -> impl Fn(&str) -> Binder<'a> + 'a {
    move |name: &str| {
        let e = &entities[name];
        let mut map: HashMap<String, String> = HashMap::new();
        let keys = e.keys_in(cond.index.as_deref());
        if let Some(keys) = keys {
            let (sa, sb) = (cond.partition.segments(), keys.pk.segments());
            if sa.len() == sb.len() {
                for (x, y) in sa.iter().zip(sb.iter()) {
                    if let (Some(v), Some(w)) = (x.var, y.var) {
                        if x.literal == y.literal {
                            map.insert(w.name.clone(), format!("p:{}", v.name));
                        }
                    }
                }
            }
        }
        let own = name.to_owned();
        Box::new(move |v: &Var| {
            let a = e.attributes.get(&v.name)?;
            let domain = a.ty.key_domain(v.width, false).ok()?;
            let id = map
                .get(&v.name)
                .cloned()
                .unwrap_or_else(|| format!("{own}:{}", v.name));
            Some(Bound { id, domain })
        })
    }
}

/// Binds a template's variables for a comparison.
pub(super) type Binder<'a> = Box<dyn Fn(&Var) -> Option<Bound> + 'a>;

/// Whether an item of `a` and one of `b` can have equal primary keys (each template pair
/// compared for any values their attributes take).
pub(super) fn keys_may_equal(a: &Entity, b: &Entity) -> bool {
    let (ba, bb) = (entity_binder(a, "a"), entity_binder(b, "b"));
    let la = |t| Laid {
        template: t,
        bind: &ba,
    };
    let lb = |t| Laid {
        template: t,
        bind: &bb,
    };
    template::may_equal(&la(&a.key.pk), &lb(&b.key.pk))
        && template::may_equal(&la(&a.key.sk), &lb(&b.key.sk))
}

/// Every entity of the index a condition reads, with whether the condition can return it.
pub(super) fn reachable(
    cond: &KeyCondition,
    entities: &IndexMap<String, Entity>,
    table: usize,
) -> IndexMap<String, Included> {
    let mut out = IndexMap::new();
    // A multi-attribute key holds the items' own values, no literal tells one entity's
    // from another's: a condition on it may return every entity in the index.
    if let Some(index) = &cond.index {
        if entities.values().any(|e| e.multi.contains_key(index)) {
            for e in entities.values().filter(|e| e.multi.contains_key(index)) {
                out.insert(e.name.clone(), Included::Maybe);
            }
            return out;
        }
    }
    // A request of one table meets its items alone.
    for e in entities.values().filter(|e| e.table == table) {
        let Some(keys) = e.keys_in(cond.index.as_deref()) else {
            continue;
        };
        // The condition's own variables take the type of the attribute they meet.
        let bind_cond = |v: &Var| -> Option<Bound> {
            let t = var_type(cond, entities, &v.name)?;
            let domain = t.key_domain(v.width, false).ok()?;
            Some(Bound {
                id: format!("p:{}", v.name),
                domain,
            })
        };
        let binder = condition_binder(cond, entities);
        let bind_e = binder(&e.name);
        let part = template::may_equal(
            &Laid {
                template: &cond.partition,
                bind: &bind_cond,
            },
            &Laid {
                template: &keys.pk,
                bind: &*bind_e,
            },
        );
        if !part {
            continue;
        }
        let sk = Laid {
            template: &keys.sk,
            bind: &*bind_e,
        };
        let cmp = |t: &Template| {
            template::compare(
                &sk,
                &Laid {
                    template: t,
                    bind: &bind_cond,
                },
            )
        };
        let may = match &cond.sort {
            None => true,
            Some(SortCondition::Eq(t)) => template::may_equal(
                &sk,
                &Laid {
                    template: t,
                    bind: &bind_cond,
                },
            ),
            Some(SortCondition::Lt(t)) => {
                !matches!(cmp(t), Some(Ordering::Greater | Ordering::Equal))
            }
            Some(SortCondition::Le(t)) => cmp(t) != Some(Ordering::Greater),
            Some(SortCondition::Gt(t)) => !matches!(cmp(t), Some(Ordering::Less | Ordering::Equal)),
            Some(SortCondition::Ge(t)) => cmp(t) != Some(Ordering::Less),
            Some(SortCondition::Between(a, b)) => {
                cmp(a) != Some(Ordering::Less) && cmp(b) != Some(Ordering::Greater)
            }
            Some(SortCondition::BeginsWith(t)) => template::may_begin_with(
                &sk,
                &Laid {
                    template: &t.shortest(),
                    bind: &bind_cond,
                },
            ),
        };
        // An end of a range a caller leaves open reads, beside what any value of it
        // would, every key that starts with the text before it.
        let may = may
            || cond.sort.as_ref().is_some_and(|s| {
                !matches!(s, SortCondition::BeginsWith(_))
                    && sort_templates(s)
                        .into_iter()
                        .filter(|t| t.has_open())
                        .any(|t| {
                            template::may_begin_with(
                                &sk,
                                &Laid {
                                    template: &t.shortest(),
                                    bind: &bind_cond,
                                },
                            )
                        })
            });
        out.insert(
            e.name.clone(),
            if may { Included::Maybe } else { Included::No },
        );
    }
    out
}
