//! # itemgraph
//!
//! A GraphQL server whose resolvers map onto DynamoDB item collections.
//!
//! # Layout
//!
//! - [`auth`]: bearer JWTs and the [`auth::Access`] every resolver checks (tenant isolation).
//! - [`config`]: the command line (clap), every flag also an `ITEMGRAPH_*` variable.
//! - [`keys`]: the entity chart in code; the only place that spells `ORG#`, `USER#` ….
//! - [`model`]: plain domain records (serde), no GraphQL or AWS types.
//! - [`store`]: the port (DynamoDB-shaped typed requests and errors) and its two engines,
//!   `embedded` (redb) and `dynamo` (aws-sdk-dynamodb).
//! - [`collections`]: one function per access pattern, one file per aggregate: a read is
//!   one port call, a write one write request (plus the reads its validation needs) that
//!   keeps every counter and marker of the data model true.
//! - [`check`]: the whole-table consistency checker behind `itemgraph check`.
//! - [`events`]: domain events of successful writes and the in-process bus that carries them.
//! - [`demo`]: the deterministic demo data set.
//! - [`graphql`]: the schema and resolvers, one file per entity; knows nothing of HTTP.
//! - [`http`]: the axum router and `serve(listener, state, shutdown)`.
//! - [`metrics`]: the Prometheus series served at `/metrics`; callers hand it plain values
//!   (the GraphQL side is `graphql::request_metrics`).
//!
//! Arrows run one way: `http` → `graphql` → `collections` → `keys`/`model` → `store`, with
//! `auth`, `metrics` and `events` on the ground floor. `docs/DATA_MODEL.md` is the table
//! design this code implements.

pub mod auth;
pub mod check;
pub mod collections;
pub mod config;
pub mod demo;
pub mod graphql;
pub mod http;
pub mod keys;
pub mod live;
pub mod metrics;
pub mod migrate;
pub mod model;
pub mod snapshot;
pub mod store;
