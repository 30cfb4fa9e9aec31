//! The root query and the look-ahead that makes each access pattern one request.
//!
//! A root resolver looks at the selection below it before reading anything: every
//! connection selected under the entity (with its arguments) becomes one Query, all of
//! them issued concurrently; a first page in the connection's own order carries the parent
//! in the same Query (the parent sits at the edge of its children's item collection). Only
//! when no such Query reads the parent is it loaded on its own, through the DataLoader,
//! concurrently with the pages. The pages are handed down to the entity, whose connection
//! fields then serve them without another request.

use std::sync::Arc;

use async_graphql::{Context, ErrorExtensions, Object, Result, Value, ID};
use futures::future::BoxFuture;
use futures::FutureExt;

use crate::collections::{self, MAX_ORDER_LINES};
use crate::graphql::connection::{Fetched, PageArgs, Resolved};
use crate::graphql::errors::ApiError;
use crate::graphql::ids::GlobalId;
use crate::graphql::types::{
    load, orders_connection, status_connection, user_tickets_connection, users_connection, Node,
    Order, Organization, PageSlot, Prefetched, Ticket, User,
};
use crate::graphql::RequestContext;
use crate::keys::{
    validate_slug, validate_username, Id, OrgKey, Slug, TicketKey, UserKey, Username,
};
use crate::model::{self, Entity, Record};
use crate::store::validate::MAX_BATCH_GET_KEYS;

/// Most ids `nodes` takes in one call: one BatchGetItem.
pub const MAX_NODES: usize = MAX_BATCH_GET_KEYS;

type Fetch<P, C> = std::result::Result<(Option<P>, Fetched<C>), ApiError>;

/// One page to read ahead: its arguments' key, whether it can carry the parent, the read.
type Job<'a, P, C> = (String, bool, BoxFuture<'a, Fetch<P, C>>);

fn fetched<C>(items: Vec<C>, last_evaluated_key: Option<crate::store::PageKey>) -> Fetched<C> {
    Fetched {
        items,
        more: last_evaluated_key.is_some(),
    }
}

/// What a read of a partition the caller may not see answers, without reading it: what
/// a missing parent with no children answers (no existence oracle).
fn unseen<P, C>() -> Fetch<P, C> {
    Ok((None, fetched(Vec::new(), None)))
}

/// Feeds what a request read into its DataLoader, so references to it cost nothing.
async fn prime<R: Record + Clone + Into<Entity>>(rc: &RequestContext, records: &[R]) {
    rc.loader
        .feed_many(records.iter().map(|r| (r.primary_key(), r.clone().into())))
        .await;
}

/// Access pattern 2 (and its later pages).
pub async fn fetch_org_users(
    rc: &RequestContext,
    org: &Slug,
    page: &Resolved,
) -> Fetch<model::Organization, model::User> {
    if !rc.sees(org) {
        return unseen();
    }
    let out = collections::get_org_with_users(rc.store.as_ref(), org, page.repo_page()).await?;
    prime(rc, &out.users).await;
    prime(rc, out.org.as_slice()).await;
    Ok((out.org, fetched(out.users, out.last_evaluated_key)))
}

/// Access pattern 3 (and its later pages).
pub async fn fetch_org_orders(
    rc: &RequestContext,
    org: &Slug,
    page: &Resolved,
) -> Fetch<model::Organization, model::Order> {
    if !rc.sees(org) {
        return unseen();
    }
    let out = collections::get_org_with_orders(rc.store.as_ref(), org, page.repo_page()).await?;
    prime(rc, &out.orders).await;
    prime(rc, out.org.as_slice()).await;
    Ok((out.org, fetched(out.orders, out.last_evaluated_key)))
}

/// Access pattern 4 (and its later pages).
pub async fn fetch_user_tickets(
    rc: &RequestContext,
    org: &Slug,
    username: &Username,
    page: &Resolved,
) -> Fetch<model::User, model::Ticket> {
    if !rc.sees(org) {
        return unseen();
    }
    let out =
        collections::get_user_with_tickets(rc.store.as_ref(), org, username, page.repo_page())
            .await?;
    prime(rc, &out.tickets).await;
    prime(rc, out.user.as_slice()).await;
    Ok((out.user, fetched(out.tickets, out.last_evaluated_key)))
}

