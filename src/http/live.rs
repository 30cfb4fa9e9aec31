//! Long-lived transports: GraphQL over WebSocket and over Server-Sent Events.
//!
//! - **WebSocket** on `GET /graphql` with an upgrade: the `graphql-transport-ws` protocol
//!   (the `graphql-ws` npm client), and the older `subscriptions-transport-ws` protocol
//!   (sub-protocol `graphql-ws`), through async-graphql's protocol state machine. The
//!   caller is authenticated by the `connection_init` payload (`{"Authorization": "Bearer
//!   …"}`, or `{"token": "…"}`) or, failing that, by the upgrade request's
//!   `Authorization` header; a refusal closes the socket with 4403. The server closes
//!   with 4408 a socket that has not completed `connection_init` within
//!   `LiveOptions::init_timeout`, pings every `LiveOptions::keepalive` (the client
//!   answers with a pong) and closes one silent for three of those; at shutdown it
//!   closes every socket with 1001.
//! - **Server-Sent Events**: `POST /graphql` (or `GET`, the query in the URL) with
//!   `Accept: text/event-stream` runs one operation and streams its results, the
//!   `graphql-sse` protocol's distinct-connections mode: an event `next` per result
//!   (a subscription's events, or a query's one answer), then `complete`. For clients
//!   behind proxies that do not pass WebSockets.
//!
//! A subscription holds one of the process's slots while it runs (`--max-subscriptions`),
//! and at most `LiveOptions::max_per_connection` operations (subscriptions, and queries
//! or mutations in flight) run on one socket; one more is refused with
//! `TOO_MANY_SUBSCRIPTIONS`. Queries and mutations sent over a socket or as
//! an event stream run exactly as over `POST /graphql` (deadline, limits, trace header
//! excepted).

use std::any::TypeId;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_graphql::http::{WebSocketProtocols, WsMessage, ALL_WEBSOCKET_PROTOCOLS};
use async_graphql::parser::types::OperationType;
use async_graphql::Data;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream};
use futures::{SinkExt, StreamExt};

use super::{operation_type, AppState, ConnectionScope, HttpError, Lease, Media, WireResponse};
use crate::auth::Access;
use crate::graphql::errors::ApiError;
use crate::graphql::subscription::TokenExpiry;
use crate::graphql::{self};

/// Who is connected, and until when.
#[derive(Debug, Clone)]
pub(super) struct Session {
    pub(super) access: Access,
    expiry: TokenExpiry,
}

/// The subscriptions open on one socket.
#[derive(Clone, Default)]
struct SocketSubscriptions(Arc<AtomicUsize>);

/// Gives a socket's slot back when its subscription ends.
struct SocketSlot(Arc<AtomicUsize>);

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl AppState {
    /// The session an `Authorization` value opens: unrestricted when auth is off.
    pub(super) fn session(&self, authorization: Option<&[u8]>) -> Result<Session, HttpError> {
        match &self.0.authenticator {
            None => Ok(Session {
                access: Access::Unrestricted,
                expiry: TokenExpiry(None),
            }),
            Some(auth) => auth
                .authenticate_until(authorization)
                .map(|(access, exp)| Session {
                    access,
                    expiry: TokenExpiry(Some(exp)),
                })
                .map_err(HttpError::Unauthenticated),
        }
    }
}

fn error_response(e: ApiError) -> async_graphql::Response {
    async_graphql::Response::from_errors(vec![e.server_error()])
}

