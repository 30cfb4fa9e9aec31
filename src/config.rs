//! The command line. Every flag can also be set through an `ITEMGRAPH_*` environment
//! variable, which is how containers and CI configure the server.
//!
//! ```text
//! itemgraph [serve] [--listen ADDR] [--seed demo|none] [LIMIT FLAGS] [STORE FLAGS]
//!                                                                  (serve is the default)
//! itemgraph create-table [STORE FLAGS]
//! itemgraph seed [--force] [STORE FLAGS]
//! itemgraph check [STORE FLAGS]                     (verifies the table; exit 1 on a violation)
//! itemgraph schema                                                     (prints the SDL)
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::graphql::{CursorCodec, Limits};
use crate::http;
use crate::store::dynamo::{DynamoOptions, DynamoStore};
use crate::store::embedded::EmbeddedStore;
use crate::store::{Store, TableSchema};

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

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Serve the API over HTTP (the default).
    Serve(ServeArgs),
    /// Create the table and its indexes, if missing.
    CreateTable(StoreArgs),
    /// Load the demo data set, creating the table if missing.
    Seed(SeedArgs),
    /// Verify the table's invariants (keys, counters, references, markers): prints one
    /// line per violation, then a summary; exits 1 when there is any violation.
    Check(StoreArgs),
    /// Print the GraphQL schema (SDL) to stdout: `itemgraph schema > schema.graphql`.
    Schema,
}

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
    /// Keep the embedded engine's data in memory only: nothing is written to disk and
    /// everything is lost on exit. For demos and tests.
    #[arg(long, env = "ITEMGRAPH_IN_MEMORY")]
    pub in_memory: bool,
    /// The table's name (in DynamoDB, or inside the embedded file).
    #[arg(long, env = "ITEMGRAPH_TABLE", default_value = "itemgraph")]
    pub table: String,
    /// A DynamoDB endpoint override, e.g. DynamoDB Local at `http://localhost:8000`.
    #[arg(long, env = "ITEMGRAPH_ENDPOINT", value_name = "URL")]
    pub endpoint: Option<String>,
    /// The AWS region, overriding the configuration chain.
    #[arg(long, env = "ITEMGRAPH_REGION")]
    pub region: Option<String>,
}

/// The storage engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// A redb file (or memory) on this machine.
    Embedded,
    /// Amazon DynamoDB, or anything that speaks its API.
    #[value(name = "dynamodb")]
    DynamoDb,
}

impl StoreArgs {
    /// Opens the configured store. Creates nothing in it: see `create-table`.
    pub async fn open(&self) -> anyhow::Result<Arc<dyn Store>> {
        let schema = TableSchema::itemgraph();
        match self.store {
            StoreKind::Embedded => {
                if self.endpoint.is_some() || self.region.is_some() {
                    tracing::warn!(
                        "--endpoint and --region apply to --store dynamodb only; ignored"
                    );
                }
                let store = if self.in_memory {
                    EmbeddedStore::in_memory(&self.table, schema)?
                } else {
                    if let Some(dir) = self.data.parent().filter(|d| !d.as_os_str().is_empty()) {
                        std::fs::create_dir_all(dir)
                            .with_context(|| format!("creating {}", dir.display()))?;
                    }
                    EmbeddedStore::open(&self.data, &self.table, schema)
                        .with_context(|| format!("opening {}", self.data.display()))?
                };
                Ok(Arc::new(store))
            }
            StoreKind::DynamoDb => {
                anyhow::ensure!(
                    !self.in_memory,
                    "--in-memory applies to --store embedded only"
                );
                let opts = DynamoOptions {
                    table: self.table.clone(),
                    endpoint: self.endpoint.clone(),
                    region: self.region.clone(),
                    ..DynamoOptions::default()
                };
                Ok(Arc::new(DynamoStore::connect(opts, schema).await))
            }
        }
    }

