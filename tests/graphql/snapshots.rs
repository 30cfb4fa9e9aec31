//! Whole GraphQL responses over the demo data, `extensions.dynamodb` trace included, as
//! golden files: every access pattern of the README table, every way to page, nested
//! connections, batched references, `node`/`nodes`, not-found and every error code.
//!
//! Each case runs once per engine (`embedded::…`, `dynamodb::…`) and asserts against the
//! same snapshot name, so a snapshot passing on both engines proves that the embedded
//! engine answers, item for item and request for request, as DynamoDB Local does. A
//! snapshot's header repeats the request that produced it.
//!
//! Regenerate with `INSTA_UPDATE=always cargo test --test graphql snapshots::embedded::`,
//! read every changed snapshot, then run the `dynamodb::` half unchanged.

use crate::common;

use crate::common::demo::demo_data;
use crate::common::records::GlobalId;
use crate::common::records::{Order, Ticket};
use common::graphql::{normalized, Api};
use itemgraph::chart::kinds::{Slug, Username};
use serde_json::{json, Value};

/// Runs the request and asserts its normalized response against the snapshot `name`.
async fn check(api: &Api, name: &str, query: &str, variables: Value) {
    let response = normalized(api.run_with(query, variables.clone()).await);
    let description = if variables.is_null() {
        query.trim().to_owned()
    } else {
        format!("{}\nvariables: {variables}", query.trim())
    };
    insta::with_settings!({ description => description, omit_expression => true }, {
        insta::assert_json_snapshot!(name, response);
    });
}

/// A value the test's own earlier request returned, e.g. a cursor to page from.
async fn fetch_str(api: &Api, query: &str, pointer: &str) -> String {
    let data = api.data(query, Value::Null).await;
    data.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {data:#}"))
        .to_owned()
}

fn slug(s: &str) -> Slug {
    Slug::parse(s).expect("a demo slug")
}

/// The newest acme ticket with an assignee other than its requester: its references are
/// three distinct keys.
fn ticket_with_assignee() -> Ticket {
    demo_data()
        .records
        .tickets
        .into_iter()
        .filter(|t| t.org == slug("acme"))
        .filter(|t| t.assignee.as_ref().is_some_and(|a| *a != t.requester))
        .max_by_key(|t| t.ticket_id.to_string())
        .expect("acme has assigned tickets")
}

/// The newest acme order with more than one line.
fn order_with_lines() -> Order {
    demo_data()
        .records
        .orders
        .into_iter()
        .filter(|o| o.org == slug("acme") && o.line_count > 1)
        .max_by_key(|o| o.order_id.to_string())
        .expect("acme has orders of several lines")
}

/// A ULID that no demo item has.
const MISSING_ID: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

const PAGE_INFO: &str = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";

/// The operation's header, declaring the cursor variable `args` uses, if any (GraphQL
/// rejects a declared variable that goes unused).
fn header(args: &str) -> String {
    ["after", "before"]
        .iter()
        .find(|v| args.contains(&format!("${v}")))
        .map_or_else(|| "query".to_owned(), |v| format!("query(${v}: String)"))
}

fn users_page(args: &str) -> String {
    let header = header(args);
    format!(
        "{header} {{
  organization(slug: \"acme\") {{
    slug
    users({args}) {{
      totalCount
      {PAGE_INFO}
      edges {{ cursor node {{ username name role }} }}
    }}
  }}
}}"
    )
}

fn orders_page(args: &str) -> String {
    let header = header(args);
    format!(
        "{header} {{
  organization(slug: \"acme\") {{
    slug
    orders({args}) {{
      totalCount
      {PAGE_INFO}
      edges {{ cursor node {{ orderId status placedAt currency totalCents }} }}
    }}
  }}
}}"
    )
}

fn user_tickets_page(args: &str) -> String {
    let header = header(args);
    format!(
        "{header} {{
  user(org: \"acme\", username: \"wile-e-coyote\") {{
    username
    ticketCount
    tickets({args}) {{
      totalCount
      {PAGE_INFO}
      edges {{ cursor node {{ ticketId title status createdAt }} }}
    }}
  }}
}}"
    )
}

