//! What each query shape costs, in DynamoDB requests, exactly as the README's access-pattern
//! table says: read from the `extensions.dynamodb` trace, on every engine.
//!
//! Concurrency is read from the trace's order of events, not from durations: requests
//! overlap when each starts before the other ends. So that this holds by construction and
//! not by the luck of scheduling (a fast engine may finish one request before the executor
//! issues the next, though it issued both in one pass), the store under the tracer holds
//! the requests in question until all of them have been issued ([`rendezvous`]). The same
//! device, a store with hooks before each call ([`Hooked`]), orders the calls of the
//! in-flight reference test by events rather than by timing.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::demo::demo_data;
use crate::common::records::GlobalId;
use async_trait::async_trait;
use common::graphql::{error_codes, request_count, requests, Api};
use futures::future::BoxFuture;
use itemgraph::chart::kinds::{Slug, Username};
use itemgraph::store::{
    BatchGet, BatchGetPage, Delete, GetItem, Item, PrimaryKey, Put, Query, QueryOutput, Store,
    StoreResult, TableDescription, TableSchema, TransactAction, Update,
};
use serde_json::{json, Value};
use tokio::sync::watch;

fn s<'a>(request: &'a Value, field: &str) -> &'a str {
    request[field]
        .as_str()
        .unwrap_or_else(|| panic!("no {field} in {request:#}"))
}

fn start(request: &Value) -> u64 {
    request["startMicros"].as_u64().expect("startMicros")
}

fn end(request: &Value) -> u64 {
    start(request) + request["durationMicros"].as_u64().expect("durationMicros")
}

/// Whether every request of `group` started before any of them ended.
fn all_overlap(group: &[Value]) -> bool {
    let last_start = group.iter().map(start).max().expect("a request");
    let first_end = group.iter().map(end).min().expect("a request");
    last_start < first_end
}

/// Runs `query`, asserting it returned no error.
async fn ok(api: &Api, query: &str, variables: Value) -> Value {
    let response = api.run_with(query, variables).await;
    assert!(
        response.get("errors").is_none(),
        "unexpected errors for {query}: {response:#}"
    );
    response
}

/// Bound on the waits of the stores below for an event whose absence is the failure.
const EVENT_BOUND: Duration = Duration::from_secs(5);
/// Bound on the wait for a second reference read, which, done right, never comes: the
/// price the passing test pays.
const SECOND_READ_BOUND: Duration = Duration::from_secs(2);

type Hook<T> = Box<dyn Fn(T) -> BoxFuture<'static, ()> + Send + Sync>;

/// A store that runs a hook before each Query and before each read by key (GetItem,
/// BatchGetItem), to put one request's calls in a chosen order by events, not by timing.
/// The tracer wraps it, so a hook's wait counts as part of the call it holds.
struct Hooked {
    inner: Arc<dyn Store>,
    before_query: Hook<Query>,
    before_read: Hook<Vec<PrimaryKey>>,
}

#[async_trait]
impl Store for Hooked {
    fn table_name(&self) -> &str {
        self.inner.table_name()
    }
    fn schema(&self) -> &TableSchema {
        self.inner.schema()
    }
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
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
        (self.before_read)(vec![req.key.clone()]).await;
        self.inner.get_item(req).await
    }
    async fn batch_get_page(&self, req: BatchGet) -> StoreResult<BatchGetPage> {
        (self.before_read)(req.keys.clone()).await;
        self.inner.batch_get_page(req).await
    }
    async fn query(&self, req: Query) -> StoreResult<QueryOutput> {
        (self.before_query)(req.clone()).await;
        self.inner.query(req).await
    }
    async fn scan(&self, req: itemgraph::store::Scan) -> StoreResult<QueryOutput> {
        self.inner.scan(req).await
    }
    async fn put_item(&self, req: Put) -> StoreResult<Option<Item>> {
        self.inner.put_item(req).await
    }
    async fn update_item(&self, req: Update) -> StoreResult<Option<Item>> {
        self.inner.update_item(req).await
    }
    async fn delete_item(&self, req: Delete) -> StoreResult<Option<Item>> {
        self.inner.delete_item(req).await
    }
    async fn transact_write(&self, actions: Vec<TransactAction>) -> StoreResult<()> {
        self.inner.transact_write(actions).await
    }
    async fn batch_write_page(
        &self,
        req: itemgraph::store::BatchWrite,
    ) -> StoreResult<itemgraph::store::BatchWritePage> {
        self.inner.batch_write_page(req).await
    }
}

