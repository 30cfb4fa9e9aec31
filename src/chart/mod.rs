//! The chart: a table design (the entity chart and its access-pattern table) read from a
//! file and checked before anything is served. `docs/CHART.md` is the format and every rule.
//!
//! - [`format`]: the file as written (TOML through serde).
//! - [`template`]: key templates (`CHAIN#{chain}`, `STORE#{number:04}`), rendered and compared
//!   in DynamoDB's UTF-8 byte order.
//! - [`types`]: attribute types and what each allows in a key.
//! - [`rules`]: the checks that turn a file into a [`Chart`] or refuse it, each refusal
//!   naming the entity, the pattern and the rule.
//!
//! [`builtin`] is the four-entity design, `charts/itemgraph.toml`, compiled in.

pub mod advice;
mod condition;
pub mod data;
pub mod explain;
pub mod format;
pub mod kinds;
pub mod plan;
mod reach;
mod rules;
pub mod samples;
pub mod schema_names;
pub mod size;
pub mod stored;
pub mod template;
pub mod types;
pub mod workbench;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;

pub use reach::Included;

pub use rules::RULES;
use template::Template;
use types::Type;

/// The built-in chart's text.
pub const BUILTIN_SOURCE: &str = include_str!("../../charts/itemgraph.toml");
/// Where the built-in chart lives in the repository.
pub const BUILTIN_PATH: &str = "charts/itemgraph.toml";

/// The page a connection reads when the client names no size.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
/// Largest page a connection serves, and the most items a list read whole holds.
pub const MAX_PAGE_SIZE: u32 = 100;

/// The built-in chart, read and checked once.
pub fn builtin() -> Arc<Chart> {
    static BUILTIN: OnceLock<Arc<Chart>> = OnceLock::new();
    BUILTIN
        .get_or_init(|| {
            // The file is compiled in and held to every rule by the tests, so it cannot
            // be refused here.
            Arc::new(parse(BUILTIN_SOURCE).unwrap_or_else(|e| panic!("{BUILTIN_PATH}: {e}")))
        })
        .clone()
}

/// Reads and checks a chart file.
pub fn load(path: &Path) -> Result<Chart, Refused> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Refused(vec![Refusal::new(
            "format",
            format!("cannot read {}: {e}", path.display()),
        )])
    })?;
    parse(&text)
}

/// Parses and checks a chart's text.
pub fn parse(text: &str) -> Result<Chart, Refused> {
    let file: format::File = toml::from_str(text)
        .map_err(|e| Refused(vec![Refusal::new("format", e.to_string().trim_end())]))?;
    let mut chart = rules::check(file)?;
    chart.source = text.to_owned();
    chart.plans = plan::resolve(&chart);
    chart.pages = plan::resolve_pages(&chart);
    chart.live = plan::resolve_subscriptions(&chart);
    chart.forms = stored::Forms::of(&chart);
    let apart = rules::written_tables_apart(&chart);
    if !apart.is_empty() {
        return Err(Refused(apart));
    }
    Ok(chart)
}

/// Why a chart is refused: every broken rule, each naming where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub Vec<Refusal>);

impl Refused {
    /// What the refusals come under: `the chart breaks 2 rules:`.
    pub fn verdict(&self) -> String {
        let n = self.0.len();
        format!(
            "the chart breaks {n} rule{}:",
            if n == 1 { "" } else { "s" }
        )
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict())?;
        for r in &self.0 {
            write!(f, "\n  {r}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refused {}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: &'static str,
    pub entity: Option<String>,
    pub pattern: Option<u32>,
    pub message: String,
}

impl Refusal {
    fn new(rule: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            rule,
            entity: None,
            pattern: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = &self.entity {
            write!(f, "entity {e}: ")?;
        }
        if let Some(p) = self.pattern {
            write!(f, "pattern {p}: ")?;
        }
        write!(f, "{} [{}]", self.message, self.rule)
    }
}

/// A checked chart: every rule of [`RULES`] holds.
#[derive(Debug)]
pub struct Chart {
    /// Its text, as `itemgraph migrate` records it in the table.
    pub source: String,
    pub name: String,
    pub description: Option<String>,
    /// Its first table: the one the server keeps its own items in (the only one, in a
    /// chart of one table), `tables[0]`.
    pub table: Table,
    /// Every table, the first included (`[[tables]]`); each entity and index is in one
    /// ([`Entity::table`], [`Index::table`]).
    pub tables: Vec<Table>,
    pub indexes: IndexMap<String, Index>,
    pub tenant: Option<format::Tenant>,
    pub viewer: Option<format::Viewer>,
    pub enums: IndexMap<String, format::Enum>,
    /// The fields of each complex attribute's shape.
    pub shapes: IndexMap<String, IndexMap<String, Attribute>>,
    pub entities: IndexMap<String, Entity>,
    pub query: IndexMap<String, format::RootField>,
    pub patterns: IndexMap<u32, Pattern>,
    /// The mutations, by GraphQL field name (`docs/CHART.md`, "Writes").
    pub mutations: IndexMap<String, Mutation>,
    /// The subscriptions, by GraphQL field name.
    pub subscriptions: IndexMap<String, format::Subscription>,
    /// The sample items, as stored.
    pub samples: Vec<crate::store::Item>,
    /// Each mutation resolved ([`plan`]), by name: what `chart explain` prints and the
    /// write path sends.
    pub plans: IndexMap<String, plan::MutationPlan>,
    /// Each Query pattern resolved ([`plan::PagePlan`]), by number: what its pages send
    /// and `chart explain` prints.
    pub pages: IndexMap<u32, plan::PagePlan>,
    /// Each subscription resolved ([`plan::SubscriptionPlan`]), by GraphQL field name:
    /// the arguments its events are picked by.
    pub live: IndexMap<String, plan::SubscriptionPlan>,
    /// How its items are stored where not as it names them ([`stored`]); `None`: as named.
    pub forms: Option<stored::Forms>,
}

/// The stores of a chart's tables on one connection ([`Chart::stores`]): its first
/// table's, and its siblings'.
pub struct TableStores<'s> {
    first: &'s dyn crate::store::Store,
    others: Vec<std::sync::Arc<dyn crate::store::Store>>,
}

impl TableStores<'_> {
    /// The store of table `t` (its place in [`Chart::tables`]).
    pub fn get(&self, t: usize) -> &dyn crate::store::Store {
        match t {
            0 => self.first,
            _ => self.others[t - 1].as_ref(),
        }
    }

