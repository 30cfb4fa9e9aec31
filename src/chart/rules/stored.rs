//! Rule `stored`: items as the table stores them ([`crate::chart::stored`]) can be turned
//! to the chart's form and back, each one way only: every entity told apart by its type
//! value (or, with no type attribute, by its keys: rule `keys-distinct`), no two
//! attributes under one stored name nor under a key's, every value that lives only in a
//! key read back from the primary key, every number stored as a string one that no write
//! adds to (a version; counters are numbers by type).

use std::collections::HashMap;

use indexmap::IndexMap;

use super::Checker;
use crate::chart::template::{Part, Template};
use crate::chart::{Entity, Index, Pattern, Request, Table};

/// The longest attribute name DynamoDB takes, in bytes.
const MAX_NAME_BYTES: usize = 255;

impl Checker {
    pub(super) fn stored_forms(
        &mut self,
        tables: &[Table],
        indexes: &IndexMap<String, Index>,
        entities: &IndexMap<String, Entity>,
        patterns: &IndexMap<u32, Pattern>,
    ) {
        // Per table: an item's table is known where it is read.
        let mut values: HashMap<(usize, &str), &str> = HashMap::new();
        for e in entities.values() {
            let table = &tables[e.table];
            self.at(Some(&e.name), None);
            if !table.types_stored && e.type_value != e.name {
                self.refuse(
                    "stored",
                    format!(
                        "`type_value = \"{}\"`: the table's items hold no type attribute \
                         (`type_attribute = false`)",
                        e.type_value
                    ),
                );
            }
            if let Some(other) = values.insert((e.table, &e.type_value), &e.name) {
                self.refuse(
                    "stored",
                    format!(
                        "its type value `{}` is {other}'s too: an item could not be told apart",
                        e.type_value
                    ),
                );
            }
            let mut keys: Vec<&str> = table.key_names();
            // A multi-attribute key's attributes are the items' own ([`Checker::multi_key`]).
            for i in indexes.values().filter(|i| !i.multi && i.table == e.table) {
                keys.extend(i.key_names());
            }
            if table.types_stored {
                keys.push(&table.type_attribute);
            }
            let mut names: HashMap<&str, &str> = HashMap::new();
            let key_vars: Vec<&str> = e.key.var_names();
            for (a, attr) in &e.attributes {
                let stored = attr.stored.as_deref().unwrap_or(a);
                if attr.key_only {
                    if attr.stored.is_some() || attr.as_string {
                        self.refuse(
                            "stored",
                            format!(
                                "attribute `{a}` lives only in the key: it has no stored name or form"
                            ),
                        );
                    }
                    // Read back from the primary key, or from an index key whose one
                    // variable it is.
                    let in_index = e.indexes.values().any(|k| {
                        [&k.pk, &k.sk].iter().any(|t| {
                            t.vars().map(|v| v.name.as_str()).collect::<Vec<_>>() == [a.as_str()]
                        })
                    });
                    if !key_vars.contains(&a.as_str()) && !in_index {
                        self.refuse(
                            "stored",
                            format!(
                                "attribute `{a}`: `key_only`, but neither the primary key's \
                                 templates nor an index key whose one variable it is hold it, so \
                                 it could not be read back"
                            ),
                        );
                    }
                    if attr.optional {
                        self.refuse(
                            "stored",
                            format!("attribute `{a}`: a value only in the key is never missing"),
                        );
                    }
                    continue;
                }
                if attr.stored.is_some() {
                    if stored.is_empty() || stored.len() > MAX_NAME_BYTES {
                        self.refuse(
                            "stored",
                            format!(
                                "attribute `{a}`: a stored name is 1 to {MAX_NAME_BYTES} bytes"
                            ),
                        );
                    }
                    let whole = template_of(table, indexes, e, stored).is_some_and(|t| {
                        matches!(t.parts.as_slice(), [Part::Var(v)] if v.name == *a && v.width.is_none())
                    });
                    if keys.contains(&stored) && (!whole || attr.as_string) {
                        self.refuse(
                            "stored",
                            format!(
                                "attribute `{a}` is stored as `{stored}`, a key attribute or the \
                                 type attribute (a key attribute holds an attribute only where \
                                 the entity's template for it is `{{{a}}}` alone)"
                            ),
                        );
                    }
                }
                if let Some(other) = names.insert(stored, a) {
                    self.refuse(
                        "stored",
                        format!("attributes `{other}` and `{a}` are both stored as `{stored}`"),
                    );
                }
                if attr.as_string && e.writes.version.as_deref() == Some(a.as_str()) {
                    self.refuse(
                        "stored",
                        format!(
                            "attribute `{a}`: a version is added to by every change, which a \
                             string cannot take"
                        ),
                    );
                }
            }
        }
        // A Scan's filter holds a tenant attribute that must be stored to be compared.
        for p in patterns.values() {
            if let Request::Scan { children, .. } = &p.request {
                let Some(e) = entities.get(children) else {
                    continue;
                };
                let Some(t) = e.binding.condition_or_key() else {
                    continue;
                };
                if e.attributes.get(t).is_some_and(|a| a.key_only) {
                    self.at(Some(&e.name), Some(p.number));
                    self.refuse(
                        "stored",
                        format!(
                            "a Scan is held to the caller's tenant by a filter on `{t}`, which \
                             lives only in the key"
                        ),
                    );
                }
            }
        }
        self.at(None, None);
    }
}

/// The entity's template for the key attribute `name`, where it has one.
fn template_of<'e>(
    table: &Table,
    indexes: &IndexMap<String, Index>,
    e: &'e Entity,
    name: &str,
) -> Option<&'e Template> {
    if name == table.partition_key {
        return Some(&e.key.pk);
    }
    if table.sort_key.as_deref() == Some(name) {
        return Some(&e.key.sk);
    }
    e.indexes.iter().find_map(|(i, k)| {
        let index = indexes.get(i)?;
        if index.partition_key == name && !index.local {
            Some(&k.pk)
        } else if index.sort_key.as_deref() == Some(name) {
            Some(&k.sk)
        } else {
            None
        }
    })
}
