//! Data a chart describes, generated: the input of each create mutation, drawn from the
//! items of its entity already known (the table's, the chart's samples) and from the
//! attributes' types; fresh where the chart wants a value of its own (a unique attribute,
//! the item's own part of its key); its references naming items that exist.
//!
//! `itemgraph seed --generate N` ([`seed`]) writes N items of every entity a create
//! mutation makes, through the chart's own mutations, so every count, marker, shard and
//! list is kept as a client's create keeps it; the playground's mutation tabs show one
//! ([`super::examples`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_graphql::{Name, Value};
use indexmap::IndexMap;

use super::mutate::{given_on_create, inherited};
use crate::chart::types::{Kind, Type};
use crate::chart::{Action, Chart, Entity, Mutation};
use crate::store::{AttributeValue, Item, Store};

/// How many values a fresh one is looked for among before giving up.
const FRESH_TRIES: u64 = 100_000;

/// Children a generated create writes with its item, within its list's bounds.
const CHILDREN: u32 = 2;

/// How deep a shape within a shape is made from its type alone (a chart may declare a
/// shape that holds itself, through an optional field or a list).
const SHAPE_DEPTH: usize = 4;

/// Known items (their places in `known`) by their values of some attributes.
type ItemsByValues = HashMap<Vec<String>, Vec<usize>>;

/// Inputs of a chart's create mutations.
pub struct Generator<'c> {
    chart: &'c Chart,
    /// Items known to exist, by entity.
    known: HashMap<String, Vec<Item>>,
    /// Values held or handed out, by `Entity.attribute` (lowercased).
    taken: HashSet<(String, String)>,
    /// The known values of each `Entity.attribute`, in item order: read once.
    templates: HashMap<(String, String), Vec<AttributeValue>>,
    /// The known items of an entity by their values of some attributes (a reference's
    /// attributes already picked): built once per entity and attributes.
    by_values: HashMap<(String, Vec<String>), ItemsByValues>,
}

/// A value as a key compares it: a string's or enum's text, a number's digits.
fn text_of(v: &AttributeValue) -> Option<String> {
    match v {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s.clone()),
        _ => None,
    }
}

