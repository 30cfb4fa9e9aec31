//! The consistency checker behind `itemgraph check`: reads the whole table and verifies
//! the invariants of the data model that the writers of [`crate::collections`] keep.
//!
//! It is the one place that reads a table whole (a strongly consistent Scan, page by
//! page) and never serves a request. It holds every decoded record in memory, so it
//! suits tables that fit in memory: demo, test and development tables, or a periodic
//! audit of a modest production table.
//!
//! What it verifies:
//!
//! - every item decodes as its `Type` (`itemgraph migrate`'s records included), and its
//!   stored key attributes (`PK`, `SK`, and the
//!   index keys, present or absent) are exactly those its record computes
//!   ([`Record::keys`]); no two items hold the same record;
//! - an organization's `userCount`, `orderCount`, `ticketCount` and per-status ticket
//!   counts (its own counter plus its counter shards') equal the users, orders and tickets
//!   found; it has all its counter shards when its schema version says it is sharded,
//!   none when it does not (tables in both layouts check clean, as while the
//!   `counter-shards` migration runs); a user's `ticketCount`,
//!   `assignedTicketCount` and `orderCount` equal the tickets they requested, the tickets
//!   assigned to them and the orders they placed as buyer;
//! - every reference resolves: a user's and a ticket's organization, a ticket's requester
//!   and assignee, an order's organization and buyer, an order line's order;
//! - an order agrees with its lines: numbered 1..n, `lineCount = n`, `totalCents` the sum
//!   of the lines' amounts, each amount `quantity × unitPriceCents`;
//! - every user has the email marker of its email, and every email marker names a user
//!   with that email; every client-token marker names an existing order of its
//!   organization.
//!
//! Another chart's table is checked by what its chart declares ([`charted`]).

mod charted;

pub use charted::check_chart;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::collections::OrderToken;
use crate::keys::{
    Email, Id, ItemKeys, Slug, Username, COUNTER_SHARDS, GSI1PK, GSI1SK, GSI2PK, GSI2SK, PK, SK,
};
use crate::live::lease::LeaseRecord;
use crate::migrate::records::{MigrationRecord, SegmentCheckpoint};
use crate::model::{
    item_type, CounterShard, Entity, Order, OrderLine, Organization, Record, Ticket, TicketStatus,
    User, UserEmail,
};
use crate::store::{AttributeValue, Item, PrimaryKey, Scan, Store, StoreError};

/// Items per Scan page.
pub const SCAN_PAGE_SIZE: u32 = 500;

/// What kind of invariant a [`Violation`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViolationKind {
    /// The item has no `Type`, an unknown one, or does not decode as its type.
    Undecodable,
    /// A stored key attribute differs from the key its record computes.
    KeyMismatch,
    /// Two items hold the same record.
    Duplicate,
    /// A counter on a parent differs from the children found.
    CounterMismatch,
    /// A reference points at nothing: organization, requester, assignee, buyer.
    DanglingReference,
    /// An order disagrees with its lines.
    OrderLines,
    /// An order line whose order does not exist.
    OrphanLine,
    /// A marker (email, client token) that names nothing, or a user with another email.
    OrphanMarker,
    /// A user without the marker of its email.
    MissingMarker,
    /// An organization's counter shards disagree with its schema version: some missing
    /// where it is sharded, any present where it is not, or a shard without organization.
    CounterShards,
}

impl ViolationKind {
    /// The kebab-case name printed in a report line.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Undecodable => "undecodable",
            ViolationKind::KeyMismatch => "key-mismatch",
            ViolationKind::Duplicate => "duplicate",
            ViolationKind::CounterMismatch => "counter-mismatch",
            ViolationKind::DanglingReference => "dangling-reference",
            ViolationKind::OrderLines => "order-lines",
            ViolationKind::OrphanLine => "orphan-line",
            ViolationKind::OrphanMarker => "orphan-marker",
            ViolationKind::MissingMarker => "missing-marker",
            ViolationKind::CounterShards => "counter-shards",
        }
    }
}

