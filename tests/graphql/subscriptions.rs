//! Subscriptions on both engines: fed by the table's change stream, tenant-scoped,
//! resumable without duplicate or gap, bounded.

use crate::common;

use std::time::Duration;

use crate::common::records::Record;
use common::graphql::{cursors, error_codes, Api};
use futures::{Stream, StreamExt};
use itemgraph::auth::Access;
use itemgraph::auth::Role;
use itemgraph::live::LiveOptions;
use itemgraph::store::{Put, Store};
use serde_json::{json, Value};

const TICKETS: &str = r#"subscription($org: String!, $status: TicketStatus, $after: String) {
  ticketEvents(org: $org, status: $status, after: $after) {
    kind previousStatus cursor
    ticket { ticketId title status requester { username ticketCount } }
  }
}"#;

const USER_TICKETS: &str = r#"subscription($org: String!, $username: String!) {
  userTicketEvents(org: $org, username: $username) { kind ticket { ticketId } }
}"#;

const ORDERS: &str = r#"subscription($org: String!, $id: ID) {
  orderEvents(org: $org, id: $id) { kind previousStatus order { orderId status } }
}"#;

const CREATE_TICKET: &str = r#"mutation($input: CreateTicketInput!) {
  createTicket(input: $input) { ticket { ticketId version } }
}"#;

const UPDATE_TICKET: &str = r#"mutation($input: UpdateTicketInput!) {
  updateTicket(input: $input) { ticket { ticketId version status } }
}"#;

type Events = Box<dyn Stream<Item = Value> + Send + Unpin>;

fn tenant(org: &str, role: Role) -> Access {
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(org).unwrap(),
        role,
        subject: None,
    }
}

fn sub(api: &Api, access: &Access, query: &str, vars: Value) -> Events {
    Box::new(api.subscribe(access, None, query, vars))
}

/// The next response, within a bound generous enough for a loaded DynamoDB Local.
async fn next(events: &mut Events) -> Value {
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("an event in time")
        .expect("the subscription goes on")
}

/// Asserts nothing arrives for a moment.
async fn quiet(events: &mut Events) {
    if let Ok(got) = tokio::time::timeout(Duration::from_millis(1500), events.next()).await {
        panic!("no event expected, got {got:?}");
    }
}

/// Polls `subs` until the hub has `n` listeners: a subscription subscribes when first
/// polled, after it was parsed and validated and the reader started.
async fn ready(api: &Api, subs: &mut [&mut Events], n: usize) {
    for _ in 0..2000 {
        if api.hub.listeners() >= n {
            return;
        }
        for s in subs.iter_mut() {
            if let Ok(Some(r)) = tokio::time::timeout(Duration::from_millis(5), s.next()).await {
                panic!("no event expected yet: {r:#}");
            }
        }
    }
    panic!("the subscriptions did not start listening");
}

