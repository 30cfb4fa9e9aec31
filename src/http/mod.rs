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

// Over 900 lines with its tests: the router, its layers (limits, auth, CORS, request ids,
// panics) and the GraphQL-over-HTTP mapping are one surface, read top to bottom; the
// unit tests of its body and header handling sit at the end.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_graphql::parser::types::OperationType;
use async_graphql::{ServerError, Value, Variables};
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

mod connections;
mod live;
pub mod playground;

pub use connections::{fit_to_open_files, ConnectionLimits, ConnectionScope, Lease, LeaseEnd};

use crate::auth::{Access, AuthError, Authenticator};
use crate::graphql::{self, CursorCodec, ItemgraphSchema};
use crate::live::{Hub, LiveOptions};
use crate::store::metered::MeteredStore;
use crate::store::Store;

/// The request header that turns on the DynamoDB trace (`1` or `true`).
pub const TRACE_HEADER: &str = "x-itemgraph-trace";
/// The request id: taken from the request when well-formed, else made; always answered.
pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest client-sent request id kept; a longer one is replaced, so a client cannot fill
/// the logs through it.
pub const MAX_REQUEST_ID_LEN: usize = 128;
/// The GraphQL-over-HTTP media type; a client that accepts it gets spec status codes.
pub const GRAPHQL_RESPONSE_JSON: &str = "application/graphql-response+json";
const JSON: &str = "application/json";

/// How the server is configured beyond its store: the GraphQL [`graphql::Limits`] and
/// what HTTP itself accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub limits: graphql::Limits,
    /// Largest request body: the JSON a client may make the server buffer and parse.
    pub max_body_bytes: usize,
    /// Header and body read timeouts and the most open connections.
    pub connections: ConnectionLimits,
    /// Whether `GET /` (and `GET /graphql` for a browser) serves the GraphiQL page.
    pub graphiql: bool,
    /// Which browser pages of other origins may call the API.
    pub cors: Cors,
    /// Whether `GET /metrics` serves Prometheus metrics (and the recorder is installed).
    pub metrics: bool,
    /// Subscriptions: buffers, limits, how the change stream is polled.
    pub live: LiveOptions,
}

impl Options {
    /// The defaults, also those of the command line.
    pub const DEFAULT: Options = Options {
        limits: graphql::Limits::DEFAULT,
        max_body_bytes: 1024 * 1024,
        connections: ConnectionLimits::DEFAULT,
        graphiql: true,
        cors: Cors::NONE,
        metrics: true,
        live: LiveOptions::DEFAULT,
    };
}

impl Default for Options {
    fn default() -> Self {
        Options::DEFAULT
    }
}

/// Cross-origin resource sharing: which pages served from other origins a browser lets
/// call the API and read its answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cors {
    pub origins: CorsOrigins,
    /// How long a browser may cache a preflight answer (`Access-Control-Max-Age`);
    /// `None` sends no max age, and browsers use their own default (5 s in Chrome).
    pub max_age: Option<Duration>,
}

impl Cors {
    /// No CORS headers at all: only pages of the server's own origin can read answers.
    pub const NONE: Cors = Cors {
        origins: CorsOrigins::None,
        max_age: None,
    };
}

/// The origins CORS lets in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// None: no CORS headers are sent.
    None,
    /// Any origin (`Access-Control-Allow-Origin: *`). Browsers then never send
    /// credentials (cookies, TLS client certificates); a bearer token a page sets in
    /// `Authorization` itself still works.
    Any,
    /// Exactly these origins (`https://app.example.com`: scheme, host and port as the
    /// browser sends them in `Origin`).
    List(Vec<HeaderValue>),
}

/// What every handler shares. Cloned per request, so it is only an `Arc`.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

#[derive(Clone)]
struct Inner {
    store: Arc<dyn Store>,
    /// Built once: building it walks every type of the schema.
    schema: ItemgraphSchema,
    /// Signs the cursors this server hands out and checks those it gets back.
    cursors: CursorCodec,
    /// The change stream's one reader in this process, and its subscribers.
    hub: Arc<Hub>,
    options: Options,
    /// Checks each GraphQL request's bearer token; `None` is `--auth off`.
    authenticator: Option<Authenticator>,
    /// WebSockets upgraded and not yet through `connection_init`.
    awaiting_init: Arc<live::Awaiting>,
}

