//! The `itemgraph` binary: parse the command line, open the store, run the subcommand.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

use itemgraph::chart::data::{self, Seeded};
use itemgraph::config::{ChartCommand, Cli, Command, SeedMode, StoreArgs, StoreKind};
use itemgraph::{check, graphql, http};

mod tables;
use tables::{create_table, create_tables, holds_items, seed_workbench};

/// jemalloc rather than the system allocator: see its entry in Cargo.toml.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Stack of every runtime worker thread. The document limits (`--max-nesting`,
/// `--max-tokens`, `--max-fields`) bound every recursion over what a client sends before
/// it runs; this is the second line of defence behind them, four times tokio's 2 MiB
/// default (address space only: pages are committed as they are touched).
const WORKER_STACK_BYTES: usize = 8 * 1024 * 1024;

/// How many tasks a busy worker polls between two looks at the I/O and timer drivers
/// (tokio's default is 61; a worker with nothing to run looks at once). Under sustained load
/// the requests already running are answered before more are taken in, in larger batches:
/// at concurrency 64 the p99 fell from 29.8 to 26.6 ms (the mean of five runs each; writes
/// most), throughput unchanged (docs/BENCHMARKS.md). The price: on a saturated worker a
/// timer fires up to this many polls late (about 50 ms at 0.1 ms a poll), far inside every
/// deadline the server keeps (seconds).
const EVENT_INTERVAL: u32 = 512;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .event_interval(EVENT_INTERVAL)
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
        .context("starting the runtime")?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let command = Cli::parse().into_command();
    if let Command::Schema(args) = &command {
        // Before logging starts: stdout carries the SDL and nothing else.
        return print_schema(args.chart.as_deref());
    }
    if let Command::Chart(ChartCommand::Check {
        file,
        deny_warnings,
        format,
    }) = &command
    {
        // No log: stdout carries the verdict and the advice, stderr the refusals.
        return check_chart(file.as_deref(), *deny_warnings, *format);
    }
    if let Command::Chart(ChartCommand::Explain {
        file,
        item_bytes,
        format,
    }) = &command
    {
        // No log: stdout carries the tables, stderr a refusal.
        return explain_chart(file.as_deref(), *item_bytes, *format);
    }
    if let Command::Chart(ChartCommand::Import {
        model,
        output,
        table,
    }) = &command
    {
        // No log: the chart goes to stdout (or the file), the TODOs to stderr.
        return import_model(model, output.as_deref(), table.as_deref());
    }
    if let Command::Chart(ChartCommand::Export { file, output }) = &command {
        return export_chart(file.as_deref(), output.as_deref());
    }
    if let Command::Token(args) = &command {
        // Before logging starts too: stdout carries the token and nothing else.
        println!("{}", args.token()?);
        return Ok(());
    }
    if let Command::Health(args) = &command {
        // No log: one line on stderr when unhealthy, the exit status says the rest.
        let target = args.target();
        return http::probe_health(target, args.timeout)
            .await
            .map_err(|reason| anyhow::anyhow!("unhealthy: {reason}"));
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    match command {
        Command::Serve(args) => {
            // Every refusal of the configuration before the store is touched.
            let mut options = args.options()?;
            options.connections.max_connections =
                http::fit_to_open_files(options.connections.max_connections);
            let state = args.app_state(options).await?;
            let builtin =
                std::sync::Arc::ptr_eq(&args.store.load_chart()?, &itemgraph::chart::builtin());
            if args.seed_mode() == SeedMode::Demo && !builtin {
                // Another chart's demo data is its samples, into a table of its own: a
                // table that already holds items (one being adopted) is left as it is.
                let chart = args.store.load_chart()?;
                let store = state.store();
                let created = create_table(store.as_ref(), &chart).await?;
                if !created && holds_items(store.as_ref(), &chart).await? {
                    tracing::warn!(
                        "the table holds items: not seeding the chart's samples into it \
                         (`itemgraph seed` does, where their keys are free)"
                    );
                } else {
                    let written = itemgraph::chart::samples::seed(store.as_ref(), &chart)
                        .await
                        .context("seeding the chart's samples")?;
                    tracing::info!(
                        written,
                        of = chart.samples.len(),
                        "the chart's samples loaded"
                    );
                }
            } else if args.seed_mode() == SeedMode::Demo {
                let chart = args.store.load_chart()?;
                match data::load_if_absent(
                    state.store().as_ref(),
                    &chart,
                    data::builtin_demo(),
                    false,
                )
                .await
                .context("seeding the demo data")?
                {
                    Seeded::Now(report) => tracing::info!(%report, "demo data loaded"),
                    Seeded::Already => tracing::info!("demo data already present"),
                    Seeded::NotEmpty => tracing::warn!(
                        "the table holds other items: not seeding the demo data into it"
                    ),
                }
            }
            let chart = args.store.load_chart()?;
            for t in 0..chart.tables.len() {
                if chart.tables[t].time_to_live.is_none() {
                    continue;
                }
                // DynamoDB deletes expired items on its own; the embedded engine does when
                // asked, here every minute. Reads hide them meanwhile.
                let store = chart.store_of(state.store(), t)?;
                tokio::spawn(itemgraph::store::expire_every(
                    store,
                    std::time::Duration::from_secs(60),
                ));
            }
            let listener = TcpListener::bind(args.listen)
                .await
                .with_context(|| format!("binding {}", args.listen))?;
            if let Some(addr) = args.ops.metrics_listen {
                let metrics = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding {addr} for metrics"))?;
                // Built (and the recorder installed) before the API listens, so the first
                // request is counted; inside the task below it could run after that request.
                let app = http::metrics_app();
                tracing::info!(addr = %metrics.local_addr()?, "metrics served");
                // It holds no request worth finishing: it ends with the process.
                tokio::spawn(async move {
                    if let Err(error) = axum::serve(metrics, app).await {
                        tracing::error!(%error, "the metrics listener failed");
                    }
                });
            }
            // Signal handlers first: a SIGTERM right after "listening" must stop gracefully.
            let shutdown = shutdown_signal();
            let relayer = state.relay().and_then(|log| {
                let store = state.store().clone();
                let stream = state.change_stream()?;
                let relayer = itemgraph::live::relayer::Relayer {
                    lease: itemgraph::live::lease::Lease::new(
                        itemgraph::live::relayer::LEASE_NAME,
                        itemgraph::live::relayer::replica_id(),
                        args.live.relay_lease(),
                    ),
                    store,
                    design: state.design(),
                    stream,
                    log,
                    poll: args.live.options().poll,
                };
                let stop = Arc::new(tokio::sync::Notify::new());
                let stopped = stop.clone();
                let task = tokio::spawn(relayer.run(async move { stopped.notified().await }));
                Some((stop, task))
            });
            tracing::info!(addr = %listener.local_addr()?, "listening");
            let telemetry = state.telemetry().cloned();
            http::serve(listener, state, shutdown).await?;
            if let Some((stop, task)) = relayer {
                // Released, so another replica takes the relay over at once.
                stop.notify_one();
                let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
            }
            if let Some(telemetry) = telemetry {
                // The last requests' spans, for `--otel-shutdown-timeout` at most, before
                // the process ends.
                telemetry.shutdown().await;
            }
            tracing::info!("stopped");
        }
        Command::CreateTable(args) => {
            let store = args.open().await?;
            let chart = args.load_chart()?;
            let created = create_table(store.as_ref(), &chart).await?;
            tracing::info!(store = %args.describe(), created, "table ready");
        }
        Command::Seed(args) => {
            let chart = args.store.load_chart()?;
            // The table as it stores items, and in the chart's form (one engine: an embedded
            // file opens once).
            let raw = args.store.open_as_stored().await?;
            let store = itemgraph::store::stored::wrap(raw.clone(), &chart);
            let describe = args.store.describe();
            if let Some(path) = &args.workbench {
                // The model's items are as the table stores them: written below the chart's
                // forms.
                create_table(store.as_ref(), &chart).await?;
                let (written, of) = seed_workbench(raw.as_ref(), &chart, path).await?;
                tracing::info!(store = %describe, written, of, "the model's items loaded (none overwritten)");
            } else if !builtin_chart(&args.store)? {
                // Another chart's demo data is its samples.
                create_table(store.as_ref(), &chart).await?;
                let written = itemgraph::chart::samples::seed(store.as_ref(), &chart)
                    .await
                    .context("seeding the chart's samples")?;
                tracing::info!(store = %describe, written, of = chart.samples.len(), "the chart's samples loaded (none overwritten)");
            } else {
                match data::load_if_absent(store.as_ref(), &chart, data::builtin_demo(), args.force)
                    .await
                    .context("seeding the demo data")?
                {
                    Seeded::Now(report) => {
                        tracing::info!(store = %describe, %report, "demo data loaded")
                    }
                    Seeded::Already => {
                        tracing::info!(store = %describe, "demo data already present")
                    }
                    Seeded::NotEmpty => anyhow::bail!(
                        "{describe} holds other items: not seeding the demo data into it \
                         (--force seeds it anyway, never overwriting an item)"
                    ),
                }
            }
            if let Some(each) = args.generate {
                let generated = itemgraph::graphql::generate::seed(store, chart, each)
                    .await
                    .context("generating the chart's data")?;
                for g in &generated {
                    tracing::info!(
                        store = %describe,
                        entity = %g.entity,
                        mutation = %g.mutation,
                        made = g.made,
                        refused = g.refused,
                        first_refusal = g.first_refusal.as_deref().unwrap_or("none"),
                        "generated"
                    );
                }
                if generated.iter().all(|g| g.made == 0) && each > 0 {
                    anyhow::bail!("nothing generated: the chart's creates were all refused or could not be made (see above)");
                }
            }
        }
        Command::Check(args) => run_check(&args.store, args.max_rcu).await?,
        Command::Snapshot(args) => run_snapshot(&args).await?,
        Command::Migrate(args) => {
            let store = args.store.open().await?;
            let options = itemgraph::migrate::Options {
                dry_run: args.dry_run,
                segments: args.segments,
                page_size: args.page_size,
                max_wcu: args.max_wcu,
                progress: true,
            };
            let chart = args.store.load_chart()?;
            let report = itemgraph::migrate::run_chart(store.as_ref(), &chart, &options)
                .await
                .with_context(|| {
                    format!(
                        "migrating {} (run again to resume from the checkpoints)",
                        args.store.describe()
                    )
                })?;
            for step in &report.plan {
                println!("plan: {step}");
            }
            anyhow::ensure!(
                !report.refused,
                "the chart's plan has a step migrate does not make (above): nothing written"
            );
            for migration in &report.migrations {
                println!("{migration}");
            }
            for skipped in &report.skipped {
                println!("left: {skipped}");
            }
            println!(
                "{report}{}",
                if args.dry_run {
                    " (dry run: nothing written)"
                } else {
                    ""
                }
            );
        }
        Command::Schema(_) | Command::Token(_) | Command::Health(_) | Command::Chart(_) => {
            unreachable!("handled before logging starts")
        }
    }
    Ok(())
}

