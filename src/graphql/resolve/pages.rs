//! Connections and lists: one page of children from what the parent's resolver read
//! ahead or one Query now, cursors signed for their connection; the types that carry them.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef,
    Union,
};
use async_graphql::{ErrorExtensions, Value};

use super::super::read::{self, cursor_name, Fetched};
use super::super::record::{key_value, Vars};
use super::super::{argument, connection_arguments};
use super::*;
use crate::chart::format::{Connection, List, Total};
use crate::chart::schema_names::{collection_name, kind_field};
use crate::chart::types::Type;
use crate::chart::{Chart, Entity, Request};
use crate::graphql::connection::{PageArgs, PageCursors, Resolved};
use crate::graphql::context::RequestContext;
use crate::graphql::errors::ApiError;
use crate::store::PageKey;

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
pub(super) fn connection_vars(
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
                let slot = page_slot(&field, &args.key(&extra_key));
                let fetched = match obj.pages.get(&slot) {
                    Some(Ok(f)) => f.clone(),
                    Some(Err(e)) => return Err(err(e)),
                    None => read::page(&rc.store, &chart, p, &vars, &resolved)
                        .await
                        .map_err(|e| e.extend())?,
                };
                let look = ctx.look_ahead();
                let total = match &total {
                    // Counted only when asked.
                    _ if !look.field("totalCount").exists() => None,
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
                let index = index_of(p);
                let page = conn(rc, &chart, &connection, &resolved, fetched, index, total);
                Ok(Some(answer(rc, &chart, page, &look).await))
            })
        },
    );
    f = paged(f, &extra);
    if let Some(d) = &c.description {
        f = f.description(d);
    }
    f
}

/// A root field that lists what a Scan pattern finds (`[query.NAME]` on a Scan): a
/// connection paged forward from the last-read key, each page one Scan of the sparse
/// index, filtered to the caller's tenant. Cursors are signed for `Query.NAME`.
pub fn scan_field(chart: &Arc<Chart>, name: &str, pattern: u32, child: &str) -> Field {
    let chart2 = chart.clone();
    let field = name.to_owned();
    let connection = format!("Query.{name}");
    Field::new(
        name,
        TypeRef::named_nn(format!("{child}Connection")),
        move |ctx| {
            let chart = chart2.clone();
            let field = field.clone();
            let connection = connection.clone();
            FieldFuture::new(async move {
                let rc = rc(&ctx);
                let args = page_args(&ctx);
                if args.last.is_some() || args.before.is_some() {
                    let which = if args.before.is_some() { "before" } else { "last" };
                    return Err(ApiError::bad_input(
                        which,
                        format!("`{field}` is a Scan, which reads forward only: page with `first` and `after`"),
                    )
                    .extend());
                }
                let resolved = args
                    .resolve(&rc.cursors, &connection)
                    .map_err(|e| e.extend())?;
                let p = &chart.patterns[&pattern];
                let index = match &p.request {
                    Request::Scan { index, .. } => Some(index.clone()),
                    _ => None,
                };
                let tenant = rc.access.org().map(|t| t.as_str().to_owned());
                let fetched =
                    read::scan_page(&rc.store, &chart, p, tenant.as_deref(), &resolved)
                        .await
                        .map_err(|e| e.extend())?;
                let page = conn(
                    rc,
                    &chart,
                    &connection,
                    &resolved,
                    fetched,
                    index.as_deref(),
                    None,
                );
                Ok(Some(answer(rc, &chart, page, &ctx.look_ahead()).await))
            })
        },
    )
    .argument(InputValue::new("first", TypeRef::named(TypeRef::INT)))
    .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)))
    .argument(InputValue::new("last", TypeRef::named(TypeRef::INT)).description("Refused: a Scan reads forward only."))
    .argument(InputValue::new("before", TypeRef::named(TypeRef::STRING)).description("Refused: a Scan reads forward only."))
}