/// One operation of a long-lived transport: a subscription's events, or the one answer
/// of a query or mutation. `socket` counts the subscriptions of a WebSocket.
fn operation(
    state: &AppState,
    session: Session,
    mut request: async_graphql::Request,
    socket: Option<&SocketSubscriptions>,
) -> BoxStream<'static, async_graphql::Response> {
    if session.expiry.expired() {
        return stream::once(async {
            error_response(ApiError::Unauthenticated(
                "the token has expired: connect again with a new one".into(),
            ))
        })
        .boxed();
    }
    let inner = state.0.clone();
    // Every operation a socket runs holds one of its slots while it runs, so a client
    // cannot pile up queries or mutations on one socket either.
    let slot = match socket {
        None => None,
        Some(SocketSubscriptions(open)) => {
            let max = inner.options.live.max_per_connection;
            if open.fetch_add(1, Ordering::AcqRel) >= max {
                open.fetch_sub(1, Ordering::AcqRel);
                return stream::once(async move {
                    error_response(ApiError::TooManySubscriptions(format!(
                        "this connection runs {max} operations, its most"
                    )))
                })
                .boxed();
            }
            Some(SocketSlot(open.clone()))
        }
    };
    let kind = operation_type(&mut request, &inner.options.limits);
    if kind != Some(OperationType::Subscription) {
        return stream::once(async move {
            let resp = graphql::execute(
                &inner.schema,
                inner.store.clone(),
                inner.cursors.clone(),
                session.access,
                request,
                false,
            )
            .await;
            drop(slot);
            resp
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
    )
    .map(move |resp| {
        let _held = &slot;
        resp
    })
    .boxed()
}

/// Runs what a socket's protocol asks with the session its `connection_init` opened.
#[derive(Clone)]
struct SocketExecutor {
    state: AppState,
}

fn session_data<T: Clone + Send + Sync + 'static>(data: &Data) -> Option<T> {
    data.get(&TypeId::of::<T>())
        .and_then(|d| d.downcast_ref::<T>())
        .cloned()
}

impl async_graphql::Executor for SocketExecutor {
    async fn execute(&self, _request: async_graphql::Request) -> async_graphql::Response {
        // The socket protocols run every operation through `execute_stream`.
        error_response(ApiError::Internal)
    }

    fn execute_stream(
        &self,
        request: async_graphql::Request,
        session: Option<Arc<Data>>,
    ) -> BoxStream<'static, async_graphql::Response> {
        let data = session.as_deref();
        match data.and_then(session_data::<Session>) {
            Some(s) => operation(
                &self.state,
                s,
                request,
                data.and_then(session_data::<SocketSubscriptions>).as_ref(),
            ),
            None => stream::once(async {
                error_response(ApiError::Unauthenticated("not authenticated".into()))
            })
            .boxed(),
        }
    }
}

/// The `Authorization` value a `connection_init` payload carries, if any.
fn init_authorization(payload: &serde_json::Value) -> Option<String> {
    let obj = payload.as_object()?;
    for key in ["Authorization", "authorization"] {
        if let Some(v) = obj.get(key).and_then(|v| v.as_str()) {
            return Some(v.to_owned());
        }
    }
    for key in ["token", "authToken", "accessToken"] {
        if let Some(v) = obj.get(key).and_then(|v| v.as_str()) {
            return Some(format!("Bearer {v}"));
        }
    }
    // Some clients nest it: `{"headers": {"Authorization": …}}`.
    obj.get("headers").and_then(init_authorization)
}

/// What a refused `connection_init` closes the socket with (graphql-transport-ws: 4403).
const FORBIDDEN_CLOSE: u16 = 4403;
/// graphql-transport-ws: no `connection_init` in time.
const INIT_TIMEOUT_CLOSE: u16 = 4408;
/// The server is going away.
const GOING_AWAY_CLOSE: u16 = 1001;

/// `GET /graphql` with a WebSocket upgrade.
pub(super) fn websocket(
    state: AppState,
    headers: &HeaderMap,
    scope: Option<ConnectionScope>,
    ws: WebSocketUpgrade,
) -> Response {
    let protocol = headers
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.split(',')
                .find_map(|p| p.trim().parse::<WebSocketProtocols>().ok())
        });
    let Some(protocol) = protocol else {
        return HttpError::BadRequest(
            "a GraphQL WebSocket names its protocol in Sec-WebSocket-Protocol: \
             graphql-transport-ws (or the older graphql-ws)"
                .into(),
        )
        .respond(Media::negotiate(headers));
    };
    let from_header = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    let max = state.options().max_body_bytes;
    ws.protocols(ALL_WEBSOCKET_PROTOCOLS)
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| {
            let lease = scope.map(|s| s.adopt());
            serve_socket(state, socket, protocol, from_header, lease)
        })
}

