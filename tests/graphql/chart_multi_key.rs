//! An index of a multi-attribute key (`examples/charts/corner-shop.toml`'s
//! `ByProductStatus`: the orders' own `ProductSku`, then `Status` and `PlacedAt`), served
//! on both engines: nothing but the items' own attributes is written for it, a Query of a
//! product and a status (and a time from which) is one request, its pages resume by
//! cursor in both directions, and the chart's rules refuse what DynamoDB's would.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::store::{Query, SortCondition};

use crate::common::graphql::{error_codes, example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("corner-shop")
}

on_both_engines_of!(chart;
    the_items_own_attributes_are_the_key,
    a_product_and_a_status_are_one_query_paged_both_ways,
);

/// The shop with its index sorted by a number after the status: `Qty`, stored as a number.
fn by_quantity() -> Arc<itemgraph::chart::Chart> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/corner-shop.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace(
            "quantity = { type = \"int\", min = 1, max = 99, stored = \"Qty\", stored_as = \"string\" }",
            "quantity = { type = \"int\", min = 1, max = 99, stored = \"Qty\" }",
        )
        .replace(
            r#"sort_key = ["Status", "PlacedAt"]"#,
            r#"sort_key = ["Status", { name = "Qty", type = "N" }]"#,
        )
        .replace("\"{placedAt}\"]", "\"{quantity}\"]")
        .replace("PlacedAt >= {since?}", "Qty >= {least}")
        .replace("forward = false\nchildren = \"Order\"\nfield = \"Product.ordersIn\"", "forward = true\nchildren = \"Order\"\nfield = \"Product.ordersIn\"");
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// The shop with a Scan of its multi-attribute index: every order in it, in its key order.
fn scanned() -> Arc<itemgraph::chart::Chart> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/corner-shop.toml");
    let text = std::fs::read_to_string(path).unwrap().replace(
        "[mutations.createCustomer]",
        "[query.everyOrder]\nentity = \"Order\"\npattern = 11\n\n[patterns.11]\nname = \"Every order\"\nrequest = \"Scan\"\nindex = \"ByProductStatus\"\nchildren = \"Order\"\nfield = \"Query.everyOrder\"\n\n[mutations.createCustomer]",
    );
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

mod scan {
    use super::*;
    on_both_engines_of!(scanned;
        a_scan_of_the_index_pages_by_its_last_key,
    );
}

/// The three sample orders, one a page: each page one Scan, the next from the last key.
async fn a_scan_of_the_index_pages_by_its_last_key(api: &Api) {
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let r = api
            .run(&format!(
                r#"{{ everyOrder(first: 1{after}) {{ nodes {{ orderId }} pageInfo {{ hasNextPage endCursor }} }} }}"#
            ))
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
        let sent = requests(&r);
        assert_eq!(sent.len(), 1, "{sent:#?}");
        assert_eq!(sent[0]["operation"], "Scan");
        let conn = &r["data"]["everyOrder"];
        for n in conn["nodes"].as_array().unwrap() {
            seen.push(n["orderId"].as_str().unwrap().to_owned());
        }
        if conn["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = format!(
            r#", after: "{}""#,
            conn["pageInfo"]["endCursor"].as_str().unwrap()
        );
        assert!(seen.len() < 10, "{seen:?}");
    }
    seen.sort();
    assert_eq!(seen, ["200001", "200002", "200003"]);
}

/// A chess league: an index keyed by two partition attributes (`Season`, `Division`) and
/// two number sort attributes (`Round`, `Board`).
fn chess() -> Arc<itemgraph::chart::Chart> {
    let text = include_str!("../fixtures/charts/chess-league.toml");
    Arc::new(itemgraph::chart::parse(text).unwrap_or_else(|e| panic!("{e}")))
}

mod two_partition_attributes {
    use super::*;
    on_both_engines_of!(chess;
        a_season_and_a_division_are_one_query_by_round_and_board,
    );
}

