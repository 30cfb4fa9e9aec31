//! The fault model of the embedded engine: DynamoDB's failure modes, seeded and
//! deterministic, so tests (and a frontend developer with `serve --faults`) walk the paths
//! production walks on AWS.
//!
//! - `gsi-lag=800ms`: a write reaches the global secondary indexes that long after it
//!   reached the table, in order per table, carrying the item as it was written (indexes
//!   project every attribute). Until then an index Query answers from before the write.
//! - `throttle=0.05`: each attempt of each data call is refused with
//!   `ThrottlingException` at this rate.
//! - `conflict=0.05`: each attempt of each write meets a transaction in flight on its
//!   item at this rate: a single-item write fails with `TransactionConflictException`,
//!   a transaction is cancelled with reason `TransactionConflict` on one of its actions.
//! - `lost-reply=0.02`: each attempt of each write is applied, then its reply is lost
//!   (the client's attempt timed out) at this rate.
//! - `item-wcu=N`: each item takes at most N write units a second, as one item on AWS
//!   takes at most about 1 000 (its partition's limit): a token bucket per item key (a
//!   second's worth of burst) counting a write's units as DynamoDB does (one per KiB
//!   written, rounded up; twice that in a transaction). A write past it is throttled
//!   (`ThrottlingException`, sent again as the SDK does; a transaction is cancelled with
//!   reason `ThrottlingError`). With it, conflicts are real too: a write that touches an
//!   item a transaction in flight is writing meets `TransactionConflict`, as on DynamoDB.
//! - `seed=N`: the seed of the draws (default 0).
//!
//! The engine answers as the AWS SDK in front of DynamoDB does: it makes up to
//! [`SDK_MAX_ATTEMPTS`] attempts of one call, sending again after a throttled attempt
//! and after a lost reply (so a write can be applied twice, its conditions evaluated
//! anew the second time), and gives a conflict back at once (the SDK does not retry
//! those). Transactions carry a `ClientRequestToken`, fixed across the attempts of one
//! call, so a replayed transaction succeeds without being applied again, as on DynamoDB.
//! Conflicts are drawn at a rate rather than from the writes actually in flight: the
//! engine serializes its writes, so a rate is what reproduces the failure.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{retry_schedule, CancelReason, StoreError, StoreResult};

/// Attempts of one call, as the SDK's standard retry mode makes them by default
/// (`DynamoOptions::DEFAULT_MAX_ATTEMPTS`).
pub const SDK_MAX_ATTEMPTS: u32 = 3;

/// How long DynamoDB remembers a transaction's `ClientRequestToken`.
pub const CLIENT_TOKEN_TTL: Duration = Duration::from_secs(600);

/// The faults to inject. `Faults::default()` injects none.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Faults {
    /// How long a write takes to reach the secondary indexes.
    pub gsi_lag: Duration,
    /// Rate of throttled attempts, 0 to 1.
    pub throttle: f64,
    /// Rate of write attempts that conflict with a transaction in flight, 0 to 1.
    pub conflict: f64,
    /// Rate of write attempts applied whose reply is lost, 0 to 1.
    pub lost_reply: f64,
    /// Write units one item takes a second; 0 for no limit (and conflicts drawn only).
    pub item_wcu: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Faults {
    /// Whether any fault is injected.
    pub fn any(&self) -> bool {
        !self.gsi_lag.is_zero()
            || self.throttle > 0.0
            || self.conflict > 0.0
            || self.lost_reply > 0.0
            || self.item_wcu > 0.0
    }
}

/// Why a `--faults` specification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fault specification: {0} (expected for instance gsi-lag=800ms,throttle=0.05,conflict=0.05,lost-reply=0.02,item-wcu=1000,seed=7)")]
pub struct InvalidFaults(String);

impl FromStr for Faults {
    type Err = InvalidFaults;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut faults = Faults::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| InvalidFaults(format!("`{part}` is not name=value")))?;
            let value = value.trim();
            match name.trim() {
                "gsi-lag" => faults.gsi_lag = duration(value)?,
                "throttle" => faults.throttle = rate(name, value)?,
                "conflict" => faults.conflict = rate(name, value)?,
                "lost-reply" => faults.lost_reply = rate(name, value)?,
                "item-wcu" => {
                    faults.item_wcu = value
                        .parse::<f64>()
                        .ok()
                        .filter(|n| n.is_finite() && *n >= 1.0)
                        .ok_or_else(|| {
                            InvalidFaults(format!(
                                "item-wcu `{value}` is not a number of write units of at least 1 (AWS: 1000)"
                            ))
                        })?
                }
                "seed" => {
                    faults.seed = value
                        .parse()
                        .map_err(|_| InvalidFaults(format!("seed `{value}` is not a number")))?
                }
                other => return Err(InvalidFaults(format!("unknown fault `{other}`"))),
            }
        }
        Ok(faults)
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gsi-lag={}ms,throttle={},conflict={},lost-reply={},seed={}",
            self.gsi_lag.as_millis(),
            self.throttle,
            self.conflict,
            self.lost_reply,
            self.seed
        )?;
        if self.item_wcu > 0.0 {
            write!(f, ",item-wcu={}", self.item_wcu)?;
        }
        Ok(())
    }
}

