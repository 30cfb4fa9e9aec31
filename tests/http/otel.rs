//! OpenTelemetry traces, received by an OTLP/HTTP receiver on loopback
//! (`common::otlp`) as a collector receives them: a query with references makes one trace
//! (HTTP server span → GraphQL request → DataLoader batches and connection pages →
//! DynamoDB calls, as many as the trace extension counts); the caller's `traceparent` is
//! continued and the trace named in `traceresponse`; a mutation's transaction span carries
//! its outcome; a subscription's events over an event stream continue the caller's trace;
//! no variable value or token is in any span; a collector that hangs or is gone loses
//! spans, counted, and never fails or slows a request.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::otlp::{settings, Receiver, Span};
use common::server::TestServer;
use itemgraph::auth::{issue_token, Authenticator, Claims, Role};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::{AppState, Options};
use itemgraph::live::LiveOptions;
use itemgraph::store::Store;
use itemgraph::telemetry::{BatchSettings, Settings, Telemetry};
use serde_json::{json, Value};

const JWT_SECRET: &[u8] = b"otel-test-jwt-secret-0123456789abcdef";
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

const OPEN_TICKETS: &str = r#"query OpenTickets($slug: String!, $n: Int!) {
  organization(slug: $slug) {
    name
    tickets(status: OPEN, first: $n) {
      edges { node { title requester { username } assignee { username } } }
    }
  }
}"#;

fn token(org: &str) -> String {
    issue_token(
        JWT_SECRET,
        &Claims {
            sub: Some("otel-test".into()),
            org: org.into(),
            role: Role::Admin,
            exp: itemgraph::auth::expiring_in(Duration::from_secs(3600)),
            iat: None,
            iss: None,
            aud: None,
        },
    )
    .unwrap()
}

struct Traced {
    http: TestServer,
    telemetry: Telemetry,
}

async fn start(store: Arc<dyn Store>, settings: &Settings) -> Traced {
    let telemetry = Telemetry::start(settings).unwrap();
    let options = Options {
        live: LiveOptions {
            poll: Duration::from_millis(50),
            ..LiveOptions::DEFAULT
        },
        ..Options::default()
    };
    let state = AppState::with_options(store, CursorCodec::new("otel test cursors"), options)
        .with_authenticator(Some(Authenticator::hs256(JWT_SECRET)))
        .with_telemetry(Some(telemetry.clone()));
    Traced {
        http: TestServer::start(state).await,
        telemetry,
    }
}

/// `POST /graphql` with `body` and `token`; the answer as JSON.
async fn answer(server: &Traced, body: Value, token: &str) -> Value {
    server
        .http
        .post(body)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn demo_store() -> Arc<dyn Store> {
    Arc::new(common::engines::embedded_demo().await)
}

/// The trace id a `traceresponse` names.
fn trace_of(resp: &reqwest::Response) -> String {
    let value = resp
        .headers()
        .get("traceresponse")
        .expect("a traceresponse header")
        .to_str()
        .unwrap();
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!(parts[0], "00", "{value}");
    parts[1].to_owned()
}

fn parent_of<'a>(spans: &'a [Span], span: &Span) -> Option<&'a Span> {
    spans.iter().find(|s| s.span_id == span.parent_span_id)
}

fn one<'a>(spans: &'a [Span], what: impl Fn(&Span) -> bool, said: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| what(s)).collect();
    assert_eq!(found.len(), 1, "{said}: {found:#?}");
    found[0]
}

