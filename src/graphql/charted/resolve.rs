//! The resolvers of a chart's read API: what each field of the types [`super::build`]
//! declares answers, and the one store request behind it.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef,
};
use async_graphql::{ErrorExtensions, Value};
use futures::future::join_all;

use super::read::{self, Fetched};
use super::record::{decode_global_id, key_value, key_var_names, render, Record, Vars};
use super::{argument, connection_arguments, type_ref};
use crate::auth::Access;
use crate::chart::format::{Connection, List, Reference, Total};
use crate::chart::template::Value as KeyValue;
use crate::chart::types::Type;
use crate::chart::{Attribute, Chart, Entity, Request};
use crate::graphql::connection::{PageArgs, PageCursors, Resolved};
use crate::graphql::context::RequestContext;
use crate::graphql::errors::ApiError;
use crate::keys::Slug;
use crate::store::{PageKey, PrimaryKey};

/// An entity's object as a parent value: its record, and the pages its resolver read
/// ahead, by field and arguments.
pub struct Obj {
    pub rec: Arc<Record>,
    pub pages: Arc<HashMap<String, Result<Fetched, Arc<ApiError>>>>,
    /// Whether the record holds its counter shards' counts.
    pub counted: bool,
}

/// One page of a connection.
pub struct Conn {
    pub nodes: Vec<Arc<Record>>,
    pub cursors: Arc<PageCursors>,
    pub has_next: bool,
    pub has_previous: bool,
    pub total: Option<i64>,
}

struct Edge {
    conn: Arc<Conn>,
    index: usize,
}

type Result<T, E = async_graphql::Error> = std::result::Result<T, E>;

fn rc<'a>(ctx: &ResolverContext<'a>) -> &'a RequestContext {
    ctx.ctx.data_unchecked::<RequestContext>()
}

fn err(e: impl AsRef<ApiError>) -> async_graphql::Error {
    e.as_ref().extend()
}

fn obj_value(rec: Arc<Record>, counted: bool) -> FieldValue<'static> {
    FieldValue::owned_any(Obj {
        rec,
        pages: Arc::default(),
        counted,
    })
}

/// Whether the caller may see `rec`: the tenant it names is theirs. An entity that names
/// none is reached only through a parent that does, which was checked.
fn visible(rc: &RequestContext, chart: &Chart, rec: &Record) -> bool {
    let Some(attr) = tenant_attribute(chart, rec.entity(chart)) else {
        return true;
    };
    match (&rc.access, rec.text(&attr)) {
        (Access::Unrestricted, _) => true,
        (_, Some(value)) => Slug::parse(value).is_ok_and(|s| rc.sees(&s)),
        (_, None) => false,
    }
}

/// The attribute naming an entity's tenant, where it has one.
fn tenant_attribute(chart: &Chart, e: &Entity) -> Option<String> {
    let t = chart.tenant.as_ref()?;
    let attr = e.tenant.clone().unwrap_or_else(|| t.attribute.clone());
    e.attributes.contains_key(&attr).then_some(attr)
}

/// Whether the caller may see what a key names, before reading it: `Some(false)` when the
/// key names another tenant, `None` when the key does not say.
fn key_visible(rc: &RequestContext, chart: &Chart, e: &Entity, vars: &Vars) -> Option<bool> {
    let attr = tenant_attribute(chart, e)?;
    match vars.get(&attr)? {
        KeyValue::Text(t) => Some(Slug::parse(t).is_ok_and(|s| rc.sees(&s))),
        KeyValue::Int(_) => None,
    }
}

/// An entity's primary key from its key variables.
fn primary_key(e: &Entity, vars: &Vars) -> std::result::Result<PrimaryKey, ApiError> {
    Ok(PrimaryKey::new(
        render(&e.key.pk, vars)?,
        render(&e.key.sk, vars)?,
    ))
}

/// Loads an item by key through the DataLoader, as the caller may see it.
async fn load(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    key: PrimaryKey,
) -> std::result::Result<Option<Arc<Record>>, Arc<ApiError>> {
    let read = rc.items(chart).try_load(key).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "the DataLoader lost a key's answer");
        Err(Arc::new(ApiError::Internal))
    })?;
    Ok(read.filter(|r| visible(rc, chart, r)))
}

