//! The API over the embedded engine with DynamoDB's failure modes on: GSI lag 1 s,
//! conflicts 5 %, throttling 5 %, lost replies 2 % (`store::faults`). Clients retry what
//! the server marks `retryable` and nothing else, as a client should. Whatever the draws:
//! no `NOT_FOUND` for what exists, no `INTERNAL`; every mutation that answered success was
//! applied exactly once and every failure applied nothing (the counters and versions add
//! up), and `itemgraph check` finds the table clean.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::graphql::{error_codes, Api};
use futures::future::join_all;
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::faults::Faults;
use itemgraph::store::Store;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// The faults of the issue's acceptance run.
fn faults(seed: u64) -> Faults {
    Faults {
        gsi_lag: Duration::from_secs(1),
        throttle: 0.05,
        conflict: 0.05,
        lost_reply: 0.02,
        seed,
        ..Faults::default()
    }
}

/// The demo data, written without faults, then served with them. The directory lives as
/// long as the API.
async fn faulty_demo(seed: u64) -> (Arc<Api>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faulty.redb");
    {
        let plain = EmbeddedStore::open(
            &path,
            "itemgraph",
            itemgraph::chart::builtin().table_schema(),
        )
        .unwrap();
        assert!(matches!(
            crate::common::demo::seed_if_absent(&plain, false)
                .await
                .unwrap(),
            crate::common::demo::Seeded::Now(_)
        ));
    }
    let store = EmbeddedStore::open_with_faults(
        &path,
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
        faults(seed),
    )
    .unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    (Arc::new(Api::over(store)), dir)
}

/// What a client ends with after sending one request again while the answer is a
/// retryable `THROTTLED` or `CONTENTION` (nothing written). `UNAVAILABLE` is not sent
/// again blindly: the write may have happened; it is returned for the caller to count.
async fn send(api: &Api, query: &str, vars: &Value) -> Value {
    for _ in 0..30 {
        let response = api.run_with(query, vars.clone()).await;
        let codes = error_codes(&response);
        let again = !codes.is_empty()
            && codes.iter().all(|c| c == "THROTTLED" || c == "CONTENTION")
            && response["errors"]
                .as_array()
                .is_some_and(|es| es.iter().all(|e| e["extensions"]["retryable"] == true));
        if !again {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("still throttled or contended after 30 tries: {query}");
}

/// A read's `data`, sent again while throttled; any other error fails the test.
async fn read(api: &Api, query: &str, vars: Value) -> Value {
    let response = send(api, query, &vars).await;
    assert!(response.get("errors").is_none(), "{query}: {response:#}");
    response["data"].clone()
}

/// No answer may be `INTERNAL`, nor `NOT_FOUND` (everything asked for exists).
fn assert_no_bug(what: &str, response: &Value) {
    let codes = error_codes(response);
    assert!(
        !codes.iter().any(|c| c == "INTERNAL" || c == "NOT_FOUND"),
        "{what}: {response:#}"
    );
}

async fn assert_clean(api: &Api) {
    // The check reads the table, not the indexes: no need to wait for the lag.
    let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
    let lines: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert!(report.is_clean(), "{report}:\n{}", lines.join("\n"));
}

async fn counts(api: &Api) -> Value {
    read(
        api,
        r#"{ organization(slug: "acme") { orderCount ticketCount userCount }
             user(org: "acme", username: "wile-e-coyote") { ticketCount } }"#,
        Value::Null,
    )
    .await
}

const PLACE_ORDER: &str = "mutation($input: PlaceOrderInput!) {
  placeOrder(input: $input) { replayed order { id orderId status version } }
}";

const UPDATE_ORDER_STATUS: &str = "mutation($input: UpdateOrderStatusInput!) {
  updateOrderStatus(input: $input) { order { status version } }
}";

