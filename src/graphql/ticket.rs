//! Tickets: the ticket mutations (access patterns 11, 13), their inputs and their checks.
//! The `Ticket` type and its reads are the chart's; [`super::builtin`] registers these
//! mutations beside them.

use async_graphql::{InputObject, MaybeUndefined, ID};

use super::context::RequestContext;
use super::enums::{TicketPriority, TicketStatus};
use super::errors::ApiError;
use super::input::{
    fits, text, ticket_id, version, visible, ApiResult, MAX_BODY_CHARS, MAX_TITLE_CHARS,
};
use crate::collections::{self, TicketChange};
use crate::keys::{validate_slug, validate_username, Id};
use crate::model;

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
        return Err(ApiError::Missing {
            field: "ticket".into(),
        });
    };
    if current.version != expected {
        return Err(ApiError::VersionMismatch {
            entity: "ticket".into(),
            expected,
            current: Some(current.version),
        });
    }
    fits("body", &change.applied_to(&current))?;
    let ticket = collections::update_ticket(rc.store.as_ref(), &current, &change).await?;
    rc.after_write(vec![ticket.clone().into()]).await;
    Ok(ticket)
}
