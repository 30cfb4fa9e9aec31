//! The built-in design's records as its tests and the benchmark write and read them:
//! one plain struct per entity of `charts/itemgraph.toml`, serialized to its attributes
//! (camelCase) with `serde_dynamo`, its keys and type attribute rendered by the chart
//! (`itemgraph::chart::samples::set_keys`), as any writer of a charted table renders them.
//! Reading never looks at key attributes, and unknown attributes are ignored.
#![allow(dead_code)]

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[allow(unused_imports)]
pub use itemgraph::clock::{now, now_ms, timestamp_from_ms, Timestamp};

use itemgraph::chart::kinds::{Email, Id, LineNo, Slug, Username};
use itemgraph::store::{AttributeValue, Item, PageKey, PrimaryKey};

/// The attribute every item carries, naming its entity.
pub const TYPE: &str = "Type";

/// An item that is not a well-formed record. The table holds something this code did not
/// write: clients see `INTERNAL`, the detail goes to the log.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("item has no string `{TYPE}` attribute")]
    MissingType,
    #[error("unknown item type {0:?}")]
    UnknownType(String),
    #[error("expected a {expected} item, found {found:?}")]
    WrongType {
        expected: &'static str,
        found: String,
    },
    #[error("malformed {ty} item: {source}")]
    Malformed {
        ty: &'static str,
        #[source]
        source: serde_dynamo::Error,
    },
}

/// A counter as stored: any integer, read within `0..=u32::MAX`. Writers never take a
/// counter below 0 (each decrement is conditioned on a positive count), but a table
/// repaired by hand, or written by another tool, may hold anything; the entity stays
/// readable, and `itemgraph check` reports the count that disagrees with the items.
fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = i64::deserialize(d)?;
    Ok(n.clamp(0, i64::from(u32::MAX)) as u32)
}

/// A fieldless enum stored as its SCREAMING_CASE name.
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!("unknown {} {s:?}", stringify!($name))),
                }
            }
        }
    };
}

string_enum!(
    /// The organization's subscription.
    Plan { Free = "FREE", Team = "TEAM", Enterprise = "ENTERPRISE" }
);
string_enum!(
    /// What a user may do in their organization.
    Role { Admin = "ADMIN", Member = "MEMBER" }
);
string_enum!(
    /// Where a ticket is in its life; each status is a GSI2 queue.
    TicketStatus { Open = "OPEN", Pending = "PENDING", Solved = "SOLVED", Closed = "CLOSED" }
);
string_enum!(
    /// How urgent a ticket is.
    TicketPriority { Low = "LOW", Normal = "NORMAL", High = "HIGH", Urgent = "URGENT" }
);

string_enum!(
    /// Where an order is in fulfilment.
    OrderStatus {
        Placed = "PLACED",
        Paid = "PAID",
        Shipped = "SHIPPED",
        Delivered = "DELIVERED",
        Cancelled = "CANCELLED",
    }
);

/// An organization. The counters are kept in the same transaction as the child write, so
/// every connection's `totalCount`, per-status ticket queues included, costs no request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub slug: Slug,
    pub name: String,
    pub plan: Plan,
    pub created_at: Timestamp,
    #[serde(default, deserialize_with = "count")]
    pub user_count: u32,
    #[serde(default, deserialize_with = "count")]
    pub order_count: u32,
    #[serde(default, deserialize_with = "count")]
    pub ticket_count: u32,
    #[serde(default, deserialize_with = "count")]
    pub ticket_count_open: u32,
    #[serde(default, deserialize_with = "count")]
    pub ticket_count_pending: u32,
    #[serde(default, deserialize_with = "count")]
    pub ticket_count_solved: u32,
    #[serde(default, deserialize_with = "count")]
    pub ticket_count_closed: u32,
    /// The layout this organization's counters are kept in: absent (1) on the organization
    /// item alone, [`Organization::SHARDED`] when its counter shards exist too (written
    /// at creation, or by the `counter-shards` migration). Readers accept both: an
    /// organization's count is its own counter plus its shards' ([`CounterShard`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
}

impl Organization {
    /// The schema version of an organization whose counters are sharded.
    pub const SHARDED: u32 = 3;
    /// The attribute naming an item's schema version.
    pub const SCHEMA_VERSION: &'static str = "schemaVersion";

    /// A new organization: no users, orders or tickets yet, so every counter at 0.
    pub fn new(slug: Slug, name: String, plan: Plan, created_at: Timestamp) -> Organization {
        Organization {
            slug,
            name,
            plan,
            created_at,
            user_count: 0,
            order_count: 0,
            ticket_count: 0,
            ticket_count_open: 0,
            ticket_count_pending: 0,
            ticket_count_solved: 0,
            ticket_count_closed: 0,
            schema_version: Some(Organization::SHARDED),
        }
    }

