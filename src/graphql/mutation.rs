//! The root mutations.
//!
//! Each mutation takes one `…Input` object and answers a `…Payload` holding what it
//! changed, Relay style. It runs in three steps:
//!
//! 1. **Check** the whole input before any request: identifiers with the validators of
//!    [`crate::keys`] (no `#`, no control character, bounded length), texts non-blank and
//!    bounded, money with checked arithmetic, and the size of every item it will write
//!    against DynamoDB's 400 KB limit. The first problem is the answer: `BAD_USER_INPUT`
//!    with `extensions.field` naming the input field as it is spelled inside the input
//!    object (`email`, `title`, `lines[2].quantity`; list positions count from 0).
//! 2. **Write** with the one access pattern of [`crate::collections`] that does it (one
//!    write request; `updateTicket` reads the ticket first, to answer a stale
//!    `expectedVersion` without writing).
//! 3. **Publish** the domain event on the [`crate::events::EventBus`], only once the write
//!    succeeded.
//!
//! Mutations of one request run one after the other (the GraphQL spec's serial execution
//! of the mutation root), and each makes the request forget what it had read before, so
//! the fields selected under a payload see the write (see
//! [`RequestContext::after_write`]).

use std::sync::Arc;

use async_graphql::{
    Context, ErrorExtensions, InputObject, MaybeUndefined, Object, Result, SimpleObject, ID,
};

use crate::collections::{self, PlacedOrder, TicketChange, UserChange, MAX_ORDER_LINES};
use crate::events::DomainEvent;
use crate::graphql::errors::ApiError;
use crate::graphql::ids::GlobalId;
use crate::graphql::types::{
    Order, OrderStatus, Organization, Plan, Prefetched, Role, Ticket, TicketPriority, TicketStatus,
    User,
};
use crate::graphql::RequestContext;
use crate::keys::{
    validate_client_token, validate_email, validate_id, validate_slug, validate_username, Id,
    LineNo,
};
use crate::model::{self, Entity, Record};
use crate::store::validate::item_within_size;

/// Longest organization or user display name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest ticket title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest ticket body, in characters.
pub const MAX_BODY_CHARS: usize = 10_000;
/// Longest SKU, in characters.
pub const MAX_SKU_CHARS: usize = 64;
/// Longest order line description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

type ApiResult<T> = std::result::Result<T, ApiError>;

// --- input checks ------------------------------------------------------------------------

/// Whether a text may hold `c`: single-line texts take no control character at all,
/// multi-line ones take line breaks and tabs.
fn allowed(c: char, multiline: bool) -> bool {
    !c.is_control() || (multiline && matches!(c, '\n' | '\r' | '\t'))
}

/// A free text: not blank, at most `max` characters, no control characters (but line
/// breaks and tabs when `multiline`). Stored as given.
fn text(field: &str, value: &str, max: usize, multiline: bool) -> ApiResult<String> {
    if value.trim().is_empty() {
        return Err(ApiError::bad_input(
            field,
            format!("{field} must not be blank"),
        ));
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(ApiError::bad_input(
            field,
            format!("{field} must be at most {max} characters long, got {chars}"),
        ));
    }
    if !value.chars().all(|c| allowed(c, multiline)) {
        let what = if multiline {
            "control characters other than line breaks and tabs"
        } else {
            "control characters or line breaks"
        };
        return Err(ApiError::bad_input(
            field,
            format!("{field} must not contain {what}"),
        ));
    }
    Ok(value.to_owned())
}

fn name(field: &str, value: &str) -> ApiResult<String> {
    text(field, value, MAX_NAME_CHARS, false)
}

/// An ISO 4217 code: three uppercase ASCII letters.
fn currency(field: &str, value: &str) -> ApiResult<String> {
    if value.len() == 3 && value.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(value.to_owned())
    } else {
        Err(ApiError::bad_input(
            field,
            format!("{field} must be an ISO 4217 code: three uppercase letters, like USD"),
        ))
    }
}