impl AppState {
    /// State with the default [`Options`].
    pub fn new(store: Arc<dyn Store>, cursors: CursorCodec) -> Self {
        Self::with_options(store, cursors, Options::default())
    }

    /// State enforcing `options` (the schema is built from its limits). Subscriptions
    /// follow the store's change stream, if it has one.
    pub fn with_options(store: Arc<dyn Store>, cursors: CursorCodec, options: Options) -> Self {
        AppState(Arc::new(Inner {
            hub: Hub::new(store.change_stream(), options.live),
            // Here, so every server (the tests' too) counts and spans its store calls.
            store: Arc::new(MeteredStore::new(store)),
            schema: graphql::schema_with(&options.limits),
            cursors,
            options,
            authenticator: None,
            awaiting_init: Arc::default(),
        }))
    }

    /// The same state requiring a bearer token on every GraphQL request (`None`: auth
    /// off, every caller unrestricted).
    pub fn with_authenticator(self, authenticator: Option<Authenticator>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.authenticator = authenticator;
        AppState(Arc::new(inner))
    }

    /// What the `Authorization` header grants: everything when auth is off.
    fn access(&self, headers: &HeaderMap) -> Result<Access, HttpError> {
        self.header_session(headers).map(|s| s.access)
    }

    /// The session the `Authorization` header opens (see [`AppState::session`]).
    fn header_session(&self, headers: &HeaderMap) -> Result<live::Session, HttpError> {
        self.session(
            headers
                .get(header::AUTHORIZATION)
                .map(HeaderValue::as_bytes),
        )
    }

    pub fn options(&self) -> &Options {
        &self.0.options
    }

    /// The change stream's reader and its subscribers.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.0.hub
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.0.store
    }

    pub fn schema(&self) -> &ItemgraphSchema {
        &self.0.schema
    }
}

/// The router with every route, the body limit, panic recovery, request ids, request
/// tracing and CORS.
pub fn app(state: AppState) -> Router {
    let options = state.options().clone();
    let mut router = Router::new()
        .route("/graphql", get(graphql_get).post(graphql_post))
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
    with_layers(router, &options.cors).with_state(state)
}

