//! The command line. Every flag can also be set through an `ITEMGRAPH_*` environment
//! variable, which is how containers and CI configure the server.
//!
//! ```text
//! itemgraph [serve] [--listen ADDR] [--seed demo|none] [LIMIT FLAGS] [STORE FLAGS]
//!                                                                  (serve is the default)
//! itemgraph create-table [STORE FLAGS]
//! itemgraph seed [--force] [STORE FLAGS]
//! itemgraph check [STORE FLAGS]                     (verifies the table; exit 1 on a violation)
//! itemgraph migrate [--dry-run] [STORE FLAGS]         (moves items to today's keys)
//! itemgraph snapshot [PATHS…] [--update] [--snapshots DIR] [--fixture FILE] [--org ORG]
//!                                                 (snapshot tests of operations; exit 1 on a change)
//! itemgraph schema                                                     (prints the SDL)
//! itemgraph token --jwt-secret S --org ORG [--role admin|member]  (a development token)
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::http;

mod auth;
mod cursor;
mod limits;
mod live;
mod store;
mod telemetry;

pub use auth::{AuthArgs, AuthMode, JwtSecret, TokenArgs};
pub use cursor::{CursorSecret, GraceEnd, GRACE_END_TOLERANCE, MIN_CURSOR_SECRET_LEN};
pub use limits::{LimitArgs, OpsArgs};
pub use live::LiveArgs;
pub use store::{load_chart, named_as_stored, renamed, StoreArgs, StoreKind};
pub use telemetry::{SamplerKind, TelemetryArgs};

/// A GraphQL server whose resolvers map onto DynamoDB item collections.
#[derive(Debug, Parser)]
#[command(
    name = "itemgraph",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The `serve` flags, so that `itemgraph --in-memory` serves without naming `serve`.
    #[command(flatten)]
    pub serve: ServeArgs,
}

impl Cli {
    /// The subcommand to run: `serve` when none was named.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Serve(self.serve))
    }
}

// Parsed once per process, so the size of the largest variant (`serve`'s many flags)
// costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Serve the API over HTTP (the default).
    Serve(ServeArgs),
    /// Create the table and its indexes, if missing.
    CreateTable(StoreArgs),
    /// Load the demo data set, creating the table if missing.
    Seed(SeedArgs),
    /// Print a development token (HS256) for `--jwt-secret`: `Authorization: Bearer <it>`.
    Token(TokenArgs),
    /// Verify the table's invariants (keys, counters, references, markers): prints one
    /// line per violation, then a summary; exits 1 when there is any violation.
    Check(CheckArgs),
    /// Move a table written by an earlier version to today's keys (email markers keyed
    /// per organization); safe to run again. Prints what it moved.
    Migrate(MigrateArgs),
    /// Snapshot-test GraphQL operations: run each against known data and compare its
    /// response and its DynamoDB requests with its snapshot; fail on a change or on more
    /// requests than a `# dynamodb-requests:` budget allows.
    Snapshot(SnapshotArgs),
    /// Print the GraphQL schema (SDL) to stdout: `itemgraph schema > schema.graphql`.
    Schema(SchemaArgs),
    /// Work with a chart: a table design (its entity chart and access patterns) in a file
    /// (docs/CHART.md).
    #[command(subcommand)]
    Chart(ChartCommand),
    /// Ask the server listening on `--listen` (`ITEMGRAPH_LISTEN`, as `serve` reads it)
    /// for `GET /healthz`; exit 0 when it answers 200, 1 otherwise. The container image's
    /// health check: its base has no HTTP client of its own.
    Health(HealthArgs),
}

/// `schema`.
#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// The chart whose API to print (docs/CHART.md); the built-in one when absent.
    #[arg(long, env = "ITEMGRAPH_CHART", value_name = "FILE")]
    pub chart: Option<std::path::PathBuf>,
}

/// `chart`.
#[derive(Debug, Clone, Subcommand)]
pub enum ChartCommand {
    /// Check a chart against every rule the server's start-up check enforces: prints each
    /// broken rule with the entity and the pattern it concerns and exits 1, or prints what
    /// the chart declares and exits 0, with the advice the DynamoDB literature gives on
    /// it (warnings: a hot partition, an item that can outgrow 400 KB), each with its
    /// reason. Without FILE, the built-in chart.
    Check {
        /// The chart file (TOML); the one `ITEMGRAPH_CHART` names when not given.
        #[arg(env = "ITEMGRAPH_CHART")]
        file: Option<std::path::PathBuf>,
        /// Exit 1 when there is any warning too (for CI).
        #[arg(long, env = "ITEMGRAPH_CHART_DENY_WARNINGS")]
        deny_warnings: bool,
        /// `text` (for a person) or `json` (for a tool: the refusals and the warnings).
        #[arg(long, env = "ITEMGRAPH_CHART_CHECK_FORMAT", value_enum, default_value_t = CheckFormat::Text)]
        format: CheckFormat,
    },
    /// Write a chart's entity chart and access-pattern table: each pattern with its
    /// request, its key condition, what it returns and its cost in read or write capacity
    /// units for items of `--item-bytes`, by DynamoDB's arithmetic. Markdown for a person
    /// and for docs, or `--format json` for a tool. A chart that breaks a rule is refused
    /// as `chart check` refuses it. Without FILE, the built-in chart.
    Explain {
        /// The chart file (TOML); the one `ITEMGRAPH_CHART` names when not given.
        #[arg(env = "ITEMGRAPH_CHART")]
        file: Option<std::path::PathBuf>,
        /// The size of one item the costs are for, in bytes. From 1 to 409600 (400 KB,
        /// DynamoDB's largest item).
        #[arg(long, env = "ITEMGRAPH_EXPLAIN_ITEM_BYTES", default_value_t = 1024,
              value_parser = clap::value_parser!(u64).range(1..=409_600))]
        item_bytes: u64,
        /// `markdown` or `json`.
        #[arg(long, env = "ITEMGRAPH_EXPLAIN_FORMAT", value_enum, default_value_t = ExplainFormat::Markdown)]
        format: ExplainFormat,
    },
    /// Draft a chart from a NoSQL Workbench data model (its JSON export): an entity per
    /// facet, key templates inferred from the sample items' keys and checked against every
    /// one, the other attributes with their types and stored names, the indexes, a GetItem
    /// pattern per entity and a Query for each item collection the samples show. What could
    /// not be inferred is left as a `# TODO:` comment, which `chart check` names.
    Import {
        /// The data model (JSON, as NoSQL Workbench exports it).
        #[arg(env = "ITEMGRAPH_WORKBENCH_MODEL")]
        model: std::path::PathBuf,
        /// Where to write the chart; standard output when not given.
        #[arg(long, short, env = "ITEMGRAPH_CHART_IMPORT_OUTPUT")]
        output: Option<std::path::PathBuf>,
        /// The table of the model to draft the chart of, by its name; the model's first
        /// when not given (a chart describes one table).
        #[arg(long, env = "ITEMGRAPH_CHART_IMPORT_TABLE")]
        table: Option<String>,
    },
    /// Write a chart as a NoSQL Workbench data model: its table, a facet per entity with
    /// its key templates as aliases and its samples as the table stores them, its global
    /// secondary indexes; open it in NoSQL Workbench with "Import data model". Without
    /// FILE, the built-in chart.
    Export {
        /// The chart file (TOML); the one `ITEMGRAPH_CHART` names when not given.
        #[arg(env = "ITEMGRAPH_CHART")]
        file: Option<std::path::PathBuf>,
        /// Where to write the model; standard output when not given.
        #[arg(long, short, env = "ITEMGRAPH_CHART_EXPORT_OUTPUT")]
        output: Option<std::path::PathBuf>,
    },
}

