//! A table served as another app stored it: `examples/charts/corner-shop.toml`, whose items
//! name their entity in `EntityType` in words of their own, keep their attributes under the
//! app's names, prices and quantities as strings of digits, and ids only inside their keys.
//! On both engines:
//!
//! - the items are stored exactly so (read below the chart's forms, as the table holds
//!   them), samples and writes alike: no chart name, no id beside its key, no `Type`;
//! - reads answer in the chart's names and types, the ids read back from the keys, each
//!   access pattern one request as before: a customer and their orders in one Query, a
//!   product's orders in one Query of the index under its stored key names;
//! - creates and updates write the stored form, their conditions decided on what the
//!   table holds (a taken key is `CONFLICT`, an absent item `NOT_FOUND`, a missing
//!   reference `NOT_FOUND`);
//! - an item the app wrote that is of no entity is reported by `itemgraph check`.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::store::{AttributeValue, GetItem, Item, PrimaryKey, Put};

use crate::common::graphql::{error_codes, example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("corner-shop")
}

on_both_engines_of!(chart;
    items_are_stored_in_the_tables_own_names_and_forms,
    reads_answer_in_the_charts_names_one_request_a_pattern,
    writes_store_the_tables_form,
    an_item_of_no_entity_is_reported,
);

async fn raw(api: &Api, pk: &str, sk: &str) -> Item {
    api.raw
        .get_item(GetItem {
            key: PrimaryKey::new(pk, sk),
            consistent_read: true,
        })
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no item at {pk} / {sk}"))
}

