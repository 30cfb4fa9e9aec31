//! The access patterns a draft declares: a GetItem and a root field per entity, the nodes'
//! BatchGetItem, a Query for each item collection the samples show and for each index an
//! entity joins (a connection of the entity whose key its partition is, or a root field).

use std::fmt::Write as _;

use super::keys::literal_prefix;
use super::names::{bare, lower_first, plural, quote, upper_first};
use super::{Draft, DraftedEntity};
use crate::chart::workbench::TableModel;

impl Draft {
    /// Root fields and patterns: a GetItem of each entity, the nodes' BatchGetItem, a Query
    /// of each item collection the samples show.
    pub(super) fn patterns(&mut self, t: &TableModel, entities: &[DraftedEntity]) {
        let pk = &t.key_attributes.partition_key.attribute_name;
        let sk = t
            .key_attributes
            .sort_key
            .as_ref()
            .map(|s| s.attribute_name.clone());
        // Numbered on from an earlier table's, in a model of several.
        let mut n = self.patterns_drafted;
        let mut text = String::new();
        let mut connections = std::mem::take(&mut self.connections);
        let mut query = String::new();
        for (name, _, _, _) in entities {
            n += 1;
            let field = lower_first(name);
            let _ = writeln!(
                query,
                "\n[query.{field}]\nentity = {}\npattern = {n}",
                quote(name)
            );
            let _ = writeln!(
                text,
                "\n[patterns.{n}]\nname = {}\nrequest = \"GetItem\"\nentity = {}\nfield = {}",
                quote(&format!("{name} by key")),
                quote(name),
                quote(&format!("Query.{field}"))
            );
        }
        // Once, whatever the tables: one BatchGetItem reads them all.
        if self.patterns_drafted == 0 {
            n += 1;
            let _ = writeln!(
                text,
                "\n[patterns.{n}]\nname = \"Any entity by global id (`node`, `nodes`), references\"\nrequest = \"BatchGetItem\"\nfield = \"Query.nodes\""
            );
        }
        // Item collections: a child sharing a parent's partition, by its sort-key prefix.
        for (parent, ppk, psk, _) in entities {
            // The head of an item collection: keyed by its partition alone (its sort key
            // the same, or a constant such as `PROFILE`).
            if psk
                .as_ref()
                .is_some_and(|s| s.template != ppk.template && !s.vars.is_empty())
            {
                continue;
            }
            for (child, cpk, csk, _) in entities {
                if parent == child || ppk.template != cpk.template {
                    continue;
                }
                let (Some(sk), Some(csk)) = (&sk, csk) else {
                    continue;
                };
                let prefix = literal_prefix(&csk.template);
                if prefix.is_empty() {
                    text += &self.todo(format!(
                        "{child}s share {parent}'s partition, but their sort key has no constant prefix to read them by"
                    ));
                    continue;
                }
                n += 1;
                let field = plural(&lower_first(child));
                let _ = writeln!(
                    text,
                    "\n[patterns.{n}]\nname = {}\nrequest = \"Query\"\nkey = {}\nchildren = {}\nfield = {}",
                    quote(&format!("{parent}'s {field}")),
                    quote(&format!("{pk} = {} AND begins_with({sk}, {prefix})", ppk.template)),
                    quote(child),
                    quote(&format!("{parent}.{field}"))
                );
                connections
                    .entry(parent.clone())
                    .or_default()
                    .push(format!("{field} = {{ pattern = {n} }}"));
            }
        }
        // An index gathering an entity under another's key.
        for (child, _, _, joined) in entities {
            for (index, ipk, isk) in joined {
                // Of this table, else of an earlier one (an index of this table may gather
                // an entity under the key of one in another).
                let owner = entities
                    .iter()
                    .find(|(o, opk, _, _)| o != child && opk.template == ipk.template)
                    .map(|(o, ..)| o.clone())
                    .or_else(|| {
                        self.earlier
                            .iter()
                            .find(|(o, opk)| o != child && *opk == ipk.template)
                            .map(|(o, _)| o.clone())
                    });
                let idx = t
                    .global_secondary_indexes
                    .iter()
                    .find(|i| i.index_name == *index);
                let Some(idx) = idx else { continue };
                let ipk_name = &idx.key_attributes.partition_key.attribute_name;
                let cond = match (&idx.key_attributes.sort_key, isk) {
                    (Some(s), Some(isk)) if !literal_prefix(&isk.template).is_empty() => format!(
                        "{ipk_name} = {} AND begins_with({}, {})",
                        ipk.template,
                        s.attribute_name,
                        literal_prefix(&isk.template)
                    ),
                    _ => format!("{ipk_name} = {}", ipk.template),
                };
                n += 1;
                let children = plural(&lower_first(child));
                // An index that copies less than every attribute: the items read whole by
                // the keys it finds.
                let then = if idx.projection.projection_type == "ALL" {
                    ""
                } else {
                    "\nthen = \"BatchGetItem\""
                };
                match owner {
                    // Under the entity whose key the index's partition is: a connection.
                    Some(owner) => {
                        let field = if connections.get(&owner).is_some_and(|c| {
                            c.iter().any(|x| x.starts_with(&format!("{children} ")))
                        }) {
                            format!("{children}By{}", bare(index))
                        } else {
                            children
                        };
                        let _ = writeln!(
                            text,
                            "\n[patterns.{n}]\nname = {}\nrequest = \"Query\"\nkey = {}\nchildren = {}{then}\nfield = {}",
                            quote(&format!("{owner}'s {field} ({index})")),
                            quote(&cond),
                            quote(child),
                            quote(&format!("{owner}.{field}"))
                        );
                        connections
                            .entry(owner.clone())
                            .or_default()
                            .push(format!("{field} = {{ pattern = {n} }}"));
                    }
                    // Under no entity's key: a root connection, its key values the caller's.
                    None => {
                        let by: Vec<String> =
                            ipk.vars.iter().map(|(v, _)| upper_first(v)).collect();
                        let field = format!("{children}By{}", by.join("And"));
                        let _ = writeln!(
                            query,
                            "\n[query.{field}]\nentity = {}\npattern = {n}",
                            quote(child)
                        );
                        let _ = writeln!(
                            text,
                            "\n[patterns.{n}]\nname = {}\nrequest = \"Query\"\nkey = {}\nchildren = {}{then}\nfield = {}",
                            quote(&format!("{child}s by {} ({index})", ipk.vars.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>().join(" and "))),
                            quote(&cond),
                            quote(child),
                            quote(&format!("Query.{field}"))
                        );
                    }
                }
            }
        }
        // Written once every table is drafted: an entity's connections may be of several.
        self.connections = connections;
        self.patterns_drafted = n;
        self.earlier.extend(
            entities
                .iter()
                .map(|(name, pk, _, _)| (name.clone(), pk.template.clone())),
        );
        self.out.push_str(&query);
        self.out.push_str(&text);
    }

    /// Every entity's connections, after the tables that declare them.
    pub(super) fn connections(&mut self) {
        for (owner, list) in std::mem::take(&mut self.connections) {
            let _ = writeln!(self.out, "\n[entities.{owner}.connections]");
            for c in list {
                let _ = writeln!(self.out, "{c}");
            }
        }
    }
}
