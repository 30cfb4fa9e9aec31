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

use std::convert::Infallible;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_graphql::http::{ClientMessage, WebSocketProtocols, ALL_WEBSOCKET_PROTOCOLS};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream, SplitSink};
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;
use tokio_stream::StreamMap;
use tracing::Instrument;

use super::{
    operation_type, AppState, ConnectionScope, CorsOrigins, HttpError, Lease, LeaseEnd, Media,
    WireResponse,
};
use crate::auth::Access;
use crate::graphql::errors::ApiError;
use crate::graphql::subscription::TokenExpiry;
use crate::graphql::{self};

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
/// of a query or mutation.
fn operation(
    state: &AppState,
    session: Session,
    mut request: async_graphql::Request,
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
    let kind = operation_type(&mut request, &inner.options.limits);
    if kind != Some(async_graphql::parser::types::OperationType::Subscription) {
        return stream::once(async move {
            graphql::execute(
                &inner.schema,
                inner.store.clone(),
                inner.cursors.clone(),
                session.access,
                request,
                false,
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
    )
    .boxed()
}

fn too_many_operations(max: usize) -> async_graphql::Response {
    error_response(ApiError::TooManySubscriptions(format!(
        "this connection runs {max} operations, its most"
    )))
}

// --- origins -------------------------------------------------------------------------------

/// Whether a browser page may open a socket or an event stream here: no `Origin` (not a
/// browser), the server's own origin (the playground), or one `--cors-origin` lets in;
/// while auth is off, no other origin at all (any page could use the server as its
/// visitor's, whatever CORS says: it does not apply to WebSockets).
pub(super) fn check_origin(
    state: &AppState,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), HttpError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(authority);
    let auth_off = state.0.authenticator.is_none();
    if same_origin(origin, host) {
        // With auth off, a page on a name DNS rebinding can point here would be "same
        // origin": only hosts that cannot be rebound (an IP address, `localhost`) count.
        if !auth_off || host.is_some_and(unrebindable) {
            return Ok(());
        }
    }
    let refused = |why: &str| {
        crate::metrics::record_error("FORBIDDEN");
        Err(HttpError::Forbidden(format!(
            "pages of another origin may not open a WebSocket or an event stream here: {why}"
        )))
    };
    if auth_off {
        return refused("auth is off");
    }
    match &state.options().cors.origins {
        CorsOrigins::Any => Ok(()),
        CorsOrigins::List(list) if list.iter().any(|o| o == origin) => Ok(()),
        _ => refused("the origin is not one --cors-origin names"),
    }
}

/// Whether a `Host` names this machine in a way no DNS answer can change: an IP address
/// or `localhost` (and its subdomains, which resolvers keep on loopback).
fn unrebindable(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => {
            return v6
                .split(']')
                .next()
                .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok())
        }
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
}

/// Whether `origin` (`scheme://host[:port]`) names the host the request was sent to.
fn same_origin(origin: &HeaderValue, host: Option<&str>) -> bool {
    let (Ok(origin), Some(host)) = (origin.to_str(), host) else {
        return false;
    };
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => return false,
    };
    let bare = |a: &str| {
        let a = a.to_ascii_lowercase();
        a.strip_suffix(default_port).map(str::to_owned).unwrap_or(a)
    };
    bare(authority) == bare(host)
}

// --- WebSocket -----------------------------------------------------------------------------

/// Why the server closes a socket: a code and a short fixed reason each (a close frame
/// holds at most 125 bytes, and never echoes what the client sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    Normal,
    GoingAway,
    ProtocolError,
    NotReading,
    MessageTooBig,
    Evicted,
    Silent,
    InvalidMessage,
    IdTooLong,
    Unauthorized,
    Forbidden,
    InitTimeout,
    DuplicateId,
    TooManyInits,
    Bumped,
    Expired,
}