/// 200 times: place an order, then at once move it to PAID, half of them by its plain
/// id (found through GSI1, a second behind) and half by its global id. Every order is
/// placed exactly once and moved exactly once; none is ever `NOT_FOUND`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn orders_placed_then_moved_at_once_are_always_found() {
    let (api, _dir) = faulty_demo(7).await;
    let before = counts(&api).await;
    let one = |i: usize| {
        let api = api.clone();
        async move {
            let token = format!("order-{i:03}");
            let vars = json!({ "input": {
                "org": "acme", "buyer": "wile-e-coyote", "currency": "USD", "clientToken": token,
                "lines": [{ "sku": "ANVIL", "description": "Anvil", "quantity": 1, "unitPriceCents": 100 }]
            }});
            let mut placed = send(&api, PLACE_ORDER, &vars).await;
            // A lost answer: the same token again returns the order it placed.
            for _ in 0..5 {
                if error_codes(&placed) != ["UNAVAILABLE"] {
                    break;
                }
                placed = send(&api, PLACE_ORDER, &vars).await;
            }
            assert_no_bug("placeOrder", &placed);
            assert!(placed.get("errors").is_none(), "{placed:#}");
            let order = &placed["data"]["placeOrder"]["order"];
            let id = if i % 2 == 0 {
                &order["orderId"]
            } else {
                &order["id"]
            };
            let vars =
                json!({ "input": { "orderId": id, "status": "PAID", "expectedVersion": 1 } });
            let moved = send(&api, UPDATE_ORDER_STATUS, &vars).await;
            assert_no_bug("updateOrderStatus", &moved);
            (order["orderId"].as_str().unwrap().to_owned(), moved)
        }
    };
    let mut moved = Vec::new();
    for batch in (0..200).collect::<Vec<_>>().chunks(25) {
        moved.extend(join_all(batch.iter().map(|i| one(*i))).await);
    }
    let mut unknown = 0;
    for (id, response) in &moved {
        if error_codes(response) == ["UNAVAILABLE"] {
            unknown += 1;
            continue;
        }
        assert!(response.get("errors").is_none(), "order {id}: {response:#}");
        assert_eq!(
            response["data"]["updateOrderStatus"]["order"],
            json!({ "status": "PAID", "version": 2 })
        );
    }
    // Each order as stored: PAID at version 2, moved once (an answer lost on every
    // attempt leaves the move unknown to the client, never applied twice). `order(id)`
    // reads GSI1, eventually consistent: once the lag has passed.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (id, _) in &moved {
        let q = format!(r#"{{ order(id: "{id}") {{ status version }} }}"#);
        let stored = read(&api, &q, Value::Null).await;
        let order = &stored["order"];
        assert!(
            *order == json!({ "status": "PAID", "version": 2 })
                || (unknown > 0 && *order == json!({ "status": "PLACED", "version": 1 })),
            "order {id}: {order}"
        );
    }
    let after = counts(&api).await;
    let count = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap();
    assert_eq!(
        count(&after, "/organization/orderCount"),
        count(&before, "/organization/orderCount") + 200
    );
    assert_clean(&api).await;
}

const TICKET: &str = "query($id: ID!) { ticket(id: $id) { version status title } }";
const UPDATE_TICKET: &str = "mutation($input: UpdateTicketInput!) {
  updateTicket(input: $input) { ticket { version status title } }
}";

