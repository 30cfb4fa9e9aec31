//! A table keyed as another service keyed it: `examples/charts/auth-sessions.toml`, a
//! simple primary key (`SessionToken`, the token alone), no type attribute, an index keyed
//! by the `Username` attribute alone, expiry by Time to Live on `TTL`. On both engines:
//!
//! - items are stored so: the key attribute alone (no sort key), `Username` both the index's
//!   key and the session's user, `TTL` epoch seconds, nothing of the chart's own names;
//! - a session by token is one GetItem of the simple key; a new one one PutItem, refused
//!   when its token is taken; an ended one one DeleteItem, `NOT_FOUND` the second time;
//! - signing a user out everywhere is one Query of the index by `Username` and one
//!   BatchWriteItem, and leaves another user's sessions;
//! - an expired session reads as none, and `check` finds the table clean.

use std::sync::Arc;

use serde_json::json;

use itemgraph::store::{AttributeValue, GetItem, Item, PrimaryKey, Put};

use crate::common::graphql::{error_codes, example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("auth-sessions")
}

on_both_engines_of!(chart;
    sessions_are_stored_under_the_services_own_keys,
    a_session_is_read_written_and_ended_by_its_simple_key,
    signing_out_everywhere_is_one_query_of_the_index_and_one_batch,
    an_expired_session_reads_as_none,
);

async fn raw(api: &Api, token: &str) -> Option<Item> {
    api.raw
        .get_item(GetItem {
            key: PrimaryKey::new(token, ""),
            consistent_read: true,
        })
        .await
        .unwrap()
}

async fn sessions_are_stored_under_the_services_own_keys(api: &Api) {
    let item = raw(api, "01JE0000000000000000000001")
        .await
        .expect("a sample");
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["CreatedAt", "Device", "SessionToken", "TTL", "Username"]
    );
    assert_eq!(item["Username"], AttributeValue::S("ada-l".into()));
    assert!(matches!(&item["TTL"], AttributeValue::N(_)), "{item:?}");
}

async fn a_session_is_read_written_and_ended_by_its_simple_key(api: &Api) {
    let r = api
        .run(r#"{ session(token: "01JE0000000000000000000003") { token username device } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["session"],
        json!({ "token": "01JE0000000000000000000003", "username": "grace-h", "device": "Tablet" })
    );
    let sent = requests(&r);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["operation"], "GetItem");
    assert_eq!(
        sent[0]["keyCondition"],
        r#"SessionToken = "01JE0000000000000000000003""#
    );

    let start = r#"mutation { startSession(input: { username: "grace-h", device: "Watch" }) { session { token username device } } }"#;
    let r = api.run(start).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let token = r["data"]["startSession"]["session"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let item = raw(api, &token).await.expect("the new session");
    assert_eq!(item["Device"], AttributeValue::S("Watch".into()));
    assert!(!item.contains_key("token") && !item.contains_key("Type"));

    let end = format!(
        r#"mutation {{ endSession(input: {{ token: "{token}" }}) {{ session {{ token }} }} }}"#
    );
    let r = api.run(&end).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(requests(&r).len(), 1);
    assert!(raw(api, &token).await.is_none());
    let r = api.run(&end).await;
    assert_eq!(error_codes(&r), ["NOT_FOUND"], "{r:#}");
    api.assert_clean(&chart()).await;
}

async fn signing_out_everywhere_is_one_query_of_the_index_and_one_batch(api: &Api) {
    let r = api
        .run(
            r#"mutation { signOutEverywhere(input: { username: "ada-l" }) { deletedCount more } }"#,
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["signOutEverywhere"],
        json!({ "deletedCount": 2, "more": false })
    );
    let sent = requests(&r);
    let ops: Vec<&str> = sent
        .iter()
        .map(|s| s["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["Query", "BatchWriteItem"]);
    assert_eq!(sent[0]["index"], "UserIndex");
    assert_eq!(sent[0]["keyCondition"], r#"Username = "ada-l""#);
    assert!(raw(api, "01JE0000000000000000000001").await.is_none());
    assert!(raw(api, "01JE0000000000000000000003").await.is_some());
}

async fn an_expired_session_reads_as_none(api: &Api) {
    // Written as the service would: expired an hour ago, not yet deleted by the service.
    let past = itemgraph::clock::now_ms() / 1000 - 3600;
    let item: Item = [
        (
            "SessionToken",
            AttributeValue::S("01JE0000000000000000000009".into()),
        ),
        ("Username", AttributeValue::S("grace-h".into())),
        ("Device", AttributeValue::S("Old phone".into())),
        (
            "CreatedAt",
            AttributeValue::S("2026-01-01T00:00:00Z".into()),
        ),
        ("TTL", AttributeValue::N(past.to_string())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    api.raw.put_item(Put::new(item)).await.unwrap();
    let r = api
        .run(r#"{ session(token: "01JE0000000000000000000009") { token } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(r["data"]["session"], json!(null));
}
