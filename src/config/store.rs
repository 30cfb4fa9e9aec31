//! Where the table lives: the store flags every subcommand takes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{endpoint_url, table_name, table_rename};
use crate::store::dynamo::DynamoOptions;
use crate::store::embedded::ChangeLog;
use crate::store::faults::Faults;
use crate::store::open::{self as store, Engine};
use crate::store::Store;

/// Where the table lives. Shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Which engine holds the table: `embedded` (a local redb file, nothing to install) or
    /// `dynamodb` (AWS credentials and region from the usual AWS configuration chain).
    #[arg(long, env = "ITEMGRAPH_STORE", value_enum, default_value_t = StoreKind::Embedded)]
    pub store: StoreKind,
    /// The embedded engine's file. Its parent directory is created when missing.
    #[arg(
        long,
        env = "ITEMGRAPH_DATA",
        value_name = "PATH",
        default_value = "./data/itemgraph.redb"
    )]
    pub data: PathBuf,
    /// The embedded engine's page cache in MiB (reads and the write buffer): pages beyond
    /// it are read from the operating system's cache. The peak RSS is about this plus the
    /// server's own 60–80 MiB under load.
    #[arg(
        long,
        env = "ITEMGRAPH_CACHE_MIB",
        value_name = "MIB",
        default_value_t = crate::store::embedded::DEFAULT_CACHE_MIB,
        value_parser = clap::value_parser!(u32).range(1..=1_048_576)
    )]
    pub cache_mib: u32,
    /// Keep the embedded engine's data in memory only: nothing is written to disk and
    /// everything is lost on exit. For demos and tests.
    #[arg(long, env = "ITEMGRAPH_IN_MEMORY")]
    pub in_memory: bool,
    /// The table's name (in DynamoDB, or inside the embedded file): 3 to 255 characters
    /// of `a-z`, `A-Z`, `0-9`, `_`, `-`, `.`, as DynamoDB takes them, on both engines.
    /// Default: the chart's (`itemgraph` for the built-in chart).
    #[arg(long, env = "ITEMGRAPH_TABLE", value_parser = table_name)]
    pub table: Option<String>,
    /// A chart table's name as stored, `CHART=STORED` (e.g. `orders=prod-orders`), for a
    /// chart of several tables; repeat it (or separate them with commas) for each table
    /// renamed. The first table's is `--table`'s. Default: each table's name in the chart.
    #[arg(
        long = "table-name",
        env = "ITEMGRAPH_TABLE_NAMES",
        value_name = "CHART=STORED",
        value_delimiter = ',',
        value_parser = table_rename
    )]
    pub table_names: Vec<(String, String)>,
    /// The chart to serve: a table design (its entity chart and access patterns) in a
    /// file, checked at start (docs/CHART.md). Without it, the built-in chart
    /// (`charts/itemgraph.toml`): organizations, users, tickets and orders.
    #[arg(long, env = "ITEMGRAPH_CHART", value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// DynamoDB's failure modes, injected by the embedded engine to try the API against
    /// a realistic, flaky backend, e.g.
    /// `gsi-lag=800ms,throttle=0.05,conflict=0.05,lost-reply=0.02,seed=7`: writes reach
    /// the indexes that late; attempts are throttled, meet a transaction in flight, or
    /// lose their reply after being applied, at those rates; `item-wcu=1000` holds each
    /// item to AWS's write units a second, with real transaction conflicts. None by
    /// default.
    #[arg(long, env = "ITEMGRAPH_FAULTS", value_name = "SPEC", value_parser = clap::value_parser!(Faults))]
    pub faults: Option<Faults>,
    /// Changes the embedded engine keeps in its change log, which subscriptions follow
    /// and resume from (older ones are trimmed, and so are those over 24 hours old).
    #[arg(
        long,
        env = "ITEMGRAPH_CHANGE_LOG",
        value_name = "CHANGES",
        default_value_t = ChangeLog::DEFAULT.capacity,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub change_log: u64,
    /// A DynamoDB endpoint override, e.g. DynamoDB Local at `http://localhost:8000`.
    #[arg(long, env = "ITEMGRAPH_ENDPOINT", value_name = "URL", value_parser = endpoint_url)]
    pub endpoint: Option<String>,
    /// The AWS region, overriding the configuration chain.
    #[arg(long, env = "ITEMGRAPH_REGION")]
    pub region: Option<String>,
    /// Attempts per DynamoDB call, the first included: the SDK's standard retry mode
    /// retries throttling, 5xx answers, timeouts and broken connections with jittered
    /// backoff. Past the last, the fields that needed the call fail with `UNAVAILABLE`.
    #[arg(
        long,
        env = "ITEMGRAPH_DYNAMODB_MAX_ATTEMPTS",
        value_name = "N",
        default_value_t = DynamoOptions::DEFAULT_MAX_ATTEMPTS,
        value_parser = clap::value_parser!(u32).range(1..=10)
    )]
    pub dynamodb_max_attempts: u32,
    /// Milliseconds a connection to DynamoDB may take to open before the attempt fails.
    /// From 1 to 60000 (a minute).
    #[arg(
        long,
        env = "ITEMGRAPH_DYNAMODB_CONNECT_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = DynamoOptions::DEFAULT_CONNECT_TIMEOUT.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=60_000)
    )]
    pub dynamodb_connect_timeout_ms: u64,
    /// Milliseconds one attempt of a DynamoDB call may take before it is abandoned and
    /// retried: what a stalled connection costs.
    /// From 1 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_DYNAMODB_ATTEMPT_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = DynamoOptions::DEFAULT_ATTEMPT_TIMEOUT.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub dynamodb_attempt_timeout_ms: u64,
    /// Milliseconds a whole DynamoDB call may take, retries included, before it fails with
    /// `UNAVAILABLE`. Must be under `--request-timeout-ms` (`serve` refuses to start
    /// otherwise): a store that does not answer then fails only the fields that need it.
    /// From 1 to 600000 (10 minutes).
    #[arg(
        long,
        env = "ITEMGRAPH_DYNAMODB_OPERATION_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = DynamoOptions::DEFAULT_OPERATION_TIMEOUT.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub dynamodb_operation_timeout_ms: u64,
}

