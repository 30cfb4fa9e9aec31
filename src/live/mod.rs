//! Live updates: the table's change stream, read once per process and fanned out to every
//! subscription.
//!
//! The source is the stream ([`crate::store::stream`]), not the mutation resolvers: a
//! change made by anything that writes the table in its design (another replica, a batch
//! job, the console, the AWS SDK) reaches subscribers. Each record is read with the
//! design ([`Design`]: the built-in entities, or a chart's): items that are no entity of
//! it, or whose keys do not match what they hold, are skipped.
//!
//! - [`Hub`]: one per process. Its reader ([`reader`]) starts with the first subscription,
//!   follows every open shard from the moment it starts (children after their parents),
//!   and publishes each change on a bounded broadcast channel, with the stream position
//!   just after it ([`Position`]).
//! - [`Hub::subscribe`]: one subscription's changes. Started from an event cursor, it first
//!   reads the stream itself from that position up to where the hub's reader is, then goes
//!   on with the hub's changes, skipping those it already gave: no duplicate, no gap, as
//!   long as the stream still holds the position (24 hours on DynamoDB Streams, the
//!   embedded engine's log capacity); past that, [`LiveError::Expired`].
//! - A subscriber that falls more than the channel's capacity behind is ended with
//!   [`LiveError::TooSlow`]: it never blocks the reader or the others, and never makes
//!   the process buffer more.

mod change;
mod follow;
pub mod lease;
pub mod position;
mod reader;
pub mod relay;
pub mod relayer;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use tokio::sync::{broadcast, OnceCell};

pub use change::{Change, Design};
use follow::{Recent, Resume, HISTORY_REPLAYS, RELAY_BEGIN_WAIT};
pub use position::{relay_id_cmp, Pos, Position};
use relay::{Entry, RelayLog, Relayed};

use crate::chart::kinds::Tenant;
use crate::store::stream::{seq_cmp, ChangeKind, ChangeStream, StreamError};

/// How live updates are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveOptions {
    /// Changes a subscriber may fall behind by before it is ended with `TOO_SLOW`.
    pub buffer: usize,
    /// How often the reader asks DynamoDB Streams for new records when the last call
    /// brought none (the embedded engine wakes at each write instead).
    pub poll: Duration,
    /// Subscriptions open at once in this process; one more is refused.
    pub max_subscriptions: usize,
    /// Subscriptions open at once on one WebSocket connection.
    pub max_per_connection: usize,
    /// Subscriptions open at once for one organization in this process (with auth off,
    /// for one `org` argument); one more is refused with `TOO_MANY_SUBSCRIPTIONS`.
    pub max_per_org: usize,
    /// Most stream records a resumed subscription reads to catch up; further behind,
    /// it is told to refetch (`EVENTS_EXPIRED`).
    pub max_replay: usize,
    /// Resumed subscriptions of one organization replaying at once in this process; one
    /// more is refused with `TOO_MANY_REPLAYS` (retryable), so one tenant's reconnect
    /// storm cannot take the process from the others.
    pub max_replays_per_org: usize,
    /// With a relay: how many of its latest entries the hub keeps in memory, so resumes
    /// from a recent position read nothing (about 1 KB each).
    pub relay_memory: usize,
    /// How long a WebSocket has to complete `connection_init` before it is closed.
    pub init_timeout: Duration,
    /// How often an idle WebSocket is pinged (and an event stream sent a comment), so
    /// proxies keep it open and a dead client is noticed.
    pub keepalive: Duration,
    /// Longest a write to a WebSocket or an event stream may wait for the client to read;
    /// past it the client is taken not to read and its connection is closed.
    pub send_timeout: Duration,
    /// Bytes of messages a WebSocket may have queued for its client; at it, the server
    /// stops reading the socket and running its operations until the client reads.
    pub send_queue_bytes: usize,
    /// Largest WebSocket message (a `subscribe` with its document and variables); a larger
    /// one closes the socket with 1009.
    pub max_message_bytes: usize,
    /// WebSockets upgraded and waiting for an accepted `connection_init`; one more closes
    /// the one waiting longest (1013).
    pub max_awaiting_init: usize,
}

