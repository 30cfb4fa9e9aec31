//! Mutations racing each other, each its own GraphQL request through `graphql::execute`,
//! spawned together on a multi-threaded runtime, on every engine (`embedded::…`,
//! `dynamodb::…`): uniqueness holds, counters count every write exactly once, optimistic
//! versions let exactly one writer win, and `itemgraph check` finds the table consistent
//! afterwards.
//!
//! The outcome is asserted, never the interleaving: whichever request wins, exactly one
//! does.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::common::demo::demo_data;
use crate::common::records::{Ticket, TicketStatus};
use common::graphql::{error_codes, Api};
use futures::future::join_all;
use itemgraph::chart::kinds::Slug;
use serde_json::{json, Value};

/// Runs `n` requests at once, request `i` with `variables(i)`; the responses in order.
async fn race(
    api: &Arc<Api>,
    n: usize,
    query: &'static str,
    variables: impl Fn(usize) -> Value,
) -> Vec<Value> {
    let tasks = (0..n).map(|i| {
        let api = api.clone();
        let vars = variables(i);
        tokio::spawn(async move { api.run_with(query, vars).await })
    });
    join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("a request task panicked"))
        .collect()
}

/// `itemgraph check` finds the table consistent.
async fn assert_consistent(api: &Api) {
    let report = itemgraph::check::check(api.store.as_ref())
        .await
        .expect("the check reads the table");
    let lines: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert!(report.is_clean(), "{report}:\n{}", lines.join("\n"));
}

fn ok(response: &Value) -> bool {
    response.get("errors").is_none()
}

/// Summary of what came back, for failure messages: `(code, field) × count`.
fn outcomes(responses: &[Value]) -> Vec<(String, String)> {
    responses
        .iter()
        .map(|r| {
            let code = error_codes(r).join(",");
            let field = r
                .pointer("/errors/0/extensions/field")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            (if code.is_empty() { "ok".into() } else { code }, field)
        })
        .collect()
}

const CREATE_USER: &str = "mutation($input: CreateUserInput!) {
  createUser(input: $input) { user { username email } }
}";

/// 50 users with one email, at once: exactly one is created; the 49 others are
/// `CONFLICT` on `email`, and the organization counts one user more.
async fn one_email_one_user(api: Arc<Api>) {
    let responses = race(&api, 50, CREATE_USER, |i| {
        json!({ "input": {
            "org": "acme", "username": format!("racer-{i:02}"),
            "email": "Racer@Acme.Example", "name": format!("Racer {i}"), "role": "MEMBER"
        }})
    })
    .await;
    let winners = responses.iter().filter(|r| ok(r)).count();
    let conflicts = responses
        .iter()
        .filter(|r| {
            error_codes(r) == ["CONFLICT"]
                && r.pointer("/errors/0/extensions/field") == Some(&json!("email"))
        })
        .count();
    assert_eq!(
        (winners, conflicts),
        (1, 49),
        "outcomes: {:?}",
        outcomes(&responses)
    );
    let read = api
        .data(
            r#"{ organization(slug: "acme") { userCount } }"#,
            Value::Null,
        )
        .await;
    assert_eq!(read["organization"]["userCount"], 28 + 1);
    assert_consistent(&api).await;
}

const CREATE_TICKET: &str = "mutation($input: CreateTicketInput!) {
  createTicket(input: $input) { ticket { ticketId } }
}";

const REQUESTER: &str = "wile-e-coyote";

/// The ids of every ticket of the requester, walking `user.tickets` page by page.
async fn walk_tickets(api: &Api) -> Vec<String> {
    let q = "query($after: String) {
  user(org: \"acme\", username: \"wile-e-coyote\") {
    tickets(first: 100, after: $after) {
      nodes { ticketId }
      pageInfo { hasNextPage endCursor }
    }
  }
}";
    let mut ids = Vec::new();
    let mut after = Value::Null;
    loop {
        let data = api.data(q, json!({ "after": after })).await;
        let page = &data["user"]["tickets"];
        ids.extend(
            page["nodes"]
                .as_array()
                .expect("nodes")
                .iter()
                .map(|n| n["ticketId"].as_str().expect("ticketId").to_owned()),
        );
        if page["pageInfo"]["hasNextPage"] != json!(true) {
            return ids;
        }
        after = page["pageInfo"]["endCursor"].clone();
    }
}