async fn create_ticket(api: &Api, title: &str, requester: &str) -> String {
    let r = api
        .run_with(
            CREATE_TICKET,
            json!({ "input": { "org": "acme", "title": title, "body": "Details.", "requester": requester, "priority": "NORMAL" } }),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"]["createTicket"]["ticket"]["ticketId"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn event(r: &Value, field: &str) -> Value {
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"][field].clone()
}

async fn a_change_reaches_each_matching_subscription_exactly_once(api: &Api) {
    let all = Access::Unrestricted;
    let mut tickets = sub(api, &all, TICKETS, json!({ "org": "acme" }));
    let mut open = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "status": "OPEN" }),
    );
    let mut closed = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "status": "CLOSED" }),
    );
    let mut wile = sub(
        api,
        &all,
        USER_TICKETS,
        json!({ "org": "acme", "username": "wile-e-coyote" }),
    );
    let mut daffy = sub(
        api,
        &all,
        USER_TICKETS,
        json!({ "org": "acme", "username": "daffy-duck" }),
    );
    let mut globex = sub(api, &all, TICKETS, json!({ "org": "globex" }));
    let mut orders = sub(api, &all, ORDERS, json!({ "org": "acme" }));
    let acme_member = tenant("acme", Role::Member);
    let mut as_tenant = sub(api, &acme_member, TICKETS, json!({ "org": "acme" }));
    ready(
        api,
        &mut [
            &mut tickets,
            &mut open,
            &mut closed,
            &mut wile,
            &mut daffy,
            &mut globex,
            &mut orders,
            &mut as_tenant,
        ],
        8,
    )
    .await;

    let id = create_ticket(api, "Anvil arrived early", "wile-e-coyote").await;
    for s in [&mut tickets, &mut open, &mut as_tenant] {
        let e = event(&next(s).await, "ticketEvents");
        assert_eq!(e["kind"], "CREATED");
        assert_eq!(e["ticket"]["ticketId"], id.as_str());
        assert_eq!(e["ticket"]["title"], "Anvil arrived early");
        // References resolve through the DataLoader, as they are now.
        assert_eq!(e["ticket"]["requester"]["username"], "wile-e-coyote");
        assert_eq!(e["ticket"]["requester"]["ticketCount"], 35);
        assert_eq!(e["previousStatus"], Value::Null);
        assert!(e["cursor"].as_str().is_some_and(|c| !c.is_empty()));
    }
    let e = event(&next(&mut wile).await, "userTicketEvents");
    assert_eq!(e["ticket"]["ticketId"], id.as_str());
    for s in [
        &mut tickets,
        &mut open,
        &mut closed,
        &mut wile,
        &mut daffy,
        &mut globex,
        &mut orders,
        &mut as_tenant,
    ] {
        quiet(s).await;
    }
}

async fn a_status_change_tells_the_queue_it_left(api: &Api) {
    let all = Access::Unrestricted;
    let id = create_ticket(api, "Rocket skates", "wile-e-coyote").await;
    let mut open = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "status": "OPEN" }),
    );
    let mut pending = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "status": "PENDING" }),
    );
    let mut solved = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "status": "SOLVED" }),
    );
    ready(api, &mut [&mut open, &mut pending, &mut solved], 3).await;
    let r = api
        .run_with(
            UPDATE_TICKET,
            json!({ "input": { "ticketId": id, "expectedVersion": 1, "status": "PENDING" } }),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    for s in [&mut open, &mut pending] {
        let e = event(&next(s).await, "ticketEvents");
        assert_eq!(e["kind"], "UPDATED");
        assert_eq!(e["ticket"]["status"], "PENDING");
        assert_eq!(e["previousStatus"], "OPEN");
    }
    quiet(&mut solved).await;
}

