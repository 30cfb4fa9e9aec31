//! The chart file as written: TOML read through serde, every table in the file's order.
//! Nothing here is checked beyond its shape; [`super::rules`] turns it into a
//! [`super::Chart`] or refuses it.

use indexmap::IndexMap;
use serde::Deserialize;

/// The only format this server reads.
pub const FORMAT: u32 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub format: u32,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// The table, for a chart of one.
    #[serde(default)]
    pub table: Option<Table>,
    /// The tables, for a chart of several (`[[tables]]`): the first is the chart's own
    /// (where the server keeps its items), each entity in the one it names.
    #[serde(default)]
    pub tables: Vec<Table>,
    #[serde(default)]
    pub indexes: IndexMap<String, Index>,
    pub tenant: Option<Tenant>,
    pub viewer: Option<Viewer>,
    #[serde(default)]
    pub kinds: IndexMap<String, Kind>,
    #[serde(default)]
    pub enums: IndexMap<String, Enum>,
    #[serde(default)]
    pub shapes: IndexMap<String, Shape>,
    pub entities: IndexMap<String, Entity>,
    #[serde(default)]
    pub query: IndexMap<String, RootField>,
    #[serde(default)]
    pub patterns: IndexMap<String, Pattern>,
    /// The mutations, by GraphQL field name.
    #[serde(default)]
    pub mutations: IndexMap<String, Mutation>,
    /// The subscriptions, by GraphQL field name: which entity's changes reach each.
    #[serde(default)]
    pub subscriptions: IndexMap<String, Subscription>,
    /// Sample items, by entity: what `serve --seed demo` loads into an empty table.
    #[serde(default)]
    pub samples: IndexMap<String, Vec<toml::Table>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub name: String,
    pub partition_key: KeyAttribute,
    /// None: a simple primary key, the partition key alone.
    #[serde(default)]
    pub sort_key: Option<KeyAttribute>,
    /// The attribute every item names its entity in (default `Type`), or `false`: the
    /// items hold none, and each is told by the shape of its keys.
    #[serde(default = "type_attribute")]
    pub type_attribute: TypeAttribute,
    /// The attribute DynamoDB's Time to Live reads (one per table): an item whose value of
    /// it, epoch seconds, has passed is expired, then deleted by the service. Entities that
    /// declare it (of type `expiry`) expire.
    #[serde(default)]
    pub time_to_live: Option<String>,
}

fn type_attribute() -> TypeAttribute {
    TypeAttribute::Named("Type".into())
}

/// `type_attribute`: a name, or `false` for none.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum TypeAttribute {
    Named(String),
    Stored(bool),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
    /// The table it indexes, in a chart of several (default: the first).
    #[serde(default)]
    pub table: Option<String>,
    pub partition_key: IndexKeyAttributes,
    /// None: keyed by its partition key alone.
    #[serde(default)]
    pub sort_key: Option<IndexKeyAttributes>,
    pub projection: Projection,
    /// A local secondary index: the table's partition key and a sort key of its own.
    #[serde(default)]
    pub local: bool,
    /// The name the table knows it by, where the chart names it otherwise (two tables
    /// each with a `GSI1`: `[indexes.OrdersGSI1] table = "orders", stored = "GSI1"`).
    #[serde(default)]
    pub stored: Option<String>,
}

/// A key attribute: its name (a string key), or its name and type (`{ name = "OrderId",
/// type = "N" }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum KeyAttribute {
    Named(String),
    Typed(TypedKey),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypedKey {
    pub name: String,
    /// `S` (a string) or `N` (a number).
    #[serde(rename = "type")]
    pub ty: String,
}

/// An index's partition or sort key: one key attribute, or a list of them (a
/// multi-attribute key: attributes the items store, each of its own type).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IndexKeyAttributes {
    // A list first: serde would take two strings for a `TypedKey`'s fields.
    Many(Vec<KeyAttribute>),
    One(KeyAttribute),
}

impl IndexKeyAttributes {
    /// Its attributes, in order.
    pub fn attributes(&self) -> &[KeyAttribute] {
        match self {
            IndexKeyAttributes::One(k) => std::slice::from_ref(k),
            IndexKeyAttributes::Many(k) => k,
        }
    }
}

impl KeyAttribute {
    pub fn name(&self) -> &str {
        match self {
            KeyAttribute::Named(n) => n,
            KeyAttribute::Typed(t) => &t.name,
        }
    }
}

