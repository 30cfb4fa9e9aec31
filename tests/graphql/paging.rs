//! Every page of every connection in the demo data, walked forward (`first`/`after`) to
//! the end and backward (`last`/`before`) to the start, on every engine: each item exactly
//! once and in the connection's order, `hasNextPage`/`hasPreviousPage` exact on every page,
//! and as many items as `totalCount` says.
//!
//! The expected order comes from the demo records themselves, not from the server: users
//! by username, orders and tickets newest first (descending ULIDs).

use crate::common;

use crate::common::demo::{demo_data, DemoData};
use crate::common::records::TicketStatus;
use common::graphql::Api;
use serde_json::{json, Value};

/// Page size of the walk: small enough that every long connection has several pages;
/// acme's 28 users fill exactly four (a full last page must still say `hasNextPage:
/// false`), most other connections end on a short page, some are empty. 164 pages in all.
const PAGE: usize = 7;

/// One connection of the demo data and what it must hold.
struct Connection {
    /// For failure messages, e.g. `acme users`.
    name: String,
    /// The operation, with `ARGS` where the paging arguments go.
    query: String,
    /// Where the connection is in `data`, e.g. `/organization/users`.
    path: &'static str,
    /// The field of a node that names it (`username`, `orderId`, `ticketId`).
    key: &'static str,
    expected: Vec<String>,
}

fn descending(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids
}