async fn orders_and_one_order(api: &Api) {
    let all = Access::Unrestricted;
    let placed = api
        .run_with(
            r#"mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { order { id orderId version } } }"#,
            json!({ "input": { "org": "acme", "buyer": "wile-e-coyote", "currency": "USD",
                "lines": [{ "sku": "A", "description": "Anvil", "quantity": 1, "unitPriceCents": "100" }] } }),
        )
        .await;
    let order = &placed["data"]["placeOrder"]["order"];
    let (gid, oid) = (
        order["id"].as_str().unwrap(),
        order["orderId"].as_str().unwrap(),
    );
    let mut every = sub(api, &all, ORDERS, json!({ "org": "acme" }));
    let mut this = sub(api, &all, ORDERS, json!({ "org": "acme", "id": gid }));
    let mut other = sub(
        api,
        &all,
        ORDERS,
        json!({ "org": "acme", "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV" }),
    );
    ready(api, &mut [&mut every, &mut this, &mut other], 3).await;
    let r = api
        .run_with(
            r#"mutation($input: UpdateOrderStatusInput!) { updateOrderStatus(input: $input) { order { status } } }"#,
            json!({ "input": { "orderId": gid, "status": "PAID", "expectedVersion": 1 } }),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    for s in [&mut every, &mut this] {
        let e = event(&next(s).await, "orderEvents");
        assert_eq!(e["kind"], "UPDATED");
        assert_eq!(e["order"]["orderId"], oid);
        assert_eq!(e["order"]["status"], "PAID");
        assert_eq!(e["previousStatus"], "PLACED");
    }
    quiet(&mut other).await;
}

async fn a_write_not_made_by_itemgraph_reaches_subscribers(api: &Api) {
    let mut tickets = sub(
        api,
        &Access::Unrestricted,
        TICKETS,
        json!({ "org": "acme" }),
    );
    ready(api, &mut [&mut tickets], 1).await;
    // A batch job writing a ticket in the table's design, straight through the store.
    let mut t = crate::common::demo::demo_data()
        .records
        .tickets
        .into_iter()
        .find(|t| t.org == "acme")
        .unwrap();
    t.title = "Written by a batch job".into();
    t.version += 1;
    api.store.put_item(Put::new(t.to_item())).await.unwrap();
    let e = event(&next(&mut tickets).await, "ticketEvents");
    assert_eq!(e["kind"], "UPDATED");
    assert_eq!(e["ticket"]["title"], "Written by a batch job");
    // An item of no entity (or of another design) is no event.
    let mut junk = itemgraph::store::Item::new();
    junk.insert(
        "PK".into(),
        itemgraph::store::AttributeValue::S("ORG#acme".into()),
    );
    junk.insert(
        "SK".into(),
        itemgraph::store::AttributeValue::S("JUNK#1".into()),
    );
    api.store.put_item(Put::new(junk)).await.unwrap();
    quiet(&mut tickets).await;
}

async fn resuming_replays_exactly_what_was_missed(api: &Api) {
    let all = Access::Unrestricted;
    let mut first = sub(api, &all, TICKETS, json!({ "org": "acme" }));
    ready(api, &mut [&mut first], 1).await;
    create_ticket(api, "seen", "wile-e-coyote").await;
    let seen = event(&next(&mut first).await, "ticketEvents");
    let cursor = seen["cursor"].as_str().unwrap().to_owned();
    drop(first);

    let mut missed = Vec::new();
    for n in 0..5 {
        missed.push(create_ticket(api, &format!("missed {n}"), "daffy-duck").await);
    }
    // Changes of other organizations and other entities in between are no events.
    api.run_with(
        r#"mutation { createOrganization(input: { slug: "looney", name: "Looney", plan: FREE }) { organization { slug } } }"#,
        Value::Null,
    )
    .await;

    let mut resumed = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "after": cursor }),
    );
    let mut got = Vec::new();
    for _ in 0..5 {
        let e = event(&next(&mut resumed).await, "ticketEvents");
        assert_eq!(e["kind"], "CREATED");
        got.push(e["ticket"]["ticketId"].as_str().unwrap().to_owned());
    }
    assert_eq!(got, missed, "exactly the missed ones, in order");
    // Then live, without a duplicate.
    let live = create_ticket(api, "live", "wile-e-coyote").await;
    let e = event(&next(&mut resumed).await, "ticketEvents");
    assert_eq!(e["ticket"]["ticketId"], live.as_str());
    quiet(&mut resumed).await;

    // The last event's cursor resumes after it: nothing to replay.
    let last = e["cursor"].as_str().unwrap().to_owned();
    let mut again = sub(api, &all, TICKETS, json!({ "org": "acme", "after": last }));
    quiet(&mut again).await;
}