/// What `chart check` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
}

/// What `chart explain` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainFormat {
    Markdown,
    Json,
}

/// `check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Read at most this many read capacity units of the table (strongly consistent: one a
    /// 4 KB read), then stop: a table being adopted is checked item by item as far as
    /// that reads (what each item is, its keys and attributes), not as a whole
    /// (references, counts and markers need every item).
    #[arg(long, value_name = "RCU", env = "ITEMGRAPH_CHECK_MAX_RCU",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_rcu: Option<u64>,
}

/// `health`.
#[derive(Debug, Clone, Args)]
pub struct HealthArgs {
    /// The address `serve` listens on; an unspecified one (`0.0.0.0`, `[::]`) is asked on
    /// loopback.
    #[arg(long, env = "ITEMGRAPH_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// How long the whole check may take.
    /// From 100ms to 1m.
    #[arg(long, env = "ITEMGRAPH_HEALTH_TIMEOUT", default_value = "3s", value_parser = duration_within(Duration::from_millis(100), Duration::from_secs(60)))]
    pub timeout: Duration,
}

impl HealthArgs {
    /// Where to connect: the listen address, on loopback when it names every interface.
    pub fn target(&self) -> SocketAddr {
        let mut addr = self.listen;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        addr
    }
}

/// `snapshot`.
#[derive(Debug, Clone, Args)]
pub struct SnapshotArgs {
    /// `.graphql` files (one operation each; variables in `NAME.variables.json` beside),
    /// directories of them, or persisted-operations maps (`.json`: id → document). They
    /// run in the order given (a directory's files sorted), against one store.
    #[arg(
        required = true,
        value_name = "PATHS",
        env = "ITEMGRAPH_SNAPSHOT_PATHS",
        value_delimiter = ','
    )]
    pub paths: Vec<PathBuf>,
    /// Where the snapshots are: default `__snapshots__/` beside each file.
    #[arg(long, value_name = "DIR", env = "ITEMGRAPH_SNAPSHOTS")]
    pub snapshots: Option<PathBuf>,
    /// Write changed snapshots instead of failing (budgets still fail).
    #[arg(long, alias = "accept", env = "ITEMGRAPH_SNAPSHOT_UPDATE")]
    pub update: bool,
    /// The data: a JSON array of items in the table's design (DynamoDB JSON), or a
    /// `.graphql` file of setup mutations run first; default the demo data.
    #[arg(long, value_name = "FILE", env = "ITEMGRAPH_SNAPSHOT_FIXTURE")]
    pub fixture: Option<PathBuf>,
    /// Run as a caller of this organization (with `--role`); default auth off.
    #[arg(long, value_name = "ORG", env = "ITEMGRAPH_SNAPSHOT_ORG")]
    pub org: Option<String>,
    /// The caller's role with `--org`.
    #[arg(long, value_enum, default_value_t = crate::auth::Role::Admin, env = "ITEMGRAPH_SNAPSHOT_ROLE")]
    pub role: crate::auth::Role,
    /// Run as the caller this token names, checked as `serve` would check it.
    #[arg(
        long,
        value_name = "JWT",
        conflicts_with = "org",
        env = "ITEMGRAPH_SNAPSHOT_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// How `--token` is checked: `serve`'s flags (`--jwt-secret`, `--jwt-public-key` or
    /// `--jwt-jwks-url`, the claim mapping, issuer, audience, leeway).
    #[command(flatten)]
    pub auth: AuthArgs,
    /// `embedded` (default): a fresh store in memory each run. `dynamodb`: the table at
    /// `--endpoint` (required: e.g. DynamoDB Local), created if missing and seeded when
    /// empty. Its own variables, so a shell set up to serve a real table never points it there.
    #[arg(long, value_enum, default_value_t = StoreKind::Embedded, env = "ITEMGRAPH_SNAPSHOT_STORE")]
    pub store: StoreKind,
    /// The DynamoDB endpoint, with `--store dynamodb`.
    #[arg(long, value_name = "URL", env = "ITEMGRAPH_SNAPSHOT_ENDPOINT")]
    pub endpoint: Option<String>,
    /// The table's name, with `--store dynamodb`; default: the chart's.
    #[arg(long, env = "ITEMGRAPH_SNAPSHOT_TABLE", value_parser = table_name)]
    pub table: Option<String>,
    /// A chart table's name as stored, `CHART=STORED`, for a chart of several tables
    /// (as `serve --table-name`); repeat it, or separate them with commas.
    #[arg(
        long = "table-name",
        env = "ITEMGRAPH_SNAPSHOT_TABLE_NAMES",
        value_name = "CHART=STORED",
        value_delimiter = ',',
        value_parser = table_rename
    )]
    pub table_names: Vec<(String, String)>,
    /// The chart whose API the operations run against (docs/CHART.md); the built-in one
    /// when absent. Another chart's data is its samples.
    #[arg(long, value_name = "FILE", env = "ITEMGRAPH_CHART")]
    pub chart: Option<std::path::PathBuf>,
}

