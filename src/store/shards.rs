//! Which counter shard of an item a write takes: a process never sends two transactions on
//! one shard at once while another shard of the item is free, since DynamoDB cancels a
//! transaction that touches an item another one has in flight (`TransactionConflict`).
//! Used by every write that counts on an item with counter shards (the built-in design's
//! organizations, and any chart's `shards_of`).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::PrimaryKey;

/// The shards of each item this process has a transaction in flight on, with how many:
/// a new write takes a free one (from a random start, so that replicas spread too),
/// waiting up to [`LEASE_WAIT`] for one to come free when all are busy (a wait here is
/// cheaper than a cancelled transaction), then the least busy.
static IN_FLIGHT: LazyLock<Mutex<HashMap<PrimaryKey, Vec<u16>>>> = LazyLock::new(Mutex::default);
/// Told whenever a lease is given back.
static RELEASED: LazyLock<Notify> = LazyLock::new(Notify::new);
/// How long a write waits for a free shard before sharing a busy one.
pub const LEASE_WAIT: Duration = Duration::from_millis(500);

/// One shard of one item (named by the item's own key), taken for one transaction; given
/// back when dropped.
pub struct ShardLease {
    owner: PrimaryKey,
    pub shard: u32,
}

impl ShardLease {
    /// One of `shards` shards of `owner` (at least one).
    pub async fn take(owner: &PrimaryKey, shards: u32) -> ShardLease {
        let shards = shards.max(1);
        let start = rand::random_range(0..shards) as usize;
        let deadline = tokio::time::Instant::now() + LEASE_WAIT;
        loop {
            let released = RELEASED.notified();
            tokio::pin!(released);
            // Registered before looking, so a lease given back in between wakes it.
            released.as_mut().enable();
            let late = tokio::time::Instant::now() >= deadline;
            if let Some(lease) = ShardLease::try_take(owner, shards, start, late) {
                return lease;
            }
            let _ = tokio::time::timeout_at(deadline, released).await;
        }
    }

    /// A free shard, or with `any` the least busy one.
    fn try_take(owner: &PrimaryKey, shards: u32, start: usize, any: bool) -> Option<ShardLease> {
        let mut all = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
        let busy = all
            .entry(owner.clone())
            .or_insert_with(|| vec![0; shards as usize]);
        let n = busy.len();
        let shard = (0..n)
            .map(|i| (start + i) % n)
            .min_by_key(|&s| busy[s])
            .filter(|&s| any || busy[s] == 0)?;
        busy[shard] = busy[shard].saturating_add(1);
        Some(ShardLease {
            owner: owner.clone(),
            shard: shard as u32,
        })
    }
}

impl Drop for ShardLease {
    fn drop(&mut self) {
        let mut all = IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(busy) = all.get_mut(&self.owner) {
            if let Some(slot) = busy.get_mut(self.shard as usize) {
                *slot = slot.saturating_sub(1);
            }
            if busy.iter().all(|&b| b == 0) {
                all.remove(&self.owner);
            }
        }
        drop(all);
        RELEASED.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn concurrent_writes_of_one_process_take_distinct_shards_while_any_is_free() {
        const SHARDS: u32 = 32;
        let owner = PrimaryKey::new("ORG#lease-test", "ORG#lease-test");
        let mut leases = Vec::new();
        for _ in 0..SHARDS {
            leases.push(ShardLease::take(&owner, SHARDS).await);
        }
        let mut shards: Vec<u32> = leases.iter().map(|l| l.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        assert_eq!(shards.len(), SHARDS as usize);
        // All busy: the next waits for one to come free and takes that one.
        let waiting = tokio::spawn({
            let owner = owner.clone();
            async move { ShardLease::take(&owner, SHARDS).await }
        });
        tokio::task::yield_now().await;
        let freed = leases.remove(5).shard;
        let taken = waiting.await.unwrap();
        assert_eq!(taken.shard, freed);
        // None comes free: after the wait, one is shared.
        let asked = std::time::Instant::now();
        let shared = ShardLease::take(&owner, SHARDS).await;
        assert!(asked.elapsed() >= LEASE_WAIT);
        assert!(shared.shard < SHARDS);
        drop(taken);
        drop(shared);
        drop(leases);
        assert!(!IN_FLIGHT.lock().unwrap().contains_key(&owner));
    }
}
