//! The type catalogue: every object of the schema as a thin newtype over its model record,
//! with the pages its parent's resolver read ahead. Their fields are resolved in the file
//! of each entity (`org.rs`, `user.rs`, `ticket.rs`, `order.rs`); references between them
//! are loaded here, through the request's DataLoader.

use std::sync::Arc;

use async_graphql::{Context, Enum, ErrorExtensions, Interface, Result, ID};

use super::connection::connection_type;
use super::context::load;
use super::errors::ApiError;
use super::prefetch::Prefetched;
use crate::keys::{OrgKey, Slug, UserKey, Username};
use crate::model::{self, Entity};

/// The subscription an organization is on.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::Plan")]
pub enum Plan {
    Free,
    Team,
    Enterprise,
}

/// What a user may do in their organization.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::Role")]
pub enum Role {
    Admin,
    Member,
}

/// Where a ticket is in its life. Each status is a queue (`Organization.tickets`).
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::TicketStatus")]
pub enum TicketStatus {
    Open,
    Pending,
    Solved,
    Closed,
}

/// How urgent a ticket is.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::TicketPriority")]
pub enum TicketPriority {
    Low,
    Normal,
    High,
    Urgent,
}

/// Where an order is in fulfilment.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "crate::model::OrderStatus")]
pub enum OrderStatus {
    Placed,
    Paid,
    Shipped,
    Delivered,
    Cancelled,
}

/// Anything with a global id; `Query.node` and `Query.nodes` fetch it back.
#[derive(Interface, Clone)]
#[graphql(field(name = "id", ty = "ID", desc = "Opaque global id."))]
pub enum Node {
    Organization(Organization),
    User(User),
    Ticket(Ticket),
    Order(Order),
}

impl Node {
    /// The node for an entity read by key; markers and lines are not nodes.
    pub fn from_entity(e: Entity) -> Option<Node> {
        Some(match e {
            Entity::Organization(r) => Node::Organization(Organization::new(r)),
            Entity::User(r) => Node::User(User::new(r)),
            Entity::Ticket(r) => Node::Ticket(Ticket(Arc::new(r))),
            Entity::Order(r) => Node::Order(Order::new(r)),
            Entity::UserEmail(_) | Entity::OrderLine(_) => return None,
        })
    }
}

/// An organization: the tenant that owns users, tickets and orders.
#[derive(Clone)]
pub struct Organization {
    pub rec: Arc<model::Organization>,
    pub pages: Arc<Prefetched>,
    /// Whether `rec` was read with the counter shards, so holds the counts. An
    /// organization read by key (a reference, `node`) was not: its count fields read them
    /// ([`Organization::counts`]).
    pub counted: bool,
}

impl Organization {
    /// An organization read by key, without its counter shards.
    pub fn new(rec: model::Organization) -> Self {
        Organization {
            rec: Arc::new(rec),
            pages: Arc::default(),
            counted: false,
        }
    }

    /// The record with the organization's counts: `rec` when it was read with its
    /// counter shards, else one Query for them (once per request).
    pub(super) async fn counts(&self, ctx: &Context<'_>) -> Result<Arc<model::Organization>> {
        if self.counted {
            return Ok(self.rec.clone());
        }
        match super::context::rc(ctx).counted_org(&self.rec.slug).await {
            Ok(Some(rec)) => Ok(rec),
            Ok(None) => Err(ApiError::NotFound(format!("organization {}", self.rec.slug)).extend()),
            Err(e) => Err(e.as_ref().extend()),
        }
    }
}

impl Organization {
    /// The organization a reference names; `NOT_FOUND` when it is gone.
    pub(super) async fn load(ctx: &Context<'_>, org: &Slug) -> Result<Organization> {
        match load(ctx, OrgKey::new(org).primary_key()).await? {
            Some(Entity::Organization(o)) => Ok(Organization::new(o)),
            _ => Err(ApiError::NotFound(format!("organization {org}")).extend()),
        }
    }
}

/// A member of an organization.
#[derive(Clone)]
pub struct User {
    pub rec: Arc<model::User>,
    pub pages: Arc<Prefetched>,
}

impl User {
    pub fn new(rec: model::User) -> Self {
        User {
            rec: Arc::new(rec),
            pages: Arc::default(),
        }
    }
}

impl User {
    /// The user a reference names; `None` when there is none.
    pub(super) async fn load(
        ctx: &Context<'_>,
        org: &Slug,
        username: &Username,
    ) -> Result<Option<User>> {
        Ok(
            match load(ctx, UserKey::new(org, username).primary_key()).await? {
                Some(Entity::User(u)) => Some(User::new(u)),
                _ => None,
            },
        )
    }
}

/// A support ticket raised by a user.
#[derive(Clone)]
pub struct Ticket(pub Arc<model::Ticket>);

impl Ticket {
    pub fn new(rec: model::Ticket) -> Self {
        Ticket(Arc::new(rec))
    }
}

/// An order placed by a user for their organization.
#[derive(Clone)]
pub struct Order {
    pub rec: Arc<model::Order>,
    pub pages: Arc<Prefetched>,
}

impl Order {
    pub fn new(rec: model::Order) -> Self {
        Order {
            rec: Arc::new(rec),
            pages: Arc::default(),
        }
    }
}

/// One line of an order.
#[derive(Clone)]
pub struct OrderLine(pub model::OrderLine);

connection_type!(User, UserConnection, UserEdge);
connection_type!(Order, OrderConnection, OrderEdge);
connection_type!(Ticket, TicketConnection, TicketEdge);
