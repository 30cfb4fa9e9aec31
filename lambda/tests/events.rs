//! The function driven as the Lambda runtime drives it, with the HTTP events AWS documents
//! (`tests/fixtures/lambda/`): each event deserialized into lambda_http's `LambdaRequest`,
//! handed to the function's handler, its answer serialized into that event kind's response.
//! The table is on DynamoDB Local; every answer is compared with `serve`'s router on the
//! same table, so status, headers that matter and body are exactly `serve`'s.

mod common;

use common::{dynamo_local, token, CURSOR_SECRET, JWT_SECRET};

use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use lambda_http::request::LambdaRequest;
use lambda_http::{Context, LambdaEvent};
use serde_json::{json, Value};
use tower::{Service, ServiceExt};

use itemgraph_lambda::{handler, router, Settings, LONG_LIVED_REFUSED};

/// The kinds of HTTP event, by fixture.
#[derive(Debug, Clone, Copy)]
enum Kind {
    FunctionUrl,
    HttpApi,
    RestApi,
    Alb,
}

const KINDS: [Kind; 4] = [Kind::FunctionUrl, Kind::HttpApi, Kind::RestApi, Kind::Alb];

/// One HTTP request, to be put into an event or sent to `serve`'s router.
#[derive(Debug, Clone)]
struct Http {
    method: &'static str,
    path: String,
    query: Option<String>,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

impl Http {
    fn post(body: Value) -> Http {
        Http {
            method: "POST",
            path: "/graphql".into(),
            query: None,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(body.to_string()),
        }
    }

    fn get(path: &str, query: Option<&str>) -> Http {
        Http {
            method: "GET",
            path: path.into(),
            query: query.map(str::to_owned),
            headers: Vec::new(),
            body: None,
        }
    }