impl LiveOptions {
    pub const DEFAULT: LiveOptions = LiveOptions {
        buffer: 1024,
        poll: Duration::from_millis(500),
        max_subscriptions: 10_000,
        max_per_connection: 100,
        max_replay: 100_000,
        max_replays_per_org: 8,
        relay_memory: 10_000,
        max_per_org: 2_500,
        init_timeout: Duration::from_secs(3),
        keepalive: Duration::from_secs(15),
        send_timeout: Duration::from_secs(10),
        send_queue_bytes: 1024 * 1024,
        max_message_bytes: 64 * 1024,
        max_awaiting_init: 1_000,
    };
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions::DEFAULT
    }
}

/// What happened to an entity, as subscribers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Created,
    Updated,
    Deleted,
}

impl From<ChangeKind> for EventKind {
    fn from(k: ChangeKind) -> Self {
        match k {
            ChangeKind::Insert => EventKind::Created,
            ChangeKind::Modify => EventKind::Updated,
            ChangeKind::Remove => EventKind::Deleted,
        }
    }
}

/// Why a subscription's changes stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The position to resume from is no longer in the stream (or too far behind to
    /// catch up): refetch, then subscribe without `after`.
    #[error("{0}")]
    Expired(String),
    /// The subscriber fell too far behind the others.
    #[error("the subscriber fell more than {0} changes behind")]
    TooSlow(usize),
    /// The table has no change stream to follow.
    #[error("{0}")]
    Unavailable(String),
    /// Too many subscriptions are open.
    #[error("{0}")]
    TooMany(String),
    /// Too many resumed subscriptions of the organization are replaying.
    #[error("{0}")]
    ReplaysBusy(String),
}

/// What the hub's channel carries.
#[derive(Debug, Clone)]
enum Signal {
    /// A change, and the position just after it.
    Change(Arc<Change>, Arc<Position>),
    /// The reader lost records (it fell behind the stream's retention): every
    /// subscriber may have missed changes.
    Lost(String),
    /// A relay entry this server cannot read: lost to the subscribers of `org` (to every
    /// subscriber when `None`).
    Unreadable { org: Option<String>, why: String },
}

/// Why subscribers are told a relay entry was skipped.
const UNREADABLE: &str = "the server cannot read a change the relay holds (a later version \
    of the server wrote it): refetch, then subscribe again";

/// Whether an entry of organization `of` concerns a subscription of `org` (`None`: of
/// every organization; an entry of no known organization concerns everyone).
fn concerns(of: Option<&str>, org: Option<&Tenant>) -> bool {
    match (of, org) {
        (Some(of), Some(org)) => org.as_str() == of,
        _ => true,
    }
}

impl Signal {
    /// Why this ends a subscription of `org`, if it does.
    fn ends(&self, org: Option<&Tenant>) -> Option<&str> {
        match self {
            Signal::Change(..) => None,
            Signal::Lost(why) => Some(why.as_str()),
            Signal::Unreadable { org: of, why } => {
                concerns(of.as_deref(), org).then_some(why.as_str())
            }
        }
    }
}

/// One change delivered to a subscription, with the position to resume after it.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub change: Arc<Change>,
    pub position: Arc<Position>,
}

/// The process's one reader of the change stream (or follower of the relay log), and
/// its subscribers.
pub struct Hub {
    stream: Option<Arc<dyn ChangeStream>>,
    /// Which items are entities, and of which tenant.
    design: Design,
    /// With a relay, the hub follows its log instead of reading the stream, and resumes
    /// are served from the log's history.
    relay: Option<RelayLog>,
    options: LiveOptions,
    sender: broadcast::Sender<Signal>,
    /// The reader's position: what it has published so far. Locked while publishing, so
    /// a subscriber that takes it together with its receiver gets exactly what follows.
    position: Mutex<Position>,
    /// Set once the reader has listed the shards and taken its iterators.
    started: OnceCell<()>,
    open: AtomicUsize,
    /// Subscriptions open per organization (entries at zero are removed).
    per_org: Mutex<HashMap<Tenant, usize>>,
    /// Resumed subscriptions replaying per organization (entries at zero are removed).
    replaying: Mutex<HashMap<Tenant, usize>>,
    /// What the hub last received from the relay.
    followed: Mutex<Followed>,
    /// The relay entries this hub received last, so a resume from a recent position (a
    /// reconnect storm after a deploy) is served from memory: no read of the relay, no
    /// decoding. Locked inside `position`.
    recent: Mutex<Recent>,
    /// The last sequence of each shard published from the relay (locked inside
    /// `position`): a log that Redis restored behind this hub holds again, under new ids,
    /// changes it published, and they are dropped.
    relayed: Mutex<HashMap<String, String>>,
    /// Replays from the relay's history (read and decoded) running at once in this
    /// process, over every organization: their decoding is the CPU a reconnect storm costs.
    history_replays: Arc<tokio::sync::Semaphore>,
}

