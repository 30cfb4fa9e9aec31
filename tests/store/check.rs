//! The consistency checker and the writes of the write API, on every engine.
//!
//! Each case is an `async fn(&dyn Store)` run by the `engines!` macro at the bottom once
//! on the embedded engine (`embedded::…`) and once on DynamoDB Local (`dynamodb::…`):
//!
//! - the demo data checks clean, and each kind of deliberate breakage (a counter bumped
//!   by hand on an organization or a user, an order deleted without its lines, a missing
//!   email marker, a marker naming nobody, a changed key attribute, an order disagreeing
//!   with its lines, missing or stray counter shards, stray client tokens, a record copied
//!   under another key) is reported, specifically, in the words the built-in checker
//!   printed before it was the chart's;
//! - the writes (`create_org`, `update_user`, `delete_user`, `create_ticket` and
//!   `update_ticket` with assignees, `place_order` with a client token) answer as
//!   documented (an order's moves are the chart's: `tests/graphql/builtin_writes.rs`), and the table checks clean after each
//!   of them; a user still named as requester, assignee or buyer cannot be deleted.
//!
//! `itemgraph check` itself runs on an embedded file: exit 0 and a summary when clean,
//! exit 1 with one line per violation otherwise.

use std::process::Command;

use itemgraph::chart::kinds::{Email, Id, LineNo, Slug, Username};
use itemgraph::check::{check, CheckReport, ViolationKind};
use itemgraph::collections::{
    create_org, create_ticket, create_user, delete_user, get_order, get_org_counted, get_ticket,
    get_user, place_order, update_ticket, update_user, PlacedOrder, RepoError, TicketChange,
    UserChange,
};
use itemgraph::demo::{self, DemoData};
use itemgraph::keys::{OrgKey, TicketKey, UserEmailKey, UserKey, GSI2PK};
use itemgraph::model::{
    now, Order, OrderLine, OrderStatus, Organization, Plan, Record, Role, Ticket, TicketPriority,
    TicketStatus, User, UserEmail,
};
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::{AttributeValue, Delete, GetItem, Put, Store, Update, UpdateExpr};

fn slug(s: &str) -> Slug {
    Slug::parse(s).unwrap()
}
fn name(s: &str) -> Username {
    Username::parse(s).unwrap()
}
fn email(s: &str) -> Email {
    Email::parse(s).unwrap()
}

/// Seeds the demo data and returns it as records.
async fn seeded(store: &dyn Store) -> DemoData {
    demo::seed_demo(store).await.expect("seed");
    demo::demo_data()
}

async fn report(store: &dyn Store) -> CheckReport {
    check(store).await.expect("check")
}

/// Fails with every violation listed when the table is not clean.
async fn assert_clean(store: &dyn Store) {
    let r = report(store).await;
    let lines: Vec<String> = r.violations.iter().map(ToString::to_string).collect();
    assert!(
        r.is_clean(),
        "{} violations:\n{}",
        lines.len(),
        lines.join("\n")
    );
}

/// The report's lines, for exact comparison.
fn report_lines(r: &CheckReport) -> Vec<String> {
    r.violations.iter().map(ToString::to_string).collect()
}

/// The marker of an address of acme's.
async fn marker(store: &dyn Store, e: &str) -> Option<UserEmail> {
    store
        .get_item(GetItem {
            key: UserEmailKey::new(&slug("acme"), &email(e)).primary_key(),
            consistent_read: true,
        })
        .await
        .unwrap()
        .map(|i| UserEmail::from_item(i).unwrap())
}

async fn org_now(store: &dyn Store, o: &str) -> Organization {
    get_org_counted(store, &slug(o))
        .await
        .unwrap()
        .expect("org")
}