    fn header(mut self, name: &str, value: &str) -> Http {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn bearer(self, token: &str) -> Http {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// The event of `kind` that carries this request: AWS's documented example with the
    /// request's method, path, query, headers and body put where that kind carries them.
    fn event(&self, kind: Kind) -> Value {
        let file = match kind {
            Kind::FunctionUrl => "function-url.json",
            Kind::HttpApi => "apigw-http-v2.json",
            Kind::RestApi => "apigw-rest-v1.json",
            Kind::Alb => "alb.json",
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/lambda")
            .join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let mut event: Value = serde_json::from_str(&text).expect("a fixture is JSON");
        // The headers every gateway adds: the host it was reached on (AWS's function URL
        // example has a placeholder there, `<url-id>`, that is no host name).
        let host = match kind {
            Kind::FunctionUrl => "abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-west-2.on.aws",
            Kind::HttpApi | Kind::RestApi => "id.execute-api.us-east-1.amazonaws.com",
            Kind::Alb => "lambda-alb-123578498.us-east-1.elb.amazonaws.com",
        };
        let mut all = vec![
            ("host".to_owned(), host.to_owned()),
            ("x-forwarded-proto".to_owned(), "https".to_owned()),
        ];
        all.extend(self.headers.iter().cloned());
        let headers: serde_json::Map<String, Value> = all
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let pairs: Vec<(String, String)> = self
            .query
            .as_deref()
            .map(|q| {
                url_pairs(q)
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        // API Gateway passes the query's parameters decoded; a load balancer as sent.
        let decoded: serde_json::Map<String, Value> = pairs
            .iter()
            .map(|(k, v)| (percent_decode(k), Value::from(percent_decode(v))))
            .collect();
        let multi_decoded: serde_json::Map<String, Value> = pairs
            .iter()
            .map(|(k, v)| (percent_decode(k), json!([percent_decode(v)])))
            .collect();
        let as_sent: serde_json::Map<String, Value> = pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let body = self.body.clone().map_or(Value::Null, Value::from);
        match kind {
            Kind::FunctionUrl | Kind::HttpApi => {
                event["rawPath"] = self.path.as_str().into();
                event["rawQueryString"] = self.query.clone().unwrap_or_default().into();
                event["queryStringParameters"] = decoded.into();
                event["cookies"] = json!([]);
                event["headers"] = headers.into();
                event["requestContext"]["http"]["method"] = self.method.into();
                event["requestContext"]["http"]["path"] = self.path.as_str().into();
                event["body"] = body;
                event["isBase64Encoded"] = false.into();
            }
            Kind::RestApi => {
                let multi_headers: serde_json::Map<String, Value> =
                    all.iter().map(|(k, v)| (k.clone(), json!([v]))).collect();
                event["path"] = self.path.as_str().into();
                event["resource"] = "/{proxy+}".into();
                event["httpMethod"] = self.method.into();
                event["headers"] = headers.into();
                event["multiValueHeaders"] = multi_headers.into();
                event["queryStringParameters"] = decoded.into();
                event["multiValueQueryStringParameters"] = multi_decoded.into();
                event["requestContext"]["httpMethod"] = self.method.into();
                event["requestContext"]["path"] = self.path.as_str().into();
                event["requestContext"]["resourcePath"] = "/{proxy+}".into();
                event["body"] = body;
                event["isBase64Encoded"] = false.into();
            }
            Kind::Alb => {
                event["path"] = self.path.as_str().into();
                event["httpMethod"] = self.method.into();
                event["headers"] = headers.into();
                event["queryStringParameters"] = as_sent.into();
                event["body"] = self.body.clone().unwrap_or_default().into();
                event["isBase64Encoded"] = false.into();
            }
        }
        event
    }
}

/// `a=1&b=2` as pairs, unescaped as a form is (the tests' queries are ASCII).
fn url_pairs(query: &str) -> Vec<(&str, &str)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect()
}

/// `%XX` escapes (and `+`) decoded, as API Gateway decodes a query's parameters.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ASCII");
                out.push(u8::from_str_radix(hex, 16).expect("a %XX escape"));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

/// What came back, whichever the event kind: the status, the headers (lower-case names,
/// the last value of each) and the body text.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    headers: std::collections::BTreeMap<String, String>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    fn code(&self) -> Value {
        self.json()["errors"][0]["extensions"]["code"].clone()
    }
}

/// The response of an event kind, read back as the load balancer or gateway would.
fn answer_of(kind: Kind, response: &Value) -> Answer {
    let status = response["statusCode"]
        .as_u64()
        .unwrap_or_else(|| panic!("no statusCode in {response}")) as u16;
    if let Kind::Alb = kind {
        let description = response["statusDescription"]
            .as_str()
            .expect("ALB answers carry statusDescription");
        assert!(
            description.starts_with(&status.to_string()),
            "statusDescription {description:?} for {status}"
        );
    }
    let mut headers = std::collections::BTreeMap::new();
    if let Some(map) = response["headers"].as_object() {
        for (k, v) in map {
            headers.insert(
                k.to_ascii_lowercase(),
                v.as_str().unwrap_or_default().to_owned(),
            );
        }
    }
    if let Some(map) = response["multiValueHeaders"].as_object() {
        for (k, v) in map {
            if let Some(last) = v.as_array().and_then(|a| a.last()).and_then(Value::as_str) {
                headers.insert(k.to_ascii_lowercase(), last.to_owned());
            }
        }
    }
    let text = response["body"].as_str().unwrap_or_default();
    let body = if response["isBase64Encoded"].as_bool() == Some(true) {
        use base64::Engine as _;
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .expect("base64"),
        )
        .expect("UTF-8")
    } else {
        text.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// A function instance and `serve`'s router on one table.
struct Stack {
    /// The function, as one instance serves it.
    function: axum::Router,
    /// `serve`'s router with `serve`'s options, on the same table.
    serve: axum::Router,
    settings_args: Vec<String>,
}

impl Stack {
    /// A seeded table, or `None` when DynamoDB Local cannot be had outside CI.
    async fn new() -> Option<Stack> {
        Stack::with(&[]).await
    }

    async fn with(extra: &[&str]) -> Option<Stack> {
        let store = dynamo_local::store("lambda").await?;
        itemgraph::chart::data::load(
            &store,
            &itemgraph::chart::builtin(),
            itemgraph::chart::data::builtin_demo(),
        )
        .await
        .expect("seeding");
        let endpoint = dynamo_local::endpoint().await?;
        let mut settings_args: Vec<String> = [
            "--store",
            "dynamodb",
            "--endpoint",
            &endpoint,
            "--table",
            itemgraph::store::Store::table_name(&store),
            "--jwt-secret",
            JWT_SECRET,
            "--cursor-secret",
            CURSOR_SECRET,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        settings_args.extend(extra.iter().map(|s| s.to_string()));
        let settings = settings(&settings_args);
        let function = router(&settings).await.expect("the function's router");
        let serve_args = &settings.serve;
        let serve = itemgraph::http::app(
            serve_args
                .app_state(serve_args.options().expect("options"))
                .await
                .expect("serve's state"),
        );
        Some(Stack {
            function,
            serve,
            settings_args,
        })
    }

    /// Another instance of the function on the same table (a cold start elsewhere).
    async fn another_instance(&self) -> axum::Router {
        router(&settings(&self.settings_args))
            .await
            .expect("the function's router")
    }

    async fn invoke(&self, kind: Kind, request: &Http) -> Answer {
        invoke(&self.function, kind, request.event(kind)).await
    }

    /// The same request through `serve`'s router.
    async fn serve(&self, request: &Http) -> Answer {
        let uri = match &request.query {
            Some(q) => format!("{}?{q}", request.path),
            None => request.path.clone(),
        };
        let mut builder = Request::builder().method(request.method).uri(uri);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        let req = builder
            .body(request.body.clone().map_or_else(Body::empty, Body::from))
            .expect("a request");
        let response = self.serve.clone().oneshot(req).await.expect("infallible");
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the body");
        Answer {
            status,
            headers,
            body: String::from_utf8(bytes.to_vec()).expect("UTF-8"),
        }
    }

    /// Invokes the function with every event kind and checks each answer against `serve`'s:
    /// same status, content type and body.
    async fn same_as_serve(&self, request: &Http) -> Answer {
        let served = self.serve(request).await;
        for kind in KINDS {
            let answer = self.invoke(kind, request).await;
            assert_eq!(
                (
                    answer.status,
                    answer.header("content-type"),
                    without_timings(&answer.body)
                ),
                (
                    served.status,
                    served.header("content-type"),
                    without_timings(&served.body)
                ),
                "{kind:?} answered otherwise than serve for {request:?}"
            );
        }
        served
    }
}

fn settings(args: &[String]) -> Settings {
    Settings::parse(args.iter().map(Into::into)).expect("settings")
}

/// The body with the trace's timings (which differ between two runs) taken out.
fn without_timings(body: &str) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(body) else {
        return body.to_owned();
    };
    if let Some(requests) = value
        .pointer_mut("/extensions/dynamodb/requests")
        .and_then(Value::as_array_mut)
    {
        for request in requests {
            for field in ["durationMicros", "startMicros"] {
                if let Some(r) = request.as_object_mut() {
                    r.remove(field);
                }
            }
        }
    }
    value.to_string()
}

/// Hands an event to the handler as the runtime does.
async fn invoke(function: &axum::Router, kind: Kind, event: Value) -> Answer {
    let request: LambdaRequest =
        serde_json::from_value(event).expect("lambda_http decodes the event");
    let mut adapter = lambda_http::Adapter::from(handler(function.clone()));
    let response = adapter
        .ready()
        .await
        .expect("ready")
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .expect("infallible");
    answer_of(
        kind,
        &serde_json::to_value(&response).expect("the response serializes"),
    )
}

const ORG_QUERY: &str =
    r#"{ organization(slug: "acme") { name users(first: 2) { nodes { username } } } }"#;

#[tokio::test]
async fn a_query_answers_on_every_event_kind_as_serve_does() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let admin = token("acme", "admin");
    let served = stack
        .same_as_serve(&Http::post(json!({ "query": ORG_QUERY })).bearer(&admin))
        .await;
    assert_eq!(served.status, 200);
    assert_eq!(
        served.json()["data"]["organization"]["name"],
        "Acme Corporation"
    );
    // The trace extension, on every kind.
    let traced = stack
        .same_as_serve(
            &Http::post(json!({ "query": ORG_QUERY }))
                .bearer(&admin)
                .header("x-itemgraph-trace", "1"),
        )
        .await;
    assert_eq!(traced.json()["extensions"]["dynamodb"]["requestCount"], 1);
    // The spec's media type and its status codes.
    let bad = stack
        .same_as_serve(
            &Http::post(json!({ "query": "{ organization(slug: " }))
                .bearer(&admin)
                .header("accept", "application/graphql-response+json"),
        )
        .await;
    assert_eq!(bad.status, 400);
    // A query in the URL.
    let got = stack
        .same_as_serve(&Http::get("/graphql", Some("query=%7B__typename%7D")).bearer(&admin))
        .await;
    assert_eq!(got.json()["data"]["__typename"], "Query");
}

#[tokio::test]
async fn persisted_queries_and_probes_are_serves() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let admin = token("acme", "admin");
    let hash = "ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38";
    let miss = stack
        .same_as_serve(
            &Http::post(json!({
                "extensions": { "persistedQuery": { "version": 1, "sha256Hash": hash } }
            }))
            .bearer(&admin),
        )
        .await;
    assert_eq!(miss.code(), "PERSISTED_QUERY_NOT_FOUND");
    let health = stack.same_as_serve(&Http::get("/healthz", None)).await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    let ready = stack.same_as_serve(&Http::get("/readyz", None)).await;
    assert_eq!(ready.status, 200);
}

#[tokio::test]
async fn a_mutation_writes_and_a_later_invocation_reads_it() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let admin = token("acme", "admin");
    let created = stack
        .invoke(
            Kind::FunctionUrl,
            &Http::post(json!({
                "query": "mutation($input: CreateUserInput!) { createUser(input: $input) { user { username name } } }",
                "variables": { "input": {
                    "org": "acme", "username": "lambda-user", "name": "Lambda User",
                    "email": "lambda-user@example.com", "role": "MEMBER"
                } }
            }))
            .bearer(&admin),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(
        created.json()["data"]["createUser"]["user"]["username"],
        "lambda-user",
        "{}",
        created.body
    );
    let read = stack
        .invoke(
            Kind::Alb,
            &Http::post(json!({
                "query": r#"{ user(org: "acme", username: "lambda-user") { name } }"#
            }))
            .bearer(&admin),
        )
        .await;
    assert_eq!(read.json()["data"]["user"]["name"], "Lambda User");
}

#[tokio::test]
async fn a_cursor_minted_by_one_instance_pages_on_another() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let other = stack.another_instance().await;
    let admin = token("acme", "admin");
    let page = |after: Option<String>| {
        Http::post(json!({
            "query": "query($after: String) { organization(slug: \"acme\") { users(first: 4, after: $after) { nodes { username } pageInfo { endCursor hasNextPage } } } }",
            "variables": { "after": after }
        }))
        .bearer(&admin)
    };
    let all = stack
        .invoke(
            Kind::HttpApi,
            &Http::post(json!({
                "query": "{ organization(slug: \"acme\") { users(first: 100) { nodes { username } } } }"
            }))
            .bearer(&admin),
        )
        .await
        .json()["data"]["organization"]["users"]["nodes"]
        .clone();
    let mut walked = Vec::new();
    let mut after = None;
    // Instances and event kinds alternate: each cursor is used by the instance that did
    // not mint it.
    for step in 0.. {
        let (function, kind) = if step % 2 == 0 {
            (&stack.function, KINDS[step % 4])
        } else {
            (&other, KINDS[step % 4])
        };
        let answer = invoke(function, kind, page(after.clone()).event(kind)).await;
        let users = answer.json()["data"]["organization"]["users"].clone();
        assert!(users.is_object(), "{}", answer.body);
        walked.extend(users["nodes"].as_array().expect("nodes").iter().cloned());
        if users["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = users["pageInfo"]["endCursor"].as_str().map(str::to_owned);
    }
    assert!(walked.len() > 4, "more than one page");
    assert_eq!(Value::from(walked), all);
}

#[tokio::test]
async fn a_bad_token_is_401_and_an_oversized_body_413() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let none = stack
        .same_as_serve(&Http::post(json!({ "query": ORG_QUERY })))
        .await;
    assert_eq!((none.status, none.code()), (401, json!("UNAUTHENTICATED")));
    let bad = stack
        .same_as_serve(&Http::post(json!({ "query": ORG_QUERY })).bearer("not.a.token"))
        .await;
    assert_eq!((bad.status, bad.code()), (401, json!("UNAUTHENTICATED")));
    for kind in KINDS {
        let answer = stack
            .invoke(
                kind,
                &Http::post(json!({ "query": ORG_QUERY })).bearer("not.a.token"),
            )
            .await;
        assert_eq!(
            answer.header("www-authenticate"),
            Some(r#"Bearer error="invalid_token""#),
            "{kind:?}"
        );
    }
    let admin = token("acme", "admin");
    let padding = " ".repeat(1024 * 1024);
    let big = Http::post(json!({ "query": format!("{{ __typename {padding} }}") })).bearer(&admin);
    let too_large = stack.same_as_serve(&big).await;
    assert_eq!(
        (too_large.status, too_large.code()),
        (413, json!("BAD_REQUEST"))
    );
}

#[tokio::test]
async fn subscriptions_are_refused_naming_the_container_deployment() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let admin = token("acme", "admin");
    let subscription = r#"subscription { ticketEvents(org: "acme") { cursor } }"#;
    let requests = [
        Http::post(json!({ "query": subscription })).bearer(&admin),
        Http::post(json!({ "query": subscription }))
            .bearer(&admin)
            .header("accept", "text/event-stream"),
        Http::post(json!({ "query": ORG_QUERY }))
            .bearer(&admin)
            .header("accept", "text/event-stream"),
        Http::get(
            "/graphql",
            Some("query=subscription%7BticketEvents(org:%22acme%22)%7Bcursor%7D%7D"),
        )
        .bearer(&admin),
        Http::get("/graphql", None)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("sec-websocket-protocol", "graphql-transport-ws"),
    ];
    for request in &requests {
        for kind in KINDS {
            let answer = stack.invoke(kind, request).await;
            assert_eq!(
                (answer.status, answer.code()),
                (501, json!("SUBSCRIPTIONS_UNAVAILABLE")),
                "{kind:?} {request:?}: {}",
                answer.body
            );
            let message = answer.json()["errors"][0]["message"].clone();
            assert_eq!(message, LONG_LIVED_REFUSED);
            assert!(LONG_LIVED_REFUSED.contains("container image"));
        }
    }
    // Without a token the caller learns nothing more than 401.
    let anonymous = stack
        .invoke(
            Kind::FunctionUrl,
            &Http::post(json!({ "query": subscription })),
        )
        .await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn the_playground_is_served_as_serve_serves_it() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let page = Http::get("/", None).header("accept", "text/html");
    // `serve`'s page, but for the subscriptions the function does not serve: a
    // subscription run in it says so, and its policy names no WebSocket.
    let tabs = itemgraph::http::playground::builtin_examples();
    let expected = itemgraph::http::playground::page(
        "/graphql",
        itemgraph::http::TRACE_HEADER,
        true,
        false,
        &tabs.iter().map(String::as_str).collect::<Vec<_>>(),
        &itemgraph::chart::builtin(),
    );
    assert!(expected.contains("\"subscriptions\":false"));
    for kind in KINDS {
        let answer = stack.invoke(kind, &page).await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, expected, "{kind:?}");
        assert_eq!(
            answer.header("content-security-policy"),
            Some(itemgraph::http::playground::CONTENT_SECURITY_POLICY)
        );
    }
    let served = stack.serve(&page).await;
    assert!(served.body.contains("\"subscriptions\":true"));
    // Off, as `serve --graphiql off` has it.
    let Some(off) = Stack::with(&["--graphiql", "off"]).await else {
        return;
    };
    let answer = off.same_as_serve(&page).await;
    assert_eq!(answer.status, 404);
    // No metrics route on Lambda: every instance would count its own invocations.
    let metrics = stack
        .invoke(Kind::FunctionUrl, &Http::get("/metrics", None))
        .await;
    assert_eq!(metrics.status, StatusCode::NOT_FOUND.as_u16());
}