/// `migrate`.
#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Read only: count what each migration would change, writing nothing (not even a
    /// checkpoint).
    #[arg(long, env = "ITEMGRAPH_MIGRATE_DRY_RUN")]
    pub dry_run: bool,
    /// Segments of a migration's parallel Scan, each read and migrated by a task of its
    /// own. A resumed migration keeps the number it started with.
    #[arg(
        long,
        env = "ITEMGRAPH_MIGRATE_SEGMENTS",
        default_value_t = 4,
        value_parser = clap::value_parser!(u32).range(1..=1_000)
    )]
    pub segments: u32,
    /// Items per Scan page; a segment's checkpoint is written after each page.
    #[arg(
        long,
        env = "ITEMGRAPH_MIGRATE_PAGE_SIZE",
        default_value_t = 100,
        value_parser = clap::value_parser!(u32).range(1..=1_000)
    )]
    pub page_size: u32,
    /// At most this many write units a second (as DynamoDB bills them: a unit per KiB
    /// written, twice in a transaction), so the run leaves capacity to the application.
    /// Unlimited when absent.
    #[arg(long, env = "ITEMGRAPH_MIGRATE_MAX_WCU", value_parser = max_wcu)]
    pub max_wcu: Option<f64>,
}

/// A write budget: a positive number of units a second.
fn max_wcu(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(format!(
            "{s:?} is not a positive number of write units a second"
        )),
    }
}

impl ServeArgs {
    /// What to seed: `--seed`, else the demo data on the embedded engine only.
    pub fn seed_mode(&self) -> SeedMode {
        self.seed.unwrap_or(match self.store.store {
            StoreKind::Embedded => SeedMode::Demo,
            StoreKind::DynamoDb => SeedMode::None,
        })
    }
}

/// `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The address the HTTP server listens on (port 0 picks a free port).
    #[arg(long, env = "ITEMGRAPH_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// `demo`: create the table if missing and load the demo data into it when it is
    /// empty; `none`: use the store as it is. A table that holds other items is never
    /// seeded, and seeding never overwrites an item. Default: `demo` on the embedded
    /// engine, `none` on DynamoDB (a real table is seeded only when asked).
    #[arg(long, env = "ITEMGRAPH_SEED", value_enum)]
    pub seed: Option<SeedMode>,
    /// The key that signs paging cursors (HMAC-SHA256). Give every replica the same one,
    /// so a cursor from one replica pages on another and survives a restart; when absent,
    /// a random key is made at startup and cursors die with the process.
    #[arg(
        long,
        env = "ITEMGRAPH_CURSOR_SECRET",
        value_name = "SECRET",
        hide_env_values = true,
        allow_hyphen_values = true,
        value_parser = SecretValue(<CursorSecret as std::str::FromStr>::from_str)
    )]
    pub cursor_secret: Option<CursorSecret>,
    /// The cursor secret being rotated out. Cursors signed with it (handed out before the
    /// rotation, or by replicas still running with it) are accepted until
    /// `--cursor-secret-previous-until`; nothing new is signed with it.
    #[arg(
        long,
        env = "ITEMGRAPH_CURSOR_SECRET_PREVIOUS",
        value_name = "SECRET",
        hide_env_values = true,
        allow_hyphen_values = true,
        value_parser = SecretValue(<CursorSecret as std::str::FromStr>::from_str),
        requires_all = ["cursor_secret", "cursor_secret_previous_until"]
    )]
    pub cursor_secret_previous: Option<CursorSecret>,
    /// When `--cursor-secret-previous` stops being accepted: an RFC 3339 instant, e.g.
    /// `2026-06-01T12:00:00Z`. An instant rather than a duration, so that every replica
    /// ends the grace period at once, whenever it started. Refused when more than a day in
    /// the past: the rotation is long over and the flags should be gone.
    #[arg(
        long,
        env = "ITEMGRAPH_CURSOR_SECRET_PREVIOUS_UNTIL",
        value_name = "INSTANT",
        requires = "cursor_secret_previous"
    )]
    pub cursor_secret_previous_until: Option<GraceEnd>,
    #[command(flatten)]
    pub auth: AuthArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub ops: OpsArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
}

impl ServeArgs {
    /// The server's options: the limits' and the operational ones.
    pub fn options(&self) -> anyhow::Result<http::Options> {
        let cors = self.ops.cors()?;
        // (A configuration refused outright is refused by `app_state`, saying why.)
        let auth_off = matches!(
            self.auth.mode(self.store.store == StoreKind::DynamoDb),
            Ok(AuthMode::Off)
        );
        anyhow::ensure!(
            !(auth_off && cors.origins == http::CorsOrigins::Any),
            "--cors-origin '*' with authentication off would let a page of every site read and \
             change every organization through its visitor's browser: name the origins, or \
             turn authentication on"
        );
        if cors.origins == http::CorsOrigins::Any {
            tracing::warn!(
                "--cors-origin '*': pages of every site may call this API from a browser \
                 (browsers send no cookies or other credentials with them)"
            );
        }
        anyhow::ensure!(
            self.ops.metrics == Switch::On || self.ops.metrics_listen.is_none(),
            "--metrics-listen serves metrics: it contradicts --metrics off"
        );
        // A DynamoDB call allowed to outlast the request would turn a hung store into a
        // whole request's TIMEOUT instead of UNAVAILABLE on the fields that need it.
        anyhow::ensure!(
            self.store.store != StoreKind::DynamoDb
                || self.store.dynamodb_operation_timeout_ms < self.limits.request_timeout_ms,
            "--dynamodb-operation-timeout-ms ({}) must be under --request-timeout-ms ({}), so \
             a DynamoDB that does not answer fails only the fields that need it",
            self.store.dynamodb_operation_timeout_ms,
            self.limits.request_timeout_ms
        );
        self.telemetry.settings()?;
        Ok(http::Options {
            cors,
            // With a metrics address of its own, the API's listener has no metrics route.
            metrics: self.ops.metrics == Switch::On && self.ops.metrics_listen.is_none(),
            live: self.live.options(),
            allowed_hosts: self.ops.allowed_hosts.clone(),
            ..self.limits.options()
        })
    }
}

