//! Operations over real HTTP: `/metrics` moves by what requests did, request ids are
//! echoed or made, CORS answers the configured origins only, and the DynamoDB engine
//! reports its store calls, retries and consumed capacity.
//!
//! The metrics recorder is per process, and more than one test of this file may share a
//! process (`cargo test`), so every assertion compares two scrapes, before and after, and
//! every test holds [`SERIAL`] so no other test's requests land in between.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderValue;
use common::server::{read, TestServer};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::{self, AppState, Cors, CorsOrigins};
use itemgraph::store::{GetItem, PrimaryKey, Store, StoreError};
use reqwest::header::CONTENT_TYPE;
use serde_json::json;

/// Held by every test for its whole run (see the module doc).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn demo_store() -> Arc<dyn Store> {
    let store = common::engines::embedded_demo().await;
    Arc::new(store)
}

async fn start(store: Arc<dyn Store>, options: http::Options) -> TestServer {
    TestServer::start(AppState::with_options(
        store,
        CursorCodec::new("metrics test secret"),
        options,
    ))
    .await
}

/// One scrape: every sample by series name and labels.
#[derive(Debug)]
struct Scrape(Vec<(String, BTreeMap<String, String>, f64)>);

impl Scrape {
    async fn take(server: &TestServer) -> Scrape {
        let resp = server
            .client
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let content_type = resp.headers()[CONTENT_TYPE].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        Scrape::parse(&resp.text().await.unwrap())
    }

    fn parse(text: &str) -> Scrape {
        let mut samples = Vec::new();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            let value: f64 = value.parse().expect("a sample value");
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            // Label values here never hold `,` or `"` (operation names are GraphQL
            // names), so splitting on them is enough.
            let labels = labels
                .split(',')
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once('=').expect("label=value");
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            samples.push((name.to_owned(), labels, value));
        }
        Scrape(samples)
    }

    /// The sum of every sample of `name` whose labels include `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, v)| v)
            .sum()
    }

    /// Every label set of `name`.
    fn label_sets(&self, name: &str) -> Vec<&BTreeMap<String, String>> {
        self.0
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, l, _)| l)
            .collect()
    }
}

/// How much `name{labels…}` moved between two scrapes.
fn moved(before: &Scrape, after: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    after.sum(name, labels) - before.sum(name, labels)
}

const REQUESTS: &str = "itemgraph_graphql_requests_total";
const DURATION_COUNT: &str = "itemgraph_graphql_request_duration_seconds_count";
const ERRORS: &str = "itemgraph_graphql_errors_total";
const STORE_CALLS: &str = "itemgraph_store_calls_total";
const STORE_DURATION_COUNT: &str = "itemgraph_store_call_duration_seconds_count";

