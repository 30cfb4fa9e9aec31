//! The entity chart of `docs/DATA_MODEL.md` in code: the only place that spells `ORG#`,
//! `USER#`, `#ORDER#`, `TICKET#`, `EMAIL#`, `LINE#`, `STATUS#`, `ORDERTOKEN#`.
//!
//! Two halves:
//!
//! - **Identifiers** ([`Slug`], [`Username`], [`Email`], [`Id`], [`LineNo`],
//!   [`ClientToken`]): validated newtypes. A value that could forge another key (it
//!   contains `#` or a control character) or that would break the sort order cannot be
//!   built, so every key below is well formed by construction and no request is ever made
//!   with a bad one.
//! - **Key builders** (`OrgKey`, `UserKey`, `UserEmailKey`, `TicketKey`, `OrderKey`,
//!   `OrderLineKey`, `OrderTokenKey`): one per entity, giving its [`PrimaryKey`], its
//!   index keys ([`ItemKeys`]), and the partition and sort values that the access patterns
//!   query on.
//!
//! Sort keys compare as UTF-8 bytes, and `#` < `L` < `O` < `T` < `U`. That one fact
//! places every parent inside its children's item collection:
//!
//! - partition `ORG#<org>`: orders (`#ORDER#…`), then the organization (`ORG#<org>`),
//!   then users (`USER#…`);
//! - GSI1 partition `ORG#<org>#USER#<u>`: the user's tickets (`TICKET#…`), then the user;
//! - GSI1 partition `ORDER#<id>`: the order (`#ORDER#<id>`), then its lines (`LINE#nnn`);
//! - GSI2 partition `ORG#<org>#STATUS#<status>`: one status queue of tickets.
//!
//! Uniqueness and idempotency markers (`EMAIL#<org>#<email>`, `ORDERTOKEN#<org>#<token>`) each
//! live in a partition of their own, outside every item collection, so they never sort
//! between a parent and its children.

// Over 900 lines with its tests, on purpose: the unit tests below pin every exact key
// string next to the builder that spells it, so a change to the chart and the test that
// catches it are read together. The code itself is about 700 lines.

use std::fmt;

use crate::store::{AttributeValue, IndexKey, Item, PageKey, PrimaryKey};

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

const ORG: &str = "ORG#";
const USER: &str = "USER#";
const EMAIL: &str = "EMAIL#";
const TICKET: &str = "TICKET#";
const ORDER: &str = "ORDER#";
const ORDER_SK: &str = "#ORDER#";
const LINE: &str = "LINE#";
const STATUS: &str = "#STATUS#";
const ORDER_TOKEN: &str = "ORDERTOKEN#";

/// A ticket status as the chart spells it in a status queue's key. The model's
/// `TicketStatus` implements it, so the chart names statuses without importing the model.
pub trait StatusName: Copy {
    /// The stored name (`OPEN`, `PENDING` …).
    fn status_name(self) -> &'static str;
}

/// Longest organization slug or username.
pub const MAX_NAME_LEN: usize = 40;
/// Longest email address (RFC 5321's path limit less the angle brackets).
pub const MAX_EMAIL_LEN: usize = 254;
/// Highest order line number: line numbers are zero-padded to three digits.
pub const MAX_LINE_NO: u16 = 999;
/// Longest client token of an idempotent order placement.
pub const MAX_CLIENT_TOKEN_LEN: usize = 64;

/// An identifier that cannot become a key. Clients see `BAD_USER_INPUT`, naming `field`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The value is empty.
    #[error("{field} must not be empty")]
    Empty { field: &'static str },
    /// The value is longer than the key design allows.
    #[error("{field} must be at most {max} characters long")]
    TooLong { field: &'static str, max: usize },
    /// The value contains `#` or a control character, so it could forge another key.
    #[error("{field} must not contain `#` or control characters")]
    ForbiddenCharacter { field: &'static str },
    /// The value has the wrong shape; `expected` says which.
    #[error("{field} must be {expected}")]
    Malformed {
        field: &'static str,
        expected: &'static str,
    },
}

impl KeyError {
    /// The input field the bad value came from.
    pub fn field(&self) -> &'static str {
        match self {
            KeyError::Empty { field }
            | KeyError::TooLong { field, .. }
            | KeyError::ForbiddenCharacter { field }
            | KeyError::Malformed { field, .. } => field,
        }
    }
}

fn forges_key(c: char) -> bool {
    c == '#' || c.is_control()
}

/// The common shape of slugs and usernames: lowercase `[a-z0-9][a-z0-9-]*`, 1..=40 chars.
fn check_name(field: &'static str, value: &str) -> Result<(), KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    if value.len() > MAX_NAME_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_NAME_LEN,
        });
    }
    let bytes = value.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(&bytes[0]) || !bytes.iter().all(|b| alnum(b) || *b == b'-') {
        return Err(KeyError::Malformed {
            field,
            expected: "lowercase letters, digits and `-`, starting with a letter or digit",
        });
    }
    Ok(())
}

/// Validates an organization slug.
pub fn validate_slug(field: &'static str, value: &str) -> Result<Slug, KeyError> {
    check_name(field, value)?;
    Ok(Slug(value.to_owned()))
}

/// Validates a username (same rules as a slug).
pub fn validate_username(field: &'static str, value: &str) -> Result<Username, KeyError> {
    check_name(field, value)?;
    Ok(Username(value.to_owned()))
}

