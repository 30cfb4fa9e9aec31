//! The repository layer: one function per access pattern of `DATA_MODEL.md`, each making
//! exactly one call on the [`Store`] port, named verb–noun.
//!
//! | # | Access pattern | Function | Request |
//! |---|---|---|---|
//! | 1 | Organization by slug | [`get_org`] | GetItem |
//! | 2 | Organization and a page of its users | [`get_org_with_users`] | Query base table, forward |
//! | 3 | Organization and a page of its newest orders | [`get_org_with_orders`] | Query base table, backward |
//! | 4 | User and a page of their newest tickets | [`get_user_with_tickets`] | Query GSI1, backward |
//! | 5 | Ticket by id | [`get_ticket`] | GetItem |
//! | 6 | A page of an organization's tickets in one status | [`list_org_tickets_by_status`] | Query GSI2, backward |
//! | 7 | Order and its lines | [`get_order_with_lines`] | Query GSI1, forward |
//! | 8, 9 | Any entities by key (`node`, `nodes`, references) | [`batch_get_entities`] | BatchGetItem |
//! | 9 | User, order by key | [`get_user`], [`get_order`] | GetItem |
//! | 10 | Create user, unique on username and email | [`create_user`] | TransactWriteItems |
//! | 11 | Create ticket, bump counters | [`create_ticket`] | TransactWriteItems |
//! | 12 | Place order with its lines, bump counters, at most once per client token | [`place_order`] | TransactWriteItems |
//! | 13 | Change a ticket (status, assignee, priority, title, body) | [`update_ticket`] | PutItem with a version condition, or TransactWriteItems when counters move too (status, assignee) |
//! | 14 | Create organization, unique on slug | [`create_org`] | PutItem `attribute_not_exists` |
//! | 15 | Change a user (name, role, email) | [`update_user`] | UpdateItem; TransactWriteItems swapping the email markers on an email change |
//! | 16 | Delete a user no ticket or order references | [`delete_user`] | GetItem, then TransactWriteItems |
//! | 17 | Move an order along its life cycle | [`update_order_status`] | Query GSI1 (limit 1), then UpdateItem with a version and status condition |
//!
//! Every write is one store write request (a conditional PutItem, UpdateItem or one
//! TransactWriteItems) plus at most the reads its validation needs; each function's doc
//! says which. Every write keeps the counters of `DATA_MODEL.md` equal to the children
//! they count, which `crate::check` verifies over a whole table.
//!
//! Identifiers arrive as the validated types of [`crate::keys`], so a key-forging value
//! cannot reach a request. Paging: see [`Page`].

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::keys::{
    ClientToken, Email, Id, ItemKeys, KeyError, OrderKey, OrderTokenKey, OrgKey, Slug, TicketKey,
    UserEmailKey, UserKey, Username, GSI1, GSI2, PK,
};
use crate::model::{
    Entity, ModelError, Order, OrderLine, OrderStatus, Organization, Record, Role, Ticket,
    TicketPriority, TicketStatus, Timestamp, User, UserEmail,
};
use crate::store::validate::{MAX_BATCH_GET_KEYS, MAX_TRANSACT_ACTIONS, MAX_TRANSACT_BYTES};
use crate::store::value::item_size;
use crate::store::{
    AttributeValue, BatchGet, CancelReason, CmpOp, Condition, Delete, GetItem, Item, PageKey,
    PrimaryKey, Put, Query, ReturnValues, SortCondition, Store, StoreError, TableSchema,
    TransactAction, Update, UpdateExpr,
};

/// Largest page a connection serves.
pub const MAX_PAGE_SIZE: u32 = 100;
/// Most lines one order can have: one transaction holds the order, its lines, the
/// organization's counter, the buyer's counter and the client token's marker.
pub const MAX_ORDER_LINES: usize = MAX_TRANSACT_ACTIONS - 4;

/// Why a repository call failed. Each variant names the GraphQL `code` clients see.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// A bad identifier. `BAD_USER_INPUT`, naming the field.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A page size out of range or a cursor that belongs to another connection.
    /// `BAD_USER_INPUT`.
    #[error("invalid page: {0}")]
    InvalidPage(String),
    /// Input that is well formed but inconsistent (an order whose total is not the sum of
    /// its lines, too many keys in one batch). `BAD_USER_INPUT`.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The entity a write changes, or one it needs, does not exist (`what` names it:
    /// `organization`, `user`, `requester`, `assignee`, `buyer`, `ticket`, `order`).
    /// `NOT_FOUND`.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A unique value is taken (`slug`, `username`, `email`, or an id: `ticket`, `order`,
    /// `order line`). `CONFLICT`.
    #[error("{0} already exists")]
    AlreadyExists(&'static str),
    /// The record changed since the caller read it at version `expected`; `current` is the
    /// version it is at now, read from the item the failed condition returned (`None`
    /// when the store did not say). `VERSION_MISMATCH`.
    #[error("{entity} was changed concurrently: expected version {expected}{}", match .current {
        Some(c) => format!(", it is at version {c}"),
        None => String::new(),
    })]
    VersionMismatch {
        entity: &'static str,
        expected: u32,
        current: Option<u32>,
    },
    /// A status change the entity's life cycle does not allow (`from` and `to` are the
    /// stored status names). `INVALID_TRANSITION`.
    #[error("cannot change the status from {from} to {to}")]
    InvalidTransition { from: String, to: String },
    /// The entity cannot be deleted while others reference it (`what` names them: a
    /// user's requested `tickets`, `assignedTickets`, `orders`). `CONFLICT`.
    #[error("still in use by its {0}")]
    InUse(&'static str),
    /// The table holds an item this code cannot read. `INTERNAL`, detail logged.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The store failed; the store error's doc names the code.
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type RepoResult<T> = Result<T, RepoError>;

/// One page of a connection.
///
/// `forward` is the connection's own order (users by username, orders and tickets newest
/// first, lines by number): `true` serves GraphQL `first`/`after`, `false` reads the other
/// way for `last`/`before` and returns children in that reversed order.
///
/// Each read asks for one item more than `limit` (and one more still on a first forward
/// page, where the parent takes a slot), so a full page knows whether more follows.
/// `start` is the key of the last child of the previous page: later pages query only the
/// children's sort-key prefix, so they never re-read the parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub limit: u32,
    pub start: Option<PageKey>,
    pub forward: bool,
}

impl Page {
    /// The first `limit` children, with the parent.
    pub fn first(limit: u32) -> Self {
        Page {
            limit,
            start: None,
            forward: true,
        }
    }
    /// The `limit` children after `start`.
    pub fn after(limit: u32, start: PageKey) -> Self {
        Page {
            limit,
            start: Some(start),
            forward: true,
        }
    }
    /// The last `limit` children (no parent), last first.
    pub fn last(limit: u32) -> Self {
        Page {
            limit,
            start: None,
            forward: false,
        }
    }
    /// The `limit` children before `start`, nearest first.
    pub fn before(limit: u32, start: PageKey) -> Self {
        Page {
            limit,
            start: Some(start),
            forward: false,
        }
    }
}