impl ServeArgs {
    /// A table that exists is served only where it is keyed and indexed as the chart says:
    /// DynamoDB's description of it compared with the chart's schema, what would make its
    /// requests fail refused with every difference named, an index it lacks warned of
    /// (`migrate` creates it). A table not made yet, or one the engine does not describe,
    /// is served as the chart says; a description refused (its permission) is warned of.
    async fn table_as_charted(&self, store: &dyn crate::store::Store) -> anyhow::Result<()> {
        let chart = self.store.load_chart()?;
        for (t, one) in chart.stores(store)?.iter() {
            self.one_table_as_charted(one, chart.schema_of(t), t == 0)
                .await?;
        }
        Ok(())
    }

    /// [`ServeArgs::table_as_charted`] of one of the chart's tables.
    async fn one_table_as_charted(
        &self,
        store: &dyn crate::store::Store,
        schema: crate::store::TableSchema,
        first: bool,
    ) -> anyhow::Result<()> {
        let shape = match store.describe_table().await {
            Ok(Some(d)) => d.shape,
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, "the table could not be described: not compared with the chart");
                None
            }
        };
        let Some(shape) = shape else { return Ok(()) };
        let differences = schema.differences(&shape);
        for d in differences.iter().filter(|d| !d.fatal) {
            tracing::warn!(table = %store.table_name(), "{}", d.text);
        }
        let fatal: Vec<&str> = differences
            .iter()
            .filter(|d| d.fatal)
            .map(|d| d.text.as_str())
            .collect();
        anyhow::ensure!(
            fatal.is_empty(),
            "{}: the table is not as the chart says, and its requests would fail:\n  {}",
            match first {
                true => self.store.describe(),
                false => format!(
                    "{} (its table {})",
                    self.store.describe(),
                    store.table_name()
                ),
            },
            fatal.join("\n  ")
        );
        Ok(())
    }

    /// What serves the API, as `serve` and the Lambda function build it: the authenticator,
    /// the cursor codec and the opened store, with `options` (from [`ServeArgs::options`],
    /// adjusted to where it runs). The configuration is refused before the store is opened.
    pub async fn app_state(&self, options: http::Options) -> anyhow::Result<http::AppState> {
        let authenticator = self
            .auth
            .authenticator(self.store.store == StoreKind::DynamoDb)
            .await?;
        let cursors = self.cursor_codec();
        let telemetry = match self.telemetry.settings()? {
            Some(settings) => {
                let telemetry = crate::telemetry::Telemetry::start(&settings)?;
                tracing::info!(
                    endpoint = %settings.traces_endpoint,
                    sampler = ?settings.sampler,
                    trust_parent = ?settings.parent_trust,
                    "exporting traces over OTLP"
                );
                Some(telemetry)
            }
            None => None,
        };
        let store = self.store.open().await?;
        tracing::info!(store = %self.store.describe(), "store opened");
        self.table_as_charted(store.as_ref()).await?;
        // The relay's keys are named after the table's ARN unless `--relay-prefix` names
        // them; with no ARN to read (the embedded engine, or a table not created yet),
        // after the table's name, as before that flag.
        let arn = match (&self.live.relay_url, &self.live.relay_prefix) {
            (Some(_), None) => match store.describe_table().await? {
                Some(table) => table.arn,
                None => {
                    tracing::warn!(
                        table = %self.store.table_name(),
                        "the table does not exist yet: the relay's keys are named after its \
                         name, not its ARN (replicas started once it exists use its ARN; \
                         name them with --relay-prefix to be sure all agree)"
                    );
                    None
                }
            },
            _ => None,
        };
        let relay = self
            .live
            .relay(&self.store.table_name(), arn.as_deref())
            .await?;
        if relay.is_some() {
            tracing::info!("live updates follow the change stream's relay");
        }
        Ok(http::AppState::with_options(store, cursors, options)
            .with_chart(self.store.load_chart()?)?
            .with_relay(relay)
            .with_authenticator(authenticator)
            .with_telemetry(telemetry))
    }
}

/// An origin as browsers send it in `Origin`: `scheme://host[:port]`, nothing after it; or
/// `*`.
fn parse_origin(s: &str) -> Result<axum::http::HeaderValue, String> {
    let s = s.trim();
    let well_formed = s == "*"
        || s.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !rest.contains(['/', '?', '#', '*'])
                && rest.chars().all(|c| c.is_ascii_graphic())
        });
    if !well_formed {
        return Err(format!(
            "`{s}` is not an origin: write scheme://host[:port] with no path, e.g. \
             https://app.example.com, or `*`"
        ));
    }
    axum::http::HeaderValue::from_str(s).map_err(|e| e.to_string())
}