/// The storage engines.
/// `chart` with its tables after the first named as `names` (`--table-name CHART=STORED`)
/// store them; refused when a name is not one of the chart's tables, or when `table`
/// (`--table`) names the first too.
pub fn named_as_stored(
    chart: Arc<crate::chart::Chart>,
    table: Option<&str>,
    names: &[(String, String)],
) -> anyhow::Result<Arc<crate::chart::Chart>> {
    if names.is_empty() {
        return Ok(chart);
    }
    let tables: Vec<&str> = chart.tables.iter().map(|t| t.name.as_str()).collect();
    for (from, _) in names {
        anyhow::ensure!(
            tables.contains(&from.as_str()),
            "--table-name {from}=…: the chart has no table `{from}` (its tables: {})",
            tables.join(", ")
        );
        anyhow::ensure!(
            *from != chart.table.name || table.is_none(),
            "--table-name {from}=… and --table both name the first table: give one"
        );
    }
    let renames: Vec<(usize, String)> = (1..chart.tables.len())
        .filter_map(|t| Some((t, renamed(names, &chart.tables[t].name)?.to_owned())))
        .collect();
    if renames.is_empty() {
        return Ok(chart);
    }
    // Just parsed, so held here alone: a chart of several tables is never the built-in
    // one, which is shared.
    let mut chart = Arc::try_unwrap(chart)
        .map_err(|_| anyhow::anyhow!("--table-name: the chart is shared and cannot be renamed"))?;
    for (t, to) in renames {
        chart.tables[t].name = to;
    }
    Ok(Arc::new(chart))
}

/// The stored name `names` give the chart's table `name`, if any (the last given).
pub fn renamed<'a>(names: &'a [(String, String)], name: &str) -> Option<&'a str> {
    names
        .iter()
        .rev()
        .find(|(from, _)| from == name)
        .map(|(_, to)| to.as_str())
}