/// `"ALL"`, `"KEYS_ONLY"`, or the list of attributes an INCLUDE projection carries.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Projection {
    Named(String),
    Include(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tenant {
    /// The entity that is the tenant (an organization).
    pub entity: String,
    /// The attribute every other entity names its tenant by.
    pub attribute: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Viewer {
    /// The entity the token's subject names within its tenant.
    pub entity: String,
    /// Its key attribute that holds the subject.
    pub subject: String,
}

/// An identifier kind of the chart's own: a regular expression every value must match
/// whole, besides the rules every key value meets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kind {
    pub pattern: String,
    pub max_length: usize,
    #[serde(default)]
    pub description: Option<String>,
    /// What a value must be, as a refusal says it ("currency must be {message}"; default:
    /// the kind's name and pattern, or what else it broke).
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Enum {
    #[serde(default)]
    pub description: Option<String>,
    pub values: Vec<String>,
}

/// The fields of a complex attribute (a map with known keys).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    #[serde(default)]
    pub description: Option<String>,
    pub attributes: IndexMap<String, Attribute>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entity {
    #[serde(default)]
    pub description: Option<String>,
    /// The table its items are in, in a chart of several (default: the first).
    #[serde(default)]
    pub table: Option<String>,
    /// The primary key's templates: `[PK, SK]`, or `[PK]` in a table with a simple key.
    pub key: Vec<String>,
    /// What its items hold in the table's type attribute (default: the entity's name),
    /// for a table whose items name their entity in words of their own (`customer`).
    #[serde(default)]
    pub type_value: Option<String>,
    /// The templates of each index the entity joins: `{ GSI1 = [PK, SK] }`, `[PK]` for an
    /// index keyed by its partition key alone.
    #[serde(default)]
    pub indexes: IndexMap<String, Vec<String>>,
    /// The attribute naming the tenant, where it is not the chart's `tenant.attribute`.
    #[serde(default)]
    pub tenant: Option<String>,
    /// A marker whose values are unique across every tenant on purpose: its key holds no
    /// tenant, so a value one tenant holds is refused to another (`chart check` warns that
    /// this tells one tenant of another's values).
    #[serde(default)]
    pub global: bool,
    /// Whether the entity is a GraphQL type (markers and shards are not).
    #[serde(default)]
    pub graphql: Option<bool>,
    /// Whether it is a `Node` (fetched back by global id); default: when it is a type.
    #[serde(default)]
    pub node: Option<bool>,
    /// A link of two entities, many to many: its two references, the side whose item
    /// collection holds it first, then the side an index inverts it for
    /// (`link = ["repository", "user"]`).
    #[serde(default)]
    pub link: Option<[String; 2]>,
    /// The attribute a root field's `id` argument also takes plainly (`ticketId`).
    #[serde(default)]
    pub plain_id: Option<String>,
    /// Counter shards: the entity whose counters these items hold a share of.
    #[serde(default)]
    pub shards_of: Option<String>,
    #[serde(default)]
    pub shards: Option<u32>,
    pub attributes: IndexMap<String, Attribute>,
    #[serde(default)]
    pub references: IndexMap<String, Reference>,
    #[serde(default)]
    pub connections: IndexMap<String, Connection>,
    #[serde(default)]
    pub lists: IndexMap<String, List>,
    /// Item collections of several kinds, each read as one connection over the mix (a
    /// Query pattern with `kinds`), a typed list of each kind on its pages.
    #[serde(default)]
    pub collections: IndexMap<String, Connection>,
    /// The attribute every change bumps and compares (`expectedVersion`): an optimistic
    /// version, 1 when created.
    #[serde(default)]
    pub version: Option<String>,
    /// Attributes unique within the scope their marker's key says, each with the marker
    /// entity written beside the item in the same transaction (`{ phone = "StorePhone" }`).
    #[serde(default)]
    pub unique: IndexMap<String, String>,
    /// Counters this entity's items keep on the items they reference, by reference
    /// (`{ chain = "storeCount" }`, or a list of counters): `ADD 1` when an item is
    /// created, `-1` when it is deleted, moved when the reference changes; in the same
    /// transaction as the item.
    #[serde(default)]
    pub counts: IndexMap<String, Counted>,
    /// The states an attribute may move between.
    #[serde(default)]
    pub lifecycle: Option<Lifecycle>,
}

/// The counters one reference keeps: one name, or several, each a name or one counter per
/// value of an attribute (`{ by = "status", counters = { OPEN = "openStoreCount" } }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Counted {
    One(String),
    Many(Vec<CountedPart>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CountedPart {
    Name(String),
    By(CountedBy),
}

/// One counter per value of an attribute: an item counts on the one its value names (none
/// for a value not listed), and a change of the value moves the count.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountedBy {
    pub by: String,
    pub counters: IndexMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lifecycle {
    /// An enum attribute.
    pub attribute: String,
    /// The state an item is created in.
    pub initial: String,
    /// From each state, the states it may move to; a state with none is final.
    pub transitions: IndexMap<String, Vec<String>>,
    /// Whether a change to the state an item is in already is taken, as no move (default);
    /// `false`: it is `INVALID_TRANSITION`, as a move no transition declares.
    #[serde(default = "yes")]
    pub stay: bool,
}

fn yes() -> bool {
    true
}

/// A subscription: the changes of one entity's items of one tenant, from the table's
/// change stream.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subscription {
    pub entity: String,
    /// Attributes a subscriber may narrow the events by: an event comes when the item
    /// had the value given before the change or has it after.
    #[serde(default)]
    pub filters: Vec<String>,
    /// Filters whose argument is named otherwise, or required: `username = { attribute =
    /// "requester", required = true }`; `attribute = "id"`: the item's global id or its
    /// plain id.
    #[serde(default)]
    pub arguments: IndexMap<String, Argument>,
    /// Event fields `previous{Attribute}`, each with its description: the attribute's
    /// value before an update that changed it (`previousStatus`).
    #[serde(default)]
    pub previous: IndexMap<String, String>,
    /// Whether its events carry `changed`, the attributes an update changed (default).
    #[serde(default = "yes")]
    pub changed: bool,
    #[serde(default)]
    pub description: Option<String>,
}

/// A subscription's filter under an argument name of its own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Argument {
    /// The attribute it filters by, or `id` (the global id, or the plain id).
    pub attribute: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub description: Option<String>,
}

/// A mutation: create, update or delete of one entity, served from the chart.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutation {
    pub entity: String,
    /// `create`, `update` or `delete`.
    pub action: String,
    /// The access pattern it is (a write request).
    pub pattern: u32,
    /// `"key"` (default): the entity's key attributes name the item; `"id"`: its global id.
    #[serde(default)]
    pub by: Option<String>,
    /// Update: the attributes it may change (default: every attribute outside the primary
    /// key that the writes do not keep themselves).
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// Update: the fields its input requires (each one of `fields`; default: none).
    #[serde(default)]
    pub required: Vec<String>,
    /// Create: the marker entity that makes a `clientToken` place one item whatever the
    /// retries.
    #[serde(default)]
    pub token: Option<String>,
    /// The role a caller needs (with auth on), e.g. `ADMIN`.
    #[serde(default)]
    pub role: Option<String>,
    /// What the refusal of another role says the role may do: "only an admin of the
    /// organization may {may}" (default: `add`, `change` or `remove`, and the entity's
    /// plural: `remove users`).
    #[serde(default)]
    pub may: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The input object's description.
    #[serde(default)]
    pub input_description: Option<String>,
    /// Payload fields' descriptions instead of the defaults (the item's: "The store as
    /// created."; `replayed`'s).
    #[serde(default)]
    pub payload: IndexMap<String, String>,
    /// Create: lists of the entity written with it, each with its input object's
    /// description (`lines = "One line of a new order."`): the children, in the order given.
    #[serde(default)]
    pub with: IndexMap<String, String>,
    /// Input fields, in this order before the rest, each with its description here
    /// instead of the attribute's (`""`: none).
    #[serde(default)]
    pub input: IndexMap<String, String>,
    /// A bulk delete: every item the Query pattern of this number finds (its children),
    /// the pattern's key values its input.
    #[serde(default)]
    pub every: Option<u32>,
    /// With `every`: the most items one call deletes (required); more are left for the
    /// next call, which `more` says.
    #[serde(default)]
    pub max: Option<u32>,
    /// `put-entry`, `remove-entry`: the map attribute one of whose entries it writes.
    #[serde(default)]
    pub map: Option<String>,
    /// `put-entry`, `remove-entry`: the kind every entry key is (`slug`; default: any one
    /// line of text).
    #[serde(default)]
    pub key_kind: Option<String>,
    /// With `every`: one TransactWriteItems, all or nothing, each delete conditioned on the
    /// item as found (at most 100 items); default: BatchWriteItem of 25 at a time.
    #[serde(default)]
    pub atomic: bool,
}