fn order(org: &str, buyer: &str, lines: u16) -> (Order, Vec<OrderLine>) {
    let order_id = Id::generate();
    let lines: Vec<OrderLine> = (1..=lines)
        .map(|n| OrderLine {
            order_id,
            line_no: LineNo::new(n).unwrap(),
            sku: format!("SKU-{n}"),
            description: "A thing".into(),
            quantity: u32::from(n),
            unit_price_cents: 250,
            amount_cents: i64::from(n) * 250,
        })
        .collect();
    let order = Order {
        order_id,
        org: slug(org),
        buyer: name(buyer),
        status: OrderStatus::Placed,
        placed_at: now(),
        currency: "USD".into(),
        total_cents: lines.iter().map(|l| l.amount_cents).sum(),
        line_count: lines.len() as u32,
        version: 1,
    };
    (order, lines)
}

/// A new acme member with no ticket and no order.
fn member(username: &str) -> User {
    User {
        org: slug("acme"),
        username: name(username),
        email: email(&format!("{username}@acme.example")),
        name: username.to_uppercase(),
        role: Role::Member,
        created_at: now(),
        ticket_count: 0,
        assigned_ticket_count: 0,
        order_count: 0,
    }
}

/// A new OPEN acme ticket.
fn ticket(requester: &str, assignee: Option<&str>) -> Ticket {
    Ticket {
        ticket_id: Id::generate(),
        org: slug("acme"),
        title: "Anvil".into(),
        body: "It fell.".into(),
        status: TicketStatus::Open,
        priority: TicketPriority::Normal,
        requester: name(requester),
        assignee: assignee.map(name),
        created_at: now(),
        updated_at: now(),
        version: 1,
    }
}

/// The user's `(ticketCount, assignedTicketCount, orderCount)`.
async fn user_counts(store: &dyn Store, username: &str) -> (u32, u32, u32) {
    let u = get_user(store, &slug("acme"), &name(username))
        .await
        .unwrap()
        .expect("user");
    (u.ticket_count, u.assigned_ticket_count, u.order_count)
}

// ---------------------------------------------------------------------------------------
// The checker

/// The demo data keeps every invariant: zero violations over all its items.
async fn demo_data_checks_clean(store: &dyn Store) {
    let data = seeded(store).await;
    let r = report(store).await;
    assert_eq!(report_lines(&r), Vec::<String>::new());
    assert_eq!(r.items, data.len());
    assert_eq!(
        r.to_string(),
        format!("checked {} items: no violations", data.len())
    );
}

/// A counter bumped by hand is the one violation, on the organization, naming the
/// counter, its value and the children found.
async fn a_bumped_counter_is_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let acme = org_now(store, "acme").await;
    store
        .update_item(Update::new(
            OrgKey::new(&acme.slug).primary_key(),
            UpdateExpr::default().add(Organization::USER_COUNT, 1),
        ))
        .await
        .unwrap();
    let users = data.users.iter().filter(|u| u.org == "acme").count();
    let r = report(store).await;
    assert_eq!(
        report_lines(&r),
        [format!(
            "counter-mismatch Organization (ORG#acme | ORG#acme): userCount is {}, but {users} users belong to it",
            users + 1
        )]
    );
}

/// A user's `assignedTicketCount` and `orderCount` bumped by hand: one violation each,
/// on the user, naming the counter, its value and the tickets or orders found.
async fn a_bumped_user_counter_is_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let acme = |u: &&User| u.org == "acme";
    let assignee = data
        .users
        .iter()
        .filter(acme)
        .find(|u| u.assigned_ticket_count > 0)
        .expect("an acme assignee");
    let buyer = data
        .users
        .iter()
        .filter(acme)
        .find(|u| u.order_count > 0 && u.username != assignee.username)
        .expect("another acme buyer");
    for (user, counter) in [
        (assignee, User::ASSIGNED_TICKET_COUNT),
        (buyer, User::ORDER_COUNT),
    ] {
        store
            .update_item(Update::new(
                UserKey::new(&user.org, &user.username).primary_key(),
                UpdateExpr::default().add(counter, 1),
            ))
            .await
            .unwrap();
    }
    let mut expected = [
        (
            assignee.username.as_str(),
            format!(
                "counter-mismatch User (ORG#acme | USER#{}): assignedTicketCount is {}, but {} tickets name this user as assignee",
                assignee.username,
                assignee.assigned_ticket_count + 1,
                assignee.assigned_ticket_count
            ),
        ),
        (
            buyer.username.as_str(),
            format!(
                "counter-mismatch User (ORG#acme | USER#{}): orderCount is {}, but {} orders name this user as buyer",
                buyer.username,
                buyer.order_count + 1,
                buyer.order_count
            ),
        ),
    ];
    expected.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let r = report(store).await;
    assert_eq!(report_lines(&r), expected.map(|(_, line)| line));
}