fn text_of_input(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Enum(n) => Some(n.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl<'c> Generator<'c> {
    /// A generator taking `items` as what exists (the table's, or a chart's samples).
    pub fn new(chart: &'c Chart, items: impl IntoIterator<Item = Item>) -> Self {
        let mut g = Generator {
            chart,
            known: HashMap::new(),
            taken: HashSet::new(),
            templates: HashMap::new(),
            by_values: HashMap::new(),
        };
        for item in items {
            g.learn(item);
        }
        g
    }

    /// Takes `item` as existing: its values are taken, and a reference may name it.
    pub fn learn(&mut self, item: Item) {
        let Some(AttributeValue::S(ty)) = item.get(&self.chart.table.type_attribute) else {
            return;
        };
        let Some(e) = self.chart.entities.get(ty).filter(|e| !e.system) else {
            return;
        };
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if e.expired(self.chart.table_of(e), &item, now) {
            return;
        }
        for (name, v) in &item {
            if let Some(s) = text_of(v) {
                self.taken
                    .insert((format!("{}.{name}", e.name), s.to_lowercase()));
            }
        }
        // What was read from the items of this entity is read again.
        self.templates.retain(|(entity, _), _| *entity != e.name);
        self.by_values.retain(|(entity, _), _| *entity != e.name);
        self.known.entry(e.name.clone()).or_default().push(item);
    }

    /// The chart's create mutations, one an entity, each after those of what it
    /// references.
    pub fn creates(&self) -> Vec<&'c Mutation> {
        let chart = self.chart;
        let mut pending: Vec<&Mutation> = Vec::new();
        for m in chart.mutations.values() {
            if m.action == Action::Create && !pending.iter().any(|p| p.entity == m.entity) {
                pending.push(m);
            }
        }
        let mut out: Vec<&Mutation> = Vec::new();
        while !pending.is_empty() {
            // The first whose references are all made (or made by no create); a cycle
            // takes the first left.
            let ready = pending
                .iter()
                .position(|m| {
                    chart.entities[&m.entity].references.values().all(|r| {
                        r.entity == m.entity
                            || out.iter().any(|o| o.entity == r.entity)
                            || !pending.iter().any(|p| p.entity == r.entity)
                    })
                })
                .unwrap_or(0);
            out.push(pending.remove(ready));
        }
        out
    }

    /// The `n`th generated input of create mutation `m`, or why there is none (a
    /// reference with nothing to name, a value its type cannot be made of).
    pub fn create_input(&mut self, m: &Mutation, n: u64) -> Result<Value, String> {
        let chart = self.chart;
        let e = &chart.entities[&m.entity];
        let mut input = self.fill(e, &[], &IndexMap::new(), n)?;
        for list in m.with.keys() {
            let Some(child) = crate::chart::list_child(&chart.entities, &chart.patterns, e, list)
            else {
                continue;
            };
            let bounds = &e.lists[list];
            let count = CHILDREN
                .max(bounds.min.unwrap_or(0))
                .min(bounds.max.unwrap_or(100));
            let from_parent = inherited(e, child);
            let mut children = Vec::new();
            for j in 0..u64::from(count) {
                let item = self.fill(child, &from_parent, &input, n.saturating_mul(16) + j)?;
                children.push(object(item));
            }
            input.insert(list.clone(), Value::List(children));
        }
        Ok(object(input))
    }

    /// The attributes a create of `e` takes, less `skip` (what its parent gives, whose
    /// input is `parent`).
    fn fill(
        &mut self,
        e: &Entity,
        skip: &[&str],
        parent: &IndexMap<String, Value>,
        n: u64,
    ) -> Result<IndexMap<String, Value>, String> {
        let given: Vec<(&String, &crate::chart::Attribute)> = given_on_create(e)
            .filter(|(name, _)| !skip.contains(&name.as_str()))
            .collect();
        let mut out: IndexMap<String, Value> = IndexMap::new();
        // Attributes settled by the references: given their values, or left out with an
        // optional reference left out.
        let settled = self.references(e, &given, skip, parent, n, &mut out)?;
        // The item's own part of its key (the last the references leave): fresh, so the
        // item is a new one.
        let own_key = super::record::key_var_names(e)
            .into_iter()
            .rfind(|v| given.iter().any(|(g, _)| *g == v) && !settled.contains(v));
        for (name, a) in given {
            if settled.contains(name) {
                continue;
            }
            let template = self.template(e, name, n);
            if own_key.as_deref() == Some(name.as_str()) || e.writes.unique.contains_key(name) {
                let v = self.fresh(e, name, &a.ty, template.as_ref(), n)?;
                out.insert(name.clone(), v);
                continue;
            }
            if let Some(v) = template.and_then(|t| self.input_value(&a.ty, &t)) {
                out.insert(name.clone(), v);
                continue;
            }
            if a.optional || a.lifetime.is_some() {
                continue;
            }
            let v = self.made(&a.ty, name, n).ok_or_else(|| {
                format!(
                    "no value of {} for `{name}`: give a sample of {} that has one",
                    a.ty.describe(),
                    e.name
                )
            })?;
            out.insert(name.clone(), v);
        }
        Ok(out)
    }

    /// The values of `e`'s references among `given`, each from an item that exists, the
    /// references agreeing where they share an attribute (a user and the organization it
    /// belongs to) and with what the parent gives (`skip`, its values in `parent`). An
    /// optional reference (one of its attributes optional) is left out every other item.
    /// Answers the attributes it settled.
    fn references(
        &mut self,
        e: &Entity,
        given: &[(&String, &crate::chart::Attribute)],
        skip: &[&str],
        parent: &IndexMap<String, Value>,
        n: u64,
        out: &mut IndexMap<String, Value>,
    ) -> Result<HashSet<String>, String> {
        let mut refs: Vec<(&String, &crate::chart::format::Reference)> = e
            .references
            .iter()
            .filter(|(_, r)| {
                r.key.values().all(|mine| {
                    given.iter().any(|(g, _)| *g == mine) || skip.contains(&mine.as_str())
                }) && r.key.values().any(|mine| !skip.contains(&mine.as_str()))
            })
            .collect();
        // The references of most attributes first: the others then agree with them.
        refs.sort_by_key(|(_, r)| std::cmp::Reverse(r.key.len()));
        let mut picked: HashMap<String, String> = HashMap::new();
        for (attr, v) in parent {
            if skip.contains(&attr.as_str()) {
                if let Some(t) = text_of_input(v) {
                    picked.insert(attr.clone(), t);
                }
            }
        }
        let mut settled = HashSet::new();
        for (i, (name, r)) in refs.into_iter().enumerate() {
            // A reference left out leaves out its optional attributes with it.
            let optional_attrs = |r: &crate::chart::format::Reference| {
                r.key
                    .values()
                    .filter(|mine| e.attributes[*mine].optional)
                    .cloned()
                    .collect::<Vec<_>>()
            };
            let optional = !optional_attrs(r).is_empty();
            if optional && n % 2 == 1 {
                settled.extend(optional_attrs(r));
                continue;
            }
            // What is already picked narrows the candidates.
            let fixed: Vec<(&String, &String)> = r
                .key
                .iter()
                .filter(|(_, mine)| picked.contains_key(*mine))
                .collect();
            let attrs: Vec<String> = fixed.iter().map(|(theirs, _)| (*theirs).clone()).collect();
            let values: Vec<String> = fixed
                .iter()
                .map(|(_, mine)| picked[*mine].clone())
                .collect();
            let required: Vec<String> = r.key.keys().cloned().collect();
            let turn = (n as usize).wrapping_add(i);
            let found = self
                .items_by(&r.entity, &attrs, &required)
                .get(&values)
                .and_then(|found| found.get(turn % found.len().max(1)))
                .copied();
            let Some(k) = found else {
                if optional {
                    settled.extend(optional_attrs(r));
                    continue;
                }
                return Err(format!(
                    "no {} to name in `{}` (its `{name}`)",
                    crate::chart::words(&r.entity),
                    r.key.values().cloned().collect::<Vec<_>>().join("`, `")
                ));
            };
            let item = self.known[&r.entity][k].clone();
            for (theirs, mine) in &r.key {
                let v = &item[theirs];
                if let Some(t) = text_of(v) {
                    picked.insert(mine.clone(), t);
                }
                if skip.contains(&mine.as_str()) {
                    continue;
                }
                let value = self
                    .input_value(&e.attributes[mine].ty, v)
                    .ok_or_else(|| format!("`{mine}` cannot be given as {v:?}"))?;
                out.insert(mine.clone(), value);
                settled.insert(mine.clone());
            }
        }
        Ok(settled)
    }

    /// The known items of `entity` that hold every attribute of `required`, by their
    /// values of `attrs` (all of them under the empty key when `attrs` is empty): built
    /// once, so picking a reference costs no pass over what is known.
    fn items_by(&mut self, entity: &str, attrs: &[String], required: &[String]) -> &ItemsByValues {
        let known = &self.known;
        let mut key: Vec<String> = attrs.to_vec();
        key.push(String::new());
        key.extend(required.iter().cloned());
        self.by_values
            .entry((entity.to_owned(), key))
            .or_insert_with(|| {
                let mut index = ItemsByValues::new();
                for (k, item) in known.get(entity).into_iter().flatten().enumerate() {
                    if !required.iter().all(|a| item.contains_key(a)) {
                        continue;
                    }
                    let values: Option<Vec<String>> = attrs
                        .iter()
                        .map(|a| item.get(a).and_then(text_of))
                        .collect();
                    if let Some(values) = values {
                        index.entry(values).or_default().push(k);
                    }
                }
                index
            })
    }

    /// The items of `entity` known to exist.
    pub(super) fn known(&self, entity: &str) -> &[Item] {
        self.known.get(entity).map_or(&[], Vec::as_slice)
    }

    /// The value of `attribute` in the known items of `e`, taking turns.
    fn template(&mut self, e: &Entity, attribute: &str, n: u64) -> Option<AttributeValue> {
        let known = &self.known;
        let with = self
            .templates
            .entry((e.name.clone(), attribute.to_owned()))
            .or_insert_with(|| {
                known
                    .get(&e.name)
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.get(attribute).cloned())
                    .collect()
            });
        with.get(n as usize % with.len().max(1)).cloned()
    }

    /// A value of `ty` for `attribute` of `e` that no item holds yet, made from
    /// `template` (a trailing number renumbered, a suffix) or from the type alone.
    pub(super) fn fresh(
        &mut self,
        e: &Entity,
        attribute: &str,
        ty: &Type,
        template: Option<&AttributeValue>,
        n: u64,
    ) -> Result<Value, String> {
        let key = format!("{}.{attribute}", e.name);
        let base = match template {
            Some(AttributeValue::S(s)) => Some(s.as_str()),
            _ => None,
        };
        for k in n..n.saturating_add(FRESH_TRIES) {
            for candidate in candidates(ty, attribute, base, k) {
                let Some(value) = self.checked(ty, &candidate) else {
                    continue;
                };
                let Some(text) = text_of_input(&value) else {
                    continue;
                };
                if self.taken.insert((key.clone(), text.to_lowercase())) {
                    return Ok(value);
                }
            }
        }
        Err(format!(
            "no new value of {} for `{attribute}` of {}: give a sample that has one",
            ty.describe(),
            e.name
        ))
    }

    /// A stored value as a mutation's input takes it (the inverse of what the write
    /// stores); `None` where it cannot be one (an expiry that has passed).
    pub(super) fn input_value(&self, ty: &Type, v: &AttributeValue) -> Option<Value> {
        Some(match (ty, v) {
            (Type::Enum { .. }, AttributeValue::S(s)) => Value::Enum(Name::new(s)),
            (Type::Expiry, AttributeValue::N(n)) => {
                let t: i64 = n.parse().ok()?;
                if t <= time::OffsetDateTime::now_utc().unix_timestamp() + 60 {
                    return None;
                }
                Value::String(crate::chart::types::epoch_to_rfc3339(t)?)
            }
            (Type::Int { .. }, AttributeValue::N(n)) => {
                Value::Number(n.parse::<i64>().ok()?.into())
            }
            (Type::Cents { .. }, AttributeValue::N(n)) => Value::String(n.clone()),
            (Type::Boolean, AttributeValue::Bool(b)) => Value::Boolean(*b),
            (Type::Shape(shape), AttributeValue::M(m)) => {
                let mut out = IndexMap::new();
                for (field, a) in self.chart.shapes.get(shape)? {
                    match m.get(field) {
                        Some(v) => {
                            out.insert(field.clone(), self.input_value(&a.ty, v)?);
                        }
                        None if a.optional => {}
                        None => return None,
                    }
                }
                object(out)
            }
            (Type::List { of, .. }, AttributeValue::L(items)) => Value::List(
                items
                    .iter()
                    .map(|v| self.input_value(of, v))
                    .collect::<Option<_>>()?,
            ),
            // A map as its entries, in the order of their keys.
            (Type::Map { of, .. }, AttributeValue::M(m)) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::List(
                    keys.into_iter()
                        .map(|k| Some(entry(k.clone(), self.input_value(of, &m[k])?)))
                        .collect::<Option<_>>()?,
                )
            }
            (Type::Timestamp(f), v) => Value::String(f.answer(v)?),
            (Type::String { .. } | Type::Kind(_), AttributeValue::S(s)) => Value::String(s.clone()),
            _ => return None,
        })
    }

    /// A value of `ty` made from the type alone: the candidates a string or kind takes
    /// (a kind of the chart's own only where one of them matches its pattern), an enum's
    /// values in turn, an int within its bounds; a shape's required fields, `SHAPE_DEPTH`
    /// shapes deep at most.
    pub(super) fn made(&self, ty: &Type, attribute: &str, n: u64) -> Option<Value> {
        self.made_within(ty, attribute, n, 0)
    }

    fn made_within(&self, ty: &Type, attribute: &str, n: u64, depth: usize) -> Option<Value> {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let turn = i128::from(n);
        Some(match ty {
            Type::String { .. } | Type::Kind(_) => candidates(ty, attribute, None, n)
                .into_iter()
                .find_map(|c| self.checked(ty, &c))?,
            Type::Int { min, max } => {
                let low = i128::from(min.unwrap_or(0));
                let span = max.map_or(100, |m| (i128::from(m) - low + 1).clamp(1, 100));
                Value::Number(i64::try_from(low + turn % span).ok()?.into())
            }
            Type::Boolean => Value::Boolean(n % 2 == 0),
            // A second apart each (a time in a key is then unique).
            Type::Timestamp(_) => Value::String(crate::chart::types::epoch_to_rfc3339(
                now - i64::try_from(n).ok()?,
            )?),
            Type::Expiry => {
                Value::String(crate::chart::types::epoch_to_rfc3339(now + 30 * 86_400)?)
            }
            Type::Cents { min } => {
                let low = i128::from(min.unwrap_or(0).max(0));
                Value::String((low + 100 * (turn % 50 + 1)).to_string())
            }
            Type::Enum { values, .. } => {
                Value::Enum(Name::new(values.get(n as usize % values.len().max(1))?))
            }
            Type::Shape(shape) if depth < SHAPE_DEPTH => {
                let mut out = IndexMap::new();
                for (field, a) in self.chart.shapes.get(shape)? {
                    if a.optional {
                        continue;
                    }
                    out.insert(field.clone(), self.made_within(&a.ty, field, n, depth + 1)?);
                }
                object(out)
            }
            Type::List { of, .. } if depth < SHAPE_DEPTH => {
                Value::List(vec![self.made_within(of, attribute, n, depth + 1)?])
            }
            // One entry, where the map may hold one.
            Type::Map {
                max_items: Some(0), ..
            } => Value::List(Vec::new()),
            Type::Map { of, .. } if depth < SHAPE_DEPTH => Value::List(vec![entry(
                format!("key-{n}"),
                self.made_within(of, attribute, n, depth + 1)?,
            )]),
            Type::Shape(_) | Type::List { .. } | Type::Counter | Type::Map { .. } => return None,
        })
    }

    /// `candidate` as an input of type `ty` the server takes (its own check of a string's
    /// bound and lines, a kind's rules and normal form, an int's range, an enum's
    /// values), or `None`.
    fn checked(&self, ty: &Type, candidate: &str) -> Option<Value> {
        let input = match ty {
            Type::Int { .. } => Value::Number(candidate.parse::<i64>().ok()?.into()),
            Type::Enum { .. } => Value::Enum(Name::new(candidate)),
            Type::String { .. } | Type::Kind(_) | Type::Timestamp(_) => {
                Value::String(candidate.to_owned())
            }
            _ => return None,
        };
        let stored = super::mutate::stored(self.chart, "value", ty, &input).ok()?;
        Some(match (ty, stored) {
            (Type::Int { .. }, _) => input,
            (Type::Enum { .. }, _) => input,
            // A time as GraphQL gives it.
            (Type::Timestamp(f), v) => Value::String(f.answer(&v)?),
            (_, AttributeValue::S(s)) => Value::String(s),
            _ => return None,
        })
    }

    /// `text` as a string of `ty` takes it, or `None` (too long for it).
    pub(super) fn changed_text(&self, ty: &Type, text: &str) -> Option<Value> {
        self.checked(ty, text)
    }
}

