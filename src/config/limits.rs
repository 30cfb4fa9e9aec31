//! What one request may cost ([`LimitArgs`]), and how the server is run in production:
//! metrics and browser access ([`OpsArgs`]).

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::{at_least_one, duration_within, parse_origin, Switch};
use crate::graphql::Limits;
use crate::http;

/// What one request may cost, and what the server exposes. See [`Limits`].
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Deepest field nesting a query may have (`{ a { b } }` is 2); deeper is refused with
    /// `QUERY_TOO_DEEP` before any read. GraphiQL's introspection query needs 13.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_DEPTH",
        default_value_t = Limits::DEFAULT.max_depth,
        value_parser = at_least_one()
    )]
    pub max_depth: usize,
    /// Most tokens (names, numbers, strings, punctuators) a document's text may hold; more
    /// is refused with `TOO_MANY_TOKENS` before it is parsed.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_TOKENS",
        default_value_t = Limits::DEFAULT.max_tokens,
        value_parser = at_least_one()
    )]
    pub max_tokens: usize,
    /// Deepest nesting of anything the server walks: `{`, `[`, `(` in the text (values,
    /// input objects, selections), and selection sets through fragment spreads; deeper is
    /// refused with `NESTING_TOO_DEEP` before it is walked.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_NESTING",
        default_value_t = Limits::DEFAULT.max_nesting,
        value_parser = at_least_one()
    )]
    pub max_nesting: usize,
    /// Most fields a document may select once its fragments are expanded where they are
    /// spread; more is refused with `TOO_MANY_FIELDS` before validation.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_FIELDS",
        default_value_t = Limits::DEFAULT.max_fields,
        value_parser = at_least_one()
    )]
    pub max_fields: usize,
    /// Most aliased fields a document may hold (0: none); more is refused with
    /// `TOO_MANY_ALIASES` before any read.
    #[arg(long, env = "ITEMGRAPH_MAX_ALIASES", default_value_t = Limits::DEFAULT.max_aliases)]
    pub max_aliases: usize,
    /// Highest cost a query may have: every field 1, a connection its page size (`first`
    /// or `last`, else 20) times what each node selects; more is refused with
    /// `QUERY_TOO_COMPLEX` before any read.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_COMPLEXITY",
        default_value_t = Limits::DEFAULT.max_complexity,
        value_parser = at_least_one()
    )]
    pub max_complexity: usize,
    /// Largest request body in bytes; a larger one is refused with 413 `BAD_REQUEST`.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_BODY_BYTES",
        default_value_t = http::Options::DEFAULT.max_body_bytes,
        value_parser = at_least_one()
    )]
    pub max_body_bytes: usize,
    /// Time a client has to send a request's headers, in milliseconds: from the moment
    /// its connection is accepted, and from the end of each response on a kept-alive
    /// connection (so also how long a connection may sit idle). Past it the connection is
    /// closed.
    /// From 1 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_HEADER_READ_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = http::ConnectionLimits::DEFAULT.header_read_timeout.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub header_read_timeout_ms: u64,
    /// Time a request's whole body has to arrive, in milliseconds; past it the request is
    /// answered 408 `BAD_REQUEST`, however steadily the bytes trickle in.
    /// From 1 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_BODY_READ_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = http::ConnectionLimits::DEFAULT.body_read_timeout.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub body_read_timeout_ms: u64,
    /// Most open connections. One more closes the connection idle the longest; when every
    /// connection has a request in flight, the new one is answered 503 `UNAVAILABLE`. At
    /// startup the open-file soft limit is raised to the hard limit, and this is lowered
    /// to fit under it (both logged).
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_CONNECTIONS",
        default_value_t = http::ConnectionLimits::DEFAULT.max_connections,
        value_parser = at_least_one()
    )]
    pub max_connections: usize,
    /// How long a stop (SIGTERM, Ctrl-C) waits for what is in flight: requests finish,
    /// WebSockets are closed with 1001 and event streams ended at once; whatever is still
    /// open after this is closed and the process exits. `10s`, `500ms`, `1m`; a bare
    /// number is seconds.
    /// From 0s to 15m.
    #[arg(
        long,
        env = "ITEMGRAPH_SHUTDOWN_TIMEOUT",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = duration_within(Duration::ZERO, Duration::from_secs(900))
    )]
    pub shutdown_timeout: Duration,
    /// Deadline of one request in milliseconds: past it the request is cancelled, its
    /// outstanding store calls with it, and answered with `TIMEOUT`.
    /// From 1 to 900000 (15 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_REQUEST_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = Limits::DEFAULT.request_timeout.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=900_000)
    )]
    pub request_timeout_ms: u64,
    /// Whether `__schema` and `__type` answer; GraphiQL needs them.
    #[arg(long, env = "ITEMGRAPH_INTROSPECTION", value_enum, default_value_t = Switch::On)]
    pub introspection: Switch,
    /// Whether GraphiQL is served at `/` (and at `/graphql` to a browser).
    #[arg(long, env = "ITEMGRAPH_GRAPHIQL", value_enum, default_value_t = Switch::On)]
    pub graphiql: Switch,
    /// Queries the automatic persisted query cache holds (LRU, per process); 0 turns
    /// automatic persisted queries off.
    #[arg(
        long,
        env = "ITEMGRAPH_PERSISTED_QUERIES",
        value_name = "ENTRIES",
        default_value_t = Limits::DEFAULT.persisted_queries
    )]
    pub persisted_queries: usize,
}

