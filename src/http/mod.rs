//! The HTTP surface: [`app`] builds the router (tests call it without a socket) and
//! [`serve`] runs it on a listener until the shutdown future completes.
//!
//! Routes:
//! - `POST /graphql`: GraphQL over HTTP, a JSON body `{query, operationName, variables,
//!   extensions}` (`extensions.persistedQuery`: automatic persisted queries). One operation
//!   per request: a batch (a JSON array) is refused with `BAD_REQUEST`.
//! - `GET /graphql`: GraphiQL for a browser (`Accept` prefers `text/html`); otherwise the
//!   query from the URL (`?query=…&variables=…&operationName=…`), queries only.
//! - `GET /`: the playground ([`playground`]: GraphiQL served from the binary), and its
//!   files under `/playground/<hash>/<name>`.
//! - `GET /healthz` (the process is up) and `GET /readyz` (the table can be used).
//! - `GET /metrics`: Prometheus metrics (see [`crate::metrics`]), unless
//!   [`Options::metrics`] is off.
//!
//! With an [`Authenticator`] (auth on), both `/graphql` routes need `Authorization: Bearer
//! <JWT>`, checked before the request is parsed: a missing or bad token is 401
//! `UNAUTHENTICATED` with `WWW-Authenticate: Bearer`; a good one becomes the request's
//! [`Access`]. GraphiQL's page and the probes need none.
//!
//! GraphiQL can be turned off ([`Options::graphiql`]: `/` is then 404 and `GET /graphql`
//! serves queries only), and a body over [`Options::max_body_bytes`] is refused with 413.
//! Automatic persisted queries are taken over POST only: a GET carries its query, whose
//! operation type is checked before it runs.
//!
//! The response speaks the GraphQL-over-HTTP spec: `application/graphql-response+json` to
//! a client that accepts it (a request that fails before execution then gets 400),
//! `application/json` with 200 to everyone else. Header `x-itemgraph-trace: 1` lists every
//! DynamoDB request the query made in `extensions.dynamodb`. A request that is not GraphQL
//! over HTTP at all gets a GraphQL-shaped error with `extensions.code = "BAD_REQUEST"`, and
//! a panic anywhere below becomes a 500 `INTERNAL`, never a dropped connection.
//!
//! Every response carries `x-request-id`: the client's own when it sent a well-formed one,
//! else a fresh UUID; the request's log span carries it too. Cross-origin browser access
//! is off unless [`Options::cors`] names origins.
//!
//! The files: this one the router, its layers, the probes and `serve`; [`state`] what every
//! handler shares ([`AppState`], [`Options`]); `over_http` GraphQL over HTTP (POST and GET);
//! `negotiate` content negotiation; `errors` the errors answered before GraphQL runs;
//! `connections` the listener and its limits; `live` WebSocket and Server-Sent Events;
//! [`playground`] the playground's page and files.

use std::future::Future;
use std::sync::LazyLock;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::store::own::OwnRecord as _;
use crate::telemetry::{self, Telemetry};

mod connections;
mod errors;
mod live;
mod negotiate;
mod over_http;
pub mod playground;
mod state;
#[cfg(test)]
mod tests;

pub use connections::{fit_to_open_files, ConnectionLimits, ConnectionScope, Lease, LeaseEnd};

pub use state::{AppState, Cors, CorsOrigins, LongLived, Options};

use errors::{panic_response, HttpError};
use negotiate::Media;
use over_http::{graphql_get, graphql_post, operation_type, WireResponse};

/// The request header that turns on the DynamoDB trace (`1` or `true`).
pub const TRACE_HEADER: &str = "x-itemgraph-trace";
/// The request id: taken from the request when well-formed, else made; always answered.
pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest client-sent request id kept; a longer one is replaced, so a client cannot fill
/// the logs through it.
pub const MAX_REQUEST_ID_LEN: usize = 128;
/// The `http.route` of a request no route matches: one value for all of them, so a
/// client's made-up paths never become attribute values.
pub const UNMATCHED_ROUTE: &str = "/{*unmatched}";
/// The GraphQL-over-HTTP media type; a client that accepts it gets spec status codes.
pub const GRAPHQL_RESPONSE_JSON: &str = "application/graphql-response+json";
const JSON: &str = "application/json";

