//! # itemgraph
//!
//! A GraphQL server whose resolvers map onto DynamoDB item collections.
//!
//! # Layout
//!
//! - [`config`]: the command line (clap), every flag also an `ITEMGRAPH_*` variable;
//!   `config/store.rs` describes the engine, [`store::open`] opens it.
//! - [`http`]: the axum router ([`http::app`]) and `serve(listener, state, shutdown)`;
//!   GraphQL over HTTP, the live transports (WebSocket, Server-Sent Events), the
//!   listener's limits, the playground.
//! - [`graphql`]: the schema, built at start from a chart (the built-in chart unless
//!   `--chart` names another): its reads, mutations and subscriptions, each running the
//!   plan the chart was resolved into ([`chart::plan`]); knows nothing of HTTP.
//! - [`live`]: subscriptions' source: the one change-stream reader per process, fan-out
//!   to subscribers, resume positions.
//! - [`chart`]: a table design read from a file and checked at start: the entity chart
//!   and its access patterns (`docs/CHART.md`); the built-in one is `charts/itemgraph.toml`,
//!   whose table the server creates. The design lives only there: no Rust spells its
//!   key prefixes or entities (the tests' typed view of it is `tests/common/records.rs`,
//!   keys rendered by the chart). [`chart::kinds`] has the identifier kinds, [`clock`]
//!   the time stamps.
//! - [`store`]: the port (DynamoDB-shaped typed requests and errors, the change stream),
//!   its decorators (metrics, trace), the fault model, and its two engines, folders of
//!   one-concern files: `embedded/` (redb) and `dynamo/` (aws-sdk-dynamodb).
//! - [`check`], [`migrate`], [`snapshot`]: `itemgraph check` (the whole-table consistency
//!   checker, of what a chart implies), `itemgraph migrate` (items moved to today's keys), `itemgraph snapshot`
//!   (snapshot tests of operations). The demo data is data: `charts/itemgraph.demo.json`,
//!   loaded by [`chart::data`].
//! - [`auth`]: bearer JWTs and the [`auth::Access`] every resolver checks (tenant
//!   isolation); [`metrics`]: the Prometheus series served at `/metrics`, handed plain
//!   values (the GraphQL side classifies requests in `graphql/request_metrics.rs`).
//!
//! One way down: `http` → `graphql` → `chart` → `store`, with `auth` and `metrics` on
//! the ground floor; a request's reads and writes are the chart's patterns and
//! mutations, filled with its values. `docs/DATA_MODEL.md` is the table design this
//! code implements; `CONTRIBUTING.md` the architecture and what to touch for a change.

pub mod auth;
pub mod chart;
pub mod check;
pub mod clock;
pub mod config;
pub mod graphql;
pub mod http;
pub mod live;
pub mod metrics;
pub mod migrate;
pub mod snapshot;
pub mod store;
pub mod telemetry;
