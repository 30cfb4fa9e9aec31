//! Items as the table stores them, where that is not as the chart names them: attributes
//! under names of their own (`stored = "Email"`), numbers as strings, values that live only
//! in the primary key (`c#{customerId}`), the type attribute's own words per entity
//! (`type_value = "customer"`) or no type attribute at all (each item told by the shape of
//! its keys, which rule `keys-distinct` proves no two entities share).
//!
//! The rest of the server reads and writes items in the chart's own form: attributes by
//! their chart names, numbers as numbers, every key value beside the key, the entity's name
//! in [`super::Table::type_attribute`]. [`Forms`] turns one into the other, and
//! [`crate::store::stored::StoredStore`] applies it to every call of the store port: the one
//! place a table's own form is known. A chart whose items are stored as it names them has
//! no forms, and nothing is turned.

use std::collections::HashMap;

use super::template::Value;
use super::types::Type;
use super::{Chart, Entity};
use crate::store::{AttributeValue, Condition, Item, PrimaryKey, SetValue, UpdateExpr};

/// How one entity's attributes are stored, where not as named.
#[derive(Debug, Default)]
struct Form {
    /// Chart name to stored name.
    names: HashMap<String, String>,
    /// Stored name to chart name.
    chart_names: HashMap<String, String>,
    /// Numbers stored as their digits.
    strings: Vec<String>,
    /// Attributes stored only in the primary key.
    key_only: Vec<String>,
    /// Attributes that are a key attribute themselves (an index keyed by `Username`, whose
    /// template for this entity is `{username}`): chart name to the key attribute, and
    /// whether the value is an int.
    in_keys: HashMap<String, (String, bool)>,
    /// Values only in an index key, the one variable of its template there (`p#{sku}`):
    /// the key attribute, and the template.
    from_index: HashMap<String, (String, super::template::Template)>,
}

/// A chart's stored forms: what [`Forms::stored`] and [`Forms::charted`] turn.
#[derive(Debug)]
pub struct Forms {
    forms: HashMap<String, Form>,
    /// The entity each stored type value names in each table (its place in the chart's
    /// tables): two tables' items may say one type value of different entities.
    by_type_value: HashMap<(usize, String), String>,
    /// Entities in the order their keys are tried, when items hold no type attribute.
    entities: Vec<String>,
}

impl Forms {
    /// The forms of `chart`; `None` when its items are stored as it names them.
    pub fn of(chart: &Chart) -> Option<Forms> {
        // The server's own items name their type in `Type`: a table whose items name theirs
        // elsewhere has them told apart here too.
        let mut any =
            !chart.table.types_stored || chart.table.type_attribute != crate::store::own::TYPE;
        // An index its table knows by another name than the chart's.
        any |= chart.indexes.values().any(|i| i.stored != i.name);
        let mut forms = HashMap::new();
        let mut by_type_value = HashMap::new();
        for (name, e) in &chart.entities {
            let key_attributes: Vec<&str> = chart
                .table_of(e)
                .key_names()
                .into_iter()
                // A multi-attribute key's attributes are the items' own, stored by their
                // names.
                .chain(
                    chart
                        .indexes
                        .values()
                        .filter(|i| !i.multi && i.table == e.table)
                        .flat_map(|i| i.key_names()),
                )
                .collect();
            any |= e.type_value != e.name;
            by_type_value.insert((e.table, e.type_value.clone()), name.clone());
            let mut form = Form::default();
            for (a, attr) in &e.attributes {
                match attr.stored.as_ref().filter(|s| *s != a) {
                    Some(s) if key_attributes.contains(&s.as_str()) => {
                        let int = matches!(attr.ty, Type::Int { .. });
                        form.in_keys.insert(a.clone(), (s.clone(), int));
                    }
                    Some(s) => {
                        form.names.insert(a.clone(), s.clone());
                        form.chart_names.insert(s.clone(), a.clone());
                    }
                    None => {}
                }
                if attr.as_string {
                    form.strings.push(a.clone());
                }
                if attr.key_only {
                    form.key_only.push(a.clone());
                    if !e.key.var_names().contains(&a.as_str()) {
                        if let Some(found) = index_template(chart, e, a) {
                            form.from_index.insert(a.clone(), found);
                        }
                    }
                }
            }
            any |= !(form.names.is_empty()
                && form.strings.is_empty()
                && form.key_only.is_empty()
                && form.in_keys.is_empty());
            forms.insert(name.clone(), form);
        }
        any.then(|| Forms {
            forms,
            by_type_value,
            entities: chart.entities.keys().cloned().collect(),
        })
    }

