//! The entity chart of `docs/DATA_MODEL.md` in code: the only place that spells `ORG#`,
//! `USER#`, `#ORDER#`, `TICKET#`, `EMAIL#`, `LINE#`, `STATUS#`, `ORDERTOKEN#`, `#COUNT#`,
//! `MIGRATION#`, `SEGMENT#`, `LEASE#`.
//!
//! Two halves:
//!
//! - **Identifiers** ([`crate::chart::kinds`]: [`Slug`], [`Username`], [`Email`], [`Id`], [`LineNo`],
//!   [`ClientToken`]): validated newtypes that cannot forge a key.
//! - **Key builders** (this file) (`OrgKey`, `UserKey`, `UserEmailKey`, `TicketKey`, `OrderKey`,
//!   `OrderLineKey`, `OrderTokenKey`): one per entity, giving its [`PrimaryKey`], its
//!   index keys ([`ItemKeys`]), and the partition and sort values that the access patterns
//!   query on.
//!
//! Sort keys compare as UTF-8 bytes, and `#` < `L` < `O` < `T` < `U`. That one fact
//! places every parent inside its children's item collection:
//!
//! - partition `ORG#<org>`: orders (`#ORDER#…`), then the organization (`ORG#<org>`),
//!   then its counter shards (`ORG#<org>#COUNT#nn`), then users (`USER#…`);
//! - GSI1 partition `ORG#<org>#USER#<u>`: the user's tickets (`TICKET#…`), then the user;
//! - GSI1 partition `ORDER#<id>`: the order (`#ORDER#<id>`), then its lines (`LINE#nnn`);
//! - GSI2 partition `ORG#<org>#STATUS#<status>`: one status queue of tickets.
//!
//! Uniqueness and idempotency markers (`EMAIL#<org>#<email>`, `ORDERTOKEN#<org>#<token>`) each
//! live in a partition of their own, outside every item collection, so they never sort
//! between a parent and its children. So does `itemgraph migrate`'s record of each
//! migration (`MIGRATION#<nnn>`), which no access pattern reads.

use crate::store::{AttributeValue, IndexKey, IndexSchema, Item, PageKey, PrimaryKey, TableSchema};

pub use crate::chart::kinds::{
    validate_client_token, validate_email, validate_id, validate_line_no, validate_slug,
    validate_tenant, validate_username, ClientToken, Email, Id, KeyError, LineNo, Slug, Tenant,
    Username, MAX_CLIENT_TOKEN_LEN, MAX_EMAIL_LEN, MAX_LINE_NO, MAX_NAME_LEN, MAX_TENANT_LEN,
};

/// Partition key attribute of the base table.
pub const PK: &str = "PK";
/// Sort key attribute of the base table.
pub const SK: &str = "SK";
/// One partition per user (the user and the tickets they requested) and per order (the
/// order and its lines); sparse: organizations and markers carry no GSI1 keys.
pub const GSI1: &str = "GSI1";
pub const GSI1PK: &str = "GSI1PK";
pub const GSI1SK: &str = "GSI1SK";
/// Per-organization ticket queues by status (sparse: tickets only).
pub const GSI2: &str = "GSI2";
pub const GSI2PK: &str = "GSI2PK";
pub const GSI2SK: &str = "GSI2SK";

/// The table's key attributes and indexes, as CreateTable is told of them and as both
/// engines read items: built from the names above, which are the built-in chart's
/// (`charts/itemgraph.toml`; `chart::tests` holds the two equal). The server opens its
/// store with its chart's (`config::StoreArgs::open`).
pub fn table_schema() -> TableSchema {
    let index = |name: &str, pk: &str, sk: &str| IndexSchema {
        name: name.into(),
        pk: pk.into(),
        sk: sk.into(),
    };
    TableSchema {
        pk: PK.into(),
        sk: SK.into(),
        indexes: vec![index(GSI1, GSI1PK, GSI1SK), index(GSI2, GSI2PK, GSI2SK)],
        time_to_live: None,
    }
}

