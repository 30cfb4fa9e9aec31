//! `itemgraph chart import MODEL.json`: a chart drafted from a NoSQL Workbench data model.
//!
//! Each facet becomes an entity (a model without facets: one per value of its type
//! attribute, or one for the whole table). Its key templates are inferred from its sample
//! items' keys: split at `#`, a segment every sample holds alike is literal text, one that
//! varies is a variable, after the literal prefix its values share; a variable whose values
//! are another attribute's is that attribute, one that is no other attribute's lives only
//! in the key (`key_only`), named after the key alias (`USER#<id>`) where the alias names
//! it. Every inferred template is checked against every sample: it renders each one's key
//! back. The other attributes come with their types (a string of digits as a number stored
//! as a string, an RFC 3339 string as a timestamp), optional where a sample lacks them,
//! under their stored names. The type attribute is the one whose value is constant within
//! each facet and differs between them; without one the entities are told by their keys.
//! Access patterns: a GetItem per entity (a root field), the nodes' BatchGetItem, and a
//! Query for each item collection the samples show (a facet whose items share another's
//! partition, read by its own sort-key prefix; a facet an index gathers under another's
//! key). What could not be inferred is left as a `# TODO:` comment that `chart check` names.

mod keys;
mod names;
mod patterns;
mod types;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use keys::VarNames;
use names::{attribute_name, bare, chart_name, entity_name, free_name, key_attr, quote};
use types::{attribute_type, groups, time_form, type_attribute, values};

use super::{Model, TableModel};
use crate::store::{AttributeValue, Item};

/// The drafted chart's text, and the TODOs it holds.
pub struct Drafted {
    pub text: String,
    pub todos: Vec<String>,
}

/// A chart drafted from `model`: of its one table, or of every table of a model of
/// several (`[[tables]]`).
pub fn import(model: &Model) -> Result<Drafted, String> {
    import_table(model, None)
}

/// A chart drafted from `model`'s table of that name (`None`: every table).
pub fn import_table(model: &Model, name: Option<&str>) -> Result<Drafted, String> {
    let tables: Vec<&TableModel> = match name {
        None => model.data_model.iter().collect(),
        Some(n) => model
            .data_model
            .iter()
            .filter(|t| t.table_name == n)
            .take(1)
            .collect(),
    };
    if tables.is_empty() {
        return Err(match name {
            None => "the model has no table".into(),
            Some(n) => format!(
                "the model has no table `{n}` (it has {})",
                model.table_names()
            ),
        });
    }
    let mut d = Draft {
        several: tables.len() > 1,
        ..Draft::default()
    };
    for (at, table) in tables.iter().enumerate() {
        let before = d.drafted;
        d.at = at;
        d.table(model, table);
        // No entity at all is no table of a chart: nothing told its keys.
        if d.drafted == before {
            return Err(format!(
                "table `{}`: no sample item to infer an entity's keys from ({}); add sample data to the model (NoSQL Workbench's \"Add data\") or write the chart by hand",
                table.table_name,
                d.todos.join("; ")
            ));
        }
    }
    d.connections();
    if d.several {
        d.one_type_attribute(&tables);
    }
    Ok(Drafted {
        text: d.out,
        todos: d.todos,
    })
}

impl Draft {
    /// In a chart of several tables every table names its items' entity in one attribute:
    /// where the tables' differ (or one has none), a TODO says so.
    fn one_type_attribute(&mut self, tables: &[&TableModel]) {
        let chosen: Vec<Option<String>> = std::mem::take(&mut self.type_attributes);
        if chosen.windows(2).all(|w| w[0] == w[1]) && chosen.first().is_some_and(Option::is_some) {
            return;
        }
        let said: Vec<String> = tables
            .iter()
            .zip(&chosen)
            .map(|(t, a)| match a {
                Some(a) => format!("`{}` in `{a}`", t.table_name),
                None => format!("`{}` in none", t.table_name),
            })
            .collect();
        let line = self.todo(format!(
            "the tables name their items' entity apart ({}): a chart of several tables needs every item to name it in one attribute; store it so in each table",
            said.join(", ")
        ));
        self.out.push_str(&line);
    }
}

