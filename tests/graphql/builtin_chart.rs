//! The built-in chart served from its file (`src/graphql/charted`, with the design's
//! writes of `src/graphql/builtin.rs`), beside the hand-written schema over the same demo
//! data: every example operation of
//! `examples/` (each access pattern of the README's table) answers the same data with the
//! same DynamoDB requests. What the hand-written schema answered, the chart's schema answers.

use std::path::Path;

use serde_json::Value;

use crate::common::graphql::{normalized, Api};

on_every_engine!(
    every_example_answers_the_same_on_the_generic_path,
    later_pages_references_errors_and_tenants_answer_the_same,
    mutations_answer_the_same_through_the_chart,
    variables_and_edges_answer_the_same,
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
    let (generic, api) = (api, &api.as_derived());
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
    let (generic, api) = (api, &api.as_derived());
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

/// What a mutation's response says that does not depend on the ids it generated: its data
/// (with the organization's slug written `ORG`), its errors' codes and fields, and the
/// operations of its requests.
fn mutation_essence(r: &Value, slug: &str) -> Value {
    let data = serde_json::to_string(&r["data"])
        .unwrap()
        .replace(slug, "ORG");
    let errors: Vec<Value> = r
        .get("errors")
        .and_then(Value::as_array)
        .map(|es| {
            es.iter()
                .map(|e| {
                    serde_json::json!([
                        e["extensions"]["code"],
                        e["extensions"]["field"],
                        e["path"]
                    ])
                })
                .collect()
        })
        .unwrap_or_default();
    let requests: Vec<Value> = r
        .pointer("/extensions/dynamodb/requests")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|x| serde_json::json!([x["operation"], x["index"]]))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({ "data": data, "errors": errors, "requests": requests })
}

/// A run of every mutation, and the errors they answer, against `slug`: the essence of
/// each response.
async fn mutations(api: &Api, slug: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut run = |r: Value| out.push(mutation_essence(&r, slug));
    run(api.run(&format!(
        r#"mutation {{ createOrganization(input: {{slug: "{slug}", name: "Co", plan: FREE}}) {{
             organization {{ slug name plan userCount ticketCount orderCount users(first: 5) {{ totalCount nodes {{ username }} }} }} }} }}"#
    )).await);
    let user = format!(
        r#"mutation {{ createUser(input: {{org: "{slug}", username: "ann", email: "ann@{slug}.test", name: "Ann", role: ADMIN}}) {{
             user {{ username email role ticketCount organization {{ slug userCount }} }} }} }}"#
    );
    run(api.run(&user).await);
    run(api.run(&user).await);
    let ticket = api
        .run(&format!(
            r#"mutation {{ createTicket(input: {{org: "{slug}", requester: "ann", title: "T", body: "B", priority: HIGH}}) {{
                 ticket {{ ticketId title status priority version requester {{ username ticketCount }} organization {{ ticketCount }} }} }} }}"#
        ))
        .await;
    let ticket_id = ticket
        .pointer("/data/createTicket/ticket/ticketId")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{ticket}"))
        .to_owned();
    let mut ticket = ticket;
    ticket["data"]["createTicket"]["ticket"]["ticketId"] = Value::Null;
    run(ticket);
    let update = format!(
        r#"mutation {{ updateTicket(input: {{ticketId: "{ticket_id}", expectedVersion: 1, status: PENDING}}) {{
             ticket {{ status version assignee {{ name }} }} }} }}"#
    );
    run(api.run(&update).await);
    run(api.run(&update).await);
    run(api.run(&format!(
        r#"mutation {{ updateUser(input: {{org: "{slug}", username: "ann", name: "Ann B"}}) {{ user {{ name email }} }} }}"#
    )).await);
    let order = api
        .run(&format!(
            r#"mutation {{ placeOrder(input: {{org: "{slug}", buyer: "ann", currency: "USD", clientToken: "t-1",
                 lines: [{{sku: "A", description: "a", quantity: 2, unitPriceCents: "150"}}, {{sku: "B", description: "b", quantity: 1, unitPriceCents: 7}}]}}) {{
                 order {{ orderId status totalCents lines {{ lineNo amountCents }} buyer {{ username }} }} replayed }} }}"#
        ))
        .await;
    let order_id = order
        .pointer("/data/placeOrder/order/orderId")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{order}"))
        .to_owned();
    let mut order = order;
    order["data"]["placeOrder"]["order"]["orderId"] = Value::Null;
    run(order);
    run(api.run(&format!(
        r#"mutation {{ updateOrderStatus(input: {{orderId: "{order_id}", status: PAID, expectedVersion: 1}}) {{ order {{ status version }} }} }}"#
    )).await);
    run(api.run(&format!(
        r#"mutation {{ updateOrderStatus(input: {{orderId: "{order_id}", status: PLACED, expectedVersion: 2}}) {{ order {{ status }} }} }}"#
    )).await);
    run(api.run(&format!(
        r#"mutation {{ deleteUser(input: {{org: "{slug}", username: "ann"}}) {{ deletedUserId user {{ name }} }} }}"#
    )).await);
    run(api.run(&format!(
        r#"mutation {{ createUser(input: {{org: "{slug}", username: "bob", email: "bob@{slug}.test", name: "Bob", role: MEMBER}}) {{ user {{ username }} }} }}"#
    )).await);
    let deleted = api
        .run(&format!(
            r#"mutation {{ deleteUser(input: {{org: "{slug}", username: "bob"}}) {{ deletedUserId user {{ name role }} }} }}"#
        ))
        .await;
    let mut deleted = deleted;
    deleted["data"]["deleteUser"]["deletedUserId"] =
        Value::Bool(deleted["data"]["deleteUser"]["deletedUserId"].is_string());
    run(deleted);
    run(api.run(
        r#"mutation { createTicket(input: {org: "no-such-org", requester: "ann", title: "T", body: "B", priority: LOW}) { ticket { title } } }"#,
    ).await);
    run(api.run(&format!(
        r#"mutation {{ placeOrder(input: {{org: "{slug}", buyer: "ann", currency: "usd", lines: []}}) {{ replayed }} }}"#
    )).await);
    run(api.run(&format!(
        r#"mutation {{ placeOrder(input: {{org: "{slug}", buyer: "ann", currency: "USD", lines: [{{sku: "A", description: "a", quantity: 1, unitPriceCents: "1.5"}}]}}) {{ replayed }} }}"#
    )).await);
    out
}

