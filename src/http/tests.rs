use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::store::Store;
use std::sync::Arc;

use async_graphql::parser::types::OperationType;
use axum::http::HeaderMap;

use super::negotiate::{prefers_html, Media};
use super::over_http::operation_type;
use super::state::{AppState, Cors, CorsOrigins};
use crate::graphql::{self, CursorCodec};
use crate::store::embedded::EmbeddedStore;

/// One HTTP/1.1 request over a fresh connection; returns the status line and body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn state(store: Arc<EmbeddedStore>) -> AppState {
    AppState::new(store, CursorCodec::new("test secret"))
}

/// Health, readiness before and after the table exists, and a clean shutdown.
#[tokio::test]
async fn health_and_readiness_follow_the_table() {
    let store =
        Arc::new(EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, state(store.clone()), async {
        let _ = stopped.await;
    }));

    assert_eq!(
        http_get(addr, "/healthz").await,
        ("HTTP/1.1 200 OK".into(), "ok".into())
    );
    let (status, body) = http_get(addr, "/readyz").await;
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    assert_eq!(body, "table t does not exist");

    store.create_table().await.unwrap();
    assert_eq!(
        http_get(addr, "/readyz").await,
        ("HTTP/1.1 200 OK".into(), "ready".into())
    );
    assert_eq!(http_get(addr, "/nope").await.0, "HTTP/1.1 404 Not Found");

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

async fn boom() -> &'static str {
    panic!("boom")
}

/// A handler that panics answers 500 with a GraphQL-shaped `INTERNAL` error, and the
/// server keeps serving. The 500 still carries the request id and, for an allowed
/// origin, the CORS headers, so a browser page can read it and quote the id.
#[tokio::test]
async fn a_panic_becomes_a_500_internal_error() {
    let store =
        Arc::new(EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap());
    let cors = Cors {
        origins: CorsOrigins::List(vec![HeaderValue::from_static("https://app.example")]),
        max_age: None,
    };
    let router = with_layers(
        Router::new()
            .route("/boom", get(boom))
            .route("/healthz", get(healthz)),
        &cors,
        None,
    )
    .with_state(state(store));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let (status, body) = http_get(addr, "/boom").await;
    assert_eq!(status, "HTTP/1.1 500 Internal Server Error");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "errors": [{ "message": "internal error", "extensions": { "code": "INTERNAL" } }]
        })
    );
    assert_eq!(http_get(addr, "/healthz").await.0, "HTTP/1.1 200 OK");

    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(
        b"GET /boom HTTP/1.1\r\nHost: test\r\nOrigin: https://app.example\r\n\
          x-request-id: panic-1\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).await.unwrap();
    let head = raw.split_once("\r\n\r\n").unwrap().0.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 500"), "{head}");
    assert!(head.contains("\r\nx-request-id: panic-1\r\n"), "{head}");
    assert!(
        head.contains("\r\naccess-control-allow-origin: https://app.example\r\n"),
        "{head}"
    );
    server.abort();
}

#[test]
fn accept_headers_pick_the_media_type() {
    let negotiate = |accept: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        Media::negotiate(&h)
    };
    use Media::{GraphqlResponseJson as Spec, Json};
    assert_eq!(Media::negotiate(&HeaderMap::new()), Json);
    assert_eq!(negotiate("application/json"), Json);
    assert_eq!(negotiate("*/*"), Json);
    assert_eq!(negotiate(GRAPHQL_RESPONSE_JSON), Spec);
    assert_eq!(
        negotiate("application/graphql-response+json, application/json;q=0.9"),
        Spec
    );
    assert_eq!(
        negotiate("application/json, application/graphql-response+json;q=0.5"),
        Json
    );
    assert_eq!(negotiate("application/graphql-response+json;q=0"), Json);
}

#[test]
fn browsers_prefer_html_and_api_clients_do_not() {
    let html = |accept: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        prefers_html(&h)
    };
    assert!(html(
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    ));
    assert!(html("text/html"));
    assert!(!html("*/*"));
    assert!(!html("application/json"));
    assert!(!html("text/html, application/json"));
    assert!(!prefers_html(&HeaderMap::new()));
}

#[test]
fn the_operation_type_follows_the_operation_name() {
    let ty = |query: &str, name: Option<&str>| {
        let mut r = async_graphql::Request::new(query);
        if let Some(n) = name {
            r = r.operation_name(n);
        }
        operation_type(&mut r, &graphql::Limits::DEFAULT)
    };
    assert_eq!(ty("{ a }", None), Some(OperationType::Query));
    assert_eq!(ty("mutation M { a }", None), Some(OperationType::Mutation));
    let two = "query Q { a } mutation M { a }";
    assert_eq!(ty(two, None), None);
    assert_eq!(ty(two, Some("M")), Some(OperationType::Mutation));
    assert_eq!(ty(two, Some("Q")), Some(OperationType::Query));
    assert_eq!(ty("{", None), None);
}

/// A log line of a request carries its path cut to the trace's bound, however long the
/// path a client sent.
#[test]
fn a_requests_log_lines_carry_a_bounded_path() {
    #[derive(Clone, Default)]
    struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let long = "a".repeat(60_000);
    tracing::subscriber::with_default(subscriber, || {
        let request = axum::http::Request::get(format!("/{long}"))
            .body(Body::empty())
            .unwrap();
        let span = request_span(&request);
        let _inside = span.enter();
        tracing::info!("answered");
    });
    let log = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("answered"), "{log}");
    assert!(
        log.contains(&long[..telemetry::MAX_URL_PATH_BYTES - 1]),
        "{log}"
    );
    assert!(log.len() < 1024, "{} bytes: {log}", log.len());
}