impl Draft {
    /// The table's own sample items, where its facets hold none: each given to the one
    /// facet whose attributes hold all of its own (a model may keep its samples in the
    /// table rather than in each facet); an item no facet, or more than one, could hold is
    /// left out, and a TODO says how many.
    fn give_to_facets<'m>(
        &mut self,
        t: &'m TableModel,
        items: Vec<(Option<&'m str>, Item)>,
        keys: &[&str],
    ) -> Vec<(Option<&'m str>, Item)> {
        let facets_hold_items = t.table_facets.iter().any(|f| !f.table_data.is_empty());
        if t.table_facets.is_empty() || facets_hold_items {
            return items;
        }
        let mut left = 0;
        let mut out = Vec::new();
        for (_, item) in items {
            let own: Vec<&String> = item
                .keys()
                .filter(|n| !keys.contains(&n.as_str()))
                .collect();
            let mut fits = t
                .table_facets
                .iter()
                .filter(|f| own.iter().all(|a| f.non_key_attributes.contains(a)));
            match (fits.next(), fits.next()) {
                (Some(f), None) => out.push((Some(f.facet_name.as_str()), item)),
                _ => left += 1,
            }
        }
        if left > 0 {
            let line = self.todo(format!(
                "{left} of the table's sample items fit no one facet by their attributes: left out of the draft"
            ));
            self.out.push_str(&line);
        }
        out
    }
}

/// Whether two of the entities `groups` would draft have keys of one shape (their
/// templates alike but for their variables' names), so that no key tells them apart.
fn keys_alike(groups: &[Group<'_>], t: &TableModel) -> bool {
    let pk = &t.key_attributes.partition_key;
    let sk = t.key_attributes.sort_key.as_ref();
    let shape = |g: &Group<'_>, attr: &str, number: bool| -> Option<String> {
        let mut dry = Draft::default();
        let inferred = dry.infer(
            &g.name,
            &values(&g.items, attr),
            number,
            None,
            &mut VarNames::default(),
            &[],
        )?;
        // `{name}` to `{}`: the shape of the template alone.
        let mut out = String::new();
        let mut in_var = false;
        for c in inferred.template.chars() {
            match c {
                '{' => {
                    in_var = true;
                    out.push_str("{}");
                }
                '}' => in_var = false,
                c if !in_var => out.push(c),
                _ => {}
            }
        }
        Some(out)
    };
    let shapes: Vec<_> = groups
        .iter()
        .filter(|g| !g.items.is_empty())
        .map(|g| {
            (
                shape(g, &pk.attribute_name, pk.attribute_type == "N"),
                sk.map(|s| shape(g, &s.attribute_name, s.attribute_type == "N")),
            )
        })
        .collect();
    shapes
        .iter()
        .enumerate()
        .any(|(i, a)| shapes[..i].contains(a))
}

#[derive(Default)]
struct Draft {
    out: String,
    /// How many entities the draft holds.
    drafted: usize,
    todos: Vec<String>,
    /// Kinds the variables need: name to (pattern, max length).
    kinds: BTreeMap<String, (String, usize)>,
    /// TODO lines of the entity being drafted, not yet placed.
    pending: String,
    /// Variables that are numbers (of `N` keys): ints.
    ints: HashSet<String>,
    /// Entities' partition-key templates of one variable, and that variable: what a value
    /// in another's key may be named after.
    keys_seen: Vec<(String, String)>,
    /// The attribute taken for the table's time to live (epoch seconds named so).
    time_to_live: Option<String>,
    /// A draft of several tables (`[[tables]]`), and the place of the one being drafted.
    several: bool,
    at: usize,
    /// Patterns numbered so far (by earlier tables).
    patterns_drafted: u32,
    /// Connections by owner, written once every table is drafted.
    connections: BTreeMap<String, Vec<String>>,
    /// Entities of earlier tables and their partition-key templates: what an index of a
    /// later one may gather its items under.
    earlier: Vec<(String, String)>,
    /// Kinds already written (a later table needing one too uses it).
    kinds_written: HashSet<String>,
    /// Each table's type attribute, in order.
    type_attributes: Vec<Option<String>>,
    /// Each index drafted: its table's place, its name there, and its name in the chart
    /// (another where an earlier table has an index of that name: `OrdersGSI1`).
    index_names: Vec<(usize, String, String)>,
}

