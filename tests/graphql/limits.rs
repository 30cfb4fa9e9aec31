//! The limits on the work one request can cause (`graphql::Limits`, `http::Options`):
//! each one exceeded once, refused with its code before any store request (the deadline:
//! cancelled with its store calls), and a normal query under them unchanged, trace included.
//!
//! GraphQL-level limits are checked against the schema with the store trace on, so "before
//! any store request" reads as `requestCount: 0`; the HTTP-level ones (body size, GraphiQL,
//! batches, status codes, persisted queries over the wire) against a server on port 0.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::graphql::{cursors, normalized};
use common::server::{read, TestServer};
use common::stalled::Stalled;
use itemgraph::auth::Access;
use itemgraph::graphql::{self, ItemgraphSchema, Limits};
use itemgraph::http::{self, AppState};
use itemgraph::store::Store;
use reqwest::header::ACCEPT;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const SPEC: &str = "application/graphql-response+json";

/// The global id of the `acme` organization.
const ACME_ID: &str = "T3JnYW5pemF0aW9uOmFjbWU";

/// A fresh in-memory embedded store holding the demo data.
async fn demo_store() -> Arc<dyn Store> {
    Arc::new(common::engines::embedded_demo().await)
}

/// A schema built from `limits` over `store`.
struct Limited {
    schema: ItemgraphSchema,
    store: Arc<dyn Store>,
}

impl Limited {
    async fn demo(limits: Limits) -> Limited {
        Limited {
            schema: graphql::schema_with(&limits),
            store: demo_store().await,
        }
    }

    /// Runs `request` with the store trace on; the response as JSON, timings zeroed.
    async fn run(&self, request: async_graphql::Request) -> Value {
        let response = graphql::execute(
            &self.schema,
            self.store.clone(),
            cursors(),
            Access::Unrestricted,
            request,
            true,
        )
        .await;
        normalized(serde_json::to_value(&response).expect("a response serializes"))
    }

    async fn query(&self, query: &str) -> Value {
        self.run(async_graphql::Request::new(query)).await
    }
}

/// A whole refused response: no data, the one error, and not one store request.
fn refused(message: &str, extensions: Value) -> Value {
    json!({
        "data": null,
        "errors": [{ "message": message, "extensions": extensions }],
        "extensions": { "dynamodb": { "requestCount": 0, "requests": [] } },
    })
}

/// The response `graphql_snapshots` pinned for `name`: the snapshot file's JSON body.
fn snapshot(text: &str) -> Value {
    let body = text
        .splitn(3, "---\n")
        .nth(2)
        .expect("an insta snapshot: a header between two `---` lines, then the JSON");
    serde_json::from_str(body).expect("the snapshot is JSON")
}

const NESTED_ORG_USERS_TICKETS: &str = r#"{
  organization(slug: "acme") {
    slug
    users(first: 5) {
      nodes {
        username
        tickets(first: 2) {
          totalCount
          pageInfo { hasNextPage }
          nodes { ticketId status }
        }
      }
    }
  }
}"#;

/// A nested query well under every default limit answers exactly as it did before the
/// limits existed: same data, same DynamoDB requests in the same order, nothing added.
#[tokio::test]
async fn a_query_under_the_default_limits_answers_as_before_with_the_same_trace() {
    let api = Limited::demo(Limits::default()).await;
    let response = api.query(NESTED_ORG_USERS_TICKETS).await;
    assert_eq!(
        response,
        snapshot(include_str!(
            "snapshots/graphql__snapshots__nested_org_users_tickets.snap"
        )),
    );
}

