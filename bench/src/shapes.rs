//! The operation mix: each shape's GraphQL document, its weight, and the store requests
//! README's access-pattern table says it costs; and how one worker picks its next
//! operation and its variables.
//!
//! Writers never race: worker `w` writes only into organization `w mod orgs` (with 300
//! organizations and 64 workers, no two workers share one) and updates only tickets it
//! created itself, sending the version its last write returned. A `VERSION_MISMATCH` or
//! a transaction conflict in this benchmark is therefore a real error.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::dataset::Dataset;

/// One kind of operation in the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    OrgUsers,
    OrgOrders,
    UserTickets,
    TicketById,
    OrderLines,
    Nodes50,
    DeepPage,
    CreateTicket,
    UpdateTicket,
    PlaceOrder,
}

impl Shape {
    pub const ALL: [Shape; 10] = [
        Shape::OrgUsers,
        Shape::OrgOrders,
        Shape::UserTickets,
        Shape::TicketById,
        Shape::OrderLines,
        Shape::Nodes50,
        Shape::DeepPage,
        Shape::CreateTicket,
        Shape::UpdateTicket,
        Shape::PlaceOrder,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::OrgUsers => "org_users",
            Shape::OrgOrders => "org_orders",
            Shape::UserTickets => "user_tickets",
            Shape::TicketById => "ticket_by_id",
            Shape::OrderLines => "order_lines",
            Shape::Nodes50 => "nodes_50",
            Shape::DeepPage => "deep_page",
            Shape::CreateTicket => "create_ticket",
            Shape::UpdateTicket => "update_ticket",
            Shape::PlaceOrder => "place_order",
        }
    }

    /// What the shape is, in the words of README's access-pattern table.
    pub fn describe(self) -> &'static str {
        match self {
            Shape::OrgUsers => "organization + first 20 users (pattern 2)",
            Shape::OrgOrders => "organization + 20 newest orders (pattern 3)",
            Shape::UserTickets => "user + 20 newest tickets + assignees (patterns 4, 9)",
            Shape::TicketById => "ticket by id + requester, assignee, organization (5, 9)",
            Shape::OrderLines => "order + its lines (pattern 7)",
            Shape::Nodes50 => "`nodes` with 50 ids (pattern 8)",
            Shape::DeepPage => "a deep page of a user's tickets via cursor (4, later page)",
            Shape::CreateTicket => "`createTicket` (pattern 11)",
            Shape::UpdateTicket => "`updateTicket`, priority and title (5, then 13)",
            Shape::PlaceOrder => "`placeOrder` with 3 lines (pattern 12)",
        }
    }

    /// Store requests per operation, as README's tables promise: a parent and its first
    /// page are one Query; the references of one round are one BatchGetItem; a later
    /// page under a root field is its Query plus a concurrent GetItem of the parent; a
    /// mutation is one write request plus the reads its validation needs.
    pub fn expected_requests(self) -> u64 {
        match self {
            Shape::OrgUsers | Shape::OrgOrders | Shape::OrderLines | Shape::Nodes50 => 1,
            Shape::UserTickets | Shape::TicketById | Shape::DeepPage => 2,
            Shape::CreateTicket | Shape::PlaceOrder => 1,
            Shape::UpdateTicket => 2,
        }
    }

    pub fn is_read(self) -> bool {
        !matches!(
            self,
            Shape::CreateTicket | Shape::UpdateTicket | Shape::PlaceOrder
        )
    }

    /// Weight in the full mix (out of 100): 80 reads, 20 writes.
    pub fn weight(self) -> u32 {
        match self {
            Shape::OrgUsers | Shape::OrgOrders | Shape::OrderLines => 12,
            Shape::UserTickets | Shape::TicketById => 14,
            Shape::Nodes50 | Shape::DeepPage => 8,
            Shape::CreateTicket => 8,
            Shape::UpdateTicket | Shape::PlaceOrder => 6,
        }
    }

    pub fn document(self) -> &'static str {
        match self {
            Shape::OrgUsers => {
                "query OrgUsers($slug: String!) { organization(slug: $slug) { name plan \
                 userCount users(first: 20) { totalCount nodes { username name role } \
                 pageInfo { hasNextPage endCursor } } } }"
            }
            Shape::OrgOrders => {
                "query OrgOrders($slug: String!) { organization(slug: $slug) { name \
                 orderCount orders(first: 20) { totalCount nodes { orderId status placedAt \
                 currency totalCents } pageInfo { hasNextPage endCursor } } } }"
            }
            Shape::UserTickets => {
                "query UserTickets($org: String!, $username: String!) { user(org: $org, \
                 username: $username) { name email ticketCount tickets(first: 20) { \
                 totalCount nodes { ticketId title status priority createdAt assignee { \
                 username name } } pageInfo { hasNextPage endCursor } } } }"
            }
            Shape::TicketById => {
                "query Ticket($id: ID!) { ticket(id: $id) { id ticketId title body status \
                 priority version createdAt updatedAt requester { username name } assignee \
                 { username name } organization { slug name } } }"
            }
            Shape::OrderLines => {
                "query Order($id: ID!) { order(id: $id) { orderId status placedAt currency \
                 totalCents lines { lineNo sku description quantity unitPriceCents \
                 amountCents } } }"
            }
            Shape::Nodes50 => {
                "query Nodes($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on \
                 Organization { slug name } ... on User { username name } ... on Ticket { \
                 title status } ... on Order { orderId totalCents } } }"
            }
            Shape::DeepPage => {
                "query DeepPage($org: String!, $username: String!, $after: String!) { \
                 user(org: $org, username: $username) { username tickets(first: 20, after: \
                 $after) { nodes { ticketId title status createdAt } pageInfo { hasNextPage \
                 endCursor } } } }"
            }
            Shape::CreateTicket => {
                "mutation CreateTicket($input: CreateTicketInput!) { createTicket(input: \
                 $input) { ticket { ticketId version status } } }"
            }
            Shape::UpdateTicket => {
                "mutation UpdateTicket($input: UpdateTicketInput!) { updateTicket(input: \
                 $input) { ticket { ticketId version priority } } }"
            }
            Shape::PlaceOrder => {
                "mutation PlaceOrder($input: PlaceOrderInput!) { placeOrder(input: $input) \
                 { order { orderId totalCents } replayed } }"
            }
        }
    }
}

