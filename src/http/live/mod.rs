//! Long-lived transports: GraphQL over WebSocket and over Server-Sent Events.
//!
//! - **WebSocket** on `GET /graphql` with an upgrade: the `graphql-transport-ws` protocol
//!   (the `graphql-ws` npm client), and the older `subscriptions-transport-ws` protocol
//!   (sub-protocol `graphql-ws`). The caller is authenticated by the `connection_init`
//!   payload (`{"Authorization": "Bearer …"}`, or `{"token": "…"}`) or, failing that, by
//!   the upgrade request's `Authorization` header; a refusal closes the socket with 4403.
//!   The server closes with 4408 a socket that has not completed `connection_init` within
//!   `LiveOptions::init_timeout`; until then the socket is idle for the connection limit
//!   (the first closed when it is reached) and at most `max_awaiting_init` such sockets
//!   are open (one more closes the one waiting longest, 1013). A socket whose token
//!   expires is closed with 4403. Every `keepalive` it sends a WebSocket ping frame and the protocol's own
//!   keep-alive (`ping`, or `ka` for the old protocol), and closes with 3008 a socket
//!   that sent nothing, not even a pong frame, for three of those: both protocols alike.
//! - **Server-Sent Events**: `POST /graphql` (or `GET`, the query in the URL) with
//!   `Accept: text/event-stream` runs one operation and streams its results, the
//!   `graphql-sse` protocol's distinct-connections mode: an event `next` per result
//!   (a subscription's events, or a query's one answer), then `complete`. For clients
//!   behind proxies that do not pass WebSockets.
//!
//! What a client can hold:
//! - **Writes** wait for the client at most `send_timeout` each: a client that does not
//!   read is disconnected, and never holds shutdown (which closes sockets with 1001). A
//!   socket's queue of messages for its client holds at most `send_queue_bytes`: at it,
//!   the server stops reading the socket and running its operations until the client
//!   reads. An event stream's events wait in a queue of [`SSE_QUEUE`].
//! - **Operations**: a subscription holds one of the process's slots and one of its
//!   organization's while it runs (`--max-subscriptions`, `--max-subscriptions-per-org`);
//!   a subscription operation selects exactly one root field (the spec's "single root
//!   field" rule, checked with the document); at most `max_per_connection` operations
//!   (subscriptions, and queries or mutations in flight) run on one socket, and as many
//!   event streams on one HTTP connection; one more is refused with
//!   `TOO_MANY_SUBSCRIPTIONS`.
//! - **Messages**: at most `max_message_bytes` each (1009 past it); a subscription id of
//!   at most [`MAX_ID_BYTES`] (4400), one id per running operation (4409).
//! - **Origins**: a browser page of another origin may open a socket or an event stream
//!   only when `--cors-origin` lets it in, and never while auth is off (CORS does not
//!   apply to WebSockets, so without this any page could use a local server); with auth
//!   off, a page of the server's own origin only on an IP address or `localhost` (a name
//!   could be rebound by DNS to this machine).
//! - Close frames carry a code and a fixed short reason, never what the client sent.
//!
//! Queries and mutations sent over a socket or as an event stream run exactly as over
//! `POST /graphql` (deadline, limits, trace header excepted).
//!
//! async-graphql's own WebSocket state machine (`async_graphql::http::WebSocket`) is not
//! used: it keeps any client-chosen id for the life of an operation, lets a reused id
//! replace a running one, puts parse errors (client input) in close reasons, and reads
//! the socket and polls every operation whatever is queued for the client. The messages
//! are still read with its `ClientMessage` type.
//!
//! The files: [`socket`] (WebSocket, both protocols), [`events`] (Server-Sent Events),
//! [`origin`] (which pages may open either); here, what both run: the session, one
//! operation.

mod events;
mod origin;
mod socket;

pub(in crate::http) use events::event_stream;
pub(in crate::http) use origin::{check_origin, refuse_rebound_host};
pub(in crate::http) use socket::{websocket, Awaiting};

