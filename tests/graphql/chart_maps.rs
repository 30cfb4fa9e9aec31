//! Map attributes, by chart alone: a small chart of its own (a pantry whose stock is a
//! required map of counts, whose shelves are an optional map of a shape that holds a map of
//! labels), on both engines. A map reads as its entries in the order of their keys; every
//! write takes it whole as the list of its entries (a create's, an update's, inside a
//! shape), each key checked, stored as one DynamoDB map; one an item lacks reads as null
//! when optional and as no entries when required, never as an error.

use std::collections::HashMap;
use std::sync::Arc;

use itemgraph::store::{AttributeValue, GetItem, Item, PrimaryKey, Put};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, request_count, Api};

const CHART: &str = r#"
format = 1
name = "pantry"
description = "Pantries: what each holds, and on which shelf."

[table]
name = "pantry"
partition_key = "PK"
sort_key = "SK"

[shapes.Shelf]
description = "One shelf of a pantry."
attributes = { height = { type = "int", min = 1, max = 300, description = "Centimetres." }, labels = { type = "map", of = "string", optional = true, max_items = 4, description = "Labels, by where on the shelf they are." } }

[entities.Pantry]
description = "A pantry."
key = ["PANTRY#{slug}", "PANTRY#{slug}"]

[entities.Pantry.attributes]
slug = "slug"
name = { type = "string", max_length = 100 }
stock = { type = "map", of = "int", max_items = 3, description = "How many of each thing it holds." }
shelves = { type = "map", of = "Shelf", optional = true, max_items = 5 }

[query.pantry]
entity = "Pantry"
pattern = 1

[patterns.1]
name = "Pantry by slug"
request = "GetItem"
entity = "Pantry"
field = "Query.pantry"

[patterns.2]
name = "Any entity by global id"
request = "BatchGetItem"
field = "Query.nodes"

[patterns.3]
name = "Open a pantry"
request = "PutItem"
entity = "Pantry"
field = "Mutation.openPantry"

[patterns.4]
name = "Restock a pantry"
request = "UpdateItem"
entity = "Pantry"
field = "Mutation.restockPantry"

[mutations.openPantry]
entity = "Pantry"
action = "create"
pattern = 3

[mutations.restockPantry]
entity = "Pantry"
action = "update"
pattern = 4
fields = ["stock", "shelves"]

# Stored without its shelves.
[[samples.Pantry]]
slug = "corner"
name = "The corner pantry"
stock = { flour = 2, eggs = 6 }
"#;

fn chart() -> Arc<itemgraph::chart::Chart> {
    Arc::new(itemgraph::chart::parse(CHART).unwrap_or_else(|e| panic!("{e}")))
}

#[tokio::test]
async fn embedded() {
    let api = Api::chart(chart(), None)
        .await
        .expect("the embedded engine");
    maps_are_written_whole_and_read_as_their_entries(&api).await;
    api.finish().await;
}

#[tokio::test]
async fn dynamodb() {
    let Some(api) = Api::chart(chart(), Some("maps")).await else {
        return;
    };
    maps_are_written_whole_and_read_as_their_entries(&api).await;
    api.finish().await;
}

const SELECTED: &str =
    "name stock { key value } shelves { key value { height labels { key value } } }";

fn read() -> String {
    format!("query($slug: String!) {{ pantry(slug: $slug) {{ {SELECTED} }} }}")
}

fn open() -> String {
    format!("mutation($input: OpenPantryInput!) {{ openPantry(input: $input) {{ pantry {{ {SELECTED} }} }} }}")
}

fn restock() -> String {
    format!("mutation($input: RestockPantryInput!) {{ restockPantry(input: $input) {{ pantry {{ {SELECTED} }} }} }}")
}

fn ok(r: &Value) {
    assert!(r.get("errors").is_none(), "{r:#}");
}

