//! The built-in design's writes, declared in its chart: a first one, `createUser`, taken
//! from the hand-written code into a copy of `charts/itemgraph.toml` (the email unique
//! through its `UserEmail` marker, the user counted on its organization's counter shards,
//! admins only) and held to the hand-written mutation: the same document answers the
//! same, refuses the same, makes the same requests and stores the same items, on both
//! engines.

use std::sync::Arc;

use itemgraph::store::{GetItem, Item, PrimaryKey};
use serde_json::{json, Value};

use crate::common::graphql::{requests, Api};

/// The built-in chart with `createUser` declared.
fn declared() -> Arc<itemgraph::chart::Chart> {
    let source = itemgraph::chart::BUILTIN_SOURCE;
    let user = "[entities.User]\nkey = [\"ORG#{org}\", \"USER#{username}\"]\n";
    let created = "[entities.User.attributes]\norg = { type = \"slug\", graphql = false }\nusername = { type = \"username\", description = \"Unique within the organization.\" }\nemail = { type = \"email\", description = \"Unique across all organizations, lowercased.\" }\nname = { type = \"string\", max_length = 100 }\nrole = \"Role\"\ncreatedAt = { type = \"timestamp\", description = \"RFC 3339, UTC.\" }";
    for part in [user, created] {
        assert!(source.contains(part), "{part}");
    }
    let ticket = "[entities.Ticket]\nkey = [\"TICKET#{ticketId}\", \"TICKET#{ticketId}\"]\n";
    assert!(source.contains(ticket));
    let text = source
        .replace(
            ticket,
            &format!("{ticket}version = \"version\"\ncounts = {{ organization = [\"ticketCount\", {{ by = \"status\", counters = {{ OPEN = \"ticketCountOpen\", PENDING = \"ticketCountPending\", SOLVED = \"ticketCountSolved\", CLOSED = \"ticketCountClosed\" }} }}], requester = \"ticketCount\", assignee = \"assignedTicketCount\" }}\nlifecycle = {{ attribute = \"status\", initial = \"OPEN\", transitions = {{ OPEN = [\"PENDING\", \"SOLVED\", \"CLOSED\"], PENDING = [\"OPEN\", \"SOLVED\", \"CLOSED\"], SOLVED = [\"OPEN\", \"PENDING\", \"CLOSED\"], CLOSED = [\"OPEN\", \"PENDING\", \"SOLVED\"] }} }}\n"),
        )
        .replace(
            "ticketId = { type = \"ulid\", description",
            "ticketId = { type = \"ulid\", auto = \"ulid\", description",
        )
        .replace(
            "createdAt = { type = \"timestamp\", description = \"RFC 3339, UTC.\" }\nupdatedAt = { type = \"timestamp\", description",
            "createdAt = { type = \"timestamp\", auto = \"created\", description = \"RFC 3339, UTC.\" }\nupdatedAt = { type = \"timestamp\", auto = \"updated\", description",
        )
        .replace(
            user,
            &format!("{user}unique = {{ email = \"UserEmail\" }}\ncounts = {{ organization = \"userCount\" }}\n"),
        )
        .replace(
            "assignedTicketCount = { type = \"counter\", graphql = false,",
            "assignedTicketCount = { type = \"counter\", graphql = false, referrers = \"assignedTickets\",",
        )
        .replace(
            "orderCount = { type = \"counter\", graphql = false,",
            "orderCount = { type = \"counter\", graphql = false, referrers = \"orders\",",
        )
        .replace(
            "[entities.Order]\nkey = [\"ORG#{org}\", \"#ORDER#{orderId}\"]\n",
            "[entities.Order]\nkey = [\"ORG#{org}\", \"#ORDER#{orderId}\"]\ncounts = { organization = \"orderCount\", buyer = \"orderCount\" }\n",
        )
        .replace(
            created,
            &created.replace("description = \"RFC 3339, UTC.\" }", "auto = \"created\", description = \"RFC 3339, UTC.\" }"),
        )
        + r#"
[patterns.20]
name = "Add a user, its email's marker and its organization's count"
request = "TransactWriteItems"
entity = "User"
field = "Mutation.createUser"

[mutations.createUser]
entity = "User"
action = "create"
pattern = 20
role = "ADMIN"

[patterns.21]
name = "Raise a ticket, counted on its organization, requester and assignee"
request = "TransactWriteItems"
entity = "Ticket"
field = "Mutation.createTicket"

[mutations.createTicket]
entity = "Ticket"
action = "create"
pattern = 21

[patterns.22]
name = "Remove a user nothing refers to, with its email's marker and its organization's count"
request = "TransactWriteItems"
entity = "User"
field = "Mutation.deleteUser"

[patterns.23]
name = "Change a user; a new email moves its marker"
request = "TransactWriteItems"
entity = "User"
field = "Mutation.updateUser"

[mutations.updateUser]
entity = "User"
action = "update"
pattern = 23
fields = ["name", "email", "role"]
role = "ADMIN"

[patterns.24]
name = "Change a ticket: its status moves its queue and its organization's counts, its assignee their counts"
request = "TransactWriteItems"
entity = "Ticket"
field = "Mutation.updateTicket"

[mutations.updateTicket]
entity = "Ticket"
action = "update"
by = "id"
pattern = 24
fields = ["status", "priority", "assignee", "title", "body"]

[mutations.deleteUser]
entity = "User"
action = "delete"
pattern = 22
role = "ADMIN"
"#;
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

async fn declared_api(dynamodb: Option<&str>) -> Option<Api> {
    let api = Api::chart(declared(), dynamodb).await?;
    itemgraph::demo::seed_demo(api.store.as_ref())
        .await
        .expect("the demo data");
    Some(api)
}

#[tokio::test]
async fn embedded() {
    let hand = Api::embedded().await;
    let chart = declared_api(None).await.unwrap();
    create_user_answers_as_the_hand_written_one(&hand, &chart).await;
    create_ticket_answers_as_the_hand_written_one(&hand, &chart).await;
    an_organization_from_before_shards_is_counted_on_its_own_item(&hand, &chart).await;
    update_user_answers_as_the_hand_written_one(&hand, &chart).await;
    delete_user_answers_as_the_hand_written_one(&hand, &chart).await;
    update_ticket_answers_as_the_hand_written_one(&hand, &chart).await;
}

#[tokio::test]
async fn dynamodb() {
    let Some(hand) = Api::dynamodb_without_stream("declared_hand").await else {
        return;
    };
    let chart = declared_api(Some("declared_chart")).await.unwrap();
    create_user_answers_as_the_hand_written_one(&hand, &chart).await;
    create_ticket_answers_as_the_hand_written_one(&hand, &chart).await;
    an_organization_from_before_shards_is_counted_on_its_own_item(&hand, &chart).await;
    update_user_answers_as_the_hand_written_one(&hand, &chart).await;
    delete_user_answers_as_the_hand_written_one(&hand, &chart).await;
    update_ticket_answers_as_the_hand_written_one(&hand, &chart).await;
    hand.finish().await;
    chart.finish().await;
}

const CREATE: &str = r#"mutation($input: CreateUserInput!) {
    createUser(input: $input) { user { id username email name role ticketCount organization { slug userCount } } } }"#;