/// 100 tickets for one requester, at once: all are created, and every counter moves by
/// exactly 100 (none lost to a race); paging the requester's tickets finds exactly the
/// 100 new ones besides the old.
async fn hundred_tickets_all_counted(api: Arc<Api>) {
    let before: Vec<Ticket> = demo_data()
        .records
        .tickets
        .into_iter()
        .filter(|t| t.org == Slug::parse("acme").unwrap() && t.requester == REQUESTER)
        .collect();
    let responses = race(&api, 100, CREATE_TICKET, |i| {
        json!({ "input": {
            "org": "acme", "requester": REQUESTER, "title": format!("Concurrent ticket {i}"),
            "body": "Raced.", "priority": "NORMAL"
        }})
    })
    .await;
    let failed: Vec<_> = outcomes(&responses)
        .into_iter()
        .filter(|(code, _)| code != "ok")
        .collect();
    assert!(failed.is_empty(), "every create succeeds: {failed:?}");
    let created: BTreeSet<String> = responses
        .iter()
        .map(|r| {
            r.pointer("/data/createTicket/ticket/ticketId")
                .and_then(Value::as_str)
                .expect("ticketId")
                .to_owned()
        })
        .collect();
    assert_eq!(created.len(), 100, "100 distinct ids");

    let read = api
        .data(
            r#"{
  user(org: "acme", username: "wile-e-coyote") { ticketCount }
  organization(slug: "acme") { ticketCount tickets(status: OPEN, first: 0) { totalCount } }
}"#,
            Value::Null,
        )
        .await;
    assert_eq!(read["user"]["ticketCount"], before.len() + 100);
    assert_eq!(read["organization"]["ticketCount"], 80 + 100);
    assert_eq!(read["organization"]["tickets"]["totalCount"], 24 + 100);

    let walked = walk_tickets(&api).await;
    assert_eq!(
        walked.len(),
        before.len() + 100,
        "no ticket twice, none missing"
    );
    let old: BTreeSet<String> = before.iter().map(|t| t.ticket_id.to_string()).collect();
    let new: BTreeSet<String> = walked.into_iter().filter(|id| !old.contains(id)).collect();
    assert_eq!(new, created, "the walk finds exactly the new tickets");
    assert_consistent(&api).await;
}

const UPDATE_TICKET: &str = "mutation($input: UpdateTicketInput!) {
  updateTicket(input: $input) { ticket { version title status } }
}";

/// How many writers race for one ticket version.
const WRITERS: usize = 20;

/// 20 changes based on the same version, at once: exactly one is written; every other is
/// `VERSION_MISMATCH` naming the version the winner wrote. The ticket holds the winner's
/// change, and the status counters moved once.
async fn one_version_one_winner(api: Arc<Api>) {
    let t = demo_data()
        .records
        .tickets
        .into_iter()
        .filter(|t| t.org == Slug::parse("acme").unwrap() && t.status == TicketStatus::Open)
        .max_by_key(|t| t.ticket_id)
        .expect("an open acme ticket");
    let statuses = ["PENDING", "SOLVED", "CLOSED"];
    let responses = race(&api, WRITERS, UPDATE_TICKET, |i| {
        json!({ "input": {
            "ticketId": t.ticket_id.to_string(), "expectedVersion": t.version,
            "title": format!("Writer {i}"), "status": statuses[i % statuses.len()]
        }})
    })
    .await;
    let winners: Vec<&Value> = responses.iter().filter(|r| ok(r)).collect();
    assert_eq!(winners.len(), 1, "outcomes: {:?}", outcomes(&responses));
    let losers: Vec<&Value> = responses.iter().filter(|r| !ok(r)).collect();
    for r in &losers {
        assert_eq!(error_codes(r), ["VERSION_MISMATCH"], "{r:#}");
        assert_eq!(
            r.pointer("/errors/0/extensions/currentVersion"),
            Some(&json!(t.version + 1)),
            "{r:#}"
        );
    }
    let won = &winners[0]["data"]["updateTicket"]["ticket"];
    assert_eq!(won["version"], t.version + 1);

    let q = format!(
        r#"{{ ticket(id: "{}") {{ version title status }} organization(slug: "acme") {{ open: tickets(status: OPEN, first: 0) {{ totalCount }} }} }}"#,
        t.ticket_id
    );
    let read = api.data(&q, Value::Null).await;
    assert_eq!(&read["ticket"], won, "the ticket holds the winner's change");
    assert_eq!(read["organization"]["open"]["totalCount"], 24 - 1);
    assert_consistent(&api).await;
}