#[tokio::test]
async fn a_rest_api_stage_and_a_base64_body_are_taken_as_api_gateway_sends_them() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let admin = token("acme", "admin");
    let request = Http::post(json!({ "query": ORG_QUERY })).bearer(&admin);
    let expected = stack.serve(&request).await;
    // A REST API on stage `prod`: the event's path has no stage, lambda_http adds it.
    let mut rest = request.event(Kind::RestApi);
    rest["requestContext"]["stage"] = "prod".into();
    rest["requestContext"]["path"] = "/prod/graphql".into();
    let answer = invoke(&stack.function, Kind::RestApi, rest).await;
    assert_eq!(answer.body, expected.body);
    // An HTTP API on stage `prod`: the stage is in the path as sent; the body base64.
    let mut http = request.event(Kind::HttpApi);
    http["requestContext"]["stage"] = "prod".into();
    http["rawPath"] = "/prod/graphql".into();
    http["requestContext"]["http"]["path"] = "/prod/graphql".into();
    use base64::Engine as _;
    http["body"] = base64::engine::general_purpose::STANDARD
        .encode(request.body.as_deref().unwrap_or_default())
        .into();
    http["isBase64Encoded"] = true.into();
    let answer = invoke(&stack.function, Kind::HttpApi, http).await;
    assert_eq!(answer.body, expected.body);
}

