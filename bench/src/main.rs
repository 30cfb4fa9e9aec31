//! `itemgraph-bench`: the benchmark of issue 6. See `docs/BENCHMARKS.md`.
//!
//! For each engine (embedded, DynamoDB Local) it seeds a deterministic data set through
//! the lib, runs the read mix in-process on the store port with the chart's requests (the floor), starts
//! `itemgraph serve` on a free loopback port, reads what each operation shape costs in
//! store requests (the trace extension), then drives the full mix over HTTP at each
//! concurrency and the read mix at the highest one, reading the server's peak RSS after
//! each run. Then the scaling runs (embedded: one collection of 1k, 10k, 100k items), and
//! the report: `report.json`, `report.md`, `latency.png` in `--out`.
//!
//! `--smoke` runs the same path on a tiny data set in a few seconds (embedded only), so
//! the test suite keeps the driver working (`tests/bench_smoke.rs`).
//!
//! Layout: `dataset` (records and seeding), `shapes` (the operation mix), `driver` (the
//! HTTP load), `floor` (the in-process read mix), `server` (the child process),
//! `scaling`, `stats` (percentiles), `report` (JSON, Markdown, PNG).

mod dataset;
mod driver;
mod floor;
mod hot_org;
mod live;
// The built-in design's records, shared with the tests: rendered by the chart.
#[path = "../../tests/common/records.rs"]
mod records;
mod replicas;
mod report;
mod scaling;
mod server;
mod shapes;
mod stats;
mod tracing_cost;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};

use itemgraph::store::dynamo::{DynamoOptions, DynamoStore};
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

use crate::dataset::{Dataset, DatasetSpec, Seeding};
use crate::driver::{Target, Window};
use crate::report::{
    DatasetReport, EngineReport, HostileRun, Machine, Report, RequestCount, RunReport,
};
use crate::server::{Backend, Server};
use crate::shapes::{Mix, Shape};

/// The cursor secret the bench gives the server, so it can sign deep-page cursors itself.
const CURSOR_SECRET: &str = "itemgraph-bench-cursor-secret-0123456789abcdef";

/// The fewest operations each run of `--smoke` measures, however long they take: what the
/// smoke test asserts of a run (it measured some) holds on a machine of any speed.
const SMOKE_MIN_OPS: u64 = 10;

/// How long a smoke run may take to measure them before it fails, saying so.
const SMOKE_DEADLINE: Duration = Duration::from_secs(120);

