//! The cost of a document against a chart's schema, by the rule every connection of the API
//! costs ([`crate::graphql::page_cost`]): a field 1 plus what it selects, a connection its
//! page size times what each node selects, `nodes` its ids times that, a list its largest
//! page times that. async-graphql's dynamic schema has no per-field cost of its own, so
//! the checker's extension asks this one.

use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::registry::{MetaTypeName, Registry};
use async_graphql::{Value, Variables};
use async_graphql_value::Value as Input;

use crate::chart::MAX_PAGE_SIZE;
use crate::graphql::page_cost;

/// Guards the walk over fragments spread inside themselves (validation refuses those, but
/// the cost is computed before it).
const MAX_WALK: usize = 64;

/// What the walk finds: the most any operation of the document costs, and where an
/// `Int` argument holds a number past 32 bits (which the derived types refuse as the
/// document is read, and the dynamic schema's `Int` lets through).
pub struct Costed {
    pub cost: usize,
    pub wide_int: Option<async_graphql::Pos>,
}

/// The message a derived `Int` argument past 32 bits is refused with.
pub const WIDE_INT: &str =
    "Failed to parse \"Int\": Only integers from -2147483648 to 2147483647 are accepted.";

/// The most any operation of `doc` costs.
pub fn document_cost(
    registry: &Registry,
    doc: &ExecutableDocument,
    variables: &Variables,
    lists: &[(String, String)],
) -> Costed {
    let walk = Walk {
        registry,
        doc,
        variables,
        lists,
        wide_int: std::cell::Cell::new(None),
    };
    let cost = doc
        .operations
        .iter()
        .map(|(_, op)| {
            let root = match op.node.ty {
                async_graphql::parser::types::OperationType::Query => {
                    Some(registry.query_type.as_str())
                }
                async_graphql::parser::types::OperationType::Mutation => {
                    registry.mutation_type.as_deref()
                }
                async_graphql::parser::types::OperationType::Subscription => {
                    registry.subscription_type.as_deref()
                }
            };
            root.map_or(0, |root| walk.set(root, &op.node.selection_set.node, 0))
        })
        .max()
        .unwrap_or(0);
    Costed {
        cost,
        wide_int: walk.wide_int.get(),
    }
}

/// What the walk reads: the schema's types, the document, its variables, and the chart's
/// lists as (type, field).
struct Walk<'a> {
    registry: &'a Registry,
    doc: &'a ExecutableDocument,
    variables: &'a Variables,
    lists: &'a [(String, String)],
    wide_int: std::cell::Cell<Option<async_graphql::Pos>>,
}

impl Walk<'_> {
    fn set(&self, ty: &str, set: &SelectionSet, depth: usize) -> usize {
        let (registry, doc, variables) = (self.registry, self.doc, self.variables);
        if depth > MAX_WALK {
            return usize::MAX / 2;
        }
        let mut total = 0usize;
        for sel in &set.items {
            let cost = match &sel.node {
                Selection::Field(f) => {
                    let f = &f.node;
                    let meta = registry
                        .types
                        .get(ty)
                        .and_then(|t| t.field_by_name(f.name.node.as_str()));
                    let Some(meta) = meta else {
                        total = total.saturating_add(1);
                        continue;
                    };
                    for (name, value) in &f.arguments {
                        let is_int = meta
                            .args
                            .get(name.node.as_str())
                            .is_some_and(|a| matches!(a.ty.as_str(), "Int" | "Int!"));
                        let wide = match resolve(&value.node, variables) {
                            Some(Value::Number(n)) => {
                                n.as_i64().is_none_or(|n| i32::try_from(n).is_err())
                            }
                            _ => false,
                        };
                        if is_int && wide && self.wide_int.get().is_none() {
                            self.wide_int.set(Some(value.pos));
                        }
                    }
                    let inner = MetaTypeName::concrete_typename(&meta.ty);
                    let child = self.set(inner, &f.selection_set.node, depth + 1);
                    let arg = |name: &str| {
                        f.get_argument(name)
                            .and_then(|v| resolve(&v.node, variables))
                    };
                    if meta.args.contains_key("first") && meta.args.contains_key("last") {
                        let n = |name: &str| match arg(name) {
                            Some(Value::Number(n)) => n
                                .as_i64()
                                .map(|n| n.clamp(i32::MIN.into(), i32::MAX.into()) as i32),
                            _ => None,
                        };
                        page_cost(n("first"), n("last"), child)
                    } else if meta.args.contains_key("ids") {
                        let ids = match arg("ids") {
                            Some(Value::List(l)) => l.len(),
                            _ => 1,
                        };
                        ids.saturating_mul(child).saturating_add(1)
                    } else if self
                        .lists
                        .iter()
                        .any(|(t, n)| t == ty && n == f.name.node.as_str())
                    {
                        (MAX_PAGE_SIZE as usize)
                            .saturating_mul(child)
                            .saturating_add(1)
                    } else {
                        child.saturating_add(1)
                    }
                }
                Selection::InlineFragment(frag) => {
                    let on = frag
                        .node
                        .type_condition
                        .as_ref()
                        .map_or(ty, |c| c.node.on.node.as_str());
                    self.set(on, &frag.node.selection_set.node, depth + 1)
                }
                Selection::FragmentSpread(spread) => {
                    match doc.fragments.get(&spread.node.fragment_name.node) {
                        Some(frag) => self.set(
                            frag.node.type_condition.node.on.node.as_str(),
                            &frag.node.selection_set.node,
                            depth + 1,
                        ),
                        None => 0,
                    }
                }
            };
            total = total.saturating_add(cost);
        }
        total
    }
}

fn resolve(v: &Input, variables: &Variables) -> Option<Value> {
    match v {
        Input::Variable(name) => variables.get(name).cloned(),
        other => other.clone().into_const(),
    }
}
