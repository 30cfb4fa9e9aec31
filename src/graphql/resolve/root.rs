//! The root fields: an entity by key or id with every page selected below it read ahead,
//! `node` and `nodes` in one batch, `viewer`.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef,
};
use async_graphql::{ErrorExtensions, Value};
use futures::future::join_all;

use super::super::read::cursor_name;
use super::super::read::{self};
use super::super::record::{decode_global_id, id_vars, key_value, key_var_names, Record, Vars};
use super::super::{argument, connection_arguments, lower_first};
use super::pages::{connection_vars, whole_list};
use super::*;
use crate::auth::Access;
use crate::chart::template::Value as KeyValue;
use crate::chart::types::Type;
use crate::chart::{Chart, Entity, Request};
use crate::graphql::connection::{PageArgs, Resolved};
use crate::graphql::errors::ApiError;

/// `Viewer`: the tenant and the member the token names, and its role.
pub fn viewer_type(chart: &Arc<Chart>) -> Object {
    let mut v = Object::new("Viewer");
    let role = Field::new("role", TypeRef::named("Role"), |ctx| {
        let role = match &rc(&ctx).access {
            Access::Unrestricted => None,
            Access::Tenant { role, .. } => Some(match role {
                crate::auth::Role::Admin => "ADMIN",
                crate::auth::Role::Member => "MEMBER",
            }),
        };
        FieldFuture::Value(
            role.map(|r| FieldValue::value(Value::Enum(async_graphql::Name::new(r)))),
        )
    })
    .description("What the caller may do there.");
    if let Some(t) = &chart.tenant {
        let chart2 = chart.clone();
        let entity = t.entity.clone();
        v = v.field(
            Field::new(
                lower_first(&t.entity),
                TypeRef::named(&t.entity),
                move |ctx| {
                    let chart = chart2.clone();
                    let entity = entity.clone();
                    FieldFuture::new(async move {
                        let rc = rc(&ctx);
                        let Access::Tenant { org, .. } = &rc.access else {
                            return Ok(None);
                        };
                        let e = &chart.entities[&entity];
                        let Some(attr) = chart.tenant_attribute(e) else {
                            return Ok(None);
                        };
                        let vars = Vars::from([(attr, KeyValue::Text(org.to_string()))]);
                        let pk = primary_key(e, &vars).map_err(|e| e.extend())?;
                        Ok(load(rc, &chart, pk)
                            .await
                            .map_err(err)?
                            .map(|r| obj_value(r, false)))
                    })
                },
            )
            .description(format!(
                "The caller's {} (the token's organization claim).",
                lower_first(&t.entity)
            )),
        );
        // A viewer that is the tenant entity itself (a shop whose customers are its
        // tenants) is answered by the tenant's field above: the item the token's tenant
        // claim names, which every read is held to. A second field of that name could not
        // be added, and would read the item the subject names, which may be another's.
        if let Some(viewer) = chart.viewer.as_ref().filter(|v| v.entity != t.entity) {
            let chart2 = chart.clone();
            let tenant_attr = t.attribute.clone();
            let entity = viewer.entity.clone();
            let subject = viewer.subject.clone();
            v = v.field(
                Field::new(
                    lower_first(&viewer.entity),
                    TypeRef::named(&viewer.entity),
                    move |ctx| {
                        let chart = chart2.clone();
                        let entity = entity.clone();
                        let subject = subject.clone();
                        let tenant_attr = tenant_attr.clone();
                        FieldFuture::new(async move {
                            let rc = rc(&ctx);
                            let Access::Tenant {
                                org,
                                subject: Some(sub),
                                ..
                            } = &rc.access
                            else {
                                return Ok(None);
                            };
                            let e = &chart.entities[&entity];
                            // Only a subject that can be a key value names a member.
                            let Ok(sub) = key_value(&e.attributes[&subject].ty, "sub", sub) else {
                                return Ok(None);
                            };
                            let vars = Vars::from([
                                (tenant_attr, KeyValue::Text(org.to_string())),
                                (subject, sub),
                            ]);
                            let pk = primary_key(e, &vars).map_err(|e| e.extend())?;
                            Ok(load(rc, &chart, pk)
                                .await
                                .map_err(err)?
                                .map(|r| obj_value(r, false)))
                        })
                    },
                )
                .description(format!(
                    "The member of that {} whose {} is the token's subject (`sub`);\n\
                     null when the subject names none (a provider's opaque subject, for one).",
                    lower_first(&t.entity),
                    viewer.subject
                )),
            );
        }
    }
    v.field(role)
}