/// Deleting an order item alone leaves its lines orphaned, and the `orderCount` of the
/// organization and of the buyer one too high: each is reported.
async fn an_order_deleted_without_its_lines_is_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let victim = data
        .orders
        .iter()
        .find(|o| o.line_count >= 2)
        .expect("an order with lines");
    store
        .delete_item(Delete::new(victim.primary_key()))
        .await
        .unwrap();
    let r = report(store).await;
    let orphans: Vec<_> = r.of_kind(ViolationKind::OrphanLine).collect();
    assert_eq!(
        orphans.len(),
        victim.line_count as usize,
        "{:#?}",
        report_lines(&r)
    );
    for o in &orphans {
        assert_eq!(o.entity, "OrderLine");
        assert_eq!(
            o.message,
            format!("its order {} does not exist", victim.order_id)
        );
    }
    let counters: Vec<_> = r.of_kind(ViolationKind::CounterMismatch).collect();
    assert_eq!(counters.len(), 2, "{:#?}", report_lines(&r));
    // In key order: the organization (SK `ORG#…`), then the user (SK `USER#…`).
    assert_eq!(counters[0].key, OrgKey::new(&victim.org).primary_key());
    assert!(counters[0].message.starts_with("orderCount is"));
    let buyer = data
        .users
        .iter()
        .find(|u| u.org == victim.org && u.username == victim.buyer)
        .unwrap();
    assert_eq!(
        counters[1].key,
        UserKey::new(&victim.org, &victim.buyer).primary_key()
    );
    assert_eq!(
        counters[1].message,
        format!(
            "orderCount is {}, but {} orders name this user as buyer",
            buyer.order_count,
            buyer.order_count - 1
        )
    );
    assert_eq!(r.violations.len(), orphans.len() + 2);
}

/// A user whose email marker was deleted is reported as missing its marker.
async fn a_deleted_email_marker_is_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let user = &data.users[3];
    store
        .delete_item(Delete::new(
            UserEmailKey::new(&user.org, &user.email).primary_key(),
        ))
        .await
        .unwrap();
    let r = report(store).await;
    assert_eq!(
        report_lines(&r),
        [format!(
            "missing-marker User (ORG#{} | USER#{}): its email {} has no marker item",
            user.org, user.username, user.email
        )]
    );
}

/// An email marker naming a user who does not exist is an orphan.
async fn a_marker_naming_nobody_is_reported(store: &dyn Store) {
    seeded(store).await;
    let stray = UserEmail {
        email: email("nobody@acme.example"),
        org: slug("acme"),
        username: name("nobody"),
    };
    store.put_item(Put::new(stray.to_item())).await.unwrap();
    let r = report(store).await;
    assert_eq!(
        report_lines(&r),
        [
            "orphan-marker UserEmail (EMAIL#acme#nobody@acme.example | EMAIL#acme#nobody@acme.example): \
          names the user acme/nobody, who does not exist"
        ]
    );
}

/// A stored key attribute that differs from the key its record computes is reported
/// with both values: here a ticket filed in another status queue than its status.
async fn a_changed_key_attribute_is_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let t = data
        .tickets
        .iter()
        .find(|t| t.status == TicketStatus::Open)
        .unwrap();
    let wrong = OrgKey::new(&t.org).status_queue(TicketStatus::Closed);
    store
        .update_item(Update::new(
            t.primary_key(),
            UpdateExpr::default().set(GSI2PK, AttributeValue::S(wrong.clone())),
        ))
        .await
        .unwrap();
    let key = TicketKey::new(t.ticket_id).primary_key();
    let r = report(store).await;
    assert_eq!(
        report_lines(&r),
        [format!(
            "key-mismatch Ticket ({} | {}): GSI2PK is {wrong:?}, but its record's key is {:?}",
            key.pk,
            key.sk,
            OrgKey::new(&t.org).status_queue(TicketStatus::Open)
        )]
    );
}