impl Close {
    fn frame(self) -> (u16, &'static str) {
        match self {
            Close::Normal => (1000, "normal closure"),
            Close::GoingAway => (1001, "the server is shutting down"),
            Close::ProtocolError => (1002, "protocol error"),
            Close::NotReading => (1008, "the client does not read its messages"),
            Close::MessageTooBig => (1009, "message too big"),
            Close::Evicted => (1013, "the server is at its connection limit; try again"),
            Close::Silent => (3008, "no answer to pings"),
            Close::InvalidMessage => (4400, "invalid message"),
            Close::IdTooLong => (4400, "subscription id longer than 128 bytes"),
            Close::Unauthorized => (4401, "Unauthorized"),
            Close::Forbidden => (4403, "Forbidden"),
            Close::InitTimeout => (4408, "Connection initialisation timeout"),
            Close::DuplicateId => (4409, "an operation with this id is running"),
            Close::TooManyInits => (4429, "Too many initialisation requests"),
            Close::Bumped => (1013, "too many sockets awaiting connection_init; try again"),
            Close::Expired => (4403, "the token has expired"),
        }
    }

    fn message(self) -> Message {
        let (code, reason) = self.frame();
        Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        }))
    }
}

/// The sockets upgraded and not yet through `connection_init`, oldest first.
#[derive(Default)]
pub(super) struct Awaiting {
    next: std::sync::atomic::AtomicU64,
    open: std::sync::Mutex<std::collections::BTreeMap<u64, Arc<Notify>>>,
}

/// One socket awaiting `connection_init`; leaves the list when dropped. `bumped` is told
/// when newer sockets pushed it out.
pub(super) struct AwaitingInit {
    id: u64,
    list: Arc<Awaiting>,
    bumped: Arc<Notify>,
}