    fn form(&self, entity: &str) -> Option<&Form> {
        self.forms.get(entity)
    }

    /// The entity of an item of table `table` (its place in the chart's tables) as stored:
    /// by its type attribute's value there, or, where the items hold none, by the one
    /// entity whose key templates its keys fit.
    pub fn entity_of<'c>(&self, chart: &'c Chart, table: usize, item: &Item) -> Option<&'c Entity> {
        let t = &chart.tables[table];
        if t.types_stored {
            let AttributeValue::S(v) = item.get(&t.type_attribute)? else {
                return None;
            };
            return chart
                .entities
                .get(self.by_type_value.get(&(table, v.clone()))?);
        }
        self.entity_of_key(chart, table, &chart.key_in(table, item)?)
    }

    /// The entity of table `table` (its place in [`Chart::tables`]) whose key templates
    /// `key` fits.
    pub fn entity_of_key<'c>(
        &self,
        chart: &'c Chart,
        table: usize,
        key: &PrimaryKey,
    ) -> Option<&'c Entity> {
        self.entities
            .iter()
            .map(|n| &chart.entities[n])
            .filter(|e| e.table == table)
            .find(|e| read_key(e, key).is_some())
    }

    /// An item in the chart's form as the table stores it.
    pub fn stored(&self, chart: &Chart, mut item: Item) -> Item {
        let t = &chart.table;
        let Some(AttributeValue::S(name)) = item.get(&t.type_attribute) else {
            return item;
        };
        let Some(e) = chart.entities.get(name) else {
            return item;
        };
        if t.types_stored {
            item.insert(
                t.type_attribute.clone(),
                AttributeValue::S(e.type_value.clone()),
            );
        } else {
            item.remove(&t.type_attribute);
        }
        let Some(form) = self.form(&e.name) else {
            return item;
        };
        for a in form.key_only.iter().chain(form.in_keys.keys()) {
            item.remove(a);
        }
        for a in &form.strings {
            if let Some(v) = item.get_mut(a) {
                *v = to_string(std::mem::replace(v, AttributeValue::Null(true)));
            }
        }
        for (a, s) in &form.names {
            if let Some(v) = item.remove(a) {
                item.insert(s.clone(), v);
            }
        }
        item
    }

    /// An item as table `table` (its place in the chart's tables) stores it, in the
    /// chart's form. An item of no entity comes back as it is, without the chart's type
    /// attribute (it then decodes as of none).
    pub fn charted(&self, chart: &Chart, table: usize, mut item: Item) -> Item {
        let t = &chart.tables[table];
        let Some(e) = self
            .entity_of(chart, table, &item)
            .or_else(|| own_item(chart, &item))
        else {
            if !t.types_stored {
                item.remove(&t.type_attribute);
            } else if let Some(AttributeValue::S(v)) = item.get(&t.type_attribute) {
                // A type value of no entity must not read as the entity of that name.
                if chart.entities.contains_key(v) {
                    let v = format!("{v} (as stored)");
                    item.insert(t.type_attribute.clone(), AttributeValue::S(v));
                }
            }
            return item;
        };
        let form = self.form(&e.name);
        if let Some(form) = form {
            for (s, a) in &form.chart_names {
                if let Some(v) = item.remove(s) {
                    item.insert(a.clone(), v);
                }
            }
            for (a, (key, int)) in &form.in_keys {
                let value = match item.get(key) {
                    Some(AttributeValue::S(t) | AttributeValue::N(t)) => Some(t.clone()),
                    _ => None,
                };
                if let Some(t) = value {
                    let v = if *int {
                        AttributeValue::N(t)
                    } else {
                        AttributeValue::S(t)
                    };
                    item.insert(a.clone(), v);
                }
            }
            for a in &form.strings {
                if let Some(v) = item.get_mut(a) {
                    *v = to_number(std::mem::replace(v, AttributeValue::Null(true)));
                }
            }
            for (a, (key, template)) in &form.from_index {
                let Some(AttributeValue::S(text)) = item.get(key) else {
                    continue;
                };
                let Some(read) = template.read(text) else {
                    continue;
                };
                if let Some((_, v)) = read.into_iter().next() {
                    let int = matches!(e.attributes.get(a).map(|x| &x.ty), Some(Type::Int { .. }));
                    let v = match v {
                        Value::Int(n) => AttributeValue::N(n.to_string()),
                        Value::Text(t) if int => AttributeValue::N(t),
                        Value::Text(t) => AttributeValue::S(t),
                    };
                    item.insert(a.clone(), v);
                }
            }
            if !form.key_only.is_empty() {
                if let Some(values) = chart.key_in(e.table, &item).and_then(|k| read_key(e, &k)) {
                    for a in &form.key_only {
                        if let Some(v) = values.get(a.as_str()) {
                            item.insert(a.clone(), v.clone());
                        }
                    }
                }
            }
        }
        item.insert(t.type_attribute.clone(), AttributeValue::S(e.name.clone()));
        item
    }

    /// A condition on the item at `key` as the table can evaluate it: names as stored,
    /// numbers as stored, and a comparison of a value that lives only in the key decided
    /// from the key itself (an item at this key holds exactly the values it renders).
    pub fn condition(
        &self,
        chart: &Chart,
        table: usize,
        key: Option<&PrimaryKey>,
        c: Condition,
    ) -> Condition {
        let entity = key.and_then(|k| self.entity_of_key(chart, table, k));
        self.turn_condition(chart, entity, key, c)
    }

    fn turn_condition(
        &self,
        chart: &Chart,
        entity: Option<&Entity>,
        key: Option<&PrimaryKey>,
        c: Condition,
    ) -> Condition {
        let pk = &entity
            .map_or(&chart.table, |e| chart.table_of(e))
            .partition_key;
        let form = entity.and_then(|e| self.form(&e.name));
        let key_value = |a: &str| -> Option<AttributeValue> {
            if !form?.key_only.iter().any(|k| k == a) {
                return None;
            }
            read_key(entity?, key?)?.remove(a)
        };
        let name = |a: String| -> String {
            form.and_then(|f| {
                f.names
                    .get(&a)
                    .or_else(|| f.in_keys.get(&a).map(|(k, _)| k))
                    .cloned()
            })
            .unwrap_or(a)
        };
        let value = |a: &str, v: AttributeValue| -> AttributeValue {
            if form.is_some_and(|f| f.strings.iter().any(|s| s == a)) {
                to_string(v)
            } else {
                v
            }
        };
        // What a comparison decided from the key leaves: the item being there, or never.
        let decided = |holds: bool| {
            if holds {
                Condition::Exists(pk.clone())
            } else {
                Condition::And(vec![
                    Condition::Exists(pk.clone()),
                    Condition::NotExists(pk.clone()),
                ])
            }
        };
        // A value only in an index key: compared as the key renders it.
        let in_index = |a: &str| form.and_then(|f| f.from_index.get(a));
        let rendered = |t: &super::template::Template, a: &str, v: &AttributeValue| match v {
            AttributeValue::S(s) => t
                .render(|n| (n == a).then(|| Value::Text(s.clone())))
                .ok()
                .map(AttributeValue::S),
            AttributeValue::N(n) => t
                .render(|x| {
                    (x == a).then(|| n.parse().map(Value::Int).unwrap_or(Value::Text(n.clone())))
                })
                .ok()
                .map(AttributeValue::S),
            _ => None,
        };
        if let Some((key, t)) = in_index(c.attribute().unwrap_or_default()) {
            match &c {
                Condition::Exists(_) => return Condition::Exists(key.clone()),
                Condition::NotExists(_) => return Condition::NotExists(key.clone()),
                Condition::Cmp(a, op, v) => {
                    if let Some(r) = rendered(t, a, v) {
                        return Condition::Cmp(key.clone(), *op, r);
                    }
                }
                _ => {}
            }
        }
        match c {
            Condition::Exists(a) if key_value(&a).is_some() => Condition::Exists(pk.clone()),
            Condition::NotExists(a) if key_value(&a).is_some() => Condition::NotExists(pk.clone()),
            Condition::Cmp(a, op, v) => match key_value(&a) {
                Some(k) => decided(compare(&k, &v).is_some_and(|o| op.holds(o))),
                None => {
                    let v = value(&a, v);
                    Condition::Cmp(name(a), op, v)
                }
            },
            Condition::Between(a, lo, hi) => match key_value(&a) {
                Some(k) => decided(
                    compare(&k, &lo).is_some_and(|o| o.is_ge())
                        && compare(&k, &hi).is_some_and(|o| o.is_le()),
                ),
                None => {
                    let (lo, hi) = (value(&a, lo), value(&a, hi));
                    Condition::Between(name(a), lo, hi)
                }
            },
            Condition::BeginsWith(a, p) => match key_value(&a) {
                Some(AttributeValue::S(k)) => decided(k.starts_with(&p)),
                Some(_) => decided(false),
                None => Condition::BeginsWith(name(a), p),
            },
            Condition::Exists(a) => Condition::Exists(name(a)),
            Condition::NotExists(a) => Condition::NotExists(name(a)),
            Condition::EntryExists(m, k) => Condition::EntryExists(name(m), k),
            Condition::Size(a, op, n) => Condition::Size(name(a), op, n),
            Condition::And(cs) => Condition::And(
                cs.into_iter()
                    .map(|c| self.turn_condition(chart, entity, key, c))
                    .collect(),
            ),
            Condition::Or(cs) => Condition::Or(
                cs.into_iter()
                    .map(|c| self.turn_condition(chart, entity, key, c))
                    .collect(),
            ),
            Condition::Not(c) => {
                Condition::Not(Box::new(self.turn_condition(chart, entity, key, *c)))
            }
        }
    }

    /// A Scan's filter: names and numbers as stored for the entity `entity` it reads.
    pub fn filter(&self, chart: &Chart, entity: Option<&Entity>, c: Condition) -> Condition {
        // No key: a value only in keys cannot be compared here (rule `stored` refuses a Scan
        // whose filter would need one).
        self.turn_condition(chart, entity, None, c)
    }

    /// An update of the item at `key` as the table stores it. A value that lives only in
    /// the key is never set: the key already holds it.
    pub fn update(
        &self,
        chart: &Chart,
        table: usize,
        key: &PrimaryKey,
        mut u: UpdateExpr,
    ) -> UpdateExpr {
        let Some(form) = self
            .entity_of_key(chart, table, key)
            .and_then(|e| self.form(&e.name))
        else {
            return u;
        };
        let name = |a: &mut String| {
            if let Some(s) = form.names.get(a.as_str()) {
                *a = s.clone();
            }
        };
        let is_string = |a: &str| form.strings.iter().any(|s| s == a);
        // A value that is a key attribute itself is written by the key's own action.
        let in_key = |a: &String| form.key_only.contains(a) || form.in_keys.contains_key(a);
        u.set.retain(|(a, _)| !in_key(a));
        u.remove.retain(|a| !in_key(a));
        for (a, v) in &mut u.set {
            if is_string(a) {
                *v = match std::mem::replace(v, SetValue::Value(AttributeValue::Null(true))) {
                    SetValue::Value(v) => SetValue::Value(to_string(v)),
                    SetValue::IfNotExists(v) => SetValue::IfNotExists(to_string(v)),
                };
            }
            name(a);
        }
        for a in &mut u.remove {
            name(a);
        }
        for (a, _) in &mut u.add {
            name(a);
        }
        for (m, _, _) in &mut u.set_entry {
            name(m);
        }
        for (m, _) in &mut u.remove_entry {
            name(m);
        }
        u
    }
}