#[tokio::test]
async fn a_query_with_references_is_one_trace_of_batches_and_dynamodb_calls() {
    let receiver = Receiver::start().await;
    let server = start(demo_store().await, &settings(&receiver.traces_url())).await;
    let secret_value = "VARIABLE-VALUE-NEVER-IN-A-SPAN";
    let token = token("acme");
    let resp = server
        .http
        .post(json!({
            "query": OPEN_TICKETS,
            "variables": { "slug": "acme", "n": 5, "unused": secret_value },
        }))
        .bearer_auth(&token)
        .header("x-itemgraph-trace", "1")
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .header("tracestate", "vendor=opaque")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let trace = trace_of(&resp);
    assert_eq!(trace, CLIENT_TRACE, "the caller's trace is continued");
    let body: Value = resp.json().await.unwrap();
    assert!(body.get("errors").is_none(), "{body}");
    let tickets = body["data"]["organization"]["tickets"]["edges"]
        .as_array()
        .unwrap();
    assert!(!tickets.is_empty(), "{body}");
    let extension = &body["extensions"]["dynamodb"];
    let calls: Vec<&str> = extension["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["operation"].as_str().unwrap())
        .collect();

    server.telemetry.flush().await;
    let spans = receiver.trace(&trace);

    // The server span continues the caller's span, and the GraphQL request is its child.
    let http = one(&spans, |s| s.kind == 2, "one server span");
    assert_eq!(http.parent_span_id, CLIENT_SPAN);
    assert_eq!(http.name, "POST /graphql");
    assert_eq!(http.int("http.response.status_code"), Some(200));
    assert_eq!(http.service_name, "itemgraph-test");
    let request = one(
        &spans,
        |s| s.name == "query OpenTickets",
        "one request span",
    );
    assert_eq!(request.parent_span_id, http.span_id);
    assert_eq!(request.str("graphql.operation.type"), Some("query"));
    assert_eq!(request.str("graphql.operation.name"), Some("OpenTickets"));
    assert_eq!(request.str("itemgraph.graphql.outcome"), Some("ok"));
    let hash = request.str("graphql.document.hash").unwrap();
    assert_eq!(hash.len(), 64, "{hash}");
    assert!(
        request
            .attr(itemgraph::telemetry::ORGANIZATION_ATTRIBUTE)
            .is_none(),
        "the organization only where the operator allows it"
    );

    // One span per DynamoDB call, as many and of the kinds the trace extension reports,
    // each under the request, through the batch or page that made it.
    let mut dynamodb: Vec<&Span> = spans.iter().filter(|s| s.kind == 3).collect();
    dynamodb.sort_by_key(|s| s.name.clone());
    let mut expected: Vec<String> = calls.iter().map(|c| format!("DynamoDB.{c}")).collect();
    expected.sort();
    let names: Vec<String> = dynamodb.iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, expected);
    assert_eq!(
        dynamodb.len() as u64,
        extension["requestCount"].as_u64().unwrap()
    );
    for call in &dynamodb {
        assert_eq!(call.str("db.system"), Some("aws.dynamodb"));
        assert_eq!(call.str("rpc.service"), Some("DynamoDB"));
        assert_eq!(call.str("rpc.method"), call.name.strip_prefix("DynamoDB."));
        assert_eq!(
            call.attr("aws.dynamodb.table_names"),
            Some(&json!(["itemgraph"]))
        );
        assert_eq!(call.int("itemgraph.dynamodb.attempts"), Some(1));
        assert_eq!(call.str("itemgraph.dynamodb.outcome"), Some("ok"));
        let mut up = parent_of(&spans, call).expect("a DynamoDB call has a parent");
        let via = up.name.clone();
        while up.span_id != request.span_id {
            up = parent_of(&spans, up).unwrap_or_else(|| panic!("{via} leads to the request"));
        }
        match call.name.as_str() {
            "DynamoDB.Query" => {
                assert_eq!(via, "connection page");
                assert_eq!(call.str("aws.dynamodb.index_name"), Some("GSI2"));
                assert_eq!(call.int("aws.dynamodb.limit"), Some(6));
            }
            "DynamoDB.GetItem" | "DynamoDB.BatchGetItem" => {
                assert_eq!(via, "DataLoader batch")
            }
            other => panic!("no {other} expected"),
        }
    }
    let batch = spans
        .iter()
        .find(|s| s.name == "DataLoader batch" && s.int("itemgraph.dataloader.keys") > Some(1))
        .expect("the references in one batch");
    assert!(batch.int("itemgraph.dataloader.found") >= Some(1));
    let page = one(&spans, |s| s.name == "connection page", "one page");
    assert_eq!(page.int("itemgraph.page.size"), Some(5));
    assert!(page.int("itemgraph.page.items_read") >= Some(1));

    // Nothing of the variables or the token in any span of the process.
    let everything = format!("{:?}", receiver.spans());
    assert!(!everything.contains(secret_value));
    assert!(!everything.contains(&token));
    assert!(
        !everything.contains("acme"),
        "no key, slug or tenant name: {everything}"
    );
    server.http.stop().await;
}

