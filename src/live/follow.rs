//! The hub's side of the change stream's relay ([`super::relay`]): following the log into
//! the hub, the recent entries a hub holds for resumes, and a relay-following
//! subscription, whose resume replays from memory or from the log's history, never from
//! the stream.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::broadcast;

use super::position::{relay_id_cmp, Pos, Position};
use super::relay::{RelayError, RelayLog, Relayed};
use super::{Change, Delivered, Hub, LiveError, LiveOptions, ReplaySlot, Signal};
use crate::chart::kinds::Tenant;
use crate::store::stream::seq_cmp;

/// Replays from the relay's history at once in one process: each decodes entries as fast
/// as it can (yielding between them), so one at a time leaves the runtime's other tasks,
/// other tenants' events among them, their turn. The others wait for it, each holding its
/// organization's replay slot.
pub(super) const HISTORY_REPLAYS: usize = 1;

/// The last [`LiveOptions::relay_memory`] relay entries a hub received, in order.
#[derive(Default)]
pub(super) struct Recent {
    capacity: usize,
    /// The id just before the first entry held: every entry after it is here.
    pub(super) base: Option<String>,
    entries: std::collections::VecDeque<(String, Signal)>,
}

impl Recent {
    /// Holding at most `capacity` entries.
    pub(super) fn new(capacity: usize) -> Recent {
        Recent {
            capacity,
            ..Recent::default()
        }
    }

    /// The entries after `from`, when all of them are held.
    pub(super) fn after(&self, from: &str) -> Option<Vec<(String, Signal)>> {
        let base = self.base.as_deref()?;
        if relay_id_cmp(from, base)?.is_lt() {
            return None;
        }
        let start = self
            .entries
            .partition_point(|(id, _)| relay_id_cmp(id, from).is_some_and(|o| o.is_le()));
        Some(self.entries.range(start..).cloned().collect())
    }

    /// Holds nothing from before `id`: the entries before it did not all arrive.
    pub(super) fn restart(&mut self, id: &str) {
        self.entries.clear();
        self.base = Some(id.to_owned());
    }

    pub(super) fn push(&mut self, id: String, signal: Signal) {
        self.entries.push_back((id, signal));
        if self.entries.len() > self.capacity {
            self.base = self.entries.pop_front().map(|(id, _)| id);
        }
    }
}

/// Why subscribers are told when the hub's follower fell behind the relay's history.
const FELL_BEHIND: &str =
    "the server fell behind the relay's history and missed changes: refetch, then subscribe again";

/// Whether the log was trimmed past `at`, as its oldest entry tells: for entries that do
/// not name their predecessor (an earlier version appended them).
async fn trimmed_past(log: &RelayLog, at: &str) -> Result<bool, RelayError> {
    if at == "0" {
        return Ok(false);
    }
    Ok(match log.first_id().await? {
        Some(oldest) => relay_id_cmp(&oldest, at).is_some_and(|o| o.is_gt()),
        None => false,
    })
}