/// `800ms`, `1s`, `1.5s` or `0`; at most an hour.
fn duration(value: &str) -> Result<Duration, InvalidFaults> {
    let bad = || {
        InvalidFaults(format!(
            "gsi-lag `{value}` is not a duration like 800ms or 1s"
        ))
    };
    let (number, scale) = if let Some(ms) = value.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(s) = value.strip_suffix('s') {
        (s, 1.0)
    } else if value == "0" {
        (value, 1.0)
    } else {
        return Err(bad());
    };
    let seconds = number.trim().parse::<f64>().map_err(|_| bad())? * scale;
    if !(0.0..=3600.0).contains(&seconds) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn rate(name: &str, value: &str) -> Result<f64, InvalidFaults> {
    value
        .parse::<f64>()
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
        .ok_or_else(|| InvalidFaults(format!("{name} `{value}` is not a rate from 0 to 1")))
}

/// What one attempt meets, drawn from the seeded generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Draw {
    /// Goes through.
    Through,
    /// Refused before anything is done.
    Throttled,
    /// A write that meets a transaction in flight; the number says which of its actions.
    Conflict(usize),
    /// A write applied whose reply never arrives.
    LostReply,
}

/// The faults with their generator.
pub(crate) struct Injector {
    pub faults: Faults,
    rng: Mutex<StdRng>,
    /// With `item-wcu`: each item's write units left, and when they were counted.
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
    /// With `item-wcu`: the items transactions in flight are writing, and how many.
    in_flight: Mutex<HashMap<String, usize>>,
}

/// Buckets kept at most; past it, those full again (idle a second) are dropped.
const MAX_BUCKETS: usize = 100_000;

/// One item a write touches, and the write units it costs outside a transaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ItemWrite {
    pub key: String,
    pub units: f64,
}

impl ItemWrite {
    /// The item `action` writes (by its key), costing a unit per KiB of the item a Put
    /// writes, one for any other action (DynamoDB counts the item's size either way;
    /// the engine's small items are one KiB or less).
    pub fn of(schema: &super::TableSchema, action: &super::TransactAction) -> Option<ItemWrite> {
        let key = action.key(schema)?;
        let units = match action {
            super::TransactAction::Put(p) => (super::value::item_size(&p.item) as f64 / 1024.0)
                .ceil()
                .max(1.0),
            _ => 1.0,
        };
        Some(ItemWrite {
            key: format!("{}\u{0}{}", key.pk, key.sk),
            units,
        })
    }
}

impl ItemWrite {
    /// The item one request of a BatchWriteItem writes, as [`ItemWrite::of`] counts it.
    pub fn of_batch(
        schema: &super::TableSchema,
        request: &super::BatchWriteRequest,
    ) -> Option<ItemWrite> {
        let action = match request {
            super::BatchWriteRequest::Put(item) => {
                super::TransactAction::Put(super::Put::new(item.clone()))
            }
            super::BatchWriteRequest::Delete(key) => {
                super::TransactAction::Delete(super::Delete::new(key.clone()))
            }
        };
        ItemWrite::of(schema, &action)
    }
}

/// Holds a transaction's items as in flight until dropped.
struct InFlight<'a> {
    injector: &'a Injector,
    keys: Vec<String>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut held = self
            .injector
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for key in &self.keys {
            if let Some(n) = held.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    held.remove(key);
                }
            }
        }
    }
}

