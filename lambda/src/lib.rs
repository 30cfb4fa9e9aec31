//! itemgraph on AWS Lambda: `serve`'s router, configured from `serve`'s environment
//! variables, answering the HTTP events that `lambda_http` decodes: function URLs and API
//! Gateway HTTP APIs (payload 2.0), API Gateway REST APIs (payload 1.0) and Application
//! Load Balancers. The trace extension, persisted queries, limits, error codes and status
//! codes are `serve`'s, because the router is.
//!
//! Built once per instance, in the init phase ([`router`]): the configuration and its
//! secrets ([`secrets`]), the DynamoDB client, the schema, the document cache, the JWT
//! keys. An invocation then costs only its request.
//!
//! The paths are the server's (`/graphql`, `/healthz`, …) whatever the API Gateway stage:
//! [`handler`] takes the stage's name off the front of the path, where API Gateway or
//! lambda_http put it.
//!
//! What does not fit Lambda is refused with a message that says so:
//! - the embedded engine, at init: its file would be gone between invocations, and each
//!   concurrent instance would have a table of its own;
//! - seeding at start (`ITEMGRAPH_SEED=demo`), at init: `itemgraph seed` seeds a table once;
//! - a process-local cursor key, at init: every instance must sign cursors with the same
//!   `ITEMGRAPH_CURSOR_SECRET`, or a cursor minted by one fails on the next;
//! - a metrics listener (`ITEMGRAPH_METRICS_LISTEN`), at init: there is no listener. The
//!   `/metrics` route is off too (each instance would count its own invocations): Lambda's
//!   own metrics and the logs in CloudWatch stand in for it;
//! - subscriptions, WebSocket upgrades and event streams, per request: 501
//!   `SUBSCRIPTIONS_UNAVAILABLE`, naming the container deployment that serves them.

use std::convert::Infallible;

use anyhow::{ensure, Context};
use axum::http::Uri;
use axum::response::Response;
use clap::Parser;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt as _;
use tower::{Service, ServiceExt as _};

use itemgraph::config::{SeedMode, ServeArgs, StoreKind};
use itemgraph::http::{self, LongLived};

pub mod secrets;

/// What a subscription, a WebSocket or an event stream is answered on Lambda.
pub const LONG_LIVED_REFUSED: &str = "subscriptions need a long-lived connection (WebSocket or \
     Server-Sent Events), which an AWS Lambda function cannot hold: run itemgraph's container \
     image (`itemgraph serve`) for them, as the README's Deployment section shows";

/// The function's configuration: `serve`'s flags, from the same `ITEMGRAPH_*` environment
/// variables (a Lambda function is started with no arguments).
#[derive(Debug, Parser)]
#[command(name = "itemgraph-lambda", version, about)]
pub struct Settings {
    #[command(flatten)]
    pub serve: ServeArgs,
}

impl Settings {
    /// The settings from the environment and the given arguments (the secrets read from
    /// Secrets Manager among them), refused with a clear message when they do not parse.
    pub fn parse(args: impl IntoIterator<Item = std::ffi::OsString>) -> anyhow::Result<Settings> {
        let argv = std::iter::once("itemgraph-lambda".into()).chain(args);
        Settings::try_parse_from(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))
    }
}

/// Longest an invocation waits for its spans to reach the collector before answering.
pub const FLUSH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The router every invocation runs: `serve`'s, with the store opened and the refusals
/// above checked first.
pub async fn router(settings: &Settings) -> anyhow::Result<axum::Router> {
    let args = &settings.serve;
    ensure!(
        args.store.store == StoreKind::DynamoDb,
        "ITEMGRAPH_STORE=embedded: the embedded engine keeps its table in a file of this \
         machine, and a Lambda function's file system is gone between invocations (each \
         concurrent instance would have a table of its own besides): set \
         ITEMGRAPH_STORE=dynamodb and ITEMGRAPH_TABLE"
    );
    ensure!(
        args.seed != Some(SeedMode::Demo),
        "ITEMGRAPH_SEED=demo: a function does not seed its table at every cold start; seed it \
         once with `itemgraph seed --store dynamodb --table {}`",
        args.store.table_name()
    );
    ensure!(
        args.cursor_secret.is_some(),
        "ITEMGRAPH_CURSOR_SECRET (or ITEMGRAPH_CURSOR_SECRET_ARN) is required on Lambda: every \
         instance must sign paging cursors with the same key, or a cursor minted by one \
         instance fails on the next"
    );
    ensure!(
        args.ops.metrics_listen.is_none(),
        "ITEMGRAPH_METRICS_LISTEN: a Lambda function has no listener; its metrics are \
         Lambda's own, in CloudWatch"
    );
    let mut options = args.options()?;
    options.metrics = false;
    options.long_lived = LongLived::Refused(LONG_LIVED_REFUSED);
    let state = args
        .app_state(options)
        .await
        .context("building the function's state")?;
    let telemetry = state.telemetry().cloned();
    let app = http::app(state);
    Ok(match telemetry {
        // The instance is frozen once it has answered: each invocation's spans are
        // exported before its answer leaves (to the collector, usually the ADOT layer's on
        // localhost), as the OpenTelemetry Lambda layers do.
        Some(telemetry) => app.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let telemetry = telemetry.clone();
                async move {
                    let response = next.run(request).await;
                    // Bounded: a collector that does not answer costs an invocation at
                    // most this; what it did not take waits for the next one.
                    let _ = tokio::time::timeout(FLUSH_TIMEOUT, telemetry.flush()).await;
                    response
                }
            },
        )),
        None => app,
    })
}

/// What the runtime calls for each event: the router, behind [`strip_stage`].
pub fn handler(
    router: axum::Router,
) -> impl Service<
    lambda_http::Request,
    Response = Response,
    Error = Infallible,
    Future: Send + 'static,
> + Clone
       + Send
       + 'static {
    router.map_request(strip_stage)
}

/// The request with its API Gateway stage taken off the front of its path: `/prod/graphql`
/// becomes `/graphql`. A REST API's event carries the path without the stage and
/// lambda_http adds it; an HTTP API's named stage is in the path as sent. The `$default`
/// stage, function URLs and load balancers have none.
pub fn strip_stage(mut request: lambda_http::Request) -> lambda_http::Request {
    let stage = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(context)) => context.stage.as_deref(),
        Some(RequestContext::ApiGatewayV2(context)) => context.stage.as_deref(),
        _ => None,
    };
    let Some(stage) = stage.filter(|stage| !stage.is_empty() && *stage != "$default") else {
        return request;
    };
    let uri = request.uri();
    let Some(rest) = uri
        .path()
        .strip_prefix('/')
        .and_then(|path| path.strip_prefix(stage))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    else {
        return request;
    };
    let path = if rest.is_empty() { "/" } else { rest };
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    if let Ok(path_and_query) = path_and_query.parse() {
        parts.path_and_query = Some(path_and_query);
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}
