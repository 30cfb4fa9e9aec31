//! The built-in chart served by the generic path (`src/graphql/charted`), reads only,
//! beside the hand-written schema over the same demo data: every example operation of
//! `examples/` (each access pattern of the README's table) answers the same data with the
//! same DynamoDB requests. The step before the built-in chart is served from its file.

use std::path::Path;

use serde_json::Value;

use crate::common::graphql::{normalized, Api};

on_every_engine!(
    every_example_answers_the_same_on_the_generic_path,
    later_pages_references_errors_and_tenants_answer_the_same,
);

/// What a response says, less what may differ between two schemas: its data, its errors'
/// codes and paths, and its requests (operation, index, key condition, limit, direction).
fn essence(r: &Value) -> Value {
    let r = normalized(r.clone());
    let requests: Vec<Value> = r
        .pointer("/extensions/dynamodb/requests")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|x| {
                    serde_json::json!([
                        x["operation"],
                        x["index"],
                        x["keyCondition"],
                        x["limit"],
                        x["scanForward"]
                    ])
                })
                .collect()
        })
        .unwrap_or_default();
    let errors: Vec<Value> = r
        .get("errors")
        .and_then(Value::as_array)
        .map(|es| {
            es.iter()
                .map(|e| serde_json::json!([e["extensions"]["code"], e["path"]]))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({ "data": r["data"], "errors": errors, "requests": requests })
}

async fn every_example_answers_the_same_on_the_generic_path(api: &Api) {
    let generic = api.as_chart();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphql"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8);
    let mut differ = Vec::new();
    for file in &files {
        let query = std::fs::read_to_string(file).unwrap();
        let hand = essence(&api.run(&query).await);
        let chart = essence(&generic.run(&query).await);
        if hand != chart {
            differ.push(format!(
                "{}:\n  hand-written: {hand}\n  chart:        {chart}",
                file.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Beyond the examples: pages after a cursor (the cursors themselves equal, so a client
/// pages on either), references with their counts, a missing and a malformed key, and a
/// tenant reading another's organization.
async fn later_pages_references_errors_and_tenants_answer_the_same(api: &Api) {
    let generic = api.as_chart();
    let first = api
        .run(
            r#"{ organization(slug: "acme") {
                 users(first: 3) { pageInfo { endCursor } }
                 orders(first: 2) { pageInfo { endCursor } }
                 tickets(status: OPEN, first: 2) { pageInfo { endCursor } } }
               user(org: "acme", username: "wile-e-coyote") { tickets(first: 2) { pageInfo { endCursor } } } }"#,
        )
        .await;
    let cursor = |p: &str| first.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    let (users, orders, tickets, mine) = (
        cursor("/data/organization/users/pageInfo/endCursor"),
        cursor("/data/organization/orders/pageInfo/endCursor"),
        cursor("/data/organization/tickets/pageInfo/endCursor"),
        cursor("/data/user/tickets/pageInfo/endCursor"),
    );
    let ticket = api
        .run(r#"{ organization(slug: "acme") { tickets(status: OPEN, first: 1) { nodes { ticketId id } } } }"#)
        .await;
    let plain = ticket
        .pointer("/data/organization/tickets/nodes/0/ticketId")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let queries = [
        format!(
            r#"{{ organization(slug: "acme") {{ name userCount
                 users(first: 3, after: "{users}") {{ totalCount nodes {{ username }} pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} }}
                 orders(first: 2, after: "{orders}") {{ nodes {{ orderId totalCents buyer {{ username }} }} }}
                 tickets(status: OPEN, first: 2, after: "{tickets}") {{ totalCount nodes {{ title }} }} }} }}"#
        ),
        format!(
            r#"{{ user(org: "acme", username: "wile-e-coyote") {{ ticketCount
                 tickets(last: 2, before: "{mine}") {{ nodes {{ ticketId status }} pageInfo {{ hasPreviousPage hasNextPage }} }} }} }}"#
        ),
        format!(
            r#"{{ ticket(id: "{plain}") {{ title version requester {{ name email }} assignee {{ name }}
                 organization {{ slug userCount ticketCount }} }} }}"#
        ),
        r#"{ organization(slug: "no-such-org") { name } user(org: "acme", username: "nobody") { name } }"#.to_owned(),
        r#"{ organization(slug: "Not A Slug") { name } }"#.to_owned(),
        format!(r#"{{ organization(slug: "acme") {{ users(after: "{orders}") {{ nodes {{ name }} }} }} }}"#),
    ];
    let mut differ = Vec::new();
    for q in &queries {
        let hand = essence(&api.run(q).await);
        let chart = essence(&generic.run(q).await);
        if hand != chart {
            differ.push(format!(
                "{q}\n  hand-written: {hand}\n  chart:        {chart}"
            ));
        }
    }
    // Another tenant's organization, and its ticket by id: absent, without a read of it.
    let globex = itemgraph::auth::Access::Tenant {
        org: itemgraph::keys::Slug::parse("globex").unwrap(),
        role: itemgraph::auth::Role::Member,
        subject: Some("homer-simpson".into()),
    };
    for q in [
        r#"{ organization(slug: "acme") { name users { nodes { name } } } viewer { organization { slug } user { username } role } }"#.to_owned(),
        format!(r#"{{ ticket(id: "{plain}") {{ title }} }}"#),
    ] {
        let hand = essence(&api.run_as(&globex, &q, Value::Null).await);
        let chart = essence(&generic.run_as(&globex, &q, Value::Null).await);
        if hand != chart {
            differ.push(format!("(as globex) {q}\n  hand-written: {hand}\n  chart:        {chart}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
