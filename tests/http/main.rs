//! The HTTP layer over real sockets: GraphQL over HTTP, authentication, operations
//! (metrics, CORS), the live transports, hostile clients and a failing DynamoDB.
//!
//! One test binary for the whole layer, so the crate and the AWS SDK are linked once;
//! `docs/TESTING.md` lists what each file covers.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod api;
mod api_under_faults;
mod auth;
mod dynamodb_outage;
mod hostile_connections;
mod hostile_documents;
mod hostile_live;
mod jwks;
mod live_clients;
mod live_relay;
mod malformed_requests;
mod metrics;
mod otel;