    /// Each table's store, with its place, the first first.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &dyn crate::store::Store)> {
        std::iter::once(self.first)
            .chain(self.others.iter().map(|s| s.as_ref()))
            .enumerate()
    }
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub partition_key: String,
    pub pk_type: crate::store::KeyType,
    /// `None`: a simple primary key; every entity's sort-key template is then empty.
    pub sort_key: Option<String>,
    pub sk_type: crate::store::KeyType,
    /// The attribute the server's code reads an item's entity from (`Type` where the table
    /// stores none: [`stored`] tells each item by its keys and names it here).
    pub type_attribute: String,
    /// Whether the items hold the type attribute (`type_attribute = false`: they do not).
    pub types_stored: bool,
    /// The attribute DynamoDB's Time to Live reads, where the chart has expiring entities.
    pub time_to_live: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Index {
    /// Its name in the chart: what entities, patterns and `explain` call it.
    pub name: String,
    /// Its name in its table, as every request and the table's description name it (the
    /// chart's name unless `stored =` says otherwise).
    pub stored: String,
    pub partition_key: String,
    pub pk_type: crate::store::KeyType,
    /// `None`: keyed by its partition key alone; its entities' sort-key templates are empty.
    pub sort_key: Option<String>,
    pub sk_type: crate::store::KeyType,
    pub projection: Projection,
    /// A local secondary index (the table's partition key, a sort key of its own).
    pub local: bool,
    /// The table it indexes: its place in [`Chart::tables`].
    pub table: usize,
    /// A multi-attribute key: its partition and sort attributes are attributes the
    /// entities in it store (each of its own type), not keys rendered from templates.
    pub multi: bool,
    /// A multi-attribute key's partition attributes after `partition_key`, in order.
    pub pk_more: Vec<(String, crate::store::KeyType)>,
    /// A multi-attribute key's sort attributes after `sort_key`, in order.
    pub sk_more: Vec<(String, crate::store::KeyType)>,
}

impl Table {
    /// Its key attributes' names: the partition key, and the sort key where it has one.
    pub fn key_names(&self) -> Vec<&str> {
        key_names(&self.partition_key, self.sort_key.as_deref())
    }

    /// A rendered primary key as the item's key attributes, each of its type (no sort key
    /// where the table has none).
    pub fn key_attributes(
        &self,
        pk: &str,
        sk: &str,
    ) -> Vec<(String, crate::store::AttributeValue)> {
        key_attributes(
            (&self.partition_key, self.pk_type),
            self.sort_key.as_deref().map(|n| (n, self.sk_type)),
            pk,
            sk,
        )
    }
}

impl Index {
    /// The index key of an item, if it carries the index's key attributes of their types
    /// (an index keyed by rendered templates; a multi-attribute key's values are the
    /// item's own: [`Entity::multi_key`]).
    pub fn key_of(&self, item: &crate::store::Item) -> Option<crate::store::IndexKey> {
        Some(crate::store::IndexKey::new(
            self.pk_type.text(item.get(&self.partition_key)?)?,
            match &self.sort_key {
                Some(sk) => self.sk_type.text(item.get(sk)?)?,
                None => "",
            },
        ))
    }

    /// Its key attributes' names: every partition attribute, then every sort attribute.
    pub fn key_names(&self) -> Vec<&str> {
        self.typed_keys().into_iter().map(|(n, _)| n).collect()
    }

