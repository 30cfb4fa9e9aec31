//! Generative tests: random and mutated documents and variables run through the whole
//! request path (the limits' text scan and fragment measure, parse, validation, execution
//! against the demo data) must always come back as a response whose every error carries a
//! code: never a panic, never an abort, never a hang.
//!
//! `scripts/test` runs a bounded number of cases (`ITEMGRAPH_GENERATIVE_CASES`, 256 by
//! default); a longer run on demand: `ITEMGRAPH_GENERATIVE_CASES=20000 cargo nextest run
//! --test graphql generative`. A failing case is shrunk by proptest and printed whole, to be kept
//! as a case of `tests/http/hostile_documents.rs`.

use crate::common;

use std::sync::Arc;

use itemgraph::auth::Access;
use itemgraph::graphql::{self, ItemgraphSchema};
use itemgraph::store::Store;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// Documents the mutations start from: every access pattern, a mutation, fragments,
/// variables and directives.
const SEEDS: &[&str] = &[
    include_str!("../../examples/org_users.graphql"),
    include_str!("../../examples/org_orders.graphql"),
    include_str!("../../examples/user_tickets.graphql"),
    include_str!("../../examples/status_queue.graphql"),
    include_str!("../../examples/order_lines.graphql"),
    include_str!("../../examples/ticket.graphql"),
    include_str!("../../examples/node.graphql"),
    include_str!("../../examples/paging.graphql"),
    r#"query Q($slug: String!, $n: Int = 3) { organization(slug: $slug) { ...O users(first: $n) @include(if: true) { edges { cursor node { username } } pageInfo { hasNextPage endCursor } } } } fragment O on Organization { id name slug userCount }"#,
    r#"mutation { createTicket(input: {org: "acme", requester: "wile-e-coyote", title: "Anvil", body: "Heavy", priority: HIGH}) { ticket { id version requester { name } } } }"#,
    r#"{ nodes(ids: ["T3JnYW5pemF0aW9uOmFjbWU", "x"]) { id ... on Organization { name } } __typename }"#,
];

/// Pieces a mutation splices in: structure, nesting, numbers at their boundaries,
/// strings, spreads and directives.
const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "...",
    "...F",
    "fragment F on Query { __typename }",
    "... on Organization { name }",
    "@include(if: false)",
    "@skip(if: $x)",
    "$x",
    "$n",
    "query",
    "mutation",
    "subscription",
    ":",
    "=",
    "!",
    "|",
    "&",
    "#",
    "\"",
    "\"\"\"",
    "\"\\u0000\"",
    "\"\\uD800\"",
    "2147483647",
    "2147483648",
    "-2147483649",
    "1e400",
    "-0",
    "0.5",
    "99999999999999999999999",
    "null",
    "true",
    "ENUM",
    "__schema",
    "__type(name: \"Organization\") { name }",
    "first: 100",
    "last: -1",
    "after: \"x\"",
    "organization(slug: \"acme\")",
    "users",
    "tickets(status: OPEN)",
    "nodes(ids: [])",
    "\u{0}",
    "\u{feff}",
    "é",
    ",",
];

/// One document: a seed, then a few edits (splice a piece, delete a run, repeat a run).
fn document() -> impl Strategy<Value = String> {
    let edit = (
        0usize..3,
        any::<prop::sample::Index>(),
        0usize..PIECES.len(),
        1usize..40,
    );
    (
        0usize..SEEDS.len(),
        prop::collection::vec(edit, 0..8),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(seed, edits, noise)| {
            let mut doc: Vec<char> = SEEDS[seed].chars().collect();
            for (kind, at, piece, len) in edits {
                let at = at.index(doc.len() + 1);
                match kind {
                    0 => {
                        let piece: Vec<char> = PIECES[piece].chars().collect();
                        doc.splice(at..at, piece);
                    }
                    1 => {
                        let end = (at + len).min(doc.len());
                        doc.drain(at..end);
                    }
                    _ => {
                        let end = (at + len).min(doc.len());
                        let run: Vec<char> = doc[at..end].to_vec();
                        for _ in 0..len.min(8) {
                            doc.splice(at..at, run.iter().copied());
                        }
                    }
                }
            }
            let doc: String = doc.into_iter().collect();
            if noise {
                // A tenth of the cases: bytes the lexer never expects.
                doc.replace('o', "\u{1}")
            } else {
                doc
            }
        })
}