/// The message of the refusal to start with these arguments.
/// An instance is frozen once it has answered: the invocation's spans are at the
/// collector before its answer leaves, though the batch delay is a minute.
#[tokio::test]
async fn each_invocations_spans_reach_the_collector_before_it_answers() {
    let receiver = common::otlp::Receiver::start().await;
    let url = receiver.traces_url();
    let Some(stack) = Stack::with(&[
        "--otlp-traces-endpoint",
        &url,
        "--otel-bsp-schedule-delay",
        "60000",
    ])
    .await
    else {
        return;
    };
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let request = Http::post(json!({ "query": ORG_QUERY }))
        .bearer(&token("acme", "admin"))
        .header("traceparent", &format!("00-{trace}-b7ad6b7169203331-01"));
    let answer = stack.invoke(Kind::FunctionUrl, &request).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer
            .header("traceresponse")
            .is_some_and(|t| t.starts_with(&format!("00-{trace}-"))),
        "{:?}",
        answer.headers
    );
    let spans = receiver.trace(trace);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"POST /graphql"), "{names:?}");
    assert!(names.contains(&"query"), "{names:?}");
    assert!(names.contains(&"DynamoDB.Query"), "{names:?}");
}

async fn refused(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match router(&settings(&args)).await {
        Ok(_) => panic!("{args:?} was taken"),
        Err(e) => format!("{e:#}"),
    }
}