/// The value parser of a secret flag (`--jwt-secret`, `--cursor-secret`, …): its refusal
/// names the flag and the rule, never the value. clap's own (`invalid value '…' for …`)
/// quotes what it refused, into a terminal, a container's log or CloudWatch.
#[derive(Clone, Copy)]
pub(crate) struct SecretValue<T>(pub(crate) fn(&str) -> Result<T, String>);

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for SecretValue<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(clap::Arg::get_long)
            .map_or_else(|| "a secret".to_owned(), |long| format!("--{long}"));
        let refuse = |why: String| {
            cmd.clone().error(
                clap::error::ErrorKind::ValueValidation,
                format!("{flag}: {why} (the value given is not shown)"),
            )
        };
        let text = value
            .to_str()
            .ok_or_else(|| refuse("not UTF-8".to_owned()))?;
        (self.0)(text).map_err(refuse)
    }
}

/// A duration flag's parser: [`parse_duration`], refused outside `floor..=ceiling` with a
/// message naming both (each flag's help states them too).
pub(crate) fn duration_within(
    floor: Duration,
    ceiling: Duration,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    move |s| {
        let d = parse_duration(s)?;
        if d < floor || d > ceiling {
            return Err(format!(
                "{} is outside {}..={}",
                show_duration(d),
                show_duration(floor),
                show_duration(ceiling)
            ));
        }
        Ok(d)
    }
}

/// A duration as the flags write it: `90s`, `1500ms`, `5m`.
fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 60_000 == 0 && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A duration: a number with `ms`, `s`, `m` or `h`, or a bare number of seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number.parse().map_err(|_| {
        format!(
            "`{}` is not a duration: write e.g. 10s, 500ms or 1m",
            s.escape_debug()
        )
    })?;
    match unit.trim() {
        "" | "s" => Ok(Duration::from_secs(n)),
        "ms" => Ok(Duration::from_millis(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        "h" => Ok(Duration::from_secs(n.saturating_mul(3600))),
        _ => Err(format!(
            "`{}` is not a duration: write e.g. 10s, 500ms or 1m",
            s.escape_debug()
        )),
    }
}

/// A table name DynamoDB takes (refused at start, not at the first request).
fn table_name(s: &str) -> Result<String, String> {
    crate::store::validate::table_or_index_name(s).map(|()| s.to_owned())
}

/// `CHART=STORED`: a chart table's name and the name it is stored under, each a table
/// name DynamoDB takes.
fn table_rename(s: &str) -> Result<(String, String), String> {
    let (from, to) = s.split_once('=').ok_or_else(|| {
        format!(
            "`{}` is not CHART=STORED: write the chart's table name, `=`, the stored one",
            s.escape_debug()
        )
    })?;
    Ok((table_name(from.trim())?, table_name(to.trim())?))
}

/// An endpoint the SDK can call: `http://` or `https://`, a host, nothing after the port
/// but an optional path.
fn endpoint_url(s: &str) -> Result<String, String> {
    let uri: axum::http::Uri = s
        .parse()
        .map_err(|e| format!("`{}` is not a URL: {e}", s.escape_debug()))?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let host_ok = uri.host().is_some_and(|h| !h.is_empty());
    if !scheme_ok || !host_ok || uri.query().is_some() {
        return Err(format!(
            "`{}` is not an endpoint URL: write http(s)://host[:port], e.g. http://localhost:8000",
            s.escape_debug()
        ));
    }
    Ok(s.to_owned())
}

/// A limit of 0 would refuse every request.
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

/// A feature turned on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    Off,
    On,
}
/// What `serve` loads at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeedMode {
    Demo,
    None,
}

