//! A chart's example operations: one per access pattern a root field reaches, written from
//! the chart and its samples, each headed by the comment saying which pattern it shows,
//! the request it is and what it costs. The playground preloads them as its tabs when it
//! serves the chart, as it does `examples/` (and the chart's write tabs) for the built-in one.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Value};

use super::generate::Generator;
use super::mutate::id_field;
use super::record::{key_var_names, Record};
use super::{lower_first, upper_first};
use crate::chart::types::Type;
use crate::chart::{Action, Chart, Entity, Mutation, Pattern, Request};
use crate::store::{AttributeValue, Item};

/// The chart's examples, in the order of its patterns: its reads from its samples, its
/// writes from the samples too ([`write_examples`]).
pub fn examples(chart: &Chart) -> Vec<String> {
    let mut writes = Writes::new(chart, &chart.samples);
    let mut out = Vec::new();
    for p in chart.patterns.values() {
        let op = match p.request {
            Request::Write { .. } => writes.example(p),
            _ => example(chart, p),
        };
        out.extend(op);
    }
    out
}

/// The tabs of the chart's write patterns alone, their inputs generated from `items` (the
/// data the table is seeded with): the built-in chart's, after `examples/`.
pub fn write_examples(chart: &Chart, items: &[Item]) -> Vec<String> {
    let mut writes = Writes::new(chart, items);
    chart
        .patterns
        .values()
        .filter(|p| matches!(p.request, Request::Write { .. }))
        .filter_map(|p| writes.example(p))
        .collect()
}

/// A write pattern's tab: its mutation with an input generated from the chart and the
/// seeded data. A create makes a new item; a change or delete names the item a create
/// tab before it makes (when its input holds the whole key), else one of the seeded
/// items. Each says the requests it makes, as the write path decides them.
struct Writes<'c> {
    chart: &'c Chart,
    generator: Generator<'c>,
    /// What each create tab makes, where its input holds the whole key: the item as the
    /// tabs so far leave it, and their patterns (the create's, then each change's).
    created: HashMap<String, (Vec<u32>, Item)>,
}

impl<'c> Writes<'c> {
    fn new(chart: &'c Chart, items: &[Item]) -> Self {
        Writes {
            chart,
            generator: Generator::new(chart, items.iter().cloned()),
            created: HashMap::new(),
        }
    }