impl Injector {
    pub fn new(faults: Faults) -> Self {
        Injector {
            faults,
            rng: Mutex::new(StdRng::seed_from_u64(faults.seed)),
            buckets: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    /// The failure modes it injects.
    pub fn faults(&self) -> Faults {
        self.faults
    }

    /// Takes `writes`' units (`factor` times each: 2 in a transaction) from their items'
    /// buckets, all or none; the index of the first write whose item has too few.
    fn take_units(&self, writes: &[ItemWrite], factor: f64) -> Result<(), usize> {
        let limit = self.faults.item_wcu;
        if limit <= 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > MAX_BUCKETS {
            buckets.retain(|_, (left, at)| {
                *left + now.duration_since(*at).as_secs_f64() * limit < limit
            });
        }
        let mut left = Vec::with_capacity(writes.len());
        for (i, w) in writes.iter().enumerate() {
            let (units, at) = buckets.get(&w.key).copied().unwrap_or((limit, now));
            let refilled = (units + now.duration_since(at).as_secs_f64() * limit).min(limit);
            // The same item twice in one call counts twice.
            let spent: f64 = writes[..i]
                .iter()
                .filter(|o| o.key == w.key)
                .map(|o| o.units * factor)
                .sum();
            let after = refilled - spent - w.units * factor;
            if after < 0.0 {
                return Err(i);
            }
            left.push((w.key.clone(), after));
        }
        for (key, after) in left {
            buckets.insert(key, (after, now));
        }
        Ok(())
    }

    /// With `item-wcu`, marks a transaction's items in flight; the index of the first one a
    /// transaction in flight already writes (a conflict) instead.
    fn start_transaction(&self, writes: &[ItemWrite]) -> Result<Option<InFlight<'_>>, usize> {
        if self.faults.item_wcu <= 0.0 {
            return Ok(None);
        }
        let mut held = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = writes.iter().position(|w| held.contains_key(&w.key)) {
            return Err(i);
        }
        for w in writes {
            *held.entry(w.key.clone()).or_default() += 1;
        }
        Ok(Some(InFlight {
            injector: self,
            keys: writes.iter().map(|w| w.key.clone()).collect(),
        }))
    }

    /// With `item-wcu`, whether a transaction in flight writes the item of a single write.
    fn in_flight(&self, write: &ItemWrite) -> bool {
        self.faults.item_wcu > 0.0
            && self
                .in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&write.key)
    }

    /// Which requests of one BatchWriteItem DynamoDB leaves unprocessed: each throttled at
    /// the throttle rate, or past its item's write units (`item-wcu`), or written by a
    /// transaction in flight. A batch is not retried by the SDK: the caller sends what is
    /// left again.
    pub fn unprocessed(&self, writes: &[Option<ItemWrite>]) -> Vec<bool> {
        writes
            .iter()
            .map(|w| {
                let throttled = {
                    let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
                    self.faults.throttle > 0.0 && rng.random_bool(self.faults.throttle)
                };
                throttled
                    || w.as_ref().is_some_and(|w| {
                        self.in_flight(w) || self.take_units(std::slice::from_ref(w), 1.0).is_err()
                    })
            })
            .collect()
    }

    /// Draws the fate of one attempt: of a read (`actions` 0) or of a write of `actions`
    /// actions.
    pub fn draw(&self, actions: usize) -> Draw {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        let f = &self.faults;
        if f.throttle > 0.0 && rng.random_bool(f.throttle) {
            return Draw::Throttled;
        }
        if actions == 0 {
            return Draw::Through;
        }
        if f.conflict > 0.0 && rng.random_bool(f.conflict) {
            return Draw::Conflict(rng.random_range(0..actions));
        }
        if f.lost_reply > 0.0 && rng.random_bool(f.lost_reply) {
            return Draw::LostReply;
        }
        Draw::Through
    }
}

/// What a call is, for the fault model.
#[derive(Clone)]
pub(crate) enum Call {
    Read,
    /// PutItem, UpdateItem, DeleteItem.
    Single(Option<ItemWrite>),
    /// TransactWriteItems with this many actions.
    Transaction(Vec<ItemWrite>),
}