/// Access pattern 6.
pub async fn fetch_org_tickets(
    rc: &RequestContext,
    org: &Slug,
    status: model::TicketStatus,
    page: &Resolved,
) -> std::result::Result<Fetched<model::Ticket>, ApiError> {
    if !rc.sees(org) {
        return Ok(fetched(Vec::new(), None));
    }
    let out =
        collections::list_org_tickets_by_status(rc.store.as_ref(), org, status, page.repo_page())
            .await?;
    prime(rc, &out.tickets).await;
    Ok(fetched(out.tickets, out.last_evaluated_key))
}

/// Access pattern 7: the order and all its lines (at most [`MAX_ORDER_LINES`]). The order
/// id names no organization, so the order is read, and another organization's answers as
/// a missing one: no order, no lines.
pub async fn fetch_order_lines(
    rc: &RequestContext,
    order_id: Id,
) -> std::result::Result<(Option<model::Order>, Vec<model::OrderLine>), ApiError> {
    let page = collections::Page::first(MAX_ORDER_LINES as u32);
    let out = collections::get_order_with_lines(rc.store.as_ref(), order_id, page).await?;
    match out.order {
        Some(order) if rc.sees(&order.org) => {
            prime(rc, std::slice::from_ref(&order)).await;
            Ok((Some(order), out.lines))
        }
        _ => Ok((None, Vec::new())),
    }
}

/// The arguments of every selection of `field` under the current field (aliases and
/// fragments included), as far as they can be read ahead; repeats are dropped.
fn selected(ctx: &Context<'_>, field: &str) -> Vec<(PageArgs, Option<model::TicketStatus>)> {
    let mut out: Vec<(PageArgs, Option<model::TicketStatus>)> = Vec::new();
    for sel in ctx.look_ahead().field(field).selection_fields() {
        let Ok(arguments) = sel.arguments() else {
            continue;
        };
        let mut args = PageArgs::default();
        let mut status = None;
        for (name, value) in arguments {
            match (name.as_str(), value) {
                ("first", Value::Number(n)) => args.first = n.as_i64(),
                ("last", Value::Number(n)) => args.last = n.as_i64(),
                ("after", Value::String(s)) => args.after = Some(s),
                ("before", Value::String(s)) => args.before = Some(s),
                ("status", Value::Enum(s)) => status = s.as_str().parse().ok(),
                ("status", Value::String(s)) => status = s.parse().ok(),
                _ => {}
            }
        }
        if !out.contains(&(args.clone(), status)) {
            out.push((args, status));
        }
    }
    out
}

/// The parent found by the pages read ahead: `Some(None)` when a first page showed it
/// does not exist, `None` when no page read it.
type Parent<P> = Option<Option<P>>;

/// Reads ahead, concurrently, every page of one connection kind selected below the
/// current field, keeping the parent when a first page brought it.
async fn read_ahead<P: Send, C: Send>(
    jobs: Vec<Job<'_, P, C>>,
) -> (Parent<P>, Vec<(String, PageSlot<C>)>) {
    let (keys, futs): (Vec<(String, bool)>, Vec<_>) = jobs
        .into_iter()
        .map(|(k, first, f)| ((k, first), f))
        .unzip();
    let results = futures::future::join_all(futs).await;
    let mut parent = None;
    let mut slots = Vec::new();
    for ((key, first_forward), result) in keys.into_iter().zip(results) {
        match result {
            Ok((p, page)) => {
                if first_forward && parent.is_none() {
                    parent = Some(p);
                }
                slots.push((key, Ok(page)));
            }
            Err(e) => slots.push((key, Err(Arc::new(e)))),
        }
    }
    (parent, slots)
}

fn input<T>(r: std::result::Result<T, crate::keys::KeyError>) -> Result<T> {
    r.map_err(|e| ApiError::from(e).extend())
}

/// A ticket id given as a global id or as the plain ULID; `None` for another type's id.
fn ticket_id(id: &str) -> Result<Option<Id>> {
    if let Ok(plain) = Id::parse(id) {
        return Ok(Some(plain));
    }
    match GlobalId::decode("id", id).map_err(|e| e.extend())? {
        GlobalId::Ticket(t) => Ok(Some(t)),
        _ => Ok(None),
    }
}

