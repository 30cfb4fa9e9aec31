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

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

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
    }
}

/// Why a `--faults` specification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fault specification: {0} (expected for instance gsi-lag=800ms,throttle=0.05,conflict=0.05,lost-reply=0.02,seed=7)")]
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
        )
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
}

impl Injector {
    pub fn new(faults: Faults) -> Self {
        Injector {
            faults,
            rng: Mutex::new(StdRng::seed_from_u64(faults.seed)),
        }
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
#[derive(Clone, Copy)]
pub(crate) enum Call {
    Read,
    /// PutItem, UpdateItem, DeleteItem.
    Single,
    /// TransactWriteItems with this many actions.
    Transaction(usize),
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
    let actions = match call {
        Call::Read => 0,
        Call::Single => 1,
        Call::Transaction(n) => n,
    };
    let mut waits = backon::BackoffBuilder::build(retry_schedule(SDK_MAX_ATTEMPTS - 1));
    let mut lost_before = false;
    loop {
        let draw = match injector.draw(actions) {
            // DynamoDB answers a transaction sent again with its client token from
            // the token, before any transaction in flight could conflict with it.
            Draw::Conflict(_) if lost_before && matches!(call, Call::Transaction(_)) => {
                Draw::Through
            }
            draw => draw,
        };
        let failed = match draw {
            Draw::Through => return attempt().await,
            Draw::Throttled => StoreError::Throttled(
                "Rate of requests exceeds the allowed throughput (injected)".into(),
            ),
            Draw::Conflict(at) => {
                let conflict = match call {
                    Call::Transaction(n) => StoreError::TransactionCanceled {
                        reasons: (0..n)
                            .map(|i| {
                                if i == at {
                                    CancelReason::TransactionConflict
                                } else {
                                    CancelReason::None
                                }
                            })
                            .collect(),
                    },
                    _ => StoreError::TransactionConflict(
                        "Transaction is ongoing for the item (injected)".into(),
                    ),
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
