//! Plain domain records, one per entity of the chart (the order client-token marker is
//! `collections::OrderToken`, beside the one write that uses it), and how each becomes a
//! table item.
//!
//! A record serializes to its plain attributes (camelCase) with `serde_dynamo`;
//! [`Record::to_item`] adds the `Type` attribute and the key attributes from [`crate::keys`].
//! Reading goes the other way and never looks at key attributes: they exist for indexing
//! only, and unknown attributes are ignored so that adding an attribute is never a breaking
//! change. No GraphQL or AWS types here.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use crate::clock::{now, now_ms, timestamp_from_ms, Timestamp};

use crate::keys::{
    Email, Id, ItemKeys, LineNo, OrderKey, OrderLineKey, OrgKey, Slug, TicketKey, UserEmailKey,
    UserKey, Username,
};
use crate::store::{AttributeValue, Item, PrimaryKey};

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

impl crate::keys::StatusName for TicketStatus {
    fn status_name(self) -> &'static str {
        self.as_str()
    }
}
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
    fn keys(&self) -> ItemKeys {
        ItemKeys::primary(OrgKey::new(&self.org).counter_shard(self.shard))
    }
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

/// A record stored as one item: its entity name and its keys.
pub trait Record: Serialize + DeserializeOwned {
    /// The `Type` attribute value.
    const TYPE: &'static str;

    /// Every key attribute of the item.
    fn keys(&self) -> ItemKeys;

    fn primary_key(&self) -> PrimaryKey {
        self.keys().primary
    }

    /// The item as stored: plain attributes, `Type`, key attributes.
    fn to_item(&self) -> Item {
        // Through `AttributeValue::M`, which holds the map itself: `serde_dynamo::to_item`
        // (and `from_item` below) builds the map once more to convert between its `Item`
        // and a `HashMap`.
        let mut item: Item = match serde_dynamo::to_attribute_value(self) {
            Ok(AttributeValue::M(item)) => item,
            _ => unreachable!("records are structs of strings and numbers"),
        };
        item.insert(TYPE.to_owned(), AttributeValue::S(Self::TYPE.to_owned()));
        self.keys().write_to(&mut item);
        item
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

/// The `Type` attribute of an item.
pub fn item_type(item: &Item) -> Result<&str, ModelError> {
    match item.get(TYPE) {
        Some(AttributeValue::S(t)) => Ok(t),
        _ => Err(ModelError::MissingType),
    }
}

impl Record for Organization {
    const TYPE: &'static str = "Organization";
    fn keys(&self) -> ItemKeys {
        OrgKey::new(&self.slug).item_keys()
    }
}

impl Record for User {
    const TYPE: &'static str = "User";
    fn keys(&self) -> ItemKeys {
        UserKey::new(&self.org, &self.username).item_keys()
    }
}

impl Record for UserEmail {
    const TYPE: &'static str = "UserEmail";
    fn keys(&self) -> ItemKeys {
        UserEmailKey::new(&self.org, &self.email).item_keys()
    }
}

impl Record for Ticket {
    const TYPE: &'static str = "Ticket";
    fn keys(&self) -> ItemKeys {
        TicketKey::new(self.ticket_id).item_keys(&self.org, &self.requester, self.status)
    }
}

impl Record for Order {
    const TYPE: &'static str = "Order";
    fn keys(&self) -> ItemKeys {
        OrderKey::new(&self.org, self.order_id).item_keys()
    }
}

impl Record for OrderLine {
    const TYPE: &'static str = "OrderLine";
    fn keys(&self) -> ItemKeys {
        OrderLineKey::new(self.order_id, self.line_no).item_keys()
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

    pub fn keys(&self) -> ItemKeys {
        for_each_entity!(self, r => r.keys())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{GSI1PK, GSI2PK, PK, SK};

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.into())
    }
    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.into())
    }

    fn org() -> Organization {
        Organization {
            slug: Slug::parse("acme").unwrap(),
            name: "Acme".into(),
            plan: Plan::Enterprise,
            created_at: timestamp_from_ms(0),
            user_count: 1,
            order_count: 2,
            ticket_count: 3,
            ticket_count_open: 1,
            ticket_count_pending: 1,
            ticket_count_solved: 1,
            ticket_count_closed: 0,
            schema_version: None,
        }
    }

    fn ticket() -> Ticket {
        Ticket {
            ticket_id: Id::from_parts(1_700_000_000_000, 42),
            org: Slug::parse("acme").unwrap(),
            title: "Anvil".into(),
            body: "It fell.".into(),
            status: TicketStatus::Pending,
            priority: TicketPriority::Urgent,
            requester: Username::parse("wile").unwrap(),
            assignee: None,
            created_at: timestamp_from_ms(1_700_000_000_000),
            updated_at: timestamp_from_ms(1_700_000_000_000),
            version: 1,
        }
    }

    #[test]
    fn timestamps_are_fixed_width_rfc3339() {
        assert_eq!(timestamp_from_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            timestamp_from_ms(1_704_067_200_123),
            "2024-01-01T00:00:00.123Z"
        );
        assert_eq!(now().len(), 24);
    }

    #[test]
    fn organization_item_has_camel_case_attributes_type_and_keys() {
        let item = org().to_item();
        assert_eq!(item[TYPE], s("Organization"));
        assert_eq!(item[PK], s("ORG#acme"));
        assert_eq!(item[SK], s("ORG#acme"));
        assert_eq!(item["plan"], s("ENTERPRISE"));
        assert_eq!(item["createdAt"], s("1970-01-01T00:00:00.000Z"));
        assert_eq!(item[Organization::USER_COUNT], n("1"));
        assert_eq!(item[Organization::ORDER_COUNT], n("2"));
        assert_eq!(item[Organization::TICKET_COUNT], n("3"));
        for status in TicketStatus::ALL {
            assert!(item.contains_key(Organization::status_counter(*status)));
        }
        assert_eq!(item.len(), 14);
    }

