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
    for child in &connections {
        let (conn, edge) = resolve::connection_types(&chart, child);
        schema = schema.register(conn).register(edge);
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

/// A type [`build`] registers: its name, the entity it is of (where one), and what it is,
/// as a refusal of two types of one name says it.
pub struct SchemaType {
    pub name: String,
    pub entity: Option<String>,
    pub what: String,
}

/// Every type [`build`] registers for `chart`, in the order it does (rule `names` refuses a
/// chart where two share a name: the schema would keep only the later):
///
/// - GraphQL's scalars `Int`, `Float`, `String`, `Boolean`, `ID`, and `Cents`;
/// - each enum, and `Role` where the chart declares no enum of that name;
/// - each shape; `{T}Entry` for each map of `T` (`Int`, `Boolean`, `Cents`, `String`, an
///   enum or a shape);
/// - `PageInfo` and `Node`; each entity that is a type; `{Child}Connection` and
///   `{Child}Edge` for each entity a connection pages; `Viewer`;
/// - with mutations: `{T}EntryInput` for each map of `T`, `{Shape}Input` for each shape, `{Name}Input` and `{Name}Payload` for
///   each mutation (`createStore`: `CreateStoreInput`), `{Child}Input` for each child a
///   create writes with its parent, and `Mutation`;
/// - with subscriptions: `ChangeKind`, `{Entity}Event` for each entity streamed, and
///   `Subscription`;
/// - `Query`.
pub fn types(chart: &Chart) -> Vec<SchemaType> {
    let mut out = Vec::new();
    let mut add = |name: String, entity: Option<&str>, what: String| {
        out.push(SchemaType {
            name,
            entity: entity.map(str::to_owned),
            what,
        })
    };
    let own = "one of the schema's own types";
    for name in ["Int", "Float", "String", "Boolean", "ID", "Cents"] {
        add(name.to_owned(), None, own.to_owned());
    }
    for name in chart.enums.keys() {
        add(name.clone(), None, format!("enum {name}"));
    }
    if !chart.enums.contains_key("Role") {
        add("Role".to_owned(), None, own.to_owned());
    }
    for name in chart.shapes.keys() {
        add(name.clone(), None, format!("shape {name}"));
    }
    for (entity, of) in map_elements(chart) {
        add(
            format!("{}Entry", inner_name(of)),
            entity,
            format!("the entries of a map of {}", of.describe()),
        );
    }
    add("PageInfo".to_owned(), None, own.to_owned());
    add("Node".to_owned(), None, own.to_owned());
    let mut paged: Vec<&str> = Vec::new();
    for e in chart.entities.values().filter(|e| e.graphql) {
        add(
            e.name.clone(),
            Some(e.name.as_str()),
            format!("entity {}", e.name),
        );
        for c in e.connections.values() {
            if let Some(Request::Query { children, .. }) =
                chart.patterns.get(&c.pattern).map(|p| &p.request)
            {
                if !paged.contains(&children.as_str()) {
                    paged.push(children.as_str());
                }
            }
        }
    }
    for child in paged.iter().copied() {
        add(
            format!("{child}Connection"),
            Some(child),
            format!("the connection type of {child}'s pages"),
        );
        add(
            format!("{child}Edge"),
            Some(child),
            format!("the edge type of {child}'s pages"),
        );
    }
    add("Viewer".to_owned(), None, own.to_owned());
    if !chart.mutations.is_empty() {
        for (entity, of) in map_elements(chart) {
            add(
                mutate::map_entry_input(of),
                entity,
                format!("the input of an entry of a map of {}", of.describe()),
            );
        }
        for name in chart.shapes.keys() {
            add(
                mutate::shape_input(name),
                None,
                format!("the input form of shape {name}"),
            );
        }
        let mut written: Vec<&str> = Vec::new();
        for m in chart.mutations.values() {
            let entity = Some(m.entity.as_str());
            let of = |what: &str| format!("the {what} of mutation `{}`", m.name);
            add(mutate::input_name(m), entity, of("input"));
            add(mutate::payload_name(m), entity, of("payload"));
            let Some(e) = chart.entities.get(&m.entity) else {
                continue;
            };
            for list in m.with.keys() {
                let Some(child) =
                    crate::chart::list_child(&chart.entities, &chart.patterns, e, list)
                else {
                    continue;
                };
                if !written.contains(&child.name.as_str()) {
                    written.push(child.name.as_str());
                    add(
                        mutate::child_input_name(child),
                        Some(child.name.as_str()),
                        format!("the input of {} written with {}", child.name, e.name),
                    );
                }
            }
        }
        add("Mutation".to_owned(), None, own.to_owned());
    }
    if !chart.subscriptions.is_empty() {
        add("ChangeKind".to_owned(), None, own.to_owned());
        let mut streamed: Vec<&str> = Vec::new();
        for sub in chart.subscriptions.values() {
            if !streamed.contains(&sub.entity.as_str()) {
                streamed.push(sub.entity.as_str());
                add(
                    live::event_type_name(&sub.entity),
                    Some(sub.entity.as_str()),
                    format!("the events of {}", sub.entity),
                );
            }
        }
        add("Subscription".to_owned(), None, own.to_owned());
    }
    add("Query".to_owned(), None, own.to_owned());
    out
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

pub(super) fn inner_name(ty: &Type) -> String {
    match ty {
        Type::Int { .. } | Type::Counter => "Int".into(),
        Type::Boolean => "Boolean".into(),
        Type::Cents { .. } => "Cents".into(),
        Type::Enum { name, .. } | Type::Shape(name) => name.clone(),
        _ => "String".into(),
    }
}

/// `{T}Entry { key, value }` for every map attribute of element type T.
/// The element type of each map the chart's entities and shapes hold, once each (by the
/// name its entries take), with the first entity holding one (a shape's has none): what
/// the `{T}Entry` outputs and `{T}EntryInput` inputs are made for.
pub(super) fn map_elements(chart: &Chart) -> Vec<(Option<&str>, &Type)> {
    let attributes = chart
        .entities
        .values()
        .flat_map(|e| {
            e.attributes
                .values()
                .map(move |a| (Some(e.name.as_str()), a))
        })
        .chain(
            chart
                .shapes
                .values()
                .flat_map(|s| s.values().map(|a| (None, a))),
        );
    let mut out: Vec<(Option<&str>, &Type)> = Vec::new();
    for (entity, a) in attributes {
        if let Type::Map { of, .. } = &a.ty {
            if !out.iter().any(|(_, o)| inner_name(o) == inner_name(of)) {
                out.push((entity, of));
            }
        }
    }
    out
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
    obj
}

/// A connection's arguments beyond paging: the variables of its pattern its owner does
/// not give, each with its GraphQL type (`?` levels optional).
pub(super) fn connection_arguments(
    chart: &Chart,
    owner: &Entity,
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
            if owner.attributes.contains_key(&v.name) || out.iter().any(|(n, ..)| *n == v.name) {
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

/// `store` → `Store`: a name as a type or a field part spells it.
pub(crate) fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// `Store` → `store`: an entity's name as a field spells it.
pub(crate) fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}