/// An order id given as a global id (which names the organization too) or as the plain
/// ULID; `None` for another type's id.
fn order_id(id: &str) -> Result<Option<(Option<Slug>, Id)>> {
    if let Ok(plain) = Id::parse(id) {
        return Ok(Some((None, plain)));
    }
    match GlobalId::decode("id", id).map_err(|e| e.extend())? {
        GlobalId::Order(org, o) => Ok(Some((Some(org), o))),
        _ => Ok(None),
    }
}

pub struct Query;

#[Object]
impl Query {
    /// An organization by slug; null when there is none. Selecting the first page of
    /// `users` or `orders` reads the organization and that page in one Query; otherwise
    /// the organization is one GetItem, concurrent with the pages selected below it.
    async fn organization(&self, ctx: &Context<'_>, slug: String) -> Result<Option<Organization>> {
        let rc = ctx.data_unchecked::<RequestContext>();
        let slug = input(validate_slug("slug", &slug))?;
        let mut user_jobs = Vec::new();
        let mut order_jobs = Vec::new();
        let mut ticket_jobs = Vec::new();
        for (args, _) in selected(ctx, "users") {
            let page = args
                .resolve(&rc.cursors, &users_connection(&slug))
                .map_err(|e| e.extend())?;
            {
                let slug = slug.clone();
                let first = page.is_first_forward();
                let fut = async move { fetch_org_users(rc, &slug, &page).await }.boxed();
                user_jobs.push((args.key(""), first, fut));
            }
        }
        for (args, _) in selected(ctx, "orders") {
            let page = args
                .resolve(&rc.cursors, &orders_connection(&slug))
                .map_err(|e| e.extend())?;
            {
                let slug = slug.clone();
                let first = page.is_first_forward();
                let fut = async move { fetch_org_orders(rc, &slug, &page).await }.boxed();
                order_jobs.push((args.key(""), first, fut));
            }
        }
        for (args, status) in selected(ctx, "tickets") {
            let Some(status) = status else { continue };
            let page = args
                .resolve(&rc.cursors, &status_connection(&slug, status))
                .map_err(|e| e.extend())?;
            {
                let slug = slug.clone();
                let fut = async move {
                    fetch_org_tickets(rc, &slug, status, &page)
                        .await
                        .map(|p| (None::<model::Organization>, p))
                }
                .boxed();
                ticket_jobs.push((args.key(status.as_str()), false, fut));
            }
        }
        // Arguments and cursors were checked first, as for any organization; another
        // organization's then answers as a missing one, without a read.
        if !rc.sees(&slug) {
            return Ok(None);
        }
        let carries_parent = user_jobs.iter().any(|(_, first, _)| *first)
            || order_jobs.iter().any(|(_, first, _)| *first);
        let parent_load = async {
            if carries_parent {
                Ok(None)
            } else {
                load(ctx, OrgKey::new(&slug).primary_key()).await.map(Some)
            }
        };
        let ((users_parent, users), (orders_parent, orders), (_, tickets), loaded) = futures::join!(
            read_ahead(user_jobs),
            read_ahead(order_jobs),
            read_ahead(ticket_jobs),
            parent_load
        );
        let parent = match (users_parent.or(orders_parent), loaded?) {
            (Some(from_query), _) => from_query,
            (None, Some(Some(Entity::Organization(o)))) => Some(o),
            (None, _) => None,
        };
        let Some(rec) = parent else {
            // The first page that should have carried it failed: say why.
            let failed = users
                .iter()
                .find_map(|(_, r)| r.as_ref().err())
                .or_else(|| orders.iter().find_map(|(_, r)| r.as_ref().err()));
            if let Some(e) = failed.filter(|_| carries_parent) {
                return Err(e.as_ref().extend());
            }
            return Ok(None);
        };
        Ok(Some(Organization {
            rec: Arc::new(rec),
            pages: Arc::new(Prefetched {
                users: users.into_iter().collect(),
                orders: orders.into_iter().collect(),
                tickets: tickets.into_iter().collect(),
                lines: None,
            }),
        }))
    }