/// Follows the relay log from `at` into the hub until the hub is gone.
pub(super) async fn follow_relay(log: RelayLog, hub: std::sync::Weak<Hub>, mut at: String) {
    let mut backoff = Duration::from_millis(100);
    loop {
        if hub.strong_count() == 0 {
            return;
        }
        match log.follow(&at, 1000, RELAY_BLOCK).await {
            Ok(entries) => {
                backoff = Duration::from_millis(100);
                // Trimmed before this follower read them (it fell behind the history, or
                // was paused): lost to every subscriber. Each entry names the one before
                // it; one of an earlier version does not, and the oldest entry left tells
                // instead.
                let gap = match entries.first() {
                    None => false,
                    Some(first) => match first.follows_gap(&at) {
                        Some(gap) => gap,
                        None => trimmed_past(&log, &at).await.unwrap_or(false),
                    },
                };
                let Some(hub) = hub.upgrade() else {
                    return;
                };
                if let (true, Some(first)) = (gap, entries.first()) {
                    tracing::warn!(from = %at, to = %first.id, "the relay's history was trimmed past this server's follower");
                    hub.lost_relayed(&first.id, FELL_BEHIND.into());
                }
                for entry in entries {
                    at = entry.id.clone();
                    let entry = hub.design.known(entry);
                    hub.publish_relayed(entry);
                }
            }
            Err(error) => {
                tracing::warn!(%error, ?backoff, "following the relay log failed; retrying");
                crate::metrics::record_stream_error();
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// A read of the relay's history, sent again on failure (a timeout under load, a
/// reconnect) on the store's retry schedule, three times at most.
pub(super) async fn with_retries<T, F, Fut>(call: F) -> Result<T, RelayError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, RelayError>>,
{
    crate::store::retry_while(3, |e| !matches!(e, RelayError::Malformed(_)), call).await
}

/// How long a hub's first subscription waits for the relay's first holder to begin.
pub(super) const RELAY_BEGIN_WAIT: Duration = Duration::from_secs(5);

/// How long one read of the relay log waits for an entry.
const RELAY_BLOCK: Duration = Duration::from_secs(2);

/// Entries read from the relay log per call of a replay.
const RELAY_PAGE: usize = 1000;

/// Where a resume on a relay-following hub starts: the position, and the entries after it
/// when the hub still holds them all in memory.
pub(super) struct Resume {
    pub(super) from: Position,
    pub(super) from_memory: Option<Vec<(String, Signal)>>,
    /// Taken for a replay from the relay's history.
    pub(super) history: Arc<tokio::sync::Semaphore>,
}

/// One subscription's changes on a hub that follows a relay: a resume (`after`) replays
/// from the hub's recent entries, or else from the log's history (never the stream), up
/// to where the hub was when it subscribed, then goes on with the hub's entries after the
/// last one replayed.
#[allow(clippy::too_many_arguments)]
pub(super) fn relayed_changes(
    log: RelayLog,
    org: Option<Tenant>,
    mut rx: broadcast::Receiver<Signal>,
    now: Position,
    after: Option<Resume>,
    replay_slot: Option<ReplaySlot>,
    wanted: impl Fn(&Change) -> bool + Send + 'static,
    options: LiveOptions,
    design: super::Design,
) -> impl Stream<Item = Result<Delivered, LiveError>> + Send + 'static {
    let LiveOptions {
        buffer, max_replay, ..
    } = options;
    // What the cursor covers: a log that Redis restored behind it holds again, under new
    // ids, changes its client had (same shard, sequence at or before the cursor's).
    let covered: BTreeMap<String, Pos> = after
        .as_ref()
        .map(|a| a.from.shards.clone())
        .unwrap_or_default();
    let covered = move |c: &Change| match covered.get(&c.shard) {
        Some(Pos::Seq(s)) => seq_cmp(&c.sequence, s).is_le(),
        _ => false,
    };
    async_stream::stream! {
        let replay_slot = replay_slot;
        let mut replayed_to: Option<String> = None;
        if let Some(Resume { from, from_memory: Some(entries), .. }) = &after {
            if entries.len() > max_replay {
                yield Err(LiveError::Expired(format!(
                    "more than {max_replay} changes happened since that position: refetch, then subscribe without `after`"
                )));
                return;
            }
            replayed_to = from.relay.clone();
            for (id, signal) in entries {
                // Held entries are ready at once: give the runtime back its turn now and
                // then, so a storm of replays cannot starve other tasks.
                tokio::task::coop::consume_budget().await;
                replayed_to = Some(id.clone());
                match signal {
                    Signal::Change(change, position) => {
                        if !covered(change) && wanted(change) {
                            yield Ok(Delivered { change: change.clone(), position: position.clone() });
                        }
                    }
                    other => {
                        if let Some(why) = other.ends(org.as_ref()) {
                            yield Err(LiveError::Expired(why.to_owned()));
                            return;
                        }
                    }
                }
            }
        } else if let Some(Resume { from, history, .. }) = after {
            let _permit = history.acquire_owned().await;
            let refetch = |why: &str| LiveError::Expired(format!("{why}: refetch, then subscribe without `after`"));
            let Some(mut at) = from.relay else {
                yield Err(refetch("this event cursor was made by a server that did not follow the relay"));
                return;
            };
            match with_retries(|| log.first_id()).await {
                Ok(Some(first)) if relay_id_cmp(&at, &first).is_some_and(|o| o.is_lt()) => {
                    yield Err(refetch("the relay's history no longer holds that position"));
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    yield Err(LiveError::Unavailable(format!("the relay's history cannot be read: {e}")));
                    return;
                }
            }
            let mut replayed = 0;
            'replay: loop {
                let page = match with_retries(|| log.range_after_raw(&at, RELAY_PAGE)).await {
                    Ok(page) => page,
                    Err(e) => {
                        yield Err(LiveError::Unavailable(format!("the relay's history cannot be read: {e}")));
                        return;
                    }
                };
                // Trimmed past this replay since the page before (or since its start):
                // what lay between is lost.
                if let Some(first) = page.first() {
                    let gap = match first.follows_gap(&at) {
                        Some(gap) => gap,
                        None => match with_retries(|| trimmed_past(&log, &at)).await {
                            Ok(gap) => gap,
                            Err(e) => {
                                yield Err(LiveError::Unavailable(format!("the relay's history cannot be read: {e}")));
                                return;
                            }
                        },
                    };
                    if gap {
                        yield Err(refetch("the relay's history no longer holds that position"));
                        return;
                    }
                }
                let last_page = page.len() < RELAY_PAGE;
                for raw in page {
                    tokio::task::coop::consume_budget().await;
                    let entry = design.known(raw.decode());
                    let beyond = now.relay.as_deref().is_none_or(|n| relay_id_cmp(&entry.id, n).is_some_and(|o| o.is_gt()));
                    if beyond {
                        break 'replay;
                    }
                    at = entry.id.clone();
                    replayed += 1;
                    if replayed > max_replay {
                        yield Err(refetch(&format!("more than {max_replay} changes happened since that position")));
                        return;
                    }
                    match entry.relayed {
                        Relayed::Change(change) => {
                            if !covered(&change) && wanted(&change) {
                                let position = Position { relay: Some(entry.id), ..entry.position };
                                yield Ok(Delivered { change: Arc::from(change), position: Arc::new(position) });
                            }
                        }
                        Relayed::Lost(why) => {
                            yield Err(LiveError::Expired(why));
                            return;
                        }
                        Relayed::Unreadable { org: of, .. } => {
                            if super::concerns(of.as_deref(), org.as_ref()) {
                                yield Err(LiveError::Expired(super::UNREADABLE.into()));
                                return;
                            }
                        }
                        Relayed::Began => {}
                    }
                }
                if last_page {
                    break;
                }
            }
            replayed_to = Some(at);
        }
        // Caught up: the organization's replay slot is free for the next resume.
        drop(replay_slot);
        loop {
            match rx.recv().await {
                Ok(Signal::Change(change, position)) => {
                    let seen = match (&replayed_to, &position.relay) {
                        (Some(to), Some(id)) => relay_id_cmp(id, to).is_some_and(|o| o.is_le()),
                        _ => false,
                    };
                    if !seen && !covered(&change) && wanted(&change) {
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
    }
}