    /// Where the data is, for the log.
    pub fn describe(&self) -> String {
        match self.store {
            StoreKind::Embedded if self.in_memory => {
                format!("embedded, in memory, table {}", self.table)
            }
            StoreKind::Embedded => {
                format!("embedded, {}, table {}", self.data.display(), self.table)
            }
            StoreKind::DynamoDb => format!(
                "dynamodb, table {}{}",
                self.table,
                self.endpoint
                    .as_deref()
                    .map(|e| format!(" at {e}"))
                    .unwrap_or_default()
            ),
        }
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
    /// `demo`: create the table if missing and load the demo data when the store does not
    /// hold it yet; `none`: use the store as it is.
    #[arg(long, env = "ITEMGRAPH_SEED", value_enum, default_value_t = SeedMode::Demo)]
    pub seed: SeedMode,
    /// The key that signs paging cursors (HMAC-SHA256). Give every replica the same one,
    /// so a cursor from one replica pages on another and survives a restart; when absent,
    /// a random key is made at startup and cursors die with the process.
    #[arg(
        long,
        env = "ITEMGRAPH_CURSOR_SECRET",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub cursor_secret: Option<CursorSecret>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// What one request may cost, and what the server exposes. See [`Limits`].
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Deepest field nesting a query may have (`{ a { b } }` is 2); deeper is refused with
    /// `QUERY_TOO_DEEP` before any read. GraphiQL's introspection query needs 13.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_DEPTH",
        default_value_t = Limits::DEFAULT.max_depth,
        value_parser = at_least_one()
    )]
    pub max_depth: usize,
    /// Most aliased fields a document may hold (0: none); more is refused with
    /// `TOO_MANY_ALIASES` before any read.
    #[arg(long, env = "ITEMGRAPH_MAX_ALIASES", default_value_t = Limits::DEFAULT.max_aliases)]
    pub max_aliases: usize,
    /// Highest cost a query may have: every field 1, a connection its page size (`first`
    /// or `last`, else 20) times what each node selects; more is refused with
    /// `QUERY_TOO_COMPLEX` before any read.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_COMPLEXITY",
        default_value_t = Limits::DEFAULT.max_complexity,
        value_parser = at_least_one()
    )]
    pub max_complexity: usize,
    /// Largest request body in bytes; a larger one is refused with 413 `BAD_REQUEST`.
    #[arg(
        long,
        env = "ITEMGRAPH_MAX_BODY_BYTES",
        default_value_t = http::Options::DEFAULT.max_body_bytes,
        value_parser = at_least_one()
    )]
    pub max_body_bytes: usize,
    /// Deadline of one request in milliseconds: past it the request is cancelled, its
    /// outstanding store calls with it, and answered with `TIMEOUT`.
    #[arg(
        long,
        env = "ITEMGRAPH_REQUEST_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = Limits::DEFAULT.request_timeout.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub request_timeout_ms: u64,
    /// Whether `__schema` and `__type` answer; GraphiQL needs them.
    #[arg(long, env = "ITEMGRAPH_INTROSPECTION", value_enum, default_value_t = Switch::On)]
    pub introspection: Switch,
    /// Whether GraphiQL is served at `/` (and at `/graphql` to a browser).
    #[arg(long, env = "ITEMGRAPH_GRAPHIQL", value_enum, default_value_t = Switch::On)]
    pub graphiql: Switch,
    /// Queries the automatic persisted query cache holds (LRU, per process); 0 turns
    /// automatic persisted queries off.
    #[arg(
        long,
        env = "ITEMGRAPH_PERSISTED_QUERIES",
        value_name = "ENTRIES",
        default_value_t = Limits::DEFAULT.persisted_queries
    )]
    pub persisted_queries: usize,
}