async fn serve_socket(
    state: AppState,
    socket: WebSocket,
    protocol: WebSocketProtocols,
    from_header: Option<Vec<u8>>,
    mut lease: Option<Lease>,
) {
    let live = state.options().live;
    let (mut sink, input) = socket.split();
    let input = input
        .take_while(|m| futures::future::ready(m.is_ok()))
        .filter_map(|m| {
            futures::future::ready(match m {
                Ok(Message::Text(t)) => Some(t.as_bytes().to_vec()),
                Ok(Message::Binary(b)) => Some(b.to_vec()),
                _ => None,
            })
        });
    let auth = state.clone();
    let mut messages = async_graphql::http::WebSocket::new(
        SocketExecutor {
            state: state.clone(),
        },
        input,
        protocol,
    )
    .on_connection_init(move |payload| async move {
        let authorization = init_authorization(&payload)
            .map(String::into_bytes)
            .or(from_header);
        let session = auth
            .session(authorization.as_deref())
            .map_err(|e| async_graphql::Error::new(format!("Forbidden: {e}")))?;
        let mut data = Data::default();
        data.insert(session);
        data.insert(SocketSubscriptions::default());
        Ok(data)
    })
    // A client that has said nothing for three pings is gone (the old protocol has no
    // pongs: its clients are not timed out).
    .keepalive_timeout((protocol == WebSocketProtocols::GraphQLWS).then_some(live.keepalive * 3));
    let init_deadline = tokio::time::sleep(live.init_timeout);
    tokio::pin!(init_deadline);
    let mut ping =
        tokio::time::interval_at(tokio::time::Instant::now() + live.keepalive, live.keepalive);
    let mut acked = false;
    let close = |code: u16, reason: &str| {
        Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_owned().into(),
        }))
    };
    loop {
        let out = tokio::select! {
            msg = messages.next() => match msg {
                Some(WsMessage::Text(text)) => {
                    if !acked && text.contains("\"connection_ack\"") {
                        acked = true;
                    }
                    Message::Text(text.into())
                }
                Some(WsMessage::Close(code, reason)) => {
                    // A refused `connection_init`: graphql-transport-ws says 4403.
                    let code = if !acked && reason.starts_with("Forbidden") { FORBIDDEN_CLOSE } else { code };
                    let _ = sink.send(close(code, &reason)).await;
                    break;
                }
                None => break,
            },
            () = &mut init_deadline, if !acked => {
                let _ = sink.send(close(INIT_TIMEOUT_CLOSE, "Connection initialisation timeout")).await;
                break;
            }
            _ = ping.tick(), if acked => Message::Text(match protocol {
                WebSocketProtocols::GraphQLWS => r#"{"type":"ping"}"#,
                WebSocketProtocols::SubscriptionsTransportWS => r#"{"type":"ka"}"#,
            }.into()),
            () = stopping(&mut lease) => {
                let _ = sink.send(close(GOING_AWAY_CLOSE, "the server is shutting down")).await;
                break;
            }
        };
        if sink.send(out).await.is_err() {
            break;
        }
    }
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

/// The operation `request` asks, streamed as Server-Sent Events (`graphql-sse`,
/// distinct connections): `next` per result, then `complete`.
pub(super) fn event_stream(
    state: &AppState,
    headers: &HeaderMap,
    scope: Option<ConnectionScope>,
    request: Result<async_graphql::Request, HttpError>,
) -> Response {
    let media = Media::negotiate(headers);
    let session = match state.session(
        headers
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes),
    ) {
        Ok(s) => s,
        Err(e) => return e.respond(media),
    };
    let request = match request {
        Ok(r) => r,
        Err(e) => return e.respond(media),
    };
    let mut lease = scope.map(|s| s.busy());
    let mut results = operation(state, session, request, None);
    let events = async_stream::stream! {
        loop {
            let next = tokio::select! {
                next = results.next() => next,
                () = stopping(&mut lease) => None,
            };
            let Some(resp) = next else { break };
            let wire = WireResponse::of(&resp);
            match serde_json::to_string(&wire) {
                Ok(json) => yield Event::default().event("next").data(json),
                Err(error) => {
                    tracing::error!(%error, "serializing a GraphQL response");
                    break;
                }
            }
        }
        yield Event::default().event("complete").data("");
    };
    Sse::new(events.map(Ok::<_, Infallible>))
        .keep_alive(KeepAlive::new().interval(state.options().live.keepalive))
        .into_response()
}