/// `organization { users { nodes { organization … } } }`, `levels` times: depth 1 + 3 ×
/// `levels`, plus the `name` leaf.
fn nested(levels: usize) -> String {
    let mut q = String::from(r#"{ organization(slug: "acme") { "#);
    for _ in 0..levels {
        q.push_str("users(first: 1) { nodes { organization { ");
    }
    q.push_str("name");
    for _ in 0..levels {
        q.push_str(" } } }");
    }
    q.push_str(" } }");
    q
}

/// A query nested deeper than `max_depth` is refused whole with `QUERY_TOO_DEEP`, before
/// any read; one at the limit runs.
#[tokio::test]
async fn a_query_too_deep_is_refused_before_any_read() {
    let api = Limited::demo(Limits::default()).await;
    // 1 + 3 × 5 + 1 = 17 > 15.
    assert_eq!(
        api.query(&nested(5)).await,
        refused(
            "the query nests fields 17 deep; at most 15 are allowed",
            json!({ "code": "QUERY_TOO_DEEP", "limit": 15, "actual": 17 }),
        )
    );
    // 1 + 3 × 4 + 1 = 14.
    let at_limit = api.query(&nested(4)).await;
    assert!(at_limit.get("errors").is_none(), "{at_limit:#}");
}

/// The default depth leaves room for the deepest path of GraphiQL's introspection query
/// (`fields { args { type { ofType × 7 } } }`, 13 deep).
#[tokio::test]
async fn the_default_depth_admits_an_introspection_query() {
    let api = Limited::demo(Limits::default()).await;
    let response = api
        .query(
            "{ __schema { types { fields { args { type { ofType { ofType { ofType { ofType \
             { ofType { ofType { ofType { name } } } } } } } } } } } } }",
        )
        .await;
    assert!(response.get("errors").is_none(), "{response:#}");
}

/// More aliased fields than `max_aliases` (counted in the operation and its fragments) is
/// refused with `TOO_MANY_ALIASES` before any read; exactly the limit runs.
#[tokio::test]
async fn too_many_aliases_are_refused_before_any_read() {
    let api = Limited::demo(Limits::default()).await;
    let aliases = |from: usize, to: usize| {
        (from..to)
            .map(|i| format!("a{i}: __typename"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let over = format!(
        "query {{ {} ...More }} fragment More on Query {{ {} }}",
        aliases(0, 20),
        aliases(20, 31)
    );
    assert_eq!(
        api.query(&over).await,
        refused(
            "the query has 31 aliased fields; at most 30 are allowed",
            json!({ "code": "TOO_MANY_ALIASES", "limit": 30, "actual": 31 }),
        )
    );
    let at_limit = api.query(&format!("{{ {} }}", aliases(0, 30))).await;
    assert!(at_limit.get("errors").is_none(), "{at_limit:#}");
    assert_eq!(at_limit["extensions"]["dynamodb"]["requestCount"], 0);
}

/// 100 users each with 100 tickets costs about 100 × 100, over the default 5000: refused
/// with `QUERY_TOO_COMPLEX` before any read, whether the page sizes are literals or
/// variables. The same shape at the default page size (20 × 20) runs.
#[tokio::test]
async fn a_fan_out_of_100_by_100_is_too_complex_and_refused_before_any_read() {
    let api = Limited::demo(Limits::default()).await;
    // tickets: 100 × (nodes + ticketId) + 1 = 201; users: 100 × (nodes + 201) + 1 = 20201;
    // organization: 20202.
    let expected = refused(
        "the query costs 20202; at most 5000 is allowed: ask for smaller pages or fewer \
         nested connections",
        json!({ "code": "QUERY_TOO_COMPLEX", "limit": 5000, "actual": 20202 }),
    );
    let literal = r#"{ organization(slug: "acme") {
        users(first: 100) { nodes { tickets(first: 100) { nodes { ticketId } } } } } }"#;
    assert_eq!(api.query(literal).await, expected);

    let with_variables = r#"query($n: Int, $m: Int) { organization(slug: "acme") {
        users(last: $n) { nodes { tickets(first: $m) { nodes { ticketId } } } } } }"#;
    let request = async_graphql::Request::new(with_variables).variables(
        async_graphql::Variables::from_json(json!({ "n": 100, "m": 100 })),
    );
    assert_eq!(api.run(request).await, expected);

    let default_pages = r#"{ organization(slug: "acme") {
        users { nodes { tickets { nodes { ticketId } } } } } }"#;
    let response = api.query(default_pages).await;
    assert!(response.get("errors").is_none(), "{response:#}");
}

