//! A chart's mutations, served from its declarations (`docs/CHART.md`, "Writes"): for each
//! `[mutations.NAME]` an input object, a payload and a field of the Mutation root, whose
//! write [`write`] makes.
//!
//! - create: `NAME(input: NAMEInput!)`, the input every attribute a caller gives (not the
//!   counters, the version, the life cycle's state or what the writes give, `auto`), and
//!   `clientToken` where the mutation has a token marker;
//! - update: the item's key attributes (or `id`), `expectedVersion` when the entity is
//!   versioned, and each attribute it may change, optional (left out: unchanged; `null`:
//!   removed, for an optional attribute);
//! - delete: the item's key attributes (or `id`), and `expectedVersion`;
//! - the payload: the entity's object as written (as deleted), with `deleted…Id` for a
//!   delete and `replayed` where a client token may replay.

mod input;
mod write;

pub(super) use input::stored;
pub(super) use write::inherited;

/// The counter shards a new item of `e` is created with (none where `e` has none):
/// what `itemgraph migrate` gives an item from before its shards.
pub(crate) fn shard_items(
    chart: &crate::chart::Chart,
    e: &crate::chart::Entity,
    item: &crate::store::Item,
) -> Option<Vec<crate::store::Item>> {
    write::shard_items(chart, e, item)
}

pub(super) use crate::chart::schema_names::{child_input_name, input_name, payload_name};
use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputObject, InputValue, Object, SchemaBuilder, TypeRef,
};
use async_graphql::{ErrorExtensions, Value};

use super::record::Record;
use super::{lower_first, Obj};
use crate::chart::types::Type;
use crate::chart::{Action, Chart, Entity, Every, Mutation};
use crate::graphql::context::RequestContext;

/// Registers the chart's mutations: the input objects of its shapes and mutations, the
/// payloads and the Mutation root.
pub fn register(schema: SchemaBuilder, chart: &Arc<Chart>) -> SchemaBuilder {
    let mut root = Object::new("Mutation");
    for m in chart.mutations.values() {
        root = root.field(field(chart, m));
    }
    register_types(schema, chart).register(root)
}

/// Registers the types of the chart's mutations (the input objects of its shapes, of its
/// maps' entries and of its mutations, the payloads), for a Mutation root that holds their
/// [`field`]s.
pub fn register_types(mut schema: SchemaBuilder, chart: &Arc<Chart>) -> SchemaBuilder {
    // One entry input a map element type (`IntEntryInput`), whichever attribute has it.
    for (_, of) in super::map_elements(chart) {
        schema = schema.register(input::map_entry_type(of));
    }
    for (name, fields) in &chart.shapes {
        let mut obj = InputObject::new(input::shape_input(name));
        for (field, a) in fields {
            let mut f = InputValue::new(field, input::type_ref(&a.ty, !a.optional));
            if let Some(d) = &a.description {
                f = f.description(d);
            }
            obj = obj.field(f);
        }
        schema = schema.register(obj);
    }
    let mut children = std::collections::HashSet::new();
    for m in chart.mutations.values() {
        let e = &chart.entities[&m.entity];
        if let Some(every) = &m.every {
            schema = schema
                .register(bulk_input_type(m, e, every))
                .register(bulk_payload_type(m, e, every));
            continue;
        }
        schema = schema
            .register(input_type(chart, m, e))
            .register(payload_type(m, e));
        for (list, description) in &m.with {
            if let Some(child) = crate::chart::list_child(&chart.entities, &chart.patterns, e, list)
            {
                if children.insert(child.name.clone()) {
                    schema = schema.register(child_input(m, e, list, child, description));
                }
            }
        }
    }
    schema
}

