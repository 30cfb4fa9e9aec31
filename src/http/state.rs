//! What every handler shares: the state ([`AppState`]: schema, store, authenticator, live hub)
//! and the options it was built with.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue};

use crate::auth::{Access, Authenticator};
use crate::graphql::{self, CursorCodec, ItemgraphSchema};
use crate::live::{Hub, LiveOptions};
use crate::store::metered::MeteredStore;
use crate::store::Store;
use crate::telemetry::Telemetry;

use super::errors::HttpError;
use super::{live, ConnectionLimits};

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
    /// Whether this deployment holds long-lived connections (a WebSocket, an event stream)
    /// and so subscriptions. Where it cannot (AWS Lambda answers one request per
    /// invocation and then freezes), every such request is refused before anything runs.
    pub long_lived: LongLived,
    /// With auth off: host names besides IP addresses and `localhost` that `/graphql`
    /// answers on (`--allowed-host`), names the operator's own DNS keeps here.
    pub allowed_hosts: Vec<String>,
}

/// What a deployment does with a WebSocket, an event stream or a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongLived {
    /// Served (`itemgraph serve`).
    Served,
    /// Refused with 501 `SUBSCRIPTIONS_UNAVAILABLE`, with this message: it names the
    /// deployment that serves them.
    Refused(&'static str),
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
        long_lived: LongLived::Served,
        allowed_hosts: Vec::new(),
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
pub struct AppState(pub(super) Arc<Inner>);

#[derive(Clone)]
pub(super) struct Inner {
    pub(super) store: Arc<dyn Store>,
    /// The change stream subscriptions follow: the table's, or each table's of a chart of
    /// several read as one ([`crate::store::merged_stream::MergedStream`]).
    stream: Option<Arc<dyn crate::store::stream::ChangeStream>>,
    /// Built once: building it walks every type of the schema.
    pub(super) schema: ItemgraphSchema,
    /// Signs the cursors this server hands out and checks those it gets back.
    pub(super) cursors: CursorCodec,
    /// The change stream's one reader in this process, and its subscribers.
    pub(super) hub: Arc<Hub>,
    /// Which items the hub's changes are of: the served chart's entities.
    pub(super) design: crate::live::Design,
    pub(super) options: Options,
    /// Checks each GraphQL request's bearer token; `None` is `--auth off`.
    pub(super) authenticator: Option<Authenticator>,
    /// WebSockets upgraded and not yet through `connection_init`.
    pub(super) awaiting_init: Arc<live::Awaiting>,
    /// OpenTelemetry traces, when an OTLP endpoint is configured.
    pub(super) telemetry: Option<Telemetry>,
    /// The playground's pages of a chart other than the built-in one (its own tabs).
    pub(super) playground: Option<Arc<super::PlaygroundPages>>,
}

impl AppState {
    /// State with the default [`Options`].
    pub fn new(store: Arc<dyn Store>, cursors: CursorCodec) -> Self {
        Self::with_options(store, cursors, Options::default())
    }

    /// State enforcing `options` (the schema is built from its limits). Subscriptions
    /// follow the store's change stream, if it has one.
    pub fn with_options(store: Arc<dyn Store>, cursors: CursorCodec, options: Options) -> Self {
        let stream = store.change_stream();
        AppState(Arc::new(Inner {
            hub: Hub::new(stream.clone(), options.live),
            stream,
            design: crate::live::Design::builtin(),
            // Here, so every server (the tests' too) counts and spans its store calls.
            store: Arc::new(MeteredStore::new(store)),
            schema: graphql::schema_with(&options.limits),
            cursors,
            options,
            authenticator: None,
            awaiting_init: Arc::default(),
            telemetry: None,
            playground: None,
        }))
    }

    /// The same state serving `chart`'s API: the built-in chart's is the one it has;
    /// another chart's is built from it now ([`graphql::chart_schema`]), its read API.
    pub fn with_chart(self, chart: Arc<crate::chart::Chart>) -> anyhow::Result<Self> {
        if Arc::ptr_eq(&chart, &crate::chart::builtin()) {
            return Ok(self);
        }
        let mut inner = Arc::unwrap_or_clone(self.0);
        let examples = graphql::examples(&chart);
        let tabs: Vec<&str> = examples.iter().map(String::as_str).collect();
        inner.playground = Some(Arc::new(super::playground_pages(&tabs, &chart)));
        inner.design = crate::live::Design::of(chart.clone());
        inner.stream =
            crate::store::merged_stream::MergedStream::of_chart(inner.store.as_ref(), &chart);
        inner.hub = Hub::for_design(
            inner.stream.clone(),
            inner.hub.relay_log(),
            inner.options.live,
            inner.design.clone(),
        );
        inner.schema = graphql::chart_schema(chart, &inner.options.limits)
            .map_err(|e| anyhow::anyhow!("the chart's schema: {}", e.0))?;
        Ok(AppState(Arc::new(inner)))
    }

    /// The same state requiring a bearer token on every GraphQL request (`None`: auth
    /// off, every caller unrestricted).
    pub fn with_authenticator(self, authenticator: Option<Authenticator>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.authenticator = authenticator;
        AppState(Arc::new(inner))
    }

    /// Subscriptions follow `relay` (the change stream's relay log) instead of reading the
    /// stream in this process; `None` keeps the stream.
    pub fn with_relay(self, relay: Option<crate::live::relay::RelayLog>) -> Self {
        let Some(relay) = relay else {
            return self;
        };
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.hub = Hub::for_design(
            inner.stream.clone(),
            Some(relay),
            inner.options.live,
            inner.design.clone(),
        );
        AppState(Arc::new(inner))
    }

    /// The change stream subscriptions follow (what a relayer reads), if the store has one.
    pub fn change_stream(&self) -> Option<Arc<dyn crate::store::stream::ChangeStream>> {
        self.0.stream.clone()
    }

    /// Which items are the served design's entities (what a relayer relays).
    pub fn design(&self) -> crate::live::Design {
        self.0.design.clone()
    }

    /// The hub's relay log, when it follows one.
    pub fn relay(&self) -> Option<crate::live::relay::RelayLog> {
        self.0.hub.relay_log()
    }

    /// Traces every request to `telemetry`'s collector; `None` traces nothing.
    pub fn with_telemetry(self, telemetry: Option<Telemetry>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.telemetry = telemetry;
        AppState(Arc::new(inner))
    }

    /// The tracer, when requests are traced.
    pub fn telemetry(&self) -> Option<&Telemetry> {
        self.0.telemetry.as_ref()
    }

    /// What the `Authorization` header grants: everything when auth is off.
    pub(super) async fn access(&self, headers: &HeaderMap) -> Result<Access, HttpError> {
        self.header_session(headers).await.map(|s| s.access)
    }

    /// The session the `Authorization` header opens (see [`AppState::session`]).
    pub(super) async fn header_session(
        &self,
        headers: &HeaderMap,
    ) -> Result<live::Session, HttpError> {
        self.session(
            headers
                .get(header::AUTHORIZATION)
                .map(HeaderValue::as_bytes),
        )
        .await
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
