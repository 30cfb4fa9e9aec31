//! The relay's writer: on every replica a task that takes the relay lease when it is free
//! and, while holding it, reads the table's change stream into the relay log. So the
//! stream has one reader whatever the replica count (DynamoDB Streams serves five
//! `GetRecords` a second per shard to all readers together), and a replica that dies
//! loses the lease within one lease duration to another, which goes on from the
//! position of the last entry in the log: the log is the record of what was relayed, so
//! nothing is skipped or relayed twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::lease::{Held, Lease, Look};
use super::position::Position;
use super::reader::{Read, Reader, Sink};
use super::relay::{RelayError, RelayLog, Relayed};
use crate::store::stream::ChangeStream;
use crate::store::Store;

/// The lease's name in the table (`LEASE#stream-relay`).
pub const LEASE_NAME: &str = "stream-relay";

/// This process's name as a lease holder: host, process id and a random part (two
/// processes on one host, or a process id reused by a restart, stay apart).
pub fn replica_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "replica".into());
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// One replica's relay writer.
pub struct Relayer {
    pub store: Arc<dyn Store>,
    /// Which records are changes of the design's entities.
    pub design: super::Design,
    pub stream: Arc<dyn ChangeStream>,
    pub log: RelayLog,
    pub lease: Lease,
    /// How often the stream is polled when a call brought nothing.
    pub poll: Duration,
}

impl Relayer {
    /// Runs until `stop` completes; then lets the lease go if held, so another replica
    /// takes over at once.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let every = self.lease.duration() / 3;
        loop {
            match self.lease.try_acquire(self.store.as_ref()).await {
                Ok(Look::Held(held)) => {
                    crate::metrics::record_relay_holder(true, held.epoch);
                    let released = self.lead(held, &mut stop).await;
                    crate::metrics::record_relay_holder(false, 0);
                    if released {
                        return;
                    }
                }
                Ok(Look::HeldBy { epoch, .. }) => crate::metrics::record_relay_epoch(epoch),
                Err(error) => tracing::warn!(%error, "reading the relay lease failed"),
            }
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }

    /// Relays while the lease holds; `true` when stopped (the lease released).
    async fn lead(
        &mut self,
        mut held: Held,
        stop: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> bool {
        let claimed = match self.log.claim(held.epoch).await {
            // The log was claimed at a later epoch than the lease's: its item was deleted,
            // or the table restored from a backup, after later holdings. Moving the lease
            // past the fence now beats being fenced once a lease, epoch by epoch.
            Err(RelayError::Fenced(fence)) => {
                tracing::warn!(
                    epoch = held.epoch,
                    fence,
                    "the relay log's fence is ahead of the lease; moving the lease past it"
                );
                match self
                    .lease
                    .advance(self.store.as_ref(), &mut held, fence.saturating_add(1))
                    .await
                {
                    Ok(true) => {
                        crate::metrics::record_relay_holder(true, held.epoch);
                        self.log.claim(held.epoch).await
                    }
                    Ok(false) => return false,
                    Err(error) => {
                        tracing::warn!(%error, "moving the relay lease past the fence failed");
                        return false;
                    }
                }
            }
            other => other,
        };
        let last_id = match claimed {
            Ok(last) => last,
            Err(error) => {
                tracing::warn!(%error, epoch = held.epoch, "claiming the relay log failed");
                return false;
            }
        };
        let sink = Arc::new(RelaySink {
            log: self.log.clone(),
            design: self.design.clone(),
            epoch: held.epoch,
            position: Mutex::default(),
            last_id: Mutex::new(last_id),
            stream: Mutex::default(),
            relaying: AtomicBool::new(true),
        });
        let reader = match self.log.last().await {
            Ok(Some(last)) => {
                Reader::resume(
                    self.stream.clone(),
                    sink.clone(),
                    self.poll,
                    &last.position,
                    last.stream.as_deref(),
                )
                .await
            }
            Ok(None) => {
                let reader = Reader::start(self.stream.clone(), sink.clone(), self.poll).await;
                // An empty log after an earlier holding: the relay lost its history (a
                // Redis restarted without its data, or flushed). What was relayed since
                // its last entry cannot be known: subscribers are told to refetch.
                if reader.is_ok() && held.epoch > 1 {
                    tracing::warn!(
                        epoch = held.epoch,
                        "the relay log is empty after an earlier holder: its history was lost"
                    );
                    if !sink
                        .lose("the relay of the change stream lost its history: refetch, then subscribe again".into())
                        .await
                    {
                        return false;
                    }
                }
                // The log says where the relay began, so hubs know it is live.
                if reader.is_ok() && !sink.begin().await {
                    return false;
                }
                reader
            }
            Err(error) => {
                tracing::warn!(%error, "reading the relay log failed");
                return false;
            }
        };
        let reader = match reader {
            Ok(reader) => reader,
            Err(error) => {
                tracing::warn!(%error, "the change stream cannot be read");
                return false;
            }
        };
        tracing::info!(
            epoch = held.epoch,
            holder = self.lease.holder(),
            "relaying the change stream"
        );
        let every = self.lease.duration() / 3;
        let store = self.store.clone();
        let lease = &self.lease;
        let heartbeat = async {
            let mut renewed = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(every).await;
                match lease.renew(store.as_ref(), &mut held).await {
                    Ok(true) => renewed = tokio::time::Instant::now(),
                    Ok(false) => return,
                    Err(error) => {
                        tracing::warn!(%error, "renewing the relay lease failed");
                        // Past a duration without a heartbeat another replica may hold it.
                        if renewed.elapsed() >= lease.duration() {
                            return;
                        }
                    }
                }
            }
        };
        let stopped = tokio::select! {
            _ = reader.run() => false,
            _ = heartbeat => false,
            _ = stop.as_mut() => true,
        };
        // The sink stopped the reader (its log fenced, diverged or failing): the lease
        // is let go too, so the next holding goes on from the log's last entry at once
        // rather than a lease later (conditioned on this holding's token, it never
        // touches a later holder's).
        let gave_up = !sink.relaying.load(Ordering::Relaxed);
        sink.relaying.store(false, Ordering::Relaxed);
        if stopped || gave_up {
            if let Err(error) = self.lease.release(self.store.as_ref(), held).await {
                tracing::warn!(%error, "releasing the relay lease failed");
            }
        }
        stopped
    }
}