/// The input object of a child written with its parent (`OrderLineInput`): what the
/// child takes from its caller, less what it takes from its parent; the mutation's
/// `input` says the order and descriptions of its fields as `list.field`.
fn child_input(
    m: &Mutation,
    parent: &Entity,
    list: &str,
    child: &Entity,
    description: &str,
) -> InputObject {
    let inherited = write::inherited(parent, child);
    let fields: Vec<(String, TypeRef, Option<String>)> = given_on_create(child)
        .filter(|(name, _)| !inherited.contains(&name.as_str()))
        .map(|(name, a)| {
            (
                name.clone(),
                input::type_ref(&a.ty, !a.optional && a.lifetime.is_none()),
                a.description.clone(),
            )
        })
        .collect();
    let prefix = format!("{list}.");
    let declared = m
        .input
        .iter()
        .filter_map(|(k, d)| k.strip_prefix(&prefix).map(|f| (f.to_owned(), d.clone())));
    let mut obj = InputObject::new(child_input_name(child));
    if !description.is_empty() {
        obj = obj.description(description);
    }
    for (name, ty, description) in ordered(fields, declared) {
        let mut f = InputValue::new(name, ty);
        if let Some(d) = description {
            f = f.description(d);
        }
        obj = obj.field(f);
    }
    obj
}

/// Input fields in the declared order, with the declared descriptions (`""`: none), then
/// the rest.
fn ordered(
    mut fields: Vec<(String, TypeRef, Option<String>)>,
    declared: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, TypeRef, Option<String>)> {
    let mut out = Vec::with_capacity(fields.len());
    for (name, description) in declared {
        if let Some(i) = fields.iter().position(|(n, _, _)| *n == name) {
            let (n, ty, _) = fields.remove(i);
            out.push((n, ty, (!description.is_empty()).then_some(description)));
        }
    }
    out.extend(fields);
    out
}

/// The Mutation root's field of `m`.
pub fn field(chart: &Arc<Chart>, m: &Mutation) -> Field {
    if let Some(every) = &m.every {
        return bulk_field(chart, m, &chart.entities[&m.entity], every);
    }
    mutation_field(chart, m, &chart.entities[&m.entity])
}

/// A bulk mutation's input: the key values of the Query pattern whose items it writes,
/// and for an update the fields it sets on each (each optional: left out, unchanged).
fn bulk_input_type(m: &Mutation, e: &Entity, every: &Every) -> InputObject {
    let fields = every
        .inputs
        .iter()
        .map(|(name, ty, optional)| {
            let description = e.attributes.get(name).and_then(|a| a.description.clone());
            (name.clone(), input::type_ref(ty, !optional), description)
        })
        .chain(m.fields.iter().map(|f| {
            let a = &e.attributes[f];
            (
                f.clone(),
                input::type_ref(&a.ty, false),
                a.description.clone(),
            )
        }))
        .collect();
    input_object(m, fields)
}

/// A bulk delete's payload: how many it deleted, and whether more are left.
fn bulk_payload_type(m: &Mutation, e: &Entity, every: &Every) -> Object {
    let plural = crate::chart::words(&crate::chart::plural(&e.name));
    let answer = |ctx: &async_graphql::dynamic::ResolverContext<'_>| {
        ctx.parent_value
            .downcast_ref::<write::Deleted>()
            .map(|d| (d.count, d.more))
    };
    let (count, did) = if m.action == Action::Update {
        ("updatedCount", "updated")
    } else {
        ("deletedCount", "deleted")
    };
    Object::new(payload_name(m))
        .field(
            Field::new(count, TypeRef::named_nn(TypeRef::INT), move |ctx| {
                FieldFuture::Value(
                    answer(&ctx).map(|(n, _)| FieldValue::value(Value::from(n as u64))),
                )
            })
            .description(m.payload.get(count).cloned().unwrap_or_else(|| {
                format!("How many {plural} this call {did}: at most {}.", every.max)
            })),
        )
        .field(
            Field::new("more", TypeRef::named_nn(TypeRef::BOOLEAN), move |ctx| {
                FieldFuture::Value(
                    answer(&ctx).map(|(_, more)| FieldValue::value(Value::Boolean(more))),
                )
            })
            .description(m.payload.get("more").cloned().unwrap_or_else(|| {
                format!(
                    "True when more than {} were found: the rest are left, for another call.",
                    every.max
                )
            })),
        )
}

