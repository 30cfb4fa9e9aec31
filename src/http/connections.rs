//! The listener: accepts connections under [`ConnectionLimits`] and serves each with
//! hyper-util's HTTP/1.1 and HTTP/2 (prior knowledge) connection builder, until shutdown.
//!
//! What a connection may hold, and for how long:
//! - **Headers.** A client has `header_read_timeout` to send a request's headers: from
//!   the moment its connection is accepted, and again from the end of each response on a
//!   kept-alive connection, so an idle keep-alive connection is closed after it too.
//!   hyper enforces it while reading HTTP/1.1 headers; a sweep here enforces it for every
//!   connection that has no request in flight, whatever its protocol, including one that
//!   never sends a byte.
//! - **Body.** The whole body must arrive within `body_read_timeout` (see the POST
//!   handler); a body trickled byte by byte is cut off there, not kept alive by each byte.
//! - **Count.** At most `max_connections` are open. One more evicts the connection idle
//!   the longest (no request in flight), so clients that send requests are served while
//!   half-open or idle ones are the ones closed; when every connection has a request in
//!   flight, the new one is answered 503 `UNAVAILABLE` and closed.
//!
//! hyper-util's builder has the timeouts but no limit on connections or idleness across
//! protocols, and axum's `serve` exposes neither: hence this loop.
//!
//! Long-lived exchanges take a [`Lease`] from the request's [`ConnectionScope`]: an event
//! stream holds its connection busy while it streams (not idle, so neither swept nor
//! evicted; at most so many on one connection), and a connection upgraded to WebSocket,
//! which hyper hands over once the upgrade is answered, is registered again for its life,
//! so it counts against `max_connections`: idle (evictable) until its `connection_init`
//! is accepted, busy from then on. Both hear when shutdown starts, to end what they
//! stream, and shutdown waits for them up to `shutdown_timeout`, then closes what is
//! left.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tower::ServiceExt;

/// What one connection may hold, and how many may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time to send a request's headers, from accept or from the end of the previous
    /// response (so also how long a connection may idle between requests).
    pub header_read_timeout: Duration,
    /// Time for a request's whole body to arrive, from the handler asking for it.
    pub body_read_timeout: Duration,
    /// Open connections at most; see the module doc for what one more does.
    pub max_connections: usize,
    /// How long shutdown waits for what is in flight before closing what is left.
    pub shutdown_timeout: Duration,
}

impl ConnectionLimits {
    /// The defaults, also those of the command line.
    pub const DEFAULT: ConnectionLimits = ConnectionLimits {
        header_read_timeout: Duration::from_secs(10),
        body_read_timeout: Duration::from_secs(30),
        max_connections: 10_000,
        shutdown_timeout: Duration::from_secs(10),
    };
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits::DEFAULT
    }
}

/// Open files the process keeps for itself (the store's sockets, the redb file, logs)
/// beyond its connections.
const RESERVED_FILES: u64 = 128;

/// Raises the process's open-file soft limit to its hard limit, once, and returns the
/// connections that then fit: `max_connections`, or fewer when the open-file limit is
/// lower (less [`RESERVED_FILES`]). Both are logged.
pub fn fit_to_open_files(max_connections: usize) -> usize {
    let files = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(files) => files,
        Err(error) => {
            tracing::warn!(%error, "cannot read or raise the open-file limit");
            return max_connections;
        }
    };
    let fit = usize::try_from(files.saturating_sub(RESERVED_FILES).max(1)).unwrap_or(usize::MAX);
    let max = max_connections.min(fit);
    tracing::info!(
        open_files = files,
        max_connections = max,
        "open-file limit raised to its hard limit"
    );
    if max < max_connections {
        tracing::warn!(
            asked = max_connections,
            max_connections = max,
            "fewer connections than --max-connections fit under the open-file limit"
        );
    }
    max
}

/// One open connection, as the accept loop and the sweep see it.
struct Tracked {
    /// Requests whose response has not been produced yet.
    in_flight: AtomicUsize,
    /// Milliseconds since the server started at which the connection last became idle.
    idle_since: AtomicU64,
    /// Told to close the connection now (evicted or swept): [`Tracked::close_now`].
    close: Notify,
    /// Set with the notification, so a lease that already took it still sees it.
    closing: std::sync::atomic::AtomicBool,
    /// Event streams open on the connection.
    streams: AtomicUsize,
}

impl Tracked {
    /// Tells the connection's task (or its lease) to close it now.
    fn close_now(&self) {
        self.closing.store(true, Ordering::Release);
        self.close.notify_one();
    }
}