const ORG: &str = "ORG#";
const USER: &str = "USER#";
const EMAIL: &str = "EMAIL#";
const TICKET: &str = "TICKET#";
const ORDER: &str = "ORDER#";
const ORDER_SK: &str = "#ORDER#";
const LINE: &str = "LINE#";
const STATUS: &str = "#STATUS#";
const ORDER_TOKEN: &str = "ORDERTOKEN#";
/// Between an organization's own sort key and its shard number: `ORG#<org>#COUNT#07`.
const COUNT: &str = "#COUNT#";

/// How many counter shards an organization's counters are spread over (see
/// `docs/DATA_MODEL.md`, "Counters"): a write bumps one, a read sums them all.
pub const COUNTER_SHARDS: u32 = 32;

/// A ticket status as the chart spells it in a status queue's key. The model's
/// `TicketStatus` implements it, so the chart names statuses without importing the model.
pub trait StatusName: Copy {
    /// The stored name (`OPEN`, `PENDING` …).
    fn status_name(self) -> &'static str;
}

/// indexes it appears in (both indexes are sparse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemKeys {
    pub primary: PrimaryKey,
    pub gsi1: Option<IndexKey>,
    pub gsi2: Option<IndexKey>,
}

impl ItemKeys {
    pub fn primary(primary: PrimaryKey) -> Self {
        ItemKeys {
            primary,
            gsi1: None,
            gsi2: None,
        }
    }

    /// Writes the key attributes into an item, replacing any of the same name.
    pub fn write_to(&self, item: &mut Item) {
        let mut put = |name: &str, value: &str| {
            item.insert(name.to_owned(), AttributeValue::S(value.to_owned()));
        };
        put(PK, &self.primary.pk);
        put(SK, &self.primary.sk);
        if let Some(k) = &self.gsi1 {
            put(GSI1PK, &k.pk);
            put(GSI1SK, &k.sk);
        }
        if let Some(k) = &self.gsi2 {
            put(GSI2PK, &k.pk);
            put(GSI2SK, &k.sk);
        }
    }

    /// Where a page that ended on this item resumes, for a query on `index`
    /// (`None`: the base table).
    pub fn page_key(&self, index: Option<&str>) -> PageKey {
        let index = match index {
            None => None,
            Some(GSI1) => self.gsi1.clone(),
            Some(GSI2) => self.gsi2.clone(),
            Some(_) => None,
        };
        PageKey {
            table: self.primary.clone(),
            index,
        }
    }
}

/// Whether a name is one of the key attributes above (never parsed back into fields).
pub fn is_key_attribute(name: &str) -> bool {
    matches!(name, PK | SK | GSI1PK | GSI1SK | GSI2PK | GSI2SK)
}

/// An organization: `ORG#<org>` / `ORG#<org>`, the parent of its orders and users.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrgKey {
    org: Slug,
}

