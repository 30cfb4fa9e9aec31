//! Tickets: the `Ticket` type's fields, `Query.ticket` (access pattern 5) and the ticket
//! mutations (11, 13).

use async_graphql::{
    Context, ErrorExtensions, InputObject, MaybeUndefined, Object, Result, SimpleObject, ID,
};

use super::context::{load, rc, RequestContext};
use super::errors::ApiError;
use super::ids::GlobalId;
use super::input::{
    answer, fits, text, ticket_id, version, visible, ApiResult, MAX_BODY_CHARS, MAX_TITLE_CHARS,
};
use super::objects::{Organization, Ticket, TicketPriority, TicketStatus, User};
use super::scalars::int;
use crate::collections::{self, TicketChange};
use crate::keys::{validate_slug, validate_username, Id, TicketKey};
use crate::model::{self, Entity};

#[Object]
impl Ticket {
    /// Opaque global id, for `node(id)`.
    pub(super) async fn id(&self) -> ID {
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
        int(self.0.version)
    }
    /// Who raised the ticket.
    async fn requester(&self, ctx: &Context<'_>) -> Result<User> {
        User::load(ctx, &self.0.org, &self.0.requester)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("requester {}", self.0.requester)).extend())
    }
    /// Who works on the ticket, if anyone.
    async fn assignee(&self, ctx: &Context<'_>) -> Result<Option<User>> {
        match &self.0.assignee {
            Some(a) => User::load(ctx, &self.0.org, a).await,
            None => Ok(None),
        }
    }
    async fn organization(&self, ctx: &Context<'_>) -> Result<Organization> {
        Organization::load(ctx, &self.0.org).await
    }
}

/// A ticket id given as a global id or as the plain ULID; `None` for another type's id.
fn ticket_id_arg(id: &str) -> Result<Option<Id>> {
    if let Ok(plain) = Id::parse(id) {
        return Ok(Some(plain));
    }
    match GlobalId::decode("id", id).map_err(|e| e.extend())? {
        GlobalId::Ticket(t) => Ok(Some(t)),
        _ => Ok(None),
    }
}

/// The root fields of tickets.
#[derive(Default)]
pub struct TicketQuery;

#[Object]
impl TicketQuery {
    /// A ticket by its global `id` or its plain `ticketId`; null when there is none.
    async fn ticket(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Ticket>> {
        let Some(ticket_id) = ticket_id_arg(&id)? else {
            return Ok(None);
        };
        Ok(
            match load(ctx, TicketKey::new(ticket_id).primary_key()).await? {
                Some(Entity::Ticket(t)) => Some(Ticket::new(t)),
                _ => None,
            },
        )
    }
}

/// A new ticket. It starts `OPEN`, at version 1.
#[derive(InputObject)]
pub struct CreateTicketInput {
    /// The organization's slug.
    pub org: String,
    /// Username of who raises the ticket; a member of the organization.
    pub requester: String,
    /// At most 200 characters, one line.
    pub title: String,
    /// At most 10 000 characters; line breaks allowed.
    pub body: String,
    pub priority: TicketPriority,
    /// Username of who works on it; a member of the organization. Leave it out for an
    /// unassigned ticket.
    pub assignee: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateTicketPayload {
    /// The ticket as created.
    pub ticket: Ticket,
}

/// A change to a ticket, guarded by the version the client last read: give at least one
/// field to change; what is left out stays as it is.
#[derive(InputObject)]
pub struct UpdateTicketInput {
    /// The ticket's global `id` or its plain `ticketId`.
    pub ticket_id: ID,
    /// The `version` the change is based on. When the ticket has moved on since, nothing
    /// is written and the answer is `VERSION_MISMATCH` with `extensions.currentVersion`.
    pub expected_version: i32,
    pub status: Option<TicketStatus>,
    pub priority: Option<TicketPriority>,
    /// Username of the new assignee; an explicit `null` unassigns the ticket, leaving the
    /// field out keeps the assignee.
    pub assignee: MaybeUndefined<String>,
    /// At most 200 characters, one line.
    pub title: Option<String>,
    /// At most 10 000 characters; line breaks allowed.
    pub body: Option<String>,
}

#[derive(SimpleObject)]
pub struct UpdateTicketPayload {
    /// The ticket as changed, at its new `version`.
    pub ticket: Ticket,
}

/// The mutations of tickets.
#[derive(Default)]
pub struct TicketMutation;

#[Object]
impl TicketMutation {
    /// Raises a ticket, `OPEN` at version 1, counted on the organization and the
    /// requester. `NOT_FOUND` when the organization, the requester or the assignee does
    /// not exist (`field` says which). One request: a TransactWriteItems.
    async fn create_ticket(
        &self,
        ctx: &Context<'_>,
        input: CreateTicketInput,
    ) -> Result<CreateTicketPayload> {
        answer(create_ticket(rc(ctx), input).await).map(|t| CreateTicketPayload {
            ticket: Ticket::new(t),
        })
    }