/// Remembers what a page read in the request's DataLoader, so a reference to it reads
/// nothing.
async fn prime(rc: &RequestContext, chart: &Arc<Chart>, fetched: &Fetched) {
    let recs = fetched.parent.iter().chain(fetched.children.iter());
    let primed: Vec<_> = recs
        .filter_map(|r| Some((r.primary_key(chart)?, Ok(Some(r.clone())))))
        .collect();
    if !primed.is_empty() {
        rc.items(chart).prime_many(primed).await;
    }
}

/// The key a reference of `rec` names, when every part of it is there.
fn reference_key(chart: &Chart, rec: &Record, r: &Reference) -> Option<PrimaryKey> {
    let source = rec.vars(rec.entity(chart));
    let mut vars = Vars::new();
    for (to, from) in &r.key {
        vars.insert(to.clone(), source.get(from)?.clone());
    }
    primary_key(&chart.entities[&r.entity], &vars).ok()
}

/// Asks the DataLoader at once for every reference selected under objects about to be
/// answered: async-graphql's dynamic schema resolves an object's fields one after another,
/// so without this a ticket's requester and assignee would be two reads instead of one
/// batch. What is asked here is what the reference fields then find in the loader.
async fn preload(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    recs: &[Arc<Record>],
    selected: &[async_graphql::Lookahead<'_>],
) {
    let mut keys = Vec::new();
    for rec in recs {
        let e = rec.entity(chart);
        for (name, r) in &e.references {
            if selected.iter().any(|s| s.field(name).exists()) {
                keys.extend(reference_key(chart, rec, r));
            }
        }
    }
    keys.sort_by(|a, b| (&a.pk, &a.sk).cmp(&(&b.pk, &b.sk)));
    keys.dedup();
    if keys.len() > 1 {
        let _ = rc.items(chart).try_load_many(keys).await;
    }
}

/// `id`: the global id.
pub fn id_field(chart: &Arc<Chart>, e: &Entity) -> Field {
    let chart = chart.clone();
    let entity = e.name.clone();
    Field::new("id", TypeRef::named_nn(TypeRef::ID), move |ctx| {
        let id = ctx
            .parent_value
            .downcast_ref::<Obj>()
            .map(|o| o.rec.global_id(&chart.entities[&entity]));
        FieldFuture::Value(id.map(|id| FieldValue::value(Value::String(id))))
    })
    .description("Opaque global id, for `node(id)`.")
}

/// A plain attribute; a counter of an entity with counter shards reads them once per
/// request when its record was not read with them.
pub fn attribute_field(chart: &Arc<Chart>, e: &Entity, name: &str, a: &Attribute) -> Field {
    let chart = chart.clone();
    let attr = name.to_owned();
    let ty = a.ty.clone();
    let sharded = matches!(a.ty, Type::Counter)
        && chart
            .entities
            .values()
            .any(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == e.name));
    let mut f = Field::new(name, type_ref(&a.ty, a.optional), move |ctx| {
        let chart = chart.clone();
        let attr = attr.clone();
        let ty = ty.clone();
        FieldFuture::new(async move {
            let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
            if sharded && !obj.counted {
                let counted = counted(rc(&ctx), &chart, &obj.rec).await.map_err(err)?;
                return Ok(Some(FieldValue::value(counted.value(&chart, &attr, &ty))));
            }
            Ok(Some(FieldValue::value(obj.rec.value(&chart, &attr, &ty))))
        })
    });
    if let Some(d) = &a.description {
        f = f.description(d);
    }
    f
}

/// The record with its counter shards' counts: one Query, at most once per record and
/// request.
async fn counted(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    rec: &Arc<Record>,
) -> std::result::Result<Arc<Record>, Arc<ApiError>> {
    let entity = rec.entity(chart);
    let cond = chart.patterns.values().find_map(|p| match &p.request {
        Request::GetItem {
            entity: e,
            with_shards: Some(c),
        } if *e == entity.name => Some(c.clone()),
        _ => None,
    });
    let (Some(cond), Some(key)) = (cond, rec.primary_key(chart)) else {
        return Ok(rec.clone());
    };
    let vars = rec.vars(entity).clone();
    let store = rc.store.clone();
    let chart2 = chart.clone();
    let entity_name = entity.name.clone();
    rc.counted_item(chart, key, async move {
        read::with_counts(store.as_ref(), &chart2, &entity_name, &cond, &vars)
            .await
            .map_err(Arc::new)
    })
    .await
    .map(|r| r.unwrap_or_else(|| rec.clone()))
}

