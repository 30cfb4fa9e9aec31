//! The built-in chart's writes keep the table whole, on both engines: each mutation
//! answers as documented (a taken slug or email, a user still referred to, a stale
//! version, a replayed client token), keeps every counter and marker, and the table checks
//! clean (`itemgraph check`) after each of them. Concurrent writes to one organization
//! all land, and concurrent retries with one client token place one order.

use serde_json::{json, Value};

use crate::common;
use common::graphql::Api;
use common::records::{key, GlobalId, Record, User, UserEmail};
use itemgraph::chart::kinds::Id;
use itemgraph::store::{GetItem, PrimaryKey};

async fn assert_clean(api: &Api) {
    api.assert_clean(&itemgraph::chart::builtin()).await;
}

/// The code and field of a refused mutation's first error.
fn refused(response: &Value) -> (&str, Option<&str>) {
    let e = &response["errors"][0]["extensions"];
    assert!(e.is_object(), "a refusal, got {response:#}");
    (e["code"].as_str().unwrap(), e["field"].as_str())
}

async fn item(api: &Api, key: PrimaryKey) -> Option<itemgraph::store::Item> {
    api.store
        .get_item(GetItem {
            key,
            consistent_read: true,
        })
        .await
        .unwrap()
}

async fn user(api: &Api, username: &str) -> Option<User> {
    let k = key("User", &[("org", "acme"), ("username", username)]);
    item(api, k).await.map(|i| User::from_item(i).unwrap())
}

/// The marker of an address of acme's.
async fn marker(api: &Api, email: &str) -> Option<UserEmail> {
    let k = key("UserEmail", &[("org", "acme"), ("email", email)]);
    item(api, k).await.map(|i| UserEmail::from_item(i).unwrap())
}

/// The user's `(ticketCount, assignedTicketCount, orderCount)`, as stored.
async fn user_counts(api: &Api, username: &str) -> (u32, u32, u32) {
    let u = user(api, username).await.expect("user");
    (u.ticket_count, u.assigned_ticket_count, u.order_count)
}

/// An organization's `userCount` or `orderCount` as the API reads it.
async fn org_count(api: &Api, org: &str, counter: &str) -> u64 {
    let data = api
        .data(
            &format!("query($slug: String!) {{ organization(slug: $slug) {{ {counter} }} }}"),
            json!({ "slug": org }),
        )
        .await;
    data["organization"][counter].as_u64().expect("a count")
}

const CREATE_USER: &str =
    "mutation($input: CreateUserInput!) { createUser(input: $input) { user { username } } }";
const UPDATE_USER: &str = "mutation($input: UpdateUserInput!) {
  updateUser(input: $input) { user { username email name role } } }";
const DELETE_USER: &str = "mutation($input: DeleteUserInput!) {
  deleteUser(input: $input) { user { username email } } }";
const CREATE_TICKET: &str = "mutation($input: CreateTicketInput!) {
  createTicket(input: $input) { ticket { ticketId version } } }";
const UPDATE_TICKET: &str = "mutation($input: UpdateTicketInput!) {
  updateTicket(input: $input) { ticket { ticketId version status priority title body } } }";
const PLACE_ORDER: &str = "mutation($input: PlaceOrderInput!) {
  placeOrder(input: $input) { replayed order { orderId totalCents lines { lineNo amountCents } } } }";

async fn create_user(api: &Api, username: &str, email: &str) {
    api.data(
        CREATE_USER,
        json!({ "input": {
            "org": "acme", "username": username, "email": email,
            "name": username.to_uppercase(), "role": "MEMBER",
        }}),
    )
    .await;
}

async fn delete_user(api: &Api, username: &str) -> Value {
    api.run_with(
        DELETE_USER,
        json!({ "input": { "org": "acme", "username": username } }),
    )
    .await
}

/// A new OPEN acme ticket of `requester`'s: its id and version.
async fn create_ticket(api: &Api, requester: &str, assignee: Option<&str>) -> (String, u64) {
    let data = api
        .data(
            CREATE_TICKET,
            json!({ "input": {
                "org": "acme", "requester": requester, "title": "Anvil", "body": "It fell.",
                "priority": "NORMAL", "assignee": assignee,
            }}),
        )
        .await;
    let t = &data["createTicket"]["ticket"];
    (
        t["ticketId"].as_str().unwrap().to_owned(),
        t["version"].as_u64().unwrap(),
    )
}