/// `itemgraph check`: one line per violation on stdout, then the summary line. Any
/// violation is an error, so the process exits 1.
/// Whether the store's chart is the built-in one (`--chart` absent, or a file holding it).
fn builtin_chart(args: &StoreArgs) -> anyhow::Result<bool> {
    Ok(std::sync::Arc::ptr_eq(
        &args.load_chart()?,
        &itemgraph::chart::builtin(),
    ))
}

async fn run_check(args: &StoreArgs, max_rcu: Option<u64>) -> anyhow::Result<()> {
    let store = args.open().await?;
    let chart = args.load_chart()?;
    // The table's keys and indexes first, as DynamoDB describes them: items of a table
    // keyed otherwise are not read against the chart.
    for (t, one) in chart.stores(store.as_ref())?.iter() {
        let Some(shape) = one.describe_table().await?.and_then(|d| d.shape) else {
            continue;
        };
        let differences = chart.schema_of(t).differences(&shape);
        let mut out = std::io::stdout().lock();
        // A chart of one table says `table:`, as it always has; of several, which.
        let label = match chart.several_tables() {
            false => "table".to_owned(),
            true => format!("table {}", one.table_name()),
        };
        for d in &differences {
            writeln!(out, "{label}: {}", d.text)?;
        }
        anyhow::ensure!(
            differences.iter().all(|d| !d.fatal),
            "{}: the table is not as the chart says (above); its items were not read",
            args.describe()
        );
    }
    let report = match max_rcu {
        Some(rcu) => check::check_chart_within(store.as_ref(), &chart, rcu).await,
        None if std::sync::Arc::ptr_eq(&chart, &itemgraph::chart::builtin()) => {
            check::check(store.as_ref()).await
        }
        None => check::check_chart(store.as_ref(), &chart).await,
    }
    .with_context(|| format!("checking {}", args.describe()))?;
    let mut out = std::io::stdout().lock();
    for violation in &report.violations {
        writeln!(out, "{violation}")?;
    }
    // Adopting a table: how far it is from the chart, kind by kind.
    let counts = report.counts();
    if max_rcu.is_some() && !counts.is_empty() {
        let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(out, "by kind: {}", parts.join(", "))?;
    }
    writeln!(out, "{report}")?;
    out.flush()?;
    anyhow::ensure!(
        report.is_clean(),
        "{} violation(s) in {}",
        report.violations.len(),
        args.describe()
    );
    Ok(())
}