/// The candidates for a value of `ty` numbered `k`: from `base` (its trailing number
/// renumbered to its width, `k` inserted before an email's `@`, a suffix) and from the
/// type.
fn candidates(ty: &Type, attribute: &str, base: Option<&str>, k: u64) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(base) = base {
        // Its last number renumbered at its width: `store-7` → `store-12`, and a value of
        // a fixed form keeps it (`…T08:00:00Z` → `…T08:00:12Z`).
        let end = base.rfind(|c: char| c.is_ascii_digit()).map(|i| i + 1);
        if let Some(end) = end {
            let digits = base[..end]
                .chars()
                .rev()
                .take_while(char::is_ascii_digit)
                .count();
            let (head, tail) = (&base[..end - digits], &base[end..]);
            let width = u32::try_from(digits).unwrap_or(u32::MAX);
            let wrapped = 10u64.checked_pow(width).map_or(k, |m| k % m);
            out.push(format!("{head}{wrapped:0digits$}{tail}"));
        }
        if let Some((local, domain)) = base.split_once('@') {
            out.push(format!("{local}{k}@{domain}"));
        }
        out.push(format!("{base}-{k}"));
        out.push(format!("{base}{k}"));
        out.push(format!("{base} {k}"));
    }
    let words = crate::chart::words(attribute);
    match ty {
        Type::Kind(Kind::Email) => out.push(format!("{}{k}@example.com", slugged(&words))),
        Type::Kind(Kind::Ulid) => out.push(ulid::Ulid::new().to_string()),
        Type::Int { min, .. } => {
            out.push((i128::from(min.unwrap_or(1)) + i128::from(k)).to_string());
        }
        Type::Enum { values, .. } => out.extend(values.iter().cloned()),
        _ => {
            out.push(format!("{}-{k}", slugged(&words)));
            out.push(format!("{}{k}", slugged(&words).replace('-', "")));
            out.push(k.to_string());
            let mut title = words.clone();
            if let Some(first) = title.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            out.push(format!("{title} {k}"));
        }
    }
    out
}

