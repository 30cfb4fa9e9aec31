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

use std::sync::Arc;

use async_graphql::dynamic::{
    Field, FieldFuture, FieldValue, InputObject, InputValue, Object, SchemaBuilder, TypeRef,
};
use async_graphql::{ErrorExtensions, Value};

use super::record::Record;
use super::Obj;
use crate::chart::types::Type;
use crate::chart::{Action, Chart, Entity, Mutation};
use crate::graphql::context::RequestContext;

/// Registers the chart's mutations: the input objects of its shapes and mutations, the
/// payloads and the Mutation root.
pub fn register(mut schema: SchemaBuilder, chart: &Arc<Chart>) -> SchemaBuilder {
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
    let mut root = Object::new("Mutation");
    for m in chart.mutations.values() {
        let e = &chart.entities[&m.entity];
        schema = schema
            .register(input_type(m, e))
            .register(payload_type(m, e));
        root = root.field(mutation_field(chart, m, e));
    }
    schema.register(root)
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

fn input_name(m: &Mutation) -> String {
    format!("{}Input", upper_first(&m.name))
}

fn payload_name(m: &Mutation) -> String {
    format!("{}Payload", upper_first(&m.name))
}

/// The input field that names the item by id: `id`, or the entity's plain id
/// (`ticketId`), which takes the global id too.
fn id_field(e: &Entity) -> &str {
    e.plain_id.as_deref().unwrap_or("id")
}

/// The attributes a create takes from its caller.
fn given_on_create(e: &Entity) -> impl Iterator<Item = (&String, &crate::chart::Attribute)> {
    e.attributes.iter().filter(|(name, a)| {
        a.auto.is_none()
            && input::writable(&a.ty)
            && e.writes.version.as_deref() != Some(name.as_str())
            && e.writes
                .lifecycle
                .as_ref()
                .is_none_or(|l| l.attribute != **name)
    })
}

fn input_type(m: &Mutation, e: &Entity) -> InputObject {
    let mut obj = InputObject::new(input_name(m));
    let described = |mut f: InputValue, a: &crate::chart::Attribute| {
        if let Some(d) = &a.description {
            f = f.description(d);
        }
        f
    };
    let key = |mut obj: InputObject| {
        if m.by_id {
            return obj.field(
                InputValue::new(id_field(e), TypeRef::named_nn(TypeRef::ID)).description(match &e
                    .plain_id
                {
                    Some(p) => format!("The {}'s global `id` or its plain `{p}`.", e.name),
                    None => format!("The {}'s global `id`.", e.name),
                }),
            );
        }
        let mut seen: Vec<&str> = Vec::new();
        for v in e.key.pk.vars().chain(e.key.sk.vars()) {
            if seen.contains(&v.name.as_str()) {
                continue;
            }
            seen.push(&v.name);
            let a = &e.attributes[&v.name];
            obj = obj.field(described(
                InputValue::new(&v.name, input::type_ref(&a.ty, true)),
                a,
            ));
        }
        obj
    };
    let version = |obj: InputObject, required: bool| match &e.writes.version {
        Some(_) => obj.field(
            InputValue::new(
                "expectedVersion",
                if required {
                    TypeRef::named_nn(TypeRef::INT)
                } else {
                    TypeRef::named(TypeRef::INT)
                },
            )
            .description(
                "The `version` the write is based on. When the item has moved on since, nothing \
                 is written and the answer is `VERSION_MISMATCH` with `extensions.currentVersion`.",
            ),
        ),
        None => obj,
    };
    match m.action {
        Action::Create => {
            for (name, a) in given_on_create(e) {
                obj = obj.field(described(
                    InputValue::new(
                        name,
                        input::type_ref(&a.ty, !a.optional && !matches!(a.ty, Type::Counter)),
                    ),
                    a,
                ));
            }
            if m.token.is_some() {
                obj = obj.field(
                    InputValue::new("clientToken", TypeRef::named(TypeRef::STRING)).description(
                        "Makes retrying safe: 1 to 64 of `[A-Za-z0-9_-]`, unique per intended write. \
                         A retry with the same token creates nothing new and answers the item the \
                         first call created, with `replayed: true`.",
                    ),
                );
            }
        }
        Action::Update => {
            obj = version(key(obj), true);
            for name in &m.fields {
                let a = &e.attributes[name];
                obj = obj.field(described(
                    InputValue::new(name, input::type_ref(&a.ty, false)),
                    a,
                ));
            }
        }
        Action::Delete => obj = version(key(obj), false),
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
    let mut obj = Object::new(payload_name(m)).field(
        Field::new(&field, TypeRef::named_nn(&e.name), |ctx| {
            FieldFuture::Value(
                ctx.parent_value
                    .downcast_ref::<Answer>()
                    .map(|a| FieldValue::owned_any(a.obj.clone())),
            )
        })
        .description(match m.action {
            Action::Create => format!("The {} as created.", lower_first(&e.name)),
            Action::Update => format!("The {} as changed.", lower_first(&e.name)),
            Action::Delete => format!(
                "The {} as it was just before deletion.",
                lower_first(&e.name)
            ),
        }),
    );
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
                lower_first(&e.name)
            )),
        );
    }
    if m.token.is_some() {
        obj = obj.field(
            Field::new("replayed", TypeRef::named_nn(TypeRef::BOOLEAN), |ctx| {
                FieldFuture::Value(
                    ctx.parent_value
                        .downcast_ref::<Answer>()
                        .map(|a| FieldValue::value(Value::Boolean(a.replayed))),
                )
            })
            .description(
                "True when `clientToken` named an item created before: nothing new was created.",
            ),
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
            let obj = Obj::of(&chart, written.item.clone(), created_with_shards)
                .map_err(|e| e.extend())?;
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