    /// Every counter attribute an organization and its shards hold.
    pub const COUNTERS: [&'static str; 7] = [
        Organization::USER_COUNT,
        Organization::ORDER_COUNT,
        Organization::TICKET_COUNT,
        "ticketCountOpen",
        "ticketCountPending",
        "ticketCountSolved",
        "ticketCountClosed",
    ];

    /// Counter attribute names, for `ADD` in the writers that keep them.
    pub const USER_COUNT: &'static str = "userCount";
    pub const ORDER_COUNT: &'static str = "orderCount";
    pub const TICKET_COUNT: &'static str = "ticketCount";

    /// The counter attribute of one ticket status.
    pub fn status_counter(status: TicketStatus) -> &'static str {
        match status {
            TicketStatus::Open => "ticketCountOpen",
            TicketStatus::Pending => "ticketCountPending",
            TicketStatus::Solved => "ticketCountSolved",
            TicketStatus::Closed => "ticketCountClosed",
        }
    }

    /// How many of the organization's tickets are in `status`.
    pub fn ticket_count_in(&self, status: TicketStatus) -> u32 {
        match status {
            TicketStatus::Open => self.ticket_count_open,
            TicketStatus::Pending => self.ticket_count_pending,
            TicketStatus::Solved => self.ticket_count_solved,
            TicketStatus::Closed => self.ticket_count_closed,
        }
    }

    /// Mutable access to one status counter (used when building data sets).
    pub fn ticket_count_in_mut(&mut self, status: TicketStatus) -> &mut u32 {
        match status {
            TicketStatus::Open => &mut self.ticket_count_open,
            TicketStatus::Pending => &mut self.ticket_count_pending,
            TicketStatus::Solved => &mut self.ticket_count_solved,
            TicketStatus::Closed => &mut self.ticket_count_closed,
        }
    }
}

/// One of an organization's counter shards (`docs/DATA_MODEL.md`, "Counters"): it holds
/// the same counter attributes as the organization, each a part of the count. A write
/// `ADD`s to one shard, so no item takes every write of a busy organization; a read sums
/// the organization's own counters and every shard's. A shard's part may be negative (a
/// decrement lands on another shard than the increment it undoes); only the sum is a count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterShard {
    pub org: Slug,
    pub shard: u32,
    #[serde(default)]
    pub user_count: i64,
    #[serde(default)]
    pub order_count: i64,
    #[serde(default)]
    pub ticket_count: i64,
    #[serde(default)]
    pub ticket_count_open: i64,
    #[serde(default)]
    pub ticket_count_pending: i64,
    #[serde(default)]
    pub ticket_count_solved: i64,
    #[serde(default)]
    pub ticket_count_closed: i64,
}

impl CounterShard {
    /// A shard counting nothing yet.
    pub fn empty(org: Slug, shard: u32) -> Self {
        CounterShard {
            org,
            shard,
            user_count: 0,
            order_count: 0,
            ticket_count: 0,
            ticket_count_open: 0,
            ticket_count_pending: 0,
            ticket_count_solved: 0,
            ticket_count_closed: 0,
        }
    }
}

impl Record for CounterShard {
    const TYPE: &'static str = "CounterShard";
}

/// A member of one organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub org: Slug,
    pub username: Username,
    pub email: Email,
    pub name: String,
    pub role: Role,
    pub created_at: Timestamp,
    /// Tickets this user requested.
    #[serde(default, deserialize_with = "count")]
    pub ticket_count: u32,
    /// Tickets assigned to this user.
    #[serde(default, deserialize_with = "count")]
    pub assigned_ticket_count: u32,
    /// Orders this user placed as buyer.
    #[serde(default, deserialize_with = "count")]
    pub order_count: u32,
}

impl User {
    /// Counter attribute names, for `ADD` in the writers that keep them. A user is
    /// referenced by a ticket as requester or assignee and by an order as buyer: while any
    /// of these is non-zero the user cannot be deleted.
    pub const TICKET_COUNT: &'static str = "ticketCount";
    pub const ASSIGNED_TICKET_COUNT: &'static str = "assignedTicketCount";
    pub const ORDER_COUNT: &'static str = "orderCount";
}

/// The marker that makes an email address unique across the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserEmail {
    pub email: Email,
    pub org: Slug,
    pub username: Username,
}