use axum::http::{header, HeaderMap};
use futures::stream::{self, BoxStream};
use futures::StreamExt;

use crate::auth::Access;
use crate::graphql::ApiError;
use crate::graphql::TokenExpiry;
use crate::graphql::{self};
use crate::http::{operation_type, AppState, HttpError, Lease};

/// Longest subscription id a client may choose: it is kept while the operation runs and
/// echoed in each of its messages.
pub const MAX_ID_BYTES: usize = 128;
/// Events of one event stream waiting for the client to read.
pub const SSE_QUEUE: usize = 16;

/// Who is connected, and until when.
#[derive(Debug, Clone)]
pub(super) struct Session {
    pub(super) access: Access,
    expiry: TokenExpiry,
    /// The DynamoDB trace asked for (`x-itemgraph-trace`): on each answer, and on each
    /// event of a subscription.
    pub(super) trace: bool,
}

impl AppState {
    /// The session an `Authorization` value opens: unrestricted when auth is off.
    pub(super) async fn session(&self, authorization: Option<&[u8]>) -> Result<Session, HttpError> {
        match &self.0.authenticator {
            None => Ok(Session {
                access: Access::Unrestricted,
                expiry: TokenExpiry(None),
                trace: false,
            }),
            Some(auth) => auth
                .verify_until(authorization)
                .await
                .map(|(access, exp)| Session {
                    access,
                    expiry: TokenExpiry(Some(exp)),
                    trace: false,
                })
                .map_err(HttpError::Unauthenticated),
        }
    }
}

fn error_response(e: ApiError) -> async_graphql::Response {
    async_graphql::Response::from_errors(vec![e.server_error()])
}

/// One operation of a long-lived transport: a subscription's events, or the one answer
/// of a query or mutation.
fn operation(
    state: &AppState,
    session: Session,
    request: async_graphql::Request,
) -> BoxStream<'static, async_graphql::Response> {
    if session.expiry.expired() {
        return stream::once(async {
            error_response(ApiError::Unauthenticated(
                "the token has expired: connect again with a new one".into(),
            ))
        })
        .boxed();
    }
    // The request's trace context (its server span), carried into the task that polls
    // the operation (an event stream's producer, a WebSocket's).
    let traced = state.telemetry().is_some().then(crate::telemetry::current);
    let results = run_operation(state, session, request);
    match traced {
        Some(cx) => crate::telemetry::attach(cx, results).boxed(),
        None => results,
    }
}

fn run_operation(
    state: &AppState,
    session: Session,
    mut request: async_graphql::Request,
) -> BoxStream<'static, async_graphql::Response> {
    let inner = state.0.clone();
    let kind = operation_type(&mut request, &inner.options.limits);
    if kind != Some(async_graphql::parser::types::OperationType::Subscription) {
        return stream::once(async move {
            graphql::execute(
                &inner.schema,
                inner.store.clone(),
                inner.cursors.clone(),
                session.access,
                request,
                session.trace,
            )
            .await
        })
        .boxed();
    }
    graphql::subscribe(
        &inner.schema,
        inner.store.clone(),
        inner.cursors.clone(),
        inner.hub.clone(),
        session.access,
        session.expiry,
        request,
        session.trace,
    )
    .boxed()
}

fn too_many_operations(max: usize) -> async_graphql::Response {
    error_response(ApiError::TooManySubscriptions(format!(
        "this connection runs {max} operations, its most"
    )))
}

/// Completes when the server starts shutting down (never without a lease: tests that
/// call the router without the listener).
async fn stopping(lease: &mut Option<Lease>) {
    match lease {
        Some(lease) => lease.stopping().await,
        None => std::future::pending().await,
    }
}

/// Whether a client asks for an event stream (`Accept: text/event-stream`).
pub(super) fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|m| {
            m.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}