/// Access pattern 2. `org` is read only on a first forward page, and is `None` there when
/// the organization does not exist.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgWithUsers {
    pub org: Option<Organization>,
    pub users: Vec<User>,
    /// Set when more users may follow: pass it as the next page's `start`.
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 3, newest orders first.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgWithOrders {
    pub org: Option<Organization>,
    pub orders: Vec<Order>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 4, newest tickets first.
#[derive(Debug, Clone, PartialEq)]
pub struct UserWithTickets {
    pub user: Option<User>,
    pub tickets: Vec<Ticket>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 6, newest first. The queue's size is the organization's status counter.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketPage {
    pub tickets: Vec<Ticket>,
    pub last_evaluated_key: Option<PageKey>,
}

/// Access pattern 7, lines by number.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderWithLines {
    pub order: Option<Order>,
    pub lines: Vec<OrderLine>,
    pub last_evaluated_key: Option<PageKey>,
}

// ---------------------------------------------------------------------------------------
// Reads

/// Access pattern 1: an organization by slug.
pub async fn get_org(store: &dyn Store, org: &Slug) -> RepoResult<Option<Organization>> {
    get_record(store, OrgKey::new(org).primary_key()).await
}

/// Access pattern 9: a user by organization and username (a reference: requester, assignee, buyer).
pub async fn get_user(
    store: &dyn Store,
    org: &Slug,
    username: &Username,
) -> RepoResult<Option<User>> {
    get_record(store, UserKey::new(org, username).primary_key()).await
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

/// Access pattern 9: an order by organization and id.
pub async fn get_order(store: &dyn Store, org: &Slug, order_id: Id) -> RepoResult<Option<Order>> {
    get_record(store, OrderKey::new(org, order_id).primary_key()).await
}

async fn get_record<R: Record>(store: &dyn Store, key: PrimaryKey) -> RepoResult<Option<R>> {
    let item = store
        .get_item(GetItem {
            key,
            consistent_read: false,
        })
        .await?;
    Ok(item.map(R::from_item).transpose()?)
}

/// Access pattern 2: the organization and a page of its users, by username: `PK = ORG#o AND SK >=
/// ORG#o` forward on a first page, `begins_with(SK, USER#)` on later ones.
pub async fn get_org_with_users(
    store: &dyn Store,
    org: &Slug,
    page: Page,
) -> RepoResult<OrgWithUsers> {
    let key = OrgKey::new(org);
    let conn = Connection {
        index: None,
        partition: key.partition(),
        natural_forward: true,
        parent: Some(SortCondition::Ge(key.boundary())),
        children: key.users_prefix(),
    };
    let (org, users, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(OrgWithUsers {
        org,
        users,
        last_evaluated_key,
    })
}

/// Access pattern 3: the organization and a page of its newest orders: `PK = ORG#o AND SK <= ORG#o`
/// backward on a first page, `begins_with(SK, #ORDER#)` on later ones.
pub async fn get_org_with_orders(
    store: &dyn Store,
    org: &Slug,
    page: Page,
) -> RepoResult<OrgWithOrders> {
    let key = OrgKey::new(org);
    let conn = Connection {
        index: None,
        partition: key.partition(),
        natural_forward: false,
        parent: Some(SortCondition::Le(key.boundary())),
        children: key.orders_prefix(),
    };
    let (org, orders, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(OrgWithOrders {
        org,
        orders,
        last_evaluated_key,
    })
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
    };
    let (user, tickets, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(UserWithTickets {
        user,
        tickets,
        last_evaluated_key,
    })
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
    };
    let (_, tickets, last_evaluated_key) =
        read_connection::<Ticket, Ticket>(store, &conn, &page).await?;
    Ok(TicketPage {
        tickets,
        last_evaluated_key,
    })
}

/// Access pattern 7: the order and a page of its lines: GSI1 partition `ORDER#id` forward, where
/// the order sorts below its lines.
pub async fn get_order_with_lines(
    store: &dyn Store,
    order_id: Id,
    page: Page,
) -> RepoResult<OrderWithLines> {
    let conn = Connection {
        index: Some(GSI1),
        partition: OrderKey::lines_partition_of(order_id),
        natural_forward: true,
        parent: Some(SortCondition::Ge(OrderKey::lines_boundary_of(order_id))),
        children: OrderKey::lines_prefix(),
    };
    let (order, lines, last_evaluated_key) = read_connection(store, &conn, &page).await?;
    Ok(OrderWithLines {
        order,
        lines,
        last_evaluated_key,
    })
}

/// Access pattern 1, 5, 9 for one key: any entity by primary key, in one GetItem.
pub async fn get_entity(store: &dyn Store, key: PrimaryKey) -> RepoResult<Option<Entity>> {
    let item = store
        .get_item(GetItem {
            key,
            consistent_read: false,
        })
        .await?;
    Ok(item.map(Entity::from_item).transpose()?)
}

/// Access pattern 8, 9: entities of any type by primary key, in one BatchGetItem (at most 100
/// distinct keys; repeats are asked once). Absent keys are absent from the map.
pub async fn batch_get_entities(
    store: &dyn Store,
    keys: &[PrimaryKey],
) -> RepoResult<HashMap<PrimaryKey, Entity>> {
    let mut seen = HashSet::new();
    let keys: Vec<PrimaryKey> = keys.iter().filter(|k| seen.insert(*k)).cloned().collect();
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    if keys.len() > MAX_BATCH_GET_KEYS {
        return Err(RepoError::Invalid(format!(
            "at most {MAX_BATCH_GET_KEYS} keys per batch, got {}",
            keys.len()
        )));
    }
    let items = store
        .batch_get_item(BatchGet {
            keys,
            consistent_read: false,
        })
        .await?;
    items
        .into_iter()
        .map(|item| {
            let entity = Entity::from_item(item)?;
            Ok((entity.primary_key(), entity))
        })
        .collect()
}

/// One connection: a partition whose children share a sort-key prefix, with the parent
/// (if any) at one end of them in the connection's natural order.
struct Connection {
    index: Option<&'static str>,
    partition: String,
    /// `ScanIndexForward` for the natural order.
    natural_forward: bool,
    /// The key condition that reads the parent and then its children, in natural order.
    parent: Option<SortCondition>,
    /// Sort-key prefix of every child.
    children: &'static str,
}

impl Connection {
    /// The one Query that serves `page`.
    fn query(&self, page: &Page) -> RepoResult<Query> {
        if !(1..=MAX_PAGE_SIZE).contains(&page.limit) {
            return Err(RepoError::InvalidPage(format!(
                "page size must be between 1 and {MAX_PAGE_SIZE}, got {}",
                page.limit
            )));
        }
        if let Some(start) = &page.start {
            self.check_cursor(start)?;
        }
        let (sort, limit) = match (&self.parent, page.forward, &page.start) {
            // Parent, `limit` children, and one more to learn whether a next page exists.
            (Some(parent), true, None) => (parent.clone(), page.limit + 2),
            _ => (
                SortCondition::BeginsWith(self.children.to_owned()),
                page.limit + 1,
            ),
        };
        Ok(Query {
            index: self.index.map(str::to_owned),
            partition: self.partition.clone(),
            sort: Some(sort),
            forward: page.forward == self.natural_forward,
            limit: Some(limit),
            start: page.start.clone(),
            consistent_read: false,
        })
    }

    /// A cursor must be a child of this very connection: anything else would make the
    /// store reject the request, or read another collection.
    fn check_cursor(&self, start: &PageKey) -> RepoResult<()> {
        let key = match (self.index, &start.index) {
            (None, None) => Some((&start.table.pk, &start.table.sk)),
            (Some(_), Some(ik)) => Some((&ik.pk, &ik.sk)),
            _ => None,
        };
        match key {
            Some((pk, sk)) if *pk == self.partition && sk.starts_with(self.children) => Ok(()),
            _ => Err(RepoError::InvalidPage(
                "the cursor does not belong to this connection".into(),
            )),
        }
    }

    /// The sort value of an item in this connection's partition.
    fn sort_value<'i>(&self, schema: &TableSchema, item: &'i Item) -> Option<&'i str> {
        let attr = match self.index {
            None => &schema.sk,
            Some(name) => &schema.index(name)?.sk,
        };
        match item.get(attr)? {
            crate::store::AttributeValue::S(s) => Some(s),
            _ => None,
        }
    }

    /// Splits what the Query returned into the parent, at most `limit` children, and the
    /// cursor of the next page: the key of the last child returned, when more may follow
    /// (more was read, or the store cut the page at its size limit).
    fn split(
        &self,
        schema: &TableSchema,
        page: &Page,
        mut items: Vec<Item>,
        store_cut: bool,
    ) -> RepoResult<(Option<Item>, Vec<Item>, Option<PageKey>)> {
        let parent = match items.first() {
            Some(first)
                if self.parent.is_some()
                    && !self
                        .sort_value(schema, first)
                        .is_some_and(|s| s.starts_with(self.children)) =>
            {
                Some(items.remove(0))
            }
            _ => None,
        };
        let limit = page.limit as usize;
        let more = items.len() > limit || store_cut;
        items.truncate(limit);
        let cursor = match items.last() {
            Some(last) if more => Some(self.page_key(schema, last)?),
            _ => None,
        };
        Ok((parent, items, cursor))
    }

    fn page_key(&self, schema: &TableSchema, item: &Item) -> RepoResult<PageKey> {
        let missing = || StoreError::Internal("a queried item lacks its key attributes".into());
        let table = schema.key_of(item).ok_or_else(missing)?;
        let index = match self.index {
            None => None,
            Some(name) => {
                let index = schema.index(name).ok_or_else(missing)?;
                Some(schema.index_key_of(index, item).ok_or_else(missing)?)
            }
        };
        Ok(PageKey { table, index })
    }
}

async fn read_connection<P: Record, C: Record>(
    store: &dyn Store,
    conn: &Connection,
    page: &Page,
) -> RepoResult<(Option<P>, Vec<C>, Option<PageKey>)> {
    let query = conn.query(page)?;
    let out = store.query(query).await?;
    let (parent, children, cursor) = conn.split(
        store.schema(),
        page,
        out.items,
        out.last_evaluated_key.is_some(),
    )?;
    let parent = parent.map(P::from_item).transpose()?;
    let children = children
        .into_iter()
        .map(C::from_item)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((parent, children, cursor))
}

// ---------------------------------------------------------------------------------------
// Writes

/// What a failed condition of one transaction action means to the caller.
#[derive(Debug, Clone, Copy)]
enum OnFail {
    AlreadyExists(&'static str),
    NotFound(&'static str),
    /// A version condition: absent item means not found, present means changed.
    Version {
        entity: &'static str,
        expected: u32,
    },
    /// The condition guards the table's own consistency (a marker that must point at the
    /// user being changed): failing it means the table holds something no writer made.
    /// `INTERNAL`; `itemgraph check` names the item.
    Corrupt(&'static str),
}

impl OnFail {
    fn error(self, current: Option<&Item>) -> RepoError {
        match self {
            OnFail::AlreadyExists(what) => RepoError::AlreadyExists(what),
            OnFail::NotFound(what) => RepoError::NotFound(what),
            OnFail::Version { entity, expected } => match current {
                None => RepoError::NotFound(entity),
                Some(item) => RepoError::VersionMismatch {
                    entity,
                    expected,
                    current: version_of(item),
                },
            },
            OnFail::Corrupt(what) => RepoError::Store(StoreError::Internal(what.to_owned())),
        }
    }
}

/// The `version` attribute of an item a failed condition returned.
fn version_of(item: &Item) -> Option<u32> {
    match item.get(VERSION)? {
        AttributeValue::N(n) => n.parse().ok(),
        _ => None,
    }
}

/// The version attribute of tickets and orders.
const VERSION: &str = Ticket::VERSION;
/// The status attribute of orders (and tickets).
const STATUS: &str = "status";

/// Which action's condition failed (0 for a single write), with the item it found when
/// the write asked for it.
fn failed_condition(err: &StoreError) -> Option<(usize, Option<&Item>)> {
    match err {
        StoreError::ConditionFailed { item } => Some((0, item.as_deref())),
        StoreError::TransactionCanceled { reasons } => {
            reasons.iter().enumerate().find_map(|(i, r)| match r {
                CancelReason::ConditionalCheckFailed { item } => Some((i, item.as_ref())),
                _ => None,
            })
        }
        _ => None,
    }
}

/// Maps a failed write to what its conditions meant; anything else passes through.
fn explain(err: StoreError, meanings: &[OnFail]) -> RepoError {
    let single = matches!(err, StoreError::ConditionFailed { .. });
    match failed_condition(&err) {
        Some((i, item)) if !single || meanings.len() == 1 => match meanings.get(i) {
            Some(meaning) => meaning.error(item),
            None => RepoError::Store(err),
        },
        _ => RepoError::Store(err),
    }
}

fn put_new(item: Item) -> TransactAction {
    TransactAction::Put(Put::new(item).when(Condition::not_exists(PK)))
}

fn bump(key: PrimaryKey, update: UpdateExpr) -> TransactAction {
    TransactAction::Update(Update::new(key, update).when(Condition::exists(PK)))
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: u32) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Access pattern 14: creates an organization, unique on its slug. One PutItem
/// `attribute_not_exists(PK)`, no read. The counters are written as 0 whatever `org`
/// says: a new organization has no children yet. `AlreadyExists("slug")`.
pub async fn create_org(store: &dyn Store, org: &Organization) -> RepoResult<()> {
    let org = Organization::new(
        org.slug.clone(),
        org.name.clone(),
        org.plan,
        org.created_at.clone(),
    );
    store
        .put_item(Put::new(org.to_item()).when(Condition::not_exists(PK)))
        .await
        .map(|_| ())
        .map_err(|e| explain(e, &[OnFail::AlreadyExists("slug")]))
}

/// Access pattern 10: creates a user in an existing organization, unique on username
/// (within the organization) and on email (across the table), and counts it on the
/// organization. One TransactWriteItems, no read: Put the user `attribute_not_exists`
/// (`AlreadyExists("username")`), Put its email marker `attribute_not_exists`
/// (`AlreadyExists("email")`), `ADD userCount 1` on the organization, which must exist
/// (`NotFound("organization")`). The user's counters (`ticketCount`,
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
    let actions = vec![
        put_new(user.to_item()),
        put_new(marker.to_item()),
        bump(
            OrgKey::new(&user.org).primary_key(),
            UpdateExpr::default().add(Organization::USER_COUNT, 1),
        ),
    ];
    let meanings = [
        OnFail::AlreadyExists("username"),
        OnFail::AlreadyExists("email"),
        OnFail::NotFound("organization"),
    ];
    store
        .transact_write(actions)
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
            Delete::new(UserEmailKey::new(&current.email).primary_key())
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
/// userCount -1` on the organization. `NotFound("user")`. When the user changed in
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
                Delete::new(UserEmailKey::new(&current.email).primary_key())
                    .when(marker_is_theirs(&current)),
            ),
            bump(
                OrgKey::new(org).primary_key(),
                UpdateExpr::default().add(Organization::USER_COUNT, -1),
            ),
        ];
        match store.transact_write(actions).await {
            Ok(()) => return Ok(current),
            Err(err) => match failed_condition(&err) {
                Some((0, item)) => current = user_now(item)?,
                _ => {
                    return Err(explain(
                        err,
                        &[
                            OnFail::NotFound("user"),
                            OnFail::Corrupt("the user's email marker names another user"),
                            OnFail::NotFound("organization"),
                        ],
                    ))
                }
            },
        }
    }
    Err(user_contention(org, username))
}