/// `itemgraph snapshot`: one line per operation on stdout (a diff under a changed one),
/// then the summary; exit 1 when a snapshot changed or a budget was exceeded.
async fn run_snapshot(args: &itemgraph::config::SnapshotArgs) -> anyhow::Result<()> {
    use itemgraph::auth::Access;
    use itemgraph::store::Store;
    use std::sync::Arc;
    let ops = itemgraph::snapshot::collect(&args.paths, args.snapshots.as_deref())?;
    anyhow::ensure!(!ops.is_empty(), "no operations under {:?}", args.paths);
    let access = match (&args.org, &args.token) {
        (Some(org), _) => Access::Tenant {
            org: itemgraph::chart::kinds::Tenant::parse(org)
                .map_err(|e| anyhow::anyhow!("--org: {e}"))?,
            role: args.role,
            subject: None,
        },
        (None, Some(token)) => {
            let authenticator = args.auth.authenticator(false).await?.context(
                "--token needs the key it is checked with: --jwt-secret, --jwt-public-key or \
                 --jwt-jwks-url",
            )?;
            authenticator
                .verify_until(Some(format!("Bearer {token}").as_bytes()))
                .await
                .map(|(access, _)| access)
                .map_err(|e| anyhow::anyhow!("--token: {e}"))?
        }
        (None, None) => Access::Unrestricted,
    };
    let chart = itemgraph::config::named_as_stored(
        itemgraph::config::load_chart(args.chart.as_deref())?,
        args.table.as_deref(),
        &args.table_names,
    )?;
    let builtin = Arc::ptr_eq(&chart, &itemgraph::chart::builtin());
    let table = args.table.clone().unwrap_or_else(|| {
        itemgraph::config::renamed(&args.table_names, &chart.table.name)
            .unwrap_or(&chart.table.name)
            .to_owned()
    });
    let store: Arc<dyn Store> = match args.store {
        StoreKind::Embedded => Arc::new(
            itemgraph::store::embedded::EmbeddedStore::in_memory(&table, chart.table_schema())?
                .with_siblings(chart.other_tables(), None)?,
        ),
        StoreKind::DynamoDb => {
            // Operations may be mutations: only a table named by an explicit endpoint
            // (DynamoDB Local, a test stack), never one reached through the environment.
            anyhow::ensure!(
                args.endpoint.is_some(),
                "snapshot --store dynamodb runs its operations' mutations: give --endpoint (e.g. DynamoDB Local)"
            );
            // A test stack's answers are checked, not timed: a DynamoDB Local on a busy CI
            // machine may stall for seconds, which must fail no snapshot (serve's 5 s are
            // for answering clients while the store does not).
            let opts = itemgraph::store::dynamo::DynamoOptions {
                table: table.clone(),
                endpoint: args.endpoint.clone(),
                operation_timeout: Duration::from_secs(120),
                operation_attempt_timeout: Duration::from_secs(60),
                ..Default::default()
            };
            Arc::new(
                itemgraph::store::dynamo::DynamoStore::connect(opts, chart.table_schema())
                    .await
                    .with_siblings(chart.other_tables()),
            )
        }
    };
    // The table as the chart says it stores its items (names, forms, keys), as serve has it.
    let store = itemgraph::store::stored::wrap(store, &chart);
    let started_ms = itemgraph::clock::now_ms();
    create_tables(store.as_ref(), &chart).await?;
    let empty = data::is_empty(store.as_ref()).await?;
    anyhow::ensure!(
        empty || args.fixture.is_none(),
        "--fixture needs an empty table; {} holds items",
        table
    );
    anyhow::ensure!(
        builtin || args.fixture.is_none(),
        "--fixture loads the built-in chart's items or runs its mutations: another chart's data is its samples"
    );
    let schema = if builtin {
        graphql::schema()
    } else {
        graphql::chart_schema(chart.clone(), &graphql::Limits::default())
            .map_err(|e| anyhow::anyhow!("the chart's schema: {}", e.0))?
    };
    if empty {
        match &args.fixture {
            Some(fixture) => {
                itemgraph::snapshot::load_fixture(store.clone(), fixture).await?;
            }
            None if !builtin => {
                itemgraph::chart::samples::seed(store.as_ref(), &chart)
                    .await
                    .context("seeding the chart's samples")?;
            }
            None => {
                data::load(store.as_ref(), &chart, data::builtin_demo())
                    .await
                    .context("seeding the demo data")?;
            }
        }
    }
    let started = std::time::Instant::now();
    let report =
        itemgraph::snapshot::run(&schema, store, &access, &ops, args.update, started_ms).await?;
    let mut out = std::io::stdout().lock();
    for line in &report.lines {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "{} operations in {} ms: {} failed",
        ops.len(),
        started.elapsed().as_millis(),
        report.failed
    )?;
    out.flush()?;
    anyhow::ensure!(report.failed == 0, "{} snapshot(s) failed", report.failed);
    Ok(())
}