fn input(username: &str, email: &str, org: &str) -> Value {
    json!({"input": {"org": org, "username": username, "email": email, "name": "New Person", "role": "MEMBER"}})
}

/// Each error's message, code and field.
fn errors(r: &Value) -> Vec<(Value, Value, Value)> {
    r["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["message"].clone(),
                e["extensions"]["code"].clone(),
                e["extensions"]["field"].clone(),
            )
        })
        .collect()
}

fn operations(r: &Value) -> Vec<String> {
    requests(r)
        .iter()
        .map(|q| q["operation"].as_str().unwrap().to_owned())
        .collect()
}

async fn item(api: &Api, pk: &str, sk: &str) -> Option<Item> {
    let mut item = api
        .store
        .get_item(GetItem {
            key: PrimaryKey::new(pk, sk),
            consistent_read: true,
        })
        .await
        .unwrap()?;
    item.remove("createdAt");
    Some(item)
}

async fn create_user_answers_as_the_hand_written_one(hand: &Api, chart: &Api) {
    let cases = [
        input("new-person", "New.Person@Example.com", "acme"),
        // The username taken, the email taken, no such organization.
        input("new-person", "other@example.com", "acme"),
        input("someone-else", "new.person@example.com", "acme"),
        input("third-person", "third@example.com", "no-such-org"),
        input("bad name", "x@example.com", "acme"),
    ];
    for vars in cases {
        let (a, b) = (
            hand.run_with(CREATE, vars.clone()).await,
            chart.run_with(CREATE, vars.clone()).await,
        );
        assert_eq!(a.get("data"), b.get("data"), "{vars}: {a:#} {b:#}");
        assert_eq!(errors(&a), errors(&b), "{vars}");
        if vars["input"]["org"] == "no-such-org" {
            // No counter shard: both write once more on the organization item itself (a
            // table from before the `counter-shards` migration), which is not there either.
            assert_eq!(operations(&b), ["TransactWriteItems", "TransactWriteItems"]);
        }
        assert_eq!(operations(&a), operations(&b), "{vars}");
    }
    // The items stored: the user and its email's marker, the same to the byte (but the
    // time they were made).
    for (pk, sk) in [
        ("ORG#acme", "USER#new-person"),
        (
            "EMAIL#acme#new.person@example.com",
            "EMAIL#acme#new.person@example.com",
        ),
    ] {
        let (a, b) = (item(hand, pk, sk).await, item(chart, pk, sk).await);
        assert!(a.is_some(), "{pk} {sk}");
        assert_eq!(a, b, "{pk} {sk}");
    }
    // Admins only.
    let member = itemgraph::auth::Access::Tenant {
        org: itemgraph::keys::Slug::parse("acme").unwrap(),
        role: itemgraph::auth::Role::Member,
        subject: None,
    };
    let vars = input("by-member", "member@example.com", "acme");
    let (a, b) = (
        hand.run_as(&member, CREATE, vars.clone()).await,
        chart.run_as(&member, CREATE, vars).await,
    );
    assert_eq!(
        a["errors"][0]["extensions"]["code"],
        b["errors"][0]["extensions"]["code"]
    );
    assert_eq!(b["errors"][0]["extensions"]["code"], "FORBIDDEN");
}

