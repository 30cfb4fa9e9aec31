//! Opening an engine: the embedded one on a file (or in memory) with its fault model and
//! change log, or DynamoDB through the SDK. The command line describes the engine
//! (`config::StoreArgs::engine`); this opens it, creating nothing in it (see
//! [`Store::create_table`]).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use super::dynamo::{DynamoOptions, DynamoStore};
use super::embedded::{ChangeLog, EmbeddedStore};
use super::faults::Faults;
use super::Store;

/// An engine and where its table is.
#[derive(Debug, Clone)]
pub enum Engine {
    /// The embedded engine on a redb file, or in memory without one.
    Embedded {
        table: String,
        /// The data file; `None` keeps the table in memory.
        data: Option<PathBuf>,
        /// redb's page cache, in MiB.
        cache_mib: u32,
        faults: Faults,
        change_log: ChangeLog,
    },
    /// DynamoDB (or DynamoDB Local).
    DynamoDb(DynamoOptions),
}

/// Opens the engine for a table of `schema` (the served chart's).
pub async fn open(
    engine: &Engine,
    schema: crate::store::TableSchema,
) -> anyhow::Result<Arc<dyn Store>> {
    open_tables(engine, schema, Vec::new()).await
}

/// Opens the engine for a table of `schema` (the engine's table: a chart's first) with
/// `others` (each name and schema) beside it on the same connection, one DynamoDB client
/// or one embedded database: each reached through [`Store::sibling`], all in one
/// BatchGetItem or TransactWriteItems ([`Store::batch_get_tables`],
/// [`Store::transact_write_tables`]).
pub async fn open_tables(
    engine: &Engine,
    schema: crate::store::TableSchema,
    others: Vec<(String, crate::store::TableSchema)>,
) -> anyhow::Result<Arc<dyn Store>> {
    match engine {
        Engine::Embedded {
            table,
            data,
            cache_mib,
            faults,
            change_log,
        } => {
            if faults.any() {
                tracing::warn!(%faults, "injecting DynamoDB's failure modes");
            }
            let store = match data {
                None => EmbeddedStore::in_memory_with_faults(table, schema, *faults)?
                    .with_change_log(*change_log)
                    .with_siblings(others, None)?,
                Some(path) => {
                    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        std::fs::create_dir_all(dir)
                            .with_context(|| format!("creating {}", dir.display()))?;
                    }
                    EmbeddedStore::open_with(path, table, schema, *faults, *cache_mib)
                        .with_context(|| format!("opening {}", path.display()))?
                        .with_change_log(*change_log)
                        .with_siblings(others, Some(path))
                        .with_context(|| format!("opening {}", path.display()))?
                }
            };
            Ok(Arc::new(store))
        }
        Engine::DynamoDb(opts) => Ok(Arc::new(
            DynamoStore::connect(opts.clone(), schema)
                .await
                .with_siblings(others),
        )),
    }
}