fn no_hook<T>() -> Hook<T> {
    Box::new(|_| Box::pin(async {}))
}

/// `api`'s store, where every Query for which `matching` holds waits until `n` of them
/// have been called. Issued concurrently, they then all start before any ends, whatever
/// the engine's speed or the OS's scheduling (a fast engine can otherwise finish one
/// before the executor gets to the next); issued one after another, the first waits out
/// [`EVENT_BOUND`] and ends before the second starts.
fn rendezvous(api: &Api, n: usize, matching: fn(&Query) -> bool) -> Api {
    let arrived = Arc::new(watch::channel(0_usize).0);
    Api::over(Arc::new(Hooked {
        inner: api.store.clone(),
        before_query: Box::new(move |q| {
            let arrived = arrived.clone();
            Box::pin(async move {
                if matching(&q) {
                    arrived.send_modify(|k| *k += 1);
                    let mut seen = arrived.subscribe();
                    let _ = tokio::time::timeout(EVENT_BOUND, seen.wait_for(|k| *k >= n)).await;
                }
            })
        }),
        before_read: no_hook(),
    }))
}

/// Access pattern 2: an organization and its first users are one Query on the base table,
/// forward, from the organization's own sort key.
async fn organization_with_first_users_is_one_forward_query(api: &Api) {
    let r = ok(
        api,
        r#"{ organization(slug: "acme") { name users(first: 10) { nodes { username } } } }"#,
        Value::Null,
    )
    .await;
    assert_eq!(request_count(&r), 1, "{r:#}");
    let q = &requests(&r)[0];
    assert_eq!(s(q, "operation"), "Query");
    assert!(q["index"].is_null(), "base table: {q:#}");
    assert_eq!(q["scanForward"], json!(true));
    assert_eq!(
        s(q, "keyCondition"),
        r#"PK = "ORG#acme" AND SK >= "ORG#acme""#
    );
    assert_eq!(r["data"]["organization"]["name"], "Acme Corporation");
    assert_eq!(
        r["data"]["organization"]["users"]["nodes"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}

/// Access pattern 3: an organization and its newest orders are one Query on the base
/// table, backward, from the organization's own sort key.
async fn organization_with_newest_orders_is_one_backward_query(api: &Api) {
    let r = ok(
        api,
        r#"{ organization(slug: "acme") { name orders(first: 10) { nodes { orderId } } } }"#,
        Value::Null,
    )
    .await;
    assert_eq!(request_count(&r), 1, "{r:#}");
    let q = &requests(&r)[0];
    assert_eq!(s(q, "operation"), "Query");
    assert!(q["index"].is_null(), "base table: {q:#}");
    assert_eq!(q["scanForward"], json!(false));
    assert_eq!(
        s(q, "keyCondition"),
        r#"PK = "ORG#acme" AND SK <= "ORG#acme#COUNT#~""#
    );
    // Its 32 counter shards, the organization, ten orders and one more.
    assert_eq!(q["limit"], json!(44));
    assert_eq!(
        r["data"]["organization"]["orders"]["nodes"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}

/// Access pattern 4: a user and their newest tickets are one Query on GSI1, backward.
async fn user_with_first_tickets_is_one_gsi1_query(api: &Api) {
    let r = ok(
        api,
        r#"{ user(org: "acme", username: "wile-e-coyote") { name tickets(first: 10) { nodes { ticketId } } } }"#,
        Value::Null,
    )
    .await;
    assert_eq!(request_count(&r), 1, "{r:#}");
    let q = &requests(&r)[0];
    assert_eq!(s(q, "operation"), "Query");
    assert_eq!(s(q, "index"), "GSI1");
    assert_eq!(q["scanForward"], json!(false));
    assert_eq!(
        s(q, "keyCondition"),
        r#"GSI1PK = "ORG#acme#USER#wile-e-coyote" AND GSI1SK <= "USER#wile-e-coyote""#
    );
    assert_eq!(
        r["data"]["user"]["tickets"]["nodes"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}

/// Access pattern 7: an order and its lines are one Query on GSI1, forward.
async fn order_with_lines_is_one_forward_gsi1_query(api: &Api) {
    let order = demo_data()
        .records
        .orders
        .into_iter()
        .find(|o| o.line_count > 2)
        .expect("an order of several lines");
    let r = ok(
        api,
        r#"query($id: ID!) { order(id: $id) { status lines { lineNo sku } } }"#,
        json!({ "id": order.order_id.to_string() }),
    )
    .await;
    assert_eq!(request_count(&r), 1, "{r:#}");
    let q = &requests(&r)[0];
    assert_eq!(s(q, "operation"), "Query");
    assert_eq!(s(q, "index"), "GSI1");
    assert_eq!(q["scanForward"], json!(true));
    assert_eq!(
        s(q, "keyCondition"),
        format!(
            r##"GSI1PK = "ORDER#{id}" AND GSI1SK >= "#ORDER#{id}""##,
            id = order.order_id
        )
    );
    assert_eq!(
        r["data"]["order"]["lines"].as_array().unwrap().len(),
        order.line_count as usize
    );
}

/// Nested connections: the organization and its first five users are one Query; each
/// user's tickets one Query on GSI1 per user, all five started before any ended.
async fn nested_tickets_are_one_query_per_user_concurrently(api: &Api) {
    let api = &rendezvous(api, 5, |q| q.index.as_deref() == Some("GSI1"));
    let r = ok(
        api,
        r#"{ organization(slug: "acme") { users(first: 5) { nodes { username tickets(first: 3) { nodes { ticketId } } } } } }"#,
        Value::Null,
    )
    .await;
    assert_eq!(request_count(&r), 6, "{r:#}");
    let all = requests(&r);
    assert_eq!(s(&all[0], "operation"), "Query");
    assert!(all[0]["index"].is_null(), "{:#}", all[0]);
    let per_user = &all[1..];
    let usernames: Vec<&str> = r["data"]["organization"]["users"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(usernames.len(), 5);
    for (q, username) in per_user.iter().zip(&usernames) {
        assert_eq!(s(q, "operation"), "Query");
        assert_eq!(s(q, "index"), "GSI1");
        assert!(
            s(q, "keyCondition").starts_with(&format!(r#"GSI1PK = "ORG#acme#USER#{username}""#)),
            "{q:#}"
        );
    }
    assert!(
        per_user.iter().all(|q| start(q) >= end(&all[0])),
        "the users' Query comes first: {r:#}"
    );
    assert!(
        all_overlap(per_user),
        "the five ticket Queries ran one after another: {r:#}"
    );
}

/// Two connections of one organization are two Queries, run concurrently.
async fn users_and_orders_are_two_overlapping_queries(api: &Api) {
    let api = &rendezvous(api, 2, |_| true);
    let r = ok(
        api,
        r#"{ organization(slug: "acme") { users(first: 10) { nodes { username } } orders(first: 10) { nodes { orderId } } } }"#,
        Value::Null,
    )
    .await;
    assert_eq!(request_count(&r), 2, "{r:#}");
    let all = requests(&r);
    assert!(all.iter().all(|q| q["operation"] == "Query"), "{r:#}");
    let directions: Vec<&Value> = all.iter().map(|q| &q["scanForward"]).collect();
    assert_eq!(directions, [&json!(true), &json!(false)], "{r:#}");
    assert!(all_overlap(all), "the two Queries did not overlap: {r:#}");
}

/// A ticket's references are one BatchGetItem after the ticket's GetItem, the same user
/// asked twice counting once.
async fn ticket_references_are_one_batch_get(api: &Api) {
    let acme = Slug::parse("acme").unwrap();
    let ticket = demo_data()
        .records
        .tickets
        .into_iter()
        .find(|t| t.org == acme && t.assignee.as_ref().is_some_and(|a| *a != t.requester))
        .expect("an assigned ticket");
    let r = ok(
        api,
        r#"query($id: ID!) {
  ticket(id: $id) {
    requester { name }
    again: requester { username }
    assignee { name }
    organization { name }
  }
}"#,
        json!({ "id": GlobalId::Ticket(ticket.ticket_id).encode() }),
    )
    .await;
    assert_eq!(request_count(&r), 2, "{r:#}");
    let all = requests(&r);
    assert_eq!(s(&all[0], "operation"), "GetItem");
    assert_eq!(
        s(&all[0], "keyCondition"),
        format!(
            r#"PK = "TICKET#{id}" AND SK = "TICKET#{id}""#,
            id = ticket.ticket_id
        )
    );
    assert_eq!(s(&all[1], "operation"), "BatchGetItem");
    assert_eq!(s(&all[1], "keyCondition"), "3 keys");
    assert_eq!(all[1]["itemCount"], json!(3));
    assert!(start(&all[1]) >= end(&all[0]), "{r:#}");
    let t = &r["data"]["ticket"];
    assert_eq!(t["again"]["username"], ticket.requester.as_str());
    assert_eq!(t["organization"]["name"], "Acme Corporation");
}

/// A cursor that was altered, or that belongs to another organization's connection, is
/// `INVALID_CURSOR`, and rejected before any request is made.
async fn bad_cursors_cost_no_request(api: &Api) {
    let page = ok(
        api,
        r#"{ organization(slug: "acme") { users(first: 5) { pageInfo { endCursor } } } }"#,
        Value::Null,
    )
    .await;
    let cursor = page["data"]["organization"]["users"]["pageInfo"]["endCursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    let mut tampered: Vec<char> = cursor.chars().collect();
    tampered[10] = if tampered[10] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();

    let cases = [
        ("acme", tampered.as_str(), "a tampered cursor"),
        ("globex", cursor.as_str(), "a cursor of acme used on globex"),
    ];
    for (org, cursor, what) in cases {
        let r = api
            .run_with(
                r#"query($org: String!, $after: String) { organization(slug: $org) { name users(first: 5, after: $after) { nodes { username } } } }"#,
                json!({ "org": org, "after": cursor }),
            )
            .await;
        assert_eq!(error_codes(&r), ["INVALID_CURSOR"], "{what}: {r:#}");
        assert_eq!(request_count(&r), 0, "{what}: {r:#}");
    }
}

/// Arguments that can never be served are `BAD_USER_INPUT`, before any request is made.
async fn bad_input_costs_no_request(api: &Api) {
    let ids: Vec<String> = (0..101)
        .map(|_| GlobalId::Organization(Slug::parse("acme").unwrap()).encode())
        .collect();
    let cases = [
        (
            r#"{ organization(slug: "Acme#1") { name } }"#,
            Value::Null,
            "a slug that could forge a key",
        ),
        (
            r#"query($ids: [ID!]!) { nodes(ids: $ids) { id } }"#,
            json!({ "ids": ids }),
            "101 ids",
        ),
        (
            r#"{ organization(slug: "acme") { name users(first: 101) { totalCount } } }"#,
            Value::Null,
            "first: 101",
        ),
        (
            r#"{ user(org: "acme", username: "wile-e-coyote") { name tickets(first: 2, last: 2) { totalCount } } }"#,
            Value::Null,
            "first with last",
        ),
    ];
    for (query, variables, what) in cases {
        let r = api.run_with(query, variables).await;
        assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{what}: {r:#}");
        assert_eq!(request_count(&r), 0, "{what}: {r:#}");
    }
}

/// A user read by reference is read once per request, even when a second resolver asks
/// for it while the first read is still in flight (here: two users' tickets with the same
/// assignee, their Queries completing at different times).
async fn a_reference_being_read_is_not_read_again(api: &Api) {
    // The data this relies on: the first of acme's first five users has, among their two
    // newest tickets, an assignee outside those five (so not read by the users' Query),
    // whom another of the five also has.
    let data = demo_data();
    let acme = Slug::parse("acme").unwrap();
    let mut users: Vec<&Username> = data
        .users
        .iter()
        .filter(|u| u.org == acme)
        .map(|u| &u.username)
        .collect();
    users.sort();
    users.truncate(5);
    let newest_assignees = |user: &Username| -> Vec<Username> {
        let mut tickets: Vec<_> = data
            .tickets
            .iter()
            .filter(|t| t.org == acme && t.requester == *user)
            .collect();
        tickets.sort_by_key(|t| std::cmp::Reverse(t.ticket_id.to_string()));
        tickets
            .iter()
            .take(2)
            .filter_map(|t| t.assignee.clone())
            .collect()
    };
    let shared = newest_assignees(users[0])
        .into_iter()
        .find(|a| !users.contains(&a) && users[1..].iter().any(|u| newest_assignees(u).contains(a)))
        .expect("demo data: an assignee shared by the first user and another, outside the five");

    // The ticket Queries of every user but the first wait until the first reference read
    // starts; that read waits until a second one starts (the failure), or for
    // SECOND_READ_BOUND (no second read: the behaviour wanted). Every key read is recorded.
    let first_partition = format!("ORG#acme#USER#{}", users[0]);
    let first_read = Arc::new(watch::channel(false).0);
    let second_read = Arc::new(watch::channel(false).0);
    let reads = Arc::new(AtomicUsize::new(0));
    let keys: Arc<Mutex<Vec<PrimaryKey>>> = Arc::default();
    let gated = Api::over(Arc::new(Hooked {
        inner: api.store.clone(),
        before_query: Box::new({
            let first_read = first_read.clone();
            move |q| {
                let mut started = first_read.subscribe();
                let held = q.index.as_deref() == Some("GSI1") && q.partition != first_partition;
                Box::pin(async move {
                    if held {
                        tokio::time::timeout(EVENT_BOUND, started.wait_for(|s| *s))
                            .await
                            .expect("the first user's references were never read")
                            .expect("the gate lives");
                    }
                })
            }
        }),
        before_read: Box::new({
            let keys = keys.clone();
            move |read| {
                keys.lock().unwrap().extend(read);
                let (first_read, second_read) = (first_read.clone(), second_read.clone());
                let first = reads.fetch_add(1, Ordering::SeqCst) == 0;
                Box::pin(async move {
                    if first {
                        first_read.send_replace(true);
                        let mut second = second_read.subscribe();
                        let _ =
                            tokio::time::timeout(SECOND_READ_BOUND, second.wait_for(|s| *s)).await;
                    } else {
                        second_read.send_replace(true);
                    }
                })
            }
        }),
    }));
    let r = ok(
        &gated,
        r#"{ organization(slug: "acme") { users(first: 5) { nodes { username tickets(first: 2) { nodes { assignee { username } } } } } } }"#,
        Value::Null,
    )
    .await;
    let assignees = r.to_string();
    assert!(
        assignees.contains(&format!(r#""username":"{shared}""#)),
        "{r:#}"
    );

    let mut reads: HashMap<PrimaryKey, usize> = HashMap::new();
    for key in keys.lock().unwrap().iter() {
        *reads.entry(key.clone()).or_default() += 1;
    }
    let twice: Vec<_> = reads.into_iter().filter(|(_, n)| *n > 1).collect();
    assert!(
        twice.is_empty(),
        "keys read more than once in one request: {twice:?}\n{r:#}"
    );
}

/// Not reading the parent when the selection needs nothing of it must not make a missing
/// organization or user look present: `organization` and `user` are null when there is
/// none, whatever is selected below them.
async fn a_missing_parent_is_null_whatever_the_selection(api: &Api) {
    let cases = [
        (
            r#"{ organization(slug: "umbrella") { id slug } }"#,
            "organization",
        ),
        (
            r#"{ organization(slug: "umbrella") { slug tickets(status: OPEN, first: 2) { nodes { ticketId } } } }"#,
            "organization",
        ),
        (
            r#"{ user(org: "acme", username: "nobody-here") { id username } }"#,
            "user",
        ),
        (
            r#"{ user(org: "acme", username: "nobody-here") { username tickets(last: 2) { nodes { ticketId } } } }"#,
            "user",
        ),
    ];
    for (query, field) in cases {
        let r = ok(api, query, Value::Null).await;
        assert_eq!(r["data"][field], Value::Null, "{query}: {r:#}");
    }
}

/// `viewer`: the role costs nothing, the organization and the member the token names one
/// BatchGetItem of both; with auth off every field is null, at no cost.
async fn viewer_is_one_request_or_none(api: &Api) {
    use itemgraph::auth::{Access, Role};
    let caller = |sub: &str| Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("acme").unwrap(),
        role: Role::Admin,
        subject: Some(sub.into()),
    };
    let all = "{ viewer { role organization { name } user { username name } } }";
    let response = api.run_as(&caller("wile-e-coyote"), all, Value::Null).await;
    assert!(response.get("errors").is_none(), "{response:#}");
    assert_eq!(
        response["data"]["viewer"],
        json!({
            "role": "ADMIN",
            "organization": { "name": "Acme Corporation" },
            "user": { "username": "wile-e-coyote", "name": "Wile E. Coyote" },
        })
    );
    assert_eq!(request_count(&response), 1);
    assert_eq!(s(&requests(&response)[0], "operation"), "BatchGetItem");

    let role = api
        .run_as(&caller("wile-e-coyote"), "{ viewer { role } }", Value::Null)
        .await;
    assert_eq!(role["data"]["viewer"], json!({ "role": "ADMIN" }));
    assert_eq!(request_count(&role), 0, "the token holds the role");

    // A provider's opaque subject names no member; the organization is still one read.
    let opaque = api
        .run_as(
            &caller("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
            all,
            Value::Null,
        )
        .await;
    assert_eq!(opaque["data"]["viewer"]["user"], Value::Null);
    assert_eq!(
        opaque["data"]["viewer"]["organization"]["name"],
        "Acme Corporation"
    );
    let opaque_subject = api
        .run_as(&caller("auth0|5f7c8ec7c33c6c004bbafe82"), all, Value::Null)
        .await;
    assert_eq!(opaque_subject["data"]["viewer"]["user"], Value::Null);
    assert_eq!(request_count(&opaque_subject), 1, "the organization only");

    let nobody = api.run_with(all, Value::Null).await;
    assert_eq!(
        nobody["data"]["viewer"],
        json!({ "role": null, "organization": null, "user": null })
    );
    assert_eq!(request_count(&nobody), 0);
}

on_every_engine!(
    viewer_is_one_request_or_none,
    organization_with_first_users_is_one_forward_query,
    organization_with_newest_orders_is_one_backward_query,
    user_with_first_tickets_is_one_gsi1_query,
    order_with_lines_is_one_forward_gsi1_query,
    nested_tickets_are_one_query_per_user_concurrently,
    users_and_orders_are_two_overlapping_queries,
    ticket_references_are_one_batch_get,
    bad_cursors_cost_no_request,
    bad_input_costs_no_request,
    a_reference_being_read_is_not_read_again,
    a_missing_parent_is_null_whatever_the_selection,
);
