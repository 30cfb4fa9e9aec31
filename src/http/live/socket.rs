//! GraphQL over WebSocket: `graphql-transport-ws` and `subscriptions-transport-ws`, the
//! server's own loop (see the parent module for why), its writer and its limits.

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_graphql::http::{ClientMessage, WebSocketProtocols, ALL_WEBSOCKET_PROTOCOLS};
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use futures::stream::{self, BoxStream, SplitSink};
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;
use tokio_stream::StreamMap;

use super::{check_origin, operation, too_many_operations, Session, MAX_ID_BYTES};
use crate::graphql;
use crate::http::{operation_type, AppState, ConnectionScope, HttpError, Lease, LeaseEnd, Media};
use async_graphql::parser::types::OperationType;

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

    /// The close code as a metric's label.
    fn label(self) -> &'static str {
        match self.frame().0 {
            1000 => "1000",
            1001 => "1001",
            1002 => "1002",
            1008 => "1008",
            1009 => "1009",
            1013 => "1013",
            3008 => "3008",
            4400 => "4400",
            4401 => "4401",
            4403 => "4403",
            4408 => "4408",
            4409 => "4409",
            4429 => "4429",
            _ => "other",
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
pub(in crate::http) struct Awaiting {
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
            let now = crate::clock::now_ms() / 1000;
            tokio::time::sleep(Duration::from_secs(exp.saturating_sub(now))).await;
        }
        None => std::future::pending().await,
    }
}

/// Whether a `connection_init` payload asks for the DynamoDB trace on every operation of
/// the socket: `x-itemgraph-trace` as a header would say it (`1`, `true`), beside the
/// `Authorization` value (or in its `headers`).
fn init_trace(payload: &serde_json::Value) -> bool {
    let Some(obj) = payload.as_object() else {
        return false;
    };
    match obj.get(super::super::TRACE_HEADER) {
        Some(serde_json::Value::Bool(on)) => *on,
        Some(serde_json::Value::String(v)) => v == "1" || v.eq_ignore_ascii_case("true"),
        _ => obj.get("headers").is_some_and(init_trace),
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
pub(in crate::http) fn websocket(
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
    // The upgrade request's trace context, for the operations the socket runs.
    let traced = state.telemetry().is_some().then(crate::telemetry::current);
    ws.protocols(ALL_WEBSOCKET_PROTOCOLS)
        .max_message_size(live.max_message_bytes)
        .max_frame_size(live.max_message_bytes)
        .on_upgrade(move |socket| {
            let lease = scope.map(|s| s.adopt());
            let serve = serve_socket(state, socket, protocol, from_header, lease, awaiting);
            match traced {
                Some(cx) => futures::future::Either::Left(crate::telemetry::attach(cx, serve)),
                None => futures::future::Either::Right(serve),
            }
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
                crate::metrics::record_websocket_close(Close::NotReading.label());
                tracing::debug!("closed a WebSocket whose client does not read");
            } else {
                crate::metrics::record_websocket_close("client");
            }
            return;
        }
        end = socket.run(input, &mut lease) => end,
    };
    // The reader has queued its last message: the writer sends what is queued, all of it
    // within one send timeout, or a second when the connection is to close now (evicted,
    // swept, or shutdown's time is up) or its client answers nothing (silent: it does not
    // read either, most likely, and a write blocked on it must not hold the close for a
    // send timeout), and not past a forced close.
    drop(socket);
    let drain = if matches!(end, Some(Close::Evicted | Close::Silent)) {
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
    crate::metrics::record_websocket_close(end.map_or("client", Close::label));
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
                        Some(Ok(Message::Text(t))) => self.message(t.as_bytes(), lease).await,
                        Some(Ok(Message::Binary(b))) => self.message(&b, lease).await,
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
    async fn message(&mut self, bytes: &[u8], lease: &mut Option<Lease>) -> Flow {
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
                match self.state.session(authorization.as_deref()).await {
                    Ok(mut session) => {
                        session.trace = payload.as_ref().is_some_and(init_trace);
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
                let mut payload = payload;
                if self.protocol == WebSocketProtocols::GraphQLWS
                    && operation_type(&mut payload, &self.state.options().limits)
                        == Some(OperationType::Subscription)
                {
                    // graphql-transport-ws: a subscription refused before it runs (its
                    // document does not validate, e.g. two root fields) is answered with
                    // one `error` message, which ends the operation (no `complete`).
                    let schema = self.state.0.schema.clone();
                    if let Some(errors) = graphql::refusal(&schema, &mut payload).await {
                        self.out.text(&serde_json::json!({
                            "type": "error",
                            "id": id,
                            "payload": errors,
                        }));
                        return Flow::Go;
                    }
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