/// A root field that lists what a Query pattern of no parent finds (`[query.NAME]` on a
/// Query whose children are its entity: a user's sessions by an index keyed by the user):
/// a connection whose arguments are the key condition's variables, each page one Query,
/// later pages from the last-seen key. Cursors are signed for `Query.NAME` and the
/// partition they page.
pub fn query_field(chart: &Arc<Chart>, name: &str, pattern: u32, child: &str) -> Field {
    let extra = crate::graphql::schema::pattern_arguments(chart, None, pattern);
    let chart2 = chart.clone();
    let cursor = format!("Query.{name}");
    let extra2 = extra.clone();
    let f = Field::new(
        name,
        TypeRef::named_nn(format!("{child}Connection")),
        move |ctx| {
            let chart = chart2.clone();
            let cursor = cursor.clone();
            let extra = extra2.clone();
            FieldFuture::new(async move {
                let rc = rc(&ctx);
                let args = page_args(&ctx);
                let given = given_args(&ctx, &extra);
                let (vars, _) = connection_vars(&extra, &given).map_err(|e| e.extend())?;
                let p = &chart.patterns[&pattern];
                let connection =
                    read::connection_name(p, &cursor, &vars).map_err(|e| e.extend())?;
                let resolved = args
                    .resolve(&rc.cursors, &connection)
                    .map_err(|e| e.extend())?;
                let fetched = read::page(&rc.store, &chart, p, &vars, &resolved)
                    .await
                    .map_err(|e| e.extend())?;
                let index = index_of(p);
                let page = conn(rc, &chart, &connection, &resolved, fetched, index, None);
                Ok(Some(answer(rc, &chart, page, &ctx.look_ahead()).await))
            })
        },
    );
    paged(f, &extra)
}

/// A connection field's arguments: its own first (`extra`), then the paging ones, as in
/// every connection of the API.
fn paged(mut f: Field, extra: &[(String, crate::chart::types::Type, bool)]) -> Field {
    for (name, ty, optional) in extra {
        f = f.argument(argument(name, ty, *optional));
    }
    f.argument(InputValue::new("first", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)))
        .argument(InputValue::new("last", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("before", TypeRef::named(TypeRef::STRING)))
}

/// The index a Query pattern reads (`None`: the table, or no Query).
fn index_of(p: &crate::chart::Pattern) -> Option<&str> {
    match &p.request {
        Request::Query { condition, .. } | Request::Collection { condition, .. } => {
            condition.index.as_deref()
        }
        _ => None,
    }
}

/// A connection's page as answered, the references selected under its nodes asked at
/// once (the nodes' fields resolve one after the other, each node's at once).
async fn answer(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    page: Conn,
    look: &async_graphql::Lookahead<'_>,
) -> FieldValue<'static> {
    preload(
        rc,
        chart,
        &page.nodes,
        &[look.field("nodes"), look.field("edges").field("node")],
    )
    .await;
    FieldValue::owned_any(Arc::new(page))
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
    // Only the caller's: a key condition the chart proves bound to one tenant reads no
    // other's, and this holds whatever a table holds that no writer of ours made.
    children.retain(|c| seen(rc, chart, c));
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
            let fetched = match obj.pages.get(&page_slot(&field, "")) {
                Some(Ok(f)) => f.clone(),
                Some(Err(e)) => return Err(err(e)),
                None => {
                    let vars = obj.rec.vars(&chart.entities[&owner]);
                    let p = &chart.patterns[&pattern];
                    let f = read::page(&rc(&ctx).store, &chart, p, vars, &whole_list(max))
                        .await
                        .map_err(|e| e.extend())?;
                    prime(rc(&ctx), &chart, &f).await;
                    f
                }
            };
            preload(rc(&ctx), &chart, &fetched.children, &[ctx.look_ahead()]).await;
            let rc = rc(&ctx);
            Ok(Some(FieldValue::list(
                fetched
                    .children
                    .into_iter()
                    .filter(|c| seen(rc, &chart, c))
                    .map(|c| obj_value(c, false)),
            )))
        })
    });
    if let Some(d) = &l.description {
        f = f.description(d);
    }
    f
}

