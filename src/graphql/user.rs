//! Users: the `User` type's fields, `Query.user` with the look-ahead of access pattern 4,
//! and the user mutations (10, 15, 16).

use std::sync::Arc;

use async_graphql::{Context, ErrorExtensions, InputObject, Object, Result, SimpleObject, ID};
use futures::FutureExt;

use super::connection::Resolved;
use super::context::{load, prime, rc, RequestContext};
use super::errors::ApiError;
use super::ids::GlobalId;
use super::input::{answer, argument, fits, name, visible, ApiResult};
use super::objects::{Organization, Role, Ticket, TicketConnection, User};
use super::prefetch::{fetched, read_ahead, selected, unseen, Fetch, PageRequest, Prefetched};
use super::scalars::int;
use crate::collections::{self, UserChange};
use crate::keys::{
    validate_email, validate_slug, validate_username, Slug, UserKey, Username, GSI1,
};
use crate::model::{self, Entity, Record};

/// The cursor namespace of a user's tickets: the connection's kind and its partition.
pub fn user_tickets_connection(org: &Slug, username: &Username) -> String {
    format!(
        "user-tickets:{}",
        UserKey::new(org, username).tickets_partition()
    )
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

#[Object]
impl User {
    /// Opaque global id, for `node(id)`.
    pub(super) async fn id(&self) -> ID {
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
        int(self.rec.ticket_count)
    }
    /// The user's organization.
    async fn organization(&self, ctx: &Context<'_>) -> Result<Organization> {
        Organization::load(ctx, &self.rec.org).await
    }
    /// Tickets this user requested, newest first. Read together with the user in one
    /// Query (GSI1) when this is the first page.
    #[graphql(complexity = "crate::graphql::limits::page_cost(first, last, child_complexity)")]
    async fn tickets(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<TicketConnection> {
        let (org, username) = (&self.rec.org, &self.rec.username);
        let conn = user_tickets_connection(org, username);
        PageRequest::new(ctx, conn, first, after, last, before)?
            .serve(
                ctx,
                (&self.pages.tickets, ""),
                |page| async move {
                    fetch_user_tickets(rc(ctx), org, username, &page)
                        .await
                        .map(|p| p.1)
                },
                self.rec.ticket_count,
                |t| t.keys().page_key(Some(GSI1)),
                Ticket::new,
            )
            .await
    }
}

/// The root fields of users.
#[derive(Default)]
pub struct UserQuery;

#[Object]
impl UserQuery {
    /// A user by organization and username; null when there is none. Selecting the first
    /// page of `tickets` reads the user and that page in one Query; otherwise the user is
    /// one GetItem, concurrent with the pages selected below it.
    async fn user(&self, ctx: &Context<'_>, org: String, username: String) -> Result<Option<User>> {
        let rc = ctx.data_unchecked::<RequestContext>();
        let org = argument(validate_slug("org", &org))?;
        let username = argument(validate_username("username", &username))?;
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
}

/// A new member of an organization.
#[derive(InputObject)]
pub struct CreateUserInput {
    /// The organization's slug.
    pub org: String,
    /// Unique within the organization; same rules as an organization slug. It cannot be
    /// changed later.
    pub username: String,
    /// Unique across all organizations; stored lowercased, at most 254 characters.
    pub email: String,
    /// Display name, at most 100 characters.
    pub name: String,
    pub role: Role,
}

#[derive(SimpleObject)]
pub struct CreateUserPayload {
    /// The user as created.
    pub user: User,
}

/// A change to a user: give at least one of `name`, `email`, `role`; what is left out
/// stays as it is.
#[derive(InputObject)]
pub struct UpdateUserInput {
    /// The organization's slug.
    pub org: String,
    pub username: String,
    /// New display name, at most 100 characters.
    pub name: Option<String>,
    /// New email address, unique across all organizations.
    pub email: Option<String>,
    pub role: Option<Role>,
}

#[derive(SimpleObject)]
pub struct UpdateUserPayload {
    /// The user as changed.
    pub user: User,
}

/// The user to remove from an organization.
#[derive(InputObject)]
pub struct DeleteUserInput {
    /// The organization's slug.
    pub org: String,
    pub username: String,
}

#[derive(SimpleObject)]
pub struct DeleteUserPayload {
    /// The global id the user had: drop it from client caches.
    pub deleted_user_id: ID,
    /// The user as it was just before deletion.
    pub user: User,
}

/// The mutations of users.
#[derive(Default)]
pub struct UserMutation;

#[Object]
impl UserMutation {
    /// Adds a user to an organization. `CONFLICT` when the username is taken in the
    /// organization (`field: "username"`) or the email anywhere (`field: "email"`);
    /// `NOT_FOUND` (`field: "organization"`) when there is no such organization. Admins
    /// only (`FORBIDDEN`). One request: a TransactWriteItems.
    async fn create_user(
        &self,
        ctx: &Context<'_>,
        input: CreateUserInput,
    ) -> Result<CreateUserPayload> {
        answer(create_user(rc(ctx), input).await).map(|u| CreateUserPayload { user: User::new(u) })
    }

    /// Changes a user's name, email or role. `NOT_FOUND` (`field: "user"`) when there is
    /// no such user; `CONFLICT` (`field: "email"`) when the new email is taken. Admins
    /// only (`FORBIDDEN`). One
    /// request (an UpdateItem); two for a new email (a GetItem of the user, then a
    /// TransactWriteItems that moves the email's uniqueness marker too).
    async fn update_user(
        &self,
        ctx: &Context<'_>,
        input: UpdateUserInput,
    ) -> Result<UpdateUserPayload> {
        answer(update_user(rc(ctx), input).await).map(|u| UpdateUserPayload { user: User::new(u) })
    }

    /// Removes a user from an organization and frees their email. Only a user nothing
    /// refers to can go: `CONFLICT` with `field` `tickets` (they requested tickets),
    /// `assignedTickets` (tickets are assigned to them) or `orders` (they placed orders);
    /// reassign or keep them. `NOT_FOUND` (`field: "user"`) when there is no such user.
    /// Admins only (`FORBIDDEN`). Two requests: a GetItem of the user, then a TransactWriteItems.
    async fn delete_user(
        &self,
        ctx: &Context<'_>,
        input: DeleteUserInput,
    ) -> Result<DeleteUserPayload> {
        answer(delete_user(rc(ctx), input).await).map(|u| DeleteUserPayload {
            deleted_user_id: ID(GlobalId::User(u.org.clone(), u.username.clone()).encode()),
            user: User::new(u),
        })
    }
}

pub(super) async fn create_user(
    rc: &RequestContext,
    input: CreateUserInput,
) -> ApiResult<model::User> {
    let user = model::User {
        org: validate_slug("org", &input.org)?,
        username: validate_username("username", &input.username)?,
        email: validate_email("email", &input.email)?,
        name: name("name", &input.name)?,
        role: input.role.into(),
        created_at: model::now(),
        ticket_count: 0,
        assigned_ticket_count: 0,
        order_count: 0,
    };
    fits("name", &user)?;
    rc.access.require_admin("add users")?;
    visible(rc, &user.org, "organization")?;
    collections::create_user(rc.store.as_ref(), &user).await?;
    rc.after_write(vec![user.clone().into()]).await;
    Ok(user)
}

pub(super) async fn update_user(
    rc: &RequestContext,
    input: UpdateUserInput,
) -> ApiResult<model::User> {
    let org = validate_slug("org", &input.org)?;
    let username = validate_username("username", &input.username)?;
    let change = UserChange {
        name: input.name.as_deref().map(|n| name("name", n)).transpose()?,
        email: input
            .email
            .as_deref()
            .map(|e| validate_email("email", e))
            .transpose()?,
        role: input.role.map(Into::into),
    };
    if change.name.is_none() && change.email.is_none() && change.role.is_none() {
        return Err(ApiError::BadUserInput {
            message: "nothing to change: give name, email or role".into(),
            field: None,
        });
    }
    rc.access.require_admin("change users")?;
    visible(rc, &org, "user")?;
    let user = collections::update_user(rc.store.as_ref(), &org, &username, &change, None).await?;
    rc.after_write(vec![user.clone().into()]).await;
    Ok(user)
}

/// The user as it was just before deletion.
pub(super) async fn delete_user(
    rc: &RequestContext,
    input: DeleteUserInput,
) -> ApiResult<model::User> {
    let org = validate_slug("org", &input.org)?;
    let username = validate_username("username", &input.username)?;
    rc.access.require_admin("remove users")?;
    visible(rc, &org, "user")?;
    let user = collections::delete_user(rc.store.as_ref(), &org, &username).await?;
    rc.after_write(Vec::new()).await;
    Ok(user)
}
