//! Latency samples and their summaries. Every operation's latency is kept (a run is at
//! most a few hundred thousand operations), so percentiles are exact, not bucketed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::shapes::Shape;

/// Most error messages a run keeps, to show what went wrong.
const ERROR_SAMPLES: usize = 5;

/// Raw samples of a run, per shape, in microseconds.
#[derive(Default)]
pub struct Latencies {
    per_shape: BTreeMap<Shape, Vec<u32>>,
    errors: BTreeMap<Shape, u64>,
    error_samples: Vec<String>,
}

impl Latencies {
    pub fn record(&mut self, shape: Shape, took: Duration, error: Option<String>) {
        let micros = took.as_micros().min(u128::from(u32::MAX)) as u32;
        self.per_shape.entry(shape).or_default().push(micros);
        if let Some(e) = error {
            *self.errors.entry(shape).or_default() += 1;
            if self.error_samples.len() < ERROR_SAMPLES {
                self.error_samples.push(format!("{}: {e}", shape.name()));
            }
        }
    }

    pub fn merge(&mut self, other: Latencies) {
        for (shape, samples) in other.per_shape {
            self.per_shape.entry(shape).or_default().extend(samples);
        }
        for (shape, n) in other.errors {
            *self.errors.entry(shape).or_default() += n;
        }
        for e in other.error_samples {
            if self.error_samples.len() < ERROR_SAMPLES {
                self.error_samples.push(e);
            }
        }
    }

    pub fn summarize(self, seconds: f64) -> RunStats {
        let mut all: Vec<u32> = self.per_shape.values().flatten().copied().collect();
        let ops = all.len() as u64;
        let shapes = self
            .per_shape
            .into_iter()
            .map(|(shape, mut samples)| {
                let n = samples.len() as u64;
                let errors = self.errors.get(&shape).copied().unwrap_or(0);
                (
                    shape.name().to_owned(),
                    ShapeStats {
                        ops: n,
                        errors,
                        latency_ms: Percentiles::of(&mut samples),
                    },
                )
            })
            .collect();
        RunStats {
            seconds,
            ops,
            ops_per_sec: ops as f64 / seconds,
            errors: self.errors.values().sum(),
            latency_ms: Percentiles::of(&mut all),
            shapes,
            error_samples: self.error_samples,
        }
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples` (microseconds), sorted in place.
    pub fn of(samples: &mut [u32]) -> Self {
        if samples.is_empty() {
            return Percentiles::default();
        }
        samples.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            f64::from(samples[rank - 1]) / 1000.0
        };
        let sum: u64 = samples.iter().map(|&s| u64::from(s)).sum();
        Percentiles {
            p50: at(0.50),
            p95: at(0.95),
            p99: at(0.99),
            max: f64::from(samples[samples.len() - 1]) / 1000.0,
            mean: sum as f64 / samples.len() as f64 / 1000.0,
        }
    }
}

/// One shape's part of a run.
#[derive(Debug, Clone, Serialize)]
pub struct ShapeStats {
    pub ops: u64,
    pub errors: u64,
    pub latency_ms: Percentiles,
}

/// A run's summary.
#[derive(Debug, Clone, Serialize)]
pub struct RunStats {
    pub seconds: f64,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub errors: u64,
    pub latency_ms: Percentiles,
    pub shapes: BTreeMap<String, ShapeStats>,
    pub error_samples: Vec<String>,
}
