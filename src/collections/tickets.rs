//! The ticket aggregate: access patterns 5 and 6 (reads), 11 and 13 (create, change), with
//! the counters on the organization and the users that a ticket moves.

use super::counters::{transact_counted, OrgBump};
use super::entities::get_record;
use super::error::RepoResult;
use super::page::{read_connection, Connection, Page};
use super::write::{bump, explain, n, next_version, put_new, OnFail, VERSION};
use crate::keys::{Id, OrgKey, Slug, TicketKey, UserKey, Username, GSI2, PK};
use crate::model::{Organization, Record, Ticket, TicketPriority, TicketStatus, Timestamp, User};
use crate::store::{
    CmpOp, Condition, GetItem, PageKey, Put, Store, TransactAction, Update, UpdateExpr,
};

/// Access pattern 6, newest first. The queue's size is the organization's status counter.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketPage {
    pub tickets: Vec<Ticket>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 5: a ticket by id.
pub async fn get_ticket(store: &dyn Store, ticket_id: Id) -> RepoResult<Option<Ticket>> {
    get_record(store, TicketKey::new(ticket_id).primary_key()).await
}

/// Access pattern 5 before a change: a strongly consistent GetItem, so the version a
/// client is compared against is the latest one, never a stale replica's.
pub async fn get_ticket_for_update(store: &dyn Store, ticket_id: Id) -> RepoResult<Option<Ticket>> {
    let item = store
        .get_item(GetItem {
            key: TicketKey::new(ticket_id).primary_key(),
            consistent_read: true,
        })
        .await?;
    Ok(item.map(Ticket::from_item).transpose()?)
}

/// Access pattern 6: a page of an organization's tickets in one status, newest first: GSI2
/// backward.
pub async fn list_org_tickets_by_status(
    store: &dyn Store,
    org: &Slug,
    status: TicketStatus,
    page: Page,
) -> RepoResult<TicketPage> {
    let conn = Connection {
        index: Some(GSI2),
        partition: OrgKey::new(org).status_queue(status),
        natural_forward: false,
        parent: None,
        children: TicketKey::prefix(),
        beside_parent: 0,
    };
    let (_, tickets, last_evaluated_key) =
        read_connection::<Ticket, Ticket>(store, &conn, &page).await?;
    Ok(TicketPage {
        tickets,
        last_evaluated_key,
    })
}

/// Access pattern 11: creates a ticket and counts it on the organization (in total and in
/// its status), on its requester and on its assignee. One TransactWriteItems, no read: Put
/// the ticket `attribute_not_exists` (`AlreadyExists("ticket")`), `ADD` the organization's
/// counters on one of its shards (`NotFound("organization")`; see [`transact_counted`]), `ADD ticketCount 1` on the requester
/// (`NotFound("requester")`), and when there is an assignee `ADD assignedTicketCount 1` on
/// them (`NotFound("assignee")`). Each Update is conditioned on its item existing. A
/// requester who assigns the ticket to themselves is one item, so one Update adds both
/// counters (an item may appear only once in a transaction).
pub async fn create_ticket(store: &dyn Store, ticket: &Ticket) -> RepoResult<()> {
    let self_assigned = ticket.assignee.as_ref() == Some(&ticket.requester);
    let mut requester = UpdateExpr::default().add(User::TICKET_COUNT, 1);
    if self_assigned {
        requester = requester.add(User::ASSIGNED_TICKET_COUNT, 1);
    }
    let counted = OrgBump::new(
        &ticket.org,
        UpdateExpr::default()
            .add(Organization::TICKET_COUNT, 1)
            .add(Organization::status_counter(ticket.status), 1),
    );
    let mut actions = vec![
        put_new(ticket.to_item()),
        bump(
            UserKey::new(&ticket.org, &ticket.requester).primary_key(),
            requester,
        ),
    ];
    let mut meanings = vec![
        OnFail::AlreadyExists("ticket"),
        counted.legacy_meaning,
        OnFail::NotFound("requester"),
    ];
    if let Some(assignee) = ticket.assignee.as_ref().filter(|_| !self_assigned) {
        actions.push(bump(
            UserKey::new(&ticket.org, assignee).primary_key(),
            UpdateExpr::default().add(User::ASSIGNED_TICKET_COUNT, 1),
        ));
        meanings.push(OnFail::NotFound("assignee"));
    }
    transact_counted(store, actions, 1, &counted)
        .await
        .map_err(|e| explain(e, &meanings))
}

/// A change to a ticket; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketChange {
    /// A new status moves the ticket to another GSI2 queue and moves the organization's
    /// per-status counters with it.
    pub status: Option<TicketStatus>,
    /// `Some(None)` unassigns; a new assignee must exist.
    pub assignee: Option<Option<Username>>,
    pub priority: Option<TicketPriority>,
    pub title: Option<String>,
    pub body: Option<String>,
    /// The new `updatedAt`.
    pub at: Timestamp,
}