/// The values `e`'s key templates were rendered from, when `key` fits them: each as its
/// attribute stores it in the chart's form.
fn read_key(e: &Entity, key: &PrimaryKey) -> Option<HashMap<String, AttributeValue>> {
    let mut out = HashMap::new();
    for (t, text) in [(&e.key.pk, &key.pk), (&e.key.sk, &key.sk)] {
        for (var, value) in t.read(text)? {
            let v = match (e.attributes.get(&var.name).map(|a| &a.ty), value) {
                (Some(Type::Int { .. }), Value::Int(n)) => AttributeValue::N(n.to_string()),
                (Some(Type::Int { .. }), Value::Text(s)) => {
                    // As a template renders an integer without a width: no leading zero.
                    let n: i64 = s.parse().ok()?;
                    (n.to_string() == s).then_some(AttributeValue::N(s))?
                }
                (_, Value::Text(s)) => AttributeValue::S(s),
                (_, Value::Int(n)) => AttributeValue::S(n.to_string()),
            };
            if out
                .insert(var.name.clone(), v.clone())
                .is_some_and(|was| was != v)
            {
                return None;
            }
        }
    }
    Some(out)
}

fn to_string(v: AttributeValue) -> AttributeValue {
    match v {
        AttributeValue::N(n) => AttributeValue::S(n),
        other => other,
    }
}

