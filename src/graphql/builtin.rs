//! The built-in design's mutations and subscriptions, on the schema built from its chart
//! ([`super::charted`]). The chart says the reads; what changes the table is still this
//! design's own code ([`super::org`], [`super::user`], [`super::ticket`], [`super::order`]
//! and [`super::subscription`], over [`crate::collections`] and [`crate::live`]), until
//! writes are declared in the chart too.
//!
//! async-graphql's dynamic schema takes no derived type, so what the derived schema said
//! is said here: each mutation's `…Input` object comes from its derived input type's own
//! registration (its fields, their types and descriptions, its enums), and is parsed by
//! that type; each payload and event is an object of this file whose entity fields are the
//! chart's objects, decoded from the items the write stored.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputObject, InputValue, Object,
    ResolverContext, SchemaBuilder, Subscription, SubscriptionField, SubscriptionFieldFuture,
    TypeRef,
};
use async_graphql::registry::{MetaType, Registry};
use async_graphql::{ErrorExtensions, InputType, OutputType, Value};
use futures::future::BoxFuture;
use futures::StreamExt;

use super::charted::Obj;
use super::context::RequestContext;
use super::enums::TicketStatus;
use super::errors::ApiError;
use super::ids::GlobalId;
use super::{order, org, subscription, ticket, user};
use crate::chart::Chart;
use crate::live::{Change, EventKind};
use crate::model::{Entity, Record as _};

/// Registers the design's mutations and subscriptions, and every type they name that the
/// chart does not (`declared`: the names the schema already has).
pub fn register(
    mut schema: SchemaBuilder,
    chart: &Arc<Chart>,
    declared: &HashSet<String>,
) -> SchemaBuilder {
    for ty in input_types(declared) {
        schema = match ty {
            Derived::Input(i) => schema.register(i),
            Derived::Enum(e) => schema.register(e),
        };
    }
    for p in PAYLOADS {
        schema = schema.register(payload_type(p));
    }
    schema
        .register(mutation_type(chart))
        .register(subscription_type(chart))
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
        name: "CreateOrganizationPayload",
        description: None,
        fields: &[(
            "organization",
            "Organization!",
            Some("The organization as created (no users yet)."),
        )],
    },
    PayloadType {
        name: "CreateUserPayload",
        description: None,
        fields: &[("user", "User!", Some("The user as created."))],
    },
    PayloadType {
        name: "UpdateUserPayload",
        description: None,
        fields: &[("user", "User!", Some("The user as changed."))],
    },
    PayloadType {
        name: "DeleteUserPayload",
        description: None,
        fields: &[
            (
                "deletedUserId",
                "ID!",
                Some("The global id the user had: drop it from client caches."),
            ),
            (
                "user",
                "User!",
                Some("The user as it was just before deletion."),
            ),
        ],
    },
    PayloadType {
        name: "CreateTicketPayload",
        description: None,
        fields: &[("ticket", "Ticket!", Some("The ticket as created."))],
    },
    PayloadType {
        name: "UpdateTicketPayload",
        description: None,
        fields: &[(
            "ticket",
            "Ticket!",
            Some("The ticket as changed, at its new `version`."),
        )],
    },
    PayloadType {
        name: "PlaceOrderPayload",
        description: None,
        fields: &[
            ("order", "Order!", Some("The order, with its lines.")),
            (
                "replayed",
                "Boolean!",
                Some(
                    "True when `clientToken` named an order placed before: nothing new was placed.",
                ),
            ),
        ],
    },
    PayloadType {
        name: "UpdateOrderStatusPayload",
        description: None,
        fields: &[(
            "order",
            "Order!",
            Some("The order as changed, at its new `version`."),
        )],
    },
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

enum Derived {
    Input(InputObject),
    Enum(Enum),
}

