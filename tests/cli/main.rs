//! The `itemgraph` binary as a user runs it: its commands and `itemgraph snapshot`.
//!
//! One test binary for the whole layer, so the crate and the AWS SDK are linked once;
//! `docs/TESTING.md` lists what each file covers.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod chart;
mod commands;
mod designing;
mod features;
mod image;
mod migrate;
mod migrate_tables;
mod replicas;
mod snapshot;