/// Access pattern 11: creates a ticket and counts it on the organization (in total and in
/// its status), on its requester and on its assignee. One TransactWriteItems, no read: Put
/// the ticket `attribute_not_exists` (`AlreadyExists("ticket")`), `ADD` the organization's
/// counters (`NotFound("organization")`), `ADD ticketCount 1` on the requester
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
    let mut actions = vec![
        put_new(ticket.to_item()),
        bump(
            OrgKey::new(&ticket.org).primary_key(),
            UpdateExpr::default()
                .add(Organization::TICKET_COUNT, 1)
                .add(Organization::status_counter(ticket.status), 1),
        ),
        bump(
            UserKey::new(&ticket.org, &ticket.requester).primary_key(),
            requester,
        ),
    ];
    let mut meanings = vec![
        OnFail::AlreadyExists("ticket"),
        OnFail::NotFound("organization"),
        OnFail::NotFound("requester"),
    ];
    if let Some(assignee) = ticket.assignee.as_ref().filter(|_| !self_assigned) {
        actions.push(bump(
            UserKey::new(&ticket.org, assignee).primary_key(),
            UpdateExpr::default().add(User::ASSIGNED_TICKET_COUNT, 1),
        ));
        meanings.push(OnFail::NotFound("assignee"));
    }
    store
        .transact_write(actions)
        .await
        .map_err(|e| explain(e, &meanings))
}

/// The idempotency marker of a client token (`Type` `OrderToken`): which order the first
/// [`place_order`] with this token placed. Its key is [`OrderTokenKey`], a partition of its
/// own. Only [`place_order`] and `crate::check` read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderToken {
    pub org: Slug,
    pub token: ClientToken,
    pub order_id: Id,
    pub created_at: Timestamp,
}

impl Record for OrderToken {
    const TYPE: &'static str = "OrderToken";
    fn keys(&self) -> ItemKeys {
        OrderTokenKey::new(&self.org, &self.token).item_keys()
    }
}

/// What [`place_order`] returns: the order and its lines as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedOrder {
    pub order: Order,
    pub lines: Vec<OrderLine>,
    /// True when the client token had already placed an order: this is that order, read
    /// back, and nothing was written.
    pub replayed: bool,
}

/// How many times a replay reads the order its token names before giving up: the order
/// and the marker are written together, but the order is read on GSI1, which DynamoDB
/// updates a moment after the transaction.
const REPLAY_READ_ATTEMPTS: u32 = 6;

