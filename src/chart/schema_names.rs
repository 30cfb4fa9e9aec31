//! The GraphQL names a chart gives what it serves: every type of its schema, resolved
//! from the chart alone (rule `names` refuses a chart where two types share a name), and
//! the names of its inputs, payloads and events. The GraphQL layer builds the schema under
//! these names; nothing else spells them.

use super::types::Type;
use super::{Chart, Entity, Mutation, Request};

/// A type the schema registers: its name, the entity it is of (where one), and what it is,
/// as a refusal of two types of one name says it.
pub struct SchemaType {
    pub name: String,
    pub entity: Option<String>,
    pub what: String,
}

/// Every type the schema registers ([`crate::graphql::build`]) for `chart`, in the order it does (rule `names` refuses a
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
    // A Scan pattern's children are paged by a root connection, as a root field's Query
    // of no parent's are.
    for p in chart.patterns.values() {
        if let Request::Scan { children, .. } = &p.request {
            if !paged.contains(&children.as_str()) {
                paged.push(children.as_str());
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
            if *children == root.entity && !paged.contains(&children.as_str()) {
                paged.push(children.as_str());
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
    // Each collection of several kinds: its union, its kinds, its connection and edge.
    for e in chart.entities.values().filter(|e| e.graphql) {
        for field in e.collections.keys() {
            let name = collection_name(e, field);
            for (suffix, what) in [
                ("Item", "the union of the kinds of"),
                ("Kind", "the kinds of"),
                ("Connection", "the connection type of"),
                ("Edge", "the edge type of"),
            ] {
                add(
                    format!("{name}{suffix}"),
                    Some(&e.name),
                    format!("{what} `{}.{field}`", e.name),
                );
            }
        }
    }
    add("Viewer".to_owned(), None, own.to_owned());
    if !chart.mutations.is_empty() {
        for (entity, of) in map_elements(chart) {
            add(
                map_entry_input(of),
                entity,
                format!("the input of an entry of a map of {}", of.describe()),
            );
        }
        for name in chart.shapes.keys() {
            add(
                shape_input(name),
                None,
                format!("the input form of shape {name}"),
            );
        }
        let mut written: Vec<&str> = Vec::new();
        for m in chart.mutations.values() {
            let entity = Some(m.entity.as_str());
            let of = |what: &str| format!("the {what} of mutation `{}`", m.name);
            add(input_name(m), entity, of("input"));
            add(payload_name(m), entity, of("payload"));
            let Some(e) = chart.entities.get(&m.entity) else {
                continue;
            };
            for list in m.with.keys() {
                let Some(child) = super::list_child(&chart.entities, &chart.patterns, e, list)
                else {
                    continue;
                };
                if !written.contains(&child.name.as_str()) {
                    written.push(child.name.as_str());
                    add(
                        child_input_name(child),
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
                    event_type_name(&sub.entity),
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

pub fn inner_name(ty: &Type) -> String {
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
pub fn map_elements(chart: &Chart) -> Vec<(Option<&str>, &Type)> {
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

/// `store` → `Store`: a name as a type or a field part spells it.
/// The GraphQL name of collection `field` of `owner` (`RepoTracker`): its union is
/// `…Item`, its kinds `…Kind`, its connection `…Connection`, its edge `…Edge`.
pub fn collection_name(owner: &Entity, field: &str) -> String {
    format!("{}{}", owner.name, upper_first(field))
}

/// The typed list of one kind on a collection's page (`issueNodes`).
pub fn kind_field(kind: &str) -> String {
    format!("{}Nodes", lower_first(kind))
}

pub fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// `Store` → `store`: an entity's name as a field spells it.
pub fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// The name of a shape's input object (`Hours` → `HoursInput`).
pub fn shape_input(shape: &str) -> String {
    format!("{shape}Input")
}

/// The name of the input object of one entry of a map of `of` (`StringEntryInput`), as
/// its output is `StringEntry`.
pub fn map_entry_input(of: &Type) -> String {
    format!("{}EntryInput", inner_name(of))
}

pub fn child_input_name(child: &Entity) -> String {
    format!("{}Input", child.name)
}

pub fn input_name(m: &Mutation) -> String {
    format!("{}Input", upper_first(&m.name))
}

pub fn payload_name(m: &Mutation) -> String {
    format!("{}Payload", upper_first(&m.name))
}

pub fn event_type_name(entity: &str) -> String {
    format!("{entity}Event")
}
