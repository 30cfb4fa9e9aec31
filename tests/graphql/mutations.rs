//! Every mutation, as whole GraphQL responses with their `extensions.dynamodb` trace, as
//! golden files: each success, each `CONFLICT`, `NOT_FOUND`, `VERSION_MISMATCH` and
//! `INVALID_TRANSITION` case, the `BAD_USER_INPUT` cases, and a `clientToken` replay.
//!
//! Each case runs once per engine (`embedded::…`, `dynamodb::…`) on a freshly seeded demo
//! store and asserts against the same snapshot. Beyond the snapshot, the code asserts
//! what docs/API.md promises: a successful mutation makes exactly one write request plus
//! the reads listed for it, a refused input makes no request at all, a success publishes
//! its domain event and a failure none, and after a success `itemgraph check` finds the
//! table consistent.
//!
//! What differs from run to run is replaced before the comparison ([`stable`]): ids made
//! during the test become `[new id 1]`, `[new id 2]` … in order of appearance (global ids
//! `[global id Ticket:[new id 1]]`), timestamps made during the test `[now]`.
//!
//! Regenerate with `INSTA_UPDATE=always cargo test --test graphql mutations::embedded::`,
//! read every changed snapshot, then run the `dynamodb::` half unchanged.

use crate::common;
use crate::common::changes::Decoded as _;

use std::collections::HashMap;

use crate::common::demo::demo_data;
use crate::common::records::Entity;
use crate::common::records::GlobalId;
use crate::common::records::{
    timestamp_from_ms, Order, OrderStatus, Role, Ticket, TicketStatus, User,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::changes::{after, one_of, summary, Watch};
use common::graphql::{normalized, requests, Api};
use itemgraph::chart::kinds::{Id, Slug, Username};
use itemgraph::live::EventKind;
use serde_json::{json, Value};

/// A ULID that no demo item has.
const MISSING_ID: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

/// The requests that write; a successful mutation makes exactly one of them.
const WRITES: &[&str] = &["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"];

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64
}

// --- normalization -------------------------------------------------------------------

/// Replaces what was made during the test (ids and timestamps from `since_ms` on) with
/// stable placeholders.
struct Stable {
    since_ms: u64,
    since: String,
    ids: HashMap<String, usize>,
}

impl Stable {
    fn new(since_ms: u64) -> Self {
        Stable {
            since_ms,
            since: timestamp_from_ms(since_ms),
            ids: HashMap::new(),
        }
    }

    fn fresh_id(&self, s: &str) -> bool {
        Id::parse(s).is_ok_and(|id| id.timestamp_ms() >= self.since_ms)
    }

    fn placeholder(&mut self, id: &str) -> String {
        let next = self.ids.len() + 1;
        let n = *self.ids.entry(id.to_owned()).or_insert(next);
        format!("[new id {n}]")
    }

    /// Every fresh ULID inside `s` (delimited by anything but letters and digits).
    fn ids_in(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut run = String::new();
        for c in s.chars().chain(std::iter::once('\0')) {
            if c.is_ascii_alphanumeric() {
                run.push(c);
                continue;
            }
            if self.fresh_id(&run) {
                out.push_str(&self.placeholder(&run));
            } else {
                out.push_str(&run);
            }
            run.clear();
            if c != '\0' {
                out.push(c);
            }
        }
        out
    }

    fn string(&mut self, s: &str) -> String {
        let is_timestamp = s.len() == 24 && s.as_bytes()[4] == b'-' && s.ends_with('Z');
        if is_timestamp && s >= self.since.as_str() {
            return "[now]".to_owned();
        }
        if let Some(text) = URL_SAFE_NO_PAD
            .decode(s)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|t| GlobalId::is_one(s) && t.contains(':'))
        {
            let replaced = self.ids_in(&text);
            if replaced != text {
                return format!("[global id {replaced}]");
            }
            return s.to_owned();
        }
        self.ids_in(s)
    }

    fn value(&mut self, v: Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.string(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|i| self.value(i)).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, self.value(v))).collect())
            }
            other => other,
        }
    }
}

/// `response` normalized ([`normalized`]) with what this run made replaced.
fn stable(response: &Value, since_ms: u64) -> Value {
    Stable::new(since_ms).value(normalized(response.clone()))
}

// --- helpers ---------------------------------------------------------------------------

/// Asserts `value` against snapshot `name`, headed by the request that produced it.
fn snapshot(name: &str, query: &str, variables: &Value, value: Value) {
    let description = format!("{}\nvariables: {variables}", query.trim());
    insta::with_settings!({ description => description, omit_expression => true }, {
        insta::assert_json_snapshot!(name, value);
    });
}

/// Runs `query` with `variables`, asserts the stable response against snapshot `name`
/// and returns the raw response.
async fn mutate(api: &Api, name: &str, query: &str, variables: Value) -> Value {
    let since = now_ms();
    let response = api.run_with(query, variables.clone()).await;
    snapshot(name, query, &variables, stable(&response, since));
    response
}

fn operations(response: &Value) -> Vec<&str> {
    requests(response)
        .iter()
        .map(|r| r["operation"].as_str().expect("operation"))
        .collect()
}

/// A success: no error, exactly one write request, and besides it exactly `reads`, in
/// order (the reads docs/API.md lists for the mutation).
fn assert_one_write(response: &Value, reads: &[&str]) {
    assert!(response.get("errors").is_none(), "errors: {response:#}");
    let ops = operations(response);
    let writes = ops.iter().filter(|op| WRITES.contains(op)).count();
    assert_eq!(writes, 1, "exactly one write request: {ops:?}");
    let others: Vec<&str> = ops
        .iter()
        .copied()
        .filter(|op| !WRITES.contains(op))
        .collect();
    assert_eq!(others, reads, "the reads besides the write: {ops:?}");
}

