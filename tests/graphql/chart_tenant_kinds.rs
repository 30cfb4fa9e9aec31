//! A tenant of another kind than a slug: the store locator with its chains named by a
//! three-letter code (`[A-Z]{3}`: `BTC`, `TLF`), served to callers whose tokens name
//! those codes, on both engines. Reads, `node`, creates, changes and deletes reach the
//! caller's own chain, and another chain's answer as if it did not exist.

use std::path::Path;
use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/store-locator.toml");
    let mut text = std::fs::read_to_string(path).unwrap();
    for (from, to) in [
        (
            "[kinds.country]",
            "[kinds.chainCode]\ndescription = \"A chain's three-letter code.\"\npattern = \"[A-Z]{3}\"\nmax_length = 3\n\n[kinds.country]",
        ),
        (
            "slug = { type = \"slug\", description = \"The chain's unique, URL-safe name.\" }",
            "slug = { type = \"chainCode\", description = \"The chain's code.\" }",
        ),
        (
            "chain = { type = \"slug\", graphql = false }",
            "chain = { type = \"chainCode\", graphql = false }",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let text = text
        .replace("chain = \"slug\"", "chain = \"chainCode\"")
        .replace("\"bean-there\"", "\"BTC\"")
        .replace("\"tea-leaf\"", "\"TLF\"");
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

on_both_engines_of!(chart; a_tenant_named_by_a_code_reads_and_writes_its_own_chain_only);

fn caller(code: &str, role: Role) -> Access {
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(code).unwrap(),
        role,
        subject: None,
    }
}

const CREATE: &str = r#"mutation($input: CreateStoreInput!) {
    createStore(input: $input) { store { id number } } }"#;
const UPDATE: &str = r#"mutation($input: UpdateStoreInput!) {
    updateStore(input: $input) { store { name version } } }"#;
const DELETE: &str = r#"mutation($input: DeleteStoreInput!) {
    deleteStore(input: $input) { deletedStoreId } }"#;

fn new_store(chain: &str, number: &str) -> Value {
    json!({"input": {
        "chain": chain, "country": "US", "state": "WA", "city": "TACOMA",
        "number": number, "name": format!("Tacoma {number}"), "address": "1 Pacific Ave",
        "hours": [],
    }})
}

async fn a_tenant_named_by_a_code_reads_and_writes_its_own_chain_only(api: &Api) {
    let btc = caller("BTC", Role::Admin);
    let tlf = caller("TLF", Role::Admin);
    const CHAIN: &str =
        r#"{ chain(slug: "BTC") { slug storeCount stores(first: 1) { nodes { id } } } }"#;
    let r = api.run_as(&btc, CHAIN, Value::Null).await;
    assert_eq!(r["data"]["chain"]["slug"], "BTC", "{r:#}");
    let id = r["data"]["chain"]["stores"]["nodes"][0]["id"].clone();
    // Its own store by global id, and not another's.
    const NODE: &str = r#"query($id: ID!) { node(id: $id) { id } }"#;
    let r = api.run_as(&btc, NODE, json!({"id": id})).await;
    assert_eq!(r["data"]["node"]["id"], id, "{r:#}");
    let r = api.run_as(&tlf, NODE, json!({"id": id})).await;
    assert_eq!(r["data"]["node"], Value::Null, "{r:#}");
    let r = api.run_as(&tlf, CHAIN, Value::Null).await;
    assert_eq!(r["data"]["chain"], Value::Null, "{r:#}");
    // Writes of its own chain, each one of it.
    let r = api.run_as(&btc, CREATE, new_store("BTC", "7001")).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let created = r["data"]["createStore"]["store"]["id"].clone();
    let r = api
        .run_as(
            &btc,
            UPDATE,
            json!({"input": {"id": created, "expectedVersion": 1, "name": "Tacoma Mall"}}),
        )
        .await;
    assert_eq!(
        r["data"]["updateStore"]["store"],
        json!({"name": "Tacoma Mall", "version": 2}),
        "{r:#}"
    );
    // Another chain's: as if there were none.
    let r = api.run_as(&tlf, CREATE, new_store("BTC", "7002")).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    let r = api
        .run_as(
            &tlf,
            UPDATE,
            json!({"input": {"id": created, "expectedVersion": 2, "name": "x"}}),
        )
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    let r = api
        .run_as(&tlf, DELETE, json!({"input": {"id": created}}))
        .await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    let r = api
        .run_as(&btc, DELETE, json!({"input": {"id": created}}))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let r = api.run_as(&btc, CHAIN, Value::Null).await;
    assert_eq!(r["data"]["chain"]["storeCount"], 5, "{r:#}");
}