async fn cursors_are_checked(api: &Api) {
    let all = Access::Unrestricted;
    let mut bad = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "after": "garbage" }),
    );
    assert_eq!(error_codes(&next(&mut bad).await), ["INVALID_CURSOR"]);
    // A position of a shard the stream does not have: long trimmed.
    let forged = cursors().sign(
        "events:acme",
        br#"[["shardId-00000000000000000000-gone","s1"]]"#,
    );
    let mut gone = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "acme", "after": forged }),
    );
    assert_eq!(error_codes(&next(&mut gone).await), ["EVENTS_EXPIRED"]);
    // A cursor of acme's events does not resume globex's.
    let acme = cursors().sign("events:acme", b"[]");
    let mut other = sub(
        api,
        &all,
        TICKETS,
        json!({ "org": "globex", "after": acme }),
    );
    assert_eq!(error_codes(&next(&mut other).await), ["INVALID_CURSOR"]);
}

async fn tenants_see_their_own_organization_only(api: &Api) {
    let globex = tenant("globex", Role::Admin);
    let mut theirs = sub(api, &globex, TICKETS, json!({ "org": "acme" }));
    let r = next(&mut theirs).await;
    assert_eq!(error_codes(&r), ["FORBIDDEN"], "{r:#}");
    let mut own = sub(api, &globex, TICKETS, json!({ "org": "globex" }));
    ready(api, &mut [&mut own], 1).await;
    create_ticket(api, "acme only", "wile-e-coyote").await;
    quiet(&mut own).await;
}

async fn limits_are_enforced_with_codes(api: &Api) {
    let all = Access::Unrestricted;
    let bad_org = next(&mut sub(api, &all, TICKETS, json!({ "org": "Not A Slug" }))).await;
    assert_eq!(error_codes(&bad_org), ["BAD_USER_INPUT"]);
    // The event selection is costed like any query's.
    let deep = r#"subscription { ticketEvents(org: "acme") { ticket { organization { users(first: 100) { nodes { tickets(first: 100) { nodes { title } } } } } } } }"#;
    let r = next(&mut sub(api, &all, deep, Value::Null)).await;
    assert_eq!(error_codes(&r), ["QUERY_TOO_COMPLEX"], "{r:#}");
}

/// With the trace, each event carries the store calls resolving it made (its requester,
/// through the DataLoader: one read) and where in the stream it was read; a tenant's
/// trace names the calls only, as a query's does.
async fn each_event_carries_its_own_trace(api: &Api) {
    let query = r#"subscription { ticketEvents(org: "acme") { kind ticket { title requester { name } } } }"#;
    let mut all =
        Box::new(api.subscribe_traced(&Access::Unrestricted, None, query, Value::Null, true))
            as Events;
    let acme = tenant("acme", Role::Admin);
    let mut own = Box::new(api.subscribe_traced(&acme, None, query, Value::Null, true)) as Events;
    ready(api, &mut [&mut all, &mut own], 2).await;
    for title in ["traced one", "traced two"] {
        create_ticket(api, title, "wile-e-coyote").await;
        for (who, events) in [("unrestricted", &mut all), ("tenant", &mut own)] {
            let r = next(events).await;
            assert_eq!(event(&r, "ticketEvents")["ticket"]["title"], title);
            let trace = &r["extensions"]["dynamodb"];
            assert_eq!(trace["requestCount"], 1, "{who}: {r:#}");
            assert_eq!(trace["requests"][0]["operation"], "GetItem", "{who}: {r:#}");
            let stream = &trace["stream"];
            if who == "tenant" {
                assert!(stream.is_null(), "no stream position for a tenant: {r:#}");
                assert!(trace["requests"][0].get("itemCount").is_none());
            } else {
                assert!(
                    stream["shard"].is_string() && stream["sequence"].is_string(),
                    "{r:#}"
                );
            }
        }
    }
    // Without it, no extension.
    let mut plain = sub(api, &Access::Unrestricted, query, Value::Null);
    ready(api, &mut [&mut plain], 3).await;
    create_ticket(api, "untraced", "wile-e-coyote").await;
    assert!(next(&mut plain).await.get("extensions").is_none());
}