    /// A user by organization and username; null when there is none. Selecting the first
    /// page of `tickets` reads the user and that page in one Query; otherwise the user is
    /// one GetItem, concurrent with the pages selected below it.
    async fn user(&self, ctx: &Context<'_>, org: String, username: String) -> Result<Option<User>> {
        let rc = ctx.data_unchecked::<RequestContext>();
        let org = input(validate_slug("org", &org))?;
        let username = input(validate_username("username", &username))?;
        let mut jobs = Vec::new();
        for (args, _) in selected(ctx, "tickets") {
            let page = args
                .resolve(&rc.cursors, &user_tickets_connection(&org, &username))
                .map_err(|e| e.extend())?;
            {
                let (org, username) = (org.clone(), username.clone());
                let first = page.is_first_forward();
                let fut =
                    async move { fetch_user_tickets(rc, &org, &username, &page).await }.boxed();
                jobs.push((args.key(""), first, fut));
            }
        }
        if !rc.sees(&org) {
            return Ok(None);
        }
        let carries_parent = jobs.iter().any(|(_, first, _)| *first);
        let parent_load = async {
            if carries_parent {
                Ok(None)
            } else {
                load(ctx, UserKey::new(&org, &username).primary_key())
                    .await
                    .map(Some)
            }
        };
        let ((from_query, tickets), loaded) = futures::join!(read_ahead(jobs), parent_load);
        let parent = match (from_query, loaded?) {
            (Some(p), _) => p,
            (None, Some(Some(Entity::User(u)))) => Some(u),
            (None, _) => None,
        };
        let Some(rec) = parent else {
            let failed = tickets.iter().find_map(|(_, r)| r.as_ref().err());
            if let Some(e) = failed.filter(|_| carries_parent) {
                return Err(e.as_ref().extend());
            }
            return Ok(None);
        };
        Ok(Some(User {
            rec: Arc::new(rec),
            pages: Arc::new(Prefetched {
                tickets: tickets.into_iter().collect(),
                ..Default::default()
            }),
        }))
    }

    /// A ticket by its global `id` or its plain `ticketId`; null when there is none.
    async fn ticket(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Ticket>> {
        let Some(ticket_id) = ticket_id(&id)? else {
            return Ok(None);
        };
        Ok(
            match load(ctx, TicketKey::new(ticket_id).primary_key()).await? {
                Some(Entity::Ticket(t)) => Some(Ticket::new(t)),
                _ => None,
            },
        )
    }

    /// An order by its global `id` or its plain `orderId`, with its lines, in one Query;
    /// null when there is none.
    async fn order(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Order>> {
        let rc = ctx.data_unchecked::<RequestContext>();
        let Some((org, order_id)) = order_id(&id)? else {
            return Ok(None);
        };
        if org.as_ref().is_some_and(|org| !rc.sees(org)) {
            return Ok(None);
        }
        let (order, lines) = fetch_order_lines(rc, order_id)
            .await
            .map_err(|e| e.extend())?;
        Ok(order
            .filter(|o| org.as_ref().is_none_or(|org| *org == o.org))
            .map(|o| Order {
                rec: Arc::new(o),
                pages: Arc::new(Prefetched {
                    lines: Some(lines),
                    ..Default::default()
                }),
            }))
    }

    /// Any entity by global id; null when there is none.
    async fn node(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Node>> {
        let id = GlobalId::decode("id", &id).map_err(|e| e.extend())?;
        if id
            .org()
            .is_some_and(|org| !ctx.data_unchecked::<RequestContext>().sees(org))
        {
            return Ok(None);
        }
        Ok(load(ctx, id.key()).await?.and_then(Node::from_entity))
    }

    /// Entities by global id, in the order asked, null where there is none: one
    /// BatchGetItem for up to 100 ids.
    #[graphql(complexity = "ids.len() * child_complexity + 1")]
    async fn nodes(&self, ctx: &Context<'_>, ids: Vec<ID>) -> Result<Vec<Option<Node>>> {
        if ids.len() > MAX_NODES {
            return Err(ApiError::bad_input(
                "ids",
                format!("at most {MAX_NODES} ids per call, got {}", ids.len()),
            )
            .extend());
        }
        let ids = ids
            .iter()
            .map(|id| GlobalId::decode("ids", id))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| e.extend())?;
        let rc = ctx.data_unchecked::<RequestContext>();
        // Ids naming another organization are not read: they answer null like missing ones.
        let found = futures::future::join_all(ids.iter().map(|id| async move {
            match id.org() {
                Some(org) if !rc.sees(org) => Ok(None),
                _ => rc.load(id.key()).await,
            }
        }))
        .await;
        found
            .into_iter()
            .map(|r| {
                r.map(|e| e.and_then(Node::from_entity))
                    .map_err(|e| e.as_ref().extend())
            })
            .collect()
    }
}
