//! Hostile documents, by class: nesting in every place a document can nest, fan-out through
//! fragments, aliases, directives and lists, and documents of very many tokens. Each is
//! sent to a real server over HTTP, several at once beside a normal query; each must be
//! answered with its documented code (the limit it passed in `extensions.limit`), the
//! normal query must be answered correctly alongside, and the process must live on.
//! (`tests/http/malformed_requests.rs` covers broken JSON, bodies, strings and numbers.)

use crate::common;

use std::sync::Arc;

use common::server::TestServer;
use itemgraph::graphql::{CursorCodec, Limits};
use itemgraph::http::AppState;
use serde_json::{json, Value};

const MAX_NESTING: usize = Limits::DEFAULT.max_nesting;
const MAX_TOKENS: usize = Limits::DEFAULT.max_tokens;
const MAX_FIELDS: usize = Limits::DEFAULT.max_fields;

async fn start_server() -> TestServer {
    let store = common::engines::embedded_demo().await;
    TestServer::start(AppState::new(
        Arc::new(store),
        CursorCodec::new("hostile test secret"),
    ))
    .await
}

/// Sends each hostile document twice at once, beside the normal query, and checks every
/// answer: the code, and the limit in `extensions.limit` when one is given.
async fn refused(server: &TestServer, cases: &[(String, String, &str, Option<usize>)]) {
    for (what, query, code, limit) in cases {
        let send = || async {
            let resp = server
                .post(json!({ "query": query }))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{what}: no answer: {:?}", e.without_url()));
            resp.json::<Value>()
                .await
                .unwrap_or_else(|e| panic!("{what}: not JSON: {e}"))
        };
        let (a, b, ()) = tokio::join!(send(), send(), server.answers_normally());
        for body in [a, b] {
            let error = &body["errors"][0];
            assert_eq!(error["extensions"]["code"], *code, "{what}: {body:.400}");
            assert_eq!(body["data"], Value::Null, "{what}");
            if let Some(limit) = limit {
                assert_eq!(error["extensions"]["limit"], *limit, "{what}");
            }
        }
    }
    server.answers_normally().await;
}