/// `nodes` costs per id asked for, so 100 users with 100 tickets each is refused too.
#[tokio::test]
async fn a_fan_out_through_nodes_is_too_complex() {
    let api = Limited::demo(Limits::default()).await;
    let ids: Vec<String> = (0..100)
        .map(|i| {
            crate::common::records::GlobalId::Organization(
                itemgraph::chart::kinds::Slug::parse(&format!("org-{i}")).unwrap(),
            )
            .encode()
        })
        .collect();
    let request = async_graphql::Request::new(
        r#"query($ids: [ID!]!) { nodes(ids: $ids) { ... on User {
            tickets(first: 100) { nodes { ticketId } } } } }"#,
    )
    .variables(async_graphql::Variables::from_json(json!({ "ids": ids })));
    let response = api.run(request).await;
    assert_eq!(
        response["errors"][0]["extensions"]["code"],
        json!("QUERY_TOO_COMPLEX"),
        "{response:#}"
    );
    assert_eq!(response["data"], Value::Null);
}

/// The document cache holds a document's parse and validation, not its variables: the
/// same document again with other variables is refused for what those variables make of
/// it, exactly as the first time, whichever came first.
#[tokio::test]
async fn a_cached_document_is_checked_again_for_each_requests_variables() {
    let api = Limited::demo(Limits::default()).await;
    let query = r#"query Users($slug: String!, $first: Int, $tickets: Int) {
        organization(slug: $slug) { users(first: $first) {
            nodes { username tickets(first: $tickets) { nodes { ticketId } } } } } }"#;
    let run = |vars: Value| {
        api.run(
            async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(vars)),
        )
    };
    let fine = json!({ "slug": "acme", "first": 2, "tickets": 1 });
    for round in 0..2 {
        // Cheap, then (on the cached document) too costly with other variables.
        let ok = run(fine.clone()).await;
        assert!(ok.get("errors").is_none(), "round {round}: {ok:#}");
        assert_eq!(
            ok["data"]["organization"]["users"]["nodes"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        let costly = run(json!({ "slug": "acme", "first": 100, "tickets": 100 })).await;
        assert_eq!(
            costly["errors"][0]["extensions"]["code"],
            json!("QUERY_TOO_COMPLEX"),
            "{costly:#}"
        );
        assert_eq!(
            costly["errors"][0]["extensions"]["actual"],
            json!(20302),
            "{costly:#}"
        );
        assert_eq!(costly["data"], Value::Null);
        assert_eq!(costly["extensions"]["dynamodb"]["requestCount"], 0);
        // A value of the wrong type: a request error before any read, not a field error.
        for bad in [
            json!({ "slug": 7, "first": 2 }),
            json!({ "slug": null, "first": 2 }),
            json!({ "slug": "acme", "first": "two" }),
            json!({ "slug": "acme", "first": 2, "tickets": 3_000_000_000u64 }),
        ] {
            let r = run(bad.clone()).await;
            assert_eq!(
                r["errors"][0]["extensions"]["code"],
                json!("GRAPHQL_VALIDATION_FAILED"),
                "{bad}: {r:#}"
            );
            assert_eq!(r["data"], Value::Null, "{bad}");
            assert_eq!(r["extensions"]["dynamodb"]["requestCount"], 0, "{bad}");
        }
    }
    // A fresh process meeting the wrong variables first refuses them the same way.
    let fresh = Limited::demo(Limits::default()).await;
    let r = fresh
        .run(
            async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(
                json!({ "slug": "acme", "first": "two" }),
            )),
        )
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"],
        json!("GRAPHQL_VALIDATION_FAILED"),
        "{r:#}"
    );
}

/// What validation checks of an argument once its variables are put in is checked again
/// on a cached document: a `null` for a variable with a default, passed where a value is
/// required; an argument mixing a wrong literal with a variable the first request left out.
#[tokio::test]
async fn arguments_are_checked_with_each_requests_variables_put_in() {
    let api = Limited::demo(Limits::default()).await;
    let run = |query: &'static str, vars: Value| {
        api.run(
            async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(vars)),
        )
    };
    let defaulted = r#"query($s: String = "acme") { organization(slug: $s) { name } }"#;
    let ok = run(defaulted, json!({})).await;
    assert_eq!(
        ok["data"]["organization"]["name"], "Acme Corporation",
        "{ok:#}"
    );
    let null = run(defaulted, json!({ "s": null })).await;
    assert_eq!(
        null["errors"][0]["extensions"]["code"],
        json!("GRAPHQL_VALIDATION_FAILED"),
        "{null:#}"
    );
    assert_eq!(null["data"], Value::Null);
    assert_eq!(null["extensions"]["dynamodb"]["requestCount"], 0);

    let mixed = r#"mutation($n: String!) { createOrganization(input: { slug: 123, name: $n, plan: FREE }) { organization { slug } } }"#;
    let first = run(mixed, json!({})).await;
    assert!(first.get("errors").is_some(), "{first:#}");
    let second = run(mixed, json!({ "n": "Mixed" })).await;
    assert_eq!(
        second["errors"][0]["extensions"]["code"],
        json!("GRAPHQL_VALIDATION_FAILED"),
        "{second:#}"
    );
    assert_eq!(second["extensions"]["dynamodb"]["requestCount"], 0);
}

