//! The table's shape as the port knows it: its key attributes and their types (`S`, `N`),
//! a simple or composite primary key, its secondary indexes (global and local) and what
//! each projects; numbers ordered as DynamoDB orders a numeric key.

use super::{AttributeValue, IndexKey, Item, PrimaryKey};

/// The type of a key attribute, as CreateTable declares it: a string (`S`) or a number
/// (`N`). A key's value travels through the port as its text either way: the string, or the
/// number's decimal digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyType {
    #[default]
    S,
    N,
}

impl KeyType {
    /// `S` or `N`, as DynamoDB spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::S => "S",
            KeyType::N => "N",
        }
    }

    /// A key value of this type as the item stores it.
    pub fn value(self, text: &str) -> AttributeValue {
        match self {
            KeyType::S => AttributeValue::S(text.to_owned()),
            KeyType::N => AttributeValue::N(text.to_owned()),
        }
    }

    /// A key value of this type as text whose byte order is DynamoDB's order of such
    /// values: a string as itself, a number by value ([`sortable_number`]). `None`: not a
    /// number.
    pub fn sortable(self, text: &str) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            KeyType::S => Some(std::borrow::Cow::Borrowed(text)),
            KeyType::N => sortable_number(text).map(std::borrow::Cow::Owned),
        }
    }

    /// The text of a key value of this type, if `v` is one.
    pub fn text(self, v: &AttributeValue) -> Option<&str> {
        match (self, v) {
            (KeyType::S, AttributeValue::S(s)) | (KeyType::N, AttributeValue::N(s)) => Some(s),
            _ => None,
        }
    }
}

/// A decimal number (DynamoDB's: digits, a fraction, an exponent, a sign) as ASCII text
/// whose byte order is the numbers' order, equal numbers alike (`7`, `7.0`, `0.7e1`):
/// negative numbers first, then zero, then positive ones; each by its exponent, then its
/// digits, a negative number's complemented (and closed by `~`, so that a shorter one,
/// nearer zero, sorts after those it begins). Written here: no crate orders decimal text.
pub fn sortable_number(text: &str) -> Option<String> {
    let t = text.trim();
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits: String = int.chars().chain(frac.chars()).collect();
    let lead = digits.bytes().take_while(|b| *b == b'0').count();
    let significant = digits[lead..].trim_end_matches('0');
    if significant.is_empty() {
        return Some("1".into());
    }
    // value = 0.significant × 10^e
    let e = exponent + int.len() as i32 - lead as i32;
    if !(-200..=799).contains(&e) {
        return None;
    }
    let mut out = String::with_capacity(significant.len() + 6);
    if negative {
        out.push('0');
        out.push_str(&format!("{:03}", 999 - (e + 200)));
        out.extend(significant.bytes().map(|b| char::from(b'9' - (b - b'0'))));
        out.push('~');
    } else {
        out.push('2');
        out.push_str(&format!("{:03}", e + 200));
        out.push_str(significant);
    }
    Some(out)
}

/// The table's key attributes and secondary indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// Partition key attribute of the base table.
    pub pk: String,
    pub pk_type: KeyType,
    /// Sort key attribute of the base table; `None`: a simple primary key, the partition
    /// key alone (its items' [`PrimaryKey::sk`] is empty).
    pub sk: Option<String>,
    pub sk_type: KeyType,
    /// Secondary indexes, global and local.
    pub indexes: Vec<IndexSchema>,
    /// The attribute Time to Live reads (epoch seconds), turned on when the table is
    /// created: items whose value of it has passed are deleted by the service.
    pub time_to_live: Option<String>,
}

/// A secondary index: sparse, so only items carrying all its key attributes appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSchema {
    pub name: String,
    pub pk: String,
    pub pk_type: KeyType,
    /// `None`: keyed by its partition key alone (its keys' [`IndexKey::sk`] is empty).
    pub sk: Option<String>,
    pub sk_type: KeyType,
    /// A multi-attribute key (global indexes only): its partition attributes after `pk`,
    /// in order, each of its own type. DynamoDB allows four partition and four sort
    /// attributes ([`MAX_KEY_ATTRIBUTES`]).
    pub pk_more: Vec<(String, KeyType)>,
    /// A multi-attribute key's sort attributes after `sk`, in order.
    pub sk_more: Vec<(String, KeyType)>,
    /// A local secondary index: the table's partition key and a sort key of its own,
    /// created with the table only.
    pub local: bool,
    /// The attributes a Query of the index answers with.
    pub projection: IndexProjection,
}