    /// Its key attributes with their types: every partition attribute, then every sort
    /// attribute.
    pub fn typed_keys(&self) -> Vec<(&str, crate::store::KeyType)> {
        std::iter::once((self.partition_key.as_str(), self.pk_type))
            .chain(self.pk_more.iter().map(|(n, t)| (n.as_str(), *t)))
            .chain(self.sort_key.as_deref().map(|n| (n, self.sk_type)))
            .chain(self.sk_more.iter().map(|(n, t)| (n.as_str(), *t)))
            .collect()
    }

    /// The type of its key attribute at `at` (partition attributes first, then sort
    /// attributes), without listing them.
    pub fn key_type(&self, at: usize) -> Option<crate::store::KeyType> {
        std::iter::once(self.pk_type)
            .chain(self.pk_more.iter().map(|(_, t)| *t))
            .chain(self.sort_key.as_ref().map(|_| self.sk_type))
            .chain(self.sk_more.iter().map(|(_, t)| *t))
            .nth(at)
    }

    /// How many partition attributes its key has.
    pub fn partition_len(&self) -> usize {
        1 + self.pk_more.len()
    }

    /// Its sort attributes' names, in order.
    pub fn sort_names(&self) -> Vec<&str> {
        self.sort_key
            .as_deref()
            .into_iter()
            .chain(self.sk_more.iter().map(|(n, _)| n.as_str()))
            .collect()
    }

    /// A rendered index key as the item's key attributes, each of its type.
    pub fn key_attributes(
        &self,
        pk: &str,
        sk: &str,
    ) -> Vec<(String, crate::store::AttributeValue)> {
        key_attributes(
            (&self.partition_key, self.pk_type),
            self.sort_key.as_deref().map(|n| (n, self.sk_type)),
            pk,
            sk,
        )
    }
}

fn key_names<'a>(pk: &'a str, sk: Option<&'a str>) -> Vec<&'a str> {
    std::iter::once(pk).chain(sk).collect()
}

fn key_attributes(
    pk: (&str, crate::store::KeyType),
    sk: Option<(&str, crate::store::KeyType)>,
    pk_value: &str,
    sk_value: &str,
) -> Vec<(String, crate::store::AttributeValue)> {
    std::iter::once((pk.0.to_owned(), pk.1.value(pk_value)))
        .chain(sk.map(|(n, t)| (n.to_owned(), t.value(sk_value))))
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

/// A partition key and a sort key template.
#[derive(Debug, Clone)]
pub struct Keys {
    pub pk: Template,
    pub sk: Template,
}

impl Keys {
    /// The variables of both templates, in the order they spell them.
    pub fn var_names(&self) -> Vec<&str> {
        self.pk
            .vars()
            .chain(self.sk.vars())
            .map(|v| v.name.as_str())
            .collect()
    }
}

#[derive(Debug)]
pub struct Entity {
    pub name: String,
    /// What its items hold in the table's type attribute (its name, unless the chart says).
    pub type_value: String,
    pub description: Option<String>,
    /// The table its items are in: its place in [`Chart::tables`] (0, the first, in a
    /// chart of one table; the server's own items are always there).
    pub table: usize,
    pub key: Keys,
    pub indexes: IndexMap<String, Keys>,
    /// The multi-attribute indexes it is in, each with the attributes whose values are
    /// the index key, in the key's order (partition attributes, then sort attributes).
    pub multi: IndexMap<String, Vec<String>>,
    pub attributes: IndexMap<String, Attribute>,
    /// The attribute naming its tenant.
    pub tenant: Option<String>,
    /// How every read and write of it is held to the caller's tenant, resolved once when
    /// the chart is loaded (rule `tenant`).
    pub binding: Binding,
    /// A marker unique across tenants on purpose (`global = true`).
    pub global: bool,
    pub graphql: bool,
    pub node: bool,
    pub plain_id: Option<String>,
    /// Counter shards: the entity they hold shares of the counters of, and how many.
    pub shards_of: Option<(String, u32)>,
    pub references: IndexMap<String, format::Reference>,
    /// A link of two entities (many to many): its references to them, the one whose item
    /// collection holds it first, then the one an index inverts it for.
    pub link: Option<[String; 2]>,
    pub connections: IndexMap<String, format::Connection>,
    pub lists: IndexMap<String, format::List>,
    /// Item collections of several kinds, each one connection over the mix.
    pub collections: IndexMap<String, format::Connection>,
    /// What every write of the entity keeps: its version, unique attributes, counters on
    /// what it references, life cycle.
    pub writes: Invariants,
    /// One of the server's own items (migrations, leases), declared by no chart.
    pub system: bool,
}

impl Entity {
    /// Whether `key` fits its key templates (an item of it could be at `key`).
    pub fn fits(&self, key: &crate::store::PrimaryKey) -> bool {
        self.key.pk.read(&key.pk).is_some() && self.key.sk.read(&key.sk).is_some()
    }

    /// The references no count of it verifies: a create (and a change of one) checks that
    /// the item each names exists, one ConditionCheck each.
    pub fn checked_references(&self) -> impl Iterator<Item = (&String, &format::Reference)> {
        self.references
            .iter()
            .filter(|(r, _)| !self.writes.counts.iter().any(|c| c.reference == **r))
    }

    /// The items of it one Query reads beside a parent: each of its counter shards, or the
    /// one item.
    pub fn items_beside(&self) -> u32 {
        self.shards_of.as_ref().map_or(1, |(_, n)| *n)
    }

    /// The attribute it expires by (the table's time to live), where it declares it.
    pub fn expiry<'a>(&self, table: &'a Table) -> Option<&'a str> {
        table
            .time_to_live
            .as_deref()
            .filter(|a| self.attributes.contains_key(*a))
    }

    /// Whether `item` of it has expired at `now` (epoch seconds): its expiry has passed.
    /// DynamoDB deletes such an item within days; until then reads hide it.
    pub fn expired(&self, table: &Table, item: &crate::store::Item, now: i64) -> bool {
        // Most tables have no time to live: one test, before any lookup.
        table.time_to_live.is_some()
            && self.expiry(table).is_some_and(|a| match item.get(a) {
                Some(crate::store::AttributeValue::N(n)) => {
                    n.parse::<i64>().is_ok_and(|t| t <= now)
                }
                _ => false,
            })
    }

    /// Its keys in `index` (`None`: the base table).
    /// Its index key in a multi-attribute index, from its key values (`vars`, as a
    /// template renders them, so as the table stores them).
    pub fn multi_key(
        &self,
        index: &Index,
        vars: &std::collections::HashMap<String, template::Value>,
    ) -> Option<crate::store::IndexKey> {
        let attrs = self.multi.get(&index.name)?;
        let mut values = attrs
            .iter()
            .map(|a| {
                Some(match vars.get(a)? {
                    template::Value::Text(t) => t.clone(),
                    template::Value::Int(n) => n.to_string(),
                })
            })
            .collect::<Option<Vec<String>>>()?
            .into_iter();
        let mut take = |n: usize| values.by_ref().take(n).collect::<Vec<String>>();
        let partition = take(index.partition_len());
        let sort = take(index.sort_names().len());
        let mut p = partition.into_iter();
        let mut s = sort.into_iter();
        Some(crate::store::IndexKey {
            pk: p.next()?,
            pk_more: p.collect(),
            sk: s.next().unwrap_or_default(),
            sk_more: s.collect(),
        })
    }

    pub fn keys_in(&self, index: Option<&str>) -> Option<&Keys> {
        match index {
            None => Some(&self.key),
            Some(i) => self.indexes.get(i),
        }
    }
}