fn deep(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// A chain of `n` fragments on `Query`, each spreading the next.
fn fragment_chain(n: usize) -> String {
    let mut doc = String::from("{ ...F0 }\n");
    for i in 0..n {
        let next = if i + 1 < n {
            format!("...F{}", i + 1)
        } else {
            "__typename".to_owned()
        };
        doc.push_str(&format!("fragment F{i} on Query {{ {next} }}\n"));
    }
    doc
}

/// `levels` fragments, each spreading the next twice: 2^(levels - 1) fields once expanded.
fn doubling_fragments(levels: usize) -> String {
    let mut doc = String::from("{ ...F0 }\n");
    for i in 0..levels {
        let body = if i + 1 < levels {
            format!("...F{n} ...F{n}", n = i + 1)
        } else {
            "__typename".to_owned()
        };
        doc.push_str(&format!("fragment F{i} on Query {{ {body} }}\n"));
    }
    doc
}

#[tokio::test]
async fn nesting_is_refused_in_every_place_a_document_nests() {
    let server = start_server().await;
    let n = 2_000;
    let cases = [
        (
            "a list value in an argument",
            format!(
                "{{ organization(slug: {}) {{ name }} }}",
                deep("[", "\"acme\"", "]", n)
            ),
        ),
        (
            "an input object value",
            format!(
                "mutation {{ createOrganization(input: {}) {{ organization {{ name }} }} }}",
                deep("{a: ", "1", "}", n)
            ),
        ),
        (
            "a variable's default value",
            format!(
                "query($s: String = {}) {{ organization(slug: $s) {{ name }} }}",
                deep("[", "1", "]", n)
            ),
        ),
        (
            "a variable's type",
            format!(
                "query($s: {}) {{ __typename }}",
                deep("[", "String", "]", n)
            ),
        ),
        (
            "a directive's argument",
            format!(
                "{{ __typename @include(if: {}) }}",
                deep("[", "true", "]", n)
            ),
        ),
        (
            "selection sets",
            deep("{ organization(slug: \"acme\") ", "", "}", n),
        ),
        (
            "inline fragments",
            format!("{{ {} }}", deep("... on Query { ", "__typename", "}", n)),
        ),
        (
            "brackets that close nothing they opened",
            format!("{{ __typename }} {}", "[".repeat(n)),
        ),
        (
            "just over the limit",
            format!(
                "{{ organization(slug: {}) {{ name }} }}",
                deep("[", "\"acme\"", "]", MAX_NESTING)
            ),
        ),
    ]
    .map(|(what, q)| (what.to_owned(), q, "NESTING_TOO_DEEP", Some(MAX_NESTING)));
    refused(&server, &cases).await;

    // Through fragments: each definition is shallow, the spreads chain deep.
    let chained = [(
        "a chain of 1 000 fragments".to_owned(),
        fragment_chain(1_000),
        "NESTING_TOO_DEEP",
        Some(MAX_NESTING),
    )];
    refused(&server, &chained).await;

    // Brackets inside strings, block strings and comments are not nesting.
    let quiet = format!(
        "{{ organization(slug: \"{open}\") {{ name }} a: __typename # {open}\n b: organization(slug: \"\"\"{open}\"\"\") {{ name }} }}",
        open = "[".repeat(n)
    );
    let body = server.answer(json!({ "query": quiet })).await;
    assert_eq!(
        body["data"],
        json!({ "organization": null, "a": "Query", "b": null }),
        "{body:.300}"
    );
    server.stop().await;
}

#[tokio::test]
async fn fan_out_is_refused_without_walking_it() {
    let server = start_server().await;
    let aliases = |n: usize| {
        let fields: String = (0..n).map(|i| format!("a{i}: __typename ")).collect();
        format!("{{ {fields} }}")
    };
    let ids = |n: usize| {
        let ids: Vec<String> = (0..n)
            .map(|i| format!("\"T3JnYW5pemF0aW9uOmF{i}\""))
            .collect();
        format!("{{ nodes(ids: [{}]) {{ id }} }}", ids.join(", "))
    };
    let cases = [
        (
            "fragments doubling 30 levels deep (2^30 fields once expanded)",
            doubling_fragments(30),
            "TOO_MANY_FIELDS",
            Some(MAX_FIELDS),
        ),
        (
            "fragments doubling 14 levels deep (8 192 fields once expanded)",
            doubling_fragments(14),
            "TOO_MANY_FIELDS",
            Some(MAX_FIELDS),
        ),
        (
            "one fragment spread 3 000 times",
            format!(
                "{{ {} }} fragment F on Query {{ organization(slug: \"acme\") {{ name slug plan }} }}",
                "...F ".repeat(3_000)
            ),
            "TOO_MANY_FIELDS",
            Some(MAX_FIELDS),
        ),
        ("1 000 aliases", aliases(1_000), "TOO_MANY_ALIASES", None),
        (
            "10 000 aliases",
            aliases(10_000),
            "TOO_MANY_TOKENS",
            Some(MAX_TOKENS),
        ),
        (
            "a field under 4 000 directives",
            format!("{{ __typename {} }}", "@include(if: true) ".repeat(4_000)),
            "TOO_MANY_TOKENS",
            Some(MAX_TOKENS),
        ),
        (
            "a list of 20 000 ids",
            ids(20_000),
            "TOO_MANY_TOKENS",
            Some(MAX_TOKENS),
        ),
    ]
    .map(|(what, q, code, limit)| (what.to_owned(), q, code, limit));
    refused(&server, &cases).await;

    // Under the token limit, a long list is refused by what `nodes` takes.
    let body = server.answer(json!({ "query": ids(1_000) })).await;
    let code = &body["errors"][0]["extensions"]["code"];
    assert!(
        code == "BAD_USER_INPUT" || code == "QUERY_TOO_COMPLEX",
        "{body:.300}"
    );
    // A long list under a deep selection: refused by its cost (counted with saturating
    // arithmetic), never a panic or a wrapped number.
    let deep_nodes = {
        let ids: Vec<String> = (0..4_000).map(|i| format!("\"x{i}\"")).collect();
        format!(
            "{{ nodes(ids: [{}]) {{ ... on Organization {{ users(first: 100) {{ nodes {{ tickets(first: 100) {{ nodes {{ id }} }} }} }} }} }} }}",
            ids.join(", ")
        )
    };
    let body = server.answer(json!({ "query": deep_nodes })).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "QUERY_TOO_COMPLEX",
        "{body:.300}"
    );
    // A fragment that spreads itself is a validation error, not a hang.
    let cycle = "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A __typename }";
    let body = server.answer(json!({ "query": cycle })).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{body:.300}"
    );
    server.answers_normally().await;
    server.stop().await;
}