/// How many partition attributes, and how many sort attributes, a multi-attribute index
/// key may have.
pub const MAX_KEY_ATTRIBUTES: usize = 4;

/// What an index copies of each item, as CreateTable is told: every attribute, the keys
/// (the table's and the index's) only, or the keys and the attributes named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexProjection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

impl TableSchema {
    /// A table keyed by the string attributes `pk` and `sk`, with no index.
    pub fn composite(pk: &str, sk: &str) -> TableSchema {
        TableSchema {
            pk: pk.to_owned(),
            pk_type: KeyType::S,
            sk: Some(sk.to_owned()),
            sk_type: KeyType::S,
            indexes: Vec::new(),
            time_to_live: None,
        }
    }

    /// The index of that name, if the table has it.
    pub fn index(&self, name: &str) -> Option<&IndexSchema> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// Whether `attr` is a key attribute of the table or of any index.
    pub fn is_key_attribute(&self, attr: &str) -> bool {
        attr == self.pk
            || self.sk.as_deref() == Some(attr)
            || self.indexes.iter().any(|i| i.key_names().contains(&attr))
    }

    /// The primary key of an item, if it carries its key attributes of their types.
    pub fn key_of(&self, item: &Item) -> Option<PrimaryKey> {
        Some(PrimaryKey {
            pk: self.pk_type.text(item.get(&self.pk)?)?.to_owned(),
            sk: match &self.sk {
                Some(sk) => self.sk_type.text(item.get(sk)?)?.to_owned(),
                None => String::new(),
            },
        })
    }

    /// A primary key as the item's key attributes: each of its type, none for the sort key
    /// of a simple key.
    pub fn key_attributes(&self, key: &PrimaryKey) -> Vec<(&str, AttributeValue)> {
        let mut out = vec![(self.pk.as_str(), self.pk_type.value(&key.pk))];
        if let Some(sk) = &self.sk {
            out.push((sk.as_str(), self.sk_type.value(&key.sk)));
        }
        out
    }

    /// What a Query of `index` answers with for `item`: the item, or (an index that does
    /// not copy every attribute) its keys and the attributes the index includes.
    pub fn projected(&self, index: &IndexSchema, mut item: Item) -> Item {
        let keep: &[String] = match &index.projection {
            IndexProjection::All => return item,
            IndexProjection::KeysOnly => &[],
            IndexProjection::Include(a) => a,
        };
        let index_keys = index.key_names();
        item.retain(|name, _| {
            *name == self.pk
                || self.sk.as_ref() == Some(name)
                || index_keys.contains(&name.as_str())
                || keep.contains(name)
        });
        item
    }

    /// The index key of an item for one index, if the item appears in it: it carries
    /// every key attribute of the index, each of its type (an index is sparse).
    pub fn index_key_of(&self, index: &IndexSchema, item: &Item) -> Option<IndexKey> {
        let text = |(name, ty): &(String, KeyType)| Some(ty.text(item.get(name)?)?.to_owned());
        Some(IndexKey {
            pk: index.pk_type.text(item.get(&index.pk)?)?.to_owned(),
            sk: match &index.sk {
                Some(sk) => index.sk_type.text(item.get(sk)?)?.to_owned(),
                None => String::new(),
            },
            pk_more: index.pk_more.iter().map(text).collect::<Option<_>>()?,
            sk_more: index.sk_more.iter().map(text).collect::<Option<_>>()?,
        })
    }
}

impl IndexSchema {
    /// An index keyed by one string partition attribute and, where given, one string
    /// sort attribute, projecting every attribute.
    pub fn new(name: &str, pk: &str, sk: Option<&str>) -> IndexSchema {
        IndexSchema {
            name: name.to_owned(),
            pk: pk.to_owned(),
            pk_type: KeyType::S,
            sk: sk.map(str::to_owned),
            sk_type: KeyType::S,
            pk_more: Vec::new(),
            sk_more: Vec::new(),
            local: false,
            projection: IndexProjection::All,
        }
    }

    /// Whether its key has more than one partition or sort attribute.
    pub fn multi_attribute(&self) -> bool {
        !self.pk_more.is_empty() || !self.sk_more.is_empty()
    }

    /// Its partition attributes, in order, with their types.
    pub fn partition_attributes(&self) -> Vec<(&str, KeyType)> {
        std::iter::once((self.pk.as_str(), self.pk_type))
            .chain(self.pk_more.iter().map(|(n, t)| (n.as_str(), *t)))
            .collect()
    }