    fn example(&mut self, p: &Pattern) -> Option<String> {
        let chart = self.chart;
        let Request::Write { request, .. } = &p.request else {
            return None;
        };
        let m = chart.mutations.values().find(|m| m.pattern == p.number)?;
        let e = &chart.entities[&m.entity];
        if let Some(every) = &m.every {
            return self.bulk(p, m, e, every);
        }
        let words = crate::chart::words(&e.name);
        let mut head = format!("# Access pattern {}: {}.\n#\n", p.number, p.name);
        let (input, requests) = match m.action {
            Action::Create => {
                let input = self.generator.create_input(m, 1).ok()?;
                writeln!(
                    head,
                    "# One {}: a new {words}{}.\n# Its values are generated from the chart and the seeded data, as\n# `itemgraph seed --generate` makes them.",
                    request.name(),
                    if m.with.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " with its {}",
                            m.with.keys().cloned().collect::<Vec<_>>().join(" and ")
                        )
                    }
                )
                .ok()?;
                if let Some(item) = made_item(chart, e, &input) {
                    self.created.insert(e.name.clone(), (vec![p.number], item));
                }
                (input, 1)
            }
            Action::Update | Action::Delete => {
                let (item, from) = self.target(m, e)?;
                let mut fields: IndexMap<Name, Value> = IndexMap::new();
                if m.by_id {
                    let id = Record::new(Arc::from(e.name.as_str()), item.clone()).global_id(e);
                    fields.insert(Name::new(id_field(e)), Value::String(id));
                } else {
                    for v in key_var_names(e) {
                        let value = self
                            .generator
                            .input_value(&e.attributes[&v].ty, item.get(&v)?)?;
                        fields.insert(Name::new(v), value);
                    }
                }
                if let Some(version) = &e.writes.version {
                    let v = match item.get(version) {
                        Some(AttributeValue::N(n)) => n.parse::<i64>().unwrap_or(1),
                        _ => 1,
                    };
                    fields.insert(Name::new("expectedVersion"), Value::Number(v.into()));
                }
                // A put of an entry on an item without the map writes the map whole after.
                let mut whole_map = false;
                let reads = if let Some(entry) = &m.entry {
                    // An entry of the map: its key made from the key's kind (the first
                    // entry the item holds, for a remove), the value from its type.
                    let held = match item.get(&entry.map) {
                        Some(AttributeValue::M(m)) => m.keys().min().cloned(),
                        _ => None,
                    };
                    let key = match (&held, &entry.key_kind) {
                        (Some(k), _) => Value::String(k.clone()),
                        (None, Some(kind)) => {
                            self.generator.made(&Type::Kind(kind.clone()), "key", 1)?
                        }
                        (None, None) => Value::String("key-1".into()),
                    };
                    fields.insert(Name::new("key"), key);
                    whole_map = !entry.remove && held.is_none();
                    if !entry.remove {
                        let value = self.generator.made(&entry.of, &entry.map, 1)?;
                        fields.insert(Name::new("value"), value);
                    }
                    false
                } else if m.action == Action::Update {
                    let changed = self.changes(m, e, &item)?;
                    let names: Vec<String> = changed.iter().map(|(n, _)| n.clone()).collect();
                    if let (Some(_), Some((tabs, made))) = (&from, self.created.get_mut(&e.name)) {
                        // A later tab names it as this one leaves it.
                        tabs.push(p.number);
                        for (name, v) in &changed {
                            if let Value::Enum(s) = v {
                                made.insert(name.clone(), AttributeValue::S(s.to_string()));
                            }
                        }
                        if let Some(version) = &e.writes.version {
                            let next = match made.get(version) {
                                Some(AttributeValue::N(n)) => n.parse::<i64>().unwrap_or(1) + 1,
                                _ => 2,
                            };
                            made.insert(version.clone(), AttributeValue::N(next.to_string()));
                        }
                    }
                    for (name, v) in changed {
                        fields.insert(Name::new(name), v);
                    }
                    chart.plans[&m.name]
                        .read_first
                        .when(&|a| names.iter().any(|n| n == a))
                } else {
                    chart.plans[&m.name].read_first.always
                };
                // Without the read, the write is the item's own conditional one.
                let head_line = match (reads, m.action) {
                    (true, _) => format!(
                        "A strongly consistent GetItem of the {words}, then one {}",
                        request.name()
                    ),
                    (false, Action::Update) if whole_map => format!(
                        "A conditional UpdateItem of the entry, refused as the {words} has no `{}` yet,\n# then one of the whole map",
                        m.entry.as_ref().map_or("", |x| x.map.as_str())
                    ),
                    (false, Action::Update) if m.entry.is_some() => {
                        "One conditional UpdateItem of the entry alone".to_owned()
                    }
                    (false, Action::Update) => "One conditional UpdateItem".to_owned(),
                    (false, _) => "One conditional DeleteItem".to_owned(),
                };
                writeln!(head, "# {head_line}.").ok()?;
                let verb = if m.action == Action::Update {
                    "changes"
                } else {
                    "removes"
                };
                match from.as_deref() {
                    Some([create]) => writeln!(
                        head,
                        "# It {verb} the {words} the tab of access pattern {create} creates: run that one first."
                    ),
                    Some(tabs) => writeln!(
                        head,
                        "# It {verb} the {words} as the tabs of access patterns {} leave it: run them first.",
                        and_list(tabs)
                    ),
                    None => writeln!(head, "# It {verb} one {words} of the seeded data."),
                }
                .ok()?;
                (Value::Object(fields), 1 + u32::from(reads || whole_map))
            }
        };
        let payload = lower_first(&e.name);
        let mut body = String::new();
        if m.action == Action::Delete && e.node {
            let _ = writeln!(body, "    deleted{}Id", e.name);
        }
        // A counter of an item with counter shards costs a Query of its shards when read
        // after a change (a create answers it from what it wrote): left out there.
        let sharded = chart
            .entities
            .values()
            .any(|s| s.shards_of.as_ref().is_some_and(|(of, _)| *of == e.name));
        let selected = if sharded && m.action != Action::Create {
            fields_without_counters(chart, e, 6)
        } else {
            fields(chart, e, 6)
        };
        let _ = write!(body, "    {payload} {{\n{selected}    }}\n");
        if m.token.is_some() {
            body.push_str("    replayed\n");
        }
        Some(format!(
            "{head}#\n# DynamoDB requests: {requests}\n# dynamodb-requests: {requests}\n\nmutation Pattern{}{} {{\n  {}(input: {input}) {{\n{body}  }}\n}}\n",
            p.number,
            upper_first(&m.name),
            m.name,
        ))
    }

    /// A bulk delete's tab: the key values of a seeded item of what it deletes, and the
    /// requests it makes over the seeded items that share them: the Query, then a
    /// BatchWriteItem of each 25 (or one TransactWriteItems).
    fn bulk(
        &mut self,
        p: &Pattern,
        m: &Mutation,
        e: &Entity,
        every: &crate::chart::Every,
    ) -> Option<String> {
        let known = self.generator.known(&e.name);
        let item = known.first()?;
        let mut fields: IndexMap<Name, Value> = IndexMap::new();
        for (name, ty, optional) in &every.inputs {
            match item.get(name) {
                Some(v) => {
                    fields.insert(Name::new(name), self.generator.input_value(ty, v)?);
                }
                None if *optional => {}
                None => return None,
            }
        }
        let found = known
            .iter()
            .filter(|i| every.inputs.iter().all(|(n, ..)| i.get(n) == item.get(n)))
            .count()
            .clamp(1, every.max as usize) as u32;
        let update = m.action == Action::Update;
        if let Some(f) = m.fields.first() {
            let value = self.generator.made(&e.attributes[f].ty, f, 1)?;
            fields.insert(Name::new(f), value);
        }
        let writes = match (every.atomic, update) {
            (true, _) => 1,
            (false, true) => found.div_ceil(crate::store::validate::MAX_TRANSACT_ACTIONS as u32),
            (false, false) => {
                found.div_ceil(crate::store::validate::MAX_BATCH_WRITE_REQUESTS as u32)
            }
        };
        let requests = 1 + writes;
        let plural = crate::chart::words(&crate::chart::plural(&e.name));
        Some(format!(
            "# Access pattern {}: {}.\n#\n# The Query of pattern {} for the keys of the {plural} it finds ({} at most a call),\n# then {} of them. It {} seeded {plural}.\n#\n# DynamoDB requests: {requests}\n# dynamodb-requests: {requests}\n\nmutation Pattern{}{} {{\n  {}(input: {}) {{\n    {}\n    more\n  }}\n}}\n",
            p.number,
            p.name,
            every.pattern,
            every.max,
            match (every.atomic, update) {
                (true, _) => "one TransactWriteItems".to_owned(),
                (false, true) => "a TransactWriteItems of each 100".to_owned(),
                (false, false) => "a BatchWriteItem of each 25".to_owned(),
            },
            if update { "changes" } else { "removes" },
            p.number,
            upper_first(&m.name),
            m.name,
            Value::Object(fields),
            if update { "updatedCount" } else { "deletedCount" },
        ))
    }

    /// The item a change or delete names: the one a create tab before makes, else a
    /// seeded one (for a delete, one nothing counts on; for a change of a life cycle, one
    /// that can still move).
    fn target(&self, m: &Mutation, e: &Entity) -> Option<(Item, Option<Vec<u32>>)> {
        // An entry's write: a seeded item that holds the map, where one does.
        if let Some(entry) = &m.entry {
            let holds = |i: &&Item| matches!(i.get(&entry.map), Some(AttributeValue::M(_)));
            if let Some(item) = self.generator.known(&e.name).iter().find(holds) {
                return Some((item.clone(), None));
            }
        }
        if let Some((tabs, item)) = self.created.get(&e.name) {
            return Some((item.clone(), Some(tabs.clone())));
        }
        let lifecycle = e.writes.lifecycle.as_ref();
        // What guards a delete: the counters others keep on the item.
        let guards = crate::chart::plan::counted_on(self.chart, e);
        let fits = |item: &&Item| {
            match m.action {
            Action::Delete => guards.iter().all(|(g, _)| {
                item.get(g)
                    .is_none_or(|v| *v == AttributeValue::N("0".into()))
            }),
            _ => lifecycle.is_none_or(|l| {
                !m.fields.contains(&l.attribute)
                    || matches!(item.get(&l.attribute), Some(AttributeValue::S(s)) if l.transitions.get(s).is_some_and(|t| !t.is_empty()))
            }),
        }
        };
        let item = self.generator.known(&e.name).iter().find(fits)?;
        Some((item.clone(), None))
    }

    /// What a change tab changes: the fields its input requires, and the first other one
    /// a value can be made for, each to a value the item does not hold (a life cycle's
    /// next state); `None` when a required one or every other cannot be made.
    fn changes(&mut self, m: &Mutation, e: &Entity, item: &Item) -> Option<Vec<(String, Value)>> {
        let mut out = Vec::new();
        let required = m.fields.iter().filter(|f| m.required.contains(f));
        let others = m.fields.iter().filter(|f| !m.required.contains(f));
        let mut other_made = false;
        for (name, must) in required
            .map(|f| (f, true))
            .chain(others.map(|f| (f, false)))
        {
            if !must && other_made {
                break;
            }
            let ty = &e.attributes[name].ty;
            let current = item.get(name);
            let lifecycle = e.writes.lifecycle.as_ref().filter(|l| l.attribute == *name);
            let value = match (ty, current) {
                _ if let Some(l) = lifecycle => {
                    let state = match current {
                        Some(AttributeValue::S(s)) => s.clone(),
                        _ => l.initial.clone(),
                    };
                    l.transitions
                        .get(&state)
                        .and_then(|t| t.first())
                        .map(|next| Value::Enum(Name::new(next)))
                }
                (Type::Enum { values, .. }, _) => values
                    .iter()
                    .find(|v| !matches!(current, Some(AttributeValue::S(s)) if s == *v))
                    .map(|v| Value::Enum(Name::new(v))),
                _ if e.writes.unique.contains_key(name) => {
                    self.generator.fresh(e, name, ty, current, 1).ok()
                }
                (Type::String { .. }, _) => self
                    .generator
                    .changed_text(ty, "Changed in the playground")
                    .or_else(|| self.generator.made(ty, name, 1)),
                _ => self.generator.made(ty, name, 1),
            };
            match value {
                Some(v) => {
                    other_made |= !must;
                    out.push((name.clone(), v));
                }
                None if must => return None,
                None => {}
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// `7`, `7 and 8`, `7, 8 and 9`.
fn and_list(numbers: &[u32]) -> String {
    let all: Vec<String> = numbers.iter().map(u32::to_string).collect();
    match all.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => all.join(""),
    }
}

/// The item a create's `input` makes, where it holds the whole key: its key values (and
/// the version and life-cycle state every create gives), enough to name it.
fn made_item(chart: &Chart, e: &Entity, input: &Value) -> Option<Item> {
    let Value::Object(fields) = input else {
        return None;
    };
    let mut item = Item::new();
    for v in e.key.pk.vars().chain(e.key.sk.vars()) {
        let value = match fields.get(v.name.as_str())? {
            Value::String(s) => AttributeValue::S(s.clone()),
            Value::Enum(n) => AttributeValue::S(n.to_string()),
            Value::Number(n) => AttributeValue::N(n.to_string()),
            _ => return None,
        };
        item.insert(v.name.clone(), value);
    }
    if let Some(version) = &e.writes.version {
        item.insert(version.clone(), AttributeValue::N("1".into()));
    }
    if let Some(l) = &e.writes.lifecycle {
        item.insert(l.attribute.clone(), AttributeValue::S(l.initial.clone()));
    }
    item.insert(
        chart.table.type_attribute.clone(),
        AttributeValue::S(e.name.clone()),
    );
    Some(item)
}

fn example(chart: &Chart, p: &Pattern) -> Option<String> {
    let mut head = format!("# Access pattern {}: {}.\n#\n", p.number, p.name);
    let (body, requests) = match &p.request {
        Request::GetItem { entity, .. } => {
            let (root, args) = root_of(chart, entity)?;
            let e = &chart.entities[entity];
            writeln!(
                head,
                "# One GetItem of the key {} / {}.",
                e.key.pk, e.key.sk
            )
            .ok()?;
            (
                format!("  {root}({args}) {{\n{}  }}\n", fields(chart, e, 4)),
                1,
            )
        }
        Request::Query {
            condition,
            forward,
            children,
            then_get,
            parent: None,
            ..
        } if chart.query.values().any(|q| q.pattern == p.number) => {
            // A root field's connection: its key values the field's arguments.
            let (field, _) = chart.query.iter().find(|(_, q)| q.pattern == p.number)?;
            let child = &chart.entities[children];
            let item = sample(chart, children);
            let mut args = String::new();
            for v in condition.templates().into_iter().flat_map(|t| t.vars()) {
                if v.optional || args.contains(&format!(", {}:", v.name)) {
                    continue;
                }
                let ty = chart.var_type(condition, &v.name)?;
                let _ = write!(
                    args,
                    ", {}: {}",
                    v.name,
                    literal(&ty, item.as_ref()?.get(&v.name))
                );
            }
            writeln!(
                head,
                "# One Query, {}: {}{}.\n# Later pages (`after: <endCursor>`) query from the last-seen key.",
                if *forward { "forward" } else { "backward" },
                crate::chart::explain::condition_text(chart, p, condition, &|t| t.to_string()),
                if *then_get { ", then a BatchGetItem of the keys it finds" } else { "" }
            )
            .ok()?;
            (
                format!(
                    "  {field}(first: 10{args}) {{\n    nodes {{\n{}    }}\n    pageInfo {{\n      hasNextPage\n      endCursor\n    }}\n  }}\n",
                    fields(chart, child, 6)
                ),
                if *then_get { 2 } else { 1 },
            )
        }
        Request::Query {
            condition,
            forward,
            parent,
            children,
            ..
        } => {
            let (owner, field) = chart.entities.values().find_map(|e| {
                e.connections
                    .iter()
                    .find(|(_, c)| c.pattern == p.number)
                    .map(|(name, _)| (e, name.clone()))
            })?;
            let (root, args) = root_of(chart, &owner.name)?;
            let child = &chart.entities[children];
            let carried = parent.as_deref() == Some(owner.name.as_str());
            let extra = connection_args(chart, owner, p, child);
            writeln!(
                head,
                "# One Query, {}: {}{}.",
                if *forward { "forward" } else { "backward" },
                crate::chart::explain::condition_text(chart, p, condition, &|t| t.to_string()),
                if carried {
                    format!(
                        ", which reads the {} and the first page together",
                        owner.name
                    )
                } else {
                    format!(
                        "; the {} itself is one GetItem, concurrent with it",
                        owner.name
                    )
                }
            )
            .ok()?;
            writeln!(
                head,
                "# Later pages (`after: <endCursor>`) query from the last-seen key."
            )
            .ok()?;
            let total = chart.entities[&owner.name].connections[&field]
                .total
                .is_some();
            let body = format!(
                "  {root}({args}) {{\n{}    {field}(first: 10{extra}) {{\n{}      nodes {{\n{}      }}\n      pageInfo {{\n        hasNextPage\n        endCursor\n      }}\n    }}\n  }}\n",
                fields(chart, owner, 4),
                if total { "      totalCount\n" } else { "" },
                fields(chart, child, 8),
            );
            (body, if carried { 1 } else { 2 })
        }
        Request::Collection {
            condition,
            forward,
            parent,
            kinds,
            ..
        } => {
            let (owner, field) = chart.entities.values().find_map(|e| {
                e.collections
                    .iter()
                    .find(|(_, c)| c.pattern == p.number)
                    .map(|(name, _)| (e, name.clone()))
            })?;
            let (root, args) = root_of(chart, &owner.name)?;
            let carried = parent.as_deref() == Some(owner.name.as_str());
            writeln!(
                head,
                "# One Query, {}: {}{}: its {} in sort order, each kind typed on the page.\n# `kind` narrows it to one kind: a Query of that kind's prefix alone.",
                if *forward { "forward" } else { "backward" },
                crate::chart::explain::condition_text(chart, p, condition, &|t| t.to_string()),
                if carried {
                    format!(", which reads the {} too", owner.name)
                } else {
                    String::new()
                },
                kinds.join(", ")
            )
            .ok()?;
            let mut fragments = String::new();
            for k in kinds {
                let _ = write!(
                    fragments,
                    "        ... on {k} {{\n{}        }}\n",
                    fields(chart, &chart.entities[k], 10)
                );
            }
            let body = format!(
                "  {root}({args}) {{\n{}    {field}(first: 10) {{\n      nodes {{\n        __typename\n{fragments}      }}\n      pageInfo {{\n        hasNextPage\n        endCursor\n      }}\n    }}\n  }}\n",
                fields(chart, owner, 4),
            );
            (body, if carried { 1 } else { 2 })
        }
        Request::Scan { index, children } => {
            let (field, _) = chart.query.iter().find(|(_, q)| q.pattern == p.number)?;
            let e = &chart.entities[children];
            writeln!(
                head,
                "# One Scan of the sparse index {index}, which only {} carry keys in{}.\n# Later pages (`after: <endCursor>`) scan on from the last-read key.",
                crate::chart::plural(children),
                if e.binding.condition_or_key().is_some() {
                    ": it reads every tenant's, and keeps the caller's"
                } else {
                    ""
                }
            )
            .ok()?;
            (
                format!(
                    "  {field}(first: 10) {{\n    nodes {{\n{}    }}\n    pageInfo {{\n      hasNextPage\n      endCursor\n    }}\n  }}\n",
                    fields(chart, e, 6)
                ),
                1,
            )
        }
        Request::BatchGetItem => {
            let ids: Vec<String> = chart
                .declared()
                .filter(|e| e.node)
                .filter_map(|e| sample(chart, &e.name).map(|item| (e, item)))
                .map(|(e, item)| {
                    Record::new(std::sync::Arc::from(e.name.as_str()), item).global_id(e)
                })
                .take(3)
                .collect();
            if ids.is_empty() {
                return None;
            }
            writeln!(head, "# One BatchGetItem of every id asked.").ok()?;
            let mut body = String::from("  nodes(ids: [");
            body.push_str(
                &ids.iter()
                    .map(|i| format!("\"{i}\""))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            body.push_str("]) {\n    __typename\n    id\n");
            for e in chart.declared().filter(|e| e.node) {
                let _ = write!(
                    body,
                    "    ... on {} {{\n{}    }}\n",
                    e.name,
                    fields(chart, e, 6)
                );
            }
            body.push_str("  }\n");
            (body, 1)
        }
        // A write's tab is [`Writes::example`]'s.
        Request::Write { .. } => return None,
    };
    let name: String = p
        .field
        .split('.')
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    Some(format!(
        "{head}#\n# DynamoDB requests: {requests}\n# dynamodb-requests: {requests}\n\nquery Pattern{}{name} {{\n{body}}}\n",
        p.number
    ))
}

/// The root field that reads `entity`, and its arguments from the first sample.
fn root_of(chart: &Chart, entity: &str) -> Option<(String, String)> {
    // A root field by key: not a listing (a Scan's, or a Query's of no parent).
    let (name, root) = chart.query.iter().find(|(_, q)| {
        q.entity == entity
            && !matches!(
                chart.patterns.get(&q.pattern).map(|p| &p.request),
                Some(Request::Scan { .. } | Request::Query { parent: None, .. })
            )
    })?;
    let e = &chart.entities[entity];
    let item = sample(chart, entity)?;
    let args = if root.by.as_deref() == Some("id") {
        let rec = Record::new(std::sync::Arc::from(entity), item);
        format!("id: \"{}\"", rec.global_id(e))
    } else {
        key_var_names(e)
            .iter()
            .map(|v| format!("{v}: {}", literal(&e.attributes[v].ty, item.get(v))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some((name.clone(), args))
}

/// A connection's own arguments, from the first sample child.
fn connection_args(chart: &Chart, owner: &Entity, p: &Pattern, child: &Entity) -> String {
    let Request::Query { condition, .. } = &p.request else {
        return String::new();
    };
    let item = sample(chart, &child.name);
    let mut out = String::new();
    let mut seen: Vec<String> = Vec::new();
    for v in condition.templates().into_iter().flat_map(|t| t.vars()) {
        if owner.attributes.contains_key(&v.name) || seen.contains(&v.name) {
            continue;
        }
        seen.push(v.name.clone());
        let ty = chart.var_type(condition, &v.name);
        // The sample's value of the attribute it meets (an end left open is left out).
        let attr = (!v.optional)
            .then(|| chart.var_attribute(condition, child, &v.name))
            .flatten()
            .unwrap_or_else(|| v.name.clone());
        if let (Some(ty), Some(item)) = (ty, &item) {
            let _ = write!(out, ", {}: {}", v.name, literal(&ty, item.get(&attr)));
        }
    }
    out
}

fn sample(chart: &Chart, entity: &str) -> Option<Item> {
    chart
        .samples
        .iter()
        .find(|i| {
            matches!(i.get(&chart.table.type_attribute), Some(AttributeValue::S(t)) if t == entity)
        })
        .cloned()
}

fn literal(ty: &Type, v: Option<&AttributeValue>) -> String {
    match (ty, v) {
        (Type::Enum { .. }, Some(AttributeValue::S(s))) => s.clone(),
        (_, Some(AttributeValue::S(s))) => format!("{s:?}"),
        (_, Some(AttributeValue::N(n))) => n.clone(),
        _ => "null".into(),
    }
}

/// The entity's scalar fields (and a complex one's subfields), indented.
fn fields(chart: &Chart, e: &Entity, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    if e.node {
        let _ = writeln!(out, "{pad}id");
    }
    for (name, a) in e.attributes.iter().filter(|(_, a)| a.graphql) {
        select(chart, name, &a.ty, indent, SELECTION_DEPTH, &mut out);
    }
    out
}

/// How deep a tab selects into shapes, maps and lists of them: a shape may hold itself.
const SELECTION_DEPTH: usize = 3;

/// `name` selected as its type needs: a scalar or enum by name; a shape, a map's entry (its
/// `key` and `value`) or a list of them with each field selected in turn, `depth` levels
/// at most (past them, what needs a selection of its own is left out, and so is a field
/// left with nothing to select).
fn select(chart: &Chart, name: &str, ty: &Type, indent: usize, depth: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let mut inner = String::new();
    match ty {
        Type::List { of, .. } => return select(chart, name, of, indent, depth, out),
        Type::Shape(shape) if depth > 0 => {
            for (f, a) in chart.shapes.get(shape).into_iter().flatten() {
                select(chart, f, &a.ty, indent + 2, depth - 1, &mut inner);
            }
        }
        Type::Map { of, .. } if depth > 0 => {
            let _ = writeln!(inner, "{pad}  key");
            select(chart, "value", of, indent + 2, depth - 1, &mut inner);
        }
        Type::Shape(_) | Type::Map { .. } => return,
        _ => {
            let _ = writeln!(out, "{pad}{name}");
            return;
        }
    }
    if !inner.is_empty() {
        let _ = writeln!(out, "{pad}{name} {{\n{inner}{pad}}}");
    }
}

/// [`fields`], less the counters.
fn fields_without_counters(chart: &Chart, e: &Entity, indent: usize) -> String {
    let pad = " ".repeat(indent);
    fields(chart, e, indent)
        .lines()
        .filter(|line| {
            let name = line.trim_start_matches(&pad);
            !e.attributes
                .get(name)
                .is_some_and(|a| matches!(a.ty, Type::Counter))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
