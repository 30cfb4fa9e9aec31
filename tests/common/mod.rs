//! Helpers shared by the integration tests. Each test binary uses only some of them.
#![allow(dead_code)]

pub mod changes;
pub mod dynamo_local;
pub mod engines;
pub mod graphql;
pub mod server;
pub mod stalled;