/// One call as the SDK in front of DynamoDB makes it: up to [`SDK_MAX_ATTEMPTS`] attempts
/// (each one `attempt()`), each of which may be throttled (sent again), meet a transaction
/// in flight (given back at once, as the SDK does), or be applied and lose its reply (sent
/// again, applied again).
pub(crate) async fn call<T, F, Fut>(
    injector: &Injector,
    call: Call,
    mut attempt: F,
) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<T>>,
{
    let (actions, writes): (usize, &[ItemWrite]) = match &call {
        Call::Read => (0, &[]),
        Call::Single(w) => (1, w.as_slice()),
        Call::Transaction(w) => (w.len(), w.as_slice()),
    };
    let transaction = matches!(call, Call::Transaction(_));
    let cancelled = |at: usize, why: CancelReason| StoreError::TransactionCanceled {
        reasons: (0..actions)
            .map(|i| {
                if i == at {
                    why.clone()
                } else {
                    CancelReason::None
                }
            })
            .collect(),
    };
    let mut waits = backon::BackoffBuilder::build(retry_schedule(SDK_MAX_ATTEMPTS - 1));
    let mut lost_before = false;
    loop {
        let draw = match injector.draw(actions) {
            // DynamoDB answers a transaction sent again with its client token from
            // the token, before any transaction in flight could conflict with it.
            Draw::Conflict(_) if lost_before && transaction => Draw::Through,
            draw => draw,
        };
        // The item limits (`item-wcu`): a transaction in flight on an item, then the
        // item's write units.
        let draw = match draw {
            Draw::Through if transaction && !lost_before => {
                match injector.start_transaction(writes) {
                    Err(at) => Draw::Conflict(at),
                    Ok(held) => match injector.take_units(writes, 2.0) {
                        Err(at) => {
                            drop(held);
                            let err = cancelled(at, CancelReason::Throttled);
                            match waits.next() {
                                Some(wait) => {
                                    tokio::time::sleep(wait).await;
                                    continue;
                                }
                                None => return Err(err.after_unanswered_attempt(lost_before)),
                            }
                        }
                        Ok(()) => {
                            let result = attempt().await;
                            drop(held);
                            return result;
                        }
                    },
                }
            }
            Draw::Through
                if !transaction && writes.first().is_some_and(|w| injector.in_flight(w)) =>
            {
                Draw::Conflict(0)
            }
            Draw::Through if !transaction => match injector.take_units(writes, 1.0) {
                Err(_) => Draw::Throttled,
                Ok(()) => Draw::Through,
            },
            draw => draw,
        };
        let failed = match draw {
            Draw::Through => return attempt().await,
            Draw::Throttled => StoreError::Throttled(
                "Rate of requests exceeds the allowed throughput (injected)".into(),
            ),
            Draw::Conflict(at) => {
                let conflict = if transaction {
                    cancelled(at, CancelReason::TransactionConflict)
                } else {
                    StoreError::TransactionConflict(
                        "Transaction is ongoing for the item (injected)".into(),
                    )
                };
                // A single write that conflicts after an attempt was applied and lost: the
                // caller cannot be told that nothing was written.
                return Err(conflict.after_unanswered_attempt(lost_before));
            }
            Draw::LostReply => {
                // Applied (or refused) by the store; the answer never reaches the caller.
                lost_before = true;
                let _lost = attempt().await;
                StoreError::Unavailable(
                    "the attempt timed out after the store received it (injected lost reply)"
                        .into(),
                )
            }
        };
        match waits.next() {
            Some(wait) => tokio::time::sleep(wait).await,
            // Throttled now, but an earlier attempt may have been applied: the caller
            // cannot be told that nothing was written.
            None => return Err(failed.after_unanswered_attempt(lost_before)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specifications_parse_and_print_back() {
        let f: Faults = "gsi-lag=800ms, throttle=0.05,conflict=0.05,lost-reply=0.02,seed=7"
            .parse()
            .unwrap();
        assert_eq!(
            f,
            Faults {
                gsi_lag: Duration::from_millis(800),
                throttle: 0.05,
                conflict: 0.05,
                lost_reply: 0.02,
                item_wcu: 0.0,
                seed: 7,
            }
        );
        assert_eq!(f.to_string().parse::<Faults>().unwrap(), f);
        assert_eq!(
            "gsi-lag=1.5s".parse::<Faults>().unwrap().gsi_lag,
            Duration::from_millis(1500)
        );
        assert!(!"".parse::<Faults>().unwrap().any());
    }

    #[test]
    fn bad_specifications_say_what_is_wrong() {
        for (spec, says) in [
            ("throttle=2", "throttle `2`"),
            ("throttle=-0.1", "throttle `-0.1`"),
            ("gsi-lag=fast", "gsi-lag `fast`"),
            ("gsi-lag=2h", "gsi-lag `2h`"),
            ("gsi-lag=7200s", "gsi-lag `7200s`"),
            ("lag=1s", "unknown fault `lag`"),
            ("throttle", "not name=value"),
            ("seed=x", "seed `x`"),
        ] {
            let err = spec.parse::<Faults>().unwrap_err().to_string();
            assert!(err.contains(says), "{spec}: {err}");
        }
    }

    fn item(key: &str, units: f64) -> ItemWrite {
        ItemWrite {
            key: key.into(),
            units,
        }
    }

    #[test]
    fn item_wcu_parses_prints_and_is_checked() {
        let f: Faults = "item-wcu=1000,seed=2".parse().unwrap();
        assert_eq!(f.item_wcu, 1000.0);
        assert!(f.any());
        assert_eq!(f.to_string().parse::<Faults>().unwrap(), f);
        assert!(!Faults::default().to_string().contains("item-wcu"));
        for bad in ["item-wcu=0", "item-wcu=-5", "item-wcu=lots", "item-wcu=inf"] {
            let err = bad.parse::<Faults>().unwrap_err().to_string();
            assert!(err.contains("item-wcu"), "{bad}: {err}");
        }
    }

    /// Each item has its own second of units; a transaction's writes cost twice; the
    /// units come back at the limit's rate.
    #[test]
    fn each_item_takes_its_write_units_a_second() {
        let i = Injector::new(Faults {
            item_wcu: 10.0,
            ..Faults::default()
        });
        for _ in 0..10 {
            assert_eq!(i.take_units(&[item("a", 1.0)], 1.0), Ok(()));
        }
        assert_eq!(i.take_units(&[item("a", 1.0)], 1.0), Err(0));
        assert_eq!(i.take_units(&[item("b", 1.0), item("a", 1.0)], 1.0), Err(1));
        // All or none: `b` was not charged by the refused call.
        for _ in 0..5 {
            assert_eq!(i.take_units(&[item("b", 1.0)], 2.0), Ok(()));
        }
        assert_eq!(i.take_units(&[item("b", 1.0)], 2.0), Err(0));
        // One item twice in one call counts twice.
        assert_eq!(i.take_units(&[item("c", 4.0), item("c", 4.0)], 1.0), Ok(()));
        assert_eq!(i.take_units(&[item("c", 4.0)], 1.0), Err(0));
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(i.take_units(&[item("a", 2.0)], 1.0), Ok(()));
        // Without the limit, nothing is counted.
        let free = Injector::new(Faults::default());
        assert!((0..1000).all(|_| free.take_units(&[item("a", 1.0)], 2.0).is_ok()));
    }

    /// Two transactions in flight on one item: the second is cancelled with
    /// `TransactionConflict` on that item's action; a single write on it meets
    /// `TransactionConflictException`; once the first ends, both go through.
    #[tokio::test]
    async fn transactions_in_flight_on_one_item_conflict() {
        let i = std::sync::Arc::new(Injector::new(Faults {
            item_wcu: 1000.0,
            ..Faults::default()
        }));
        let (entered, first_in) = tokio::sync::oneshot::channel::<()>();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let i = i.clone();
            tokio::spawn(async move {
                let mut gates = Some((entered, released));
                call(
                    &i,
                    Call::Transaction(vec![item("org", 1.0), item("t1", 1.0)]),
                    || {
                        let gates = gates.take();
                        async move {
                            if let Some((entered, released)) = gates {
                                let _ = entered.send(());
                                let _ = released.await;
                            }
                            Ok(())
                        }
                    },
                )
                .await
            })
        };
        first_in.await.unwrap();
        let second = call(
            &i,
            Call::Transaction(vec![item("t2", 1.0), item("org", 1.0)]),
            || async { Ok(()) },
        )
        .await;
        assert_eq!(
            second,
            Err(StoreError::TransactionCanceled {
                reasons: vec![CancelReason::None, CancelReason::TransactionConflict]
            })
        );
        let single = call(&i, Call::Single(Some(item("org", 1.0))), || async {
            Ok(())
        })
        .await;
        assert!(
            matches!(single, Err(StoreError::TransactionConflict(_))),
            "{single:?}"
        );
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap(), Ok(()));
        let again = call(&i, Call::Transaction(vec![item("org", 1.0)]), || async {
            Ok(())
        })
        .await;
        assert_eq!(again, Ok(()));
    }

    #[test]
    fn draws_are_deterministic_for_a_seed_and_near_their_rates() {
        let faults = Faults {
            throttle: 0.1,
            conflict: 0.1,
            lost_reply: 0.1,
            seed: 3,
            ..Faults::default()
        };
        let draws = || {
            let i = Injector::new(faults);
            (0..2000).map(|_| i.draw(2)).collect::<Vec<Draw>>()
        };
        let (a, b) = (draws(), draws());
        assert_eq!(a, b);
        let throttled = a.iter().filter(|d| **d == Draw::Throttled).count();
        assert!((120..280).contains(&throttled), "{throttled}");
        assert!(a.contains(&Draw::Conflict(1)));
        assert!(a.contains(&Draw::LostReply));
        let reads = Injector::new(faults);
        assert!((0..500).all(|_| matches!(reads.draw(0), Draw::Through | Draw::Throttled)));
    }
}