/// A reference: the entity another's attributes name, through the DataLoader.
pub fn reference_field(chart: &Arc<Chart>, e: &Entity, name: &str, r: &Reference) -> Field {
    let optional = r
        .key
        .values()
        .any(|from| e.attributes.get(from).is_none_or(|a| a.optional));
    let chart = chart.clone();
    let target = r.entity.clone();
    let key = r.key.clone();
    let ty = if optional {
        TypeRef::named(&r.entity)
    } else {
        TypeRef::named_nn(&r.entity)
    };
    let mut f = Field::new(name, ty, move |ctx| {
        let chart = chart.clone();
        let target = target.clone();
        let key = key.clone();
        FieldFuture::new(async move {
            let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
            let r = Reference {
                entity: target.clone(),
                key: key.clone(),
                description: None,
            };
            let Some(pk) = reference_key(&chart, &obj.rec, &r) else {
                return Ok(None);
            };
            let found = load(rc(&ctx), &chart, pk).await.map_err(err)?;
            if let Some(rec) = &found {
                preload(
                    rc(&ctx),
                    &chart,
                    std::slice::from_ref(rec),
                    &[ctx.look_ahead()],
                )
                .await;
            }
            Ok(found.map(|rec| obj_value(rec, false)))
        })
    });
    if let Some(d) = &r.description {
        f = f.description(d);
    }
    f
}

fn page_args(ctx: &ResolverContext<'_>) -> PageArgs {
    let int = |n: &str| ctx.args.get(n).and_then(|v| v.i64().ok());
    let text = |n: &str| {
        ctx.args
            .get(n)
            .and_then(|v| v.string().ok().map(str::to_owned))
    };
    PageArgs {
        first: int("first"),
        after: text("after"),
        last: int("last"),
        before: text("before"),
    }
}

/// The values of a connection's own arguments, checked, with their key for prefetched
/// pages.
fn connection_vars(
    extra: &[(String, Type, bool)],
    given: &HashMap<String, String>,
) -> std::result::Result<(Vars, String), ApiError> {
    let mut vars = Vars::new();
    let mut key = String::new();
    for (name, ty, _) in extra {
        if let Some(v) = given.get(name) {
            let value = key_value(ty, name, v).map_err(|m| ApiError::bad_input(name, m))?;
            key.push_str(&format!("{name}={v};"));
            vars.insert(name.clone(), value);
        }
    }
    Ok((vars, key))
}

fn given_args(
    ctx: &ResolverContext<'_>,
    extra: &[(String, Type, bool)],
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (name, ..) in extra {
        if let Some(v) = ctx.args.get(name) {
            let text = v
                .enum_name()
                .ok()
                .map(str::to_owned)
                .or_else(|| v.string().ok().map(str::to_owned))
                .or_else(|| v.i64().ok().map(|n| n.to_string()));
            if let Some(t) = text {
                out.insert(name.clone(), t);
            }
        }
    }
    out
}

