//! Markers unique across tenants on purpose (`global = true`): the store locator with a
//! phone number unique across every chain and client tokens shared by all, on both
//! engines. One tenant's value is refused to another, and nothing more of the other's
//! item is told: a token another chain used answers `CONFLICT`, never that chain's store.
//! (Charts that would let a write cross tenants are refused at start:
//! `src/chart/tests/tenant.rs`.)

use std::path::Path;
use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/store-locator.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text
        .replace(
            "key = [\"PHONE#{chain}#{phone}\", \"PHONE#{chain}#{phone}\"]\ngraphql = false",
            "key = [\"PHONE#{phone}\", \"PHONE#{phone}\"]\ngraphql = false\nglobal = true",
        )
        .replace(
            "key = [\"STORETOKEN#{chain}#{token}\", \"STORETOKEN#{chain}#{token}\"]\ngraphql = false",
            "key = [\"STORETOKEN#{token}\", \"STORETOKEN#{token}\"]\ngraphql = false\nglobal = true",
        );
    assert_eq!(text.matches("global = true").count(), 2);
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// After every case, the table holds what the chart implies (`itemgraph check`).
async fn clean(api: &Api) {
    api.assert_clean(&chart()).await;
}

on_both_engines_of!(chart, after = clean;
    a_global_phone_held_by_one_chain_is_refused_to_another,
    a_global_token_another_chain_used_replays_nothing_of_its_store,
);

const CREATE: &str = r#"mutation($input: CreateStoreInput!) {
    createStore(input: $input) { replayed store { id chain { slug } number name } } }"#;

fn member(chain: &str) -> Access {
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(chain).unwrap(),
        role: Role::Member,
        subject: None,
    }
}

fn new_store(chain: &str, number: &str, phone: Option<&str>, token: Option<&str>) -> Value {
    json!({"input": {
        "chain": chain, "country": "US", "state": "WA", "city": "TACOMA",
        "number": number, "name": format!("Tacoma {number}"), "address": "1 Pacific Ave",
        "phone": phone, "hours": [], "clientToken": token,
    }})
}

async fn store_counts(api: &Api) -> Value {
    api.run(r#"{ a: chain(slug: "bean-there") { storeCount } b: chain(slug: "tea-leaf") { storeCount } }"#)
        .await["data"]
        .clone()
}

async fn a_global_phone_held_by_one_chain_is_refused_to_another(api: &Api) {
    let before = store_counts(api).await;
    // A sample store of bean-there holds this number.
    let r = api
        .run_as(
            &member("tea-leaf"),
            CREATE,
            new_store("tea-leaf", "7", Some("+1 206 555 0101"), None),
        )
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "phone", "{r:#}");
    assert_eq!(r["data"]["createStore"], Value::Null, "{r:#}");
    assert_eq!(store_counts(api).await, before);
    // A number no chain holds is the caller's.
    let r = api
        .run_as(
            &member("tea-leaf"),
            CREATE,
            new_store("tea-leaf", "7", Some("+1 206 555 0177"), None),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
}

async fn a_global_token_another_chain_used_replays_nothing_of_its_store(api: &Api) {
    let r = api
        .run_as(
            &member("bean-there"),
            CREATE,
            new_store("bean-there", "6001", None, Some("shared-token-1")),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["createStore"]["replayed"], false);
    let before = store_counts(api).await;
    // Tea-leaf's create with the same token: taken, and not bean-there's store.
    let r = api
        .run_as(
            &member("tea-leaf"),
            CREATE,
            new_store("tea-leaf", "6002", None, Some("shared-token-1")),
        )
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    assert_eq!(
        r["errors"][0]["extensions"]["field"], "clientToken",
        "{r:#}"
    );
    assert_eq!(r["data"]["createStore"], Value::Null, "{r:#}");
    assert!(!r.to_string().contains("6001"), "{r:#}");
    assert_eq!(store_counts(api).await, before);
    // Bean-there's own retry is still its replay.
    let r = api
        .run_as(
            &member("bean-there"),
            CREATE,
            new_store("bean-there", "6003", None, Some("shared-token-1")),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["createStore"]["replayed"], true, "{r:#}");
    assert_eq!(r["data"]["createStore"]["store"]["number"], "6001", "{r:#}");
}