/// The mutations' input objects and the enums they (and the events) name, as their
/// derived types register them, less what the schema already has.
fn input_types(declared: &HashSet<String>) -> Vec<Derived> {
    let mut registry = Registry::default();
    org::CreateOrganizationInput::create_type_info(&mut registry);
    user::CreateUserInput::create_type_info(&mut registry);
    user::UpdateUserInput::create_type_info(&mut registry);
    user::DeleteUserInput::create_type_info(&mut registry);
    ticket::CreateTicketInput::create_type_info(&mut registry);
    ticket::UpdateTicketInput::create_type_info(&mut registry);
    order::PlaceOrderInput::create_type_info(&mut registry);
    order::UpdateOrderStatusInput::create_type_info(&mut registry);
    <subscription::ChangeKind as OutputType>::create_type_info(&mut registry);
    let mut out = Vec::new();
    for (name, ty) in &registry.types {
        if declared.contains(name) {
            continue;
        }
        match ty {
            MetaType::InputObject {
                description,
                input_fields,
                ..
            } => {
                let mut input = InputObject::new(name);
                if let Some(d) = description {
                    input = input.description(d);
                }
                for f in input_fields.values() {
                    let mut field = InputValue::new(&f.name, type_ref(&f.ty));
                    if let Some(d) = &f.description {
                        field = field.description(d);
                    }
                    input = input.field(field);
                }
                out.push(Derived::Input(input));
            }
            MetaType::Enum {
                description,
                enum_values,
                ..
            } => {
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
                out.push(Derived::Enum(e));
            }
            // Scalars (`Cents`, the built-in ones) the schema has.
            _ => {}
        }
    }
    out
}

type Run =
    for<'a> fn(&'a RequestContext, &'a Chart, Value) -> BoxFuture<'a, Result<Payload, ApiError>>;

/// Parses an `…Input` argument with its derived type.
fn parse<T: InputType>(value: Value) -> Result<T, ApiError> {
    T::parse(Some(value)).map_err(|e| ApiError::BadUserInput {
        message: e.into_server_error(Default::default()).message,
        field: None,
    })
}

fn entity(chart: &Chart, e: Entity, counted: bool) -> Result<Answer, ApiError> {
    Ok(Answer::Entity(Obj::of(chart, e.to_item(), counted)?))
}