// --- Access patterns 1–9 -------------------------------------------------------------

/// 1: an organization by slug, alone: one GetItem.
async fn organization_by_slug(api: &Api) {
    let q = r#"{
  organization(slug: "acme") {
    id slug name plan createdAt userCount orderCount ticketCount
  }
}"#;
    check(api, "organization_by_slug", q, Value::Null).await;
}

/// 2: the organization and its first users, by username: one Query, forward.
async fn organization_first_users(api: &Api) {
    let q = users_page("first: 5");
    check(api, "organization_first_users", &q, Value::Null).await;
}

/// 2, later page: `after` queries the users' prefix only; the organization comes from a
/// GetItem beside it.
async fn organization_users_after(api: &Api) {
    let after = fetch_str(
        api,
        &users_page("first: 5"),
        "/organization/users/pageInfo/endCursor",
    )
    .await;
    let q = users_page("first: 5, after: $after");
    check(
        api,
        "organization_users_after",
        &q,
        json!({ "after": after }),
    )
    .await;
}

/// 2, backward: the last users, still in username order, one Query backward.
async fn organization_users_last(api: &Api) {
    let q = users_page("last: 5");
    check(api, "organization_users_last", &q, Value::Null).await;
}

/// 2, backward from a cursor: the five users before the last five.
async fn organization_users_last_before(api: &Api) {
    let before = fetch_str(
        api,
        &users_page("last: 5"),
        "/organization/users/pageInfo/startCursor",
    )
    .await;
    let q = users_page("last: 5, before: $before");
    check(
        api,
        "organization_users_last_before",
        &q,
        json!({ "before": before }),
    )
    .await;
}

/// `first: 0`: no edges, but `hasNextPage` still known, from one Query.
async fn organization_users_first_zero(api: &Api) {
    let q = users_page("first: 0");
    check(api, "organization_users_first_zero", &q, Value::Null).await;
}

/// 3: the organization and its newest orders: one Query, backward.
async fn organization_newest_orders(api: &Api) {
    let q = orders_page("first: 4");
    check(api, "organization_newest_orders", &q, Value::Null).await;
}

/// 3, later page: the next older orders after the cursor.
async fn organization_orders_after(api: &Api) {
    let after = fetch_str(
        api,
        &orders_page("first: 4"),
        "/organization/orders/pageInfo/endCursor",
    )
    .await;
    let q = orders_page("first: 4, after: $after");
    check(
        api,
        "organization_orders_after",
        &q,
        json!({ "after": after }),
    )
    .await;
}

/// 3, backward: the oldest orders, still newest first.
async fn organization_orders_last(api: &Api) {
    let q = orders_page("last: 3");
    check(api, "organization_orders_last", &q, Value::Null).await;
}

/// 2 and 3 in one request: two Queries, concurrently; the organization from the users'.
async fn organization_users_and_orders(api: &Api) {
    let q = r#"{
  organization(slug: "globex") {
    name
    users(first: 3) { totalCount nodes { username } }
    orders(first: 3) { totalCount nodes { orderId status } }
  }
}"#;
    check(api, "organization_users_and_orders", q, Value::Null).await;
}

/// 4: the user and their newest tickets: one Query on GSI1, backward.
async fn user_first_tickets(api: &Api) {
    let q = user_tickets_page("first: 5");
    check(api, "user_first_tickets", &q, Value::Null).await;
}

/// 4, later page: the next older tickets; the user from a GetItem beside it.
async fn user_tickets_after(api: &Api) {
    let after = fetch_str(
        api,
        &user_tickets_page("first: 5"),
        "/user/tickets/pageInfo/endCursor",
    )
    .await;
    let q = user_tickets_page("first: 5, after: $after");
    check(api, "user_tickets_after", &q, json!({ "after": after })).await;
}

/// 4, backward from a cursor: the user's oldest tickets, page by page.
async fn user_tickets_last_before(api: &Api) {
    let before = fetch_str(
        api,
        &user_tickets_page("last: 4"),
        "/user/tickets/pageInfo/startCursor",
    )
    .await;
    let q = user_tickets_page("last: 4, before: $before");
    check(
        api,
        "user_tickets_last_before",
        &q,
        json!({ "before": before }),
    )
    .await;
}