/// The division's games by round, then board (numbers by value), two a page, the second
/// page from the cursor; a round's games from a board on; both partition values given.
async fn a_season_and_a_division_are_one_query_by_round_and_board(api: &Api) {
    let page = |after: &str| {
        format!(
            r#"{{ divisionGames(season: "2026", division: OPEN, first: 2{after}) {{
                nodes {{ gameId }} pageInfo {{ hasNextPage endCursor }} }} }}"#
        )
    };
    let ids = |r: &Value, field: &str| -> Vec<String> {
        r["data"][field]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["gameId"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = api.run(&page("")).await;
    assert!(first.get("errors").is_none(), "{first:#}");
    assert_eq!(ids(&first, "divisionGames"), ["1002", "1001"]);
    let sent = requests(&first);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(
        sent[0]["keyCondition"],
        "Season = \"2026\" AND Division = \"OPEN\""
    );
    let end = first["data"]["divisionGames"]["pageInfo"]["endCursor"]
        .as_str()
        .unwrap();
    let next = api.run(&page(&format!(r#", after: "{end}""#))).await;
    assert!(next.get("errors").is_none(), "{next:#}");
    assert_eq!(ids(&next, "divisionGames"), ["1003"]);
    let round = api
        .run(r#"{ roundGames(season: "2026", division: OPEN, round: 1, board: 2, first: 5) { nodes { gameId } } }"#)
        .await;
    assert!(round.get("errors").is_none(), "{round:#}");
    assert_eq!(ids(&round, "roundGames"), ["1001"]);
    // Another division's cursor reads nothing of this one.
    let other = api
        .run(&format!(
            r#"{{ divisionGames(season: "2026", division: MAJOR, first: 2, after: "{end}") {{ nodes {{ gameId }} }} }}"#
        ))
        .await;
    assert_eq!(error_codes(&other), ["INVALID_CURSOR"], "{other:#}");
}

mod numbered {
    use super::*;
    on_both_engines_of!(by_quantity;
        a_number_in_the_key_pages_by_value,
    );
}

/// Quantities 9, 10 and 12 read from 9 up, two a page: `10` follows `9` by value (not by
/// text, where it would come first), and the cursor at `10` is within `Qty >= 9`.
async fn a_number_in_the_key_pages_by_value(api: &Api) {
    for (id, qty) in [("300001", 10), ("300002", 9), ("300003", 12), ("300004", 8)] {
        let r = api
            .run_with(
                "mutation($input: CreateOrderInput!) { createOrder(input: $input) { order { orderId } } }",
                json!({ "input": { "customerId": "10002", "orderId": id, "sku": "BK-100",
                    "quantity": qty, "total": "1250", "status": "PLACED",
                    "placedAt": "2026-12-01T09:00:00Z" } }),
            )
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    let page = |after: &str| {
        format!(
            r#"{{ product(sku: "BK-100") {{ ordersIn(status: PLACED, least: 9, first: 2{after}) {{
                nodes {{ quantity }} pageInfo {{ hasNextPage endCursor }} }} }} }}"#
        )
    };
    let first = api.run(&page("")).await;
    assert!(first.get("errors").is_none(), "{first:#}");
    let conn = &first["data"]["product"]["ordersIn"];
    assert_eq!(
        conn["nodes"],
        json!([{ "quantity": 9 }, { "quantity": 10 }])
    );
    assert_eq!(conn["pageInfo"]["hasNextPage"], true);
    let end = conn["pageInfo"]["endCursor"].as_str().unwrap();
    let next = api.run(&page(&format!(r#", after: "{end}""#))).await;
    assert!(next.get("errors").is_none(), "{next:#}");
    assert_eq!(
        next["data"]["product"]["ordersIn"]["nodes"],
        json!([{ "quantity": 12 }])
    );
}

async fn the_items_own_attributes_are_the_key(api: &Api) {
    // The order's stored attributes (`tests/graphql/chart_stored.rs` holds them: no
    // synthetic key beside `ProductSku`, `Status` and `PlacedAt`) are the index's key.
    let out = api
        .raw
        .query(Query {
            index: Some("ByProductStatus".into()),
            sort: Some(SortCondition::Eq("DELIVERED".into())),
            ..Query::partition("BK-100")
        })
        .await
        .unwrap();
    assert_eq!(out.items.len(), 1, "{out:?}");
}

async fn a_product_and_a_status_are_one_query_paged_both_ways(api: &Api) {
    for (id, at) in [
        ("300001", "2026-12-01T09:00:00Z"),
        ("300002", "2026-12-02T09:00:00Z"),
        ("300003", "2026-12-03T09:00:00Z"),
    ] {
        let r = api
            .run_with(
                "mutation($input: CreateOrderInput!) { createOrder(input: $input) { order { orderId } } }",
                json!({ "input": { "customerId": "10002", "orderId": id, "sku": "BK-100",
                    "quantity": 1, "total": "1250", "status": "PLACED", "placedAt": at } }),
            )
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    let page = |args: &str| {
        format!(
            r#"{{ product(sku: "BK-100") {{ ordersIn({args}) {{ nodes {{ orderId placedAt }}
                pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} }} }} }}"#
        )
    };
    let ids = |r: &Value| -> Vec<String> {
        r["data"]["product"]["ordersIn"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["orderId"].as_str().unwrap().to_owned())
            .collect()
    };
    // Newest first, two a page: one Query of the index, by product and status.
    let first = api.run(&page("status: PLACED, first: 2")).await;
    assert!(first.get("errors").is_none(), "{first:#}");
    assert_eq!(ids(&first), ["300003", "300002"]);
    let info = &first["data"]["product"]["ordersIn"]["pageInfo"];
    assert_eq!(info["hasNextPage"], true);
    let sent = requests(&first);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let query = sent.iter().find(|r| r["operation"] == "Query").unwrap();
    assert_eq!(query["index"], "ByProductStatus");
    assert_eq!(
        query["keyCondition"],
        "ProductSku = \"BK-100\" AND Status = \"PLACED\""
    );
    // The next page, from the cursor: the rest.
    let end = info["endCursor"].as_str().unwrap();
    let next = api
        .run(&page(&format!(
            r#"status: PLACED, first: 2, after: "{end}""#
        )))
        .await;
    assert!(next.get("errors").is_none(), "{next:#}");
    assert_eq!(ids(&next), ["300001"]);
    assert_eq!(
        next["data"]["product"]["ordersIn"]["pageInfo"]["hasNextPage"],
        false
    );
    // Backward from the last page's start: the two before it, in the connection's order.
    let start = next["data"]["product"]["ordersIn"]["pageInfo"]["startCursor"]
        .as_str()
        .unwrap();
    let back = api
        .run(&page(&format!(
            r#"status: PLACED, last: 2, before: "{start}""#
        )))
        .await;
    assert!(back.get("errors").is_none(), "{back:#}");
    assert_eq!(ids(&back), ["300003", "300002"]);
    // A range on the last sort attribute given: placed at `since` or after.
    let since = api
        .run(&page(
            r#"status: PLACED, since: "2026-12-02T00:00:00Z", first: 5"#,
        ))
        .await;
    assert!(since.get("errors").is_none(), "{since:#}");
    assert_eq!(ids(&since), ["300003", "300002"]);
    // Another status: the samples' one delivered order; a cursor of PLACED reads nothing
    // of it.
    let delivered = api.run(&page("status: DELIVERED, first: 5")).await;
    assert_eq!(ids(&delivered), ["200001"]);
    let crossed = api
        .run(&page(&format!(
            r#"status: DELIVERED, first: 2, after: "{end}""#
        )))
        .await;
    assert_eq!(error_codes(&crossed), ["INVALID_CURSOR"], "{crossed:#}");
}