/// What a hub has received from the relay, for `/readyz`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followed {
    /// Entries received since the process started.
    pub entries: u64,
    /// The last entry's id.
    pub last: Option<String>,
    /// How long after its change was made the last entry arrived (ms).
    pub lag_ms: u64,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("stream", &self.stream.as_ref().map(|s| s.engine_name()))
            .field("subscriptions", &self.open.load(Ordering::Relaxed))
            .finish()
    }
}

/// Holds one of the process's subscription slots, and one of its organization's, while
/// the subscription lives.
pub struct Slot {
    hub: Arc<Hub>,
    org: Tenant,
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut per_org = self.hub.per_org();
            if let Some(n) = per_org.get_mut(&self.org) {
                *n -= 1;
                if *n == 0 {
                    per_org.remove(&self.org);
                }
            }
        }
        self.hub.open.fetch_sub(1, Ordering::Relaxed);
        crate::metrics::record_subscriptions(self.hub.open.load(Ordering::Relaxed));
    }
}

/// One of an organization's replay slots, held while a resumed subscription catches up.
pub struct ReplaySlot {
    hub: Arc<Hub>,
    org: Tenant,
}

impl Drop for ReplaySlot {
    fn drop(&mut self) {
        let mut replaying = self.hub.replaying.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = replaying.get_mut(&self.org) {
            *n -= 1;
            if *n == 0 {
                replaying.remove(&self.org);
            }
        }
    }
}

impl Hub {
    /// A hub over `stream` (`None`: the store has no stream; every subscription is
    /// refused with [`LiveError::Unavailable`]).
    pub fn new(stream: Option<Arc<dyn ChangeStream>>, options: LiveOptions) -> Arc<Hub> {
        Hub::build(stream, None, options, Design::builtin())
    }

    /// A hub of the changes of `design`'s entities (a chart's), over `stream` or
    /// following `relay`.
    pub fn for_design(
        stream: Option<Arc<dyn ChangeStream>>,
        relay: Option<RelayLog>,
        options: LiveOptions,
        design: Design,
    ) -> Arc<Hub> {
        Hub::build(stream, relay, options, design)
    }

    /// A hub that follows `relay` (which the replica holding the relay lease writes,
    /// [`relayer::Relayer`]) instead of reading `stream` itself.
    pub fn with_relay(
        stream: Option<Arc<dyn ChangeStream>>,
        relay: RelayLog,
        options: LiveOptions,
    ) -> Arc<Hub> {
        Hub::build(stream, Some(relay), options, Design::builtin())
    }

    fn build(
        stream: Option<Arc<dyn ChangeStream>>,
        relay: Option<RelayLog>,
        options: LiveOptions,
        design: Design,
    ) -> Arc<Hub> {
        let (sender, _) = broadcast::channel(options.buffer.max(1));
        Arc::new(Hub {
            stream,
            design,
            relay,
            options,
            sender,
            position: Mutex::new(Position::default()),
            started: OnceCell::new(),
            open: AtomicUsize::new(0),
            per_org: Mutex::default(),
            replaying: Mutex::default(),
            followed: Mutex::default(),
            history_replays: Arc::new(tokio::sync::Semaphore::new(HISTORY_REPLAYS)),
            recent: Mutex::new(Recent::new(options.relay_memory)),
            relayed: Mutex::default(),
        })
    }

    pub fn options(&self) -> &LiveOptions {
        &self.options
    }

    /// Subscribers receiving the reader's changes now (those still replaying included).
    pub fn listeners(&self) -> usize {
        self.sender.receiver_count()
    }