impl Awaiting {
    fn open(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<u64, Arc<Notify>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for one more socket; at `max`, the one waiting longest is told to close
    /// (a client that opens sockets and never initialises them pushes out only its own
    /// kind: a real client sends `connection_init` as soon as the socket opens).
    fn take(self: &Arc<Self>, max: usize) -> AwaitingInit {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let bumped = Arc::new(Notify::new());
        let mut open = self.open();
        while open.len() >= max.max(1) {
            match open.pop_first() {
                Some((_, oldest)) => oldest.notify_one(),
                None => break,
            }
        }
        open.insert(id, bumped.clone());
        AwaitingInit {
            id,
            list: self.clone(),
            bumped,
        }
    }
}

impl Drop for AwaitingInit {
    fn drop(&mut self) {
        self.list.open().remove(&self.id);
    }
}

/// Completes when `bumped` is told (never without one).
async fn notified(bumped: Option<Arc<Notify>>) {
    match bumped {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

/// Completes when a token expiring at `exp` (seconds since the Unix epoch) has expired
/// (never without one).
async fn until_expired(exp: Option<u64>) {
    match exp {
        Some(exp) => {
            let now = crate::model::now_ms() / 1000;
            tokio::time::sleep(Duration::from_secs(exp.saturating_sub(now))).await;
        }
        None => std::future::pending().await,
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

/// `GET /graphql` with a WebSocket upgrade.
pub(super) fn websocket(
    state: AppState,
    headers: &HeaderMap,
    authority: Option<&str>,
    scope: Option<ConnectionScope>,
    ws: WebSocketUpgrade,
) -> Response {
    let media = Media::negotiate(headers);
    if let Err(e) = check_origin(&state, headers, authority) {
        return e.respond(media);
    }
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
        .respond(media);
    };
    let live = state.options().live;
    let awaiting = state.0.awaiting_init.take(live.max_awaiting_init);
    let from_header = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    ws.protocols(ALL_WEBSOCKET_PROTOCOLS)
        .max_message_size(live.max_message_bytes)
        .max_frame_size(live.max_message_bytes)
        .on_upgrade(move |socket| {
            let lease = scope.map(|s| s.adopt());
            serve_socket(state, socket, protocol, from_header, lease, awaiting)
        })
}

/// Bytes queued for a socket's client, and word when some were sent.
struct Queue {
    bytes: AtomicUsize,
    sent: Notify,
}

/// The messages a socket sends its client, in order, through its writer.
struct Outbox {
    tx: mpsc::UnboundedSender<Message>,
    queue: Arc<Queue>,
    limit: usize,
}

/// What a queued message is counted as: its bytes and what queueing it costs beside them
/// (its place in the channel, its allocation).
fn message_len(m: &Message) -> usize {
    const OVERHEAD: usize = 64;
    OVERHEAD
        + match m {
            Message::Text(t) => t.len(),
            Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b.len(),
            Message::Close(_) => 2 + 125,
        }
}

impl Outbox {
    fn push(&self, m: Message) {
        self.queue
            .bytes
            .fetch_add(message_len(&m), Ordering::AcqRel);
        // A send fails only once the writer has ended, and then the socket with it.
        let _ = self.tx.send(m);
    }

    fn text(&self, value: &impl Serialize) {
        match serde_json::to_string(value) {
            Ok(text) => self.push(Message::Text(text.into())),
            Err(error) => tracing::error!(%error, "serializing a WebSocket message"),
        }
    }

    /// Whether more may be queued: the client has read enough of what was.
    fn has_room(&self) -> bool {
        self.queue.bytes.load(Ordering::Acquire) < self.limit
    }
}

/// How a socket's writer ended.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Everything queued was sent (a close frame last, or the reader is gone).
    All,
    /// The socket failed (the client went away).
    Broken,
    /// A write waited `send_timeout` for the client to read.
    Stalled,
}

/// Sends what is queued, each message within `timeout`.
async fn write_queued(
    mut sink: SplitSink<WebSocket, Message>,
    mut rx: mpsc::UnboundedReceiver<Message>,
    queue: Arc<Queue>,
    timeout: Duration,
) -> Written {
    while let Some(m) = rx.recv().await {
        let len = message_len(&m);
        let closing = matches!(m, Message::Close(_));
        match tokio::time::timeout(timeout, sink.send(m)).await {
            Ok(Ok(())) => {
                queue.bytes.fetch_sub(len, Ordering::AcqRel);
                queue.sent.notify_one();
            }
            Ok(Err(_)) => return Written::Broken,
            Err(_) => {
                // Said, in case the client reads after all; not waited for long.
                let _ = tokio::time::timeout(
                    Duration::from_secs(1),
                    sink.send(Close::NotReading.message()),
                )
                .await;
                return Written::Stalled;
            }
        }
        if closing {
            return Written::All;
        }
    }
    // The reader is gone: flush what tungstenite owes the client (its answer to a close
    // frame the client sent) and close, not waited for long.
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
    Written::All
}

/// Why the lease's connection is to end (never without a lease).
async fn ended(lease: &mut Option<Lease>) -> LeaseEnd {
    match lease {
        Some(lease) => lease.ended().await,
        None => std::future::pending().await,
    }
}

/// Completes when the lease's connection is to close now (never without a lease).
async fn closed(lease: &Option<Lease>) {
    match lease {
        Some(lease) => lease.closed().await,
        None => std::future::pending().await,
    }
}

async fn serve_socket(
    state: AppState,
    socket: WebSocket,
    protocol: WebSocketProtocols,
    from_header: Option<Vec<u8>>,
    mut lease: Option<Lease>,
    awaiting: AwaitingInit,
) {
    let live = state.options().live;
    let (sink, input) = socket.split();
    let queue = Arc::new(Queue {
        bytes: AtomicUsize::new(0),
        sent: Notify::new(),
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let mut writer = pin!(write_queued(sink, rx, queue.clone(), live.send_timeout));
    let mut socket = Socket {
        state,
        protocol,
        from_header,
        awaiting: Some(awaiting),
        session: None,
        ops: StreamMap::new(),
        out: Outbox {
            tx,
            queue,
            limit: live.send_queue_bytes,
        },
    };
    let end = tokio::select! {
        written = &mut writer => {
            if written == Written::Stalled {
                crate::metrics::record_error("CLIENT_NOT_READING");
                tracing::debug!("closed a WebSocket whose client does not read");
            }
            return;
        }
        end = socket.run(input, &mut lease) => end,
    };
    // The reader has queued its last message: the writer sends what is queued, all of it
    // within one send timeout, or a second when the connection is to close now (evicted,
    // swept, or shutdown's time is up), and not past a forced close.
    drop(socket);
    let drain = if end == Some(Close::Evicted) {
        Duration::from_secs(1)
    } else {
        live.send_timeout
    };
    let forced = async {
        if end == Some(Close::Evicted) {
            // That was the forced close: the second above is its bound.
            std::future::pending().await
        } else {
            closed(&lease).await
        }
    };
    tokio::select! {
        _ = &mut writer => {}
        () = forced => {}
        () = tokio::time::sleep(drain) => {}
    }
}

/// One socket's protocol: its session once `connection_init` is accepted, its running
/// operations by id, and what it sends.
struct Socket {
    state: AppState,
    protocol: WebSocketProtocols,
    from_header: Option<Vec<u8>>,
    /// Held until `connection_init` is accepted.
    awaiting: Option<AwaitingInit>,
    session: Option<Session>,
    /// Each operation's results, then `None` once it has ended.
    ops: StreamMap<String, BoxStream<'static, Option<async_graphql::Response>>>,
    out: Outbox,
}

/// Whether a socket goes on after a message.
#[derive(PartialEq, Eq)]
enum Flow {
    Go,
    /// Closed by the server for this reason (queued).
    Stop(Option<Close>),
}

#[derive(Serialize)]
struct Typed<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<&'a async_graphql::Response>,
}

impl Typed<'static> {
    fn bare(ty: &'static str) -> Self {
        Typed {
            ty,
            id: None,
            payload: None,
        }
    }
}

impl Socket {
    fn live(&self) -> crate::live::LiveOptions {
        self.state.options().live
    }

    fn close(&self, why: Close) -> Option<Close> {
        self.out.push(why.message());
        Some(why)
    }

    /// Reads and answers the socket until it is to close; what it queued last closes it.
    /// Why the server closed it (`None`: the client did).
    async fn run(
        &mut self,
        mut input: futures::stream::SplitStream<WebSocket>,
        lease: &mut Option<Lease>,
    ) -> Option<Close> {
        let live = self.live();
        let init_deadline = tokio::time::sleep(live.init_timeout);
        tokio::pin!(init_deadline);
        let mut ping = tokio::time::interval_at(Instant::now() + live.keepalive, live.keepalive);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut heard = Instant::now();
        loop {
            let room = self.out.has_room();
            let queue = self.out.queue.clone();
            let bumped = self.awaiting.as_ref().map(|a| a.bumped.clone());
            let expires = self.session.as_ref().and_then(|s| s.expiry.0);
            tokio::select! {
                end = ended(lease) => return self.close(match end {
                    LeaseEnd::Stopping => Close::GoingAway,
                    LeaseEnd::Closed => Close::Evicted,
                }),
                () = &mut init_deadline, if self.session.is_none() => {
                    return self.close(Close::InitTimeout);
                }
                () = notified(bumped) => return self.close(Close::Bumped),
                () = until_expired(expires) => return self.close(Close::Expired),
                // The client reads: heard from, although its socket is not read meanwhile.
                () = queue.sent.notified(), if !room => heard = Instant::now(),
                _ = ping.tick(), if self.session.is_some() => {
                    if heard.elapsed() >= live.keepalive * 3 {
                        return self.close(Close::Silent);
                    }
                    self.out.push(Message::Ping(Default::default()));
                    self.out.push(Message::Text(match self.protocol {
                        WebSocketProtocols::GraphQLWS => r#"{"type":"ping"}"#,
                        WebSocketProtocols::SubscriptionsTransportWS => r#"{"type":"ka"}"#,
                    }.into()));
                }
                frame = input.next(), if room => {
                    heard = Instant::now();
                    let flow = match frame {
                        None => return None,
                        Some(Err(e)) => {
                            return self.close(if too_big(e) { Close::MessageTooBig } else { Close::ProtocolError });
                        }
                        Some(Ok(Message::Text(t))) => self.message(t.as_bytes(), lease),
                        Some(Ok(Message::Binary(b))) => self.message(&b, lease),
                        // tungstenite queues its answer; the writer flushes it at the end.
                        Some(Ok(Message::Close(_))) => return None,
                        Some(Ok(Message::Ping(_) | Message::Pong(_))) => Flow::Go,
                    };
                    if let Flow::Stop(why) = flow {
                        return why;
                    }
                }
                Some((id, result)) = self.ops.next(), if room => match result {
                    Some(resp) => self.out.text(&Typed {
                        ty: match self.protocol {
                            WebSocketProtocols::GraphQLWS => "next",
                            WebSocketProtocols::SubscriptionsTransportWS => "data",
                        },
                        id: Some(&id),
                        payload: Some(&resp),
                    }),
                    None => {
                        self.ops.remove(&id);
                        self.complete(&id);
                    }
                },
            }
        }
    }

    fn complete(&self, id: &str) {
        self.out.text(&Typed {
            ty: "complete",
            id: Some(id),
            payload: None,
        });
    }

    /// Answers one message of the client's.
    fn message(&mut self, bytes: &[u8], lease: &mut Option<Lease>) -> Flow {
        let Ok(message) = serde_json::from_slice::<ClientMessage>(bytes) else {
            return Flow::Stop(self.close(Close::InvalidMessage));
        };
        match message {
            ClientMessage::ConnectionInit { payload } => {
                if self.awaiting.is_none() {
                    return Flow::Stop(self.close(Close::TooManyInits));
                }
                let authorization = payload
                    .as_ref()
                    .and_then(init_authorization)
                    .map(String::into_bytes)
                    .or_else(|| self.from_header.clone());
                match self.state.session(authorization.as_deref()) {
                    Ok(session) => {
                        self.session = Some(session);
                        self.awaiting = None;
                        if let Some(lease) = lease {
                            lease.set_busy();
                        }
                        self.out.text(&Typed::bare("connection_ack"));
                        Flow::Go
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "a WebSocket's connection_init was refused");
                        if self.protocol == WebSocketProtocols::SubscriptionsTransportWS {
                            self.out.text(&serde_json::json!({
                                "type": "connection_error",
                                "payload": { "message": "Forbidden" },
                            }));
                        }
                        Flow::Stop(self.close(Close::Forbidden))
                    }
                }
            }
            ClientMessage::Start { id, payload } => {
                let Some(session) = self.session.clone() else {
                    return Flow::Stop(self.close(Close::Unauthorized));
                };
                if id.len() > MAX_ID_BYTES {
                    return Flow::Stop(self.close(Close::IdTooLong));
                }
                if self.ops.contains_key(&id) {
                    return Flow::Stop(self.close(Close::DuplicateId));
                }
                let max = self.live().max_per_connection;
                if self.ops.len() >= max {
                    let refused = too_many_operations(max);
                    self.out.text(&Typed {
                        ty: match self.protocol {
                            WebSocketProtocols::GraphQLWS => "next",
                            WebSocketProtocols::SubscriptionsTransportWS => "data",
                        },
                        id: Some(&id),
                        payload: Some(&refused),
                    });
                    self.complete(&id);
                    return Flow::Go;
                }
                let results = operation(&self.state, session, payload)
                    .map(Some)
                    .chain(stream::once(async { None }));
                self.ops.insert(id, results.boxed());
                Flow::Go
            }
            ClientMessage::Stop { id } => {
                if self.ops.remove(&id).is_some() {
                    self.complete(&id);
                }
                Flow::Go
            }
            ClientMessage::ConnectionTerminate => Flow::Stop(self.close(Close::Normal)),
            ClientMessage::Ping { .. } => {
                self.out.text(&Typed::bare("pong"));
                Flow::Go
            }
            ClientMessage::Pong { .. } => Flow::Go,
        }
    }
}

/// Whether a read failed on a message over the size limit.
fn too_big(e: axum::Error) -> bool {
    matches!(
        e.into_inner().downcast_ref::<tungstenite::Error>(),
        Some(tungstenite::Error::Capacity(_))
    )
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

/// What an event stream's operation hands its body.
enum Frame {
    Event(Event),
    /// The operation ended: `complete` follows.
    End,
}

/// When an event stream last moved (the body took a frame, or a frame was queued for an
/// idle body), and whether its body has finished.
struct Progress {
    base: Instant,
    at_ms: std::sync::atomic::AtomicU64,
    done: std::sync::atomic::AtomicBool,
}

impl Progress {
    fn new() -> Self {
        Progress {
            base: Instant::now(),
            at_ms: Default::default(),
            done: Default::default(),
        }
    }

    fn moved(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.at_ms.store(ms, Ordering::Release);
    }

    fn finish(&self) {
        self.done.store(true, Ordering::Release);
    }

    fn still_for(&self, d: Duration) -> bool {
        let at = Duration::from_millis(self.at_ms.load(Ordering::Acquire));
        self.base.elapsed().saturating_sub(at) >= d
    }
}

/// Runs an event stream's operation into `tx`, and closes the connection when the body
/// leaves frames untaken (or `complete` unsent) for `send_timeout`.
async fn produce(
    results: BoxStream<'static, async_graphql::Response>,
    tx: mpsc::Sender<Frame>,
    progress: Arc<Progress>,
    closer: Option<super::connections::Closer>,
    send_timeout: Duration,
) {
    let stalled = || {
        crate::metrics::record_error("CLIENT_NOT_READING");
        tracing::debug!("closed an event stream whose client does not read");
        if let Some(closer) = &closer {
            closer.close();
        }
    };
    let mut results = Some(results);
    let mut watch = tokio::time::interval((send_timeout / 4).max(Duration::from_millis(10)));
    watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let next = async {
            match results.as_mut() {
                Some(r) => r.next().await,
                None => std::future::pending().await,
            }
        };
        let frame = tokio::select! {
            next = next => match next {
                Some(resp) => match serde_json::to_string(&WireResponse::of(&resp)) {
                    Ok(json) => Frame::Event(Event::default().event("next").data(json)),
                    Err(error) => {
                        tracing::error!(%error, "serializing a GraphQL response");
                        Frame::End
                    }
                },
                None => Frame::End,
            },
            // The body is gone: the client left, or the server is stopping.
            () = tx.closed() => return,
            _ = watch.tick() => {
                let waiting = tx.capacity() < tx.max_capacity()
                    || (results.is_none() && !progress.done.load(Ordering::Acquire));
                if waiting && progress.still_for(send_timeout) {
                    return stalled();
                }
                continue;
            }
        };
        if matches!(frame, Frame::End) {
            results = None;
        }
        if tx.capacity() == tx.max_capacity() {
            // The body had taken everything: the wait for this frame starts now.
            progress.moved();
        }
        match tokio::time::timeout(send_timeout, tx.send(frame)).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => return stalled(),
        }
    }
}

/// The operation `request` asks, streamed as Server-Sent Events (`graphql-sse`,
/// distinct connections): `next` per result, then `complete`. The caller was
/// authenticated (`session`) and its origin checked before `request` was read.
pub(super) fn event_stream(
    state: &AppState,
    headers: &HeaderMap,
    scope: Option<ConnectionScope>,
    session: Session,
    request: Result<async_graphql::Request, HttpError>,
) -> Response {
    let media = Media::negotiate(headers);
    let request = match request {
        Ok(r) => r,
        Err(e) => return e.respond(media),
    };
    let live = state.options().live;
    // One event stream of at most so many on its connection (HTTP/2 multiplexes them).
    let (mut lease, results) = match scope {
        None => (None, operation(state, session, request)),
        Some(scope) => match scope.stream(live.max_per_connection) {
            Some(lease) => (Some(lease), operation(state, session, request)),
            None => (
                None,
                stream::once(async move { too_many_operations(live.max_per_connection) }).boxed(),
            ),
        },
    };
    // The operation runs on a task of its own, which also watches the body: a client
    // that does not read (its events wait a send timeout for the body to take them, over
    // HTTP/1.1 or an HTTP/2 stream without flow-control window) is disconnected whatever
    // the body's writer is waiting for.
    let (tx, mut rx) = mpsc::channel::<Frame>(SSE_QUEUE);
    let progress = Arc::new(Progress::new());
    let closer = lease.as_ref().map(Lease::closer);
    tokio::spawn(
        produce(results, tx, progress.clone(), closer, live.send_timeout)
            .instrument(tracing::Span::current()),
    );
    let events = async_stream::stream! {
        loop {
            let next = tokio::select! {
                next = rx.recv() => next,
                () = stopping(&mut lease) => None,
            };
            progress.moved();
            match next {
                Some(Frame::Event(event)) => yield event,
                Some(Frame::End) | None => break,
            }
        }
        yield Event::default().event("complete").data("");
        // Polled again once the client took `complete`: the stream is done.
        progress.finish();
    };
    Sse::new(events.map(Ok::<_, Infallible>))
        .keep_alive(KeepAlive::new().interval(live.keepalive))
        .into_response()
}