const TICKET: &str = r#"mutation($input: CreateTicketInput!) {
    createTicket(input: $input) { ticket { title body status priority version
        requester { username ticketCount } assignee { username }
        organization { ticketCount tickets(status: OPEN, first: 1) { totalCount } } } } }"#;

/// `createTicket` declared (counted on the organization's shards, in total and in its
/// status, on the requester and the assignee; its version, its life cycle's first state,
/// its id and times given by the writes): the same answers, refusals and requests, and
/// the built-in `itemgraph check` clean after.
async fn create_ticket_answers_as_the_hand_written_one(hand: &Api, chart: &Api) {
    let t = |requester: &str, assignee: Option<&str>, title: &str| {
        json!({"input": {"org": "acme", "requester": requester, "assignee": assignee,
                         "title": title, "body": "Steps:\n1. open it", "priority": "HIGH"}})
    };
    let cases = [
        t("daffy-duck", Some("bugs-bunny"), "Assigned"),
        t("daffy-duck", None, "Unassigned"),
        t("granny", Some("granny"), "To myself"),
        t("nobody", None, "No requester"),
        t("daffy-duck", Some("nobody"), "No assignee"),
        t("daffy-duck", None, "Two\nlines"),
    ];
    let mut outcomes = Vec::new();
    for vars in cases {
        let (a, b) = (
            hand.run_with(TICKET, vars.clone()).await,
            chart.run_with(TICKET, vars.clone()).await,
        );
        outcomes.push(
            b["errors"][0]["extensions"]["code"]
                .as_str()
                .unwrap_or_else(|| {
                    b["data"]["createTicket"]["ticket"]["status"]
                        .as_str()
                        .unwrap()
                })
                .to_owned(),
        );
        assert_eq!(a.get("data"), b.get("data"), "{vars}: {a:#} {b:#}");
        assert_eq!(errors(&a), errors(&b), "{vars}");
        assert_eq!(operations(&a), operations(&b), "{vars}");
    }
    assert_eq!(
        outcomes,
        [
            "OPEN",
            "OPEN",
            "OPEN",
            "NOT_FOUND",
            "NOT_FOUND",
            "BAD_USER_INPUT"
        ]
    );
    for api in [hand, chart] {
        let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
        assert!(report.is_clean(), "{report}: {:#?}", report.violations);
    }
}