/// An order and its lines that disagree: a line gone from its middle (the numbering, the
/// count and the total), a line whose amount is not its quantity times its price.
async fn an_order_disagreeing_with_its_lines_is_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let o = data
        .orders
        .iter()
        .find(|o| o.line_count >= 3)
        .expect("an order with three lines");
    let mut lines: Vec<&OrderLine> = data
        .lines
        .iter()
        .filter(|l| l.order_id == o.order_id)
        .collect();
    lines.sort_by_key(|l| l.line_no);
    let (first, second) = (lines[0], lines[1]);
    store
        .delete_item(Delete::new(first.primary_key()))
        .await
        .unwrap();
    store
        .update_item(Update::new(
            second.primary_key(),
            UpdateExpr::default().add("amountCents", 1),
        ))
        .await
        .unwrap();
    let n = lines.len();
    let numbers: Vec<u16> = lines[1..].iter().map(|l| l.line_no.get()).collect();
    let total = o.total_cents - first.amount_cents + 1;
    let order_key = o.primary_key();
    let line_key = second.primary_key();
    let at = |k: &itemgraph::store::PrimaryKey| format!("({} | {})", k.pk, k.sk);
    let mut expected = vec![
        format!(
            "order-lines Order {}: its lines are numbered {numbers:?}, not 1 to {}",
            at(&order_key),
            n - 1
        ),
        format!(
            "order-lines Order {}: lineCount is {n}, but it has {} lines",
            at(&order_key),
            n - 1
        ),
        format!(
            "order-lines Order {}: totalCents is {}, but its lines add up to {total}",
            at(&order_key),
            o.total_cents
        ),
        format!(
            "order-lines OrderLine {}: amountCents is {}, but quantity × unitPriceCents is {}",
            at(&line_key),
            second.amount_cents + 1,
            second.amount_cents
        ),
    ];
    let mut found = report_lines(&report(store).await);
    expected.sort();
    found.sort();
    assert_eq!(found, expected);
}