/// A failure: one error with this code and `extensions.field`, `data` null.
fn assert_error(response: &Value, code: &str, field: Option<&str>) {
    let errors = response["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors: {response:#}"));
    assert_eq!(errors.len(), 1, "{response:#}");
    let ext = &errors[0]["extensions"];
    assert_eq!(ext["code"], code, "{response:#}");
    assert_eq!(ext["field"].as_str(), field, "{response:#}");
    assert_eq!(response["data"], Value::Null, "{response:#}");
}

/// Input refused before any request.
fn assert_refused(response: &Value, field: Option<&str>) {
    assert_error(response, "BAD_USER_INPUT", field);
    assert_eq!(operations(response), Vec::<&str>::new(), "no request");
}

/// A watch of the table's change stream from now on.
async fn watch(api: &Api) -> Watch {
    Watch::new(api.store.as_ref()).await
}

/// Asserts the stream saw no change at all.
async fn no_change(w: &mut Watch) {
    w.none().await;
}

/// `itemgraph check` finds the table consistent.
async fn assert_consistent(api: &Api) {
    let report = itemgraph::check::check(api.store.as_ref())
        .await
        .expect("the check reads the table");
    let lines: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert!(report.is_clean(), "{report}:\n{}", lines.join("\n"));
}

fn slug(s: &str) -> Slug {
    Slug::parse(s).expect("a demo slug")
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v:#}"))
}

fn n(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("no number at {pointer} in {v:#}"))
}

// --- demo facts --------------------------------------------------------------------------

/// The newest acme ticket in `status` that matches `also`.
fn acme_ticket(status: TicketStatus, also: impl Fn(&Ticket) -> bool) -> Ticket {
    demo_data()
        .records
        .tickets
        .into_iter()
        .filter(|t| t.org == slug("acme") && t.status == status && also(t))
        .max_by_key(|t| t.ticket_id)
        .expect("acme has such a ticket")
}

/// The newest acme order in `status`.
fn acme_order(status: OrderStatus) -> Order {
    demo_data()
        .records
        .orders
        .into_iter()
        .filter(|o| o.org == slug("acme") && o.status == status)
        .max_by_key(|o| o.order_id)
        .expect("acme has such an order")
}

/// An acme member nothing refers to (no ticket requested or assigned, no order placed):
/// deleting them leaves no reference dangling.
fn deletable_user() -> User {
    let data = demo_data();
    data.users
        .iter()
        .filter(|u| u.org == slug("acme") && u.role == Role::Member)
        .find(|u| {
            let refers = |org: &Slug, who: &Username| *org == u.org && *who == u.username;
            !data.tickets.iter().any(|t| {
                refers(&t.org, &t.requester)
                    || t.assignee.as_ref().is_some_and(|a| refers(&t.org, a))
            }) && !data.orders.iter().any(|o| refers(&o.org, &o.buyer))
        })
        .cloned()
        .expect("acme has a member nothing refers to")
}

// --- queries -------------------------------------------------------------------------------

const ORG_FIELDS: &str = "id slug name plan createdAt userCount orderCount ticketCount";
const USER_FIELDS: &str = "id username email name role createdAt ticketCount";
const TICKET_FIELDS: &str = "id ticketId title body status priority createdAt updatedAt version";
const ORDER_FIELDS: &str = "id orderId status placedAt currency totalCents version";
const LINE_FIELDS: &str = "lineNo sku description quantity unitPriceCents amountCents";

fn create_organization_q() -> String {
    format!(
        "mutation($input: CreateOrganizationInput!) {{
  createOrganization(input: $input) {{ organization {{ {ORG_FIELDS} }} }}
}}"
    )
}

fn create_user_q() -> String {
    format!(
        "mutation($input: CreateUserInput!) {{
  createUser(input: $input) {{ user {{ {USER_FIELDS} }} }}
}}"
    )
}

fn update_user_q() -> String {
    format!(
        "mutation($input: UpdateUserInput!) {{
  updateUser(input: $input) {{ user {{ {USER_FIELDS} }} }}
}}"
    )
}

fn delete_user_q() -> String {
    format!(
        "mutation($input: DeleteUserInput!) {{
  deleteUser(input: $input) {{ deletedUserId user {{ {USER_FIELDS} }} }}
}}"
    )
}

fn create_ticket_q() -> String {
    format!(
        "mutation($input: CreateTicketInput!) {{
  createTicket(input: $input) {{ ticket {{ {TICKET_FIELDS} }} }}
}}"
    )
}

fn update_ticket_q() -> String {
    format!(
        "mutation($input: UpdateTicketInput!) {{
  updateTicket(input: $input) {{ ticket {{ {TICKET_FIELDS} }} }}
}}"
    )
}

fn place_order_q() -> String {
    format!(
        "mutation($input: PlaceOrderInput!) {{
  placeOrder(input: $input) {{ replayed order {{ {ORDER_FIELDS} lines {{ {LINE_FIELDS} }} }} }}
}}"
    )
}

fn update_order_status_q() -> String {
    format!(
        "mutation($input: UpdateOrderStatusInput!) {{
  updateOrderStatus(input: $input) {{ order {{ {ORDER_FIELDS} }} }}
}}"
    )
}

fn new_user(username: &str, email: &str) -> Value {
    json!({ "input": {
        "org": "acme", "username": username, "email": email,
        "name": "Hubie", "role": "MEMBER"
    }})
}

fn new_ticket() -> Value {
    json!({ "input": {
        "org": "acme",
        "requester": "wile-e-coyote",
        "title": "Rocket sled missing its brakes",
        "body": "Ordered one sled.\nIt has no brakes.",
        "priority": "HIGH",
        "assignee": "bugs-bunny"
    }})
}

fn with(mut variables: Value, field: &str, value: Value) -> Value {
    variables["input"][field] = value;
    variables
}