/// The layers every route runs under, innermost first:
/// - a panic becomes a 500 `INTERNAL`;
/// - CORS, around it, so even that 500 is readable by an allowed page, and a preflight is
///   answered before any route;
/// - the trace layer's span (method, path, request id) around everything the request
///   does, so its 500 is logged like any response;
/// - the request id, outermost: set before the span is made, echoed on every response,
///   the panic's and the preflight's included.
fn with_layers(router: Router<AppState>, cors: &Cors) -> Router<AppState> {
    let mut router = router.layer(CatchPanicLayer::custom(panic_response));
    if let Some(cors) = cors_layer(cors) {
        router = router.layer(cors);
    }
    let request_id = HeaderName::from_static(REQUEST_ID_HEADER);
    router
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .layer(axum::middleware::map_request(drop_malformed_request_id))
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
        path = request.uri().path(),
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
        .expose_headers([HeaderName::from_static(REQUEST_ID_HEADER)]);
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

/// Liveness: answers as long as the process serves requests; touches no store, so a store
/// outage never gets the process restarted.
async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: 200 when the table exists and accepts requests (DynamoDB status `ACTIVE` or
/// `UPDATING`), 503 otherwise, so a load balancer holds traffic back until then.
async fn readyz(State(state): State<AppState>) -> (StatusCode, String) {
    let store = state.store();
    match store.describe_table().await {
        Ok(Some(table)) if matches!(table.status.as_str(), "ACTIVE" | "UPDATING") => {
            (StatusCode::OK, "ready".into())
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
    }
}

// --- GraphiQL ----------------------------------------------------------------------------

/// The playground page (see [`playground`]): without and with authentication on.
static PLAYGROUND: LazyLock<[String; 2]> =
    LazyLock::new(|| [false, true].map(|auth| playground::page("/graphql", TRACE_HEADER, auth)));

/// The playground page with its Content-Security-Policy.
fn playground_page(state: &AppState) -> Response {
    let auth = state.0.authenticator.is_some();
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(playground::CONTENT_SECURITY_POLICY),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Html(PLAYGROUND[usize::from(auth)].as_str()),
    )
        .into_response()
}

async fn graphiql(State(state): State<AppState>) -> Response {
    playground_page(&state)
}

// --- GraphQL over HTTP -------------------------------------------------------------------

/// `POST /graphql`.
async fn graphql_post(State(state): State<AppState>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let media = Media::negotiate(&headers);
    let stream = live::wants_event_stream(&headers);
    // Authentication first: a caller without a valid token learns nothing, not even
    // whether their request would have parsed, and its body is not read. An event stream
    // is opened for pages of allowed origins only, before its body is read.
    let session = match state
        .header_session(&headers)
        .and_then(|session| check_json_content_type(&headers).map(|()| session))
        .and_then(|session| {
            if stream {
                live::check_origin(&state, &headers, parts.uri.authority().map(|a| a.as_str()))?;
            }
            Ok(session)
        }) {
        Ok(session) => session,
        Err(e) => return e.respond(media),
    };
    let request = read_body(&state, body)
        .await
        .and_then(|body| parse_body(&body));
    if stream {
        let scope = parts.extensions.get::<ConnectionScope>().cloned();
        return live::event_stream(&state, &headers, scope, session, request);
    }
    match request {
        Ok(request) => {
            run(
                &state,
                session.access,
                request,
                wants_trace(&headers),
                media,
            )
            .await
        }
        Err(e) => e.respond(media),
    }
}

/// The whole body, within `--max-body-bytes` and `--body-read-timeout-ms` from now: a
/// deadline for all of it, so a body trickled a byte at a time cannot hold the request.
async fn read_body(state: &AppState, body: Body) -> Result<Bytes, HttpError> {
    let options = state.options();
    let timeout = options.connections.body_read_timeout;
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, options.max_body_bytes)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            Err(if too_large {
                HttpError::PayloadTooLarge
            } else {
                HttpError::BadRequest(format!("the body could not be read: {e}"))
            })
        }
        Err(_) => Err(HttpError::BodyTimeout {
            millis: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }),
    }
}

/// `GET /graphql`: GraphiQL for a browser, otherwise a query from the URL.
async fn graphql_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    scope: Option<axum::Extension<ConnectionScope>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    params: Result<Query<GetParams>, QueryRejection>,
) -> Response {
    let scope = scope.map(|axum::Extension(s)| s);
    let authority = uri.authority().map(|a| a.as_str());
    if let Ok(ws) = upgrade {
        return live::websocket(state, &headers, authority, scope, ws);
    }
    if state.options().graphiql && prefers_html(&headers) {
        return playground_page(&state);
    }
    if live::wants_event_stream(&headers) {
        // The caller and its origin first: nothing of the request is parsed before.
        let media = Media::negotiate(&headers);
        let session = match state
            .header_session(&headers)
            .and_then(|session| live::check_origin(&state, &headers, authority).map(|()| session))
        {
            Ok(session) => session,
            Err(e) => return e.respond(media),
        };
        // GET must not change anything, as an event stream too (an `EventSource` sends
        // GET with this `Accept`).
        let request = params
            .map_err(|e| HttpError::BadRequest(e.body_text()))
            .and_then(|Query(p)| p.into_request())
            .and_then(
                |mut request| match operation_type(&mut request, &state.options().limits) {
                    Some(OperationType::Mutation) => Err(HttpError::MutationOverGet),
                    _ => Ok(request),
                },
            );
        return live::event_stream(&state, &headers, scope, session, request);
    }
    let media = Media::negotiate(&headers);
    let access = match state.access(&headers) {
        Ok(access) => access,
        Err(e) => return e.respond(media),
    };
    let request = params
        .map_err(|e| HttpError::BadRequest(e.body_text()))
        .and_then(|Query(p)| p.into_request())
        .and_then(|mut request| {
            // GET must not change anything (GraphQL over HTTP: 405 for a mutation).
            match operation_type(&mut request, &state.options().limits) {
                Some(OperationType::Mutation) => Err(HttpError::MutationOverGet),
                _ => Ok(request),
            }
        });
    match request {
        Ok(request) => run(&state, access, request, wants_trace(&headers), media).await,
        Err(e) => e.respond(media),
    }
}