/// A query, a mutation, a refused mutation, a partial answer, an invalid document and a
/// request HTTP refuses: each moves the request, error and store-call series by exactly
/// what it did, labelled by its operation name, type and outcome.
#[tokio::test]
async fn requests_errors_and_store_calls_move_by_what_each_request_did() {
    let _serial = SERIAL.lock().await;
    let server = start(demo_store().await, http::Options::default()).await;
    let before = Scrape::take(&server).await;

    // A query: one Query on the table (the organization and its first users).
    let (status, _, body) = read(server.post(json!({
        "query": r#"query OrgUsers { organization(slug: "acme") { name users(first: 2) { nodes { username } } } }"#,
    })))
    .await;
    assert_eq!(status, 200);
    assert!(body.get("errors").is_none(), "{body}");

    // A mutation: one PutItem; then the same again, refused on its condition.
    let create = json!({
        "query": r#"mutation NewOrg { createOrganization(input: { slug: "metrics-co", name: "Metrics Co", plan: FREE }) { organization { slug } } }"#,
    });
    let (_, _, body) = read(server.post(create.clone())).await;
    assert_eq!(
        body["data"]["createOrganization"]["organization"]["slug"],
        "metrics-co"
    );
    let (_, _, body) = read(server.post(create)).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "CONFLICT",
        "{body}"
    );
    assert_eq!(
        body["data"],
        json!(null),
        "the payload is non-null: data is null"
    );

    // Partial: one nullable field fails, the other answers.
    let (_, _, body) = read(server.post(json!({
        "query": r#"query Partial { organization(slug: "acme") { name } ticket(id: "not a ulid") { title } }"#,
    })))
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{body}"
    );
    assert_eq!(body["data"]["organization"]["name"], "Acme Corporation");

    // An invalid document, chosen by name among two operations; an anonymous query.
    let (_, _, body) = read(server.post(json!({
        "query": "query Broken { nope } query Other { __typename }",
        "operationName": "Broken",
    })))
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"],
        "GRAPHQL_VALIDATION_FAILED"
    );
    read(server.post(json!({ "query": "{ __typename }" }))).await;

    // Not GraphQL over HTTP: refused before the schema sees it.
    let (status, _, _) = read(
        server
            .client
            .post(server.url("/graphql"))
            .header(CONTENT_TYPE, "text/plain")
            .body("{}"),
    )
    .await;
    assert_eq!(status, 400);

    let after = Scrape::take(&server).await;
    let m = |name: &str, labels: &[(&str, &str)]| moved(&before, &after, name, labels);

    let req = |op: &str, ty: &str, outcome: &str| {
        m(
            REQUESTS,
            &[("operation", op), ("type", ty), ("outcome", outcome)],
        )
    };
    assert_eq!(req("OrgUsers", "query", "ok"), 1.0);
    assert_eq!(req("NewOrg", "mutation", "ok"), 1.0);
    assert_eq!(req("NewOrg", "mutation", "error"), 1.0);
    assert_eq!(req("Partial", "query", "partial"), 1.0);
    assert_eq!(req("Broken", "query", "error"), 1.0);
    assert_eq!(req("anonymous", "query", "ok"), 1.0);
    assert_eq!(
        m(REQUESTS, &[]),
        6.0,
        "the refused request is no GraphQL request"
    );
    assert_eq!(
        m(
            DURATION_COUNT,
            &[("operation", "NewOrg"), ("type", "mutation")]
        ),
        2.0
    );
    assert_eq!(m(DURATION_COUNT, &[]), 6.0);

    assert_eq!(m(ERRORS, &[("code", "CONFLICT")]), 1.0);
    assert_eq!(m(ERRORS, &[("code", "BAD_USER_INPUT")]), 1.0);
    assert_eq!(m(ERRORS, &[("code", "GRAPHQL_VALIDATION_FAILED")]), 1.0);
    assert_eq!(m(ERRORS, &[("code", "BAD_REQUEST")]), 1.0);
    assert_eq!(m(ERRORS, &[]), 4.0);

    let call = |op: &str, outcome: &str| {
        m(
            STORE_CALLS,
            &[("op", op), ("index", "none"), ("outcome", outcome)],
        )
    };
    // OrgUsers' Query, and Partial's organization without a connection: one GetItem.
    assert_eq!(call("Query", "ok"), 1.0);
    assert_eq!(call("GetItem", "ok"), 1.0);
    assert_eq!(call("TransactWriteItems", "ok"), 1.0);
    assert_eq!(call("TransactWriteItems", "transaction_canceled"), 1.0);
    assert_eq!(m(STORE_CALLS, &[]), 4.0, "nothing else was read or written");
    assert_eq!(
        m(STORE_DURATION_COUNT, &[("op", "TransactWriteItems")]),
        2.0
    );
    server.stop().await;
}

/// A secondary index is its own label value: a user's tickets are one Query on GSI1.
#[tokio::test]
async fn store_calls_are_labelled_by_index() {
    let _serial = SERIAL.lock().await;
    let server = start(demo_store().await, http::Options::default()).await;
    let before = Scrape::take(&server).await;
    let (_, _, body) = read(server.post(json!({
        "query": r#"query UserTickets { user(org: "acme", username: "wile-e-coyote") { tickets(first: 5) { nodes { title } } } }"#,
    })))
    .await;
    assert!(body.get("errors").is_none(), "{body}");
    let after = Scrape::take(&server).await;
    assert!(
        moved(
            &before,
            &after,
            STORE_CALLS,
            &[("op", "Query"), ("index", "GSI1")]
        ) >= 1.0,
        "{:?}",
        after.label_sets(STORE_CALLS)
    );
    server.stop().await;
}