fn two_lines() -> Value {
    json!([
        { "sku": "ROCKET-SLED", "description": "Rocket sled", "quantity": 1, "unitPriceCents": 25000 },
        { "sku": "ANVIL-100", "description": "Anvil, 100 lb", "quantity": 3, "unitPriceCents": 4999 }
    ])
}

fn new_order(lines: Value) -> Value {
    json!({ "input": {
        "org": "acme", "buyer": "wile-e-coyote", "currency": "USD", "lines": lines
    }})
}

// --- createOrganization --------------------------------------------------------------------

/// A new organization: one conditional Put in a TransactWriteItems (for its client
/// request token), counters at zero, `OrganizationCreated`.
async fn create_organization(api: &Api) {
    let mut w = watch(api).await;
    let vars = json!({ "input": { "slug": "looney", "name": "Looney Tunes", "plan": "TEAM" } });
    let r = mutate(api, "create_organization", &create_organization_q(), vars).await;
    assert_one_write(&r, &[]);
    assert_eq!(operations(&r), ["TransactWriteItems"]);
    let changes = w.changes().await;
    assert_eq!(summary(&changes), ["Created Organization"]);
    assert!(
        matches!(after(one_of(&changes, "Organization"), EventKind::Created), Entity::Organization(o) if o.slug == "looney" && o.schema_version == Some(crate::common::records::Organization::SHARDED)),
        "created with its counter shards, in their layout"
    );
    let read = api
        .data(
            r#"{ organization(slug: "looney") { name plan userCount } }"#,
            Value::Null,
        )
        .await;
    assert_eq!(
        read,
        json!({ "organization": { "name": "Looney Tunes", "plan": "TEAM", "userCount": 0 } })
    );
    assert_consistent(api).await;
}

/// A taken slug: `CONFLICT` naming `slug`, after the one refused PutItem.
async fn create_organization_slug_taken(api: &Api) {
    let mut w = watch(api).await;
    let vars = json!({ "input": { "slug": "acme", "name": "Acme Again", "plan": "FREE" } });
    let r = mutate(
        api,
        "create_organization_slug_taken",
        &create_organization_q(),
        vars,
    )
    .await;
    assert_error(&r, "CONFLICT", Some("slug"));
    assert_eq!(operations(&r), ["TransactWriteItems"]);
    no_change(&mut w).await;
}

/// A slug that could forge a key: `BAD_USER_INPUT` naming `slug`, no request.
async fn create_organization_bad_slug(api: &Api) {
    let vars = json!({ "input": { "slug": "acme#USER#x", "name": "Forged", "plan": "FREE" } });
    let r = mutate(
        api,
        "create_organization_bad_slug",
        &create_organization_q(),
        vars,
    )
    .await;
    assert_refused(&r, Some("slug"));
}

/// A blank display name: `BAD_USER_INPUT` naming `name`, no request.
async fn create_organization_blank_name(api: &Api) {
    let vars = json!({ "input": { "slug": "blank", "name": "   ", "plan": "FREE" } });
    let r = mutate(
        api,
        "create_organization_blank_name",
        &create_organization_q(),
        vars,
    )
    .await;
    assert_refused(&r, Some("name"));
}

// --- createUser ----------------------------------------------------------------------------

/// A new user, email lowercased: one TransactWriteItems; the organization counts them.
async fn create_user(api: &Api) {
    let mut w = watch(api).await;
    let vars = new_user("hubie", "Hubie@Acme.Example");
    let r = mutate(api, "create_user", &create_user_q(), vars).await;
    assert_one_write(&r, &[]);
    assert_eq!(s(&r, "/data/createUser/user/email"), "hubie@acme.example");
    let changes = w.changes().await;
    assert_eq!(
        summary(&changes),
        ["Created User", "Created UserEmail"],
        "the organization counts it on a counter shard, which is no entity"
    );
    assert!(
        matches!(after(one_of(&changes, "User"), EventKind::Created), Entity::User(u) if u.username == "hubie")
    );
    let read = api
        .data(
            r#"{ organization(slug: "acme") { userCount } }"#,
            Value::Null,
        )
        .await;
    assert_eq!(read["organization"]["userCount"], 29);
    assert_consistent(api).await;
}

/// A username taken in the organization: `CONFLICT` naming `username`.
async fn create_user_username_taken(api: &Api) {
    let mut w = watch(api).await;
    let vars = new_user("bugs-bunny", "another-bugs@acme.example");
    let r = mutate(api, "create_user_username_taken", &create_user_q(), vars).await;
    assert_error(&r, "CONFLICT", Some("username"));
    assert_eq!(operations(&r), ["TransactWriteItems"]);
    no_change(&mut w).await;
}

/// An email taken in the organization, whatever its case: `CONFLICT` naming `email`.
/// (One another organization uses is free here: see the tenant-isolation matrix.)
async fn create_user_email_taken(api: &Api) {
    let vars = new_user("hubie", "BUGS-BUNNY@acme.example");
    let r = mutate(api, "create_user_email_taken", &create_user_q(), vars).await;
    assert_error(&r, "CONFLICT", Some("email"));
    assert_eq!(operations(&r), ["TransactWriteItems"]);
}

/// No such organization: `NOT_FOUND` naming `organization`.
async fn create_user_no_organization(api: &Api) {
    let vars = with(
        new_user("hubie", "hubie@nope.example"),
        "org",
        json!("nope"),
    );
    let r = mutate(api, "create_user_no_organization", &create_user_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("organization"));
    // No counter shard: once more on the organization item, which an organization not
    // migrated yet would have (docs/DATA_MODEL.md, "Both layouts").
    assert_eq!(operations(&r), ["TransactWriteItems", "TransactWriteItems"]);
}

/// Not an email address: `BAD_USER_INPUT` naming `email`, no request.
async fn create_user_bad_email(api: &Api) {
    let vars = new_user("hubie", "hubie at acme");
    let r = mutate(api, "create_user_bad_email", &create_user_q(), vars).await;
    assert_refused(&r, Some("email"));
}

