//! GraphQL over real HTTP: a server on a loopback port, serving the demo data from an
//! in-memory embedded engine, spoken to with `reqwest` the way a client would.

use crate::common;

use std::sync::Arc;

use common::server::{read, TestServer};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::AppState;
use reqwest::header::{ACCEPT, ALLOW, CONTENT_TYPE};
use serde_json::{json, Value};

const SPEC: &str = "application/graphql-response+json";

/// Serves the demo data on `127.0.0.1:0`.
async fn start_server() -> TestServer {
    let store = common::engines::embedded_demo().await;
    TestServer::start(AppState::new(
        Arc::new(store),
        CursorCodec::new("http test secret"),
    ))
    .await
}

fn code(body: &Value) -> &str {
    body["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or("")
}

const ORG_AND_USERS: &str =
    r#"{ organization(slug: "acme") { name users(first: 2) { nodes { username } } } }"#;

fn org_and_users_data() -> Value {
    json!({ "data": { "organization": {
        "name": "Acme Corporation",
        "users": { "nodes": [{ "username": "beaky-buzzard" }, { "username": "bugs-bunny" }] }
    } } })
}

/// A plain POST answers 200 `application/json` with the data and no `extensions` at all.
#[tokio::test]
async fn a_post_query_answers_with_data_and_no_extensions() {
    let server = start_server().await;
    let (status, content_type, body) = read(server.post(json!({ "query": ORG_AND_USERS }))).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(body, org_and_users_data());

    // operationName and variables pick and feed the operation.
    let (status, _, body) = read(server.post(json!({
        "query": "query A { __typename } query B($slug: String!) { organization(slug: $slug) { name } }",
        "operationName": "B",
        "variables": { "slug": "globex" },
    })))
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({ "data": { "organization": { "name": "Globex Corporation" } } })
    );
    server.stop().await;
}

/// `x-itemgraph-trace: 1` (or `true`) adds `extensions.dynamodb`: an organization and the
/// first page of its users is one Query on the base table.
#[tokio::test]
async fn the_trace_header_reports_the_dynamodb_requests() {
    let server = start_server().await;
    for value in ["1", "true"] {
        let (status, _, body) = read(
            server
                .post(json!({ "query": ORG_AND_USERS }))
                .header("x-itemgraph-trace", value),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body["data"], org_and_users_data()["data"]);
        let trace = &body["extensions"]["dynamodb"];
        assert_eq!(trace["requestCount"], 1, "{body:#}");
        let request = &trace["requests"][0];
        assert_eq!(request["operation"], "Query");
        assert_eq!(request["index"], Value::Null);
        assert_eq!(
            request["keyCondition"],
            r#"PK = "ORG#acme" AND SK >= "ORG#acme""#
        );
    }
    let (_, _, body) = read(
        server
            .post(json!({ "query": ORG_AND_USERS }))
            .header("x-itemgraph-trace", "0"),
    )
    .await;
    assert_eq!(body, org_and_users_data(), "no trace unless asked");
    server.stop().await;
}

/// A client that accepts `application/graphql-response+json` gets it, and a request
/// that fails before execution (here a syntax error) is a 400 without `data`.
#[tokio::test]
async fn graphql_response_json_is_negotiated_and_a_syntax_error_is_400() {
    let server = start_server().await;
    let (status, content_type, body) = read(
        server
            .post(json!({ "query": ORG_AND_USERS }))
            .header(ACCEPT, format!("{SPEC}, application/json;q=0.9")),
    )
    .await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with(SPEC), "{content_type}");
    assert_eq!(body, org_and_users_data());

    let (status, content_type, body) = read(
        server
            .post(json!({ "query": "{ organization(slug: " }))
            .header(ACCEPT, SPEC),
    )
    .await;
    assert_eq!(status, 400, "{body:#}");
    assert!(content_type.starts_with(SPEC), "{content_type}");
    assert_eq!(code(&body), "GRAPHQL_VALIDATION_FAILED");
    assert!(body.get("data").is_none(), "{body:#}");

    // A validation error fails before execution too.
    let (status, _, body) = read(
        server
            .post(json!({ "query": "{ nope }" }))
            .header(ACCEPT, SPEC),
    )
    .await;
    assert_eq!((status, code(&body)), (400, "GRAPHQL_VALIDATION_FAILED"));

    // An error during execution is not a request error: 200, and `data` is there.
    let (status, _, body) = read(
        server
            .post(json!({
                "query": "{ bad: organization(slug: \"NOT A SLUG\") { name } good: organization(slug: \"acme\") { name } }"
            }))
            .header(ACCEPT, SPEC),
    )
    .await;
    assert_eq!((status, code(&body)), (200, "BAD_USER_INPUT"), "{body:#}");
    assert_eq!(body["data"]["good"], json!({ "name": "Acme Corporation" }));
    server.stop().await;
}