/// 50 writers on one ticket at once, each reading its version and writing a change of
/// its own (half change the title only: one conditional PutItem; half the status too: a
/// transaction with the status counters) until it is written. Every writer's change is
/// written exactly once: the version moved by exactly the successes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_writers_on_one_ticket_each_apply_exactly_once() {
    let (api, _dir) = faulty_demo(11).await;
    let ticket = read(
        &api,
        r#"{ user(org: "acme", username: "wile-e-coyote") { tickets(first: 1) { nodes { ticketId } } } }"#,
        Value::Null,
    )
    .await["user"]["tickets"]["nodes"][0]["ticketId"]
        .as_str()
        .unwrap()
        .to_owned();
    let start = read(&api, TICKET, json!({ "id": ticket })).await["ticket"]["version"]
        .as_u64()
        .unwrap();
    let statuses = ["OPEN", "PENDING", "SOLVED", "CLOSED"];
    let writer = |i: usize| {
        let (api, ticket) = (api.clone(), ticket.clone());
        async move {
            let mut outcome = BTreeMap::<String, usize>::new();
            for _ in 0..500 {
                let current = read(&api, TICKET, json!({ "id": ticket })).await;
                let version = current["ticket"]["version"].clone();
                let mut input = json!({
                    "ticketId": ticket, "expectedVersion": version, "title": format!("Writer {i}")
                });
                if i % 2 == 1 {
                    let now = current["ticket"]["status"].as_str().unwrap();
                    let next = statuses.iter().find(|s| **s != now).unwrap();
                    input["status"] = json!(next);
                }
                let response = send(&api, UPDATE_TICKET, &json!({ "input": input })).await;
                assert_no_bug("updateTicket", &response);
                let code = error_codes(&response).join(",");
                *outcome
                    .entry(if code.is_empty() {
                        "ok".into()
                    } else {
                        code.clone()
                    })
                    .or_default() += 1;
                match code.as_str() {
                    "" | "UNAVAILABLE" => return outcome,
                    "VERSION_MISMATCH" => continue,
                    other => panic!("writer {i}: {other}: {response:#}"),
                }
            }
            panic!("writer {i} never wrote: {outcome:?}");
        }
    };
    let outcomes = join_all((0..50).map(writer)).await;
    let ok: usize = outcomes
        .iter()
        .map(|o| o.get("ok").copied().unwrap_or(0))
        .sum();
    let unknown: usize = outcomes
        .iter()
        .map(|o| o.get("UNAVAILABLE").copied().unwrap_or(0))
        .sum();
    assert_eq!(ok + unknown, 50);
    let end = read(&api, TICKET, json!({ "id": ticket })).await["ticket"]["version"]
        .as_u64()
        .unwrap();
    let applied = (end - start) as usize;
    assert!(
        applied >= ok && applied <= ok + unknown,
        "{ok} successes ({unknown} unknown) but the version moved by {applied}"
    );
    assert_clean(&api).await;
}

const CREATE_USER: &str =
    "mutation($input: CreateUserInput!) { createUser(input: $input) { user { username } } }";
const DELETE_USER: &str =
    "mutation($input: DeleteUserInput!) { deleteUser(input: $input) { deletedUserId } }";
const CREATE_TICKET: &str =
    "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }";