fn names(item: &Item) -> Vec<&str> {
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    names
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

async fn items_are_stored_in_the_tables_own_names_and_forms(api: &Api) {
    let customer = raw(api, "c#10001", "c#10001").await;
    assert_eq!(
        names(&customer),
        ["Email", "EntityType", "Name", "PK", "SK"]
    );
    assert_eq!(customer["EntityType"], s("customer"));
    assert_eq!(customer["Email"], s("ada@example.com"));

    let order = raw(api, "c#10001", "o#200001").await;
    assert_eq!(
        names(&order),
        [
            "EntityType",
            "GSI1-PK",
            "GSI1-SK",
            "PK",
            "PlacedAt",
            "ProductSku",
            "Qty",
            "SK",
            "Status",
            "Total"
        ]
    );
    assert_eq!(order["EntityType"], s("order"));
    assert_eq!(order["Total"], s("2500"));
    assert_eq!(order["Qty"], s("2"));
    assert_eq!(order["GSI1-PK"], s("p#BK-100"));

    let product = raw(api, "p#BK-100", "p#BK-100").await;
    assert_eq!(
        names(&product),
        ["EntityType", "PK", "Price", "SK", "Title"]
    );
    assert_eq!(product["Price"], s("1250"));
}

async fn reads_answer_in_the_charts_names_one_request_a_pattern(api: &Api) {
    let r = api
        .run(
            r#"{ customer(customerId: "10001") { id customerId name email
                orders(first: 5) { nodes { id orderId quantity total status placedAt } } } }"#,
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let c = &r["data"]["customer"];
    assert_eq!(c["customerId"], "10001");
    assert_eq!(c["name"], "Ada");
    let orders = c["orders"]["nodes"].as_array().unwrap();
    let ids: Vec<&str> = orders
        .iter()
        .map(|o| o["orderId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["200001", "200003"]);
    assert_eq!(orders[0]["quantity"], 2);
    assert_eq!(orders[0]["total"], "2500");
    assert_eq!(orders[0]["status"], "DELIVERED");
    let sent = requests(&r);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["operation"], "Query");

    // The order read back by its global id: its ids from its key.
    let id = orders[1]["id"].as_str().unwrap();
    let r = api
        .run(&format!(
            r#"{{ node(id: "{id}") {{ ... on Order {{ orderId quantity customer {{ customerId }} product {{ sku price }} }} }} }}"#
        ))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["node"],
        json!({ "orderId": "200003", "quantity": 1, "customer": { "customerId": "10001" },
                "product": { "sku": "LT-200", "price": "2400" } })
    );

    // A product's orders: the index under its stored key names.
    let r = api
        .run(r#"{ product(sku: "BK-100") { title orders(first: 5) { nodes { orderId } } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let ids: Vec<&Value> = r["data"]["product"]["orders"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["orderId"])
        .collect();
    assert_eq!(ids, [&json!("200001"), &json!("200002")]);
    let sent = requests(&r);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let index = sent
        .iter()
        .find(|q| q["index"] == "GSI1")
        .expect("the index's Query");
    assert_eq!(
        index["keyCondition"],
        r#"GSI1-PK = "p#BK-100" AND begins_with(GSI1-SK, "o#")"#
    );
}

async fn writes_store_the_tables_form(api: &Api) {
    writes(api, &chart()).await;
}

async fn writes(api: &Api, chart: &itemgraph::chart::Chart) {
    let typed = chart.table.types_stored;
    let create = r#"mutation($input: CreateOrderInput!) { createOrder(input: $input) { order { id orderId quantity total status } } }"#;
    let input = json!({ "input": { "customerId": "10002", "orderId": "200004", "sku": "LT-200",
        "quantity": 3, "total": "7200", "status": "PLACED", "placedAt": "2026-12-01T08:00:00Z" } });
    let r = api.run_with(create, input.clone()).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["createOrder"]["order"]["quantity"], 3);
    assert_eq!(r["data"]["createOrder"]["order"]["orderId"], "200004");
    let order = raw(api, "c#10002", "o#200004").await;
    assert_eq!(order["Qty"], s("3"));
    assert_eq!(order["Total"], s("7200"));
    assert_eq!(order.get("EntityType"), typed.then(|| s("order")).as_ref());
    assert!(!order.contains_key("orderId") && !order.contains_key("customerId"));
    assert!(!order.contains_key("Type"));

    // The same key again: taken.
    let r = api.run_with(create, input).await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    // A product that is not there.
    let missing = json!({ "input": { "customerId": "10002", "orderId": "200005", "sku": "ZZ-999",
        "quantity": 1, "total": "100", "status": "PLACED", "placedAt": "2026-12-01T08:00:00Z" } });
    let r = api.run_with(create, missing).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");

    let update = r#"mutation($input: UpdateOrderInput!) { updateOrder(input: $input) { order { orderId status quantity } } }"#;
    let r = api
        .run_with(
            update,
            json!({ "input": { "customerId": "10002", "orderId": "200004", "status": "SHIPPED" } }),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["updateOrder"]["order"],
        json!({ "orderId": "200004", "status": "SHIPPED", "quantity": 3 })
    );
    assert_eq!(requests(&r).len(), 1, "{r:#}");
    assert_eq!(
        raw(api, "c#10002", "o#200004").await["Status"],
        s("SHIPPED")
    );
    let r = api
        .run_with(
            update,
            json!({ "input": { "customerId": "10002", "orderId": "299999", "status": "SHIPPED" } }),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");

    let r = api
        .run_with(
            r#"mutation($input: UpdateProductInput!) { updateProduct(input: $input) { product { sku title price } } }"#,
            json!({ "input": { "sku": "BK-100", "price": "1399" } }),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["updateProduct"]["product"],
        json!({ "sku": "BK-100", "title": "A bicycle bell", "price": "1399" })
    );
    let product = raw(api, "p#BK-100", "p#BK-100").await;
    assert_eq!(product["Price"], s("1399"));
    assert!(!product.contains_key("price") && !product.contains_key("sku"));

    let r = api
        .run_with(
            r#"mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { customer { customerId } } }"#,
            json!({ "input": { "customerId": "10001", "email": "x@example.com", "name": "X" } }),
        )
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    api.assert_clean(chart).await;
}

async fn an_item_of_no_entity_is_reported(api: &Api) {
    // The app keeps a cart beside the customer; the chart does not declare carts.
    let cart: Item = [
        ("PK", s("c#10001")),
        ("SK", s("cart#10001")),
        ("EntityType", s("cart")),
        ("Items", AttributeValue::N("2".into())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    api.raw.put_item(Put::new(cart)).await.unwrap();
    let report = itemgraph::check::check_chart(api.store.as_ref(), &chart())
        .await
        .unwrap();
    let found: Vec<String> = report.violations.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        ["undecodable cart (c#10001 | cart#10001): does not decode: an item of unknown type `cart`"]
    );
    // Outside its range, every read goes on as before.
    let r = api
        .run(r#"{ customer(customerId: "10002") { name orders(first: 5) { nodes { orderId } } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
}

/// The same table whose items hold no type attribute at all: each is told by its keys.
mod told_by_keys {
    use super::*;

    fn chart() -> Arc<itemgraph::chart::Chart> {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("examples/charts/corner-shop.toml"),
        )
        .unwrap()
        .replace("type_attribute = \"EntityType\"", "type_attribute = false")
        .replace("type_value = \"customer\"\n", "")
        .replace("type_value = \"order\"\n", "")
        .replace("type_value = \"product\"\n", "");
        Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
    }

    on_both_engines_of!(chart; items_are_read_and_written_by_their_keys);

    async fn items_are_read_and_written_by_their_keys(api: &Api) {
        let product = raw(api, "p#BK-100", "p#BK-100").await;
        assert_eq!(names(&product), ["PK", "Price", "SK", "Title"]);
        super::reads_answer_in_the_charts_names_one_request_a_pattern(api).await;
        writes(api, &chart()).await;
    }
}
