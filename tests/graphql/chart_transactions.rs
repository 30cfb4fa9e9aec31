//! DynamoDB's own limits on one transaction, checked before anything is sent: a write
//! that would act twice on one item is `BAD_USER_INPUT` naming the input field that made
//! it, with no request. On the built-in chart with an order's lines keyed by their SKU
//! (two lines of one SKU are one item) and a user's mentor counted on the mentor (a user
//! who is their own mentor is one item twice), on both engines.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::graphql::{error_codes, request_count, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    let mut text = itemgraph::chart::BUILTIN_SOURCE.to_owned();
    for (from, to) in [
        (
            "[enums.Plan]",
            "[kinds.sku]\npattern = \"[A-Z0-9-]{1,20}\"\nmax_length = 20\n\n[enums.Plan]",
        ),
        (
            "key = [\"ORDER#{orderId}#LINE#{lineNo:03}\", \"ORDER#{orderId}#LINE#{lineNo:03}\"]\nindexes.GSI1 = [\"ORDER#{orderId}\", \"LINE#{lineNo:03}\"]",
            "key = [\"ORDER#{orderId}#LINE#{sku}\", \"ORDER#{orderId}#LINE#{sku}\"]\nindexes.GSI1 = [\"ORDER#{orderId}\", \"LINE#{sku}\"]",
        ),
        ("sku = { type = \"string\", max_length = 64 }", "sku = \"sku\""),
        (
            "counts = { organization = \"userCount\" }",
            "counts = { organization = \"userCount\", mentor = \"menteeCount\" }",
        ),
        (
            "orderCount = { type = \"counter\", graphql = false, referrers = \"orders\"",
            "mentor = { type = \"username\", optional = true, graphql = false }\nmenteeCount = { type = \"counter\", graphql = false, referrers = \"mentees\" }\norderCount = { type = \"counter\", graphql = false, referrers = \"orders\"",
        ),
        (
            "organization = { entity = \"Organization\", key = { slug = \"org\" }, description = \"The user's organization.\" }",
            "organization = { entity = \"Organization\", key = { slug = \"org\" }, description = \"The user's organization.\" }\nmentor = { entity = \"User\", key = { org = \"org\", username = \"mentor\" } }",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

on_both_engines_of!(chart, before = organization;
    two_children_of_one_key_are_refused_naming_the_second,
    a_counted_reference_to_the_item_itself_is_refused_naming_it,
);

const CREATE_USER: &str = r#"mutation($input: CreateUserInput!) {
    createUser(input: $input) { user { username } } }"#;

fn user(username: &str, mentor: Option<&str>) -> Value {
    json!({"input": {
        "org": "acme", "username": username, "email": format!("{username}@acme.test"),
        "name": username, "role": "MEMBER", "mentor": mentor,
    }})
}

async fn organization(api: &Api) {
    let r = api
        .run(r#"mutation { createOrganization(input: {slug: "acme", name: "Acme", plan: TEAM}) { organization { slug } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let r = api.run_with(CREATE_USER, user("alice", None)).await;
    assert!(r.get("errors").is_none(), "{r:#}");
}

fn refused(r: &Value, field: &str, says: &str) {
    assert_eq!(error_codes(r), ["BAD_USER_INPUT"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r:#}");
    let message = r["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
    assert_eq!(request_count(r), 0, "nothing is sent: {r:#}");
}

async fn user_count(api: &Api) -> Value {
    api.run(r#"{ organization(slug: "acme") { userCount orderCount } }"#)
        .await["data"]
        .clone()
}

async fn two_children_of_one_key_are_refused_naming_the_second(api: &Api) {
    const PLACE: &str = r#"mutation($input: PlaceOrderInput!) {
        placeOrder(input: $input) { order { totalCents } } }"#;
    let line = |sku: &str| json!({"sku": sku, "description": "A widget", "quantity": 1, "unitPriceCents": 100});
    let before = user_count(api).await;
    let r = api
        .run_with(
            PLACE,
            json!({"input": {"org": "acme", "buyer": "alice", "currency": "USD",
                   "lines": [line("W-1"), line("W-2"), line("W-1")]}}),
        )
        .await;
    refused(
        &r,
        "lines[2].sku",
        "lines[2].sku names the same item as lines[0].sku",
    );
    assert_eq!(user_count(api).await, before);
    // Distinct keys: placed.
    let r = api
        .run_with(
            PLACE,
            json!({"input": {"org": "acme", "buyer": "alice", "currency": "USD",
                   "lines": [line("W-1"), line("W-2")]}}),
        )
        .await;
    assert_eq!(
        r["data"]["placeOrder"]["order"]["totalCents"], "200",
        "{r:#}"
    );
}

async fn a_counted_reference_to_the_item_itself_is_refused_naming_it(api: &Api) {
    let before = user_count(api).await;
    let r = api.run_with(CREATE_USER, user("bob", Some("bob"))).await;
    refused(&r, "mentor", "mentor names the same item as user");
    assert_eq!(user_count(api).await, before);
    // Another user as mentor: created, and counted on the mentor.
    let r = api.run_with(CREATE_USER, user("bob", Some("alice"))).await;
    assert!(r.get("errors").is_none(), "{r:#}");
}