/// Counter shards missing from a sharded organization, a shard of an organization that
/// does not exist, client tokens naming no order or another organization's, and an item
/// copied under another key (a duplicate of the record, at keys its templates do not
/// render): each reported in the words of its kind.
async fn shards_tokens_and_duplicates_are_reported(store: &dyn Store) {
    let data = seeded(store).await;
    let acme = OrgKey::new(&slug("acme"));
    let fifth = acme.counter_shard(5);
    let mut shard = store
        .get_item(GetItem {
            key: fifth.clone(),
            consistent_read: true,
        })
        .await
        .unwrap()
        .expect("acme is sharded");
    store.delete_item(Delete::new(fifth)).await.unwrap();
    let nowhere = OrgKey::new(&slug("nowhere")).counter_shard(5);
    shard.insert("PK".into(), AttributeValue::S(nowhere.pk.clone()));
    shard.insert("SK".into(), AttributeValue::S(nowhere.sk.clone()));
    shard.insert("org".into(), AttributeValue::S("nowhere".into()));
    store.put_item(Put::new(shard)).await.unwrap();

    let theirs = data
        .orders
        .iter()
        .find(|o| o.org != "acme")
        .expect("another organization's order");
    let gone = Id::generate();
    for (token, order_id) in [("theirs", theirs.order_id), ("gone", gone)] {
        let k = format!("ORDERTOKEN#acme#{token}");
        let mut item = itemgraph::store::Item::new();
        for (a, v) in [
            ("PK", k.clone()),
            ("SK", k.clone()),
            ("Type", "OrderToken".into()),
            ("org", "acme".into()),
            ("token", token.into()),
            ("orderId", order_id.to_string()),
            ("createdAt", "2026-11-29T10:00:00Z".into()),
        ] {
            item.insert(a.into(), AttributeValue::S(v));
        }
        store.put_item(Put::new(item)).await.unwrap();
    }

    let t = &data.tickets[0];
    let mut copy = t.to_item();
    copy.insert("PK".into(), AttributeValue::S("TICKET#copy".into()));
    copy.insert("SK".into(), AttributeValue::S("TICKET#copy".into()));
    store.put_item(Put::new(copy)).await.unwrap();
    let real = t.primary_key();

    let mut expected = vec![
        "counter-shards Organization (ORG#acme | ORG#acme): is sharded (schema version 3), but \
         lacks counter shards [5] and has unknown ones []"
            .to_owned(),
        format!(
            "counter-shards CounterShard ({} | {}): counts for the organization nowhere, which \
             does not exist",
            nowhere.pk, nowhere.sk
        ),
        format!(
            "orphan-marker OrderToken (ORDERTOKEN#acme#theirs | ORDERTOKEN#acme#theirs): names \
             the order {} of another organization ({})",
            theirs.order_id, theirs.org
        ),
        format!(
            "orphan-marker OrderToken (ORDERTOKEN#acme#gone | ORDERTOKEN#acme#gone): names the \
             order {gone}, which does not exist"
        ),
        format!(
            "key-mismatch Ticket (TICKET#copy | TICKET#copy): PK is \"TICKET#copy\", but its \
             record's key is {:?}",
            real.pk
        ),
        format!(
            "key-mismatch Ticket (TICKET#copy | TICKET#copy): SK is \"TICKET#copy\", but its \
             record's key is {:?}",
            real.sk
        ),
        format!(
            "duplicate Ticket (TICKET#copy | TICKET#copy): holds the same Ticket as the item \
             ({} | {})",
            real.pk, real.sk
        ),
    ];
    let mut found = report_lines(&report(store).await);
    expected.sort();
    found.sort();
    assert_eq!(found, expected);
}

// ---------------------------------------------------------------------------------------
// The writes

/// `create_org` refuses a taken slug and writes a new organization with zero counters.
async fn create_org_is_unique_on_slug(store: &dyn Store) {
    seeded(store).await;
    let umbrella = Organization {
        user_count: 7,
        ..Organization::new(slug("umbrella"), "Umbrella".into(), Plan::Free, now())
    };
    create_org(store, &umbrella).await.unwrap();
    assert_eq!(org_now(store, "umbrella").await.user_count, 0);
    let acme = Organization {
        slug: slug("acme"),
        ..umbrella.clone()
    };
    assert!(matches!(
        create_org(store, &acme).await,
        Err(RepoError::AlreadyExists("slug"))
    ));
    assert_eq!(org_now(store, "acme").await.name, "Acme Corporation");
    assert_clean(store).await;
}

/// An email change swaps the markers in one transaction: the old marker is gone, the
/// new one names the user. A taken email is `AlreadyExists("email")` and changes
/// nothing, not even the other fields of the same change.
async fn update_user_swaps_the_email_marker(store: &dyn Store) {
    seeded(store).await;
    let (acme, road) = (slug("acme"), name("road-runner"));
    let before = get_user(store, &acme, &road).await.unwrap().unwrap();

    let change = UserChange {
        name: Some("Road Runner (beep)".into()),
        email: Some(email("Beep@Acme.Example")),
        role: Some(Role::Admin),
    };
    let after = update_user(store, &acme, &road, &change, None)
        .await
        .unwrap();
    assert_eq!(after.email, "beep@acme.example");
    assert_eq!(
        (after.name.as_str(), after.role),
        ("Road Runner (beep)", Role::Admin)
    );
    assert_eq!(
        get_user(store, &acme, &road).await.unwrap(),
        Some(after.clone())
    );
    assert_eq!(marker(store, before.email.as_str()).await, None);
    let m = marker(store, "beep@acme.example").await.unwrap();
    assert_eq!((m.org, m.username), (acme.clone(), road.clone()));
    assert_clean(store).await;

    let taken = UserChange {
        name: Some("Impostor".into()),
        email: Some(email("wile-e-coyote@acme.example")),
        role: None,
    };
    assert!(matches!(
        update_user(store, &acme, &road, &taken, Some(&after)).await,
        Err(RepoError::AlreadyExists("email"))
    ));
    assert_eq!(
        get_user(store, &acme, &road).await.unwrap(),
        Some(after.clone())
    );
    let wile = marker(store, "wile-e-coyote@acme.example").await.unwrap();
    assert_eq!(wile.username, "wile-e-coyote");
    assert!(marker(store, "beep@acme.example").await.is_some());

    // Without an email: one UpdateItem; a missing user is NOT_FOUND.
    let role = UserChange {
        role: Some(Role::Member),
        ..UserChange::default()
    };
    let member = update_user(store, &acme, &road, &role, None).await.unwrap();
    assert_eq!((member.role, member.email), (Role::Member, after.email));
    assert!(matches!(
        update_user(store, &acme, &name("nobody"), &role, None).await,
        Err(RepoError::NotFound("user"))
    ));
    assert!(matches!(
        update_user(store, &acme, &name("nobody"), &change, None).await,
        Err(RepoError::NotFound("user"))
    ));
    assert_clean(store).await;
}