/// A connection: one page of children, from what the parent's resolver read ahead or
/// one Query now.
pub fn connection_field(chart: &Arc<Chart>, e: &Entity, name: &str, c: &Connection) -> Field {
    let extra = connection_arguments(chart, e, c.pattern);
    let child = match chart.patterns.get(&c.pattern).map(|p| &p.request) {
        Some(Request::Query { children, .. }) => children.clone(),
        _ => String::new(),
    };
    let chart2 = chart.clone();
    let owner = e.name.clone();
    let field = name.to_owned();
    let pattern = c.pattern;
    let cursor = cursor_name(e, name, c);
    let total = c.total.as_ref().map(|t| match t {
        Total::Counter(c) => (None, HashMap::from([(String::new(), c.clone())])),
        Total::ByArgument(by) => {
            let (arg, map) = by
                .iter()
                .next()
                .map(|(a, m)| (a.clone(), m.clone()))
                .unwrap_or_default();
            (Some(arg), map.into_iter().collect())
        }
    });
    let extra2 = extra.clone();
    let mut f = Field::new(
        name,
        TypeRef::named_nn(format!("{child}Connection")),
        move |ctx| {
            let chart = chart2.clone();
            let owner = owner.clone();
            let field = field.clone();
            let cursor = cursor.clone();
            let extra = extra2.clone();
            let total = total.clone();
            FieldFuture::new(async move {
                let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
                let rc = rc(&ctx);
                let args = page_args(&ctx);
                let given = given_args(&ctx, &extra);
                let (mut vars, extra_key) =
                    connection_vars(&extra, &given).map_err(|e| e.extend())?;
                let entity = &chart.entities[&owner];
                for (k, v) in obj.rec.vars(entity) {
                    vars.entry(k.clone()).or_insert_with(|| v.clone());
                }
                let p = &chart.patterns[&pattern];
                let connection =
                    read::connection_name(p, &cursor, &vars).map_err(|e| e.extend())?;
                let resolved = args
                    .resolve(&rc.cursors, &connection)
                    .map_err(|e| e.extend())?;
                let slot = format!("{field}|{}", args.key(&extra_key));
                let fetched = match obj.pages.get(&slot) {
                    Some(Ok(f)) => f.clone(),
                    Some(Err(e)) => return Err(err(e)),
                    None => read::page(rc.store.as_ref(), &chart, p, &vars, &resolved)
                        .await
                        .map_err(|e| e.extend())?,
                };
                let total = match &total {
                    None => None,
                    Some((by, counters)) => {
                        let which = match by {
                            None => String::new(),
                            Some(arg) => given.get(arg).cloned().unwrap_or_default(),
                        };
                        match counters.get(&which) {
                            Some(counter) => {
                                let rec = if obj.counted {
                                    obj.rec.clone()
                                } else {
                                    counted(rc, &chart, &obj.rec).await.map_err(err)?
                                };
                                Some(rec.count(counter))
                            }
                            None => None,
                        }
                    }
                };
                let index = match &p.request {
                    Request::Query { condition, .. } => condition.index.clone(),
                    _ => None,
                };
                Ok(Some(FieldValue::owned_any(Arc::new(conn(
                    rc,
                    &chart,
                    &connection,
                    &resolved,
                    fetched,
                    index.as_deref(),
                    total,
                )))))
            })
        },
    );
    // The connection's own arguments first, then the paging ones, as in every connection
    // of the API.
    for (name, ty, optional) in &extra {
        f = f.argument(argument(name, ty, *optional));
    }
    f = f
        .argument(InputValue::new("first", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)))
        .argument(InputValue::new("last", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("before", TypeRef::named(TypeRef::STRING)));
    if let Some(d) = &c.description {
        f = f.description(d);
    }
    f
}

/// What a connection's cursors are signed for: the chart's `cursor`, else `Owner.field`.
fn cursor_name(owner: &Entity, field: &str, c: &Connection) -> String {
    c.cursor
        .clone()
        .unwrap_or_else(|| format!("{}.{field}", owner.name))
}

/// Builds a connection from the children a Query returned: cuts the extra item, restores
/// the connection's order, keeps each edge's key for its cursor.
fn conn(
    rc: &RequestContext,
    chart: &Chart,
    connection: &str,
    args: &Resolved,
    fetched: Fetched,
    index: Option<&str>,
    total: Option<i64>,
) -> Conn {
    let Fetched {
        mut children, more, ..
    } = fetched;
    let more = more || children.len() > args.size as usize;
    children.truncate(args.size as usize);
    if !args.forward {
        children.reverse();
    }
    let keys: Vec<PageKey> = children
        .iter()
        .filter_map(|c| c.page_key(chart, index))
        .collect();
    let cursors = Arc::new(PageCursors::new(
        rc.cursors.clone(),
        connection.to_owned(),
        keys,
    ));
    let from_cursor = args.start.is_some();
    Conn {
        nodes: children,
        cursors,
        has_next: if args.forward { more } else { from_cursor },
        has_previous: if args.forward { from_cursor } else { more },
        total,
    }
}