/// An organization written before counter shards (no shards, its counts on its own item,
/// as a table mid-way through the `counter-shards` migration holds): the declared write
/// finds no shard and counts on the organization itself, as the hand-written one does,
/// with the same two requests.
async fn an_organization_from_before_shards_is_counted_on_its_own_item(hand: &Api, chart: &Api) {
    use itemgraph::model::{Organization, Plan, Record};
    let mut org = Organization::new(
        itemgraph::keys::Slug::parse("before-shards").unwrap(),
        "Before shards".into(),
        Plan::Free,
        "2024-01-08T09:00:00.000Z".into(),
    );
    org.schema_version = None;
    for api in [hand, chart] {
        api.store
            .put_item(itemgraph::store::Put::new(org.to_item()))
            .await
            .unwrap();
    }
    let vars = input("late-comer", "late@example.com", "before-shards");
    let (a, b) = (
        hand.run_with(CREATE, vars.clone()).await,
        chart.run_with(CREATE, vars).await,
    );
    assert_eq!(a.get("data"), b.get("data"), "{a:#} {b:#}");
    assert_eq!(
        b["data"]["createUser"]["user"]["organization"]["userCount"],
        1
    );
    assert_eq!(operations(&a), operations(&b));
    // The two writes, then the organization read for the answer.
    assert_eq!(
        operations(&b)[..2],
        ["TransactWriteItems", "TransactWriteItems"]
    );
    for api in [hand, chart] {
        let stored = item(api, "ORG#before-shards", "ORG#before-shards")
            .await
            .unwrap();
        assert_eq!(
            stored.get("userCount"),
            Some(&itemgraph::store::AttributeValue::N("1".into()))
        );
    }
}

const DELETE: &str = r#"mutation($input: DeleteUserInput!) {
    deleteUser(input: $input) { deletedUserId user { username email ticketCount organization { userCount } } } }"#;