/// The open connections.
struct Registry {
    started: Instant,
    next_id: AtomicU64,
    /// A std Mutex is fine: held only to insert, remove or scan, never across an await.
    open: Mutex<HashMap<u64, Arc<Tracked>>>,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Tracked>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes room for one more connection under `max`: `false` when every open
    /// connection has a request in flight.
    fn make_room(&self, max: usize) -> bool {
        let mut open = self.open();
        if open.len() < max {
            return true;
        }
        let oldest_idle = open
            .iter()
            .filter(|(_, c)| c.in_flight.load(Ordering::Acquire) == 0)
            // Ids grow with accepts: among those idle since the same millisecond, the
            // one accepted first.
            .min_by_key(|(id, c)| (c.idle_since.load(Ordering::Acquire), **id))
            .map(|(id, _)| *id);
        match oldest_idle.and_then(|id| open.remove(&id)) {
            Some(evicted) => {
                evicted.close_now();
                tracing::debug!("connection limit reached: closed the connection idle longest");
                true
            }
            None => false,
        }
    }

    fn insert(&self) -> (u64, Arc<Tracked>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tracked = Arc::new(Tracked {
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.now_ms()),
            close: Notify::new(),
            closing: std::sync::atomic::AtomicBool::new(false),
            streams: AtomicUsize::new(0),
        });
        self.open().insert(id, tracked.clone());
        (id, tracked)
    }

    fn remove(&self, id: u64) {
        self.open().remove(&id);
    }

    /// Closes every connection idle for longer than `limit`.
    fn sweep(&self, limit: Duration) {
        let limit = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        let now = self.now_ms();
        self.open().retain(|_, c| {
            let idle = c.in_flight.load(Ordering::Acquire) == 0
                && now.saturating_sub(c.idle_since.load(Ordering::Acquire)) > limit;
            if idle {
                c.close_now();
            }
            !idle
        });
    }
}

/// Counts a request in flight on its connection while alive.
struct InFlight {
    tracked: Arc<Tracked>,
    registry: Arc<Registry>,
}

impl InFlight {
    fn new(tracked: Arc<Tracked>, registry: Arc<Registry>) -> Self {
        tracked.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight { tracked, registry }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.tracked
            .idle_since
            .store(self.registry.now_ms(), Ordering::Release);
        self.tracked.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a request may hold of its connection beyond its response (a request extension;
/// absent when the router is called without this listener, as tests do).
#[derive(Clone)]
pub struct ConnectionScope {
    tracked: Arc<Tracked>,
    registry: Arc<Registry>,
    stop: watch::Receiver<bool>,
    done: watch::Receiver<()>,
}

/// A connection held for a long-lived exchange; released when dropped.
pub struct Lease {
    /// Busy (not evictable, not swept) while set.
    in_flight: Option<InFlight>,
    tracked: Arc<Tracked>,
    registry: Arc<Registry>,
    stop: watch::Receiver<bool>,
    _done: watch::Receiver<()>,
    /// The registry entry of an upgraded connection, removed with the lease.
    adopted: Option<u64>,
    /// An event stream counted on its connection while it lives.
    _stream: Option<StreamSlot>,
}

/// Why a leased connection is to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseEnd {
    /// The server is shutting down.
    Stopping,
    /// Evicted or swept while idle, or shutdown's time ran out.
    Closed,
}

/// One event stream of a connection (HTTP/2 carries many on one).
struct StreamSlot(Arc<Tracked>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Closes one connection from anywhere (a stalled writer), as eviction does.
#[derive(Clone)]
pub struct Closer(Arc<Tracked>);

impl Closer {
    pub fn close(&self) {
        self.0.close_now();
    }
}

impl ConnectionScope {
    /// Holds the request's connection busy (an event stream in its response body), as
    /// one of at most `max_streams` event streams open on it; `None` past that.
    pub fn stream(&self, max_streams: usize) -> Option<Lease> {
        let taken = self
            .tracked
            .streams
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max_streams).then_some(n + 1)
            });
        taken.ok()?;
        Some(Lease {
            in_flight: Some(InFlight::new(self.tracked.clone(), self.registry.clone())),
            tracked: self.tracked.clone(),
            registry: self.registry.clone(),
            stop: self.stop.clone(),
            _done: self.done.clone(),
            adopted: None,
            _stream: Some(StreamSlot(self.tracked.clone())),
        })
    }

    /// Registers the connection again once upgraded (hyper no longer serves it), idle
    /// (evictable, swept past the header timeout) until [`Lease::set_busy`].
    pub fn adopt(&self) -> Lease {
        let (id, tracked) = self.registry.insert();
        Lease {
            in_flight: None,
            tracked,
            registry: self.registry.clone(),
            stop: self.stop.clone(),
            _done: self.done.clone(),
            adopted: Some(id),
            _stream: None,
        }
    }
}

impl Lease {
    /// Completes once the server starts shutting down.
    pub async fn stopping(&mut self) {
        if self.stop.wait_for(|stop| *stop).await.is_err() {
            // The listener is gone: the server has stopped.
        }
    }

    /// Completes when the connection is to close now: evicted or swept while idle, or
    /// still open when shutdown's time ran out.
    pub async fn closed(&self) {
        if self.tracked.closing.load(Ordering::Acquire) {
            return;
        }
        self.tracked.close.notified().await;
    }