/// A list: every child, read with one Query.
pub fn list_field(chart: &Arc<Chart>, e: &Entity, name: &str, l: &List) -> Field {
    let child = match chart.patterns.get(&l.pattern).map(|p| &p.request) {
        Some(Request::Query { children, .. }) => children.clone(),
        _ => String::new(),
    };
    let chart2 = chart.clone();
    let owner = e.name.clone();
    let field = name.to_owned();
    let pattern = l.pattern;
    let max = l.max;
    let mut f = Field::new(name, TypeRef::named_nn_list_nn(child), move |ctx| {
        let chart = chart2.clone();
        let owner = owner.clone();
        let field = field.clone();
        FieldFuture::new(async move {
            let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
            let fetched = match obj.pages.get(&format!("{field}|")) {
                Some(Ok(f)) => f.clone(),
                Some(Err(e)) => return Err(err(e)),
                None => {
                    let vars = obj.rec.vars(&chart.entities[&owner]);
                    let p = &chart.patterns[&pattern];
                    let f = read::page(rc(&ctx).store.as_ref(), &chart, p, vars, &whole_list(max))
                        .await
                        .map_err(|e| e.extend())?;
                    prime(rc(&ctx), &chart, &f).await;
                    f
                }
            };
            Ok(Some(FieldValue::list(
                fetched.children.into_iter().map(|c| obj_value(c, false)),
            )))
        })
    });
    if let Some(d) = &l.description {
        f = f.description(d);
    }
    f
}

/// A list is read whole, as one page of its most children.
fn whole_list(max: Option<u32>) -> Resolved {
    Resolved {
        size: max.unwrap_or(crate::collections::MAX_PAGE_SIZE),
        start: None,
        forward: true,
    }
}

pub fn page_info_type() -> Object {
    let flag = |name: &'static str, get: fn(&Conn) -> bool, desc: &'static str| {
        Field::new(name, TypeRef::named_nn(TypeRef::BOOLEAN), move |ctx| {
            let v = ctx.parent_value.downcast_ref::<Arc<Conn>>().map(|c| get(c));
            FieldFuture::Value(v.map(|v| FieldValue::value(Value::Boolean(v))))
        })
        .description(desc)
    };
    let cursor = |name: &'static str, last: bool, desc: &'static str| {
        Field::new(name, TypeRef::named(TypeRef::STRING), move |ctx| {
            let v = ctx.parent_value.downcast_ref::<Arc<Conn>>().and_then(|c| {
                let i = if last {
                    c.cursors.len().checked_sub(1)?
                } else {
                    0
                };
                c.cursors.cursor(i)
            });
            FieldFuture::Value(v.map(|v| FieldValue::value(Value::String(v))))
        })
        .description(desc)
    };
    Object::new("PageInfo")
        .description("Information about pagination in a connection.")
        .field(flag("hasNextPage", |c| c.has_next, "When paging forward: whether more edges follow. When paging backward: whether an edge follows the `before` cursor."))
        .field(flag("hasPreviousPage", |c| c.has_previous, "When paging backward: whether more edges precede. When paging forward: whether an edge precedes the `after` cursor."))
        .field(cursor("startCursor", false, "The cursor of the first edge, to page backward from."))
        .field(cursor("endCursor", true, "The cursor of the last edge, to page forward from."))
}