/// A support ticket raised by a user of an organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub ticket_id: Id,
    pub org: Slug,
    pub title: String,
    pub body: String,
    pub status: TicketStatus,
    pub priority: TicketPriority,
    pub requester: Username,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<Username>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Bumped by every change; writers condition on it (optimistic concurrency).
    pub version: u32,
}

impl Ticket {
    pub const VERSION: &'static str = "version";
}

/// An order placed by a user for their organization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub order_id: Id,
    pub org: Slug,
    pub buyer: Username,
    pub status: OrderStatus,
    pub placed_at: Timestamp,
    /// ISO 4217 code.
    pub currency: String,
    /// Sum of the lines' `amountCents`.
    pub total_cents: i64,
    pub line_count: u32,
    pub version: u32,
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderLine {
    pub order_id: Id,
    pub line_no: LineNo,
    pub sku: String,
    pub description: String,
    pub quantity: u32,
    pub unit_price_cents: i64,
    /// `quantity × unitPriceCents`.
    pub amount_cents: i64,
}

/// A record stored as one item of the built-in chart's entity [`Record::TYPE`].
pub trait Record: Serialize + DeserializeOwned {
    /// The entity's name, its items' `Type`.
    const TYPE: &'static str;

    /// The item as stored: plain attributes, `Type`, and the keys the chart's templates
    /// render from them.
    fn to_item(&self) -> Item {
        // Through `AttributeValue::M`, which holds the map itself.
        let mut item: Item = match serde_dynamo::to_attribute_value(self) {
            Ok(AttributeValue::M(item)) => item,
            _ => unreachable!("records are structs of strings and numbers"),
        };
        render_keys(Self::TYPE, &mut item);
        item
    }

    /// The primary key the chart renders for the record.
    fn primary_key(&self) -> PrimaryKey {
        key_of(&self.to_item())
    }

    /// Where a page that ends at this record resumes, on the table or on `index`.
    fn page_key(&self, index: Option<&str>) -> PageKey {
        page_key(&self.to_item(), index)
    }

    /// The record an item holds; fails when the item is of another type or malformed.
    fn from_item(item: Item) -> Result<Self, ModelError> {
        let found = item_type(&item)?;
        if found != Self::TYPE {
            return Err(ModelError::WrongType {
                expected: Self::TYPE,
                found: found.to_owned(),
            });
        }
        serde_dynamo::from_attribute_value(AttributeValue::M(item)).map_err(|source| {
            ModelError::Malformed {
                ty: Self::TYPE,
                source,
            }
        })
    }
}

/// Gives `item`, an item of the built-in chart's `entity`, its type attribute and the
/// keys the chart renders from its values.
pub fn render_keys(entity: &str, item: &mut Item) {
    let chart = itemgraph::chart::builtin();
    let e = &chart.entities[entity];
    let vars: HashMap<_, _> = itemgraph::chart::samples::key_values(e, item);
    itemgraph::chart::samples::set_keys(&chart.table, &chart.indexes, e, item, &vars)
        .unwrap_or_else(|why| panic!("a {entity} renders its keys: {why}"));
}

/// The primary key the chart gives the item of `entity` whose key attributes are
/// `values` (identifiers and enum values, as stored).
pub fn key(entity: &str, values: &[(&str, &str)]) -> PrimaryKey {
    let mut item: Item = values
        .iter()
        .map(|(a, v)| ((*a).to_owned(), AttributeValue::S((*v).to_owned())))
        .collect();
    render_keys(entity, &mut item);
    key_of(&item)
}

/// The primary key an item is stored under.
pub fn key_of(item: &Item) -> PrimaryKey {
    itemgraph::chart::builtin()
        .table_schema()
        .key_of(item)
        .expect("an item of the built-in chart has its keys")
}

/// Where a page ending at `item` resumes, on the table or on `index` (none when the
/// item is not in it).
pub fn page_key(item: &Item, index: Option<&str>) -> PageKey {
    let chart = itemgraph::chart::builtin();
    let index = index.and_then(|name| chart.indexes[name].key_of(item));
    PageKey {
        table: key_of(item),
        index,
    }
}

/// What a node id of the built-in chart's API names: an entity and the key values its
/// id is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobalId {
    Organization(Slug),
    User(Slug, Username),
    Ticket(Id),
    Order(Slug, Id),
}

impl GlobalId {
    /// The id as the API gives it: `Entity:key:values`, base64url.
    pub fn encode(&self) -> String {
        use base64::Engine as _;
        let raw = match self {
            GlobalId::Organization(o) => format!("Organization:{o}"),
            GlobalId::User(o, u) => format!("User:{o}:{u}"),
            GlobalId::Ticket(t) => format!("Ticket:{t}"),
            GlobalId::Order(o, id) => format!("Order:{o}:{id}"),
        };
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }

    /// Whether `id` is base64url of `Entity:values` for one of the chart's node entities.
    pub fn is_one(id: &str) -> bool {
        use base64::Engine as _;
        let Some(text) = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(id)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            return false;
        };
        let parts: Vec<&str> = text.split(':').collect();
        matches!(
            parts.as_slice(),
            ["Organization", _] | ["User", _, _] | ["Ticket", _] | ["Order", _, _]
        )
    }
}

/// The `Type` attribute of an item.
pub fn item_type(item: &Item) -> Result<&str, ModelError> {
    match item.get(TYPE) {
        Some(AttributeValue::S(t)) => Ok(t),
        _ => Err(ModelError::MissingType),
    }
}

impl Record for Organization {
    const TYPE: &'static str = "Organization";
}

impl Record for User {
    const TYPE: &'static str = "User";
}

impl Record for UserEmail {
    const TYPE: &'static str = "UserEmail";
}

impl Record for Ticket {
    const TYPE: &'static str = "Ticket";
}

impl Record for Order {
    const TYPE: &'static str = "Order";
}

impl Record for OrderLine {
    const TYPE: &'static str = "OrderLine";
}

/// A set of the design's records (a data set's, the demo data's).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Records {
    pub organizations: Vec<Organization>,
    pub users: Vec<User>,
    pub emails: Vec<UserEmail>,
    pub tickets: Vec<Ticket>,
    pub orders: Vec<Order>,
    pub lines: Vec<OrderLine>,
}

impl Records {
    /// Every record as an item, parents first: the organizations, the counter shards
    /// `shards` gives each, then users, email markers, tickets, orders and their lines.
    pub fn items_with(&self, shards: impl Fn(&Organization) -> Vec<Item>) -> Vec<Item> {
        let mut items = Vec::new();
        items.extend(self.organizations.iter().map(Record::to_item));
        items.extend(self.organizations.iter().flat_map(shards));
        items.extend(self.users.iter().map(Record::to_item));
        items.extend(self.emails.iter().map(Record::to_item));
        items.extend(self.tickets.iter().map(Record::to_item));
        items.extend(self.orders.iter().map(Record::to_item));
        items.extend(self.lines.iter().map(Record::to_item));
        items
    }
}

/// Any record, as read by a batch of keys of mixed types (`node`, `nodes`, references).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entity {
    Organization(Organization),
    User(User),
    UserEmail(UserEmail),
    Ticket(Ticket),
    Order(Order),
    OrderLine(OrderLine),
}

macro_rules! for_each_entity {
    ($self:expr, $r:ident => $body:expr) => {
        match $self {
            Entity::Organization($r) => $body,
            Entity::User($r) => $body,
            Entity::UserEmail($r) => $body,
            Entity::Ticket($r) => $body,
            Entity::Order($r) => $body,
            Entity::OrderLine($r) => $body,
        }
    };
}

impl Entity {
    /// Decodes an item by its `Type` attribute.
    pub fn from_item(item: Item) -> Result<Entity, ModelError> {
        let ty = item_type(&item)?.to_owned();
        Ok(match ty.as_str() {
            Organization::TYPE => Entity::Organization(Record::from_item(item)?),
            User::TYPE => Entity::User(Record::from_item(item)?),
            UserEmail::TYPE => Entity::UserEmail(Record::from_item(item)?),
            Ticket::TYPE => Entity::Ticket(Record::from_item(item)?),
            Order::TYPE => Entity::Order(Record::from_item(item)?),
            OrderLine::TYPE => Entity::OrderLine(Record::from_item(item)?),
            _ => return Err(ModelError::UnknownType(ty)),
        })
    }

    pub fn to_item(&self) -> Item {
        for_each_entity!(self, r => r.to_item())
    }

    pub fn primary_key(&self) -> PrimaryKey {
        for_each_entity!(self, r => r.primary_key())
    }

    /// The `Type` attribute value.
    pub fn type_name(&self) -> &'static str {
        match self {
            Entity::Organization(_) => Organization::TYPE,
            Entity::User(_) => User::TYPE,
            Entity::UserEmail(_) => UserEmail::TYPE,
            Entity::Ticket(_) => Ticket::TYPE,
            Entity::Order(_) => Order::TYPE,
            Entity::OrderLine(_) => OrderLine::TYPE,
        }
    }
}

macro_rules! entity_from {
    ($($t:ident),+) => {$(
        impl From<$t> for Entity {
            fn from(r: $t) -> Entity {
                Entity::$t(r)
            }
        }
    )+};
}
entity_from!(Organization, User, UserEmail, Ticket, Order, OrderLine);