impl LimitArgs {
    /// The server's options, as `http::AppState` takes them.
    pub fn options(&self) -> http::Options {
        http::Options {
            limits: Limits {
                max_depth: self.max_depth,
                max_tokens: self.max_tokens,
                max_nesting: self.max_nesting,
                max_fields: self.max_fields,
                max_aliases: self.max_aliases,
                max_complexity: self.max_complexity,
                request_timeout: Duration::from_millis(self.request_timeout_ms),
                introspection: self.introspection == Switch::On,
                persisted_queries: self.persisted_queries,
            },
            max_body_bytes: self.max_body_bytes,
            connections: http::ConnectionLimits {
                header_read_timeout: Duration::from_millis(self.header_read_timeout_ms),
                body_read_timeout: Duration::from_millis(self.body_read_timeout_ms),
                max_connections: self.max_connections,
                shutdown_timeout: self.shutdown_timeout,
            },
            graphiql: self.graphiql == Switch::On,
            ..http::Options::DEFAULT
        }
    }
}

/// How the server is run in production: metrics and browser access.
#[derive(Debug, Clone, Args)]
pub struct OpsArgs {
    /// An origin whose pages may call the API from a browser (CORS), e.g.
    /// `https://app.example.com`; repeat the flag or separate origins with commas. `*`
    /// lets every site's pages in, and browsers then send no credentials (cookies) with
    /// their requests. Without it: no CORS headers at all, same-origin pages only.
    #[arg(
        long = "cors-origin",
        env = "ITEMGRAPH_CORS_ORIGIN",
        value_name = "ORIGIN",
        value_delimiter = ',',
        value_parser = parse_origin
    )]
    pub cors_origins: Vec<axum::http::HeaderValue>,
    /// With auth off: a host name (as a `Host` header has it, without the port) that
    /// `/graphql` also answers on, one whose DNS the operator controls (a private name
    /// behind a gateway that authenticates). Repeatable, or comma-separated. Without it an
    /// auth-off server answers `/graphql` only on an IP address or `localhost`: a page of
    /// any other name could have pointed it at this machine (DNS rebinding).
    #[arg(
        long = "allowed-host",
        env = "ITEMGRAPH_ALLOWED_HOST",
        value_name = "NAME",
        value_delimiter = ',',
        value_parser = parse_host_name
    )]
    pub allowed_hosts: Vec<String>,
    /// How long a browser may cache a CORS preflight answer, in seconds (browsers cap
    /// it: Chrome at 7200). Without it the browser's default applies.
    #[arg(long, env = "ITEMGRAPH_CORS_MAX_AGE", value_name = "SECONDS")]
    pub cors_max_age: Option<u64>,
    /// Whether `GET /metrics` serves Prometheus metrics.
    #[arg(long, env = "ITEMGRAPH_METRICS", value_enum, default_value_t = Switch::On)]
    pub metrics: Switch,
    /// Serve `GET /metrics` on this address instead of `--listen` (e.g. `0.0.0.0:9090`),
    /// so the public listener has no metrics route and the scraper reaches a port the
    /// load balancer never exposes.
    #[arg(long, env = "ITEMGRAPH_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
}

impl OpsArgs {
    /// The CORS policy; `*` may not be mixed with named origins.
    pub fn cors(&self) -> anyhow::Result<http::Cors> {
        let any = self.cors_origins.iter().any(|o| o == "*");
        let origins = match (any, self.cors_origins.len()) {
            (_, 0) => http::CorsOrigins::None,
            (true, 1) => http::CorsOrigins::Any,
            (true, _) => anyhow::bail!("--cors-origin '*' allows every origin: name no other"),
            (false, _) => http::CorsOrigins::List(self.cors_origins.clone()),
        };
        Ok(http::Cors {
            origins,
            max_age: self.cors_max_age.map(Duration::from_secs),
        })
    }
}

/// A host name of `--allowed-host`: letters, digits, `-` and `.`, no port.
fn parse_host_name(s: &str) -> Result<String, String> {
    let name = s.trim().to_ascii_lowercase();
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if ok {
        Ok(name)
    } else {
        Err(format!(
            "`{}` is not a host name: write it as in the URL, without scheme or port, e.g. \
             itemgraph.internal",
            s.escape_debug()
        ))
    }
}