/// `itemgraph chart check [FILE]`: the start-up check of a chart, on its own.
/// The chart `file` names (the built-in one when none), checked, with how to name it.
fn chart_file(
    file: Option<&std::path::Path>,
) -> (
    String,
    Result<itemgraph::chart::Chart, itemgraph::chart::Refused>,
) {
    match file {
        Some(path) => (path.display().to_string(), itemgraph::chart::load(path)),
        None => (
            format!("{} (built in)", itemgraph::chart::BUILTIN_PATH),
            itemgraph::chart::parse(itemgraph::chart::BUILTIN_SOURCE),
        ),
    }
}

fn explain_chart(
    file: Option<&std::path::Path>,
    item_bytes: u64,
    format: itemgraph::config::ExplainFormat,
) -> anyhow::Result<()> {
    let (shown, checked) = chart_file(file);
    let chart = match checked {
        Ok(chart) => chart,
        Err(refused) => {
            eprintln!("{shown}: {refused}");
            std::process::exit(1);
        }
    };
    let explained = itemgraph::chart::explain::explain(&chart, item_bytes);
    match format {
        itemgraph::config::ExplainFormat::Markdown => {
            print!("{}", itemgraph::chart::explain::markdown(&explained))
        }
        itemgraph::config::ExplainFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&explained)?)
        }
    }
    Ok(())
}