/// One entity being drafted: its name, type value and sample items.
struct Group<'m> {
    name: String,
    type_value: Option<String>,
    items: Vec<Item>,
    alias: Option<&'m super::KeyAlias>,
    facet_attributes: Option<&'m [String]>,
}

/// An entity drafted: its name, its primary key's templates, and each index it joins with
/// its templates there.
type DraftedEntity = (
    String,
    Inferred,
    Option<Inferred>,
    Vec<(String, Inferred, Option<Inferred>)>,
);

/// A key template inferred: its text, and its variables with where their values come from.
#[derive(Clone)]
struct Inferred {
    template: String,
    /// Each variable: its name and its values, one a sample.
    vars: Vec<(String, Vec<String>)>,
}

impl Draft {
    /// A TODO: kept, and its comment line, for wherever it belongs in the draft.
    fn todo(&mut self, what: String) -> String {
        let line = format!("# TODO: {what}\n");
        self.todos.push(what);
        line
    }

    fn table(&mut self, model: &Model, t: &TableModel) {
        let items = t.items();
        let pk = &t.key_attributes.partition_key;
        let sk = t.key_attributes.sort_key.as_ref();
        let key_names: Vec<&str> = std::iter::once(pk.attribute_name.as_str())
            .chain(sk.map(|s| s.attribute_name.as_str()))
            .chain(t.global_secondary_indexes.iter().flat_map(|i| {
                std::iter::once(i.key_attributes.partition_key.attribute_name.as_str()).chain(
                    i.key_attributes
                        .sort_key
                        .as_ref()
                        .map(|s| s.attribute_name.as_str()),
                )
            }))
            .collect();
        let items = self.give_to_facets(t, items, &key_names);
        // A later table takes the first's where its items hold it so.
        let prefer = self.type_attributes.first().cloned().flatten();
        let mut type_attribute = type_attribute(t, &items, &key_names, prefer.as_deref());
        // Without facets, an attribute of kinds (`kind`) splits the items into entities
        // only where their keys tell them apart: kinds keyed alike are one entity, the
        // attribute one of its own (a chart's entities are told by their keys too).
        if t.table_facets.is_empty() && type_attribute.is_some() {
            let split = groups(t, &items, type_attribute.as_deref());
            if keys_alike(&split, t) {
                type_attribute = None;
            }
        }
        let mut groups = groups(t, &items, type_attribute.as_deref());
        // A facet named as an earlier table's entity (or as another facet, once named as
        // entities are): the table's name before it.
        let mut taken: Vec<String> = self.earlier.iter().map(|(n, _)| n.clone()).collect();
        for g in &mut groups {
            g.name = free_name(&g.name, &entity_name(&t.table_name), |n| {
                taken.iter().any(|x| x == n)
            });
            taken.push(g.name.clone());
        }
        self.type_attributes.push(type_attribute.clone());
        // Each table's time to live its own.
        self.time_to_live = None;
        if self.at == 0 {
            self.header(model);
        }
        self.table_head(t, type_attribute.as_deref());
        self.gather(t, &groups, &key_names, type_attribute.as_deref());
    }

    /// The chart's name for index `stored` of table `t` (the one being drafted): its own,
    /// unless an earlier table's index has it; then the table's name before it.
    fn chart_index_name(&mut self, t: &TableModel, stored: &str) -> String {
        let name = free_name(stored, &entity_name(&t.table_name), |n| {
            self.index_names.iter().any(|(_, _, c)| c == n)
        });
        self.index_names
            .push((self.at, stored.to_owned(), name.clone()));
        name
    }