/// One broken invariant: which item, of what type, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The item's `Type` (`?` when it has none).
    pub entity: String,
    /// The item's primary key as stored.
    pub key: PrimaryKey,
    /// What is wrong, with the values found and expected.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({} | {}): {}",
            self.kind.as_str(),
            self.entity,
            self.key.pk,
            self.key.sk,
            self.message
        )
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckReport {
    /// Items scanned.
    pub items: usize,
    /// In key order of the item concerned.
    pub violations: Vec<Violation>,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// The violations of one kind.
    pub fn of_kind(&self, kind: ViolationKind) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.kind == kind)
    }
}

/// The summary line.
impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.violations.len() {
            0 => write!(f, "checked {} items: no violations", self.items),
            1 => write!(f, "checked {} items: 1 violation", self.items),
            n => write!(f, "checked {} items: {n} violations", self.items),
        }
    }
}

/// Scans the whole table (strongly consistent, [`SCAN_PAGE_SIZE`] items a page) and
/// verifies the data model's invariants. Fails only when the store does; whatever the
/// table holds becomes violations.
pub async fn check(store: &dyn Store) -> Result<CheckReport, StoreError> {
    Ok(check_items(store, scan_all(store).await?))
}

/// Every item of the table: a strongly consistent Scan, [`SCAN_PAGE_SIZE`] items a page.
async fn scan_all(store: &dyn Store) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .scan(Scan {
                limit: Some(SCAN_PAGE_SIZE),
                start,
                consistent_read: true,
                segment: None,
            })
            .await?;
        items.extend(page.items);
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    Ok(items)
}

/// The report of `items` checked: its violations in key order of the item concerned.
fn report(items: usize, mut violations: Vec<Violation>) -> CheckReport {
    violations.sort_by(|a, b| {
        (a.key.pk.as_bytes(), a.key.sk.as_bytes(), a.kind, &a.message).cmp(&(
            b.key.pk.as_bytes(),
            b.key.sk.as_bytes(),
            b.kind,
            &b.message,
        ))
    });
    CheckReport { items, violations }
}

fn check_items(store: &dyn Store, items: Vec<Item>) -> CheckReport {
    let schema = store.schema();
    let count = items.len();
    let mut keyed: Vec<(PrimaryKey, Item)> = items
        .into_iter()
        .map(|item| {
            let key = schema
                .key_of(&item)
                .unwrap_or_else(|| PrimaryKey::new("?", "?"));
            (key, item)
        })
        .collect();
    keyed.sort_by(|a, b| {
        (a.0.pk.as_bytes(), a.0.sk.as_bytes()).cmp(&(b.0.pk.as_bytes(), b.0.sk.as_bytes()))
    });

    let mut checker = Checker::default();
    for (key, item) in keyed {
        checker.load(key, item);
    }
    checker.verify();
    report(count, checker.violations)
}

/// A decoded record with the primary key it is stored under.
struct At<R> {
    key: PrimaryKey,
    rec: R,
}

#[derive(Default)]
struct Checker {
    orgs: BTreeMap<Slug, At<Organization>>,
    users: BTreeMap<(Slug, Username), At<User>>,
    emails: BTreeMap<(Slug, Email), At<UserEmail>>,
    tickets: Vec<At<Ticket>>,
    orders: BTreeMap<Id, At<Order>>,
    lines: BTreeMap<Id, Vec<At<OrderLine>>>,
    tokens: Vec<At<OrderToken>>,
    shards: BTreeMap<Slug, Vec<At<CounterShard>>>,
    /// Where each record lives, by the primary key its record computes.
    seen: HashMap<PrimaryKey, PrimaryKey>,
    violations: Vec<Violation>,
}