/// A request cancelled at its deadline counts as a `timeout` with a `TIMEOUT` error, and
/// the store call it left outstanding as `cancelled`: the call count never misses one.
#[tokio::test]
async fn a_timed_out_request_and_its_cancelled_store_call_are_counted() {
    let _serial = SERIAL.lock().await;
    let stalled = common::stalled::Stalled::over(demo_store().await);
    let options = http::Options {
        limits: itemgraph::graphql::Limits {
            request_timeout: Duration::from_millis(300),
            ..Default::default()
        },
        ..http::Options::default()
    };
    let server = start(stalled.clone(), options).await;
    let before = Scrape::take(&server).await;
    let (_, _, body) = read(server.post(json!({
        "query": r#"query Stuck { organization(slug: "acme") { name } }"#,
    })))
    .await;
    assert_eq!(body["errors"][0]["extensions"]["code"], "TIMEOUT", "{body}");
    stalled.until_none_outstanding().await;
    let after = Scrape::take(&server).await;
    let stuck = [("operation", "Stuck"), ("type", "query")];
    assert_eq!(
        moved(
            &before,
            &after,
            REQUESTS,
            &[stuck[0], stuck[1], ("outcome", "timeout")]
        ),
        1.0
    );
    assert_eq!(moved(&before, &after, ERRORS, &[("code", "TIMEOUT")]), 1.0);
    assert_eq!(
        moved(
            &before,
            &after,
            STORE_CALLS,
            &[("op", "GetItem"), ("outcome", "cancelled")]
        ) + moved(
            &before,
            &after,
            STORE_CALLS,
            &[("op", "BatchGetItem"), ("outcome", "cancelled")]
        ),
        1.0,
        "{:?}",
        after.label_sets(STORE_CALLS)
    );
    server.stop().await;
}

/// Client-chosen operation names cannot grow the series without bound: a name that is no
/// GraphQL name is `other`.
#[tokio::test]
async fn a_malformed_operation_name_is_other() {
    let _serial = SERIAL.lock().await;
    let server = start(demo_store().await, http::Options::default()).await;
    let before = Scrape::take(&server).await;
    let junk = format!("{}-x y", "z".repeat(300));
    read(server.post(json!({ "query": "{ __typename }", "operationName": junk }))).await;
    let after = Scrape::take(&server).await;
    assert_eq!(
        moved(&before, &after, REQUESTS, &[("operation", "other")]),
        1.0
    );
    assert!(after
        .label_sets(REQUESTS)
        .iter()
        .all(|l| l["operation"].len() <= 64));
    server.stop().await;
}

/// `--metrics off`: no `/metrics` route.
#[tokio::test]
async fn metrics_off_serves_no_metrics() {
    let _serial = SERIAL.lock().await;
    let server = start(
        demo_store().await,
        http::Options {
            metrics: false,
            ..http::Options::default()
        },
    )
    .await;
    let resp = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    server.stop().await;
}