fn bulk_field(chart: &Arc<Chart>, m: &Mutation, e: &Entity, every: &Every) -> Field {
    let plural = crate::chart::plural(&e.name);
    let description = m.description.clone().unwrap_or_else(|| {
        format!(
            "{} every {} pattern {} finds, at most {} a call. Requests: the Query, then {}.",
            if m.action == Action::Update {
                "Updates"
            } else {
                "Deletes"
            },
            e.name,
            every.pattern,
            every.max,
            match (every.atomic, m.action) {
                (true, _) => "one TransactWriteItems, all or nothing".to_owned(),
                (false, Action::Update) => format!(
                    "a TransactWriteItems of each 100 {plural}, at most {}",
                    every.writes(m.action)
                ),
                (false, _) => format!(
                    "a BatchWriteItem of each 25 {plural}, at most {}",
                    every.writes(m.action)
                ),
            }
        )
    });
    let chart = chart.clone();
    let name = m.name.clone();
    Field::new(&m.name, TypeRef::named_nn(payload_name(m)), move |ctx| {
        let chart = chart.clone();
        let name = name.clone();
        FieldFuture::new(async move {
            let m = &chart.mutations[&name];
            let input = match ctx.args.try_get("input")?.as_value() {
                Value::Object(o) => o.clone(),
                _ => Default::default(),
            };
            let rc = ctx.ctx.data_unchecked::<RequestContext>();
            let deleted = write::run_every(rc, &chart, m, &input)
                .await
                .map_err(|e| e.extend())?;
            rc.after_write_items(Vec::new()).await;
            Ok(Some(FieldValue::owned_any(deleted)))
        })
    })
    .argument(InputValue::new("input", TypeRef::named_nn(input_name(m))))
    .description(description)
}

/// The input field that names the item by id: `id`, or the entity's plain id
/// (`ticketId`), which takes the global id too.
pub(super) fn id_field(e: &Entity) -> &str {
    e.plain_id.as_deref().unwrap_or("id")
}

/// The attributes a create takes from its caller.
pub(super) fn given_on_create(
    e: &Entity,
) -> impl Iterator<Item = (&String, &crate::chart::Attribute)> {
    e.attributes.iter().filter(|(name, a)| {
        a.auto.is_none()
            && a.on_create.is_none()
            && a.computed.is_none()
            && input::writable(&a.ty)
            && e.writes.version.as_deref() != Some(name.as_str())
            && e.writes
                .lifecycle
                .as_ref()
                .is_none_or(|l| l.attribute != **name)
    })
}