on_every_engine!(shared api, threads = 4:
    one_email_one_user,
    hundred_tickets_all_counted,
    one_version_one_winner,
);

// --- The per-item write limit of the fault model (embedded engine) ----------------------

/// `--faults item-wcu=10`: one item takes 10 write units a second. Every ticket created
/// bumps its requester's `ticketCount` (twice the units in a transaction), so one
/// requester takes about five creates a second: sixteen writers raising tickets for one
/// requester exceed it. Fewer creates go through than the limit allows and the rest are
/// refused with a retryable code, as on AWS past an item's limit; one writer in another
/// organization at a third of the limit, at the same time, meets no refusal. (An
/// organization's own counters are sharded, so its limit is far above one item's: see
/// `one_busy_organization_is_counted_exactly_past_one_items_limit`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_busy_requester_meets_the_item_limit_and_another_organization_does_not() {
    use itemgraph::store::embedded::EmbeddedStore;
    use itemgraph::store::faults::Faults;
    use itemgraph::store::Store;
    use std::time::{Duration, Instant};

    let faults: Faults = "item-wcu=10".parse().unwrap();
    let store = EmbeddedStore::in_memory_with_faults(
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
        faults,
    )
    .unwrap();
    assert!(store.create_table().await.unwrap());
    crate::common::demo::seed_demo(&store).await.unwrap();
    // The seeding's own writes used the items' units: a second for them to come back.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let api = Arc::new(Api::over(Arc::new(store)));
    const CREATE: &str = "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }";
    let create = |api: Arc<Api>,
                  org: &'static str,
                  requester: &'static str,
                  n: usize,
                  pause: Duration| {
        tokio::spawn(async move {
            let mut codes = Vec::new();
            let mut made = 0;
            for i in 0..n {
                let r = api
                    .run_with(
                        CREATE,
                        json!({ "input": { "org": org, "requester": requester, "title": format!("busy {i}"), "body": "Load.", "priority": "LOW" } }),
                    )
                    .await;
                match r.get("errors") {
                    None => made += 1,
                    Some(_) => codes.extend(error_codes(&r)),
                }
                tokio::time::sleep(pause).await;
            }
            (made, codes)
        })
    };
    let started = Instant::now();
    let busy: Vec<_> = (0..16)
        .map(|_| create(api.clone(), "acme", "wile-e-coyote", 8, Duration::ZERO))
        .collect();
    let quiet = create(
        api.clone(),
        "globex",
        "homer-simpson",
        6,
        Duration::from_millis(600),
    );
    let (mut made, mut codes) = (0, Vec::new());
    for task in busy {
        let (m, c) = task.await.unwrap();
        made += m;
        codes.extend(c);
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Five creates a second, and one second's burst. (Five, not more: 128 creates in a
    // debug build beside other tests take about 12 s, so a limit of ten a second is not
    // always met.)
    let allowed = 5.0 * elapsed + 5.0 + 1.0;
    assert!(
        (made as f64) <= allowed,
        "{made} creates in {elapsed:.1} s, the limit allows {allowed:.0}"
    );
    assert!(
        !codes.is_empty(),
        "128 creates in {elapsed:.1} s and none refused"
    );
    assert!(
        codes.iter().all(|c| c == "THROTTLED" || c == "CONTENTION"),
        "{codes:?}"
    );
    let (quiet_made, quiet_codes) = quiet.await.unwrap();
    assert_eq!((quiet_made, quiet_codes), (6, Vec::<String>::new()));
    let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{report}");
}