/// Seeded random mutations, eight clients at once: every success is counted exactly
/// once by the organization, every failure by nothing; the table stays consistent
/// (`check` holds the buyer's and requester's counters to the items too).
/// `ITEMGRAPH_FAULT_OPS` lengthens the run (240 by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_mutations_under_faults_count_exactly_their_successes() {
    let (api, _dir) = faulty_demo(23).await;
    let ops: usize = std::env::var("ITEMGRAPH_FAULT_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240);
    let before = counts(&api).await;
    let client = |c: usize| {
        let api = api.clone();
        async move {
            let mut rng = ChaCha8Rng::seed_from_u64(c as u64);
            // Successes (created users, deleted users, tickets, orders), then the same
            // kinds answered UNAVAILABLE (applied or not: the caller cannot know).
            let mut tally = [0i64; 8];
            let mut mine: Vec<String> = Vec::new();
            for n in 0..ops / 8 {
                let (query, vars, slot) = match rng.random_range(0..4) {
                    0 => {
                        let name = format!("c{c}-u{n}");
                        mine.push(name.clone());
                        (
                            CREATE_USER,
                            json!({ "input": { "org": "acme", "username": name,
                            "email": format!("{name}@acme.example"), "name": "R", "role": "MEMBER" } }),
                            0,
                        )
                    }
                    1 if !mine.is_empty() => {
                        let name = mine.swap_remove(rng.random_range(0..mine.len()));
                        (
                            DELETE_USER,
                            json!({ "input": { "org": "acme", "username": name } }),
                            1,
                        )
                    }
                    2 => (
                        CREATE_TICKET,
                        json!({ "input": { "org": "acme", "requester": "wile-e-coyote",
                            "title": format!("c{c} t{n}"), "body": "b", "priority": "LOW" } }),
                        2,
                    ),
                    _ => (
                        PLACE_ORDER,
                        json!({ "input": { "org": "acme", "buyer": "wile-e-coyote",
                            "currency": "USD", "clientToken": format!("c{c}-o{n}"),
                            "lines": [{ "sku": "S", "description": "D", "quantity": 2, "unitPriceCents": 5 }] } }),
                        3,
                    ),
                };
                let response = send(&api, query, &vars).await;
                let codes = error_codes(&response);
                assert!(
                    !codes.iter().any(|c| c == "INTERNAL"),
                    "{query}: {response:#}"
                );
                if codes.is_empty() {
                    tally[slot] += 1;
                } else if codes == ["UNAVAILABLE"] {
                    tally[4 + slot] += 1;
                } else {
                    // A user deleted before was never created, or is gone already.
                    assert!(slot == 1 && codes == ["NOT_FOUND"], "{query}: {response:#}");
                }
            }
            tally
        }
    };
    let tallies = join_all((0..8).map(client)).await;
    let sum = |i: usize| tallies.iter().map(|t| t[i]).sum::<i64>();
    let after = counts(&api).await;
    let delta = |p: &str| {
        after.pointer(p).and_then(Value::as_i64).unwrap()
            - before.pointer(p).and_then(Value::as_i64).unwrap()
    };
    // Every success counted once; an unknown outcome may have moved its count, in its
    // direction, once.
    let users = delta("/organization/userCount");
    let (low, high) = (sum(0) - sum(1) - sum(5), sum(0) - sum(1) + sum(4));
    assert!(
        (low..=high).contains(&users),
        "users: {} created, {} deleted, {} and {} unknown, count moved {users}",
        sum(0),
        sum(1),
        sum(4),
        sum(5)
    );
    let tickets = delta("/organization/ticketCount");
    assert!(
        (sum(2)..=sum(2) + sum(6)).contains(&tickets),
        "tickets: {tickets}"
    );
    let orders = delta("/organization/orderCount");
    assert!(
        (sum(3)..=sum(3) + sum(7)).contains(&orders),
        "orders: {orders}"
    );
    assert_clean(&api).await;
}

/// 50 users with one email at once: exactly one is created, the others are `CONFLICT`
/// on `email` (a retried `THROTTLED` or `CONTENTION` ends the same way), and the
/// organization counts one user more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_email_one_user_under_faults() {
    let (api, _dir) = faulty_demo(31).await;
    let before = counts(&api).await["organization"]["userCount"]
        .as_u64()
        .unwrap();
    let racer = |i: usize| {
        let api = api.clone();
        async move {
            let vars = json!({ "input": {
                "org": "acme", "username": format!("racer-{i:02}"),
                "email": "Racer@Acme.Example", "name": "Racer", "role": "MEMBER"
            }});
            send(&api, CREATE_USER, &vars).await
        }
    };
    let responses = join_all((0..50).map(racer)).await;
    let mut outcomes = BTreeMap::<String, usize>::new();
    for r in &responses {
        assert_no_bug("createUser", r);
        let code = error_codes(r).join(",");
        if code == "CONFLICT" {
            assert_eq!(r["errors"][0]["extensions"]["field"], "email", "{r:#}");
        }
        *outcomes.entry(code).or_default() += 1;
    }
    let ok = outcomes.get("").copied().unwrap_or(0);
    let unknown = outcomes.get("UNAVAILABLE").copied().unwrap_or(0);
    assert!(ok + unknown >= 1 && ok <= 1, "{outcomes:?}");
    let after = counts(&api).await["organization"]["userCount"]
        .as_u64()
        .unwrap();
    assert_eq!(after, before + 1, "{outcomes:?}");
    assert_clean(&api).await;
}
