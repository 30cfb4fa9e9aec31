//! The built-in design's mutations and subscriptions, on the schema built from its chart
//! ([`super::charted`]). The chart says the reads and the organization, user and ticket
//! writes; the order writes and the subscriptions are still this design's own code
//! ([`super::order`] and [`super::subscription`], over [`crate::collections`] and
//! [`crate::live`]), until the chart can say them too.
//!
//! async-graphql's dynamic schema takes no derived type, so what the derived schema said
//! is said here: each mutation's `…Input` object comes from its derived input type's own
//! registration (its fields, their types and descriptions, its enums), and is parsed by
//! that type; each payload and event is an object of this file whose entity fields are the
//! chart's objects, decoded from the items the write stored.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext,
    SchemaBuilder, Subscription, SubscriptionField, SubscriptionFieldFuture, TypeRef,
};
use async_graphql::registry::{MetaType, Registry};
use async_graphql::{InputType, OutputType, Value};
use futures::StreamExt;

use super::charted::Obj;
use super::context::RequestContext;
use super::enums::TicketStatus;
use super::subscription;
use crate::chart::Chart;
use crate::live::{Change, EventKind};
use crate::model::Entity;

/// Registers the design's mutations (the chart's, in its order) and subscriptions, and
/// every type they name that the chart does not (`declared`: the names the schema already
/// has).
pub fn register(
    mut schema: SchemaBuilder,
    chart: &Arc<Chart>,
    declared: &HashSet<String>,
) -> SchemaBuilder {
    for e in event_enums(declared) {
        schema = schema.register(e);
    }
    for p in PAYLOADS {
        schema = schema.register(payload_type(p));
    }
    super::charted::mutate::register(schema, chart).register(subscription_type(chart))
}

/// What one payload or event answers: its fields' values, by name.
struct Payload(Vec<(&'static str, Answer)>);

enum Answer {
    Entity(Obj),
    Value(Value),
}

impl Payload {
    /// The references selected under its entities, asked of the DataLoader at once (the
    /// dynamic schema resolves an object's fields one after the other).
    async fn preload(
        &self,
        rc: &RequestContext,
        chart: &Arc<Chart>,
        selected: async_graphql::Lookahead<'_>,
    ) {
        for (name, answer) in &self.0 {
            if let Answer::Entity(obj) = answer {
                obj.preload(rc, chart, selected.field(name)).await;
            }
        }
    }
}

/// A payload's (or an event's) object type: its name, its description and its fields'
/// names, types and descriptions.
struct PayloadType {
    name: &'static str,
    description: Option<&'static str>,
    fields: &'static [(&'static str, &'static str, Option<&'static str>)],
}

const AFTER: &str =
    "Pass as `after` to resume after this event: what happened since is sent first.";

const PAYLOADS: &[PayloadType] = &[
    PayloadType {
        name: "TicketEvent",
        description: Some("A change to a ticket."),
        fields: &[
            ("kind", "ChangeKind!", None),
            (
                "ticket",
                "Ticket!",
                Some("The ticket after the change; for `DELETED`, as it was."),
            ),
            (
                "previousStatus",
                "TicketStatus",
                Some("Its status before the change, when the change moved it to another queue."),
            ),
            ("cursor", "String!", Some(AFTER)),
        ],
    },
    PayloadType {
        name: "OrderEvent",
        description: Some("A change to an order."),
        fields: &[
            ("kind", "ChangeKind!", None),
            (
                "order",
                "Order!",
                Some("The order after the change; for `DELETED`, as it was."),
            ),
            (
                "previousStatus",
                "OrderStatus",
                Some("Its status before the change, when the change moved it on."),
            ),
            ("cursor", "String!", Some(AFTER)),
        ],
    },
];

fn payload_type(p: &PayloadType) -> Object {
    let mut obj = Object::new(p.name);
    if let Some(d) = p.description {
        obj = obj.description(d);
    }
    for &(name, ty, description) in p.fields {
        let mut f = Field::new(name, type_ref(ty), move |ctx| {
            let answer = ctx
                .parent_value
                .downcast_ref::<Payload>()
                .and_then(|p| p.0.iter().find(|(n, _)| *n == name))
                .map(|(_, a)| match a {
                    Answer::Entity(obj) => FieldValue::owned_any(obj.clone()),
                    Answer::Value(Value::Null) => FieldValue::NULL,
                    Answer::Value(v) => FieldValue::value(v.clone()),
                });
            FieldFuture::Value(answer)
        });
        if let Some(d) = description {
            f = f.description(d);
        }
        obj = obj.field(f);
    }
    obj
}

