//! Organizations: the `Organization` type's fields, `Query.organization` with the look-ahead
//! of access patterns 2, 3 and 6, and `Mutation.createOrganization` (14).

use std::sync::Arc;

use async_graphql::{Context, ErrorExtensions, InputObject, Object, Result, SimpleObject, ID};
use futures::FutureExt;

use super::connection::{Fetched, Resolved};
use super::context::{load, prime, rc, RequestContext};
use super::errors::ApiError;
use super::ids::GlobalId;
use super::input::{answer, argument, fits, name, ApiResult};
use super::objects::{
    Order, OrderConnection, Organization, Plan, Ticket, TicketConnection, TicketStatus, User,
    UserConnection,
};
use super::prefetch::{fetched, read_ahead, selected, unseen, Fetch, PageRequest, Prefetched};
use super::scalars::int;
use crate::collections;
use crate::keys::{validate_slug, OrgKey, Slug, GSI2};
use crate::model::{self, Entity, Record};

/// The cursor namespace of each connection: its kind and its partition.
pub fn users_connection(org: &Slug) -> String {
    format!("users:{}", OrgKey::new(org).partition())
}
pub fn orders_connection(org: &Slug) -> String {
    format!("orders:{}", OrgKey::new(org).partition())
}
pub fn status_connection(org: &Slug, status: model::TicketStatus) -> String {
    format!("status-tickets:{}", OrgKey::new(org).status_queue(status))
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

impl Organization {
    /// A connection's `totalCount`: from the counts when it is selected, else unused.
    async fn total(
        &self,
        ctx: &Context<'_>,
        count: impl Fn(&model::Organization) -> u32,
    ) -> Result<u32> {
        if self.counted || !ctx.look_ahead().field("totalCount").exists() {
            return Ok(count(&self.rec));
        }
        Ok(count(&*self.counts(ctx).await?))
    }
}

/// Whether a selection of an organization asks for any of its counts.
fn counts_selected(ctx: &Context<'_>) -> bool {
    let org = ctx.look_ahead();
    ["userCount", "orderCount", "ticketCount"]
        .iter()
        .any(|f| org.field(f).exists())
        || ["users", "orders", "tickets"]
            .iter()
            .any(|c| org.field(c).field("totalCount").exists())
}

#[Object]
impl Organization {
    /// Opaque global id, for `node(id)`.
    pub(super) async fn id(&self) -> ID {
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
    /// Number of users; the same as `users.totalCount`. Exact: every write that adds or
    /// removes a user counts it in the same transaction (on one of the organization's
    /// counter shards, summed here).
    async fn user_count(&self, ctx: &Context<'_>) -> Result<i32> {
        Ok(int(self.counts(ctx).await?.user_count))
    }
    /// Number of orders placed; the same as `orders.totalCount`. Exact, as `userCount`.
    async fn order_count(&self, ctx: &Context<'_>) -> Result<i32> {
        Ok(int(self.counts(ctx).await?.order_count))
    }
    /// Number of tickets raised in the organization, all statuses. Exact, as `userCount`.
    async fn ticket_count(&self, ctx: &Context<'_>) -> Result<i32> {
        Ok(int(self.counts(ctx).await?.ticket_count))
    }
    /// The organization's users, by username. Read together with the organization in
    /// one Query when this is the first page.
    #[graphql(complexity = "crate::graphql::limits::page_cost(first, last, child_complexity)")]
    async fn users(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<UserConnection> {
        let org = &self.rec.slug;
        PageRequest::new(ctx, users_connection(org), first, after, last, before)?
            .serve(
                ctx,
                (&self.pages.users, ""),
                |page| async move { fetch_org_users(rc(ctx), org, &page).await.map(|p| p.1) },
                self.total(ctx, |o| o.user_count).await?,
                |u| u.keys().page_key(None),
                User::new,
            )
            .await
    }
    /// The organization's orders, newest first. Read together with the organization in
    /// one Query when this is the first page.
    #[graphql(complexity = "crate::graphql::limits::page_cost(first, last, child_complexity)")]
    async fn orders(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<OrderConnection> {
        let org = &self.rec.slug;
        PageRequest::new(ctx, orders_connection(org), first, after, last, before)?
            .serve(
                ctx,
                (&self.pages.orders, ""),
                |page| async move { fetch_org_orders(rc(ctx), org, &page).await.map(|p| p.1) },
                self.total(ctx, |o| o.order_count).await?,
                |o| o.keys().page_key(None),
                Order::new,
            )
            .await
    }
    /// The organization's tickets in one status, newest first: a work queue.
    #[graphql(complexity = "crate::graphql::limits::page_cost(first, last, child_complexity)")]
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
        let org = &self.rec.slug;
        PageRequest::new(
            ctx,
            status_connection(org, status),
            first,
            after,
            last,
            before,
        )?
        .serve(
            ctx,
            (&self.pages.tickets, status.as_str()),
            |page| async move { fetch_org_tickets(rc(ctx), org, status, &page).await },
            self.total(ctx, |o| o.ticket_count_in(status)).await?,
            |t| t.keys().page_key(Some(GSI2)),
            Ticket::new,
        )
        .await
    }
}

/// The root fields of organizations.
#[derive(Default)]
pub struct OrgQuery;

#[Object]
impl OrgQuery {
    /// An organization by slug; null when there is none. Selecting the first page of
    /// `users` or `orders` reads the organization and that page in one Query; otherwise
    /// the organization is one GetItem, concurrent with the pages selected below it.
    async fn organization(&self, ctx: &Context<'_>, slug: String) -> Result<Option<Organization>> {
        let rc = ctx.data_unchecked::<RequestContext>();
        let slug = argument(validate_slug("slug", &slug))?;
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
        // Without a first page to carry it, the organization is one GetItem through the
        // DataLoader, or one Query with its counter shards when counts are selected.
        let with_counts = !carries_parent && counts_selected(ctx);
        let parent_load = async {
            if carries_parent {
                Ok(None)
            } else if with_counts {
                match rc.counted_org(&slug).await {
                    Ok(org) => Ok(Some(org.map(|o| Entity::Organization((*o).clone())))),
                    Err(e) => Err(e.as_ref().extend()),
                }
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
            counted: carries_parent || with_counts,
            pages: Arc::new(Prefetched {
                users: users.into_iter().collect(),
                orders: orders.into_iter().collect(),
                tickets: tickets.into_iter().collect(),
                lines: None,
            }),
        }))
    }
}

/// A new organization.
#[derive(InputObject)]
pub struct CreateOrganizationInput {
    /// Unique, URL-safe name: lowercase letters, digits and `-`, starting with a letter or
    /// digit, at most 40 characters. It cannot be changed later.
    pub slug: String,
    /// Display name, at most 100 characters.
    pub name: String,
    pub plan: Plan,
}

#[derive(SimpleObject)]
pub struct CreateOrganizationPayload {
    /// The organization as created (no users yet).
    pub organization: Organization,
}

/// The mutations of organizations.
#[derive(Default)]
pub struct OrgMutation;

#[Object]
impl OrgMutation {
    /// Creates an organization. `CONFLICT` (`field: "slug"`) when the slug is taken.
    /// With auth on, admins only, and only the organization their token names
    /// (`FORBIDDEN` otherwise). One request: a TransactWriteItems of the organization and its
    /// counter shards, each put only where none exists.
    async fn create_organization(
        &self,
        ctx: &Context<'_>,
        input: CreateOrganizationInput,
    ) -> Result<CreateOrganizationPayload> {
        answer(create_organization(rc(ctx), input).await).map(|org| {
            // A new organization counts nothing: its record holds every count.
            CreateOrganizationPayload {
                organization: Organization {
                    counted: true,
                    ..Organization::new(org)
                },
            }
        })
    }
}

pub(super) async fn create_organization(
    rc: &RequestContext,
    input: CreateOrganizationInput,
) -> ApiResult<model::Organization> {
    let org = model::Organization::new(
        validate_slug("slug", &input.slug)?,
        name("name", &input.name)?,
        input.plan.into(),
        model::now(),
    );
    fits("name", &org)?;
    rc.access.require_admin("create an organization")?;
    if rc.access.org().is_some_and(|own| *own != org.slug) {
        return Err(ApiError::Forbidden(
            "a token may create only its own organization (its `org` claim)".into(),
        ));
    }
    collections::create_org(rc.store.as_ref(), &org).await?;
    rc.after_write(vec![org.clone().into()]).await;
    Ok(org)
}
