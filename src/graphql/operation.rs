//! What the server reads off a parsed document before running it: the operation a request
//! selects, whether it asks for introspection, how many aliases it holds.

use std::collections::{HashMap, HashSet};

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

/// What a lexical scan of a document's text found: how many tokens it holds and how deep
/// its braces, brackets and parentheses nest. The scan is one pass over the bytes, with no
/// recursion and no allocation, and stops at the first limit passed: it runs before the
/// parser, whose recursion over nested values and selections it bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextShape {
    Fits,
    /// More than this many tokens (names, numbers, strings, punctuators).
    TooManyTokens,
    /// `{`, `[` and `(` nested deeper than allowed.
    TooDeep,
}

/// Scans `text` as GraphQL's lexical grammar has it (white space, commas and comments are
/// ignored; strings and block strings are one token, whatever brackets they hold).
pub fn text_shape(text: &str, max_tokens: usize, max_nesting: usize) -> TextShape {
    let b = text.as_bytes();
    let (mut i, mut tokens, mut depth) = (0, 0usize, 0usize);
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
                continue;
            }
            b'"' if b[i..].starts_with(b"\"\"\"") => {
                // A block string ends at the next `"""` not escaped as `\"""`.
                i += 3;
                while i < b.len() && !b[i..].starts_with(b"\"\"\"") {
                    i += if b[i..].starts_with(b"\\\"\"\"") {
                        4
                    } else {
                        1
                    };
                }
                i += 3;
            }
            b'"' => {
                // A string ends at an unescaped `"` or at the end of its line.
                i += 1;
                while i < b.len() && !matches!(b[i], b'"' | b'\n' | b'\r') {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'{' | b'[' | b'(' => {
                depth += 1;
                if depth > max_nesting {
                    return TextShape::TooDeep;
                }
                i += 1;
            }
            b'}' | b']' | b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'.' if b[i..].starts_with(b"...") => i += 3,
            c if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'.') => {
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'-' | b'+' | b'.'))
                {
                    i += 1;
                }
            }
            // Punctuators, and anything the parser will refuse: one token each.
            _ => i += 1,
        }
        tokens += 1;
        if tokens > max_tokens {
            return TextShape::TooManyTokens;
        }
    }
    TextShape::Fits
}

/// The size of a parsed document once its fragments are expanded where they are spread,
/// as validation and execution walk it: every field counted once per place it is reached,
/// and the deepest nesting of selection sets and fragment spreads. Each fragment is
/// measured once (memoized by name, in an explicit work list rather than by recursion
/// through spreads), so the cost is proportional to the document's size however its
/// fragments fan out. A fragment that spreads itself, directly or around a loop, counts
/// as empty here; validation refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Expanded {
    pub fields: usize,
    pub nesting: usize,
}

impl Expanded {
    fn add(self, other: Expanded) -> Expanded {
        Expanded {
            fields: self.fields.saturating_add(other.fields),
            nesting: self.nesting.max(other.nesting),
        }
    }
}

/// The expanded size of every operation of `doc` together: validation walks them all.
pub fn expanded(doc: &ExecutableDocument) -> Expanded {
    let fragments = expand_fragments(doc);
    doc.operations
        .iter()
        .map(|(_, op)| set_size(&op.node.selection_set.node, &fragments))
        .fold(Expanded::default(), Expanded::add)
}

/// Each fragment's expanded size, fragments it spreads first (post-order over the spread
/// graph, iteratively: a chain of thousands of fragments must not recurse that deep).
fn expand_fragments(doc: &ExecutableDocument) -> HashMap<&str, Expanded> {
    let mut done: HashMap<&str, Expanded> = HashMap::with_capacity(doc.fragments.len());
    let mut open: HashSet<&str> = HashSet::new();
    for start in doc.fragments.keys() {
        let mut work: Vec<(&str, bool)> = vec![(start.as_str(), false)];
        while let Some((name, ready)) = work.pop() {
            if done.contains_key(name) {
                continue;
            }
            let Some(fragment) = doc.fragments.get(&Name::new(name)) else {
                // Spread of an unknown fragment: validation says so.
                continue;
            };
            let set = &fragment.node.selection_set.node;
            if ready {
                open.remove(name);
                let size = set_size(set, &done);
                done.insert(name, size);
            } else if open.insert(name) {
                work.push((name, true));
                let mut spreads = Vec::new();
                spreads_in(set, &mut spreads);
                work.extend(
                    spreads
                        .into_iter()
                        .filter(|s| !done.contains_key(s) && !open.contains(s))
                        .map(|s| (s, false)),
                );
            }
        }
    }
    done
}

/// The names of the fragments a selection set spreads, at any depth of its own.
fn spreads_in<'a>(set: &'a SelectionSet, out: &mut Vec<&'a str>) {
    for item in &set.items {
        match &item.node {
            Selection::Field(f) => spreads_in(&f.node.selection_set.node, out),
            Selection::InlineFragment(f) => spreads_in(&f.node.selection_set.node, out),
            Selection::FragmentSpread(s) => out.push(s.node.fragment_name.node.as_str()),
        }
    }
}

/// A selection set's expanded size, given the sizes of the fragments it spreads (one
/// missing from `fragments` is unknown or in a cycle: empty). Recurses only through the
/// set's own nesting, which the text's nesting limit bounds.
fn set_size(set: &SelectionSet, fragments: &HashMap<&str, Expanded>) -> Expanded {
    let inner = set
        .items
        .iter()
        .map(|item| match &item.node {
            Selection::Field(f) => {
                let sub = set_size(&f.node.selection_set.node, fragments);
                Expanded {
                    fields: sub.fields.saturating_add(1),
                    nesting: sub.nesting,
                }
            }
            Selection::InlineFragment(f) => set_size(&f.node.selection_set.node, fragments),
            Selection::FragmentSpread(s) => fragments
                .get(s.node.fragment_name.node.as_str())
                .copied()
                .unwrap_or_default(),
        })
        .fold(Expanded::default(), Expanded::add);
    Expanded {
        fields: inner.fields,
        nesting: inner.nesting.saturating_add(1),
    }
}
