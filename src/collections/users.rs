//! The user aggregate: access patterns 4 and 9 (reads), 10, 15 and 16 (create, change,
//! delete), with the email uniqueness marker each write keeps.

use super::counters::{transact_counted, OrgBump};
use super::entities::get_record;
use super::error::{RepoError, RepoResult};
use super::page::{read_connection, Connection, Page};
use super::write::{explain, failed_condition, n, put_new, s, OnFail};
use crate::keys::{Email, Slug, UserEmailKey, UserKey, Username, GSI1, PK};
use crate::model::{Organization, Record, Role, Ticket, User, UserEmail};
use crate::store::{
    CmpOp, Condition, Delete, GetItem, Item, PageKey, ReturnValues, SortCondition, Store,
    StoreError, TransactAction, Update, UpdateExpr,
};

/// Access pattern 4, newest tickets first.
#[derive(Debug, Clone, PartialEq)]
pub struct UserWithTickets {
    pub user: Option<User>,
    pub tickets: Vec<Ticket>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 9: a user by organization and username (a reference: requester, assignee, buyer).
pub async fn get_user(
    store: &dyn Store,
    org: &Slug,
    username: &Username,
) -> RepoResult<Option<User>> {
    get_record(store, UserKey::new(org, username).primary_key()).await
}

/// Access pattern 4: the user and a page of the tickets they requested, newest first: GSI1
/// partition `ORG#o#USER#u` backward, where the user sorts above its tickets.
pub async fn get_user_with_tickets(
    store: &dyn Store,
    org: &Slug,
    username: &Username,
    page: Page,
) -> RepoResult<UserWithTickets> {
    let key = UserKey::new(org, username);
    let conn = Connection {
        index: Some(GSI1),
        partition: key.tickets_partition(),
        natural_forward: false,
        parent: Some(SortCondition::Le(key.tickets_boundary())),
        children: key.tickets_prefix(),
        beside_parent: 0,
    };
    let (user, tickets, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(UserWithTickets {
        user,
        tickets,
        last_evaluated_key,
    })
}

/// Access pattern 10: creates a user in an existing organization, unique on username
/// (within the organization) and on email (within the organization too), and counts it on the
/// organization. One TransactWriteItems, no read: Put the user `attribute_not_exists`
/// (`AlreadyExists("username")`), Put its email marker `attribute_not_exists`
/// (`AlreadyExists("email")`), `ADD userCount 1` on one of the organization's counter
/// shards, which must exist (`NotFound("organization")`; see [`transact_counted`]). The user's counters (`ticketCount`,
/// `assignedTicketCount`, `orderCount`) are written as 0 whatever `user` says.
pub async fn create_user(store: &dyn Store, user: &User) -> RepoResult<()> {
    let user = User {
        ticket_count: 0,
        assigned_ticket_count: 0,
        order_count: 0,
        ..user.clone()
    };
    let marker = UserEmail {
        email: user.email.clone(),
        org: user.org.clone(),
        username: user.username.clone(),
    };
    let actions = vec![put_new(user.to_item()), put_new(marker.to_item())];
    let counted = OrgBump::new(
        &user.org,
        UpdateExpr::default().add(Organization::USER_COUNT, 1),
    );
    let meanings = [
        OnFail::AlreadyExists("username"),
        OnFail::AlreadyExists("email"),
        counted.legacy_meaning,
    ];
    transact_counted(store, actions, 2, &counted)
        .await
        .map_err(|e| explain(e, &meanings))
}

/// A change to a user; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserChange {
    pub name: Option<String>,
    /// A new email moves the user's uniqueness marker.
    pub email: Option<Email>,
    pub role: Option<Role>,
}

impl UserChange {
    fn is_empty(&self) -> bool {
        self.name.is_none() && self.email.is_none() && self.role.is_none()
    }

