//! The most bytes an entity's item can take, by DynamoDB's item-size arithmetic
//! ("Item sizes and formats" in its developer guide): each attribute's name in UTF-8 plus
//! its value, a string its UTF-8 bytes, a number about one byte per two significant digits
//! plus one, a list or map 3 bytes plus one a member and each member's size (a map's
//! names too). The bounds are those the chart declares and the write path enforces: a
//! string's `max_length` (the write path's own bound when it has none), an identifier
//! kind's longest value, a list's `max_items`. What nothing bounds is DynamoDB's own limit,
//! 400 KB. `chart check`'s advice on pages and transactions adds these up.

use super::template::{Part, Template};
use super::types::{Kind, Type, DEFAULT_MAX_CHARS};
use super::{Chart, Entity, Projection};

/// DynamoDB's largest item, in bytes.
pub const MAX_ITEM_BYTES: u64 = 400 * 1024;

/// The most UTF-8 bytes one character takes: a string of `n` characters is at most `4n`
/// bytes.
const MAX_CHAR_BYTES: u64 = 4;

/// A number of 38 significant digits, DynamoDB's most: 19 bytes and one.
const MAX_NUMBER_BYTES: u64 = 20;

/// An RFC 3339 UTC time with nanoseconds (`2026-01-31T12:00:00.123456789Z`).
const TIMESTAMP_BYTES: u64 = 30;

/// The longest name a map's member can have: the chart bounds none (a mutation takes a
/// key of up to 16 384 characters, at most this in UTF-8), so DynamoDB's own bound on an
/// attribute name's length applies, and a map is at most 400 KB whatever its `max_items`.
const MAP_NAME_BYTES: u64 = 64 * 1024;

/// The most an item of `e` can take (`bytes`: what its attributes add up to, which may pass
/// [`MAX_ITEM_BYTES`]: DynamoDB refuses such an item); `unbounded` names the attribute that
/// nothing but DynamoDB's limit bounds, where one does (`bytes` is then that limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Size {
    pub bytes: u64,
    pub unbounded: Option<String>,
}

impl Size {
    /// The most one item takes as DynamoDB stores it: at most 400 KB.
    pub fn stored(&self) -> u64 {
        self.bytes.min(MAX_ITEM_BYTES)
    }
}

/// The most bytes an item of `e` takes: its attributes, its key attributes and its type.
pub fn max_item(chart: &Chart, e: &Entity) -> Size {
    max_item_in(chart, e, None)
}

/// The most bytes an item of `e` takes as `index` holds it (`None`: the base table): an
/// index that projects `KEYS_ONLY` or `INCLUDE` holds the table's and its own keys and
/// what it includes.
pub fn max_item_in(chart: &Chart, e: &Entity, index: Option<&str>) -> Size {
    let t = &chart.table;
    let projected = index
        .and_then(|i| chart.indexes.get(i))
        .map(|i| &i.projection)
        .filter(|p| **p != Projection::All);
    let holds = |name: &str| match projected {
        None => true,
        Some(Projection::Include(a)) => a.iter().any(|a| a == name),
        Some(_) => false,
    };
    let mut bytes = 0u64;
    let mut unbounded = None;
    if holds(&t.type_attribute) {
        bytes += (t.type_attribute.len() + e.name.len()) as u64;
    }
    let key = |name: &str, template: &Template| name.len() as u64 + rendered(e, template);
    bytes += key(&t.partition_key, &e.key.pk);
    if let Some(sk) = &t.sort_key {
        bytes += key(sk, &e.key.sk);
    }
    for (name, keys) in &e.indexes {
        let Some(i) = chart.indexes.get(name) else {
            continue;
        };
        if projected.is_none() || index == Some(name.as_str()) {
            bytes += key(&i.partition_key, &keys.pk);
            if let Some(sk) = &i.sort_key {
                bytes += key(sk, &keys.sk);
            }
        }
    }
    for (name, a) in e.attributes.iter().filter(|(name, _)| holds(name)) {
        match value(chart, &a.ty, 0) {
            Some(v) => bytes += name.len() as u64 + v,
            None => {
                unbounded.get_or_insert_with(|| name.clone());
            }
        }
    }
    if unbounded.is_some() {
        bytes = MAX_ITEM_BYTES;
    }
    Size { bytes, unbounded }
}