/// Validates an email address and returns it lowercased, as it is stored and keyed.
pub fn validate_email(field: &'static str, value: &str) -> Result<Email, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    let email = value.to_lowercase();
    if email.len() > MAX_EMAIL_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_EMAIL_LEN,
        });
    }
    let malformed = KeyError::Malformed {
        field,
        expected: "an email address: one `@` between non-empty parts, no whitespace",
    };
    if email.chars().any(char::is_whitespace) {
        return Err(malformed);
    }
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            Ok(Email(email))
        }
        _ => Err(malformed),
    }
}

/// Validates an entity id: a ULID in its canonical text form (26 characters of
/// uppercase Crockford base32), so one id has exactly one key.
pub fn validate_id(field: &'static str, value: &str) -> Result<Id, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    let malformed = KeyError::Malformed {
        field,
        expected: "a ULID: 26 characters of uppercase Crockford base32",
    };
    if value.len() != ulid::ULID_LEN {
        return Err(malformed);
    }
    match ulid::Ulid::from_string(value) {
        Ok(u) if u.to_string() == value => Ok(Id(u)),
        _ => Err(malformed),
    }
}

/// Validates a client token (an idempotency key chosen by the client): 1 to 64 characters
/// of `[A-Za-z0-9_-]`, so that it cannot forge a key.
pub fn validate_client_token(field: &'static str, value: &str) -> Result<ClientToken, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    if value.len() > MAX_CLIENT_TOKEN_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_CLIENT_TOKEN_LEN,
        });
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(KeyError::Malformed {
            field,
            expected: "letters, digits, `_` and `-`",
        });
    }
    Ok(ClientToken(value.to_owned()))
}

/// Validates an order line number (1..=999, so that three digits sort numerically).
pub fn validate_line_no(field: &'static str, value: u16) -> Result<LineNo, KeyError> {
    if (1..=MAX_LINE_NO).contains(&value) {
        Ok(LineNo(value))
    } else {
        Err(KeyError::Malformed {
            field,
            expected: "a line number from 1 to 999",
        })
    }
}

/// A validated string identifier: serde goes through validation both ways in, so a
/// record read from the table or from a client can never carry a key-forging value.
macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $validate:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            #[doc = concat!("Validates `value`; errors name the field `", $field, "`.")]
            pub fn parse(value: &str) -> Result<Self, KeyError> {
                $validate($field, value)
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = KeyError;
            fn try_from(value: String) -> Result<Self, KeyError> {
                $validate($field, &value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

name_type!(
    /// An organization slug: lowercase `[a-z0-9][a-z0-9-]*`, 1..=40 characters.
    Slug,
    validate_slug,
    "org"
);
name_type!(
    /// A username, unique within its organization; same rules as [`Slug`].
    Username,
    validate_username,
    "username"
);
name_type!(
    /// A lowercased email address, unique across the table.
    Email,
    validate_email,
    "email"
);
name_type!(
    /// A client's idempotency token for placing an order: `[A-Za-z0-9_-]`, 1..=64 chars.
    ClientToken,
    validate_client_token,
    "clientToken"
);

/// A ticket or order id: a ULID, so ids sort in creation order and never collide.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Id(ulid::Ulid);

impl Id {
    /// A fresh id for a record created now.
    pub fn generate() -> Self {
        Id(ulid::Ulid::new())
    }
    /// An id from its parts: used for deterministic data (the demo set, tests).
    pub fn from_parts(timestamp_ms: u64, random: u128) -> Self {
        Id(ulid::Ulid::from_parts(timestamp_ms, random))
    }
    /// Validates `value`; errors name the field `id`.
    pub fn parse(value: &str) -> Result<Self, KeyError> {
        validate_id("id", value)
    }
    /// Milliseconds since the Unix epoch when the id was made.
    pub fn timestamp_ms(&self) -> u64 {
        self.0.timestamp_ms()
    }
}

impl TryFrom<String> for Id {
    type Error = KeyError;
    fn try_from(value: String) -> Result<Self, KeyError> {
        validate_id("id", &value)
    }
}

impl From<Id> for String {
    fn from(value: Id) -> String {
        value.0.to_string()
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// An order line number, 1..=999, written zero-padded to three digits in keys.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "u16", into = "u16")]
pub struct LineNo(u16);

impl LineNo {
    pub fn new(value: u16) -> Result<Self, KeyError> {
        validate_line_no("lineNo", value)
    }
    pub fn get(self) -> u16 {
        self.0
    }
}

impl TryFrom<u16> for LineNo {
    type Error = KeyError;
    fn try_from(value: u16) -> Result<Self, KeyError> {
        LineNo::new(value)
    }
}

impl From<LineNo> for u16 {
    fn from(value: LineNo) -> u16 {
        value.0
    }
}

impl fmt::Display for LineNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:03}", self.0)
    }
}

/// Every key attribute one item carries: its primary key and the index keys of the
/// indexes it appears in (both indexes are sparse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemKeys {
    pub primary: PrimaryKey,
    pub gsi1: Option<IndexKey>,
    pub gsi2: Option<IndexKey>,
}

impl ItemKeys {
    fn primary(primary: PrimaryKey) -> Self {
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
    use crate::store::TableSchema;

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

    #[test]
    fn attribute_names_match_the_table_schema() {
        let s = TableSchema::itemgraph();
        assert_eq!((s.pk.as_str(), s.sk.as_str()), (PK, SK));
        let g1 = s.index(GSI1).unwrap();
        assert_eq!((g1.pk.as_str(), g1.sk.as_str()), (GSI1PK, GSI1SK));
        let g2 = s.index(GSI2).unwrap();
        assert_eq!((g2.pk.as_str(), g2.sk.as_str()), (GSI2PK, GSI2SK));
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