/// How the items of an entity are held to the caller's tenant: resolved once from the
/// chart (rule `tenant` refuses an entity that cannot be bound), and the one thing the
/// read and write paths ask of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Binding {
    /// The chart has no tenant, or the item is one of the server's own.
    #[default]
    Open,
    /// The tenant attribute (named) is part of the primary key: a key rendered with the
    /// caller's tenant names only the caller's items.
    Key(String),
    /// The key does not hold the tenant: every action on an item is conditioned on this
    /// attribute being the caller's tenant, and every item read is held to it.
    Condition(String),
    /// A marker unique across tenants on purpose (`global = true`): its key holds no
    /// tenant, and the item it names is held to the caller's tenant when read back.
    Global,
    /// It holds no tenant and is reached only as the child of a parent that does.
    Parent,
}

impl Binding {
    /// The attribute a condition on an action holds to the caller's tenant, where the key
    /// does not.
    pub fn condition(&self) -> Option<&str> {
        match self {
            Binding::Condition(a) => Some(a),
            _ => None,
        }
    }

    /// The attribute that names the tenant of an item that holds it (in its key, or held
    /// by a condition): what a Scan's filter compares with the caller's tenant.
    pub fn condition_or_key(&self) -> Option<&str> {
        match self {
            Binding::Condition(a) | Binding::Key(a) => Some(a),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Attribute {
    pub ty: Type,
    pub optional: bool,
    pub description: Option<String>,
    pub graphql: bool,
    /// A value the writes give, never the caller.
    pub auto: Option<Auto>,
    /// A constant every create writes, never the caller.
    pub on_create: Option<crate::store::AttributeValue>,
    /// A number every create computes, never the caller.
    pub computed: Option<Computed>,
    /// For a counter other entities keep: what a refused delete calls them.
    pub referrers: Option<String>,
    /// For an expiry: seconds after its create an item expires when the caller gives no
    /// time.
    pub lifetime: Option<i64>,
    /// The name the table stores it under, where not its own ([`stored`]).
    pub stored: Option<String>,
    /// It lives only in the primary key: parsed from it on read, never stored beside it.
    pub key_only: bool,
    /// A number stored as its decimal digits (S), where the table keeps it so.
    pub as_string: bool,
}

impl Attribute {
    /// `now` (RFC 3339) as this attribute stores a time: in its timestamp's form.
    pub fn time(&self, now: &str) -> crate::store::AttributeValue {
        match self.ty {
            Type::Timestamp(form) => form
                .store(now)
                .unwrap_or_else(|| crate::store::AttributeValue::S(now.to_owned())),
            _ => crate::store::AttributeValue::S(now.to_owned()),
        }
    }
}

/// A number a create computes from what else it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Computed {
    /// `a * b`: the product of two of the item's numbers.
    Product(String, String),
    /// `sum(list.attribute)`: the total of a number over the children written with it.
    Sum { list: String, attribute: String },
    /// `count(list)`: how many children are written with it.
    Count(String),
}

impl Computed {
    /// `a * b`, `sum(list.attribute)`, `count(list)`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Computed> {
        let s = s.trim();
        let name = |t: &str| {
            let t = t.trim();
            (!t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .then(|| t.to_owned())
        };
        if let Some((a, b)) = s.split_once('*') {
            return Some(Computed::Product(name(a)?, name(b)?));
        }
        if let Some(inner) = s.strip_prefix("sum(").and_then(|t| t.strip_suffix(')')) {
            let (list, attribute) = inner.split_once('.')?;
            return Some(Computed::Sum {
                list: name(list)?,
                attribute: name(attribute)?,
            });
        }
        let inner = s.strip_prefix("count(").and_then(|t| t.strip_suffix(')'))?;
        Some(Computed::Count(name(inner)?))
    }
}

/// A value the writes give an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auto {
    /// A new ULID when the item is created.
    Ulid,
    /// The time of the create.
    Created,
    /// The time of every write.
    Updated,
    /// A child's 1-based place in the list it is written with.
    Position,
}

/// What every write of an entity keeps.
#[derive(Debug, Clone, Default)]
pub struct Invariants {
    /// The optimistic version: 1 at create, bumped and compared by every change.
    pub version: Option<String>,
    /// Unique attributes, each with its marker entity.
    pub unique: IndexMap<String, String>,
    /// Counters kept on what the entity references.
    pub counts: Vec<Count>,
    pub lifecycle: Option<format::Lifecycle>,
}

/// The counters one reference of an entity keeps on the item it names.
#[derive(Debug, Clone)]
pub struct Count {
    pub reference: String,
    /// Counters every item keeps.
    pub counters: Vec<String>,
    /// Counters per value of an attribute: an item keeps the one its value names.
    pub by: Vec<format::CountedBy>,
}

impl Count {
    /// The counters `item` keeps through this reference.
    pub fn of_item(&self, item: &crate::store::Item) -> Vec<String> {
        let mut out = self.counters.clone();
        for b in &self.by {
            if let Some(crate::store::AttributeValue::S(v)) = item.get(&b.by) {
                out.extend(b.counters.get(v).cloned());
            }
        }
        out
    }