const MUTATIONS: &[(&str, &str, &str, &str, Run)] = &[
    (
        "createOrganization",
        "CreateOrganizationInput",
        "CreateOrganizationPayload",
        "Creates an organization. `CONFLICT` (`field: \"slug\"`) when the slug is taken.\n\
         With auth on, admins only, and only the organization their token names\n\
         (`FORBIDDEN` otherwise). One request: a TransactWriteItems of the organization and its\n\
         counter shards, each put only where none exists.",
        |rc, chart, input| {
            Box::pin(async move {
                let org = org::create_organization(rc, parse(input)?).await?;
                // A new organization counts nothing: its record holds every count.
                Ok(Payload(vec![(
                    "organization",
                    entity(chart, org.into(), true)?,
                )]))
            })
        },
    ),
    (
        "createUser",
        "CreateUserInput",
        "CreateUserPayload",
        "Adds a user to an organization. `CONFLICT` when the username is taken in the\n\
         organization (`field: \"username\"`) or the email anywhere (`field: \"email\"`);\n\
         `NOT_FOUND` (`field: \"organization\"`) when there is no such organization. Admins\n\
         only (`FORBIDDEN`). One request: a TransactWriteItems.",
        |rc, chart, input| {
            Box::pin(async move {
                let u = user::create_user(rc, parse(input)?).await?;
                Ok(Payload(vec![("user", entity(chart, u.into(), false)?)]))
            })
        },
    ),
    (
        "updateUser",
        "UpdateUserInput",
        "UpdateUserPayload",
        "Changes a user's name, email or role. `NOT_FOUND` (`field: \"user\"`) when there is\n\
         no such user; `CONFLICT` (`field: \"email\"`) when the new email is taken. Admins\n\
         only (`FORBIDDEN`). One\n\
         request (an UpdateItem); two for a new email (a GetItem of the user, then a\n\
         TransactWriteItems that moves the email's uniqueness marker too).",
        |rc, chart, input| {
            Box::pin(async move {
                let u = user::update_user(rc, parse(input)?).await?;
                Ok(Payload(vec![("user", entity(chart, u.into(), false)?)]))
            })
        },
    ),
    (
        "deleteUser",
        "DeleteUserInput",
        "DeleteUserPayload",
        "Removes a user from an organization and frees their email. Only a user nothing\n\
         refers to can go: `CONFLICT` with `field` `tickets` (they requested tickets),\n\
         `assignedTickets` (tickets are assigned to them) or `orders` (they placed orders);\n\
         reassign or keep them. `NOT_FOUND` (`field: \"user\"`) when there is no such user.\n\
         Admins only (`FORBIDDEN`). Two requests: a GetItem of the user, then a TransactWriteItems.",
        |rc, chart, input| {
            Box::pin(async move {
                let u = user::delete_user(rc, parse(input)?).await?;
                let id = GlobalId::User(u.org.clone(), u.username.clone()).encode();
                Ok(Payload(vec![
                    ("deletedUserId", Answer::Value(Value::String(id))),
                    ("user", entity(chart, u.into(), false)?),
                ]))
            })
        },
    ),
    (
        "createTicket",
        "CreateTicketInput",
        "CreateTicketPayload",
        "Raises a ticket, `OPEN` at version 1, counted on the organization and the\n\
         requester. `NOT_FOUND` when the organization, the requester or the assignee does\n\
         not exist (`field` says which). One request: a TransactWriteItems.",
        |rc, chart, input| {
            Box::pin(async move {
                let t = ticket::create_ticket(rc, parse(input)?).await?;
                Ok(Payload(vec![("ticket", entity(chart, t.into(), false)?)]))
            })
        },
    ),
    (
        "updateTicket",
        "UpdateTicketInput",
        "UpdateTicketPayload",
        "Changes a ticket: status (moving it between the status queues), priority,\n\
         assignee, title or body. Send the `version` you read as `expectedVersion`: when\n\
         the ticket changed since, nothing is written and the answer is `VERSION_MISMATCH`\n\
         with `extensions.currentVersion`; read it again and retry. `NOT_FOUND` when the\n\
         ticket (`field: \"ticket\"`) or the new assignee (`field: \"assignee\"`) does not\n\
         exist. Two requests: a GetItem of the ticket, then the write.",
        |rc, chart, input| {
            Box::pin(async move {
                let t = ticket::update_ticket(rc, parse(input)?).await?;
                Ok(Payload(vec![("ticket", entity(chart, t.into(), false)?)]))
            })
        },
    ),
    (
        "placeOrder",
        "PlaceOrderInput",
        "PlaceOrderPayload",
        "Places an order with its lines, counted on the organization; amounts and the total\n\
         are computed here. `NOT_FOUND` when the organization or the buyer does not exist\n\
         (`field` says which). With a `clientToken`, retrying is safe: see\n\
         `PlaceOrderInput.clientToken`. One request: a TransactWriteItems; a replay is that\n\
         refused TransactWriteItems plus one Query on GSI1 reading the order back.",
        |rc, chart, input| {
            Box::pin(async move {
                let placed = order::place_order(rc, parse(input)?).await?;
                // The lines were written (or, for a replay, read) with the order.
                let lines = placed.lines.iter().map(|l| l.to_item());
                let order = Obj::of(chart, placed.order.to_item(), false)?
                    .with_list(chart, "lines", lines)?;
                Ok(Payload(vec![
                    ("order", Answer::Entity(order)),
                    ("replayed", Answer::Value(Value::Boolean(placed.replayed))),
                ]))
            })
        },
    ),
    (
        "updateOrderStatus",
        "UpdateOrderStatusInput",
        "UpdateOrderStatusPayload",
        "Moves an order along its fulfilment: `PLACED` → `PAID` → `SHIPPED` →\n\
         `DELIVERED`, or `CANCELLED` before it ships. `INVALID_TRANSITION` for any other\n\
         move, `VERSION_MISMATCH` when the order changed since `expectedVersion`,\n\
         `NOT_FOUND` (`field: \"order\"`) when there is no such order. Admins only\n\
         (`FORBIDDEN`). Two requests: a Query\n\
         on GSI1 reading the order, then a conditional UpdateItem (plus a GetItem between\n\
         them in the rare case the index lags behind `expectedVersion`).",
        |rc, chart, input| {
            Box::pin(async move {
                let o = order::update_order_status(rc, parse(input)?).await?;
                Ok(Payload(vec![("order", entity(chart, o.into(), false)?)]))
            })
        },
    ),
];

fn mutation_type(chart: &Arc<Chart>) -> Object {
    let mut root = Object::new("Mutation");
    for &(name, input, payload, description, run) in MUTATIONS {
        let chart = chart.clone();
        let field = Field::new(name, TypeRef::named_nn(payload), move |ctx| {
            let chart = chart.clone();
            FieldFuture::new(async move {
                let input = ctx.args.try_get("input")?.as_value().clone();
                let rc = ctx.ctx.data_unchecked::<RequestContext>();
                let payload = run(rc, &chart, input).await.map_err(|e| e.extend())?;
                payload.preload(rc, &chart, ctx.look_ahead()).await;
                Ok(Some(FieldValue::owned_any(payload)))
            })
        })
        .argument(InputValue::new("input", TypeRef::named_nn(input)))
        .description(description);
        root = root.field(field);
    }
    root
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