fn input_type(chart: &Chart, m: &Mutation, e: &Entity) -> InputObject {
    // Each field: its name, type and description, in the default order.
    let mut fields: Vec<(String, TypeRef, Option<String>)> = Vec::new();
    let key = |fields: &mut Vec<(String, TypeRef, Option<String>)>| {
        if m.by_id {
            fields.push((
                id_field(e).to_owned(),
                TypeRef::named_nn(TypeRef::ID),
                Some(match &e.plain_id {
                    Some(p) => format!(
                        "The {}'s global `id` or its plain `{p}`.",
                        crate::chart::words(&e.name)
                    ),
                    None => format!("The {}'s global `id`.", crate::chart::words(&e.name)),
                }),
            ));
            return;
        }
        for v in e.key.pk.vars().chain(e.key.sk.vars()) {
            if fields.iter().any(|(n, _, _)| *n == v.name) {
                continue;
            }
            let a = &e.attributes[&v.name];
            fields.push((
                v.name.clone(),
                input::type_ref(&a.ty, true),
                a.description.clone(),
            ));
        }
    };
    let version = |fields: &mut Vec<(String, TypeRef, Option<String>)>, required: bool| {
        if e.writes.version.is_some() {
            fields.push((
                "expectedVersion".to_owned(),
                if required {
                    TypeRef::named_nn(TypeRef::INT)
                } else {
                    TypeRef::named(TypeRef::INT)
                },
                Some(format!(
                    "The `version` the {} is based on. When the {} has moved on since, nothing \
                     is written and the answer is `VERSION_MISMATCH` with `extensions.currentVersion`.",
                    if m.action == Action::Delete { "delete" } else { "change" },
                    crate::chart::words(&e.name),
                )),
            ));
        }
    };
    match m.action {
        Action::Create => {
            for (name, a) in given_on_create(e) {
                fields.push((
                    name.clone(),
                    input::type_ref(
                        &a.ty,
                        !a.optional && !matches!(a.ty, Type::Counter) && a.lifetime.is_none(),
                    ),
                    a.description.clone(),
                ));
            }
            for list in m.with.keys() {
                let Some(child) =
                    crate::chart::list_child(&chart.entities, &chart.patterns, e, list)
                else {
                    continue;
                };
                let min = e.lists[list].min.unwrap_or(0);
                let name = child_input_name(child);
                fields.push((
                    list.clone(),
                    if min > 0 {
                        TypeRef::named_nn_list_nn(name)
                    } else {
                        TypeRef::named_nn_list(name)
                    },
                    e.lists[list].description.clone(),
                ));
            }
            if m.token.is_some() {
                fields.push((
                    "clientToken".to_owned(),
                    TypeRef::named(TypeRef::STRING),
                    Some(
                        "Makes retrying safe: 1 to 64 of `[A-Za-z0-9_-]`, unique per intended write. \
                         A retry with the same token creates nothing new and answers the item the \
                         first call created, with `replayed: true`."
                            .to_owned(),
                    ),
                ));
            }
        }
        Action::Update if m.entry.is_some() => {
            key(&mut fields);
            version(&mut fields, true);
            if let Some(entry) = &m.entry {
                let map = &entry.map;
                fields.push((
                    "key".to_owned(),
                    TypeRef::named_nn(TypeRef::STRING),
                    Some(match &entry.key_kind {
                        Some(k) => format!("The key of the `{map}` entry: a {}.", k.name()),
                        None => format!("The key of the `{map}` entry: one line of text."),
                    }),
                ));
                if !entry.remove {
                    fields.push((
                        "value".to_owned(),
                        input::type_ref(&entry.of, true),
                        Some(format!(
                            "The entry's value: the one at `key` replaced, or a new one{}.",
                            entry
                                .max_items
                                .map(|n| format!(" while `{map}` holds fewer than {n}"))
                                .unwrap_or_default()
                        )),
                    ));
                }
            }
        }
        Action::Update => {
            key(&mut fields);
            version(&mut fields, true);
            for name in &m.fields {
                let a = &e.attributes[name];
                fields.push((
                    name.clone(),
                    input::type_ref(&a.ty, m.required.contains(name)),
                    a.description.clone(),
                ));
            }
        }
        Action::Delete => {
            key(&mut fields);
            version(&mut fields, false);
        }
    }
    input_object(m, fields)
}

/// A mutation's input object of `fields` (name, type, description): the mutation's
/// declared order and descriptions first.
fn input_object(m: &Mutation, fields: Vec<(String, TypeRef, Option<String>)>) -> InputObject {
    let ordered = ordered(fields, m.input.iter().map(|(k, d)| (k.clone(), d.clone())));
    let mut obj = InputObject::new(input_name(m));
    if let Some(d) = &m.input_description {
        obj = obj.description(d);
    }
    for (name, ty, description) in ordered {
        let mut f = InputValue::new(name, ty);
        if let Some(d) = description {
            f = f.description(d);
        }
        obj = obj.field(f);
    }
    obj
}

/// What a mutation answers.
struct Answer {
    obj: Obj,
    deleted_id: Option<String>,
    replayed: bool,
}