on_every_engine!(threads = 2:
    each_event_carries_its_own_trace,
    a_change_reaches_each_matching_subscription_exactly_once,
    a_status_change_tells_the_queue_it_left,
    orders_and_one_order,
    a_write_not_made_by_itemgraph_reaches_subscribers,
    resuming_replays_exactly_what_was_missed,
    cursors_are_checked,
    tenants_see_their_own_organization_only,
    limits_are_enforced_with_codes,
);

// --- Limits and failures of one process (embedded engine) ---------------------------------

#[tokio::test]
async fn a_position_past_the_log_is_expired() {
    use itemgraph::store::embedded::{ChangeLog, EmbeddedStore};
    let store = EmbeddedStore::in_memory("itemgraph", itemgraph::chart::builtin().table_schema())
        .unwrap()
        .with_change_log(ChangeLog {
            capacity: 3,
            ..ChangeLog::DEFAULT
        });
    store.create_table().await.unwrap();
    crate::common::demo::seed_demo(&store).await.unwrap();
    let api = Api::over(std::sync::Arc::new(store));
    let mut first = sub(
        &api,
        &Access::Unrestricted,
        TICKETS,
        json!({ "org": "acme" }),
    );
    ready(&api, &mut [&mut first], 1).await;
    create_ticket(&api, "one", "wile-e-coyote").await;
    let cursor = event(&next(&mut first).await, "ticketEvents")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    for n in 0..3 {
        create_ticket(&api, &format!("more {n}"), "wile-e-coyote").await;
    }
    let mut late = sub(
        &api,
        &Access::Unrestricted,
        TICKETS,
        json!({ "org": "acme", "after": cursor }),
    );
    let r = next(&mut late).await;
    assert_eq!(error_codes(&r), ["EVENTS_EXPIRED"], "{r:#}");
}

