//! Hostile and broken requests over real HTTP: malformed or mistyped JSON, wrong content
//! types, bodies too large, invalid UTF-8, integers out of range, nesting deep enough to
//! overflow a recursive parser, very long strings, NUL bytes and unknown fields. Each gets
//! a clear `extensions.code` with the right status, never a 500 or a dropped connection,
//! and the server answers normally afterwards. (`tests/http/api.rs` covers the plain cases of
//! `BAD_REQUEST`; these are the ones an attacker or a broken client sends.)

use crate::common;

use std::sync::Arc;

use common::server::TestServer;
use itemgraph::graphql::CursorCodec;
use itemgraph::http::AppState;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};

const SPEC: &str = "application/graphql-response+json";
const JSON: &str = "application/json";
/// The default `--max-body-bytes`.
const MAX_BODY: usize = 1024 * 1024;

async fn start_server() -> TestServer {
    let store = common::engines::embedded_demo().await;
    TestServer::start(AppState::new(
        Arc::new(store),
        CursorCodec::new("malformed test secret"),
    ))
    .await
}

/// What a case must be answered with.
struct Expect {
    status: u16,
    code: &'static str,
}

const BAD_REQUEST: Expect = Expect {
    status: 400,
    code: "BAD_REQUEST",
};
/// A request error (parse, validation, coercion) to a legacy `application/json` client.
const INVALID: Expect = Expect {
    status: 200,
    code: "GRAPHQL_VALIDATION_FAILED",
};
/// A document nested past `--max-nesting`, refused before it is parsed.
const NESTING_TOO_DEEP: Expect = Expect {
    status: 200,
    code: "NESTING_TOO_DEEP",
};
const BAD_USER_INPUT: Expect = Expect {
    status: 200,
    code: "BAD_USER_INPUT",
};

/// Sends `req` and checks the answer: the status, a JSON body whose errors all carry
/// `code` (the first one exactly it), and never a transport failure.
async fn check(what: &str, req: reqwest::RequestBuilder, expect: &Expect) -> Value {
    let resp = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("{what}: no answer: {:?}", e.without_url()));
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = resp
        .text()
        .await
        .unwrap_or_else(|e| panic!("{what}: body cut off: {:?}", e.without_url()));
    let body: Value = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("{what}: not JSON ({status} {content_type}): {text:.300}"));
    let shown = || {
        let s = body.to_string();
        s.chars().take(600).collect::<String>()
    };
    assert_eq!(status, expect.status, "{what}: {}", shown());
    assert!(
        content_type.starts_with(JSON) || content_type.starts_with(SPEC),
        "{what}: {content_type}"
    );
    let errors = body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no errors: {}", shown()));
    assert_eq!(
        errors[0]["extensions"]["code"],
        expect.code,
        "{what}: {}",
        shown()
    );
    assert!(
        errors.iter().all(|e| e["message"].is_string()),
        "{what}: {}",
        shown()
    );
    body
}

