//! The resolvers of a chart's read API: what each field of the types [`super::build`]
//! declares answers, and the one store request behind it.
//!
//! - this file: the parent values, what every resolver shares (tenant checks, the
//!   DataLoader, references asked at once), an entity's own fields and its references;
//! - [`pages`]: connections and lists, `PageInfo`, the connection and edge types;
//! - [`root`]: the root fields (read ahead), `node`, `nodes`, `viewer`.

mod pages;
mod root;

pub use pages::{
    collection_field, collection_types, connection_field, connection_types, list_field,
    page_info_type,
};
pub use root::{query_type, viewer_type};

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dynamic::{Field, FieldFuture, FieldValue, ResolverContext, TypeRef};
use async_graphql::{ErrorExtensions, Value};

use super::read::{self, Fetched};
use super::record::{render, ItemKey, Record, Vars};
use super::type_ref;
use crate::auth::Access;
use crate::chart::format::Reference;
use crate::chart::kinds::Tenant;
use crate::chart::template::Value as KeyValue;
use crate::chart::types::Type;
use crate::chart::{Attribute, Chart, Entity, Request};
use crate::graphql::connection::PageCursors;
use crate::graphql::context::RequestContext;
use crate::graphql::errors::ApiError;
use crate::store::PrimaryKey;

/// An entity's object as a parent value: its record, and the pages its resolver read
/// ahead, by field and arguments.
#[derive(Clone)]
pub struct Obj {
    pub rec: Arc<Record>,
    pub pages: Arc<HashMap<String, Result<Fetched, Arc<ApiError>>>>,
    /// Whether the record holds its counter shards' counts.
    pub counted: bool,
}

impl Obj {
    /// A stored item as its entity's object, nothing read ahead.
    pub fn of(chart: &Chart, item: crate::store::Item, counted: bool) -> Result<Obj, ApiError> {
        Ok(Obj {
            rec: Arc::new(Record::decode(chart, item)?),
            pages: Arc::default(),
            counted,
        })
    }

    /// Asks the DataLoader at once for the references `selected` names (see [`preload`]).
    pub async fn preload(
        &self,
        rc: &RequestContext,
        chart: &Arc<Chart>,
        selected: async_graphql::Lookahead<'_>,
    ) {
        preload(rc, chart, std::slice::from_ref(&self.rec), &[selected]).await;
    }

    /// The object with the whole of its list `field` known (`items`, in order): selecting
    /// it reads nothing.
    pub fn with_list(
        mut self,
        chart: &Chart,
        field: &str,
        items: impl IntoIterator<Item = crate::store::Item>,
    ) -> Result<Obj, ApiError> {
        let children = items
            .into_iter()
            .map(|i| Record::decode(chart, i).map(Arc::new))
            .collect::<Result<_, _>>()?;
        let fetched = Fetched {
            parent: None,
            children,
            more: false,
        };
        let mut pages = (*self.pages).clone();
        pages.insert(page_slot(field, ""), Ok(fetched));
        self.pages = Arc::new(pages);
        Ok(self)
    }
}

/// Where an object keeps a page read ahead for its field `field`: the field and its page's
/// key (its paging and own arguments; empty for a list, read whole).
fn page_slot(field: &str, key: &str) -> String {
    format!("{field}|{key}")
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
    let Some(attr) = chart.tenant_attribute(rec.entity(chart)) else {
        return true;
    };
    match (&rc.access, rec.text(&attr)) {
        (Access::Unrestricted, _) => true,
        (_, Some(value)) => Tenant::parse(value).is_ok_and(|s| rc.sees(&s)),
        (_, None) => false,
    }
}

