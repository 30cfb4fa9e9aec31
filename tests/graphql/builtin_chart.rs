//! The built-in design served from its chart (`charts/itemgraph.toml`, through
//! `src/graphql`, as any chart is): what the
//! hand-written schema it replaced answered is held by the snapshot, pagination, mutation
//! and subscription suites; this file holds what the chart's schema does beyond it.

use serde_json::Value;

use crate::common::graphql::Api;

on_every_engine!(variables_and_edges_read_a_page_and_its_references_at_once);

/// The operations of a response's requests, in order.
fn operations(r: &Value) -> Vec<String> {
    r.pointer("/extensions/dynamodb/requests")
        .and_then(Value::as_array)
        .map(|rs| {
            rs.iter()
                .map(|x| x["operation"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Page sizes and keys from variables, and references under `edges { node }`: the page in
/// one Query (with its parent where the pattern carries it), and every reference selected
/// under the page's nodes in one batch, however the client spells the selection.
async fn variables_and_edges_read_a_page_and_its_references_at_once(api: &Api) {
    let cases = [
        (
            r#"query OpenTickets($slug: String!, $n: Int!) { organization(slug: $slug) { name
                 tickets(status: OPEN, first: $n) { edges { node { title requester { username } assignee { username } } } } } }"#,
            serde_json::json!({ "slug": "acme", "n": 5 }),
            ["Query", "GetItem", "BatchGetItem"].as_slice(),
        ),
        (
            r#"query($slug: String!, $n: Int) { organization(slug: $slug) {
                 users(first: $n) { edges { cursor node { username organization { slug } } } } } }"#,
            serde_json::json!({ "slug": "acme", "n": 3 }),
            ["Query"].as_slice(),
        ),
        (
            r#"query($org: String!, $u: String!, $n: Int) { user(org: $org, username: $u) { name
                 tickets(first: $n) { edges { node { title requester { name } assignee { name } } } pageInfo { hasNextPage } } } }"#,
            serde_json::json!({ "org": "acme", "u": "wile-e-coyote", "n": 4 }),
            ["Query", "BatchGetItem"].as_slice(),
        ),
    ];
    for (q, vars, expected) in cases {
        let r = api.run_with(q, vars).await;
        assert!(r.get("errors").is_none(), "{r:#}");
        assert_eq!(operations(&r), expected, "{q}\n{r:#}");
    }
}