/// A type as the SDL writes it (`[OrderLineInput!]!`).
fn type_ref(ty: &str) -> TypeRef {
    if let Some(inner) = ty.strip_suffix('!') {
        TypeRef::NonNull(Box::new(type_ref(inner)))
    } else if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        TypeRef::List(Box::new(type_ref(inner)))
    } else {
        TypeRef::named(ty.to_owned())
    }
}

/// The enums the events name that the chart does not (`ChangeKind`), as their derived
/// types register them, less what the schema already has.
fn event_enums(declared: &HashSet<String>) -> Vec<Enum> {
    let mut registry = Registry::default();
    <subscription::ChangeKind as OutputType>::create_type_info(&mut registry);
    let mut out = Vec::new();
    for (name, ty) in &registry.types {
        if declared.contains(name) {
            continue;
        }
        if let MetaType::Enum {
            description,
            enum_values,
            ..
        } = ty
        {
            let mut e = Enum::new(name);
            if let Some(d) = description {
                e = e.description(d);
            }
            for v in enum_values.values() {
                let mut item = EnumItem::new(&v.name);
                if let Some(d) = &v.description {
                    item = item.description(d);
                }
                e = e.item(item);
            }
            out.push(e);
        }
    }
    out
}

/// An event's payload: the kind of change, the entity (decoded as the chart's), its
/// previous status, the cursor. `None` (the event skipped, and logged) if the entity
/// does not decode, which the tests of the built-in chart rule out.
fn event(
    chart: &Chart,
    field: &'static str,
    change: &Change,
    entity: Entity,
    previous: Value,
    cursor: String,
) -> Option<Payload> {
    let obj = match Obj::of(chart, entity.to_item(), false) {
        Ok(obj) => obj,
        Err(e) => {
            tracing::error!(error = %e, "a change that does not decode as the chart's entity");
            return None;
        }
    };
    let kind = match change.kind {
        EventKind::Created => "CREATED",
        EventKind::Updated => "UPDATED",
        EventKind::Deleted => "DELETED",
    };
    Some(Payload(vec![
        (
            "kind",
            Answer::Value(Value::Enum(async_graphql::Name::new(kind))),
        ),
        (field, Answer::Entity(obj)),
        ("previousStatus", Answer::Value(previous)),
        ("cursor", Answer::Value(Value::String(cursor))),
    ]))
}

fn ticket_event(chart: &Chart, c: &Change, cursor: String) -> Option<Payload> {
    let (t, previous) = subscription::ticket_change(c)?;
    let previous = previous.map_or(Value::Null, |s| InputType::to_value(&TicketStatus::from(s)));
    event(
        chart,
        "ticket",
        c,
        Entity::Ticket(t.clone()),
        previous,
        cursor,
    )
}

fn order_event(chart: &Chart, c: &Change, cursor: String) -> Option<Payload> {
    let (o, previous) = subscription::order_change(c)?;
    let previous = previous.map_or(Value::Null, |s| {
        InputType::to_value(&super::enums::OrderStatus::from(s))
    });
    event(
        chart,
        "order",
        c,
        Entity::Order(o.clone()),
        previous,
        cursor,
    )
}

/// An optional string argument.
fn text_arg(ctx: &ResolverContext<'_>, name: &str) -> async_graphql::Result<Option<String>> {
    match ctx.args.get(name) {
        Some(v) if !v.is_null() => Ok(Some(v.string()?.to_owned())),
        _ => Ok(None),
    }
}

/// An event stream whose events have the references selected under them asked of the
/// DataLoader at once, as a mutation's payload does.
fn preloaded<'a>(
    events: impl futures::Stream<Item = async_graphql::Result<Payload>> + Send + 'a,
    ctx: &ResolverContext<'a>,
    chart: Arc<Chart>,
) -> impl futures::Stream<Item = async_graphql::Result<FieldValue<'a>>> + Send + 'a {
    let rc = ctx.ctx.data_unchecked::<RequestContext>();
    let look = ctx.ctx.clone();
    events.then(move |e| {
        let chart = chart.clone();
        let look = look.clone();
        async move {
            let e = e?;
            e.preload(rc, &chart, look.look_ahead()).await;
            Ok(FieldValue::owned_any(e))
        }
    })
}