/// The router with every route, the body limit, panic recovery, request ids, request
/// tracing and CORS.
pub fn app(state: AppState) -> Router {
    let options = state.options().clone();
    let mut router =
        Router::new()
            .route(
                "/graphql",
                get(graphql_get).post(graphql_post).route_layer(
                    axum::middleware::from_fn_with_state(state.clone(), live::refuse_rebound_host),
                ),
            )
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz));
    if options.graphiql {
        router = router
            .route("/", get(graphiql))
            .route(playground::ASSET_ROUTE, get(playground::serve_asset));
    }
    if options.metrics {
        crate::metrics::install();
        router = router.route("/metrics", get(metrics));
    }
    // The body size and read time are enforced where the body is read (`read_body`), so
    // an oversized or late body is answered in GraphQL's error shape.
    let gate = state.telemetry().cloned().map(|telemetry| TraceGate {
        telemetry,
        authenticator: state.0.authenticator.clone(),
    });
    with_layers(router, &options.cors, gate).with_state(state)
}

/// The layers every route runs under, innermost first:
/// - a panic becomes a 500 `INTERNAL`;
/// - CORS, around it, so even that 500 is readable by an allowed page, and a preflight is
///   answered before any route;
/// - with OpenTelemetry on, the request's server span ([`traced`]), continuing a trusted
///   caller's `traceparent` and naming the trace in `traceresponse`;
/// - the trace layer's span (method, path, request id) around everything the request
///   does, so its 500 is logged like any response;
/// - the request id, outermost: set before the span is made, echoed on every response,
///   the panic's and the preflight's included.
fn with_layers(router: Router<AppState>, cors: &Cors, gate: Option<TraceGate>) -> Router<AppState> {
    let mut router = router.layer(CatchPanicLayer::custom(panic_response));
    if let Some(cors) = cors_layer(cors) {
        router = router.layer(cors);
    }
    if let Some(gate) = gate {
        router = router.layer(axum::middleware::from_fn_with_state(gate, traced));
    }
    let request_id = HeaderName::from_static(REQUEST_ID_HEADER);
    router
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .layer(axum::middleware::map_request(drop_malformed_request_id))
}

/// What [`traced`] needs: the tracer, and the authenticator that tells whether a caller's
/// `traceparent` is to be followed (`--otel-trust-parent authenticated`).
#[derive(Clone)]
struct TraceGate {
    telemetry: Telemetry,
    authenticator: Option<crate::auth::Authenticator>,
}

impl TraceGate {
    /// Whether this request's `traceparent` may decide its sampling. With `authenticated`,
    /// looked at only when it can matter: a `traceparent` to follow, on the one route that
    /// authenticates. The token is checked with the keys at hand (`authenticate`, never
    /// `verify_until`'s fetch), so a forged `kid` costs no fetch here; the handler checks
    /// it again, as it always has.
    fn trusts(&self, route: Option<&str>, headers: &axum::http::HeaderMap) -> bool {
        use crate::telemetry::ParentTrust;
        match self.telemetry.parent_trust() {
            ParentTrust::All => true,
            ParentTrust::Nobody => false,
            ParentTrust::Authenticated => {
                route == Some("/graphql")
                    && headers.contains_key(telemetry::TRACEPARENT_HEADER)
                    && self.authenticator.as_ref().is_some_and(|auth| {
                        auth.authenticate(
                            headers
                                .get(header::AUTHORIZATION)
                                .map(HeaderValue::as_bytes),
                        )
                        .is_ok()
                    })
            }
        }
    }
}

/// Runs a request in its OpenTelemetry server span (`GET /graphql`: the method and the
/// route, never the query string, where a GET request's variables are). A trusted
/// caller's `traceparent` is continued ([`TraceGate::trusts`]); anyone else's starts a new
/// trace linked to it. A path no route matches is recorded as one route,
/// [`UNMATCHED_ROUTE`] (span `GET`, no `url.path`): a client can make it as long and as
/// varied as it likes. Answers with the trace in [`TRACE_RESPONSE_HEADER`]. A WebSocket or an event
/// stream carries the span's context on into its operations.
async fn traced(
    State(gate): State<TraceGate>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use opentelemetry::KeyValue;
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let trusted = gate.trusts(route.as_deref(), request.headers());
    let mut attributes = vec![KeyValue::new("http.request.method", method.clone())];
    let name = match route {
        Some(route) => {
            let path = telemetry::truncated(request.uri().path(), telemetry::MAX_URL_PATH_BYTES);
            attributes.push(KeyValue::new("url.path", path.to_owned()));
            let name = format!("{method} {route}");
            attributes.push(KeyValue::new("http.route", route));
            name
        }
        None => {
            // One route for every path no route matches: recorded, never the path itself.
            attributes.push(KeyValue::new("http.route", UNMATCHED_ROUTE));
            method
        }
    };
    let cx = gate
        .telemetry
        .server_context(name, request.headers(), trusted, attributes);
    let mut response = telemetry::attach(cx.clone(), next.run(request)).await;
    let status = response.status();
    if let Some(value) = telemetry::trace_response(&cx).and_then(|v| HeaderValue::try_from(v).ok())
    {
        response
            .headers_mut()
            .insert(telemetry::TRACE_RESPONSE_HEADER, value);
    }
    let error = status
        .is_server_error()
        .then(|| std::borrow::Cow::Owned(status.as_u16().to_string()));
    telemetry::end(
        &cx,
        vec![KeyValue::new(
            "http.response.status_code",
            i64::from(status.as_u16()),
        )],
        error,
    );
    response
}