/// One decoded item.
enum Decoded {
    Entity(Entity),
    Token(OrderToken),
    Shard(CounterShard),
    /// The server's own bookkeeping (`itemgraph migrate`'s migrations and checkpoints,
    /// the relay's lease): their keys are checked, nothing else.
    Bookkeeping(&'static str, ItemKeys),
}

impl Decoded {
    fn keys(&self) -> ItemKeys {
        match self {
            Decoded::Entity(e) => e.keys(),
            Decoded::Token(t) => t.keys(),
            Decoded::Shard(s) => s.keys(),
            Decoded::Bookkeeping(_, keys) => keys.clone(),
        }
    }
    fn type_name(&self) -> &'static str {
        match self {
            Decoded::Entity(e) => e.type_name(),
            Decoded::Token(_) => OrderToken::TYPE,
            Decoded::Shard(_) => CounterShard::TYPE,
            Decoded::Bookkeeping(ty, _) => ty,
        }
    }
}

impl Checker {
    fn report(&mut self, kind: ViolationKind, entity: &str, key: &PrimaryKey, message: String) {
        self.violations.push(Violation {
            kind,
            entity: entity.to_owned(),
            key: key.clone(),
            message,
        });
    }

    /// Decodes one item, checks its keys, and files its record.
    fn load(&mut self, key: PrimaryKey, item: Item) {
        let ty = item_type(&item).unwrap_or("?").to_owned();
        let decoded = if ty == OrderToken::TYPE {
            OrderToken::from_item(item.clone()).map(Decoded::Token)
        } else if ty == CounterShard::TYPE {
            CounterShard::from_item(item.clone()).map(Decoded::Shard)
        } else if ty == MigrationRecord::TYPE {
            MigrationRecord::from_item(item.clone())
                .map(|r| Decoded::Bookkeeping(MigrationRecord::TYPE, r.keys()))
        } else if ty == SegmentCheckpoint::TYPE {
            SegmentCheckpoint::from_item(item.clone())
                .map(|r| Decoded::Bookkeeping(SegmentCheckpoint::TYPE, r.keys()))
        } else if ty == LeaseRecord::TYPE {
            LeaseRecord::from_item(item.clone())
                .map(|r| Decoded::Bookkeeping(LeaseRecord::TYPE, r.keys()))
        } else {
            Entity::from_item(item.clone()).map(Decoded::Entity)
        };
        let decoded = match decoded {
            Ok(d) => d,
            Err(e) => {
                let message = format!("does not decode: {e}");
                self.report(ViolationKind::Undecodable, &ty, &key, message);
                return;
            }
        };
        let keys = decoded.keys();
        for message in key_mismatches(&item, &keys) {
            self.report(ViolationKind::KeyMismatch, &ty, &key, message);
        }
        if let Some(first) = self.seen.get(&keys.primary) {
            let message = format!(
                "holds the same {} as the item ({} | {})",
                decoded.type_name(),
                first.pk,
                first.sk
            );
            self.report(ViolationKind::Duplicate, &ty, &key, message);
            return;
        }
        self.seen.insert(keys.primary, key.clone());
        match decoded {
            Decoded::Entity(Entity::Organization(rec)) => {
                self.orgs.insert(rec.slug.clone(), At { key, rec });
            }
            Decoded::Entity(Entity::User(rec)) => {
                let id = (rec.org.clone(), rec.username.clone());
                self.users.insert(id, At { key, rec });
            }
            Decoded::Entity(Entity::UserEmail(rec)) => {
                self.emails
                    .insert((rec.org.clone(), rec.email.clone()), At { key, rec });
            }
            Decoded::Entity(Entity::Ticket(rec)) => self.tickets.push(At { key, rec }),
            Decoded::Entity(Entity::Order(rec)) => {
                self.orders.insert(rec.order_id, At { key, rec });
            }
            Decoded::Entity(Entity::OrderLine(rec)) => {
                self.lines
                    .entry(rec.order_id)
                    .or_default()
                    .push(At { key, rec });
            }
            Decoded::Token(rec) => self.tokens.push(At { key, rec }),
            Decoded::Shard(rec) => {
                self.shards
                    .entry(rec.org.clone())
                    .or_default()
                    .push(At { key, rec });
            }
            Decoded::Bookkeeping(..) => {}
        }
    }

