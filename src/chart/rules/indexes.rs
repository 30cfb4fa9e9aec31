//! The table's secondary indexes as a chart declares them (global or local, keys of one
//! attribute or several, projections), and an entity's place in an index of a
//! multi-attribute key: its own attributes, stored as the key's.

use indexmap::IndexMap;

use super::super::format::{self, File};
use super::super::types::Type;
use super::super::{Attribute, Index, Projection, Table};
use super::*;
use crate::store::KeyType;

impl Checker {
    pub(super) fn indexes(&mut self, file: &File, tables: &[Table]) -> IndexMap<String, Index> {
        let mut out = IndexMap::new();
        // Each table's key attributes, and its multi-attribute keys' attributes, which no
        // other key of its may name.
        let mut keys_of: Vec<(Vec<String>, Vec<String>)> = tables
            .iter()
            .map(|t| {
                let keys = std::iter::once(t.partition_key.clone())
                    .chain(t.sort_key.clone())
                    .collect();
                (keys, Vec::new())
            })
            .collect();
        for (name, i) in &file.indexes {
            let at = self.table_named(i.table.as_deref(), tables);
            let table = &tables[at];
            let (key_attrs, multi_attrs) = &mut keys_of[at];
            let projection = match &i.projection {
                format::Projection::Named(p) if p == "ALL" => Projection::All,
                format::Projection::Named(p) if p == "KEYS_ONLY" => Projection::KeysOnly,
                format::Projection::Named(p) => {
                    self.refuse(
                        "format",
                        format!("index {name}: projection `{p}` is none of ALL, KEYS_ONLY or a list of attributes (INCLUDE)"),
                    );
                    Projection::All
                }
                format::Projection::Include(a) => Projection::Include(a.clone()),
            };
            let multi = matches!(i.partition_key, format::IndexKeyAttributes::Many(_))
                || matches!(i.sort_key, Some(format::IndexKeyAttributes::Many(_)));
            let typed = |this: &mut Self, keys: &[format::KeyAttribute]| {
                keys.iter()
                    .map(|k| (k.name().to_owned(), this.key_type(name, k)))
                    .collect::<Vec<_>>()
            };
            let mut partition = typed(self, i.partition_key.attributes()).into_iter();
            let mut sort = typed(
                self,
                i.sort_key.as_ref().map_or(&[][..], |k| k.attributes()),
            )
            .into_iter();
            let Some((pk, pk_type)) = partition.next() else {
                self.refuse(
                    "indexes",
                    format!("index {name}: its partition key names no attribute"),
                );
                continue;
            };
            let pk_more: Vec<_> = partition.collect();
            let (sk, sk_type) = match sort.next() {
                Some((n, t)) => (Some(n), t),
                None => (None, KeyType::S),
            };
            let sk_more: Vec<_> = sort.collect();
            let max = crate::store::schema::MAX_KEY_ATTRIBUTES;
            if pk_more.len() >= max || sk_more.len() >= max {
                self.refuse(
                    "indexes",
                    format!("index {name}: a multi-attribute key has at most {max} partition and {max} sort attributes"),
                );
            }
            if multi && i.local {
                self.refuse(
                    "indexes",
                    format!("index {name}: a multi-attribute key is a global index's only"),
                );
            }
            if i.local {
                // A local index keeps the table's partition key and sorts it otherwise.
                if pk != table.partition_key {
                    self.refuse(
                        "indexes",
                        format!(
                            "index {name}: a local index's partition key is the table's, `{}`",
                            table.partition_key
                        ),
                    );
                }
                if sk.is_none() || table.sort_key.is_none() {
                    self.refuse(
                        "indexes",
                        format!(
                            "index {name}: a local index has a sort key of its own, in a table \
                             with a sort key"
                        ),
                    );
                }
            }
            if multi {
                // The items' own attributes: each once, and none another key's (an item
                // holding that key would be in this index unasked).
                let names: Vec<&String> = std::iter::once(&pk)
                    .chain(pk_more.iter().map(|(n, _)| n))
                    .chain(sk.iter())
                    .chain(sk_more.iter().map(|(n, _)| n))
                    .collect();
                for (at, k) in names.iter().enumerate() {
                    if names[..at].contains(k) {
                        self.refuse(
                            "indexes",
                            format!("index {name}: key attribute `{k}` is named twice"),
                        );
                    }
                    if key_attrs.contains(k) {
                        self.refuse(
                            "indexes",
                            format!("index {name}: key attribute `{k}` is already another key's"),
                        );
                    }
                }
                multi_attrs.extend(names.into_iter().cloned());
            }
            let own: Vec<&String> = if i.local {
                sk.iter().collect()
            } else if multi {
                // The items' own attributes, which other multi-attribute keys may share.
                Vec::new()
            } else {
                std::iter::once(&pk).chain(sk.iter()).collect()
            };
            for k in own {
                if key_attrs.contains(k) || multi_attrs.contains(k) {
                    self.refuse(
                        "indexes",
                        format!("index {name}: key attribute `{k}` is already another key's"),
                    );
                }
                key_attrs.push(k.clone());
            }
            let stored = i.stored.clone().unwrap_or_else(|| name.clone());
            if let Some(s) = &i.stored {
                if let Err(why) = crate::store::validate::table_or_index_name(s) {
                    self.refuse("indexes", format!("index {name}: `stored`: {why}"));
                }
            }
            if let Some(other) = out
                .values()
                .find(|o: &&Index| o.table == at && o.stored == stored)
            {
                self.refuse(
                    "indexes",
                    format!(
                        "index {name}: table {} knows index {} by the name `{stored}` already: an index's name in its table is its own",
                        table.name, other.name
                    ),
                );
            }
            out.insert(
                name.clone(),
                Index {
                    name: name.clone(),
                    stored,
                    table: at,
                    pk_type,
                    sk_type,
                    partition_key: pk,
                    sort_key: sk,
                    projection,
                    local: i.local,
                    multi,
                    pk_more,
                    sk_more,
                },
            );
        }
        out
    }