// --- updateUser ----------------------------------------------------------------------------

/// Name and role: one UpdateItem, no read.
async fn update_user(api: &Api) {
    let mut w = watch(api).await;
    let vars = json!({ "input": {
        "org": "acme", "username": "road-runner", "name": "Road Runner (beep beep)", "role": "ADMIN"
    }});
    let r = mutate(api, "update_user", &update_user_q(), vars).await;
    assert_one_write(&r, &[]);
    assert_eq!(operations(&r), ["UpdateItem"]);
    let changes = w.changes().await;
    assert!(
        matches!(after(one_of(&changes, "User"), EventKind::Updated), Entity::User(u) if u.role == Role::Admin)
    );
    assert_consistent(api).await;
}

/// A new email: the user is read (GetItem), then one TransactWriteItems moves the
/// uniqueness marker; the old email is free again.
async fn update_user_email(api: &Api) {
    let mut w = watch(api).await;
    let vars = json!({ "input": {
        "org": "acme", "username": "road-runner", "email": "Beep@Acme.Example"
    }});
    let r = mutate(api, "update_user_email", &update_user_q(), vars).await;
    assert_one_write(&r, &["GetItem"]);
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    let changes = w.changes().await;
    assert_eq!(
        summary(&changes),
        ["Created UserEmail", "Deleted UserEmail", "Updated User"]
    );
    assert!(
        matches!(after(one_of(&changes, "User"), EventKind::Updated), Entity::User(u) if u.email == "beep@acme.example")
    );
    assert_consistent(api).await;
    let again = api
        .run_with(
            &create_user_q(),
            new_user("road-runner-2", "road-runner@acme.example"),
        )
        .await;
    assert!(
        again.get("errors").is_none(),
        "the old email is free: {again:#}"
    );
}

/// A new email someone else has: `CONFLICT` naming `email`, nothing changed.
async fn update_user_email_taken(api: &Api) {
    let mut w = watch(api).await;
    let vars = json!({ "input": {
        "org": "acme", "username": "road-runner", "email": "bugs-bunny@acme.example"
    }});
    let r = mutate(api, "update_user_email_taken", &update_user_q(), vars).await;
    assert_error(&r, "CONFLICT", Some("email"));
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    no_change(&mut w).await;
    assert_consistent(api).await;
}

/// No such user: `NOT_FOUND` naming `user`.
async fn update_user_not_found(api: &Api) {
    let vars = json!({ "input": { "org": "acme", "username": "ghost", "name": "Ghost" } });
    let r = mutate(api, "update_user_not_found", &update_user_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("user"));
    assert_eq!(operations(&r), ["UpdateItem"]);
}

/// Nothing to change: `BAD_USER_INPUT` without a field, no request.
async fn update_user_nothing_to_change(api: &Api) {
    let vars = json!({ "input": { "org": "acme", "username": "road-runner" } });
    let r = mutate(api, "update_user_nothing_to_change", &update_user_q(), vars).await;
    assert_refused(&r, None);
}

// --- deleteUser ----------------------------------------------------------------------------

/// A user without tickets: read (GetItem), then one TransactWriteItems removing the user
/// and their email marker and uncounting them.
async fn delete_user(api: &Api) {
    let mut w = watch(api).await;
    let user = deletable_user();
    let vars = json!({ "input": { "org": "acme", "username": user.username.as_str() } });
    let r = mutate(api, "delete_user", &delete_user_q(), vars).await;
    assert_one_write(&r, &["GetItem"]);
    assert_eq!(
        s(&r, "/data/deleteUser/deletedUserId"),
        GlobalId::User(user.org.clone(), user.username.clone()).encode()
    );
    let changes = w.changes().await;
    assert_eq!(
        summary(&changes),
        ["Deleted User", "Deleted UserEmail"],
        "the organization uncounts it on a counter shard, which is no entity"
    );
    assert!(
        matches!(after(one_of(&changes, "User"), EventKind::Deleted), Entity::User(u) if u == user)
    );
    let q = format!(
        r#"{{ user(org: "acme", username: "{}") {{ name }} organization(slug: "acme") {{ userCount }} }}"#,
        user.username
    );
    let read = api.data(&q, Value::Null).await;
    assert_eq!(
        read,
        json!({ "user": null, "organization": { "userCount": 27 } })
    );
    assert_consistent(api).await;
}

/// No such user: `NOT_FOUND` naming `user`, after the one read.
async fn delete_user_not_found(api: &Api) {
    let vars = json!({ "input": { "org": "acme", "username": "ghost" } });
    let r = mutate(api, "delete_user_not_found", &delete_user_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("user"));
    assert_eq!(operations(&r), ["GetItem"]);
}

/// A user who requested tickets stays (their tickets keep their requester): `CONFLICT`
/// naming `tickets`, nothing written.
async fn delete_user_with_tickets(api: &Api) {
    let mut w = watch(api).await;
    let vars = json!({ "input": { "org": "acme", "username": "wile-e-coyote" } });
    let r = mutate(api, "delete_user_with_tickets", &delete_user_q(), vars).await;
    assert_error(&r, "CONFLICT", Some("tickets"));
    assert_eq!(operations(&r), ["GetItem"]);
    no_change(&mut w).await;
}

// --- createTicket --------------------------------------------------------------------------