/// `{Child}Connection` and `{Child}Edge`.
pub fn connection_types(chart: &Chart, child: &str) -> (Object, Object) {
    let counted = chart.entities.values().all(|e| {
        e.connections.values().all(|c| {
            c.total.is_some()
                || !matches!(chart.patterns.get(&c.pattern).map(|p| &p.request), Some(Request::Query { children, .. }) if children == child)
        })
    });
    let edges = Field::new(
        "edges",
        TypeRef::named_nn_list_nn(format!("{child}Edge")),
        |ctx| {
            let edges = ctx.parent_value.downcast_ref::<Arc<Conn>>().map(|c| {
                FieldValue::list((0..c.nodes.len()).map(|index| {
                    FieldValue::owned_any(Edge {
                        conn: c.clone(),
                        index,
                    })
                }))
            });
            FieldFuture::Value(edges)
        },
    );
    let nodes = Field::new("nodes", TypeRef::named_nn_list_nn(child), |ctx| {
        let nodes = ctx
            .parent_value
            .downcast_ref::<Arc<Conn>>()
            .map(|c| FieldValue::list(c.nodes.iter().map(|n| obj_value(n.clone(), false))));
        FieldFuture::Value(nodes)
    })
    .description("The nodes of `edges`, for clients that need no cursors.");
    let page_info = Field::new("pageInfo", TypeRef::named_nn("PageInfo"), |ctx| {
        let c = ctx.parent_value.downcast_ref::<Arc<Conn>>().cloned();
        FieldFuture::Value(c.map(FieldValue::owned_any))
    });
    let total = Field::new(
        "totalCount",
        if counted {
            TypeRef::named_nn(TypeRef::INT)
        } else {
            TypeRef::named(TypeRef::INT)
        },
        |ctx| {
            let t = ctx
                .parent_value
                .downcast_ref::<Arc<Conn>>()
                .and_then(|c| c.total)
                .map(|t| Value::from(t.clamp(0, i32::MAX.into())));
            FieldFuture::Value(t.map(FieldValue::value))
        },
    )
    .description(if counted {
        "How many nodes the whole connection holds, from the parent's counter:\ncosts no request."
    } else {
        "How many nodes the whole connection holds, from the parent's counter: costs no request. Null where the chart keeps no counter for it."
    });
    let conn = Object::new(format!("{child}Connection"))
        .description(format!("A page of `{child}`s (Relay Cursor Connections)."))
        .field(edges)
        .field(nodes)
        .field(page_info)
        .field(total);
    let edge = Object::new(format!("{child}Edge"))
        .description(format!(
            "An edge: a `{child}` and the cursor that points at it."
        ))
        .field(
            Field::new("cursor", TypeRef::named_nn(TypeRef::STRING), |ctx| {
                let c = ctx
                    .parent_value
                    .downcast_ref::<Edge>()
                    .map(|e| e.conn.cursors.cursor(e.index).unwrap_or_default());
                FieldFuture::Value(c.map(|c| FieldValue::value(Value::String(c))))
            })
            .description("Opaque; pass it as `after` or `before` to page from this node."),
        )
        .field(Field::new("node", TypeRef::named_nn(child), |ctx| {
            let n = ctx
                .parent_value
                .downcast_ref::<Edge>()
                .map(|e| obj_value(e.conn.nodes[e.index].clone(), false));
            FieldFuture::Value(n)
        }));
    (conn, edge)
}

/// `Viewer`: the tenant and the member the token names, and its role.
pub fn viewer_type(chart: &Arc<Chart>) -> Object {
    let mut v = Object::new("Viewer").description("Who is asking.").field(
        Field::new("role", TypeRef::named("Role"), |ctx| {
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
        .description("What the caller may do there."),
    );
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
                        let Some(attr) = tenant_attribute(&chart, e) else {
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
            .description("The caller's tenant (the token's organization claim)."),
        );
        if let Some(viewer) = &chart.viewer {
            let chart2 = chart.clone();
            let tenant_attr = t.attribute.clone();
            let entity = viewer.entity.clone();
            let subject = viewer.subject.clone();
            v = v.field(
                Field::new(lower_first(&viewer.entity), TypeRef::named(&viewer.entity), move |ctx| {
                    let chart = chart2.clone();
                    let entity = entity.clone();
                    let subject = subject.clone();
                    let tenant_attr = tenant_attr.clone();
                    FieldFuture::new(async move {
                        let rc = rc(&ctx);
                        let Access::Tenant { org, subject: Some(sub), .. } = &rc.access else {
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
                        Ok(load(rc, &chart, pk).await.map_err(err)?.map(|r| obj_value(r, false)))
                    })
                })
                .description("The member whose key is the token's subject (`sub`); null when the subject names none."),
            );
        }
    }
    v
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The root: the chart's fields, `node`, `nodes`, `viewer`.
pub fn query_type(chart: Arc<Chart>) -> Object {
    let mut q = Object::new("Query");
    for (name, root) in &chart.query {
        let e = &chart.entities[&root.entity];
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
                        format!("at most {} ids", crate::store::validate::MAX_BATCH_GET_KEYS),
                    )
                    .extend());
                }
                let found = nodes(&ctx, &chart, &ids).await?;
                Ok(Some(FieldValue::list(found.into_iter().map(|n| n.unwrap_or(FieldValue::NULL)))))
            })
        })
        .argument(InputValue::new("ids", TypeRef::named_nn_list_nn(TypeRef::ID)))
        .description("Entities by global id, in the order asked, null where there is none: one BatchGetItem for up to 100 ids."),
    );
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
        .description("The caller: the tenant, member and role their token names. Every field is null with authentication off (the caller is nobody in particular)."),
    )
}