fn ticket_id(id: &str) -> String {
    GlobalId::Ticket(Id::parse(id).unwrap()).encode()
}

fn order(org: &str, buyer: &str, lines: u32, token: Option<&str>) -> Value {
    let lines: Vec<Value> = (1..=lines)
        .map(|n| json!({ "sku": format!("SKU-{n}"), "description": "A thing", "quantity": n, "unitPriceCents": 250 }))
        .collect();
    json!({ "input": {
        "org": org, "buyer": buyer, "currency": "USD", "lines": lines, "clientToken": token,
    }})
}

/// `createOrganization` refuses a taken slug and writes a new organization with zero
/// counters.
async fn create_organization_is_unique_on_slug(api: &Api) {
    const CREATE: &str = "mutation($input: CreateOrganizationInput!) {
      createOrganization(input: $input) { organization { slug userCount } } }";
    let made = api
        .data(
            CREATE,
            json!({ "input": { "slug": "umbrella", "name": "Umbrella", "plan": "FREE" } }),
        )
        .await;
    assert_eq!(made["createOrganization"]["organization"]["userCount"], 0);
    assert_eq!(org_count(api, "umbrella", "userCount").await, 0);
    let taken = api
        .run_with(
            CREATE,
            json!({ "input": { "slug": "acme", "name": "Umbrella", "plan": "FREE" } }),
        )
        .await;
    assert_eq!(refused(&taken), ("CONFLICT", Some("slug")));
    let acme = api
        .data(r#"{ organization(slug: "acme") { name } }"#, Value::Null)
        .await;
    assert_eq!(acme["organization"]["name"], "Acme Corporation");
    assert_clean(api).await;
}

/// An email change swaps the markers in one transaction: the old marker is gone, the
/// new one names the user. A taken email is `CONFLICT` (`email`) and changes nothing, not
/// even the other fields of the same change; a missing user is `NOT_FOUND` (`user`).
async fn update_user_swaps_the_email_marker(api: &Api) {
    let before = user(api, "road-runner").await.unwrap();
    let change = |username: &str, fields: Value| {
        let mut input = json!({ "org": "acme", "username": username });
        input
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        json!({ "input": input })
    };
    let after = api
        .data(
            UPDATE_USER,
            change(
                "road-runner",
                json!({ "name": "Road Runner (beep)", "email": "Beep@Acme.Example", "role": "ADMIN" }),
            ),
        )
        .await;
    assert_eq!(
        after["updateUser"]["user"],
        json!({ "username": "road-runner", "email": "beep@acme.example",
                "name": "Road Runner (beep)", "role": "ADMIN" })
    );
    let stored = user(api, "road-runner").await.unwrap();
    assert_eq!(stored.email, "beep@acme.example");
    assert_eq!(marker(api, before.email.as_str()).await, None);
    let m = marker(api, "beep@acme.example").await.unwrap();
    assert_eq!(
        (m.org.as_str(), m.username.as_str()),
        ("acme", "road-runner")
    );
    assert_clean(api).await;

    let taken = api
        .run_with(
            UPDATE_USER,
            change(
                "road-runner",
                json!({ "name": "Impostor", "email": "wile-e-coyote@acme.example" }),
            ),
        )
        .await;
    assert_eq!(refused(&taken), ("CONFLICT", Some("email")));
    assert_eq!(user(api, "road-runner").await.unwrap(), stored);
    let wile = marker(api, "wile-e-coyote@acme.example").await.unwrap();
    assert_eq!(wile.username, "wile-e-coyote");
    assert!(marker(api, "beep@acme.example").await.is_some());

    // Without an email: the role alone changes; a missing user is NOT_FOUND either way.
    let member = api
        .data(
            UPDATE_USER,
            change("road-runner", json!({ "role": "MEMBER" })),
        )
        .await;
    assert_eq!(member["updateUser"]["user"]["role"], "MEMBER");
    assert_eq!(member["updateUser"]["user"]["email"], "beep@acme.example");
    for fields in [
        json!({ "role": "MEMBER" }),
        json!({ "email": "new@acme.example" }),
    ] {
        let missing = api.run_with(UPDATE_USER, change("nobody", fields)).await;
        assert_eq!(refused(&missing), ("NOT_FOUND", Some("user")));
    }
    assert_clean(api).await;
}