/// The span of one HTTP request; the GraphQL request's span and its store calls' nest in it.
fn request_span(request: &axum::http::Request<Body>) -> tracing::Span {
    let id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!(
        "request",
        method = %request.method(),
        // Cut as the trace's `url.path` is: a client chooses it, and every log line of
        // the request carries it.
        path = telemetry::truncated(request.uri().path(), telemetry::MAX_URL_PATH_BYTES),
        request_id = id,
    )
}

/// A client's request id is kept only when it is 1 to [`MAX_REQUEST_ID_LEN`] visible
/// ASCII characters; otherwise it is removed here and a fresh one is made, so what lands
/// in every log line of the request stays short and printable.
async fn drop_malformed_request_id(mut request: axum::extract::Request) -> axum::extract::Request {
    let well_formed = |v: &HeaderValue| {
        let bytes = v.as_bytes();
        (1..=MAX_REQUEST_ID_LEN).contains(&bytes.len()) && bytes.iter().all(u8::is_ascii_graphic)
    };
    let headers = request.headers_mut();
    if headers
        .get_all(REQUEST_ID_HEADER)
        .iter()
        .enumerate()
        .any(|(i, v)| i > 0 || !well_formed(v))
    {
        headers.remove(REQUEST_ID_HEADER);
    }
    request
}

/// The CORS layer, or none at all when no origin is allowed (no CORS headers then).
fn cors_layer(cors: &Cors) -> Option<CorsLayer> {
    let origins = match &cors.origins {
        CorsOrigins::None => return None,
        CorsOrigins::Any => AllowOrigin::any(),
        CorsOrigins::List(origins) => AllowOrigin::list(origins.iter().cloned()),
    };
    let layer = CorsLayer::new()
        .allow_origin(origins)
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            HeaderName::from_static(REQUEST_ID_HEADER),
            HeaderName::from_static(TRACE_HEADER),
        ])
        .expose_headers([
            HeaderName::from_static(REQUEST_ID_HEADER),
            HeaderName::from_static(telemetry::TRACE_RESPONSE_HEADER),
        ]);
    Some(match cors.max_age {
        Some(age) => layer.max_age(age),
        None => layer,
    })
}

/// The router of a metrics-only listener (`--metrics-listen`): `GET /metrics` and
/// `GET /healthz`, nothing of the API.
pub fn metrics_app() -> Router {
    crate::metrics::install();
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
}

/// `GET /metrics`: the Prometheus text format.
async fn metrics() -> Response {
    match crate::metrics::render() {
        Some(text) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            )],
            text,
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "another metrics recorder is installed in this process",
        )
            .into_response(),
    }
}

/// Serves [`app`] on `listener` until `shutdown` completes, then lets in-flight requests
/// finish before returning.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.options().connections;
    connections::serve(listener, app(state), limits, shutdown).await
}

// --- health ------------------------------------------------------------------------------

/// `itemgraph health`: `GET /healthz` on `addr` over HTTP/1.1 (hyper's client), within
/// `timeout`. Ok when the answer is 200; otherwise the reason.
pub async fn probe_health(
    addr: std::net::SocketAddr,
    timeout: std::time::Duration,
) -> Result<(), String> {
    let probe = async {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| format!("HTTP with {addr}: {e}"))?;
        tokio::spawn(connection);
        let request = axum::http::Request::get("/healthz")
            .header(header::HOST, addr.to_string())
            .body(http_body_util::Empty::<axum::body::Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("GET /healthz on {addr}: {e}"))?;
        match response.status() {
            StatusCode::OK => Ok(()),
            status => Err(format!("GET /healthz on {addr}: {status}")),
        }
    };
    tokio::time::timeout(timeout, probe)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "GET /healthz on {addr}: no answer within {timeout:?}"
            ))
        })
}

