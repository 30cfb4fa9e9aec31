//! The schema of a chart, built once at start ([`build`]): an object type per entity, a
//! Relay connection per paged relationship, `node`/`nodes`, the chart's root fields and
//! `viewer`, its mutations and subscriptions, on async-graphql's dynamic schema. Every
//! field resolves through the chart's access patterns, one store request each:
//!
//! - a root field reads its entity by key (through the DataLoader), or, when a first page
//!   of a connection whose pattern carries it is selected, takes it from that page's one
//!   Query; every page selected below it is read ahead, concurrently ([`resolve`]);
//! - a connection's later pages query the children's prefix from the last-seen key,
//!   cursors signed for their connection;
//! - references and `node`/`nodes` are batched by the DataLoader into BatchGetItem.
//!
//! [`super::record`] decodes items and names them by global id; [`super::read`] makes the
//! store requests, each its pattern's resolved plan filled in; [`super::mutate`] registers
//! the mutations and [`super::live`] the subscriptions.

use std::sync::Arc;

use async_graphql::dynamic::{
    Enum, EnumItem, Field, FieldFuture, FieldValue, InputValue, Interface, InterfaceField, Object,
    Scalar, Schema, SchemaBuilder, TypeRef,
};
use async_graphql::Value;

use super::{live, mutate, resolve};
pub(crate) use crate::chart::schema_names::{inner_name, lower_first, map_elements, upper_first};
pub use crate::chart::schema_names::{types, SchemaType};
use crate::chart::types::Type;
use crate::chart::{Chart, Entity, Request};

/// The schema's builder for `chart`: its types, the Query root, and the Mutation and
/// Subscription roots of what it declares (the caller adds the limits and extensions and
/// finishes it).
pub fn build(chart: Arc<Chart>) -> SchemaBuilder {
    let declared_writes = !chart.mutations.is_empty();
    let declared_live = !chart.subscriptions.is_empty();
    let mut schema = Schema::build(
        "Query",
        declared_writes.then_some("Mutation"),
        declared_live.then_some("Subscription"),
    );
    schema = schema.register(
        // As the derived `Cents` says it ([`crate::graphql::scalars`]); a value is parsed
        // by it where the input is read, when the field runs (`BAD_USER_INPUT`).
        Scalar::new("Cents").description(
            "An amount of money in cents, as a decimal string of a whole number: `\"10000000000\"` is\n\
             100,000,000.00. Exact in every client whatever its size (parse it with `BigInt` in\n\
             JavaScript). As input: such a string, or a whole number up to 2^53.",
        ),
    );
    for (name, e) in &chart.enums {
        let mut en = Enum::new(name).items(e.values.iter().map(EnumItem::new));
        if let Some(d) = &e.description {
            en = en.description(d);
        }
        schema = schema.register(en);
    }
    if !chart.enums.contains_key("Role") {
        schema = schema.register(
            Enum::new("Role")
                .description("What a caller may do in their organization.")
                .items(["ADMIN", "MEMBER"].map(EnumItem::new)),
        );
    }
    for (name, fields) in &chart.shapes {
        let mut obj = Object::new(name);
        for (field, a) in fields {
            let f = field.clone();
            let optional = a.optional;
            let mut gf = Field::new(field, type_ref(&a.ty, a.optional), move |ctx| {
                let v = match ctx.parent_value.as_value() {
                    Some(Value::Object(o)) => o.get(f.as_str()).cloned().unwrap_or_default(),
                    _ => Value::Null,
                };
                FieldFuture::Value(resolve::answered(v, optional))
            });
            if let Some(d) = &a.description {
                gf = gf.description(d);
            }
            obj = obj.field(gf);
        }
        schema = schema.register(obj);
    }
    for entry in map_entry_types(&chart) {
        schema = schema.register(entry);
    }
    schema = schema.register(resolve::page_info_type());
    schema = schema.register(
        Interface::new("Node")
            .description("Anything with a global id; `Query.node` and `Query.nodes` fetch it back.")
            .field(
                InterfaceField::new("id", TypeRef::named_nn(TypeRef::ID))
                    .description("Opaque global id."),
            ),
    );
    let mut connections: Vec<String> = Vec::new();
    for e in chart.entities.values().filter(|e| e.graphql) {
        schema = schema.register(entity_type(&chart, e));
        for c in e.connections.values() {
            if let Some(Request::Query { children, .. }) =
                chart.patterns.get(&c.pattern).map(|p| &p.request)
            {
                if !connections.contains(children) {
                    connections.push(children.clone());
                }
            }
        }
    }
    for p in chart.patterns.values() {
        if let Request::Scan { children, .. } = &p.request {
            if !connections.contains(children) {
                connections.push(children.clone());
            }
        }
    }
    for root in chart.query.values() {
        if let Some(Request::Query {
            parent: None,
            children,
            ..
        }) = chart.patterns.get(&root.pattern).map(|p| &p.request)
        {
            if *children == root.entity && !connections.contains(children) {
                connections.push(children.clone());
            }
        }
    }
    for child in &connections {
        let (conn, edge) = resolve::connection_types(&chart, child);
        schema = schema.register(conn).register(edge);
    }
    // Each collection of several kinds: its union, the kinds to narrow it to, its
    // connection and edge.
    for e in chart.entities.values().filter(|e| e.graphql) {
        for (name, c) in &e.collections {
            let Some(Request::Collection { kinds, .. }) =
                chart.patterns.get(&c.pattern).map(|p| &p.request)
            else {
                continue;
            };
            let (union, kind, conn, edge) = resolve::collection_types(e, name, kinds);
            schema = schema
                .register(union)
                .register(kind)
                .register(conn)
                .register(edge);
        }
    }
    schema = schema.register(resolve::viewer_type(&chart));
    if declared_writes {
        schema = mutate::register(schema, &chart);
    }
    if declared_live {
        schema = live::register(schema, &chart);
    }
    schema.register(resolve::query_type(chart))
}