/// Access pattern 12: places an order with its lines and counts it on the organization and
/// on the buyer, who must exist. Lines are numbered 1..=n, `amountCents = quantity × unitPriceCents`,
/// and the order's `lineCount` and `totalCents` agree with them (else `Invalid`).
///
/// One TransactWriteItems, no read: Put the order and each line `attribute_not_exists`
/// (`AlreadyExists("order")`, `AlreadyExists("order line")`), `ADD orderCount 1` on the
/// organization (`NotFound("organization")`) and `ADD orderCount 1` on the buyer
/// (`NotFound("buyer")`), each conditioned on its item existing. At most
/// [`MAX_ORDER_LINES`] lines.
///
/// With a `client_token` (1 to 64 of `[A-Za-z0-9_-]`, else `Invalid`), the same
/// transaction puts the token's marker `attribute_not_exists`. When the marker is there
/// already, the token placed an order before: nothing is written, and the order it names
/// is read back (access pattern 7, one Query on GSI1; again with backoff while the index
/// has not caught up) and returned with `replayed: true`. A retried call thus places one
/// order, whatever `order` it carries the second time.
pub async fn place_order(
    store: &dyn Store,
    order: &Order,
    lines: &[OrderLine],
    client_token: Option<&str>,
) -> RepoResult<PlacedOrder> {
    let token = client_token
        .map(|t| ClientToken::parse(t).map_err(|e| RepoError::Invalid(e.to_string())))
        .transpose()?;
    check_order(order, lines)?;
    let mut actions: Vec<TransactAction> = Vec::with_capacity(lines.len() + 4);
    let mut meanings = Vec::with_capacity(lines.len() + 4);
    if let Some(token) = &token {
        let marker = OrderToken {
            org: order.org.clone(),
            token: token.clone(),
            order_id: order.order_id,
            created_at: crate::model::now(),
        };
        let mut put = Put::new(marker.to_item()).when(Condition::not_exists(PK));
        put.return_old_on_condition_failure = true;
        actions.push(TransactAction::Put(put));
        meanings.push(OnFail::AlreadyExists("clientToken"));
    }
    actions.push(put_new(order.to_item()));
    meanings.push(OnFail::AlreadyExists("order"));
    actions.extend(lines.iter().map(|l| put_new(l.to_item())));
    meanings.extend(lines.iter().map(|_| OnFail::AlreadyExists("order line")));
    actions.push(bump(
        OrgKey::new(&order.org).primary_key(),
        UpdateExpr::default().add(Organization::ORDER_COUNT, 1),
    ));
    meanings.push(OnFail::NotFound("organization"));
    actions.push(bump(
        UserKey::new(&order.org, &order.buyer).primary_key(),
        UpdateExpr::default().add(User::ORDER_COUNT, 1),
    ));
    meanings.push(OnFail::NotFound("buyer"));

    let err = match store.transact_write(actions).await {
        Ok(()) => {
            return Ok(PlacedOrder {
                order: order.clone(),
                lines: lines.to_vec(),
                replayed: false,
            })
        }
        Err(err) => err,
    };
    // The marker is the first action: whatever else failed, a used token is a replay.
    let replay_of = match (&token, &err) {
        (Some(_), StoreError::TransactionCanceled { reasons }) => match reasons.first() {
            Some(CancelReason::ConditionalCheckFailed { item: Some(item) }) => {
                Some(OrderToken::from_item(item.clone())?)
            }
            _ => None,
        },
        _ => None,
    };
    match replay_of {
        Some(marker) => replay_order(store, &marker).await,
        None => Err(explain(err, &meanings)),
    }
}

/// Reads back the order a client token placed: access pattern 7, every page of lines.
async fn replay_order(store: &dyn Store, marker: &OrderToken) -> RepoResult<PlacedOrder> {
    for attempt in 0..REPLAY_READ_ATTEMPTS {
        let first =
            get_order_with_lines(store, marker.order_id, Page::first(MAX_PAGE_SIZE)).await?;
        if let Some(order) = first.order {
            let mut lines = first.lines;
            let mut next = first.last_evaluated_key;
            while let Some(start) = next {
                let page =
                    get_order_with_lines(store, marker.order_id, Page::after(MAX_PAGE_SIZE, start))
                        .await?;
                lines.extend(page.lines);
                next = page.last_evaluated_key;
            }
            return Ok(PlacedOrder {
                order,
                lines,
                replayed: true,
            });
        }
        tokio::time::sleep(crate::store::backoff(attempt)).await;
    }
    Err(RepoError::Store(StoreError::Unavailable(format!(
        "client token {} placed order {}, which cannot be read yet; try again",
        marker.token, marker.order_id
    ))))
}

/// The invariants [`place_order`] keeps; also used to check the demo data.
pub fn check_order(order: &Order, lines: &[OrderLine]) -> RepoResult<()> {
    let invalid = |m: String| Err(RepoError::Invalid(m));
    if lines.is_empty() || lines.len() > MAX_ORDER_LINES {
        return invalid(format!(
            "an order has 1 to {MAX_ORDER_LINES} lines, got {}",
            lines.len()
        ));
    }
    if order.line_count as usize != lines.len() {
        return invalid(format!(
            "lineCount is {} but there are {} lines",
            order.line_count,
            lines.len()
        ));
    }
    let mut total: i64 = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.order_id != order.order_id {
            return invalid(format!(
                "line {} belongs to order {}",
                line.line_no, line.order_id
            ));
        }
        if usize::from(line.line_no.get()) != i + 1 {
            return invalid(format!("line {} is numbered {}", i + 1, line.line_no));
        }
        if i64::from(line.quantity).checked_mul(line.unit_price_cents) != Some(line.amount_cents) {
            return invalid(format!(
                "line {}: amount is not quantity × unit price",
                line.line_no
            ));
        }
        total = total
            .checked_add(line.amount_cents)
            .ok_or_else(|| RepoError::Invalid("order total overflows".into()))?;
    }
    if total != order.total_cents {
        return invalid(format!(
            "totalCents is {} but the lines add up to {total}",
            order.total_cents
        ));
    }
    Ok(())
}

/// Whether an order may move from `from` to `to`: PLACED → PAID or CANCELLED, PAID →
/// SHIPPED or CANCELLED, SHIPPED → DELIVERED. DELIVERED and CANCELLED are final, and
/// staying in the same status is not a transition.
pub fn order_transition_allowed(from: OrderStatus, to: OrderStatus) -> bool {
    use OrderStatus::{Cancelled, Delivered, Paid, Placed, Shipped};
    matches!(
        (from, to),
        (Placed, Paid | Cancelled) | (Paid, Shipped | Cancelled) | (Shipped, Delivered)
    )
}

fn check_order_transition(from: OrderStatus, to: OrderStatus) -> RepoResult<()> {
    if order_transition_allowed(from, to) {
        Ok(())
    } else {
        Err(RepoError::InvalidTransition {
            from: from.as_str().to_owned(),
            to: to.as_str().to_owned(),
        })
    }
}

/// Access pattern 17: moves an order to `status` when the caller's `expected_version` is
/// current and the life cycle allows it (see [`order_transition_allowed`]); returns the
/// order as written, at version `expected_version + 1`.
///
/// Reads the order first: one Query on GSI1 (`GSI1PK = ORDER#<id>`, the order's own sort
/// key, limit 1) → `NotFound("order")`. The index is eventually consistent: when it shows
/// an older version than the caller expects, one strongly consistent GetItem of the
/// order on the base table follows. A version other than the expected one is
/// `VersionMismatch` with the current version; a forbidden move is `InvalidTransition`.
/// Then one UpdateItem `SET status, version = expected + 1` conditioned on
/// `version = expected AND status = <status read>`, so no concurrent transition can slip
/// in between; when that fails the item it returns decides: `VersionMismatch` with its
/// version, or `InvalidTransition` from its status if only the status moved.
pub async fn update_order_status(
    store: &dyn Store,
    order_id: Id,
    status: OrderStatus,
    expected_version: u32,
) -> RepoResult<Order> {
    update_org_order_status(store, None, order_id, status, expected_version).await
}