/// A version a client read back (`version` starts at 1).
fn version(field: &str, value: i32) -> ApiResult<u32> {
    u32::try_from(value)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| ApiError::bad_input(field, format!("{field} must be 1 or more")))
}

/// The item a record becomes fits in one DynamoDB item (400 KB).
fn fits<R: Record>(field: &str, record: &R) -> ApiResult<()> {
    item_within_size(&record.to_item()).map_err(|_| {
        ApiError::bad_input(
            field,
            "too large: the record would exceed DynamoDB's 400 KB item limit",
        )
    })
}

/// A ticket named by its global `id` or its plain `ticketId`.
fn ticket_id(field: &str, id: &str) -> ApiResult<Id> {
    if let Ok(plain) = validate_id("ticketId", id) {
        return Ok(plain);
    }
    match GlobalId::decode(field, id)? {
        GlobalId::Ticket(t) => Ok(t),
        _ => Err(ApiError::bad_input(field, "not the id of a ticket")),
    }
}

/// An order named by its global `id` or its plain `orderId`.
/// An order id, plain or global; a global id also names the order's organization.
fn order_id(field: &str, id: &str) -> ApiResult<(Option<crate::keys::Slug>, Id)> {
    if let Ok(plain) = validate_id("orderId", id) {
        return Ok((None, plain));
    }
    match GlobalId::decode(field, id)? {
        GlobalId::Order(org, o) => Ok((Some(org), o)),
        _ => Err(ApiError::bad_input(field, "not the id of an order")),
    }
}

/// Turns the outcome of one mutation into the resolver's result.
fn answer<T>(r: ApiResult<T>) -> Result<T> {
    r.map_err(|e| e.extend())
}

// --- inputs and payloads -----------------------------------------------------------------

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

/// One line of a new order.
#[derive(InputObject)]
pub struct OrderLineInput {
    /// Stock-keeping unit, at most 64 characters, one line.
    pub sku: String,
    /// At most 500 characters, one line.
    pub description: String,
    /// 1 or more.
    pub quantity: i32,
    /// 0 or more; `amountCents` is `quantity × unitPriceCents`.
    pub unit_price_cents: i64,
}

/// A new order. Lines are numbered in the order given, from 1; the total is computed.
#[derive(InputObject)]
pub struct PlaceOrderInput {
    /// The organization's slug.
    pub org: String,
    /// Username of who places the order; a member of the organization.
    pub buyer: String,
    /// ISO 4217 code: three uppercase letters, like `USD`.
    pub currency: String,
    /// At least one line, at most 96.
    pub lines: Vec<OrderLineInput>,
    /// An idempotency key of your choosing (1 to 64 letters, digits, `_` or `-`, e.g. a
    /// UUID), the same for every retry of one order: a retry after a lost answer then
    /// returns the order the first attempt placed, with `replayed: true`, instead of
    /// placing it twice. Tokens are per organization and never expire.
    pub client_token: Option<String>,
}

#[derive(SimpleObject)]
pub struct PlaceOrderPayload {
    /// The order, with its lines.
    pub order: Order,
    /// True when `clientToken` named an order placed before: nothing new was placed.
    pub replayed: bool,
}

/// A status change for an order, guarded by the version the client last read.
#[derive(InputObject)]
pub struct UpdateOrderStatusInput {
    /// The order's global `id` or its plain `orderId`.
    pub order_id: ID,
    pub status: OrderStatus,
    /// The `version` the change is based on; `VERSION_MISMATCH` when the order moved on.
    pub expected_version: i32,
}

#[derive(SimpleObject)]
pub struct UpdateOrderStatusPayload {
    /// The order as changed, at its new `version`.
    pub order: Order,
}

// --- the mutations -----------------------------------------------------------------------