/// The GraphQL type of an attribute.
pub(super) fn type_ref(ty: &Type, optional: bool) -> TypeRef {
    let name = |ty: &Type| -> String {
        match ty {
            Type::Int { .. } | Type::Counter => TypeRef::INT.into(),
            Type::Boolean => TypeRef::BOOLEAN.into(),
            Type::Cents { .. } => "Cents".into(),
            Type::Enum { name, .. } | Type::Shape(name) => name.clone(),
            Type::Map { of, .. } => format!("{}Entry", inner_name(of)),
            _ => TypeRef::STRING.into(),
        }
    };
    match ty {
        Type::List { of, .. } if optional => TypeRef::named_nn_list(name(of)),
        Type::List { of, .. } => TypeRef::named_nn_list_nn(name(of)),
        Type::Map { .. } if optional => TypeRef::named_nn_list(name(ty)),
        Type::Map { .. } => TypeRef::named_nn_list_nn(name(ty)),
        _ if optional => TypeRef::named(name(ty)),
        _ => TypeRef::named_nn(name(ty)),
    }
}

fn map_entry_types(chart: &Chart) -> Vec<Object> {
    let mut out = Vec::new();
    for (_, of) in map_elements(chart) {
        let name = format!("{}Entry", inner_name(of));
        let field = |n: &'static str, ty: TypeRef| {
            Field::new(n, ty, move |ctx| {
                let v = match ctx.parent_value.as_value() {
                    Some(Value::Object(o)) => o.get(n).cloned().unwrap_or_default(),
                    _ => Value::Null,
                };
                FieldFuture::Value(Some(FieldValue::value(v)))
            })
        };
        out.push(
            Object::new(name)
                .field(field("key", TypeRef::named_nn(TypeRef::STRING)))
                .field(field("value", TypeRef::named_nn(inner_name(of)))),
        );
    }
    out
}

/// An entity's object type: its attributes, references, connections and lists.
fn entity_type(chart: &Arc<Chart>, e: &Entity) -> Object {
    let mut obj = Object::new(&e.name);
    if let Some(d) = &e.description {
        obj = obj.description(d);
    }
    if e.node {
        obj = obj.implement("Node").field(resolve::id_field(chart, e));
    }
    for (name, a) in e.attributes.iter().filter(|(_, a)| a.graphql) {
        obj = obj.field(resolve::attribute_field(chart, e, name, a));
    }
    for (name, r) in &e.references {
        obj = obj.field(resolve::reference_field(chart, e, name, r));
    }
    for (name, c) in &e.connections {
        obj = obj.field(resolve::connection_field(chart, e, name, c));
    }
    for (name, l) in &e.lists {
        obj = obj.field(resolve::list_field(chart, e, name, l));
    }
    for (name, c) in &e.collections {
        obj = obj.field(resolve::collection_field(chart, e, name, c));
    }
    obj
}