/// Variables: none, or an object of a few JSON values of any shape (nested a little).
fn variables() -> impl Strategy<Value = Option<Value>> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z0-9#\\-]{0,12}".prop_map(Value::from),
        Just(Value::from("acme")),
        Just(Value::from("T3JnYW5pemF0aW9uOmFjbWU")),
    ];
    let value = leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::option::of(
        prop::collection::btree_map(
            prop_oneof![
                Just("slug".to_owned()),
                Just("n".to_owned()),
                Just("x".to_owned()),
                "[a-z]{1,4}"
            ],
            value,
            0..4,
        )
        .prop_map(|m| Value::Object(m.into_iter().collect())),
    )
}

/// A runtime, the demo data in an embedded store, and the schema with the default limits.
fn demo() -> (tokio::runtime::Runtime, Arc<dyn Store>, ItemgraphSchema) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store: Arc<dyn Store> = Arc::new(runtime.block_on(common::engines::embedded_demo()));
    (runtime, store, graphql::schema())
}

fn cases() -> u32 {
    std::env::var("ITEMGRAPH_GENERATIVE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

#[test]
fn random_documents_and_variables_always_get_an_answer_with_codes() {
    let (runtime, store, schema) = demo();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&(document(), variables()), |(doc, vars)| {
            let mut request = async_graphql::Request::new(doc.clone());
            if let Some(vars) = vars {
                request = request.variables(async_graphql::Variables::from_json(vars));
            }
            let response = runtime.block_on(graphql::execute(
                &schema,
                store.clone(),
                common::graphql::cursors(),
                Access::Unrestricted,
                request,
                false,
            ));
            for error in &response.errors {
                let code = error
                    .extensions
                    .as_ref()
                    .and_then(|e| e.get("code"))
                    .cloned();
                prop_assert!(
                    matches!(code, Some(async_graphql::Value::String(_))),
                    "an error without a code: {error:?}\ndocument: {doc:?}"
                );
            }
            // The response serializes as the HTTP layer would send it, and every whole
            // number in it is a 32-bit `Int` (money is `Cents`, a string).
            let json = serde_json::to_value(&response);
            prop_assert!(json.is_ok());
            let mut stack = vec![json.unwrap()];
            while let Some(v) = stack.pop() {
                match v {
                    Value::Number(n) => prop_assert!(
                        n.as_f64().is_some_and(|f| f.fract() != 0.0)
                            || n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                        "{n} is not a 32-bit Int\ndocument: {doc:?}"
                    ),
                    Value::Array(items) => stack.extend(items),
                    Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
                    _ => {}
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Structures nested past every limit, generated rather than written: a value, a type or
/// a selection nested at a random depth, in a random place. Refused or answered, never a
/// crash, whatever the depth.
#[test]
fn nesting_at_any_depth_in_any_place_is_answered() {
    let (runtime, store, schema) = demo();
    let place = prop_oneof![
        Just((
            "{ organization(slug: ",
            "\"acme\"",
            ") { name } }",
            "[",
            "]"
        )),
        Just((
            "mutation { createOrganization(input: ",
            "1",
            ") { organization { name } } }",
            "{a: ",
            "}"
        )),
        Just(("query($v: ", "Int", ") { __typename }", "[", "]")),
        Just(("{ __typename @include(if: ", "true", ") }", "[", "]")),
        Just(("", "__typename", "", "{ ... on Query ", "}")),
        Just(("", "", "", "{ organization(slug: \"acme\") ", "}")),
    ];
    let mut runner = TestRunner::new(Config {
        cases: cases().min(64),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(place, 0usize..20_000),
            |((head, inner, tail, open, close), depth)| {
                let doc = format!(
                    "{head}{}{inner}{}{tail}",
                    open.repeat(depth),
                    close.repeat(depth)
                );
                let response = runtime.block_on(graphql::execute(
                    &schema,
                    store.clone(),
                    common::graphql::cursors(),
                    Access::Unrestricted,
                    async_graphql::Request::new(doc),
                    false,
                ));
                if depth > graphql::Limits::DEFAULT.max_nesting {
                    let code = response.errors[0]
                        .extensions
                        .as_ref()
                        .and_then(|e| e.get("code"))
                        .cloned();
                    prop_assert_eq!(code, Some(async_graphql::Value::from("NESTING_TOO_DEEP")));
                }
                Ok(())
            },
        )
        .unwrap();
}