    /// Completes with why the connection is to end: shutdown started, or it is to close
    /// now ([`closed`](Self::closed)).
    pub async fn ended(&mut self) -> LeaseEnd {
        if self.tracked.closing.load(Ordering::Acquire) {
            return LeaseEnd::Closed;
        }
        tokio::select! {
            () = self.tracked.close.notified() => LeaseEnd::Closed,
            stop = self.stop.wait_for(|stop| *stop) => {
                // An error: the listener is gone, so the server has stopped too.
                let _ = stop;
                LeaseEnd::Stopping
            }
        }
    }

    /// Counts the connection busy from now on (a WebSocket whose `connection_init` was
    /// accepted): neither evicted nor swept.
    pub fn set_busy(&mut self) {
        if self.in_flight.is_none() {
            self.in_flight = Some(InFlight::new(self.tracked.clone(), self.registry.clone()));
        }
    }

    /// What closes this lease's connection from elsewhere.
    pub fn closer(&self) -> Closer {
        Closer(self.tracked.clone())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(id) = self.adopted {
            self.registry.remove(id);
        }
    }
}

/// The answer to a connection over the limit while every open one is busy.
const REFUSAL: &str = "{\"errors\":[{\"message\":\"the server is at its connection limit; try again\",\"extensions\":{\"code\":\"UNAVAILABLE\"}}]}";

async fn refuse(mut stream: TcpStream) {
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\nretry-after: 1\r\n\r\n{REFUSAL}",
        REFUSAL.len()
    );
    crate::metrics::record_error("UNAVAILABLE");
    // Bounded: a client that does not read its refusal is not waited for.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// Serves `app` on `listener` under `limits` until `shutdown` completes, then lets
/// in-flight requests finish before returning.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let registry = Arc::new(Registry {
        started: Instant::now(),
        next_id: AtomicU64::new(0),
        open: Mutex::default(),
    });
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);

    // Told once, when shutdown starts; every connection task holds a receiver of `done`,
    // so `done_tx.closed()` completes when the last one has finished.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());

    let sweep = {
        let registry = registry.clone();
        let every = (limits.header_read_timeout / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                registry.sweep(limits.header_read_timeout);
            }
        })
    };

    let mut shutdown = pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors: close the connection idle longest to get
                    // one back. Anything else (a connection reset before it was accepted)
                    // concerns that connection only.
                    if matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                        let open = registry.open().len();
                        if open == 0 || !registry.make_room(open) {
                            tracing::warn!(%error, "accept failed and no idle connection can be closed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if !registry.make_room(limits.max_connections) {
            tokio::spawn(refuse(stream));
            continue;
        }
        let (id, tracked) = registry.insert();
        let service = {
            let scope = ConnectionScope {
                tracked: tracked.clone(),
                registry: registry.clone(),
                stop: stop_rx.clone(),
                done: done_rx.clone(),
            };
            let app = app.clone();
            TowerToHyperService::new(tower::service_fn(move |request: Request<Incoming>| {
                let in_flight = InFlight::new(scope.tracked.clone(), scope.registry.clone());
                let app = app.clone();
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(scope.clone());
                async move {
                    let response = app.oneshot(request).await;
                    drop(in_flight);
                    response
                }
            }))
        };
        let (builder, registry) = (builder.clone(), registry.clone());
        let (mut stop, done) = (stop_rx.clone(), done_rx.clone());
        tokio::spawn(async move {
            let mut conn =
                pin!(builder.serve_connection_with_upgrades(TokioIo::new(stream), service));
            let mut closing = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(error) = result {
                            tracing::trace!(%error, "connection ended with an error");
                        }
                        break;
                    }
                    () = tracked.close.notified() => break,
                    changed = stop.changed(), if !closing => {
                        closing = true;
                        // Nothing in flight (idle, or headers still coming): nothing to
                        // finish, so close now; else finish what is in flight first.
                        if tracked.in_flight.load(Ordering::Acquire) == 0 {
                            break;
                        }
                        if changed.is_ok() {
                            conn.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
            registry.remove(id);
            drop(done);
        });
    }
    drop(listener);
    sweep.abort();
    let _ = stop_tx.send(true);
    drop(done_rx);
    if tokio::time::timeout(limits.shutdown_timeout, done_tx.closed())
        .await
        .is_err()
    {
        // Time is up: close what is left (a client that does not read, a request past
        // its deadline), and give the tasks a moment to let go.
        let left = {
            let open = registry.open();
            for c in open.values() {
                c.close_now();
            }
            open.len()
        };
        tracing::warn!(
            connections = left,
            timeout = ?limits.shutdown_timeout,
            "shutdown timed out: closing the connections still open"
        );
        let _ = tokio::time::timeout(Duration::from_secs(1), done_tx.closed()).await;
    }
    Ok(())
}