/// A connection's arguments beyond paging: the variables of its pattern its owner does
/// not give, each with its GraphQL type (`?` levels optional).
pub(super) fn connection_arguments(
    chart: &Chart,
    owner: &Entity,
    pattern: u32,
) -> Vec<(String, Type, bool)> {
    pattern_arguments(chart, Some(owner), pattern)
}

/// The variables of a Query pattern's key condition a caller gives: those its owner's
/// item does not (every one, for a root connection, which has no owner).
pub(super) fn pattern_arguments(
    chart: &Chart,
    owner: Option<&Entity>,
    pattern: u32,
) -> Vec<(String, Type, bool)> {
    let Some(Request::Query { condition, .. }) = chart.patterns.get(&pattern).map(|p| &p.request)
    else {
        return Vec::new();
    };
    let mut out: Vec<(String, Type, bool)> = Vec::new();
    let templates = condition.templates();
    for t in templates {
        for v in t.vars() {
            if owner.is_some_and(|o| o.attributes.contains_key(&v.name))
                || out.iter().any(|(n, ..)| *n == v.name)
            {
                continue;
            }
            if let Some(ty) = chart.var_type(condition, &v.name) {
                out.push((v.name.clone(), ty, v.optional));
            }
        }
    }
    out
}

pub(super) fn argument(name: &str, ty: &Type, optional: bool) -> InputValue {
    let tr = match ty {
        Type::Enum { name, .. } => name.clone(),
        Type::Int { .. } => TypeRef::INT.into(),
        _ => TypeRef::STRING.into(),
    };
    InputValue::new(
        name,
        if optional {
            TypeRef::named(tr)
        } else {
            TypeRef::named_nn(tr)
        },
    )
}

/// Gives every error a resolver of the chart's schema returns the path of its field, as
/// the built-in schema's derived resolvers do: async-graphql's dynamic schema reports
/// them without one, and clients, and null propagation, need it
/// ([`super::null_propagation`]). And lets a nullable item of a list of interfaces be
/// null (`nodes` answering an id of nothing): the dynamic schema has no null for an
/// interface, only a typed value, and refuses [`FieldValue::NULL`] there with the
/// message matched below.
pub struct ErrorPaths;

/// async-graphql's refusal of a value that is not typed, where an interface is expected.
const UNTYPED_INTERFACE: &str = "internal: invalid value for interface";

impl async_graphql::extensions::ExtensionFactory for ErrorPaths {
    fn create(&self) -> Arc<dyn async_graphql::extensions::Extension> {
        Arc::new(ErrorPaths)
    }
}

#[async_trait::async_trait]
impl async_graphql::extensions::Extension for ErrorPaths {
    async fn resolve(
        &self,
        ctx: &async_graphql::extensions::ExtensionContext<'_>,
        info: async_graphql::extensions::ResolveInfo<'_>,
        next: async_graphql::extensions::NextResolve<'_>,
    ) -> async_graphql::ServerResult<Option<Value>> {
        let node = info.path_node;
        let nullable = !info.return_type.ends_with('!');
        match next.run(ctx, info).await {
            Err(e) if nullable && e.message.starts_with(UNTYPED_INTERFACE) => return Ok(None),
            other => other,
        }
        .map_err(|mut e| {
            if e.path.is_empty() {
                let mut path: Vec<async_graphql::PathSegment> = std::iter::once(node)
                    .chain(node.parents())
                    .map(|n| match n.segment {
                        async_graphql::QueryPathSegment::Name(name) => {
                            async_graphql::PathSegment::Field(name.to_owned())
                        }
                        async_graphql::QueryPathSegment::Index(i) => {
                            async_graphql::PathSegment::Index(i)
                        }
                    })
                    .collect();
                path.reverse();
                e.path = path;
            }
            e
        })
    }
}