/// Input objects in variables are checked field by field on every request, as validation
/// checks them: an unknown field, a missing required one, an enum value that is not one.
#[tokio::test]
async fn input_objects_in_variables_are_checked_on_every_request() {
    let api = Limited::demo(Limits::default()).await;
    let query = r#"mutation Create($input: CreateOrganizationInput!) {
        createOrganization(input: $input) { organization { slug } } }"#;
    let run = |vars: Value| {
        api.run(
            async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(vars)),
        )
    };
    let ok =
        run(json!({ "input": { "slug": "cache-co", "name": "Cache Co", "plan": "FREE" } })).await;
    assert_eq!(
        ok["data"]["createOrganization"]["organization"]["slug"], "cache-co",
        "{ok:#}"
    );
    for bad in [
        json!({ "input": { "slug": "cache-2", "name": "C", "plan": "FREE", "extra": 1 } }),
        json!({ "input": { "slug": "cache-3", "plan": "FREE" } }),
        json!({ "input": { "slug": "cache-4", "name": "C", "plan": "PLATINUM" } }),
        json!({ "input": "cache-5" }),
    ] {
        let r = run(bad.clone()).await;
        assert_eq!(
            r["errors"][0]["extensions"]["code"],
            json!("GRAPHQL_VALIDATION_FAILED"),
            "{bad}: {r:#}"
        );
        assert_eq!(r["extensions"]["dynamodb"]["requestCount"], 0, "{bad}");
    }
}

/// An order's lines are not a connection, but they cost what the most lines an order can
/// hold (96) would: 100 orders with their lines are refused, one order with them runs.
#[tokio::test]
async fn order_lines_cost_what_an_order_can_hold() {
    let api = Limited::demo(Limits::default()).await;
    let many = r#"{ organization(slug: "acme") { orders(first: 100) {
        nodes { lines { sku description quantity } } } } }"#;
    let response = api.query(many).await;
    assert_eq!(
        response["errors"][0]["extensions"]["code"],
        json!("QUERY_TOO_COMPLEX"),
        "{response:#}"
    );
    assert_eq!(response["extensions"]["dynamodb"]["requestCount"], 0);
    let one = r#"{ organization(slug: "acme") { orders(first: 1) {
        nodes { lines { sku description quantity } } } } }"#;
    let response = api.query(one).await;
    assert!(response.get("errors").is_none(), "{response:#}");
}

/// With introspection off, a query selecting `__schema` or `__type` (directly or through
/// a fragment) is refused with `INTROSPECTION_DISABLED` before any read; `__typename`
/// still works.
#[tokio::test]
async fn introspection_off_hides_the_schema() {
    let api = Limited::demo(Limits {
        introspection: false,
        ..Limits::default()
    })
    .await;
    for query in [
        "{ __schema { queryType { name } } }",
        r#"{ __type(name: "Organization") { name } }"#,
        "query { ...Types } fragment Types on Query { ... on Query { __schema { types { name } } } }",
    ] {
        assert_eq!(
            api.query(query).await,
            refused(
                "introspection is disabled on this server",
                json!({ "code": "INTROSPECTION_DISABLED" }),
            ),
            "{query}"
        );
    }
    assert_eq!(
        api.query("{ __typename }").await["data"],
        json!({ "__typename": "Query" })
    );
    // On by default.
    let api = Limited::demo(Limits::default()).await;
    assert_eq!(
        api.query("{ __schema { queryType { name } } }").await["data"],
        json!({ "__schema": { "queryType": { "name": "Query" } } })
    );
}

// --- the deadline ------------------------------------------------------------------------