    /// Subscriptions open now.
    pub fn open_subscriptions(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    fn per_org(&self) -> std::sync::MutexGuard<'_, HashMap<Tenant, usize>> {
        self.per_org.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Subscriptions open now for `org`.
    pub fn open_for(&self, org: &Tenant) -> usize {
        self.per_org().get(org).copied().unwrap_or(0)
    }

    /// Takes one of the process's subscription slots and one of `org`'s, or refuses past
    /// [`LiveOptions::max_subscriptions`] or [`LiveOptions::max_per_org`].
    pub fn slot(self: &Arc<Self>, org: &Tenant) -> Result<Slot, LiveError> {
        let max = self.options.max_subscriptions;
        let taken = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        let Ok(n) = taken else {
            return Err(LiveError::TooMany(format!(
                "this server has {max} subscriptions open, its most; try again later"
            )));
        };
        let max_org = self.options.max_per_org;
        {
            let mut per_org = self.per_org();
            let count = per_org.entry(org.clone()).or_insert(0);
            if *count >= max_org {
                self.open.fetch_sub(1, Ordering::AcqRel);
                return Err(LiveError::TooMany(format!(
                    "organization {org} has {max_org} subscriptions open on this server, its \
                     most; try again later"
                )));
            }
            *count += 1;
        }
        crate::metrics::record_subscriptions(n + 1);
        Ok(Slot {
            hub: self.clone(),
            org: org.clone(),
        })
    }

    /// What the hub has received from the relay.
    pub fn followed(&self) -> Followed {
        self.followed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The relay log the hub follows, if any.
    pub fn relay_log(&self) -> Option<RelayLog> {
        self.relay.clone()
    }

    /// Takes one of `org`'s replay slots, or refuses past
    /// [`LiveOptions::max_replays_per_org`]: a resume (`after`) holds it until it has
    /// caught up.
    pub fn replay_slot(self: &Arc<Self>, org: &Tenant) -> Result<ReplaySlot, LiveError> {
        let max = self.options.max_replays_per_org;
        let mut replaying = self.replaying.lock().unwrap_or_else(|p| p.into_inner());
        let n = replaying.entry(org.clone()).or_insert(0);
        if *n >= max {
            return Err(LiveError::ReplaysBusy(format!(
                "organization {org} has {max} resumed subscriptions catching up on this server, \
                 its most; try again shortly"
            )));
        }
        *n += 1;
        Ok(ReplaySlot {
            hub: self.clone(),
            org: org.clone(),
        })
    }

    /// Resumed subscriptions of `org` replaying now.
    pub fn replaying_for(&self, org: &Tenant) -> usize {
        let replaying = self.replaying.lock().unwrap_or_else(|p| p.into_inner());
        replaying.get(org).copied().unwrap_or(0)
    }

    /// Starts the reader once: lists the shards and follows each open one from now (with
    /// a relay: follows the log from its newest entry).
    async fn start(self: &Arc<Self>) -> Result<(), LiveError> {
        if let Some(log) = self.relay.clone() {
            let hub = self.clone();
            return self
                .started
                .get_or_try_init(|| async move {
                    // The newest entries, to serve recent resumes from memory at once
                    // (a replica restarted in a deploy meets its clients' resumes first),
                    // and one more, the id they all come after.
                    let capacity = hub.options.relay_memory;
                    let newest = match follow::with_retries(|| log.newest(capacity + 1)).await {
                        // No holder has begun yet: wait for the first to mark its start
                        // (a subscription served before it could miss changes).
                        Ok(entries) if entries.is_empty() => log
                            .follow("0", 1, RELAY_BEGIN_WAIT)
                            .await,
                        other => other,
                    };
                    let newest = match newest {
                        Ok(entries) if !entries.is_empty() => entries,
                        Ok(_) => {
                            return Err(LiveError::Unavailable(
                                "the relay of the change stream has not begun: no replica holds its lease yet".into(),
                            ))
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "the relay log cannot be read");
                            return Err(LiveError::Unavailable(format!(
                                "the relay of the change stream cannot be read: {e}"
                            )));
                        }
                    };
                    let at = hub.warm(newest);
                    tokio::spawn(follow::follow_relay(log, Arc::downgrade(&hub), at));
                    Ok(())
                })
                .await
                .map(|_| ());
        }
        let Some(stream) = self.stream.clone() else {
            return Err(LiveError::Unavailable(
                "this store has no change stream".into(),
            ));
        };
        let hub = self.clone();
        // A failure is not kept: the next subscription tries again (a stream turned on
        // while the server runs is picked up).
        self.started
            .get_or_try_init(|| async move {
                let sink = Arc::new(reader::HubSink(Arc::downgrade(&hub)));
                match reader::Reader::start(stream, sink, hub.options.poll).await {
                    Ok(reader) => {
                        tokio::spawn(reader.run());
                        Ok(())
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the change stream cannot be read");
                        Err(LiveError::from(e))
                    }
                }
            })
            .await
            .map(|_| ())
    }

    /// Publishes one change (the reader calls this), moving the position past it.
    fn publish(&self, change: Change) {
        let mut position = self.position.lock().unwrap_or_else(|p| p.into_inner());
        position.advance(&change.shard, &change.sequence);
        let at = Arc::new(position.clone());
        crate::metrics::record_stream_change();
        let _ = self.sender.send(Signal::Change(Arc::new(change), at));
    }

    /// Sets the position of shards the reader starts or leaves (no change published).
    fn set_position(&self, f: impl FnOnce(&mut Position)) {
        let mut position = self.position.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut position);
    }