fn check_chart(
    file: Option<&std::path::Path>,
    deny_warnings: bool,
    format: itemgraph::config::CheckFormat,
) -> anyhow::Result<()> {
    let (shown, checked) = chart_file(file);
    let json = format == itemgraph::config::CheckFormat::Json;
    let chart = match checked {
        Ok(chart) => chart,
        Err(refused) => {
            if json {
                let refusals: Vec<serde_json::Value> = refused
                    .0
                    .iter()
                    .map(|r| serde_json::json!({ "refusal": r.to_string() }))
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({ "chart": shown, "holds": false, "refusals": refusals, "warnings": [] })
                );
            } else {
                print_refused(&shown, &refused);
            }
            std::process::exit(1);
        }
    };
    let advice = itemgraph::chart::advice::advise(&chart);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "chart": shown,
                "holds": true,
                "refusals": [],
                "warnings": advice,
            }))?
        );
    } else {
        println!(
            "{shown}: chart `{}`: {} entities, {} indexes, {} access patterns{}: every rule holds{}",
            chart.name,
            chart.declared().count(),
            chart.indexes.len(),
            chart.patterns.len(),
            match chart.mutations.len() {
                0 => String::new(),
                1 => ", 1 mutation".into(),
                n => format!(", {n} mutations"),
            },
            match advice.len() {
                0 => String::new(),
                1 => "; 1 warning".into(),
                n => format!("; {n} warnings"),
            }
        );
        print_advice(&advice);
    }
    if deny_warnings && !advice.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

/// `chart check`'s refusals for a person, as the server's start says them, the verdict in
/// colour on a terminal.
fn print_refused(shown: &str, refused: &itemgraph::chart::Refused) {
    use anstyle::{AnsiColor, Style};
    let error = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
    anstream::eprintln!("{shown}: {error}{}{error:#}", refused.verdict());
    for r in &refused.0 {
        anstream::eprintln!("  {r}");
    }
}

