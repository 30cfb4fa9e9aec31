//! The access patterns' request counts, counters and conditions, on the embedded engine.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::entities::chunk_items;
use super::page::Connection;
use super::*;
use crate::keys::{Email, LineNo, COUNTER_SHARDS};
use crate::keys::{Id, OrderKey, OrgKey, Slug, TicketKey, UserEmailKey, UserKey, Username, PK};
use crate::model::{timestamp_from_ms, OrderStatus, Plan, Role, TicketPriority};
use crate::model::{Entity, Order, OrderLine, Organization, Record, Ticket, TicketStatus, User};
use crate::store::embedded::EmbeddedStore;
use crate::store::{
    BatchGet, Condition, GetItem, Item, PageKey, PrimaryKey, Put, Query, SortCondition, Store,
    StoreError, TableSchema, TransactAction, Update, UpdateExpr,
};
use crate::store::{BatchGetPage, Delete, IndexKey, QueryOutput, StoreResult, TableDescription};

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
    let inner = EmbeddedStore::in_memory("t", crate::keys::table_schema()).unwrap();
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
        parent: Some(SortCondition::Le(key.counters_top())),
        children: key.orders_prefix(),
        beside_parent: COUNTER_SHARDS,
    };
    let q = conn.query(&Page::first(10)).unwrap();
    assert_eq!(q.sort, Some(SortCondition::Le("ORG#acme#COUNT#~".into())));
    // The organization, its 32 shards, 10 orders and one more.
    assert_eq!((q.limit, q.forward), (Some(44), false));

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
        beside_parent: COUNTER_SHARDS,
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
    let schema = crate::keys::table_schema();
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

/// Seeds an org with 7 users and 5 orders; the org item sits between them. Both
/// organizations are in the layout before counter shards, their counts on their own items.
async fn seed_org(s: &Counting) {
    let mut o = org("acme");
    o.user_count = 7;
    o.order_count = 5;
    o.schema_version = None;
    let mut other = org("acmf");
    other.schema_version = None;
    let mut items = vec![o.to_item(), other.to_item()];
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
    create_org(&s, &org("acme")).await.unwrap();
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

    let a = get_org_counted(&s, &acme).await.unwrap().unwrap();
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
    let a = get_org_counted(&s, &acme).await.unwrap().unwrap();
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

/// Each write is one write request plus the reads its doc comment names.
#[tokio::test]
async fn writes_make_the_requests_their_docs_promise() {
    let s = store().await;
    let acme = slug("acme");
    create_org(&s, &org("acme")).await.unwrap();
    assert_eq!(s.take(), 1, "create_org: one TransactWriteItems");
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
            UserEmailKey::new(&u.org, &Email::parse(e).unwrap()).primary_key(),
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
    assert_eq!(
        get_org_counted(&s, &acme)
            .await
            .unwrap()
            .unwrap()
            .user_count,
        1
    );
}

/// An organization written before counter shards: a write finds no shard and is made
/// again on the organization item (two requests), reads add both layouts up, the
/// migration gives it its shards, and from then on a write is one request on a shard.
#[tokio::test]
async fn writes_and_reads_accept_both_counter_layouts() {
    let s = store().await;
    let acme = slug("acme");
    let mut before = org("acme");
    before.schema_version = None;
    put_entities(&s, vec![before.to_item()]).await.unwrap();
    s.take();

    create_user(&s, &user("acme", "wile")).await.unwrap();
    assert_eq!(
        s.take(),
        2,
        "no shard yet: once more on the organization item"
    );
    assert_eq!(get_org(&s, &acme).await.unwrap().unwrap().user_count, 1);
    assert!(crate::check::check(&s.inner).await.unwrap().is_clean());

    let dry = crate::migrate::migrate(&s, true).await.unwrap();
    assert_eq!(dry.sharded, 1);
    let report = crate::migrate::migrate(&s, false).await.unwrap();
    assert_eq!(report.sharded, 1, "{report}");
    assert_eq!(crate::migrate::migrate(&s, false).await.unwrap().sharded, 0);
    s.take();

    create_user(&s, &user("acme", "road")).await.unwrap();
    create_user(&s, &user("acme", "temp")).await.unwrap();
    assert_eq!(s.take(), 2, "one request each, on a shard");
    delete_user(&s, &acme, &name("temp")).await.unwrap();
    s.take();
    assert_eq!(
        get_org(&s, &acme).await.unwrap().unwrap().user_count,
        1,
        "the organization item keeps its own part"
    );
    assert_eq!(
        get_org_counted(&s, &acme)
            .await
            .unwrap()
            .unwrap()
            .user_count,
        2
    );
    s.take();
    let users = get_org_with_users(&s, &acme, Page::first(1)).await.unwrap();
    assert_eq!(users.org.unwrap().user_count, 2);
    assert_eq!(usernames(&users.users), ["road"]);
    assert!(users.last_evaluated_key.is_some());
    let orders = get_org_with_orders(&s, &acme, Page::first(5))
        .await
        .unwrap();
    assert_eq!(orders.org.unwrap().user_count, 2);
    assert_eq!(s.take(), 2, "each first page is one Query");
    let check = crate::check::check(&s.inner).await.unwrap();
    assert!(check.is_clean(), "{check}");
}