/// [`visible`] by the entity's resolved binding, without a lookup: what a page holds is
/// checked child by child.
fn seen(rc: &RequestContext, chart: &Chart, rec: &Record) -> bool {
    if matches!(rc.access, Access::Unrestricted) {
        return true;
    }
    match &rec.entity(chart).binding {
        crate::chart::Binding::Key(a) | crate::chart::Binding::Condition(a) => {
            rec.text(a).is_some_and(|v| rc.sees(v))
        }
        _ => true,
    }
}

/// Whether the caller may see what a key names, before reading it: `Some(false)` when the
/// key names another tenant, `None` when the key does not say.
fn key_visible(rc: &RequestContext, chart: &Chart, e: &Entity, vars: &Vars) -> Option<bool> {
    let attr = chart.tenant_attribute(e)?;
    match vars.get(&attr)? {
        KeyValue::Text(t) => Some(Tenant::parse(t).is_ok_and(|s| rc.sees(&s))),
        KeyValue::Int(_) => None,
    }
}

/// An entity's item's place from its key variables: its table and primary key.
fn primary_key(e: &Entity, vars: &Vars) -> std::result::Result<ItemKey, ApiError> {
    Ok(ItemKey {
        table: e.table,
        key: PrimaryKey::new(render(&e.key.pk, vars)?, render(&e.key.sk, vars)?),
    })
}

/// Loads an item by key through the DataLoader, as the caller may see it.
async fn load(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    key: ItemKey,
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
        .filter_map(|r| Some((r.item_key(chart)?, Ok(Some(r.clone())))))
        .collect();
    if !primed.is_empty() {
        rc.items(chart).prime_many(primed).await;
    }
}

/// The key a reference of `rec` names, when every part of it is there.
fn reference_key(chart: &Chart, rec: &Record, r: &Reference) -> Option<ItemKey> {
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
    keys.sort();
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
    let declared = a.clone();
    let sharded = matches!(a.ty, Type::Counter)
        && chart
            .entities
            .values()
            .any(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == e.name));
    let mut f = Field::new(name, type_ref(&a.ty, a.optional), move |ctx| {
        let obj = ctx.parent_value.downcast_ref::<Obj>();
        let optional = declared.optional;
        if !sharded || obj.is_some_and(|o| o.counted) {
            // Answered from the record in hand: no future to box, nothing to clone.
            let v = obj.map(|o| o.rec.value(&chart, &attr, &declared));
            return FieldFuture::Value(v.and_then(|v| answered(v, optional)));
        }
        let chart = chart.clone();
        let attr = attr.clone();
        let declared = declared.clone();
        FieldFuture::new(async move {
            let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
            let counted = counted(rc(&ctx), &chart, &obj.rec).await.map_err(err)?;
            Ok(answered(counted.value(&chart, &attr, &declared), optional))
        })
    });
    if let Some(d) = &a.description {
        f = f.description(d);
    }
    f
}

/// A value as a field answers it: a null of an optional one as no value at all, which
/// every type takes (async-graphql's dynamic schema refuses a null value where a list, an
/// enum or an object is expected: "expects an array").
pub(in crate::graphql) fn answered<'a>(v: Value, optional: bool) -> Option<FieldValue<'a>> {
    match v {
        Value::Null if optional => None,
        v => Some(FieldValue::value(v)),
    }
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
    let (Some(cond), Some(key)) = (cond, rec.item_key(chart)) else {
        return Ok(rec.clone());
    };
    let vars = rec.vars(entity).clone();
    let store = chart
        .store_of(&rc.store, entity.table)
        .map_err(|e| Arc::new(e.into()))?;
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
    let reference = Arc::new(r.clone());
    let ty = if optional {
        TypeRef::named(&r.entity)
    } else {
        TypeRef::named_nn(&r.entity)
    };
    let mut f = Field::new(name, ty, move |ctx| {
        let chart = chart.clone();
        let reference = reference.clone();
        FieldFuture::new(async move {
            let obj = ctx.parent_value.try_downcast_ref::<Obj>()?;
            let Some(pk) = reference_key(&chart, &obj.rec, &reference) else {
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