/// `chart check`'s advice for a person: grouped by entity, as `advise` orders them, in
/// colour on a terminal (anstream strips it for a pipe or a file, and under `NO_COLOR`).
fn print_advice(advice: &[itemgraph::chart::advice::Advice]) {
    use anstyle::{AnsiColor, Style};
    let entity = Style::new().bold();
    let warning = Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold();
    let why = Style::new().dimmed();
    let mut last: Option<&str> = None;
    for a in advice {
        if last != Some(a.entity.as_str()) {
            // Advice on the chart as a whole names no entity.
            let name = if a.entity.is_empty() {
                "The chart"
            } else {
                &a.entity
            };
            anstream::println!("{entity}{name}{entity:#}:");
            last = Some(a.entity.as_str());
        }
        let pattern = a
            .pattern
            .map(|p| format!("pattern {p}: "))
            .unwrap_or_default();
        anstream::println!(
            "  {warning}warning [{}]{warning:#} {pattern}{}",
            a.rule,
            a.message
        );
        anstream::println!("    {why}why: {}{why:#}", a.why);
    }
}

/// `itemgraph schema`: the SDL, byte for byte what `schema.graphql` holds (with `--chart`,
/// that chart's API). A closed pipe (`itemgraph schema | head`) is not an error.
fn print_schema(chart: Option<&std::path::Path>) -> anyhow::Result<()> {
    let sdl = match chart {
        None => graphql::sdl(),
        Some(path) => {
            let chart = itemgraph::config::load_chart(Some(path))?;
            if std::sync::Arc::ptr_eq(&chart, &itemgraph::chart::builtin()) {
                graphql::sdl()
            } else {
                graphql::chart_schema(chart, &graphql::Limits::default())
                    .map_err(|e| {
                        anyhow::anyhow!("{}: the chart's schema: {}", path.display(), e.0)
                    })?
                    .sdl()
            }
        }
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(sdl.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing the schema to stdout")
        }
        _ => Ok(()),
    }
}

/// Completes on Ctrl-C or SIGTERM, whichever comes first. The handlers are installed
/// here, before the future is first polled, so a signal that arrives as soon as the server
/// says it is listening is not lost (nor does it kill the process with the default action).
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| tracing::error!(error = %e, "cannot listen for SIGTERM"))
        .ok();
    let ctrl_c = tokio::signal::ctrl_c();
    async move {
        #[cfg(unix)]
        let terminate = async move {
            match term {
                Some(mut term) => {
                    term.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        let ctrl_c = async move {
            if let Err(e) = ctrl_c.await {
                tracing::error!(error = %e, "cannot listen for Ctrl-C");
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = terminate => {}
        }
        tracing::info!("shutdown requested; finishing in-flight requests");
    }
}

/// `chart import`: the chart drafted from the model, on stdout or in `output`; its TODOs on
/// stderr.
fn import_model(
    model: &std::path::Path,
    output: Option<&std::path::Path>,
    table: Option<&str>,
) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(model).with_context(|| format!("reading {}", model.display()))?;
    let model_data = itemgraph::chart::workbench::Model::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", model.display()))?;
    let drafted = itemgraph::chart::workbench::import::import_table(&model_data, table)
        .map_err(|e| anyhow::anyhow!("{}: {e}", model.display()))?;
    match output {
        Some(path) => std::fs::write(path, &drafted.text)
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{}", drafted.text),
    }
    for todo in &drafted.todos {
        eprintln!("TODO: {todo}");
    }
    eprintln!(
        "{}: a chart drafted{}; `itemgraph chart check` it",
        model.display(),
        match drafted.todos.len() {
            0 => String::new(),
            1 => " with 1 TODO".into(),
            n => format!(" with {n} TODOs"),
        }
    );
    Ok(())
}

/// `chart export`: the chart as a NoSQL Workbench model, on stdout or in `output`.
fn export_chart(
    file: Option<&std::path::Path>,
    output: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let (shown, checked) = chart_file(file);
    let chart = match checked {
        Ok(chart) => chart,
        Err(refused) => {
            print_refused(&shown, &refused);
            std::process::exit(1);
        }
    };
    let exported = itemgraph::chart::workbench::export::export(&chart);
    let json = serde_json::to_string_pretty(&exported.model)? + "\n";
    match output {
        Some(path) => {
            std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{json}"),
    }
    for note in &exported.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}
