//! The store layer: the port's contract on both engines, the embedded engine held to
//! DynamoDB Local's behaviour, the change stream, the fault model, and the table's
//! consistency.
//!
//! One test binary for the whole layer, so the crate and the AWS SDK are linked once;
//! `docs/TESTING.md` lists what each file covers.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod change_stream;
mod check;
mod contract;
mod differential;
mod dynamo_local;
mod fault_model;
mod key_shapes;
mod migrate_chart;
mod relay;
mod tables;
mod validation_fidelity;