    /// Every counter it may keep.
    pub fn all(&self) -> Vec<String> {
        let mut out = self.counters.clone();
        for b in &self.by {
            out.extend(b.counters.values().cloned());
        }
        out
    }

    /// The attributes whose values choose a counter.
    pub fn by_attributes(&self) -> impl Iterator<Item = &str> {
        self.by.iter().map(|b| b.by.as_str())
    }
}

/// A mutation of the chart.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub name: String,
    pub entity: String,
    pub action: Action,
    pub pattern: u32,
    /// Names its item by global id (else by its key attributes).
    pub by_id: bool,
    /// Update: the attributes it may change.
    pub fields: Vec<String>,
    /// Update: those of `fields` its input requires.
    pub required: Vec<String>,
    /// Create: the client-token marker entity.
    pub token: Option<String>,
    pub role: Option<String>,
    /// What only the role may do, as a refusal says it (`remove users`).
    pub may: String,
    pub description: Option<String>,
    pub input_description: Option<String>,
    /// Payload fields' descriptions instead of the defaults.
    pub payload: IndexMap<String, String>,
    /// Create: lists written with the item (their children), with their input objects'
    /// descriptions.
    pub with: IndexMap<String, String>,
    /// Input fields first, in order, with their descriptions (`""`: none).
    pub input: IndexMap<String, String>,
    /// The one write request it makes.
    pub request: WriteRequest,
    /// A bulk delete: of every item a Query pattern finds.
    pub every: Option<Every>,
    /// A write of one entry of a map attribute (an update of the item).
    pub entry: Option<Entry>,
}

/// A write of one entry of a map attribute ([`Mutation::entry`]): one UpdateItem of its
/// path, `SET map.key = :value` or `REMOVE map.key`.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The map attribute.
    pub map: String,
    /// Whether it removes the entry (else puts it).
    pub remove: bool,
    /// The kind every entry key is; `None`: any one line of text.
    pub key_kind: Option<types::Kind>,
    /// The map's element type: what a put's `value` is.
    pub of: Type,
    /// The map's `max_items`: a put of a new key is conditioned on the map holding fewer.
    pub max_items: Option<usize>,
}

