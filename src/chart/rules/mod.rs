//! The start-up check: a chart file becomes a [`Chart`] only when every rule holds. Each
//! refusal names the entity, the pattern and the rule; every broken rule is reported, not
//! only the first.
//!
//! - this file: the rules, the checker and the order it checks in;
//! - [`declared`]: what the chart declares, typed: indexes, kinds, attribute types, entities
//!   and their keys (`format`, `names`, `types`, `key-values`), and the server's own items;
//! - [`patterns`]: each access pattern one request for what it declares, and a parent at
//!   the edge of its children (`one-request`, `parent-at-edge`, `indexes`);
//! - [`subscriptions`]: what each subscription streams, to whom, narrowed by what;
//! - [`design`]: the design as a whole: keys distinct, the tenant, references, the fields
//!   that use the patterns (`keys-distinct`, `tenant`, `references`, `fields`);
//! - [`names`]: the names the GraphQL schema gives what the chart declares, none twice
//!   (`names`), checked on the chart as built.

mod declared;
mod design;
mod indexes;
mod names;
mod patterns;
mod special;
mod stored;
mod subscriptions;
mod tables;
mod writes;

pub(super) use tables::written_tables_apart;

use declared::system_entities;

use indexmap::IndexMap;

use super::format::{self, File};
use super::{Chart, Refusal, Refused, Table};

/// Every rule, by the name a refusal gives, and what it asks.
pub const RULES: &[(&str, &str)] = &[
    ("format", "the file is TOML of this format, every table and field known"),
    ("tables", "each entity and index is in one declared table, the chart's tables each named once and naming their items' entity alike"),
    ("names", "every name is a GraphQL name, unique where it must be"),
    ("types", "every attribute's type is known"),
    ("key-values", "every key value is an attribute of a type that cannot forge a key"),
    ("keys-distinct", "no two entities' primary keys can be equal"),
    ("indexes", "every index an entity joins or a pattern reads is declared, and projects what the pattern returns"),
    ("one-request", "every access pattern is one request that returns only what it declares"),
    ("parent-at-edge", "a parent read with its children sorts at the edge of their range"),
    ("tenant", "every entity holds the tenant, and every key, marker, token, reference and change a write makes is bound to the caller's, so isolation follows from the chart"),
    ("references", "every reference names an entity and all of its key"),
    ("links", "a link of two entities (many to many) is keyed by both, in one side's item collection, inverted by an index for the other, and read from both"),
    ("fields", "every field that uses a pattern uses one that returns what it serves"),
    ("samples", "every sample item is an item of its entity"),
    ("stored", "items stored in the table's own names and forms turn to the chart's and back one way only: each entity told apart, no name stored twice, values only in keys read back from the primary key, numbers as strings never added to"),
    ("time-to-live", "expiring items carry the table's one time-to-live attribute, and nothing counts them, references them or outlives them"),
    ("writes", "every mutation is one write request that keeps what its entity declares: versions, unique markers, counters on what it references, its life cycle, at most 100 actions"),
];

pub(super) fn check(file: File) -> Result<Chart, Refused> {
    let mut c = Checker::default();
    let chart = c.build(file);
    c.schema_names(&chart);
    if c.refusals.is_empty() {
        Ok(chart)
    } else {
        Err(Refused(c.refusals))
    }
}

#[derive(Default)]
struct Checker {
    refusals: Vec<Refusal>,
    entity: Option<String>,
    pattern: Option<u32>,
    /// The table the pattern being checked reads (its place among the chart's tables).
    table: usize,
}

impl Checker {
    fn refuse(&mut self, rule: &'static str, message: impl Into<String>) {
        debug_assert!(RULES.iter().any(|(r, _)| *r == rule), "{rule}");
        let refusal = Refusal {
            rule,
            entity: self.entity.clone(),
            pattern: self.pattern,
            message: message.into(),
        };
        if !self.refusals.contains(&refusal) {
            self.refusals.push(refusal);
        }
    }

    fn at(&mut self, entity: Option<&str>, pattern: Option<u32>) {
        self.entity = entity.map(str::to_owned);
        self.pattern = pattern;
    }