    fn user_exists(&self, org: &Slug, username: &Username) -> bool {
        self.users.contains_key(&(org.clone(), username.clone()))
    }

    fn verify(&mut self) {
        let mut found = Vec::new();
        self.verify_orgs(&mut found);
        self.verify_users(&mut found);
        self.verify_tickets(&mut found);
        self.verify_orders(&mut found);
        self.verify_markers(&mut found);
        self.violations.extend(found);
    }

    fn verify_orgs(&self, out: &mut Vec<Violation>) {
        #[derive(Default)]
        struct Counts {
            users: u64,
            orders: u64,
            tickets: u64,
            by_status: BTreeMap<TicketStatus, u64>,
        }
        let mut counts: BTreeMap<&Slug, Counts> = BTreeMap::new();
        for (org, _) in self.users.keys() {
            counts.entry(org).or_default().users += 1;
        }
        for o in self.orders.values() {
            counts.entry(&o.rec.org).or_default().orders += 1;
        }
        for t in &self.tickets {
            let c = counts.entry(&t.rec.org).or_default();
            c.tickets += 1;
            *c.by_status.entry(t.rec.status).or_default() += 1;
        }
        for (slug, org) in &self.orgs {
            let c = counts.remove(slug).unwrap_or_default();
            let shards = self.shards.get(slug).map_or(&[][..], Vec::as_slice);
            self.verify_shards(org, shards, out);
            let mut counter = |name: &str, stored: i64, found: u64, what: &str| {
                if stored != found as i64 {
                    out.push(violation(
                        ViolationKind::CounterMismatch,
                        Organization::TYPE,
                        &org.key,
                        format!("{name} is {stored}, but {found} {what} belong to it"),
                    ));
                }
            };
            // Each count is the organization's own counter plus its shards' parts.
            let sum = |own: u32, part: fn(&CounterShard) -> i64| {
                i64::from(own) + shards.iter().map(|s| part(&s.rec)).sum::<i64>()
            };
            let o = &org.rec;
            counter(
                Organization::USER_COUNT,
                sum(o.user_count, |s| s.user_count),
                c.users,
                "users",
            );
            counter(
                Organization::ORDER_COUNT,
                sum(o.order_count, |s| s.order_count),
                c.orders,
                "orders",
            );
            counter(
                Organization::TICKET_COUNT,
                sum(o.ticket_count, |s| s.ticket_count),
                c.tickets,
                "tickets",
            );
            for status in TicketStatus::ALL {
                let found = c.by_status.get(status).copied().unwrap_or(0);
                let what = format!("{status} tickets");
                let part: fn(&CounterShard) -> i64 = match status {
                    TicketStatus::Open => |s| s.ticket_count_open,
                    TicketStatus::Pending => |s| s.ticket_count_pending,
                    TicketStatus::Solved => |s| s.ticket_count_solved,
                    TicketStatus::Closed => |s| s.ticket_count_closed,
                };
                counter(
                    Organization::status_counter(*status),
                    sum(o.ticket_count_in(*status), part),
                    found,
                    &what,
                );
            }
        }
        for (slug, shards) in &self.shards {
            if self.orgs.contains_key(slug) {
                continue;
            }
            for s in shards {
                out.push(violation(
                    ViolationKind::CounterShards,
                    CounterShard::TYPE,
                    &s.key,
                    format!("counts for the organization {slug}, which does not exist"),
                ));
            }
        }
    }