/// `seed`.
#[derive(Debug, Clone, Args)]
pub struct SeedArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Seed even when the table holds other items. Seeding still never overwrites an
    /// item: a demo key already taken stops it with an error.
    #[arg(long, env = "ITEMGRAPH_SEED_FORCE")]
    pub force: bool,
    /// Then N more items of every entity a create mutation of the chart makes, generated
    /// from the chart (values like those in the table, fresh where they must be unique,
    /// references to items that exist) and written through those mutations, so counts,
    /// markers and shards hold as a client's writes keep them. At most 100000.
    #[arg(long, value_name = "N", env = "ITEMGRAPH_SEED_GENERATE",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub generate: Option<u64>,
    /// Load the sample items of this NoSQL Workbench data model (its table of the chart's
    /// name, or its only one) as they are, instead of the chart's samples: each written
    /// only where its key is free, never overwriting an item.
    #[arg(long, value_name = "MODEL", env = "ITEMGRAPH_SEED_WORKBENCH")]
    pub workbench: Option<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graphql::{CursorCodec, Limits};
    use crate::store::dynamo::DynamoOptions;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Command {
        let mut argv = vec!["itemgraph"];
        argv.extend(args);
        Cli::try_parse_from(argv).unwrap().into_command()
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_is_the_default_with_its_defaults() {
        let Command::Serve(args) = parse(&[]) else {
            panic!("serve is the default")
        };
        assert_eq!(args.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(args.seed_mode(), SeedMode::Demo);
        assert_eq!(args.store.store, StoreKind::Embedded);
        assert_eq!(args.store.data, PathBuf::from("./data/itemgraph.redb"));
        assert_eq!(args.store.table_name(), "itemgraph");
        assert!(!args.store.in_memory);

        let Command::Serve(args) = parse(&["--in-memory", "--seed", "none"]) else {
            panic!("flags without a subcommand serve")
        };
        assert!(args.store.in_memory);
        assert_eq!(args.seed_mode(), SeedMode::None);

        // A DynamoDB table is seeded only when asked.
        let Command::Serve(args) = parse(&["--store", "dynamodb"]) else {
            panic!("serve")
        };
        assert_eq!(args.seed_mode(), SeedMode::None);
        let Command::Serve(args) = parse(&["--store", "dynamodb", "--seed", "demo"]) else {
            panic!("serve")
        };
        assert_eq!(args.seed_mode(), SeedMode::Demo);
    }

    #[tokio::test]
    async fn faults_are_for_the_embedded_engine_only() {
        let Command::Serve(args) = parse(&["--in-memory", "--faults", "gsi-lag=1s,throttle=0.05"])
        else {
            panic!("serve")
        };
        let faults = args.store.faults.expect("parsed");
        assert_eq!(faults.gsi_lag, Duration::from_secs(1));
        assert_eq!(faults.throttle, 0.05);
        args.store
            .open()
            .await
            .expect("the embedded engine injects them");
        assert!(Cli::try_parse_from(["itemgraph", "--faults", "throttle=7"]).is_err());
        let Command::Serve(args) = parse(&["--store", "dynamodb", "--faults", "conflict=0.1"])
        else {
            panic!("serve")
        };
        let err = args.store.open().await.err().expect("refused").to_string();
        assert!(
            err.contains("--faults applies to --store embedded only"),
            "{err}"
        );
    }

    #[test]
    fn subcommands_take_the_store_flags() {
        let Command::Seed(args) = parse(&["seed", "--data", "/tmp/x.redb", "--force"]) else {
            panic!("seed")
        };
        assert_eq!(args.store.data, PathBuf::from("/tmp/x.redb"));
        assert!(args.force);
        let Command::CreateTable(args) = parse(&[
            "create-table",
            "--store",
            "dynamodb",
            "--endpoint",
            "http://localhost:8000",
            "--region",
            "us-east-1",
            "--table",
            "t-1",
        ]) else {
            panic!("create-table")
        };
        assert_eq!(args.store, StoreKind::DynamoDb);
        assert_eq!(args.endpoint.as_deref(), Some("http://localhost:8000"));
        assert_eq!(
            args.describe(),
            "dynamodb, table t-1 at http://localhost:8000"
        );
        let Command::Serve(args) = parse(&["serve", "--listen", "0.0.0.0:9000"]) else {
            panic!("serve")
        };
        assert_eq!(args.listen.port(), 9000);
    }

    /// What DynamoDB would refuse is refused at start, naming the flag: table names of
    /// 3 to 255 of its characters, endpoints that are URLs; a shutdown timeout is a
    /// duration.
    #[test]
    fn configuration_dynamodb_would_refuse_is_refused_at_start() {
        for table in ["ig", "my table", "tbl/1", &"x".repeat(256)] {
            let err = Cli::try_parse_from(["itemgraph", "serve", "--table", table])
                .expect_err(table)
                .to_string();
            assert!(err.contains("--table"), "{err}");
            assert!(
                err.contains("DynamoDB takes table and index names"),
                "{err}"
            );
        }
        for ok in ["ig1", "My_Table.v2-x", &"x".repeat(255)] {
            Cli::try_parse_from(["itemgraph", "serve", "--table", ok]).expect(ok);
        }
        for index in crate::chart::builtin().table_schema().indexes {
            crate::store::validate::table_or_index_name(&index.name).expect("an index name");
        }
        for endpoint in ["localhost:8000", "ftp://x", "http://", "not a url"] {
            let err = Cli::try_parse_from(["itemgraph", "serve", "--endpoint", endpoint])
                .expect_err(endpoint)
                .to_string();
            assert!(err.contains("--endpoint"), "{err}");
        }
        let Command::Serve(args) = parse(&["serve", "--shutdown-timeout", "1500ms"]) else {
            panic!("serve")
        };
        assert_eq!(args.limits.shutdown_timeout, Duration::from_millis(1500));
        let Command::Serve(args) = parse(&["serve", "--shutdown-timeout", "3"]) else {
            panic!("serve")
        };
        assert_eq!(args.limits.shutdown_timeout, Duration::from_secs(3));
        assert!(Cli::try_parse_from(["itemgraph", "serve", "--shutdown-timeout", "soon"]).is_err());
    }

    #[test]
    fn every_flag_has_an_env_variable_and_help() {
        fn check(cmd: &clap::Command) {
            for arg in cmd.get_arguments() {
                if matches!(arg.get_id().as_str(), "help" | "version") {
                    continue;
                }
                let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
                // OpenTelemetry's own variables, read as every OpenTelemetry SDK does.
                assert!(
                    env.as_deref()
                        .is_some_and(|e| e.starts_with("ITEMGRAPH_") || e.starts_with("OTEL_")),
                    "--{} has no ITEMGRAPH_ (or OTEL_) variable",
                    arg.get_id()
                );
                assert!(arg.get_help().is_some(), "--{} has no help", arg.get_id());
            }
            for sub in cmd.get_subcommands() {
                check(sub);
            }
        }
        check(&Cli::command());
    }

    #[test]
    fn the_cursor_secret_is_optional_long_enough_and_never_printed() {
        let Command::Serve(args) = parse(&[]) else {
            panic!("serve")
        };
        assert_eq!(args.cursor_secret, None);
        let secret = "0123456789abcdef0123456789abcdef";
        let Command::Serve(args) = parse(&["--cursor-secret", secret]) else {
            panic!("serve")
        };
        assert!(!format!("{args:?}").contains(secret));
        let codec = args.cursor_codec();
        let key = crate::store::PageKey {
            table: crate::store::PrimaryKey::new("ORG#a", "USER#b"),
            index: None,
        };
        let cursor = codec.encode("users:ORG#a", &key);
        assert_eq!(
            CursorCodec::new(secret).decode("users:ORG#a", &cursor),
            Ok(key),
            "replicas sharing the secret accept each other's cursors"
        );
        let error = Cli::try_parse_from(["itemgraph", "--cursor-secret", "short-and-secret"])
            .unwrap_err()
            .to_string();
        assert!(!error.contains("short-and-secret"), "{error}");
        assert!(error.contains("--cursor-secret"), "{error}");
    }

    #[test]
    fn the_dynamodb_operation_timeout_must_be_under_the_request_deadline() {
        let serve = |args: &[&str]| match parse(args) {
            Command::Serve(args) => args,
            _ => panic!("serve"),
        };
        assert!(serve(&["--store", "dynamodb"]).options().is_ok());
        let late = ["--store", "dynamodb", "--request-timeout-ms", "5000"];
        let err = serve(&late).options().unwrap_err().to_string();
        assert!(err.contains("--dynamodb-operation-timeout-ms"), "{err}");
        let fixed = [&late[..], &["--dynamodb-operation-timeout-ms", "4000"]].concat();
        assert!(serve(&fixed).options().is_ok());
        // The embedded engine has no such timeout.
        assert!(serve(&["--request-timeout-ms", "5000"]).options().is_ok());
    }

    #[test]
    fn the_limits_default_to_the_library_defaults_and_follow_their_flags() {
        let Command::Serve(args) = parse(&[]) else {
            panic!("serve")
        };
        assert_eq!(args.limits.options(), http::Options::default());
        let Command::Serve(args) = parse(&[
            "--max-depth",
            "5",
            "--max-aliases",
            "0",
            "--max-complexity",
            "100",
            "--max-tokens",
            "500",
            "--max-nesting",
            "9",
            "--max-fields",
            "70",
            "--max-body-bytes",
            "2048",
            "--request-timeout-ms",
            "250",
            "--introspection",
            "off",
            "--graphiql",
            "off",
            "--persisted-queries",
            "0",
        ]) else {
            panic!("serve")
        };
        assert_eq!(
            args.limits.options(),
            http::Options {
                limits: Limits {
                    max_depth: 5,
                    max_tokens: 500,
                    max_nesting: 9,
                    max_fields: 70,
                    max_aliases: 0,
                    max_complexity: 100,
                    request_timeout: Duration::from_millis(250),
                    introspection: false,
                    persisted_queries: 0,
                },
                max_body_bytes: 2048,
                graphiql: false,
                ..http::Options::DEFAULT
            }
        );
        for zero in [
            "--max-depth",
            "--max-tokens",
            "--max-nesting",
            "--max-fields",
            "--max-complexity",
            "--max-body-bytes",
            "--request-timeout-ms",
        ] {
            assert!(
                Cli::try_parse_from(["itemgraph", zero, "0"]).is_err(),
                "{zero} 0 refuses everything"
            );
        }
    }

    /// An RFC 3339 instant `offset` from now.
    fn instant_from_now(offset: time::Duration) -> String {
        (time::OffsetDateTime::now_utc() + offset)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    }

    #[test]
    fn a_previous_cursor_secret_is_accepted_until_its_instant_never_used_to_sign() {
        let (current, previous) = (
            "0123456789abcdef0123456789abcdef",
            "fedcba9876543210fedcba9876543210",
        );
        let serve = |until: &str| {
            let Command::Serve(args) = parse(&[
                "--cursor-secret",
                current,
                "--cursor-secret-previous",
                previous,
                "--cursor-secret-previous-until",
                until,
            ]) else {
                panic!("serve")
            };
            args
        };
        let key = crate::store::PageKey {
            table: crate::store::PrimaryKey::new("ORG#a", "USER#b"),
            index: None,
        };
        let old_cursor = CursorCodec::new(previous).encode("users:ORG#a", &key);

        let args = serve(&instant_from_now(time::Duration::hours(1)));
        assert!(!format!("{args:?}").contains(previous));
        let codec = args.cursor_codec();
        assert_eq!(codec.decode("users:ORG#a", &old_cursor), Ok(key.clone()));
        assert_eq!(
            codec.encode("users:ORG#a", &key),
            CursorCodec::new(current).encode("users:ORG#a", &key),
            "new cursors are signed with the current secret"
        );

        // Ended an hour ago: the replica starts, and the old cursors are refused.
        let codec = serve(&instant_from_now(-time::Duration::hours(1))).cursor_codec();
        assert_eq!(
            codec.decode("users:ORG#a", &old_cursor),
            Err(crate::graphql::InvalidCursor)
        );
    }

    #[test]
    fn a_previous_cursor_secret_without_its_pair_or_long_expired_is_refused() {
        let (current, previous) = (
            "0123456789abcdef0123456789abcdef",
            "fedcba9876543210fedcba9876543210",
        );
        let soon = instant_from_now(time::Duration::hours(1));
        let refused = |args: &[&str]| {
            let mut argv = vec!["itemgraph"];
            argv.extend(args);
            Cli::try_parse_from(argv).expect_err("refused").to_string()
        };
        let cases: [(&[&str], &str); 6] = [
            (
                &[
                    "--cursor-secret",
                    current,
                    "--cursor-secret-previous",
                    previous,
                ],
                "--cursor-secret-previous-until",
            ),
            (
                &["--cursor-secret-previous-until", &soon],
                "--cursor-secret-previous",
            ),
            (
                &[
                    "--cursor-secret-previous",
                    previous,
                    "--cursor-secret-previous-until",
                    &soon,
                ],
                "--cursor-secret",
            ),
            (
                &[
                    "--cursor-secret",
                    current,
                    "--cursor-secret-previous",
                    previous,
                    "--cursor-secret-previous-until",
                    "tomorrow",
                ],
                "RFC 3339",
            ),
            (
                &[
                    "--cursor-secret",
                    current,
                    "--cursor-secret-previous",
                    previous,
                    "--cursor-secret-previous-until",
                    &instant_from_now(-time::Duration::hours(25)),
                ],
                "more than a day ago",
            ),
            (
                &[
                    "--cursor-secret",
                    current,
                    "--cursor-secret-previous",
                    "short",
                    "--cursor-secret-previous-until",
                    &soon,
                ],
                "at least 32 bytes",
            ),
        ];
        for (args, says) in cases {
            let error = refused(args);
            assert!(error.contains(says), "{args:?}: {error}");
        }
    }

    #[test]
    fn the_dynamodb_retry_and_timeout_flags_default_to_the_engine_defaults() {
        let Command::Serve(args) = parse(&["--store", "dynamodb"]) else {
            panic!("serve")
        };
        assert_eq!(args.store.dynamo_options(), DynamoOptions::default());
        let Command::Serve(args) = parse(&[
            "--store",
            "dynamodb",
            "--dynamodb-max-attempts",
            "5",
            "--dynamodb-connect-timeout-ms",
            "250",
            "--dynamodb-attempt-timeout-ms",
            "800",
            "--dynamodb-operation-timeout-ms",
            "2000",
        ]) else {
            panic!("serve")
        };
        assert_eq!(
            args.store.dynamo_options(),
            DynamoOptions {
                connect_timeout: Duration::from_millis(250),
                operation_attempt_timeout: Duration::from_millis(800),
                operation_timeout: Duration::from_millis(2000),
                max_attempts: 5,
                ..DynamoOptions::default()
            }
        );
        for zero in [
            "--dynamodb-max-attempts",
            "--dynamodb-connect-timeout-ms",
            "--dynamodb-attempt-timeout-ms",
            "--dynamodb-operation-timeout-ms",
        ] {
            assert!(
                Cli::try_parse_from(["itemgraph", zero, "0"]).is_err(),
                "{zero} 0"
            );
        }
        assert!(
            DynamoOptions::DEFAULT_OPERATION_TIMEOUT < Limits::DEFAULT.request_timeout,
            "a store that does not answer fails its fields before the request's deadline"
        );
    }

    /// Every duration flag is refused outside its floor and ceiling (a huge one would
    /// overflow an `Instant`), and its help states both.
    #[test]
    fn every_duration_flag_has_a_floor_and_a_ceiling() {
        let durations = [
            ("--shutdown-timeout", "16m"),
            ("--header-read-timeout-ms", "600001"),
            ("--body-read-timeout-ms", "600001"),
            ("--request-timeout-ms", "900001"),
            ("--stream-poll-ms", "60001"),
            ("--ws-init-timeout-ms", "600001"),
            ("--keepalive-ms", "600001"),
            ("--send-timeout-ms", "600001"),
            ("--relay-lease-ms", "600001"),
            ("--relay-retention-ms", "604800001"),
            ("--dynamodb-connect-timeout-ms", "60001"),
            ("--dynamodb-attempt-timeout-ms", "600001"),
            ("--dynamodb-operation-timeout-ms", "600001"),
            ("--otel-bsp-schedule-delay", "600001"),
            ("--otel-bsp-export-timeout", "600001"),
            ("--otel-shutdown-timeout", "60001"),
            ("--jwks-min-refresh", "2h"),
            ("--jwt-leeway", "6m"),
            ("--jwt-max-age", "43201m"),
        ];
        let command = Cli::command();
        for (flag, over) in durations {
            assert!(
                Cli::try_parse_from(["itemgraph", flag, over]).is_err(),
                "{flag} {over}"
            );
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == flag.strip_prefix("--"))
                .unwrap_or_else(|| panic!("{flag}"));
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(
                help.contains("From "),
                "{flag}'s help states no bounds: {help}"
            );
        }
        let health = ["itemgraph", "health", "--timeout", "2m"];
        assert!(Cli::try_parse_from(health).is_err());
    }

    #[test]
    fn check_takes_the_store_flags() {
        let Command::Check(args) = parse(&["check", "--data", "/tmp/x.redb"]) else {
            panic!("check")
        };
        assert_eq!(args.store.data, PathBuf::from("/tmp/x.redb"));
        assert_eq!(args.max_rcu, None);
        let Command::Check(args) = parse(&["check", "--max-rcu", "50"]) else {
            panic!("check")
        };
        assert_eq!(args.max_rcu, Some(50));
        assert!(Cli::try_parse_from(["itemgraph", "check", "--max-rcu", "0"]).is_err());
        assert!(Cli::try_parse_from(["itemgraph", "check", "--listen", "127.0.0.1:1"]).is_err());
    }

    #[test]
    fn schema_is_a_subcommand_without_flags() {
        assert!(matches!(parse(&["schema"]), Command::Schema(_)));
        assert!(Cli::try_parse_from(["itemgraph", "schema", "--in-memory"]).is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            vec!["itemgraph", "--store", "postgres"],
            vec!["itemgraph", "--listen", "nowhere"],
            vec!["itemgraph", "seed", "--listen", "127.0.0.1:1"],
        ] {
            assert!(Cli::try_parse_from(args).is_err());
        }
    }

    #[test]
    fn cors_and_metrics_flags_reach_the_options() {
        let options = |args: &[&str]| {
            let Command::Serve(args) = parse(args) else {
                panic!("serve")
            };
            args.options()
        };
        let default = options(&[]).unwrap();
        assert_eq!(default.cors, http::Cors::NONE, "no CORS unless asked");
        assert!(default.metrics);

        let o = options(&[
            "--cors-origin",
            "https://app.example,http://localhost:5173",
            "--cors-origin",
            "https://other.example",
            "--cors-max-age",
            "600",
            "--metrics",
            "off",
        ])
        .unwrap();
        let origins = [
            "https://app.example",
            "http://localhost:5173",
            "https://other.example",
        ]
        .map(axum::http::HeaderValue::from_static)
        .to_vec();
        assert_eq!(
            o.cors,
            http::Cors {
                origins: http::CorsOrigins::List(origins),
                max_age: Some(Duration::from_secs(600)),
            }
        );
        assert!(!o.metrics);
        let secret = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            options(&["--cors-origin", "*", "--jwt-secret", secret])
                .unwrap()
                .cors
                .origins,
            http::CorsOrigins::Any
        );
        // Every site's pages, with nobody authenticated: refused at start.
        let error = options(&["--cors-origin", "*"]).unwrap_err().to_string();
        assert!(error.contains("authentication off"), "{error}");
        assert_eq!(
            options(&["--allowed-host", "itemgraph.internal,API.Example"])
                .unwrap()
                .allowed_hosts,
            ["itemgraph.internal", "api.example"]
        );
        assert!(Cli::try_parse_from(["itemgraph", "--allowed-host", "a.example:8080"]).is_err());
        assert!(options(&["--cors-origin", "*,https://app.example"]).is_err());
        for bad in [
            "app.example",
            "https://app.example/",
            "https://app.example/path",
            "https://*.example",
            "https://",
        ] {
            assert!(
                Cli::try_parse_from(["itemgraph", "--cors-origin", bad]).is_err(),
                "{bad}"
            );
        }
    }
}