/// A new ticket, OPEN at version 1: one TransactWriteItems counting it on the
/// organization, its OPEN queue and the requester.
async fn create_ticket(api: &Api) {
    let mut w = watch(api).await;
    let r = mutate(api, "create_ticket", &create_ticket_q(), new_ticket()).await;
    assert_one_write(&r, &[]);
    assert_eq!(operations(&r), ["TransactWriteItems"]);
    let id = s(&r, "/data/createTicket/ticket/ticketId").to_owned();
    let changes = w.changes().await;
    assert_eq!(
        summary(&changes),
        ["Created Ticket", "Updated User", "Updated User"],
        "the requester and the assignee count it (the organization on a counter shard, no entity)"
    );
    assert!(
        matches!(after(one_of(&changes, "Ticket"), EventKind::Created), Entity::Ticket(t) if t.ticket_id.to_string() == id)
    );
    let read = api
        .data(
            r#"{
  user(org: "acme", username: "wile-e-coyote") { ticketCount tickets(first: 1) { nodes { ticketId assignee { username } } } }
  organization(slug: "acme") { ticketCount tickets(status: OPEN, first: 1) { totalCount nodes { ticketId } } }
}"#,
            Value::Null,
        )
        .await;
    assert_eq!(n(&read, "/user/ticketCount"), 35);
    assert_eq!(s(&read, "/user/tickets/nodes/0/ticketId"), id);
    assert_eq!(
        s(&read, "/user/tickets/nodes/0/assignee/username"),
        "bugs-bunny"
    );
    assert_eq!(n(&read, "/organization/ticketCount"), 81);
    assert_eq!(n(&read, "/organization/tickets/totalCount"), 25);
    assert_eq!(s(&read, "/organization/tickets/nodes/0/ticketId"), id);
    assert_consistent(api).await;
}

/// No such organization: `NOT_FOUND` naming `organization`.
async fn create_ticket_no_organization(api: &Api) {
    let vars = with(new_ticket(), "org", json!("nope"));
    let r = mutate(
        api,
        "create_ticket_no_organization",
        &create_ticket_q(),
        vars,
    )
    .await;
    assert_error(&r, "NOT_FOUND", Some("organization"));
    // No counter shard: once more on the organization item, which an organization not
    // migrated yet would have (docs/DATA_MODEL.md, "Both layouts").
    assert_eq!(operations(&r), ["TransactWriteItems", "TransactWriteItems"]);
}

/// No such requester: `NOT_FOUND` naming `requester`.
async fn create_ticket_no_requester(api: &Api) {
    let vars = with(new_ticket(), "requester", json!("ghost"));
    let r = mutate(api, "create_ticket_no_requester", &create_ticket_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("requester"));
}

/// No such assignee: `NOT_FOUND` naming `assignee`; nothing is counted.
async fn create_ticket_no_assignee(api: &Api) {
    let mut w = watch(api).await;
    let vars = with(new_ticket(), "assignee", json!("ghost"));
    let r = mutate(api, "create_ticket_no_assignee", &create_ticket_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("assignee"));
    no_change(&mut w).await;
    assert_consistent(api).await;
}

/// A title over 200 characters: `BAD_USER_INPUT` naming `title`, no request.
async fn create_ticket_title_too_long(api: &Api) {
    let vars = with(new_ticket(), "title", json!("x".repeat(201)));
    let r = mutate(
        api,
        "create_ticket_title_too_long",
        &create_ticket_q(),
        vars,
    )
    .await;
    assert_refused(&r, Some("title"));
}

/// A title on two lines: `BAD_USER_INPUT` naming `title` (a body may have line breaks).
async fn create_ticket_multiline_title(api: &Api) {
    let vars = with(new_ticket(), "title", json!("Rocket sled\nmissing brakes"));
    let r = mutate(
        api,
        "create_ticket_multiline_title",
        &create_ticket_q(),
        vars,
    )
    .await;
    assert_refused(&r, Some("title"));
}

// --- updateTicket --------------------------------------------------------------------------

/// Status, priority and assignee by global id: GetItem of the ticket, then one
/// TransactWriteItems (the ticket, the status counters, the assignee check).
async fn update_ticket(api: &Api) {
    let mut w = watch(api).await;
    let t = acme_ticket(TicketStatus::Open, |t| t.assignee.is_none());
    let vars = json!({ "input": {
        "ticketId": GlobalId::Ticket(t.ticket_id).encode(),
        "expectedVersion": t.version,
        "status": "PENDING", "priority": "URGENT", "assignee": "daffy-duck"
    }});
    let r = mutate(api, "update_ticket", &update_ticket_q(), vars).await;
    assert_one_write(&r, &["GetItem"]);
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    assert_eq!(
        n(&r, "/data/updateTicket/ticket/version"),
        i64::from(t.version) + 1
    );
    let changes = w.changes().await;
    let c = one_of(&changes, "Ticket");
    match (c.entity_before(), after(c, EventKind::Updated)) {
        (Some(Entity::Ticket(before)), Entity::Ticket(now)) => assert_eq!(
            (before.status, now.status),
            (TicketStatus::Open, TicketStatus::Pending)
        ),
        other => panic!("not a ticket change: {other:?}"),
    }
    let q = format!(
        r#"{{ ticket(id: "{}") {{ assignee {{ username }} }} }}"#,
        t.ticket_id
    );
    let read = api.data(&q, Value::Null).await;
    assert_eq!(s(&read, "/ticket/assignee/username"), "daffy-duck");
    assert_consistent(api).await;
}

/// An explicit `assignee: null` unassigns: after the read, one TransactWriteItems (the
/// ticket, and the old assignee's count of assigned tickets).
async fn update_ticket_unassign(api: &Api) {
    let t = acme_ticket(TicketStatus::Pending, |t| t.assignee.is_some());
    let vars = json!({ "input": {
        "ticketId": t.ticket_id.to_string(),
        "expectedVersion": t.version,
        "assignee": null, "title": "Spring shoes keep bouncing (reopened)"
    }});
    let r = mutate(api, "update_ticket_unassign", &update_ticket_q(), vars).await;
    assert_one_write(&r, &["GetItem"]);
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    let q = format!(
        r#"{{ ticket(id: "{}") {{ assignee {{ username }} title }} }}"#,
        t.ticket_id
    );
    let read = api.data(&q, Value::Null).await;
    assert_eq!(read["ticket"]["assignee"], Value::Null);
    assert_consistent(api).await;
}