    /// The SET actions of the change, email included when given.
    fn update(&self) -> UpdateExpr {
        let mut u = UpdateExpr::default();
        if let Some(name) = &self.name {
            u = u.set("name", s(name));
        }
        if let Some(email) = &self.email {
            u = u.set("email", s(email.as_str()));
        }
        if let Some(role) = self.role {
            u = u.set("role", s(role.as_str()));
        }
        u
    }

    fn apply(&self, user: &User) -> User {
        let mut next = user.clone();
        if let Some(name) = &self.name {
            next.name = name.clone();
        }
        if let Some(email) = &self.email {
            next.email = email.clone();
        }
        if let Some(role) = self.role {
            next.role = role;
        }
        next
    }
}

/// How many times [`update_user`] and [`delete_user`] write when another write keeps
/// changing the user's email between their read and their write.
const USER_WRITE_ATTEMPTS: u32 = 3;

/// What one attempt of a user write came to.
enum UserAttempt<T> {
    Done(T),
    /// The user's email is no longer the one read: here is the user as it is now.
    Moved(User),
}

/// The user a failed condition returned, when it still exists; `NotFound("user")` when
/// the item is gone.
fn user_now(item: Option<&Item>) -> RepoResult<User> {
    match item {
        Some(item) => Ok(User::from_item(item.clone())?),
        None => Err(RepoError::NotFound("user")),
    }
}

/// A strongly consistent GetItem of a user, for a write's validation.
async fn read_user(store: &dyn Store, org: &Slug, username: &Username) -> RepoResult<User> {
    let item = store
        .get_item(GetItem {
            key: UserKey::new(org, username).primary_key(),
            consistent_read: true,
        })
        .await?;
    match item {
        Some(item) => Ok(User::from_item(item)?),
        None => Err(RepoError::NotFound("user")),
    }
}

/// The error when the user's email kept moving under every attempt: contention past the
/// retry budget, which clients see as `UNAVAILABLE` (try again).
fn user_contention(org: &Slug, username: &Username) -> RepoError {
    RepoError::Store(StoreError::Throttled(format!(
        "user {org}/{username} kept changing during the write; try again"
    )))
}

/// The condition on an email marker that may be removed for `user`: it is absent, or it
/// names this very user. A marker naming someone else is never deleted.
fn marker_is_theirs(user: &User) -> Condition {
    Condition::Or(vec![
        Condition::not_exists(PK),
        Condition::And(vec![
            Condition::eq("org", s(user.org.as_str())),
            Condition::eq("username", s(user.username.as_str())),
        ]),
    ])
}

/// Access pattern 15: changes a user's name, role or email and returns the user as
/// written. `NotFound("user")`; an empty change is `Invalid`.
///
/// - Without an email change: one UpdateItem conditioned on the user existing,
///   returning ALL_NEW; no read.
/// - With an email change: the old email is needed, so the user is read first (one
///   strongly consistent GetItem) unless `expected_current` gives it. Then one
///   TransactWriteItems swaps the uniqueness markers with the user: update the user
///   conditioned on still having the old email, delete the old marker conditioned on it
///   naming this user (or being absent), put the new marker `attribute_not_exists`
///   (`AlreadyExists("email")`: then nothing changes). Fields outside the change are
///   returned as read.
///
/// A change is a set, not a compare-and-swap: users carry no version. When another write
/// moved the email between the read and the write, the cancelled transaction reports the
/// user as it is now, and the write is built again from that (no further read), at most
/// three times in all; past that the store is `Throttled` (`UNAVAILABLE`).
pub async fn update_user(
    store: &dyn Store,
    org: &Slug,
    username: &Username,
    change: &UserChange,
    expected_current: Option<&User>,
) -> RepoResult<User> {
    if change.is_empty() {
        return Err(RepoError::Invalid(
            "nothing to change: give a name, an email or a role".into(),
        ));
    }
    if let Some(u) = expected_current {
        if u.org != *org || u.username != *username {
            return Err(RepoError::Invalid(format!(
                "expected_current is {}/{}, not {org}/{username}",
                u.org, u.username
            )));
        }
    }
    let Some(new_email) = &change.email else {
        return update_user_fields(store, org, username, change).await;
    };
    let mut current = match expected_current {
        Some(u) => u.clone(),
        None => read_user(store, org, username).await?,
    };
    for _ in 0..USER_WRITE_ATTEMPTS {
        let attempt = if current.email == *new_email {
            update_user_same_email(store, &current, change).await?
        } else {
            swap_user_email(store, &current, change).await?
        };
        match attempt {
            UserAttempt::Done(user) => return Ok(user),
            UserAttempt::Moved(now) => current = now,
        }
    }
    Err(user_contention(org, username))
}

/// One UpdateItem of name and role, conditioned on the user existing, ALL_NEW.
async fn update_user_fields(
    store: &dyn Store,
    org: &Slug,
    username: &Username,
    change: &UserChange,
) -> RepoResult<User> {
    let update = Update::new(UserKey::new(org, username).primary_key(), change.update())
        .when(Condition::exists(PK))
        .returning(ReturnValues::AllNew);
    match store.update_item(update).await {
        Ok(Some(item)) => Ok(User::from_item(item)?),
        Ok(None) => Err(RepoError::Store(StoreError::Internal(
            "UpdateItem with ALL_NEW returned no item".into(),
        ))),
        Err(e) => Err(explain(e, &[OnFail::NotFound("user")])),
    }
}

/// The email given is the one the user has: one UpdateItem conditioned on that, so a
/// stale read cannot silently skip an email change.
async fn update_user_same_email(
    store: &dyn Store,
    current: &User,
    change: &UserChange,
) -> RepoResult<UserAttempt<User>> {
    let mut update = Update::new(current.primary_key(), change.update())
        .when(Condition::And(vec![
            Condition::exists(PK),
            Condition::eq("email", s(current.email.as_str())),
        ]))
        .returning(ReturnValues::AllNew);
    update.return_old_on_condition_failure = true;
    match store.update_item(update).await {
        Ok(Some(item)) => Ok(UserAttempt::Done(User::from_item(item)?)),
        Ok(None) => Err(RepoError::Store(StoreError::Internal(
            "UpdateItem with ALL_NEW returned no item".into(),
        ))),
        Err(StoreError::ConditionFailed { item }) => {
            Ok(UserAttempt::Moved(user_now(item.as_deref())?))
        }
        Err(e) => Err(e.into()),
    }
}

/// One TransactWriteItems: the user with its new email, the old marker out, the new one in.
async fn swap_user_email(
    store: &dyn Store,
    current: &User,
    change: &UserChange,
) -> RepoResult<UserAttempt<User>> {
    let next = change.apply(current);
    let mut user = Update::new(current.primary_key(), change.update()).when(Condition::And(vec![
        Condition::exists(PK),
        Condition::eq("email", s(current.email.as_str())),
    ]));
    user.return_old_on_condition_failure = true;
    let marker = UserEmail {
        email: next.email.clone(),
        org: next.org.clone(),
        username: next.username.clone(),
    };
    let actions = vec![
        TransactAction::Update(user),
        TransactAction::Delete(
            Delete::new(UserEmailKey::new(&current.org, &current.email).primary_key())
                .when(marker_is_theirs(current)),
        ),
        put_new(marker.to_item()),
    ];
    match store.transact_write(actions).await {
        Ok(()) => Ok(UserAttempt::Done(next)),
        Err(err) => match failed_condition(&err) {
            Some((0, item)) => Ok(UserAttempt::Moved(user_now(item)?)),
            _ => Err(explain(
                err,
                &[
                    OnFail::NotFound("user"),
                    OnFail::Corrupt("the user's email marker names another user"),
                    OnFail::AlreadyExists("email"),
                ],
            )),
        },
    }
}

/// The counters of a user that count references to it, each with what
/// [`RepoError::InUse`] calls the referrers.
const USER_REFERRERS: [(&str, &str); 3] = [
    (User::TICKET_COUNT, "tickets"),
    (User::ASSIGNED_TICKET_COUNT, "assignedTickets"),
    (User::ORDER_COUNT, "orders"),
];

/// Why `user` cannot be deleted: the first of its reference counters that is not 0.
fn user_referrers(user: &User) -> Option<&'static str> {
    let counts = [
        user.ticket_count,
        user.assigned_ticket_count,
        user.order_count,
    ];
    USER_REFERRERS
        .iter()
        .zip(counts)
        .find(|(_, count)| *count > 0)
        .map(|((_, what), _)| *what)
}