/// The root: the chart's fields, `node`, `nodes`, `viewer`.
pub fn query_type(chart: Arc<Chart>) -> Object {
    let mut q = Object::new("Query");
    for (name, root) in &chart.query {
        let e = &chart.entities[&root.entity];
        let mut connection = match chart.patterns.get(&root.pattern).map(|p| &p.request) {
            Some(Request::Scan { children, .. }) => Some(super::pages::scan_field(
                &chart,
                name,
                root.pattern,
                children,
            )),
            Some(Request::Query {
                parent: None,
                children,
                ..
            }) if *children == root.entity => Some(super::pages::query_field(
                &chart,
                name,
                root.pattern,
                children,
            )),
            _ => None,
        };
        if let Some(mut f) = connection.take() {
            if let Some(d) = &root.description {
                f = f.description(d);
            }
            q = q.field(f);
            continue;
        }
        let by_id = root.by.as_deref() == Some("id");
        let chart2 = chart.clone();
        let entity = root.entity.clone();
        let pattern = root.pattern;
        let mut f = Field::new(name, TypeRef::named(&root.entity), move |ctx| {
            let chart = chart2.clone();
            let entity = entity.clone();
            FieldFuture::new(async move { root_field(&ctx, &chart, &entity, pattern, by_id).await })
        });
        if by_id {
            f = f.argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)));
        } else {
            for v in key_var_names(e) {
                let a = &e.attributes[&v];
                f = f.argument(argument(&v, &a.ty, false));
            }
        }
        if let Some(d) = &root.description {
            f = f.description(d);
        }
        q = q.field(f);
    }
    let chart2 = chart.clone();
    q = q.field(
        Field::new("node", TypeRef::named("Node"), move |ctx| {
            let chart = chart2.clone();
            FieldFuture::new(async move {
                let id = ctx.args.try_get("id")?.string()?.to_owned();
                let mut found = nodes(&ctx, &chart, &[id]).await?;
                Ok(found.pop().flatten())
            })
        })
        .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
        .description("Any entity by global id; null when there is none."),
    );
    let chart2 = chart.clone();
    q = q.field(
        Field::new("nodes", TypeRef::named_list_nn("Node"), move |ctx| {
            let chart = chart2.clone();
            FieldFuture::new(async move {
                let ids: Vec<String> = ctx
                    .args
                    .try_get("ids")?
                    .list()?
                    .iter()
                    .map(|v| v.string().map(str::to_owned))
                    .collect::<Result<_>>()?;
                if ids.len() > crate::store::validate::MAX_BATCH_GET_KEYS {
                    return Err(ApiError::bad_input(
                        "ids",
                        format!(
                            "at most {} ids per call, got {}",
                            crate::store::validate::MAX_BATCH_GET_KEYS,
                            ids.len()
                        ),
                    )
                    .extend());
                }
                let found = nodes(&ctx, &chart, &ids).await?;
                Ok(Some(FieldValue::list(found.into_iter().map(|n| n.unwrap_or(FieldValue::NULL)))))
            })
        })
        .argument(InputValue::new("ids", TypeRef::named_nn_list_nn(TypeRef::ID)))
        .description("Entities by global id, in the order asked, null where there is none: one\nBatchGetItem for up to 100 ids."),
    );
    let tenant = chart
        .tenant
        .as_ref()
        .map_or("tenant".to_owned(), |t| lower_first(&t.entity));
    q.field(
        Field::new("viewer", TypeRef::named_nn("Viewer"), move |ctx| {
            let chart = chart.clone();
            FieldFuture::new(async move {
                // The tenant and the member, when both are asked: one batch, as the
                // fields below resolve one after the other.
                let keys = viewer_keys(&ctx, &chart);
                if keys.len() > 1 {
                    let _ = rc(&ctx).items(&chart).try_load_many(keys).await;
                }
                Ok(Some(FieldValue::owned_any(())))
            })
        })
        .description(format!(
            "The caller: the {}, member and role their token names. Every field is\n\
             null with authentication off (the caller is nobody in particular).",
            tenant
        )),
    )
}