#[tokio::test]
async fn documents_of_very_many_tokens_are_refused_before_parsing() {
    let server = start_server().await;
    let cases = [
        (
            "20 000 fields",
            format!("{{ {} }}", "__typename ".repeat(20_000)),
        ),
        ("20 000 names", format!("{{ {} }}", "a b ".repeat(10_000))),
        (
            "one token over the limit",
            format!("{{ {} }}", "__typename ".repeat(MAX_TOKENS - 1)),
        ),
    ]
    .map(|(what, q)| (what.to_owned(), q, "TOO_MANY_TOKENS", Some(MAX_TOKENS)));
    refused(&server, &cases).await;

    // Comments, commas and long strings are not many tokens.
    let long = format!(
        "# {}\n{{ {} organization(slug: \"{}\") {{ name }} }}",
        "x".repeat(500_000),
        ",".repeat(100_000),
        "a".repeat(100_000)
    );
    let body = server.answer(json!({ "query": long })).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "the slug is refused, not the document: {body:.300}"
    );
    server.answers_normally().await;
    server.stop().await;
}

/// Every number a response holds, as text, with the path to it.
fn numbers(value: &Value, path: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Number(n) => out.push((path, n.to_string())),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                numbers(v, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                numbers(v, format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn money_is_exact_and_no_int_leaves_32_bits() {
    let server = start_server().await;
    let place = r#"mutation($lines: [OrderLineInput!]!) {
        placeOrder(input: {org: "acme", buyer: "wile-e-coyote", currency: "USD", lines: $lines}) {
            order { totalCents version lines { quantity unitPriceCents amountCents } }
        } }"#;
    for (what, lines, total) in [
        (
            "100 000 × 100 000 cents",
            json!([{ "sku": "A", "description": "a", "quantity": 100_000, "unitPriceCents": 100_000 }]),
            "10000000000",
        ),
        (
            "quantity and unit price at 2^31 − 1",
            json!([{ "sku": "A", "description": "a", "quantity": 2_147_483_647, "unitPriceCents": "2147483647" }]),
            "4611686014132420609",
        ),
    ] {
        let body = server
            .answer(json!({ "query": place, "variables": { "lines": lines } }))
            .await;
        let order = &body["data"]["placeOrder"]["order"];
        assert_eq!(order["totalCents"], total, "{what}: {body}");
        assert_eq!(order["lines"][0]["amountCents"], total, "{what}");
        let id_query = json!({ "query": r#"{ organization(slug: "acme") { orders(first: 3) { nodes { totalCents lines { amountCents } } } orderCount userCount } }"# });
        let read = server.answer(id_query).await;
        assert_eq!(
            read["data"]["organization"]["orders"]["nodes"][0]["totalCents"], total,
            "{what}: read back exactly"
        );
        let mut found = Vec::new();
        numbers(&body, String::new(), &mut found);
        numbers(&read, String::new(), &mut found);
        for (path, n) in found {
            let fits = n.parse::<i64>().is_ok_and(|n| i32::try_from(n).is_ok());
            assert!(fits, "{what}: {path} = {n} is not a 32-bit Int");
        }
    }
    // Past i64 even as a string, or a number past 2^53: refused, naming the type (inside
    // an input object the input is read when the field runs: the field's error).
    for price in [
        json!("9223372036854775808"),
        json!(9_007_199_254_740_993_i64),
    ] {
        let body = server.answer(json!({ "query": place, "variables": { "lines": [{ "sku": "A", "description": "a", "quantity": 1, "unitPriceCents": price }] } })).await;
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
            "{price}: {body}"
        );
        assert!(
            body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("Cents"),
            "{body}"
        );
    }
    server.answers_normally().await;
    server.stop().await;
}