impl OrgKey {
    pub fn new(org: &Slug) -> Self {
        OrgKey { org: org.clone() }
    }
    /// The organization's partition: it, its orders and its users.
    pub fn partition(&self) -> String {
        format!("{ORG}{}", self.org)
    }
    /// The organization item's own sort key, which is also the boundary of its partition:
    /// orders sort below it, users above it.
    pub fn boundary(&self) -> String {
        self.partition()
    }
    pub fn primary_key(&self) -> PrimaryKey {
        PrimaryKey::new(self.partition(), self.boundary())
    }
    pub fn item_keys(&self) -> ItemKeys {
        ItemKeys::primary(self.primary_key())
    }
    /// One of the organization's counter shards: `ORG#<org>` / `ORG#<org>#COUNT#<nn>`
    /// (`nn` two digits, `00` to `31`). Above the organization's own sort key and below
    /// every user (`O` < `U`), above every order: a first page of users (forward from the
    /// organization) or of orders (backward from [`OrgKey::counters_top`]) reads the
    /// organization, its shards and the page in one Query.
    pub fn counter_shard(&self, shard: u32) -> PrimaryKey {
        PrimaryKey::new(
            self.partition(),
            format!("{}{COUNT}{shard:02}", self.boundary()),
        )
    }
    /// A sort key above every counter shard and below every user: the upper bound of the
    /// reads that bring the organization with its counters.
    pub fn counters_top(&self) -> String {
        format!("{}{COUNT}~", self.boundary())
    }
    /// Sort-key prefix of the organization's counter shards.
    pub fn counters_prefix(&self) -> String {
        format!("{}{COUNT}", self.boundary())
    }
    /// Sort-key prefix of the users in this partition.
    pub fn users_prefix(&self) -> &'static str {
        USER
    }
    /// Sort-key prefix of the orders in this partition.
    pub fn orders_prefix(&self) -> &'static str {
        ORDER_SK
    }
    /// GSI2 partition: this organization's tickets in one status.
    pub fn status_queue(&self, status: impl StatusName) -> String {
        format!("{ORG}{}{STATUS}{}", self.org, status.status_name())
    }
}

/// A user: `ORG#<org>` / `USER#<username>`, and the head of their own GSI1 partition
/// `ORG#<org>#USER#<username>` (sort `USER#<username>`), where their tickets sort first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserKey {
    org: Slug,
    username: Username,
}

impl UserKey {
    pub fn new(org: &Slug, username: &Username) -> Self {
        UserKey {
            org: org.clone(),
            username: username.clone(),
        }
    }
    fn sort(&self) -> String {
        format!("{USER}{}", self.username)
    }
    pub fn primary_key(&self) -> PrimaryKey {
        PrimaryKey::new(OrgKey::new(&self.org).partition(), self.sort())
    }
    /// GSI1 partition: the user, after their requested tickets.
    pub fn tickets_partition(&self) -> String {
        format!("{ORG}{}#{USER}{}", self.org, self.username)
    }
    /// The user item's GSI1 sort key: above every ticket of the partition.
    pub fn tickets_boundary(&self) -> String {
        self.sort()
    }
    /// GSI1 sort-key prefix of the user's tickets.
    pub fn tickets_prefix(&self) -> &'static str {
        TICKET
    }
    pub fn item_keys(&self) -> ItemKeys {
        ItemKeys {
            primary: self.primary_key(),
            gsi1: Some(IndexKey {
                pk: self.tickets_partition(),
                sk: self.tickets_boundary(),
            }),
            gsi2: None,
        }
    }
}

/// The uniqueness marker of an email address within one organization:
/// `EMAIL#<org>#<email>` / `EMAIL#<org>#<email>`. The organization is part of the key, so
/// an address is unique per organization (as usernames are) and no answer about it
/// depends on another organization's users.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserEmailKey {
    org: Slug,
    email: Email,
}

impl UserEmailKey {
    pub fn new(org: &Slug, email: &Email) -> Self {
        UserEmailKey {
            org: org.clone(),
            email: email.clone(),
        }
    }
    pub fn primary_key(&self) -> PrimaryKey {
        let k = format!("{EMAIL}{}#{}", self.org, self.email);
        PrimaryKey::new(k.clone(), k)
    }
    pub fn item_keys(&self) -> ItemKeys {
        ItemKeys::primary(self.primary_key())
    }
}

/// A ticket: `TICKET#<id>` / `TICKET#<id>`, in its requester's GSI1 partition and in its
/// organization's GSI2 status queue, both sorted by id (creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TicketKey {
    ticket_id: Id,
}