/// Title, body and priority alone touch no counter: after the read, one PutItem
/// conditioned on the version.
async fn update_ticket_text(api: &Api) {
    let mut w = watch(api).await;
    let t = acme_ticket(TicketStatus::Open, |_| true);
    let vars = json!({ "input": {
        "ticketId": t.ticket_id.to_string(), "expectedVersion": t.version,
        "title": "Rocket skates veer left (confirmed)", "body": "Seen twice.\nBoth times left.",
        "priority": "LOW"
    }});
    let r = mutate(api, "update_ticket_text", &update_ticket_q(), vars).await;
    assert_one_write(&r, &["GetItem"]);
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    let changes = w.changes().await;
    assert_eq!(summary(&changes), ["Updated Ticket"], "no counter moves");
    assert!(matches!(
        (one_of(&changes, "Ticket").entity_before(), after(one_of(&changes, "Ticket"), EventKind::Updated)),
        (Some(Entity::Ticket(b)), Entity::Ticket(t)) if b.status == TicketStatus::Open && t.status == TicketStatus::Open && t.priority != b.priority
    ));
    assert_consistent(api).await;
}

/// A stale `expectedVersion`: `VERSION_MISMATCH` with `currentVersion`, answered from the
/// read, nothing written.
async fn update_ticket_version_mismatch(api: &Api) {
    let mut w = watch(api).await;
    let t = acme_ticket(TicketStatus::Solved, |_| true);
    let vars = json!({ "input": {
        "ticketId": t.ticket_id.to_string(), "expectedVersion": t.version - 1, "status": "CLOSED"
    }});
    let r = mutate(
        api,
        "update_ticket_version_mismatch",
        &update_ticket_q(),
        vars,
    )
    .await;
    assert_error(&r, "VERSION_MISMATCH", None);
    assert_eq!(
        r["errors"][0]["extensions"]["currentVersion"],
        json!(t.version)
    );
    assert_eq!(operations(&r), ["GetItem"]);
    no_change(&mut w).await;
}

/// No such ticket: `NOT_FOUND` naming `ticket`.
async fn update_ticket_not_found(api: &Api) {
    let vars =
        json!({ "input": { "ticketId": MISSING_ID, "expectedVersion": 1, "status": "CLOSED" } });
    let r = mutate(api, "update_ticket_not_found", &update_ticket_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("ticket"));
    assert_eq!(operations(&r), ["GetItem"]);
}

/// A new assignee who does not exist: `NOT_FOUND` naming `assignee`, nothing changed.
async fn update_ticket_no_assignee(api: &Api) {
    let t = acme_ticket(TicketStatus::Open, |_| true);
    let vars = json!({ "input": {
        "ticketId": t.ticket_id.to_string(), "expectedVersion": t.version, "assignee": "ghost"
    }});
    let r = mutate(api, "update_ticket_no_assignee", &update_ticket_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("assignee"));
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    assert_consistent(api).await;
}

/// An order's global id where a ticket's is expected: `BAD_USER_INPUT` naming
/// `ticketId`, no request.
async fn update_ticket_wrong_id(api: &Api) {
    let o = acme_order(OrderStatus::Placed);
    let vars = json!({ "input": {
        "ticketId": GlobalId::Order(o.org, o.order_id).encode(), "expectedVersion": 1, "status": "CLOSED"
    }});
    let r = mutate(api, "update_ticket_wrong_id", &update_ticket_q(), vars).await;
    assert_refused(&r, Some("ticketId"));
}

/// A version below 1: `BAD_USER_INPUT` naming `expectedVersion`, no request.
async fn update_ticket_bad_version(api: &Api) {
    let vars =
        json!({ "input": { "ticketId": MISSING_ID, "expectedVersion": 0, "status": "CLOSED" } });
    let r = mutate(api, "update_ticket_bad_version", &update_ticket_q(), vars).await;
    assert_refused(&r, Some("expectedVersion"));
}

/// Nothing to change: `BAD_USER_INPUT` without a field, no request.
async fn update_ticket_nothing_to_change(api: &Api) {
    let vars = json!({ "input": { "ticketId": MISSING_ID, "expectedVersion": 1 } });
    let r = mutate(
        api,
        "update_ticket_nothing_to_change",
        &update_ticket_q(),
        vars,
    )
    .await;
    assert_refused(&r, None);
}

// --- placeOrder ----------------------------------------------------------------------------

/// An order with two lines, numbered and totalled here: one TransactWriteItems.
async fn place_order(api: &Api) {
    let mut w = watch(api).await;
    let r = mutate(api, "place_order", &place_order_q(), new_order(two_lines())).await;
    assert_one_write(&r, &[]);
    assert_eq!(operations(&r), ["TransactWriteItems"]);
    // Money is exact `Cents`: a decimal string.
    assert_eq!(
        s(&r, "/data/placeOrder/order/totalCents"),
        (25000 + 3 * 4999).to_string()
    );
    assert_eq!(r["data"]["placeOrder"]["replayed"], false);
    let id = s(&r, "/data/placeOrder/order/orderId").to_owned();
    let changes = w.changes().await;
    assert_eq!(
        summary(&changes),
        [
            "Created Order",
            "Created OrderLine",
            "Created OrderLine",
            "Updated User"
        ]
    );
    assert!(
        matches!(after(one_of(&changes, "Order"), EventKind::Created), Entity::Order(o) if o.order_id.to_string() == id)
    );
    let q = format!(
        r#"{{ order(id: "{id}") {{ totalCents lines {{ lineNo amountCents }} }} organization(slug: "acme") {{ orderCount }} }}"#
    );
    let read = api.data(&q, Value::Null).await;
    assert_eq!(
        read,
        json!({
            "order": { "totalCents": "39997", "lines": [
                { "lineNo": 1, "amountCents": "25000" }, { "lineNo": 2, "amountCents": "14997" }
            ] },
            "organization": { "orderCount": 37 }
        })
    );
    assert_consistent(api).await;
}

