//! A lease in the table that elects one holder among replicas, as the DynamoDB lock
//! client does: the holder heartbeats by changing the lease's `token` (its record version
//! number) with a write conditioned on the token it last wrote; a replica that sees the
//! same token for a whole lease duration, timed by its own monotonic clock, takes the
//! lease over with a write conditioned on that token. No replica compares wall clocks, so
//! clock skew cannot hand the lease to two holders; of two replicas taking over at once
//! the conditions let one win.
//!
//! Each holding has an `epoch`, one more than the holding before: the fencing token that
//! whatever the holder writes elsewhere carries, so that a holder paused past its lease
//! (a long GC-like stall, a frozen container) and resumed cannot write over its successor.
//! A holder that stops cleanly marks the lease released, and the next replica to look
//! takes it at once.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::store::own::{lease_key, OwnRecord as Record};
use crate::store::PrimaryKey;
use crate::store::{
    AttributeValue, Condition, GetItem, Put, Store, StoreError, StoreResult, Update, UpdateExpr,
};

/// The lease as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRecord {
    pub name: String,
    /// Who holds it (a replica's id).
    pub holder: String,
    /// The holding's fencing token: one more than the holding before.
    pub epoch: u64,
    /// Changed by every heartbeat; a token unchanged for a lease duration is a holder gone.
    pub token: String,
    /// How long a holder has between heartbeats, in ms.
    pub duration_ms: u64,
    /// When the holder last wrote it (ms since the Unix epoch, its clock): for people
    /// and metrics, never for deciding.
    pub renewed_ms: u64,
    /// The holder let it go; anyone may take it now.
    #[serde(default)]
    pub released: bool,
}

impl Record for LeaseRecord {
    const TYPE: &'static str = "Lease";
    fn key(&self) -> PrimaryKey {
        lease_key(&self.name)
    }
}

/// A holding of the lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub epoch: u64,
    token: String,
}

/// What a look at the lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    /// This replica holds it (taken now, or already).
    Held(Held),
    /// Another replica does, as far as can be told yet.
    HeldBy { holder: String, epoch: u64 },
}

/// One replica's side of one lease.
pub struct Lease {
    name: String,
    holder: String,
    duration: Duration,
    /// The token last seen of another holder, and since when (this replica's clock).
    seen: Option<(String, Instant)>,
}

const TOKEN: &str = "token";
const EPOCH: &str = "epoch";
const RELEASED: &str = "released";
const RENEWED_MS: &str = "renewedMs";

fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Lease {
    pub fn new(name: impl Into<String>, holder: impl Into<String>, duration: Duration) -> Self {
        Lease {
            name: name.into(),
            holder: holder.into(),
            duration,
            seen: None,
        }
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Reads the lease and takes it when it is free: absent, released, or its token
    /// unchanged for a whole duration since this replica first saw it.
    pub async fn try_acquire(&mut self, store: &dyn Store) -> StoreResult<Look> {
        let current = store
            .get_item(GetItem {
                key: lease_key(&self.name),
                consistent_read: true,
            })
            .await?
            .and_then(|item| LeaseRecord::from_item(item, store.schema()).ok());
        let free = match &current {
            None => true,
            Some(r) if r.released => true,
            Some(r) => match &self.seen {
                Some((token, since)) if *token == r.token => since.elapsed() >= self.duration,
                _ => {
                    self.seen = Some((r.token.clone(), Instant::now()));
                    false
                }
            },
        };
        if !free {
            let r = current.expect("a lease that is not free exists");
            return Ok(Look::HeldBy {
                holder: r.holder,
                epoch: r.epoch,
            });
        }
        let record = LeaseRecord {
            name: self.name.clone(),
            holder: self.holder.clone(),
            epoch: current.as_ref().map_or(1, |r| r.epoch + 1),
            token: new_token(),
            duration_ms: self.duration.as_millis() as u64,
            renewed_ms: crate::clock::now_ms(),
            released: false,
        };
        let condition = match &current {
            None => Condition::not_exists(store.schema().pk.clone()),
            Some(r) => Condition::eq(TOKEN, AttributeValue::S(r.token.clone())),
        };
        let mut put = Put::new(record.to_item(store.schema())).when(condition);
        put.return_old_on_condition_failure = true;
        match store.put_item(put).await {
            Ok(_) => {
                self.seen = None;
                tracing::info!(lease = %self.name, holder = %self.holder, epoch = record.epoch, "lease taken");
                Ok(Look::Held(Held {
                    epoch: record.epoch,
                    token: record.token,
                }))
            }
            // Another replica took it first.
            Err(StoreError::ConditionFailed { item }) => {
                let r = item.and_then(|i| LeaseRecord::from_item(*i, store.schema()).ok());
                self.seen = r.as_ref().map(|r| (r.token.clone(), Instant::now()));
                Ok(Look::HeldBy {
                    holder: r.as_ref().map_or_else(String::new, |r| r.holder.clone()),
                    epoch: r.map_or(0, |r| r.epoch),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The heartbeat: a new token, conditioned on the one this holding last wrote.
    /// `false` when the lease was taken over (the holder stalled past its duration):
    /// stop acting as its holder at once.
    pub async fn renew(&self, store: &dyn Store, held: &mut Held) -> StoreResult<bool> {
        let renewed = self.rewrite(store, held, None).await?;
        if !renewed {
            tracing::warn!(lease = %self.name, holder = %self.holder, epoch = held.epoch, "lease lost to another replica");
        }
        Ok(renewed)
    }

    /// Moves this holding's epoch to `epoch`, past a fence a later holding left elsewhere
    /// (the relay log's), when the lease item was deleted or restored from a backup. The
    /// write is conditioned on this holding's token, so a holder that truly took over is
    /// never passed. `false`: the lease was taken over meanwhile.
    pub async fn advance(
        &self,
        store: &dyn Store,
        held: &mut Held,
        epoch: u64,
    ) -> StoreResult<bool> {
        let from = held.epoch;
        let moved = self.rewrite(store, held, Some(epoch)).await?;
        if moved {
            tracing::warn!(
                lease = %self.name,
                holder = %self.holder,
                from,
                to = epoch,
                "lease epoch moved past a later fence"
            );
        }
        Ok(moved)
    }

    /// A new token (and `epoch`, when given) written over this holding's own: `false`
    /// when another replica's token is there now.
    async fn rewrite(
        &self,
        store: &dyn Store,
        held: &mut Held,
        epoch: Option<u64>,
    ) -> StoreResult<bool> {
        let token = new_token();
        let mut set = UpdateExpr::default()
            .set(TOKEN, AttributeValue::S(token.clone()))
            .set(
                RENEWED_MS,
                AttributeValue::N(crate::clock::now_ms().to_string()),
            );
        if let Some(epoch) = epoch {
            set = set.set(EPOCH, AttributeValue::N(epoch.to_string()));
        }
        let update = Update::new(lease_key(&self.name), set)
            .when(Condition::eq(TOKEN, AttributeValue::S(held.token.clone())));
        match store.update_item(update).await {
            Ok(_) => {
                held.token = token;
                if let Some(epoch) = epoch {
                    held.epoch = epoch;
                }
                Ok(true)
            }
            Err(StoreError::ConditionFailed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Lets the lease go, so another replica takes it without waiting a duration.
    pub async fn release(&self, store: &dyn Store, held: Held) -> StoreResult<()> {
        let update = Update::new(
            lease_key(&self.name),
            UpdateExpr::default().set(RELEASED, AttributeValue::Bool(true)),
        )
        .when(Condition::eq(TOKEN, AttributeValue::S(held.token)));
        match store.update_item(update).await {
            Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;

    async fn store() -> EmbeddedStore {
        let store = EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap();
        store.create_table().await.unwrap();
        store
    }

    fn held(look: Look) -> Held {
        match look {
            Look::Held(h) => h,
            other => panic!("not held: {other:?}"),
        }
    }

    /// One holder at a time; a holder that stops heartbeating is replaced after one
    /// duration, at the next epoch, and its next heartbeat tells it so.
    #[tokio::test]
    async fn one_holder_replaced_when_it_stops_heartbeating() {
        let store = store().await;
        let d = Duration::from_millis(200);
        let mut a = Lease::new("relay", "a", d);
        let mut b = Lease::new("relay", "b", d);
        let mut first = held(a.try_acquire(&store).await.unwrap());
        assert_eq!(first.epoch, 1);
        assert_eq!(
            b.try_acquire(&store).await.unwrap(),
            Look::HeldBy {
                holder: "a".into(),
                epoch: 1
            }
        );
        // Heartbeats keep it: b sees the token change and never takes over.
        for _ in 0..4 {
            tokio::time::sleep(d / 2).await;
            assert!(a.renew(&store, &mut first).await.unwrap());
            assert!(matches!(
                b.try_acquire(&store).await.unwrap(),
                Look::HeldBy { .. }
            ));
        }
        // a stalls: after one duration of the same token, b takes it at epoch 2.
        tokio::time::sleep(d + Duration::from_millis(20)).await;
        let second = held(b.try_acquire(&store).await.unwrap());
        assert_eq!(second.epoch, 2);
        assert!(
            !a.renew(&store, &mut first).await.unwrap(),
            "a learns it lost the lease"
        );
        // a, looking again, sees b's holding.
        assert_eq!(
            a.try_acquire(&store).await.unwrap(),
            Look::HeldBy {
                holder: "b".into(),
                epoch: 2
            }
        );
        // b lets it go: a takes it at once, at epoch 3.
        b.release(&store, second).await.unwrap();
        assert_eq!(held(a.try_acquire(&store).await.unwrap()).epoch, 3);
        let check = crate::check::check(&store).await.unwrap();
        assert!(check.is_clean(), "{check}");
    }

    /// A holding moved past a fence: the lease's epoch jumps, and the next takeover goes
    /// on from it.
    #[tokio::test]
    async fn a_holding_moves_its_epoch_past_a_fence() {
        let store = store().await;
        let d = Duration::from_millis(100);
        let mut a = Lease::new("relay", "a", d);
        let mut h = held(a.try_acquire(&store).await.unwrap());
        assert!(a.advance(&store, &mut h, 1001).await.unwrap());
        assert_eq!(h.epoch, 1001);
        assert!(a.renew(&store, &mut h).await.unwrap());
        a.release(&store, h).await.unwrap();
        let mut b = Lease::new("relay", "b", d);
        assert_eq!(held(b.try_acquire(&store).await.unwrap()).epoch, 1002);
        // A holding whose token was replaced is not moved.
        let mut stale = Held {
            epoch: 1002,
            token: "not the lease's".into(),
        };
        assert!(!b.advance(&store, &mut stale, 2000).await.unwrap());
        assert_eq!(stale.epoch, 1002);
    }

    /// Two replicas taking over the same stale lease at once: the condition lets one win.
    #[tokio::test]
    async fn of_two_taking_over_at_once_one_wins() {
        let store = store().await;
        let d = Duration::from_millis(100);
        let mut gone = Lease::new("relay", "gone", d);
        held(gone.try_acquire(&store).await.unwrap());
        let mut b = Lease::new("relay", "b", d);
        let mut c = Lease::new("relay", "c", d);
        b.try_acquire(&store).await.unwrap();
        c.try_acquire(&store).await.unwrap();
        tokio::time::sleep(d + Duration::from_millis(20)).await;
        let (lb, lc) = tokio::join!(b.try_acquire(&store), c.try_acquire(&store));
        let won = [lb.unwrap(), lc.unwrap()]
            .into_iter()
            .filter(|l| matches!(l, Look::Held(h) if h.epoch == 2))
            .count();
        assert_eq!(won, 1);
    }
}