/// The keys of what `viewer` selects: the token's tenant and the member its subject names.
fn viewer_keys(ctx: &ResolverContext<'_>, chart: &Chart) -> Vec<ItemKey> {
    let (Some(t), Access::Tenant { org, subject, .. }) = (&chart.tenant, &rc(ctx).access) else {
        return Vec::new();
    };
    let look = ctx.look_ahead();
    let mut keys = Vec::new();
    let tenant = KeyValue::Text(org.to_string());
    let owner = &chart.entities[&t.entity];
    if look.field(&lower_first(&t.entity)).exists() {
        if let Some(attr) = chart.tenant_attribute(owner) {
            keys.extend(primary_key(owner, &Vars::from([(attr, tenant.clone())])).ok());
        }
    }
    // The viewer that is the tenant is the tenant's field (see [`viewer_type`]).
    let viewer = chart.viewer.as_ref().filter(|v| v.entity != t.entity);
    if let (Some(v), Some(sub)) = (viewer, subject) {
        let e = &chart.entities[&v.entity];
        if look.field(&lower_first(&v.entity)).exists() {
            if let Ok(sub) = key_value(&e.attributes[&v.subject].ty, "sub", sub) {
                let vars = Vars::from([(t.attribute.clone(), tenant), (v.subject.clone(), sub)]);
                keys.extend(primary_key(e, &vars).ok());
            }
        }
    }
    keys
}

/// `node`/`nodes`: every id decoded first, then one batch through the DataLoader.
async fn nodes(
    ctx: &ResolverContext<'_>,
    chart: &Arc<Chart>,
    ids: &[String],
) -> Result<Vec<Option<FieldValue<'static>>>> {
    let rc = rc(ctx);
    let mut keys = Vec::new();
    for id in ids {
        let (e, vars) = decode_global_id(chart, "id", id).map_err(|e| e.extend())?;
        let key = primary_key(e, &vars).map_err(|e| e.extend())?;
        // An id naming another tenant is answered as missing, and nothing is read.
        let seen = key_visible(rc, chart, e, &vars) != Some(false);
        keys.push(seen.then(|| (e.name.clone(), key)));
    }
    let found = join_all(keys.into_iter().map(|named| async move {
        let Some((name, k)) = named else {
            return Ok(None);
        };
        load(rc, chart, k)
            .await
            .map(|r| r.filter(|r| *r.entity == *name))
    }))
    .await;
    let recs: Vec<Arc<Record>> = found
        .iter()
        .filter_map(|r| r.as_ref().ok().cloned().flatten())
        .collect();
    preload(rc, chart, &recs, &[ctx.look_ahead()]).await;
    found
        .into_iter()
        .map(|r| {
            r.map_err(err).map(|r| {
                r.map(|r| {
                    let name = r.entity.to_string();
                    obj_value(r, false).with_type(name)
                })
            })
        })
        .collect()
}

