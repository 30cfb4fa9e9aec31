//! Writes declared in a chart, served with no code of their own: the store locator's
//! mutations (`examples/charts/store-locator.toml`), on both engines. Each is one write
//! request (preceded at most by the read its checks need) that keeps what the chart
//! declares: the phone's uniqueness marker, the chain's `storeCount`, the store's version
//! and its status's life cycle, a delete refused while something still counts on it.

use std::path::Path;
use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, request_count, requests, Api, Events};

const CHART: &str = "examples/charts/store-locator.toml";

fn chart() -> Arc<itemgraph::chart::Chart> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(CHART);
    Arc::new(itemgraph::chart::load(&path).unwrap_or_else(|e| panic!("{e}")))
}

async fn api(dynamodb: Option<&str>) -> Option<Api> {
    Api::chart(chart(), dynamodb).await
}

/// After every case, the table holds what the chart implies (`itemgraph check`).
async fn clean(api: &Api) {
    api.assert_clean(&chart()).await;
}

on_both_engines_of!(chart, after = clean;
    a_store_is_created_with_its_marker_and_its_count_in_one_transaction,
    a_store_changes_under_its_version_and_its_life_cycle,
    a_store_is_deleted_with_its_marker_and_uncounted,
    a_chain_is_deleted_only_when_nothing_counts_on_it,
    writes_reach_only_the_callers_tenant,
    a_client_token_opens_one_store_whatever_the_retries,
    changes_reach_the_subscriptions_that_match_them,
    bad_input_is_refused_naming_the_field_and_writes_nothing,
);

fn operations(r: &Value) -> Vec<String> {
    requests(r)
        .iter()
        .map(|q| q["operation"].as_str().unwrap().to_owned())
        .collect()
}

fn field(r: &Value) -> Value {
    r["errors"][0]["extensions"]["field"].clone()
}

const CREATE: &str = r#"mutation($input: CreateStoreInput!) {
    createStore(input: $input) { store { id name phone status version chain { slug storeCount } } } }"#;

fn new_store(number: &str, phone: Option<&str>) -> Value {
    json!({"input": {
        "chain": "bean-there", "country": "US", "state": "WA", "city": "TACOMA",
        "number": number, "name": format!("Tacoma {number}"), "address": "1 Pacific Ave",
        "phone": phone, "hours": [{"day": "MONDAY", "opens": "07:00", "closes": "15:00"}]
    }})
}