/// The body of `POST /graphql`. Unknown members are ignored. `query` may be left out
/// only by an automatic persisted query (`extensions.persistedQuery`) sending its hash.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostBody {
    query: Option<String>,
    operation_name: Option<String>,
    /// Read straight into GraphQL values (`null` is none), not through a JSON tree.
    #[serde(default)]
    variables: Variables,
    extensions: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The member of `extensions` that carries an automatic persisted query's hash.
const PERSISTED_QUERY: &str = "persistedQuery";

fn parse_body(body: &[u8]) -> Result<async_graphql::Request, HttpError> {
    // Batching is not supported: one request is one operation, so each limit (deadline,
    // complexity) bounds one request's work.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(HttpError::BadRequest(
            "batched requests (a JSON array) are not supported: send one operation per request"
                .into(),
        ));
    }
    let body: PostBody = serde_json::from_slice(body).map_err(|e| {
        HttpError::BadRequest(format!("the body is not a GraphQL request object: {e}"))
    })?;
    let persisted = body
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(PERSISTED_QUERY));
    let query = match body.query {
        Some(query) => query,
        None if persisted => String::new(),
        None => {
            return Err(HttpError::BadRequest(
                "the `query` member is missing".into(),
            ))
        }
    };
    let mut request = async_graphql::Request::new(query);
    if let Some(name) = body.operation_name {
        request = request.operation_name(name);
    }
    request = request.variables(body.variables);
    if let Some(pq) = body.extensions.and_then(|mut e| e.remove(PERSISTED_QUERY)) {
        request.extensions.insert(
            PERSISTED_QUERY.to_owned(),
            Value::from_json(pq).unwrap_or_default(),
        );
    }
    Ok(request)
}

/// The URL parameters of `GET /graphql`; `variables` is JSON text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GetParams {
    query: Option<String>,
    operation_name: Option<String>,
    variables: Option<String>,
}

impl GetParams {
    fn into_request(self) -> Result<async_graphql::Request, HttpError> {
        let query = self
            .query
            .ok_or_else(|| HttpError::BadRequest("the `query` parameter is missing".into()))?;
        let mut request = async_graphql::Request::new(query);
        if let Some(name) = self.operation_name.filter(|n| !n.is_empty()) {
            request = request.operation_name(name);
        }
        if let Some(text) = self.variables.filter(|v| !v.trim().is_empty()) {
            let vars = match serde_json::from_str(&text) {
                Ok(serde_json::Value::Null) => serde_json::Map::new(),
                Ok(serde_json::Value::Object(vars)) => vars,
                Ok(_) => {
                    return Err(HttpError::BadRequest(
                        "`variables` must be a JSON object".into(),
                    ))
                }
                Err(e) => {
                    return Err(HttpError::BadRequest(format!(
                        "`variables` is not valid JSON: {e}"
                    )))
                }
            };
            request = request.variables(Variables::from_json(serde_json::Value::Object(vars)));
        }
        Ok(request)
    }
}

/// The type of the operation the request would run; `None` when the document does not
/// parse or names no single operation (execution then reports why).
fn operation_type(
    request: &mut async_graphql::Request,
    limits: &graphql::Limits,
) -> Option<OperationType> {
    // Never parse what the limits refuse: execution then refuses it with their code.
    graphql::limits::check_text(&request.query, limits).ok()?;
    let name = request.operation_name.clone();
    let doc = request.parsed_query().ok()?;
    graphql::selected_operation(doc, name.as_deref()).map(|(_, op)| op.node.ty)
}

/// Runs the request and writes the GraphQL response in the negotiated media type.
async fn run(
    state: &AppState,
    access: Access,
    request: async_graphql::Request,
    trace: bool,
    media: Media,
) -> Response {
    let inner = &state.0;
    let resp = graphql::execute(
        &inner.schema,
        inner.store.clone(),
        inner.cursors.clone(),
        access,
        request,
        trace,
    )
    .await;
    let wire = WireResponse::of(&resp);
    let status = match media {
        Media::GraphqlResponseJson if wire.data.is_none() => StatusCode::BAD_REQUEST,
        Media::GraphqlResponseJson if timed_out(&resp) => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::OK,
    };
    let mut response = match serde_json::to_vec(&wire) {
        Ok(body) => media.response(status, body),
        Err(error) => {
            tracing::error!(%error, "serializing a GraphQL response");
            return HttpError::Internal.respond(media);
        }
    };
    for (name, value) in resp.http_headers.iter() {
        response.headers_mut().append(name.clone(), value.clone());
    }
    response
}