fn to_number(v: AttributeValue) -> AttributeValue {
    match v {
        AttributeValue::S(s) if s.trim().parse::<f64>().is_ok() => AttributeValue::N(s),
        other => other,
    }
}

fn compare(a: &AttributeValue, b: &AttributeValue) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (AttributeValue::S(a), AttributeValue::S(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (AttributeValue::N(a), AttributeValue::N(b)) => {
            a.parse::<f64>().ok()?.partial_cmp(&b.parse::<f64>().ok()?)
        }
        _ => None,
    }
}

/// The index key of `e` whose template holds `attr` as its one variable: the key attribute
/// and the template.
fn index_template(
    chart: &Chart,
    e: &Entity,
    attr: &str,
) -> Option<(String, super::template::Template)> {
    e.indexes.iter().find_map(|(i, keys)| {
        let index = chart.indexes.get(i)?;
        [
            (Some(&index.partition_key), &keys.pk),
            (index.sort_key.as_ref(), &keys.sk),
        ]
        .into_iter()
        .find_map(|(name, t)| {
            let vars: Vec<&str> = t.vars().map(|v| v.name.as_str()).collect();
            (vars == [attr]).then(|| Some((name?.clone(), t.clone())))?
        })
    })
}

/// The server's own item `item` is (its key reserved, its type in `Type`), where it is one.
fn own_item<'c>(chart: &'c Chart, item: &Item) -> Option<&'c Entity> {
    let AttributeValue::S(ty) = item.get(crate::store::own::TYPE)? else {
        return None;
    };
    let e = chart.entities.get(ty).filter(|e| e.system)?;
    let key = chart.key_of(item)?;
    read_key(e, &key).map(|_| e)
}