/// Under a per-item limit (`--faults item-wcu=200`, a fifth of AWS's, with real in-flight
/// transaction conflicts): 64 writers in one organization, each its own requester, create
/// tickets for 20 s at about 256 a second in all, over twice what one item takes in
/// transactions (100 a second: the layout before counter shards would stop there). No
/// client sees `THROTTLED` or `CONTENTION`, every acknowledged create is counted exactly
/// once by `ticketCount` and the OPEN queue's `totalCount`, and `check` finds the table
/// clean. (The limit is a fifth of AWS's so that the offered rate is one a debug build
/// sustains beside the other tests: at AWS's own figure the run needed over 600 creates a
/// second, and a loaded machine fell short of it. The benchmark's busy-organization phase
/// measures AWS's figure on a release build.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_busy_organization_is_counted_exactly_past_one_items_limit() {
    use itemgraph::store::embedded::EmbeddedStore;
    use itemgraph::store::faults::Faults;
    use itemgraph::store::Store;
    use std::time::{Duration, Instant};

    const WRITERS: usize = 64;
    const SECONDS: u64 = 20;
    /// Each writer's pace: 64 × 4 a second.
    const PAUSE: Duration = Duration::from_millis(1000 / 4);
    /// Transactional writes one item takes a second under that limit (two units each).
    const ONE_ITEM: f64 = 100.0;
    let faults: Faults = "item-wcu=200".parse().unwrap();
    let store = EmbeddedStore::in_memory_with_faults(
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
        faults,
    )
    .unwrap();
    assert!(store.create_table().await.unwrap());
    crate::common::demo::seed_demo(&store).await.unwrap();
    let acme = Slug::parse("acme").unwrap();
    let base = demo_data().users[0].clone();
    let mut requesters = Vec::new();
    for i in 0..WRITERS {
        let username = format!("busy-{i}");
        let user = crate::common::records::User {
            username: itemgraph::chart::kinds::Username::parse(&username).unwrap(),
            email: itemgraph::chart::kinds::Email::parse(&format!("{username}@acme.example"))
                .unwrap(),
            org: acme.clone(),
            ..base.clone()
        };
        crate::common::writes::create_user(crate::common::writes::shared(&store), &user)
            .await
            .unwrap();
        requesters.push(username);
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let api = Arc::new(Api::over(Arc::new(store)));
    const COUNTS: &str = r#"{ organization(slug: "acme") { ticketCount open: tickets(status: OPEN, first: 0) { totalCount } } }"#;
    let before = api.data(COUNTS, Value::Null).await;
    const CREATE: &str = "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }";
    let end = Instant::now() + Duration::from_secs(SECONDS);
    let writers: Vec<_> = requesters
        .into_iter()
        .map(|requester| {
            let api = api.clone();
            tokio::spawn(async move {
                let (mut made, mut codes) = (0u64, Vec::new());
                while Instant::now() < end {
                    let r = api
                        .run_with(
                            CREATE,
                            json!({ "input": { "org": "acme", "requester": requester, "title": "Busy", "body": "Load.", "priority": "LOW" } }),
                        )
                        .await;
                    match r.get("errors") {
                        None => made += 1,
                        Some(_) => codes.extend(error_codes(&r)),
                    }
                    tokio::time::sleep(PAUSE).await;
                }
                (made, codes)
            })
        })
        .collect();
    let (mut made, mut codes) = (0u64, Vec::new());
    for w in join_all(writers).await {
        let (m, c) = w.unwrap();
        made += m;
        codes.extend(c);
    }
    assert_eq!(codes, Vec::<String>::new(), "{made} creates acknowledged");
    assert!(
        made as f64 > ONE_ITEM * SECONDS as f64 * 1.2,
        "{made} creates in {SECONDS} s: not above what one item took"
    );
    let after = api.data(COUNTS, Value::Null).await;
    let count = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap();
    assert_eq!(
        count(&after, "/organization/ticketCount"),
        count(&before, "/organization/ticketCount") + made
    );
    assert_eq!(
        count(&after, "/organization/open/totalCount"),
        count(&before, "/organization/open/totalCount") + made
    );
    let report = itemgraph::check::check(api.store.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{report}");
}
