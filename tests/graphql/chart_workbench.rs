//! NoSQL Workbench models in and out, served: each model of `examples/models/` (written
//! for these tests, of designs described in them) drafted into a chart by `chart import`
//! that `chart check` passes with no TODO left, served over the model's own sample items as
//! the model stores them, on both engines, every access pattern one request (an index's
//! keys-only Query and the BatchGetItem of what it found, two); and a chart written out by
//! `chart export` drafted back into one that serves its samples the same.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::chart::workbench::{export, import, Model};
use itemgraph::store::Item;

use crate::common::graphql::{requests, Api};

fn model(name: &str) -> Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("examples/models/{name}.json"));
    Model::parse(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

/// The chart `chart import` drafts from `model`, checked, with no advice of its TODOs.
fn drafted(model: &Model) -> Arc<itemgraph::chart::Chart> {
    let d = import::import(model).unwrap();
    assert_eq!(d.todos, Vec::<String>::new(), "{}", d.text);
    let chart = itemgraph::chart::parse(&d.text).unwrap_or_else(|e| panic!("{e}\n{}", d.text));
    let todos: Vec<_> = itemgraph::chart::advice::advise(&chart)
        .into_iter()
        .filter(|a| a.rule == "import-todo")
        .collect();
    assert!(todos.is_empty(), "{todos:?}");
    Arc::new(chart)
}

/// The model's sample items, of every table, each with its table's place in `chart`'s.
fn items(model: &Model, chart: &itemgraph::chart::Chart) -> Vec<(usize, Item)> {
    model
        .data_model
        .iter()
        .flat_map(|t| {
            let at = chart
                .tables
                .iter()
                .position(|x| x.name == t.table_name)
                .unwrap_or(0);
            t.items().into_iter().map(move |(_, i)| (at, i))
        })
        .collect()
}

/// `query` answered over `model`'s items on each engine: its data and its requests' operations.
async fn served(
    model: &Model,
    chart: &Arc<itemgraph::chart::Chart>,
    query: &str,
    prefix: &str,
) -> Vec<(Value, Vec<String>)> {
    let mut out = Vec::new();
    for dynamodb in [None, Some(prefix)] {
        let Some(api) = Api::chart_with_stored(chart.clone(), items(model, chart), dynamodb).await
        else {
            continue;
        };
        let r = api.run(query).await;
        assert!(r.get("errors").is_none(), "{r:#}");
        // Sorted: some are sent at once.
        let mut ops: Vec<String> = requests(&r)
            .iter()
            .map(|q| q["operation"].as_str().unwrap().to_owned())
            .collect();
        ops.sort();
        out.push((r["data"].clone(), ops));
        api.assert_clean(chart).await;
        api.finish().await;
    }
    assert!(!out.is_empty());
    // Both engines alike.
    assert!(out.windows(2).all(|w| w[0] == w[1]), "{out:#?}");
    out
}

#[tokio::test]
async fn a_shop_model_is_served_as_its_app_stored_it() {
    let m = model("shop");
    let chart = drafted(&m);
    assert_eq!(chart.table.type_attribute, "EntityType");
    assert_eq!(chart.entities["Product"].type_value, "product");
    let out = served(
        &m,
        &chart,
        r#"{ customer(customerId: "48211") { name email orders { nodes { orderId sku quantity placedAt } } } }"#,
        "wb-shop",
    )
    .await;
    let (data, ops) = &out[0];
    assert_eq!(
        data["customer"],
        json!({ "name": "Lena", "email": "lena@example.com", "orders": { "nodes": [
            { "orderId": "900017", "sku": "TROWEL", "quantity": 2, "placedAt": "2026-11-28T14:02:00Z" },
            { "orderId": "900020", "sku": "SHEARS", "quantity": 1, "placedAt": "2026-12-01T09:40:00Z" }
        ] } })
    );
    assert_eq!(ops, &["GetItem", "Query"]);
    // A product's orders through the index, the price stored as a string read as a number.
    let out = served(
        &m,
        &chart,
        r#"{ product(sku: "TROWEL") { name price orders { nodes { orderId quantity } } } }"#,
        "wb-shop-2",
    )
    .await;
    let (data, _) = &out[0];
    assert_eq!(data["product"]["price"], 1450);
    assert_eq!(
        data["product"]["orders"]["nodes"],
        json!([{ "orderId": "900017", "quantity": 2 }, { "orderId": "900018", "quantity": 5 }])
    );
}

#[tokio::test]
async fn a_simple_key_sessions_model_is_served_by_its_index_keyed_by_user() {
    let m = model("sessions");
    let chart = drafted(&m);
    assert!(chart.table.sort_key.is_none());
    assert_eq!(chart.table.time_to_live.as_deref(), Some("ttl"));
    let out = served(
        &m,
        &chart,
        r#"{ sessionsByUsername(username: "jordan") { nodes { sessionToken username createdAt } } }"#,
        "wb-sessions",
    )
    .await;
    let (data, ops) = &out[0];
    let tokens: Vec<&str> = data["sessionsByUsername"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["sessionToken"].as_str().unwrap())
        .collect();
    assert_eq!(tokens.len(), 2, "{data}");
    assert_eq!(ops, &["BatchGetItem", "Query"]);
}

#[tokio::test]
async fn a_device_log_model_is_served_by_its_attribute_named_keys() {
    let m = model("device-log");
    let chart = drafted(&m);
    let out = served(
        &m,
        &chart,
        r#"{ stateChangesByOperator(operator: "Mira") { nodes { deviceID state date } }
             stateChange(deviceID: "10044", state: "WARNING2", date: "2026-11-30T09:30:00") { notes operator } }"#,
        "wb-device-log",
    )
    .await;
    let (data, ops) = &out[0];
    assert_eq!(
        data["stateChangesByOperator"]["nodes"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        data["stateChange"],
        json!({ "notes": "Pressure high", "operator": "Tomas" })
    );
    assert_eq!(ops.len(), 2, "{ops:?}");
}

/// A model of two tables (a clinic's patients and prescriptions in one, its visits keyed
/// by number in another, indexed by patient) drafts one chart of both, with no TODO, that
/// serves a patient, the prescriptions in their item collection and the visits the other
/// table's index gathers under the patient, each one request.
#[tokio::test]
async fn a_model_of_two_tables_is_drafted_and_served_as_one_chart() {
    let m = model("clinic");
    let chart = drafted(&m);
    assert_eq!(chart.tables.len(), 2);
    assert_eq!(chart.tables[1].name, "ClinicVisits");
    assert_eq!(chart.tables[1].pk_type, itemgraph::store::KeyType::N);
    assert_eq!(chart.entities["Visit"].table, 1);
    assert_eq!(chart.indexes["ByPatient"].table, 1);
    let out = served(
        &m,
        &chart,
        r#"{ patient(patientId: "ana") { fullName prescriptions { nodes { rxId drug dose } } visits { nodes { visitNo reason visitedAt } } } }"#,
        "wb-clinic",
    )
    .await;
    let (data, ops) = &out[0];
    assert_eq!(
        data["patient"],
        json!({ "fullName": "Ana Ruiz",
            "prescriptions": { "nodes": [
                { "rxId": "1", "drug": "Amoxicillin", "dose": "500 mg" },
                { "rxId": "2", "drug": "Ibuprofen", "dose": "200 mg" }
            ] },
            "visits": { "nodes": [
                { "visitNo": 7001, "reason": "Sore throat", "visitedAt": "2026-11-02T09:15:00Z" },
                { "visitNo": 7003, "reason": "Follow-up", "visitedAt": "2026-11-20T11:00:00Z" }
            ] } })
    );
    assert_eq!(ops, &["GetItem", "Query", "Query"], "{ops:?}");
    // A visit, by its number, in its own table.
    let out = served(
        &m,
        &chart,
        r#"{ visit(visitNo: 7002) { reason patientId } }"#,
        "wb-clinic-2",
    )
    .await;
    assert_eq!(
        out[0].0["visit"],
        json!({ "reason": "Hay fever", "patientId": "ben" })
    );
    assert_eq!(out[0].1, ["GetItem"]);
    // A chart of two tables exports as a model of two, each with its facets.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/box-office.toml");
    let exported = export::export(&itemgraph::chart::load(&path).unwrap());
    let tables: Vec<(&str, Vec<&str>)> = exported
        .model
        .data_model
        .iter()
        .map(|t| {
            (
                t.table_name.as_str(),
                t.table_facets
                    .iter()
                    .map(|f| f.facet_name.as_str())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        tables,
        [
            ("box-office", vec!["Venue", "Event"]),
            ("box-office-bookings", vec!["Booking"])
        ]
    );
    assert_eq!(
        exported.model.data_model[1].global_secondary_indexes[0].index_name,
        "ByEvent"
    );
}

/// Two tables that each have an index named `GSI1` (as tables made apart often do): the
/// chart names the later one after its table (`ClinicVisitsGSI1`, `stored = "GSI1"`), every
/// request and the table's description name it `GSI1`, and the visits it gathers under a
/// patient are served as before, one Query, on both engines; exported, it is `GSI1` again.
#[tokio::test]
async fn indexes_of_one_name_in_two_tables_are_drafted_apart_and_served() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/models/clinic.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["DataModel"][1]["GlobalSecondaryIndexes"][0]["IndexName"] = json!("GSI1");
    m["DataModel"][0]["GlobalSecondaryIndexes"] = json!([{
        "IndexName": "GSI1",
        "KeyAttributes": {
            "PartitionKey": { "AttributeName": "DrugRef", "AttributeType": "S" },
            "SortKey": { "AttributeName": "DrugSince", "AttributeType": "S" } },
        "Projection": { "ProjectionType": "ALL" } }]);
    let m = Model::parse(&m.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let chart = drafted(&m);
    let names: Vec<(&str, &str, usize)> = chart
        .indexes
        .values()
        .map(|i| (i.name.as_str(), i.stored.as_str(), i.table))
        .collect();
    assert_eq!(
        names,
        [("GSI1", "GSI1", 0), ("ClinicVisitsGSI1", "GSI1", 1)]
    );
    assert_eq!(chart.schema_of(1).indexes[0].name, "GSI1");
    let shown =
        itemgraph::chart::explain::markdown(&itemgraph::chart::explain::explain(&chart, 1024));
    assert!(
        shown.contains("ClinicVisitsGSI1 (stored `GSI1`)"),
        "{shown}"
    );
    let out = served(
        &m,
        &chart,
        r#"{ patient(patientId: "ana") { visits { nodes { visitNo } } } }"#,
        "wb-gsi1",
    )
    .await;
    assert_eq!(
        out[0].0["patient"],
        json!({ "visits": { "nodes": [ { "visitNo": 7001 }, { "visitNo": 7003 } ] } })
    );
    assert_eq!(out[0].1, ["GetItem", "Query"]);
    // The trace names the index as the chart does, and its key condition by its keys.
    let api = Api::chart_with_stored(chart.clone(), items(&m, &chart), None)
        .await
        .unwrap();
    let r = api
        .run(r#"{ patient(patientId: "ana") { visits { nodes { visitNo } } } }"#)
        .await;
    let query = requests(&r)
        .iter()
        .find(|q| q["operation"] == "Query")
        .unwrap();
    assert_eq!(query["index"], "ClinicVisitsGSI1", "{query:#}");
    assert!(
        query["keyCondition"]
            .as_str()
            .unwrap()
            .starts_with("PatientRef = \"PATIENT#ana\""),
        "{query:#}"
    );
    api.finish().await;
    let exported = export::export(&chart);
    let names: Vec<&str> = exported
        .model
        .data_model
        .iter()
        .flat_map(|t| {
            t.global_secondary_indexes
                .iter()
                .map(|i| i.index_name.as_str())
        })
        .collect();
    assert_eq!(names, ["GSI1", "GSI1"]);
}

/// Two tables made apart, each of orders: the same facet name, the same type value
/// (`Order`), keys of one shape. The later table's entity is named after it
/// (`ArchiveOrder`, `type_value = "Order"`), and each table's items are its own entity's,
/// equal keys and all, on both engines.
#[tokio::test]
async fn tables_that_say_one_type_are_drafted_apart_and_served() {
    let table = |name: &str, items: Value| {
        json!({ "TableName": name,
            "KeyAttributes": {
                "PartitionKey": { "AttributeName": "PK", "AttributeType": "S" },
                "SortKey": { "AttributeName": "SK", "AttributeType": "S" } },
            "NonKeyAttributes": [],
            "TableFacets": [{ "FacetName": "Order",
                "KeyAttributeAlias": { "PartitionKeyAlias": "ORDER#<orderId>", "SortKeyAlias": "ORDER#<orderId>" },
                "NonKeyAttributes": ["Type", "Total"], "TableData": items, "DataAccess": { "MySql": {} } }],
            "GlobalSecondaryIndexes": [], "DataAccess": { "MySql": {} }, "BillingMode": "PAY_PER_REQUEST" })
    };
    let order = |id: &str, total: &str| {
        json!({ "PK": { "S": format!("ORDER#{id}") }, "SK": { "S": format!("ORDER#{id}") },
            "Type": { "S": "Order" }, "Total": { "N": total } })
    };
    let m = json!({
        "ModelName": "Orders", "ModelMetadata": { "Author": "itemgraph tests",
            "DateCreated": "Dec 7, 2026, 9:00 AM", "DateLastModified": "Dec 7, 2026, 9:00 AM",
            "Description": "", "AWSService": "Amazon DynamoDB", "Version": "3.0" },
        "DataModel": [
            table("Orders", json!([order("k1", "12"), order("m2", "30")])),
            table("Archive", json!([order("k1", "99"), order("z9", "5")]))
        ]
    });
    let m = Model::parse(&m.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let chart = drafted(&m);
    assert_eq!(chart.entities["Order"].table, 0);
    assert_eq!(chart.entities["ArchiveOrder"].table, 1);
    assert_eq!(chart.entities["ArchiveOrder"].type_value, "Order");
    let out = served(
        &m,
        &chart,
        r#"{ order(orderId: "k1") { total } archiveOrder(orderId: "k1") { total } }"#,
        "wb-twins",
    )
    .await;
    assert_eq!(
        out[0].0,
        json!({ "order": { "total": 12 }, "archiveOrder": { "total": 99 } })
    );
}

#[tokio::test]
async fn an_exported_chart_is_drafted_back_and_serves_its_samples_alike() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/corner-shop.toml");
    let original = Arc::new(itemgraph::chart::load(&path).unwrap());
    let exported = export::export(&original);
    // All but its index of a multi-attribute key, which a model cannot hold.
    assert_eq!(exported.notes.len(), 1, "{:?}", exported.notes);
    assert!(
        exported.notes[0].starts_with("index ByProductStatus: a multi-attribute key"),
        "{:?}",
        exported.notes
    );
    // Through its JSON, as NoSQL Workbench would read it.
    let json = serde_json::to_string_pretty(&exported.model).unwrap();
    let m = Model::parse(&json).unwrap();
    assert_eq!(m.data_model[0].table_facets.len(), 3);
    let chart = drafted(&m);
    // The model knows the attributes by their stored names (`Qty`), and so does the draft.
    let back = served(
        &m,
        &chart,
        r#"{ customer(customerId: "10001") { name orders { nodes { orderId qty total status } } } }"#,
        "wb-export",
    )
    .await;
    let query = r#"{ customer(customerId: "10001") { name orders { nodes { orderId quantity total status } } } }"#;
    let Some(api) = Api::chart(original.clone(), None).await else {
        unreachable!("the embedded engine");
    };
    let r = api.run(query).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    // The same customer and orders, the total read back as the number it is.
    let orders = &back[0].0["customer"]["orders"]["nodes"];
    assert_eq!(back[0].0["customer"]["name"], r["data"]["customer"]["name"]);
    assert_eq!(orders.as_array().unwrap().len(), 2);
    assert_eq!(
        orders[0]["orderId"],
        r["data"]["customer"]["orders"]["nodes"][0]["orderId"]
    );
    assert_eq!(orders[0]["qty"], 2);
    assert_eq!(
        orders[0]["status"],
        r["data"]["customer"]["orders"]["nodes"][0]["status"]
    );
}

/// A model of one table with `items` as its table-level samples and `facets` (name, key
/// aliases, attributes), keyed by `pk` / `sk` of type `key_type`.
fn odd_model(pk: &str, sk: &str, key_type: &str, facets: Value, items: Value) -> Model {
    let m = json!({
        "ModelName": "Odd", "ModelMetadata": { "Author": "itemgraph tests",
            "DateCreated": "Dec 7, 2026, 9:00 AM", "DateLastModified": "Dec 7, 2026, 9:00 AM",
            "Description": "", "AWSService": "Amazon DynamoDB", "Version": "3.0" },
        "DataModel": [{ "TableName": "Odd",
            "KeyAttributes": {
                "PartitionKey": { "AttributeName": pk, "AttributeType": key_type },
                "SortKey": { "AttributeName": sk, "AttributeType": key_type } },
            "NonKeyAttributes": [], "TableFacets": facets, "GlobalSecondaryIndexes": [],
            "TableData": items, "DataAccess": { "MySql": {} }, "BillingMode": "PAY_PER_REQUEST" }]
    });
    Model::parse(&m.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

/// Models as others write them: samples kept in the table rather than in each facet (each
/// item given to the facet whose attributes hold its own), keys of other separators
/// (`ACCT|a1`, `LINE:0001`), a `kind` attribute that does not tell items apart by their
/// keys (one entity, not one per kind), number keys named in lowercase (their variables
/// named apart from the key attributes), and a model with no sample at all (refused, with
/// what to do).
#[test]
fn models_as_others_write_them_are_drafted_into_charts_the_check_passes() {
    let facet = |name: &str, pk: &str, sk: &str, attrs: &[&str]| {
        json!({ "FacetName": name,
            "KeyAttributeAlias": { "PartitionKeyAlias": pk, "SortKeyAlias": sk },
            "NonKeyAttributes": attrs, "TableData": [], "DataAccess": { "MySql": {} } })
    };
    let shop = odd_model(
        "PK",
        "SK",
        "S",
        json!([
            facet("Account", "AccountId", "Profile", &["name", "vip"]),
            facet("Cart Line", "AccountId", "LineId", &["qty"]),
        ]),
        json!([
            { "PK": { "S": "ACCT|a1" }, "SK": { "S": "PROFILE" }, "name": { "S": "Ann" }, "vip": { "BOOL": true } },
            { "PK": { "S": "ACCT|a1" }, "SK": { "S": "LINE:0001" }, "qty": { "N": "2" } },
            { "PK": { "S": "ACCT|a2" }, "SK": { "S": "PROFILE" }, "name": { "S": "Bo" }, "vip": { "BOOL": false } },
            { "PK": { "S": "ACCT|a2" }, "SK": { "S": "LINE:0002" }, "qty": { "N": "1" } }
        ]),
    );
    let chart = drafted(&shop);
    let keys = |e: &str| {
        let k = &chart.entities[e].key;
        (k.pk.source().to_owned(), k.sk.source().to_owned())
    };
    assert_eq!(
        keys("Account"),
        ("ACCT|{accountId}".into(), "PROFILE".into())
    );
    assert_eq!(
        keys("CartLine"),
        ("ACCT|{accountId}".into(), "LINE:{lineId}".into())
    );
    // The lines share the account's partition, whose own sort key is a constant: an item
    // collection, read by the lines' prefix.
    let lines = &chart.entities["Account"].connections["cartLines"];
    let Some(itemgraph::chart::Request::Query { condition, .. }) =
        chart.patterns.get(&lines.pattern).map(|p| &p.request)
    else {
        panic!("a Query of the account's lines");
    };
    assert!(
        matches!(&condition.sort, Some(itemgraph::chart::SortCondition::BeginsWith(t)) if t.source() == "LINE:"),
        "{condition:?}"
    );

    // Two facets one entity name would name: the later named after its table too.
    let twins = odd_model(
        "PK",
        "SK",
        "S",
        json!([
            facet("Account", "AccountId", "Profile", &["name"]),
            facet("account", "AccountId", "Settings", &["theme"]),
        ]),
        json!([
            { "PK": { "S": "ACCT|a1" }, "SK": { "S": "PROFILE" }, "name": { "S": "Ann" } },
            { "PK": { "S": "ACCT|a1" }, "SK": { "S": "SETTINGS" }, "theme": { "S": "dark" } }
        ]),
    );
    let chart = drafted(&twins);
    let names: Vec<&String> = chart.declared().map(|e| &e.name).collect();
    assert_eq!(names, ["Account", "OddAccount"]);

    let readings = odd_model(
        "device",
        "ts",
        "N",
        json!([]),
        json!([
            { "device": { "N": "1" }, "ts": { "N": "1700000000" }, "kind": { "S": "temp" }, "value": { "N": "21" } },
            { "device": { "N": "1" }, "ts": { "N": "1700000060" }, "kind": { "S": "temp" }, "value": { "N": "22" } },
            { "device": { "N": "2" }, "ts": { "N": "1700000000" }, "kind": { "S": "hum" }, "value": { "N": "40" } }
        ]),
    );
    let chart = drafted(&readings);
    let names: Vec<&String> = chart
        .entities
        .keys()
        .filter(|n| !chart.entities[*n].system)
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let e = &chart.entities[names[0]];
    assert_eq!(e.key.pk.source(), "{deviceValue}");
    assert_eq!(e.key.sk.source(), "{tsValue}");
    assert!(e.attributes.contains_key("kind"));

    let empty = odd_model(
        "PK",
        "SK",
        "S",
        json!([facet("Book", "BookId", "Detail", &["title"])]),
        json!([]),
    );
    let refused = import::import(&empty)
        .err()
        .expect("no chart without samples");
    assert!(
        refused.contains("no sample item to infer an entity's keys from"),
        "{refused}"
    );
}
