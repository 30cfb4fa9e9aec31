//! GraphQL over Server-Sent Events (`graphql-sse`, distinct connections): the
//! operation on a task of its own, which also watches that the client takes its events.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, BoxStream};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::Instrument;

use super::{operation, stopping, too_many_operations, Session, SSE_QUEUE};

use crate::http::{AppState, ConnectionScope, HttpError, Lease, Media, WireResponse};

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
    closer: Option<crate::http::connections::Closer>,
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
pub(in crate::http) fn event_stream(
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
