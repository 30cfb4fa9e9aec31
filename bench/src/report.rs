//! The report: `report.json` (everything measured), `report.md` (the tables) and
//! `latency.png` (latency percentiles against concurrency, one panel per engine).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use serde::Serialize;

use crate::dataset::DatasetSpec;
use crate::scaling::Scaling;
use crate::shapes::Mix;
use crate::stats::RunStats;

/// The targets of the benchmark (issue 6).
pub const TARGET_SERVED_OVER_FLOOR: f64 = 0.5;
pub const TARGET_P99_MS: f64 = 25.0;
pub const TARGET_RSS_MIB: f64 = 200.0;
pub const TARGET_GROWTH: f64 = 1.5;
/// One busy organization's writes a second over the same writes spread over many.
pub const TARGET_ONE_OVER_MANY: f64 = 0.9;

#[derive(Debug, Serialize)]
pub struct Report {
    pub generated_unix_secs: u64,
    pub smoke: bool,
    pub machine: Machine,
    pub dataset: DatasetReport,
    pub duration_secs: f64,
    pub warmup_secs: f64,
    pub engines: Vec<EngineReport>,
    pub scaling: Option<Scaling>,
    /// The live updates run (subscriptions under writes), embedded engine.
    pub live: Option<crate::live::LiveReport>,
    /// The same on DynamoDB Local over 1 replica and over several sharing the relay.
    #[serde(default)]
    pub replicas: Option<Vec<crate::replicas::ReplicasReport>>,
    /// The full mix with tracing off, at 1 % and at 100 %, embedded engine.
    pub tracing: Option<Vec<crate::tracing_cost::TracingRun>>,
    /// Writes in one organization against the same writes spread, under `item-wcu`.
    pub hot_org: Option<crate::hot_org::HotOrgReport>,
    pub targets: Vec<TargetCheck>,
    pub total_errors: u64,
    pub wall_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_gib: f64,
    pub os: String,
    /// `/proc/loadavg` when the benchmark started: other work on the machine skews
    /// every figure, so the report says how busy it was.
    pub load_average_at_start: String,
}

