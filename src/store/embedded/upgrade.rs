//! The data file's format, recorded per table: a file of an older format is rewritten when
//! opened, one of a newer format refused.

use std::path::Path;

use redb::{ReadableTable, TableDefinition};

use crate::store::{Item, StoreError, StoreResult};

use super::codec::{encode_item, PROJECTED};
use super::{internal, Bytes, Inner, META};

/// The format of a table in a data file: 2 is items in the binary encoding
/// ([`encode_item`]); 1 (no format recorded) was DynamoDB JSON. Recorded in `meta` under
/// [`FORMAT_KEY`] and the table's name when the file is opened.
pub(super) const FORMAT: u32 = 2;
/// Table names cannot hold a NUL, so this prefix never meets a table's own row.
pub(super) const FORMAT_KEY: &str = "\u{0}format/";

impl Inner {
    /// Brings this table of the file to [`FORMAT`]: a format 1 table (items as JSON, no
    /// format recorded) is rewritten in the binary encoding in one transaction, items and
    /// the item copies of index rows; a table of a newer format is refused.
    pub(super) fn upgrade_format(&self, path: &Path) -> StoreResult<()> {
        let key = format!("{FORMAT_KEY}{}", self.table);
        {
            let tx = self.db.begin_read().map_err(internal)?;
            match tx.open_table(META) {
                Ok(meta) => {
                    if let Some(v) = meta.get(key.as_str()).map_err(internal)? {
                        let found = v
                            .value()
                            .first_chunk::<4>()
                            .map_or(0, |b| u32::from_be_bytes(*b));
                        if found == FORMAT {
                            return Ok(());
                        }
                        if found > FORMAT {
                            return Err(StoreError::Internal(format!(
                                "{}: table {} is in format {found}, written by a newer itemgraph; \
                                 this build reads formats 1 to {FORMAT}: run a newer itemgraph, \
                                 or use another --data file",
                                path.display(),
                                self.table
                            )));
                        }
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(internal(e)),
            }
        }
        let tx = self.db.begin_write().map_err(internal)?;
        let mut migrated = 0usize;
        {
            let mut to_binary = |name: &str, projected: bool| -> StoreResult<()> {
                let def: Bytes<'_> = TableDefinition::new(name);
                let mut table = tx.open_table(def).map_err(internal)?;
                let mut rewrites = Vec::new();
                for row in table.iter().map_err(internal)? {
                    let (k, v) = row.map_err(internal)?;
                    let value = v.value();
                    let json = if projected {
                        value.strip_prefix(&PROJECTED)
                    } else {
                        Some(value)
                    };
                    if let Some(json) = json.filter(|j| j.first() == Some(&b'{')) {
                        let item: Item = serde_json::from_slice(json).map_err(internal)?;
                        let mut row = if projected {
                            PROJECTED.to_vec()
                        } else {
                            Vec::new()
                        };
                        row.extend(encode_item(&item)?);
                        rewrites.push((k.value().to_vec(), row));
                    }
                }
                migrated += rewrites.len();
                for (k, v) in rewrites {
                    table.insert(k.as_slice(), v.as_slice()).map_err(internal)?;
                }
                Ok(())
            };
            to_binary(&self.items_name, false)?;
            for name in &self.index_names {
                to_binary(name, true)?;
            }
            let mut meta = tx.open_table(META).map_err(internal)?;
            meta.insert(key.as_str(), FORMAT.to_be_bytes().as_slice())
                .map_err(internal)?;
        }
        tx.commit().map_err(internal)?;
        if migrated > 0 {
            tracing::info!(
                file = %path.display(),
                table = %self.table,
                rows = migrated,
                "the data file's items were rewritten from format 1 (JSON) to format {FORMAT} (binary)"
            );
        }
        Ok(())
    }
}