#[tokio::test]
async fn a_mutations_transaction_span_carries_its_outcome() {
    let receiver = Receiver::start().await;
    let mut with_org = settings(&receiver.traces_url());
    with_org.record_organization = true;
    let server = start(demo_store().await, &with_org).await;
    let create = |slug: &str| {
        server
            .http
            .post(json!({
                "query": "mutation New($input: CreateOrganizationInput!) { createOrganization(input: $input) { organization { slug } } }",
                "variables": { "input": { "slug": slug, "name": "Traced Ltd", "plan": "FREE" } },
            }))
            .bearer_auth(token(slug))
    };
    // No traceparent: the server starts the trace.
    let made = create("traced-ltd").send().await.unwrap();
    let made_trace = trace_of(&made);
    assert_ne!(made_trace, CLIENT_TRACE);
    let body: Value = made.json().await.unwrap();
    assert!(body.get("errors").is_none(), "{body}");
    // The same slug again: the transaction's condition fails.
    let again = create("traced-ltd").send().await.unwrap();
    let again_trace = trace_of(&again);
    let body: Value = again.json().await.unwrap();
    assert!(body.get("errors").is_some(), "{body}");
    server.telemetry.flush().await;

    let spans = receiver.trace(&made_trace);
    let request = one(&spans, |s| s.name == "mutation New", "the mutation");
    assert_eq!(request.str("itemgraph.organization"), Some("traced-ltd"));
    let tx = one(
        &spans,
        |s| s.name == "DynamoDB.TransactWriteItems",
        "one transaction",
    );
    assert_eq!(tx.str("itemgraph.dynamodb.outcome"), Some("ok"));
    assert!(
        tx.int("itemgraph.dynamodb.action_count") >= Some(1),
        "{tx:#?}"
    );
    assert_eq!(
        tx.int("itemgraph.dynamodb.item_count"),
        tx.int("itemgraph.dynamodb.action_count")
    );
    assert_eq!(tx.status_code, 0, "unset: it succeeded");

    let spans = receiver.trace(&again_trace);
    let tx = one(
        &spans,
        |s| s.name == "DynamoDB.TransactWriteItems",
        "one transaction",
    );
    assert_eq!(tx.status_code, 2, "an error");
    assert_eq!(tx.str("error.type"), Some("TransactionCanceledException"));
    assert_eq!(
        tx.str("itemgraph.dynamodb.outcome"),
        Some("transaction_canceled")
    );
    let reasons = tx.attr("itemgraph.dynamodb.cancellation_reasons").unwrap();
    assert!(
        reasons
            .as_array()
            .unwrap()
            .contains(&json!("ConditionalCheckFailed")),
        "{reasons}"
    );
    let request = one(&spans, |s| s.name == "mutation New", "the mutation");
    assert_eq!(request.str("itemgraph.graphql.outcome"), Some("error"));
    let codes = request.attr("itemgraph.graphql.error_codes").unwrap();
    assert_eq!(codes, &json!(["CONFLICT"]));
    server.http.stop().await;
}

#[tokio::test]
async fn a_subscriptions_events_continue_the_callers_trace() {
    let receiver = Receiver::start().await;
    let server = start(demo_store().await, &settings(&receiver.traces_url())).await;
    let token = token("acme");
    let mut events = server
        .http
        .post(json!({
            "query": "subscription Watch { ticketEvents(org: \"acme\") { kind ticket { title requester { username } } } }",
        }))
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    assert_eq!(trace_of(&events), CLIENT_TRACE);
    // Give the subscription a moment to be in place, then write.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let made = answer(
        &server,
        json!({
            "query": "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }",
            "variables": { "input": { "org": "acme", "title": "Traced event", "body": "Seen live.", "requester": "wile-e-coyote", "priority": "NORMAL" } },
        }),
        &token,
    )
    .await;
    assert!(made.get("errors").is_none(), "{made}");
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains("Traced event") {
        let chunk = tokio::time::timeout_at(deadline.into(), events.chunk())
            .await
            .expect("the event within 10 s")
            .unwrap()
            .expect("the stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(events);
    server.telemetry.flush().await;
    let spans = receiver.trace(CLIENT_TRACE);
    let http = one(&spans, |s| s.kind == 2, "the event stream's request");
    let event = one(&spans, |s| s.name == "subscription Watch", "one event");
    assert_eq!(event.parent_span_id, http.span_id);
    assert_eq!(event.str("graphql.operation.type"), Some("subscription"));
    assert_eq!(event.str("itemgraph.event.kind"), Some("CREATED"));
    assert_eq!(event.str("itemgraph.graphql.outcome"), Some("ok"));
    // The requester is read when the event is resolved: its call is the event's.
    let read = spans
        .iter()
        .find(|s| s.kind == 3)
        .expect("the event's read of its requester");
    let mut up = parent_of(&spans, read).unwrap();
    while up.span_id != event.span_id {
        up = parent_of(&spans, up).expect("the read leads to the event");
    }
    server.http.stop().await;
}

#[tokio::test]
async fn a_websockets_operations_continue_the_trace_of_its_upgrade() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let receiver = Receiver::start().await;
    let server = start(demo_store().await, &settings(&receiver.traces_url())).await;
    let mut request = format!("ws://{}/graphql", server.http.addr)
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "sec-websocket-protocol",
        "graphql-transport-ws".parse().unwrap(),
    );
    headers.insert(
        "traceparent",
        format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01")
            .parse()
            .unwrap(),
    );
    let (mut ws, upgraded) = tokio_tungstenite::connect_async(request).await.unwrap();
    let named = upgraded.headers()["traceresponse"].to_str().unwrap();
    assert!(named.starts_with(&format!("00-{CLIENT_TRACE}-")), "{named}");
    let send = |v: Value| Message::text(v.to_string());
    ws.send(send(json!({
        "type": "connection_init",
        "payload": { "Authorization": format!("Bearer {}", token("acme")) },
    })))
    .await
    .unwrap();
    let mut got = Vec::new();
    ws.send(send(json!({
        "id": "1",
        "type": "subscribe",
        "payload": { "query": "query Name { organization(slug: \"acme\") { name } }" },
    })))
    .await
    .unwrap();
    while !got.iter().any(|m: &Value| m["type"] == "complete") {
        let message = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10 s")
            .expect("the socket open")
            .unwrap();
        if let Message::Text(text) = message {
            got.push(serde_json::from_str(&text).unwrap());
        }
    }
    let answer = got.iter().find(|m| m["type"] == "next").expect("an answer");
    assert_eq!(
        answer["payload"]["data"]["organization"]["name"],
        "Acme Corporation"
    );
    ws.close(None).await.unwrap();
    server.telemetry.flush().await;
    let spans = receiver.trace(CLIENT_TRACE);
    let upgrade = one(&spans, |s| s.kind == 2, "the upgrade's span");
    assert_eq!(upgrade.parent_span_id, CLIENT_SPAN);
    assert_eq!(upgrade.int("http.response.status_code"), Some(101));
    let query = one(&spans, |s| s.name == "query Name", "the query");
    assert_eq!(query.parent_span_id, upgrade.span_id);
    let read = one(&spans, |s| s.kind == 3, "its one read");
    assert_eq!(read.name, "DynamoDB.GetItem");
    let mut up = parent_of(&spans, read).unwrap();
    while up.span_id != query.span_id {
        up = parent_of(&spans, up).expect("the read leads to the query");
    }
    server.http.stop().await;
}