impl TicketKey {
    pub fn new(ticket_id: Id) -> Self {
        TicketKey { ticket_id }
    }
    /// `TICKET#<id>`: the ticket's sort value everywhere it appears.
    pub fn sort(&self) -> String {
        format!("{TICKET}{}", self.ticket_id)
    }
    pub fn primary_key(&self) -> PrimaryKey {
        PrimaryKey::new(self.sort(), self.sort())
    }
    /// Sort-key prefix of tickets in a GSI2 status queue.
    pub fn prefix() -> &'static str {
        TICKET
    }
    /// The keys of a ticket item: they move when the status changes.
    pub fn item_keys(&self, org: &Slug, requester: &Username, status: impl StatusName) -> ItemKeys {
        ItemKeys {
            primary: self.primary_key(),
            gsi1: Some(IndexKey {
                pk: UserKey::new(org, requester).tickets_partition(),
                sk: self.sort(),
            }),
            gsi2: Some(IndexKey {
                pk: OrgKey::new(org).status_queue(status),
                sk: self.sort(),
            }),
        }
    }
}

/// An order: `ORG#<org>` / `#ORDER#<id>` (below the organization item), and the head of its
/// GSI1 partition `ORDER#<id>` (sort `#ORDER#<id>`), above which its lines sort.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderKey {
    org: Slug,
    order_id: Id,
}

impl OrderKey {
    pub fn new(org: &Slug, order_id: Id) -> Self {
        OrderKey {
            org: org.clone(),
            order_id,
        }
    }
    fn sort(&self) -> String {
        Self::lines_boundary_of(self.order_id)
    }
    pub fn primary_key(&self) -> PrimaryKey {
        PrimaryKey::new(OrgKey::new(&self.org).partition(), self.sort())
    }
    /// GSI1 partition: the order, then its lines.
    pub fn lines_partition(&self) -> String {
        lines_partition(self.order_id)
    }
    /// GSI1 partition of an order known by id alone.
    pub fn lines_partition_of(order_id: Id) -> String {
        lines_partition(order_id)
    }
    /// The order item's GSI1 sort key: below every line.
    pub fn lines_boundary(&self) -> String {
        self.sort()
    }
    /// The order item's GSI1 sort key, for an order known by id alone.
    pub fn lines_boundary_of(order_id: Id) -> String {
        format!("{ORDER_SK}{order_id}")
    }
    /// GSI1 sort-key prefix of the order's lines.
    pub fn lines_prefix() -> &'static str {
        LINE
    }
    pub fn item_keys(&self) -> ItemKeys {
        ItemKeys {
            primary: self.primary_key(),
            gsi1: Some(IndexKey {
                pk: self.lines_partition(),
                sk: self.lines_boundary(),
            }),
            gsi2: None,
        }
    }
}

fn lines_partition(order_id: Id) -> String {
    format!("{ORDER}{order_id}")
}

/// The idempotency marker of one client token of an order placement:
/// `ORDERTOKEN#<org>#<token>` for both PK and SK. It has a partition of its own: inside
/// `ORG#<org>` a `#TOKEN#…` sort key would fall between the orders and the organization
/// item and break the query that reads the organization with its newest orders.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderTokenKey {
    org: Slug,
    token: ClientToken,
}

impl OrderTokenKey {
    pub fn new(org: &Slug, token: &ClientToken) -> Self {
        OrderTokenKey {
            org: org.clone(),
            token: token.clone(),
        }
    }
    pub fn primary_key(&self) -> PrimaryKey {
        let k = format!("{ORDER_TOKEN}{}#{}", self.org, self.token);
        PrimaryKey::new(k.clone(), k)
    }
    pub fn item_keys(&self) -> ItemKeys {
        ItemKeys::primary(self.primary_key())
    }
}

/// An order line: `ORDER#<id>#LINE#<nnn>` for both PK and SK, and `LINE#<nnn>` in its
/// order's GSI1 partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrderLineKey {
    order_id: Id,
    line_no: LineNo,
}