/// A user who requested tickets cannot be deleted (`InUse("tickets")`); one who did
/// not is deleted with their marker and uncounted.
async fn delete_user_keeps_requesters(store: &dyn Store) {
    seeded(store).await;
    let acme = slug("acme");
    let users = org_now(store, "acme").await.user_count;
    assert!(matches!(
        delete_user(store, &acme, &name(demo::HEAVY_USER)).await,
        Err(RepoError::InUse("tickets"))
    ));
    assert!(get_user(store, &acme, &name(demo::HEAVY_USER))
        .await
        .unwrap()
        .is_some());

    let temp = User {
        email: email("temp@acme.example"),
        ..member("temp-worker")
    };
    create_user(store, &temp).await.unwrap();
    assert_eq!(org_now(store, "acme").await.user_count, users + 1);
    let gone = delete_user(store, &acme, &temp.username).await.unwrap();
    assert_eq!(gone, temp);
    assert_eq!(get_user(store, &acme, &temp.username).await.unwrap(), None);
    assert_eq!(marker(store, "temp@acme.example").await, None);
    assert_eq!(org_now(store, "acme").await.user_count, users);
    assert!(matches!(
        delete_user(store, &acme, &temp.username).await,
        Err(RepoError::NotFound("user"))
    ));
    // The email is free again.
    create_user(
        store,
        &User {
            username: name("temp-2"),
            ..temp
        },
    )
    .await
    .unwrap();
    assert_clean(store).await;
}

/// Assignees and buyers are counted on the user, in the same transaction as the ticket or
/// order: a user assigned a ticket is refused (`InUse("assignedTickets")`) until the ticket
/// is reassigned, a buyer is refused for good (`InUse("orders")`), and no reference
/// dangles. A requester who assigns the ticket to themselves is counted twice, once as
/// each.
async fn delete_user_keeps_assignees_and_buyers(store: &dyn Store) {
    seeded(store).await;
    let acme = slug("acme");
    let before = user_counts(store, "road-runner").await;

    create_user(store, &member("new-hire")).await.unwrap();
    let t = ticket("road-runner", Some("new-hire"));
    create_ticket(store, &t).await.unwrap();
    assert_eq!(user_counts(store, "new-hire").await, (0, 1, 0));
    assert!(matches!(
        delete_user(store, &acme, &name("new-hire")).await,
        Err(RepoError::InUse("assignedTickets"))
    ));
    assert!(get_user(store, &acme, &name("new-hire"))
        .await
        .unwrap()
        .is_some());
    assert_clean(store).await;

    // Reassigned to the requester: the count moves, and new-hire may go.
    let change = TicketChange {
        assignee: Some(Some(name("road-runner"))),
        ..TicketChange::at(now())
    };
    let t = update_ticket(store, &t, &change).await.unwrap();
    assert_eq!(user_counts(store, "new-hire").await, (0, 0, 0));
    assert_eq!(
        user_counts(store, "road-runner").await,
        (before.0 + 1, before.1 + 1, before.2)
    );
    delete_user(store, &acme, &name("new-hire")).await.unwrap();
    assert_clean(store).await;

    // Self-assigned from the start: one Update adds both counters.
    create_ticket(store, &ticket("road-runner", Some("road-runner")))
        .await
        .unwrap();
    assert_eq!(
        user_counts(store, "road-runner").await,
        (before.0 + 2, before.1 + 2, before.2)
    );
    // Unassigned: the count goes back.
    let change = TicketChange {
        assignee: Some(None),
        ..TicketChange::at(now())
    };
    update_ticket(store, &t, &change).await.unwrap();
    assert_eq!(
        user_counts(store, "road-runner").await,
        (before.0 + 2, before.1 + 1, before.2)
    );
    assert_clean(store).await;

    create_user(store, &member("one-time-buyer")).await.unwrap();
    let (o, lines) = order("acme", "one-time-buyer", 1);
    place_order(store, &o, &lines, None).await.unwrap();
    assert_eq!(user_counts(store, "one-time-buyer").await, (0, 0, 1));
    assert!(matches!(
        delete_user(store, &acme, &name("one-time-buyer")).await,
        Err(RepoError::InUse("orders"))
    ));
    assert!(get_user(store, &acme, &name("one-time-buyer"))
        .await
        .unwrap()
        .is_some());
    assert_clean(store).await;
}