/// The keys of what `viewer` selects: the token's tenant and the member its subject names.
fn viewer_keys(ctx: &ResolverContext<'_>, chart: &Chart) -> Vec<PrimaryKey> {
    let (Some(t), Access::Tenant { org, subject, .. }) = (&chart.tenant, &rc(ctx).access) else {
        return Vec::new();
    };
    let look = ctx.look_ahead();
    let mut keys = Vec::new();
    let tenant = KeyValue::Text(org.to_string());
    let owner = &chart.entities[&t.entity];
    if look.field(&lower_first(&t.entity)).exists() {
        if let Some(attr) = tenant_attribute(chart, owner) {
            keys.extend(primary_key(owner, &Vars::from([(attr, tenant.clone())])).ok());
        }
    }
    if let (Some(v), Some(sub)) = (&chart.viewer, subject) {
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
    let mut keys = Vec::new();
    for id in ids {
        let (e, vars) = decode_global_id(chart, "id", id).map_err(|e| e.extend())?;
        keys.push((
            e.name.clone(),
            primary_key(e, &vars).map_err(|e| e.extend())?,
        ));
    }
    let rc = rc(ctx);
    let found = join_all(keys.into_iter().map(|(name, k)| async move {
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
            let mut args = PageArgs::default();
            let mut given = HashMap::new();
            for (n, value) in arguments {
                match (n.as_str(), value) {
                    ("first", Value::Number(x)) => args.first = x.as_i64(),
                    ("last", Value::Number(x)) => args.last = x.as_i64(),
                    ("after", Value::String(s)) => args.after = Some(s),
                    ("before", Value::String(s)) => args.before = Some(s),
                    (other, Value::Enum(s)) => {
                        given.insert(other.to_owned(), s.to_string());
                    }
                    (other, Value::String(s)) => {
                        given.insert(other.to_owned(), s);
                    }
                    (other, Value::Number(x)) => {
                        given.insert(other.to_owned(), x.to_string());
                    }
                    _ => {}
                }
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
            let slot = format!("{name}|{}", args.key(&extra_key));
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
    for (name, l) in &e.lists {
        if !ctx.look_ahead().field(name).exists() {
            continue;
        }
        let p = &chart.patterns[&l.pattern];
        let carries = matches!(&p.request, Request::Query { parent: Some(pp), .. } if pp == entity);
        jobs.push(Job {
            slot: format!("{name}|"),
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
                Some((name, l)) => (format!("{name}|"), whole_list(l.max)),
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
            (Some(cond), true) => read::with_counts(rc.store.as_ref(), chart, entity, cond, &vars)
                .await
                .map(|r| (r, true))
                .map_err(Arc::new),
            _ => {
                let pk = primary_key(e, &vars).map_err(Arc::new)?;
                load(rc, chart, pk).await.map(|r| (r, false))
            }
        }
    };
    let reads = jobs.iter().map(|j| {
        read::page(
            rc.store.as_ref(),
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
    if let Some(plain) = &e.plain_id {
        if let Ok(v) = key_value(&e.attributes[plain].ty, "id", id) {
            return Ok(Vars::from([(plain.clone(), v)]));
        }
    }
    let (found, vars) = decode_global_id(chart, "id", id).map_err(|e| e.extend())?;
    if found.name != e.name {
        return Err(ApiError::bad_input("id", format!("not the id of a {}", e.name)).extend());
    }
    Ok(vars)
}