    /// An organization has all its counter shards when its schema version says it is
    /// sharded, and none when it does not.
    fn verify_shards(
        &self,
        org: &At<Organization>,
        shards: &[At<CounterShard>],
        out: &mut Vec<Violation>,
    ) {
        let sharded = org.rec.schema_version == Some(Organization::SHARDED);
        let mut have: Vec<u32> = shards.iter().map(|s| s.rec.shard).collect();
        have.sort_unstable();
        let message = if sharded {
            let missing: Vec<String> = (0..COUNTER_SHARDS)
                .filter(|n| have.binary_search(n).is_err())
                .map(|n| n.to_string())
                .collect();
            let extra: Vec<String> = have
                .iter()
                .filter(|n| **n >= COUNTER_SHARDS)
                .map(|n| n.to_string())
                .collect();
            match (missing.is_empty(), extra.is_empty()) {
                (true, true) => return,
                _ => format!(
                    "is sharded (schema version {}), but lacks counter shards [{}] and has unknown ones [{}]",
                    Organization::SHARDED,
                    missing.join(", "),
                    extra.join(", ")
                ),
            }
        } else if have.is_empty() {
            return;
        } else {
            format!(
                "is not sharded (no schema version {}), but has {} counter shards",
                Organization::SHARDED,
                have.len()
            )
        };
        out.push(violation(
            ViolationKind::CounterShards,
            Organization::TYPE,
            &org.key,
            message,
        ));
    }

    fn verify_users(&self, out: &mut Vec<Violation>) {
        type Counts<'a> = HashMap<(&'a Slug, &'a Username), u64>;
        let mut requested: Counts = HashMap::new();
        let mut assigned: Counts = HashMap::new();
        let mut bought: Counts = HashMap::new();
        for t in &self.tickets {
            *requested.entry((&t.rec.org, &t.rec.requester)).or_default() += 1;
            if let Some(assignee) = &t.rec.assignee {
                *assigned.entry((&t.rec.org, assignee)).or_default() += 1;
            }
        }
        for o in self.orders.values() {
            *bought.entry((&o.rec.org, &o.rec.buyer)).or_default() += 1;
        }
        for ((org, username), user) in &self.users {
            let v = |kind, message| violation(kind, User::TYPE, &user.key, message);
            if !self.orgs.contains_key(org) {
                out.push(v(
                    ViolationKind::DanglingReference,
                    format!("its organization {org} does not exist"),
                ));
            }
            let u = &user.rec;
            let counters = [
                (
                    User::TICKET_COUNT,
                    u.ticket_count,
                    &requested,
                    "tickets name this user as requester",
                ),
                (
                    User::ASSIGNED_TICKET_COUNT,
                    u.assigned_ticket_count,
                    &assigned,
                    "tickets name this user as assignee",
                ),
                (
                    User::ORDER_COUNT,
                    u.order_count,
                    &bought,
                    "orders name this user as buyer",
                ),
            ];
            for (name, stored, counts, what) in counters {
                let found = counts.get(&(org, username)).copied().unwrap_or(0);
                if u64::from(stored) != found {
                    out.push(v(
                        ViolationKind::CounterMismatch,
                        format!("{name} is {stored}, but {found} {what}"),
                    ));
                }
            }
            match self.emails.get(&(org.clone(), user.rec.email.clone())) {
                None => out.push(v(
                    ViolationKind::MissingMarker,
                    format!("its email {} has no marker item", user.rec.email),
                )),
                Some(m) if m.rec.org != *org || m.rec.username != *username => out.push(v(
                    ViolationKind::MissingMarker,
                    format!(
                        "the marker of its email {} names {}/{}",
                        user.rec.email, m.rec.org, m.rec.username
                    ),
                )),
                Some(_) => {}
            }
        }
    }