#[tokio::test]
async fn subscriptions_past_the_process_limit_are_refused() {
    let api = Api::embedded().await.with_live(LiveOptions {
        max_subscriptions: 2,
        ..common::changes::test_options()
    });
    let all = Access::Unrestricted;
    let mut a = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    let mut b = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    ready(&api, &mut [&mut a, &mut b], 2).await;
    let r = next(&mut sub(&api, &all, TICKETS, json!({ "org": "acme" }))).await;
    assert_eq!(error_codes(&r), ["TOO_MANY_SUBSCRIPTIONS"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["retryable"], true);
    drop(a);
    let mut c = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    quiet(&mut c).await;
}

/// A resume holds one of its organization's replay slots until it has caught up: past
/// `max_replays_per_org`, a resume is refused with the retryable `TOO_MANY_REPLAYS`, and
/// once the first caught up, one goes through again.
#[tokio::test]
async fn resumes_past_the_organizations_replay_limit_are_refused_until_one_caught_up() {
    let api = Api::embedded().await.with_live(LiveOptions {
        max_replays_per_org: 1,
        ..common::changes::test_options()
    });
    let all = Access::Unrestricted;
    let mut first = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    ready(&api, &mut [&mut first], 1).await;
    for n in 0..3 {
        create_ticket(&api, &format!("replayed {n}"), "wile-e-coyote").await;
    }
    let cursor = event(&next(&mut first).await, "ticketEvents")["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // The hub has read all three, so a resume replays the two after the cursor.
    next(&mut first).await;
    next(&mut first).await;
    let resume = json!({ "org": "acme", "after": cursor });
    // Mid-replay: one of the two changes since the cursor read, the other not yet.
    let mut catching_up = sub(&api, &all, TICKETS, resume.clone());
    let r = next(&mut catching_up).await;
    assert_eq!(
        event(&r, "ticketEvents")["ticket"]["title"],
        "replayed 1",
        "{r:#}"
    );
    let r = next(&mut sub(&api, &all, TICKETS, resume.clone())).await;
    assert_eq!(error_codes(&r), ["TOO_MANY_REPLAYS"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["retryable"], true);
    let r = next(&mut catching_up).await;
    assert_eq!(
        event(&r, "ticketEvents")["ticket"]["title"],
        "replayed 2",
        "{r:#}"
    );
    // Caught up (its slot is given back once it waits on live changes).
    quiet(&mut catching_up).await;
    let mut again = sub(&api, &all, TICKETS, resume);
    let r = next(&mut again).await;
    assert_eq!(
        event(&r, "ticketEvents")["ticket"]["title"],
        "replayed 1",
        "{r:#}"
    );
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_is_ended_not_waited_for() {
    let api = Api::embedded().await.with_live(LiveOptions {
        buffer: 16,
        ..common::changes::test_options()
    });
    let all = Access::Unrestricted;
    let mut slow = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    let mut fast = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    ready(&api, &mut [&mut slow, &mut fast], 2).await;
    let mut ids = Vec::new();
    // Each ticket is three changes (the ticket, its organization, its requester): ten
    // put the slow one 30 behind, over its 16; the fast one keeps up.
    for n in 0..10 {
        ids.push(create_ticket(&api, &format!("burst {n}"), "wile-e-coyote").await);
        let e = event(&next(&mut fast).await, "ticketEvents");
        assert_eq!(e["ticket"]["ticketId"], ids[n].as_str());
    }
    let mut codes = Vec::new();
    while let Ok(Some(r)) = tokio::time::timeout(Duration::from_secs(2), slow.next()).await {
        codes.extend(error_codes(&r));
    }
    assert_eq!(codes, ["SUBSCRIBER_TOO_SLOW"]);
}

#[tokio::test]
async fn an_expired_token_ends_the_subscription() {
    let api = Api::embedded().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut s: Events = Box::new(api.subscribe(
        &tenant("acme", Role::Member),
        Some(now + 2),
        TICKETS,
        json!({ "org": "acme" }),
    ));
    let r = next(&mut s).await;
    assert_eq!(error_codes(&r), ["UNAUTHENTICATED"], "{r:#}");
    assert!(
        tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .unwrap()
            .is_none(),
        "and the subscription ends"
    );
}

#[tokio::test]
async fn events_follow_the_log_into_child_shards_live_and_on_resume() {
    use itemgraph::store::embedded::{ChangeLog, EmbeddedStore};
    // Two records a shard: each ticket (three changes) closes one shard and opens another.
    let store = EmbeddedStore::in_memory("itemgraph", itemgraph::chart::builtin().table_schema())
        .unwrap()
        .with_change_log(ChangeLog {
            shard_span: 2,
            ..ChangeLog::DEFAULT
        });
    store.create_table().await.unwrap();
    crate::common::demo::seed_demo(&store).await.unwrap();
    let api = Api::over(std::sync::Arc::new(store)).with_live(common::changes::test_options());
    let all = Access::Unrestricted;
    let mut live = sub(&api, &all, TICKETS, json!({ "org": "acme" }));
    ready(&api, &mut [&mut live], 1).await;
    let mut ids = Vec::new();
    let mut cursors = Vec::new();
    for n in 0..4 {
        ids.push(create_ticket(&api, &format!("across shards {n}"), "wile-e-coyote").await);
        let e = event(&next(&mut live).await, "ticketEvents");
        assert_eq!(e["ticket"]["ticketId"], ids[n].as_str());
        cursors.push(e["cursor"].as_str().unwrap().to_owned());
    }
    quiet(&mut live).await;
    // From the first event's cursor: the three after it, across the shards they span.
    let mut resumed = sub(
        &api,
        &all,
        TICKETS,
        json!({ "org": "acme", "after": cursors[0] }),
    );
    for id in &ids[1..] {
        let e = event(&next(&mut resumed).await, "ticketEvents");
        assert_eq!(e["ticket"]["ticketId"], id.as_str());
    }
    quiet(&mut resumed).await;
}