impl OrderLineKey {
    pub fn new(order_id: Id, line_no: LineNo) -> Self {
        OrderLineKey { order_id, line_no }
    }
    pub fn primary_key(&self) -> PrimaryKey {
        let k = format!("{}#{LINE}{}", lines_partition(self.order_id), self.line_no);
        PrimaryKey::new(k.clone(), k)
    }
    pub fn item_keys(&self) -> ItemKeys {
        ItemKeys {
            primary: self.primary_key(),
            gsi1: Some(IndexKey {
                pk: lines_partition(self.order_id),
                sk: format!("{LINE}{}", self.line_no),
            }),
            gsi2: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TicketStatus;

    const T1: &str = "01HQ3Z8N6W6D2Q5V0G8K9JXJ4M";
    const T2: &str = "01HQ3Z8N6W6D2Q5V0G8K9JXJ4N";

    fn slug(s: &str) -> Slug {
        Slug::parse(s).unwrap()
    }
    fn user(s: &str) -> Username {
        Username::parse(s).unwrap()
    }
    fn id(s: &str) -> Id {
        Id::parse(s).unwrap()
    }
    fn pk(pk: &str, sk: &str) -> PrimaryKey {
        PrimaryKey::new(pk, sk)
    }
    fn ik(pk: &str, sk: &str) -> Option<IndexKey> {
        Some(IndexKey {
            pk: pk.into(),
            sk: sk.into(),
        })
    }

    /// The table as DynamoDB is told of it: these exact names are what a deployed table
    /// has, so changing one is a migration, not a refactor.
    #[test]
    fn the_table_schema_spells_the_deployed_names() {
        let s = table_schema();
        assert_eq!((s.pk.as_str(), s.sk.as_str()), ("PK", "SK"));
        let indexes: Vec<(&str, &str, &str)> = s
            .indexes
            .iter()
            .map(|i| (i.name.as_str(), i.pk.as_str(), i.sk.as_str()))
            .collect();
        assert_eq!(
            indexes,
            [("GSI1", "GSI1PK", "GSI1SK"), ("GSI2", "GSI2PK", "GSI2SK")]
        );
        for name in ["PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"] {
            assert!(is_key_attribute(name) && s.is_key_attribute(name), "{name}");
        }
    }

    #[test]
    fn organization_keys() {
        let k = OrgKey::new(&slug("acme"));
        assert_eq!(k.item_keys(), ItemKeys::primary(pk("ORG#acme", "ORG#acme")));
        assert_eq!(k.partition(), "ORG#acme");
        assert_eq!(k.boundary(), "ORG#acme");
        assert_eq!(k.users_prefix(), "USER#");
        assert_eq!(k.orders_prefix(), "#ORDER#");
        assert_eq!(
            k.status_queue(TicketStatus::Pending),
            "ORG#acme#STATUS#PENDING"
        );
    }

    #[test]
    fn user_keys() {
        let k = UserKey::new(&slug("acme"), &user("wile"));
        assert_eq!(
            k.item_keys(),
            ItemKeys {
                primary: pk("ORG#acme", "USER#wile"),
                gsi1: ik("ORG#acme#USER#wile", "USER#wile"),
                gsi2: None,
            }
        );
        assert_eq!(k.tickets_partition(), "ORG#acme#USER#wile");
        assert_eq!(k.tickets_prefix(), "TICKET#");
    }

    #[test]
    fn user_email_keys() {
        let acme = Slug::parse("acme").unwrap();
        let k = UserEmailKey::new(&acme, &Email::parse("Wile@Acme.Example").unwrap());
        assert_eq!(
            k.item_keys(),
            ItemKeys::primary(pk(
                "EMAIL#acme#wile@acme.example",
                "EMAIL#acme#wile@acme.example"
            ))
        );
    }

    #[test]
    fn ticket_keys() {
        let k = TicketKey::new(id(T1));
        assert_eq!(
            k.item_keys(&slug("acme"), &user("wile"), TicketStatus::Open),
            ItemKeys {
                primary: pk(&format!("TICKET#{T1}"), &format!("TICKET#{T1}")),
                gsi1: ik("ORG#acme#USER#wile", &format!("TICKET#{T1}")),
                gsi2: ik("ORG#acme#STATUS#OPEN", &format!("TICKET#{T1}")),
            }
        );
    }

    #[test]
    fn order_keys() {
        let k = OrderKey::new(&slug("acme"), id(T1));
        assert_eq!(
            k.item_keys(),
            ItemKeys {
                primary: pk("ORG#acme", &format!("#ORDER#{T1}")),
                gsi1: ik(&format!("ORDER#{T1}"), &format!("#ORDER#{T1}")),
                gsi2: None,
            }
        );
        assert_eq!(OrderKey::lines_prefix(), "LINE#");
        assert_eq!(OrderKey::lines_partition_of(id(T1)), k.lines_partition());
    }

    #[test]
    fn order_token_keys() {
        let token = ClientToken::parse("retry-1_A").unwrap();
        let k = OrderTokenKey::new(&slug("acme"), &token);
        assert_eq!(
            k.item_keys(),
            ItemKeys::primary(pk("ORDERTOKEN#acme#retry-1_A", "ORDERTOKEN#acme#retry-1_A"))
        );
        assert!(ClientToken::parse(&"t".repeat(64)).is_ok());
        for bad in ["", "a#b", "a b", "é", "a.b", "a\n"] {
            assert!(ClientToken::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            ClientToken::parse(&"t".repeat(65)),
            Err(KeyError::TooLong {
                field: "clientToken",
                max: 64
            })
        );
        // Its own partition, outside the organization's: nothing sorts into `ORG#acme`.
        assert!(!k.primary_key().pk.starts_with("ORG#"));
    }

    #[test]
    fn order_line_keys_are_zero_padded() {
        let k = OrderLineKey::new(id(T1), LineNo::new(7).unwrap());
        let base = format!("ORDER#{T1}#LINE#007");
        assert_eq!(
            k.item_keys(),
            ItemKeys {
                primary: pk(&base, &base),
                gsi1: ik(&format!("ORDER#{T1}"), "LINE#007"),
                gsi2: None,
            }
        );
        let last = OrderLineKey::new(id(T1), LineNo::new(999).unwrap()).item_keys();
        assert_eq!(last.gsi1.unwrap().sk, "LINE#999");
    }

    #[test]
    fn key_attributes_are_written_into_items() {
        let mut item = Item::new();
        let keys = TicketKey::new(id(T1)).item_keys(&slug("a"), &user("b"), TicketStatus::Open);
        keys.write_to(&mut item);
        assert_eq!(item.len(), 6);
        assert!(item.keys().all(|k| is_key_attribute(k)));
        assert_eq!(item[GSI2PK], AttributeValue::S("ORG#a#STATUS#OPEN".into()));
        // A record's own cursor, for each place it is listed.
        assert_eq!(keys.page_key(None).index, None);
        assert_eq!(keys.page_key(Some(GSI1)).index, keys.gsi1);
        assert_eq!(keys.page_key(Some(GSI2)).index, keys.gsi2);
        assert_eq!(keys.page_key(Some(GSI2)).table, keys.primary);
    }

    /// The org partition reads: orders, then the organization, then users.
    #[test]
    fn org_partition_sorts_orders_then_org_then_users() {
        let org = slug("acme");
        let order = OrderKey::new(&org, id("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")).primary_key();
        let this = OrgKey::new(&org).primary_key();
        let first_user = UserKey::new(&org, &user("0")).primary_key();
        let mut sks = [first_user.sk.clone(), this.sk.clone(), order.sk.clone()];
        sks.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(sks, [order.sk, this.sk, first_user.sk]);
        // The boundary splits them for the two queries of the design.
        let boundary = OrgKey::new(&org).boundary();
        assert!(sks[0].as_bytes() < boundary.as_bytes());
        assert!(sks[2].as_bytes() > boundary.as_bytes());
        // Even an org whose slug sorts high cannot pass its own users.
        let z = slug("zzzz");
        assert!(OrgKey::new(&z).boundary() < UserKey::new(&z, &user("0")).primary_key().sk);
    }

    /// The counter shards sit between the organization and its first user, so both
    /// first-page queries (forward from the organization, backward from the shards' top)
    /// read the organization and every shard before any child.
    #[test]
    fn counter_shards_sit_between_the_organization_and_its_users() {
        for org in [slug("acme"), slug("zzzz"), slug("0"), slug(&"z".repeat(40))] {
            let k = OrgKey::new(&org);
            let first = k.counter_shard(0);
            let last = k.counter_shard(COUNTER_SHARDS - 1);
            assert_eq!(first.pk, k.partition());
            let user_sk = UserKey::new(&org, &user("0")).primary_key().sk;
            let newest_order = OrderKey::new(&org, id("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"))
                .primary_key()
                .sk;
            let b = |s: &str| s.as_bytes().to_vec();
            assert!(b(&newest_order) < b(&k.boundary()));
            assert!(b(&k.boundary()) < b(&first.sk));
            assert!(b(&first.sk) < b(&last.sk));
            assert!(b(&last.sk) < b(&k.counters_top()));
            assert!(b(&k.counters_top()) < b(&user_sk));
            assert!(first.sk.starts_with(&k.counters_prefix()));
        }
        let k = OrgKey::new(&slug("acme"));
        assert_eq!(k.counter_shard(7), pk("ORG#acme", "ORG#acme#COUNT#07"));
        assert_eq!(k.counter_shard(31).sk, "ORG#acme#COUNT#31");
        assert_eq!(k.counters_top(), "ORG#acme#COUNT#~");
    }

    /// GSI1 user partition: tickets sort below the user; GSI1 order partition: the order
    /// sorts below its lines.
    #[test]
    fn gsi1_partitions_sort_children_around_their_parent() {
        let (org, u) = (slug("acme"), user("0"));
        let user_sk = UserKey::new(&org, &u).item_keys().gsi1.unwrap().sk;
        let newest = TicketKey::new(id("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"))
            .item_keys(&org, &u, TicketStatus::Open)
            .gsi1
            .unwrap()
            .sk;
        assert!(newest.as_bytes() < user_sk.as_bytes());

        let order = OrderKey::new(&org, id("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"));
        let head = order.item_keys().gsi1.unwrap();
        let line = OrderLineKey::new(id("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"), LineNo::new(1).unwrap())
            .item_keys()
            .gsi1
            .unwrap();
        assert_eq!(head.pk, line.pk);
        assert!(head.sk.as_bytes() < line.sk.as_bytes());
    }

    #[test]
    fn separator_bytes_order_as_the_design_says() {
        let mut prefixes = [USER, TICKET, ORG, LINE, ORDER_SK];
        prefixes.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(prefixes, [ORDER_SK, LINE, ORG, TICKET, USER]);
        // Zero padding keeps line numbers in numeric order.
        let sk = |n| LineNo::new(n).unwrap().to_string();
        assert!(sk(2) < sk(10) && sk(10) < sk(100));
    }

    #[test]
    fn ids_sort_in_creation_order() {
        assert!(id(T1) < id(T2));
        let a = Id::from_parts(1_000, u128::MAX);
        let b = Id::from_parts(1_001, 0);
        assert!(a.to_string() < b.to_string());
        assert_eq!(b.timestamp_ms(), 1_001);
    }

    #[test]
    fn slugs_and_usernames() {
        assert!(Slug::parse("acme").is_ok());
        assert!(Slug::parse("0-a-9").is_ok());
        assert!(Username::parse(&"a".repeat(40)).is_ok());
        assert_eq!(
            Username::parse(&"a".repeat(41)),
            Err(KeyError::TooLong {
                field: "username",
                max: 40
            })
        );
        assert_eq!(Slug::parse(""), Err(KeyError::Empty { field: "org" }));
        for bad in ["-acme", "Acme", "ac me", "acmé", "a_b", "a.b"] {
            assert!(
                matches!(
                    Slug::parse(bad),
                    Err(KeyError::Malformed { field: "org", .. })
                ),
                "{bad}"
            );
        }
    }

    /// A value that could forge another key is refused, naming the field.
    #[test]
    fn forging_values_are_rejected() {
        let forged = ["acme#USER#root", "acme\u{0}", "a\nb", "#ORDER#x", "a\u{7f}"];
        for bad in forged {
            assert_eq!(
                validate_slug("requester", bad),
                Err(KeyError::ForbiddenCharacter { field: "requester" }),
                "{bad:?}"
            );
            assert_eq!(
                validate_email("email", &format!("x{bad}@y")),
                Err(KeyError::ForbiddenCharacter { field: "email" })
            );
        }
        assert_eq!(
            validate_id("ticketId", "01HQ3Z8N6W6D2Q5V0G8K9JX#4M"),
            Err(KeyError::ForbiddenCharacter { field: "ticketId" })
        );
        assert_eq!(
            KeyError::ForbiddenCharacter { field: "org" }.to_string(),
            "org must not contain `#` or control characters"
        );
    }

    #[test]
    fn emails_are_lowercased_and_checked() {
        assert_eq!(Email::parse("Bob@Example.COM").unwrap(), "bob@example.com");
        for bad in ["bob", "@x", "x@", "a@b@c", "a b@c", "a@b\t"] {
            assert!(Email::parse(bad).is_err(), "{bad:?}");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(matches!(Email::parse(&long), Err(KeyError::TooLong { .. })));
    }

    /// One address has one key: an accent composed or combining, in either case, is one
    /// address, and what validation returns validates to itself.
    #[test]
    fn emails_are_one_unicode_form() {
        let composed = Email::parse("ren\u{e9}@example.com").unwrap();
        assert_eq!(Email::parse("rene\u{301}@example.com").unwrap(), composed);
        assert_eq!(Email::parse("RENE\u{301}@EXAMPLE.COM").unwrap(), composed);
        assert_eq!(composed, "ren\u{e9}@example.com");
        assert_eq!(Email::parse(composed.as_str()).unwrap(), composed);
    }

    #[test]
    fn ids_are_canonical_ulids() {
        assert_eq!(id(T1).to_string(), T1);
        for bad in [
            "01hq3z8n6w6d2q5v0g8k9jxj4m", // lowercase: a second spelling of one id
            "01HQ3Z8N6W6D2Q5V0G8K9JXJ4",  // 25 chars
            "01HQ3Z8N6W6D2Q5V0G8K9JXJ4MM",
            "01HQ3Z8N6W6D2Q5V0G8K9JXJ4U", // U is not Crockford base32
            "81HQ3Z8N6W6D2Q5V0G8K9JXJ4M", // overflows 128 bits
        ] {
            assert!(
                matches!(Id::parse(bad), Err(KeyError::Malformed { field: "id", .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn line_numbers_are_bounded() {
        assert!(LineNo::new(0).is_err());
        assert!(LineNo::new(1000).is_err());
        assert_eq!(LineNo::new(42).unwrap().to_string(), "042");
    }

    #[test]
    fn identifiers_validate_when_deserialized() {
        let ok: Slug = serde_json::from_str("\"acme\"").unwrap();
        assert_eq!(ok, "acme");
        assert!(serde_json::from_str::<Slug>("\"ac#me\"").is_err());
        assert!(serde_json::from_str::<Id>("\"nope\"").is_err());
        assert!(serde_json::from_str::<LineNo>("0").is_err());
        assert_eq!(serde_json::to_string(&id(T1)).unwrap(), format!("\"{T1}\""));
    }
}