/// A list is read whole, as one page of its most children.
pub(super) fn whole_list(max: Option<u32>) -> Resolved {
    Resolved {
        size: max.unwrap_or(crate::chart::MAX_PAGE_SIZE),
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
        .field(flag("hasNextPage", |c| c.has_next, "When paging forward: whether more edges follow. When paging backward: whether an\nedge follows the `before` cursor."))
        .field(flag("hasPreviousPage", |c| c.has_previous, "When paging backward: whether more edges precede. When paging forward: whether an\nedge precedes the `after` cursor."))
        .field(cursor("startCursor", false, "The cursor of the first edge, to page backward from."))
        .field(cursor("endCursor", true, "The cursor of the last edge, to page forward from."))
}

/// A connection's `edges`, each an edge of type `edge`.
fn edges_field(edge: &str) -> Field {
    Field::new("edges", TypeRef::named_nn_list_nn(edge), |ctx| {
        let edges = ctx.parent_value.downcast_ref::<Arc<Conn>>().map(|c| {
            FieldValue::list((0..c.nodes.len()).map(|index| {
                FieldValue::owned_any(Edge {
                    conn: c.clone(),
                    index,
                })
            }))
        });
        FieldFuture::Value(edges)
    })
}

/// A connection's `pageInfo`.
fn page_info_field() -> Field {
    Field::new("pageInfo", TypeRef::named_nn("PageInfo"), |ctx| {
        let c = ctx.parent_value.downcast_ref::<Arc<Conn>>().cloned();
        FieldFuture::Value(c.map(FieldValue::owned_any))
    })
}

/// An edge's `cursor`.
fn cursor_field(description: &'static str) -> Field {
    Field::new("cursor", TypeRef::named_nn(TypeRef::STRING), |ctx| {
        let c = ctx
            .parent_value
            .downcast_ref::<Edge>()
            .map(|e| e.conn.cursors.cursor(e.index).unwrap_or_default());
        FieldFuture::Value(c.map(|c| FieldValue::value(Value::String(c))))
    })
    .description(description)
}

/// `{Child}Connection` and `{Child}Edge`.
pub fn connection_types(chart: &Chart, child: &str) -> (Object, Object) {
    let counted = chart.entities.values().all(|e| {
        e.connections.values().all(|c| {
            c.total.is_some()
                || !matches!(chart.patterns.get(&c.pattern).map(|p| &p.request), Some(Request::Query { children, .. }) if children == child)
        })
    }) && !chart
        .patterns
        .values()
        .any(|p| matches!(&p.request, Request::Scan { children, .. } if children == child));
    let edges = edges_field(&format!("{child}Edge"));
    let nodes = Field::new("nodes", TypeRef::named_nn_list_nn(child), |ctx| {
        let nodes = ctx
            .parent_value
            .downcast_ref::<Arc<Conn>>()
            .map(|c| FieldValue::list(c.nodes.iter().map(|n| obj_value(n.clone(), false))));
        FieldFuture::Value(nodes)
    })
    .description("The nodes of `edges`, for clients that need no cursors.");
    let page_info = page_info_field();
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
        .field(cursor_field(
            "Opaque; pass it as `after` or `before` to page from this node.",
        ))
        .field(Field::new("node", TypeRef::named_nn(child), |ctx| {
            let n = ctx
                .parent_value
                .downcast_ref::<Edge>()
                .map(|e| obj_value(e.conn.nodes[e.index].clone(), false));
            FieldFuture::Value(n)
        }));
    (conn, edge)
}

/// A collection's types: the union of its kinds, the enum naming them, its connection
/// (`edges` and `nodes` over the mix in sort order, and each kind's nodes typed) and its
/// edge.
pub fn collection_types(
    owner: &Entity,
    field: &str,
    kinds: &[String],
) -> (Union, Enum, Object, Object) {
    let name = collection_name(owner, field);
    let item = format!("{name}Item");
    let mut union = Union::new(&item).description(format!(
        "One item of `{}.{field}`: {}.",
        owner.name,
        kinds.join(", ")
    ));
    let mut kind = Enum::new(format!("{name}Kind")).description(format!(
        "A kind of `{}.{field}`'s items, to page it alone.",
        owner.name
    ));
    for k in kinds {
        union = union.possible_type(k);
        kind = kind.item(EnumItem::new(k));
    }
    let typed = |rec: &Arc<Record>| obj_value(rec.clone(), false).with_type(rec.entity.to_string());
    let mut conn = Object::new(format!("{name}Connection"))
        .description(format!(
            "A page of `{}.{field}`: its items of every kind in sort order, read by one Query; each kind's among them typed.",
            owner.name
        ))
        .field(edges_field(&format!("{name}Edge")))
        .field(
            Field::new("nodes", TypeRef::named_nn_list_nn(&item), move |ctx| {
                let nodes = ctx
                    .parent_value
                    .downcast_ref::<Arc<Conn>>()
                    .map(|c| FieldValue::list(c.nodes.iter().map(typed)));
                FieldFuture::Value(nodes)
            })
            .description("The nodes of `edges`, of every kind, in sort order."),
        )
        .field(page_info_field());
    for k in kinds {
        let of = k.clone();
        conn = conn.field(
            Field::new(kind_field(k), TypeRef::named_nn_list_nn(k), move |ctx| {
                let of = of.clone();
                let nodes = ctx.parent_value.downcast_ref::<Arc<Conn>>().map(|c| {
                    FieldValue::list(
                        c.nodes
                            .iter()
                            .filter(|n| *n.entity == *of)
                            .map(|n| obj_value(n.clone(), false)),
                    )
                });
                FieldFuture::Value(nodes)
            })
            .description(format!(
                "The page's `{k}` items, in sort order: from the same Query."
            )),
        );
    }
    let edge = Object::new(format!("{name}Edge"))
        .field(cursor_field(
            "Opaque; pass it as `after` or `before` to page from this item.",
        ))
        .field(Field::new("node", TypeRef::named_nn(&item), move |ctx| {
            let n = ctx
                .parent_value
                .downcast_ref::<Edge>()
                .map(|e| typed(&e.conn.nodes[e.index]));
            FieldFuture::Value(n)
        }));
    (union, kind, conn, edge)
}

/// A collection of several kinds: one page of its items in sort order, from what the
/// owner's resolver read ahead (with the owner, on a first page) or one Query now; with
/// `kind`, a page of that kind alone, a Query of its prefix. Cursors are signed for the
/// collection (and the kind).
pub fn collection_field(chart: &Arc<Chart>, e: &Entity, name: &str, c: &Connection) -> Field {
    let chart2 = chart.clone();
    let owner = e.name.clone();
    let field = name.to_owned();
    let pattern = c.pattern;
    let cursor = cursor_name(e, name, c);
    let union = collection_name(e, name);
    let mut f = Field::new(
        name,
        TypeRef::named_nn(format!("{union}Connection")),
        move |ctx| {
            let chart = chart2.clone();
            let owner = owner.clone();
            let field = field.clone();
            let cursor = cursor.clone();
            FieldFuture::new(async move {
                let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
                let rc = rc(&ctx);
                let args = page_args(&ctx);
                let kind = ctx
                    .args
                    .get("kind")
                    .and_then(|v| v.enum_name().ok().map(str::to_owned));
                let vars = obj.rec.vars(&chart.entities[&owner]);
                let p = &chart.patterns[&pattern];
                let mut connection =
                    read::connection_name(p, &cursor, vars).map_err(|e| e.extend())?;
                if let Some(k) = &kind {
                    connection.push_str(&format!("#{k}"));
                }
                let resolved = args
                    .resolve(&rc.cursors, &connection)
                    .map_err(|e| e.extend())?;
                let slot = page_slot(&field, &args.key(kind.as_deref().unwrap_or("")));
                let fetched = match (obj.pages.get(&slot), &kind) {
                    (Some(Ok(f)), None) => f.clone(),
                    (Some(Err(e)), None) => return Err(err(e)),
                    (_, Some(k)) => read::kind_page(&rc.store, &chart, p, k, vars, &resolved)
                        .await
                        .map_err(|e| e.extend())?,
                    (None, None) => read::page(&rc.store, &chart, p, vars, &resolved)
                        .await
                        .map_err(|e| e.extend())?,
                };
                let index = index_of(p);
                let page = conn(rc, &chart, &connection, &resolved, fetched, index, None);
                let look = ctx.look_ahead();
                preload(
                    rc,
                    &chart,
                    &page.nodes,
                    &[look.field("nodes"), look.field("edges").field("node")],
                )
                .await;
                Ok(Some(FieldValue::owned_any(Arc::new(page))))
            })
        },
    )
    .argument(
        InputValue::new("kind", TypeRef::named(format!("{union}Kind")))
            .description("One kind alone: a Query of its items only."),
    );
    f = paged(f, &[]);
    if let Some(d) = &c.description {
        f = f.description(d);
    }
    f
}