/// A client that asks for `application/json` (or nothing) gets it, with 200 even for a
/// syntax error, as GraphQL-over-HTTP asks for legacy clients.
#[tokio::test]
async fn application_json_answers_200_even_for_a_syntax_error() {
    let server = start_server().await;
    for accept in [Some("application/json"), Some("*/*"), None] {
        let mut req = server.post(json!({ "query": "{ organization(slug: " }));
        if let Some(accept) = accept {
            req = req.header(ACCEPT, accept);
        }
        let (status, content_type, body) = read(req).await;
        assert_eq!(
            (status, content_type.as_str()),
            (200, "application/json"),
            "{accept:?}"
        );
        assert_eq!(code(&body), "GRAPHQL_VALIDATION_FAILED");
    }
    server.stop().await;
}

/// `GET /graphql?query=…` runs a query, with `variables` (JSON) and `operationName`.
#[tokio::test]
async fn get_runs_the_query_from_the_url() {
    let server = start_server().await;
    let get = server.client.get(server.url("/graphql"));
    let (status, content_type, body) = read(get.query(&[("query", ORG_AND_USERS)])).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(body, org_and_users_data());

    let (status, _, body) = read(
        server
            .client
            .get(server.url("/graphql"))
            .header("x-itemgraph-trace", "1")
            .query(&[
                (
                    "query",
                    "query O($slug: String!) { organization(slug: $slug) { planned: plan } }",
                ),
                ("variables", r#"{"slug": "initech"}"#),
                ("operationName", "O"),
            ]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"],
        json!({ "organization": { "planned": "FREE" } })
    );
    assert_eq!(body["extensions"]["dynamodb"]["requestCount"], 1);
    server.stop().await;
}

/// GET never runs a mutation: 405 with `Allow: POST` (GraphQL over HTTP).
#[tokio::test]
async fn a_mutation_over_get_is_405() {
    let server = start_server().await;
    let resp = server
        .client
        .get(server.url("/graphql"))
        .query(&[("query", "mutation { anything }")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers()[ALLOW], "POST");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(code(&body), "BAD_REQUEST");
    server.stop().await;
}

/// A browser gets the playground at `/` and at `/graphql`: HTML under a strict
/// Content-Security-Policy, loading only this origin's files, each of which is served
/// with its content type, immutable caching and the bytes the page's hash names (the
/// vendored ones as the lock records them).
#[tokio::test]
async fn browsers_get_the_playground_and_every_file_it_loads() {
    use itemgraph::http::playground::{asset_path, content_security_policy, ASSETS};
    use sha2::{Digest, Sha256};

    let server = start_server().await;
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let mut page = String::new();
    for (path, accept) in [
        ("/", None),
        ("/", Some(browser)),
        ("/graphql", Some(browser)),
    ] {
        let mut req = server.client.get(server.url(path));
        if let Some(accept) = accept {
            req = req.header(ACCEPT, accept);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let headers = resp.headers().clone();
        assert!(headers[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        // This origin's files only; connections to this host, its WebSocket included.
        let host = server.addr.to_string();
        let policy = content_security_policy(Some(&host));
        assert!(policy.contains(&format!("connect-src 'self' ws://{host} wss://{host};")));
        assert_eq!(headers["content-security-policy"], policy.as_str());
        page = resp.text().await.unwrap();
        assert!(
            page.contains("\"traceHeader\":\"x-itemgraph-trace\""),
            "{path}: {page}"
        );
    }
    let lock: Value =
        serde_json::from_str(include_str!("../../assets/playground/vendor.lock.json")).unwrap();
    for asset in ASSETS.iter() {
        let path = asset_path(asset);
        if !asset.content_type.starts_with("text/plain") {
            assert!(page.contains(&path), "the page loads {path}");
        }
        let resp = server.client.get(server.url(&path)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let headers = resp.headers().clone();
        assert_eq!(headers[CONTENT_TYPE], asset.content_type, "{path}");
        assert_eq!(
            headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let bytes = resp.bytes().await.unwrap();
        let sha256: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(path.contains(&sha256[..16]), "{path} names its content");
        if let Some(locked) = lock["sha256"].get(asset.name) {
            assert_eq!(
                locked,
                &json!(sha256),
                "{} as the lock records it",
                asset.name
            );
        }
    }
    // A stale hash (a page older than the binary) or an unknown file is 404.
    let first = &ASSETS[0];
    for path in [
        format!("/playground/0000000000000000/{}", first.name),
        format!("/playground/{}/nothing.js", first.hash),
    ] {
        let resp = server.client.get(server.url(&path)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 404, "{path}");
    }
    server.stop().await;
}

/// What is not GraphQL over HTTP is a 400 with a GraphQL-shaped `BAD_REQUEST` error,
/// never a panic or a dropped connection.
#[tokio::test]
async fn requests_that_are_not_graphql_over_http_are_400_bad_request() {
    let server = start_server().await;
    let post = |content_type: &str, body: &str| {
        server
            .client
            .post(server.url("/graphql"))
            .header(CONTENT_TYPE, content_type)
            .body(body.to_owned())
    };
    let cases = [
        ("malformed JSON", post("application/json", r#"{"query": "#)),
        ("not an object", post("application/json", "[1, 2]")),
        ("no query", post("application/json", r#"{"variables": {}}"#)),
        (
            "variables not an object",
            post(
                "application/json",
                r#"{"query": "{ __typename }", "variables": [1]}"#,
            ),
        ),
        (
            "wrong content type",
            post("text/plain", r#"{"query": "{ __typename }"}"#),
        ),
        (
            "no query parameter",
            server.client.get(server.url("/graphql")),
        ),
        (
            "variables parameter not JSON",
            server
                .client
                .get(server.url("/graphql"))
                .query(&[("query", "{ __typename }"), ("variables", "{")]),
        ),
    ];
    for (what, req) in cases {
        let (status, content_type, body) = read(req).await;
        assert_eq!(status, 400, "{what}: {body:#}");
        assert_eq!(content_type, "application/json", "{what}");
        assert_eq!(code(&body), "BAD_REQUEST", "{what}: {body:#}");
        assert!(body["errors"][0]["message"].is_string(), "{what}");
    }
    let (status, content_type, body) =
        read(post("application/json", "nope").header(ACCEPT, SPEC)).await;
    assert_eq!(status, 400);
    assert!(content_type.starts_with(SPEC), "{content_type}");
    assert_eq!(code(&body), "BAD_REQUEST");

    // The server is still serving.
    let (status, _, body) = read(server.post(json!({ "query": ORG_AND_USERS }))).await;
    assert_eq!((status, body), (200, org_and_users_data()));
    server.stop().await;
}

/// A cursor from one page fetches the next over HTTP, and a forged one is refused with
/// `INVALID_CURSOR`.
#[tokio::test]
async fn cursors_page_over_http_and_forged_ones_are_refused() {
    let server = start_server().await;
    let page = |after: Option<&str>| {
        server
            .post(json!({
                "query": "query($after: String) { organization(slug: \"acme\") { users(first: 2, after: $after) { nodes { username } pageInfo { endCursor hasNextPage } } } }",
                "variables": { "after": after },
            }))
            .header("x-itemgraph-trace", "1")
    };
    let (_, _, first) = read(page(None)).await;
    let users = &first["data"]["organization"]["users"];
    assert_eq!(users["pageInfo"]["hasNextPage"], true);
    let cursor = users["pageInfo"]["endCursor"].as_str().unwrap().to_owned();
    let (_, _, second) = read(page(Some(&cursor))).await;
    assert_eq!(
        second["data"]["organization"]["users"]["nodes"],
        json!([{ "username": "cecil-turtle" }, { "username": "daffy-duck" }])
    );

    let (status, _, forged) = read(page(Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))).await;
    assert_eq!((status, code(&forged)), (200, "INVALID_CURSOR"));
    server.stop().await;
}

/// The `# DynamoDB requests: N` an example's header promises.
fn promised_requests(path: &std::path::Path, text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("# DynamoDB requests: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{} has no `# DynamoDB requests: N` line", path.display()))
}

/// Every `examples/*.graphql` runs without errors on the demo data and costs exactly the
/// DynamoDB requests its header says.
#[tokio::test]
async fn every_example_runs_and_costs_what_its_header_says() {
    let server = start_server().await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphql"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    for path in files {
        let query = std::fs::read_to_string(&path).unwrap();
        let promised = promised_requests(&path, &query);
        let (status, _, body) = read(
            server
                .post(json!({ "query": query }))
                .header("x-itemgraph-trace", "1"),
        )
        .await;
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(status, 200, "{name}: {body:#}");
        assert!(body.get("errors").is_none(), "{name}: {body:#}");
        assert_eq!(
            body["extensions"]["dynamodb"]["requestCount"], promised,
            "{name}: {:#}",
            body["extensions"]["dynamodb"]["requests"]
        );
    }
    server.stop().await;
}

/// `examples/run.sh` posts an example with the trace header; its stdout is the JSON
/// response, pretty-printed or not (needs curl; skipped loudly without it).
#[tokio::test]
async fn the_run_script_posts_an_example_with_the_trace() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED the_run_script_posts_an_example_with_the_trace: no curl");
        return;
    }
    let server = start_server().await;
    let root = env!("CARGO_MANIFEST_DIR");
    let out = tokio::process::Command::new(format!("{root}/examples/run.sh"))
        .arg(format!("{root}/examples/org_users.graphql"))
        .arg(format!("http://{}", server.addr))
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["data"]["organization"]["name"], "Acme Corporation");
    assert_eq!(body["extensions"]["dynamodb"]["requestCount"], 1);
    server.stop().await;
}