    /// Its sort attributes, in order, with their types (none: keyed by its partition).
    pub fn sort_attributes(&self) -> Vec<(&str, KeyType)> {
        self.sk
            .as_deref()
            .map(|sk| (sk, self.sk_type))
            .into_iter()
            .chain(self.sk_more.iter().map(|(n, t)| (n.as_str(), *t)))
            .collect()
    }

    /// Every key attribute's name: the partition attributes, then the sort attributes.
    pub fn key_names(&self) -> Vec<&str> {
        self.partition_attributes()
            .into_iter()
            .chain(self.sort_attributes())
            .map(|(n, _)| n)
            .collect()
    }

    /// An index key as the item's key attributes.
    pub fn key_attributes(&self, key: &IndexKey) -> Vec<(&str, AttributeValue)> {
        let partition = self
            .partition_attributes()
            .into_iter()
            .zip(key.partition_values());
        let sort = self.sort_attributes().into_iter().zip(key.sort_values());
        partition
            .chain(sort)
            .map(|((name, ty), v)| (name, ty.value(v)))
            .collect()
    }
}

/// How a table as it is differs from the schema a chart gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Whether requests of the chart would fail on the table as it is (its keys, an
    /// index's keys or a projection that holds less): serving it is refused.
    pub fatal: bool,
    pub text: String,
}

impl TableSchema {
    /// How `actual`, the table as DynamoDB describes it, differs from this schema (the
    /// chart's): its primary key; each index of this schema, missing from the table, of
    /// other keys, global where it is local, or projecting less than the chart reads. An
    /// index the table has beyond the chart's, or one projecting more, is no difference.
    pub fn differences(&self, actual: &TableSchema) -> Vec<Difference> {
        let mut out = Vec::new();
        let mut fatal = |text: String| out.push(Difference { fatal: true, text });
        let keys = |k: &[(&str, KeyType)]| {
            k.iter()
                .map(|(n, t)| format!("`{n}` ({})", t.as_str()))
                .collect::<Vec<_>>()
                .join(" + ")
        };
        type Keys<'a> = (Vec<(&'a str, KeyType)>, Vec<(&'a str, KeyType)>);
        fn table(s: &TableSchema) -> Keys<'_> {
            (
                vec![(s.pk.as_str(), s.pk_type)],
                s.sk.as_deref()
                    .map(|n| (n, s.sk_type))
                    .into_iter()
                    .collect(),
            )
        }
        fn shape(i: &IndexSchema) -> Keys<'_> {
            (i.partition_attributes(), i.sort_attributes())
        }
        let (want, have) = (table(self), table(actual));
        if want != have {
            let describe = |(p, s): &Keys| match s.is_empty() {
                true => format!("partition key {}", keys(p)),
                false => format!("partition key {}, sort key {}", keys(p), keys(s)),
            };
            fatal(format!(
                "the table is keyed by {}; the chart says {}",
                describe(&have),
                describe(&want)
            ));
        }
        for index in &self.indexes {
            let Some(found) = actual.index(&index.name) else {
                out.push(Difference {
                    fatal: false,
                    text: format!(
                        "index {}: the table has none (`itemgraph migrate --chart FILE` creates it); its patterns fail until it does",
                        index.name
                    ),
                });
                continue;
            };
            let mut fatal = |text: String| out.push(Difference { fatal: true, text });
            if shape(index) != shape(found) {
                let describe = |i: &IndexSchema| match i.sort_attributes().is_empty() {
                    true => format!("partition {}", keys(&i.partition_attributes())),
                    false => format!(
                        "partition {}, sort {}",
                        keys(&i.partition_attributes()),
                        keys(&i.sort_attributes())
                    ),
                };
                fatal(format!(
                    "index {}: the table keys it by {}; the chart says {}",
                    index.name,
                    describe(found),
                    describe(index)
                ));
            }
            if index.local != found.local {
                let kind = |local: bool| if local { "local" } else { "global" };
                fatal(format!(
                    "index {}: the table's is {}; the chart's {}",
                    index.name,
                    kind(found.local),
                    kind(index.local)
                ));
            }
            let missing: Vec<&String> = match (&index.projection, &found.projection) {
                (_, IndexProjection::All) | (IndexProjection::KeysOnly, _) => Vec::new(),
                (IndexProjection::Include(want), IndexProjection::Include(have)) => {
                    want.iter().filter(|a| !have.contains(a)).collect()
                }
                (IndexProjection::Include(want), IndexProjection::KeysOnly) => {
                    want.iter().collect()
                }
                (IndexProjection::All, _) => {
                    fatal(format!(
                        "index {}: the table's projects {}; the chart reads every attribute of it (ALL)",
                        index.name,
                        match &found.projection {
                            IndexProjection::KeysOnly => "its keys only".to_owned(),
                            IndexProjection::Include(a) => format!("its keys and {}", a.join(", ")),
                            IndexProjection::All => unreachable!("matched above"),
                        }
                    ));
                    Vec::new()
                }
            };
            if !missing.is_empty() {
                fatal(format!(
                    "index {}: the table's does not project {}, which the chart reads of it",
                    index.name,
                    missing
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod differences {
    use super::*;

    fn chart() -> TableSchema {
        TableSchema {
            indexes: vec![
                IndexSchema::new("GSI1", "GSI1PK", Some("GSI1SK")),
                IndexSchema {
                    projection: IndexProjection::Include(vec!["Name".into(), "Email".into()]),
                    ..IndexSchema::new("ByEmail", "Email", None)
                },
            ],
            ..TableSchema::composite("PK", "SK")
        }
    }

    #[test]
    fn the_same_table_and_one_holding_more_differ_in_nothing() {
        assert_eq!(chart().differences(&chart()), []);
        let mut more = chart();
        more.indexes[1].projection = IndexProjection::All;
        more.indexes.push(IndexSchema::new("Other", "X", None));
        assert_eq!(chart().differences(&more), []);
    }

    #[test]
    fn keys_indexes_and_projections_that_would_fail_are_fatal() {
        let mut table = chart();
        table.pk_type = KeyType::N;
        table.indexes[0].sk = None;
        table.indexes[1].projection = IndexProjection::Include(vec!["Name".into()]);
        let d = chart().differences(&table);
        let texts: Vec<&str> = d.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "the table is keyed by partition key `PK` (N), sort key `SK` (S); the chart says partition key `PK` (S), sort key `SK` (S)",
                "index GSI1: the table keys it by partition `GSI1PK` (S); the chart says partition `GSI1PK` (S), sort `GSI1SK` (S)",
                "index ByEmail: the table's does not project `Email`, which the chart reads of it",
            ]
        );
        assert!(d.iter().all(|d| d.fatal));
        let mut keys_only = chart();
        keys_only.indexes[0].projection = IndexProjection::KeysOnly;
        keys_only.indexes.remove(1);
        let d = chart().differences(&keys_only);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].fatal && d[0].text.contains("projects its keys only"));
        assert!(!d[1].fatal && d[1].text.starts_with("index ByEmail: the table has none"));
    }
}

