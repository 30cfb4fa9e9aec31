//! `--max-wcu`: the write units a migration may spend a second, so that it leaves the
//! table's capacity (and each partition's 1,000 units a second) to the application.
//!
//! Units are counted as DynamoDB bills them (`ItemWrite::of`: one per KiB of an item
//! written, at least one) and twice for every item of a transaction. The bucket is the
//! generic cell rate algorithm: a second's worth of units may go at once, then the
//! rate holds. A few lines, so no rate-limiting crate: `governor`, the one of the field,
//! counts cells of one unit and cannot take a 66-unit transaction as one cost.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::store::faults::ItemWrite;
use crate::store::{TableSchema, TransactAction};

/// The write units of `actions`: a TransactWriteItems when `transaction`, else a single write.
pub fn units(schema: &TableSchema, actions: &[TransactAction], transaction: bool) -> f64 {
    let units: f64 = actions
        .iter()
        .filter_map(|a| ItemWrite::of(schema, a))
        .map(|w| w.units)
        .sum();
    if transaction {
        units * 2.0
    } else {
        units
    }
}

/// A budget of write units a second, shared by every segment of a run.
#[derive(Debug)]
pub struct WriteBudget {
    per_second: Option<f64>,
    /// The theoretical arrival time of the next unit.
    next: Mutex<Instant>,
    spent: Mutex<f64>,
}

impl WriteBudget {
    /// `None` spends without limit (and still counts).
    pub fn new(per_second: Option<f64>) -> Self {
        WriteBudget {
            per_second: per_second.filter(|r| *r > 0.0),
            next: Mutex::new(Instant::now()),
            spent: Mutex::new(0.0),
        }
    }

    /// Counts `units` already spent (attempts the store sent again) without waiting: the
    /// next [`spend`](Self::spend) waits for them.
    pub fn charge(&self, units: f64) {
        if units <= 0.0 {
            return;
        }
        *self.spent.lock().unwrap_or_else(|e| e.into_inner()) += units;
        let Some(rate) = self.per_second else {
            return;
        };
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        *next = (*next).max(now) + Duration::from_secs_f64(units / rate);
    }

    /// Waits until `units` fit in the budget, and counts them as spent.
    pub async fn spend(&self, units: f64) {
        *self.spent.lock().unwrap_or_else(|e| e.into_inner()) += units;
        let Some(rate) = self.per_second else {
            return;
        };
        let wait = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let start = (*next).max(now);
            *next = start + Duration::from_secs_f64(units / rate);
            // One second of burst: a write may go while the schedule is under a second ahead.
            next.saturating_duration_since(now + Duration::from_secs(1))
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Units spent so far.
    pub fn spent(&self) -> f64 {
        *self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units charged after the fact (attempts sent again) are waited for by the next spend.
    #[tokio::test(start_paused = true)]
    async fn units_charged_after_the_fact_delay_the_next_write() {
        let budget = WriteBudget::new(Some(100.0));
        let started = tokio::time::Instant::now();
        budget.spend(100.0).await;
        budget.charge(200.0);
        budget.spend(10.0).await;
        assert_eq!(budget.spent(), 310.0);
        // 310 units at 100 a second, the last second of them a burst: 2.1 s.
        let waited = started.elapsed();
        assert!(
            (Duration::from_millis(2090)..Duration::from_millis(2200)).contains(&waited),
            "{waited:?}"
        );
    }

    /// A second's worth goes at once; past it, the rate holds (time paused, so exact).
    #[tokio::test(start_paused = true)]
    async fn spends_at_the_rate_after_a_second_of_burst() {
        let budget = WriteBudget::new(Some(100.0));
        let started = tokio::time::Instant::now();
        for _ in 0..10 {
            budget.spend(10.0).await;
        }
        assert!(
            started.elapsed() < Duration::from_millis(5),
            "one second's worth at once"
        );
        for _ in 0..10 {
            budget.spend(10.0).await;
        }
        let took = started.elapsed();
        assert!(
            (Duration::from_millis(900)..Duration::from_millis(1100)).contains(&took),
            "{took:?}"
        );
        assert_eq!(budget.spent(), 200.0);
        let free = WriteBudget::new(None);
        free.spend(1e9).await;
        assert_eq!(free.spent(), 1e9);
    }
}