    fn build(&mut self, file: File) -> Chart {
        if file.format != format::FORMAT {
            self.refuse(
                "format",
                format!(
                    "format {} is not one this server reads (it reads {})",
                    file.format,
                    format::FORMAT
                ),
            );
        }
        let tables = self.tables(&file);
        let table = tables[0].clone();
        let indexes = self.indexes(&file, &tables);
        let kinds = self.kinds(&file);
        for (name, e) in &file.enums {
            self.graphql_name("names", name);
            if e.values.is_empty() {
                self.refuse("types", format!("enum {name} has no values"));
            }
            for v in &e.values {
                if !is_enum_value(v) {
                    self.refuse(
                        "names",
                        format!("enum {name}: `{v}` is not an enum value (A-Z, 0-9, `_`)"),
                    );
                }
            }
        }
        let mut shapes = IndexMap::new();
        for (name, shape) in &file.shapes {
            self.graphql_name("names", name);
            let mut fields = IndexMap::new();
            for (a, spec) in &shape.attributes {
                if let Some(attr) = self.attribute(a, spec, &file, &kinds) {
                    fields.insert(a.clone(), attr);
                }
            }
            shapes.insert(name.clone(), fields);
        }
        let mut entities = IndexMap::new();
        for (name, e) in &file.entities {
            self.at(Some(name), None);
            let entity = self.entity(name, e, &file, &kinds, &indexes, &tables);
            entities.insert(name.clone(), entity);
        }
        self.at(None, None);
        for system in system_entities() {
            if entities.contains_key(&system.name) {
                self.refuse(
                    "names",
                    format!(
                        "`{}` is the name of one of the server's own items",
                        system.name
                    ),
                );
            } else {
                entities.insert(system.name.clone(), system);
            }
        }
        self.keys_distinct(&entities);
        self.references(&entities);
        let mut patterns = IndexMap::new();
        for (number, p) in &file.patterns {
            let Ok(n) = number.parse::<u32>() else {
                self.at(None, None);
                self.refuse(
                    "format",
                    format!("patterns.{number}: access patterns are numbered (`[patterns.1]`)"),
                );
                continue;
            };
            self.at(None, Some(n));
            // Read in the table of the entities it names, with that table's indexes.
            let at = tables::pattern_table(p, &entities, &indexes);
            if !self.names_one_table(p, at, &tables, &entities) {
                continue;
            }
            let on_table: IndexMap<String, super::Index> = indexes
                .iter()
                .filter(|(_, i)| i.table == at)
                .map(|(n, i)| (n.clone(), i.clone()))
                .collect();
            // What a request of this table can meet: its entities alone.
            self.table = at;
            if let Some(mut pattern) = self.pattern(n, p, &tables[at], &entities, &on_table) {
                pattern.table = at;
                self.one_table(&pattern, &tables, &entities);
                patterns.insert(n, pattern);
            }
        }
        self.at(None, None);
        self.tenant(&file, &entities, &patterns);
        self.bind(&file, &mut entities);
        self.fields(&file, &entities, &patterns);
        self.links(&entities, &patterns);
        self.time_to_live(&tables, &entities, &patterns);
        self.stored_forms(&tables, &indexes, &entities, &patterns);
        self.invariants(&entities, &patterns);
        self.referrers(&entities);
        let mutations = self.mutations(&file, &entities, &patterns, &kinds);
        self.subscriptions(&file, &entities);
        self.shards_in_owners_table(&tables, &entities);
        let mut samples = Vec::new();
        for (entity, items) in &file.samples {
            self.at(Some(entity), None);
            let Some(e) = entities.get(entity).filter(|e| !e.system) else {
                self.refuse("samples", "samples of an entity the chart does not declare");
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                match super::samples::item(&tables[e.table], &indexes, e, item) {
                    Ok(item) => {
                        // The markers of its unique values, as a create would write them.
                        for (attr, marker) in &e.writes.unique {
                            let Some(m) = entities.get(marker) else {
                                continue;
                            };
                            if !item.contains_key(attr) {
                                continue;
                            }
                            let vars = super::samples::key_values(m, &item);
                            match super::samples::marker(
                                &tables[m.table],
                                &indexes,
                                m,
                                &item,
                                &vars,
                            ) {
                                Ok(marker) => samples.push(marker),
                                Err(why) => self.refuse(
                                    "samples",
                                    format!("sample {}: its `{attr}` marker: {why}", i + 1),
                                ),
                            }
                        }
                        samples.push(item);
                    }
                    Err(why) => self.refuse("samples", format!("sample {}: {why}", i + 1)),
                }
            }
        }
        self.at(None, None);
        Chart {
            source: String::new(),
            name: file.name,
            description: file.description,
            table,
            tables,
            indexes,
            tenant: file.tenant,
            viewer: file.viewer,
            enums: file.enums,
            shapes,
            entities,
            query: file.query,
            patterns,
            mutations,
            subscriptions: file.subscriptions,
            samples,
            plans: IndexMap::new(),
            pages: IndexMap::new(),
            live: IndexMap::new(),
            forms: None,
        }
    }
}

fn is_graphql_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_enum_value(s: &str) -> bool {
    is_graphql_name(s) && !matches!(s, "true" | "false" | "null")
}