/// 5: a ticket by its plain id: one GetItem.
async fn ticket_by_id(api: &Api) {
    let t = ticket_with_assignee();
    let q = r#"query($id: ID!) {
  ticket(id: $id) {
    id ticketId title body status priority createdAt updatedAt version
  }
}"#;
    check(
        api,
        "ticket_by_id",
        q,
        json!({ "id": t.ticket_id.to_string() }),
    )
    .await;
}

/// 6: one status queue, newest first: one Query on GSI2; the organization from a GetItem.
async fn organization_tickets_by_status(api: &Api) {
    let q = format!(
        r#"{{
  organization(slug: "acme") {{
    slug
    tickets(status: PENDING, first: 4) {{
      totalCount
      {PAGE_INFO}
      edges {{ cursor node {{ ticketId status title }} }}
    }}
  }}
}}"#
    );
    check(api, "organization_tickets_by_status", &q, Value::Null).await;
}

/// 6, all four queues at once: four Queries on GSI2, concurrently.
async fn organization_every_status_queue(api: &Api) {
    let q = r#"{
  organization(slug: "globex") {
    ticketCount
    open: tickets(status: OPEN, first: 2) { totalCount pageInfo { hasNextPage } nodes { ticketId status } }
    pending: tickets(status: PENDING, first: 2) { totalCount pageInfo { hasNextPage } nodes { ticketId status } }
    solved: tickets(status: SOLVED, first: 2) { totalCount pageInfo { hasNextPage } nodes { ticketId status } }
    closed: tickets(status: CLOSED, first: 2) { totalCount pageInfo { hasNextPage } nodes { ticketId status } }
  }
}"#;
    check(api, "organization_every_status_queue", q, Value::Null).await;
}

/// 7: an order and its lines: one Query on GSI1, forward.
async fn order_with_its_lines(api: &Api) {
    let o = order_with_lines();
    let q = r#"query($id: ID!) {
  order(id: $id) {
    id orderId status placedAt currency totalCents version
    lines { lineNo sku description quantity unitPriceCents amountCents }
  }
}"#;
    check(
        api,
        "order_with_its_lines",
        q,
        json!({ "id": o.order_id.to_string() }),
    )
    .await;
}

/// 8: `node` for each type in one request: the four keys in one BatchGetItem.
async fn node_of_each_type(api: &Api) {
    let t = ticket_with_assignee();
    let o = order_with_lines();
    let vars = json!({
        "org": GlobalId::Organization(slug("globex")).encode(),
        "user": GlobalId::User(slug("initech"), Username::parse("milton-waddams").unwrap()).encode(),
        "ticket": GlobalId::Ticket(t.ticket_id).encode(),
        "order": GlobalId::Order(o.org.clone(), o.order_id).encode(),
    });
    let q = r#"query($org: ID!, $user: ID!, $ticket: ID!, $order: ID!) {
  org: node(id: $org) { __typename id ... on Organization { slug name } }
  user: node(id: $user) { __typename id ... on User { username email } }
  ticket: node(id: $ticket) { __typename id ... on Ticket { ticketId title } }
  order: node(id: $order) { __typename id ... on Order { orderId totalCents } }
}"#;
    check(api, "node_of_each_type", q, vars).await;
}

/// 8: one `node` alone: a single key is one GetItem.
async fn node_alone(api: &Api) {
    let q = r#"query($id: ID!) {
  node(id: $id) { __typename id ... on User { username name role } }
}"#;
    let id = GlobalId::User(slug("acme"), Username::parse("wile-e-coyote").unwrap()).encode();
    check(api, "node_alone", q, json!({ "id": id })).await;
}