impl TicketChange {
    /// A change of nothing yet, made at `at`: set the fields to change on it.
    pub fn at(at: Timestamp) -> Self {
        TicketChange {
            status: None,
            assignee: None,
            priority: None,
            title: None,
            body: None,
            at,
        }
    }

    /// The ticket as this change leaves it (version unchanged): what [`update_ticket`]
    /// writes, and what a caller checks (its size) before asking for the write.
    pub fn applied_to(&self, current: &Ticket) -> Ticket {
        let mut next = current.clone();
        if let Some(status) = self.status {
            next.status = status;
        }
        if let Some(assignee) = &self.assignee {
            next.assignee = assignee.clone();
        }
        if let Some(priority) = self.priority {
            next.priority = priority;
        }
        if let Some(title) = &self.title {
            next.title = title.clone();
        }
        if let Some(body) = &self.body {
            next.body = body.clone();
        }
        next.updated_at = self.at.clone();
        next
    }
}

/// Access pattern 13: applies `change` to the ticket as it was read (`current`),
/// conditioned on its version, and returns the ticket as written (version + 1). No read:
/// the caller read `current`.
///
/// The new item replaces the old one whole, which recomputes its keys: a status change
/// moves it to the other GSI2 queue. When the status changes, the organization's status
/// counters move in the same transaction, on one of its shards (a shard's part may go below
/// 0, the sum never does; an organization without shards yet has the move on its own item,
/// conditioned on a positive count as before: anything else is a table no writer made,
/// `INTERNAL`). When the assignee changes, so do the users'
/// `assignedTicketCount`s: `ADD -1` on the old assignee (conditioned on existing with a
/// positive count: anything else is a table no writer made, `INTERNAL`) and `ADD 1` on
/// the new one, who must exist (`NotFound("assignee")`). The version condition makes
/// `current.assignee` the assignee as stored. Otherwise the transaction holds the one
/// conditional Put (a transaction for its client request token: see below).
/// `NotFound("ticket")` when the ticket is gone, `VersionMismatch` (with the
/// version it is at now) when it changed since `current` was read.
pub async fn update_ticket(
    store: &dyn Store,
    current: &Ticket,
    change: &TicketChange,
) -> RepoResult<Ticket> {
    let mut next = change.applied_to(current);
    next.version = next_version(current.version, "ticket")?;

    let version = OnFail::Version {
        entity: "ticket",
        expected: current.version,
    };
    let mut put = Put::new(next.to_item()).when(Condition::eq(VERSION, n(current.version)));
    put.return_old_on_condition_failure = true;

    let mut actions = vec![TransactAction::Put(put)];
    let counted = (next.status != current.status).then(|| {
        let from = Organization::status_counter(current.status);
        OrgBump {
            org: current.org.clone(),
            update: UpdateExpr::default()
                .add(from, -1)
                .add(Organization::status_counter(next.status), 1),
            legacy_when: Condition::And(vec![
                Condition::exists(PK),
                Condition::Cmp(from.into(), CmpOp::Gt, n(0)),
            ]),
            legacy_meaning: OnFail::Corrupt(
                "the ticket's organization does not exist or does not count its status",
            ),
        }
    });
    let mut meanings = vec![version];
    meanings.extend(counted.as_ref().map(|c| c.legacy_meaning));
    // Old and new assignee differ, so each user item appears at most once.
    if next.assignee != current.assignee {
        if let Some(old) = &current.assignee {
            actions.push(TransactAction::Update(
                Update::new(
                    UserKey::new(&current.org, old).primary_key(),
                    UpdateExpr::default().add(User::ASSIGNED_TICKET_COUNT, -1),
                )
                .when(Condition::And(vec![
                    Condition::exists(PK),
                    Condition::Cmp(User::ASSIGNED_TICKET_COUNT.into(), CmpOp::Gt, n(0)),
                ])),
            ));
            meanings.push(OnFail::Corrupt(
                "the ticket's assignee does not exist or does not count it",
            ));
        }
        if let Some(new) = &next.assignee {
            actions.push(bump(
                UserKey::new(&current.org, new).primary_key(),
                UpdateExpr::default().add(User::ASSIGNED_TICKET_COUNT, 1),
            ));
            meanings.push(OnFail::NotFound("assignee"));
        }
    }

    // Always a transaction, a single Put included: its client request token makes the
    // SDK's own retry of an attempt whose reply was lost idempotent, which a conditional
    // PutItem is not (another writer may change the ticket in between, so the item the
    // failed condition returns cannot tell the write was ours).
    let written = match &counted {
        Some(counted) => transact_counted(store, actions, 1, counted).await,
        None => store.transact_write(actions).await,
    };
    written.map_err(|e| explain(e, &meanings))?;
    Ok(next)
}