fn request_id(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("x-request-id")
        .expect("x-request-id on every response")
        .to_str()
        .unwrap()
        .to_owned()
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A client's request id comes back as sent; without one (or with a malformed one) the
/// server makes a UUID, a new one per request; every route answers with it.
#[tokio::test]
async fn request_ids_are_echoed_or_made() {
    let _serial = SERIAL.lock().await;
    let server = start(demo_store().await, http::Options::default()).await;
    let sent = server
        .post(json!({ "query": "{ __typename }" }))
        .header("x-request-id", "client-id-42")
        .send()
        .await
        .unwrap();
    assert_eq!(request_id(&sent), "client-id-42");

    let first = request_id(
        &server
            .post(json!({ "query": "{ __typename }" }))
            .send()
            .await
            .unwrap(),
    );
    let second = request_id(
        &server
            .client
            .get(server.url("/healthz"))
            .send()
            .await
            .unwrap(),
    );
    assert!(is_uuid(&first), "{first}");
    assert!(is_uuid(&second), "{second}");
    assert_ne!(first, second);

    for malformed in ["x".repeat(129), "has space".to_owned()] {
        let resp = server
            .client
            .get(server.url("/healthz"))
            .header("x-request-id", malformed.as_str())
            .send()
            .await
            .unwrap();
        let id = request_id(&resp);
        assert!(is_uuid(&id), "{malformed:?} was replaced by {id}");
    }
    // A refused request has one too.
    let refused = server
        .client
        .post(server.url("/graphql"))
        .header(CONTENT_TYPE, "text/plain")
        .header("x-request-id", "refused-1")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert_eq!(request_id(&refused), "refused-1");
    server.stop().await;
}

async fn preflight(server: &TestServer, origin: &str) -> reqwest::Response {
    server
        .client
        .request(reqwest::Method::OPTIONS, server.url("/graphql"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type,authorization,x-itemgraph-trace",
        )
        .send()
        .await
        .unwrap()
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

/// A preflight from a configured origin is answered with that origin, the methods and
/// headers the API takes and the max age; one from another origin gets no
/// `Access-Control-Allow-Origin`, so the browser refuses. An actual request from the
/// allowed origin may read `x-request-id`.
#[tokio::test]
async fn cors_answers_the_configured_origins_only() {
    let _serial = SERIAL.lock().await;
    let server = start(
        demo_store().await,
        http::Options {
            cors: Cors {
                origins: CorsOrigins::List(vec![
                    HeaderValue::from_static("https://app.example"),
                    HeaderValue::from_static("http://localhost:5173"),
                ]),
                max_age: Some(Duration::from_secs(600)),
            },
            ..http::Options::default()
        },
    )
    .await;
    let allowed = preflight(&server, "https://app.example").await;
    assert!(allowed.status().is_success(), "{}", allowed.status());
    assert_eq!(
        header(&allowed, "access-control-allow-origin"),
        Some("https://app.example")
    );
    let methods = header(&allowed, "access-control-allow-methods").unwrap();
    for m in ["GET", "POST", "OPTIONS"] {
        assert!(methods.contains(m), "{methods}");
    }
    let headers = header(&allowed, "access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in [
        "content-type",
        "authorization",
        "x-request-id",
        "x-itemgraph-trace",
    ] {
        assert!(headers.contains(h), "{headers}");
    }
    assert_eq!(header(&allowed, "access-control-max-age"), Some("600"));
    assert_eq!(header(&allowed, "access-control-allow-credentials"), None);

    let refused = preflight(&server, "https://evil.example").await;
    assert_eq!(header(&refused, "access-control-allow-origin"), None);

    let actual = server
        .post(json!({ "query": "{ __typename }" }))
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(actual.status(), 200);
    assert_eq!(
        header(&actual, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    assert_eq!(
        header(&actual, "access-control-expose-headers"),
        Some("x-request-id,traceresponse")
    );
    server.stop().await;
}

/// `*` lets every origin in, without credentials.
#[tokio::test]
async fn cors_star_allows_every_origin() {
    let _serial = SERIAL.lock().await;
    let server = start(
        demo_store().await,
        http::Options {
            cors: Cors {
                origins: CorsOrigins::Any,
                max_age: None,
            },
            ..http::Options::default()
        },
    )
    .await;
    let resp = preflight(&server, "https://anywhere.example").await;
    assert_eq!(header(&resp, "access-control-allow-origin"), Some("*"));
    assert_eq!(header(&resp, "access-control-allow-credentials"), None);
    assert_eq!(header(&resp, "access-control-max-age"), None);
    server.stop().await;
}

/// By default there are no CORS headers at all: same-origin pages only.
#[tokio::test]
async fn no_cors_headers_by_default() {
    let _serial = SERIAL.lock().await;
    let server = start(demo_store().await, http::Options::default()).await;
    let pre = preflight(&server, "https://app.example").await;
    let actual = server
        .post(json!({ "query": "{ __typename }" }))
        .header("origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(actual.status(), 200);
    for resp in [&pre, &actual] {
        let cors: Vec<_> = resp
            .headers()
            .keys()
            .filter(|k| k.as_str().starts_with("access-control-"))
            .collect();
        assert!(cors.is_empty(), "{cors:?}");
    }
    server.stop().await;
}

/// On DynamoDB Local: store calls are counted by operation and index, and the consumed
/// capacity DynamoDB reports for them is recorded by table and index.
#[tokio::test]
async fn dynamodb_store_calls_and_consumed_capacity_are_recorded() {
    let _serial = SERIAL.lock().await;
    let Some(dynamo) = common::engines::dynamodb("metrics").await else {
        return;
    };
    crate::common::demo::seed_demo(&dynamo).await.unwrap();
    let table = dynamo.table_name().to_owned();
    let server = start(Arc::new(dynamo.clone()), http::Options::default()).await;
    let before = Scrape::take(&server).await;

    let (_, _, body) = read(
        server
            .post(json!({
                "query": r#"query UserTickets { user(org: "acme", username: "wile-e-coyote") { name tickets(first: 5) { nodes { title assignee { name } } } } }"#,
            }))
            .header("x-itemgraph-trace", "1"),
    )
    .await;
    assert!(body.get("errors").is_none(), "{body}");
    // The trace carries what each call consumed, as DynamoDB reported it.
    let requests = body["extensions"]["dynamodb"]["requests"]
        .as_array()
        .unwrap();
    assert!(!requests.is_empty());
    for r in requests {
        assert!(r["consumedCapacity"].as_f64().unwrap() > 0.0, "{r}");
    }
    let (_, _, body) = read(server.post(json!({
        "query": r#"mutation NewOrg { createOrganization(input: { slug: "metrics-ddb", name: "Metrics", plan: TEAM }) { organization { slug } } }"#,
    })))
    .await;
    assert!(body.get("errors").is_none(), "{body}");

    let after = Scrape::take(&server).await;
    let m = |name: &str, labels: &[(&str, &str)]| moved(&before, &after, name, labels);
    assert!(
        m(
            STORE_CALLS,
            &[("op", "Query"), ("index", "GSI1"), ("outcome", "ok")]
        ) >= 1.0
    );
    assert_eq!(
        m(
            STORE_CALLS,
            &[("op", "TransactWriteItems"), ("outcome", "ok")]
        ),
        1.0
    );

    // DynamoDB Local reports capacity for reads and writes; on the table, and for a
    // Query on an index, on that index.
    const CAPACITY_COUNT: &str = "itemgraph_dynamodb_consumed_capacity_units_count";
    const CAPACITY_SUM: &str = "itemgraph_dynamodb_consumed_capacity_units_sum";
    let capacity = |op: &str| m(CAPACITY_COUNT, &[("op", op), ("table", table.as_str())]);
    assert!(
        capacity("Query") >= 1.0 && capacity("TransactWriteItems") >= 1.0,
        "consumed capacity: {:?}",
        after.label_sets(CAPACITY_COUNT)
    );
    assert!(
        m(
            CAPACITY_SUM,
            &[("op", "TransactWriteItems"), ("table", table.as_str())]
        ) > 0.0
    );
    common::dynamo_local::drop_table(&dynamo).await;
    server.stop().await;
}

/// The SDK's retries are counted: against an endpoint that answers every request with a
/// 500, a GetItem made with three attempts fails `Unavailable` after two retries.
#[tokio::test]
async fn sdk_retries_are_counted() {
    let _serial = SERIAL.lock().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let failing = axum::Router::new().fallback(|| async {
        (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            [(CONTENT_TYPE, "application/x-amz-json-1.0")],
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"down"}"#,
        )
    });
    let endpoint_task = tokio::spawn(async move { axum::serve(listener, failing).await });

    let store = common::engines::dynamodb_at(&endpoint);
    // No server here: the recorder is read directly.
    itemgraph::metrics::install().expect("the recorder installs");
    let scrape = || Scrape::parse(&itemgraph::metrics::render().unwrap());
    let before = scrape();
    let got = store
        .get_item(GetItem {
            key: PrimaryKey::new("ORG#a", "ORG#a"),
            consistent_read: false,
        })
        .await;
    assert!(matches!(got, Err(StoreError::Unavailable(_))), "{got:?}");
    let after = scrape();
    assert_eq!(
        moved(
            &before,
            &after,
            "itemgraph_dynamodb_retries_total",
            &[("op", "GetItem"), ("reason", "sdk")]
        ),
        2.0
    );
    endpoint_task.abort();
}
