//! The entity types: thin `#[Object]` newtypes over the model records. Each holds its
//! record and the connection pages its parent's resolver already read (look-ahead), so a
//! field either serves what is there or makes its own one request.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::{Context, Enum, ErrorExtensions, Interface, Object, Result, ID};

use crate::graphql::connection::{
    Fetched, OrderConnection, PageArgs, Resolved, TicketConnection, UserConnection,
};
use crate::graphql::errors::ApiError;
use crate::graphql::ids::GlobalId;
use crate::graphql::query::{
    fetch_order_lines, fetch_org_orders, fetch_org_tickets, fetch_org_users, fetch_user_tickets,
};
use crate::graphql::{connection, RequestContext};
use crate::keys::{OrgKey, UserKey, GSI1, GSI2};
use crate::model::{self, Entity, Record};
use crate::store::PrimaryKey;

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

/// A prefetched page, or why it could not be read.
pub type PageSlot<R> = std::result::Result<Fetched<R>, Arc<ApiError>>;

/// Pages a parent's resolver read ahead, keyed by [`PageArgs::key`].
#[derive(Default)]
pub struct Prefetched {
    pub users: HashMap<String, PageSlot<model::User>>,
    pub orders: HashMap<String, PageSlot<model::Order>>,
    pub tickets: HashMap<String, PageSlot<model::Ticket>>,
    pub lines: Option<Vec<model::OrderLine>>,
}

fn rc<'a>(ctx: &Context<'a>) -> &'a RequestContext {
    ctx.data_unchecked::<RequestContext>()
}

fn loaded(e: Arc<ApiError>) -> async_graphql::Error {
    e.as_ref().extend()
}

/// Loads a referenced entity through the DataLoader; `None` when absent.
pub async fn load(ctx: &Context<'_>, key: PrimaryKey) -> Result<Option<Entity>> {
    rc(ctx).load(key).await.map_err(loaded)
}

async fn load_user(
    ctx: &Context<'_>,
    org: &crate::keys::Slug,
    username: &crate::keys::Username,
) -> Result<Option<User>> {
    Ok(
        match load(ctx, UserKey::new(org, username).primary_key()).await? {
            Some(Entity::User(u)) => Some(User::new(u)),
            _ => None,
        },
    )
}

async fn load_org(ctx: &Context<'_>, org: &crate::keys::Slug) -> Result<Organization> {
    match load(ctx, OrgKey::new(org).primary_key()).await? {
        Some(Entity::Organization(o)) => Ok(Organization::new(o)),
        _ => Err(ApiError::NotFound(format!("organization {org}")).extend()),
    }
}

/// Uses the page read ahead for these arguments, or reads it now.
async fn page_or<R: Clone, F>(slot: Option<&PageSlot<R>>, fetch: F) -> Result<Fetched<R>>
where
    F: std::future::Future<Output = std::result::Result<Fetched<R>, ApiError>>,
{
    match slot {
        Some(Ok(page)) => Ok(page.clone()),
        Some(Err(e)) => Err(e.as_ref().extend()),
        None => fetch.await.map_err(|e| e.extend()),
    }
}

fn resolve_args(
    ctx: &Context<'_>,
    connection: &str,
    first: Option<i32>,
    after: Option<String>,
    last: Option<i32>,
    before: Option<String>,
) -> Result<(PageArgs, Resolved)> {
    let args = PageArgs {
        first: first.map(i64::from),
        after,
        last: last.map(i64::from),
        before,
    };
    let resolved = args
        .resolve(&rc(ctx).cursors, connection)
        .map_err(|e| e.extend())?;
    Ok((args, resolved))
}

/// The cursor namespace of each connection: its kind and its partition.
pub fn users_connection(org: &crate::keys::Slug) -> String {
    format!("users:{}", OrgKey::new(org).partition())
}
pub fn orders_connection(org: &crate::keys::Slug) -> String {
    format!("orders:{}", OrgKey::new(org).partition())
}
pub fn status_connection(org: &crate::keys::Slug, status: model::TicketStatus) -> String {
    format!("status-tickets:{}", OrgKey::new(org).status_queue(status))
}
pub fn user_tickets_connection(
    org: &crate::keys::Slug,
    username: &crate::keys::Username,
) -> String {
    format!(
        "user-tickets:{}",
        UserKey::new(org, username).tickets_partition()
    )
}

// ---------------------------------------------------------------------------------------

/// An organization: the tenant that owns users, tickets and orders.
#[derive(Clone)]
pub struct Organization {
    pub rec: Arc<model::Organization>,
    pub pages: Arc<Prefetched>,
}

impl Organization {
    pub fn new(rec: model::Organization) -> Self {
        Organization {
            rec: Arc::new(rec),
            pages: Arc::default(),
        }
    }
}

