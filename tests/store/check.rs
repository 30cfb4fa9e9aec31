//! The consistency checker, on every engine.
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
//!
//! (That the chart's writes leave the table clean is `tests/graphql/checked_writes.rs`.)
//!
//! `itemgraph check` itself runs on an embedded file: exit 0 and a summary when clean,
//! exit 1 with one line per violation otherwise.

use std::process::Command;

use crate::common::demo::DemoData;
use crate::common::records::{key, OrderLine, Organization, Record, TicketStatus, User, UserEmail};
use itemgraph::chart::kinds::{Email, Id, Slug, Username};
use itemgraph::check::{check, CheckReport, ViolationKind};
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::{
    AttributeValue, Delete, GetItem, PrimaryKey, Put, Store, Update, UpdateExpr,
};

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
    crate::common::demo::seed_demo(store).await.expect("seed");
    crate::common::demo::demo_data()
}

async fn report(store: &dyn Store) -> CheckReport {
    check(store).await.expect("check")
}

/// The report's lines, for exact comparison.
fn report_lines(r: &CheckReport) -> Vec<String> {
    r.violations.iter().map(ToString::to_string).collect()
}

fn org_key(org: &str) -> PrimaryKey {
    key("Organization", &[("slug", org)])
}

fn user_key(org: &str, username: &str) -> PrimaryKey {
    key("User", &[("org", org), ("username", username)])
}

fn marker_key(org: &str, email: &str) -> PrimaryKey {
    key("UserEmail", &[("org", org), ("email", email)])
}

// ---------------------------------------------------------------------------------------
// The checker

/// The tests' records of the demo data are the data file's items: the chart renders their
/// keys as the file stores them.
#[test]
fn the_records_are_the_demo_files_items() {
    assert_eq!(
        crate::common::demo::demo_data().items(),
        itemgraph::chart::data::builtin_demo()
    );
}

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
    store
        .update_item(Update::new(
            org_key("acme"),
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
                user_key(user.org.as_str(), user.username.as_str()),
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
    assert_eq!(counters[0].key, org_key(victim.org.as_str()));
    assert!(counters[0].message.starts_with("orderCount is"));
    let buyer = data
        .users
        .iter()
        .find(|u| u.org == victim.org && u.username == victim.buyer)
        .unwrap();
    assert_eq!(
        counters[1].key,
        user_key(victim.org.as_str(), victim.buyer.as_str())
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
        .delete_item(Delete::new(marker_key(
            user.org.as_str(),
            user.email.as_str(),
        )))
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
    let wrong = format!("ORG#{}#STATUS#CLOSED", t.org);
    store
        .update_item(Update::new(
            t.primary_key(),
            UpdateExpr::default().set("GSI2PK", AttributeValue::S(wrong.clone())),
        ))
        .await
        .unwrap();
    let key = t.primary_key();
    let r = report(store).await;
    assert_eq!(
        report_lines(&r),
        [format!(
            "key-mismatch Ticket ({} | {}): GSI2PK is {wrong:?}, but its record's key is {:?}",
            key.pk,
            key.sk,
            format!("ORG#{}#STATUS#OPEN", t.org)
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
    let fifth = PrimaryKey::new("ORG#acme", "ORG#acme#COUNT#05");
    let mut shard = store
        .get_item(GetItem {
            key: fifth.clone(),
            consistent_read: true,
        })
        .await
        .unwrap()
        .expect("acme is sharded");
    store.delete_item(Delete::new(fifth)).await.unwrap();
    let nowhere = PrimaryKey::new("ORG#nowhere", "ORG#nowhere#COUNT#05");
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
// The command

/// `itemgraph check --data FILE`: exit 0 with the summary on a clean table; exit 1 with
/// one line per violation, then the summary, once a marker is deleted.
#[tokio::test]
async fn the_check_command_exits_1_on_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("itemgraph.redb");
    let data = {
        let store = EmbeddedStore::open(
            &path,
            "itemgraph",
            itemgraph::chart::builtin().table_schema(),
        )
        .unwrap();
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
        let store = EmbeddedStore::open(
            &path,
            "itemgraph",
            itemgraph::chart::builtin().table_schema(),
        )
        .unwrap();
        store
            .delete_item(Delete::new(marker_key(
                user.org.as_str(),
                user.email.as_str(),
            )))
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
);

/// Within a read budget the checker reads the table as far as the budget takes it, page by
/// page, and says so; within a budget that takes it all, it checks as a whole.
#[tokio::test]
async fn a_read_budget_stops_the_check_after_the_page_that_reaches_it() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/auth-sessions.toml");
    let chart = itemgraph::chart::load(&path).unwrap();
    let store = EmbeddedStore::in_memory(&chart.table.name, chart.table_schema()).unwrap();
    store.create_table().await.unwrap();
    for n in 0..1100u32 {
        let item: itemgraph::store::Item = [
            ("SessionToken", AttributeValue::S(format!("01JE{n:022}"))),
            ("Username", AttributeValue::S("ada-l".into())),
            ("Device", AttributeValue::S("Laptop".into())),
            (
                "CreatedAt",
                AttributeValue::S("2026-12-01T08:00:00Z".into()),
            ),
            ("TTL", AttributeValue::N("4102444800".into())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        store.put_item(Put::new(item)).await.unwrap();
    }
    let store =
        itemgraph::store::stored::wrap(std::sync::Arc::new(store), &std::sync::Arc::new(chart));
    let chart = itemgraph::chart::load(&path).unwrap();
    let r = itemgraph::check::check_chart_within(store.as_ref(), &chart, 1)
        .await
        .unwrap();
    assert_eq!(r.items, itemgraph::store::SCAN_PAGE_SIZE as usize, "{r}");
    assert!(r.within.is_some_and(|rcu| rcu >= 1), "{r}");
    assert!(r.is_clean(), "{:?}", r.violations);
    assert!(r.to_string().contains("read capacity units"), "{r}");
    let r = itemgraph::check::check_chart_within(store.as_ref(), &chart, 1_000_000)
        .await
        .unwrap();
    assert_eq!((r.items, r.within), (1100, None), "{r}");
    assert!(r.is_clean(), "{:?}", r.violations);
}