/// Liveness: answers as long as the process serves requests; touches no store, so a store
/// outage never gets the process restarted.
async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: 200 when the table exists and accepts requests (DynamoDB status `ACTIVE` or
/// `UPDATING`), 503 otherwise, so a load balancer holds traffic back until then.
async fn readyz(State(state): State<AppState>) -> (StatusCode, String) {
    let store = state.store();
    let (status, mut body) = match store.describe_table().await {
        Ok(Some(table)) if matches!(table.status.as_str(), "ACTIVE" | "UPDATING") => {
            (StatusCode::OK, "ready".to_owned())
        }
        Ok(Some(table)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("table {} is {}", table.name, table.status),
        ),
        Ok(None) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("table {} does not exist", store.table_name()),
        ),
        Err(error) => {
            tracing::warn!(%error, "readiness check: DescribeTable failed");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable".into())
        }
    };
    if let Some(log) = state.relay() {
        // Reported, never failing readiness: every replica shares the relay, so a relay
        // outage failing them all would take queries and mutations down with it.
        body.push('\n');
        body.push_str(&relay_health(&state, &log).await);
    }
    (status, body)
}

/// The relay's health as `/readyz` reports it: reachable or not, who holds the lease at
/// which epoch, what this replica has received, and its subscriptions.
async fn relay_health(state: &AppState, log: &crate::live::relay::RelayLog) -> String {
    let reachable = match log.ping().await {
        Ok(()) => "reachable".to_owned(),
        Err(e) => format!("unreachable ({e})"),
    };
    let lease = match state
        .store()
        .get_item(crate::store::GetItem {
            key: crate::store::own::lease_key(crate::live::relayer::LEASE_NAME),
            consistent_read: true,
        })
        .await
        .map(|i| {
            i.and_then(|i| {
                crate::live::lease::LeaseRecord::from_item(i, state.store().schema()).ok()
            })
        }) {
        Ok(Some(l)) if !l.released => format!("held by {} (epoch {})", l.holder, l.epoch),
        Ok(_) => "free".to_owned(),
        Err(e) => format!("unknown ({e})"),
    };
    let hub = &state.0.hub;
    let followed = hub.followed();
    format!(
        "relay: {reachable}; lease {lease}; {} entries received, the last {} ms after its change; {} subscriptions open",
        followed.entries,
        followed.lag_ms,
        hub.open_subscriptions()
    )
}

// --- GraphiQL ----------------------------------------------------------------------------

/// The playground page (see [`playground`]) of the built-in chart: without and with
/// subscriptions served, without and with authentication on. Its tabs: `examples/`, then
/// one per write pattern of the chart, its input made from the demo data.
static PLAYGROUND: LazyLock<PlaygroundPages> = LazyLock::new(|| {
    let tabs = playground::builtin_examples();
    playground_pages(
        &tabs.iter().map(String::as_str).collect::<Vec<_>>(),
        &crate::chart::builtin(),
    )
});

/// The playground's pages, by subscriptions served and authentication on.
pub(crate) type PlaygroundPages = [[String; 2]; 2];

/// The playground's pages of `chart` with `examples` as its tabs.
pub(crate) fn playground_pages(examples: &[&str], chart: &crate::chart::Chart) -> PlaygroundPages {
    let panel = playground::chart_panel(chart, examples);
    [false, true].map(|subscriptions| {
        [false, true].map(|auth| {
            playground::page_with(
                "/graphql",
                TRACE_HEADER,
                auth,
                subscriptions,
                examples,
                &panel,
            )
        })
    })
}

/// The playground page with its Content-Security-Policy.
fn playground_page(state: &AppState, headers: &axum::http::HeaderMap) -> Response {
    let auth = state.0.authenticator.is_some();
    // The page's WebSocket host, where this deployment serves WebSockets at all.
    let subscriptions = state.options().long_lived == LongLived::Served;
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|_| subscriptions);
    let policy = HeaderValue::try_from(playground::content_security_policy(host))
        .unwrap_or_else(|_| HeaderValue::from_static(playground::CONTENT_SECURITY_POLICY));
    (
        [
            (header::CONTENT_SECURITY_POLICY, policy),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Html(
            state.0.playground.as_deref().unwrap_or(&PLAYGROUND)[usize::from(subscriptions)]
                [usize::from(auth)]
            .clone(),
        ),
    )
        .into_response()
}

async fn graphiql(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    playground_page(&state, &headers)
}