impl LimitArgs {
    /// The server's options, as `http::AppState` takes them.
    pub fn options(&self) -> http::Options {
        http::Options {
            limits: Limits {
                max_depth: self.max_depth,
                max_aliases: self.max_aliases,
                max_complexity: self.max_complexity,
                request_timeout: Duration::from_millis(self.request_timeout_ms),
                introspection: self.introspection == Switch::On,
                persisted_queries: self.persisted_queries,
            },
            max_body_bytes: self.max_body_bytes,
            graphiql: self.graphiql == Switch::On,
        }
    }
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

impl ServeArgs {
    /// The cursor codec: from `--cursor-secret`, or from a fresh random 32-byte key, with a
    /// warning, since its cursors work on this process only.
    pub fn cursor_codec(&self) -> CursorCodec {
        match &self.cursor_secret {
            Some(secret) => CursorCodec::new(secret.0.as_bytes()),
            None => {
                tracing::warn!(
                    "no --cursor-secret (ITEMGRAPH_CURSOR_SECRET): signing cursors with a random \
                     key; they will not survive a restart or work across replicas"
                );
                CursorCodec::new(rand::random::<[u8; 32]>())
            }
        }
    }
}

/// The cursor signing key. Its `Debug` never shows it, so the parsed command line can be
/// logged.
#[derive(Clone, PartialEq, Eq)]
pub struct CursorSecret(String);

impl std::fmt::Debug for CursorSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSecret(..)")
    }
}

impl std::str::FromStr for CursorSecret {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() < MIN_CURSOR_SECRET_LEN {
            return Err(format!(
                "the cursor secret must be at least {MIN_CURSOR_SECRET_LEN} bytes, e.g. \
                 `openssl rand -hex 32`"
            ));
        }
        Ok(CursorSecret(s.to_owned()))
    }
}

/// Shortest cursor secret accepted: 128 bits as hex, so a guessable key is refused.
pub const MIN_CURSOR_SECRET_LEN: usize = 32;

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
    /// Write the demo items even when the store already holds them, resetting them (and
    /// their counters) to the demo's values.
    #[arg(long, env = "ITEMGRAPH_SEED_FORCE")]
    pub force: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(args.seed, SeedMode::Demo);
        assert_eq!(args.store.store, StoreKind::Embedded);
        assert_eq!(args.store.data, PathBuf::from("./data/itemgraph.redb"));
        assert_eq!(args.store.table, "itemgraph");
        assert!(!args.store.in_memory);

        let Command::Serve(args) = parse(&["--in-memory", "--seed", "none"]) else {
            panic!("flags without a subcommand serve")
        };
        assert!(args.store.in_memory);
        assert_eq!(args.seed, SeedMode::None);
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
            "t",
        ]) else {
            panic!("create-table")
        };
        assert_eq!(args.store, StoreKind::DynamoDb);
        assert_eq!(args.endpoint.as_deref(), Some("http://localhost:8000"));
        assert_eq!(
            args.describe(),
            "dynamodb, table t at http://localhost:8000"
        );
        let Command::Serve(args) = parse(&["serve", "--listen", "0.0.0.0:9000"]) else {
            panic!("serve")
        };
        assert_eq!(args.listen.port(), 9000);
    }

    #[test]
    fn every_flag_has_an_env_variable_and_help() {
        fn check(cmd: &clap::Command) {
            for arg in cmd.get_arguments() {
                if matches!(arg.get_id().as_str(), "help" | "version") {
                    continue;
                }
                let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
                assert!(
                    env.as_deref().is_some_and(|e| e.starts_with("ITEMGRAPH_")),
                    "--{} has no ITEMGRAPH_ variable",
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
        assert!(Cli::try_parse_from(["itemgraph", "--cursor-secret", "short"]).is_err());
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
                    max_aliases: 0,
                    max_complexity: 100,
                    request_timeout: Duration::from_millis(250),
                    introspection: false,
                    persisted_queries: 0,
                },
                max_body_bytes: 2048,
                graphiql: false,
            }
        );
        for zero in [
            "--max-depth",
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

    #[test]
    fn check_takes_the_store_flags() {
        let Command::Check(args) = parse(&["check", "--data", "/tmp/x.redb"]) else {
            panic!("check")
        };
        assert_eq!(args.data, PathBuf::from("/tmp/x.redb"));
        assert!(Cli::try_parse_from(["itemgraph", "check", "--listen", "127.0.0.1:1"]).is_err());
    }

    #[test]
    fn schema_is_a_subcommand_without_flags() {
        assert!(matches!(parse(&["schema"]), Command::Schema));
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
}