#[cfg(test)]
mod number_order {
    use proptest::prelude::*;

    use super::sortable_number;

    /// `m × 10^-scale` as DynamoDB takes it, written several ways.
    fn written(m: i64, scale: u32, how: u8) -> String {
        let neg = m < 0;
        let digits = m.unsigned_abs().to_string();
        let text = if scale == 0 {
            digits
        } else {
            let padded = format!("{digits:0>width$}", width = scale as usize + 1);
            let (int, frac) = padded.split_at(padded.len() - scale as usize);
            format!("{int}.{frac}")
        };
        let text = match how % 3 {
            1 if scale > 0 => format!("{text}0"),
            2 => format!("{}e-{scale}", m.unsigned_abs()),
            _ => text,
        };
        if neg {
            format!("-{text}")
        } else {
            text
        }
    }

    proptest! {
        #[test]
        fn numbers_sort_by_value(a in -1_000_000i64..1_000_000, b in -1_000_000i64..1_000_000,
                                 sa in 0u32..4, sb in 0u32..4, ha in 0u8..3, hb in 0u8..3) {
            let (x, y) = (written(a, sa, ha), written(b, sb, hb));
            let value = |m: i64, s: u32| (m as i128) * 10i128.pow(6 - s);
            let want = value(a, sa).cmp(&value(b, sb));
            let (ex, ey) = (sortable_number(&x).unwrap(), sortable_number(&y).unwrap());
            prop_assert_eq!(ex.as_bytes().cmp(ey.as_bytes()), want, "{} vs {}: {} vs {}", x, y, ex, ey);
        }
    }

    #[test]
    fn what_is_no_number_has_no_order() {
        for bad in ["", "-", "1.2.3", "abc", "1e", "0x10", "--1"] {
            assert_eq!(sortable_number(bad), None, "{bad}");
        }
        assert_eq!(sortable_number("007"), sortable_number("7.000"));
        assert_eq!(sortable_number("0"), sortable_number("-0.0"));
    }
}