    fn lost(&self, why: String) {
        let _ = self.sender.send(Signal::Lost(why));
    }

    /// Publishes one relay entry, the position moving to just after it.
    fn publish_relayed(&self, entry: Entry) {
        let mut position = self.position.lock().unwrap_or_else(|p| p.into_inner());
        let Entry {
            id,
            relayed,
            position: at,
            ..
        } = entry;
        if let Relayed::Change(change) = &relayed {
            if !self.first_relay_of(change, &at) {
                // Relayed again (Redis restored behind this hub): published already. The
                // hub's shards, past it, stay.
                position.relay = Some(id);
                return;
            }
        }
        match &relayed {
            // Its position unread: the hub's shards stay, and its relay id moves past it.
            Relayed::Unreadable { placed: false, .. } => position.relay = Some(id.clone()),
            _ => {
                *position = Position {
                    relay: Some(id.clone()),
                    ..at
                }
            }
        }
        {
            let mut followed = self.followed.lock().unwrap_or_else(|p| p.into_inner());
            followed.entries += 1;
            followed.last = Some(id.clone());
            if let Relayed::Change(change) = &relayed {
                followed.lag_ms = crate::clock::now_ms().saturating_sub(change.created_ms);
            }
        }
        let signal = match relayed {
            Relayed::Change(change) => {
                crate::metrics::record_relay_followed(Duration::from_millis(
                    crate::clock::now_ms().saturating_sub(change.created_ms),
                ));
                Signal::Change(Arc::from(change), Arc::new(position.clone()))
            }
            Relayed::Lost(why) => Signal::Lost(why),
            Relayed::Unreadable { org, why, .. } => {
                crate::metrics::record_relay_unreadable();
                tracing::warn!(
                    %id,
                    %why,
                    ?org,
                    "a relay entry this version cannot read (written by a later one?): \
                     skipped; its organization's subscribers are told to refetch"
                );
                Signal::Unreadable {
                    org,
                    why: UNREADABLE.into(),
                }
            }
            Relayed::Began => return,
        };
        self.recent().push(id, signal.clone());
        let _ = self.sender.send(signal);
    }

    /// Takes `newest` (oldest first) as where the hub starts following the relay: its
    /// position is after the last, and the entries after the first are held in memory.
    /// Returns the last one's id.
    fn warm(&self, newest: Vec<Entry>) -> String {
        let mut position = self.position.lock().unwrap_or_else(|p| p.into_inner());
        let mut recent = self.recent();
        let mut entries = newest.into_iter();
        let Some(first) = entries.next() else {
            return position.relay.clone().unwrap_or_else(|| "0".to_owned());
        };
        recent.base = Some(first.id.clone());
        if let Relayed::Change(change) = &first.relayed {
            self.first_relay_of(change, &first.position);
        }
        let mut at = first.id.clone();
        // The shards of the last entry whose position was read.
        let mut shards_at = first.position.clone();
        for entry in entries {
            at = entry.id.clone();
            if !matches!(entry.relayed, Relayed::Unreadable { placed: false, .. }) {
                shards_at = entry.position.clone();
            }
            let relayed_at = Position {
                relay: Some(entry.id.clone()),
                ..shards_at.clone()
            };
            let signal = match entry.relayed {
                Relayed::Change(change) if self.first_relay_of(&change, &entry.position) => {
                    Some(Signal::Change(Arc::from(change), Arc::new(relayed_at)))
                }
                Relayed::Change(_) => None,
                Relayed::Lost(why) => Some(Signal::Lost(why)),
                Relayed::Unreadable { org, .. } => {
                    crate::metrics::record_relay_unreadable();
                    Some(Signal::Unreadable {
                        org,
                        why: UNREADABLE.into(),
                    })
                }
                Relayed::Began => None,
            };
            if let Some(signal) = signal {
                recent.push(entry.id, signal);
            }
        }
        *position = Position {
            relay: Some(at.clone()),
            ..shards_at
        };
        at
    }