    #[test]
    fn records_round_trip_and_ignore_key_attributes() {
        let t = ticket();
        let item = t.to_item();
        assert_eq!(item[GSI2PK], s("ORG#acme#STATUS#PENDING"));
        assert_eq!(item[GSI1PK], s("ORG#acme#USER#wile"));
        assert_eq!(item[Ticket::VERSION], n("1"));
        assert!(!item.contains_key("assignee"), "None is omitted, not NULL");
        assert_eq!(Ticket::from_item(item.clone()).unwrap(), t);
        assert_eq!(Entity::from_item(item).unwrap(), Entity::Ticket(t));
    }

    #[test]
    fn unknown_attributes_are_ignored_and_missing_counters_are_zero() {
        let mut item = org().to_item();
        item.insert("somethingNew".into(), s("x"));
        item.remove(Organization::status_counter(TicketStatus::Solved));
        let o = Organization::from_item(item).unwrap();
        assert_eq!(o.ticket_count_solved, 0);
    }

    #[test]
    fn user_counters_are_stored_and_default_to_zero() {
        let user = User {
            org: Slug::parse("acme").unwrap(),
            username: Username::parse("wile").unwrap(),
            email: Email::parse("wile@acme.example").unwrap(),
            name: "Wile E. Coyote".into(),
            role: Role::Member,
            created_at: timestamp_from_ms(0),
            ticket_count: 3,
            assigned_ticket_count: 2,
            order_count: 1,
        };
        let mut item = user.to_item();
        assert_eq!(item[User::TICKET_COUNT], n("3"));
        assert_eq!(item[User::ASSIGNED_TICKET_COUNT], n("2"));
        assert_eq!(item[User::ORDER_COUNT], n("1"));
        // Users written before these counters existed read as zero.
        item.remove(User::ASSIGNED_TICKET_COUNT);
        item.remove(User::ORDER_COUNT);
        let read = User::from_item(item).unwrap();
        assert_eq!((read.assigned_ticket_count, read.order_count), (0, 0));
        assert_eq!(read.ticket_count, 3);
    }

    #[test]
    fn entity_dispatches_on_type() {
        let mut item = org().to_item();
        item.insert(TYPE.into(), s("Spaceship"));
        assert!(
            matches!(Entity::from_item(item.clone()), Err(ModelError::UnknownType(t)) if t == "Spaceship")
        );
        item.remove(TYPE);
        assert!(matches!(
            Entity::from_item(item),
            Err(ModelError::MissingType)
        ));
        assert!(matches!(
            User::from_item(org().to_item()),
            Err(ModelError::WrongType {
                expected: "User",
                ..
            })
        ));
    }

    #[test]
    fn a_forged_identifier_in_an_item_is_refused() {
        let mut item = ticket().to_item();
        item.insert("requester".into(), s("wile#x"));
        assert!(matches!(
            Ticket::from_item(item),
            Err(ModelError::Malformed { ty: "Ticket", .. })
        ));
    }

    #[test]
    fn enums_are_screaming_case() {
        assert_eq!(
            serde_json::to_string(&OrderStatus::Cancelled).unwrap(),
            "\"CANCELLED\""
        );
        assert_eq!("SOLVED".parse::<TicketStatus>(), Ok(TicketStatus::Solved));
        assert_eq!(Role::ALL, &[Role::Admin, Role::Member]);
        assert_eq!(Plan::Team.to_string(), "TEAM");
        assert_eq!(TicketPriority::ALL.len(), 4);
    }

    #[test]
    fn every_entity_round_trips() {
        let acme = Slug::parse("acme").unwrap();
        let wile = Username::parse("wile").unwrap();
        let email = Email::parse("wile@acme.example").unwrap();
        let oid = Id::from_parts(1, 2);
        let entities: Vec<Entity> = vec![
            org().into(),
            User {
                org: acme.clone(),
                username: wile.clone(),
                email: email.clone(),
                name: "Wile E. Coyote".into(),
                role: Role::Member,
                created_at: now(),
                ticket_count: 0,
                assigned_ticket_count: 2,
                order_count: 1,
            }
            .into(),
            UserEmail {
                email,
                org: acme.clone(),
                username: wile.clone(),
            }
            .into(),
            Ticket {
                assignee: Some(wile.clone()),
                ..ticket()
            }
            .into(),
            Order {
                order_id: oid,
                org: acme,
                buyer: wile,
                status: OrderStatus::Paid,
                placed_at: now(),
                currency: "USD".into(),
                total_cents: 1999,
                line_count: 1,
                version: 1,
            }
            .into(),
            OrderLine {
                order_id: oid,
                line_no: LineNo::new(1).unwrap(),
                sku: "ANVIL".into(),
                description: "Anvil".into(),
                quantity: 1,
                unit_price_cents: 1999,
                amount_cents: 1999,
            }
            .into(),
        ];
        for e in entities {
            let item = e.to_item();
            assert_eq!(item[TYPE], s(e.type_name()));
            assert_eq!(
                crate::keys::table_schema().key_of(&item),
                Some(e.primary_key())
            );
            assert_eq!(Entity::from_item(item).unwrap(), e);
        }
    }
}