/// A bulk delete ([`Mutation::every`]): the Query pattern whose children it deletes, how
/// many at most in one call, and how.
#[derive(Debug, Clone, Default)]
pub struct Every {
    pub pattern: u32,
    pub max: u32,
    /// One TransactWriteItems (all or nothing) instead of BatchWriteItems of 25.
    pub atomic: bool,
    /// Its input: the pattern's key values, each with its type and whether it may be left
    /// out (an open end of a range, a level of a `begins_with`).
    pub inputs: Vec<(String, Type, bool)>,
    /// The input that names the tenant, which must be the caller's (`None`: the chart has
    /// no tenant, or the items are the server's own).
    pub tenant_input: Option<String>,
}

impl Every {
    /// The write requests one call sends at most (besides its Queries).
    pub fn writes(&self, action: Action) -> u32 {
        match (action, self.atomic) {
            (_, true) => 1,
            // TransactWriteItems of 100 updates at a time.
            (Action::Update, false) => self
                .max
                .div_ceil(crate::store::validate::MAX_TRANSACT_ACTIONS as u32),
            (_, false) => self
                .max
                .div_ceil(crate::store::validate::MAX_BATCH_WRITE_REQUESTS as u32),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Delete,
}

/// The write request of a mutation's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteRequest {
    PutItem,
    UpdateItem,
    DeleteItem,
    TransactWriteItems,
    BatchWriteItem,
}

impl WriteRequest {
    pub fn parse(s: &str) -> Option<WriteRequest> {
        Some(match s {
            "PutItem" => WriteRequest::PutItem,
            "UpdateItem" => WriteRequest::UpdateItem,
            "DeleteItem" => WriteRequest::DeleteItem,
            "TransactWriteItems" => WriteRequest::TransactWriteItems,
            "BatchWriteItem" => WriteRequest::BatchWriteItem,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            WriteRequest::PutItem => "PutItem",
            WriteRequest::UpdateItem => "UpdateItem",
            WriteRequest::DeleteItem => "DeleteItem",
            WriteRequest::TransactWriteItems => "TransactWriteItems",
            WriteRequest::BatchWriteItem => "BatchWriteItem",
        }
    }
}

#[derive(Debug)]
pub struct Pattern {
    pub number: u32,
    pub name: String,
    pub request: Request,
    pub field: String,
    /// The table it reads or writes: its place in [`Chart::tables`].
    pub table: usize,
}

impl Pattern {
    /// The entities it reads or writes.
    pub fn entities(&self) -> Vec<&str> {
        match &self.request {
            Request::GetItem { entity, .. } | Request::Write { entity, .. } => vec![entity],
            Request::Query {
                parent,
                beside,
                children,
                ..
            } => parent
                .iter()
                .chain(beside)
                .chain(std::iter::once(children))
                .map(String::as_str)
                .collect(),
            Request::Collection { parent, kinds, .. } => {
                parent.iter().chain(kinds).map(String::as_str).collect()
            }
            Request::Scan { children, .. } => vec![children],
            Request::BatchGetItem => Vec::new(),
        }
    }

    /// The index it reads, where it reads one.
    pub fn index(&self) -> Option<&str> {
        match &self.request {
            Request::Query { condition, .. } | Request::Collection { condition, .. } => {
                condition.index.as_deref()
            }
            Request::GetItem {
                with_shards: Some(c),
                ..
            } => c.index.as_deref(),
            Request::Scan { index, .. } => Some(index),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub enum Request {
    GetItem {
        entity: String,
        with_shards: Option<KeyCondition>,
    },
    Query {
        condition: KeyCondition,
        forward: bool,
        parent: Option<String>,
        beside: Vec<String>,
        children: String,
        /// What later pages query: `begins_with` of the children's sort-key prefix.
        children_prefix: Template,
        /// Whether the children are read by a BatchGetItem of the keys the Query finds
        /// (`then = "BatchGetItem"`): an index that does not project what they need.
        then_get: bool,
    },
    BatchGetItem,
    /// A Query of an item collection of several kinds (`kinds`): the parent, where it
    /// reads one, and a page of every kind, in sort order; a page of one kind queries its
    /// prefix (`prefixes`) alone.
    Collection {
        condition: KeyCondition,
        forward: bool,
        parent: Option<String>,
        kinds: Vec<String>,
        prefixes: IndexMap<String, Template>,
    },
    /// A Scan of a sparse index, page by page from the last-evaluated key: every item of
    /// `children` that carries the index's keys (no other entity does), held to the
    /// caller's tenant by a filter on the tenant attribute its binding names.
    Scan {
        index: String,
        children: String,
    },
    /// A mutation's write: the entity it writes.
    Write {
        request: WriteRequest,
        entity: String,
    },
}

/// A Query's key condition: the partition, and perhaps a condition on the sort key.
#[derive(Debug, Clone)]
pub struct KeyCondition {
    /// `None`: the base table.
    pub index: Option<String>,
    pub partition: Template,
    /// A multi-attribute key's further partition attributes' values, in order.
    pub partition_more: Vec<Template>,
    /// A multi-attribute key's sort attributes held equal, in order, before the one
    /// `sort` compares.
    pub sort_prefix: Vec<Template>,
    pub sort: Option<SortCondition>,
}

impl KeyCondition {
    /// On the table or an index keyed by one partition and one sort attribute.
    pub fn new(index: Option<String>, partition: Template, sort: Option<SortCondition>) -> Self {
        KeyCondition {
            index,
            partition,
            partition_more: Vec::new(),
            sort_prefix: Vec::new(),
            sort,
        }
    }

    /// Its templates: the partition's, then the sort condition's.
    pub fn templates(&self) -> Vec<&Template> {
        let mut out = vec![&self.partition];
        out.extend(&self.partition_more);
        out.extend(&self.sort_prefix);
        match &self.sort {
            None => {}
            Some(SortCondition::Between(a, b)) => out.extend([a, b]),
            Some(
                SortCondition::Eq(t)
                | SortCondition::Lt(t)
                | SortCondition::Le(t)
                | SortCondition::Gt(t)
                | SortCondition::Ge(t)
                | SortCondition::BeginsWith(t),
            ) => out.push(t),
        }
        out
    }
}

#[derive(Debug, Clone)]
pub enum SortCondition {
    Eq(Template),
    Lt(Template),
    Le(Template),
    Gt(Template),
    Ge(Template),
    Between(Template, Template),
    BeginsWith(Template),
}

/// The entity a list of `e` holds: the children its pattern reads.
pub fn list_child<'a>(
    entities: &'a IndexMap<String, Entity>,
    patterns: &IndexMap<u32, Pattern>,
    e: &Entity,
    list: &str,
) -> Option<&'a Entity> {
    let l = e.lists.get(list)?;
    match &patterns.get(&l.pattern)?.request {
        Request::Query { children, .. } => entities.get(children),
        _ => None,
    }
}

impl Chart {
    /// The primary key of an item of the table, if it carries both key attributes as
    /// strings.
    pub fn key_of(&self, item: &crate::store::Item) -> Option<crate::store::PrimaryKey> {
        self.key_in(self.table_of_item(item), item)
    }