/// 8: `nodes` of mixed types in the order asked, a missing one as null: one BatchGetItem.
async fn nodes_mixed_and_missing(api: &Api) {
    let t = ticket_with_assignee();
    let o = order_with_lines();
    let ids = [
        GlobalId::Order(o.org.clone(), o.order_id),
        GlobalId::User(slug("acme"), Username::parse("nobody-here").unwrap()),
        GlobalId::Organization(slug("initech")),
        GlobalId::Ticket(t.ticket_id),
        GlobalId::User(slug("globex"), Username::parse("homer-simpson").unwrap()),
    ]
    .map(|g| g.encode());
    let q = r#"query($ids: [ID!]!) {
  nodes(ids: $ids) {
    __typename id
    ... on Organization { slug }
    ... on User { username }
    ... on Ticket { ticketId }
    ... on Order { orderId }
  }
}"#;
    check(api, "nodes_mixed_and_missing", q, json!({ "ids": ids })).await;
}

/// 9: a ticket's requester, assignee and organization: the GetItem of the ticket, then
/// one BatchGetItem for the three references.
async fn ticket_references_batched(api: &Api) {
    let t = ticket_with_assignee();
    let q = r#"query($id: ID!) {
  ticket(id: $id) {
    ticketId
    requester { username name }
    assignee { username name role }
    organization { slug name }
  }
}"#;
    check(
        api,
        "ticket_references_batched",
        q,
        json!({ "id": GlobalId::Ticket(t.ticket_id).encode() }),
    )
    .await;
}

/// 9: an order's buyer and organization: the order's Query, then one BatchGetItem.
async fn order_buyer_and_organization(api: &Api) {
    let o = order_with_lines();
    let q = r#"query($id: ID!) {
  order(id: $id) {
    orderId
    buyer { username email }
    organization { slug plan }
  }
}"#;
    check(
        api,
        "order_buyer_and_organization",
        q,
        json!({ "id": GlobalId::Order(o.org.clone(), o.order_id).encode() }),
    )
    .await;
}

/// 9: a reference to what the request already read costs nothing: each user's
/// organization comes from the Query that read the users.
async fn users_organization_is_already_read(api: &Api) {
    let q = r#"{
  organization(slug: "initech") {
    users(first: 3) { nodes { username organization { slug name } } }
  }
}"#;
    check(api, "users_organization_is_already_read", q, Value::Null).await;
}

/// 9: the tickets' requester is the user their Query read, so free; their organization,
/// asked by every ticket, is one GetItem.
async fn user_tickets_references(api: &Api) {
    let q = r#"{
  user(org: "acme", username: "wile-e-coyote") {
    tickets(first: 3) {
      nodes { ticketId requester { username } organization { slug } }
    }
  }
}"#;
    check(api, "user_tickets_references", q, Value::Null).await;
}

/// Nested connections: the organization's users in one Query, then each user's tickets in
/// one Query per user, all five concurrently. No reference is selected under the pages:
/// which reads the references would cost depends on when each page returns (see
/// `graphql_requests::a_reference_being_read_is_not_read_again`), so the snapshot would
/// not be the same on every run.
async fn nested_org_users_tickets(api: &Api) {
    let q = r#"{
  organization(slug: "acme") {
    slug
    users(first: 5) {
      nodes {
        username
        tickets(first: 2) {
          totalCount
          pageInfo { hasNextPage }
          nodes { ticketId status }
        }
      }
    }
  }
}"#;
    check(api, "nested_org_users_tickets", q, Value::Null).await;
}

// --- Not found ------------------------------------------------------------------------

/// An organization that does not exist is null; its first users page was the one Query.
async fn not_found_organization(api: &Api) {
    let q = r#"{ organization(slug: "umbrella") { name users(first: 5) { totalCount } } }"#;
    check(api, "not_found_organization", q, Value::Null).await;
}

/// A user that does not exist is null: one GetItem.
async fn not_found_user(api: &Api) {
    let q = r#"{ user(org: "acme", username: "nobody-here") { name } }"#;
    check(api, "not_found_user", q, Value::Null).await;
}

/// A ticket that does not exist is null: one GetItem.
async fn not_found_ticket(api: &Api) {
    let q = r#"query($id: ID!) { ticket(id: $id) { title } }"#;
    check(api, "not_found_ticket", q, json!({ "id": MISSING_ID })).await;
}