/// The same `clientToken` twice places one order: the retry's transaction is refused by
/// the token's marker and the first order is read back (one Query), `replayed: true`,
/// with no event.
async fn place_order_replay(api: &Api) {
    let mut w = watch(api).await;
    let since = now_ms();
    let first = with(new_order(two_lines()), "clientToken", json!("retry-7f3a"));
    let r1 = api.run_with(&place_order_q(), first.clone()).await;
    assert_one_write(&r1, &[]);
    let changes = w.changes().await;
    one_of(&changes, "Order");

    // A retry that differs (a lost answer, then a client that rebuilt the order) still
    // gets the order the token placed.
    let retry = with(
        new_order(
            json!([{ "sku": "X", "description": "Other", "quantity": 9, "unitPriceCents": 1 }]),
        ),
        "clientToken",
        json!("retry-7f3a"),
    );
    let r2 = api.run_with(&place_order_q(), retry.clone()).await;
    assert_one_write(&r2, &["Query"]);
    assert_eq!(operations(&r2), ["TransactWriteItems", "Query"]);
    assert_eq!(r2["data"]["placeOrder"]["replayed"], true);
    assert_eq!(
        r2["data"]["placeOrder"]["order"], r1["data"]["placeOrder"]["order"],
        "the first order, lines and all"
    );
    no_change(&mut w).await;

    // One numbering for both, so the replay shows the first order's `[new id 1]`.
    let mut ids = Stable::new(since);
    let q = place_order_q();
    snapshot(
        "place_order_token_first",
        &q,
        &first,
        ids.value(normalized(r1)),
    );
    snapshot(
        "place_order_token_replay",
        &q,
        &retry,
        ids.value(normalized(r2)),
    );
    let read = api
        .data(
            r#"{ organization(slug: "acme") { orderCount } }"#,
            Value::Null,
        )
        .await;
    assert_eq!(read["organization"]["orderCount"], 37, "one order placed");
    assert_consistent(api).await;
}

/// No such buyer: `NOT_FOUND` naming `buyer`.
async fn place_order_no_buyer(api: &Api) {
    let vars = with(new_order(two_lines()), "buyer", json!("ghost"));
    let r = mutate(api, "place_order_no_buyer", &place_order_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("buyer"));
    assert_eq!(operations(&r), ["TransactWriteItems"]);
    assert_consistent(api).await;
}

/// No such organization: `NOT_FOUND` naming `organization`.
async fn place_order_no_organization(api: &Api) {
    let vars = with(new_order(two_lines()), "org", json!("nope"));
    let r = mutate(api, "place_order_no_organization", &place_order_q(), vars).await;
    assert_error(&r, "NOT_FOUND", Some("organization"));
}

/// Each refused order input names its field, and no request is made.
async fn place_order_bad_input(api: &Api) {
    // Prices as `Cents` strings: exact whatever their size, so the overflow cases reach
    // the server's arithmetic.
    let line = |q: i64, p: i64| json!({ "sku": "ANVIL-100", "description": "Anvil", "quantity": q, "unitPriceCents": p.to_string() });
    let cases = [
        (
            "place_order_bad_currency",
            with(new_order(two_lines()), "currency", json!("usd")),
            "currency",
        ),
        ("place_order_no_lines", new_order(json!([])), "lines"),
        (
            "place_order_zero_quantity",
            new_order(json!([line(1, 10), line(0, 10)])),
            "lines[1].quantity",
        ),
        (
            "place_order_negative_price",
            new_order(json!([line(1, -1)])),
            "lines[0].unitPriceCents",
        ),
        (
            "place_order_amount_overflow",
            new_order(json!([line(3, 4_000_000_000_000_000_000)])),
            "lines[0]",
        ),
        (
            "place_order_total_overflow",
            new_order(json!([
                line(1, 5_000_000_000_000_000_000),
                line(1, 5_000_000_000_000_000_000)
            ])),
            "lines",
        ),
        (
            "place_order_blank_sku",
            new_order(
                json!([{ "sku": "", "description": "Anvil", "quantity": 1, "unitPriceCents": 1 }]),
            ),
            "lines[0].sku",
        ),
        (
            "place_order_bad_token",
            with(new_order(two_lines()), "clientToken", json!("retry#7")),
            "clientToken",
        ),
    ];
    for (name, vars, field) in cases {
        let r = mutate(api, name, &place_order_q(), vars).await;
        assert_refused(&r, Some(field));
    }
    // One line more than a transaction holds; not snapshot (the request is long).
    let most = itemgraph::chart::builtin().entities["Order"].lists["lines"]
        .max
        .expect("an order's lines are bounded");
    let lines: Vec<Value> = (0..=most).map(|_| line(1, 1)).collect();
    let r = api
        .run_with(&place_order_q(), new_order(Value::Array(lines)))
        .await;
    assert_refused(&r, Some("lines"));
}

// --- updateOrderStatus ---------------------------------------------------------------------

/// PLACED → PAID by global id, which names the organization: a strongly consistent
/// GetItem reads the order (no eventually consistent index between placing an order and
/// moving it), one conditional UpdateItem writes it.
async fn update_order_status(api: &Api) {
    let mut w = watch(api).await;
    let o = acme_order(OrderStatus::Placed);
    let vars = json!({ "input": {
        "orderId": GlobalId::Order(o.org.clone(), o.order_id).encode(),
        "status": "PAID", "expectedVersion": o.version
    }});
    let r = mutate(api, "update_order_status", &update_order_status_q(), vars).await;
    assert_one_write(&r, &["GetItem"]);
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"]);
    let changes = w.changes().await;
    assert_eq!(summary(&changes), ["Updated Order"]);
    assert!(matches!(
        after(one_of(&changes, "Order"), EventKind::Updated),
        Entity::Order(order) if order.status == OrderStatus::Paid && order.version == o.version + 1
    ));
    assert_consistent(api).await;
}