async fn stored(api: &Api, slug: &str) -> Item {
    let key = format!("PANTRY#{slug}");
    api.store
        .get_item(GetItem {
            key: PrimaryKey::new(key.clone(), key),
            consistent_read: true,
        })
        .await
        .unwrap()
        .expect("the pantry's item")
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

async fn maps_are_written_whole_and_read_as_their_entries(api: &Api) {
    // A sample stored without its optional map: that map is null, the required one its
    // entries in the order of their keys.
    let r = api.run_with(&read(), json!({"slug": "corner"})).await;
    ok(&r);
    assert_eq!(
        r["data"]["pantry"],
        json!({"name": "The corner pantry", "shelves": null,
               "stock": [{"key": "eggs", "value": 6}, {"key": "flour", "value": 2}]}),
        "{r:#}"
    );

    // Created with entries, a shape's map among them: one PutItem, one DynamoDB map each.
    let shelves = json!([{"key": "top", "value": {"height": 40, "labels": [{"key": "left", "value": "Tea"}]}}]);
    let r = api
        .run_with(
            &open(),
            json!({"input": {"slug": "annex", "name": "The annex",
                "stock": [{"key": "rice", "value": 4}, {"key": "beans", "value": 0}],
                "shelves": shelves.clone()}}),
        )
        .await;
    ok(&r);
    assert_eq!(request_count(&r), 1, "{r:#}");
    let created = json!({"name": "The annex", "shelves": shelves.clone(),
        "stock": [{"key": "beans", "value": 0}, {"key": "rice", "value": 4}]});
    assert_eq!(r["data"]["openPantry"]["pantry"], created, "{r:#}");
    let r = api.run_with(&read(), json!({"slug": "annex"})).await;
    ok(&r);
    assert_eq!(r["data"]["pantry"], created, "{r:#}");
    let item = stored(api, "annex").await;
    assert_eq!(
        item["stock"],
        AttributeValue::M(HashMap::from([
            ("rice".to_owned(), n(4)),
            ("beans".to_owned(), n(0))
        ]))
    );
    let AttributeValue::M(by_shelf) = &item["shelves"] else {
        panic!("shelves is a map: {item:?}")
    };
    let AttributeValue::M(top) = &by_shelf["top"] else {
        panic!("a shelf is a map: {item:?}")
    };
    assert_eq!(top["height"], n(40));
    assert_eq!(
        top["labels"],
        AttributeValue::M(HashMap::from([(
            "left".to_owned(),
            AttributeValue::S("Tea".to_owned())
        )]))
    );

    // An update takes a map whole: the entries it leaves out are gone. Null removes the
    // optional map; the required one refuses it.
    let r = api
        .run_with(
            &restock(),
            json!({"input": {"slug": "annex", "stock": [{"key": "tea", "value": 1}]}}),
        )
        .await;
    ok(&r);
    assert_eq!(request_count(&r), 1, "{r:#}");
    assert_eq!(
        r["data"]["restockPantry"]["pantry"]["stock"],
        json!([{"key": "tea", "value": 1}]),
        "{r:#}"
    );
    assert_eq!(
        r["data"]["restockPantry"]["pantry"]["shelves"], shelves,
        "{r:#}"
    );
    let r = api
        .run_with(
            &restock(),
            json!({"input": {"slug": "annex", "stock": [], "shelves": null}}),
        )
        .await;
    ok(&r);
    assert_eq!(
        r["data"]["restockPantry"]["pantry"],
        json!({"name": "The annex", "stock": [], "shelves": null}),
        "{r:#}"
    );
    assert_eq!(
        stored(api, "annex").await["stock"],
        AttributeValue::M(HashMap::new())
    );
    let r = api
        .run_with(
            &restock(),
            json!({"input": {"slug": "annex", "stock": null}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "stock", "{r:#}");

    // Refused before anything is written, naming the field: a blank key, a key given twice,
    // more entries than `max_items`, a value its type refuses (a shelf's height), a shape's
    // map past its own `max_items`.
    let entry = |k: &str, v: i64| json!({"key": k, "value": v});
    let refusals = [
        (json!([entry(" ", 1)]), None, "stock.key"),
        (
            json!([entry("rice", 1), entry("rice", 2)]),
            None,
            "stock.key",
        ),
        (
            json!([entry("a", 1), entry("b", 1), entry("c", 1), entry("d", 1)]),
            None,
            "stock",
        ),
        (
            json!([]),
            Some(json!([{"key": "low", "value": {"height": 0}}])),
            "shelves.height",
        ),
        (
            json!([]),
            Some(json!([{"key": "low", "value": {"height": 10, "labels": [
                {"key": "a", "value": "A"}, {"key": "b", "value": "B"},
                {"key": "c", "value": "C"}, {"key": "d", "value": "D"},
                {"key": "e", "value": "E"}]}}])),
            "shelves.labels",
        ),
    ];
    for (stock, shelves, field) in refusals {
        let r = api
            .run_with(
                &open(),
                json!({"input": {"slug": "refused", "name": "Refused", "stock": stock, "shelves": shelves}}),
            )
            .await;
        assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r:#}");
    }
    let r = api.run_with(&read(), json!({"slug": "refused"})).await;
    assert_eq!(r["data"]["pantry"], Value::Null, "{r:#}");

    // An item some other writer stored without its required map: no entries, not an
    // error.
    let mut bare = Item::new();
    for (attr, v) in [
        ("PK", "PANTRY#bare"),
        ("SK", "PANTRY#bare"),
        ("Type", "Pantry"),
        ("slug", "bare"),
        ("name", "Bare"),
    ] {
        bare.insert(attr.to_owned(), AttributeValue::S(v.to_owned()));
    }
    api.store.put_item(Put::new(bare)).await.unwrap();
    let r = api.run_with(&read(), json!({"slug": "bare"})).await;
    ok(&r);
    assert_eq!(
        r["data"]["pantry"],
        json!({"name": "Bare", "stock": [], "shelves": null}),
        "{r:#}"
    );

    let report = itemgraph::check::check_chart(api.store.as_ref(), &chart())
        .await
        .unwrap();
    assert!(report.is_clean(), "{report}: {:#?}", report.violations);
}