/// `NOT_FOUND` with `field` when the caller may not see organization `org`: exactly what
/// the write would answer if it did not exist, and nothing is read or written.
fn visible(rc: &RequestContext, org: &crate::keys::Slug, field: &'static str) -> ApiResult<()> {
    if rc.sees(org) {
        Ok(())
    } else {
        Err(ApiError::Missing { field })
    }
}

fn rc<'a>(ctx: &Context<'a>) -> &'a RequestContext {
    ctx.data_unchecked::<RequestContext>()
}

pub struct Mutation;

#[Object]
impl Mutation {
    /// Creates an organization. `CONFLICT` (`field: "slug"`) when the slug is taken.
    /// With auth on, admins only, and only the organization their token names
    /// (`FORBIDDEN` otherwise). One request: a conditional PutItem.
    async fn create_organization(
        &self,
        ctx: &Context<'_>,
        input: CreateOrganizationInput,
    ) -> Result<CreateOrganizationPayload> {
        answer(create_organization(rc(ctx), input).await)
    }

    /// Adds a user to an organization. `CONFLICT` when the username is taken in the
    /// organization (`field: "username"`) or the email anywhere (`field: "email"`);
    /// `NOT_FOUND` (`field: "organization"`) when there is no such organization. Admins
    /// only (`FORBIDDEN`). One request: a TransactWriteItems.
    async fn create_user(
        &self,
        ctx: &Context<'_>,
        input: CreateUserInput,
    ) -> Result<CreateUserPayload> {
        answer(create_user(rc(ctx), input).await)
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
        answer(update_user(rc(ctx), input).await)
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
        answer(delete_user(rc(ctx), input).await)
    }

    /// Raises a ticket, `OPEN` at version 1, counted on the organization and the
    /// requester. `NOT_FOUND` when the organization, the requester or the assignee does
    /// not exist (`field` says which). One request: a TransactWriteItems.
    async fn create_ticket(
        &self,
        ctx: &Context<'_>,
        input: CreateTicketInput,
    ) -> Result<CreateTicketPayload> {
        answer(create_ticket(rc(ctx), input).await)
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
        answer(update_ticket(rc(ctx), input).await)
    }

    /// Places an order with its lines, counted on the organization; amounts and the total
    /// are computed here. `NOT_FOUND` when the organization or the buyer does not exist
    /// (`field` says which). With a `clientToken`, retrying is safe: see
    /// `PlaceOrderInput.clientToken`. One request: a TransactWriteItems; a replay is that
    /// refused TransactWriteItems plus one Query on GSI1 reading the order back.
    async fn place_order(
        &self,
        ctx: &Context<'_>,
        input: PlaceOrderInput,
    ) -> Result<PlaceOrderPayload> {
        answer(place_order(rc(ctx), input).await)
    }

    /// Moves an order along its fulfilment: `PLACED` → `PAID` → `SHIPPED` →
    /// `DELIVERED`, or `CANCELLED` before it ships. `INVALID_TRANSITION` for any other
    /// move, `VERSION_MISMATCH` when the order changed since `expectedVersion`,
    /// `NOT_FOUND` (`field: "order"`) when there is no such order. Admins only
    /// (`FORBIDDEN`). Two requests: a Query
    /// on GSI1 reading the order, then a conditional UpdateItem (plus a GetItem between
    /// them in the rare case the index lags behind `expectedVersion`).
    async fn update_order_status(
        &self,
        ctx: &Context<'_>,
        input: UpdateOrderStatusInput,
    ) -> Result<UpdateOrderStatusPayload> {
        answer(update_order_status(rc(ctx), input).await)
    }
}

async fn create_organization(
    rc: &RequestContext,
    input: CreateOrganizationInput,
) -> ApiResult<CreateOrganizationPayload> {
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
    rc.events
        .publish(DomainEvent::OrganizationCreated(org.clone()));
    Ok(CreateOrganizationPayload {
        organization: Organization::new(org),
    })
}