/// [`update_order_status`] for a caller who names the order's organization too (a global
/// id carries it): an order of another organization is `NotFound("order")`, before any
/// write.
pub async fn update_org_order_status(
    store: &dyn Store,
    org: Option<&Slug>,
    order_id: Id,
    status: OrderStatus,
    expected_version: u32,
) -> RepoResult<Order> {
    let out = store
        .query(Query {
            index: Some(GSI1.to_owned()),
            partition: OrderKey::lines_partition_of(order_id),
            sort: Some(SortCondition::Eq(OrderKey::lines_boundary_of(order_id))),
            forward: true,
            limit: Some(1),
            start: None,
            consistent_read: false,
        })
        .await?;
    let Some(item) = out.items.into_iter().next() else {
        return Err(RepoError::NotFound("order"));
    };
    let mut current = Order::from_item(item)?;
    if org.is_some_and(|org| *org != current.org) {
        return Err(RepoError::NotFound("order"));
    }
    if current.version < expected_version {
        let item = store
            .get_item(GetItem {
                key: current.primary_key(),
                consistent_read: true,
            })
            .await?;
        current = match item {
            Some(item) => Order::from_item(item)?,
            None => return Err(RepoError::NotFound("order")),
        };
    }
    let mismatch = |current: u32| RepoError::VersionMismatch {
        entity: "order",
        expected: expected_version,
        current: Some(current),
    };
    if current.version != expected_version {
        return Err(mismatch(current.version));
    }
    check_order_transition(current.status, status)?;
    let next_version = expected_version
        .checked_add(1)
        .ok_or_else(|| RepoError::Invalid("order version overflows".into()))?;

    let mut update = Update::new(
        current.primary_key(),
        UpdateExpr::default()
            .set(STATUS, s(status.as_str()))
            .set(VERSION, n(next_version)),
    )
    .when(Condition::And(vec![
        Condition::eq(VERSION, n(expected_version)),
        Condition::eq(STATUS, s(current.status.as_str())),
    ]))
    .returning(ReturnValues::AllNew);
    update.return_old_on_condition_failure = true;
    match store.update_item(update).await {
        Ok(Some(item)) => Ok(Order::from_item(item)?),
        Ok(None) => Err(RepoError::Store(StoreError::Internal(
            "UpdateItem with ALL_NEW returned no item".into(),
        ))),
        Err(StoreError::ConditionFailed { item: None }) => Err(RepoError::NotFound("order")),
        Err(StoreError::ConditionFailed { item: Some(item) }) => {
            let now = Order::from_item(*item)?;
            if now.version != expected_version {
                Err(mismatch(now.version))
            } else {
                Err(RepoError::InvalidTransition {
                    from: now.status.as_str().to_owned(),
                    to: status.as_str().to_owned(),
                })
            }
        }
        Err(e) => Err(e.into()),
    }
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
/// counters move in the same transaction. When the assignee changes, so do the users'
/// `assignedTicketCount`s: `ADD -1` on the old assignee (conditioned on existing with a
/// positive count: anything else is a table no writer made, `INTERNAL`) and `ADD 1` on
/// the new one, who must exist (`NotFound("assignee")`). The version condition makes
/// `current.assignee` the assignee as stored. Otherwise it is a single conditional
/// PutItem. `NotFound("ticket")` when the ticket is gone, `VersionMismatch` (with the
/// version it is at now) when it changed since `current` was read.
pub async fn update_ticket(
    store: &dyn Store,
    current: &Ticket,
    change: &TicketChange,
) -> RepoResult<Ticket> {
    let mut next = change.applied_to(current);
    next.version = current
        .version
        .checked_add(1)
        .ok_or_else(|| RepoError::Invalid("ticket version overflows".into()))?;

    let version = OnFail::Version {
        entity: "ticket",
        expected: current.version,
    };
    let mut put = Put::new(next.to_item()).when(Condition::eq(VERSION, n(current.version)));
    put.return_old_on_condition_failure = true;

    let mut actions = vec![TransactAction::Put(put)];
    let mut meanings = vec![version];
    if next.status != current.status {
        actions.push(bump(
            OrgKey::new(&current.org).primary_key(),
            UpdateExpr::default()
                .add(Organization::status_counter(current.status), -1)
                .add(Organization::status_counter(next.status), 1),
        ));
        meanings.push(OnFail::NotFound("organization"));
    }
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

    let written = if actions.len() == 1 {
        let Some(TransactAction::Put(put)) = actions.pop() else {
            unreachable!("one Put action")
        };
        store.put_item(put).await.map(|_| ())
    } else {
        store.transact_write(actions).await
    };
    written.map_err(|e| explain(e, &meanings))?;
    Ok(next)
}

/// Writes items for seeding: TransactWriteItems in chunks of at most 100 distinct items and
/// 4 MB, each chunk all or nothing. Refuses (before writing anything) an item without a
/// key or two items with the same key, rather than letting one silently win. Returns how
/// many items were written.
pub async fn put_entities(store: &dyn Store, items: Vec<Item>) -> RepoResult<usize> {
    let total = items.len();
    for chunk in chunk_items(store.schema(), items)? {
        let actions = chunk
            .into_iter()
            .map(|item| TransactAction::Put(Put::new(item)))
            .collect();
        store.transact_write(actions).await?;
    }
    Ok(total)
}

/// Splits items into transactions of at most 100 items and 4 MB; checks keys first.
fn chunk_items(schema: &TableSchema, items: Vec<Item>) -> RepoResult<Vec<Vec<Item>>> {
    let mut seen = HashSet::with_capacity(items.len());
    for item in &items {
        let key = schema
            .key_of(item)
            .ok_or_else(|| RepoError::Invalid("an item has no primary key".into()))?;
        if !seen.insert(key.clone()) {
            return Err(RepoError::Invalid(format!(
                "two items have the key ({}, {})",
                key.pk, key.sk
            )));
        }
    }
    let mut chunks: Vec<Vec<Item>> = Vec::new();
    let mut bytes = 0;
    for item in items {
        let size = item_size(&item);
        let full = chunks
            .last()
            .is_none_or(|c| c.len() == MAX_TRANSACT_ACTIONS || bytes + size > MAX_TRANSACT_BYTES);
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        chunks.last_mut().expect("pushed above").push(item);
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;

    use super::*;
    use crate::keys::{Email, LineNo};
    use crate::model::{timestamp_from_ms, OrderStatus, Plan, Role, TicketPriority};
    use crate::store::embedded::EmbeddedStore;
    use crate::store::{
        BatchGetPage, Delete, IndexKey, QueryOutput, StoreResult, TableDescription,
    };

    fn slug(s: &str) -> Slug {
        Slug::parse(s).unwrap()
    }
    fn name(s: &str) -> Username {
        Username::parse(s).unwrap()
    }

    /// Counts the port calls an access pattern makes.
    struct Counting {
        inner: EmbeddedStore,
        calls: AtomicUsize,
        /// A write made (uncounted) just before the next transaction: another client
        /// racing between a write's read and its transaction.
        before_transact: std::sync::Mutex<Option<Update>>,
    }

    impl Counting {
        fn take(&self) -> usize {
            self.calls.swap(0, Ordering::SeqCst)
        }
        fn tick(&self) {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[async_trait]
    impl Store for Counting {
        fn table_name(&self) -> &str {
            self.inner.table_name()
        }
        fn schema(&self) -> &TableSchema {
            self.inner.schema()
        }
        fn engine_name(&self) -> &'static str {
            "counting"
        }
        async fn create_table(&self) -> StoreResult<bool> {
            self.inner.create_table().await
        }
        async fn delete_table(&self) -> StoreResult<bool> {
            self.inner.delete_table().await
        }
        async fn describe_table(&self) -> StoreResult<Option<TableDescription>> {
            self.inner.describe_table().await
        }
        async fn get_item(&self, req: GetItem) -> StoreResult<Option<Item>> {
            self.tick();
            self.inner.get_item(req).await
        }
        async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
            self.inner.batch_get_page(req).await
        }
        async fn batch_get_item(&self, req: BatchGet) -> StoreResult<Vec<Item>> {
            self.tick();
            self.inner.batch_get_item(req).await
        }
        async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
            self.tick();
            self.inner.query(req).await
        }
        async fn scan(&self, req: crate::store::Scan) -> StoreResult<QueryOutput> {
            self.tick();
            self.inner.scan(req).await
        }
        async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
            self.tick();
            self.inner.put_item(req).await
        }
        async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
            self.tick();
            self.inner.update_item(req).await
        }
        async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
            self.tick();
            self.inner.delete_item(req).await
        }
        async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
            self.tick();
            let racing = self.before_transact.lock().unwrap().take();
            if let Some(update) = racing {
                self.inner.update_item(update).await?;
            }
            self.inner.transact_write(actions).await
        }
    }

    async fn store() -> Counting {
        let inner = EmbeddedStore::in_memory("t", TableSchema::itemgraph()).unwrap();
        inner.create_table().await.unwrap();
        Counting {
            inner,
            calls: AtomicUsize::new(0),
            before_transact: std::sync::Mutex::new(None),
        }
    }

    fn org(s: &str) -> Organization {
        Organization::new(slug(s), s.to_uppercase(), Plan::Team, timestamp_from_ms(0))
    }

    fn user(o: &str, u: &str) -> User {
        User {
            org: slug(o),
            username: name(u),
            email: Email::parse(&format!("{u}@{o}.example")).unwrap(),
            name: u.to_uppercase(),
            role: Role::Member,
            created_at: timestamp_from_ms(1),
            ticket_count: 0,
            assigned_ticket_count: 0,
            order_count: 0,
        }
    }

    fn ticket(o: &str, u: &str, ms: u64, status: TicketStatus) -> Ticket {
        Ticket {
            ticket_id: Id::from_parts(ms, 7),
            org: slug(o),
            title: format!("t{ms}"),
            body: String::new(),
            status,
            priority: TicketPriority::Normal,
            requester: name(u),
            assignee: None,
            created_at: timestamp_from_ms(ms),
            updated_at: timestamp_from_ms(ms),
            version: 1,
        }
    }

    fn order(o: &str, u: &str, ms: u64, lines: u16) -> (Order, Vec<OrderLine>) {
        let order_id = Id::from_parts(ms, 9);
        let lines: Vec<OrderLine> = (1..=lines)
            .map(|n| OrderLine {
                order_id,
                line_no: LineNo::new(n).unwrap(),
                sku: format!("SKU-{n}"),
                description: "thing".into(),
                quantity: u32::from(n),
                unit_price_cents: 100,
                amount_cents: i64::from(n) * 100,
            })
            .collect();
        let order = Order {
            order_id,
            org: slug(o),
            buyer: name(u),
            status: OrderStatus::Placed,
            placed_at: timestamp_from_ms(ms),
            currency: "USD".into(),
            total_cents: lines.iter().map(|l| l.amount_cents).sum(),
            line_count: lines.len() as u32,
            version: 1,
        };
        (order, lines)
    }

    fn usernames(users: &[User]) -> Vec<&str> {
        users.iter().map(|u| u.username.as_str()).collect()
    }

    #[test]
    fn first_forward_page_reads_parent_and_one_extra() {
        let key = OrgKey::new(&slug("acme"));
        let conn = Connection {
            index: None,
            partition: key.partition(),
            natural_forward: false,
            parent: Some(SortCondition::Le(key.boundary())),
            children: key.orders_prefix(),
        };
        let q = conn.query(&Page::first(10)).unwrap();
        assert_eq!(q.sort, Some(SortCondition::Le("ORG#acme".into())));
        assert_eq!((q.limit, q.forward), (Some(12), false));

        let start = PageKey {
            table: PrimaryKey::new("ORG#acme", "#ORDER#01H"),
            index: None,
        };
        let q = conn.query(&Page::after(10, start.clone())).unwrap();
        assert_eq!(q.sort, Some(SortCondition::BeginsWith("#ORDER#".into())));
        assert_eq!((q.limit, q.forward), (Some(11), false));
        assert_eq!(q.start, Some(start));

        let q = conn.query(&Page::last(10)).unwrap();
        assert_eq!(q.sort, Some(SortCondition::BeginsWith("#ORDER#".into())));
        assert_eq!((q.limit, q.forward), (Some(11), true));
    }

    #[test]
    fn page_sizes_and_foreign_cursors_are_refused() {
        let key = OrgKey::new(&slug("acme"));
        let conn = Connection {
            index: None,
            partition: key.partition(),
            natural_forward: true,
            parent: Some(SortCondition::Ge(key.boundary())),
            children: key.users_prefix(),
        };
        for limit in [0, MAX_PAGE_SIZE + 1] {
            assert!(matches!(
                conn.query(&Page::first(limit)),
                Err(RepoError::InvalidPage(_))
            ));
        }
        let foreign = [
            PageKey {
                table: PrimaryKey::new("ORG#other", "USER#x"),
                index: None,
            },
            PageKey {
                table: PrimaryKey::new("ORG#acme", "ORG#acme"),
                index: None,
            },
            PageKey {
                table: PrimaryKey::new("ORG#acme", "USER#x"),
                index: Some(IndexKey {
                    pk: "ORG#acme".into(),
                    sk: "USER#x".into(),
                }),
            },
        ];
        for start in foreign {
            assert!(matches!(
                conn.query(&Page::after(5, start)),
                Err(RepoError::InvalidPage(_))
            ));
        }
    }

    #[test]
    fn chunks_hold_at_most_100_distinct_items() {
        let schema = TableSchema::itemgraph();
        let items: Vec<Item> = (0..250)
            .map(|i| user("acme", &format!("u{i}")).to_item())
            .collect();
        let chunks = chunk_items(&schema, items.clone()).unwrap();
        assert_eq!(
            chunks.iter().map(Vec::len).collect::<Vec<_>>(),
            [100, 100, 50]
        );
        let mut dup = items[..3].to_vec();
        dup.push(items[1].clone());
        assert!(matches!(
            chunk_items(&schema, dup),
            Err(RepoError::Invalid(_))
        ));
        assert!(chunk_items(&schema, vec![Item::new()]).is_err());
    }

    #[test]
    fn order_invariants() {
        let (o, lines) = order("acme", "wile", 5, 3);
        check_order(&o, &lines).unwrap();
        let mut bad = o.clone();
        bad.total_cents += 1;
        assert!(check_order(&bad, &lines).is_err());
        let mut bad_lines = lines.clone();
        bad_lines.swap(0, 1);
        assert!(check_order(&o, &bad_lines).is_err());
        assert!(check_order(&o, &lines[..2]).is_err());
    }

    /// Seeds an org with 7 users and 5 orders; the org item sits between them.
    async fn seed_org(s: &Counting) {
        let mut o = org("acme");
        o.user_count = 7;
        o.order_count = 5;
        let mut items = vec![o.to_item(), org("acmf").to_item()];
        items.extend((0..7).map(|i| user("acme", &format!("u{i}")).to_item()));
        items.push(user("acmf", "u9").to_item());
        for i in 0..5 {
            let (o, lines) = order("acme", "u0", 100 + i, 2);
            items.push(o.to_item());
            items.extend(lines.iter().map(Record::to_item));
        }
        put_entities(s, items).await.unwrap();
        s.take();
    }

    #[tokio::test]
    async fn org_with_users_pages_exactly_and_never_rereads_the_org() {
        let s = store().await;
        seed_org(&s).await;
        let acme = slug("acme");

        let p1 = get_org_with_users(&s, &acme, Page::first(3)).await.unwrap();
        assert_eq!(s.take(), 1);
        assert_eq!(p1.org.as_ref().unwrap().slug, "acme");
        assert_eq!(usernames(&p1.users), ["u0", "u1", "u2"]);
        let next = p1.last_evaluated_key.unwrap();
        assert_eq!(next.table, PrimaryKey::new("ORG#acme", "USER#u2"));

        let p2 = get_org_with_users(&s, &acme, Page::after(3, next))
            .await
            .unwrap();
        assert_eq!(p2.org, None);
        assert_eq!(usernames(&p2.users), ["u3", "u4", "u5"]);
        let p3 = get_org_with_users(&s, &acme, Page::after(3, p2.last_evaluated_key.unwrap()))
            .await
            .unwrap();
        assert_eq!(usernames(&p3.users), ["u6"]);
        assert_eq!(p3.last_evaluated_key, None);

        // Exactly a page's worth: no next page is announced.
        let all = get_org_with_users(&s, &acme, Page::first(7)).await.unwrap();
        assert_eq!(all.users.len(), 7);
        assert_eq!(all.last_evaluated_key, None);

        let back = get_org_with_users(&s, &acme, Page::last(2)).await.unwrap();
        assert_eq!((back.org, usernames(&back.users)), (None, vec!["u6", "u5"]));

        let none = get_org_with_users(&s, &slug("nope"), Page::first(3))
            .await
            .unwrap();
        assert_eq!((none.org, none.users.len()), (None, 0));
    }

    #[tokio::test]
    async fn org_with_orders_is_newest_first() {
        let s = store().await;
        seed_org(&s).await;
        let acme = slug("acme");
        let p1 = get_org_with_orders(&s, &acme, Page::first(2))
            .await
            .unwrap();
        assert_eq!(s.take(), 1);
        assert!(p1.org.is_some());
        let ms: Vec<u64> = p1
            .orders
            .iter()
            .map(|o| o.order_id.timestamp_ms())
            .collect();
        assert_eq!(ms, [104, 103]);
        let p2 = get_org_with_orders(&s, &acme, Page::after(2, p1.last_evaluated_key.unwrap()))
            .await
            .unwrap();
        let ms: Vec<u64> = p2
            .orders
            .iter()
            .map(|o| o.order_id.timestamp_ms())
            .collect();
        assert_eq!(ms, [102, 101]);
        assert!(p2.last_evaluated_key.is_some());

        let (o, _) = order("acme", "u0", 103, 2);
        let with_lines = get_order_with_lines(&s, o.order_id, Page::first(10))
            .await
            .unwrap();
        assert_eq!(s.take(), 2);
        assert_eq!(with_lines.order, Some(o));
        assert_eq!(with_lines.lines.len(), 2);
        assert_eq!(with_lines.last_evaluated_key, None);
        let one = get_order_with_lines(&s, with_lines.order.unwrap().order_id, Page::first(1))
            .await
            .unwrap();
        assert_eq!(one.lines[0].line_no.get(), 1);
        let rest = get_order_with_lines(
            &s,
            one.order.unwrap().order_id,
            Page::after(1, one.last_evaluated_key.unwrap()),
        )
        .await
        .unwrap();
        assert_eq!(
            (rest.order, rest.lines.len(), rest.last_evaluated_key),
            (None, 1, None)
        );
    }

    #[tokio::test]
    async fn writers_keep_counters_and_uniqueness() {
        let s = store().await;
        let acme = slug("acme");
        put_entities(&s, vec![org("acme").to_item()]).await.unwrap();
        s.take();

        create_user(&s, &user("acme", "wile")).await.unwrap();
        create_user(&s, &user("acme", "road")).await.unwrap();
        assert_eq!(s.take(), 2);
        assert!(matches!(
            create_user(&s, &user("acme", "wile")).await,
            Err(RepoError::AlreadyExists("username"))
        ));
        let mut same_email = user("acme", "other");
        same_email.email = Email::parse("WILE@acme.example").unwrap();
        assert!(matches!(
            create_user(&s, &same_email).await,
            Err(RepoError::AlreadyExists("email"))
        ));
        assert!(matches!(
            create_user(&s, &user("nope", "x")).await,
            Err(RepoError::NotFound("organization"))
        ));

        for (i, status) in [
            TicketStatus::Open,
            TicketStatus::Open,
            TicketStatus::Pending,
        ]
        .into_iter()
        .enumerate()
        {
            create_ticket(&s, &ticket("acme", "wile", 1000 + i as u64, status))
                .await
                .unwrap();
        }
        let mut orphan = ticket("acme", "ghost", 2000, TicketStatus::Open);
        assert!(matches!(
            create_ticket(&s, &orphan).await,
            Err(RepoError::NotFound("requester"))
        ));
        orphan.requester = name("wile");
        orphan.assignee = Some(name("ghost"));
        assert!(matches!(
            create_ticket(&s, &orphan).await,
            Err(RepoError::NotFound("assignee"))
        ));

        let (o, lines) = order("acme", "road", 3000, 3);
        place_order(&s, &o, &lines, None).await.unwrap();
        let (o2, lines2) = order("acme", "ghost", 3001, 1);
        assert!(matches!(
            place_order(&s, &o2, &lines2, None).await,
            Err(RepoError::NotFound("buyer"))
        ));

        let a = get_org(&s, &acme).await.unwrap().unwrap();
        assert_eq!(
            (
                a.user_count,
                a.ticket_count,
                a.ticket_count_open,
                a.ticket_count_pending,
                a.order_count
            ),
            (2, 3, 2, 1, 1)
        );

        s.take();
        let uwt = get_user_with_tickets(&s, &acme, &name("wile"), Page::first(2))
            .await
            .unwrap();
        assert_eq!(s.take(), 1);
        assert_eq!(uwt.user.unwrap().ticket_count, 3);
        let ms: Vec<u64> = uwt
            .tickets
            .iter()
            .map(|t| t.ticket_id.timestamp_ms())
            .collect();
        assert_eq!(ms, [1002, 1001]);
        let rest = get_user_with_tickets(
            &s,
            &acme,
            &name("wile"),
            Page::after(2, uwt.last_evaluated_key.unwrap()),
        )
        .await
        .unwrap();
        assert_eq!(
            (rest.user, rest.tickets.len(), rest.last_evaluated_key),
            (None, 1, None)
        );

        // A status change moves the ticket between queues and counters, version-checked.
        let t = get_ticket(&s, Id::from_parts(1000, 7))
            .await
            .unwrap()
            .unwrap();
        let change = TicketChange {
            status: Some(TicketStatus::Solved),
            assignee: Some(Some(name("road"))),
            ..TicketChange::at(timestamp_from_ms(5000))
        };
        s.take();
        let t2 = update_ticket(&s, &t, &change).await.unwrap();
        assert_eq!(s.take(), 1);
        assert_eq!((t2.version, t2.status), (2, TicketStatus::Solved));
        assert!(matches!(
            update_ticket(&s, &t, &change).await,
            Err(RepoError::VersionMismatch {
                entity: "ticket",
                expected: 1,
                current: Some(2)
            })
        ));
        let gone = Ticket {
            ticket_id: Id::from_parts(9, 9),
            ..t.clone()
        };
        let assign_only = TicketChange {
            assignee: Some(None),
            ..TicketChange::at(timestamp_from_ms(6000))
        };
        assert!(matches!(
            update_ticket(&s, &gone, &assign_only).await,
            Err(RepoError::NotFound("ticket"))
        ));
        let t3 = update_ticket(&s, &t2, &assign_only).await.unwrap();
        assert_eq!((t3.version, t3.assignee.clone()), (3, None));

        let open = list_org_tickets_by_status(&s, &acme, TicketStatus::Open, Page::first(5))
            .await
            .unwrap();
        let ms: Vec<u64> = open
            .tickets
            .iter()
            .map(|t| t.ticket_id.timestamp_ms())
            .collect();
        assert_eq!(ms, [1001]);
        let solved = list_org_tickets_by_status(&s, &acme, TicketStatus::Solved, Page::first(5))
            .await
            .unwrap();
        assert_eq!(solved.tickets, [t3]);
        let a = get_org(&s, &acme).await.unwrap().unwrap();
        assert_eq!((a.ticket_count_open, a.ticket_count_solved), (1, 1));

        // References of mixed types in one batch; repeats and absent keys are fine.
        s.take();
        let keys = [
            OrgKey::new(&acme).primary_key(),
            UserKey::new(&acme, &name("wile")).primary_key(),
            UserKey::new(&acme, &name("wile")).primary_key(),
            TicketKey::new(Id::from_parts(1001, 7)).primary_key(),
            OrderKey::new(&acme, o.order_id).primary_key(),
            TicketKey::new(Id::from_parts(1, 1)).primary_key(),
        ];
        let got = batch_get_entities(&s, &keys).await.unwrap();
        assert_eq!(s.take(), 1);
        assert_eq!(got.len(), 4);
        assert!(matches!(got[&keys[4]], Entity::Order(_)));
    }

    /// The user's `(ticketCount, assignedTicketCount, orderCount)`.
    async fn user_counts(s: &Counting, u: &str) -> (u32, u32, u32) {
        let u = get_user(s, &slug("acme"), &name(u)).await.unwrap().unwrap();
        (u.ticket_count, u.assigned_ticket_count, u.order_count)
    }

    /// Assignees and buyers are counted on the user in the write's own transaction, and a
    /// user counted by anything cannot be deleted, not even by a race.
    #[tokio::test]
    async fn user_counters_follow_assignments_and_orders() {
        let s = store().await;
        let acme = slug("acme");
        create_org(&s, &org("acme")).await.unwrap();
        for u in ["wile", "road", "boss"] {
            create_user(&s, &user("acme", u)).await.unwrap();
        }
        s.take();

        // Self-assigned: one Update on the requester adds both counters.
        let mut own = ticket("acme", "wile", 1000, TicketStatus::Open);
        own.assignee = Some(name("wile"));
        create_ticket(&s, &own).await.unwrap();
        assert_eq!(s.take(), 1);
        assert_eq!(user_counts(&s, "wile").await, (1, 1, 0));

        let mut t = ticket("acme", "road", 1001, TicketStatus::Open);
        t.assignee = Some(name("boss"));
        create_ticket(&s, &t).await.unwrap();
        assert_eq!(user_counts(&s, "road").await, (1, 0, 0));
        assert_eq!(user_counts(&s, "boss").await, (0, 1, 0));
        let mut ghostly = ticket("acme", "road", 1002, TicketStatus::Open);
        ghostly.assignee = Some(name("ghost"));
        assert!(matches!(
            create_ticket(&s, &ghostly).await,
            Err(RepoError::NotFound("assignee"))
        ));
        assert_eq!(user_counts(&s, "road").await, (1, 0, 0));

        assert!(matches!(
            delete_user(&s, &acme, &name("boss")).await,
            Err(RepoError::InUse("assignedTickets"))
        ));

        // Reassigning moves the count from the old assignee to the new one.
        let to = |u: Option<&str>| TicketChange {
            assignee: Some(u.map(name)),
            ..TicketChange::at(timestamp_from_ms(5000))
        };
        s.take();
        let t = update_ticket(&s, &t, &to(Some("wile"))).await.unwrap();
        assert_eq!(s.take(), 1);
        assert_eq!(user_counts(&s, "boss").await, (0, 0, 0));
        assert_eq!(user_counts(&s, "wile").await, (1, 2, 0));
        assert!(matches!(
            update_ticket(&s, &t, &to(Some("ghost"))).await,
            Err(RepoError::NotFound("assignee"))
        ));
        assert_eq!(user_counts(&s, "wile").await, (1, 2, 0));
        let t = update_ticket(&s, &t, &to(None)).await.unwrap();
        assert_eq!(user_counts(&s, "wile").await, (1, 1, 0));
        update_ticket(&s, &t, &to(Some("road"))).await.unwrap();
        assert_eq!(user_counts(&s, "road").await, (1, 1, 0));

        let (o, lines) = order("acme", "boss", 3000, 1);
        place_order(&s, &o, &lines, None).await.unwrap();
        assert_eq!(user_counts(&s, "boss").await, (0, 0, 1));
        assert!(matches!(
            delete_user(&s, &acme, &name("boss")).await,
            Err(RepoError::InUse("orders"))
        ));
        assert!(matches!(
            delete_user(&s, &acme, &name("wile")).await,
            Err(RepoError::InUse("tickets"))
        ));
        let report = crate::check::check(&s).await.unwrap();
        assert_eq!(report.violations, []);

        // An assignment landing between delete_user's read and its transaction fails the
        // transaction's condition; the user it returns is refused.
        create_user(&s, &user("acme", "temp")).await.unwrap();
        *s.before_transact.lock().unwrap() = Some(
            Update::new(
                UserKey::new(&acme, &name("temp")).primary_key(),
                UpdateExpr::default().add(User::ASSIGNED_TICKET_COUNT, 1),
            )
            .when(Condition::exists(PK)),
        );
        s.take();
        assert!(matches!(
            delete_user(&s, &acme, &name("temp")).await,
            Err(RepoError::InUse("assignedTickets"))
        ));
        assert_eq!(s.take(), 2, "GetItem, then the cancelled transaction");
        assert_eq!(user_counts(&s, "temp").await, (0, 1, 0));

        // An assignee who does not count the ticket is a table no writer made.
        let mut stray = ticket("acme", "road", 4000, TicketStatus::Open);
        stray.assignee = Some(name("boss"));
        put_entities(&s, vec![stray.to_item()]).await.unwrap();
        assert!(matches!(
            update_ticket(&s, &stray, &to(None)).await,
            Err(RepoError::Store(StoreError::Internal(_)))
        ));
    }

    #[test]
    fn order_life_cycle() {
        use OrderStatus::*;
        let allowed = [
            (Placed, Paid),
            (Placed, Cancelled),
            (Paid, Shipped),
            (Paid, Cancelled),
            (Shipped, Delivered),
        ];
        for from in OrderStatus::ALL {
            for to in OrderStatus::ALL {
                assert_eq!(
                    order_transition_allowed(*from, *to),
                    allowed.contains(&(*from, *to)),
                    "{from} -> {to}"
                );
            }
        }
        assert!(matches!(
            check_order_transition(Delivered, Cancelled),
            Err(RepoError::InvalidTransition { from, to }) if from == "DELIVERED" && to == "CANCELLED"
        ));
    }

    /// Each write is one write request plus the reads its doc comment names.
    #[tokio::test]
    async fn writes_make_the_requests_their_docs_promise() {
        let s = store().await;
        let acme = slug("acme");
        create_org(&s, &org("acme")).await.unwrap();
        assert_eq!(s.take(), 1, "create_org: one PutItem");
        assert!(matches!(
            create_org(&s, &org("acme")).await,
            Err(RepoError::AlreadyExists("slug"))
        ));
        create_user(&s, &user("acme", "wile")).await.unwrap();
        s.take();

        let rename = UserChange {
            name: Some("Wile".into()),
            ..UserChange::default()
        };
        let u = update_user(&s, &acme, &name("wile"), &rename, None)
            .await
            .unwrap();
        assert_eq!(
            (s.take(), u.name.as_str()),
            (1, "Wile"),
            "no read without an email change"
        );
        assert!(matches!(
            update_user(&s, &acme, &name("ghost"), &rename, None).await,
            Err(RepoError::NotFound("user"))
        ));
        assert!(matches!(
            update_user(&s, &acme, &name("wile"), &UserChange::default(), None).await,
            Err(RepoError::Invalid(_))
        ));
        s.take();

        let move_to = |e: &str| UserChange {
            email: Some(Email::parse(e).unwrap()),
            ..UserChange::default()
        };
        let u = update_user(&s, &acme, &name("wile"), &move_to("w1@x.example"), None)
            .await
            .unwrap();
        assert_eq!(s.take(), 2, "GetItem, then one transaction");
        let u = update_user(&s, &acme, &name("wile"), &move_to("w2@x.example"), Some(&u))
            .await
            .unwrap();
        assert_eq!(s.take(), 1, "the caller's user saves the read");
        assert_eq!(u.email, "w2@x.example");
        // A stale expected user: the cancelled transaction reports the user as it is, and
        // the write is built again from that, with no read.
        let stale = User {
            email: Email::parse("w1@x.example").unwrap(),
            ..u.clone()
        };
        let u = update_user(
            &s,
            &acme,
            &name("wile"),
            &move_to("w3@x.example"),
            Some(&stale),
        )
        .await
        .unwrap();
        assert_eq!((s.take(), u.email.as_str()), (2, "w3@x.example"));
        let marker = |e: &str| {
            get_entity(
                &s,
                UserEmailKey::new(&Email::parse(e).unwrap()).primary_key(),
            )
        };
        assert!(marker("w1@x.example").await.unwrap().is_none());
        assert!(marker("w2@x.example").await.unwrap().is_none());
        assert!(marker("w3@x.example").await.unwrap().is_some());
        s.take();

        let (o, lines) = order("acme", "wile", 3000, 2);
        let placed = place_order(&s, &o, &lines, Some("tok-1")).await.unwrap();
        assert_eq!((s.take(), placed.replayed), (1, false), "one transaction");
        let (again, again_lines) = order("acme", "wile", 3001, 1);
        let replay = place_order(&s, &again, &again_lines, Some("tok-1"))
            .await
            .unwrap();
        assert_eq!(s.take(), 2, "the cancelled transaction, then one Query");
        assert_eq!(
            replay,
            PlacedOrder {
                replayed: true,
                ..placed
            }
        );
        assert!(matches!(
            place_order(&s, &again, &again_lines, Some("no#pe")).await,
            Err(RepoError::Invalid(m)) if m.contains("clientToken")
        ));
        assert_eq!(s.take(), 0, "a bad token costs no request");

        let paid = update_order_status(&s, o.order_id, OrderStatus::Paid, 1)
            .await
            .unwrap();
        assert_eq!(
            (s.take(), paid.status, paid.version),
            (2, OrderStatus::Paid, 2)
        );
        assert!(matches!(
            update_order_status(&s, o.order_id, OrderStatus::Shipped, 1).await,
            Err(RepoError::VersionMismatch {
                entity: "order",
                expected: 1,
                current: Some(2)
            })
        ));
        assert_eq!(s.take(), 1, "a stale version is refused from the read");

        // wile placed an order: refused from the read.
        assert!(matches!(
            delete_user(&s, &acme, &name("wile")).await,
            Err(RepoError::InUse("orders"))
        ));
        assert_eq!(s.take(), 1, "a referenced user is refused from the read");
        create_user(&s, &user("acme", "temp")).await.unwrap();
        s.take();
        let gone = delete_user(&s, &acme, &name("temp")).await.unwrap();
        assert_eq!((s.take(), gone.email.as_str()), (2, "temp@acme.example"));
        assert!(marker("temp@acme.example").await.unwrap().is_none());
        assert!(marker("w3@x.example").await.unwrap().is_some());
        assert_eq!(get_org(&s, &acme).await.unwrap().unwrap().user_count, 1);
    }
}