fn payload_type(m: &Mutation, e: &Entity) -> Object {
    let field = lower_first(&e.name);
    let mut obj = Object::new(payload_name(m));
    if m.action == Action::Delete && e.node {
        obj = obj.field(
            Field::new(
                format!("deleted{}Id", e.name),
                TypeRef::named_nn(TypeRef::ID),
                |ctx| {
                    FieldFuture::Value(
                        ctx.parent_value
                            .downcast_ref::<Answer>()
                            .and_then(|a| a.deleted_id.as_ref())
                            .map(|id| FieldValue::value(Value::String(id.clone()))),
                    )
                },
            )
            .description(format!(
                "The global id the {} had: drop it from client caches.",
                crate::chart::words(&e.name)
            )),
        );
    }
    let words = crate::chart::words(&e.name);
    obj = obj.field(
        Field::new(&field, TypeRef::named_nn(&e.name), |ctx| {
            FieldFuture::Value(
                ctx.parent_value
                    .downcast_ref::<Answer>()
                    .map(|a| FieldValue::owned_any(a.obj.clone())),
            )
        })
        .description(match m.action {
            _ if m.payload.contains_key(&field) => m.payload[&field].clone(),
            Action::Create => format!("The {words} as created."),
            Action::Update if e.writes.version.is_some() => {
                format!("The {words} as changed, at its new `version`.")
            }
            Action::Update => format!("The {words} as changed."),
            Action::Delete => format!("The {words} as it was just before deletion."),
        }),
    );
    if m.token.is_some() {
        obj = obj.field(
            Field::new("replayed", TypeRef::named_nn(TypeRef::BOOLEAN), |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<Answer>()
                        .map(|a| FieldValue::value(Value::Boolean(a.replayed))),
                )
            })
            .description(m.payload.get("replayed").map_or(
                "True when `clientToken` named an item created before: nothing new was created.",
                String::as_str,
            )),
        );
    }
    obj
}

fn mutation_field(chart: &Arc<Chart>, m: &Mutation, e: &Entity) -> Field {
    let chart = chart.clone();
    let name = m.name.clone();
    let field = lower_first(&e.name);
    let mut f = Field::new(&m.name, TypeRef::named_nn(payload_name(m)), move |ctx| {
        let chart = chart.clone();
        let name = name.clone();
        let field = field.clone();
        FieldFuture::new(async move {
            let m = &chart.mutations[&name];
            let e = &chart.entities[&m.entity];
            let input = match ctx.args.try_get("input")?.as_value() {
                Value::Object(o) => o.clone(),
                _ => Default::default(),
            };
            let rc = ctx.ctx.data_unchecked::<RequestContext>();
            let written = write::run(rc, &chart, m, &input)
                .await
                .map_err(|e| e.extend())?;
            let created_with_shards = m.action == Action::Create
                && chart
                    .entities
                    .values()
                    .any(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == e.name));
            let mut obj = Obj::of(&chart, written.item.clone(), created_with_shards)
                .map_err(|e| e.extend())?;
            // The children written with it (read back with it): no second read.
            for (list, items) in written.lists {
                obj = obj
                    .with_list(&chart, &list, items)
                    .map_err(|e| e.extend())?;
            }
            if m.action == Action::Delete {
                rc.after_write_items(Vec::new()).await;
            } else {
                rc.after_write_items(vec![written.item]).await;
            }
            let deleted_id =
                (m.action == Action::Delete && e.node).then(|| Record::global_id(&obj.rec, e));
            obj.preload(rc, &chart, ctx.look_ahead().field(&field))
                .await;
            Ok(Some(FieldValue::owned_any(Answer {
                obj,
                deleted_id,
                replayed: written.replayed,
            })))
        })
    })
    .argument(InputValue::new("input", TypeRef::named_nn(input_name(m))));
    let description = m.description.clone().unwrap_or_else(|| {
        format!(
            "{} One request: a {}.",
            match m.action {
                Action::Create => format!("Creates a {}.", e.name),
                Action::Update => format!("Changes a {}.", e.name),
                Action::Delete => format!("Deletes a {}.", e.name),
            },
            m.request.name()
        )
    });
    f = f.description(description);
    f
}