/// An order that does not exist is null: one Query.
async fn not_found_order(api: &Api) {
    let q = r#"query($id: ID!) { order(id: $id) { status lines { sku } } }"#;
    check(api, "not_found_order", q, json!({ "id": MISSING_ID })).await;
}

// --- Errors ---------------------------------------------------------------------------

/// `first` above 100 is `BAD_USER_INPUT`.
async fn error_first_over_100(api: &Api) {
    let q = r#"{ organization(slug: "acme") { users(first: 101) { totalCount } } }"#;
    check(api, "error_first_over_100", q, Value::Null).await;
}

/// `first` with `last` is `BAD_USER_INPUT`.
async fn error_first_and_last(api: &Api) {
    let q = r#"{ user(org: "acme", username: "wile-e-coyote") { tickets(first: 2, last: 2) { totalCount } } }"#;
    check(api, "error_first_and_last", q, Value::Null).await;
}

/// A slug that could forge a key is `BAD_USER_INPUT`, before any request.
async fn error_bad_slug(api: &Api) {
    let q = r#"{ organization(slug: "Acme#1") { name } }"#;
    check(api, "error_bad_slug", q, Value::Null).await;
}

/// More than 100 ids to `nodes` is `BAD_USER_INPUT`, before any request.
async fn error_nodes_over_100(api: &Api) {
    let ids: Vec<String> = (0..101)
        .map(|_| GlobalId::Organization(slug("acme")).encode())
        .collect();
    let q = r#"query($ids: [ID!]!) { nodes(ids: $ids) { id } }"#;
    check(api, "error_nodes_over_100", q, json!({ "ids": ids })).await;
}

/// A cursor with one character changed is `INVALID_CURSOR`.
async fn error_tampered_cursor(api: &Api) {
    let cursor = fetch_str(
        api,
        &users_page("first: 5"),
        "/organization/users/pageInfo/endCursor",
    )
    .await;
    let mut chars: Vec<char> = cursor.chars().collect();
    chars[10] = if chars[10] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    let q = users_page("first: 5, after: $after");
    check(
        api,
        "error_tampered_cursor",
        &q,
        json!({ "after": tampered }),
    )
    .await;
}

/// A genuine cursor of acme's users, used on globex's users, is `INVALID_CURSOR`.
async fn error_cursor_of_another_org(api: &Api) {
    let cursor = fetch_str(
        api,
        &users_page("first: 5"),
        "/organization/users/pageInfo/endCursor",
    )
    .await;
    let q = r#"query($after: String) {
  organization(slug: "globex") { slug users(first: 5, after: $after) { nodes { username } } }
}"#;
    check(
        api,
        "error_cursor_of_another_org",
        q,
        json!({ "after": cursor }),
    )
    .await;
}

/// An unknown field fails validation: `GRAPHQL_VALIDATION_FAILED`, no request.
async fn error_unknown_field(api: &Api) {
    let q = r#"{ organization(slug: "acme") { name nickname } }"#;
    check(api, "error_unknown_field", q, Value::Null).await;
}

on_every_engine!(
    organization_by_slug,
    organization_first_users,
    organization_users_after,
    organization_users_last,
    organization_users_last_before,
    organization_users_first_zero,
    organization_newest_orders,
    organization_orders_after,
    organization_orders_last,
    organization_users_and_orders,
    user_first_tickets,
    user_tickets_after,
    user_tickets_last_before,
    ticket_by_id,
    organization_tickets_by_status,
    organization_every_status_queue,
    order_with_its_lines,
    node_of_each_type,
    node_alone,
    nodes_mixed_and_missing,
    ticket_references_batched,
    order_buyer_and_organization,
    users_organization_is_already_read,
    user_tickets_references,
    nested_org_users_tickets,
    not_found_organization,
    not_found_user,
    not_found_ticket,
    not_found_order,
    error_first_over_100,
    error_first_and_last,
    error_bad_slug,
    error_nodes_over_100,
    error_tampered_cursor,
    error_cursor_of_another_org,
    error_unknown_field,
);