/// The same client token twice places one order: the second call returns the first
/// order, `replayed`, and `orderCount` grows by one only.
async fn place_order_with_a_client_token_places_once(store: &dyn Store) {
    seeded(store).await;
    let orders = org_now(store, "acme").await.order_count;
    let (first, first_lines) = order("acme", "road-runner", 3);
    let placed = place_order(store, &first, &first_lines, Some("checkout-42"))
        .await
        .unwrap();
    assert_eq!(
        placed,
        PlacedOrder {
            order: first.clone(),
            lines: first_lines.clone(),
            replayed: false
        }
    );
    let (retry, retry_lines) = order("acme", "road-runner", 1);
    let replayed = place_order(store, &retry, &retry_lines, Some("checkout-42"))
        .await
        .unwrap();
    assert_eq!(
        replayed,
        PlacedOrder {
            order: first.clone(),
            lines: first_lines,
            replayed: true
        }
    );
    assert_eq!(org_now(store, "acme").await.order_count, orders + 1);
    assert_eq!(
        get_order(store, &slug("acme"), retry.order_id)
            .await
            .unwrap(),
        None
    );

    // The token is per organization, and a bad one is refused before any write.
    let (other, other_lines) = order("globex", "homer-simpson", 1);
    let fresh = place_order(store, &other, &other_lines, Some("checkout-42"))
        .await
        .unwrap();
    assert!(!fresh.replayed);
    assert!(matches!(
        place_order(store, &retry, &retry_lines, Some("not a token")).await,
        Err(RepoError::Invalid(_))
    ));
    assert!(matches!(
        place_order(store, &retry, &retry_lines, Some(&"x".repeat(65))).await,
        Err(RepoError::Invalid(_))
    ));
    assert_clean(store).await;
}

/// `update_ticket` changes priority, title and body too, bumps the version, and a stale
/// version is `VersionMismatch` carrying the current one.
async fn update_ticket_changes_every_field(store: &dyn Store) {
    let data = seeded(store).await;
    let t = data
        .tickets
        .iter()
        .find(|t| t.status == TicketStatus::Open)
        .unwrap();
    let change = TicketChange {
        status: Some(TicketStatus::Pending),
        priority: Some(TicketPriority::Urgent),
        title: Some("Anvil, again".into()),
        body: Some("It fell twice.".into()),
        ..TicketChange::at(now())
    };
    let after = update_ticket(store, t, &change).await.unwrap();
    assert_eq!(
        (
            after.status,
            after.priority,
            after.title.as_str(),
            after.body.as_str()
        ),
        (
            TicketStatus::Pending,
            TicketPriority::Urgent,
            "Anvil, again",
            "It fell twice."
        )
    );
    assert_eq!(after.version, t.version + 1);
    assert_eq!(
        get_ticket(store, t.ticket_id).await.unwrap(),
        Some(after.clone())
    );
    assert!(matches!(
        update_ticket(store, t, &change).await,
        Err(RepoError::VersionMismatch { entity: "ticket", expected, current })
            if expected == t.version && current == Some(after.version)
    ));
    assert_clean(store).await;
}

