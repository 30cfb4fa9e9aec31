//! A chart's tables: `[table]` for one, `[[tables]]` for several, each with its keys, type
//! attribute and time to live; the table an entity or an index names.

use indexmap::IndexMap;

use super::super::format::{self, File};
use super::super::Table;
use super::Checker;
use crate::chart::Refusal;

impl Checker {
    /// The tables the file declares, the first first; one placeholder where it declares
    /// none (refused), so the rest of the chart is still checked.
    pub(super) fn tables(&mut self, file: &File) -> Vec<Table> {
        let declared: Vec<&format::Table> = match (&file.table, file.tables.as_slice()) {
            (Some(t), []) => vec![t],
            (None, [_, ..]) => file.tables.iter().collect(),
            (Some(t), [_, ..]) => {
                self.refuse(
                    "tables",
                    "a chart declares `[table]` (one table) or `[[tables]]` (several), not both",
                );
                vec![t]
            }
            (None, []) => {
                self.refuse(
                    "format",
                    "missing field `table`: a chart declares its table (`[table]`), or its tables (`[[tables]]`)",
                );
                return vec![placeholder_table()];
            }
        };
        let tables: Vec<Table> = declared.into_iter().map(|t| self.table(t)).collect();
        for (at, t) in tables.iter().enumerate() {
            if tables[..at].iter().any(|o| o.name == t.name) {
                self.refuse("tables", format!("table {} is declared twice", t.name));
            }
            // A chart of one table is served under `--table` where it says so, as always.
            let named = match file.table {
                None => crate::store::validate::table_or_index_name(&t.name),
                Some(_) => Ok(()),
            };
            if let Err(why) = named {
                self.refuse("tables", format!("table `{}`: {why}", t.name));
            }
            if tables.len() > 1 && !t.types_stored {
                self.refuse(
                    "tables",
                    format!(
                        "table {}: in a chart of several tables every item names its entity (`type_attribute`): an item's table is its entity's",
                        t.name
                    ),
                );
            }
            let first = &tables[0];
            if (&t.type_attribute, t.types_stored) != (&first.type_attribute, first.types_stored) {
                self.refuse(
                    "tables",
                    format!(
                        "table {}: every table of a chart names its items' entity alike (`type_attribute` as table {}'s)",
                        t.name, first.name
                    ),
                );
            }
        }
        tables
    }

    /// A declared table's keys, type attribute and time to live.
    fn table(&mut self, t: &format::Table) -> Table {
        Table {
            name: t.name.clone(),
            partition_key: t.partition_key.name().to_owned(),
            pk_type: self.key_type("table", &t.partition_key),
            sort_key: t.sort_key.as_ref().map(|k| k.name().to_owned()),
            sk_type: t
                .sort_key
                .as_ref()
                .map_or(crate::store::KeyType::S, |k| self.key_type("table", k)),
            type_attribute: match &t.type_attribute {
                format::TypeAttribute::Named(name) => name.clone(),
                format::TypeAttribute::Stored(_) => "Type".to_owned(),
            },
            types_stored: match t.type_attribute {
                format::TypeAttribute::Named(_) => true,
                format::TypeAttribute::Stored(stored) => {
                    if stored {
                        self.refuse(
                            "format",
                            "`type_attribute` is the attribute's name, or `false` for none",
                        );
                    }
                    false
                }
            },
            time_to_live: t.time_to_live.clone(),
        }
    }

    /// The place of the table `name` names (none: the first), refused when the chart
    /// declares no table of that name.
    pub(super) fn table_named(&mut self, name: Option<&str>, tables: &[Table]) -> usize {
        let Some(name) = name else {
            return 0;
        };
        match tables.iter().position(|t| t.name == name) {
            Some(at) => at,
            None => {
                let declared: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
                self.refuse(
                    "tables",
                    format!(
                        "names table `{name}`, which the chart does not declare (it declares {})",
                        declared.join(", ")
                    ),
                );
                0
            }
        }
    }
}