/// Where in a value of `ty` (at `path`) nothing bounds its size, and why: a list or map
/// without `max_items`, or a shape that holds itself. The walk [`max_item`] makes.
pub fn unbounded(chart: &Chart, ty: &Type, path: &str) -> Option<(String, &'static str)> {
    unbounded_at(chart, ty, path, 0)
}

fn unbounded_at(
    chart: &Chart,
    ty: &Type,
    path: &str,
    depth: usize,
) -> Option<(String, &'static str)> {
    match ty {
        Type::List {
            max_items: None, ..
        }
        | Type::Map {
            max_items: None, ..
        } => Some((path.to_owned(), "has no `max_items`")),
        Type::List { of, .. } | Type::Map { of, .. } => unbounded_at(chart, of, path, depth + 1),
        Type::Shape(_) if depth > MAX_DEPTH => Some((
            path.to_owned(),
            "holds its own shape, so it nests without bound",
        )),
        Type::Shape(shape) => chart.shapes.get(shape)?.iter().find_map(|(field, a)| {
            unbounded_at(chart, &a.ty, &format!("{path}.{field}"), depth + 1)
        }),
        _ => None,
    }
}

/// How deep a value is walked: past it, a shape can only be one that holds itself.
const MAX_DEPTH: usize = 8;

/// The attribute of `e` whose value can take the most bytes, with them.
pub fn largest_attribute(chart: &Chart, e: &Entity) -> Option<(String, u64)> {
    e.attributes
        .iter()
        .filter_map(|(name, a)| Some((name.clone(), value(chart, &a.ty, 0)?)))
        .max_by_key(|(_, b)| *b)
}

/// The longest a key template renders for `e`: its literals and each value's longest.
fn rendered(e: &Entity, t: &Template) -> u64 {
    t.parts
        .iter()
        .map(|p| match p {
            Part::Literal(l) => l.len() as u64,
            Part::Var(v) => match v.width {
                Some(w) => w as u64,
                None => e
                    .attributes
                    .get(&v.name)
                    .and_then(|a| key_value(&a.ty))
                    .unwrap_or(0),
            },
        })
        .sum()
}

/// The longest value of a type a key holds.
fn key_value(ty: &Type) -> Option<u64> {
    match ty {
        Type::Kind(k) => Some(kind(k)),
        Type::Enum { values, .. } => values.iter().map(|v| v.len() as u64).max(),
        Type::Int { min, max } => {
            let digits = |n: &Option<i64>| n.map_or(20, |n| n.to_string().len() as u64);
            Some(digits(min).max(digits(max)))
        }
        _ => None,
    }
}

fn kind(k: &Kind) -> u64 {
    k.max_len() as u64
}

/// The most bytes a value of `ty` takes; `None` where only DynamoDB's limit bounds it.
fn value(chart: &Chart, ty: &Type, depth: usize) -> Option<u64> {
    Some(
        match ty {
            Type::String { max_length, .. } => {
                max_length.unwrap_or(DEFAULT_MAX_CHARS) as u64 * MAX_CHAR_BYTES
            }
            Type::Int { min, max } => {
                // Digits of the largest magnitude the bounds allow; a 32-bit Int without them.
                let digits = |n: i64| n.unsigned_abs().to_string().len() as u64;
                let most = match (min, max) {
                    (Some(a), Some(b)) => digits(*a).max(digits(*b)),
                    _ => 10,
                };
                most.div_ceil(2) + 1
            }
            Type::Boolean => 1,
            Type::Timestamp(_) => TIMESTAMP_BYTES,
            Type::Expiry | Type::Cents { .. } | Type::Counter => MAX_NUMBER_BYTES,
            Type::Kind(k) => kind(k),
            Type::Enum { values, .. } => values.iter().map(|v| v.len() as u64).max().unwrap_or(0),
            Type::Shape(shape) => {
                // A shape that holds itself is bounded only by DynamoDB's limit.
                if depth > MAX_DEPTH {
                    return None;
                }
                let fields = chart.shapes.get(shape)?;
                let mut sum = 3;
                for (name, a) in fields {
                    sum += name.len() as u64 + 1 + value(chart, &a.ty, depth + 1)?;
                }
                sum
            }
            Type::List { of, max_items } => {
                3 + (*max_items)? as u64 * (1 + value(chart, of, depth + 1)?)
            }
            Type::Map { of, max_items } => {
                3 + (*max_items)? as u64 * (MAP_NAME_BYTES + 1 + value(chart, of, depth + 1)?)
            }
        }
        .min(MAX_ITEM_BYTES),
    )
}