#[Object]
impl Organization {
    /// Opaque global id, for `node(id)`.
    async fn id(&self) -> ID {
        ID(GlobalId::Organization(self.rec.slug.clone()).encode())
    }
    /// The organization's unique, URL-safe name (`acme`).
    async fn slug(&self) -> &str {
        self.rec.slug.as_str()
    }
    /// Display name.
    async fn name(&self) -> &str {
        &self.rec.name
    }
    async fn plan(&self) -> Plan {
        self.rec.plan.into()
    }
    /// RFC 3339, UTC.
    async fn created_at(&self) -> &str {
        &self.rec.created_at
    }
    /// Number of users; the same as `users.totalCount`.
    async fn user_count(&self) -> i32 {
        self.rec.user_count as i32
    }
    /// Number of orders placed; the same as `orders.totalCount`.
    async fn order_count(&self) -> i32 {
        self.rec.order_count as i32
    }
    /// Number of tickets raised in the organization, all statuses.
    async fn ticket_count(&self) -> i32 {
        self.rec.ticket_count as i32
    }
    /// The organization's users, by username. Read together with the organization in
    /// one Query when this is the first page.
    #[graphql(complexity = "crate::graphql::page_cost(first, last, child_complexity)")]
    async fn users(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<UserConnection> {
        let conn = users_connection(&self.rec.slug);
        let (args, resolved) = resolve_args(ctx, &conn, first, after, last, before)?;
        let fetched = page_or(self.pages.users.get(&args.key("")), async {
            fetch_org_users(rc(ctx), &self.rec.slug, &resolved)
                .await
                .map(|(_, p)| p)
        })
        .await?;
        Ok(connection::build(
            &rc(ctx).cursors,
            &conn,
            &resolved,
            fetched,
            self.rec.user_count,
            |u| u.keys().page_key(None),
            User::new,
        ))
    }
    /// The organization's orders, newest first. Read together with the organization in
    /// one Query when this is the first page.
    #[graphql(complexity = "crate::graphql::page_cost(first, last, child_complexity)")]
    async fn orders(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<OrderConnection> {
        let conn = orders_connection(&self.rec.slug);
        let (args, resolved) = resolve_args(ctx, &conn, first, after, last, before)?;
        let fetched = page_or(self.pages.orders.get(&args.key("")), async {
            fetch_org_orders(rc(ctx), &self.rec.slug, &resolved)
                .await
                .map(|(_, p)| p)
        })
        .await?;
        Ok(connection::build(
            &rc(ctx).cursors,
            &conn,
            &resolved,
            fetched,
            self.rec.order_count,
            |o| o.keys().page_key(None),
            Order::new,
        ))
    }
    /// The organization's tickets in one status, newest first: a work queue.
    #[graphql(complexity = "crate::graphql::page_cost(first, last, child_complexity)")]
    async fn tickets(
        &self,
        ctx: &Context<'_>,
        status: TicketStatus,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<TicketConnection> {
        let status: model::TicketStatus = status.into();
        let conn = status_connection(&self.rec.slug, status);
        let (args, resolved) = resolve_args(ctx, &conn, first, after, last, before)?;
        let fetched = page_or(
            self.pages.tickets.get(&args.key(status.as_str())),
            fetch_org_tickets(rc(ctx), &self.rec.slug, status, &resolved),
        )
        .await?;
        Ok(connection::build(
            &rc(ctx).cursors,
            &conn,
            &resolved,
            fetched,
            self.rec.ticket_count_in(status),
            |t| t.keys().page_key(Some(GSI2)),
            Ticket::new,
        ))
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

#[Object]
impl User {
    /// Opaque global id, for `node(id)`.
    async fn id(&self) -> ID {
        ID(GlobalId::User(self.rec.org.clone(), self.rec.username.clone()).encode())
    }
    /// Unique within the organization.
    async fn username(&self) -> &str {
        self.rec.username.as_str()
    }
    /// Unique across all organizations, lowercased.
    async fn email(&self) -> &str {
        self.rec.email.as_str()
    }
    async fn name(&self) -> &str {
        &self.rec.name
    }
    async fn role(&self) -> Role {
        self.rec.role.into()
    }
    /// RFC 3339, UTC.
    async fn created_at(&self) -> &str {
        &self.rec.created_at
    }
    /// Number of tickets this user requested; the same as `tickets.totalCount`.
    async fn ticket_count(&self) -> i32 {
        self.rec.ticket_count as i32
    }
    /// The user's organization.
    async fn organization(&self, ctx: &Context<'_>) -> Result<Organization> {
        load_org(ctx, &self.rec.org).await
    }
    /// Tickets this user requested, newest first. Read together with the user in one
    /// Query (GSI1) when this is the first page.
    #[graphql(complexity = "crate::graphql::page_cost(first, last, child_complexity)")]
    async fn tickets(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<TicketConnection> {
        let conn = user_tickets_connection(&self.rec.org, &self.rec.username);
        let (args, resolved) = resolve_args(ctx, &conn, first, after, last, before)?;
        let fetched = page_or(self.pages.tickets.get(&args.key("")), async {
            fetch_user_tickets(rc(ctx), &self.rec.org, &self.rec.username, &resolved)
                .await
                .map(|(_, p)| p)
        })
        .await?;
        Ok(connection::build(
            &rc(ctx).cursors,
            &conn,
            &resolved,
            fetched,
            self.rec.ticket_count,
            |t| t.keys().page_key(Some(GSI1)),
            Ticket::new,
        ))
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

#[Object]
impl Ticket {
    /// Opaque global id, for `node(id)`.
    async fn id(&self) -> ID {
        ID(GlobalId::Ticket(self.0.ticket_id).encode())
    }
    /// The plain ticket id (a ULID: sorts by creation time); `ticket(id)` accepts it too.
    async fn ticket_id(&self) -> String {
        self.0.ticket_id.to_string()
    }
    async fn title(&self) -> &str {
        &self.0.title
    }
    async fn body(&self) -> &str {
        &self.0.body
    }
    async fn status(&self) -> TicketStatus {
        self.0.status.into()
    }
    async fn priority(&self) -> TicketPriority {
        self.0.priority.into()
    }
    /// RFC 3339, UTC.
    async fn created_at(&self) -> &str {
        &self.0.created_at
    }
    /// RFC 3339, UTC.
    async fn updated_at(&self) -> &str {
        &self.0.updated_at
    }
    /// Bumped by every change; send it back as `expectedVersion` when changing the ticket.
    async fn version(&self) -> i32 {
        self.0.version as i32
    }
    /// Who raised the ticket.
    async fn requester(&self, ctx: &Context<'_>) -> Result<User> {
        load_user(ctx, &self.0.org, &self.0.requester)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("requester {}", self.0.requester)).extend())
    }
    /// Who works on the ticket, if anyone.
    async fn assignee(&self, ctx: &Context<'_>) -> Result<Option<User>> {
        match &self.0.assignee {
            Some(a) => load_user(ctx, &self.0.org, a).await,
            None => Ok(None),
        }
    }
    async fn organization(&self, ctx: &Context<'_>) -> Result<Organization> {
        load_org(ctx, &self.0.org).await
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

#[Object]
impl Order {
    /// Opaque global id, for `node(id)`.
    async fn id(&self) -> ID {
        ID(GlobalId::Order(self.rec.org.clone(), self.rec.order_id).encode())
    }
    /// The plain order id (a ULID: sorts by placement time); `order(id)` accepts it too.
    async fn order_id(&self) -> String {
        self.rec.order_id.to_string()
    }
    async fn status(&self) -> OrderStatus {
        self.rec.status.into()
    }
    /// RFC 3339, UTC.
    async fn placed_at(&self) -> &str {
        &self.rec.placed_at
    }
    /// ISO 4217 code.
    async fn currency(&self) -> &str {
        &self.rec.currency
    }
    /// Sum of the lines' `amountCents`.
    async fn total_cents(&self) -> i64 {
        self.rec.total_cents
    }
    /// Bumped by every change; send it back as `expectedVersion` when changing the order.
    async fn version(&self) -> i32 {
        self.rec.version as i32
    }
    /// Who placed the order.
    async fn buyer(&self, ctx: &Context<'_>) -> Result<User> {
        load_user(ctx, &self.rec.org, &self.rec.buyer)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("buyer {}", self.rec.buyer)).extend())
    }
    async fn organization(&self, ctx: &Context<'_>) -> Result<Organization> {
        load_org(ctx, &self.rec.org).await
    }
    /// The order's lines, by line number. Read together with the order in one Query
    /// (GSI1) by `Query.order`.
    async fn lines(&self, ctx: &Context<'_>) -> Result<Vec<OrderLine>> {
        let lines = match &self.pages.lines {
            Some(lines) => lines.clone(),
            None => {
                fetch_order_lines(rc(ctx), self.rec.order_id)
                    .await
                    .map_err(|e| e.extend())?
                    .1
            }
        };
        Ok(lines.into_iter().map(OrderLine).collect())
    }
}

/// One line of an order.
#[derive(Clone)]
pub struct OrderLine(pub model::OrderLine);

#[Object]
impl OrderLine {
    /// 1-based position in the order.
    async fn line_no(&self) -> i32 {
        i32::from(self.0.line_no.get())
    }
    async fn sku(&self) -> &str {
        &self.0.sku
    }
    async fn description(&self) -> &str {
        &self.0.description
    }
    async fn quantity(&self) -> i32 {
        self.0.quantity as i32
    }
    async fn unit_price_cents(&self) -> i64 {
        self.0.unit_price_cents
    }
    /// `quantity × unitPriceCents`.
    async fn amount_cents(&self) -> i64 {
        self.0.amount_cents
    }
}