impl Checker {
    /// Whether every entity pattern `p` names is in table `at`, the one it reads; each
    /// that is not refused.
    pub(super) fn names_one_table(
        &mut self,
        p: &format::Pattern,
        at: usize,
        tables: &[Table],
        entities: &IndexMap<String, super::super::Entity>,
    ) -> bool {
        let mut one = true;
        let named = [&p.entity, &p.children, &p.parent]
            .into_iter()
            .flatten()
            .chain(&p.kinds)
            .chain(&p.beside);
        for name in named {
            let Some(e) = entities.get(name) else {
                continue;
            };
            if e.table != at {
                one = false;
                self.refuse(
                    "tables",
                    format!(
                        "{name} is in table {}, and the pattern reads table {}: one request reads one table (an item collection is in one)",
                        tables[e.table].name, tables[at].name
                    ),
                );
            }
        }
        one
    }

    /// A pattern reads or writes one table: every entity it names is in the table it was
    /// read in.
    pub(super) fn one_table(
        &mut self,
        pattern: &super::super::Pattern,
        tables: &[Table],
        entities: &IndexMap<String, super::super::Entity>,
    ) {
        for name in pattern.entities() {
            let Some(e) = entities.get(name) else {
                continue;
            };
            if e.table != pattern.table {
                self.refuse(
                    "tables",
                    format!(
                        "{name} is in table {}, and the pattern reads table {}: one request reads one table (an item collection is in one)",
                        tables[e.table].name, tables[pattern.table].name
                    ),
                );
            }
        }
    }
}

impl Checker {
    /// An entity's counter shards are in its table: a counter's item and its shards are
    /// read in one Query.
    pub(super) fn shards_in_owners_table(
        &mut self,
        tables: &[Table],
        entities: &IndexMap<String, super::super::Entity>,
    ) {
        for e in entities.values() {
            let Some(owner) = e.shards_of.as_ref().and_then(|(o, _)| entities.get(o)) else {
                continue;
            };
            if owner.table != e.table {
                self.refuse(
                    "tables",
                    format!(
                        "{} (the counter shards of {}) is in table {}, and {} in table {}: shards are in their owner's table",
                        e.name, owner.name, tables[e.table].name, owner.name, tables[owner.table].name
                    ),
                );
            }
        }
    }
}

/// A mutation writing to several tables tells each action's table by its key: the
/// entities it writes in different tables must have keys that cannot be equal. A refusal
/// for each mutation whose can.
pub(in crate::chart) fn written_tables_apart(chart: &super::super::Chart) -> Vec<Refusal> {
    let mut out = Vec::new();
    for (name, plan) in &chart.plans {
        let written = plan.written(chart);
        for (i, a) in written.iter().enumerate() {
            for b in written[i + 1..].iter().filter(|b| b.table != a.table) {
                if crate::chart::reach::keys_may_equal(a, b) {
                    out.push(Refusal::new(
                        "tables",
                        format!(
                            "mutation {name} writes {} (table {}) and {} (table {}), whose keys can be equal: give one a prefix of its own, so each action's table is told by its key",
                            a.name, chart.tables[a.table].name, b.name, chart.tables[b.table].name
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// The table a pattern reads: that of the first entity it names, else of the index it
/// names, else the first.
pub(super) fn pattern_table(
    p: &format::Pattern,
    entities: &IndexMap<String, super::super::Entity>,
    indexes: &IndexMap<String, super::super::Index>,
) -> usize {
    let named = [&p.entity, &p.children, &p.parent]
        .into_iter()
        .flatten()
        .chain(&p.kinds)
        .find_map(|n| entities.get(n));
    match (named, &p.index) {
        (Some(e), _) => e.table,
        (None, Some(i)) => indexes.get(i).map_or(0, |i| i.table),
        (None, None) => 0,
    }
}

fn placeholder_table() -> Table {
    Table {
        name: "itemgraph".into(),
        partition_key: "PK".into(),
        pk_type: crate::store::KeyType::S,
        sort_key: Some("SK".into()),
        sk_type: crate::store::KeyType::S,
        type_attribute: "Type".into(),
        types_stored: true,
        time_to_live: None,
    }
}