#[tokio::test]
async fn what_does_not_fit_lambda_is_refused_at_init() {
    let embedded = refused(&["--in-memory", "--cursor-secret", CURSOR_SECRET]).await;
    assert!(embedded.contains("ITEMGRAPH_STORE=dynamodb"), "{embedded}");
    let dynamo = [
        "--store",
        "dynamodb",
        "--endpoint",
        "http://127.0.0.1:9",
        "--auth",
        "off",
    ];
    let no_cursor_secret = refused(&dynamo).await;
    assert!(
        no_cursor_secret.contains("ITEMGRAPH_CURSOR_SECRET"),
        "{no_cursor_secret}"
    );
    let seeding = refused(
        &[
            &dynamo[..],
            &["--cursor-secret", CURSOR_SECRET, "--seed", "demo"],
        ]
        .concat(),
    )
    .await;
    assert!(seeding.contains("itemgraph seed"), "{seeding}");
    let metrics = refused(
        &[
            &dynamo[..],
            &[
                "--cursor-secret",
                CURSOR_SECRET,
                "--metrics-listen",
                "127.0.0.1:0",
            ],
        ]
        .concat(),
    )
    .await;
    assert!(metrics.contains("no listener"), "{metrics}");
    let no_auth = refused(&["--store", "dynamodb", "--cursor-secret", CURSOR_SECRET]).await;
    assert!(no_auth.contains("without authentication"), "{no_auth}");
}