impl Machine {
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map_or_else(|| "unknown".to_owned(), |m| m.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            memory_gib: (mem_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            load_average_at_start: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct DatasetReport {
    pub spec: DatasetSpec,
    pub organizations: usize,
    pub users: usize,
    pub tickets: usize,
    pub orders: usize,
    pub order_lines: usize,
    pub items: usize,
}

/// Store requests one operation of a shape made (from the trace extension) beside what
/// the access-pattern table says it costs.
#[derive(Debug, Serialize)]
pub struct RequestCount {
    pub shape: String,
    pub description: String,
    pub expected: u64,
    pub measured: u64,
}

#[derive(Debug, Serialize)]
pub struct RunReport {
    pub mix: Mix,
    pub concurrency: usize,
    pub stats: RunStats,
    /// The server's peak RSS (VmHWM) so far, read right after this run.
    pub server_peak_rss_mib: f64,
    /// CPU the server and the load driver (this process) spent per operation, measured
    /// over the run's warm-up and measured seconds together: where the two cores went.
    pub server_cpu_ms_per_op: f64,
    pub driver_cpu_ms_per_op: f64,
}

#[derive(Debug, Serialize)]
pub struct EngineReport {
    pub engine: String,
    pub seed_seconds: f64,
    pub requests_per_op: Vec<RequestCount>,
    /// The full mix at each concurrency.
    pub runs: Vec<RunReport>,
    /// The read mix served over HTTP at the highest concurrency.
    pub served_reads: RunReport,
    /// The same read mix in-process on the store port, with the requests the chart
    /// builds, at the same concurrency.
    pub floor: RunStats,
    pub served_over_floor: f64,
    /// The full mix at the highest concurrency again, with hostile clients alongside.
    pub under_hostile: Option<HostileRun>,
    /// Each shape alone at the highest concurrency (`--shapes-alone`), in
    /// [`crate::shapes::Shape::ALL`]'s order; empty when not asked.
    pub alone: Vec<RunReport>,
    pub server_peak_rss_mib: f64,
}

/// A full-mix run measured while clients send hostile documents back to back.
#[derive(Debug, Serialize)]
pub struct HostileRun {
    pub run: RunReport,
    pub hostile: crate::driver::HostileLoad,
}

#[derive(Debug, Serialize)]
pub struct TargetCheck {
    pub target: String,
    pub measured: String,
    pub met: bool,
}

impl Report {
    /// Checks every target the issue sets against what was measured.
    pub fn check_targets(&mut self) {
        let mut t = Vec::new();
        t.push(TargetCheck {
            target: "zero errors in every run".into(),
            measured: format!("{} errors", self.total_errors),
            met: self.total_errors == 0,
        });
        for e in &self.engines {
            let off: Vec<String> = e
                .requests_per_op
                .iter()
                .filter(|r| r.expected != r.measured)
                .map(|r| format!("{} {} (table: {})", r.shape, r.measured, r.expected))
                .collect();
            t.push(TargetCheck {
                target: format!(
                    "{}: store requests per operation equal to the access-pattern table",
                    e.engine
                ),
                measured: if off.is_empty() {
                    format!("all {} shapes equal", e.requests_per_op.len())
                } else {
                    off.join(", ")
                },
                met: off.is_empty(),
            });
        }
        if let Some(e) = self.engines.iter().find(|e| e.engine == "embedded") {
            t.push(TargetCheck {
                target: format!(
                    "embedded: served read throughput at concurrency {} ≥ {TARGET_SERVED_OVER_FLOOR} × the in-process floor",
                    e.served_reads.concurrency
                ),
                measured: format!(
                    "{:.0} / {:.0} ops/s = {:.2}",
                    e.served_reads.stats.ops_per_sec, e.floor.ops_per_sec, e.served_over_floor
                ),
                met: e.served_over_floor >= TARGET_SERVED_OVER_FLOOR,
            });
            if let Some(top) = e.runs.iter().max_by_key(|r| r.concurrency) {
                t.push(TargetCheck {
                    target: format!(
                        "embedded: p99 at concurrency {} < {TARGET_P99_MS} ms (full mix)",
                        top.concurrency
                    ),
                    measured: format!("{:.2} ms", top.stats.latency_ms.p99),
                    met: top.stats.latency_ms.p99 < TARGET_P99_MS,
                });
            }
        }
        for e in &self.engines {
            t.push(TargetCheck {
                target: format!("{}: server peak RSS < {TARGET_RSS_MIB} MB", e.engine),
                measured: format!("{:.1} MiB", e.server_peak_rss_mib),
                met: e.server_peak_rss_mib < TARGET_RSS_MIB,
            });
        }
        if let Some(s) = &self.scaling {
            if let (Some(a), Some(b)) = (s.points.first(), s.points.last()) {
                for (what, growth) in [
                    ("first page", s.first_page_growth),
                    ("deep page", s.deep_page_growth),
                ] {
                    t.push(TargetCheck {
                        target: format!(
                            "{what} latency growth from {} to {} items < {TARGET_GROWTH}×",
                            a.items, b.items
                        ),
                        measured: format!("{growth:.2}×"),
                        met: growth < TARGET_GROWTH,
                    });
                }
            }
        }
        if let Some(h) = &self.hot_org {
            t.push(TargetCheck {
                target: format!(
                    "one organization's writes ≥ {TARGET_ONE_OVER_MANY}× the same spread over {} (item-wcu={})",
                    h.runs.last().map_or(0, |r| r.organizations),
                    h.item_wcu
                ),
                measured: format!("{:.2}×", h.one_over_many),
                met: h.one_over_many >= TARGET_ONE_OVER_MANY,
            });
        }
        self.targets = t;
    }

    pub fn write(&self, out: &Path) -> anyhow::Result<()> {
        std::fs::write(
            out.join("report.json"),
            serde_json::to_string_pretty(self)? + "\n",
        )
        .context("writing report.json")?;
        std::fs::write(out.join("report.md"), self.markdown()).context("writing report.md")?;
        self.chart(&out.join("latency.png"))
            .context("drawing latency.png")?;
        Ok(())
    }

    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let m = &self.machine;
        let d = &self.dataset;
        let _ = writeln!(
            md,
            "# itemgraph benchmark{}\n",
            if self.smoke { " (smoke)" } else { "" }
        );
        let _ = writeln!(
            md,
            "Machine: {} CPUs, {}, {} GiB, {}, load average {} at the start. Data set: {} organizations, {} users, {} tickets, \
             {} orders, {} order lines ({} items, seed {}). Each run: {} s measured after {} s \
             of warm-up; the whole benchmark took {:.0} s.\n",
            m.cpus,
            m.cpu_model,
            m.memory_gib,
            m.os,
            m.load_average_at_start,
            d.organizations,
            d.users,
            d.tickets,
            d.orders,
            d.order_lines,
            d.items,
            d.spec.seed,
            self.duration_secs,
            self.warmup_secs,
            self.wall_seconds
        );
        let _ = writeln!(md, "## Targets\n");
        let _ = writeln!(md, "| target | measured | met |\n|---|---|---|");
        for t in &self.targets {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                t.target,
                t.measured,
                if t.met { "yes" } else { "**no**" }
            );
        }
        let _ = writeln!(
            md,
            "\n## Throughput and latency (full mix: 80% reads, 20% writes)\n"
        );
        let _ = writeln!(
            md,
            "| engine | mix | concurrency | ops/s | p50 ms | p95 ms | p99 ms | max ms | errors | server peak RSS MiB | server / driver CPU ms per op |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for e in &self.engines {
            for r in e.runs.iter().chain(std::iter::once(&e.served_reads)) {
                let s = &r.stats;
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.1} | {:.2} / {:.2} |",
                    e.engine,
                    mix_name(r.mix),
                    r.concurrency,
                    s.ops_per_sec,
                    s.latency_ms.p50,
                    s.latency_ms.p95,
                    s.latency_ms.p99,
                    s.latency_ms.max,
                    s.errors,
                    r.server_peak_rss_mib,
                    r.server_cpu_ms_per_op,
                    r.driver_cpu_ms_per_op
                );
            }
        }
        if self.engines.iter().any(|e| !e.alone.is_empty()) {
            let _ = writeln!(
                md,
                "\n## Each shape alone\n\nOne shape at a time at the highest concurrency \
                 (`--shapes-alone`): what one operation of it costs the server, with the store \
                 requests it makes.\n\n\
                 | engine | shape | concurrency | ops/s | p50 ms | p99 ms | errors | server CPU ms per op | store requests per op |\n\
                 |---|---|---:|---:|---:|---:|---:|---:|---:|"
            );
            for e in &self.engines {
                for r in &e.alone {
                    let requests = e
                        .requests_per_op
                        .iter()
                        .find(|c| c.shape == mix_name(r.mix))
                        .map_or_else(|| "?".to_owned(), |c| c.measured.to_string());
                    let s = &r.stats;
                    let _ = writeln!(
                        md,
                        "| {} | `{}` | {} | {:.0} | {:.2} | {:.2} | {} | {:.2} | {} |",
                        e.engine,
                        mix_name(r.mix),
                        r.concurrency,
                        s.ops_per_sec,
                        s.latency_ms.p50,
                        s.latency_ms.p99,
                        s.errors,
                        r.server_cpu_ms_per_op,
                        requests
                    );
                }
            }
        }
        let _ = writeln!(md, "\n## Under hostile clients (full mix)\n");
        let _ = writeln!(
            md,
            "Clients sending hostile documents back to back (a list nested 2 000 deep, fragments \
             doubling 30 levels deep, 20 000 tokens, a chain of 1 000 fragments) beside the \
             full mix at the highest concurrency, against the same run without them.\n"
        );
        let _ = writeln!(
            md,
            "| engine | concurrency | hostile clients | hostile documents sent | not refused as expected | ops/s clean / hostile | p50 ms clean / hostile | p99 ms clean / hostile | errors |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for e in &self.engines {
            let (Some(h), Some(clean)) = (&e.under_hostile, e.runs.last()) else {
                continue;
            };
            let (c, s) = (&clean.stats, &h.run.stats);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.0} / {:.0} | {:.2} / {:.2} | {:.2} / {:.2} | {} |",
                e.engine,
                h.run.concurrency,
                h.hostile.clients,
                h.hostile.requests,
                h.hostile.unexpected,
                c.ops_per_sec,
                s.ops_per_sec,
                c.latency_ms.p50,
                s.latency_ms.p50,
                c.latency_ms.p99,
                s.latency_ms.p99,
                s.errors
            );
        }
        let _ = writeln!(md, "\n## Overhead against the floor (read mix)\n");
        let _ = writeln!(
            md,
            "| engine | concurrency | served ops/s | floor ops/s (in-process, the chart's requests on the store port) | served / floor | served p50 / p99 ms | floor p50 / p99 ms | floor errors |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for e in &self.engines {
            let s = &e.served_reads.stats;
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {:.0} | {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {} |",
                e.engine,
                e.served_reads.concurrency,
                s.ops_per_sec,
                e.floor.ops_per_sec,
                e.served_over_floor,
                s.latency_ms.p50,
                s.latency_ms.p99,
                e.floor.latency_ms.p50,
                e.floor.latency_ms.p99,
                e.floor.errors
            );
        }
        let _ = writeln!(md, "\n## Store requests per operation\n");
        let mut header = "| shape | what | table |".to_owned();
        let mut rule = "|---|---|---:|".to_owned();
        for e in &self.engines {
            let _ = write!(header, " {} |", e.engine);
            rule.push_str("---:|");
        }
        let _ = writeln!(md, "{header}\n{rule}");
        if let Some(first) = self.engines.first() {
            for (i, r) in first.requests_per_op.iter().enumerate() {
                let _ = write!(md, "| `{}` | {} | {} |", r.shape, r.description, r.expected);
                for e in &self.engines {
                    let m = &e.requests_per_op[i];
                    let mark = if m.measured == m.expected {
                        ""
                    } else {
                        " **≠**"
                    };
                    let _ = write!(md, " {}{mark} |", m.measured);
                }
                let _ = writeln!(md);
            }
        }
        let _ = writeln!(
            md,
            "\n## Latency per shape at the highest concurrency (full mix)\n"
        );
        let _ = writeln!(
            md,
            "| engine | shape | ops | p50 ms | p99 ms | max ms | errors |\n|---|---|---:|---:|---:|---:|---:|"
        );
        for e in &self.engines {
            if let Some(top) = e.runs.iter().max_by_key(|r| r.concurrency) {
                for (shape, s) in &top.stats.shapes {
                    let _ = writeln!(
                        md,
                        "| {} | `{shape}` | {} | {:.2} | {:.2} | {:.2} | {} |",
                        e.engine,
                        s.ops,
                        s.latency_ms.p50,
                        s.latency_ms.p99,
                        s.latency_ms.max,
                        s.errors
                    );
                }
            }
        }
        if let Some(s) = &self.scaling {
            let _ = writeln!(
                md,
                "\n## Scaling: one item collection (a user's tickets), embedded engine, concurrency 1\n"
            );
            let _ = writeln!(
                md,
                "| items | first page p50 / p99 ms | deep page p50 / p99 ms | errors | seeding s |\n|---:|---:|---:|---:|---:|"
            );
            for p in &s.points {
                let _ = writeln!(
                    md,
                    "| {} | {:.3} / {:.3} | {:.3} / {:.3} | {} | {:.1} |",
                    p.items,
                    p.first_page_ms.p50,
                    p.first_page_ms.p99,
                    p.deep_page_ms.p50,
                    p.deep_page_ms.p99,
                    p.errors,
                    p.seed_seconds
                );
            }
            let _ = writeln!(
                md,
                "\nGrowth of p50 from the smallest to the largest collection: first page {:.2}×, deep page {:.2}×.",
                s.first_page_growth, s.deep_page_growth
            );
        }
        if let Some(l) = &self.live {
            let _ = writeln!(
                md,
                "\n## Live updates: {} subscriptions (Server-Sent Events), embedded engine\n",
                l.subscriptions
            );
            let _ = writeln!(
                md,
                "| opened in s | writes (per s) | events expected / delivered | events/s | write→event p50 / p99 / max ms | RSS before / with / peak MiB | errors |\n|---:|---:|---:|---:|---:|---:|---:|"
            );
            let _ = writeln!(
                md,
                "| {:.2} | {} ({:.1}) | {} / {} | {:.0} | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} / {:.1} | {} |",
                l.open_seconds,
                l.writes,
                l.writes as f64 / l.write_seconds,
                l.expected_events,
                l.delivered_events,
                l.events_per_second,
                l.latency_ms.p50,
                l.latency_ms.p99,
                l.latency_ms.max,
                l.rss_before_mib,
                l.rss_with_subscriptions_mib,
                l.peak_rss_mib,
                l.errors
            );
        }
        if let Some(runs) = &self.replicas {
            let _ = writeln!(
                md,
                "\n## Live updates on replicas, DynamoDB Local: one replica reading the stream, and several sharing the relay (Redis)\n"
            );
            let _ = writeln!(
                md,
                "| replicas | subscriptions | writes (per s) | events expected / delivered | events/s | write→event p50 / p99 ms | GetRecords/s (readers) | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|"
            );
            for r in runs {
                let _ = writeln!(
                    md,
                    "| {}{} | {} | {} ({:.1}) | {} / {} | {:.0} | {:.1} / {:.1} | {:.1} ({}) | {} |",
                    r.replicas,
                    if r.relay { " (relay)" } else { "" },
                    r.subscriptions,
                    r.writes,
                    r.writes as f64 / r.write_seconds,
                    r.expected_events,
                    r.delivered_events,
                    r.events_per_second,
                    r.latency_ms.p50,
                    r.latency_ms.p99,
                    r.get_records_per_second,
                    r.stream_readers,
                    r.errors
                );
            }
        }
        if let Some(runs) = &self.tracing {
            let _ = writeln!(
                md,
                "\n## The cost of tracing (OpenTelemetry over OTLP/HTTP), embedded engine, full mix\n"
            );
            let _ = writeln!(
                md,
                "| sampling | concurrency | ops/s | p50 / p99 ms | server CPU ms/op | spans exported / dropped | OTLP exports (KiB) | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|"
            );
            for r in runs {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {:.2} / {:.2} | {:.3} | {:.0} / {:.0} | {} ({:.0}) | {} |",
                    r.sampling,
                    r.concurrency,
                    r.stats.ops_per_sec,
                    r.stats.latency_ms.p50,
                    r.stats.latency_ms.p99,
                    r.server_cpu_ms_per_op,
                    r.spans_exported,
                    r.spans_dropped,
                    r.otlp_posts,
                    r.otlp_bytes as f64 / 1024.0,
                    r.stats.errors
                );
            }
        }
        if let Some(h) = &self.hot_org {
            let _ = writeln!(
                md,
                "\n## One busy organization (writes only, embedded engine, `--faults item-wcu={}`)\n",
                h.item_wcu
            );
            let _ = writeln!(
                md,
                "| organizations | concurrency | writes/s | refused (by code) | p50 / p99 ms |\n|---:|---:|---:|---|---:|"
            );
            for r in &h.runs {
                let refused: Vec<String> =
                    r.refused.iter().map(|(c, n)| format!("{c} {n}")).collect();
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {} | {:.2} / {:.2} |",
                    r.organizations,
                    r.concurrency,
                    r.writes_per_sec,
                    if refused.is_empty() {
                        "none".to_owned()
                    } else {
                        refused.join(", ")
                    },
                    r.latency_ms.p50,
                    r.latency_ms.p99
                );
            }
            let _ = writeln!(
                md,
                "\nOne organization's writes/s over the spread run's: {:.2}.",
                h.one_over_many
            );
        }
        let samples: Vec<String> = self
            .engines
            .iter()
            .flat_map(|e| {
                e.runs
                    .iter()
                    .chain(std::iter::once(&e.served_reads))
                    .flat_map(|r| r.stats.error_samples.iter())
                    .chain(e.floor.error_samples.iter())
                    .map(move |s| format!("- {}: {s}", e.engine))
            })
            .collect();
        if !samples.is_empty() {
            let _ = writeln!(md, "\n## Error samples\n");
            for s in samples {
                let _ = writeln!(md, "{s}");
            }
        }
        md
    }

    /// One panel per engine: p50, p95 and p99 of the full mix against concurrency, on a
    /// logarithmic latency axis.
    fn chart(&self, path: &Path) -> anyhow::Result<()> {
        // A font shipped inside the binary: no system fontconfig needed.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let panels = self.engines.len().max(1);
        let root = BitMapBackend::new(path, (560 * panels as u32, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let areas = root.split_evenly((1, panels));
        for (area, e) in areas.iter().zip(&self.engines) {
            let runs: Vec<&RunReport> = e.runs.iter().collect();
            let max = runs
                .iter()
                .map(|r| r.stats.latency_ms.p99)
                .fold(1.0_f64, f64::max);
            let min = runs
                .iter()
                .map(|r| r.stats.latency_ms.p50)
                .fold(f64::INFINITY, f64::min)
                .clamp(0.01, 1.0);
            let labels: Vec<String> = runs.iter().map(|r| r.concurrency.to_string()).collect();
            let n = runs.len().max(1);
            let mut chart = ChartBuilder::on(area)
                .caption(
                    format!("{}: full-mix latency", e.engine),
                    ("sans-serif", 20),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(56)
                .build_cartesian_2d(
                    -0.3f64..(n as f64 - 0.7),
                    (min / 2.0..max * 2.0).log_scale(),
                )?;
            chart
                .configure_mesh()
                .x_desc("concurrency")
                .y_desc("latency, ms")
                .x_labels(n)
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 0.01 && i >= 0.0 {
                        labels.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .y_label_formatter(&|y| short_number(*y))
                .label_style(("sans-serif", 13))
                .draw()?;
            let series: [(&str, RGBColor, Percentile); 3] = [
                ("p50", BLUE, |r| r.stats.latency_ms.p50),
                ("p95", GREEN, |r| r.stats.latency_ms.p95),
                ("p99", RED, |r| r.stats.latency_ms.p99),
            ];
            for (name, color, f) in series {
                let points: Vec<(f64, f64)> = runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, f(r).max(min / 2.0)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                    .label(name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
                chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .label_font(("sans-serif", 13))
                .draw()?;
        }
        root.present()?;
        Ok(())
    }
}

/// Picks one percentile of a run, for one line of the chart.
type Percentile = fn(&RunReport) -> f64;

fn mix_name(mix: Mix) -> &'static str {
    match mix {
        Mix::Full => "full",
        Mix::Reads => "reads only",
        Mix::Only(shape) => shape.name(),
    }
}

/// `0.25`, `1`, `12.5`: an axis label without trailing zeros.
fn short_number(y: f64) -> String {
    let s = format!("{y:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}