/// `deleteUser` declared (its referrers named by the counters' `referrers`, or the
/// connection a counter totals): every user of the demo organizations deleted on both
/// APIs, in turn, answers the same (refused while requester, assignee or buyer of
/// anything, `tickets`, `assignedTickets`, `orders`), with the same requests; a deleted
/// user's email is free again; no such user, another tenant's, a member caller.
async fn delete_user_answers_as_the_hand_written_one(hand: &Api, chart: &Api) {
    let users = hand
        .run(
            r#"{ a: organization(slug: "acme") { users(first: 50) { nodes { username } } }
                  b: organization(slug: "globex") { users(first: 50) { nodes { username } } } }"#,
        )
        .await;
    let mut refused = Vec::new();
    for (org, key) in [("acme", "a"), ("globex", "b")] {
        for u in users["data"][key]["users"]["nodes"].as_array().unwrap() {
            let vars = json!({"input": {"org": org, "username": u["username"]}});
            let (a, b) = (
                hand.run_with(DELETE, vars.clone()).await,
                chart.run_with(DELETE, vars.clone()).await,
            );
            assert_eq!(a.get("data"), b.get("data"), "{vars}: {a:#} {b:#}");
            assert_eq!(errors(&a), errors(&b), "{vars}");
            assert_eq!(operations(&a), operations(&b), "{vars}");
            if let Some(field) = b["errors"][0]["extensions"]["field"].as_str() {
                refused.push(field.to_owned());
            }
        }
    }
    // Assigned a ticket, requested none: `assignedTickets`.
    for api in [hand, chart] {
        let r = api
            .run_with(CREATE, input("helper", "helper@example.com", "acme"))
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
        let r = api
            .run_with(
                TICKET,
                json!({"input": {"org": "acme", "requester": "daffy-duck", "assignee": "helper",
                                 "title": "Help", "body": "Please", "priority": "LOW"}}),
            )
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    let vars = json!({"input": {"org": "acme", "username": "helper"}});
    let (a, b) = (
        hand.run_with(DELETE, vars.clone()).await,
        chart.run_with(DELETE, vars).await,
    );
    assert_eq!(errors(&a), errors(&b));
    assert_eq!(operations(&a), operations(&b));
    refused.extend(
        b["errors"][0]["extensions"]["field"]
            .as_str()
            .map(str::to_owned),
    );
    for field in ["tickets", "assignedTickets", "orders"] {
        assert!(refused.iter().any(|f| f == field), "{field}: {refused:?}");
    }
    let fresh = input("short-lived", "short.lived@example.com", "acme");
    for api in [hand, chart] {
        let r = api.run_with(CREATE, fresh.clone()).await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    let vars = json!({"input": {"org": "acme", "username": "short-lived"}});
    let member = itemgraph::auth::Access::Tenant {
        org: itemgraph::keys::Slug::parse("acme").unwrap(),
        role: itemgraph::auth::Role::Member,
        subject: None,
    };
    let other = itemgraph::auth::Access::Tenant {
        org: itemgraph::keys::Slug::parse("globex").unwrap(),
        role: itemgraph::auth::Role::Admin,
        subject: None,
    };
    for access in [&member, &other] {
        let (a, b) = (
            hand.run_as(access, DELETE, vars.clone()).await,
            chart.run_as(access, DELETE, vars.clone()).await,
        );
        assert_eq!(errors(&a), errors(&b));
        assert_eq!(operations(&a), operations(&b));
    }
    let (a, b) = (
        hand.run_with(DELETE, vars.clone()).await,
        chart.run_with(DELETE, vars.clone()).await,
    );
    assert!(b.get("errors").is_none(), "{b:#}");
    assert_eq!(a.get("data"), b.get("data"));
    assert_eq!(operations(&a), operations(&b));
    assert_eq!(operations(&b)[..2], ["GetItem", "TransactWriteItems"]);
    // Gone, and its email free again; deleted twice: not found.
    let (a, b) = (
        hand.run_with(DELETE, vars.clone()).await,
        chart.run_with(DELETE, vars.clone()).await,
    );
    assert_eq!(errors(&a), errors(&b));
    assert_eq!(b["errors"][0]["extensions"]["field"], "user");
    assert_eq!(operations(&a), operations(&b));
    for api in [hand, chart] {
        let r = api
            .run_with(CREATE, input("reborn", "short.lived@example.com", "acme"))
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    for api in [hand, chart] {
        let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
        assert!(report.is_clean(), "{report}: {:#?}", report.violations);
    }
}

const UPDATE: &str = r#"mutation($input: UpdateUserInput!) {
    updateUser(input: $input) { user { username email name role ticketCount } } }"#;

/// `updateUser` declared (the email unique through its marker, moved when it changes):
/// each change answers, refuses and requests as the hand-written one; the old email is
/// free after, the new one taken.
async fn update_user_answers_as_the_hand_written_one(hand: &Api, chart: &Api) {
    let u = |username: &str, change: Value| {
        let mut input = json!({"org": "acme", "username": username});
        input
            .as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        json!({ "input": input })
    };
    for api in [hand, chart] {
        let r = api
            .run_with(CREATE, input("mover", "mover@example.com", "acme"))
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    let cases = [
        // Name and role alone: one UpdateItem, nothing read.
        u("mover", json!({"name": "Renamed", "role": "ADMIN"})),
        // The email it has (in another case): read, then one conditional UpdateItem.
        u("mover", json!({"email": "MOVER@example.com"})),
        // A new email: read, then the marker moved in one TransactWriteItems.
        u(
            "mover",
            json!({"email": "moved@example.com", "name": "Moved"}),
        ),
        // Taken by another user; no such user; nothing to change; bad input.
        u("mover", json!({"email": "new.person@example.com"})),
        u("nobody", json!({"name": "X"})),
        u("nobody", json!({"email": "x@example.com"})),
        u("mover", json!({})),
        u("mover", json!({"email": "not an email"})),
        u("mover", json!({"name": "Two\nlines"})),
    ];
    for vars in cases {
        let (a, b) = (
            hand.run_with(UPDATE, vars.clone()).await,
            chart.run_with(UPDATE, vars.clone()).await,
        );
        assert_eq!(a.get("data"), b.get("data"), "{vars}: {a:#} {b:#}");
        assert_eq!(errors(&a), errors(&b), "{vars}");
        assert_eq!(operations(&a), operations(&b), "{vars}");
    }
    // The old email is free again, the new one taken.
    for api in [hand, chart] {
        let r = api
            .run_with(CREATE, input("mover-two", "mover@example.com", "acme"))
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
        let r = api
            .run_with(CREATE, input("mover-three", "moved@example.com", "acme"))
            .await;
        assert_eq!(r["errors"][0]["extensions"]["field"], "email", "{r:#}");
    }
    let member = itemgraph::auth::Access::Tenant {
        org: itemgraph::keys::Slug::parse("acme").unwrap(),
        role: itemgraph::auth::Role::Member,
        subject: None,
    };
    let vars = u("mover", json!({"name": "By a member"}));
    let (a, b) = (
        hand.run_as(&member, UPDATE, vars.clone()).await,
        chart.run_as(&member, UPDATE, vars).await,
    );
    assert_eq!(errors(&a), errors(&b));
    for api in [hand, chart] {
        let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
        assert!(report.is_clean(), "{report}: {:#?}", report.violations);
    }
}

const UPDATE_TICKET: &str = r#"mutation($input: UpdateTicketInput!) {
    updateTicket(input: $input) { ticket { id ticketId title body status priority version
        requester { username ticketCount } assignee { username }
        organization { ticketCount open: tickets(status: OPEN, first: 1) { totalCount }
                       pending: tickets(status: PENDING, first: 1) { totalCount } } } } }"#;

/// `updateTicket` declared (its version, its status counted per queue on the
/// organization's shards, its assignee counted on the user, by the ticket's global or
/// plain id): the same answers, refusals and requests, in lockstep on one demo ticket,
/// and `itemgraph check` clean after.
async fn update_ticket_answers_as_the_hand_written_one(hand: &Api, chart: &Api) {
    let r = hand
        .run(r#"{ organization(slug: "acme") { tickets(status: OPEN, last: 1) { nodes { id ticketId version } } } }"#)
        .await;
    let t = &r["data"]["organization"]["tickets"]["nodes"][0];
    let (id, plain) = (t["id"].as_str().unwrap(), t["ticketId"].as_str().unwrap());
    let v = t["version"].as_i64().unwrap();
    let user_id = hand
        .run(r#"{ user(org: "acme", username: "daffy-duck") { id } }"#)
        .await["data"]["user"]["id"]
        .clone();
    let c = |ticket: &str, version: i64, change: Value| {
        let mut input = json!({"ticketId": ticket, "expectedVersion": version});
        input
            .as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        json!({ "input": input })
    };
    let cases = [
        // Text and priority: read, then the ticket alone in a TransactWriteItems.
        c(
            plain,
            v,
            json!({"priority": "URGENT", "title": "Now urgent"}),
        ),
        // A status: its queue and its organization's counts move.
        c(id, v + 1, json!({"status": "PENDING"})),
        // Assigned, reassigned, unassigned: the users' counts move.
        c(plain, v + 2, json!({"assignee": "bugs-bunny"})),
        c(
            plain,
            v + 3,
            json!({"assignee": "granny", "status": "OPEN"}),
        ),
        c(plain, v + 4, json!({"assignee": null})),
        // Refused: a stale version, no such assignee, nothing to change, bad input, no
        // such ticket, not a ticket's id, a version below 1.
        c(plain, v, json!({"priority": "LOW"})),
        c(plain, v + 5, json!({"assignee": "nobody"})),
        c(plain, v + 5, json!({})),
        c(plain, v + 5, json!({"title": "Two\nlines"})),
        c(plain, v + 5, json!({"body": "x".repeat(10_001)})),
        c("01HSQB7G5003RV73NYKVQMF2ZZ", 1, json!({"priority": "LOW"})),
        c(user_id.as_str().unwrap(), 1, json!({"priority": "LOW"})),
        c("not-an-id", 1, json!({"priority": "LOW"})),
        c(plain, 0, json!({"priority": "LOW"})),
        // The same status again: a change like any other.
        c(
            plain,
            v + 5,
            json!({"status": "OPEN", "body": "Same queue"}),
        ),
    ];
    for vars in cases {
        let (a, b) = (
            hand.run_with(UPDATE_TICKET, vars.clone()).await,
            chart.run_with(UPDATE_TICKET, vars.clone()).await,
        );
        assert_eq!(a.get("data"), b.get("data"), "{vars}: {a:#} {b:#}");
        assert_eq!(errors(&a), errors(&b), "{vars}");
        assert_eq!(operations(&a), operations(&b), "{vars}");
    }
    // Another organization's ticket is as missing as one that is not there.
    let other = itemgraph::auth::Access::Tenant {
        org: itemgraph::keys::Slug::parse("globex").unwrap(),
        role: itemgraph::auth::Role::Admin,
        subject: None,
    };
    let vars = c(plain, v + 6, json!({"priority": "LOW"}));
    let (a, b) = (
        hand.run_as(&other, UPDATE_TICKET, vars.clone()).await,
        chart.run_as(&other, UPDATE_TICKET, vars).await,
    );
    assert_eq!(errors(&a), errors(&b));
    assert_eq!(b["errors"][0]["extensions"]["field"], "ticket");
    assert_eq!(operations(&a), operations(&b));
    // The stored tickets are the same (but the times of the change).
    let key = format!("TICKET#{plain}");
    let (mut a, mut b) = (
        item(hand, &key, &key).await.unwrap(),
        item(chart, &key, &key).await.unwrap(),
    );
    a.remove("updatedAt");
    b.remove("updatedAt");
    assert_eq!(a, b);
    for api in [hand, chart] {
        let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
        assert!(report.is_clean(), "{report}: {:#?}", report.violations);
    }
}
