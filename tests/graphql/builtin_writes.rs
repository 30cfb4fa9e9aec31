//! The built-in design's writes, served from its chart's declarations
//! (`charts/itemgraph.toml`, `[mutations.…]`): what the golden files of `mutations.rs` do not
//! show. An organization from before counter shards counted on its own item; a user
//! deleted only when nothing refers to them, each refusal naming what does; a moved email
//! freed and taken; a ticket's status, assignee and version moving its queue and its
//! counts; an order moved only along its life cycle, found by plain id through GSI1 or
//! at its key; and after each, `itemgraph check` clean, on both engines. (These writes were
//! held, answer by answer and request by request, to the hand-written ones they replaced
//! before those went.)

use crate::common::records::{Organization, Plan, Record};
use itemgraph::auth::{Access, Role};
use itemgraph::store::{AttributeValue, GetItem, Item, PrimaryKey, Put};
use serde_json::{json, Value};

use crate::common::graphql::{requests, Api};

#[tokio::test]
async fn embedded() {
    let api = Api::embedded().await;
    suites(&api).await;
}

#[tokio::test]
async fn dynamodb() {
    let Some(api) = Api::dynamodb_without_stream("builtin_writes").await else {
        return;
    };
    suites(&api).await;
    api.finish().await;
}

async fn suites(api: &Api) {
    // First: its tabs name the demo data as seeded.
    the_playground_write_tabs_run_within_their_budgets(api).await;
    an_organization_from_before_shards_is_counted_on_its_own_item(api).await;
    a_moved_email_is_freed_and_taken(api).await;
    a_user_is_deleted_only_when_nothing_refers_to_them(api).await;
    a_tickets_changes_move_its_queue_and_its_counts(api).await;
    an_order_moves_only_along_its_life_cycle(api).await;
    let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{report}: {:#?}", report.violations);
}

/// The playground's tabs of the chart's write patterns (after `examples/`), their inputs
/// made from the demo data: run in order, each answers without an error in exactly the
/// requests its header states.
async fn the_playground_write_tabs_run_within_their_budgets(api: &Api) {
    let tabs = itemgraph::graphql::write_examples(
        &itemgraph::chart::builtin(),
        &crate::common::demo::demo_items(),
    );
    let numbers: Vec<&str> = tabs
        .iter()
        .map(|t| t["# Access pattern ".len()..].split(':').next().unwrap())
        .collect();
    assert_eq!(
        numbers,
        ["10", "11", "12", "13", "14", "15", "16", "17"],
        "a tab per write pattern"
    );
    for tab in &tabs {
        let budget: u64 = tab
            .lines()
            .find_map(|l| l.strip_prefix("# dynamodb-requests: "))
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("no budget in {tab}"));
        let r = api.run(tab).await;
        ok(&r);
        assert_eq!(requests(&r).len() as u64, budget, "{tab}\n{r:#}");
        // Each request the header names.
        for op in operations(&r) {
            assert!(tab.contains(&format!(" {op}")), "{op} unnamed: {tab}");
        }
    }
}

const CREATE: &str = r#"mutation($input: CreateUserInput!) {
    createUser(input: $input) { user { username email organization { userCount } } } }"#;

fn input(username: &str, email: &str, org: &str) -> Value {
    json!({"input": {"org": org, "username": username, "email": email, "name": "New Person", "role": "MEMBER"}})
}

fn operations(r: &Value) -> Vec<String> {
    requests(r)
        .iter()
        .map(|q| q["operation"].as_str().unwrap().to_owned())
        .collect()
}

fn field(r: &Value) -> &str {
    r["errors"][0]["extensions"]["field"].as_str().unwrap_or("")
}

fn ok(r: &Value) {
    assert!(r.get("errors").is_none(), "{r:#}");
}

async fn item(api: &Api, pk: &str, sk: &str) -> Option<Item> {
    api.store
        .get_item(GetItem {
            key: PrimaryKey::new(pk, sk),
            consistent_read: true,
        })
        .await
        .unwrap()
}

/// An organization written before counter shards (no shards, its counts on its own item,
/// as a table mid-way through the `counter-shards` migration holds): the write finds no
/// shard and counts on the organization itself, a second TransactWriteItems.
async fn an_organization_from_before_shards_is_counted_on_its_own_item(api: &Api) {
    let mut org = Organization::new(
        itemgraph::chart::kinds::Slug::parse("before-shards").unwrap(),
        "Before shards".into(),
        Plan::Free,
        "2024-01-08T09:00:00.000Z".into(),
    );
    org.schema_version = None;
    api.store.put_item(Put::new(org.to_item())).await.unwrap();
    let r = api
        .run_with(
            CREATE,
            input("late-comer", "late@example.com", "before-shards"),
        )
        .await;
    ok(&r);
    assert_eq!(
        r["data"]["createUser"]["user"]["organization"]["userCount"],
        1
    );
    // The two writes, then the organization read for the answer.
    assert_eq!(
        operations(&r)[..2],
        ["TransactWriteItems", "TransactWriteItems"]
    );
    let stored = item(api, "ORG#before-shards", "ORG#before-shards")
        .await
        .unwrap();
    assert_eq!(
        stored.get("userCount"),
        Some(&AttributeValue::N("1".into()))
    );
    // No organization at all: the same two writes, then `NOT_FOUND`.
    let r = api
        .run_with(CREATE, input("no-one", "no-one@example.com", "no-such-org"))
        .await;
    assert_eq!(field(&r), "organization", "{r:#}");
    assert_eq!(operations(&r), ["TransactWriteItems", "TransactWriteItems"]);
}