    /// The chart's name for the drafted table's index `stored`.
    fn index_named(&self, stored: &str) -> String {
        self.index_names
            .iter()
            .find(|(t, s, _)| *t == self.at && s == stored)
            .map_or_else(|| stored.to_owned(), |(_, _, c)| c.clone())
    }

    /// The chart's name and description, once.
    fn header(&mut self, model: &Model) {
        let _ = writeln!(
            self.out,
            "# Drafted by `itemgraph chart import` from the NoSQL Workbench model `{}`.\n\
             # Check it with `itemgraph chart check`; each `TODO` names what the model could not tell.\n",
            model.model_name
        );
        let _ = writeln!(
            self.out,
            "format = 1\nname = {}",
            quote(&chart_name(&model.model_name))
        );
        if !model.model_metadata.description.is_empty() {
            let _ = writeln!(
                self.out,
                "description = {}",
                quote(&model.model_metadata.description)
            );
        }
    }

    /// The table's keys, type attribute (its time to live placed later) and indexes.
    fn table_head(&mut self, t: &TableModel, type_attribute: Option<&str>) {
        let pk = &t.key_attributes.partition_key;
        let sk = t.key_attributes.sort_key.as_ref();
        let head = if self.several {
            "[[tables]]"
        } else {
            "[table]"
        };
        let _ = writeln!(self.out, "\n{head}\nname = {}", quote(&t.table_name));
        let _ = writeln!(
            self.out,
            "partition_key = {}",
            key_attr(&pk.attribute_name, &pk.attribute_type)
        );
        if let Some(sk) = sk {
            let _ = writeln!(
                self.out,
                "sort_key = {}",
                key_attr(&sk.attribute_name, &sk.attribute_type)
            );
        }
        self.out.push_str("@TIME_TO_LIVE@");
        match type_attribute {
            Some(a) => {
                let _ = writeln!(self.out, "type_attribute = {}", quote(a));
            }
            None => {
                let _ = writeln!(
                    self.out,
                    "# No attribute names each item's facet: the entities are told by their keys.\ntype_attribute = false"
                );
            }
        }
        for i in &t.global_secondary_indexes {
            let k = &i.key_attributes;
            let name = self.chart_index_name(t, &i.index_name);
            let _ = writeln!(self.out, "\n[indexes.{}]", bare(&name));
            if self.at > 0 {
                let _ = writeln!(self.out, "table = {}", quote(&t.table_name));
            }
            if name != i.index_name {
                let _ = writeln!(
                    self.out,
                    "# The table's own name for it: another table's index is {} in this chart.\nstored = {}",
                    i.index_name,
                    quote(&i.index_name)
                );
            }
            let _ = writeln!(
                self.out,
                "partition_key = {}",
                key_attr(
                    &k.partition_key.attribute_name,
                    &k.partition_key.attribute_type
                )
            );
            if let Some(s) = &k.sort_key {
                let _ = writeln!(
                    self.out,
                    "sort_key = {}",
                    key_attr(&s.attribute_name, &s.attribute_type)
                );
            }
            let projection = match i.projection.projection_type.as_str() {
                "INCLUDE" => format!(
                    "[{}]",
                    i.projection
                        .non_key_attributes
                        .iter()
                        .flatten()
                        .map(|a| quote(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                other => quote(other),
            };
            let _ = writeln!(self.out, "projection = {projection}");
        }
    }

    /// The table's entities, their kinds and its patterns, from its samples' `groups`.
    fn gather(
        &mut self,
        t: &TableModel,
        groups: &[Group<'_>],
        key_names: &[&str],
        type_attribute: Option<&str>,
    ) {
        let pk = &t.key_attributes.partition_key;
        let sk = t.key_attributes.sort_key.as_ref();
        // Each entity's partition key first, so that a value of one in another's key is
        // named after it.
        let mut dry = Draft::default();
        for g in groups {
            if g.items.is_empty() {
                continue;
            }
            let alias = g
                .alias
                .map(|a| a.partition_key_alias.as_str())
                .unwrap_or(&pk.attribute_name);
            if let Some(t) = dry.infer(
                &g.name,
                &values(&g.items, &pk.attribute_name),
                pk.attribute_type == "N",
                Some(alias),
                &mut VarNames::default(),
                &[],
            ) {
                if let [(var, _)] = t.vars.as_slice() {
                    self.keys_seen.push((t.template.clone(), var.clone()));
                }
            }
        }
        // Entities, their keys inferred from their samples.
        let mut entity_text = String::new();
        let mut entities: Vec<DraftedEntity> = Vec::new();
        for g in groups {
            let flushed = std::mem::take(&mut self.pending);
            entity_text.push_str(&flushed);
            let mut e = String::new();
            let _ = writeln!(e, "\n[entities.{}]", g.name);
            if self.at > 0 {
                let _ = writeln!(e, "table = {}", quote(&t.table_name));
            }
            if g.items.is_empty() {
                let line = self.todo(format!(
                    "facet {}: no sample items, so its keys could not be inferred: declare it by hand",
                    g.name
                ));
                entity_text.push_str(&format!("\n{line}"));
                continue;
            }
            let pk_values = values(&g.items, &pk.attribute_name);
            let sk_values = sk.map(|s| values(&g.items, &s.attribute_name));
            let mut names = VarNames::reserving(
                key_names
                    .iter()
                    .copied()
                    .chain(type_attribute)
                    .chain(["Type"]),
            );
            // The facet's key aliases, else the key attributes' own names.
            let aliases = g
                .alias
                .map(|a| (a.partition_key_alias.as_str(), a.sort_key_alias.as_deref()))
                .unwrap_or((
                    pk.attribute_name.as_str(),
                    sk.map(|s| s.attribute_name.as_str()),
                ));
            let aliases = Some(aliases);
            let pk_t = match self.infer(
                &g.name,
                &pk_values,
                pk.attribute_type == "N",
                aliases.map(|a| a.0),
                &mut names,
                &[],
            ) {
                Some(t) => t,
                None => continue,
            };
            let sk_t = match (&sk, &sk_values) {
                (Some(s), Some(v)) => match self.infer(
                    &g.name,
                    v,
                    s.attribute_type == "N",
                    aliases.and_then(|a| a.1),
                    &mut names,
                    std::slice::from_ref(&pk_t),
                ) {
                    Some(t) => Some(t),
                    None => continue,
                },
                _ => None,
            };
            let mut key_line = vec![quote(&pk_t.template)];
            if let Some(s) = &sk_t {
                key_line.push(quote(&s.template));
            }
            let _ = writeln!(e, "key = [{}]", key_line.join(", "));
            if let (Some(_), Some(v)) = (&type_attribute, &g.type_value) {
                if *v != g.name {
                    let _ = writeln!(e, "type_value = {}", quote(v));
                }
            }
            // The indexes every item of it carries keys in.
            let mut joined = Vec::new();
            for i in &t.global_secondary_indexes {
                let k = &i.key_attributes;
                let carried = g
                    .items
                    .iter()
                    .filter(|it| it.contains_key(&k.partition_key.attribute_name))
                    .count();
                if carried == 0 {
                    continue;
                }
                if carried < g.items.len() {
                    e += &self.todo(format!(
                        "entity {}: only some samples carry index {}'s keys; declare its templates there with an optional part if it joins it",
                        g.name, i.index_name
                    ));
                    continue;
                }
                let known = [pk_t.clone()]
                    .into_iter()
                    .chain(sk_t.clone())
                    .collect::<Vec<_>>();
                let Some(ipk) = self.infer(
                    &g.name,
                    &values(&g.items, &k.partition_key.attribute_name),
                    k.partition_key.attribute_type == "N",
                    Some(&k.partition_key.attribute_name),
                    &mut names,
                    &known,
                ) else {
                    continue;
                };
                let isk = match &k.sort_key {
                    Some(s) => {
                        let mut known = known.clone();
                        known.push(ipk.clone());
                        match self.infer(
                            &g.name,
                            &values(&g.items, &s.attribute_name),
                            s.attribute_type == "N",
                            Some(&s.attribute_name),
                            &mut names,
                            &known,
                        ) {
                            Some(t) => Some(t),
                            None => continue,
                        }
                    }
                    None => None,
                };
                let mut line = vec![quote(&ipk.template)];
                if let Some(s) = &isk {
                    line.push(quote(&s.template));
                }
                let name = self.index_named(&i.index_name);
                let _ = writeln!(e, "indexes.{} = [{}]", bare(&name), line.join(", "));
                joined.push((i.index_name.clone(), ipk, isk));
            }

            // Attributes: every variable, then every other attribute the samples hold.
            let _ = writeln!(e, "\n[entities.{}.attributes]", g.name);
            let mut stored_vars: HashSet<String> = HashSet::new();
            let all_vars: Vec<&(String, Vec<String>)> = std::iter::once(&pk_t)
                .chain(sk_t.iter())
                .chain(
                    joined
                        .iter()
                        .flat_map(|(_, p, s)| std::iter::once(p).chain(s.iter())),
                )
                .flat_map(|t| t.vars.iter())
                .collect();
            let mut declared: HashSet<String> = HashSet::new();
            let in_primary: HashSet<String> = std::iter::once(&pk_t)
                .chain(sk_t.iter())
                .flat_map(|t| t.vars.iter().map(|(n, _)| n.clone()))
                .collect();
            for (var, vals) in all_vars {
                if !declared.insert(var.clone()) {
                    continue;
                }
                let kind = if self.ints.contains(var) {
                    "int".to_owned()
                } else {
                    self.kind_for(vals)
                };
                // The attribute the values are, where the samples hold one.
                let source = g.items[0]
                    .iter()
                    .filter(|(n, _)| !key_names.contains(&n.as_str()) && Some(n.as_str()) != type_attribute)
                    .find(|(n, _)| {
                        g.items.iter().zip(vals).all(|(it, v)| matches!(it.get(*n), Some(AttributeValue::S(s) | AttributeValue::N(s)) if s == v))
                    })
                    .map(|(n, _)| n.clone());
                // A whole index key that is the variable's value: the attribute is that key.
                let whole_index_key = joined.iter().find_map(|(i, p, s)| {
                    let idx = t
                        .global_secondary_indexes
                        .iter()
                        .find(|x| x.index_name == *i)?;
                    if p.template == format!("{{{var}}}") {
                        return Some(idx.key_attributes.partition_key.attribute_name.clone());
                    }
                    let s = s.as_ref()?;
                    (s.template == format!("{{{var}}}")).then(|| {
                        idx.key_attributes
                            .sort_key
                            .as_ref()
                            .map(|k| k.attribute_name.clone())
                    })?
                });
                let ty = if kind == "int" {
                    "type = \"int\", min = 0, max = 999999999".to_owned()
                } else if let Some(form) = time_form(vals.iter().map(String::as_str)) {
                    format!("type = \"timestamp\", form = {}", quote(form.name()))
                } else {
                    format!("type = {}", quote(&kind))
                };
                match (source, whole_index_key) {
                    (Some(src), _) => {
                        stored_vars.insert(src.clone());
                        let stored = if src != *var {
                            format!(", stored = {}", quote(&src))
                        } else {
                            String::new()
                        };
                        let _ = writeln!(e, "{} = {{ {ty}{stored} }}", var);
                    }
                    (None, Some(key)) if !in_primary.contains(var) => {
                        let _ = writeln!(e, "{} = {{ {ty}, stored = {} }}", var, quote(&key));
                    }
                    _ if in_primary.contains(var)
                        || joined.iter().any(|(_, p, s)| {
                            p.vars.len() == 1 && p.vars[0].0 == *var
                                || s.as_ref()
                                    .is_some_and(|s| s.vars.len() == 1 && s.vars[0].0 == *var)
                        }) =>
                    {
                        let _ = writeln!(e, "{} = {{ {ty}, key_only = true }}", var);
                    }
                    _ => {
                        e += &self.todo(format!(
                            "entity {}: `{var}` is part of an index key and of no attribute the samples hold, so it could not be read back: store it beside the key",
                            g.name
                        ));
                        let _ = writeln!(e, "{} = {{ {ty} }}", var);
                    }
                }
            }
            let mut others: Vec<&String> = match g.facet_attributes {
                Some(list) => list.iter().collect(),
                None => {
                    let mut seen: Vec<&String> = Vec::new();
                    for it in &g.items {
                        for n in it.keys() {
                            if !seen.contains(&n) {
                                seen.push(n);
                            }
                        }
                    }
                    seen.sort();
                    seen
                }
            };
            others.retain(|n| {
                !key_names.contains(&n.as_str())
                    && Some(n.as_str()) != type_attribute
                    && !stored_vars.contains(*n)
            });
            for stored in others {
                let mut name = attribute_name(stored);
                while declared.contains(&name) {
                    name.push('_');
                }
                declared.insert(name.clone());
                let vals: Vec<&AttributeValue> =
                    g.items.iter().filter_map(|it| it.get(stored)).collect();
                let declared_type = t
                    .non_key_attributes
                    .iter()
                    .find(|a| a.attribute_name == *stored)
                    .map(|a| a.attribute_type.as_str());
                let (mut ty, note) = attribute_type(declared_type, &vals);
                // Epoch seconds under a name that says they end the item: its time to live.
                let lower = stored.to_lowercase();
                let epoch = !vals.is_empty() && vals.iter().all(|v| matches!(v, AttributeValue::N(n) if n.len() == 10 && n.bytes().all(|b| b.is_ascii_digit())));
                if epoch
                    && (lower == "ttl"
                        || lower.starts_with("expire")
                        || lower.starts_with("expiry"))
                {
                    ty = "type = \"expiry\"".into();
                    if self.time_to_live.is_none() {
                        self.time_to_live = Some(name.clone());
                    }
                }
                let optional = if vals.len() < g.items.len() {
                    ", optional = true"
                } else {
                    ""
                };
                let stored_name = if name != *stored {
                    format!(", stored = {}", quote(stored))
                } else {
                    String::new()
                };
                if let Some(note) = note {
                    e += &self.todo(format!("entity {}: `{name}`: {note}", g.name));
                }
                let _ = writeln!(e, "{name} = {{ {ty}{optional}{stored_name} }}");
            }
            entity_text.push_str(&e);
            entities.push((g.name.clone(), pk_t, sk_t, joined));
        }
        let flushed = std::mem::take(&mut self.pending);
        entity_text.push_str(&flushed);
        // The kinds the variables need, before the entities that use them.
        for (name, (pattern, max)) in std::mem::take(&mut self.kinds) {
            if !self.kinds_written.insert(name.clone()) {
                continue;
            }
            let _ = writeln!(
                self.out,
                "\n[kinds.{name}]\npattern = {}\nmax_length = {max}",
                quote(&pattern)
            );
        }
        self.out.push_str(&entity_text);
        self.drafted += entities.len();
        self.patterns(t, &entities);
        let ttl = match &self.time_to_live {
            Some(a) => format!(
                "# `{a}` holds epoch seconds and is named as an expiry: taken for DynamoDB's Time to Live.\ntime_to_live = {}\n",
                quote(a)
            ),
            None => String::new(),
        };
        self.out = self.out.replacen("@TIME_TO_LIVE@", &ttl, 1);
    }
}