    fn verify_tickets(&self, out: &mut Vec<Violation>) {
        for t in &self.tickets {
            let rec = &t.rec;
            let mut dangling = |message: String| {
                out.push(violation(
                    ViolationKind::DanglingReference,
                    Ticket::TYPE,
                    &t.key,
                    message,
                ))
            };
            if !self.orgs.contains_key(&rec.org) {
                dangling(format!("its organization {} does not exist", rec.org));
            }
            if !self.user_exists(&rec.org, &rec.requester) {
                dangling(format!(
                    "its requester {}/{} does not exist",
                    rec.org, rec.requester
                ));
            }
            if let Some(assignee) = &rec.assignee {
                if !self.user_exists(&rec.org, assignee) {
                    dangling(format!(
                        "its assignee {}/{assignee} does not exist",
                        rec.org
                    ));
                }
            }
        }
    }

    fn verify_orders(&self, out: &mut Vec<Violation>) {
        for (id, order) in &self.orders {
            let o = &order.rec;
            let v = |kind, message| violation(kind, Order::TYPE, &order.key, message);
            if !self.orgs.contains_key(&o.org) {
                out.push(v(
                    ViolationKind::DanglingReference,
                    format!("its organization {} does not exist", o.org),
                ));
            }
            if !self.user_exists(&o.org, &o.buyer) {
                out.push(v(
                    ViolationKind::DanglingReference,
                    format!("its buyer {}/{} does not exist", o.org, o.buyer),
                ));
            }
            let mut lines: Vec<&At<OrderLine>> = self
                .lines
                .get(id)
                .map(|l| l.iter().collect())
                .unwrap_or_default();
            lines.sort_by_key(|l| l.rec.line_no);
            let numbers: Vec<u16> = lines.iter().map(|l| l.rec.line_no.get()).collect();
            let expected: Vec<u16> = (1..).take(numbers.len()).collect();
            if numbers.is_empty() {
                out.push(v(ViolationKind::OrderLines, "has no lines".into()));
            } else if numbers != expected {
                out.push(v(
                    ViolationKind::OrderLines,
                    format!(
                        "its lines are numbered {numbers:?}, not 1 to {}",
                        numbers.len()
                    ),
                ));
            }
            if o.line_count as usize != lines.len() {
                out.push(v(
                    ViolationKind::OrderLines,
                    format!(
                        "lineCount is {}, but it has {} lines",
                        o.line_count,
                        lines.len()
                    ),
                ));
            }
            let total: i128 = lines.iter().map(|l| i128::from(l.rec.amount_cents)).sum();
            if i128::from(o.total_cents) != total {
                out.push(v(
                    ViolationKind::OrderLines,
                    format!(
                        "totalCents is {}, but its lines add up to {total}",
                        o.total_cents
                    ),
                ));
            }
            for line in lines {
                let l = &line.rec;
                let amount = i128::from(l.quantity) * i128::from(l.unit_price_cents);
                if amount != i128::from(l.amount_cents) {
                    out.push(violation(
                        ViolationKind::OrderLines,
                        OrderLine::TYPE,
                        &line.key,
                        format!(
                            "amountCents is {}, but quantity × unitPriceCents is {amount}",
                            l.amount_cents
                        ),
                    ));
                }
            }
        }
        for (id, lines) in &self.lines {
            if self.orders.contains_key(id) {
                continue;
            }
            for line in lines {
                out.push(violation(
                    ViolationKind::OrphanLine,
                    OrderLine::TYPE,
                    &line.key,
                    format!("its order {id} does not exist"),
                ));
            }
        }
    }

    fn verify_markers(&self, out: &mut Vec<Violation>) {
        for ((_, email), m) in &self.emails {
            let message = match self.users.get(&(m.rec.org.clone(), m.rec.username.clone())) {
                None => format!(
                    "names the user {}/{}, who does not exist",
                    m.rec.org, m.rec.username
                ),
                Some(u) if u.rec.email != *email => format!(
                    "names the user {}/{}, whose email is {}",
                    m.rec.org, m.rec.username, u.rec.email
                ),
                Some(_) => continue,
            };
            out.push(violation(
                ViolationKind::OrphanMarker,
                UserEmail::TYPE,
                &m.key,
                message,
            ));
        }
        for t in &self.tokens {
            let message = match self.orders.get(&t.rec.order_id) {
                None => format!("names the order {}, which does not exist", t.rec.order_id),
                Some(o) if o.rec.org != t.rec.org => format!(
                    "names the order {} of another organization ({})",
                    t.rec.order_id, o.rec.org
                ),
                Some(_) => continue,
            };
            out.push(violation(
                ViolationKind::OrphanMarker,
                OrderToken::TYPE,
                &t.key,
                message,
            ));
        }
    }
}