const UPDATE: &str = r#"mutation($input: UpdateUserInput!) {
    updateUser(input: $input) { user { username email name } } }"#;

/// A new email moves the user's marker: the old one is free after, the new one taken.
async fn a_moved_email_is_freed_and_taken(api: &Api) {
    ok(&api
        .run_with(CREATE, input("mover", "mover@example.com", "acme"))
        .await);
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"org": "acme", "username": "mover", "email": "Moved@Example.com"}}),
        )
        .await;
    ok(&r);
    assert_eq!(
        r["data"]["updateUser"]["user"]["email"],
        "moved@example.com"
    );
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    ok(&api
        .run_with(CREATE, input("mover-two", "mover@example.com", "acme"))
        .await);
    let r = api
        .run_with(CREATE, input("mover-three", "moved@example.com", "acme"))
        .await;
    assert_eq!(field(&r), "email", "{r:#}");
    assert!(item(
        api,
        "EMAIL#acme#mover@example.com",
        "EMAIL#acme#mover@example.com"
    )
    .await
    .is_some_and(|m| m.get("username") == Some(&AttributeValue::S("mover-two".into()))));
}

const DELETE: &str = r#"mutation($input: DeleteUserInput!) {
    deleteUser(input: $input) { deletedUserId user { username } } }"#;

const TICKET: &str = r#"mutation($input: CreateTicketInput!) {
    createTicket(input: $input) { ticket { ticketId version status } } }"#;

/// Every user of two demo organizations deleted in turn: refused while the requester
/// (`tickets`), assignee (`assignedTickets`) or buyer (`orders`) of anything, and each
/// refusal one GetItem; a user nothing refers to goes, with their email.
async fn a_user_is_deleted_only_when_nothing_refers_to_them(api: &Api) {
    // Assigned a ticket, requested none.
    ok(&api
        .run_with(CREATE, input("helper", "helper@example.com", "acme"))
        .await);
    ok(&api
        .run_with(
            TICKET,
            json!({"input": {"org": "acme", "requester": "daffy-duck", "assignee": "helper",
                             "title": "Help", "body": "Please", "priority": "LOW"}}),
        )
        .await);
    let users = api
        .run(r#"{ a: organization(slug: "acme") { users(first: 50) { nodes { username ticketCount } } }
                  b: organization(slug: "globex") { users(first: 50) { nodes { username ticketCount } } } }"#)
        .await;
    let mut refused = Vec::new();
    for (org, key) in [("acme", "a"), ("globex", "b")] {
        for u in users["data"][key]["users"]["nodes"].as_array().unwrap() {
            let vars = json!({"input": {"org": org, "username": u["username"]}});
            let r = api.run_with(DELETE, vars.clone()).await;
            if r.get("errors").is_some() {
                assert_eq!(r["errors"][0]["extensions"]["code"], "CONFLICT", "{r:#}");
                assert_eq!(operations(&r), ["GetItem"], "{vars}");
                if u["ticketCount"].as_i64() > Some(0) {
                    assert_eq!(field(&r), "tickets", "{vars}");
                }
                refused.push(field(&r).to_owned());
            } else {
                assert_eq!(r["data"]["deleteUser"]["user"]["username"], u["username"]);
                assert_eq!(operations(&r)[..2], ["GetItem", "TransactWriteItems"]);
            }
        }
    }
    for f in ["tickets", "assignedTickets", "orders"] {
        assert!(refused.iter().any(|r| r == f), "{f}: {refused:?}");
    }
    // `mover` went in the loop: its email is free, and a second delete finds nothing.
    let r = api
        .run_with(
            DELETE,
            json!({"input": {"org": "acme", "username": "mover"}}),
        )
        .await;
    assert_eq!(field(&r), "user", "{r:#}");
    ok(&api
        .run_with(CREATE, input("reborn", "moved@example.com", "acme"))
        .await);
}

const UPDATE_TICKET: &str = r#"mutation($input: UpdateTicketInput!) {
    updateTicket(input: $input) { ticket { status version assignee { username } } } }"#;

const COUNTS: &str = r#"{ organization(slug: "acme") { ticketCount
    open: tickets(status: OPEN, first: 1) { totalCount }
    pending: tickets(status: PENDING, first: 1) { totalCount } }
  bugs: user(org: "acme", username: "bugs-bunny") { id }
  granny: user(org: "acme", username: "granny") { id } }"#;

