//! The GraphQL layer, executed against the schema on both engines: responses and their
//! DynamoDB requests, paging, mutations, limits, tenant isolation, subscriptions.
//!
//! One test binary for the whole layer, so the crate and the AWS SDK are linked once;
//! `docs/TESTING.md` lists what each file covers.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod builtin_chart;
mod builtin_writes;
mod chart_added_entity;
mod chart_bulk;
mod chart_collections;
mod chart_entries;
mod chart_expiry;
mod chart_keys_only;
mod chart_links;
mod chart_maps;
mod chart_multi_key;
mod chart_ranges;
mod chart_scan;
mod chart_simple_keys;
mod chart_stored;
mod chart_tables;
mod chart_tenant_kinds;
mod chart_tenant_reads;
mod chart_tenants;
mod chart_time_forms;
mod chart_transactions;
mod chart_workbench;
mod chart_workloads;
mod chart_writes;
mod charts;
mod checked_writes;
mod concurrency;
mod generative;
mod limits;
mod mutations;
mod paging;
mod plans;
mod requests;
mod sdl;
mod snapshots;
mod subscriptions;
mod tenant_isolation;