/// A GraphQL response as sent: `data` is left out for a request error, as the GraphQL
/// spec asks (async-graphql's own serializer writes `"data": null`).
#[derive(Serialize)]
struct WireResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "no_errors")]
    errors: &'a [ServerError],
    #[serde(skip_serializing_if = "no_extensions")]
    extensions: &'a BTreeMap<String, Value>,
}

/// Whether the deadline cancelled the request: it was valid and ran, so `data` is there
/// (null).
fn timed_out(resp: &async_graphql::Response) -> bool {
    resp.errors
        .iter()
        .any(|e| e.extensions.as_ref().and_then(|x| x.get("code")) == Some(&Value::from("TIMEOUT")))
}

impl<'a> WireResponse<'a> {
    fn of(resp: &'a async_graphql::Response) -> Self {
        // A request error (the document did not parse or validate, variables did not
        // coerce, a limit refused it) stops before execution: no error has a path, and
        // there is no data at all.
        let request_error = !timed_out(resp)
            && matches!(resp.data, Value::Null)
            && !resp.errors.is_empty()
            && resp.errors.iter().all(|e| e.path.is_empty());
        WireResponse {
            data: (!request_error).then_some(&resp.data),
            errors: &resp.errors,
            extensions: &resp.extensions,
        }
    }
}

fn no_errors(e: &&[ServerError]) -> bool {
    e.is_empty()
}

fn no_extensions(e: &&BTreeMap<String, Value>) -> bool {
    e.is_empty()
}

fn wants_trace(headers: &HeaderMap) -> bool {
    headers
        .get(TRACE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

fn check_json_content_type(headers: &HeaderMap) -> Result<(), HttpError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    match essence.as_deref() {
        Some(JSON) => Ok(()),
        Some(other) => Err(HttpError::BadRequest(format!(
            "Content-Type must be {JSON}, got {other}"
        ))),
        None => Err(HttpError::BadRequest(format!(
            "Content-Type must be {JSON}"
        ))),
    }
}

// --- content negotiation -----------------------------------------------------------------

/// The media type of a GraphQL response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    /// `application/json`: always 200, for clients that predate the GraphQL-over-HTTP spec.
    Json,
    /// `application/graphql-response+json`: 4xx when the request fails before execution.
    GraphqlResponseJson,
}

impl Media {
    /// `application/graphql-response+json` when the client lists it and does not prefer
    /// `application/json` to it; `application/json` otherwise.
    fn negotiate(headers: &HeaderMap) -> Media {
        let accept = accept_header(headers);
        let spec = quality(accept, GRAPHQL_RESPONSE_JSON, true);
        if spec > 0.0 && spec >= quality(accept, JSON, false) {
            Media::GraphqlResponseJson
        } else {
            Media::Json
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Media::Json => "application/json",
            Media::GraphqlResponseJson => "application/graphql-response+json; charset=utf-8",
        }
    }

    fn response(self, status: StatusCode, body: Vec<u8>) -> Response {
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type()),
        );
        response
    }
}