/// A status moves the ticket between its organization's queues and their counts; an
/// assignee moves the users' counts (which `itemgraph check` compares with the tickets).
async fn a_tickets_changes_move_its_queue_and_its_counts(api: &Api) {
    let r = api
        .run_with(
            TICKET,
            json!({"input": {"org": "acme", "requester": "daffy-duck",
                             "title": "Moves", "body": "Around", "priority": "LOW"}}),
        )
        .await;
    ok(&r);
    let id = r["data"]["createTicket"]["ticket"]["ticketId"].clone();
    let counts = |r: &Value| {
        let o = &r["data"]["organization"];
        (
            o["ticketCount"].as_i64().unwrap(),
            o["open"]["totalCount"].as_i64().unwrap(),
            o["pending"]["totalCount"].as_i64().unwrap(),
        )
    };
    let before = counts(&api.run(COUNTS).await);
    let r = api
        .run_with(
            UPDATE_TICKET,
            json!({"input": {"ticketId": id, "expectedVersion": 1, "status": "PENDING", "assignee": "bugs-bunny"}}),
        )
        .await;
    ok(&r);
    assert_eq!(
        r["data"]["updateTicket"]["ticket"],
        json!({"status": "PENDING", "version": 2, "assignee": {"username": "bugs-bunny"}})
    );
    assert_eq!(operations(&r)[..2], ["GetItem", "TransactWriteItems"]);
    let after = counts(&api.run(COUNTS).await);
    assert_eq!(after, (before.0, before.1 - 1, before.2 + 1));
    // Text alone: the ticket alone, in a transaction.
    let r = api
        .run_with(
            UPDATE_TICKET,
            json!({"input": {"ticketId": id, "expectedVersion": 2, "title": "Still moves", "assignee": "granny"}}),
        )
        .await;
    ok(&r);
    assert_eq!(operations(&r)[..2], ["GetItem", "TransactWriteItems"]);
    // A stale version: read, refused, nothing written.
    let r = api
        .run_with(
            UPDATE_TICKET,
            json!({"input": {"ticketId": id, "expectedVersion": 2, "status": "OPEN"}}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "VERSION_MISMATCH");
    assert_eq!(r["errors"][0]["extensions"]["currentVersion"], 3);
    assert_eq!(operations(&r), ["GetItem"]);
    assert_eq!(counts(&api.run(COUNTS).await), after);
}

const PLACE: &str = r#"mutation { placeOrder(input: { org: "acme", buyer: "wile-e-coyote", currency: "USD",
    lines: [{ sku: "ANVIL", description: "Anvil", quantity: 1, unitPriceCents: 100 }] }) { order { id orderId } } }"#;

const MOVE: &str = r#"mutation($input: UpdateOrderStatusInput!) {
    updateOrderStatus(input: $input) { order { status version } } }"#;

/// An order moves only along its declared life cycle, and staying in a status is no move
/// (`INVALID_TRANSITION` from it to itself, nothing written). Named by its plain id, it is
/// found through GSI1 (one Query) by a caller that sees every organization, and at its key
/// (one GetItem) by a caller whose token names its organization; either way one write.
async fn an_order_moves_only_along_its_life_cycle(api: &Api) {
    let placed = api.run(PLACE).await;
    ok(&placed);
    let order = &placed["data"]["placeOrder"]["order"];
    let plain = order["orderId"].as_str().unwrap();
    let admin = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("acme").unwrap(),
        role: Role::Admin,
        subject: None,
    };
    let mut version = 1;
    for (to, moves, by_token) in [
        ("PLACED", false, false),
        ("SHIPPED", false, true),
        ("PAID", true, false),
        ("PAID", false, true),
        ("SHIPPED", true, true),
        ("CANCELLED", false, false),
        ("DELIVERED", true, false),
        ("DELIVERED", false, true),
        ("CANCELLED", false, false),
    ] {
        let vars = json!({"input": {"orderId": plain, "status": to, "expectedVersion": version}});
        let r = if by_token {
            api.run_as(&admin, MOVE, vars).await
        } else {
            api.run_with(MOVE, vars).await
        };
        let read = if by_token { "GetItem" } else { "Query" };
        if moves {
            ok(&r);
            version += 1;
            assert_eq!(
                r["data"]["updateOrderStatus"]["order"],
                json!({"status": to, "version": version})
            );
            assert_eq!(operations(&r), [read, "TransactWriteItems"], "{r:#}");
        } else {
            assert_eq!(
                r["errors"][0]["extensions"]["code"], "INVALID_TRANSITION",
                "to {to}: {r:#}"
            );
            assert_eq!(r["errors"][0]["extensions"]["to"], to);
            assert_eq!(operations(&r), [read], "to {to}: refused after the read");
        }
    }
}