/// Every connection of the demo data: per organization its users, orders and four status
/// queues; per user their tickets.
fn connections(data: &DemoData) -> Vec<Connection> {
    let mut out = Vec::new();
    for org in &data.organizations {
        let slug = org.slug.as_str();
        let mut users: Vec<String> = data
            .users
            .iter()
            .filter(|u| u.org == org.slug)
            .map(|u| u.username.to_string())
            .collect();
        users.sort_unstable();
        out.push(Connection {
            name: format!("{slug} users"),
            query: format!(r#"organization(slug: "{slug}") {{ users(ARGS) {{ CONNECTION }} }}"#),
            path: "/organization/users",
            key: "username",
            expected: users,
        });
        out.push(Connection {
            name: format!("{slug} orders"),
            query: format!(r#"organization(slug: "{slug}") {{ orders(ARGS) {{ CONNECTION }} }}"#),
            path: "/organization/orders",
            key: "orderId",
            expected: descending(
                data.orders
                    .iter()
                    .filter(|o| o.org == org.slug)
                    .map(|o| o.order_id.to_string())
                    .collect(),
            ),
        });
        for &status in TicketStatus::ALL {
            out.push(Connection {
                name: format!("{slug} {} tickets", status.as_str()),
                query: format!(
                    r#"organization(slug: "{slug}") {{ tickets(status: {}, ARGS) {{ CONNECTION }} }}"#,
                    status.as_str()
                ),
                path: "/organization/tickets",
                key: "ticketId",
                expected: descending(
                    data.tickets
                        .iter()
                        .filter(|t| t.org == org.slug && t.status == status)
                        .map(|t| t.ticket_id.to_string())
                        .collect(),
                ),
            });
        }
    }
    for user in &data.users {
        let (slug, username) = (user.org.as_str(), user.username.as_str());
        out.push(Connection {
            name: format!("{slug}/{username} tickets"),
            query: format!(
                r#"user(org: "{slug}", username: "{username}") {{ tickets(ARGS) {{ CONNECTION }} }}"#
            ),
            path: "/user/tickets",
            key: "ticketId",
            expected: descending(
                data.tickets
                    .iter()
                    .filter(|t| t.org == user.org && t.requester == user.username)
                    .map(|t| t.ticket_id.to_string())
                    .collect(),
            ),
        });
    }
    out
}

/// One page as the server returned it.
struct Page {
    keys: Vec<String>,
    cursors: Vec<String>,
    has_next: bool,
    has_previous: bool,
    start_cursor: Option<String>,
    end_cursor: Option<String>,
    total: usize,
}

async fn page(api: &Api, conn: &Connection, args: &str, cursor: Option<&str>) -> Page {
    let fields = format!(
        "totalCount pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} edges {{ cursor node {{ {} }} }}",
        conn.key
    );
    let body = conn
        .query
        .replace("ARGS", args)
        .replace("CONNECTION", &fields);
    let query = format!("query($cursor: String) {{ {body} }}");
    let data = api.data(&query, json!({ "cursor": cursor })).await;
    let c = data
        .pointer(conn.path)
        .unwrap_or_else(|| panic!("{}: no connection in {data:#}", conn.name));
    let edges = c["edges"].as_array().expect("edges");
    let text = |v: &Value| v.as_str().map(str::to_owned);
    Page {
        keys: edges
            .iter()
            .map(|e| text(&e["node"][conn.key]).expect("a node key"))
            .collect(),
        cursors: edges
            .iter()
            .map(|e| text(&e["cursor"]).expect("a cursor"))
            .collect(),
        has_next: c["pageInfo"]["hasNextPage"].as_bool().expect("hasNextPage"),
        has_previous: c["pageInfo"]["hasPreviousPage"]
            .as_bool()
            .expect("hasPreviousPage"),
        start_cursor: text(&c["pageInfo"]["startCursor"]),
        end_cursor: text(&c["pageInfo"]["endCursor"]),
        total: c["totalCount"].as_u64().expect("totalCount") as usize,
    }
}

/// Checks what every page must hold whatever its direction.
fn check_page(conn: &Connection, n: usize, p: &Page, expected: &[String]) {
    let at = format!("{} page {n}", conn.name);
    assert_eq!(p.keys, expected, "{at}: items");
    assert_eq!(p.total, conn.expected.len(), "{at}: totalCount");
    assert_eq!(
        p.start_cursor.as_ref(),
        p.cursors.first(),
        "{at}: startCursor"
    );
    assert_eq!(p.end_cursor.as_ref(), p.cursors.last(), "{at}: endCursor");
}

/// `first: 7` then `first: 7, after: endCursor` until `hasNextPage` is false.
async fn walk_forward(api: &Api, conn: &Connection) {
    let all = &conn.expected;
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    for n in 0.. {
        let args = format!("first: {PAGE}, after: $cursor");
        let p = page(api, conn, &args, cursor.as_deref()).await;
        let from = n * PAGE;
        let to = (from + PAGE).min(all.len());
        check_page(conn, n, &p, &all[from.min(to)..to]);
        assert_eq!(
            p.has_next,
            to < all.len(),
            "{} page {n}: hasNextPage",
            conn.name
        );
        assert_eq!(
            p.has_previous,
            n > 0,
            "{} page {n}: hasPreviousPage",
            conn.name
        );
        seen.extend(p.keys);
        if !p.has_next {
            break;
        }
        assert!(n < all.len(), "{}: hasNextPage never ends", conn.name);
        cursor = p.end_cursor;
    }
    assert_eq!(&seen, all, "{}: forward walk", conn.name);
}

/// `last: 7` then `last: 7, before: startCursor` until `hasPreviousPage` is false.
async fn walk_backward(api: &Api, conn: &Connection) {
    let all = &conn.expected;
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    for n in 0.. {
        let args = format!("last: {PAGE}, before: $cursor");
        let p = page(api, conn, &args, cursor.as_deref()).await;
        let to = all.len().saturating_sub(n * PAGE);
        let from = to.saturating_sub(PAGE);
        check_page(conn, n, &p, &all[from..to]);
        assert_eq!(
            p.has_previous,
            from > 0,
            "{} page {n}: hasPreviousPage",
            conn.name
        );
        assert_eq!(p.has_next, n > 0, "{} page {n}: hasNextPage", conn.name);
        let mut keys = p.keys;
        keys.append(&mut seen);
        seen = keys;
        if !p.has_previous {
            break;
        }
        assert!(n < all.len(), "{}: hasPreviousPage never ends", conn.name);
        cursor = p.start_cursor;
    }
    assert_eq!(&seen, all, "{}: backward walk", conn.name);
}

/// Every connection of the demo data, both ways.
async fn every_connection_pages_both_ways(api: &Api) {
    let data = demo_data();
    let conns = connections(&data);
    // 3 organizations × (users, orders, 4 status queues) + one per user.
    assert_eq!(conns.len(), 3 * 6 + data.users.len());
    assert!(
        conns.iter().any(|c| c.expected.len() > 4 * PAGE),
        "a connection of many pages"
    );
    assert!(
        conns.iter().any(|c| c.expected.is_empty()),
        "an empty connection"
    );
    assert!(
        conns
            .iter()
            .any(|c| !c.expected.is_empty() && c.expected.len() % PAGE == 0),
        "a connection whose last page is full"
    );
    let pages: usize = conns
        .iter()
        .map(|c| 2 * c.expected.len().div_ceil(PAGE).max(1))
        .sum();
    eprintln!(
        "DEBUG pages {pages} conns {} items {}",
        conns.len(),
        conns.iter().map(|c| c.expected.len()).sum::<usize>()
    );
    for conn in &conns {
        walk_forward(api, conn).await;
        walk_backward(api, conn).await;
    }
}

on_every_engine!(every_connection_pages_both_ways);
