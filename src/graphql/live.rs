//! A chart's subscriptions, served from its declarations: for each `[subscriptions.NAME]`
//! a field of the Subscription root that streams the changes of one entity's items of one
//! tenant (its argument named as the chart names its tenant: `chain`), narrowed by the
//! declared filters, resumable after an event's `cursor`. The change stream, the relay,
//! cursors, resumes and every limit are those of [`crate::graphql::subscription`].
//!
//! Each event is a `{Entity}Event`: `kind` (`CREATED`, `UPDATED`, `DELETED`), the entity
//! as the change left it (as it was, when deleted), each declared `previous{Attribute}`
//! (its value before an update that changed it), `changed` (the attributes an update
//! changed; unless every subscription of the entity leaves it out) and `cursor`.

pub(super) use crate::chart::schema_names::event_type_name;
use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputValue, Object, SchemaBuilder,
    Subscription, SubscriptionField, SubscriptionFieldFuture, TypeRef,
};
use async_graphql::{ErrorExtensions, Name, Value};
use futures::StreamExt;

use super::record::{id_vars, Record};
use super::{lower_first, upper_first, Obj};
use crate::chart::template::Value as KeyValue;
use crate::chart::types::Type;
use crate::chart::Chart;
use crate::graphql::context::RequestContext;
use crate::graphql::errors::ApiError;
use crate::graphql::subscription::tenant_events;
use crate::live::{Change, EventKind};
use crate::store::AttributeValue;

/// One event, as a parent value.
struct Event {
    kind: &'static str,
    obj: Obj,
    changed: Vec<String>,
    /// Each declared `previous` attribute's value before an update that changed it.
    previous: Vec<(String, Value)>,
    cursor: String,
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
            schema = schema.register(event_type(chart, &sub.entity));
        }
        root = root.field(field(chart, name));
    }
    schema.register(root)
}

/// The attributes whose value before a change the events of `entity` carry
/// (`previous{Attribute}`), with their descriptions: what its subscriptions declare.
fn previous_of<'c>(chart: &'c Chart, entity: &str) -> Vec<(&'c String, &'c String)> {
    let mut out: Vec<(&String, &String)> = Vec::new();
    for sub in chart.subscriptions.values().filter(|s| s.entity == entity) {
        for (attr, description) in &sub.previous {
            if !out.iter().any(|(a, _)| *a == attr) {
                out.push((attr, description));
            }
        }
    }
    out
}