/// A stale `expectedVersion`: `VERSION_MISMATCH` with `currentVersion`, from the read.
async fn update_order_status_version_mismatch(api: &Api) {
    let o = acme_order(OrderStatus::Paid);
    let vars = json!({ "input": {
        "orderId": o.order_id.to_string(), "status": "SHIPPED", "expectedVersion": o.version - 1
    }});
    let r = mutate(
        api,
        "update_order_status_version_mismatch",
        &update_order_status_q(),
        vars,
    )
    .await;
    assert_error(&r, "VERSION_MISMATCH", None);
    assert_eq!(
        r["errors"][0]["extensions"]["currentVersion"],
        json!(o.version)
    );
    assert_eq!(operations(&r), ["Query"]);
}

/// DELIVERED is final: `INVALID_TRANSITION` with `from` and `to`, nothing written.
async fn update_order_status_invalid_transition(api: &Api) {
    let mut w = watch(api).await;
    let o = acme_order(OrderStatus::Delivered);
    let vars = json!({ "input": {
        "orderId": o.order_id.to_string(), "status": "CANCELLED", "expectedVersion": o.version
    }});
    let r = mutate(
        api,
        "update_order_status_invalid_transition",
        &update_order_status_q(),
        vars,
    )
    .await;
    assert_error(&r, "INVALID_TRANSITION", None);
    let ext = &r["errors"][0]["extensions"];
    assert_eq!(
        (&ext["from"], &ext["to"]),
        (&json!("DELIVERED"), &json!("CANCELLED"))
    );
    assert_eq!(operations(&r), ["Query"]);
    no_change(&mut w).await;
}

/// No such order: `NOT_FOUND` naming `order`.
async fn update_order_status_not_found(api: &Api) {
    let vars =
        json!({ "input": { "orderId": MISSING_ID, "status": "PAID", "expectedVersion": 1 } });
    let r = mutate(
        api,
        "update_order_status_not_found",
        &update_order_status_q(),
        vars,
    )
    .await;
    assert_error(&r, "NOT_FOUND", Some("order"));
    assert_eq!(operations(&r), ["Query"]);
}

/// A global id naming another organization than the order's: `NOT_FOUND` on `order`, and
/// nothing written.
async fn update_order_status_other_org(api: &Api) {
    let o = acme_order(OrderStatus::Placed);
    let vars = json!({ "input": {
        "orderId": GlobalId::Order(slug("globex"), o.order_id).encode(),
        "status": "PAID", "expectedVersion": o.version
    }});
    let r = mutate(
        api,
        "update_order_status_other_org",
        &update_order_status_q(),
        vars,
    )
    .await;
    assert_error(&r, "NOT_FOUND", Some("order"));
    assert_eq!(operations(&r), ["GetItem"]);
}

/// A ticket's id where an order's is expected: `BAD_USER_INPUT` naming `orderId`.
async fn update_order_status_wrong_id(api: &Api) {
    let t = acme_ticket(TicketStatus::Open, |_| true);
    let vars = json!({ "input": {
        "orderId": GlobalId::Ticket(t.ticket_id).encode(), "status": "PAID", "expectedVersion": 1
    }});
    let r = mutate(
        api,
        "update_order_status_wrong_id",
        &update_order_status_q(),
        vars,
    )
    .await;
    assert_refused(&r, Some("orderId"));
}

// --- several mutations in one request ---------------------------------------------------------

/// Mutations run one after the other, and what one wrote is what the next one's fields
/// read: the second ticket's requester shows both tickets counted, although the first
/// mutation had already read that requester.
async fn later_mutations_see_earlier_writes(api: &Api) {
    let mut w = watch(api).await;
    let q = "mutation($input: CreateTicketInput!) {
  first: createTicket(input: $input) { ticket { ticketId requester { ticketCount } } }
  second: createTicket(input: $input) { ticket { ticketId requester { ticketCount } } }
}";
    let r = mutate(api, "later_mutations_see_earlier_writes", q, new_ticket()).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(n(&r, "/data/first/ticket/requester/ticketCount"), 35);
    assert_eq!(n(&r, "/data/second/ticket/requester/ticketCount"), 36);
    assert_eq!(
        operations(&r),
        [
            "TransactWriteItems",
            "GetItem",
            "TransactWriteItems",
            "GetItem"
        ]
    );
    let changes = w.changes().await;
    let created = changes
        .iter()
        .filter(|c| {
            c.kind == EventKind::Created && c.entity().is_some_and(|e| e.type_name() == "Ticket")
        })
        .count();
    assert_eq!(created, 2, "{:?}", summary(&changes));
}

on_every_engine!(
    create_organization,
    create_organization_slug_taken,
    create_organization_bad_slug,
    create_organization_blank_name,
    create_user,
    create_user_username_taken,
    create_user_email_taken,
    create_user_no_organization,
    create_user_bad_email,
    update_user,
    update_user_email,
    update_user_email_taken,
    update_user_not_found,
    update_user_nothing_to_change,
    delete_user,
    delete_user_not_found,
    delete_user_with_tickets,
    create_ticket,
    create_ticket_no_organization,
    create_ticket_no_requester,
    create_ticket_no_assignee,
    create_ticket_title_too_long,
    create_ticket_multiline_title,
    update_ticket,
    update_ticket_unassign,
    update_ticket_text,
    update_ticket_version_mismatch,
    update_ticket_not_found,
    update_ticket_no_assignee,
    update_ticket_wrong_id,
    update_ticket_bad_version,
    update_ticket_nothing_to_change,
    place_order,
    place_order_replay,
    place_order_no_buyer,
    place_order_no_organization,
    place_order_bad_input,
    update_order_status,
    update_order_status_version_mismatch,
    update_order_status_invalid_transition,
    update_order_status_not_found,
    update_order_status_other_org,
    update_order_status_wrong_id,
    later_mutations_see_earlier_writes,
);