/// The chart at `path`, read and checked (refused with every rule it breaks), or the
/// built-in one. A file holding exactly the built-in chart is the built-in chart.
pub fn load_chart(path: Option<&std::path::Path>) -> anyhow::Result<Arc<crate::chart::Chart>> {
    let Some(path) = path else {
        return Ok(crate::chart::builtin());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--chart {}: cannot read it: {e}", path.display()))?;
    if text == crate::chart::BUILTIN_SOURCE {
        return Ok(crate::chart::builtin());
    }
    let chart = crate::chart::parse(&text)
        .map_err(|refused| anyhow::anyhow!("--chart {}: {refused}", path.display()))?;
    Ok(Arc::new(chart))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// A redb file (or memory) on this machine.
    Embedded,
    /// Amazon DynamoDB, or anything that speaks its API.
    #[value(name = "dynamodb")]
    DynamoDb,
}

impl StoreArgs {
    /// Opens the configured store ([`store::open`]). Creates nothing in it: see
    /// `create-table`. Flags that do not apply to the chosen engine are refused or, when
    /// harmless, ignored with a warning.
    /// The store speaks the chart's form: a table that stores items otherwise (names,
    /// numbers, values only in keys, its own type values) is turned to it here, below
    /// everything that meters or traces it ([`crate::store::stored`]).
    pub async fn open(&self) -> anyhow::Result<Arc<dyn Store>> {
        let chart = self.load_chart()?;
        let opened =
            store::open_tables(&self.engine()?, chart.table_schema(), chart.other_tables()).await?;
        Ok(crate::store::stored::wrap(opened, &chart))
    }

    /// The store as the table stores items, the chart's forms not applied: for items that
    /// are already in the table's form (a NoSQL Workbench model's).
    pub async fn open_as_stored(&self) -> anyhow::Result<Arc<dyn Store>> {
        let chart = self.load_chart()?;
        store::open_tables(&self.engine()?, chart.table_schema(), chart.other_tables()).await
    }

    /// The chart `--chart` names, read and checked (refused with every rule it breaks), or
    /// the built-in one. A file holding exactly the built-in chart is the built-in chart.
    /// Its tables after the first are named as `--table-name` stores them.
    pub fn load_chart(&self) -> anyhow::Result<Arc<crate::chart::Chart>> {
        named_as_stored(
            load_chart(self.chart.as_deref())?,
            self.table.as_deref(),
            &self.table_names,
        )
    }

    /// The stored name `--table-name` gives the chart's table `name`, if any.
    fn renamed(&self, name: &str) -> Option<&str> {
        renamed(&self.table_names, name)
    }

    /// The table's name: `--table`, else its `--table-name`, else the chart's.
    pub fn table_name(&self) -> String {
        self.table.clone().unwrap_or_else(|| {
            self.load_chart().map_or_else(
                |_| "itemgraph".to_owned(),
                |c| {
                    self.renamed(&c.table.name)
                        .unwrap_or(&c.table.name)
                        .to_owned()
                },
            )
        })
    }

    /// The engine these flags describe.
    pub fn engine(&self) -> anyhow::Result<Engine> {
        Ok(match self.store {
            StoreKind::Embedded => {
                if self.endpoint.is_some() || self.region.is_some() {
                    tracing::warn!(
                        "--endpoint and --region apply to --store dynamodb only; ignored"
                    );
                }
                Engine::Embedded {
                    table: self.table_name(),
                    data: (!self.in_memory).then(|| self.data.clone()),
                    cache_mib: self.cache_mib,
                    faults: self.faults.unwrap_or_default(),
                    change_log: ChangeLog {
                        capacity: self.change_log,
                        ..ChangeLog::DEFAULT
                    },
                }
            }
            StoreKind::DynamoDb => {
                anyhow::ensure!(
                    !self.in_memory,
                    "--in-memory applies to --store embedded only"
                );
                anyhow::ensure!(
                    self.faults.is_none_or(|f| !f.any()),
                    "--faults applies to --store embedded only: DynamoDB brings its own"
                );
                Engine::DynamoDb(self.dynamo_options())
            }
        })
    }

    /// How to reach DynamoDB, for `--store dynamodb`.
    pub fn dynamo_options(&self) -> DynamoOptions {
        DynamoOptions {
            table: self.table_name(),
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            connect_timeout: Duration::from_millis(self.dynamodb_connect_timeout_ms),
            operation_timeout: Duration::from_millis(self.dynamodb_operation_timeout_ms),
            operation_attempt_timeout: Duration::from_millis(self.dynamodb_attempt_timeout_ms),
            max_attempts: self.dynamodb_max_attempts,
            ..DynamoOptions::default()
        }
    }

    /// Where the data is, for the log.
    pub fn describe(&self) -> String {
        match self.store {
            StoreKind::Embedded if self.in_memory => {
                format!("embedded, in memory, table {}", self.table_name())
            }
            StoreKind::Embedded => {
                format!(
                    "embedded, {}, table {}",
                    self.data.display(),
                    self.table_name()
                )
            }
            StoreKind::DynamoDb => format!(
                "dynamodb, table {}{}",
                self.table_name(),
                self.endpoint
                    .as_deref()
                    .map(|e| format!(" at {e}"))
                    .unwrap_or_default()
            ),
        }
    }
}