/// Access pattern 16: deletes a user whom no ticket and no order references, with their
/// email marker, and uncounts them on the organization; returns the user as deleted.
///
/// Reads the user first (one strongly consistent GetItem) to learn its email. A user
/// still referenced is refused there, by the counters kept on the user: `InUse("tickets")`
/// when they requested tickets, `InUse("assignedTickets")` when tickets are assigned to
/// them, `InUse("orders")` when they placed orders. So no requester, assignee or buyer
/// dangles. Then one TransactWriteItems: delete the user conditioned on existing, on the
/// email read and on `ticketCount`, `assignedTicketCount` and `orderCount` being 0 (so a
/// ticket or order that names them between the read and the write cancels the delete);
/// delete its marker (conditioned on it naming this user, or being absent); `ADD
/// userCount -1` on one of the organization's counter shards (on an organization without
/// shards yet, on its own item conditioned on a positive count, else the table is one no
/// writer made: `INTERNAL`). `NotFound("user")`. When the user changed in
/// between (its email moved, a counter grew), the cancelled transaction reports the user
/// as it is now, and the refusal or the write is built again from that, as in
/// [`update_user`].
pub async fn delete_user(store: &dyn Store, org: &Slug, username: &Username) -> RepoResult<User> {
    let mut current = read_user(store, org, username).await?;
    for _ in 0..USER_WRITE_ATTEMPTS {
        if let Some(what) = user_referrers(&current) {
            return Err(RepoError::InUse(what));
        }
        let mut condition = vec![
            Condition::exists(PK),
            Condition::eq("email", s(current.email.as_str())),
        ];
        condition.extend(USER_REFERRERS.iter().map(|(counter, _)| {
            Condition::Or(vec![
                Condition::not_exists(*counter),
                Condition::eq(*counter, n(0)),
            ])
        }));
        let mut user = Delete::new(current.primary_key()).when(Condition::And(condition));
        user.return_old_on_condition_failure = true;
        let actions = vec![
            TransactAction::Delete(user),
            TransactAction::Delete(
                Delete::new(UserEmailKey::new(&current.org, &current.email).primary_key())
                    .when(marker_is_theirs(&current)),
            ),
        ];
        let counted = OrgBump {
            org: org.clone(),
            update: UpdateExpr::default().add(Organization::USER_COUNT, -1),
            legacy_when: Condition::And(vec![
                Condition::exists(PK),
                Condition::Cmp(Organization::USER_COUNT.into(), CmpOp::Gt, n(0)),
            ]),
            legacy_meaning: OnFail::Corrupt(
                "the organization does not exist or does not count the user",
            ),
        };
        match transact_counted(store, actions, 2, &counted).await {
            Ok(()) => return Ok(current),
            Err(err) => match failed_condition(&err) {
                Some((0, item)) => current = user_now(item)?,
                _ => {
                    return Err(explain(
                        err,
                        &[
                            OnFail::NotFound("user"),
                            OnFail::Corrupt("the user's email marker names another user"),
                            counted.legacy_meaning,
                        ],
                    ))
                }
            },
        }
    }
    Err(user_contention(org, username))
}