    /// The primary key of an item of its table `t` (its place in [`Chart::tables`]).
    pub fn key_in(&self, t: usize, item: &crate::store::Item) -> Option<crate::store::PrimaryKey> {
        let t = &self.tables[t];
        Some(crate::store::PrimaryKey::new(
            t.pk_type.text(item.get(&t.partition_key)?)?,
            match &t.sort_key {
                Some(sk) => t.sk_type.text(item.get(sk)?)?,
                None => "",
            },
        ))
    }

    /// The table of an item in the chart's form: its entity's, by the type attribute (the
    /// first for an item of no entity, as the server's own are).
    pub fn table_of_item(&self, item: &crate::store::Item) -> usize {
        match item.get(&self.table.type_attribute) {
            Some(crate::store::AttributeValue::S(name)) => {
                self.entities.get(name).map_or(0, |e| e.table)
            }
            _ => 0,
        }
    }

    /// The table's schema as CreateTable is told of it and as both engines read items.
    pub fn table_schema(&self) -> crate::store::TableSchema {
        self.schema_of(0)
    }

    /// Its tables after the first, each name and schema: what the store opens beside the
    /// first ([`crate::store::open::open_tables`]).
    pub fn other_tables(&self) -> Vec<(String, crate::store::TableSchema)> {
        (1..self.tables.len())
            .map(|t| (self.tables[t].name.clone(), self.schema_of(t)))
            .collect()
    }

    /// The table `entity`'s items are in.
    pub fn table_of(&self, entity: &Entity) -> &Table {
        &self.tables[entity.table]
    }

    /// The name of its table `t` as a TransactWriteItems of several tables on `first`'s
    /// connection names it: the first's as its store was opened (whatever `--table` says),
    /// the others' as the chart names them (their siblings' names).
    pub fn table_name_on(&self, first: &dyn crate::store::Store, t: usize) -> String {
        match t {
            0 => first.table_name().to_owned(),
            _ => self.tables[t].name.clone(),
        }
    }

    /// The store of its table `t` (its place in [`Chart::tables`]), given the store of its
    /// first: that one, or its sibling of the table's name.
    pub fn store_of(
        &self,
        first: &std::sync::Arc<dyn crate::store::Store>,
        t: usize,
    ) -> crate::store::StoreResult<std::sync::Arc<dyn crate::store::Store>> {
        if t == 0 {
            return Ok(first.clone());
        }
        let name = &self.tables[t].name;
        first
            .sibling(name)
            .ok_or_else(|| crate::store::StoreError::not_on_connection(name))
    }

    /// Every one of its tables' stores, given the store of its first: that one and its
    /// siblings on the same connection, in the chart's order.
    pub fn stores<'s>(
        &self,
        first: &'s dyn crate::store::Store,
    ) -> crate::store::StoreResult<TableStores<'s>> {
        let others = self.tables[1..]
            .iter()
            .map(|t| {
                first
                    .sibling(&t.name)
                    .ok_or_else(|| crate::store::StoreError::not_on_connection(&t.name))
            })
            .collect::<crate::store::StoreResult<_>>()?;
        Ok(TableStores { first, others })
    }