fn event_type(chart: &Chart, entity: &str) -> Object {
    let e = &chart.entities[entity];
    let mut obj = Object::new(event_type_name(entity))
        .description(format!("A change to {}.", crate::chart::one(entity)))
        .field(answer("kind", TypeRef::named_nn("ChangeKind"), |e| {
            FieldValue::value(Value::Enum(Name::new(e.kind)))
        }))
        .field(
            answer(&lower_first(entity), TypeRef::named_nn(entity), |e| {
                FieldValue::owned_any(e.obj.clone())
            })
            .description(format!(
                "The {} after the change; for `DELETED`, as it was.",
                crate::chart::words(entity)
            )),
        );
    for (attr, description) in previous_of(chart, entity) {
        let a = attr.clone();
        let mut f = Field::new(
            format!("previous{}", upper_first(attr)),
            super::type_ref(&e.attributes[attr].ty, true),
            move |ctx| {
                let v = ctx.parent_value.downcast_ref::<Event>().and_then(|e| {
                    e.previous
                        .iter()
                        .find(|(p, _)| *p == a)
                        .filter(|(_, v)| !matches!(v, Value::Null))
                        .map(|(_, v)| FieldValue::value(v.clone()))
                });
                FieldFuture::Value(v)
            },
        );
        if !description.is_empty() {
            f = f.description(description);
        }
        obj = obj.field(f);
    }
    let changed = chart
        .subscriptions
        .values()
        .any(|s| s.entity == entity && s.changed);
    if changed {
        obj = obj.field(
            answer("changed", TypeRef::named_nn_list_nn(TypeRef::STRING), |e| {
                FieldValue::value(Value::List(
                    e.changed.iter().map(|c| Value::String(c.clone())).collect(),
                ))
            })
            .description(
                "For `UPDATED`, the attributes the change gave another value; empty otherwise.",
            ),
        );
    }
    obj.field(
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
    let tenant = chart.live[name].tenant.clone();
    let c = chart.clone();
    let (sub_name, arg) = (name.to_owned(), tenant.clone());
    let mut f = SubscriptionField::new(
        name,
        TypeRef::named_nn(event_type_name(&sub.entity)),
        move |ctx| {
            let chart = c.clone();
            let (name, arg) = (sub_name.clone(), arg.clone());
            SubscriptionFieldFuture::new(async move {
                let plan = &chart.live[&name];
                let tenant = ctx.args.try_get(&arg)?.string()?.to_owned();
                let after = match ctx.args.get("after") {
                    Some(v) if !v.is_null() => Some(v.string()?.to_owned()),
                    _ => None,
                };
                let mut filters: Vec<(String, String)> = Vec::new();
                for crate::chart::plan::Filter {
                    argument: arg,
                    attribute: attr,
                } in &plan.filters
                {
                    let Some(v) = ctx.args.get(arg).filter(|v| !v.is_null()) else {
                        continue;
                    };
                    let Some(t) = text(v.as_value()) else {
                        continue;
                    };
                    if attr == "id" {
                        filters.extend(by_id(&chart, &plan.entity, arg, &t, &tenant)?);
                    } else {
                        filters.push((attr.clone(), checked(&chart, &plan.entity, arg, attr, &t)?));
                    }
                }
                let entity = plan.entity.clone();
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
                let field = lower_first(&plan.entity);
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
    .argument(InputValue::new(&tenant, TypeRef::named_nn(TypeRef::STRING)));
    let ty = |attr: &str| match &entity.attributes[attr].ty {
        Type::Enum { name, .. } => name.clone(),
        Type::Int { .. } => TypeRef::INT.into(),
        _ => TypeRef::STRING.into(),
    };
    for filter in &sub.filters {
        f = f.argument(InputValue::new(filter, TypeRef::named(ty(filter))));
    }
    for (name, a) in &sub.arguments {
        let named = if a.attribute == "id" {
            TypeRef::ID.to_owned()
        } else {
            ty(&a.attribute)
        };
        let mut arg = InputValue::new(
            name,
            if a.required {
                TypeRef::named_nn(named)
            } else {
                TypeRef::named(named)
            },
        );
        if let Some(d) = &a.description {
            arg = arg.description(d);
        }
        f = f.argument(arg);
    }
    f = f.argument(InputValue::new("after", TypeRef::named(TypeRef::STRING)));
    f.description(sub.description.clone().unwrap_or_else(|| {
        format!(
            "Changes to a {tenant}'s {} items: created, updated, deleted. With `after` (an event's \
             `cursor`), what happened since that event comes first, then what happens from now on.",
            sub.entity
        )
    }))
}

/// A filter's value, as the item holds it: a kind's checked (`BAD_USER_INPUT` naming the
/// argument), an email lowercased.
fn checked(
    chart: &Chart,
    entity: &str,
    arg: &str,
    attr: &str,
    value: &str,
) -> async_graphql::Result<String> {
    match &chart.entities[entity].attributes[attr].ty {
        Type::Kind(k) => k
            .validate("value", value)
            .map_err(|m| ApiError::bad_input(arg, m.replacen("value", arg, 1)).extend()),
        _ => Ok(value.to_owned()),
    }
}

/// The filters an id argument stands for: the plain id, or the key values of a global id,
/// which must be an item of `entity` of this tenant (else `BAD_USER_INPUT`).
fn by_id(
    chart: &Chart,
    entity: &str,
    arg: &str,
    value: &str,
    tenant: &str,
) -> async_graphql::Result<Vec<(String, String)>> {
    let e = &chart.entities[entity];
    let vars = id_vars(chart, e, arg, value).map_err(|e| e.extend())?;
    // A plain id names no tenant: the subscription's tenant holds it.
    let vars = vars.filter(|vars| {
        chart
            .tenant_attribute(e)
            .and_then(|t| vars.get(&t))
            .is_none_or(|v| text_of(v) == tenant)
    });
    let Some(vars) = vars else {
        let of = chart
            .tenant
            .as_ref()
            .map_or_else(|| "tenant".to_owned(), |t| crate::chart::words(&t.entity));
        return Err(ApiError::bad_input(
            arg,
            format!("not {} of this {of}", crate::chart::one(entity)),
        )
        .extend());
    };
    Ok(vars.iter().map(|(k, v)| (k.clone(), text_of(v))).collect())
}

fn text_of(v: &KeyValue) -> String {
    match v {
        KeyValue::Text(t) => t.clone(),
        KeyValue::Int(i) => i.to_string(),
    }
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
    let e = Record::entity(&obj.rec, chart);
    let previous = previous_of(chart, &e.name)
        .into_iter()
        .map(|(attr, _)| {
            let value = match (c.kind, &c.before, &c.after) {
                (EventKind::Updated, Some(before), Some(after))
                    if before.get(attr) != after.get(attr) =>
                {
                    Record::new(e.name.as_str().into(), before.clone()).value(
                        chart,
                        attr,
                        &e.attributes[attr],
                    )
                }
                _ => Value::Null,
            };
            (attr.clone(), value)
        })
        .collect();
    Some(Event {
        previous,
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
