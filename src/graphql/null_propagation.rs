//! Null propagation as the GraphQL spec requires it, applied once per response.
//!
//! async-graphql 7 leaves a field that failed out of its parent object instead of setting
//! it to `null`, and never nulls the parent of a failed non-null field. Clients (Relay,
//! Apollo) rely on the spec's rule, so [`propagate`] restores it from the errors' paths
//! after execution: a failed nullable field becomes `null`; a failed non-null field nulls
//! its parent object (or list item), and so on up to the nearest nullable position
//! (ultimately `data` itself). The error is reported once, by the executor, as before.
//! A response without errors costs nothing; the types along an error's path are read off
//! the operation's selections and the schema's registry.

use std::collections::HashMap;

use async_graphql::parser::types::{
    ExecutableDocument, FragmentDefinition, OperationDefinition, Selection, SelectionSet,
};
use async_graphql::registry::{MetaTypeName, Registry};
use async_graphql::{Name, PathSegment, Positioned, Value};

/// Applies null propagation to `resp.data` for each of its errors. `operation` is the one
/// that ran, from `doc`.
pub fn propagate(
    registry: &Registry,
    doc: &ExecutableDocument,
    operation: &OperationDefinition,
    resp: &mut async_graphql::Response,
) {
    if resp.errors.is_empty() {
        return;
    }
    let root = match operation.ty {
        async_graphql::parser::types::OperationType::Query => Some(registry.query_type.as_str()),
        async_graphql::parser::types::OperationType::Mutation => registry.mutation_type.as_deref(),
        async_graphql::parser::types::OperationType::Subscription => {
            registry.subscription_type.as_deref()
        }
    };
    let Some(root) = root else {
        return;
    };
    let walk = Walk {
        registry,
        fragments: &doc.fragments,
    };
    let paths: Vec<Vec<PathSegment>> = resp.errors.iter().map(|e| e.path.clone()).collect();
    for path in paths {
        // A failed list item fails its whole list field, which async-graphql leaves out
        // of its object: the field is what failed.
        let Some(last_field) = path
            .iter()
            .rposition(|s| matches!(s, PathSegment::Field(_)))
        else {
            continue;
        };
        let path = &path[..=last_field];
        let Some(non_null) = walk.non_null_along(root, &operation.selection_set.node, path) else {
            continue;
        };
        // The failed position, then its parents, until one may be null.
        let mut end = path.len();
        loop {
            if end == 0 {
                resp.data = Value::Null;
                return;
            }
            if !non_null[end - 1] {
                set_null(&mut resp.data, &path[..end]);
                break;
            }
            end -= 1;
        }
    }
}

struct Walk<'a> {
    registry: &'a Registry,
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
}

impl<'a> Walk<'a> {
    /// For each position along `path` (a field, or an item of a list), whether its type
    /// is non-null; `None` when the path leaves the operation's selections.
    fn non_null_along(
        &self,
        root: &'a str,
        selection: &'a SelectionSet,
        path: &[PathSegment],
    ) -> Option<Vec<bool>> {
        let mut out = Vec::with_capacity(path.len());
        let mut sets: Vec<(&'a SelectionSet, &'a str)> = vec![(selection, root)];
        // The type at the current position, as written (`[Ticket!]!`).
        let mut ty: String = root.to_owned();
        for seg in path {
            match seg {
                PathSegment::Field(key) => {
                    // Fields under different type conditions may share a response key
                    // with different types (validation allows it): the position counts
                    // as non-null when any of them is, so null never lands where a
                    // client was promised a value (at worst a parent more is nulled).
                    let mut found: Vec<String> = Vec::new();
                    let mut next: Vec<(&'a SelectionSet, &'a str)> = Vec::new();
                    for (set, parent) in &sets {
                        self.fields_named(set, parent, key, &mut |parent, field| {
                            let Some(meta) = self
                                .registry
                                .types
                                .get(parent)
                                .and_then(|t| t.field_by_name(field.name.node.as_str()))
                            else {
                                return;
                            };
                            found.push(meta.ty.clone());
                            if let Some(named) = self
                                .registry
                                .types
                                .get(MetaTypeName::concrete_typename(&meta.ty))
                            {
                                next.push((&field.selection_set.node, named.name()));
                            }
                        });
                    }
                    let non_null = found.iter().any(|t| t.ends_with('!'));
                    ty = found
                        .iter()
                        .find(|t| t.ends_with('!'))
                        .or(found.first())
                        .cloned()?;
                    out.push(non_null);
                    sets = next;
                }
                PathSegment::Index(_) => {
                    let item = match MetaTypeName::create(&ty) {
                        MetaTypeName::NonNull(inner) => match MetaTypeName::create(inner) {
                            MetaTypeName::List(item) => item,
                            _ => return None,
                        },
                        MetaTypeName::List(item) => item,
                        MetaTypeName::Named(_) => return None,
                    };
                    ty = item.to_owned();
                    out.push(ty.ends_with('!'));
                }
            }
        }
        Some(out)
    }

    /// Calls `f` with each field of `set` (fragments followed) whose response key is
    /// `key`, with the type it is selected on.
    fn fields_named(
        &self,
        set: &'a SelectionSet,
        parent: &'a str,
        key: &str,
        f: &mut dyn FnMut(&'a str, &'a async_graphql::parser::types::Field),
    ) {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    if field.node.response_key().node.as_str() == key {
                        f(parent, &field.node);
                    }
                }
                Selection::InlineFragment(frag) => {
                    let on = frag
                        .node
                        .type_condition
                        .as_ref()
                        .map_or(parent, |c| c.node.on.node.as_str());
                    self.fields_named(&frag.node.selection_set.node, on, key, f);
                }
                Selection::FragmentSpread(spread) => {
                    if let Some(frag) = self.fragments.get(&spread.node.fragment_name.node) {
                        let on = frag.node.type_condition.node.on.node.as_str();
                        self.fields_named(&frag.node.selection_set.node, on, key, f);
                    }
                }
            }
        }
    }
}

/// Sets the value at `path` to `null`: a field left out of its object is put back as
/// `null`, a list item is replaced. A path through a value already null stops there.
fn set_null(data: &mut Value, path: &[PathSegment]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    if parents.is_empty() && matches!(data, Value::Null) {
        *data = Value::Object(Default::default());
    }
    let mut cur = data;
    for seg in parents {
        cur = match (seg, cur) {
            (PathSegment::Field(k), Value::Object(map)) => match map.get_mut(k.as_str()) {
                Some(v) => v,
                None => return,
            },
            (PathSegment::Index(i), Value::List(items)) => match items.get_mut(*i) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    match (last, cur) {
        (PathSegment::Field(k), Value::Object(map)) => {
            map.insert(Name::new(k), Value::Null);
        }
        (PathSegment::Index(i), Value::List(items)) => {
            if let Some(item) = items.get_mut(*i) {
                *item = Value::Null;
            }
        }
        _ => {}
    }
}