fn violation(kind: ViolationKind, entity: &str, key: &PrimaryKey, message: String) -> Violation {
    Violation {
        kind,
        entity: entity.to_owned(),
        key: key.clone(),
        message,
    }
}

/// Every stored key attribute that differs from the key the record computes, as a
/// message each. An index key the record does not have must be absent.
fn key_mismatches(item: &Item, keys: &ItemKeys) -> Vec<String> {
    let index = |k: &Option<crate::store::IndexKey>, pk: bool| {
        k.as_ref()
            .map(|k| if pk { k.pk.clone() } else { k.sk.clone() })
    };
    let expected = [
        (PK, Some(keys.primary.pk.clone())),
        (SK, Some(keys.primary.sk.clone())),
        (GSI1PK, index(&keys.gsi1, true)),
        (GSI1SK, index(&keys.gsi1, false)),
        (GSI2PK, index(&keys.gsi2, true)),
        (GSI2SK, index(&keys.gsi2, false)),
    ];
    let mut out = Vec::new();
    for (attr, want) in expected {
        match (item.get(attr), want) {
            (None, None) => {}
            (Some(AttributeValue::S(have)), Some(want)) if *have == want => {}
            (Some(AttributeValue::S(have)), Some(want)) => out.push(format!(
                "{attr} is {have:?}, but its record's key is {want:?}"
            )),
            (Some(AttributeValue::S(have)), None) => out.push(format!(
                "{attr} is {have:?}, but its record has no such key"
            )),
            (None, Some(want)) => {
                out.push(format!("{attr} is missing; its record's key is {want:?}"))
            }
            (Some(_), _) => out.push(format!("{attr} is not a string")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::put_entities;
    use crate::demo;
    use crate::store::embedded::EmbeddedStore;

    async fn seeded() -> EmbeddedStore {
        let store = EmbeddedStore::in_memory("t", crate::keys::table_schema()).unwrap();
        store.create_table().await.unwrap();
        demo::seed_demo(&store).await.unwrap();
        store
    }

    #[tokio::test]
    async fn the_demo_data_is_clean() {
        let store = seeded().await;
        let report = check(&store).await.unwrap();
        assert_eq!(report.violations, []);
        assert_eq!(report.items, demo::demo_data().len());
        assert_eq!(
            report.to_string(),
            format!("checked {} items: no violations", report.items)
        );
    }

    #[tokio::test]
    async fn undecodable_items_and_stray_index_keys_are_reported() {
        let store = seeded().await;
        let mut junk = Item::new();
        junk.insert(PK.into(), AttributeValue::S("JUNK".into()));
        junk.insert(SK.into(), AttributeValue::S("JUNK".into()));
        let mut order = demo::demo_data().orders[0].to_item();
        order.insert(GSI2PK.into(), AttributeValue::S("X".into()));
        order.insert(GSI2SK.into(), AttributeValue::S("Y".into()));
        put_entities(&store, vec![junk, order]).await.unwrap();
        let report = check(&store).await.unwrap();
        let lines: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines
            .iter()
            .any(|l| l.starts_with("undecodable ? (JUNK | JUNK): does not decode")));
        assert_eq!(
            report.of_kind(ViolationKind::KeyMismatch).count(),
            2,
            "{lines:#?}"
        );
        assert!(lines
            .iter()
            .any(|l| l.ends_with("GSI2PK is \"X\", but its record has no such key")));
        assert_eq!(
            report.to_string(),
            format!("checked {} items: 3 violations", report.items)
        );
    }
}