    /// An entity's place in a multi-attribute index: one `{attribute}` per key attribute,
    /// in the key's order, each an attribute of a type a key holds, stored under the key
    /// attribute's name as its type: the item's own value is the key, rendered nowhere.
    pub(super) fn multi_key(
        &mut self,
        index: &Index,
        templates: &[String],
        attributes: &IndexMap<String, Attribute>,
    ) -> Option<Vec<String>> {
        let keys = index.typed_keys();
        let name = &index.name;
        if templates.len() != keys.len() {
            self.refuse("indexes", format!("index {name} is keyed by {} attributes (`{}`): give one `{{attribute}}` for each, in order", keys.len(), keys.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("`, `")));
            return None;
        }
        let mut out = Vec::new();
        for ((key, _), text) in keys.into_iter().zip(templates) {
            let var = text
                .strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .filter(|v| !v.contains(['{', '}', '?']));
            let Some(var) = var else {
                self.refuse("indexes", format!("index {name}: `{text}` is not one `{{attribute}}`: a multi-attribute key holds the item's own attributes, no text around them"));
                return None;
            };
            let Some(a) = attributes.get(var) else {
                self.refuse("indexes", format!("index {name}: `{var}` is no attribute"));
                return None;
            };
            let stored = a.stored.as_deref().unwrap_or(var);
            if stored != key {
                self.refuse("indexes", format!("index {name}: its key attribute `{key}` is `{var}` as the items store it, which they store as `{stored}`: set `stored = \"{key}\"` on it"));
            }
            if key_type_of(a).is_none() {
                self.refuse("indexes", format!("index {name}: `{var}` is {}, which a key does not hold (an identifier kind, an enum, an integer or a time of one width does)", crate::chart::one(&a.ty.describe())));
            }
            if a.key_only {
                self.refuse("indexes", format!("index {name}: `{var}` is `key_only`: an item is in the index by its key attributes, which it stores beside its primary key"));
            }
            out.push(var.to_owned());
        }
        Some(out)
    }

    /// What an entity stores under a multi-attribute key's attribute names: values of the
    /// key's types (or every write of it would be refused), and, where it stores them
    /// all, a place in the index it declares (its items are in it whatever it says).
    pub(super) fn multi_members(
        &mut self,
        indexes: &IndexMap<String, Index>,
        joined: &IndexMap<String, Vec<String>>,
        attributes: &IndexMap<String, Attribute>,
    ) {
        for index in indexes.values().filter(|i| i.multi) {
            let keys = index.typed_keys();
            let mut held = 0;
            for (name, a) in attributes {
                let stored = a.stored.as_deref().unwrap_or(name);
                let Some((key, ty)) = keys.iter().find(|(k, _)| *k == stored) else {
                    continue;
                };
                // An optional one too: an item that holds it is in the index.
                held += 1;
                if key_type_of(a) != Some(*ty) {
                    self.refuse("indexes", format!("`{name}` is stored as `{key}`, a key attribute of index {} of type {}: store it as that type, or under another name", index.name, ty.as_str()));
                }
            }
            if held == keys.len() && !joined.contains_key(&index.name) {
                self.refuse("indexes", format!("its items may store every key attribute of index {}, and are then in it: join it with `indexes.{} = [\"{{attribute}}\", …]`", index.name, index.name));
            }
        }
    }

    /// A key attribute's type: `S` unless it says `N`.
    pub(super) fn key_type(&mut self, owner: &str, k: &format::KeyAttribute) -> KeyType {
        match k {
            format::KeyAttribute::Named(_) => KeyType::S,
            format::KeyAttribute::Typed(t) => match t.ty.as_str() {
                "S" => KeyType::S,
                "N" => KeyType::N,
                other => {
                    self.refuse(
                        "format",
                        format!(
                            "{owner}: key attribute `{}` of type `{other}`: a key is `S` (a \
                             string) or `N` (a number)",
                            t.name
                        ),
                    );
                    KeyType::S
                }
            },
        }
    }
}

/// The type a key holds an attribute's value as, where a key can hold it: an identifier
/// kind, an enum or a time of one width as a string, an integer as a number (or as its
/// digits, where the table stores it so).
pub(super) fn key_type_of(a: &Attribute) -> Option<KeyType> {
    match &a.ty {
        Type::Int { .. } if a.as_string => Some(KeyType::S),
        Type::Int { .. } => Some(KeyType::N),
        Type::Kind(_) | Type::Enum { .. } => Some(KeyType::S),
        Type::Timestamp(f) if f.width().is_some() => Some(KeyType::S),
        _ => None,
    }
}
