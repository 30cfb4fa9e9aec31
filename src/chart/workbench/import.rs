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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use super::{Model, TableModel};
use crate::chart::types::TimeForm;
use crate::store::{AttributeValue, Item};

/// The drafted chart's text, and the TODOs it holds.
pub struct Drafted {
    pub text: String,
    pub todos: Vec<String>,
}

/// A chart drafted from `model`.
pub fn import(model: &Model) -> Result<Drafted, String> {
    let Some(table) = model.data_model.first() else {
        return Err("the model has no table".into());
    };
    let mut d = Draft::default();
    if model.data_model.len() > 1 {
        let line = d.todo(format!(
            "the model has {} tables; this chart is drafted from the first, `{}` (import the \
             others one at a time)",
            model.data_model.len(),
            table.table_name
        ));
        d.out.push_str(&line);
    }
    d.table(model, table);
    Ok(Drafted {
        text: d.out,
        todos: d.todos,
    })
}

#[derive(Default)]
struct Draft {
    out: String,
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
        let type_attribute = type_attribute(t, &items, &key_names);
        let groups = groups(t, &items, type_attribute.as_deref());

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
        let _ = writeln!(self.out, "\n[table]\nname = {}", quote(&t.table_name));
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
        match &type_attribute {
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
            let _ = writeln!(self.out, "\n[indexes.{}]", bare(&i.index_name));
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

        // Each entity's partition key first, so that a value of one in another's key is
        // named after it.
        let mut dry = Draft::default();
        for g in &groups {
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
        for g in &groups {
            let flushed = std::mem::take(&mut self.pending);
            entity_text.push_str(&flushed);
            let mut e = String::new();
            let _ = writeln!(e, "\n[entities.{}]", g.name);
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
            let mut names = VarNames::default();
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
                let _ = writeln!(e, "indexes.{} = [{}]", bare(&i.index_name), line.join(", "));
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
                    .filter(|(n, _)| !key_names.contains(&n.as_str()) && Some(n.as_str()) != type_attribute.as_deref())
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
                    && Some(n.as_str()) != type_attribute.as_deref()
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
            let _ = writeln!(
                self.out,
                "\n[kinds.{name}]\npattern = {}\nmax_length = {max}",
                quote(&pattern)
            );
        }
        self.out.push_str(&entity_text);
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

    /// Root fields and patterns: a GetItem of each entity, the nodes' BatchGetItem, a Query
    /// of each item collection the samples show.
    fn patterns(&mut self, t: &TableModel, entities: &[DraftedEntity]) {
        let pk = &t.key_attributes.partition_key.attribute_name;
        let sk = t
            .key_attributes
            .sort_key
            .as_ref()
            .map(|s| s.attribute_name.clone());
        let mut n = 0;
        let mut text = String::new();
        let mut connections: BTreeMap<String, Vec<String>> = BTreeMap::new();
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
        n += 1;
        let _ = writeln!(
            text,
            "\n[patterns.{n}]\nname = \"Any entity by global id (`node`, `nodes`), references\"\nrequest = \"BatchGetItem\"\nfield = \"Query.nodes\""
        );
        // Item collections: a child sharing a parent's partition, by its sort-key prefix.
        for (parent, ppk, psk, _) in entities {
            // The head of an item collection: keyed by its partition alone (its sort key
            // the same).
            if psk.as_ref().is_some_and(|s| s.template != ppk.template) {
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
                let owner = entities
                    .iter()
                    .find(|(o, opk, _, _)| o != child && opk.template == ipk.template);
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
                    Some((owner, ..)) => {
                        let field = if connections.get(owner).is_some_and(|c| {
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
        for (owner, list) in connections {
            let _ = writeln!(self.out, "\n[entities.{owner}.connections]");
            for c in list {
                let _ = writeln!(self.out, "{c}");
            }
        }
        self.out.push_str(&query);
        self.out.push_str(&text);
    }

    /// The template of one key attribute's values, each segment literal or a variable.
    fn infer(
        &mut self,
        entity: &str,
        values: &[Option<String>],
        number: bool,
        alias: Option<&str>,
        names: &mut VarNames,
        known: &[Inferred],
    ) -> Option<Inferred> {
        let others = self.keys_seen.clone();
        let others = others.as_slice();
        let Some(values): Option<Vec<&String>> = values.iter().map(Option::as_ref).collect() else {
            let line = self.todo(format!("entity {entity}: a sample lacks a key attribute"));
            self.pending.push_str(&line);
            return None;
        };
        // A variable whose values another key already has: that variable again.
        let reuse = |vals: &[String]| -> Option<String> {
            known
                .iter()
                .flat_map(|k| k.vars.iter())
                .find(|(_, v)| v.as_slice() == vals)
                .map(|(n, _)| n.clone())
        };
        if number {
            let vals: Vec<String> = values.iter().map(|v| (*v).clone()).collect();
            let name = reuse(&vals).unwrap_or_else(|| {
                names
                    .take(alias_name(alias).unwrap_or_else(|| format!("{}Id", lower_first(entity))))
            });
            self.ints.insert(name.clone());
            return Some(Inferred {
                template: format!("{{{name}}}"),
                vars: vec![(name, vals)],
            });
        }
        let split: Vec<Vec<&str>> = values.iter().map(|v| v.split('#').collect()).collect();
        let count = split[0].len();
        if split.iter().any(|s| s.len() != count) {
            let line = self.todo(format!(
                "entity {entity}: its keys ({}) have different numbers of `#`-separated parts: one template cannot render them all",
                values.iter().take(3).map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
            ));
            self.pending.push_str(&line);
            return None;
        }
        let alias_parts: Option<Vec<&str>> = alias
            .map(|a| a.split('#').collect())
            .filter(|p: &Vec<&str>| p.len() == count);
        let mut template = String::new();
        let mut vars = Vec::new();
        for j in 0..count {
            if j > 0 {
                template.push('#');
            }
            let column: Vec<&str> = split.iter().map(|s| s[j]).collect();
            if column.iter().all(|c| *c == column[0]) && split.len() > 1 {
                template.push_str(column[0]);
                continue;
            }
            if column.iter().all(|c| *c == column[0]) {
                // One sample: a segment is literal unless the alias names a variable there,
                // or it reads as a value (digits, an id) rather than a word.
                let named = alias_parts.as_ref().and_then(|p| placeholder(p[j]));
                if named.is_none() && !looks_like_value(column[0]) {
                    template.push_str(column[0]);
                    continue;
                }
            }
            let prefix = shared_prefix(&column);
            let vals: Vec<String> = column
                .iter()
                .map(|c| c[prefix.len()..].to_owned())
                .collect();
            let name = match reuse(&vals) {
                Some(n) => n,
                None => {
                    let base = alias_parts
                        .as_ref()
                        .and_then(|p| placeholder(p[j]).or_else(|| word(p[j])))
                        .or_else(|| {
                            (vars.is_empty() && var_segments(&split) == 1)
                                .then(|| alias_name(alias))
                                .flatten()
                        })
                        .or_else(|| own_key(others, &split[0][..j], column[0]))
                        .or_else(|| {
                            (j > 0
                                && split[0][j - 1].chars().all(|c| c.is_ascii_alphabetic())
                                && split[0][j - 1].len() > 1)
                                .then(|| attribute_name(&split[0][j - 1].to_lowercase()))
                        })
                        .unwrap_or_else(|| format!("{}Id", lower_first(entity)));
                    names.take(base)
                }
            };
            let _ = write!(template, "{prefix}{{{name}}}");
            vars.push((name, vals));
        }
        // Checked against every sample: the template reads each key back, and renders it.
        let parsed = crate::chart::template::Template::parse(&template).ok();
        let renders_all = parsed.as_ref().is_some_and(|t| {
            values.iter().all(|v| {
                t.read(v).is_some_and(|read| {
                    t.render(|n| {
                        read.iter()
                            .find(|(var, _)| var.name == n)
                            .map(|(_, x)| x.clone())
                    })
                    .is_ok_and(|back| back == **v)
                })
            })
        });
        if !renders_all {
            let line = self.todo(format!(
                "entity {entity}: `{template}` does not render every sample's key back: declare its key by hand"
            ));
            self.pending.push_str(&line);
            return None;
        }
        Some(Inferred { template, vars })
    }

    /// The kind a variable's values are of: a ULID, digits, or a kind of the chart's own.
    fn kind_for(&mut self, values: &[String]) -> String {
        let max = values.iter().map(|v| v.chars().count()).max().unwrap_or(1);
        if values
            .iter()
            .all(|v| crate::chart::kinds::validate_id("v", v).is_ok_and(|x| x.to_string() == *v))
        {
            return "ulid".into();
        }
        if values
            .iter()
            .all(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        {
            self.kinds
                .insert("digits".into(), ("[0-9]+".into(), 40.max(max)));
            return "digits".into();
        }
        let name = "text".to_owned();
        let entry = self
            .kinds
            .entry(name.clone())
            .or_insert(("[^#\\s]+".into(), 64));
        entry.1 = entry.1.max(max.next_power_of_two().max(64));
        name
    }
}

/// Variable names taken so far in one entity.
#[derive(Default)]
struct VarNames(HashSet<String>);

impl VarNames {
    fn take(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut n = 2;
        while !self.0.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        name
    }
}

/// The attribute whose value is constant within each facet and differs between facets.
fn type_attribute(t: &TableModel, items: &[(Option<&str>, Item)], keys: &[&str]) -> Option<String> {
    let mut names: Vec<&String> = items.iter().flat_map(|(_, i)| i.keys()).collect();
    names.sort();
    names.dedup();
    let facets = !t.table_facets.is_empty();
    names
        .into_iter()
        .filter(|n| !keys.contains(&n.as_str()))
        .find(|n| {
            let mut by_facet: HashMap<Option<&str>, &str> = HashMap::new();
            let mut seen: HashSet<&str> = HashSet::new();
            for (f, i) in items {
                let Some(AttributeValue::S(v)) = i.get(*n) else {
                    return false;
                };
                if !facets {
                    seen.insert(v);
                    continue;
                }
                match by_facet.get(f) {
                    Some(x) if x != v => return false,
                    Some(_) => {}
                    None => {
                        if !seen.insert(v) {
                            return false;
                        }
                        by_facet.insert(*f, v);
                    }
                }
            }
            if facets {
                by_facet.len()
                    == t.table_facets
                        .iter()
                        .filter(|f| !f.table_data.is_empty())
                        .count()
                    && !by_facet.is_empty()
            } else {
                // Without facets: a few words naming kinds of items, not a value per item.
                let words = [
                    "type",
                    "entitytype",
                    "entity",
                    "_type",
                    "kind",
                    "_et",
                    "__typename",
                ];
                words.contains(&n.to_lowercase().as_str()) && !seen.is_empty()
            }
        })
        .cloned()
}

/// The entities to draft: the facets, or the values of the type attribute, or the table.
fn groups<'m>(
    t: &'m TableModel,
    items: &[(Option<&'m str>, Item)],
    type_attribute: Option<&str>,
) -> Vec<Group<'m>> {
    if !t.table_facets.is_empty() {
        return t
            .table_facets
            .iter()
            .map(|f| {
                let its: Vec<Item> = items
                    .iter()
                    .filter(|(n, _)| *n == Some(f.facet_name.as_str()))
                    .map(|(_, i)| i.clone())
                    .collect();
                let type_value = type_attribute.and_then(|a| match its.first()?.get(a)? {
                    AttributeValue::S(v) => Some(v.clone()),
                    _ => None,
                });
                Group {
                    name: entity_name(&f.facet_name),
                    type_value,
                    items: its,
                    alias: Some(&f.key_attribute_alias),
                    facet_attributes: Some(&f.non_key_attributes),
                }
            })
            .collect();
    }
    match type_attribute {
        Some(a) => {
            let mut by: BTreeMap<String, Vec<Item>> = BTreeMap::new();
            for (_, i) in items {
                if let Some(AttributeValue::S(v)) = i.get(a) {
                    by.entry(v.clone()).or_default().push(i.clone());
                }
            }
            by.into_iter()
                .map(|(v, its)| Group {
                    name: entity_name(&v),
                    type_value: Some(v),
                    items: its,
                    alias: None,
                    facet_attributes: None,
                })
                .collect()
        }
        None => vec![Group {
            name: entity_name(&singular(&t.table_name)),
            type_value: None,
            items: items.iter().map(|(_, i)| i.clone()).collect(),
            alias: None,
            facet_attributes: None,
        }],
    }
}

fn values(items: &[Item], attr: &str) -> Vec<Option<String>> {
    items
        .iter()
        .map(|i| match i.get(attr)? {
            AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// The chart type of an attribute from its declared descriptor and its sample values, and
/// what the import could not tell of it.
fn attribute_type(declared: Option<&str>, values: &[&AttributeValue]) -> (String, Option<String>) {
    let strings: Vec<&str> = values
        .iter()
        .filter_map(|v| match v {
            AttributeValue::S(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let numbers: Vec<&str> = values
        .iter()
        .filter_map(|v| match v {
            AttributeValue::N(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let integer = |s: &&str| s.parse::<i64>().is_ok_and(|n| n.to_string() == *s);
    let descriptor = declared.unwrap_or(match values.first() {
        Some(AttributeValue::N(_)) => "N",
        Some(AttributeValue::Bool(_)) => "BOOL",
        Some(AttributeValue::M(_)) => "M",
        Some(AttributeValue::L(_)) => "L",
        Some(AttributeValue::Ss(_)) => "SS",
        _ => "S",
    });
    match descriptor {
        "N" if numbers.iter().all(integer) => ("type = \"int\"".into(), None),
        "N" => (
            "type = \"int\"".into(),
            Some(
                "numbers with a fraction: this server's numbers are whole (an int, or cents)"
                    .into(),
            ),
        ),
        "BOOL" => ("type = \"boolean\"".into(), None),
        "S" if !strings.is_empty()
            && time_form(strings.iter().copied()).is_some_and(|f| f != TimeForm::Rfc3339) =>
        {
            (
                format!(
                    "type = \"timestamp\", form = {}",
                    quote(time_form(strings.iter().copied()).map_or("", |f| f.name()))
                ),
                None,
            )
        }
        "S" if !strings.is_empty()
            && strings
                .iter()
                .all(|s| crate::chart::types::rfc3339_to_epoch(s).is_some()) =>
        {
            ("type = \"timestamp\"".into(), None)
        }
        "S" if !strings.is_empty()
            && strings.iter().all(integer)
            && strings.iter().all(|s| !s.starts_with('0') || s.len() == 1) =>
        {
            ("type = \"int\", stored_as = \"string\"".into(), None)
        }
        "S" => ("type = \"string\"".into(), None),
        "M" => (
            "type = \"map\", of = \"string\"".into(),
            Some("a map: declare its entries' type, or a shape of its fields".into()),
        ),
        "L" | "SS" | "NS" => (
            "type = \"list\", of = \"string\"".into(),
            Some(format!("a {descriptor}: declare its elements' type")),
        ),
        other => (
            "type = \"string\"".into(),
            Some(format!("type `{other}` is not one a chart declares")),
        ),
    }
}

fn key_attr(name: &str, ty: &str) -> String {
    match ty {
        "N" => format!("{{ name = {}, type = \"N\" }}", quote(name)),
        _ => quote(name),
    }
}

/// A TOML basic string (a JSON string is one: the same escapes).
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// A TOML key as written: bare where it can be.
fn bare(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        s.to_owned()
    } else {
        quote(s)
    }
}

/// A variable's name from a key alias's part: `<id>`, `{id}`, `[id]`.
fn placeholder(part: &str) -> Option<String> {
    let inner = part
        .rsplit_once('<')
        .and_then(|(_, r)| r.strip_suffix('>'))
        .or_else(|| part.rsplit_once('{').and_then(|(_, r)| r.strip_suffix('}')))
        .or_else(|| part.rsplit_once('[').and_then(|(_, r)| r.strip_suffix(']')))?;
    let name = attribute_name(inner);
    (!name.is_empty()).then_some(name)
}

/// A key alias's part that is a plain name (`State` of `State#Date`).
fn word(part: &str) -> Option<String> {
    (!part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| attribute_name(part))
}

/// A whole key's alias that names one value (`AccountId`).
fn alias_name(alias: Option<&str>) -> Option<String> {
    let a = alias?;
    placeholder(a).or_else(|| {
        (a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !a.is_empty())
            .then(|| attribute_name(a))
    })
}

/// How many segments of a key's values vary (are variables).
fn var_segments(split: &[Vec<&str>]) -> usize {
    (0..split[0].len())
        .filter(|j| split.iter().any(|s| s[*j] != split[0][*j]) || looks_like_value(split[0][*j]))
        .count()
}

/// A variable named after another entity's key it renders the same as (`p#{sku}`, the
/// product's key, in an order's index key): that key's variable.
fn own_key(others: &[(String, String)], before: &[&str], _value: &str) -> Option<String> {
    let literal: String = before.iter().map(|s| format!("{s}#")).collect();
    others.iter().find_map(|(template, var)| {
        (template == &format!("{literal}{{{var}}}")).then(|| var.clone())
    })
}

fn looks_like_value(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// The literal text the values share before what varies, cut after its last character
/// that is no letter or digit (`c-` of `c-10001` and `c-10002`, not `c-1000`).
fn shared_prefix(column: &[&str]) -> String {
    let first = column[0];
    let mut len = first.len();
    for c in &column[1..] {
        len = len.min(
            first
                .bytes()
                .zip(c.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let shared = &first[..len];
    let cut = shared
        .char_indices()
        .filter(|(_, c)| !c.is_alphanumeric())
        .map(|(i, c)| i + c.len_utf8())
        .next_back();
    let prefix = match cut {
        Some(i) => &shared[..i],
        // A letter prefix before digits (`c12345`): the letters.
        None => &shared[..shared.find(|c: char| c.is_ascii_digit()).unwrap_or(0)],
    };
    // Digits are the value's own (`2026-` of two dates is no prefix).
    if prefix.chars().any(|c| c.is_ascii_digit()) {
        return String::new();
    }
    // Every value keeps something after it.
    if column.iter().any(|c| c.len() <= prefix.len()) {
        return String::new();
    }
    prefix.to_owned()
}

/// The constant text a template starts with, up to its first variable.
fn literal_prefix(template: &str) -> String {
    template.split('{').next().unwrap_or("").to_owned()
}

/// `EntityType` → `entityType`, `GSI1-PK` → `gsi1Pk`, `user_name` → `userName`.
fn attribute_name(stored: &str) -> String {
    let words: Vec<&str> = stored
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        let w = if w
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            w.to_lowercase()
        } else {
            w.to_string()
        };
        if i == 0 {
            out.push_str(&lower_first(&w));
        } else {
            out.push_str(&upper_first(&w));
        }
    }
    if out.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.insert(0, 'a');
    }
    out
}

fn entity_name(s: &str) -> String {
    upper_first(&attribute_name(s))
}

fn chart_name(s: &str) -> String {
    let words: Vec<String> = s
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        "imported".into()
    } else {
        words.join("-")
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_lowercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn plural(s: &str) -> String {
    if s.ends_with('s') {
        format!("{s}es")
    } else if let Some(stem) = s.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{s}s")
    }
}

fn singular(s: &str) -> String {
    s.strip_suffix("ies")
        .map(|x| format!("{x}y"))
        .or_else(|| s.strip_suffix('s').map(str::to_owned))
        .unwrap_or_else(|| s.to_owned())
}

/// The one form of time every value is written in, where they all are times: a form of one
/// width first (it can be part of a key), RFC 3339 as given last.
fn time_form<'a>(mut values: impl Iterator<Item = &'a str> + Clone) -> Option<TimeForm> {
    let forms = [
        TimeForm::Seconds,
        TimeForm::Millis,
        TimeForm::LocalSeconds,
        TimeForm::Date,
    ];
    for f in forms {
        if values
            .clone()
            .all(|v| f.fits(&AttributeValue::S(v.to_owned())))
        {
            return Some(f);
        }
    }
    values
        .all(|v| crate::chart::types::rfc3339_to_epoch(v).is_some())
        .then_some(TimeForm::Rfc3339)
}