/// A user who requested tickets cannot be deleted (`CONFLICT`, `tickets`); one who did
/// not is deleted with their marker and uncounted, and their email is free again.
async fn delete_user_keeps_requesters(api: &Api) {
    let users = org_count(api, "acme", "userCount").await;
    let heavy = delete_user(api, crate::common::demo::HEAVY_USER).await;
    assert_eq!(refused(&heavy), ("CONFLICT", Some("tickets")));
    assert!(user(api, crate::common::demo::HEAVY_USER).await.is_some());

    create_user(api, "temp-worker", "temp@acme.example").await;
    assert_eq!(org_count(api, "acme", "userCount").await, users + 1);
    let gone = delete_user(api, "temp-worker").await;
    assert_eq!(
        gone["data"]["deleteUser"]["user"],
        json!({ "username": "temp-worker", "email": "temp@acme.example" })
    );
    assert_eq!(user(api, "temp-worker").await, None);
    assert_eq!(marker(api, "temp@acme.example").await, None);
    assert_eq!(org_count(api, "acme", "userCount").await, users);
    let again = delete_user(api, "temp-worker").await;
    assert_eq!(refused(&again), ("NOT_FOUND", Some("user")));
    create_user(api, "temp-2", "temp@acme.example").await;
    assert_clean(api).await;
}

/// Assignees and buyers are counted on the user, in the same transaction as the ticket or
/// order: a user assigned a ticket is refused (`assignedTickets`) until the ticket is
/// reassigned, a buyer is refused for good (`orders`), and no reference dangles. A
/// requester who assigns the ticket to themselves is counted twice, once as each.
async fn delete_user_keeps_assignees_and_buyers(api: &Api) {
    let before = user_counts(api, "road-runner").await;
    create_user(api, "new-hire", "new-hire@acme.example").await;
    let (t, version) = create_ticket(api, "road-runner", Some("new-hire")).await;
    assert_eq!(user_counts(api, "new-hire").await, (0, 1, 0));
    let r = delete_user(api, "new-hire").await;
    assert_eq!(refused(&r), ("CONFLICT", Some("assignedTickets")));
    assert!(user(api, "new-hire").await.is_some());
    assert_clean(api).await;

    // Reassigned to the requester: the count moves, and new-hire may go.
    let moved = api
        .data(
            UPDATE_TICKET,
            json!({ "input": { "ticketId": ticket_id(&t), "expectedVersion": version, "assignee": "road-runner" } }),
        )
        .await;
    let version = moved["updateTicket"]["ticket"]["version"].as_u64().unwrap();
    assert_eq!(user_counts(api, "new-hire").await, (0, 0, 0));
    assert_eq!(
        user_counts(api, "road-runner").await,
        (before.0 + 1, before.1 + 1, before.2)
    );
    assert!(delete_user(api, "new-hire").await["errors"].is_null());
    assert_clean(api).await;

    // Self-assigned from the start: both counters.
    create_ticket(api, "road-runner", Some("road-runner")).await;
    assert_eq!(
        user_counts(api, "road-runner").await,
        (before.0 + 2, before.1 + 2, before.2)
    );
    // Unassigned (an explicit null): the count goes back.
    api.data(
        UPDATE_TICKET,
        json!({ "input": { "ticketId": ticket_id(&t), "expectedVersion": version, "assignee": null } }),
    )
    .await;
    assert_eq!(
        user_counts(api, "road-runner").await,
        (before.0 + 2, before.1 + 1, before.2)
    );
    assert_clean(api).await;

    create_user(api, "one-time-buyer", "one-time-buyer@acme.example").await;
    api.data(PLACE_ORDER, order("acme", "one-time-buyer", 1, None))
        .await;
    assert_eq!(user_counts(api, "one-time-buyer").await, (0, 0, 1));
    let r = delete_user(api, "one-time-buyer").await;
    assert_eq!(refused(&r), ("CONFLICT", Some("orders")));
    assert!(user(api, "one-time-buyer").await.is_some());
    assert_clean(api).await;
}