fn subscription_type(chart: &Arc<Chart>) -> Subscription {
    let ticket_events = {
        let chart = chart.clone();
        SubscriptionField::new(
            "ticketEvents",
            TypeRef::named_nn("TicketEvent"),
            move |ctx| {
                let chart = chart.clone();
                let chart2 = chart.clone();
                SubscriptionFieldFuture::new(async move {
                    let org = ctx.args.try_get("org")?.string()?.to_owned();
                    let status = match ctx.args.get("status") {
                        Some(v) if !v.is_null() => Some(
                            TicketStatus::parse(Some(v.as_value().clone()))
                                .map_err(|e| e.into_server_error(Default::default()).message)?
                                .into(),
                        ),
                        _ => None,
                    };
                    let after = text_arg(&ctx, "after")?;
                    let events = subscription::ticket_events(
                        ctx.ctx,
                        &org,
                        status,
                        after,
                        move |c, cursor| ticket_event(&chart, c, cursor),
                    )
                    .await?;
                    Ok(preloaded(events, &ctx, chart2))
                })
            },
        )
        .argument(InputValue::new("org", TypeRef::named_nn(TypeRef::STRING)))
        .argument(InputValue::new("status", TypeRef::named("TicketStatus")))
        .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)))
        .description(
            "Changes to an organization's tickets: created, updated, deleted. With `status`,\n\
             those of one queue: tickets that are in it, or that a change moved out of it (the\n\
             event's `previousStatus` says so). With `after` (an event's `cursor`), what\n\
             happened since that event comes first, then what happens from now on.",
        )
    };
    let user_ticket_events = {
        let chart = chart.clone();
        SubscriptionField::new(
            "userTicketEvents",
            TypeRef::named_nn("TicketEvent"),
            move |ctx| {
                let chart = chart.clone();
                let chart2 = chart.clone();
                SubscriptionFieldFuture::new(async move {
                    let org = ctx.args.try_get("org")?.string()?.to_owned();
                    let username = ctx.args.try_get("username")?.string()?.to_owned();
                    let after = text_arg(&ctx, "after")?;
                    let events = subscription::user_ticket_events(
                        ctx.ctx,
                        &org,
                        &username,
                        after,
                        move |c, cursor| ticket_event(&chart, c, cursor),
                    )
                    .await?;
                    Ok(preloaded(events, &ctx, chart2))
                })
            },
        )
        .argument(InputValue::new("org", TypeRef::named_nn(TypeRef::STRING)))
        .argument(InputValue::new(
            "username",
            TypeRef::named_nn(TypeRef::STRING),
        ))
        .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)))
        .description(
            "Changes to the tickets one user of an organization requested, newest first in\n\
             their list: created, updated, deleted. `after` as for `ticketEvents`.",
        )
    };
    let order_events = {
        let chart = chart.clone();
        SubscriptionField::new("orderEvents", TypeRef::named_nn("OrderEvent"), move |ctx| {
            let chart = chart.clone();
            let chart2 = chart.clone();
            SubscriptionFieldFuture::new(async move {
                let org = ctx.args.try_get("org")?.string()?.to_owned();
                let id = text_arg(&ctx, "id")?;
                let after = text_arg(&ctx, "after")?;
                let events = subscription::order_events(
                    ctx.ctx,
                    &org,
                    id.as_deref(),
                    after,
                    move |c, cursor| order_event(&chart, c, cursor),
                )
                .await?;
                Ok(preloaded(events, &ctx, chart2))
            })
        })
        .argument(InputValue::new("org", TypeRef::named_nn(TypeRef::STRING)))
        .argument(InputValue::new("id", TypeRef::named(TypeRef::ID)))
        .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)))
        .description(
            "Changes to an organization's orders (placed, status changes); with `id` (a global\n\
             id or a plain `orderId`), to that one order. `after` as for `ticketEvents`.",
        )
    };
    Subscription::new("Subscription")
        .field(ticket_events)
        .field(user_ticket_events)
        .field(order_events)
}