/// A root field: the entity by its key (or id), and every page selected below it read
/// ahead, concurrently; a first page whose pattern carries the entity brings it.
async fn root_field(
    ctx: &ResolverContext<'_>,
    chart: &Arc<Chart>,
    entity: &str,
    pattern: u32,
    by_id: bool,
) -> Result<Option<FieldValue<'static>>> {
    let rc = rc(ctx);
    let e = &chart.entities[entity];
    let vars = if by_id {
        root_id(ctx, chart, e)?
    } else {
        let mut vars = Vars::new();
        for v in key_var_names(e) {
            let given = ctx.args.try_get(&v)?;
            let text = given
                .enum_name()
                .ok()
                .map(str::to_owned)
                .or_else(|| given.string().ok().map(str::to_owned))
                .or_else(|| given.i64().ok().map(|n| n.to_string()))
                .unwrap_or_default();
            let value = key_value(&e.attributes[&v].ty, &v, &text)
                .map_err(|m| ApiError::bad_input(&v, m).extend())?;
            vars.insert(v, value);
        }
        vars
    };
    // The pages selected below, checked (arguments, cursors) before anything is read.
    let mut jobs = Vec::new();
    for (name, c) in &e.connections {
        let p = &chart.patterns[&c.pattern];
        let Request::Query {
            condition, parent, ..
        } = &p.request
        else {
            continue;
        };
        let extra = connection_arguments(chart, e, c.pattern);
        let needs_more = condition_needs(condition, e, &vars, &extra);
        if needs_more {
            continue;
        }
        for sel in ctx.look_ahead().field(name).selection_fields() {
            let Ok(arguments) = sel.arguments() else {
                continue;
            };
            let (args, rest) = PageArgs::from_arguments(arguments);
            let mut given = HashMap::new();
            for (n, value) in rest {
                let text = match value {
                    Value::Enum(s) => s.to_string(),
                    Value::String(s) => s,
                    Value::Number(x) => x.to_string(),
                    _ => continue,
                };
                given.insert(n.to_string(), text);
            }
            let (mut page_vars, extra_key) =
                connection_vars(&extra, &given).map_err(|e| e.extend())?;
            for (k, v) in &vars {
                page_vars.entry(k.clone()).or_insert(v.clone());
            }
            let connection = read::connection_name(p, &cursor_name(e, name, c), &page_vars)
                .map_err(|e| e.extend())?;
            let resolved = args
                .resolve(&rc.cursors, &connection)
                .map_err(|e| e.extend())?;
            let carries =
                parent.as_deref() == Some(entity) && resolved.forward && resolved.start.is_none();
            let slot = page_slot(name, &args.key(&extra_key));
            if jobs.iter().any(|j: &Job| j.slot == slot) {
                continue;
            }
            jobs.push(Job {
                slot,
                carries,
                pattern: c.pattern,
                vars: page_vars,
                page: resolved,
            });
        }
    }
    // Each collection of several kinds selected (of every kind: one of a kind reads its
    // own prefix when it resolves).
    for (name, c) in &e.collections {
        let p = &chart.patterns[&c.pattern];
        let Request::Collection { parent, .. } = &p.request else {
            continue;
        };
        for sel in ctx.look_ahead().field(name).selection_fields() {
            let Ok(arguments) = sel.arguments() else {
                continue;
            };
            let (args, rest) = PageArgs::from_arguments(arguments);
            if rest
                .iter()
                .any(|(n, v)| n.as_str() == "kind" && *v != Value::Null)
            {
                continue;
            }
            let connection = read::connection_name(p, &cursor_name(e, name, c), &vars)
                .map_err(|e| e.extend())?;
            let resolved = args
                .resolve(&rc.cursors, &connection)
                .map_err(|e| e.extend())?;
            let carries =
                parent.as_deref() == Some(entity) && resolved.forward && resolved.start.is_none();
            let slot = page_slot(name, &args.key(""));
            if jobs.iter().any(|j: &Job| j.slot == slot) {
                continue;
            }
            jobs.push(Job {
                slot,
                carries,
                pattern: c.pattern,
                vars: vars.clone(),
                page: resolved,
            });
        }
    }
    for (name, l) in &e.lists {
        if !ctx.look_ahead().field(name).exists() {
            continue;
        }
        let p = &chart.patterns[&l.pattern];
        let carries = matches!(&p.request, Request::Query { parent: Some(pp), .. } if pp == entity);
        jobs.push(Job {
            slot: page_slot(name, ""),
            carries,
            pattern: l.pattern,
            vars: vars.clone(),
            page: whole_list(l.max),
        });
    }
    // A root field by a pattern that reads the entity with its children (an order by id
    // with its lines) reads it that way even when they are not selected.
    if let Request::Query {
        parent: Some(pp), ..
    } = &chart.patterns[&pattern].request
    {
        if pp == entity && !jobs.iter().any(|j| j.carries) {
            // Read as the list that pattern serves reads it, when there is one, so the
            // list is there if a later field asks.
            let list = e.lists.iter().find(|(_, l)| l.pattern == pattern);
            let (slot, page) = match list {
                Some((name, l)) => (page_slot(name, ""), whole_list(l.max)),
                None => (
                    String::new(),
                    Resolved {
                        size: 1,
                        start: None,
                        forward: true,
                    },
                ),
            };
            jobs.push(Job {
                slot,
                carries: true,
                pattern,
                vars: vars.clone(),
                page,
            });
        }
    }
    if key_visible(rc, chart, e, &vars) == Some(false) {
        // Another tenant's answers as a missing one, without a read.
        return Ok(None);
    }
    let carrier = jobs.iter().any(|j| j.carries);
    // A count selected (a counter, or a connection's `totalCount`): the entity is read
    // with its counter shards, one Query, instead of by key.
    let look = ctx.look_ahead();
    let counts = !carrier
        && (e
            .attributes
            .iter()
            .any(|(n, a)| matches!(a.ty, Type::Counter) && look.field(n).exists())
            || e.connections
                .iter()
                .any(|(n, c)| c.total.is_some() && look.field(n).field("totalCount").exists()));
    let sharded = chart.patterns.values().find_map(|p| match &p.request {
        Request::GetItem {
            entity: x,
            with_shards: Some(c),
        } if x == entity => Some(c.clone()),
        _ => None,
    });
    let parent_load = async {
        if carrier {
            return Ok((None, false));
        }
        match (&sharded, counts) {
            (Some(cond), true) => {
                let store = chart
                    .store_of(&rc.store, e.table)
                    .map_err(|e| Arc::new(e.into()))?;
                read::with_counts(store.as_ref(), chart, entity, cond, &vars)
                    .await
                    .map(|r| (r, true))
                    .map_err(Arc::new)
            }
            _ => {
                let pk = primary_key(e, &vars).map_err(Arc::new)?;
                load(rc, chart, pk).await.map(|r| (r, false))
            }
        }
    };
    let reads = jobs.iter().map(|j| {
        read::page(
            &rc.store,
            chart,
            &chart.patterns[&j.pattern],
            &j.vars,
            &j.page,
        )
    });
    let (results, loaded) = futures::join!(join_all(reads), parent_load);
    let mut pages = HashMap::new();
    let mut parent: Option<Option<Arc<Record>>> = None;
    let mut failed = None;
    for (Job { slot, carries, .. }, result) in jobs.into_iter().zip(results) {
        match result {
            Ok(f) => {
                prime(rc, chart, &f).await;
                if carries && parent.is_none() {
                    parent = Some(f.parent.clone());
                }
                pages.insert(slot, Ok(f));
            }
            Err(e) => {
                let e = Arc::new(e);
                if carries {
                    failed = Some(e.clone());
                }
                pages.insert(slot, Err(e));
            }
        }
    }
    let (rec, counted) = match parent {
        Some(p) => (p, true),
        None => match failed {
            Some(e) => return Err(err(e)),
            None => loaded.map_err(err)?,
        },
    };
    let Some(rec) = rec.filter(|r| visible(rc, chart, r) && *r.entity == *entity) else {
        return Ok(None);
    };
    preload(rc, chart, std::slice::from_ref(&rec), &[ctx.look_ahead()]).await;
    Ok(Some(FieldValue::owned_any(Obj {
        rec,
        pages: Arc::new(pages),
        counted: counted || sharded.is_none(),
    })))
}