fn slugged(words: &str) -> String {
    words.to_lowercase().replace(' ', "-")
}

fn object(fields: IndexMap<String, Value>) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (Name::new(k), v)).collect())
}

/// One entry of a map's input (`{key, value}`).
fn entry(key: String, value: Value) -> Value {
    object(IndexMap::from([
        ("key".to_owned(), Value::String(key)),
        ("value".to_owned(), value),
    ]))
}

/// What `seed --generate` made of one entity.
#[derive(Debug, Clone)]
pub struct Generated {
    pub entity: String,
    pub mutation: String,
    pub made: u64,
    pub refused: u64,
    /// The first refusal's code and message, or why nothing could be generated.
    pub first_refusal: Option<String>,
}

/// How many creates run at once.
const CONCURRENT: usize = 8;

/// Writes `each` generated items of every entity a create mutation of `chart` makes,
/// through those mutations (with no caller's restrictions), each entity after what it
/// references, the table read again between entities for what it now holds.
pub async fn seed(
    store: Arc<dyn Store>,
    chart: Arc<Chart>,
    each: u64,
) -> anyhow::Result<Vec<Generated>> {
    use futures::StreamExt;
    let schema = crate::graphql::chart_schema(chart.clone(), &crate::graphql::Limits::default())
        .map_err(|e| anyhow::anyhow!("the chart's schema: {e}"))?;
    let cursors = crate::graphql::CursorCodec::new(ulid::Ulid::new().to_string());
    let mut out = Vec::new();
    let order: Vec<Mutation> = Generator::new(&chart, Vec::new())
        .creates()
        .into_iter()
        .cloned()
        .collect();
    for m in order {
        let items = crate::store::scan_all(store.as_ref()).await?;
        let mut generator = Generator::new(&chart, items);
        let mut documents = Vec::new();
        let mut unmade = None;
        for n in 0..each {
            match generator.create_input(&m, n) {
                Ok(input) => documents.push(format!(
                    "mutation {{ {}(input: {input}) {{ __typename }} }}",
                    m.name
                )),
                Err(why) => {
                    unmade = Some(why);
                    break;
                }
            }
        }
        let answers: Vec<async_graphql::Response> = futures::stream::iter(documents)
            .map(|doc| {
                let (schema, store, cursors) = (schema.clone(), store.clone(), cursors.clone());
                async move {
                    crate::graphql::execute(
                        &schema,
                        store,
                        cursors,
                        crate::auth::Access::Unrestricted,
                        async_graphql::Request::new(doc),
                        false,
                    )
                    .await
                }
            })
            .buffer_unordered(CONCURRENT)
            .collect()
            .await;
        let refusals: Vec<String> = answers
            .iter()
            .filter_map(|r| r.errors.first())
            .map(|e| {
                let code = e
                    .extensions
                    .as_ref()
                    .and_then(|x| x.get("code"))
                    .map(|c| format!("{c} "))
                    .unwrap_or_default();
                format!("{code}{}", e.message)
            })
            .collect();
        out.push(Generated {
            entity: m.entity.clone(),
            mutation: m.name.clone(),
            made: answers.len() as u64 - refusals.len() as u64,
            refused: refusals.len() as u64,
            first_refusal: refusals.into_iter().next().or(unmade),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second_chart() -> Arc<Chart> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/charts/store-locator.toml");
        crate::config::load_chart(Some(&path)).expect("the second chart")
    }

    fn text(v: &Value, field: &str) -> String {
        match v {
            Value::Object(o) => o.get(field).map(|v| v.to_string()).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// Every create of the second chart is generated from its samples: the unique and own
    /// key parts fresh at every turn, the references naming samples that exist.
    #[test]
    fn the_second_charts_creates_take_fresh_values_and_name_what_exists() {
        let chart = second_chart();
        let mut g = Generator::new(&chart, chart.samples.clone());
        let creates: Vec<&str> = g.creates().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(creates, ["createChain", "createStore"]);
        let store = &chart.mutations["createStore"];
        let mut numbers = HashSet::new();
        let mut phones = HashSet::new();
        for n in 0..40 {
            let input = g.create_input(store, n).unwrap();
            assert!(numbers.insert(text(&input, "number")), "{input}");
            assert!(phones.insert(text(&input, "phone")), "{input}");
            let chain = text(&input, "chain");
            assert!(
                chain == "\"bean-there\"" || chain == "\"tea-leaf\"",
                "{input}"
            );
        }
        // No sample's phone is handed out again.
        for sample in &chart.samples {
            if let Some(AttributeValue::S(p)) = sample.get("phone") {
                assert!(!phones.contains(&format!("{p:?}")), "{p}");
            }
        }
        let chain = g.create_input(&chart.mutations["createChain"], 0).unwrap();
        assert_eq!(text(&chain, "slug"), "\"bean-there-0\"", "{chain}");
    }

    /// The built-in chart's creates from the demo data: an order with its lines, a ticket
    /// whose requester and assignee belong to its organization.
    #[test]
    fn the_builtin_charts_creates_keep_their_references_in_one_organization() {
        let chart = crate::chart::builtin();
        let items = crate::chart::data::builtin_demo();
        let mut g = Generator::new(&chart, items.clone());
        let creates: Vec<&str> = g.creates().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            creates,
            [
                "createOrganization",
                "createUser",
                "createTicket",
                "placeOrder"
            ]
        );
        let users: HashSet<(String, String)> = items
            .iter()
            .filter(|i| i.get("Type") == Some(&AttributeValue::S("User".into())))
            .filter_map(|i| match (i.get("org"), i.get("username")) {
                (Some(AttributeValue::S(o)), Some(AttributeValue::S(u))) => {
                    Some((format!("{o:?}"), format!("{u:?}")))
                }
                _ => None,
            })
            .collect();
        let mut assigned = 0;
        for n in 0..20 {
            let t = g.create_input(&chart.mutations["createTicket"], n).unwrap();
            let org = text(&t, "org");
            assert!(users.contains(&(org.clone(), text(&t, "requester"))), "{t}");
            let assignee = text(&t, "assignee");
            assert!(
                assignee.is_empty() || users.contains(&(org.clone(), assignee.clone())),
                "{t}"
            );
            // An optional reference is left out every other ticket.
            assigned += usize::from(!assignee.is_empty());
            let order = g.create_input(&chart.mutations["placeOrder"], n).unwrap();
            let Value::Object(o) = &order else {
                panic!("{order}")
            };
            assert!(
                matches!(&o["lines"], Value::List(l) if l.len() == 2),
                "{order}"
            );
        }
        assert_eq!(assigned, 10);
    }

    /// A shape that holds itself is made to a bounded depth, not forever.
    #[test]
    fn a_shape_that_holds_itself_is_made_to_a_bounded_depth() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/charts/store-locator.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let mut chart = crate::chart::parse(&text).expect("the second chart");
        let hours = chart.shapes.get_mut("Hours").unwrap();
        let day = hours["day"].clone();
        hours.insert(
            "next".into(),
            crate::chart::Attribute {
                ty: Type::Shape("Hours".into()),
                optional: false,
                ..day
            },
        );
        let g = Generator::new(&chart, Vec::new());
        assert_eq!(g.made(&Type::Shape("Hours".into()), "hours", 1), None);
    }

    /// A map is made as one entry of a value of its type, and a stored one is given back
    /// as its entries in the order of their keys.
    #[test]
    fn a_map_is_generated_as_its_entries() {
        let chart = crate::chart::builtin();
        let g = Generator::new(&chart, Vec::new());
        let flags = Type::Map {
            of: Box::new(Type::Boolean),
            max_items: Some(2),
        };
        let made = g.made(&flags, "flags", 0).unwrap();
        assert_eq!(made.to_string(), r#"[{key: "key-0", value: true}]"#);
        let none = Type::Map {
            of: Box::new(Type::Boolean),
            max_items: Some(0),
        };
        assert_eq!(g.made(&none, "flags", 0).unwrap().to_string(), "[]");
        let stored = AttributeValue::M(HashMap::from([
            ("b".to_owned(), AttributeValue::Bool(false)),
            ("a".to_owned(), AttributeValue::Bool(true)),
        ]));
        assert_eq!(
            g.input_value(&flags, &stored).unwrap().to_string(),
            r#"[{key: "a", value: true}, {key: "b", value: false}]"#
        );
    }

    /// Nothing to reference: no input, and the reason names what is missing.
    #[test]
    fn a_create_with_nothing_to_reference_says_so() {
        let chart = crate::chart::builtin();
        let mut g = Generator::new(&chart, Vec::new());
        let why = g
            .create_input(&chart.mutations["createUser"], 0)
            .unwrap_err();
        assert_eq!(why, "no organization to name in `org` (its `organization`)");
        // An organization is made from its types alone.
        let org = g
            .create_input(&chart.mutations["createOrganization"], 0)
            .unwrap();
        assert!(text(&org, "slug").starts_with("\"slug-"), "{org}");
    }
}