fn accept_header(headers: &HeaderMap) -> &str {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Whether the client (a browser) would rather have HTML than JSON.
fn prefers_html(headers: &HeaderMap) -> bool {
    let accept = accept_header(headers);
    let html = quality(accept, "text/html", false);
    html > 0.0
        && html > quality(accept, JSON, false)
        && html > quality(accept, GRAPHQL_RESPONSE_JSON, false)
}

/// The quality an `Accept` header gives `media`: that of the most specific range that
/// matches it (`type/subtype`, then `type/*`, then `*/*`), 0 when none does. With `exact`,
/// only a range naming `media` itself counts.
fn quality(accept: &str, media: &str, exact: bool) -> f32 {
    let (ty, _) = media.split_once('/').unwrap_or((media, ""));
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let specificity = if name == media {
            2
        } else if exact {
            continue;
        } else if name.strip_suffix("/*") == Some(ty) {
            1
        } else if name == "*/*" {
            0
        } else {
            continue;
        };
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

// --- errors ------------------------------------------------------------------------------

/// Why a request was answered without running GraphQL. Each variant names the status and
/// the `extensions.code` of the GraphQL-shaped body the client gets.
#[derive(Debug, thiserror::Error)]
enum HttpError {
    /// 400 `BAD_REQUEST`: not GraphQL over HTTP (malformed JSON, wrong content type, no
    /// `query`, `variables` not an object).
    #[error("{0}")]
    BadRequest(String),
    /// 413 `BAD_REQUEST`: the body is larger than the server accepts.
    #[error("the request body is too large")]
    PayloadTooLarge,
    /// 405 `BAD_REQUEST`, with `Allow: POST`: a mutation sent with GET.
    #[error("mutations are accepted with POST only")]
    MutationOverGet,
    /// 401 `UNAUTHENTICATED`, with `WWW-Authenticate: Bearer`: auth is on and the request
    /// carries no valid bearer token.
    #[error("{0}")]
    Unauthenticated(AuthError),
    /// 408 `BAD_REQUEST`: the body did not arrive whole within `--body-read-timeout-ms`.
    #[error("the request body did not arrive within {millis} ms")]
    BodyTimeout { millis: u64 },
    /// 403 `FORBIDDEN`: a page of another origin asked for a WebSocket or an event
    /// stream it may not open.
    #[error("{0}")]
    Forbidden(String),
    /// 500 `INTERNAL`: a handler panicked or a response could not be written; logged.
    #[error("internal error")]
    Internal,
}

impl HttpError {
    fn status(&self) -> StatusCode {
        match self {
            HttpError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HttpError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            HttpError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            HttpError::MutationOverGet => StatusCode::METHOD_NOT_ALLOWED,
            HttpError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            HttpError::Forbidden(_) => StatusCode::FORBIDDEN,
            HttpError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            HttpError::Internal => "INTERNAL",
            HttpError::Unauthenticated(_) => AuthError::CODE,
            HttpError::Forbidden(_) => "FORBIDDEN",
            _ => "BAD_REQUEST",
        }
    }

    fn respond(self, media: Media) -> Response {
        tracing::debug!(error = %self, "request refused");
        crate::metrics::record_error(self.code());
        let message = self.to_string();
        let body = ErrorBody {
            errors: [ErrorEntry {
                message: &message,
                extensions: ErrorCode { code: self.code() },
            }],
        };
        let body = serde_json::to_vec(&body).expect("strings serialize");
        let mut response = media.response(self.status(), body);
        match self {
            HttpError::MutationOverGet => {
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST"));
            }
            // RFC 6750: a token was sent but is not good is `invalid_token`.
            HttpError::Unauthenticated(e) => {
                let challenge = match e {
                    AuthError::Missing | AuthError::NotBearer => "Bearer",
                    _ => r#"Bearer error="invalid_token""#,
                };
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            _ => {}
        }
        response
    }
}

/// `{"errors":[{"message":…,"extensions":{"code":…}}]}`, in that key order.
#[derive(Serialize)]
struct ErrorBody<'a> {
    errors: [ErrorEntry<'a>; 1],
}

#[derive(Serialize)]
struct ErrorEntry<'a> {
    message: &'a str,
    extensions: ErrorCode,
}

#[derive(Serialize)]
struct ErrorCode {
    code: &'static str,
}

/// What a panic becomes: the detail goes to the log, the client gets `INTERNAL`.
fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = detail, "a request handler panicked");
    HttpError::Internal.respond(Media::Json)
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::TableSchema;

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
        let store = Arc::new(EmbeddedStore::in_memory("t", TableSchema::itemgraph()).unwrap());
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
        let store = Arc::new(EmbeddedStore::in_memory("t", TableSchema::itemgraph()).unwrap());
        let cors = Cors {
            origins: CorsOrigins::List(vec![HeaderValue::from_static("https://app.example")]),
            max_age: None,
        };
        let router = with_layers(
            Router::new()
                .route("/boom", get(boom))
                .route("/healthz", get(healthz)),
            &cors,
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
}