/// The server still answers a plain query correctly.
async fn still_serving(server: &TestServer, after: &str) {
    let resp = server
        .post(json!({ "query": r#"{ organization(slug: "acme") { name } }"# }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("after {after}: no answer: {e:?}"));
    assert_eq!(resp.status(), 200, "after {after}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body,
        json!({ "data": { "organization": { "name": "Acme Corporation" } } }),
        "after {after}"
    );
}

fn post_raw(
    server: &TestServer,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    server
        .client
        .post(server.url("/graphql"))
        .header(CONTENT_TYPE, content_type)
        .body(body)
}

fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

fn nested_objects(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

#[tokio::test]
async fn bodies_that_are_not_a_graphql_request_are_400_bad_request() {
    let server = start_server().await;
    let post = |body: &str| post_raw(&server, JSON, body.to_owned());
    let cases = [
        ("an empty body", post("")),
        ("JSON null", post("null")),
        ("a bare string", post(r#""{ __typename }""#)),
        ("a number", post("42")),
        ("an unterminated object", post(r#"{"query": "{ __typename }""#)),
        ("trailing garbage", post(r#"{"query": "{ __typename }"} {}"#)),
        ("single quotes", post(r#"{'query': '{ __typename }'}"#)),
        ("a comment", post(r#"{"query": "{ __typename }" /* hi */}"#)),
        ("query not a string", post(r#"{"query": 1}"#)),
        ("query an object", post(r#"{"query": {"a": 1}}"#)),
        (
            "operationName not a string",
            post(r#"{"query": "{ __typename }", "operationName": 7}"#),
        ),
        (
            "extensions not an object",
            post(r#"{"query": "{ __typename }", "extensions": "x"}"#),
        ),
        (
            "a lone surrogate escape",
            post(r#"{"query": "{ organization(slug: \"\ud800\") { name } }"}"#),
        ),
        (
            "invalid UTF-8 in the query",
            post_raw(&server, JSON, b"{\"query\": \"{ __typename \xff }\"}".to_vec()),
        ),
        (
            "invalid UTF-8 in a variable",
            post_raw(
                &server,
                JSON,
                b"{\"query\": \"query($s: String!) { organization(slug: $s) { name } }\", \"variables\": {\"s\": \"\xc3\x28\"}}".to_vec(),
            ),
        ),
        (
            "a UTF-16 body",
            post_raw(
                &server,
                "application/json; charset=utf-16",
                "{\"query\": \"{ __typename }\"}"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes)
                    .collect::<Vec<u8>>(),
            ),
        ),
    ];
    for (what, req) in cases {
        check(what, req, &BAD_REQUEST).await;
    }
    still_serving(&server, "bodies that are not a GraphQL request").await;
    server.stop().await;
}

#[tokio::test]
async fn only_application_json_is_taken() {
    let server = start_server().await;
    let query = r#"{"query": "{ __typename }"}"#;
    for content_type in [
        "application/graphql",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "application/json-seq",
        "text/json",
        "json",
        "",
    ] {
        check(
            &format!("Content-Type {content_type:?}"),
            post_raw(&server, content_type, query),
            &BAD_REQUEST,
        )
        .await;
    }
    // No Content-Type at all.
    check(
        "no Content-Type",
        server.client.post(server.url("/graphql")).body(query),
        &BAD_REQUEST,
    )
    .await;
    // Media types are case-insensitive, and parameters do not matter.
    for content_type in ["APPLICATION/JSON", "application/json;charset=UTF-8"] {
        let resp = post_raw(&server, content_type, query).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{content_type}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body,
            json!({ "data": { "__typename": "Query" } }),
            "{content_type}"
        );
    }
    server.stop().await;
}

/// A body far over `--max-body-bytes` is refused as a whole with 413, before it is parsed.
#[tokio::test]
async fn an_oversized_body_is_413() {
    let server = start_server().await;
    let padding = " ".repeat(2 * MAX_BODY);
    let body = format!(r#"{{"query": "{{ __typename }}"{padding}}}"#);
    check(
        "a 2 MiB body",
        post_raw(&server, JSON, body),
        &Expect {
            status: 413,
            code: "BAD_REQUEST",
        },
    )
    .await;
    still_serving(&server, "an oversized body").await;
    server.stop().await;
}

/// Nesting deep enough to overflow a recursive parser's stack (10 000 levels) is refused
/// cleanly, in the body's JSON, in variables sent over GET, and in the GraphQL document
/// itself; nesting within the JSON parser's limit that does not fit the argument's type
/// fails coercion.
#[tokio::test]
async fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let server = start_server().await;
    let nodes = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }";
    for (what, value, url_value) in [
        (
            "10k-deep arrays",
            nested_arrays(10_000),
            nested_arrays(2_000),
        ),
        (
            "10k-deep objects",
            nested_objects(10_000),
            nested_objects(2_000),
        ),
    ] {
        let body = format!(r#"{{"query": "{nodes}", "variables": {{"ids": {value}}}}}"#);
        check(
            &format!("{what} in POST variables"),
            post_raw(&server, JSON, body),
            &BAD_REQUEST,
        )
        .await;
        // Shallower in a URL, which must stay under 64 KiB encoded.
        let vars = format!(r#"{{"ids": {url_value}}}"#);
        check(
            &format!("{what} in GET variables"),
            server
                .client
                .get(server.url("/graphql"))
                .query(&[("query", nodes), ("variables", &vars)]),
            &BAD_REQUEST,
        )
        .await;
    }
    // An unknown member is skipped without recursion, however deep it nests (here as
    // deep as the body limit allows), and the request runs.
    let depth = MAX_BODY / 2 - 64;
    let junks = [
        nested_arrays(depth),
        format!("{}1{}", r#"{"a":"#.repeat(depth / 3), "}".repeat(depth / 3)),
    ];
    for junk in junks {
        let body = format!(r#"{{"query": "{{ __typename }}", "junk": {junk}}}"#);
        assert!(body.len() <= MAX_BODY);
        let resp = post_raw(&server, JSON, body).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body, json!({ "data": { "__typename": "Query" } }));
    }
    // Within serde_json's limit (128), but not a list of ids.
    for (what, value) in [
        ("100-deep arrays", nested_arrays(100)),
        ("100-deep objects", nested_objects(100)),
    ] {
        check(
            &format!("{what} as [ID!]!"),
            server.post(json!({ "query": nodes, "variables": { "ids": serde_json::from_str::<Value>(&value).unwrap() } })),
            &INVALID,
        )
        .await;
    }
    // In the document: a list literal, an input object literal and a selection set
    // (tests/http/hostile_documents.rs has every other place a document nests).
    for (what, query) in [
        (
            "a 10k-deep list literal",
            format!("{{ nodes(ids: {}) {{ id }} }}", nested_arrays(10_000)),
        ),
        (
            "a 10k-deep object literal",
            format!(
                "mutation {{ createOrganization(input: {}1{}) {{ organization {{ name }} }} }}",
                "{a: ".repeat(10_000),
                "}".repeat(10_000)
            ),
        ),
        (
            "a 10k-deep selection",
            format!(
                "{}{}",
                "{ organization(slug: \"acme\") ".repeat(10_000),
                "}".repeat(10_000)
            ),
        ),
    ] {
        check(
            what,
            server.post(json!({ "query": query })),
            &NESTING_TOO_DEEP,
        )
        .await;
    }
    still_serving(&server, "deep nesting").await;
    server.stop().await;
}

/// Integers past what GraphQL's `Int` (32 bits) holds, inline or in variables, fail as
/// request errors; in range but out of the argument's bounds, as `BAD_USER_INPUT`.
#[tokio::test]
async fn integers_out_of_range_are_refused() {
    let server = start_server().await;
    let ticket = crate::common::demo::demo_data().tickets[0]
        .ticket_id
        .to_string();
    let users = |first: &str| {
        format!(
            r#"{{ organization(slug: "acme") {{ users(first: {first}) {{ nodes {{ username }} }} }} }}"#
        )
    };
    let update = |version: &str| {
        format!(
            r#"mutation {{ updateTicket(input: {{ticketId: "{ticket}", expectedVersion: {version}, priority: LOW}}) {{ ticket {{ version }} }} }}"#
        )
    };
    for (what, query) in [
        ("first: 99999999999999999999", users("99999999999999999999")),
        ("first: 2147483648", users("2147483648")),
        ("first: -2147483649", users("-2147483649")),
        ("first: 1e3", users("1e3")),
        (
            "expectedVersion: 99999999999999999999999999999",
            update("99999999999999999999999999999"),
        ),
    ] {
        check(what, server.post(json!({ "query": query })), &INVALID).await;
    }
    // Inside an input object literal, a value past 32 bits that fits 64 passes validation
    // and is read only when the field runs, so the error is the field's.
    for (what, query) in [
        ("expectedVersion: 4294967296", update("4294967296")),
        ("expectedVersion: -4294967296", update("-4294967296")),
        (
            "expectedVersion: 9223372036854775807",
            update("9223372036854775807"),
        ),
    ] {
        let body = check(
            what,
            server.post(json!({ "query": query })),
            &BAD_USER_INPUT,
        )
        .await;
        assert_eq!(body["data"], Value::Null, "{what}");
        assert_eq!(body["errors"][0]["path"], json!(["updateTicket"]), "{what}");
    }
    let users_var = "query($n: Int) { organization(slug: \"acme\") { users(first: $n) { nodes { username } } } }";
    let update_var = format!(
        "mutation($v: Int!) {{ updateTicket(input: {{ticketId: \"{ticket}\", expectedVersion: $v, priority: LOW}}) {{ ticket {{ version }} }} }}"
    );
    // serde_json reads 1e400 as out of range: not a GraphQL request at all. A variable past
    // 32 bits but within 64 given to an argument coerces at validation, but inside an
    // input object only when the field runs: the field's error.
    for (what, query, vars, expect) in [
        (
            "$n = 99999999999999999999",
            users_var,
            r#"{"n": 99999999999999999999}"#,
            &INVALID,
        ),
        (
            "$n = 2147483648",
            users_var,
            r#"{"n": 2147483648}"#,
            &INVALID,
        ),
        ("$n = 1.5", users_var, r#"{"n": 1.5}"#, &INVALID),
        ("$n = 1e400", users_var, r#"{"n": 1e400}"#, &BAD_REQUEST),
        (
            "$v = 4294967296",
            update_var.as_str(),
            r#"{"v": 4294967296}"#,
            &BAD_USER_INPUT,
        ),
        (
            "$v = -99999999999999999999",
            update_var.as_str(),
            r#"{"v": -99999999999999999999}"#,
            &INVALID,
        ),
    ] {
        let body = format!(r#"{{"query": {}, "variables": {vars}}}"#, json!(query));
        check(what, post_raw(&server, JSON, body), expect).await;
    }
    // In Int's range but not the argument's.
    for (what, query) in [
        ("first: 2147483647", users("2147483647")),
        ("first: -1", users("-1")),
        ("expectedVersion: 0", update("0")),
        ("expectedVersion: -2147483648", update("-2147483648")),
    ] {
        let body = check(
            what,
            server.post(json!({ "query": query })),
            &BAD_USER_INPUT,
        )
        .await;
        assert!(
            body["errors"][0]["extensions"]["field"].is_string(),
            "{what}: the field is named: {body}"
        );
    }
    still_serving(&server, "integers out of range").await;
    server.stop().await;
}

/// Long strings, NUL bytes and other control characters in arguments, ids, cursors and the
/// document itself.
#[tokio::test]
async fn long_strings_and_nul_bytes_are_refused() {
    let server = start_server().await;
    let org = "query($s: String!) { organization(slug: $s) { name } }";
    let node = "query($id: ID!) { node(id: $id) { id } }";
    let page = "query($c: String) { organization(slug: \"acme\") { users(first: 1, after: $c) { nodes { username } } } }";
    let long = "a".repeat(MAX_BODY - 1024);
    let create = "mutation($t: String!) { createTicket(input: {org: \"acme\", requester: \"wile-e-coyote\", title: $t, body: \"b\", priority: LOW}) { ticket { title } } }";
    let invalid_cursor = Expect {
        status: 200,
        code: "INVALID_CURSOR",
    };
    for (what, query, vars, expect) in [
        (
            "a slug of ~1 MB",
            org,
            json!({ "s": long }),
            &BAD_USER_INPUT,
        ),
        (
            "a slug with NUL",
            org,
            json!({ "s": "ac\u{0}me" }),
            &BAD_USER_INPUT,
        ),
        (
            "a slug that is only NUL",
            org,
            json!({ "s": "\u{0}" }),
            &BAD_USER_INPUT,
        ),
        (
            "an id of ~1 MB",
            node,
            json!({ "id": long }),
            &BAD_USER_INPUT,
        ),
        (
            "an id with NUL",
            node,
            json!({ "id": "T3Jn\u{0}YW5p" }),
            &BAD_USER_INPUT,
        ),
        (
            "a cursor of ~1 MB",
            page,
            json!({ "c": long }),
            &invalid_cursor,
        ),
        (
            "a cursor with NUL",
            page,
            json!({ "c": "AAAA\u{0}AAAA" }),
            &invalid_cursor,
        ),
        (
            "a title with NUL",
            create,
            json!({ "t": "anvil\u{0}" }),
            &BAD_USER_INPUT,
        ),
        (
            "a title with ESC",
            create,
            json!({ "t": "anvil\u{1b}[31m" }),
            &BAD_USER_INPUT,
        ),
        (
            "a title of 100k",
            create,
            json!({ "t": "t".repeat(100_000) }),
            &BAD_USER_INPUT,
        ),
    ] {
        check(
            what,
            server.post(json!({ "query": query, "variables": vars })),
            expect,
        )
        .await;
    }
    for (what, query) in [
        ("NUL in the document", "{ __typename \u{0} }".to_owned()),
        (
            "a ~1 MB field name",
            format!("{{ {} }}", "f".repeat(MAX_BODY - 1024)),
        ),
    ] {
        check(what, server.post(json!({ "query": query })), &INVALID).await;
    }
    check(
        "a ~1 MB document of braces",
        server.post(json!({ "query": "{".repeat(MAX_BODY - 1024) })),
        &NESTING_TOO_DEEP,
    )
    .await;
    // The parser takes a NUL inside a string literal; the slug's own check refuses it.
    let body = check(
        "NUL inside a string literal",
        server.post(json!({ "query": "{ organization(slug: \"a\u{0}\") { name } }" })),
        &BAD_USER_INPUT,
    )
    .await;
    assert_eq!(body["errors"][0]["extensions"]["field"], "slug");
    check(
        "NUL in operationName",
        server.post(json!({ "query": "query A { __typename }", "operationName": "A\u{0}" })),
        &INVALID,
    )
    .await;
    still_serving(&server, "long strings and NUL bytes").await;
    server.stop().await;
}

/// Unknown members of the body are ignored (the spec lets servers add their own); unknown
/// fields, arguments and input fields fail validation; a variable the operation does not
/// declare is ignored.
#[tokio::test]
async fn unknown_fields() {
    let server = start_server().await;
    let resp = server
        .post(json!({ "query": "{ __typename }", "documentId": "x", "id": 1, "extensions": { "x": 1 } }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({ "data": { "__typename": "Query" } })
    );
    let resp = server
        .post(json!({ "query": "{ __typename }", "variables": { "undeclared": [1, 2] } }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({ "data": { "__typename": "Query" } })
    );

    for (what, body) in [
        ("an unknown field", json!({ "query": "{ nope }" })),
        (
            "an unknown argument",
            json!({ "query": "{ organization(slug: \"acme\", nope: 1) { name } }" }),
        ),
        (
            "an unknown input field",
            json!({
                "query": "mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { organization { name } } }",
                "variables": { "i": { "slug": "road-runner", "name": "Road Runner", "plan": "FREE", "nope": 1 } },
            }),
        ),
        (
            "an unknown enum value",
            json!({ "query": "mutation { createOrganization(input: {slug: \"x\", name: \"X\", plan: PLATINUM}) { organization { name } } }" }),
        ),
        (
            "an unknown operation name",
            json!({ "query": "query A { __typename }", "operationName": "B" }),
        ),
        (
            "an undeclared variable",
            json!({ "query": "{ organization(slug: $s) { name } }", "variables": { "s": "acme" } }),
        ),
    ] {
        let response = check(what, server.post(body.clone()), &INVALID).await;
        assert!(response.get("data").is_none(), "{what}: {response}");
        // The GraphQL-over-HTTP media type makes the same refusal a 400.
        check(
            what,
            server.post(body).header(ACCEPT, SPEC),
            &Expect {
                status: 400,
                code: INVALID.code,
            },
        )
        .await;
    }
    still_serving(&server, "unknown fields").await;
    server.stop().await;
}