async fn create_user(rc: &RequestContext, input: CreateUserInput) -> ApiResult<CreateUserPayload> {
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
    rc.events.publish(DomainEvent::UserCreated(user.clone()));
    Ok(CreateUserPayload {
        user: User::new(user),
    })
}

async fn update_user(rc: &RequestContext, input: UpdateUserInput) -> ApiResult<UpdateUserPayload> {
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
    rc.events.publish(DomainEvent::UserUpdated(user.clone()));
    Ok(UpdateUserPayload {
        user: User::new(user),
    })
}

async fn delete_user(rc: &RequestContext, input: DeleteUserInput) -> ApiResult<DeleteUserPayload> {
    let org = validate_slug("org", &input.org)?;
    let username = validate_username("username", &input.username)?;
    rc.access.require_admin("remove users")?;
    visible(rc, &org, "user")?;
    let user = collections::delete_user(rc.store.as_ref(), &org, &username).await?;
    rc.after_write(Vec::new()).await;
    rc.events.publish(DomainEvent::UserDeleted(user.clone()));
    Ok(DeleteUserPayload {
        deleted_user_id: ID(GlobalId::User(org, username).encode()),
        user: User::new(user),
    })
}

async fn create_ticket(
    rc: &RequestContext,
    input: CreateTicketInput,
) -> ApiResult<CreateTicketPayload> {
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
    rc.events
        .publish(DomainEvent::TicketCreated(ticket.clone()));
    Ok(CreateTicketPayload {
        ticket: Ticket::new(ticket),
    })
}

async fn update_ticket(
    rc: &RequestContext,
    input: UpdateTicketInput,
) -> ApiResult<UpdateTicketPayload> {
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
    rc.events
        .publish(DomainEvent::ticket_changed(&current, &ticket));
    Ok(UpdateTicketPayload {
        ticket: Ticket::new(ticket),
    })
}

/// The order and its lines as `input` describes them: lines numbered from 1, amounts and
/// total computed with checked arithmetic.
fn new_order(input: &PlaceOrderInput) -> ApiResult<(model::Order, Vec<model::OrderLine>)> {
    let org = validate_slug("org", &input.org)?;
    let buyer = validate_username("buyer", &input.buyer)?;
    let currency = currency("currency", &input.currency)?;
    if input.lines.is_empty() || input.lines.len() > MAX_ORDER_LINES {
        return Err(ApiError::bad_input(
            "lines",
            format!(
                "an order has 1 to {MAX_ORDER_LINES} lines, got {}",
                input.lines.len()
            ),
        ));
    }
    let order_id = Id::generate();
    let mut lines = Vec::with_capacity(input.lines.len());
    let mut total: i64 = 0;
    for (i, line) in input.lines.iter().enumerate() {
        let field = |f: &str| format!("lines[{i}].{f}");
        let sku = text(&field("sku"), &line.sku, MAX_SKU_CHARS, false)?;
        let description = text(
            &field("description"),
            &line.description,
            MAX_DESCRIPTION_CHARS,
            false,
        )?;
        let quantity = u32::try_from(line.quantity)
            .ok()
            .filter(|q| *q >= 1)
            .ok_or_else(|| ApiError::bad_input(&field("quantity"), "quantity must be 1 or more"))?;
        if line.unit_price_cents < 0 {
            return Err(ApiError::bad_input(
                &field("unitPriceCents"),
                "unitPriceCents must be 0 or more",
            ));
        }
        let amount_cents = i64::from(quantity)
            .checked_mul(line.unit_price_cents)
            .ok_or_else(|| {
                ApiError::bad_input(
                    &format!("lines[{i}]"),
                    "quantity × unitPriceCents is too large",
                )
            })?;
        total = total
            .checked_add(amount_cents)
            .ok_or_else(|| ApiError::bad_input("lines", "the order total is too large"))?;
        let line_no = u16::try_from(i + 1)
            .ok()
            .and_then(|n| LineNo::new(n).ok())
            .ok_or_else(|| ApiError::bad_input("lines", "too many lines"))?;
        let line = model::OrderLine {
            order_id,
            line_no,
            sku,
            description,
            quantity,
            unit_price_cents: line.unit_price_cents,
            amount_cents,
        };
        fits(&format!("lines[{i}]"), &line)?;
        lines.push(line);
    }
    let order = model::Order {
        order_id,
        org,
        buyer,
        status: model::OrderStatus::Placed,
        placed_at: model::now(),
        currency,
        total_cents: total,
        line_count: lines.len() as u32,
        version: 1,
    };
    fits("lines", &order)?;
    Ok((order, lines))
}