    /// Changes a ticket: status (moving it between the status queues), priority,
    /// assignee, title or body. Send the `version` you read as `expectedVersion`: when
    /// the ticket changed since, nothing is written and the answer is `VERSION_MISMATCH`
    /// with `extensions.currentVersion`; read it again and retry. `NOT_FOUND` when the
    /// ticket (`field: "ticket"`) or the new assignee (`field: "assignee"`) does not
    /// exist. Two requests: a GetItem of the ticket, then the write.
    async fn update_ticket(
        &self,
        ctx: &Context<'_>,
        input: UpdateTicketInput,
    ) -> Result<UpdateTicketPayload> {
        answer(update_ticket(rc(ctx), input).await).map(|t| UpdateTicketPayload {
            ticket: Ticket::new(t),
        })
    }
}

pub(super) async fn create_ticket(
    rc: &RequestContext,
    input: CreateTicketInput,
) -> ApiResult<model::Ticket> {
    let org = validate_slug("org", &input.org)?;
    let requester = validate_username("requester", &input.requester)?;
    let title = text("title", &input.title, MAX_TITLE_CHARS, false)?;
    let body = text("body", &input.body, MAX_BODY_CHARS, true)?;
    let assignee = input
        .assignee
        .as_deref()
        .map(|a| validate_username("assignee", a))
        .transpose()?;
    let now = model::now();
    let ticket = model::Ticket {
        ticket_id: Id::generate(),
        org,
        title,
        body,
        status: model::TicketStatus::Open,
        priority: input.priority.into(),
        requester,
        assignee,
        created_at: now.clone(),
        updated_at: now,
        version: 1,
    };
    fits("body", &ticket)?;
    visible(rc, &ticket.org, "organization")?;
    collections::create_ticket(rc.store.as_ref(), &ticket).await?;
    rc.after_write(vec![ticket.clone().into()]).await;
    Ok(ticket)
}

pub(super) async fn update_ticket(
    rc: &RequestContext,
    input: UpdateTicketInput,
) -> ApiResult<model::Ticket> {
    let id = ticket_id("ticketId", &input.ticket_id)?;
    let expected = version("expectedVersion", input.expected_version)?;
    let assignee = match &input.assignee {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(a) => Some(Some(validate_username("assignee", a)?)),
    };
    let title = input
        .title
        .as_deref()
        .map(|t| text("title", t, MAX_TITLE_CHARS, false))
        .transpose()?;
    let body = input
        .body
        .as_deref()
        .map(|b| text("body", b, MAX_BODY_CHARS, true))
        .transpose()?;
    let change = TicketChange {
        status: input.status.map(Into::into),
        priority: input.priority.map(Into::into),
        assignee,
        title,
        body,
        at: model::now(),
    };
    if change.status.is_none()
        && change.priority.is_none()
        && change.assignee.is_none()
        && change.title.is_none()
        && change.body.is_none()
    {
        return Err(ApiError::BadUserInput {
            message: "nothing to change: give status, priority, assignee, title or body".into(),
            field: None,
        });
    }

    // A ticket id names no organization: the ticket is read, and another organization's
    // is as missing as one that does not exist.
    let Some(current) = collections::get_ticket_for_update(rc.store.as_ref(), id)
        .await?
        .filter(|t| rc.sees(&t.org))
    else {
        return Err(ApiError::Missing { field: "ticket" });
    };
    if current.version != expected {
        return Err(ApiError::VersionMismatch {
            entity: "ticket",
            expected,
            current: Some(current.version),
        });
    }
    fits("body", &change.applied_to(&current))?;
    let ticket = collections::update_ticket(rc.store.as_ref(), &current, &change).await?;
    rc.after_write(vec![ticket.clone().into()]).await;
    Ok(ticket)
}