fn p99(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[(times.len() * 99 / 100).min(times.len() - 1)]
}

fn spans_counted(outcome: &str) -> f64 {
    let text = itemgraph::metrics::render().unwrap_or_default();
    let series = format!("itemgraph_trace_spans_total{{outcome=\"{outcome}\"}}");
    text.lines()
        .filter_map(|l| l.strip_prefix(&series))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum()
}

/// Three servers on one store, their requests interleaved: one exports to a receiver that
/// answers, one to a receiver that never answers, one to a port nobody listens on. Every
/// request is answered alike; the p99 of the two without a collector stays near the
/// first's; their spans are dropped and counted.
#[tokio::test]
async fn a_collector_that_hangs_or_is_gone_never_fails_or_slows_a_request() {
    itemgraph::metrics::install();
    let store = demo_store().await;
    let small = |url: &str| Settings {
        batch: BatchSettings {
            max_queue_size: 64,
            max_export_batch_size: 16,
            schedule_delay: Duration::from_millis(20),
            export_timeout: Duration::from_millis(500),
        },
        ..settings(url)
    };
    let up = Receiver::start().await;
    let hung = Receiver::start().await;
    hung.hang();
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1/traces", l.local_addr().unwrap())
    };
    let servers = [
        start(store.clone(), &small(&up.traces_url())).await,
        start(store.clone(), &small(&hung.traces_url())).await,
        start(store.clone(), &small(&gone)).await,
    ];
    let before = spans_counted("queue_full") + spans_counted("export_failed");
    let token = token("acme");
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    let query = json!({ "query": OPEN_TICKETS, "variables": { "slug": "acme", "n": 3 } });
    let expected = answer(&servers[0], query.clone(), &token).await;
    for _ in 0..300 {
        for (i, server) in servers.iter().enumerate() {
            let started = Instant::now();
            let resp = server
                .http
                .post(query.clone())
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            let body: Value = resp.json().await.unwrap();
            times[i].push(started.elapsed());
            assert_eq!(body, expected, "server {i}");
        }
    }
    let [with, hanging, without] = times.map(p99);
    let bound = with * 3 + Duration::from_millis(25);
    assert!(
        hanging <= bound && without <= bound,
        "p99 with a collector {with:?}, a hung one {hanging:?}, none {without:?}"
    );
    for server in &servers {
        server.telemetry.flush().await;
    }
    let dropped = spans_counted("queue_full") + spans_counted("export_failed") - before;
    // About ten spans a request, 300 requests each for the two without a collector.
    assert!(dropped >= 1000.0, "{dropped} spans counted as dropped");
    assert!(hung.posts() >= 1, "the hung receiver was tried");
    assert!(
        up.spans().len() >= 300 * 5,
        "the answering receiver got {} spans",
        up.spans().len()
    );
    for server in servers {
        server.http.stop().await;
    }
}