async fn store_count(api: &Api) -> (i64, i64) {
    let r = api
        .run(r#"{ chain(slug: "bean-there") { storeCount stores(first: 1) { totalCount } } }"#)
        .await;
    (
        r["data"]["chain"]["storeCount"].as_i64().unwrap(),
        r["data"]["chain"]["stores"]["totalCount"].as_i64().unwrap(),
    )
}

async fn create(api: &Api, number: &str, phone: Option<&str>) -> Value {
    let r = api.run_with(CREATE, new_store(number, phone)).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"]["createStore"]["store"].clone()
}

async fn a_store_is_created_with_its_marker_and_its_count_in_one_transaction(api: &Api) {
    let r = api
        .run_with(CREATE, new_store("5001", Some("+1 253 555 0100")))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let store = &r["data"]["createStore"]["store"];
    assert_eq!(store["name"], "Tacoma 5001");
    assert_eq!(store["status"], "OPEN", "the life cycle's initial state");
    assert_eq!(store["version"], 1);
    assert_eq!(store["phone"], "+1 253 555 0100");
    // The store, its phone's marker and the chain's count: one TransactWriteItems; the
    // chain under the payload is one read after it.
    assert_eq!(operations(&r)[0], "TransactWriteItems", "{r:#}");
    assert_eq!(store["chain"]["storeCount"], 6, "{r:#}");
    assert_eq!(store_count(api).await, (6, 6));

    // Pagination after the write: the new store is in its place (by country, state, city).
    let r = api
        .run(r#"{ chain(slug: "bean-there") { storesIn(country: "US", state: "WA") { nodes { city number } } } }"#)
        .await;
    assert_eq!(
        r["data"]["chain"]["storesIn"]["nodes"],
        json!([{"city": "SEATTLE", "number": "1001"}, {"city": "SEATTLE", "number": "1002"},
               {"city": "SPOKANE", "number": "2001"}, {"city": "TACOMA", "number": "5001"}])
    );

    // The phone is taken within the chain; the key (the number at that place) too; each
    // refusal names its field and writes nothing.
    let r = api
        .run_with(CREATE, new_store("5002", Some("+1 253 555 0100")))
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    assert_eq!(field(&r), "phone");
    let r = api
        .run_with(CREATE, new_store("5001", Some("+1 253 555 0199")))
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    assert_eq!(field(&r), "number");
    // A sample's phone is as taken as a created one (the samples carry their markers).
    let r = api
        .run_with(CREATE, new_store("5003", Some("+1 206 555 0101")))
        .await;
    assert_eq!(field(&r), "phone", "{r:#}");
    assert_eq!(store_count(api).await, (6, 6));
    // No chain: NOT_FOUND, naming the reference the count needs.
    let mut input = new_store("5004", None);
    input["input"]["chain"] = json!("no-such");
    let r = api.run_with(CREATE, input).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(field(&r), "chain");
    // Another chain takes the same phone: unique within a chain.
    let mut input = new_store("9", Some("+1 253 555 0100"));
    input["input"]["chain"] = json!("tea-leaf");
    let r = api.run_with(CREATE, input).await;
    assert!(r.get("errors").is_none(), "{r:#}");
}

const UPDATE: &str = r#"mutation($input: UpdateStoreInput!) {
    updateStore(input: $input) { store { name phone status version } } }"#;

async fn a_store_changes_under_its_version_and_its_life_cycle(api: &Api) {
    let id = create(api, "6001", Some("+1 253 555 0600")).await["id"].clone();
    // Name only: read, then one TransactWriteItems of the store alone (its client request
    // token makes a retry after a lost reply idempotent).
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": id, "expectedVersion": 1, "name": "Tacoma Dome"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["updateStore"]["store"],
        json!({"name": "Tacoma Dome", "phone": "+1 253 555 0600", "status": "OPEN", "version": 2})
    );
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"], "{r:#}");
    // A stale version: nothing written, the current one said.
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": id, "expectedVersion": 1, "name": "Stale"}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["VERSION_MISMATCH"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["currentVersion"], 2);
    // A status along the life cycle: read, then one conditional write.
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": id, "expectedVersion": 2, "status": "CLOSED"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["updateStore"]["store"]["status"], "CLOSED");
    // The chain's count of open stores moves in the same write.
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"], "{r:#}");
    let counts = r#"{ chain(slug: "bean-there") { storeCount openStoreCount } }"#;
    assert_eq!(
        api.run(counts).await["data"]["chain"],
        json!({"storeCount": 6, "openStoreCount": 5})
    );
    // CLOSED is final.
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": id, "expectedVersion": 3, "status": "OPEN"}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["INVALID_TRANSITION"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["from"], "CLOSED");
    // A new phone moves its marker: read, then one TransactWriteItems; the old phone is
    // free again, the new one taken.
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": id, "expectedVersion": 3, "phone": "+1 253 555 0601"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["updateStore"]["store"]["version"], 4);
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"], "{r:#}");
    create(api, "6002", Some("+1 253 555 0600")).await;
    let r = api
        .run_with(CREATE, new_store("6003", Some("+1 253 555 0601")))
        .await;
    assert_eq!(field(&r), "phone", "{r:#}");
    // Removing the phone (null) frees it.
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": id, "expectedVersion": 4, "phone": null}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["updateStore"]["store"]["phone"], Value::Null);
    create(api, "6004", Some("+1 253 555 0601")).await;
    // Nothing to change.
    let r = api
        .run_with(UPDATE, json!({"input": {"id": id, "expectedVersion": 5}}))
        .await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
    assert_eq!(request_count(&r), 0);
}

const DELETE: &str = r#"mutation($input: DeleteStoreInput!) {
    deleteStore(input: $input) { deletedStoreId store { name } } }"#;

async fn a_store_is_deleted_with_its_marker_and_uncounted(api: &Api) {
    let id = create(api, "7001", Some("+1 253 555 0700")).await["id"].clone();
    assert_eq!(store_count(api).await, (6, 6));
    let r = api.run_with(DELETE, json!({"input": {"id": id}})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["deleteStore"]["deletedStoreId"], id);
    assert_eq!(r["data"]["deleteStore"]["store"]["name"], "Tacoma 7001");
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"], "{r:#}");
    assert_eq!(store_count(api).await, (5, 5));
    // The phone is free, the store gone.
    create(api, "7002", Some("+1 253 555 0700")).await;
    let r = api.run_with(DELETE, json!({"input": {"id": id}})).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(field(&r), "store");
    let r = api
        .run(&format!(r#"{{ store(id: {id}) {{ name }} }}"#))
        .await;
    assert_eq!(r["data"]["store"], Value::Null);
    // A stale version refuses the delete.
    let id = create(api, "7003", None).await["id"].clone();
    let r = api
        .run_with(DELETE, json!({"input": {"id": id, "expectedVersion": 2}}))
        .await;
    assert_eq!(error_codes(&r), ["VERSION_MISMATCH"], "{r:#}");
}

async fn a_chain_is_deleted_only_when_nothing_counts_on_it(api: &Api) {
    let r = api
        .run(r#"mutation { deleteChain(input: {slug: "bean-there"}) { chain { slug } } }"#)
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    // Named by the connection the counter totals (`Chain.stores`).
    assert_eq!(field(&r), "stores");
    assert_eq!(
        operations(&r),
        ["DeleteItem"],
        "one conditional DeleteItem: {r:#}"
    );
    let r = api
        .run(r#"mutation { createChain(input: {slug: "new-chain", name: "New"}) { chain { slug name storeCount } } }"#)
        .await;
    assert_eq!(
        r["data"]["createChain"]["chain"],
        json!({"slug": "new-chain", "name": "New", "storeCount": 0}),
        "{r:#}"
    );
    assert_eq!(operations(&r)[0], "PutItem");
    let r = api
        .run(r#"mutation { createChain(input: {slug: "new-chain", name: "Again"}) { chain { slug } } }"#)
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    assert_eq!(field(&r), "slug");
    let r = api
        .run(r#"mutation { deleteChain(input: {slug: "new-chain"}) { chain { name } } }"#)
        .await;
    assert_eq!(r["data"]["deleteChain"]["chain"]["name"], "New", "{r:#}");
    assert_eq!(operations(&r), ["DeleteItem"]);
    let r = api.run(r#"{ chain(slug: "new-chain") { slug } }"#).await;
    assert_eq!(r["data"]["chain"], Value::Null);
}

async fn writes_reach_only_the_callers_tenant(api: &Api) {
    let tea = |role| Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("tea-leaf").unwrap(),
        role,
        subject: None,
    };
    // Another chain's store is answered as if the chain did not exist, before any request.
    let r = api
        .run_as(&tea(Role::Member), CREATE, new_store("8001", None))
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(field(&r), "chain");
    assert_eq!(request_count(&r), 0);
    let all = api
        .run(r#"{ chain(slug: "bean-there") { stores(first: 1) { nodes { id } } } }"#)
        .await;
    let id = all["data"]["chain"]["stores"]["nodes"][0]["id"].clone();
    let r = api
        .run_as(&tea(Role::Admin), DELETE, json!({"input": {"id": id}}))
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(request_count(&r), 0);
    assert_eq!(store_count(api).await, (5, 5));
    // Creating a chain is for admins.
    let r = api
        .run_as(
            &tea(Role::Member),
            r#"mutation { createChain(input: {slug: "tea-leaf", name: "x"}) { chain { slug } } }"#,
            Value::Null,
        )
        .await;
    assert_eq!(error_codes(&r), ["FORBIDDEN"], "{r:#}");
    // Its own chain's store, a member may open.
    let mut input = new_store("8002", None);
    input["input"]["chain"] = json!("tea-leaf");
    let r = api.run_as(&tea(Role::Member), CREATE, input).await;
    assert!(r.get("errors").is_none(), "{r:#}");
}

async fn bad_input_is_refused_naming_the_field_and_writes_nothing(api: &Api) {
    let cases = [
        ("phone", json!("call me")),
        ("number", json!("12a")),
        ("name", json!("   ")),
        ("name", json!("x".repeat(101))),
        (
            "hours",
            json!((0..8)
                .map(|_| json!({"day": "MONDAY", "opens": "07:00", "closes": "15:00"}))
                .collect::<Vec<_>>()),
        ),
    ];
    for (name, value) in cases {
        let mut input = new_store("9001", None);
        input["input"][name] = value;
        let r = api.run_with(CREATE, input).await;
        assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{name}: {r:#}");
        assert_eq!(field(&r), name, "{r:#}");
        assert_eq!(request_count(&r), 0, "{r:#}");
    }
    assert_eq!(store_count(api).await, (5, 5));
}

async fn a_client_token_opens_one_store_whatever_the_retries(api: &Api) {
    const OPEN: &str = r#"mutation($input: CreateStoreInput!) {
        createStore(input: $input) { replayed store { id name version } } }"#;
    let mut first = new_store("8101", None);
    first["input"]["clientToken"] = json!("open-8101-a");
    let r = api.run_with(OPEN, first).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["createStore"]["replayed"], false);
    let id = r["data"]["createStore"]["store"]["id"].clone();
    // The retry (whatever it carries) opens nothing: the store the token opened, read back.
    let mut retry = new_store("8102", None);
    retry["input"]["clientToken"] = json!("open-8101-a");
    let r = api.run_with(OPEN, retry).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["createStore"],
        json!({"replayed": true, "store": {"id": id, "name": "Tacoma 8101", "version": 1}})
    );
    assert_eq!(operations(&r), ["TransactWriteItems", "GetItem"], "{r:#}");
    assert_eq!(store_count(api).await, (6, 6));
    // A token is the caller's to choose, within its kind's rules.
    let mut bad = new_store("8103", None);
    bad["input"]["clientToken"] = json!("no spaces");
    let r = api.run_with(OPEN, bad).await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
    assert_eq!(field(&r), "clientToken");
    // Another token opens another store.
    let mut other = new_store("8103", None);
    other["input"]["clientToken"] = json!("open-8103");
    let r = api.run_with(OPEN, other).await;
    assert_eq!(r["data"]["createStore"]["replayed"], false, "{r:#}");
    assert_eq!(store_count(api).await, (7, 7));
    // A retry after the store it opened was removed opens nothing either.
    let r = api.run_with(DELETE, json!({"input": {"id": id}})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let mut late = new_store("8101", None);
    late["input"]["clientToken"] = json!("open-8101-a");
    let r = api.run_with(OPEN, late).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    assert_eq!(field(&r), "store");
    assert_eq!(store_count(api).await, (6, 6));
}

/// The API differential of the second chart's writes: seeded random workloads of its
/// mutations (creates that collide on numbers, phones and tokens, changes with current and
/// stale versions along and against the life cycle, deletes), each run on both engines:
/// every answer, error and request the same, and `itemgraph check` clean on both after.
#[tokio::test]
async fn a_random_workload_answers_the_same_on_both_engines() {
    use rand::{Rng, SeedableRng};
    for seed in [1u64, 2, 3] {
        let Some(dynamo) = api(Some("chart_writes_differential")).await else {
            return;
        };
        let embedded = api(None).await.expect("the embedded engine");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let listed = r#"{ chain(slug: "bean-there") { stores(first: 100) { nodes { id } } } }"#;
        let r = embedded.run(listed).await;
        let mut ids: Vec<Value> = r["data"]["chain"]["stores"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].clone())
            .collect();
        for step in 0..60 {
            let pick = |rng: &mut rand_chacha::ChaCha8Rng, of: &[&str]| -> Value {
                json!(of[rng.random_range(0..of.len())])
            };
            let (query, vars) = match rng.random_range(0..10) {
                0..=3 => {
                    let mut input = new_store(
                        pick(&mut rng, &["1", "2", "3", "4"]).as_str().unwrap(),
                        None,
                    );
                    input["input"]["chain"] = pick(&mut rng, &["bean-there", "tea-leaf", "none"]);
                    input["input"]["phone"] = pick(
                        &mut rng,
                        &["+1 253 555 0001", "+1 253 555 0002", "+1 206 555 0101"],
                    );
                    if rng.random_bool(0.3) {
                        input["input"]["clientToken"] = pick(&mut rng, &["t1", "t2"]);
                    }
                    (
                        r#"mutation($input: CreateStoreInput!) { createStore(input: $input) { store { id name phone status version chain { storeCount } } } }"#,
                        input,
                    )
                }
                4..=6 if !ids.is_empty() => {
                    let id = ids[rng.random_range(0..ids.len())].clone();
                    let mut input = json!({"id": id, "expectedVersion": rng.random_range(1..4)});
                    match rng.random_range(0..3) {
                        0 => input["name"] = json!(format!("Renamed {step}")),
                        1 => {
                            input["phone"] = pick(&mut rng, &["+1 253 555 0001", "+1 253 555 0003"])
                        }
                        _ => {
                            input["status"] =
                                pick(&mut rng, &["OPEN", "TEMPORARILY_CLOSED", "CLOSED"])
                        }
                    }
                    (UPDATE, json!({ "input": input }))
                }
                _ if !ids.is_empty() => {
                    let id = ids[rng.random_range(0..ids.len())].clone();
                    (DELETE, json!({"input": {"id": id}}))
                }
                _ => (listed, Value::Null),
            };
            let a = embedded.run_with(query, vars.clone()).await;
            let b = dynamo.run_with(query, vars.clone()).await;
            assert_eq!(
                a.get("data"),
                b.get("data"),
                "seed {seed} step {step}: {vars}"
            );
            assert_eq!(
                a.get("errors"),
                b.get("errors"),
                "seed {seed} step {step}: {vars}"
            );
            assert_eq!(operations(&a), operations(&b), "seed {seed} step {step}");
            if let Some(id) = a.pointer("/data/createStore/store/id") {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
        }
        let everything = r#"{ a: chain(slug: "bean-there") { storeCount stores(first: 100) { nodes { id name phone status version hours { day } } } }
                              b: chain(slug: "tea-leaf") { storeCount stores(first: 100) { nodes { id name phone status version } } } }"#;
        assert_eq!(
            embedded.run(everything).await["data"],
            dynamo.run(everything).await["data"],
            "seed {seed}"
        );
        clean(&embedded).await;
        clean(&dynamo).await;
        embedded.finish().await;
        dynamo.finish().await;
    }
}

const EVENTS: &str = r#"subscription($chain: String!, $city: String, $after: String) {
    storeEvents(chain: $chain, city: $city, after: $after) { kind changed cursor store { name chain { slug } } } }"#;

async fn next_event(events: &mut Events) -> Value {
    crate::common::graphql::next_event(events, "storeEvents").await
}

/// Polls `subs` until the hub has `n` listeners (a subscription listens once polled).
async fn listening(api: &Api, subs: &mut [&mut Events], n: usize) {
    use futures::StreamExt;
    for _ in 0..2000 {
        if api.hub.listeners() >= n {
            return;
        }
        for s in subs.iter_mut() {
            if let Ok(Some(r)) =
                tokio::time::timeout(std::time::Duration::from_millis(5), s.next()).await
            {
                panic!("no event expected yet: {r:#}");
            }
        }
    }
    panic!("the subscriptions did not start listening");
}

async fn changes_reach_the_subscriptions_that_match_them(api: &Api) {
    use futures::StreamExt;
    // The suites' DynamoDB Local tables are made without a stream; this one follows it.
    api.store.enable_change_stream(false).await.unwrap();
    let all = Access::Unrestricted;
    let mut tacoma: Events = Box::new(api.subscribe(
        &all,
        None,
        EVENTS,
        json!({"chain": "bean-there", "city": "TACOMA"}),
    ));
    let mut tea: Events = Box::new(api.subscribe(&all, None, EVENTS, json!({"chain": "tea-leaf"})));
    listening(api, &mut [&mut tacoma, &mut tea], 2).await;

    let created = create(api, "4242", None).await;
    let e = next_event(&mut tacoma).await;
    assert_eq!(e["kind"], "CREATED");
    assert_eq!(
        e["store"],
        json!({"name": "Tacoma 4242", "chain": {"slug": "bean-there"}})
    );
    assert_eq!(e["changed"], json!([]));
    let first = e["cursor"].clone();
    // A change elsewhere in the chain, and the change itself: only the latter reaches
    // the city's subscription, with what it changed.
    let seattle = api
        .run(r#"{ chain(slug: "bean-there") { storesIn(country: "US", state: "WA", city: "SEATTLE", first: 1) { nodes { id } } } }"#)
        .await["data"]["chain"]["storesIn"]["nodes"][0]["id"]
        .clone();
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": seattle, "expectedVersion": 1, "name": "Pike"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let r = api
        .run_with(
            UPDATE,
            json!({"input": {"id": created["id"], "expectedVersion": 1, "name": "Tacoma Mall"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let e = next_event(&mut tacoma).await;
    assert_eq!(e["kind"], "UPDATED");
    assert_eq!(e["store"]["name"], "Tacoma Mall");
    assert_eq!(e["changed"], json!(["name", "version"]));
    let r = api
        .run_with(DELETE, json!({"input": {"id": created["id"]}}))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let e = next_event(&mut tacoma).await;
    assert_eq!(e["kind"], "DELETED");
    assert_eq!(e["store"]["name"], "Tacoma Mall", "as it was");
    // Another chain's subscription heard none of it.
    if let Ok(Some(r)) =
        tokio::time::timeout(std::time::Duration::from_millis(500), tea.next()).await
    {
        panic!("no event expected for tea-leaf, got {r:#}");
    }
    // Resumed after the first event: what happened since comes first.
    let mut resumed: Events = Box::new(api.subscribe(
        &all,
        None,
        EVENTS,
        json!({"chain": "bean-there", "city": "TACOMA", "after": first}),
    ));
    assert_eq!(next_event(&mut resumed).await["kind"], "UPDATED");
    assert_eq!(next_event(&mut resumed).await["kind"], "DELETED");
    // Another tenant's changes are not the caller's to follow.
    let member = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("tea-leaf").unwrap(),
        role: Role::Member,
        subject: None,
    };
    let mut theirs: Events =
        Box::new(api.subscribe(&member, None, EVENTS, json!({"chain": "bean-there"})));
    let r = tokio::time::timeout(std::time::Duration::from_secs(20), theirs.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(error_codes(&r), ["FORBIDDEN"], "{r:#}");
}