/// The relay log as the reader's sink, for one holding of the lease.
struct RelaySink {
    log: RelayLog,
    design: super::Design,
    epoch: u64,
    position: Mutex<Position>,
    /// The id of the entry this holding appended last (at first, the log's last when it
    /// claimed it): each append goes only on it.
    last_id: Mutex<String>,
    /// The label of the change stream read, written in every entry.
    stream: Mutex<Option<String>>,
    relaying: AtomicBool,
}

impl RelaySink {
    /// Tells every subscriber that changes were lost.
    async fn lose(&self, why: String) -> bool {
        let position = self.position().clone();
        self.append(vec![(Relayed::Lost(why), position)]).await
    }

    /// Marks where the first holder began reading.
    async fn begin(&self) -> bool {
        let position = self.position().clone();
        self.append(vec![(Relayed::Began, position)]).await
    }

    fn position(&self) -> std::sync::MutexGuard<'_, Position> {
        self.position.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn append(&self, entries: Vec<(Relayed, Position)>) -> bool {
        if entries.is_empty() {
            return true;
        }
        let n = entries.len();
        let on = self
            .last_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let stream = self
            .stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match self
            .log
            .append_on(self.epoch, Some(&on), stream.as_deref(), &entries)
            .await
        {
            Ok(ids) => {
                if let Some(last) = ids.last() {
                    *self.last_id.lock().unwrap_or_else(|p| p.into_inner()) = last.clone();
                }
                crate::metrics::record_relayed(n);
                true
            }
            Err(RelayError::Diverged(why)) => {
                tracing::warn!(
                    epoch = self.epoch,
                    %why,
                    "the relay log lost entries this holder appended (a Redis failover or \
                     restore); stopping, so the next holding goes on from its last entry"
                );
                self.relaying.store(false, Ordering::Relaxed);
                false
            }
            Err(RelayError::Fenced(by)) => {
                tracing::warn!(
                    epoch = self.epoch,
                    by,
                    "a later relay holder took the log; stopping"
                );
                self.relaying.store(false, Ordering::Relaxed);
                false
            }
            Err(error) => {
                // The next holding (this replica's, or another's) goes on from the log's
                // last entry: stop rather than skip these.
                tracing::warn!(%error, "appending to the relay log failed; stopping to resume");
                self.relaying.store(false, Ordering::Relaxed);
                false
            }
        }
    }
}

#[async_trait::async_trait]
impl Sink for RelaySink {
    fn wanted(&self) -> bool {
        self.relaying.load(Ordering::Relaxed)
    }

    fn design(&self) -> super::Design {
        self.design.clone()
    }

    async fn deliver(&self, page: Vec<Read>) -> bool {
        let entries = {
            let mut position = self.position();
            let mut entries = Vec::new();
            for read in page {
                match read {
                    Read::Change(change) => {
                        position.advance(&change.shard, &change.sequence);
                        entries.push((Relayed::Change(change), position.clone()));
                    }
                    Read::Skipped { shard, sequence } => position.advance(&shard, &sequence),
                }
            }
            entries
        };
        self.append(entries).await
    }

    fn set_position(&self, f: &mut dyn FnMut(&mut Position)) {
        f(&mut self.position());
    }

    async fn lost(&self, why: String) {
        self.lose(why).await;
    }

    fn set_stream(&self, label: &str) {
        *self.stream.lock().unwrap_or_else(|p| p.into_inner()) = Some(label.to_owned());
    }
}