/// A request past its deadline is answered `TIMEOUT` with `data` null, and every store
/// call it had outstanding is dropped: the Query its resolver made and the read the
/// DataLoader made for it.
#[tokio::test]
async fn a_request_past_its_deadline_is_cancelled_with_its_store_calls() {
    let stalled = Stalled::over(demo_store().await);
    // Long enough for the DataLoader to have gathered its keys and issued its read, so
    // that both kinds of call are outstanding when the deadline fires.
    let limits = Limits {
        request_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let query = format!(
        r#"{{ organization(slug: "acme") {{ users(first: 2) {{ nodes {{ username }} }} }}
            node(id: "{ACME_ID}") {{ id }} }}"#
    );
    let response = graphql::execute(
        &graphql::schema_with(&limits),
        stalled.clone(),
        cursors(),
        Access::Unrestricted,
        async_graphql::Request::new(query),
        false,
    )
    .await;
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({
            "data": null,
            "errors": [{
                "message": "the request did not finish within 500 ms and was cancelled",
                "extensions": { "code": "TIMEOUT", "limitMs": 500 },
            }],
        })
    );
    assert_eq!(
        stalled.started.load(Ordering::SeqCst),
        2,
        "the Query and the BatchGetItem"
    );
    stalled.until_none_outstanding().await;
}

// --- over HTTP ---------------------------------------------------------------------------

/// Serves `store` with `options` on `127.0.0.1:0`.
async fn start_server(store: Arc<dyn Store>, options: http::Options) -> TestServer {
    TestServer::start(AppState::with_options(store, cursors(), options)).await
}

fn bad_request(message: &str) -> Value {
    json!({ "errors": [{ "message": message, "extensions": { "code": "BAD_REQUEST" } }] })
}

/// A body over `max_body_bytes` is refused with 413 and a GraphQL-shaped `BAD_REQUEST`;
/// one just under it runs.
#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let server = start_server(
        demo_store().await,
        http::Options {
            max_body_bytes: 1024,
            ..http::Options::default()
        },
    )
    .await;
    // `{"query":"{ __typename }<padding>"}`: the padding is ignored whitespace.
    let body = |len: usize| {
        let query = format!("{{ __typename }}{}", " ".repeat(len - 26));
        let body = json!({ "query": query });
        assert_eq!(body.to_string().len(), len);
        body
    };
    let (status, content_type, response) = read(server.post(body(1025))).await;
    assert_eq!((status, content_type.as_str()), (413, "application/json"));
    assert_eq!(response, bad_request("the request body is too large"));

    let (status, _, response) = read(server.post(body(1024))).await;
    assert_eq!(status, 200);
    assert_eq!(response, json!({ "data": { "__typename": "Query" } }));
    server.stop().await;
}

/// A batch (a JSON array of requests) is refused, not run: one request is one operation.
#[tokio::test]
async fn a_batch_is_refused_as_not_supported() {
    let server = start_server(demo_store().await, http::Options::default()).await;
    let (status, _, response) = read(server.post(json!([
        { "query": "{ __typename }" },
        { "query": "{ __typename }" },
    ])))
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        response,
        bad_request(
            "batched requests (a JSON array) are not supported: send one operation per request"
        )
    );
    server.stop().await;
}

/// Over HTTP a limit is a request error: 400 with `application/graphql-response+json`
/// and no `data`, 200 with `application/json`.
#[tokio::test]
async fn a_refused_query_is_a_request_error_over_http() {
    let server = start_server(demo_store().await, http::Options::default()).await;
    let query = r#"{ organization(slug: "acme") {
        users(first: 100) { nodes { tickets(first: 100) { nodes { ticketId } } } } } }"#;
    let (status, _, body) = read(server.post(json!({ "query": query })).header(ACCEPT, SPEC)).await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUERY_TOO_COMPLEX");
    assert!(body.get("data").is_none(), "{body:#}");

    let (status, _, body) = read(server.post(json!({ "query": query }))).await;
    assert_eq!(status, 200);
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUERY_TOO_COMPLEX");
    server.stop().await;
}

