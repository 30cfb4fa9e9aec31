//! A chart's subscriptions, served from its declarations: for each `[subscriptions.NAME]`
//! a field of the Subscription root that streams the changes of one entity's items of one
//! tenant (its argument named as the chart names its tenant: `chain`), narrowed by the
//! declared filters, resumable after an event's `cursor`. The change stream, the relay,
//! cursors, resumes and every limit are those of [`crate::graphql::subscription`].
//!
//! Each event is a `{Entity}Event`: `kind` (`CREATED`, `UPDATED`, `DELETED`), the entity
//! as the change left it (as it was, when deleted), `changed` (the attributes an update
//! changed) and `cursor`.

use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputValue, Object, SchemaBuilder,
    Subscription, SubscriptionField, SubscriptionFieldFuture, TypeRef,
};
use async_graphql::{Name, Value};
use futures::StreamExt;

use super::record::Record;
use super::Obj;
use crate::chart::types::Type;
use crate::chart::Chart;
use crate::graphql::context::RequestContext;
use crate::graphql::subscription::tenant_events;
use crate::live::{Change, EventKind};
use crate::store::AttributeValue;

/// One event, as a parent value.
struct Event {
    kind: &'static str,
    obj: Obj,
    changed: Vec<String>,
    cursor: String,
}