/// A page a root field reads ahead.
struct Job {
    slot: String,
    carries: bool,
    pattern: u32,
    vars: Vars,
    page: Resolved,
}

/// Whether a pattern needs a value the root field's arguments do not give (an attribute
/// of the entity that only its item holds): then its page is read by the field itself.
fn condition_needs(
    cond: &crate::chart::KeyCondition,
    e: &Entity,
    vars: &Vars,
    extra: &[(String, Type, bool)],
) -> bool {
    let templates = cond.templates();
    templates.into_iter().flat_map(|t| t.vars()).any(|v| {
        !vars.contains_key(&v.name)
            && e.attributes.contains_key(&v.name)
            && !extra.iter().any(|(n, ..)| *n == v.name)
    })
}

/// The key variables of a root field's `id`: a global id of the entity, or its plain id.
fn root_id(ctx: &ResolverContext<'_>, chart: &Chart, e: &Entity) -> Result<Vars> {
    let id = ctx.args.try_get("id")?.string()?;
    id_vars(chart, e, "id", id)
        .map_err(|e| e.extend())?
        .ok_or_else(|| ApiError::bad_input("id", format!("not the id of a {}", e.name)).extend())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// A chart whose viewer is its tenant (the second chart's chains, each signing in as
    /// itself): `viewer` holds one field for it, the tenant the token names.
    #[test]
    fn a_viewer_that_is_the_tenant_is_one_field() {
        const LOCATOR: &str = include_str!("../../../examples/charts/store-locator.toml");
        let tenant = "[tenant]\nentity = \"Chain\"\nattribute = \"chain\"\n";
        assert!(LOCATOR.contains(tenant), "{tenant}");
        let text = LOCATOR.replace(
            tenant,
            &format!("{tenant}\n[viewer]\nentity = \"Chain\"\nsubject = \"slug\"\n"),
        );
        let chart = Arc::new(crate::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")));
        let chart = crate::graphql::served::served(chart);
        let schema = crate::graphql::build(chart)
            .finish()
            .unwrap_or_else(|e| panic!("{e}"));
        let sdl = schema.sdl();
        let viewer = sdl
            .split("type Viewer {")
            .nth(1)
            .and_then(|rest| rest.split('}').next())
            .expect("the schema has a Viewer");
        let fields: Vec<&str> = viewer
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("chain:") || l.starts_with("role:"))
            .collect();
        assert_eq!(fields, ["chain: Chain", "role: Role"], "{viewer}");
    }
}