    /// Whether it has several tables.
    pub fn several_tables(&self) -> bool {
        self.tables.len() > 1
    }

    /// The schema of its table `t` (its place in [`Chart::tables`]), with that table's
    /// indexes.
    pub fn schema_of(&self, t: usize) -> crate::store::TableSchema {
        let table = &self.tables[t];
        crate::store::TableSchema {
            pk: table.partition_key.clone(),
            pk_type: table.pk_type,
            sk: table.sort_key.clone(),
            sk_type: table.sk_type,
            indexes: self
                .indexes
                .values()
                .filter(|i| i.table == t)
                .map(|i| crate::store::IndexSchema {
                    name: i.stored.clone(),
                    pk: i.partition_key.clone(),
                    pk_type: i.pk_type,
                    sk: i.sort_key.clone(),
                    sk_type: i.sk_type,
                    pk_more: i.pk_more.clone(),
                    sk_more: i.sk_more.clone(),
                    local: i.local,
                    projection: match &i.projection {
                        Projection::All => crate::store::IndexProjection::All,
                        Projection::KeysOnly => crate::store::IndexProjection::KeysOnly,
                        Projection::Include(a) => crate::store::IndexProjection::Include(a.clone()),
                    },
                })
                .collect(),
            // As the items store it: under its stored name, where it has one.
            time_to_live: table.time_to_live.as_ref().map(|a| {
                self.entities
                    .values()
                    .filter(|e| e.table == t)
                    .find_map(|e| e.attributes.get(a)?.stored.clone())
                    .unwrap_or_else(|| a.clone())
            }),
        }
    }

    /// The type of a key condition's variable: the attribute it meets in an entity the
    /// condition reads.
    pub fn var_type(&self, cond: &KeyCondition, var: &str) -> Option<Type> {
        reach::var_type(cond, &self.entities, var)
    }

    /// The attribute of `e` a key condition's variable meets, where it meets one.
    pub fn var_attribute(&self, cond: &KeyCondition, e: &Entity, var: &str) -> Option<String> {
        reach::alignments(cond, e)
            .into_iter()
            .find_map(|(v, attr)| (v == var).then_some(attr))
    }

    /// The attribute naming an entity's tenant, where it has one.
    pub fn tenant_attribute(&self, e: &Entity) -> Option<String> {
        let t = self.tenant.as_ref()?;
        let attr = e.tenant.clone().unwrap_or_else(|| t.attribute.clone());
        e.attributes.contains_key(&attr).then_some(attr)
    }

    /// The entity holding counter shards of `e`, and how many each item of it has.
    pub fn shards_of(&self, e: &str) -> Option<(&Entity, u32)> {
        self.entities.values().find_map(|s| {
            s.shards_of
                .as_ref()
                .filter(|(of, _)| of == e)
                .map(|(_, n)| (s, *n))
        })
    }

    /// The entities the chart declares, without the server's own.
    pub fn declared(&self) -> impl Iterator<Item = &Entity> {
        self.entities.values().filter(|e| !e.system)
    }
}

/// The time expiries are compared with: epoch seconds now. An item whose expiry has passed
/// reads as gone, as it will be once DynamoDB deletes it (within days).
pub fn epoch_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// An entity's name as a sentence says it (`CounterShard`: `counter shard`).
pub fn words(entity: &str) -> String {
    let mut words = String::new();
    for (i, c) in entity.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            words.push(' ');
        }
        words.extend(c.to_lowercase());
    }
    words
}

/// An entity's name as a plural a sentence says (`User`: `users`, `Company`: `companies`,
/// `Address`: `addresses`, `OrderLine`: `order lines`).
pub fn plural(entity: &str) -> String {
    let mut words = words(entity);
    let consonant_y =
        words.ends_with('y') && !words[..words.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']);
    if consonant_y {
        words.pop();
        words + "ies"
    } else if words.ends_with(['s', 'x', 'z']) || words.ends_with("ch") || words.ends_with("sh") {
        words + "es"
    } else {
        words + "s"
    }
}

/// An entity's name with its indefinite article, as a sentence says it (`a ticket`, `an
/// order`, `an order line`, `a user`): `an` before a vowel sound. The `u` that sounds
/// `you` (`uni…`, and `us`, `ut`, `ur` before a vowel: user, utility), `eu` and `one` take
/// `a`.
pub fn one(entity: &str) -> String {
    let w = words(entity);
    let b = w.as_bytes();
    let vowel = |c: Option<&u8>| c.is_some_and(|c| b"aeiou".contains(c));
    let sounds_you =
        w.starts_with("uni") || (matches!(b, [b'u', b's' | b't' | b'r', ..]) && vowel(b.get(2)));
    let article = if w.starts_with(['a', 'e', 'i', 'o', 'u'])
        && !sounds_you
        && !w.starts_with("eu")
        && !w.starts_with("one")
    {
        "an"
    } else {
        "a"
    };
    format!("{article} {w}")
}