/// The same client token twice places one order: the second call returns the first
/// order, `replayed`, and `orderCount` grows by one only. The token is per organization,
/// and a malformed one is refused before any write.
async fn place_order_with_a_client_token_places_once(api: &Api) {
    let orders = org_count(api, "acme", "orderCount").await;
    let first = api
        .data(
            PLACE_ORDER,
            order("acme", "road-runner", 3, Some("checkout-42")),
        )
        .await;
    let first = &first["placeOrder"];
    assert_eq!(first["replayed"], false);
    assert_eq!(first["order"]["totalCents"], "1500");
    let retry = api
        .data(
            PLACE_ORDER,
            order("acme", "road-runner", 1, Some("checkout-42")),
        )
        .await;
    let retry = &retry["placeOrder"];
    assert_eq!(retry["replayed"], true);
    assert_eq!(
        retry["order"], first["order"],
        "the first order, its lines too"
    );
    assert_eq!(org_count(api, "acme", "orderCount").await, orders + 1);

    let fresh = api
        .data(
            PLACE_ORDER,
            order("globex", "homer-simpson", 1, Some("checkout-42")),
        )
        .await;
    assert_eq!(fresh["placeOrder"]["replayed"], false);
    for bad in ["not a token".to_owned(), "x".repeat(65)] {
        let r = api
            .run_with(PLACE_ORDER, order("acme", "road-runner", 1, Some(&bad)))
            .await;
        assert_eq!(refused(&r).0, "BAD_USER_INPUT", "{r:#}");
    }
    assert_eq!(org_count(api, "acme", "orderCount").await, orders + 1);
    assert_clean(api).await;
}

/// `updateTicket` changes status, priority, title and body, bumps the version, and a
/// stale version is `VERSION_MISMATCH` carrying the current one.
async fn update_ticket_changes_every_field(api: &Api) {
    let (t, version) = create_ticket(api, "road-runner", None).await;
    let change = json!({ "input": {
        "ticketId": ticket_id(&t), "expectedVersion": version, "status": "PENDING",
        "priority": "URGENT", "title": "Anvil, again", "body": "It fell twice.",
    }});
    let after = api.data(UPDATE_TICKET, change.clone()).await;
    assert_eq!(
        after["updateTicket"]["ticket"],
        json!({ "ticketId": t, "version": version + 1, "status": "PENDING",
                "priority": "URGENT", "title": "Anvil, again", "body": "It fell twice." })
    );
    let stale = api.run_with(UPDATE_TICKET, change).await;
    assert_eq!(refused(&stale).0, "VERSION_MISMATCH");
    assert_eq!(
        stale["errors"][0]["extensions"]["currentVersion"],
        json!(version + 1)
    );
    assert_clean(api).await;
}

/// Concurrent writes that all touch the organization's counters land, every one, and
/// concurrent retries with one client token place one order.
async fn concurrent_writes_to_one_organization_all_land(api: &Api) {
    let before = org_count(api, "acme", "orderCount").await;
    let placed = futures::future::join_all(
        (0..12).map(|_| api.run_with(PLACE_ORDER, order("acme", "road-runner", 2, None))),
    )
    .await;
    for p in &placed {
        assert!(
            p["errors"].is_null(),
            "every concurrent order is placed: {p:#}"
        );
    }
    assert_eq!(org_count(api, "acme", "orderCount").await, before + 12);

    let tries = futures::future::join_all((0..4).map(|_| {
        api.run_with(
            PLACE_ORDER,
            order("acme", "road-runner", 1, Some("same-click")),
        )
    }))
    .await;
    for t in &tries {
        assert!(t["errors"].is_null(), "{t:#}");
    }
    let placed: Vec<&Value> = tries.iter().map(|t| &t["data"]["placeOrder"]).collect();
    assert_eq!(placed.iter().filter(|p| p["replayed"] == false).count(), 1);
    assert!(placed.iter().all(|p| p["order"] == placed[0]["order"]));
    assert_eq!(org_count(api, "acme", "orderCount").await, before + 13);
    assert_clean(api).await;
}

on_every_engine!(
    create_organization_is_unique_on_slug,
    update_user_swaps_the_email_marker,
    delete_user_keeps_requesters,
    delete_user_keeps_assignees_and_buyers,
    place_order_with_a_client_token_places_once,
    update_ticket_changes_every_field,
    concurrent_writes_to_one_organization_all_land,
);