async fn place_order(rc: &RequestContext, input: PlaceOrderInput) -> ApiResult<PlaceOrderPayload> {
    let (order, lines) = new_order(&input)?;
    visible(rc, &order.org, "organization")?;
    let token = input
        .client_token
        .as_deref()
        .map(|t| validate_client_token("clientToken", t))
        .transpose()?;
    let PlacedOrder {
        order,
        lines,
        replayed,
    } = collections::place_order(
        rc.store.as_ref(),
        &order,
        &lines,
        token.as_ref().map(|t| t.as_str()),
    )
    .await?;
    rc.after_write(vec![order.clone().into()]).await;
    if !replayed {
        rc.events.publish(DomainEvent::OrderPlaced {
            order: order.clone(),
            lines: lines.clone(),
        });
    }
    Ok(PlaceOrderPayload {
        order: Order {
            rec: Arc::new(order),
            pages: Arc::new(Prefetched {
                lines: Some(lines),
                ..Default::default()
            }),
        },
        replayed,
    })
}

async fn update_order_status(
    rc: &RequestContext,
    input: UpdateOrderStatusInput,
) -> ApiResult<UpdateOrderStatusPayload> {
    let (org, id) = order_id("orderId", &input.order_id)?;
    let expected = version("expectedVersion", input.expected_version)?;
    let status: model::OrderStatus = input.status.into();
    rc.access.require_admin("change orders")?;
    // A plain order id is looked up within the caller's organization; a global id naming
    // another one is as missing as an order that does not exist.
    let org = match (org, rc.access.org()) {
        (Some(named), Some(own)) if named != *own => {
            return Err(ApiError::Missing { field: "order" })
        }
        (named, own) => named.or_else(|| own.cloned()),
    };
    let order =
        collections::update_org_order_status(rc.store.as_ref(), org.as_ref(), id, status, expected)
            .await?;
    rc.after_write(vec![Entity::Order(order.clone())]).await;
    rc.events.publish(DomainEvent::order_status_changed(&order));
    Ok(UpdateOrderStatusPayload {
        order: Order::new(order),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Slug;

    fn field(e: ApiError) -> Option<String> {
        match e {
            ApiError::BadUserInput { field, .. } => field,
            other => panic!("not BAD_USER_INPUT: {other:?}"),
        }
    }

    #[test]
    fn texts_are_non_blank_bounded_and_single_line_unless_multiline() {
        assert_eq!(text("title", "Anvil", 5, false).unwrap(), "Anvil");
        assert_eq!(text("title", "Ünïcødé", 7, false).unwrap(), "Ünïcødé");
        for bad in ["", "   ", "Anvils", "a\nb", "a\u{0}b"] {
            let e = text("title", bad, 5, false).unwrap_err();
            assert_eq!(field(e).as_deref(), Some("title"), "{bad:?}");
        }
        assert!(text("body", "a\nb\tc\r\n", 10, true).is_ok());
        assert!(text("body", "a\u{7}b", 10, true).is_err());
    }

    #[test]
    fn currencies_are_three_uppercase_letters() {
        assert!(currency("currency", "USD").is_ok());
        for bad in ["usd", "US", "USDT", "U$D", "ÉUR", ""] {
            assert!(currency("currency", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn versions_start_at_one() {
        assert_eq!(version("expectedVersion", 1).unwrap(), 1);
        assert!(version("expectedVersion", 0).is_err());
        assert!(version("expectedVersion", -3).is_err());
    }

    #[test]
    fn ids_are_plain_or_global_of_the_right_type() {
        let id = Id::from_parts(1_700_000_000_000, 7);
        let plain = id.to_string();
        assert_eq!(ticket_id("ticketId", &plain).unwrap(), id);
        assert_eq!(
            ticket_id("ticketId", &GlobalId::Ticket(id).encode()).unwrap(),
            id
        );
        let acme = Slug::parse("acme").unwrap();
        let order = GlobalId::Order(acme.clone(), id).encode();
        assert_eq!(order_id("orderId", &order).unwrap(), (Some(acme), id));
        assert_eq!(order_id("orderId", &plain).unwrap(), (None, id));
        let e = ticket_id("ticketId", &order).unwrap_err();
        assert_eq!(field(e).as_deref(), Some("ticketId"));
        let e = order_id("orderId", "nonsense#").unwrap_err();
        assert_eq!(field(e).as_deref(), Some("orderId"));
    }

    fn line(quantity: i32, unit_price_cents: i64) -> OrderLineInput {
        OrderLineInput {
            sku: "ANVIL".into(),
            description: "Anvil, 100 kg".into(),
            quantity,
            unit_price_cents,
        }
    }

    fn order_input(lines: Vec<OrderLineInput>) -> PlaceOrderInput {
        PlaceOrderInput {
            org: "acme".into(),
            buyer: "wile-e-coyote".into(),
            currency: "USD".into(),
            lines,
            client_token: None,
        }
    }

    #[test]
    fn orders_are_numbered_and_totalled() {
        let (order, lines) = new_order(&order_input(vec![line(2, 1999), line(1, 0)])).unwrap();
        assert_eq!(order.total_cents, 3998);
        assert_eq!(order.line_count, 2);
        assert_eq!(
            lines.iter().map(|l| l.line_no.get()).collect::<Vec<_>>(),
            [1, 2]
        );
        assert!(lines.iter().all(|l| l.order_id == order.order_id));
        collections::check_order(&order, &lines).unwrap();
    }

    #[test]
    fn bad_orders_name_the_field() {
        let cases = [
            (vec![], "lines"),
            (vec![line(1, 1), line(0, 1)], "lines[1].quantity"),
            (vec![line(-1, 1)], "lines[0].quantity"),
            (vec![line(1, -1)], "lines[0].unitPriceCents"),
            (vec![line(2, i64::MAX / 2 + 1)], "lines[0]"),
            (vec![line(1, i64::MAX), line(1, 1)], "lines"),
        ];
        for (lines, expected) in cases {
            let e = new_order(&order_input(lines)).unwrap_err();
            assert_eq!(field(e).as_deref(), Some(expected));
        }
        let too_many = (0..=MAX_ORDER_LINES).map(|_| line(1, 1)).collect();
        assert_eq!(
            field(new_order(&order_input(too_many)).unwrap_err()).as_deref(),
            Some("lines")
        );
    }

    #[test]
    fn the_schema_states_the_line_limit_the_code_enforces() {
        let sdl = crate::graphql::sdl();
        assert!(
            sdl.contains(&format!("At least one line, at most {MAX_ORDER_LINES}.")),
            "update PlaceOrderInput.lines' doc to MAX_ORDER_LINES = {MAX_ORDER_LINES}"
        );
    }

    #[test]
    fn records_over_400_kb_are_refused() {
        let (order, mut lines) = new_order(&order_input(vec![line(1, 1)])).unwrap();
        assert!(fits("lines", &order).is_ok());
        lines[0].description = "x".repeat(410 * 1024);
        let e = fits("lines[0]", &lines[0]).unwrap_err();
        assert_eq!(field(e).as_deref(), Some("lines[0]"));
    }
}