fn event_type_name(entity: &str) -> String {
    format!("{entity}Event")
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// Registers the chart's subscriptions: `ChangeKind`, an event type per entity streamed,
/// and the Subscription root.
pub fn register(mut schema: SchemaBuilder, chart: &Arc<Chart>) -> SchemaBuilder {
    schema = schema.register(
        Enum::new("ChangeKind")
            .description("What happened to the entity.")
            .items(["CREATED", "UPDATED", "DELETED"].map(EnumItem::new)),
    );
    let mut seen = HashSet::new();
    let mut root = Subscription::new("Subscription");
    for (name, sub) in &chart.subscriptions {
        if seen.insert(sub.entity.clone()) {
            schema = schema.register(event_type(&sub.entity));
        }
        root = root.field(field(chart, name));
    }
    schema.register(root)
}

fn event_type(entity: &str) -> Object {
    Object::new(event_type_name(entity))
        .description(format!("A change to a {entity}."))
        .field(answer("kind", TypeRef::named_nn("ChangeKind"), |e| {
            FieldValue::value(Value::Enum(Name::new(e.kind)))
        }))
        .field(
            answer(&lower_first(entity), TypeRef::named_nn(entity), |e| {
                FieldValue::owned_any(e.obj.clone())
            })
            .description(format!(
                "The {} after the change; for `DELETED`, as it was.",
                lower_first(entity)
            )),
        )
        .field(
            answer("changed", TypeRef::named_nn_list_nn(TypeRef::STRING), |e| {
                FieldValue::value(Value::List(
                    e.changed.iter().map(|c| Value::String(c.clone())).collect(),
                ))
            })
            .description(
                "For `UPDATED`, the attributes the change gave another value; empty otherwise.",
            ),
        )
        .field(
            answer("cursor", TypeRef::named_nn(TypeRef::STRING), |e| {
                FieldValue::value(Value::String(e.cursor.clone()))
            })
            .description(
                "Pass as `after` to resume after this event: what happened since is sent first.",
            ),
        )
}

/// A field of an event answered from it.
fn answer(name: &str, ty: TypeRef, f: fn(&Event) -> FieldValue<'static>) -> Field {
    Field::new(name, ty, move |ctx| {
        FieldFuture::Value(ctx.parent_value.downcast_ref::<Event>().map(f))
    })
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Enum(e) => Some(e.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value an item holds for a filter, as its argument spells it.
fn held(item: &Option<crate::store::Item>, attr: &str) -> Option<String> {
    match item.as_ref()?.get(attr)? {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
        _ => None,
    }
}

fn field(chart: &Arc<Chart>, name: &str) -> SubscriptionField {
    let sub = &chart.subscriptions[name];
    let entity = &chart.entities[&sub.entity];
    let tenant = chart
        .tenant
        .as_ref()
        .map_or_else(|| "org".to_owned(), |t| t.attribute.clone());
    let c = chart.clone();
    let (sub_name, arg) = (name.to_owned(), tenant.clone());
    let mut f = SubscriptionField::new(
        name,
        TypeRef::named_nn(event_type_name(&sub.entity)),
        move |ctx| {
            let chart = c.clone();
            let (name, arg) = (sub_name.clone(), arg.clone());
            SubscriptionFieldFuture::new(async move {
                let sub = &chart.subscriptions[&name];
                let tenant = ctx.args.try_get(&arg)?.string()?.to_owned();
                let after = match ctx.args.get("after") {
                    Some(v) if !v.is_null() => Some(v.string()?.to_owned()),
                    _ => None,
                };
                let mut filters: Vec<(String, String)> = Vec::new();
                for f in &sub.filters {
                    if let Some(v) = ctx.args.get(f).filter(|v| !v.is_null()) {
                        if let Some(t) = text(v.as_value()) {
                            filters.push((f.clone(), t));
                        }
                    }
                }
                let entity = sub.entity.clone();
                let type_attr = chart.table.type_attribute.clone();
                let wanted = move |c: &Change| {
                    let is = |i: &Option<crate::store::Item>| {
                        i.as_ref().and_then(|i| i.get(&type_attr))
                            == Some(&AttributeValue::S(entity.clone()))
                    };
                    (is(&c.before) || is(&c.after))
                        && filters.iter().all(|(f, v)| {
                            held(&c.before, f).as_ref() == Some(v)
                                || held(&c.after, f).as_ref() == Some(v)
                        })
                };
                let for_events = chart.clone();
                let events =
                    tenant_events(ctx.ctx, &arg, &tenant, after, wanted, move |c, cursor| {
                        event(&for_events, c, cursor)
                    })
                    .await?;
                let rc = ctx.ctx.data_unchecked::<RequestContext>();
                let look = ctx.ctx.clone();
                let field = lower_first(&sub.entity);
                Ok(events.then(move |e| {
                    let (chart, look, field) = (chart.clone(), look.clone(), field.clone());
                    async move {
                        let e = e?;
                        e.obj
                            .preload(rc, &chart, look.look_ahead().field(&field))
                            .await;
                        Ok(FieldValue::owned_any(e))
                    }
                }))
            })
        },
    )
    .argument(InputValue::new(&tenant, TypeRef::named_nn(TypeRef::STRING)))
    .argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)));
    for filter in &sub.filters {
        let ty = match &entity.attributes[filter].ty {
            Type::Enum { name, .. } => name.clone(),
            Type::Int { .. } => TypeRef::INT.into(),
            _ => TypeRef::STRING.into(),
        };
        f = f.argument(InputValue::new(filter, TypeRef::named(ty)));
    }
    f.description(sub.description.clone().unwrap_or_else(|| {
        format!(
            "Changes to a {tenant}'s {} items: created, updated, deleted. With `after` (an event's \
             `cursor`), what happened since that event comes first, then what happens from now on.",
            sub.entity
        )
    }))
}

/// An event of a change (`None`, skipped and logged, when its item does not decode).
fn event(chart: &Chart, c: &Change, cursor: String) -> Option<Event> {
    let obj = match Obj::of(chart, c.item().clone(), false) {
        Ok(obj) => obj,
        Err(e) => {
            tracing::error!(error = %e, "a change that does not decode as the chart's entity");
            return None;
        }
    };
    let changed = match (c.kind, &c.before, &c.after) {
        (EventKind::Updated, Some(before), Some(after)) => {
            let e = Record::entity(&obj.rec, chart);
            e.attributes
                .keys()
                .filter(|a| before.get(*a) != after.get(*a))
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    Some(Event {
        kind: match c.kind {
            EventKind::Created => "CREATED",
            EventKind::Updated => "UPDATED",
            EventKind::Deleted => "DELETED",
        },
        obj,
        changed,
        cursor,
    })
}