/// Benchmarks `itemgraph serve` over loopback HTTP and writes a report.
#[derive(Debug, Parser)]
#[command(name = "itemgraph-bench", about)]
struct Args {
    /// The `itemgraph` binary to serve with; default: `itemgraph` next to this binary.
    #[arg(long, value_name = "PATH")]
    server: Option<PathBuf>,
    /// Where the report (and the run's scratch files) go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// A few seconds on a tiny data set, embedded engine only (unless --engines says
    /// otherwise): keeps the driver working, measures nothing worth reading.
    #[arg(long)]
    smoke: bool,
    /// Seconds measured per run.
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds of unmeasured load before each run.
    #[arg(long)]
    warmup: Option<f64>,
    /// Concurrencies (closed-loop workers) of the full-mix runs; the highest also runs
    /// the read mix served and in-process.
    #[arg(long, value_delimiter = ',')]
    concurrency: Option<Vec<usize>>,
    /// Engines to measure.
    #[arg(long, value_delimiter = ',', value_enum)]
    engines: Option<Vec<Engine>>,
    /// DynamoDB Local's endpoint (required with `--engines dynamodb`); `scripts/bench`
    /// starts one and passes it.
    #[arg(long, env = "ITEMGRAPH_BENCH_DYNAMODB_ENDPOINT", value_name = "URL")]
    dynamodb_endpoint: Option<String>,
    /// Organizations in the data set (each 20 users, `--tickets-per-org` tickets, 10
    /// orders).
    #[arg(long)]
    orgs: Option<usize>,
    /// Tickets per organization, half of them requested by one heavy user.
    #[arg(long)]
    tickets_per_org: Option<usize>,
    /// Collection sizes of the scaling runs (0 or empty: skip them).
    #[arg(long, value_delimiter = ',')]
    scaling: Option<Vec<usize>>,
    /// Seconds measured per scaling point (first page and deep page each).
    #[arg(long)]
    scaling_seconds: Option<f64>,
    /// Seed of the data set and of every worker's random stream.
    #[arg(long, default_value_t = 6)]
    seed: u64,
    /// Clients sending hostile documents back to back during one more full-mix run at the
    /// highest concurrency, measured beside the clean one (0: skip that run).
    #[arg(long, default_value_t = 2)]
    hostile: usize,
    /// Subscriptions held open on one embedded server while tickets are written (0:
    /// skip the live updates run).
    #[arg(long)]
    subscriptions: Option<usize>,
    /// Tickets written per second during the live updates run.
    #[arg(long, default_value_t = 20.0)]
    subscription_writes_per_second: f64,
    /// Replica counts of the live updates run on DynamoDB Local, measured beside each other:
    /// 1 reads the table's stream itself, more share the change stream's relay through a
    /// Redis server the run starts (`redis-server`). The flag with no count
    /// (`--live-replicas`) skips it; so does `--smoke`.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "1,4")]
    live_replicas: Vec<usize>,
    /// Subscriptions over all replicas in that run.
    #[arg(long, default_value_t = 400)]
    replica_subscriptions: usize,
    /// Skips the runs that measure what OpenTelemetry tracing costs (embedded engine).
    #[arg(long)]
    skip_tracing: bool,
    /// Seconds measured of each shape run alone, at the highest concurrency, after the
    /// mixes: the server's CPU per operation of each shape. 0 (the default) skips them.
    #[arg(long, default_value_t = 0)]
    shapes_alone: u64,
    /// The write units a second one item takes in the busy-organization runs
    /// (`--faults item-wcu=N`): AWS's own figure by default, which holds one item (the
    /// layout before counter shards) to a fourteenth of what this machine writes spread
    /// over many organizations; 0 skips those runs.
    #[arg(long, default_value_t = 1000.0)]
    hot_org_wcu: f64,
    /// Organizations the busy-organization runs spread the same writes over.
    #[arg(long)]
    hot_org_orgs: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Engine {
    Embedded,
    #[value(name = "dynamodb")]
    DynamoDb,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Embedded => "embedded",
            Engine::DynamoDb => "dynamodb",
        }
    }
}

/// The settings of one benchmark, flags over the full or smoke defaults.
struct Plan {
    duration: Duration,
    warmup: Duration,
    /// The fewest operations a run measures (the smoke run's; 0: its time alone).
    min_ops: u64,
    concurrency: Vec<usize>,
    engines: Vec<Engine>,
    spec: DatasetSpec,
    scaling: Vec<usize>,
    scaling_seconds: f64,
}

impl Plan {
    fn from(args: &Args) -> anyhow::Result<Plan> {
        let smoke = args.smoke;
        let secs = |v: Option<f64>, full: f64, smoke_v: f64| {
            Duration::from_secs_f64(v.unwrap_or(if smoke { smoke_v } else { full }))
        };
        let mut concurrency = args.concurrency.clone().unwrap_or_else(|| {
            if smoke {
                vec![1, 4]
            } else {
                vec![1, 16, 64]
            }
        });
        concurrency.retain(|c| *c > 0);
        concurrency.sort_unstable();
        concurrency.dedup();
        if concurrency.is_empty() {
            bail!("--concurrency needs at least one value above 0");
        }
        let engines = args.engines.clone().unwrap_or_else(|| {
            if smoke {
                vec![Engine::Embedded]
            } else {
                vec![Engine::Embedded, Engine::DynamoDb]
            }
        });
        let orgs = args.orgs.unwrap_or(if smoke { 6 } else { 300 });
        let tickets = args.tickets_per_org.unwrap_or(if smoke { 60 } else { 100 });
        let mut scaling = args.scaling.clone().unwrap_or_else(|| {
            if smoke {
                vec![100, 400]
            } else {
                vec![1_000, 10_000, 100_000]
            }
        });
        scaling.retain(|n| *n > dataset::PAGE + 1);
        Ok(Plan {
            duration: secs(args.duration, 20.0, 0.6),
            warmup: secs(args.warmup, 3.0, 0.2),
            min_ops: if smoke { SMOKE_MIN_OPS } else { 0 },
            concurrency,
            engines,
            spec: DatasetSpec::main(args.seed, orgs, tickets),
            scaling,
            scaling_seconds: args
                .scaling_seconds
                .unwrap_or(if smoke { 0.3 } else { 4.0 }),
        })
    }