    /// Records `change` as published from the relay; `false` when a change of its shard
    /// at or past its sequence was already (the log was restored behind this hub, and
    /// holds it again under a new id). Within a shard the relay appends in sequence order.
    fn first_relay_of(&self, change: &Change, at: &Position) -> bool {
        let mut relayed = self.relayed.lock().unwrap_or_else(|p| p.into_inner());
        match relayed.get_mut(&change.shard) {
            Some(last) if seq_cmp(&change.sequence, last).is_le() => return false,
            Some(last) => last.clone_from(&change.sequence),
            None => {
                relayed.insert(change.shard.clone(), change.sequence.clone());
            }
        }
        // Shards no longer read (parents read to their end) are forgotten once there are
        // many.
        if relayed.len() > 2 * at.shards.len() + 1024 {
            relayed.retain(|shard, _| at.shards.contains_key(shard));
        }
        true
    }

    /// The follower missed entries before `next` (trimmed before it read them): every
    /// subscriber is told, and a resume from before `next` goes to the history (where
    /// that position is gone: `EVENTS_EXPIRED`), not to memory.
    fn lost_relayed(&self, next: &str, why: String) {
        // Locked as publishing is, so a subscriber gets this with what follows.
        let _position = self.position.lock().unwrap_or_else(|p| p.into_inner());
        self.recent().restart(next);
        let _ = self.sender.send(Signal::Lost(why));
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The changes of one subscription, each with the position to resume after it:
    /// from now, or (with `after`) from that position, replayed first, holding `replay`
    /// (the organization's replay slot, [`Hub::replay_slot`]) until caught up. `wanted`
    /// picks the changes to deliver; the position moves past the others too. The stream
    /// ends after its first error.
    pub async fn subscribe(
        self: &Arc<Self>,
        after: Option<Position>,
        replay: Option<ReplaySlot>,
        wanted: impl Fn(&Change) -> bool + Send + 'static,
    ) -> Result<impl Stream<Item = Result<Delivered, LiveError>> + Send + 'static, LiveError> {
        self.subscribe_in(None, after, replay, wanted).await
    }