/// A constant value in a chart: a number, a string or a boolean.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Constant {
    Int(i64),
    Text(String),
    Bool(bool),
}

/// An attribute: a type name alone (`"slug"`, `"Plan"`, `"username?"` when optional), or
/// the whole declaration.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Attribute {
    Short(String),
    Full(Box<AttributeSpec>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttributeSpec {
    #[serde(rename = "type")]
    pub ty: String,
    /// For `list` and `map`: the type of each element.
    #[serde(default)]
    pub of: Option<String>,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub description: Option<String>,
    /// Whether it is a field of the GraphQL type (default true).
    #[serde(default)]
    pub graphql: Option<bool>,
    #[serde(default)]
    pub min: Option<i64>,
    #[serde(default)]
    pub max: Option<i64>,
    #[serde(default)]
    pub max_length: Option<usize>,
    /// For `list` and `map`: the most elements the item may hold.
    #[serde(default)]
    pub max_items: Option<usize>,
    /// For `string`: whether line breaks are refused (default: for strings of up to 200
    /// characters).
    #[serde(default)]
    pub one_line: Option<bool>,
    /// A value the writes give, never the caller: `ulid` (a new id at create), `created`
    /// (the time of the create), `updated` (the time of every write).
    #[serde(default)]
    pub auto: Option<String>,
    /// A constant every create writes, never the caller (the layout an item is in:
    /// `schemaVersion`).
    #[serde(default)]
    pub on_create: Option<Constant>,
    /// A number every create computes, never the caller: `a * b` (two numbers of the
    /// item), `sum(list.attribute)` or `count(list)` (over the children it writes with the
    /// item).
    #[serde(default)]
    pub computed: Option<String>,
    /// For an `expiry`: how long after its create an item expires when the caller gives no
    /// time (`30d`, `12h`, `15m`, `90s`).
    #[serde(default)]
    pub lifetime: Option<String>,
    /// For a counter other entities keep on this one: what its delete's refusal calls
    /// them while it is not 0 (`tickets`: "cannot delete: still referenced by tickets").
    #[serde(default)]
    pub referrers: Option<String>,
    /// The name the table stores it under, where that is not its name here (`Email`,
    /// `GSI1-PK`'s neighbours in a table the chart did not design).
    #[serde(default)]
    pub stored: Option<String>,
    /// Whether it lives only in the primary key (`c#{customerId}`): parsed from the key
    /// on read, rendered into it on write, never stored beside it.
    #[serde(default)]
    pub key_only: bool,
    /// For a `timestamp`: the form it is stored in (`seconds`, `millis`, `local-seconds`,
    /// `date`, `epoch-seconds`, `epoch-millis`; default: RFC 3339 as given).
    #[serde(default)]
    pub form: Option<String>,
    /// How a number is stored, where not as a number: `"string"` (its decimal digits, as
    /// tables written by other tools often hold prices).
    #[serde(default)]
    pub stored_as: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub entity: String,
    /// The referenced entity's key attributes, each from one of this entity's.
    pub key: IndexMap<String, String>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Connection {
    pub pattern: u32,
    /// What its cursors are signed for, with the partition it pages (default
    /// `Owner.field`): a cursor serves only its own connection.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Where `totalCount` comes from: a counter of the parent, or one per value of an
    /// argument (`{ status = { OPEN = "ticketCountOpen", … } }`).
    #[serde(default)]
    pub total: Option<Total>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Total {
    Counter(String),
    ByArgument(IndexMap<String, IndexMap<String, String>>),
}

/// A list of children read whole (bounded by the writes that make them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct List {
    pub pattern: u32,
    /// The most children it holds (the writes that make them allow no more): it is read
    /// whole, as one page of this size. Default: the largest page, 100.
    #[serde(default)]
    pub max: Option<u32>,
    /// The fewest children a create that writes them takes (default 0).
    #[serde(default)]
    pub min: Option<u32>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootField {
    pub entity: String,
    pub pattern: u32,
    /// `"key"` (default): the entity's key attributes as arguments; `"id"`: one `id`
    /// argument, a global id or the entity's plain id.
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    pub name: String,
    pub request: String,
    /// GetItem: the entity read by its key.
    #[serde(default)]
    pub entity: Option<String>,
    /// GetItem of an entity with counter shards: the Query that reads it with them.
    #[serde(default)]
    pub with_shards: Option<String>,
    /// Query: the key condition (`PK = CHAIN#{chain} AND SK >= CHAIN#{chain}`).
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub forward: Option<bool>,
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub beside: Vec<String>,
    #[serde(default)]
    pub children: Option<String>,
    /// Query: the several entities of an item collection it returns together (instead
    /// of `children`), each in its place in sort order.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Scan: the index it reads, a sparse one (only its `children` carry its keys).
    #[serde(default)]
    pub index: Option<String>,
    /// Query: `"BatchGetItem"` when the index holds less of the children than they need
    /// (KEYS_ONLY, INCLUDE): the items are then read by the keys the Query finds.
    #[serde(default)]
    pub then: Option<String>,
    /// The GraphQL field that uses it (`Organization.users`).
    pub field: String,
}