/// Concurrent writes that all touch the organization's counters land, every one (on AWS
/// such transactions can be cancelled by `TransactionConflict`, which the DynamoDB engine
/// retries), and concurrent retries with one client token place one order.
async fn concurrent_writes_to_one_organization_all_land(store: &dyn Store) {
    seeded(store).await;
    let before = org_now(store, "acme").await.order_count;
    let orders: Vec<_> = (0..12).map(|_| order("acme", "road-runner", 2)).collect();
    let placed = futures::future::join_all(
        orders
            .iter()
            .map(|(o, lines)| place_order(store, o, lines, None)),
    )
    .await;
    for p in placed {
        p.expect("every concurrent order is placed");
    }
    assert_eq!(org_now(store, "acme").await.order_count, before + 12);

    // The same client token from concurrent retries: one order, the others replay it.
    let tries: Vec<_> = (0..4).map(|_| order("acme", "road-runner", 1)).collect();
    let placed = futures::future::join_all(
        tries
            .iter()
            .map(|(o, lines)| place_order(store, o, lines, Some("same-click"))),
    )
    .await;
    let placed: Vec<PlacedOrder> = placed.into_iter().map(Result::unwrap).collect();
    assert_eq!(placed.iter().filter(|p| !p.replayed).count(), 1);
    assert!(placed.iter().all(|p| p.order == placed[0].order));
    assert_eq!(org_now(store, "acme").await.order_count, before + 13);
    assert_clean(store).await;
}

// ---------------------------------------------------------------------------------------
// The command

/// `itemgraph check --data FILE`: exit 0 with the summary on a clean table; exit 1 with
/// one line per violation, then the summary, once a marker is deleted.
#[tokio::test]
async fn the_check_command_exits_1_on_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("itemgraph.redb");
    let data = {
        let store =
            EmbeddedStore::open(&path, "itemgraph", itemgraph::keys::table_schema()).unwrap();
        store.create_table().await.unwrap();
        seeded(&store).await
    };
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_itemgraph"))
            .arg("check")
            .arg("--data")
            .arg(&path)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "warn")
            .output()
            .expect("run itemgraph check");
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, stdout) = run();
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        stdout,
        format!("checked {} items: no violations\n", data.len())
    );

    let user = &data.users[0];
    {
        let store =
            EmbeddedStore::open(&path, "itemgraph", itemgraph::keys::table_schema()).unwrap();
        store
            .delete_item(Delete::new(
                UserEmailKey::new(&user.org, &user.email).primary_key(),
            ))
            .await
            .unwrap();
    }
    let (code, stdout) = run();
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(
        stdout,
        format!(
            "missing-marker User (ORG#{} | USER#{}): its email {} has no marker item\n\
             checked {} items: 1 violation\n",
            user.org,
            user.username,
            user.email,
            data.len() - 1
        )
    );
}

on_every_engine!(store:
    demo_data_checks_clean,
    a_bumped_counter_is_reported,
    a_bumped_user_counter_is_reported,
    an_order_deleted_without_its_lines_is_reported,
    a_deleted_email_marker_is_reported,
    a_marker_naming_nobody_is_reported,
    a_changed_key_attribute_is_reported,
    an_order_disagreeing_with_its_lines_is_reported,
    shards_tokens_and_duplicates_are_reported,
    create_org_is_unique_on_slug,
    update_user_swaps_the_email_marker,
    delete_user_keeps_requesters,
    delete_user_keeps_assignees_and_buyers,
    place_order_with_a_client_token_places_once,
    update_ticket_changes_every_field,
    concurrent_writes_to_one_organization_all_land,
);