/// Which operations a run draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mix {
    /// Every shape, by [`Shape::weight`].
    Full,
    /// The seven read shapes, by the same weights (the floor's mix).
    Reads,
    /// One shape alone (`--shapes-alone`): what one operation of it costs.
    Only(Shape),
}

impl Mix {
    pub fn shapes(self) -> Vec<(Shape, u32)> {
        if let Mix::Only(shape) = self {
            return vec![(shape, 1)];
        }
        Shape::ALL
            .iter()
            .filter(|s| self == Mix::Full || s.is_read())
            .map(|s| (*s, s.weight()))
            .collect()
    }
}

/// A ticket a worker created, with the version its last write returned.
#[derive(Debug, Clone)]
pub struct OwnedTicket {
    pub id: String,
    pub version: i64,
}

/// One worker's random stream and the tickets it owns.
pub struct Worker {
    pub index: usize,
    pub rng: ChaCha8Rng,
    shapes: Vec<(Shape, u32)>,
    total_weight: u32,
    pub owned: Vec<OwnedTicket>,
    next_update: usize,
    writes: u64,
}

impl Worker {
    pub fn new(index: usize, seed: u64, mix: Mix) -> Self {
        let shapes = mix.shapes();
        let total_weight = shapes.iter().map(|(_, w)| w).sum();
        Worker {
            index,
            rng: ChaCha8Rng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9e37_79b9)),
            shapes,
            total_weight,
            owned: Vec::new(),
            next_update: 0,
            writes: 0,
        }
    }

    /// The next shape, by weight. An update with no ticket of its own yet creates one.
    pub fn next_shape(&mut self) -> Shape {
        let mut roll = self.rng.random_range(0..self.total_weight);
        let mut shape = self.shapes[0].0;
        for (s, w) in &self.shapes {
            if roll < *w {
                shape = *s;
                break;
            }
            roll -= w;
        }
        if shape == Shape::UpdateTicket && self.owned.is_empty() {
            Shape::CreateTicket
        } else {
            shape
        }
    }

    /// The variables of one operation of `shape`. `deep_cursors[o]` is organization
    /// `o`'s deep-page cursor.
    pub fn variables(&mut self, shape: Shape, ds: &Dataset, deep_cursors: &[String]) -> Value {
        let rng = &mut self.rng;
        match shape {
            Shape::OrgUsers | Shape::OrgOrders => {
                let org = ds.orgs.choose(rng).expect("organizations");
                json!({ "slug": org.slug.as_str() })
            }
            Shape::UserTickets => {
                let (o, user) = ds.users_with_assigned.choose(rng).expect("users");
                json!({ "org": ds.orgs[*o].slug.as_str(), "username": user.as_str() })
            }
            Shape::TicketById => {
                let id = ds.ticket_ids.choose(rng).expect("tickets");
                json!({ "id": id.to_string() })
            }
            Shape::OrderLines => {
                let id = ds.order_ids.choose(rng).expect("orders");
                json!({ "id": id.to_string() })
            }
            Shape::Nodes50 => {
                let ids: Vec<&str> = ds
                    .node_keys
                    .choose_multiple(rng, 50)
                    .map(|n| n.global_id.as_str())
                    .collect();
                json!({ "ids": ids })
            }
            Shape::DeepPage => {
                let deep: Vec<usize> = (0..ds.orgs.len())
                    .filter(|o| ds.orgs[*o].deep_start.is_some())
                    .collect();
                let o = *deep.choose(rng).expect("an organization with a deep page");
                let org = &ds.orgs[o];
                json!({
                    "org": org.slug.as_str(),
                    "username": org.heavy.as_str(),
                    "after": deep_cursors[o],
                })
            }
            Shape::CreateTicket => {
                let org = self.write_org(ds);
                self.writes += 1;
                json!({ "input": {
                    "org": org.slug.as_str(),
                    "requester": org.users.last().expect("users").as_str(),
                    "title": format!("Load test ticket {} of worker {}", self.writes, self.index),
                    "body": "Created by itemgraph-bench.",
                    "priority": "NORMAL",
                    "assignee": org.admin.as_str(),
                }})
            }
            Shape::UpdateTicket => {
                let ix = self.next_update % self.owned.len();
                self.next_update += 1;
                self.writes += 1;
                let t = &self.owned[ix];
                let priority = ["LOW", "NORMAL", "HIGH", "URGENT"][self.writes as usize % 4];
                json!({ "input": {
                    "ticketId": t.id,
                    "expectedVersion": t.version,
                    "priority": priority,
                    "title": format!("Load test ticket, change {}", self.writes),
                }})
            }
            Shape::PlaceOrder => {
                let org = self.write_org(ds);
                let lines: Vec<Value> = (1..=3)
                    .map(|n| {
                        json!({
                            "sku": format!("SKU-{n:04}"),
                            "description": "Widget, standard",
                            "quantity": n,
                            "unitPriceCents": 1_250,
                        })
                    })
                    .collect();
                json!({ "input": {
                    "org": org.slug.as_str(),
                    "buyer": org.users.last().expect("users").as_str(),
                    "currency": "USD",
                    "lines": lines,
                }})
            }
        }
    }

    /// The organization this worker writes into: its own, so writers never share one.
    fn write_org<'d>(&self, ds: &'d Dataset) -> &'d crate::dataset::OrgRef {
        &ds.orgs[self.index % ds.orgs.len()]
    }

    /// Learns from a successful write: the ticket it created, or the version it is at now.
    pub fn record_write(&mut self, shape: Shape, data: &Value) {
        match shape {
            Shape::CreateTicket => {
                let t = &data["createTicket"]["ticket"];
                if let (Some(id), Some(version)) = (t["ticketId"].as_str(), t["version"].as_i64()) {
                    self.owned.push(OwnedTicket {
                        id: id.to_owned(),
                        version,
                    });
                }
            }
            Shape::UpdateTicket => {
                let t = &data["updateTicket"]["ticket"];
                if let (Some(id), Some(version)) = (t["ticketId"].as_str(), t["version"].as_i64()) {
                    if let Some(owned) = self.owned.iter_mut().find(|o| o.id == id) {
                        owned.version = version;
                    }
                }
            }
            _ => {}
        }
    }
}

/// The deep-page cursor of each organization (empty where its heavy user has fewer than
/// two pages), signed as the server signs it: the bench passes the server the same
/// `--cursor-secret`.
pub fn deep_cursors(ds: &Dataset, secret: &str) -> Vec<String> {
    let codec = itemgraph::graphql::CursorCodec::new(secret.as_bytes());
    ds.orgs
        .iter()
        .map(|o| match &o.deep_start {
            Some(key) => codec.encode(
                &itemgraph::graphql::connection_of(
                    &itemgraph::chart::builtin(),
                    "User",
                    "tickets",
                    &[("org", o.slug.as_str()), ("username", o.heavy.as_str())],
                )
                .expect("the built-in chart pages a user's tickets"),
                key,
            ),
            None => String::new(),
        })
        .collect()
}
