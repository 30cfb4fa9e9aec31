//! What an engine learns about one store call while it runs, beyond its answer: the
//! capacity it consumed (DynamoDB reports it; the embedded engine has none) and how many
//! times it was sent (the SDK's retries, a transaction sent again after a conflict).
//!
//! A decorator that reports on calls (the trace extension, the OpenTelemetry span of each
//! DynamoDB call) runs the call inside [`measured`]; the engine reports with
//! [`report_capacity`] and [`report_retry`], wherever in the call it learns it. Scopes
//! nest: what an inner scope gathered is added to the one around it when it ends, so every
//! decorator sees the whole call. A report outside any scope is a no-op.

use std::cell::Cell;

/// One call's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallStats {
    /// Capacity units consumed, table and indexes together, where the engine reports it.
    pub consumed_capacity: Option<f64>,
    /// Sends after the first.
    pub retries: u32,
    /// Of those, the ones that followed a throttled send.
    pub throttles: u32,
}

impl CallStats {
    /// Every send of the call: the first and its retries.
    pub fn attempts(&self) -> u32 {
        self.retries + 1
    }

    fn add(&mut self, other: CallStats) {
        self.consumed_capacity = match (self.consumed_capacity, other.consumed_capacity) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.retries += other.retries;
        self.throttles += other.throttles;
    }
}

tokio::task_local! {
    static CALL: Cell<CallStats>;
}

/// Runs `call`, returning its output with what the engine reported while it ran; the
/// figures are also added to an enclosing scope's.
pub async fn measured<F: std::future::Future>(call: F) -> (F::Output, CallStats) {
    let (output, stats) = CALL
        .scope(Cell::new(CallStats::default()), async {
            let output = call.await;
            (output, CALL.with(Cell::get))
        })
        .await;
    let _ = CALL.try_with(|outer| {
        let mut sum = outer.get();
        sum.add(stats);
        outer.set(sum);
    });
    (output, stats)
}

fn update(f: impl FnOnce(&mut CallStats)) {
    let _ = CALL.try_with(|c| {
        let mut stats = c.get();
        f(&mut stats);
        c.set(stats);
    });
}

/// Called by an engine that learns what the call being measured consumed.
pub fn report_capacity(units: f64) {
    update(|s| s.consumed_capacity = Some(s.consumed_capacity.unwrap_or(0.0) + units));
}

/// Called by an engine about to send the call being measured again; `throttled` when the
/// send before was refused for capacity (`ThrottlingException`,
/// `ProvisionedThroughputExceededException`).
pub fn report_retry(throttled: bool) {
    update(|s| {
        s.retries += 1;
        s.throttles += u32::from(throttled);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scopes_nest_and_add_up() {
        let (((), inner), outer) = measured(async {
            report_capacity(1.5);
            let r = measured(async {
                report_retry(true);
                report_capacity(0.5);
            })
            .await;
            report_retry(false);
            r
        })
        .await;
        assert_eq!(inner.consumed_capacity, Some(0.5));
        assert_eq!((inner.retries, inner.throttles), (1, 1));
        assert_eq!(outer.consumed_capacity, Some(2.0));
        assert_eq!((outer.attempts(), outer.throttles), (3, 1));
        // Outside any scope: nothing to report to, and nothing breaks.
        report_capacity(1.0);
        report_retry(true);
    }
}