    /// [`subscribe`](Self::subscribe) for a subscriber of `org`: a relay entry this server
    /// cannot read ends it only when the entry is of `org` (or of no organization it can
    /// tell).
    pub async fn subscribe_in(
        self: &Arc<Self>,
        org: Option<Tenant>,
        after: Option<Position>,
        replay: Option<ReplaySlot>,
        wanted: impl Fn(&Change) -> bool + Send + 'static,
    ) -> Result<impl Stream<Item = Result<Delivered, LiveError>> + Send + 'static, LiveError> {
        // (The stream-reading subscription is `Right`, the relay-following one `Left`.)
        self.start().await?;
        let (mut rx, now, from_memory) = {
            let position = self.position.lock().unwrap_or_else(|p| p.into_inner());
            let from_memory = match (&self.relay, after.as_ref().and_then(|a| a.relay.as_deref())) {
                (Some(_), Some(from)) => self.recent().after(from),
                _ => None,
            };
            (self.sender.subscribe(), position.clone(), from_memory)
        };
        if let Some(log) = self.relay.clone() {
            let after = after.map(|from| Resume {
                from,
                from_memory,
                history: self.history_replays.clone(),
            });
            return Ok(futures::future::Either::Left(follow::relayed_changes(
                log,
                org,
                rx,
                now,
                after,
                replay,
                wanted,
                self.options,
                self.design.clone(),
            )));
        }
        let stream = self.stream.clone().expect("started, so there is a stream");
        let buffer = self.options.buffer;
        let max_replay = self.options.max_replay;
        let design = self.design.clone();
        let replay_slot = replay;
        Ok(futures::future::Either::Right(async_stream::stream! {
            let replay_slot = replay_slot;
            // Replay: from `after` to where the reader was when we subscribed.
            let mut replayed: BTreeMap<String, String> = BTreeMap::new();
            // Where the replay left the subscriber: live positions are merged with it, so
            // a shard the reader has read nothing of keeps the sequence number replayed.
            let mut replay_end: Option<Position> = None;
            // What the hub sends that is at or before the position resumed from (a hub
            // behind a cursor made on another replica, or reading its shards' ancestors).
            let mut skip_before_start: Option<reader::Replay> = None;
            if let Some(from) = after {
                let mut replay = reader::Replay::new(stream, from, now, max_replay, design.clone());
                loop {
                    match replay.next().await {
                        Ok(Some((change, position))) => {
                            replayed.insert(change.shard.clone(), change.sequence.clone());
                            if wanted(&change) {
                                yield Ok(Delivered { change: Arc::new(change), position: Arc::new(position) });
                            }
                        }
                        Ok(None) => {
                            replay_end = Some(replay.position().clone());
                            for (shard, pos) in &replay.position().shards {
                                if let Pos::Seq(seq) = pos {
                                    replayed.insert(shard.clone(), seq.clone());
                                }
                            }
                            skip_before_start = Some(replay);
                            break;
                        }
                        Err(e) => {
                            yield Err(e);
                            return;
                        }
                    }
                }
            }
            // Caught up: the organization's replay slot is free for the next resume.
            drop(replay_slot);
            loop {
                match rx.recv().await {
                    Ok(Signal::Change(change, position)) => {
                        let seen = replayed
                            .get(&change.shard)
                            .is_some_and(|s| seq_cmp(&change.sequence, s).is_le())
                            || skip_before_start
                                .as_ref()
                                .is_some_and(|r| r.before_start(&change.shard, &change.sequence));
                        if !seen && wanted(&change) {
                            let position = match &replay_end {
                                Some(end) => Arc::new(position.merged_within(end)),
                                None => position,
                            };
                            yield Ok(Delivered { change, position });
                        }
                    }
                    Ok(signal @ (Signal::Lost(_) | Signal::Unreadable { .. })) => {
                        if let Some(why) = signal.ends(org.as_ref()) {
                            yield Err(LiveError::Expired(why.to_owned()));
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        yield Err(LiveError::TooSlow(buffer));
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }))
    }
}

/// The stream's failures as the reasons a subscription ends.
impl From<StreamError> for LiveError {
    fn from(e: StreamError) -> Self {
        match e {
            StreamError::Trimmed(why) => LiveError::Expired(format!(
                "the change stream no longer holds that position ({why}): refetch, then subscribe without `after`"
            )),
            StreamError::NoStream(why) => LiveError::Unavailable(why),
            other => LiveError::Unavailable(format!("the change stream could not be read: {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replay slots are counted per organization: one tenant at its limit leaves the
    /// others theirs, and a slot given back is taken again.
    #[test]
    fn replay_slots_are_per_organization() {
        let hub = Hub::new(
            None,
            LiveOptions {
                max_replays_per_org: 2,
                ..LiveOptions::DEFAULT
            },
        );
        let acme = Tenant::parse("acme").unwrap();
        let globex = Tenant::parse("globex").unwrap();
        let a1 = hub.replay_slot(&acme).unwrap();
        let _a2 = hub.replay_slot(&acme).unwrap();
        assert!(matches!(
            hub.replay_slot(&acme),
            Err(LiveError::ReplaysBusy(_))
        ));
        let _g = hub.replay_slot(&globex).unwrap();
        assert_eq!(
            (hub.replaying_for(&acme), hub.replaying_for(&globex)),
            (2, 1)
        );
        drop(a1);
        assert_eq!(hub.replaying_for(&acme), 1);
        let _a3 = hub.replay_slot(&acme).unwrap();
    }
}
