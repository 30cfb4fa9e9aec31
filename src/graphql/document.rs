//! What the server reads off a parsed document before running it: the operation a request
//! selects, whether it asks for introspection, how many aliases it holds.

use std::collections::HashSet;

use async_graphql::parser::types::{
    ExecutableDocument, OperationDefinition, Selection, SelectionSet,
};
use async_graphql::{Name, Positioned};

/// The operation a request runs: the one named `name`, or the document's only one when
/// no name is given; `None` when there is no such single operation (execution then says
/// why). With its name, when it has one.
pub fn selected_operation<'a>(
    doc: &'a ExecutableDocument,
    name: Option<&str>,
) -> Option<(Option<&'a Name>, &'a Positioned<OperationDefinition>)> {
    let mut ops = doc.operations.iter();
    match name {
        Some(name) => ops.find(|(n, _)| n.is_some_and(|n| n.as_str() == name)),
        None => match (ops.next(), ops.next()) {
            (Some(op), None) => Some(op),
            _ => None,
        },
    }
}

/// Whether an operation selects `__schema` or `__type` at its root, directly or through
/// fragments (each followed once, so a fragment cycle, refused later, ends here too).
pub fn selects_introspection(doc: &ExecutableDocument) -> bool {
    fn in_set<'a>(
        doc: &'a ExecutableDocument,
        set: &'a SelectionSet,
        seen: &mut HashSet<&'a str>,
    ) -> bool {
        set.items.iter().any(|item| match &item.node {
            Selection::Field(f) => matches!(f.node.name.node.as_str(), "__schema" | "__type"),
            Selection::InlineFragment(f) => in_set(doc, &f.node.selection_set.node, seen),
            Selection::FragmentSpread(s) => {
                let name = s.node.fragment_name.node.as_str();
                seen.insert(name)
                    && doc
                        .fragments
                        .get(&s.node.fragment_name.node)
                        .is_some_and(|f| in_set(doc, &f.node.selection_set.node, seen))
            }
        })
    }
    doc.operations
        .iter()
        .any(|(_, op)| in_set(doc, &op.node.selection_set.node, &mut Default::default()))
}

/// Aliased fields anywhere in the document: every operation and every fragment, each
/// counted once however often it is spread (complexity counts the spreads).
pub fn count_aliases(doc: &ExecutableDocument) -> usize {
    fn in_set(set: &Positioned<SelectionSet>) -> usize {
        set.node
            .items
            .iter()
            .map(|item| match &item.node {
                Selection::Field(f) => {
                    usize::from(f.node.alias.is_some()) + in_set(&f.node.selection_set)
                }
                Selection::InlineFragment(f) => in_set(&f.node.selection_set),
                Selection::FragmentSpread(_) => 0,
            })
            .sum()
    }
    doc.operations
        .iter()
        .map(|(_, op)| in_set(&op.node.selection_set))
        .chain(
            doc.fragments
                .values()
                .map(|f| in_set(&f.node.selection_set)),
        )
        .sum()
}