/// Over HTTP the deadline answers 200 `application/json` with `TIMEOUT` and `data: null`,
/// or 504 to a client that accepts `application/graphql-response+json`.
#[tokio::test]
async fn the_deadline_over_http_is_timeout_200_or_504() {
    let stalled = Stalled::over(demo_store().await);
    let server = start_server(
        stalled.clone(),
        http::Options {
            limits: Limits {
                request_timeout: Duration::from_millis(20),
                ..Limits::default()
            },
            ..http::Options::default()
        },
    )
    .await;
    let request = json!({ "query": r#"{ organization(slug: "acme") { name } }"# });
    let timeout = json!({
        "data": null,
        "errors": [{
            "message": "the request did not finish within 20 ms and was cancelled",
            "extensions": { "code": "TIMEOUT", "limitMs": 20 },
        }],
    });
    let (status, content_type, body) = read(server.post(request.clone())).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(body, timeout);

    let (status, content_type, body) = read(server.post(request).header(ACCEPT, SPEC)).await;
    assert_eq!(status, 504);
    assert!(content_type.starts_with(SPEC), "{content_type}");
    assert_eq!(body, timeout);
    server.stop().await;
}

/// With GraphiQL off, `/` and the playground's files are 404 and `GET /graphql` serves no page to a browser (only
/// queries from the URL); the API itself still answers.
#[tokio::test]
async fn graphiql_off_serves_no_page() {
    let html = "text/html,application/xhtml+xml,*/*;q=0.8";
    let server = start_server(
        demo_store().await,
        http::Options {
            graphiql: false,
            ..http::Options::default()
        },
    )
    .await;
    let page = server.client.get(server.url("/")).header(ACCEPT, html);
    assert_eq!(page.send().await.unwrap().status().as_u16(), 404);
    let asset = &itemgraph::http::playground::ASSETS[0];
    let asset = server
        .client
        .get(server.url(&itemgraph::http::playground::asset_path(asset)));
    assert_eq!(
        asset.send().await.unwrap().status().as_u16(),
        404,
        "nor its files"
    );
    let (status, content_type, body) = read(
        server
            .client
            .get(server.url("/graphql"))
            .header(ACCEPT, html),
    )
    .await;
    assert_ne!(content_type, "text/html; charset=utf-8");
    assert_eq!(
        (status, body),
        (400, bad_request("the `query` parameter is missing"))
    );
    let (status, _, body) = read(server.post(json!({ "query": "{ __typename }" }))).await;
    assert_eq!(
        (status, body),
        (200, json!({ "data": { "__typename": "Query" } }))
    );
    server.stop().await;

    // On by default.
    let server = start_server(demo_store().await, http::Options::default()).await;
    let page = server.client.get(server.url("/")).header(ACCEPT, html);
    let page = page.send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("graphiql"));
    server.stop().await;
}

/// Automatic persisted queries, the way Apollo clients speak them: the hash alone is
/// `PERSISTED_QUERY_NOT_FOUND` at first; the query sent with its hash runs and is kept;
/// then the hash alone runs it. A hash that does not match its query is refused.
#[tokio::test]
async fn a_persisted_query_round_trips_by_its_hash() {
    let server = start_server(demo_store().await, http::Options::default()).await;
    let query = r#"query Org($slug: String!) { organization(slug: $slug) { name } }"#;
    let hash = format!("{:x}", Sha256::digest(query.as_bytes()));
    let extensions = json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } });
    let variables = json!({ "slug": "globex" });
    let data = json!({ "data": { "organization": { "name": "Globex Corporation" } } });

    let hash_only = json!({ "extensions": extensions, "variables": variables });
    let (status, _, body) = read(server.post(hash_only.clone())).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({ "errors": [{
                "message": "PersistedQueryNotFound",
                "extensions": { "code": "PERSISTED_QUERY_NOT_FOUND" },
            }] })
        )
    );

    let register = json!({ "query": query, "extensions": extensions, "variables": variables });
    let (status, _, body) = read(server.post(register)).await;
    assert_eq!((status, body), (200, data.clone()));

    let (status, _, body) = read(server.post(hash_only)).await;
    assert_eq!((status, body), (200, data));

    let forged = json!({
        "query": "{ __typename }",
        "extensions": extensions,
    });
    let (_, _, body) = read(server.post(forged)).await;
    assert_eq!(
        body["errors"][0]["message"],
        "provided sha does not match query"
    );
    server.stop().await;
}