    /// The window of a run measured for `duration`: the smoke run's goes on past it for
    /// its fewest operations, within [`SMOKE_DEADLINE`] (more, when the run itself is
    /// longer).
    fn window(&self, duration: Duration) -> Window {
        Window {
            warmup: self.warmup,
            duration,
            min_ops: self.min_ops,
            deadline: (self.warmup + duration).max(SMOKE_DEADLINE),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    let machine = Machine::this();
    let plan = Plan::from(&args)?;
    let server_exe = match &args.server {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("this binary has no directory")?
            .join("itemgraph"),
    };
    anyhow::ensure!(
        server_exe.is_file(),
        "no server binary at {} (build it, or pass --server)",
        server_exe.display()
    );
    let out = args.out.clone();
    let work = out.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let ds = Arc::new(Dataset::generate(plan.spec.clone())?);
    eprintln!(
        "itemgraph-bench: data set of {} items ({} organizations, {} tickets)",
        ds.item_count(),
        ds.data.organizations.len(),
        ds.data.tickets.len()
    );
    let deep = Arc::new(shapes::deep_cursors(&ds, CURSOR_SECRET));
    let client = driver::client()?;

    let mut engines = Vec::new();
    for &engine in &plan.engines {
        eprintln!("itemgraph-bench: engine {}", engine.name());
        let r = bench_engine(
            engine,
            &args,
            &plan,
            &server_exe,
            &work,
            &ds,
            &deep,
            &client,
        )
        .await
        .with_context(|| format!("benchmarking the {} engine", engine.name()))?;
        engines.push(r);
    }

    let scaling = if plan.engines.contains(&Engine::Embedded) && !plan.scaling.is_empty() {
        eprintln!("itemgraph-bench: scaling {:?}", plan.scaling);
        Some(
            scaling::run(
                &server_exe,
                &work,
                &plan.scaling,
                plan.scaling_seconds,
                args.seed,
                CURSOR_SECRET,
            )
            .await?,
        )
    } else {
        None
    };

    let subscriptions = args
        .subscriptions
        .unwrap_or(if args.smoke { 20 } else { 1000 });
    let live = if plan.engines.contains(&Engine::Embedded) && subscriptions > 0 {
        eprintln!("itemgraph-bench: live updates, {subscriptions} subscriptions");
        Some(
            live::run(
                &server_exe,
                &work,
                subscriptions,
                plan.duration.as_secs_f64(),
                args.subscription_writes_per_second,
                CURSOR_SECRET,
            )
            .await?,
        )
    } else {
        None
    };

    let replicas = match (
        &args.dynamodb_endpoint,
        plan.engines.contains(&Engine::DynamoDb),
    ) {
        (Some(endpoint), true) if !args.smoke && !args.live_replicas.is_empty() => {
            eprintln!(
                "itemgraph-bench: live updates on {:?} replicas, DynamoDB Local",
                args.live_replicas
            );
            Some(
                replicas::run(
                    &server_exe,
                    &work,
                    endpoint,
                    &args.live_replicas,
                    args.replica_subscriptions,
                    plan.duration.as_secs_f64(),
                    args.subscription_writes_per_second,
                    CURSOR_SECRET,
                )
                .await?,
            )
        }
        _ => None,
    };

    let tracing = if plan.engines.contains(&Engine::Embedded) && !args.skip_tracing {
        eprintln!("itemgraph-bench: the cost of tracing (OpenTelemetry over OTLP)");
        let target = Target {
            client: client.clone(),
            url: String::new(),
            dataset: ds.clone(),
            deep_cursors: deep.clone(),
        };
        Some(
            tracing_cost::run(
                &server_exe,
                &work.join("tracing.redb"),
                &out,
                &target,
                *plan.concurrency.last().expect("checked non-empty"),
                plan.window(plan.duration),
                args.seed,
                CURSOR_SECRET,
            )
            .await?,
        )
    } else {
        None
    };

    let hot_org = if plan.engines.contains(&Engine::Embedded) && args.hot_org_wcu > 0.0 {
        let orgs = args
            .hot_org_orgs
            .unwrap_or(if args.smoke { 20 } else { 1000 });
        eprintln!(
            "itemgraph-bench: one busy organization against {orgs}, item-wcu={}",
            args.hot_org_wcu
        );
        Some(
            hot_org::run(
                &server_exe,
                &work,
                &out,
                &client,
                orgs,
                *plan.concurrency.last().expect("checked non-empty"),
                plan.duration,
                args.hot_org_wcu,
                args.seed,
                CURSOR_SECRET,
            )
            .await?,
        )
    } else {
        None
    };

    let total_errors = engines
        .iter()
        .map(|e: &EngineReport| {
            e.runs.iter().map(|r| r.stats.errors).sum::<u64>()
                + e.served_reads.stats.errors
                + e.floor.errors
                + e.under_hostile
                    .as_ref()
                    .map_or(0, |h| h.run.stats.errors + h.hostile.unexpected)
        })
        .sum::<u64>()
        + scaling
            .as_ref()
            .map_or(0, |s| s.points.iter().map(|p| p.errors).sum::<u64>())
        + live.as_ref().map_or(0, |l| l.errors)
        + replicas.iter().flatten().map(|r| r.errors).sum::<u64>()
        + tracing
            .iter()
            .flatten()
            .map(|r| r.stats.errors)
            .sum::<u64>()
        + hot_org.as_ref().map_or(0, |h| h.unexpected);
    let d = &ds.data;
    let mut report = Report {
        generated_unix_secs: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        smoke: args.smoke,
        machine,
        dataset: DatasetReport {
            spec: plan.spec.clone(),
            organizations: d.organizations.len(),
            users: d.users.len(),
            tickets: d.tickets.len(),
            orders: d.orders.len(),
            order_lines: d.lines.len(),
            items: ds.item_count(),
        },
        duration_secs: plan.duration.as_secs_f64(),
        warmup_secs: plan.warmup.as_secs_f64(),
        engines,
        scaling,
        live,
        replicas,
        tracing,
        hot_org,
        targets: Vec::new(),
        total_errors,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    report.check_targets();
    report.write(&out)?;
    let _ = std::fs::remove_dir_all(&work);
    print!("{}", report.markdown());
    eprintln!(
        "\nitemgraph-bench: report in {0}/report.json, {0}/report.md, {0}/latency.png ({1:.0} s)",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Everything measured on one engine.
#[allow(clippy::too_many_arguments)]
async fn bench_engine(
    engine: Engine,
    args: &Args,
    plan: &Plan,
    server_exe: &Path,
    work: &Path,
    ds: &Arc<Dataset>,
    deep: &Arc<Vec<String>>,
    client: &reqwest::Client,
) -> anyhow::Result<EngineReport> {
    let top = *plan.concurrency.last().expect("checked non-empty");
    let data_file = work.join("bench.redb");
    // A fresh table per run, so an earlier run's writes never count.
    let table = format!("itemgraph-bench-{}", std::process::id());
    let endpoint = match engine {
        Engine::Embedded => None,
        Engine::DynamoDb => Some(args.dynamodb_endpoint.clone().context(
            "--engines dynamodb needs --dynamodb-endpoint (scripts/bench starts DynamoDB Local)",
        )?),
    };

    // Seed, then the floor, in this process, before the server opens the store (the
    // embedded file admits one process at a time).
    let store: Arc<dyn Store> = match engine {
        Engine::Embedded => {
            let _ = std::fs::remove_file(&data_file);
            Arc::new(EmbeddedStore::open(
                &data_file,
                "itemgraph",
                itemgraph::chart::builtin().table_schema(),
            )?)
        }
        Engine::DynamoDb => Arc::new(
            DynamoStore::connect(
                DynamoOptions {
                    table: table.clone(),
                    endpoint: endpoint.clone(),
                    region: Some("us-east-1".into()),
                    // Seeding sends TransactWriteItems of 100 items, which DynamoDB Local
                    // can take seconds over on a busy 2-core machine.
                    operation_timeout: Duration::from_secs(120),
                    operation_attempt_timeout: Duration::from_secs(60),
                    // No stream: DynamoDB Local describes every stream on every request
                    // (in one SQLite thread), so a stream holding the seeded data set
                    // would slow every request measured here.
                    stream: false,
                    ..DynamoOptions::default()
                },
                itemgraph::chart::builtin().table_schema(),
            )
            .await,
        ),
    };
    let how = match engine {
        Engine::Embedded => Seeding::Transactions,
        Engine::DynamoDb => Seeding::Puts(16),
    };
    let seed_seconds = ds.seed(store.clone(), how).await?;
    eprintln!("  seeded {} items in {seed_seconds:.1} s", ds.item_count());
    let floor = floor::run(
        store.clone(),
        ds.clone(),
        top,
        plan.window(plan.duration),
        args.seed,
    )
    .await?;
    eprintln!(
        "  floor (in-process read mix, concurrency {top}): {:.0} ops/s, {} errors",
        floor.ops_per_sec, floor.errors
    );
    drop(store);

    let backend = match engine {
        Engine::Embedded => Backend::Embedded { data: &data_file },
        Engine::DynamoDb => Backend::DynamoDb {
            endpoint: endpoint.as_deref().expect("set above"),
            table: &table,
        },
    };
    let log = work
        .parent()
        .unwrap_or(work)
        .join(format!("server-{}.log", engine.name()));
    let server = Server::start(server_exe, backend, CURSOR_SECRET, log).await?;
    let target = Arc::new(Target {
        client: client.clone(),
        url: server.url.clone(),
        dataset: ds.clone(),
        deep_cursors: deep.clone(),
    });

    // Worker indexes 0.. are the load's; the trace pass writes as a worker of its own.
    let counts = driver::trace_counts(&target, top + 1, args.seed).await?;
    let requests_per_op = Shape::ALL
        .iter()
        .map(|s| RequestCount {
            shape: s.name().to_owned(),
            description: s.describe().to_owned(),
            expected: s.expected_requests(),
            measured: counts.get(s).copied().unwrap_or(0),
        })
        .collect();

    let mib = |kib: u64| kib as f64 / 1024.0;
    let mut runs = Vec::new();
    // CPU per operation of the server and of this process over one run: its share of the
    // CPU time is the seconds it measured over those it ran (a smoke run may have gone on
    // past its window).
    let cpu_per_op = |before: (Duration, Duration), stats: &stats::RunStats| {
        let after = (
            server.cpu_time().unwrap_or_default(),
            server::cpu_time_of("/proc/self/stat").unwrap_or_default(),
        );
        let measured_share = stats.seconds / (plan.warmup.as_secs_f64() + stats.seconds);
        let per_op = |a: Duration, b: Duration| {
            (a.saturating_sub(b)).as_secs_f64() * 1000.0 * measured_share
                / (stats.ops.max(1) as f64)
        };
        (per_op(after.0, before.0), per_op(after.1, before.1))
    };
    let cpu_now = || {
        (
            server.cpu_time().unwrap_or_default(),
            server::cpu_time_of("/proc/self/stat").unwrap_or_default(),
        )
    };
    for &c in &plan.concurrency {
        let before = cpu_now();
        let stats = driver::run(
            target.clone(),
            Mix::Full,
            c,
            plan.window(plan.duration),
            args.seed,
        )
        .await?;
        let (server_cpu, driver_cpu) = cpu_per_op(before, &stats);
        let (peak, _) = server.memory_kib()?;
        eprintln!(
            "  full mix, concurrency {c}: {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms, {} errors",
            stats.ops_per_sec, stats.latency_ms.p50, stats.latency_ms.p99, stats.errors
        );
        runs.push(RunReport {
            mix: Mix::Full,
            concurrency: c,
            stats,
            server_peak_rss_mib: mib(peak),
            server_cpu_ms_per_op: server_cpu,
            driver_cpu_ms_per_op: driver_cpu,
        });
    }
    let under_hostile = if args.hostile > 0 {
        let before = cpu_now();
        let until = Instant::now() + plan.warmup + plan.duration;
        let (stats, hostile) = tokio::join!(
            driver::run(
                target.clone(),
                Mix::Full,
                top,
                plan.window(plan.duration),
                args.seed,
            ),
            driver::hostile(target.clone(), args.hostile, until)
        );
        let stats = stats?;
        let (server_cpu, driver_cpu) = cpu_per_op(before, &stats);
        let (peak, _) = server.memory_kib()?;
        eprintln!(
            "  full mix, concurrency {top}, {} hostile clients: {:.0} ops/s, p99 {:.2} ms, {} errors; {} hostile documents, {} not refused as expected",
            hostile.clients, stats.ops_per_sec, stats.latency_ms.p99, stats.errors, hostile.requests, hostile.unexpected
        );
        Some(HostileRun {
            run: RunReport {
                mix: Mix::Full,
                concurrency: top,
                stats,
                server_peak_rss_mib: mib(peak),
                server_cpu_ms_per_op: server_cpu,
                driver_cpu_ms_per_op: driver_cpu,
            },
            hostile,
        })
    } else {
        None
    };
    let before = cpu_now();
    let reads = driver::run(
        target.clone(),
        Mix::Reads,
        top,
        plan.window(plan.duration),
        args.seed,
    )
    .await?;
    let (reads_server_cpu, reads_driver_cpu) = cpu_per_op(before, &reads);
    let (peak, _) = server.memory_kib()?;
    eprintln!(
        "  read mix, concurrency {top}: {:.0} ops/s (floor {:.0}), {} errors",
        reads.ops_per_sec, floor.ops_per_sec, reads.errors
    );
    let mut alone = Vec::new();
    if args.shapes_alone > 0 {
        for shape in Shape::ALL {
            eprintln!("  alone: {}, concurrency {top}", shape.name());
            let before = cpu_now();
            let measured = Duration::from_secs(args.shapes_alone);
            let stats = driver::run(
                target.clone(),
                Mix::Only(shape),
                top,
                plan.window(measured),
                args.seed,
            )
            .await?;
            // As `cpu_per_op`, over this run's own seconds.
            let share = stats.seconds / (plan.warmup.as_secs_f64() + stats.seconds);
            let after = cpu_now();
            let per_op = |a: Duration, b: Duration| {
                a.saturating_sub(b).as_secs_f64() * 1000.0 * share / (stats.ops.max(1) as f64)
            };
            let (peak, _) = server.memory_kib()?;
            eprintln!(
                "    {:.0} ops/s, {:.2} ms of server CPU per operation, {} errors",
                stats.ops_per_sec,
                per_op(after.0, before.0),
                stats.errors
            );
            alone.push(RunReport {
                mix: Mix::Only(shape),
                concurrency: top,
                server_peak_rss_mib: mib(peak),
                server_cpu_ms_per_op: per_op(after.0, before.0),
                driver_cpu_ms_per_op: per_op(after.1, before.1),
                stats,
            });
        }
    }
    server.stop().await?;
    if engine == Engine::DynamoDb {
        // Free DynamoDB Local's memory for what runs next.
        let store = DynamoStore::connect(
            DynamoOptions {
                table: table.clone(),
                endpoint,
                region: Some("us-east-1".into()),
                ..DynamoOptions::default()
            },
            itemgraph::chart::builtin().table_schema(),
        )
        .await;
        let _ = store.delete_table().await;
    } else {
        let _ = std::fs::remove_file(&data_file);
    }
    let served_over_floor = if floor.ops_per_sec > 0.0 {
        reads.ops_per_sec / floor.ops_per_sec
    } else {
        0.0
    };
    Ok(EngineReport {
        engine: engine.name().to_owned(),
        seed_seconds,
        requests_per_op,
        runs,
        served_reads: RunReport {
            mix: Mix::Reads,
            concurrency: top,
            stats: reads,
            server_peak_rss_mib: mib(peak),
            server_cpu_ms_per_op: reads_server_cpu,
            driver_cpu_ms_per_op: reads_driver_cpu,
        },
        floor,
        served_over_floor,
        under_hostile,
        alone,
        server_peak_rss_mib: mib(peak),
    })
}