/// The design's mutations on the schema built from its chart (registered beside the
/// chart's reads, [`itemgraph::graphql`]'s `builtin`) answer as the hand-written schema's:
/// the same data, codes, fields and requests, for each write and each refusal.
async fn mutations_answer_the_same_through_the_chart(api: &Api) {
    let (generic, api) = (api, &api.as_derived());
    let hand = mutations(api, "hand-co").await;
    let chart = mutations(generic, "chart-co").await;
    assert_eq!(hand.len(), chart.len());
    let differ: Vec<String> = hand
        .iter()
        .zip(&chart)
        .enumerate()
        .filter(|(_, (h, c))| h != c)
        .map(|(i, (h, c))| format!("step {i}:\n  hand-written: {h}\n  chart:        {c}"))
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Page sizes and keys from variables, and references under `edges { node }`: the same
/// data, in no more requests, the references of a page in one batch.
async fn variables_and_edges_answer_the_same(api: &Api) {
    let (generic, api) = (api, &api.as_derived());
    let cases = [
        (
            r#"query OpenTickets($slug: String!, $n: Int!) { organization(slug: $slug) { name
                 tickets(status: OPEN, first: $n) { edges { node { title requester { username } assignee { username } } } } } }"#,
            serde_json::json!({ "slug": "acme", "n": 5 }),
        ),
        (
            r#"query($slug: String!, $n: Int) { organization(slug: $slug) {
                 users(first: $n) { edges { cursor node { username organization { slug } } } } } }"#,
            serde_json::json!({ "slug": "acme", "n": 3 }),
        ),
        (
            r#"query($org: String!, $u: String!, $n: Int) { user(org: $org, username: $u) { name
                 tickets(last: $n) { edges { node { title assignee { name } } } pageInfo { hasPreviousPage } } } }"#,
            serde_json::json!({ "org": "acme", "u": "wile-e-coyote", "n": 2 }),
        ),
    ];
    let mut differ = Vec::new();
    for (q, vars) in &cases {
        let hand = essence(&api.run_with(q, vars.clone()).await);
        let chart = essence(&generic.run_with(q, vars.clone()).await);
        // The same answer, in no more requests: the chart's schema asks for every
        // reference under a page at once, where the hand-written one may split the first
        // node's requester from the rest (a GetItem, then a BatchGetItem).
        let count = |e: &Value| e["requests"].as_array().map_or(0, Vec::len);
        let batches = |e: &Value| {
            e["requests"]
                .as_array()
                .map_or(0, |rs| rs.iter().filter(|r| r[0] == "BatchGetItem").count())
        };
        if hand["data"] != chart["data"]
            || hand["errors"] != chart["errors"]
            || count(&chart) > count(&hand)
            || batches(&chart) > 1
        {
            differ.push(format!(
                "{q}\n  hand-written: {hand}\n  chart:        {chart}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
